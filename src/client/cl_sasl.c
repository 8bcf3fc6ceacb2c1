/*
 * cl_sasl.c: SASL on libcohort's broker connections (security.protocol
 * SASL_PLAINTEXT and SASL_SSL): PLAIN and SCRAM-SHA-256/512, as Kafka's
 * Java client speaks them.
 *
 * After ApiVersions (cl_conn.c), the connection sends SaslHandshake v1
 * with sasl.mechanism, then the mechanism's tokens in SaslAuthenticate
 * (v0-v2, KIP-152 framing; the highest both sides have):
 *
 *   PLAIN          "" NUL user NUL password                -> done
 *   SCRAM-SHA-*    client-first -> server-first
 *                  client-final -> server-final (its signature checked,
 *                  auth/ch_scram.h)                         -> done
 *
 * A broker's refusal (SASL_AUTHENTICATION_FAILED with its ErrorMessage,
 * UNSUPPORTED_SASL_MECHANISM, ILLEGAL_SASL_STATE) or a server that fails
 * SCRAM's checks ends the connection with cl_conn_auth_failed: fatal for
 * the client, the message kept for cohort_*_auth_error. Success hands the
 * broker's session lifetime to cl_conn_sasl_done, which schedules KIP-368
 * re-authentication on the same connection.
 *
 * Credentials (cl_sasl_conf): sasl.jaas.config's PlainLoginModule or
 * ScramLoginModule entry (username="..." password="...";), else
 * librdkafka's sasl.username / sasl.password.
 */
#include "client/cl_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "auth/ch_scram.h"

static const char *const mech_names[] = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"};

struct cl_sasl {
	int step;             /* SaslAuthenticate answers received so far */
	int16_t auth_version; /* SaslAuthenticate's */
	ch_scram_client scram;
	char token[CH_SCRAM_MSG_MAX + 512]; /* the next SaslAuthenticate's bytes */
	size_t token_len;
};

/* ---- configuration -------------------------------------------------------- */

/* One JAAS option value at *p (quoted with \-escapes, or a bare word) into a malloc'd string;
 * *p moves past it. NULL on a malformed value or no memory. */
static char *
jaas_value(const char **p)
{
	const char *s = *p;
	size_t cap = strlen(s) + 1, o = 0;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	if (*s == '"') {
		for (s++; *s && *s != '"'; s++) {
			if (*s == '\\' && s[1])
				s++;
			out[o++] = *s;
		}
		if (*s != '"') {
			free(out);
			return NULL;
		}
		s++;
	} else {
		while (*s && !isspace((unsigned char)*s) && *s != ';')
			out[o++] = *s++;
	}
	out[o] = '\0';
	*p = s;
	return out;
}

/* Skips the spaces at *p; returns the length of the word there (up to a space or ';'). */
static size_t
next_word(const char **p)
{
	while (isspace((unsigned char)**p))
		(*p)++;
	size_t n = 0;
	while ((*p)[n] && !isspace((unsigned char)(*p)[n]) && (*p)[n] != ';')
		n++;
	return n;
}

/* Whether w[0..n) is one of the k words of list. */
static bool
word_in(const char *const *list, size_t k, const char *w, size_t n)
{
	for (size_t i = 0; i < k; i++)
		if (strlen(list[i]) == n && memcmp(list[i], w, n) == 0)
			return true;
	return false;
}

/*
 * Parses sasl.jaas.config as Kafka's JaasConfig reads a client's one entry:
 * "<LoginModule class> <flag> [name=value ...];". Only the PLAIN and SCRAM
 * login modules (their username and password options) are libcohort's.
 * true with *user and *pass malloc'd, or false with errstr set.
 */
static bool
parse_jaas(const char *jaas, char **user, char **pass, char *errstr, size_t esz)
{
	static const char *const modules[] = {
		"org.apache.kafka.common.security.plain.PlainLoginModule",
		"org.apache.kafka.common.security.scram.ScramLoginModule",
	};
	static const char *const flags[] = {"required", "requisite", "sufficient", "optional"};
	const char *p = jaas;
	size_t n = next_word(&p);
	if (!word_in(modules, 2, p, n)) {
		cl_errstr(errstr, esz,
			  "sasl.jaas.config: login module '%.*s' is not supported by libcohort "
			  "(PlainLoginModule, ScramLoginModule)",
			  (int)(n > 120 ? 120 : n), p);
		return false;
	}
	p += n;
	n = next_word(&p);
	if (!word_in(flags, 4, p, n)) {
		cl_errstr(errstr, esz,
			  "sasl.jaas.config: expected a control flag (required, requisite, "
			  "sufficient, optional) after the login module");
		return false;
	}
	p += n;
	*user = *pass = NULL;
	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (*p == ';')
			break;
		const char *name = p;
		while (*p && *p != '=' && !isspace((unsigned char)*p) && *p != ';')
			p++;
		size_t nl = (size_t)(p - name);
		char *val = NULL;
		if (nl == 0 || *p != '=' || (p++, !(val = jaas_value(&p)))) {
			cl_errstr(errstr, esz,
				  "sasl.jaas.config: expected name=\"value\" options ending with "
				  "';'");
			goto fail;
		}
		char **dst = nl == 8 && memcmp(name, "username", 8) == 0   ? user
			     : nl == 8 && memcmp(name, "password", 8) == 0 ? pass
									   : NULL;
		if (dst) {
			free(*dst);
			*dst = val;
		} else {
			free(val); /* other options (tokenauth, ...) are not libcohort's */
		}
	}
	p++;
	while (isspace((unsigned char)*p))
		p++;
	if (*p) {
		cl_errstr(
			errstr, esz,
			"sasl.jaas.config must contain exactly one login module entry (text after "
			"';')");
		goto fail;
	}
	if (!*user || !*pass) {
		cl_errstr(errstr, esz,
			  "sasl.jaas.config: the login module needs username and "
			  "password");
		goto fail;
	}
	return true;
