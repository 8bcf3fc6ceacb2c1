/*
 * cooperative_consumer: a libcohort group member with the cooperative-sticky
 * assignor (KIP-429) that logs every assigned, revoked and lost callback
 * and commits what it consumed before its partitions are revoked.
 *
 *   cooperative_consumer BOOTSTRAP GROUP TOPIC [TOPIC...]
 *
 * Start two or three of them on the same group: on each join or leave the
 * members that keep partitions see "revoked" only for the ones that move,
 * and keep consuming the others throughout. Stop one with Ctrl-C (it
 * revokes, commits and leaves); kill one with SIGKILL and the others get
 * its partitions after session.timeout.ms.
 */
#include <cohort/cohort.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	printf("%-8s %zu partition(s):", what, n);
	for (size_t i = 0; i < n; i++)
		printf(" %s-%d", tps[i].topic, tps[i].partition);
	printf("\n");
	fflush(stdout);
}

static void
assigned(cohort_consumer *c, const cohort_tp *tps, size_t n, void *opaque)
{
	(void)c;
	(void)opaque;
	log_parts("assigned", tps, n);
}

/* Commit the consumed positions of the partitions that leave, so their
 * next owner starts exactly where this member stopped. */
static void
revoked(cohort_consumer *c, const cohort_tp *tps, size_t n, void *opaque)
{
	(void)opaque;
	log_parts("revoked", tps, n);
	cohort_tp_offset *o = calloc(n + 1, sizeof(*o));
	size_t k = 0;
	for (size_t i = 0; o && i < n; i++) {
		int64_t pos;
		if (cohort_position(c, tps[i].topic, tps[i].partition, &pos) == COHORT_OK &&
		    pos >= 0)
			o[k++] = (cohort_tp_offset){tps[i].topic, tps[i].partition, pos, 0};
	}
	if (k) {
		cohort_err err = cohort_commit_sync(c, o, k);
		printf("         commit of %zu position(s): %s\n", k, cohort_err_name(err));
	}
	free(o);
}

/* Lost partitions already belong to someone else: never commit here. */
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
	if (argc < 4) {
		fprintf(stderr, "usage: %s BOOTSTRAP GROUP TOPIC [TOPIC...]\n", argv[0]);
		return 2;
	}
	char err[512];
	cohort_conf *conf = cohort_conf_new();
	if (!conf)
		return 1;
	const char *kv[][2] = {
		{"bootstrap.servers", argv[1]},
		{"group.id", argv[2]},
		{"partition.assignment.strategy", "cooperative-sticky"},
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
	cohort_err e = cohort_subscribe(c, (const char *const *)argv + 3, (size_t)argc - 3);
	if (e) {
		fprintf(stderr, "subscribe: %s\n", cohort_err_str(e));
		return 1;
	}
	long total = 0;
	while (!stop) {
		const cohort_record *recs;
		size_t n;
		e = cohort_poll(c, 500, &recs, &n);
		if (e) {
			fprintf(stderr, "poll: %s: %s\n", cohort_err_name(e), cohort_err_str(e));
			if (cohort_err_is_fatal(e))
				break;
			continue;
		}
		if (n) {
			total += (long)n;
			printf("consumed %zu record(s), %ld in all; last %s-%d@%lld\n", n, total,
			       recs[n - 1].topic, recs[n - 1].partition,
			       (long long)recs[n - 1].offset);
			fflush(stdout);
		}
	}
	e = cohort_consumer_close(c); /* revoked() runs, then LeaveGroup */
	cohort_consumer_free(c);
	return e ? 1 : 0;
}
