/*
 * ch_seg: one segment of a partition log: a .log file of record batches and
 * its two sparse indexes. Internal to log/; the public API is ch_plog.h.
 *
 * FILES (Kafka's names, in <data>/<topic>-<partition>/)
 *
 *   00000000000000000000.log        batches, as received (offsets assigned)
 *   00000000000000000000.index      sparse offset index
 *   00000000000000000000.timeindex  sparse time index, parallel to .index
 *   log-start-offset                see ch_plog.h
 *
 * The 20-digit zero-padded decimal name is the segment's base offset: every
 * batch in it has baseOffset >= base, and lastOffset < the next segment's
 * base. Offsets need not be contiguous (the cleaner leaves gaps).
 *
 * .log: record batches back to back (format in ch_batch.h), no header, no
 * padding. The file size is the end of the last batch; anything after it
 * (a torn write) is cut off by recovery.
 *
 * .index: an array of 8-byte entries, no header, big-endian:
 *
 *   OFFSET  SIZE  FIELD
 *   0       4     relOffset   baseOffset of the indexed batch - segment base
 *   4       4     position    file position of that batch in .log
 *
 * .timeindex: an array of 12-byte entries, entry i written with .index entry
 * i (so both always hold the same number of entries):
 *
 *   OFFSET  SIZE  FIELD
 *   0       8     timestamp   largest maxTimestamp of batches at positions
 *                             <= index[i].position (the running maximum)
 *   8       4     relOffset   baseOffset of the batch holding that maximum
 *
 * Unlike Kafka, entries point at a batch's base offset (Kafka: last offset)
 * and the files are not preallocated. Sparsity follows Kafka's rule: before
 * appending a batch, if more than index.interval.bytes (4096) have been
 * appended since the last entry, the batch gets an entry; the first batch of
 * a segment never does (position 0 is implied).
 *
 * Lookups binary-search the index files with pread (log2(n) reads of 8 or
 * 12 bytes from the page cache) and then scan batch headers forward; nothing
 * of the index is held in memory but the entry count.
 *
 * Offset lookup(o): the last entry with base+relOffset <= o gives the start
 * position; scan to the first batch whose lastOffset >= o.
 * Time lookup(t): the last entry with timestamp < t says every record up to
 * and including its batch is older than t; scan from its position to the
 * first batch with maxTimestamp >= t, then into its records.
 *
 * RECOVERY (ch_seg_open), two depths, chosen by the partition from its
 * recovery point (ch_plog.h):
 *
 *   trusted segment (wholly below the recovery point: its .log and indexes
 *   were fdatasynced): the index is accepted if its size is a whole number
 *   of entries, both files agree on the count, and its last entry points
 *   inside the log at a batch with the right baseOffset; otherwise both are
 *   rebuilt from 0. Then only the batches from the last entry's position on
 *   are read and checked.
 *
 *   full (the segment holding the recovery point and all later ones: bytes
 *   and indexes there may be anything after a power loss): both indexes are
 *   dropped and rebuilt while every batch from position 0 is checked.
 *
 * "Checked" is: whole batch present, length, magic, CRC-32C, field sanity,
 * records parse (uncompressed), offsets increasing and below the next
 * segment's base. The first bad or partial batch and everything after it is
 * truncated, with a WARN naming the file and position. (baseOffset is outside
 * the CRC, as in Kafka: only the ordering checks guard it.)
 *
 * LIFETIME: a segment is reference counted. The partition holds one ref;
 * readers (a fetch being sent with sendfile), the sync worker and the log
 * cleaner take more. Deleting (retention) unlinks the files at once and the
 * fds close at the last unref, so an in-flight sendfile still reads valid
 * bytes.
 */
#ifndef CH_SEG_H
#define CH_SEG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "log/ch_batch.h"
#include "log/ch_logfs.h"

#define CH_SEG_IDX_ENTRY 8
#define CH_SEG_TIX_ENTRY 12
#define CH_SEG_NAME_DIGITS 20

