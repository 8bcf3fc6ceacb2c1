/*
 * ch_api_sasl.c: the per-connection api session and SASL authentication
 * (SaslHandshake v0-v1, SaslAuthenticate v0-v2, v0's raw tokens) with
 * PLAIN and SCRAM-SHA-256/512, as Kafka's SaslServerAuthenticator does it.
 * States in ch_api_sasl.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/ch_api.h"
#include "api/ch_api_sasl.h"
#include "auth/ch_plain.h"
#include "auth/ch_scram_store.h"
#include "broker/ch_broker.h"
#include "common/ch_common.h"
#include "common/ch_log.h"
#include "proto/generated/ch_errors.h"

ch_api_session *
ch_api_session_new(ch_broker *bk, int listener)
{
	ch_api_session *s = ch_xcalloc(1, sizeof(*s));
	s->bk = bk;
	s->listener = listener;
	const ch_config *cfg = bk->cfg;
	if (listener >= 0 && (size_t)listener < cfg->nlisteners)
		s->protocol = cfg->listener_sec[listener].protocol;
	s->sasl = s->protocol == CH_SEC_SASL_PLAINTEXT || s->protocol == CH_SEC_SASL_SSL;
	snprintf(s->principal, sizeof(s->principal), "User:ANONYMOUS");
	return s;
}

void
ch_api_session_free(ch_api_session *s)
{
	if (!s)
		return;
	ch_scram_server_free(&s->scram);
	free(s);
}

void
ch_api_session_set_principal(ch_api_session *s, const char *principal)
{
	/* called for every request (the shell's session): copy only a change */
	if (!s->sasl && strncmp(s->principal, principal, sizeof(s->principal) - 1) != 0)
		snprintf(s->principal, sizeof(s->principal), "%s", principal);
}

bool
ch_api_session_authenticated(const ch_api_session *s)
{
	return !s->sasl || s->state == CH_SASL_COMPLETE;
}

bool
ch_api_sasl_expired(const ch_api_session *s, int64_t now_ms)
{
	return s->sasl && s->state == CH_SASL_COMPLETE && s->expires_ms && now_ms >= s->expires_ms;
}

/* ---- mechanisms ------------------------------------------------------------ */

static const struct {
	unsigned bit;
	const char *name;
} mechs[] = {
	{CH_SASL_PLAIN, "PLAIN"},
	{CH_SASL_SCRAM_SHA_256, "SCRAM-SHA-256"},
	{CH_SASL_SCRAM_SHA_512, "SCRAM-SHA-512"},
};

static const char *
mech_name(unsigned bit)
{
	for (size_t i = 0; i < CH_ARRAY_LEN(mechs); i++)
		if (mechs[i].bit == bit)
			return mechs[i].name;
	return "?";
}

/* The listener's enabled mechanisms as a response array (in the request arena). */
static ch_str *
mech_list(ch_req *req, unsigned enabled, int32_t *n)
{
	ch_str *v = CH_REQ_NEW_ARRAY(req, ch_str, CH_ARRAY_LEN(mechs));
	*n = 0;
	for (size_t i = 0; i < CH_ARRAY_LEN(mechs); i++)
		if (enabled & mechs[i].bit)
			v[(*n)++] = ch_str_c(mechs[i].name);
	return v;
}

static const ch_listener_sec *
lsec(const ch_api_session *s)
{
	return &s->bk->cfg->listener_sec[s->listener];
}

/* ch_scram_lookup_fn on the broker's credential store. */
static bool
scram_lookup(void *ud, const char *user, ch_scram_mech m, ch_scram_cred *out)
{
	ch_broker *bk = ud;
	return bk->scram && ch_scram_store_get(bk->scram, user, m, out);
}

/* The exchange failed: log it, state FAILED, and (after the caller queued
 * any response) the connection closes after connection.failed.authentication.delay.ms. */
static void
auth_failed(ch_api_session *s, void *conn, const char *peer, const char *why)
{
	CH_LOGI("api", "%s: SASL/%s authentication failed: %s", peer, mech_name(s->mech), why);
	s->state = CH_SASL_FAILED;
	ch_scram_server_free(&s->scram);
	if (s->bk->close_later)
		s->bk->close_later(s->bk->shell, conn,
				   s->bk->cfg->connection_failed_authentication_delay_ms);
}

/*
 * One token of the exchange. CH_OK with the answer in *out (malloc'd, may be
 * empty) and *done when the exchange is complete (principal set); CH_ERR
 * with the message for the client in *msg (Kafka's generic one when the
 * mechanism gives none).
 */
