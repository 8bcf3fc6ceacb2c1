/* test_plog.c: partition log: append/read across rolls, indexes, time
 * lookups, recovery, retention, durability, DeleteRecords. */
#include "log/tests/log_util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>

#include "common/ch_endian.h"
#include "common/ch_log.h"
#include "common/ch_test.h"
#include "log/ch_codec.h"
#include "log/ch_plog.h"

static ch_plog_config
small_cfg(void)
{
	ch_plog_config c;
	ch_plog_config_default(&c);
	c.segment_bytes = 8192;
	c.index_interval_bytes = 512;
	c.retention_ms = -1;
	return c;
}

static ch_plog *
open_log(const ch_plog_config *c, ch_logfs *fs, int64_t now)
{
	ch_plog *pl = NULL;
	CH_CHECK_EQ_INT(ch_plog_open(tu_dir, "t", 0, c, fs, now, &pl), CH_OK);
	return pl;
}

/* Appends batch i (1 + i % 7 records, timestamps 1000 + 10 * offset) and
 * mirrors the stored bytes into model. */
static int
append_one(ch_plog *pl, int i, int64_t now, ch_buf *model, int16_t *kerr)
{
	ch_buf b;
	ch_buf_init(&b);
	tu_batch(&b, 1 + i % 7, 1000 + 10 * ch_plog_end_offset(pl), 0, i * 10, false, 0);
	ch_plog_append_info info;
	int rc = ch_plog_append(pl, b.data, b.len, now, &info, kerr);
	if (rc == CH_OK && model)
		ch_buf_append(model, b.data, b.len);
	ch_buf_free(&b);
	return rc;
}

static bool
log_equals(ch_plog *pl, const ch_buf *model, int64_t chunk)
{
	ch_buf got;
	ch_buf_init(&got);
	tu_read_all(pl, &got, chunk);
	bool eq = got.len == model->len && memcmp(got.data, model->data, got.len) == 0;
	if (!eq)
		fprintf(stderr, "log has %zu bytes, model %zu\n", got.len, model->len);
	ch_buf_free(&got);
	return eq;
}

static void
t_append_read_roll(void)
{
	tu_mkdtemp();
	ch_plog_config c = small_cfg();
	ch_plog *pl = open_log(&c, NULL, 0);
	ch_buf model;
	ch_buf_init(&model);
	int16_t kerr;
	int64_t expect = 0;
	for (int i = 0; i < 400; i++) {
		CH_CHECK_EQ_INT(append_one(pl, i, 0, &model, &kerr), CH_OK);
		expect += 1 + i % 7;
	}
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), expect);
	CH_CHECK(ch_plog_segment_count(pl) > 5);
	CH_CHECK(log_equals(pl, &model, 1));
	CH_CHECK(log_equals(pl, &model, 3000));
	CH_CHECK(log_equals(pl, &model, 1 << 20));

	/* Every offset finds the batch holding it (index lookups). */
	for (int64_t o = 0; o < expect; o++) {
		ch_plog_slice s;
		CH_CHECK_EQ_INT(ch_plog_read(pl, o, 1, &s, &kerr), CH_OK);
		uint8_t hb[CH_BATCH_HDR_SIZE];
		ch_batch_hdr h;
		CH_CHECK(pread(s.fd, hb, sizeof(hb), s.pos) == (ssize_t)sizeof(hb));
		CH_CHECK_EQ_INT(ch_batch_parse_hdr(hb, sizeof(hb), 0, &h), 0);
		CH_CHECK(h.base_offset <= o && o <= ch_batch_last_offset(&h));
		CH_CHECK_EQ_INT(s.len, ch_batch_size(&h)); /* one whole batch over max */
		ch_plog_slice_release(&s);
	}
	ch_plog_slice s;
	CH_CHECK_EQ_INT(ch_plog_read(pl, expect, 100, &s, &kerr), CH_OK);
	CH_CHECK_EQ_INT(s.len, 0);
	CH_CHECK_EQ_INT(ch_plog_read(pl, expect + 1, 100, &s, &kerr), CH_ERR);
	CH_CHECK_EQ_INT(kerr, CH_KERR_OFFSET_OUT_OF_RANGE);
	CH_CHECK_EQ_INT(ch_plog_read(pl, -1, 100, &s, &kerr), CH_ERR);

	/* Bad input is refused with the right code and changes nothing. */
	ch_buf b;
	ch_buf_init(&b);
	tu_batch(&b, 3, 5, 0, 0, false, 0);
	b.data[b.len - 1] ^= 1;
	ch_plog_append_info info;
	CH_CHECK_EQ_INT(ch_plog_append(pl, b.data, b.len, 0, &info, &kerr), CH_ERR);
	CH_CHECK_EQ_INT(kerr, CH_KERR_CORRUPT_MESSAGE);
	CH_CHECK_EQ_INT(ch_plog_append(pl, b.data, 30, 0, &info, &kerr), CH_ERR);
	CH_CHECK_EQ_INT(kerr, CH_KERR_CORRUPT_MESSAGE);
	ch_buf_reset(&b);
	tu_batch(&b, 200, 5, 0, 0, false, 0);
	c.max_message_bytes = 1000;
	ch_plog_set_config(pl, &c);
	CH_CHECK_EQ_INT(ch_plog_append(pl, b.data, b.len, 0, &info, &kerr), CH_ERR);
	CH_CHECK_EQ_INT(kerr, CH_KERR_MESSAGE_TOO_LARGE);
	c.max_message_bytes = 1 << 20;
	ch_plog_set_config(pl, &c);
	CH_CHECK_EQ_INT(ch_plog_append(pl, b.data, b.len, 0, &info, &kerr), CH_OK);
	CH_CHECK_EQ_INT(info.base_offset, expect);
	CH_CHECK_EQ_INT(info.last_offset, expect + 199);
	ch_buf_append(&model, b.data, b.len);
	/* Several batches in one call. */
	ch_buf_reset(&b);
	tu_batch(&b, 2, 5, 0, 0, false, 0);
	tu_batch(&b, 3, 6, 0, 0, false, 0);
	CH_CHECK_EQ_INT(ch_plog_append(pl, b.data, b.len, 0, &info, &kerr), CH_OK);
	CH_CHECK_EQ_INT(info.batches, 2);
	CH_CHECK_EQ_INT(info.records, 5);
	ch_buf_append(&model, b.data, b.len);
	ch_buf_free(&b);
	int64_t end = ch_plog_end_offset(pl);
	size_t nseg = ch_plog_segment_count(pl);
	ch_plog_close(pl);

	/* Reopen: same offsets, same bytes, same segments. */
	pl = open_log(&c, NULL, 0);
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), end);
	CH_CHECK_EQ_INT(ch_plog_segment_count(pl), nseg);
	CH_CHECK(log_equals(pl, &model, 5000));
	ch_plog_close(pl);
	ch_buf_free(&model);
	tu_rmdir();
}

