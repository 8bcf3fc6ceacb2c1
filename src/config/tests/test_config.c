/*
 * test_config.c: broker config (file, --set, synonyms, listeners, errors,
 * DescribeConfigs) and topic configs (validation, defaults, describe).
 */
#include "common/ch_test.h"
#include "config/ch_config.h"

#include <stdlib.h>
#include <unistd.h>

static char tmpdir[256];

static void
cleanup(void)
{
	if (!tmpdir[0])
		return;
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup failed: %s\n", tmpdir);
}

static const char *
write_file(const char *name, const char *text)
{
	static char path[512];
	if (!tmpdir[0]) {
		const char *base = getenv("TMPDIR");
		snprintf(tmpdir, sizeof(tmpdir), "%s/ch_config_XXXXXX", base ? base : "/tmp");
		if (!mkdtemp(tmpdir))
			abort();
		atexit(cleanup);
	}
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "wb");
	fputs(text, f);
	fclose(f);
	return path;
}

static const char *
desc(const struct ch_config *cfg, const char *name, ch_config_entry *e)
{
	if (ch_config_describe(cfg, name, e) != CH_OK)
		return "(no such key)";
	return e->value ? e->value : "(null)";
}

static void
t_defaults(void)
{
	struct ch_config c;
	ch_config_init(&c);
	CH_CHECK_EQ_INT(c.node_id, 1);
	CH_CHECK_EQ_STR(c.listener.name, "PLAINTEXT");
	CH_CHECK_EQ_STR(c.listener.host, "127.0.0.1");
	CH_CHECK_EQ_INT(c.listener.port, 9092);
	CH_CHECK_EQ_STR(c.advertised.host, "127.0.0.1");
	CH_CHECK_EQ_STR(c.log_dir, "./data");
	CH_CHECK(c.broker_rack == NULL);
	CH_CHECK_EQ_INT(c.log_level, CH_LOG_INFO);
	CH_CHECK_EQ_INT(c.num_partitions, 1);
	CH_CHECK_EQ_INT(c.default_replication_factor, 1);
	CH_CHECK(c.auto_create_topics_enable);
	CH_CHECK(c.delete_topic_enable);
	CH_CHECK_EQ_INT(c.socket_request_max_bytes, 104857600);
	CH_CHECK_EQ_INT(c.connections_max_idle_ms, 600000);
	CH_CHECK_EQ_INT(c.message_max_bytes, 1048588);
	CH_CHECK_EQ_INT(c.log_segment_bytes, 1073741824);
	CH_CHECK_EQ_INT(c.log_roll_ms, 168LL * 3600000);
	CH_CHECK_EQ_INT(c.log_roll_jitter_ms, 0);
	CH_CHECK_EQ_INT(c.log_retention_ms, 604800000);
	CH_CHECK_EQ_INT(c.log_retention_bytes, -1);
	CH_CHECK_EQ_INT(c.log_retention_check_interval_ms, 300000);
	CH_CHECK(c.log_flush_interval_messages == INT64_MAX);
	CH_CHECK(c.log_flush_interval_ms == INT64_MAX);
	CH_CHECK_EQ_INT(c.log_cleanup_policy, CH_CLEANUP_DELETE);
	CH_CHECK_EQ_INT(c.log_cleaner_delete_retention_ms, 86400000);
	CH_CHECK(c.log_cleaner_min_cleanable_ratio == 0.5);
	CH_CHECK_EQ_INT(c.log_message_timestamp_type, CH_TIMESTAMP_CREATE_TIME);
	CH_CHECK_EQ_INT(c.compression_type, CH_COMPRESSION_PRODUCER);
	CH_CHECK_EQ_INT(c.offsets_topic_num_partitions, 50);
	CH_CHECK_EQ_INT(c.offsets_topic_replication_factor, 1);
	CH_CHECK_EQ_INT(c.offsets_retention_minutes, 10080);
	CH_CHECK_EQ_INT(c.offsets_retention_check_interval_ms, 600000);
	CH_CHECK_EQ_INT(c.offset_metadata_max_bytes, 4096);
	CH_CHECK_EQ_INT(c.offsets_commit_timeout_ms, 5000);
	CH_CHECK_EQ_INT(c.group_min_session_timeout_ms, 6000);
	CH_CHECK_EQ_INT(c.group_max_session_timeout_ms, 1800000);
	CH_CHECK_EQ_INT(c.group_initial_rebalance_delay_ms, 3000);
	CH_CHECK_EQ_INT(c.group_max_size, 2147483647);
	ch_config_free(&c);
}

/* \u escapes become UTF-8 as Java's Properties.load + String.getBytes
 * make them (checked with JDK 17: a pair is one 4-byte character, a lone
 * surrogate '?'); \u0000 is refused with a message, not silently cut. */
