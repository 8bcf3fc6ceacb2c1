/*
 * ch_api_consumer_group.c: the consumer rebalance protocol's APIs (KIP-848):
 * ConsumerGroupHeartbeat and ConsumerGroupDescribe, served by the core's
 * consumer groups (group/ch_coord_cg.h), and what the classic group APIs
 * do when they name a consumer group.
 *
 * One group id space, two cores: a consumer group's membership lives in
 * ch_coord_cg, its committed offsets in the classic core's group of the same
 * id, which holds offsets only (no members: commits reach it, once the
 * consumer group has validated them, as commits of a group without members).
 * Listing and describing merge the two so that an id shows as one group.
 *
 * What the classic APIs answer for a consumer group (Kafka 4.x):
 *   JoinGroup      a consumer group with members: a classic member joins it
 *                  (ch_coord_cg_classic_join); an empty one is dropped and
 *                  the classic join goes on, as Kafka converts an empty
 *                  consumer group.
 *   SyncGroup, Heartbeat, LeaveGroup: the consumer group's classic members
 *                  (ch_coord_cg_classic_*); UNKNOWN_MEMBER_ID for anyone else.
 *   OffsetCommit   ConsumerGroup.validateOffsetCommit (UNKNOWN_MEMBER_ID,
 *                  STALE_MEMBER_EPOCH, UNSUPPORTED_VERSION below v9 for a
 *                  consumer-protocol member; ILLEGAL_GENERATION for a
 *                  classic one).
 *   OffsetFetch    ConsumerGroup.validateOffsetFetch with the v9 member id
 *                  and epoch.
 *   ListGroups     consumer groups listed with type and protocol type
 *                  "consumer", their state Empty/Assigning/Reconciling/Stable.
 *   DescribeGroups Dead, no members (Kafka's describeGroups finds no classic
 *                  group); from v6 also GROUP_ID_NOT_FOUND, "Group <id> is
 *                  not a classic group." (KIP-1043).
 *   DeleteGroups   a consumer group with members: NON_EMPTY_GROUP (its
 *                  offsets stay; ConsumerGroup.validateDeleteGroup); an
 *                  empty one is deleted (its records' tombstones) with its
 *                  offsets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/ch_api.h"
#include "broker/ch_broker.h"
#include "group/ch_coord.h"
#include "group/ch_coord_cg.h"
#include "meta/ch_topics.h"
#include "proto/generated/ch_errors.h"

/* Kafka's answer while the group's __consumer_offsets partition is not
 * loaded (ch_coord.h "Loading"); 0 when it is. */
static int16_t
load_error(const ch_req *req, ch_str group_id)
{
	const ch_coord *c = req->bk->coord;
	switch (ch_coord_partition_state(c, ch_coord_partition_for(c, group_id))) {
	case CH_COORD_LOADED:
		return 0;
	case CH_COORD_LOADING:
		return CH_KERR_COORDINATOR_LOAD_IN_PROGRESS;
	default:
		return CH_KERR_NOT_COORDINATOR;
	}
}

static bool
is_consumer_group(const ch_req *req, ch_str group_id, ch_coord_cg_group_view *gv)
{
	ch_coord_cg_group_view tmp;
	return req->bk->cgroups && group_id.len >= 0 &&
	       ch_coord_cg_group_get(req->bk->cgroups, group_id, gv ? gv : &tmp);
}

/* ---- ConsumerGroupHeartbeat ------------------------------------------------ */

void
ch_api_ConsumerGroupHeartbeat(ch_req *req)
{
	const ch_ConsumerGroupHeartbeatRequest *rq = req->body;
	ch_broker *bk = req->bk;
	if (ch_api_cg_authorize(req))
		return;
	int16_t err = rq->GroupId.len > 0 ? load_error(req, rq->GroupId) : 0;
	if (err) {
		ch_ConsumerGroupHeartbeatResponse resp;
		ch_ConsumerGroupHeartbeatResponse_init(&resp);
		resp.ErrorCode = err;
		ch_api_send(req, &resp);
		return;
	}
	/* Topics created, deleted or grown since the groups last looked. */
	uint64_t seen = ch_topics_changes(bk->topics);
	if (seen != bk->cgroups_topics_seen) {
		bk->cgroups_topics_seen = seen;
		ch_coord_cg_metadata_changed(bk->cgroups);
	}
	char host[80];
	ch_coord_req r = ch_api_coord_req(req, host, sizeof(host));
	ch_coord_cg_heartbeat(bk->cgroups, &r);
}

