/*
 * The classic group protocol at every version, against a whole broker
 * without sockets (api_harness.h): one consumer's life in a group,
 *
 *   FindCoordinator -> JoinGroup (MEMBER_ID_REQUIRED at v4+, KIP-394) ->
 *   SyncGroup -> Heartbeat -> OffsetCommit -> OffsetFetch ->
 *   DescribeGroups / ListGroups -> DeleteGroups (NON_EMPTY_GROUP) ->
 *   OffsetDelete (GROUP_SUBSCRIBED_TO_TOPIC) -> LeaveGroup ->
 *   OffsetDelete -> DeleteGroups,
 *
 * plus a simple group (commits without members, as consumers with manual
 * assignment do), and the errors each step gives for a wrong generation,
 * an unknown member or a bad request, with the error codes Kafka's
 * GroupCoordinator gives.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_flows.h"
#include "common/ch_common.h"
#include "proto/ch_wr.h"

static const int16_t family[] = {
	CH_APIKEY_FIND_COORDINATOR, CH_APIKEY_JOIN_GROUP,    CH_APIKEY_SYNC_GROUP,
	CH_APIKEY_HEARTBEAT,        CH_APIKEY_OFFSET_COMMIT, CH_APIKEY_OFFSET_FETCH,
	CH_APIKEY_DESCRIBE_GROUPS,  CH_APIKEY_LIST_GROUPS,   CH_APIKEY_LEAVE_GROUP,
	CH_APIKEY_DELETE_GROUPS,    CH_APIKEY_OFFSET_DELETE,
};

#define TOPIC "orders"

/* What one step's member knows. */
typedef struct member {
	char group[64];
	char simple[64];
	char id[128];
	int32_t generation;
	ch_buf subscription; /* JoinGroup protocol metadata */
	ch_buf assignment;   /* what the leader hands out in SyncGroup */
} member;

static void
member_init(member *m, int i)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->group, sizeof(m->group), "group-%d", i);
	snprintf(m->simple, sizeof(m->simple), "simple-%d", i);
	ch_buf_init(&m->subscription);
	ch_buf_init(&m->assignment);
	/* The consumer embedded protocol: a version, then the struct. */
	ch_str topics[1] = {ch_str_c(TOPIC)};
	ch_ConsumerProtocolSubscription s;
	ch_ConsumerProtocolSubscription_init(&s);
	s.Topics = topics;
	s.Topics_n = 1;
	s.UserData = CH_BYTES_NULL;
	ch_wr_i16(&m->subscription, 1);
	ch_ConsumerProtocolSubscription_encode(&m->subscription, 1, &s);
	int32_t parts[2] = {0, 1};
	ch_ConsumerProtocolAssignment_TopicPartition tp = {ch_str_c(TOPIC), parts, 2};
	ch_ConsumerProtocolAssignment as;
	ch_ConsumerProtocolAssignment_init(&as);
	as.AssignedPartitions = &tp;
	as.AssignedPartitions_n = 1;
	as.UserData = CH_BYTES_NULL;
	ch_wr_i16(&m->assignment, 1);
	ch_ConsumerProtocolAssignment_encode(&m->assignment, 1, &as);
}

static void
member_free(member *m)
{
	ch_buf_free(&m->subscription);
	ch_buf_free(&m->assignment);
}

/* A NUL-terminated copy of s in a. */
static const char *
arena_str(ch_arena *a, ch_str s)
{
	size_t n = s.len > 0 ? (size_t)s.len : 0;
	char *p = ch_arena_alloc(a, n + 1);
	if (n)
		memcpy(p, s.p, n);
	return p;
}

static bool
bytes_eq(ch_bytes b, const ch_buf *want)
{
	return b.len >= 0 && (size_t)b.len == want->len && memcmp(b.p, want->data, want->len) == 0;
}

