/* libcohort configuration: Kafka's defaults, parsing, errors naming the key,
 * a failed set leaving the value unchanged, copies, and the error table. */
#include "client/cl_conf.h"
#include "common/ch_test.h"

static char *
get(const cohort_conf *c, const char *key)
{
	static char buf[512];
	CH_CHECK_EQ_INT(cohort_conf_get(c, key, buf, sizeof(buf), NULL), COHORT_OK);
	return buf;
}

static void
t_defaults(void)
{
	cohort_conf *c = cohort_conf_new();
	CH_CHECK(c != NULL);
	/* ConsumerConfig's defaults, Kafka 4.4 */
	CH_CHECK_EQ_STR(get(c, "session.timeout.ms"), "45000");
	CH_CHECK_EQ_STR(get(c, "heartbeat.interval.ms"), "3000");
	CH_CHECK_EQ_STR(get(c, "max.poll.interval.ms"), "300000");
	CH_CHECK_EQ_STR(get(c, "enable.auto.commit"), "true");
	CH_CHECK_EQ_STR(get(c, "auto.commit.interval.ms"), "5000");
	CH_CHECK_EQ_STR(get(c, "auto.offset.reset"), "latest");
	CH_CHECK_EQ_STR(get(c, "fetch.min.bytes"), "1");
	CH_CHECK_EQ_STR(get(c, "fetch.max.wait.ms"), "500");
	CH_CHECK_EQ_STR(get(c, "fetch.max.bytes"), "52428800");
	CH_CHECK_EQ_STR(get(c, "max.partition.fetch.bytes"), "1048576");
	CH_CHECK_EQ_STR(get(c, "max.poll.records"), "500");
	CH_CHECK_EQ_STR(get(c, "isolation.level"), "read_uncommitted");
	CH_CHECK_EQ_STR(get(c, "metadata.max.age.ms"), "300000");
	CH_CHECK_EQ_STR(get(c, "request.timeout.ms"), "30000");
	CH_CHECK_EQ_STR(get(c, "retry.backoff.ms"), "100");
	CH_CHECK_EQ_STR(get(c, "reconnect.backoff.ms"), "50");
	CH_CHECK_EQ_STR(get(c, "reconnect.backoff.max.ms"), "1000");
	CH_CHECK_EQ_STR(get(c, "partition.assignment.strategy"), "range,cooperative-sticky");
	CH_CHECK_EQ_STR(get(c, "group.id"), "");
	CH_CHECK(c->group_id == NULL);
	CH_CHECK(c->group_instance_id == NULL);
	CH_CHECK_EQ_STR(get(c, "bootstrap.servers"), "");
	CH_CHECK_EQ_INT(c->nbootstrap, 0);
	cohort_conf_free(c);
}

