/*
 * admin_metrics: GET /metrics, Prometheus text format 0.0.4, rendered on the
 * loop thread from the live counters of every layer (README "Admin API and
 * metrics" says what each family means).
 *
 * Names: the group coordinator's families follow Kafka's
 * group-coordinator-metrics (the Kafka name is in each HELP line) with
 * Prometheus conventions: counters end in _total, durations are histograms
 * in seconds, and a family is never called *_count (promtool reserves it
 * for histograms). Everything else is cohort_*.
 */
#include "cohortd/admin.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "api/ch_api.h"
#include "broker/ch_log_manager.h"
#include "log/ch_plog.h"
#include "common/ch_hist.h"
#include "group/ch_coord.h"
#include "meta/ch_topics.h"
#include "net/ch_server.h"
#include "proto/generated/ch_errors.h"

/* The length of the valid UTF-8 sequence at s (n bytes left), 0 if none. */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
	size_t len = s[0] < 0x80                    ? 1
		     : s[0] >= 0xc2 && s[0] <= 0xdf ? 2
		     : s[0] >= 0xe0 && s[0] <= 0xef ? 3
		     : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
						    : 0;
	if (!len || len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* overlong three- and four-byte forms, surrogates, above U+10FFFF */
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
		return 0;
	return len;
}

/* Appends s as a label value: backslash, double quote and newline escaped,
 * bytes that are not UTF-8 as U+FFFD (the text format is UTF-8; group ids
 * and topics arrive as bytes, which Kafka decodes the same way). */
static void
label_value(ch_buf *b, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < n;) {
		size_t len = utf8_len(p + i, n - i);
		if (!len) {
			ch_buf_append(b, "\xef\xbf\xbd", 3);
			i++;
			continue;
		}
		char c = s[i];
		if (c == '\\' || c == '"')
			ch_buf_printf(b, "\\%c", c);
		else if (c == '\n')
			ch_buf_printf(b, "\\n");
		else
			ch_buf_append(b, s + i, len);
		i += len;
	}
}

