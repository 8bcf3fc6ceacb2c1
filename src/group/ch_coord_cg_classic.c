/*
 * ch_coord_cg_classic.c: members of the classic protocol (JoinGroup,
 * SyncGroup, Heartbeat, LeaveGroup) inside a consumer group, as Kafka 4.x
 * serves them (GroupMetadataManager.classicGroupJoinToConsumerGroup,
 * classicGroupSyncToConsumerGroup, classicGroupHeartbeatToConsumerGroup,
 * classicGroupLeaveToConsumerGroup; facts from 4.4.0's jar where they moved
 * since trunk of 2024). See ch_coord_cg.h for the contract.
 *
 * The member is a consumer-group member with m->classic set: its JoinGroup
 * is a heartbeat that always sends its subscription, with the owned
 * partitions of its ConsumerProtocolSubscription as what it still holds
 * (an eager member revoked everything before joining and owns nothing).
 * The coordinator computes its assignment; SyncGroup hands out what it may
 * hold now (never partitions pending revocation or still held by others).
 * It learns of a change through Heartbeat's REBALANCE_IN_PROGRESS and its
 * rejoin acknowledges the revocation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign/ch_assign_proto.h"
#include "group/ch_coord_cg_int.h"
#include "proto/generated/ch_api_keys.h"
#include "proto/generated/ch_errors.h"

#define PROTOCOL_TYPE "consumer" /* ConsumerProtocol.PROTOCOL_TYPE */

void
ch_coord_cg_classic_free(cg_classic *c)
{
	if (!c)
		return;
	for (int32_t i = 0; i < c->nprotocols; i++) {
		free(c->protocols[i].name);
		free(c->protocols[i].metadata);
	}
	free(c->protocols);
	free(c);
}

static const char *
first_protocol(const cg_member *m)
{
	return m->classic->nprotocols ? m->classic->protocols[0].name : "";
}

/* The answers, owned until sent (they may wait for an append). ---------- */

typedef struct classic_answer {
	int16_t key; /* CH_APIKEY_JOIN_GROUP ... */
	int16_t version;
	int16_t error;
	int32_t generation;
	char *member_id, *protocol_name, *protocol_type; /* NULL: null */
	ch_buf assignment;                               /* SyncGroup */
	ch_LeaveGroupResponse_MemberResponse *leaves;    /* LeaveGroup v3+, strings owned */
	int32_t nleaves;
} classic_answer;

static char *
dup_or_null(ch_str s)
{
	return ch_coord_cg_dup_str(s);
}

static ch_str
str_or_null(const char *s)
{
	return s ? ch_str_c(s) : CH_STR_NULL;
}

static classic_answer *
answer_new(int16_t key, int16_t version)
{
	classic_answer *a = ch_xcalloc(1, sizeof *a);
	a->key = key;
	a->version = version;
	a->generation = -1;
	ch_buf_init(&a->assignment);
	return a;
}

static void
answer_free(void *p)
{
	classic_answer *a = p;
	free(a->member_id);
	free(a->protocol_name);
	free(a->protocol_type);
	ch_buf_free(&a->assignment);
	for (int32_t i = 0; i < a->nleaves; i++) {
		free((void *)a->leaves[i].MemberId.p);
		free((void *)a->leaves[i].GroupInstanceId.p);
	}
	free(a->leaves);
	free(a);
}

/* The response of a->key; error (a failed append) replaces a's own, as
 * GroupCoordinatorService's handlers answer an exception. */
static void
answer_send(ch_coord_cg *cg, void *token, const void *p, int16_t error)
{
	const classic_answer *a = p;
	int16_t err = error ? error : a->error;
	switch (a->key) {
	case CH_APIKEY_JOIN_GROUP: {
		ch_JoinGroupResponse r;
		ch_JoinGroupResponse_init(&r);
		r.ErrorCode = err;
		r.GenerationId = error ? -1 : a->generation;
		r.ProtocolType = error ? CH_STR_NULL : str_or_null(a->protocol_type);
		r.ProtocolName = error ? CH_STR_NULL : str_or_null(a->protocol_name);
		r.Leader = CH_STR_LIT("");
		r.MemberId = ch_str_c(a->member_id ? a->member_id : "");
		r.Members_n = 0;
		cg->ops.respond(cg->ops.ud, token, &r);
		break;
	}
	case CH_APIKEY_SYNC_GROUP: {
		ch_SyncGroupResponse r;
		ch_SyncGroupResponse_init(&r);
		r.ErrorCode = err;
		r.ProtocolType = err ? CH_STR_NULL : str_or_null(a->protocol_type);
		r.ProtocolName = err ? CH_STR_NULL : str_or_null(a->protocol_name);
		r.Assignment = err ? (ch_bytes){(const uint8_t *)"", 0}
				   : (ch_bytes){a->assignment.data ? a->assignment.data
								   : (const uint8_t *)"",
						(int32_t)a->assignment.len};
		cg->ops.respond(cg->ops.ud, token, &r);
		break;
	}
	case CH_APIKEY_HEARTBEAT: {
		ch_HeartbeatResponse r;
		ch_HeartbeatResponse_init(&r);
		r.ErrorCode = err;
		cg->ops.respond(cg->ops.ud, token, &r);
		break;
	}
	default: { /* CH_APIKEY_LEAVE_GROUP */
		ch_LeaveGroupResponse r;
		ch_LeaveGroupResponse_init(&r);
		r.ErrorCode = err;
		if (a->version >= 3 && !err) {
			r.Members = a->leaves;
			r.Members_n = a->nleaves;
		} else {
			/* v0-v2: one member, its error at the top (LeaveGroupResponse) */
			if (!err && a->nleaves)
				r.ErrorCode = a->leaves[0].ErrorCode;
			r.Members_n = 0;
		}
		cg->ops.respond(cg->ops.ud, token, &r);
		break;
	}
	}
}

