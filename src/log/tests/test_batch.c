/* test_batch.c: record batch v2 parsing, validation, rewrites, codecs. */
#include "log/tests/log_util.h"

#include <snappy-c.h>

#include "common/ch_hash.h"
#include "common/ch_test.h"
#include "log/ch_codec.h"

static void
t_roundtrip(void)
{
	ch_buf b;
	ch_buf_init(&b);
	tu_batch(&b, 5, 1000, 0, 0, false, 0);
	ch_batch_hdr h;
	CH_CHECK_EQ_INT(ch_batch_check(b.data, b.len, 0, true, &h), CH_BATCH_OK);
	CH_CHECK_EQ_INT(h.records_count, 5);
	CH_CHECK_EQ_INT(h.last_offset_delta, 4);
	CH_CHECK_EQ_INT(h.base_timestamp, 1000);
	CH_CHECK_EQ_INT(h.max_timestamp, 1004);
	CH_CHECK_EQ_INT(ch_batch_size(&h), (int64_t)b.len);
	CH_CHECK_EQ_INT(h.producer_id, -1);
	ch_record_iter it;
	ch_record rec;
	ch_record_iter_init(&it, b.data + CH_BATCH_HDR_SIZE, b.len - CH_BATCH_HDR_SIZE, 5);
	int i = 0;
	while (ch_record_next(&it, &rec) == 1) {
		CH_CHECK_EQ_INT(rec.offset_delta, i);
		CH_CHECK_EQ_INT(rec.timestamp_delta, i);
		CH_CHECK(rec.key.len == 2 && memcmp(rec.key.p, "k", 1) == 0);
		i++;
	}
	CH_CHECK_EQ_INT(i, 5);
	CH_CHECK_EQ_INT(it.err, 0);

	/* Offset rewrite leaves the CRC valid; epoch too. */
	ch_batch_set_base_offset(b.data, 123456789);
	ch_batch_set_leader_epoch(b.data, 7);
	CH_CHECK_EQ_INT(ch_batch_check(b.data, b.len, 0, true, &h), CH_BATCH_OK);
	CH_CHECK_EQ_INT(h.base_offset, 123456789);
	CH_CHECK_EQ_INT(h.partition_leader_epoch, 7);
	/* LogAppendTime recomputes it. */
	ch_batch_set_log_append_time(b.data, b.len, 99999);
	CH_CHECK_EQ_INT(ch_batch_check(b.data, b.len, 0, true, &h), CH_BATCH_OK);
	CH_CHECK_EQ_INT(h.max_timestamp, 99999);
	CH_CHECK(h.attributes & CH_BATCH_ATTR_LOG_APPEND_TIME);
	ch_buf_free(&b);
}

static void
t_reject(void)
{
	ch_buf b;
	ch_buf_init(&b);
	tu_batch(&b, 3, 1, 0, 0, false, 0);
	ch_batch_hdr h;
	/* Every truncation is "short", never a crash. */
	for (size_t n = 0; n < b.len; n++)
		CH_CHECK_EQ_INT(ch_batch_check(b.data, n, 0, true, &h),
				n < 17 || n < b.len ? CH_BATCH_ESHORT : 0);
	/* Every single-byte corruption past the CRC field is caught. */
	for (size_t i = CH_BATCH_CRC_START; i < b.len; i++) {
		b.data[i] ^= 0x40;
		CH_CHECK(ch_batch_check(b.data, b.len, 0, true, &h) == CH_BATCH_ECRC);
		b.data[i] ^= 0x40;
	}
	b.data[16] = 1;
	CH_CHECK_EQ_INT(ch_batch_check(b.data, b.len, 0, true, &h), CH_BATCH_EMAGIC);
	b.data[16] = 2;
	/* batchLength lies. */
	uint8_t save = b.data[11];
	b.data[11] = 10;
	CH_CHECK_EQ_INT(ch_batch_check(b.data, b.len, 0, true, &h), CH_BATCH_ELENGTH);
	b.data[11] = save;
	CH_CHECK_EQ_INT(ch_batch_check(b.data, b.len, 20, true, &h), CH_BATCH_ELENGTH);
	/* recordsCount != lastOffsetDelta + 1, with a valid CRC. */
	b.data[60] = 4;
	b.data[17] = b.data[18] = b.data[19] = b.data[20] = 0;
	uint32_t crc = ch_batch_compute_crc(b.data, b.len);
	b.data[17] = (uint8_t)(crc >> 24);
	b.data[18] = (uint8_t)(crc >> 16);
	b.data[19] = (uint8_t)(crc >> 8);
	b.data[20] = (uint8_t)crc;
	CH_CHECK_EQ_INT(ch_batch_check(b.data, b.len, 0, true, &h), CH_BATCH_EINVALID);
	ch_buf_free(&b);
}

