/*
 * test_registry_crash.c: the topic registry under faults and power cuts, as
 * src/log/tests/test_crash.c does for the partition log.
 *
 *  - every mutating file operation of a change (create, delete, add
 *    partitions, alter configs) fails in turn, with ENOSPC and EIO, once or
 *    from then on: the change reports KAFKA_STORAGE_ERROR, the registry in
 *    memory is unchanged and keeps working, and what a restart reads is the
 *    old or the new state;
 *  - a power cut after every operation of a change: a file layer remembers
 *    what was not yet made durable (unsynced data, names created, renamed or
 *    removed since the last directory sync) and the "crash" keeps, drops or
 *    garbles it; the reopened registry is the old or the new state, the new
 *    one whenever the change had reported success;
 *  - kill -9 of a process making changes: every change it reported is there.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/ch_buf.h"
#include "common/ch_log.h"
#include "common/ch_test.h"
#include "log/ch_logfs.h"
#include "meta/ch_topics.h"
#include "meta/tests/meta_util.h"

/* ---- a file layer that forgets what a power cut may forget --------------- */

enum {
	MAXF = 64,
	MAXOPS = 64,
	SAVED_MAX = 1 << 16
};

typedef struct cfile {
	char path[512];
	int fd;         /* -1 once closed */
	int64_t lo, hi; /* unsynced byte range, lo < 0: none */
} cfile;

typedef struct nameop {
	int kind; /* 'c' created, 'r' renamed, 'u' unlinked */
	char a[512], b[512];
	char *saved; /* 'r': what b held before (NULL: absent); 'u': a's content */
	size_t saved_len;
} nameop;

typedef struct crashfs {
	ch_logfs ops;
	ch_logfs *base;
	cfile f[MAXF];
	int nf;
	nameop op[MAXOPS];
	int nop;
	uint32_t seed;
} crashfs;

static uint32_t
rnd(crashfs *c)
{
	return ch_test_rand(&c->seed);
}

static char *
slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	char *buf = malloc(SAVED_MAX);
	ssize_t n = read(fd, buf, SAVED_MAX);
	close(fd);
	*len = n > 0 ? (size_t)n : 0;
	return buf;
}

static void
spit(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len)
		abort();
	close(fd);
}

static cfile *
by_fd(crashfs *c, int fd)
{
	for (int i = 0; i < c->nf; i++)
		if (c->f[i].fd == fd)
			return &c->f[i];
	return NULL;
}

static cfile *
by_path(crashfs *c, const char *path)
{
	for (int i = 0; i < c->nf; i++)
		if (strcmp(c->f[i].path, path) == 0)
			return &c->f[i];
	return NULL;
}

static nameop *
push_op(crashfs *c, int kind, const char *a, const char *b)
{
	if (c->nop == MAXOPS)
		abort();
	nameop *o = &c->op[c->nop++];
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	snprintf(o->a, sizeof(o->a), "%s", a);
	snprintf(o->b, sizeof(o->b), "%s", b ? b : "");
	return o;
}

static int
cf_open(ch_logfs *fs, const char *path, int flags, int mode)
{
	crashfs *c = (crashfs *)fs;
	bool existed = access(path, F_OK) == 0;
	int fd = c->base->open(c->base, path, flags, mode);
	if (fd < 0 || !(flags & (O_WRONLY | O_RDWR)))
		return fd;
	cfile *f = by_path(c, path);
	if (!f) {
		if (c->nf == MAXF)
			abort();
		f = &c->f[c->nf++];
		snprintf(f->path, sizeof(f->path), "%s", path);
		f->lo = -1;
	}
	f->fd = fd;
	if (flags & O_TRUNC) { /* the old bytes are gone once this is durable */
		f->lo = 0;
		f->hi = 0;
	}
	if (!existed)
		push_op(c, 'c', path, NULL);
	return fd;
}

static int
cf_close(ch_logfs *fs, int fd)
{
	crashfs *c = (crashfs *)fs;
	cfile *f = by_fd(c, fd);
	if (f)
		f->fd = -1;
	return c->base->close(c->base, fd);
}