/* One # HELP and # TYPE pair. */
static void
family(ch_buf *b, const char *name, const char *type, const char *help)
{
	ch_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A family of one unlabelled sample. */
static void
scalar(ch_buf *b, const char *name, const char *type, const char *help, uint64_t v)
{
	family(b, name, type, help);
	ch_buf_printf(b, "%s %" PRIu64 "\n", name, v);
}

/* ---- the group coordinator ------------------------------------------------ */

typedef struct group_tally {
	uint64_t by_state[CH_COORD_GROUP_DEAD + 1];
	uint64_t groups;
	uint64_t offsets;
} group_tally;

/* ch_coord_foreach_group: counts groups by state and offsets. */
static void
tally_group(void *ud, const ch_coord_group_view *g)
{
	group_tally *t = ud;
	t->by_state[g->state]++;
	t->groups++;
	t->offsets += (uint64_t)g->offsets;
}

typedef struct type_count {
	const char *type; /* "" for none */
	uint64_t n;
} type_count;

typedef struct type_tally {
	type_count v[16];
	size_t n;
	uint64_t other;
} type_tally;

/* ch_coord_foreach_group: groups by protocol type (a handful of kinds). */
static void
tally_type(void *ud, const ch_coord_group_view *g)
{
	type_tally *t = ud;
	const char *pt = g->protocol_type ? g->protocol_type : "";
	for (size_t i = 0; i < t->n; i++) {
		if (strcmp(t->v[i].type, pt) == 0) {
			t->v[i].n++;
			return;
		}
	}
	if (t->n < sizeof(t->v) / sizeof(t->v[0]))
		t->v[t->n++] = (type_count){pt, 1};
	else
		t->other++;
}

/* ch_coord_foreach_group: cohort_group_members{group}. */
static void
render_members(void *ud, const ch_coord_group_view *g)
{
	ch_buf *b = ud;
	ch_buf_printf(b, "cohort_group_members{group=\"");
	label_value(b, g->group_id, strlen(g->group_id));
	ch_buf_printf(b, "\"} %d\n", g->members);
}

/* The coordinator's plain counters: name, HELP, field of ch_coord_stats. */
static const struct {
	const char *name, *help;
	size_t off;
} coord_counters[] = {
	{"cohort_group_coordinator_offset_commits_total",
	 "Offsets committed, one per partition (Kafka: group-coordinator-metrics "
	 "offset-commit-count; offset-commit-rate is rate() of it).",
	 offsetof(ch_coord_stats, offset_commits)},
	{"cohort_group_coordinator_offset_expirations_total",
	 "Offsets removed by offsets retention (Kafka: group-coordinator-metrics "
	 "offset-expiration-count).",
	 offsetof(ch_coord_stats, offset_expirations)},
	{"cohort_group_coordinator_offset_deletions_total",
	 "Offsets removed by OffsetDelete (Kafka: group-coordinator-metrics "
	 "offset-deletion-count).",
	 offsetof(ch_coord_stats, offset_deletions)},
	{"cohort_group_coordinator_completed_rebalances_total",
	 "Rebalances completed: the leader's assignment stored and the group Stable "
	 "(Kafka: group-coordinator-metrics group-completed-rebalance-count).",
	 offsetof(ch_coord_stats, completed_rebalances)},
	{"cohort_group_coordinator_groups_deleted_total",
	 "Groups removed by DeleteGroups or by offsets retention (an Empty group whose "
	 "last offsets expired).",
	 offsetof(ch_coord_stats, groups_deleted)},
};

/* The three rebalance duration histograms, one series per cause seen. */
static void
render_rebalance_durations(ch_buf *b, const ch_coord_stats *st)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} fams[] = {
		{"cohort_group_coordinator_rebalance_join_phase_seconds",
		 "Join phase of a rebalance (PreparingRebalance until the JoinGroup responses, "
		 "or Empty), by the cause that started the rebalance (cohort's).",
		 offsetof(ch_coord_stats, rebalance_join)},
		{"cohort_group_coordinator_rebalance_sync_phase_seconds",
		 "Sync phase of a rebalance (CompletingRebalance until Stable: the leader's "
		 "assignment stored), by the cause that started the rebalance (cohort's).",
		 offsetof(ch_coord_stats, rebalance_sync)},
		{"cohort_group_coordinator_rebalance_duration_seconds",
		 "Whole rebalance (PreparingRebalance until Stable or Empty, restarts included), "
		 "by the cause that started it (cohort's).",
		 offsetof(ch_coord_stats, rebalance_whole)},
	};
	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
		const ch_hist *h = (const ch_hist *)((const char *)st + fams[f].off);
		family(b, fams[f].name, "histogram", fams[f].help);
		for (int k = 0; k < CH_COORD_CAUSE_N; k++) {
			if (!h[k].count)
				continue;
			char labels[96];
			snprintf(labels, sizeof(labels), "cause=\"%s\"",
				 ch_coord_cause_name((ch_coord_cause)k));
			ch_hist_render(b, fams[f].name, labels, &h[k]);
		}
	}
}

static void
render_coordinator(ch_buf *b, const ch_coord *c)
{
	group_tally t = {0};
	ch_coord_foreach_group(c, tally_group, &t);
	family(b, "cohort_group_coordinator_groups", "gauge",
	       "Groups by rebalance protocol (Kafka: group-coordinator-metrics group-count). "
	       "cohortd has classic groups only.");
	ch_buf_printf(b, "cohort_group_coordinator_groups{protocol=\"classic\"} %" PRIu64 "\n",
		      t.groups);
	ch_buf_printf(b, "cohort_group_coordinator_groups{protocol=\"consumer\"} 0\n");
	family(b, "cohort_group_coordinator_classic_groups", "gauge",
	       "Classic groups by state (Kafka: group-coordinator-metrics classic-group-count).");
	for (int s = 0; s <= CH_COORD_GROUP_DEAD; s++)
		ch_buf_printf(b,
			      "cohort_group_coordinator_classic_groups{state=\"%s\"} %" PRIu64 "\n",
			      ch_coord_group_state_name((ch_coord_group_state)s), t.by_state[s]);
	type_tally tt = {0};
	ch_coord_foreach_group(c, tally_type, &tt);
	family(b, "cohort_group_coordinator_groups_by_protocol_type", "gauge",
	       "Groups by the protocol type their members sent (\"consumer\", \"connect\"; \"\" "
	       "before the first member).");
	for (size_t i = 0; i < tt.n; i++) {
		ch_buf_printf(b,
			      "cohort_group_coordinator_groups_by_protocol_type{protocol_type=\"");
		label_value(b, tt.v[i].type, strlen(tt.v[i].type));
		ch_buf_printf(b, "\"} %" PRIu64 "\n", tt.v[i].n);
	}
	if (tt.other)
		ch_buf_printf(b,
			      "cohort_group_coordinator_groups_by_protocol_type{protocol_type="
			      "\"(other)\"} %" PRIu64 "\n",
			      tt.other);
	scalar(b, "cohort_group_coordinator_offsets", "gauge",
	       "Committed offsets held (Kafka: group-coordinator-metrics offset-count).",
	       t.offsets);

	const ch_coord_stats *st = ch_coord_get_stats(c);
	for (size_t i = 0; i < sizeof(coord_counters) / sizeof(coord_counters[0]); i++)
		scalar(b, coord_counters[i].name, "counter", coord_counters[i].help,
		       *(const uint64_t *)((const char *)st + coord_counters[i].off));
	family(b, "cohort_group_coordinator_rebalances_total", "counter",
	       "Rebalances started (a group entered PreparingRebalance), by the cause that "
	       "started them (cohort's; Kafka counts completed ones only).");
	for (int k = 0; k < CH_COORD_CAUSE_N; k++)
		if (st->rebalances[k])
			ch_buf_printf(
				b,
				"cohort_group_coordinator_rebalances_total{cause=\"%s\"} %" PRIu64
				"\n",
				ch_coord_cause_name((ch_coord_cause)k), st->rebalances[k]);
	render_rebalance_durations(b, st);
	family(b, "cohort_group_members", "gauge", "Members of each group.");
	ch_coord_foreach_group(c, render_members, b);
}