/* Random bytes with a correct CRC must not crash the record parser. */
static void
t_fuzz_records(void)
{
	uint32_t seed = 12345;
	for (int iter = 0; iter < 20000; iter++) {
		uint8_t buf[200];
		size_t n = CH_BATCH_HDR_SIZE + (size_t)(iter % 120);
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			buf[i] = (uint8_t)(seed >> 16);
		}
		uint32_t bl = (uint32_t)(n - 12);
		buf[8] = 0;
		buf[9] = 0;
		buf[10] = (uint8_t)(bl >> 8);
		buf[11] = (uint8_t)bl;
		buf[16] = 2;
		buf[21] = 0;
		buf[22] = (uint8_t)(buf[22] & 0x08);
		buf[57] = buf[58] = 0;
		buf[23] = buf[24] = 0;
		buf[59] = 0;
		buf[25] = buf[60] == 0 ? 0 : 0;
		buf[26] = (uint8_t)(buf[60] ? buf[60] - 1 : 0);
		uint32_t crc = ch_batch_compute_crc(buf, n);
		buf[17] = (uint8_t)(crc >> 24);
		buf[18] = (uint8_t)(crc >> 16);
		buf[19] = (uint8_t)(crc >> 8);
		buf[20] = (uint8_t)crc;
		ch_batch_hdr h;
		int e = ch_batch_check(buf, n, 0, false, &h);
		CH_CHECK(e == CH_BATCH_OK || e == CH_BATCH_ERECORDS || e == CH_BATCH_EINVALID);
	}
}

