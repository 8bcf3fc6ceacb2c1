/*
 * test_log_manager.c: the log manager (ch_log_manager) and its partitions
 * on a real loop, registry and data directory: group commit (one fdatasync for many appends, every
 * durable callback exactly once and in order), the failure paths of
 * ch_log_manager_append_durable (unknown or deleted topic, failed fdatasync),
 * replay, a topic deleted and re-created, the idempotent producer rules and
 * their state rebuilt from the log after a reopen.
 *
 * The logs run on a ch_logfs that forwards to the real file system but can
 * hold every fdatasync at a gate (so a test decides what a sync covers) or
 * fail it with EIO.
 */
#include "common/ch_test.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "broker/ch_log_manager.h"
#include "common/ch_buf.h"
#include "common/ch_common.h"
#include "config/ch_config.h"
#include "meta/tests/meta_util.h"
#include "meta/ch_topics.h"
#include "meta/tests/meta_util.h"
#include "event/ch_loop.h"

/* ---- a gated file layer ------------------------------------------------------- */

typedef struct gate_fs {
	ch_logfs ops;
	ch_logfs *base;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool hold;         /* fdatasync waits while set */
	int waiting;       /* threads waiting in fdatasync */
	atomic_bool fail;  /* fdatasync fails with EIO while set */
	atomic_bool full;  /* pwrite fails with ENOSPC while set (a full disk) */
	atomic_long syncs; /* fdatasync calls */
} gate_fs;

static gate_fs G;

#define BASE (G.base)
static int
g_open(ch_logfs *fs, const char *p, int fl, int m)
{
	(void)fs;
	return BASE->open(BASE, p, fl, m);
}
static int
g_close(ch_logfs *fs, int fd)
{
	(void)fs;
	return BASE->close(BASE, fd);
}
static ssize_t
g_pread(ch_logfs *fs, int fd, void *b, size_t n, int64_t o)
{
	(void)fs;
	return BASE->pread(BASE, fd, b, n, o);
}
static ssize_t
g_pwrite(ch_logfs *fs, int fd, const void *b, size_t n, int64_t o)
{
	(void)fs;
	return atomic_load(&G.full) ? -ENOSPC : BASE->pwrite(BASE, fd, b, n, o);
}
static int
g_ftruncate(ch_logfs *fs, int fd, int64_t l)
{
	(void)fs;
	return BASE->ftruncate(BASE, fd, l);
}
static int64_t
g_fsize(ch_logfs *fs, int fd)
{
	(void)fs;
	return BASE->fsize(BASE, fd);
}
static int
g_unlink(ch_logfs *fs, const char *p)
{
	(void)fs;
	return BASE->unlink(BASE, p);
}
static int
g_rename(ch_logfs *fs, const char *a, const char *b)
{
	(void)fs;
	return BASE->rename(BASE, a, b);
}
static int
g_mkdir(ch_logfs *fs, const char *p, int m)
{
	(void)fs;
	return BASE->mkdir(BASE, p, m);
}
static int
g_sync_dir(ch_logfs *fs, const char *p)
{
	(void)fs;
	return BASE->sync_dir(BASE, p);
}

static int
g_fdatasync(ch_logfs *fs, int fd)
{
	(void)fs;
	pthread_mutex_lock(&G.mu);
	while (G.hold) {
		G.waiting++;
		pthread_cond_broadcast(&G.cv);
		pthread_cond_wait(&G.cv, &G.mu);
		G.waiting--;
	}
	pthread_mutex_unlock(&G.mu);
	atomic_fetch_add(&G.syncs, 1);
	if (atomic_load(&G.fail))
		return -EIO;
	return BASE->fdatasync(BASE, fd);
}

static void
gate_init(void)
{
	static bool done;
	if (!done) {
		pthread_mutex_init(&G.mu, NULL);
		pthread_cond_init(&G.cv, NULL);
		done = true;
	}
	G.base = ch_logfs_posix();
	G.ops = (ch_logfs){g_open,  g_close,  g_pread,  g_pwrite, g_fdatasync, g_ftruncate,
			   g_fsize, g_unlink, g_rename, g_mkdir,  g_sync_dir,  NULL};
	G.hold = false;
	G.waiting = 0;
	atomic_store(&G.fail, false);
	atomic_store(&G.full, false);
	atomic_store(&G.syncs, 0);
}

static void
gate_hold(bool on)
{
	pthread_mutex_lock(&G.mu);
	G.hold = on;
	pthread_cond_broadcast(&G.cv);
	pthread_mutex_unlock(&G.mu);
}

/* Waits until a worker sits in a held fdatasync. */
static bool
gate_wait_blocked(void)
{
	for (int i = 0; i < 5000; i++) {
		pthread_mutex_lock(&G.mu);
		int w = G.waiting;
		pthread_mutex_unlock(&G.mu);
		if (w > 0)
			return true;
		usleep(1000);
	}
	return false;
}

/* ---- fixture ------------------------------------------------------------------ */