static void
find_coordinator_step(tb *b, ch_arena *a, int16_t v, member *m)
{
	ch_broker *bk = &b->bk;
	ch_FindCoordinatorRequest q;
	ch_FindCoordinatorRequest_init(&q);
	ch_str keys[2] = {ch_str_c(m->group), ch_str_c(m->simple)};
	q.Key = keys[0];
	q.KeyType = 0;
	q.CoordinatorKeys = keys;
	q.CoordinatorKeys_n = 2;
	CALL(r, ch_FindCoordinatorResponse, b, a, CH_APIKEY_FIND_COORDINATOR, v, &q);
	if (v < 4) {
		CH_CHECK_EQ_INT(r->ErrorCode, CH_KERR_NONE);
		CH_CHECK_EQ_INT(r->NodeId, bk->node_id);
		CH_CHECK_STR(r->Host, bk->adv_host);
		CH_CHECK_EQ_INT(r->Port, bk->adv_port);
	} else {
		CH_CHECK_EQ_INT(r->Coordinators_n, 2);
		for (int32_t k = 0; k < r->Coordinators_n && k < 2; k++) {
			const ch_FindCoordinatorResponse_Coordinator *c = &r->Coordinators[k];
			CH_CHECK_STR(c->Key, keys[k].p);
			CH_CHECK_EQ_INT(c->ErrorCode, CH_KERR_NONE);
			CH_CHECK_EQ_INT(c->NodeId, bk->node_id);
			CH_CHECK_STR(c->Host, bk->adv_host);
			CH_CHECK_EQ_INT(c->Port, bk->adv_port);
		}
	}
	/* The lookup created __consumer_offsets, with the configured count. */
	const ch_topic *t = ch_topics_find(b->topics, "__consumer_offsets", 18);
	CH_CHECK(t && t->internal && t->partitions == 3);
	/* A transaction coordinator does not exist here. */
	if (v >= 1) {
		q.KeyType = 1;
		q.Key = ch_str_c("txn");
		q.CoordinatorKeys_n = 1;
		CALL(rt, ch_FindCoordinatorResponse, b, a, CH_APIKEY_FIND_COORDINATOR, v, &q);
		CH_CHECK(v < 4 ? rt->ErrorCode != 0
			       : rt->Coordinators_n == 1 && rt->Coordinators[0].ErrorCode != 0);
	}
}

static void
join_request(ch_JoinGroupRequest *q, ch_JoinGroupRequest_JoinGroupRequestProtocol *proto,
	     const member *m, const char *group, const char *member_id)
{
	flow_join_request(q, proto, group, member_id,
			  (ch_bytes){m->subscription.data, (int32_t)m->subscription.len});
	q->Reason = ch_str_c("api test");
}

static void
join_step(tb *b, ch_arena *a, int16_t v, member *m)
{
	ch_JoinGroupRequest q;
	ch_JoinGroupRequest_JoinGroupRequestProtocol proto;
	join_request(&q, &proto, m, m->group, "");
	const char *member_id = "";
	if (v >= 4) {
		/* KIP-394: a new member first gets its id, then joins with it. */
		CALL(r0, ch_JoinGroupResponse, b, a, CH_APIKEY_JOIN_GROUP, v, &q);
		CH_CHECK_EQ_INT(r0->ErrorCode, CH_KERR_MEMBER_ID_REQUIRED);
		CH_CHECK(r0->MemberId.len > 0);
		CH_CHECK_EQ_INT(r0->GenerationId, -1);
		member_id = arena_str(a, r0->MemberId);
		q.MemberId = ch_str_c(member_id);
	}
	CALL(r, ch_JoinGroupResponse, b, a, CH_APIKEY_JOIN_GROUP, v, &q);
	CH_CHECK_EQ_INT(r->ErrorCode, CH_KERR_NONE);
	CH_CHECK_EQ_INT(r->GenerationId, 1);
	CH_CHECK(r->MemberId.len > 0 && r->MemberId.len < (int32_t)sizeof(m->id));
	if (v >= 4)
		CH_CHECK_STR(r->MemberId, member_id);
	/* Kafka's member ids: client id, a dash, a UUID. */
	CH_CHECK(r->MemberId.len > 9 && memcmp(r->MemberId.p, "api-test-", 9) == 0);
	snprintf(m->id, sizeof(m->id), "%.*s", r->MemberId.len > 0 ? r->MemberId.len : 0,
		 r->MemberId.p);
	m->generation = r->GenerationId;
	CH_CHECK_STR(r->Leader, m->id);
	CH_CHECK_STR(r->ProtocolName, "range");
	if (v >= 7)
		CH_CHECK_STR(r->ProtocolType, "consumer");
	if (v >= 9)
		CH_CHECK(!r->SkipAssignment);
	/* The leader gets every member with its metadata. */
	CH_CHECK_EQ_INT(r->Members_n, 1);
	if (r->Members_n == 1) {
		CH_CHECK_STR(r->Members[0].MemberId, m->id);
		CH_CHECK(bytes_eq(r->Members[0].Metadata, &m->subscription));
		if (v >= 5)
			CH_CHECK(ch_str_is_null(r->Members[0].GroupInstanceId));
	}

	/* What Kafka refuses before a group is touched. */
	ch_JoinGroupRequest e;
	ch_JoinGroupRequest_JoinGroupRequestProtocol eproto;
	join_request(&e, &eproto, m, m->group, m->id);
	e.SessionTimeoutMs = 10; /* under group.min.session.timeout.ms */
	CALL(r1, ch_JoinGroupResponse, b, a, CH_APIKEY_JOIN_GROUP, v, &e);
	CH_CHECK_EQ_INT(r1->ErrorCode, CH_KERR_INVALID_SESSION_TIMEOUT);
	join_request(&e, &eproto, m, "", "");
	CALL(r2, ch_JoinGroupResponse, b, a, CH_APIKEY_JOIN_GROUP, v, &e);
	CH_CHECK_EQ_INT(r2->ErrorCode, CH_KERR_INVALID_GROUP_ID);
	join_request(&e, &eproto, m, m->group, "not-a-member");
	CALL(r3, ch_JoinGroupResponse, b, a, CH_APIKEY_JOIN_GROUP, v, &e);
	CH_CHECK_EQ_INT(r3->ErrorCode, CH_KERR_UNKNOWN_MEMBER_ID);
	join_request(&e, &eproto, m, m->group, "");
	e.Protocols_n = 0;
	CALL(r4, ch_JoinGroupResponse, b, a, CH_APIKEY_JOIN_GROUP, v, &e);
	CH_CHECK_EQ_INT(r4->ErrorCode, CH_KERR_INCONSISTENT_GROUP_PROTOCOL);
}

