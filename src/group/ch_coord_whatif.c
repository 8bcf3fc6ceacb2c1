/*
 * ch_coord_whatif.c: the assignors' what-if on a copy of a group (see
 * ch_coord_whatif.h): the snapshot on the loop, the runs anywhere.
 */
#include "group/ch_coord_whatif.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign/ch_assign_proto.h"
#include "common/ch_arena.h"
#include "common/ch_common.h"
#include "group/ch_coord_int.h"

/* ---- the snapshot (loop thread) ---- */

static char *
dup_or_null(const char *s)
{
	return s ? ch_xstrdup(s) : NULL;
}

static uint8_t *
dup_bytes(const uint8_t *p, int32_t n)
{
	uint8_t *d = ch_xmalloc(n > 0 ? (size_t)n : 1);
	if (n > 0)
		memcpy(d, p, (size_t)n);
	return d;
}

typedef struct snap_ctx {
	ch_coord_whatif_group *g;
	int32_t cap;
} snap_ctx;

static void
snap_member(void *ud, const ch_coord_member_view *v)
{
	snap_ctx *x = ud;
	ch_coord_whatif_group *g = x->g;
	if (g->n_members == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 8;
		g->members = ch_xrealloc(g->members, (size_t)x->cap * sizeof(*g->members));
	}
	ch_coord_whatif_member *m = &g->members[g->n_members++];
	memset(m, 0, sizeof(*m));
	m->member_id = ch_xstrdup(v->member_id);
	m->instance_id = dup_or_null(v->instance_id);
	m->client_id = dup_or_null(v->client_id);
	m->n_protocols = v->n_protocols;
	size_t np = v->n_protocols > 0 ? (size_t)v->n_protocols : 1;
	m->protocol_names = ch_xcalloc(np, sizeof(char *));
	m->metadata = ch_xcalloc(np, sizeof(uint8_t *));
	m->metadata_len = ch_xcalloc(np, sizeof(int32_t));
	for (int32_t i = 0; i < v->n_protocols; i++) {
		m->protocol_names[i] = ch_xstrdup(v->protocol_names[i]);
		m->metadata[i] = dup_bytes(v->protocol_metadata[i], v->protocol_metadata_len[i]);
		m->metadata_len[i] = v->protocol_metadata_len[i];
	}
	if (v->assignment) {
		m->assignment = dup_bytes(v->assignment, v->assignment_len);
		m->assignment_len = v->assignment_len;
	}
}

/* The topics any member's metadata subscribes to and that exist, once
 * each, into g->topics. */
static void
snap_topics(ch_coord_whatif_group *g, ch_coord_whatif_partitions_fn parts, void *ud)
{
	ch_arena a;
	ch_arena_init(&a);
	int32_t cap = 0;
	for (int32_t i = 0; i < g->n_members; i++)
		for (int32_t k = 0; k < g->members[i].n_protocols; k++) {
			ch_assign_subscription s;
			if (ch_assign_subscription_decode(g->members[i].metadata[k],
							  (size_t)g->members[i].metadata_len[k], &a,
							  &s) != CH_OK)
				continue;
			for (int32_t t = 0; t < s.m.Topics_n; t++) {
				ch_str n = s.m.Topics[t];
				bool seen = n.len < 0;
				for (int32_t j = 0; !seen && j < g->n_topics; j++)
					seen = g->topics[j].name.len == n.len &&
					       memcmp(g->topics[j].name.p, n.p, (size_t)n.len) == 0;
				int32_t np = seen ? -1 : parts(ud, n.p, (size_t)n.len);
				if (np < 0)
					continue;
				if (g->n_topics == cap) {
					cap = cap ? 2 * cap : 8;
					g->topics = ch_xrealloc(g->topics,
								(size_t)cap * sizeof(*g->topics));
				}
				char *name = ch_xmalloc((size_t)n.len + 1);
				memcpy(name, n.p, (size_t)n.len);
				name[n.len] = '\0';
				g->topics[g->n_topics++] =
					(ch_assign_topic){{name, n.len}, np, NULL};
			}
			ch_arena_reset(&a);
		}
	ch_arena_free(&a);
}

