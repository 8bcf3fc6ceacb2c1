/*
 * ch_plog: a partition log. Segments of Kafka v2 record batches stored as
 * received (the broker assigns offsets; compressed batches stay compressed),
 * sparse offset and time indexes, recovery, group-commit durability,
 * retention and compaction. File formats are in ch_seg.h and ch_batch.h.
 *
 * DIRECTORY  <data>/<topic>-<partition>/
 *
 *   <20-digit base>.log / .index / .timeindex   one segment (ch_seg.h)
 *   recovery-point                              see RECOVERY below
 *   log-start-offset                            optional, see below
 *   *.cleaned, *.tmp                            work in progress; removed
 *                                               on open
 *
 * Both small files hold one offset as text, written to "<name>.tmp",
 * fdatasynced and renamed over (a torn or missing one reads as absent):
 *
 *   OFFSET  SIZE  FIELD
 *   0       *     decimal offset, then "\n"
 *
 * log-start-offset is written only when DeleteRecords moves the start
 * offset inside the first segment (otherwise the start is the first
 * segment's base).
 *
 * RECOVERY. recovery-point is an offset below which everything (batches and
 * the indexes of their segments, the active one's included) has been
 * fdatasynced; ch_plog_sync writes it at most once a second (and syncs the
 * active segment's indexes only then), ch_plog_close after a final sync. On
 * open, each segment wholly below it gets the cheap check of ch_seg.h (tail
 * from the last index entry); the segment holding it and every later one get
 * the full check with rebuilt indexes, since after a power cut unsynced
 * bytes can be anything. No file: everything is checked. Corrupt or torn
 * batches and all after them in their segment are truncated (WARN with file
 * and position).
 * A stray empty segment that a half-done roll left inside the previous one's
 * offsets, or an empty last segment after a gap, is removed. Offsets below
 * the recovery point count as synced; the rest become synced at the first
 * ch_plog_sync.
 *
 * OFFSETS
 *
 *   log start offset   first offset a fetch may ask for (ListOffsets -2)
 *   log end offset     next offset to assign = high watermark (one replica)
 *                      = last stable offset (no transactions)
 *   synced offset      offsets below it are on disk (fdatasync done); an
 *                      acks=all response may be sent once its last offset is
 *                      below it
 *
 * THREADS (@locality in each function's comment)
 *
 *   loop thread    everything not marked otherwise: open, append, read,
 *                  lookups, retention, roll, the start and finish of a
 *                  compaction, close. One thread at a time per partition;
 *                  the log takes no lock for its own reads.
 *   any thread     ch_plog_sync, ch_plog_synced_offset, ch_plog_clean_run.
 *
 * A mutex (pl->lock) guards what the sync worker looks at: the segment
 * array and each segment's synced_size, and the log end offset. The loop
 * thread takes it only to change those (a roll, a deletion, the end of an
 * append, a compaction swap), never while doing I/O, so an fdatasync on the
 * worker never stalls an append. The worker takes references on the dirty
 * segments under the lock, syncs them without it, then publishes the synced
 * offset. Segment refcounts and the synced offset are atomics.
 *
 * GROUP COMMIT (acks=all): the loop appends, parks the response with the
 * batch's last offset, and asks a worker to run ch_plog_sync if none is
 * running; when it returns, every parked response with last offset <
 * ch_plog_synced_offset() is released. Appends made while a sync runs are
 * picked up by the next one, so one fdatasync covers many producers.
 * For acks=0/1, ch_plog_flush_due() applies flush.messages / flush.ms.
 *
 * ERRORS: functions return CH_OK / CH_ERR and put a Kafka error code in
 * *kerr. An I/O error or a full disk during an append is
 * KAFKA_STORAGE_ERROR (56): the partial write is truncated away and the log
 * is as before the call. If even that truncation fails, or an fdatasync
 * fails (the kernel may have dropped the dirty pages), the log is marked
 * failed: appends fail with KAFKA_STORAGE_ERROR until it is reopened, and
 * recovery on reopen sorts out the tail. Reads keep working.
 *
 * COMPACTION (cleanup.policy=compact), three steps so the heavy part runs off
 * the loop thread:
 *   1. ch_plog_clean_begin (loop): picks the closed segments, refs them and
 *      marks them `cleaning` (retention leaves them alone meanwhile).
 *   2. ch_plog_clean_run (worker): builds key -> last offset over them,
 *      writes for each source S a new <S>.log.cleaned (+ .index.cleaned,
 *      .timeindex.cleaned) keeping, per key, only its latest record, and
 *      dropping tombstones whose segment's largest timestamp is older than
 *      now - delete.retention.ms; fdatasyncs them. Reads only immutable
 *      closed segments and writes only its own files: no lock.
 *   3. ch_plog_clean_finish (loop): per segment, unlink the old indexes,
 *      rename .log.cleaned over .log, rename the new indexes, then swap the
 *      segment object in the array under the lock. A crash at any point
 *      leaves each segment either old or cleaned (both valid, same offsets
 *      kept) with indexes missing at worst, rebuilt on open; leftover
 *      *.cleaned files are removed on open. Readers holding the old segment
 *      keep reading the old file through its open fd.
 */