fail:
	free(*user);
	free(*pass);
	*user = *pass = NULL;
	return false;
}

bool
cl_sasl_conf(cl_client *c, char *errstr, size_t esz)
{
	char *const *sec = c->conf.sec;
	const char *m = sec[CL_SEC_SASL_MECHANISM];
	c->sasl_mech = -1;
	for (int i = 0; i < 3; i++)
		if (strcmp(m, mech_names[i]) == 0)
			c->sasl_mech = i;
	if (c->sasl_mech < 0) {
		cl_errstr(errstr, esz,
			  "sasl.mechanism %s is not supported by libcohort (PLAIN, SCRAM-SHA-256, "
			  "SCRAM-SHA-512)",
			  m);
		return false;
	}
	if (sec[CL_SEC_SASL_JAAS])
		return parse_jaas(sec[CL_SEC_SASL_JAAS], &c->sasl_user, &c->sasl_pass, errstr, esz);
	if (!sec[CL_SEC_SASL_USERNAME] || !sec[CL_SEC_SASL_PASSWORD]) {
		cl_errstr(errstr, esz,
			  "SASL mechanism %s needs credentials: sasl.jaas.config, or sasl.username "
			  "and sasl.password",
			  m);
		return false;
	}
	c->sasl_user = strdup(sec[CL_SEC_SASL_USERNAME]);
	c->sasl_pass = strdup(sec[CL_SEC_SASL_PASSWORD]);
	if (!c->sasl_user || !c->sasl_pass) {
		cl_errstr(errstr, esz, "out of memory");
		return false;
	}
	return true;
}

void
cl_sasl_conf_free(cl_client *c)
{
	if (c->sasl_pass)
		OPENSSL_cleanse(c->sasl_pass, strlen(c->sasl_pass));
	free(c->sasl_user);
	free(c->sasl_pass);
	c->sasl_user = c->sasl_pass = NULL;
}

/* ---- the exchange --------------------------------------------------------- */

void
cl_sasl_free(cl_broker *b)
{
	if (b->sasl)
		OPENSSL_cleanse(b->sasl, sizeof(*b->sasl));
	free(b->sasl);
	b->sasl = NULL;
}

/* Encodes SaslHandshake with the configured mechanism. */
static void
build_handshake(cl_client *c, int16_t version, ch_buf *out, void *ud)
{
	(void)ud;
	ch_SaslHandshakeRequest m;
	ch_SaslHandshakeRequest_init(&m);
	m.Mechanism = ch_str_c(mech_names[c->sasl_mech]);
	ch_SaslHandshakeRequest_encode(out, version, &m);
}

/* Encodes SaslAuthenticate with the exchange's next token. */
static void
build_authenticate(cl_client *c, int16_t version, ch_buf *out, void *ud)
{
	(void)c;
	cl_broker *b = ud;
	ch_SaslAuthenticateRequest m;
	ch_SaslAuthenticateRequest_init(&m);
	m.AuthBytes.p = (const uint8_t *)b->sasl->token;
	m.AuthBytes.len = (int32_t)b->sasl->token_len;
	ch_SaslAuthenticateRequest_encode(out, version, &m);
}

static void done_authenticate(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud);

/* A local failure of a request of the exchange: the connection closes (err from broker_close
 * means it already has). */
static bool
exchange_broken(cl_broker *b, cohort_err err)
{
	if (!err)
		return false;
	if (err == COHORT_ERR__BAD_MSG || err == COHORT_ERR__NOMEM)
		cl_conn_close(b, COHORT_ERR__TRANSPORT,
			      err == COHORT_ERR__BAD_MSG ? "SASL answer does not decode"
							 : "out of memory");
	return true;
}

