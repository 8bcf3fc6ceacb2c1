/*
 * ch_api_group_authz.c: the group APIs' ACL checks, made where Kafka's
 * KafkaApis makes them, before the coordinator core sees the request:
 *
 *   JoinGroup, SyncGroup, Heartbeat, LeaveGroup   READ on the group, else the
 *                                                 whole answer is GROUP_AUTHORIZATION_FAILED
 *   OffsetCommit     READ on the group (every partition fails), READ on each
 *                    topic (its partitions TOPIC_AUTHORIZATION_FAILED)
 *   OffsetFetch      DESCRIBE on each group; a listed topic without DESCRIBE
 *                    TOPIC_AUTHORIZATION_FAILED, all-topics answers drop it
 *   DescribeGroups   DESCRIBE on each group; authorized operations from the ACLs
 *   ListGroups       every group with DESCRIBE on the cluster, else those with
 *                    DESCRIBE on the group
 *   DeleteGroups     DELETE on each group
 *   OffsetDelete     DELETE on the group, READ on each topic
 *
 * Denied entries are taken out of the request; what they answer is merged
 * into the core's response by req->finish (in ch_api_send), in Kafka's
 * order. Nothing here runs without an authorizer.
 */
#include <stddef.h>
#include <string.h>

#include "api/ch_api.h"
#include "broker/ch_broker.h"
#include "common/ch_common.h"
#include "proto/ch_acl.h"
#include "proto/generated/ch_errors.h"

#define GROUP_DENIED CH_KERR_GROUP_AUTHORIZATION_FAILED
#define TOPIC_DENIED CH_KERR_TOPIC_AUTHORIZATION_FAILED

/* What the finish step needs: the request as the client sent it. */
typedef struct group_authz {
	const void *orig; /* a copy of the original request body */
	bool *denied;     /* per entry of the original's list (groups or topics) */
	int32_t n;
} group_authz;

static bool
group_ok(ch_req *req, int op, ch_str group)
{
	return ch_api_allowed_str(req, op, CH_RES_GROUP, group);
}

static bool
topic_ok(ch_req *req, int op, ch_str topic)
{
	return ch_api_allowed_str(req, op, CH_RES_TOPIC, topic);
}

static group_authz *
keep_original(ch_req *req, size_t body_size, int32_t n)
{
	group_authz *z = ch_req_alloc(req, sizeof(*z));
	void *copy = ch_req_alloc(req, body_size);
	memcpy(copy, req->body, body_size);
	z->orig = copy;
	z->n = n;
	z->denied = CH_REQ_NEW_ARRAY(req, bool, n + 1);
	req->finish_ud = z;
	return z;
}

/* Takes the groups op is denied on out of the request's list (*names,
 * *n: a field of req->body), remembering the original body; the caller
 * sets req->finish to answer them. */
static void
drop_denied_groups(ch_req *req, size_t body_size, int op, ch_str **names, int32_t *n)
{
	int32_t cnt = *n > 0 ? *n : 0;
	group_authz *z = keep_original(req, body_size, cnt);
	ch_str *kept = CH_REQ_NEW_ARRAY(req, ch_str, cnt + 1);
	int32_t nk = 0;
	for (int32_t k = 0; k < cnt; k++) {
		z->denied[k] = !group_ok(req, op, (*names)[k]);
		if (!z->denied[k])
			kept[nk++] = (*names)[k];
	}
	*names = kept;
	*n = nk;
}

/* ---- whole-request refusals (Kafka's getErrorResponse) --------------------- */

static void
refuse_join(ch_req *req)
{
	ch_JoinGroupResponse r;
	ch_JoinGroupResponse_init(&r);
	r.ErrorCode = GROUP_DENIED;
	r.GenerationId = -1;
	r.ProtocolName = req->version >= 7 ? CH_STR_NULL : CH_STR_LIT("");
	r.Leader = CH_STR_LIT("");
	r.MemberId = CH_STR_LIT("");
	r.Members_n = 0;
	ch_api_send(req, &r);
}