static void
sync_request(ch_SyncGroupRequest *q, ch_SyncGroupRequest_SyncGroupRequestAssignment *as,
	     const member *m)
{
	*as = (ch_SyncGroupRequest_SyncGroupRequestAssignment){
		ch_str_c(m->id), {m->assignment.data, (int32_t)m->assignment.len}};
	ch_SyncGroupRequest_init(q);
	q->GroupId = ch_str_c(m->group);
	q->GenerationId = m->generation;
	q->MemberId = ch_str_c(m->id);
	q->ProtocolType = ch_str_c("consumer");
	q->ProtocolName = ch_str_c("range");
	q->Assignments = as;
	q->Assignments_n = 1;
}

static void
sync_step(tb *b, ch_arena *a, int16_t v, member *m)
{
	ch_SyncGroupRequest q;
	ch_SyncGroupRequest_SyncGroupRequestAssignment as;
	sync_request(&q, &as, m);
	if (v >= 5) {
		/* KIP-559: the protocol must be the group's. */
		q.ProtocolName = ch_str_c("roundrobin");
		CALL(r0, ch_SyncGroupResponse, b, a, CH_APIKEY_SYNC_GROUP, v, &q);
		CH_CHECK_EQ_INT(r0->ErrorCode, CH_KERR_INCONSISTENT_GROUP_PROTOCOL);
		q.ProtocolName = ch_str_c("range");
	}
	q.GenerationId = m->generation + 1;
	CALL(r1, ch_SyncGroupResponse, b, a, CH_APIKEY_SYNC_GROUP, v, &q);
	CH_CHECK_EQ_INT(r1->ErrorCode, CH_KERR_ILLEGAL_GENERATION);
	q.GenerationId = m->generation;
	/* The leader's SyncGroup is answered once the assignment is stored. */
	CALL(r, ch_SyncGroupResponse, b, a, CH_APIKEY_SYNC_GROUP, v, &q);
	CH_CHECK_EQ_INT(r->ErrorCode, CH_KERR_NONE);
	CH_CHECK(bytes_eq(r->Assignment, &m->assignment));
	if (v >= 5) {
		CH_CHECK_STR(r->ProtocolType, "consumer");
		CH_CHECK_STR(r->ProtocolName, "range");
	}
}

