/*
 * isolation.level=read_committed in cl_records_decode, with batches built by
 * ch_batch_builder as a Kafka broker stores them: transactional batches
 * (attributes 0x10), control batches (0x30, key version int16 and type int16:
 * 0 ABORT, 1 COMMIT), the Fetch answer's AbortedTransactions. Committed
 * transactions are read, aborted ones skipped, producers interleave, a
 * transaction aborted across two fetches stays skipped, control batches never
 * yield records, and the position moves past every batch (an answer of only
 * aborted and control batches yields nothing and still moves it).
 */
#include <stdio.h>
#include <string.h>

#include "client/cl_int.h"
#include "common/ch_test.h"
#include "log/ch_batch.h"

typedef ch_FetchResponse_AbortedTransaction abtx;

/* A data batch at base: n records, values "<offset>"; pid -1 non-idempotent. */
static void
data(ch_buf *out, int64_t base, int n, int64_t pid, bool txn)
{
	ch_batch_builder bb;
	ch_batch_builder_begin(&bb, out, base, txn ? CH_BATCH_ATTR_TRANSACTIONAL : 0, 1000, pid,
			       pid >= 0 ? 0 : -1, pid >= 0 ? (int32_t)base : -1);
	for (int i = 0; i < n; i++) {
		char v[24];
		int vn = snprintf(v, sizeof(v), "%lld", (long long)(base + i));
		ch_batch_builder_add(&bb, i, 1000 + i, (ch_bytes){NULL, -1},
				     (ch_bytes){(const uint8_t *)v, vn}, 0, NULL, 0);
	}
	CH_CHECK_EQ_INT(ch_batch_builder_end(&bb, -1), CH_OK);
}

/* A transaction marker of pid at offset: type 0 ABORT, 1 COMMIT. */
static void
marker(ch_buf *out, int64_t offset, int64_t pid, int16_t type)
{
	ch_batch_builder bb;
	ch_batch_builder_begin(&bb, out, offset,
			       CH_BATCH_ATTR_TRANSACTIONAL | CH_BATCH_ATTR_CONTROL, 1000, pid, 0,
			       -1);
	uint8_t key[4] = {0, 0, (uint8_t)(type >> 8), (uint8_t)type};
	uint8_t value[6] = {0, 0, 0, 0, 0, 5}; /* version 0, coordinator epoch 5 */
	ch_batch_builder_add(&bb, 0, 1000, (ch_bytes){key, 4}, (ch_bytes){value, 6}, 0, NULL, 0);
	CH_CHECK_EQ_INT(ch_batch_builder_end(&bb, -1), CH_OK);
}

/* Decodes b[0..len) from `from`; the offsets read, "a,b,c" (each value must be its
 * offset), into got; *next the position after. */
static void
decode(const uint8_t *p, size_t len, int64_t from, bool rc, const abtx *ab, int32_t nab, char *got,
       size_t gotsz, int64_t *next)
{
	cl_tp tp = {.topic = "t", .partition = 0};
	cl_decode_opts o = {true, rc, ab, nab};
	cohort_err err;
	cl_chunk *ch = cl_records_decode(&tp, &o, from, p, len, next, &err);
	got[0] = 0;
	CH_CHECK(ch != NULL);
	if (!ch)
		return;
	CH_CHECK_EQ_INT(err, COHORT_OK);
	CH_CHECK_EQ_INT(ch->next_offset, *next);
	size_t at = 0;
	for (int32_t i = 0; i < ch->n; i++) {
		const cohort_record *r = &ch->recs[i];
		char v[24];
		snprintf(v, sizeof(v), "%lld", (long long)r->offset);
		CH_CHECK(r->value_len == (int32_t)strlen(v) && memcmp(r->value, v, strlen(v)) == 0);
		at += (size_t)snprintf(got + at, gotsz - at, "%s%s", i ? "," : "", v);
	}
	cl_chunk_free(ch);
}

#define EXPECT(b, from, rc, ab, nab, want, want_next)                                              \
	do {                                                                                       \
		char got_[256];                                                                    \
		int64_t next_;                                                                     \
		decode((b)->data, (b)->len, from, rc, ab, nab, got_, sizeof(got_), &next_);        \
		CH_CHECK_EQ_STR(got_, want);                                                       \
		CH_CHECK_EQ_INT(next_, want_next);                                                 \
	} while (0)

static void
t_committed(void)
{
	ch_buf b;
	ch_buf_init(&b);
	data(&b, 0, 3, 7, true);
	marker(&b, 3, 7, 1);
	data(&b, 4, 2, -1, false);
	EXPECT(&b, 0, true, NULL, 0, "0,1,2,4,5", 6);
	EXPECT(&b, 0, false, NULL, 0, "0,1,2,4,5", 6);
	/* a marker as the last batch: the position moves past it */
	ch_buf_free(&b);
	ch_buf_init(&b);
	data(&b, 0, 2, 7, true);
	marker(&b, 2, 7, 1);
	EXPECT(&b, 0, true, NULL, 0, "0,1", 3);
	ch_buf_free(&b);
}

