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
	/* KIP-554's APIs: DESCRIBE and ALTER on the cluster too. */
	ch_DescribeUserScramCredentialsRequest_UserName un = {ch_str_c("bob")};
	ch_DescribeUserScramCredentialsRequest sq = {&un, 1};
	CALL(sr, ch_DescribeUserScramCredentialsResponse, &b, &a,
	     CH_APIKEY_DESCRIBE_USER_SCRAM_CREDENTIALS, 0, &sq);
	CH_CHECK(sr->ErrorCode == 0 && sr->Results_n == 1); /* DESCRIBE was granted above */
	ch_AlterUserScramCredentialsRequest_ScramCredentialDeletion del = {ch_str_c("bob"), 1};
	ch_AlterUserScramCredentialsRequest aq = {&del, 1, NULL, 0};
	CALL(ar, ch_AlterUserScramCredentialsResponse, &b, &a,
	     CH_APIKEY_ALTER_USER_SCRAM_CREDENTIALS, 0, &aq);
	CH_CHECK(ar->Results_n == 1 &&
		 ar->Results[0].ErrorCode == CH_KERR_CLUSTER_AUTHORIZATION_FAILED);
	tb_set_principal(&b, "User:carol");
	CALL(sr2, ch_DescribeUserScramCredentialsResponse, &b, &a,
	     CH_APIKEY_DESCRIBE_USER_SCRAM_CREDENTIALS, 0, &sq);
	CH_CHECK(sr2->ErrorCode == CH_KERR_CLUSTER_AUTHORIZATION_FAILED && sr2->Results_n == 1 &&
		 sr2->Results[0].ErrorCode == CH_KERR_CLUSTER_AUTHORIZATION_FAILED);
	tb_set_principal(&b, "User:alice");
	q.Operation = CH_ACL_UNKNOWN;
	uint64_t s = tb_send(&b, CH_APIKEY_DESCRIBE_ACLS, 3, &q);
	CH_CHECK(tb_wait(&b, s) && tb_get(&b, s)->closes == 1);
	ch_arena_reset(&a);
	CH_CHECK_EQ_INT(tb_close(&b), 0);
}

/* ---- the checks ---------------------------------------------------------------- */

/* As admin (a super user): one binding. */
static void
grant(tb *b, int rt, const char *name, int pat, const char *who, int op, int perm)
{
	tb_set_principal(b, "User:admin");
	ch_CreateAclsRequest_AclCreation c = creation(rt, name, pat, who, op, perm);
	int16_t code = -1;
	create(b, 3, &c, 1, &code);
	CH_CHECK_EQ_INT(code, 0);
}

/* A commit-less JoinGroup v9 (new member: MEMBER_ID_REQUIRED when allowed). */
static int16_t
join(tb *b, const char *group)
{
	ch_arena a;
	ch_arena_init(&a);
	ch_JoinGroupRequest_JoinGroupRequestProtocol proto;
	ch_JoinGroupRequest q;
	flow_join_request(&q, &proto, group, "", (ch_bytes){(const uint8_t *)"", 0});
	ch_JoinGroupResponse *r = tb_call(b, CH_APIKEY_JOIN_GROUP, 9, &q, &a);
	int16_t err = r ? r->ErrorCode : -2;
	if (r && err == CH_KERR_GROUP_AUTHORIZATION_FAILED)
		CH_CHECK(r->GenerationId == -1 && r->MemberId.len == 0 && r->Members_n == 0);
	ch_arena_reset(&a);
	return err;
}

/* Groups ListGroups v5 shows, as a count; *has set when group is among them. */
static int
list_groups(tb *b, const char *group, bool *has)
{
	ch_arena a;
	ch_arena_init(&a);
	ch_ListGroupsRequest q;
	ch_ListGroupsRequest_init(&q);
	ch_ListGroupsResponse *r = tb_call(b, CH_APIKEY_LIST_GROUPS, 5, &q, &a);
	int n = r ? r->Groups_n : -1;
	*has = false;
	for (int32_t i = 0; r && i < r->Groups_n; i++)
		*has |= ch_str_eq_c(r->Groups[i].GroupId, group);
	ch_arena_reset(&a);
	return n;
}