static void
t_roll_by_time_and_lat(void)
{
	tu_mkdtemp();
	ch_plog_config c = small_cfg();
	c.segment_bytes = 1 << 20;
	c.segment_ms = 1000;
	c.log_append_time = true;
	ch_plog *pl = open_log(&c, NULL, 0);
	int16_t kerr;
	for (int i = 0; i < 10; i++)
		CH_CHECK_EQ_INT(append_one(pl, i, 100 + i * 300, NULL, &kerr), CH_OK);
	/* 10 appends 300 ms apart with 1 s segments: 3 or 4 rolls. */
	CH_CHECK(ch_plog_segment_count(pl) >= 3 && ch_plog_segment_count(pl) <= 4);
	int64_t off, ts;
	CH_CHECK_EQ_INT(ch_plog_offset_for_time(pl, 100 + 5 * 300, &off, &ts, &kerr), CH_OK);
	CH_CHECK_EQ_INT(ts, 100 + 5 * 300); /* append time, not the producer's */
	CH_CHECK(off > 0);
	ch_plog_close(pl);
	tu_rmdir();
}

static void
t_timestamps(void)
{
	tu_mkdtemp();
	ch_plog_config c = small_cfg();
	ch_plog *pl = open_log(&c, NULL, 0);
	int16_t kerr;
	/* Batch at base B holds timestamps 1000 + 10 * B + i: increasing. */
	static int64_t ts_of[2000];
	for (int i = 0; i < 300; i++) {
		int64_t b0 = ch_plog_end_offset(pl);
		CH_CHECK_EQ_INT(append_one(pl, i, 0, NULL, &kerr), CH_OK);
		for (int64_t o = b0; o < ch_plog_end_offset(pl); o++)
			ts_of[o] = 1000 + 10 * b0 + (o - b0);
	}
	int64_t end = ch_plog_end_offset(pl);
	for (int pass = 0; pass < 2; pass++) {
		for (int64_t o = 1; o < end; o++) {
			int64_t off, ts;
			CH_CHECK_EQ_INT(
				ch_plog_offset_for_time(pl, ts_of[o - 1] + 1, &off, &ts, &kerr),
				CH_OK);
			CH_CHECK_EQ_INT(off, o);
			CH_CHECK_EQ_INT(ts, ts_of[o]);
			CH_CHECK_EQ_INT(ch_plog_offset_for_time(pl, ts_of[o], &off, &ts, &kerr),
					CH_OK);
			CH_CHECK_EQ_INT(off, o);
		}
		int64_t off, ts;
		CH_CHECK_EQ_INT(ch_plog_offset_for_time(pl, 0, &off, &ts, &kerr), CH_OK);
		CH_CHECK_EQ_INT(off, 0);
		CH_CHECK_EQ_INT(ch_plog_offset_for_time(pl, ts_of[end - 1] + 1, &off, &ts, &kerr),
				CH_OK);
		CH_CHECK_EQ_INT(off, -1);
		CH_CHECK_EQ_INT(ch_plog_max_timestamp(pl, &off, &ts, &kerr), CH_OK);
		CH_CHECK_EQ_INT(off, end - 1);
		CH_CHECK_EQ_INT(ts, ts_of[end - 1]);
		ch_plog_close(pl);
		pl = open_log(&c, NULL, 0); /* again from recovered indexes */
	}
	/* A compressed batch with an out-of-order max timestamp. */
	ch_buf b;
	ch_buf_init(&b);
	tu_batch(&b, 5, 1000000, 0, 0, false, 4);
	ch_plog_append_info info;
	CH_CHECK_EQ_INT(ch_plog_append(pl, b.data, b.len, 0, &info, &kerr), CH_OK);
	int64_t off, ts;
	CH_CHECK_EQ_INT(ch_plog_offset_for_time(pl, 1000002, &off, &ts, &kerr), CH_OK);
	CH_CHECK_EQ_INT(off, info.base_offset + 2);
	CH_CHECK_EQ_INT(ts, 1000002);
	CH_CHECK_EQ_INT(ch_plog_max_timestamp(pl, &off, &ts, &kerr), CH_OK);
	CH_CHECK_EQ_INT(off, info.last_offset);
	ch_buf_free(&b);
	ch_plog_close(pl);
	tu_rmdir();
}

static char *
seg_file(int64_t base, const char *ext)
{
	static char ps[4][512];
	static int k;
	char *p = ps[k++ % 4];
	snprintf(p, 512, "%s/t-0/%020lld%s", tu_dir, (long long)base, ext);
	return p;
}

