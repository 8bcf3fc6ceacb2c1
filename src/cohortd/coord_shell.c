/*
 * coord_shell.c: see coord_shell.h.
 *
 * Time: the core works in wall-clock milliseconds (it stores commit
 * timestamps and Kafka's currentStateTimestamp); the loop's timers are
 * monotonic. The shell converts a core deadline to a loop deadline at the
 * moment it arms the timer, so a wall-clock jump shifts at most one wake-up.
 */
#include "cohortd/coord_shell.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/ch_common.h"
#include "common/ch_log.h"
#include "group/ch_coord.h"
#include "auth/ch_authz.h"
#include "common/ch_workers.h"
#include "group/ch_coord_cg.h"
#include "log/ch_batch.h"
#include "meta/ch_topics.h"
#include "proto/generated/ch_errors.h"

/* Retrying a partition that failed to load: Kafka loads again on the next
 * leadership change; one broker has none, so the shell tries again itself,
 * 1 s after the failure, doubling up to once a minute (docs/NOTES.md). */
#define LOAD_RETRY_FIRST_MS 1000
#define LOAD_RETRY_MAX_MS 60000

/* Why one __consumer_offsets partition is not loaded (the core holds its
 * state: ch_coord_partition_state). */
typedef struct load_failure {
	int attempts;    /* failed loads so far; 0 = loaded or never tried */
	char cause[160]; /* of the last failure */
} load_failure;

struct coord_shell {
	ch_loop *loop;
	ch_broker *bk;
	ch_log_manager *logs;
	ch_coord *coord;
	ch_coord_cg *cgroups; /* consumer-protocol groups (KIP-848) */
	ch_timer timer;
	int64_t armed_for; /* core deadline the timer is armed for (wall ms) */
	ch_hook *hook;
	size_t replayed;
	int32_t n_partitions;   /* of __consumer_offsets as the core knows it */
	load_failure *failures; /* [n_partitions] */
	ch_timer retry_timer;   /* next attempt at the LOAD_FAILED partitions */
	int64_t retry_delay_ms; /* the wait before the next attempt after that */
	/* Large consumer groups' target assignments (ch_coord_cg_ops.assign_offload):
	 * their own thread, so an assignment never waits behind fsyncs nor
	 * fsyncs behind it; stopping: results are dropped, not applied. */
	ch_workers *assign_workers;
	bool stopping;
};

typedef struct append_ctx {
	coord_shell *s;
	uint64_t id;
	bool consumer_group; /* ch_coord_cg's append, not ch_coord's */
} append_ctx;

/* ch_log_manager_append_durable's callback (once, on the loop thread): reports append id's
 * result to the core with the wall clock, then frees the append_ctx op_append allocated. */
static void
append_durable(void *ud, int16_t kerr, int64_t base, int64_t last)
{
	(void)base, (void)last;
	append_ctx *a = ud;
	if (a->consumer_group)
		ch_coord_cg_append_done(a->s->cgroups, ch_now_wall_ms(), a->id, kerr);
	else
		ch_coord_append_done(a->s->coord, ch_now_wall_ms(), a->id, kerr);
	free(a);
}

/* ch_coord_ops.append: the coordinator's records as one uncompressed v2
 * batch on __consumer_offsets partition `partition`, through the durable
 * path; ch_coord_append_done(id) when fsynced or failed. */
static void
append_batch(coord_shell *s, int32_t partition, const ch_coord_record *recs, size_t n, uint64_t id,
	     bool consumer_group)
{
	ch_buf b;
	ch_buf_init(&b);
	ch_batch_builder bb;
	int64_t now = ch_now_wall_ms();
	/* One uncompressed v2 batch, non-transactional, no producer. */
	ch_batch_builder_begin(&bb, &b, 0, 0, now, -1, -1, -1);
	for (size_t i = 0; i < n; i++) {
		ch_bytes key = {recs[i].key.data, (int32_t)recs[i].key.len};
		ch_bytes val = recs[i].tombstone
				       ? CH_BYTES_NULL
				       : (ch_bytes){recs[i].value.data, (int32_t)recs[i].value.len};
		ch_batch_builder_add(&bb, (int32_t)i, now, key, val, 0, NULL, 0);
	}
	append_ctx *a = ch_xmalloc(sizeof(*a));
	a->s = s;
	a->id = id;
	a->consumer_group = consumer_group;
	if (ch_batch_builder_end(&bb, -1) != CH_OK) {
		ch_buf_free(&b);
		free(a);
		abort(); /* out of memory: the broker may abort */
	}
	ch_log_manager_append_durable(s->logs, CH_CONSUMER_OFFSETS_TOPIC, partition, b.data, b.len,
				      append_durable, a);
	ch_buf_free(&b);
}

