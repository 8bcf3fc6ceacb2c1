/*
 * ch_coord_check.c: the coordinator's invariants.
 *
 * ch_coord_check walks everything; the simulator and the unit tests call
 * it after every step. Builds with CH_COORD_CHECKS (the sanitizer build
 * that make test runs, and Debug builds; not Release) also check at the
 * end of every entry point and abort with the violation's text, so every
 * test that runs the coordinator, real clients included, checks them. An
 * entry point checks the group it named (O(its members)) and, every
 * COORD_FULL_CHECK_EVERY calls and after every load step, shutdown and
 * admin request, everything (O(all members and appends in flight)). A
 * tick checks the group of each timer it fires (retention: everything).
 *
 * The layers around the coordinator check their own part: the log
 * validates every batch it appends (ch_batch_check in ch_plog_append), the
 * coordinator's __consumer_offsets records included, in every build; the
 * assignors run in the clients, not in cohortd, so their checker
 * (src/assign/tests/assign_check.c) runs in their own tests and benches.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"
#include "group/ch_coord_int.h"

#define COORD_FULL_CHECK_EVERY 256
#define COORD_CHECK_ITEMS 64

static char msg[512];

/* Formats a violation into the static buffer and returns it. */
static const char *__attribute__((format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return msg;
}

/* The members: list, maps, counters, parked requests, timers. */
static const char *
check_members(const ch_coord_group *g, ch_coord_load_state ls)
{
	size_t n = 0;
	int32_t awaiting = 0, pending_sync = 0;
	bool leader_found = false;
	const char *id = g->group_id;
	for (const ch_coord_member *m = g->first; m; m = m->next) {
		n++;
		if (m->group != g)
			return fail("group %s: member %s points to another group", id,
				    m->member_id);
		if ((m->next && m->next->prev != m) || (!m->next && g->last != m) ||
		    (!m->prev && g->first != m))
			return fail("group %s: member list links broken at %s", id, m->member_id);
		awaiting += m->join_token != NULL;
		pending_sync += m->pending_sync;
		leader_found |= m == g->leader;
		if (m->instance_id &&
		    ch_map_get(&g->static_members, m->instance_id, strlen(m->instance_id)) != m)
			return fail("group %s: static member map out of date for %s", id,
				    m->member_id);
		if (m->sync_token && g->state != CH_COORD_GROUP_COMPLETING_REBALANCE)
			return fail("group %s: parked SyncGroup in state %s", id,
				    ch_coord_group_state_name(g->state));
		if (m->session.kind != T_MEMBER || m->session.owner != m)
			return fail("group %s: member %s's session timer is not its own", id,
				    m->member_id);
		/* (sessions start when the partition's load ends) */
		if (!m->join_token && !m->sync_token && !ch_heap_armed(&m->session.node) &&
		    ls == CH_COORD_LOADED)
			return fail("group %s: member %s has no session timer", id, m->member_id);
		if (m->is_new && !m->join_token && g->state != CH_COORD_GROUP_PREPARING_REBALANCE)
			return fail(
				"group %s: new member %s outside a join phase without a JoinGroup",
				id, m->member_id);
		/* outside a join phase only a deferred member waits in JoinGroup */
		if (m->join_token && g->state != CH_COORD_GROUP_PREPARING_REBALANCE && !m->deferred)
			return fail("group %s: parked JoinGroup of %s in state %s", id,
				    m->member_id, ch_coord_group_state_name(g->state));
		if (m->deferred && (!g->rebalance_deferred || !m->join_token || m->pending_sync))
			return fail("group %s: deferred member %s without a deferred rebalance, a "
				    "parked JoinGroup, or owing a SyncGroup",
				    id, m->member_id);
	}
	if (n != g->members.n)
		return fail("group %s: %zu members listed, %zu in the map", id, n, g->members.n);
	/* The map and the list hold the same members: each entry's member is
	 * this group's and is filed under its own id (no hashing: this runs
	 * after every entry point). */
	ch_map_foreach (&g->members, e) {
		const ch_coord_member *m = e->value;
		if (m->group != g || m->member_id != e->key)
			return fail("group %s: member map entry %s is not that member", id, e->key);
	}
	if (awaiting != g->awaiting_join)
		return fail("group %s: %d parked JoinGroups, counter says %d", id, awaiting,
			    g->awaiting_join);
	if (pending_sync != g->pending_sync)
		return fail("group %s: %d members owe a SyncGroup, counter says %d", id,
			    pending_sync, g->pending_sync);
	if (n && !leader_found)
		return fail("group %s: the leader is not a member", id);
	if (!n && g->leader)
		return fail("group %s: no members but a leader", id);
	if (g->static_members.n > n)
		return fail("group %s: more static members than members", id);
	return NULL;
}

/* Members handed an id with MEMBER_ID_REQUIRED. */
static const char *
check_pending(const ch_coord_group *g)
{
	ch_map_foreach (&g->pending, e) {
		const pending_member *p = e->value;
		if (p->group != g || p->member_id != e->key)
			return fail("group %s: pending member %s misfiled", g->group_id, e->key);
		if (p->timer.kind != T_PENDING || p->timer.owner != p ||
		    !ch_heap_armed(&p->timer.node))
			return fail("group %s: pending member %s has no timer", g->group_id,
				    e->key);
		if (ch_coord_member_find(g, ch_str_c(p->member_id)))
			return fail("group %s: %s is both pending and a member", g->group_id,
				    e->key);
	}
	return NULL;
}

/* The state, PreparingRebalance's sub-state and the group's timers. */
static const char *
check_state(const ch_coord_group *g)
{
	const char *id = g->group_id;
	size_t n = g->members.n;
	if (g->join_timer.kind != T_GROUP_JOIN || g->join_timer.owner != g ||
	    g->sync_timer.kind != T_GROUP_SYNC || g->sync_timer.owner != g)
		return fail("group %s: a group timer is not the group's", id);
	if ((g->state == CH_COORD_GROUP_PREPARING_REBALANCE) != (g->join_wait != JOIN_WAIT_NONE))
		return fail("group %s: join sub-state %d in state %s", id, (int)g->join_wait,
			    ch_coord_group_state_name(g->state));
	if (g->join_wait == JOIN_WAIT_INITIAL) {
		/* (the budget is the rebalance timeout when the delay began, less the
		 * re-arms: members that left since do not shrink it) */
		if (g->initial.remaining_ms < 0)
			return fail("group %s: initial delay budget %d ms", id,
				    g->initial.remaining_ms);
	} else if (g->initial.remaining_ms || g->initial.member_joined) {
		return fail("group %s: initial delay state outside the initial delay", id);
	}
	if (g->rebalance_deferred && g->state != CH_COORD_GROUP_COMPLETING_REBALANCE &&
	    g->state != CH_COORD_GROUP_STABLE)
		return fail("group %s: a deferred rebalance in state %s", id,
			    ch_coord_group_state_name(g->state));
	if (g->rebalance_deferred && g->state == CH_COORD_GROUP_STABLE && g->pending_sync == 0)
		return fail("group %s: Stable and synced, but the deferred rebalance did not start",
			    id);
	if (g->state != CH_COORD_GROUP_PREPARING_REBALANCE && ch_heap_armed(&g->join_timer.node))
		return fail("group %s: join timer armed in %s", id,
			    ch_coord_group_state_name(g->state));
	if (g->rebalance_reason.cause < CH_COORD_CAUSE_NONE ||
	    g->rebalance_reason.cause > CH_COORD_CAUSE_DELETED ||
	    !memchr(g->rebalance_reason.detail, '\0', sizeof(g->rebalance_reason.detail)))
		return fail("group %s: rebalance reason garbled", id);
	switch (g->state) {
	case CH_COORD_GROUP_EMPTY:
		if (n)
			return fail("group %s: Empty with %zu members", id, n);
		break;
	case CH_COORD_GROUP_PREPARING_REBALANCE:
		if (!ch_heap_armed(&g->join_timer.node))
			return fail("group %s: PreparingRebalance without a join timer", id);
		break;
	case CH_COORD_GROUP_COMPLETING_REBALANCE:
	case CH_COORD_GROUP_STABLE:
		if (!n)
			return fail("group %s: %s with no members", id,
				    ch_coord_group_state_name(g->state));
		if (!g->protocol_name)
			return fail("group %s: no protocol selected in a completed generation", id);
		break;
	case CH_COORD_GROUP_DEAD:
		return fail("group %s: a Dead group is still registered", id);
	default:
		return fail("group %s: no such state %d", id, (int)g->state);
	}
	/* Every member supports the selected protocol. */
	if (g->protocol_name && g->state != CH_COORD_GROUP_PREPARING_REBALANCE)
		for (const ch_coord_member *m = g->first; m; m = m->next)
			if (!ch_coord_member_protocol(m, g->protocol_name))
				return fail("group %s: member %s does not support protocol %s", id,
					    m->member_id, g->protocol_name);
	return NULL;
}

/* An assignment store in flight is the group's own, for a generation the
 * group has reached. */
static const char *
check_store(const ch_coord *c, const ch_coord_group *g)
{
	if (!g->store_id)
		return NULL;
	const pending_append *a = ch_coord_append_find(&c->appends, g->store_id);
	if (!a || a->kind != A_SYNC_STORE || strcmp(a->group_id, g->group_id) != 0)
		return fail("group %s: store %" PRIu64
			    " is not an assignment store of the group in flight",
			    g->group_id, g->store_id);
	if (g->store_generation > g->generation || a->generation != g->store_generation)
		return fail("group %s: store for generation %d, group at %d", g->group_id,
			    g->store_generation, g->generation);
	return NULL;
}

/* Committed offsets: each map key is "topic\0" + the partition. */
static const char *
check_offsets(const ch_coord_group *g)
{
	ch_map_foreach (&g->offsets, e) {
		const offset_entry *o = e->value;
		if (o->topic != e->key || e->klen != o->topic_len + 5 ||
		    memcmp(e->key + o->topic_len + 1, &o->partition, 4) != 0)
			return fail("group %s: offset entry misfiled", g->group_id);
		if (!o->metadata || o->metadata[o->metadata_len] != '\0')
			return fail("group %s: offset metadata not terminated", g->group_id);
	}
	return NULL;
}

/* One group's invariants (partition, members, pending, state, store, offsets); NULL or the
 * first violation. */
static const char *
check_group(const ch_coord *c, const ch_coord_group *g)
{
	ch_coord_load_state ls = ch_coord_partition_state(c, g->partition);
	if (g->coord != c)
		return fail("group %s: belongs to another coordinator", g->group_id);
	if (g->partition != ch_coord_partition_for(c, ch_str_c(g->group_id)))
		return fail("group %s: on partition %d, hashes to %d", g->group_id, g->partition,
			    ch_coord_partition_for(c, ch_str_c(g->group_id)));
	if (ls != CH_COORD_LOADED && ls != CH_COORD_LOADING)
		return fail("group %s: exists on partition %d, which is %s", g->group_id,
			    g->partition, ch_coord_load_state_name(ls));
	const char *e = check_members(g, ls);
	if (!e)
		e = check_pending(g);
	if (!e)
		e = check_state(g);
	if (!e)
		e = check_store(c, g);
	if (!e)
		e = check_offsets(g);
	return e;
}

/* The table of appends in flight: every slot and the free list agree. */
static const char *
check_appends(const ch_coord *c)
{
	const append_table *t = &c->appends;
	size_t used = 0;
	for (uint32_t s = 0; s < t->cap; s++) {
		const pending_append *a = t->slot[s];
		if (!a)
			continue;
		used++;
		if ((uint32_t)a->id != s || a->id >> 32 == 0 || a->id >> 32 > t->next_seq)
			return fail("append %" PRIu64 " in slot %u", a->id, s);
		if (a->kind > A_FIRE || !a->group_id)
			return fail("append %" PRIu64 " has no kind or group", a->id);
		if (a->kind == A_DEFERRED && ((const deferred *)a->data)->outstanding <= 0)
			return fail("append %" PRIu64 ": its response waits for no append", a->id);
		if (a->kind == A_STATIC_STORE && !a->token)
			return fail("append %" PRIu64 ": a static store with no JoinGroup", a->id);
	}
	if (used != t->n || t->n + t->nfree != t->cap)
		return fail("append table: %zu used, %zu counted, %u free of %u", used, t->n,
			    t->nfree, t->cap);
	for (uint32_t i = 0; i < t->nfree; i++)
		if (t->free[i] >= t->cap || t->slot[t->free[i]])
			return fail("append table: free slot %u is in use", t->free[i]);
	return NULL;
}

/* Per-partition load states are states; a group lives only where its
 * partition serves or is loading (ch_coord_load_state). */
static const char *
check_partitions(const ch_coord *c)
{
	for (int32_t p = 0; p < c->cfg.offsets_partitions; p++)
		if (c->load_state[p] > CH_COORD_LOAD_FAILED)
			return fail("partition %d: no such load state %u", p, c->load_state[p]);
	return NULL;
}

const char *
ch_coord_check(const ch_coord *c)
{
	const char *e = check_partitions(c);
	if (!e)
		e = check_appends(c);
	if (!e && (c->retention.kind != T_RETENTION || c->retention.owner != c ||
		   !ch_heap_armed(&c->retention.node)))
		e = fail("the offsets retention timer is not armed");
	ch_map_foreach (&c->groups, ge) {
		const ch_coord_group *g = ge->value;
		if (!e && g->group_id != ge->key)
			e = fail("group %s filed under %s", g->group_id, ge->key);
		if (!e)
			e = check_group(c, g);
	}
	return e;
}

#ifdef CH_COORD_CHECKS
coord_entry
ch_coord_entry_begin(ch_coord *c, const char *where, ch_str group_id)
{
	return (coord_entry){c, where, group_id.len < 0 ? NULL : ch_coord_str_dup(group_id)};
}

void
ch_coord_entry_end(coord_entry *e)
{
	ch_coord *c = e->c;
	const char *err = NULL;
	unsigned n = ++c->checks_since_full;
	if (!e->group || n >= COORD_FULL_CHECK_EVERY) {
		c->checks_since_full = 0;
		err = ch_coord_check(c);
	} else {
		/* A group of more than COORD_CHECK_ITEMS members, pending members
		 * and offsets is checked on every (items / COORD_CHECK_ITEMS)th
		 * call only, so a call costs O(COORD_CHECK_ITEMS) on average (the
		 * simulator's groups of hundreds, which it checks itself). */
		const ch_coord_group *g = ch_coord_group_find(c, ch_str_c(e->group));
		size_t items = g ? g->members.n + g->pending.n + g->offsets.n : 0;
		if (g && n % (items / COORD_CHECK_ITEMS + 1) == 0)
			err = check_group(c, g);
	}
	free(e->group);
	if (!err)
		return;
	ch_coord_log(c, CH_LOG_ERROR, "invariant violated after %s: %s", e->where, err);
	abort();
}
#endif