static void
t_set_values(void)
{
	cohort_conf *c = cohort_conf_new();
	char err[256] = "";
	CH_CHECK_EQ_INT(cohort_conf_set(c, "bootstrap.servers", " 127.0.0.1:9092, [::1]:19092 ,b:1",
					err, sizeof(err)),
			COHORT_OK);
	CH_CHECK_EQ_INT(c->nbootstrap, 3);
	CH_CHECK_EQ_STR(c->bootstrap[1].host, "::1");
	CH_CHECK_EQ_INT(c->bootstrap[1].port, 19092);
	CH_CHECK_EQ_STR(get(c, "bootstrap.servers"), "127.0.0.1:9092,[::1]:19092,b:1");
	CH_CHECK_EQ_INT(cohort_conf_set(c, "session.timeout.ms", " 6000 ", err, sizeof(err)),
			COHORT_OK);
	CH_CHECK_EQ_INT(c->session_timeout_ms, 6000);
	/* isolation.level: both of Kafka's values, case insensitive */
	CH_CHECK(!c->read_committed);
	CH_CHECK_EQ_INT(cohort_conf_set(c, "isolation.level", "READ_COMMITTED", err, sizeof(err)),
			COHORT_OK);
	CH_CHECK(c->read_committed);
	CH_CHECK_EQ_STR(get(c, "isolation.level"), "read_committed");
	CH_CHECK_EQ_INT(cohort_conf_set(c, "isolation.level", "read_uncommitted", err, sizeof(err)),
			COHORT_OK);
	CH_CHECK(!c->read_committed);
	CH_CHECK_EQ_STR(get(c, "isolation.level"), "read_uncommitted");
	CH_CHECK_EQ_INT(cohort_conf_set(c, "isolation.level", "read_committed", err, sizeof(err)),
			COHORT_OK);
	cohort_conf *d = cohort_conf_dup(c); /* a consumer's private copy keeps it */
	CH_CHECK(d != NULL && d->read_committed);
	cohort_conf_free(d);
	CH_CHECK_EQ_INT(cohort_conf_set(c, "isolation.level", "read_uncommitted", err, sizeof(err)),
			COHORT_OK);
	CH_CHECK_EQ_INT(cohort_conf_set(c, "enable.auto.commit", "FALSE", err, sizeof(err)),
			COHORT_OK);
	CH_CHECK(!c->enable_auto_commit);
	CH_CHECK_EQ_INT(cohort_conf_set(c, "auto.offset.reset", "Earliest", err, sizeof(err)),
			COHORT_OK);
	CH_CHECK_EQ_INT(c->auto_offset_reset, CL_RESET_EARLIEST);
	CH_CHECK_EQ_INT(
		cohort_conf_set(c, "partition.assignment.strategy",
				"org.apache.kafka.clients.consumer.CooperativeStickyAssignor,"
				"roundrobin",
				err, sizeof(err)),
		COHORT_OK);
	CH_CHECK_EQ_INT(c->nassignors, 2);
	CH_CHECK_EQ_INT(c->assignors[0], CH_ASSIGN_COOPERATIVE_STICKY);
	CH_CHECK_EQ_INT(c->assignors[1], CH_ASSIGN_ROUNDROBIN);
	CH_CHECK_EQ_STR(get(c, "partition.assignment.strategy"), "cooperative-sticky,roundrobin");
	CH_CHECK_EQ_INT(cohort_conf_set(c, "group.id", "g1", err, sizeof(err)), COHORT_OK);
	CH_CHECK_EQ_INT(cohort_conf_set(c, "group.instance.id", "member-1.a_b", err, sizeof(err)),
			COHORT_OK);
	CH_CHECK_EQ_STR(c->group_instance_id, "member-1.a_b");
	CH_CHECK_EQ_INT(cohort_conf_set(c, "metadata.max.age.ms", "9000000000", err, sizeof(err)),
			COHORT_OK);
	CH_CHECK_EQ_STR(get(c, "metadata.max.age.ms"), "9000000000");
	/* NULL restores the default */
	CH_CHECK_EQ_INT(cohort_conf_set(c, "session.timeout.ms", NULL, err, sizeof(err)),
			COHORT_OK);
	CH_CHECK_EQ_INT(c->session_timeout_ms, 45000);
	CH_CHECK_EQ_INT(cohort_conf_set(c, "group.instance.id", NULL, err, sizeof(err)), COHORT_OK);
	CH_CHECK(c->group_instance_id == NULL);
	cohort_conf_free(c);
}

