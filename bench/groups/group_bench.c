/*
 * group_bench.c: consumer-group scenarios with real librdkafka consumers, run
 * against cohortd and against librdkafka's mock cluster (rdkafka_mock.h) in
 * the same run; prints one table with the ratio mock / cohortd (> 1: cohortd
 * is faster).
 *
 *   group_bench -b COHORTD_HOST:PORT [-n BIG] [-s SESSION_MS] [-H HEARTBEAT_MS]
 *
 * Scenarios (times are wall clock, from the first action to the moment every
 * partition is assigned exactly once and every consumer owns at least one):
 *   join-10 / join-BIG   that many consumers subscribe at once to a new group
 *   +1 join              one consumer joins a stable group of 10
 *   -1 leave             one consumer of 11 closes (LeaveGroup)
 *   static restart       a static member (group.instance.id) of 10 is closed
 *                        and a new process with the same instance id starts;
 *                        also counts the rebalances the others saw
 *   unowned eager/coop   during "+1 join", the mean and max time each of the
 *                        old members owned no partition (range = eager,
 *                        cooperative-sticky = incremental)
 * Every consumer uses the same client configuration on both targets.
 */
#define _GNU_SOURCE
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXC 512
#define SCEN_TIMEOUT_MS 90000

static int session_ms = 6000, heartbeat_ms = 500, big = 100;

static double
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

typedef struct consumer {
	rd_kafka_t *rk;
	int nparts;         /* partitions currently owned */
	int *owned;         /* partition -> 1 */
	double empty_since; /* when the assignment became empty (0: not empty) */
	double empty_total; /* time spent empty after having owned something */
	int had_any, revokes, assigns;
	int closing;
} consumer;

typedef struct target {
	const char *name;
	char bootstrap[256];
	rd_kafka_mock_cluster_t *mock;
	rd_kafka_t *admin;
} target;

static int topic_parts;

static void
rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
	     void *opaque)
{
	consumer *c = opaque;
	/* NULL while the consumer closes (no protocol any more) */
	const char *proto = rd_kafka_rebalance_protocol(rk);
	int coop = proto && !strcmp(proto, "COOPERATIVE");
	double t = now_ms();
	if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
		if (coop) {
			rd_kafka_error_t *e = rd_kafka_incremental_assign(rk, parts);
			if (e)
				rd_kafka_error_destroy(e);
		} else {
			rd_kafka_assign(rk, parts);
		}
		for (int i = 0; i < parts->cnt; i++)
			if (!c->owned[parts->elems[i].partition]) {
				c->owned[parts->elems[i].partition] = 1;
				c->nparts++;
			}
		c->assigns++;
	} else {
		if (coop) {
			rd_kafka_error_t *e = rd_kafka_incremental_unassign(rk, parts);
			if (e)
				rd_kafka_error_destroy(e);
		} else {
			rd_kafka_assign(rk, NULL);
		}
		for (int i = 0; i < parts->cnt; i++)
			if (c->owned[parts->elems[i].partition]) {
				c->owned[parts->elems[i].partition] = 0;
				c->nparts--;
			}
		c->revokes++;
	}
	if (c->nparts == 0 && c->had_any && c->empty_since == 0)
		c->empty_since = t;
	if (c->nparts > 0) {
		if (c->empty_since > 0)
			c->empty_total += t - c->empty_since;
		c->empty_since = 0;
		c->had_any = 1;
	}
}

