/*
 * ch_scram.c: SCRAM credentials, message parsing and the server exchange.
 * Contracts in ch_scram.h. Crypto is libcrypto's only.
 */
#include "auth/ch_scram.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "common/ch_common.h"

static const char *const mech_names[] = {"SCRAM-SHA-256", "SCRAM-SHA-512"};

const char *
ch_scram_mech_name(ch_scram_mech m)
{
	return mech_names[m == CH_SCRAM_SHA_512];
}

int
ch_scram_mech_parse(const char *name, ch_scram_mech *out)
{
	for (int i = 0; i < 2; i++)
		if (strcmp(name, mech_names[i]) == 0) {
			*out = (ch_scram_mech)i;
			return 0;
		}
	return -1;
}

size_t
ch_scram_key_len(ch_scram_mech m)
{
	return m == CH_SCRAM_SHA_512 ? 64 : 32;
}

static const EVP_MD *
md_of(ch_scram_mech m)
{
	return m == CH_SCRAM_SHA_512 ? EVP_sha512() : EVP_sha256();
}

/* HMAC(key, data) into out (key_len(m) bytes); 0 or -1. */
static int
hmac(ch_scram_mech m, const uint8_t *key, size_t klen, const void *data, size_t n, uint8_t *out)
{
	unsigned int len = 0;
	if (klen > INT_MAX || !HMAC(md_of(m), key, (int)klen, data, n, out, &len))
		return -1;
	return len == ch_scram_key_len(m) ? 0 : -1;
}

/* H(data) into out; 0 or -1. */
static int
hash(ch_scram_mech m, const uint8_t *data, size_t n, uint8_t *out)
{
	unsigned int len = 0;
	if (!EVP_Digest(data, n, out, &len, md_of(m), NULL))
		return -1;
	return len == ch_scram_key_len(m) ? 0 : -1;
}

int
ch_scram_cred_from_salted(ch_scram_mech m, const uint8_t *salted, size_t salted_len,
			  const uint8_t *salt, size_t salt_len, int32_t iterations,
			  ch_scram_cred *out)
{
	memset(out, 0, sizeof(*out));
	if (salt_len > CH_SCRAM_SALT_MAX)
		return -1;
	out->mech = m;
	out->iterations = iterations;
	memcpy(out->salt, salt, salt_len);
	out->salt_len = salt_len;
	uint8_t client_key[CH_SCRAM_KEY_MAX];
	if (hmac(m, salted, salted_len, "Client Key", 10, client_key) != 0 ||
	    hash(m, client_key, ch_scram_key_len(m), out->stored_key) != 0 ||
	    hmac(m, salted, salted_len, "Server Key", 10, out->server_key) != 0)
		return -1;
	OPENSSL_cleanse(client_key, sizeof(client_key));
	return 0;
}

int
ch_scram_cred_from_password(ch_scram_mech m, const char *password, size_t pwlen,
			    const uint8_t *salt, size_t salt_len, int32_t iterations,
			    ch_scram_cred *out)
{
	uint8_t rnd[24];
	if (!salt) {
		if (RAND_bytes(rnd, sizeof(rnd)) != 1)
			return -1;
		salt = rnd;
		salt_len = sizeof(rnd);
	}
	if (pwlen > INT_MAX || salt_len > INT_MAX || iterations < 1)
		return -1;
	uint8_t salted[CH_SCRAM_KEY_MAX];
	size_t kl = ch_scram_key_len(m);
	if (PKCS5_PBKDF2_HMAC(password, (int)pwlen, salt, (int)salt_len, iterations, md_of(m),
			      (int)kl, salted) != 1)
		return -1;
	int rc = ch_scram_cred_from_salted(m, salted, kl, salt, salt_len, iterations, out);
	OPENSSL_cleanse(salted, sizeof(salted));
	return rc;
}

/* ---- base64 ------------------------------------------------------------- */

void
ch_b64_encode(const uint8_t *p, size_t n, char *out)
{
	if (n == 0) {
		out[0] = '\0';
		return;
	}
	EVP_EncodeBlock((unsigned char *)out, p, (int)n);
}

static bool
b64_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '/';
}

