/*
 * The data path at every version, against a whole broker without sockets
 * (api_harness.h): Produce (acks 0, 1 and all; errors) -> Fetch (records
 * read back through the sendfile chunks, offsets out of range, unknown
 * topics and ids, sessions, a long poll woken by a produce) -> ListOffsets
 * (earliest, latest, by time, max timestamp), and InitProducerId with an
 * idempotent producer's sequence checks. Produce v0-v2 send magic 0/1
 * message sets (v2 a gzip wrapper) and Fetch v0-v3 read them back
 * down-converted; ListOffsets v0 answers the old way; the idempotent
 * producer's batches v2 go through Produce v0-v2 too, as Kafka takes them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "api_flows.h"
#include "common/ch_common.h"
#include "common/ch_endian.h"
#include "log/ch_batch.h"
#include "log/ch_codec.h"
#include "log/ch_legacy.h"

static const int16_t family[] = {CH_APIKEY_PRODUCE, CH_APIKEY_FETCH, CH_APIKEY_LIST_OFFSETS,
				 CH_APIKEY_INIT_PRODUCER_ID};

/* Producer identity of a batch; pid -1: none. */
typedef struct producer {
	int64_t pid;
	int16_t epoch;
	int32_t seq;
} producer;

static const producer NO_PRODUCER = {-1, -1, -1};

/* A batch of n records with values "v<first + j>", timestamps ts + j. */
static void
make_batch(ch_buf *out, int n, int first, int64_t ts, producer pr)
{
	ch_buf_reset(out);
	ch_batch_builder bb;
	ch_batch_builder_begin(&bb, out, 0, 0, ts, pr.pid, pr.epoch, pr.seq);
	for (int j = 0; j < n; j++) {
		char k[16], v[16];
		int kn = snprintf(k, sizeof(k), "k%d", first + j);
		int vn = snprintf(v, sizeof(v), "v%d", first + j);
		ch_batch_builder_add(&bb, j, ts + j, (ch_bytes){(const uint8_t *)k, kn},
				     (ch_bytes){(const uint8_t *)v, vn}, 0, NULL, 0);
	}
	if (ch_batch_builder_end(&bb, -1) != CH_OK)
		abort();
}

/* One old message (magic 0/1) "k<i>"/"v<i>" at offset `offset`. */
static void
put_message(ch_buf *out, int magic, int64_t offset, int64_t ts, int i)
{
	char k[16], v[16];
	int kn = snprintf(k, sizeof(k), "k%d", i);
	int vn = snprintf(v, sizeof(v), "v%d", i);
	size_t size = (size_t)(magic ? 22 : 14) + (size_t)kn + (size_t)vn;
	uint8_t *p = ch_buf_extend(out, 12 + size);
	ch_be_put64(p, (uint64_t)offset);
	ch_be_put32(p + 8, (uint32_t)size);
	uint8_t *m = p + 12;
	m[4] = (uint8_t)magic;
	m[5] = 0;
	size_t at = 6;
	if (magic) {
		ch_be_put64(m + 6, (uint64_t)ts);
		at = 14;
	}
	ch_be_put32(m + at, (uint32_t)kn);
	memcpy(m + at + 4, k, (size_t)kn);
	at += 4 + (size_t)kn;
	ch_be_put32(m + at, (uint32_t)vn);
	memcpy(m + at + 4, v, (size_t)vn);
	ch_be_put32(m, (uint32_t)crc32(0, m + 4, (uInt)(size - 4)));
}

/* What a producer of Produce version v sends: v0 magic 0 messages, v1
 * magic 1 messages, v2 one gzip wrapper of magic 1 messages (relative
 * offsets); v3+ a batch v2. */
static void
make_records(ch_buf *out, int16_t v, int n, int first, int64_t ts)
{
	if (v >= 3) {
		make_batch(out, n, first, ts, NO_PRODUCER);
		return;
	}
	ch_buf_reset(out);
	if (v != 2) {
		for (int j = 0; j < n; j++)
			put_message(out, v == 0 ? 0 : 1, 0, ts + j, first + j);
		return;
	}
	ch_buf inner, z;
	ch_buf_init(&inner);
	ch_buf_init(&z);
	for (int j = 0; j < n; j++)
		put_message(&inner, 1, j, ts + j, first + j);
	if (ch_codec_compress(CH_COMPRESSION_GZIP, inner.data, inner.len, &z) != CH_OK)
		abort();
	size_t size = 22 + z.len;
	uint8_t *p = ch_buf_extend(out, 12 + size);
	ch_be_put64(p, (uint64_t)(n - 1));
	ch_be_put32(p + 8, (uint32_t)size);
	uint8_t *m = p + 12;
	m[4] = 1;
	m[5] = CH_COMPRESSION_GZIP;
	ch_be_put64(m + 6, (uint64_t)(ts + n - 1));
	ch_be_put32(m + 14, UINT32_MAX); /* null key */
	ch_be_put32(m + 18, (uint32_t)z.len);
	memcpy(m + 22, z.data, z.len);
	ch_be_put32(m, (uint32_t)crc32(0, m + 4, (uInt)(size - 4)));
	ch_buf_free(&inner);
	ch_buf_free(&z);
}

/* One partition's worth of records for a Produce request. */
typedef struct produce_one {
	const char *topic;
	int32_t partition;
	ch_bytes records;
} produce_one;