static void
refuse_sync(ch_req *req)
{
	ch_SyncGroupResponse r;
	ch_SyncGroupResponse_init(&r);
	r.ErrorCode = GROUP_DENIED;
	r.Assignment = (ch_bytes){(const uint8_t *)"", 0};
	ch_api_send(req, &r);
}

static void
refuse_heartbeat(ch_req *req)
{
	ch_HeartbeatResponse r;
	ch_HeartbeatResponse_init(&r);
	r.ErrorCode = GROUP_DENIED;
	ch_api_send(req, &r);
}

static void
refuse_leave(ch_req *req)
{
	ch_LeaveGroupResponse r;
	ch_LeaveGroupResponse_init(&r);
	r.ErrorCode = GROUP_DENIED;
	r.Members_n = 0;
	ch_api_send(req, &r);
}

/* ---- OffsetCommit ------------------------------------------------------------- */

/* The answer for topics[k] with every partition failing with err. */
static void
commit_topic_error(ch_req *req, const ch_OffsetCommitRequest_OffsetCommitRequestTopic *t,
		   int16_t err, ch_OffsetCommitResponse_OffsetCommitResponseTopic *out)
{
	out->Name = t->Name;
	int32_t np = t->Partitions_n > 0 ? t->Partitions_n : 0;
	out->Partitions = CH_REQ_NEW_ARRAY(
		req, ch_OffsetCommitResponse_OffsetCommitResponsePartition, np + 1);
	out->Partitions_n = np;
	for (int32_t p = 0; p < np; p++) {
		out->Partitions[p].PartitionIndex = t->Partitions[p].PartitionIndex;
		out->Partitions[p].ErrorCode = err;
	}
}

/* The denied topics first, then the core's (Kafka's OffsetCommitResponse.Builder). */
static const void *
commit_finish(ch_req *req, const void *resp)
{
	const group_authz *z = req->finish_ud;
	const ch_OffsetCommitRequest *orig = z->orig;
	const ch_OffsetCommitResponse *core = resp;
	ch_OffsetCommitResponse *r = ch_req_alloc(req, sizeof(*r));
	*r = *core;
	int32_t nc = core->Topics_n > 0 ? core->Topics_n : 0;
	r->Topics = CH_REQ_NEW_ARRAY(req, ch_OffsetCommitResponse_OffsetCommitResponseTopic,
				     z->n + nc + 1);
	r->Topics_n = 0;
	for (int32_t k = 0; k < z->n; k++)
		if (z->denied[k])
			commit_topic_error(req, &orig->Topics[k], TOPIC_DENIED,
					   &r->Topics[r->Topics_n++]);
	for (int32_t k = 0; k < nc; k++)
		r->Topics[r->Topics_n++] = core->Topics[k];
	return r;
}

/* true: answered. */
static bool
authorize_commit(ch_req *req)
{
	ch_OffsetCommitRequest *rq = req->body;
	int32_t n = rq->Topics_n > 0 ? rq->Topics_n : 0;
	bool group = group_ok(req, CH_ACL_READ, rq->GroupId);
	group_authz *z = keep_original(req, sizeof(*rq), n);
	int32_t kept = 0, denied = 0;
	for (int32_t k = 0; k < n; k++) {
		z->denied[k] = group && !topic_ok(req, CH_ACL_READ, rq->Topics[k].Name);
		denied += z->denied[k];
	}
	if (!group || denied == n) {
		/* Nothing for the core: every partition answers here. */
		ch_OffsetCommitResponse r;
		ch_OffsetCommitResponse_init(&r);
		r.Topics = CH_REQ_NEW_ARRAY(req, ch_OffsetCommitResponse_OffsetCommitResponseTopic,
					    n + 1);
		r.Topics_n = n;
		for (int32_t k = 0; k < n; k++)
			commit_topic_error(req, &rq->Topics[k], group ? TOPIC_DENIED : GROUP_DENIED,
					   &r.Topics[k]);
		ch_api_send(req, &r);
		return true;
	}
	if (!denied)
		return false;
	ch_OffsetCommitRequest_OffsetCommitRequestTopic *t =
		CH_REQ_NEW_ARRAY(req, ch_OffsetCommitRequest_OffsetCommitRequestTopic, n);
	for (int32_t k = 0; k < n; k++)
		if (!z->denied[k])
			t[kept++] = rq->Topics[k];
	rq->Topics = t;
	rq->Topics_n = kept;
	req->finish = commit_finish;
	return false;
}