bool
ch_coord_whatif_snapshot(const ch_coord *c, const char *group_id,
			 ch_coord_whatif_partitions_fn parts, void *ud, ch_coord_whatif_group *out)
{
	memset(out, 0, sizeof(*out));
	const ch_coord_group *cg = ch_coord_group_find(c, ch_str_c(group_id));
	if (!cg)
		return false;
	out->group_id = ch_xstrdup(group_id);
	out->state = cg->state;
	out->protocol_type = dup_or_null(cg->protocol_type);
	out->protocol = dup_or_null(cg->protocol_name);
	out->generation = cg->generation;
	snap_ctx x = {out, 0};
	ch_coord_foreach_member(c, group_id, snap_member, &x);
	snap_topics(out, parts, ud);
	return true;
}

void
ch_coord_whatif_group_free(ch_coord_whatif_group *g)
{
	for (int32_t i = 0; i < g->n_members; i++) {
		ch_coord_whatif_member *m = &g->members[i];
		for (int32_t k = 0; k < m->n_protocols; k++) {
			free(m->protocol_names[k]);
			free(m->metadata[k]);
		}
		free(m->protocol_names);
		free(m->metadata);
		free(m->metadata_len);
		free(m->assignment);
		free(m->member_id);
		free(m->instance_id);
		free(m->client_id);
	}
	for (int32_t i = 0; i < g->n_topics; i++)
		free((char *)g->topics[i].name.p);
	free(g->topics);
	free(g->members);
	free(g->group_id);
	free(g->protocol_type);
	free(g->protocol);
	memset(g, 0, sizeof(*g));
}

/* ---- the run ---- */

/* Where each partition of g's topics sits in one flat array. */
typedef struct tp_index {
	int32_t *base; /* per topic: its first slot */
	int32_t total;
} tp_index;

static void
tp_index_init(tp_index *ix, const ch_coord_whatif_group *g)
{
	ix->base = ch_xcalloc((size_t)g->n_topics + 1, sizeof(int32_t));
	ix->total = 0;
	for (int32_t t = 0; t < g->n_topics; t++) {
		ix->base[t] = ix->total;
		ix->total += g->topics[t].partitions > 0 ? g->topics[t].partitions : 0;
	}
	ix->base[g->n_topics] = ix->total;
}

static int32_t
topic_of(const ch_coord_whatif_group *g, ch_str name)
{
	for (int32_t t = 0; t < g->n_topics; t++)
		if (g->topics[t].name.len == name.len &&
		    memcmp(g->topics[t].name.p, name.p, (size_t)name.len) == 0)
			return t;
	return -1;
}

static int
tp_cmp(const void *x, const void *y)
{
	const ch_assign_tp *a = x, *b = y;
	if (a->topic != b->topic)
		return a->topic < b->topic ? -1 : 1;
	return (a->partition > b->partition) - (a->partition < b->partition);
}

/* The partitions of an assignment (ConsumerProtocolAssignment bytes) that
 * exist in g's topics, sorted, each once; *n their count. */
