/*
 * ch_parts.c: the partition manager. See ch_parts.h for the model.
 */
#include "broker/ch_parts.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ch_common.h"
#include "common/ch_hash.h"
#include "common/ch_log.h"
#include "common/ch_ratelog.h"
#include "config/ch_config.h"
#include "meta/ch_topics.h"
#include "proto/generated/ch_errors.h"
#include "event/ch_loop.h"

#define SUB "parts"
#define N_WORKERS 4
#define N_BUCKETS 1024
#define PSTATE_BATCHES 5 /* Kafka keeps the last five batches per producer */
#define REPLAY_CHUNK (1 << 20)
#define REPLAY_MAX_DECOMPRESSED (256u << 20)
/* Producer state is rebuilt at open from the batches in the last
 * PSTATE_TAIL_BYTES of the log (see pstate_rebuild). */
#define PSTATE_TAIL_BYTES (8 << 20)

/* ---- the worker pool ------------------------------------------------------- */

typedef struct ch_job ch_job;
struct ch_job {
	ch_job *next;
	void (*run)(ch_job *j);    /* worker thread */
	void (*done)(ch_job *j);   /* loop thread, after run */
	void *ud;
};

/* ---- producer state (idempotence) ----------------------------------------- */

typedef struct pbatch {
	int32_t first_seq, last_seq;
	int64_t base, last;
} pbatch;

typedef struct pstate {
	int64_t pid;
	int16_t epoch;
	int n;                         /* cached batches, up to PSTATE_BATCHES */
	int head;                      /* index of the latest */
	pbatch b[PSTATE_BATCHES];
} pstate;

/* ---- partitions ------------------------------------------------------------- */

typedef struct lso_waiter {
	struct lso_waiter *next;
	int64_t target;
	ch_part_lso_fn cb;
	void *ud;
} lso_waiter;

typedef struct waiter {
	struct waiter *next;
	int64_t base, last;
	ch_part_durable_fn cb;
	void *ud;
} waiter;

struct ch_part {
	ch_parts *ps;
	char *topic;
	int32_t index;
	ch_uuid topic_id;
	ch_plog *pl;
	ch_plog_config cfg;

	waiter *w_head, *w_tail;   /* durable waiters, in offset order */
	bool sync_busy;            /* a sync job is queued or running */
	bool sync_again;           /* a flush was asked for while busy */
	int sync_rc;
	ch_job sync_job;

	lso_waiter *lso_head;      /* DeleteRecords waiting for a start-offset write */
	bool lso_busy;             /* a start-offset write is queued or running */
	int64_t lso_target;        /* what it writes */
	int lso_rc;
	ch_job lso_job;

	bool clean_busy;
	ch_plog_clean *clean;
	int clean_rc;
	int64_t last_clean_ms;     /* monotonic */
	int64_t clean_base;        /* active segment base at the last clean */
	int64_t clean_followup_ms; /* monotonic: clean again for tombstones */
	ch_job clean_job;

	bool retired;              /* deleted (or shutting down): free when idle */
	bool remove_dir;           /* and delete its directory then */
	int16_t retire_kerr;       /* for waiters a sync left behind after that */

	uint64_t appended_bytes;
	ch_part_watch watch_head;  /* sentinel of a circular list */

	pstate *prod;
	size_t n_prod, cap_prod;
};

typedef struct ptopic {
	struct ptopic *next;
	char *name;
	size_t name_len;
	uint64_t hash;
	ch_uuid id;
	ch_part **parts;
	ch_ratelog *open_log; /* [n]: opens that failed (a lookup retries each time) */
	int32_t n;
} ptopic;

struct ch_parts {
	ch_loop *loop;
	const struct ch_config *cfg;
	struct ch_topics *topics;
	ptopic *buckets[N_BUCKETS];
	int open_errno; /* cause of the last failed part_open (ch_parts_find) */

	pthread_t threads[N_WORKERS];
	int n_threads;
	pthread_mutex_t qlock;
	pthread_cond_t qcond;
	ch_job *q_head, *q_tail;
	bool q_stop;
	size_t jobs_inflight;      /* loop thread: queued and not yet done */

	ch_timer tick;
	int64_t last_retention_ms; /* monotonic */
	int64_t next_pid;
	ch_parts_stats stats;
	bool closing;
	ch_logfs *fs;              /* NULL: the real file system (tests set one) */
};

static void
job_done_cb(ch_loop *loop, void *ud)
{
	(void)loop;
	ch_job *j = ud;
	j->done(j);
}

static void *
worker_main(void *arg)
{
	ch_parts *ps = arg;
	for (;;) {
		pthread_mutex_lock(&ps->qlock);
		while (!ps->q_head && !ps->q_stop)
			pthread_cond_wait(&ps->qcond, &ps->qlock);
		ch_job *j = ps->q_head;
		if (!j) {
			pthread_mutex_unlock(&ps->qlock);
			break;
		}
		ps->q_head = j->next;
		if (!ps->q_head)
			ps->q_tail = NULL;
		pthread_mutex_unlock(&ps->qlock);
		j->run(j);
		ch_loop_post(ps->loop, job_done_cb, j);
	}
	return NULL;
}