#ifndef CH_PLOG_H
#define CH_PLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log/ch_batch.h"
#include "log/ch_logfs.h"
#include "log/ch_seg.h"
#include "proto/generated/ch_errors.h"

/* Topic/broker configs, Kafka's names and defaults. */
typedef struct ch_plog_config {
	int64_t segment_bytes;        /* segment.bytes / log.segment.bytes: 1 GiB */
	int64_t segment_ms;           /* segment.ms / log.roll.ms: 7 days */
	int32_t index_interval_bytes; /* index.interval.bytes: 4096 */
	int64_t retention_ms;         /* retention.ms: 7 days; -1 = forever */
	int64_t retention_bytes;      /* retention.bytes: -1 = no limit */
	int64_t flush_messages;       /* flush.messages: INT64_MAX (never) */
	int64_t flush_ms;             /* flush.ms: INT64_MAX (never) */
	bool cleanup_delete;          /* cleanup.policy contains "delete" (default) */
	bool cleanup_compact;         /* cleanup.policy contains "compact" */
	int64_t delete_retention_ms;  /* delete.retention.ms: 1 day */
	bool log_append_time;         /* message.timestamp.type=LogAppendTime */
	int64_t ts_before_max_ms;     /* message.timestamp.before.max.ms: INT64_MAX */
	int64_t ts_after_max_ms;      /* message.timestamp.after.max.ms: 3600000 */
	int32_t max_message_bytes;    /* max.message.bytes: 1048588 */
	int32_t leader_epoch;         /* written into partitionLeaderEpoch */
} ch_plog_config;

void ch_plog_config_default(ch_plog_config *c);

typedef struct ch_plog ch_plog;

/* The directory of a partition's log, "<data_dir>/<topic>-<partition>"
 * (caller frees). */
char *ch_plog_dir_path(const char *data_dir, const char *topic, int32_t partition);

/*
 * Opens (creating if needed) <data_dir>/<topic>-<partition>/, recovering as
 * ch_seg.h describes. fs NULL: the real file system.
 * @returns CH_OK, or -errno of the failing step (logged) with *out NULL.
 * @locality loop thread
 */
int ch_plog_open(const char *data_dir, const char *topic, int32_t partition,
		 const ch_plog_config *cfg, ch_logfs *fs, int64_t now_ms, ch_plog **out);

/* Closes the files (no sync: call ch_plog_sync first for a clean stop). No
 * sync or clean may be running. @locality loop thread */
void ch_plog_close(ch_plog *pl);

/* Replaces the config (topic config change). @locality loop thread */
void ch_plog_set_config(ch_plog *pl, const ch_plog_config *cfg);

typedef struct ch_plog_append_info {
	int64_t base_offset;     /* offset assigned to the first record */
	int64_t last_offset;     /* offset of the last record */
	int64_t log_append_time; /* -1 unless LogAppendTime */
	int64_t log_start_offset;
	int32_t batches;
	int64_t records; /* offsets assigned */
	int64_t now_ms;  /* the clock the records were checked against */
} ch_plog_append_info;

/* A record of a producer's batch that Kafka's LogValidator refuses: its
 * index in the batch and why (INVALID_RECORD: no key on a compacted topic;
 * INVALID_TIMESTAMP: out of the timestamp window, or LogAppendTime set by
 * the producer). */
typedef enum ch_plog_record_why {
	CH_PLOG_REC_NO_KEY = 1,   /* INVALID_RECORD: compacted topic, null key */
	CH_PLOG_REC_TS_RANGE = 2, /* INVALID_TIMESTAMP: outside the window */
	CH_PLOG_REC_TS_TYPE = 3,  /* INVALID_TIMESTAMP: LogAppendTime from a producer */
} ch_plog_record_why;

typedef struct ch_plog_record_error {
	int32_t index;
	int16_t kerr;
	ch_plog_record_why why;
	int64_t offset;             /* the record's offset in the batch as sent */
	int64_t timestamp;          /* its timestamp */
	int32_t key_len, value_len; /* what Kafka's DefaultRecord.toString shows */
} ch_plog_record_error;

typedef void (*ch_plog_record_error_fn)(void *ud, const ch_plog_record_error *e);

