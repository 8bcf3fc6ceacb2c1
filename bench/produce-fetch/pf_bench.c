/*
 * pf_bench: produce and fetch throughput against cohortd, side by side with
 * librdkafka's in-process mock cluster (rdkafka_mock.h), in the same run.
 *
 *   pf_bench BOOTSTRAP [N [SIZE]]     N messages (default 1000000) of SIZE
 *                                     bytes (default 100) per scenario
 *
 * Scenarios, each on a fresh topic:
 *   produce acks=1, produce acks=all: one partition (auto-created), one
 *   librdkafka producer, linger 5 ms, up to 5 requests in flight;
 *   fetch: one consumer assign()-ed to every partition of a topic filled
 *   beforehand (untimed) with the N messages, reading them all from offset 0;
 *   then the same again with queued.min.messages raised (see QUEUED_MIN).
 * Prints msgs/s and MB/s for cohortd, for the mock, and cohortd/mock.
 *
 * The fetch topic has as many partitions as it takes to keep each under
 * 4 MiB: the mock cluster keeps only the newest 5 MiB (or 100000 message
 * sets) of a partition (rdkafka_mock.c, mpart->max_size / max_cnt, not
 * configurable) and drops older message sets, so one partition of N
 * messages would leave the consumer at the log start with most of them
 * gone. Both brokers get the same layout (created with CreateTopics).
 *
 *   pf_bench - [N [SIZE]]   runs the mock only
 *   PF_COMPRESSION=lz4 ...  the producers compress (default none)
 *   PF_STATS=1 ...          per fetch scenario, on stderr: Fetch requests,
 *                           bytes per response, CPU seconds per thread and
 *                           of the broker process PF_BROKER_PID (run.sh
 *                           sets it), a line per 100,000 messages
 *   PF_CONSUMER="k=v ..."   more consumer settings; PF_DEBUG=protocol the
 *                           consumer's librdkafka debug contexts
 *   PF_ONLY=fetch ...       no timed produce (their rows are placeholders)
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
set(rd_kafka_conf_t *c, const char *k, const char *v)
{
	char err[256];
	if (rd_kafka_conf_set(c, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
		fprintf(stderr, "%s: %s\n", k, err);
		exit(2);
	}
}

/* --tls: the CA file the clients trust; NULL for plaintext. */
static const char *tls_ca;

/* A client configuration for bootstrap bs, over TLS while tls_ca is set. */
static rd_kafka_conf_t *
client_conf(const char *bs)
{
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	set(c, "bootstrap.servers", bs);
	if (tls_ca) {
		set(c, "security.protocol", "SSL");
		set(c, "ssl.ca.location", tls_ca);
		set(c, "ssl.endpoint.identification.algorithm", "none");
	}
	return c;
}

static long delivered, failed;
static void
dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *op)
{
	(void)rk;
	(void)op;
	if (m->err)
		failed++;
	else
		delivered++;
}

/* Creates topic with nparts partitions: CreateTopics, or on the mock
 * rd_kafka_mock_topic_create (its CreateTopics does not answer). */
static void
create_topic(const char *bs, rd_kafka_mock_cluster_t *mc, const char *topic, int nparts)
{
	if (mc) {
		rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(mc, topic, nparts, 1);
		if (e) {
			fprintf(stderr, "mock topic %s: %s\n", topic, rd_kafka_err2str(e));
			exit(1);
		}
		return;
	}
	rd_kafka_conf_t *c = client_conf(bs);
	char err[256];
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
	rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, nparts, 1, err, sizeof(err));
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
	rd_kafka_AdminOptions_set_request_timeout(o, 30000, err, sizeof(err));
	rd_kafka_CreateTopics(rk, &nt, 1, o, q);
	rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
	const rd_kafka_CreateTopics_result_t *res =
		ev ? rd_kafka_event_CreateTopics_result(ev) : NULL;
	size_t cnt = 0;
	const rd_kafka_topic_result_t **tr =
		res ? rd_kafka_CreateTopics_result_topics(res, &cnt) : NULL;
	if (!ev || rd_kafka_event_error(ev) || cnt != 1 || rd_kafka_topic_result_error(tr[0])) {
		fprintf(stderr, "create topic %s: %s\n", topic,
			!ev                        ? "timed out"
			: rd_kafka_event_error(ev) ? rd_kafka_event_error_string(ev)
			: cnt == 1                 ? rd_kafka_topic_result_error_string(tr[0])
						   : "no result");
		exit(1);
	}
	rd_kafka_event_destroy(ev);
	rd_kafka_AdminOptions_destroy(o);
	rd_kafka_queue_destroy(q);
	rd_kafka_NewTopic_destroy(nt);
	rd_kafka_destroy(rk);
}