static ssize_t
cf_pwrite(ch_logfs *fs, int fd, const void *b, size_t n, int64_t off)
{
	crashfs *c = (crashfs *)fs;
	ssize_t r = c->base->pwrite(c->base, fd, b, n, off);
	cfile *f = by_fd(c, fd);
	if (r > 0 && f) {
		if (f->lo < 0 || off < f->lo)
			f->lo = off;
		if (off + r > f->hi)
			f->hi = off + r;
	}
	return r;
}

static int
cf_fdatasync(ch_logfs *fs, int fd)
{
	crashfs *c = (crashfs *)fs;
	int r = c->base->fdatasync(c->base, fd);
	cfile *f = by_fd(c, fd);
	if (r == 0 && f)
		f->lo = -1;
	return r;
}

static int
cf_unlink(ch_logfs *fs, const char *p)
{
	crashfs *c = (crashfs *)fs;
	size_t n = 0;
	char *saved = slurp(p, &n);
	int r = c->base->unlink(c->base, p);
	if (r == 0) {
		nameop *o = push_op(c, 'u', p, NULL);
		o->saved = saved;
		o->saved_len = n;
		cfile *f = by_path(c, p);
		if (f)
			f->path[0] = '\0';
	} else {
		free(saved);
	}
	return r;
}

static int
cf_rename(ch_logfs *fs, const char *a, const char *b)
{
	crashfs *c = (crashfs *)fs;
	size_t n = 0;
	char *saved = slurp(b, &n);
	int r = c->base->rename(c->base, a, b);
	if (r == 0) {
		nameop *o = push_op(c, 'r', a, b);
		o->saved = saved;
		o->saved_len = n;
		cfile *old = by_path(c, b), *f = by_path(c, a);
		if (old)
			old->path[0] = '\0';
		if (f)
			snprintf(f->path, sizeof(f->path), "%s", b);
	} else {
		free(saved);
	}
	return r;
}

/* Every name change so far is durable (the registry uses one directory). */
static int
cf_sync_dir(ch_logfs *fs, const char *p)
{
	crashfs *c = (crashfs *)fs;
	int r = c->base->sync_dir(c->base, p);
	if (r == 0) {
		for (int i = 0; i < c->nop; i++)
			free(c->op[i].saved);
		c->nop = 0;
	}
	return r;
}

/* Over the real file system; reads, sizes and mkdir go straight to it (the
 * registry never truncates). */
static void
crashfs_init(crashfs *c, uint32_t seed)
{
	memset(c, 0, sizeof(*c));
	c->base = ch_logfs_posix();
	c->ops = *c->base;
	c->ops.open = cf_open;
	c->ops.close = cf_close;
	c->ops.pwrite = cf_pwrite;
	c->ops.fdatasync = cf_fdatasync;
	c->ops.unlink = cf_unlink;
	c->ops.rename = cf_rename;
	c->ops.sync_dir = cf_sync_dir;
	c->seed = seed;
}

/* The power goes out. Unsynced bytes of each file all made it, none did, or
 * some are garbage; of the unsynced name changes, a prefix (in order, as a
 * journal commits them) survives and the rest are undone. */
static void
crashfs_crash(crashfs *c)
{
	for (int i = 0; i < c->nf; i++) {
		cfile *f = &c->f[i];
		if (!f->path[0] || f->lo < 0 || access(f->path, F_OK) != 0)
			continue;
		switch (rnd(c) % 3) {
		case 0:
			break;
		case 1:
			if (truncate(f->path, f->lo) != 0)
				abort();
			break;
		case 2:
			if (f->hi > f->lo) {
				int fd = open(f->path, O_RDWR);
				int64_t at = f->lo + (int64_t)(rnd(c) % (uint32_t)(f->hi - f->lo));
				uint8_t y = 0;
				if (fd < 0 || pread(fd, &y, 1, at) != 1)
					abort();
				y ^= (uint8_t)(rnd(c) | 1);
				if (pwrite(fd, &y, 1, at) != 1)
					abort();
				close(fd);
			}
			break;
		}
	}
	int keep = c->nop ? (int)(rnd(c) % (uint32_t)(c->nop + 1)) : 0;
	for (int i = c->nop - 1; i >= keep; i--) {
		nameop *o = &c->op[i];
		if (o->kind == 'c') {
			unlink(o->a);
		} else if (o->kind == 'r') {
			if (rename(o->b, o->a) != 0)
				abort();
			if (o->saved)
				spit(o->b, o->saved, o->saved_len);
		} else if (o->saved) {
			spit(o->a, o->saved, o->saved_len);
		}
	}
	for (int i = 0; i < c->nop; i++)
		free(c->op[i].saved);
	c->nop = 0;
}

