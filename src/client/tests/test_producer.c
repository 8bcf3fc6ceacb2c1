/* libcohort's producer without a broker: the partitioners (Java's murmur2,
 * librdkafka's CRC-32 and FNV-1a, KIP-480's sticky choice), ProducerConfig's
 * checks in cohort_producer_new, cohort_produce's local refusals, and
 * cl_batch_split (a batch refused with MESSAGE_TOO_LARGE cut in pieces)
 * (the keys themselves: test_conf.c). Placement against real producers is in
 * tests/integration/test_client_libcohort_producer.py. */
#include <string.h>

#include "client/cl_conf.h"
#include "client/cl_int.h"
#include "client/cl_producer.h"
#include "common/ch_test.h"
#include "log/ch_batch.h"
#include "proto/generated/ch_msgs.h"

/* Utils.murmur2 values from Kafka's own UtilsTest.testMurmur2. */
static void
t_murmur2(void)
{
	static const struct {
		const char *key;
		int32_t h;
	} v[] = {
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		CH_CHECK_EQ_INT(cl_murmur2(v[i].key, strlen(v[i].key)), v[i].h);
		/* toPositive(h) % n */
		int32_t want = (int32_t)(((uint32_t)v[i].h & 0x7fffffff) % 7u);
		CH_CHECK_EQ_INT(
			cl_part_for_key(CL_PART_MURMUR2_RANDOM, v[i].key, strlen(v[i].key), 7),
			want);
	}
}

static void
t_other_hashes(void)
{
	/* FNV-1a 32 test vectors (Fowler/Noll/Vo) */
	CH_CHECK_EQ_INT((int64_t)cl_fnv1a("", 0), 0x811c9dc5);
	CH_CHECK_EQ_INT((int64_t)cl_fnv1a("a", 1), 0xe40c292c);
	CH_CHECK_EQ_INT((int64_t)cl_fnv1a("foobar", 6), 0xbf9cf968);
	CH_CHECK_EQ_INT(cl_part_for_key(CL_PART_FNV1A, "foobar", 6, 10),
			(0x100000000 - 0xbf9cf968) % 10); /* |(int32)h| */
	/* CRC-32 of "123456789" is its check value 0xcbf43926 */
	CH_CHECK_EQ_INT(cl_part_for_key(CL_PART_CONSISTENT, "123456789", 9, 7), 0xcbf43926u % 7);
	CH_CHECK_EQ_INT(cl_part_for_key(CL_PART_CONSISTENT_RANDOM, "123456789", 9, 7),
			0xcbf43926u % 7);
}

static void
t_no_key(void)
{
	/* *_random and random: the sticky partition (-1) */
	CH_CHECK_EQ_INT(cl_part_for_key(CL_PART_MURMUR2_RANDOM, NULL, 0, 5), -1);
	CH_CHECK_EQ_INT(cl_part_for_key(CL_PART_FNV1A_RANDOM, NULL, 0, 5), -1);
	CH_CHECK_EQ_INT(cl_part_for_key(CL_PART_CONSISTENT_RANDOM, NULL, 0, 5), -1);
	CH_CHECK_EQ_INT(cl_part_for_key(CL_PART_CONSISTENT_RANDOM, "", 0, 5), -1);
	CH_CHECK_EQ_INT(cl_part_for_key(CL_PART_RANDOM, "k", 1, 5), -1);
	/* an empty key is hashed by murmur2_random, as Java hashes byte[0] */
	CH_CHECK_EQ_INT(cl_part_for_key(CL_PART_MURMUR2_RANDOM, "", 0, 5),
			(int32_t)(((uint32_t)cl_murmur2("", 0) & 0x7fffffff) % 5));
	/* the non-random ones hash a null key as empty: one partition */
	CH_CHECK_EQ_INT(cl_part_for_key(CL_PART_MURMUR2, NULL, 0, 5),
			cl_part_for_key(CL_PART_MURMUR2, "", 0, 5));
	CH_CHECK_EQ_INT(cl_part_for_key(CL_PART_CONSISTENT, NULL, 0, 5), 0);
	CH_CHECK_EQ_INT(cl_part_for_key(CL_PART_FNV1A, NULL, 0, 5), (0x100000000 - 0x811c9dc5) % 5);
}