static consumer *
consumer_new(target *tg, const char *group, const char *topic, const char *assignor,
	     const char *instance)
{
	char err[512], num[32];
	consumer *c = calloc(1, sizeof(*c));
	c->owned = calloc((size_t)topic_parts + 1, sizeof(int));
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
#define SET(k, v)                                                                                  \
	if (rd_kafka_conf_set(conf, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK) {                 \
		fprintf(stderr, "%s\n", err);                                                      \
		exit(1);                                                                           \
	}
	SET("bootstrap.servers", tg->bootstrap);
	SET("group.id", group);
	SET("partition.assignment.strategy", assignor);
	snprintf(num, sizeof(num), "%d", session_ms);
	SET("session.timeout.ms", num);
	snprintf(num, sizeof(num), "%d", heartbeat_ms);
	SET("heartbeat.interval.ms", num);
	SET("enable.auto.commit", "false");
	SET("log_level", "3");
	if (instance)
		SET("group.instance.id", instance);
	rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
	rd_kafka_conf_set_opaque(conf, c);
	c->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
	if (!c->rk) {
		fprintf(stderr, "rd_kafka_new: %s\n", err);
		exit(1);
	}
	rd_kafka_poll_set_consumer(c->rk);
	rd_kafka_topic_partition_list_t *s = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(s, topic, RD_KAFKA_PARTITION_UA);
	rd_kafka_subscribe(c->rk, s);
	rd_kafka_topic_partition_list_destroy(s);
	return c;
}

static void *
close_thread(void *arg)
{
	consumer *c = arg;
	rd_kafka_consumer_close(c->rk);
	return NULL;
}

/* Destroy without LeaveGroup (the group is abandoned; a fast teardown). */
static void
consumer_drop(consumer *c)
{
	if (c->rk)
		rd_kafka_destroy_flags(c->rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
	free(c->owned);
	free(c);
}

static void *
drop_thread(void *arg)
{
	consumer *c = arg;
	if (!c->closing)
		rd_kafka_consumer_close(c->rk);
	rd_kafka_destroy(c->rk);
	c->rk = NULL;
	return NULL;
}

/* Close (LeaveGroup) and destroy n consumers in parallel: each close serves
 * its own rebalance callbacks, so none waits on a consumer no one polls. */
static void
drop_all(consumer **cs, int n)
{
	pthread_t th[MAXC];
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, drop_thread, cs[i]);
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		consumer_drop(cs[i]);
	}
}

static void
poll_all(consumer **cs, int n)
{
	for (int i = 0; i < n; i++) {
		if (!cs[i] || cs[i]->closing)
			continue;
		rd_kafka_message_t *m;
		while ((m = rd_kafka_consumer_poll(cs[i]->rk, 0)))
			rd_kafka_message_destroy(m);
	}
}

static int
covered(consumer **cs, int n)
{
	static int seen[4096];
	memset(seen, 0, sizeof(seen));
	int total = 0;
	for (int i = 0; i < n; i++) {
		if (!cs[i] || cs[i]->closing)
			continue;
		if (cs[i]->nparts == 0)
			return 0;
		for (int p = 0; p < topic_parts; p++)
			if (cs[i]->owned[p]) {
				if (seen[p]++)
					return 0;
				total++;
			}
	}
	return total == topic_parts;
}

/* Poll until covered; returns ms since t0, or -1 on timeout. */
static double
wait_covered(consumer **cs, int n, double t0)
{
	for (;;) {
		poll_all(cs, n);
		if (covered(cs, n))
			return now_ms() - t0;
		if (now_ms() - t0 > SCEN_TIMEOUT_MS)
			return -1;
		usleep(1000);
	}
}

static void
create_topic(target *tg, const char *topic, int parts)
{
	if (tg->mock) {
		rd_kafka_mock_topic_create(tg->mock, topic, parts, 1);
		return;
	}
	char err[256];
	rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, parts, 1, err, sizeof(err));
	rd_kafka_queue_t *q = rd_kafka_queue_new(tg->admin);
	rd_kafka_CreateTopics(tg->admin, &nt, 1, NULL, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
	if (ev)
		rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_NewTopic_destroy(nt);
}

enum {
	R_JOIN10,
	R_JOINBIG,
	R_PLUS1,
	R_MINUS1,
	R_STATIC,
	R_STATIC_REB,
	R_UNOWNED_EAGER_MEAN,
	R_UNOWNED_EAGER_MAX,
	R_UNOWNED_COOP_MEAN,
	R_UNOWNED_COOP_MAX,
	R_PLUS1_COOP,
	R_N
};
static const char *row_names[R_N] = {
	"stable group, 10 join at once (ms)",
	"stable group, BIG join at once (ms)",
	"+1 consumer joins a group of 10, eager (ms)",
	"-1 consumer leaves a group of 11, eager (ms)",
	"static member restart, group of 10 (ms)",
	"  rebalances the other 9 saw (count)",
	"+1 join, eager: mean ms an old member owned nothing",
	"+1 join, eager: max ms an old member owned nothing",
	"+1 join, coop-sticky: mean ms an old member owned nothing",
	"+1 join, coop-sticky: max ms an old member owned nothing",
	"+1 consumer joins a group of 10, coop-sticky (ms)",
};
static double results[2][R_N];

