/*
 * ch_log_manager.c: the set of partitions, their configuration, group
 * commit, housekeeping (flush, retention, compaction). See ch_log_manager.h
 * for the model and ch_broker_int.h for how the files of broker/ split the
 * work.
 */
#include "broker/ch_log_manager.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker/ch_broker_int.h"
#include "common/ch_common.h"
#include "common/ch_log.h"
#include "common/ch_ratelog.h"
#include "config/ch_config.h"
#include "event/ch_loop.h"
#include "meta/ch_topics.h"
#include "proto/generated/ch_errors.h"

#define SUB "logs"
#define N_WORKERS 4

/* Loop thread: the owner's half of a finished work item. */
static void
work_complete_cb(ch_loop *loop, void *ud)
{
	(void)loop;
	ch_workers_complete(ud);
}

/* ---- configuration ------------------------------------------------------------ */

/* A log's configuration: the topic's overrides over the broker's settings. */
static void
plog_config_for(const ch_log_manager *lm, const ch_topic *t, ch_plog_config *pc)
{
	ch_topic_config tc;
	ch_topic_config_resolve(lm->cfg, t->configs, t->n_configs, &tc);
	ch_plog_config_default(pc);
	pc->segment_bytes = tc.segment_bytes;
	pc->segment_ms = tc.segment_ms;
	pc->index_interval_bytes = tc.index_interval_bytes;
	pc->retention_ms = tc.retention_ms;
	pc->retention_bytes = tc.retention_bytes;
	pc->flush_messages = tc.flush_messages;
	pc->flush_ms = tc.flush_ms;
	pc->cleanup_delete = (tc.cleanup_policy & CH_CLEANUP_DELETE) != 0;
	pc->cleanup_compact = (tc.cleanup_policy & CH_CLEANUP_COMPACT) != 0;
	pc->delete_retention_ms = tc.delete_retention_ms;
	pc->log_append_time = tc.message_timestamp_type == CH_TIMESTAMP_LOG_APPEND_TIME;
	pc->ts_before_max_ms = tc.message_timestamp_before_max_ms;
	pc->ts_after_max_ms = tc.message_timestamp_after_max_ms;
	pc->max_message_bytes = tc.max_message_bytes;
	pc->leader_epoch = 0;
}

char *
ch_lm_part_dir(const ch_log_manager *lm, const char *topic, int32_t index)
{
	return ch_plog_dir_path(lm->cfg->log_dir, topic, index);
}

void
ch_lm_rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *f = ch_path_join(dir, e->d_name);
		if (unlink(f) != 0)
			CH_LOGW(SUB, "cannot remove %s: %s", f, strerror(errno));
		free(f);
	}
	closedir(d);
	if (rmdir(dir) != 0)
		CH_LOGW(SUB, "cannot remove %s: %s", dir, strerror(errno));
}

/* ---- topics table --------------------------------------------------------------- */

/* The table's entry for a topic name, or NULL. */
static ptopic *
ptopic_find(ch_log_manager *lm, const char *name, size_t len)
{
	return ch_map_get(&lm->topics_by_name, name, len);
}

/* Frees a topic's entry (its partitions already retired or never opened). */
static void
ptopic_free(ptopic *t)
{
	free(t->parts);
	free(t->open_log);
	free(t);
}

/* Unlinks the topic from the table and retires its partitions. */
static void
ptopic_drop(ch_log_manager *lm, ptopic *t, bool remove_dir)
{
	for (int32_t i = 0; i < t->n; i++)
		if (t->parts[i])
			ch_part_retire(t->parts[i], CH_KERR_UNKNOWN_TOPIC_OR_PARTITION, remove_dir);
	if (remove_dir) {
		/* Partitions never opened still have their directories. */
		for (int32_t i = 0; i < t->n; i++) {
			if (t->parts[i])
				continue;
			char *d = ch_lm_part_dir(lm, t->entry->key, i);
			ch_lm_rm_dir(d);
			free(d);
		}
	}
	ch_map_remove_entry(&lm->topics_by_name, t->entry);
	ptopic_free(t);
}

/* ---- durable waiters and syncs --------------------------------------------------- */

static void sync_run(ch_work *j);
static void sync_done(ch_work *j);

void
ch_lm_want_sync(ch_part *p)
{
	if (p->sync_busy) {
		p->sync_again = true;
		return;
	}
	p->sync_busy = true;
	p->sync_again = false;
	p->sync_job.run = sync_run;
	p->sync_job.done = sync_done;
	p->sync_job.ud = p;
	ch_workers_queue(p->lm->workers, &p->sync_job);
}

