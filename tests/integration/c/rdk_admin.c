/* librdkafka's C API against cohortd: rd_kafka_metadata plus the Admin API
 * (CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs).
 *
 *   rdk_admin BOOTSTRAP        e.g. rdk_admin 127.0.0.1:9092
 *
 * Prints one line per check; exits 0 when every check passed, 1 otherwise.
 * Started by test_librdkafka.py, which starts and stops the broker. */
#include <librdkafka/rdkafka.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
static int checks;

static void
check(int ok, const char *where, const char *fmt, ...)
{
	va_list ap;
	checks++;
	if (ok)
		return;
	failures++;
	fprintf(stderr, "FAIL [%s] ", where);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

#define CHECK(ok, ...) check((ok), __func__, __VA_ARGS__)

static const char *
errname(rd_kafka_resp_err_t err)
{
	return rd_kafka_err2name(err);
}

static rd_kafka_AdminOptions_t *
options(rd_kafka_t *rk)
{
	char errstr[256];
	rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_ANY);
	rd_kafka_AdminOptions_set_request_timeout(o, 10000, errstr, sizeof errstr);
	rd_kafka_AdminOptions_set_operation_timeout(o, 8000, errstr, sizeof errstr);
	return o;
}

/* Waits for the admin result of the given type on q (NULL on timeout). */
static rd_kafka_event_t *
wait_result(rd_kafka_queue_t *q, rd_kafka_event_type_t type)
{
	for (int i = 0; i < 60; i++) {
		rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 1000);
		if (!ev)
			continue;
		if (rd_kafka_event_type(ev) == type)
			return ev;
		rd_kafka_event_destroy(ev);
	}
	return NULL;
}

struct want {
	const char *topic;
	rd_kafka_resp_err_t err;
};

/* Checks per-topic results of CreateTopics / DeleteTopics / CreatePartitions. */
static void
check_topic_results(const char *op, const rd_kafka_topic_result_t **res, size_t n,
		    const struct want *want, size_t nwant)
{
	CHECK(n == nwant, "%s: %zu results, expected %zu", op, n, nwant);
	for (size_t w = 0; w < nwant; w++) {
		int found = 0;
		for (size_t i = 0; i < n; i++) {
			if (strcmp(rd_kafka_topic_result_name(res[i]), want[w].topic))
				continue;
			found = 1;
			rd_kafka_resp_err_t err = rd_kafka_topic_result_error(res[i]);
			CHECK(err == want[w].err, "%s %s: got %s (%s), expected %s", op,
			      want[w].topic, errname(err),
			      rd_kafka_topic_result_error_string(res[i])
				      ? rd_kafka_topic_result_error_string(res[i])
				      : "",
			      errname(want[w].err));
		}
		CHECK(found, "%s: no result for %s", op, want[w].topic);
	}
}

struct newtopic {
	const char *name;
	int partitions;
	int rf;
	const char *config_key, *config_value;
};

static void
create_topics(rd_kafka_t *rk, const struct newtopic *t, size_t n, const struct want *want)
{
	char errstr[256];
	rd_kafka_NewTopic_t *nt[8];
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	for (size_t i = 0; i < n; i++) {
		nt[i] = rd_kafka_NewTopic_new(t[i].name, t[i].partitions, t[i].rf, errstr,
					      sizeof errstr);
		if (!nt[i]) {
			fprintf(stderr, "NewTopic_new(%s): %s\n", t[i].name, errstr);
			exit(2);
		}
		if (t[i].config_key)
			rd_kafka_NewTopic_set_config(nt[i], t[i].config_key, t[i].config_value);
	}
	rd_kafka_AdminOptions_t *o = options(rk);
	rd_kafka_CreateTopics(rk, nt, n, o, q);
	rd_kafka_event_t *ev = wait_result(q, RD_KAFKA_EVENT_CREATETOPICS_RESULT);
	CHECK(ev != NULL, "CreateTopics: no result within 60s");
	if (ev) {
		CHECK(rd_kafka_event_error(ev) == RD_KAFKA_RESP_ERR_NO_ERROR,
		      "CreateTopics request failed: %s", rd_kafka_event_error_string(ev));
		size_t cnt = 0;
		const rd_kafka_topic_result_t **res = rd_kafka_CreateTopics_result_topics(
			rd_kafka_event_CreateTopics_result(ev), &cnt);
		check_topic_results("CreateTopics", res, cnt, want, n);
		rd_kafka_event_destroy(ev);
	}
	rd_kafka_AdminOptions_destroy(o);
	rd_kafka_NewTopic_destroy_array(nt, n);
	rd_kafka_queue_destroy(q);
}

