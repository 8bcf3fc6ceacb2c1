/*
 * ch_rd: the one length-checked reader for untrusted bytes.
 *
 * Every read checks the remaining length first. Errors are sticky: after the
 * first failure every later read fails too and returns zero values, so a
 * decoder can read a whole structure and test r->err once at the end (no
 * hidden gotos). Nothing here allocates.
 *
 * Kafka primitive types, big-endian:
 *   int8/16/32/64, uint16/32, float64, bool (int8 != 0), uuid (16 bytes)
 *   varint/varlong: zig-zag signed; uvarint: unsigned LEB128 (max 5 bytes)
 *   string:  int16 length (-1 null) + bytes;   compact: uvarint length+1 (0 null)
 *   bytes:   int32 length (-1 null) + bytes;   compact: uvarint length+1 (0 null)
 *   array:   int32 count (-1 null);            compact: uvarint count+1 (0 null)
 */
#ifndef CH_RD_H
#define CH_RD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/ch_uuid.h"

typedef enum ch_rd_err {
	CH_RD_OK = 0,
	CH_RD_ESHORT = 1, /* input ended inside a value */
	CH_RD_EINVAL = 2, /* a value is malformed (bad length, varint too long) */
	CH_RD_ENOMEM = 3, /* decoder could not allocate (arena limit) */
	CH_RD_ELIMIT = 4, /* more elements or tagged fields than Kafka accepts */
} ch_rd_err;

/* Kafka 4.4's decoder limits: an array or collection of more elements, or a
 * tagged-field section of more fields, is rejected before anything is
 * allocated or walked, whatever the frame's size. */
#define CH_RD_MAX_ARRAY_LEN 1000000
#define CH_RD_MAX_TAGGED_FIELDS 10000

typedef struct ch_rd {
	const uint8_t *p;   /* next byte */
	const uint8_t *end; /* one past the last byte */
	int err;            /* ch_rd_err, sticky */
} ch_rd;

/* A string or byte slice pointing into the frame (not NUL-terminated).
 * len < 0 means null. */
typedef struct ch_str {
	const char *p;
	int32_t len;
} ch_str;

typedef struct ch_bytes {
	const uint8_t *p;
	int32_t len;
} ch_bytes;

#define CH_STR_NULL ((ch_str){NULL, -1})
#define CH_BYTES_NULL ((ch_bytes){NULL, -1})
#define CH_STR_LIT(s) ((ch_str){(s), (int32_t)(sizeof(s) - 1)})

static inline ch_str
ch_str_c(const char *s)
{
	return s ? (ch_str){s, (int32_t)strlen(s)} : CH_STR_NULL;
}

static inline bool
ch_str_is_null(ch_str s)
{
	return s.len < 0;
}

static inline bool
ch_str_eq(ch_str a, ch_str b)
{
	if (a.len < 0 || b.len < 0)
		return a.len < 0 && b.len < 0;
	return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, (size_t)a.len) == 0);
}

static inline bool
ch_str_eq_c(ch_str a, const char *s)
{
	return a.len >= 0 && (size_t)a.len == strlen(s) && memcmp(a.p, s, (size_t)a.len) == 0;
}

static inline void
ch_rd_init(ch_rd *r, const void *p, size_t len)
{
	static const uint8_t empty[1];
	if (!p) /* NULL + 0 is undefined behaviour in C */
		p = empty, len = 0;
	r->p = p;
	r->end = (const uint8_t *)p + len;
	r->err = CH_RD_OK;
}

static inline size_t
ch_rd_left(const ch_rd *r)
{
	return r->err ? 0 : (size_t)(r->end - r->p);
}

static inline bool
ch_rd_ok(const ch_rd *r)
{
	return r->err == CH_RD_OK;
}

static inline void
ch_rd_fail(ch_rd *r, int err)
{
	if (!r->err)
		r->err = err;
	r->p = r->end;
}

/* Returns a pointer to n bytes and advances, or NULL (sticky error). */
static inline const uint8_t *
ch_rd_take(ch_rd *r, size_t n)
{
	if (r->err)
		return NULL;
	if ((size_t)(r->end - r->p) < n) {
		ch_rd_fail(r, CH_RD_ESHORT);
		return NULL;
	}
	const uint8_t *p = r->p;
	r->p += n;
	return p;
}

