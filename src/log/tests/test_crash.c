/* test_crash.c: crash simulation, after SQLite's test6.c. A file layer
 * remembers every write not yet covered by an fdatasync, and every file
 * created since its directory was last synced. "Power loss" then, per file,
 * keeps the unsynced writes, drops them (truncate), or garbles them, and may
 * make unsynced new files vanish. After that the reopened log must hold
 * every batch below the synced offset byte for byte, and be valid beyond.
 * And a real kill -9 of a child process appending with group commit. */
#include "log/tests/log_util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include "common/ch_log.h"
#include "common/ch_test.h"
#include "log/ch_plog.h"

enum {
	MAXW = 4096,
	MAXF = 256
};

typedef struct crashfs {
	ch_logfs ops;
	ch_logfs *base;
	struct {
		int fd;
		int64_t off, len;
	} w[MAXW];
	int nw;
	struct {
		int fd;
		char path[300];
		bool new_name; /* created since the last directory sync */
	} f[MAXF];
	int nf;
	uint32_t seed;
	/* The power is out: the process may go on (ch_plog_close), but nothing
	 * it does reaches the disk any more. */
	bool down;
} crashfs;

static uint32_t
rnd(crashfs *c)
{
	return ch_test_rand(&c->seed);
}

static int
cf_open(ch_logfs *fs, const char *path, int flags, int mode)
{
	crashfs *c = (crashfs *)fs;
	if (c->down)
		return c->base->open(c->base, "/dev/null", O_RDWR, 0);
	bool existed = access(path, F_OK) == 0;
	int fd = c->base->open(c->base, path, flags, mode);
	if (fd >= 0 && c->nf < MAXF) {
		c->f[c->nf].fd = fd;
		snprintf(c->f[c->nf].path, sizeof(c->f[c->nf].path), "%s", path);
		c->f[c->nf].new_name = !existed;
		c->nf++;
	}
	return fd;
}

static int
cf_close(ch_logfs *fs, int fd)
{
	crashfs *c = (crashfs *)fs;
	for (int i = 0; i < c->nf; i++)
		if (c->f[i].fd == fd)
			c->f[i].fd = -1;
	return c->base->close(c->base, fd);
}

static ssize_t
cf_pread(ch_logfs *fs, int fd, void *b, size_t n, int64_t off)
{
	crashfs *c = (crashfs *)fs;
	return c->base->pread(c->base, fd, b, n, off);
}

static ssize_t
cf_pwrite(ch_logfs *fs, int fd, const void *b, size_t n, int64_t off)
{
	crashfs *c = (crashfs *)fs;
	if (c->down)
		return (ssize_t)n;
	if (c->nw < MAXW) {
		c->w[c->nw].fd = fd;
		c->w[c->nw].off = off;
		c->w[c->nw].len = (int64_t)n;
		c->nw++;
	}
	return c->base->pwrite(c->base, fd, b, n, off);
}

static int
cf_fdatasync(ch_logfs *fs, int fd)
{
	crashfs *c = (crashfs *)fs;
	if (c->down)
		return 0;
	int k = 0;
	for (int i = 0; i < c->nw; i++)
		if (c->w[i].fd != fd)
			c->w[k++] = c->w[i];
	c->nw = k;
	return c->base->fdatasync(c->base, fd);
}

static int
cf_ftruncate(ch_logfs *fs, int fd, int64_t len)
{
	crashfs *c = (crashfs *)fs;
	return c->down ? 0 : c->base->ftruncate(c->base, fd, len);
}

static int64_t
cf_fsize(ch_logfs *fs, int fd)
{
	crashfs *c = (crashfs *)fs;
	return c->base->fsize(c->base, fd);
}

static int
cf_unlink(ch_logfs *fs, const char *p)
{
	crashfs *c = (crashfs *)fs;
	return c->down ? 0 : c->base->unlink(c->base, p);
}

static int
cf_rename(ch_logfs *fs, const char *a, const char *b)
{
	crashfs *c = (crashfs *)fs;
	return c->down ? 0 : c->base->rename(c->base, a, b);
}