static void
job_queue(ch_parts *ps, ch_job *j)
{
	ps->jobs_inflight++;
	j->next = NULL;
	pthread_mutex_lock(&ps->qlock);
	if (ps->q_tail)
		ps->q_tail->next = j;
	else
		ps->q_head = j;
	ps->q_tail = j;
	pthread_cond_signal(&ps->qcond);
	pthread_mutex_unlock(&ps->qlock);
}

/* A job for another layer (the topic registry's writes): work on a worker,
 * done on the loop thread. */
typedef struct ext_job {
	ch_job job;
	ch_parts *ps;
	void (*work)(void *arg);
	void (*done)(void *arg);
	void *arg;
} ext_job;

static void
ext_run(ch_job *j)
{
	ext_job *e = (ext_job *)j;
	e->work(e->arg);
}

static void
ext_done(ch_job *j)
{
	ext_job *e = (ext_job *)j;
	e->ps->jobs_inflight--;
	void (*done)(void *) = e->done;
	void *arg = e->arg;
	free(e);
	done(arg);
}

void
ch_parts_run(ch_parts *ps, void (*work)(void *arg), void (*done)(void *arg), void *arg)
{
	ext_job *e = ch_xcalloc(1, sizeof(*e));
	e->job.run = ext_run;
	e->job.done = ext_done;
	e->ps = ps;
	e->work = work;
	e->done = done;
	e->arg = arg;
	job_queue(ps, &e->job);
}

/* ---- configuration ------------------------------------------------------------ */

static void
plog_config_for(const ch_parts *ps, const ch_topic *t, ch_plog_config *pc)
{
	ch_topic_config tc;
	ch_topic_config_resolve(ps->cfg, t->configs, t->n_configs, &tc);
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
	pc->max_message_bytes = tc.max_message_bytes;
	pc->leader_epoch = 0;
}

static char *
part_dir(const ch_parts *ps, const char *topic, int32_t index)
{
	size_t n = strlen(ps->cfg->log_dir) + strlen(topic) + 32;
	char *d = ch_xmalloc(n);
	snprintf(d, n, "%s/%s-%" PRId32, ps->cfg->log_dir, topic, index);
	return d;
}

/* Removes a partition directory and the files in it (no subdirectories). */
static void
rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		size_t n = strlen(dir) + strlen(e->d_name) + 2;
		char *f = ch_xmalloc(n);
		snprintf(f, n, "%s/%s", dir, e->d_name);
		if (unlink(f) != 0)
			CH_LOGW(SUB, "cannot remove %s: %s", f, strerror(errno));
		free(f);
	}
	closedir(d);
	if (rmdir(dir) != 0)
		CH_LOGW(SUB, "cannot remove %s: %s", dir, strerror(errno));
}

/* ---- topics table --------------------------------------------------------------- */

static ptopic *
ptopic_find(ch_parts *ps, const char *name, size_t len, uint64_t h)
{
	for (ptopic *t = ps->buckets[h % N_BUCKETS]; t; t = t->next)
		if (t->hash == h && t->name_len == len && !memcmp(t->name, name, len))
			return t;
	return NULL;
}

static void part_retire(ch_part *p, int16_t kerr, bool remove_dir);

/* Unlinks the topic from the table and retires its partitions. */
static void
ptopic_drop(ch_parts *ps, ptopic *t, bool remove_dir)
{
	ptopic **pp = &ps->buckets[t->hash % N_BUCKETS];
	while (*pp != t)
		pp = &(*pp)->next;
	*pp = t->next;
	for (int32_t i = 0; i < t->n; i++)
		if (t->parts[i])
			part_retire(t->parts[i], CH_KERR_UNKNOWN_TOPIC_OR_PARTITION, remove_dir);
	if (remove_dir) {
		/* Partitions never opened still have their directories. */
		for (int32_t i = 0; i < t->n; i++) {
			if (t->parts[i])
				continue;
			char *d = part_dir(ps, t->name, i);
			rm_dir(d);
			free(d);
		}
	}
	free(t->parts);
	free(t->open_log);
	free(t->name);
	free(t);
}

/* ---- durable waiters and syncs --------------------------------------------------- */

static void sync_run(ch_job *j);
static void sync_done(ch_job *j);

static void
want_sync(ch_part *p)
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
	job_queue(p->ps, &p->sync_job);
}

static void
sync_run(ch_job *j)
{
	ch_part *p = j->ud;
	p->sync_rc = ch_plog_sync(p->pl);
}

/* Calls (and frees) waiters from the head while keep(w) says so. */
static void
waiters_release(ch_part *p, int16_t kerr, int64_t below)
{
	while (p->w_head && (kerr != 0 || p->w_head->last < below)) {
		waiter *w = p->w_head;
		p->w_head = w->next;
		if (!p->w_head)
			p->w_tail = NULL;
		p->ps->stats.durable_waiters++;
		w->cb(w->ud, kerr, w->base, w->last);
		free(w);
	}
}

static void part_maybe_free(ch_part *p);

static void
sync_done(ch_job *j)
{
	ch_part *p = j->ud;
	ch_parts *ps = p->ps;
	ps->jobs_inflight--;
	ps->stats.syncs++;
	p->sync_busy = false;
	if (p->sync_rc != CH_OK || ch_plog_failed(p->pl))
		waiters_release(p, CH_KERR_KAFKA_STORAGE_ERROR, 0);
	else
		waiters_release(p, 0, ch_plog_synced_offset(p->pl));
	if (p->retired) {
		/* Appended while this sync ran, then the partition went away:
		 * no more syncs for them. */
		waiters_release(p, p->retire_kerr, 0);
		part_maybe_free(p);
		return;
	}
	if ((p->w_head || p->sync_again) && !p->sync_busy)
		want_sync(p);
}

