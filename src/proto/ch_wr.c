#include "proto/ch_wr.h"

void
ch_wr_uvarint64(ch_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	int n = 0;
	while (v >= 0x80) {
		tmp[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	tmp[n++] = (uint8_t)v;
	ch_buf_append(b, tmp, (size_t)n);
}

void
ch_wr_str(ch_buf *b, ch_str s, bool compact)
{
	if (compact)
		ch_wr_uvarint(b, s.len < 0 ? 0 : (uint32_t)s.len + 1);
	else
		ch_wr_i16(b, s.len < 0 ? -1 : (int16_t)s.len);
	if (s.len > 0)
		ch_buf_append(b, s.p, (size_t)s.len);
}

void
ch_wr_bytes(ch_buf *b, ch_bytes s, bool compact)
{
	if (compact)
		ch_wr_uvarint(b, s.len < 0 ? 0 : (uint32_t)s.len + 1);
	else
		ch_wr_i32(b, s.len < 0 ? -1 : s.len);
	if (s.len > 0)
		ch_buf_append(b, s.p, (size_t)s.len);
}

void
ch_wr_array_len(ch_buf *b, int32_t n, bool compact)
{
	if (compact)
		ch_wr_uvarint(b, n < 0 ? 0 : (uint32_t)n + 1);
	else
		ch_wr_i32(b, n);
}
