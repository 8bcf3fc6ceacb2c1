/* test_clean.c: log compaction: latest value per key, tombstones after
 * delete.retention.ms, compressed batches, off-thread run with concurrent
 * appends, and faults at every step of a clean. */
#include "log/tests/log_util.h"

#include <errno.h>
#include <pthread.h>

#include "common/ch_log.h"
#include "common/ch_test.h"
#include "log/ch_plog.h"

#define NKEYS 20

/* What the log says per key: the value of its last record (NULL value:
 * tombstone) and how many records it has. */
typedef struct key_state {
	char last[64];
	bool tomb;
	bool present;
	int count;
} key_state;

static int
scan_keys(ch_plog *pl, key_state ks[NKEYS], int64_t *records)
{
	memset(ks, 0, sizeof(key_state) * NKEYS);
	*records = 0;
	ch_buf all, scratch;
	ch_buf_init(&all);
	ch_buf_init(&scratch);
	tu_read_all(pl, &all, 1 << 20);
	size_t pos = 0;
	int64_t prev = -1;
	int bad = 0;
	while (pos < all.len) {
		ch_batch_hdr h;
		if (ch_batch_check(all.data + pos, all.len - pos, 0, false, &h) != CH_BATCH_OK) {
			bad++;
			break;
		}
		const uint8_t *recs;
		size_t rlen;
		if (ch_batch_records(all.data + pos, &h, &scratch, 1 << 24, &recs, &rlen) != CH_OK)
			bad++;
		ch_record_iter it;
		ch_record r;
		ch_record_iter_init(&it, recs, rlen, h.records_count);
		while (ch_record_next(&it, &r) == 1) {
			int64_t off = h.base_offset + r.offset_delta;
			if (off <= prev)
				bad++;
			prev = off;
			int k = atoi((const char *)r.key.p + 1);
			if (k < 0 || k >= NKEYS)
				continue;
			ks[k].present = true;
			ks[k].count++;
			ks[k].tomb = r.value.len < 0;
			if (r.value.len >= 0)
				snprintf(ks[k].last, sizeof(ks[k].last), "%.*s", r.value.len,
					 (const char *)r.value.p);
			(*records)++;
		}
		if (it.err)
			bad++;
		pos += (size_t)ch_batch_size(&h);
	}
	ch_buf_free(&all);
	ch_buf_free(&scratch);
	return bad;
}

/* Appends rounds of NKEYS records (5 per batch, codec cycling), timestamps
 * ts; in round `tomb_round` keys 0..4 get tombstones. */
static void
fill(ch_plog *pl, int r0, int rounds, int64_t ts, int tomb_round)
{
	int16_t kerr;
	for (int r = r0; r < r0 + rounds; r++) {
		for (int b = 0; b < NKEYS / 5; b++) {
			ch_buf buf;
			ch_buf_init(&buf);
			tu_batch(&buf, 5, ts, NKEYS, r * 1000 + b * 5, r == tomb_round && b == 0,
				 (r + b) % 5);
			/* key0 + i: keys b*5 .. b*5+4 (r * 1000 is 0 mod NKEYS) */
			ch_plog_append_info info;
			CH_CHECK_EQ_INT(ch_plog_append(pl, buf.data, buf.len, ts, &info, &kerr),
					CH_OK);
			ch_buf_free(&buf);
		}
	}
}

static ch_plog_config
compact_cfg(void)
{
	ch_plog_config c;
	ch_plog_config_default(&c);
	c.segment_bytes = 1024;
	c.index_interval_bytes = 200;
	c.cleanup_delete = false;
	c.cleanup_compact = true;
	c.delete_retention_ms = 1000;
	return c;
}

/* tombs: 0 none were written, 1 keys 0..4 end in a tombstone, 2 those
 * tombstones have been cleaned away. */
static void
check_latest(ch_plog *pl, int tombs, int rounds)
{
	key_state ks[NKEYS];
	int64_t records;
	CH_CHECK_EQ_INT(scan_keys(pl, ks, &records), 0);
	for (int k = 0; k < NKEYS; k++) {
		if (k < 5 && tombs) {
			/* tombstoned in the last round */
			if (tombs == 2)
				CH_CHECK(!ks[k].present);
			else
				CH_CHECK(ks[k].present && ks[k].tomb);
			continue;
		}
		char want[64];
		snprintf(want, sizeof(want), "v%d-", (rounds - 1) * 1000 + k);
		CH_CHECK(ks[k].present && !ks[k].tomb);
		CH_CHECK(strncmp(ks[k].last, want, strlen(want)) == 0);
	}
}