/* ---- states and changes ------------------------------------------------------ */

/* The registry as text: name, partitions, configs; ids of topics that
 * existed before the change are checked separately. */
static void
snapshot(const struct ch_topics *reg, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = '\0';
	for (size_t i = 0; i < ch_topics_count(reg); i++) {
		const ch_topic *t = ch_topics_at(reg, i);
		o += (size_t)snprintf(out + o, cap - o, "%s/%d", t->name, t->partitions);
		for (size_t k = 0; k < t->n_configs; k++)
			o += (size_t)snprintf(out + o, cap - o, " %s=%s", t->configs[k].key,
					      t->configs[k].value);
		o += (size_t)snprintf(out + o, cap - o, ";");
	}
}

enum {
	C_CREATE,
	C_DELETE,
	C_PARTITIONS,
	C_CONFIGS,
	C_COUNT
};
static const char *const change_name[C_COUNT] = {"create", "delete", "partitions", "configs"};

static int16_t
do_change(struct ch_topics *reg, int which, char *msg, size_t msglen)
{
	ch_topic_kv compact[] = {{(char *)"cleanup.policy", (char *)"compact"}};
	switch (which) {
	case C_CREATE:
		return mu_create(reg, "c", 1, 3, NULL, 0, false, NULL, msg, msglen);
	case C_DELETE:
		return mu_delete(reg, "a", 1, msg, msglen);
	case C_PARTITIONS:
		return mu_add_partitions(reg, "b", 1, 5, false, msg, msglen);
	default:
		return mu_alter_configs(reg, "b", 1, compact, 1, false, msg, msglen);
	}
}

static const char *const new_state[C_COUNT] = {
	"a/1;b/2 retention.ms=1000;c/3;",
	"b/2 retention.ms=1000;",
	"a/1;b/5 retention.ms=1000;",
	"a/1;b/2 cleanup.policy=compact;",
};
static const char old_state[] = "a/1;b/2 retention.ms=1000;";