static void
op_append(void *ud, int32_t partition, const ch_coord_record *recs, size_t n, uint64_t id)
{
	append_batch(ud, partition, recs, n, id, false);
}

/* ch_coord_cg_ops.append: the same, reported to ch_coord_cg_append_done. */
static void
op_cg_append(void *ud, int32_t partition, const ch_coord_record *recs, size_t n, uint64_t id)
{
	append_batch(ud, partition, recs, n, id, true);
}

static int16_t
op_check_partition(void *ud, ch_str topic, int32_t partition)
{
	coord_shell *s = ud;
	return ch_api_group_check_partition(s->bk, topic, partition);
}

static void
op_random_uuid(void *ud, ch_uuid *out)
{
	(void)ud;
	*out = ch_uuid_random();
}

static void
op_log(void *ud, ch_log_level level, const char *line)
{
	(void)ud;
	ch_log(level, "group", "%s", line);
}

static bool
op_log_enabled(void *ud, ch_log_level level)
{
	(void)ud;
	return ch_log_enabled(level);
}

/* The assignment worker's thread: hands the finished job to the loop. */
static void
assign_post_cb(ch_loop *loop, void *ud)
{
	(void)loop;
	ch_workers_complete(ud);
}

static void
assign_post(void *ctx, ch_work *w)
{
	coord_shell *s = ctx;
	ch_loop_post(s->loop, assign_post_cb, w);
}

/* One offloaded assignment: the pool's item (first), its shell and job. */
typedef struct assign_work {
	ch_work w;
	coord_shell *s;
	ch_coord_cg_assign_job *job;
} assign_work;

static void
assign_run(ch_work *w)
{
	ch_coord_cg_assign_job_run(((assign_work *)w)->job);
}

/* On the loop: the result to the core (or dropped while stopping). */
static void
assign_done(ch_work *w)
{
	assign_work *a = (assign_work *)w;
	if (a->s->stopping)
		ch_coord_cg_assign_job_free(a->job);
	else
		ch_coord_cg_assign_job_done(a->s->cgroups, ch_now_wall_ms(), a->job);
	free(a);
}

/* ch_coord_cg_ops.assign_offload: the job to the assignment thread. */
static void
op_assign_offload(void *ud, ch_coord_cg_assign_job *job)
{
	assign_work *a = ch_xcalloc(1, sizeof(*a));
	a->s = ud;
	a->job = job;
	a->w.run = assign_run;
	a->w.done = assign_done;
	ch_workers_queue(a->s->assign_workers, &a->w);
}

/* ch_coord_cg_ops.topic: a topic of the registry. */
static bool
op_topic(void *ud, ch_str name, ch_coord_cg_topic *out)
{
	coord_shell *s = ud;
	const ch_topic *t =
		name.len > 0 ? ch_topics_find(s->bk->topics, name.p, (size_t)name.len) : NULL;
	if (!t)
		return false;
	out->id = t->id;
	out->partitions = t->partitions;
	return true;
}

/* ch_coord_cg_ops.foreach_topic: the registry's topics (regexes resolve
 * against them). */
static void
op_foreach_topic(void *ud, void (*fn)(void *arg, const char *name, size_t len), void *arg)
{
	coord_shell *s = ud;
	size_t n = ch_topics_count(s->bk->topics);
	for (size_t i = 0; i < n; i++) {
		const ch_topic *t = ch_topics_at(s->bk->topics, i);
		if (t)
			fn(arg, t->name, strlen(t->name));
	}
}

/* ch_coord_cg_ops.may_describe: the heartbeat's sender against the ACLs
 * (the token is its ch_req). */