static int
cf_mkdir(ch_logfs *fs, const char *p, int mode)
{
	crashfs *c = (crashfs *)fs;
	return c->down ? 0 : c->base->mkdir(c->base, p, mode);
}

static int
cf_sync_dir(ch_logfs *fs, const char *p)
{
	crashfs *c = (crashfs *)fs;
	if (c->down)
		return 0;
	for (int i = 0; i < c->nf; i++)
		c->f[i].new_name = false;
	return c->base->sync_dir(c->base, p);
}

static void
crashfs_init(crashfs *c, uint32_t seed)
{
	memset(c, 0, sizeof(*c));
	c->ops = (ch_logfs){cf_open,  cf_close,  cf_pread,  cf_pwrite, cf_fdatasync, cf_ftruncate,
			    cf_fsize, cf_unlink, cf_rename, cf_mkdir,  cf_sync_dir,  NULL};
	c->base = ch_logfs_posix();
	c->seed = seed;
}

/* The power goes out: damage everything not synced. */
static void
crashfs_crash(crashfs *c)
{
	for (int i = 0; i < c->nf; i++) {
		int fd = c->f[i].fd;
		if (fd < 0)
			continue;
		int64_t lo = INT64_MAX;
		for (int k = 0; k < c->nw; k++)
			if (c->w[k].fd == fd && c->w[k].off < lo)
				lo = c->w[k].off;
		switch (rnd(c) % 3) {
		case 0: /* all unsynced writes made it */
			break;
		case 1: /* none did */
			if (lo != INT64_MAX && ftruncate(fd, lo) != 0)
				abort();
			break;
		case 2: /* some sectors hold garbage */
			for (int k = 0; k < c->nw; k++) {
				if (c->w[k].fd != fd || rnd(c) % 2)
					continue;
				int64_t at =
					c->w[k].off + (int64_t)(rnd(c) % (uint32_t)c->w[k].len);
				uint8_t x = (uint8_t)rnd(c) | 1;
				uint8_t y;
				if (pread(fd, &y, 1, at) == 1) {
					y ^= x;
					if (pwrite(fd, &y, 1, at) != 1)
						abort();
				}
			}
			break;
		}
	}
	/* Names created after the last directory sync may be gone. */
	for (int i = 0; i < c->nf; i++)
		if (c->f[i].fd >= 0 && c->f[i].new_name && rnd(c) % 2)
			unlink(c->f[i].path);
	c->down = true;
}

/* Appends batch i (tu_batch: nrec records, timestamps from 1000 + i, codec) to
 * pl and to model. */
static void
append_batch(ch_plog *pl, ch_buf *model, int nrec, int i, int codec)
{
	ch_buf b;
	ch_buf_init(&b);
	tu_batch(&b, nrec, 1000 + i, 0, i, false, codec);
	ch_plog_append_info info;
	int16_t kerr;
	CH_CHECK_EQ_INT(ch_plog_append(pl, b.data, b.len, 0, &info, &kerr), CH_OK);
	ch_buf_append(model, b.data, b.len);
	ch_buf_free(&b);
}