static const cg_answer_ops answer_ops = {answer_send, answer_free};
static bool downgrade(cg_group *g, cg_member *leaving, void *token, const cg_answer_ops *ops,
		      void *ans);

/* An error answer that changed nothing: out at once. */
static void
answer_error(ch_coord_cg *cg, void *token, classic_answer *a, int16_t err)
{
	a->error = err;
	answer_send(cg, token, a, 0);
	answer_free(a);
}

/* ---- shared checks ----------------------------------------------------------- */

static cg_group *
group_of(const ch_coord_cg *cg, ch_str id)
{
	return id.len > 0 ? ch_coord_cg_group_find(cg, id) : NULL;
}

/* Kafka's validateConsumerGroupMember + throwIfMemberDoesNotUseClassicProtocol:
 * the member, or NULL with *err set. */
static cg_member *
classic_member(ch_coord_cg *cg, cg_group *g, ch_str member_id, ch_str instance_id, int16_t *err)
{
	cg_member *m;
	*err = CH_KERR_UNKNOWN_MEMBER_ID;
	if (!g)
		return NULL;
	if (instance_id.len < 0) {
		m = ch_coord_cg_member_find(g, member_id);
		if (!m) {
			ch_coord_cg_log(cg, CH_LOG_DEBUG,
					"[GroupId %s] Member %.*s is not a member of group %s.",
					g->id, (int)CH_MAX(member_id.len, 0),
					member_id.p ? member_id.p : "", g->id);
			return NULL;
		}
	} else {
		m = ch_map_get(&g->statics, instance_id.p, (size_t)instance_id.len);
		if (!m)
			return NULL;
		if (!ch_str_eq_c(member_id, m->id)) {
			*err = CH_KERR_FENCED_INSTANCE_ID;
			return NULL;
		}
	}
	if (!m->classic)
		return NULL;
	*err = 0;
	return m;
}

/* Kafka's waitingOnUnreleasedPartition: a partition of its target it does
 * not hold is still held by another member. */
static bool
waiting_on_unreleased(const cg_group *g, const cg_member *m)
{
	if (m->state != CH_COORD_CG_MEMBER_UNRELEASED_PARTITIONS)
		return false;
	char k[CG_TP_KEY_LEN];
	for (int32_t i = 0; i < m->target.n; i++) {
		if (ch_coord_cg_set_has(&m->assigned, &m->target.v[i]))
			continue;
		cg_tp_key(&m->target.v[i], k);
		if (ch_map_find(&g->owners, k, sizeof k))
			return true;
	}
	return false;
}

/* scheduleConsumerGroupJoinTimeoutIfAbsent */
static void
arm_join_timer(ch_coord_cg *cg, cg_member *m)
{
	if (!ch_heap_armed(&m->join.node))
		ch_coord_cg_timer_set(cg, &m->join, cg->now + m->rebalance_timeout_ms);
}

static void
renew_session(ch_coord_cg *cg, cg_member *m)
{
	ch_coord_cg_timer_set(cg, &m->session, cg->now + m->classic->session_timeout_ms);
}

void
ch_coord_cg_classic_timer(ch_coord_cg *cg, cg_timer *t)
{
	cg_member *m = t->m;
	cg_group *g = m->g;
	ch_coord_cg_log(cg, CH_LOG_INFO, "[GroupId %s] Member %s fenced from the group because %s.",
			g->id, m->id,
			t->kind == CG_TIMER_JOIN
				? "the classic member failed to join within the rebalance timeout"
				: "the member failed to sync within timeout");
	ch_coord_cg_fence_and_flush(g, m, NULL, NULL);
}

/* ---- JoinGroup ---------------------------------------------------------------- */

/* ConsumerGroup.supportsClassicProtocols: the type is "consumer" and one
 * of the names is supported by every classic member (any name when there
 * is none). */
static bool
protocols_supported(const cg_group *g, const ch_JoinGroupRequest *rq)
{
	if (!ch_str_eq_c(rq->ProtocolType, PROTOCOL_TYPE) || rq->Protocols_n <= 0)
		return false;
	for (int32_t i = 0; i < rq->Protocols_n; i++) {
		bool all = true;
		ch_map_foreach (&g->members, e) {
			const cg_member *m = e->value;
			if (!m->classic)
				continue;
			bool has = false;
			for (int32_t k = 0; k < m->classic->nprotocols && !has; k++)
				has = ch_str_eq_c(rq->Protocols[i].Name,
						  m->classic->protocols[k].name);
			if (!has) {
				all = false;
				break;
			}
		}
		if (all)
			return true;
	}
	return false;
}

static cg_classic *
classic_from_join(const ch_JoinGroupRequest *rq)
{
	cg_classic *c = ch_xcalloc(1, sizeof *c);
	c->session_timeout_ms = rq->SessionTimeoutMs;
	c->nprotocols = rq->Protocols_n;
	c->protocols = ch_xcalloc((size_t)(rq->Protocols_n > 0 ? rq->Protocols_n : 1),
				  sizeof *c->protocols);
	for (int32_t i = 0; i < rq->Protocols_n; i++) {
		const ch_JoinGroupRequest_JoinGroupRequestProtocol *p = &rq->Protocols[i];
		c->protocols[i].name =
			ch_coord_cg_dup_str(p->Name.len >= 0 ? p->Name : CH_STR_LIT(""));
		size_t n = p->Metadata.len > 0 ? (size_t)p->Metadata.len : 0;
		c->protocols[i].metadata = ch_xmalloc(n ? n : 1);
		if (n)
			memcpy(c->protocols[i].metadata, p->Metadata.p, n);
		c->protocols[i].len = n;
	}
	return c;
}

/* The owned partitions of the subscription, by topic id (unknown topics
 * skipped: Utils.toTopicPartitions). */