static char tmpdir[256];
static int dir_seq;

static void
cleanup(void)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup failed: %s\n", tmpdir);
}

typedef struct fx {
	struct ch_config cfg;
	char dir[400];
	ch_loop *loop;
	struct ch_topics *topics;
	ch_log_manager *lm;
} fx;

static void
fx_open_parts(fx *f)
{
	char err[512];
	if (ch_topics_open(&f->topics, &f->cfg, err, sizeof(err)) != CH_OK) {
		fprintf(stderr, "topics: %s\n", err);
		abort();
	}
	f->lm = ch_log_manager_new(f->loop, &f->cfg, f->topics);
	ch_log_manager_set_logfs(f->lm, &G.ops);
}

static void
fx_close_parts(fx *f)
{
	ch_log_manager_free(f->lm);
	ch_topics_close(f->topics);
	f->lm = NULL;
	f->topics = NULL;
}

static void
fx_init(fx *f)
{
	memset(f, 0, sizeof(*f));
	gate_init();
	if (!tmpdir[0]) {
		const char *base = getenv("TMPDIR");
		snprintf(tmpdir, sizeof(tmpdir), "%s/ch_broker_XXXXXX",
			 base && *base ? base : "/tmp");
		if (!mkdtemp(tmpdir))
			abort();
		atexit(cleanup);
	}
	snprintf(f->dir, sizeof(f->dir), "%s/d%d", tmpdir, ++dir_seq);
	char set[600];
	snprintf(set, sizeof(set), "log.dirs=%s", f->dir);
	const char *sets[] = {set};
	char err[512];
	if (ch_config_load(&f->cfg, NULL, sets, 1, err, sizeof(err)) != CH_OK) {
		fprintf(stderr, "%s\n", err);
		abort();
	}
	f->loop = ch_loop_new();
	fx_open_parts(f);
}

static void
fx_free(fx *f)
{
	gate_hold(false);
	fx_close_parts(f);
	ch_loop_run_once(f->loop, 0);
	ch_loop_free(f->loop);
	ch_config_free(&f->cfg);
}

static void
create(fx *f, const char *name, int32_t parts)
{
	char msg[512];
	CH_CHECK_EQ_INT(mu_create(f->topics, name, strlen(name), parts, NULL, 0, false, NULL, msg,
				  sizeof(msg)),
			0);
}

static void
delete_topic(fx *f, const char *name)
{
	char msg[512];
	CH_CHECK_EQ_INT(mu_delete(f->topics, name, strlen(name), msg, sizeof(msg)), 0);
	ch_log_manager_topic_deleted(f->lm, name, strlen(name));
}

/* A batch of n records "v<i>" from producer pid/epoch at seq (pid -1: none). */
static void
mkbatch(ch_buf *b, int n, int64_t pid, int16_t epoch, int32_t seq, int codec)
{
	ch_buf_reset(b);
	ch_batch_builder bb;
	ch_batch_builder_begin(&bb, b, 0, 0, 1000, pid, epoch, seq);
	for (int i = 0; i < n; i++) {
		char v[32];
		int vn = snprintf(v, sizeof(v), "v%lld",
				  seq < 0 ? (long long)i : (long long)seq + i);
		ch_batch_builder_add(&bb, i, 1000 + i, CH_BYTES_NULL,
				     (ch_bytes){(const uint8_t *)v, vn}, 0, NULL, 0);
	}
	if (ch_batch_builder_end_codec(&bb, -1, codec) != CH_OK)
		abort();
}

/* ---- durable callbacks ----------------------------------------------------------- */

#define MAXCB 512
typedef struct cbrec {
	int n;
	int order[MAXCB]; /* which waiter, in call order */
	int16_t kerr[MAXCB];
	int64_t base[MAXCB], last[MAXCB];
	int calls[MAXCB]; /* per waiter */
} cbrec;

static cbrec R;

typedef struct cbarg {
	int id;
} cbarg;

static cbarg ARGS[MAXCB];

static void
on_durable(void *ud, int16_t kerr, int64_t base, int64_t last)
{
	cbarg *a = ud;
	if (R.n < MAXCB) {
		R.order[R.n] = a->id;
		R.kerr[R.n] = kerr;
		R.base[R.n] = base;
		R.last[R.n] = last;
		R.n++;
	}
	R.calls[a->id]++;
}

static void
cb_reset(void)
{
	memset(&R, 0, sizeof(R));
	for (int i = 0; i < MAXCB; i++)
		ARGS[i].id = i;
}

static bool
run_until(fx *f, int ncb)
{
	for (int i = 0; i < 2000 && R.n < ncb; i++)
		ch_loop_run_once(f->loop, 5);
	return R.n >= ncb;
}

/* ---- tests ------------------------------------------------------------------------- */

