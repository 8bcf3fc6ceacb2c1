/*
 * ch_authz.c: ACL bindings, filters, the durable store and the authorizer.
 * Semantics and file format in ch_authz.h.
 */
#include "auth/ch_authz.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth/ch_scram.h"
#include "common/ch_buf.h"
#include "common/ch_common.h"
#include "common/ch_durable.h"

#define STORE_FILE "acls"
#define STORE_HEADER "# cohort ACLs v1"
#define STR_MAX 4096 /* longest name, principal or host in the file */

/* ---- validation and filters ----------------------------------------------- */

const char *
ch_acl_invalid(const ch_acl *a, char *buf, size_t cap)
{
	/* The broker's checks (AclApis), then the controller's (validateNewAcl). */
	if (a->res_type == CH_RES_CLUSTER && (!a->name || strcmp(a->name, CH_CLUSTER_NAME) != 0))
		return "The only valid name for the CLUSTER resource is " CH_CLUSTER_NAME;
	if (!a->name || !a->name[0])
		return "Invalid empty resource name";
	if (a->res_type <= CH_RES_ANY || a->res_type > CH_RES_MAX) {
		snprintf(buf, cap, "Invalid resourceType %s", ch_acl_res_name(a->res_type));
		return buf;
	}
	if (a->pattern != CH_PAT_LITERAL && a->pattern != CH_PAT_PREFIXED) {
		snprintf(buf, cap, "Invalid patternType %s", ch_acl_pattern_name(a->pattern));
		return buf;
	}
	if (a->op <= CH_ACL_ANY || a->op > CH_ACL_OP_MAX) {
		snprintf(buf, cap, "Invalid operation %s", ch_acl_op_name(a->op));
		return buf;
	}
	if (a->perm != CH_PERM_DENY && a->perm != CH_PERM_ALLOW) {
		snprintf(buf, cap, "Invalid permissionType %s", ch_acl_perm_name(a->perm));
		return buf;
	}
	const char *colon = a->principal ? strchr(a->principal, ':') : NULL;
	if (!colon || colon == a->principal) {
		snprintf(buf, cap,
			 "expected a string in format principalType:principalName but got %s",
			 a->principal ? a->principal : "null");
		return buf;
	}
	if (!a->host || !a->host[0])
		return "Invalid empty host";
	if (strlen(a->name) >= STR_MAX || strlen(a->principal) >= STR_MAX ||
	    strlen(a->host) >= STR_MAX)
		return "Resource name, principal or host too long";
	return NULL;
}

const char *
ch_acl_filter_invalid(const ch_acl_filter *f)
{
	if (f->res_type == CH_RES_UNKNOWN || f->pattern == CH_PAT_UNKNOWN)
		return "Unknown patternFilter.";
	if (f->op == CH_ACL_UNKNOWN || f->perm == CH_PERM_UNKNOWN)
		return "Unknown entryFilter.";
	return NULL;
}

static bool
str_matches(const char *filter, const char *value)
{
	return !filter || strcmp(filter, value) == 0;
}

bool
ch_acl_filter_matches(const ch_acl_filter *f, const ch_acl *a)
{
	if (f->res_type != CH_RES_ANY && f->res_type != a->res_type)
		return false;
	if (f->pattern != CH_PAT_ANY && f->pattern != CH_PAT_MATCH && f->pattern != a->pattern)
		return false;
	bool name_ok;
	if (!f->name)
		name_ok = true;
	else if (f->pattern == CH_PAT_ANY || f->pattern == a->pattern)
		name_ok = strcmp(f->name, a->name) == 0;
	else if (a->pattern == CH_PAT_LITERAL)
		name_ok = strcmp(f->name, a->name) == 0 || strcmp(a->name, "*") == 0;
	else
		name_ok = strncmp(f->name, a->name, strlen(a->name)) == 0;
	if (!name_ok)
		return false;
	return str_matches(f->principal, a->principal) && str_matches(f->host, a->host) &&
	       (f->op == CH_ACL_ANY || f->op == a->op) &&
	       (f->perm == CH_PERM_ANY || f->perm == a->perm);
}

/* ---- the store ------------------------------------------------------------- */

struct ch_acl_store {
	char *path; /* DIR/acls */
	char *dir;
	ch_acl *v; /* strings owned */
	size_t n;
};

static void
acl_free_strings(ch_acl *a)
{
	free((char *)a->name);
	free((char *)a->principal);
	free((char *)a->host);
}

static ch_acl
acl_copy(const ch_acl *a)
{
	ch_acl c = *a;
	c.name = ch_xstrdup(a->name);
	c.principal = ch_xstrdup(a->principal);
	c.host = ch_xstrdup(a->host);
	return c;
}