/* Seconds to produce n messages of size sz with acks, message i to
 * partition i % nparts (after one warm-up message to partition 0). */
static double
produce(const char *bs, const char *topic, const char *acks, long n, int sz, int nparts)
{
	rd_kafka_conf_t *c = client_conf(bs);
	char err[256];
	set(c, "acks", acks);
	set(c, "linger.ms", "5");
	set(c, "batch.size", "1000000");
	set(c, "queue.buffering.max.messages", "1000000");
	set(c, "queue.buffering.max.kbytes", "1048576");
	/* PF_COMPRESSION=gzip|snappy|lz4|zstd: what the broker must inflate to
	 * validate each record (Kafka's LogValidator) */
	const char *codec = getenv("PF_COMPRESSION");
	set(c, "compression.type", codec && *codec ? codec : "none");
	rd_kafka_conf_set_dr_msg_cb(c, dr);
	rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
	char *val = malloc((size_t)sz);
	memset(val, 'x', (size_t)sz);
	/* warm up: metadata and topic creation */
	rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
			  RD_KAFKA_V_VALUE(val, 1), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
			  RD_KAFKA_V_END);
	rd_kafka_flush(p, 30000);
	delivered = failed = 0;
	double t0 = now_s();
	for (long i = 0; i < n; i++) {
		while (rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic),
					 RD_KAFKA_V_PARTITION((int32_t)(i % nparts)),
					 RD_KAFKA_V_VALUE(val, (size_t)sz),
					 RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
					 RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
			rd_kafka_poll(p, 1);
	}
	rd_kafka_flush(p, 120000);
	double dt = now_s() - t0;
	if (delivered != n || failed)
		fprintf(stderr, "warning: %s: delivered %ld of %ld (%ld failed)\n", topic,
			delivered, n, failed);
	rd_kafka_destroy(p);
	free(val);
	return dt;
}

/* PF_STATS=1: what each fetch scenario cost, printed to stderr: the
 * consumer's Fetch requests and the bytes it received (librdkafka's
 * statistics), and CPU seconds per thread of this process (the consumer's
 * threads, the mock's) and of the broker process PF_BROKER_PID. */
static char *last_stats;
static int
stats_cb(rd_kafka_t *rk, char *json, size_t len, void *op)
{
	(void)rk;
	(void)len;
	(void)op;
	free(last_stats);
	last_stats = json;
	return 1; /* ours to free */
}

/* The integer after "key": at or after p, 0 if none. */
static long long
json_int(const char *p, const char *key)
{
	char k[64];
	snprintf(k, sizeof(k), "\"%s\":", key);
	const char *q = p ? strstr(p, k) : NULL;
	return q ? atoll(q + strlen(k)) : 0;
}

/* Seconds on a CPU of /proc/PATH (a process or a thread: the first field
 * of schedstat, in ns), and its name into comm. */