/* ---- OffsetFetch ------------------------------------------------------------ */

/* v0-7 and v8+ name their topic structs apart; the layouts are the same, so
 * one group-shaped walk serves both (checked here). */
_Static_assert(sizeof(ch_OffsetFetchRequest_OffsetFetchRequestTopic) ==
		       sizeof(ch_OffsetFetchRequest_OffsetFetchRequestTopics),
	       "OffsetFetch request topic layouts");
_Static_assert(sizeof(ch_OffsetFetchResponse_OffsetFetchResponseTopic) ==
			       sizeof(ch_OffsetFetchResponse_OffsetFetchResponseTopics) &&
		       sizeof(ch_OffsetFetchResponse_OffsetFetchResponsePartition) ==
			       sizeof(ch_OffsetFetchResponse_OffsetFetchResponsePartitions),
	       "OffsetFetch response topic layouts");
_Static_assert(offsetof(ch_OffsetFetchResponse_OffsetFetchResponsePartition, ErrorCode) ==
			       offsetof(ch_OffsetFetchResponse_OffsetFetchResponsePartitions,
					ErrorCode) &&
		       offsetof(ch_OffsetFetchResponse_OffsetFetchResponsePartition, Metadata) ==
			       offsetof(ch_OffsetFetchResponse_OffsetFetchResponsePartitions,
					Metadata),
	       "OffsetFetch response partition layouts");

typedef ch_OffsetFetchRequest_OffsetFetchRequestTopics fetch_rq_topic;
typedef ch_OffsetFetchResponse_OffsetFetchResponseTopics fetch_topic;
typedef ch_OffsetFetchResponse_OffsetFetchResponsePartitions fetch_part;

/* One group's topics as the request names them (NULL / -1: all). */
typedef struct fetch_group_rq {
	ch_str group;
	fetch_rq_topic *topics;
	int32_t n; /* -1: all topics */
} fetch_group_rq;

typedef struct fetch_authz {
	bool group_denied;
	bool *topic_denied; /* per requested topic */
} fetch_authz;

/* Decides one group; takes its denied topics out of *g (a copy in the arena). */
static void
fetch_authorize_group(ch_req *req, fetch_group_rq *g, fetch_authz *a)
{
	a->group_denied = !group_ok(req, CH_ACL_DESCRIBE, g->group);
	a->topic_denied = CH_REQ_NEW_ARRAY(req, bool, (g->n > 0 ? g->n : 0) + 1);
	if (a->group_denied || g->n <= 0)
		return;
	fetch_rq_topic *kept = CH_REQ_NEW_ARRAY(req, fetch_rq_topic, g->n);
	int32_t nk = 0;
	for (int32_t k = 0; k < g->n; k++) {
		a->topic_denied[k] = !topic_ok(req, CH_ACL_DESCRIBE, g->topics[k].Name);
		if (!a->topic_denied[k])
			kept[nk++] = g->topics[k];
	}
	g->topics = kept;
	g->n = nk;
}

/* A group's answer with the denied topics merged in (listed: each partition
 * TOPIC_AUTHORIZATION_FAILED, after the core's; all topics: the ones
 * without DESCRIBE dropped). */