static void
owned_from_subscription(ch_coord_cg *cg, const ch_ConsumerProtocolSubscription *s, cg_set *out)
{
	*out = (cg_set){0};
	for (int32_t i = 0; i < s->OwnedPartitions_n; i++) {
		const ch_ConsumerProtocolSubscription_TopicPartition *t = &s->OwnedPartitions[i];
		ch_coord_cg_topic topic;
		if (!cg->ops.topic(cg->ops.ud, t->Topic, &topic))
			continue;
		for (int32_t k = 0; k < t->Partitions_n; k++)
			ch_coord_cg_set_push(out, &(ch_coord_cg_tp){topic.id, t->Partitions[k]});
	}
	ch_coord_cg_set_normalize(out);
}

/* The member a JoinGroup names, created or (static) replacing the holder
 * of its instance id: getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember
 * with useClassicProtocol, which skips the epoch checks. *held: the instance
 * id was held before (by this member or the one it replaced). */
static cg_member *
join_member(ch_coord_cg *cg, cg_group *g, ch_str member_id, ch_str instance_id, bool *held)
{
	*held = false;
	cg_member *m;
	if (instance_id.len < 0) {
		m = ch_coord_cg_member_find(g, member_id);
		if (!m) {
			m = ch_coord_cg_member_add(g, member_id);
			ch_coord_cg_log(cg, CH_LOG_INFO,
					"[GroupId %s] Member %s joins the consumer group using the "
					"classic protocol.",
					g->id, m->id);
		}
		return m;
	}
	cg_member *old = ch_map_get(&g->statics, instance_id.p, (size_t)instance_id.len);
	*held = old != NULL;
	if (!old) {
		m = ch_coord_cg_member_find(g, member_id);
		if (!m)
			m = ch_coord_cg_member_add(g, member_id);
		ch_coord_cg_log(cg, CH_LOG_INFO,
				"[GroupId %s] Static member %s with instance id %.*s joins the "
				"consumer group using the classic protocol.",
				g->id, m->id, (int)instance_id.len, instance_id.p);
	} else if (ch_str_eq_c(member_id, old->id)) {
		m = old; /* its own rejoin */
	} else {
		char *old_id = ch_xstrdup(old->id);
		m = ch_coord_cg_member_replace(g, old, member_id);
		ch_coord_cg_log(
			cg, CH_LOG_INFO,
			"[GroupId %s] Static member with instance id %s re-joins the consumer "
			"group using the classic protocol. Created a new member %s to replace "
			"the existing member %s.",
			g->id, m->instance_id, m->id, old_id);
		free(old_id);
	}
	if (!m->instance_id)
		m->instance_id = ch_coord_cg_dup_str(instance_id);
	if (!ch_map_get(&g->statics, m->instance_id, strlen(m->instance_id)))
		ch_map_put(&g->statics, m->instance_id, strlen(m->instance_id), m);
	return m;
}

/* The error Kafka answers before it touches the group, or 0. */
static int16_t
join_refused(ch_coord_cg *cg, const cg_group *g, const ch_JoinGroupRequest *rq, ch_str member_id)
{
	if (rq->GroupId.len <= 0)
		return CH_KERR_INVALID_GROUP_ID;
	if (rq->SessionTimeoutMs < cg->cfg.classic_min_session_timeout_ms ||
	    rq->SessionTimeoutMs > cg->cfg.classic_max_session_timeout_ms)
		return CH_KERR_INVALID_SESSION_TIMEOUT;
	if (cg->cfg.migration_policy == CH_COORD_CG_MIGRATION_DISABLED) {
		/* throwIfClassicMemberCannotJoinConsumerGroup */
		ch_coord_cg_log(
			cg, CH_LOG_INFO,
			"Cannot join the consumer group %s with the classic protocol because "
			"the group migration is disabled.",
			g->id);
		return CH_KERR_INCONSISTENT_GROUP_PROTOCOL;
	}
	/* throwIfConsumerGroupIsFull: a member it does not have yet */
	bool known = member_id.len > 0 && ch_coord_cg_member_find(g, member_id);
	if (!known && rq->GroupInstanceId.len >= 0)
		known = ch_map_get(&g->statics, rq->GroupInstanceId.p,
				   (size_t)rq->GroupInstanceId.len) != NULL;
	if (!known && (int64_t)g->members.n >= cg->cfg.max_size)
		return CH_KERR_GROUP_MAX_SIZE_REACHED;
	if (!protocols_supported(g, rq))
		return CH_KERR_INCONSISTENT_GROUP_PROTOCOL;
	return 0;
}

