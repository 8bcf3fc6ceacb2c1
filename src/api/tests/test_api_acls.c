/*
 * The authorizer against a whole broker without sockets (api_harness.h):
 * CreateAcls / DescribeAcls / DeleteAcls at every version (filters, errors,
 * SECURITY_DISABLED without an authorizer, CLUSTER_AUTHORIZATION_FAILED
 * for a principal without ALTER / DESCRIBE on the cluster), and the checks
 * the handlers make with them.
 */
#include <stdio.h>
#include <string.h>

#include "api_flows.h"
#include "auth/ch_authz.h"
#include "common/ch_common.h"

static const char *const authz_on[] = {
	"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"super.users=User:admin",
};

static ch_CreateAclsRequest_AclCreation
creation(int rt, const char *name, int pat, const char *principal, int op, int perm)
{
	ch_CreateAclsRequest_AclCreation c = {(int8_t)rt,          ch_str_c(name), (int8_t)pat,
					      ch_str_c(principal), ch_str_c("*"),  (int8_t)op,
					      (int8_t)perm};
	return c;
}

/* Creates bindings as whoever the harness speaks for; each result's code in codes. */
static void
create(tb *b, int16_t v, ch_CreateAclsRequest_AclCreation *c, int32_t n, int16_t *codes)
{
	ch_arena a;
	ch_arena_init(&a);
	ch_CreateAclsRequest q;
	ch_CreateAclsRequest_init(&q);
	q.Creations = c;
	q.Creations_n = n;
	ch_CreateAclsResponse *r = tb_call(b, CH_APIKEY_CREATE_ACLS, v, &q, &a);
	CH_CHECK(r && r->Results_n == n);
	for (int32_t i = 0; r && i < n && i < r->Results_n; i++)
		codes[i] = r->Results[i].ErrorCode;
	ch_arena_reset(&a);
}

static ch_DescribeAclsRequest
describe_all(void)
{
	ch_DescribeAclsRequest q;
	ch_DescribeAclsRequest_init(&q);
	q.ResourceTypeFilter = CH_RES_ANY;
	q.PatternTypeFilter = CH_PAT_ANY;
	q.Operation = CH_ACL_ANY;
	q.PermissionType = CH_PERM_ANY;
	q.ResourceNameFilter = CH_STR_NULL;
	q.PrincipalFilter = CH_STR_NULL;
	q.HostFilter = CH_STR_NULL;
	return q;
}

/* ACLs the filter q describes (-1 on a bad answer). */
static int
count_described(tb *b, int16_t v, const ch_DescribeAclsRequest *q)
{
	ch_arena a;
	ch_arena_init(&a);
	ch_DescribeAclsResponse *r = tb_call(b, CH_APIKEY_DESCRIBE_ACLS, v, q, &a);
	int n = -1;
	if (r && r->ErrorCode == 0) {
		n = 0;
		for (int32_t i = 0; i < r->Resources_n; i++)
			n += r->Resources[i].Acls_n;
	}
	ch_arena_reset(&a);
	return n;
}

static void
t_no_authorizer(void)
{
	tb b;
	tb_open(&b, NULL, 0);
	ch_arena a;
	ch_arena_init(&a);
	for (int16_t v = 0; v <= 3; v++) {
		ch_DescribeAclsRequest q = describe_all();
		if (v == 0)
			q.PatternTypeFilter = CH_PAT_LITERAL;
		CALL(d, ch_DescribeAclsResponse, &b, &a, CH_APIKEY_DESCRIBE_ACLS, v, &q);
		CH_CHECK_EQ_INT(d->ErrorCode, CH_KERR_SECURITY_DISABLED);
		CH_CHECK_STR(d->ErrorMessage, "No Authorizer is configured on the broker");
		ch_CreateAclsRequest_AclCreation c = creation(CH_RES_TOPIC, "t", CH_PAT_LITERAL,
							      "User:a", CH_ACL_READ, CH_PERM_ALLOW);
		int16_t code = 0;
		create(&b, v, &c, 1, &code);
		CH_CHECK_EQ_INT(code, CH_KERR_SECURITY_DISABLED);
	}
	ch_arena_reset(&a);
	CH_CHECK_EQ_INT(tb_close(&b), 0);
}

