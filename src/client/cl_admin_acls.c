/*
 * cl_admin_acls.c: the admin client's ACL calls: DescribeAcls, CreateAcls
 * and DeleteAcls, one request to any broker each (Java's describeAcls /
 * createAcls / deleteAcls). Contracts in include/cohort/cohort.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/cl_admin_int.h"
#include "proto/ch_acl.h"

/* What a call collects: a list of bindings (describe, delete) in an arena,
 * per-entry results (create, delete). */
typedef struct acls_res {
	cohort_acls pub;
	ch_arena arena;
	size_t cap;
} acls_res;

typedef struct acls_call {
	const cohort_acl *v; /* the bindings or filters asked */
	size_t n;
	acls_res *r;                /* describe, delete: the bindings */
	cohort_acl_result *results; /* create, delete: per entry */
} acls_call;

static ch_str
opt_str(const char *s)
{
	return s ? ch_str_c(s) : CH_STR_NULL;
}

/* Appends one binding to r (strings copied); false when out of memory. */
static bool
add_binding(acls_res *r, int8_t rt, ch_str name, int8_t pat, ch_str principal, ch_str host,
	    int8_t op, int8_t perm)
{
	if (r->pub.acls_n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 8;
		cohort_acl *v = ch_arena_alloc(&r->arena, cap * sizeof(*v));
		if (!v)
			return false;
		if (r->pub.acls_n)
			memcpy(v, r->pub.acls, r->pub.acls_n * sizeof(*v));
		r->pub.acls = v;
		r->cap = cap;
	}
	bool oom = false;
	cohort_acl *a = &r->pub.acls[r->pub.acls_n];
	a->resource_type = rt;
	a->resource_name = ad_strdup(&r->arena, name, &oom);
	a->pattern_type = pat;
	a->principal = ad_strdup(&r->arena, principal, &oom);
	a->host = ad_strdup(&r->arena, host, &oom);
	a->operation = op;
	a->permission = perm;
	if (oom)
		return false;
	r->pub.acls_n++;
	return true;
}

static void
set_result(cohort_acl_result *x, int16_t err, ch_str msg)
{
	x->err = err;
	x->errmsg[0] = '\0';
	if (msg.len > 0)
		snprintf(x->errmsg, sizeof(x->errmsg), "%.*s", (int)msg.len, msg.p);
}

const char *
cohort_acl_name(int kind, int code)
{
	switch (kind) {
	case COHORT_ACL_KIND_RESOURCE:
		return ch_acl_res_name(code);
	case COHORT_ACL_KIND_PATTERN:
		return ch_acl_pattern_name(code);
	case COHORT_ACL_KIND_OPERATION:
		return ch_acl_op_name(code);
	case COHORT_ACL_KIND_PERMISSION:
		return ch_acl_perm_name(code);
	default:
		return "UNKNOWN";
	}
}

int
cohort_acl_parse(int kind, const char *name)
{
	if (!name)
		return -1;
	switch (kind) {
	case COHORT_ACL_KIND_RESOURCE:
		return ch_acl_res_parse(name);
	case COHORT_ACL_KIND_PATTERN:
		return ch_acl_pattern_parse(name);
	case COHORT_ACL_KIND_OPERATION:
		return ch_acl_op_parse(name);
	case COHORT_ACL_KIND_PERMISSION:
		return ch_acl_perm_parse(name);
	default:
		return -1;
	}
}

/* ---- describe ------------------------------------------------------------------------- */

static void
build_describe(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n, size_t *encoded)
{
	(void)items;
	const acls_call *ac = k->ud;
	const cohort_acl *f = ac->v;
	ch_DescribeAclsRequest m;
	ch_DescribeAclsRequest_init(&m);
	m.ResourceTypeFilter = (int8_t)f->resource_type;
	m.ResourceNameFilter = opt_str(f->resource_name);
	m.PatternTypeFilter = (int8_t)f->pattern_type;
	m.PrincipalFilter = opt_str(f->principal);
	m.HostFilter = opt_str(f->host);
	m.Operation = (int8_t)f->operation;
	m.PermissionType = (int8_t)f->permission;
	ch_DescribeAclsRequest_encode(b, version, &m);
	*encoded = n;
}

