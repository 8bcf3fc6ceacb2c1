/*
 * ch_scram: SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as a Kafka
 * broker speaks them: credentials, the client's two messages, the server's
 * two answers. Pure (no I/O, no clock); the hashes, HMAC and PBKDF2 are
 * OpenSSL's libcrypto, randomness its RAND_bytes.
 *
 * A credential is what the server keeps: salt, iterations, StoredKey =
 * H(HMAC(SaltedPassword, "Client Key")) and ServerKey =
 * HMAC(SaltedPassword, "Server Key"), SaltedPassword = PBKDF2(password,
 * salt, iterations). Never the password.
 *
 * The exchange (Kafka's ScramSaslServer, messages as ScramMessages parses
 * them):
 *
 *   client-first  n,[a=authzid],n=user,r=cnonce[,ext=value...]
 *   server-first  r=cnonce+snonce,s=base64(salt),i=iterations
 *   client-final  c=base64(gs2 header),r=cnonce+snonce[,ext...],p=base64(proof)
 *   server-final  v=base64(ServerSignature)
 *
 * Only the "n" gs2 header (no channel binding) exists, as in Kafka. The
 * proof is checked as RFC 5802 says: ClientKey = proof XOR
 * HMAC(StoredKey, AuthMessage), H(ClientKey) compared with StoredKey in
 * constant time; the nonce must end with the one the server sent (Kafka's
 * check: librdkafka repeats its own nonce in front of it), and c= must be
 * the client's own gs2 header (Kafka does not check c=; real clients send
 * it right).
 */
#ifndef CH_SCRAM_H
#define CH_SCRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum ch_scram_mech {
	CH_SCRAM_SHA_256 = 0,
	CH_SCRAM_SHA_512 = 1,
} ch_scram_mech;

#define CH_SCRAM_KEY_MAX 64    /* SHA-512 */
#define CH_SCRAM_SALT_MAX 128  /* bytes */
#define CH_SCRAM_NAME_MAX 256  /* user names, bytes */
#define CH_SCRAM_NONCE_MAX 256 /* client nonce */
#define CH_SCRAM_MIN_ITERATIONS 4096
#define CH_SCRAM_MAX_ITERATIONS 16384 /* Kafka's limits for both mechanisms */

/* "SCRAM-SHA-256" / "SCRAM-SHA-512". */
const char *ch_scram_mech_name(ch_scram_mech m);
/* By name; -1 if it is neither. */
int ch_scram_mech_parse(const char *name, ch_scram_mech *out);
/* Bytes of the hash (32 or 64). */
size_t ch_scram_key_len(ch_scram_mech m);

typedef struct ch_scram_cred {
	ch_scram_mech mech;
	int32_t iterations;
	uint8_t salt[CH_SCRAM_SALT_MAX];
	size_t salt_len;
	uint8_t stored_key[CH_SCRAM_KEY_MAX]; /* ch_scram_key_len(mech) bytes */
	uint8_t server_key[CH_SCRAM_KEY_MAX];
} ch_scram_cred;

/* A credential from a password (salt NULL: 24 random bytes). 0, or -1 if
 * libcrypto failed or the salt is too long. */
int ch_scram_cred_from_password(ch_scram_mech m, const char *password, size_t pwlen,
				const uint8_t *salt, size_t salt_len, int32_t iterations,
				ch_scram_cred *out);
/* The same from SaltedPassword itself (kafka-storage's saltedpassword=). */
int ch_scram_cred_from_salted(ch_scram_mech m, const uint8_t *salted, size_t salted_len,
			      const uint8_t *salt, size_t salt_len, int32_t iterations,
			      ch_scram_cred *out);

/* ---- the client's messages (fuzzed: tests/fuzz/fuzz_scram.c) ---------- */

typedef struct ch_scram_client_first {
	char user[CH_SCRAM_NAME_MAX];    /* decoded (=2C -> ',', =3D -> '=') */
	char authzid[CH_SCRAM_NAME_MAX]; /* decoded; "" if none */
	char nonce[CH_SCRAM_NONCE_MAX];
	size_t gs2_len;  /* the gs2 header "n,[a=..]," is msg[0..gs2_len) */
	size_t bare_off; /* client-first-message-bare is msg[bare_off..) */
} ch_scram_client_first;

/* Parses a client-first message (not NUL-terminated). 0, or -1 if it is not
 * of Kafka's form (then why says how, for logs: it is not sent). */
int ch_scram_parse_client_first(const uint8_t *msg, size_t n, ch_scram_client_first *out, char *why,
				size_t whylen);

typedef struct ch_scram_client_final {
	uint8_t channel[CH_SCRAM_NAME_MAX + 8]; /* decoded c= */
	size_t channel_len;
	char nonce[CH_SCRAM_NONCE_MAX * 2];
	size_t without_proof_len; /* client-final-message-without-proof is msg[0..this) */
	uint8_t proof[CH_SCRAM_KEY_MAX];
	size_t proof_len;
} ch_scram_client_final;

/* Parses a client-final message. 0, or -1 with why. */
int ch_scram_parse_client_final(const uint8_t *msg, size_t n, ch_scram_client_final *out, char *why,
				size_t whylen);

/* ---- the server side of one exchange ----------------------------------- */

typedef enum ch_scram_state {
	CH_SCRAM_WANT_FIRST = 0,
	CH_SCRAM_WANT_FINAL,
	CH_SCRAM_DONE,
	CH_SCRAM_FAILED,
} ch_scram_state;

