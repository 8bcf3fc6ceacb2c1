/*
 * ch_coord_history.c: each group's rebalance history, a bounded ring of
 * ch_coord_rebalance records (ch_coord.h), fed by hooks in the state
 * machine (ch_coord_int.h lists them with their call sites). Part of the
 * state the core owns; /metrics and the admin API only read it.
 *
 * A record opens when the group enters PreparingRebalance from Empty or
 * Stable and closes when it is Stable or Empty again (or deleted). A
 * rebalance restarted before it completed (a join during CompletingRebalance,
 * a failed store) stays one record: its later causes are its triggers.
 *
 * Cooperative groups (KIP-429) rebalance in two generations: the first
 * round takes away only the partitions that move, their owners revoke them
 * and rejoin, and the follow-up round hands them to their new owners. The
 * record of a round that took partitions away closes as Stable expecting
 * that follow-up, and the group's next rebalance reopens it as its second
 * round (whatever started it: it is the one that assigns them).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign/ch_assign.h"
#include "common/ch_common.h"
#include "common/ch_hash.h"
#include "group/ch_coord_int.h"

/* g's newest record (open or closed), or NULL. */
static ch_coord_rebalance *
last_record(const ch_coord_group *g)
{
	const coord_history *h = &g->history;
	return h->n ? &h->ring[(h->head + h->n - 1) % h->cap] : NULL;
}

/* The open record of g, or NULL. */
static ch_coord_rebalance *
open_record(const ch_coord_group *g)
{
	ch_coord_rebalance *r = last_record(g);
	return r && !r->outcome ? r : NULL;
}

const ch_coord_rebalance_round *
ch_coord_rebalance_last_round(const ch_coord_rebalance *r)
{
	return r->n_rounds ? &r->rounds[r->n_rounds - 1] : NULL;
}

static ch_coord_rebalance_round *
last_round(ch_coord_rebalance *r)
{
	return (ch_coord_rebalance_round *)ch_coord_rebalance_last_round(r);
}

/* Forgets the members removed outside a record. */
static void
gone_clear(coord_history *h)
{
	for (int32_t i = 0; i < h->n_gone; i++)
		free(h->gone[i]);
	free(h->gone);
	h->gone = NULL;
	h->n_gone = 0;
}

static void
before_clear(coord_history *h)
{
	ch_map_free(&h->before);
	ch_map_init(&h->before);
	h->before_built = false;
}

static void
round_free(ch_coord_rebalance_round *rd)
{
	free(rd->leader);
	free(rd->barrier_member);
}

static void
record_free(ch_coord_rebalance *r)
{
	free(r->protocol_type);
	free(r->protocol);
	free(r->cause_detail);
	for (int32_t i = 0; i < r->n_triggers; i++)
		free(r->triggers[i].detail);
	for (int32_t i = 0; i < r->n_rounds; i++)
		round_free(&r->rounds[i]);
	free(r->members_in); /* its ids are r->members' */
	for (int32_t i = 0; i < r->n_out; i++)
		free(r->members_out[i]);
	free(r->members_out);
	for (int32_t i = 0; i < r->n_members; i++)
		free(r->members[i].member_id);
	free(r->members);
	memset(r, 0, sizeof(*r));
}

void
ch_coord_history_free(ch_coord_group *g)
{
	coord_history *h = &g->history;
	for (int32_t i = 0; i < h->n; i++)
		record_free(&h->ring[(h->head + i) % h->cap]);
	free(h->ring);
	free(h->index);
	ch_map_free(&h->before);
	gone_clear(h);
	memset(h, 0, sizeof(*h));
}

/* A new record at the ring's end (the oldest dropped when it is full). */
static ch_coord_rebalance *
record_new(ch_coord_group *g)
{
	coord_history *h = &g->history;
	int32_t max = g->coord->cfg.rebalance_history_size;
	if (h->cap < max && h->n == h->cap) {
		/* grow (doubling up to max), keeping the order from head */
		int32_t cap = h->cap ? CH_MIN(h->cap * 2, max) : CH_MIN(4, max);
		ch_coord_rebalance *ring = ch_xcalloc((size_t)cap, sizeof(*ring));
		for (int32_t i = 0; i < h->n; i++)
			ring[i] = h->ring[(h->head + i) % h->cap];
		free(h->ring);
		h->ring = ring;
		h->cap = cap;
		h->head = 0;
	}
	if (h->n == h->cap) {
		record_free(&h->ring[h->head]);
		h->head = (h->head + 1) % h->cap;
		h->n--;
	}
	ch_coord_rebalance *r = &h->ring[(h->head + h->n) % h->cap];
	h->n++;
	memset(r, 0, sizeof(*r));
	r->end_ms = -1;
	r->partitions_moved = -1;
	free(h->index);
	h->index = NULL;
	h->index_cap = 0;
	before_clear(h);
	return r;
}

