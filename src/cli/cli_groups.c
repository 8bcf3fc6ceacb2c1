/*
 * cli_groups.c: `cohort groups list` and `cohort groups describe`, the
 * views of kafka-consumer-groups with its column names, and lag done right:
 *
 *   LAG = max(0, LOG-END-OFFSET - max(CURRENT-OFFSET, LOG-START-OFFSET))
 *
 * read committed offsets first and end offsets after (end offsets only
 * grow, so lag is never negative while producers and the group run); a
 * partition never committed shows "-" (no "fake lag"); a commit below the
 * log start (records deleted before the group read them) and a partition
 * with lag that nobody owns are flagged under the table.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

/* ---- groups list ---- */

static const cli_opt list_opts[] = {
	{"state", "S", "only groups in state S (Stable, Empty, PreparingRebalance, ...)", true},
	{"type", "T", "only groups of type T (classic, consumer)", true},
	{NULL, NULL, NULL, false},
};

/* A group type as Kafka's tool prints it (GroupType's names: "Classic",
 * "Consumer"); NULL ("-") when not known. */
static const char *
type_name(const char *type)
{
	static const char *const names[] = {"Classic", "Consumer", "Share", "Streams"};
	for (size_t i = 0; type && i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasecmp(type, names[i]) == 0)
			return names[i];
	return type;
}

static int
run_list(cli_args *a)
{
	int ns, nt;
	const char *const *states = cli_opt_all(a, "state", &ns);
	const char *const *types = cli_opt_all(a, "type", &nt);
	cohort_admin *ad = a->admin;
	cohort_group_list *l = NULL;
	cohort_err e = cohort_admin_list_groups(ad, states, (size_t)ns, types, (size_t)nt, -1, &l);
	cohort_group_descriptions *d = NULL;
	if (!e && l && l->groups_n) {
		const char **ids = calloc(l->groups_n, sizeof(char *));
		for (size_t i = 0; ids && i < l->groups_n; i++)
			ids[i] = l->groups[i].group_id;
		if (ids)
			cohort_admin_describe_consumer_groups(ad, ids, l->groups_n, -1, &d);
		free(ids);
	}
	if (e) {
		cohort_group_list_free(l);
		return cli_fail(cli_status(e), "groups list: %s", cohort_err_str(e));
	}
	static const char *const hdr[] = {"GROUP",         "TYPE",     "STATE",
					  "PROTOCOL-TYPE", "PROTOCOL", "#MEMBERS"};
	cli_table *t = a->json ? NULL : cli_table_new(hdr, 6);
	json_t *arr = a->json ? json_array() : NULL;
	for (size_t i = 0; i < l->groups_n; i++) {
		const cohort_group_listing *g = &l->groups[i];
		const cohort_group_description *gd = d && i < d->groups_n ? &d->groups[i] : NULL;
		if (gd && (gd->err || !gd->state || !gd->protocol))
			gd = NULL; /* not described: what the listing says */
		char members[16] = "-";
		if (gd)
			snprintf(members, sizeof(members), "%zu", gd->members_n);
		const char *state = gd ? gd->state : g->state;
		const char *proto = gd && gd->protocol[0] ? gd->protocol : "-";
		const char *ptype = g->protocol_type[0] ? g->protocol_type : "-";
		/* ListGroups v5+ says; an older broker has classic groups only, which
		 * the describe names (NULL: not described) */
		const char *type = g->type ? g->type : gd ? gd->type : NULL;
		if (arr)
			json_array_append_new(
				arr, json_pack("{s:s,s:s?,s:s?,s:s,s:s,s:i}", "group", g->group_id,
					       "type", type, "state", state, "protocol_type",
					       g->protocol_type, "protocol", gd ? gd->protocol : "",
					       "members", gd ? (int)gd->members_n : -1));
		else
			cli_table_add(t, (const char *const[]){g->group_id, type_name(type), state,
							       ptype, proto, members});
	}
	if (arr)
		cli_json_print(arr);
	else
		cli_table_print(t, stdout);
	cli_table_free(t);
	cohort_group_descriptions_free(d);
	cohort_group_list_free(l);
	return CLI_OK;
}

/* ---- groups describe ---- */