static void
done_describe(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	(void)version;
	(void)n;
	acls_call *ac = k->ud;
	const ch_DescribeAclsResponse *m = resp;
	if (m->ErrorCode) {
		if (m->ErrorMessage.len > 0)
			snprintf(ac->r->pub.errmsg, sizeof(ac->r->pub.errmsg), "%.*s",
				 (int)m->ErrorMessage.len, m->ErrorMessage.p);
		ad_done(k, items[0], m->ErrorCode);
		return;
	}
	bool ok = true;
	for (int32_t i = 0; ok && i < m->Resources_n; i++) {
		const ch_DescribeAclsResponse_DescribeAclsResource *res = &m->Resources[i];
		int8_t pat = version >= 1 ? res->PatternType : COHORT_ACL_PATTERN_LITERAL;
		for (int32_t j = 0; ok && j < res->Acls_n; j++) {
			const ch_DescribeAclsResponse_AclDescription *d = &res->Acls[j];
			ok = add_binding(ac->r, res->ResourceType, res->ResourceName, pat,
					 d->Principal, d->Host, d->Operation, d->PermissionType);
		}
	}
	if (!ok)
		ad_done(k, items[0], COHORT_ERR__NOMEM);
}

static const ad_ops describe_ops = {
	.api = CH_APIKEY_DESCRIBE_ACLS,
	.route = R_ANY,
	.max_version = -1,
	.build = build_describe,
	.done = done_describe,
};

/* A fresh result list; NULL on OOM. */
static acls_res *
res_new(void)
{
	acls_res *r = calloc(1, sizeof(*r));
	if (r)
		ch_arena_init(&r->arena);
	return r;
}

cohort_err
cohort_admin_describe_acls(cohort_admin *a, const cohort_acl *filter, int timeout_ms,
			   cohort_acls **out)
{
	if (!a || !filter || !out)
		return COHORT_ERR__INVALID_ARG;
	*out = NULL;
	acls_res *r = res_new();
	acls_call ac = {filter, 1, r, NULL};
	cohort_err err = COHORT_OK;
	ad_call *k = r ? ad_new(&a->c, &describe_ops, 1, &ac, &err, timeout_ms) : NULL;
	if (!k) {
		cohort_acls_free(r ? &r->pub : NULL);
		return COHORT_ERR__NOMEM;
	}
	cohort_err cerr = ad_run(k);
	*out = &r->pub;
	return cerr ? cerr : err;
}

void
cohort_acls_free(cohort_acls *l)
{
	if (!l)
		return;
	acls_res *r = (acls_res *)l;
	ch_arena_free(&r->arena);
	free(r);
}

/* ---- create --------------------------------------------------------------------------- */

static void
build_create(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n, size_t *encoded)
{
	(void)items;
	const acls_call *ac = k->ud;
	ch_CreateAclsRequest m;
	ch_CreateAclsRequest_init(&m);
	m.Creations = calloc(ac->n + 1, sizeof(*m.Creations));
	if (!m.Creations) {
		b->oom = true;
		return;
	}
	m.Creations_n = (int32_t)ac->n;
	for (size_t i = 0; i < ac->n; i++) {
		const cohort_acl *x = &ac->v[i];
		ch_CreateAclsRequest_AclCreation *c = &m.Creations[i];
		c->ResourceType = (int8_t)x->resource_type;
		c->ResourceName = opt_str(x->resource_name);
		c->ResourcePatternType = (int8_t)x->pattern_type;
		c->Principal = opt_str(x->principal);
		c->Host = opt_str(x->host);
		c->Operation = (int8_t)x->operation;
		c->PermissionType = (int8_t)x->permission;
	}
	ch_CreateAclsRequest_encode(b, version, &m);
	free(m.Creations);
	*encoded = n;
}

/* Results come in the order of the creations. */
static void
done_create(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	(void)version;
	(void)items;
	(void)n;
	acls_call *ac = k->ud;
	const ch_CreateAclsResponse *m = resp;
	for (size_t i = 0; i < ac->n; i++) {
		if ((int32_t)i < m->Results_n)
			set_result(&ac->results[i], m->Results[i].ErrorCode,
				   m->Results[i].ErrorMessage);
		else
			set_result(&ac->results[i], COHORT_ERR__INVALID_ARG,
				   ch_str_c("the broker's answer left this ACL out"));
	}
}

static const ad_ops create_ops = {
	.api = CH_APIKEY_CREATE_ACLS,
	.route = R_ANY,
	.max_version = -1,
	.build = build_create,
	.done = done_create,
};

/* Runs a create or delete call; then every result (a call-level error goes
 * to each) and the first error. */