/* 100 appends while one fdatasync is held: they all share the next one. */
static void
t_broker_group_commit(void)
{
	fx f;
	fx_init(&f);
	cb_reset();
	create(&f, "gc", 1);
	int16_t kerr;
	ch_part *p = ch_log_manager_get(f.lm, "gc", 2, 0, &kerr);
	CH_CHECK(p != NULL);
	ch_log_manager_stats s0 = ch_log_manager_get_stats(f.lm);
	ch_buf b;
	ch_buf_init(&b);
	gate_hold(true);
	enum {
		N = 100
	};
	ch_plog_append_info info;
	mkbatch(&b, 2, -1, -1, -1, 0);
	CH_CHECK_EQ_INT(ch_part_append(p, b.data, b.len, on_durable, &ARGS[0], &info), 0);
	CH_CHECK(gate_wait_blocked());
	for (int i = 1; i < N; i++) {
		mkbatch(&b, 2, -1, -1, -1, 0);
		CH_CHECK_EQ_INT(ch_part_append(p, b.data, b.len, on_durable, &ARGS[i], &info), 0);
		CH_CHECK_EQ_INT(info.base_offset, 2 * i);
	}
	/* nothing is durable yet, nothing answered */
	ch_loop_run_once(f.loop, 10);
	CH_CHECK_EQ_INT(R.n, 0);
	gate_hold(false);
	CH_CHECK(run_until(&f, N));
	ch_loop_run_once(f.loop, 20);
	CH_CHECK_EQ_INT(R.n, N);
	for (int i = 0; i < N && i < R.n; i++) {
		CH_CHECK_EQ_INT(R.order[i], i);
		CH_CHECK_EQ_INT(R.calls[i], 1);
		CH_CHECK_EQ_INT(R.kerr[i], 0);
		CH_CHECK_EQ_INT(R.base[i], 2 * i);
		CH_CHECK_EQ_INT(R.last[i], 2 * i + 1);
	}
	ch_log_manager_stats s1 = ch_log_manager_get_stats(f.lm);
	/* the held sync covered the first append, one more covered the 99 */
	CH_CHECK_EQ_INT(s1.syncs - s0.syncs, 2);
	CH_CHECK_EQ_INT(s1.durable_waiters - s0.durable_waiters, N);
	CH_CHECK(ch_plog_synced_offset(ch_part_log(p)) >= 2 * N);

	/* the same through ch_log_manager_append_durable, without holding: every
	 * callback once, in order, and fewer syncs than appends */
	cb_reset();
	s0 = ch_log_manager_get_stats(f.lm);
	for (int i = 0; i < N; i++) {
		mkbatch(&b, 1, -1, -1, -1, 0);
		ch_log_manager_append_durable(f.lm, "gc", 0, b.data, b.len, on_durable, &ARGS[i]);
	}
	CH_CHECK_EQ_INT(R.n, 0); /* never before the data is durable */
	CH_CHECK(run_until(&f, N));
	for (int i = 0; i < N && i < R.n; i++) {
		CH_CHECK_EQ_INT(R.order[i], i);
		CH_CHECK_EQ_INT(R.calls[i], 1);
		CH_CHECK_EQ_INT(R.kerr[i], 0);
		CH_CHECK_EQ_INT(R.base[i], 2 * N + i);
	}
	s1 = ch_log_manager_get_stats(f.lm);
	CH_CHECK(s1.syncs - s0.syncs < N);
	ch_buf_free(&b);
	fx_free(&f);
}

static void
t_broker_durable_unknown_topic(void)
{
	fx f;
	fx_init(&f);
	cb_reset();
	ch_buf b;
	ch_buf_init(&b);
	mkbatch(&b, 1, -1, -1, -1, 0);
	ch_log_manager_append_durable(f.lm, "nope", 0, b.data, b.len, on_durable, &ARGS[0]);
	CH_CHECK_EQ_INT(R.n, 0); /* posted, not called inside */
	CH_CHECK(run_until(&f, 1));
	CH_CHECK_EQ_INT(R.kerr[0], CH_KERR_UNKNOWN_TOPIC_OR_PARTITION);
	CH_CHECK_EQ_INT(R.base[0], -1);
	/* a partition past the topic's count */
	create(&f, "one", 1);
	mkbatch(&b, 1, -1, -1, -1, 0);
	ch_log_manager_append_durable(f.lm, "one", 1, b.data, b.len, on_durable, &ARGS[1]);
	CH_CHECK(run_until(&f, 2));
	CH_CHECK_EQ_INT(R.kerr[1], CH_KERR_UNKNOWN_TOPIC_OR_PARTITION);
	/* a corrupt batch: the log's error, posted */
	mkbatch(&b, 1, -1, -1, -1, 0);
	b.data[b.len - 1] ^= 0xff;
	ch_log_manager_append_durable(f.lm, "one", 0, b.data, b.len, on_durable, &ARGS[2]);
	CH_CHECK_EQ_INT(R.n, 2);
	CH_CHECK(run_until(&f, 3));
	CH_CHECK_EQ_INT(R.kerr[2], CH_KERR_CORRUPT_MESSAGE);
	CH_CHECK_EQ_INT(R.calls[0] + R.calls[1] + R.calls[2], 3);
	ch_buf_free(&b);
	fx_free(&f);
}