static void
delete_topics(rd_kafka_t *rk, const struct want *want, size_t n)
{
	rd_kafka_DeleteTopic_t *dt[8];
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	for (size_t i = 0; i < n; i++)
		dt[i] = rd_kafka_DeleteTopic_new(want[i].topic);
	rd_kafka_AdminOptions_t *o = options(rk);
	rd_kafka_DeleteTopics(rk, dt, n, o, q);
	rd_kafka_event_t *ev = wait_result(q, RD_KAFKA_EVENT_DELETETOPICS_RESULT);
	CHECK(ev != NULL, "DeleteTopics: no result within 60s");
	if (ev) {
		CHECK(rd_kafka_event_error(ev) == RD_KAFKA_RESP_ERR_NO_ERROR,
		      "DeleteTopics request failed: %s", rd_kafka_event_error_string(ev));
		size_t cnt = 0;
		const rd_kafka_topic_result_t **res = rd_kafka_DeleteTopics_result_topics(
			rd_kafka_event_DeleteTopics_result(ev), &cnt);
		check_topic_results("DeleteTopics", res, cnt, want, n);
		rd_kafka_event_destroy(ev);
	}
	rd_kafka_AdminOptions_destroy(o);
	rd_kafka_DeleteTopic_destroy_array(dt, n);
	rd_kafka_queue_destroy(q);
}

static void
create_partitions(rd_kafka_t *rk, const char *topic, int total, rd_kafka_resp_err_t want_err)
{
	char errstr[256];
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_NewPartitions_t *np =
		rd_kafka_NewPartitions_new(topic, (size_t)total, errstr, sizeof errstr);
	if (!np) {
		fprintf(stderr, "NewPartitions_new: %s\n", errstr);
		exit(2);
	}
	rd_kafka_AdminOptions_t *o = options(rk);
	rd_kafka_CreatePartitions(rk, &np, 1, o, q);
	rd_kafka_event_t *ev = wait_result(q, RD_KAFKA_EVENT_CREATEPARTITIONS_RESULT);
	CHECK(ev != NULL, "CreatePartitions: no result within 60s");
	if (ev) {
		CHECK(rd_kafka_event_error(ev) == RD_KAFKA_RESP_ERR_NO_ERROR,
		      "CreatePartitions request failed: %s", rd_kafka_event_error_string(ev));
		size_t cnt = 0;
		const rd_kafka_topic_result_t **res = rd_kafka_CreatePartitions_result_topics(
			rd_kafka_event_CreatePartitions_result(ev), &cnt);
		struct want w = {topic, want_err};
		check_topic_results("CreatePartitions", res, cnt, &w, 1);
		rd_kafka_event_destroy(ev);
	}
	rd_kafka_AdminOptions_destroy(o);
	rd_kafka_NewPartitions_destroy(np);
	rd_kafka_queue_destroy(q);
}

/* DescribeConfigs of one resource. If key is set, the entry must exist and,
 * if value is set too, have that value. Returns the number of entries. */
static int
describe_configs(rd_kafka_t *rk, rd_kafka_ResourceType_t type, const char *name,
		 rd_kafka_resp_err_t want_err, const char *key, const char *value)
{
	int entries = -1;
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_ConfigResource_t *cr = rd_kafka_ConfigResource_new(type, name);
	rd_kafka_AdminOptions_t *o = options(rk);
	rd_kafka_DescribeConfigs(rk, &cr, 1, o, q);
	rd_kafka_event_t *ev = wait_result(q, RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT);
	CHECK(ev != NULL, "DescribeConfigs %s: no result within 60s", name);
	if (ev) {
		CHECK(rd_kafka_event_error(ev) == RD_KAFKA_RESP_ERR_NO_ERROR,
		      "DescribeConfigs %s request failed: %s", name,
		      rd_kafka_event_error_string(ev));
		size_t cnt = 0;
		const rd_kafka_ConfigResource_t **res = rd_kafka_DescribeConfigs_result_resources(
			rd_kafka_event_DescribeConfigs_result(ev), &cnt);
		CHECK(cnt == 1, "DescribeConfigs %s: %zu resources, expected 1", name, cnt);
		if (cnt == 1) {
			rd_kafka_resp_err_t err = rd_kafka_ConfigResource_error(res[0]);
			CHECK(err == want_err, "DescribeConfigs %s: got %s (%s), expected %s", name,
			      errname(err),
			      rd_kafka_ConfigResource_error_string(res[0])
				      ? rd_kafka_ConfigResource_error_string(res[0])
				      : "",
			      errname(want_err));
			CHECK(!strcmp(rd_kafka_ConfigResource_name(res[0]), name),
			      "DescribeConfigs: resource name %s, expected %s",
			      rd_kafka_ConfigResource_name(res[0]), name);
			size_t n = 0;
			const rd_kafka_ConfigEntry_t **ce =
				rd_kafka_ConfigResource_configs(res[0], &n);
			entries = (int)n;
			int found = 0;
			for (size_t i = 0; i < n; i++) {
				const char *k = rd_kafka_ConfigEntry_name(ce[i]);
				const char *v = rd_kafka_ConfigEntry_value(ce[i]);
				if (key && !strcmp(k, key)) {
					found = 1;
					if (value)
						CHECK(v && !strcmp(v, value),
						      "DescribeConfigs %s: %s=%s, expected %s",
						      name, key, v ? v : "(null)", value);
				}
			}
			if (key && want_err == RD_KAFKA_RESP_ERR_NO_ERROR)
				CHECK(found, "DescribeConfigs %s: no entry %s among %zu", name, key,
				      n);
		}
		rd_kafka_event_destroy(ev);
	}
	rd_kafka_AdminOptions_destroy(o);
	rd_kafka_ConfigResource_destroy(cr);
	rd_kafka_queue_destroy(q);
	return entries;
}

