/*
 * admin_groups: the admin API's group pages, JSON built with Debian's
 * jansson, from the coordinator's state and rebalance history
 * (ch_coord.h) on the loop thread.
 *
 *   /v1/groups                 every group: state, protocol, generation, members
 *   /v1/groups/G               one group: its committed offsets with when
 *                              offsets retention removes them, its last rebalance
 *   /v1/groups/G/rebalances    its rebalance history, oldest first
 *
 * Times are wall-clock milliseconds since the epoch (the coordinator's
 * clock) and durations milliseconds; null where a step has not happened.
 */
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "cohortd/admin.h"
#include "group/ch_coord.h"

/* A time or duration: null when negative (not happened). */
static json_t *
ms_or_null(int64_t v)
{
	return v < 0 ? json_null() : json_integer(v);
}

static json_t *
str_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* Sets key to v (which it takes over); jansson refuses invalid UTF-8, so a
 * group or member id that is not UTF-8 becomes null rather than a failure. */
static void
put(json_t *o, const char *key, json_t *v)
{
	json_object_set_new(o, key, v ? v : json_null());
}

static json_t *
group_json(const ch_coord_group_view *g)
{
	json_t *o = json_object();
	put(o, "group_id", json_string(g->group_id));
	put(o, "state", json_string(ch_coord_group_state_name(g->state)));
	put(o, "protocol_type", str_or_null(g->protocol_type));
	put(o, "protocol", str_or_null(g->protocol));
	put(o, "generation", json_integer(g->generation));
	put(o, "members", json_integer(g->members));
	put(o, "committed_partitions", json_integer(g->offsets));
	return o;
}