static void
t_create_describe_delete(void)
{
	tb b;
	tb_open(&b, authz_on, CH_ARRAY_LEN(authz_on));
	tb_set_principal(&b, "User:admin");
	ch_arena a;
	ch_arena_init(&a);
	for (int16_t v = 0; v <= 3; v++) {
		int pre = v == 0 ? CH_PAT_LITERAL : CH_PAT_PREFIXED;
		ch_CreateAclsRequest_AclCreation c[] = {
			creation(CH_RES_TOPIC, "orders", CH_PAT_LITERAL, "User:alice", CH_ACL_READ,
				 CH_PERM_ALLOW),
			creation(CH_RES_TOPIC, "ord", pre, "User:alice", CH_ACL_WRITE,
				 CH_PERM_DENY),
			creation(CH_RES_GROUP, "g", CH_PAT_LITERAL, "User:*", CH_ACL_READ,
				 CH_PERM_ALLOW),
			creation(CH_RES_CLUSTER, "other", CH_PAT_LITERAL, "User:alice",
				 CH_ACL_ALTER, CH_PERM_ALLOW),
			creation(CH_RES_TOPIC, "", CH_PAT_LITERAL, "User:alice", CH_ACL_READ,
				 CH_PERM_ALLOW),
			creation(CH_RES_ANY, "t", CH_PAT_LITERAL, "User:alice", CH_ACL_READ,
				 CH_PERM_ALLOW),
			creation(CH_RES_TOPIC, "t", CH_PAT_LITERAL, "User:alice", CH_ACL_ANY,
				 CH_PERM_ALLOW),
			creation(CH_RES_TOPIC, "t", CH_PAT_LITERAL, "alice", CH_ACL_READ,
				 CH_PERM_ALLOW),
		};
		int16_t codes[CH_ARRAY_LEN(c)];
		create(&b, v, c, CH_ARRAY_LEN(c), codes);
		CH_CHECK(codes[0] == 0 && codes[1] == 0 && codes[2] == 0);
		for (size_t i = 3; i < CH_ARRAY_LEN(c); i++)
			CH_CHECK_EQ_INT(codes[i], CH_KERR_INVALID_REQUEST);
		/* Again: nothing doubles. */
		create(&b, v, c, 3, codes);
		CH_CHECK(codes[0] == 0 && codes[1] == 0 && codes[2] == 0);
		ch_DescribeAclsRequest q = describe_all();
		if (v == 0)
			q.PatternTypeFilter = CH_PAT_LITERAL;
		CH_CHECK_EQ_INT(count_described(&b, v, &q), v == 0 ? 3 : 3);
		q.ResourceTypeFilter = CH_RES_TOPIC;
		CH_CHECK_EQ_INT(count_described(&b, v, &q), 2);
		if (v > 0) {
			/* MATCH: every binding that applies to the topic "orders". */
			q.PatternTypeFilter = CH_PAT_MATCH;
			q.ResourceNameFilter = ch_str_c("orders");
			CH_CHECK_EQ_INT(count_described(&b, v, &q), 2);
			q.PatternTypeFilter = CH_PAT_LITERAL;
			CH_CHECK_EQ_INT(count_described(&b, v, &q), 1);
		}
		q = describe_all();
		if (v == 0)
			q.PatternTypeFilter = CH_PAT_LITERAL;
		q.PrincipalFilter = ch_str_c("User:*");
		CALL(d, ch_DescribeAclsResponse, &b, &a, CH_APIKEY_DESCRIBE_ACLS, v, &q);
		CH_CHECK(d->ErrorCode == 0 && d->Resources_n == 1);
		if (d->Resources_n == 1) {
			CH_CHECK_EQ_INT(d->Resources[0].ResourceType, CH_RES_GROUP);
			CH_CHECK_STR(d->Resources[0].ResourceName, "g");
			CH_CHECK(d->Resources[0].Acls_n == 1 &&
				 d->Resources[0].Acls[0].Operation == CH_ACL_READ &&
				 d->Resources[0].Acls[0].PermissionType == CH_PERM_ALLOW);
		}
		/* Delete: a filter of everything for alice's topics, and a bad one. */
		ch_DeleteAclsRequest_DeleteAclsFilter f[2] = {
			{CH_RES_TOPIC, CH_STR_NULL, v == 0 ? CH_PAT_LITERAL : CH_PAT_ANY,
			 ch_str_c("User:alice"), CH_STR_NULL, CH_ACL_ANY, CH_PERM_ANY},
			{CH_RES_GROUP, CH_STR_NULL, CH_PAT_LITERAL, CH_STR_NULL, CH_STR_NULL,
			 CH_ACL_ANY, 17 /* UNKNOWN once decoded */},
		};
		ch_DeleteAclsRequest dq;
		ch_DeleteAclsRequest_init(&dq);
		dq.Filters = f;
		dq.Filters_n = 2;
		CALL(r, ch_DeleteAclsResponse, &b, &a, CH_APIKEY_DELETE_ACLS, v, &dq);
		CH_CHECK(r->FilterResults_n == 2);
		if (r->FilterResults_n == 2) {
			CH_CHECK_EQ_INT(r->FilterResults[0].ErrorCode, 0);
			CH_CHECK_EQ_INT(r->FilterResults[0].MatchingAcls_n, v == 0 ? 2 : 2);
			CH_CHECK_EQ_INT(r->FilterResults[1].ErrorCode, CH_KERR_INVALID_REQUEST);
			CH_CHECK_STR(r->FilterResults[1].ErrorMessage, "Unknown entryFilter.");
		}
		q = describe_all();
		if (v == 0)
			q.PatternTypeFilter = CH_PAT_LITERAL;
		CH_CHECK_EQ_INT(count_described(&b, v, &q), 1);
		/* Clean up for the next version. */
		f[1].PermissionType = CH_PERM_ANY;
		dq.Filters = &f[1];
		dq.Filters_n = 1;
		CALL(r2, ch_DeleteAclsResponse, &b, &a, CH_APIKEY_DELETE_ACLS, v, &dq);
		CH_CHECK(r2->FilterResults_n == 1 && r2->FilterResults[0].MatchingAcls_n == 1);
		CH_CHECK_EQ_INT(count_described(&b, v, &q), 0);
	}
	ch_arena_reset(&a);
	CH_CHECK_EQ_INT(tb_close(&b), 0);
}

