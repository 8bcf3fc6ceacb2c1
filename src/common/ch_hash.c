#include "common/ch_hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

/* Decode one UTF-8 sequence; invalid bytes count as U+FFFD as Java's decoder
 * does, so any byte string gets a deterministic hash. */
static uint32_t
utf8_next(const unsigned char **pp, const unsigned char *end)
{
	const unsigned char *p = *pp;
	unsigned c = *p++;
	uint32_t cp;
	int more;
	if (c < 0x80) {
		*pp = p;
		return c;
	} else if ((c & 0xe0) == 0xc0) {
		cp = c & 0x1f;
		more = 1;
	} else if ((c & 0xf0) == 0xe0) {
		cp = c & 0x0f;
		more = 2;
	} else if ((c & 0xf8) == 0xf0) {
		cp = c & 0x07;
		more = 3;
	} else {
		*pp = p;
		return 0xfffd;
	}
	for (int i = 0; i < more; i++) {
		if (p >= end || (*p & 0xc0) != 0x80) {
			*pp = p;
			return 0xfffd;
		}
		cp = (cp << 6) | (*p++ & 0x3f);
	}
	*pp = p;
	if (cp > 0x10ffff)
		return 0xfffd;
	return cp;
}

int32_t
ch_java_string_hash(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	uint32_t h = 0;
	while (p < end) {
		uint32_t cp = utf8_next(&p, end);
		if (cp >= 0x10000) { /* surrogate pair */
			cp -= 0x10000;
			h = h * 31 + (0xd800 + (cp >> 10));
			h = h * 31 + (0xdc00 + (cp & 0x3ff));
		} else {
			h = h * 31 + cp;
		}
	}
	return (int32_t)h;
}

int32_t
ch_group_partition(const char *group, size_t len, int32_t n)
{
	int32_t h = ch_java_string_hash(group, len);
	/* Kafka's Utils.abs: Math.abs, except INT_MIN maps to 0 (not to
	 * h & 0x7fffffff, which is Utils.toPositive, used elsewhere). */
	int32_t a = h == INT32_MIN ? 0 : (h < 0 ? -h : h);
	return a % n;
}

static uint32_t crc32c_table[8][256];
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;

/* Builds the slicing-by-8 tables of CRC-32C (Castagnoli, reflected
 * 0x82f63b78). */
static void
crc32c_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc32c_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc32c_table[t][i] = (crc32c_table[t - 1][i] >> 8) ^
					     crc32c_table[0][crc32c_table[t - 1][i] & 0xff];
}

/* CRC-32C in software (slicing-by-8), for CPUs without SSE4.2; crc is the
 * running value of earlier bytes. */
