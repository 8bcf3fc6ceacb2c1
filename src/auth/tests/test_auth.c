/*
 * Unit tests of auth/: SCRAM against RFC 7677's known-answer exchange and a
 * client computed here, the message parsers, PLAIN and its JAAS users, the
 * credential store, the principal mapping rules.
 */
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "auth/ch_plain.h"
#include "auth/ch_principal.h"
#include "auth/ch_scram.h"
#include "auth/ch_scram_store.h"
#include "common/ch_common.h"
#include "common/ch_test.h"

/* RFC 7677 section 3: user "user", password "pencil". */
#define RFC_SALT "W22ZaJ0SNY7soEsUEjb6gQ=="
#define RFC_FIRST "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
#define RFC_SNONCE "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
#define RFC_SERVER_FIRST                                                                           \
	"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
#define RFC_FINAL                                                                                  \
	"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"                             \
	"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
#define RFC_SERVER_FINAL "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

typedef struct users {
	const char *name;
	ch_scram_cred cred;
} users;

static bool
lookup(void *ud, const char *user, ch_scram_mech m, ch_scram_cred *out)
{
	users *u = ud;
	if (strcmp(user, u->name) != 0 || u->cred.mech != m)
		return false;
	*out = u->cred;
	return true;
}

static users
rfc_user(void)
{
	users u = {"user", {0}};
	uint8_t salt[32];
	long sl = ch_b64_decode(RFC_SALT, strlen(RFC_SALT), salt, sizeof(salt));
	CH_CHECK(sl == 16);
	CH_CHECK(ch_scram_cred_from_password(CH_SCRAM_SHA_256, "pencil", 6, salt, (size_t)sl, 4096,
					     &u.cred) == 0);
	return u;
}

/* One server step on a string; returns the answer (static) or NULL on failure (*msg then). */
static const char *
step(ch_scram_server *s, users *u, const char *in, const char **msg)
{
	static char buf[512];
	uint8_t *out;
	size_t n;
	if (ch_scram_server_step(s, (const uint8_t *)in, strlen(in), lookup, u, &out, &n, msg) !=
	    CH_SCRAM_STEP_OK)
		return NULL;
	snprintf(buf, sizeof(buf), "%.*s", (int)n, (char *)out);
	free(out);
	return buf;
}

static void
t_scram_rfc7677(void)
{
	users u = rfc_user();
	ch_scram_server s;
	ch_scram_server_init(&s, CH_SCRAM_SHA_256);
	snprintf(s.fixed_snonce, sizeof(s.fixed_snonce), "%s", RFC_SNONCE);
	const char *msg;
	CH_CHECK_EQ_STR(step(&s, &u, RFC_FIRST, &msg), RFC_SERVER_FIRST);
	CH_CHECK_EQ_STR(step(&s, &u, RFC_FINAL, &msg), RFC_SERVER_FINAL);
	CH_CHECK_EQ_INT(s.state, CH_SCRAM_DONE);
	CH_CHECK_EQ_STR(s.user, "user");
	ch_scram_server_free(&s);

	/* the same exchange with one proof byte changed, a foreign nonce, a
	 * channel binding that is not the client's gs2 header */
	const char *bad[] = {
		"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
		"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndWQ=",
		"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k1,"
		"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
		"c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
		"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
		"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
	};
	for (size_t i = 0; i < CH_ARRAY_LEN(bad); i++) {
		ch_scram_server_init(&s, CH_SCRAM_SHA_256);
		snprintf(s.fixed_snonce, sizeof(s.fixed_snonce), "%s", RFC_SNONCE);
		CH_CHECK(step(&s, &u, RFC_FIRST, &msg) != NULL);
		CH_CHECK(step(&s, &u, bad[i], &msg) == NULL);
		CH_CHECK(msg == NULL); /* Kafka's generic message */
		CH_CHECK_EQ_INT(s.state, CH_SCRAM_FAILED);
		ch_scram_server_free(&s);
	}
	/* unknown user, a mechanism the user has no credential for, a different authzid */
	ch_scram_server_init(&s, CH_SCRAM_SHA_256);
	CH_CHECK(step(&s, &u, "n,,n=nobody,r=abc", &msg) == NULL && msg == NULL);
	ch_scram_server_init(&s, CH_SCRAM_SHA_512);
	CH_CHECK(step(&s, &u, RFC_FIRST, &msg) == NULL && msg == NULL);
	ch_scram_server_init(&s, CH_SCRAM_SHA_256);
	CH_CHECK(step(&s, &u, "n,a=admin,n=user,r=abc", &msg) == NULL);
	CH_CHECK(msg && strstr(msg, "authorization id that is different"));
	ch_scram_server_init(&s, CH_SCRAM_SHA_256);
	CH_CHECK(step(&s, &u, "n,a=user,n=user,r=abc", &msg) != NULL); /* same authzid: fine */
	ch_scram_server_free(&s);
	/* too few iterations on file */
	u.cred.iterations = 4095;
	ch_scram_server_init(&s, CH_SCRAM_SHA_256);
	CH_CHECK(step(&s, &u, RFC_FIRST, &msg) == NULL);
	ch_scram_server_free(&s);
}

