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
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"
#include "group/ch_coord_int.h"

/* The open record of g, or NULL. */
static ch_coord_rebalance *
open_record(const ch_coord_group *g)
{
	const coord_history *h = &g->history;
	if (!h->n)
		return NULL;
	ch_coord_rebalance *r = &h->ring[(h->head + h->n - 1) % h->cap];
	return r->outcome ? NULL : r;
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
record_free(ch_coord_rebalance *r)
{
	free(r->protocol_type);
	free(r->protocol);
	free(r->cause_detail);
	for (int32_t i = 0; i < r->n_triggers; i++)
		free(r->triggers[i].detail);
	free(r->leader);
	free(r->barrier_member);
	for (int32_t i = 0; i < r->n_in; i++)
		free(r->members_in[i]);
	free(r->members_in);
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
	ch_map_free(&h->index);
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
	r->generation = -1;
	r->join_end_ms = r->leader_sync_ms = r->end_ms = r->first_join_ms = r->barrier_ms = -1;
	r->partitions_moved = -1;
	ch_map_free(&h->index);
	ch_map_init(&h->index);
	return r;
}

/* r's entry for member id (created with no times). */
static ch_coord_rebalance_member *
member_entry(ch_coord_group *g, ch_coord_rebalance *r, const char *id)
{
	coord_history *h = &g->history;
	void *v = ch_map_get(&h->index, id, strlen(id));
	if (v)
		return &r->members[(intptr_t)v - 1];
	r->members = ch_xrealloc(r->members, (size_t)(r->n_members + 1) * sizeof(*r->members));
	ch_coord_rebalance_member *e = &r->members[r->n_members++];
	*e = (ch_coord_rebalance_member){ch_xstrdup(id), -1, -1, -1, -1};
	ch_map_put(&h->index, id, strlen(id), (void *)(intptr_t)r->n_members);
	return e;
}

static void
list_add(char ***list, int32_t *n, const char *s)
{
	*list = ch_xrealloc(*list, (size_t)(*n + 1) * sizeof(**list));
	(*list)[(*n)++] = ch_xstrdup(s);
}

void
ch_coord_history_prepare(ch_coord_group *g, int64_t now, ch_coord_cause cause, const char *detail)
{
	if (g->coord->cfg.rebalance_history_size <= 0)
		return;
	ch_coord_rebalance *r = open_record(g);
	if (!r) {
		r = record_new(g);
		r->start_ms = now;
		r->cause = cause;
		r->cause_detail = ch_xstrdup(detail);
		coord_history *h = &g->history;
		if (h->n_gone && h->gone_at == now) {
			r->members_out = h->gone; /* removed just before, by this cause */
			r->n_out = h->n_gone;
			h->gone = NULL;
			h->n_gone = 0;
		}
		gone_clear(h);
		return;
	}
	if (r->n_triggers < CH_COORD_HISTORY_TRIGGERS) {
		r->triggers[r->n_triggers++] =
			(ch_coord_rebalance_trigger){cause, now, ch_xstrdup(detail)};
	} else {
		r->triggers_dropped++;
	}
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
	r->join_end_ms = now;
	r->generation = g->generation;
	r->join_ended_by = ended_by;
	free(r->protocol_type);
	free(r->protocol);
	free(r->leader);
	r->protocol_type = g->protocol_type ? ch_xstrdup(g->protocol_type) : NULL;
	r->protocol = g->protocol_name ? ch_xstrdup(g->protocol_name) : NULL;
	r->leader = g->leader ? ch_xstrdup(g->leader->member_id) : NULL;
	/* The barrier: the JoinGroup that came last, which the others waited
	 * for; every member with a parked JoinGroup took part in this phase. */
	const ch_coord_member *last = NULL;
	for (ch_coord_member *m = g->first; m; m = m->next) {
		ch_coord_rebalance_member *e = member_entry(g, r, m->member_id);
		if (m->is_new)
			list_add(&r->members_in, &r->n_in, m->member_id);
		if (!m->join_token)
			continue;
		e->join_ms = m->join_parked_at;
		if (r->first_join_ms < 0 || m->join_parked_at < r->first_join_ms)
			r->first_join_ms = m->join_parked_at;
		if (!last || m->join_parked_at >= last->join_parked_at)
			last = m;
	}
	free(r->barrier_member);
	r->barrier_member = last ? ch_xstrdup(last->member_id) : NULL;
	r->barrier_ms = last ? last->join_parked_at - r->first_join_ms : -1;
}

/* Partitions in a consumer-protocol assignment (version-prefixed), -1 when
 * it does not decode; with owners non-NULL, each "topic\0partition" is
 * mapped to owner (put) or compared with it (moved counted). */
static int32_t
assignment_walk(const uint8_t *p, int32_t len, ch_map *owners, intptr_t owner, int32_t *moved)
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
				if (!owners || kl <= 0)
					continue;
				if (!moved) {
					ch_map_put(owners, key, (size_t)kl, (void *)owner);
				} else {
					void *was = ch_map_get(owners, key, (size_t)kl);
					if (was && (intptr_t)was != owner)
						(*moved)++;
				}
			}
		}
	}
	ch_arena_reset(&a);
	return n;
}

void
ch_coord_history_leader_sync(ch_coord_group *g, const ch_SyncGroupRequest *rq, int64_t now)
{
	ch_coord_rebalance *r = open_record(g);
	if (!r || r->leader_sync_ms >= 0)
		return;
	r->leader_sync_ms = now;
	if (!g->protocol_type || strcmp(g->protocol_type, "consumer") != 0)
		return;
	/* Owners before: the previous generation's assignments, still held. */
	ch_map owners;
	ch_map_init(&owners);
	intptr_t idx = 1;
	for (ch_coord_member *m = g->first; m; m = m->next, idx++) {
		int32_t n = assignment_walk(m->assignment, m->assignment_len, &owners, idx, NULL);
		member_entry(g, r, m->member_id)->partitions_before = n;
	}
	int32_t moved = 0;
	for (int32_t i = 0; i < rq->Assignments_n; i++) {
		const ch_SyncGroupRequest_SyncGroupRequestAssignment *a = &rq->Assignments[i];
		ch_coord_member *m = ch_coord_member_find(g, a->MemberId);
		if (!m)
			continue;
		intptr_t owner = 1;
		for (ch_coord_member *x = g->first; x && x != m; x = x->next)
			owner++;
		int32_t n =
			assignment_walk(a->Assignment.p, a->Assignment.len, &owners, owner, &moved);
		member_entry(g, r, m->member_id)->partitions_after = n;
	}
	ch_map_free(&owners);
	r->partitions_moved = moved;
}

void
ch_coord_history_synced(ch_coord_group *g, const ch_coord_member *m, int64_t now)
{
	ch_coord_rebalance *r = open_record(g);
	if (!r || r->join_end_ms < 0)
		return;
	ch_coord_rebalance_member *e = member_entry(g, r, m->member_id);
	if (e->sync_ms < 0)
		e->sync_ms = now;
}

void
ch_coord_history_end(ch_coord_group *g, int64_t now, ch_coord_group_state s)
{
	ch_coord_rebalance *r = open_record(g);
	if (!r)
		return;
	r->end_ms = now;
	r->outcome = ch_coord_group_state_name(s);
	ch_map_free(&g->history.index);
	ch_map_init(&g->history.index);
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