static void
t_power_loss(void)
{
	ch_log_threshold = CH_LOG_ERROR;
	static crashfs cf;
	const char *env = getenv("CRASH_SEEDS"); /* more for a soak run */
	uint32_t seeds = env ? (uint32_t)atol(env) : 400;
	for (uint32_t seed = 1; seed <= seeds; seed++) {
		tu_mkdtemp();
		crashfs_init(&cf, seed);
		ch_plog_config c;
		ch_plog_config_default(&c);
		c.segment_bytes = 900 + (int64_t)(seed % 5) * 300;
		c.index_interval_bytes = 150;
		ch_plog *pl = NULL;
		CH_CHECK_EQ_INT(ch_plog_open(tu_dir, "p", 0, &c, &cf.ops, 0, &pl), CH_OK);
		ch_buf model;
		ch_buf_init(&model);
		size_t synced_bytes = 0;
		int64_t synced = 0;
		int n = 10 + (int)(rnd(&cf) % 40);
		for (int i = 0; i < n; i++) {
			/* One draw per statement: the order of a call's arguments is
			 * unspecified (gcc and clang differ), and a seed must mean
			 * the same run everywhere. */
			int nrec = 1 + (int)(rnd(&cf) % 5);
			int codec = rnd(&cf) % 4 == 0 ? 1 : 0;
			append_batch(pl, &model, nrec, i, codec);
			if (rnd(&cf) % 4 == 0) {
				CH_CHECK_EQ_INT(ch_plog_sync(pl), CH_OK);
				synced = ch_plog_synced_offset(pl);
				synced_bytes = model.len;
				CH_CHECK_EQ_INT(synced, ch_plog_end_offset(pl));
			}
		}
		crashfs_crash(&cf);
		ch_plog_close(pl);

		CH_CHECK_EQ_INT(ch_plog_open(tu_dir, "p", 0, &c, NULL, 0, &pl), CH_OK);
		if (!pl)
			continue;
		CH_CHECK(ch_plog_end_offset(pl) >= synced);
		ch_buf got;
		ch_buf_init(&got);
		tu_read_all(pl, &got, 1000);
		/* Everything synced is there, byte for byte... */
		CH_CHECK(synced_bytes == 0 || (got.len >= synced_bytes &&
					       memcmp(got.data, model.data, synced_bytes) == 0));
		if (synced_bytes &&
		    (got.len < synced_bytes || memcmp(got.data, model.data, synced_bytes) != 0))
			fprintf(stderr, "seed %u: got %zu bytes, synced %zu\n", seed, got.len,
				synced_bytes);
		/* ...and what survived beyond is a valid prefix of what was written
		 * (offsets are checked by tu_read_all's walk). */
		CH_CHECK(got.len <= model.len);
		int64_t first = -1, next = 0;
		int nb = tu_walk(got.data, got.len, &first, &next);
		CH_CHECK(nb == 0 || next == ch_plog_end_offset(pl));
		/* The log goes on. */
		ch_buf b;
		ch_buf_init(&b);
		tu_batch(&b, 2, 5, 0, 0, false, 0);
		ch_plog_append_info info;
		int16_t kerr;
		CH_CHECK_EQ_INT(ch_plog_append(pl, b.data, b.len, 0, &info, &kerr), CH_OK);
		ch_buf_free(&b);
		ch_buf_free(&got);
		ch_buf_free(&model);
		ch_plog_close(pl);
		tu_rmdir();
	}
	ch_log_threshold = CH_LOG_INFO;
}

/* The first sync writes the recovery point at the log end, inside the
 * active segment, which a reopen then trusts up to its last index entry.
 * The power cut tears the first unsynced write of every file (byte 4 of the
 * first .index entry, its position, is garbage), which a sane last entry
 * does not reveal: the indexes that point counts as synced must have been. */
static void
t_checkpoint_index(void)
{
	ch_log_threshold = CH_LOG_ERROR;
	static crashfs cf;
	tu_mkdtemp();
	crashfs_init(&cf, 1);
	ch_plog_config c;
	ch_plog_config_default(&c);
	c.index_interval_bytes = 150;
	ch_plog *pl = NULL;
	CH_CHECK_EQ_INT(ch_plog_open(tu_dir, "p", 0, &c, &cf.ops, 0, &pl), CH_OK);
	ch_buf model;
	ch_buf_init(&model);
	for (int i = 0; i < 20; i++)
		append_batch(pl, &model, 3, i, 0);
	CH_CHECK_EQ_INT(ch_plog_sync(pl), CH_OK);
	CH_CHECK_EQ_INT(ch_plog_synced_offset(pl), 60);
	for (int i = 0; i < cf.nf; i++) {
		int k = 0;
		while (k < cf.nw && (cf.w[k].fd != cf.f[i].fd || cf.w[k].len < 8))
			k++;
		uint8_t x;
		if (cf.f[i].fd < 0 || k == cf.nw || pread(cf.f[i].fd, &x, 1, cf.w[k].off + 4) != 1)
			continue;
		x ^= 0x7f;
		CH_CHECK(pwrite(cf.f[i].fd, &x, 1, cf.w[k].off + 4) == 1);
	}
	cf.down = true;
	ch_plog_close(pl);

	CH_CHECK_EQ_INT(ch_plog_open(tu_dir, "p", 0, &c, NULL, 0, &pl), CH_OK);
	if (pl) {
		CH_CHECK_EQ_INT(ch_plog_end_offset(pl), 60);
		ch_buf got;
		ch_buf_init(&got);
		CH_CHECK_EQ_INT(tu_read_all(pl, &got, 1), 20); /* every offset looked up */
		CH_CHECK(got.len == model.len && memcmp(got.data, model.data, got.len) == 0);
		ch_buf_free(&got);
		ch_plog_close(pl);
	}
	ch_buf_free(&model);
	tu_rmdir();
	ch_log_threshold = CH_LOG_INFO;
}