static int
evaluate(ch_api_session *s, void *conn, const uint8_t *tok, size_t n, uint8_t **out,
	 size_t *out_len, bool *done, const char **msg)
{
	static char generic[160];
	*out = NULL;
	*out_len = 0;
	*done = false;
	char user[CH_SCRAM_NAME_MAX];
	if (s->mech == CH_SASL_PLAIN) {
		const ch_plain_users *users = s->bk->plain_users[s->listener];
		static const ch_plain_users none;
		if (ch_plain_check(users ? users : &none, tok, n, user, sizeof(user), msg) != 0)
			return CH_ERR;
		*out = ch_xmalloc(1);
		*done = true;
	} else {
		const char *m = NULL;
		if (ch_scram_server_step(&s->scram, tok, n, scram_lookup, s->bk, out, out_len,
					 &m) != CH_SCRAM_STEP_OK) {
			snprintf(generic, sizeof(generic),
				 "Authentication failed during authentication due to invalid "
				 "credentials with SASL mechanism %s",
				 mech_name(s->mech));
			*msg = m ? m : generic;
			CH_LOGD("api", "SASL/%s: %s", mech_name(s->mech), s->scram.why);
			return CH_ERR;
		}
		if (s->scram.state != CH_SCRAM_DONE)
			return CH_OK;
		snprintf(user, sizeof(user), "%s", s->scram.user);
		*done = true;
	}
	char principal[sizeof(s->principal)];
	snprintf(principal, sizeof(principal), "User:%s", user);
	if (s->reauth && strcmp(principal, s->principal) != 0) {
		static char changed[sizeof(s->principal) * 2 + 80];
		/* Kafka's words, its principals written TYPE.NAME */
		snprintf(changed, sizeof(changed),
			 "Cannot change principals during re-authentication from User.%s: User.%s",
			 s->principal + 5, principal + 5);
		*msg = changed;
		free(*out);
		*out = NULL;
		return CH_ERR;
	}
	s->state = CH_SASL_COMPLETE;
	snprintf(s->principal, sizeof(s->principal), "%s", principal);
	/* KIP-368: the session ends connections.max.reauth.ms from now, for
	 * every client (one that cannot re-authenticate is then disconnected). */
	int64_t life = lsec(s)->connections_max_reauth_ms;
	s->expires_ms = life > 0 ? s->bk->now_ms(s->bk->shell) + life : 0;
	CH_LOGD("api", "SASL/%s %s %s", mech_name(s->mech),
		s->reauth ? "re-authenticated" : "authenticated", s->principal);
	if (s->bk->authenticated)
		s->bk->authenticated(s->bk->shell, conn, s->principal);
	return CH_OK;
}

/* A raw token (after SaslHandshake v0): answered as a bare size-prefixed token. */
static void
raw_token(ch_broker *bk, ch_api_session *s, void *conn, uint64_t seq, const char *peer,
	  const uint8_t *frame, size_t len)
{
	uint8_t *out;
	size_t out_len;
	bool done;
	const char *msg;
	if (evaluate(s, conn, frame, len, &out, &out_len, &done, &msg) != CH_OK) {
		/* No Kafka header to carry an error: Kafka closes. */
		auth_failed(s, conn, peer, msg);
		bk->reply(bk->shell, conn, seq, NULL);
		return;
	}
	ch_buf b;
	ch_buf_init(&b);
	ch_buf_append(&b, out, out_len);
	free(out);
	bk->reply(bk->shell, conn, seq, &b);
	ch_buf_free(&b); /* empty: the bytes went with the reply */
}

bool
ch_api_sasl_gate(ch_broker *bk, ch_api_session *s, void *conn, uint64_t seq, const char *peer,
		 const uint8_t *frame, size_t len)
{
	if (s->state == CH_SASL_AUTHENTICATE && s->raw_tokens) {
		raw_token(bk, s, conn, seq, peer, frame, len);
		return true;
	}
	int16_t key = len >= 2 ? (int16_t)((frame[0] << 8) | frame[1]) : -1;
	bool ok;
	switch (s->state) {
	case CH_SASL_HANDSHAKE_OR_VERSIONS:
		ok = key == CH_APIKEY_API_VERSIONS || key == CH_APIKEY_SASL_HANDSHAKE;
		if (key == CH_APIKEY_API_VERSIONS)
			s->state = CH_SASL_HANDSHAKE;
		break;
	case CH_SASL_HANDSHAKE:
		ok = key == CH_APIKEY_SASL_HANDSHAKE;
		break;
	case CH_SASL_AUTHENTICATE:
		ok = key == CH_APIKEY_SASL_AUTHENTICATE;
		break;
	default:
		ok = false; /* FAILED: the connection is closing */
		break;
	}
	if (ok)
		return false;
	const ch_api_codec *c = ch_api_codec_find(key);
	CH_LOGW("api",
		"closing connection from %s: unexpected Kafka request of type %s during SASL %s",
		peer, c ? c->name : "unknown",
		s->state == CH_SASL_AUTHENTICATE ? "authentication" : "handshake");
	bk->n_rejected++;
	s->state = CH_SASL_FAILED;
	bk->close(bk->shell, conn, seq);
	return true;
}

/* ---- handlers -------------------------------------------------------------- */

