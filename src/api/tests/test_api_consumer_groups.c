/*
 * The consumer rebalance protocol's describe answers (KIP-848) at every
 * version, against a whole broker without sockets (api_harness.h). Step i
 * makes a consumer group of its own,
 *
 *   ConsumerGroupHeartbeat (join) -> ConsumerGroupDescribe -> DescribeGroups
 *   -> a classic member joins it (JoinGroup) -> ConsumerGroupDescribe,
 *
 * and describes an unknown group and a classic group both ways. What each
 * version adds:
 *   ConsumerGroupDescribe v1 (KIP-1099): each member's MemberType, 0 for a
 *     classic member (ConsumerGroupMember.useClassicProtocol), 1 for a
 *     consumer-protocol one; v0 has no such field.
 *   DescribeGroups v6 (KIP-1043): a group that is not a classic group is
 *     still Dead but GROUP_ID_NOT_FOUND, with the message of Kafka's
 *     GroupIdNotFoundException ("Group <id> not found." / "Group <id> is
 *     not a classic group."); up to v5 it is Dead without error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_flows.h"
#include "common/ch_common.h"
#include "proto/ch_wr.h"

static const int16_t family[] = {
	CH_APIKEY_CONSUMER_GROUP_HEARTBEAT,
	CH_APIKEY_CONSUMER_GROUP_DESCRIBE,
	CH_APIKEY_DESCRIBE_GROUPS,
};

#define TOPIC "orders"
#define CLASSIC_GROUP "classic-group"

/* ConsumerGroupHeartbeat's first request: joins `group` subscribed to TOPIC;
 * member_id gets the member's id (generated here from v1, by the
 * coordinator at v0). */
static void
cg_join(tb *b, ch_arena *a, int16_t v, const char *group, char *member_id, size_t cap)
{
	ch_str topics[1] = {ch_str_c(TOPIC)};
	ch_ConsumerGroupHeartbeatRequest q;
	ch_ConsumerGroupHeartbeatRequest_init(&q);
	q.GroupId = ch_str_c(group);
	snprintf(member_id, cap, "%s", v >= 1 ? "api-test-cg-member-0001" : "");
	q.MemberId = ch_str_c(member_id);
	q.MemberEpoch = 0;
	q.RebalanceTimeoutMs = 30000;
	q.SubscribedTopicNames = topics;
	q.SubscribedTopicNames_n = 1;
	q.TopicPartitions_n = 0;
	CALL(r, ch_ConsumerGroupHeartbeatResponse, b, a, CH_APIKEY_CONSUMER_GROUP_HEARTBEAT, v, &q);
	CH_CHECK_EQ_INT(r->ErrorCode, CH_KERR_NONE);
	CH_CHECK(r->MemberEpoch >= 1);
	CH_CHECK(r->MemberId.len > 0 && (size_t)r->MemberId.len < cap);
	if (v >= 1)
		CH_CHECK_STR(r->MemberId, member_id);
	snprintf(member_id, cap, "%.*s", r->MemberId.len > 0 ? r->MemberId.len : 0, r->MemberId.p);
}

/* ConsumerGroupDescribe of one group at v; NULL (after a failed check) if
 * the answer is not one group of that id. */
static const ch_ConsumerGroupDescribeResponse_DescribedGroup *
cg_describe(tb *b, ch_arena *a, int16_t v, const char *group)
{
	ch_str ids[1] = {ch_str_c(group)};
	ch_ConsumerGroupDescribeRequest q;
	ch_ConsumerGroupDescribeRequest_init(&q);
	q.GroupIds = ids;
	q.GroupIds_n = 1;
	ch_ConsumerGroupDescribeResponse *r =
		tb_call(b, CH_APIKEY_CONSUMER_GROUP_DESCRIBE, v, &q, a);
	CH_CHECK(r && r->Groups_n == 1);
	if (!r || r->Groups_n != 1)
		return NULL;
	CH_CHECK_STR(r->Groups[0].GroupId, group);
	return &r->Groups[0];
}

/* The member of g whose id is id, or NULL. */
static const ch_ConsumerGroupDescribeResponse_Member *
member_of(const ch_ConsumerGroupDescribeResponse_DescribedGroup *g, const char *id)
{
	for (int32_t i = 0; i < g->Members_n; i++)
		if (ch_str_eq_c(g->Members[i].MemberId, id))
			return &g->Members[i];
	return NULL;
}

/* A group that is not a classic group, described by DescribeGroups at v:
 * Dead, and from v6 GROUP_ID_NOT_FOUND with Kafka's message. */