/* The topic is deleted while a sync runs: what that sync covered is
 * durable (0), what was appended after it fails with
 * UNKNOWN_TOPIC_OR_PARTITION; each callback once; the directory goes. */
static void
t_broker_durable_topic_deleted(void)
{
	fx f;
	fx_init(&f);
	cb_reset();
	create(&f, "del", 1);
	ch_buf b;
	ch_buf_init(&b);
	gate_hold(true);
	mkbatch(&b, 1, -1, -1, -1, 0);
	ch_log_manager_append_durable(f.lm, "del", 0, b.data, b.len, on_durable, &ARGS[0]);
	CH_CHECK(gate_wait_blocked());
	mkbatch(&b, 1, -1, -1, -1, 0);
	ch_log_manager_append_durable(f.lm, "del", 0, b.data, b.len, on_durable, &ARGS[1]);
	delete_topic(&f, "del");
	CH_CHECK_EQ_INT(R.n, 0);
	gate_hold(false);
	CH_CHECK(run_until(&f, 2));
	ch_loop_run_once(f.loop, 20);
	CH_CHECK_EQ_INT(R.n, 2);
	CH_CHECK_EQ_INT(R.order[0], 0);
	CH_CHECK_EQ_INT(R.kerr[0], 0);
	CH_CHECK_EQ_INT(R.order[1], 1);
	CH_CHECK_EQ_INT(R.kerr[1], CH_KERR_UNKNOWN_TOPIC_OR_PARTITION);
	char d[600];
	snprintf(d, sizeof(d), "%s/del-0", f.dir);
	CH_CHECK(access(d, F_OK) != 0);

	ch_buf_free(&b);
	fx_free(&f);
}

/* A failed fdatasync: every waiter gets KAFKA_STORAGE_ERROR, and the log
 * refuses appends until it is reopened. */
static void
t_broker_durable_sync_failure(void)
{
	fx f;
	fx_init(&f);
	cb_reset();
	create(&f, "sf", 1);
	ch_buf b;
	ch_buf_init(&b);
	gate_hold(true);
	mkbatch(&b, 1, -1, -1, -1, 0);
	ch_log_manager_append_durable(f.lm, "sf", 0, b.data, b.len, on_durable, &ARGS[0]);
	CH_CHECK(gate_wait_blocked());
	mkbatch(&b, 1, -1, -1, -1, 0);
	ch_log_manager_append_durable(f.lm, "sf", 0, b.data, b.len, on_durable, &ARGS[1]);
	atomic_store(&G.fail, true);
	gate_hold(false);
	CH_CHECK(run_until(&f, 2));
	CH_CHECK_EQ_INT(R.kerr[0], CH_KERR_KAFKA_STORAGE_ERROR);
	CH_CHECK_EQ_INT(R.kerr[1], CH_KERR_KAFKA_STORAGE_ERROR);
	CH_CHECK_EQ_INT(R.calls[0], 1);
	CH_CHECK_EQ_INT(R.calls[1], 1);
	int16_t kerr;
	ch_part *p = ch_log_manager_get(f.lm, "sf", 2, 0, &kerr);
	CH_CHECK(p != NULL);
	ch_plog_append_info info;
	mkbatch(&b, 1, -1, -1, -1, 0);
	CH_CHECK_EQ_INT(ch_part_append(p, b.data, b.len, NULL, NULL, &info),
			CH_KERR_KAFKA_STORAGE_ERROR);
	mkbatch(&b, 1, -1, -1, -1, 0);
	ch_log_manager_append_durable(f.lm, "sf", 0, b.data, b.len, on_durable, &ARGS[2]);
	CH_CHECK(run_until(&f, 3));
	CH_CHECK_EQ_INT(R.kerr[2], CH_KERR_KAFKA_STORAGE_ERROR);
	atomic_store(&G.fail, false);
	/* reopened (a restart): recovery sorts out the tail, appends work */
	fx_close_parts(&f);
	fx_open_parts(&f);
	p = ch_log_manager_get(f.lm, "sf", 2, 0, &kerr);
	CH_CHECK(p != NULL);
	cb_reset();
	mkbatch(&b, 1, -1, -1, -1, 0);
	int64_t end = ch_plog_end_offset(ch_part_log(p));
	CH_CHECK_EQ_INT(ch_part_append(p, b.data, b.len, on_durable, &ARGS[0], &info), 0);
	CH_CHECK_EQ_INT(info.base_offset, end);
	CH_CHECK(run_until(&f, 1));
	CH_CHECK_EQ_INT(R.kerr[0], 0);
	ch_buf_free(&b);
	fx_free(&f);
}

typedef struct replay_acc {
	int n;
	int64_t offs[64];
	char vals[64][16];
	int stop_after;
} replay_acc;