static void
fetch_finish_group(ch_req *req, const fetch_group_rq *orig, const fetch_authz *a,
		   fetch_topic **topics, int32_t *n, int16_t group_err)
{
	int32_t nc = *n > 0 ? *n : 0;
	if (group_err)
		return;
	if (orig->n < 0) {
		fetch_topic *kept = CH_REQ_NEW_ARRAY(req, fetch_topic, nc + 1);
		int32_t nk = 0;
		for (int32_t k = 0; k < nc; k++)
			if (topic_ok(req, CH_ACL_DESCRIBE, (*topics)[k].Name))
				kept[nk++] = (*topics)[k];
		*topics = kept;
		*n = nk;
		return;
	}
	fetch_topic *all = CH_REQ_NEW_ARRAY(req, fetch_topic, nc + orig->n + 1);
	memcpy(all, *topics, sizeof(*all) * (size_t)nc);
	int32_t m = nc;
	for (int32_t k = 0; k < orig->n; k++) {
		if (!a->topic_denied[k])
			continue;
		const fetch_rq_topic *t = &orig->topics[k];
		fetch_topic *o = &all[m++];
		o->Name = t->Name;
		int32_t np = t->PartitionIndexes_n > 0 ? t->PartitionIndexes_n : 0;
		o->Partitions = CH_REQ_NEW_ARRAY(req, fetch_part, np + 1);
		o->Partitions_n = np;
		for (int32_t p = 0; p < np; p++) {
			o->Partitions[p].PartitionIndex = t->PartitionIndexes[p];
			o->Partitions[p].CommittedOffset = -1;
			o->Partitions[p].CommittedLeaderEpoch = -1;
			o->Partitions[p].Metadata = CH_STR_LIT("");
			o->Partitions[p].ErrorCode = TOPIC_DENIED;
		}
	}
	*topics = all;
	*n = m;
}

typedef struct fetch_state {
	fetch_group_rq *orig; /* per original group */
	fetch_authz *authz;
	int32_t n;
} fetch_state;

static const void *
fetch_finish(ch_req *req, const void *resp)
{
	const fetch_state *st = req->finish_ud;
	ch_OffsetFetchResponse *r = ch_req_alloc(req, sizeof(*r));
	*r = *(const ch_OffsetFetchResponse *)resp;
	if (req->version < 8) {
		if (st->authz[0].group_denied) {
			/* v0-1 have no top-level error: nothing is listed then */
			r->ErrorCode = GROUP_DENIED;
			r->Topics_n = 0;
			return r;
		}
		fetch_topic *t = (fetch_topic *)r->Topics;
		fetch_finish_group(req, &st->orig[0], &st->authz[0], &t, &r->Topics_n,
				   r->ErrorCode);
		r->Topics = (ch_OffsetFetchResponse_OffsetFetchResponseTopic *)t;
		return r;
	}
	/* The core answered the allowed groups in order; the denied ones go
	 * back to their places. */
	ch_OffsetFetchResponse_OffsetFetchResponseGroup *g =
		CH_REQ_NEW_ARRAY(req, ch_OffsetFetchResponse_OffsetFetchResponseGroup, st->n + 1);
	int32_t c = 0;
	for (int32_t i = 0; i < st->n; i++) {
		if (st->authz[i].group_denied || c >= r->Groups_n) {
			g[i].GroupId = st->orig[i].group;
			g[i].ErrorCode = GROUP_DENIED;
			g[i].Topics_n = 0;
			continue;
		}
		g[i] = r->Groups[c++];
		fetch_finish_group(req, &st->orig[i], &st->authz[i], &g[i].Topics, &g[i].Topics_n,
				   g[i].ErrorCode);
	}
	r->Groups = g;
	r->Groups_n = st->n;
	return r;
}