static void
check_not_classic(tb *b, ch_arena *a, int16_t v, const char *group, const char *message)
{
	const ch_DescribeGroupsResponse_DescribedGroup *g = flow_describe_group(b, a, v, group);
	if (!g)
		return;
	CH_CHECK_STR(g->GroupState, "Dead");
	CH_CHECK_STR(g->ProtocolType, "");
	CH_CHECK_EQ_INT(g->Members_n, 0);
	if (v >= 6) {
		CH_CHECK_EQ_INT(g->ErrorCode, CH_KERR_GROUP_ID_NOT_FOUND);
		CH_CHECK_STR(g->ErrorMessage, message);
	} else {
		CH_CHECK_EQ_INT(g->ErrorCode, CH_KERR_NONE);
	}
}

/* A classic member (JoinGroup v9, the consumer protocol's metadata) joins
 * the consumer group: member_id gets its id. */
static void
classic_join(tb *b, ch_arena *a, const char *group, char *member_id, size_t cap)
{
	ch_str topics[1] = {ch_str_c(TOPIC)};
	ch_ConsumerProtocolSubscription s;
	ch_ConsumerProtocolSubscription_init(&s);
	s.Topics = topics;
	s.Topics_n = 1;
	s.UserData = CH_BYTES_NULL;
	ch_buf meta;
	ch_buf_init(&meta);
	ch_wr_i16(&meta, 1);
	ch_ConsumerProtocolSubscription_encode(&meta, 1, &s);
	ch_JoinGroupRequest_JoinGroupRequestProtocol proto;
	ch_JoinGroupRequest q;
	flow_join_request(&q, &proto, group, "", (ch_bytes){meta.data, (int32_t)meta.len});
	member_id[0] = 0;
	ch_JoinGroupResponse *r0 = tb_call(b, CH_APIKEY_JOIN_GROUP, 9, &q, a);
	CH_CHECK(r0 && r0->ErrorCode == CH_KERR_MEMBER_ID_REQUIRED);
	if (r0 && r0->MemberId.len > 0 && (size_t)r0->MemberId.len < cap) {
		snprintf(member_id, cap, "%.*s", r0->MemberId.len, r0->MemberId.p);
		q.MemberId = ch_str_c(member_id);
		ch_JoinGroupResponse *r = tb_call(b, CH_APIKEY_JOIN_GROUP, 9, &q, a);
		CH_CHECK(r && r->ErrorCode == CH_KERR_NONE);
		if (r)
			CH_CHECK_STR(r->MemberId, member_id);
	}
	ch_buf_free(&meta);
}

static void
step(tb *b, int i)
{
	ch_arena a;
	ch_arena_init(&a);
	int16_t hv = tb_version(CH_APIKEY_CONSUMER_GROUP_HEARTBEAT, i);
	int16_t cv = tb_version(CH_APIKEY_CONSUMER_GROUP_DESCRIBE, i);
	int16_t dv = tb_version(CH_APIKEY_DESCRIBE_GROUPS, i);
	char group[64], member[128], classic[160], msg[128];
	snprintf(group, sizeof(group), "cg-%d", i);
	cg_join(b, &a, hv, group, member, sizeof(member));

	const ch_ConsumerGroupDescribeResponse_DescribedGroup *g = cg_describe(b, &a, cv, group);
	if (g) {
		CH_CHECK_EQ_INT(g->ErrorCode, CH_KERR_NONE);
		CH_CHECK(ch_str_is_null(g->ErrorMessage));
		CH_CHECK_STR(g->GroupState, "Stable");
		CH_CHECK(g->GroupEpoch >= 1 && g->AssignmentEpoch == g->GroupEpoch);
		CH_CHECK_EQ_INT(g->Members_n, 1);
		const ch_ConsumerGroupDescribeResponse_Member *m = member_of(g, member);
		CH_CHECK(m != NULL);
		if (m) {
			CH_CHECK_EQ_INT(m->SubscribedTopicNames_n, 1);
			CH_CHECK_EQ_INT(m->TargetAssignment.TopicPartitions_n, 1);
			/* v0 has no MemberType: the decoder leaves its default */
			CH_CHECK_EQ_INT(m->MemberType, cv >= 1 ? 1 : -1);
		}
	}
	snprintf(msg, sizeof(msg), "Group %s is not a classic group.", group);
	check_not_classic(b, &a, dv, group, msg);
	check_not_classic(b, &a, dv, "no-such-group", "Group no-such-group not found.");

	/* A classic member in the consumer group: still not a classic group. */
	classic_join(b, &a, group, classic, sizeof(classic));
	g = cg_describe(b, &a, cv, group);
	if (g && classic[0]) {
		CH_CHECK_EQ_INT(g->ErrorCode, CH_KERR_NONE);
		CH_CHECK_EQ_INT(g->Members_n, 2);
		const ch_ConsumerGroupDescribeResponse_Member *c = member_of(g, classic);
		const ch_ConsumerGroupDescribeResponse_Member *m = member_of(g, member);
		CH_CHECK(c != NULL && m != NULL);
		if (c && m) {
			CH_CHECK_EQ_INT(c->MemberType, cv >= 1 ? 0 : -1);
			CH_CHECK_EQ_INT(m->MemberType, cv >= 1 ? 1 : -1);
		}
	}
	check_not_classic(b, &a, dv, group, msg);

	/* ConsumerGroupDescribe of groups that are not consumer groups. */
	g = cg_describe(b, &a, cv, "no-such-group");
	if (g) {
		CH_CHECK_EQ_INT(g->ErrorCode, CH_KERR_GROUP_ID_NOT_FOUND);
		CH_CHECK_STR(g->ErrorMessage, "Group no-such-group not found.");
	}
	g = cg_describe(b, &a, cv, CLASSIC_GROUP);
	if (g) {
		CH_CHECK_EQ_INT(g->ErrorCode, CH_KERR_GROUP_ID_NOT_FOUND);
		CH_CHECK_STR(g->ErrorMessage, "Group " CLASSIC_GROUP " is not a consumer group.");
	}
	ch_arena_reset(&a);
}