/* Each bad value is refused with the key named and the old value kept. */
static void
t_errors(void)
{
	static const struct {
		const char *key, *value, *expect;
	} bad[] = {
		{"no.such.key", "1", "Unknown configuration key 'no.such.key'"},
		{"session.timeout.ms", "abc",
		 "Invalid value abc for configuration session.timeout.ms: Not a number of type "
		 "INT"},
		{"session.timeout.ms", "2147483648",
		 "Invalid value 2147483648 for configuration session.timeout.ms: Not a number of "
		 "type INT"},
		{"session.timeout.ms", "",
		 "Invalid value  for configuration session.timeout.ms: Not "
		 "a number of type INT"},
		{"max.poll.records", "0",
		 "Invalid value 0 for configuration max.poll.records: Value must be at least 1"},
		{"fetch.min.bytes", "-1",
		 "Invalid value -1 for configuration fetch.min.bytes: Value must be at least 0"},
		{"retry.backoff.ms", "1.5",
		 "Invalid value 1.5 for configuration retry.backoff.ms: Not a number of type LONG"},
		{"enable.auto.commit", "yes",
		 "Invalid value yes for configuration enable.auto.commit: Expected value to be "
		 "either true or false"},
		{"auto.offset.reset", "smallest", NULL},
		{"auto.offset.reset", "by_duration:PT1H", NULL},
		{"isolation.level", "dirty",
		 "Invalid value dirty for configuration isolation.level: String must be one of "
		 "(case insensitive): read_uncommitted, read_committed"},
		{"isolation.level", "", NULL},
		{"group.protocol", "eager",
		 "Invalid value eager for configuration group.protocol: String must be one of "
		 "(case insensitive): CLASSIC, CONSUMER"},
		{"security.protocol", "TLS",
		 "Invalid value TLS for configuration security.protocol: String must be one of "
		 "(case insensitive): PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"},
		{"ssl.enabled.protocols", "TLSv1.1", NULL},
		{"ssl.enabled.protocols", "", NULL},
		{"partition.assignment.strategy", "range,bogus", NULL},
		{"partition.assignment.strategy", "range,range", NULL},
		{"partition.assignment.strategy", "", NULL},
		{"bootstrap.servers", "localhost", NULL},
		{"bootstrap.servers", "a:1,,b:2", NULL},
		{"bootstrap.servers", "a:99999", NULL},
		{"bootstrap.servers", "::1:9092", NULL},
		{"group.instance.id", "", NULL},
		{"group.instance.id", "a b", NULL},
	};
	cohort_conf *c = cohort_conf_new();
	CH_CHECK_EQ_INT(cohort_conf_set(c, "bootstrap.servers", "h:1", NULL, 0), COHORT_OK);
	CH_CHECK_EQ_INT(cohort_conf_set(c, "group.instance.id", "keep", NULL, 0), COHORT_OK);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char before[512], err[512] = "";
		size_t need;
		int known =
			cohort_conf_get(c, bad[i].key, before, sizeof(before), &need) == COHORT_OK;
		CH_CHECK_EQ_INT(cohort_conf_set(c, bad[i].key, bad[i].value, err, sizeof(err)),
				COHORT_ERR__BAD_CONF);
		if (bad[i].expect)
			CH_CHECK_EQ_STR(err, bad[i].expect);
		if (!strstr(err, bad[i].key)) {
			ch_test_failures_++;
			fprintf(stderr, "error for %s=%s does not name the key: %s\n", bad[i].key,
				bad[i].value, err);
		}
		if (known)
			CH_CHECK_EQ_STR(get(c, bad[i].key), before);
	}
	CH_CHECK_EQ_STR(get(c, "bootstrap.servers"), "h:1");
	CH_CHECK_EQ_STR(get(c, "group.instance.id"), "keep");
	CH_CHECK_EQ_INT(cohort_conf_set(c, NULL, "x", NULL, 0), COHORT_ERR__INVALID_ARG);
	cohort_conf_free(c);
}

static void
t_get_and_dup(void)
{
	cohort_conf *c = cohort_conf_new();
	CH_CHECK_EQ_INT(cohort_conf_set(c, "client.id", "abcdef", NULL, 0), COHORT_OK);
	char small[4];
	size_t need = 0;
	CH_CHECK_EQ_INT(cohort_conf_get(c, "client.id", small, sizeof(small), &need),
			COHORT_ERR__INVALID_ARG);
	CH_CHECK_EQ_INT(need, 7);
	CH_CHECK_EQ_INT(cohort_conf_get(c, "nope", small, sizeof(small), &need),
			COHORT_ERR__BAD_CONF);
	CH_CHECK_EQ_INT(cohort_conf_set(c, "bootstrap.servers", "x:1,y:2", NULL, 0), COHORT_OK);
	cohort_conf *d = cohort_conf_dup(c);
	CH_CHECK_EQ_INT(cohort_conf_set(c, "client.id", "changed", NULL, 0), COHORT_OK);
	CH_CHECK_EQ_INT(cohort_conf_set(c, "bootstrap.servers", "z:3", NULL, 0), COHORT_OK);
	CH_CHECK_EQ_STR(get(d, "client.id"), "abcdef");
	CH_CHECK_EQ_STR(get(d, "bootstrap.servers"), "x:1,y:2");
	cohort_conf_free(c);
	cohort_conf_free(d);
}

