/*
 * ch_resp.c: building responses. Contracts in ch_resp.h; layout in
 * ch_resp_int.h.
 */
#include "net/ch_resp_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ch_common.h"

ch_resp *
ch_resp_new(void)
{
	/* malloc and memset, not calloc: glibc's calloc never takes from the
	 * per-thread cache, and a response is made per request. */
	ch_resp *r = ch_xmalloc(sizeof(*r));
	memset(r, 0, sizeof(*r));
	return r;
}

ch_resp *
ch_resp_from_buf(ch_buf *b)
{
	ch_resp *r = ch_resp_new();
	ch_resp_add_buf(r, b);
	return r;
}

/* What a chunk holds: its release call, its memory. */
static void
chunk_release(ch_chunk *ck)
{
	if ((ck->is_file || ck->fill) && ck->release)
		ck->release(ck->ud);
	if (!ck->inline_mem)
		ch_buf_free(&ck->mem);
}

void
ch_chunk_free(ch_chunk *ck)
{
	chunk_release(ck);
	free(ck);
}

/* A zeroed chunk for r: its `first` while it has none (chunks only leave
 * a response with it), else a new one. */
static ch_chunk *
chunk_new(ch_resp *r)
{
	return r->head ? ch_xcalloc(1, sizeof(ch_chunk)) : &r->first;
}

int
ch_chunk_made_at(ch_chunk *ck, size_t off, const uint8_t **p, size_t *n)
{
	if (off == ck->win_off + ck->mem.len) {
		ch_buf_reset(&ck->mem);
		ck->win_off = off;
		size_t want = CH_MIN(ck->len - off, (size_t)CH_MADE_WINDOW);
		if (want == 0 || ck->fill(ck->ud, &ck->mem, want) != CH_OK ||
		    !ch_buf_ok(&ck->mem) || ck->mem.len == 0 || ck->mem.len > want)
			return CH_ERR;
	}
	*p = ck->mem.data + (off - ck->win_off);
	*n = ck->win_off + ck->mem.len - off;
	return CH_OK;
}

void
ch_resp_free(ch_resp *r)
{
	if (!r)
		return;
	ch_chunk *ck = r->head;
	while (ck) {
		ch_chunk *next = ck->next;
		if (ck == &r->first)
			chunk_release(ck);
		else
			ch_chunk_free(ck);
		ck = next;
	}
	free(r);
}

/* Appends a chunk to the response and counts its bytes. */
static void
link_chunk(ch_resp *r, ch_chunk *ck)
{
	CH_FIFO_APPEND(r->head, r->tail, ck);
	r->total += ck->len;
}

void
ch_resp_add_buf(ch_resp *r, ch_buf *b)
{
	if (!ch_buf_ok(b))
		r->bad = true;
	if (b->len == 0) {
		ch_buf_free(b);
		return;
	}
	ch_chunk *ck = chunk_new(r);
	ck->mem = *b;
	ck->len = b->len;
	ch_buf_init(b);
	link_chunk(r, ck);
}

ch_resp *
ch_resp_from_small_buf(ch_buf *b)
{
	if (!ch_buf_ok(b) || b->len == 0 || b->len > CH_RESP_INLINE)
		return ch_resp_from_buf(b);
	ch_resp *r = ch_xmalloc(sizeof(*r) + b->len);
	memset(r, 0, sizeof(*r));
	ch_chunk *ck = &r->first;
	ck->inline_mem = true;
	ck->mem.data = (uint8_t *)(r + 1);
	ck->mem.len = ck->mem.cap = ck->len = b->len;
	memcpy(ck->mem.data, b->data, b->len);
	link_chunk(r, ck);
	ch_buf_reset(b);
	return r;
}

void
ch_resp_append(ch_resp *r, const void *p, size_t n)
{
	if (n == 0)
		return;
	ch_chunk *ck = r->tail;
	if (!ck || ck->is_file || ck->fill || ck->inline_mem) {
		ck = chunk_new(r);
		ch_buf_init(&ck->mem);
		link_chunk(r, ck);
	}
	ch_buf_append(&ck->mem, p, n);
	if (!ch_buf_ok(&ck->mem)) {
		r->bad = true;
		return;
	}
	ck->len += n;
	r->total += n;
}

void
ch_resp_add_file(ch_resp *r, int fd, off_t off, size_t len, ch_release_fn release, void *ud)
{
	if (len == 0) {
		if (release)
			release(ud);
		return;
	}
	ch_chunk *ck = chunk_new(r);
	ck->is_file = true;
	ck->fd = fd;
	ck->off = off;
	ck->len = len;
	ck->release = release;
	ck->ud = ud;
	link_chunk(r, ck);
}

void
ch_resp_add_made(ch_resp *r, size_t len, ch_make_fn fill, ch_release_fn release, void *ud)
{
	if (len == 0) {
		if (release)
			release(ud);
		return;
	}
	ch_chunk *ck = chunk_new(r);
	ch_buf_init(&ck->mem);
	ck->len = len;
	ck->fill = fill;
	ck->release = release;
	ck->ud = ud;
	link_chunk(r, ck);
}

size_t
ch_resp_len(const ch_resp *r)
{
	return r->total;
}

bool
ch_resp_ok(const ch_resp *r)
{
	return !r->bad;
}

/* Reads len bytes at off of fd into dst; a short file is EIO. */
static int
pread_full(int fd, uint8_t *dst, size_t len, off_t off)
{
	while (len > 0) {
		ssize_t n = pread(fd, dst, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return CH_ERR;
		if (n == 0) {
			errno = EIO;
			return CH_ERR;
		}
		dst += n;
		len -= (size_t)n;
		off += n;
	}
	return CH_OK;
}

/* Makes all of a made chunk into its memory and turns it into a memory
 * chunk (released). */
static int
made_to_mem(ch_chunk *ck)
{
	ch_buf all;
	ch_buf_init(&all);
	for (size_t off = 0; off < ck->len;) {
		const uint8_t *p;
		size_t n;
		if (ch_chunk_made_at(ck, off, &p, &n) != CH_OK) {
			ch_buf_free(&all);
			return CH_ERR;
		}
		ch_buf_append(&all, p, n);
		off += n;
	}
	if (!ch_buf_ok(&all)) {
		ch_buf_free(&all);
		return CH_ERR;
	}
	if (ck->release)
		ck->release(ck->ud);
	ch_buf_free(&ck->mem);
	ck->mem = all;
	ck->fill = NULL;
	ck->release = NULL;
	ck->win_off = 0;
	return CH_OK;
}

int
ch_resp_flatten(ch_resp *r, ch_buf *out)
{
	if (r->bad)
		return CH_ERR;
	for (ch_chunk *ck = r->head; ck; ck = ck->next) {
		if (ck->fill && made_to_mem(ck) != CH_OK)
			return CH_ERR;
		if (!ck->is_file) {
			ch_buf_append(out, ck->mem.data, ck->len);
			continue;
		}
		size_t at = out->len;
		if (!ch_buf_extend(out, ck->len))
			return CH_ERR;
		if (pread_full(ck->fd, out->data + at, ck->len, ck->off) != CH_OK) {
			out->len = at;
			return CH_ERR;
		}
	}
	return ch_buf_ok(out) ? CH_OK : CH_ERR;
}