/* ---- ConsumerGroupDescribe ------------------------------------------------- */

typedef struct describe_ctx {
	ch_req *req;
	ch_ConsumerGroupDescribeResponse_Member *members;
	int32_t n;
} describe_ctx;

/* A partition set as the response's topics, with names from the registry. */
static void
assignment_out(ch_req *req, const ch_coord_cg_tp *tps, int32_t n,
	       ch_ConsumerGroupDescribeResponse_Assignment *out)
{
	out->TopicPartitions =
		ch_req_alloc(req, sizeof(*out->TopicPartitions) * (size_t)(n ? n : 1));
	out->TopicPartitions_n = 0;
	int32_t *parts = ch_req_alloc(req, sizeof(*parts) * (size_t)(n ? n : 1));
	for (int32_t i = 0; i < n; i++) {
		parts[i] = tps[i].partition;
		if (i == 0 || !ch_uuid_eq(&tps[i].topic, &tps[i - 1].topic)) {
			const ch_topic *t = ch_topics_find_id(req->bk->topics, &tps[i].topic);
			out->TopicPartitions[out->TopicPartitions_n++] =
				(ch_ConsumerGroupDescribeResponse_TopicPartitions){
					tps[i].topic, t ? ch_str_c(t->name) : CH_STR_LIT(""),
					parts + i, 0};
		}
		out->TopicPartitions[out->TopicPartitions_n - 1].Partitions_n++;
	}
}

static void
describe_member(void *ud, const ch_coord_cg_member_view *m)
{
	describe_ctx *d = ud;
	ch_req *req = d->req;
	ch_ConsumerGroupDescribeResponse_Member *o = &d->members[d->n++];
	memset(o, 0, sizeof(*o));
	o->MemberId = ch_str_c(ch_req_strdup(req, ch_str_c(m->member_id)));
	o->InstanceId = m->instance_id ? ch_str_c(ch_req_strdup(req, ch_str_c(m->instance_id)))
				       : CH_STR_NULL;
	o->RackId = m->rack ? ch_str_c(ch_req_strdup(req, ch_str_c(m->rack))) : CH_STR_NULL;
	o->MemberEpoch = m->epoch;
	o->ClientId = ch_str_c(ch_req_strdup(req, ch_str_c(m->client_id)));
	o->ClientHost = ch_str_c(ch_req_strdup(req, ch_str_c(m->client_host)));
	o->SubscribedTopicNames = ch_req_alloc(req, sizeof(ch_str) * (size_t)(m->ntopics + 1));
	for (int32_t i = 0; i < m->ntopics; i++)
		o->SubscribedTopicNames[i] = ch_str_c(ch_req_strdup(req, ch_str_c(m->topics[i])));
	o->SubscribedTopicNames_n = m->ntopics;
	/* Kafka's member has "" until a regex is sent (ConsumerGroupMember.Builder) */
	o->SubscribedTopicRegex = ch_str_c(ch_req_strdup(req, ch_str_c(m->regex ? m->regex : "")));
	/* asConsumerGroupDescribeMember: what it holds, assigned and pending
	 * revocation alike (both sorted, disjoint: merged) */
	int32_t nheld = m->nassigned + m->nrevoking;
	ch_coord_cg_tp *held = ch_req_alloc(req, sizeof(*held) * (size_t)(nheld ? nheld : 1));
	for (int32_t a = 0, r = 0, k = 0; k < nheld; k++)
		held[k] = r == m->nrevoking ||
					  (a < m->nassigned &&
					   ch_coord_cg_tp_cmp(&m->assigned[a], &m->revoking[r]) < 0)
				  ? m->assigned[a++]
				  : m->revoking[r++];
	assignment_out(req, held, nheld, &o->Assignment);
	assignment_out(req, m->target, m->ntarget, &o->TargetAssignment);
	/* v1 (KIP-1099): ConsumerGroupMember.useClassicProtocol -> 0, else 1 */
	o->MemberType = m->classic ? 0 : 1;
}

static void
count_member(void *ud, const ch_coord_cg_member_view *m)
{
	(void)m;
	(*(int32_t *)ud)++;
}

/* Kafka's GroupMetadataManager.consumerGroupDescribe: each id described,
 * GROUP_ID_NOT_FOUND for an unknown one or one that is a classic group. */