static void
heartbeat_step(tb *b, ch_arena *a, int16_t v, member *m)
{
	ch_HeartbeatRequest q;
	ch_HeartbeatRequest_init(&q);
	q.GroupId = ch_str_c(m->group);
	q.GenerationId = m->generation;
	q.MemberId = ch_str_c(m->id);
	q.GroupInstanceId = CH_STR_NULL;
	CALL(r, ch_HeartbeatResponse, b, a, CH_APIKEY_HEARTBEAT, v, &q);
	CH_CHECK_EQ_INT(r->ErrorCode, CH_KERR_NONE);
	q.GenerationId = m->generation + 5;
	CALL(r1, ch_HeartbeatResponse, b, a, CH_APIKEY_HEARTBEAT, v, &q);
	CH_CHECK_EQ_INT(r1->ErrorCode, CH_KERR_ILLEGAL_GENERATION);
	q.GenerationId = m->generation;
	q.MemberId = ch_str_c("not-a-member");
	CALL(r2, ch_HeartbeatResponse, b, a, CH_APIKEY_HEARTBEAT, v, &q);
	CH_CHECK_EQ_INT(r2->ErrorCode, CH_KERR_UNKNOWN_MEMBER_ID);
	q.GroupId = ch_str_c("no-such-group");
	CALL(r3, ch_HeartbeatResponse, b, a, CH_APIKEY_HEARTBEAT, v, &q);
	CH_CHECK_EQ_INT(r3->ErrorCode, CH_KERR_UNKNOWN_MEMBER_ID);
}

/* OffsetCommit of TOPIC partition 0 (and 7, which does not exist). */
static ch_OffsetCommitResponse *
commit(tb *b, ch_arena *a, int16_t v, const char *group, int32_t generation, const char *member_id,
       int64_t offset, const char *metadata)
{
	ch_OffsetCommitRequest_OffsetCommitRequestPartition p[2];
	memset(p, 0, sizeof(p));
	p[0].PartitionIndex = 0;
	p[0].CommittedOffset = offset;
	p[0].CommittedLeaderEpoch = 4;
	p[0].CommitTimestamp = -1;
	p[0].CommittedMetadata = ch_str_c(metadata);
	p[1] = p[0];
	p[1].PartitionIndex = 7;
	ch_OffsetCommitRequest_OffsetCommitRequestTopic t = {ch_str_c(TOPIC), p, 2};
	ch_OffsetCommitRequest q;
	ch_OffsetCommitRequest_init(&q);
	q.GroupId = ch_str_c(group);
	q.GenerationIdOrMemberEpoch = generation;
	q.MemberId = ch_str_c(member_id);
	q.GroupInstanceId = CH_STR_NULL;
	q.RetentionTimeMs = -1;
	q.Topics = &t;
	q.Topics_n = 1;
	ch_OffsetCommitResponse *r = tb_call(b, CH_APIKEY_OFFSET_COMMIT, v, &q, a);
	CH_CHECK(r != NULL);
	if (r) {
		CH_CHECK(r->Topics_n == 1 && r->Topics[0].Partitions_n == 2);
		if (r->Topics_n == 1)
			CH_CHECK_STR(r->Topics[0].Name, TOPIC);
	}
	return r;
}

static int16_t
commit_error(const ch_OffsetCommitResponse *r, int k)
{
	if (!r || r->Topics_n != 1 || r->Topics[0].Partitions_n != 2)
		return -2;
	return r->Topics[0].Partitions[k].ErrorCode;
}

static void
commit_step(tb *b, ch_arena *a, int16_t v, member *m)
{
	if (v >= 1) {
		ch_OffsetCommitResponse *r =
			commit(b, a, v, m->group, m->generation, m->id, 42, "meta");
		CH_CHECK_EQ_INT(commit_error(r, 0), CH_KERR_NONE);
		CH_CHECK_EQ_INT(commit_error(r, 1), CH_KERR_UNKNOWN_TOPIC_OR_PARTITION);
		r = commit(b, a, v, m->group, m->generation + 1, m->id, 43, "");
		CH_CHECK_EQ_INT(commit_error(r, 0), CH_KERR_ILLEGAL_GENERATION);
		r = commit(b, a, v, m->group, m->generation, "not-a-member", 43, "");
		CH_CHECK_EQ_INT(commit_error(r, 0), CH_KERR_UNKNOWN_MEMBER_ID);
	}
	/* A group without members: commits with generation -1 are taken as
	 * they come (v0 carries no generation at all). */
	ch_OffsetCommitResponse *r = commit(b, a, v, m->simple, -1, "", 7, "simple");
	CH_CHECK_EQ_INT(commit_error(r, 0), CH_KERR_NONE);
	/* Metadata over offset.metadata.max.bytes (4096). */
	char *big = ch_arena_alloc(a, 5000);
	memset(big, 'm', 4999);
	r = commit(b, a, v, m->simple, -1, "", 8, big);
	CH_CHECK_EQ_INT(commit_error(r, 0), CH_KERR_OFFSET_METADATA_TOO_LARGE);
}