static long
file_size(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

static void
t_recovery(void)
{
	tu_mkdtemp();
	ch_log_threshold = CH_LOG_ERROR; /* the WARNs are expected */
	ch_plog_config c = small_cfg();
	c.segment_bytes = 1 << 20;
	ch_plog *pl = open_log(&c, NULL, 0);
	ch_buf model;
	ch_buf_init(&model);
	int16_t kerr;
	for (int i = 0; i < 100; i++)
		CH_CHECK_EQ_INT(append_one(pl, i, 0, &model, &kerr), CH_OK);
	int64_t end = ch_plog_end_offset(pl);
	ch_plog_close(pl);
	const char *log = seg_file(0, ".log");
	long good = file_size(log);

	/* 1. Torn tail: half a batch after the last whole one. */
	ch_buf b;
	ch_buf_init(&b);
	tu_batch(&b, 4, 1, 0, 0, false, 0);
	int fd = open(log, O_WRONLY | O_APPEND);
	CH_CHECK(write(fd, b.data, b.len / 2) == (ssize_t)(b.len / 2));
	close(fd);
	pl = open_log(&c, NULL, 0);
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), end);
	CH_CHECK_EQ_INT(file_size(log), good);
	CH_CHECK(log_equals(pl, &model, 4096));
	ch_plog_close(pl);

	/* 2. Garbage (zeros, as after a crash with a preextended file). */
	fd = open(log, O_WRONLY | O_APPEND);
	static const uint8_t zeros[300];
	CH_CHECK(write(fd, zeros, sizeof(zeros)) == (ssize_t)sizeof(zeros));
	close(fd);
	pl = open_log(&c, NULL, 0);
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), end);
	CH_CHECK_EQ_INT(file_size(log), good);
	ch_plog_close(pl);

	/* 3. Bad CRC in the last batch on disk: that batch goes, no other. */
	ch_batch_hdr last;
	size_t pos = 0, last_pos = 0;
	while (pos < model.len) {
		ch_batch_check(model.data + pos, model.len - pos, 0, false, &last);
		last_pos = pos;
		pos += (size_t)ch_batch_size(&last);
	}
	fd = open(log, O_WRONLY);
	uint8_t x = 0xff;
	CH_CHECK(pwrite(fd, &x, 1, (off_t)(last_pos + 70)) == 1);
	close(fd);
	pl = open_log(&c, NULL, 0);
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), last.base_offset);
	CH_CHECK_EQ_INT(file_size(log), (long)last_pos);
	model.len = last_pos;
	CH_CHECK(log_equals(pl, &model, 4096));
	/* The log goes on from there. */
	CH_CHECK_EQ_INT(append_one(pl, 1000, 0, &model, &kerr), CH_OK);
	CH_CHECK(log_equals(pl, &model, 4096));
	end = ch_plog_end_offset(pl);
	ch_plog_close(pl);

	/* 4. Missing index and time index: rebuilt to the same bytes. */
	const char *idx = seg_file(0, ".index");
	long isz = file_size(idx);
	CH_CHECK(isz > 0);
	unlink(seg_file(0, ".index"));
	unlink(seg_file(0, ".timeindex"));
	pl = open_log(&c, NULL, 0);
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), end);
	CH_CHECK_EQ_INT(file_size(idx), isz);
	CH_CHECK(log_equals(pl, &model, 1));
	int64_t off, ts;
	CH_CHECK_EQ_INT(ch_plog_offset_for_time(pl, 1000 + 10 * 50, &off, &ts, &kerr), CH_OK);
	CH_CHECK(off >= 50 && off <= 57);
	ch_plog_close(pl);

	/* 5. Inconsistent index: garbage appended, and an entry pointing at
	 * the wrong place. */
	fd = open(idx, O_WRONLY | O_APPEND);
	uint8_t junk[8] = {0, 0, 0, 9, 0, 0, 0, 1};
	CH_CHECK(write(fd, junk, 8) == 8);
	close(fd);
	pl = open_log(&c, NULL, 0);
	CH_CHECK_EQ_INT(file_size(idx), isz);
	CH_CHECK(log_equals(pl, &model, 1));
	ch_plog_close(pl);

	/* 6. Corruption in the tail of a closed segment (bit rot after a roll)
	 * is cut there; the later segments survive. */
	c.segment_bytes = 4096;
	pl = open_log(&c, NULL, 0);
	for (int i = 0; i < 60; i++)
		CH_CHECK_EQ_INT(append_one(pl, i, 0, &model, &kerr), CH_OK);
	CH_CHECK(ch_plog_segment_count(pl) >= 3);
	end = ch_plog_end_offset(pl);
	int64_t prev_base;
	{
		ch_plog_slice s;
		CH_CHECK_EQ_INT(ch_plog_read(pl, ch_plog_active_base(pl) - 1, 1, &s, &kerr), CH_OK);
		prev_base = s.seg->base;
		ch_plog_slice_release(&s);
	}
	ch_plog_close(pl);
	/* Walk the previous segment's file to its last batch; garble it. */
	const char *plog = seg_file(prev_base, ".log");
	fd = open(plog, O_RDWR);
	long psz = file_size(plog), p = 0, lastp = 0;
	int64_t last_base = 0;
	while (p < psz) {
		uint8_t hb[CH_BATCH_HDR_SIZE];
		ch_batch_hdr h;
		CH_CHECK(pread(fd, hb, sizeof(hb), p) == (ssize_t)sizeof(hb));
		ch_batch_parse_hdr(hb, sizeof(hb), 0, &h);
		lastp = p;
		last_base = h.base_offset;
		p += (long)ch_batch_size(&h);
	}
	CH_CHECK(pwrite(fd, &x, 1, lastp + 65) == 1);
	close(fd);
	pl = open_log(&c, NULL, 0);
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), end);
	CH_CHECK_EQ_INT(file_size(plog), lastp);
	/* Reads skip the gap the cut left. */
	{
		ch_plog_slice s;
		CH_CHECK_EQ_INT(ch_plog_read(pl, last_base, 1, &s, &kerr), CH_OK);
		CH_CHECK(s.len > 0 && s.first_offset > last_base);
		ch_plog_slice_release(&s);
		ch_buf all;
		ch_buf_init(&all);
		CH_CHECK(tu_read_all(pl, &all, 1000) > 100);
		ch_buf_free(&all);
	}
	ch_plog_close(pl);
	ch_buf_free(&b);
	ch_buf_free(&model);
	tu_rmdir();
	ch_log_threshold = CH_LOG_INFO;
}