static uint64_t
send_produce(tb *b, int16_t v, int16_t acks, const produce_one *p, int n)
{
	ch_ProduceRequest_TopicProduceData td[8];
	ch_ProduceRequest_PartitionProduceData pd[8];
	for (int i = 0; i < n; i++) {
		pd[i] = (ch_ProduceRequest_PartitionProduceData){p[i].partition, p[i].records};
		td[i] = (ch_ProduceRequest_TopicProduceData){ch_str_c(p[i].topic), &pd[i], 1};
	}
	ch_ProduceRequest q;
	ch_ProduceRequest_init(&q);
	q.Acks = acks;
	q.TimeoutMs = 30000;
	q.TopicData = td;
	q.TopicData_n = n;
	return tb_send(b, CH_APIKEY_PRODUCE, v, &q);
}

/* Produce one batch, expecting kerr; returns the base offset (or -1). */
static int64_t
produce(tb *b, ch_arena *a, int16_t v, int16_t acks, const char *topic, const ch_buf *batch,
	int16_t kerr)
{
	produce_one p = {topic, 0, {batch->data, (int32_t)batch->len}};
	uint64_t seq = send_produce(b, v, acks, &p, 1);
	CH_CHECK(tb_wait(b, seq));
	ch_ProduceResponse *r = tb_decode(b, seq, a);
	CH_CHECK(r != NULL);
	if (!r)
		return -1;
	CH_CHECK_EQ_INT(r->Responses_n, 1);
	if (r->Responses_n != 1 || r->Responses[0].PartitionResponses_n != 1)
		return -1;
	CH_CHECK_STR(r->Responses[0].Name, topic);
	const ch_ProduceResponse_PartitionProduceResponse *pr =
		&r->Responses[0].PartitionResponses[0];
	CH_CHECK_EQ_INT(pr->Index, 0);
	if (pr->ErrorCode != kerr)
		fprintf(stderr, "  %s acks=%d: error %d, want %d\n", tb_name(0, v), acks,
			pr->ErrorCode, kerr);
	CH_CHECK_EQ_INT(pr->ErrorCode, kerr);
	if (v >= 2)
		CH_CHECK_EQ_INT(pr->LogAppendTimeMs, -1); /* CreateTime topic */
	if (v >= 5 && !kerr)
		CH_CHECK_EQ_INT(pr->LogStartOffset, 0);
	return pr->BaseOffset;
}

/* The records of a fetched partition: offsets and values, in order. */
typedef struct fetched {
	int n;
	int64_t offset[64];
	char value[64][16];
	int64_t first_batch_size;
	bool bad;
} fetched;

/* An old message set (Fetch v0-v3), wrappers opened; a partial last
 * message (the response's size cut it) is dropped, as consumers drop it. */
static void
parse_messages(const uint8_t *p, size_t len, int64_t wrapper, int wrapper_magic, fetched *out)
{
	size_t pos = 0;
	int64_t base = 0;
	if (wrapper >= 0 && wrapper_magic == 1) { /* relative inner offsets */
		int64_t last = 0;
		for (size_t q = 0; len - q >= 12 && ch_be_get32(p + q + 8) <= len - q - 12;
		     q += 12 + ch_be_get32(p + q + 8))
			last = (int64_t)ch_be_get64(p + q);
		base = wrapper - last;
	}
	while (len - pos >= 12) {
		int64_t off = (int64_t)ch_be_get64(p + pos);
		size_t size = ch_be_get32(p + pos + 8);
		if (size > len - pos - 12)
			return;
		const uint8_t *m = p + pos + 12;
		if (size < 14 || ch_be_get32(m) != (uint32_t)crc32(0, m + 4, (uInt)(size - 4))) {
			out->bad = true;
			return;
		}
		int magic = m[4], codec = m[5] & 7;
		size_t at = magic ? 14 : 6;
		int32_t kl = (int32_t)ch_be_get32(m + at);
		at += 4 + (size_t)CH_MAX(kl, 0);
		int32_t vl = (int32_t)ch_be_get32(m + at);
		at += 4;
		if (codec) {
			ch_buf inner;
			ch_buf_init(&inner);
			if (ch_codec_decompress_legacy(codec, magic, m + at, (size_t)vl, &inner,
						       1 << 20) != CH_OK)
				out->bad = true;
			else
				parse_messages(inner.data, inner.len, off, magic, out);
			ch_buf_free(&inner);
		} else if (out->n < 64) {
			out->offset[out->n] = base + off;
			snprintf(out->value[out->n], sizeof(out->value[0]), "%.*s", CH_MAX(vl, 0),
				 (const char *)m + at);
			out->n++;
		}
		pos += 12 + size;
	}
}

static void
parse_records(ch_bytes recs, fetched *out)
{
	memset(out, 0, sizeof(*out));
	size_t pos = 0, len = recs.len > 0 ? (size_t)recs.len : 0;
	if (len >= 17 && recs.p[16] < 2) {
		parse_messages(recs.p, len, -1, 0, out);
		return;
	}
	while (pos < len) {
		ch_batch_hdr h;
		if (ch_batch_check(recs.p + pos, len - pos, 0, false, &h) != 0) {
			out->bad = true;
			return;
		}
		if (out->first_batch_size == 0)
			out->first_batch_size = ch_batch_size(&h);
		ch_record_iter it;
		ch_record_iter_init(&it, recs.p + pos + CH_BATCH_HDR_SIZE,
				    (size_t)ch_batch_size(&h) - CH_BATCH_HDR_SIZE, h.records_count);
		ch_record rec;
		while (ch_record_next(&it, &rec) == 1 && out->n < 64) {
			out->offset[out->n] = h.base_offset + rec.offset_delta;
			snprintf(out->value[out->n], sizeof(out->value[0]), "%.*s",
				 rec.value.len > 0 ? rec.value.len : 0, (const char *)rec.value.p);
			out->n++;
		}
		out->bad |= it.err != 0;
		pos += (size_t)ch_batch_size(&h);
	}
}

