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
 *   beforehand (untimed) with the N messages, reading them all from offset 0.
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
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Seconds to fetch the n messages of partitions 0..nparts-1 (plus the
 * warm-up one). */
static double
fetch(const char *bs, const char *topic, long n, int nparts)
{
	rd_kafka_conf_t *c = client_conf(bs);
	char err[256];
	set(c, "group.id", "pf-bench");
	set(c, "enable.auto.commit", "false");
	set(c, "fetch.max.bytes", "52428800");
	set(c, "max.partition.fetch.bytes", "10485760");
	set(c, "queued.max.messages.kbytes", "1048576");
	rd_kafka_t *k = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof(err));
	rd_kafka_poll_set_consumer(k);
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(nparts);
	for (int i = 0; i < nparts; i++)
		rd_kafka_topic_partition_list_add(l, topic, i)->offset = RD_KAFKA_OFFSET_BEGINNING;
	double t0 = now_s();
	rd_kafka_assign(k, l);
	long got = 0;
	n++; /* the warm-up message at offset 0 too */
	while (got < n && now_s() - t0 < 300) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(k, 100);
		if (!m)
			continue;
		if (!m->err)
			got++;
		rd_kafka_message_destroy(m);
	}
	double dt = now_s() - t0;
	if (got != n)
		fprintf(stderr, "warning: fetched %ld of %ld\n", got, n);
	rd_kafka_topic_partition_list_destroy(l);
	rd_kafka_consumer_close(k);
	rd_kafka_destroy(k);
	return dt;
}

typedef struct result {
	double produce1, produce_all, fetch;
	int fetch_parts;
} result;

static result
run(const char *bs, rd_kafka_mock_cluster_t *mc, const char *tag, long n, int sz)
{
	char t1[64], ta[64], tf[64];
	snprintf(t1, sizeof(t1), "pf-%s-acks1-%d", tag, (int)getpid());
	snprintf(ta, sizeof(ta), "pf-%s-acksall-%d", tag, (int)getpid());
	snprintf(tf, sizeof(tf), "pf-%s-fetch-%d", tag, (int)getpid());
	result r;
	r.produce1 = produce(bs, t1, "1", n, sz, 1);
	r.produce_all = produce(bs, ta, "all", n, sz, 1);
	/* record overhead ~ 20 bytes; at most 4 MiB per partition */
	int nparts = (int)(((double)n * (sz + 20)) / (4 << 20)) + 1;
	create_topic(bs, mc, tf, nparts);
	produce(bs, tf, "1", n, sz, nparts);
	r.fetch = fetch(bs, tf, n, nparts);
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
	char what[64];
	snprintf(what, sizeof(what), "fetch (%d parts)", pl.fetch_parts);
	row(what, n, sz, tl.fetch, pl.fetch);
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
	result co = {1, 1, 1, 0};
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
	char what[64];
	snprintf(what, sizeof(what), "fetch (%d parts)", mo.fetch_parts);
	row(what, n, sz, co.fetch, mo.fetch);
	return 0;
}
