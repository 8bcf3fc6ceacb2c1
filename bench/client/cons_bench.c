/*
 * cons_bench: consume throughput of libcohort's consumer and librdkafka's on
 * the same broker in the same run, and the consumer's memory per assigned
 * partition.
 *
 *   cons_bench BOOTSTRAP throughput N SIZE ROUNDS
 *   cons_bench BOOTSTRAP memory NPARTS
 *   cons_bench versions
 *
 * throughput: a fresh 4-partition topic is filled with N records of SIZE
 * bytes (libcohort's producer, untimed), then each consumer reads all of
 * them from the beginning, ROUNDS times, the two alternating: manual
 * assignment of the 4 partitions, no group, each library's default fetch
 * settings (the same numbers: fetch.min.bytes 1, a 500 ms fetch wait,
 * 1 MiB per partition, 50 MiB per fetch), timed from the assign to the
 * N-th record, every value's bytes summed (so no record is skipped
 * unread). librdkafka is read through rd_kafka_consume_batch_queue (its
 * fastest path, 1,000 records a call), libcohort through cohort_poll
 * (max.poll.records 500, its default).
 *
 * memory: a fresh topic of NPARTS partitions holding one 100 B record each;
 * the heap in use (mallinfo2, every arena) and RSS of this process before
 * a consumer is assigned all of them (from the beginning) and after it has
 * read every partition's record, divided by NPARTS; libcohort, then
 * librdkafka in the same process.
 */
#define _GNU_SOURCE
#include <cohort/cohort.h>
#include <librdkafka/rdkafka.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NPARTS_TP 4

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
die(const char *what, const char *why)
{
	fprintf(stderr, "cons_bench: %s: %s\n", what, why);
	exit(1);
}

static cohort_conf *
cconf(const char *boot)
{
	char err[512];
	cohort_conf *c = cohort_conf_new();
	if (cohort_conf_set(c, "bootstrap.servers", boot, err, sizeof(err)))
		die("conf", err);
	return c;
}

static void
cset(cohort_conf *c, const char *k, const char *v)
{
	char err[512];
	if (cohort_conf_set(c, k, v, err, sizeof(err)))
		die(k, err);
}

static void
rset(rd_kafka_conf_t *c, const char *k, const char *v)
{
	char err[256];
	if (rd_kafka_conf_set(c, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK)
		die(k, err);
}

/* Creates topic with nparts partitions through libcohort's admin client. */
static void
create_topic(const char *boot, const char *topic, int nparts)
{
	char err[512];
	cohort_conf *c = cconf(boot);
	cohort_admin *a = cohort_admin_new(c, err, sizeof(err));
	cohort_conf_free(c);
	if (!a)
		die("admin", err);
	cohort_new_topic t = {.name = topic, .partitions = nparts, .replication_factor = -1};
	cohort_err e = cohort_admin_create_topics(a, &t, 1, 0, 120000);
	if (e || t.err)
		die(topic, t.errmsg[0] ? t.errmsg : cohort_err_name(e ? e : t.err));
	cohort_admin_free(a);
}

/* n records of size bytes, round-robin over the partitions, acks=1. */
static int fill_parts = NPARTS_TP; /* fill spreads over partitions 0..fill_parts-1 */

static void
fill(const char *boot, const char *topic, long n, size_t size)
{
	char err[512];
	cohort_conf *c = cconf(boot);
	cset(c, "acks", "1");
	cset(c, "linger.ms", "5");
	cset(c, "batch.size", "1000000");
	cohort_producer *p = cohort_producer_new(c, err, sizeof(err));
	cohort_conf_free(c);
	if (!p)
		die("producer", err);
	char *v = malloc(size);
	memset(v, 'x', size);
	for (long i = 0; i < n; i++) {
		cohort_err e;
		while ((e = cohort_produce(p, topic, (int32_t)(i % fill_parts), NULL, 0, v, size,
					   NULL, 0, -1, NULL)) == COHORT_ERR__QUEUE_FULL)
			cohort_producer_poll(p, 10);
		if (e)
			die("produce", cohort_err_name(e));
		if ((i & 1023) == 0)
			cohort_producer_poll(p, 0);
	}
	if (cohort_flush(p, -1))
		die("flush", "timed out");
	cohort_producer_free(p);
	free(v);
}

static unsigned long sink; /* the values' bytes, summed: every record is read */

static void
touch(const void *p, size_t len)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < len; i += 64)
		sink += b[i];
}