static json_t *
str_list(char *const *v, int32_t n)
{
	json_t *a = json_array();
	for (int32_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

/* A count that is -1 when unknown. */
static json_t *
count_or_null(int32_t v)
{
	return v < 0 ? json_null() : json_integer(v);
}

/* The fields of one round; the record's top level repeats its last. */
static void
round_fields(json_t *o, const ch_coord_rebalance_round *rd)
{
	put(o, "generation", rd ? json_integer(rd->generation) : json_null());
	put(o, "join_end_ms", rd ? ms_or_null(rd->join_end_ms) : json_null());
	put(o, "join_ended_by", rd ? str_or_null(rd->join_ended_by) : json_null());
	put(o, "leader", rd ? str_or_null(rd->leader) : json_null());
	put(o, "assignment_sent_after_ms",
	    !rd || rd->leader_sync_ms < 0 || rd->join_end_ms < 0
		    ? json_null()
		    : json_integer(rd->leader_sync_ms - rd->join_end_ms));
	json_t *bar = json_object();
	put(bar, "member_id", rd ? str_or_null(rd->barrier_member) : json_null());
	put(bar, "after_first_join_ms", rd ? ms_or_null(rd->barrier_ms) : json_null());
	put(o, "barrier", bar);
}

/* One rebalance record; pause_ms by the eager or the cooperative rule
 * (ch_coord_rebalance_pause_ms). */
static json_t *
rebalance_json(const ch_coord_rebalance *r)
{
	json_t *o = json_object();
	const ch_coord_rebalance_round *last = ch_coord_rebalance_last_round(r);
	round_fields(o, last);
	put(o, "protocol_type", str_or_null(r->protocol_type));
	put(o, "protocol", str_or_null(r->protocol));
	put(o, "cooperative", json_boolean(r->cooperative));
	put(o, "start_ms", json_integer(r->start_ms));
	put(o, "end_ms", ms_or_null(r->end_ms));
	put(o, "duration_ms", r->end_ms < 0 ? json_null() : json_integer(r->end_ms - r->start_ms));
	put(o, "outcome", str_or_null(r->outcome));
	put(o, "follow_up_expected", json_boolean(r->follow_up_expected));
	json_t *cause = json_object();
	put(cause, "cause", json_string(ch_coord_cause_name(r->cause)));
	put(cause, "detail", str_or_null(r->cause_detail));
	put(o, "cause", cause);
	json_t *tr = json_array();
	for (int32_t i = 0; i < r->n_triggers; i++) {
		json_t *t = json_object();
		put(t, "cause", json_string(ch_coord_cause_name(r->triggers[i].cause)));
		put(t, "detail", str_or_null(r->triggers[i].detail));
		put(t, "at_ms", json_integer(r->triggers[i].at_ms));
		json_array_append_new(tr, t);
	}
	put(o, "triggers", tr);
	put(o, "triggers_dropped", json_integer(r->triggers_dropped));
	json_t *rounds = json_array();
	for (int32_t i = 0; i < r->n_rounds; i++) {
		json_t *x = json_object();
		round_fields(x, &r->rounds[i]);
		put(x, "partitions_revoked", count_or_null(r->rounds[i].partitions_revoked));
		json_array_append_new(rounds, x);
	}
	put(o, "rounds", rounds);
	put(o, "rounds_dropped", json_integer(r->rounds_dropped));
	put(o, "members_in", str_list(r->members_in, r->n_in));
	put(o, "members_out", str_list(r->members_out, r->n_out));
	json_t *ms = json_array();
	for (int32_t i = 0; i < r->n_members; i++) {
		const ch_coord_rebalance_member *m = &r->members[i];
		json_t *e = json_object();
		put(e, "member_id", json_string(m->member_id));
		put(e, "join_ms", ms_or_null(m->join_ms));
		put(e, "sync_ms", ms_or_null(m->sync_ms));
		put(e, "sync_generation", count_or_null(m->sync_generation));
		put(e, "pause_ms", ms_or_null(ch_coord_rebalance_pause_ms(r, m)));
		put(e, "partitions_before", count_or_null(m->partitions_before));
		put(e, "partitions_after", count_or_null(m->partitions_after));
		put(e, "partitions_lost", count_or_null(m->partitions_lost));
		json_array_append_new(ms, e);
	}
	put(o, "members", ms);
	put(o, "partitions_moved", count_or_null(r->partitions_moved));
	return o;
}

void
admin_group_head(json_t *o, const char *id, ch_coord_group_state state, const char *protocol_type,
		 const char *protocol, int32_t generation)
{
	put(o, "group_id", json_string(id));
	put(o, "state", json_string(ch_coord_group_state_name(state)));
	put(o, "protocol_type", str_or_null(protocol_type));
	put(o, "protocol", str_or_null(protocol));
	put(o, "generation", json_integer(generation));
}

void
admin_reply_json(ch_http_reply *out, json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(j);
	out->content_type = "application/json";
	if (!s) {
		out->body.oom = true;
		return;
	}
	ch_buf_append(&out->body, s, strlen(s));
	ch_buf_append(&out->body, "\n", 1);
	free(s);
}

static void
each_group(void *ud, const ch_coord_group_view *g)
{
	json_array_append_new(ud, group_json(g));
}

void
admin_page_groups(const admin_sources *src, ch_http_reply *out)
{
	json_t *a = json_array();
	ch_coord_foreach_group(src->bk->coord, each_group, a);
	json_t *o = json_object();
	put(o, "groups", a);
	admin_reply_json(out, o);
}

typedef struct find_ctx {
	const char *id;
	json_t *found;
} find_ctx;

static void
find_group(void *ud, const ch_coord_group_view *g)
{
	find_ctx *f = ud;
	if (!f->found && strcmp(g->group_id, f->id) == 0)
		f->found = group_json(g);
}

static void
each_rebalance(void *ud, const ch_coord_rebalance *r)
{
	json_array_append_new(ud, rebalance_json(r));
}

typedef struct offsets_ctx {
	json_t *list;
	int64_t earliest; /* INT64_MAX: none expires */
} offsets_ctx;

/* ch_coord_foreach_offset: one committed offset with its expiry. */
static void
each_offset(void *ud, const ch_coord_offset_view *o)
{
	offsets_ctx *x = ud;
	json_t *e = json_object();
	put(e, "topic", json_stringn(o->topic, o->tlen));
	put(e, "partition", json_integer(o->partition));
	put(e, "offset", json_integer(o->offset));
	put(e, "commit_ms", json_integer(o->commit_ms));
	put(e, "expires_ms",
	    o->expires_ms == INT64_MAX ? json_null() : json_integer(o->expires_ms));
	json_array_append_new(x->list, e);
	if (o->expires_ms < x->earliest)
		x->earliest = o->expires_ms;
}

static void
not_found(ch_http_reply *out, const char *id)
{
	json_t *o = json_object();
	put(o, "error", json_string("no such group"));
	put(o, "group_id", json_string(id));
	out->status = 404;
	admin_reply_json(out, o);
}

void
admin_page_group(const admin_sources *src, const char *id, bool rebalances, ch_http_reply *out)
{
	find_ctx f = {id, NULL};
	ch_coord_foreach_group(src->bk->coord, find_group, &f);
	if (!f.found) {
		not_found(out, id);
		return;
	}
	json_t *hist = json_array();
	ch_coord_foreach_rebalance(src->bk->coord, id, each_rebalance, hist);
	if (rebalances) {
		json_t *o = json_object();
		put(o, "group_id", json_string(id));
		put(o, "rebalances", hist);
		json_decref(f.found);
		admin_reply_json(out, o);
		return;
	}
	/* When its committed offsets expire (KIP-211), which no Kafka tool shows. */
	offsets_ctx ox = {json_array(), INT64_MAX};
	ch_coord_foreach_offset(src->bk->coord, id, each_offset, &ox);
	put(f.found, "offsets", ox.list);
	put(f.found, "offsets_expire_ms",
	    ox.earliest == INT64_MAX ? json_null() : json_integer(ox.earliest));
	size_t n = json_array_size(hist);
	put(f.found, "rebalances_kept", json_integer((json_int_t)n));
	put(f.found, "last_rebalance", n ? json_incref(json_array_get(hist, n - 1)) : json_null());
	json_decref(hist);
	admin_reply_json(out, f.found);
}
