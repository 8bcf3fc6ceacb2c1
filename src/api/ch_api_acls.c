/*
 * ch_api_acls.c: the authorizer as handlers see it (ch_api_allowed and
 * friends: auth/ch_authz.h with the request's principal and host), and
 * CreateAcls / DescribeAcls / DeleteAcls, as Kafka's AclApis and
 * AclControlManager answer them.
 */
#include <stdio.h>
#include <string.h>

#include "api/ch_api.h"
#include "auth/ch_authz.h"
#include "broker/ch_broker.h"
#include "common/ch_common.h"
#include "common/ch_log.h"
#include "proto/generated/ch_errors.h"

/* ---- checks ----------------------------------------------------------------- */

bool
ch_api_authz_on(const ch_req *req)
{
	return req->bk->cfg->authorizer_enabled;
}

/* The client's address as Kafka's authorizer compares it with an ACL's
 * host (InetAddress.getHostAddress: "127.0.0.1", "::1"), in out. */
static const char *
client_addr(const ch_req *req, char *out, size_t cap)
{
	ch_api_client_host(req->peer ? req->peer : "", out, cap);
	return out + 1; /* past the '/' */
}

static ch_authz
authz_of(const ch_req *req)
{
	const ch_config *cfg = req->bk->cfg;
	return (ch_authz){req->bk->acls, cfg->super_users, cfg->allow_everyone_if_no_acl_found};
}

bool
ch_api_allowed(const ch_req *req, int op, int res_type, const char *name)
{
	if (!ch_api_authz_on(req))
		return true;
	char host[80];
	ch_authz z = authz_of(req);
	bool ok = ch_authz_allowed(&z, req->principal, client_addr(req, host, sizeof(host)), op,
				   res_type, name);
	if (!ok)
		CH_LOGD("authz",
			"Principal = %s is Denied operation = %s from host = %s on "
			"resource = %s:LITERAL:%s for request = %s",
			req->principal, ch_acl_op_name(op), host + 1, ch_acl_res_name(res_type),
			name, req->codec ? req->codec->name : "?");
	return ok;
}

bool
ch_api_allowed_str(ch_req *req, int op, int res_type, ch_str name)
{
	if (!ch_api_authz_on(req))
		return true;
	return ch_api_allowed(req, op, res_type, ch_req_strdup(req, name));
}

bool
ch_api_cluster_allowed(const ch_req *req, int op)
{
	return ch_api_allowed(req, op, CH_RES_CLUSTER, CH_CLUSTER_NAME);
}

bool
ch_api_allowed_any(const ch_req *req, int op, int res_type)
{
	if (!ch_api_authz_on(req))
		return true;
	char host[80];
	ch_authz z = authz_of(req);
	return ch_authz_allowed_any(&z, req->principal, client_addr(req, host, sizeof(host)), op,
				    res_type);
}

int32_t
ch_api_cluster_ops(const ch_req *req)
{
	return ch_api_cluster_allowed(req, CH_ACL_DESCRIBE)
		       ? ch_api_authorized_ops(req, CH_RES_CLUSTER, CH_CLUSTER_NAME)
		       : 0;
}

int32_t
ch_api_authorized_ops(const ch_req *req, int res_type, const char *name)
{
	if (!ch_api_authz_on(req)) {
		ch_authz all = {NULL, NULL, true};
		return ch_authz_ops(&all, "", "", res_type, name);
	}
	char host[80];
	ch_authz z = authz_of(req);
	return ch_authz_ops(&z, req->principal, client_addr(req, host, sizeof(host)), res_type,
			    name);
}

/* ---- DescribeAcls ------------------------------------------------------------ */

/* A wire string as a filter value (NULL: match all) in the request arena. */
static const char *
filter_str(ch_req *req, ch_str s)
{
	return s.len < 0 ? NULL : ch_req_strdup(req, s);
}

/* A filter from the wire's codes (unknown codes are UNKNOWN, as Kafka's
 * fromCode makes them). */
static ch_acl_filter
filter_of(ch_req *req, int8_t rt, ch_str name, int8_t pat, ch_str principal, ch_str host, int8_t op,
	  int8_t perm)
{
	ch_acl_filter f = {ch_acl_res_code(rt),   ch_acl_pattern_code(pat),
			   ch_acl_op_code(op),    ch_acl_perm_code(perm),
			   filter_str(req, name), filter_str(req, principal),
			   filter_str(req, host)};
	return f;
}