/* A client computed here (PBKDF2 + HMAC) against the server, SHA-512, random nonce. */
static void
t_scram_client_512(void)
{
	users u = {"al,i=ce", {0}};
	CH_CHECK(ch_scram_cred_from_password(CH_SCRAM_SHA_512, "s3cret", 6, NULL, 0, 8192,
					     &u.cred) == 0);
	ch_scram_server s;
	ch_scram_server_init(&s, CH_SCRAM_SHA_512);
	const char *first = "n,,n=al=2Ci=3Dce,r=clientnonce123";
	const char *msg;
	const char *sf = step(&s, &u, first, &msg);
	CH_CHECK(sf != NULL);
	char server_first[512];
	snprintf(server_first, sizeof(server_first), "%s", sf ? sf : "");
	CH_CHECK(strncmp(server_first, "r=clientnonce123", 16) == 0);
	CH_CHECK(strstr(server_first, ",i=8192") != NULL);
	const char *nonce = server_first + 2;
	const char *comma = strchr(nonce, ',');
	const char *s64 = strstr(server_first, ",s=") + 3;
	uint8_t salt[64];
	long sl = ch_b64_decode(s64, (size_t)(strchr(s64, ',') - s64), salt, sizeof(salt));
	CH_CHECK(sl == 24);
	uint8_t salted[64], ck[64], sk[64], sig[64], proof[64];
	unsigned int l;
	PKCS5_PBKDF2_HMAC("s3cret", 6, salt, (int)sl, 8192, EVP_sha512(), 64, salted);
	HMAC(EVP_sha512(), salted, 64, (const uint8_t *)"Client Key", 10, ck, &l);
	EVP_Digest(ck, 64, sk, &l, EVP_sha512(), NULL);
	char without[512], auth[2048];
	snprintf(without, sizeof(without), "c=biws,r=%.*s", (int)(comma - nonce), nonce);
	snprintf(auth, sizeof(auth), "%s,%s,%s", first + 3, server_first, without);
	HMAC(EVP_sha512(), sk, 64, (const uint8_t *)auth, strlen(auth), sig, &l);
	for (int i = 0; i < 64; i++)
		proof[i] = ck[i] ^ sig[i];
	char p64[100], final[700];
	ch_b64_encode(proof, 64, p64);
	snprintf(final, sizeof(final), "%s,p=%s", without, p64);
	const char *sfin = step(&s, &u, final, &msg);
	CH_CHECK(sfin && strncmp(sfin, "v=", 2) == 0);
	CH_CHECK_EQ_INT(s.state, CH_SCRAM_DONE);
	CH_CHECK_EQ_STR(s.user, "al,i=ce");
	ch_scram_server_free(&s);
}

