/*
 * admin_page: the live page of issue 12 (/ui) and what it reads beyond the
 * group pages: /v1/groups/G/partitions (partition -> owner, offsets, lag)
 * and the summary that /v1/events streams (server-sent events) whenever a
 * group's state, generation, members, history or lag changes.
 *
 * The page (page/index.html, compiled in: nothing is fetched from the
 * internet at run time) draws the groups, then for the one chosen its
 * members, a partition-to-owner grid with each partition's lag, and the
 * rebalance timeline from /v1/groups/G/rebalances: one lane per member with
 * when it owned partitions and when it was paused (and why), and a marker
 * per rebalance with its generations, cause and barrier holder. It fetches
 * the group's pages again on every event that changes the group.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cohortd/admin.h"
#include "group/ch_coord_whatif.h"
#include "meta/ch_topics.h"

extern const unsigned char admin_page_html[];
extern const size_t admin_page_html_len;

void
admin_page_ui(ch_http_reply *out)
{
	out->content_type = "text/html; charset=utf-8";
	ch_buf_append(&out->body, admin_page_html, admin_page_html_len);
}

static int32_t
topic_partitions(void *ud, const char *name, size_t len)
{
	const ch_topic *t = ch_topics_find(ud, name, len);
	return t ? t->partitions : -1;
}

/* One partition of the grid. */
typedef struct grid_row {
	char *topic;
	int32_t partition;
	int32_t owner; /* index in the snapshot's members, -1: nobody */
	int64_t committed;
} grid_row;

typedef struct grid {
	grid_row *r;
	size_t n, cap;
} grid;

static grid_row *
grid_get(grid *g, const char *topic, size_t tlen, int32_t partition)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->r[i].partition == partition && strlen(g->r[i].topic) == tlen &&
		    memcmp(g->r[i].topic, topic, tlen) == 0)
			return &g->r[i];
	if (g->n == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 32;
		g->r = ch_xrealloc(g->r, g->cap * sizeof(*g->r));
	}
	char *t = ch_xmalloc(tlen + 1);
	memcpy(t, topic, tlen);
	t[tlen] = '\0';
	g->r[g->n] = (grid_row){t, partition, -1, -1};
	return &g->r[g->n++];
}

static void
grid_commit(void *ud, const ch_coord_offset_view *o)
{
	grid_get(ud, o->topic, o->tlen, o->partition)->committed = o->offset;
}

static int
row_cmp(const void *x, const void *y)
{
	const grid_row *a = x, *b = y;
	int c = strcmp(a->topic, b->topic);
	return c ? c : (a->partition > b->partition) - (a->partition < b->partition);
}