/* Copies the regular files of directory from into to (created). */
static void
copy_dir(const char *from, const char *to)
{
	char parent[512];
	snprintf(parent, sizeof(parent), "%s", to);
	*strrchr(parent, '/') = '\0';
	if (mkdir(parent, 0755) != 0 || mkdir(to, 0755) != 0)
		abort();
	DIR *d = opendir(from);
	if (!d)
		abort();
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char src[700], dst[700];
		snprintf(src, sizeof(src), "%s/%s", from, e->d_name);
		snprintf(dst, sizeof(dst), "%s/%s", to, e->d_name);
		struct stat st;
		if (stat(src, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		size_t n = 0;
		char *data = slurp(src, &n);
		spit(dst, data ? data : "", n);
		free(data);
	}
	closedir(d);
}

/* A fresh data directory holding topics a and b, written normally. */
static void
make_base(struct ch_config *cfg, ch_uuid *b_id)
{
	mu_new_cfg(cfg, NULL, 0);
	struct ch_topics *reg;
	char err[512], msg[512];
	if (ch_topics_open(&reg, cfg, err, sizeof(err)) != CH_OK)
		abort();
	ch_topic_kv kv[] = {{(char *)"retention.ms", (char *)"1000"}};
	const ch_topic *b = NULL;
	if (mu_create(reg, "a", 1, 1, NULL, 0, false, NULL, msg, sizeof(msg)) != 0 ||
	    mu_create(reg, "b", 1, 2, kv, 1, false, &b, msg, sizeof(msg)) != 0)
		abort();
	*b_id = b->id;
	ch_topics_close(reg);
}

/* Opens with the real file system and checks the state is one of two. With
 * copy, opens a copy of the directory (the original is still open, and
 * locked, in this process). */
static void
check_reopen(struct ch_config *cfg, const ch_uuid *b_id, const char *want1, const char *want2,
	     const char *what, bool copy)
{
	struct ch_topics *reg;
	char err[512], snap[1024];
	struct ch_config copy_cfg;
	if (copy) {
		mu_new_cfg(&copy_cfg, NULL, 0);
		copy_dir(cfg->log_dir, copy_cfg.log_dir);
		cfg = &copy_cfg;
	}
	int rc = ch_topics_open(&reg, cfg, err, sizeof(err));
	CH_CHECK_EQ_INT(rc, CH_OK);
	if (rc != CH_OK) {
		fprintf(stderr, "  %s: reopen failed: %s\n", what, err);
		if (copy)
			ch_config_free(&copy_cfg);
		return;
	}
	snapshot(reg, snap, sizeof(snap));
	bool ok = strcmp(snap, want1) == 0 || (want2 && strcmp(snap, want2) == 0);
	CH_CHECK(ok);
	if (!ok)
		fprintf(stderr, "  %s: state '%s', wanted '%s'%s%s\n", what, snap, want1,
			want2 ? " or " : "", want2 ? want2 : "");
	const ch_topic *b = ch_topics_find(reg, "b", 1);
	CH_CHECK(b && ch_uuid_eq(&b->id, b_id));
	ch_topics_close(reg);
	if (copy)
		ch_config_free(&copy_cfg);
}

/* ---- tests ---------------------------------------------------------------------- */

/* The base state, reopened through fault injection over crash simulation. */
typedef struct fixture {
	struct ch_config cfg;
	ch_uuid b_id;
	crashfs crash;
	ch_logfs_fault fault;
	struct ch_topics *reg;
} fixture;

static void
fx_open(fixture *x, uint32_t seed)
{
	char err[512];
	make_base(&x->cfg, &x->b_id);
	crashfs_init(&x->crash, seed);
	ch_logfs_fault_init(&x->fault, &x->crash.ops);
	if (ch_topics_open_fs(&x->reg, &x->cfg, &x->fault.ops, err, sizeof(err)) != CH_OK)
		abort();
}

static void
fx_close(fixture *x)
{
	ch_topics_close(x->reg);
	ch_config_free(&x->cfg);
}

static long
registry_size(const char *dir)
{
	char path[600];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, CH_TOPICS_FILE);
	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Mutating operations one change makes (the fault layer counts them), and
 * whether it makes the registry file bigger. */
static long
change_steps(int which, bool *grows)
{
	static fixture x;
	char msg[512];
	fx_open(&x, 1);
	long before = atomic_load(&x.fault.steps), size = registry_size(x.cfg.log_dir);
	CH_CHECK_EQ_INT(do_change(x.reg, which, msg, sizeof(msg)), 0);
	long n = atomic_load(&x.fault.steps) - before;
	if (grows)
		*grows = registry_size(x.cfg.log_dir) > size;
	fx_close(&x);
	return n;
}

static void
t_fault_every_step(void)
{
	ch_log_threshold = CH_LOG_ERROR;
	static const int errs[] = {ENOSPC, EIO};
	for (int which = 0; which < C_COUNT; which++) {
		bool grows;
		long steps = change_steps(which, &grows);
		CH_CHECK(steps >= 5); /* create, write, sync, rename, sync dir */
		for (long k = 1; k <= steps; k++)
			for (int e = 0; e < 2; e++)
				for (int sticky = 0; sticky < 2; sticky++) {
					char what[128], msg[512], snap[1024];
					snprintf(what, sizeof(what), "%s, step %ld of %ld, %s%s",
						 change_name[which], k, steps, strerror(errs[e]),
						 sticky ? ", sticky" : "");
					static fixture x;
					fx_open(&x, 1);
					ch_logfs_fault_arm(&x.fault, k, errs[e], sticky);
					int16_t ec = do_change(x.reg, which, msg, sizeof(msg));
					if (errs[e] == ENOSPC && !sticky && !grows) {
						/* A full disk once: a change that does not grow
						 * the registry is written into the reserve. */
						CH_CHECK_EQ_INT(ec, 0);
						snapshot(x.reg, snap, sizeof(snap));
						CH_CHECK_EQ_STR(snap, new_state[which]);
						ch_topics_close(x.reg);
						check_reopen(&x.cfg, &x.b_id, new_state[which],
							     NULL, what, false);
						ch_config_free(&x.cfg);
						continue;
					}
					CH_CHECK_EQ_INT(ec, 56);
					CH_CHECK(atomic_load(&x.fault.failures) >= 1);
					snapshot(x.reg, snap, sizeof(snap));
					CH_CHECK_EQ_STR(snap, old_state);
					if (ec != 56 || strcmp(snap, old_state) != 0)
						fprintf(stderr, "  %s\n", what);
					/* What a restart now reads: the old or the new state. */
					check_reopen(&x.cfg, &x.b_id, old_state, new_state[which],
						     what, true);
					/* The storage is back: the same registry goes on. */
					ch_logfs_fault_arm(&x.fault, 0, 0, false);
					CH_CHECK_EQ_INT(do_change(x.reg, which, msg, sizeof(msg)),
							0);
					snapshot(x.reg, snap, sizeof(snap));
					CH_CHECK_EQ_STR(snap, new_state[which]);
					ch_topics_close(x.reg);
					check_reopen(&x.cfg, &x.b_id, new_state[which], NULL, what,
						     false);
					ch_config_free(&x.cfg);
				}
	}
	ch_log_threshold = CH_LOG_INFO;
}

static void
t_power_cut_every_point(void)
{
	ch_log_threshold = CH_LOG_ERROR;
	const char *env = getenv("CRASH_SEEDS"); /* more for a soak run */
	uint32_t seeds = env ? (uint32_t)atol(env) : 12;
	for (int which = 0; which < C_COUNT; which++) {
		long steps = change_steps(which, NULL);
		/* k = steps + 1: the change completes, then the power goes. */
		for (long k = 1; k <= steps + 1; k++)
			for (uint32_t seed = 1; seed <= seeds; seed++) {
				char what[128], msg[512];
				snprintf(what, sizeof(what),
					 "%s, power cut at step %ld of %ld, seed %u",
					 change_name[which], k, steps, seed);
				static fixture x;
				fx_open(&x, seed * 7919u + (uint32_t)k);
				/* From step k on nothing reaches the disk: the machine is
				 * going down. */
				ch_logfs_fault_arm(&x.fault, k, EIO, true);
				int16_t ec = do_change(x.reg, which, msg, sizeof(msg));
				CH_CHECK(k <= steps ? ec == 56 : ec == 0);
				crashfs_crash(&x.crash);
				ch_topics_close(x.reg);
				if (ec == 0)
					check_reopen(&x.cfg, &x.b_id, new_state[which], NULL, what,
						     false);
				else
					check_reopen(&x.cfg, &x.b_id, old_state, new_state[which],
						     what, false);
				ch_config_free(&x.cfg);
			}
	}
	ch_log_threshold = CH_LOG_INFO;
}

/* ---- a small disk ------------------------------------------------------------- */

/* The real file system with a quota on the data directory's allocated
 * blocks: writes and allocations that would go over it fail with ENOSPC,
 * as on a full disk (writes the quota allows are kept whole). */
typedef struct quotafs {
	ch_logfs ops;
	ch_logfs *base;
	char dir[512];
	int64_t quota;
} quotafs;

static int64_t
allocated(const struct stat *st)
{
	return (int64_t)st->st_blocks * 512;
}

static int64_t
dir_usage(const char *dir)
{
	int64_t sum = 0;
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char p[800];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
			sum += allocated(&st);
	}
	closedir(d);
	return sum;
}