static bool
op_may_describe(void *ud, void *token, const char *name, size_t len)
{
	(void)ud;
	return ch_api_allowed_str(token, CH_ACL_DESCRIBE, CH_RES_TOPIC,
				  (ch_str){name, (int32_t)len});
}

/* group_id NUL-terminated into out; false if it does not fit (such a
 * group is not looked up in the classic core). */
static bool
group_cstr(ch_str group_id, char *out, size_t cap)
{
	if (group_id.len < 0 || (size_t)group_id.len >= cap)
		return false;
	memcpy(out, group_id.p, (size_t)group_id.len);
	out[group_id.len] = '\0';
	return true;
}

/* The classic core's group of that id (exists false for an id too long to
 * be one). */
static ch_coord_group_info
classic_info(void *ud, ch_str group_id)
{
	coord_shell *s = ud;
	char id[256];
	if (!group_cstr(group_id, id, sizeof(id)))
		return (ch_coord_group_info){0};
	return ch_coord_group_get_info(s->coord, id);
}

/* ch_coord_cg_ops.classic_group_exists: a classic group with members
 * holds the id (Kafka deletes an empty one when a consumer-protocol
 * member joins; its offsets stay). */
static bool
op_classic_group(void *ud, ch_str group_id)
{
	ch_coord_group_info gi = classic_info(ud, group_id);
	return gi.exists && (gi.members > 0 || gi.pending_members > 0);
}

/* ch_coord_cg_ops.classic_group_known: any classic group of that id. */
static bool
op_classic_group_known(void *ud, ch_str group_id)
{
	return classic_info(ud, group_id).exists;
}

/* ch_coord_cg_ops' online upgrade: the classic core's side. */
static bool
op_classic_export(void *ud, ch_str group_id, void (*fn)(void *fnud, const ch_coord_export_group *g),
		  void *fnud)
{
	coord_shell *s = ud;
	char id[256];
	if (!group_cstr(group_id, id, sizeof(id)))
		return false;
	return ch_coord_group_export(s->coord, id, fn, fnud);
}

static void
op_classic_hand_over(void *ud, ch_str group_id, int64_t now)
{
	coord_shell *s = ud;
	char id[256];
	if (!group_cstr(group_id, id, sizeof(id)))
		return;
	ch_coord_group_hand_over(s->coord, id, now);
}

static void
op_classic_import(void *ud, ch_str group_id, const ch_coord_export_group *g, int64_t now)
{
	coord_shell *s = ud;
	char id[256];
	if (group_cstr(group_id, id, sizeof(id)))
		ch_coord_group_import(s->coord, id, g, now);
}

int
coord_shell_consumer_config(const ch_config *cfg, ch_coord_cg_config *out, char *err, size_t errlen)
{
	ch_coord_cg_config_defaults(out);
	out->session_timeout_ms = cfg->group_consumer_session_timeout_ms;
	out->min_session_timeout_ms = cfg->group_consumer_min_session_timeout_ms;
	out->max_session_timeout_ms = cfg->group_consumer_max_session_timeout_ms;
	out->heartbeat_interval_ms = cfg->group_consumer_heartbeat_interval_ms;
	out->min_heartbeat_interval_ms = cfg->group_consumer_min_heartbeat_interval_ms;
	out->max_heartbeat_interval_ms = cfg->group_consumer_max_heartbeat_interval_ms;
	out->max_size = cfg->group_consumer_max_size;
	out->regex_refresh_interval_ms = cfg->group_consumer_regex_refresh_interval_ms;
	out->assignment_interval_ms = cfg->group_consumer_assignment_interval_ms;
	out->assignor_offload = cfg->group_consumer_assignor_offload_enable;
	out->assignor_offload_min_partitions = cfg->group_consumer_assignor_offload_min_partitions;
	out->migration_policy = (ch_coord_cg_migration)cfg->group_consumer_migration_policy;
	out->classic_min_session_timeout_ms = cfg->group_min_session_timeout_ms;
	out->classic_max_session_timeout_ms = cfg->group_max_session_timeout_ms;
	out->classic_max_size = cfg->group_max_size;
	out->nassignors = 0;
	const char *p = cfg->group_consumer_assignors ? cfg->group_consumer_assignors : "";
	while (*p) {
		while (*p == ' ' || *p == ',')
			p++;
		const char *e = p;
		while (*e && *e != ',')
			e++;
		const char *t = e;
		while (t > p && t[-1] == ' ')
			t--;
		if (t > p) {
			int k = ch_coord_cg_assignor_by_name((ch_str){p, (int32_t)(t - p)});
			if (k < 0) {
				snprintf(err, errlen,
					 "group.consumer.assignors: unknown assignor '%.*s' "
					 "(cohortd "
					 "has uniform and range)",
					 (int)(t - p), p);
				return -1;
			}
			if (out->nassignors == CH_COORD_CG_MAX_ASSIGNORS) {
				snprintf(err, errlen,
					 "group.consumer.assignors: too many assignors");
				return -1;
			}
			out->assignors[out->nassignors++] = (ch_assign_kind)k;
		}
		p = e;
	}
	const char *bad = ch_coord_cg_config_check(out);
	if (bad) {
		snprintf(err, errlen, "%s", bad);
		return -1;
	}
	return 0;
}