static void
t_scram_parse(void)
{
	ch_scram_client_first cf;
	char why[128];
	const char *good[] = {"n,,n=u,r=x", "n,a=u,n=u,r=x", "n,,m=ext,n=u,r=x",
			      "n,,n=u,r=x,tokenauth=true", "n,,n=a=3Db,r=x!~"};
	for (size_t i = 0; i < CH_ARRAY_LEN(good); i++) {
		int rc = ch_scram_parse_client_first((const uint8_t *)good[i], strlen(good[i]), &cf,
						     why, sizeof(why));
		if (rc)
			fprintf(stderr, "good[%zu] %s: %s\n", i, good[i], why);
		CH_CHECK(rc == 0);
	}
	CH_CHECK_EQ_STR(cf.user, "a=b");
	const char *badf[] = {"",
			      "y,,n=u,r=x",
			      "p=tls,,n=u,r=x",
			      "n,,n=,r=x",
			      "n,,n=u",
			      "n,,n=u,r=",
			      "n,,n=u,r=x,",
			      "n,,n=a=2,r=x",
			      "n,,n=u,r=a b",
			      "n,,n=u,r=x,1=2",
			      "n,,n=\xc3\xa9,r=x",
			      "n,a=,n=u,r=x"};
	for (size_t i = 0; i < CH_ARRAY_LEN(badf); i++) {
		int rc = ch_scram_parse_client_first((const uint8_t *)badf[i], strlen(badf[i]), &cf,
						     why, sizeof(why));
		if (rc == 0)
			fprintf(stderr, "bad[%zu] accepted: %s\n", i, badf[i]);
		CH_CHECK(rc == -1);
	}
	ch_scram_client_final cl;
	CH_CHECK(ch_scram_parse_client_final((const uint8_t *)RFC_FINAL, strlen(RFC_FINAL), &cl,
					     why, sizeof(why)) == 0);
	CH_CHECK_EQ_INT(cl.proof_len, 32);
	CH_CHECK_EQ_INT(cl.without_proof_len, strlen(RFC_FINAL) - strlen(",p=") - 44);
	const char *badl[] = {"c=biws,r=x",        "c=biw,r=x,p=AAAA",
			      "r=x,c=biws,p=AAAA", "c=biws,r=x,p=AAAA,e=1",
			      "c=biws,r=x,p=",     "c=biws,r=x,p=A==="};
	for (size_t i = 0; i < CH_ARRAY_LEN(badl); i++)
		CH_CHECK(ch_scram_parse_client_final((const uint8_t *)badl[i], strlen(badl[i]), &cl,
						     why, sizeof(why)) == -1);
	CH_CHECK(ch_scram_parse_client_final((const uint8_t *)"c=biws,r=x,ext=1,p=AAAA", 23, &cl,
					     why, sizeof(why)) == 0);
}

static void
t_add_scram(void)
{
	char user[64], why[256];
	ch_scram_cred c;
	CH_CHECK(ch_scram_parse_add("SCRAM-SHA-512=[name=alice,password=alice-secret]", user,
				    sizeof(user), &c, why, sizeof(why)) == 0);
	CH_CHECK_EQ_STR(user, "alice");
	CH_CHECK_EQ_INT(c.mech, CH_SCRAM_SHA_512);
	CH_CHECK_EQ_INT(c.iterations, 4096);
	/* Kafka's own example, salted password given: same keys as from the password */
	CH_CHECK(ch_scram_parse_add("SCRAM-SHA-256=[name=user,iterations=4096,salt=\"" RFC_SALT
				    "\",password=\"pencil\"]",
				    user, sizeof(user), &c, why, sizeof(why)) == 0);
	users u = rfc_user();
	CH_CHECK(memcmp(c.stored_key, u.cred.stored_key, 32) == 0);
	const char *bad[] = {"SCRAM-SHA-1=[name=a,password=b]",
			     "SCRAM-SHA-256=name=a",
			     "SCRAM-SHA-256=[password=b]",
			     "SCRAM-SHA-256=[name=a]",
			     "SCRAM-SHA-256=[name=a,password=b,iterations=10]",
			     "SCRAM-SHA-256=[name=a,saltedpassword=AAAA]",
			     "SCRAM-SHA-256=[name=a,password=b,colour=red]"};
	for (size_t i = 0; i < CH_ARRAY_LEN(bad); i++)
		CH_CHECK(ch_scram_parse_add(bad[i], user, sizeof(user), &c, why, sizeof(why)) ==
			 -1);
}