static void
t_sticky_next(void)
{
	uint64_t rng = 12345;
	int32_t avail[] = {1, 4, 6};
	int seen[8] = {0};
	int32_t prev = 4;
	for (int i = 0; i < 300; i++) {
		int32_t p = cl_part_sticky_next(avail, 3, 8, prev, &rng);
		CH_CHECK(p == 1 || p == 4 || p == 6);
		CH_CHECK(p != prev);
		seen[p]++;
		prev = p;
	}
	CH_CHECK(seen[1] > 0 && seen[4] > 0 && seen[6] > 0);
	/* one available: always it; none: any partition but the previous */
	CH_CHECK_EQ_INT(cl_part_sticky_next(avail, 1, 8, 1, &rng), 1);
	for (int i = 0; i < 100; i++) {
		int32_t p = cl_part_sticky_next(NULL, 0, 3, 2, &rng);
		CH_CHECK(p >= 0 && p < 2);
	}
	CH_CHECK_EQ_INT(cl_part_sticky_next(NULL, 0, 1, 0, &rng), 0);
}

/* A producer on a port nobody listens on: what fails before any broker. */
static cohort_conf *
offline_conf(void)
{
	cohort_conf *c = cohort_conf_new();
	char err[256];
	CH_CHECK_EQ_INT(cohort_conf_set(c, "bootstrap.servers", "127.0.0.1:1", err, sizeof(err)),
			COHORT_OK);
	return c;
}

static void
t_new_checks(void)
{
	char err[256] = "";
	cohort_conf *c = cohort_conf_new();
	CH_CHECK(cohort_producer_new(c, err, sizeof(err)) == NULL);
	CH_CHECK_EQ_STR(err, "No resolvable bootstrap urls given in bootstrap.servers");
	cohort_conf_free(c);

	/* idempotence asked for explicitly conflicts: refused, as Java does */
	c = offline_conf();
	cohort_conf_set(c, "enable.idempotence", "true", err, sizeof(err));
	cohort_conf_set(c, "acks", "1", err, sizeof(err));
	CH_CHECK(cohort_producer_new(c, err, sizeof(err)) == NULL);
	CH_CHECK_EQ_STR(err, "Must set acks to all in order to use the idempotent producer. "
			     "Otherwise we cannot guarantee idempotence.");
	cohort_conf_set(c, "acks", "all", err, sizeof(err));
	cohort_conf_set(c, "retries", "0", err, sizeof(err));
	CH_CHECK(cohort_producer_new(c, err, sizeof(err)) == NULL);
	CH_CHECK_EQ_STR(err, "Must set retries to non-zero when using the idempotent producer.");
	cohort_conf_set(c, "retries", NULL, err, sizeof(err));
	cohort_conf_set(c, "max.in.flight.requests.per.connection", "6", err, sizeof(err));
	CH_CHECK(cohort_producer_new(c, err, sizeof(err)) == NULL);
	CH_CHECK(strstr(err, "max.in.flight.requests.per.connection") != NULL);
	/* only by default: the conflicting setting wins, idempotence is off */
	cohort_conf_set(c, "enable.idempotence", NULL, err, sizeof(err));
	cohort_producer *p = cohort_producer_new(c, err, sizeof(err));
	CH_CHECK(p != NULL);
	cohort_producer_free(p);
	cohort_conf_set(c, "delivery.timeout.ms", "1000", err, sizeof(err));
	CH_CHECK(cohort_producer_new(c, err, sizeof(err)) == NULL);
	CH_CHECK_EQ_STR(err, "delivery.timeout.ms should be equal to or larger than linger.ms + "
			     "request.timeout.ms");
	cohort_conf_free(c);
}