static void
t_compact(void)
{
	tu_mkdtemp();
	ch_plog_config c = compact_cfg();
	ch_plog *pl = NULL;
	CH_CHECK_EQ_INT(ch_plog_open(tu_dir, "c", 0, &c, NULL, 0, &pl), CH_OK);
	fill(pl, 0, 10, 5000, 9);
	/* An extra batch so that the last round sits in closed segments. */
	ch_buf pad;
	ch_buf_init(&pad);
	for (int i = 0; i < 12; i++) {
		ch_buf_reset(&pad);
		tu_batch(&pad, 5, 5000, 0, 100000 + i * 5, false, 0); /* keys >= NKEYS */
		ch_plog_append_info info;
		int16_t kerr;
		CH_CHECK_EQ_INT(ch_plog_append(pl, pad.data, pad.len, 0, &info, &kerr), CH_OK);
	}
	/* A compacted topic refuses records without a key. */
	{
		ch_buf b;
		ch_buf_init(&b);
		ch_batch_builder bb;
		ch_batch_builder_begin(&bb, &b, 0, 0, 1, -1, -1, -1);
		ch_batch_builder_add(&bb, 0, 1, CH_BYTES_NULL, (ch_bytes){(const uint8_t *)"x", 1},
				     0, NULL, 0);
		CH_CHECK_EQ_INT(ch_batch_builder_end_codec(&bb, -1, 2), CH_OK);
		ch_plog_append_info info;
		int16_t kerr;
		CH_CHECK_EQ_INT(ch_plog_append(pl, b.data, b.len, 0, &info, &kerr), CH_ERR);
		CH_CHECK_EQ_INT(kerr, CH_KERR_INVALID_RECORD);
		ch_buf_free(&b);
	}
	ch_buf_free(&pad);
	key_state ks[NKEYS];
	int64_t before, after;
	scan_keys(pl, ks, &before);
	CH_CHECK_EQ_INT(before, 10 * NKEYS);
	int64_t end = ch_plog_end_offset(pl), size0 = ch_plog_size_bytes(pl);
	check_latest(pl, 1, 10);

	/* Tombstones still within delete.retention.ms: kept. */
	CH_CHECK_EQ_INT(ch_plog_compact(pl, 5500), CH_OK);
	scan_keys(pl, ks, &after);
	CH_CHECK_EQ_INT(after, NKEYS);
	for (int k = 0; k < NKEYS; k++)
		CH_CHECK_EQ_INT(ks[k].count, 1);
	check_latest(pl, 1, 10);
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), end);
	CH_CHECK(ch_plog_size_bytes(pl) < size0 / 2);
	/* Index lookups still work: every remaining offset is found. */
	int64_t off, ts;
	int16_t kerr;
	CH_CHECK_EQ_INT(ch_plog_offset_for_time(pl, 4000, &off, &ts, &kerr), CH_OK);
	CH_CHECK(off >= 0);
	ch_plog_close(pl);

	CH_CHECK_EQ_INT(ch_plog_open(tu_dir, "c", 0, &c, NULL, 0, &pl), CH_OK);
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), end);
	check_latest(pl, 1, 10);
	/* Past delete.retention.ms: the tombstones go too. */
	CH_CHECK_EQ_INT(ch_plog_compact(pl, 5004 + 1001), CH_OK);
	scan_keys(pl, ks, &after);
	CH_CHECK_EQ_INT(after, NKEYS - 5);
	check_latest(pl, 2, 10);
	ch_plog_close(pl);
	CH_CHECK_EQ_INT(ch_plog_open(tu_dir, "c", 0, &c, NULL, 0, &pl), CH_OK);
	check_latest(pl, 2, 10);
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), end);
	ch_plog_close(pl);
	tu_rmdir();
}

typedef struct run_ctx {
	ch_plog_clean *c;
	int rc;
} run_ctx;

static void *
run_thread(void *arg)
{
	run_ctx *r = arg;
	r->rc = ch_plog_clean_run(r->c);
	return NULL;
}

