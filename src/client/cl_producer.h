/*
 * cl_producer.h: the producer's pure parts, shared by cl_producer*.c and
 * the unit tests: the partitioners (cl_producer_part.c) and the split of a
 * batch refused as too large (cl_producer_split.c).
 *
 * Keyed records go where Apache Kafka's Java producer puts them
 * (BuiltInPartitioner.partitionForKey: toPositive(murmur2(key)) % n), or
 * where librdkafka's partitioner of the same name does. Records without a
 * key are sticky (KIP-480): cl_producer.c keeps one partition per topic
 * until a new batch is needed there, then cl_part_sticky_next picks another.
 */
#ifndef CL_PRODUCER_H
#define CL_PRODUCER_H

#include <stddef.h>
#include <stdint.h>

#include "common/ch_buf.h"

/* The `partitioner` setting: librdkafka's names; murmur2_random is Java's
 * default partitioner for keyed records. */
typedef enum cl_partitioner {
	CL_PART_MURMUR2_RANDOM = 0, /* murmur2; no key: sticky */
	CL_PART_MURMUR2,            /* murmur2; no key: murmur2 of "" */
	CL_PART_CONSISTENT_RANDOM,  /* CRC-32 (zlib's); empty or no key: sticky */
	CL_PART_CONSISTENT,         /* CRC-32; no key: CRC-32 of "" */
	CL_PART_FNV1A_RANDOM,       /* |FNV-1a 32 as int32| % n; no key: sticky */
	CL_PART_FNV1A,              /* FNV-1a 32; no key: FNV-1a of "" */
	CL_PART_RANDOM,             /* always sticky, keys ignored */
} cl_partitioner;

/* The name's partitioner, or -1. */
int cl_partitioner_by_name(const char *s, size_t n);
const char *cl_partitioner_name(cl_partitioner p);

/* Kafka's Utils.murmur2 (seed 0x9747b28c), as a signed Java int. */
int32_t cl_murmur2(const void *key, size_t len);
/* librdkafka's rd_fnv1a: FNV-1a 32-bit. */
uint32_t cl_fnv1a(const void *key, size_t len);

/*
 * The partition of a keyed record among nparts (> 0) partitions, or -1
 * when this partitioner puts the record on the sticky partition (no key
 * with a *_random partitioner, any record with random). key NULL: no key.
 */
int32_t cl_part_for_key(cl_partitioner p, const void *key, size_t len, int32_t nparts);

/*
 * KIP-480's next sticky partition: a random one among the avail[0..navail)
 * partitions with a leader (all nparts when none has one), other than prev
 * when there is a choice. *rng is the caller's xorshift state (non-zero).
 */
int32_t cl_part_sticky_next(const int32_t *avail, int32_t navail, int32_t nparts, int32_t prev,
			    uint64_t *rng);

/* One partition's record batch in a Produce request. */
typedef struct cl_produce_part {
	const char *topic; /* parts of one topic share this pointer */
	int32_t partition;
	const uint8_t *records;
	size_t len;
} cl_produce_part;

struct ch_batch_builder;
/* A new piece of a split batch whose first record is the refused batch's
 * record `first`, at timestamp ts: the builder, begun by the caller with
 * base timestamp ts, that its records go into; NULL stops the split. */
typedef struct ch_batch_builder *(*cl_split_piece_fn)(void *ud, int32_t first, int64_t ts);

/*
 * Java's ProducerBatch.split: the records of the sealed v2 batch
 * [batch, batch + len) (compressed or not; decompressed within
 * max_inflate bytes) added in order to new pieces, each record with its
 * timestamp, key, value and headers, offset deltas from 0 in each piece.
 * A piece ends before the record that would take it past limit bytes
 * (header and the records' sizes in the refused batch) and holds at least
 * one record; there are at least two pieces. The caller seals them (codec,
 * producer id, epoch, sequence).
 * @returns the number of pieces, or -1: fewer than two records, a
 * malformed batch, or piece() or a builder's buffer out of memory (the
 * pieces begun are the caller's to free).
 */
int32_t cl_batch_split(const uint8_t *batch, size_t len, size_t limit, size_t max_inflate,
		       cl_split_piece_fn piece, void *ud);

/* The base sequence of a piece whose first record is the refused batch's
 * record `first`: base_seq + first, wrapping past INT32_MAX to 0 as
 * sequences do; -1 (no idempotence) stays -1. */
int32_t cl_split_seq(int32_t base_seq, int32_t first);

struct cl_client;
/*
 * The body of a ProduceRequest (version 3+, no transactional id) of
 * parts[0..n), grouped by topic in first-seen order: the generated
 * encoder's bytes, but each batch goes in through cl_request_ref (sent
 * from where it is while c frames a request that has an answer, else
 * copied), so the batches must stay unchanged until the request's
 * callback has run.
 */
void cl_produce_encode(struct cl_client *c, ch_buf *out, int16_t version, int16_t acks,
		       int32_t timeout_ms, const cl_produce_part *parts, int32_t n);

#endif