static void
t_produce_refusals(void)
{
	cohort_conf *c = offline_conf();
	char err[256];
	CH_CHECK_EQ_INT(cohort_conf_set(c, "max.block.ms", "200", err, sizeof(err)), COHORT_OK);
	CH_CHECK_EQ_INT(cohort_conf_set(c, "max.request.size", "1000", err, sizeof(err)),
			COHORT_OK);
	cohort_producer *p = cohort_producer_new(c, err, sizeof(err));
	cohort_conf_free(c);
	CH_CHECK(p != NULL);
	CH_CHECK_EQ_INT(cohort_produce(p, NULL, -1, NULL, 0, "v", 1, NULL, 0, -1, NULL),
			COHORT_ERR__INVALID_ARG);
	CH_CHECK_EQ_INT(cohort_produce(p, "", -1, NULL, 0, "v", 1, NULL, 0, -1, NULL),
			COHORT_ERR__INVALID_ARG);
	CH_CHECK_EQ_INT(cohort_produce(p, "t", -2, NULL, 0, "v", 1, NULL, 0, -1, NULL),
			COHORT_ERR__INVALID_ARG);
	CH_CHECK_EQ_INT(cohort_produce(p, "t", -1, NULL, 0, "v", 1, NULL, 0, -2, NULL),
			COHORT_ERR__INVALID_ARG);
	cohort_header bad = {NULL, "x", 1};
	CH_CHECK_EQ_INT(cohort_produce(p, "t", -1, NULL, 0, "v", 1, &bad, 1, -1, NULL),
			COHORT_ERR__INVALID_ARG);
	static char big[2000];
	CH_CHECK_EQ_INT(cohort_produce(p, "t", -1, NULL, 0, big, sizeof(big), NULL, 0, -1, NULL),
			COHORT_ERR_MESSAGE_TOO_LARGE);
	/* no broker: the topic never appears in the metadata */
	CH_CHECK_EQ_INT(cohort_produce(p, "t", -1, "k", 1, "v", 1, NULL, 0, -1, NULL),
			COHORT_ERR__TIMED_OUT);
	CH_CHECK_EQ_INT(cohort_producer_poll(p, 0), 0);
	CH_CHECK_EQ_INT(cohort_flush(p, 0), COHORT_OK); /* nothing queued */
	CH_CHECK_EQ_INT(cohort_producer_close(p, 1000), COHORT_OK);
	CH_CHECK_EQ_INT(cohort_produce(p, "t", -1, NULL, 0, "v", 1, NULL, 0, -1, NULL),
			COHORT_ERR__CLOSED);
	CH_CHECK_EQ_INT(cohort_producer_close(p, 1000), COHORT_ERR__CLOSED);
	cohort_producer_free(p);
}

/* cl_produce_encode (the batches not copied when framed) writes the very
 * bytes of the generated ProduceRequest encoder at every version libcohort
 * can send, topics grouped in first-seen order, and they decode back. */