static double
proc_cpu(const char *path, char *comm, size_t comm_sz)
{
	char f[352], buf[64];
	if (comm) {
		snprintf(f, sizeof(f), "/proc/%s/comm", path);
		FILE *fp = fopen(f, "r");
		comm[0] = 0;
		if (fp && fgets(comm, (int)comm_sz, fp))
			comm[strcspn(comm, "\n")] = 0;
		if (fp)
			fclose(fp);
	}
	snprintf(f, sizeof(f), "/proc/%s/schedstat", path);
	FILE *fp = fopen(f, "r");
	unsigned long long ns = 0;
	bool ok = fp && fgets(buf, sizeof(buf), fp) && sscanf(buf, "%llu", &ns) == 1;
	if (fp)
		fclose(fp);
	return ok ? (double)ns / 1e9 : -1;
}

/* Seconds on a CPU of every thread of process pid. */
static double
process_cpu(const char *pid)
{
	char d[64], path[320];
	snprintf(d, sizeof(d), "/proc/%s/task", pid);
	DIR *dir = opendir(d);
	if (!dir)
		return -1;
	double t = 0;
	for (struct dirent *e; (e = readdir(dir));) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/task/%s", pid, e->d_name);
		double c = proc_cpu(path, NULL, 0);
		t += c > 0 ? c : 0;
	}
	closedir(dir);
	return t;
}

#define MAX_TASKS 64
typedef struct cpu_snap {
	int n;
	int tid[MAX_TASKS];
	char comm[MAX_TASKS][32];
	double cpu[MAX_TASKS];
	double broker;
} cpu_snap;

static void
snap(cpu_snap *s)
{
	s->n = 0;
	char path[320], d[64];
	snprintf(d, sizeof(d), "/proc/%d/task", (int)getpid());
	DIR *dir = opendir(d);
	struct dirent *e;
	while (dir && (e = readdir(dir)) && s->n < MAX_TASKS) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%d/task/%s", (int)getpid(), e->d_name);
		s->tid[s->n] = atoi(e->d_name);
		s->cpu[s->n] = proc_cpu(path, s->comm[s->n], sizeof(s->comm[0]));
		s->n++;
	}
	if (dir)
		closedir(dir);
	const char *bp = getenv("PF_BROKER_PID");
	s->broker = bp && *bp ? process_cpu(bp) : -1;
}

/* Prints the CPU each thread (by name) spent between a and b. */
static void
print_cpu(const char *what, const cpu_snap *a, const cpu_snap *b)
{
	fprintf(stderr, "%s: CPU s:", what);
	for (int i = 0; i < b->n; i++) {
		double was = 0;
		for (int j = 0; j < a->n; j++)
			if (a->tid[j] == b->tid[i])
				was = a->cpu[j];
		if (b->cpu[i] - was > 0.0005)
			fprintf(stderr, " %s %.3f", b->comm[i], b->cpu[i] - was);
	}
	if (b->broker >= 0)
		fprintf(stderr, " | broker process %.3f", b->broker - a->broker);
	fprintf(stderr, "\n");
}

/* Seconds to fetch the n messages of partitions 0..nparts-1 (plus the
 * warm-up one). */