/* The row of (topic, partition), added when missing; NULL on OOM. */
static cli_part_row *
row_get(cli_rows *rs, const char *topic, int32_t partition)
{
	for (size_t i = 0; i < rs->n; i++)
		if (rs->r[i].partition == partition && strcmp(rs->r[i].topic, topic) == 0)
			return &rs->r[i];
	if (!cli_grow(&rs->r, &rs->cap, rs->n, sizeof(*rs->r)))
		return NULL;
	rs->r[rs->n] = (cli_part_row){topic, partition, -1, -1, -1, COHORT_OK, NULL};
	return &rs->r[rs->n++];
}

int
cli_row_cmp(const void *x, const void *y)
{
	const cli_part_row *a = x, *b = y;
	int c = strcmp(a->topic, b->topic);
	return c ? c : (a->partition > b->partition) - (a->partition < b->partition);
}

int64_t
cli_lag(const cli_part_row *r)
{
	if (r->committed < 0 || r->end < 0)
		return -1;
	int64_t from = r->committed > r->start ? r->committed : r->start;
	return r->end > from ? r->end - from : 0;
}

static const cli_opt describe_opts[] = {
	{"members", NULL, "the members view: CONSUMER-ID, HOST, CLIENT-ID, #PARTITIONS", false},
	{"verbose", NULL,
	 "with --members: each member's assignment and epochs; with --state: GROUP-EPOCH and "
	 "TARGET-ASSIGNMENT-EPOCH",
	 false},
	{"state", NULL, "the state view: COORDINATOR, ASSIGNMENT-STRATEGY, STATE, #MEMBERS", false},
	{NULL, NULL, NULL, false},
};

/* "t:0,1;u:2" for a member's assignment, as Kafka 4.4's tool writes it;
 * "-" for none. */
static void
assignment_text(const cohort_tp *tp, size_t n, char *buf, size_t size)
{
	size_t o = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && o + 1 < size; i++) {
		bool first = i == 0 || strcmp(tp[i - 1].topic, tp[i].topic);
		o += (size_t)snprintf(buf + o, size - o, "%s%s%s%d", first && i ? ";" : "",
				      first ? tp[i].topic : "", first ? ":" : ",", tp[i].partition);
	}
	if (!n)
		snprintf(buf, size, "-");
}

/* An epoch as json: null when the group has none (a classic group). */
static json_t *
json_epoch(int32_t e)
{
	return e < 0 ? json_null() : json_integer(e);
}

/* Kafka's note on stderr before any view of a group that is not active
 * (kafka-consumer-groups' shouldPrintMemberState): no members, or
 * rebalancing (a consumer group's Assigning and Reconciling too). */
static void
state_note(const cohort_group_description *g)
{
	if (strcmp(g->state, "Empty") == 0 || strcmp(g->state, "Dead") == 0)
		fprintf(stderr, "\nConsumer group '%s' has no active members.\n", g->group_id);
	else if (strcasecmp(g->state, "PreparingRebalance") == 0 ||
		 strcasecmp(g->state, "CompletingRebalance") == 0 ||
		 strcasecmp(g->state, "Assigning") == 0 || strcasecmp(g->state, "Reconciling") == 0)
		fprintf(stderr, "\nWarning: Consumer group '%s' is rebalancing.\n", g->group_id);
}