typedef struct fetch_at {
	const char *topic; /* by name (v0-12) */
	ch_uuid id;        /* by id (v13+) */
	int32_t partition;
	int64_t offset;
	int32_t max_bytes;
} fetch_at;

static uint64_t
send_fetch(tb *b, int16_t v, int32_t max_wait, int32_t session, const fetch_at *f, int n)
{
	ch_FetchRequest_FetchTopic ft[4];
	ch_FetchRequest_FetchPartition fp[4];
	for (int i = 0; i < n; i++) {
		memset(&fp[i], 0, sizeof(fp[i]));
		fp[i].Partition = f[i].partition;
		fp[i].CurrentLeaderEpoch = -1;
		fp[i].FetchOffset = f[i].offset;
		fp[i].LastFetchedEpoch = -1;
		fp[i].LogStartOffset = -1;
		fp[i].PartitionMaxBytes = f[i].max_bytes;
		memset(&ft[i], 0, sizeof(ft[i]));
		ft[i].Topic = ch_str_c(f[i].topic);
		ft[i].TopicId = f[i].id;
		ft[i].Partitions = &fp[i];
		ft[i].Partitions_n = 1;
	}
	ch_FetchRequest q;
	ch_FetchRequest_init(&q);
	q.ReplicaId = -1;
	q.MaxWaitMs = max_wait;
	q.MinBytes = 1;
	q.MaxBytes = 1 << 20;
	q.SessionId = session;
	q.SessionEpoch = -1;
	q.Topics = ft;
	q.Topics_n = n;
	q.ForgottenTopicsData_n = 0;
	q.RackId = ch_str_c("");
	return tb_send(b, CH_APIKEY_FETCH, v, &q);
}

/* The decoded response's only partition, checked against the request. */
static const ch_FetchResponse_PartitionData *
only_partition(const ch_FetchResponse *r, int16_t v, const fetch_at *f)
{
	CH_CHECK_EQ_INT(r->Responses_n, 1);
	if (r->Responses_n != 1)
		return NULL;
	if (v >= 13)
		CH_CHECK(memcmp(r->Responses[0].TopicId.b, f->id.b, 16) == 0);
	else
		CH_CHECK_STR(r->Responses[0].Topic, f->topic);
	CH_CHECK_EQ_INT(r->Responses[0].Partitions_n, 1);
	if (r->Responses[0].Partitions_n != 1)
		return NULL;
	const ch_FetchResponse_PartitionData *p = &r->Responses[0].Partitions[0];
	CH_CHECK_EQ_INT(p->PartitionIndex, f->partition);
	if (v >= 4)
		CH_CHECK(p->AbortedTransactions_n <= 0); /* no transactions */
	if (v >= 11)
		CH_CHECK_EQ_INT(p->PreferredReadReplica, -1);
	return p;
}

static const ch_FetchResponse_PartitionData *
fetch(tb *b, ch_arena *a, int16_t v, const fetch_at *f, int16_t kerr)
{
	uint64_t seq = send_fetch(b, v, 0, 0, f, 1);
	CH_CHECK(tb_wait(b, seq));
	ch_FetchResponse *r = tb_decode(b, seq, a);
	CH_CHECK(r != NULL);
	if (!r)
		return NULL;
	if (v >= 7) {
		CH_CHECK_EQ_INT(r->ErrorCode, 0);
		CH_CHECK_EQ_INT(r->SessionId, 0); /* no fetch sessions */
	}
	const ch_FetchResponse_PartitionData *p = only_partition(r, v, f);
	if (p) {
		if (p->ErrorCode != kerr)
			fprintf(stderr, "  %s offset %lld: error %d, want %d\n", tb_name(1, v),
				(long long)f->offset, p->ErrorCode, kerr);
		CH_CHECK_EQ_INT(p->ErrorCode, kerr);
	}
	return p;
}

static void
check_values(const fetched *fr, int64_t first, int n)
{
	CH_CHECK(!fr->bad);
	CH_CHECK_EQ_INT(fr->n, n);
	for (int j = 0; j < fr->n && j < n; j++) {
		char want[16];
		snprintf(want, sizeof(want), "v%lld", (long long)(first + j));
		CH_CHECK_EQ_INT(fr->offset[j], first + j);
		CH_CHECK_EQ_STR(fr->value[j], want);
	}
}