static void
t_produce_encode(void)
{
	static const uint8_t r0[] = {1, 2, 3}, r1[300] = {9}, r2[] = {7};
	const char *ta = "topic-a", *tb = "b";
	const cl_produce_part parts[] = {
		{ta, 0, r0, sizeof(r0)},
		{tb, 5, r1, sizeof(r1)},
		{ta, 3, r2, sizeof(r2)},
	};
	const ch_api_codec *codec = ch_api_codec_find(CH_APIKEY_PRODUCE);
	cl_client c;
	memset(&c, 0, sizeof(c)); /* not framing: cl_request_ref copies */
	for (int16_t v = 3; v <= codec->max_version; v++) {
		ch_ProduceRequest m;
		ch_ProduceRequest_init(&m);
		m.TransactionalId = CH_STR_NULL;
		m.Acks = -1;
		m.TimeoutMs = 30000;
		ch_ProduceRequest_PartitionProduceData pa[2] = {{0}}, pb[1] = {{0}};
		pa[0].Index = 0;
		pa[0].Records = (ch_bytes){r0, sizeof(r0)};
		pa[1].Index = 3;
		pa[1].Records = (ch_bytes){r2, sizeof(r2)};
		pb[0].Index = 5;
		pb[0].Records = (ch_bytes){r1, sizeof(r1)};
		ch_ProduceRequest_TopicProduceData td[2];
		/* not {{0}}: -Wmissing-braces (its first field is a struct) */
		memset(td, 0, sizeof td);
		td[0].Name = ch_str_c(ta);
		td[0].PartitionData = pa;
		td[0].PartitionData_n = 2;
		td[1].Name = ch_str_c(tb);
		td[1].PartitionData = pb;
		td[1].PartitionData_n = 1;
		m.TopicData = td;
		m.TopicData_n = 2;
		ch_buf want, got;
		ch_buf_init(&want);
		ch_buf_init(&got);
		ch_ProduceRequest_encode(&want, v, &m);
		cl_produce_encode(&c, &got, v, -1, 30000, parts, 3);
		CH_CHECK_EQ_INT(got.len, want.len);
		CH_CHECK(got.len == want.len && memcmp(got.data, want.data, got.len) == 0);
		ch_rd rd;
		ch_rd_init(&rd, got.data, got.len);
		ch_arena a;
		ch_arena_init(&a);
		ch_ProduceRequest back;
		ch_ProduceRequest_init(&back);
		CH_CHECK_EQ_INT(ch_ProduceRequest_decode(&rd, &a, v, &back), 0);
		CH_CHECK_EQ_INT(ch_rd_left(&rd), 0);
		CH_CHECK_EQ_INT(back.TopicData_n, 2);
		ch_arena_free(&a);
		ch_buf_free(&want);
		ch_buf_free(&got);
	}
}

/* The records of the split tests: keys (some null), values, headers on
 * the odd ones, timestamps not in order (the 4th before the first). */
#define SPLIT_N 20
#define SPLIT_TS 1700000000000LL

static int64_t
split_ts(int32_t i)
{
	return i == 3 ? SPLIT_TS - 50 : SPLIT_TS + 7 * i;
}

/* A sealed producer batch of SPLIT_N records in codec, into out. */
static void
split_batch(ch_buf *out, int codec)
{
	ch_batch_builder bb;
	ch_batch_builder_begin(&bb, out, 0, 0, split_ts(0), 4711, 3, 1000);
	for (int32_t i = 0; i < SPLIT_N; i++) {
		char k[16], v[128], h[32];
		int kl = snprintf(k, sizeof(k), "k%d", i);
		memset(v, 'a' + i % 26, sizeof(v));
		int vl = 60 + i * 3; /* 60..117 */
		/* one header "h" = "<i>" */
		int hl = snprintf(h + 2, sizeof(h) - 2, "%d", i);
		h[0] = 2; /* varint 1: key length */
		h[1] = 'h';
		memmove(h + 3, h + 2, (size_t)hl);
		h[2] = (char)(2 * hl); /* varint hl */
		ch_batch_builder_add(&bb, i, split_ts(i),
				     i % 5 == 0 ? CH_BYTES_NULL
						: (ch_bytes){(const uint8_t *)k, kl},
				     (ch_bytes){(const uint8_t *)v, vl}, i % 2, (const uint8_t *)h,
				     i % 2 ? (size_t)(3 + hl) : 0);
	}
	CH_CHECK_EQ_INT(ch_batch_builder_end_codec(&bb, -1, codec), CH_OK);
}

/* The pieces a split made, as the producer's would be. */
typedef struct split_out {
	ch_buf buf[SPLIT_N];
	ch_batch_builder bb[SPLIT_N];
	int32_t first[SPLIT_N];
	int64_t ts[SPLIT_N];
	int n;
	int fail_at; /* piece() returns NULL at this piece (-1 never) */
} split_out;

static ch_batch_builder *
split_cb(void *ud, int32_t first, int64_t ts)
{
	split_out *o = ud;
	if (o->n == o->fail_at || o->n == SPLIT_N)
		return NULL;
	int k = o->n++;
	ch_buf_init(&o->buf[k]);
	ch_batch_builder_begin(&o->bb[k], &o->buf[k], 0, 0, ts, -1, -1, -1);
	o->first[k] = first;
	o->ts[k] = ts;
	return &o->bb[k];
}