/* Worker thread: one fdatasync of the log (it covers every append so far). */
static void
sync_run(ch_work *j)
{
	ch_part *p = j->ud;
	uint64_t t0 = ch_now_mono_us();
	p->sync_rc = ch_plog_sync(p->pl);
	p->sync_us = ch_now_mono_us() - t0;
}

void
ch_lm_release_durable(ch_part *p, int16_t kerr, int64_t below)
{
	while (p->w_head && (kerr != 0 || p->w_head->last < below)) {
		waiter *w = p->w_head;
		p->w_head = w->next;
		if (!p->w_head)
			p->w_tail = NULL;
		p->lm->stats.durable_waiters++;
		w->cb(w->ud, kerr, w->base, w->last);
		free(w);
	}
}

/* Loop thread, after a sync: releases what it made durable (or fails every
 * waiter), and queues one more sync for appends made while it ran. */
static void
sync_done(ch_work *j)
{
	ch_part *p = j->ud;
	ch_log_manager *lm = p->lm;
	lm->stats.syncs++;
	ch_hist_observe(&lm->stats.fsync, p->sync_us);
	p->sync_busy = false;
	if (p->sync_rc != CH_OK || ch_plog_failed(p->pl))
		ch_lm_release_durable(p, CH_KERR_KAFKA_STORAGE_ERROR, 0);
	else
		ch_lm_release_durable(p, 0, ch_plog_synced_offset(p->pl));
	if (p->retired) {
		/* Appended while this sync ran, then the partition went away:
		 * no more syncs for them. */
		ch_lm_release_durable(p, p->retire_kerr, 0);
		ch_part_maybe_free(p);
		return;
	}
	if ((p->w_head || p->sync_again) && !p->sync_busy)
		ch_lm_want_sync(p);
}

void
ch_lm_park_durable(ch_part *p, int64_t base, int64_t last, ch_part_durable_fn cb, void *ud)
{
	waiter *w = ch_xmalloc(sizeof(*w));
	*w = (waiter){NULL, base, last, cb, ud};
	CH_FIFO_APPEND(p->w_head, p->w_tail, w);
	ch_lm_want_sync(p);
}

/* ---- compaction -------------------------------------------------------------- */

/* Worker thread: one compaction pass over the log's closed segments. */
static void
clean_run(ch_work *j)
{
	ch_part *p = j->ud;
	p->clean_rc = ch_plog_clean_run(p->clean);
}

/* Loop thread: swaps in the compacted segments (or logs the failure). */
static void
clean_done(ch_work *j)
{
	ch_part *p = j->ud;
	ch_log_manager *lm = p->lm;
	int rc = ch_plog_clean_finish(p->pl, p->clean);
	p->clean = NULL;
	p->clean_busy = false;
	if (p->clean_rc == CH_OK && rc == CH_OK)
		lm->stats.cleanings++;
	else
		CH_LOGW(SUB, "compaction of %s-%d failed; will retry", p->topic, p->index);
	if (p->retired)
		ch_part_maybe_free(p);
}

/* Queues a compaction of a compacted log if one is due (see the header's
 * HOUSEKEEPING). */
static void
clean_start(ch_part *p, int64_t now_mono)
{
	if (p->clean_busy || p->retired || !p->cfg.cleanup_compact ||
	    !p->lm->cfg->log_cleaner_enable)
		return;
	if (p->last_clean_ms && now_mono - p->last_clean_ms < p->lm->cfg->log_cleaner_backoff_ms)
		return;
	/* Only when segments closed since the last clean, and once more after
	 * delete.retention.ms so the tombstones it kept can go. */
	int64_t base = ch_plog_active_base(p->pl);
	if (base != p->clean_base) {
		p->clean_base = base;
		p->clean_followup_ms = now_mono +
				       CH_MIN(p->cfg.delete_retention_ms, INT64_MAX / 4) +
				       p->lm->cfg->log_cleaner_backoff_ms;
	} else if (p->clean_followup_ms && now_mono >= p->clean_followup_ms) {
		p->clean_followup_ms = 0;
	} else {
		return;
	}
	p->last_clean_ms = now_mono;
	ch_plog_clean *c = ch_plog_clean_begin(p->pl, ch_now_wall_ms());
	if (!c)
		return;
	p->clean = c;
	p->clean_busy = true;
	p->clean_job.run = clean_run;
	p->clean_job.done = clean_done;
	p->clean_job.ud = p;
	ch_workers_queue(p->lm->workers, &p->clean_job);
}