static ch_assign_tp *
decode_owned(const ch_coord_whatif_group *g, const uint8_t *p, int32_t len, int32_t *n)
{
	*n = 0;
	ch_arena a;
	ch_arena_init(&a);
	ch_assign_assignment as;
	ch_assign_tp *out = NULL;
	if (p && ch_assign_assignment_decode(p, (size_t)len, &a, &as) == CH_OK) {
		int32_t cap = 0;
		for (int32_t i = 0; i < as.m.AssignedPartitions_n; i++)
			cap += CH_MAX(as.m.AssignedPartitions[i].Partitions_n, 0);
		out = ch_xmalloc((size_t)(cap ? cap : 1) * sizeof(*out));
		for (int32_t i = 0; i < as.m.AssignedPartitions_n; i++) {
			const ch_ConsumerProtocolAssignment_TopicPartition *tp =
				&as.m.AssignedPartitions[i];
			int32_t t = topic_of(g, tp->Topic);
			for (int32_t k = 0; t >= 0 && k < tp->Partitions_n; k++)
				if (tp->Partitions[k] >= 0 &&
				    tp->Partitions[k] < g->topics[t].partitions)
					out[(*n)++] = (ch_assign_tp){t, tp->Partitions[k]};
		}
		qsort(out, (size_t)*n, sizeof(*out), tp_cmp);
		int32_t w = 0;
		for (int32_t i = 0; i < *n; i++)
			if (!w || tp_cmp(&out[w - 1], &out[i]) != 0)
				out[w++] = out[i];
		*n = w;
	}
	ch_arena_free(&a);
	return out;
}

ch_assign_tp *
ch_coord_whatif_owned(const ch_coord_whatif_group *g, int32_t i, int32_t *n)
{
	return decode_owned(g, g->members[i].assignment, g->members[i].assignment_len, n);
}

/* tps (sorted) as ch_assign_owned runs per topic, into *owned (malloc'd). */
static int32_t
owned_runs(const ch_assign_tp *tps, int32_t n, ch_assign_owned **owned, int32_t **parts)
{
	*owned = ch_xmalloc((size_t)(n ? n : 1) * sizeof(**owned));
	*parts = ch_xmalloc((size_t)(n ? n : 1) * sizeof(**parts));
	int32_t runs = 0;
	for (int32_t i = 0; i < n; i++) {
		(*parts)[i] = tps[i].partition;
		if (!runs || (*owned)[runs - 1].topic != tps[i].topic)
			(*owned)[runs++] = (ch_assign_owned){tps[i].topic, &(*parts)[i], 0};
		(*owned)[runs - 1].n++;
	}
	return runs;
}

/* The metadata member m would send for assignor name: that protocol's, else
 * the group's, else its first. */
static ch_bytes
metadata_for(const ch_coord_whatif_group *g, const ch_coord_whatif_member *m, const char *name)
{
	int32_t pick = m->n_protocols ? 0 : -1;
	for (int32_t k = 0; k < m->n_protocols; k++)
		if (g->protocol && strcmp(m->protocol_names[k], g->protocol) == 0)
			pick = k;
	for (int32_t k = 0; k < m->n_protocols; k++)
		if (strcmp(m->protocol_names[k], name) == 0)
			pick = k;
	if (pick < 0)
		return (ch_bytes){NULL, -1};
	return (ch_bytes){m->metadata[pick], m->metadata_len[pick]};
}

static bool
removed(const ch_coord_whatif_change *chg, const ch_coord_whatif_member *m, bool *used)
{
	for (int32_t i = 0; i < chg->n_remove; i++)
		if (strcmp(chg->remove[i], m->member_id) == 0 ||
		    (m->instance_id && strcmp(chg->remove[i], m->instance_id) == 0)) {
			used[i] = true;
			return true;
		}
	return false;
}

/* The run's working state. */
typedef struct whatif_run {
	const ch_coord_whatif_group *g;
	ch_assign_group ag;
	int32_t n;             /* members assigned: kept ones, then added ones */
	int32_t *gidx;         /* per member: index in g->members, -1 for an added one */
	ch_assign_owned **own; /* per member: owned runs given to the assignor (malloc'd) */
	int32_t **own_parts;
	ch_buf *added_meta; /* the added members' metadata */
	char **added_ids;
} whatif_run;