void
ch_coord_cg_classic_join(ch_coord_cg *cg, const ch_coord_req *req)
{
	const ch_JoinGroupRequest *rq = req->body;
	cg->now = req->now;
	classic_answer *a = answer_new(CH_APIKEY_JOIN_GROUP, req->version);
	a->member_id = dup_or_null(rq->MemberId.len >= 0 ? rq->MemberId : CH_STR_LIT(""));
	cg_group *g = group_of(cg, rq->GroupId);
	if (!g || g->members.n == 0) { /* the caller's contract: a group with members */
		answer_error(cg, req->token, a, CH_KERR_UNKNOWN_MEMBER_ID);
		return;
	}
	char idbuf[CH_UUID_STR_LEN + 1];
	ch_str member_id = rq->MemberId;
	bool unknown = member_id.len <= 0;
	if (unknown) {
		ch_uuid u;
		cg->ops.random_uuid(cg->ops.ud, &u);
		ch_uuid_to_base64(&u, idbuf);
		member_id = ch_str_c(idbuf);
	}
	int16_t err = join_refused(cg, g, rq, member_id);
	if (err) {
		answer_error(cg, req->token, a, err);
		return;
	}
	if (unknown && req->version >= 4 && rq->GroupInstanceId.len < 0) {
		/* JoinGroupRequest.requiresKnownMemberId */
		ch_coord_cg_log(
			cg, CH_LOG_INFO,
			"[GroupId %s] Dynamic member with unknown member id joins the consumer "
			"group. Created a new member id %s and requesting the member to rejoin "
			"with this id.",
			g->id, idbuf);
		free(a->member_id);
		a->member_id = ch_xstrdup(idbuf);
		answer_error(cg, req->token, a, CH_KERR_MEMBER_ID_REQUIRED);
		return;
	}
	/* deserializeSubscription: the first protocol's (all carry the same) */
	ch_arena arena;
	ch_arena_init(&arena);
	ch_assign_subscription sub;
	const ch_JoinGroupRequest_JoinGroupRequestProtocol *p0 = &rq->Protocols[0];
	if (ch_assign_subscription_decode(p0->Metadata.p, (size_t)CH_MAX(p0->Metadata.len, 0),
					  &arena, &sub) != CH_OK) {
		ch_coord_cg_log(
			cg, CH_LOG_WARN,
			"[GroupId %s] Malformed embedded consumer protocol in the JoinGroup of "
			"member %.*s.",
			g->id, (int)member_id.len, member_id.p);
		ch_arena_reset(&arena);
		answer_error(cg, req->token, a, CH_KERR_UNKNOWN_SERVER_ERROR);
		return;
	}

	bool held;
	cg_member *m = join_member(cg, g, member_id, rq->GroupInstanceId, &held);
	ch_coord_cg_member_touch(g, m);
	if (sub.m.RackId.len >= 0) {
		free(m->rack);
		m->rack = ch_coord_cg_dup_str(sub.m.RackId);
	}
	int32_t rebalance_timeout = rq->RebalanceTimeoutMs != -1 ? rq->RebalanceTimeoutMs
								 : rq->SessionTimeoutMs; /* v0 */
	m->rebalance_timeout_ms = rebalance_timeout;
	bool changed = ch_coord_cg_member_set_topics(m, sub.m.Topics, CH_MAX(sub.m.Topics_n, 0));
	free(m->client_id);
	m->client_id =
		ch_coord_cg_dup_str(req->client_id.len >= 0 ? req->client_id : CH_STR_LIT(""));
	free(m->client_host);
	m->client_host = ch_xstrdup(req->client_host ? req->client_host : "");
	ch_coord_cg_classic_free(m->classic);
	m->classic = classic_from_join(rq);

	/* 1. the group epoch, 2. the target, 3. the member's reconciliation,
	 * as a heartbeat does. */
	if (changed || g->meta_stale) {
		if (ch_coord_cg_meta_refresh(g))
			changed = true;
		if (changed)
			ch_coord_cg_bump_epoch(g, "subscription changed");
	}
	char buf[512];
	if (!ch_coord_cg_target_follow(g, buf, sizeof buf)) {
		ch_arena_reset(&arena);
		answer_error(cg, req->token, a, CH_KERR_UNKNOWN_SERVER_ERROR);
		return;
	}
	cg_set owned;
	owned_from_subscription(cg, &sub.m, &owned);
	ch_arena_reset(&arena);
	ch_coord_cg_maybe_reconcile(g, m, &owned, cg->now);
	ch_coord_cg_set_free(&owned);

	free(a->member_id);
	a->member_id = ch_xstrdup(m->id);
	a->generation = m->epoch;
	a->protocol_type = ch_xstrdup(PROTOCOL_TYPE);
	a->protocol_name = ch_xstrdup(first_protocol(m));
	/* 4. the downgrade when this static member replaced the last
	 * consumer-protocol one: the answer goes out with the conversion and
	 * the classic core keeps the member's timers from then on. */
	if (held && downgrade(g, NULL, req->token, &answer_ops, a))
		return;

	/* cancelConsumerGroupJoinTimeout; the session and the sync timeouts */
	ch_coord_cg_timer_cancel(cg, &m->join);
	renew_session(cg, m);
	ch_coord_cg_timer_set(cg, &m->sync, cg->now + rebalance_timeout);
	ch_coord_cg_store_flush_answer(cg, g->id, req->token, &answer_ops, a);
}

/* ---- SyncGroup ------------------------------------------------------------------ */

/* ConsumerProtocol.serializeAssignment of partitions `set` at the version
 * of `metadata` (a protocol's: an int16 version first); topics no longer in
 * the group's metadata are left out (toConsumerProtocolAssignment). */
static void
assignment_encode(const cg_group *g, const cg_set *set, const cg_classic_protocol *p, ch_buf *out)
{
	int16_t version = p->len >= 2 ? (int16_t)((p->metadata[0] << 8) | p->metadata[1]) : 0;
	if (version > CH_ASSIGN_PROTO_VERSION) /* ConsumerProtocol.checkAssignmentVersion */
		version = CH_ASSIGN_PROTO_VERSION;
	int32_t n = set->n;
	ch_ConsumerProtocolAssignment_TopicPartition *tps =
		ch_xcalloc((size_t)(n ? n : 1), sizeof *tps);
	int32_t *parts = ch_xmalloc((size_t)(n ? n : 1) * sizeof *parts);
	int32_t nt = 0;
	for (int32_t i = 0; i < n;) {
		const ch_uuid *topic = &set->v[i].topic;
		const char *name = NULL;
		for (int32_t k = 0; k < g->nmeta && !name; k++)
			if (ch_uuid_eq(&g->meta[k].id, topic))
				name = g->meta[k].name;
		int32_t start = i;
		while (i < n && ch_uuid_eq(&set->v[i].topic, topic)) {
			parts[i] = set->v[i].partition;
			i++;
		}
		if (name)
			tps[nt++] = (ch_ConsumerProtocolAssignment_TopicPartition){
				ch_str_c(name), parts + start, i - start};
	}
	ch_ConsumerProtocolAssignment asg = {tps, nt, CH_BYTES_NULL};
	ch_assign_assignment_encode(out, version, &asg);
	free(tps);
	free(parts);
}

/* The group's topics read again if they may have changed (a load leaves
 * them to the next heartbeat: until then no topic id has a name here, and
 * a SyncGroup or a downgrade right after a restart encoded an empty
 * assignment; group_sim_cg --classic --seed 6454). A change bumps the
 * epoch, as at a JoinGroup, unless the group is going (bump false). */