/* A new round at the end of r's (the oldest dropped when they are full). */
static ch_coord_rebalance_round *
round_new(ch_coord_rebalance *r)
{
	if (r->n_rounds == CH_COORD_HISTORY_ROUNDS) {
		round_free(&r->rounds[0]);
		memmove(&r->rounds[0], &r->rounds[1],
			(size_t)(r->n_rounds - 1) * sizeof(r->rounds[0]));
		r->n_rounds--;
		r->rounds_dropped++;
	}
	ch_coord_rebalance_round *rd = &r->rounds[r->n_rounds++];
	*rd = (ch_coord_rebalance_round){.generation = -1,
					 .join_end_ms = -1,
					 .leader_sync_ms = -1,
					 .first_join_ms = -1,
					 .barrier_ms = -1,
					 .partitions_revoked = -1};
	return rd;
}

/* id's slot in h->index (r: the last record): its entry's, or the free
 * slot where it goes. */
static int32_t *
index_slot(coord_history *h, const ch_coord_rebalance *r, const char *id)
{
	uint32_t mask = h->index_cap - 1;
	for (uint32_t i = (uint32_t)ch_hash_bytes(id, strlen(id)) & mask;; i = (i + 1) & mask) {
		int32_t v = h->index[i];
		if (!v || strcmp(r->members[v - 1].member_id, id) == 0)
			return &h->index[i];
	}
}

/* r's entry for member id (created with no times). */
static ch_coord_rebalance_member *
member_entry(ch_coord_group *g, ch_coord_rebalance *r, const char *id)
{
	coord_history *h = &g->history;
	if (h->index_cap) {
		int32_t v = *index_slot(h, r, id);
		if (v)
			return &r->members[v - 1];
	}
	if ((uint64_t)(r->n_members + 1) * 2 > h->index_cap) { /* grow, re-place them all */
		free(h->index);
		h->index_cap = h->index_cap ? h->index_cap * 2 : 16;
		h->index = ch_xcalloc(h->index_cap, sizeof(*h->index));
		for (int32_t i = 0; i < r->n_members; i++)
			*index_slot(h, r, r->members[i].member_id) = i + 1;
	}
	r->members = ch_xrealloc(r->members, (size_t)(r->n_members + 1) * sizeof(*r->members));
	ch_coord_rebalance_member *e = &r->members[r->n_members++];
	*e = (ch_coord_rebalance_member){ch_xstrdup(id), -1, -1, -1, -1, -1, -1};
	*index_slot(h, r, id) = r->n_members;
	return e;
}

static void
list_add(char ***list, int32_t *n, const char *s)
{
	*list = ch_xrealloc(*list, (size_t)(*n + 1) * sizeof(**list));
	(*list)[(*n)++] = ch_xstrdup(s);
}

static void
trigger_add(ch_coord_rebalance *r, int64_t now, ch_coord_cause cause, const char *detail)
{
	if (r->n_triggers < CH_COORD_HISTORY_TRIGGERS) {
		r->triggers[r->n_triggers++] =
			(ch_coord_rebalance_trigger){cause, now, ch_xstrdup(detail)};
	} else {
		r->triggers_dropped++;
	}
}

/* The members removed just before, at now (by the cause that opens or
 * reopens r), become r's members out. */
static void
take_gone(coord_history *h, ch_coord_rebalance *r, int64_t now)
{
	if (h->gone_at == now) {
		for (int32_t i = 0; i < h->n_gone; i++) {
			list_add(&r->members_out, &r->n_out, h->gone[i]);
		}
	}
	gone_clear(h);
}