static void
t_errors_table(void)
{
	CH_CHECK_EQ_STR(cohort_err_name(COHORT_ERR_FENCED_INSTANCE_ID), "FENCED_INSTANCE_ID");
	CH_CHECK_EQ_STR(cohort_err_name(COHORT_ERR__BAD_CONF), "_BAD_CONF");
	CH_CHECK_EQ_STR(cohort_err_name(-1), "UNKNOWN_SERVER_ERROR");
	CH_CHECK_EQ_STR(cohort_err_name(-99), "UNKNOWN");
	CH_CHECK_EQ_STR(cohort_err_str(COHORT_OK), "Success");
	CH_CHECK_EQ_STR(cohort_err_str(COHORT_ERR_REBALANCE_IN_PROGRESS),
			"The group is rebalancing, so a rejoin is needed.");
	CH_CHECK(cohort_err_is_retriable(COHORT_ERR_NOT_COORDINATOR));
	CH_CHECK(cohort_err_is_retriable(COHORT_ERR_COORDINATOR_LOAD_IN_PROGRESS));
	CH_CHECK(!cohort_err_is_retriable(COHORT_ERR_FENCED_INSTANCE_ID));
	CH_CHECK(cohort_err_is_retriable(COHORT_ERR__TIMED_OUT));
	CH_CHECK(cohort_err_is_fatal(COHORT_ERR_FENCED_INSTANCE_ID));
	/* the consumer protocol's: the member stops on them (cg_fatal) */
	CH_CHECK(cohort_err_is_fatal(COHORT_ERR_UNRELEASED_INSTANCE_ID));
	CH_CHECK(cohort_err_is_fatal(COHORT_ERR_UNSUPPORTED_ASSIGNOR));
	CH_CHECK(cohort_err_is_fatal(COHORT_ERR_INVALID_REGULAR_EXPRESSION));
	CH_CHECK(!cohort_err_is_fatal(COHORT_ERR_REBALANCE_IN_PROGRESS));
	CH_CHECK_EQ_STR(cohort_version(), COHORT_VERSION_STR);
}

