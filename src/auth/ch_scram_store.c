/*
 * ch_scram_store.c: SCRAM credentials on disk. Format in ch_scram_store.h.
 */
#include "auth/ch_scram_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_buf.h"
#include "common/ch_common.h"
#include "common/ch_durable.h"

#define STORE_FILE "scram-credentials"
#define STORE_HEADER "# cohort SCRAM credentials v1"

typedef struct entry {
	char *user;
	ch_scram_cred cred;
} entry;

struct ch_scram_store {
	char *path; /* DIR/scram-credentials */
	char *dir;
	entry *v;
	size_t n;
};

/* Parses one line into e; 0 or -1. */
static int
parse_line(char *line, entry *e)
{
	char *f[6];
	size_t k = 0;
	for (char *save = NULL, *t = strtok_r(line, " ", &save); t && k < 6;
	     t = strtok_r(NULL, " ", &save))
		f[k++] = t;
	if (k != 6)
		return -1;
	uint8_t name[CH_SCRAM_NAME_MAX];
	long nl = ch_b64_decode(f[0], strlen(f[0]), name, sizeof(name) - 1);
	if (nl <= 0 || memchr(name, 0, (size_t)nl))
		return -1;
	name[nl] = '\0';
	memset(&e->cred, 0, sizeof(e->cred));
	if (ch_scram_mech_parse(f[1], &e->cred.mech) != 0)
		return -1;
	char *end;
	long it = strtol(f[2], &end, 10);
	if (*end || it < 1 || it > INT32_MAX)
		return -1;
	e->cred.iterations = (int32_t)it;
	size_t kl = ch_scram_key_len(e->cred.mech);
	long sl = ch_b64_decode(f[3], strlen(f[3]), e->cred.salt, sizeof(e->cred.salt));
	if (sl <= 0 || ch_b64_decode(f[4], strlen(f[4]), e->cred.stored_key, kl) != (long)kl ||
	    ch_b64_decode(f[5], strlen(f[5]), e->cred.server_key, kl) != (long)kl)
		return -1;
	e->cred.salt_len = (size_t)sl;
	e->user = ch_xstrdup((char *)name);
	return 0;
}

/* ch_durable_read_lines: one credential line into the store. */
static int
load_line(void *ud, char *line, char *why, size_t n)
{
	ch_scram_store *s = ud;
	entry e;
	if (parse_line(line, &e) != 0) {
		snprintf(why, n, "not a SCRAM credential line");
		return -1;
	}
	s->v = ch_xrealloc(s->v, (s->n + 1) * sizeof(*s->v));
	s->v[s->n++] = e;
	return 0;
}

ch_scram_store *
ch_scram_store_open(const char *dir, char *err, size_t errlen)
{
	ch_scram_store *s = ch_xcalloc(1, sizeof(*s));
	s->dir = ch_xstrdup(dir);
	size_t pl = strlen(dir) + sizeof(STORE_FILE) + 2;
	s->path = ch_xmalloc(pl);
	snprintf(s->path, pl, "%s/%s", dir, STORE_FILE);
	int rc = ch_durable_read_lines(s->path, load_line, s, err, errlen);
	if (rc < 0) {
		ch_scram_store_close(s);
		return NULL;
	}
	return s;
}

void
ch_scram_store_close(ch_scram_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i].user);
	free(s->v);
	free(s->path);
	free(s->dir);
	free(s);
}

static long
find(const ch_scram_store *s, const char *user, ch_scram_mech m)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].cred.mech == m && strcmp(s->v[i].user, user) == 0)
			return (long)i;
	return -1;
}

bool
ch_scram_store_get(const ch_scram_store *s, const char *user, ch_scram_mech m, ch_scram_cred *out)
{
	long i = find(s, user, m);
	if (i < 0)
		return false;
	*out = s->v[i].cred;
	return true;
}

bool
ch_scram_store_at(const ch_scram_store *s, size_t i, const char **user, const ch_scram_cred **cred)
{
	if (i >= s->n)
		return false;
	*user = s->v[i].user;
	*cred = &s->v[i].cred;
	return true;
}