/* A libcohort consumer without a group that starts at the beginning. */
static cohort_consumer *
earliest_consumer(const char *boot)
{
	char err[512];
	cohort_conf *c = cconf(boot);
	cset(c, "auto.offset.reset", "earliest");
	cohort_consumer *k = cohort_consumer_new(c, err, sizeof(err));
	cohort_conf_free(c);
	if (!k)
		die("consumer", err);
	return k;
}

/* libcohort reads the n records of topic; seconds. */
static double
read_cohort(const char *boot, const char *topic, long n)
{
	cohort_consumer *k = earliest_consumer(boot);
	cohort_tp tps[NPARTS_TP];
	for (int i = 0; i < NPARTS_TP; i++)
		tps[i] = (cohort_tp){topic, i};
	double t0 = now_s();
	if (cohort_assign(k, tps, NPARTS_TP))
		die("assign", "refused");
	long got = 0;
	while (got < n && now_s() - t0 < 300) {
		const cohort_record *r;
		size_t cnt;
		cohort_err e = cohort_poll(k, 100, &r, &cnt);
		if (e)
			die("poll", cohort_err_name(e));
		for (size_t i = 0; i < cnt; i++)
			touch(r[i].value, (size_t)r[i].value_len);
		got += (long)cnt;
	}
	double t = now_s() - t0;
	if (got != n)
		fprintf(stderr, "cons_bench: libcohort read %ld of %ld\n", got, n);
	cohort_consumer_free(k);
	return t;
}

/* librdkafka reads the n records of topic; seconds. */
static double
read_rdk(const char *boot, const char *topic, long n)
{
	char err[512];
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	rset(c, "bootstrap.servers", boot);
	rset(c, "group.id", "cons-bench"); /* required by the API; nothing joins or commits */
	rset(c, "enable.auto.commit", "false");
	rd_kafka_t *k = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof(err));
	if (!k)
		die("librdkafka", err);
	rd_kafka_poll_set_consumer(k);
	rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(k);
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(NPARTS_TP);
	for (int i = 0; i < NPARTS_TP; i++)
		rd_kafka_topic_partition_list_add(l, topic, i)->offset = RD_KAFKA_OFFSET_BEGINNING;
	rd_kafka_message_t *batch[1000];
	double t0 = now_s();
	rd_kafka_assign(k, l);
	long got = 0;
	while (got < n && now_s() - t0 < 300) {
		ssize_t cnt = rd_kafka_consume_batch_queue(q, 100, batch, 1000);
		for (ssize_t i = 0; i < cnt; i++) {
			if (!batch[i]->err) {
				touch(batch[i]->payload, batch[i]->len);
				got++;
			}
			rd_kafka_message_destroy(batch[i]);
		}
	}
	double t = now_s() - t0;
	if (got != n)
		fprintf(stderr, "cons_bench: librdkafka read %ld of %ld\n", got, n);
	rd_kafka_topic_partition_list_destroy(l);
	rd_kafka_queue_destroy(q);
	rd_kafka_consumer_close(k);
	rd_kafka_destroy(k);
	return t;
}

static int
throughput(const char *boot, long n, size_t size, int rounds)
{
	char topic[96];
	snprintf(topic, sizeof(topic), "cb-%zu-%d", size, (int)getpid());
	create_topic(boot, topic, NPARTS_TP);
	fill(boot, topic, n, size);
	double tr = 0, tc = 0;
	double mb = (double)n * (double)size / 1e6;
	for (int i = 0; i < rounds; i++) {
		double r = read_rdk(boot, topic, n);
		double c = read_cohort(boot, topic, n);
		printf("  round %d: librdkafka %9.0f msg/s %7.1f MB/s   libcohort %9.0f msg/s "
		       "%7.1f MB/s   ratio %.2f\n",
		       i + 1, n / r, mb / r, n / c, mb / c, r / c);
		tr += r;
		tc += c;
	}
	printf("%zu B x %ld, %d rounds: librdkafka %.0f msg/s %.1f MB/s, libcohort %.0f msg/s "
	       "%.1f MB/s, ratio (librdkafka time / libcohort time) %.2f\n",
	       size, n, rounds, n * rounds / tr, mb * rounds / tr, n * rounds / tc,
	       mb * rounds / tc, tr / tc);
	return sink == 1; /* never: keeps the summing */
}