static int
print_members(const cli_args *a, const cohort_group_description *g)
{
	/* Kafka 4.4's columns: GROUP-INSTANCE-ID only when a member has one;
	 * --verbose adds the epochs and assignments (KIP-1099's: the member's
	 * epoch, the group's target assignment epoch; a classic group has no
	 * epochs and no target: "-"), and UPGRADED when a consumer group has
	 * members of both protocols (KIP-848's migration): true for a
	 * consumer-protocol member, false for a classic one, "-" unknown */
	bool verbose = cli_opt_has(a, "verbose"), statics = false, classic = false,
	     consumer = false;
	for (size_t i = 0; i < g->members_n; i++) {
		const char *mt = g->members[i].member_type;
		statics |= g->members[i].group_instance_id != NULL;
		classic |= mt && strcmp(mt, "classic") == 0;
		consumer |= mt && strcmp(mt, "consumer") == 0;
	}
	bool upgraded_col = verbose && classic && consumer;
	const char *hdr[11];
	int nc = 0;
	hdr[nc++] = "GROUP";
	hdr[nc++] = "CONSUMER-ID";
	if (statics)
		hdr[nc++] = "GROUP-INSTANCE-ID";
	hdr[nc++] = "HOST";
	hdr[nc++] = "CLIENT-ID";
	hdr[nc++] = "#PARTITIONS";
	if (verbose) {
		hdr[nc++] = "CURRENT-EPOCH";
		hdr[nc++] = "CURRENT-ASSIGNMENT";
		hdr[nc++] = "TARGET-EPOCH";
		hdr[nc++] = "TARGET-ASSIGNMENT";
	}
	if (upgraded_col)
		hdr[nc++] = "UPGRADED";
	cli_table *t = a->json ? NULL : cli_table_new(hdr, nc);
	json_t *arr = a->json ? json_array() : NULL;
	for (size_t i = 0; i < g->members_n; i++) {
		const cohort_member_description *m = &g->members[i];
		bool cg = m->member_epoch >= 0; /* a consumer group's member */
		char np[16], asg[4096], tasg[4096], cur_epoch[16], tgt_epoch[16];
		snprintf(np, sizeof(np), "%zu", m->assignment_n);
		snprintf(cur_epoch, sizeof(cur_epoch), "%d", m->member_epoch);
		snprintf(tgt_epoch, sizeof(tgt_epoch), "%d", g->assignment_epoch);
		assignment_text(m->assignment, m->assignment_n, asg, sizeof(asg));
		assignment_text(m->target_assignment, m->target_assignment_n, tasg, sizeof(tasg));
		if (arr) {
			json_t *o = json_pack("{s:s,s:s,s:s?,s:s,s:s,s:i,s:s}", "group",
					      g->group_id, "consumer_id", m->member_id,
					      "group_instance_id", m->group_instance_id, "host",
					      m->host, "client_id", m->client_id, "partitions",
					      (int)m->assignment_n, "assignment", asg);
			json_object_set_new(o, "current_epoch", json_epoch(m->member_epoch));
			json_object_set_new(o, "target_epoch",
					    json_epoch(cg ? g->assignment_epoch : -1));
			json_object_set_new(o, "target_assignment",
					    cg ? json_string(tasg) : json_null());
			json_object_set_new(o, "upgraded",
					    m->member_type ? json_boolean(strcmp(m->member_type,
										 "consumer") == 0)
							   : json_null());
			json_array_append_new(arr, o);
			continue;
		}
		const char *row[11];
		int k = 0;
		row[k++] = g->group_id;
		row[k++] = m->member_id;
		if (statics) /* a dynamic member's is blank, as Kafka's tool prints "" */
			row[k++] = m->group_instance_id ? m->group_instance_id : "";
		row[k++] = m->host;
		row[k++] = m->client_id;
		row[k++] = np;
		if (verbose) {
			row[k++] = cg ? cur_epoch : NULL;
			row[k++] = asg;
			row[k++] = cg ? tgt_epoch : NULL;
			row[k++] = cg ? tasg : NULL;
		}
		if (upgraded_col) /* Java's Optional<Boolean>.toString, "-" if absent */
			row[k++] = !m->member_type                           ? NULL
				   : strcmp(m->member_type, "consumer") == 0 ? "true"
									     : "false";
		cli_table_add(t, row);
	}
	if (arr) {
		cli_json_print(arr);
	} else {
		state_note(g);
		printf("\n");
		cli_table_print(t, stdout);
	}
	cli_table_free(t);
	return CLI_OK;
}

/* The state view as Kafka 4.4's tool prints it ("-" for no strategy, the
 * coordinator as "host:port  (id)"); --verbose adds GROUP-EPOCH and
 * TARGET-ASSIGNMENT-EPOCH, which a classic group does not have: "-", as
 * Kafka prints them for such a group. */
