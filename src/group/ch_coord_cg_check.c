/*
 * ch_coord_cg_check.c: the invariants of the consumer-protocol groups,
 * checked after every step by the tests and the simulator.
 *
 *  - no partition is held (assigned or pending revocation) by two members,
 *    and the owner map is exactly the union of the holdings;
 *  - a member's sets are sorted without repeats; pending revocation is
 *    non-empty exactly in UNREVOKED_PARTITIONS, and disjoint from what it
 *    keeps;
 *  - epochs: assignment epoch <= group epoch; a member's epoch <= the
 *    assignment epoch (or -2 for a static member gone for now);
 *  - a member STABLE at the assignment epoch holds exactly its target;
 *  - the targets of the members never share a partition;
 *  - the static map points at members with that instance id;
 *  - regexes: each has as many subscribers as members name it, none is
 *    kept without one, its topics are sorted; targets name only topics
 *    of the group's subscribed metadata (names and regexes).
 */
#include <stdio.h>
#include <string.h>

#include "group/ch_coord_cg_int.h"

static char why[512];

static bool
sorted(const cg_set *s)
{
	for (int32_t i = 1; i < s->n; i++)
		if (ch_coord_cg_tp_cmp(&s->v[i - 1], &s->v[i]) >= 0)
			return false;
	return true;
}

static const char *
check_regexes(const cg_group *g)
{
	ch_map_foreach (&g->regexes, e) {
		const cg_regex *r = e->value;
		int32_t users = 0;
		ch_map_foreach (&g->members, me) {
			const cg_member *m = me->value;
			users += m->regex && strcmp(m->regex, r->pattern) == 0;
		}
		if (users == 0 || users != r->members) {
			snprintf(why, sizeof why, "group %s: regex %s counts %d members, %d use it",
				 g->id, r->pattern, r->members, users);
			return why;
		}
		for (int32_t i = 1; i < r->ntopics; i++)
			if (strcmp(r->topics[i - 1], r->topics[i]) >= 0) {
				snprintf(why, sizeof why, "group %s: regex %s topics not sorted",
					 g->id, r->pattern);
				return why;
			}
	}
	ch_map_foreach (&g->members, e) {
		const cg_member *m = e->value;
		if (m->regex && *m->regex && !ch_map_get(&g->regexes, m->regex, strlen(m->regex))) {
			snprintf(why, sizeof why, "group %s member %s: regex %s not in the map",
				 g->id, m->id, m->regex);
			return why;
		}
		/* Targets only name topics some member subscribes to (by name or
		 * regex) once the group has caught up: a regex or name dropped by
		 * everyone leaves the metadata and moves the epoch. */
		if (g->assignment_epoch != g->epoch || g->meta_stale)
			continue;
		for (int32_t i = 0; i < m->target.n; i++) {
			bool known = false;
			for (int32_t k = 0; k < g->nmeta && !known; k++)
				known = ch_uuid_eq(&g->meta[k].id, &m->target.v[i].topic);
			if (!known) {
				snprintf(why, sizeof why,
					 "group %s member %s: target partition %d of a topic no "
					 "member subscribes to",
					 g->id, m->id, m->target.v[i].partition);
				return why;
			}
		}
	}
	return NULL;
}

