/* The reader and writer primitives, and decoding of hand-made byte strings. */
#include "common/ch_common.h"
#include "common/ch_test.h"
#include "proto/ch_rd.h"
#include "proto/ch_wr.h"
#include "proto/generated/ch_errors.h"
#include "proto/generated/ch_msgs.h"

static void
t_varints(void)
{
	static const int64_t vals[] = {0,   1,    -1,        63,        -64,       64,
				       300, -300, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
	for (size_t i = 0; i < CH_ARRAY_LEN(vals); i++) {
		ch_buf b;
		ch_buf_init(&b);
		ch_wr_varlong(&b, vals[i]);
		if (vals[i] >= INT32_MIN && vals[i] <= INT32_MAX)
			ch_wr_varint(&b, (int32_t)vals[i]);
		ch_rd r;
		ch_rd_init(&r, b.data, b.len);
		CH_CHECK_EQ_INT(ch_rd_varlong(&r), vals[i]);
		if (vals[i] >= INT32_MIN && vals[i] <= INT32_MAX)
			CH_CHECK_EQ_INT(ch_rd_varint(&r), vals[i]);
		CH_CHECK(ch_rd_ok(&r) && ch_rd_left(&r) == 0);
		ch_buf_free(&b);
	}
	/* Known encodings (Kafka's ByteUtils tests): 300 -> ac 02 as uvarint. */
	ch_buf b;
	ch_buf_init(&b);
	ch_wr_uvarint(&b, 300);
	CH_CHECK(b.len == 2 && b.data[0] == 0xac && b.data[1] == 0x02);
	ch_buf_free(&b);
	/* A uvarint with too many continuation bytes is invalid, not a crash. */
	static const uint8_t bad[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	ch_rd r;
	ch_rd_init(&r, bad, sizeof(bad));
	(void)ch_rd_uvarint(&r);
	CH_CHECK_EQ_INT(r.err, CH_RD_EINVAL);
}

static void
t_sticky_errors(void)
{
	static const uint8_t two[] = {0x00, 0x05};
	ch_rd r;
	ch_rd_init(&r, two, sizeof(two));
	CH_CHECK_EQ_INT(ch_rd_i32(&r), 0);
	CH_CHECK_EQ_INT(r.err, CH_RD_ESHORT);
	CH_CHECK_EQ_INT(ch_rd_i16(&r), 0); /* sticky: still failing */
	CH_CHECK_EQ_INT(ch_rd_left(&r), 0);
}

static void
t_strings(void)
{
	/* classic string "ab", null string, compact "ab", compact null */
	static const uint8_t in[] = {0, 2, 'a', 'b', 0xff, 0xff, 3, 'a', 'b', 0};
	ch_rd r;
	ch_rd_init(&r, in, sizeof(in));
	ch_str s = ch_rd_str(&r, false);
	CH_CHECK(ch_str_eq_c(s, "ab"));
	CH_CHECK(ch_str_is_null(ch_rd_str(&r, false)));
	CH_CHECK(ch_str_eq_c(ch_rd_str(&r, true), "ab"));
	CH_CHECK(ch_str_is_null(ch_rd_str(&r, true)));
	CH_CHECK(ch_rd_ok(&r));
	/* length past the end */
	static const uint8_t longer[] = {0, 9, 'a'};
	ch_rd_init(&r, longer, sizeof(longer));
	(void)ch_rd_str(&r, false);
	CH_CHECK_EQ_INT(r.err, CH_RD_ESHORT);
	/* negative length other than -1 */
	static const uint8_t neg[] = {0xff, 0xfe};
	ch_rd_init(&r, neg, sizeof(neg));
	(void)ch_rd_str(&r, false);
	CH_CHECK_EQ_INT(r.err, CH_RD_EINVAL);
}

static void
t_array_count_capped(void)
{
	/* A huge array count must be rejected before anything is allocated. */
	static const uint8_t in[] = {0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1};
	ch_rd r;
	ch_rd_init(&r, in, sizeof(in));
	CH_CHECK_EQ_INT(ch_rd_array_len(&r, false, 4), 0);
	CH_CHECK_EQ_INT(r.err, CH_RD_ELIMIT);
	/* Under Kafka's 1,000,000 but more than the bytes left could hold. */
	static const uint8_t short_in[] = {0, 0x0f, 0x42, 0x40, 0, 0, 0, 1};
	ch_rd_init(&r, short_in, sizeof(short_in));
	CH_CHECK_EQ_INT(ch_rd_array_len(&r, false, 4), 0);
	CH_CHECK_EQ_INT(r.err, CH_RD_ESHORT);
	/* Metadata v1 request claiming 2^31-1 topics */
	ch_arena a;
	ch_arena_init(&a);
	ch_MetadataRequest m;
	ch_rd_init(&r, in, sizeof(in));
	CH_CHECK(ch_MetadataRequest_decode(&r, &a, 1, &m) != 0);
	CH_CHECK(a.total == 0);
	ch_arena_reset(&a);
}

static void
t_non_nullable_null_rejected(void)
{
	/* FindCoordinator v0: Key is a non-nullable string; -1 length is invalid. */
	static const uint8_t in[] = {0xff, 0xff};
	ch_rd r;
	ch_rd_init(&r, in, sizeof(in));
	ch_arena a;
	ch_arena_init(&a);
	ch_FindCoordinatorRequest m;
	CH_CHECK(ch_FindCoordinatorRequest_decode(&r, &a, 0, &m) != 0);
	CH_CHECK_EQ_INT(r.err, CH_RD_EINVAL);
	ch_arena_reset(&a);
}

static void
t_unknown_tags_skipped(void)
{
	/* Heartbeat v4 (flexible): group "g", generation 7, member "m", instance
	 * null, then a tag section with one unknown tag (99) of 3 bytes. */
	static const uint8_t in[] = {2, 'g', 0, 0, 0, 7, 2, 'm', 0, 1, 99, 3, 1, 2, 3};
	ch_rd r;
	ch_rd_init(&r, in, sizeof(in));
	ch_arena a;
	ch_arena_init(&a);
	ch_HeartbeatRequest m;
	CH_CHECK_EQ_INT(ch_HeartbeatRequest_decode(&r, &a, 4, &m), 0);
	CH_CHECK(ch_str_eq_c(m.GroupId, "g"));
	CH_CHECK_EQ_INT(m.GenerationId, 7);
	CH_CHECK(ch_str_eq_c(m.MemberId, "m"));
	CH_CHECK(ch_str_is_null(m.GroupInstanceId));
	CH_CHECK_EQ_INT(ch_rd_left(&r), 0);
	ch_arena_reset(&a);
}

/* Kafka 4.4's limits: an array of more than 1,000,000 elements and a tagged
 * section of more than 10,000 fields fail with CH_RD_ELIMIT before any
 * allocation, however many bytes follow; the limits themselves pass. */
static void
t_decoder_limits(void)
{
	ch_buf b;
	ch_buf_init(&b);
	ch_wr_i32(&b, CH_RD_MAX_ARRAY_LEN + 1);
	ch_rd r;
	ch_rd_init(&r, b.data, b.len);
	CH_CHECK_EQ_INT(ch_rd_array_len(&r, false, 0), 0);
	CH_CHECK_EQ_INT(r.err, CH_RD_ELIMIT);
	ch_buf_reset(&b);
	ch_wr_uvarint(&b, CH_RD_MAX_ARRAY_LEN + 2); /* compact: count + 1 */
	ch_rd_init(&r, b.data, b.len);
	CH_CHECK_EQ_INT(ch_rd_array_len(&r, true, 0), 0);
	CH_CHECK_EQ_INT(r.err, CH_RD_ELIMIT);
	ch_buf_reset(&b);
	ch_wr_uvarint(&b, CH_RD_MAX_ARRAY_LEN + 1); /* exactly the limit */
	ch_rd_init(&r, b.data, b.len);
	CH_CHECK_EQ_INT(ch_rd_array_len(&r, true, 0), CH_RD_MAX_ARRAY_LEN);
	CH_CHECK(ch_rd_ok(&r));

	/* Tagged sections: 10,000 empty fields decode, 10,001 do not. */
	for (uint32_t n = CH_RD_MAX_TAGGED_FIELDS; n <= CH_RD_MAX_TAGGED_FIELDS + 1; n++) {
		ch_buf_reset(&b);
		ch_wr_uvarint(&b, n);
		for (uint32_t i = 0; i < n; i++) {
			ch_wr_uvarint(&b, 100 + i); /* unknown tags */
			ch_wr_uvarint(&b, 0);
		}
		ch_rd_init(&r, b.data, b.len);
		ch_rd_skip_tags(&r);
		CH_CHECK_EQ_INT(r.err, n > CH_RD_MAX_TAGGED_FIELDS ? CH_RD_ELIMIT : CH_RD_OK);
		/* The same section ending a Heartbeat v4 body (generated decoder). */
		static const uint8_t body[] = {2, 'g', 0, 0, 0, 7, 2, 'm', 0};
		ch_buf m;
		ch_buf_init(&m);
		ch_buf_append(&m, body, sizeof(body));
		ch_buf_append(&m, b.data, b.len);
		ch_rd_init(&r, m.data, m.len);
		ch_arena a;
		ch_arena_init(&a);
		ch_HeartbeatRequest hb;
		int rc = ch_HeartbeatRequest_decode(&r, &a, 4, &hb);
		CH_CHECK_EQ_INT(rc != 0, n > CH_RD_MAX_TAGGED_FIELDS);
		CH_CHECK_EQ_INT(r.err, n > CH_RD_MAX_TAGGED_FIELDS ? CH_RD_ELIMIT : CH_RD_OK);
		ch_arena_reset(&a);
		ch_buf_free(&m);
	}
	ch_buf_free(&b);
}

static void
t_defaults(void)
{
	ch_JoinGroupRequest j;
	ch_JoinGroupRequest_init(&j);
	CH_CHECK_EQ_INT(j.RebalanceTimeoutMs, -1);
	CH_CHECK(ch_str_is_null(j.GroupInstanceId));
	ch_MetadataRequest m;
	ch_MetadataRequest_init(&m);
	CH_CHECK(m.AllowAutoTopicCreation == true);
	/* JoinGroup v0 has no RebalanceTimeoutMs: decoding v0 keeps the default. */
	static const uint8_t in[] = {0,   1,   'g', 0,   0,   0x75, 0x30, 0, 0, 0, 8, 'c',
				     'o', 'n', 's', 'u', 'm', 'e',  'r',  0, 0, 0, 0};
	ch_rd r;
	ch_rd_init(&r, in, sizeof(in));
	ch_arena a;
	ch_arena_init(&a);
	CH_CHECK_EQ_INT(ch_JoinGroupRequest_decode(&r, &a, 0, &j), 0);
	CH_CHECK_EQ_INT(j.SessionTimeoutMs, 30000);
	CH_CHECK_EQ_INT(j.RebalanceTimeoutMs, -1);
	CH_CHECK(ch_str_eq_c(j.ProtocolType, "consumer"));
	CH_CHECK_EQ_INT(j.Protocols_n, 0);
	ch_arena_reset(&a);
}

static void
t_errors_table(void)
{
	CH_CHECK_EQ_STR(ch_kerr_name(25), "UNKNOWN_MEMBER_ID");
	CH_CHECK_EQ_INT(CH_KERR_REBALANCE_IN_PROGRESS, 27);
	CH_CHECK(ch_kerr_retriable(CH_KERR_NOT_COORDINATOR));
	CH_CHECK(!ch_kerr_retriable(CH_KERR_ILLEGAL_GENERATION));
	CH_CHECK_EQ_STR(ch_kerr_name(-12345), "UNKNOWN");
}

CH_TEST_MAIN(CH_TEST(t_varints), CH_TEST(t_sticky_errors), CH_TEST(t_strings),
	     CH_TEST(t_array_count_capped), CH_TEST(t_non_nullable_null_rejected),
	     CH_TEST(t_unknown_tags_skipped), CH_TEST(t_decoder_limits), CH_TEST(t_defaults),
	     CH_TEST(t_errors_table))
