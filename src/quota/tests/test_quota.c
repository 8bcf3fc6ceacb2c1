/* Client quotas: Kafka's precedence, shared rates, the throttle time, the
 * checks of AlterClientQuotas, describe filters and the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ch_test.h"
#include "proto/generated/ch_errors.h"
#include "quota/ch_quota.h"
#include "quota/ch_quota_store.h"

static ch_quota_entity
ent(ch_qpart u, const char *un, ch_qpart c, const char *cn)
{
	return (ch_quota_entity){
		.user = u, .client = c, .user_name = (char *)un, .client_name = (char *)cn};
}

static void
t_precedence_and_throttle(void)
{
	ch_quotas *q = ch_quotas_new();
	ch_quota_entity alice = ent(CH_QP_NAME, "alice", CH_QP_ABSENT, NULL);
	ch_quota_entity c1 = ent(CH_QP_ABSENT, NULL, CH_QP_NAME, "c1");
	ch_quotas_put(q, &alice, CH_QK_PRODUCER_BYTE_RATE, 1000, false);
	ch_quotas_put(q, &c1, CH_QK_PRODUCER_BYTE_RATE, 100, false);
	int64_t t = 1000000;
	/* alice's user quota (level 3) beats client c1's (level 7): 10,000
	 * bytes over the minimum 10 s window is exactly 1000/s. */
	CH_CHECK_EQ_INT(ch_quotas_record(q, CH_QK_PRODUCER_BYTE_RATE, "alice", "c1", 10000, t), 0);
	/* bob has no user quota: c1's 100/s; 2000 bytes is 200/s: throttled
	 * (200 - 100) / 100 x 10 s */
	CH_CHECK_EQ_INT(ch_quotas_record(q, CH_QK_PRODUCER_BYTE_RATE, "bob", "c1", 2000, t), 10000);
	/* alice's rate is shared by her clients: 2000 more through c2 makes
	 * 1200/s, throttled (1200 - 1000) / 1000 x 10 s */
	CH_CHECK_EQ_INT(ch_quotas_record(q, CH_QK_PRODUCER_BYTE_RATE, "alice", "c2", 2000, t),
			2000);
	/* another key has no quota */
	CH_CHECK_EQ_INT(ch_quotas_record(q, CH_QK_CONSUMER_BYTE_RATE, "alice", "c1", 1e9, t), 0);
	/* unrecord takes bytes back */
	ch_quotas_unrecord(q, CH_QK_PRODUCER_BYTE_RATE, "alice", "c2", 2000, t);
	CH_CHECK_EQ_INT(ch_quotas_record(q, CH_QK_PRODUCER_BYTE_RATE, "alice", "c2", 0, t), 0);
	/* all samples expire after 11 windows */
	t += CH_QUOTA_WINDOW_NUM * CH_QUOTA_WINDOW_MS;
	CH_CHECK_EQ_INT(ch_quotas_record(q, CH_QK_PRODUCER_BYTE_RATE, "bob", "c1", 1000, t), 0);
	/* defaults: <default> user applies to any user (level 6), and beats a
	 * client-id quota; user/<default> (level 2) beats the user alone */
	ch_quota_entity du = ent(CH_QP_DEFAULT, NULL, CH_QP_ABSENT, NULL);
	ch_quotas_put(q, &du, CH_QK_PRODUCER_BYTE_RATE, 500, false);
	CH_CHECK_EQ_INT(ch_quotas_record(q, CH_QK_PRODUCER_BYTE_RATE, "carol", "c1", 6000, t),
			2000); /* 600/s over 500/s */
	ch_quota_entity adc = ent(CH_QP_NAME, "alice", CH_QP_DEFAULT, NULL);
	ch_quotas_put(q, &adc, CH_QK_PRODUCER_BYTE_RATE, 10, false);
	CH_CHECK_EQ_INT(ch_quotas_record(q, CH_QK_PRODUCER_BYTE_RATE, "alice", "c9", 200, t),
			10000); /* 20/s over 10/s, its own rate (user, c9) */
	/* removing the last key of an entity drops it */
	ch_quotas_put(q, &adc, CH_QK_PRODUCER_BYTE_RATE, 0, true);
	int n = 0;
	while (ch_quotas_at(q, (size_t)n))
		n++;
	CH_CHECK_EQ_INT(n, 3);
	ch_quotas_free(q);
}