static void
t_retention(void)
{
	tu_mkdtemp();
	ch_plog_config c = small_cfg();
	c.segment_bytes = 2048;
	ch_plog *pl = open_log(&c, NULL, 0);
	int16_t kerr;
	for (int i = 0; i < 200; i++)
		CH_CHECK_EQ_INT(append_one(pl, i, 0, NULL, &kerr), CH_OK);
	int64_t end = ch_plog_end_offset(pl);
	size_t nseg = ch_plog_segment_count(pl);
	CH_CHECK(nseg > 10);
	int deleted;
	/* Nothing configured: nothing goes. */
	CH_CHECK_EQ_INT(ch_plog_retention(pl, 1LL << 40, &deleted, &kerr), CH_OK);
	CH_CHECK_EQ_INT(deleted, 0);

	/* Size: keep at most 10000 bytes (whole segments only). */
	c.retention_bytes = 10000;
	ch_plog_set_config(pl, &c);
	CH_CHECK_EQ_INT(ch_plog_retention(pl, 0, &deleted, &kerr), CH_OK);
	CH_CHECK(deleted > 0);
	/* Kafka's rule: delete while what remains is still >= retention.bytes. */
	CH_CHECK(ch_plog_size_bytes(pl) >= 10000);
	CH_CHECK(ch_plog_size_bytes(pl) < 10000 + 2048 + 200);
	int64_t start = ch_plog_start_offset(pl);
	CH_CHECK(start > 0);
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), end);
	ch_plog_slice s;
	CH_CHECK_EQ_INT(ch_plog_read(pl, start - 1, 100, &s, &kerr), CH_ERR);
	CH_CHECK_EQ_INT(kerr, CH_KERR_OFFSET_OUT_OF_RANGE);
	CH_CHECK_EQ_INT(ch_plog_read(pl, start, 100, &s, &kerr), CH_OK);
	CH_CHECK(s.len > 0 && s.first_offset == start);
	ch_plog_slice_release(&s);
	ch_plog_close(pl);
	pl = open_log(&c, NULL, 0);
	CH_CHECK_EQ_INT(ch_plog_start_offset(pl), start);
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), end);

	/* Time: records have timestamps 1000 + 10 * offset. */
	c.retention_bytes = -1;
	c.retention_ms = 100;
	ch_plog_set_config(pl, &c);
	int64_t cut = 1000 + 10 * (end - 20); /* segments entirely older than this go */
	CH_CHECK_EQ_INT(ch_plog_retention(pl, cut + 100, &deleted, &kerr), CH_OK);
	CH_CHECK(deleted > 0);
	start = ch_plog_start_offset(pl);
	CH_CHECK(start <= end - 20);
	CH_CHECK(ch_plog_segment_count(pl) >= 1);
	/* Even when everything is old, the active segment stays. */
	CH_CHECK_EQ_INT(ch_plog_retention(pl, 1LL << 40, &deleted, &kerr), CH_OK);
	CH_CHECK_EQ_INT(ch_plog_segment_count(pl), 1);
	CH_CHECK_EQ_INT(ch_plog_start_offset(pl), ch_plog_active_base(pl));
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), end);
	ch_plog_close(pl);
	pl = open_log(&c, NULL, 0);
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), end);
	CH_CHECK_EQ_INT(ch_plog_segment_count(pl), 1);
	ch_plog_close(pl);
	tu_rmdir();
}

static void
t_delete_records(void)
{
	tu_mkdtemp();
	ch_plog_config c = small_cfg();
	c.segment_bytes = 2048;
	ch_plog *pl = open_log(&c, NULL, 0);
	int16_t kerr;
	for (int i = 0; i < 100; i++)
		CH_CHECK_EQ_INT(append_one(pl, i, 0, NULL, &kerr), CH_OK);
	int64_t end = ch_plog_end_offset(pl), lw;
	size_t nseg = ch_plog_segment_count(pl);
	CH_CHECK_EQ_INT(ch_plog_delete_records(pl, end + 1, &lw, &kerr), CH_ERR);
	CH_CHECK_EQ_INT(kerr, CH_KERR_OFFSET_OUT_OF_RANGE);
	CH_CHECK_EQ_INT(ch_plog_delete_records(pl, 150, &lw, &kerr), CH_OK);
	CH_CHECK_EQ_INT(lw, 150);
	CH_CHECK(ch_plog_segment_count(pl) < nseg);
	ch_plog_slice s;
	CH_CHECK_EQ_INT(ch_plog_read(pl, 149, 100, &s, &kerr), CH_ERR);
	CH_CHECK_EQ_INT(ch_plog_read(pl, 150, 100, &s, &kerr), CH_OK);
	CH_CHECK(s.first_offset <= 150);
	ch_plog_slice_release(&s);
	/* Never back; only -1 means the end (Kafka's high watermark). */
	CH_CHECK_EQ_INT(ch_plog_delete_records(pl, 100, &lw, &kerr), CH_OK);
	CH_CHECK_EQ_INT(lw, 150);
	CH_CHECK_EQ_INT(ch_plog_delete_records(pl, -2, &lw, &kerr), CH_ERR);
	CH_CHECK_EQ_INT(kerr, CH_KERR_OFFSET_OUT_OF_RANGE);
	ch_plog_close(pl);
	pl = open_log(&c, NULL, 0);
	CH_CHECK_EQ_INT(ch_plog_start_offset(pl), 150);
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), end);
	CH_CHECK_EQ_INT(ch_plog_delete_records(pl, -1, &lw, &kerr), CH_OK);
	CH_CHECK_EQ_INT(lw, end);
	CH_CHECK_EQ_INT(ch_plog_segment_count(pl), 1);
	ch_plog_close(pl);
	pl = open_log(&c, NULL, 0);
	CH_CHECK_EQ_INT(ch_plog_start_offset(pl), end);
	ch_plog_close(pl);
	tu_rmdir();
}