static void
unowned_stats(consumer **cs, int n, double *mean, double *max)
{
	double sum = 0, mx = 0, t = now_ms();
	for (int i = 0; i < n; i++) {
		double e =
			cs[i]->empty_total + (cs[i]->empty_since > 0 ? t - cs[i]->empty_since : 0);
		sum += e;
		if (e > mx)
			mx = e;
	}
	*mean = n ? sum / n : 0;
	*max = mx;
}

static void
reset_unowned(consumer **cs, int n)
{
	for (int i = 0; i < n; i++) {
		cs[i]->empty_total = 0;
		cs[i]->empty_since = 0;
	}
}

static void
run_target(target *tg, int ti, int seq)
{
	consumer *cs[MAXC];
	char group[128], topic[128];
	double t0;
	fprintf(stderr, "[%s] running scenarios...\n", tg->name);

	/* 10 at once, then +1, then -1 (range: eager) */
	snprintf(topic, sizeof(topic), "gb-%d-eager", seq);
	snprintf(group, sizeof(group), "gb-%d-eager", seq);
	topic_parts = 22;
	create_topic(tg, topic, topic_parts);
	t0 = now_ms();
	for (int i = 0; i < 10; i++)
		cs[i] = consumer_new(tg, group, topic, "range", NULL);
	results[ti][R_JOIN10] = wait_covered(cs, 10, t0);
	reset_unowned(cs, 10);
	t0 = now_ms();
	cs[10] = consumer_new(tg, group, topic, "range", NULL);
	results[ti][R_PLUS1] = wait_covered(cs, 11, t0);
	unowned_stats(cs, 10, &results[ti][R_UNOWNED_EAGER_MEAN],
		      &results[ti][R_UNOWNED_EAGER_MAX]);
	t0 = now_ms();
	cs[0]->closing = 1;
	pthread_t th;
	pthread_create(&th, NULL, close_thread, cs[0]);
	results[ti][R_MINUS1] = wait_covered(cs, 11, t0);
	pthread_join(th, NULL);
	drop_all(cs, 11);

	/* cooperative-sticky: 10, then +1 */
	snprintf(topic, sizeof(topic), "gb-%d-coop", seq);
	snprintf(group, sizeof(group), "gb-%d-coop", seq);
	create_topic(tg, topic, topic_parts);
	for (int i = 0; i < 10; i++)
		cs[i] = consumer_new(tg, group, topic, "cooperative-sticky", NULL);
	wait_covered(cs, 10, now_ms());
	reset_unowned(cs, 10);
	t0 = now_ms();
	cs[10] = consumer_new(tg, group, topic, "cooperative-sticky", NULL);
	results[ti][R_PLUS1_COOP] = wait_covered(cs, 11, t0);
	unowned_stats(cs, 10, &results[ti][R_UNOWNED_COOP_MEAN], &results[ti][R_UNOWNED_COOP_MAX]);
	drop_all(cs, 11);

	/* static membership: 10 static members, one restarts */
	snprintf(topic, sizeof(topic), "gb-%d-static", seq);
	snprintf(group, sizeof(group), "gb-%d-static", seq);
	topic_parts = 20;
	create_topic(tg, topic, topic_parts);
	char inst[10][32];
	for (int i = 0; i < 10; i++) {
		snprintf(inst[i], sizeof(inst[i]), "static-%d", i);
		cs[i] = consumer_new(tg, group, topic, "range", inst[i]);
	}
	wait_covered(cs, 10, now_ms());
	int reb_before = 0;
	for (int i = 1; i < 10; i++)
		reb_before += cs[i]->revokes + cs[i]->assigns;
	t0 = now_ms();
	rd_kafka_consumer_close(cs[0]->rk); /* static: no LeaveGroup */
	consumer_drop(cs[0]);
	cs[0] = consumer_new(tg, group, topic, "range", inst[0]);
	results[ti][R_STATIC] = wait_covered(cs, 10, t0);
	/* a rebalance wrongly started would reach the others within a heartbeat */
	double settle = now_ms();
	while (now_ms() - settle < 2 * heartbeat_ms + 200) {
		poll_all(cs, 10);
		usleep(2000);
	}
	int reb_after = 0;
	for (int i = 1; i < 10; i++)
		reb_after += cs[i]->revokes + cs[i]->assigns;
	results[ti][R_STATIC_REB] = reb_after - reb_before;
	drop_all(cs, 10);

	/* BIG at once */
	snprintf(topic, sizeof(topic), "gb-%d-big", seq);
	snprintf(group, sizeof(group), "gb-%d-big", seq);
	topic_parts = big * 2 > 4000 ? 4000 : big * 2;
	create_topic(tg, topic, topic_parts);
	t0 = now_ms();
	for (int i = 0; i < big; i++)
		cs[i] = consumer_new(tg, group, topic, "range", NULL);
	results[ti][R_JOINBIG] = wait_covered(cs, big, t0);
	drop_all(cs, big);
}