static void
t_plain(void)
{
	ch_plain_users u;
	char why[256], user[64];
	const char *msg;
	CH_CHECK(ch_plain_users_parse(
			 "org.apache.kafka.common.security.plain.PlainLoginModule required\n"
			 "  username=\"admin\" password=\"admin-secret\"\n"
			 "  user_admin=\"admin-secret\" user_alice=\"al\\\"ice\";",
			 &u, why, sizeof(why)) == 0);
	CH_CHECK_EQ_INT(u.n, 2);
	CH_CHECK(ch_plain_check(&u, (const uint8_t *)"\0alice\0al\"ice", 13, user, sizeof(user),
				&msg) == 0);
	CH_CHECK_EQ_STR(user, "alice");
	CH_CHECK(ch_plain_check(&u, (const uint8_t *)"alice\0alice\0al\"ice", 18, user,
				sizeof(user), &msg) == 0);
	CH_CHECK(ch_plain_check(&u, (const uint8_t *)"\0alice\0al\"icf", 13, user, sizeof(user),
				&msg) == -1);
	CH_CHECK_EQ_STR(msg, "Authentication failed: Invalid username or password");
	CH_CHECK(ch_plain_check(&u, (const uint8_t *)"\0bob\0x", 6, user, sizeof(user), &msg) ==
		 -1);
	CH_CHECK_EQ_STR(msg, "Authentication failed: Invalid username or password");
	CH_CHECK(ch_plain_check(&u, (const uint8_t *)"\0alice", 6, user, sizeof(user), &msg) == -1);
	CH_CHECK_EQ_STR(msg, "Invalid SASL/PLAIN response: expected 3 tokens, got 2");
	CH_CHECK(ch_plain_check(&u, (const uint8_t *)"admin\0alice\0al\"ice", 18, user,
				sizeof(user), &msg) == -1);
	CH_CHECK(strstr(msg, "authorization id that is different") != NULL);
	CH_CHECK(ch_plain_check(&u, (const uint8_t *)"\0\0x", 3, user, sizeof(user), &msg) == -1);
	CH_CHECK_EQ_STR(msg, "Authentication failed: username not specified");
	ch_plain_users_free(&u);
	const char *bad[] = {"", "com.example.Other required user_a=\"b\";",
			     "org.apache.kafka.common.security.plain.PlainLoginModule user_a=b;",
			     "org.apache.kafka.common.security.plain.PlainLoginModule required "
			     "user_a=\"b\"",
			     "org.apache.kafka.common.security.plain.PlainLoginModule required "
			     "user_a=\"b;"};
	for (size_t i = 0; i < CH_ARRAY_LEN(bad); i++) {
		CH_CHECK(ch_plain_users_parse(bad[i], &u, why, sizeof(why)) == -1);
		ch_plain_users_free(&u);
	}
}

static void
t_store(void)
{
	char dir[] = "/tmp/cohort-auth-test-XXXXXX";
	CH_CHECK(mkdtemp(dir) != NULL);
	char err[256];
	ch_scram_store *s = ch_scram_store_open(dir, err, sizeof(err));
	CH_CHECK(s != NULL);
	ch_scram_cred a, b, got;
	/* a password with characters base64 never writes, so finding it in the
	 * file cannot be chance (a random salt or key spelled "pw" 1 run in 20) */
	static const char pw[] = "pw-not-on-disk!";
	CH_CHECK(ch_scram_cred_from_password(CH_SCRAM_SHA_512, pw, sizeof(pw) - 1, NULL, 0, 4096,
					     &a) == 0);
	CH_CHECK(ch_scram_cred_from_password(CH_SCRAM_SHA_256, "pw2", 3, NULL, 0, 5000, &b) == 0);
	CH_CHECK(ch_scram_store_set(s, "alice smith", &a, err, sizeof(err)) == 0);
	CH_CHECK(ch_scram_store_set(s, "alice smith", &b, err, sizeof(err)) == 0);
	CH_CHECK(ch_scram_store_set(s, "bob", &a, err, sizeof(err)) == 0);
	CH_CHECK(ch_scram_store_delete(s, "bob", CH_SCRAM_SHA_512, err, sizeof(err)) == 1);
	CH_CHECK(ch_scram_store_delete(s, "bob", CH_SCRAM_SHA_512, err, sizeof(err)) == 0);
	ch_scram_store_close(s);
	s = ch_scram_store_open(dir, err, sizeof(err)); /* replayed from the file */
	CH_CHECK(s != NULL);
	CH_CHECK(ch_scram_store_get(s, "alice smith", CH_SCRAM_SHA_512, &got));
	CH_CHECK(memcmp(&got, &a, sizeof(a)) == 0);
	CH_CHECK(ch_scram_store_get(s, "alice smith", CH_SCRAM_SHA_256, &got));
	CH_CHECK_EQ_INT(got.iterations, 5000);
	CH_CHECK(!ch_scram_store_get(s, "bob", CH_SCRAM_SHA_512, &got));
	ch_scram_store_close(s);
	/* no password on disk; a damaged file stops the open */
	char path[300], buf[4096];
	snprintf(path, sizeof(path), "%s/scram-credentials", dir);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	buf[n] = '\0';
	if (f)
		fclose(f);
	CH_CHECK(n > 0 && strstr(buf, pw) == NULL && strstr(buf, "SCRAM-SHA-512 4096") != NULL);
	f = fopen(path, "a");
	fputs("garbage\n", f);
	fclose(f);
	CH_CHECK(ch_scram_store_open(dir, err, sizeof(err)) == NULL);
	CH_CHECK(strstr(err, "not a SCRAM credential line") != NULL);
	unlink(path);
	rmdir(dir);
}