static void
t_consumer_groups_every_version(void)
{
	tb b;
	tb_open(&b, NULL, 0);
	tb_create_topic(&b, TOPIC, 2);
	/* A classic group with a member, for ConsumerGroupDescribe to refuse. */
	ch_arena a;
	ch_arena_init(&a);
	char id[160];
	classic_join(&b, &a, CLASSIC_GROUP, id, sizeof(id));
	ch_arena_reset(&a);
	int steps = tb_steps(family, CH_ARRAY_LEN(family));
	for (int i = 0; i < steps; i++)
		step(&b, i);
	printf("consumer group family: %d steps, %zu requests\n", steps, b.n_reqs);
	CH_CHECK_EQ_INT(tb_close(&b), 0);
}

/* A heartbeat of member at epoch, subscribed to TOPIC, owning n partitions
 * of topic id (n < 0: owned null); the answer, NULL after a failed check. */
static const ch_ConsumerGroupHeartbeatResponse *
cg_beat(tb *b, ch_arena *a, const char *group, const char *member, int32_t epoch, const ch_uuid *id,
	const int32_t *parts, int32_t n)
{
	ch_str topics[1] = {ch_str_c(TOPIC)};
	ch_ConsumerGroupHeartbeatRequest_TopicPartitions tp = {*id, (int32_t *)parts, n};
	ch_ConsumerGroupHeartbeatRequest q;
	ch_ConsumerGroupHeartbeatRequest_init(&q);
	q.GroupId = ch_str_c(group);
	q.MemberId = ch_str_c(member);
	q.MemberEpoch = epoch;
	q.RebalanceTimeoutMs = 30000;
	q.SubscribedTopicNames = topics;
	q.SubscribedTopicNames_n = 1;
	q.TopicPartitions = &tp;
	q.TopicPartitions_n = n < 0 ? -1 : n > 0;
	ch_ConsumerGroupHeartbeatResponse *r =
		tb_call(b, CH_APIKEY_CONSUMER_GROUP_HEARTBEAT, 1, &q, a);
	CH_CHECK(r && r->ErrorCode == CH_KERR_NONE);
	return r && r->ErrorCode == CH_KERR_NONE ? r : NULL;
}

/* What conformance_kafka found Kafka 4.4 to answer: a new group's first
 * target is epoch 2 (groups start at 1, KAFKA-20268); a member that must
 * give a partition up is described holding it until it has (assigned and
 * pending revocation); a member without a regex has ""; the last member's
 * leave brings the assignment epoch to the group epoch (KAFKA-20442); an
 * empty classic group (a simple consumer's commits) is "not a consumer
 * group"; an empty id is INVALID_GROUP_ID without a message. */