int
main(int argc, char **argv)
{
	const char *cohortd = NULL;
	int c;
	while ((c = getopt(argc, argv, "b:n:s:H:")) != -1) {
		switch (c) {
		case 'b':
			cohortd = optarg;
			break;
		case 'n':
			big = atoi(optarg);
			break;
		case 's':
			session_ms = atoi(optarg);
			break;
		case 'H':
			heartbeat_ms = atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	if (!cohortd || big < 1 || big > MAXC) {
		fprintf(stderr,
			"usage: group_bench -b COHORTD_HOST:PORT [-n BIG<=%d] [-s SESSION_MS] [-H "
			"HB_MS]\n",
			MAXC);
		return 2;
	}
	char err[512];
	target tgs[2] = {{.name = "cohortd"}, {.name = "mock"}};
	snprintf(tgs[0].bootstrap, sizeof(tgs[0].bootstrap), "%s", cohortd);
	rd_kafka_conf_t *ac = rd_kafka_conf_new();
	rd_kafka_conf_set(ac, "bootstrap.servers", cohortd, err, sizeof(err));
	tgs[0].admin = rd_kafka_new(RD_KAFKA_PRODUCER, ac, err, sizeof(err));

	rd_kafka_conf_t *mc = rd_kafka_conf_new();
	rd_kafka_conf_set(mc, "log_level", "3", err, sizeof(err));
	rd_kafka_t *mrk = rd_kafka_new(RD_KAFKA_PRODUCER, mc, err, sizeof(err));
	tgs[1].mock = rd_kafka_mock_cluster_new(mrk, 1);
	snprintf(tgs[1].bootstrap, sizeof(tgs[1].bootstrap), "%s",
		 rd_kafka_mock_cluster_bootstraps(tgs[1].mock));

	run_target(&tgs[0], 0, 1);
	run_target(&tgs[1], 1, 1);

	printf("\nconsumer groups with librdkafka %s consumers (session.timeout.ms=%d, "
	       "heartbeat.interval.ms=%d); -1 = did not stabilise within %d s\n",
	       rd_kafka_version_str(), session_ms, heartbeat_ms, SCEN_TIMEOUT_MS / 1000);
	printf("%-58s %10s %10s %8s\n", "scenario", "cohortd", "mock", "mock/co");
	for (int r = 0; r < R_N; r++) {
		char name[128];
		snprintf(name, sizeof(name), "%s", row_names[r]);
		char *b = strstr(name, "BIG");
		if (b) {
			char tmp[sizeof(name) + 16];
			*b = 0;
			snprintf(tmp, sizeof(tmp), "%s%d%s", name, big, b + 3);
			snprintf(name, sizeof(name), "%s", tmp);
		}
		double a = results[0][r], m = results[1][r];
		char ratio[16] = "-";
		if (a > 0 && m > 0)
			snprintf(ratio, sizeof(ratio), "%.1fx", m / a);
		printf("%-58s %10.0f %10.0f %8s\n", name, a, m, ratio);
	}
	fflush(stdout);
	rd_kafka_destroy(tgs[0].admin);
	rd_kafka_mock_cluster_destroy(tgs[1].mock);
	rd_kafka_destroy(mrk);
	return 0;
}