static int
replay_fn(void *ud, const ch_batch_hdr *h, const ch_record *rec, int64_t offset, int64_t ts)
{
	(void)h;
	(void)ts;
	replay_acc *a = ud;
	if (a->n < 64) {
		a->offs[a->n] = offset;
		snprintf(a->vals[a->n], sizeof(a->vals[0]), "%.*s", (int)rec->value.len,
			 (const char *)rec->value.p);
	}
	a->n++;
	if (a->stop_after && a->n == a->stop_after)
		return 7;
	return 0;
}

static void
t_broker_replay(void)
{
	fx f;
	fx_init(&f);
	create(&f, "rp", 1);
	int16_t kerr;
	ch_part *p = ch_log_manager_get(f.lm, "rp", 2, 0, &kerr);
	ch_buf b;
	ch_buf_init(&b);
	ch_plog_append_info info;
	/* 3 plain, 4 gzip, 2 zstd, 3 lz4: values v0.. per batch */
	int sizes[] = {3, 4, 2, 3};
	int codecs[] = {0, CH_COMPRESSION_GZIP, CH_COMPRESSION_ZSTD, CH_COMPRESSION_LZ4};
	for (int i = 0; i < 4; i++) {
		mkbatch(&b, sizes[i], -1, -1, -1, codecs[i]);
		CH_CHECK_EQ_INT(ch_part_append(p, b.data, b.len, NULL, NULL, &info), 0);
	}
	replay_acc a;
	memset(&a, 0, sizeof(a));
	CH_CHECK_EQ_INT(ch_part_replay(p, 0, replay_fn, &a, &kerr), 0);
	CH_CHECK_EQ_INT(a.n, 12);
	for (int i = 0; i < 12 && i < a.n; i++)
		CH_CHECK_EQ_INT(a.offs[i], i);
	CH_CHECK_EQ_STR(a.vals[3], "v0");
	CH_CHECK_EQ_STR(a.vals[6], "v3");
	CH_CHECK_EQ_STR(a.vals[11], "v2");
	/* from the middle of a compressed batch */
	memset(&a, 0, sizeof(a));
	CH_CHECK_EQ_INT(ch_part_replay(p, 5, replay_fn, &a, &kerr), 0);
	CH_CHECK_EQ_INT(a.n, 7);
	CH_CHECK_EQ_INT(a.offs[0], 5);
	CH_CHECK_EQ_STR(a.vals[0], "v2");
	/* fn stops it: its value comes back */
	memset(&a, 0, sizeof(a));
	a.stop_after = 4;
	CH_CHECK_EQ_INT(ch_part_replay(p, 0, replay_fn, &a, &kerr), 7);
	CH_CHECK_EQ_INT(a.n, 4);
	/* at the end: nothing */
	memset(&a, 0, sizeof(a));
	CH_CHECK_EQ_INT(ch_part_replay(p, 12, replay_fn, &a, &kerr), 0);
	CH_CHECK_EQ_INT(a.n, 0);
	/* after a reopen: the same records */
	fx_close_parts(&f);
	fx_open_parts(&f);
	p = ch_log_manager_get(f.lm, "rp", 2, 0, &kerr);
	memset(&a, 0, sizeof(a));
	CH_CHECK_EQ_INT(ch_part_replay(p, 0, replay_fn, &a, &kerr), 0);
	CH_CHECK_EQ_INT(a.n, 12);
	ch_buf_free(&b);
	fx_free(&f);
}

static void
t_broker_topic_recreated(void)
{
	fx f;
	fx_init(&f);
	create(&f, "re", 2);
	int16_t kerr;
	ch_part *p = ch_log_manager_get(f.lm, "re", 2, 0, &kerr);
	ch_buf b;
	ch_buf_init(&b);
	ch_plog_append_info info;
	mkbatch(&b, 5, -1, -1, -1, 0);
	CH_CHECK_EQ_INT(ch_part_append(p, b.data, b.len, NULL, NULL, &info), 0);
	ch_uuid id1 = ch_part_topic_id(p);
	/* deleted and re-created through the manager */
	delete_topic(&f, "re");
	CH_CHECK(ch_log_manager_get(f.lm, "re", 2, 0, &kerr) == NULL);
	CH_CHECK_EQ_INT(kerr, CH_KERR_UNKNOWN_TOPIC_OR_PARTITION);
	create(&f, "re", 1);
	p = ch_log_manager_get(f.lm, "re", 2, 0, &kerr);
	CH_CHECK(p != NULL);
	if (p) {
		ch_uuid id2 = ch_part_topic_id(p);
		CH_CHECK(!ch_uuid_eq(&id1, &id2));
		CH_CHECK_EQ_INT(ch_plog_end_offset(ch_part_log(p)), 0);
	}
	CH_CHECK(ch_log_manager_get(f.lm, "re", 2, 1, &kerr) == NULL);
	mkbatch(&b, 3, -1, -1, -1, 0);
	CH_CHECK_EQ_INT(ch_part_append(p, b.data, b.len, NULL, NULL, &info), 0);
	CH_CHECK_EQ_INT(info.base_offset, 0);
	/* deleted in the registry only, then re-created: the lookup notices
	 * the new id and drops the old log */
	char msg[512];
	CH_CHECK_EQ_INT(mu_delete(f.topics, "re", 2, msg, sizeof(msg)), 0);
	create(&f, "re", 1);
	p = ch_log_manager_get(f.lm, "re", 2, 0, &kerr);
	CH_CHECK(p != NULL);
	if (p)
		CH_CHECK_EQ_INT(ch_plog_end_offset(ch_part_log(p)), 0);
	ch_buf_free(&b);
	fx_free(&f);
}

