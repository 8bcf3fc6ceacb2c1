/*
 * Unit tests for building responses (net/ch_resp.h) and flattening them:
 * memory and file chunks come out in order, file ranges read from their
 * offset, and a short file, a poisoned buffer or a release that is skipped
 * are noticed. No sockets.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ch_buf.h"
#include "common/ch_common.h"
#include "common/ch_test.h"
#include "net/ch_resp.h"

static int released;

static void
on_release(void *ud)
{
	(void)ud;
	released++;
}

/* A temporary file holding "0123456789abcdef"; unlinked at once. */
static int
tmp_file(void)
{
	const char *base = getenv("TMPDIR");
	char path[512];
	snprintf(path, sizeof(path), "%s/ch_resp_test_XXXXXX", base && *base ? base : "/tmp");
	int fd = mkstemp(path);
	if (fd < 0)
		abort();
	unlink(path);
	if (write(fd, "0123456789abcdef", 16) != 16)
		abort();
	return fd;
}

static void
t_flatten_mixed(void)
{
	int fd = tmp_file();
	released = 0;
	ch_resp *r = ch_resp_new();
	ch_buf b;
	ch_buf_init(&b);
	ch_buf_append(&b, "head:", 5);
	ch_resp_add_buf(r, &b);
	CH_CHECK_EQ_INT(b.len, 0);
	ch_resp_add_file(r, fd, 3, 4, on_release, NULL); /* "3456" */
	ch_resp_append(r, "|", 1);
	ch_resp_add_file(r, fd, 10, 0, on_release, NULL); /* empty: released at once */
	CH_CHECK_EQ_INT(released, 1);
	ch_resp_add_file(r, fd, 12, 4, on_release, NULL); /* "cdef" */
	ch_resp_append(r, ":tail", 5);
	CH_CHECK_EQ_INT(ch_resp_len(r), 5 + 4 + 1 + 4 + 5);

	ch_buf out;
	ch_buf_init(&out);
	ch_buf_append(&out, ">", 1); /* flatten appends */
	CH_CHECK_EQ_INT(ch_resp_flatten(r, &out), CH_OK);
	CH_CHECK_EQ_INT(out.len, 1 + ch_resp_len(r));
	CH_CHECK(out.len == 20 && memcmp(out.data, ">head:3456|cdef:tail", 20) == 0);
	/* Flattening leaves the response whole: it flattens again, the same. */
	ch_buf again;
	ch_buf_init(&again);
	CH_CHECK_EQ_INT(ch_resp_flatten(r, &again), CH_OK);
	CH_CHECK(again.len == 19 && memcmp(again.data, out.data + 1, 19) == 0);
	CH_CHECK_EQ_INT(released, 1);
	ch_resp_free(r);
	CH_CHECK_EQ_INT(released, 3); /* each file chunk released exactly once */
	ch_buf_free(&out);
	ch_buf_free(&again);
	close(fd);
}

static void
t_flatten_short_file(void)
{
	int fd = tmp_file();
	released = 0;
	ch_resp *r = ch_resp_new();
	ch_resp_append(r, "x", 1);
	ch_resp_add_file(r, fd, 10, 100, on_release, NULL); /* 6 bytes there, 100 promised */
	ch_buf out;
	ch_buf_init(&out);
	errno = 0;
	CH_CHECK_EQ_INT(ch_resp_flatten(r, &out), CH_ERR);
	CH_CHECK_EQ_INT(errno, EIO);
	ch_resp_free(r);
	CH_CHECK_EQ_INT(released, 1);
	ch_buf_free(&out);

	/* A closed descriptor is an error too, not a silent short response. */
	close(fd);
	r = ch_resp_new();
	ch_resp_add_file(r, fd, 0, 4, NULL, NULL);
	ch_buf_init(&out);
	errno = 0;
	CH_CHECK_EQ_INT(ch_resp_flatten(r, &out), CH_ERR);
	CH_CHECK_EQ_INT(errno, EBADF);
	ch_resp_free(r);
	ch_buf_free(&out);
}

static void
t_flatten_poisoned(void)
{
	ch_resp *r = ch_resp_new();
	ch_buf b;
	ch_buf_init(&b);
	ch_buf_append(&b, "abc", 3);
	b.oom = true; /* as if a growth had failed */
	ch_resp_add_buf(r, &b);
	CH_CHECK(!ch_resp_ok(r));
	ch_buf out;
	ch_buf_init(&out);
	CH_CHECK_EQ_INT(ch_resp_flatten(r, &out), CH_ERR);
	ch_resp_free(r);
	ch_buf_free(&out);
	ch_buf_free(&b);
}