void
ch_coord_history_phase(ch_coord_group *g, int64_t now, ch_coord_group_state s, ch_coord_cause cause)
{
	coord_history *h = &g->history;
	ch_coord_stats *st = &g->coord->stats;
	ch_coord_group_state was = g->state;
	bool rebalancing = was == CH_COORD_GROUP_PREPARING_REBALANCE ||
			   was == CH_COORD_GROUP_COMPLETING_REBALANCE;
	if (s == CH_COORD_GROUP_PREPARING_REBALANCE && !rebalancing) {
		h->cycle_start = now;
		h->cycle_cause = cause;
		return;
	}
	if (!rebalancing || (unsigned)h->cycle_cause >= CH_COORD_CAUSE_N)
		return;
	uint64_t phase_us = (uint64_t)CH_MAX(now - g->state_ts, 0) * 1000;
	if (was == CH_COORD_GROUP_PREPARING_REBALANCE)
		ch_hist_observe(&st->rebalance_join[h->cycle_cause], phase_us);
	else if (s == CH_COORD_GROUP_STABLE)
		ch_hist_observe(&st->rebalance_sync[h->cycle_cause], phase_us);
	if (s == CH_COORD_GROUP_STABLE || s == CH_COORD_GROUP_EMPTY)
		ch_hist_observe(&st->rebalance_whole[h->cycle_cause],
				(uint64_t)CH_MAX(now - h->cycle_start, 0) * 1000);
}

void
ch_coord_history_prepare(ch_coord_group *g, int64_t now, ch_coord_cause cause, const char *detail)
{
	if (g->coord->cfg.rebalance_history_size <= 0)
		return;
	coord_history *h = &g->history;
	ch_coord_rebalance *r = open_record(g);
	if (r) {
		trigger_add(r, now, cause, detail);
		return;
	}
	r = last_record(g);
	if (r && r->follow_up_expected) {
		/* the cooperative follow-up round: the same rebalance */
		r->follow_up_expected = false;
		r->outcome = NULL;
		r->end_ms = -1;
		trigger_add(r, now, cause, detail);
		take_gone(h, r, now);
		return;
	}
	r = record_new(g);
	r->start_ms = now;
	r->cause = cause;
	r->cause_detail = ch_xstrdup(detail);
	take_gone(h, r, now);
}

void
ch_coord_history_trigger(ch_coord_group *g, int64_t now, ch_coord_cause cause, const char *detail)
{
	if (open_record(g))
		ch_coord_history_prepare(g, now, cause, detail);
}

void
ch_coord_history_member_out(ch_coord_group *g, const ch_coord_member *m, int64_t now)
{
	ch_coord_rebalance *r = open_record(g);
	if (r) {
		list_add(&r->members_out, &r->n_out, m->member_id);
		return;
	}
	coord_history *h = &g->history;
	if (h->gone_at != now)
		gone_clear(h);
	h->gone_at = now;
	list_add(&h->gone, &h->n_gone, m->member_id);
}

void
ch_coord_history_join_done(ch_coord_group *g, int64_t now, const char *ended_by)
{
	ch_coord_rebalance *r = open_record(g);
	if (!r)
		return;
	ch_coord_rebalance_round *rd = round_new(r);
	rd->join_end_ms = now;
	rd->generation = g->generation;
	rd->join_ended_by = ended_by;
	rd->leader = g->leader ? ch_xstrdup(g->leader->member_id) : NULL;
	free(r->protocol_type);
	free(r->protocol);
	r->protocol_type = g->protocol_type ? ch_xstrdup(g->protocol_type) : NULL;
	r->protocol = g->protocol_name ? ch_xstrdup(g->protocol_name) : NULL;
	int kind = r->protocol ? ch_assign_kind_by_name(ch_str_c(r->protocol)) : -1;
	r->cooperative = kind >= 0 && ch_assign_is_cooperative((ch_assign_kind)kind);
	/* The barrier: the JoinGroup that came last, which the others waited
	 * for; every member with a parked JoinGroup took part in this phase. */
	const ch_coord_member *last = NULL;
	for (ch_coord_member *m = g->first; m; m = m->next) {
		ch_coord_rebalance_member *e = member_entry(g, r, m->member_id);
		if (m->is_new) { /* e's id, not a copy: a member's bytes (issue 15) */
			r->members_in = ch_xrealloc(r->members_in,
						    (size_t)(r->n_in + 1) * sizeof(*r->members_in));
			r->members_in[r->n_in++] = e->member_id;
		}
		if (!m->join_token)
			continue;
		if (e->join_ms < 0) /* paused since its first JoinGroup of the record */
			e->join_ms = m->join_parked_at;
		if (rd->first_join_ms < 0 || m->join_parked_at < rd->first_join_ms)
			rd->first_join_ms = m->join_parked_at;
		if (!last || m->join_parked_at >= last->join_parked_at)
			last = m;
	}
	rd->barrier_member = last ? ch_xstrdup(last->member_id) : NULL;
	rd->barrier_ms = last ? last->join_parked_at - rd->first_join_ms : -1;
}