/* Kafka's request parsing refuses code 0 (UNKNOWN) anywhere in a filter or
 * creation (IllegalArgumentException: the connection is closed). */
static bool
has_unknown(int8_t rt, int8_t pat, int8_t op, int8_t perm)
{
	return rt == CH_RES_UNKNOWN || pat == CH_PAT_UNKNOWN || op == CH_ACL_UNKNOWN ||
	       perm == CH_PERM_UNKNOWN;
}

#define NO_AUTHORIZER "No Authorizer is configured."
#define CLUSTER_DENIED "Cluster authorization failed."

void
ch_api_DescribeAcls(ch_req *req)
{
	ch_DescribeAclsRequest *rq = req->body;
	/* v0 has no pattern type: LITERAL, and ANY means LITERAL there. */
	if (req->version == 0 && rq->PatternTypeFilter == CH_PAT_ANY)
		rq->PatternTypeFilter = CH_PAT_LITERAL;
	if (has_unknown(rq->ResourceTypeFilter, rq->PatternTypeFilter, rq->Operation,
			rq->PermissionType)) {
		ch_api_close(req, "DescribeAclsRequest contains UNKNOWN elements");
		return;
	}
	ch_DescribeAclsResponse resp;
	ch_DescribeAclsResponse_init(&resp);
	if (!ch_api_cluster_allowed(req, CH_ACL_DESCRIBE)) {
		resp.ErrorCode = CH_KERR_CLUSTER_AUTHORIZATION_FAILED;
		resp.ErrorMessage = ch_str_c(CLUSTER_DENIED);
		ch_api_send(req, &resp);
		return;
	}
	if (!ch_api_authz_on(req)) {
		resp.ErrorCode = CH_KERR_SECURITY_DISABLED;
		resp.ErrorMessage = ch_str_c("No Authorizer is configured on the broker");
		ch_api_send(req, &resp);
		return;
	}
	ch_acl_filter f = filter_of(req, rq->ResourceTypeFilter, rq->ResourceNameFilter,
				    rq->PatternTypeFilter, rq->PrincipalFilter, rq->HostFilter,
				    rq->Operation, rq->PermissionType);
	/* Matching bindings grouped by resource pattern, in the store's order. */
	size_t n = ch_acl_store_count(req->bk->acls);
	resp.Resources = CH_REQ_NEW_ARRAY(req, ch_DescribeAclsResponse_DescribeAclsResource, n + 1);
	resp.Resources_n = 0;
	const ch_acl **of =
		CH_REQ_NEW_ARRAY(req, const ch_acl *, n + 1); /* each resource's first */
	for (size_t i = 0; i < n; i++) {
		const ch_acl *a = ch_acl_store_at(req->bk->acls, i);
		if (!ch_acl_filter_matches(&f, a))
			continue;
		int32_t r = 0;
		while (r < resp.Resources_n &&
		       !(of[r]->res_type == a->res_type && of[r]->pattern == a->pattern &&
			 strcmp(of[r]->name, a->name) == 0))
			r++;
		ch_DescribeAclsResponse_DescribeAclsResource *res = &resp.Resources[r];
		if (r == resp.Resources_n) {
			of[r] = a;
			resp.Resources_n++;
			res->ResourceType = a->res_type;
			res->ResourceName = ch_str_c(a->name);
			res->PatternType = a->pattern;
			res->Acls =
				CH_REQ_NEW_ARRAY(req, ch_DescribeAclsResponse_AclDescription, n);
		}
		ch_DescribeAclsResponse_AclDescription *d = &res->Acls[res->Acls_n++];
		d->Principal = ch_str_c(a->principal);
		d->Host = ch_str_c(a->host);
		d->Operation = a->op;
		d->PermissionType = a->perm;
	}
	ch_api_send(req, &resp);
}

/* ---- CreateAcls ---------------------------------------------------------------- */

/* What CreateAcls and DeleteAcls answer for every entry before looking at
 * any (AclApis: ALTER on the cluster, then an authorizer at all): the
 * error code and *msg, or 0. */
static int16_t
refusal(const ch_req *req, const char **msg)
{
	*msg = NULL;
	if (!ch_api_cluster_allowed(req, CH_ACL_ALTER)) {
		*msg = CLUSTER_DENIED;
		return CH_KERR_CLUSTER_AUTHORIZATION_FAILED;
	}
	if (!ch_api_authz_on(req)) {
		*msg = NO_AUTHORIZER;
		return CH_KERR_SECURITY_DISABLED;
	}
	return 0;
}