static const char *
check_group(const cg_group *g)
{
	size_t held = 0;
	ch_map targets;
	ch_map_init(&targets);
	const char *bad = NULL;
	ch_map_foreach (&g->members, e) {
		const cg_member *m = e->value;
		const cg_set *sets[] = {&m->assigned, &m->revoking, &m->target};
		for (int k = 0; k < 3; k++)
			if (!sorted(sets[k])) {
				snprintf(why, sizeof why, "group %s member %s: set %d not sorted",
					 g->id, m->id, k);
				bad = why;
				goto out;
			}
		/* Assignment epochs (KIP-1251): one per held partition, the
		 * arrays aligned with the sets and equal to the map. */
		if (m->aepochs.n != (size_t)(m->assigned.n + m->revoking.n)) {
			snprintf(why, sizeof why,
				 "group %s member %s: %zu assignment epochs for %d held", g->id,
				 m->id, m->aepochs.n, m->assigned.n + m->revoking.n);
			bad = why;
			goto out;
		}
		for (int k = 0; k < 2; k++) {
			const int32_t *ep = k ? m->revoking_ep : m->assigned_ep;
			for (int32_t i = 0; i < sets[k]->n; i++) {
				char key[CG_TP_KEY_LEN];
				cg_tp_key(&sets[k]->v[i], key);
				const ch_map_entry *x = ch_map_find(&m->aepochs, key, sizeof key);
				if (!ep || !x || (int32_t)(intptr_t)x->value != ep[i]) {
					snprintf(why, sizeof why,
						 "group %s member %s: assignment epoch of "
						 "partition %d "
						 "out of step",
						 g->id, m->id, sets[k]->v[i].partition);
					bad = why;
					goto out;
				}
			}
		}
		if ((m->revoking.n > 0) != (m->state == CH_COORD_CG_MEMBER_UNREVOKED_PARTITIONS)) {
			snprintf(why, sizeof why,
				 "group %s member %s: %d pending revocation in state %s", g->id,
				 m->id, m->revoking.n, ch_coord_cg_member_state_name(m->state));
			bad = why;
			goto out;
		}
		if (m->epoch > g->assignment_epoch ||
		    (m->epoch < 0 && !(m->epoch == -2 && m->instance_id))) {
			snprintf(why, sizeof why,
				 "group %s member %s: epoch %d, assignment epoch %d", g->id, m->id,
				 m->epoch, g->assignment_epoch);
			bad = why;
			goto out;
		}
		if (m->state == CH_COORD_CG_MEMBER_STABLE && m->epoch == g->assignment_epoch &&
		    (m->assigned.n != m->target.n ||
		     (m->assigned.n && memcmp(m->assigned.v, m->target.v,
					      (size_t)m->assigned.n * sizeof *m->assigned.v)))) {
			snprintf(why, sizeof why,
				 "group %s member %s: stable at epoch %d with %d partitions, "
				 "target %d",
				 g->id, m->id, m->epoch, m->assigned.n, m->target.n);
			bad = why;
			goto out;
		}
		for (int k = 0; k < 2; k++) {
			for (int32_t i = 0; i < sets[k]->n; i++) {
				char key[CG_TP_KEY_LEN];
				cg_tp_key(&sets[k]->v[i], key);
				if (ch_map_get(&g->owners, key, sizeof key) != m) {
					snprintf(why, sizeof why,
						 "group %s: partition %d of a topic held by member "
						 "%s "
						 "is not its own in the owner map (two holders?)",
						 g->id, sets[k]->v[i].partition, m->id);
					bad = why;
					goto out;
				}
				held++;
			}
		}
		for (int32_t i = 0; i < m->target.n; i++) {
			char key[CG_TP_KEY_LEN];
			cg_tp_key(&m->target.v[i], key);
			if (ch_map_find(&targets, key, sizeof key)) {
				snprintf(why, sizeof why,
					 "group %s: partition %d targeted at two members (one is "
					 "%s)",
					 g->id, m->target.v[i].partition, m->id);
				bad = why;
				goto out;
			}
			ch_map_put(&targets, key, sizeof key, (void *)m);
		}
		if (m->instance_id &&
		    ch_map_get(&g->statics, m->instance_id, strlen(m->instance_id)) != m) {
			snprintf(why, sizeof why,
				 "group %s: static member %s not in the static map", g->id, m->id);
			bad = why;
			goto out;
		}
	}
	if (held != g->owners.n) {
		snprintf(why, sizeof why, "group %s: %zu holdings but %zu owner entries", g->id,
			 held, g->owners.n);
		bad = why;
		goto out;
	}
	if (g->assignment_epoch > g->epoch) {
		snprintf(why, sizeof why, "group %s: assignment epoch %d > group epoch %d", g->id,
			 g->assignment_epoch, g->epoch);
		bad = why;
		goto out;
	}
	ch_map_foreach (&g->statics, e) {
		const cg_member *m = e->value;
		if (!m->instance_id || strcmp(m->instance_id, e->key) != 0 ||
		    ch_map_get(&g->members, m->id, strlen(m->id)) != m) {
			snprintf(why, sizeof why, "group %s: static map entry %s is stale", g->id,
				 e->key);
			bad = why;
			goto out;
		}
	}
	bad = check_regexes(g);
out:
	ch_map_free(&targets);
	return bad;
}

const char *
ch_coord_cg_check(const ch_coord_cg *cg)
{
	ch_map_foreach (&cg->groups, e) {
		const char *bad = check_group(e->value);
		if (bad)
			return bad;
	}
	return NULL;
}