static int
print_state(const cli_args *a, const cohort_group_description *g)
{
	char coord[300], nm[16];
	snprintf(coord, sizeof(coord), "%s:%d  (%d)",
		 g->coordinator.host ? g->coordinator.host : "", g->coordinator.port,
		 g->coordinator.id);
	snprintf(nm, sizeof(nm), "%zu", g->members_n);
	bool verbose = cli_opt_has(a, "verbose");
	if (a->json) {
		json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:i}", "group", g->group_id, "coordinator",
				      coord, "assignment_strategy", g->protocol, "state", g->state,
				      "members", (int)g->members_n);
		if (verbose) {
			json_object_set_new(o, "group_epoch", json_epoch(g->group_epoch));
			json_object_set_new(o, "target_assignment_epoch",
					    json_epoch(g->assignment_epoch));
		}
		cli_json_print(o);
		return CLI_OK;
	}
	state_note(g);
	static const char *const hdr[] = {"GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY",
					  "STATE", "#MEMBERS"};
	static const char *const vhdr[] = {"GROUP",   "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY",
					   "STATE",   "GROUP-EPOCH",      "TARGET-ASSIGNMENT-EPOCH",
					   "#MEMBERS"};
	cli_table *t = verbose ? cli_table_new(vhdr, 7) : cli_table_new(hdr, 5);
	const char *strategy = g->protocol[0] ? g->protocol : NULL;
	char ge[16], ae[16];
	snprintf(ge, sizeof(ge), "%d", g->group_epoch);
	snprintf(ae, sizeof(ae), "%d", g->assignment_epoch);
	if (verbose)
		cli_table_add(t, (const char *const[]){g->group_id, coord, strategy, g->state,
						       g->group_epoch < 0 ? NULL : ge,
						       g->assignment_epoch < 0 ? NULL : ae, nm});
	else
		cli_table_add(t, (const char *const[]){g->group_id, coord, strategy, g->state, nm});
	printf("\n");
	cli_table_print(t, stdout);
	cli_table_free(t);
	return CLI_OK;
}

cohort_err
cli_read_offsets(cohort_admin *ad, const cohort_group_description *g, cli_rows *rs,
		 cohort_group_offsets_list **committed)
{
	for (size_t i = 0; i < g->members_n; i++)
		for (size_t k = 0; k < g->members[i].assignment_n; k++) {
			cli_part_row *r = row_get(rs, g->members[i].assignment[k].topic,
						  g->members[i].assignment[k].partition);
			if (!r)
				return COHORT_ERR__NOMEM;
			r->owner = &g->members[i];
		}
	cohort_group_offsets_spec spec = {g->group_id, NULL, 0};
	cohort_err e = cohort_admin_list_group_offsets(ad, &spec, 1, 0, -1, committed);
	if (e)
		return e;
	const cohort_group_offsets *go = &(*committed)->groups[0];
	for (size_t i = 0; i < go->offsets_n; i++) {
		cli_part_row *r = row_get(rs, go->offsets[i].topic, go->offsets[i].partition);
		if (!r)
			return COHORT_ERR__NOMEM;
		r->committed = go->offsets[i].offset;
	}
	if (!rs->n)
		return COHORT_OK;
	/* after the commits: the end offsets can only have grown past them.
	 * Two calls, one spec each: a partition named twice in one
	 * ListOffsets would get one answer for both (Java's Map cannot ask
	 * that either). */
	cohort_offset_query *q = calloc(rs->n, sizeof(*q));
	if (!q)
		return COHORT_ERR__NOMEM;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < rs->n; i++)
			q[i] = (cohort_offset_query){.topic = rs->r[i].topic,
						     .partition = rs->r[i].partition,
						     .spec = pass ? COHORT_OFFSET_SPEC_LATEST
								  : COHORT_OFFSET_SPEC_EARLIEST};
		cohort_admin_list_offsets(ad, q, rs->n, -1);
		for (size_t i = 0; i < rs->n; i++) {
			if (pass)
				rs->r[i].end = q[i].err ? -1 : q[i].offset;
			else
				rs->r[i].start = q[i].err ? -1 : q[i].offset;
			if (q[i].err && !rs->r[i].err)
				rs->r[i].err = q[i].err;
		}
	}
	free(q);
	return COHORT_OK;
}