/* The timer reached the core's deadline: marks it unarmed (rearm re-arms it for the next
 * deadline before the loop sleeps) and runs the core's due work with ch_coord_tick. */
static void
timer_fired(ch_loop *loop, ch_timer *t, void *ud)
{
	(void)loop, (void)t;
	coord_shell *s = ud;
	s->armed_for = INT64_MAX;
	int64_t now = ch_now_wall_ms();
	ch_coord_tick(s->coord, now);
	ch_coord_cg_tick(s->cgroups, now);
}

/* Before the loop sleeps: keep the timer at the core's next deadline. */
static bool
rearm(ch_loop *loop, void *ud)
{
	coord_shell *s = ud;
	int64_t d = ch_coord_next_deadline(s->coord);
	int64_t dc = ch_coord_cg_next_deadline(s->cgroups);
	if (dc < d)
		d = dc;
	if (d == s->armed_for)
		return false;
	s->armed_for = d;
	if (d == INT64_MAX) {
		ch_timer_cancel(loop, &s->timer);
		return false;
	}
	int64_t wait = d - ch_now_wall_ms();
	ch_timer_arm(loop, &s->timer, ch_loop_now(loop) + (wait > 0 ? wait : 0));
	return false;
}

/* ch_part_replay callback: one __consumer_offsets record to the core
 * (control batches and keyless records skipped; a null value is a
 * tombstone). */
static int
replay_record(void *ud, const ch_batch_hdr *h, const ch_record *rec, int64_t offset, int64_t ts)
{
	(void)offset, (void)ts;
	coord_shell *s = ud;
	if (h->attributes & CH_BATCH_ATTR_CONTROL)
		return 0;
	if (rec->key.len < 0)
		return 0;
	const uint8_t *key = (const uint8_t *)rec->key.p;
	size_t vlen = rec->value.len < 0 ? 0 : (size_t)rec->value.len;
	if (ch_coord_cg_load_record(s->cgroups, key, (size_t)rec->key.len,
				    (const uint8_t *)rec->value.p, vlen, rec->value.len < 0) > 0)
		ch_coord_load_record(s->coord, key, (size_t)rec->key.len, rec->value.p, vlen,
				     rec->value.len < 0);
	s->replayed++;
	return 0;
}

/* Replays __consumer_offsets-p into the core (LOADING, then LOADED or
 * LOAD_FAILED). On failure fills s->failures[p] with the cause. */
static bool
load_partition(coord_shell *s, int32_t p, size_t *groups)
{
	load_failure *f = &s->failures[p];
	*groups = 0;
	if (!ch_coord_load_begin(s->coord, p))
		return true; /* already loaded */
	int open_errno = 0;
	int16_t kerr = 0;
	ch_part *part = ch_log_manager_find(s->logs, CH_CONSUMER_OFFSETS_TOPIC, p, &open_errno);
	bool ok = false;
	if (!part)
		snprintf(f->cause, sizeof(f->cause), "its log cannot be opened: %s",
			 open_errno ? strerror(open_errno)
				    : "the topic registry has no such partition");
	else if (ch_part_replay(part, 0, replay_record, s, &kerr) < 0)
		snprintf(f->cause, sizeof(f->cause), "its log cannot be read: %s",
			 ch_kerr_name(kerr));
	else
		ok = true;
	*groups = ch_coord_load_end(s->coord, ch_now_wall_ms(), p, ok);
	ch_coord_cg_load_end(s->cgroups, ch_now_wall_ms(), p, ok);
	if (!ok)
		f->attempts++;
	return ok;
}