/* SaslHandshake's answer: the mechanism is enabled (else fatal), the first token goes out. */
static void
done_handshake(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	(void)version;
	cl_broker *b = ud;
	if (exchange_broken(b, err))
		return;
	ch_SaslHandshakeResponse *m = resp;
	if (m->ErrorCode) {
		char why[512];
		int o = snprintf(why, sizeof(why), "SaslHandshake: %s", ch_kerr_name(m->ErrorCode));
		if (m->ErrorCode == CH_KERR_UNSUPPORTED_SASL_MECHANISM) {
			/* Java's message */
			o = snprintf(
				why, sizeof(why),
				"Client SASL mechanism '%s' not enabled in the server, enabled "
				"mechanisms are [",
				mech_names[c->sasl_mech]);
			for (int32_t i = 0; i < m->Mechanisms_n && o < (int)sizeof(why); i++)
				o += snprintf(why + o, sizeof(why) - (size_t)o, "%s%.*s",
					      i ? ", " : "", (int)CH_MIN(m->Mechanisms[i].len, 32),
					      m->Mechanisms[i].p);
			if (o < (int)sizeof(why))
				snprintf(why + o, sizeof(why) - (size_t)o, "]");
		}
		cl_conn_auth_failed(b, m->ErrorCode, why);
		return;
	}
	cl_sasl *s = b->sasl;
	if (c->sasl_mech == 0) {
		size_t ul = strlen(c->sasl_user), pl = strlen(c->sasl_pass);
		if (ul + pl + 2 > sizeof(s->token)) {
			cl_conn_auth_failed(b, COHORT_ERR__BAD_CONF,
					    "SASL/PLAIN credentials too long");
			return;
		}
		s->token[0] = '\0'; /* no authorization id, as Java's PlainSaslClient */
		memcpy(s->token + 1, c->sasl_user, ul + 1);
		memcpy(s->token + 2 + ul, c->sasl_pass, pl);
		s->token_len = ul + pl + 2;
	} else {
		long n = ch_scram_client_begin(
			&s->scram, c->sasl_mech == 2 ? CH_SCRAM_SHA_512 : CH_SCRAM_SHA_256,
			c->sasl_user, NULL, s->token, sizeof(s->token));
		if (n < 0) {
			cl_conn_auth_failed(b, COHORT_ERR__BAD_CONF,
					    "SCRAM: user name too long (or no random bytes)");
			return;
		}
		s->token_len = (size_t)n;
	}
	cl_conn_send_setup(b, CH_APIKEY_SASL_AUTHENTICATE, s->auth_version, build_authenticate,
			   done_authenticate, b);
}

/* A SaslAuthenticate answer: the broker's refusal is fatal; SCRAM's server-first gets the
 * client-final, server-final is verified; a complete exchange makes the connection ready. */
static void
done_authenticate(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	cl_broker *b = ud;
	if (exchange_broken(b, err))
		return;
	ch_SaslAuthenticateResponse *m = resp;
	cl_sasl *s = b->sasl;
	if (m->ErrorCode) {
		char why[512];
		if (m->ErrorMessage.len > 0)
			snprintf(why, sizeof(why), "%.*s", (int)CH_MIN(m->ErrorMessage.len, 400),
				 m->ErrorMessage.p);
		else
			snprintf(why, sizeof(why), "SaslAuthenticate: %s",
				 ch_kerr_name(m->ErrorCode));
		cl_conn_auth_failed(b, m->ErrorCode, why);
		return;
	}
	s->step++;
	const uint8_t *tok = m->AuthBytes.p ? m->AuthBytes.p : (const uint8_t *)"";
	size_t tl = m->AuthBytes.len > 0 ? (size_t)m->AuthBytes.len : 0;
	char why[300];
	if (c->sasl_mech != 0 && s->step == 1) {
		long n = ch_scram_client_respond(&s->scram, c->sasl_pass, tok, tl, s->token,
						 sizeof(s->token), why, sizeof(why));
		if (n < 0) {
			cl_conn_auth_failed(b, CH_KERR_SASL_AUTHENTICATION_FAILED, why);
			return;
		}
		s->token_len = (size_t)n;
		cl_conn_send_setup(b, CH_APIKEY_SASL_AUTHENTICATE, s->auth_version,
				   build_authenticate, done_authenticate, b);
		return;
	}
	if (c->sasl_mech != 0 &&
	    ch_scram_client_verify(&s->scram, tok, tl, why, sizeof(why)) != 0) {
		cl_conn_auth_failed(b, CH_KERR_SASL_AUTHENTICATION_FAILED, why);
		return;
	}
	int64_t life = version >= 1 ? m->SessionLifetimeMs : 0;
	cl_sasl_free(b);
	cl_conn_sasl_done(b, life);
}

void
cl_sasl_start(cl_broker *b)
{
	int16_t hs_max = b->vmax[CH_APIKEY_SASL_HANDSHAKE];
	int16_t au_max = b->vmax[CH_APIKEY_SASL_AUTHENTICATE];
	if (hs_max < 1 || au_max < 0) {
		cl_conn_auth_failed(
			b, COHORT_ERR__NO_COMMON_VERSION,
			"the broker has no SaslHandshake v1 / SaslAuthenticate (KIP-152)");
		return;
	}
	cl_sasl_free(b);
	b->sasl = calloc(1, sizeof(*b->sasl));
	if (!b->sasl) {
		cl_conn_close(b, COHORT_ERR__NOMEM, "out of memory");
		return;
	}
	b->sasl->auth_version = CH_MIN(au_max, (int16_t)CH_SASLAUTHENTICATEREQUEST_MAX_VERSION);
	cl_conn_send_setup(b, CH_APIKEY_SASL_HANDSHAKE, 1, build_handshake, done_handshake, b);
}
