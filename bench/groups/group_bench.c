/*
 * group_bench.c: consumer-group scenarios with real librdkafka consumers
 * against one target: a broker (cohortd or Apache Kafka) or librdkafka's mock
 * cluster (rdkafka_mock.h). It prints one line per figure,
 *
 *   ROW<TAB>target<TAB>row name<TAB>value
 *
 * and bench/groups/table.py puts the lines of several targets side by side
 * with ratios (run.sh runs every target in one run).
 *
 *   group_bench (-b HOST:PORT | -M) -T NAME [-J] [-O eager|coop|static]
 *               [-L LABEL] [-n BIG] [-s SESSION_MS] [-H HEARTBEAT_MS]
 *
 * -M: the mock instead of a broker; -J: only the join-at-once scenarios (run
 * against brokers started with another initial rebalance delay); -O: only
 * that group of scenarios (for a trace: GROUP_BENCH_DEBUG=cgrp sets the
 * consumers' librdkafka debug contexts); -L: the text after "join at once"
 * in those rows (the broker's initial delay).
 *
 * Scenarios (times are wall clock, from the first action to the moment every
 * partition is owned exactly once and every live consumer owns at least one):
 *   join at once     10 and BIG consumers subscribe to a new group at once;
 *                    also the most rebalances one member went through after
 *                    its first assignment
 *   +1 / -1 / crash  one consumer joins a stable group, one closes
 *                    (LeaveGroup), one is destroyed without LeaveGroup (its
 *                    partitions wait for its session timeout); eager (range,
 *                    group of 10) and cooperative-sticky (group of 20):
 *                    partitions whose owner changed, the longest time an old
 *                    member owned nothing, the longest time a partition had
 *                    no owner, the most rebalance callbacks an old member saw
 *   static restart   a static member (group.instance.id) of 10 is closed and
 *                    a new process with the same instance id starts; the
 *                    rebalance callbacks the other 9 saw
 * Every consumer uses the same client configuration on every target.
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

#define MAXC 1100
#define MAXP 4096
#define SCEN_TIMEOUT_MS 90000

static int session_ms = 6000, heartbeat_ms = 500, big = 100;
static const char *target_name = "?";
static char bootstrap[256];
static rd_kafka_mock_cluster_t *mock;
static rd_kafka_t *admin;

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
	double empty_max;   /* longest time empty after having owned something */
	int had_any, callbacks, assigns;
	int closing;
} consumer;

/* Rebalance callbacks run on the polling thread and, while a consumer closes,
 * on its closing thread: the shared partition state is behind this lock. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int topic_parts;
static int part_owners[MAXP];           /* consumers owning each partition now */
static double part_unowned_since[MAXP]; /* 0: owned, or never owned */
static double part_unowned_max;         /* longest gap in this scenario */

static void
part_lost(int p, double t)
{
	if (--part_owners[p] == 0)
		part_unowned_since[p] = t;
}

static void
part_gained(int p, double t)
{
	if (part_owners[p]++ == 0 && part_unowned_since[p] > 0) {
		double gap = t - part_unowned_since[p];
		if (gap > part_unowned_max)
			part_unowned_max = gap;
		part_unowned_since[p] = 0;
	}
}

static void
rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
	     void *opaque)
{
	consumer *c = opaque;
	/* NULL while the consumer closes (no protocol any more) */
	const char *proto = rd_kafka_rebalance_protocol(rk);
	int coop = proto && !strcmp(proto, "COOPERATIVE");
	int assign = err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS;
	if (assign && coop) {
		rd_kafka_error_t *e = rd_kafka_incremental_assign(rk, parts);
		if (e)
			rd_kafka_error_destroy(e);
	} else if (assign) {
		rd_kafka_assign(rk, parts);
	} else if (coop) {
		rd_kafka_error_t *e = rd_kafka_incremental_unassign(rk, parts);
		if (e)
			rd_kafka_error_destroy(e);
	} else {
		rd_kafka_assign(rk, NULL);
	}
	pthread_mutex_lock(&mu);
	double t = now_ms();
	for (int i = 0; i < parts->cnt; i++) {
		int p = parts->elems[i].partition;
		if (p < 0 || p >= topic_parts || c->owned[p] == assign)
			continue;
		c->owned[p] = assign;
		c->nparts += assign ? 1 : -1;
		if (assign)
			part_gained(p, t);
		else
			part_lost(p, t);
	}
	c->callbacks++;
	c->assigns += assign;
	if (c->nparts == 0 && c->had_any && c->empty_since == 0)
		c->empty_since = t;
	if (c->nparts > 0) {
		if (c->empty_since > 0 && t - c->empty_since > c->empty_max)
			c->empty_max = t - c->empty_since;
		c->empty_since = 0;
		c->had_any = 1;
	}
	pthread_mutex_unlock(&mu);
}