/* ---- requests ------------------------------------------------------------- */

static void
render_requests(ch_buf *b, const ch_api_stats *s, uint64_t rejected)
{
	family(b, "cohort_requests_total", "counter",
	       "Kafka requests answered (or closed) by API and version.");
	for (int k = 0; k < CH_API_STATS_KEYS; k++) {
		const ch_api_codec *codec = ch_api_codec_find((int16_t)k);
		for (int v = 0; codec && v < CH_API_STATS_VERSIONS; v++)
			if (s->latency[k][v].count)
				ch_buf_printf(
					b,
					"cohort_requests_total{request=\"%s\",version=\"%d\"} "
					"%" PRIu64 "\n",
					codec->name, v, s->latency[k][v].count);
	}
	family(b, "cohort_request_errors_total", "counter",
	       "Error codes in responses, every ErrorCode field counted, NONE included "
	       "(Kafka: kafka.network RequestMetrics ErrorsPerSec{request,error}).");
	for (int k = 0; k < CH_API_STATS_KEYS; k++) {
		const ch_api_codec *codec = ch_api_codec_find((int16_t)k);
		for (int e = 0; codec && e < CH_API_STATS_ERRORS; e++)
			if (s->errors[k][e])
				ch_buf_printf(
					b,
					"cohort_request_errors_total{request=\"%s\",error=\"%s\"} "
					"%" PRIu64 "\n",
					codec->name, ch_kerr_name((int16_t)(e - 1)),
					s->errors[k][e]);
	}
	scalar(b, "cohort_requests_rejected_total", "counter",
	       "Request frames refused (unknown API key, unsupported version, malformed header "
	       "or body): the connection is closed, as Kafka does.",
	       rejected);
	family(b, "cohort_request_duration_seconds", "histogram",
	       "Time from a request's whole frame to its response handed to the network "
	       "(parked JoinGroup, SyncGroup and long-polling Fetch included).");
	for (int k = 0; k < CH_API_STATS_KEYS; k++) {
		const ch_api_codec *codec = ch_api_codec_find((int16_t)k);
		for (int v = 0; codec && v < CH_API_STATS_VERSIONS; v++) {
			if (!s->latency[k][v].count)
				continue;
			char labels[96];
			snprintf(labels, sizeof(labels), "request=\"%s\",version=\"%d\"",
				 codec->name, v);
			ch_hist_render(b, "cohort_request_duration_seconds", labels,
				       &s->latency[k][v]);
		}
	}
}

/* ---- network, loop, storage ----------------------------------------------- */