static void
t_codecs(void)
{
	for (int codec = 1; codec <= 4; codec++) {
		ch_buf b, plain, out;
		ch_buf_init(&b);
		ch_buf_init(&plain);
		ch_buf_init(&out);
		tu_batch(&b, 50, 1000, 0, 0, false, codec);
		tu_batch(&plain, 50, 1000, 0, 0, false, 0);
		ch_batch_hdr h;
		CH_CHECK_EQ_INT(ch_batch_check(b.data, b.len, 0, true, &h), CH_BATCH_OK);
		CH_CHECK_EQ_INT(ch_batch_compression(&h), codec);
		const uint8_t *recs;
		size_t rlen;
		CH_CHECK_EQ_INT(ch_batch_records(b.data, &h, &out, 1 << 20, &recs, &rlen), CH_OK);
		CH_CHECK_EQ_INT(rlen, plain.len - CH_BATCH_HDR_SIZE);
		CH_CHECK(rlen == plain.len - CH_BATCH_HDR_SIZE &&
			 memcmp(recs, plain.data + CH_BATCH_HDR_SIZE, rlen) == 0);
		/* The bomb guard. */
		CH_CHECK_EQ_INT(ch_batch_records(b.data, &h, &out, 100, &recs, &rlen), CH_ERR);
		/* Truncated compressed data is an error, not a crash. */
		ch_buf_reset(&out);
		CH_CHECK_EQ_INT(ch_codec_decompress(codec, b.data + CH_BATCH_HDR_SIZE,
						    (b.len - CH_BATCH_HDR_SIZE) / 2, &out, 1 << 20),
				CH_ERR);
		ch_buf_free(&b);
		ch_buf_free(&plain);
		ch_buf_free(&out);
	}
	/* lz4 frames as Kafka's Java client writes and reads them: independent
	 * 64 KiB blocks (FLG 0x60: version 1, block independence), BD 0x40, a
	 * correct header checksum. Kafka's reader refuses linked blocks. */
	{
		ch_buf in, z, back;
		ch_buf_init(&in);
		ch_buf_init(&z);
		ch_buf_init(&back);
		uint32_t st = 1;
		for (int i = 0; i < 300000; i++) {
			uint8_t c = (uint8_t)('a' + ch_test_rand(&st) % 4);
			ch_buf_append(&in, &c, 1);
		}
		CH_CHECK_EQ_INT(ch_codec_compress(CH_COMPRESSION_LZ4, in.data, in.len, &z), CH_OK);
		static const uint8_t kafka_hdr[6] = {0x04, 0x22, 0x4d, 0x18, 0x60, 0x40};
		CH_CHECK(z.len > 7 && memcmp(z.data, kafka_hdr, 6) == 0);
		CH_CHECK_EQ_INT(
			ch_codec_decompress(CH_COMPRESSION_LZ4, z.data, z.len, &back, 1 << 20),
			CH_OK);
		CH_CHECK(back.len == in.len && memcmp(back.data, in.data, in.len) == 0);
		ch_buf_free(&in);
		ch_buf_free(&z);
		ch_buf_free(&back);
	}
	/* Snappy: raw (librdkafka) and xerial-framed (Java clients) both read;
	 * written framed, as snappy-java writes it. */
	const char *msg = "hello hello hello hello xerial";
	char raw[128];
	size_t raw_len = sizeof(raw);
	CH_CHECK_EQ_INT(snappy_compress(msg, strlen(msg), raw, &raw_len), SNAPPY_OK);
	ch_buf fr, out, ours;
	ch_buf_init(&fr);
	ch_buf_init(&out);
	ch_buf_init(&ours);
	CH_CHECK_EQ_INT(ch_codec_decompress(CH_COMPRESSION_SNAPPY, raw, raw_len, &out, 1000),
			CH_OK);
	CH_CHECK(out.len == strlen(msg) && memcmp(out.data, msg, out.len) == 0);
	static const uint8_t hdr[16] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0,
					0,    0,   0,   1,   0,   0,   0,   1};
	ch_buf_append(&fr, hdr, 16);
	uint8_t l[4] = {0, 0, (uint8_t)(raw_len >> 8), (uint8_t)raw_len};
	ch_buf_append(&fr, l, 4);
	ch_buf_append(&fr, raw, raw_len);
	ch_buf_reset(&out);
	CH_CHECK_EQ_INT(ch_codec_decompress(CH_COMPRESSION_SNAPPY, fr.data, fr.len, &out, 1000),
			CH_OK);
	CH_CHECK(out.len == strlen(msg) && memcmp(out.data, msg, out.len) == 0);
	CH_CHECK_EQ_INT(ch_codec_compress(CH_COMPRESSION_SNAPPY, msg, strlen(msg), &ours), CH_OK);
	CH_CHECK(ours.len == fr.len && memcmp(ours.data, fr.data, fr.len) == 0);
	/* 32 KiB of input per block. */
	ch_buf big;
	ch_buf_init(&big);
	for (int i = 0; i < 70000; i++)
		ch_buf_append(&big, &(char){(char)('a' + i % 7)}, 1);
	ch_buf_reset(&ours);
	CH_CHECK_EQ_INT(ch_codec_compress(CH_COMPRESSION_SNAPPY, big.data, big.len, &ours), CH_OK);
	size_t blocks = 0;
	for (size_t pos = 16; pos + 4 <= ours.len; blocks++)
		pos += 4 + (((size_t)ours.data[pos] << 24) | ((size_t)ours.data[pos + 1] << 16) |
			    ((size_t)ours.data[pos + 2] << 8) | ours.data[pos + 3]);
	CH_CHECK_EQ_INT(blocks, 3);
	ch_buf_reset(&out);
	CH_CHECK_EQ_INT(
		ch_codec_decompress(CH_COMPRESSION_SNAPPY, ours.data, ours.len, &out, 1 << 20),
		CH_OK);
	CH_CHECK(out.len == big.len && memcmp(out.data, big.data, big.len) == 0);
	ch_buf_free(&big);
	ch_buf_free(&fr);
	ch_buf_free(&out);
	ch_buf_free(&ours);
}

