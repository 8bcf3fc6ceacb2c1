/* Unit tests for src/common: checksums, hashes, UUIDs, the heap, the map. */
#include <stdlib.h>

#include "common/ch_common.h"
#include "common/ch_hash.h"
#include "common/ch_heap.h"
#include "common/ch_map.h"
#include "common/ch_ratelog.h"
#include "common/ch_test.h"
#include "common/ch_uuid.h"

static void
t_crc32c_vectors(void)
{
	/* RFC 3720 / iSCSI check value and test vectors. */
	CH_CHECK_EQ_INT(ch_crc32c(0, "123456789", 9), 0xe3069283u);
	CH_CHECK_EQ_INT(ch_crc32c_sw(0, "123456789", 9), 0xe3069283u);
	uint8_t zeros[32] = {0}, ones[32];
	memset(ones, 0xff, sizeof(ones));
	CH_CHECK_EQ_INT(ch_crc32c(0, zeros, 32), 0x8a9136aau);
	CH_CHECK_EQ_INT(ch_crc32c(0, ones, 32), 0x62a8ab43u);
	CH_CHECK_EQ_INT(ch_crc32c(0, "", 0), 0);
}

static void
t_crc32c_fast_equals_tables(void)
{
	/* Every length and alignment, and incremental use, agree. */
	uint8_t buf[300];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	for (size_t off = 0; off < 9; off++)
		for (size_t len = 0; len + off <= sizeof(buf); len++)
			if (ch_crc32c(0, buf + off, len) != ch_crc32c_sw(0, buf + off, len)) {
				CH_CHECK(!"crc32c fast path differs from the tables");
				return;
			}
	uint32_t whole = ch_crc32c(0, buf, sizeof(buf));
	uint32_t parts = ch_crc32c(ch_crc32c(0, buf, 77), buf + 77, sizeof(buf) - 77);
	CH_CHECK_EQ_INT(whole, parts);
	/* Long inputs take the three-stream path (blocks of 8192 and 256
	 * bytes): lengths around each block boundary, odd starts, a running
	 * crc. */
	size_t big_len = 3 * 8192 * 2 + 3 * 256 * 3 + 64;
	uint8_t *big = malloc(big_len + 1);
	CH_CHECK(big != NULL);
	if (!big)
		return;
	uint64_t x = 88172645463325252ull;
	for (size_t i = 0; i <= big_len; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		big[i] = (uint8_t)x;
	}
	const size_t lens[] = {3 * 256 - 1,  3 * 256,  3 * 256 + 9,
			       3 * 8192 - 1, 3 * 8192, 3 * 8192 + 3 * 256 + 5,
			       big_len};
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		for (size_t off = 0; off < 2; off++) {
			CH_CHECK_EQ_INT(ch_crc32c(0, big + off, lens[i]),
					ch_crc32c_sw(0, big + off, lens[i]));
			CH_CHECK_EQ_INT(ch_crc32c(0x12345678u, big + off, lens[i]),
					ch_crc32c_sw(0x12345678u, big + off, lens[i]));
		}
	free(big);
}

static void
t_group_partition(void)
{
	/* Kafka: Utils.abs("...".hashCode()) % 50. */
	CH_CHECK_EQ_INT(ch_java_string_hash("grp", 3), 102629);
	CH_CHECK_EQ_INT(ch_group_partition("grp", 3, 50), 29);
	CH_CHECK_EQ_INT(ch_group_partition("my-group", 8, 50), 12);
	/* hashCode == Integer.MIN_VALUE: Utils.abs maps it to 0 */
	CH_CHECK_EQ_INT(ch_java_string_hash("polygenelubricants", 18), INT32_MIN);
	CH_CHECK_EQ_INT(ch_group_partition("polygenelubricants", 18, 50), 0);
	/* non-ASCII: Java hashes UTF-16 code units ("é" is U+00E9) */
	CH_CHECK_EQ_INT(ch_java_string_hash("\xc3\xa9", 2), 0xe9);
}

static void
t_uuid_base64(void)
{
	for (int i = 0; i < 100; i++) {
		ch_uuid u = ch_uuid_random(), v;
		char s[CH_UUID_STR_LEN + 1];
		ch_uuid_to_base64(&u, s);
		CH_CHECK_EQ_INT(strlen(s), 22);
		CH_CHECK(s[0] != '-');
		CH_CHECK(ch_uuid_from_base64(s, &v) == 0 && ch_uuid_eq(&u, &v));
	}
	ch_uuid v;
	CH_CHECK(ch_uuid_from_base64("not-a-uuid", &v) != 0);
	CH_CHECK(ch_uuid_from_base64("AAAAAAAAAAAAAAAAAAAAA!", &v) != 0);
}

