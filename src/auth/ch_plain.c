/*
 * ch_plain.c: SASL/PLAIN and the JAAS users. Contracts in ch_plain.h.
 */
#include "auth/ch_plain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "common/ch_common.h"

#define PLAIN_MODULE "org.apache.kafka.common.security.plain.PlainLoginModule"

void
ch_plain_users_free(ch_plain_users *u)
{
	for (size_t i = 0; i < u->n; i++) {
		free(u->v[i].name);
		if (u->v[i].password)
			OPENSSL_cleanse(u->v[i].password, strlen(u->v[i].password));
		free(u->v[i].password);
	}
	free(u->v);
	u->v = NULL;
	u->n = 0;
}

static bool
space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

/* The next JAAS token from *p: a word (up to space, '=' or ';'), a
 * "quoted string" (\" and \\ escapes), or one of '=' ';'. Malloc'd into *out
 * (NULL at the end); *quoted says which. -1 on an unterminated quote. */
static int
token(const char **p, char **out, bool *quoted)
{
	const char *s = *p;
	while (space(*s))
		s++;
	*out = NULL;
	*quoted = false;
	if (!*s) {
		*p = s;
		return 0;
	}
	size_t cap = strlen(s) + 1, n = 0;
	char *t = ch_xmalloc(cap);
	if (*s == '=' || *s == ';') {
		t[n++] = *s++;
	} else if (*s == '"') {
		*quoted = true;
		s++;
		while (*s && *s != '"') {
			if (*s == '\\' && s[1])
				s++;
			t[n++] = *s++;
		}
		if (*s != '"') {
			free(t);
			return -1;
		}
		s++;
	} else {
		while (*s && !space(*s) && *s != '=' && *s != ';')
			t[n++] = *s++;
	}
	t[n] = '\0';
	*out = t;
	*p = s;
	return 0;
}

int
ch_plain_users_parse(const char *jaas, ch_plain_users *out, char *why, size_t whylen)
{
	memset(out, 0, sizeof(*out));
	const char *p = jaas;
	char *tok = NULL;
	bool q;
	int rc = -1;
	if (token(&p, &tok, &q) != 0 || !tok || strcmp(tok, PLAIN_MODULE) != 0) {
		snprintf(why, whylen, "expected the login module %s", PLAIN_MODULE);
		goto done;
	}
	free(tok);
	if (token(&p, &tok, &q) != 0 || !tok ||
	    (strcmp(tok, "required") && strcmp(tok, "requisite") && strcmp(tok, "sufficient") &&
	     strcmp(tok, "optional"))) {
		snprintf(why, whylen, "expected a control flag (required, ...) after the module");
		goto done;
	}
	for (;;) {
		free(tok);
		if (token(&p, &tok, &q) != 0) {
			snprintf(why, whylen, "unterminated quoted value");
			goto done;
		}
		if (!tok) {
			snprintf(why, whylen, "the login module entry does not end with ';'");
			goto done;
		}
		if (!q && strcmp(tok, ";") == 0)
			break;
		char *key = tok, *eq = NULL, *val = NULL;
		tok = NULL;
		if (token(&p, &eq, &q) != 0 || !eq || strcmp(eq, "=") != 0 ||
		    token(&p, &val, &q) != 0 || !val || (!q && strcmp(val, ";") == 0)) {
			snprintf(why, whylen, "option '%s' has no =value", key);
			free(key);
			free(eq);
			free(val);
			goto done;
		}
		free(eq);
		if (strncmp(key, "user_", 5) == 0 && key[5]) {
			out->v = ch_xrealloc(out->v, (out->n + 1) * sizeof(*out->v));
			out->v[out->n].name = ch_xstrdup(key + 5);
			out->v[out->n].password = val;
			out->n++;
			val = NULL;
		}
		free(key);
		free(val);
	}
	while (space(*p))
		p++;
	if (*p) {
		snprintf(why, whylen, "text after the login module entry's ';'");
		goto done;
	}
	rc = 0;
done:
	free(tok);
	return rc;
}

int
ch_plain_check(const ch_plain_users *users, const uint8_t *msg, size_t n, char *user, size_t cap,
	       const char **msg_out)
{
	/* Kafka splits on NUL keeping empty parts: exactly three tokens. */
	size_t cut[2], k = 0;
	for (size_t i = 0; i < n; i++)
		if (msg[i] == 0) {
			if (k < 2)
				cut[k] = i;
			k++;
		}
	if (k != 2) {
		static char bad[80]; /* loop thread only, like every caller */
		snprintf(bad, sizeof(bad),
			 "Invalid SASL/PLAIN response: expected 3 tokens, got %zu", k + 1);
		*msg_out = bad;
		return -1;
	}
	const char *authz = (const char *)msg;
	size_t authz_n = cut[0];
	const char *name = (const char *)msg + cut[0] + 1;
	size_t name_n = cut[1] - cut[0] - 1;
	const char *pw = (const char *)msg + cut[1] + 1;
	size_t pw_n = n - cut[1] - 1;
	if (name_n == 0) {
		*msg_out = "Authentication failed: username not specified";
		return -1;
	}
	if (pw_n == 0) {
		*msg_out = "Authentication failed: password not specified";
		return -1;
	}
	bool ok = false;
	for (size_t i = 0; i < users->n; i++) {
		const ch_plain_user *u = &users->v[i];
		if (strlen(u->name) != name_n || memcmp(u->name, name, name_n) != 0)
			continue;
		size_t l = strlen(u->password);
		ok = l == pw_n && CRYPTO_memcmp(u->password, pw, pw_n) == 0;
		break;
	}
	if (!ok) {
		*msg_out = "Authentication failed: Invalid username or password";
		return -1;
	}
	if (authz_n && (authz_n != name_n || memcmp(authz, name, name_n) != 0)) {
		*msg_out = "Authentication failed: Client requested an authorization id that is "
			   "different from username";
		return -1;
	}
	if (name_n >= cap) {
		*msg_out = "Authentication failed: Invalid username or password";
		return -1;
	}
	memcpy(user, name, name_n);
	user[name_n] = '\0';
	return 0;
}