/* A checkpoint that exists but cannot be read (here: a directory in its
 * place, EISDIR; EIO or EACCES alike) fails the open: a log whose start is
 * unknown must not come back starting at 0 (Kafka takes the directory
 * offline). A missing one is no error. */
static void
t_unreadable_checkpoint(void)
{
	static const char *const files[] = {"log-start-offset", "recovery-point"};
	for (size_t f = 0; f < CH_ARRAY_LEN(files); f++) {
		tu_mkdtemp();
		ch_log_threshold = CH_LOG_ERROR;
		ch_plog_config c = small_cfg();
		ch_plog *pl = open_log(&c, NULL, 0);
		int16_t kerr;
		int64_t lw;
		for (int i = 0; i < 20; i++)
			CH_CHECK_EQ_INT(append_one(pl, i, 0, NULL, &kerr), CH_OK);
		CH_CHECK_EQ_INT(ch_plog_delete_records(pl, 10, &lw, &kerr), CH_OK);
		ch_plog_close(pl);
		char p[512];
		snprintf(p, sizeof(p), "%s/t-0/%s", tu_dir, files[f]);
		CH_CHECK_EQ_INT(unlink(p), 0);
		CH_CHECK_EQ_INT(mkdir(p, 0755), 0);
		pl = NULL;
		CH_CHECK(ch_plog_open(tu_dir, "t", 0, &c, NULL, 0, &pl) < 0);
		CH_CHECK(pl == NULL);
		CH_CHECK_EQ_INT(rmdir(p), 0); /* missing: opens, the start from the segments */
		pl = open_log(&c, NULL, 0);
		CH_CHECK(ch_plog_start_offset(pl) <= 10);
		ch_plog_close(pl);
		ch_log_threshold = CH_LOG_INFO;
		tu_rmdir();
	}
}

/* ---- durability ------------------------------------------------------------ */

typedef struct sync_ctx {
	ch_plog *pl;
	atomic_bool stop;
	atomic_int syncs;
	atomic_bool exited; /* the thread stopped (asked to, or a sync failed) */
	bool monotonic;
} sync_ctx;

static void *
sync_thread(void *arg)
{
	sync_ctx *sc = arg;
	int64_t prev = 0;
	while (!atomic_load(&sc->stop)) {
		if (ch_plog_sync(sc->pl) != CH_OK)
			break;
		int64_t s = ch_plog_synced_offset(sc->pl);
		if (s < prev)
			sc->monotonic = false;
		prev = s;
		atomic_fetch_add(&sc->syncs, 1);
	}
	atomic_store(&sc->exited, true);
	return NULL;
}

static void
t_sync_concurrent(void)
{
	tu_mkdtemp();
	ch_plog_config c = small_cfg();
	c.segment_bytes = 4096;
	ch_plog *pl = open_log(&c, NULL, 0);
	sync_ctx sc = {.pl = pl, .monotonic = true};
	atomic_init(&sc.stop, false);
	atomic_init(&sc.syncs, 0);
	atomic_init(&sc.exited, false);
	pthread_t th;
	pthread_create(&th, NULL, sync_thread, &sc);
	int16_t kerr;
	ch_buf model;
	ch_buf_init(&model);
	for (int i = 0; i < 400; i++) {
		CH_CHECK_EQ_INT(append_one(pl, i, 0, &model, &kerr), CH_OK);
		CH_CHECK(ch_plog_synced_offset(pl) <= ch_plog_end_offset(pl));
		if (i % 50 == 0) {
			int d;
			c.retention_bytes = 20000;
			ch_plog_set_config(pl, &c);
			CH_CHECK_EQ_INT(ch_plog_retention(pl, 0, &d, &kerr), CH_OK);
		}
	}
	/* On a loaded machine the sync thread may not have run yet: let it sync
	 * at least once more while appends are done, so the check below is
	 * about correctness, not scheduling. */
	int before = atomic_load(&sc.syncs);
	while (atomic_load(&sc.syncs) < before + 1 && !atomic_load(&sc.exited))
		usleep(1000);
	atomic_store(&sc.stop, true);
	pthread_join(th, NULL);
	CH_CHECK(sc.monotonic);
	CH_CHECK(atomic_load(&sc.syncs) > 0);
	CH_CHECK_EQ_INT(ch_plog_sync(pl), CH_OK);
	CH_CHECK_EQ_INT(ch_plog_synced_offset(pl), ch_plog_end_offset(pl));

	/* flush.messages / flush.ms */
	c.flush_messages = 10;
	c.flush_ms = 500;
	ch_plog_set_config(pl, &c);
	CH_CHECK(!ch_plog_flush_due(pl, 0));
	CH_CHECK_EQ_INT(append_one(pl, 1, 0, NULL, &kerr), CH_OK); /* 2 records */
	CH_CHECK(!ch_plog_flush_due(pl, 100));
	CH_CHECK(ch_plog_flush_due(pl, 600));
	CH_CHECK(!ch_plog_flush_due(pl, 700));
	for (int i = 0; i < 3; i++)
		CH_CHECK_EQ_INT(append_one(pl, 6, 0, NULL, &kerr), CH_OK); /* 7 each */
	CH_CHECK(ch_plog_flush_due(pl, 701));
	CH_CHECK_EQ_INT(ch_plog_sync(pl), CH_OK);
	CH_CHECK(!ch_plog_flush_due(pl, 5000));
	ch_plog_close(pl);
	ch_buf_free(&model);
	tu_rmdir();
}

