/*
 * static_member: a group member with a group.instance.id (KIP-345). Its
 * close sends no LeaveGroup, so it can be stopped and started again within
 * session.timeout.ms without the others noticing: the coordinator keeps its
 * partitions for it, and the restarted process gets them back without a
 * rebalance, starting at the offsets it committed.
 *
 *   static_member BOOTSTRAP GROUP INSTANCE_ID TOPIC [TOPIC...]
 *
 * SESSION_MS in the environment sets session.timeout.ms (default 30000: a
 * restart must come within it). It commits what it processed after every
 * poll that returned records, and in revoked(). It prints "assigned t-0",
 * "revoked t-0", "lost t-0" and "record t-0@12" lines. SIGINT or SIGTERM
 * closes it: revoked() runs locally (and commits), but no LeaveGroup goes
 * out, so the group keeps its partitions for the restart.
 */
#include <cohort/cohort.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void
log_parts(const char *what, const cohort_tp *tps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%s %s-%d\n", what, tps[i].topic, tps[i].partition);
	fflush(stdout);
}

static void
assigned(cohort_consumer *c, const cohort_tp *tps, size_t n, void *opaque)
{
	(void)c;
	(void)opaque;
	log_parts("assigned", tps, n);
}

static void
revoked(cohort_consumer *c, const cohort_tp *tps, size_t n, void *opaque)
{
	(void)opaque;
	log_parts("revoked", tps, n);
	cohort_commit_sync(c, NULL, 0); /* the positions of what is still owned */
}

static void
lost(cohort_consumer *c, const cohort_tp *tps, size_t n, void *opaque)
{
	(void)c;
	(void)opaque;
	log_parts("lost", tps, n);
}

int
main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: %s BOOTSTRAP GROUP INSTANCE_ID TOPIC [TOPIC...]\n",
			argv[0]);
		return 2;
	}
	char err[512];
	cohort_conf *conf = cohort_conf_new();
	if (!conf)
		return 1;
	const char *kv[][2] = {
		{"bootstrap.servers", argv[1]},
		{"group.id", argv[2]},
		{"group.instance.id", argv[3]},
		{"session.timeout.ms", getenv("SESSION_MS") ? getenv("SESSION_MS") : "30000"},
		{"heartbeat.interval.ms", "1000"},
		{"enable.auto.commit", "false"},
		{"auto.offset.reset", "earliest"},
	};
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
		if (cohort_conf_set(conf, kv[i][0], kv[i][1], err, sizeof(err)) != COHORT_OK) {
			fprintf(stderr, "%s\n", err);
			return 2;
		}
	cohort_rebalance_listener listener = {assigned, revoked, lost, NULL};
	cohort_conf_set_rebalance_listener(conf, &listener);
	cohort_consumer *c = cohort_consumer_new(conf, err, sizeof(err));
	cohort_conf_free(conf);
	if (!c) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	cohort_err e = cohort_subscribe(c, (const char *const *)argv + 4, (size_t)argc - 4);
	if (e) {
		fprintf(stderr, "subscribe: %s\n", cohort_err_str(e));
		return 1;
	}
	while (!stop) {
		const cohort_record *recs;
		size_t n;
		e = cohort_poll(c, 200, &recs, &n);
		if (e) {
			fprintf(stderr, "poll: %s: %s\n", cohort_err_name(e), cohort_err_str(e));
			if (cohort_err_is_fatal(e))
				break;
			continue;
		}
		for (size_t i = 0; i < n; i++)
			printf("record %s-%d@%lld\n", recs[i].topic, recs[i].partition,
			       (long long)recs[i].offset);
		fflush(stdout);
		if (n && (e = cohort_commit_sync(c, NULL, 0)))
			fprintf(stderr, "commit: %s\n", cohort_err_name(e));
	}
	/* a static member's close: revoked() runs (and commits), no LeaveGroup
	 * is sent, the coordinator keeps the partitions until the session ends */
	e = cohort_consumer_close(c);
	cohort_consumer_free(c);
	return e ? 1 : 0;
}
