/*
 * ch_endian: big-endian loads and stores of fixed-size integers, for the
 * on-disk and on-wire formats (Kafka is big-endian throughout). Callers
 * check lengths first; these only move bytes.
 */
#ifndef CH_ENDIAN_H
#define CH_ENDIAN_H

#include <stdint.h>

static inline uint32_t
ch_be_get32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static inline uint64_t
ch_be_get64(const uint8_t *p)
{
	return ((uint64_t)ch_be_get32(p) << 32) | ch_be_get32(p + 4);
}

static inline void
ch_be_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void
ch_be_put64(uint8_t *p, uint64_t v)
{
	ch_be_put32(p, (uint32_t)(v >> 32));
	ch_be_put32(p + 4, (uint32_t)v);
}

#endif