static void
retry_arm(coord_shell *s)
{
	ch_timer_arm(s->loop, &s->retry_timer, ch_loop_now(s->loop) + s->retry_delay_ms);
	s->retry_delay_ms = CH_MIN(s->retry_delay_ms * 2, LOAD_RETRY_MAX_MS);
}

/* Every LOAD_FAILED partition is tried again; one line per success, one
 * line per round for those still failing (the backoff bounds the rate). */
static void
retry_fired(ch_loop *loop, ch_timer *t, void *ud)
{
	(void)loop, (void)t;
	coord_shell *s = ud;
	int32_t still = 0, first = -1;
	for (int32_t p = 0; p < s->n_partitions; p++) {
		if (ch_coord_partition_state(s->coord, p) != CH_COORD_LOAD_FAILED)
			continue;
		size_t groups;
		int attempts = s->failures[p].attempts;
		if (load_partition(s, p, &groups)) {
			CH_LOGI("cohortd",
				"__consumer_offsets-%d loaded after %d failed attempt(s): %zu "
				"groups",
				p, attempts, groups);
			s->failures[p].attempts = 0;
			continue;
		}
		if (still++ == 0)
			first = p;
	}
	if (!still)
		return;
	CH_LOGW("cohortd",
		"%d __consumer_offsets partition(s) still cannot be loaded (__consumer_offsets-%d, "
		"attempt %d: %s); next attempt in %" PRId64 " s",
		still, first, s->failures[first].attempts, s->failures[first].cause,
		s->retry_delay_ms / 1000);
	retry_arm(s);
}