/* ---- fault injection ----------------------------------------------------------- */

/* For every step k of a scenario (appends that roll, retention, sync,
 * DeleteRecords), fail the k-th mutating file operation with ENOSPC or EIO.
 * After the failure, the log must still read back exactly what was
 * acknowledged; after a reopen with a healthy file system too (plus at most
 * the one unacknowledged batch when the rollback itself failed).
 * t_fault_injection runs the whole schedule (every k until no fault fires);
 * to replay one step under a debugger, call fault_scenario(err, k, ...). */
static void
fault_scenario(int err, long k, bool sticky, bool *fired)
{
	ch_logfs_fault f;
	ch_logfs_fault_init(&f, ch_logfs_posix());
	ch_plog_config c = small_cfg();
	c.segment_bytes = 1500;
	c.retention_bytes = 6000;
	ch_plog *pl = open_log(&c, &f.ops, 0);
	if (!pl)
		return;
	ch_buf model;
	ch_buf_init(&model);
	int16_t kerr;
	for (int i = 0; i < 20; i++)
		CH_CHECK_EQ_INT(append_one(pl, i, 0, &model, &kerr), CH_OK);
	ch_plog_sync(pl);
	ch_logfs_fault_arm(&f, k, err, sticky);
	bool failed_op = false;
	for (int i = 20; i < 40; i++) {
		int rc = append_one(pl, i, 0, &model, &kerr);
		if (rc != CH_OK) {
			CH_CHECK_EQ_INT(kerr, CH_KERR_KAFKA_STORAGE_ERROR);
			failed_op = true;
		}
		if (i % 5 == 0) {
			int d;
			if (ch_plog_retention(pl, 0, &d, &kerr) != CH_OK)
				failed_op = true;
			if (ch_plog_sync(pl) != CH_OK)
				failed_op = true;
		}
		if (i == 30) {
			int64_t lw;
			if (ch_plog_delete_records(pl, ch_plog_start_offset(pl) + 1, &lw, &kerr) !=
			    CH_OK)
				failed_op = true;
		}
	}
	*fired = atomic_load(&f.failures) > 0;
	CH_CHECK(failed_op == *fired || !failed_op);
	/* Retention may have moved the start: compare the model's tail. */
	ch_buf got;
	ch_buf_init(&got);
	tu_read_all(pl, &got, 3000);
	CH_CHECK(got.len <= model.len &&
		 memcmp(got.data, model.data + model.len - got.len, got.len) == 0);
	bool wedged = ch_plog_failed(pl);
	int64_t end = ch_plog_end_offset(pl);
	int64_t start = ch_plog_start_offset(pl);
	ch_plog_close(pl);

	pl = open_log(&c, NULL, 0);
	if (pl) {
		ch_buf got2;
		ch_buf_init(&got2);
		tu_read_all(pl, &got2, 3000);
		int64_t end2 = ch_plog_end_offset(pl);
		if (!wedged) {
			CH_CHECK_EQ_INT(end2, end);
		} else {
			CH_CHECK(end2 >= end);
		}
		CH_CHECK(ch_plog_start_offset(pl) <= start);
		/* What was acknowledged is there, byte for byte. */
		CH_CHECK(got2.len >= got.len);
		size_t from = 0;
		while (from + got.len <= got2.len && got.len &&
		       memcmp(got2.data + from, got.data, got.len) != 0)
			from++;
		CH_CHECK(got.len == 0 || from + got.len <= got2.len);
		/* And the log accepts appends again. */
		CH_CHECK_EQ_INT(append_one(pl, 99, 0, NULL, &kerr), CH_OK);
		ch_buf_free(&got2);
		ch_plog_close(pl);
	}
	ch_buf_free(&got);
	ch_buf_free(&model);
}

static void
t_fault_injection(void)
{
	ch_log_threshold = CH_LOG_ERROR; /* expected errors */
	/* ENOSPC once, EIO once, then EIO for good from step k on (the disk
	 * died: rollbacks fail too and the log must go offline). */
	static const int errs[] = {ENOSPC, EIO, EIO};
	for (size_t e = 0; e < 3; e++) {
		long k;
		for (k = 1; k < 2000; k++) {
			tu_mkdtemp();
			bool fired = false;
			fault_scenario(errs[e], k, e == 2, &fired);
			tu_rmdir();
			if (!fired)
				break;
		}
		CH_CHECK(k > 20); /* the scenario has many steps */
	}
	ch_log_threshold = CH_LOG_INFO;
}

/* A failing fdatasync takes the log offline until it is reopened. */
static void
t_sync_failure(void)
{
	tu_mkdtemp();
	ch_log_threshold = CH_LOG_ERROR;
	ch_logfs_fault f;
	ch_logfs_fault_init(&f, ch_logfs_posix());
	ch_plog_config c = small_cfg();
	ch_plog *pl = open_log(&c, &f.ops, 0);
	int16_t kerr;
	CH_CHECK_EQ_INT(append_one(pl, 1, 0, NULL, &kerr), CH_OK);
	int64_t synced = ch_plog_synced_offset(pl);
	ch_logfs_fault_arm(&f, 1, EIO, false);
	CH_CHECK_EQ_INT(ch_plog_sync(pl), CH_ERR);
	CH_CHECK_EQ_INT(ch_plog_synced_offset(pl), synced);
	CH_CHECK(ch_plog_failed(pl));
	CH_CHECK_EQ_INT(append_one(pl, 2, 0, NULL, &kerr), CH_ERR);
	CH_CHECK_EQ_INT(kerr, CH_KERR_KAFKA_STORAGE_ERROR);
	int64_t end = ch_plog_end_offset(pl);
	ch_plog_close(pl);
	pl = open_log(&c, NULL, 0);
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), end);
	CH_CHECK(!ch_plog_failed(pl));
	ch_plog_close(pl);
	ch_log_threshold = CH_LOG_INFO;
	tu_rmdir();
}

