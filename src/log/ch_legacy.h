/*
 * ch_legacy: the message formats before record batches, magic 0 and magic 1
 * (KIP-32), which Produce v0-v2 and Fetch v0-v3 carry. Apache Kafka 3.9
 * still serves them (4.0 dropped them, KIP-896): it converts what a producer
 * sends into record batches v2 on append and converts batches back down for
 * old fetchers. This is that conversion, as Kafka 3.9 does it, on bytes only
 * (no I/O): the api layer feeds it requests and log slices.
 *
 * MESSAGE SET: entries back to back (all integers big-endian)
 *
 *   OFFSET  SIZE  FIELD
 *   0       8     offset        producers send anything; see WRAPPERS
 *   8       4     messageSize   bytes after this field
 *   12      4     crc           CRC-32 (IEEE, zlib's crc32) of [16, 12 + messageSize)
 *   16      1     magic         0 or 1
 *   17      1     attributes    bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4),
 *                               bit 3 (magic 1) timestamp type: 1 = LogAppendTime
 *   18      8     timestamp     magic 1 only; -1 = none
 *   ..      4     keyLength     any negative length is a null key (Kafka reads it so)
 *   ..      *     key
 *   ..      4     valueLength   negative: null value
 *   ..      *     value         bytes after the value, inside messageSize, are ignored
 *
 *   A message is at least 14 bytes (magic 0 with null key and value); magic 1
 *   needs 22. An entry is 12 + messageSize bytes.
 *
 * WRAPPERS. A message whose codec is not 0 has a null key and, as value, the
 * compressed bytes of an inner message set (uncompressed messages of the
 * same magic). Magic 0: inner offsets are absolute. Magic 1: inner offsets
 * are relative (0, 1, ...), the wrapper's offset is the absolute offset of
 * the last inner message (or 0, as some librdkafka versions send), and
 * inner messages of a LogAppendTime wrapper have the wrapper's timestamp.
 * Codec framing (ch_codec.h): gzip; snappy raw or in xerial framing; lz4
 * frames whose header checksum, for magic 0, is Kafka 0.8's broken one.
 *
 * MEMORY. A wrapper's inner message set may inflate to CH_LEGACY_MAX_INFLATE
 * at most; the records section of a converted batch is capped the same way
 * (Kafka has no such cap; a bigger one is refused, see ch_legacy_up). Down
 * conversion is a stream (ch_legacy_down) that holds one chunk of at most
 * 128 KiB of input (or one larger batch) and its output at a time.
 */
#ifndef CH_LEGACY_H
#define CH_LEGACY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ch_buf.h"
#include "common/ch_compression.h"

#define CH_LEGACY_LOG_OVERHEAD 12 /* offset + messageSize */
#define CH_LEGACY_OVERHEAD_V0 14  /* crc, magic, attributes, key and value lengths */
#define CH_LEGACY_OVERHEAD_V1 22  /* + timestamp */
#define CH_LEGACY_ATTR_CODEC 0x07
#define CH_LEGACY_ATTR_LOG_APPEND_TIME 0x08
#define CH_LEGACY_MAX_INFLATE (64u << 20)

/* ---- up: Produce v0-v2 ---------------------------------------------------- */

/* True if a Produce v0-v2 partition's records data[0..len) go through
 * ch_legacy_up: unless they hold whole entries and all of them are record
 * batches v2 (which Kafka takes from these versions too, as v3+ carry
 * them). An empty or partial set is legacy: Kafka appends nothing then and
 * answers without error. */
bool ch_legacy_is_legacy(const uint8_t *data, size_t len);

typedef struct ch_legacy_up_cfg {
	int codec;                 /* the topic's compression.type; PRODUCER: keep the source's */
	bool log_append_time;      /* message.timestamp.type = LogAppendTime */
	bool compacted;            /* cleanup.policy has compact: every record needs a key */
	int32_t max_message_bytes; /* max.message.bytes */
} ch_legacy_up_cfg;

typedef struct ch_legacy_up_res {
	int32_t records;    /* records in the batch */
	size_t valid_bytes; /* input covered by whole entries; a partial last entry is dropped */
	int codec;          /* the batch's codec */
	const char *why;    /* on error: what was wrong (static text, for logs) */
} ch_legacy_up_res;