/* true: answered. */
static bool
authorize_fetch(ch_req *req)
{
	ch_OffsetFetchRequest *rq = req->body;
	fetch_state *st = ch_req_alloc(req, sizeof(*st));
	req->finish_ud = st;
	req->finish = fetch_finish;
	if (req->version < 8) {
		st->n = 1;
		st->orig = ch_req_alloc(req, sizeof(*st->orig));
		st->authz = ch_req_alloc(req, sizeof(*st->authz));
		fetch_group_rq g = {rq->GroupId, (fetch_rq_topic *)rq->Topics,
				    rq->Topics_n < 0 ? -1 : rq->Topics_n};
		st->orig[0] = g;
		fetch_authorize_group(req, &g, &st->authz[0]);
		if (st->authz[0].group_denied) {
			ch_OffsetFetchResponse r;
			ch_OffsetFetchResponse_init(&r);
			r.Topics_n = 0;
			r.Groups_n = 0;
			ch_api_send(req, &r); /* fetch_finish fills the error in */
			return true;
		}
		rq->Topics = (ch_OffsetFetchRequest_OffsetFetchRequestTopic *)g.topics;
		rq->Topics_n = g.n;
		return false;
	}
	int32_t n = rq->Groups_n > 0 ? rq->Groups_n : 0;
	st->n = n;
	st->orig = CH_REQ_NEW_ARRAY(req, fetch_group_rq, n + 1);
	st->authz = CH_REQ_NEW_ARRAY(req, fetch_authz, n + 1);
	ch_OffsetFetchRequest_OffsetFetchRequestGroup *kept =
		CH_REQ_NEW_ARRAY(req, ch_OffsetFetchRequest_OffsetFetchRequestGroup, n + 1);
	int32_t nk = 0;
	for (int32_t i = 0; i < n; i++) {
		ch_OffsetFetchRequest_OffsetFetchRequestGroup *rg = &rq->Groups[i];
		fetch_group_rq g = {rg->GroupId, rg->Topics, rg->Topics_n < 0 ? -1 : rg->Topics_n};
		st->orig[i] = g;
		fetch_authorize_group(req, &g, &st->authz[i]);
		if (st->authz[i].group_denied)
			continue;
		kept[nk] = *rg;
		kept[nk].Topics = g.topics;
		kept[nk].Topics_n = g.n;
		nk++;
	}
	rq->Groups = kept;
	rq->Groups_n = nk;
	return false;
}

/* ---- DescribeGroups, ListGroups, DeleteGroups -------------------------------- */

/* Denied groups first (DescribeGroupsResponse.groupError), then the core's,
 * whose authorized operations come from the ACLs. */
static const void *
describe_finish(ch_req *req, const void *resp)
{
	const group_authz *z = req->finish_ud;
	const ch_DescribeGroupsRequest *orig = z->orig;
	ch_DescribeGroupsResponse *r = ch_req_alloc(req, sizeof(*r));
	*r = *(const ch_DescribeGroupsResponse *)resp;
	int32_t nc = r->Groups_n > 0 ? r->Groups_n : 0;
	ch_DescribeGroupsResponse_DescribedGroup *g =
		CH_REQ_NEW_ARRAY(req, ch_DescribeGroupsResponse_DescribedGroup, z->n + nc + 1);
	int32_t m = 0;
	for (int32_t k = 0; k < z->n; k++) {
		if (!z->denied[k])
			continue;
		ch_DescribeGroupsResponse_DescribedGroup *d = &g[m++];
		d->ErrorCode = GROUP_DENIED;
		d->ErrorMessage = CH_STR_NULL;
		d->GroupId = orig->Groups[k];
		d->GroupState = CH_STR_LIT("");
		d->ProtocolType = CH_STR_LIT("");
		d->ProtocolData = CH_STR_LIT("");
		d->Members_n = 0;
		d->AuthorizedOperations = INT32_MIN;
	}
	for (int32_t k = 0; k < nc; k++) {
		ch_DescribeGroupsResponse_DescribedGroup *d = &g[m++];
		*d = r->Groups[k];
		if (req->version >= 3 && orig->IncludeAuthorizedOperations && !d->ErrorCode)
			d->AuthorizedOperations = ch_api_authorized_ops(
				req, CH_RES_GROUP, ch_req_strdup(req, d->GroupId));
	}
	r->Groups = g;
	r->Groups_n = m;
	return r;
}

static void
authorize_describe(ch_req *req)
{
	ch_DescribeGroupsRequest *rq = req->body;
	drop_denied_groups(req, sizeof(*rq), CH_ACL_DESCRIBE, &rq->Groups, &rq->Groups_n);
	req->finish = describe_finish;
}