static int16_t
append_pid(ch_part *p, ch_buf *b, int n, int64_t pid, int16_t epoch, int32_t seq,
	   ch_plog_append_info *info)
{
	mkbatch(b, n, pid, epoch, seq, 0);
	return ch_part_append(p, b->data, b->len, NULL, NULL, info);
}

static void
t_broker_producer_rules(void)
{
	fx f;
	fx_init(&f);
	cb_reset();
	create(&f, "idem", 1);
	int16_t kerr;
	ch_part *p = ch_log_manager_get(f.lm, "idem", 4, 0, &kerr);
	ch_buf b;
	ch_buf_init(&b);
	ch_plog_append_info info;
	const int64_t pid = 4242;
	/* unknown producer: any first sequence */
	CH_CHECK_EQ_INT(append_pid(p, &b, 3, pid, 0, 10, &info), 0);
	CH_CHECK_EQ_INT(info.base_offset, 0);
	CH_CHECK_EQ_INT(append_pid(p, &b, 2, pid, 0, 13, &info), 0);
	CH_CHECK_EQ_INT(info.base_offset, 3);
	/* duplicate of the last and of an earlier batch: original offsets,
	 * nothing appended */
	CH_CHECK_EQ_INT(append_pid(p, &b, 2, pid, 0, 13, &info), 0);
	CH_CHECK_EQ_INT(info.base_offset, 3);
	CH_CHECK_EQ_INT(info.last_offset, 4);
	CH_CHECK_EQ_INT(append_pid(p, &b, 3, pid, 0, 10, &info), 0);
	CH_CHECK_EQ_INT(info.base_offset, 0);
	CH_CHECK_EQ_INT(ch_plog_end_offset(ch_part_log(p)), 5);
	/* a duplicate with a durable callback: called once, original offsets */
	mkbatch(&b, 2, pid, 0, 13, 0);
	CH_CHECK_EQ_INT(ch_part_append(p, b.data, b.len, on_durable, &ARGS[0], &info), 0);
	CH_CHECK(run_until(&f, 1));
	CH_CHECK_EQ_INT(R.kerr[0], 0);
	CH_CHECK_EQ_INT(R.base[0], 3);
	CH_CHECK_EQ_INT(R.calls[0], 1);
	/* a gap, and an overlap that is no cached batch */
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, pid, 0, 16, &info),
			CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, pid, 0, 14, &info),
			CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
	CH_CHECK_EQ_INT(ch_plog_end_offset(ch_part_log(p)), 5);
	/* the next one */
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, pid, 0, 15, &info), 0);
	CH_CHECK_EQ_INT(info.base_offset, 5);
	/* only the last five batches are remembered */
	for (int i = 0; i < 5; i++)
		CH_CHECK_EQ_INT(append_pid(p, &b, 1, pid, 0, 16 + i, &info), 0);
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, pid, 0, 15, &info),
			CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, pid, 0, 16, &info), 0);
	CH_CHECK_EQ_INT(info.base_offset, 6);
	/* a new epoch must start at 0; then the old one is fenced */
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, pid, 1, 5, &info),
			CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, pid, 1, 0, &info), 0);
	CH_CHECK_EQ_INT(info.base_offset, 11);
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, pid, 0, 21, &info), CH_KERR_INVALID_PRODUCER_EPOCH);
	/* sequences wrap at INT32_MAX to 0 */
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, pid + 1, 0, INT32_MAX - 1, &info), 0);
	CH_CHECK_EQ_INT(append_pid(p, &b, 2, pid + 1, 0, INT32_MAX, &info), 0);
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, pid + 1, 0, 1, &info), 0);
	/* producers are independent; a non-idempotent batch is not checked */
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, pid + 2, 3, 77, &info), 0);
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, -1, -1, -1, &info), 0);
	int64_t end = ch_plog_end_offset(ch_part_log(p));

	/* reopened: the state comes back from the log's tail */
	fx_close_parts(&f);
	fx_open_parts(&f);
	p = ch_log_manager_get(f.lm, "idem", 4, 0, &kerr);
	CH_CHECK(p != NULL);
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, pid, 1, 0, &info), 0); /* duplicate */
	CH_CHECK_EQ_INT(info.base_offset, 11);
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, pid, 0, 21, &info), CH_KERR_INVALID_PRODUCER_EPOCH);
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, pid, 1, 2, &info),
			CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
	CH_CHECK_EQ_INT(append_pid(p, &b, 2, pid + 1, 0, INT32_MAX, &info), 0); /* duplicate */
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, pid + 2, 3, 77, &info), 0);        /* duplicate */
	CH_CHECK_EQ_INT(ch_plog_end_offset(ch_part_log(p)), end);
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, pid, 1, 1, &info), 0);
	CH_CHECK_EQ_INT(info.base_offset, end);
	ch_buf_free(&b);
	fx_free(&f);
}