static void
render_runtime(ch_buf *b, const admin_sources *src)
{
	const ch_server_stats *ns = ch_server_get_stats(src->server);
	scalar(b, "cohort_network_received_bytes_total", "counter",
	       "Bytes read from Kafka clients.", ns->bytes_in);
	scalar(b, "cohort_network_sent_bytes_total", "counter", "Bytes written to Kafka clients.",
	       ns->bytes_out);
	scalar(b, "cohort_connections", "gauge", "Open Kafka client connections.",
	       (uint64_t)ch_server_conn_count(src->server));
	scalar(b, "cohort_connections_accepted_total", "counter",
	       "Kafka client connections accepted.", ns->accepted);
	scalar(b, "cohort_connections_closed_total", "counter",
	       "Kafka client connections closed (by the peer, an error, idle reaping or a "
	       "protocol error).",
	       ns->closed);
	scalar(b, "cohort_connections_rejected_total", "counter",
	       "Kafka client connections closed at once: max.connections.per.ip.",
	       ns->rejected_per_ip);
	scalar(b, "cohort_connections_throttled_total", "counter",
	       "Kafka client connections held unread, then closed: an ip entity's "
	       "connection_creation_rate quota.",
	       ns->throttled_ip);
	scalar(b, "cohort_connections_accept_waits_total", "counter",
	       "Times accepting paused for max.connections or max.connection.creation.rate.",
	       ns->accept_waits);
	scalar(b, "cohort_network_request_memory_bytes", "gauge",
	       "Bytes held by requests from their size prefix until answered "
	       "(queued.max.request.bytes bounds it).",
	       (uint64_t)(ns->request_memory > 0 ? ns->request_memory : 0));
	scalar(b, "cohort_network_request_memory_waiting_connections", "gauge",
	       "Connections not read because queued.max.request.bytes is spent.",
	       ns->memory_waiters);
	scalar(b, "cohort_network_request_receive_timeouts_total", "counter",
	       "Connections closed because a request had not fully arrived "
	       "socket.request.receive.timeout.ms after its first byte.",
	       ns->receive_timeouts);
	family(b, "cohort_event_loop_iteration_seconds", "histogram",
	       "Work of one event-loop iteration, from waking up to sleeping again (events, "
	       "timers, response flushing): the longest an event arriving meanwhile waits.");
	ch_hist_render(b, "cohort_event_loop_iteration_seconds", "", ch_loop_busy(src->loop));
	ch_log_manager_stats ls = ch_log_manager_get_stats(src->bk->logs);
	family(b, "cohort_log_fsync_duration_seconds", "histogram",
	       "One fdatasync of a partition log on a worker thread (group commit: one covers "
	       "every append made before it started).");
	ch_hist_render(b, "cohort_log_fsync_duration_seconds", "", &ls.fsync);
}

/* ---- partitions and lag ---------------------------------------------------- */

bool
admin_part_offsets(ch_broker *bk, const char *topic, int32_t partition, int64_t *start,
		   int64_t *end)
{
	int open_errno = 0;
	ch_part *p = ch_log_manager_find(bk->logs, topic, partition, &open_errno);
	if (!p)
		return false;
	*start = ch_plog_start_offset(ch_part_log(p));
	*end = ch_plog_end_offset(ch_part_log(p));
	return true;
}

static void
render_partitions(ch_buf *b, ch_broker *bk)
{
	size_t nt = ch_topics_count(bk->topics);
	for (int pass = 0; pass < 2; pass++) {
		const char *name = pass ? "cohort_log_end_offset" : "cohort_log_start_offset";
		family(b, name, "gauge",
		       pass ? "Log end offset of each partition (its high watermark: one replica)."
			    : "Log start offset of each partition (retention, DeleteRecords).");
		for (size_t i = 0; i < nt; i++) {
			const ch_topic *t = ch_topics_at(bk->topics, i);
			for (int32_t p = 0; p < t->partitions; p++) {
				int64_t start, end;
				if (!admin_part_offsets(bk, t->name, p, &start, &end))
					continue;
				ch_buf_printf(b, "%s{topic=\"", name);
				label_value(b, t->name, t->name_len);
				ch_buf_printf(b, "\",partition=\"%d\"} %" PRId64 "\n", p,
					      pass ? end : start);
			}
		}
	}
}

typedef struct lag_ctx {
	ch_broker *bk;
	ch_buf *lag, *below; /* the per-partition series, rendered after the family lines */
	const char *group;
	int64_t max, sum;
	bool any;
} lag_ctx;

/* Appends one '{group,topic,partition}' label set. */
static void
gtp_labels(ch_buf *b, const char *group, const char *topic, size_t tlen, int32_t partition)
{
	ch_buf_printf(b, "{group=\"");
	label_value(b, group, strlen(group));
	ch_buf_printf(b, "\",topic=\"");
	label_value(b, topic, tlen);
	ch_buf_printf(b, "\",partition=\"%d\"}", partition);
}

