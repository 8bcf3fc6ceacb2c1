/*
 * ch_batch: Kafka record batches, magic v2 (KIP-98), as they travel in a
 * Produce request and as they sit, unchanged, in a segment file.
 *
 * Everything here takes untrusted bytes: every length is checked before use,
 * a malformed batch is an error code, never a crash. Nothing allocates except
 * the builder (ch_buf) and the decompressor.
 *
 * RECORD BATCH (all integers big-endian)
 *
 *   OFFSET  SIZE  FIELD
 *   0       8     baseOffset            assigned by the broker on append
 *   8       4     batchLength           bytes after this field (total = 12 + len)
 *   12      4     partitionLeaderEpoch  set by the broker; not under the CRC
 *   16      1     magic                 2
 *   17      4     crc                   CRC-32C of bytes [21, end)
 *   21      2     attributes            see below
 *   23      4     lastOffsetDelta       last record's offset - baseOffset
 *   27      8     baseTimestamp         first record's timestamp (or delete
 *                                       horizon if bit 6 is set, KIP-534)
 *   35      8     maxTimestamp          largest record timestamp, or the log
 *                                       append time when bit 3 is set
 *   43      8     producerId            -1 if not idempotent
 *   51      2     producerEpoch
 *   53      4     baseSequence
 *   57      4     recordsCount
 *   61      *     records               compressed as a whole if bits 0-2 != 0
 *
 *   attributes: bits 0-2 compression (0 none, 1 gzip, 2 snappy, 3 lz4,
 *   4 zstd), bit 3 timestamp type (1 = LogAppendTime), bit 4 transactional,
 *   bit 5 control batch, bit 6 has delete horizon. Other bits must be zero.
 *
 * Because the CRC starts at attributes, the broker rewrites baseOffset and
 * partitionLeaderEpoch without recomputing it. LogAppendTime changes
 * attributes and maxTimestamp, so it does recompute it.
 *
 * RECORD (inside the records section, varints are zig-zag, Kafka's varint)
 *
 *   length          varint  bytes of the record after this field
 *   attributes      int8    unused, 0
 *   timestampDelta  varlong timestamp - baseTimestamp
 *   offsetDelta     varint  offset - baseOffset
 *   keyLength       varint  -1 = null key
 *   key             bytes
 *   valueLength     varint  -1 = null value (a tombstone)
 *   value           bytes
 *   headersCount    varint
 *   headers         [ keyLength varint, key, valueLength varint, value ]
 */
#ifndef CH_BATCH_H
#define CH_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ch_compression.h"
#include "common/ch_buf.h"
#include "proto/ch_rd.h"

#define CH_BATCH_HDR_SIZE 61     /* bytes before the first record */
#define CH_BATCH_LOG_OVERHEAD 12 /* baseOffset + batchLength */
#define CH_BATCH_CRC_START 21    /* the CRC covers [21, end) */
#define CH_BATCH_MAGIC 2

#define CH_BATCH_ATTR_COMPRESSION 0x07
#define CH_BATCH_ATTR_LOG_APPEND_TIME 0x08
#define CH_BATCH_ATTR_TRANSACTIONAL 0x10
#define CH_BATCH_ATTR_CONTROL 0x20
#define CH_BATCH_ATTR_DELETE_HORIZON 0x40
#define CH_BATCH_ATTR_KNOWN 0x7f

/* Codec numbers (attributes bits 0-2): common/ch_compression.h. */

/* Why a batch was rejected. ESHORT alone means "could be a torn write": the
 * bytes end inside the batch; the others mean the bytes are wrong. */
typedef enum ch_batch_err {
	CH_BATCH_OK = 0,
	CH_BATCH_ESHORT = 1,   /* input ends before the batch does */
	CH_BATCH_ELENGTH = 2,  /* batchLength too small or over the limit */
	CH_BATCH_EMAGIC = 3,   /* magic != 2 (old message formats) */
	CH_BATCH_ECRC = 4,     /* CRC-32C mismatch */
	CH_BATCH_EINVALID = 5, /* header fields inconsistent */
	CH_BATCH_ERECORDS = 6, /* records malformed (uncompressed batches) */
} ch_batch_err;

const char *ch_batch_err_str(int err);

typedef struct ch_batch_hdr {
	int64_t base_offset;
	int32_t batch_length;
	int32_t partition_leader_epoch;
	int8_t magic;
	uint32_t crc;
	int16_t attributes;
	int32_t last_offset_delta;
	int64_t base_timestamp;
	int64_t max_timestamp;
	int64_t producer_id;
	int16_t producer_epoch;
	int32_t base_sequence;
	int32_t records_count;
} ch_batch_hdr;

static inline int
ch_batch_compression(const ch_batch_hdr *h)
{
	return h->attributes & CH_BATCH_ATTR_COMPRESSION;
}

static inline int64_t
ch_batch_size(const ch_batch_hdr *h)
{
	return (int64_t)CH_BATCH_LOG_OVERHEAD + h->batch_length;
}

static inline int64_t
ch_batch_last_offset(const ch_batch_hdr *h)
{
	return h->base_offset + h->last_offset_delta;
}

/*
 * Decodes the 61-byte header at p (len bytes available) without checking the
 * CRC. Checks magic and that batchLength covers at least the header and at
 * most max_size - 12 (max_size <= 0: no limit beyond INT32_MAX).
 * @returns ch_batch_err; ESHORT if len < 61 (or < 17 to see the magic).
 */
int ch_batch_parse_hdr(const uint8_t *p, size_t len, int64_t max_size, ch_batch_hdr *h);

