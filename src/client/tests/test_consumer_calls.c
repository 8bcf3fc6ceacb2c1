/*
 * Consumer calls that need no broker (its bootstrap address refuses
 * connections): cohort_wakeup (Java's KafkaConsumer.wakeup): a poll blocked
 * forever in one thread returns COHORT_ERR__WAKEUP when another thread
 * calls it, and a wakeup with no poll blocked makes the next poll return
 * it, once; and the argument and state checks of cohort_assign, pause and
 * the seeks.
 */
#include <pthread.h>
#include <unistd.h>

#include "cohort/cohort.h"
#include "common/ch_test.h"

static cohort_consumer *
consumer(void)
{
	cohort_conf *conf = cohort_conf_new();
	CH_CHECK(cohort_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", NULL, 0) == COHORT_OK);
	char err[256];
	cohort_consumer *c = cohort_consumer_new(conf, err, sizeof(err));
	cohort_conf_free(conf);
	CH_CHECK(c != NULL);
	return c;
}

static void *
wake_later(void *ud)
{
	usleep(200 * 1000); /* let the poll block first; its outcome does not depend on it */
	cohort_wakeup(ud);
	return NULL;
}

static void
t_wakeup_blocked_poll(void)
{
	cohort_consumer *c = consumer();
	pthread_t t;
	pthread_create(&t, NULL, wake_later, c);
	const cohort_record *recs;
	size_t n = 99;
	CH_CHECK_EQ_INT(cohort_poll(c, -1, &recs, &n), COHORT_ERR__WAKEUP);
	CH_CHECK_EQ_INT(n, 0);
	pthread_join(t, NULL);
	/* raised once: the next poll times out normally */
	CH_CHECK_EQ_INT(cohort_poll(c, 50, &recs, &n), COHORT_OK);
	CH_CHECK_EQ_INT(n, 0);
	cohort_consumer_free(c);
}

static void
t_wakeup_before_poll(void)
{
	cohort_consumer *c = consumer();
	cohort_wakeup(c);
	const cohort_record *recs;
	size_t n;
	CH_CHECK_EQ_INT(cohort_poll(c, -1, &recs, &n), COHORT_ERR__WAKEUP);
	CH_CHECK_EQ_INT(cohort_poll(c, 0, &recs, &n), COHORT_OK);
	CH_CHECK_EQ_STR(cohort_err_name(COHORT_ERR__WAKEUP), "_WAKEUP");
	CH_CHECK(!cohort_err_is_fatal(COHORT_ERR__WAKEUP));
	cohort_consumer_free(c);
}

/* Argument checks of the manual-assignment calls, which need no broker. */
static void
t_assign_args(void)
{
	cohort_consumer *c = consumer();
	cohort_tp bad[] = {{"", 0}}, neg[] = {{"t", -1}}, ok[] = {{"t", 0}, {"t", 1}},
		  other[] = {{"u", 0}};
	CH_CHECK_EQ_INT(cohort_assign(c, bad, 1), COHORT_ERR__INVALID_ARG);
	CH_CHECK_EQ_INT(cohort_assign(c, neg, 1), COHORT_ERR__INVALID_ARG);
	CH_CHECK_EQ_INT(cohort_assign(c, ok, 2), COHORT_OK);
	cohort_tp *tps;
	size_t n;
	CH_CHECK_EQ_INT(cohort_assignment(c, &tps, &n), COHORT_OK);
	CH_CHECK_EQ_INT(n, 2);
	free(tps);
	int64_t pos = 7;
	CH_CHECK_EQ_INT(cohort_position(c, "t", 1, &pos), COHORT_OK);
	CH_CHECK_EQ_INT(pos, -1); /* looked up once the broker answers */
	CH_CHECK_EQ_INT(cohort_pause(c, other, 1), COHORT_ERR__UNKNOWN_PARTITION);
	CH_CHECK_EQ_INT(cohort_pause(c, ok, 1), COHORT_OK);
	CH_CHECK_EQ_INT(cohort_paused(c, &tps, &n), COHORT_OK);
	CH_CHECK_EQ_INT(n, 1);
	CH_CHECK(n == 1 && tps[0].partition == 0 && strcmp(tps[0].topic, "t") == 0);
	free(tps);
	CH_CHECK_EQ_INT(cohort_seek_to_end(c, other, 1), COHORT_ERR__UNKNOWN_PARTITION);
	CH_CHECK_EQ_INT(cohort_seek_to_timestamp(c, ok, 1, -5), COHORT_ERR__INVALID_ARG);
	/* the assignment shrinks: t-0 leaves, and with it its paused state */
	CH_CHECK_EQ_INT(cohort_assign(c, ok + 1, 1), COHORT_OK);
	CH_CHECK_EQ_INT(cohort_paused(c, &tps, &n), COHORT_OK);
	CH_CHECK_EQ_INT(n, 0);
	free(tps);
	/* subscribe needs group.id; with a manual assignment it is refused anyway */
	const char *topics[] = {"t"};
	CH_CHECK_EQ_INT(cohort_subscribe(c, topics, 1), COHORT_ERR__STATE);
	CH_CHECK_EQ_INT(cohort_assign(c, NULL, 0), COHORT_OK);
	CH_CHECK_EQ_INT(cohort_assignment(c, &tps, &n), COHORT_OK);
	CH_CHECK_EQ_INT(n, 0);
	free(tps);
	cohort_consumer_free(c);
}

/* A pattern that does not compile is refused with regcomp's reason; a
 * subscription (pattern or list) and a manual assignment exclude each other
 * until cohort_unsubscribe. */
static void
t_pattern_args(void)
{
	cohort_conf *conf = cohort_conf_new();
	CH_CHECK(cohort_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", NULL, 0) == COHORT_OK);
	CH_CHECK(cohort_conf_set(conf, "group.id", "g", NULL, 0) == COHORT_OK);
	cohort_consumer *c = cohort_consumer_new(conf, NULL, 0);
	cohort_conf_free(conf);
	char err[256] = "";
	CH_CHECK_EQ_INT(cohort_subscribe_pattern(c, "t-(", err, sizeof(err)),
			COHORT_ERR__INVALID_ARG);
	CH_CHECK(strncmp(err, "pattern t-(: ", 13) == 0);
	CH_CHECK_EQ_INT(cohort_subscribe_pattern(c, "", err, sizeof(err)), COHORT_ERR__INVALID_ARG);
	CH_CHECK_EQ_INT(cohort_subscribe_pattern(c, "t-.*", err, sizeof(err)), COHORT_OK);
	cohort_tp tp = {"t-1", 0};
	CH_CHECK_EQ_INT(cohort_assign(c, &tp, 1), COHORT_ERR__STATE);
	/* unsubscribe (no coordinator here: nothing to leave) frees the handle
	 * for a manual assignment, and ends that one too */
	CH_CHECK_EQ_INT(cohort_unsubscribe(c), COHORT_OK);
	CH_CHECK_EQ_INT(cohort_assign(c, &tp, 1), COHORT_OK);
	const char *topics[] = {"t-1"};
	CH_CHECK_EQ_INT(cohort_subscribe(c, topics, 1), COHORT_ERR__STATE);
	CH_CHECK_EQ_INT(cohort_unsubscribe(c), COHORT_OK);
	cohort_tp *tps;
	size_t n;
	CH_CHECK_EQ_INT(cohort_assignment(c, &tps, &n), COHORT_OK);
	CH_CHECK_EQ_INT(n, 0);
	free(tps);
	CH_CHECK_EQ_INT(cohort_subscribe(c, topics, 1), COHORT_OK);
	CH_CHECK_EQ_INT(cohort_consumer_close(c), COHORT_OK);
	CH_CHECK_EQ_INT(cohort_unsubscribe(c), COHORT_ERR__CLOSED);
	cohort_consumer_free(c);
}

/* ConsumerConfig's rule: with a group.id, the keys of the other protocol
 * are refused by name (Java's ConfigException words). */
static void
t_protocol_keys(void)
{
	static const struct {
		const char *protocol, *key, *value, *expect;
	} cases[] = {
		{"consumer", "session.timeout.ms", "10000",
		 "session.timeout.ms cannot be set when group.protocol=CONSUMER"},
		{"consumer", "partition.assignment.strategy", "range",
		 "partition.assignment.strategy cannot be set when group.protocol=CONSUMER"},
		{"CONSUMER", "heartbeat.interval.ms", "100",
		 "heartbeat.interval.ms cannot be set when group.protocol=CONSUMER"},
		{"classic", "group.remote.assignor", "uniform",
		 "group.remote.assignor cannot be set when group.protocol=CLASSIC"},
		{"consumer", "group.remote.assignor", "uniform", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cohort_conf *conf = cohort_conf_new();
		CH_CHECK(cohort_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", NULL, 0) == 0);
		CH_CHECK(cohort_conf_set(conf, "group.id", "g", NULL, 0) == 0);
		CH_CHECK(cohort_conf_set(conf, "group.protocol", cases[i].protocol, NULL, 0) == 0);
		CH_CHECK(cohort_conf_set(conf, cases[i].key, cases[i].value, NULL, 0) == 0);
		char err[256] = "", got[32];
		size_t need;
		CH_CHECK(cohort_conf_get(conf, "group.protocol", got, sizeof(got), &need) == 0);
		CH_CHECK_EQ_STR(got, cases[i].protocol[1] == 'l' ? "classic" : "consumer");
		cohort_consumer *c = cohort_consumer_new(conf, err, sizeof(err));
		cohort_conf_free(conf);
		if (cases[i].expect) {
			CH_CHECK(c == NULL);
			CH_CHECK_EQ_STR(err, cases[i].expect);
		} else {
			CH_CHECK(c != NULL);
		}
		cohort_consumer_free(c);
	}
}

CH_TEST_MAIN(CH_TEST(t_protocol_keys), CH_TEST(t_wakeup_blocked_poll),
	     CH_TEST(t_wakeup_before_poll), CH_TEST(t_assign_args), CH_TEST(t_pattern_args))
