/*
 * ch_logfs.c: POSIX implementation of the log's file layer, and the fault
 * injection layer used by tests (see ch_logfs.h).
 */
#include "log/ch_logfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/ch_common.h"

/* open(2) with O_CLOEXEC added, retried on EINTR: the fd or -errno. */
static int
px_open(ch_logfs *fs, const char *path, int flags, int mode)
{
	CH_UNUSED(fs);
	int fd;
	do
		fd = open(path, flags | O_CLOEXEC, mode);
	while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : fd;
}

static int
px_close(ch_logfs *fs, int fd)
{
	CH_UNUSED(fs);
	return close(fd) < 0 && errno != EINTR ? -errno : 0;
}

/* Reads n bytes at off, retrying short reads and EINTR: the count (< n only at end of file) or
 * -errno. */
static ssize_t
px_pread(ch_logfs *fs, int fd, void *buf, size_t n, int64_t off)
{
	CH_UNUSED(fs);
	size_t done = 0;
	while (done < n) {
		ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)off + (off_t)done);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

/* Writes all n bytes at off, retrying short writes and EINTR: n, or -errno with maybe a prefix
 * written. */
static ssize_t
px_pwrite(ch_logfs *fs, int fd, const void *buf, size_t n, int64_t off)
{
	CH_UNUSED(fs);
	size_t done = 0;
	while (done < n) {
		ssize_t r =
			pwrite(fd, (const char *)buf + done, n - done, (off_t)off + (off_t)done);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)r;
	}
	return (ssize_t)done;
}

static int
px_fdatasync(ch_logfs *fs, int fd)
{
	CH_UNUSED(fs);
	return fdatasync(fd) < 0 ? -errno : 0;
}

/* ftruncate(2) retried on EINTR: 0 or -errno. */
static int
px_ftruncate(ch_logfs *fs, int fd, int64_t len)
{
	CH_UNUSED(fs);
	int r;
	do
		r = ftruncate(fd, (off_t)len);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : 0;
}

/* The file's size (fstat(2)) or -errno. */
static int64_t
px_fsize(ch_logfs *fs, int fd)
{
	CH_UNUSED(fs);
	struct stat st;
	return fstat(fd, &st) < 0 ? -errno : (int64_t)st.st_size;
}

static int
px_unlink(ch_logfs *fs, const char *path)
{
	CH_UNUSED(fs);
	return unlink(path) < 0 ? -errno : 0;
}

static int
px_rename(ch_logfs *fs, const char *from, const char *to)
{
	CH_UNUSED(fs);
	return rename(from, to) < 0 ? -errno : 0;
}

static int
px_mkdir(ch_logfs *fs, const char *path, int mode)
{
	CH_UNUSED(fs);
	return mkdir(path, (mode_t)mode) < 0 ? -errno : 0;
}

/* fsyncs directory path so that names created, renamed or removed in it persist: 0 or -errno. */
static int
px_sync_dir(ch_logfs *fs, const char *path)
{
	CH_UNUSED(fs);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return r;
}

/* posix_fallocate(3) of [0, len), retried on EINTR: 0 or -errno (it returns the error). */
static int
px_fallocate(ch_logfs *fs, int fd, int64_t len)
{
	CH_UNUSED(fs);
	int r;
	do
		r = posix_fallocate(fd, 0, (off_t)len);
	while (r == EINTR);
	return -r;
}

static ch_logfs posix_fs = {
	px_open,  px_close,  px_pread,  px_pwrite, px_fdatasync, px_ftruncate,
	px_fsize, px_unlink, px_rename, px_mkdir,  px_sync_dir,  px_fallocate,
};

ch_logfs *
ch_logfs_posix(void)
{
	return &posix_fs;
}

int
ch_logfs_read_full(ch_logfs *fs, int fd, void *buf, size_t n, int64_t off)
{
	ssize_t r = fs->pread(fs, fd, buf, n, off);
	if (r < 0)
		return (int)r;
	return (size_t)r == n ? 0 : -EIO;
}

int
ch_logfs_write_full(ch_logfs *fs, int fd, const void *buf, size_t n, int64_t off)
{
	ssize_t r = fs->pwrite(fs, fd, buf, n, off);
	if (r < 0)
		return (int)r;
	return (size_t)r == n ? 0 : -EIO;
}

int
ch_logfs_allocate(ch_logfs *fs, int fd, int64_t len)
{
	if (fs->fallocate)
		return fs->fallocate(fs, fd, len);
	static const uint8_t zeros[4096];
	int64_t at = fs->fsize(fs, fd);
	while (at >= 0 && at < len) {
		size_t n = (size_t)CH_MIN((int64_t)sizeof(zeros), len - at);
		int r = ch_logfs_write_full(fs, fd, zeros, n, at);
		if (r < 0)
			return r;
		at += (int64_t)n;
	}
	return at < 0 ? (int)at : 0;
}

/* ---- fault injection ---------------------------------------------------- */

/* Counts one mutating op; returns -errno if this one must fail. */
static int
fault_step(ch_logfs_fault *f)
{
	long n = atomic_fetch_add(&f->steps, 1) + 1;
	if (f->fail_at > 0 && (n == f->fail_at || (f->sticky && n > f->fail_at))) {
		atomic_fetch_add(&f->failures, 1);
		return -f->fail_errno;
	}
	return 0;
}