static inline int8_t
ch_rd_i8(ch_rd *r)
{
	const uint8_t *p = ch_rd_take(r, 1);
	return p ? (int8_t)p[0] : 0;
}

static inline bool
ch_rd_bool(ch_rd *r)
{
	return ch_rd_i8(r) != 0;
}

static inline uint16_t
ch_rd_u16(ch_rd *r)
{
	const uint8_t *p = ch_rd_take(r, 2);
	return p ? (uint16_t)((p[0] << 8) | p[1]) : 0;
}

static inline int16_t
ch_rd_i16(ch_rd *r)
{
	return (int16_t)ch_rd_u16(r);
}

static inline uint32_t
ch_rd_u32(ch_rd *r)
{
	const uint8_t *p = ch_rd_take(r, 4);
	return p ? ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3]
		 : 0;
}

static inline int32_t
ch_rd_i32(ch_rd *r)
{
	return (int32_t)ch_rd_u32(r);
}

static inline int64_t
ch_rd_i64(ch_rd *r)
{
	uint64_t hi = ch_rd_u32(r);
	uint64_t lo = ch_rd_u32(r);
	return (int64_t)((hi << 32) | lo);
}

static inline double
ch_rd_f64(ch_rd *r)
{
	uint64_t u = (uint64_t)ch_rd_i64(r);
	double d;
	memcpy(&d, &u, sizeof(d));
	return d;
}

static inline ch_uuid
ch_rd_uuid(ch_rd *r)
{
	ch_uuid u;
	const uint8_t *p = ch_rd_take(r, 16);
	if (p)
		memcpy(u.b, p, 16);
	else
		memset(u.b, 0, 16);
	return u;
}

uint64_t ch_rd_uvarint64(ch_rd *r, int maxbytes);

/* ch_rd_uvarint64 with the one-byte case inline: most varints are one byte
 * (record lengths and deltas, key and value lengths, tag counts), and a
 * replay of __consumer_offsets reads six of them per record. */
static inline uint64_t
ch_rd_uvarint_fast(ch_rd *r, int maxbytes)
{
	if (!r->err && r->p < r->end && !(r->p[0] & 0x80))
		return *r->p++;
	return ch_rd_uvarint64(r, maxbytes);
}

static inline uint32_t
ch_rd_uvarint(ch_rd *r)
{
	return (uint32_t)ch_rd_uvarint_fast(r, 5);
}

static inline int32_t
ch_rd_varint(ch_rd *r)
{
	uint32_t u = (uint32_t)ch_rd_uvarint_fast(r, 5);
	return (int32_t)((u >> 1) ^ (~(u & 1) + 1));
}

static inline int64_t
ch_rd_varlong(ch_rd *r)
{
	uint64_t u = ch_rd_uvarint_fast(r, 10);
	return (int64_t)((u >> 1) ^ (~(u & 1) + 1));
}

/* Strings and bytes: `compact` selects the flexible-version encoding.
 * A null is returned as len -1 whether or not the field is nullable; the
 * generated decoder rejects nulls where the schema forbids them. */
ch_str ch_rd_str(ch_rd *r, bool compact);
ch_bytes ch_rd_bytes(ch_rd *r, bool compact);
/* Array count: -1 for null. Counts above CH_RD_MAX_ARRAY_LEN (CH_RD_ELIMIT)
 * or larger than the remaining bytes divided by min_elem_size (CH_RD_ESHORT)
 * are rejected before anything is allocated. */
int32_t ch_rd_array_len(ch_rd *r, bool compact, size_t min_elem_size);
/* The field count that opens a tagged-field section; above
 * CH_RD_MAX_TAGGED_FIELDS it fails with CH_RD_ELIMIT and returns 0. */
uint32_t ch_rd_tag_count(ch_rd *r);
/* Skip a tagged-field section (flexible versions) whose tags are all unknown. */
void ch_rd_skip_tags(ch_rd *r);

#endif