/* The rebuild reads only the log's tail: a producer whose last batch is
 * more than 8 MiB back is unknown again after a reopen, one in the tail is
 * known, and segments rolled in between do not matter. */
static void
t_broker_producer_rebuild_bounded(void)
{
	fx f;
	fx_init(&f);
	char msg[512];
	ch_topic_kv kv = {"segment.bytes", "1048576"};
	CH_CHECK_EQ_INT(mu_create(f.topics, "tail", 4, 1, &kv, 1, false, NULL, msg, sizeof(msg)),
			0);
	int16_t kerr;
	ch_part *p = ch_log_manager_get(f.lm, "tail", 4, 0, &kerr);
	ch_buf b;
	ch_buf_init(&b);
	ch_plog_append_info info;
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, 1, 0, 0, &info), 0); /* old producer */
	/* ~10 MiB of plain batches of 64 KiB */
	ch_buf big;
	ch_buf_init(&big);
	char val[65536];
	memset(val, 'x', sizeof(val));
	for (int i = 0; i < 160; i++) {
		ch_buf_reset(&big);
		ch_batch_builder bb;
		ch_batch_builder_begin(&bb, &big, 0, 0, 1000, -1, -1, -1);
		ch_batch_builder_add(&bb, 0, 1000, CH_BYTES_NULL,
				     (ch_bytes){(const uint8_t *)val, (int32_t)sizeof(val)}, 0,
				     NULL, 0);
		CH_CHECK(ch_batch_builder_end(&bb, -1) == CH_OK);
		CH_CHECK_EQ_INT(ch_part_append(p, big.data, big.len, NULL, NULL, &info), 0);
	}
	CH_CHECK(ch_plog_segment_count(ch_part_log(p)) > 8);
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, 2, 0, 0, &info), 0); /* recent producer */
	fx_close_parts(&f);
	fx_open_parts(&f);
	p = ch_log_manager_get(f.lm, "tail", 4, 0, &kerr);
	CH_CHECK(p != NULL);
	int64_t end = ch_plog_end_offset(ch_part_log(p));
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, 2, 0, 0, &info), 0); /* duplicate */
	CH_CHECK_EQ_INT(ch_plog_end_offset(ch_part_log(p)), end);
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, 2, 0, 5, &info), CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
	/* the old one is forgotten: accepted at any sequence */
	CH_CHECK_EQ_INT(append_pid(p, &b, 1, 1, 0, 5, &info), 0);
	CH_CHECK_EQ_INT(info.base_offset, end);
	ch_buf_free(&big);
	ch_buf_free(&b);
	fx_free(&f);
}

/* producer.id.expiration.ms, in virtual time (the expiry's clock is an
 * argument): a producer whose last batch (max timestamp 1000 + n - 1, see
 * mkbatch) is that old is forgotten by every partition, also after a
 * reopen rebuilt it from the log. */
