/*
 * ch_buf: a growable byte buffer. Used by the encoders (proto/ch_wr.h) and
 * for outgoing responses. Growth failure sets the sticky `oom` flag instead
 * of aborting, so the client library can report it; the broker checks it or
 * uses ch_buf_init_broker semantics (same thing: callers test ch_buf_ok()).
 */
#ifndef CH_BUF_H
#define CH_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

typedef struct ch_buf {
	uint8_t *data; /* owned, may be NULL while cap == 0 */
	size_t len;    /* bytes written */
	size_t cap;    /* bytes allocated */
	bool oom;      /* sticky: a growth failed; contents are incomplete */
} ch_buf;

void ch_buf_init(ch_buf *b);
void ch_buf_free(ch_buf *b);
void ch_buf_reset(ch_buf *b); /* len = 0, keeps memory */
/* Ensure room for n more bytes; returns false (and sets oom) on failure. */
bool ch_buf_reserve(ch_buf *b, size_t n);
void ch_buf_append(ch_buf *b, const void *p, size_t n);
/* Append n bytes and return a pointer to them (to fill in later), or NULL on oom. */
uint8_t *ch_buf_extend(ch_buf *b, size_t n);
/* Append printf-formatted text (no NUL is kept); sets oom on failure. */
void ch_buf_printf(ch_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Take ownership of the bytes; the buffer is left empty. */
uint8_t *ch_buf_steal(ch_buf *b, size_t *len);
static inline bool
ch_buf_ok(const ch_buf *b)
{
	return !b->oom;
}

#endif
