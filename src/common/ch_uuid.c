#include "common/ch_uuid.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void
ch_random_bytes(void *buf, size_t n)
{
	uint8_t *p = buf;
	while (n > 0) {
		ssize_t r = getrandom(p, n, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			perror("getrandom");
			abort();
		}
		p += r;
		n -= (size_t)r;
	}
}

ch_uuid
ch_uuid_random(void)
{
	ch_uuid u;
	for (;;) {
		ch_random_bytes(u.b, sizeof(u.b));
		u.b[6] = (u.b[6] & 0x0f) | 0x40; /* version 4 */
		u.b[8] = (u.b[8] & 0x3f) | 0x80; /* IETF variant */
		/* Kafka rejects ids whose base64 begins with '-' (first 6 bits 62). */
		if ((u.b[0] >> 2) != 62 && !ch_uuid_is_zero(&u))
			return u;
	}
}

bool
ch_uuid_is_zero(const ch_uuid *u)
{
	static const ch_uuid zero;
	return memcmp(u->b, zero.b, 16) == 0;
}

bool
ch_uuid_eq(const ch_uuid *a, const ch_uuid *b)
{
	return memcmp(a->b, b->b, 16) == 0;
}

void
ch_uuid_to_base64(const ch_uuid *u, char *out)
{
	int o = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (int i = 0; i < 16; i++) {
		acc = (acc << 8) | u->b[i];
		bits += 8;
		while (bits >= 6) {
			bits -= 6;
			out[o++] = b64url[(acc >> bits) & 0x3f];
		}
	}
	if (bits > 0)
		out[o++] = b64url[(acc << (6 - bits)) & 0x3f];
	out[o] = '\0';
}

int
ch_uuid_from_base64(const char *s, ch_uuid *out)
{
	if (strlen(s) != CH_UUID_STR_LEN)
		return -1;
	uint32_t acc = 0;
	int bits = 0, o = 0;
	for (int i = 0; i < CH_UUID_STR_LEN; i++) {
		const char *q = strchr(b64url, s[i]);
		if (!q || !s[i])
			return -1;
		acc = (acc << 6) | (uint32_t)(q - b64url);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o < 16)
				out->b[o++] = (uint8_t)(acc >> bits);
		}
	}
	/* 22 chars = 132 bits: the last 4 bits must be zero padding. */
	if (acc & ((1u << bits) - 1))
		return -1;
	return o == 16 ? 0 : -1;
}

void
ch_uuid_to_hex(const ch_uuid *u, char *out)
{
	const uint8_t *b = u->b;
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
}
