/*
 * ch_logfs: the file layer under the partition log, an ops struct in the
 * manner of SQLite's sqlite3_vfs. The log never calls open/pwrite/fsync
 * directly, so tests can put a layer underneath that fails any step.
 *
 * Conventions: every op returns >= 0 on success and -errno on failure
 * (never sets errno for the caller). Paths are absolute or relative to the
 * process's cwd. Short reads and writes are retried by the implementation:
 * pread returns fewer bytes than asked only at end of file, pwrite writes all
 * or fails (a failed pwrite may have written a prefix; the log truncates it).
 *
 * Not behind the ops: listing a partition directory on open (opendir, stat),
 * which is read-only and needs no fault injection.
 *
 * @locality any thread: ch_logfs_posix is stateless; the fault layer uses
 * atomics for its step counter.
 */
#ifndef CH_LOGFS_H
#define CH_LOGFS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct ch_logfs ch_logfs;

struct ch_logfs {
	/* flags/mode as open(2); returns an fd. */
	int (*open)(ch_logfs *fs, const char *path, int flags, int mode);
	int (*close)(ch_logfs *fs, int fd);
	ssize_t (*pread)(ch_logfs *fs, int fd, void *buf, size_t n, int64_t off);
	ssize_t (*pwrite)(ch_logfs *fs, int fd, const void *buf, size_t n, int64_t off);
	int (*fdatasync)(ch_logfs *fs, int fd);
	int (*ftruncate)(ch_logfs *fs, int fd, int64_t len);
	int64_t (*fsize)(ch_logfs *fs, int fd);
	int (*unlink)(ch_logfs *fs, const char *path);
	int (*rename)(ch_logfs *fs, const char *from, const char *to);
	int (*mkdir)(ch_logfs *fs, const char *path, int mode);
	/* fsync a directory so that created / renamed / removed names persist. */
	int (*sync_dir)(ch_logfs *fs, const char *path);
	/* Allocates the blocks of [0, len), growing the file (posix_fallocate).
	 * Optional: layers that leave it NULL get zeros written instead (see
	 * ch_logfs_allocate). */
	int (*fallocate)(ch_logfs *fs, int fd, int64_t len);
};

/* The real file system. */
ch_logfs *ch_logfs_posix(void);

/*
 * Fault injection: wraps `base`; counts every mutating op (open for write,
 * pwrite, fdatasync, ftruncate, unlink, rename, mkdir, sync_dir, fallocate)
 * and fails
 * the fail_at-th one (1-based) with -fail_errno, and every later one too when
 * `sticky`. fail_at = 0 never fails. A failing pwrite first writes half of its
 * bytes, as a full disk does, so rollback is exercised.
 */
typedef struct ch_logfs_fault {
	ch_logfs ops; /* first: a ch_logfs_fault* is a ch_logfs* */
	ch_logfs *base;
	atomic_long steps; /* mutating ops seen so far */
	long fail_at;
	int fail_errno; /* ENOSPC, EIO ... */
	bool sticky;
	atomic_long failures; /* ops failed so far */
	bool fail_reads;      /* also count (and fail) pread */
} ch_logfs_fault;

/* The fault layer is handed out as its ops. */
_Static_assert(offsetof(ch_logfs_fault, ops) == 0, "ops must be first of ch_logfs_fault");

void ch_logfs_fault_init(ch_logfs_fault *f, ch_logfs *base);
/* Arms a fault at the n-th mutating op from now. */
void ch_logfs_fault_arm(ch_logfs_fault *f, long n, int err, bool sticky);

/* Helpers on top of the ops: write all / read exactly, or -errno. A short
 * read (end of file) is -EIO for ch_logfs_read_full. */
int ch_logfs_read_full(ch_logfs *fs, int fd, void *buf, size_t n, int64_t off);
int ch_logfs_write_full(ch_logfs *fs, int fd, const void *buf, size_t n, int64_t off);
/* Space for [0, len) of fd allocated (fs->fallocate, or zeros written past
 * the current size when the layer has none), or -errno. */
int ch_logfs_allocate(ch_logfs *fs, int fd, int64_t len);

#endif