/* Sets member i's owned partitions (the assignor's input) to tps. */
static void
set_owned(whatif_run *w, int32_t i, const ch_assign_tp *tps, int32_t n, int32_t generation)
{
	free(w->own[i]);
	free(w->own_parts[i]);
	ch_assign_member *m = (ch_assign_member *)&w->ag.in.members[i];
	m->nowned = owned_runs(tps, n, &w->own[i], &w->own_parts[i]);
	m->owned = w->own[i];
	m->generation = generation;
}

/* Partitions in before (sorted) that after (sorted) does not have. */
static int32_t
count_lost(const ch_assign_tp *before, int32_t nb, const ch_assign_tp *after, int32_t na)
{
	int32_t lost = 0, j = 0;
	for (int32_t i = 0; i < nb; i++) {
		while (j < na && tp_cmp(&after[j], &before[i]) < 0)
			j++;
		if (j >= na || tp_cmp(&after[j], &before[i]) != 0)
			lost++;
	}
	return lost;
}

static void
run_free(whatif_run *w)
{
	for (int32_t i = 0; i < w->n; i++) {
		free(w->own[i]);
		free(w->own_parts[i]);
	}
	int32_t added = 0;
	for (int32_t i = 0; i < w->n; i++)
		added += w->gidx[i] < 0;
	for (int32_t i = 0; i < added; i++) {
		ch_buf_free(&w->added_meta[i]);
		free(w->added_ids[i]);
	}
	free(w->own);
	free(w->own_parts);
	free(w->added_meta);
	free(w->added_ids);
	free(w->gidx);
	ch_assign_group_free(&w->ag);
}