/* Opens (recovers) one partition with its topic's configuration; NULL with
 * *kerr KAFKA_STORAGE_ERROR and lm->open_errno set when it cannot be opened
 * (logged through rl: every lookup of such a partition tries again). */
static ch_part *
open_logged(ch_log_manager *lm, const ch_topic *t, int32_t index, ch_ratelog *rl, int16_t *kerr)
{
	ch_plog_config pc;
	plog_config_for(lm, t, &pc);
	int r = 0;
	ch_part *p = ch_part_open(lm, t->name, index, t->id, &pc, &r);
	if (!p) {
		lm->open_errno = -r;
		if (!rl->sub)
			ch_ratelog_init(rl, SUB, CH_LOG_ERROR, "opening the log of %s-%d", t->name,
					index);
		if (ch_ratelog_fail(rl, ch_now_mono_ms(), strerror(-r)))
			CH_LOGE(SUB, "cannot open the log of %s-%d: %s", t->name, index,
				strerror(-r));
		*kerr = CH_KERR_KAFKA_STORAGE_ERROR;
		return NULL;
	}
	if (ch_ratelog_streak(rl))
		ch_ratelog_ok(rl, ch_now_mono_ms());
	return p;
}

ch_part *
ch_log_manager_get(ch_log_manager *lm, const char *name, size_t len, int32_t index, int16_t *kerr)
{
	*kerr = CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (lm->closing)
		return NULL;
	const ch_topic *t = ch_topics_find(lm->topics, name, len);
	ptopic *pt = ptopic_find(lm, name, len);
	if (pt && (!t || !ch_uuid_eq(&pt->id, &t->id))) {
		/* deleted, perhaps re-created: the old logs go */
		ptopic_drop(lm, pt, true);
		pt = NULL;
	}
	if (!t || index < 0 || index >= t->partitions)
		return NULL;
	if (!pt) {
		pt = ch_xcalloc(1, sizeof(*pt));
		pt->id = t->id;
		pt->entry = ch_map_put(&lm->topics_by_name, name, len, pt);
	}
	if (pt->n < t->partitions) {
		size_t n = (size_t)t->partitions, added = (size_t)(t->partitions - pt->n);
		pt->parts = ch_xrealloc(pt->parts, sizeof(*pt->parts) * n);
		memset(pt->parts + pt->n, 0, sizeof(*pt->parts) * added);
		pt->open_log = ch_xrealloc(pt->open_log, sizeof(*pt->open_log) * n);
		memset(pt->open_log + pt->n, 0, sizeof(*pt->open_log) * added);
		pt->n = t->partitions;
	}
	if (!pt->parts[index])
		pt->parts[index] = open_logged(lm, t, index, &pt->open_log[index], kerr);
	if (pt->parts[index])
		*kerr = 0;
	return pt->parts[index];
}

ch_part *
ch_log_manager_find(ch_log_manager *lm, const char *topic, int32_t partition, int *open_errno)
{
	int16_t kerr;
	lm->open_errno = 0;
	ch_part *p = ch_log_manager_get(lm, topic, strlen(topic), partition, &kerr);
	*open_errno = p ? 0 : lm->open_errno;
	return p;
}

void
ch_log_manager_topic_deleted(ch_log_manager *lm, const char *name, size_t len)
{
	ptopic *pt = ptopic_find(lm, name, len);
	if (pt) {
		ptopic_drop(lm, pt, true);
		return;
	}
	/* Never opened: remove its directories "<name>-<n>". */
	DIR *d = opendir(lm->cfg->log_dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t n = strlen(e->d_name);
		if (n <= len + 1 || memcmp(e->d_name, name, len) || e->d_name[len] != '-')
			continue;
		const char *q = e->d_name + len + 1;
		if (strspn(q, "0123456789") != strlen(q))
			continue;
		char *dir = ch_path_join(lm->cfg->log_dir, e->d_name);
		ch_lm_rm_dir(dir);
		free(dir);
	}
	closedir(d);
}

typedef struct posted_err {
	ch_part_durable_fn cb;
	void *ud;
	int16_t kerr;
} posted_err;

/* Loop thread: an append_durable error, delivered after the call returned. */
static void
posted_err_cb(ch_loop *loop, void *ud)
{
	(void)loop;
	posted_err *e = ud;
	e->cb(e->ud, e->kerr, -1, -1);
	free(e);
}