/* Java's GZIPInputStream reads concatenated gzip members as one stream and
 * ignores bytes after a member that do not start another (checked with
 * JDK 17): two members give both texts, junk after one is dropped. */
static void
t_gzip_members(void)
{
	ch_buf one, two, out;
	ch_buf_init(&one);
	ch_buf_init(&two);
	ch_buf_init(&out);
	CH_CHECK_EQ_INT(ch_codec_compress(CH_COMPRESSION_GZIP, "hello ", 6, &one), CH_OK);
	CH_CHECK_EQ_INT(ch_codec_compress(CH_COMPRESSION_GZIP, "world", 5, &two), CH_OK);
	ch_buf_append(&one, two.data, two.len);
	CH_CHECK_EQ_INT(ch_codec_decompress(CH_COMPRESSION_GZIP, one.data, one.len, &out, 100),
			CH_OK);
	CH_CHECK(out.len == 11 && memcmp(out.data, "hello world", 11) == 0);
	/* past max_out across members: refused */
	ch_buf_reset(&out);
	CH_CHECK_EQ_INT(ch_codec_decompress(CH_COMPRESSION_GZIP, one.data, one.len, &out, 8),
			CH_ERR);
	ch_buf_reset(&one);
	CH_CHECK_EQ_INT(ch_codec_compress(CH_COMPRESSION_GZIP, "hello ", 6, &one), CH_OK);
	ch_buf_append(&one, "JUNKJUNK", 8);
	ch_buf_reset(&out);
	CH_CHECK_EQ_INT(ch_codec_decompress(CH_COMPRESSION_GZIP, one.data, one.len, &out, 100),
			CH_OK);
	CH_CHECK(out.len == 6 && memcmp(out.data, "hello ", 6) == 0);
	/* a second member that is corrupt is an error, as in Java */
	ch_buf_reset(&one);
	CH_CHECK_EQ_INT(ch_codec_compress(CH_COMPRESSION_GZIP, "hello ", 6, &one), CH_OK);
	ch_buf_append(&one, two.data, two.len - 6); /* cut before its CRC */
	ch_buf_reset(&out);
	CH_CHECK_EQ_INT(ch_codec_decompress(CH_COMPRESSION_GZIP, one.data, one.len, &out, 100),
			CH_ERR);
	ch_buf_free(&one);
	ch_buf_free(&two);
	ch_buf_free(&out);
}

/* What Kafka 4.4's own readers (Compression.wrapForInput) make of two
 * concatenated frames and of junk after one (checked on kafka-clients 4.4.0):
 * zstd reads both frames and fails on junk; lz4 reads the first frame only
 * and ignores what follows. */