/* Produce: acks all, 1 and 0, and the errors. Leaves records 0..5. */
static void
produce_step(tb *b, ch_arena *a, int16_t v, const char *topic, int64_t ts)
{
	ch_buf batch;
	ch_buf_init(&batch);
	/* acks=all: answered once an fsync covered the batch, which runs on a
	 * worker thread, so never from inside ch_api_on_frame. */
	make_records(&batch, v, 3, 0, ts);
	ch_log_manager_stats before = ch_log_manager_get_stats(b->bk.logs);
	produce_one first = {topic, 0, {batch.data, (int32_t)batch.len}};
	uint64_t seq = send_produce(b, v, -1, &first, 1);
	CH_CHECK_EQ_INT(tb_get(b, seq)->replies, 0);
	CH_CHECK(tb_wait(b, seq));
	CH_CHECK_EQ_INT(ch_log_manager_get_stats(b->bk.logs).durable_waiters,
			before.durable_waiters + 1);
	ch_ProduceResponse *r0 = tb_decode(b, seq, a);
	CH_CHECK(r0 && r0->Responses_n == 1 && r0->Responses[0].PartitionResponses_n == 1);
	if (r0 && r0->Responses_n == 1 && r0->Responses[0].PartitionResponses_n == 1) {
		CH_CHECK_EQ_INT(r0->Responses[0].PartitionResponses[0].ErrorCode, 0);
		CH_CHECK_EQ_INT(r0->Responses[0].PartitionResponses[0].BaseOffset, 0);
	}
	make_records(&batch, v, 2, 3, ts + 3);
	CH_CHECK_EQ_INT(produce(b, a, v, 1, topic, &batch, 0), 3);

	/* acks=0: no response at all; a failed one closes the connection. */
	make_records(&batch, v, 1, 5, ts + 5);
	produce_one ok = {topic, 0, {batch.data, (int32_t)batch.len}};
	seq = send_produce(b, v, 0, &ok, 1);
	CH_CHECK(tb_wait(b, seq));
	CH_CHECK(tb_get(b, seq)->nones == 1 && tb_get(b, seq)->replies == 0 &&
		 tb_get(b, seq)->closes == 0);
	produce_one lost = {"no-such-topic", 0, {batch.data, (int32_t)batch.len}};
	seq = send_produce(b, v, 0, &lost, 1);
	CH_CHECK(tb_wait(b, seq));
	CH_CHECK(tb_get(b, seq)->closes == 1 && tb_get(b, seq)->replies == 0);

	/* Errors per partition, in one request. */
	ch_buf corrupt;
	ch_buf_init(&corrupt);
	ch_buf_append(&corrupt, batch.data, batch.len);
	corrupt.data[corrupt.len - 1] ^= 0xff; /* inside the CRC's range */
	produce_one bad[4] = {
		{topic, 7, {batch.data, (int32_t)batch.len}},
		{"no-such-topic", 0, {batch.data, (int32_t)batch.len}},
		{topic, 0, {corrupt.data, (int32_t)corrupt.len}},
		{topic, 0, {(const uint8_t *)"", 0}},
	};
	/* v0-v2: an empty set is nothing to append, no error (Kafka 3.9). */
	const int16_t want[4] = {CH_KERR_UNKNOWN_TOPIC_OR_PARTITION,
				 CH_KERR_UNKNOWN_TOPIC_OR_PARTITION, CH_KERR_CORRUPT_MESSAGE,
				 v <= 2 ? 0 : CH_KERR_INVALID_RECORD};
	seq = send_produce(b, v, 1, bad, 4);
	CH_CHECK(tb_wait(b, seq));
	ch_ProduceResponse *r = tb_decode(b, seq, a);
	CH_CHECK(r && r->Responses_n == 4);
	for (int i = 0; r && i < 4 && i < r->Responses_n; i++) {
		CH_CHECK_EQ_INT(r->Responses[i].PartitionResponses_n, 1);
		if (r->Responses[i].PartitionResponses_n != 1)
			continue;
		CH_CHECK_EQ_INT(r->Responses[i].PartitionResponses[0].Index, bad[i].partition);
		CH_CHECK_EQ_INT(r->Responses[i].PartitionResponses[0].ErrorCode, want[i]);
		CH_CHECK_EQ_INT(r->Responses[i].PartitionResponses[0].BaseOffset, -1);
	}
	/* acks must be 0, 1 or -1. */
	CH_CHECK_EQ_INT(produce(b, a, v, 2, topic, &batch, CH_KERR_INVALID_REQUIRED_ACKS), -1);
	ch_buf_free(&corrupt);
	ch_buf_free(&batch);
}

