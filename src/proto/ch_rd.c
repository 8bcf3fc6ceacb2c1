#include "proto/ch_rd.h"

uint64_t
ch_rd_uvarint64(ch_rd *r, int maxbytes)
{
	uint64_t v = 0;
	for (int i = 0; i < maxbytes; i++) {
		const uint8_t *p = ch_rd_take(r, 1);
		if (!p)
			return 0;
		v |= (uint64_t)(p[0] & 0x7f) << (7 * i);
		if (!(p[0] & 0x80))
			return v;
	}
	ch_rd_fail(r, CH_RD_EINVAL); /* too many continuation bytes */
	return 0;
}

ch_str
ch_rd_str(ch_rd *r, bool compact)
{
	int64_t len;
	if (compact)
		len = (int64_t)ch_rd_uvarint(r) - 1;
	else
		len = ch_rd_i16(r);
	if (r->err)
		return CH_STR_NULL;
	if (len < -1) {
		ch_rd_fail(r, CH_RD_EINVAL);
		return CH_STR_NULL;
	}
	if (len == -1)
		return CH_STR_NULL;
	const uint8_t *p = ch_rd_take(r, (size_t)len);
	if (!p)
		return CH_STR_NULL;
	return (ch_str){(const char *)p, (int32_t)len};
}

ch_bytes
ch_rd_bytes(ch_rd *r, bool compact)
{
	int64_t len;
	if (compact)
		len = (int64_t)ch_rd_uvarint(r) - 1;
	else
		len = ch_rd_i32(r);
	if (r->err)
		return CH_BYTES_NULL;
	if (len < -1) {
		ch_rd_fail(r, CH_RD_EINVAL);
		return CH_BYTES_NULL;
	}
	if (len == -1)
		return CH_BYTES_NULL;
	const uint8_t *p = ch_rd_take(r, (size_t)len);
	if (!p)
		return CH_BYTES_NULL;
	return (ch_bytes){p, (int32_t)len};
}

int32_t
ch_rd_array_len(ch_rd *r, bool compact, size_t min_elem_size)
{
	int64_t n;
	if (compact)
		n = (int64_t)ch_rd_uvarint(r) - 1;
	else
		n = ch_rd_i32(r);
	if (r->err)
		return 0;
	if (n < -1) {
		ch_rd_fail(r, CH_RD_EINVAL);
		return 0;
	}
	if (n > CH_RD_MAX_ARRAY_LEN) {
		ch_rd_fail(r, CH_RD_ELIMIT);
		return 0;
	}
	if (n > 0 && min_elem_size > 0 && (uint64_t)n > ch_rd_left(r) / min_elem_size) {
		ch_rd_fail(r, CH_RD_ESHORT);
		return 0;
	}
	return (int32_t)n;
}

uint32_t
ch_rd_tag_count(ch_rd *r)
{
	uint32_t n = ch_rd_uvarint(r);
	if (n > CH_RD_MAX_TAGGED_FIELDS) {
		ch_rd_fail(r, CH_RD_ELIMIT);
		return 0;
	}
	return n;
}

void
ch_rd_skip_tags(ch_rd *r)
{
	uint32_t n = ch_rd_tag_count(r);
	for (uint32_t i = 0; i < n && !r->err; i++) {
		(void)ch_rd_uvarint(r); /* tag */
		uint32_t size = ch_rd_uvarint(r);
		(void)ch_rd_take(r, size);
	}
}