static const void *
list_finish(ch_req *req, const void *resp)
{
	ch_ListGroupsResponse *r = ch_req_alloc(req, sizeof(*r));
	*r = *(const ch_ListGroupsResponse *)resp;
	int32_t n = r->Groups_n > 0 ? r->Groups_n : 0;
	ch_ListGroupsResponse_ListedGroup *g =
		CH_REQ_NEW_ARRAY(req, ch_ListGroupsResponse_ListedGroup, n + 1);
	int32_t m = 0;
	for (int32_t k = 0; k < n; k++)
		if (group_ok(req, CH_ACL_DESCRIBE, r->Groups[k].GroupId))
			g[m++] = r->Groups[k];
	r->Groups = g;
	r->Groups_n = m;
	return r;
}

/* The core's results, then the denied groups (KafkaApis.handleDeleteGroupsRequest). */
static const void *
delete_finish(ch_req *req, const void *resp)
{
	const group_authz *z = req->finish_ud;
	const ch_DeleteGroupsRequest *orig = z->orig;
	ch_DeleteGroupsResponse *r = ch_req_alloc(req, sizeof(*r));
	*r = *(const ch_DeleteGroupsResponse *)resp;
	int32_t nc = r->Results_n > 0 ? r->Results_n : 0;
	ch_DeleteGroupsResponse_DeletableGroupResult *g =
		CH_REQ_NEW_ARRAY(req, ch_DeleteGroupsResponse_DeletableGroupResult, z->n + nc + 1);
	memcpy(g, r->Results, sizeof(*g) * (size_t)nc);
	int32_t m = nc;
	for (int32_t k = 0; k < z->n; k++) {
		bool dup = false; /* Kafka answers each name once (distinct) */
		for (int32_t j = 0; j < k && !dup; j++)
			dup = z->denied[j] && ch_str_eq(orig->GroupsNames[j], orig->GroupsNames[k]);
		if (z->denied[k] && !dup) {
			g[m].GroupId = orig->GroupsNames[k];
			g[m++].ErrorCode = GROUP_DENIED;
		}
	}
	r->Results = g;
	r->Results_n = m;
	return r;
}

static void
authorize_delete_groups(ch_req *req)
{
	ch_DeleteGroupsRequest *rq = req->body;
	drop_denied_groups(req, sizeof(*rq), CH_ACL_DELETE, &rq->GroupsNames, &rq->GroupsNames_n);
	req->finish = delete_finish;
}

/* ---- OffsetDelete -------------------------------------------------------------- */

/* The denied topics first, then the core's (OffsetDeleteResponse.Builder.merge). */
static const void *
offset_delete_finish(ch_req *req, const void *resp)
{
	const group_authz *z = req->finish_ud;
	const ch_OffsetDeleteRequest *orig = z->orig;
	ch_OffsetDeleteResponse *r = ch_req_alloc(req, sizeof(*r));
	*r = *(const ch_OffsetDeleteResponse *)resp;
	if (r->ErrorCode)
		return r;
	int32_t nc = r->Topics_n > 0 ? r->Topics_n : 0;
	ch_OffsetDeleteResponse_OffsetDeleteResponseTopic *t = CH_REQ_NEW_ARRAY(
		req, ch_OffsetDeleteResponse_OffsetDeleteResponseTopic, z->n + nc + 1);
	int32_t m = 0;
	for (int32_t k = 0; k < z->n; k++) {
		if (!z->denied[k])
			continue;
		const ch_OffsetDeleteRequest_OffsetDeleteRequestTopic *q = &orig->Topics[k];
		ch_OffsetDeleteResponse_OffsetDeleteResponseTopic *o = &t[m++];
		o->Name = q->Name;
		int32_t np = q->Partitions_n > 0 ? q->Partitions_n : 0;
		o->Partitions = CH_REQ_NEW_ARRAY(
			req, ch_OffsetDeleteResponse_OffsetDeleteResponsePartition, np + 1);
		o->Partitions_n = np;
		for (int32_t p = 0; p < np; p++) {
			o->Partitions[p].PartitionIndex = q->Partitions[p].PartitionIndex;
			o->Partitions[p].ErrorCode = TOPIC_DENIED;
		}
	}
	memcpy(&t[m], r->Topics, sizeof(*t) * (size_t)nc);
	r->Topics = t;
	r->Topics_n = m + nc;
	return r;
}