static consumer *
consumer_new(const char *group, const char *topic, const char *assignor, const char *instance)
{
	char err[512], num[32];
	consumer *c = calloc(1, sizeof(*c));
	c->owned = calloc(MAXP, sizeof(int));
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
#define SET(k, v)                                                                                  \
	if (rd_kafka_conf_set(conf, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK) {                 \
		fprintf(stderr, "%s\n", err);                                                      \
		exit(1);                                                                           \
	}
	SET("bootstrap.servers", bootstrap);
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
	if (getenv("GROUP_BENCH_DEBUG"))
		SET("debug", getenv("GROUP_BENCH_DEBUG"));
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
	static pthread_t th[MAXC];
	for (int i = 0; i < n; i++)
		if (cs[i])
			pthread_create(&th[i], NULL, drop_thread, cs[i]);
	for (int i = 0; i < n; i++)
		if (cs[i]) {
			pthread_join(th[i], NULL);
			consumer_drop(cs[i]);
			cs[i] = NULL;
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
	static int seen[MAXP];
	memset(seen, 0, sizeof(seen));
	int total = 0, ok = 1;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < n && ok; i++) {
		if (!cs[i] || cs[i]->closing)
			continue;
		if (cs[i]->nparts == 0)
			ok = 0;
		for (int p = 0; p < topic_parts && ok; p++)
			if (cs[i]->owned[p]) {
				if (seen[p]++)
					ok = 0;
				total++;
			}
	}
	pthread_mutex_unlock(&mu);
	return ok && total == topic_parts;
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
create_topic(const char *topic, int parts)
{
	if (mock) {
		rd_kafka_mock_topic_create(mock, topic, parts, 1);
		return;
	}
	char err[256];
	rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, parts, 1, err, sizeof(err));
	rd_kafka_queue_t *q = rd_kafka_queue_new(admin);
	rd_kafka_CreateTopics(admin, &nt, 1, NULL, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
	if (ev)
		rd_kafka_event_destroy(ev);
	rd_kafka_queue_destroy(q);
	rd_kafka_NewTopic_destroy(nt);
}

/* A new topic and a fresh per-partition record for the next scenario. */
static void
scenario_topic(const char *topic, int parts)
{
	topic_parts = parts;
	memset(part_owners, 0, sizeof(part_owners));
	memset(part_unowned_since, 0, sizeof(part_unowned_since));
	create_topic(topic, parts);
}

static void
row(const char *name, double v)
{
	printf("ROW\t%s\t%s\t%.0f\n", target_name, name, v);
	fflush(stdout);
}

/* Keeps polling for two heartbeat intervals: a rebalance wrongly started
 * would reach the members within one. */
static void
settle(consumer **cs, int n)
{
	double t = now_ms();
	while (now_ms() - t < 2 * heartbeat_ms + 200) {
		poll_all(cs, n);
		usleep(2000);
	}
}

/* The owner (consumer index) of every partition, -1 for none. */
static void
owners(consumer **cs, int n, int *out)
{
	pthread_mutex_lock(&mu);
	for (int p = 0; p < topic_parts; p++)
		out[p] = -1;
	for (int i = 0; i < n; i++)
		if (cs[i] && !cs[i]->closing)
			for (int p = 0; p < topic_parts; p++)
				if (cs[i]->owned[p])
					out[p] = i;
	pthread_mutex_unlock(&mu);
}

typedef struct baseline {
	int owner[MAXP];
	int callbacks[MAXC];
} baseline;

/* Before a change to a stable group of n: who owns what, and the counters
 * the change is measured against. */
static void
mark(consumer **cs, int n, baseline *b)
{
	owners(cs, n, b->owner);
	pthread_mutex_lock(&mu);
	part_unowned_max = 0;
	for (int i = 0; i < n; i++) {
		b->callbacks[i] = cs[i]->callbacks;
		cs[i]->empty_max = 0;
		cs[i]->empty_since = 0;
	}
	pthread_mutex_unlock(&mu);
}

/* The rows of one change: time to stable, partitions moved, the longest time
 * an old member owned nothing and a partition had no owner, the most
 * rebalance callbacks an old member saw. old[] names the old members that
 * stay (their indexes below n). */
static void
report_change(const char *what, consumer **cs, int n, const baseline *b, const int *old, int n_old,
	      double ms)
{
	char name[160];
	int after[MAXP], moved = 0, cb_max = 0;
	double empty_max = 0, t = now_ms();
	settle(cs, n);
	owners(cs, n, after);
	pthread_mutex_lock(&mu);
	for (int p = 0; p < topic_parts; p++)
		moved += after[p] != b->owner[p];
	for (int k = 0; k < n_old; k++) {
		consumer *c = cs[old[k]];
		double e = c->empty_max;
		if (c->empty_since > 0 && c->empty_since < t && t - c->empty_since > e)
			e = t - c->empty_since;
		if (e > empty_max)
			empty_max = e;
		if (c->callbacks - b->callbacks[old[k]] > cb_max)
			cb_max = c->callbacks - b->callbacks[old[k]];
	}
	double unowned = part_unowned_max;
	pthread_mutex_unlock(&mu);
	snprintf(name, sizeof(name), "%s: time to stable (ms)", what);
	row(name, ms);
	snprintf(name, sizeof(name), "%s: partitions moved", what);
	row(name, moved);
	snprintf(name, sizeof(name), "%s: max ms an old member owned nothing", what);
	row(name, empty_max);
	snprintf(name, sizeof(name), "%s: max ms a partition had no owner", what);
	row(name, unowned);
	snprintf(name, sizeof(name), "%s: max rebalance callbacks of an old member", what);
	row(name, cb_max);
}

/* n consumers subscribe to a new group at once: time to stable and the most
 * rebalances one member went through after its first assignment. */
static void
join_at_once(int seq, int n, const char *label)
{
	static consumer *cs[MAXC];
	char group[128], topic[128], name[160];
	snprintf(topic, sizeof(topic), "gb-%d-join%d", seq, n);
	snprintf(group, sizeof(group), "gb-%d-join%d", seq, n);
	scenario_topic(topic, n * 2 > MAXP ? MAXP : n * 2);
	double t0 = now_ms();
	for (int i = 0; i < n; i++)
		cs[i] = consumer_new(group, topic, "range", NULL);
	double ms = wait_covered(cs, n, t0);
	settle(cs, n);
	int extra = 0;
	for (int i = 0; i < n; i++)
		if (cs[i]->assigns - 1 > extra)
			extra = cs[i]->assigns - 1;
	snprintf(name, sizeof(name), "%d join at once%s: time to stable (ms)", n, label);
	row(name, ms);
	snprintf(name, sizeof(name), "%d join at once%s: most rebalances after a member's first", n,
		 label);
	row(name, extra);
	drop_all(cs, n);
}

/* A stable group of n: +1 join, -1 leave (LeaveGroup), a crash (no
 * LeaveGroup: the session timeout). */
static void
changes(int seq, const char *assignor, const char *tag, int n)
{
	static consumer *cs[MAXC];
	static baseline b;
	int old[MAXC];
	char group[128], topic[128], what[96];
	snprintf(topic, sizeof(topic), "gb-%d-%s", seq, tag);
	snprintf(group, sizeof(group), "gb-%d-%s", seq, tag);
	scenario_topic(topic, 2 * n + 2);
	for (int i = 0; i < n; i++)
		cs[i] = consumer_new(group, topic, assignor, NULL);
	wait_covered(cs, n, now_ms());
	settle(cs, n);

	/* +1: old members 0..n-1 */
	for (int i = 0; i < n; i++)
		old[i] = i;
	mark(cs, n, &b);
	double t0 = now_ms();
	cs[n] = consumer_new(group, topic, assignor, NULL);
	double ms = wait_covered(cs, n + 1, t0);
	snprintf(what, sizeof(what), "+1 joins a group of %d, %s", n, tag);
	report_change(what, cs, n + 1, &b, old, n, ms);

	/* -1: consumer 0 closes; old members 1..n */
	for (int i = 0; i < n; i++)
		old[i] = i + 1;
	mark(cs, n + 1, &b);
	t0 = now_ms();
	cs[0]->closing = 1;
	pthread_t th;
	pthread_create(&th, NULL, close_thread, cs[0]);
	ms = wait_covered(cs, n + 1, t0);
	snprintf(what, sizeof(what), "-1 leaves a group of %d, %s", n + 1, tag);
	report_change(what, cs, n + 1, &b, old, n, ms);
	pthread_join(th, NULL);

	/* crash: consumer 1 is destroyed without LeaveGroup; old members 2..n */
	for (int i = 0; i < n - 1; i++)
		old[i] = i + 2;
	mark(cs, n + 1, &b);
	t0 = now_ms();
	pthread_mutex_lock(&mu);
	for (int p = 0; p < topic_parts; p++)
		if (cs[1]->owned[p])
			part_lost(p, t0);
	pthread_mutex_unlock(&mu);
	consumer *gone = cs[1];
	cs[1] = NULL;
	consumer_drop(gone);
	ms = wait_covered(cs, n + 1, t0);
	snprintf(what, sizeof(what), "crash (no LeaveGroup) in a group of %d, %s", n, tag);
	report_change(what, cs, n + 1, &b, old, n - 1, ms);
	drop_all(cs, n + 1);
}

/* 10 static members, one restarts with the same instance id. */
static void
static_restart(int seq)
{
	consumer *cs[10];
	char group[128], topic[128], inst[10][32];
	snprintf(topic, sizeof(topic), "gb-%d-static", seq);
	snprintf(group, sizeof(group), "gb-%d-static", seq);
	scenario_topic(topic, 20);
	for (int i = 0; i < 10; i++) {
		snprintf(inst[i], sizeof(inst[i]), "static-%d", i);
		cs[i] = consumer_new(group, topic, "range", inst[i]);
	}
	wait_covered(cs, 10, now_ms());
	settle(cs, 10);
	int before = 0;
	for (int i = 1; i < 10; i++)
		before += cs[i]->callbacks;
	double t0 = now_ms();
	rd_kafka_consumer_close(cs[0]->rk); /* static: no LeaveGroup */
	consumer_drop(cs[0]);
	cs[0] = consumer_new(group, topic, "range", inst[0]);
	double ms = wait_covered(cs, 10, t0);
	settle(cs, 10);
	int after = 0;
	for (int i = 1; i < 10; i++)
		after += cs[i]->callbacks;
	row("static member restart, group of 10: time to stable (ms)", ms);
	row("static member restart, group of 10: rebalance callbacks the other 9 saw",
	    after - before);
	drop_all(cs, 10);
}

/* One consumer in a group of its own, so that the first scenario does not
 * pay for creating __consumer_offsets. */
static void
warm_up(int seq)
{
	consumer *cs[1];
	char name[64];
	snprintf(name, sizeof(name), "gb-%d-warmup", seq);
	scenario_topic(name, 1);
	cs[0] = consumer_new(name, name, "range", NULL);
	wait_covered(cs, 1, now_ms());
	drop_all(cs, 1);
}

int
main(int argc, char **argv)
{
	const char *broker = NULL, *label = "", *only = NULL;
	int c, use_mock = 0, joins_only = 0;
	while ((c = getopt(argc, argv, "b:MT:JO:L:n:s:H:")) != -1) {
		switch (c) {
		case 'b':
			broker = optarg;
			break;
		case 'M':
			use_mock = 1;
			break;
		case 'T':
			target_name = optarg;
			break;
		case 'J':
			joins_only = 1;
			break;
		case 'O':
			only = optarg;
			break;
		case 'L':
			label = optarg;
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
	if (!broker == !use_mock || big < 1 || big > MAXC - 1) {
		fprintf(stderr,
			"usage: group_bench (-b HOST:PORT | -M) -T NAME [-J] [-L LABEL] [-n "
			"BIG<%d] [-s SESSION_MS] [-H HB_MS]\n",
			MAXC);
		return 2;
	}
	char err[512];
	rd_kafka_t *mrk = NULL;
	if (use_mock) {
		rd_kafka_conf_t *mc = rd_kafka_conf_new();
		rd_kafka_conf_set(mc, "log_level", "3", err, sizeof(err));
		mrk = rd_kafka_new(RD_KAFKA_PRODUCER, mc, err, sizeof(err));
		mock = rd_kafka_mock_cluster_new(mrk, 1);
		snprintf(bootstrap, sizeof(bootstrap), "%s",
			 rd_kafka_mock_cluster_bootstraps(mock));
	} else {
		snprintf(bootstrap, sizeof(bootstrap), "%s", broker);
		rd_kafka_conf_t *ac = rd_kafka_conf_new();
		rd_kafka_conf_set(ac, "bootstrap.servers", broker, err, sizeof(err));
		admin = rd_kafka_new(RD_KAFKA_PRODUCER, ac, err, sizeof(err));
	}
	printf("INFO\tlibrdkafka %s, session.timeout.ms=%d, heartbeat.interval.ms=%d\n",
	       rd_kafka_version_str(), session_ms, heartbeat_ms);
	fprintf(stderr, "[%s%s] running scenarios...\n", target_name, label);
	int seq = (int)(now_ms() / 1000) % 100000;
	warm_up(seq);
	if (only) {
		if (!strcmp(only, "eager"))
			changes(seq, "range", "eager", 10);
		else if (!strcmp(only, "coop"))
			changes(seq, "cooperative-sticky", "coop", 20);
		else if (!strcmp(only, "static"))
			static_restart(seq);
	} else {
		join_at_once(seq, 10, label);
		if (!joins_only) {
			changes(seq, "range", "eager", 10);
			changes(seq, "cooperative-sticky", "coop", 20);
			static_restart(seq);
		}
		join_at_once(seq, big, label);
	}
	if (admin)
		rd_kafka_destroy(admin);
	if (mock) {
		rd_kafka_mock_cluster_destroy(mock);
		rd_kafka_destroy(mrk);
	}
	return 0;
}