/* The committed offset of (group, TOPIC, partition) as OffsetFetch v says. */
typedef struct committed {
	int16_t error;
	int64_t offset;
	int32_t epoch;
	char metadata[16];
	bool metadata_null;
} committed;

static void
offset_fetch(tb *b, ch_arena *a, int16_t v, const char *group, committed out[2])
{
	out[0].error = out[1].error = -2;
	int32_t parts[2] = {0, 1};
	ch_OffsetFetchRequest_OffsetFetchRequestTopic t = {ch_str_c(TOPIC), parts, 2};
	ch_OffsetFetchRequest_OffsetFetchRequestTopics t8 = {ch_str_c(TOPIC), parts, 2};
	ch_OffsetFetchRequest_OffsetFetchRequestGroup g = {ch_str_c(group), CH_STR_NULL, -1, &t8,
							   1};
	ch_OffsetFetchRequest q;
	ch_OffsetFetchRequest_init(&q);
	q.GroupId = ch_str_c(group);
	q.Topics = &t;
	q.Topics_n = 1;
	q.Groups = &g;
	q.Groups_n = 1;
	CALL(r, ch_OffsetFetchResponse, b, a, CH_APIKEY_OFFSET_FETCH, v, &q);
	if (v >= 8) {
		CH_CHECK_EQ_INT(r->Groups_n, 1);
		if (r->Groups_n != 1)
			return;
		const ch_OffsetFetchResponse_OffsetFetchResponseGroup *rg = &r->Groups[0];
		CH_CHECK_STR(rg->GroupId, group);
		CH_CHECK_EQ_INT(rg->ErrorCode, 0);
		CH_CHECK(rg->Topics_n == 1 && rg->Topics[0].Partitions_n == 2);
		if (rg->Topics_n != 1 || rg->Topics[0].Partitions_n != 2)
			return;
		CH_CHECK_STR(rg->Topics[0].Name, TOPIC);
		for (int k = 0; k < 2; k++) {
			const ch_OffsetFetchResponse_OffsetFetchResponsePartitions *p =
				&rg->Topics[0].Partitions[k];
			CH_CHECK_EQ_INT(p->PartitionIndex, k);
			out[k] = (committed){p->ErrorCode, p->CommittedOffset,
					     p->CommittedLeaderEpoch, "",
					     ch_str_is_null(p->Metadata)};
			snprintf(out[k].metadata, sizeof(out[k].metadata), "%.*s",
				 p->Metadata.len > 0 ? p->Metadata.len : 0, p->Metadata.p);
		}
		return;
	}
	if (v >= 2)
		CH_CHECK_EQ_INT(r->ErrorCode, 0);
	CH_CHECK(r->Topics_n == 1 && r->Topics[0].Partitions_n == 2);
	if (r->Topics_n != 1 || r->Topics[0].Partitions_n != 2)
		return;
	CH_CHECK_STR(r->Topics[0].Name, TOPIC);
	for (int k = 0; k < 2; k++) {
		const ch_OffsetFetchResponse_OffsetFetchResponsePartition *p =
			&r->Topics[0].Partitions[k];
		CH_CHECK_EQ_INT(p->PartitionIndex, k);
		out[k] = (committed){p->ErrorCode, p->CommittedOffset,
				     v >= 5 ? p->CommittedLeaderEpoch : -1, "",
				     ch_str_is_null(p->Metadata)};
		snprintf(out[k].metadata, sizeof(out[k].metadata), "%.*s",
			 p->Metadata.len > 0 ? p->Metadata.len : 0, p->Metadata.p);
	}
}

static void
check_committed(const committed *c, int64_t offset, int32_t epoch, const char *metadata)
{
	CH_CHECK_EQ_INT(c->error, 0);
	CH_CHECK_EQ_INT(c->offset, offset);
	CH_CHECK_EQ_INT(c->epoch, epoch);
	CH_CHECK(!c->metadata_null);
	CH_CHECK_EQ_STR(c->metadata, metadata);
}

