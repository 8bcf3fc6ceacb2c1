/*
 * api_flows.h: what the conversation tests (test_api_<family>.c) share on
 * top of api_harness.h. Each test file walks its API family through every
 * version: step i sends each API at tb_version(key, i).
 */
#ifndef API_FLOWS_H
#define API_FLOWS_H

#include "api_harness.h"
#include "common/ch_common.h"
#include "common/ch_test.h"
#include "proto/generated/ch_errors.h"
#include "proto/generated/ch_msgs.h"

/* Send `req` (a pointer to the request struct of `key`) at version v and
 * declare `var`, the decoded response of type `type`; a missing or bad
 * response fails the check and returns from the calling function (the
 * step), so the next step still runs. */
#define CALL(var, type, b, a, key, v, req)                                                         \
	type *var = tb_call((b), (key), (v), (req), (a));                                          \
	CH_CHECK(var != NULL);                                                                     \
	if (!var) {                                                                                \
		fprintf(stderr, "  in %s (%s:%d)\n", tb_name((key), (v)), __FILE__, __LINE__);     \
		return;                                                                            \
	}

/* A ch_str equals a C string (and is not null). */
#define CH_CHECK_STR(s, c)                                                                         \
	do {                                                                                       \
		ch_str s_ = (s);                                                                   \
		const char *c_ = (c);                                                              \
		bool eq_ = s_.len >= 0 && (size_t)s_.len == strlen(c_) &&                          \
			   memcmp(s_.p, c_, (size_t)s_.len) == 0;                                  \
		if (!eq_)                                                                          \
			fprintf(stderr, "  got \"%.*s\" (len %d), want \"%s\"\n",                  \
				s_.len > 0 ? s_.len : 0, s_.p ? s_.p : "", s_.len, c_);            \
		CH_CHECK(eq_);                                                                     \
	} while (0)

/* A JoinGroup of protocol type "consumer" with the one protocol "range"
 * (metadata as given), 30 s session and rebalance timeouts. */
static inline void
flow_join_request(ch_JoinGroupRequest *q, ch_JoinGroupRequest_JoinGroupRequestProtocol *proto,
		  const char *group, const char *member_id, ch_bytes metadata)
{
	*proto = (ch_JoinGroupRequest_JoinGroupRequestProtocol){ch_str_c("range"), metadata};
	ch_JoinGroupRequest_init(q);
	q->GroupId = ch_str_c(group);
	q->SessionTimeoutMs = 30000;
	q->RebalanceTimeoutMs = 30000;
	q->MemberId = ch_str_c(member_id);
	q->ProtocolType = ch_str_c("consumer");
	q->Protocols = proto;
	q->Protocols_n = 1;
}

/* DescribeGroups of one group at v (authorized operations asked); NULL,
 * after a failed check, unless the answer is that one group. */
static inline const ch_DescribeGroupsResponse_DescribedGroup *
flow_describe_group(tb *b, ch_arena *a, int16_t v, const char *group)
{
	ch_str groups[1] = {ch_str_c(group)};
	ch_DescribeGroupsRequest q;
	ch_DescribeGroupsRequest_init(&q);
	q.Groups = groups;
	q.Groups_n = 1;
	q.IncludeAuthorizedOperations = true;
	ch_DescribeGroupsResponse *r = tb_call(b, CH_APIKEY_DESCRIBE_GROUPS, v, &q, a);
	CH_CHECK(r && r->Groups_n == 1);
	if (!r || r->Groups_n != 1)
		return NULL;
	CH_CHECK_STR(r->Groups[0].GroupId, group);
	return &r->Groups[0];
}

/* OffsetCommit v9: offset 1 of partition 0 of each topic (at most 4) for a
 * group without members (generation -1, member ""); each topic's error in
 * errs (-2: not in the answer). */
static inline void
flow_commit_simple(tb *b, const char *group, const char *const *topics, int n, int16_t *errs)
{
	ch_arena a;
	ch_arena_init(&a);
	ch_OffsetCommitRequest_OffsetCommitRequestPartition p = {0, 1, -1, -1, CH_STR_LIT("")};
	ch_OffsetCommitRequest_OffsetCommitRequestTopic t[4];
	for (int k = 0; k < n; k++)
		t[k] = (ch_OffsetCommitRequest_OffsetCommitRequestTopic){ch_str_c(topics[k]), &p,
									 1};
	ch_OffsetCommitRequest q;
	ch_OffsetCommitRequest_init(&q);
	q.GroupId = ch_str_c(group);
	q.GenerationIdOrMemberEpoch = -1;
	q.MemberId = ch_str_c("");
	q.GroupInstanceId = CH_STR_NULL;
	q.Topics = t;
	q.Topics_n = n;
	ch_OffsetCommitResponse *r = tb_call(b, CH_APIKEY_OFFSET_COMMIT, 9, &q, &a);
	CH_CHECK(r && r->Topics_n == n);
	for (int k = 0; k < n; k++) {
		errs[k] = -2;
		for (int32_t j = 0; r && j < r->Topics_n; j++)
			if (ch_str_eq_c(r->Topics[j].Name, topics[k]) &&
			    r->Topics[j].Partitions_n == 1)
				errs[k] = r->Topics[j].Partitions[0].ErrorCode;
	}
	ch_arena_reset(&a);
}

#endif
