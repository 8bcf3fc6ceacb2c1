/*
 * ch_producer_state: what one partition knows of its idempotent producers
 * (KIP-98), Kafka's ProducerStateManager without transactions, and the
 * allocation of producer ids (Kafka's ProducerIdManager).
 *
 * Per producer id: its epoch, the max timestamp of its last batch, and the
 * sequence ranges and offsets of its last five batches (Kafka keeps five, as many as a producer may have in
 * flight). The append path checks a batch against it
 * (ch_producer_state_check) before the append and records it
 * (ch_producer_state_update) after:
 *
 *   producer unknown to the partition     accepted at any sequence
 *   epoch older than the known one        INVALID_PRODUCER_EPOCH
 *   epoch newer                           sequence must be 0, else
 *                                         OUT_OF_ORDER_SEQUENCE_NUMBER
 *   same epoch, a range of the last five  a duplicate: not appended, the
 *                                         original's offsets answered
 *   same epoch, not last sequence + 1     OUT_OF_ORDER_SEQUENCE_NUMBER
 *
 * Sequences wrap from INT32_MAX to 0, as Kafka's do.
 *
 * EXPIRY (producer.id.expiration.ms, Kafka's default 86400000): a producer
 * whose last batch's max timestamp is that old is forgotten by
 * ch_producer_state_expire, which the log manager runs every
 * CH_PRODUCER_EXPIRATION_CHECK_MS (Kafka's
 * producer.id.expiration.check.interval.ms default), as Kafka's
 * ProducerStateManager.removeExpiredProducers does. Like Kafka, the age is
 * that of the batch's timestamp (the client's CreateTime, or the broker's
 * LogAppendTime), not of the moment the broker saw it: the same rule then
 * holds after a restart, when the state comes back from the log. A
 * forgotten producer is unknown again (its next batch is accepted at any
 * sequence).
 *
 * NOT PERSISTED. The state is not written to disk (Kafka writes snapshots):
 * when a partition is opened, ch_producer_state_rebuild replays the batch
 * headers of the last CH_PRODUCER_STATE_TAIL_BYTES of its log, so a batch
 * retried across a restart is still recognised as a duplicate. Producers
 * seen only further back are unknown again (accepted at any sequence).
 *
 * LOOKUP: a ch_map keyed by the 8 bytes of the producer id, so a check costs
 * the same with one producer or a hundred thousand, in front of it the
 * entry found last (a partition usually hears from one producer at a time).
 *
 * @locality the loop thread (the partition's owner).
 */
#ifndef CH_PRODUCER_STATE_H
#define CH_PRODUCER_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/ch_map.h"
#include "log/ch_batch.h"
#include "log/ch_plog.h"

/* Kafka keeps the last five batches per producer. */
#define CH_PRODUCER_BATCHES 5
/* How often the log manager expires producers (Kafka's default of its
 * internal producer.id.expiration.check.interval.ms). */
#define CH_PRODUCER_EXPIRATION_CHECK_MS 600000
/* How much of a log's tail is replayed to rebuild the state at open. */
#define CH_PRODUCER_STATE_TAIL_BYTES (8 << 20)

/* One batch of a producer, as remembered. */
typedef struct ch_producer_batch {
	int32_t first_seq, last_seq;
	int64_t base_offset, last_offset;
} ch_producer_batch;

typedef struct ch_producer_state {
	ch_map producers; /* 8-byte producer id -> its entry */
	void *last;       /* the entry found last: most partitions see one producer */
} ch_producer_state;

void ch_producer_state_init(ch_producer_state *ps);
void ch_producer_state_free(ch_producer_state *ps);
/* Producers known. */
size_t ch_producer_state_count(const ch_producer_state *ps);

/* ch_producer_state_check's answer for a duplicate (not a Kafka code). */
#define CH_PRODUCER_DUPLICATE (-1)
/* Checks a batch header (producer_id >= 0) against the state: 0 to append,
 * a Kafka error code, or CH_PRODUCER_DUPLICATE with the original in *dup. */
int ch_producer_state_check(ch_producer_state *ps, const ch_batch_hdr *h, ch_producer_batch *dup);
/* Records an appended batch (its header as stored: offsets assigned). */
void ch_producer_state_update(ch_producer_state *ps, const ch_batch_hdr *h);
/* Forgets every producer whose last batch's max timestamp is
 * expiration_ms or more before now_ms (wall clock). @returns how many. */
size_t ch_producer_state_expire(ch_producer_state *ps, int64_t now_ms, int64_t expiration_ms);
/* Rebuilds the state from the batch headers of the last tail_bytes of pl
 * (read, parsed, never decompressed), oldest first. @returns the batches
 * read. */
int64_t ch_producer_state_rebuild(ch_producer_state *ps, ch_plog *pl, int64_t tail_bytes);

/* ---- producer ids ------------------------------------------------------------ */

/* Fresh ids for InitProducerId: unique for the life of the data directory
 * (seeded from the wall clock in microseconds at startup, so ids do not
 * repeat across restarts; one node, so no block allocation as in Kafka). */
typedef struct ch_producer_ids {
	int64_t next;
} ch_producer_ids;

void ch_producer_ids_init(ch_producer_ids *ids, int64_t wall_ms);
int64_t ch_producer_ids_next(ch_producer_ids *ids);

#endif