/*
 * Validates the message set in[0..len) as Kafka 3.9 does on append
 * (UnifiedLog.analyzeAndValidateRecords, then LogValidator) and appends to
 * out one record batch v2 with every record, in order: base offset 0 (the
 * log assigns offsets), no producer id, timestamps as sent (magic 0: -1;
 * a LogAppendTime wrapper's for its inner messages), no headers, compressed
 * with the topic's codec (or the source's when that is "producer").
 * LogAppendTime itself is left to the log's append, which stamps it.
 *
 * In Kafka's order: shallow entries (messageSize < 14, bad magic:
 * CORRUPT_MESSAGE; an entry over max.message.bytes: MESSAGE_TOO_LARGE; CRC
 * mismatch: CORRUPT_MESSAGE; a partial last entry ends the set), then more
 * than one entry when any is compressed, mixed magics, a wrapper without
 * inner messages, a zstd wrapper, compressed inner messages, an inner magic
 * that differs from the wrapper's, a v1 wrapper offset below its last inner
 * offset (INVALID_RECORD), inner CRC (CORRUPT_MESSAGE), a record without key
 * on a compacted topic (INVALID_RECORD), a timestamp type of LogAppendTime
 * set by the producer (INVALID_TIMESTAMP), and last the converted batch over
 * max.message.bytes (MESSAGE_TOO_LARGE).
 *
 * Where Kafka 3.9 fails with an internal error (UNKNOWN_SERVER_ERROR), this
 * answers the error the input deserves, documented in README.md: key or
 * value lengths past the end of a message, a compressed value that does not
 * decompress (or inflates past CH_LEGACY_MAX_INFLATE): CORRUPT_MESSAGE; an
 * unknown codec (5-7): INVALID_RECORD; a timestamp below -1:
 * INVALID_TIMESTAMP; a records section past CH_LEGACY_MAX_INFLATE:
 * MESSAGE_TOO_LARGE.
 *
 * @returns 0 with the batch appended, or 0 with nothing appended when the
 * set holds no whole entry (Kafka appends nothing and answers NONE); else a
 * Kafka error code (CH_KERR_*), with out as it was.
 */
int16_t ch_legacy_up(const uint8_t *in, size_t len, const ch_legacy_up_cfg *cfg, ch_buf *out,
		     ch_legacy_up_res *res);

/* ---- down: Fetch v0-v3 ---------------------------------------------------- */

/* Outcome of converting one batch. */
enum {
	CH_LEGACY_DOWN_OK = 0,      /* converted (possibly to nothing) */
	CH_LEGACY_DOWN_ZSTD = 1,    /* zstd cannot be written before magic 2 */
	CH_LEGACY_DOWN_CORRUPT = 2, /* the batch is malformed */
};

/*
 * One record batch v2 (b[0..len), the whole batch) down-converted to magic
 * `magic` (0 or 1) as Kafka 3.9's RecordsUtil.downConvert does, appended to
 * out: control batches are dropped; an uncompressed batch becomes one
 * message per record at or after first_offset (the fetch offset: old
 * consumers take every message they get); a compressed batch becomes one
 * wrapper with all its records, re-compressed with the same codec
 * (ch_codec_compress_legacy). Timestamps: magic 1 carries the record's, or
 * the batch's LogAppendTime with the LogAppendTime attribute; magic 0 none.
 * Headers are dropped (no place for them).
 * @returns CH_LEGACY_DOWN_*; out is unchanged unless OK.
 */
int ch_legacy_down_batch(const uint8_t *b, size_t len, int magic, int64_t first_offset,
			 ch_buf *out);

/* Reads n bytes of the slice being converted at pos. @returns CH_OK / CH_ERR. */
typedef int (*ch_legacy_read_fn)(void *ud, int64_t pos, void *dst, size_t n);

/*
 * The records of one partition of a Fetch v0-v3 response: a log slice of
 * in_len bytes (whole batches, maybe a partial last one) down-converted the
 * way Kafka 3.9 sends it (LazyDownConversionRecords and its Send):
 *
 *   - the first batch is converted up front; the records field is
 *     size = max(in_len, that batch's converted size) bytes, so a consumer
 *     always gets at least one whole batch; 12 if the slice has whole
 *     batches none of which converts to anything (an "overflow" header
 *     that tells the consumer its fetch size is too small); 0 if the slice
 *     has no whole batch;
 *   - the rest is converted in chunks of at most 128 KiB of input (at least
 *     one batch) as the bytes are sent, and cut at `size`: the last message
 *     may be partial, as consumers expect;
 *   - if the conversion ends before `size`, the rest is overflow batches
 *     (offset -1, a length past the end, zero bytes); a zstd batch after
 *     the first ends the conversion the same way.
 */
typedef struct ch_legacy_down {
	int magic;
	int64_t first_offset;
	int64_t in_len, in_pos; /* slice length; next batch not yet converted */
	int64_t size, out_pos;  /* bytes the field holds; bytes handed out */
	ch_buf pending;         /* converted bytes not yet handed out */
	size_t pending_off;
	bool converting; /* batches left to convert */
	ch_buf in;       /* the chunk being converted */
	ch_legacy_read_fn read;
	void *ud;
} ch_legacy_down;

/*
 * Starts the conversion of a slice (Kafka: the LazyDownConversionRecords
 * constructor): converts the first batch and fixes d->size.
 * @returns 0; UNSUPPORTED_COMPRESSION_TYPE if the first batch is zstd, or
 * CORRUPT_MESSAGE if it is malformed or unreadable (d->size 0 then).
 * Call ch_legacy_down_free in every case.
 */
int16_t ch_legacy_down_init(ch_legacy_down *d, int magic, int64_t first_offset, int64_t in_len,
			    ch_legacy_read_fn read, void *ud);

/*
 * Appends the next bytes of the field to out: at least one and at most max
 * (max > 0) while d->out_pos < d->size.
 * @returns CH_OK, or CH_ERR if the slice can no longer be read or holds a
 * malformed batch after the first (the field cannot be completed).
 */
int ch_legacy_down_fill(ch_legacy_down *d, ch_buf *out, size_t max);

void ch_legacy_down_free(ch_legacy_down *d);

#endif
