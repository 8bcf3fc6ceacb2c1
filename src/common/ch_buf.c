#include "common/ch_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
ch_buf_init(ch_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void
ch_buf_free(ch_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

void
ch_buf_reset(ch_buf *b)
{
	b->len = 0;
	b->oom = false;
}

bool
ch_buf_reserve(ch_buf *b, size_t n)
{
	if (b->oom)
		return false;
	if (b->cap - b->len >= n)
		return true;
	size_t want = b->len + n;
	if (want < b->len) { /* overflow */
		b->oom = true;
		return false;
	}
	size_t cap = b->cap ? b->cap : 256;
	while (cap < want)
		cap = cap * 2 > cap ? cap * 2 : want;
	uint8_t *p = realloc(b->data, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

void
ch_buf_append(ch_buf *b, const void *p, size_t n)
{
	if (n == 0 || !ch_buf_reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

uint8_t *
ch_buf_extend(ch_buf *b, size_t n)
{
	if (!ch_buf_reserve(b, n))
		return NULL;
	uint8_t *p = b->data + b->len;
	b->len += n;
	return p;
}

uint8_t *
ch_buf_steal(ch_buf *b, size_t *len)
{
	uint8_t *p = b->data;
	*len = b->len;
	memset(b, 0, sizeof(*b));
	return p;
}

void
ch_buf_printf(ch_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	uint8_t *p = ch_buf_extend(b, (size_t)n + 1);
	if (!p)
		return;
	va_start(ap, fmt);
	vsnprintf((char *)p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len--; /* the NUL is not part of the contents */
}