/* CRC-32C over [21, size) of a batch of `size` bytes (size >= 61). */
uint32_t ch_batch_compute_crc(const uint8_t *p, size_t size);

/*
 * Full validation of the batch at p: header as ch_batch_parse_hdr, the whole
 * batch present, CRC, field consistency, and for uncompressed batches every
 * record parsed within bounds with offset deltas 0..count-1 as a producer
 * sends them (strict_producer) or increasing and <= lastOffsetDelta (as the
 * log cleaner leaves them). On success *h is filled and the batch size is
 * ch_batch_size(h).
 */
int ch_batch_check(const uint8_t *p, size_t len, int64_t max_size, bool strict_producer,
		   ch_batch_hdr *h);

/* In-place rewrites (p points at a whole batch). */
void ch_batch_set_base_offset(uint8_t *p, int64_t base_offset);
void ch_batch_set_leader_epoch(uint8_t *p, int32_t epoch);
/* Sets the LogAppendTime bit and maxTimestamp = ts, recomputes the CRC. */
void ch_batch_set_log_append_time(uint8_t *p, size_t size, int64_t ts);
/* Clears the LogAppendTime bit and sets maxTimestamp = max_ts (CRC
 * recomputed only when something changed). */
void ch_batch_set_create_time(uint8_t *p, size_t size, int64_t max_ts);

/* One record of an uncompressed (or decompressed) records section. Slices
 * point into the input. */
typedef struct ch_record {
	int8_t attributes;
	int64_t timestamp_delta;
	int32_t offset_delta;
	ch_bytes key;   /* len -1: null */
	ch_bytes value; /* len -1: null (tombstone) */
	int32_t headers_count;
	const uint8_t *headers; /* raw encoded headers (after the count) */
	size_t headers_len;
} ch_record;

typedef struct ch_record_iter {
	ch_rd rd;
	int32_t left; /* records still to read */
	int err;      /* ch_batch_err, sticky */
} ch_record_iter;

void ch_record_iter_init(ch_record_iter *it, const uint8_t *records, size_t len, int32_t count);
/* @returns 1 with *rec filled, 0 at the end (it->err set if the section was
 * malformed or had trailing bytes), -1 on a malformed record. */
int ch_record_next(ch_record_iter *it, ch_record *rec);

/*
 * Records of a batch, decompressed when needed: *out points either into the
 * batch (uncompressed) or into `scratch` (decompressed; caller frees the
 * buffer). max_out bounds the decompressed size (a zip bomb is an error).
 * @returns CH_OK, or CH_ERR (unsupported codec, corrupt data, too large).
 */
int ch_batch_records(const uint8_t *batch, const ch_batch_hdr *h, ch_buf *scratch, size_t max_out,
		     const uint8_t **out, size_t *out_len);

/*
 * Builder: writes a v2 batch into a ch_buf (tests, the log cleaner, and the
 * coordinator's own records).
 */
typedef struct ch_batch_builder {
	ch_buf *b;
	size_t start; /* batch start within b */
	int64_t base_timestamp;
	int64_t max_timestamp;
	int32_t count;
	int32_t last_offset_delta;
	bool track_crc;       /* ch_batch_builder_track_crc */
	uint32_t records_crc; /* CRC-32C of the records so far */
} ch_batch_builder;

void ch_batch_builder_begin(ch_batch_builder *bb, ch_buf *out, int64_t base_offset,
			    int16_t attributes, int64_t base_timestamp, int64_t producer_id,
			    int16_t producer_epoch, int32_t base_sequence);
/* headers: raw encoded headers (may be NULL with headers_count 0). */
void ch_batch_builder_add(ch_batch_builder *bb, int32_t offset_delta, int64_t timestamp,
			  ch_bytes key, ch_bytes value, int32_t headers_count,
			  const uint8_t *headers, size_t headers_len);
/* Checksums each record as it is added, while its bytes are in the cache:
 * an uncompressed end then joins that CRC with the header's
 * (ch_crc32c_combine) instead of reading the whole batch again. For
 * builders whose batch is filled over time (libcohort's producer). */
void ch_batch_builder_track_crc(ch_batch_builder *bb);
/* last_offset_delta < 0: the last added record's delta. Fills lengths and
 * CRC. @returns CH_ERR if the buffer ran out of memory or no record. */
int ch_batch_builder_end(ch_batch_builder *bb, int32_t last_offset_delta);
/* Same, compressing the records section with codec (CH_COMPRESSION_*). */
int ch_batch_builder_end_codec(ch_batch_builder *bb, int32_t last_offset_delta, int codec);

/* Kafka's LogValidator with a target codec (a topic's compression.type other
 * than producer): appends to out the batch p rebuilt with its records section
 * in codec (CH_COMPRESSION_*; NONE stores it uncompressed), keeping base
 * offset, partition leader epoch, attributes other than the codec, the
 * timestamps, producer id/epoch/base sequence, last offset delta and each
 * record's offset delta, timestamp, key, value and headers.
 * MEMORY: the records inflate to at most max_inflate bytes (a scratch buffer
 * freed before returning) and out grows by about the rebuilt batch.
 * @returns CH_OK, or CH_ERR with out unchanged when p is not a whole batch
 * with a good CRC, known attributes and records that parse and inflate within
 * max_inflate (the caller then appends p itself, whose checks report it), or
 * on memory exhaustion. */
int ch_batch_recompress(const uint8_t *p, size_t len, int codec, size_t max_inflate, ch_buf *out);

#endif