/* ProducerConfig's keys (the producer itself: test_producer.c). */
static void
t_producer_keys(void)
{
	cohort_conf *c = cohort_conf_new();
	/* ProducerConfig's defaults, Kafka 4.4 */
	CH_CHECK_EQ_STR(get(c, "acks"), "all");
	CH_CHECK_EQ_STR(get(c, "linger.ms"), "5");
	CH_CHECK_EQ_STR(get(c, "batch.size"), "16384");
	CH_CHECK_EQ_STR(get(c, "compression.type"), "none");
	CH_CHECK_EQ_STR(get(c, "enable.idempotence"), "true");
	CH_CHECK_EQ_STR(get(c, "partitioner"), "murmur2_random");
	CH_CHECK_EQ_STR(get(c, "buffer.memory"), "33554432");
	CH_CHECK_EQ_STR(get(c, "max.block.ms"), "60000");
	CH_CHECK_EQ_STR(get(c, "delivery.timeout.ms"), "120000");
	CH_CHECK_EQ_STR(get(c, "max.in.flight.requests.per.connection"), "5");
	CH_CHECK_EQ_STR(get(c, "retries"), "2147483647");
	CH_CHECK_EQ_STR(get(c, "max.request.size"), "1048576");
	char err[256];
	CH_CHECK_EQ_INT(cohort_conf_set(c, "acks", "-1", err, sizeof(err)), COHORT_OK);
	CH_CHECK_EQ_STR(get(c, "acks"), "all");
	CH_CHECK_EQ_INT(cohort_conf_set(c, "acks", "0", err, sizeof(err)), COHORT_OK);
	CH_CHECK_EQ_STR(get(c, "acks"), "0");
	CH_CHECK_EQ_INT(cohort_conf_set(c, "acks", "2", err, sizeof(err)), COHORT_ERR__BAD_CONF);
	CH_CHECK_EQ_STR(err, "Invalid value 2 for configuration acks: String must be one of: all, "
			     "-1, 0, 1");
	CH_CHECK_EQ_STR(get(c, "acks"), "0");
	CH_CHECK_EQ_INT(cohort_conf_set(c, "compression.type", "zstd", err, sizeof(err)),
			COHORT_OK);
	CH_CHECK_EQ_STR(get(c, "compression.type"), "zstd");
	CH_CHECK_EQ_INT(cohort_conf_set(c, "compression.type", "brotli", err, sizeof(err)),
			COHORT_ERR__BAD_CONF);
	CH_CHECK(strstr(err, "configuration compression.type") != NULL);
	CH_CHECK_EQ_INT(cohort_conf_set(c, "partitioner", "consistent_random", err, sizeof(err)),
			COHORT_OK);
	CH_CHECK_EQ_STR(get(c, "partitioner"), "consistent_random");
	CH_CHECK_EQ_INT(cohort_conf_set(c, "partitioner", "java", err, sizeof(err)),
			COHORT_ERR__BAD_CONF);
	CH_CHECK(strstr(err, "configuration partitioner") != NULL);
	CH_CHECK_EQ_INT(cohort_conf_set(c, "linger.ms", "-1", err, sizeof(err)),
			COHORT_ERR__BAD_CONF);
	CH_CHECK_EQ_STR(err,
			"Invalid value -1 for configuration linger.ms: Value must be at least 0");
	CH_CHECK_EQ_INT(
		cohort_conf_set(c, "max.in.flight.requests.per.connection", "0", err, sizeof(err)),
		COHORT_ERR__BAD_CONF);
	/* the user-set marks: a reset to the default clears it */
	CH_CHECK(!cl_conf_user_set(c, "enable.idempotence"));
	CH_CHECK_EQ_INT(cohort_conf_set(c, "enable.idempotence", "true", err, sizeof(err)),
			COHORT_OK);
	CH_CHECK(cl_conf_user_set(c, "enable.idempotence"));
	cohort_conf *d = cohort_conf_dup(c);
	CH_CHECK(cl_conf_user_set(d, "enable.idempotence"));
	CH_CHECK_EQ_INT(cohort_conf_set(c, "enable.idempotence", NULL, err, sizeof(err)),
			COHORT_OK);
	CH_CHECK(!cl_conf_user_set(c, "enable.idempotence"));
	cohort_conf_free(d);
	cohort_conf_free(c);
}

/* The security keys: Kafka's defaults, librdkafka's aliases writing the same value,
 * passwords hidden from cohort_conf_get (Java's Password), and what a client refuses
 * when it is created (with the key named). */