void
ch_api_CreateAcls(ch_req *req)
{
	const ch_CreateAclsRequest *rq = req->body;
	int32_t n = rq->Creations_n > 0 ? rq->Creations_n : 0;
	for (int32_t i = 0; i < n; i++) {
		const ch_CreateAclsRequest_AclCreation *c = &rq->Creations[i];
		if (has_unknown(c->ResourceType, c->ResourcePatternType, c->Operation,
				c->PermissionType)) {
			ch_api_close(req, "CreatableAcls contain unknown elements");
			return;
		}
	}
	ch_CreateAclsResponse resp;
	ch_CreateAclsResponse_init(&resp);
	resp.Results = CH_REQ_NEW_ARRAY(req, ch_CreateAclsResponse_AclCreationResult, n + 1);
	resp.Results_n = n;
	const char *all_msg;
	int16_t all_err = refusal(req, &all_msg);
	ch_acl *valid = CH_REQ_NEW_ARRAY(req, ch_acl, n + 1);
	int32_t *valid_at = CH_REQ_NEW_ARRAY(req, int32_t, n + 1);
	size_t nv = 0;
	for (int32_t i = 0; i < n; i++) {
		const ch_CreateAclsRequest_AclCreation *c = &rq->Creations[i];
		ch_CreateAclsResponse_AclCreationResult *r = &resp.Results[i];
		r->ErrorMessage = CH_STR_NULL;
		if (all_err) {
			r->ErrorCode = all_err;
			r->ErrorMessage = ch_str_c(all_msg);
			continue;
		}
		ch_acl a = {ch_acl_res_code(c->ResourceType),
			    ch_acl_pattern_code(c->ResourcePatternType),
			    ch_acl_op_code(c->Operation),
			    ch_acl_perm_code(c->PermissionType),
			    ch_req_strdup(req, c->ResourceName),
			    ch_req_strdup(req, c->Principal),
			    ch_req_strdup(req, c->Host)};
		char *why = ch_req_alloc(req, 256);
		const char *bad = ch_acl_invalid(&a, why, 256);
		if (bad) {
			r->ErrorCode = CH_KERR_INVALID_REQUEST;
			r->ErrorMessage = ch_str_c(bad);
			continue;
		}
		valid_at[nv] = i;
		valid[nv++] = a;
	}
	char err[512];
	if (nv && ch_acl_store_add(req->bk->acls, valid, nv, err, sizeof(err)) != 0) {
		CH_LOGE("authz", "CreateAcls: %s", err);
		for (size_t k = 0; k < nv; k++) {
			resp.Results[valid_at[k]].ErrorCode = CH_KERR_UNKNOWN_SERVER_ERROR;
			resp.Results[valid_at[k]].ErrorMessage =
				ch_str_c(ch_req_strdup(req, ch_str_c(err)));
		}
	} else if (nv) {
		for (size_t k = 0; k < nv; k++)
			CH_LOGI("authz", "%s added ACL (%s %s %s, %s %s %s from %s)",
				req->principal, ch_acl_res_name(valid[k].res_type),
				ch_acl_pattern_name(valid[k].pattern), valid[k].name,
				valid[k].principal, ch_acl_perm_name(valid[k].perm),
				ch_acl_op_name(valid[k].op), valid[k].host);
	}
	ch_api_send(req, &resp);
}

/* ---- DeleteAcls ---------------------------------------------------------------- */

typedef struct removed_ctx {
	ch_req *req;
	ch_DeleteAclsResponse *resp;
	size_t cap; /* matching entries each result has room for */
} removed_ctx;

/* ch_acl_removed_fn: one more matching ACL under filter k's result. */
static void
on_removed(void *ud, size_t k, const ch_acl *a)
{
	removed_ctx *c = ud;
	ch_DeleteAclsResponse_DeleteAclsFilterResult *r = &c->resp->FilterResults[k];
	if (!r->MatchingAcls)
		r->MatchingAcls = CH_REQ_NEW_ARRAY(
			c->req, ch_DeleteAclsResponse_DeleteAclsMatchingAcl, c->cap);
	ch_DeleteAclsResponse_DeleteAclsMatchingAcl *m = &r->MatchingAcls[r->MatchingAcls_n++];
	m->ErrorMessage = CH_STR_NULL;
	m->ResourceType = a->res_type;
	m->ResourceName = ch_str_c(ch_req_strdup(c->req, ch_str_c(a->name)));
	m->PatternType = a->pattern;
	m->Principal = ch_str_c(ch_req_strdup(c->req, ch_str_c(a->principal)));
	m->Host = ch_str_c(ch_req_strdup(c->req, ch_str_c(a->host)));
	m->Operation = a->op;
	m->PermissionType = a->perm;
}