static void
split_free(split_out *o)
{
	for (int k = 0; k < o->n; k++)
		ch_buf_free(&o->buf[k]);
	o->n = 0;
}

/* Ends the pieces and checks they hold the records of split_batch in
 * order, each with its key, value, headers and timestamp, offset deltas
 * from 0, at most limit bytes unless one record. */
static void
split_check(split_out *o, int32_t np, size_t limit)
{
	CH_CHECK_EQ_INT(np, o->n);
	CH_CHECK(np >= 2);
	int32_t i = 0;
	for (int k = 0; k < o->n; k++) {
		CH_CHECK_EQ_INT(o->first[k], i);
		CH_CHECK_EQ_INT(o->ts[k], split_ts(i));
		CH_CHECK_EQ_INT(ch_batch_builder_end(&o->bb[k], -1), CH_OK);
		ch_batch_hdr h;
		CH_CHECK_EQ_INT(ch_batch_check(o->buf[k].data, o->buf[k].len, 0, true, &h),
				CH_BATCH_OK);
		CH_CHECK(h.records_count == 1 || o->buf[k].len <= limit);
		CH_CHECK_EQ_INT(h.base_timestamp, split_ts(i));
		ch_record_iter it;
		ch_record_iter_init(&it, o->buf[k].data + CH_BATCH_HDR_SIZE,
				    o->buf[k].len - CH_BATCH_HDR_SIZE, h.records_count);
		ch_record r;
		int64_t max_ts = -1;
		for (int32_t d = 0; ch_record_next(&it, &r) == 1; d++, i++) {
			CH_CHECK_EQ_INT(r.offset_delta, d);
			CH_CHECK_EQ_INT(h.base_timestamp + r.timestamp_delta, split_ts(i));
			max_ts = CH_MAX(max_ts, split_ts(i));
			char k2[16];
			int kl = snprintf(k2, sizeof(k2), "k%d", i);
			if (i % 5 == 0)
				CH_CHECK_EQ_INT(r.key.len, -1);
			else
				CH_CHECK(r.key.len == kl && memcmp(r.key.p, k2, (size_t)kl) == 0);
			CH_CHECK_EQ_INT(r.value.len, 60 + i * 3);
			CH_CHECK(r.value.len > 0 && r.value.p[r.value.len - 1] == 'a' + i % 26);
			CH_CHECK_EQ_INT(r.headers_count, i % 2);
			if (i % 2) {
				char hv[16];
				int hl = snprintf(hv, sizeof(hv), "%d", i);
				CH_CHECK_EQ_INT(r.headers_len, 3 + (size_t)hl);
				CH_CHECK(r.headers[1] == 'h' &&
					 memcmp(r.headers + 3, hv, (size_t)hl) == 0);
			}
		}
		CH_CHECK_EQ_INT(it.err, 0);
		CH_CHECK_EQ_INT(h.max_timestamp, max_ts);
	}
	CH_CHECK_EQ_INT(i, SPLIT_N);
}

