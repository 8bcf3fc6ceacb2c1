/*
 * libFuzzer target: the request path's decoding of untrusted bytes.
 *
 * The input is a Kafka request frame without its size prefix, exactly what
 * the framer hands to the api layer: the request header is parsed, and the
 * body decoded with the codec of that api key and version (for any key and
 * version the codec has, served or not), and also as a response body (the
 * client library decodes those). Every decode must end in success or a
 * clean error: ASan/UBSan turn any over-read or overflow into a crash.
 * A successful decode is re-encoded and decoded again, which must succeed.
 */
#include <stdint.h>
#include <stdlib.h>

#include "proto/ch_rd.h"
#include "proto/ch_wr.h"
#include "proto/generated/ch_msgs.h"

static void
decode_as(const ch_api_codec *c, int16_t v, bool request, const uint8_t *p, size_t n)
{
	ch_arena a;
	ch_arena_init(&a);
	a.limit = n * 16 + (1u << 20);
	size_t size = request ? c->req_size : c->resp_size;
	void *m = ch_arena_alloc(&a, size);
	ch_rd r;
	ch_rd_init(&r, p, n);
	ch_decode_fn dec = request ? c->req_decode : c->resp_decode;
	ch_encode_fn enc = request ? c->req_encode : c->resp_encode;
	if (m && dec(&r, &a, v, m) == 0) {
		ch_buf b;
		ch_buf_init(&b);
		enc(&b, v, m);
		void *m2 = ch_arena_alloc(&a, size);
		ch_rd r2;
		ch_rd_init(&r2, b.data, b.len);
		a.limit = 0;
		if (m2 && dec(&r2, &a, v, m2) != 0)
			abort(); /* what we encode, we must decode */
		ch_buf_free(&b);
	}
	ch_arena_reset(&a);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ch_rd r;
	ch_rd_init(&r, data, size);
	int16_t key = ch_rd_i16(&r);
	int16_t version = ch_rd_i16(&r);
	(void)ch_rd_i32(&r);
	const ch_api_codec *c = ch_api_codec_find(key);
	if (!ch_rd_ok(&r) || !c || version < c->min_version || version > c->max_version)
		return 0;
	bool flex = c->flex_version >= 0 && version >= c->flex_version;
	ch_rd_init(&r, data, size);
	ch_arena a;
	ch_arena_init(&a);
	ch_RequestHeader h;
	if (ch_RequestHeader_decode(&r, &a, flex ? 2 : 1, &h) == 0) {
		decode_as(c, version, true, r.p, ch_rd_left(&r));
		decode_as(c, version, false, r.p, ch_rd_left(&r));
	}
	ch_arena_reset(&a);
	return 0;
}