/* Without ALTER / DESCRIBE on the cluster: CLUSTER_AUTHORIZATION_FAILED,
 * and nothing changes. Code 0 (UNKNOWN) in a filter closes the connection. */
static void
t_cluster_denied(void)
{
	tb b;
	tb_open(&b, authz_on, CH_ARRAY_LEN(authz_on));
	tb_set_principal(&b, "User:alice");
	ch_arena a;
	ch_arena_init(&a);
	ch_DescribeAclsRequest q = describe_all();
	CALL(d, ch_DescribeAclsResponse, &b, &a, CH_APIKEY_DESCRIBE_ACLS, 3, &q);
	CH_CHECK_EQ_INT(d->ErrorCode, CH_KERR_CLUSTER_AUTHORIZATION_FAILED);
	ch_CreateAclsRequest_AclCreation c =
		creation(CH_RES_CLUSTER, CH_CLUSTER_NAME, CH_PAT_LITERAL, "User:alice", CH_ACL_ALL,
			 CH_PERM_ALLOW);
	int16_t code = 0;
	create(&b, 3, &c, 1, &code);
	CH_CHECK_EQ_INT(code, CH_KERR_CLUSTER_AUTHORIZATION_FAILED);
	CH_CHECK_EQ_INT(ch_acl_store_count(b.bk.acls), 0);
	/* DESCRIBE on the cluster lets alice describe, not create. */
	tb_set_principal(&b, "User:admin");
	c.Operation = CH_ACL_DESCRIBE;
	create(&b, 3, &c, 1, &code);
	CH_CHECK_EQ_INT(code, 0);
	tb_set_principal(&b, "User:alice");
	CH_CHECK_EQ_INT(count_described(&b, 3, &q), 1);
	c.Operation = CH_ACL_ALL;
	create(&b, 3, &c, 1, &code);
	CH_CHECK_EQ_INT(code, CH_KERR_CLUSTER_AUTHORIZATION_FAILED);
	q.Operation = CH_ACL_UNKNOWN;
	uint64_t s = tb_send(&b, CH_APIKEY_DESCRIBE_ACLS, 3, &q);
	CH_CHECK(tb_wait(&b, s) && tb_get(&b, s)->closes == 1);
	ch_arena_reset(&a);
	CH_CHECK_EQ_INT(tb_close(&b), 0);
}

CH_TEST_MAIN(CH_TEST(t_no_authorizer), CH_TEST(t_create_describe_delete), CH_TEST(t_cluster_denied))