static double
fetch(const char *bs, const char *topic, long n, int nparts, const char *queued_min)
{
	rd_kafka_conf_t *c = client_conf(bs);
	char err[256];
	set(c, "group.id", "pf-bench");
	if (queued_min)
		set(c, "queued.min.messages", queued_min);
	set(c, "enable.auto.commit", "false");
	set(c, "fetch.max.bytes", "52428800");
	set(c, "max.partition.fetch.bytes", "10485760");
	set(c, "queued.max.messages.kbytes", "1048576");
	bool stats = getenv("PF_STATS") && *getenv("PF_STATS");
	if (getenv("PF_DEBUG"))
		set(c, "debug", getenv("PF_DEBUG"));
	/* PF_CONSUMER="k=v k=v": more consumer settings (both brokers) */
	const char *more = getenv("PF_CONSUMER");
	char kv[256];
	for (int off = 0, len; more && sscanf(more + off, " %255s%n", kv, &len) == 1; off += len) {
		char *eq = strchr(kv, '=');
		if (!eq) {
			fprintf(stderr, "PF_CONSUMER: %s: not k=v\n", kv);
			exit(2);
		}
		*eq = 0;
		set(c, kv, eq + 1);
	}
	if (stats) {
		set(c, "statistics.interval.ms", "100");
		rd_kafka_conf_set_stats_cb(c, stats_cb);
	}
	rd_kafka_t *k = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof(err));
	rd_kafka_poll_set_consumer(k);
	cpu_snap before, after;
	snap(&before);
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(nparts);
	for (int i = 0; i < nparts; i++)
		rd_kafka_topic_partition_list_add(l, topic, i)->offset = RD_KAFKA_OFFSET_BEGINNING;
	double t0 = now_s();
	rd_kafka_assign(k, l);
	long got = 0;
	n++; /* the warm-up message at offset 0 too */
	/* the clock is read only now and then: per message it was a tenth of
	 * this thread's time */
	for (long polls = 0; got < n && (polls++ % 4096 || now_s() - t0 < 300);) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(k, 100);
		if (!m)
			continue;
		if (!m->err && ++got % 100000 == 0 && stats)
			fprintf(stderr, "%.3f s: %ld messages\n", now_s() - t0, got);
		rd_kafka_message_destroy(m);
	}
	double dt = now_s() - t0;
	if (got != n)
		fprintf(stderr, "warning: fetched %ld of %ld\n", got, n);
	if (stats) {
		snap(&after);
		/* one more statistics round for the counts at the end */
		double t1 = now_s();
		while (now_s() - t1 < 0.25)
			rd_kafka_poll(k, 50);
		print_cpu(bs, &before, &after);
		/* the partition leader's entry: the broker with most Fetch requests */
		long long fetches = 0, rxbytes = 0, rtt = 0;
		for (const char *p = last_stats ? strstr(last_stats, "\"brokers\":") : NULL;
		     p && (p = strstr(p, "\"nodeid\":")); p++) {
			long long f = json_int(strstr(p, "\"req\":"), "Fetch");
			if (f > fetches) {
				fetches = f;
				rxbytes = json_int(p, "rxbytes");
				rtt = json_int(strstr(p, "\"rtt\":"), "avg");
			}
		}
		fprintf(stderr,
			"%s: %lld Fetch requests, %lld bytes received, %.0f bytes and %.0f "
			"messages per Fetch, rtt avg %lld us\n",
			bs, fetches, rxbytes, fetches ? (double)rxbytes / fetches : 0,
			fetches ? (double)n / fetches : 0, rtt);
	}
	rd_kafka_topic_partition_list_destroy(l);
	rd_kafka_consumer_close(k);
	rd_kafka_destroy(k);
	return dt;
}

/* The second fetch row's queued.min.messages: librdkafka stops fetching
 * while its queue holds 100000 messages (the default) and looks again up to
 * a second later; one full-size response (50 MB: 480,000 records of 100 B)
 * is over that, the mock's (one message set per partition) is not. */
#define QUEUED_MIN "10000000"

typedef struct result {
	double produce1, produce_all, fetch, fetch_qmin;
	int fetch_parts;
} result;

static result
run(const char *bs, rd_kafka_mock_cluster_t *mc, const char *tag, long n, int sz)
{
	char t1[64], ta[64], tf[64];
	snprintf(t1, sizeof(t1), "pf-%s-acks1-%d", tag, (int)getpid());
	snprintf(ta, sizeof(ta), "pf-%s-acksall-%d", tag, (int)getpid());
	snprintf(tf, sizeof(tf), "pf-%s-fetch-%d", tag, (int)getpid());
	result r = {1, 1, 1, 1, 0};
	/* PF_ONLY=fetch: the fetch rows only (to profile the consumer) */
	const char *only = getenv("PF_ONLY");
	if (!only || strcmp(only, "fetch") != 0) {
		r.produce1 = produce(bs, t1, "1", n, sz, 1);
		r.produce_all = produce(bs, ta, "all", n, sz, 1);
	}
	/* record overhead ~ 20 bytes; at most 4 MiB per partition */
	int nparts = (int)(((double)n * (sz + 20)) / (4 << 20)) + 1;
	create_topic(bs, mc, tf, nparts);
	produce(bs, tf, "1", n, sz, nparts);
	r.fetch = fetch(bs, tf, n, nparts, NULL);
	r.fetch_qmin = fetch(bs, tf, n, nparts, QUEUED_MIN);
	r.fetch_parts = nparts;
	return r;
}