typedef struct item {
	ch_heap_node node;
	int id;
} item;

static void
t_heap_order_and_moves(void)
{
	enum {
		N = 2000
	};
	ch_heap h;
	ch_heap_init(&h);
	item *it = calloc(N, sizeof(*it));
	uint64_t r = 12345;
	for (int i = 0; i < N; i++) {
		r = r * 6364136223846793005ull + 1442695040888963407ull;
		it[i].id = i;
		ch_heap_set(&h, &it[i].node, (int64_t)(r >> 40));
	}
	/* move half, remove a quarter */
	for (int i = 0; i < N; i += 2)
		ch_heap_set(&h, &it[i].node, it[i].node.deadline / 2);
	for (int i = 1; i < N; i += 4)
		ch_heap_remove(&h, &it[i].node);
	int64_t last = INT64_MIN;
	size_t popped = 0;
	for (ch_heap_node *n; (n = ch_heap_top(&h)); popped++) {
		CH_CHECK(n->deadline >= last);
		last = n->deadline;
		ch_heap_remove(&h, n);
	}
	CH_CHECK_EQ_INT(popped, N - N / 4);
	ch_heap_free(&h);
	free(it);
}

/* Equal deadlines pop in arm order, and a re-arm (even to the same
 * deadline) counts as a new arm: checked against a model that records each
 * node's last arm number. */
static void
t_heap_fifo_equal_deadlines(void)
{
	enum {
		N = 500
	};
	ch_heap h;
	ch_heap_init(&h);
	item *it = calloc(N, sizeof(*it));
	int64_t arm_no[N], deadline[N];
	int64_t arms = 0;
	uint64_t r = 99;
	for (int i = 0; i < 3 * N; i++) {
		r = r * 6364136223846793005ull + 1442695040888963407ull;
		int k = (int)((r >> 33) % N);
		deadline[k] = (int64_t)((r >> 20) % 5);
		arm_no[k] = ++arms;
		it[k].id = k;
		ch_heap_set(&h, &it[k].node, deadline[k]);
	}
	int64_t last_d = -1, last_arm = 0;
	size_t popped = 0;
	for (ch_heap_node *n; (n = ch_heap_top(&h)); popped++) {
		int k = ((item *)n)->id;
		CH_CHECK(deadline[k] > last_d || (deadline[k] == last_d && arm_no[k] > last_arm));
		last_d = deadline[k];
		last_arm = arm_no[k];
		ch_heap_remove(&h, n);
		CH_CHECK(!ch_heap_armed(n));
	}
	CH_CHECK(popped > 0);
	ch_heap_free(&h);
	free(it);
}

static void
t_map_insertion_order(void)
{
	ch_map m;
	ch_map_init(&m);
	char key[16];
	for (int i = 0; i < 1000; i++) {
		int n = snprintf(key, sizeof(key), "k%d", i);
		ch_map_put(&m, key, (size_t)n, (void *)(intptr_t)(i + 1));
	}
	for (int i = 0; i < 1000; i += 3) {
		int n = snprintf(key, sizeof(key), "k%d", i);
		CH_CHECK_EQ_INT((intptr_t)ch_map_remove(&m, key, (size_t)n), i + 1);
	}
	CH_CHECK_EQ_INT(m.n, 1000 - 334);
	intptr_t prev = 0;
	ch_map_foreach (&m, e) {
		CH_CHECK((intptr_t)e->value > prev); /* insertion order kept */
		prev = (intptr_t)e->value;
	}
	CH_CHECK(ch_map_get(&m, "k1", 2) == (void *)(intptr_t)2);
	CH_CHECK(ch_map_get(&m, "k0", 2) == NULL);
	ch_map_free(&m);
}

/* ---- ch_ratelog ------------------------------------------------------------ */

static int ratelog_firsts;