static void
t_check_key(void)
{
	ch_quota_key k;
	char msg[200];
	CH_CHECK_EQ_INT(
		ch_quota_check_key("producer_byte_rate", 1024, false, false, &k, msg, sizeof(msg)),
		0);
	CH_CHECK_EQ_INT(k, CH_QK_PRODUCER_BYTE_RATE);
	CH_CHECK_EQ_INT(ch_quota_check_key("bogus", 1, false, false, &k, msg, sizeof(msg)),
			CH_KERR_INVALID_REQUEST);
	CH_CHECK_EQ_STR(msg, "Invalid configuration key bogus");
	CH_CHECK_EQ_INT(
		ch_quota_check_key("consumer_byte_rate", 0, false, false, &k, msg, sizeof(msg)),
		CH_KERR_INVALID_REQUEST);
	CH_CHECK_EQ_STR(msg, "Quota consumer_byte_rate must be greater than 0");
	CH_CHECK_EQ_INT(
		ch_quota_check_key("consumer_byte_rate", 1.5, false, false, &k, msg, sizeof(msg)),
		CH_KERR_INVALID_REQUEST);
	CH_CHECK_EQ_STR(msg, "consumer_byte_rate cannot be a fractional value.");
	CH_CHECK_EQ_INT(
		ch_quota_check_key("request_percentage", 1.5, false, false, &k, msg, sizeof(msg)),
		0);
	CH_CHECK_EQ_INT(
		ch_quota_check_key("request_percentage", -1, true, false, &k, msg, sizeof(msg)), 0);
}

static void
t_filters(void)
{
	ch_quota_entity a = ent(CH_QP_NAME, "alice", CH_QP_ABSENT, NULL);
	ch_quota_entity ac = ent(CH_QP_NAME, "alice", CH_QP_NAME, "c1");
	ch_quota_entity d = ent(CH_QP_DEFAULT, NULL, CH_QP_ABSENT, NULL);
	ch_quota_filter exact = {.user = 1, .user_name = "alice"};
	CH_CHECK(ch_quota_matches(&a, &exact) && ch_quota_matches(&ac, &exact));
	CH_CHECK(!ch_quota_matches(&d, &exact));
	exact.strict = true;
	CH_CHECK(ch_quota_matches(&a, &exact) && !ch_quota_matches(&ac, &exact));
	ch_quota_filter def = {.user = 2};
	CH_CHECK(ch_quota_matches(&d, &def) && !ch_quota_matches(&a, &def));
	ch_quota_filter any = {.user = 3, .client = 3};
	CH_CHECK(ch_quota_matches(&ac, &any) && !ch_quota_matches(&a, &any));
	ch_quota_filter none = {.strict = false};
	CH_CHECK(ch_quota_matches(&a, &none) && ch_quota_matches(&d, &none));
}

/* q written to a new directory made from the mkdtemp template dir, and read
 * back into a new set. */
static ch_quotas *
save_and_load(const ch_quotas *q, char *dir)
{
	CH_CHECK(mkdtemp(dir) != NULL);
	char err[300];
	CH_CHECK_EQ_INT(ch_quotas_save(q, dir, err, sizeof(err)), 0);
	ch_quotas *r = ch_quotas_new();
	CH_CHECK_EQ_INT(ch_quotas_load(r, dir, err, sizeof(err)), 0);
	return r;
}

/* KIP-599's token bucket: burst = quota x 11 s, refill quota/s; strict
 * refuses only once the bucket is below zero, permissive never. */
