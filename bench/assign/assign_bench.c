/*
 * assign_bench.c: time, peak memory and stickiness of each assignor at large
 * sizes, those of Kafka's published figures (README, Benchmarks). One
 * process per (scenario, assignor) so that getrusage's peak RSS belongs to
 * that assignor alone; bench/assign/run.sh runs them all and prints the
 * table.
 *
 *   assign_bench <scenario> <assignor>     one row
 *   assign_bench --header                  the table header
 *
 * Scenarios:
 *   equal     2,000 members x 1,000,000 partitions (500 topics x 2,000),
 *             every member subscribed to every topic (KAFKA-12464's shape)
 *   unequal   the same, but odd members subscribe to a random half of the
 *             topics
 *   server    5,000 members x 250,000 partitions (500 topics x 500), equal
 *             subscriptions (the KIP-848 uniform assignor's benchmark shape)
 *   cg1k      1,000 members x 10,000 partitions (100 topics x 100), equal
 *   cg5k      5,000 members x 100,000 partitions (200 topics x 500), equal
 *             (the sizes that set the coordinator's off-loop threshold)
 * Steps, each timed: fresh (no owned partitions), steady (the same group with
 * the previous assignment as owned partitions), join (one member more),
 * leave (one member fewer). In the server scenario members with equal
 * subscriptions share one topic array, as the coordinator's interned
 * subscriptions would (Kafka's benchmark likewise shares one set). "moved" counts partitions whose previous owner
 * is still a member and that now go elsewhere (or, cooperative, are
 * withheld); "min" is the least balance requires with equal subscriptions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "assign_check.h"

static double
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double
peak_mb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_maxrss / 1024.0; /* Linux: KiB */
}

static int32_t
key_of(const char *id)
{
	return atoi(id + 1); /* "m00042" */
}

static void
add_member(ac_group *g, int32_t key, int32_t ntopics, bool half, uint64_t *rs)
{
	char id[16];
	snprintf(id, sizeof(id), "m%05d", key);
	int32_t m = ac_add_member(g, id, NULL, NULL);
	for (int32_t t = 0; t < ntopics; t++)
		if (!half || ac_rand(rs) % 2 == 0)
			ac_subscribe(g, m, t);
	if (g->m[m].ntopics == 0)
		ac_subscribe(g, m, 0);
}

/* Owner key per (topic, partition), from a result. */
static int32_t *
owners(const ac_group *g, const ch_assign_result *r, const int64_t *base)
{
	int32_t *o = malloc((size_t)base[g->nt] * sizeof(int32_t));
	memset(o, 0xff, (size_t)base[g->nt] * sizeof(int32_t));
	for (int32_t m = 0; m < r->nmembers; m++)
		for (int32_t i = r->off[m]; i < r->off[m + 1]; i++)
			o[base[r->tps[i].topic] + r->tps[i].partition] = key_of(g->m[m].id);
	return o;
}

static int64_t
moved(const ac_group *g, const int32_t *before, const int32_t *after, const int64_t *base,
      int32_t gone)
{
	int64_t n = 0;
	CH_UNUSED(g);
	for (int64_t i = 0; i < base[g->nt]; i++)
		n += before[i] >= 0 && before[i] != gone && after[i] != before[i];
	return n;
}

typedef struct step {
	double ms;
	int64_t moved;
} step;

static ch_assign_result
run(ch_assign_kind kind, ac_group *g, double *ms)
{
	ch_assign_result r;
	const ch_assign_input *in = ac_input(g);
	double t0 = now_ms();
	if (ch_assign(kind, in, &r) != CH_OK) {
		fprintf(stderr, "assign failed: %s\n", r.errstr);
		exit(1);
	}
	*ms = now_ms() - t0;
	return r;
}

static int
kind_by_arg(const char *s)
{
	static const char *names[] = {"range",   "roundrobin",  "sticky", "cooperative-sticky",
				      "uniform", "server-range"};
	for (int k = 0; k < CH_ASSIGN_KIND_COUNT; k++)
		if (strcmp(s, names[k]) == 0)
			return k;
	return -1;
}

