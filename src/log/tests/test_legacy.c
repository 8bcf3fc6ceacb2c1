/* test_legacy.c: magic 0/1 message sets <-> record batches v2 (ch_legacy),
 * checked against the format written out by hand here, and against what
 * Kafka 3.9's LogValidator and down-conversion do (ch_legacy.h). */
#include "log/tests/log_util.h"

#include <xxhash.h>
#include <zlib.h>

#include "common/ch_endian.h"
#include "common/ch_test.h"
#include "log/ch_codec.h"
#include "log/ch_legacy.h"
#include "proto/generated/ch_errors.h"

/* ---- writing old messages by hand --------------------------------------- */

static ch_bytes
B(const char *s)
{
	return s ? (ch_bytes){(const uint8_t *)s, (int32_t)strlen(s)} : CH_BYTES_NULL;
}

static void
put32(ch_buf *b, uint32_t v)
{
	uint8_t p[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
	ch_buf_append(b, p, 4);
}

static void
put64(ch_buf *b, uint64_t v)
{
	put32(b, (uint32_t)(v >> 32));
	put32(b, (uint32_t)v);
}

/* One entry: offset, size, crc, magic, attributes, [timestamp], key, value. */
static void
lm_bytes(ch_buf *b, int64_t offset, int magic, int attr, int64_t ts, ch_bytes key, ch_bytes value)
{
	ch_buf m;
	ch_buf_init(&m);
	put32(&m, 0); /* crc, below */
	uint8_t ma[2] = {(uint8_t)magic, (uint8_t)attr};
	ch_buf_append(&m, ma, 2);
	if (magic == 1)
		put64(&m, (uint64_t)ts);
	put32(&m, (uint32_t)key.len);
	if (key.len > 0)
		ch_buf_append(&m, key.p, (size_t)key.len);
	put32(&m, (uint32_t)value.len);
	if (value.len > 0)
		ch_buf_append(&m, value.p, (size_t)value.len);
	ch_be_put32(m.data, (uint32_t)crc32(0, m.data + 4, (uInt)(m.len - 4)));
	put64(b, (uint64_t)offset);
	put32(b, (uint32_t)m.len);
	ch_buf_append(b, m.data, m.len);
	ch_buf_free(&m);
}

static void
lm(ch_buf *b, int64_t offset, int magic, int attr, int64_t ts, const char *key, const char *value)
{
	lm_bytes(b, offset, magic, attr, ts, B(key), B(value));
}

/* A wrapper holding `inner` compressed as `frame` says: 'g' gzip, 's' raw
 * snappy, 'x' xerial snappy, '4' lz4 with a correct header checksum, '0'
 * lz4 with Kafka 0.8's broken one. */
static void
lm_wrap(ch_buf *b, int64_t offset, int magic, int attr, int64_t ts, char frame, const ch_buf *inner)
{
	ch_buf z;
	ch_buf_init(&z);
	int codec = 0;
	switch (frame) {
	case 'g':
		codec = 1;
		ch_codec_compress(1, inner->data, inner->len, &z);
		break;
	case 's':
		codec = 2;
		ch_codec_compress(2, inner->data, inner->len, &z);
		break;
	case 'x':
		codec = 2;
		ch_codec_compress_legacy(2, 1, inner->data, inner->len, &z);
		break;
	case '4':
		codec = 3;
		ch_codec_compress(3, inner->data, inner->len, &z);
		break;
	case '0':
		codec = 3;
		ch_codec_compress(3, inner->data, inner->len, &z);
		z.data[6] = (uint8_t)(XXH32(z.data, 6, 0) >> 8); /* over magic + FLG + BD */
		break;
	}
	lm_bytes(b, offset, magic, attr | codec, ts, CH_BYTES_NULL,
		 (ch_bytes){z.data, (int32_t)z.len});
	ch_buf_free(&z);
}

static ch_legacy_up_cfg
cfg_default(void)
{
	return (ch_legacy_up_cfg){.codec = CH_COMPRESSION_PRODUCER, .max_message_bytes = 1048588};
}

typedef struct exp_rec {
	const char *key, *value;
	int64_t ts;
} exp_rec;

static bool
bytes_eq(ch_bytes a, const char *s)
{
	if (!s)
		return a.len == -1;
	return a.len == (int32_t)strlen(s) && memcmp(a.p, s, (size_t)a.len) == 0;
}

/* The batch at out is a valid producer batch of exactly these records. */
static void
check_batch(const ch_buf *out, int codec, const exp_rec *e, int n)
{
	ch_batch_hdr h;
	CH_CHECK_EQ_INT(ch_batch_check(out->data, out->len, 0, true, &h), CH_BATCH_OK);
	CH_CHECK_EQ_INT((int64_t)ch_batch_size(&h), (int64_t)out->len);
	CH_CHECK_EQ_INT(ch_batch_compression(&h), codec);
	CH_CHECK_EQ_INT(h.records_count, n);
	CH_CHECK_EQ_INT(h.base_offset, 0);
	CH_CHECK_EQ_INT(h.producer_id, -1);
	CH_CHECK_EQ_INT(h.producer_epoch, -1);
	CH_CHECK_EQ_INT(h.base_sequence, -1);
	CH_CHECK_EQ_INT(h.attributes & ~CH_BATCH_ATTR_COMPRESSION, 0);
	int64_t max_ts = -1;
	for (int i = 0; i < n; i++)
		max_ts = CH_MAX(max_ts, e[i].ts);
	CH_CHECK_EQ_INT(h.max_timestamp, max_ts);
	CH_CHECK_EQ_INT(h.base_timestamp, n ? e[0].ts : -1);
	ch_buf scratch;
	ch_buf_init(&scratch);
	const uint8_t *recs;
	size_t rlen;
	CH_CHECK_EQ_INT(ch_batch_records(out->data, &h, &scratch, 1 << 24, &recs, &rlen), CH_OK);
	ch_record_iter it;
	ch_record r;
	ch_record_iter_init(&it, recs, rlen, h.records_count);
	int i = 0;
	while (ch_record_next(&it, &r) == 1 && i < n) {
		CH_CHECK_EQ_INT(r.offset_delta, i);
		CH_CHECK_EQ_INT(h.base_timestamp + r.timestamp_delta, e[i].ts);
		CH_CHECK(bytes_eq(r.key, e[i].key));
		CH_CHECK(bytes_eq(r.value, e[i].value));
		CH_CHECK_EQ_INT(r.headers_count, 0);
		i++;
	}
	CH_CHECK_EQ_INT(i, n);
	CH_CHECK_EQ_INT(it.err, 0);
	ch_buf_free(&scratch);
}

static int16_t
up(const ch_buf *in, const ch_legacy_up_cfg *c, ch_buf *out)
{
	ch_legacy_up_res res;
	ch_buf_reset(out);
	int16_t e = ch_legacy_up(in->data, in->len, c, out, &res);
	if (e)
		CH_CHECK_EQ_INT(out->len, 0);
	else if (out->len)
		CH_CHECK_EQ_INT(res.records, (int32_t)ch_be_get32(out->data + 57));
	return e;
}

/* ---- up ------------------------------------------------------------------ */

static void
t_up_plain(void)
{
	ch_legacy_up_cfg c = cfg_default();
	ch_buf in, out;
	ch_buf_init(&in);
	ch_buf_init(&out);
	/* Magic 0: no timestamps; offsets as sent are ignored; null and empty
	 * keys and values survive. */
	lm(&in, 7, 0, 0, 0, NULL, "v0");
	lm(&in, 7, 0, 0, 0, "", NULL);
	lm(&in, 0, 0, 0, 0, "k2", "");
	CH_CHECK(ch_legacy_is_legacy(in.data, in.len));
	CH_CHECK_EQ_INT(up(&in, &c, &out), 0);
	exp_rec e0[] = {{NULL, "v0", -1}, {"", NULL, -1}, {"k2", "", -1}};
	check_batch(&out, 0, e0, 3);
	/* Magic 1: CreateTime timestamps as sent, including -1. */
	ch_buf_reset(&in);
	lm(&in, 0, 1, 0, 1000, "a", "1");
	lm(&in, 1, 1, 0, 900, "b", "2");
	lm(&in, 2, 1, 0, -1, "c", "3");
	CH_CHECK_EQ_INT(up(&in, &c, &out), 0);
	exp_rec e1[] = {{"a", "1", 1000}, {"b", "2", 900}, {"c", "3", -1}};
	check_batch(&out, 0, e1, 3);
	/* LogAppendTime set by the producer with a timestamp: Kafka keeps the
	 * timestamp on a CreateTime topic. */
	ch_buf_reset(&in);
	lm(&in, 0, 1, CH_LEGACY_ATTR_LOG_APPEND_TIME, 5000, "a", "1");
	CH_CHECK_EQ_INT(up(&in, &c, &out), 0);
	exp_rec e2[] = {{"a", "1", 5000}};
	check_batch(&out, 0, e2, 1);
	/* A topic codec applies to an uncompressed set, which may then hold
	 * many messages (one batch for all). */
	ch_buf_reset(&in);
	for (int i = 0; i < 20; i++)
		lm(&in, 0, 1, 0, 100 + i, "k", "vvvvvvvvvvvvvvvvvvvvvvvvvvvv");
	for (int codec = 1; codec <= 4; codec++) {
		c.codec = codec;
		CH_CHECK_EQ_INT(up(&in, &c, &out), 0);
		exp_rec e3[20];
		for (int i = 0; i < 20; i++)
			e3[i] = (exp_rec){"k", "vvvvvvvvvvvvvvvvvvvvvvvvvvvv", 100 + i};
		check_batch(&out, codec, e3, 20);
	}
	ch_buf_free(&in);
	ch_buf_free(&out);
}

static void
t_up_wrappers(void)
{
	const char frames[] = {'g', 's', 'x', '4', '0'};
	ch_buf inner, in, out;
	ch_buf_init(&inner);
	ch_buf_init(&in);
	ch_buf_init(&out);
	for (int magic = 0; magic <= 1; magic++) {
		for (size_t f = 0; f < sizeof(frames); f++) {
			/* lz4 with the broken header checksum is accepted for
			 * magic 0 only (KAFKA-3160). */
			bool broken = frames[f] == '0';
			ch_buf_reset(&inner);
			ch_buf_reset(&in);
			int n = 300;
			for (int i = 0; i < n; i++) {
				char k[16], v[400];
				snprintf(k, sizeof(k), "k%d", i);
				memset(v, 'a' + i % 26, sizeof(v) - 1);
				v[sizeof(v) - 1] = 0;
				lm(&inner, magic ? i : 1000 + i, magic, 0, 2000 + i, k, v);
			}
			lm_wrap(&in, magic ? 5000 + n - 1 : 0, magic, 0, 2000 + n - 1, frames[f],
				&inner);
			ch_legacy_up_cfg c = cfg_default();
			int16_t e = up(&in, &c, &out);
			if (broken && magic == 1) {
				CH_CHECK_EQ_INT(e, CH_KERR_CORRUPT_MESSAGE);
				continue;
			}
			CH_CHECK_EQ_INT(e, 0);
			ch_batch_hdr h;
			CH_CHECK_EQ_INT(ch_batch_check(out.data, out.len, 0, true, &h),
					CH_BATCH_OK);
			CH_CHECK_EQ_INT(h.records_count, n);
			CH_CHECK_EQ_INT(ch_batch_compression(&h),
					frames[f] == 'g'                       ? 1
					: frames[f] == 's' || frames[f] == 'x' ? 2
									       : 3);
			CH_CHECK_EQ_INT(h.base_timestamp, magic ? 2000 : -1);
			CH_CHECK_EQ_INT(h.max_timestamp, magic ? 2000 + n - 1 : -1);
			/* The topic's codec wins over the producer's. */
			c.codec = CH_COMPRESSION_NONE;
			CH_CHECK_EQ_INT(up(&in, &c, &out), 0);
			CH_CHECK_EQ_INT(ch_batch_check(out.data, out.len, 0, true, &h),
					CH_BATCH_OK);
			CH_CHECK_EQ_INT(ch_batch_compression(&h), 0);
			CH_CHECK_EQ_INT(h.records_count, n);
		}
	}
	/* A LogAppendTime v1 wrapper: the inner messages take its timestamp. */
	ch_buf_reset(&inner);
	ch_buf_reset(&in);
	lm(&inner, 0, 1, 0, 11, "a", "1");
	lm(&inner, 1, 1, 0, 12, "b", "2");
	lm_wrap(&in, 1, 1, CH_LEGACY_ATTR_LOG_APPEND_TIME, 777, 'g', &inner);
	ch_legacy_up_cfg c = cfg_default();
	CH_CHECK_EQ_INT(up(&in, &c, &out), 0);
	exp_rec e[] = {{"a", "1", 777}, {"b", "2", 777}};
	check_batch(&out, 1, e, 2);
	/* ... which a LogAppendTime topic refuses (the producer may not set it). */
	c.log_append_time = true;
	CH_CHECK_EQ_INT(up(&in, &c, &out), CH_KERR_INVALID_TIMESTAMP);
	/* Wrapper offset 0 (librdkafka) or >= the last inner offset: fine. */
	c.log_append_time = false;
	ch_buf_reset(&in);
	lm_wrap(&in, 0, 1, 0, 12, 'g', &inner);
	CH_CHECK_EQ_INT(up(&in, &c, &out), 0);
	ch_buf_reset(&in);
	lm_wrap(&in, 99, 1, 0, 12, 'g', &inner);
	CH_CHECK_EQ_INT(up(&in, &c, &out), 0);
	ch_buf_free(&inner);
	ch_buf_free(&in);
	ch_buf_free(&out);
}

/* One bad message set per row and Kafka 3.9's answer to it. */
typedef struct bad_case {
	const char *name;
	void (*build)(ch_buf *in, ch_legacy_up_cfg *c);
	int16_t kerr;
} bad_case;

static void
b_size_small(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	lm(in, 0, 0, 0, 0, "k", "v");
	ch_be_put32(in->data + 8, 13);
}

static void
b_magic(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	lm(in, 0, 0, 0, 0, "k", "v");
	in->data[16] = 3;
}

static void
b_magic_negative(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	lm(in, 0, 0, 0, 0, "k", "v");
	in->data[16] = 0xff;
}

static void
b_crc(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	lm(in, 0, 1, 0, 5, "k", "v");
	in->data[in->len - 1] ^= 1;
}

static void
b_crc_second(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	lm(in, 0, 1, 0, 5, "k", "v");
	size_t second = in->len;
	lm(in, 0, 1, 0, 5, "k", "v");
	in->data[second + 12] ^= 0x80; /* the second entry's CRC */
}

static void
b_too_large(ch_buf *in, ch_legacy_up_cfg *c)
{
	c->max_message_bytes = 100;
	char v[100];
	memset(v, 'x', sizeof(v) - 1);
	v[99] = 0;
	lm(in, 0, 1, 0, 5, "k", v);
}

static void
b_converted_too_large(ch_buf *in, ch_legacy_up_cfg *c)
{
	/* Each message fits; the one batch they become does not. */
	c->max_message_bytes = 200;
	for (int i = 0; i < 10; i++)
		lm(in, 0, 1, 0, 5, "k", "0123456789012345678901234567890123456789");
}

static void
b_key_past_end(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	lm(in, 0, 0, 0, 0, "key", "v");
	ch_be_put32(in->data + 12 + 6, 1000);
	ch_be_put32(in->data + 12, (uint32_t)crc32(0, in->data + 16, (uInt)(in->len - 16)));
}

static void
b_unknown_codec(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	lm(in, 0, 1, 5, 5, NULL, "v");
}

static void
b_zstd(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	lm(in, 0, 1, 4, 5, NULL, "v");
}

static void
b_null_value(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	lm(in, 0, 1, 1, 5, NULL, NULL);
}

static void
b_not_gzip(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	lm(in, 0, 1, 1, 5, NULL, "this is not gzip");
}

static void
b_empty_inner(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	ch_buf inner;
	ch_buf_init(&inner);
	lm_wrap(in, 0, 1, 0, 5, 'g', &inner);
	ch_buf_free(&inner);
}

static void
b_nested(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	ch_buf inner, inner2;
	ch_buf_init(&inner);
	ch_buf_init(&inner2);
	lm(&inner2, 0, 1, 0, 5, "k", "v");
	lm_wrap(&inner, 0, 1, 0, 5, 'g', &inner2);
	lm_wrap(in, 0, 1, 0, 5, 'g', &inner);
	ch_buf_free(&inner);
	ch_buf_free(&inner2);
}

static void
b_inner_magic(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	ch_buf inner;
	ch_buf_init(&inner);
	lm(&inner, 0, 1, 0, 5, "k", "v");
	lm(&inner, 1, 0, 0, 0, "k", "v");
	lm_wrap(in, 1, 1, 0, 5, 's', &inner);
	ch_buf_free(&inner);
}

static void
b_inner_crc(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	ch_buf inner;
	ch_buf_init(&inner);
	lm(&inner, 0, 0, 0, 0, "k", "v");
	inner.data[inner.len - 1] ^= 4;
	lm_wrap(in, 0, 0, 0, 0, '0', &inner);
	ch_buf_free(&inner);
}

static void
b_inner_size_small(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	ch_buf inner;
	ch_buf_init(&inner);
	lm(&inner, 0, 1, 0, 5, "k", "v");
	lm(&inner, 1, 1, 0, 5, "k", "v");
	ch_be_put32(inner.data + (inner.len / 2) + 8, 3);
	lm_wrap(in, 1, 1, 0, 5, 'x', &inner);
	ch_buf_free(&inner);
}

static void
b_wrapper_offset(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	ch_buf inner;
	ch_buf_init(&inner);
	lm(&inner, 0, 1, 0, 5, "k", "v");
	lm(&inner, 5, 1, 0, 5, "k", "v");
	lm_wrap(in, 4, 1, 0, 5, '4', &inner);
	ch_buf_free(&inner);
}

static void
b_two_wrappers(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	ch_buf inner;
	ch_buf_init(&inner);
	lm(&inner, 0, 1, 0, 5, "k", "v");
	lm_wrap(in, 0, 1, 0, 5, 'g', &inner);
	lm_wrap(in, 0, 1, 0, 5, 'g', &inner);
	ch_buf_free(&inner);
}

static void
b_plain_and_wrapper(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	ch_buf inner;
	ch_buf_init(&inner);
	lm(&inner, 0, 1, 0, 5, "k", "v");
	lm(in, 0, 1, 0, 5, "k", "v");
	lm_wrap(in, 0, 1, 0, 5, 'g', &inner);
	ch_buf_free(&inner);
}

static void
b_mixed_magic(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	lm(in, 0, 0, 0, 0, "k", "v");
	lm(in, 0, 1, 0, 5, "k", "v");
}

static void
b_v2_after_v1(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	lm(in, 0, 1, 0, 5, "k", "v");
	tu_batch(in, 2, 1, 0, 0, false, 0);
}

static void
b_no_key_compacted(ch_buf *in, ch_legacy_up_cfg *c)
{
	c->compacted = true;
	lm(in, 0, 1, 0, 5, "k", "v");
	lm(in, 0, 1, 0, 5, NULL, "v");
}

static void
b_no_key_compacted_inner(ch_buf *in, ch_legacy_up_cfg *c)
{
	c->compacted = true;
	ch_buf inner;
	ch_buf_init(&inner);
	lm(&inner, 0, 0, 0, 0, NULL, "v");
	lm_wrap(in, 0, 0, 0, 0, 'g', &inner);
	ch_buf_free(&inner);
}

static void
b_lat_without_ts(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	lm(in, 0, 1, CH_LEGACY_ATTR_LOG_APPEND_TIME, -1, "k", "v");
}

static void
b_lat_on_lat_topic(ch_buf *in, ch_legacy_up_cfg *c)
{
	c->log_append_time = true;
	lm(in, 0, 1, CH_LEGACY_ATTR_LOG_APPEND_TIME, 1234, "k", "v");
}

static void
b_negative_ts(ch_buf *in, ch_legacy_up_cfg *c)
{
	(void)c;
	lm(in, 0, 1, 0, -5, "k", "v");
}

static void
b_timestamp_beats_key(ch_buf *in, ch_legacy_up_cfg *c)
{
	/* Kafka reports INVALID_TIMESTAMP when a wrapper has both kinds of
	 * record errors (processRecordErrors). */
	c->compacted = true;
	ch_buf inner;
	ch_buf_init(&inner);
	lm(&inner, 0, 1, 0, 5, NULL, "v");
	lm(&inner, 1, 1, 0, -7, "k", "v");
	lm_wrap(in, 1, 1, 0, 5, 'g', &inner);
	ch_buf_free(&inner);
}

static const bad_case bad_cases[] = {
	{"message size below 14", b_size_small, CH_KERR_CORRUPT_MESSAGE},
	{"magic 3", b_magic, CH_KERR_CORRUPT_MESSAGE},
	{"magic -1", b_magic_negative, CH_KERR_CORRUPT_MESSAGE},
	{"CRC", b_crc, CH_KERR_CORRUPT_MESSAGE},
	{"CRC of the second of two", b_crc_second, CH_KERR_CORRUPT_MESSAGE},
	{"message over max.message.bytes", b_too_large, CH_KERR_MESSAGE_TOO_LARGE},
	{"converted batch over max.message.bytes", b_converted_too_large,
	 CH_KERR_MESSAGE_TOO_LARGE},
	{"key length past the end", b_key_past_end, CH_KERR_CORRUPT_MESSAGE},
	{"codec 5", b_unknown_codec, CH_KERR_INVALID_RECORD},
	{"zstd wrapper", b_zstd, CH_KERR_INVALID_RECORD},
	{"wrapper with a null value", b_null_value, CH_KERR_INVALID_RECORD},
	{"wrapper value is not gzip", b_not_gzip, CH_KERR_CORRUPT_MESSAGE},
	{"wrapper with no inner message", b_empty_inner, CH_KERR_INVALID_RECORD},
	{"nested compression", b_nested, CH_KERR_INVALID_RECORD},
	{"inner magic differs", b_inner_magic, CH_KERR_INVALID_RECORD},
	{"inner CRC", b_inner_crc, CH_KERR_CORRUPT_MESSAGE},
	{"inner size below 14", b_inner_size_small, CH_KERR_CORRUPT_MESSAGE},
	{"v1 wrapper offset below the last inner", b_wrapper_offset, CH_KERR_INVALID_RECORD},
	{"two wrappers", b_two_wrappers, CH_KERR_INVALID_RECORD},
	{"a plain message and a wrapper", b_plain_and_wrapper, CH_KERR_INVALID_RECORD},
	{"magic 0 then magic 1", b_mixed_magic, CH_KERR_INVALID_RECORD},
	{"a batch v2 after a message", b_v2_after_v1, CH_KERR_INVALID_RECORD},
	{"no key, compacted", b_no_key_compacted, CH_KERR_INVALID_RECORD},
	{"no key inside a wrapper, compacted", b_no_key_compacted_inner, CH_KERR_INVALID_RECORD},
	{"LogAppendTime without a timestamp", b_lat_without_ts, CH_KERR_INVALID_TIMESTAMP},
	{"LogAppendTime on a LogAppendTime topic", b_lat_on_lat_topic, CH_KERR_INVALID_TIMESTAMP},
	{"timestamp -5", b_negative_ts, CH_KERR_INVALID_TIMESTAMP},
	{"timestamp error beats key error", b_timestamp_beats_key, CH_KERR_INVALID_TIMESTAMP},
};

static void
t_up_bad(void)
{
	ch_buf in, out;
	ch_buf_init(&in);
	ch_buf_init(&out);
	for (size_t i = 0; i < CH_ARRAY_LEN(bad_cases); i++) {
		ch_legacy_up_cfg c = cfg_default();
		ch_buf_reset(&in);
		bad_cases[i].build(&in, &c);
		ch_buf_reset(&out);
		ch_buf_append(&out, "x", 1); /* out is appended to, never clobbered */
		ch_legacy_up_res res;
		int16_t e = ch_legacy_up(in.data, in.len, &c, &out, &res);
		if (e != bad_cases[i].kerr)
			fprintf(stderr, "case '%s': got %d (%s)\n", bad_cases[i].name, e,
				res.why ? res.why : "");
		CH_CHECK_EQ_INT(e, bad_cases[i].kerr);
		CH_CHECK_EQ_INT(out.len, 1);
		CH_CHECK(res.why != NULL);
	}
	ch_buf_free(&in);
	ch_buf_free(&out);
}

static void
t_up_partial(void)
{
	/* A partial last entry is dropped, as Kafka trims it; no whole entry
	 * at all is "nothing to append", not an error. */
	ch_buf in, out, inner;
	ch_buf_init(&in);
	ch_buf_init(&out);
	ch_buf_init(&inner);
	lm(&in, 0, 1, 0, 5, "a", "1");
	size_t first = in.len;
	lm(&in, 0, 1, 0, 6, "b", "2");
	ch_legacy_up_cfg c = cfg_default();
	for (size_t n = 0; n <= in.len; n++) {
		ch_legacy_up_res res;
		ch_buf_reset(&out);
		int16_t e = ch_legacy_up(in.data, n, &c, &out, &res);
		CH_CHECK_EQ_INT(e, 0);
		CH_CHECK(ch_legacy_is_legacy(in.data, n));
		CH_CHECK_EQ_INT(res.valid_bytes, n < first ? 0 : n < in.len ? first : in.len);
		CH_CHECK_EQ_INT(res.records, n < first ? 0 : n < in.len ? 1 : 2);
		CH_CHECK_EQ_INT(out.len > 0, n >= first);
	}
	/* A truncated wrapper value does not decompress. */
	lm(&inner, 0, 1, 0, 5, "a", "1");
	for (int i = 0; i < 50; i++)
		lm(&inner, i + 1, 1, 0, 5, "a", "0123456789abcdef0123456789");
	ch_buf_reset(&in);
	lm_wrap(&in, 0, 1, 0, 5, 'g', &inner);
	size_t vlen = ch_be_get32(in.data + 12 + 18);
	ch_be_put32(in.data + 12 + 18, (uint32_t)(vlen / 2));
	in.len = 12 + 22 + vlen / 2;
	ch_be_put32(in.data + 8, (uint32_t)(in.len - 12));
	ch_be_put32(in.data + 12, (uint32_t)crc32(0, in.data + 16, (uInt)(in.len - 16)));
	CH_CHECK_EQ_INT(up(&in, &c, &out), CH_KERR_CORRUPT_MESSAGE);
	/* A set of record batches v2 only is not legacy. */
	ch_buf_reset(&in);
	tu_batch(&in, 3, 1, 0, 0, false, 0);
	CH_CHECK(!ch_legacy_is_legacy(in.data, in.len));
	tu_batch(&in, 3, 1, 0, 0, false, 0);
	CH_CHECK(!ch_legacy_is_legacy(in.data, in.len));
	CH_CHECK(!ch_legacy_is_legacy(in.data, in.len - 1));
	CH_CHECK(ch_legacy_is_legacy(in.data, 10));
	ch_buf_free(&in);
	ch_buf_free(&out);
	ch_buf_free(&inner);
}

/* ---- down ----------------------------------------------------------------- */

/* Reads back a message set: every entry must be whole and valid. */
typedef struct got_msg {
	int64_t offset;
	int magic, attr;
	int64_t ts;
	char key[64], value[512];
	bool key_null, value_null;
} got_msg;

static int
parse_set(const uint8_t *p, size_t len, got_msg *out, int max)
{
	int n = 0;
	size_t pos = 0;
	while (pos + 12 <= len && n < max) {
		size_t size = ch_be_get32(p + pos + 8);
		CH_CHECK(pos + 12 + size <= len);
		if (pos + 12 + size > len)
			break;
		const uint8_t *m = p + pos + 12;
		CH_CHECK_EQ_INT(ch_be_get32(m), (uint32_t)crc32(0, m + 4, (uInt)(size - 4)));
		got_msg *g = &out[n++];
		memset(g, 0, sizeof(*g));
		g->offset = (int64_t)ch_be_get64(p + pos);
		g->magic = m[4];
		g->attr = m[5];
		size_t at = g->magic ? 14 : 6;
		g->ts = g->magic ? (int64_t)ch_be_get64(m + 6) : -1;
		int32_t kl = (int32_t)ch_be_get32(m + at);
		at += 4;
		g->key_null = kl < 0;
		if (kl > 0) {
			memcpy(g->key, m + at, (size_t)CH_MIN(kl, 63));
			at += (size_t)kl;
		}
		int32_t vl = (int32_t)ch_be_get32(m + at);
		at += 4;
		g->value_null = vl < 0;
		if (vl > 0)
			memcpy(g->value, m + at, (size_t)CH_MIN(vl, 511));
		CH_CHECK_EQ_INT(at + (vl > 0 ? (size_t)vl : 0), size);
		pos += 12 + size;
	}
	return n;
}

/* A stored batch: n records "k<i>"/"v<i>", ts ts0 + 10 i, at base. */
static void
stored_batch(ch_buf *b, int64_t base, int n, int64_t ts0, int codec, bool lat, int64_t lat_ts)
{
	size_t at = b->len;
	ch_batch_builder bb;
	ch_batch_builder_begin(&bb, b, base, 0, ts0, -1, -1, -1);
	for (int i = 0; i < n; i++) {
		char k[16], v[32];
		snprintf(k, sizeof(k), "k%d", i);
		snprintf(v, sizeof(v), "v%d", i);
		ch_batch_builder_add(&bb, i, ts0 + 10 * i, B(k), i == 1 ? CH_BYTES_NULL : B(v), 0,
				     NULL, 0);
	}
	if (ch_batch_builder_end_codec(&bb, -1, codec) != CH_OK)
		abort();
	if (lat)
		ch_batch_set_log_append_time(b->data + at, b->len - at, lat_ts);
}

static void
t_down_plain(void)
{
	ch_buf b, out;
	ch_buf_init(&b);
	ch_buf_init(&out);
	stored_batch(&b, 100, 4, 5000, 0, false, 0);
	got_msg g[8];
	for (int magic = 0; magic <= 1; magic++) {
		ch_buf_reset(&out);
		CH_CHECK_EQ_INT(ch_legacy_down_batch(b.data, b.len, magic, 0, &out), 0);
		CH_CHECK_EQ_INT(parse_set(out.data, out.len, g, 8), 4);
		for (int i = 0; i < 4; i++) {
			CH_CHECK_EQ_INT(g[i].offset, 100 + i);
			CH_CHECK_EQ_INT(g[i].magic, magic);
			CH_CHECK_EQ_INT(g[i].attr, 0);
			CH_CHECK_EQ_INT(g[i].ts, magic ? 5000 + 10 * i : -1);
			char k[16];
			snprintf(k, sizeof(k), "k%d", i);
			CH_CHECK_EQ_STR(g[i].key, k);
			CH_CHECK_EQ_INT(g[i].value_null, i == 1);
		}
		/* Exact size: one message per record, 12 + 14 (+ 8) + key + value. */
		CH_CHECK_EQ_INT(out.len, 4 * (12 + (magic ? 22 : 14) + 2) + 3 * 2);
		/* Records before the fetch offset are dropped from an
		 * uncompressed batch. */
		ch_buf_reset(&out);
		CH_CHECK_EQ_INT(ch_legacy_down_batch(b.data, b.len, magic, 102, &out), 0);
		CH_CHECK_EQ_INT(parse_set(out.data, out.len, g, 8), 2);
		CH_CHECK_EQ_INT(g[0].offset, 102);
		ch_buf_reset(&out);
		CH_CHECK_EQ_INT(ch_legacy_down_batch(b.data, b.len, magic, 104, &out), 0);
		CH_CHECK_EQ_INT(out.len, 0);
	}
	/* LogAppendTime: every message gets the batch's time and the attribute. */
	ch_buf_reset(&b);
	stored_batch(&b, 0, 3, 10, 0, true, 99999);
	ch_buf_reset(&out);
	CH_CHECK_EQ_INT(ch_legacy_down_batch(b.data, b.len, 1, 0, &out), 0);
	CH_CHECK_EQ_INT(parse_set(out.data, out.len, g, 8), 3);
	for (int i = 0; i < 3; i++) {
		CH_CHECK_EQ_INT(g[i].ts, 99999);
		CH_CHECK_EQ_INT(g[i].attr, CH_LEGACY_ATTR_LOG_APPEND_TIME);
	}
	ch_buf_reset(&out);
	CH_CHECK_EQ_INT(ch_legacy_down_batch(b.data, b.len, 0, 0, &out), 0);
	CH_CHECK_EQ_INT(parse_set(out.data, out.len, g, 8), 3);
	CH_CHECK_EQ_INT(g[0].attr, 0);
	/* A control batch has no old form; zstd cannot be written in one. */
	b.data[22] |= CH_BATCH_ATTR_CONTROL;
	ch_buf_reset(&out);
	CH_CHECK_EQ_INT(ch_legacy_down_batch(b.data, b.len, 1, 0, &out), 0);
	CH_CHECK_EQ_INT(out.len, 0);
	ch_buf_reset(&b);
	stored_batch(&b, 0, 3, 10, CH_COMPRESSION_ZSTD, false, 0);
	CH_CHECK_EQ_INT(ch_legacy_down_batch(b.data, b.len, 1, 0, &out), CH_LEGACY_DOWN_ZSTD);
	CH_CHECK_EQ_INT(ch_legacy_down_batch(b.data, b.len - 1, 1, 0, &out),
			CH_LEGACY_DOWN_CORRUPT);
	ch_buf_free(&b);
	ch_buf_free(&out);
}

static void
t_down_compressed(void)
{
	ch_buf b, out, inner;
	ch_buf_init(&b);
	ch_buf_init(&out);
	ch_buf_init(&inner);
	got_msg g[8], ig[8];
	for (int codec = 1; codec <= 3; codec++) {
		for (int magic = 0; magic <= 1; magic++) {
			for (int lat = 0; lat <= 1; lat++) {
				ch_buf_reset(&b);
				stored_batch(&b, 50, 3, 7000, codec, lat, 424242);
				ch_buf_reset(&out);
				/* All records of a compressed batch, the fetch offset notwithstanding. */
				CH_CHECK_EQ_INT(
					ch_legacy_down_batch(b.data, b.len, magic, 52, &out), 0);
				CH_CHECK_EQ_INT(parse_set(out.data, out.len, g, 8), 1);
				CH_CHECK_EQ_INT(g[0].offset, 52); /* the last inner offset */
				CH_CHECK_EQ_INT(g[0].magic, magic);
				int tbit = magic && lat ? CH_LEGACY_ATTR_LOG_APPEND_TIME : 0;
				CH_CHECK_EQ_INT(g[0].attr, codec | tbit);
				CH_CHECK_EQ_INT(g[0].ts, !magic ? -1 : lat ? 424242 : 7020);
				CH_CHECK(g[0].key_null);
				const uint8_t *v = out.data + 12 + (magic ? 22 : 14);
				size_t vlen = out.len - 12 - (magic ? 22 : 14);
				if (codec == 2) /* xerial framing, as snappy-java writes it */
					CH_CHECK(vlen > 16 &&
						 memcmp(v, "\x82SNAPPY\0\0\0\0\1\0\0\0\1", 16) ==
							 0);
				if (codec == 3) {
					/* Kafka's frame: FLG 0x60, BD 0x40; HC broken for magic 0. */
					CH_CHECK(v[4] == 0x60 && v[5] == 0x40);
					uint8_t good = (uint8_t)(XXH32(v + 4, 2, 0) >> 8);
					uint8_t broken = (uint8_t)(XXH32(v, 6, 0) >> 8);
					CH_CHECK_EQ_INT(v[6], magic ? good : broken);
				}
				ch_buf_reset(&inner);
				CH_CHECK_EQ_INT(ch_codec_decompress_legacy(codec, magic, v, vlen,
									   &inner, 1 << 20),
						CH_OK);
				CH_CHECK_EQ_INT(parse_set(inner.data, inner.len, ig, 8), 3);
				for (int i = 0; i < 3; i++) {
					CH_CHECK_EQ_INT(ig[i].offset, magic ? i : 50 + i);
					CH_CHECK_EQ_INT(ig[i].attr, tbit);
					CH_CHECK_EQ_INT(ig[i].ts, !magic ? -1
								  : lat  ? 424242
									 : 7000 + 10 * i);
				}
				/* And back up again: the records survive the round trip. */
				ch_legacy_up_cfg c = cfg_default();
				ch_buf up_out;
				ch_buf_init(&up_out);
				CH_CHECK_EQ_INT(ch_legacy_up(out.data, out.len, &c, &up_out,
							     &(ch_legacy_up_res){0}),
						0);
				int64_t t0 = !magic ? -1 : lat ? 424242 : 7000;
				int64_t step = magic && !lat ? 10 : 0;
				exp_rec e[] = {{"k0", "v0", t0},
					       {"k1", NULL, t0 + step},
					       {"k2", "v2", t0 + 2 * step}};
				check_batch(&up_out, codec, e, 3);
				ch_buf_free(&up_out);
			}
		}
	}
	ch_buf_free(&b);
	ch_buf_free(&out);
	ch_buf_free(&inner);
}

/* ---- the down-conversion stream ---------------------------------------------- */

typedef struct mem_slice {
	const uint8_t *p;
	size_t len;
	int reads;
} mem_slice;

static int
mem_read(void *ud, int64_t pos, void *dst, size_t n)
{
	mem_slice *m = ud;
	m->reads++;
	if (pos < 0 || (size_t)pos > m->len || n > m->len - (size_t)pos)
		return CH_ERR;
	memcpy(dst, m->p + pos, n);
	return CH_OK;
}

/* Runs the stream over slice[0..len) in pieces of `piece` bytes. */
static int16_t
down_all(const uint8_t *p, size_t len, int magic, int64_t first, size_t piece, ch_buf *out)
{
	mem_slice m = {p, len, 0};
	ch_legacy_down d;
	ch_buf_reset(out);
	int16_t e = ch_legacy_down_init(&d, magic, first, (int64_t)len, mem_read, &m);
	if (!e) {
		while (d.out_pos < d.size) {
			size_t before = out->len;
			CH_CHECK_EQ_INT(ch_legacy_down_fill(&d, out, piece), CH_OK);
			CH_CHECK(out->len > before && out->len - before <= piece);
			if (out->len == before)
				break;
		}
		CH_CHECK_EQ_INT((int64_t)out->len, d.size);
	}
	ch_legacy_down_free(&d);
	return e;
}

static void
t_down_stream(void)
{
	ch_buf slice, out, whole, one;
	ch_buf_init(&slice);
	ch_buf_init(&out);
	ch_buf_init(&whole);
	ch_buf_init(&one);
	/* Uncompressed: magic 0 messages are larger than v2 records, so the
	 * field is the slice's size and the conversion is cut there. */
	for (int i = 0; i < 40; i++)
		stored_batch(&slice, i * 4, 4, 100, 0, false, 0);
	for (size_t pos = 0; pos < slice.len;) {
		ch_batch_hdr h;
		ch_batch_parse_hdr(slice.data + pos, slice.len - pos, 0, &h);
		ch_legacy_down_batch(slice.data + pos, (size_t)ch_batch_size(&h), 0, 0, &whole);
		pos += (size_t)ch_batch_size(&h);
	}
	CH_CHECK(whole.len > slice.len);
	CH_CHECK_EQ_INT(down_all(slice.data, slice.len, 0, 0, 1 << 20, &out), 0);
	CH_CHECK_EQ_INT(out.len, slice.len);
	CH_CHECK(memcmp(out.data, whole.data, out.len) == 0);
	/* The same bytes whatever the pieces the sender asks for. */
	ch_buf again;
	ch_buf_init(&again);
	CH_CHECK_EQ_INT(down_all(slice.data, slice.len, 0, 0, 7, &again), 0);
	CH_CHECK(again.len == out.len && memcmp(again.data, out.data, out.len) == 0);
	ch_buf_free(&again);
	/* One batch whose conversion is larger than it: the field grows to
	 * hold it (a consumer always gets one whole batch). */
	ch_buf_reset(&one);
	stored_batch(&one, 0, 4, 100, 0, false, 0);
	ch_buf_reset(&whole);
	ch_legacy_down_batch(one.data, one.len, 1, 0, &whole);
	CH_CHECK(whole.len > one.len);
	CH_CHECK_EQ_INT(down_all(one.data, one.len, 1, 0, 1 << 20, &out), 0);
	CH_CHECK(out.len == whole.len && memcmp(out.data, whole.data, out.len) == 0);
	/* A partial batch at the end of the slice is not converted; the space
	 * it took is overflow: offset -1, a length past the end, zeros. */
	ch_buf_reset(&slice);
	stored_batch(&slice, 0, 3, 100, CH_COMPRESSION_GZIP, false, 0);
	size_t first = slice.len;
	stored_batch(&slice, 3, 30, 100, CH_COMPRESSION_GZIP, false, 0);
	size_t cut = first + (slice.len - first) / 2;
	ch_buf_reset(&whole);
	ch_legacy_down_batch(slice.data, first, 1, 0, &whole);
	CH_CHECK(whole.len < cut);
	CH_CHECK_EQ_INT(down_all(slice.data, cut, 1, 0, 1 << 20, &out), 0);
	CH_CHECK_EQ_INT(out.len, cut);
	CH_CHECK(memcmp(out.data, whole.data, whole.len) == 0);
	const uint8_t *ov = out.data + whole.len;
	size_t left = cut - whole.len;
	CH_CHECK_EQ_INT((int64_t)ch_be_get64(ov), -1);
	CH_CHECK_EQ_INT(ch_be_get32(ov + 8), CH_MAX(left + 1, 61));
	for (size_t i = 12; i < left; i++)
		CH_CHECK_EQ_INT(ov[i], 0);
	/* Only a partial batch: nothing. An empty slice: nothing. */
	CH_CHECK_EQ_INT(down_all(slice.data, first - 1, 1, 0, 1 << 20, &out), 0);
	CH_CHECK_EQ_INT(out.len, 0);
	CH_CHECK_EQ_INT(down_all(slice.data, 0, 1, 0, 1 << 20, &out), 0);
	CH_CHECK_EQ_INT(out.len, 0);
	/* Whole batches none of which converts (all before the fetch offset,
	 * uncompressed): a 12-byte overflow header. */
	ch_buf_reset(&slice);
	stored_batch(&slice, 0, 3, 100, 0, false, 0);
	CH_CHECK_EQ_INT(down_all(slice.data, slice.len, 1, 10, 1 << 20, &out), 0);
	CH_CHECK_EQ_INT(out.len, 12);
	CH_CHECK_EQ_INT((int64_t)ch_be_get64(out.data), -1);
	CH_CHECK_EQ_INT(ch_be_get32(out.data + 8), 61);
	/* zstd first: the partition's error; zstd later: overflow from there. */
	ch_buf_reset(&slice);
	stored_batch(&slice, 0, 3, 100, CH_COMPRESSION_ZSTD, false, 0);
	CH_CHECK_EQ_INT(down_all(slice.data, slice.len, 1, 0, 1 << 20, &out),
			CH_KERR_UNSUPPORTED_COMPRESSION_TYPE);
	ch_buf_reset(&slice);
	stored_batch(&slice, 0, 3, 100, CH_COMPRESSION_GZIP, false, 0);
	first = slice.len;
	stored_batch(&slice, 3, 3, 100, CH_COMPRESSION_GZIP, false, 0);
	stored_batch(&slice, 6, 3, 100, CH_COMPRESSION_ZSTD, false, 0);
	ch_buf_reset(&whole);
	ch_legacy_down_batch(slice.data, first, 1, 0, &whole);
	CH_CHECK_EQ_INT(down_all(slice.data, slice.len, 1, 0, 1 << 20, &out), 0);
	CH_CHECK_EQ_INT(out.len, slice.len);
	CH_CHECK(memcmp(out.data, whole.data, whole.len) == 0);
	/* the second batch went with the zstd one's chunk (Kafka drops it) */
	CH_CHECK_EQ_INT((int64_t)ch_be_get64(out.data + whole.len), -1);
	/* A malformed first batch, an unreadable slice. */
	ch_buf_reset(&slice);
	stored_batch(&slice, 0, 3, 100, 0, false, 0);
	ch_be_put32(slice.data + 8, 5);
	CH_CHECK_EQ_INT(down_all(slice.data, slice.len, 1, 0, 1 << 20, &out),
			CH_KERR_CORRUPT_MESSAGE);
	ch_buf_free(&slice);
	ch_buf_free(&out);
	ch_buf_free(&whole);
	ch_buf_free(&one);
}

static void
t_down_big_overflow(void)
{
	/* A slice much larger than what converts (a huge partial batch): the
	 * overflow padding repeats its header every 128 KiB, as Kafka's
	 * buildOverflowBatch is called again for what remains. */
	ch_buf slice, out, whole;
	ch_buf_init(&slice);
	ch_buf_init(&out);
	ch_buf_init(&whole);
	stored_batch(&slice, 0, 2, 100, 0, false, 0);
	size_t first = slice.len;
	ch_buf_reset(&whole);
	ch_legacy_down_batch(slice.data, first, 1, 0, &whole);
	uint8_t *p = ch_buf_extend(&slice, 300000);
	memset(p, 0, 300000);
	ch_be_put32(p + 8, 1000000); /* a batch larger than the slice */
	p[16] = 2;
	CH_CHECK_EQ_INT(down_all(slice.data, slice.len, 1, 0, 4096, &out), 0);
	CH_CHECK_EQ_INT(out.len, slice.len);
	size_t at = whole.len, left = slice.len - whole.len;
	int headers = 0;
	while (left > 0) {
		CH_CHECK_EQ_INT((int64_t)ch_be_get64(out.data + at), -1);
		CH_CHECK_EQ_INT(ch_be_get32(out.data + at + 8), CH_MAX(left + 1, 61));
		size_t n = CH_MIN(CH_MAX(12, CH_MIN(left + 1, 131072)), left);
		at += n;
		left -= n;
		headers++;
	}
	CH_CHECK_EQ_INT(headers, 3);
	ch_buf_free(&slice);
	ch_buf_free(&out);
	ch_buf_free(&whole);
}

CH_TEST_MAIN(CH_TEST(t_up_plain), CH_TEST(t_up_wrappers), CH_TEST(t_up_bad), CH_TEST(t_up_partial),
	     CH_TEST(t_down_plain), CH_TEST(t_down_compressed), CH_TEST(t_down_stream),
	     CH_TEST(t_down_big_overflow))