static void
t_controller_mutation(void)
{
	ch_quotas *q = ch_quotas_new();
	ch_quota_entity c1 = ent(CH_QP_ABSENT, NULL, CH_QP_NAME, "c1");
	ch_quotas_put(q, &c1, CH_QK_CONTROLLER_MUTATION_RATE, 2, false);
	CH_CHECK(ch_quotas_apply(q, CH_QK_CONTROLLER_MUTATION_RATE, "u", "c1"));
	CH_CHECK(!ch_quotas_apply(q, CH_QK_CONTROLLER_MUTATION_RATE, "u", "c2"));
	int64_t t = 5000000, th;
	/* a full bucket of 22 takes 30: taken, 8 below zero */
	CH_CHECK(ch_quotas_mutate(q, "u", "c1", 30, true, t, &th));
	CH_CHECK_EQ_INT(th, 0);
	/* below zero: refused, 8 / 2 per s = 4 s to go */
	CH_CHECK(!ch_quotas_mutate(q, "u", "c1", 1, true, t, &th));
	CH_CHECK_EQ_INT(th, 4000);
	/* 1 s later 6 below: permissive takes 1 more and says 3.5 s */
	CH_CHECK(ch_quotas_mutate(q, "u", "c1", 1, false, t + 1000, &th));
	CH_CHECK_EQ_INT(th, 3500);
	/* 3.5 s later back at 0: strict takes again */
	CH_CHECK(ch_quotas_mutate(q, "u", "c1", 1, true, t + 4500, &th));
	CH_CHECK_EQ_INT(th, 0);
	/* another client id has no quota */
	CH_CHECK(ch_quotas_mutate(q, "u", "c2", 1e6, true, t, &th));
	CH_CHECK_EQ_INT(th, 0);
	/* request_percentage is a rate like the byte rates: 0.5 %-seconds
	 * over the 10 s window is 0.05 % against 0.01 %: (0.05 - 0.01) / 0.01
	 * x 10 s */
	ch_quotas_put(q, &c1, CH_QK_REQUEST_PERCENTAGE, 0.01, false);
	CH_CHECK_EQ_INT(ch_quotas_record(q, CH_QK_REQUEST_PERCENTAGE, "u", "c1", 0.5, t), 40000);
	ch_quotas_free(q);
}

/* KIP-612's per-IP connection rate: an address's own entity before the
 * default one, each address its own rate, a refused connection not
 * counted, the hold at most one window. */
static void
t_ip_quotas(void)
{
	ch_quotas *q = ch_quotas_new();
	ch_quota_entity dflt = {.ip = CH_QP_DEFAULT};
	ch_quota_entity own = {.ip = CH_QP_NAME, .ip_name = "127.0.0.2"};
	ch_quotas_put(q, &dflt, CH_QK_CONNECTION_CREATION_RATE, 1, false);
	ch_quotas_put(q, &own, CH_QK_CONNECTION_CREATION_RATE, 100, false);
	int64_t t = 7000000;
	/* 1/s over the 10 s window: ten connections fit, the 11th is held */
	for (int i = 0; i < 10; i++)
		CH_CHECK_EQ_INT(ch_quotas_connection(q, "127.0.0.1", t), 0);
	CH_CHECK_EQ_INT(ch_quotas_connection(q, "127.0.0.1", t), CH_QUOTA_WINDOW_MS);
	/* not counted: still the 11th next time */
	CH_CHECK_EQ_INT(ch_quotas_connection(q, "127.0.0.1", t), CH_QUOTA_WINDOW_MS);
	/* another address under the default has its own rate */
	CH_CHECK_EQ_INT(ch_quotas_connection(q, "127.0.0.3", t), 0);
	/* 127.0.0.2's own quota of 100/s */
	for (int i = 0; i < 50; i++)
		CH_CHECK_EQ_INT(ch_quotas_connection(q, "127.0.0.2", t), 0);
	/* the keys of each kind of entity */
	ch_quota_key k;
	char msg[200];
	CH_CHECK_EQ_INT(ch_quota_check_key("connection_creation_rate", 5, false, true, &k, msg,
					   sizeof(msg)),
			0);
	CH_CHECK_EQ_INT(k, CH_QK_CONNECTION_CREATION_RATE);
	CH_CHECK_EQ_INT(
		ch_quota_check_key("producer_byte_rate", 5, false, true, &k, msg, sizeof(msg)),
		CH_KERR_INVALID_REQUEST);
	CH_CHECK_EQ_STR(msg, "Invalid configuration key producer_byte_rate");
	CH_CHECK_EQ_INT(ch_quota_check_key("connection_creation_rate", 5, false, false, &k, msg,
					   sizeof(msg)),
			CH_KERR_INVALID_REQUEST);
	CH_CHECK_EQ_INT(ch_quota_check_key("connection_creation_rate", 2.5, false, true, &k, msg,
					   sizeof(msg)),
			CH_KERR_INVALID_REQUEST);
	CH_CHECK_EQ_STR(msg, "connection_creation_rate cannot be a fractional value.");
	CH_CHECK_EQ_INT(ch_quota_check_key("connection_creation_rate", 3e9, false, true, &k, msg,
					   sizeof(msg)),
			CH_KERR_INVALID_REQUEST);
	CH_CHECK_EQ_STR(msg,
			"Proposed value for connection_creation_rate is too large for an INT.");
	/* filters: an ip filter sees ip entities only */
	ch_quota_filter by_ip = {.ip = 3};
	ch_quota_entity user = ent(CH_QP_NAME, "alice", CH_QP_ABSENT, NULL);
	CH_CHECK(ch_quota_matches(&own, &by_ip) && ch_quota_matches(&dflt, &by_ip));
	CH_CHECK(!ch_quota_matches(&user, &by_ip));
	ch_quota_filter ip_default = {.ip = 2, .strict = true};
	CH_CHECK(ch_quota_matches(&dflt, &ip_default) && !ch_quota_matches(&own, &ip_default));
	/* and the file keeps them */
	char dir[] = "/tmp/cohort-quota-ip-XXXXXX";
	ch_quotas *r = save_and_load(q, dir);
	const ch_quota_entry *a = ch_quotas_at(r, 0), *b = ch_quotas_at(r, 1);
	CH_CHECK(a && b && !ch_quotas_at(r, 2));
	CH_CHECK(a->e.ip == CH_QP_DEFAULT && a->e.user == CH_QP_ABSENT &&
		 a->v[CH_QK_CONNECTION_CREATION_RATE] == 1);
	CH_CHECK(b->e.ip == CH_QP_NAME && strcmp(b->e.ip_name, "127.0.0.2") == 0 &&
		 b->v[CH_QK_CONNECTION_CREATION_RATE] == 100);
	ch_quotas_free(r);
	char path[300];
	snprintf(path, sizeof(path), "%s/client-quotas", dir);
	unlink(path);
	rmdir(dir);
	ch_quotas_free(q);
}