static bool
acl_equal(const ch_acl *a, const ch_acl *b)
{
	return a->res_type == b->res_type && a->pattern == b->pattern && a->op == b->op &&
	       a->perm == b->perm && strcmp(a->name, b->name) == 0 &&
	       strcmp(a->principal, b->principal) == 0 && strcmp(a->host, b->host) == 0;
}

/* A base64 field of the file into a malloc'd string, or NULL. */
static char *
b64_field(const char *f)
{
	size_t cap = strlen(f);
	uint8_t *out = ch_xmalloc(cap + 1);
	long n = ch_b64_decode(f, strlen(f), out, cap);
	if (n <= 0 || memchr(out, 0, (size_t)n)) {
		free(out);
		return NULL;
	}
	out[n] = '\0';
	return (char *)out;
}

/* Parses one line into a (strings malloc'd); 0 or -1. */
static int
parse_line(char *line, ch_acl *a)
{
	char *f[7];
	size_t k = 0;
	for (char *save = NULL, *t = strtok_r(line, " ", &save); t && k < 7;
	     t = strtok_r(NULL, " ", &save))
		f[k++] = t;
	if (k != 7)
		return -1;
	memset(a, 0, sizeof(*a));
	int rt = ch_acl_res_parse(f[0]), pt = ch_acl_pattern_parse(f[1]),
	    op = ch_acl_op_parse(f[5]), pm = ch_acl_perm_parse(f[6]);
	if (rt < 0 || pt < 0 || op < 0 || pm < 0)
		return -1;
	a->res_type = (int8_t)rt;
	a->pattern = (int8_t)pt;
	a->op = (int8_t)op;
	a->perm = (int8_t)pm;
	a->name = b64_field(f[2]);
	a->principal = b64_field(f[3]);
	a->host = b64_field(f[4]);
	char why[256];
	if (!a->name || !a->principal || !a->host || ch_acl_invalid(a, why, sizeof(why))) {
		acl_free_strings(a);
		return -1;
	}
	return 0;
}

/* ch_durable_read_lines: one binding line into the store. */
static int
load_line(void *ud, char *line, char *why, size_t n)
{
	ch_acl_store *s = ud;
	ch_acl a;
	if (parse_line(line, &a) != 0) {
		snprintf(why, n, "not an ACL line");
		return -1;
	}
	s->v = ch_xrealloc(s->v, (s->n + 1) * sizeof(*s->v));
	s->v[s->n++] = a;
	return 0;
}

ch_acl_store *
ch_acl_store_open(const char *dir, char *err, size_t errlen)
{
	ch_acl_store *s = ch_xcalloc(1, sizeof(*s));
	s->dir = ch_xstrdup(dir);
	s->path = ch_path_join(dir, STORE_FILE);
	if (ch_durable_read_lines(s->path, load_line, s, err, errlen) < 0) {
		ch_acl_store_close(s);
		return NULL;
	}
	return s;
}

void
ch_acl_store_close(ch_acl_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		acl_free_strings(&s->v[i]);
	free(s->v);
	free(s->path);
	free(s->dir);
	free(s);
}

const ch_acl *
ch_acl_store_at(const ch_acl_store *s, size_t i)
{
	return i < s->n ? &s->v[i] : NULL;
}

size_t
ch_acl_store_count(const ch_acl_store *s)
{
	return s->n;
}

static void
put_b64(ch_buf *b, const char *str)
{
	size_t n = strlen(str);
	char *out = ch_xmalloc(4 * ((n + 2) / 3) + 1);
	ch_b64_encode((const uint8_t *)str, n, out);
	ch_buf_append(b, out, strlen(out));
	free(out);
}

/* Replaces the file with bindings v[0..n), durably. 0, or -1 with why. */
static int
write_all(const ch_acl_store *s, const ch_acl *const *v, size_t n, char *err, size_t errlen)
{
	ch_buf b;
	ch_buf_init(&b);
	ch_buf_append(&b, STORE_HEADER "\n", sizeof(STORE_HEADER));
	for (size_t i = 0; i < n; i++) {
		const ch_acl *a = v[i];
		const char *rt = ch_acl_res_name(a->res_type),
			   *pt = ch_acl_pattern_name(a->pattern);
		ch_buf_append(&b, rt, strlen(rt));
		ch_buf_append(&b, " ", 1);
		ch_buf_append(&b, pt, strlen(pt));
		const char *strs[3] = {a->name, a->principal, a->host};
		for (int k = 0; k < 3; k++) {
			ch_buf_append(&b, " ", 1);
			put_b64(&b, strs[k]);
		}
		const char *op = ch_acl_op_name(a->op), *pm = ch_acl_perm_name(a->perm);
		ch_buf_append(&b, " ", 1);
		ch_buf_append(&b, op, strlen(op));
		ch_buf_append(&b, " ", 1);
		ch_buf_append(&b, pm, strlen(pm));
		ch_buf_append(&b, "\n", 1);
	}
	int rc = ch_durable_replace(s->dir, s->path, b.data, b.len, err, errlen);
	ch_buf_free(&b);
	return rc;
}

