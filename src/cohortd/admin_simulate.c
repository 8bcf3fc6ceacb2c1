/*
 * admin_simulate: /v1/groups/G/simulate, the assignors' what-if (issue 12)
 * for a live classic group of protocol type consumer: what range,
 * roundrobin, sticky and cooperative-sticky would give its members, with
 * members added or removed, and how balanced, how many partitions would
 * move, how many rounds a cooperative change would take. The group is not
 * touched.
 *
 *   ?strategy=S        one assignor (repeatable; none: all four)
 *   &add_member=N      N new members subscribing to the group's topics
 *   &remove_member=ID  a member (id or group.instance.id) leaving (repeatable)
 *
 * The loop pays for a copy of the group (ch_coord_whatif_snapshot: what a
 * DescribeGroups answer walks); the assignors run on the HTTP thread
 * (ch_http_reply.finish), so a large group does not hold up the Kafka
 * listener.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cohortd/admin.h"
#include "group/ch_coord_whatif.h"
#include "meta/ch_topics.h"

#define MAX_ADD 10000   /* members a what-if may add */
#define MAX_REMOVE 256  /* remove_member arguments */
#define MAX_STRATEGY 16 /* strategy arguments */

static const ch_assign_kind all_kinds[] = {CH_ASSIGN_RANGE, CH_ASSIGN_ROUNDROBIN, CH_ASSIGN_STICKY,
					   CH_ASSIGN_COOPERATIVE_STICKY};

/* What the HTTP thread gets: the copy and the question. */
typedef struct simulate_job {
	ch_coord_whatif_group g;
	ch_assign_kind kinds[MAX_STRATEGY];
	int nkinds;
	int32_t add;
	char *remove[MAX_REMOVE];
	int nremove;
} simulate_job;

static void
job_free(simulate_job *j)
{
	ch_coord_whatif_group_free(&j->g);
	for (int i = 0; i < j->nremove; i++)
		free(j->remove[i]);
	free(j);
}

static void
error_reply(ch_http_reply *out, int status, const char *group, const char *msg)
{
	json_t *o = json_object();
	json_object_set_new(o, "error", json_string(msg));
	json_object_set_new(o, "group_id", group ? json_string(group) : json_null());
	out->status = status;
	admin_reply_json(out, o);
}

/* Parses the query into j; false with *msg set (a 400). */
static bool
parse_query(const char *query, simulate_job *j, char *msg, size_t cap)
{
	for (const char *p = query; *p;) {
		size_t n = strcspn(p, "&");
		const char *eq = memchr(p, '=', n);
		char key[64], val[1024];
		size_t kn = eq ? (size_t)(eq - p) : n;
		if (!admin_pct_decode(p, kn, key, sizeof(key)) ||
		    !admin_pct_decode(eq ? eq + 1 : "", eq ? n - kn - 1 : 0, val, sizeof(val))) {
			snprintf(msg, cap, "bad escape in the query: %.*s", (int)n, p);
			return false;
		}
		if (strcmp(key, "strategy") == 0) {
			int k = ch_assign_kind_by_name(ch_str_c(val));
			if (k < 0 || k > CH_ASSIGN_COOPERATIVE_STICKY) {
				snprintf(msg, cap,
					 "strategy: not one of range, roundrobin, sticky, "
					 "cooperative-sticky: %s",
					 val);
				return false;
			}
			if (j->nkinds == MAX_STRATEGY) {
				snprintf(msg, cap, "strategy: at most %d", MAX_STRATEGY);
				return false;
			}
			j->kinds[j->nkinds++] = (ch_assign_kind)k;
		} else if (strcmp(key, "add_member") == 0) {
			char *end;
			long v = strtol(val, &end, 10);
			if (!*val || *end || v < 0 || v > MAX_ADD) {
				snprintf(msg, cap,
					 "add_member: a number of members from 0 to %d: %s",
					 MAX_ADD, val);
				return false;
			}
			j->add = (int32_t)v;
		} else if (strcmp(key, "remove_member") == 0) {
			if (!*val || j->nremove == MAX_REMOVE) {
				snprintf(msg, cap, "remove_member: a member id (at most %d)",
					 MAX_REMOVE);
				return false;
			}
			j->remove[j->nremove++] = strdup(val);
		} else {
			snprintf(
				msg, cap,
				"unknown query argument '%s' (strategy, add_member, remove_member)",
				key);
			return false;
		}
		p += n + (p[n] == '&');
	}
	return true;
}

/* Partitions (sorted by topic) as {"topic": [p, ...], ...}. */
static json_t *
parts_json(const ch_coord_whatif_group *g, const ch_assign_tp *tps, int32_t n)
{
	json_t *o = json_object();
	json_t *cur = NULL;
	for (int32_t i = 0; i < n; i++) {
		if (!i || tps[i].topic != tps[i - 1].topic) {
			cur = json_array();
			json_object_set_new(o, g->topics[tps[i].topic].name.p, cur);
		}
		json_array_append_new(cur, json_integer(tps[i].partition));
	}
	return o;
}

