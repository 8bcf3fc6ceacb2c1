/*
 * prod_bench: produce throughput of libcohort's producer and librdkafka's,
 * against the same broker in the same run.
 *
 *   prod_bench BOOTSTRAP N SIZE [IDEMPOTENCE [ROUNDS]]
 *
 * Each producer sends N records of SIZE bytes (no key: sticky
 * partitioning) to a fresh 4-partition topic (one per producer and
 * round), the three producers alternating over ROUNDS rounds (default 1)
 * so that the shared machine's load moves them alike, timed from the first
 * produce to the end of the flush; both with the same settings: acks=all,
 * linger.ms=5, batch.size=1000000 (librdkafka's default), then both again
 * at Java's default 16384, enable.idempotence IDEMPOTENCE ("false" by
 * default), no compression. The topics are created by Metadata
 * auto-creation (cohortd's num.partitions is set by run.sh).
 * PB_ONLY=rdk, cohort (1 MB batches), rdk16k or cohort16k runs that one
 * only (for perf). Prints msgs/s, MB/s and the process's CPU seconds per GB
 * for each round, then over all rounds (total records / total time) with
 * ratio = librdkafka time / libcohort time at the same batch.size.
 */
#include <cohort/cohort.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU seconds of the whole process (every thread) so far: what a run
 * costs the client, less moved than its wall time by the shared
 * machine's load. */
static double
cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

static long failed;

static void
cohort_dr(cohort_producer *p, const cohort_delivery *d, void *opaque)
{
	(void)p;
	(void)opaque;
	if (d->err)
		failed++;
}

/* PB_CONF="key=value[,key=value...]": more settings for both clients (the
 * same names in both, e.g. max.in.flight.requests.per.connection); each
 * pair goes to set(ud, key, value). */
static void
extra_conf(void (*set)(void *, const char *, const char *), void *ud)
{
	const char *env = getenv("PB_CONF");
	if (!env || !*env)
		return;
	char *all = strdup(env), *save = NULL;
	for (char *kv = strtok_r(all, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq) {
			fprintf(stderr, "PB_CONF: '%s' is not key=value\n", kv);
			exit(2);
		}
		*eq = 0;
		set(ud, kv, eq + 1);
	}
	free(all);
}

static void
cset(void *ud, const char *k, const char *v)
{
	char err[256];
	if (cohort_conf_set(ud, k, v, err, sizeof(err))) {
		fprintf(stderr, "%s\n", err);
		exit(2);
	}
}

/* libcohort: N records of size bytes to topic; returns seconds. */
static double
run_cohort(const char *boot, const char *topic, long n, size_t size, const char *idem,
	   const char *batch, double *cpu)
{
	char err[512];
	cohort_conf *c = cohort_conf_new();
	const char *kv[][2] = {{"bootstrap.servers", boot},
			       {"acks", "all"},
			       {"linger.ms", "5"},
			       {"batch.size", batch},
			       {"enable.idempotence", idem}};
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
		cset(c, kv[i][0], kv[i][1]);
	extra_conf(cset, c);
	cohort_conf_set_delivery_cb(c, cohort_dr, NULL);
	cohort_producer *p = cohort_producer_new(c, err, sizeof(err));
	cohort_conf_free(c);
	if (!p) {
		fprintf(stderr, "%s\n", err);
		exit(2);
	}
	char *v = malloc(size);
	memset(v, 'x', size);
	/* the topic's metadata first, untimed */
	if (cohort_produce(p, topic, -1, NULL, 0, v, size, NULL, 0, -1, NULL) ||
	    cohort_flush(p, -1)) {
		fprintf(stderr, "libcohort: first record failed\n");
		exit(1);
	}
	double t0 = now_s(), c0 = cpu_s();
	for (long i = 0; i < n; i++) {
		cohort_err e;
		while ((e = cohort_produce(p, topic, -1, NULL, 0, v, size, NULL, 0, -1, NULL)) ==
		       COHORT_ERR__QUEUE_FULL)
			cohort_producer_poll(p, 10);
		if (e) {
			fprintf(stderr, "libcohort: %s\n", cohort_err_name(e));
			exit(1);
		}
		if ((i & 1023) == 0)
			cohort_producer_poll(p, 0);
	}
	cohort_flush(p, -1);
	double t = now_s() - t0;
	*cpu += cpu_s() - c0;
	cohort_producer_free(p);
	free(v);
	return t;
}

static void
rdk_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	(void)opaque;
	if (m->err)
		failed++;
}