static void
t_split(void)
{
	static const int codecs[] = {CH_COMPRESSION_NONE, CH_COMPRESSION_GZIP};
	for (size_t c = 0; c < sizeof(codecs) / sizeof(codecs[0]); c++) {
		ch_buf b;
		ch_buf_init(&b);
		split_batch(&b, codecs[c]);
		/* at a size limit: pieces of at most 700 bytes */
		split_out o = {.fail_at = -1};
		int32_t np = cl_batch_split(b.data, b.len, 700, 1 << 20, split_cb, &o);
		split_check(&o, np, 700);
		if (codecs[c] == CH_COMPRESSION_NONE)
			CH_CHECK(np >= (int32_t)(b.len / 700));
		split_free(&o);
		/* a limit above the whole batch still makes two pieces */
		np = cl_batch_split(b.data, b.len, 1 << 20, 1 << 20, split_cb, &o);
		split_check(&o, np, 1 << 20);
		CH_CHECK_EQ_INT(o.first[1], SPLIT_N - 1);
		split_free(&o);
		/* piece() out of memory: -1, the pieces begun are the caller's */
		o.fail_at = 1;
		CH_CHECK_EQ_INT(cl_batch_split(b.data, b.len, 700, 1 << 20, split_cb, &o), -1);
		CH_CHECK_EQ_INT(o.n, 1);
		split_free(&o);
		/* a truncated batch, an inflation bound too small */
		o.fail_at = -1;
		CH_CHECK_EQ_INT(cl_batch_split(b.data, b.len - 1, 700, 1 << 20, split_cb, &o), -1);
		if (codecs[c] != CH_COMPRESSION_NONE)
			CH_CHECK_EQ_INT(cl_batch_split(b.data, b.len, 700, 100, split_cb, &o), -1);
		split_free(&o);
		ch_buf_free(&b);
	}
	/* halving as the producer does (min(batch.size, half the refused
	 * batch)): a piece refused again splits again, down to one record */
	ch_buf b;
	ch_buf_init(&b);
	split_batch(&b, CH_COMPRESSION_NONE);
	split_out o = {.fail_at = -1};
	int32_t np = cl_batch_split(b.data, b.len, b.len / 2, 1 << 20, split_cb, &o);
	split_check(&o, np, b.len / 2);
	CH_CHECK(np == 2 || np == 3); /* halves, by bytes with a header each */
	int32_t singles = 0, rounds = 0;
	ch_buf work[SPLIT_N * 2];
	int nwork = 0;
	for (int k = 0; k < o.n; k++) {
		work[nwork] = o.buf[k];
		ch_buf_init(&o.buf[k]);
		nwork++;
	}
	o.n = 0;
	while (nwork > 0 && rounds++ < 100) {
		ch_buf w = work[--nwork];
		ch_batch_hdr h;
		CH_CHECK_EQ_INT(ch_batch_parse_hdr(w.data, w.len, 0, &h), CH_BATCH_OK);
		if (h.records_count == 1) {
			singles++;
			ch_buf_free(&w);
			continue;
		}
		split_out q = {.fail_at = -1};
		np = cl_batch_split(w.data, w.len, w.len / 2, 1 << 20, split_cb, &q);
		CH_CHECK(np >= 2);
		for (int k = 0; k < q.n && nwork < SPLIT_N * 2; k++) {
			CH_CHECK_EQ_INT(ch_batch_builder_end(&q.bb[k], -1), CH_OK);
			CH_CHECK(q.buf[k].len <= w.len / 2 || q.bb[k].count == 1);
			work[nwork++] = q.buf[k];
		}
		ch_buf_free(&w);
	}
	CH_CHECK_EQ_INT(singles, SPLIT_N);
	/* one record: no split */
	ch_buf_reset(&b);
	ch_batch_builder bb;
	ch_batch_builder_begin(&bb, &b, 0, 0, 1, -1, -1, -1);
	ch_batch_builder_add(&bb, 0, 1, CH_BYTES_NULL, (ch_bytes){(const uint8_t *)"v", 1}, 0, NULL,
			     0);
	CH_CHECK_EQ_INT(ch_batch_builder_end(&bb, -1), CH_OK);
	CH_CHECK_EQ_INT(cl_batch_split(b.data, b.len, 10, 1 << 20, split_cb, &o), -1);
	CH_CHECK_EQ_INT(o.n, 0);
	ch_buf_free(&b);
	/* the pieces' base sequences: from the refused batch's, wrapping */
	CH_CHECK_EQ_INT(cl_split_seq(1000, 0), 1000);
	CH_CHECK_EQ_INT(cl_split_seq(1000, 7), 1007);
	CH_CHECK_EQ_INT(cl_split_seq(INT32_MAX - 2, 5), 2);
	CH_CHECK_EQ_INT(cl_split_seq(-1, 5), -1);
}

CH_TEST_MAIN(CH_TEST(t_murmur2), CH_TEST(t_produce_encode), CH_TEST(t_other_hashes),
	     CH_TEST(t_no_key), CH_TEST(t_sticky_next), CH_TEST(t_new_checks),
	     CH_TEST(t_produce_refusals), CH_TEST(t_split))