void
ch_api_ConsumerGroupDescribe(ch_req *req)
{
	ch_api_cg_authorize(req); /* may drop denied groups from the request */
	const ch_ConsumerGroupDescribeRequest *rq = req->body;
	ch_ConsumerGroupDescribeResponse resp;
	ch_ConsumerGroupDescribeResponse_init(&resp);
	int32_t n = rq->GroupIds_n > 0 ? rq->GroupIds_n : 0;
	resp.Groups = ch_req_alloc(req, sizeof(*resp.Groups) * (size_t)(n ? n : 1));
	resp.Groups_n = n;
	for (int32_t i = 0; i < n; i++) {
		ch_str id = rq->GroupIds[i];
		ch_ConsumerGroupDescribeResponse_DescribedGroup *g = &resp.Groups[i];
		memset(g, 0, sizeof(*g));
		g->GroupId = id;
		g->ErrorMessage = CH_STR_NULL;
		g->AuthorizedOperations = INT32_MIN;
		g->GroupState = CH_STR_LIT("");
		g->AssignorName = CH_STR_LIT("");
		g->Members_n = 0;
		ch_coord_cg_group_view gv;
		if (id.len <= 0) { /* GroupCoordinatorService: isGroupIdNotEmpty */
			g->ErrorCode = CH_KERR_INVALID_GROUP_ID;
			continue;
		}
		int16_t err = load_error(req, id);
		if (err) {
			g->ErrorCode = err;
			continue;
		}
		if (!is_consumer_group(req, id, &gv)) {
			char *cid = ch_req_strdup(req, id);
			ch_coord_group_info ci = ch_coord_group_get_info(req->bk->coord, cid);
			size_t cap = (size_t)(id.len > 0 ? id.len : 0) + 64;
			char *msg = ch_req_alloc(req, cap);
			/* any classic group, an empty one of a simple consumer's
			 * commits too (Kafka 4.4, conformance_kafka) */
			if (ci.exists)
				snprintf(msg, cap, "Group %s is not a consumer group.", cid);
			else
				snprintf(msg, cap, "Group %s not found.", cid);
			g->ErrorCode = CH_KERR_GROUP_ID_NOT_FOUND;
			g->ErrorMessage = ch_str_c(msg);
			continue;
		}
		g->GroupState = ch_str_c(ch_coord_cg_state_name(gv.state));
		g->GroupEpoch = gv.epoch;
		g->AssignmentEpoch = gv.assignment_epoch;
		g->AssignorName = ch_str_c(gv.assignor);
		int32_t members = 0;
		ch_coord_cg_foreach_member(req->bk->cgroups, id, count_member, &members);
		describe_ctx d = {req,
				  ch_req_alloc(req, sizeof(*d.members) * (size_t)(members + 1)), 0};
		ch_coord_cg_foreach_member(req->bk->cgroups, id, describe_member, &d);
		g->Members = d.members;
		g->Members_n = d.n;
	}
	ch_api_send(req, &resp);
}

/* ---- the classic APIs, when they name a consumer group -------------------- */

/* OffsetCommit: validated by the consumer group, then stored as a commit
 * of a group without members (the classic core's offsets). true: answered. */