static void
t_describe_as_kafka44(void)
{
	tb b;
	tb_open(&b, NULL, 0);
	const ch_topic *t = tb_create_topic(&b, TOPIC, 2);
	ch_arena a;
	ch_arena_init(&a);
	/* a client's first request: the lookup creates __consumer_offsets */
	ch_str key = CH_STR_LIT("g44");
	ch_FindCoordinatorRequest fq;
	ch_FindCoordinatorRequest_init(&fq);
	fq.KeyType = 0;
	fq.CoordinatorKeys = &key;
	fq.CoordinatorKeys_n = 1;
	ch_FindCoordinatorResponse *fr = tb_call(&b, CH_APIKEY_FIND_COORDINATOR, 4, &fq, &a);
	CH_CHECK(fr && fr->Coordinators_n == 1 && fr->Coordinators[0].ErrorCode == 0);
	int32_t both[2] = {0, 1};
	const ch_ConsumerGroupHeartbeatResponse *r =
		cg_beat(&b, &a, "g44", "m1", 0, &t->id, both, 0);
	CH_CHECK(r && r->MemberEpoch == 2 && r->Assignment);
	r = cg_beat(&b, &a, "g44", "m1", 2, &t->id, both, 2);
	r = cg_beat(&b, &a, "g44", "m2", 0, &t->id, both, 0);
	CH_CHECK(r && r->MemberEpoch == 3);
	r = cg_beat(&b, &a, "g44", "m1", 2, &t->id, both, 2); /* told to give one up */
	CH_CHECK(r && r->MemberEpoch == 2 && r->Assignment &&
		 r->Assignment->TopicPartitions_n == 1 &&
		 r->Assignment->TopicPartitions[0].Partitions_n == 1);
	const ch_ConsumerGroupDescribeResponse_DescribedGroup *g = cg_describe(&b, &a, 1, "g44");
	if (g) {
		CH_CHECK_EQ_INT(g->GroupEpoch, 3);
		CH_CHECK_EQ_INT(g->AssignmentEpoch, 3);
		const ch_ConsumerGroupDescribeResponse_Member *m = member_of(g, "m1");
		CH_CHECK(m != NULL);
		if (m) {
			CH_CHECK_STR(m->SubscribedTopicRegex, "");
			CH_CHECK_EQ_INT(m->MemberEpoch, 2);
			CH_CHECK(m->Assignment.TopicPartitions_n == 1 &&
				 m->Assignment.TopicPartitions[0].Partitions_n == 2);
			CH_CHECK(m->TargetAssignment.TopicPartitions_n == 1 &&
				 m->TargetAssignment.TopicPartitions[0].Partitions_n == 1);
		}
	}
	/* both leave: an empty group's epochs match */
	ch_ConsumerGroupHeartbeatRequest q;
	ch_ConsumerGroupHeartbeatRequest_init(&q);
	q.GroupId = ch_str_c("g44");
	q.MemberEpoch = -1;
	const char *const members[] = {"m1", "m2"};
	for (int k = 0; k < 2; k++) {
		q.MemberId = ch_str_c(members[k]);
		ch_ConsumerGroupHeartbeatResponse *lr =
			tb_call(&b, CH_APIKEY_CONSUMER_GROUP_HEARTBEAT, 1, &q, &a);
		CH_CHECK(lr && lr->ErrorCode == CH_KERR_NONE && lr->MemberEpoch == -1);
	}
	g = cg_describe(&b, &a, 1, "g44");
	if (g) {
		CH_CHECK_STR(g->GroupState, "Empty");
		CH_CHECK_EQ_INT(g->GroupEpoch, 5);
		CH_CHECK_EQ_INT(g->AssignmentEpoch, 5);
	}
	q.GroupId = ch_str_c("nope");
	ch_ConsumerGroupHeartbeatResponse *lr =
		tb_call(&b, CH_APIKEY_CONSUMER_GROUP_HEARTBEAT, 1, &q, &a);
	CH_CHECK(lr && lr->ErrorCode == CH_KERR_GROUP_ID_NOT_FOUND);
	if (lr)
		CH_CHECK_STR(lr->ErrorMessage, "Group nope not found.");

	/* a simple consumer's group, and an empty id */
	const char *const topics[] = {TOPIC};
	int16_t err = 0;
	flow_commit_simple(&b, "simple", topics, 1, &err);
	CH_CHECK_EQ_INT(err, CH_KERR_NONE);
	g = cg_describe(&b, &a, 1, "simple");
	if (g) {
		CH_CHECK_EQ_INT(g->ErrorCode, CH_KERR_GROUP_ID_NOT_FOUND);
		CH_CHECK_STR(g->ErrorMessage, "Group simple is not a consumer group.");
	}
	q.GroupId = ch_str_c("simple");
	q.MemberId = ch_str_c("m1");
	q.MemberEpoch = 3;
	lr = tb_call(&b, CH_APIKEY_CONSUMER_GROUP_HEARTBEAT, 1, &q, &a);
	CH_CHECK(lr && lr->ErrorCode == CH_KERR_GROUP_ID_NOT_FOUND);
	if (lr)
		CH_CHECK_STR(lr->ErrorMessage, "Group simple is not a consumer group.");
	g = cg_describe(&b, &a, 0, "");
	if (g) {
		CH_CHECK_EQ_INT(g->ErrorCode, CH_KERR_INVALID_GROUP_ID);
		CH_CHECK(ch_str_is_null(g->ErrorMessage));
	}
	ch_arena_reset(&a);
	CH_CHECK_EQ_INT(tb_close(&b), 0);
}

CH_TEST_MAIN(CH_TEST(t_consumer_groups_every_version), CH_TEST(t_describe_as_kafka44))
