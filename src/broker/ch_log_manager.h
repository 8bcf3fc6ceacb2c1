/*
 * ch_log_manager: the partition logs of this broker (Kafka's LogManager and
 * the scheduling half of its LogCleaner). Owns one ch_part
 * (ch_partition.h) per topic-partition of the topic registry and decides
 * when the work around the logs runs: opening and recovery, lookups,
 * deletion, each log's configuration, the fsyncs (group commit and the
 * flush policy), retention and compaction. The blocking work runs on the
 * manager's worker pool (common/ch_workers.h), which the topic registry's
 * writes share (ch_log_manager_workers).
 *
 * LIFECYCLE. A partition is opened lazily the first time it is looked up
 * (ch_log_manager_get / _find) when the registry says it exists;
 * ch_log_manager_open_all opens (and so recovers) every partition at
 * startup. Topics created or grown need no call: the next lookup opens the
 * new partitions. A deleted topic: call ch_log_manager_topic_deleted
 * (closes the logs after their pending syncs, fails their waiters with
 * UNKNOWN_TOPIC_OR_PARTITION and removes their directories). A lookup also
 * notices a topic that was deleted and re-created under the same name (the
 * topic id changed) and treats the old logs as deleted. A log that cannot
 * be opened is tried again at each lookup; the failures are logged once,
 * then summarised (common/ch_ratelog.h).
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
 * CONFIGURATION. Each log's ch_plog_config is resolved from the topic's
 * overrides over the broker's settings (ch_topic_config_resolve).
 * AlterConfigs and IncrementalAlterConfigs apply a change at once through
 * ch_log_manager_configs_changed; the retention pass resolves them again
 * too.
 *
 * HOUSEKEEPING, on a timer every second: the flush policy (flush.ms) and
 * the summaries of logs failing to open or write; every
 * log.retention.check.interval.ms: configs re-resolved, retention on
 * cleanup.policy=delete logs, and a compaction started on the pool for
 * cleanup.policy=compact logs with a segment closed since their last one
 * (at most one per log at a time, no more often than log.cleaner.backoff.ms,
 * and once more after delete.retention.ms for the tombstones it kept);
 * every CH_PRODUCER_EXPIRATION_CHECK_MS: producers idle for
 * producer.id.expiration.ms are forgotten (ch_producer_state.h).
 *
 * @locality the loop thread.
 */
#ifndef CH_LOG_MANAGER_H
#define CH_LOG_MANAGER_H

#include <stddef.h>
#include <stdint.h>

#include "broker/ch_partition.h"
#include "common/ch_hist.h"
#include "log/ch_logfs.h"

struct ch_config;
struct ch_topics;
struct ch_loop;
struct ch_workers;

typedef struct ch_log_manager ch_log_manager;

/* Creates the manager. cfg and topics must outlive it. Starts the worker
 * threads and the housekeeping timer. */
ch_log_manager *ch_log_manager_new(struct ch_loop *loop, const struct ch_config *cfg,
				   struct ch_topics *topics);
/* Tests: the file layer that logs opened from now on use (fault injection,
 * ch_logfs.h). NULL: the real file system, the default. fs must outlive
 * the logs. */
void ch_log_manager_set_logfs(ch_log_manager *lm, ch_logfs *fs);
/* The worker pool, for other blocking work of the broker (the topic
 * registry's writes, ch_topics_exec); its completions run on the loop
 * thread. ch_log_manager_free waits for them. */
struct ch_workers *ch_log_manager_workers(ch_log_manager *lm);
/* Opens every partition of every topic (recovery at startup). Partitions
 * that fail to open are logged and retried at their next lookup.
 * @returns how many failed. */
int ch_log_manager_open_all(ch_log_manager *lm);
/* Clean stop: lets queued work finish, delivers its completions, answers
 * watchers (CH_PART_EV_GONE), fails waiters still parked
 * (NOT_LEADER_OR_FOLLOWER), syncs and closes every log, stops the threads.
 * The loop must still exist; call after the loop stopped running. */
void ch_log_manager_free(ch_log_manager *lm);

/* The partition, opened if needed; NULL with *kerr = UNKNOWN_TOPIC_OR_PARTITION
 * if the registry has no such partition, or KAFKA_STORAGE_ERROR if the log
 * cannot be opened. */
ch_part *ch_log_manager_get(ch_log_manager *lm, const char *topic, size_t topic_len,
			    int32_t partition, int16_t *kerr);
/* The same for a NUL-terminated name; NULL with *open_errno 0 if the
 * registry has no such partition, or the errno of the failed open. */
ch_part *ch_log_manager_find(ch_log_manager *lm, const char *topic, int32_t partition,
			     int *open_errno);

/* The registry deleted this topic (call once the deletion is durable). */
void ch_log_manager_topic_deleted(ch_log_manager *lm, const char *topic, size_t topic_len);
/* Topic configs changed (AlterConfigs): the logs of that topic, or of
 * every topic when topic is NULL (broker configs), use them from now on. */
void ch_log_manager_configs_changed(ch_log_manager *lm, const char *topic, size_t topic_len);

/*
 * For the group coordinator: append the batch(es) in data[0..len) to
 * `topic` partition `partition` (normally __consumer_offsets, looked up and
 * opened as needed) and call cb(ud, kerr, base, last) on the loop thread
 * once they are durable or failed. cb is called exactly once and never
 * before this function returns (an immediate error is posted). data is
 * rewritten in place and not kept after the call returns.
 */
void ch_log_manager_append_durable(ch_log_manager *lm, const char *topic, int32_t partition,
				   uint8_t *data, size_t len, ch_part_durable_fn cb, void *ud);

/* Forgets, in every partition, the producers whose last batch is
 * producer.id.expiration.ms old at wall-clock time now_ms (the housekeeping
 * tick calls it; tests call it with a time of their choosing).
 * @returns how many. */
size_t ch_log_manager_expire_producers(ch_log_manager *lm, int64_t now_ms);

/* A fresh producer id for InitProducerId (ch_producer_ids, in
 * ch_producer_state.h). */
int64_t ch_log_manager_next_producer_id(ch_log_manager *lm);

/* Counters for logs, tests and the bench. */
typedef struct ch_log_manager_stats {
	uint64_t syncs;           /* fdatasync rounds (ch_plog_sync calls) */
	uint64_t durable_waiters; /* waiters released by them */
	uint64_t cleanings;
	uint64_t retention_deleted;
	uint64_t producers_expired;
	ch_hist fsync; /* each fdatasync's duration (measured on the worker) */
} ch_log_manager_stats;
ch_log_manager_stats ch_log_manager_get_stats(const ch_log_manager *lm);

#endif