static json_t *
result_json(const ch_coord_whatif_group *g, const ch_coord_whatif_result *r)
{
	json_t *o = json_object();
	json_object_set_new(o, "strategy", json_string(ch_assign_name(r->kind)));
	json_t *as = json_array();
	for (int32_t i = 0; i < r->n_owners; i++) {
		const ch_coord_whatif_owner *w = &r->owners[i];
		json_t *m = json_object();
		json_object_set_new(m, "member_id", json_string(w->member_id));
		json_object_set_new(m, "simulated", json_boolean(w->simulated));
		json_object_set_new(m, "count", json_integer(w->n_after));
		json_object_set_new(m, "partitions", parts_json(g, w->after, w->n_after));
		json_array_append_new(as, m);
	}
	json_object_set_new(o, "assignment", as);
	json_object_set_new(o, "balance",
			    json_pack("{s:i,s:i,s:i}", "min", r->min_partitions, "max",
				      r->max_partitions, "spread",
				      r->max_partitions - r->min_partitions));
	json_object_set_new(o, "assigned", json_integer(r->assigned));
	json_object_set_new(o, "unassigned", json_integer(r->unassigned));
	json_object_set_new(o, "moved", json_integer(r->moved));
	json_object_set_new(o, "newly_assigned", json_integer(r->newly_assigned));
	json_object_set_new(o, "rounds", json_integer(r->rounds));
	json_object_set_new(o, "revoked_first_round", json_integer(r->revoked_first_round));
	json_object_set_new(o, "cooperative", json_boolean(ch_assign_is_cooperative(r->kind)));
	return o;
}

/* HTTP thread: the assignors on the copy, the page. */
static void
simulate_finish(ch_http_reply *out, void *ud)
{
	simulate_job *j = ud;
	if (!out) {
		job_free(j);
		return;
	}
	const ch_coord_whatif_group *g = &j->g;
	ch_coord_whatif_change chg = {j->add, (const char *const *)j->remove, j->nremove};
	json_t *o = json_object();
	admin_group_head(o, g->group_id, g->state, g->protocol_type, g->protocol, g->generation);
	json_t *rm = json_array();
	for (int i = 0; i < j->nremove; i++)
		json_array_append_new(rm, json_string(j->remove[i]));
	json_object_set_new(o, "change",
			    json_pack("{s:i,s:o}", "add_members", j->add, "remove_members", rm));
	/* the members now: who owns what, who the change removes */
	json_t *current = json_array();
	for (int32_t i = 0; i < g->n_members; i++) {
		const ch_coord_whatif_member *m = &g->members[i];
		bool gone = false;
		for (int x = 0; x < j->nremove; x++)
			gone |= strcmp(j->remove[x], m->member_id) == 0 ||
				(m->instance_id && strcmp(j->remove[x], m->instance_id) == 0);
		int32_t n;
		ch_assign_tp *tps = ch_coord_whatif_owned(g, i, &n);
		json_t *e = json_object();
		json_object_set_new(e, "member_id", json_string(m->member_id));
		json_object_set_new(e, "group_instance_id",
				    m->instance_id ? json_string(m->instance_id) : json_null());
		json_object_set_new(e, "client_id", json_string(m->client_id ? m->client_id : ""));
		json_object_set_new(e, "count", json_integer(n));
		json_object_set_new(e, "partitions", parts_json(g, tps, n));
		json_object_set_new(e, "removed", json_boolean(gone));
		json_array_append_new(current, e);
		free(tps);
	}
	json_t *strategies = json_array();
	for (int k = 0; k < j->nkinds; k++) {
		ch_coord_whatif_result r;
		if (ch_coord_whatif_run(g, j->kinds[k], &chg, &r) != CH_OK) {
			bool unknown = strstr(r.errstr, "has no member") != NULL;
			ch_coord_whatif_result_free(&r);
			json_decref(o);
			json_decref(strategies);
			json_decref(current);
			error_reply(out, unknown ? 400 : 409, g->group_id, r.errstr);
			job_free(j);
			return;
		}
		json_array_append_new(strategies, result_json(g, &r));
		ch_coord_whatif_result_free(&r);
	}
	json_object_set_new(o, "members", current);
	json_object_set_new(o, "strategies", strategies);
	admin_reply_json(out, o);
	job_free(j);
}

static int32_t
topic_partitions(void *ud, const char *name, size_t len)
{
	const ch_topic *t = ch_topics_find(ud, name, len);
	return t ? t->partitions : -1;
}

void
admin_page_simulate(const admin_sources *src, const char *id, const char *query, ch_http_reply *out)
{
	simulate_job *j = calloc(1, sizeof(*j));
	if (!j) {
		out->body.oom = true;
		return;
	}
	char msg[1200];
	if (!parse_query(query ? query : "", j, msg, sizeof(msg))) {
		error_reply(out, 400, id, msg);
		job_free(j);
		return;
	}
	if (!j->nkinds) {
		memcpy(j->kinds, all_kinds, sizeof(all_kinds));
		j->nkinds = (int)(sizeof(all_kinds) / sizeof(all_kinds[0]));
	}
	if (!ch_coord_whatif_snapshot(src->bk->coord, id, topic_partitions, src->bk->topics,
				      &j->g)) {
		error_reply(out, 404, id, "no such group");
		job_free(j);
		return;
	}
	out->content_type = "application/json";
	out->finish = simulate_finish;
	out->finish_ud = j;
}