static void
t_zstd_lz4_frames(void)
{
	struct {
		int codec;
		const char *two_frames; /* NULL: an error */
		const char *junk;
	} cases[] = {{CH_COMPRESSION_ZSTD, "hello world", NULL},
		     {CH_COMPRESSION_LZ4, "hello ", "hello "}};
	for (size_t i = 0; i < CH_ARRAY_LEN(cases); i++) {
		ch_buf one, two, out;
		ch_buf_init(&one);
		ch_buf_init(&two);
		ch_buf_init(&out);
		CH_CHECK_EQ_INT(ch_codec_compress(cases[i].codec, "hello ", 6, &one), CH_OK);
		CH_CHECK_EQ_INT(ch_codec_compress(cases[i].codec, "world", 5, &two), CH_OK);
		size_t one_len = one.len;
		ch_buf_append(&one, two.data, two.len);
		CH_CHECK_EQ_INT(ch_codec_decompress(cases[i].codec, one.data, one.len, &out, 100),
				CH_OK);
		CH_CHECK(out.len == strlen(cases[i].two_frames) &&
			 memcmp(out.data, cases[i].two_frames, out.len) == 0);
		one.len = one_len;
		ch_buf_append(&one, "JUNKJUNKJUNK", 12);
		ch_buf_reset(&out);
		int rc = ch_codec_decompress(cases[i].codec, one.data, one.len, &out, 100);
		CH_CHECK_EQ_INT(rc, cases[i].junk ? CH_OK : CH_ERR);
		if (cases[i].junk)
			CH_CHECK(out.len == strlen(cases[i].junk) &&
				 memcmp(out.data, cases[i].junk, out.len) == 0);
		ch_buf_free(&one);
		ch_buf_free(&two);
		ch_buf_free(&out);
	}
}

/* A builder that checksums records as they come (track_crc) writes the
 * very bytes of one that checksums at the end, for record sizes across the
 * hardware CRC's block sizes, headers included, at every codec. */
static void
t_tracked_crc(void)
{
	static uint8_t val[20000];
	for (size_t i = 0; i < sizeof(val); i++)
		val[i] = (uint8_t)(i * 131 + (i >> 7));
	const uint8_t hdrs[] = {2, 'h', 2, 'v'}; /* key "h", value "v" (varint lengths) */
	int codecs[] = {CH_COMPRESSION_NONE, CH_COMPRESSION_LZ4, CH_COMPRESSION_ZSTD};
	for (size_t ci = 0; ci < sizeof(codecs) / sizeof(codecs[0]); ci++) {
		for (int n = 1; n <= 40; n += 13) {
			ch_buf a, t;
			ch_buf_init(&a);
			ch_buf_init(&t);
			ch_batch_builder ba, bt;
			ch_batch_builder_begin(&ba, &a, 0, 0, 5000, 42, 3, 17);
			ch_batch_builder_begin(&bt, &t, 0, 0, 5000, 42, 3, 17);
			ch_batch_builder_track_crc(&bt);
			for (int i = 0; i < n; i++) {
				int32_t vlen = (int32_t)((i * 7919) % (int)sizeof(val));
				ch_bytes key = i % 3 ? (ch_bytes){(const uint8_t *)"key", 3}
						     : CH_BYTES_NULL;
				ch_bytes v = {val, vlen};
				int32_t nh = i % 2;
				ch_batch_builder_add(&ba, i, 5000 + i, key, v, nh, nh ? hdrs : NULL,
						     nh ? sizeof(hdrs) : 0);
				ch_batch_builder_add(&bt, i, 5000 + i, key, v, nh, nh ? hdrs : NULL,
						     nh ? sizeof(hdrs) : 0);
			}
			CH_CHECK_EQ_INT(ch_batch_builder_end_codec(&ba, -1, codecs[ci]), CH_OK);
			CH_CHECK_EQ_INT(ch_batch_builder_end_codec(&bt, -1, codecs[ci]), CH_OK);
			CH_CHECK_EQ_INT(a.len, t.len);
			CH_CHECK(a.len == t.len && memcmp(a.data, t.data, a.len) == 0);
			ch_batch_hdr h;
			CH_CHECK_EQ_INT(ch_batch_check(t.data, t.len, 0, true, &h), CH_BATCH_OK);
			CH_CHECK_EQ_INT(h.records_count, n);
			ch_buf_free(&a);
			ch_buf_free(&t);
		}
	}
}

CH_TEST_MAIN(CH_TEST(t_roundtrip), CH_TEST(t_tracked_crc), CH_TEST(t_reject),
	     CH_TEST(t_fuzz_records), CH_TEST(t_codecs), CH_TEST(t_gzip_members),
	     CH_TEST(t_zstd_lz4_frames))
