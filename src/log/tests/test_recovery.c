/* test_recovery.c: the log cut at every byte of its tail, and every byte of
 * its last batch garbled: recovery keeps exactly the whole, valid batches
 * before the damage, rebuilds what index it must, and the log goes on. */
#include "log/tests/log_util.h"

#include <fcntl.h>

#include "common/ch_log.h"
#include "common/ch_test.h"
#include "log/ch_plog.h"

static ch_plog_config
cfg(void)
{
	ch_plog_config c;
	ch_plog_config_default(&c);
	c.segment_bytes = 1 << 20;
	c.index_interval_bytes = 300;
	return c;
}

/* Appends n batches, returns the model bytes and the batch boundaries
 * (pos[i] = file position of batch i, off[i] = its base offset). */
static int
build(int n, ch_buf *model, int64_t *pos, int64_t *off)
{
	ch_plog_config c = cfg();
	ch_plog *pl = NULL;
	CH_CHECK_EQ_INT(ch_plog_open(tu_dir, "r", 0, &c, NULL, 0, &pl), CH_OK);
	int16_t kerr;
	for (int i = 0; i < n; i++) {
		ch_buf b;
		ch_buf_init(&b);
		tu_batch(&b, 1 + i % 4, 1000 + i, 0, i, false, i % 3 == 0 ? 3 : 0);
		ch_plog_append_info info;
		pos[i] = (int64_t)model->len;
		off[i] = ch_plog_end_offset(pl);
		CH_CHECK_EQ_INT(ch_plog_append(pl, b.data, b.len, 0, &info, &kerr), CH_OK);
		ch_buf_append(model, b.data, b.len);
		ch_buf_free(&b);
	}
	pos[n] = (int64_t)model->len;
	off[n] = ch_plog_end_offset(pl);
	ch_plog_close(pl);
	return 0;
}

static char *
logpath(void)
{
	static char p[512];
	snprintf(p, sizeof(p), "%s/r-0/00000000000000000000.log", tu_dir);
	return p;
}

/* Reopens and checks the log is exactly model[0..pos[k]) with end off[k]. */
static void
expect_prefix(const ch_buf *model, int64_t bytes, int64_t end)
{
	ch_plog_config c = cfg();
	ch_plog *pl = NULL;
	CH_CHECK_EQ_INT(ch_plog_open(tu_dir, "r", 0, &c, NULL, 0, &pl), CH_OK);
	if (!pl)
		return;
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), end);
	ch_buf got;
	ch_buf_init(&got);
	tu_read_all(pl, &got, 700);
	CH_CHECK_EQ_INT(got.len, bytes);
	CH_CHECK(got.len == (size_t)bytes && memcmp(got.data, model->data, got.len) == 0);
	/* Every offset is found through the (possibly rebuilt) index. */
	for (int64_t o = 0; o < end; o += 7) {
		ch_plog_slice s;
		int16_t kerr;
		CH_CHECK_EQ_INT(ch_plog_read(pl, o, 1, &s, &kerr), CH_OK);
		CH_CHECK(s.len > 0 && s.first_offset <= o);
		ch_plog_slice_release(&s);
	}
	ch_buf_free(&got);
	ch_plog_close(pl);
}

static void
t_cut_every_byte(void)
{
	tu_mkdtemp();
	enum {
		N = 40
	};
	int64_t pos[N + 1], off[N + 1];
	ch_buf model;
	ch_buf_init(&model);
	build(N, &model, pos, off);
	/* Cut from the end down to the middle; each reopen repairs, the next
	 * cut goes below. */
	int k = N;
	for (int64_t cut = pos[N]; cut >= pos[N / 2]; cut -= 3) {
		CH_CHECK_EQ_INT(truncate(logpath(), cut), 0);
		while (pos[k] > cut)
			k--;
		expect_prefix(&model, pos[k], off[k]);
	}
	ch_buf_free(&model);
	tu_rmdir();
}

static void
t_garble_last_batch(void)
{
	enum {
		N = 20
	};
	for (int64_t i = 0;; i++) {
		tu_mkdtemp();
		int64_t pos[N + 1], off[N + 1];
		ch_buf model;
		ch_buf_init(&model);
		build(N, &model, pos, off);
		int64_t at = pos[N - 1] + i;
		if (at >= pos[N]) {
			ch_buf_free(&model);
			tu_rmdir();
			break;
		}
		/* baseOffset and partitionLeaderEpoch are outside the CRC, as in
		 * Kafka: a flip there cannot be told from a valid value. */
		if (i >= 8 && (i < 12 || i >= 16)) {
			int fd = open(logpath(), O_RDWR);
			uint8_t x;
			CH_CHECK(pread(fd, &x, 1, at) == 1);
			x ^= 0x10;
			CH_CHECK(pwrite(fd, &x, 1, at) == 1);
			close(fd);
			expect_prefix(&model, pos[N - 1], off[N - 1]);
		}
		ch_buf_free(&model);
		tu_rmdir();
	}
}

/* After a clean stop (a sync, then the close writes the log end as the
 * recovery point) the last segment is trusted as the older ones are: a
 * reopen checks only its tail, as Kafka skips recovery after a clean
 * shutdown; a restart of cohortd then reads __consumer_offsets once, for the
 * replay. Without the recovery point (as after a crash before the first
 * one) the same segment is checked in full. The damage is in the first
 * batch, far below the last index entry, so only a full check sees it. */
static void
t_clean_stop_trusts_last_segment(void)
{
	enum {
		N = 40
	};
	tu_mkdtemp();
	int64_t pos[N + 1], off[N + 1];
	ch_buf model;
	ch_buf_init(&model);
	build(N, &model, pos, off);
	ch_plog_config c = cfg();
	ch_plog *pl = NULL;
	CH_CHECK_EQ_INT(ch_plog_open(tu_dir, "r", 0, &c, NULL, 0, &pl), CH_OK);
	CH_CHECK_EQ_INT(ch_plog_sync(pl), CH_OK);
	ch_plog_close(pl); /* recovery point = the log end */
	int fd = open(logpath(), O_RDWR);
	uint8_t x;
	CH_CHECK(pread(fd, &x, 1, pos[0] + 30) == 1); /* in batch 0's CRC range */
	x ^= 0x10;
	CH_CHECK(pwrite(fd, &x, 1, pos[0] + 30) == 1);
	close(fd);
	CH_CHECK_EQ_INT(ch_plog_open(tu_dir, "r", 0, &c, NULL, 0, &pl), CH_OK);
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), off[N]);
	ch_plog_close(pl);
	char rp[512];
	snprintf(rp, sizeof(rp), "%s/r-0/recovery-point", tu_dir);
	CH_CHECK_EQ_INT(unlink(rp), 0);
	CH_CHECK_EQ_INT(ch_plog_open(tu_dir, "r", 0, &c, NULL, 0, &pl), CH_OK);
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), 0); /* cut at the damaged batch */
	ch_plog_close(pl);
	ch_buf_free(&model);
	tu_rmdir();
}

CH_TEST_MAIN(CH_TEST(t_cut_every_byte), CH_TEST(t_garble_last_batch),
	     CH_TEST(t_clean_stop_trusts_last_segment))