static bool
commit_refused(ch_req *req)
{
	ch_OffsetCommitRequest *rq = req->body;
	if (!is_consumer_group(req, rq->GroupId, NULL))
		return false;
	char msg[256];
	int32_t epoch = req->version >= 1 ? rq->GenerationIdOrMemberEpoch : -1;
	ch_str member = req->version >= 1 ? rq->MemberId : CH_STR_LIT("");
	int32_t n = 0;
	for (int32_t i = 0; i < rq->Topics_n; i++)
		n += rq->Topics[i].Partitions_n > 0 ? rq->Topics[i].Partitions_n : 0;
	ch_coord_cg_commit_tp *tps = ch_req_alloc(req, sizeof(*tps) * (size_t)(n ? n : 1));
	n = 0;
	for (int32_t i = 0; i < rq->Topics_n; i++) {
		const ch_OffsetCommitRequest_OffsetCommitRequestTopic *t = &rq->Topics[i];
		const ch_topic *tt = t->Name.len > 0 ? ch_topics_find(req->bk->topics, t->Name.p,
								      (size_t)t->Name.len)
						     : NULL;
		for (int32_t k = 0; k < t->Partitions_n; k++)
			tps[n++] =
				(ch_coord_cg_commit_tp){tt ? tt->id : (ch_uuid){{0}}, tt != NULL,
							t->Name, t->Partitions[k].PartitionIndex};
	}
	int16_t err = ch_coord_cg_validate_commit(req->bk->cgroups, rq->GroupId, member, epoch,
						  req->version, tps, n, msg, sizeof(msg));
	if (!err) {
		rq->GenerationIdOrMemberEpoch = -1;
		rq->MemberId = CH_STR_LIT("");
		rq->GroupInstanceId = CH_STR_NULL;
		return false;
	}
	ch_OffsetCommitResponse resp;
	ch_OffsetCommitResponse_init(&resp);
	resp.Topics = ch_req_alloc(req, sizeof(*resp.Topics) *
						(size_t)(rq->Topics_n > 0 ? rq->Topics_n : 1));
	resp.Topics_n = rq->Topics_n > 0 ? rq->Topics_n : 0;
	for (int32_t i = 0; i < resp.Topics_n; i++) {
		const ch_OffsetCommitRequest_OffsetCommitRequestTopic *t = &rq->Topics[i];
		int32_t np = t->Partitions_n > 0 ? t->Partitions_n : 0;
		resp.Topics[i].Name = t->Name;
		resp.Topics[i].Partitions = ch_req_alloc(req, sizeof(*resp.Topics[i].Partitions) *
								      (size_t)(np ? np : 1));
		resp.Topics[i].Partitions_n = np;
		for (int32_t k = 0; k < np; k++)
			resp.Topics[i].Partitions[k] =
				(ch_OffsetCommitResponse_OffsetCommitResponsePartition){
					t->Partitions[k].PartitionIndex, err};
	}
	ch_api_send(req, &resp);
	return true;
}

/* JoinGroup, SyncGroup, Heartbeat, LeaveGroup naming a consumer group:
 * its classic members' (see the header comment). true: taken. */
static bool
classic_member_call(ch_req *req, ch_str group_id, ch_coord_cg_request_fn *fn)
{
	ch_coord_cg_group_view gv;
	if (!is_consumer_group(req, group_id, &gv))
		return false;
	if (fn == ch_coord_cg_classic_join && gv.members == 0 &&
	    ch_coord_cg_delete_if_empty(req->bk->cgroups, group_id))
		return false; /* the classic core takes the id over */
	char host[80];
	ch_coord_req r = ch_api_coord_req(req, host, sizeof(host));
	fn(req->bk->cgroups, &r);
	return true;
}

/* DeleteGroups: the names of consumer groups with members leave the
 * request (the classic core would delete their offsets) and are answered
 * NON_EMPTY_GROUP by patch_delete; empty consumer groups are deleted here,
 * their offsets by the classic core. */
typedef struct delete_ctx {
	ch_str *refused, *deleted;
	int32_t nrefused, ndeleted;
} delete_ctx;

static void
delete_prepare(ch_req *req)
{
	ch_DeleteGroupsRequest *rq = req->body;
	int32_t n = rq->GroupsNames_n > 0 ? rq->GroupsNames_n : 0;
	delete_ctx *x = ch_req_alloc(req, sizeof(*x));
	ch_str *kept = ch_req_alloc(req, sizeof(*kept) * (size_t)(n ? n : 1));
	x->refused = ch_req_alloc(req, sizeof(*x->refused) * (size_t)(n ? n : 1));
	x->deleted = ch_req_alloc(req, sizeof(*x->deleted) * (size_t)(n ? n : 1));
	x->nrefused = x->ndeleted = 0;
	int32_t nkept = 0;
	for (int32_t i = 0; i < n; i++) {
		ch_str id = rq->GroupsNames[i];
		ch_coord_cg_group_view gv;
		if (id.len <= 0 || load_error(req, id) || !is_consumer_group(req, id, &gv)) {
			kept[nkept++] = id;
		} else if (gv.members > 0) {
			bool seen = false;
			for (int32_t j = 0; j < x->nrefused && !seen; j++)
				seen = ch_str_eq(x->refused[j], id);
			if (!seen)
				x->refused[x->nrefused++] = id;
		} else {
			ch_coord_cg_delete_if_empty(req->bk->cgroups, id);
			x->deleted[x->ndeleted++] = id;
			kept[nkept++] = id;
		}
	}
	rq->GroupsNames = kept;
	rq->GroupsNames_n = nkept;
	req->hook_ctx = x;
}

