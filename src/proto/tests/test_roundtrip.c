/*
 * Round trip of every generated message at every version it has:
 * random fill -> encode -> decode (must consume every byte) -> encode again
 * -> the two encodings are identical. Also: every truncation of a valid
 * encoding fails to decode cleanly (no crash, no read past the end).
 */
#include <stdlib.h>

#include "common/ch_test.h"
#include "proto/generated/ch_api_keys.h"
#include "proto/generated/ch_msgs.h"

#define SEEDS 40

static int versions_checked;

static void
t_roundtrip_all(void)
{
	for (size_t i = 0; i < ch_msg_fillers_n; i++) {
		const ch_msg_filler *f = &ch_msg_fillers[i];
		for (int v = f->min_version; v <= f->max_version; v++) {
			versions_checked++;
			for (uint64_t seed = 1; seed <= SEEDS; seed++) {
				ch_arena a;
				ch_arena_init(&a);
				void *m = ch_arena_alloc(&a, f->size);
				void *m2 = ch_arena_alloc(&a, f->size);
				uint64_t rng = seed * 7919 + (uint64_t)v * 104729 + i;
				f->fill(&a, (int16_t)v, &rng, m);
				ch_buf b1, b2;
				ch_buf_init(&b1);
				ch_buf_init(&b2);
				f->encode(&b1, (int16_t)v, m);
				ch_rd r;
				ch_rd_init(&r, b1.data, b1.len);
				int rc = f->decode(&r, &a, (int16_t)v, m2);
				if (rc != 0 || ch_rd_left(&r) != 0) {
					fprintf(stderr,
						"%s v%d seed %llu: decode rc=%d err=%d left=%zu\n",
						f->name, v, (unsigned long long)seed, rc, r.err,
						ch_rd_left(&r));
					CH_CHECK(0);
				} else {
					f->encode(&b2, (int16_t)v, m2);
					if (b1.len != b2.len ||
					    (b1.len && memcmp(b1.data, b2.data, b1.len) != 0)) {
						fprintf(stderr,
							"%s v%d seed %llu: re-encode differs\n",
							f->name, v, (unsigned long long)seed);
						CH_CHECK(0);
					}
				}
				/* Every strict prefix must fail cleanly (ASan checks no over-read). */
				if (seed <= 3) {
					for (size_t cut = 0; cut < b1.len; cut++) {
						ch_arena a2;
						ch_arena_init(&a2);
						void *m3 = ch_arena_alloc(&a2, f->size);
						ch_rd r2;
						ch_rd_init(&r2, b1.data, cut);
						int rc2 = f->decode(&r2, &a2, (int16_t)v, m3);
						/* Every read is mandatory, so a strict prefix
						 * always runs out inside some field. */
						if (rc2 == 0) {
							fprintf(stderr,
								"%s v%d: prefix %zu/%zu decoded\n",
								f->name, v, cut, b1.len);
							CH_CHECK(0);
						}
						ch_arena_reset(&a2);
					}
				}
				ch_buf_free(&b1);
				ch_buf_free(&b2);
				ch_arena_reset(&a);
			}
		}
	}
	CH_CHECK(versions_checked > 300);
	printf("round-tripped %d (message, version) pairs x %d seeds\n", versions_checked, SEEDS);
}

static void
t_api_table(void)
{
	/* Every API the issue lists has a codec with the expected ranges. */
	const ch_api_codec *c = ch_api_codec_find(CH_APIKEY_API_VERSIONS);
	CH_CHECK(c && strcmp(c->name, "ApiVersions") == 0);
	CH_CHECK(c && c->min_version == 0 && c->max_version == 4 && c->flex_version == 3);
	c = ch_api_codec_find(CH_APIKEY_METADATA);
	CH_CHECK(c && c->max_version == 12 && c->flex_version == 9);
	c = ch_api_codec_find(CH_APIKEY_JOIN_GROUP);
	CH_CHECK(c && c->max_version == 9 && c->flex_version == 6);
	c = ch_api_codec_find(44); /* IncrementalAlterConfigs */
	CH_CHECK(c && c->max_version == 1 && c->flex_version == 1);
	c = ch_api_codec_find(21); /* DeleteRecords */
	CH_CHECK(c && c->max_version == 2 && c->flex_version == 2);
	CH_CHECK(ch_api_codec_find(9999) == NULL);
	CH_CHECK_EQ_INT(ch_api_codecs_n, 36);
}

CH_TEST_MAIN(CH_TEST(t_roundtrip_all), CH_TEST(t_api_table))
