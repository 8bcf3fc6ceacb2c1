/*
 * ch_hash: hashes and checksums.
 *   ch_java_string_hash: Java's String.hashCode over UTF-16 code units of a
 *     UTF-8 string (Kafka places a group on __consumer_offsets partition
 *     Utils.abs(hash) % N: Math.abs, with Utils.abs(INT_MIN) = 0).
 *   ch_crc32c: CRC-32C (Castagnoli), as in Kafka record batches v2; the
 *     SSE4.2 instruction where the CPU has it, tables otherwise;
 *     ch_crc32c_combine joins the CRCs of two consecutive pieces.
 *   ch_hash_bytes: a fast non-cryptographic hash for in-memory tables.
 */
#ifndef CH_HASH_H
#define CH_HASH_H

#include <stddef.h>
#include <stdint.h>

int32_t ch_java_string_hash(const char *s, size_t len);
/* Kafka's partition for a group id among n partitions of __consumer_offsets. */
int32_t ch_group_partition(const char *group, size_t len, int32_t n);
uint32_t ch_crc32c(uint32_t crc, const void *data, size_t len);
/* The table-driven implementation, always (tests compare the two). */
uint32_t ch_crc32c_sw(uint32_t crc, const void *data, size_t len);
/* The CRC-32C of A followed by B from crc_a = ch_crc32c(0, A, ...) and
 * crc_b = ch_crc32c(0, B, len_b), without reading either again. */
uint32_t ch_crc32c_combine(uint32_t crc_a, uint32_t crc_b, size_t len_b);
uint64_t ch_hash_bytes(const void *data, size_t len);

#endif
