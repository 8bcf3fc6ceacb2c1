/*
 * log_util.h: helpers for the log/ unit tests: a scratch directory under
 * mkdtemp() removed at the end, and batch construction.
 */
#ifndef LOG_UTIL_H
#define LOG_UTIL_H

#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/ch_buf.h"
#include "common/ch_common.h"
#include "log/ch_batch.h"

static char tu_dir[256];

static inline const char *
tu_mkdtemp(void)
{
	const char *t = getenv("TMPDIR");
	snprintf(tu_dir, sizeof(tu_dir), "%s/ch_log_test.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(tu_dir)) {
		perror("mkdtemp");
		abort();
	}
	return tu_dir;
}

static inline int
tu_rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static inline void
tu_rmdir(void)
{
	if (tu_dir[0])
		nftw(tu_dir, tu_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	tu_dir[0] = 0;
}

/* A producer batch of n records "k<i>"/"v<i>" (keys modulo nkeys when > 0),
 * timestamps ts0 + i, appended to out. value NULL for tombstones when
 * tomb is set. */
static inline void
tu_batch(ch_buf *out, int n, int64_t ts0, int nkeys, int key0, bool tomb, int codec)
{
	ch_batch_builder bb;
	ch_batch_builder_begin(&bb, out, 0, 0, ts0, -1, -1, -1);
	for (int i = 0; i < n; i++) {
		char k[32], v[64];
		int kn = snprintf(k, sizeof(k), "k%d", nkeys > 0 ? (key0 + i) % nkeys : key0 + i);
		int vn = snprintf(v, sizeof(v), "v%d-%lld", key0 + i, (long long)(ts0 + i));
		ch_bytes key = {(const uint8_t *)k, kn};
		ch_bytes val = tomb ? CH_BYTES_NULL : (ch_bytes){(const uint8_t *)v, vn};
		ch_batch_builder_add(&bb, i, ts0 + i, key, val, 0, NULL, 0);
	}
	if (ch_batch_builder_end_codec(&bb, -1, codec) != CH_OK)
		abort();
}

/* Counts records, checks batches, in a read-back buffer; returns the number
 * of whole batches and puts the offsets of the last whole batch's end in
 * *next. */
static inline int
tu_walk(const uint8_t *p, size_t len, int64_t *first, int64_t *next)
{
	int n = 0;
	size_t pos = 0;
	*first = -1;
	*next = 0;
	while (pos < len) {
		ch_batch_hdr h;
		if (ch_batch_check(p + pos, len - pos, 0, false, &h) != CH_BATCH_OK)
			break;
		if (*first < 0)
			*first = h.base_offset;
		*next = ch_batch_last_offset(&h) + 1;
		pos += (size_t)ch_batch_size(&h);
		n++;
	}
	return n;
}

#include "log/ch_plog.h"

/* Reads the whole log from its start offset into out, whole batches only,
 * fetching `chunk` bytes at a time. Returns the number of batches. */
static inline int
tu_read_all(ch_plog *pl, ch_buf *out, int64_t chunk)
{
	int64_t off = ch_plog_start_offset(pl);
	int nb = 0;
	ch_buf b;
	ch_buf_init(&b);
	for (;;) {
		int16_t kerr;
		ch_buf_reset(&b);
		if (ch_plog_read_copy(pl, off, chunk, &b, &kerr) != CH_OK || b.len == 0)
			break;
		size_t pos = 0;
		while (pos < b.len) {
			ch_batch_hdr h;
			if (ch_batch_check(b.data + pos, b.len - pos, 0, false, &h) != CH_BATCH_OK)
				break;
			if (ch_batch_last_offset(&h) >= off) {
				ch_buf_append(out, b.data + pos, (size_t)ch_batch_size(&h));
				nb++;
			}
			off = ch_batch_last_offset(&h) + 1;
			pos += (size_t)ch_batch_size(&h);
		}
		if (pos == 0)
			abort(); /* no whole batch: the read contract is broken */
	}
	ch_buf_free(&b);
	return nb;
}

#endif