static void
meta_current(cg_group *g, bool bump)
{
	if (g->meta_stale && ch_coord_cg_meta_refresh(g) && bump)
		ch_coord_cg_bump_epoch(g, "metadata changed");
}

/* SyncGroup's and Heartbeat's first checks: classic_member, then the
 * generation. The member, or NULL with the error answered through a. */
static cg_member *
current_member(ch_coord_cg *cg, const ch_coord_req *req, classic_answer *a, cg_group *g,
	       ch_str member_id, ch_str instance_id, int32_t generation)
{
	int16_t err;
	cg_member *m = classic_member(cg, g, member_id, instance_id, &err);
	if (!m || generation != m->epoch) {
		answer_error(cg, req->token, a, m ? CH_KERR_ILLEGAL_GENERATION : err);
		return NULL;
	}
	return m;
}

void
ch_coord_cg_classic_sync(ch_coord_cg *cg, const ch_coord_req *req)
{
	const ch_SyncGroupRequest *rq = req->body;
	cg->now = req->now;
	classic_answer *a = answer_new(CH_APIKEY_SYNC_GROUP, req->version);
	cg_group *g = group_of(cg, rq->GroupId);
	cg_member *m =
		current_member(cg, req, a, g, rq->MemberId, rq->GroupInstanceId, rq->GenerationId);
	if (!m)
		return;
	/* throwIfClassicProtocolUnmatched */
	if ((rq->ProtocolType.len >= 0 && !ch_str_eq_c(rq->ProtocolType, PROTOCOL_TYPE)) ||
	    (rq->ProtocolName.len >= 0 && !ch_str_eq_c(rq->ProtocolName, first_protocol(m)))) {
		answer_error(cg, req->token, a, CH_KERR_INCONSISTENT_GROUP_PROTOCOL);
		return;
	}
	/* throwIfRebalanceInProgress (4.4 compares with the assignment epoch) */
	if (g->assignment_epoch > m->epoch && m->state != CH_COORD_CG_MEMBER_UNREVOKED_PARTITIONS) {
		arm_join_timer(cg, m);
		answer_error(cg, req->token, a, CH_KERR_REBALANCE_IN_PROGRESS);
		return;
	}
	ch_coord_cg_timer_cancel(cg, &m->sync);
	renew_session(cg, m);
	meta_current(g, true);
	a->protocol_type = dup_or_null(rq->ProtocolType);
	a->protocol_name = dup_or_null(rq->ProtocolName);
	/* prepareAssignment: what it holds (not what it must still revoke) */
	assignment_encode(g, &m->assigned, &m->classic->protocols[0], &a->assignment);
	ch_coord_cg_store_flush_answer(cg, g->id, req->token, &answer_ops, a);
}

/* ---- Heartbeat -------------------------------------------------------------------- */

void
ch_coord_cg_classic_heartbeat(ch_coord_cg *cg, const ch_coord_req *req)
{
	const ch_HeartbeatRequest *rq = req->body;
	cg->now = req->now;
	classic_answer *a = answer_new(CH_APIKEY_HEARTBEAT, req->version);
	cg_group *g = group_of(cg, rq->GroupId);
	cg_member *m =
		current_member(cg, req, a, g, rq->MemberId, rq->GroupInstanceId, rq->GenerationId);
	if (!m)
		return;
	renew_session(cg, m);
	/* The group epoch moved on without a new target (a member left or was
	 * fenced, partitions were added): a group of classic members only
	 * (no downgrade) has no one else to compute it. Kafka 4.4 waits for a
	 * JoinGroup here that never comes (its heartbeat compares with the
	 * assignment epoch, which only a join or a ConsumerGroupHeartbeat
	 * moves); cohort computes it as their heartbeats would (batched or
	 * offloaded alike), and the member is told to rejoin for it. An
	 * assignor's refusal is the next JoinGroup's answer. */
	meta_current(g, true);
	char buf[512];
	ch_coord_cg_target_follow(g, buf, sizeof buf);
	/* Rejoin: the epoch moved on, partitions to revoke, or the ones it
	 * waited for are free. */
	if (m->epoch < g->assignment_epoch || m->state == CH_COORD_CG_MEMBER_UNREVOKED_PARTITIONS ||
	    (m->state == CH_COORD_CG_MEMBER_UNRELEASED_PARTITIONS &&
	     !waiting_on_unreleased(g, m))) {
		a->error = CH_KERR_REBALANCE_IN_PROGRESS;
		arm_join_timer(cg, m);
	}
	ch_coord_cg_store_flush_answer(cg, g->id, req->token, &answer_ops, a);
}

/* ---- LeaveGroup -------------------------------------------------------------------- */