static void
patch_delete(ch_req *req, ch_DeleteGroupsResponse *resp)
{
	const delete_ctx *x = req->hook_ctx;
	if (!x)
		return;
	int32_t n = resp->Results_n > 0 ? resp->Results_n : 0;
	ch_DeleteGroupsResponse_DeletableGroupResult *v =
		ch_req_alloc(req, sizeof(*v) * (size_t)(n + x->nrefused + 1));
	if (n)
		memcpy(v, resp->Results, sizeof(*v) * (size_t)n);
	for (int32_t i = 0; i < n; i++)
		for (int32_t j = 0; j < x->ndeleted; j++)
			if (ch_str_eq(v[i].GroupId, x->deleted[j]) &&
			    v[i].ErrorCode == CH_KERR_GROUP_ID_NOT_FOUND)
				v[i].ErrorCode =
					CH_KERR_NONE; /* no offsets: only the consumer group */
	for (int32_t j = 0; j < x->nrefused; j++)
		v[n++] = (ch_DeleteGroupsResponse_DeletableGroupResult){x->refused[j],
									CH_KERR_NON_EMPTY_GROUP};
	resp->Results = v;
	resp->Results_n = n;
}

bool
ch_api_cg_refused(ch_req *req)
{
	if (!req->bk->cgroups)
		return false;
	switch (req->key) {
	case CH_APIKEY_OFFSET_COMMIT:
		return commit_refused(req);
	case CH_APIKEY_JOIN_GROUP:
		return classic_member_call(req, ((ch_JoinGroupRequest *)req->body)->GroupId,
					   ch_coord_cg_classic_join);
	case CH_APIKEY_SYNC_GROUP:
		return classic_member_call(req, ((ch_SyncGroupRequest *)req->body)->GroupId,
					   ch_coord_cg_classic_sync);
	case CH_APIKEY_HEARTBEAT:
		return classic_member_call(req, ((ch_HeartbeatRequest *)req->body)->GroupId,
					   ch_coord_cg_classic_heartbeat);
	case CH_APIKEY_LEAVE_GROUP:
		return classic_member_call(req, ((ch_LeaveGroupRequest *)req->body)->GroupId,
					   ch_coord_cg_classic_leave);
	case CH_APIKEY_DELETE_GROUPS:
		delete_prepare(req);
		return false;
	default:
		return false;
	}
}

/* OffsetFetch v9: a consumer group's member id and epoch are checked; a
 * group that fails gets its error and no offsets. */
static void
patch_fetch(ch_req *req, ch_OffsetFetchResponse *resp)
{
	const ch_OffsetFetchRequest *rq = req->body;
	ch_OffsetFetchResponse_OffsetFetchResponseGroup *groups = ch_req_alloc(
		req, sizeof(*groups) * (size_t)(resp->Groups_n > 0 ? resp->Groups_n : 1));
	if (resp->Groups_n > 0)
		memcpy(groups, resp->Groups, sizeof(*groups) * (size_t)resp->Groups_n);
	resp->Groups = groups;
	for (int32_t i = 0; i < rq->Groups_n && i < resp->Groups_n; i++) {
		const ch_OffsetFetchRequest_OffsetFetchRequestGroup *g = &rq->Groups[i];
		char msg[256];
		if (!is_consumer_group(req, g->GroupId, NULL))
			continue;
		int16_t err = ch_coord_cg_validate_fetch(req->bk->cgroups, g->GroupId, g->MemberId,
							 g->MemberEpoch, msg, sizeof(msg));
		if (err && !resp->Groups[i].ErrorCode) {
			resp->Groups[i].ErrorCode = err;
			resp->Groups[i].Topics_n = 0;
		}
	}
}

static bool
str_in_ci(const ch_str *v, int32_t n, const char *s)
{
	for (int32_t i = 0; i < n; i++)
		if (v[i].len >= 0 && (size_t)v[i].len == strlen(s) &&
		    strncasecmp(v[i].p, s, (size_t)v[i].len) == 0)
			return true;
	return false;
}

typedef struct list_ctx {
	ch_req *req;
	const ch_ListGroupsRequest *rq;
	ch_ListGroupsResponse_ListedGroup *out;
	int32_t n;
} list_ctx;

static void
list_one(void *ud, const ch_coord_cg_group_view *g)
{
	list_ctx *l = ud;
	const char *state = ch_coord_cg_state_name(g->state);
	if (l->req->version >= 4 && l->rq->StatesFilter_n > 0 &&
	    !str_in_ci(l->rq->StatesFilter, l->rq->StatesFilter_n, state))
		return;
	if (l->req->version >= 5 && l->rq->TypesFilter_n > 0 &&
	    !str_in_ci(l->rq->TypesFilter, l->rq->TypesFilter_n, "consumer"))
		return;
	l->out[l->n++] = (ch_ListGroupsResponse_ListedGroup){
		ch_str_c(ch_req_strdup(l->req, ch_str_c(g->group_id))), CH_STR_LIT("consumer"),
		ch_str_c(state), CH_STR_LIT("consumer")};
}

