/*
 * ch_uuid: Kafka UUIDs (topic ids, cluster id). 16 raw bytes; shown as
 * URL-safe base64 without padding (22 characters), as Kafka prints them.
 * Kafka reserves the all-zero UUID (ZERO_UUID) and 0..0-1 (METADATA_TOPIC_ID)
 * and never hands out ids whose base64 starts with '-'.
 */
#ifndef CH_UUID_H
#define CH_UUID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ch_uuid {
	uint8_t b[16];
} ch_uuid;

#define CH_UUID_STR_LEN 22

/* Random (v4) UUID valid for Kafka use. */
ch_uuid ch_uuid_random(void);
bool ch_uuid_is_zero(const ch_uuid *u);
bool ch_uuid_eq(const ch_uuid *a, const ch_uuid *b);
/* out must hold CH_UUID_STR_LEN + 1 bytes. */
void ch_uuid_to_base64(const ch_uuid *u, char *out);
/* Returns 0 on success, -1 if s is not a 22-char URL-safe base64 UUID. */
int ch_uuid_from_base64(const char *s, ch_uuid *out);
/* Canonical 8-4-4-4-12 hex form; out must hold 37 bytes. */
void ch_uuid_to_hex(const ch_uuid *u, char *out);
/* Fill buf with n random bytes (getrandom); aborts if the kernel refuses. */
void ch_random_bytes(void *buf, size_t n);

#endif