static cohort_err
run_each(cohort_admin *a, const ad_ops *ops, acls_call *ac, int timeout_ms)
{
	for (size_t i = 0; i < ac->n; i++)
		set_result(&ac->results[i], COHORT_OK, CH_STR_NULL);
	cohort_err err = COHORT_OK;
	ad_call *k = ad_new(&a->c, ops, 1, ac, &err, timeout_ms);
	if (!k)
		return COHORT_ERR__NOMEM;
	cohort_err cerr = ad_run(k);
	if (cerr || err) {
		for (size_t i = 0; i < ac->n; i++)
			set_result(&ac->results[i], cerr ? cerr : err, CH_STR_NULL);
		return cerr ? cerr : err;
	}
	for (size_t i = 0; i < ac->n; i++)
		if (ac->results[i].err)
			return ac->results[i].err;
	return COHORT_OK;
}

cohort_err
cohort_admin_create_acls(cohort_admin *a, const cohort_acl *v, size_t n, cohort_acl_result *results,
			 int timeout_ms)
{
	if (!a || !v || !results || n == 0 || n > INT32_MAX)
		return COHORT_ERR__INVALID_ARG;
	acls_call ac = {v, n, NULL, results};
	return run_each(a, &create_ops, &ac, timeout_ms);
}

/* ---- delete --------------------------------------------------------------------------- */

static void
build_delete(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n, size_t *encoded)
{
	(void)items;
	const acls_call *ac = k->ud;
	ch_DeleteAclsRequest m;
	ch_DeleteAclsRequest_init(&m);
	m.Filters = calloc(ac->n + 1, sizeof(*m.Filters));
	if (!m.Filters) {
		b->oom = true;
		return;
	}
	m.Filters_n = (int32_t)ac->n;
	for (size_t i = 0; i < ac->n; i++) {
		const cohort_acl *x = &ac->v[i];
		ch_DeleteAclsRequest_DeleteAclsFilter *f = &m.Filters[i];
		f->ResourceTypeFilter = (int8_t)x->resource_type;
		f->ResourceNameFilter = opt_str(x->resource_name);
		f->PatternTypeFilter = (int8_t)x->pattern_type;
		f->PrincipalFilter = opt_str(x->principal);
		f->HostFilter = opt_str(x->host);
		f->Operation = (int8_t)x->operation;
		f->PermissionType = (int8_t)x->permission;
	}
	ch_DeleteAclsRequest_encode(b, version, &m);
	free(m.Filters);
	*encoded = n;
}

static void
done_delete(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	(void)items;
	(void)n;
	acls_call *ac = k->ud;
	const ch_DeleteAclsResponse *m = resp;
	bool ok = true;
	for (size_t i = 0; i < ac->n; i++) {
		if ((int32_t)i >= m->FilterResults_n) {
			set_result(&ac->results[i], COHORT_ERR__INVALID_ARG,
				   ch_str_c("the broker's answer left this filter out"));
			continue;
		}
		const ch_DeleteAclsResponse_DeleteAclsFilterResult *fr = &m->FilterResults[i];
		set_result(&ac->results[i], fr->ErrorCode, fr->ErrorMessage);
		for (int32_t j = 0; ok && ac->r && j < fr->MatchingAcls_n; j++) {
			const ch_DeleteAclsResponse_DeleteAclsMatchingAcl *d = &fr->MatchingAcls[j];
			int8_t pat = version >= 1 ? d->PatternType : COHORT_ACL_PATTERN_LITERAL;
			ok = add_binding(ac->r, d->ResourceType, d->ResourceName, pat, d->Principal,
					 d->Host, d->Operation, d->PermissionType);
		}
	}
	if (!ok)
		ad_done(k, items[0], COHORT_ERR__NOMEM);
}

static const ad_ops delete_ops = {
	.api = CH_APIKEY_DELETE_ACLS,
	.route = R_ANY,
	.max_version = -1,
	.build = build_delete,
	.done = done_delete,
};

cohort_err
cohort_admin_delete_acls(cohort_admin *a, const cohort_acl *f, size_t n, cohort_acl_result *results,
			 int timeout_ms, cohort_acls **deleted)
{
	if (!a || !f || !results || n == 0 || n > INT32_MAX)
		return COHORT_ERR__INVALID_ARG;
	acls_res *r = NULL;
	if (deleted) {
		*deleted = NULL;
		if (!(r = res_new()))
			return COHORT_ERR__NOMEM;
	}
	acls_call ac = {f, n, r, results};
	cohort_err err = run_each(a, &delete_ops, &ac, timeout_ms);
	if (deleted)
		*deleted = &r->pub;
	return err;
}