static void
fetch_step(tb *b, ch_arena *a, int16_t v, int16_t pv, const char *topic, ch_uuid id, int64_t ts)
{
	fetch_at all = {topic, id, 0, 0, 1 << 20};
	const ch_FetchResponse_PartitionData *p = fetch(b, a, v, &all, 0);
	if (p) {
		CH_CHECK_EQ_INT(p->HighWatermark, 6);
		if (v >= 4)
			CH_CHECK_EQ_INT(p->LastStableOffset, 6);
		if (v >= 5)
			CH_CHECK_EQ_INT(p->LogStartOffset, 0);
		fetched fr;
		parse_records(p->Records, &fr);
		check_values(&fr, 0, 6);
	}
	/* From the middle: the batch holding offset 3 comes back whole. */
	fetch_at mid = {topic, id, 0, 3, 1 << 20};
	p = fetch(b, a, v, &mid, 0);
	if (p) {
		fetched fr;
		parse_records(p->Records, &fr);
		check_values(&fr, 3, 3);
	}
	/* A limit smaller than a batch still returns the first batch whole,
	 * so a consumer cannot get stuck. */
	fetch_at tiny = {topic, id, 0, 0, 1};
	p = fetch(b, a, v, &tiny, 0);
	if (p && v <= 2) {
		/* ... but v0-v2 limits are hard: a cut batch converts to nothing. */
		CH_CHECK(p->Records.len <= 0);
	} else if (p) {
		fetched fr;
		parse_records(p->Records, &fr);
		check_values(&fr, 0, 3);
		if (v >= 4)
			CH_CHECK_EQ_INT(p->Records.len, fr.first_batch_size);
	}
	fetch_at past = {topic, id, 0, 100, 1 << 20};
	p = fetch(b, a, v, &past, CH_KERR_OFFSET_OUT_OF_RANGE);
	if (p) {
		/* a partition in error has no offsets (Kafka's -1s) */
		CH_CHECK_EQ_INT(p->HighWatermark, -1);
		CH_CHECK(p->Records.len <= 0);
	}
	fetch_at nopart = {topic, id, 9, 0, 1 << 20};
	fetch(b, a, v, &nopart, CH_KERR_UNKNOWN_TOPIC_OR_PARTITION);
	ch_uuid other = id;
	other.b[3] ^= 0x5a;
	fetch_at notopic = {"no-such-topic", other, 0, 0, 1 << 20};
	fetch(b, a, v, &notopic,
	      v >= 13 ? CH_KERR_UNKNOWN_TOPIC_ID : CH_KERR_UNKNOWN_TOPIC_OR_PARTITION);

	/* v7+: cohort has no fetch sessions (KIP-227). */
	if (v >= 7) {
		uint64_t seq = send_fetch(b, v, 0, 12345, &all, 1);
		CH_CHECK(tb_wait(b, seq));
		ch_FetchResponse *r = tb_decode(b, seq, a);
		CH_CHECK(r != NULL);
		if (r) {
			CH_CHECK_EQ_INT(r->ErrorCode, CH_KERR_FETCH_SESSION_ID_NOT_FOUND);
			CH_CHECK_EQ_INT(r->Responses_n, 0);
		}
	}

	/* Long poll at the end of the log: parked until a produce arrives. */
	fetch_at tail = {topic, id, 0, 6, 1 << 20};
	uint64_t seq = send_fetch(b, v, 25000, 0, &tail, 1);
	for (int k = 0; k < 3; k++)
		tb_poll(b);
	CH_CHECK_EQ_INT(tb_get(b, seq)->replies, 0);
	ch_buf batch;
	ch_buf_init(&batch);
	make_batch(&batch, 1, 6, ts + 6, NO_PRODUCER);
	CH_CHECK_EQ_INT(produce(b, a, pv, 1, topic, &batch, 0), 6);
	ch_buf_free(&batch);
	/* The append woke it: answered within a few loop passes, long before
	 * MaxWaitMs (so a wake-up that never comes fails here). */
	bool woken = tb_poll_until(b, seq, 5);
	CH_CHECK(woken);
	if (!woken)
		return;
	ch_FetchResponse *r = tb_decode(b, seq, a);
	CH_CHECK(r != NULL);
	p = r ? only_partition(r, v, &tail) : NULL;
	if (p) {
		CH_CHECK_EQ_INT(p->ErrorCode, 0);
		CH_CHECK_EQ_INT(p->HighWatermark, 7);
		fetched fr;
		parse_records(p->Records, &fr);
		check_values(&fr, 6, 1);
	}
	/* Nothing arrives: answered empty at MaxWaitMs. */
	fetch_at end = {topic, id, 0, 7, 1 << 20};
	seq = send_fetch(b, v, 20, 0, &end, 1);
	CH_CHECK(tb_wait(b, seq));
	r = tb_decode(b, seq, a);
	p = r ? only_partition(r, v, &end) : NULL;
	CH_CHECK(p != NULL);
	if (p) {
		CH_CHECK_EQ_INT(p->ErrorCode, 0);
		CH_CHECK(p->Records.len <= 0);
	}
}

static void
list_offsets_step(tb *b, ch_arena *a, int16_t v, const char *topic, int64_t ts)
{
	/* Records 0..6 carry timestamps ts..ts+6. */
	ch_ListOffsetsRequest_ListOffsetsPartition parts[5] = {
		{0, -1, -2, 1},                       /* earliest */
		{0, -1, -1, 1},                       /* latest */
		{0, -1, ts + 4, 1},                   /* first offset with timestamp >= ts+4 */
		{0, -1, ts + 100, 1}, {0, -1, -3, 1}, /* max timestamp (v7+) */
	};
	int n = v >= 7 ? 5 : 4;
	ch_ListOffsetsRequest_ListOffsetsTopic t[2] = {
		{ch_str_c(topic), parts, n},
		{ch_str_c("no-such-topic"), parts, 1},
	};
	ch_ListOffsetsRequest q;
	ch_ListOffsetsRequest_init(&q);
	q.ReplicaId = -1;
	q.Topics = t;
	q.Topics_n = 2;
	CALL(r, ch_ListOffsetsResponse, b, a, CH_APIKEY_LIST_OFFSETS, v, &q);
	CH_CHECK_EQ_INT(r->Topics_n, 2);
	if (r->Topics_n != 2)
		return;
	if (v == 0) {
		/* Segment granularity: the one segment's base, the log end; by
		 * time, the candidates not newer than it (the segment's file and
		 * the log end are newer than every record here). */
		static const int want_n[4] = {1, 1, 0, 0};
		static const int64_t want_first[4] = {0, 7, -1, -1};
		CH_CHECK_EQ_INT(r->Topics[0].Partitions_n, 4);
		for (int i = 0; i < 4 && i < r->Topics[0].Partitions_n; i++) {
			const ch_ListOffsetsResponse_ListOffsetsPartitionResponse *p =
				&r->Topics[0].Partitions[i];
			CH_CHECK_EQ_INT(p->ErrorCode, 0);
			CH_CHECK_EQ_INT(p->OldStyleOffsets_n, want_n[i]);
			if (p->OldStyleOffsets_n > 0)
				CH_CHECK_EQ_INT(p->OldStyleOffsets[0], want_first[i]);
		}
		CH_CHECK(r->Topics[1].Partitions_n == 1 &&
			 r->Topics[1].Partitions[0].ErrorCode ==
				 CH_KERR_UNKNOWN_TOPIC_OR_PARTITION);
		ch_ListOffsetsRequest_ListOffsetsPartition more[3] = {
			{0, -1, -1, 10},                         /* log end, then the segment */
			{0, -1, ch_now_wall_ms() + 3600000, 10}, /* everything is older */
			{0, -1, -3, 1},                          /* no such thing in v0 */
		};
		ch_ListOffsetsRequest_ListOffsetsTopic t2 = {ch_str_c(topic), more, 3};
		q.Topics = &t2;
		q.Topics_n = 1;
		CALL(r2, ch_ListOffsetsResponse, b, a, 2, v, &q);
		CH_CHECK(r2->Topics_n == 1 && r2->Topics[0].Partitions_n == 3);
		if (r2->Topics_n != 1 || r2->Topics[0].Partitions_n != 3)
			return;
		for (int i = 0; i < 2; i++) {
			const ch_ListOffsetsResponse_ListOffsetsPartitionResponse *p =
				&r2->Topics[0].Partitions[i];
			CH_CHECK(p->ErrorCode == 0 && p->OldStyleOffsets_n == 2 &&
				 p->OldStyleOffsets[0] == 7 && p->OldStyleOffsets[1] == 0);
		}
		CH_CHECK_EQ_INT(r2->Topics[0].Partitions[2].ErrorCode, CH_KERR_UNSUPPORTED_VERSION);
		return;
	}
	CH_CHECK_STR(r->Topics[0].Name, topic);
	CH_CHECK_EQ_INT(r->Topics[0].Partitions_n, n);
	static const int64_t want_offset[5] = {0, 7, 4, -1, 6};
	for (int i = 0; i < n && i < r->Topics[0].Partitions_n; i++) {
		const ch_ListOffsetsResponse_ListOffsetsPartitionResponse *p =
			&r->Topics[0].Partitions[i];
		CH_CHECK_EQ_INT(p->ErrorCode, 0);
		if (p->Offset != want_offset[i])
			fprintf(stderr, "  %s query %d: offset %lld, want %lld\n", tb_name(2, v), i,
				(long long)p->Offset, (long long)want_offset[i]);
		CH_CHECK_EQ_INT(p->Offset, want_offset[i]);
	}
	if (r->Topics[0].Partitions_n >= 3) {
		CH_CHECK_EQ_INT(r->Topics[0].Partitions[2].Timestamp, ts + 4);
		CH_CHECK_EQ_INT(r->Topics[0].Partitions[3].Timestamp, -1);
	}
	if (n == 5 && r->Topics[0].Partitions_n == 5)
		CH_CHECK_EQ_INT(r->Topics[0].Partitions[4].Timestamp, ts + 6);
	CH_CHECK(r->Topics[1].Partitions_n == 1 &&
		 r->Topics[1].Partitions[0].ErrorCode == CH_KERR_UNKNOWN_TOPIC_OR_PARTITION);
}