/* Calls fn for each "topic\0partition" key (kl bytes) of a consumer-protocol
 * assignment (version-prefixed); returns their number, -1 when it does not
 * decode (fn may have been called for some). */
static int32_t
assignment_walk(const uint8_t *p, int32_t len, void (*fn)(void *ud, const char *key, size_t kl),
		void *ud)
{
	if (!p || len < 2)
		return len == 0 ? 0 : -1;
	ch_rd rd;
	ch_rd_init(&rd, p, (size_t)len);
	int16_t v = ch_rd_i16(&rd);
	ch_arena a;
	ch_arena_init(&a);
	ch_ConsumerProtocolAssignment asg;
	int32_t n = -1;
	if (v >= 0 && ch_ConsumerProtocolAssignment_decode(&rd, &a, CH_MIN(v, 3), &asg) == 0) {
		n = 0;
		for (int32_t t = 0; t < asg.AssignedPartitions_n; t++) {
			const ch_ConsumerProtocolAssignment_TopicPartition *tp =
				&asg.AssignedPartitions[t];
			for (int32_t i = 0; i < tp->Partitions_n; i++, n++) {
				char key[300];
				int kl = snprintf(key, sizeof(key), "%.*s%c%d",
						  (int)CH_MIN(CH_MAX(tp->Topic.len, 0), 255),
						  tp->Topic.p ? tp->Topic.p : "", 0,
						  tp->Partitions[i]);
				if (kl > 0)
					fn(ud, key, (size_t)kl);
			}
		}
	}
	ch_arena_reset(&a);
	return n;
}

/* assignment_walk's fn: each partition owned by `owner` (1 + member entry). */
typedef struct owner_walk {
	ch_map *owners;
	intptr_t owner;
	int32_t count; /* partitions lost (owned before, not in owners by owner) */
} owner_walk;

static void
put_owner(void *ud, const char *key, size_t kl)
{
	owner_walk *w = ud;
	if (!ch_map_find(w->owners, key, kl)) /* a partition named twice keeps its first */
		ch_map_put(w->owners, key, kl, (void *)w->owner);
}

static void
count_lost(void *ud, const char *key, size_t kl)
{
	owner_walk *w = ud;
	if ((intptr_t)ch_map_get(w->owners, key, kl) != w->owner)
		w->count++;
}

/* 1 + the index of id's entry in r->members. */
static intptr_t
entry_number(ch_coord_group *g, ch_coord_rebalance *r, const char *id)
{
	return (intptr_t)(member_entry(g, r, id) - r->members) + 1;
}