static void
t_security_keys(void)
{
	cohort_conf *c = cohort_conf_new();
	CH_CHECK_EQ_STR(get(c, "security.protocol"), "PLAINTEXT");
	CH_CHECK_EQ_STR(get(c, "sasl.mechanism"), "GSSAPI");
	CH_CHECK_EQ_STR(get(c, "ssl.endpoint.identification.algorithm"), "https");
	CH_CHECK_EQ_STR(get(c, "ssl.enabled.protocols"), "TLSv1.2,TLSv1.3");
	CH_CHECK_EQ_STR(get(c, "ssl.truststore.type"), "JKS");
	CH_CHECK_EQ_INT(cohort_conf_set(c, "security.protocol", "sasl_ssl", NULL, 0), COHORT_OK);
	CH_CHECK_EQ_STR(get(c, "security.protocol"), "SASL_SSL");
	CH_CHECK_EQ_INT(cohort_conf_set(c, "sasl.mechanisms", "SCRAM-SHA-512", NULL, 0), COHORT_OK);
	CH_CHECK_EQ_STR(get(c, "sasl.mechanism"), "SCRAM-SHA-512");
	CH_CHECK_EQ_INT(cohort_conf_set(c, "ssl.ca.location", "/ca.pem", NULL, 0), COHORT_OK);
	CH_CHECK_EQ_STR(get(c, "ssl.truststore.location"), "/ca.pem");
	CH_CHECK_EQ_STR(get(c, "sasl.password"), "");
	CH_CHECK_EQ_INT(cohort_conf_set(c, "sasl.password", "secret", NULL, 0), COHORT_OK);
	CH_CHECK_EQ_STR(get(c, "sasl.password"), "[hidden]");
	CH_CHECK_EQ_INT(cohort_conf_set(c, "ssl.enabled.protocols", " TLSv1.3 ", NULL, 0),
			COHORT_OK);
	CH_CHECK_EQ_STR(get(c, "ssl.enabled.protocols"), "TLSv1.3");
	cohort_conf *d = cohort_conf_dup(c);
	CH_CHECK_EQ_STR(get(d, "ssl.truststore.location"), "/ca.pem");
	CH_CHECK_EQ_STR(get(d, "sasl.password"), "[hidden]");
	cohort_conf_free(d);
	cohort_conf_free(c);

	/* refused at creation, each naming what is wrong */
	static const struct {
		const char *kv[8];
		const char *expect;
	} bad[] = {
		{{"security.protocol", "SASL_PLAINTEXT"}, "sasl.mechanism GSSAPI is not supported"},
		{{"security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "PLAIN"},
		 "needs credentials: sasl.jaas.config, or sasl.username and sasl.password"},
		{{"security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "PLAIN",
		  "sasl.jaas.config",
		  "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;"},
		 "login module 'com.sun.security.auth.module.Krb5LoginModule' is not supported"},
		{{"security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "PLAIN",
		  "sasl.jaas.config",
		  "org.apache.kafka.common.security.plain.PlainLoginModule required "
		  "username=\"a\";"},
		 "needs username and password"},
		{{"security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "PLAIN",
		  "sasl.jaas.config",
		  "org.apache.kafka.common.security.plain.PlainLoginModule required "
		  "username=\"a\" password=\"b\""},
		 "ending with ';'"},
		{{"security.protocol", "SSL", "ssl.truststore.location", "/no/such/ca.pem",
		  "ssl.truststore.type", "PEM"},
		 "ssl.truststore.location: "},
		{{"security.protocol", "SSL", "ssl.truststore.location", "/no/such/ca.pem"},
		 "ssl.truststore.type JKS: libcohort reads PEM trust stores only"},
		{{"security.protocol", "SSL", "ssl.key.location", "/k.pem"},
		 "ssl.certificate.location and ssl.key.location go together"},
		{{"security.protocol", "SSL", "ssl.endpoint.identification.algorithm", "ldap"},
		 "expected https or an empty string"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cohort_conf *x = cohort_conf_new();
		CH_CHECK_EQ_INT(cohort_conf_set(x, "bootstrap.servers", "127.0.0.1:1", NULL, 0),
				COHORT_OK);
		for (int k = 0; bad[i].kv[k]; k += 2)
			CH_CHECK_EQ_INT(cohort_conf_set(x, bad[i].kv[k], bad[i].kv[k + 1], NULL, 0),
					COHORT_OK);
		char err[512] = "";
		cohort_admin *a = cohort_admin_new(x, err, sizeof(err));
		CH_CHECK(a == NULL);
		if (a)
			cohort_admin_free(a);
		if (!strstr(err, bad[i].expect)) {
			ch_test_failures_++;
			fprintf(stderr, "case %zu: got '%s', want '%s'\n", i, err, bad[i].expect);
		}
		cohort_conf_free(x);
	}
}

CH_TEST_MAIN(CH_TEST(t_defaults), CH_TEST(t_security_keys), CH_TEST(t_set_values),
	     CH_TEST(t_errors), CH_TEST(t_get_and_dup), CH_TEST(t_errors_table),
	     CH_TEST(t_producer_keys))