void
ch_coord_cg_classic_leave(ch_coord_cg *cg, const ch_coord_req *req)
{
	const ch_LeaveGroupRequest *rq = req->body;
	cg->now = req->now;
	classic_answer *a = answer_new(CH_APIKEY_LEAVE_GROUP, req->version);
	cg_group *g = group_of(cg, rq->GroupId);
	ch_LeaveGroupRequest_MemberIdentity single = {rq->MemberId, CH_STR_NULL, CH_STR_NULL};
	const ch_LeaveGroupRequest_MemberIdentity *ids = rq->Members;
	int32_t n = CH_MAX(rq->Members_n, 0);
	if (req->version < 3) {
		ids = &single;
		n = 1;
	}
	a->leaves = ch_xcalloc((size_t)(n ? n : 1), sizeof *a->leaves);
	a->nleaves = n;
	bool removed = false;
	for (int32_t i = 0; i < n; i++) {
		ch_str member_id = ids[i].MemberId;
		int16_t err;
		/* by instance id alone (an admin's removal): any member id */
		ch_str check_id = member_id;
		cg_member *s = g && ids[i].GroupInstanceId.len >= 0
				       ? ch_map_get(&g->statics, ids[i].GroupInstanceId.p,
						    (size_t)ids[i].GroupInstanceId.len)
				       : NULL;
		if (s && member_id.len == 0)
			check_id = ch_str_c(s->id);
		cg_member *m = classic_member(cg, g, check_id, ids[i].GroupInstanceId, &err);
		a->leaves[i].MemberId =
			ch_str_c(ch_coord_cg_dup_str(m                    ? ch_str_c(m->id)
						     : member_id.len >= 0 ? member_id
									  : CH_STR_LIT("")));
		a->leaves[i].GroupInstanceId =
			ids[i].GroupInstanceId.len >= 0
				? ch_str_c(ch_coord_cg_dup_str(ids[i].GroupInstanceId))
				: CH_STR_NULL;
		a->leaves[i].ErrorCode = err;
		if (!m)
			continue;
		ch_coord_cg_log(
			cg, CH_LOG_INFO,
			"[GroupId %s] %s member %s has left group through explicit `LeaveGroup` "
			"request; client reason: %.*s",
			g->id, m->instance_id ? "Static" : "Dynamic", m->id,
			(int)(ids[i].Reason.len > 0 ? ids[i].Reason.len : 12),
			ids[i].Reason.len > 0 ? ids[i].Reason.p : "not provided");
		ch_coord_cg_member_remove(g, m);
		removed = true;
	}
	if (removed) /* consumerGroupFenceMembers: one epoch bump for all */
		ch_coord_cg_members_fenced(g, "members left");
	if (!g) {
		answer_send(cg, req->token, a, 0);
		answer_free(a);
		return;
	}
	ch_coord_cg_store_flush_answer(cg, g->id, req->token, &answer_ops, a);
}

/* ---- the online upgrade -------------------------------------------------------- */

typedef struct upgrade_ctx {
	ch_coord_cg *cg;
	ch_str group_id;
	cg_group *g; /* made */
	int16_t err;
	char *msg;
	size_t cap;
} upgrade_ctx;

/* The protocol named name of an exported member, or NULL. */
static const ch_coord_export_protocol *
export_protocol(const ch_coord_export_member *m, const char *name)
{
	for (int32_t i = 0; name && i < m->nprotocols; i++)
		if (strcmp(m->protocols[i].name, name) == 0)
			return &m->protocols[i];
	return NULL;
}

/* validateOnlineUpgrade: the reason it may not, or 0 (Kafka 4.4's words). */
static int16_t
upgrade_refused(upgrade_ctx *u, const ch_coord_export_group *x)
{
	ch_coord_cg *cg = u->cg;
	const char *why = NULL;
	if (cg->cfg.migration_policy != CH_COORD_CG_MIGRATION_UPGRADE &&
	    cg->cfg.migration_policy != CH_COORD_CG_MIGRATION_BIDIRECTIONAL)
		why = "online upgrade is disabled";
	else if (!x->protocol_type || strcmp(x->protocol_type, PROTOCOL_TYPE) != 0)
		why = "the group does not use the consumer embedded protocol";
	else if (x->nmembers > cg->cfg.max_size)
		why = "the group size exceeds the consumer group maximum size";
	if (why) {
		snprintf(u->msg, u->cap,
			 "Cannot upgrade classic group %.*s to consumer group because %s.",
			 (int)u->group_id.len, u->group_id.p, why);
		ch_coord_cg_log(cg, CH_LOG_INFO, "%s", u->msg);
		return CH_KERR_GROUP_ID_NOT_FOUND;
	}
	if (x->nmembers >=
	    cg->cfg.max_size) { /* throwIfConsumerGroupIsFull: the joiner is one more */
		snprintf(u->msg, u->cap,
			 "The consumer group has reached its maximum capacity of %d members.",
			 cg->cfg.max_size);
		return CH_KERR_GROUP_MAX_SIZE_REACHED;
	}
	return 0;
}

/* A member's subscription and assignment, decoded (false: malformed). */
static bool
decode_member(const ch_coord_export_group *x, const ch_coord_export_member *m, ch_arena *a,
	      ch_assign_subscription *sub, ch_assign_assignment *asg)
{
	const ch_coord_export_protocol *p = export_protocol(m, x->protocol_name);
	if (!p || ch_assign_subscription_decode(p->metadata, (size_t)p->len, a, sub) != CH_OK)
		return false;
	memset(asg, 0, sizeof *asg);
	/* a member that has had no assignment yet (joined during this rebalance) owns nothing */
	return m->assignment_len == 0 ||
	       ch_assign_assignment_decode(m->assignment, (size_t)m->assignment_len, a, asg) ==
		       CH_OK;
}