static void
t_group_checks(void)
{
	tb b;
	tb_open(&b, authz_on, CH_ARRAY_LEN(authz_on));
	tb_create_topic(&b, "t", 1);
	tb_create_topic(&b, "u", 1);
	ch_arena a;
	ch_arena_init(&a);
	/* No ACL names the group: denied (allow.everyone.if.no.acl.found=false). */
	tb_set_principal(&b, "User:alice");
	CH_CHECK_EQ_INT(join(&b, "g"), CH_KERR_GROUP_AUTHORIZATION_FAILED);
	grant(&b, CH_RES_GROUP, "g", CH_PAT_LITERAL, "User:alice", CH_ACL_READ, CH_PERM_ALLOW);
	tb_set_principal(&b, "User:alice");
	CH_CHECK_EQ_INT(join(&b, "g"), CH_KERR_MEMBER_ID_REQUIRED);
	/* A DENY on a prefix wins over the literal ALLOW. */
	grant(&b, CH_RES_GROUP, "g", CH_PAT_PREFIXED, "User:alice", CH_ACL_READ, CH_PERM_DENY);
	tb_set_principal(&b, "User:alice");
	CH_CHECK_EQ_INT(join(&b, "g"), CH_KERR_GROUP_AUTHORIZATION_FAILED);
	tb_set_principal(&b, "User:admin");
	ch_DeleteAclsRequest_DeleteAclsFilter f = {CH_RES_GROUP, ch_str_c("g"), CH_PAT_PREFIXED,
						   CH_STR_NULL,  CH_STR_NULL,   CH_ACL_ANY,
						   CH_PERM_DENY};
	ch_DeleteAclsRequest dq;
	ch_DeleteAclsRequest_init(&dq);
	dq.Filters = &f;
	dq.Filters_n = 1;
	CALL(dr, ch_DeleteAclsResponse, &b, &a, CH_APIKEY_DELETE_ACLS, 3, &dq);
	CH_CHECK(dr->FilterResults_n == 1 && dr->FilterResults[0].MatchingAcls_n == 1);

	/* OffsetCommit: READ on each topic; the denied one fails alone. */
	grant(&b, CH_RES_TOPIC, "t", CH_PAT_LITERAL, "User:alice", CH_ACL_READ, CH_PERM_ALLOW);
	tb_set_principal(&b, "User:alice");
	const char *topics[] = {"u", "t"};
	int16_t errs[2];
	flow_commit_simple(&b, "g", topics, 2, errs);
	CH_CHECK_EQ_INT(errs[0], CH_KERR_TOPIC_AUTHORIZATION_FAILED);
	CH_CHECK_EQ_INT(errs[1], 0);
	flow_commit_simple(&b, "h", topics, 2, errs); /* no READ on group h */
	CH_CHECK(errs[0] == CH_KERR_GROUP_AUTHORIZATION_FAILED &&
		 errs[1] == CH_KERR_GROUP_AUTHORIZATION_FAILED);
	tb_set_principal(&b, "User:admin");
	flow_commit_simple(&b, "h", topics, 2, errs); /* h exists now, committed by admin */
	CH_CHECK(errs[0] == 0 && errs[1] == 0);

	/* ListGroups: g (READ implies DESCRIBE), not h; everything with
	 * DESCRIBE on the cluster. */
	tb_set_principal(&b, "User:alice");
	bool has_h;
	CH_CHECK_EQ_INT(list_groups(&b, "h", &has_h), 1);
	CH_CHECK(!has_h);
	grant(&b, CH_RES_CLUSTER, CH_CLUSTER_NAME, CH_PAT_LITERAL, "User:alice", CH_ACL_DESCRIBE,
	      CH_PERM_ALLOW);
	tb_set_principal(&b, "User:alice");
	CH_CHECK_EQ_INT(list_groups(&b, "h", &has_h), 2);
	CH_CHECK(has_h);

	/* OffsetFetch v8: h denied, g's topics: t shown, u TOPIC_AUTHORIZATION_FAILED. */
	int32_t part0 = 0;
	ch_OffsetFetchRequest_OffsetFetchRequestTopics ft[2] = {{ch_str_c("t"), &part0, 1},
								{ch_str_c("u"), &part0, 1}};
	ch_OffsetFetchRequest_OffsetFetchRequestGroup fg[2] = {
		{ch_str_c("h"), CH_STR_NULL, -1, ft, 2}, {ch_str_c("g"), CH_STR_NULL, -1, ft, 2}};
	ch_OffsetFetchRequest fq;
	ch_OffsetFetchRequest_init(&fq);
	fq.Groups = fg;
	fq.Groups_n = 2;
	CALL(fr, ch_OffsetFetchResponse, &b, &a, CH_APIKEY_OFFSET_FETCH, 8, &fq);
	CH_CHECK(fr->Groups_n == 2);
	if (fr->Groups_n == 2) {
		CH_CHECK_STR(fr->Groups[0].GroupId, "h");
		CH_CHECK_EQ_INT(fr->Groups[0].ErrorCode, CH_KERR_GROUP_AUTHORIZATION_FAILED);
		CH_CHECK_STR(fr->Groups[1].GroupId, "g");
		CH_CHECK_EQ_INT(fr->Groups[1].ErrorCode, 0);
		CH_CHECK_EQ_INT(fr->Groups[1].Topics_n, 2);
		for (int32_t k = 0; k < fr->Groups[1].Topics_n; k++) {
			const ch_OffsetFetchResponse_OffsetFetchResponseTopics *t =
				&fr->Groups[1].Topics[k];
			bool is_t = ch_str_eq_c(t->Name, "t");
			CH_CHECK(t->Partitions_n == 1);
			CH_CHECK_EQ_INT(t->Partitions[0].ErrorCode,
					is_t ? 0 : CH_KERR_TOPIC_AUTHORIZATION_FAILED);
			CH_CHECK_EQ_INT(t->Partitions[0].CommittedOffset, is_t ? 1 : -1);
		}
	}
	/* All topics (v7, null list): u is left out. */
	fq = (ch_OffsetFetchRequest){0};
	ch_OffsetFetchRequest_init(&fq);
	fq.GroupId = ch_str_c("g");
	fq.Topics = NULL;
	fq.Topics_n = -1;
	CALL(fa, ch_OffsetFetchResponse, &b, &a, CH_APIKEY_OFFSET_FETCH, 7, &fq);
	CH_CHECK(fa->ErrorCode == 0 && fa->Topics_n == 1);
	if (fa->Topics_n == 1)
		CH_CHECK_STR(fa->Topics[0].Name, "t");
	fq.GroupId = ch_str_c("h");
	tb_set_principal(&b, "User:bob");
	CALL(fh, ch_OffsetFetchResponse, &b, &a, CH_APIKEY_OFFSET_FETCH, 7, &fq);
	CH_CHECK(fh->ErrorCode == CH_KERR_GROUP_AUTHORIZATION_FAILED && fh->Topics_n == 0);

	/* DescribeGroups: the denied group first; authorized operations from the ACLs. */
	tb_set_principal(&b, "User:alice");
	ch_str groups[2] = {ch_str_c("g"), ch_str_c("h")};
	ch_DescribeGroupsRequest gq;
	ch_DescribeGroupsRequest_init(&gq);
	gq.Groups = groups;
	gq.Groups_n = 2;
	gq.IncludeAuthorizedOperations = true;
	CALL(gr, ch_DescribeGroupsResponse, &b, &a, CH_APIKEY_DESCRIBE_GROUPS, 5, &gq);
	CH_CHECK(gr->Groups_n == 2);
	if (gr->Groups_n == 2) {
		CH_CHECK_STR(gr->Groups[0].GroupId, "h");
		CH_CHECK_EQ_INT(gr->Groups[0].ErrorCode, CH_KERR_GROUP_AUTHORIZATION_FAILED);
		CH_CHECK_STR(gr->Groups[1].GroupId, "g");
		CH_CHECK_EQ_INT(gr->Groups[1].ErrorCode, 0);
		CH_CHECK_EQ_INT(gr->Groups[1].AuthorizedOperations,
				CH_ACL_BIT(CH_ACL_READ) | CH_ACL_BIT(CH_ACL_DESCRIBE));
	}
	/* DeleteGroups and OffsetDelete need DELETE; FindCoordinator DESCRIBE. */
	ch_DeleteGroupsRequest delq = {groups, 1};
	CALL(delr, ch_DeleteGroupsResponse, &b, &a, CH_APIKEY_DELETE_GROUPS, 2, &delq);
	CH_CHECK(delr->Results_n == 1 &&
		 delr->Results[0].ErrorCode == CH_KERR_GROUP_AUTHORIZATION_FAILED);
	ch_OffsetDeleteRequest odq;
	ch_OffsetDeleteRequest_init(&odq);
	odq.GroupId = ch_str_c("g");
	odq.Topics_n = 0;
	CALL(odr, ch_OffsetDeleteResponse, &b, &a, CH_APIKEY_OFFSET_DELETE, 0, &odq);
	CH_CHECK_EQ_INT(odr->ErrorCode, CH_KERR_GROUP_AUTHORIZATION_FAILED);
	ch_str keys[2] = {ch_str_c("g"), ch_str_c("h")};
	ch_FindCoordinatorRequest cq;
	ch_FindCoordinatorRequest_init(&cq);
	cq.CoordinatorKeys = keys;
	cq.CoordinatorKeys_n = 2;
	tb_set_principal(&b, "User:bob");
	CALL(cr, ch_FindCoordinatorResponse, &b, &a, CH_APIKEY_FIND_COORDINATOR, 4, &cq);
	CH_CHECK(cr->Coordinators_n == 2 &&
		 cr->Coordinators[0].ErrorCode == CH_KERR_GROUP_AUTHORIZATION_FAILED &&
		 cr->Coordinators[0].NodeId == -1);
	tb_set_principal(&b, "User:alice");
	CALL(cr2, ch_FindCoordinatorResponse, &b, &a, CH_APIKEY_FIND_COORDINATOR, 4, &cq);
	CH_CHECK(cr2->Coordinators_n == 2 && cr2->Coordinators[0].ErrorCode == 0 &&
		 cr2->Coordinators[1].ErrorCode == CH_KERR_GROUP_AUTHORIZATION_FAILED);
	ch_arena_reset(&a);
	CH_CHECK_EQ_INT(tb_close(&b), 0);
}