/*
 * Kafka's record-by-record checks (LogValidator.validateRecord) of the
 * checked batch b (ch_batch_check): the records of a compressed batch are
 * inflated (bounded by CH_PLOG_MAX_INFLATE), each record is parsed, must
 * have offset delta 0, 1, 2, ..., a key on a compacted topic and, with
 * CreateTime, a timestamp within
 * [now - ts_before_max_ms, now + ts_after_max_ms]. fn (may be NULL) is
 * called for each record in error. *max_ts: the largest record timestamp.
 * @returns 0; CORRUPT_MESSAGE (does not inflate); INVALID_RECORD (a
 * malformed record, a count that does not match, a record in error);
 * INVALID_TIMESTAMP when any record's timestamp is in error (it wins, as in
 * Kafka's processRecordErrors).
 */
int16_t ch_plog_check_records(const ch_plog_config *cfg, const uint8_t *b, const ch_batch_hdr *h,
			      int64_t now_ms, int64_t *max_ts, ch_plog_record_error_fn fn,
			      void *ud);

/* A compressed batch may inflate to at most this (Kafka has no bound). */
#define CH_PLOG_MAX_INFLATE (64u << 20)

/*
 * Validates and appends the record batches in data[0..len) (one or more, as
 * a Produce request carries them). Rewrites in place: baseOffset,
 * partitionLeaderEpoch, and the timestamp type and maxTimestamp (and CRC):
 * LogAppendTime's, or with CreateTime the largest record timestamp, as
 * Kafka sets them.
 * Rolls a new segment first when segment.bytes or segment.ms says so.
 * Errors: CORRUPT_MESSAGE (bad CRC, framing, magic, a compressed batch that
 * does not inflate), INVALID_RECORD (bad header fields or records, a base
 * offset other than 0, a control batch; a record without key on a compacted
 * topic), INVALID_TIMESTAMP (ch_plog_check_records),
 * MESSAGE_TOO_LARGE (a batch over
 * max.message.bytes), RECORD_LIST_TOO_LARGE (more than a segment),
 * KAFKA_STORAGE_ERROR (I/O; the log is unchanged).
 * @locality loop thread
 */
int ch_plog_append(ch_plog *pl, uint8_t *data, size_t len, int64_t now_ms,
		   ch_plog_append_info *info, int16_t *kerr);

/*
 * A range of one segment file for a fetch response, to send with sendfile
 * (or pread). Holds a segment reference: release it when the bytes are sent.
 */
typedef struct ch_plog_slice {
	ch_seg *seg;          /* NULL when len == 0 */
	int fd;               /* the segment's .log */
	int64_t pos;          /* file position of the first batch */
	int64_t len;          /* bytes; 0 = nothing at this offset yet */
	int64_t first_offset; /* baseOffset of the first batch */
} ch_plog_slice;

/*
 * Reads from `offset`: the slice starts at the batch containing it and runs
 * for up to max_bytes within that segment (the last batch may be cut short,
 * as Kafka does; clients drop a partial trailing batch); if the first batch
 * alone is larger than max_bytes, the slice is that whole batch. offset ==
 * log end offset gives len 0. OFFSET_OUT_OF_RANGE outside [start, end].
 * @locality loop thread
 */
int ch_plog_read(ch_plog *pl, int64_t offset, int64_t max_bytes, ch_plog_slice *out, int16_t *kerr);
void ch_plog_slice_release(ch_plog_slice *s);

/* Convenience: ch_plog_read and pread into out (appended). For tests and
 * for replaying __consumer_offsets. @locality loop thread */
int ch_plog_read_copy(ch_plog *pl, int64_t offset, int64_t max_bytes, ch_buf *out, int16_t *kerr);

/* @locality loop thread */
int64_t ch_plog_start_offset(const ch_plog *pl);
int64_t ch_plog_end_offset(const ch_plog *pl); /* = high watermark */
int64_t ch_plog_size_bytes(const ch_plog *pl);
size_t ch_plog_segment_count(const ch_plog *pl);
int64_t ch_plog_active_base(const ch_plog *pl);

/*
 * ListOffsets by timestamp: the first offset whose record timestamp is >=
 * ts, and that record's timestamp. *offset = -1 when none. Record-level
 * within the batch found (compressed batches are decompressed for it); with
 * LogAppendTime every record has the batch's time, so its first offset.
 * @locality loop thread
 */
int ch_plog_offset_for_time(ch_plog *pl, int64_t ts, int64_t *offset, int64_t *found_ts,
			    int16_t *kerr);

/* ListOffsets -3 (KIP-734): offset and timestamp of the record with the
 * largest timestamp (first such); -1/-1 when the log is empty.
 * @locality loop thread */