/* Heap in use (every arena) and RSS, in bytes. */
static void
mem(size_t *heap, size_t *rss)
{
	struct mallinfo2 mi = mallinfo2();
	*heap = mi.uordblks + mi.hblkhd;
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f && fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = 0;
	if (f)
		fclose(f);
	*rss = (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

static void
report(const char *who, int nparts, size_t h0, size_t r0, double secs)
{
	size_t h1, r1;
	mem(&h1, &r1);
	printf("  %-10s %d partitions: heap %+.0f B/partition, RSS %+.0f B/partition "
	       "(every partition read after %.2f s)\n",
	       who, nparts, ((double)h1 - (double)h0) / nparts, ((double)r1 - (double)r0) / nparts,
	       secs);
}

/* True when every partition's record was read (seen[] per partition). */
static int
all_seen(const char *seen, int nparts)
{
	for (int i = 0; i < nparts; i++)
		if (!seen[i])
			return 0;
	return 1;
}

static int
memory(const char *boot, int nparts)
{
	char topic[96], err[512];
	snprintf(topic, sizeof(topic), "cbm-%d-%d", nparts, (int)getpid());
	create_topic(boot, topic, nparts);
	/* one record per partition (round-robin over them) */
	fill_parts = nparts;
	fill(boot, topic, nparts, 100);
	cohort_tp *tps = calloc((size_t)nparts, sizeof(*tps));
	char *seen = calloc((size_t)nparts, 1);
	for (int i = 0; i < nparts; i++)
		tps[i] = (cohort_tp){topic, i};
	size_t h0, r0;

	cohort_consumer *k = earliest_consumer(boot);
	const cohort_record *r;
	size_t cnt;
	cohort_poll(k, 200, &r, &cnt); /* connected, metadata in */
	mem(&h0, &r0);
	double t0 = now_s();
	if (cohort_assign(k, tps, (size_t)nparts))
		die("assign", "refused");
	while (!all_seen(seen, nparts) && now_s() - t0 < 120) {
		cohort_poll(k, 50, &r, &cnt);
		for (size_t i = 0; i < cnt; i++)
			seen[r[i].partition] = 1;
	}
	report("libcohort", nparts, h0, r0, now_s() - t0);
	cohort_consumer_free(k);

	memset(seen, 0, (size_t)nparts);
	rd_kafka_conf_t *rc = rd_kafka_conf_new();
	rset(rc, "bootstrap.servers", boot);
	rset(rc, "group.id", "cons-bench");
	rset(rc, "enable.auto.commit", "false");
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, rc, err, sizeof(err));
	if (!rk)
		die("librdkafka", err);
	rd_kafka_poll_set_consumer(rk);
	rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
	if (m)
		rd_kafka_message_destroy(m);
	mem(&h0, &r0);
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(nparts);
	for (int i = 0; i < nparts; i++)
		rd_kafka_topic_partition_list_add(l, topic, i)->offset = RD_KAFKA_OFFSET_BEGINNING;
	t0 = now_s();
	rd_kafka_assign(rk, l);
	while (!all_seen(seen, nparts) && now_s() - t0 < 120) {
		if (!(m = rd_kafka_consumer_poll(rk, 50)))
			continue;
		if (!m->err && m->partition >= 0 && m->partition < nparts)
			seen[m->partition] = 1;
		rd_kafka_message_destroy(m);
	}
	report("librdkafka", nparts, h0, r0, now_s() - t0);
	rd_kafka_topic_partition_list_destroy(l);
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	free(tps);
	free(seen);
	return 0;
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && strcmp(argv[1], "versions") == 0) {
		printf("libcohort %s, librdkafka %s\n", cohort_version(), rd_kafka_version_str());
		return 0;
	}
	if (argc >= 6 && strcmp(argv[2], "throughput") == 0)
		return throughput(argv[1], atol(argv[3]), (size_t)atol(argv[4]), atoi(argv[5]));
	if (argc >= 4 && strcmp(argv[2], "memory") == 0)
		return memory(argv[1], atoi(argv[3]));
	fprintf(stderr, "usage: cons_bench BOOTSTRAP throughput N SIZE ROUNDS\n"
			"       cons_bench BOOTSTRAP memory NPARTS\n");
	return 2;
}