static void
t_store_round_trip(void)
{
	char dir[] = "/tmp/cohort-quota-XXXXXX";
	ch_quotas *q = ch_quotas_new();
	ch_quota_entity e1 = ent(CH_QP_NAME, "al ice", CH_QP_DEFAULT, NULL);
	ch_quota_entity e2 = ent(CH_QP_ABSENT, NULL, CH_QP_NAME, "c-1");
	ch_quotas_put(q, &e1, CH_QK_PRODUCER_BYTE_RATE, 1048576, false);
	ch_quotas_put(q, &e1, CH_QK_REQUEST_PERCENTAGE, 12.5, false);
	ch_quotas_put(q, &e2, CH_QK_CONSUMER_BYTE_RATE, 2000, false);
	char err[300];
	ch_quotas *r = save_and_load(q, dir);
	const ch_quota_entry *a = ch_quotas_at(r, 0), *b = ch_quotas_at(r, 1);
	CH_CHECK(a && b && !ch_quotas_at(r, 2));
	CH_CHECK(a->e.user == CH_QP_NAME && strcmp(a->e.user_name, "al ice") == 0 &&
		 a->e.client == CH_QP_DEFAULT);
	CH_CHECK(a->set[CH_QK_PRODUCER_BYTE_RATE] && a->v[CH_QK_PRODUCER_BYTE_RATE] == 1048576);
	CH_CHECK(a->set[CH_QK_REQUEST_PERCENTAGE] && a->v[CH_QK_REQUEST_PERCENTAGE] == 12.5);
	CH_CHECK(b->e.user == CH_QP_ABSENT && strcmp(b->e.client_name, "c-1") == 0 &&
		 b->v[CH_QK_CONSUMER_BYTE_RATE] == 2000);
	ch_quotas_free(r);
	/* a damaged line stops the load, naming the line */
	char path[300];
	snprintf(path, sizeof(path), "%s/client-quotas", dir);
	FILE *f = fopen(path, "a");
	fputs("x41 - producer_byte_rate lots\n", f);
	fclose(f);
	r = ch_quotas_new();
	CH_CHECK_EQ_INT(ch_quotas_load(r, dir, err, sizeof(err)), -1);
	CH_CHECK(strstr(err, "client-quotas:5: not a client quota line") != NULL);
	ch_quotas_free(r);
	ch_quotas_free(q);
	unlink(path);
	rmdir(dir);
}

CH_TEST_MAIN(CH_TEST(t_precedence_and_throttle), CH_TEST(t_check_key), CH_TEST(t_filters),
	     CH_TEST(t_controller_mutation), CH_TEST(t_ip_quotas), CH_TEST(t_store_round_trip))