typedef struct read_run {
	ch_plog *pl;
	ch_logfs_fault *f;
	int n, refused;
} read_run;

/* n reads while every pread fails, then one that works. */
static void
failing_reads(void *arg)
{
	read_run *r = arg;
	r->f->fail_reads = true;
	ch_logfs_fault_arm(r->f, 1, EIO, true);
	for (int i = 0; i < r->n; i++) {
		ch_plog_slice sl;
		int16_t kerr;
		if (ch_plog_read(r->pl, 3, 1 << 20, &sl, &kerr) != CH_OK &&
		    kerr == CH_KERR_KAFKA_STORAGE_ERROR)
			r->refused++;
		ch_plog_slice_release(&sl);
	}
	ch_logfs_fault_arm(r->f, 0, 0, false);
	ch_plog_slice sl;
	int16_t kerr;
	CH_CHECK_EQ_INT(ch_plog_read(r->pl, 3, 1 << 20, &sl, &kerr), CH_OK);
	CH_CHECK(sl.len > 0);
	ch_plog_slice_release(&sl);
}

/* A read error repeated by every fetch is one line, then one when reads
 * work again (the rest are summarised every 10 s: common/ch_ratelog). */
static void
t_read_errors_logged_once(void)
{
	tu_mkdtemp();
	ch_logfs_fault f;
	ch_logfs_fault_init(&f, ch_logfs_posix());
	ch_plog_config c = small_cfg();
	c.segment_bytes = 1 << 20; /* one segment: its index is read from disk */
	ch_plog *pl = open_log(&c, &f.ops, 0);
	int16_t kerr;
	for (int i = 0; i < 50; i++)
		CH_CHECK_EQ_INT(append_one(pl, i, 0, NULL, &kerr), CH_OK);
	ch_plog_close(pl);
	pl = open_log(&c, &f.ops, 0); /* nothing cached from the appends */
	ch_log_level saved = ch_log_threshold;
	ch_log_threshold = CH_LOG_INFO;
	read_run r = {pl, &f, 200, 0};
	char *out = ch_test_capture_stderr(failing_reads, &r);
	ch_log_threshold = saved;
	CH_CHECK_EQ_INT(r.refused, 200);
	CH_CHECK_LOGGED_STREAK(out, ": read at 3: Input/output error",
			       "t-0: working again after 200 failures in ");
	free(out);
	ch_plog_close(pl);
	tu_rmdir();
}

/* The uncompressed producer batch in b rebuilt with its records section,
 * cut by `cut` bytes, compressed with gzip (header, length and CRC fixed). */
static void
regzip(ch_buf *b, size_t cut)
{
	ch_buf z;
	ch_buf_init(&z);
	CH_CHECK_EQ_INT(ch_codec_compress(CH_COMPRESSION_GZIP, b->data + CH_BATCH_HDR_SIZE,
					  b->len - CH_BATCH_HDR_SIZE - cut, &z),
			CH_OK);
	b->len = CH_BATCH_HDR_SIZE;
	ch_buf_append(b, z.data, z.len);
	b->data[22] |= CH_COMPRESSION_GZIP;
	ch_be_put32(b->data + 8, (uint32_t)(b->len - CH_BATCH_LOG_OVERHEAD));
	ch_be_put32(b->data + 17, ch_batch_compute_crc(b->data, b->len));
	ch_buf_free(&z);
}

static int n_rec_errs;
static ch_plog_record_why last_why;

static void
count_rec_err(void *ud, const ch_plog_record_error *e)
{
	(void)ud;
	n_rec_errs++;
	last_why = e->why;
}

/* check_records on the batch in b with cfg at now: the code, and the
 * callback's count in *n. */
static int16_t
check(const ch_plog_config *cfg, const ch_buf *b, int64_t now, int64_t *max_ts, int *n)
{
	ch_batch_hdr h;
	CH_CHECK_EQ_INT(ch_batch_check(b->data, b->len, 0, true, &h), CH_BATCH_OK);
	n_rec_errs = 0;
	int16_t k = ch_plog_check_records(cfg, b->data, &h, now, max_ts, count_rec_err, NULL);
	*n = n_rec_errs;
	return k;
}

