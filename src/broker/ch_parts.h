/*
 * ch_parts: the partition manager. Owns one ch_plog per topic-partition of
 * the topic registry and everything that runs around the logs: the fsync
 * workers (group commit), the flush policy for acks=0/1, the retention
 * timer and background compaction. Produce and the group coordinator append
 * through the same path (ch_part_append); Fetch watches partitions for new
 * data (ch_part_watch).
 *
 * LIFECYCLE. A partition is opened lazily the first time it is looked up
 * (ch_parts_get / ch_parts_find) when the registry says it exists;
 * ch_parts_open_all opens (and so recovers) every partition at startup.
 * Topics created or grown need no call: the next lookup opens the new
 * partitions. A deleted topic: call ch_parts_topic_deleted (closes the logs
 * after their pending syncs, fails their waiters with
 * UNKNOWN_TOPIC_OR_PARTITION and removes their directories). A lookup also
 * notices a topic that was deleted and re-created under the same name (the
 * topic id changed) and treats the old logs as deleted.
 *
 * GROUP COMMIT. ch_part_append with a `durable` callback parks a waiter
 * (last offset, cb) on the partition and queues the partition for a sync on
 * the worker pool if no sync of it is queued or running. When the sync
 * returns (on the loop thread, via ch_loop_post), every waiter with last
 * offset < ch_plog_synced_offset is called with 0; if waiters remain
 * (appended while the sync ran) one more sync is queued. So one fdatasync
 * covers every append made while the previous one was running, whichever
 * producer (or the coordinator) made it. A failed sync calls every waiter
 * with KAFKA_STORAGE_ERROR (56). Syncs of different partitions run in
 * parallel on the pool's threads; one partition has at most one at a time.
 *
 * FLUSH POLICY (acks=0/1): after each append, and on the housekeeping tick,
 * ch_plog_flush_due (flush.messages / flush.ms) may queue a sync with no
 * waiter. Defaults never flush: durability of acks=1 is the page cache, as
 * in Kafka.
 *
 * HOUSEKEEPING, on a timer every log.retention.check.interval.ms (and every
 * second for flush.ms): topic configs are re-resolved (AlterConfigs applies
 * them at once, ch_parts_configs_changed), retention runs on
 * cleanup.policy=delete logs, and a
 * compaction is started on the pool for cleanup.policy=compact logs with at
 * least one closed segment, at most one per log and no more often than
 * log.cleaner.backoff.ms per log.
 *
 * @locality everything on the loop thread, except where noted.
 */
#ifndef CH_PARTS_H
#define CH_PARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ch_uuid.h"
#include "config/ch_config.h" /* before ch_batch.h: both name CH_COMPRESSION_* */
#include "log/ch_batch.h"
#include "log/ch_plog.h"
#include "proto/generated/ch_errors.h"

struct ch_config;
struct ch_topics;
struct ch_loop;

typedef struct ch_parts ch_parts;
typedef struct ch_part ch_part;

/* Creates the manager. cfg and topics must outlive it. Starts the worker
 * threads and the housekeeping timer. */
ch_parts *ch_parts_new(struct ch_loop *loop, const struct ch_config *cfg,
		       struct ch_topics *topics);
/* Tests: the file layer that logs opened from now on use (fault injection,
 * ch_logfs.h). NULL: the real file system, the default. fs must outlive
 * the logs. */
void ch_parts_set_logfs(ch_parts *ps, ch_logfs *fs);
/* Runs work(arg) on a worker thread, then done(arg) on the loop thread (the
 * topic registry's writes, ch_topics_exec). ch_parts_free waits for it. */
void ch_parts_run(ch_parts *ps, void (*work)(void *arg), void (*done)(void *arg), void *arg);
/* Opens every partition of every topic (recovery at startup). Partitions
 * that fail to open are logged and retried at their next lookup.
 * @returns how many failed. */
int ch_parts_open_all(ch_parts *ps);
/* Clean stop: lets queued syncs finish, delivers their completions, answers
 * watchers (CH_PART_EV_GONE), fails waiters still parked, syncs and closes
 * every log, stops the threads. The loop must still exist; call after the
 * loop stopped running. */
void ch_parts_free(ch_parts *ps);

/* The partition, opened if needed; NULL with *kerr = UNKNOWN_TOPIC_OR_PARTITION
 * if the registry has no such partition, or KAFKA_STORAGE_ERROR if the log
 * cannot be opened. */
ch_part *ch_parts_get(ch_parts *ps, const char *topic, size_t topic_len, int32_t partition,
		      int16_t *kerr);
/* The same for a NUL-terminated name; NULL with *open_errno 0 if the
 * registry has no such partition, or the errno of the failed open. */
ch_part *ch_parts_find(ch_parts *ps, const char *topic, int32_t partition, int *open_errno);

/* The registry deleted this topic (call once the deletion is durable). */
void ch_parts_topic_deleted(ch_parts *ps, const char *topic, size_t topic_len);

/* ---- one partition ------------------------------------------------------- */

ch_plog *ch_part_log(ch_part *p);
const char *ch_part_topic(const ch_part *p);
int32_t ch_part_index(const ch_part *p);
ch_uuid ch_part_topic_id(const ch_part *p);

/* Called on the loop thread when an appended range is durable (kerr 0), or
 * could not be made durable (KAFKA_STORAGE_ERROR, or
 * UNKNOWN_TOPIC_OR_PARTITION if the topic was deleted meanwhile, NOT_LEADER
 * at shutdown). base/last: the offsets of the append. */