static void
t_file_unicode(void)
{
	const char *path = write_file("unicode.properties",
				      "broker.rack = r\\uD83D\\uDE00x\\uD800y\\u00e9\\uDE00\n");
	struct ch_config c;
	char err[512] = "";
	ch_config_init(&c);
	CH_CHECK_EQ_INT(ch_config_load_file(&c, path, err, sizeof(err)), CH_OK);
	CH_CHECK_EQ_INT(ch_config_finish(&c, err, sizeof(err)), CH_OK);
	CH_CHECK_EQ_STR(c.broker_rack, "r\xf0\x9f\x98\x80x?y\xc3\xa9?");
	ch_config_free(&c);
	static const char *const bad[][2] = {
		{"broker.rack = a\\u0000b\n",
		 "\\u0000 (NUL) is not allowed in the value of 'broker.rack'"},
		{"broker.r\\u0000ck = a\n", "\\u0000 (NUL) is not allowed in a key"},
		{"broker.rack = a\\u00\n",
		 "malformed \\uXXXX escape in the value of 'broker.rack'"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		path = write_file("unicode.properties", bad[i][0]);
		ch_config_init(&c);
		CH_CHECK_EQ_INT(ch_config_load_file(&c, path, err, sizeof(err)), CH_ERR);
		CH_CHECK(strncmp(err, bad[i][1], strlen(bad[i][1])) == 0);
		ch_config_free(&c);
	}
}

static void
t_file_syntax(void)
{
	const char *path = write_file("syntax.properties", "# a comment\n"
							   "   ! another comment \\\n"
							   "num.partitions=3\n"
							   "\n"
							   "  default.replication.factor : 1  \r\n"
							   "log.retention.bytes\t 12345\n"
							   "auto.create.topics.enable = FALSE\n"
							   "log.cleanup.policy = delete, \\\n"
							   "       compact\n"
							   "broker.rack = rack\\u0041\\ 1\n"
							   "log.dirs=/var/lib/cohort\n"
							   "num.partitions=4\n"
							   "message.max.bytes");
	struct ch_config c;
	char err[512] = "";
	ch_config_init(&c);
	/* message.max.bytes with no value is an empty value: an error at line 13 */
	CH_CHECK(ch_config_load_file(&c, path, err, sizeof(err)) == CH_ERR);
	char want[600];
	snprintf(want, sizeof(want),
		 "invalid value '' for message.max.bytes: expected an integer >= 0 (%s:13)", path);
	CH_CHECK_EQ_STR(err, want);
	CH_CHECK(ch_config_finish(&c, err, sizeof(err)) == CH_OK);
	CH_CHECK_EQ_INT(c.num_partitions, 4);
	CH_CHECK_EQ_INT(c.log_retention_bytes, 12345);
	CH_CHECK(!c.auto_create_topics_enable);
	CH_CHECK_EQ_INT(c.log_cleanup_policy, CH_CLEANUP_DELETE | CH_CLEANUP_COMPACT);
	CH_CHECK_EQ_STR(c.broker_rack, "rackA 1");
	CH_CHECK_EQ_STR(c.log_dir, "/var/lib/cohort");
	ch_config_entry e;
	CH_CHECK_EQ_STR(desc(&c, "log.cleanup.policy", &e), "delete,compact");
	CH_CHECK_EQ_INT(e.type, CH_CONFIG_TYPE_LIST);
	CH_CHECK_EQ_STR(desc(&c, "auto.create.topics.enable", &e), "false");
	CH_CHECK_EQ_INT(e.source, CH_CONFIG_SOURCE_STATIC_BROKER_CONFIG);
	CH_CHECK(!e.is_default);
	ch_config_free(&c);
}

static void
t_errors(void)
{
	struct ch_config c;
	char err[512] = "", want[600];
	const char *path = write_file("unknown.properties", "num.partitions=2\n\nfoo=bar\n");
	CH_CHECK(ch_config_load(&c, path, NULL, 0, err, sizeof(err)) == CH_ERR);
	snprintf(want, sizeof(want), "unknown configuration key 'foo' (%s:3)", path);
	CH_CHECK_EQ_STR(err, want);
	ch_config_free(&c);

	/* continuation lines count toward the next key's line number */
	path = write_file("cont.properties", "listeners=PLAINTEXT://\\\n  :9092\nbar=1\n");
	CH_CHECK(ch_config_load(&c, path, NULL, 0, err, sizeof(err)) == CH_ERR);
	snprintf(want, sizeof(want), "unknown configuration key 'bar' (%s:3)", path);
	CH_CHECK_EQ_STR(err, want);
	CH_CHECK_EQ_STR(c.listener.host, "127.0.0.1"); /* finish did not run */
	ch_config_free(&c);

	ch_config_init(&c);
	CH_CHECK(ch_config_set(&c, "num.partitions", "abc", NULL, err, sizeof(err)) == CH_ERR);
	CH_CHECK_EQ_STR(err, "invalid value 'abc' for num.partitions: expected an integer >= 1");
	CH_CHECK(ch_config_set(&c, "num.partitions", "0", NULL, err, sizeof(err)) == CH_ERR);
	CH_CHECK(ch_config_set(&c, "num.partitions", "99999999999", NULL, err, sizeof(err)) ==
		 CH_ERR);
	CH_CHECK(ch_config_set(&c, "num.partitions", "1.5", NULL, err, sizeof(err)) == CH_ERR);
	CH_CHECK(ch_config_set_arg(&c, "delete.topic.enable=yes", err, sizeof(err)) == CH_ERR);
	CH_CHECK_EQ_STR(
		err, "invalid value 'yes' for delete.topic.enable: expected true or false (--set)");
	CH_CHECK(ch_config_set_arg(&c, "compression.type=LZ4", err, sizeof(err)) == CH_ERR);
	CH_CHECK_EQ_STR(err, "invalid value 'LZ4' for compression.type: expected one of: "
			     "uncompressed, zstd, lz4, snappy, gzip, producer (--set)");
	CH_CHECK(ch_config_set_arg(&c, "log.cleanup.policy=delete,shred", err, sizeof(err)) ==
		 CH_ERR);
	CH_CHECK(ch_config_set_arg(&c, "log.cleaner.min.cleanable.ratio=1.5", err, sizeof(err)) ==
		 CH_ERR);
	CH_CHECK_EQ_STR(err, "invalid value '1.5' for log.cleaner.min.cleanable.ratio: "
			     "expected a number between 0 and 1 (--set)");
	CH_CHECK(ch_config_set_arg(&c, "log.dirs=/a,/b", err, sizeof(err)) == CH_ERR);
	CH_CHECK_EQ_STR(err, "invalid value '/a,/b' for log.dirs: cohort supports exactly one log "
			     "directory (--set)");
	CH_CHECK(ch_config_set_arg(&c, "num.partitions", err, sizeof(err)) == CH_ERR);
	CH_CHECK_EQ_STR(err, "--set expects key=value, got 'num.partitions'");
	CH_CHECK(ch_config_set_arg(&c, "retention.ms=5", err, sizeof(err)) == CH_ERR);
	CH_CHECK(strstr(err, "unknown configuration key 'retention.ms' (--set)") == err);
	CH_CHECK(strstr(err, "log.retention.ms") != NULL);
	CH_CHECK(ch_config_set_arg(&c, "log.level=DEBUG", err, sizeof(err)) == CH_OK);
	CH_CHECK(ch_config_set_arg(&c, "log.level=loud", err, sizeof(err)) == CH_ERR);
	/* admin.listeners: one http://host:port, or empty (off) */
	CH_CHECK(c.admin_enabled && c.admin_listener.port == 9644);
	CH_CHECK(strcmp(c.admin_listener.host, "127.0.0.1") == 0);
	CH_CHECK(ch_config_set_arg(&c, "admin.listeners=PLAINTEXT://127.0.0.1:1", err,
				   sizeof(err)) == CH_ERR);
	CH_CHECK(strstr(err, "admin.listeners") != NULL);
	CH_CHECK(ch_config_set_arg(&c, "admin.listeners=http://[::1]:70000", err, sizeof(err)) ==
		 CH_ERR);
	CH_CHECK(ch_config_set_arg(&c, "admin.listeners=HTTP://[::1]:0", err, sizeof(err)) ==
		 CH_OK);
	/* failed sets leave the old values */
	CH_CHECK(ch_config_finish(&c, err, sizeof(err)) == CH_OK);
	CH_CHECK_EQ_INT(c.num_partitions, 1);
	CH_CHECK_EQ_INT(c.log_level, CH_LOG_DEBUG);
	CH_CHECK(c.admin_enabled && strcmp(c.admin_listener.host, "::1") == 0);
	CH_CHECK(ch_config_set_arg(&c, "admin.listeners=", err, sizeof(err)) == CH_OK);
	CH_CHECK(ch_config_finish(&c, err, sizeof(err)) == CH_OK);
	CH_CHECK(!c.admin_enabled);
	ch_config_free(&c);

	snprintf(want, sizeof(want), "%s/does-not-exist.properties", tmpdir);
	CH_CHECK(ch_config_load(&c, want, NULL, 0, err, sizeof(err)) == CH_ERR);
	CH_CHECK(strstr(err, "cannot open config file") == err);
	CH_CHECK(strstr(err, "does-not-exist.properties") != NULL);
	ch_config_free(&c);
}

static void
t_set_overrides_file(void)
{
	const char *path = write_file("ov.properties", "num.partitions=3\nnode.id=7\n");
	const char *sets[] = {"num.partitions=5", " log.level = trace "};
	struct ch_config c;
	char err[512];
	CH_CHECK(ch_config_load(&c, path, sets, 2, err, sizeof(err)) == CH_OK);
	CH_CHECK_EQ_INT(c.num_partitions, 5);
	CH_CHECK_EQ_INT(c.node_id, 7);
	CH_CHECK_EQ_INT(c.log_level, CH_LOG_TRACE);
	ch_config_entry e;
	CH_CHECK_EQ_STR(desc(&c, "num.partitions", &e), "5");
	CH_CHECK_EQ_INT(e.source, CH_CONFIG_SOURCE_STATIC_BROKER_CONFIG);
	ch_config_free(&c);
}

static void
t_synonyms(void)
{
	struct ch_config c;
	char err[512];
	const char *s1[] = {"broker.id=4"};
	CH_CHECK(ch_config_load(&c, NULL, s1, 1, err, sizeof(err)) == CH_OK);
	CH_CHECK_EQ_INT(c.node_id, 4);
	ch_config_free(&c);
	const char *s2[] = {"broker.id=4", "node.id=5"};
	CH_CHECK(ch_config_load(&c, NULL, s2, 2, err, sizeof(err)) == CH_ERR);
	CH_CHECK(strstr(err, "broker.id") && strstr(err, "node.id"));
	ch_config_free(&c);

	const char *s3[] = {"log.dir=/x"};
	CH_CHECK(ch_config_load(&c, NULL, s3, 1, err, sizeof(err)) == CH_OK);
	CH_CHECK_EQ_STR(c.log_dir, "/x");
	ch_config_free(&c);
	const char *s4[] = {"log.dir=/x", "log.dirs=/y"};
	CH_CHECK(ch_config_load(&c, NULL, s4, 2, err, sizeof(err)) == CH_OK);
	CH_CHECK_EQ_STR(c.log_dir, "/y");
	ch_config_free(&c);

	const char *s5[] = {"log.retention.hours=1", "log.retention.minutes=2"};
	CH_CHECK(ch_config_load(&c, NULL, s5, 2, err, sizeof(err)) == CH_OK);
	CH_CHECK_EQ_INT(c.log_retention_ms, 120000);
	ch_config_free(&c);
	const char *s6[] = {"log.retention.ms=5", "log.retention.minutes=2"};
	CH_CHECK(ch_config_load(&c, NULL, s6, 2, err, sizeof(err)) == CH_OK);
	CH_CHECK_EQ_INT(c.log_retention_ms, 5);
	ch_config_free(&c);
	const char *s7[] = {"log.retention.hours=-1", "log.roll.hours=2",
			    "log.flush.interval.ms=1000", "log.roll.jitter.hours=1"};
	CH_CHECK(ch_config_load(&c, NULL, s7, 4, err, sizeof(err)) == CH_OK);
	CH_CHECK_EQ_INT(c.log_retention_ms, -1);
	CH_CHECK_EQ_INT(c.log_roll_ms, 7200000);
	CH_CHECK_EQ_INT(c.log_roll_jitter_ms, 3600000);
	CH_CHECK_EQ_INT(c.log_flush_interval_ms, 1000);
	ch_config_free(&c);
	const char *s8[] = {"log.roll.ms=10", "log.roll.hours=2"};
	CH_CHECK(ch_config_load(&c, NULL, s8, 2, err, sizeof(err)) == CH_OK);
	CH_CHECK_EQ_INT(c.log_roll_ms, 10);
	ch_config_free(&c);
}

/* One --set list that must fail in ch_config_finish with a message naming
 * every key in `keys` (NULL-terminated). */
static void
check_rejected(const char *const *sets, size_t n, const char *const *keys)
{
	struct ch_config c;
	char err[512] = "";
	CH_CHECK(ch_config_load(&c, NULL, sets, n, err, sizeof(err)) == CH_ERR);
	for (size_t i = 0; keys[i]; i++)
		if (!strstr(err, keys[i])) {
			CH_CHECK(strstr(err, keys[i]) != NULL);
			fprintf(stderr, "  message: %s\n", err);
		}
	ch_config_free(&c);
}

static void
check_accepted(const char *const *sets, size_t n)
{
	struct ch_config c;
	char err[512] = "";
	CH_CHECK(ch_config_load(&c, NULL, sets, n, err, sizeof(err)) == CH_OK);
	if (err[0])
		fprintf(stderr, "  message: %s\n", err);
	ch_config_free(&c);
}

static void
t_cross_keys(void)
{
	const char *s1[] = {"group.min.session.timeout.ms=60000",
			    "group.max.session.timeout.ms=30000"};
	check_rejected(s1, 2,
		       (const char *[]){"group.min.session.timeout.ms",
					"group.max.session.timeout.ms", "60000", NULL});
	const char *s1ok[] = {"group.min.session.timeout.ms=30000",
			      "group.max.session.timeout.ms=30000"};
	check_accepted(s1ok, 2);
	/* the default max (1800000) against a raised min */
	const char *s1b[] = {"group.min.session.timeout.ms=1800001"};
	check_rejected(s1b, 1, (const char *[]){"group.max.session.timeout.ms", NULL});

	/* Kafka: a positive queued.max.request.bytes holds at least one request. */
	const char *sq[] = {"queued.max.request.bytes=1000", "socket.request.max.bytes=1001"};
	check_rejected(
		sq, 2,
		(const char *[]){"queued.max.request.bytes", "socket.request.max.bytes", NULL});
	const char *sqok[] = {"queued.max.request.bytes=-1", "socket.request.max.bytes=1001"};
	check_accepted(sqok, 2);

	/* max.connections.per.ip 0 needs overrides (Kafka's words); overrides are
	 * IP:COUNT with address literals. */
	const char *sp0[] = {"max.connections.per.ip=0"};
	check_rejected(sp0, 1,
		       (const char *[]){"max.connections.per.ip can be set to zero only if "
					"max.connections.per.ip.overrides property is set.",
					NULL});
	const char *sp1[] = {"max.connections.per.ip.overrides=localhost:3"};
	check_rejected(sp1, 1, (const char *[]){"localhost", "not an IP address", NULL});
	const char *sp2[] = {"max.connections.per.ip.overrides=127.0.0.1:x"};
	check_rejected(sp2, 1, (const char *[]){"IP:COUNT", NULL});
	const char *spok[] = {"max.connections.per.ip=0",
			      "max.connections.per.ip.overrides=127.0.0.1:3,[::1]:2,10.0.0.1:0"};
	struct ch_config pc;
	char perr[512] = "";
	CH_CHECK(ch_config_load(&pc, NULL, spok, 2, perr, sizeof(perr)) == CH_OK);
	CH_CHECK_EQ_INT(ch_config_max_connections_per_ip(&pc, "127.0.0.1"), 3);
	CH_CHECK_EQ_INT(ch_config_max_connections_per_ip(&pc, "::1"), 2);
	CH_CHECK_EQ_INT(ch_config_max_connections_per_ip(&pc, "10.0.0.1"), 0);
	CH_CHECK_EQ_INT(ch_config_max_connections_per_ip(&pc, "127.0.0.2"), 0);
	ch_config_free(&pc);

	const char *s2[] = {"default.replication.factor=3"};
	check_rejected(s2, 1,
		       (const char *[]){"default.replication.factor", "single broker", NULL});
	const char *s3[] = {"offsets.topic.replication.factor=3"};
	check_rejected(s3, 1, (const char *[]){"offsets.topic.replication.factor", NULL});
	const char *s23ok[] = {"default.replication.factor=1",
			       "offsets.topic.replication.factor=1"};
	check_accepted(s23ok, 2);

	/* Kafka: retention must be -1 or >= 1 ms, whichever key gave it */
	const char *s4[] = {"log.retention.ms=0"};
	check_rejected(s4, 1, (const char *[]){"log.retention.ms", NULL});
	const char *s5[] = {"log.retention.minutes=0"};
	check_rejected(s5, 1, (const char *[]){"log.retention.minutes", NULL});
	const char *s6[] = {"log.retention.hours=0"};
	check_rejected(s6, 1, (const char *[]){"log.retention.hours", NULL});
	const char *s6ok[] = {"log.retention.hours=0", "log.retention.ms=1"};
	check_accepted(s6ok, 2);

	const char *s7[] = {"log.cleaner.dedupe.buffer.size=4194304", "log.cleaner.threads=4"};
	check_rejected(
		s7, 2,
		(const char *[]){"log.cleaner.dedupe.buffer.size", "log.cleaner.threads", NULL});
	const char *s7ok[] = {"log.cleaner.dedupe.buffer.size=4194304", "log.cleaner.threads=3"};
	check_accepted(s7ok, 2);

	const char *s8[] = {"log.cleaner.min.compaction.lag.ms=100",
			    "log.cleaner.max.compaction.lag.ms=10"};
	check_rejected(s8, 2,
		       (const char *[]){"log.cleaner.min.compaction.lag.ms",
					"log.cleaner.max.compaction.lag.ms", NULL});
	const char *s8ok[] = {"log.cleaner.min.compaction.lag.ms=10",
			      "log.cleaner.max.compaction.lag.ms=10"};
	check_accepted(s8ok, 2);
}

static void
t_listeners(void)
{
	ch_listener l;
	char err[512];
	CH_CHECK(ch_listener_parse("PLAINTEXT://:9093", &l, err, sizeof(err)) == CH_OK);
	CH_CHECK_EQ_STR(l.host, "");
	CH_CHECK_EQ_INT(l.port, 9093);
	CH_CHECK(ch_listener_parse("plaintext://[::1]:0", &l, err, sizeof(err)) == CH_OK);
	CH_CHECK_EQ_STR(l.name, "PLAINTEXT");
	CH_CHECK_EQ_STR(l.host, "::1");
	CH_CHECK_EQ_INT(l.port, 0);
	CH_CHECK(ch_listener_parse("PLAINTEXT://[fe80::1%eth0]:9092", &l, err, sizeof(err)) ==
		 CH_OK);
	CH_CHECK_EQ_STR(l.host, "fe80::1%eth0");
	CH_CHECK(ch_listener_parse("PLAINTEXT://my-host.example.com:19092", &l, err, sizeof(err)) ==
		 CH_OK);
	CH_CHECK_EQ_STR(l.host, "my-host.example.com");
	CH_CHECK(ch_listener_parse("SSL://:9093", &l, err, sizeof(err)) == CH_OK);
	CH_CHECK(ch_listener_parse("client://:9093", &l, err, sizeof(err)) == CH_OK);
	CH_CHECK_EQ_STR(l.name, "CLIENT");
	CH_CHECK(ch_listener_parse("CLI.ENT://:9093", &l, err, sizeof(err)) == CH_ERR);
	CH_CHECK(ch_listener_parse("PLAINTEXT://host", &l, err, sizeof(err)) == CH_ERR);
	CH_CHECK(ch_listener_parse("PLAINTEXT://host:65536", &l, err, sizeof(err)) == CH_ERR);
	CH_CHECK(ch_listener_parse("PLAINTEXT://host:-1", &l, err, sizeof(err)) == CH_ERR);
	CH_CHECK(ch_listener_parse("PLAINTEXT://host:x1", &l, err, sizeof(err)) == CH_ERR);
	CH_CHECK(ch_listener_parse("PLAINTEXT://::1:9092", &l, err, sizeof(err)) == CH_ERR);
	CH_CHECK(ch_listener_parse("PLAINTEXT://[::1:9092", &l, err, sizeof(err)) == CH_ERR);
	CH_CHECK(ch_listener_parse("127.0.0.1:9092", &l, err, sizeof(err)) == CH_ERR);

	struct ch_config c;
	const char *s1[] = {"listeners=PLAINTEXT://0.0.0.0:9092"};
	CH_CHECK(ch_config_load(&c, NULL, s1, 1, err, sizeof(err)) == CH_ERR);
	CH_CHECK(strstr(err, "nonroutable meta-address 0.0.0.0") != NULL);
	ch_config_free(&c);
	const char *s2[] = {"listeners=PLAINTEXT://0.0.0.0:9092",
			    "advertised.listeners=PLAINTEXT://broker1:19092"};
	CH_CHECK(ch_config_load(&c, NULL, s2, 2, err, sizeof(err)) == CH_OK);
	CH_CHECK_EQ_STR(c.listener.host, "0.0.0.0");
	CH_CHECK_EQ_STR(c.advertised.host, "broker1");
	CH_CHECK_EQ_INT(c.advertised.port, 19092);
	ch_config_free(&c);
	const char *s3[] = {"listeners=PLAINTEXT://:1,PLAINTEXT://:2"};
	CH_CHECK(ch_config_load(&c, NULL, s3, 1, err, sizeof(err)) == CH_ERR);
	CH_CHECK(strstr(err, "invalid value 'PLAINTEXT://:1,PLAINTEXT://:2' for listeners") == err);
	CH_CHECK(strstr(err, "Each listener must have a different name") != NULL);
	ch_config_free(&c);
	const char *s4[] = {"listeners=CLIENT://:9093"};
	CH_CHECK(ch_config_load(&c, NULL, s4, 1, err, sizeof(err)) == CH_ERR);
	CH_CHECK(strstr(err, "for listeners") &&
		 strstr(err, "No security protocol defined for listener CLIENT"));
	ch_config_free(&c);
	const char *s5[] = {"listeners="};
	CH_CHECK(ch_config_load(&c, NULL, s5, 1, err, sizeof(err)) == CH_ERR);
	ch_config_free(&c);
	const char *s6[] = {"listeners= PLAINTEXT://[::]:9092 ",
			    "advertised.listeners=PLAINTEXT://:9092"};
	CH_CHECK(ch_config_load(&c, NULL, s6, 2, err, sizeof(err)) == CH_OK);
	CH_CHECK_EQ_STR(c.listener.host, "::");
	ch_config_entry e;
	CH_CHECK_EQ_STR(desc(&c, "listeners", &e), "PLAINTEXT://[::]:9092");
	ch_config_free(&c);
}

/* Several listeners, the protocol map, advertised.listeners per listener and
 * listener.name.NAME.KEY settings. */
static void
t_listeners_many(void)
{
	struct ch_config c;
	char err[512];
	const char *ok[] = {
		"listeners=PLAINTEXT://127.0.0.1:0,INTERNAL://:9094,SASL_PLAINTEXT://[::1]:9095",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:SSL,"
		"SASL_PLAINTEXT:SASL_PLAINTEXT",
		"advertised.listeners=INTERNAL://broker.internal:19094",
		"ssl.keystore.type=PEM",
		"listener.name.internal.ssl.keystore.location=/k.pem",
		"listener.name.internal.ssl.client.auth=required",
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=/t.pem",
		"ssl.keystore.password=secret",
		"sasl.enabled.mechanisms=PLAIN",
		"listener.name.sasl_plaintext.sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config="
		"org.apache.kafka.common.security.plain.PlainLoginModule required user_a=\"b\";",
	};
	CH_CHECK(ch_config_load(&c, NULL, ok, CH_ARRAY_LEN(ok), err, sizeof(err)) == CH_OK);
	CH_CHECK_EQ_INT(c.nlisteners, 3);
	CH_CHECK_EQ_STR(c.listeners[1].name, "INTERNAL");
	CH_CHECK_EQ_INT(c.listener_sec[0].protocol, CH_SEC_PLAINTEXT);
	CH_CHECK_EQ_INT(c.listener_sec[1].protocol, CH_SEC_SSL);
	CH_CHECK_EQ_INT(c.listener_sec[2].protocol, CH_SEC_SASL_PLAINTEXT);
	/* advertised: INTERNAL's own, the others their listener's address */
	CH_CHECK_EQ_STR(c.advertised_of[1].host, "broker.internal");
	CH_CHECK_EQ_INT(c.advertised_of[1].port, 19094);
	CH_CHECK_EQ_STR(c.advertised_of[2].host, "::1");
	CH_CHECK_EQ_STR(c.advertised.host, "127.0.0.1");
	/* per-listener values win; the others inherit the plain key */
	CH_CHECK_EQ_STR(c.listener_sec[1].ssl_keystore_location, "/k.pem");
	CH_CHECK_EQ_INT(c.listener_sec[1].ssl_client_auth, CH_SSL_CLIENT_AUTH_REQUIRED);
	CH_CHECK(c.listener_sec[0].ssl_keystore_location == NULL);
	CH_CHECK_EQ_INT(c.listener_sec[0].ssl_client_auth, CH_SSL_CLIENT_AUTH_NONE);
	CH_CHECK_EQ_INT(c.listener_sec[1].ssl_enabled_protocols, CH_TLS_V1_2 | CH_TLS_V1_3);
	CH_CHECK_EQ_INT(c.listener_sec[2].sasl_mechanisms, CH_SASL_SCRAM_SHA_512 | CH_SASL_PLAIN);
	CH_CHECK_EQ_INT(c.listener_sec[0].sasl_mechanisms, CH_SASL_PLAIN);
	CH_CHECK(strstr(c.listener_sec[2].plain_jaas, "user_a=\"b\"") != NULL);
	CH_CHECK_EQ_INT(c.listener_sec[2].sasl_server_max_receive_size, 524288);
	CH_CHECK_EQ_INT(c.connection_failed_authentication_delay_ms, 100);
	CH_CHECK_EQ_INT(ch_config_listener_index(&c, "internal"), 1);
	/* passwords are never described */
	ch_config_entry e;
	CH_CHECK(ch_config_describe(&c, "ssl.keystore.password", &e) == CH_OK);
	CH_CHECK(e.value == NULL && e.sensitive && e.type == CH_CONFIG_TYPE_PASSWORD);
	CH_CHECK(ch_config_describe(&c, "ssl.keystore.location", &e) == CH_OK);
	CH_CHECK(!e.sensitive);
	ch_config_free(&c);

	struct {
		const char *set[3];
		const char *msg;
	} bad[] = {
		{{"listeners=PLAINTEXT://:9092,SSL://:9092"}, "must have a different port"},
		{{"listeners=PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092", "ssl.keystore.type=PEM",
		  "ssl.keystore.location=/k"},
		 NULL},
		{{"advertised.listeners=SSL://h:1"}, "subset of the ones defined in listeners"},
		{{"listener.security.protocol.map=PLAINTEXT:TLS"}, "unknown security protocol"},
		{{"listener.security.protocol.map=A:SSL,a:SSL"}, "mapped twice"},
		{{"listener.name.ssl.ssl.keystore.location=/k"}, "there is no listener ssl"},
		{{"listener.name.plaintext.num.partitions=3"}, "cannot be set per listener"},
		{{"listener.name.PLAINTEXT.ssl.client.auth=none"}, "NAME in lower case"},
		{{"listener.name.plaintext.ssl.client.auth=always"}, "expected one of"},
		{{"listeners=SSL://:1", "ssl.keystore.type=PEM"}, "needs ssl.keystore.location"},
		{{"listeners=SSL://:1", "ssl.keystore.location=/k"}, "reads PEM key stores only"},
		{{"listeners=SSL://:1", "ssl.keystore.type=PEM", "ssl.keystore.location=/k"}, NULL},
		{{"listeners=SSL://:1", "ssl.keystore.type=PEM", "ssl.keystore.key=x"},
		 "needs ssl.keystore.location"},
		{{"listeners=SASL_PLAINTEXT://:1"}, "not GSSAPI"},
		{{"listeners=SASL_PLAINTEXT://:1", "sasl.enabled.mechanisms="}, "not GSSAPI"},
		{{"sasl.enabled.mechanisms=OAUTHBEARER"}, "is not one of"},
		{{"listeners=SASL_PLAINTEXT://:1", "sasl.enabled.mechanisms=SCRAM-SHA-256"}, NULL},
	};
	for (size_t i = 0; i < CH_ARRAY_LEN(bad); i++) {
		size_t n = 0;
		while (n < 3 && bad[i].set[n])
			n++;
		int rc = ch_config_load(&c, NULL, bad[i].set, n, err, sizeof(err));
		if (bad[i].msg) {
			CH_CHECK(rc == CH_ERR);
			if (!strstr(err, bad[i].msg))
				fprintf(stderr, "case %zu: '%s' lacks '%s'\n", i, err, bad[i].msg);
			CH_CHECK(strstr(err, bad[i].msg) != NULL);
		} else {
			if (rc != CH_OK)
				fprintf(stderr, "case %zu: %s\n", i, err);
			CH_CHECK(rc == CH_OK);
		}
		ch_config_free(&c);
	}
}

static void
t_describe(void)
{
	struct ch_config c;
	char err[512];
	const char *s[] = {"log.retention.hours=24", "log.cleaner.min.cleanable.ratio=1"};
	CH_CHECK(ch_config_load(&c, NULL, s, 2, err, sizeof(err)) == CH_OK);
	ch_config_entry e;
	size_t it = 0, n = 0;
	bool seen_node = false;
	while (ch_config_next(&c, &it, &e)) {
		n++;
		CH_CHECK(e.name && e.doc && e.doc[0]);
		CH_CHECK(e.read_only == !ch_config_is_dynamic(e.name)); /* no dynamic layer yet */
		/* passwords and keys: hidden, of type PASSWORD; the rest shown */
		CH_CHECK(e.sensitive == (e.type == CH_CONFIG_TYPE_PASSWORD));
		CH_CHECK(!e.sensitive || e.value == NULL);
		CH_CHECK(e.type >= CH_CONFIG_TYPE_BOOLEAN && e.type <= CH_CONFIG_TYPE_PASSWORD);
		CH_CHECK(e.is_default == (e.source == CH_CONFIG_SOURCE_DEFAULT_CONFIG));
		if (strcmp(e.name, "node.id") == 0) {
			seen_node = true;
			CH_CHECK_EQ_STR(e.value, "1");
			CH_CHECK_EQ_INT(e.type, CH_CONFIG_TYPE_INT);
		}
	}
	CH_CHECK_EQ_INT(n, ch_config_count());
	CH_CHECK(seen_node);
	CH_CHECK(ch_config_describe(&c, "nope", &e) == CH_ERR);
	CH_CHECK(ch_config_describe(&c, "log.retention.ms", &e) == CH_OK);
	CH_CHECK(e.value == NULL);
	CH_CHECK_EQ_INT(e.source, CH_CONFIG_SOURCE_DEFAULT_CONFIG);
	CH_CHECK_EQ_INT(e.type, CH_CONFIG_TYPE_LONG);
	CH_CHECK_EQ_STR(desc(&c, "log.retention.hours", &e), "24");
	CH_CHECK_EQ_INT(e.source, CH_CONFIG_SOURCE_STATIC_BROKER_CONFIG);
	CH_CHECK_EQ_STR(desc(&c, "log.cleaner.min.cleanable.ratio", &e), "1.0");
	CH_CHECK_EQ_INT(e.type, CH_CONFIG_TYPE_DOUBLE);
	CH_CHECK_EQ_STR(desc(&c, "offsets.topic.replication.factor", &e), "1");
	CH_CHECK_EQ_INT(e.type, CH_CONFIG_TYPE_SHORT);
	CH_CHECK_EQ_STR(desc(&c, "log.flush.interval.messages", &e), "9223372036854775807");
	CH_CHECK_EQ_STR(desc(&c, "log.message.timestamp.type", &e), "CreateTime");
	CH_CHECK_EQ_INT(e.type, CH_CONFIG_TYPE_STRING);
	CH_CHECK_EQ_STR(desc(&c, "delete.topic.enable", &e), "true");
	CH_CHECK_EQ_INT(e.type, CH_CONFIG_TYPE_BOOLEAN);
	CH_CHECK_EQ_INT(c.log_retention_ms, 86400000);
	ch_config_free(&c);
}

static void
t_topic_validate(void)
{
	char err[512];
	CH_CHECK(ch_topic_config_validate("retention.ms", "1000", err, sizeof(err)) == CH_OK);
	CH_CHECK(ch_topic_config_validate("retention.ms", "-1", err, sizeof(err)) == CH_OK);
	CH_CHECK(ch_topic_config_validate("retention.ms", "-2", err, sizeof(err)) == CH_ERR);
	/* Kafka's ConfigDef wording: clients print it. */
	CH_CHECK_EQ_STR(
		err, "Invalid value -2 for configuration retention.ms: Value must be at least -1");
	CH_CHECK(ch_topic_config_validate("retention.ms", "abc", err, sizeof(err)) == CH_ERR);
	CH_CHECK(ch_topic_config_validate("foo.bar", "1", err, sizeof(err)) == CH_ERR);
	CH_CHECK_EQ_STR(err, "Unknown topic config name: foo.bar");
	CH_CHECK(ch_topic_config_validate("cleanup.policy", NULL, err, sizeof(err)) == CH_ERR);
	CH_CHECK(ch_topic_config_validate("cleanup.policy", "compact,delete", err, sizeof(err)) ==
		 CH_OK);
	CH_CHECK(ch_topic_config_validate("cleanup.policy", "compacted", err, sizeof(err)) ==
		 CH_ERR);
	CH_CHECK(ch_topic_config_validate("segment.bytes", "13", err, sizeof(err)) == CH_ERR);
	CH_CHECK(ch_topic_config_validate("segment.bytes", "2147483648", err, sizeof(err)) ==
		 CH_ERR);
	CH_CHECK(ch_topic_config_validate("message.timestamp.type", "LogAppendTime", err,
					  sizeof(err)) == CH_OK);
	CH_CHECK(ch_topic_config_validate("message.timestamp.type", "logappendtime", err,
					  sizeof(err)) == CH_ERR);
	CH_CHECK(ch_topic_config_validate("min.cleanable.dirty.ratio", "0.1", err, sizeof(err)) ==
		 CH_OK);
	CH_CHECK(ch_topic_config_validate("preallocate", "maybe", err, sizeof(err)) == CH_ERR);
	CH_CHECK(ch_topic_config_validate("log.retention.ms", "1", err, sizeof(err)) == CH_ERR);
	CH_CHECK(ch_topic_config_is_known("segment.ms"));
	CH_CHECK(!ch_topic_config_is_known("segment.hours"));

	ch_topic_kv dup[] = {{"retention.ms", "1"}, {"retention.ms", "2"}};
	CH_CHECK(ch_topic_configs_validate(dup, 2, err, sizeof(err)) == CH_ERR);
	ch_topic_kv lag[] = {{"min.compaction.lag.ms", "100"}, {"max.compaction.lag.ms", "10"}};
	CH_CHECK(ch_topic_configs_validate(lag, 2, err, sizeof(err)) == CH_ERR);
	ch_topic_kv ok[] = {{"min.compaction.lag.ms", "1"},
			    {"max.compaction.lag.ms", "10"},
			    {"cleanup.policy", "compact"}};
	CH_CHECK(ch_topic_configs_validate(ok, 3, err, sizeof(err)) == CH_OK);
}

static void
t_topic_defaults(void)
{
	struct ch_config c;
	char err[512];
	const char *s[] = {"log.retention.minutes=10", "log.segment.bytes=1048576",
			   "compression.type=zstd"};
	CH_CHECK(ch_config_load(&c, NULL, s, 3, err, sizeof(err)) == CH_OK);
	ch_topic_config tc;
	ch_topic_config_resolve(&c, NULL, 0, &tc);
	CH_CHECK_EQ_INT(tc.retention_ms, 600000);
	CH_CHECK_EQ_INT(tc.segment_bytes, 1048576);
	CH_CHECK_EQ_INT(tc.max_message_bytes, 1048588);
	CH_CHECK_EQ_INT(tc.compression_type, CH_COMPRESSION_ZSTD);
	CH_CHECK_EQ_INT(tc.cleanup_policy, CH_CLEANUP_DELETE);
	CH_CHECK_EQ_INT(tc.segment_ms, 604800000);
	CH_CHECK(tc.flush_ms == INT64_MAX);
	CH_CHECK(tc.min_cleanable_dirty_ratio == 0.5);

	ch_topic_kv ov[] = {{"retention.ms", "5000"},
			    {"cleanup.policy", "compact"},
			    {"max.message.bytes", " 100 "}};
	ch_topic_config_resolve(&c, ov, 3, &tc);
	CH_CHECK_EQ_INT(tc.retention_ms, 5000);
	CH_CHECK_EQ_INT(tc.cleanup_policy, CH_CLEANUP_COMPACT);
	CH_CHECK_EQ_INT(tc.max_message_bytes, 100);
	CH_CHECK_EQ_INT(tc.segment_bytes, 1048576);

	ch_config_entry e;
	CH_CHECK(ch_topic_config_describe(&c, ov, 3, "retention.ms", &e) == CH_OK);
	CH_CHECK_EQ_STR(e.value, "5000");
	CH_CHECK_EQ_INT(e.source, CH_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
	CH_CHECK(!e.is_default && !e.read_only);
	CH_CHECK(ch_topic_config_describe(&c, NULL, 0, "retention.ms", &e) == CH_OK);
	CH_CHECK_EQ_STR(e.value, "600000");
	/* Kafka's ConfigHelper gives the source of log.retention.ms itself,
	 * unset here: DEFAULT_CONFIG, though the value comes from .minutes. */
	CH_CHECK_EQ_INT(e.source, CH_CONFIG_SOURCE_DEFAULT_CONFIG);
	CH_CHECK(ch_topic_config_describe(&c, NULL, 0, "segment.bytes", &e) == CH_OK);
	CH_CHECK_EQ_INT(e.source, CH_CONFIG_SOURCE_STATIC_BROKER_CONFIG);
	CH_CHECK(ch_topic_config_describe(&c, NULL, 0, "segment.ms", &e) == CH_OK);
	CH_CHECK_EQ_STR(e.value, "604800000");
	CH_CHECK_EQ_INT(e.source, CH_CONFIG_SOURCE_DEFAULT_CONFIG);
	CH_CHECK(e.is_default);
	CH_CHECK(ch_topic_config_describe(&c, NULL, 0, "cleanup.policy", &e) == CH_OK);
	CH_CHECK_EQ_STR(e.value, "delete");
	CH_CHECK_EQ_INT(e.type, CH_CONFIG_TYPE_LIST);
	CH_CHECK(ch_topic_config_describe(&c, NULL, 0, "compression.type", &e) == CH_OK);
	CH_CHECK_EQ_STR(e.value, "zstd");
	CH_CHECK_EQ_INT(e.source, CH_CONFIG_SOURCE_STATIC_BROKER_CONFIG);
	CH_CHECK(ch_topic_config_describe(&c, NULL, 0, "min.cleanable.dirty.ratio", &e) == CH_OK);
	CH_CHECK_EQ_STR(e.value, "0.5");
	CH_CHECK(ch_topic_config_describe(&c, NULL, 0, "flush.ms", &e) == CH_OK);
	CH_CHECK_EQ_STR(e.value, "9223372036854775807");
	CH_CHECK(ch_topic_config_describe(&c, NULL, 0, "log.retention.ms", &e) == CH_ERR);

	size_t it = 0, n = 0, dyn = 0;
	while (ch_topic_config_next(&c, ov, 3, &it, &e)) {
		n++;
		dyn += e.source == CH_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG;
		CH_CHECK(e.value != NULL);
	}
	CH_CHECK_EQ_INT(n, ch_topic_config_count());
	CH_CHECK_EQ_INT(dyn, 3);
	ch_config_free(&c);
}

/* Dynamic broker configs: two layers over the static ones, Kafka's
 * precedence, sources, typed fields and topic defaults following. */
static void
t_dynamic_layers(void)
{
	struct ch_config c;
	char err[512];
	const char *s[] = {"log.retention.ms=1000", "message.max.bytes=2000"};
	CH_CHECK(ch_config_load(&c, NULL, s, 2, err, sizeof(err)) == CH_OK);
	CH_CHECK(ch_config_is_dynamic("log.retention.ms") && !ch_config_is_dynamic("node.id"));
	CH_CHECK(!ch_config_is_dynamic("log.retention.hours") &&
		 !ch_config_is_dynamic("listeners"));
	CH_CHECK(ch_config_is_list("log.cleanup.policy") && !ch_config_is_list("log.retention.ms"));
	CH_CHECK(ch_topic_config_is_list("cleanup.policy") &&
		 !ch_topic_config_is_list("segment.ms"));
	CH_CHECK_EQ_STR(ch_topic_config_default("cleanup.policy"), "delete");

	ch_topic_kv bad1[] = {{"node.id", "2"}, {"log.dirs", "/x"}};
	CH_CHECK(ch_config_check_dynamic(&c, CH_CONFIG_LAYER_BROKER, bad1, 2, err, sizeof(err)) ==
		 CH_ERR);
	CH_CHECK_EQ_STR(err, "Cannot update these configs dynamically: [node.id, log.dirs]");
	ch_topic_kv bad2[] = {{"log.retention.ms", "soon"}};
	CH_CHECK(ch_config_check_dynamic(&c, CH_CONFIG_LAYER_BROKER, bad2, 1, err, sizeof(err)) ==
		 CH_ERR);
	CH_CHECK(strstr(err, "Invalid value soon for configuration log.retention.ms") == err);
	ch_topic_kv bad3[] = {{"no.such", "1"}};
	CH_CHECK(ch_config_check_dynamic(&c, CH_CONFIG_LAYER_DEFAULT, bad3, 1, err, sizeof(err)) ==
		 CH_ERR);
	CH_CHECK_EQ_STR(err, "Unknown broker config name: no.such");

	ch_topic_kv dflt[] = {{"log.retention.ms", "5000"}, {"message.max.bytes", " 3000 "}};
	ch_topic_kv mine[] = {{"log.retention.ms", "7000"}};
	CH_CHECK(ch_config_check_dynamic(&c, CH_CONFIG_LAYER_DEFAULT, dflt, 2, err, sizeof(err)) ==
		 CH_OK);
	CH_CHECK(ch_config_set_dynamic(&c, CH_CONFIG_LAYER_DEFAULT, dflt, 2, err, sizeof(err)) ==
		 CH_OK);
	CH_CHECK_EQ_INT(c.log_retention_ms, 5000);
	CH_CHECK_EQ_INT(c.message_max_bytes, 3000);
	CH_CHECK(ch_config_set_dynamic(&c, CH_CONFIG_LAYER_BROKER, mine, 1, err, sizeof(err)) ==
		 CH_OK);
	CH_CHECK_EQ_INT(c.log_retention_ms, 7000); /* this broker's layer wins */
	ch_config_entry e, syn[8];
	CH_CHECK(ch_config_describe(&c, "log.retention.ms", &e) == CH_OK);
	CH_CHECK(e.source == CH_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG && !e.read_only);
	CH_CHECK_EQ_STR(e.value, "7000");
	/* Kafka's order: layer by layer, the whole synonym group. */
	CH_CHECK_EQ_INT(ch_config_synonyms(&c, "log.retention.ms", syn, 8), 4);
	CH_CHECK(syn[0].source == CH_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG &&
		 syn[1].source == CH_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG &&
		 syn[2].source == CH_CONFIG_SOURCE_STATIC_BROKER_CONFIG &&
		 syn[3].source == CH_CONFIG_SOURCE_DEFAULT_CONFIG);
	CH_CHECK_EQ_STR(syn[2].value, "1000");
	CH_CHECK_EQ_STR(syn[3].name, "log.retention.hours");
	CH_CHECK_EQ_STR(syn[3].value, "168");
	CH_CHECK(ch_config_describe(&c, "message.max.bytes", &e) == CH_OK);
	CH_CHECK(e.source == CH_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG);
	CH_CHECK_EQ_STR(e.value, "3000"); /* normalised */
	/* Topics inherit the value and the source of the layer it came from. */
	ch_topic_config tc;
	ch_topic_config_resolve(&c, NULL, 0, &tc);
	CH_CHECK(tc.retention_ms == 7000 && tc.max_message_bytes == 3000);
	CH_CHECK(ch_topic_config_describe(&c, NULL, 0, "max.message.bytes", &e) == CH_OK);
	CH_CHECK(e.source == CH_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG);
	/* The cluster default layer as DescribeConfigs of "" lists it. */
	size_t it = 0, n = 0;
	while (ch_config_layer_next(&c, CH_CONFIG_LAYER_DEFAULT, &it, &e))
		n++;
	CH_CHECK_EQ_INT(n, 2);
	/* Emptied layers: back to the static values. */
	CH_CHECK(ch_config_set_dynamic(&c, CH_CONFIG_LAYER_BROKER, NULL, 0, err, sizeof(err)) ==
		 CH_OK);
	CH_CHECK(ch_config_set_dynamic(&c, CH_CONFIG_LAYER_DEFAULT, NULL, 0, err, sizeof(err)) ==
		 CH_OK);
	CH_CHECK(c.log_retention_ms == 1000 && c.message_max_bytes == 2000);
	/* A stored entry this build refuses is skipped, the rest applies. */
	ch_topic_kv mixed[] = {{"node.id", "3"}, {"message.max.bytes", "4000"}};
	CH_CHECK(ch_config_set_dynamic(&c, CH_CONFIG_LAYER_BROKER, mixed, 2, err, sizeof(err)) ==
		 CH_ERR);
	CH_CHECK(strstr(err, "node.id") != NULL);
	CH_CHECK(c.node_id == 1 && c.message_max_bytes == 4000);
	ch_config_free(&c);
}

/* authorizer.class.name: Kafka's two class names switch the ACLs on;
 * anything else stops startup naming the key. */
static void
t_authorizer(void)
{
	struct ch_config c;
	char err[512];
	ch_config_init(&c);
	CH_CHECK(ch_config_finish(&c, err, sizeof(err)) == CH_OK);
	CH_CHECK(!c.authorizer_enabled && !c.allow_everyone_if_no_acl_found && !c.super_users);
	static const char *const ok[] = {
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"authorizer.class.name=kafka.security.authorizer.AclAuthorizer"};
	for (size_t i = 0; i < CH_ARRAY_LEN(ok); i++) {
		CH_CHECK(ch_config_set_arg(&c, ok[i], err, sizeof(err)) == CH_OK);
		CH_CHECK(ch_config_finish(&c, err, sizeof(err)) == CH_OK);
		CH_CHECK(c.authorizer_enabled);
	}
	CH_CHECK(ch_config_set_arg(&c, "super.users=User:admin;User:ops", err, sizeof(err)) ==
		 CH_OK);
	CH_CHECK(ch_config_set_arg(&c, "allow.everyone.if.no.acl.found=true", err, sizeof(err)) ==
		 CH_OK);
	CH_CHECK(ch_config_finish(&c, err, sizeof(err)) == CH_OK);
	CH_CHECK_EQ_STR(c.super_users, "User:admin;User:ops");
	CH_CHECK(c.allow_everyone_if_no_acl_found);
	CH_CHECK(ch_config_set_arg(&c, "authorizer.class.name=com.example.MyAuthorizer", err,
				   sizeof(err)) == CH_OK);
	CH_CHECK(ch_config_finish(&c, err, sizeof(err)) == CH_ERR);
	CH_CHECK(strstr(err, "invalid value 'com.example.MyAuthorizer' for "
			     "authorizer.class.name") == err);
	CH_CHECK(ch_config_set_arg(&c, "authorizer.class.name=", err, sizeof(err)) == CH_OK);
	CH_CHECK(ch_config_finish(&c, err, sizeof(err)) == CH_OK);
	CH_CHECK(!c.authorizer_enabled);
	ch_config_free(&c);
}

CH_TEST_MAIN(CH_TEST(t_defaults), CH_TEST(t_dynamic_layers), CH_TEST(t_file_syntax),
	     CH_TEST(t_file_unicode), CH_TEST(t_errors), CH_TEST(t_set_overrides_file),
	     CH_TEST(t_synonyms), CH_TEST(t_cross_keys), CH_TEST(t_listeners),
	     CH_TEST(t_listeners_many), CH_TEST(t_describe), CH_TEST(t_topic_validate),
	     CH_TEST(t_topic_defaults), CH_TEST(t_authorizer))