static void
upgrade_member(upgrade_ctx *u, const ch_coord_export_group *x, const ch_coord_export_member *xm,
	       const ch_assign_subscription *sub, const ch_assign_assignment *asg)
{
	ch_coord_cg *cg = u->cg;
	cg_group *g = u->g;
	cg_member *m = ch_coord_cg_member_add(g, ch_str_c(xm->member_id));
	if (xm->instance_id) {
		m->instance_id = ch_xstrdup(xm->instance_id);
		ch_map_put(&g->statics, m->instance_id, strlen(m->instance_id), m);
	}
	if (sub->m.RackId.len >= 0)
		m->rack = ch_coord_cg_dup_str(sub->m.RackId);
	m->client_id = ch_xstrdup(xm->client_id ? xm->client_id : "");
	m->client_host = ch_xstrdup(xm->client_host ? xm->client_host : "");
	m->rebalance_timeout_ms = xm->rebalance_timeout_ms;
	ch_coord_cg_member_set_topics(m, sub->m.Topics, CH_MAX(sub->m.Topics_n, 0));
	cg_classic *c = ch_xcalloc(1, sizeof *c);
	c->session_timeout_ms = xm->session_timeout_ms;
	c->nprotocols = xm->nprotocols;
	c->protocols =
		ch_xcalloc((size_t)(xm->nprotocols ? xm->nprotocols : 1), sizeof *c->protocols);
	for (int32_t i = 0; i < xm->nprotocols; i++) {
		size_t n = (size_t)CH_MAX(xm->protocols[i].len, 0);
		c->protocols[i].name = ch_xstrdup(xm->protocols[i].name);
		c->protocols[i].metadata = ch_xmalloc(n ? n : 1);
		if (n)
			memcpy(c->protocols[i].metadata, xm->protocols[i].metadata, n);
		c->protocols[i].len = n;
	}
	m->classic = c;
	/* its last assignment, current and target; a partition of a topic
	 * gone, or claimed twice, is left out */
	char k[CG_TP_KEY_LEN];
	for (int32_t i = 0; i < asg->m.AssignedPartitions_n; i++) {
		const ch_ConsumerProtocolAssignment_TopicPartition *t =
			&asg->m.AssignedPartitions[i];
		ch_coord_cg_topic topic;
		if (!cg->ops.topic(cg->ops.ud, t->Topic, &topic))
			continue;
		for (int32_t j = 0; j < t->Partitions_n; j++) {
			ch_coord_cg_tp tp = {topic.id, t->Partitions[j]};
			cg_tp_key(&tp, k);
			if (tp.partition < 0 || tp.partition >= topic.partitions ||
			    ch_map_find(&g->owners, k, sizeof k))
				continue;
			ch_map_put(&g->owners, k, sizeof k, m);
			ch_coord_cg_set_push(&m->assigned, &tp);
		}
	}
	ch_coord_cg_set_normalize(&m->assigned);
	ch_coord_cg_set_copy(&m->assigned, &m->target);
	m->epoch = m->previous_epoch = x->generation;
	m->state = CH_COORD_CG_MEMBER_STABLE;
	ch_coord_cg_epochs_sync(m, x->generation);
	ch_coord_cg_member_touch(g, m);
	ch_coord_cg_timer_set(cg, &m->session, cg->now + c->session_timeout_ms);
}

static void
upgrade_fn(void *ud, const ch_coord_export_group *x)
{
	upgrade_ctx *u = ud;
	if ((u->err = upgrade_refused(u, x)))
		return;
	ch_arena a;
	ch_arena_init(&a);
	ch_assign_subscription *subs = ch_xcalloc((size_t)x->nmembers, sizeof *subs);
	ch_assign_assignment *asgs = ch_xcalloc((size_t)x->nmembers, sizeof *asgs);
	for (int32_t i = 0; i < x->nmembers && !u->err; i++) {
		if (decode_member(x, &x->members[i], &a, &subs[i], &asgs[i]))
			continue;
		snprintf(u->msg, u->cap,
			 "Cannot upgrade the classic group %.*s to consumer group because the "
			 "embedded consumer protocol is malformed.",
			 (int)u->group_id.len, u->group_id.p);
		ch_coord_cg_log(u->cg, CH_LOG_WARN, "%s", u->msg);
		u->err = CH_KERR_GROUP_ID_NOT_FOUND;
	}
	if (!u->err) {
		cg_group *g = u->g = ch_coord_cg_group_create(u->cg, u->group_id);
		g->epoch = g->assignment_epoch = x->generation;
		g->assignment_ts = u->cg->now;
		for (int32_t i = 0; i < x->nmembers; i++)
			upgrade_member(u, x, &x->members[i], &subs[i], &asgs[i]);
		ch_coord_cg_meta_refresh(g);
		g->store_all = true;
	}
	free(subs);
	free(asgs);
	ch_arena_reset(&a);
}

cg_group *
ch_coord_cg_upgrade(ch_coord_cg *cg, ch_str group_id, int16_t *err, char *msg, size_t cap)
{
	upgrade_ctx u = {cg, group_id, NULL, 0, msg, cap};
	if (!cg->ops.classic_group_export ||
	    !cg->ops.classic_group_export(cg->ops.ud, group_id, upgrade_fn, &u)) {
		snprintf(msg, cap, "Group %.*s is not a consumer group.", (int)group_id.len,
			 group_id.p);
		*err = CH_KERR_GROUP_ID_NOT_FOUND;
		return NULL;
	}
	if (!u.g) {
		*err = u.err;
		return NULL;
	}
	/* convertToConsumerGroup: the classic group's tombstone first */
	cg->ops.classic_group_hand_over(cg->ops.ud, group_id, cg->now);
	ch_coord_cg_log(
		cg, CH_LOG_INFO,
		"[GroupId %s] Upgraded the classic group to a consumer group at epoch %d with "
		"%zu classic members.",
		u.g->id, u.g->epoch, u.g->members.n);
	return u.g;
}

/* ---- the online downgrade ------------------------------------------------------ */

/* ClassicGroup.selectProtocol: of the protocols every member supports,
 * the one most members name first among them (ties: the first member's
 * order); NULL if there is none. */
static const char *
select_protocol(const cg_group *g, const cg_member *leaving)
{
	const cg_member *first = NULL;
	ch_map_foreach (&g->members, e)
		if (e->value != leaving) {
			first = e->value;
			break;
		}
	if (!first)
		return NULL;
	const char *best = NULL;
	int32_t best_votes = 0;
	for (int32_t i = 0; i < first->classic->nprotocols; i++) {
		const char *name = first->classic->protocols[i].name;
		bool everyone = true;
		int32_t votes = 0;
		ch_map_foreach (&g->members, e) {
			const cg_member *m = e->value;
			if (m == leaving)
				continue;
			int32_t at = -1;
			for (int32_t k = 0; k < m->classic->nprotocols && at < 0; k++)
				if (strcmp(m->classic->protocols[k].name, name) == 0)
					at = k;
			if (at < 0) {
				everyone = false;
				break;
			}
			/* its vote: its first protocol that everyone supports is at or before `at`;
			 * it votes for `name` only if no earlier one of its own is supported by all */
			bool earlier = false;
			for (int32_t k = 0; k < at && !earlier; k++) {
				bool all = true;
				ch_map_foreach (&g->members, e2) {
					const cg_member *o = e2->value;
					if (o == leaving)
						continue;
					bool has = false;
					for (int32_t j = 0; j < o->classic->nprotocols && !has; j++)
						has = strcmp(o->classic->protocols[j].name,
							     m->classic->protocols[k].name) == 0;
					if (!has) {
						all = false;
						break;
					}
				}
				earlier = all;
			}
			if (!earlier)
				votes++;
		}
		if (everyone && votes > best_votes)
			best = name, best_votes = votes;
	}
	return best;
}

