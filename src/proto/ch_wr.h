/*
 * ch_wr: the encoder's writer, appending Kafka primitive types to a ch_buf.
 * Growth failure is sticky in the buffer (ch_buf.oom); test it once at the end.
 */
#ifndef CH_WR_H
#define CH_WR_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/ch_buf.h"
#include "common/ch_endian.h"
#include "common/ch_uuid.h"
#include "proto/ch_rd.h"

static inline void
ch_wr_i8(ch_buf *b, int8_t v)
{
	uint8_t *p = ch_buf_extend(b, 1);
	if (p)
		p[0] = (uint8_t)v;
}

static inline void
ch_wr_bool(ch_buf *b, bool v)
{
	ch_wr_i8(b, v ? 1 : 0);
}

static inline void
ch_wr_u16(ch_buf *b, uint16_t v)
{
	uint8_t *p = ch_buf_extend(b, 2);
	if (p) {
		p[0] = (uint8_t)(v >> 8);
		p[1] = (uint8_t)v;
	}
}

static inline void
ch_wr_i16(ch_buf *b, int16_t v)
{
	ch_wr_u16(b, (uint16_t)v);
}

static inline void
ch_wr_u32(ch_buf *b, uint32_t v)
{
	uint8_t *p = ch_buf_extend(b, 4);
	if (p)
		ch_be_put32(p, v);
}

static inline void
ch_wr_i32(ch_buf *b, int32_t v)
{
	ch_wr_u32(b, (uint32_t)v);
}

static inline void
ch_wr_i64(ch_buf *b, int64_t v)
{
	ch_wr_u32(b, (uint32_t)((uint64_t)v >> 32));
	ch_wr_u32(b, (uint32_t)v);
}

static inline void
ch_wr_f64(ch_buf *b, double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof(u));
	ch_wr_i64(b, (int64_t)u);
}

static inline void
ch_wr_uuid(ch_buf *b, ch_uuid u)
{
	ch_buf_append(b, u.b, 16);
}

void ch_wr_uvarint64(ch_buf *b, uint64_t v);

static inline void
ch_wr_uvarint(ch_buf *b, uint32_t v)
{
	ch_wr_uvarint64(b, v);
}

static inline void
ch_wr_varint(ch_buf *b, int32_t v)
{
	ch_wr_uvarint64(b, (uint32_t)(((uint32_t)v << 1) ^ (uint32_t)(v >> 31)));
}

static inline void
ch_wr_varlong(ch_buf *b, int64_t v)
{
	ch_wr_uvarint64(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* Length in bytes of v as an unsigned varint. */
static inline int
ch_uvarint_size(uint64_t v)
{
	int n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

void ch_wr_str(ch_buf *b, ch_str s, bool compact);
void ch_wr_bytes(ch_buf *b, ch_bytes s, bool compact);
/* Array count prefix; n = -1 for null. */
void ch_wr_array_len(ch_buf *b, int32_t n, bool compact);

#endif