static void
t_aborted(void)
{
	ch_buf b;
	ch_buf_init(&b);
	data(&b, 0, 3, 7, true);
	marker(&b, 3, 7, 0);
	data(&b, 4, 2, -1, false);
	abtx ab[] = {{7, 0}};
	EXPECT(&b, 0, true, ab, 1, "4,5", 6);
	/* read_uncommitted reads everything, whatever the answer lists */
	EXPECT(&b, 0, false, ab, 1, "0,1,2,4,5", 6);
	/* from inside the aborted batch */
	EXPECT(&b, 1, true, ab, 1, "4,5", 6);
	/* an aborted producer's non-transactional (idempotent) batch is read, as Java */
	ch_buf_free(&b);
	ch_buf_init(&b);
	data(&b, 0, 2, 7, true);
	data(&b, 2, 1, 7, false);
	marker(&b, 3, 7, 0);
	EXPECT(&b, 0, true, ab, 1, "2", 4);
	ch_buf_free(&b);
}

static void
t_interleaved(void)
{
	ch_buf b;
	ch_buf_init(&b);
	data(&b, 0, 2, 1, true);   /* pid 1: aborted */
	data(&b, 2, 2, 2, true);   /* pid 2: committed */
	data(&b, 4, 1, 1, true);   /* pid 1: aborted */
	data(&b, 5, 1, -1, false); /* plain */
	marker(&b, 6, 2, 1);       /* pid 2 COMMIT */
	marker(&b, 7, 1, 0);       /* pid 1 ABORT */
	data(&b, 8, 2, 1, true);   /* pid 1's next transaction: committed */
	data(&b, 10, 1, 2, true);  /* pid 2's next: aborted */
	marker(&b, 11, 1, 1);      /* pid 1 COMMIT */
	data(&b, 12, 1, -1, false);
	marker(&b, 13, 2, 0);     /* pid 2 ABORT */
	data(&b, 14, 1, 3, true); /* pid 3: not listed as aborted, so read */
	/* unsorted, as nothing promises the order */
	abtx ab[] = {{2, 10}, {1, 0}};
	EXPECT(&b, 0, true, ab, 2, "2,3,5,8,9,12,14", 15);
	EXPECT(&b, 0, false, ab, 2, "0,1,2,3,4,5,8,9,10,12,14", 15);
	/* fetched from the middle: the answer still lists pid 1's transaction */
	EXPECT(&b, 4, true, ab, 2, "5,8,9,12,14", 15);
	ch_buf_free(&b);
}

static void
t_across_fetches(void)
{
	ch_buf b;
	ch_buf_init(&b);
	data(&b, 0, 2, 3, true);
	data(&b, 2, 1, -1, false);
	size_t cut = b.len;
	data(&b, 3, 2, 3, true);
	marker(&b, 5, 3, 0);
	data(&b, 6, 1, -1, false);
	abtx ab[] = {{3, 0}};
	char got[256];
	int64_t next;
	/* the first answer ends inside the batch at 3 */
	decode(b.data, cut + 20, 0, true, ab, 1, got, sizeof(got), &next);
	CH_CHECK_EQ_STR(got, "2");
	CH_CHECK_EQ_INT(next, 3);
	/* the second starts there; the broker lists the transaction begun at 0 again */
	decode(b.data + cut, b.len - cut, next, true, ab, 1, got, sizeof(got), &next);
	CH_CHECK_EQ_STR(got, "6");
	CH_CHECK_EQ_INT(next, 7);
	ch_buf_free(&b);
}

static void
t_nothing_read_moves_on(void)
{
	ch_buf b;
	ch_buf_init(&b);
	data(&b, 10, 3, 4, true);
	marker(&b, 13, 4, 0);
	abtx ab[] = {{4, 10}};
	EXPECT(&b, 10, true, ab, 1, "", 14);
	/* a commit marker alone (its records read by an earlier fetch) */
	ch_buf_free(&b);
	ch_buf_init(&b);
	marker(&b, 20, 4, 1);
	EXPECT(&b, 20, true, NULL, 0, "", 21);
	EXPECT(&b, 20, false, NULL, 0, "", 21);
	/* nothing at all: the position stays */
	ch_buf_free(&b);
	ch_buf_init(&b);
	char got[4];
	int64_t next;
	decode((const uint8_t *)"", 0, 30, true, NULL, 0, got, sizeof(got), &next);
	CH_CHECK_EQ_INT(next, 30);
	ch_buf_free(&b);
}

static void
t_bad_marker_key(void)
{
	/* a control batch whose key does not parse is no abort: the producer stays aborted
	 * and the batch yields nothing */
	ch_buf b;
	ch_buf_init(&b);
	data(&b, 0, 1, 5, true);
	ch_batch_builder bb;
	ch_batch_builder_begin(&bb, &b, 1, CH_BATCH_ATTR_TRANSACTIONAL | CH_BATCH_ATTR_CONTROL,
			       1000, 5, 0, -1);
	uint8_t key[2] = {0, 0};
	ch_batch_builder_add(&bb, 0, 1000, (ch_bytes){key, 2}, (ch_bytes){NULL, -1}, 0, NULL, 0);
	CH_CHECK_EQ_INT(ch_batch_builder_end(&bb, -1), CH_OK);
	data(&b, 2, 1, 5, true);
	abtx ab[] = {{5, 0}};
	EXPECT(&b, 0, true, ab, 1, "", 3);
	ch_buf_free(&b);
}

CH_TEST_MAIN(CH_TEST(t_committed), CH_TEST(t_aborted), CH_TEST(t_interleaved),
	     CH_TEST(t_across_fetches), CH_TEST(t_nothing_read_moves_on), CH_TEST(t_bad_marker_key))