/* The offsets view, its notes and the summary line. */
static int64_t
print_offsets(const cli_args *a, const cohort_group_description *g, cli_rows *rs)
{
	if (rs->n) /* none: a group rebalancing with no commits (rs->r is NULL) */
		qsort(rs->r, rs->n, sizeof(*rs->r), cli_row_cmp);
	static const char *const hdr[] = {"GROUP",          "TOPIC",          "PARTITION",
					  "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
					  "CONSUMER-ID",    "HOST",           "CLIENT-ID"};
	cli_table *t = a->json ? NULL : cli_table_new(hdr, 9);
	json_t *arr = a->json ? json_array() : NULL;
	int64_t total = 0;
	size_t unowned = 0;
	for (size_t i = 0; i < rs->n; i++) {
		const cli_part_row *r = &rs->r[i];
		int64_t lag = cli_lag(r);
		if (lag > 0)
			total += lag;
		if (!r->owner)
			unowned++;
		char p[16], cur[24], end[24], l[24];
		snprintf(p, sizeof(p), "%d", r->partition);
		snprintf(cur, sizeof(cur), "%lld", (long long)r->committed);
		snprintf(end, sizeof(end), "%lld", (long long)r->end);
		snprintf(l, sizeof(l), "%lld", (long long)lag);
		const cohort_member_description *m = r->owner;
		if (arr) {
			json_t *o = json_pack("{s:s,s:s,s:i}", "group", g->group_id, "topic",
					      r->topic, "partition", r->partition);
			json_object_set_new(o, "current_offset",
					    r->committed < 0 ? json_null()
							     : json_integer(r->committed));
			json_object_set_new(o, "log_start_offset",
					    r->start < 0 ? json_null() : json_integer(r->start));
			json_object_set_new(o, "log_end_offset",
					    r->end < 0 ? json_null() : json_integer(r->end));
			json_object_set_new(o, "lag", lag < 0 ? json_null() : json_integer(lag));
			json_object_set_new(o, "committed_below_log_start",
					    json_boolean(r->committed >= 0 && r->start >= 0 &&
							 r->committed < r->start));
			json_object_set_new(o, "consumer_id",
					    m ? json_string(m->member_id) : json_null());
			json_object_set_new(o, "host", m ? json_string(m->host) : json_null());
			json_object_set_new(o, "client_id",
					    m ? json_string(m->client_id) : json_null());
			json_array_append_new(arr, o);
		} else {
			cli_table_add(t, (const char *const[]){
						 g->group_id, r->topic, p,
						 r->committed < 0 ? NULL : cur,
						 r->end < 0 ? NULL : end, lag < 0 ? NULL : l,
						 m ? m->member_id : NULL, m ? m->host : NULL,
						 m ? m->client_id : NULL});
		}
	}
	if (arr) {
		json_t *o = json_pack("{s:s,s:s,s:s,s:i,s:I,s:i}", "group", g->group_id, "state",
				      g->state, "protocol", g->protocol, "members",
				      (int)g->members_n, "total_lag", (json_int_t)total,
				      "partitions_without_owner", (int)unowned);
		json_object_set_new(o, "partitions", arr);
		cli_json_print(o);
		return total;
	}
	state_note(g);
	printf("\n");
	cli_table_print(t, stdout);
	cli_table_free(t);
	for (size_t i = 0; i < rs->n; i++) {
		const cli_part_row *r = &rs->r[i];
		if (r->committed >= 0 && r->start >= 0 && r->committed < r->start)
			printf("Note: %s-%d: committed offset %lld is below the log start offset "
			       "%lld: records %lld..%lld were deleted before the group read "
			       "them.\n",
			       r->topic, r->partition, (long long)r->committed, (long long)r->start,
			       (long long)r->committed, (long long)r->start - 1);
		if (!r->owner && cli_lag(r) > 0 && g->members_n > 0)
			printf("Note: %s-%d has lag %lld and no owner in the group.\n", r->topic,
			       r->partition, (long long)cli_lag(r));
		if (r->err)
			printf("Note: %s-%d: offsets not read: %s.\n", r->topic, r->partition,
			       cohort_err_str(r->err));
	}
	printf("\n%s: state %s, protocol %s, %zu member%s, total lag %lld, %zu partition%s "
	       "without an owner\n",
	       g->group_id, g->state, g->protocol[0] ? g->protocol : "-", g->members_n,
	       g->members_n == 1 ? "" : "s", (long long)total, unowned, unowned == 1 ? "" : "s");
	return total;
}

/* One describe of a->pos[0] in the view the options name; *total_lag
 * (may be NULL) gets the offsets view's total lag. */
static int
describe_once(const cli_args *a, cohort_admin *ad, int64_t *total_lag)
{
	cohort_group_descriptions *d = NULL;
	cohort_err e = cohort_admin_describe_consumer_groups(ad, a->pos, 1, -1, &d);
	const cohort_group_description *g = d && d->groups_n ? &d->groups[0] : NULL;
	if (!g || g->err) {
		e = g ? g->err : e;
		cohort_group_descriptions_free(d);
		return cli_fail(cli_status(e), "groups describe: group '%s': %s", a->pos[0],
				cohort_err_str(e));
	}
	cli_rows rs = {0};
	cohort_group_offsets_list *committed = NULL;
	int rc = CLI_OK;
	if (cli_opt_has(a, "members")) {
		rc = print_members(a, g);
	} else if (cli_opt_has(a, "state")) {
		rc = print_state(a, g);
	} else if ((e = cli_read_offsets(ad, g, &rs, &committed)) != COHORT_OK) {
		rc = cli_fail(cli_status(e), "groups describe: group '%s': %s", g->group_id,
			      cohort_err_str(e));
	} else if (strcmp(g->state, "Dead") == 0 && rs.n == 0) {
		rc = cli_fail(CLI_ENOTFOUND, "groups describe: Consumer group '%s' does not exist.",
			      g->group_id);
	} else {
		int64_t lag = print_offsets(a, g, &rs);
		if (total_lag)
			*total_lag = lag;
	}
	free(rs.r);
	cohort_group_offsets_list_free(committed);
	cohort_group_descriptions_free(d);
	return rc;
}

