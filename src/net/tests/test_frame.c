/*
 * Unit tests for the incremental framer (net/ch_frame.h): pure, no sockets.
 */
#include <stdlib.h>
#include <string.h>

#include "common/ch_buf.h"
#include "common/ch_common.h"
#include "common/ch_test.h"
#include "net/ch_frame.h"

static void
put_frame(ch_buf *b, const uint8_t *p, uint32_t n)
{
	uint8_t h[4] = {(uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};
	ch_buf_append(b, h, 4);
	ch_buf_append(b, p, n);
}

/* Three frames of 1, 300 and 5000 bytes, as one stream. */
static void
make_stream(ch_buf *b, size_t *sizes)
{
	static const size_t sz[3] = {1, 300, 5000};
	for (int i = 0; i < 3; i++) {
		uint8_t *p = malloc(sz[i]);
		for (size_t j = 0; j < sz[i]; j++)
			p[j] = (uint8_t)(i * 31 + j);
		put_frame(b, p, (uint32_t)sz[i]);
		free(p);
		sizes[i] = sz[i];
	}
}

/* Feed the stream in pieces of `step` bytes; check every frame comes out. */
static void
feed_in_steps(size_t step)
{
	ch_buf s;
	ch_buf_init(&s);
	size_t sizes[3];
	make_stream(&s, sizes);
	ch_framer f;
	ch_framer_init(&f, 1 << 20);
	int nframes = 0;
	size_t pos = 0;
	while (pos < s.len) {
		size_t n = CH_MIN(step, s.len - pos);
		size_t off = 0;
		while (off < n) {
			size_t used;
			int rc = ch_framer_feed(&f, s.data + pos + off, n - off, &used);
			CH_CHECK(rc != CH_ERR);
			if (rc == CH_ERR)
				goto out;
			off += used;
			if (rc == CH_OK) {
				size_t len;
				uint8_t *fr = ch_framer_take(&f, &len);
				CH_CHECK(nframes < 3);
				if (nframes < 3) {
					CH_CHECK_EQ_INT(len, sizes[nframes]);
					for (size_t j = 0; j < len; j++)
						if (fr[j] != (uint8_t)(nframes * 31 + j)) {
							CH_CHECK(!"frame content");
							break;
						}
				}
				free(fr);
				nframes++;
			}
		}
		pos += n;
	}
	CH_CHECK_EQ_INT(nframes, 3);
	CH_CHECK_EQ_INT(ch_framer_pending(&f), 0);
out:
	ch_framer_free(&f);
	ch_buf_free(&s);
}

static void
t_byte_by_byte(void)
{
	feed_in_steps(1);
}

static void
t_all_split_points(void)
{
	for (size_t step = 2; step < 700; step += 7)
		feed_in_steps(step);
	feed_in_steps(1 << 20);
}

static int
feed_prefix(int32_t size, int32_t max, char *err, size_t errlen)
{
	uint32_t u = (uint32_t)size;
	uint8_t h[4] = {(uint8_t)(u >> 24), (uint8_t)(u >> 16), (uint8_t)(u >> 8), (uint8_t)u};
	ch_framer f;
	ch_framer_init(&f, max);
	size_t used;
	int rc = CH_AGAIN;
	/* split the prefix too */
	for (int i = 0; i < 4 && rc == CH_AGAIN; i++)
		rc = ch_framer_feed(&f, h + i, 1, &used);
	snprintf(err, errlen, "%s", f.err);
	ch_framer_free(&f);
	return rc;
}

static void
t_bad_sizes(void)
{
	char err[128];
	CH_CHECK_EQ_INT(feed_prefix(-1, 1000, err, sizeof(err)), CH_ERR);
	CH_CHECK_EQ_STR(err, "invalid receive (size = -1)");
	CH_CHECK_EQ_INT(feed_prefix(INT32_MIN, 1000, err, sizeof(err)), CH_ERR);
	CH_CHECK_EQ_INT(feed_prefix(0, 1000, err, sizeof(err)), CH_ERR);
	CH_CHECK_EQ_STR(err, "invalid receive (size = 0)");
	CH_CHECK_EQ_INT(feed_prefix(1001, 1000, err, sizeof(err)), CH_ERR);
	CH_CHECK_EQ_STR(err, "invalid receive (size = 1001 larger than 1000)");
	CH_CHECK_EQ_INT(feed_prefix(1000, 1000, err, sizeof(err)), CH_AGAIN);
	CH_CHECK_EQ_INT(feed_prefix(INT32_MAX, INT32_MAX, err, sizeof(err)), CH_AGAIN);
}

/* A huge claimed size costs only what actually arrived. */
static void
t_lying_prefix(void)
{
	ch_framer f;
	ch_framer_init(&f, 104857600);
	uint8_t msg[14] = {0x06, 0x40, 0x00, 0x00, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	size_t used;
	CH_CHECK_EQ_INT(ch_framer_feed(&f, msg, sizeof(msg), &used), CH_AGAIN);
	CH_CHECK_EQ_INT(used, sizeof(msg));
	CH_CHECK(f.size == 104857600);
	CH_CHECK(f.cap <= 4096);
	/* direct reads double what arrived, they don't jump to the claim */
	size_t room;
	uint8_t *p = ch_framer_direct(&f, 65536, &room);
	CH_CHECK(p != NULL);
	CH_CHECK(f.cap <= 65536 + 10);
	ch_framer_free(&f);
}

/* Receive a 1 MiB frame through the zero-copy path. */
static void
t_direct(void)
{
	const size_t size = 1 << 20;
	ch_framer f;
	ch_framer_init(&f, 1 << 24);
	uint8_t h[4] = {0x00, 0x10, 0x00, 0x00};
	size_t used;
	CH_CHECK_EQ_INT(ch_framer_feed(&f, h, 4, &used), CH_AGAIN);
	CH_CHECK(ch_framer_direct(&f, size + 1, &used) == NULL); /* below threshold */
	size_t got = 0;
	int rc = CH_AGAIN, steps = 0;
	while (rc == CH_AGAIN && steps++ < 1000) {
		size_t room;
		uint8_t *p = ch_framer_direct(&f, 1, &room);
		CH_CHECK(p != NULL);
		if (!p)
			break;
		CH_CHECK(room > 0 && room <= size - got);
		size_t n = CH_MIN(room, (size_t)70000); /* a short read */
		for (size_t i = 0; i < n; i++)
			p[i] = (uint8_t)((got + i) * 7);
		got += n;
		rc = ch_framer_advance(&f, n);
	}
	CH_CHECK_EQ_INT(rc, CH_OK);
	CH_CHECK(f.cap == size);
	size_t len;
	uint8_t *fr = ch_framer_take(&f, &len);
	CH_CHECK_EQ_INT(len, size);
	int bad = 0;
	for (size_t i = 0; i < len; i++)
		bad += fr[i] != (uint8_t)(i * 7);
	CH_CHECK_EQ_INT(bad, 0);
	free(fr);
	CH_CHECK(ch_framer_direct(&f, 1, &len) == NULL); /* no prefix yet */
	ch_framer_free(&f);
}

/* ch_framer_whole: a whole frame at once, else nothing consumed (a partial
 * frame, a bad prefix, a frame already begun) and feed takes over. */
static void
t_whole(void)
{
	ch_buf s;
	ch_buf_init(&s);
	size_t sizes[3];
	make_stream(&s, sizes); /* 1, 300, 5000 bytes */
	ch_framer f;
	ch_framer_init(&f, 1 << 20);
	size_t len = 0, off = 0;
	for (int i = 0; i < 3; i++) {
		uint8_t *fr = ch_framer_whole(&f, s.data + off, s.len - off, &len);
		CH_CHECK(fr != NULL);
		if (!fr)
			goto out;
		CH_CHECK_EQ_INT(len, sizes[i]);
		CH_CHECK(fr[len - 1] == (uint8_t)(i * 31 + len - 1));
		free(fr);
		off += 4 + len;
	}
	CH_CHECK_EQ_INT(off, s.len);
	/* not all of it: 5000 bytes claimed, 4999 there */
	size_t last = s.len - 5004;
	CH_CHECK(ch_framer_whole(&f, s.data + last, 5003, &len) == NULL);
	CH_CHECK(ch_framer_whole(&f, s.data, 3, &len) == NULL); /* prefix split */
	/* a bad prefix is feed's to report */
	static const uint8_t zero[5] = {0, 0, 0, 0, 7}, neg[5] = {0xff, 0xff, 0xff, 0xff, 7};
	CH_CHECK(ch_framer_whole(&f, zero, 5, &len) == NULL);
	CH_CHECK(ch_framer_whole(&f, neg, 5, &len) == NULL);
	ch_framer small;
	ch_framer_init(&small, 100);
	CH_CHECK(ch_framer_whole(&small, s.data + 5, 304, &len) == NULL); /* 300 > 100 */
	ch_framer_free(&small);
	/* a frame under way: the next bytes are its, not a prefix */
	size_t used;
	CH_CHECK_EQ_INT(ch_framer_feed(&f, s.data + 5, 10, &used), CH_AGAIN);
	CH_CHECK(ch_framer_whole(&f, s.data, s.len, &len) == NULL);
out:
	ch_framer_free(&f);
	ch_buf_free(&s);
}

CH_TEST_MAIN(CH_TEST(t_byte_by_byte), CH_TEST(t_all_split_points), CH_TEST(t_bad_sizes),
	     CH_TEST(t_lying_prefix), CH_TEST(t_direct), CH_TEST(t_whole))