static void
row(const char *what, long n, int sz, double a, double b)
{
	double mb = (double)n * sz / 1e6;
	printf("%-20s %12.0f %9.1f %12.0f %9.1f %8.2f\n", what, n / a, mb / a, n / b, mb / b,
	       b / a);
}

static void
fetch_rows(long n, int sz, int nparts, const result *a, const result *b)
{
	char what[64];
	snprintf(what, sizeof(what), "fetch (%d parts)", nparts);
	row(what, n, sz, a->fetch, b->fetch);
	row("  queued.min 1e7", n, sz, a->fetch_qmin, b->fetch_qmin);
}

/* --tls PLAIN_BOOTSTRAP TLS_BOOTSTRAP CA_FILE [N [SIZE]]: the same cohortd
 * through its PLAINTEXT and its SSL listener, one after the other. */
static int
main_tls(int argc, char **argv)
{
	long n = argc > 5 ? atol(argv[5]) : 1000000;
	int sz = argc > 6 ? atoi(argv[6]) : 100;
	result pl = run(argv[2], NULL, "plain", n, sz);
	tls_ca = argv[4];
	result tl = run(argv[3], NULL, "tls", n, sz);
	printf("%ld messages of %d bytes, one client, one cohortd\n", n, sz);
	printf("%-20s %12s %9s %12s %9s %8s\n", "", "TLS", "", "PLAINTEXT", "", "");
	printf("%-20s %12s %9s %12s %9s %8s\n", "scenario", "msgs/s", "MB/s", "msgs/s", "MB/s",
	       "ratio");
	row("produce acks=1", n, sz, tl.produce1, pl.produce1);
	row("produce acks=all", n, sz, tl.produce_all, pl.produce_all);
	fetch_rows(n, sz, pl.fetch_parts, &tl, &pl);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc >= 5 && strcmp(argv[1], "--tls") == 0)
		return main_tls(argc, argv);
	if (argc < 2) {
		fprintf(stderr,
			"usage: pf_bench BOOTSTRAP [N [SIZE]]\n"
			"       pf_bench --tls PLAIN_BOOTSTRAP TLS_BOOTSTRAP CA_FILE [N [SIZE]]\n");
		return 2;
	}
	long n = argc > 2 ? atol(argv[2]) : 1000000;
	int sz = argc > 3 ? atoi(argv[3]) : 100;
	bool mock_only = strcmp(argv[1], "-") == 0;
	result co = {1, 1, 1, 1, 0};
	if (!mock_only)
		co = run(argv[1], NULL, "cohort", n, sz);

	/* librdkafka's mock cluster, one broker, in this process. */
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	char err[256];
	rd_kafka_t *h = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, sizeof(err));
	rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(h, 1);
	result mo = run(rd_kafka_mock_cluster_bootstraps(mc), mc, "mock", n, sz);
	rd_kafka_mock_cluster_destroy(mc);
	rd_kafka_destroy(h);

	printf("%ld messages of %d bytes, one client%s\n", n, sz,
	       mock_only ? " (mock only: the cohortd column is a placeholder)" : "");
	printf("%-20s %12s %9s %12s %9s %8s\n", "", "cohortd", "", "rdk mock", "", "");
	printf("%-20s %12s %9s %12s %9s %8s\n", "scenario", "msgs/s", "MB/s", "msgs/s", "MB/s",
	       "ratio");
	row("produce acks=1", n, sz, co.produce1, mo.produce1);
	row("produce acks=all", n, sz, co.produce_all, mo.produce_all);
	fetch_rows(n, sz, mo.fetch_parts, &co, &mo);
	return 0;
}