static void
t_principal(void)
{
	char why[256], out[256];
	ch_principal_rules *r = ch_principal_rules_parse("DEFAULT", why, sizeof(why));
	CH_CHECK(r && ch_principal_map(r, "CN=alice,O=x", out, sizeof(out)) == 0);
	CH_CHECK_EQ_STR(out, "CN=alice,O=x");
	ch_principal_rules_free(r);
	r = ch_principal_rules_parse("RULE:^CN=([a-zA-Z0-9.]*),OU=ServiceUsers,.*$/svc-$1/L, "
				     "RULE:^CN=(.*),O=(.*)$/$2:$1/,"
				     "DEFAULT",
				     why, sizeof(why));
	CH_CHECK(r != NULL);
	CH_CHECK(ch_principal_map(r, "CN=Kafka1,OU=ServiceUsers,O=Org", out, sizeof(out)) == 0);
	CH_CHECK_EQ_STR(out, "svc-kafka1");
	CH_CHECK(ch_principal_map(r, "CN=bob,O=Org", out, sizeof(out)) == 0);
	CH_CHECK_EQ_STR(out, "Org:bob");
	CH_CHECK(ch_principal_map(r, "C=US", out, sizeof(out)) == 0);
	CH_CHECK_EQ_STR(out, "C=US");
	ch_principal_rules_free(r);
	r = ch_principal_rules_parse("RULE:^CN=(.*)$/$1/U", why, sizeof(why));
	CH_CHECK(r && ch_principal_map(r, "O=x", out, sizeof(out)) == -1); /* no rule applies */
	CH_CHECK(ch_principal_map(r, "CN=eve", out, sizeof(out)) == 0);
	CH_CHECK_EQ_STR(out, "EVE");
	ch_principal_rules_free(r);
	CH_CHECK(ch_principal_rules_parse("RULE:^CN=(.*)$/$1", why, sizeof(why)) == NULL);
	CH_CHECK(ch_principal_rules_parse("SOMETHING", why, sizeof(why)) == NULL);
	CH_CHECK(ch_principal_rules_parse("RULE:(/x/", why, sizeof(why)) == NULL);
}

/* libcohort's side: RFC 7677's exchange byte for byte, then against cohortd's
 * server for SHA-512, then what a client must refuse. */