void
ch_api_DeleteAcls(ch_req *req)
{
	ch_DeleteAclsRequest *rq = req->body;
	int32_t n = rq->Filters_n > 0 ? rq->Filters_n : 0;
	for (int32_t i = 0; i < n; i++) {
		ch_DeleteAclsRequest_DeleteAclsFilter *f = &rq->Filters[i];
		if (req->version == 0 && f->PatternTypeFilter == CH_PAT_ANY)
			f->PatternTypeFilter = CH_PAT_LITERAL;
		if (has_unknown(f->ResourceTypeFilter, f->PatternTypeFilter, f->Operation,
				f->PermissionType)) {
			ch_api_close(req, "Filters contain UNKNOWN elements");
			return;
		}
	}
	ch_DeleteAclsResponse resp;
	ch_DeleteAclsResponse_init(&resp);
	resp.FilterResults =
		CH_REQ_NEW_ARRAY(req, ch_DeleteAclsResponse_DeleteAclsFilterResult, n + 1);
	resp.FilterResults_n = n;
	const char *all_msg;
	int16_t all_err = refusal(req, &all_msg);
	ch_acl_filter *fs = CH_REQ_NEW_ARRAY(req, ch_acl_filter, n + 1);
	int32_t *fs_at = CH_REQ_NEW_ARRAY(req, int32_t, n + 1);
	size_t nf = 0;
	for (int32_t i = 0; i < n; i++) {
		const ch_DeleteAclsRequest_DeleteAclsFilter *f = &rq->Filters[i];
		ch_DeleteAclsResponse_DeleteAclsFilterResult *r = &resp.FilterResults[i];
		r->ErrorMessage = CH_STR_NULL;
		r->MatchingAcls_n = 0;
		if (all_err) {
			r->ErrorCode = all_err;
			r->ErrorMessage = ch_str_c(all_msg);
			continue;
		}
		ch_acl_filter af = filter_of(req, f->ResourceTypeFilter, f->ResourceNameFilter,
					     f->PatternTypeFilter, f->PrincipalFilter,
					     f->HostFilter, f->Operation, f->PermissionType);
		const char *bad = ch_acl_filter_invalid(&af);
		if (bad) {
			r->ErrorCode = CH_KERR_INVALID_REQUEST;
			r->ErrorMessage = ch_str_c(bad);
			continue;
		}
		/* Results point into resp by filter index: compact the list. */
		fs_at[nf] = i;
		fs[nf++] = af;
	}
	if (nf) {
		/* Filter k of the store's call is request filter fs_at[k]: results are
		 * written in a scratch response and moved. */
		ch_DeleteAclsResponse tmp;
		ch_DeleteAclsResponse_init(&tmp);
		tmp.FilterResults =
			CH_REQ_NEW_ARRAY(req, ch_DeleteAclsResponse_DeleteAclsFilterResult, nf);
		removed_ctx c = {req, &tmp, ch_acl_store_count(req->bk->acls) + 1};
		char err[512];
		if (ch_acl_store_remove(req->bk->acls, fs, nf, on_removed, &c, err, sizeof(err)) !=
		    0) {
			CH_LOGE("authz", "DeleteAcls: %s", err);
			for (size_t k = 0; k < nf; k++) {
				resp.FilterResults[fs_at[k]].ErrorCode =
					CH_KERR_UNKNOWN_SERVER_ERROR;
				resp.FilterResults[fs_at[k]].ErrorMessage =
					ch_str_c(ch_req_strdup(req, ch_str_c(err)));
			}
		} else {
			for (size_t k = 0; k < nf; k++) {
				ch_DeleteAclsResponse_DeleteAclsFilterResult *r =
					&resp.FilterResults[fs_at[k]];
				r->MatchingAcls = tmp.FilterResults[k].MatchingAcls;
				r->MatchingAcls_n = tmp.FilterResults[k].MatchingAcls_n;
				if (r->MatchingAcls_n)
					CH_LOGI("authz", "%s removed %d ACL(s)", req->principal,
						(int)r->MatchingAcls_n);
			}
		}
	}
	ch_api_send(req, &resp);
}