typedef struct ch_seg {
	int64_t base;       /* base offset (the file name) */
	char *prefix;       /* "<dir>/<20 digits>" */
	const char *suffix; /* "" or ".cleaned" while being written */
	ch_logfs *fs;
	int fd_log, fd_idx, fd_tix;
	/* Written by the loop thread only; size also read by the sync worker
	 * under the partition lock. */
	_Atomic int64_t size;      /* bytes of valid batches in .log */
	int64_t next_offset;       /* last offset + 1 of the last batch (base if empty) */
	int64_t max_ts;            /* largest batch maxTimestamp, -1 if none */
	int64_t max_ts_offset;     /* baseOffset of the batch holding max_ts */
	int64_t roll_ts;           /* creation time; on reopen the first batch's maxTimestamp */
	int64_t bytes_since_index; /* bytes appended since the last index entry */
	uint32_t n_idx;            /* entries in .index (= entries in .timeindex) */
	int64_t synced_size;       /* bytes known durable; partition lock */
	atomic_int refs;
	bool deleted;      /* files unlinked: close only at last unref */
	bool cleaning;     /* the cleaner holds it: retention waits */
	bool index_synced; /* closed and indexes fdatasynced; partition lock */
} ch_seg;

/* A batch header found by a scan, with its position. */
typedef struct ch_seg_pos {
	int64_t pos;
	ch_batch_hdr h;
} ch_seg_pos;

/*
 * Creates an empty segment (truncating stale files of that name).
 * @returns 0 or -errno.  @locality loop thread, or the cleaner on its own files
 */
int ch_seg_create(ch_logfs *fs, const char *dir, int64_t base, const char *suffix, int64_t now_ms,
		  ch_seg **out);

/*
 * Opens an existing segment and recovers it as described above. limit is the
 * next segment's base offset (INT64_MAX for the last); full selects the full
 * recovery. *truncated is set to the bytes cut off (0 if none). index_synced
 * is set when the index files were used as they were.
 * @returns 0 or -errno (I/O errors only; corruption is repaired, not failed).
 */
int ch_seg_open(ch_logfs *fs, const char *dir, int64_t base, int64_t limit, int32_t index_interval,
		bool full, int64_t now_ms, ch_seg **out, int64_t *truncated);

ch_seg *ch_seg_ref(ch_seg *s);
void ch_seg_unref(ch_seg *s);

/* Unlinks the three files (the fds stay open until the last unref).
 * @returns 0 or the first -errno (the .log is removed first). */
int ch_seg_delete(ch_seg *s);

/* File path of one of the files: ext is ".log", ".index" or ".timeindex". */
char *ch_seg_path(const ch_seg *s, const char *ext, bool with_suffix);

/*
 * Appends `len` bytes of already validated, offset-assigned batches (hdrs[i]
 * for each, n of them) at the end of the segment and adds index entries. On
 * failure nothing changes: the files are truncated back (if that fails too,
 * *wedged is set: the file no longer matches memory).
 * @returns 0 or -errno.
 */
int ch_seg_append(ch_seg *s, const uint8_t *data, size_t len, const ch_batch_hdr *hdrs, size_t n,
		  int32_t index_interval, bool *wedged);

/*
 * Finds the first batch with lastOffset >= offset.
 * @returns 1 found (*out), 0 no such batch in this segment, -errno on I/O error.
 */
int ch_seg_find(ch_seg *s, int64_t offset, ch_seg_pos *out);

/* Finds the first batch with maxTimestamp >= ts. Same returns. */
int ch_seg_find_ts(ch_seg *s, int64_t ts, ch_seg_pos *out);

/* Reads the batch at pos (header already known) into buf (replaced). */
int ch_seg_read_batch(ch_seg *s, const ch_seg_pos *bp, ch_buf *buf);

/* fdatasync of the .log and both indexes. @returns 0 or -errno. */
int ch_seg_sync(ch_seg *s);

#endif