static void
t_scram_client(void)
{
	ch_scram_client cl;
	char out[CH_SCRAM_MSG_MAX], why[256];
	long n = ch_scram_client_begin(&cl, CH_SCRAM_SHA_256, "user", "rOprNGfwEbeRWgbNEkqO", out,
				       sizeof(out));
	CH_CHECK_EQ_INT(n, (long)strlen(RFC_FIRST));
	CH_CHECK_EQ_STR(out, RFC_FIRST);
	const uint8_t *sf = (const uint8_t *)RFC_SERVER_FIRST;
	n = ch_scram_client_respond(&cl, "pencil", sf, strlen(RFC_SERVER_FIRST), out, sizeof(out),
				    why, sizeof(why));
	CH_CHECK(n > 0);
	CH_CHECK_EQ_STR(out, RFC_FINAL);
	const char *fin = RFC_SERVER_FINAL;
	CH_CHECK_EQ_INT(
		ch_scram_client_verify(&cl, (const uint8_t *)fin, strlen(fin), why, sizeof(why)),
		0);
	/* one bit off in the server signature */
	const char *bad = "v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";
	CH_CHECK_EQ_INT(
		ch_scram_client_verify(&cl, (const uint8_t *)bad, strlen(bad), why, sizeof(why)),
		-1);
	CH_CHECK_EQ_STR(why, "Invalid server signature in server final message");
	const char *err = "e=invalid-proof";
	CH_CHECK_EQ_INT(
		ch_scram_client_verify(&cl, (const uint8_t *)err, strlen(err), why, sizeof(why)),
		-1);
	CH_CHECK(strstr(why, "invalid-proof") != NULL);

	/* against the server, SHA-512, a user name that needs escaping */
	users u = {"a,b=c", {0}};
	CH_CHECK(ch_scram_cred_from_password(CH_SCRAM_SHA_512, "pw", 2, NULL, 0, 4096, &u.cred) ==
		 0);
	ch_scram_server srv;
	ch_scram_server_init(&srv, CH_SCRAM_SHA_512);
	n = ch_scram_client_begin(&cl, CH_SCRAM_SHA_512, "a,b=c", NULL, out, sizeof(out));
	CH_CHECK(n > 0 && strstr(out, "n=a=2Cb=3Dc,r=") != NULL);
	const char *msg;
	const char *first = step(&srv, &u, out, &msg);
	CH_CHECK(first != NULL);
	char first_copy[512];
	snprintf(first_copy, sizeof(first_copy), "%s", first ? first : "");
	n = ch_scram_client_respond(&cl, "pw", (const uint8_t *)first_copy, strlen(first_copy), out,
				    sizeof(out), why, sizeof(why));
	CH_CHECK(n > 0);
	const char *final = step(&srv, &u, out, &msg);
	CH_CHECK(final != NULL && srv.state == CH_SCRAM_DONE);
	CH_CHECK(final && ch_scram_client_verify(&cl, (const uint8_t *) final, strlen(final), why,
						 sizeof(why)) == 0);
	ch_scram_server_free(&srv);

	/* server-first messages a client refuses */
	static const struct {
		const char *sf, *why;
	} refuse[] = {
		{"r=someoneelse123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
		 "Invalid server nonce: does not start with client nonce"},
		{"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
		 "Invalid server nonce: does not start with client nonce"},
		{"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4095",
		 "Requested iterations"},
		{"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=100000000",
		 "Requested iterations"},
		{"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ=,i=4096", "bad salt"},
		{"r=rOprNGfwEbeRWgbNEkqOxyz,i=4096", "bad salt"},
		{"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=40x6",
		 "bad iteration count"},
		{"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==", "bad iteration count"},
		{"", "bad nonce"},
	};
	for (size_t i = 0; i < sizeof(refuse) / sizeof(refuse[0]); i++) {
		ch_scram_client_begin(&cl, CH_SCRAM_SHA_256, "user", "rOprNGfwEbeRWgbNEkqO", out,
				      sizeof(out));
		why[0] = '\0';
		CH_CHECK_EQ_INT(ch_scram_client_respond(
					&cl, "pencil", (const uint8_t *)refuse[i].sf,
					strlen(refuse[i].sf), out, sizeof(out), why, sizeof(why)),
				-1);
		if (!strstr(why, refuse[i].why)) {
			ch_test_failures_++;
			fprintf(stderr, "server-first '%s': got '%s', want '%s'\n", refuse[i].sf,
				why, refuse[i].why);
		}
	}
}

CH_TEST_MAIN(CH_TEST(t_scram_rfc7677), CH_TEST(t_scram_client_512), CH_TEST(t_scram_client),
	     CH_TEST(t_scram_parse), CH_TEST(t_add_scram), CH_TEST(t_plain), CH_TEST(t_store),
	     CH_TEST(t_principal))