/* --members and --state together: a printed usage failure. */
static int
one_view(const cli_args *a)
{
	if (cli_opt_has(a, "members") && cli_opt_has(a, "state"))
		return cli_fail(CLI_EUSAGE, "--members and --state are two views: give one");
	return CLI_OK;
}

static int
run_describe(cli_args *a)
{
	if (one_view(a))
		return CLI_EUSAGE;
	int rc = CLI_OK;
	cohort_admin *ad = a->admin;
	rc = describe_once(a, ad, NULL);
	return rc;
}

/* ---- groups watch ---- */

static const cli_opt watch_opts[] = {
	{"members", NULL, "watch the members view", false},
	{"verbose", NULL, "with --members: the assignments too", false},
	{"state", NULL, "watch the state view", false},
	{"interval", "SPAN", "time between refreshes: 2 (seconds), 500ms, 1m (default 2s)", false},
	{"iterations", "N", "stop after N refreshes (default: until interrupted)", false},
	{NULL, NULL, NULL, false},
};

static int
run_watch(cli_args *a)
{
	const char *iv = cli_opt_get(a, "interval");
	int64_t interval = iv ? cli_parse_span(iv) : 2000, iterations;
	if (interval < 1 || interval > 3600000)
		return cli_fail(CLI_EUSAGE,
				"--interval: expected a duration from 1ms to 1h (2, 500ms, 1m), "
				"got '%s'",
				iv);
	int rc = one_view(a);
	if (!rc)
		rc = cli_opt_int(a, "iterations", 1, INT64_MAX, -1, &iterations);
	if (rc)
		return rc;
	cohort_admin *ad = a->admin;
	cli_catch_stop_signals();
	bool tty = isatty(STDOUT_FILENO);
	int64_t prev_lag = -1;
	for (int64_t n = 0; !cli_stop_requested && (iterations < 0 || n < iterations); n++) {
		if (tty)
			fputs("\033[H\033[2J", stdout); /* home, clear */
		time_t now = time(NULL);
		char when[32];
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
		if (!a->json)
			printf("Every %gs: cohort groups describe %s\t%s\n",
			       (double)interval / 1000, a->pos[0], when);
		int64_t lag = -1;
		rc = describe_once(a, ad, &lag);
		if (!a->json && lag >= 0 && prev_lag >= 0)
			printf("lag rate: %+.1f records/s\n",
			       (double)(lag - prev_lag) * 1000 / (double)interval);
		fflush(stdout);
		prev_lag = lag;
		if (rc != CLI_OK && rc != CLI_ENOTFOUND)
			break; /* a group not there yet may come: keep watching */
		struct timespec until, t;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += interval / 1000;
		until.tv_nsec += (interval % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		while (!cli_stop_requested && (iterations < 0 || n + 1 < iterations) &&
		       clock_gettime(CLOCK_MONOTONIC, &t) == 0 &&
		       (t.tv_sec < until.tv_sec ||
			(t.tv_sec == until.tv_sec && t.tv_nsec < until.tv_nsec)))
			usleep(5000);
	}
	return cli_stop_requested ? CLI_OK : rc;
}

const cli_command cli_groups_list_cmd = {
	"groups list", "",  "the cluster's groups with state, protocol and members",
	list_opts,     0,   0,
	run_list,      true};
const cli_command cli_groups_describe_cmd = {
	"groups describe",
	"GROUP",
	"a group's partitions with committed offset, end offset, lag and owner (or --members, "
	"--state)",
	describe_opts,
	1,
	1,
	run_describe,
	true};
const cli_command cli_groups_watch_cmd = {
	"groups watch",
	"GROUP",
	"describe refreshed live (owners, lag and its rate) until interrupted",
	watch_opts,
	1,
	1,
	run_watch,
	true};