struct topic_want {
	const char *name;
	int partitions; /* -1: must be absent */
};

/* rd_kafka_metadata over all topics; returns the broker id. */
static int
check_metadata(rd_kafka_t *rk, const char *host, int port, const struct topic_want *tw, size_t n)
{
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, NULL, &md, 15000);
	CHECK(err == RD_KAFKA_RESP_ERR_NO_ERROR, "rd_kafka_metadata: %s", errname(err));
	if (err)
		return -1;
	int id = -1;
	CHECK(md->broker_cnt == 1, "metadata: %d brokers, expected 1", md->broker_cnt);
	if (md->broker_cnt >= 1) {
		id = md->brokers[0].id;
		CHECK(!strcmp(md->brokers[0].host, host), "metadata: broker host %s, expected %s",
		      md->brokers[0].host, host);
		CHECK(md->brokers[0].port == port, "metadata: broker port %d, expected %d",
		      md->brokers[0].port, port);
		CHECK(md->orig_broker_id == id, "metadata: answered by broker %d, listed %d",
		      md->orig_broker_id, id);
	}
	for (size_t w = 0; w < n; w++) {
		const rd_kafka_metadata_topic_t *t = NULL;
		for (int i = 0; i < md->topic_cnt; i++)
			if (!strcmp(md->topics[i].topic, tw[w].name))
				t = &md->topics[i];
		if (tw[w].partitions < 0) {
			CHECK(t == NULL, "metadata: deleted topic %s still listed", tw[w].name);
			continue;
		}
		CHECK(t != NULL, "metadata: topic %s not listed", tw[w].name);
		if (!t)
			continue;
		CHECK(t->err == RD_KAFKA_RESP_ERR_NO_ERROR, "metadata: topic %s error %s", t->topic,
		      errname(t->err));
		CHECK(t->partition_cnt == tw[w].partitions,
		      "metadata: topic %s has %d partitions, expected %d", t->topic,
		      t->partition_cnt, tw[w].partitions);
		for (int p = 0; p < t->partition_cnt; p++) {
			const rd_kafka_metadata_partition_t *mp = &t->partitions[p];
			CHECK(mp->err == RD_KAFKA_RESP_ERR_NO_ERROR && mp->leader == id &&
				      mp->replica_cnt == 1 && mp->replicas[0] == id &&
				      mp->isr_cnt == 1 && mp->isrs[0] == id,
			      "metadata: %s[%d] err %s leader %d replicas %d isrs %d", t->topic,
			      (int)mp->id, errname(mp->err), mp->leader, mp->replica_cnt,
			      mp->isr_cnt);
		}
	}
	rd_kafka_metadata_destroy(md);
	return id;
}

static void
check_one_topic_metadata(rd_kafka_t *rk, const char *topic, int partitions)
{
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, 15000);
	CHECK(err == RD_KAFKA_RESP_ERR_NO_ERROR, "rd_kafka_metadata(%s): %s", topic, errname(err));
	if (!err) {
		CHECK(md->topic_cnt == 1 && !strcmp(md->topics[0].topic, topic) &&
			      md->topics[0].partition_cnt == partitions,
		      "metadata(%s): %d topics, first with %d partitions", topic, md->topic_cnt,
		      md->topic_cnt ? md->topics[0].partition_cnt : -1);
		rd_kafka_metadata_destroy(md);
	}
	rd_kafka_topic_destroy(rkt);
}