static uint32_t
crc32c_sw(uint32_t crc, const unsigned char *p, size_t len)
{
	/* Thread-safe lazy init: fsync and compaction workers checksum too. */
	pthread_once(&crc32c_once, crc32c_init);
	crc = ~crc;
	while (len >= 8) { /* slicing-by-8 */
		uint32_t lo, hi;
		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo ^= crc;
		crc = crc32c_table[7][lo & 0xff] ^ crc32c_table[6][(lo >> 8) & 0xff] ^
		      crc32c_table[5][(lo >> 16) & 0xff] ^ crc32c_table[4][lo >> 24] ^
		      crc32c_table[3][hi & 0xff] ^ crc32c_table[2][(hi >> 8) & 0xff] ^
		      crc32c_table[1][(hi >> 16) & 0xff] ^ crc32c_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc32c_table[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

#if defined(__x86_64__)
/* The crc32 instruction has a latency of 3 cycles and a throughput of 1:
 * one stream of it runs at a third of what the CPU can do. crc32c_hw runs
 * three streams over three consecutive blocks and joins them with the
 * "shift a CRC over LEN zero bytes" operator (the GF(2) matrix method of
 * zlib's crc32_combine), applied by four byte tables per block size. */
#define CRC_LONG 8192
#define CRC_SHORT 256
static uint32_t crc_shift_long[4][256], crc_shift_short[4][256];

/* The GF(2) 32x32 matrix mat (one column per bit) times vec. */
static uint32_t
gf2_times(const uint32_t *mat, uint32_t vec)
{
	uint32_t sum = 0;
	for (; vec; vec >>= 1, mat++)
		if (vec & 1)
			sum ^= *mat;
	return sum;
}

/* sq = mat * mat. */
static void
gf2_square(uint32_t *sq, const uint32_t *mat)
{
	for (int n = 0; n < 32; n++)
		sq[n] = gf2_times(mat, mat[n]);
}

/* Fills tab with the operator that advances a (reflected, not inverted)
 * CRC-32C over len zero bytes, len a power of two, one table per byte of
 * the CRC. */
static void
crc_shift_tables(uint32_t tab[4][256], size_t len)
{
	uint32_t op[32], sq[32];
	op[0] = 0x82f63b78u; /* one zero bit: the reflected polynomial */
	for (int n = 1; n < 32; n++)
		op[n] = 1u << (n - 1);
	for (size_t bits = 1; bits < len * 8; bits <<= 1) { /* 2x the zeros each time */
		gf2_square(sq, op);
		memcpy(op, sq, sizeof(op));
	}
	for (uint32_t n = 0; n < 256; n++)
		for (int k = 0; k < 4; k++)
			tab[k][n] = gf2_times(op, n << (8 * k));
}

/* crc advanced over the zero bytes tab stands for. */
static inline uint32_t
crc_shift(uint32_t tab[4][256], uint32_t crc)
{
	return tab[0][crc & 0xff] ^ tab[1][(crc >> 8) & 0xff] ^ tab[2][(crc >> 16) & 0xff] ^
	       tab[3][crc >> 24];
}

static inline uint64_t
load64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* SSE4.2 has a CRC-32C instruction: every produced batch is checksummed, so
 * this is on the produce hot path (several times faster than the tables;
 * the three streams another ~2.5x on 1 MB batches). */
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t crc, const unsigned char *p, size_t len)
{
	uint64_t c0 = ~crc;
	/* three blocks of `blk` bytes at a time, each its own stream */
	for (size_t blk = CRC_LONG; blk >= CRC_SHORT; blk = blk == CRC_LONG ? CRC_SHORT : 0) {
		uint32_t(*tab)[256] = blk == CRC_LONG ? crc_shift_long : crc_shift_short;
		while (len >= 3 * blk) {
			uint64_t c1 = 0, c2 = 0;
			for (const unsigned char *end = p + blk; p < end; p += 8) {
				c0 = __builtin_ia32_crc32di(c0, load64(p));
				c1 = __builtin_ia32_crc32di(c1, load64(p + blk));
				c2 = __builtin_ia32_crc32di(c2, load64(p + 2 * blk));
			}
			/* c0 shifted over block 1's bytes, joined with block
			 * 1's CRC, then the same over block 2 */
			c0 = crc_shift(tab, (uint32_t)c0) ^ (uint32_t)c1;
			c0 = crc_shift(tab, (uint32_t)c0) ^ (uint32_t)c2;
			p += 2 * blk;
			len -= 3 * blk;
		}
	}
	while (len >= 8) {
		c0 = __builtin_ia32_crc32di(c0, load64(p));
		p += 8;
		len -= 8;
	}
	uint32_t c32 = (uint32_t)c0;
	while (len--)
		c32 = __builtin_ia32_crc32qi(c32, *p++);
	return ~c32;
}
#endif

static pthread_once_t crc32c_hw_once = PTHREAD_ONCE_INIT;
static bool crc32c_hw_ok;

/* ch_crc32c's pthread_once initialiser: whether this CPU has SSE4.2's crc32 instruction
 * (only x86-64 looks: elsewhere crc32c_hw_ok stays false). */
static void
crc32c_hw_detect(void)
{
#if defined(__x86_64__)
	crc32c_hw_ok = __builtin_cpu_supports("sse4.2");
	if (crc32c_hw_ok) {
		crc_shift_tables(crc_shift_long, CRC_LONG);
		crc_shift_tables(crc_shift_short, CRC_SHORT);
	}
#endif
}

uint32_t
ch_crc32c_sw(uint32_t crc, const void *data, size_t len)
{
	return crc32c_sw(crc, data, len);
}

uint32_t
ch_crc32c(uint32_t crc, const void *data, size_t len)
{
#if defined(__x86_64__)
	pthread_once(&crc32c_hw_once, crc32c_hw_detect);
	if (crc32c_hw_ok)
		return crc32c_hw(crc, data, len);
#endif
	return crc32c_sw(crc, data, len);
}

/* ---- joining two CRCs ------------------------------------------------------
 * A CRC register is a polynomial over GF(2) (reflected: bit 31 is x^0).
 * Running it over n zero bytes multiplies it by x^(8n) modulo the CRC's
 * polynomial, and CRC(A B) = CRC(A) * x^(8 len(B)) + CRC(B): the
 * pre- and post-inversion of both cancel. x^(8n) is a product of the powers
 * x^(2^k) for the bits of 8n, kept in a table of 32 (the powers repeat
 * with a period that divides 2^32 - 1, so the table wraps). */
#define CRC32C_POLY 0x82f63b78u
static uint32_t crc_x2k[32]; /* x^(2^k) mod P */
static pthread_once_t crc_x2k_once = PTHREAD_ONCE_INIT;

/* a * b mod P (reflected polynomials). */
static uint32_t
crc_mul(uint32_t a, uint32_t b)
{
	uint32_t prod = 0;
	for (uint32_t m = 1u << 31; m && a; m >>= 1) {
		if (a & m) {
			prod ^= b;
			a ^= m;
		}
		b = b & 1 ? (b >> 1) ^ CRC32C_POLY : b >> 1; /* b * x */
	}
	return prod;
}

static void
crc_x2k_init(void)
{
	crc_x2k[0] = 1u << 30; /* x^1 */
	for (int k = 1; k < 32; k++)
		crc_x2k[k] = crc_mul(crc_x2k[k - 1], crc_x2k[k - 1]);
}

uint32_t
ch_crc32c_combine(uint32_t crc_a, uint32_t crc_b, size_t len_b)
{
	pthread_once(&crc_x2k_once, crc_x2k_init);
	uint32_t shift = 1u << 31; /* x^0 */
	/* x^(8 len_b): bit j of len_b stands for x^(2^(j+3)) */
	for (unsigned k = 3; len_b; len_b >>= 1, k++)
		if (len_b & 1)
			shift = crc_mul(crc_x2k[k & 31], shift);
	return crc_mul(shift, crc_a) ^ crc_b;
}

uint64_t
ch_hash_bytes(const void *data, size_t len)
{
	/* XXH3 (header-only: nothing to link); a byte-at-a-time FNV-1a took a
	 * tenth of a heartbeat's instructions (callgrind, bench/groups/run-coord.sh) */
	return XXH3_64bits(data, len);
}
