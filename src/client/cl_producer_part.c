/*
 * cl_producer_part.c: the producer's partitioners (cl_producer.h). Pure:
 * no state but the caller's random generator.
 */
#include "client/cl_producer.h"

#include <string.h>
#include <zlib.h>

static const char *const names[] = {
	[CL_PART_MURMUR2_RANDOM] = "murmur2_random",
	[CL_PART_MURMUR2] = "murmur2",
	[CL_PART_CONSISTENT_RANDOM] = "consistent_random",
	[CL_PART_CONSISTENT] = "consistent",
	[CL_PART_FNV1A_RANDOM] = "fnv1a_random",
	[CL_PART_FNV1A] = "fnv1a",
	[CL_PART_RANDOM] = "random",
};

int
cl_partitioner_by_name(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0)
			return (int)i;
	return -1;
}

const char *
cl_partitioner_name(cl_partitioner p)
{
	return names[p];
}

int32_t
cl_murmur2(const void *key, size_t len)
{
	const uint8_t *d = key;
	const uint32_t m = 0x5bd1e995;
	uint32_t h = 0x9747b28cu ^ (uint32_t)len;
	size_t n4 = len / 4;
	for (size_t i = 0; i < n4; i++) {
		const uint8_t *p = d + i * 4;
		uint32_t k = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			     (uint32_t)p[3] << 24;
		k *= m;
		k ^= k >> 24;
		k *= m;
		h *= m;
		h ^= k;
	}
	const uint8_t *t = d + (len & ~(size_t)3);
	switch (len % 4) {
	case 3:
		h ^= (uint32_t)t[2] << 16;
		/* fall through */
	case 2:
		h ^= (uint32_t)t[1] << 8;
		/* fall through */
	case 1:
		h ^= t[0];
		h *= m;
	}
	h ^= h >> 13;
	h *= m;
	h ^= h >> 15;
	return (int32_t)h;
}

uint32_t
cl_fnv1a(const void *key, size_t len)
{
	const uint8_t *d = key;
	uint32_t h = 0x811c9dc5u;
	for (size_t i = 0; i < len; i++) {
		h ^= d[i];
		h *= 0x01000193u;
	}
	return h;
}

int32_t
cl_part_for_key(cl_partitioner p, const void *key, size_t len, int32_t nparts)
{
	static const uint8_t empty[1];
	const void *k = key ? key : empty;
	size_t n = key ? len : 0;
	uint32_t h;
	switch (p) {
	case CL_PART_MURMUR2_RANDOM:
	case CL_PART_FNV1A_RANDOM:
		if (!key)
			return -1;
		break;
	case CL_PART_CONSISTENT_RANDOM:
		if (!key || len == 0) /* librdkafka: keylen 0 is random */
			return -1;
		break;
	case CL_PART_RANDOM:
		return -1;
	default:
		break;
	}
	switch (p) {
	case CL_PART_MURMUR2_RANDOM:
	case CL_PART_MURMUR2:
		/* Utils.toPositive, not abs: INT_MIN becomes 0 */
		h = (uint32_t)cl_murmur2(k, n) & 0x7fffffff;
		break;
	case CL_PART_CONSISTENT_RANDOM:
	case CL_PART_CONSISTENT:
		h = (uint32_t)crc32(0, k, (uInt)n);
		break;
	default: {
		/* librdkafka: the absolute value of the hash as a signed int */
		int64_t sh = (int32_t)cl_fnv1a(k, n);
		h = (uint32_t)(sh < 0 ? -sh : sh);
		break;
	}
	}
	return (int32_t)(h % (uint32_t)nparts);
}

/* xorshift64: the sticky choice needs no more than that. */
static uint64_t
next_rand(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

int32_t
cl_part_sticky_next(const int32_t *avail, int32_t navail, int32_t nparts, int32_t prev,
		    uint64_t *rng)
{
	if (navail == 0) {
		if (nparts <= 1)
			return 0;
		int32_t p = (int32_t)(next_rand(rng) % (uint64_t)(nparts - (prev >= 0)));
		return prev >= 0 && p >= prev ? p + 1 : p;
	}
	if (navail == 1)
		return avail[0];
	/* StickyPartitionCache.nextPartition: a random available one, not the
	 * previous when there is another */
	for (;;) {
		int32_t p = avail[next_rand(rng) % (uint64_t)navail];
		if (p != prev)
			return p;
	}
}