int
ch_coord_whatif_run(const ch_coord_whatif_group *g, ch_assign_kind kind,
		    const ch_coord_whatif_change *chg, ch_coord_whatif_result *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = kind;
	if (!g->protocol_type || strcmp(g->protocol_type, CH_ASSIGN_PROTO_TYPE) != 0) {
		snprintf(out->errstr, sizeof(out->errstr),
			 "group %s is not a consumer group (protocol type %s): its members' "
			 "metadata is not a consumer subscription",
			 g->group_id, g->protocol_type ? g->protocol_type : "none");
		return CH_ERR;
	}
	bool *used = ch_xcalloc((size_t)(chg->n_remove ? chg->n_remove : 1), sizeof(bool));
	int32_t cap = g->n_members + CH_MAX(chg->add_members, 0);
	whatif_run w = {.g = g};
	w.gidx = ch_xcalloc((size_t)(cap ? cap : 1), sizeof(int32_t));
	w.own = ch_xcalloc((size_t)(cap ? cap : 1), sizeof(*w.own));
	w.own_parts = ch_xcalloc((size_t)(cap ? cap : 1), sizeof(*w.own_parts));
	w.added_meta = ch_xcalloc((size_t)CH_MAX(chg->add_members, 1), sizeof(ch_buf));
	w.added_ids = ch_xcalloc((size_t)CH_MAX(chg->add_members, 1), sizeof(char *));
	ch_assign_join_member *jm = ch_xcalloc((size_t)(cap ? cap : 1), sizeof(*jm));
	const char *name = ch_assign_name(kind);
	for (int32_t i = 0; i < g->n_members; i++) {
		const ch_coord_whatif_member *m = &g->members[i];
		if (removed(chg, m, used))
			continue;
		w.gidx[w.n] = i;
		jm[w.n++] = (ch_assign_join_member){ch_str_c(m->member_id),
						    m->instance_id ? ch_str_c(m->instance_id)
								   : CH_STR_NULL,
						    metadata_for(g, m, name)};
	}
	for (int32_t i = 0; i < chg->n_remove; i++)
		if (!used[i]) {
			snprintf(out->errstr, sizeof(out->errstr),
				 "group %s has no member %s (a member id or group.instance.id)",
				 g->group_id, chg->remove[i]);
			free(used);
			free(jm);
			run_free(&w);
			return CH_ERR;
		}
	free(used);
	/* added members: a subscription to every topic of the group, nothing owned */
	ch_str *all = ch_xcalloc((size_t)(g->n_topics ? g->n_topics : 1), sizeof(ch_str));
	for (int32_t t = 0; t < g->n_topics; t++)
		all[t] = g->topics[t].name;
	for (int32_t i = 0; i < chg->add_members; i++) {
		char id[64];
		snprintf(id, sizeof(id), "simulated-member-%d", i + 1);
		w.added_ids[i] = ch_xstrdup(id);
		ch_buf_init(&w.added_meta[i]);
		ch_assign_member_metadata(&w.added_meta[i], kind, CH_ASSIGN_PROTO_VERSION, all,
					  g->n_topics, NULL, 0, CH_ASSIGN_NO_GENERATION,
					  CH_STR_NULL);
		w.gidx[w.n] = -1;
		jm[w.n++] = (ch_assign_join_member){
			ch_str_c(w.added_ids[i]), CH_STR_NULL,
			(ch_bytes){w.added_meta[i].data, (int32_t)w.added_meta[i].len}};
	}
	free(all);
	int rc = ch_assign_group_decode(&w.ag, jm, w.n);
	free(jm);
	if (rc == CH_OK)
		rc = ch_assign_group_build(&w.ag, kind, g->topics, g->n_topics);
	if (rc != CH_OK) {
		snprintf(out->errstr, sizeof(out->errstr), "%s", w.ag.errstr);
		run_free(&w);
		return CH_ERR;
	}

	/* Who owns what now: every member's current assignment, the removed
	 * ones' too (their partitions move when someone else gets them). */
	tp_index ix;
	tp_index_init(&ix, g);
	int32_t *owner = ch_xmalloc((size_t)(ix.total ? ix.total : 1) * sizeof(int32_t));
	for (int32_t i = 0; i < ix.total; i++)
		owner[i] = -1;
	ch_assign_tp **cur = ch_xcalloc((size_t)(g->n_members ? g->n_members : 1), sizeof(*cur));
	int32_t *ncur = ch_xcalloc((size_t)(g->n_members ? g->n_members : 1), sizeof(int32_t));
	for (int32_t i = 0; i < g->n_members; i++) {
		cur[i] = decode_owned(g, g->members[i].assignment, g->members[i].assignment_len,
				      &ncur[i]);
		for (int32_t k = 0; k < ncur[i]; k++)
			owner[ix.base[cur[i][k].topic] + cur[i][k].partition] = i;
	}
	/* what members bring to the next join: the assignment they hold */
	for (int32_t i = 0; i < w.n; i++)
		if (w.gidx[i] >= 0 && g->members[w.gidx[i]].assignment)
			set_owned(&w, i, cur[w.gidx[i]], ncur[w.gidx[i]], g->generation);

	ch_assign_result res = {0};
	bool coop = kind == CH_ASSIGN_COOPERATIVE_STICKY;
	for (out->rounds = 1;; out->rounds++) {
		if (ch_assign(kind, &w.ag.in, &res) != CH_OK) {
			snprintf(out->errstr, sizeof(out->errstr), "%s", res.errstr);
			rc = CH_ERR;
			break;
		}
		if (!coop)
			break;
		/* A cooperative round revokes what changes owner; the owners
		 * rejoin with what is left, and the next round hands it over. */
		int32_t revoked = 0;
		for (int32_t i = 0; i < w.n; i++) {
			const ch_assign_member *m = &w.ag.in.members[i];
			ch_assign_tp *mine =
				ch_xmalloc(sizeof(*mine) * (size_t)CH_MAX(ix.total, 1));
			int32_t nm = 0;
			for (int32_t r = 0; r < m->nowned; r++)
				for (int32_t k = 0; k < m->owned[r].n; k++)
					if (m->owned[r].topic >= 0)
						mine[nm++] =
							(ch_assign_tp){m->owned[r].topic,
								       m->owned[r].partitions[k]};
			qsort(mine, (size_t)nm, sizeof(*mine), tp_cmp);
			/* the result is sorted by topic name, ours by index */
			int32_t na = res.off[i + 1] - res.off[i];
			ch_assign_tp *got = ch_xmalloc(sizeof(*got) * (size_t)CH_MAX(na, 1));
			memcpy(got, res.tps + res.off[i], sizeof(*got) * (size_t)na);
			qsort(got, (size_t)na, sizeof(*got), tp_cmp);
			revoked += count_lost(mine, nm, got, na);
			free(got);
			free(mine);
		}
		if (out->rounds == 1)
			out->revoked_first_round = revoked;
		if (revoked == 0 || out->rounds == CH_COORD_WHATIF_MAX_ROUNDS)
			break;
		for (int32_t i = 0; i < w.n; i++)
			set_owned(&w, i, res.tps + res.off[i], res.off[i + 1] - res.off[i],
				  g->generation + out->rounds);
		ch_assign_result_free(&res);
	}

	if (rc == CH_OK) {
		out->owners = ch_xcalloc((size_t)(w.n ? w.n : 1), sizeof(*out->owners));
		out->n_owners = w.n;
		out->min_partitions = w.n ? INT32_MAX : 0;
		for (int32_t i = 0; i < w.n; i++) {
			ch_coord_whatif_owner *o = &out->owners[i];
			int32_t gi = w.gidx[i];
			o->member_id = ch_xstrdup(gi >= 0 ? g->members[gi].member_id
							  : w.ag.in.members[i].member_id.p);
			o->simulated = gi < 0;
			if (gi >= 0 && ncur[gi]) {
				o->before = ch_xmalloc((size_t)ncur[gi] * sizeof(*o->before));
				memcpy(o->before, cur[gi], (size_t)ncur[gi] * sizeof(*o->before));
				o->n_before = ncur[gi];
			}
			o->n_after = res.off[i + 1] - res.off[i];
			o->after = ch_xmalloc((size_t)(o->n_after ? o->n_after : 1) *
					      sizeof(*o->after));
			memcpy(o->after, res.tps + res.off[i],
			       (size_t)o->n_after * sizeof(*o->after));
			qsort(o->after, (size_t)o->n_after, sizeof(*o->after), tp_cmp);
			out->min_partitions = CH_MIN(out->min_partitions, o->n_after);
			out->max_partitions = CH_MAX(out->max_partitions, o->n_after);
			out->assigned += o->n_after;
			for (int32_t k = 0; k < o->n_after; k++) {
				int32_t prev =
					owner[ix.base[o->after[k].topic] + o->after[k].partition];
				if (prev < 0)
					out->newly_assigned++;
				else if (prev != gi)
					out->moved++;
			}
		}
		/* subscribed partitions: of the topics some remaining member subscribes to */
		bool *sub = ch_xcalloc((size_t)(g->n_topics ? g->n_topics : 1), sizeof(bool));
		for (int32_t i = 0; i < w.n; i++)
			for (int32_t k = 0; k < w.ag.in.members[i].ntopics; k++)
				sub[w.ag.in.members[i].topics[k]] = true;
		int32_t subscribed = 0;
		for (int32_t t = 0; t < g->n_topics; t++)
			subscribed += sub[t] ? CH_MAX(g->topics[t].partitions, 0) : 0;
		free(sub);
		out->unassigned = subscribed - out->assigned;
	}
	ch_assign_result_free(&res);
	for (int32_t i = 0; i < g->n_members; i++)
		free(cur[i]);
	free(cur);
	free(ncur);
	free(owner);
	free(ix.base);
	run_free(&w);
	return rc;
}

void
ch_coord_whatif_result_free(ch_coord_whatif_result *r)
{
	for (int32_t i = 0; i < r->n_owners; i++) {
		free(r->owners[i].member_id);
		free(r->owners[i].before);
		free(r->owners[i].after);
	}
	free(r->owners);
	r->owners = NULL;
	r->n_owners = 0;
}