/* The topic of a v12 Metadata answer by name, or NULL. */
static const ch_MetadataResponse_MetadataResponseTopic *
md_topic(const ch_MetadataResponse *r, const char *name)
{
	for (int32_t i = 0; r && i < r->Topics_n; i++)
		if (ch_str_eq_c(r->Topics[i].Name, name))
			return &r->Topics[i];
	return NULL;
}

static void
t_topic_checks(void)
{
	const char *const sets[] = {authz_on[0], authz_on[1], "auto.create.topics.enable=true"};
	tb b;
	tb_open(&b, sets, CH_ARRAY_LEN(sets));
	tb_create_topic(&b, "orders-eu", 1);
	tb_create_topic(&b, "secret", 1);
	grant(&b, CH_RES_TOPIC, "orders-", CH_PAT_PREFIXED, "User:alice", CH_ACL_READ,
	      CH_PERM_ALLOW);
	ch_arena a;
	ch_arena_init(&a);
	tb_set_principal(&b, "User:alice");
	/* Metadata of all topics: secret is not there. */
	ch_MetadataRequest mq;
	ch_MetadataRequest_init(&mq);
	mq.Topics = NULL;
	mq.Topics_n = -1;
	mq.IncludeTopicAuthorizedOperations = true;
	CALL(mr, ch_MetadataResponse, &b, &a, CH_APIKEY_METADATA, 12, &mq);
	CH_CHECK(md_topic(mr, "orders-eu") && !md_topic(mr, "secret"));
	if (md_topic(mr, "orders-eu"))
		CH_CHECK_EQ_INT(md_topic(mr, "orders-eu")->TopicAuthorizedOperations,
				CH_ACL_BIT(CH_ACL_READ) | CH_ACL_BIT(CH_ACL_DESCRIBE));
	/* By name: secret and a topic to auto-create (no CREATE) are denied. */
	ch_MetadataRequest_MetadataRequestTopic named[3] = {{{{0}}, ch_str_c("secret")},
							    {{{0}}, ch_str_c("orders-new")},
							    {{{0}}, ch_str_c("orders-eu")}};
	mq.Topics = named;
	mq.Topics_n = 3;
	mq.AllowAutoTopicCreation = true;
	CALL(mn, ch_MetadataResponse, &b, &a, CH_APIKEY_METADATA, 12, &mq);
	CH_CHECK(md_topic(mn, "secret") &&
		 md_topic(mn, "secret")->ErrorCode == CH_KERR_TOPIC_AUTHORIZATION_FAILED &&
		 md_topic(mn, "secret")->Partitions_n == 0);
	CH_CHECK(md_topic(mn, "orders-new") &&
		 md_topic(mn, "orders-new")->ErrorCode == CH_KERR_TOPIC_AUTHORIZATION_FAILED);
	CH_CHECK(md_topic(mn, "orders-eu") && md_topic(mn, "orders-eu")->ErrorCode == 0);
	CH_CHECK(!ch_topics_find(b.topics, "orders-new", 10));
	/* CREATE on the prefix: auto-created. */
	grant(&b, CH_RES_TOPIC, "orders-", CH_PAT_PREFIXED, "User:alice", CH_ACL_CREATE,
	      CH_PERM_ALLOW);
	tb_set_principal(&b, "User:alice");
	CALL(mc, ch_MetadataResponse, &b, &a, CH_APIKEY_METADATA, 12, &mq);
	CH_CHECK(md_topic(mc, "orders-new") && md_topic(mc, "orders-new")->ErrorCode == 0);
	CH_CHECK(ch_topics_find(b.topics, "orders-new", 10) != NULL);

	/* Produce needs WRITE, ListOffsets DESCRIBE, Fetch READ. */
	ch_ProduceRequest_PartitionProduceData pd = {0, {(const uint8_t *)"", 0}};
	ch_ProduceRequest_TopicProduceData td = {ch_str_c("orders-eu"), &pd, 1};
	ch_ProduceRequest pq;
	ch_ProduceRequest_init(&pq);
	pq.Acks = 1;
	pq.TimeoutMs = 1000;
	pq.TopicData = &td;
	pq.TopicData_n = 1;
	CALL(pr, ch_ProduceResponse, &b, &a, CH_APIKEY_PRODUCE, 9, &pq);
	CH_CHECK(pr->Responses_n == 1 && pr->Responses[0].PartitionResponses_n == 1 &&
		 pr->Responses[0].PartitionResponses[0].ErrorCode ==
			 CH_KERR_TOPIC_AUTHORIZATION_FAILED);
	ch_ListOffsetsRequest_ListOffsetsPartition lp = {0, -1, -1, 1};
	ch_ListOffsetsRequest_ListOffsetsTopic lt[2] = {{ch_str_c("secret"), &lp, 1},
							{ch_str_c("orders-eu"), &lp, 1}};
	ch_ListOffsetsRequest lq;
	ch_ListOffsetsRequest_init(&lq);
	lq.ReplicaId = -1;
	lq.Topics = lt;
	lq.Topics_n = 2;
	CALL(lr, ch_ListOffsetsResponse, &b, &a, CH_APIKEY_LIST_OFFSETS, 7, &lq);
	CH_CHECK(lr->Topics_n == 2 &&
		 lr->Topics[0].Partitions[0].ErrorCode == CH_KERR_TOPIC_AUTHORIZATION_FAILED &&
		 lr->Topics[1].Partitions[0].ErrorCode == 0);
	ch_FetchRequest_FetchPartition fp = {0, -1, 0, -1, -1, 1 << 20, {{0}}};
	ch_FetchRequest_FetchTopic ft[2] = {{ch_str_c("secret"), {{0}}, &fp, 1},
					    {ch_str_c("orders-eu"), {{0}}, &fp, 1}};
	ch_FetchRequest fq;
	ch_FetchRequest_init(&fq);
	fq.ReplicaId = -1;
	fq.MaxWaitMs = 0;
	fq.MaxBytes = 1 << 20;
	fq.Topics = ft;
	fq.Topics_n = 2;
	CALL(fr, ch_FetchResponse, &b, &a, CH_APIKEY_FETCH, 12, &fq);
	CH_CHECK(fr->Responses_n == 2);
	if (fr->Responses_n == 2) {
		CH_CHECK_EQ_INT(fr->Responses[0].Partitions[0].ErrorCode,
				CH_KERR_TOPIC_AUTHORIZATION_FAILED);
		CH_CHECK_EQ_INT(fr->Responses[1].Partitions[0].ErrorCode, 0);
	}
	/* CreateTopics without CREATE; DeleteTopics without DELETE. */
	ch_CreateTopicsRequest_CreatableTopic ct = {ch_str_c("x"), 1, 1, NULL, 0, NULL, 0};
	ch_CreateTopicsRequest cq;
	ch_CreateTopicsRequest_init(&cq);
	cq.Topics = &ct;
	cq.Topics_n = 1;
	CALL(cr, ch_CreateTopicsResponse, &b, &a, CH_APIKEY_CREATE_TOPICS, 7, &cq);
	CH_CHECK(cr->Topics_n == 1 &&
		 cr->Topics[0].ErrorCode == CH_KERR_TOPIC_AUTHORIZATION_FAILED);
	if (cr->Topics_n == 1)
		CH_CHECK_STR(cr->Topics[0].ErrorMessage, "Authorization failed.");
	ch_str dn = ch_str_c("orders-eu");
	ch_DeleteTopicsRequest dq;
	ch_DeleteTopicsRequest_init(&dq);
	dq.TopicNames = &dn;
	dq.TopicNames_n = 1;
	CALL(dr, ch_DeleteTopicsResponse, &b, &a, CH_APIKEY_DELETE_TOPICS, 5, &dq);
	CH_CHECK(dr->Responses_n == 1 &&
		 dr->Responses[0].ErrorCode == CH_KERR_TOPIC_AUTHORIZATION_FAILED);
	CH_CHECK(ch_topics_find(b.topics, "orders-eu", 9) != NULL);
	/* InitProducerId: no IDEMPOTENT_WRITE, no WRITE on any topic. */
	ch_InitProducerIdRequest iq;
	ch_InitProducerIdRequest_init(&iq);
	iq.TransactionalId = CH_STR_NULL;
	iq.TransactionTimeoutMs = 60000;
	CALL(ir, ch_InitProducerIdResponse, &b, &a, CH_APIKEY_INIT_PRODUCER_ID, 4, &iq);
	CH_CHECK_EQ_INT(ir->ErrorCode, CH_KERR_CLUSTER_AUTHORIZATION_FAILED);
	/* The super user does all of it. */
	tb_set_principal(&b, "User:admin");
	CALL(ir2, ch_InitProducerIdResponse, &b, &a, CH_APIKEY_INIT_PRODUCER_ID, 4, &iq);
	CH_CHECK_EQ_INT(ir2->ErrorCode, 0);
	CALL(dr2, ch_DeleteTopicsResponse, &b, &a, CH_APIKEY_DELETE_TOPICS, 5, &dq);
	CH_CHECK(dr2->Responses_n == 1 && dr2->Responses[0].ErrorCode == 0);
	ch_arena_reset(&a);
	CH_CHECK_EQ_INT(tb_close(&b), 0);
}