/* ch_coord_foreach_offset: one committed offset's lag. The rule of Kafka's
 * kafka-consumer-groups: end offset - committed, never negative; a commit
 * below the log start offset is flagged (its records are gone). */
static void
lag_offset(void *ud, const ch_coord_offset_view *o)
{
	lag_ctx *x = ud;
	const char *topic = o->topic;
	size_t tlen = o->tlen;
	int32_t partition = o->partition;
	int64_t committed = o->offset;
	char tname[256];
	if (tlen >= sizeof(tname))
		return; /* longer than any valid topic name */
	memcpy(tname, topic, tlen);
	tname[tlen] = '\0';
	int64_t start, end;
	if (!admin_part_offsets(x->bk, tname, partition, &start, &end))
		return;
	int64_t lag = committed < 0 ? 0 : end - committed;
	if (lag < 0)
		lag = 0;
	x->any = true;
	x->sum += lag;
	if (lag > x->max)
		x->max = lag;
	ch_buf_printf(x->lag, "cohort_consumer_group_lag");
	gtp_labels(x->lag, x->group, topic, tlen, partition);
	ch_buf_printf(x->lag, " %" PRId64 "\n", lag);
	ch_buf_printf(x->below, "cohort_consumer_group_offset_below_log_start");
	gtp_labels(x->below, x->group, topic, tlen, partition);
	ch_buf_printf(x->below, " %d\n", committed >= 0 && committed < start ? 1 : 0);
}

typedef struct lag_all {
	ch_broker *bk;
	ch_buf lag, below, max, sum;
} lag_all;

/* ch_coord_foreach_group: every committed offset of the group, then its max
 * and sum. */
static void
lag_group(void *ud, const ch_coord_group_view *g)
{
	lag_all *a = ud;
	lag_ctx x = {a->bk, &a->lag, &a->below, g->group_id, 0, 0, false};
	ch_coord_foreach_offset(a->bk->coord, g->group_id, lag_offset, &x);
	if (!x.any)
		return;
	ch_buf_printf(&a->max, "cohort_consumer_group_max_lag{group=\"");
	label_value(&a->max, g->group_id, strlen(g->group_id));
	ch_buf_printf(&a->max, "\"} %" PRId64 "\n", x.max);
	ch_buf_printf(&a->sum, "cohort_consumer_group_total_lag{group=\"");
	label_value(&a->sum, g->group_id, strlen(g->group_id));
	ch_buf_printf(&a->sum, "\"} %" PRId64 "\n", x.sum);
}

/* Appends src's bytes to b and frees src. */
static void
append_free(ch_buf *b, ch_buf *src)
{
	if (src->len)
		ch_buf_append(b, src->data, src->len);
	if (!ch_buf_ok(src))
		b->oom = true;
	ch_buf_free(src);
}

static void
render_lag(ch_buf *b, ch_broker *bk)
{
	lag_all a = {.bk = bk};
	ch_buf_init(&a.lag);
	ch_buf_init(&a.below);
	ch_buf_init(&a.max);
	ch_buf_init(&a.sum);
	ch_coord_foreach_group(bk->coord, lag_group, &a);
	family(b, "cohort_consumer_group_lag", "gauge",
	       "Records between a group's committed offset and the partition's end offset, "
	       "computed in the broker (never negative; kafka-consumer-groups' LAG).");
	append_free(b, &a.lag);
	family(b, "cohort_consumer_group_max_lag", "gauge",
	       "The largest partition lag of each group.");
	append_free(b, &a.max);
	family(b, "cohort_consumer_group_total_lag", "gauge", "The sum of each group's lags.");
	append_free(b, &a.sum);
	family(b, "cohort_consumer_group_offset_below_log_start", "gauge",
	       "1 where the committed offset is below the log start offset: the records after "
	       "the commit were deleted and the consumer will apply auto.offset.reset.");
	append_free(b, &a.below);
}

void
admin_render_metrics(const admin_sources *src, ch_buf *b)
{
	render_coordinator(b, src->bk->coord);
	render_lag(b, src->bk);
	render_requests(b, ch_api_get_stats(src->bk), src->bk->n_rejected);
	render_runtime(b, src);
	render_partitions(b, src->bk);
}