static void
rset(void *ud, const char *k, const char *v)
{
	char err[256];
	if (rd_kafka_conf_set(ud, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
		fprintf(stderr, "%s: %s\n", k, err);
		exit(2);
	}
}

/* librdkafka: the same with its producer; returns seconds. */
static double
run_rdk(const char *boot, const char *topic, long n, size_t size, const char *idem,
	const char *batch, double *cpu)
{
	char err[512];
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	rset(c, "bootstrap.servers", boot);
	rset(c, "acks", "all");
	rset(c, "linger.ms", "5");
	rset(c, "batch.size", batch);
	rset(c, "enable.idempotence", idem);
	rset(c, "queue.buffering.max.kbytes", "32768"); /* buffer.memory's 32 MiB */
	extra_conf(rset, c);
	rd_kafka_conf_set_dr_msg_cb(c, rdk_dr);
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
	if (!rk) {
		fprintf(stderr, "%s\n", err);
		exit(2);
	}
	char *v = malloc(size);
	memset(v, 'x', size);
	rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE(v, size),
			  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
	rd_kafka_flush(rk, -1);
	double t0 = now_s(), c0 = cpu_s();
	for (long i = 0; i < n; i++) {
		rd_kafka_resp_err_t e;
		while ((e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic),
					      RD_KAFKA_V_VALUE(v, size),
					      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
					      RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
			rd_kafka_poll(rk, 10);
		if (e) {
			fprintf(stderr, "librdkafka: %s\n", rd_kafka_err2name(e));
			exit(1);
		}
		if ((i & 1023) == 0)
			rd_kafka_poll(rk, 0);
	}
	rd_kafka_flush(rk, -1);
	double t = now_s() - t0;
	*cpu += cpu_s() - c0;
	rd_kafka_destroy(rk);
	free(v);
	return t;
}

/* One line: throughput, the client's CPU seconds per GB produced, and
 * librdkafka's time / this one's (tr > 0). */
static void
row(const char *who, const char *batch, long n, size_t size, double t, double cpu, double tr)
{
	double mb = (double)n * (double)size / 1e6;
	printf("  %-10s batch.size=%-8s %9.0f msg/s %7.1f MB/s  cpu %5.2f s/GB", who, batch, n / t,
	       mb / t, cpu / mb * 1000);
	if (tr > 0)
		printf("  ratio %.2f", tr / t);
	printf("\n");
}

int
main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: prod_bench BOOTSTRAP N SIZE [IDEMPOTENCE [ROUNDS]]\n");
		return 2;
	}
	const char *boot = argv[1];
	long n = atol(argv[2]);
	size_t size = (size_t)atol(argv[3]);
	const char *idem = argc > 4 ? argv[4] : "false";
	int rounds = argc > 5 ? atoi(argv[5]) : 1;
	if (n <= 0 || size == 0 || rounds <= 0) {
		fprintf(stderr, "prod_bench: N, SIZE and ROUNDS must be positive\n");
		return 2;
	}
	/* the four producers: librdkafka and libcohort at 1 MB, then at 16 KB */
	static const struct {
		const char *name, *who, *batch;
	} P[4] = {{"rdk", "librdkafka", "1000000"},
		  {"cohort", "libcohort", "1000000"},
		  {"rdk16k", "librdkafka", "16384"},
		  {"cohort16k", "libcohort", "16384"}};
	double st[4] = {0}, sc[4] = {0};
	/* PB_ONLY=rdk|cohort|rdk16k|cohort16k: that producer alone (to profile
	 * it); the others' lines are then meaningless */
	const char *only = getenv("PB_ONLY");
	printf("%zu B x %ld, idempotence %s:\n", size, n, idem);
	for (int r = 0; r < rounds; r++) {
		double t[4] = {1, 1, 1, 1}, u[4] = {0};
		for (int i = 0; i < 4; i++) {
			if (only && strcmp(only, P[i].name))
				continue;
			/* fresh topics each round and each run (the pid): no earlier data */
			char topic[96];
			snprintf(topic, sizeof(topic), "pb-%s-%zu-%s-%d-%d", P[i].name, size, idem,
				 (int)getpid(), r);
			t[i] = i & 1 ? run_cohort(boot, topic, n, size, idem, P[i].batch, &u[i])
				     : run_rdk(boot, topic, n, size, idem, P[i].batch, &u[i]);
			st[i] += t[i];
			sc[i] += u[i];
		}
		if (rounds > 1) {
			printf(" round %d:\n", r + 1);
			for (int i = 0; i < 4; i++)
				row(P[i].who, P[i].batch, n, size, t[i], u[i],
				    i & 1 ? t[i - 1] : 0);
		}
	}
	if (rounds > 1)
		printf(" all %d rounds:\n", rounds);
	for (int i = 0; i < 4; i++)
		row(P[i].who, P[i].batch, n * rounds, size, st[i], sc[i], i & 1 ? st[i - 1] : 0);
	fflush(stdout);
	if (failed) {
		printf("  %ld records failed\n", failed);
		return 1;
	}
	return 0;
}