static void
count_group(void *ud, const ch_coord_cg_group_view *g)
{
	(void)g;
	(*(int32_t *)ud)++;
}

/* ListGroups: the classic core's groups, without the offsets holders of
 * consumer groups, then the consumer groups the filters let through. */
static void
merge_list(ch_req *req, ch_ListGroupsResponse *resp)
{
	if (resp->ErrorCode)
		return;
	int32_t ncg = 0;
	ch_coord_cg_foreach_group(req->bk->cgroups, count_group, &ncg);
	list_ctx l = {req, req->body,
		      ch_req_alloc(req, sizeof(*l.out) * (size_t)(resp->Groups_n + ncg + 1)), 0};
	for (int32_t i = 0; i < resp->Groups_n; i++)
		if (!is_consumer_group(req, resp->Groups[i].GroupId, NULL))
			l.out[l.n++] = resp->Groups[i];
	ch_coord_cg_foreach_group(req->bk->cgroups, list_one, &l);
	resp->Groups = l.out;
	resp->Groups_n = l.n;
}

/* DescribeGroups of a consumer group: Kafka's describeGroups finds no
 * classic group of that id (classicGroup throws GroupIdNotFoundException)
 * and describes it as Dead, not as the offsets holder the classic core may
 * have, nor (v6) as the unknown group the core sees when there is none. */
static void
patch_describe(ch_req *req, ch_DescribeGroupsResponse *resp)
{
	ch_DescribeGroupsResponse_DescribedGroup *groups = ch_req_alloc(
		req, sizeof(*groups) * (size_t)(resp->Groups_n > 0 ? resp->Groups_n : 1));
	for (int32_t i = 0; i < resp->Groups_n; i++) {
		ch_DescribeGroupsResponse_DescribedGroup *g = &groups[i];
		*g = resp->Groups[i];
		if ((g->ErrorCode && g->ErrorCode != CH_KERR_GROUP_ID_NOT_FOUND) ||
		    !is_consumer_group(req, g->GroupId, NULL))
			continue;
		g->GroupState = CH_STR_LIT("Dead");
		g->ProtocolType = CH_STR_LIT("");
		g->ProtocolData = CH_STR_LIT("");
		g->Members_n = 0;
		g->ErrorCode = CH_KERR_NONE;
		g->ErrorMessage = CH_STR_NULL;
		if (req->version >= 6) {
			size_t cap = (size_t)g->GroupId.len + 40;
			char *msg = ch_req_alloc(req, cap);
			snprintf(msg, cap, "Group %.*s is not a classic group.",
				 (int)g->GroupId.len, g->GroupId.p);
			g->ErrorCode = CH_KERR_GROUP_ID_NOT_FOUND;
			g->ErrorMessage = ch_str_c(msg);
		}
	}
	resp->Groups = groups;
}

bool
ch_api_cg_respond(ch_req *req, const void *resp)
{
	if (!req->bk->cgroups)
		return false;
	if (req->key == CH_APIKEY_LIST_GROUPS) {
		ch_ListGroupsResponse copy = *(const ch_ListGroupsResponse *)resp;
		merge_list(req, &copy);
		ch_api_send(req, &copy);
		return true;
	}
	if (req->key == CH_APIKEY_DESCRIBE_GROUPS) {
		ch_DescribeGroupsResponse copy = *(const ch_DescribeGroupsResponse *)resp;
		patch_describe(req, &copy);
		ch_api_send(req, &copy);
		return true;
	}
	if (req->key == CH_APIKEY_DELETE_GROUPS) {
		ch_DeleteGroupsResponse copy = *(const ch_DeleteGroupsResponse *)resp;
		patch_delete(req, &copy);
		ch_api_send(req, &copy);
		return true;
	}
	if (req->key == CH_APIKEY_OFFSET_FETCH && req->version >= 9) {
		ch_OffsetFetchResponse copy = *(const ch_OffsetFetchResponse *)resp;
		patch_fetch(req, &copy);
		ch_api_send(req, &copy);
		return true;
	}
	return false;
}