/* Would growing fd to end bytes (4 KiB blocks) go over the quota? */
static bool
over_quota(quotafs *q, int fd, int64_t end)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return true;
	int64_t want = (end + 4095) / 4096 * 4096 - allocated(&st);
	return want > 0 && dir_usage(q->dir) + want > q->quota;
}

static ssize_t
qf_pwrite(ch_logfs *fs, int fd, const void *b, size_t n, int64_t off)
{
	quotafs *q = (quotafs *)fs;
	if (over_quota(q, fd, off + (int64_t)n))
		return -ENOSPC;
	return q->base->pwrite(q->base, fd, b, n, off);
}

static int
qf_fallocate(ch_logfs *fs, int fd, int64_t len)
{
	quotafs *q = (quotafs *)fs;
	if (over_quota(q, fd, len))
		return -ENOSPC;
	return q->base->fallocate(q->base, fd, len);
}

static int64_t
file_size(const char *dir, const char *name)
{
	char p[800];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* A full disk: creating fails, deleting works (it is how space is freed),
 * twice in a row, and the deletions are what a restart reads. */
static void
t_full_disk(void)
{
	ch_log_threshold = CH_LOG_ERROR;
	struct ch_config cfg;
	mu_new_cfg(&cfg, NULL, 0);
	static quotafs q;
	q.base = ch_logfs_posix();
	q.ops = *q.base;
	q.ops.pwrite = qf_pwrite;
	q.ops.fallocate = qf_fallocate;
	snprintf(q.dir, sizeof(q.dir), "%s", cfg.log_dir);
	q.quota = INT64_MAX;
	struct ch_topics *reg;
	char err[512], msg[512];
	CH_CHECK_EQ_INT(ch_topics_open_fs(&reg, &cfg, &q.ops, err, sizeof(err)), CH_OK);
	ch_topic_kv kv[] = {{(char *)"retention.ms", (char *)"86400000"},
			    {(char *)"segment.bytes", (char *)"1048576"}};
	for (int i = 0; i < 40; i++) {
		char name[16];
		snprintf(name, sizeof(name), "topic-%02d", i);
		CH_CHECK_EQ_INT(
			mu_create(reg, name, strlen(name), 4, kv, 2, false, NULL, msg, sizeof(msg)),
			0);
	}
	int64_t reserve = file_size(cfg.log_dir, CH_TOPICS_RESERVE_FILE);
	CH_CHECK(reserve >= file_size(cfg.log_dir, CH_TOPICS_FILE));

	q.quota = dir_usage(cfg.log_dir); /* not one more block */
	CH_CHECK_EQ_INT(mu_create(reg, "more", 4, 1, kv, 2, false, NULL, msg, sizeof(msg)), 56);
	CH_CHECK(strstr(msg, "No space left on device") != NULL);
	CH_CHECK(ch_topics_find(reg, "more", 4) == NULL);
	CH_CHECK_EQ_INT(file_size(cfg.log_dir, CH_TOPICS_RESERVE_FILE), reserve); /* kept */
	CH_CHECK_EQ_INT(mu_delete(reg, "topic-07", 8, msg, sizeof(msg)), 0);
	CH_CHECK_EQ_INT(mu_delete(reg, "topic-31", 8, msg, sizeof(msg)), 0);
	CH_CHECK(ch_topics_find(reg, "topic-07", 8) == NULL);
	ch_topics_close(reg);

	/* With room again, the reserve is back to size at open. */
	q.quota = INT64_MAX;
	CH_CHECK_EQ_INT(ch_topics_open_fs(&reg, &cfg, &q.ops, err, sizeof(err)), CH_OK);
	CH_CHECK_EQ_INT(ch_topics_count(reg), 38);
	CH_CHECK(ch_topics_find(reg, "topic-07", 8) == NULL &&
		 ch_topics_find(reg, "topic-31", 8) == NULL && ch_topics_find(reg, "topic-08", 8));
	CH_CHECK(file_size(cfg.log_dir, CH_TOPICS_RESERVE_FILE) >=
		 file_size(cfg.log_dir, CH_TOPICS_FILE));
	CH_CHECK_EQ_INT(mu_create(reg, "more", 4, 1, kv, 2, false, NULL, msg, sizeof(msg)), 0);
	ch_topics_close(reg);
	ch_config_free(&cfg);
	ch_log_threshold = CH_LOG_INFO;
}

/* Step j of the kill -9 run: create t<j>, every third step delete t<j-1>. */
static int16_t
kill_step(struct ch_topics *reg, int j, char *msg, size_t msglen)
{
	char name[32];
	if (j % 3 == 2) {
		snprintf(name, sizeof(name), "t%d", j - 1);
		return mu_delete(reg, name, strlen(name), msg, msglen);
	}
	snprintf(name, sizeof(name), "t%d", j);
	return mu_create(reg, name, strlen(name), 1 + j % 4, NULL, 0, false, NULL, msg, msglen);
}

/* The registry after steps 0..last, built in memory in another directory. */
static void
kill_expected(int last, char *out, size_t cap)
{
	struct ch_config cfg;
	mu_new_cfg(&cfg, NULL, 0);
	struct ch_topics *reg;
	char err[512], msg[512];
	if (ch_topics_open(&reg, &cfg, err, sizeof(err)) != CH_OK)
		abort();
	for (int j = 0; j <= last; j++)
		if (kill_step(reg, j, msg, sizeof(msg)) != 0)
			abort();
	snapshot(reg, out, cap);
	ch_topics_close(reg);
	ch_config_free(&cfg);
}

static void
t_kill9(void)
{
	ch_log_threshold = CH_LOG_ERROR;
	for (int round = 0; round < 3; round++) {
		struct ch_config cfg;
		mu_new_cfg(&cfg, NULL, 0);
		int pfd[2];
		CH_CHECK(pipe(pfd) == 0);
		pid_t pid = fork();
		if (pid == 0) {
			close(pfd[0]);
			struct ch_topics *reg;
			char err[512], msg[512];
			if (ch_topics_open(&reg, &cfg, err, sizeof(err)) != CH_OK)
				_exit(2);
			for (int j = 0;; j++) {
				if (kill_step(reg, j, msg, sizeof(msg)) != 0)
					_exit(3);
				if (write(pfd[1], &j, sizeof(j)) != sizeof(j))
					_exit(4);
			}
		}
		close(pfd[1]);
		int done = -1, j;
		for (int k = 0; k < 10 + round * 25; k++) {
			if (read(pfd[0], &j, sizeof(j)) != sizeof(j))
				break;
			done = j;
		}
		kill(pid, SIGKILL);
		int st;
		waitpid(pid, &st, 0);
		/* Reports still in the pipe were made before the kill. */
		while (read(pfd[0], &j, sizeof(j)) == sizeof(j))
			done = j;
		close(pfd[0]);
		CH_CHECK(WIFSIGNALED(st));
		CH_CHECK(done >= 0);
		/* Everything reported is there; the change in progress may be. */
		char got[8192], a[8192], b[8192];
		kill_expected(done, a, sizeof(a));
		kill_expected(done + 1, b, sizeof(b));
		struct ch_topics *reg;
		char err[512];
		CH_CHECK_EQ_INT(ch_topics_open(&reg, &cfg, err, sizeof(err)), CH_OK);
		if (reg) {
			snapshot(reg, got, sizeof(got));
			bool ok = strcmp(got, a) == 0 || strcmp(got, b) == 0;
			CH_CHECK(ok);
			if (!ok)
				fprintf(stderr, "  after step %d: '%s'\n  wanted '%s'\n  or '%s'\n",
					done, got, a, b);
			ch_topics_close(reg);
		}
		ch_config_free(&cfg);
	}
	ch_log_threshold = CH_LOG_INFO;
}

CH_TEST_MAIN(CH_TEST(t_fault_every_step), CH_TEST(t_power_cut_every_point), CH_TEST(t_full_disk),
	     CH_TEST(t_kill9))