static void
offset_fetch_step(tb *b, ch_arena *a, int16_t v, int16_t commit_v, member *m)
{
	committed c[2];
	/* The leader epoch travels from OffsetCommit v6+ to OffsetFetch v5+. */
	int32_t epoch = commit_v >= 6 && v >= 5 ? 4 : -1;
	if (commit_v >= 1) {
		offset_fetch(b, a, v, m->group, c);
		check_committed(&c[0], 42, epoch, "meta");
		check_committed(&c[1], -1, -1, ""); /* never committed */
	}
	offset_fetch(b, a, v, m->simple, c);
	check_committed(&c[0], 7, epoch, "simple");
	offset_fetch(b, a, v, "no-such-group", c);
	check_committed(&c[0], -1, -1, "");
}

static void
describe_step(tb *b, ch_arena *a, int16_t v, member *m)
{
	const ch_DescribeGroupsResponse_DescribedGroup *g = flow_describe_group(b, a, v, m->group);
	if (g) {
		CH_CHECK_EQ_INT(g->ErrorCode, 0);
		CH_CHECK_STR(g->GroupState, "Stable");
		CH_CHECK_STR(g->ProtocolType, "consumer");
		CH_CHECK_STR(g->ProtocolData, "range");
		CH_CHECK_EQ_INT(g->Members_n, 1);
		if (g->Members_n == 1) {
			const ch_DescribeGroupsResponse_DescribedGroupMember *mm = &g->Members[0];
			CH_CHECK_STR(mm->MemberId, m->id);
			CH_CHECK_STR(mm->ClientId, "api-test");
			CH_CHECK_STR(mm->ClientHost, "/127.0.0.1");
			CH_CHECK(bytes_eq(mm->MemberMetadata, &m->subscription));
			CH_CHECK(bytes_eq(mm->MemberAssignment, &m->assignment));
			if (v >= 4)
				CH_CHECK(ch_str_is_null(mm->GroupInstanceId));
		}
		if (v >= 3)
			CH_CHECK(g->AuthorizedOperations != INT32_MIN &&
				 g->AuthorizedOperations != 0);
	}
	if (g && v >= 6)
		CH_CHECK(ch_str_is_null(g->ErrorMessage));
	/* Kafka describes an unknown group as Dead, without error up to v5;
	 * v6 (KIP-1043) answers GROUP_ID_NOT_FOUND with a message, still Dead. */
	g = flow_describe_group(b, a, v, "no-such-group");
	if (g) {
		CH_CHECK_EQ_INT(g->ErrorCode, v >= 6 ? CH_KERR_GROUP_ID_NOT_FOUND : 0);
		CH_CHECK_STR(g->GroupState, "Dead");
		CH_CHECK_EQ_INT(g->Members_n, 0);
		if (v >= 6)
			CH_CHECK_STR(g->ErrorMessage, "Group no-such-group not found.");
	}
}

static const ch_ListGroupsResponse_ListedGroup *
listed(const ch_ListGroupsResponse *r, const char *group)
{
	for (int32_t i = 0; i < r->Groups_n; i++)
		if (ch_str_eq_c(r->Groups[i].GroupId, group))
			return &r->Groups[i];
	return NULL;
}

static void
list_step(tb *b, ch_arena *a, int16_t v, member *m)
{
	ch_ListGroupsRequest q;
	ch_ListGroupsRequest_init(&q);
	CALL(r, ch_ListGroupsResponse, b, a, CH_APIKEY_LIST_GROUPS, v, &q);
	CH_CHECK_EQ_INT(r->ErrorCode, 0);
	const ch_ListGroupsResponse_ListedGroup *g = listed(r, m->group);
	CH_CHECK(g != NULL);
	if (g) {
		CH_CHECK_STR(g->ProtocolType, "consumer");
		if (v >= 4)
			CH_CHECK_STR(g->GroupState, "Stable");
		if (v >= 5)
			CH_CHECK_STR(g->GroupType, "classic");
	}
	const ch_ListGroupsResponse_ListedGroup *s = listed(r, m->simple);
	CH_CHECK(s != NULL);
	if (s) {
		CH_CHECK_STR(s->ProtocolType, "");
		if (v >= 4)
			CH_CHECK_STR(s->GroupState, "Empty");
	}
	/* KIP-518 (v4+) filters by state, KIP-848 (v5+) by type. */
	if (v >= 4) {
		ch_str states[1] = {ch_str_c("Empty")};
		q.StatesFilter = states;
		q.StatesFilter_n = 1;
		CALL(rf, ch_ListGroupsResponse, b, a, CH_APIKEY_LIST_GROUPS, v, &q);
		CH_CHECK(listed(rf, m->group) == NULL);
		CH_CHECK(listed(rf, m->simple) != NULL);
		q.StatesFilter_n = 0;
	}
	if (v >= 5) {
		ch_str types[1] = {ch_str_c("consumer")};
		q.TypesFilter = types;
		q.TypesFilter_n = 1;
		CALL(rt, ch_ListGroupsResponse, b, a, CH_APIKEY_LIST_GROUPS, v, &q);
		CH_CHECK_EQ_INT(rt->Groups_n, 0); /* every group here is classic */
	}
}