int
ch_acl_store_add(ch_acl_store *s, const ch_acl *v, size_t n, char *err, size_t errlen)
{
	const ch_acl **all = ch_xcalloc(s->n + n + 1, sizeof(*all));
	size_t m = 0;
	for (size_t i = 0; i < s->n; i++)
		all[m++] = &s->v[i];
	size_t old = m;
	for (size_t k = 0; k < n; k++) {
		bool dup = false;
		for (size_t i = 0; i < m && !dup; i++)
			dup = acl_equal(all[i], &v[k]);
		if (!dup)
			all[m++] = &v[k];
	}
	int rc = m == old ? 0 : write_all(s, all, m, err, errlen);
	if (rc == 0 && m > old) {
		s->v = ch_xrealloc(s->v, m * sizeof(*s->v));
		for (size_t i = old; i < m; i++)
			s->v[i] = acl_copy(all[i]);
		s->n = m;
	}
	free(all);
	return rc;
}

int
ch_acl_store_remove(ch_acl_store *s, const ch_acl_filter *fs, size_t n, ch_acl_removed_fn cb,
		    void *ud, char *err, size_t errlen)
{
	const ch_acl **keep = ch_xcalloc(s->n + 1, sizeof(*keep));
	bool *gone = ch_xcalloc(s->n + 1, sizeof(*gone));
	size_t m = 0;
	for (size_t i = 0; i < s->n; i++) {
		for (size_t k = 0; k < n && !gone[i]; k++)
			gone[i] = ch_acl_filter_matches(&fs[k], &s->v[i]);
		if (!gone[i])
			keep[m++] = &s->v[i];
	}
	int rc = m == s->n ? 0 : write_all(s, keep, m, err, errlen);
	if (rc == 0) {
		for (size_t k = 0; k < n; k++)
			for (size_t i = 0; i < s->n; i++)
				if (gone[i] && ch_acl_filter_matches(&fs[k], &s->v[i]))
					cb(ud, k, &s->v[i]);
		size_t j = 0;
		for (size_t i = 0; i < s->n; i++) {
			if (gone[i])
				acl_free_strings(&s->v[i]);
			else
				s->v[j++] = s->v[i];
		}
		s->n = j;
	}
	free(keep);
	free(gone);
	return rc;
}

/* ---- the authorizer -------------------------------------------------------- */

static bool
is_super_user(const char *list, const char *principal)
{
	if (!list)
		return false;
	size_t pl = strlen(principal);
	for (const char *p = list; *p;) {
		while (*p == ' ' || *p == ';')
			p++;
		const char *e = p;
		while (*e && *e != ';')
			e++;
		const char *t = e;
		while (t > p && t[-1] == ' ')
			t--;
		if ((size_t)(t - p) == pl && memcmp(p, principal, pl) == 0)
			return true;
		p = e;
	}
	return false;
}

/* Whether binding a's pattern applies to the literal name (checkSection). */
static bool
pattern_applies(const ch_acl *a, const char *name)
{
	if (a->pattern == CH_PAT_LITERAL)
		return strcmp(a->name, name) == 0 || strcmp(a->name, "*") == 0;
	return strncmp(a->name, name, strlen(a->name)) == 0;
}

/* Whether binding a speaks of op (findResult's operation test). */
static bool
op_applies(const ch_acl *a, int op)
{
	if (a->op == CH_ACL_ALL || a->op == op)
		return true;
	if (a->perm != CH_PERM_ALLOW)
		return false;
	if (op == CH_ACL_DESCRIBE)
		return a->op == CH_ACL_READ || a->op == CH_ACL_WRITE || a->op == CH_ACL_DELETE ||
		       a->op == CH_ACL_ALTER;
	if (op == CH_ACL_DESCRIBE_CONFIGS)
		return a->op == CH_ACL_ALTER_CONFIGS;
	return false;
}