void
ch_log_manager_append_durable(ch_log_manager *lm, const char *topic, int32_t partition,
			      uint8_t *data, size_t len, ch_part_durable_fn cb, void *ud)
{
	int16_t kerr;
	ch_part *p = ch_log_manager_get(lm, topic, strlen(topic), partition, &kerr);
	if (p) {
		ch_plog_append_info info;
		kerr = ch_part_append(p, data, len, cb, ud, &info);
		if (!kerr)
			return;
	}
	posted_err *e = ch_xmalloc(sizeof(*e));
	*e = (posted_err){cb, ud, kerr};
	ch_loop_post(lm->loop, posted_err_cb, e);
}

/* ---- housekeeping ------------------------------------------------------------------- */

/* Calls fn for every open partition (fn must not add or drop topics). */
static void
each_part(ch_log_manager *lm, void (*fn)(ch_part *p, void *ud), void *ud)
{
	ch_map_foreach (&lm->topics_by_name, e) {
		ptopic *t = e->value;
		for (int32_t i = 0; i < t->n; i++)
			if (t->parts[i])
				fn(t->parts[i], ud);
	}
}

/* Every second: a flush.ms sync if due, and the log's rate-limited error
 * summaries. ud: the wall clock now. */
static void
tick_flush(ch_part *p, void *ud)
{
	int64_t now = *(int64_t *)ud;
	if (p->cfg.flush_ms != INT64_MAX && ch_plog_flush_due(p->pl, now))
		ch_lm_want_sync(p);
	ch_plog_log_tick(p->pl, ch_loop_now(p->lm->loop));
}

/* Summaries of partitions whose log still cannot be opened. */
static void
tick_open_logs(ch_log_manager *lm, int64_t now_mono)
{
	ch_map_foreach (&lm->topics_by_name, e) {
		ptopic *pt = e->value;
		for (int32_t i = 0; i < pt->n; i++)
			if (!pt->parts[i])
				ch_ratelog_tick(&pt->open_log[i], now_mono);
	}
}

/* The log config again from the topic's overrides and the broker config. */
static void
part_refresh_config(ch_part *p)
{
	ch_log_manager *lm = p->lm;
	const ch_topic *t = ch_topics_find(lm->topics, p->topic, strlen(p->topic));
	if (t && ch_uuid_eq(&t->id, &p->topic_id)) {
		ch_plog_config pc;
		plog_config_for(lm, t, &pc);
		if (memcmp(&pc, &p->cfg, sizeof(pc)) != 0) {
			p->cfg = pc;
			ch_plog_set_config(p->pl, &pc);
		}
	}
}

typedef struct refresh_arg {
	const char *topic;
	size_t len;
} refresh_arg;

/* Re-resolves a partition's config if it belongs to the topic asked for
 * (all topics when that is NULL). */
static void
refresh_one(ch_part *p, void *ud)
{
	const refresh_arg *a = ud;
	if (!a->topic || (strlen(p->topic) == a->len && memcmp(p->topic, a->topic, a->len) == 0))
		part_refresh_config(p);
}

/* Every log.retention.check.interval.ms: configs, retention, compaction. */
static void
tick_retention(ch_part *p, void *ud)
{
	ch_log_manager *lm = p->lm;
	(void)ud;
	part_refresh_config(p);
	if (p->cfg.cleanup_delete) {
		int deleted = 0;
		int16_t kerr;
		ch_plog_retention(p->pl, ch_now_wall_ms(), &deleted, &kerr);
		if (deleted) {
			lm->stats.retention_deleted += (uint64_t)deleted;
			CH_LOGI(SUB,
				"retention deleted %d segment(s) of %s-%d; log start offset "
				"%" PRId64,
				deleted, p->topic, p->index, ch_plog_start_offset(p->pl));
		}
	}
	clean_start(p, ch_loop_now(lm->loop));
}

typedef struct expire_arg {
	int64_t now_ms;
	size_t n;
} expire_arg;

/* Forgets the partition's producers idle for producer.id.expiration.ms. */
static void
expire_one(ch_part *p, void *ud)
{
	expire_arg *a = ud;
	size_t n = ch_producer_state_expire(&p->producers, a->now_ms,
					    p->lm->cfg->producer_id_expiration_ms);
	if (n)
		CH_LOGD(SUB, "%s-%d: %zu producer id(s) expired", p->topic, p->index, n);
	a->n += n;
}

size_t
ch_log_manager_expire_producers(ch_log_manager *lm, int64_t now_ms)
{
	expire_arg a = {now_ms, 0};
	each_part(lm, expire_one, &a);
	lm->stats.producers_expired += a.n;
	return a.n;
}