static ch_DeleteGroupsResponse *
delete_groups(tb *b, ch_arena *a, int16_t v, const char *group)
{
	ch_str names[1] = {ch_str_c(group)};
	ch_DeleteGroupsRequest q;
	ch_DeleteGroupsRequest_init(&q);
	q.GroupsNames = names;
	q.GroupsNames_n = 1;
	ch_DeleteGroupsResponse *r = tb_call(b, CH_APIKEY_DELETE_GROUPS, v, &q, a);
	CH_CHECK(r && r->Results_n == 1);
	if (!r || r->Results_n != 1)
		return NULL;
	CH_CHECK_STR(r->Results[0].GroupId, group);
	return r;
}

static int16_t
offset_delete(tb *b, ch_arena *a, const char *group, int16_t *top)
{
	ch_OffsetDeleteRequest_OffsetDeleteRequestPartition p = {0};
	ch_OffsetDeleteRequest_OffsetDeleteRequestTopic t = {ch_str_c(TOPIC), &p, 1};
	ch_OffsetDeleteRequest q;
	ch_OffsetDeleteRequest_init(&q);
	q.GroupId = ch_str_c(group);
	q.Topics = &t;
	q.Topics_n = 1;
	ch_OffsetDeleteResponse *r = tb_call(b, CH_APIKEY_OFFSET_DELETE, 0, &q, a);
	CH_CHECK(r != NULL);
	if (!r)
		return -2;
	*top = r->ErrorCode;
	if (r->ErrorCode)
		return -1;
	CH_CHECK(r->Topics_n == 1 && r->Topics[0].Partitions_n == 1);
	if (r->Topics_n != 1 || r->Topics[0].Partitions_n != 1)
		return -2;
	return r->Topics[0].Partitions[0].ErrorCode;
}