bool
ch_authz_allowed(const ch_authz *z, const char *principal, const char *host, int op, int res_type,
		 const char *name)
{
	if (is_super_user(z->super_users, principal))
		return true;
	bool any = false, allow = false;
	size_t n = z->acls ? ch_acl_store_count(z->acls) : 0;
	for (size_t i = 0; i < n; i++) {
		const ch_acl *a = ch_acl_store_at(z->acls, i);
		if (a->res_type != res_type || !pattern_applies(a, name))
			continue;
		any = true;
		if (strcmp(a->principal, principal) != 0 && strcmp(a->principal, "User:*") != 0)
			continue;
		if (strcmp(a->host, "*") != 0 && strcmp(a->host, host) != 0)
			continue;
		if (!op_applies(a, op))
			continue;
		if (a->perm == CH_PERM_DENY)
			return false;
		allow = true;
	}
	return any ? allow : z->allow_if_no_acl;
}

/* Whether a DENY binding's pattern shadows the ALLOW binding a: the same
 * literal name, or a prefix of a's name (Authorizer.authorizeByResourceType). */
static bool
deny_dominates(const ch_acl *deny, const ch_acl *a)
{
	if (deny->pattern == CH_PAT_LITERAL)
		return a->pattern == CH_PAT_LITERAL && strcmp(deny->name, a->name) == 0;
	return strncmp(deny->name, a->name, strlen(deny->name)) == 0;
}

/* Whether binding a speaks of principal from host doing op, exactly (no
 * implications: authorizeByResourceType's test). */
static bool
binding_for(const ch_acl *a, const char *principal, const char *host, int op, int res_type)
{
	return a->res_type == res_type &&
	       (strcmp(a->host, "*") == 0 || strcmp(a->host, host) == 0) &&
	       (strcmp(a->principal, principal) == 0 || strcmp(a->principal, "User:*") == 0) &&
	       (a->op == op || a->op == CH_ACL_ALL);
}

bool
ch_authz_allowed_any(const ch_authz *z, const char *principal, const char *host, int op,
		     int res_type)
{
	/* Kafka asks first about a name no ACL is likely to name, so super
	 * users and allow.everyone.if.no.acl.found pass whatever is denied. */
	if (ch_authz_allowed(z, principal, host, op, res_type, "hardcode"))
		return true;
	size_t n = z->acls ? ch_acl_store_count(z->acls) : 0;
	for (size_t i = 0; i < n; i++) {
		const ch_acl *a = ch_acl_store_at(z->acls, i);
		if (a->perm == CH_PERM_DENY && a->pattern == CH_PAT_LITERAL &&
		    strcmp(a->name, "*") == 0 && binding_for(a, principal, host, op, res_type))
			return false;
	}
	for (size_t i = 0; i < n; i++) {
		const ch_acl *a = ch_acl_store_at(z->acls, i);
		if (a->perm != CH_PERM_ALLOW || !binding_for(a, principal, host, op, res_type))
			continue;
		if (a->pattern == CH_PAT_LITERAL && strcmp(a->name, "*") == 0)
			return true;
		bool shadowed = false;
		for (size_t k = 0; k < n && !shadowed; k++) {
			const ch_acl *d = ch_acl_store_at(z->acls, k);
			shadowed = d->perm == CH_PERM_DENY &&
				   binding_for(d, principal, host, op, res_type) &&
				   deny_dominates(d, a);
		}
		if (!shadowed)
			return true;
	}
	return false;
}

int32_t
ch_authz_ops(const ch_authz *z, const char *principal, const char *host, int res_type,
	     const char *name)
{
	int32_t supported;
	switch (res_type) {
	case CH_RES_TOPIC:
		supported = CH_TOPIC_AUTHORIZED_OPS;
		break;
	case CH_RES_GROUP:
		supported = CH_GROUP_AUTHORIZED_OPS;
		break;
	case CH_RES_CLUSTER:
		supported = CH_CLUSTER_AUTHORIZED_OPS;
		break;
	case CH_RES_TRANSACTIONAL_ID:
		supported = CH_TXN_ID_AUTHORIZED_OPS;
		break;
	case CH_RES_DELEGATION_TOKEN:
		supported = CH_TOKEN_AUTHORIZED_OPS;
		break;
	default:
		supported = CH_USER_AUTHORIZED_OPS;
		break;
	}
	int32_t ops = 0;
	for (int op = CH_ACL_READ; op <= CH_ACL_OP_MAX; op++)
		if ((supported & CH_ACL_BIT(op)) &&
		    ch_authz_allowed(z, principal, host, op, res_type, name))
			ops |= CH_ACL_BIT(op);
	return ops;
}
