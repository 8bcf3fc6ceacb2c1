/*
 * ch_partition: one topic-partition of this broker (Kafka's Partition with
 * the part of UnifiedLog above the segments): its log (ch_plog), the one
 * append path that Produce and the group coordinator share, replay, fetch
 * watches and DeleteRecords. Partitions are opened, looked up and retired
 * by the log manager (ch_log_manager.h), which also runs their fsyncs
 * (group commit); handlers get them from ch_log_manager_get.
 *
 * @locality the loop thread.
 */
#ifndef CH_PARTITION_H
#define CH_PARTITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ch_uuid.h"
#include "log/ch_batch.h"
#include "log/ch_plog.h"

typedef struct ch_part ch_part;

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
 * checks idempotent producers' id/epoch/sequence (ch_producer_state.h),
 * appends, wakes the partition's watchers, applies the flush policy, and
 * with durable != NULL parks (durable, ud) until the data is fsynced.
 *
 * A batch that repeats one of its producer's last five is a duplicate:
 * nothing is appended, the result is 0 with the original offsets in *info
 * (Kafka's answer since 2.x) and `durable` is still called once the
 * original is durable.
 *
 * @returns 0 with *info filled, or a Kafka error code (durable not called).
 */
int16_t ch_part_append(ch_part *p, uint8_t *data, size_t len, ch_part_durable_fn durable, void *ud,
		       ch_plog_append_info *info);

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

/* ---- watching for new data (Fetch long polling) --------------------------- */

enum {
	CH_PART_EV_APPEND = 1,
	CH_PART_EV_GONE = 2
};

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

#endif