static void
leave_step(tb *b, ch_arena *a, int16_t v, int16_t dv, int16_t fv, int16_t cv, member *m)
{
	/* While the member lives: the group cannot go, nor the offsets of
	 * a topic it subscribes to. */
	ch_DeleteGroupsResponse *d = delete_groups(b, a, dv, m->group);
	if (d)
		CH_CHECK_EQ_INT(d->Results[0].ErrorCode, CH_KERR_NON_EMPTY_GROUP);
	int16_t top = 0;
	CH_CHECK_EQ_INT(offset_delete(b, a, m->group, &top), CH_KERR_GROUP_SUBSCRIBED_TO_TOPIC);

	ch_LeaveGroupRequest_MemberIdentity who[2] = {
		{ch_str_c(m->id), CH_STR_NULL, ch_str_c("done")},
		{ch_str_c("not-a-member"), CH_STR_NULL, CH_STR_NULL},
	};
	ch_LeaveGroupRequest q;
	ch_LeaveGroupRequest_init(&q);
	q.GroupId = ch_str_c(m->group);
	if (v < 3) {
		q.MemberId = ch_str_c("not-a-member");
		CALL(r0, ch_LeaveGroupResponse, b, a, CH_APIKEY_LEAVE_GROUP, v, &q);
		CH_CHECK_EQ_INT(r0->ErrorCode, CH_KERR_UNKNOWN_MEMBER_ID);
		q.MemberId = ch_str_c(m->id);
		CALL(r, ch_LeaveGroupResponse, b, a, CH_APIKEY_LEAVE_GROUP, v, &q);
		CH_CHECK_EQ_INT(r->ErrorCode, CH_KERR_NONE);
	} else {
		/* KIP-345: a batch of members, answered one by one. */
		q.Members = who;
		q.Members_n = 2;
		CALL(r, ch_LeaveGroupResponse, b, a, CH_APIKEY_LEAVE_GROUP, v, &q);
		CH_CHECK_EQ_INT(r->ErrorCode, CH_KERR_NONE);
		CH_CHECK_EQ_INT(r->Members_n, 2);
		if (r->Members_n == 2) {
			CH_CHECK_STR(r->Members[0].MemberId, m->id);
			CH_CHECK_EQ_INT(r->Members[0].ErrorCode, CH_KERR_NONE);
			CH_CHECK_STR(r->Members[1].MemberId, "not-a-member");
			CH_CHECK_EQ_INT(r->Members[1].ErrorCode, CH_KERR_UNKNOWN_MEMBER_ID);
		}
	}
	const ch_DescribeGroupsResponse_DescribedGroup *g =
		flow_describe_group(b, a, tb_version(CH_APIKEY_DESCRIBE_GROUPS, v), m->group);
	if (g) {
		CH_CHECK_STR(g->GroupState, "Empty");
		CH_CHECK_EQ_INT(g->Members_n, 0);
	}

	/* Now the offsets can go, then the group. */
	CH_CHECK_EQ_INT(offset_delete(b, a, m->group, &top), CH_KERR_NONE);
	committed c[2];
	if (cv >= 1) {
		offset_fetch(b, a, fv, m->group, c);
		CH_CHECK_EQ_INT(c[0].offset, -1);
	}
	CH_CHECK_EQ_INT(offset_delete(b, a, "no-such-group", &top), -1);
	CH_CHECK_EQ_INT(top, CH_KERR_GROUP_ID_NOT_FOUND);
	d = delete_groups(b, a, dv, m->group);
	if (d)
		CH_CHECK_EQ_INT(d->Results[0].ErrorCode, CH_KERR_NONE);
	d = delete_groups(b, a, dv, m->group);
	if (d)
		CH_CHECK_EQ_INT(d->Results[0].ErrorCode, CH_KERR_GROUP_ID_NOT_FOUND);
	/* The simple group goes with its offsets. */
	d = delete_groups(b, a, dv, m->simple);
	if (d)
		CH_CHECK_EQ_INT(d->Results[0].ErrorCode, CH_KERR_NONE);
	offset_fetch(b, a, fv, m->simple, c);
	CH_CHECK_EQ_INT(c[0].offset, -1);
}

static void
step(tb *b, int i)
{
	ch_arena a;
	ch_arena_init(&a);
	member m;
	member_init(&m, i);
	find_coordinator_step(b, &a, tb_version(CH_APIKEY_FIND_COORDINATOR, i), &m);
	join_step(b, &a, tb_version(CH_APIKEY_JOIN_GROUP, i), &m);
	if (m.id[0]) {
		sync_step(b, &a, tb_version(CH_APIKEY_SYNC_GROUP, i), &m);
		heartbeat_step(b, &a, tb_version(CH_APIKEY_HEARTBEAT, i), &m);
		commit_step(b, &a, tb_version(CH_APIKEY_OFFSET_COMMIT, i), &m);
		offset_fetch_step(b, &a, tb_version(CH_APIKEY_OFFSET_FETCH, i),
				  tb_version(CH_APIKEY_OFFSET_COMMIT, i), &m);
		describe_step(b, &a, tb_version(CH_APIKEY_DESCRIBE_GROUPS, i), &m);
		list_step(b, &a, tb_version(CH_APIKEY_LIST_GROUPS, i), &m);
		leave_step(b, &a, tb_version(CH_APIKEY_LEAVE_GROUP, i),
			   tb_version(CH_APIKEY_DELETE_GROUPS, i),
			   tb_version(CH_APIKEY_OFFSET_FETCH, i),
			   tb_version(CH_APIKEY_OFFSET_COMMIT, i), &m);
	}
	member_free(&m);
	ch_arena_reset(&a);
}

static void
t_groups_every_version(void)
{
	tb b;
	tb_open(&b, NULL, 0);
	tb_create_topic(&b, TOPIC, 2);
	int steps = tb_steps(family, CH_ARRAY_LEN(family));
	for (int i = 0; i < steps; i++)
		step(&b, i);
	printf("group family: %d steps, %zu requests\n", steps, b.n_reqs);
	CH_CHECK_EQ_INT(tb_close(&b), 0);
}

CH_TEST_MAIN(CH_TEST(t_groups_every_version))
