/*
 * rebalance_listener: a group member that keeps state per partition (here a
 * small record of what it processed; in a real program a file, a cache, a
 * database transaction) and manages it from the rebalance listener:
 *
 *   assigned  opens the state of each new partition
 *   revoked   commits what was processed, synchronously, then releases the
 *             state: the next owner starts exactly where this one stopped
 *   lost      releases the state and commits nothing: the partitions belong
 *             to another member already, and libcohort would refuse the
 *             commit anyway (COHORT_ERR__ASSIGNMENT_LOST)
 *
 *   rebalance_listener BOOTSTRAP GROUP TOPIC [TOPIC...]
 *
 * It prints one line per event ("assigned t-0", "record t-0@12",
 * "revoked t-0: committed 13 NONE", "released t-0 after 13 record(s)",
 * "lost t-0: not committed"). SIGINT or SIGTERM closes it: the revoke runs
 * for every partition, then it leaves the group.
 */
#include <cohort/cohort.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What this member keeps for one partition it owns. */
typedef struct part_state {
	struct part_state *next;
	char *topic;
	int32_t partition;
	int64_t next_offset; /* after the last record processed; -1 none yet */
	long records;
} part_state;

static part_state *states;
static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static part_state **
find(const char *topic, int32_t partition)
{
	part_state **pp = &states;
	while (*pp && ((*pp)->partition != partition || strcmp((*pp)->topic, topic) != 0))
		pp = &(*pp)->next;
	return pp;
}

static void
release(part_state **pp)
{
	part_state *s = *pp;
	printf("released %s-%d after %ld record(s)\n", s->topic, s->partition, s->records);
	*pp = s->next;
	free(s->topic);
	free(s);
}

static void
assigned(cohort_consumer *c, const cohort_tp *tps, size_t n, void *opaque)
{
	(void)c;
	(void)opaque;
	for (size_t i = 0; i < n; i++) {
		part_state *s = calloc(1, sizeof(*s));
		if (!s || !(s->topic = strdup(tps[i].topic))) {
			fprintf(stderr, "out of memory\n");
			exit(1);
		}
		s->partition = tps[i].partition;
		s->next_offset = -1;
		s->next = states;
		states = s;
		printf("assigned %s-%d\n", tps[i].topic, tps[i].partition);
	}
	fflush(stdout);
}

static void
revoked(cohort_consumer *c, const cohort_tp *tps, size_t n, void *opaque)
{
	(void)opaque;
	cohort_tp_offset *o = calloc(n + 1, sizeof(*o));
	size_t k = 0;
	for (size_t i = 0; o && i < n; i++) {
		part_state *s = *find(tps[i].topic, tps[i].partition);
		if (s && s->next_offset >= 0)
			o[k++] = (cohort_tp_offset){s->topic, s->partition, s->next_offset, 0};
		else
			printf("revoked %s-%d: nothing processed\n", tps[i].topic,
			       tps[i].partition);
	}
	cohort_err err = k ? cohort_commit_sync(c, o, k) : COHORT_OK;
	for (size_t i = 0; i < k; i++)
		printf("revoked %s-%d: committed %lld %s\n", o[i].topic, o[i].partition,
		       (long long)o[i].offset, cohort_err_name(o[i].err ? o[i].err : err));
	free(o);
	for (size_t i = 0; i < n; i++) {
		part_state **pp = find(tps[i].topic, tps[i].partition);
		if (*pp)
			release(pp);
	}
	fflush(stdout);
}

static void
lost(cohort_consumer *c, const cohort_tp *tps, size_t n, void *opaque)
{
	(void)c;
	(void)opaque;
	for (size_t i = 0; i < n; i++) {
		printf("lost %s-%d: not committed\n", tps[i].topic, tps[i].partition);
		part_state **pp = find(tps[i].topic, tps[i].partition);
		if (*pp)
			release(pp);
	}
	fflush(stdout);
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
		{"enable.auto.commit", "false"}, /* the listener commits */
		{"auto.offset.reset", "earliest"},
		{"session.timeout.ms", getenv("SESSION_MS") ? getenv("SESSION_MS") : "10000"},
		{"heartbeat.interval.ms", "500"},
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
		for (size_t i = 0; i < n; i++) {
			part_state *s = *find(recs[i].topic, recs[i].partition);
			if (!s)
				continue; /* not possible: assigned() ran before its records */
			s->next_offset = recs[i].offset + 1;
			s->records++;
			printf("record %s-%d@%lld\n", recs[i].topic, recs[i].partition,
			       (long long)recs[i].offset);
		}
		fflush(stdout);
	}
	e = cohort_consumer_close(c); /* revoked() runs for everything, then LeaveGroup */
	cohort_consumer_free(c);
	while (states) /* nothing is left unless close failed */
		release(&states);
	fflush(stdout);
	return e ? 1 : 0;
}