/* true: answered. */
static bool
authorize_offset_delete(ch_req *req)
{
	ch_OffsetDeleteRequest *rq = req->body;
	if (!group_ok(req, CH_ACL_DELETE, rq->GroupId)) {
		ch_OffsetDeleteResponse r;
		ch_OffsetDeleteResponse_init(&r);
		r.ErrorCode = GROUP_DENIED;
		r.Topics_n = 0;
		ch_api_send(req, &r);
		return true;
	}
	int32_t n = rq->Topics_n > 0 ? rq->Topics_n : 0;
	group_authz *z = keep_original(req, sizeof(*rq), n);
	ch_OffsetDeleteRequest_OffsetDeleteRequestTopic *kept =
		CH_REQ_NEW_ARRAY(req, ch_OffsetDeleteRequest_OffsetDeleteRequestTopic, n + 1);
	int32_t nk = 0;
	for (int32_t k = 0; k < n; k++) {
		z->denied[k] = !topic_ok(req, CH_ACL_READ, rq->Topics[k].Name);
		if (!z->denied[k])
			kept[nk++] = rq->Topics[k];
	}
	rq->Topics = kept;
	rq->Topics_n = nk;
	req->finish = offset_delete_finish;
	return false;
}

/* ---- the consumer protocol (KIP-848) ----------------------------------------------- */

static void
empty_described(ch_ConsumerGroupDescribeResponse_DescribedGroup *d, ch_str id, int16_t err,
		const char *msg)
{
	memset(d, 0, sizeof(*d));
	d->ErrorCode = err;
	d->ErrorMessage = ch_str_c(msg);
	d->GroupId = id;
	d->GroupState = CH_STR_LIT("");
	d->AssignorName = CH_STR_LIT("");
	d->Members_n = 0;
	d->AuthorizedOperations = INT32_MIN;
}

/* Whether every topic of the assignment may be described. */
static bool
assignment_ok(ch_req *req, const ch_ConsumerGroupDescribeResponse_Assignment *a)
{
	for (int32_t t = 0; t < a->TopicPartitions_n; t++)
		if (!topic_ok(req, CH_ACL_DESCRIBE, a->TopicPartitions[t].TopicName))
			return false;
	return true;
}

/* Denied groups first, then the described ones with their authorized
 * operations; a group whose members hold topics the principal may not
 * describe is replaced by its TOPIC_AUTHORIZATION_FAILED (KafkaApis). */
static const void *
cg_describe_finish(ch_req *req, const void *resp)
{
	const group_authz *z = req->finish_ud;
	const ch_ConsumerGroupDescribeRequest *orig = z->orig;
	ch_ConsumerGroupDescribeResponse *r = ch_req_alloc(req, sizeof(*r));
	*r = *(const ch_ConsumerGroupDescribeResponse *)resp;
	int32_t nc = r->Groups_n > 0 ? r->Groups_n : 0;
	ch_ConsumerGroupDescribeResponse_DescribedGroup *g = CH_REQ_NEW_ARRAY(
		req, ch_ConsumerGroupDescribeResponse_DescribedGroup, z->n + nc + 1);
	int32_t m = 0;
	for (int32_t k = 0; k < z->n; k++)
		if (z->denied[k])
			empty_described(&g[m++], orig->GroupIds[k], GROUP_DENIED, NULL);
	for (int32_t k = 0; k < nc; k++) {
		ch_ConsumerGroupDescribeResponse_DescribedGroup *d = &g[m++];
		*d = r->Groups[k];
		if (orig->IncludeAuthorizedOperations && !d->ErrorCode)
			d->AuthorizedOperations = ch_api_authorized_ops(
				req, CH_RES_GROUP, ch_req_strdup(req, d->GroupId));
		bool ok = true;
		for (int32_t i = 0; ch_api_authz_on(req) && ok && i < d->Members_n; i++)
			ok = assignment_ok(req, &d->Members[i].Assignment) &&
			     assignment_ok(req, &d->Members[i].TargetAssignment);
		if (!ok)
			empty_described(d, d->GroupId, TOPIC_DENIED,
					"The group has described topic(s) that the client is not "
					"authorized to describe.");
	}
	r->Groups = g;
	r->Groups_n = m;
	return r;
}