/*
 * The conversion (GroupMetadataManager.convertToClassicGroup), for both of
 * its triggers: `leaving` (a consumer-protocol member) goes and the rest
 * become a classic group that rebalances; or, with leaving NULL, a classic
 * static member has just replaced the last consumer-protocol one and every
 * member becomes a classic member of a Stable group, with no rebalance
 * (validateOnlineDowngradeWithReplacedMemberId). The records are flushed
 * with `ans` (NULL: none) answered when they are durable. True if the group
 * was converted and freed; false (ans untouched) if it stays.
 */
static bool
downgrade(cg_group *g, cg_member *leaving, void *token, const cg_answer_ops *ops, void *ans)
{
	ch_coord_cg *cg = g->cg;
	if ((leaving && leaving->classic) || !cg->ops.classic_group_import)
		return false;
	size_t classic = 0;
	ch_map_foreach (&g->members, e)
		classic += ((const cg_member *)e->value)->classic != NULL;
	size_t staying = g->members.n - (leaving ? 1 : 0);
	if (classic != staying) /* allMembersUseClassicProtocolExcept */
		return false;
	if (staying == 0) {
		ch_coord_cg_log(
			cg, CH_LOG_DEBUG,
			"Skip downgrading the consumer group %s to classic group because it's "
			"empty.",
			g->id);
		return false;
	}
	const char *why = NULL;
	if (cg->cfg.migration_policy != CH_COORD_CG_MIGRATION_DOWNGRADE &&
	    cg->cfg.migration_policy != CH_COORD_CG_MIGRATION_BIDIRECTIONAL)
		why = "the online downgrade is disabled";
	else if ((int64_t)staying > cg->cfg.classic_max_size)
		why = "its group size is greater than classic group max size";
	const char *protocol = why ? NULL : select_protocol(g, leaving);
	if (!why && !protocol)
		why = "its members support no protocol in common";
	if (why) {
		ch_coord_cg_log(cg, CH_LOG_INFO,
				"Cannot downgrade consumer group %s to classic group because %s.",
				g->id, why);
		return false;
	}
	meta_current(g, false);
	/* ClassicGroup.fromConsumerGroup: every member but the leaving one,
	 * its target assignment at the selected protocol's version */
	int32_t n = (int32_t)staying, np = 0, i = 0;
	ch_map_foreach (&g->members, e)
		if (e->value != leaving)
			np += ((const cg_member *)e->value)->classic->nprotocols;
	ch_coord_export_member *xm = ch_xcalloc((size_t)n, sizeof *xm);
	ch_coord_export_protocol *xp = ch_xcalloc((size_t)(np ? np : 1), sizeof *xp);
	ch_buf *asg = ch_xcalloc((size_t)n, sizeof *asg);
	int32_t k = 0;
	ch_map_foreach (&g->members, e) {
		const cg_member *m = e->value;
		if (m == leaving)
			continue;
		const cg_classic *c = m->classic;
		const cg_classic_protocol *sel = &c->protocols[0];
		xm[i] = (ch_coord_export_member){m->id,
						 m->instance_id,
						 m->client_id,
						 m->client_host,
						 c->session_timeout_ms,
						 m->rebalance_timeout_ms,
						 xp + k,
						 c->nprotocols,
						 NULL,
						 0};
		for (int32_t j = 0; j < c->nprotocols; j++) {
			xp[k++] = (ch_coord_export_protocol){c->protocols[j].name,
							     c->protocols[j].metadata,
							     (int32_t)c->protocols[j].len};
			if (strcmp(c->protocols[j].name, protocol) == 0)
				sel = &c->protocols[j];
		}
		ch_buf_init(&asg[i]);
		assignment_encode(g, &m->target, sel, &asg[i]);
		xm[i].assignment = asg[i].data;
		xm[i].assignment_len = (int32_t)asg[i].len;
		i++;
	}
	ch_coord_export_group x = {CH_COORD_GROUP_STABLE, g->epoch, PROTOCOL_TYPE, protocol, xm, n,
				   leaving != NULL};
	if (leaving)
		ch_coord_cg_log(cg, CH_LOG_INFO,
				"[GroupId %s] Downgrading the consumer group to a classic group at "
				"generation %d with %d members (protocol %s): member %s left.",
				g->id, g->epoch, n, protocol, leaving->id);
	else
		ch_coord_cg_log(cg, CH_LOG_INFO,
				"[GroupId %s] Downgrading the consumer group to a classic group at "
				"generation %d with %d members (protocol %s): a static member "
				"replaced the last consumer-protocol member.",
				g->id, g->epoch, n, protocol);
	/* The consumer group's tombstones first, then the classic group. */
	char *id = ch_xstrdup(g->id);
	ch_map_remove(&cg->groups, g->id, strlen(g->id));
	if (ans)
		ch_coord_cg_store_flush_answer(cg, id, token, ops, ans);
	else
		ch_coord_cg_store_flush(cg, id, NULL, NULL);
	cg->ops.classic_group_import(cg->ops.ud, ch_str_c(id), &x, cg->now);
	ch_coord_cg_group_free(cg, g);
	for (i = 0; i < n; i++)
		ch_buf_free(&asg[i]);
	free(asg);
	free(xm);
	free(xp);
	free(id);
	return true;
}

bool
ch_coord_cg_downgrade(cg_group *g, cg_member *leaving)
{
	return downgrade(g, leaving, NULL, NULL, NULL);
}