void
admin_page_partitions(const admin_sources *src, const char *id, ch_http_reply *out)
{
	ch_coord_whatif_group g;
	if (!ch_coord_whatif_snapshot(src->bk->coord, id, topic_partitions, src->bk->topics, &g)) {
		json_t *o = json_pack("{s:s,s:s}", "error", "no such group", "group_id", id);
		out->status = 404;
		admin_reply_json(out, o);
		return;
	}
	/* every partition of the topics subscribed, those committed, owners */
	grid gr = {0};
	for (int32_t t = 0; t < g.n_topics; t++)
		for (int32_t p = 0; p < g.topics[t].partitions; p++)
			grid_get(&gr, g.topics[t].name.p, (size_t)g.topics[t].name.len, p);
	ch_coord_foreach_offset(src->bk->coord, id, grid_commit, &gr);
	for (int32_t i = 0; i < g.n_members; i++) {
		int32_t n;
		ch_assign_tp *tps = ch_coord_whatif_owned(&g, i, &n);
		for (int32_t k = 0; k < n; k++)
			grid_get(&gr, g.topics[tps[k].topic].name.p,
				 (size_t)g.topics[tps[k].topic].name.len, tps[k].partition)
				->owner = i;
		free(tps);
	}
	if (gr.n)
		qsort(gr.r, gr.n, sizeof(*gr.r), row_cmp);
	json_t *rows = json_array();
	for (size_t i = 0; i < gr.n; i++) {
		const grid_row *r = &gr.r[i];
		int64_t start = -1, end = -1;
		bool have = admin_part_offsets(src->bk, r->topic, r->partition, &start, &end);
		/* the CLI's rule: max(0, end - max(committed, start)); null when no commit */
		int64_t from = r->committed > start ? r->committed : start;
		json_t *e = json_object();
		json_object_set_new(e, "topic", json_string(r->topic));
		json_object_set_new(e, "partition", json_integer(r->partition));
		json_object_set_new(e, "owner",
				    r->owner >= 0 ? json_string(g.members[r->owner].member_id)
						  : json_null());
		json_object_set_new(e, "committed",
				    r->committed >= 0 ? json_integer(r->committed) : json_null());
		json_object_set_new(e, "log_start", have ? json_integer(start) : json_null());
		json_object_set_new(e, "log_end", have ? json_integer(end) : json_null());
		json_object_set_new(e, "lag",
				    have && r->committed >= 0
					    ? json_integer(end > from ? end - from : 0)
					    : json_null());
		json_array_append_new(rows, e);
		free(r->topic);
	}
	free(gr.r);
	json_t *members = json_array();
	for (int32_t i = 0; i < g.n_members; i++)
		json_array_append_new(
			members, json_pack("{s:s,s:s?,s:s?}", "member_id", g.members[i].member_id,
					   "client_id", g.members[i].client_id, "group_instance_id",
					   g.members[i].instance_id));
	json_t *o = json_object();
	json_object_set_new(o, "group_id", json_string(id));
	json_object_set_new(o, "state", json_string(ch_coord_group_state_name(g.state)));
	json_object_set_new(o, "generation", json_integer(g.generation));
	json_object_set_new(o, "members", members);
	json_object_set_new(o, "partitions", rows);
	ch_coord_whatif_group_free(&g);
	admin_reply_json(out, o);
}

/* ---- the summary the event stream sends ---- */

typedef struct sum_ctx {
	const admin_sources *src;
	json_t *groups;
	int64_t lag;
	int32_t rebalances;
	int64_t last_change;
} sum_ctx;

static void
sum_offset(void *ud, const ch_coord_offset_view *o)
{
	sum_ctx *x = ud;
	char t[256];
	if (o->tlen >= sizeof(t))
		return;
	memcpy(t, o->topic, o->tlen);
	t[o->tlen] = '\0';
	int64_t start, end;
	if (!admin_part_offsets(x->src->bk, t, o->partition, &start, &end))
		return;
	int64_t from = o->offset > start ? o->offset : start;
	x->lag += end > from ? end - from : 0;
}

static void
sum_rebalance(void *ud, const ch_coord_rebalance *r)
{
	sum_ctx *x = ud;
	x->rebalances++;
	int64_t t = r->end_ms >= 0 ? r->end_ms : r->start_ms;
	if (t > x->last_change)
		x->last_change = t;
}

static void
sum_group(void *ud, const ch_coord_group_view *g)
{
	sum_ctx *x = ud;
	x->lag = 0;
	x->rebalances = 0;
	x->last_change = -1;
	ch_coord_foreach_offset(x->src->bk->coord, g->group_id, sum_offset, x);
	ch_coord_foreach_rebalance(x->src->bk->coord, g->group_id, sum_rebalance, x);
	json_t *o = json_object();
	admin_group_head(o, g->group_id, g->state, g->protocol_type, g->protocol, g->generation);
	json_object_set_new(o, "members", json_integer(g->members));
	json_object_set_new(o, "rebalances", json_integer(x->rebalances));
	json_object_set_new(o, "last_rebalance_ms",
			    x->last_change >= 0 ? json_integer(x->last_change) : json_null());
	json_object_set_new(o, "total_lag", json_integer(x->lag));
	json_array_append_new(x->groups, o);
}

void
admin_render_summary(const admin_sources *src, ch_buf *b)
{
	sum_ctx x = {src, json_array(), 0, 0, -1};
	ch_coord_foreach_group(src->bk->coord, sum_group, &x);
	json_t *o = json_object();
	json_object_set_new(o, "groups", x.groups);
	char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_SORT_KEYS);
	json_decref(o);
	if (!s) {
		b->oom = true;
		return;
	}
	ch_buf_printf(b, "event: groups\ndata: %s\n\n", s);
	free(s);
}