bool
ch_api_cg_authorize(ch_req *req)
{
	if (req->key == CH_APIKEY_CONSUMER_GROUP_DESCRIBE) {
		ch_ConsumerGroupDescribeRequest *rq = req->body;
		if (!ch_api_authz_on(req) && !rq->IncludeAuthorizedOperations)
			return false;
		drop_denied_groups(req, sizeof(*rq), CH_ACL_DESCRIBE, &rq->GroupIds,
				   &rq->GroupIds_n);
		req->finish = cg_describe_finish;
		return false;
	}
	if (req->key != CH_APIKEY_CONSUMER_GROUP_HEARTBEAT || !ch_api_authz_on(req))
		return false;
	const ch_ConsumerGroupHeartbeatRequest *rq = req->body;
	int16_t err = 0;
	if (!group_ok(req, CH_ACL_READ, rq->GroupId))
		err = GROUP_DENIED;
	for (int32_t k = 0; !err && k < rq->SubscribedTopicNames_n; k++)
		if (!topic_ok(req, CH_ACL_DESCRIBE, rq->SubscribedTopicNames[k]))
			err = TOPIC_DENIED;
	if (!err)
		return false;
	ch_ConsumerGroupHeartbeatResponse resp;
	ch_ConsumerGroupHeartbeatResponse_init(&resp);
	resp.ErrorCode = err;
	ch_api_send(req, &resp);
	return true;
}

/* ---- the entry point -------------------------------------------------------------- */

bool
ch_api_group_authorize(ch_req *req)
{
	if (!ch_api_authz_on(req))
		return false;
	switch (req->key) {
	case CH_APIKEY_JOIN_GROUP:
		if (group_ok(req, CH_ACL_READ, ((const ch_JoinGroupRequest *)req->body)->GroupId))
			return false;
		refuse_join(req);
		return true;
	case CH_APIKEY_SYNC_GROUP:
		if (group_ok(req, CH_ACL_READ, ((const ch_SyncGroupRequest *)req->body)->GroupId))
			return false;
		refuse_sync(req);
		return true;
	case CH_APIKEY_HEARTBEAT:
		if (group_ok(req, CH_ACL_READ, ((const ch_HeartbeatRequest *)req->body)->GroupId))
			return false;
		refuse_heartbeat(req);
		return true;
	case CH_APIKEY_LEAVE_GROUP:
		if (group_ok(req, CH_ACL_READ, ((const ch_LeaveGroupRequest *)req->body)->GroupId))
			return false;
		refuse_leave(req);
		return true;
	case CH_APIKEY_OFFSET_COMMIT:
		return authorize_commit(req);
	case CH_APIKEY_OFFSET_FETCH:
		return authorize_fetch(req);
	case CH_APIKEY_DESCRIBE_GROUPS:
		authorize_describe(req);
		return false;
	case CH_APIKEY_LIST_GROUPS:
		if (!ch_api_cluster_allowed(req, CH_ACL_DESCRIBE))
			req->finish = list_finish;
		return false;
	case CH_APIKEY_DELETE_GROUPS:
		authorize_delete_groups(req);
		return false;
	case CH_APIKEY_OFFSET_DELETE:
		return authorize_offset_delete(req);
	default:
		return false;
	}
}
