/* fuzz_legacy.c: libFuzzer target for the magic 0/1 converter (ch_legacy),
 * both directions. Built when COHORT_FUZZ.
 *
 * Input: one byte choosing the topic settings (codec, timestamp type,
 * compaction, max.message.bytes), then a Produce v0-v2 partition's records.
 * Each input is converted up as is and with its entries' CRCs made right
 * (so mutations reach the attributes, codecs and inner messages); whatever
 * converts must be a valid producer batch that goes down to magic 0 and 1
 * and back up to the same keys and values (timestamps too, for magic 1).
 * The input is also fed to the down-conversion stream as a log slice. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/ch_buf.h"
#include "common/ch_common.h"
#include "common/ch_endian.h"
#include "log/ch_batch.h"
#include "log/ch_legacy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct slice {
	const uint8_t *p;
	size_t len;
} slice;

static int
slice_read(void *ud, int64_t pos, void *dst, size_t n)
{
	slice *s = ud;
	if (pos < 0 || (size_t)pos > s->len || n > s->len - (size_t)pos)
		return CH_ERR;
	memcpy(dst, s->p + pos, n);
	return CH_OK;
}

/* The whole field of a down-converted slice, in pieces of `piece` bytes. */
static void
down_all(const uint8_t *p, size_t len, int magic, int64_t first, size_t piece, ch_buf *out)
{
	slice s = {p, len};
	ch_legacy_down d;
	if (ch_legacy_down_init(&d, magic, first, (int64_t)len, slice_read, &s) == 0) {
		while (d.out_pos < d.size) {
			size_t before = out->len;
			if (ch_legacy_down_fill(&d, out, piece) != CH_OK)
				break;
			if (out->len == before || out->len - before > piece)
				abort(); /* must make progress within the piece */
		}
	}
	ch_legacy_down_free(&d);
}

typedef struct rec {
	ch_bytes key, value;
	int64_t ts;
} rec;

/* The records of a batch the converter made (it must be valid). */
static size_t
records_of(const ch_buf *b, ch_buf *scratch, rec *out, size_t max)
{
	ch_batch_hdr h;
	if (ch_batch_check(b->data, b->len, 0, true, &h) != CH_BATCH_OK ||
	    (size_t)ch_batch_size(&h) != b->len)
		abort();
	const uint8_t *recs;
	size_t rlen;
	if (ch_batch_records(b->data, &h, scratch, CH_LEGACY_MAX_INFLATE, &recs, &rlen) != CH_OK)
		abort();
	ch_record_iter it;
	ch_record r;
	ch_record_iter_init(&it, recs, rlen, h.records_count);
	size_t n = 0;
	while (ch_record_next(&it, &r) == 1) {
		if (n < max)
			out[n] = (rec){r.key, r.value, h.base_timestamp + r.timestamp_delta};
		n++;
	}
	if (it.err || n != (size_t)h.records_count)
		abort();
	return n;
}

static bool
bytes_eq(ch_bytes a, ch_bytes b)
{
	return a.len == b.len && (a.len <= 0 || memcmp(a.p, b.p, (size_t)a.len) == 0);
}

#define MAX_RECS 4096

static void
roundtrip(ch_buf *batch)
{
	static rec a[MAX_RECS], b[MAX_RECS];
	ch_batch_hdr h;
	ch_batch_parse_hdr(batch->data, batch->len, 0, &h);
	if (ch_batch_compression(&h) == CH_COMPRESSION_ZSTD)
		return; /* no magic 0/1 form */
	ch_buf s1, s2, down, back;
	ch_buf_init(&s1);
	ch_buf_init(&s2);
	ch_buf_init(&down);
	ch_buf_init(&back);
	size_t n = records_of(batch, &s1, a, MAX_RECS);
	ch_legacy_up_cfg cfg = {.codec = CH_COMPRESSION_PRODUCER, .max_message_bytes = INT32_MAX};
	for (int magic = 0; magic <= 1; magic++) {
		ch_buf_reset(&down);
		ch_buf_reset(&back);
		down_all(batch->data, batch->len, magic, 0, 1000, &down);
		ch_legacy_up_res res;
		if (ch_legacy_up(down.data, down.len, &cfg, &back, &res) != 0)
			abort();
		if (n > MAX_RECS)
			continue;
		if (records_of(&back, &s2, b, MAX_RECS) != n)
			abort();
		for (size_t i = 0; i < n; i++) {
			if (!bytes_eq(a[i].key, b[i].key) || !bytes_eq(a[i].value, b[i].value))
				abort();
			if (b[i].ts != (magic ? a[i].ts : -1))
				abort();
		}
	}
	ch_buf_free(&s1);
	ch_buf_free(&s2);
	ch_buf_free(&down);
	ch_buf_free(&back);
}

static void
run_up(const uint8_t *p, size_t n, const ch_legacy_up_cfg *cfg)
{
	ch_buf out;
	ch_buf_init(&out);
	ch_legacy_up_res res;
	(void)ch_legacy_is_legacy(p, n);
	int16_t e = ch_legacy_up(p, n, cfg, &out, &res);
	if (e == 0 && out.len > 0)
		roundtrip(&out);
	else if (e != 0 && out.len != 0)
		abort();
	ch_buf_free(&out);
}

/* Recomputes the CRC of every whole entry, old messages and batches v2. */
static void
fix_crcs(uint8_t *p, size_t n)
{
	size_t pos = 0;
	while (n - pos >= 17) {
		uint32_t sz = ch_be_get32(p + pos + 8);
		if (sz < 14 || sz > n - pos - 12)
			break;
		uint8_t *e = p + pos;
		if (e[16] < 2)
			ch_be_put32(e + 12, (uint32_t)crc32(0, e + 16, (uInt)(sz - 4)));
		else if (sz + 12 >= CH_BATCH_HDR_SIZE)
			ch_be_put32(e + 17, ch_batch_compute_crc(e, sz + 12));
		pos += 12 + sz;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (1u << 20))
		return 0;
	uint8_t sel = data[0];
	data++;
	size--;
	static const int codecs[8] = {CH_COMPRESSION_PRODUCER, CH_COMPRESSION_PRODUCER,
				      CH_COMPRESSION_PRODUCER, CH_COMPRESSION_NONE,
				      CH_COMPRESSION_GZIP,     CH_COMPRESSION_SNAPPY,
				      CH_COMPRESSION_LZ4,      CH_COMPRESSION_ZSTD};
	ch_legacy_up_cfg cfg = {
		.codec = codecs[sel & 7],
		.log_append_time = sel & 0x08,
		.compacted = sel & 0x10,
		.max_message_bytes = (sel & 0x20) ? 300 : 1048588,
	};
	run_up(data, size, &cfg);
	uint8_t *copy = malloc(size ? size : 1);
	memcpy(copy, data, size);
	fix_crcs(copy, size);
	run_up(copy, size, &cfg);
	free(copy);
	/* The input as a log slice. */
	ch_buf out;
	ch_buf_init(&out);
	down_all(data, size, (sel >> 6) & 1, (sel & 0x80) ? 3 : 0, 1 + sel, &out);
	ch_buf_free(&out);
	return 0;
}