typedef struct ch_scram_server {
	ch_scram_mech mech;
	ch_scram_state state;
	ch_scram_cred cred;
	char user[CH_SCRAM_NAME_MAX];
	uint8_t gs2[CH_SCRAM_NAME_MAX + 8];
	size_t gs2_len;
	char *auth_prefix;                   /* client-first-bare "," server-first "," (owned) */
	char nonce[CH_SCRAM_NONCE_MAX + 64]; /* client + server nonce */
	char why[128]; /* after a failure: what was wrong, for logs (never sent) */
	char fixed_snonce
		[48]; /* tests only (known-answer vectors): the server nonce; "" = random */
} ch_scram_server;

/* Looks a user's credential up for the mechanism: true and *out, or false
 * (no such user). */
typedef bool (*ch_scram_lookup_fn)(void *ud, const char *user, ch_scram_mech m, ch_scram_cred *out);

/* Outcome of a step. CH_SCRAM_STEP_FAIL: authentication failed; *msg is
 * NULL for Kafka's generic answer ("Authentication failed during
 * authentication due to invalid credentials with SASL mechanism M", sent
 * for anything that would tell an attacker more) or a message Kafka sends
 * as it is. */
#define CH_SCRAM_STEP_OK 0
#define CH_SCRAM_STEP_FAIL (-1)

void ch_scram_server_init(ch_scram_server *s, ch_scram_mech m);
void ch_scram_server_free(ch_scram_server *s);
/* One client message in, the server's answer out (malloc'd, *out_len
 * bytes; the caller frees). After the final message succeeded, s->state is
 * CH_SCRAM_DONE and s->user the authenticated user. */
int ch_scram_server_step(ch_scram_server *s, const uint8_t *msg, size_t n,
			 ch_scram_lookup_fn lookup, void *ud, uint8_t **out, size_t *out_len,
			 const char **msg_out);

/* ---- the client side of one exchange (libcohort; fuzzed:
 * tests/fuzz/fuzz_scram_client.c) ------------------------------------------
 *
 * As Kafka's ScramSaslClient: client-first "n,,n=user,r=cnonce" (cnonce 32
 * random characters), server-first must repeat cnonce in front of its own
 * nonce and ask for at least CH_SCRAM_MIN_ITERATIONS (and no more than
 * CH_SCRAM_MAX_ITERATIONS: a hostile server must not make the client spin),
 * client-final "c=biws,r=nonce,p=proof", and server-final's v= must be the
 * ServerSignature (compared in constant time); its e= is the server's error.
 */

#define CH_SCRAM_MSG_MAX 2048 /* longest server message the client accepts */

typedef struct ch_scram_client {
	ch_scram_mech mech;
	char bare[CH_SCRAM_NAME_MAX * 3 + CH_SCRAM_NONCE_MAX + 8]; /* client-first-message-bare */
	char cnonce[CH_SCRAM_NONCE_MAX];
	uint8_t server_sig[CH_SCRAM_KEY_MAX]; /* expected in server-final */
} ch_scram_client;

typedef struct ch_scram_server_first {
	char nonce[CH_SCRAM_MSG_MAX]; /* cnonce + snonce */
	uint8_t salt[CH_SCRAM_SALT_MAX];
	size_t salt_len;
	int32_t iterations;
} ch_scram_server_first;

/* Parses server-first ("[m=..,]r=nonce,s=salt,i=iterations[,ext...]"). 0,
 * or -1 with why (which names what is wrong). */
int ch_scram_parse_server_first(const uint8_t *msg, size_t n, ch_scram_server_first *out, char *why,
				size_t whylen);
/* Starts an exchange as user (nonce NULL: a random one; tests give theirs):
 * the client-first message into out (cap bytes, NUL-terminated). Returns
 * its length, or -1 (user name too long, no random bytes). */
long ch_scram_client_begin(ch_scram_client *s, ch_scram_mech m, const char *user, const char *nonce,
			   char *out, size_t cap);
/* Answers server-first (sf, n bytes) with client-final into out. Returns
 * its length, or -1 with why (server-first malformed, nonce not ours, too
 * few or too many iterations, libcrypto failed). */
long ch_scram_client_respond(ch_scram_client *s, const char *password, const uint8_t *sf, size_t n,
			     char *out, size_t cap, char *why, size_t whylen);
/* Checks server-final: 0 when its v= is the ServerSignature, else -1 with
 * why (the server's e= text, or that the signature is wrong). */
int ch_scram_client_verify(ch_scram_client *s, const uint8_t *msg, size_t n, char *why,
			   size_t whylen);

/* ---- base64 (RFC 4648, padded), as SCRAM and the credential file use ---- */

/* Encodes n bytes into out (room for 4*((n+2)/3)+1), NUL-terminated. */
void ch_b64_encode(const uint8_t *p, size_t n, char *out);
/* Decodes s[0..n) (strict: the alphabet, padding, length % 4 == 0) into
 * out (cap bytes). Returns the decoded length, or -1. */
long ch_b64_decode(const char *s, size_t n, uint8_t *out, size_t cap);

/* ---- kafka-storage format --add-scram ----------------------------------- */

/* Parses "SCRAM-SHA-512=[name=alice,password=alice-secret]" (also
 * iterations=N, salt="base64" and saltedpassword="base64" instead of
 * password; values may be double-quoted) into user and a credential. 0, or
 * -1 with why. */
int ch_scram_parse_add(const char *spec, char *user, size_t user_cap, ch_scram_cred *out, char *why,
		       size_t whylen);

#endif