typedef void (*ch_part_durable_fn)(void *ud, int16_t kerr, int64_t base_offset,
				   int64_t last_offset);

/*
 * THE append path (Produce and the coordinator): validates the batches in
 * data[0..len) (rewritten in place: offsets, leader epoch, LogAppendTime),
 * checks idempotent producers' id/epoch/sequence (see below), appends, wakes
 * the partition's watchers, applies the flush policy, and with durable !=
 * NULL parks (durable, ud) until the data is fsynced.
 *
 * Idempotence (producerId >= 0): per producer the epoch and the last five
 * batches' sequence ranges are kept. A batch that repeats one of them is a
 * duplicate: nothing is appended, the result is 0 with the original offsets
 * in *info (Kafka's answer since 2.x) and `durable` is still called once the
 * original is durable. An older epoch is INVALID_PRODUCER_EPOCH, a gap in the
 * sequence (or a new epoch not starting at 0) OUT_OF_ORDER_SEQUENCE_NUMBER.
 * A producer unknown to the partition (new, or last seen too far back) is
 * accepted at any sequence. The state is not written to disk: when a
 * partition is opened it is rebuilt from the batch headers in the last
 * 8 MiB of its log (Kafka rebuilds it from snapshots and the log), so a
 * batch retried across a restart is still recognised as a duplicate.
 *
 * @returns 0 with *info filled, or a Kafka error code (durable not called).
 */
int16_t ch_part_append(ch_part *p, uint8_t *data, size_t len, ch_part_durable_fn durable,
		       void *ud, ch_plog_append_info *info);

/*
 * For the group coordinator: append the batch(es) in data[0..len) to
 * `topic` partition `partition` (normally __consumer_offsets, looked up and
 * opened as needed) and call cb(ud, kerr, base, last) on the loop thread
 * once they are durable or failed. cb is called exactly once and never
 * before this function returns (an immediate error is posted). data is
 * rewritten in place and not kept after the call returns.
 */
void ch_parts_append_durable(ch_parts *ps, const char *topic, int32_t partition,
			     uint8_t *data, size_t len, ch_part_durable_fn cb, void *ud);

/*
 * Replay (the coordinator at startup): calls fn for every record of every
 * batch of the partition from offset `from` (use 0 or the log start) to the
 * current end, in offset order, decompressing as needed. `h` is the batch
 * header (control batches included: check CH_BATCH_ATTR_CONTROL), `offset`
 * and `timestamp` are the record's absolute ones. fn returns 0 to go on,
 * anything else to stop (that value is returned).
 * @returns 0 at the end, fn's non-zero value, or -1 on a read error or a
 * corrupt batch (*kerr set).
 */
typedef int (*ch_part_record_fn)(void *ud, const ch_batch_hdr *h, const ch_record *rec,
				 int64_t offset, int64_t timestamp);
int ch_part_replay(ch_part *p, int64_t from, ch_part_record_fn fn, void *ud, int16_t *kerr);

/*
 * DeleteRecords (Kafka's Partition.deleteRecordsOnLeader): moves the log
 * start offset to before (-1: the high watermark), durably (the fsync runs
 * on a worker; one write per partition at a time, covering every request
 * waiting), deleting the segments wholly below it. cb(ud, kerr, low
 * watermark) on the loop thread, at once when nothing moves (before is at
 * or below the start). Errors: POLICY_VIOLATION (cleanup.policy without
 * delete), OFFSET_OUT_OF_RANGE (other negative offsets, or past the end),
 * KAFKA_STORAGE_ERROR, UNKNOWN_TOPIC_OR_PARTITION (deleted meanwhile).
 */
typedef void (*ch_part_lso_fn)(void *ud, int16_t kerr, int64_t low_watermark);
void ch_part_delete_records(ch_part *p, int64_t before, ch_part_lso_fn cb, void *ud);

/* Topic configs changed (AlterConfigs): the logs of that topic, or of
 * every topic when topic is NULL (broker configs), use them from now on. */
void ch_parts_configs_changed(ch_parts *ps, const char *topic, size_t topic_len);

/* ---- watching for new data (Fetch long polling) --------------------------- */

enum { CH_PART_EV_APPEND = 1, CH_PART_EV_GONE = 2 };

typedef struct ch_part_watch ch_part_watch;
struct ch_part_watch {
	ch_part_watch *prev, *next; /* private */
	ch_part *part;              /* NULL once removed or the partition is gone */
	/* Called after every append (ev APPEND) and once when the partition
	 * goes away (ev GONE; the watch is already unlinked). Must not add or
	 * remove watches of this partition: arm a timer instead. */
	void (*fn)(ch_part_watch *w, int ev);
	void *ud;
};

void ch_part_watch_add(ch_part *p, ch_part_watch *w);
void ch_part_watch_remove(ch_part_watch *w); /* idempotent */
/* Bytes appended since the partition was opened (grows monotonically). */
uint64_t ch_part_appended_bytes(const ch_part *p);

/* ---- producer ids ----------------------------------------------------------- */

/* A fresh producer id for InitProducerId: unique for the life of the data
 * directory (seeded from the wall clock in microseconds at startup). */
int64_t ch_parts_next_producer_id(ch_parts *ps);

/* Counters for logs, tests and the bench. */
typedef struct ch_parts_stats {
	uint64_t syncs;           /* fdatasync rounds (ch_plog_sync calls) */
	uint64_t durable_waiters; /* waiters released by them */
	uint64_t cleanings;
	uint64_t retention_deleted;
} ch_parts_stats;
ch_parts_stats ch_parts_get_stats(const ch_parts *ps);

#endif