void
ch_api_SaslHandshake(ch_req *req)
{
	const ch_SaslHandshakeRequest *rq = req->body;
	ch_api_session *s = req->sess;
	ch_SaslHandshakeResponse resp;
	ch_SaslHandshakeResponse_init(&resp);
	/* Kafka re-authenticates a client that spoke SaslAuthenticate v1+. */
	bool reauth = s && s->sasl && s->state == CH_SASL_COMPLETE && req->version >= 1 &&
		      s->client_reauth;
	if (!s || !s->sasl || (s->state >= CH_SASL_AUTHENTICATE && !reauth)) {
		/* Not a SASL listener, or already authenticated (KafkaApis answers so). */
		resp.ErrorCode = CH_KERR_ILLEGAL_SASL_STATE;
		resp.Mechanisms = CH_REQ_NEW_ARRAY(req, ch_str, 0);
		ch_api_send(req, &resp);
		return;
	}
	unsigned enabled = lsec(s)->sasl_mechanisms;
	resp.Mechanisms = mech_list(req, enabled, &resp.Mechanisms_n);
	unsigned bit = 0;
	for (size_t i = 0; i < CH_ARRAY_LEN(mechs); i++)
		if (rq->Mechanism.len == (int32_t)strlen(mechs[i].name) &&
		    memcmp(rq->Mechanism.p, mechs[i].name, (size_t)rq->Mechanism.len) == 0)
			bit = mechs[i].bit;
	if (!(enabled & bit)) {
		resp.ErrorCode = CH_KERR_UNSUPPORTED_SASL_MECHANISM;
		void *conn = req->conn;
		const char *peer = req->peer;
		char why[128];
		snprintf(why, sizeof(why), "Unsupported SASL mechanism %.*s",
			 (int)CH_MIN(rq->Mechanism.len, 64),
			 rq->Mechanism.p ? rq->Mechanism.p : "");
		ch_api_send(req, &resp);
		auth_failed(s, conn, peer, why);
		return;
	}
	s->reauth = reauth;
	s->reauth_bad_mech = 0;
	if (reauth && bit != s->mech) {
		/* Kafka answers the handshake, then fails the first token. */
		s->reauth_bad_mech = bit;
		s->state = CH_SASL_AUTHENTICATE;
		ch_api_send(req, &resp);
		return;
	}
	s->mech = bit;
	s->raw_tokens = req->version == 0;
	if (bit != CH_SASL_PLAIN)
		ch_scram_server_init(&s->scram, bit == CH_SASL_SCRAM_SHA_512 ? CH_SCRAM_SHA_512
									     : CH_SCRAM_SHA_256);
	s->state = CH_SASL_AUTHENTICATE;
	ch_api_send(req, &resp);
}

void
ch_api_SaslAuthenticate(ch_req *req)
{
	const ch_SaslAuthenticateRequest *rq = req->body;
	ch_api_session *s = req->sess;
	ch_SaslAuthenticateResponse resp;
	ch_SaslAuthenticateResponse_init(&resp);
	if (!s || !s->sasl || s->state != CH_SASL_AUTHENTICATE || s->raw_tokens) {
		resp.ErrorCode = CH_KERR_ILLEGAL_SASL_STATE;
		resp.ErrorMessage = ch_str_c("SaslAuthenticate request received after successful "
					     "authentication");
		ch_api_send(req, &resp);
		return;
	}
	uint8_t *out;
	size_t out_len;
	bool done;
	const char *msg;
	void *conn = req->conn;
	const char *peer = req->peer;
	size_t tl = rq->AuthBytes.len > 0 ? (size_t)rq->AuthBytes.len : 0;
	if (req->version >= 1)
		s->client_reauth = true;
	int rc;
	if (s->reauth_bad_mech) {
		static char bad[160];
		snprintf(bad, sizeof(bad),
			 "SASL mechanism '%s' requested by client is not supported for "
			 "re-authentication of mechanism '%s'",
			 mech_name(s->reauth_bad_mech), mech_name(s->mech));
		msg = bad;
		rc = CH_ERR;
	} else {
		rc = evaluate(s, conn, rq->AuthBytes.p ? rq->AuthBytes.p : (const uint8_t *)"", tl,
			      &out, &out_len, &done, &msg);
	}
	if (rc != CH_OK) {
		resp.ErrorCode = CH_KERR_SASL_AUTHENTICATION_FAILED;
		resp.ErrorMessage = ch_str_c(ch_req_strdup(req, ch_str_c(msg)));
		ch_api_send(req, &resp);
		auth_failed(s, conn, peer, msg);
		return;
	}
	uint8_t *copy = ch_req_alloc(req, out_len + 1);
	memcpy(copy, out, out_len);
	free(out);
	resp.AuthBytes.p = copy;
	resp.AuthBytes.len = (int32_t)out_len;
	/* KIP-368: the session lifetime, once complete (0: none). */
	if (done)
		resp.SessionLifetimeMs = lsec(s)->connections_max_reauth_ms;
	ch_api_send(req, &resp);
}
