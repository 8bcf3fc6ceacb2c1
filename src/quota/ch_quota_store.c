/*
 * ch_quota_store.c: client quotas on disk. Format in ch_quota_store.h.
 */
#include "quota/ch_quota_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_buf.h"
#include "common/ch_common.h"
#include "common/ch_durable.h"

#define STORE_FILE "client-quotas"
#define STORE_HEADER "# cohort client quotas v1"

static void
part_put(ch_buf *b, ch_qpart p, const char *name)
{
	if (p == CH_QP_ABSENT) {
		ch_buf_printf(b, "-");
	} else if (p == CH_QP_DEFAULT) {
		ch_buf_printf(b, "*");
	} else {
		ch_buf_printf(b, "x");
		for (const unsigned char *c = (const unsigned char *)name; *c; c++)
			ch_buf_printf(b, "%02x", *c);
	}
}

/* One part back: 0, or -1. *name is malloc'd for CH_QP_NAME. */
static int
part_get(const char *s, ch_qpart *p, char **name)
{
	*name = NULL;
	if (strcmp(s, "-") == 0) {
		*p = CH_QP_ABSENT;
		return 0;
	}
	if (strcmp(s, "*") == 0) {
		*p = CH_QP_DEFAULT;
		return 0;
	}
	size_t l = strlen(s);
	if (s[0] != 'x' || l < 3 || (l - 1) % 2)
		return -1;
	char *n = ch_xmalloc((l - 1) / 2 + 1);
	for (size_t i = 1, o = 0; i < l; i += 2, o++) {
		unsigned v;
		if (sscanf(s + i, "%2x", &v) != 1 || v == 0) {
			free(n);
			return -1;
		}
		n[o] = (char)v;
		n[o + 1] = '\0';
	}
	*p = CH_QP_NAME;
	*name = n;
	return 0;
}

static int
load_line(void *ud, char *line, char *why, size_t n)
{
	ch_quotas *q = ud;
	char *f[4];
	size_t k = 0;
	for (char *save = NULL, *t = strtok_r(line, " ", &save); t && k < 4;
	     t = strtok_r(NULL, " ", &save))
		f[k++] = t;
	ch_quota_entity e = {0};
	ch_quota_key key;
	char msg[160], *end;
	int rc = -1;
	/* "ip PART key value" for an ip entity, "USER CLIENT key value" else */
	bool ip = k == 4 && strcmp(f[0], "ip") == 0;
	bool parts = ip ? part_get(f[1], &e.ip, &e.ip_name) == 0 && e.ip != CH_QP_ABSENT
			: k == 4 && part_get(f[0], &e.user, &e.user_name) == 0 &&
				     part_get(f[1], &e.client, &e.client_name) == 0 &&
				     (e.user != CH_QP_ABSENT || e.client != CH_QP_ABSENT);
	if (parts) {
		double v = strtod(f[3], &end);
		if (*end == '\0' &&
		    ch_quota_check_key(f[2], v, false, ip, &key, msg, sizeof(msg)) == 0) {
			ch_quotas_put(q, &e, key, v, false);
			rc = 0;
		}
	}
	free(e.user_name);
	free(e.client_name);
	free(e.ip_name);
	if (rc != 0)
		snprintf(why, n, "not a client quota line");
	return rc;
}

int
ch_quotas_load(ch_quotas *q, const char *dir, char *err, size_t errlen)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, STORE_FILE);
	return ch_durable_read_lines(path, load_line, q, err, errlen) < 0 ? -1 : 0;
}

int
ch_quotas_save(const ch_quotas *q, const char *dir, char *err, size_t errlen)
{
	ch_buf b;
	ch_buf_init(&b);
	ch_buf_printf(&b, "%s\n", STORE_HEADER);
	const ch_quota_entry *e;
	for (size_t i = 0; (e = ch_quotas_at(q, i)); i++)
		for (int k = 0; k < CH_QK_N; k++) {
			if (!e->set[k])
				continue;
			if (e->e.ip != CH_QP_ABSENT) {
				ch_buf_printf(&b, "ip ");
				part_put(&b, e->e.ip, e->e.ip_name);
			} else {
				part_put(&b, e->e.user, e->e.user_name);
				ch_buf_printf(&b, " ");
				part_put(&b, e->e.client, e->e.client_name);
			}
			ch_buf_printf(&b, " %s %.17g\n", ch_quota_key_name((ch_quota_key)k),
				      e->v[k]);
		}
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, STORE_FILE);
	int rc = ch_buf_ok(&b) ? ch_durable_replace(dir, path, b.data, b.len, err, errlen) : -1;
	ch_buf_free(&b);
	return rc;
}