void
ch_coord_history_leader_sync(ch_coord_group *g, const ch_SyncGroupRequest *rq, int64_t now)
{
	ch_coord_rebalance *r = open_record(g);
	ch_coord_rebalance_round *rd = r ? last_round(r) : NULL;
	if (!rd || rd->leader_sync_ms >= 0)
		return;
	rd->leader_sync_ms = now;
	if (!g->protocol_type || strcmp(g->protocol_type, "consumer") != 0)
		return;
	coord_history *h = &g->history;
	if (!h->before_built) {
		/* Owners before the record: the assignments the members still hold. */
		for (ch_coord_member *m = g->first; m; m = m->next) {
			owner_walk w = {&h->before, entry_number(g, r, m->member_id), 0};
			member_entry(g, r, m->member_id)->partitions_before =
				assignment_walk(m->assignment, m->assignment_len, put_owner, &w);
		}
		h->before_built = true;
	}
	/* This round's owners: the leader's assignments (an id named twice or
	 * not a member is ignored, as sync_store_assignment does). */
	ch_map after;
	ch_map_init(&after);
	ch_map named;
	ch_map_init(&named);
	for (int32_t i = 0; i < rq->Assignments_n; i++) {
		const ch_SyncGroupRequest_SyncGroupRequestAssignment *a = &rq->Assignments[i];
		ch_coord_member *m = ch_coord_member_find(g, a->MemberId);
		if (!m || ch_map_find(&named, m->member_id, strlen(m->member_id)))
			continue;
		ch_map_put(&named, m->member_id, strlen(m->member_id), m);
		owner_walk w = {&after, entry_number(g, r, m->member_id), 0};
		member_entry(g, r, m->member_id)->partitions_after =
			assignment_walk(a->Assignment.p, a->Assignment.len, put_owner, &w);
	}
	/* What this round took from each member: what it held and lost. */
	int32_t revoked = 0;
	for (ch_coord_member *m = g->first; m; m = m->next) {
		ch_coord_rebalance_member *e = member_entry(g, r, m->member_id);
		if (!ch_map_find(&named, m->member_id, strlen(m->member_id)))
			e->partitions_after = 0;
		owner_walk w = {&after, entry_number(g, r, m->member_id), 0};
		if (assignment_walk(m->assignment, m->assignment_len, count_lost, &w) < 0)
			continue;
		e->partitions_lost = CH_MAX(e->partitions_lost, 0) + w.count;
		revoked += w.count;
	}
	rd->partitions_revoked = revoked;
	/* Moved: an owner at the record's start other than this round's. */
	int32_t moved = 0;
	ch_map_foreach (&after, x) {
		void *was = ch_map_get(&h->before, x->key, x->klen);
		if (was && was != x->value)
			moved++;
	}
	r->partitions_moved = moved;
	ch_map_free(&after);
	ch_map_free(&named);
}

void
ch_coord_history_synced(ch_coord_group *g, const ch_coord_member *m, int64_t now)
{
	/* the last record, closed too: a late follower's SyncGroup in Stable */
	ch_coord_rebalance *r = last_record(g);
	const ch_coord_rebalance_round *rd = r ? last_round(r) : NULL;
	if (!rd || rd->generation != g->generation)
		return;
	ch_coord_rebalance_member *e = member_entry(g, r, m->member_id);
	if (e->sync_generation != g->generation) {
		e->sync_ms = now;
		e->sync_generation = g->generation;
	}
}

void
ch_coord_history_end(ch_coord_group *g, int64_t now, ch_coord_group_state s)
{
	ch_coord_rebalance *r = open_record(g);
	if (!r)
		return;
	r->end_ms = now;
	r->outcome = ch_coord_group_state_name(s);
	const ch_coord_rebalance_round *rd = last_round(r);
	r->follow_up_expected =
		s == CH_COORD_GROUP_STABLE && r->cooperative && rd && rd->partitions_revoked > 0;
	if (!r->follow_up_expected)
		before_clear(&g->history);
}

int64_t
ch_coord_rebalance_pause_ms(const ch_coord_rebalance *r, const ch_coord_rebalance_member *m)
{
	if (!r->cooperative)
		return m->join_ms < 0 || m->sync_ms < 0 ? -1 : m->sync_ms - m->join_ms;
	if (m->partitions_lost == 0)
		return 0; /* it kept consuming what it owned throughout */
	const ch_coord_rebalance_round *rd = ch_coord_rebalance_last_round(r);
	/* its partitions were handed over only if the record ended Stable */
	if (m->partitions_lost < 0 || !r->outcome || strcmp(r->outcome, "Stable") != 0 ||
	    r->follow_up_expected || !rd || m->sync_generation != rd->generation || m->join_ms < 0)
		return -1;
	return m->sync_ms - m->join_ms;
}

void
ch_coord_foreach_rebalance(const ch_coord *c, const char *group_id,
			   void (*fn)(void *ud, const ch_coord_rebalance *r), void *ud)
{
	const ch_coord_group *g = ch_coord_group_find(c, ch_str_c(group_id));
	if (!g)
		return;
	const coord_history *h = &g->history;
	for (int32_t i = 0; i < h->n; i++)
		fn(ud, &h->ring[(h->head + i) % h->cap]);
}