/* The heavy part on another thread while the loop keeps appending and
 * reading; retention waits for the segments being cleaned. */
static void
t_compact_concurrent(void)
{
	tu_mkdtemp();
	ch_plog_config c = compact_cfg();
	c.cleanup_delete = true;
	c.retention_ms = 10;
	ch_plog *pl = NULL;
	CH_CHECK_EQ_INT(ch_plog_open(tu_dir, "c", 0, &c, NULL, 0, &pl), CH_OK);
	fill(pl, 0, 8, 5000, -1);
	size_t nseg = ch_plog_segment_count(pl);
	ch_plog_clean *cl = ch_plog_clean_begin(pl, 5000);
	CH_CHECK(cl != NULL);
	CH_CHECK(ch_plog_clean_begin(pl, 5000) == NULL); /* one at a time */
	run_ctx rc = {cl, -1};
	pthread_t th;
	pthread_create(&th, NULL, run_thread, &rc);
	for (int i = 0; i < 3; i++) {
		fill(pl, 8 + i, 1, 5000, -1);
		ch_buf all;
		ch_buf_init(&all);
		CH_CHECK(tu_read_all(pl, &all, 3000) > 0);
		ch_buf_free(&all);
		int d;
		int16_t kerr;
		CH_CHECK_EQ_INT(ch_plog_retention(pl, 1LL << 40, &d, &kerr), CH_OK);
		CH_CHECK_EQ_INT(d, 0); /* all old segments are being cleaned */
	}
	pthread_join(th, NULL);
	CH_CHECK_EQ_INT(rc.rc, CH_OK);
	CH_CHECK_EQ_INT(ch_plog_clean_finish(pl, cl), CH_OK);
	CH_CHECK(ch_plog_segment_count(pl) <= nseg + 10);
	check_latest(pl, 0, 11);
	int64_t end = ch_plog_end_offset(pl);
	ch_plog_close(pl);
	CH_CHECK_EQ_INT(ch_plog_open(tu_dir, "c", 0, &c, NULL, 0, &pl), CH_OK);
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), end);
	check_latest(pl, 0, 11);
	ch_plog_close(pl);
	tu_rmdir();
}

/* A fault at every step of a clean (writing the cleaned files, syncing,
 * unlinking the old indexes, renaming): the log keeps the latest value of
 * every key, and so does the reopened log. */
static void
t_compact_faults(void)
{
	ch_log_threshold = CH_LOG_ERROR;
	static const int errs[] = {ENOSPC, EIO};
	for (size_t e = 0; e < 2; e++) {
		long k;
		for (k = 1; k < 5000; k++) {
			tu_mkdtemp();
			ch_logfs_fault f;
			ch_logfs_fault_init(&f, ch_logfs_posix());
			ch_plog_config c = compact_cfg();
			ch_plog *pl = NULL;
			CH_CHECK_EQ_INT(ch_plog_open(tu_dir, "c", 0, &c, &f.ops, 0, &pl), CH_OK);
			fill(pl, 0, 4, 5000, -1);
			int64_t end = ch_plog_end_offset(pl);
			ch_logfs_fault_arm(&f, k, errs[e], false);
			int rc = ch_plog_compact(pl, 5000);
			bool fired = atomic_load(&f.failures) > 0;
			CH_CHECK(rc == CH_OK || fired);
			check_latest(pl, 0, 4);
			ch_plog_close(pl);
			CH_CHECK_EQ_INT(ch_plog_open(tu_dir, "c", 0, &c, NULL, 0, &pl), CH_OK);
			CH_CHECK_EQ_INT(ch_plog_end_offset(pl), end);
			check_latest(pl, 0, 4);
			/* And a clean after the failed one finishes the job. */
			CH_CHECK_EQ_INT(ch_plog_compact(pl, 5000), CH_OK);
			key_state ks[NKEYS];
			int64_t n;
			CH_CHECK_EQ_INT(scan_keys(pl, ks, &n), 0);
			check_latest(pl, 0, 4);
			ch_plog_close(pl);
			tu_rmdir();
			if (!fired)
				break;
		}
		CH_CHECK(k > 10);
	}
	ch_log_threshold = CH_LOG_INFO;
}

CH_TEST_MAIN(CH_TEST(t_compact), CH_TEST(t_compact_concurrent), CH_TEST(t_compact_faults))