int ch_plog_max_timestamp(ch_plog *pl, int64_t *offset, int64_t *ts, int16_t *kerr);

/*
 * ListOffsets v0 (Kafka's UnifiedLog.legacyFetchOffsetsBefore): segment
 * granularity. The candidates are each segment's base offset (the log start
 * offset when above it) with its .log file's modification time, then the
 * log end offset with now_ms if the active segment is not empty. ts -1
 * (latest) starts from the last candidate, -2 (earliest) from the first,
 * any other from the last whose time is <= ts; out gets up to max offsets
 * from there back to the first, newest first (*n of them; out must hold
 * ch_plog_segment_count() + 1). None when no candidate is old enough.
 * @locality loop thread
 */
int ch_plog_legacy_offsets(ch_plog *pl, int64_t ts, int32_t max, int64_t now_ms, int64_t *out,
			   int32_t *n, int16_t *kerr);

/*
 * Durability: fdatasync every segment with unsynced bytes (and the directory
 * after a roll), then raise the synced offset to the log end offset seen at
 * the start. Concurrent with appends and reads. At most one ch_plog_sync per
 * partition at a time. On failure the log is marked failed (see ERRORS).
 * @returns CH_OK / CH_ERR.
 * @locality any thread (meant for a worker)
 */
int ch_plog_sync(ch_plog *pl);

/* Offsets below this are durable. @locality any thread */
int64_t ch_plog_synced_offset(ch_plog *pl);

/* True when flush.messages or flush.ms say a sync is due; the caller then
 * schedules ch_plog_sync. Resets the flush.ms timer. @locality loop thread */
bool ch_plog_flush_due(ch_plog *pl, int64_t now_ms);
/* Failures that repeat per request (appends refused on a full disk, reads
 * failing) are logged in full once, then summarised at most every 10 s
 * (common/ch_ratelog.h); this writes the summaries that are due. Call it
 * now and then (the log manager's one-second tick). @locality loop
 * thread */
void ch_plog_log_tick(ch_plog *pl, int64_t now_mono_ms);

/* True after an unrecoverable storage error. @locality any thread */
bool ch_plog_failed(ch_plog *pl);

/*
 * Retention (cleanup.policy=delete): deletes whole closed segments, oldest
 * first, whose largest timestamp is older than now - retention.ms, or while
 * the log is larger than retention.bytes by at least the segment's size, or
 * that lie wholly below the log start offset.
 * Never the active segment, never one being cleaned. Advances the log start
 * offset. *deleted: segments removed.
 * @locality loop thread
 */
int ch_plog_retention(ch_plog *pl, int64_t now_ms, int *deleted, int16_t *kerr);

/*
 * DeleteRecords: moves the log start offset to before_offset (-1 = the end,
 * Kafka's high watermark), persisting the new start (log-start-offset,
 * fdatasynced) before reads below it are refused, and deleting segments
 * wholly below it. OFFSET_OUT_OF_RANGE for other negative offsets or past
 * the end; a start never moves back. In three steps, so that the fsync can
 * run on a worker:
 *   ch_plog_start_offset_check   validates, gives the target   (loop thread)
 *   ch_plog_start_offset_write   persists it: 0 or -errno      (any thread)
 *   ch_plog_start_offset_set     applies it, returns the new   (loop thread)
 *                                start (the low watermark)
 * ch_plog_delete_records does all three on the loop thread. At most one
 * write per partition at a time. Retention deletes any segment left wholly
 * below the start (a compaction held it).
 */
int ch_plog_start_offset_check(ch_plog *pl, int64_t before_offset, int64_t *target, int16_t *kerr);
int ch_plog_start_offset_write(ch_plog *pl, int64_t target);
int64_t ch_plog_start_offset_set(ch_plog *pl, int64_t target);
int ch_plog_delete_records(ch_plog *pl, int64_t before_offset, int64_t *low_watermark,
			   int16_t *kerr);

/* Compaction (see COMPACTION above). */
typedef struct ch_plog_clean ch_plog_clean;

/* NULL when there is nothing to clean (fewer than one closed segment, or a
 * clean already running). @locality loop thread */
ch_plog_clean *ch_plog_clean_begin(ch_plog *pl, int64_t now_ms);
/* The heavy part. @returns CH_OK / CH_ERR. @locality any thread */
int ch_plog_clean_run(ch_plog_clean *c);
/* Swaps in the result of a successful run (or discards a failed one); frees
 * c. @returns CH_OK / CH_ERR. @locality loop thread */
int ch_plog_clean_finish(ch_plog *pl, ch_plog_clean *c);
/* All three in a row, on the calling thread: tests and small logs. */
int ch_plog_compact(ch_plog *pl, int64_t now_ms);

#endif