/* Writes entries v[0..n) as the new file, durably (temp file, fsync, rename, fsync of the
 * directory). 0, or -1 with why (the old file is untouched then). */
static int
write_all(const ch_scram_store *s, const entry *v, size_t n, char *err, size_t errlen)
{
	ch_buf b;
	ch_buf_init(&b);
	ch_buf_printf(&b, "%s\n", STORE_HEADER);
	for (size_t i = 0; i < n; i++) {
		const ch_scram_cred *c = &v[i].cred;
		size_t kl = ch_scram_key_len(c->mech);
		char name[CH_SCRAM_NAME_MAX * 2], salt[CH_SCRAM_SALT_MAX * 2],
			sk[CH_SCRAM_KEY_MAX * 2], vk[CH_SCRAM_KEY_MAX * 2];
		ch_b64_encode((const uint8_t *)v[i].user, strlen(v[i].user), name);
		ch_b64_encode(c->salt, c->salt_len, salt);
		ch_b64_encode(c->stored_key, kl, sk);
		ch_b64_encode(c->server_key, kl, vk);
		ch_buf_printf(&b, "%s %s %d %s %s %s\n", name, ch_scram_mech_name(c->mech),
			      (int)c->iterations, salt, sk, vk);
	}
	int rc = ch_durable_replace(s->dir, s->path, b.data, b.len, err, errlen);
	ch_buf_free(&b);
	return rc;
}

int
ch_scram_store_apply(ch_scram_store *s, const ch_scram_change *ch, size_t nch, char *err,
		     size_t errlen)
{
	for (size_t k = 0; k < nch; k++)
		if (!ch[k].user[0] || strlen(ch[k].user) >= CH_SCRAM_NAME_MAX) {
			snprintf(err, errlen, "user name must have 1 to %d bytes",
				 CH_SCRAM_NAME_MAX - 1);
			return -1;
		}
	/* The new list: entries borrowed from the old one, names of new ones
	 * borrowed from the changes until the write succeeded. */
	entry *v = ch_xcalloc(s->n + nch + 1, sizeof(*v));
	bool *fresh = ch_xcalloc(s->n + nch + 1, sizeof(*fresh));
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++)
		v[n++] = s->v[i];
	for (size_t k = 0; k < nch; k++) {
		size_t i = 0;
		while (i < n &&
		       !(v[i].cred.mech == ch[k].mech && strcmp(v[i].user, ch[k].user) == 0))
			i++;
		if (!ch[k].cred) {
			if (i < n) {
				memmove(&v[i], &v[i + 1], (n - i - 1) * sizeof(*v));
				memmove(&fresh[i], &fresh[i + 1], (n - i - 1) * sizeof(*fresh));
				n--;
			}
		} else if (i < n) {
			v[i].cred = *ch[k].cred;
		} else {
			v[n].user = (char *)ch[k].user;
			v[n].cred = *ch[k].cred;
			fresh[n++] = true;
		}
	}
	if (write_all(s, v, n, err, errlen) != 0) {
		free(v);
		free(fresh);
		return -1;
	}
	/* Names: keep those still listed, free the removed, copy the new. */
	for (size_t i = 0; i < s->n; i++) {
		bool kept = false;
		for (size_t j = 0; j < n && !kept; j++)
			kept = !fresh[j] && v[j].user == s->v[i].user;
		if (!kept)
			free(s->v[i].user);
	}
	for (size_t j = 0; j < n; j++)
		if (fresh[j])
			v[j].user = ch_xstrdup(v[j].user);
	free(fresh);
	free(s->v);
	s->v = v;
	s->n = n;
	return 0;
}

int
ch_scram_store_set(ch_scram_store *s, const char *user, const ch_scram_cred *cred, char *err,
		   size_t errlen)
{
	ch_scram_change c = {user, cred->mech, cred};
	return ch_scram_store_apply(s, &c, 1, err, errlen);
}

int
ch_scram_store_delete(ch_scram_store *s, const char *user, ch_scram_mech m, char *err,
		      size_t errlen)
{
	if (find(s, user, m) < 0)
		return 0;
	ch_scram_change c = {user, m, NULL};
	return ch_scram_store_apply(s, &c, 1, err, errlen) == 0 ? 1 : -1;
}