/* This thread's CPU time in ms (user + system). */
static int64_t
thread_cpu_ms(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

coord_shell *
coord_shell_start(ch_loop *loop, ch_broker *bk, ch_log_manager *logs)
{
	const ch_config *cfg = bk->cfg;
	coord_shell *s = ch_xcalloc(1, sizeof(*s));
	s->loop = loop;
	s->bk = bk;
	s->logs = logs;
	s->armed_for = INT64_MAX;

	ch_coord_config cc;
	ch_coord_config_defaults(&cc);
	cc.min_session_timeout_ms = cfg->group_min_session_timeout_ms;
	cc.max_session_timeout_ms = cfg->group_max_session_timeout_ms;
	cc.initial_rebalance_delay_ms = cfg->group_initial_rebalance_delay_ms;
	cc.initial_rebalance_quiet_ms = cfg->group_initial_rebalance_quiet_ms;
	cc.join_waits_for_sync = cfg->group_rebalance_join_waits_for_sync;
	cc.max_size = cfg->group_max_size;
	cc.rebalance_history_size = cfg->group_rebalance_history_size;
	cc.offset_metadata_max_bytes = cfg->offset_metadata_max_bytes;
	cc.offsets_retention_ms = (int64_t)cfg->offsets_retention_minutes * 60000;
	cc.offsets_retention_check_ms = cfg->offsets_retention_check_interval_ms;
	/* The partition count of an existing __consumer_offsets wins: the
	 * groups' placement must not move under their stored records. */
	const ch_topic *t = ch_topics_find(bk->topics, CH_CONSUMER_OFFSETS_TOPIC,
					   strlen(CH_CONSUMER_OFFSETS_TOPIC));
	cc.offsets_partitions = t ? t->partitions : cfg->offsets_topic_num_partitions;
	s->n_partitions = cc.offsets_partitions;
	s->failures = ch_xcalloc((size_t)s->n_partitions, sizeof(*s->failures));

	ch_coord_ops ops;
	memset(&ops, 0, sizeof(ops));
	ops.ud = s;
	ops.respond = ch_api_group_respond;
	ops.append = op_append;
	ops.check_partition = op_check_partition;
	ops.random_uuid = op_random_uuid;
	ops.log = op_log;
	ops.log_enabled = op_log_enabled;
	s->coord = ch_coord_new(&cc, &ops, ch_now_wall_ms());
	bk->coord = s->coord;

	ch_coord_cg_config cgc;
	char err[256];
	if (coord_shell_consumer_config(cfg, &cgc, err, sizeof(err)) != 0) {
		/* main checked it before; a config changed since keeps Kafka's defaults */
		CH_LOGE("cohortd", "%s; using the defaults", err);
		ch_coord_cg_config_defaults(&cgc);
	}
	ch_coord_cg_ops cgo = {
		.ud = s,
		.respond = ch_api_group_respond,
		.topic = op_topic,
		.classic_group_exists = op_classic_group,
		.classic_group_known = op_classic_group_known,
		.classic_group_export = op_classic_export,
		.classic_group_hand_over = op_classic_hand_over,
		.classic_group_import = op_classic_import,
		.random_uuid = op_random_uuid,
		.foreach_topic = op_foreach_topic,
		.may_describe = op_may_describe,
		.append = op_cg_append,
		.log = op_log,
		.log_enabled = op_log_enabled,
		.assign_offload = op_assign_offload,
	};
	s->assign_workers = ch_workers_new(1, assign_post, s);
	cgc.offsets_partitions = cc.offsets_partitions;
	s->cgroups = ch_coord_cg_new(&cgc, &cgo);
	bk->cgroups = s->cgroups;
	bk->cgroups_topics_seen = ch_topics_changes(bk->topics);
	ch_timer_init(&s->retry_timer, retry_fired, s);
	s->retry_delay_ms = LOAD_RETRY_FIRST_MS;

	if (t) {
		int64_t t0 = ch_now_mono_ms(), cpu0 = thread_cpu_ms();
		int32_t failed = 0;
		for (int32_t p = 0; p < t->partitions; p++) {
			size_t groups;
			if (load_partition(s, p, &groups))
				continue;
			failed++;
			CH_LOGE("cohortd",
				"__consumer_offsets-%d cannot be loaded: %s; its groups answer "
				"NOT_COORDINATOR until it is (next attempt in %" PRId64 " s)",
				p, s->failures[p].cause, s->retry_delay_ms / 1000);
		}
		/* The CPU time too: on a shared machine the wall time is mostly the
		 * other processes' (bench/groups/run-replay.sh prints both). */
		CH_LOGI("cohortd", "replayed %zu coordinator records in %lld ms (%lld ms of CPU)",
			s->replayed, (long long)(ch_now_mono_ms() - t0),
			(long long)(thread_cpu_ms() - cpu0));
		if (ch_coord_cg_load_skipped(s->cgroups))
			CH_LOGW("cohortd",
				"skipped %zu unreadable consumer-group records of "
				"__consumer_offsets",
				ch_coord_cg_load_skipped(s->cgroups));
		if (failed) {
			CH_LOGE("cohortd",
				"%d of %d __consumer_offsets partitions could not be loaded",
				failed, t->partitions);
			retry_arm(s);
		}
	}
	/* Nothing (left) to replay: every other partition serves from now. */
	ch_coord_load_done(s->coord, ch_now_wall_ms());
	ch_timer_init(&s->timer, timer_fired, s);
	s->hook = ch_loop_add_before_sleep(loop, rearm, s);
	return s;
}

void
coord_shell_quiesce(coord_shell *s)
{
	if (s->hook)
		ch_loop_remove_before_sleep(s->loop, s->hook);
	s->hook = NULL;
	ch_timer_cancel(s->loop, &s->timer);
	ch_timer_cancel(s->loop, &s->retry_timer); /* a load retry replays */
}

void
coord_shell_stop(coord_shell *s)
{
	if (!s)
		return;
	coord_shell_quiesce(s);
	/* Assignments in flight end (their results dropped) before the core goes. */
	s->stopping = true;
	while (ch_workers_inflight(s->assign_workers) > 0)
		ch_loop_run_once(s->loop, 100);
	ch_workers_free(s->assign_workers);
	ch_coord_free(s->coord);
	ch_coord_cg_free(s->cgroups);
	free(s->failures);
	free(s);
}
