/*
 * rdk_data: librdkafka's C API on cohortd's data path.
 *
 *   rdk_data BOOTSTRAP TOPIC N
 *
 * Produces N keyed messages with a header through an idempotent producer
 * (enable.idempotence=true: InitProducerId, sequence numbers, acks=all),
 * with lz4, to every partition of TOPIC; then consumes them back with an
 * assign()-ed consumer from the beginning, checks every message once and
 * in order per partition; then looks up offsets by timestamp
 * (rd_kafka_offsets_for_times) and the watermarks. Prints "ok ..." lines
 * and exits 0, or prints "not ok ..." and exits 1.
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			printf("not ok: " __VA_ARGS__);                                            \
			printf("\n");                                                              \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static int delivered, delivery_errors;

static void
dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	(void)opaque;
	if (m->err) {
		if (delivery_errors++ < 5)
			printf("delivery error: %s\n", rd_kafka_err2str(m->err));
	} else {
		delivered++;
	}
}

static rd_kafka_conf_t *
conf_new(const char *bootstrap)
{
	char err[512];
	rd_kafka_conf_t *c = rd_kafka_conf_new();
	if (rd_kafka_conf_set(c, "bootstrap.servers", bootstrap, err, sizeof(err)) !=
	    RD_KAFKA_CONF_OK)
		abort();
	return c;
}

static void
set(rd_kafka_conf_t *c, const char *k, const char *v)
{
	char err[512];
	if (rd_kafka_conf_set(c, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
		fprintf(stderr, "%s: %s\n", k, err);
		exit(2);
	}
}

int
main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: rdk_data BOOTSTRAP TOPIC N\n");
		return 2;
	}
	const char *bs = argv[1], *topic = argv[2];
	int n = atoi(argv[3]);
	char err[512];

	/* ---- produce ---- */
	rd_kafka_conf_t *pc = conf_new(bs);
	set(pc, "enable.idempotence", "true");
	set(pc, "compression.codec", "lz4");
	set(pc, "linger.ms", "5");
	rd_kafka_conf_set_dr_msg_cb(pc, dr_cb);
	rd_kafka_t *p = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof(err));
	if (!p) {
		printf("not ok: producer: %s\n", err);
		return 1;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t t0 = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	for (int i = 0; i < n; i++) {
		char key[32], val[64];
		snprintf(key, sizeof(key), "k%d", i % 101);
		snprintf(val, sizeof(val), "value-%d", i);
		rd_kafka_resp_err_t e;
		while ((e = rd_kafka_producev(
				p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(key, strlen(key)),
				RD_KAFKA_V_VALUE(val, strlen(val)),
				RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
				RD_KAFKA_V_TIMESTAMP(t0 + i), RD_KAFKA_V_HEADER("seq", val + 6, -1),
				RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
			rd_kafka_poll(p, 10);
		CHECK(!e, "producev: %s", rd_kafka_err2str(e));
	}
	rd_kafka_flush(p, 30000);
	CHECK(delivered == n && delivery_errors == 0, "delivered %d of %d (%d errors)", delivered,
	      n, delivery_errors);
	printf("ok produced %d (idempotent, lz4)\n", delivered);

	/* ---- metadata: partitions ---- */
	const struct rd_kafka_metadata *md;
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(p, topic, NULL);
	if (rd_kafka_metadata(p, 0, rkt, &md, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR ||
	    md->topic_cnt != 1) {
		printf("not ok: metadata\n");
		return 1;
	}
	int nparts = md->topics[0].partition_cnt;
	rd_kafka_metadata_destroy(md);
	rd_kafka_topic_destroy(rkt);
	rd_kafka_destroy(p);

	/* ---- consume from the beginning ---- */
	rd_kafka_conf_t *cc = conf_new(bs);
	set(cc, "group.id", "rdk-data-unused"); /* assign() needs no coordinator */
	set(cc, "enable.auto.commit", "false");
	rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, cc, err, sizeof(err));
	rd_kafka_poll_set_consumer(c);
	rd_kafka_topic_partition_list_t *tl = rd_kafka_topic_partition_list_new(nparts);
	for (int i = 0; i < nparts; i++)
		rd_kafka_topic_partition_list_add(tl, topic, i)->offset = RD_KAFKA_OFFSET_BEGINNING;
	rd_kafka_assign(c, tl);
	char *seen = calloc((size_t)n, 1);
	int64_t *last = calloc((size_t)nparts, sizeof(int64_t));
	for (int i = 0; i < nparts; i++)
		last[i] = -1;
	int got = 0, idle = 0;
	while (got < n && idle < 100) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
		if (!m) {
			idle++;
			continue;
		}
		idle = 0;
		if (m->err) {
			if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
				CHECK(0, "consume: %s", rd_kafka_message_errstr(m));
			rd_kafka_message_destroy(m);
			continue;
		}
		int i = -1;
		sscanf((const char *)m->payload, "value-%d", &i);
		CHECK(i >= 0 && i < n && !seen[i], "unexpected or duplicate message %d", i);
		if (i >= 0 && i < n)
			seen[i] = 1;
		CHECK(m->offset == last[m->partition] + 1, "offset gap on partition %d",
		      m->partition);
		last[m->partition] = m->offset;
		rd_kafka_headers_t *hs;
		const void *hv;
		size_t hl;
		CHECK(rd_kafka_message_headers(m, &hs) == 0 &&
			      rd_kafka_header_get_last(hs, "seq", &hv, &hl) == 0 &&
			      atoi((const char *)hv) == i,
		      "header of %d", i);
		got++;
		rd_kafka_message_destroy(m);
	}
	CHECK(got == n, "consumed %d of %d", got, n);
	printf("ok consumed %d from the beginning\n", got);

	/* ---- offsets for times and watermarks ---- */
	int64_t total = 0;
	for (int i = 0; i < nparts; i++) {
		int64_t lo, hi;
		rd_kafka_resp_err_t e =
			rd_kafka_query_watermark_offsets(c, topic, i, &lo, &hi, 10000);
		CHECK(!e && lo == 0 && hi == last[i] + 1, "watermarks of %d: %s %lld %lld", i,
		      rd_kafka_err2str(e), (long long)lo, (long long)hi);
		total += hi;
	}
	CHECK(total == n, "high watermarks add up to %lld", (long long)total);
	rd_kafka_topic_partition_list_t *q = rd_kafka_topic_partition_list_new(nparts);
	for (int i = 0; i < nparts; i++)
		rd_kafka_topic_partition_list_add(q, topic, i)->offset = t0 + n / 2;
	rd_kafka_resp_err_t e = rd_kafka_offsets_for_times(c, q, 10000);
	CHECK(!e, "offsets_for_times: %s", rd_kafka_err2str(e));
	int64_t after = 0;
	for (int i = 0; i < q->cnt; i++) {
		CHECK(!q->elems[i].err, "offsets_for_times partition %d: %s", i,
		      rd_kafka_err2str(q->elems[i].err));
		if (q->elems[i].offset >= 0)
			after += last[i] + 1 - q->elems[i].offset;
	}
	CHECK(after == n - n / 2, "messages at or after the middle timestamp: %lld, want %d",
	      (long long)after, n - n / 2);
	printf("ok offsets_for_times and watermarks\n");
	rd_kafka_topic_partition_list_destroy(q);
	rd_kafka_topic_partition_list_destroy(tl);
	rd_kafka_consumer_close(c);
	rd_kafka_destroy(c);
	free(seen);
	free(last);
	return failures ? 1 : 0;
}