/* kill -9 while a child appends and group-commits: every offset the child
 * reported as synced is there after the restart. */
static void
t_kill9(void)
{
	ch_log_threshold = CH_LOG_ERROR;
	for (int round = 0; round < 4; round++) {
		tu_mkdtemp();
		int pfd[2];
		CH_CHECK(pipe(pfd) == 0);
		pid_t pid = fork();
		if (pid == 0) {
			close(pfd[0]);
			ch_plog_config c;
			ch_plog_config_default(&c);
			c.segment_bytes = 4096;
			ch_plog *pl = NULL;
			if (ch_plog_open(tu_dir, "k", 0, &c, NULL, 0, &pl) != CH_OK)
				_exit(2);
			for (int i = 0;; i++) {
				ch_buf b;
				ch_buf_init(&b);
				tu_batch(&b, 3, 1000 + i, 0, i, false, 0);
				ch_plog_append_info info;
				int16_t kerr;
				if (ch_plog_append(pl, b.data, b.len, 0, &info, &kerr) != CH_OK)
					_exit(3);
				ch_buf_free(&b);
				if (i % 8 == 7) {
					if (ch_plog_sync(pl) != CH_OK)
						_exit(4);
					int64_t s = ch_plog_synced_offset(pl);
					if (write(pfd[1], &s, sizeof(s)) != sizeof(s))
						_exit(5);
				}
			}
		}
		close(pfd[1]);
		int64_t synced = 0, s;
		for (int k = 0; k < 20 + round * 15; k++) {
			if (read(pfd[0], &s, sizeof(s)) != sizeof(s))
				break;
			synced = s;
		}
		kill(pid, SIGKILL);
		int st;
		waitpid(pid, &st, 0);
		close(pfd[0]);
		CH_CHECK(WIFSIGNALED(st));
		ch_plog_config c;
		ch_plog_config_default(&c);
		c.segment_bytes = 4096;
		ch_plog *pl = NULL;
		CH_CHECK_EQ_INT(ch_plog_open(tu_dir, "k", 0, &c, NULL, 0, &pl), CH_OK);
		if (pl) {
			CH_CHECK(synced > 0);
			CH_CHECK(ch_plog_end_offset(pl) >= synced);
			ch_buf got;
			ch_buf_init(&got);
			int nb = tu_read_all(pl, &got, 5000);
			int64_t first = -1, next = 0;
			CH_CHECK_EQ_INT(tu_walk(got.data, got.len, &first, &next), nb);
			CH_CHECK_EQ_INT(next, ch_plog_end_offset(pl));
			CH_CHECK_EQ_INT(next, nb * 3); /* no gaps, no duplicates */
			ch_buf_free(&got);
			ch_plog_close(pl);
		}
		tu_rmdir();
	}
	ch_log_threshold = CH_LOG_INFO;
}

CH_TEST_MAIN(CH_TEST(t_power_loss), CH_TEST(t_checkpoint_index), CH_TEST(t_kill9))