/* Counts (and may fail) an open for writing or creating; read-only opens are not counted. */
static int
ft_open(ch_logfs *fs, const char *path, int flags, int mode)
{
	ch_logfs_fault *f = (ch_logfs_fault *)fs;
	if ((flags & (O_WRONLY | O_RDWR | O_CREAT)) != 0) {
		int r = fault_step(f);
		if (r < 0)
			return r;
	}
	return f->base->open(f->base, path, flags, mode);
}

static int
ft_close(ch_logfs *fs, int fd)
{
	ch_logfs_fault *f = (ch_logfs_fault *)fs;
	return f->base->close(f->base, fd);
}

/* Passes reads to the base; counts (and may fail) them only when f->fail_reads. */
static ssize_t
ft_pread(ch_logfs *fs, int fd, void *buf, size_t n, int64_t off)
{
	ch_logfs_fault *f = (ch_logfs_fault *)fs;
	if (f->fail_reads) {
		int r = fault_step(f);
		if (r < 0)
			return r;
	}
	return f->base->pread(f->base, fd, buf, n, off);
}

/* Counts a write; one that fails first writes the first half of buf, as a full disk does. */
static ssize_t
ft_pwrite(ch_logfs *fs, int fd, const void *buf, size_t n, int64_t off)
{
	ch_logfs_fault *f = (ch_logfs_fault *)fs;
	int r = fault_step(f);
	if (r < 0) {
		/* A full disk takes part of the write before it refuses. */
		if (n > 1)
			(void)f->base->pwrite(f->base, fd, buf, n / 2, off);
		return r;
	}
	return f->base->pwrite(f->base, fd, buf, n, off);
}

/* Counts the op: the armed -errno if it is the one to fail, else the base's result. */
static int
ft_fdatasync(ch_logfs *fs, int fd)
{
	ch_logfs_fault *f = (ch_logfs_fault *)fs;
	int r = fault_step(f);
	return r < 0 ? r : f->base->fdatasync(f->base, fd);
}

/* Counts the op: the armed -errno if it is the one to fail, else the base's result. */
static int
ft_ftruncate(ch_logfs *fs, int fd, int64_t len)
{
	ch_logfs_fault *f = (ch_logfs_fault *)fs;
	int r = fault_step(f);
	return r < 0 ? r : f->base->ftruncate(f->base, fd, len);
}

static int64_t
ft_fsize(ch_logfs *fs, int fd)
{
	ch_logfs_fault *f = (ch_logfs_fault *)fs;
	return f->base->fsize(f->base, fd);
}

/* Counts the op: the armed -errno if it is the one to fail, else the base's result. */
static int
ft_unlink(ch_logfs *fs, const char *path)
{
	ch_logfs_fault *f = (ch_logfs_fault *)fs;
	int r = fault_step(f);
	return r < 0 ? r : f->base->unlink(f->base, path);
}

/* Counts the op: the armed -errno if it is the one to fail, else the base's result. */
static int
ft_rename(ch_logfs *fs, const char *from, const char *to)
{
	ch_logfs_fault *f = (ch_logfs_fault *)fs;
	int r = fault_step(f);
	return r < 0 ? r : f->base->rename(f->base, from, to);
}

/* Counts the op: the armed -errno if it is the one to fail, else the base's result. */
static int
ft_mkdir(ch_logfs *fs, const char *path, int mode)
{
	ch_logfs_fault *f = (ch_logfs_fault *)fs;
	int r = fault_step(f);
	return r < 0 ? r : f->base->mkdir(f->base, path, mode);
}

/* Counts the op: the armed -errno if it is the one to fail, else the base's result. */
static int
ft_sync_dir(ch_logfs *fs, const char *path)
{
	ch_logfs_fault *f = (ch_logfs_fault *)fs;
	int r = fault_step(f);
	return r < 0 ? r : f->base->sync_dir(f->base, path);
}

/* Counts the op, then allocates through ch_logfs_allocate on the base (zeros if it has no
 * fallocate). */
static int
ft_fallocate(ch_logfs *fs, int fd, int64_t len)
{
	ch_logfs_fault *f = (ch_logfs_fault *)fs;
	int r = fault_step(f);
	return r < 0 ? r : ch_logfs_allocate(f->base, fd, len);
}

void
ch_logfs_fault_init(ch_logfs_fault *f, ch_logfs *base)
{
	f->ops = (ch_logfs){
		ft_open,  ft_close,  ft_pread,  ft_pwrite, ft_fdatasync, ft_ftruncate,
		ft_fsize, ft_unlink, ft_rename, ft_mkdir,  ft_sync_dir,  ft_fallocate,
	};
	f->base = base;
	atomic_init(&f->steps, 0);
	atomic_init(&f->failures, 0);
	f->fail_at = 0;
	f->fail_errno = 0;
	f->sticky = false;
	f->fail_reads = false;
}

void
ch_logfs_fault_arm(ch_logfs_fault *f, long n, int err, bool sticky)
{
	f->fail_at = n <= 0 ? 0 : atomic_load(&f->steps) + n;
	f->fail_errno = err;
	f->sticky = sticky;
}
