/*
 * ch_frame.c: the incremental framer. Contracts in ch_frame.h.
 */
#include "net/ch_frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"

/* The first allocation for a frame that has not fully arrived: enough for
 * almost every request, small enough to ignore a lying size prefix. */
#define CH_FRAME_MIN_ALLOC 4096

void
ch_framer_init(ch_framer *f, int32_t max_size)
{
	memset(f, 0, sizeof(*f));
	f->max = max_size;
}

void
ch_framer_free(ch_framer *f)
{
	free(f->buf);
	f->buf = NULL;
	f->got = f->cap = 0;
	f->hdr_got = 0;
}

/* Make room for `want` more message bytes, doubling, capped at f->size. */
static void
grow(ch_framer *f, size_t want)
{
	size_t need = f->got + want;
	if (need <= f->cap)
		return;
	size_t cap = f->cap ? f->cap * 2 : CH_FRAME_MIN_ALLOC;
	if (cap < need)
		cap = need;
	if (cap > f->size)
		cap = f->size;
	f->buf = ch_xrealloc(f->buf, cap);
	f->cap = cap;
}

/* The frame size prefix just read: a size <= 0 or above
 * socket.request.max.bytes is an error (Kafka's InvalidReceiveException
 * wording in f->err), else the body to read next. */
static int
check_size(ch_framer *f)
{
	int32_t size = (int32_t)(((uint32_t)f->hdr[0] << 24) | ((uint32_t)f->hdr[1] << 16) |
				 ((uint32_t)f->hdr[2] << 8) | (uint32_t)f->hdr[3]);
	if (size < 0 || size == 0) {
		snprintf(f->err, sizeof(f->err), "invalid receive (size = %d)", size);
		return CH_ERR;
	}
	if (size > f->max) {
		snprintf(f->err, sizeof(f->err), "invalid receive (size = %d larger than %d)", size,
			 f->max);
		return CH_ERR;
	}
	f->size = (size_t)size;
	f->got = 0;
	return CH_OK;
}

int
ch_framer_feed(ch_framer *f, const uint8_t *p, size_t n, size_t *used)
{
	size_t off = 0;
	if (f->hdr_got < 4) {
		while (f->hdr_got < 4 && off < n)
			f->hdr[f->hdr_got++] = p[off++];
		if (f->hdr_got < 4) {
			*used = off;
			return CH_AGAIN;
		}
		if (check_size(f) != CH_OK) {
			*used = off;
			return CH_ERR;
		}
		if (f->stop_at_size) {
			*used = off;
			return CH_FRAME_SIZED;
		}
	}
	size_t take = CH_MIN(f->size - f->got, n - off);
	if (take > 0) {
		grow(f, take);
		memcpy(f->buf + f->got, p + off, take);
		f->got += take;
		off += take;
	}
	*used = off;
	return f->got == f->size ? CH_OK : CH_AGAIN;
}

uint8_t *
ch_framer_take(ch_framer *f, size_t *len)
{
	uint8_t *b = f->buf;
	*len = f->got;
	f->buf = NULL;
	f->got = f->cap = f->size = 0;
	f->hdr_got = 0;
	return b;
}

uint8_t *
ch_framer_whole(ch_framer *f, const uint8_t *p, size_t n, size_t *len)
{
	if (f->hdr_got != 0 || n < 4)
		return NULL;
	uint32_t size = ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) |
			(uint32_t)p[3];
	if (f->max <= 0 || size == 0 || size > (uint32_t)f->max || size > n - 4)
		return NULL; /* (a negative size is above any max too) */
	uint8_t *b = ch_xmalloc(size);
	memcpy(b, p + 4, size);
	*len = size;
	return b;
}

uint8_t *
ch_framer_direct(ch_framer *f, size_t min_remaining, size_t *room)
{
	if (f->hdr_got < 4 || f->size == f->got || f->size - f->got < min_remaining)
		return NULL;
	/* Double what has arrived so far, but at least min_remaining, so a
	 * lying prefix costs at most twice the bytes actually sent. */
	size_t want = CH_MAX(f->got, min_remaining);
	grow(f, CH_MIN(want, f->size - f->got));
	*room = f->cap - f->got;
	return f->buf + f->got;
}

int
ch_framer_advance(ch_framer *f, size_t n)
{
	f->got += n;
	return f->got == f->size ? CH_OK : CH_AGAIN;
}

size_t
ch_framer_pending(const ch_framer *f)
{
	return f->hdr_got + f->got;
}
