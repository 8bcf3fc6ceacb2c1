/*
 * test_producer_state.c: idempotent-producer state on its own, in virtual
 * time (headers made by hand, the clock an argument): expiry after
 * producer.id.expiration.ms of a producer's last batch timestamp, the
 * lookup with many producers, and the config key (Kafka's name, default
 * and lower bound).
 */
#include "common/ch_test.h"

#include <string.h>

#include "broker/ch_producer_state.h"
#include "config/ch_config.h"
#include "proto/generated/ch_errors.h"

/* The header of a batch of n records of producer pid/epoch from seq, at
 * offset base, whose max timestamp is ts. */
static ch_batch_hdr
hdr(int64_t pid, int16_t epoch, int32_t seq, int n, int64_t base, int64_t ts)
{
	ch_batch_hdr h;
	memset(&h, 0, sizeof(h));
	h.producer_id = pid;
	h.producer_epoch = epoch;
	h.base_sequence = seq;
	h.last_offset_delta = n - 1;
	h.records_count = n;
	h.base_offset = base;
	h.base_timestamp = ts;
	h.max_timestamp = ts;
	return h;
}

static void
t_expiry(void)
{
	enum {
		EXP = 60000
	};
	const int64_t t0 = 1700000000000;
	ch_producer_state ps;
	ch_producer_state_init(&ps);
	ch_producer_batch dup;
	ch_batch_hdr a = hdr(7, 0, 0, 3, 0, t0);
	ch_producer_state_update(&ps, &a);
	ch_batch_hdr b = hdr(8, 0, 0, 1, 3, t0 + 1000);
	ch_producer_state_update(&ps, &b);
	CH_CHECK_EQ_INT(ch_producer_state_count(&ps), 2);
	/* known: a gap is refused, a retry is a duplicate */
	ch_batch_hdr gap = hdr(7, 0, 9, 1, -1, t0);
	CH_CHECK_EQ_INT(ch_producer_state_check(&ps, &gap, &dup),
			CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
	CH_CHECK_EQ_INT(ch_producer_state_check(&ps, &a, &dup), CH_PRODUCER_DUPLICATE);
	/* one ms short of the expiration: kept */
	CH_CHECK_EQ_INT(ch_producer_state_expire(&ps, t0 + EXP - 1, EXP), 0);
	CH_CHECK_EQ_INT(ch_producer_state_count(&ps), 2);
	/* exactly the expiration after its last batch (Kafka's >=): 7 goes, 8
	 * (one second younger) stays */
	CH_CHECK_EQ_INT(ch_producer_state_expire(&ps, t0 + EXP, EXP), 1);
	CH_CHECK_EQ_INT(ch_producer_state_count(&ps), 1);
	/* forgotten: accepted at any sequence, no longer a duplicate */
	CH_CHECK_EQ_INT(ch_producer_state_check(&ps, &gap, &dup), 0);
	CH_CHECK_EQ_INT(ch_producer_state_check(&ps, &a, &dup), 0);
	ch_batch_hdr b_gap = hdr(8, 0, 5, 1, -1, t0);
	CH_CHECK_EQ_INT(ch_producer_state_check(&ps, &b_gap, &dup),
			CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER);
	/* a new batch renews a producer's time */
	ch_batch_hdr b2 = hdr(8, 0, 1, 1, 4, t0 + EXP + 500);
	ch_producer_state_update(&ps, &b2);
	CH_CHECK_EQ_INT(ch_producer_state_expire(&ps, t0 + 1000 + EXP, EXP), 0);
	CH_CHECK_EQ_INT(ch_producer_state_expire(&ps, t0 + 2 * EXP + 500, EXP), 1);
	CH_CHECK_EQ_INT(ch_producer_state_count(&ps), 0);
	/* a wild client timestamp neither overflows nor keeps a producer */
	ch_batch_hdr w = hdr(9, 0, 0, 1, 5, INT64_MIN);
	ch_producer_state_update(&ps, &w);
	CH_CHECK_EQ_INT(ch_producer_state_expire(&ps, t0, EXP), 1);
	ch_producer_state_free(&ps);
}

/* Many producers: each is found (its own state), none is confused with
 * another. */
static void
t_many_producers(void)
{
	enum {
		N = 20000
	};
	ch_producer_state ps;
	ch_producer_state_init(&ps);
	for (int64_t i = 0; i < N; i++) {
		ch_batch_hdr h = hdr(1000 + i * 7919, (int16_t)(i % 3), (int32_t)i, 2, 2 * i, 1);
		ch_producer_state_update(&ps, &h);
	}
	CH_CHECK_EQ_INT(ch_producer_state_count(&ps), N);
	int dups = 0, next_ok = 0;
	for (int64_t i = 0; i < N; i++) {
		ch_producer_batch dup;
		ch_batch_hdr h = hdr(1000 + i * 7919, (int16_t)(i % 3), (int32_t)i, 2, -1, 1);
		if (ch_producer_state_check(&ps, &h, &dup) == CH_PRODUCER_DUPLICATE &&
		    dup.base_offset == 2 * i)
			dups++;
		ch_batch_hdr nx = hdr(1000 + i * 7919, (int16_t)(i % 3), (int32_t)i + 2, 1, -1, 1);
		if (ch_producer_state_check(&ps, &nx, &dup) == 0)
			next_ok++;
	}
	CH_CHECK_EQ_INT(dups, N);
	CH_CHECK_EQ_INT(next_ok, N);
	ch_producer_state_free(&ps);
}

static void
t_config_key(void)
{
	struct ch_config c;
	char err[512];
	ch_config_init(&c);
	CH_CHECK_EQ_INT(c.producer_id_expiration_ms, 86400000);
	CH_CHECK(ch_config_set(&c, "producer.id.expiration.ms", "0", NULL, err, sizeof(err)) ==
		 CH_ERR);
	CH_CHECK(strstr(err, "producer.id.expiration.ms") != NULL);
	CH_CHECK(ch_config_set(&c, "producer.id.expiration.ms", "3000000000", NULL, err,
			       sizeof(err)) == CH_ERR);
	CH_CHECK(ch_config_set(&c, "producer.id.expiration.ms", "1", NULL, err, sizeof(err)) ==
		 CH_OK);
	CH_CHECK(ch_config_finish(&c, err, sizeof(err)) == CH_OK);
	CH_CHECK_EQ_INT(c.producer_id_expiration_ms, 1);
	CH_CHECK(ch_config_is_dynamic("producer.id.expiration.ms")); /* Kafka: KIP-854 */
	ch_config_free(&c);
}

CH_TEST_MAIN(CH_TEST(t_expiry), CH_TEST(t_many_producers), CH_TEST(t_config_key))