void
ch_log_manager_configs_changed(ch_log_manager *lm, const char *topic, size_t topic_len)
{
	refresh_arg a = {topic, topic_len};
	each_part(lm, refresh_one, &a);
}

/* The housekeeping timer: flush every second, retention every
 * log.retention.check.interval.ms; re-arms itself. */
static void
tick_cb(ch_loop *loop, ch_timer *t, void *ud)
{
	ch_log_manager *lm = ud;
	int64_t now = ch_now_wall_ms();
	each_part(lm, tick_flush, &now);
	int64_t mono = ch_loop_now(loop);
	tick_open_logs(lm, mono);
	int64_t ival = lm->cfg->log_retention_check_interval_ms;
	if (ival <= 0)
		ival = 300000;
	if (mono - lm->last_retention_ms >= ival) {
		lm->last_retention_ms = mono;
		each_part(lm, tick_retention, NULL);
	}
	if (mono - lm->last_expiration_ms >= CH_PRODUCER_EXPIRATION_CHECK_MS) {
		lm->last_expiration_ms = mono;
		ch_log_manager_expire_producers(lm, now);
	}
	ch_timer_arm(loop, t, mono + CH_MIN(ival, 1000));
}

/* ---- the manager ------------------------------------------------------------------- */

/* Worker thread: hands a finished item to the loop thread. */
static void
work_post(void *ctx, ch_work *w)
{
	ch_log_manager *lm = ctx;
	ch_loop_post(lm->loop, work_complete_cb, w);
}

ch_log_manager *
ch_log_manager_new(ch_loop *loop, const struct ch_config *cfg, struct ch_topics *topics)
{
	ch_log_manager *lm = ch_xcalloc(1, sizeof(*lm));
	lm->loop = loop;
	lm->cfg = cfg;
	lm->topics = topics;
	ch_map_init(&lm->topics_by_name);
	lm->workers = ch_workers_new(N_WORKERS, work_post, lm);
	ch_producer_ids_init(&lm->producer_ids, ch_now_wall_ms());
	lm->last_retention_ms = ch_loop_now(loop);
	lm->last_expiration_ms = lm->last_retention_ms;
	ch_timer_init(&lm->tick, tick_cb, lm);
	ch_timer_arm(loop, &lm->tick, ch_loop_now(loop) + 1000);
	return lm;
}

ch_workers *
ch_log_manager_workers(ch_log_manager *lm)
{
	return lm->workers;
}

int
ch_log_manager_open_all(ch_log_manager *lm)
{
	int failed = 0;
	size_t n = ch_topics_count(lm->topics);
	for (size_t i = 0; i < n; i++) {
		const ch_topic *t = ch_topics_at(lm->topics, i);
		for (int32_t k = 0; k < t->partitions; k++) {
			int16_t kerr;
			if (!ch_log_manager_get(lm, t->name, t->name_len, k, &kerr))
				failed++;
		}
	}
	return failed;
}

/* Shutdown: the partition's waiters get NOT_LEADER_OR_FOLLOWER. */
static void
retire_for_close(ch_part *p, void *ud)
{
	(void)ud;
	ch_part_retire(p, CH_KERR_NOT_LEADER_OR_FOLLOWER, false);
}

void
ch_log_manager_free(ch_log_manager *lm)
{
	if (!lm)
		return;
	lm->closing = true;
	ch_timer_cancel(lm->loop, &lm->tick);
	/* Let queued work (syncs, cleanings, registry writes) finish and
	 * deliver its results. */
	while (ch_workers_inflight(lm->workers) > 0)
		ch_loop_run_once(lm->loop, 100);
	ch_map_foreach (&lm->topics_by_name, e) {
		ptopic *t = e->value;
		for (int32_t i = 0; i < t->n; i++)
			if (t->parts[i])
				retire_for_close(t->parts[i], NULL);
		ptopic_free(t);
	}
	ch_map_free(&lm->topics_by_name);
	/* Parked responses answered by the retirement go out now. */
	ch_loop_run_once(lm->loop, 0);
	ch_workers_free(lm->workers);
	free(lm);
}

void
ch_log_manager_set_logfs(ch_log_manager *lm, ch_logfs *fs)
{
	lm->fs = fs;
}

int64_t
ch_log_manager_next_producer_id(ch_log_manager *lm)
{
	return ch_producer_ids_next(&lm->producer_ids);
}

ch_log_manager_stats
ch_log_manager_get_stats(const ch_log_manager *lm)
{
	return lm->stats;
}