/* Client quotas: DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster (KafkaApis). */
static void
t_quota_checks(void)
{
	tb b;
	tb_open(&b, authz_on, CH_ARRAY_LEN(authz_on));
	tb_set_principal(&b, "User:bob");
	ch_arena a;
	ch_arena_init(&a);
	ch_DescribeClientQuotasRequest dq;
	ch_DescribeClientQuotasRequest_init(&dq);
	CALL(d, ch_DescribeClientQuotasResponse, &b, &a, CH_APIKEY_DESCRIBE_CLIENT_QUOTAS, 1, &dq);
	CH_CHECK_EQ_INT(d->ErrorCode, CH_KERR_CLUSTER_AUTHORIZATION_FAILED);
	ch_AlterClientQuotasRequest_EntityData ent = {ch_str_c("user"), ch_str_c("bob")};
	ch_AlterClientQuotasRequest_OpData op = {ch_str_c("producer_byte_rate"), 1024, false};
	ch_AlterClientQuotasRequest_EntryData en = {&ent, 1, &op, 1};
	ch_AlterClientQuotasRequest aq;
	ch_AlterClientQuotasRequest_init(&aq);
	aq.Entries = &en;
	aq.Entries_n = 1;
	CALL(r, ch_AlterClientQuotasResponse, &b, &a, CH_APIKEY_ALTER_CLIENT_QUOTAS, 1, &aq);
	CH_CHECK(r->Entries_n == 1 &&
		 r->Entries[0].ErrorCode == CH_KERR_CLUSTER_AUTHORIZATION_FAILED);
	tb_set_principal(&b, "User:admin");
	CALL(d2, ch_DescribeClientQuotasResponse, &b, &a, CH_APIKEY_DESCRIBE_CLIENT_QUOTAS, 1, &dq);
	CH_CHECK_EQ_INT(d2->ErrorCode, 0);
	ch_arena_reset(&a);
	CH_CHECK_EQ_INT(tb_close(&b), 0);
}

CH_TEST_MAIN(CH_TEST(t_no_authorizer), CH_TEST(t_create_describe_delete), CH_TEST(t_cluster_denied),
	     CH_TEST(t_group_checks), CH_TEST(t_topic_checks), CH_TEST(t_quota_checks))