/* 1,500 failures over 25 s, one success, 3 more failures, a tick later. */
static void
ratelog_scenario(void *arg)
{
	(void)arg;
	ch_ratelog rl;
	ch_ratelog_init(&rl, "test", CH_LOG_ERROR, "appends to %s", "data/t-0");
	ratelog_firsts = 0;
	int64_t t = 1000;
	for (int i = 0; i < 1500; i++, t += 17)
		if (ch_ratelog_fail(&rl, t, "No space left on device"))
			ratelog_firsts++;
	CH_CHECK_EQ_INT(ch_ratelog_streak(&rl), 1500);
	ch_ratelog_ok(&rl, t);
	ch_ratelog_ok(&rl, t + 1); /* no streak: silent */
	CH_CHECK_EQ_INT(ch_ratelog_streak(&rl), 0);
	for (int i = 0; i < 3; i++)
		if (ch_ratelog_fail(&rl, t + 100 + i, "Input/output error"))
			ratelog_firsts++;
	ch_ratelog_tick(&rl, t + 200); /* too early */
	ch_ratelog_tick(&rl, t + 100 + CH_RATELOG_INTERVAL_MS);
	ch_ratelog_tick(&rl, t + 200 + CH_RATELOG_INTERVAL_MS); /* nothing left */
}

static void
t_ratelog(void)
{
	ch_log_level saved = ch_log_threshold;
	ch_log_threshold = CH_LOG_INFO;
	char *out = ch_test_capture_stderr(ratelog_scenario, NULL);
	ch_log_threshold = saved;
	/* the caller logs the first of each streak: two streaks */
	CH_CHECK_EQ_INT(ratelog_firsts, 2);
	/* 1500 * 17 ms = 25.5 s: summaries at >= 10 s and >= 20 s, then the
	 * recovery line with the total; the second streak's 2 in one tick */
	CH_CHECK_EQ_INT(ch_test_count(out, "\n"), 4);
	CH_CHECK_EQ_INT(ch_test_count(out, "ERROR [test] appends to data/t-0: "), 3);
	CH_CHECK_EQ_INT(ch_test_count(out, "INFO [test] appends to data/t-0: working again after "
					   "1500 failures in 25.5 s"),
			1);
	CH_CHECK_EQ_INT(
		ch_test_count(out, ": 2 more failures in the last 10.0 s (Input/output error)"), 1);
	/* 589 failures in each 10 s window after the first (17 ms apart); the
	 * 321 after the last summary are in the total only */
	CH_CHECK_EQ_INT(ch_test_count(out, ": 589 more failures in the last 10.0 s "
					   "(No space left on device)"),
			2);
	if (ch_test_failures_)
		fprintf(stderr, "captured:\n%s", out);
	free(out);
}

/* Joining the CRCs of two pieces gives the CRC of the whole, at every
 * split of buffers up to 70,000 bytes (past the hardware path's 3 x 8 KiB
 * blocks) and for an empty second piece. */
static void
t_crc32c_combine(void)
{
	static unsigned char buf[70000];
	uint32_t x = 2463534242u;
	for (size_t i = 0; i < sizeof(buf); i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		buf[i] = (unsigned char)x;
	}
	size_t lens[] = {0, 1, 7, 61, 1000, 8191, 24577, sizeof(buf)};
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
		size_t len = lens[li];
		uint32_t whole = ch_crc32c(0, buf, len);
		size_t splits[] = {0, 1, 21, 61, len / 3, len / 2, len > 0 ? len - 1 : 0, len};
		for (size_t si = 0; si < sizeof(splits) / sizeof(splits[0]); si++) {
			size_t a = splits[si] <= len ? splits[si] : len;
			uint32_t ca = ch_crc32c(0, buf, a), cb = ch_crc32c(0, buf + a, len - a);
			if (ch_crc32c_combine(ca, cb, len - a) != whole) {
				fprintf(stderr, "combine at %zu of %zu\n", a, len);
				CH_CHECK(!"crc32c_combine differs from the CRC of the whole");
			}
		}
	}
	CH_CHECK_EQ_INT(ch_crc32c_combine(0xe3069283u, 0, 0), 0xe3069283u);
}

CH_TEST_MAIN(CH_TEST(t_crc32c_vectors), CH_TEST(t_crc32c_fast_equals_tables),
	     CH_TEST(t_crc32c_combine), CH_TEST(t_group_partition), CH_TEST(t_uuid_base64),
	     CH_TEST(t_heap_order_and_moves), CH_TEST(t_heap_fifo_equal_deadlines),
	     CH_TEST(t_map_insertion_order), CH_TEST(t_ratelog))