static int
fill_digits(void *ud, ch_buf *out, size_t max)
{
	size_t *made = ud;
	size_t n = CH_MIN(max, (size_t)3); /* at most 3 at a time */
	for (size_t i = 0; i < n; i++)
		ch_buf_append(out, &(char){(char)('0' + (*made + i) % 10)}, 1);
	*made += n;
	return CH_OK;
}

static int
fill_fail(void *ud, ch_buf *out, size_t max)
{
	(void)ud;
	(void)out;
	(void)max;
	return CH_ERR;
}

static void
t_flatten_made(void)
{
	/* A made chunk is made whole by flatten and stays those bytes. */
	released = 0;
	size_t made = 0;
	ch_resp *r = ch_resp_new();
	ch_resp_append(r, "<", 1);
	ch_resp_add_made(r, 12, fill_digits, on_release, &made);
	ch_resp_append(r, ">", 1);
	ch_resp_add_made(r, 0, fill_digits, on_release, &made); /* empty: released now */
	CH_CHECK_EQ_INT(released, 1);
	CH_CHECK_EQ_INT(ch_resp_len(r), 14);
	ch_buf out, again;
	ch_buf_init(&out);
	ch_buf_init(&again);
	CH_CHECK_EQ_INT(ch_resp_flatten(r, &out), CH_OK);
	CH_CHECK(out.len == 14 && memcmp(out.data, "<012345678901>", 14) == 0);
	CH_CHECK_EQ_INT(released, 2);
	CH_CHECK_EQ_INT(ch_resp_flatten(r, &again), CH_OK);
	CH_CHECK(again.len == 14 && memcmp(again.data, out.data, 14) == 0);
	CH_CHECK_EQ_INT(made, 12);
	ch_resp_free(r);
	CH_CHECK_EQ_INT(released, 2);
	/* A maker that fails: flatten fails; release still comes once. */
	r = ch_resp_new();
	ch_resp_add_made(r, 5, fill_fail, on_release, NULL);
	ch_buf_reset(&out);
	CH_CHECK_EQ_INT(ch_resp_flatten(r, &out), CH_ERR);
	ch_resp_free(r);
	CH_CHECK_EQ_INT(released, 3);
	ch_buf_free(&out);
	ch_buf_free(&again);
}

static void
t_flatten_empty(void)
{
	ch_resp *r = ch_resp_new();
	ch_buf out;
	ch_buf_init(&out);
	CH_CHECK_EQ_INT(ch_resp_flatten(r, &out), CH_OK);
	CH_CHECK_EQ_INT(out.len, 0);
	CH_CHECK_EQ_INT(ch_resp_len(r), 0);
	ch_resp_free(r);
	ch_buf_free(&out);
}

/* ch_resp_from_small_buf: a small answer is copied (the buffer keeps its
 * memory, emptied), appending after it starts a chunk of its own; a large
 * one is taken, as ch_resp_from_buf does. */
static void
t_from_small_buf(void)
{
	ch_buf b, out;
	ch_buf_init(&b);
	ch_buf_init(&out);
	ch_buf_append(&b, "hello", 5);
	ch_resp *r = ch_resp_from_small_buf(&b);
	CH_CHECK_EQ_INT(b.len, 0);
	CH_CHECK(b.data != NULL && b.cap >= 5);
	ch_resp_append(r, ", world", 7);
	CH_CHECK_EQ_INT(ch_resp_len(r), 12);
	CH_CHECK_EQ_INT(ch_resp_flatten(r, &out), CH_OK);
	CH_CHECK(out.len == 12 && memcmp(out.data, "hello, world", 12) == 0);
	ch_resp_free(r);
	/* the same buffer again, now past the inline size: taken */
	ch_buf_reset(&out);
	for (int i = 0; i < CH_RESP_INLINE + 1; i++)
		ch_buf_append(&b, "x", 1);
	r = ch_resp_from_small_buf(&b);
	CH_CHECK(b.data == NULL && b.len == 0);
	CH_CHECK_EQ_INT(ch_resp_flatten(r, &out), CH_OK);
	CH_CHECK_EQ_INT(out.len, CH_RESP_INLINE + 1);
	ch_resp_free(r);
	ch_buf_free(&b);
	ch_buf_free(&out);
}

CH_TEST_MAIN(CH_TEST(t_flatten_mixed), CH_TEST(t_flatten_short_file), CH_TEST(t_flatten_poisoned),
	     CH_TEST(t_flatten_empty), CH_TEST(t_flatten_made), CH_TEST(t_from_small_buf))