static void
t_broker_producer_expiry(void)
{
	fx f;
	fx_init(&f);
	char err[512];
	CH_CHECK(ch_config_set(&f.cfg, "producer.id.expiration.ms", "60000", NULL, err,
			       sizeof(err)) == CH_OK);
	CH_CHECK(ch_config_finish(&f.cfg, err, sizeof(err)) == CH_OK);
	create(&f, "exp", 2);
	int16_t kerr;
	ch_part *p0 = ch_log_manager_get(f.lm, "exp", 3, 0, &kerr);
	ch_part *p1 = ch_log_manager_get(f.lm, "exp", 3, 1, &kerr);
	CH_CHECK(p0 && p1);
	ch_buf b;
	ch_buf_init(&b);
	ch_plog_append_info info;
	CH_CHECK_EQ_INT(append_pid(p0, &b, 3, 11, 0, 0, &info), 0); /* max ts 1002 */
	CH_CHECK_EQ_INT(append_pid(p1, &b, 1, 12, 0, 0, &info), 0); /* max ts 1000 */
	CH_CHECK_EQ_INT(ch_log_manager_expire_producers(f.lm, 1000 + 60000 - 1), 0);
	CH_CHECK_EQ_INT(append_pid(p0, &b, 1, 11, 0, 7, &info),
			CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
	CH_CHECK_EQ_INT(ch_log_manager_expire_producers(f.lm, 1000 + 60000), 1); /* 12 */
	CH_CHECK_EQ_INT(append_pid(p1, &b, 1, 12, 0, 7, &info), 0); /* forgotten: any sequence */
	CH_CHECK_EQ_INT(append_pid(p0, &b, 1, 11, 0, 7, &info),
			CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
	CH_CHECK_EQ_INT(ch_log_manager_get_stats(f.lm).producers_expired, 1);
	/* reopened: the rebuilt state carries the batches' timestamps */
	fx_close_parts(&f);
	fx_open_parts(&f);
	p0 = ch_log_manager_get(f.lm, "exp", 3, 0, &kerr);
	p1 = ch_log_manager_get(f.lm, "exp", 3, 1, &kerr);
	CH_CHECK(p0 && p1);
	CH_CHECK_EQ_INT(append_pid(p0, &b, 1, 11, 0, 7, &info),
			CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
	CH_CHECK_EQ_INT(ch_log_manager_expire_producers(f.lm, 1000 + 60000 - 1), 0);
	CH_CHECK_EQ_INT(ch_log_manager_expire_producers(f.lm, 1000 + 60000), 1); /* 12 again */
	CH_CHECK_EQ_INT(append_pid(p0, &b, 1, 11, 0, 7, &info),
			CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
	CH_CHECK_EQ_INT(ch_log_manager_expire_producers(f.lm, 1002 + 60000), 1); /* 11 */
	CH_CHECK_EQ_INT(append_pid(p0, &b, 1, 11, 0, 7, &info), 0);
	ch_buf_free(&b);
	fx_free(&f);
}

/* ---- errors that repeat per request are logged once, then summarised -------- */

typedef struct refuse_run {
	fx *f;
	int n;
	int refused;
} refuse_run;

/* n appends on a full disk, then one with space again. */
static void
refuse_appends(void *arg)
{
	refuse_run *r = arg;
	int16_t kerr;
	ch_part *p = ch_log_manager_get(r->f->lm, "full", 4, 0, &kerr);
	if (!p)
		return;
	ch_buf b;
	ch_buf_init(&b);
	mkbatch(&b, 1, -1, -1, -1, 0);
	ch_plog_append_info info;
	atomic_store(&G.full, true);
	for (int i = 0; i < r->n; i++)
		r->refused += ch_part_append(p, b.data, b.len, NULL, NULL, &info) ==
			      CH_KERR_KAFKA_STORAGE_ERROR;
	atomic_store(&G.full, false);
	CH_CHECK_EQ_INT(ch_part_append(p, b.data, b.len, NULL, NULL, &info), 0);
	ch_buf_free(&b);
}

/* n lookups of a partition whose directory is a file, then one after the
 * file is gone. */
static void
refuse_opens(void *arg)
{
	refuse_run *r = arg;
	char path[600];
	snprintf(path, sizeof(path), "%s/broken-0", r->f->dir);
	FILE *fp = fopen(path, "w");
	if (!fp)
		return;
	fclose(fp);
	int16_t kerr;
	for (int i = 0; i < r->n; i++)
		r->refused += ch_log_manager_get(r->f->lm, "broken", 6, 0, &kerr) == NULL &&
			      kerr == CH_KERR_KAFKA_STORAGE_ERROR;
	unlink(path);
	CH_CHECK(ch_log_manager_get(r->f->lm, "broken", 6, 0, &kerr) != NULL);
}

static void
t_broker_repeated_errors_logged_once(void)
{
	fx f;
	fx_init(&f);
	create(&f, "full", 1);
	create(&f, "broken", 1);
	ch_log_level saved = ch_log_threshold;
	ch_log_threshold = CH_LOG_INFO;
	refuse_run a = {&f, 300, 0};
	char *out = ch_test_capture_stderr(refuse_appends, &a);
	CH_CHECK_EQ_INT(a.refused, 300);
	CH_CHECK_LOGGED_STREAK(out, "failed: No space left on device",
			       "full-0: working again after 300 failures in ");
	free(out);

	refuse_run o = {&f, 100, 0};
	out = ch_test_capture_stderr(refuse_opens, &o);
	CH_CHECK_EQ_INT(o.refused, 100);
	CH_CHECK_LOGGED_STREAK(out, "cannot open the log of broken-0: Not a directory",
			       "opening the log of broken-0: working again after 100 failures in ");
	free(out);
	ch_log_threshold = saved;
	fx_free(&f);
}

CH_TEST_MAIN(CH_TEST(t_broker_group_commit), CH_TEST(t_broker_durable_unknown_topic),
	     CH_TEST(t_broker_durable_topic_deleted), CH_TEST(t_broker_durable_sync_failure),
	     CH_TEST(t_broker_replay), CH_TEST(t_broker_topic_recreated),
	     CH_TEST(t_broker_producer_rules), CH_TEST(t_broker_producer_rebuild_bounded),
	     CH_TEST(t_broker_producer_expiry), CH_TEST(t_broker_repeated_errors_logged_once))