int
main(int argc, char **argv)
{
	if (argc != 2 || !strchr(argv[1], ':')) {
		fprintf(stderr, "usage: %s HOST:PORT\n", argv[0]);
		return 2;
	}
	char host[256];
	const char *colon = strrchr(argv[1], ':');
	snprintf(host, sizeof host, "%.*s", (int)(colon - argv[1]), argv[1]);
	int port = atoi(colon + 1);

	char errstr[512];
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	if (rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], errstr, sizeof errstr) ||
	    rd_kafka_conf_set(conf, "client.id", "cohort-it-c", errstr, sizeof errstr) ||
	    rd_kafka_conf_set(conf, "socket.timeout.ms", "20000", errstr, sizeof errstr)) {
		fprintf(stderr, "conf: %s\n", errstr);
		return 2;
	}
	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
	if (!rk) {
		fprintf(stderr, "rd_kafka_new: %s\n", errstr);
		return 2;
	}
	printf("librdkafka %s against %s\n", rd_kafka_version_str(), argv[1]);

	/* metadata of an empty broker */
	int id = check_metadata(rk, host, port, NULL, 0);

	/* CreateTopics, good and bad in separate requests */
	const struct newtopic good[] = {
		{"c-alpha", 3, 1, NULL, NULL},
		{"c-beta", 1, -1, NULL, NULL},
		{"c-gamma", 2, 1, "cleanup.policy", "compact"},
	};
	const struct want good_want[] = {
		{"c-alpha", RD_KAFKA_RESP_ERR_NO_ERROR},
		{"c-beta", RD_KAFKA_RESP_ERR_NO_ERROR},
		{"c-gamma", RD_KAFKA_RESP_ERR_NO_ERROR},
	};
	create_topics(rk, good, 3, good_want);
	const struct newtopic bad[] = {
		{"c-alpha", 3, 1, NULL, NULL},
		{"c-rf3", 1, 3, NULL, NULL},
		{"c bad name", 1, 1, NULL, NULL},
	};
	const struct want bad_want[] = {
		{"c-alpha", RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS},
		{"c-rf3", RD_KAFKA_RESP_ERR_INVALID_REPLICATION_FACTOR},
		{"c bad name", RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION},
	};
	create_topics(rk, bad, 3, bad_want);

	const struct topic_want after_create[] = {
		{"c-alpha", 3}, {"c-beta", 1}, {"c-gamma", 2}, {"c-rf3", -1}, {"c bad name", -1}};
	check_metadata(rk, host, port, after_create, 5);
	check_one_topic_metadata(rk, "c-alpha", 3);

	/* CreatePartitions: increase only */
	create_partitions(rk, "c-beta", 4, RD_KAFKA_RESP_ERR_NO_ERROR);
	create_partitions(rk, "c-alpha", 2, RD_KAFKA_RESP_ERR_INVALID_PARTITIONS);
	create_partitions(rk, "c-alpha", 3, RD_KAFKA_RESP_ERR_INVALID_PARTITIONS);
	create_partitions(rk, "c-nope", 5, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
	const struct topic_want after_partitions[] = {{"c-alpha", 3}, {"c-beta", 4}};
	check_metadata(rk, host, port, after_partitions, 2);

	/* DescribeConfigs: topic (with the config given at creation), broker, unknown topic */
	int n = describe_configs(rk, RD_KAFKA_RESOURCE_TOPIC, "c-gamma", RD_KAFKA_RESP_ERR_NO_ERROR,
				 "cleanup.policy", "compact");
	CHECK(n > 0, "DescribeConfigs topic c-gamma: %d entries", n);
	char idstr[16];
	snprintf(idstr, sizeof idstr, "%d", id);
	n = describe_configs(rk, RD_KAFKA_RESOURCE_BROKER, idstr, RD_KAFKA_RESP_ERR_NO_ERROR,
			     "num.partitions", NULL);
	CHECK(n > 0, "DescribeConfigs broker %s: %d entries", idstr, n);
	describe_configs(rk, RD_KAFKA_RESOURCE_TOPIC, "c-nope",
			 RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, NULL, NULL);

	/* DeleteTopics */
	const struct want del_want[] = {
		{"c-alpha", RD_KAFKA_RESP_ERR_NO_ERROR},
		{"c-gamma", RD_KAFKA_RESP_ERR_NO_ERROR},
		{"c-nope", RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART},
	};
	delete_topics(rk, del_want, 3);
	const struct topic_want after_delete[] = {{"c-alpha", -1}, {"c-gamma", -1}, {"c-beta", 4}};
	check_metadata(rk, host, port, after_delete, 3);

	rd_kafka_destroy(rk);
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