long
ch_b64_decode(const char *s, size_t n, uint8_t *out, size_t cap)
{
	if (n % 4 != 0 || n > INT_MAX)
		return -1;
	size_t pad = 0;
	if (n >= 1 && s[n - 1] == '=')
		pad++;
	if (n >= 2 && s[n - 2] == '=')
		pad++;
	for (size_t i = 0; i < n - pad; i++)
		if (!b64_char(s[i]))
			return -1;
	size_t len = n / 4 * 3 - pad;
	if (len > cap)
		return -1;
	if (n == 0)
		return 0;
	uint8_t tmp[1024];
	uint8_t *dst = n / 4 * 3 <= sizeof(tmp) ? tmp : malloc(n / 4 * 3);
	if (!dst)
		return -1;
	int got = EVP_DecodeBlock(dst, (const unsigned char *)s, (int)n);
	long rc = got < 0 ? -1 : (long)len;
	if (rc >= 0)
		memcpy(out, dst, len);
	if (dst != tmp)
		free(dst);
	return rc;
}

/* ---- parsing ------------------------------------------------------------ */

static void
whyf(char *why, size_t whylen, const char *fmt, ...)
{
	if (!why || !whylen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

/* A comma-separated attribute of msg: [p, end) up to the next ',' or the end. */
typedef struct span {
	const char *p;
	size_t n;
} span;

/* The next attribute from *pos (advanced past its comma); false at the end. */
static bool
next_attr(const char *msg, size_t len, size_t *pos, span *out)
{
	if (*pos > len)
		return false;
	const char *start = msg + *pos;
	const char *comma = memchr(start, ',', len - *pos);
	size_t n = comma ? (size_t)(comma - start) : len - *pos;
	out->p = start;
	out->n = n;
	*pos += n + 1; /* past the comma, or past the end */
	return true;
}

/* Kafka's SASLNAME: ASCII 0x01-0x7F without '=' and ',', or =2C / =3D; decoded
 * into out (cap bytes, NUL-terminated). 0 or -1. */
static int
sasl_name(span s, char *out, size_t cap)
{
	size_t o = 0;
	if (s.n == 0)
		return -1;
	for (size_t i = 0; i < s.n; i++) {
		unsigned char c = (unsigned char)s.p[i];
		if (o + 1 >= cap)
			return -1;
		if (c == '=') {
			if (i + 2 < s.n && s.p[i + 1] == '2' && s.p[i + 2] == 'C')
				out[o++] = ',';
			else if (i + 2 < s.n && s.p[i + 1] == '3' && s.p[i + 2] == 'D')
				out[o++] = '=';
			else
				return -1;
			i += 2;
			continue;
		}
		if (c == 0 || c > 0x7F || c == ',')
			return -1;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return 0;
}

/* Kafka's PRINTABLE: 0x21-0x7E without ','; copied into out. */
static int
printable(span s, char *out, size_t cap)
{
	if (s.n == 0 || s.n >= cap)
		return -1;
	for (size_t i = 0; i < s.n; i++) {
		unsigned char c = (unsigned char)s.p[i];
		if (c < 0x21 || c > 0x7E)
			return -1;
	}
	memcpy(out, s.p, s.n);
	out[s.n] = '\0';
	return 0;
}

/* An extension "ALPHA=VALUE" (Kafka: [A-Za-z]+ = [\x01-\x7F without ',']+). */
static bool
extension(span s)
{
	size_t i = 0;
	while (i < s.n && ((s.p[i] >= 'a' && s.p[i] <= 'z') || (s.p[i] >= 'A' && s.p[i] <= 'Z')))
		i++;
	if (i == 0 || i + 1 >= s.n || s.p[i] != '=')
		return false;
	for (i++; i < s.n; i++) {
		unsigned char c = (unsigned char)s.p[i];
		if (c == 0 || c > 0x7F)
			return false;
	}
	return true;
}

static bool
has_prefix(span s, const char *pfx)
{
	size_t n = strlen(pfx);
	return s.n >= n && memcmp(s.p, pfx, n) == 0;
}

int
ch_scram_parse_client_first(const uint8_t *umsg, size_t len, ch_scram_client_first *out, char *why,
			    size_t whylen)
{
	const char *msg = (const char *)umsg;
	memset(out, 0, sizeof(*out));
	size_t pos = 0;
	span a;
	/* gs2 header: "n," then an optional "a=authzid", then ",". */
	if (!next_attr(msg, len, &pos, &a) || a.n != 1 || a.p[0] != 'n') {
		whyf(why, whylen, "gs2 header is not 'n' (channel binding is not supported)");
		return -1;
	}
	if (!next_attr(msg, len, &pos, &a)) {
		whyf(why, whylen, "truncated gs2 header");
		return -1;
	}
	if (a.n > 0) {
		span az = {a.p + 2, a.n - 2};
		if (!has_prefix(a, "a=") ||
		    sasl_name(az, out->authzid, sizeof(out->authzid)) != 0) {
			whyf(why, whylen, "bad authorization id");
			return -1;
		}
	}
	out->gs2_len = pos;
	out->bare_off = pos;
	if (pos > len) {
		whyf(why, whylen, "no client-first-message-bare");
		return -1;
	}
	if (!next_attr(msg, len, &pos, &a)) {
		whyf(why, whylen, "no user name");
		return -1;
	}
	if (has_prefix(a, "m=")) { /* reserved-mext: Kafka accepts and ignores it */
		if (!next_attr(msg, len, &pos, &a)) {
			whyf(why, whylen, "no user name");
			return -1;
		}
	}
	span un = {a.p + 2, a.n >= 2 ? a.n - 2 : 0};
	if (!has_prefix(a, "n=") || sasl_name(un, out->user, sizeof(out->user)) != 0) {
		whyf(why, whylen, "bad user name");
		return -1;
	}
	span nn;
	if (!next_attr(msg, len, &pos, &a) || !has_prefix(a, "r=") ||
	    (nn = (span){a.p + 2, a.n - 2}, printable(nn, out->nonce, sizeof(out->nonce)) != 0)) {
		whyf(why, whylen, "bad nonce");
		return -1;
	}
	while (next_attr(msg, len, &pos, &a)) {
		if (!extension(a)) {
			whyf(why, whylen, "bad extension");
			return -1;
		}
	}
	return 0;
}

int
ch_scram_parse_client_final(const uint8_t *umsg, size_t len, ch_scram_client_final *out, char *why,
			    size_t whylen)
{
	const char *msg = (const char *)umsg;
	memset(out, 0, sizeof(*out));
	size_t pos = 0;
	span a;
	if (!next_attr(msg, len, &pos, &a) || !has_prefix(a, "c=")) {
		whyf(why, whylen, "no channel binding");
		return -1;
	}
	long cl = ch_b64_decode(a.p + 2, a.n - 2, out->channel, sizeof(out->channel));
	if (cl < 0) {
		whyf(why, whylen, "bad channel binding");
		return -1;
	}
	out->channel_len = (size_t)cl;
	span nn;
	if (!next_attr(msg, len, &pos, &a) || !has_prefix(a, "r=") ||
	    (nn = (span){a.p + 2, a.n - 2}, printable(nn, out->nonce, sizeof(out->nonce)) != 0)) {
		whyf(why, whylen, "bad nonce");
		return -1;
	}
	/* Extensions, then the proof, which must be last. */
	for (;;) {
		size_t start = pos;
		if (!next_attr(msg, len, &pos, &a)) {
			whyf(why, whylen, "no proof");
			return -1;
		}
		if (has_prefix(a, "p=") && pos > len) {
			long pl = ch_b64_decode(a.p + 2, a.n - 2, out->proof, sizeof(out->proof));
			if (pl <= 0) {
				whyf(why, whylen, "bad proof");
				return -1;
			}
			out->proof_len = (size_t)pl;
			out->without_proof_len = start - 1; /* without the comma */
			return 0;
		}
		if (!extension(a)) {
			whyf(why, whylen, "bad extension");
			return -1;
		}
	}
}

/* ---- the server --------------------------------------------------------- */

void
ch_scram_server_init(ch_scram_server *s, ch_scram_mech m)
{
	memset(s, 0, sizeof(*s));
	s->mech = m;
	s->state = CH_SCRAM_WANT_FIRST;
}

void
ch_scram_server_free(ch_scram_server *s)
{
	free(s->auth_prefix);
	s->auth_prefix = NULL;
	OPENSSL_cleanse(&s->cred, sizeof(s->cred));
}

/* Fails the exchange: state FAILED, secrets dropped, why noted for logs. */
static int
failw(ch_scram_server *s, const char **msg_out, const char *msg, const char *why)
{
	snprintf(s->why, sizeof(s->why), "%s", why);
	ch_scram_server_free(s);
	s->state = CH_SCRAM_FAILED;
	*msg_out = msg;
	return CH_SCRAM_STEP_FAIL;
}

/* Allocates a copy of the string as the step's output. */
static void
out_str(const char *str, uint8_t **out, size_t *out_len)
{
	size_t n = strlen(str);
	*out = malloc(n ? n : 1);
	if (!*out)
		abort();
	memcpy(*out, str, n);
	*out_len = n;
}

/* 32 random characters of [A-Za-z0-9] (a server nonce, Kafka's is base 36). */
static int
random_nonce(char *out)
{
	static const char alnum[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	uint8_t r[32];
	if (RAND_bytes(r, sizeof(r)) != 1)
		return -1;
	for (size_t i = 0; i < sizeof(r); i++)
		out[i] = alnum[r[i] % 62];
	out[sizeof(r)] = '\0';
	return 0;
}

/* The client-first step: parse, look the user up, answer server-first. */
static int
step_first(ch_scram_server *s, const uint8_t *msg, size_t n, ch_scram_lookup_fn lookup, void *ud,
	   uint8_t **out, size_t *out_len, const char **msg_out)
{
	ch_scram_client_first cf;
	char why[128];
	if (ch_scram_parse_client_first(msg, n, &cf, why, sizeof(why)) != 0)
		return failw(s, msg_out, NULL, why);
	if (!lookup(ud, cf.user, s->mech, &s->cred) || s->cred.mech != s->mech)
		return failw(s, msg_out, NULL, "Invalid user credentials"); /* Kafka's, not sent */
	if (cf.authzid[0] && strcmp(cf.authzid, cf.user) != 0)
		return failw(s, msg_out,
			     "Authentication failed: Client requested an authorization id that is "
			     "different from username",
			     "authorization id");
	if (s->cred.iterations < CH_SCRAM_MIN_ITERATIONS)
		return failw(s, msg_out, NULL, "too few iterations in the stored credential");
	snprintf(s->user, sizeof(s->user), "%s", cf.user);
	memcpy(s->gs2, msg, cf.gs2_len);
	s->gs2_len = cf.gs2_len;
	char snonce[48];
	if (s->fixed_snonce[0])
		memcpy(snonce, s->fixed_snonce, sizeof(snonce));
	else if (random_nonce(snonce) != 0)
		return failw(s, msg_out, NULL, "no random bytes");
	snprintf(s->nonce, sizeof(s->nonce), "%s%s", cf.nonce, snonce);
	char salt64[CH_SCRAM_SALT_MAX * 2];
	ch_b64_encode(s->cred.salt, s->cred.salt_len, salt64);
	char first[sizeof(s->nonce) + sizeof(salt64) + 32];
	snprintf(first, sizeof(first), "r=%s,s=%s,i=%d", s->nonce, salt64, (int)s->cred.iterations);
	/* AuthMessage = client-first-bare "," server-first "," client-final-without-proof */
	size_t bare = n - cf.bare_off, fl = strlen(first);
	s->auth_prefix = malloc(bare + fl + 3);
	if (!s->auth_prefix)
		abort();
	memcpy(s->auth_prefix, msg + cf.bare_off, bare);
	s->auth_prefix[bare] = ',';
	memcpy(s->auth_prefix + bare + 1, first, fl);
	s->auth_prefix[bare + 1 + fl] = ',';
	s->auth_prefix[bare + 2 + fl] = '\0';
	s->state = CH_SCRAM_WANT_FINAL;
	out_str(first, out, out_len);
	return CH_SCRAM_STEP_OK;
}

/* The client-final step: nonce, channel binding and proof checked; answers server-final. */
static int
step_final(ch_scram_server *s, const uint8_t *msg, size_t n, uint8_t **out, size_t *out_len,
	   const char **msg_out)
{
	ch_scram_client_final cf;
	char why[128];
	if (ch_scram_parse_client_final(msg, n, &cf, why, sizeof(why)) != 0)
		return failw(s, msg_out, NULL, why);
	/* Kafka checks that the nonce ends with the one it sent, not equality:
	 * librdkafka (2.0 at least) sends its own nonce twice in front of it. */
	size_t fl = strlen(cf.nonce), sl = strlen(s->nonce);
	if (fl < sl || strcmp(cf.nonce + fl - sl, s->nonce) != 0)
		return failw(s, msg_out, NULL, "Invalid client nonce in the final client message.");
	if (cf.channel_len != s->gs2_len || memcmp(cf.channel, s->gs2, s->gs2_len) != 0)
		return failw(s, msg_out, NULL, "channel binding is not the client's gs2 header");
	size_t kl = ch_scram_key_len(s->mech);
	if (cf.proof_len != kl)
		return failw(s, msg_out, NULL, "proof of the wrong length");
	size_t pl = strlen(s->auth_prefix);
	char *auth = malloc(pl + cf.without_proof_len + 1);
	if (!auth)
		abort();
	memcpy(auth, s->auth_prefix, pl);
	memcpy(auth + pl, msg, cf.without_proof_len);
	size_t al = pl + cf.without_proof_len;
	uint8_t sig[CH_SCRAM_KEY_MAX], client_key[CH_SCRAM_KEY_MAX], stored[CH_SCRAM_KEY_MAX];
	uint8_t server_sig[CH_SCRAM_KEY_MAX];
	int rc = hmac(s->mech, s->cred.stored_key, kl, auth, al, sig);
	for (size_t i = 0; rc == 0 && i < kl; i++)
		client_key[i] = cf.proof[i] ^ sig[i];
	if (rc == 0)
		rc = hash(s->mech, client_key, kl, stored);
	if (rc == 0 && CRYPTO_memcmp(stored, s->cred.stored_key, kl) != 0)
		rc = -1; /* Kafka: "Invalid client credentials", not sent */
	if (rc == 0)
		rc = hmac(s->mech, s->cred.server_key, kl, auth, al, server_sig);
	free(auth);
	OPENSSL_cleanse(client_key, sizeof(client_key));
	if (rc != 0)
		return failw(s, msg_out, NULL, "Invalid client credentials");
	char final[CH_SCRAM_KEY_MAX * 2 + 8] = "v=";
	ch_b64_encode(server_sig, kl, final + 2);
	char user[CH_SCRAM_NAME_MAX];
	memcpy(user, s->user, sizeof(user));
	ch_scram_server_free(s);
	memcpy(s->user, user, sizeof(user));
	s->state = CH_SCRAM_DONE;
	out_str(final, out, out_len);
	return CH_SCRAM_STEP_OK;
}

int
ch_scram_server_step(ch_scram_server *s, const uint8_t *msg, size_t n, ch_scram_lookup_fn lookup,
		     void *ud, uint8_t **out, size_t *out_len, const char **msg_out)
{
	*out = NULL;
	*out_len = 0;
	*msg_out = NULL;
	switch (s->state) {
	case CH_SCRAM_WANT_FIRST:
		return step_first(s, msg, n, lookup, ud, out, out_len, msg_out);
	case CH_SCRAM_WANT_FINAL:
		return step_final(s, msg, n, out, out_len, msg_out);
	default:
		return failw(s, msg_out, NULL, "exchange already over");
	}
}

/* ---- the client --------------------------------------------------------- */

int
ch_scram_parse_server_first(const uint8_t *umsg, size_t len, ch_scram_server_first *out, char *why,
			    size_t whylen)
{
	const char *msg = (const char *)umsg;
	memset(out, 0, sizeof(*out));
	size_t pos = 0;
	span a;
	if (len > CH_SCRAM_MSG_MAX) {
		whyf(why, whylen, "server-first message of %zu bytes", len);
		return -1;
	}
	if (!next_attr(msg, len, &pos, &a)) {
		whyf(why, whylen, "empty server-first message");
		return -1;
	}
	if (has_prefix(a, "m=") && !next_attr(msg, len, &pos, &a)) {
		whyf(why, whylen, "no nonce");
		return -1;
	}
	span nn = {a.p + 2, a.n >= 2 ? a.n - 2 : 0};
	if (!has_prefix(a, "r=") || printable(nn, out->nonce, sizeof(out->nonce)) != 0) {
		whyf(why, whylen, "bad nonce");
		return -1;
	}
	long sl;
	if (!next_attr(msg, len, &pos, &a) || !has_prefix(a, "s=") ||
	    (sl = ch_b64_decode(a.p + 2, a.n - 2, out->salt, sizeof(out->salt))) <= 0) {
		whyf(why, whylen, "bad salt");
		return -1;
	}
	out->salt_len = (size_t)sl;
	if (!next_attr(msg, len, &pos, &a) || !has_prefix(a, "i=") || a.n < 3 || a.n > 12) {
		whyf(why, whylen, "bad iteration count");
		return -1;
	}
	int64_t it = 0;
	for (size_t i = 2; i < a.n; i++) {
		if (a.p[i] < '0' || a.p[i] > '9') {
			whyf(why, whylen, "bad iteration count");
			return -1;
		}
		it = it * 10 + (a.p[i] - '0');
	}
	if (it > INT32_MAX) {
		whyf(why, whylen, "bad iteration count");
		return -1;
	}
	out->iterations = (int32_t)it;
	while (next_attr(msg, len, &pos, &a)) {
		if (!extension(a)) {
			whyf(why, whylen, "bad extension");
			return -1;
		}
	}
	return 0;
}

long
ch_scram_client_begin(ch_scram_client *s, ch_scram_mech m, const char *user, const char *nonce,
		      char *out, size_t cap)
{
	memset(s, 0, sizeof(*s));
	s->mech = m;
	if (nonce)
		snprintf(s->cnonce, sizeof(s->cnonce), "%s", nonce);
	else if (random_nonce(s->cnonce) != 0)
		return -1;
	/* saslname: ',' and '=' escaped (Kafka's ScramFormatter.saslName) */
	char name[CH_SCRAM_NAME_MAX * 3];
	size_t o = 0;
	for (const char *p = user; *p; p++) {
		if (o + 4 > sizeof(name))
			return -1;
		if (*p == ',' || *p == '=') {
			memcpy(name + o, *p == ',' ? "=2C" : "=3D", 3);
			o += 3;
		} else {
			name[o++] = *p;
		}
	}
	name[o] = '\0';
	snprintf(s->bare, sizeof(s->bare), "n=%s,r=%s", name, s->cnonce);
	int n = snprintf(out, cap, "n,,%s", s->bare);
	return n < 0 || (size_t)n >= cap ? -1 : n;
}

long
ch_scram_client_respond(ch_scram_client *s, const char *password, const uint8_t *sf, size_t n,
			char *out, size_t cap, char *why, size_t whylen)
{
	ch_scram_server_first f;
	if (ch_scram_parse_server_first(sf, n, &f, why, whylen) != 0)
		return -1;
	size_t cl = strlen(s->cnonce);
	if (strlen(f.nonce) <= cl || memcmp(f.nonce, s->cnonce, cl) != 0) {
		whyf(why, whylen, "Invalid server nonce: does not start with client nonce");
		return -1;
	}
	if (f.iterations < CH_SCRAM_MIN_ITERATIONS || f.iterations > CH_SCRAM_MAX_ITERATIONS) {
		whyf(why, whylen, "Requested iterations %d is outside [%d, %d] for %s",
		     (int)f.iterations, CH_SCRAM_MIN_ITERATIONS, CH_SCRAM_MAX_ITERATIONS,
		     ch_scram_mech_name(s->mech));
		return -1;
	}
	size_t kl = ch_scram_key_len(s->mech), pwlen = strlen(password);
	/* AuthMessage = client-first-bare "," server-first "," client-final-without-proof */
	size_t bl = strlen(s->bare), wl = strlen(f.nonce) + 9; /* "c=biws,r=" */
	char *auth = malloc(bl + n + wl + 3);
	if (!auth) {
		whyf(why, whylen, "out of memory");
		return -1;
	}
	int al = snprintf(auth, bl + n + wl + 3, "%s,%.*s,c=biws,r=%s", s->bare, (int)n,
			  (const char *)sf, f.nonce);
	uint8_t salted[CH_SCRAM_KEY_MAX], client_key[CH_SCRAM_KEY_MAX], stored[CH_SCRAM_KEY_MAX];
	uint8_t sig[CH_SCRAM_KEY_MAX], server_key[CH_SCRAM_KEY_MAX];
	int rc = pwlen <= INT_MAX && PKCS5_PBKDF2_HMAC(password, (int)pwlen, f.salt,
						       (int)f.salt_len, f.iterations,
						       md_of(s->mech), (int)kl, salted) == 1
			 ? 0
			 : -1;
	if (rc == 0)
		rc = hmac(s->mech, salted, kl, "Client Key", 10, client_key);
	if (rc == 0)
		rc = hash(s->mech, client_key, kl, stored);
	if (rc == 0)
		rc = hmac(s->mech, stored, kl, auth, (size_t)al, sig);
	if (rc == 0)
		rc = hmac(s->mech, salted, kl, "Server Key", 10, server_key);
	if (rc == 0)
		rc = hmac(s->mech, server_key, kl, auth, (size_t)al, s->server_sig);
	free(auth);
	for (size_t i = 0; rc == 0 && i < kl; i++)
		client_key[i] ^= sig[i]; /* the proof */
	char proof64[CH_SCRAM_KEY_MAX * 2];
	if (rc == 0)
		ch_b64_encode(client_key, kl, proof64);
	OPENSSL_cleanse(salted, sizeof(salted));
	OPENSSL_cleanse(client_key, sizeof(client_key));
	OPENSSL_cleanse(server_key, sizeof(server_key));
	if (rc != 0) {
		whyf(why, whylen, "libcrypto failed");
		return -1;
	}
	int ol = snprintf(out, cap, "c=biws,r=%s,p=%s", f.nonce, proof64);
	if (ol < 0 || (size_t)ol >= cap) {
		whyf(why, whylen, "client-final message too long");
		return -1;
	}
	return ol;
}

int
ch_scram_client_verify(ch_scram_client *s, const uint8_t *umsg, size_t len, char *why,
		       size_t whylen)
{
	const char *msg = (const char *)umsg;
	size_t pos = 0;
	span a;
	if (!next_attr(msg, len, &pos, &a) || a.n < 2) {
		whyf(why, whylen, "empty server-final message");
		return -1;
	}
	if (has_prefix(a, "e=")) {
		whyf(why, whylen, "Sasl authentication using %s failed with error: %.*s",
		     ch_scram_mech_name(s->mech), (int)(a.n - 2 > 200 ? 200 : a.n - 2), a.p + 2);
		return -1;
	}
	uint8_t sig[CH_SCRAM_KEY_MAX];
	long n = has_prefix(a, "v=") ? ch_b64_decode(a.p + 2, a.n - 2, sig, sizeof(sig)) : -1;
	size_t kl = ch_scram_key_len(s->mech);
	if (n != (long)kl || CRYPTO_memcmp(sig, s->server_sig, kl) != 0) {
		whyf(why, whylen, "Invalid server signature in server final message");
		return -1;
	}
	while (next_attr(msg, len, &pos, &a)) {
		if (!extension(a)) {
			whyf(why, whylen, "bad extension in server final message");
			return -1;
		}
	}
	return 0;
}

/* ---- --add-scram -------------------------------------------------------- */

int
ch_scram_parse_add(const char *spec, char *user, size_t user_cap, ch_scram_cred *out, char *why,
		   size_t whylen)
{
	const char *eq = strchr(spec, '=');
	if (!eq) {
		whyf(why, whylen, "Failed to find equals sign in SCRAM argument '%s'", spec);
		return -1;
	}
	char mname[32];
	snprintf(mname, sizeof(mname), "%.*s", (int)(eq - spec), spec);
	ch_scram_mech m;
	if (ch_scram_mech_parse(mname, &m) != 0) {
		whyf(why, whylen, "The add-scram mechanism %s is not supported.", mname);
		return -1;
	}
	const char *cfg = eq + 1;
	size_t cl = strlen(cfg);
	if (cl < 2 || cfg[0] != '[' || cfg[cl - 1] != ']') {
		whyf(why, whylen, "Expected configuration string to start with [ and end with ]");
		return -1;
	}
	char name[CH_SCRAM_NAME_MAX] = "", password[1024] = "", salt64[512] = "",
	     salted64[512] = "";
	bool have_name = false, have_pw = false, have_salt = false, have_salted = false;
	long iterations = 4096;
	size_t pos = 1, end = cl - 1;
	while (pos < end) {
		const char *p = cfg + pos;
		const char *comma = memchr(p, ',', end - pos);
		size_t n = comma ? (size_t)(comma - p) : end - pos;
		pos += n + 1;
		const char *e = memchr(p, '=', n);
		if (!e) {
			whyf(why, whylen, "Failed to find equals sign in '%.*s'", (int)n, p);
			return -1;
		}
		size_t kl = (size_t)(e - p), vl = n - kl - 1;
		const char *v = e + 1;
		while (kl && (p[0] == ' ')) {
			p++;
			kl--;
		}
		if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
			v++;
			vl -= 2;
		}
		char *dst = NULL;
		size_t cap = 0;
		if (kl == 4 && !memcmp(p, "name", 4)) {
			dst = name, cap = sizeof(name), have_name = true;
		} else if (kl == 8 && !memcmp(p, "password", 8)) {
			dst = password, cap = sizeof(password), have_pw = true;
		} else if (kl == 4 && !memcmp(p, "salt", 4)) {
			dst = salt64, cap = sizeof(salt64), have_salt = true;
		} else if (kl == 14 && !memcmp(p, "saltedpassword", 14)) {
			dst = salted64, cap = sizeof(salted64), have_salted = true;
		} else if (kl == 10 && !memcmp(p, "iterations", 10)) {
			char buf[16], *ep;
			snprintf(buf, sizeof(buf), "%.*s", (int)CH_MIN(vl, 15), v);
			errno = 0;
			iterations = strtol(buf, &ep, 10);
			if (!vl || *ep || errno) {
				whyf(why, whylen, "Failed to parse iterations count: %.*s", (int)vl,
				     v);
				return -1;
			}
			continue;
		} else {
			whyf(why, whylen, "Unknown SCRAM configurations: %.*s", (int)kl, p);
			return -1;
		}
		if (vl >= cap) {
			whyf(why, whylen, "'%.*s' is too long", (int)kl, p);
			return -1;
		}
		memcpy(dst, v, vl);
		dst[vl] = '\0';
	}
	if (!have_name || !name[0]) {
		whyf(why, whylen, "You must supply 'name' to add-scram");
		return -1;
	}
	if (!have_pw && !have_salted) {
		whyf(why, whylen,
		     "You must supply one of 'password' or 'saltedpassword' to add-scram");
		return -1;
	}
	if (have_salted && !have_salt) {
		whyf(why, whylen, "You must supply 'salt' with 'saltedpassword' to add-scram");
		return -1;
	}
	if (iterations < CH_SCRAM_MIN_ITERATIONS || iterations > CH_SCRAM_MAX_ITERATIONS) {
		whyf(why, whylen,
		     "The 'iterations' value must be between %d and %d for add-scram "
		     "using %s",
		     CH_SCRAM_MIN_ITERATIONS, CH_SCRAM_MAX_ITERATIONS, mname);
		return -1;
	}
	uint8_t salt[CH_SCRAM_SALT_MAX];
	long sl = 0;
	if (have_salt && (sl = ch_b64_decode(salt64, strlen(salt64), salt, sizeof(salt))) <= 0) {
		whyf(why, whylen, "Failed to decode given salt: %s", salt64);
		return -1;
	}
	int rc;
	if (have_pw) {
		rc = ch_scram_cred_from_password(m, password, strlen(password),
						 have_salt ? salt : NULL, (size_t)sl,
						 (int32_t)iterations, out);
		OPENSSL_cleanse(password, sizeof(password));
	} else {
		uint8_t salted[CH_SCRAM_KEY_MAX];
		long pl = ch_b64_decode(salted64, strlen(salted64), salted, sizeof(salted));
		if (pl != (long)ch_scram_key_len(m)) {
			whyf(why, whylen, "Failed to decode given saltedPassword: %s", salted64);
			return -1;
		}
		rc = ch_scram_cred_from_salted(m, salted, (size_t)pl, salt, (size_t)sl,
					       (int32_t)iterations, out);
	}
	if (rc != 0) {
		whyf(why, whylen, "could not compute the credential");
		return -1;
	}
	if (strlen(name) >= user_cap) {
		whyf(why, whylen, "name too long");
		return -1;
	}
	memcpy(user, name, strlen(name) + 1);
	return 0;
}