/* ---- compaction -------------------------------------------------------------- */

static void
clean_run(ch_job *j)
{
	ch_part *p = j->ud;
	p->clean_rc = ch_plog_clean_run(p->clean);
}

static void
clean_done(ch_job *j)
{
	ch_part *p = j->ud;
	ch_parts *ps = p->ps;
	ps->jobs_inflight--;
	int rc = ch_plog_clean_finish(p->pl, p->clean);
	p->clean = NULL;
	p->clean_busy = false;
	if (p->clean_rc == CH_OK && rc == CH_OK)
		ps->stats.cleanings++;
	else
		CH_LOGW(SUB, "compaction of %s-%d failed; will retry", p->topic, p->index);
	if (p->retired)
		part_maybe_free(p);
}

static void
clean_start(ch_part *p, int64_t now_mono)
{
	if (p->clean_busy || p->retired || !p->cfg.cleanup_compact || !p->ps->cfg->log_cleaner_enable)
		return;
	if (p->last_clean_ms && now_mono - p->last_clean_ms < p->ps->cfg->log_cleaner_backoff_ms)
		return;
	/* Only when segments closed since the last clean, and once more after
	 * delete.retention.ms so the tombstones it kept can go. */
	int64_t base = ch_plog_active_base(p->pl);
	if (base != p->clean_base) {
		p->clean_base = base;
		p->clean_followup_ms = now_mono + CH_MIN(p->cfg.delete_retention_ms, INT64_MAX / 4) +
				       p->ps->cfg->log_cleaner_backoff_ms;
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
	job_queue(p->ps, &p->clean_job);
}

/* ---- partition life -------------------------------------------------------------- */

static void pstate_rebuild(ch_part *p);

/* Opens (recovers) one partition's log; NULL with *kerr KAFKA_STORAGE_ERROR
 * and ps->open_errno set when it cannot be opened (logged through rl: every
 * lookup of such a partition tries again). */
static ch_part *
part_open(ch_parts *ps, const ch_topic *t, int32_t index, ch_ratelog *rl, int16_t *kerr)
{
	ch_plog_config pc;
	plog_config_for(ps, t, &pc);
	ch_plog *pl = NULL;
	int r = ch_plog_open(ps->cfg->log_dir, t->name, index, &pc, ps->fs, ch_now_wall_ms(), &pl);
	if (r != CH_OK) {
		ps->open_errno = -r;
		if (!rl->sub)
			ch_ratelog_init(rl, SUB, CH_LOG_ERROR, "opening the log of %s-%d", t->name,
					index);
		if (ch_ratelog_fail(rl, ch_now_mono_ms(), strerror(-r)))
			CH_LOGE(SUB, "cannot open the log of %s-%d: %s", t->name, index, strerror(-r));
		*kerr = CH_KERR_KAFKA_STORAGE_ERROR;
		return NULL;
	}
	if (ch_ratelog_streak(rl))
		ch_ratelog_ok(rl, ch_now_mono_ms());
	ch_part *p = ch_xcalloc(1, sizeof(*p));
	p->ps = ps;
	p->topic = ch_xstrdup(t->name);
	p->index = index;
	p->topic_id = t->id;
	p->pl = pl;
	p->cfg = pc;
	p->watch_head.next = p->watch_head.prev = &p->watch_head;
	pstate_rebuild(p);
	CH_LOGD(SUB, "opened %s-%d: offsets [%" PRId64 ", %" PRId64 "), %zu producer(s)", t->name,
		index, ch_plog_start_offset(pl), ch_plog_end_offset(pl), p->n_prod);
	return p;
}

static void
part_free_now(ch_part *p)
{
	if (!p->remove_dir && !ch_plog_failed(p->pl))
		ch_plog_sync(p->pl);
	ch_plog_close(p->pl);
	if (p->remove_dir) {
		char *d = part_dir(p->ps, p->topic, p->index);
		rm_dir(d);
		free(d);
	}
	free(p->prod);
	free(p->topic);
	free(p);
}

static void
part_maybe_free(ch_part *p)
{
	if (p->retired && !p->sync_busy && !p->clean_busy && !p->lso_busy)
		part_free_now(p);
}

/* ---- DeleteRecords: the log start offset, moved durably ----------------------- */

/* Calls (and frees) the DeleteRecords waiters whose target is at most upto:
 * with kerr, or (kerr 0) with the log start offset as their low watermark. */
static void
lso_release(ch_part *p, int16_t kerr, int64_t upto)
{
	for (lso_waiter **pp = &p->lso_head; *pp;) {
		lso_waiter *w = *pp;
		if (w->target > upto) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		w->cb(w->ud, kerr, kerr ? -1 : ch_plog_start_offset(p->pl));
		free(w);
	}
}

static void
lso_run(ch_job *j)
{
	ch_part *p = j->ud;
	p->lso_rc = ch_plog_start_offset_write(p->pl, p->lso_target);
}

static void lso_done(ch_job *j);

/* Writes the largest target waiting, if no write runs. */
static void
lso_kick(ch_part *p)
{
	if (p->lso_busy || !p->lso_head)
		return;
	int64_t target = 0;
	for (lso_waiter *w = p->lso_head; w; w = w->next)
		target = CH_MAX(target, w->target);
	p->lso_busy = true;
	p->lso_target = target;
	p->lso_job.run = lso_run;
	p->lso_job.done = lso_done;
	p->lso_job.ud = p;
	job_queue(p->ps, &p->lso_job);
}

static void
lso_done(ch_job *j)
{
	ch_part *p = j->ud;
	p->ps->jobs_inflight--;
	p->lso_busy = false;
	if (p->retired) {
		lso_release(p, p->retire_kerr, INT64_MAX);
		part_maybe_free(p);
		return;
	}
	if (p->lso_rc < 0) {
		CH_LOGE(SUB, "%s-%d: cannot persist log start offset %" PRId64 ": %s", p->topic,
			p->index, p->lso_target, strerror(-p->lso_rc));
		lso_release(p, CH_KERR_KAFKA_STORAGE_ERROR, p->lso_target);
	} else {
		int64_t before = ch_plog_start_offset(p->pl);
		int64_t start = ch_plog_start_offset_set(p->pl, p->lso_target);
		if (start != before)
			CH_LOGI(SUB, "%s-%d: log start offset %" PRId64 " -> %" PRId64
				     " (DeleteRecords)", p->topic, p->index, before, start);
		lso_release(p, 0, p->lso_target);
	}
	lso_kick(p);
}

void
ch_part_delete_records(ch_part *p, int64_t before, ch_part_lso_fn cb, void *ud)
{
	int64_t target;
	int16_t kerr = 0;
	if (p->retired) {
		kerr = CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	} else if (!p->cfg.cleanup_delete) {
		kerr = CH_KERR_POLICY_VIOLATION; /* Partition.deleteRecordsOnLeader */
	} else if (ch_plog_start_offset_check(p->pl, before, &target, &kerr) == CH_OK &&
		   target <= ch_plog_start_offset(p->pl)) {
		cb(ud, 0, ch_plog_start_offset(p->pl)); /* nothing to move */
		return;
	}
	if (kerr) {
		cb(ud, kerr, -1);
		return;
	}
	lso_waiter *w = ch_xmalloc(sizeof(*w));
	*w = (lso_waiter){p->lso_head, target, cb, ud};
	p->lso_head = w;
	lso_kick(p);
}

/* The partition leaves the table: watchers are told, waiters failed; the log
 * is closed once no job uses it. */
static void
part_retire(ch_part *p, int16_t kerr, bool remove_dir)
{
	p->retired = true;
	p->remove_dir = remove_dir;
	p->retire_kerr = kerr;
	while (p->watch_head.next != &p->watch_head) {
		ch_part_watch *w = p->watch_head.next;
		ch_part_watch_remove(w);
		w->fn(w, CH_PART_EV_GONE);
	}
	if (!p->sync_busy)
		waiters_release(p, kerr, 0);
	else
		p->sync_again = false; /* sync_done fails or releases them */
	if (!p->lso_busy)
		lso_release(p, kerr, INT64_MAX);
	part_maybe_free(p);
}

ch_part *
ch_parts_get(ch_parts *ps, const char *name, size_t len, int32_t index, int16_t *kerr)
{
	*kerr = CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (ps->closing)
		return NULL;
	const ch_topic *t = ch_topics_find(ps->topics, name, len);
	uint64_t h = ch_hash_bytes(name, len);
	ptopic *pt = ptopic_find(ps, name, len, h);
	if (pt && (!t || !ch_uuid_eq(&pt->id, &t->id))) {
		/* deleted, perhaps re-created: the old logs go */
		ptopic_drop(ps, pt, true);
		pt = NULL;
	}
	if (!t || index < 0 || index >= t->partitions)
		return NULL;
	if (!pt) {
		pt = ch_xcalloc(1, sizeof(*pt));
		pt->name = ch_xstrndup(name, len);
		pt->name_len = len;
		pt->hash = h;
		pt->id = t->id;
		pt->next = ps->buckets[h % N_BUCKETS];
		ps->buckets[h % N_BUCKETS] = pt;
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
		pt->parts[index] = part_open(ps, t, index, &pt->open_log[index], kerr);
	if (pt->parts[index])
		*kerr = 0;
	return pt->parts[index];
}

ch_part *
ch_parts_find(ch_parts *ps, const char *topic, int32_t partition, int *open_errno)
{
	int16_t kerr;
	ps->open_errno = 0;
	ch_part *p = ch_parts_get(ps, topic, strlen(topic), partition, &kerr);
	*open_errno = p ? 0 : ps->open_errno;
	return p;
}

void
ch_parts_topic_deleted(ch_parts *ps, const char *name, size_t len)
{
	ptopic *pt = ptopic_find(ps, name, len, ch_hash_bytes(name, len));
	if (pt) {
		ptopic_drop(ps, pt, true);
		return;
	}
	/* Never opened: remove its directories "<name>-<n>". */
	DIR *d = opendir(ps->cfg->log_dir);
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
		size_t m = strlen(ps->cfg->log_dir) + n + 2;
		char *dir = ch_xmalloc(m);
		snprintf(dir, m, "%s/%s", ps->cfg->log_dir, e->d_name);
		rm_dir(dir);
		free(dir);
	}
	closedir(d);
}

ch_plog *
ch_part_log(ch_part *p)
{
	return p->pl;
}

const char *
ch_part_topic(const ch_part *p)
{
	return p->topic;
}

int32_t
ch_part_index(const ch_part *p)
{
	return p->index;
}

ch_uuid
ch_part_topic_id(const ch_part *p)
{
	return p->topic_id;
}

/* ---- watches ------------------------------------------------------------------- */

void
ch_part_watch_add(ch_part *p, ch_part_watch *w)
{
	w->part = p;
	w->prev = p->watch_head.prev;
	w->next = &p->watch_head;
	p->watch_head.prev->next = w;
	p->watch_head.prev = w;
}

void
ch_part_watch_remove(ch_part_watch *w)
{
	if (!w->part)
		return;
	w->prev->next = w->next;
	w->next->prev = w->prev;
	w->prev = w->next = NULL;
	w->part = NULL;
}

uint64_t
ch_part_appended_bytes(const ch_part *p)
{
	return p->appended_bytes;
}

/* ---- idempotent producers ---------------------------------------------------------- */

static pstate *
pstate_find(ch_part *p, int64_t pid)
{
	for (size_t i = 0; i < p->n_prod; i++)
		if (p->prod[i].pid == pid)
			return &p->prod[i];
	return NULL;
}

static int32_t
seq_add(int32_t seq, int32_t n)
{
	int64_t s = (int64_t)seq + n;
	return (int32_t)(s > INT32_MAX ? s - INT32_MAX - 1 : s);
}

/* Checks a batch against the producer's state. 0, a Kafka error, or -1 for
 * "duplicate of *dup". */
static int
pstate_check(ch_part *p, const ch_batch_hdr *h, pbatch *dup)
{
	pstate *st = pstate_find(p, h->producer_id);
	if (!st || st->n == 0)
		return 0;
	if (h->producer_epoch < st->epoch)
		return CH_KERR_INVALID_PRODUCER_EPOCH;
	if (h->producer_epoch > st->epoch)
		return h->base_sequence == 0 ? 0 : CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
	int32_t last_seq = seq_add(h->base_sequence, h->last_offset_delta);
	for (int i = 0; i < st->n; i++) {
		const pbatch *b = &st->b[i];
		if (b->first_seq == h->base_sequence && b->last_seq == last_seq) {
			*dup = *b;
			return -1;
		}
	}
	if (h->base_sequence != seq_add(st->b[st->head].last_seq, 1))
		return CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
	return 0;
}

static void
pstate_update(ch_part *p, const ch_batch_hdr *h)
{
	pstate *st = pstate_find(p, h->producer_id);
	if (!st) {
		if (p->n_prod == p->cap_prod) {
			p->cap_prod = p->cap_prod ? p->cap_prod * 2 : 4;
			p->prod = ch_xrealloc(p->prod, sizeof(*p->prod) * p->cap_prod);
		}
		st = &p->prod[p->n_prod++];
		memset(st, 0, sizeof(*st));
		st->pid = h->producer_id;
		st->epoch = h->producer_epoch;
	}
	if (h->producer_epoch != st->epoch) {
		st->epoch = h->producer_epoch;
		st->n = 0;
	}
	int slot = st->n == 0 ? 0 : (st->head + 1) % PSTATE_BATCHES;
	st->b[slot] = (pbatch){h->base_sequence, seq_add(h->base_sequence, h->last_offset_delta),
			       h->base_offset, ch_batch_last_offset(h)};
	st->head = slot;
	if (st->n < PSTATE_BATCHES)
		st->n++;
}

/*
 * The offset from which the last `budget` bytes of the log start (at a batch
 * boundary): walks back whole segments while they fit, then binary-searches
 * the segment where the budget runs out for the first batch at or after
 * (segment size - what is left of the budget). ch_plog_read finds a batch by
 * offset through the sparse index, so this costs O(log n) small reads.
 */
static int64_t
tail_start(ch_plog *pl, int64_t budget)
{
	int64_t start = ch_plog_start_offset(pl);
	int64_t hi = ch_plog_end_offset(pl);
	while (hi > start && budget > 0) {
		ch_plog_slice sl;
		int16_t kerr;
		if (ch_plog_read(pl, hi - 1, 1, &sl, &kerr) != CH_OK || sl.len == 0)
			return hi;
		ch_seg *seg = sl.seg;
		int64_t base = CH_MAX(seg->base, start);
		int64_t size = seg->size;
		ch_plog_slice_release(&sl);
		if (size <= budget) {
			budget -= size;
			hi = base;
			continue;
		}
		int64_t want = size - budget; /* first batch at or after this position */
		int64_t lo = base, up = hi - 1;
		while (lo < up) {
			int64_t mid = lo + (up - lo) / 2;
			if (ch_plog_read(pl, mid, 1, &sl, &kerr) != CH_OK)
				return hi;
			bool after = sl.len == 0 || sl.seg != seg || sl.pos >= want;
			ch_plog_slice_release(&sl);
			if (after)
				up = mid;
			else
				lo = mid + 1;
		}
		return lo;
	}
	return hi;
}

/*
 * Producer state after a restart (Kafka rebuilds it from its snapshots and
 * the log): the headers of the batches in the last PSTATE_TAIL_BYTES of the
 * log are replayed through pstate_update, oldest first, so each producer
 * whose last batches are there gets back its epoch and last five batches'
 * sequence ranges and offsets. A retried batch is then a duplicate answered
 * with its original offsets, and a gap is OUT_OF_ORDER_SEQUENCE_NUMBER, as
 * before the restart. Producers seen only further back are unknown again
 * (accepted at any sequence). Bounded work: at most that many bytes read,
 * headers parsed, no decompression.
 */
static void
pstate_rebuild(ch_part *p)
{
	ch_plog *pl = p->pl;
	int64_t off = tail_start(pl, PSTATE_TAIL_BYTES);
	int64_t end = ch_plog_end_offset(pl);
	ch_buf buf;
	ch_buf_init(&buf);
	int64_t batches = 0;
	while (off < end) {
		int16_t kerr;
		ch_buf_reset(&buf);
		if (ch_plog_read_copy(pl, off, REPLAY_CHUNK, &buf, &kerr) != CH_OK || buf.len == 0)
			break;
		size_t pos = 0;
		int64_t next = off;
		while (pos < buf.len) {
			ch_batch_hdr h;
			if (ch_batch_parse_hdr(buf.data + pos, buf.len - pos, 0, &h) != CH_BATCH_OK ||
			    ch_batch_size(&h) > (int64_t)(buf.len - pos))
				break; /* cut short by the chunk: read on from there */
			pos += (size_t)ch_batch_size(&h);
			next = ch_batch_last_offset(&h) + 1;
			batches++;
			if (h.producer_id >= 0 && !(h.attributes & CH_BATCH_ATTR_CONTROL) &&
			    ch_batch_last_offset(&h) >= off)
				pstate_update(p, &h);
		}
		if (next <= off)
			break; /* no whole batch: recovery left a valid log, so never */
		off = next;
	}
	ch_buf_free(&buf);
	if (p->n_prod)
		CH_LOGI(SUB, "%s-%d: producer state of %zu producer(s) rebuilt from %" PRId64
			     " batch(es) at the log's tail",
			p->topic, p->index, p->n_prod, batches);
}

/* ---- append ----------------------------------------------------------------------- */

static void
waiter_push(ch_part *p, int64_t base, int64_t last, ch_part_durable_fn cb, void *ud)
{
	waiter *w = ch_xmalloc(sizeof(*w));
	*w = (waiter){NULL, base, last, cb, ud};
	if (p->w_tail)
		p->w_tail->next = w;
	else
		p->w_head = w;
	p->w_tail = w;
	want_sync(p);
}

int16_t
ch_part_append(ch_part *p, uint8_t *data, size_t len, ch_part_durable_fn durable, void *ud,
	       ch_plog_append_info *info)
{
	memset(info, 0, sizeof(*info));
	if (p->retired)
		return CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	/* Idempotence: the first batch of an idempotent producer decides. */
	ch_batch_hdr h;
	bool any_pid = false;
	for (size_t pos = 0; pos < len;) {
		if (ch_batch_parse_hdr(data + pos, len - pos, 0, &h) != CH_BATCH_OK)
			break; /* ch_plog_append rejects it */
		if (h.producer_id >= 0) {
			pbatch dup;
			int r = pstate_check(p, &h, &dup);
			if (r == -1) {
				info->base_offset = dup.base;
				info->last_offset = dup.last;
				info->log_append_time = -1;
				info->log_start_offset = ch_plog_start_offset(p->pl);
				CH_LOGD(SUB, "%s-%d: duplicate batch of producer %" PRId64
					     " seq %d (offset %" PRId64 ")",
					p->topic, p->index, h.producer_id, dup.first_seq, dup.base);
				if (durable)
					waiter_push(p, dup.base, dup.last, durable, ud);
				return 0;
			}
			if (r)
				return (int16_t)r;
			any_pid = true;
			break;
		}
		if (ch_batch_size(&h) > (int64_t)(len - pos))
			break;
		pos += (size_t)ch_batch_size(&h);
	}
	int16_t kerr = 0;
	if (ch_plog_append(p->pl, data, len, ch_now_wall_ms(), info, &kerr) != CH_OK)
		return kerr ? kerr : CH_KERR_KAFKA_STORAGE_ERROR;
	if (any_pid) {
		for (size_t pos = 0; pos < len;) {
			if (ch_batch_parse_hdr(data + pos, len - pos, 0, &h) != CH_BATCH_OK)
				break;
			if (h.producer_id >= 0)
				pstate_update(p, &h);
			pos += (size_t)ch_batch_size(&h);
		}
	}
	p->appended_bytes += len;
	for (ch_part_watch *w = p->watch_head.next, *nx; w != &p->watch_head; w = nx) {
		nx = w->next;
		w->fn(w, CH_PART_EV_APPEND);
	}
	if (durable)
		waiter_push(p, info->base_offset, info->last_offset, durable, ud);
	else if (ch_plog_flush_due(p->pl, ch_now_wall_ms()))
		want_sync(p);
	return 0;
}

typedef struct posted_err {
	ch_part_durable_fn cb;
	void *ud;
	int16_t kerr;
} posted_err;

static void
posted_err_cb(ch_loop *loop, void *ud)
{
	(void)loop;
	posted_err *e = ud;
	e->cb(e->ud, e->kerr, -1, -1);
	free(e);
}

void
ch_parts_append_durable(ch_parts *ps, const char *topic, int32_t partition, uint8_t *data,
			size_t len, ch_part_durable_fn cb, void *ud)
{
	int16_t kerr;
	ch_part *p = ch_parts_get(ps, topic, strlen(topic), partition, &kerr);
	if (p) {
		ch_plog_append_info info;
		kerr = ch_part_append(p, data, len, cb, ud, &info);
		if (!kerr)
			return;
	}
	posted_err *e = ch_xmalloc(sizeof(*e));
	*e = (posted_err){cb, ud, kerr};
	ch_loop_post(ps->loop, posted_err_cb, e);
}

/* ---- replay -------------------------------------------------------------------------- */

int
ch_part_replay(ch_part *p, int64_t from, ch_part_record_fn fn, void *ud, int16_t *kerr)
{
	*kerr = 0;
	int64_t off = CH_MAX(from, ch_plog_start_offset(p->pl));
	int64_t end = ch_plog_end_offset(p->pl);
	ch_buf buf, scratch;
	ch_buf_init(&buf);
	ch_buf_init(&scratch);
	int rc = 0;
	while (off < end && rc == 0) {
		ch_buf_reset(&buf);
		if (ch_plog_read_copy(p->pl, off, REPLAY_CHUNK, &buf, kerr) != CH_OK) {
			rc = -1;
			break;
		}
		if (buf.len == 0)
			break;
		size_t pos = 0;
		int64_t next = off;
		while (pos < buf.len && rc == 0) {
			ch_batch_hdr h;
			int e = ch_batch_parse_hdr(buf.data + pos, buf.len - pos, 0, &h);
			if (e == CH_BATCH_ESHORT || (e == CH_BATCH_OK &&
						     ch_batch_size(&h) > (int64_t)(buf.len - pos)))
				break; /* cut short by the chunk: read on from there */
			if (e != CH_BATCH_OK) {
				*kerr = CH_KERR_CORRUPT_MESSAGE;
				rc = -1;
				break;
			}
			const uint8_t *batch = buf.data + pos;
			pos += (size_t)ch_batch_size(&h);
			next = ch_batch_last_offset(&h) + 1;
			if (ch_batch_last_offset(&h) < off)
				continue;
			const uint8_t *rp;
			size_t rl;
			ch_buf_reset(&scratch);
			if (ch_batch_records(batch, &h, &scratch, REPLAY_MAX_DECOMPRESSED, &rp, &rl) !=
			    CH_OK) {
				*kerr = CH_KERR_CORRUPT_MESSAGE;
				rc = -1;
				break;
			}
			ch_record_iter it;
			ch_record_iter_init(&it, rp, rl, h.records_count);
			ch_record rec;
			int r;
			while ((r = ch_record_next(&it, &rec)) == 1) {
				int64_t o = h.base_offset + rec.offset_delta;
				if (o < off)
					continue;
				int64_t ts = (h.attributes & CH_BATCH_ATTR_LOG_APPEND_TIME)
						     ? h.max_timestamp
						     : h.base_timestamp + rec.timestamp_delta;
				if ((rc = fn(ud, &h, &rec, o, ts)) != 0)
					break;
			}
			if (rc == 0 && (r < 0 || it.err)) {
				*kerr = CH_KERR_CORRUPT_MESSAGE;
				rc = -1;
			}
		}
		if (rc == 0 && next == off) {
			/* no whole batch in a chunk: cannot happen (a read returns at
			 * least one whole batch); refuse to spin */
			*kerr = CH_KERR_CORRUPT_MESSAGE;
			rc = -1;
		}
		off = next;
	}
	ch_buf_free(&buf);
	ch_buf_free(&scratch);
	return rc;
}

/* ---- housekeeping ------------------------------------------------------------------- */

static void
each_part(ch_parts *ps, void (*fn)(ch_part *p, void *ud), void *ud)
{
	for (size_t b = 0; b < N_BUCKETS; b++)
		for (ptopic *t = ps->buckets[b], *nx; t; t = nx) {
			nx = t->next;
			for (int32_t i = 0; i < t->n; i++)
				if (t->parts[i])
					fn(t->parts[i], ud);
		}
}

static void
tick_flush(ch_part *p, void *ud)
{
	int64_t now = *(int64_t *)ud;
	if (p->cfg.flush_ms != INT64_MAX && ch_plog_flush_due(p->pl, now))
		want_sync(p);
	ch_plog_log_tick(p->pl, ch_loop_now(p->ps->loop));
}

/* Summaries of partitions whose log still cannot be opened. */
static void
tick_open_logs(ch_parts *ps, int64_t now_mono)
{
	for (size_t b = 0; b < N_BUCKETS; b++)
		for (ptopic *pt = ps->buckets[b]; pt; pt = pt->next)
			for (int32_t i = 0; i < pt->n; i++)
				if (!pt->parts[i])
					ch_ratelog_tick(&pt->open_log[i], now_mono);
}

/* The log config again from the topic's overrides and the broker config. */
static void
part_refresh_config(ch_part *p)
{
	ch_parts *ps = p->ps;
	const ch_topic *t = ch_topics_find(ps->topics, p->topic, strlen(p->topic));
	if (t && ch_uuid_eq(&t->id, &p->topic_id)) {
		ch_plog_config pc;
		plog_config_for(ps, t, &pc);
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

static void
refresh_one(ch_part *p, void *ud)
{
	const refresh_arg *a = ud;
	if (!a->topic || (strlen(p->topic) == a->len && memcmp(p->topic, a->topic, a->len) == 0))
		part_refresh_config(p);
}

static void
tick_retention(ch_part *p, void *ud)
{
	ch_parts *ps = p->ps;
	(void)ud;
	part_refresh_config(p);
	if (p->cfg.cleanup_delete) {
		int deleted = 0;
		int16_t kerr;
		ch_plog_retention(p->pl, ch_now_wall_ms(), &deleted, &kerr);
		if (deleted) {
			ps->stats.retention_deleted += (uint64_t)deleted;
			CH_LOGI(SUB, "retention deleted %d segment(s) of %s-%d; log start offset %" PRId64,
				deleted, p->topic, p->index, ch_plog_start_offset(p->pl));
		}
	}
	clean_start(p, ch_loop_now(ps->loop));
}

void
ch_parts_configs_changed(ch_parts *ps, const char *topic, size_t topic_len)
{
	refresh_arg a = {topic, topic_len};
	each_part(ps, refresh_one, &a);
}

static void
tick_cb(ch_loop *loop, ch_timer *t, void *ud)
{
	ch_parts *ps = ud;
	int64_t now = ch_now_wall_ms();
	each_part(ps, tick_flush, &now);
	int64_t mono = ch_loop_now(loop);
	tick_open_logs(ps, mono);
	int64_t ival = ps->cfg->log_retention_check_interval_ms;
	if (ival <= 0)
		ival = 300000;
	if (mono - ps->last_retention_ms >= ival) {
		ps->last_retention_ms = mono;
		each_part(ps, tick_retention, NULL);
	}
	ch_timer_arm(loop, t, mono + CH_MIN(ival, 1000));
}

/* ---- the manager ------------------------------------------------------------------- */

ch_parts *
ch_parts_new(ch_loop *loop, const struct ch_config *cfg, struct ch_topics *topics)
{
	ch_parts *ps = ch_xcalloc(1, sizeof(*ps));
	ps->loop = loop;
	ps->cfg = cfg;
	ps->topics = topics;
	pthread_mutex_init(&ps->qlock, NULL);
	pthread_cond_init(&ps->qcond, NULL);
	for (int i = 0; i < N_WORKERS; i++) {
		if (pthread_create(&ps->threads[i], NULL, worker_main, ps) != 0) {
			CH_LOGE(SUB, "cannot start a worker thread: %s", strerror(errno));
			break;
		}
		ps->n_threads++;
	}
	if (ps->n_threads == 0)
		abort();
	ps->next_pid = ch_now_wall_ms() * 1000;
	ps->last_retention_ms = ch_loop_now(loop);
	ch_timer_init(&ps->tick, tick_cb, ps);
	ch_timer_arm(loop, &ps->tick, ch_loop_now(loop) + 1000);
	return ps;
}

int
ch_parts_open_all(ch_parts *ps)
{
	int failed = 0;
	size_t n = ch_topics_count(ps->topics);
	for (size_t i = 0; i < n; i++) {
		const ch_topic *t = ch_topics_at(ps->topics, i);
		for (int32_t k = 0; k < t->partitions; k++) {
			int16_t kerr;
			if (!ch_parts_get(ps, t->name, t->name_len, k, &kerr))
				failed++;
		}
	}
	return failed;
}

static void
retire_for_close(ch_part *p, void *ud)
{
	(void)ud;
	part_retire(p, CH_KERR_NOT_LEADER_OR_FOLLOWER, false);
}

void
ch_parts_free(ch_parts *ps)
{
	if (!ps)
		return;
	ps->closing = true;
	ch_timer_cancel(ps->loop, &ps->tick);
	/* Let queued syncs and cleanings finish and deliver their results. */
	while (ps->jobs_inflight > 0)
		ch_loop_run_once(ps->loop, 100);
	for (size_t b = 0; b < N_BUCKETS; b++) {
		while (ps->buckets[b]) {
			ptopic *t = ps->buckets[b];
			ps->buckets[b] = t->next;
			for (int32_t i = 0; i < t->n; i++)
				if (t->parts[i])
					retire_for_close(t->parts[i], NULL);
			free(t->parts);
			free(t->open_log);
			free(t->name);
			free(t);
		}
	}
	/* Parked responses answered by the retirement go out now. */
	ch_loop_run_once(ps->loop, 0);
	pthread_mutex_lock(&ps->qlock);
	ps->q_stop = true;
	pthread_cond_broadcast(&ps->qcond);
	pthread_mutex_unlock(&ps->qlock);
	for (int i = 0; i < ps->n_threads; i++)
		pthread_join(ps->threads[i], NULL);
	pthread_mutex_destroy(&ps->qlock);
	pthread_cond_destroy(&ps->qcond);
	free(ps);
}

void
ch_parts_set_logfs(ch_parts *ps, ch_logfs *fs)
{
	ps->fs = fs;
}

int64_t
ch_parts_next_producer_id(ch_parts *ps)
{
	return ps->next_pid++;
}

ch_parts_stats
ch_parts_get_stats(const ch_parts *ps)
{
	return ps->stats;
}