int
main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--header") == 0) {
		printf("%-8s %-19s %7s %9s %9s %9s %9s %15s %9s %15s %8s %8s\n", "scenario",
		       "assignor", "members", "parts", "fresh_ms", "steady_ms", "join_ms",
		       "join_moved/min", "leave_ms", "leave_moved/min", "peak_MB", "input_MB");
		return 0;
	}
	if (argc != 3 || kind_by_arg(argv[2]) < 0) {
		fprintf(stderr,
			"usage: assign_bench equal|unequal|server|cg1k|cg5k ASSIGNOR | --header\n"
			"  ASSIGNOR: range roundrobin sticky cooperative-sticky uniform "
			"server-range\n");
		return 2;
	}
	const char *sc = argv[1];
	ch_assign_kind kind = (ch_assign_kind)kind_by_arg(argv[2]);
	int32_t nm, nt, np;
	bool half = false;
	if (strcmp(sc, "equal") == 0) {
		nm = 2000, nt = 500, np = 2000;
	} else if (strcmp(sc, "unequal") == 0) {
		nm = 2000, nt = 500, np = 2000, half = true;
	} else if (strcmp(sc, "server") == 0) {
		nm = 5000, nt = 500, np = 500;
	} else if (strcmp(sc, "cg1k") == 0) {
		nm = 1000, nt = 100, np = 100;
	} else if (strcmp(sc, "cg5k") == 0) {
		nm = 5000, nt = 200, np = 500;
	} else {
		fprintf(stderr, "unknown scenario %s\n", sc);
		return 2;
	}
	uint64_t rs = 42;
	ac_group g;
	ac_init(&g);
	/* The coordinator interns subscriptions; a client leader decodes one
	 * array per member. */
	g.share = strcmp(sc, "server") == 0 || strncmp(sc, "cg", 2) == 0;
	int64_t *base = calloc((size_t)nt + 1, sizeof(int64_t));
	for (int32_t t = 0; t < nt; t++) {
		char name[32];
		snprintf(name, sizeof(name), "topic-%04d", t);
		ac_add_topic(&g, name, np);
		base[t + 1] = base[t] + np;
	}
	for (int32_t i = 0; i < nm; i++)
		add_member(&g, i, nt, half && i % 2 == 1, &rs);
	ac_input(&g);
	double input_mb = peak_mb();
	bool client = kind <= CH_ASSIGN_COOPERATIVE_STICKY;
	int32_t gen = 1;

	/* fresh */
	double fresh_ms, steady_ms;
	ch_assign_result r = run(kind, &g, &fresh_ms);
	/* cooperative: members revoke, the follow-up rebalance completes it */
	ac_set_owned(&g, &r, client ? gen++ : CH_ASSIGN_NO_GENERATION);
	ch_assign_result_free(&r);
	r = run(kind, &g, &steady_ms);
	int32_t *before = owners(&g, &r, base);
	ac_set_owned(&g, &r, client ? gen++ : CH_ASSIGN_NO_GENERATION);
	ch_assign_result_free(&r);
	/* join */
	step join, leave;
	add_member(&g, nm, nt, half, &rs);
	g.m[g.nm - 1].generation = client ? gen - 1 : CH_ASSIGN_NO_GENERATION;
	r = run(kind, &g, &join.ms);
	int32_t *after = owners(&g, &r, base);
	join.moved = moved(&g, before, after, base, -1);
	int64_t total = base[nt];
	/* Only the balancing sticky assignors have a minimum to compare with. */
	bool sticky = kind == CH_ASSIGN_STICKY || kind == CH_ASSIGN_COOPERATIVE_STICKY ||
		      kind == CH_ASSIGN_SERVER_UNIFORM;
	int64_t join_min = half || !sticky ? -1 : total / (nm + 1);
	ac_set_owned(&g, &r, client ? gen++ : CH_ASSIGN_NO_GENERATION);
	ch_assign_result_free(&r);
	free(before);
	before = after;
	/* leave: the first member goes */
	int32_t gone = key_of(g.m[0].id);
	ac_remove_member(&g, 0);
	r = run(kind, &g, &leave.ms);
	after = owners(&g, &r, base);
	leave.moved = moved(&g, before, after, base, gone);
	ch_assign_result_free(&r);
	char jm[48], lm[48];
	if (join_min >= 0)
		snprintf(jm, sizeof(jm), "%lld/%lld", (long long)join.moved, (long long)join_min);
	else
		snprintf(jm, sizeof(jm), "%lld/-", (long long)join.moved);
	snprintf(lm, sizeof(lm), "%lld/%s", (long long)leave.moved, half || !sticky ? "-" : "0");
	printf("%-8s %-19s %7d %9lld %9.1f %9.1f %9.1f %15s %9.1f %15s %8.0f %8.0f\n", sc, argv[2],
	       nm, (long long)total, fresh_ms, steady_ms, join.ms, jm, leave.ms, lm, peak_mb(),
	       input_mb);
	free(before);
	free(after);
	free(base);
	ac_free(&g);
	return 0;
}