static void
t_check_records(void)
{
	ch_plog_config c;
	ch_plog_config_default(&c);
	int64_t ts0 = 1700000000000, max_ts;
	int n;
	ch_buf b;
	ch_buf_init(&b);

	/* Compressed batches are inflated and read record by record. */
	tu_batch(&b, 5, ts0, 0, 0, false, 0);
	regzip(&b, 0);
	CH_CHECK_EQ_INT(check(&c, &b, ts0, &max_ts, &n), CH_KERR_NONE);
	CH_CHECK_EQ_INT(max_ts, ts0 + 4);
	b.len = 0;
	tu_batch(&b, 5, ts0, 0, 0, false, 0);
	regzip(&b, 3); /* the last record cut short */
	CH_CHECK_EQ_INT(check(&c, &b, ts0, &max_ts, &n), CH_KERR_INVALID_RECORD);
	CH_CHECK_EQ_INT(n, 0);
	b.len = 0;
	tu_batch(&b, 5, ts0, 0, 0, false, 0);
	b.data[22] |= CH_COMPRESSION_GZIP; /* says gzip, holds plain records */
	ch_be_put32(b.data + 17, ch_batch_compute_crc(b.data, b.len));
	CH_CHECK_EQ_INT(check(&c, &b, ts0, &max_ts, &n), CH_KERR_CORRUPT_MESSAGE);

	/* The timestamp window (KIP-937): Kafka 4's default, one hour ahead. */
	b.len = 0;
	tu_batch(&b, 5, ts0, 0, 0, false, 0);
	CH_CHECK_EQ_INT(check(&c, &b, ts0 - 3599999, &max_ts, &n), CH_KERR_INVALID_TIMESTAMP);
	CH_CHECK_EQ_INT(n, 3); /* ts0+2 .. ts0+4 are past now + 1 h */
	CH_CHECK_EQ_INT(last_why, CH_PLOG_REC_TS_RANGE);
	CH_CHECK_EQ_INT(check(&c, &b, ts0 + 4 - 3600000, &max_ts, &n), CH_KERR_NONE);
	c.ts_before_max_ms = 10;
	CH_CHECK_EQ_INT(check(&c, &b, ts0 + 13, &max_ts, &n), CH_KERR_INVALID_TIMESTAMP);
	CH_CHECK_EQ_INT(n, 3);
	c.log_append_time = true; /* no window for LogAppendTime topics */
	CH_CHECK_EQ_INT(check(&c, &b, ts0 + 13, &max_ts, &n), CH_KERR_NONE);
	regzip(&b, 0);
	c.log_append_time = false;
	CH_CHECK_EQ_INT(check(&c, &b, ts0 + 13, &max_ts, &n), CH_KERR_INVALID_TIMESTAMP);
	CH_CHECK_EQ_INT(n, 3);

	/* Compacted topics: keys, compressed too; a timestamp error wins. */
	ch_plog_config_default(&c);
	c.cleanup_compact = true;
	b.len = 0;
	tu_batch(&b, 2, ts0, 0, 0, true, 0);
	CH_CHECK_EQ_INT(check(&c, &b, ts0, &max_ts, &n), CH_KERR_NONE);
	b.len = 0;
	ch_batch_builder bb;
	ch_batch_builder_begin(&bb, &b, 0, 0, ts0, -1, -1, -1);
	ch_bytes v = {(const uint8_t *)"v", 1};
	ch_batch_builder_add(&bb, 0, ts0, CH_BYTES_NULL, v, 0, NULL, 0);
	ch_batch_builder_add(&bb, 1, ts0 + 7200000, v, v, 0, NULL, 0);
	CH_CHECK_EQ_INT(ch_batch_builder_end(&bb, -1), CH_OK);
	regzip(&b, 0);
	CH_CHECK_EQ_INT(check(&c, &b, ts0 + 7200000, &max_ts, &n), CH_KERR_INVALID_RECORD);
	CH_CHECK_EQ_INT(n, 1);
	CH_CHECK_EQ_INT(last_why, CH_PLOG_REC_NO_KEY);
	CH_CHECK_EQ_INT(check(&c, &b, ts0, &max_ts, &n), CH_KERR_INVALID_TIMESTAMP);
	CH_CHECK_EQ_INT(n, 2);

	/* The append writes the records' largest timestamp as maxTimestamp
	 * and refuses what a producer may not send. */
	tu_mkdtemp();
	ch_plog_config_default(&c);
	ch_plog *pl = open_log(&c, NULL, ts0);
	ch_plog_append_info info;
	int16_t kerr;
	b.len = 0;
	tu_batch(&b, 3, ts0, 0, 0, false, 0);
	ch_be_put64(b.data + 35, (uint64_t)(ts0 + 99));
	ch_be_put32(b.data + 17, ch_batch_compute_crc(b.data, b.len));
	CH_CHECK_EQ_INT(ch_plog_append(pl, b.data, b.len, ts0, &info, &kerr), CH_OK);
	ch_batch_hdr h;
	CH_CHECK_EQ_INT(ch_batch_check(b.data, b.len, 0, true, &h), CH_BATCH_OK);
	CH_CHECK_EQ_INT(h.max_timestamp, ts0 + 2);
	b.len = 0;
	tu_batch(&b, 3, ts0, 0, 0, false, 0);
	ch_be_put64(b.data, 5); /* base offset 5 */
	CH_CHECK_EQ_INT(ch_plog_append(pl, b.data, b.len, ts0, &info, &kerr), CH_ERR);
	CH_CHECK_EQ_INT(kerr, CH_KERR_INVALID_RECORD);
	b.len = 0;
	tu_batch(&b, 3, ts0 + 7200000, 0, 0, false, 0);
	CH_CHECK_EQ_INT(ch_plog_append(pl, b.data, b.len, ts0, &info, &kerr), CH_ERR);
	CH_CHECK_EQ_INT(kerr, CH_KERR_INVALID_TIMESTAMP);
	CH_CHECK_EQ_INT(info.now_ms, ts0);
	CH_CHECK_EQ_INT(ch_plog_end_offset(pl), 3);
	ch_plog_close(pl);
	tu_rmdir();
	ch_buf_free(&b);
}

CH_TEST_MAIN(CH_TEST(t_append_read_roll), CH_TEST(t_roll_by_time_and_lat), CH_TEST(t_timestamps),
	     CH_TEST(t_recovery), CH_TEST(t_retention), CH_TEST(t_delete_records),
	     CH_TEST(t_sync_concurrent), CH_TEST(t_fault_injection), CH_TEST(t_sync_failure),
	     CH_TEST(t_read_errors_logged_once), CH_TEST(t_check_records),
	     CH_TEST(t_unreadable_checkpoint))