/* InitProducerId (fresh ids; a transactional id refused; v3+ ids/epochs
 * named by the client never bump an epoch), then an idempotent producer's
 * batches: in order, duplicated (answered with the first offsets, nothing
 * appended) and with a gap; the requests naming its id did not fence it. */
static void
idempotence_step(tb *b, ch_arena *a, int16_t v, int16_t pv, const char *topic, int64_t ts)
{
	ch_InitProducerIdRequest q;
	ch_InitProducerIdRequest_init(&q);
	q.TransactionalId = CH_STR_NULL;
	q.TransactionTimeoutMs = 60000;
	q.ProducerId = -1;
	q.ProducerEpoch = -1;
	CALL(r, ch_InitProducerIdResponse, b, a, CH_APIKEY_INIT_PRODUCER_ID, v, &q);
	CH_CHECK_EQ_INT(r->ErrorCode, 0);
	CH_CHECK(r->ProducerId >= 0);
	CH_CHECK_EQ_INT(r->ProducerEpoch, 0);
	CALL(r2, ch_InitProducerIdResponse, b, a, CH_APIKEY_INIT_PRODUCER_ID, v, &q);
	CH_CHECK(r2->ErrorCode == 0 && r2->ProducerId != r->ProducerId);
	/* No transaction coordinator: a transactional id is refused. */
	q.TransactionalId = ch_str_c("txn-1");
	CALL(rt, ch_InitProducerIdResponse, b, a, CH_APIKEY_INIT_PRODUCER_ID, v, &q);
	CH_CHECK(rt->ErrorCode != 0);
	CH_CHECK_EQ_INT(rt->ProducerId, -1);
	q.TransactionalId = CH_STR_NULL;
	if (v >= 3) {
		/* KIP-360 fields without a transactional id: Kafka "blindly
		 * accepts" (TransactionCoordinator.handleInitProducerId) with a
		 * fresh id at epoch 0, whatever id/epoch is named, so no client
		 * can bump (fence) another producer's epoch. */
		q.ProducerId = r->ProducerId;
		q.ProducerEpoch = 0;
		CALL(rk, ch_InitProducerIdResponse, b, a, CH_APIKEY_INIT_PRODUCER_ID, v, &q);
		CH_CHECK_EQ_INT(rk->ErrorCode, 0);
		CH_CHECK(rk->ProducerId >= 0 && rk->ProducerId != r->ProducerId);
		CH_CHECK_EQ_INT(rk->ProducerEpoch, 0);
		q.ProducerId = 987654321; /* never issued */
		q.ProducerEpoch = 5;
		CALL(ru, ch_InitProducerIdResponse, b, a, CH_APIKEY_INIT_PRODUCER_ID, v, &q);
		CH_CHECK_EQ_INT(ru->ErrorCode, 0);
		CH_CHECK(ru->ProducerId != 987654321 && ru->ProducerId != rk->ProducerId);
		CH_CHECK_EQ_INT(ru->ProducerEpoch, 0);
		/* half a pair (KafkaApis.handleInitProducerIdRequest) */
		q.ProducerEpoch = -1;
		CALL(rh, ch_InitProducerIdResponse, b, a, CH_APIKEY_INIT_PRODUCER_ID, v, &q);
		CH_CHECK_EQ_INT(rh->ErrorCode, CH_KERR_INVALID_REQUEST);
		CH_CHECK_EQ_INT(rh->ProducerId, -1);
		q.ProducerId = -1;
		q.ProducerEpoch = 3;
		CALL(rh2, ch_InitProducerIdResponse, b, a, CH_APIKEY_INIT_PRODUCER_ID, v, &q);
		CH_CHECK_EQ_INT(rh2->ErrorCode, CH_KERR_INVALID_REQUEST);
	}

	producer pr = {r->ProducerId, r->ProducerEpoch, 0};
	ch_buf batch;
	ch_buf_init(&batch);
	make_batch(&batch, 2, 7, ts + 7, pr);
	CH_CHECK_EQ_INT(produce(b, a, pv, -1, topic, &batch, 0), 7);
	make_batch(&batch, 2, 7, ts + 7, pr); /* the same again: a retry */
	CH_CHECK_EQ_INT(produce(b, a, pv, -1, topic, &batch, 0), 7);
	pr.seq = 5;
	make_batch(&batch, 1, 9, ts + 9, pr);
	produce(b, a, pv, -1, topic, &batch, CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
	pr.seq = 2;
	make_batch(&batch, 1, 9, ts + 9, pr);
	CH_CHECK_EQ_INT(produce(b, a, pv, -1, topic, &batch, 0), 9);
	ch_buf_free(&batch);
	int open_errno = 0;
	ch_part *part = ch_log_manager_find(b->bk.logs, topic, 0, &open_errno);
	CH_CHECK(part != NULL);
	if (part)
		CH_CHECK_EQ_INT(ch_plog_end_offset(ch_part_log(part)), 10);
}

static void
step(tb *b, int i)
{
	ch_arena a;
	ch_arena_init(&a);
	char topic[64];
	snprintf(topic, sizeof(topic), "data-%d", i);
	const ch_topic *t = tb_create_topic(b, topic, 1);
	ch_uuid id = t->id;
	int64_t ts = ch_now_wall_ms() - 60000;
	produce_step(b, &a, tb_version(CH_APIKEY_PRODUCE, i), topic, ts);
	fetch_step(b, &a, tb_version(CH_APIKEY_FETCH, i), tb_version(CH_APIKEY_PRODUCE, i), topic,
		   id, ts);
	list_offsets_step(b, &a, tb_version(CH_APIKEY_LIST_OFFSETS, i), topic, ts);
	idempotence_step(b, &a, tb_version(CH_APIKEY_INIT_PRODUCER_ID, i),
			 tb_version(CH_APIKEY_PRODUCE, i), topic, ts);
	ch_arena_reset(&a);
}

static void
t_data_every_version(void)
{
	tb b;
	tb_open(&b, NULL, 0);
	int steps = tb_steps(family, CH_ARRAY_LEN(family));
	for (int i = 0; i < steps; i++)
		step(&b, i);
	printf("data family: %d steps, %zu requests\n", steps, b.n_reqs);
	CH_CHECK_EQ_INT(tb_close(&b), 0);
}

/* A topic created with compression.type = codec ("gzip", "uncompressed"). */
static void
create_codec_topic(tb *b, ch_arena *a, const char *name, const char *codec)
{
	ch_CreateTopicsRequest_CreatableTopicConfig cfg = {ch_str_c("compression.type"),
							   ch_str_c(codec)};
	ch_CreateTopicsRequest_CreatableTopic t = {ch_str_c(name), 1, 1, NULL, 0, &cfg, 1};
	ch_CreateTopicsRequest q;
	ch_CreateTopicsRequest_init(&q);
	q.Topics = &t;
	q.Topics_n = 1;
	q.timeoutMs = 30000;
	CALL(r, ch_CreateTopicsResponse, b, a, CH_APIKEY_CREATE_TOPICS, 5, &q);
	CH_CHECK(r->Topics_n == 1 && r->Topics[0].ErrorCode == 0);
}

/* The stored first batch of topic-0 must have codec and the records of
 * want (values, keys, offsets deltas, timestamps, producer fields). */
static void
check_stored(tb *b, const char *topic, int codec, const ch_buf *want)
{
	int open_errno = 0;
	ch_part *part = ch_log_manager_find(b->bk.logs, topic, 0, &open_errno);
	CH_CHECK(part != NULL);
	if (!part)
		return;
	ch_buf got, s1, s2;
	ch_buf_init(&got);
	ch_buf_init(&s1);
	ch_buf_init(&s2);
	int16_t kerr = 0;
	CH_CHECK_EQ_INT(ch_plog_read_copy(ch_part_log(part), 0, 1 << 20, &got, &kerr), CH_OK);
	ch_batch_hdr h, w;
	CH_CHECK_EQ_INT(ch_batch_check(got.data, got.len, 0, true, &h), CH_BATCH_OK);
	CH_CHECK_EQ_INT(ch_batch_check(want->data, want->len, 0, true, &w), CH_BATCH_OK);
	CH_CHECK_EQ_INT(ch_batch_compression(&h), codec);
	CH_CHECK_EQ_INT(h.records_count, w.records_count);
	CH_CHECK_EQ_INT(h.last_offset_delta, w.last_offset_delta);
	CH_CHECK_EQ_INT(h.base_timestamp, w.base_timestamp);
	CH_CHECK_EQ_INT(h.max_timestamp, w.max_timestamp);
	CH_CHECK_EQ_INT(h.producer_id, w.producer_id);
	CH_CHECK_EQ_INT(h.producer_epoch, w.producer_epoch);
	CH_CHECK_EQ_INT(h.base_sequence, w.base_sequence);
	const uint8_t *r1, *r2;
	size_t l1, l2;
	CH_CHECK_EQ_INT(ch_batch_records(got.data, &h, &s1, 1 << 20, &r1, &l1), CH_OK);
	CH_CHECK_EQ_INT(ch_batch_records(want->data, &w, &s2, 1 << 20, &r2, &l2), CH_OK);
	CH_CHECK(l1 == l2 && memcmp(r1, r2, l1) == 0);
	ch_buf_free(&got);
	ch_buf_free(&s1);
	ch_buf_free(&s2);
}

/* Kafka's LogValidator re-compresses a batch v2 whose codec is not the
 * topic's compression.type (when that is not "producer"). */
static void
t_topic_codec(void)
{
	tb b;
	tb_open(&b, NULL, 0);
	ch_arena a;
	ch_arena_init(&a);
	int64_t ts = ch_now_wall_ms() - 60000;
	create_codec_topic(&b, &a, "codec-gzip", "gzip");
	create_codec_topic(&b, &a, "codec-none", "uncompressed");
	ch_buf plain, gz;
	ch_buf_init(&plain);
	ch_buf_init(&gz);
	make_batch(&plain, 5, 0, ts, NO_PRODUCER);
	/* The same records gzip-compressed. */
	{
		ch_batch_hdr h;
		ch_batch_check(plain.data, plain.len, 0, true, &h);
		ch_batch_builder bb;
		ch_batch_builder_begin(&bb, &gz, 0, 0, ts, -1, -1, -1);
		for (int j = 0; j < 5; j++) {
			char k[16], v[16];
			int kn = snprintf(k, sizeof(k), "k%d", j);
			int vn = snprintf(v, sizeof(v), "v%d", j);
			ch_batch_builder_add(&bb, j, ts + j, (ch_bytes){(const uint8_t *)k, kn},
					     (ch_bytes){(const uint8_t *)v, vn}, 0, NULL, 0);
		}
		CH_CHECK_EQ_INT(ch_batch_builder_end_codec(&bb, -1, CH_COMPRESSION_GZIP), CH_OK);
	}
	CH_CHECK_EQ_INT(produce(&b, &a, 9, -1, "codec-gzip", &plain, 0), 0);
	CH_CHECK_EQ_INT(produce(&b, &a, 9, -1, "codec-none", &gz, 0), 0);
	check_stored(&b, "codec-gzip", CH_COMPRESSION_GZIP, &plain);
	check_stored(&b, "codec-none", CH_COMPRESSION_NONE, &plain);
	/* An idempotent producer's rebuilt batches: kept producer fields, a
	 * retry answered with the first offsets, a gap refused. */
	ch_InitProducerIdRequest q;
	ch_InitProducerIdRequest_init(&q);
	q.TransactionalId = CH_STR_NULL;
	q.TransactionTimeoutMs = 60000;
	q.ProducerId = -1;
	q.ProducerEpoch = -1;
	CALL(ri, ch_InitProducerIdResponse, &b, &a, CH_APIKEY_INIT_PRODUCER_ID, 0, &q);
	CH_CHECK_EQ_INT(ri->ErrorCode, 0);
	producer pr = {ri->ProducerId, ri->ProducerEpoch, 0};
	make_batch(&plain, 2, 5, ts + 5, pr);
	CH_CHECK_EQ_INT(produce(&b, &a, 9, -1, "codec-gzip", &plain, 0), 5);
	CH_CHECK_EQ_INT(produce(&b, &a, 9, -1, "codec-gzip", &plain, 0), 5);
	pr.seq = 5;
	make_batch(&plain, 1, 7, ts + 7, pr);
	produce(&b, &a, 9, -1, "codec-gzip", &plain, CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
	pr.seq = 2;
	make_batch(&plain, 1, 7, ts + 7, pr);
	CH_CHECK_EQ_INT(produce(&b, &a, 9, -1, "codec-gzip", &plain, 0), 7);
	{
		int open_errno = 0;
		ch_part *part = ch_log_manager_find(b.bk.logs, "codec-gzip", 0, &open_errno);
		CH_CHECK(part != NULL);
		if (part) {
			CH_CHECK_EQ_INT(ch_plog_end_offset(ch_part_log(part)), 8);
			ch_buf got;
			ch_buf_init(&got);
			int16_t kerr = 0;
			CH_CHECK_EQ_INT(
				ch_plog_read_copy(ch_part_log(part), 5, 1 << 20, &got, &kerr),
				CH_OK);
			ch_batch_hdr h;
			CH_CHECK_EQ_INT(ch_batch_check(got.data, got.len, 0, true, &h),
					CH_BATCH_OK);
			CH_CHECK_EQ_INT(ch_batch_compression(&h), CH_COMPRESSION_GZIP);
			CH_CHECK_EQ_INT(h.base_offset, 5);
			CH_CHECK_EQ_INT(h.producer_id, ri->ProducerId);
			CH_CHECK_EQ_INT(h.producer_epoch, ri->ProducerEpoch);
			CH_CHECK_EQ_INT(h.base_sequence, 0);
			ch_buf_free(&got);
		}
	}
	ch_buf_free(&plain);
	ch_buf_free(&gz);
	ch_arena_reset(&a);
	CH_CHECK_EQ_INT(tb_close(&b), 0);
}

CH_TEST_MAIN(CH_TEST(t_data_every_version), CH_TEST(t_topic_codec))
