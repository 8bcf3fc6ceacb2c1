/*
 * ch_resp_int.h: the inside of a ch_resp, shared by ch_resp.c (building) and
 * ch_server.c (sending). Not for the API layer: use ch_resp.h.
 *
 * Once submitted, a response sits in its connection's send queue (`next`)
 * and the cursor (hdr_sent, cur, cur_off) says how far it has been written.
 */
#ifndef CH_RESP_INT_H
#define CH_RESP_INT_H

#include "net/ch_resp.h"

typedef struct ch_chunk {
	struct ch_chunk *next;
	bool is_file;
	bool inline_mem; /* memory chunk whose bytes follow the ch_resp (not freed) */
	ch_buf mem;      /* memory chunk: owned bytes (mem.len of them);
				  made chunk: the bytes [win_off, win_off + mem.len) */
	int fd;          /* file chunk: not owned */
	off_t off;
	size_t len;            /* bytes in this chunk (every kind) */
	ch_make_fn fill;       /* made chunk: makes the next bytes (NULL otherwise) */
	size_t win_off;        /* made chunk: offset of mem's first byte */
	ch_release_fn release; /* file and made chunks: called once when done */
	void *ud;
} ch_chunk;

struct ch_resp {
	ch_chunk first; /* the first chunk lives here: a response of one buffer
			   (most of them) is one allocation */
	ch_chunk *head;
	ch_chunk *tail;
	size_t total; /* sum of chunk lengths */
	bool bad;     /* a buffer had hit out-of-memory */

	/* send state, owned by the server after ch_conn_respond */
	struct ch_resp *next; /* send queue link */
	uint8_t hdr[4];       /* big-endian total */
	uint8_t hdr_sent;     /* 0..4 */
	ch_chunk *cur;        /* chunk being sent; NULL when all sent */
	size_t cur_off;       /* bytes of cur already sent */
};

/* Release and free one chunk (not a response's `first`). */
void ch_chunk_free(ch_chunk *ck);

/* A made chunk's bytes from offset off on (off within its window, or just
 * past it: then the next bytes are made first, at most CH_MADE_WINDOW).
 * @returns CH_OK with *p and *n (n > 0), or CH_ERR if the maker failed. */
#define CH_MADE_WINDOW (128u * 1024)
int ch_chunk_made_at(ch_chunk *ck, size_t off, const uint8_t **p, size_t *n);

#endif
