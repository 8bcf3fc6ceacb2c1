/*
 * ch_config.c: the config tables, the properties parser and DescribeConfigs.
 *
 * Every key keeps its value as a normalised string (NULL for an unset
 * optional key) plus an "explicitly set" flag: the strings are what
 * DescribeConfigs reports, the flag gives the source. ch_config_set validates
 * a value by parsing it (so errors carry FILE:LINE); ch_config_finish parses
 * the strings into the typed fields and resolves synonyms. Topic configs have
 * their own table whose defaults are copied from typed broker fields.
 */
#include "config/ch_config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>

#include "common/ch_props.h"

/* Value kinds. The typed field each one writes is noted. */
enum {
	T_BOOL,      /* bool */
	T_INT,       /* int32_t */
	T_SHORT,     /* int16_t */
	T_LONG,      /* int64_t */
	T_DOUBLE,    /* double */
	T_STRING,    /* char *, points at the stored string */
	T_ENUM,      /* int-sized enum, from choices (case-sensitive, as Kafka) */
	T_ENUM_CI,   /* same, case-insensitive (cohort's log.level) */
	T_BITS,      /* unsigned: OR of a comma-separated list of choices */
	T_LISTENERS, /* ch_listener, resolved by finish */
	T_DIRS,      /* char *, exactly one directory; resolved by finish */
};

#define F_NULLABLE 0x1  /* default is null */
#define F_COHORT 0x2    /* cohort-specific key or default (doc says so) */
#define F_SENSITIVE 0x4 /* a password or key: DescribeConfigs hides it (Kafka's PASSWORD) */
#define F_LISTENER 0x8  /* may be set per listener: listener.name.NAME.KEY */

#define NOFIELD SIZE_MAX

typedef struct choice {
	const char *name;
	int value;
} choice;

/* How to parse and check one value: shared by broker and topic tables. */
typedef struct vspec {
	uint8_t type;
	int64_t min, max;      /* numbers: inclusive range (doubles too) */
	const choice *choices; /* NULL-terminated, for T_ENUM*, T_BITS */
} vspec;

typedef struct cdef {
	const char *name;
	vspec v;
	unsigned flags;
	const char *dflt; /* as a string; NULL = null */
	size_t off;       /* typed field in struct ch_config, or NOFIELD */
	const char *doc;
} cdef;

typedef struct tdef {
	const char *name;
	vspec v;
	size_t off;         /* field in ch_topic_config */
	size_t boff;        /* broker field with the default, same type */
	const char *syn[4]; /* broker keys that feed the default */
	const char *doc;
} tdef;

static const choice compression_choices[] = {
	{"uncompressed", CH_COMPRESSION_NONE},
	{"zstd", CH_COMPRESSION_ZSTD},
	{"lz4", CH_COMPRESSION_LZ4},
	{"snappy", CH_COMPRESSION_SNAPPY},
	{"gzip", CH_COMPRESSION_GZIP},
	{"producer", CH_COMPRESSION_PRODUCER},
	{NULL, 0},
};
static const choice timestamp_choices[] = {
	{"CreateTime", CH_TIMESTAMP_CREATE_TIME},
	{"LogAppendTime", CH_TIMESTAMP_LOG_APPEND_TIME},
	{NULL, 0},
};
static const choice cleanup_choices[] = {
	{"delete", CH_CLEANUP_DELETE},
	{"compact", CH_CLEANUP_COMPACT},
	{NULL, 0},
};
static const choice sasl_mech_choices[] = {
	{"GSSAPI", CH_SASL_GSSAPI},
	{"PLAIN", CH_SASL_PLAIN},
	{"SCRAM-SHA-256", CH_SASL_SCRAM_SHA_256},
	{"SCRAM-SHA-512", CH_SASL_SCRAM_SHA_512},
	{NULL, 0},
};
static const choice tls_protocol_choices[] = {
	{"TLSv1.2", CH_TLS_V1_2},
	{"TLSv1.3", CH_TLS_V1_3},
	{NULL, 0},
};
static const choice client_auth_choices[] = {
	{"none", CH_SSL_CLIENT_AUTH_NONE},
	{"requested", CH_SSL_CLIENT_AUTH_REQUESTED},
	{"required", CH_SSL_CLIENT_AUTH_REQUIRED},
	{NULL, 0},
};
static const choice loglevel_choices[] = {
	{"error", CH_LOG_ERROR}, {"warn", CH_LOG_WARN},   {"info", CH_LOG_INFO},
	{"debug", CH_LOG_DEBUG}, {"trace", CH_LOG_TRACE}, {NULL, 0},
};

/* group.consumer.migration.policy: ch_coord_cg_migration's order. */
static const choice migration_choices[] = {
	{"disabled", 0}, {"downgrade", 1}, {"upgrade", 2}, {"bidirectional", 3}, {NULL, 0},
};

#define V_BOOL                                                                                     \
	{                                                                                          \
		T_BOOL, 0, 0, NULL                                                                 \
	}
#define V_INT(lo, hi)                                                                              \
	{                                                                                          \
		T_INT, lo, hi, NULL                                                                \
	}
#define V_SHORT(lo, hi)                                                                            \
	{                                                                                          \
		T_SHORT, lo, hi, NULL                                                              \
	}
#define V_LONG(lo, hi)                                                                             \
	{                                                                                          \
		T_LONG, lo, hi, NULL                                                               \
	}
#define V_STR                                                                                      \
	{                                                                                          \
		T_STRING, 0, 0, NULL                                                               \
	}
#define V_ENUM(c)                                                                                  \
	{                                                                                          \
		T_ENUM, 0, 0, c                                                                    \
	}
#define OFF(f) offsetof(struct ch_config, f)
#define TOFF(f) offsetof(ch_topic_config, f)

#define LONG_MAX_STR "9223372036854775807"
#define INT_MAX_STR "2147483647"

/* Broker configs. Kafka's defaults unless the doc says "cohort:". */
static const cdef cdefs[] = {
	/* broker */
	{"node.id", V_INT(0, INT32_MAX), F_COHORT, "1", OFF(node_id),
	 "The node id of this server. cohort: defaults to 1; must match meta.properties in the "
	 "data directory."},
	{"broker.id", V_INT(0, INT32_MAX), F_NULLABLE, NULL, NOFIELD,
	 "Synonym of node.id. If both are set they must be equal."},
	{"broker.rack", V_STR, F_NULLABLE, NULL, OFF(broker_rack),
	 "Rack of the broker, reported in Metadata responses."},
	{"listeners",
	 {T_LISTENERS, 0, 0, NULL},
	 F_COHORT,
	 "PLAINTEXT://127.0.0.1:9092",
	 NOFIELD,
	 "Listeners to bind, as NAME://host:port,... (NAME a security protocol or a name mapped "
	 "by listener.security.protocol.map). An empty host binds all interfaces; port 0 picks a "
	 "free port. cohort: default PLAINTEXT://127.0.0.1:9092."},
	{"advertised.listeners",
	 {T_LISTENERS, 0, 0, NULL},
	 F_NULLABLE,
	 NULL,
	 NOFIELD,
	 "Listeners published to clients in Metadata, if different from listeners; each client "
	 "is given the one of the listener it connected to. May not use 0.0.0.0."},
	{"listener.security.protocol.map", V_STR, 0,
	 "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", NOFIELD,
	 "Map between listener names and security protocols, as NAME:PROTOCOL,..."},
	{"log.dirs",
	 {T_DIRS, 0, 0, NULL},
	 F_COHORT,
	 "./data",
	 NOFIELD,
	 "The directory where log data and metadata are kept. If not set, log.dir is used. cohort: "
	 "exactly one directory; default ./data."},
	{"log.dir",
	 {T_DIRS, 0, 0, NULL},
	 F_NULLABLE | F_COHORT,
	 NULL,
	 NOFIELD,
	 "The data directory, used if log.dirs is not set. cohort: no default of its own."},
	{"admin.listeners", V_STR, F_COHORT, "http://127.0.0.1:9644", NOFIELD,
	 "cohort: the HTTP listener of /metrics and the admin API, as http://host:port (port 0 "
	 "picks a free port); empty turns it off. Default http://127.0.0.1:9644 (Redpanda's "
	 "admin port)."},
	{"log.level",
	 {T_ENUM_CI, 0, 0, loglevel_choices},
	 F_COHORT,
	 "info",
	 OFF(log_level),
	 "cohort: log verbosity: error, warn, info, debug or trace."},

	/* network */
	{"socket.request.max.bytes", V_INT(1, INT32_MAX), 0, "104857600",
	 OFF(socket_request_max_bytes), "The maximum number of bytes in a socket request."},
	{"socket.send.buffer.bytes", V_INT(-1, INT32_MAX), 0, "102400",
	 OFF(socket_send_buffer_bytes), "SO_SNDBUF of sockets; -1 uses the OS default."},
	{"socket.receive.buffer.bytes", V_INT(-1, INT32_MAX), 0, "102400",
	 OFF(socket_receive_buffer_bytes), "SO_RCVBUF of sockets; -1 uses the OS default."},
	{"queued.max.request.bytes", V_LONG(INT64_MIN, INT64_MAX), 0, "536870912",
	 OFF(queued_max_request_bytes),
	 "The memory requests may hold, from their size prefix until answered, across all "
	 "connections; a connection whose next request does not fit is not read until memory "
	 "frees. <= 0: unbounded. cohort's default is 512 MiB (Kafka's -1)."},
	{"socket.request.receive.timeout.ms", V_LONG(INT64_MIN, INT64_MAX), 0, "30000",
	 OFF(socket_request_receive_timeout_ms),
	 "cohort: a connection whose request has not fully arrived this long after its first "
	 "byte is closed (Kafka has no such bound: a client trickling bytes is kept). <= 0: "
	 "none."},
	{"connections.max.idle.ms", V_LONG(INT64_MIN, INT64_MAX), 0, "600000",
	 OFF(connections_max_idle_ms), "Idle connections are closed after this many milliseconds."},
	{"max.connections", V_INT(0, INT32_MAX), F_LISTENER, INT_MAX_STR, OFF(max_connections),
	 "The maximum number of connections allowed at any time (per listener: "
	 "listener.name.NAME.max.connections); while reached, new connections wait to be "
	 "accepted."},
	{"max.connections.per.ip", V_INT(0, INT32_MAX), 0, INT_MAX_STR, OFF(max_connections_per_ip),
	 "The maximum number of connections from each IP address; a new connection over it is "
	 "closed. 0 only with max.connections.per.ip.overrides."},
	{"max.connections.per.ip.overrides", V_STR, 0, "", OFF(max_connections_per_ip_overrides),
	 "Per-address exceptions to max.connections.per.ip, as IP:COUNT,... (cohort matches IP "
	 "addresses; host names are refused)."},
	{"max.connection.creation.rate", V_INT(0, INT32_MAX), 0, INT_MAX_STR,
	 OFF(max_connection_creation_rate),
	 "The most connections accepted per second across listeners; faster ones wait to be "
	 "accepted."},
	{"num.network.threads", V_INT(1, INT32_MAX), 0, "3", OFF(num_network_threads),
	 "Accepted for compatibility. cohort: the network runs on one event-loop thread."},
	{"num.io.threads", V_INT(1, INT32_MAX), 0, "8", OFF(num_io_threads),
	 "Accepted for compatibility. cohort: requests run on one event-loop thread."},
	{"fetch.max.bytes", V_INT(1024, INT32_MAX), 0, "57671680", OFF(fetch_max_bytes),
	 "The maximum number of bytes returned for a fetch request."},

	/* security (per listener: listener.name.NAME.KEY) */
	{"sasl.enabled.mechanisms",
	 {T_BITS, 0, 0, sasl_mech_choices},
	 F_LISTENER,
	 "GSSAPI",
	 NOFIELD,
	 "SASL mechanisms of SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512. cohort has no "
	 "GSSAPI (Kafka's default): a SASL listener must set this."},
	{"sasl.server.max.receive.size", V_INT(1, INT32_MAX), F_LISTENER, "524288", NOFIELD,
	 "The largest frame a connection may send before it has authenticated."},
	{"connections.max.reauth.ms", V_LONG(0, INT64_MAX), F_LISTENER, "0", NOFIELD,
	 "SASL session lifetime given to clients that support re-authentication (KIP-368); "
	 "0 means none."},
	{"connection.failed.authentication.delay.ms", V_INT(0, INT32_MAX), 0, "100",
	 OFF(connection_failed_authentication_delay_ms),
	 "How long the answer to a failed SASL authentication is held before it is sent and the "
	 "connection closed (as Kafka: the client learns of the failure only then)."},
	{"authorizer.class.name", V_STR, 0, "", OFF(authorizer_class_name),
	 "The authorizer: org.apache.kafka.metadata.authorizer.StandardAuthorizer (or "
	 "kafka.security.authorizer.AclAuthorizer) switches on cohortd's ACLs; empty: none."},
	{"super.users", V_STR, F_NULLABLE, NULL, OFF(super_users),
	 "Principals allowed everything by the authorizer, separated by ';' "
	 "(User:admin;User:ops)."},
	{"allow.everyone.if.no.acl.found", V_BOOL, 0, "false", OFF(allow_everyone_if_no_acl_found),
	 "With the authorizer, whether a resource no ACL names is open to everyone."},
	{"ssl.keystore.type", V_STR, F_LISTENER, "JKS", NOFIELD,
	 "Format of the key store. cohort reads PEM only (set PEM)."},
	{"ssl.keystore.location", V_STR, F_NULLABLE | F_LISTENER, NULL, NOFIELD,
	 "PEM file with the private key and the certificate chain."},
	{"ssl.keystore.password", V_STR, F_NULLABLE | F_LISTENER | F_SENSITIVE, NULL, NOFIELD,
	 "Password of the key store (PEM: used for the key if ssl.key.password is not set)."},
	{"ssl.key.password", V_STR, F_NULLABLE | F_LISTENER | F_SENSITIVE, NULL, NOFIELD,
	 "Password of the private key."},
	{"ssl.keystore.certificate.chain", V_STR, F_NULLABLE | F_LISTENER | F_SENSITIVE, NULL,
	 NOFIELD, "Certificate chain in PEM, inline (instead of ssl.keystore.location)."},
	{"ssl.keystore.key", V_STR, F_NULLABLE | F_LISTENER | F_SENSITIVE, NULL, NOFIELD,
	 "Private key in PEM, inline (instead of ssl.keystore.location)."},
	{"ssl.truststore.type", V_STR, F_LISTENER, "JKS", NOFIELD,
	 "Format of the trust store. cohort reads PEM only (set PEM)."},
	{"ssl.truststore.location", V_STR, F_NULLABLE | F_LISTENER, NULL, NOFIELD,
	 "PEM file with the certificates that client certificates are checked against."},
	{"ssl.truststore.password", V_STR, F_NULLABLE | F_LISTENER | F_SENSITIVE, NULL, NOFIELD,
	 "Password of the trust store (not used by PEM)."},
	{"ssl.truststore.certificates", V_STR, F_NULLABLE | F_LISTENER | F_SENSITIVE, NULL, NOFIELD,
	 "Trusted certificates in PEM, inline (instead of ssl.truststore.location)."},
	{"ssl.enabled.protocols",
	 {T_BITS, 0, 0, tls_protocol_choices},
	 F_LISTENER,
	 "TLSv1.2,TLSv1.3",
	 NOFIELD,
	 "TLS versions accepted: TLSv1.2, TLSv1.3."},
	{"ssl.cipher.suites", V_STR, F_NULLABLE | F_LISTENER, NULL, NOFIELD,
	 "TLS 1.2 cipher suites (OpenSSL names); if not set, OpenSSL's defaults."},
	{"ssl.client.auth", V_ENUM(client_auth_choices), F_LISTENER, "none", NOFIELD,
	 "Client certificates: none, requested (checked if given) or required."},
	{"ssl.principal.mapping.rules", V_STR, F_LISTENER, "DEFAULT", NOFIELD,
	 "Rules mapping a client certificate's subject to a principal name: DEFAULT or "
	 "RULE:pattern/replacement/[LU], comma-separated (POSIX extended regular expressions)."},

	/* topics */
	{"num.partitions", V_INT(1, INT32_MAX), 0, "1", OFF(num_partitions),
	 "The default number of partitions per topic."},
	{"default.replication.factor", V_INT(1, INT32_MAX), 0, "1", OFF(default_replication_factor),
	 "The default replication factor of new topics. cohort is one node: only 1 can be "
	 "satisfied."},
	{"min.insync.replicas", V_INT(1, INT32_MAX), 0, "1", OFF(min_insync_replicas),
	 "The minimum number of in-sync replicas for acks=all produce requests."},
	{"auto.create.topics.enable", V_BOOL, 0, "true", OFF(auto_create_topics_enable),
	 "Create a topic when a client asks for an unknown one in Metadata."},
	{"delete.topic.enable", V_BOOL, 0, "true", OFF(delete_topic_enable),
	 "Allow DeleteTopics; when false it fails with TOPIC_DELETION_DISABLED."},
	{"message.max.bytes", V_INT(0, INT32_MAX), 0, "1048588", OFF(message_max_bytes),
	 "The largest record batch size allowed (topic config max.message.bytes)."},
	{"compression.type", V_ENUM(compression_choices), 0, "producer", OFF(compression_type),
	 "Final compression of topic data: uncompressed, zstd, lz4, snappy, gzip, or producer "
	 "(keep the producer's codec)."},

	/* log */
	{"log.segment.bytes", V_INT(14, INT32_MAX), 0, "1073741824", OFF(log_segment_bytes),
	 "The maximum size of a single log segment file."},
	{"log.roll.ms", V_LONG(1, INT64_MAX), F_NULLABLE, NULL, OFF(log_roll_ms),
	 "Roll a new segment after this many milliseconds; if not set, log.roll.hours is used."},
	{"log.roll.hours", V_INT(1, INT32_MAX), 0, "168", NOFIELD,
	 "Roll a new segment after this many hours (secondary to log.roll.ms)."},
	{"log.roll.jitter.ms", V_LONG(0, INT64_MAX), F_NULLABLE, NULL, OFF(log_roll_jitter_ms),
	 "Maximum random jitter subtracted from the roll time; if not set, log.roll.jitter.hours "
	 "is used."},
	{"log.roll.jitter.hours", V_INT(0, INT32_MAX), 0, "0", NOFIELD,
	 "Maximum jitter in hours (secondary to log.roll.jitter.ms)."},
	{"log.retention.ms", V_LONG(-1, INT64_MAX), F_NULLABLE, NULL, OFF(log_retention_ms),
	 "Delete a segment once its data is older than this; -1 keeps it forever. If not set, "
	 "log.retention.minutes is used."},
	{"log.retention.minutes", V_INT(-1, INT32_MAX), F_NULLABLE, NULL, NOFIELD,
	 "Retention in minutes (secondary to log.retention.ms); if not set, log.retention.hours is "
	 "used."},
	{"log.retention.hours", V_INT(-1, INT32_MAX), 0, "168", NOFIELD,
	 "Retention in hours (tertiary to log.retention.ms)."},
	{"log.retention.bytes", V_LONG(INT64_MIN, INT64_MAX), 0, "-1", OFF(log_retention_bytes),
	 "Delete old segments once a partition is larger than this; -1 means no size limit."},
	{"log.retention.check.interval.ms", V_LONG(1, INT64_MAX), 0, "300000",
	 OFF(log_retention_check_interval_ms),
	 "How often the cleaner checks for segments eligible for deletion."},
	{"log.segment.delete.delay.ms", V_LONG(0, INT64_MAX), 0, "60000",
	 OFF(log_segment_delete_delay_ms),
	 "How long to wait before deleting a file from the file system."},
	{"log.flush.interval.messages", V_LONG(1, INT64_MAX), 0, LONG_MAX_STR,
	 OFF(log_flush_interval_messages),
	 "Messages accumulated on a partition before an fsync is forced."},
	{"log.flush.interval.ms", V_LONG(0, INT64_MAX), F_NULLABLE, NULL,
	 OFF(log_flush_interval_ms),
	 "Maximum time data sits unflushed; if not set, no time-based flush (Long.MAX_VALUE)."},
	{"log.index.size.max.bytes", V_INT(4, INT32_MAX), 0, "10485760",
	 OFF(log_index_size_max_bytes), "The maximum size of an offset index file."},
	{"log.index.interval.bytes", V_INT(0, INT32_MAX), 0, "4096", OFF(log_index_interval_bytes),
	 "Bytes between entries of the offset index."},
	{"log.preallocate", V_BOOL, 0, "false", OFF(log_preallocate),
	 "Preallocate segment files when creating them."},
	{"log.cleanup.policy",
	 {T_BITS, 0, 0, cleanup_choices},
	 0,
	 "delete",
	 OFF(log_cleanup_policy),
	 "Default cleanup policy of segments beyond retention: a list of delete and/or compact."},
	{"log.cleaner.enable", V_BOOL, 0, "true", OFF(log_cleaner_enable),
	 "Run log compaction for topics with cleanup.policy=compact."},
	{"log.cleaner.threads", V_INT(0, INT32_MAX), 0, "1", OFF(log_cleaner_threads),
	 "The number of log-cleaner threads."},
	{"log.cleaner.backoff.ms", V_LONG(0, INT64_MAX), 0, "15000", OFF(log_cleaner_backoff_ms),
	 "Sleep time of the cleaner when there is nothing to clean."},
	{"log.cleaner.dedupe.buffer.size", V_LONG(INT64_MIN, INT64_MAX), 0, "134217728",
	 OFF(log_cleaner_dedupe_buffer_size),
	 "Memory used for log deduplication across all cleaner threads."},
	{"log.cleaner.min.cleanable.ratio",
	 {T_DOUBLE, 0, 1, NULL},
	 0,
	 "0.5",
	 OFF(log_cleaner_min_cleanable_ratio),
	 "Minimum ratio of dirty log to total log for a log to be eligible for cleaning."},
	{"log.cleaner.min.compaction.lag.ms", V_LONG(0, INT64_MAX), 0, "0",
	 OFF(log_cleaner_min_compaction_lag_ms), "Minimum time a message remains uncompacted."},
	{"log.cleaner.max.compaction.lag.ms", V_LONG(1, INT64_MAX), 0, LONG_MAX_STR,
	 OFF(log_cleaner_max_compaction_lag_ms),
	 "Maximum time a message remains ineligible for compaction."},
	{"log.cleaner.delete.retention.ms", V_LONG(0, INT64_MAX), 0, "86400000",
	 OFF(log_cleaner_delete_retention_ms),
	 "How long tombstones are retained in compacted topics."},
	{"log.message.timestamp.after.max.ms", V_LONG(0, INT64_MAX), 0, "3600000",
	 OFF(log_message_timestamp_after_max_ms),
	 "With CreateTime, a record's timestamp may be at most this far ahead of the broker's "
	 "clock (KIP-937)."},
	{"log.message.timestamp.before.max.ms", V_LONG(0, INT64_MAX), 0, LONG_MAX_STR,
	 OFF(log_message_timestamp_before_max_ms),
	 "With CreateTime, a record's timestamp may be at most this far behind the broker's clock "
	 "(KIP-937)."},
	{"log.message.timestamp.type", V_ENUM(timestamp_choices), 0, "CreateTime",
	 OFF(log_message_timestamp_type),
	 "Record timestamps: CreateTime (producer's) or LogAppendTime (broker's)."},
	{"num.recovery.threads.per.data.dir", V_INT(1, INT32_MAX), 0, "1",
	 OFF(num_recovery_threads_per_data_dir), "Threads used for log recovery at startup."},
	{"producer.id.expiration.ms", V_INT(1, INT32_MAX), 0, "86400000",
	 OFF(producer_id_expiration_ms),
	 "A partition forgets an idempotent producer whose last batch is older than this."},

	/* group coordinator and __consumer_offsets */
	{"offsets.topic.num.partitions", V_INT(1, INT32_MAX), 0, "50",
	 OFF(offsets_topic_num_partitions),
	 "The number of partitions of __consumer_offsets (do not change after deployment)."},
	{"offsets.topic.replication.factor", V_SHORT(1, INT16_MAX), F_COHORT, "1",
	 OFF(offsets_topic_replication_factor),
	 "Replication factor of __consumer_offsets. cohort: one node, default 1 (Kafka's is 3)."},
	{"offsets.topic.segment.bytes", V_INT(1, INT32_MAX), 0, "104857600",
	 OFF(offsets_topic_segment_bytes),
	 "Segment size of __consumer_offsets, kept small for fast compaction and loading."},
	{"offsets.load.buffer.size", V_INT(1, INT32_MAX), 0, "5242880",
	 OFF(offsets_load_buffer_size),
	 "Batch size for reading __consumer_offsets when loading groups."},
	{"offsets.retention.minutes", V_INT(1, INT32_MAX), 0, "10080",
	 OFF(offsets_retention_minutes),
	 "Committed offsets of a group are kept this long after the group becomes empty."},
	{"offsets.retention.check.interval.ms", V_LONG(1, INT64_MAX), 0, "600000",
	 OFF(offsets_retention_check_interval_ms), "How often to check for stale offsets."},
	{"offset.metadata.max.bytes", V_INT(INT32_MIN, INT32_MAX), 0, "4096",
	 OFF(offset_metadata_max_bytes),
	 "The maximum size of the metadata string of an offset commit."},
	{"offsets.commit.timeout.ms", V_INT(1, INT32_MAX), 0, "5000",
	 OFF(offsets_commit_timeout_ms),
	 "An offset commit waits at most this long for its write to be durable."},
	{"group.min.session.timeout.ms", V_INT(INT32_MIN, INT32_MAX), 0, "6000",
	 OFF(group_min_session_timeout_ms), "The minimum session timeout a consumer may register."},
	{"group.max.session.timeout.ms", V_INT(INT32_MIN, INT32_MAX), 0, "1800000",
	 OFF(group_max_session_timeout_ms), "The maximum session timeout a consumer may register."},
	{"group.initial.rebalance.delay.ms", V_INT(INT32_MIN, INT32_MAX), 0, "3000",
	 OFF(group_initial_rebalance_delay_ms),
	 "How long the coordinator waits for more members before the first rebalance of a new "
	 "group."},
	{"group.initial.rebalance.quiet.ms", V_INT(-1, INT32_MAX), F_COHORT, "500",
	 OFF(group_initial_rebalance_quiet_ms),
	 "cohort: once group.initial.rebalance.delay.ms ran out, the first rebalance waits on "
	 "only until no consumer has arrived for this long; -1 is Kafka's rule (the whole delay "
	 "again after any arrival during the last one)."},
	{"group.rebalance.join.waits.for.sync", V_BOOL, F_COHORT, "true",
	 OFF(group_rebalance_join_waits_for_sync),
	 "cohort: a member that joins while a generation is completing waits for that generation "
	 "to be stored and synced, then the next rebalance starts; false is Kafka's rule (the "
	 "generation is abandoned and its members' SyncGroup answered REBALANCE_IN_PROGRESS)."},
	{"group.max.size", V_INT(1, INT32_MAX), 0, INT_MAX_STR, OFF(group_max_size),
	 "The maximum number of members in a single consumer group."},
	/* consumer groups of the consumer rebalance protocol (KIP-848) */
	{"group.consumer.session.timeout.ms", V_INT(1, INT32_MAX), 0, "45000",
	 OFF(group_consumer_session_timeout_ms),
	 "The timeout to detect client failures when using the consumer group protocol."},
	{"group.consumer.min.session.timeout.ms", V_INT(1, INT32_MAX), 0, "45000",
	 OFF(group_consumer_min_session_timeout_ms),
	 "The minimum allowed session timeout for registered consumers."},
	{"group.consumer.max.session.timeout.ms", V_INT(1, INT32_MAX), 0, "60000",
	 OFF(group_consumer_max_session_timeout_ms),
	 "The maximum allowed session timeout for registered consumers."},
	{"group.consumer.heartbeat.interval.ms", V_INT(1, INT32_MAX), 0, "5000",
	 OFF(group_consumer_heartbeat_interval_ms),
	 "The heartbeat interval given to the members of a consumer group."},
	{"group.consumer.min.heartbeat.interval.ms", V_INT(1, INT32_MAX), 0, "5000",
	 OFF(group_consumer_min_heartbeat_interval_ms),
	 "The minimum heartbeat interval for registered consumers."},
	{"group.consumer.max.heartbeat.interval.ms", V_INT(1, INT32_MAX), 0, "15000",
	 OFF(group_consumer_max_heartbeat_interval_ms),
	 "The maximum heartbeat interval for registered consumers."},
	{"group.consumer.max.size", V_INT(1, INT32_MAX), 0, INT_MAX_STR,
	 OFF(group_consumer_max_size),
	 "The maximum number of consumers that a single consumer group can accommodate."},
	{"group.consumer.regex.refresh.interval.ms", V_INT(1, INT32_MAX), 0, "600000",
	 OFF(group_consumer_regex_refresh_interval_ms),
	 "The interval at which the group coordinator will refresh the topics matching the "
	 "group subscribed regexes."},
	{"group.consumer.assignment.interval.ms", V_INT(0, INT32_MAX), 0, "0",
	 OFF(group_consumer_assignment_interval_ms),
	 "The minimum time between two target assignments of a consumer group: changes "
	 "within it get one assignment (KIP-1263; Kafka 4.3+ defaults to 1000, cohortd to 0, "
	 "an assignment at every change)."},
	{"group.consumer.assignor.offload.enable", V_BOOL, 0, "true",
	 OFF(group_consumer_assignor_offload_enable),
	 "Whether the target assignments of large consumer groups are computed on a "
	 "background thread (KIP-1263)."},
	{"group.consumer.assignor.offload.min.partitions", V_INT(0, INT32_MAX), 0, "10000",
	 OFF(group_consumer_assignor_offload_min_partitions),
	 "cohortd's own: a consumer group subscribed to at least this many partitions is "
	 "large (its assignment is offloaded when group.consumer.assignor.offload.enable)."},
	{"group.consumer.assignors", V_STR, 0,
	 "org.apache.kafka.coordinator.group.assignor.UniformAssignor,"
	 "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
	 OFF(group_consumer_assignors),
	 "The server side assignors (uniform, range, or their class names); the first is used "
	 "when a consumer names none."},
	{"group.consumer.migration.policy",
	 {T_ENUM_CI, 0, 0, migration_choices},
	 0,
	 "bidirectional",
	 OFF(group_consumer_migration_policy),
	 "Converting classic groups to consumer groups and back (disabled, downgrade, upgrade, "
	 "bidirectional). disabled also keeps classic members out of consumer groups "
	 "(INCONSISTENT_GROUP_PROTOCOL)."},
	{"group.rebalance.history.size", V_INT(0, 100000), F_COHORT, "100",
	 OFF(group_rebalance_history_size),
	 "cohort: how many rebalances each group keeps in its history (/v1/groups/G/rebalances); "
	 "0 keeps none."},
};

#define NDEFS CH_ARRAY_LEN(cdefs)

/* Topic configs (Kafka's LogConfig), sorted by name. */
static const tdef tdefs[] = {
	{"cleanup.policy",
	 {T_BITS, 0, 0, cleanup_choices},
	 TOFF(cleanup_policy),
	 OFF(log_cleanup_policy),
	 {"log.cleanup.policy"},
	 "Retention policy for old segments: a list of delete and/or compact."},
	{"compression.type",
	 V_ENUM(compression_choices),
	 TOFF(compression_type),
	 OFF(compression_type),
	 {"compression.type"},
	 "Final compression of the topic's data: uncompressed, zstd, lz4, snappy, gzip or "
	 "producer."},
	{"delete.retention.ms",
	 V_LONG(0, INT64_MAX),
	 TOFF(delete_retention_ms),
	 OFF(log_cleaner_delete_retention_ms),
	 {"log.cleaner.delete.retention.ms"},
	 "How long tombstones are retained in a compacted topic."},
	{"file.delete.delay.ms",
	 V_LONG(0, INT64_MAX),
	 TOFF(file_delete_delay_ms),
	 OFF(log_segment_delete_delay_ms),
	 {"log.segment.delete.delay.ms"},
	 "Time to wait before deleting a file from the file system."},
	{"flush.messages",
	 V_LONG(1, INT64_MAX),
	 TOFF(flush_messages),
	 OFF(log_flush_interval_messages),
	 {"log.flush.interval.messages"},
	 "Force an fsync after this many messages."},
	{"flush.ms",
	 V_LONG(0, INT64_MAX),
	 TOFF(flush_ms),
	 OFF(log_flush_interval_ms),
	 {"log.flush.interval.ms"},
	 "Force an fsync after this many milliseconds."},
	{"index.interval.bytes",
	 V_INT(0, INT32_MAX),
	 TOFF(index_interval_bytes),
	 OFF(log_index_interval_bytes),
	 {"log.index.interval.bytes"},
	 "Bytes between entries of the offset index."},
	{"max.compaction.lag.ms",
	 V_LONG(1, INT64_MAX),
	 TOFF(max_compaction_lag_ms),
	 OFF(log_cleaner_max_compaction_lag_ms),
	 {"log.cleaner.max.compaction.lag.ms"},
	 "Maximum time a message remains ineligible for compaction."},
	{"max.message.bytes",
	 V_INT(0, INT32_MAX),
	 TOFF(max_message_bytes),
	 OFF(message_max_bytes),
	 {"message.max.bytes"},
	 "The largest record batch size allowed for this topic."},
	{"message.timestamp.after.max.ms",
	 V_LONG(0, INT64_MAX),
	 TOFF(message_timestamp_after_max_ms),
	 OFF(log_message_timestamp_after_max_ms),
	 {"log.message.timestamp.after.max.ms"},
	 "With CreateTime: how far ahead of the broker's clock a record's timestamp may be."},
	{"message.timestamp.before.max.ms",
	 V_LONG(0, INT64_MAX),
	 TOFF(message_timestamp_before_max_ms),
	 OFF(log_message_timestamp_before_max_ms),
	 {"log.message.timestamp.before.max.ms"},
	 "With CreateTime: how far behind the broker's clock a record's timestamp may be."},
	{"message.timestamp.type",
	 V_ENUM(timestamp_choices),
	 TOFF(message_timestamp_type),
	 OFF(log_message_timestamp_type),
	 {"log.message.timestamp.type"},
	 "CreateTime or LogAppendTime."},
	{"min.cleanable.dirty.ratio",
	 {T_DOUBLE, 0, 1, NULL},
	 TOFF(min_cleanable_dirty_ratio),
	 OFF(log_cleaner_min_cleanable_ratio),
	 {"log.cleaner.min.cleanable.ratio"},
	 "Minimum dirty ratio for the log to be compacted."},
	{"min.compaction.lag.ms",
	 V_LONG(0, INT64_MAX),
	 TOFF(min_compaction_lag_ms),
	 OFF(log_cleaner_min_compaction_lag_ms),
	 {"log.cleaner.min.compaction.lag.ms"},
	 "Minimum time a message remains uncompacted."},
	{"min.insync.replicas",
	 V_INT(1, INT32_MAX),
	 TOFF(min_insync_replicas),
	 OFF(min_insync_replicas),
	 {"min.insync.replicas"},
	 "Minimum in-sync replicas for acks=all produce requests."},
	{"preallocate",
	 V_BOOL,
	 TOFF(preallocate),
	 OFF(log_preallocate),
	 {"log.preallocate"},
	 "Preallocate segment files."},
	{"retention.bytes",
	 V_LONG(INT64_MIN, INT64_MAX),
	 TOFF(retention_bytes),
	 OFF(log_retention_bytes),
	 {"log.retention.bytes"},
	 "Maximum size of a partition before old segments are deleted; -1: no limit."},
	{"retention.ms",
	 V_LONG(-1, INT64_MAX),
	 TOFF(retention_ms),
	 OFF(log_retention_ms),
	 {"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
	 "Maximum age of data before old segments are deleted; -1: no limit."},
	{"segment.bytes",
	 V_INT(14, INT32_MAX),
	 TOFF(segment_bytes),
	 OFF(log_segment_bytes),
	 {"log.segment.bytes"},
	 "Segment file size."},
	{"segment.index.bytes",
	 V_INT(4, INT32_MAX),
	 TOFF(segment_index_bytes),
	 OFF(log_index_size_max_bytes),
	 {"log.index.size.max.bytes"},
	 "Size of the offset index of a segment."},
	{"segment.jitter.ms",
	 V_LONG(0, INT64_MAX),
	 TOFF(segment_jitter_ms),
	 OFF(log_roll_jitter_ms),
	 {"log.roll.jitter.ms", "log.roll.jitter.hours"},
	 "Maximum random jitter subtracted from segment.ms."},
	{"segment.ms",
	 V_LONG(1, INT64_MAX),
	 TOFF(segment_ms),
	 OFF(log_roll_ms),
	 {"log.roll.ms", "log.roll.hours"},
	 "Roll a new segment after this many milliseconds even if it is not full."},
};

#define NTDEFS CH_ARRAY_LEN(tdefs)

struct ch_config_state {
	char *val[NDEFS];    /* normalised value; NULL = null */
	bool expl[NDEFS];    /* set by the file or --set */
	char *dyn[2][NDEFS]; /* dynamic layers (CH_CONFIG_LAYER_*); NULL = unset */
	char *tval[NTDEFS];  /* topic defaults, formatted from broker fields */
	int8_t tsrc[NTDEFS]; /* their source */
	struct lkv {         /* listener.name.NAME.KEY, normalised; one per key */
		char *key;
		char *val;
	} * lkv;
	size_t nlkv;
};

/* Parsed value of any kind. */
typedef union pval {
	bool b;
	int32_t i;
	int16_t s;
	int64_t l;
	double d;
	int e;
	unsigned bits;
} pval;

/* Index of the broker config key name in cdefs (exact, case-sensitive), or -1. */
static int
def_index(const char *name)
{
	for (size_t i = 0; i < NDEFS; i++)
		if (strcmp(cdefs[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Index of the topic config name in tdefs (exact, case-sensitive), or -1. */
static int
tdef_index(const char *name)
{
	for (size_t i = 0; i < NTDEFS; i++)
		if (strcmp(tdefs[i].name, name) == 0)
			return (int)i;
	return -1;
}

static bool
is_space(int c)
{
	return c == ' ' || c == '\t' || c == '\f' || c == '\r' || c == '\n' || c == '\v';
}

/* Trimmed copy of [s, s+n). */
static char *
trim_dup(const char *s, size_t n)
{
	while (n > 0 && is_space((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n > 0 && is_space((unsigned char)s[n - 1]))
		n--;
	return ch_xstrndup(s, n);
}

/* The DescribeConfigs ConfigType of a value type: T_BITS is LIST; enums, listeners and dirs are
 * STRING. */
static int8_t
kafka_type(uint8_t t)
{
	switch (t) {
	case T_BOOL:
		return CH_CONFIG_TYPE_BOOLEAN;
	case T_INT:
		return CH_CONFIG_TYPE_INT;
	case T_SHORT:
		return CH_CONFIG_TYPE_SHORT;
	case T_LONG:
		return CH_CONFIG_TYPE_LONG;
	case T_DOUBLE:
		return CH_CONFIG_TYPE_DOUBLE;
	case T_BITS:
		return CH_CONFIG_TYPE_LIST;
	default:
		return CH_CONFIG_TYPE_STRING;
	}
}

/* "expected ..." text for a numeric range. */
static void
range_text(const char *what, int64_t min, int64_t max, int64_t tmin, int64_t tmax, char *buf,
	   size_t len)
{
	if (min == tmin && max == tmax)
		snprintf(buf, len, "expected %s", what);
	else if (max == tmax)
		snprintf(buf, len, "expected %s >= %" PRId64, what, min);
	else if (min == tmin)
		snprintf(buf, len, "expected %s <= %" PRId64, what, max);
	else
		snprintf(buf, len, "expected %s between %" PRId64 " and %" PRId64, what, min, max);
}

/* Writes lead, then the names of the NULL-terminated choices joined by ", ", into buf; truncated
 * when full. */
static void
choices_text(const char *lead, const choice *c, char *buf, size_t len)
{
	size_t o = (size_t)snprintf(buf, len, "%s", lead);
	for (size_t i = 0; c[i].name && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "", c[i].name);
}

/* Parses all of s as a decimal int64 (optional sign, no surrounding blanks): 0, or -1 on empty,
 * junk or overflow (*out untouched). */
static int
parse_i64(const char *s, int64_t *out)
{
	if (*s == '\0')
		return -1;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || is_space((unsigned char)*s))
		return -1;
	*out = v;
	return 0;
}

/* Finds the choice named exactly [s, s+n) (case-insensitively if ci) among c (ended by a NULL
 * name): 0 and its value in *out, or -1. */
static int
choice_lookup(const choice *c, const char *s, size_t n, bool ci, int *out)
{
	for (size_t i = 0; c[i].name; i++) {
		if (strlen(c[i].name) != n)
			continue;
		if (ci ? strncasecmp(c[i].name, s, n) == 0 : strncmp(c[i].name, s, n) == 0) {
			*out = c[i].value;
			return 0;
		}
	}
	return -1;
}

/* Java's Double.toString for the values we meet: shortest round-trip digits,
 * and at least one fractional digit ("1.0"). */
static void
fmt_double(double d, char *buf, size_t len)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	if (!strpbrk(buf, ".eEn"))
		strncat(buf, ".0", len - strlen(buf) - 1);
}

/* Items of a comma-separated list, trimmed, empty items dropped. Calls fn for
 * each; stops at the first nonzero return. */
static int
list_each(const char *s, int (*fn)(const char *item, size_t n, void *arg), void *arg)
{
	const char *p = s;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		const char *q = p;
		while (n > 0 && is_space((unsigned char)*q)) {
			q++;
			n--;
		}
		while (n > 0 && is_space((unsigned char)q[n - 1]))
			n--;
		if (n > 0) {
			int rc = fn(q, n, arg);
			if (rc)
				return rc;
		}
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

struct bits_arg {
	const choice *choices;
	unsigned bits;
	char bad[64];
};

/* list_each callback for T_BITS: ORs the item's choice value into a->bits; -1 and the item (cut
 * to 40 chars) in a->bad if no choice matches. */
static int
bits_item(const char *item, size_t n, void *arg)
{
	struct bits_arg *a = arg;
	int v;
	if (choice_lookup(a->choices, item, n, false, &v) != 0) {
		snprintf(a->bad, sizeof(a->bad), "%.*s", (int)CH_MIN(n, 40), item);
		return -1;
	}
	a->bits |= (unsigned)v;
	return 0;
}

struct join_arg {
	char *out;
	size_t len;
};

/* list_each callback: appends the item to a->out, after a comma unless first; a->out holds the
 * whole list's length + 1. */
static int
join_item(const char *item, size_t n, void *arg)
{
	struct join_arg *a = arg;
	if (a->len)
		a->out[a->len++] = ',';
	memcpy(a->out + a->len, item, n);
	a->len += n;
	return 0;
}

/* "a , b,,c" -> "a,b,c" (caller frees). */
static char *
list_normalise(const char *s)
{
	struct join_arg a = {ch_xmalloc(strlen(s) + 1), 0};
	list_each(s, join_item, &a);
	a.out[a.len] = '\0';
	return a.out;
}

/* list_each callback: counts the (non-empty) items in the size_t at arg. */
static int
list_count_item(const char *item, size_t n, void *arg)
{
	CH_UNUSED(item);
	CH_UNUSED(n);
	(*(size_t *)arg)++;
	return 0;
}

/*
 * Parses a trimmed value. On failure writes the reason ("expected ...") to
 * why. For T_STRING/T_LISTENERS/T_DIRS only validates.
 */
static int
parse_value(const vspec *v, const char *s, pval *out, char *why, size_t whylen)
{
	int64_t l;
	switch (v->type) {
	case T_BOOL:
		if (strcasecmp(s, "true") == 0)
			out->b = true;
		else if (strcasecmp(s, "false") == 0)
			out->b = false;
		else
			return ch_errf(why, whylen, "expected true or false"), -1;
		return 0;
	case T_INT:
	case T_SHORT:
	case T_LONG: {
		int64_t tmin = v->type == T_INT     ? INT32_MIN
			       : v->type == T_SHORT ? INT16_MIN
						    : INT64_MIN;
		int64_t tmax = v->type == T_INT     ? INT32_MAX
			       : v->type == T_SHORT ? INT16_MAX
						    : INT64_MAX;
		if (parse_i64(s, &l) != 0 || l < v->min || l > v->max) {
			range_text("an integer", v->min, v->max, tmin, tmax, why, whylen);
			return -1;
		}
		if (v->type == T_INT)
			out->i = (int32_t)l;
		else if (v->type == T_SHORT)
			out->s = (int16_t)l;
		else
			out->l = l;
		return 0;
	}
	case T_DOUBLE: {
		char *end;
		errno = 0;
		double d = strtod(s, &end);
		if (*s == '\0' || *end != '\0' || errno != 0 || !isfinite(d) ||
		    d < (double)v->min || d > (double)v->max) {
			ch_errf(why, whylen, "expected a number between %" PRId64 " and %" PRId64,
				v->min, v->max);
			return -1;
		}
		out->d = d;
		return 0;
	}
	case T_STRING:
		return 0;
	case T_ENUM:
	case T_ENUM_CI:
		if (choice_lookup(v->choices, s, strlen(s), v->type == T_ENUM_CI, &out->e) != 0) {
			choices_text("expected one of: ", v->choices, why, whylen);
			return -1;
		}
		return 0;
	case T_BITS: {
		struct bits_arg a = {v->choices, 0, ""};
		if (list_each(s, bits_item, &a) != 0) {
			char list[128];
			choices_text("", v->choices, list, sizeof(list));
			ch_errf(why, whylen, "'%s' is not one of: %s (a comma-separated list)",
				a.bad, list);
			return -1;
		}
		out->bits = a.bits;
		return 0;
	}
	case T_DIRS: {
		size_t n = 0;
		list_each(s, list_count_item, &n);
		if (n != 1) {
			ch_errf(why, whylen, "cohort supports exactly one log directory");
			return -1;
		}
		return 0;
	}
	case T_LISTENERS:
		return 0; /* see listeners_parse */
	}
	return -1;
}

/* Bytes of the C field of a scalar kind (as the enum above notes); 0 for
 * strings, listeners and directories, which are not copied by value. */
static size_t
scalar_size(int type)
{
	switch (type) {
	case T_BOOL:
		return sizeof(bool);
	case T_INT:
		return sizeof(int32_t);
	case T_SHORT:
		return sizeof(int16_t);
	case T_LONG:
		return sizeof(int64_t);
	case T_DOUBLE:
		return sizeof(double);
	case T_ENUM:
	case T_ENUM_CI:
		return sizeof(int);
	case T_BITS:
		return sizeof(unsigned);
	default:
		return 0;
	}
}

/* Stores a parse_value result into field, the member of v's C type; T_STRING, T_LISTENERS and
 * T_DIRS store nothing here. */
static void
store_value(const vspec *v, void *field, const pval *pv)
{
	switch (v->type) {
	case T_BOOL:
		*(bool *)field = pv->b;
		break;
	case T_INT:
		*(int32_t *)field = pv->i;
		break;
	case T_SHORT:
		*(int16_t *)field = pv->s;
		break;
	case T_LONG:
		*(int64_t *)field = pv->l;
		break;
	case T_DOUBLE:
		*(double *)field = pv->d;
		break;
	case T_ENUM:
	case T_ENUM_CI:
		*(int *)field = pv->e;
		break;
	case T_BITS:
		*(unsigned *)field = pv->bits;
		break;
	default:
		break;
	}
}

/* Value string of a typed field (for topic defaults). */
static void
format_field(const vspec *v, const void *field, char *buf, size_t len)
{
	switch (v->type) {
	case T_BOOL:
		snprintf(buf, len, "%s", *(const bool *)field ? "true" : "false");
		break;
	case T_INT:
		snprintf(buf, len, "%" PRId32, *(const int32_t *)field);
		break;
	case T_SHORT:
		snprintf(buf, len, "%" PRId16, *(const int16_t *)field);
		break;
	case T_LONG:
		snprintf(buf, len, "%" PRId64, *(const int64_t *)field);
		break;
	case T_DOUBLE:
		fmt_double(*(const double *)field, buf, len);
		break;
	case T_ENUM:
	case T_ENUM_CI: {
		int e = *(const int *)field;
		buf[0] = '\0';
		for (size_t i = 0; v->choices[i].name; i++)
			if (v->choices[i].value == e)
				snprintf(buf, len, "%s", v->choices[i].name);
		break;
	}
	case T_BITS: {
		unsigned bits = *(const unsigned *)field;
		size_t o = 0;
		buf[0] = '\0';
		for (size_t i = 0; v->choices[i].name && o < len; i++)
			if (bits & (unsigned)v->choices[i].value)
				o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? "," : "",
						      v->choices[i].name);
		break;
	}
	default:
		buf[0] = '\0';
		break;
	}
}

/* Normalised string of a valid value: numbers and booleans re-printed, lists
 * joined with bare commas, the rest trimmed. Caller frees. */
static char *
normalise(const vspec *v, const char *s, const pval *pv)
{
	char buf[64];
	switch (v->type) {
	case T_BOOL:
	case T_INT:
	case T_SHORT:
	case T_LONG:
	case T_DOUBLE:
		format_field(v, pv, buf, sizeof(buf));
		return ch_xstrdup(buf);
	case T_BITS:
	case T_DIRS:
	case T_LISTENERS:
		return list_normalise(s);
	default:
		return ch_xstrdup(s);
	}
}

/* ---- listeners ---- */

/* Whether c may appear in a listener host: letters, digits, '-', '.', '_'; inside [brackets]
 * also ':' and '%'. */
static bool
host_char(int c, bool v6)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	if (c == '-' || c == '.' || c == '_')
		return true;
	return v6 && (c == ':' || c == '%');
}

static int hostport_parse(const char *s, size_t n, const char *h, const char *scheme,
			  ch_listener *out, char *err, size_t errlen);

/* Parses [s, s+n) as one NAME://host:port (NAME letters, digits, '_' and '-'; empty host allowed,
 * or [IPv6]) into *out, the name upper-cased; CH_OK, or CH_ERR and why in err. */
static int
listener_parse_n(const char *s, size_t n, ch_listener *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	const char *end = s + n;
	const char *sep = NULL;
	for (const char *p = s; p + 3 <= end; p++) {
		if (memcmp(p, "://", 3) == 0) {
			sep = p;
			break;
		}
	}
	if (!sep) {
		ch_errf(err, errlen, "'%.*s' is not of the form NAME://host:port", (int)n, s);
		return CH_ERR;
	}
	size_t nlen = (size_t)(sep - s);
	if (nlen == 0 || nlen >= sizeof(out->name)) {
		ch_errf(err, errlen, "'%.*s' has no valid listener name", (int)n, s);
		return CH_ERR;
	}
	for (size_t i = 0; i < nlen; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-')) {
			ch_errf(err, errlen, "'%.*s' has no valid listener name", (int)n, s);
			return CH_ERR;
		}
		out->name[i] = (char)(c >= 'a' && c <= 'z' ? c - 32 : c);
	}
	return hostport_parse(s, n, sep + 3, out->name, out, err, errlen);
}

/* Parses the host:port after "scheme://" in [s, s+n) (h points there; host empty, a name, IPv4
 * or [IPv6]) into out->host and out->port; scheme names the form in messages. CH_OK, or CH_ERR
 * and why in err. */
static int
hostport_parse(const char *s, size_t n, const char *h, const char *scheme, ch_listener *out,
	       char *err, size_t errlen)
{
	const char *end = s + n;
	const char *hend, *colon;
	bool v6 = h < end && *h == '[';
	if (v6) {
		hend = memchr(h, ']', (size_t)(end - h));
		if (!hend || hend + 1 >= end || hend[1] != ':') {
			ch_errf(err, errlen, "'%.*s': expected [IPv6 address]:port", (int)n, s);
			return CH_ERR;
		}
		colon = hend + 1;
		h++;
	} else {
		colon = NULL;
		for (const char *p = h; p < end; p++)
			if (*p == ':')
				colon = p;
		if (!colon) {
			ch_errf(err, errlen, "'%.*s' has no port (expected %s://host:port)", (int)n,
				s, scheme);
			return CH_ERR;
		}
		hend = colon;
	}
	size_t hlen = (size_t)(hend - h);
	if (hlen > CH_LISTENER_HOST_MAX || (v6 && hlen == 0)) {
		ch_errf(err, errlen, "'%.*s': invalid host", (int)n, s);
		return CH_ERR;
	}
	for (size_t i = 0; i < hlen; i++) {
		if (!host_char((unsigned char)h[i], v6)) {
			ch_errf(err, errlen, "'%.*s': invalid character '%c' in host%s", (int)n, s,
				h[i],
				!v6 && h[i] == ':' ? " (write IPv6 addresses as [addr]:port)" : "");
			return CH_ERR;
		}
	}
	memcpy(out->host, h, hlen);
	out->host[hlen] = '\0';
	const char *ps = colon + 1;
	size_t plen = (size_t)(end - ps);
	int64_t port = -1;
	if (plen == 0 || plen > 5) {
		port = -1;
	} else {
		char pb[8];
		memcpy(pb, ps, plen);
		pb[plen] = '\0';
		for (size_t i = 0; i < plen; i++)
			if (pb[i] < '0' || pb[i] > '9')
				port = -2;
		if (port != -2 && parse_i64(pb, &port) != 0)
			port = -1;
	}
	if (port < 0 || port > 65535) {
		ch_errf(err, errlen, "'%.*s': port must be a number between 0 and 65535", (int)n,
			s);
		return CH_ERR;
	}
	out->port = (uint16_t)port;
	return CH_OK;
}

int
ch_listener_parse(const char *s, ch_listener *out, char *err, size_t errlen)
{
	return listener_parse_n(s, strlen(s), out, err, errlen);
}

int
ch_admin_listener_parse(const char *s, ch_listener *out, bool *on, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	*on = false;
	size_t n = strlen(s);
	if (n == 0)
		return CH_OK;
	if (n < 7 || strncasecmp(s, "http://", 7) != 0) {
		if (strncasecmp(s, "https://", 8) == 0)
			ch_errf(err, errlen, "'%s': only http:// is supported (no TLS)", s);
		else
			ch_errf(err, errlen,
				"'%s' is not of the form http://host:port (empty turns the admin "
				"listener off)",
				s);
		return CH_ERR;
	}
	if (memchr(s, ',', n)) {
		ch_errf(err, errlen, "'%s': cohort has exactly one admin listener", s);
		return CH_ERR;
	}
	if (hostport_parse(s, n, s + 7, "http", out, err, errlen) != CH_OK)
		return CH_ERR;
	strcpy(out->name, "HTTP");
	*on = true;
	return CH_OK;
}

struct lsn_arg {
	ch_listener *out; /* CH_LISTENERS_MAX of them */
	size_t n;
	char *err;
	size_t errlen;
};

/* list_each callback for listeners: parses the item into a->out[a->n]; -1, with err written,
 * when it is malformed, one too many, or its name is taken. */
static int
lsn_item(const char *item, size_t n, void *arg)
{
	struct lsn_arg *a = arg;
	ch_listener l;
	if (listener_parse_n(item, n, &l, a->err, a->errlen) != CH_OK)
		return -1;
	if (a->n == CH_LISTENERS_MAX) {
		ch_errf(a->err, a->errlen, "cohort supports at most %d listeners",
			CH_LISTENERS_MAX);
		return -1;
	}
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->out[i].name, l.name) == 0) {
			ch_errf(a->err, a->errlen, "Each listener must have a different name");
			return -1;
		}
	a->out[a->n++] = l;
	return 0;
}

/* Whether host is an IPv4 (v6 false) or IPv6 (v6 true) literal. */
static bool
ip_literal(const char *host, bool v6)
{
	unsigned char buf[16];
	return inet_pton(v6 ? AF_INET6 : AF_INET, host, buf) == 1;
}

/* Parses a listeners value (a comma list of 1..CH_LISTENERS_MAX listeners with distinct names and
 * ports; port 0 may repeat, and two may share a port when one is an IPv4 and the other an IPv6
 * literal, as Kafka allows) into out[0..*n); CH_OK, or CH_ERR and why in err. */
static int
listeners_parse(const char *s, ch_listener *out, size_t *n, char *err, size_t errlen)
{
	struct lsn_arg a = {.out = out, .n = 0, .err = err, .errlen = errlen};
	if (list_each(s, lsn_item, &a) != 0)
		return CH_ERR;
	if (a.n == 0) {
		ch_errf(err, errlen, "expected a listener such as PLAINTEXT://127.0.0.1:9092");
		return CH_ERR;
	}
	for (size_t i = 0; i < a.n; i++) {
		for (size_t j = i + 1; j < a.n; j++) {
			if (out[i].port == 0 || out[i].port != out[j].port)
				continue;
			bool v4v6 =
				(ip_literal(out[i].host, false) && ip_literal(out[j].host, true)) ||
				(ip_literal(out[i].host, true) && ip_literal(out[j].host, false));
			size_t same = 0;
			for (size_t k = 0; k < a.n; k++)
				same += out[k].port == out[i].port;
			if (!v4v6 || same > 2) {
				ch_errf(err, errlen,
					"Each listener must have a different port unless exactly "
					"one "
					"listener has an IPv4 address and the other IPv6 address, "
					"port: %u",
					out[i].port);
				return CH_ERR;
			}
		}
	}
	*n = a.n;
	return CH_OK;
}

static bool
nonroutable(const ch_listener *l)
{
	return strcmp(l->host, "0.0.0.0") == 0 || strcmp(l->host, "::") == 0;
}

/* ---- setting values ---- */

/* Replaces key i's static value with val, which st takes over (freed by the next set or
 * ch_config_free); expl: set by the file or --set. */
static void
set_raw(struct ch_config_state *st, size_t i, char *val, bool expl)
{
	free(st->val[i]);
	st->val[i] = val;
	st->expl[i] = expl;
}

/* The keys a listener.name.NAME. prefix may carry besides the F_LISTENER ones: each SASL
 * mechanism's JAAS configuration (PLAIN's holds its users; SCRAM's are accepted so that Kafka
 * files load, and not used: cohort has no inter-broker login). */
static const char *const listener_jaas_keys[] = {
	"plain.sasl.jaas.config",
	"scram-sha-256.sasl.jaas.config",
	"scram-sha-512.sasl.jaas.config",
};

/* ch_config_set for listener.name.NAME.KEY: checks NAME's form and KEY (an F_LISTENER key or a
 * JAAS key), validates the value as KEY's, and stores it normalised (whether NAME is a listener
 * is checked by finish, once listeners is known). */
static int
set_listener_key(struct ch_config *cfg, const char *key, const char *value, const char *where,
		 char *err, size_t errlen)
{
	const char *name = key + strlen("listener.name.");
	const char *dot = strchr(name, '.');
	bool name_ok = dot && dot > name;
	for (const char *p = name; name_ok && p < dot; p++)
		name_ok = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' ||
			  *p == '-';
	if (!name_ok) {
		ch_errf(err, errlen,
			"unknown configuration key '%s'%s (expected listener.name.NAME.KEY, NAME "
			"in lower case)",
			key, where);
		return CH_ERR;
	}
	const char *sub = dot + 1;
	char *v = trim_dup(value, strlen(value));
	bool jaas = false;
	for (size_t j = 0; j < CH_ARRAY_LEN(listener_jaas_keys); j++)
		jaas |= strcmp(sub, listener_jaas_keys[j]) == 0;
	char *norm;
	if (jaas) {
		norm = v;
	} else {
		int i = def_index(sub);
		if (i < 0 || !(cdefs[i].flags & F_LISTENER)) {
			ch_errf(err, errlen,
				"unknown configuration key '%s'%s ('%s' cannot be set per "
				"listener)",
				key, where, sub);
			free(v);
			return CH_ERR;
		}
		pval pv;
		char why[256] = "";
		if (parse_value(&cdefs[i].v, v, &pv, why, sizeof(why)) != 0) {
			ch_errf(err, errlen, "invalid value '%s' for %s: %s%s", v, key, why, where);
			free(v);
			return CH_ERR;
		}
		norm = normalise(&cdefs[i].v, v, &pv);
		free(v);
	}
	struct ch_config_state *st = cfg->st_;
	for (size_t j = 0; j < st->nlkv; j++)
		if (strcmp(st->lkv[j].key, key) == 0) {
			free(st->lkv[j].val);
			st->lkv[j].val = norm;
			return CH_OK;
		}
	st->lkv = ch_xrealloc(st->lkv, (st->nlkv + 1) * sizeof(*st->lkv));
	st->lkv[st->nlkv].key = ch_xstrdup(key);
	st->lkv[st->nlkv].val = norm;
	st->nlkv++;
	return CH_OK;
}

int
ch_config_set(struct ch_config *cfg, const char *key, const char *value, const char *origin,
	      char *err, size_t errlen)
{
	char where[300] = "";
	if (origin)
		snprintf(where, sizeof(where), " (%s)", origin);
	if (strncmp(key, "listener.name.", strlen("listener.name.")) == 0)
		return set_listener_key(cfg, key, value, where, err, errlen);
	int i = def_index(key);
	if (i < 0) {
		int t = tdef_index(key);
		if (t >= 0 && def_index(tdefs[t].syn[0]) >= 0 && strcmp(tdefs[t].syn[0], key) != 0)
			ch_errf(err, errlen,
				"unknown configuration key '%s'%s; '%s' is a topic "
				"config, the broker default is %s",
				key, where, key, tdefs[t].syn[0]);
		else
			ch_errf(err, errlen, "unknown configuration key '%s'%s", key, where);
		return CH_ERR;
	}
	const cdef *d = &cdefs[i];
	char *v = trim_dup(value, strlen(value));
	pval pv;
	char why[256] = "";
	int rc = parse_value(&d->v, v, &pv, why, sizeof(why));
	if (rc == 0 && d->v.type == T_LISTENERS) {
		ch_listener l[CH_LISTENERS_MAX];
		size_t nl;
		rc = listeners_parse(v, l, &nl, why, sizeof(why)) == CH_OK ? 0 : -1;
	}
	if (rc == 0 && strcmp(d->name, "admin.listeners") == 0) {
		ch_listener l;
		bool on;
		rc = ch_admin_listener_parse(v, &l, &on, why, sizeof(why)) == CH_OK ? 0 : -1;
	}
	if (rc == 0 && d->v.type == T_DIRS && strlen(v) > 4000) {
		ch_errf(why, sizeof(why), "path too long");
		rc = -1;
	}
	if (rc != 0) {
		ch_errf(err, errlen, "invalid value '%s' for %s: %s%s", v, key, why, where);
		free(v);
		return CH_ERR;
	}
	char *norm = normalise(&d->v, v, &pv);
	free(v);
	set_raw(cfg->st_, (size_t)i, norm, true);
	return CH_OK;
}

int
ch_config_set_arg(struct ch_config *cfg, const char *arg, char *err, size_t errlen)
{
	const char *eq = strchr(arg, '=');
	if (!eq) {
		ch_errf(err, errlen, "--set expects key=value, got '%s'", arg);
		return CH_ERR;
	}
	char *key = trim_dup(arg, (size_t)(eq - arg));
	int rc = ch_config_set(cfg, key, eq + 1, "--set", err, errlen);
	free(key);
	return rc;
}

/* ---- properties file ---- */

/* ch_props_fn for server.properties: sets the key, with FILE:LINE for errors. */
static int
set_from_file(void *ud, const char *key, const char *value, const char *where, char *err,
	      size_t errlen)
{
	return ch_config_set(ud, key, value, where, err, errlen);
}

int
ch_config_load_file(struct ch_config *cfg, const char *path, char *err, size_t errlen)
{
	return ch_props_load_file(path, set_from_file, cfg, err, errlen);
}

/* ---- lifecycle and resolution ---- */

void
ch_config_init(struct ch_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->st_ = ch_xcalloc(1, sizeof(*cfg->st_));
	for (size_t i = 0; i < NDEFS; i++)
		cfg->st_->val[i] = cdefs[i].dflt ? ch_xstrdup(cdefs[i].dflt) : NULL;
	char err[256];
	if (ch_config_finish(cfg, err, sizeof(err)) != CH_OK) {
		/* The defaults are constants: this is a bug in the table. */
		fprintf(stderr, "ch_config: bad built-in default: %s\n", err);
		abort();
	}
}

void
ch_config_free(struct ch_config *cfg)
{
	if (cfg->st_) {
		for (size_t i = 0; i < NDEFS; i++) {
			free(cfg->st_->val[i]);
			free(cfg->st_->dyn[0][i]);
			free(cfg->st_->dyn[1][i]);
		}
		for (size_t i = 0; i < NTDEFS; i++)
			free(cfg->st_->tval[i]);
		for (size_t i = 0; i < cfg->st_->nlkv; i++) {
			free(cfg->st_->lkv[i].key);
			free(cfg->st_->lkv[i].val);
		}
		free(cfg->st_->lkv);
		free(cfg->st_);
	}
	memset(cfg, 0, sizeof(*cfg));
}

/* A key's value: this broker's dynamic one, the cluster default's, the
 * static one (Kafka's DynamicBrokerConfig precedence). */
static const char *
eff(const struct ch_config_state *st, size_t i)
{
	return st->dyn[CH_CONFIG_LAYER_BROKER][i]    ? st->dyn[CH_CONFIG_LAYER_BROKER][i]
	       : st->dyn[CH_CONFIG_LAYER_DEFAULT][i] ? st->dyn[CH_CONFIG_LAYER_DEFAULT][i]
						     : st->val[i];
}

/* Where a key's value comes from (DescribeConfigs ConfigSource). */
static int8_t
key_source(const struct ch_config_state *st, size_t i)
{
	if (st->dyn[CH_CONFIG_LAYER_BROKER][i])
		return CH_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG;
	if (st->dyn[CH_CONFIG_LAYER_DEFAULT][i])
		return CH_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG;
	return st->expl[i] ? CH_CONFIG_SOURCE_STATIC_BROKER_CONFIG
			   : CH_CONFIG_SOURCE_DEFAULT_CONFIG;
}

static const char *
val_of(const struct ch_config *cfg, const char *name)
{
	int i = def_index(name);
	return i >= 0 ? eff(cfg->st_, (size_t)i) : NULL;
}

static bool
expl_of(const struct ch_config *cfg, const char *name)
{
	int i = def_index(name);
	return i >= 0 && cfg->st_->expl[i];
}

/* A broker key's effective value as an int64 (dynamic layers first); 0 when the key is unknown,
 * null or not an integer. */
static int64_t
int_of(const struct ch_config *cfg, const char *name)
{
	int64_t v = 0;
	const char *s = val_of(cfg, name);
	if (s)
		parse_i64(s, &v);
	return v;
}

/* The key a resolved log.retention value came from (ms > minutes > hours). */
static const char *
retention_key(const struct ch_config *cfg)
{
	if (val_of(cfg, "log.retention.ms"))
		return "log.retention.ms";
	return val_of(cfg, "log.retention.minutes") ? "log.retention.minutes"
						    : "log.retention.hours";
}

/* Settings that parse one by one but cannot work together (or cannot work
 * on a one-broker cluster): CH_ERR with a message naming the keys. Kafka
 * rejects the log ones at startup (KafkaConfig.validateValues,
 * LogConfig.validateBrokerLogConfigValues); the replication and session
 * ones are cohort's own (README: where cohort differs). Runs after the
 * synonyms are resolved. */
/* One IP:COUNT entry of max.connections.per.ip.overrides at *p (which it
 * advances past the entry and its comma): 0 and the parts, or -1. ip is
 * the address as written, bare the same without IPv6 brackets. */
static int
next_ip_override(const char **p, char *ip, size_t iplen, char *bare, size_t barelen, int64_t *count)
{
	const char *e = *p + strcspn(*p, ",");
	const char *colon = e;
	while (colon > *p && colon[-1] != ':')
		colon--;
	if (colon == *p || (size_t)(colon - 1 - *p) >= iplen)
		return -1;
	memcpy(ip, *p, (size_t)(colon - 1 - *p));
	ip[colon - 1 - *p] = 0;
	char *end;
	errno = 0;
	long long v = colon < e ? strtoll(colon, &end, 10) : -1;
	if (colon == e || end != e || errno || v < 0 || v > INT32_MAX)
		return -1;
	*count = v;
	*p = *e ? e + 1 : e;
	size_t l = strlen(ip);
	bool br = l > 2 && ip[0] == '[' && ip[l - 1] == ']';
	snprintf(bare, barelen, "%.*s", (int)(br ? l - 2 : l), ip + br);
	return 0;
}

/* max.connections.per.ip.overrides: IP:COUNT entries with address literals
 * (brackets allowed around IPv6); max.connections.per.ip 0 needs some. */
static int
check_ip_overrides(const struct ch_config *cfg, char *err, size_t errlen)
{
	const char *v = cfg->max_connections_per_ip_overrides;
	if (cfg->max_connections_per_ip == 0 && (!v || !*v)) {
		ch_errf(err, errlen,
			"max.connections.per.ip can be set to zero only if "
			"max.connections.per.ip.overrides property is set.");
		return CH_ERR;
	}
	for (const char *p = v ? v : ""; *p;) {
		char ip[INET6_ADDRSTRLEN + 2], bare[INET6_ADDRSTRLEN + 2];
		int64_t n;
		unsigned char a[16];
		if (next_ip_override(&p, ip, sizeof(ip), bare, sizeof(bare), &n) != 0) {
			ch_errf(err, errlen,
				"invalid value '%s' for max.connections.per.ip.overrides: expected "
				"IP:COUNT,...",
				v);
			return CH_ERR;
		}
		if (inet_pton(AF_INET, bare, a) != 1 && inet_pton(AF_INET6, bare, a) != 1) {
			ch_errf(err, errlen,
				"invalid value '%s' for max.connections.per.ip.overrides: '%s' is "
				"not "
				"an IP address (cohort does not resolve host names here)",
				v, ip);
			return CH_ERR;
		}
	}
	return CH_OK;
}

int32_t
ch_config_max_connections_per_ip(const struct ch_config *cfg, const char *ip)
{
	const char *v = cfg->max_connections_per_ip_overrides;
	for (const char *p = v ? v : ""; *p;) {
		char entry[INET6_ADDRSTRLEN + 2], bare[INET6_ADDRSTRLEN + 2];
		int64_t n;
		if (next_ip_override(&p, entry, sizeof(entry), bare, sizeof(bare), &n) != 0)
			break; /* checked when set */
		if (strcmp(bare, ip) == 0)
			return (int32_t)n;
	}
	return cfg->max_connections_per_ip;
}

static int
check_cross_keys(const struct ch_config *cfg, char *err, size_t errlen)
{
	if (check_ip_overrides(cfg, err, errlen) != CH_OK)
		return CH_ERR;
	if (cfg->queued_max_request_bytes > 0 &&
	    cfg->queued_max_request_bytes < cfg->socket_request_max_bytes) {
		ch_errf(err, errlen,
			"queued.max.request.bytes must be larger or equal to "
			"socket.request.max.bytes");
		return CH_ERR;
	}
	if (cfg->group_min_session_timeout_ms > cfg->group_max_session_timeout_ms) {
		ch_errf(err, errlen,
			"group.max.session.timeout.ms (%d) must be greater than or equal to "
			"group.min.session.timeout.ms (%d): no session timeout could be accepted",
			cfg->group_max_session_timeout_ms, cfg->group_min_session_timeout_ms);
		return CH_ERR;
	}
	const struct {
		const char *key;
		int32_t value;
	} rfs[] = {
		{"default.replication.factor", cfg->default_replication_factor},
		{"offsets.topic.replication.factor", cfg->offsets_topic_replication_factor},
	};
	for (size_t i = 0; i < CH_ARRAY_LEN(rfs); i++) {
		if (rfs[i].value > 1) {
			ch_errf(err, errlen,
				"%s %d cannot be satisfied: cohortd is a single broker, so only 1 "
				"replica exists",
				rfs[i].key, rfs[i].value);
			return CH_ERR;
		}
	}
	if (cfg->log_retention_ms == 0) {
		ch_errf(err, errlen, "%s must be unlimited (-1) or, greater than or equal to 1",
			retention_key(cfg));
		return CH_ERR;
	}
	if (cfg->log_cleaner_threads > 0 &&
	    cfg->log_cleaner_dedupe_buffer_size / cfg->log_cleaner_threads <= 1024 * 1024) {
		ch_errf(err, errlen,
			"log.cleaner.dedupe.buffer.size (%" PRId64 ") must be at least 1MB per "
			"cleaner thread (log.cleaner.threads %d)",
			cfg->log_cleaner_dedupe_buffer_size, cfg->log_cleaner_threads);
		return CH_ERR;
	}
	if (cfg->log_cleaner_min_compaction_lag_ms > cfg->log_cleaner_max_compaction_lag_ms) {
		ch_errf(err, errlen,
			"log.cleaner.min.compaction.lag.ms (%" PRId64
			") must not be greater than log.cleaner.max.compaction.lag.ms (%" PRId64
			")",
			cfg->log_cleaner_min_compaction_lag_ms,
			cfg->log_cleaner_max_compaction_lag_ms);
		return CH_ERR;
	}
	return CH_OK;
}

static const char *const protocol_names[] = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"};

const char *
ch_security_protocol_name(ch_security_protocol p)
{
	return (unsigned)p < CH_ARRAY_LEN(protocol_names) ? protocol_names[p] : "?";
}

int
ch_config_listener_index(const struct ch_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->nlisteners; i++)
		if (strcasecmp(cfg->listeners[i].name, name) == 0)
			return (int)i;
	return -1;
}

struct pmap_arg {
	char names[CH_LISTENERS_MAX * 2][64];
	ch_security_protocol proto[CH_LISTENERS_MAX * 2];
	size_t n;
	char *err;
	size_t errlen;
};

/* list_each callback for listener.security.protocol.map: one NAME:PROTOCOL into a; -1 with err
 * written when malformed, repeated or an unknown protocol. */
static int
pmap_item(const char *item, size_t n, void *arg)
{
	struct pmap_arg *a = arg;
	const char *colon = memchr(item, ':', n);
	size_t nl = colon ? (size_t)(colon - item) : 0;
	if (!colon || nl == 0 || nl >= sizeof(a->names[0]) || a->n == CH_ARRAY_LEN(a->names)) {
		ch_errf(a->err, a->errlen, "'%.*s' is not of the form NAME:PROTOCOL", (int)n, item);
		return -1;
	}
	char name[64];
	for (size_t i = 0; i < nl; i++)
		name[i] = (char)(item[i] >= 'a' && item[i] <= 'z' ? item[i] - 32 : item[i]);
	name[nl] = '\0';
	const char *p = colon + 1;
	size_t pl = n - nl - 1;
	int proto = -1;
	for (size_t i = 0; i < CH_ARRAY_LEN(protocol_names); i++)
		if (strlen(protocol_names[i]) == pl && strncasecmp(protocol_names[i], p, pl) == 0)
			proto = (int)i;
	if (proto < 0) {
		ch_errf(a->err, a->errlen,
			"'%.*s': unknown security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT or "
			"SASL_SSL)",
			(int)n, item);
		return -1;
	}
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->names[i], name) == 0) {
			ch_errf(a->err, a->errlen, "listener %s is mapped twice", name);
			return -1;
		}
	snprintf(a->names[a->n], sizeof(a->names[0]), "%s", name);
	a->proto[a->n++] = (ch_security_protocol)proto;
	return 0;
}

/* Listener lname's value of key: listener.name.<lname lower-cased>.key if set, else key's. */
static const char *
listener_val(const struct ch_config *cfg, const char *lname, const char *key)
{
	char full[256];
	int k = snprintf(full, sizeof(full), "listener.name.");
	for (const char *p = lname; *p && k < 200; p++)
		full[k++] = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
	snprintf(full + k, sizeof(full) - (size_t)k, ".%s", key);
	for (size_t i = 0; i < cfg->st_->nlkv; i++)
		if (strcmp(cfg->st_->lkv[i].key, full) == 0)
			return cfg->st_->lkv[i].val;
	return val_of(cfg, key);
}

/* A listener's value of a typed F_LISTENER key (validated when set). */
static pval
listener_pval(const struct ch_config *cfg, const char *lname, const char *key)
{
	pval pv = {0};
	char why[256];
	const char *v = listener_val(cfg, lname, key);
	if (v)
		(void)parse_value(&cdefs[def_index(key)].v, v, &pv, why, sizeof(why));
	return pv;
}

/* Resolves and checks listener i's security settings into cfg->listener_sec[i]: what its
 * protocol needs must be there (a key store for TLS, mechanisms cohort has for SASL). CH_ERR
 * names the key. */
static int
listener_sec_finish(struct ch_config *cfg, size_t i, char *err, size_t errlen)
{
	const char *ln = cfg->listeners[i].name;
	ch_listener_sec *ls = &cfg->listener_sec[i];
	ls->ssl_keystore_type = listener_val(cfg, ln, "ssl.keystore.type");
	ls->ssl_keystore_location = listener_val(cfg, ln, "ssl.keystore.location");
	ls->ssl_keystore_password = listener_val(cfg, ln, "ssl.keystore.password");
	ls->ssl_key_password = listener_val(cfg, ln, "ssl.key.password");
	ls->ssl_keystore_certificate_chain =
		listener_val(cfg, ln, "ssl.keystore.certificate.chain");
	ls->ssl_keystore_key = listener_val(cfg, ln, "ssl.keystore.key");
	ls->ssl_truststore_type = listener_val(cfg, ln, "ssl.truststore.type");
	ls->ssl_truststore_location = listener_val(cfg, ln, "ssl.truststore.location");
	ls->ssl_truststore_certificates = listener_val(cfg, ln, "ssl.truststore.certificates");
	ls->ssl_enabled_protocols = listener_pval(cfg, ln, "ssl.enabled.protocols").bits;
	ls->ssl_cipher_suites = listener_val(cfg, ln, "ssl.cipher.suites");
	ls->ssl_client_auth = (ch_ssl_client_auth)listener_pval(cfg, ln, "ssl.client.auth").e;
	ls->ssl_principal_mapping_rules = listener_val(cfg, ln, "ssl.principal.mapping.rules");
	ls->sasl_mechanisms = listener_pval(cfg, ln, "sasl.enabled.mechanisms").bits;
	ls->plain_jaas = listener_val(cfg, ln, "plain.sasl.jaas.config");
	ls->connections_max_reauth_ms = listener_pval(cfg, ln, "connections.max.reauth.ms").l;
	ls->sasl_server_max_receive_size = listener_pval(cfg, ln, "sasl.server.max.receive.size").i;
	ls->max_connections = listener_pval(cfg, ln, "max.connections").i;
	bool tls = ls->protocol == CH_SEC_SSL || ls->protocol == CH_SEC_SASL_SSL;
	bool sasl = ls->protocol == CH_SEC_SASL_PLAINTEXT || ls->protocol == CH_SEC_SASL_SSL;
	if (tls) {
		if (strcmp(ls->ssl_keystore_type, "PEM") != 0) {
			ch_errf(err, errlen,
				"invalid value '%s' for ssl.keystore.type (listener %s): cohort "
				"reads PEM key stores only (set ssl.keystore.type=PEM)",
				ls->ssl_keystore_type, ln);
			return CH_ERR;
		}
		bool inl = ls->ssl_keystore_certificate_chain || ls->ssl_keystore_key;
		if (inl ? !(ls->ssl_keystore_certificate_chain && ls->ssl_keystore_key) ||
				    ls->ssl_keystore_location
			: !ls->ssl_keystore_location) {
			ch_errf(err, errlen,
				"listener %s (%s) needs ssl.keystore.location, or both "
				"ssl.keystore.certificate.chain and ssl.keystore.key (not both "
				"forms)",
				ln, ch_security_protocol_name(ls->protocol));
			return CH_ERR;
		}
		bool trust = ls->ssl_truststore_location || ls->ssl_truststore_certificates;
		if (trust && strcmp(ls->ssl_truststore_type, "PEM") != 0) {
			ch_errf(err, errlen,
				"invalid value '%s' for ssl.truststore.type (listener %s): cohort "
				"reads PEM trust stores only (set ssl.truststore.type=PEM)",
				ls->ssl_truststore_type, ln);
			return CH_ERR;
		}
		if (ls->ssl_truststore_location && ls->ssl_truststore_certificates) {
			ch_errf(err, errlen,
				"listener %s: set ssl.truststore.location or "
				"ssl.truststore.certificates, not both",
				ln);
			return CH_ERR;
		}
		if (ls->ssl_client_auth != CH_SSL_CLIENT_AUTH_NONE && !trust) {
			ch_errf(err, errlen,
				"listener %s: ssl.client.auth=%s needs ssl.truststore.location or "
				"ssl.truststore.certificates",
				ln, listener_val(cfg, ln, "ssl.client.auth"));
			return CH_ERR;
		}
		if (ls->ssl_enabled_protocols == 0) {
			ch_errf(err, errlen, "ssl.enabled.protocols is empty (listener %s)", ln);
			return CH_ERR;
		}
	}
	if (sasl) {
		if (ls->sasl_mechanisms == 0 || (ls->sasl_mechanisms & CH_SASL_GSSAPI)) {
			ch_errf(err, errlen,
				"invalid value '%s' for sasl.enabled.mechanisms (listener %s): "
				"cohort supports PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, not "
				"GSSAPI "
				"(Kafka's default)",
				listener_val(cfg, ln, "sasl.enabled.mechanisms"), ln);
			return CH_ERR;
		}
	}
	return CH_OK;
}

/* listeners, listener.security.protocol.map, advertised.listeners and the listener.name.*
 * settings into cfg->listeners, advertised_of, listener_sec (see the header). CH_ERR names the
 * key. */
static int
listeners_finish(struct ch_config *cfg, char *err, size_t errlen)
{
	char why[256];
	struct pmap_arg pm = {.n = 0, .err = why, .errlen = sizeof(why)};
	const char *map = val_of(cfg, "listener.security.protocol.map");
	if (list_each(map, pmap_item, &pm) != 0) {
		ch_errf(err, errlen, "invalid value '%s' for listener.security.protocol.map: %s",
			map, why);
		return CH_ERR;
	}
	const char *lv = val_of(cfg, "listeners");
	if (listeners_parse(lv, cfg->listeners, &cfg->nlisteners, why, sizeof(why)) != CH_OK) {
		ch_errf(err, errlen, "invalid value '%s' for listeners: %s", lv, why);
		return CH_ERR;
	}
	for (size_t i = 0; i < cfg->nlisteners; i++) {
		size_t k = 0;
		while (k < pm.n && strcmp(pm.names[k], cfg->listeners[i].name) != 0)
			k++;
		if (k == pm.n) {
			ch_errf(err, errlen,
				"invalid value '%s' for listeners: No security protocol defined "
				"for "
				"listener %s (listener.security.protocol.map)",
				lv, cfg->listeners[i].name);
			return CH_ERR;
		}
		memset(&cfg->listener_sec[i], 0, sizeof(cfg->listener_sec[i]));
		cfg->listener_sec[i].protocol = pm.proto[k];
		cfg->advertised_of[i] = cfg->listeners[i];
	}
	const char *adv = val_of(cfg, "advertised.listeners");
	if (adv) {
		ch_listener al[CH_LISTENERS_MAX];
		size_t na;
		if (listeners_parse(adv, al, &na, why, sizeof(why)) != CH_OK) {
			ch_errf(err, errlen, "invalid value '%s' for advertised.listeners: %s", adv,
				why);
			return CH_ERR;
		}
		for (size_t j = 0; j < na; j++) {
			int i = ch_config_listener_index(cfg, al[j].name);
			if (i < 0) {
				ch_errf(err, errlen,
					"invalid value '%s' for advertised.listeners: listener "
					"names "
					"must be equal to or a subset of the ones defined in "
					"listeners "
					"(%s is not)",
					adv, al[j].name);
				return CH_ERR;
			}
			cfg->advertised_of[i] = al[j];
		}
	}
	for (size_t i = 0; i < cfg->nlisteners; i++) {
		if (nonroutable(&cfg->advertised_of[i])) {
			ch_errf(err, errlen,
				"advertised.listeners cannot use the nonroutable meta-address "
				"%s%s; set advertised.listeners to a routable address",
				cfg->advertised_of[i].host,
				adv ? "" : " (inherited from listeners)");
			return CH_ERR;
		}
	}
	for (size_t j = 0; j < cfg->st_->nlkv; j++) {
		const char *name = cfg->st_->lkv[j].key + strlen("listener.name.");
		char ln[64];
		size_t n = (size_t)(strchr(name, '.') - name);
		snprintf(ln, sizeof(ln), "%.*s", (int)CH_MIN(n, sizeof(ln) - 1), name);
		if (ch_config_listener_index(cfg, ln) < 0) {
			ch_errf(err, errlen, "%s: there is no listener %s in listeners ('%s')",
				cfg->st_->lkv[j].key, ln, lv);
			return CH_ERR;
		}
	}
	for (size_t i = 0; i < cfg->nlisteners; i++)
		if (listener_sec_finish(cfg, i, err, errlen) != CH_OK)
			return CH_ERR;
	cfg->listener = cfg->listeners[0];
	cfg->advertised = cfg->advertised_of[0];
	return CH_OK;
}

int
ch_config_finish(struct ch_config *cfg, char *err, size_t errlen)
{
	struct ch_config_state *st = cfg->st_;
	char why[256];
	for (size_t i = 0; i < NDEFS; i++) {
		const cdef *d = &cdefs[i];
		if (d->off == NOFIELD)
			continue;
		void *field = (char *)cfg + d->off;
		const char *v = eff(st, i);
		if (!v) {
			if (d->v.type == T_STRING)
				*(char **)field = NULL;
			continue;
		}
		if (d->v.type == T_STRING) {
			*(char **)field = (char *)v;
			continue;
		}
		pval pv;
		if (parse_value(&d->v, v, &pv, why, sizeof(why)) != 0) {
			ch_errf(err, errlen, "invalid value '%s' for %s: %s", v, d->name, why);
			return CH_ERR;
		}
		store_value(&d->v, field, &pv);
	}

	/* node.id / broker.id */
	if (val_of(cfg, "broker.id")) {
		int32_t bid = (int32_t)int_of(cfg, "broker.id");
		if (expl_of(cfg, "node.id") && bid != cfg->node_id) {
			ch_errf(err, errlen,
				"broker.id %d and node.id %d must be equal if both are set", bid,
				cfg->node_id);
			return CH_ERR;
		}
		cfg->node_id = bid;
	}

	/* The data directory: log.dirs, else log.dir, else log.dirs' default. */
	const char *dirs = val_of(cfg, "log.dirs"), *dir = val_of(cfg, "log.dir");
	cfg->log_dir = (char *)(expl_of(cfg, "log.dirs") || !dir ? dirs : dir);

	/* Kafka: ms > minutes > hours; any negative retention is unlimited. */
	if (!val_of(cfg, "log.retention.ms")) {
		if (val_of(cfg, "log.retention.minutes"))
			cfg->log_retention_ms = int_of(cfg, "log.retention.minutes") * 60000;
		else
			cfg->log_retention_ms = int_of(cfg, "log.retention.hours") * 3600000;
	}
	if (cfg->log_retention_ms < 0)
		cfg->log_retention_ms = -1;
	if (!val_of(cfg, "log.roll.ms"))
		cfg->log_roll_ms = int_of(cfg, "log.roll.hours") * 3600000;
	if (!val_of(cfg, "log.roll.jitter.ms"))
		cfg->log_roll_jitter_ms = int_of(cfg, "log.roll.jitter.hours") * 3600000;
	if (!val_of(cfg, "log.flush.interval.ms"))
		cfg->log_flush_interval_ms = INT64_MAX;
	if (check_cross_keys(cfg, err, errlen) != CH_OK)
		return CH_ERR;

	if (listeners_finish(cfg, err, errlen) != CH_OK)
		return CH_ERR;

	const char *adm = val_of(cfg, "admin.listeners");
	if (ch_admin_listener_parse(adm ? adm : "", &cfg->admin_listener, &cfg->admin_enabled, why,
				    sizeof(why)) != CH_OK) {
		ch_errf(err, errlen, "invalid value '%s' for admin.listeners: %s", adm, why);
		return CH_ERR;
	}

	/* Kafka loads the class it names; cohortd has one authorizer, under
	 * the names of Kafka's own. */
	const char *az = cfg->authorizer_class_name ? cfg->authorizer_class_name : "";
	cfg->authorizer_enabled = az[0] != '\0';
	if (cfg->authorizer_enabled &&
	    strcmp(az, "org.apache.kafka.metadata.authorizer.StandardAuthorizer") != 0 &&
	    strcmp(az, "kafka.security.authorizer.AclAuthorizer") != 0) {
		ch_errf(err, errlen,
			"invalid value '%s' for authorizer.class.name: cohortd's authorizer is "
			"org.apache.kafka.metadata.authorizer.StandardAuthorizer (also accepted as "
			"kafka.security.authorizer.AclAuthorizer)",
			az);
		return CH_ERR;
	}

	/* Topic defaults, as strings for DescribeConfigs. */
	for (size_t t = 0; t < NTDEFS; t++) {
		char buf[128];
		format_field(&tdefs[t].v, (const char *)cfg + tdefs[t].boff, buf, sizeof(buf));
		free(st->tval[t]);
		st->tval[t] = ch_xstrdup(buf);
		/* Kafka's ConfigHelper: the source of an inherited topic config is
		 * where its first broker synonym itself is set (log.retention.ms,
		 * not log.retention.hours), though the value follows them all. */
		st->tsrc[t] = key_source(st, (size_t)def_index(tdefs[t].syn[0]));
	}
	return CH_OK;
}

int
ch_config_load(struct ch_config *cfg, const char *path, const char *const *sets, size_t nsets,
	       char *err, size_t errlen)
{
	ch_config_init(cfg);
	if (path && ch_config_load_file(cfg, path, err, errlen) != CH_OK)
		return CH_ERR;
	for (size_t i = 0; i < nsets; i++)
		if (ch_config_set_arg(cfg, sets[i], err, errlen) != CH_OK)
			return CH_ERR;
	return ch_config_finish(cfg, err, errlen);
}

/* ---- DescribeConfigs ---- */

size_t
ch_config_count(void)
{
	return NDEFS;
}

/* Fills e for cdefs[i]; its strings are borrowed from the table and cfg's state (valid until
 * that key's value changes). */
static void
broker_entry(const struct ch_config *cfg, size_t i, ch_config_entry *e)
{
	const cdef *d = &cdefs[i];
	e->name = d->name;
	e->value = eff(cfg->st_, i);
	e->doc = d->doc;
	e->source = key_source(cfg->st_, i);
	e->type = kafka_type(d->v.type);
	e->is_default = e->source == CH_CONFIG_SOURCE_DEFAULT_CONFIG;
	e->read_only = !ch_config_is_dynamic(d->name);
	e->sensitive = (d->flags & F_SENSITIVE) != 0;
	if (e->sensitive) {
		e->value = NULL; /* Kafka never shows a password, set or not */
		e->type = CH_CONFIG_TYPE_PASSWORD;
	}
}

bool
ch_config_next(const struct ch_config *cfg, size_t *it, ch_config_entry *e)
{
	if (*it >= NDEFS)
		return false;
	broker_entry(cfg, (*it)++, e);
	return true;
}

int
ch_config_describe(const struct ch_config *cfg, const char *name, ch_config_entry *e)
{
	int i = def_index(name);
	if (i < 0)
		return CH_ERR;
	broker_entry(cfg, (size_t)i, e);
	return CH_OK;
}

/*
 * A refused value in the words of Kafka's ConfigDef (ConfigException: "Invalid
 * value X for configuration Y: Not a number of type LONG", "...: Value must
 * be at least -1", "...: String must be one of: compact, delete"), which
 * clients print: for topic configs and dynamic broker configs, the ones a
 * client sends. Startup errors keep cohort's own wording (with FILE:LINE).
 */
static void
kafka_invalid(const vspec *v, const char *name, const char *s, char *err, size_t errlen)
{
	static const char *const tname[] = {
		[T_INT] = "INT", [T_SHORT] = "SHORT", [T_LONG] = "LONG", [T_DOUBLE] = "DOUBLE"};
	char list[256] = "";
	int64_t l;
	switch (v->type) {
	case T_INT:
	case T_SHORT:
	case T_LONG:
		if (parse_i64(s, &l) != 0)
			ch_errf(err, errlen,
				"Invalid value %s for configuration %s: Not a number of type %s", s,
				name, tname[v->type]);
		else
			ch_errf(err, errlen,
				"Invalid value %" PRId64 " for configuration %s: Value must be "
				"%s %" PRId64,
				l, name, l < v->min ? "at least" : "no more than",
				l < v->min ? v->min : v->max);
		return;
	case T_DOUBLE: {
		char *end;
		double d = strtod(s, &end);
		if (*s == '\0' || *end != '\0')
			ch_errf(err, errlen,
				"Invalid value %s for configuration %s: Not a number of type "
				"DOUBLE",
				s, name);
		else
			ch_errf(err, errlen,
				"Invalid value %s for configuration %s: Value must be %s %" PRId64,
				s, name, d < (double)v->min ? "at least" : "no more than",
				d < (double)v->min ? v->min : v->max);
		return;
	}
	case T_BOOL:
		ch_errf(err, errlen,
			"Invalid value %s for configuration %s: Expected value to be either "
			"true or false",
			s, name);
		return;
	case T_ENUM:
	case T_ENUM_CI:
		choices_text("", v->choices, list, sizeof(list));
		ch_errf(err, errlen,
			"Invalid value %s for configuration %s: String must be one of: %s", s, name,
			list);
		return;
	case T_BITS: {
		/* The item refused, and Kafka's list (compact, delete: alphabetical). */
		struct bits_arg a = {v->choices, 0, ""};
		list_each(s, bits_item, &a);
		size_t o = 0;
		const char *names[8];
		size_t n = 0;
		for (size_t i = 0; v->choices[i].name && n < 8; i++)
			names[n++] = v->choices[i].name;
		for (size_t i = 1; i < n; i++)
			for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
				const char *x = names[j];
				names[j] = names[j - 1];
				names[j - 1] = x;
			}
		for (size_t i = 0; i < n && o < sizeof(list); i++)
			o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "",
					      names[i]);
		ch_errf(err, errlen,
			"Invalid value %s for configuration %s: String must be one of: %s", a.bad,
			name, list);
		return;
	}
	default: {
		char why[256];
		pval pv;
		parse_value(v, s, &pv, why, sizeof(why));
		ch_errf(err, errlen, "Invalid value %s for configuration %s: %s", s, name, why);
	}
	}
}

/* value trimmed and parsed against v into *pv: the trimmed copy (caller
 * frees), or NULL with Kafka's words for a bad value of key in err. */
static char *
parse_checked(const vspec *v, const char *key, const char *value, pval *pv, char *err,
	      size_t errlen)
{
	char *t = trim_dup(value, strlen(value));
	char why[256] = "";
	if (parse_value(v, t, pv, why, sizeof(why)) == 0)
		return t;
	kafka_invalid(v, key, t, err, errlen);
	free(t);
	return NULL;
}

/* parse_checked for a key looked up by the caller: v NULL (unknown key)
 * and a NULL value get Kafka's wording for the table (unknown_fmt,
 * null_fmt: one %s, the key). */
static char *
known_checked(const vspec *v, const char *unknown_fmt, const char *null_fmt, const char *key,
	      const char *value, pval *pv, char *err, size_t errlen)
{
	if (!v) {
		ch_errf(err, errlen, unknown_fmt, key);
		return NULL;
	}
	if (!value) {
		ch_errf(err, errlen, null_fmt, key);
		return NULL;
	}
	return parse_checked(v, key, value, pv, err, errlen);
}

/* ---- topic configs ---- */

size_t
ch_topic_config_count(void)
{
	return NTDEFS;
}

bool
ch_topic_config_is_known(const char *name)
{
	return tdef_index(name) >= 0;
}

int
ch_topic_config_validate(const char *name, const char *value, char *err, size_t errlen)
{
	int t = tdef_index(name);
	pval pv;
	char *v = known_checked(t < 0 ? NULL : &tdefs[t].v, "Unknown topic config name: %s",
				"Null value not supported for topic configs: %s", name, value, &pv,
				err, errlen);
	free(v);
	return v ? CH_OK : CH_ERR;
}

/* Parses value (trimmed) as topic config tdefs[t]: 0 and the value in *pv, or -1 (the reason is
 * dropped; validate first). */
static int
topic_parse(size_t t, const char *value, pval *pv)
{
	char *v = trim_dup(value, strlen(value));
	char why[256];
	int rc = parse_value(&tdefs[t].v, v, pv, why, sizeof(why));
	free(v);
	return rc;
}

int
ch_topic_configs_validate(const ch_topic_kv *kv, size_t n, char *err, size_t errlen)
{
	int64_t minlag = 0, maxlag = INT64_MAX;
	for (size_t i = 0; i < n; i++) {
		if (ch_topic_config_validate(kv[i].key, kv[i].value, err, errlen) != CH_OK)
			return CH_ERR;
		for (size_t j = 0; j < i; j++) {
			if (strcmp(kv[i].key, kv[j].key) == 0) {
				ch_errf(err, errlen, "duplicate topic config: %s", kv[i].key);
				return CH_ERR;
			}
		}
		pval pv;
		if (strcmp(kv[i].key, "min.compaction.lag.ms") == 0 &&
		    topic_parse((size_t)tdef_index(kv[i].key), kv[i].value, &pv) == 0)
			minlag = pv.l;
		if (strcmp(kv[i].key, "max.compaction.lag.ms") == 0 &&
		    topic_parse((size_t)tdef_index(kv[i].key), kv[i].value, &pv) == 0)
			maxlag = pv.l;
	}
	if (minlag > maxlag) {
		ch_errf(err, errlen,
			"conflict topic config setting: min.compaction.lag.ms "
			"(%" PRId64 ") > max.compaction.lag.ms (%" PRId64 ")",
			minlag, maxlag);
		return CH_ERR;
	}
	return CH_OK;
}

/* The entry for key in kv[0..n), the last one if repeated, or NULL. */
static const ch_topic_kv *
kv_find(const ch_topic_kv *kv, size_t n, const char *key)
{
	/* The last one wins, like a map filled in order. */
	for (size_t i = n; i-- > 0;)
		if (strcmp(kv[i].key, key) == 0)
			return &kv[i];
	return NULL;
}

void
ch_topic_config_resolve(const struct ch_config *cfg, const ch_topic_kv *kv, size_t n,
			ch_topic_config *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t t = 0; t < NTDEFS; t++) {
		const tdef *d = &tdefs[t];
		void *field = (char *)out + d->off;
		const void *bfield = (const char *)cfg + d->boff;
		pval pv;
		const ch_topic_kv *o = kv_find(kv, n, d->name);
		if (o && o->value && topic_parse(t, o->value, &pv) == 0) {
			store_value(&d->v, field, &pv);
			continue;
		}
		memcpy(field, bfield, scalar_size(d->v.type));
	}
	if (out->retention_ms < 0)
		out->retention_ms = -1;
}

/* Fills e for topic config tdefs[t]: the override in kv if any, else the default derived from
 * the broker configs; strings are borrowed. */
static void
topic_entry(const struct ch_config *cfg, const ch_topic_kv *kv, size_t n, size_t t,
	    ch_config_entry *e)
{
	const tdef *d = &tdefs[t];
	const ch_topic_kv *o = kv_find(kv, n, d->name);
	e->name = d->name;
	e->doc = d->doc;
	e->type = kafka_type(d->v.type);
	e->read_only = false;
	e->sensitive = false;
	if (o) {
		e->value = o->value;
		e->source = CH_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG;
	} else {
		e->value = cfg->st_->tval[t];
		e->source = cfg->st_->tsrc[t];
	}
	e->is_default = e->source == CH_CONFIG_SOURCE_DEFAULT_CONFIG;
}

bool
ch_topic_config_next(const struct ch_config *cfg, const ch_topic_kv *kv, size_t n, size_t *it,
		     ch_config_entry *e)
{
	if (*it >= NTDEFS)
		return false;
	topic_entry(cfg, kv, n, (*it)++, e);
	return true;
}

int
ch_topic_config_describe(const struct ch_config *cfg, const ch_topic_kv *kv, size_t n,
			 const char *name, ch_config_entry *e)
{
	int t = tdef_index(name);
	if (t < 0)
		return CH_ERR;
	topic_entry(cfg, kv, n, (size_t)t, e);
	return CH_OK;
}

/* ---- dynamic broker configs ---- */

/*
 * The broker keys AlterConfigs may change: Kafka's DynamicBrokerConfig set
 * (DynamicLogConfig's log keys, that is the first broker synonym of each
 * topic config; LogCleaner's; DynamicThreadPool's; SocketServer's
 * max.connections) among cohort's keys. Not listeners or
 * advertised.listeners, which Kafka can change per broker: cohortd cannot
 * rebind a listener while running (README says so).
 */
static const char *const dynamic_keys[] = {
	"compression.type",
	"log.cleaner.backoff.ms",
	"log.cleaner.dedupe.buffer.size",
	"log.cleaner.delete.retention.ms",
	"log.cleaner.max.compaction.lag.ms",
	"log.cleaner.min.cleanable.ratio",
	"log.cleaner.min.compaction.lag.ms",
	"log.cleaner.threads",
	"log.cleanup.policy",
	"log.flush.interval.messages",
	"log.flush.interval.ms",
	"log.index.interval.bytes",
	"log.index.size.max.bytes",
	"log.message.timestamp.after.max.ms",
	"log.message.timestamp.before.max.ms",
	"log.message.timestamp.type",
	"log.preallocate",
	"log.retention.bytes",
	"log.retention.ms",
	"log.roll.jitter.ms",
	"log.roll.ms",
	"log.segment.bytes",
	"log.segment.delete.delay.ms",
	"max.connection.creation.rate",
	"max.connections",
	"max.connections.per.ip",
	"max.connections.per.ip.overrides",
	"message.max.bytes",
	"min.insync.replicas",
	"num.io.threads",
	"num.network.threads",
	"num.recovery.threads.per.data.dir",
	"producer.id.expiration.ms",
};

bool
ch_config_is_dynamic(const char *name)
{
	for (size_t i = 0; i < CH_ARRAY_LEN(dynamic_keys); i++)
		if (strcmp(dynamic_keys[i], name) == 0)
			return true;
	return false;
}

bool
ch_config_is_list(const char *name)
{
	int i = def_index(name);
	return i >= 0 && (cdefs[i].v.type == T_BITS || cdefs[i].v.type == T_LISTENERS ||
			  cdefs[i].v.type == T_DIRS);
}

const char *
ch_config_default(const char *name)
{
	int i = def_index(name);
	return i >= 0 ? cdefs[i].dflt : NULL;
}

bool
ch_topic_config_is_list(const char *name)
{
	int t = tdef_index(name);
	return t >= 0 && tdefs[t].v.type == T_BITS;
}

const char *
ch_topic_config_default(const char *name)
{
	int t = tdef_index(name);
	return t >= 0 ? ch_config_default(tdefs[t].syn[0]) : NULL;
}

/* Parses and normalises one dynamic entry. NULL with a message if the key is
 * unknown or the value bad (not-dynamic keys are the caller's). */
static char *
dynamic_value(const char *key, const char *value, char *err, size_t errlen)
{
	int i = def_index(key);
	pval pv;
	char *v = known_checked(i < 0 ? NULL : &cdefs[i].v, "Unknown broker config name: %s",
				"Null value not supported for : %s", key, value, &pv, err, errlen);
	if (!v)
		return NULL;
	char *norm = normalise(&cdefs[i].v, v, &pv);
	free(v);
	return norm;
}

/* Replaces a layer of cfg's state with kv (entries already checked). */
static void
layer_replace(struct ch_config_state *st, int layer, const ch_topic_kv *kv, size_t n)
{
	for (size_t i = 0; i < NDEFS; i++) {
		free(st->dyn[layer][i]);
		st->dyn[layer][i] = NULL;
	}
	for (size_t k = 0; k < n; k++) {
		int i = def_index(kv[k].key);
		char e[8];
		char *v = i >= 0 ? dynamic_value(kv[k].key, kv[k].value, e, sizeof(e)) : NULL;
		if (v) {
			free(st->dyn[layer][i]);
			st->dyn[layer][i] = v;
		}
	}
}

int
ch_config_check_dynamic(const struct ch_config *cfg, int layer, const ch_topic_kv *kv, size_t n,
			char *err, size_t errlen)
{
	/* In Kafka's order (DynamicBrokerConfig.validateConfigs): keys that are
	 * not dynamic, then the values. Kafka keeps unknown keys as custom
	 * configs for plugins; cohort has none, so it refuses them first. */
	char bad[512] = "";
	size_t o = 0;
	for (size_t k = 0; k < n; k++) {
		if (def_index(kv[k].key) < 0) {
			ch_errf(err, errlen, "Unknown broker config name: %s", kv[k].key);
			return CH_ERR;
		}
		if (!ch_config_is_dynamic(kv[k].key) && o < sizeof(bad))
			o += (size_t)snprintf(bad + o, sizeof(bad) - o, "%s%s", o ? ", " : "",
					      kv[k].key);
	}
	if (o) {
		ch_errf(err, errlen, "Cannot update these configs dynamically: [%s]", bad);
		return CH_ERR;
	}
	for (size_t k = 0; k < n; k++) {
		char *v = dynamic_value(kv[k].key, kv[k].value, err, errlen);
		if (!v)
			return CH_ERR;
		free(v);
	}
	/* The whole configuration with the new layer must still resolve (cross-key
	 * rules): try it on a copy. */
	struct ch_config tmp;
	ch_config_init(&tmp);
	struct ch_config_state *d = tmp.st_, *s = cfg->st_;
	for (size_t i = 0; i < NDEFS; i++) {
		free(d->val[i]);
		d->val[i] = s->val[i] ? ch_xstrdup(s->val[i]) : NULL;
		d->expl[i] = s->expl[i];
		for (int l = 0; l < 2; l++)
			d->dyn[l][i] = s->dyn[l][i] ? ch_xstrdup(s->dyn[l][i]) : NULL;
	}
	d->lkv = ch_xcalloc(s->nlkv + 1, sizeof(*d->lkv));
	for (size_t i = 0; i < s->nlkv; i++) {
		d->lkv[i].key = ch_xstrdup(s->lkv[i].key);
		d->lkv[i].val = ch_xstrdup(s->lkv[i].val);
	}
	d->nlkv = s->nlkv;
	layer_replace(d, layer, kv, n);
	int rc = ch_config_finish(&tmp, err, errlen);
	ch_config_free(&tmp);
	return rc;
}

int
ch_config_set_dynamic(struct ch_config *cfg, int layer, const ch_topic_kv *kv, size_t n, char *err,
		      size_t errlen)
{
	struct ch_config_state *st = cfg->st_;
	char *old[NDEFS];
	memcpy(old, st->dyn[layer], sizeof(old));
	memset(st->dyn[layer], 0, sizeof(old));
	int rc = CH_OK;
	for (size_t k = 0; k < n; k++) {
		char e[300];
		int i = def_index(kv[k].key);
		char *v =
			ch_config_is_dynamic(kv[k].key)
				? dynamic_value(kv[k].key, kv[k].value, e, sizeof(e))
				: (ch_errf(e, sizeof(e), "%s cannot be set dynamically", kv[k].key),
				   NULL);
		if (!v) {
			ch_errf(err, errlen, "dynamic broker config ignored: %s", e);
			rc = CH_ERR;
			continue;
		}
		free(st->dyn[layer][i]);
		st->dyn[layer][i] = v;
	}
	char e[300];
	if (ch_config_finish(cfg, e, sizeof(e)) != CH_OK) {
		/* Checked before it was stored: only a newer build's rules get here. */
		ch_errf(err, errlen, "dynamic broker configs ignored: %s", e);
		for (size_t i = 0; i < NDEFS; i++)
			free(st->dyn[layer][i]);
		memcpy(st->dyn[layer], old, sizeof(old));
		if (ch_config_finish(cfg, e, sizeof(e)) != CH_OK)
			abort(); /* it resolved before */
		return CH_ERR;
	}
	for (size_t i = 0; i < NDEFS; i++)
		free(old[i]);
	return rc;
}

bool
ch_config_layer_next(const struct ch_config *cfg, int layer, size_t *it, ch_config_entry *e)
{
	while (*it < NDEFS) {
		size_t i = (*it)++;
		if (!cfg->st_->dyn[layer][i])
			continue;
		broker_entry(cfg, i, e);
		e->value = cfg->st_->dyn[layer][i];
		e->source = layer == CH_CONFIG_LAYER_BROKER
				    ? CH_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG
				    : CH_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG;
		e->is_default = false;
		return true;
	}
	return false;
}

/* Kafka's DynamicBrokerConfig.brokerConfigSynonyms among cohort's keys: the
 * keys that set the same thing, most specific first. */
static size_t
synonym_group(const char *name, const char **out)
{
	static const char *const groups[][3] = {
		{"log.roll.ms", "log.roll.hours", NULL},
		{"log.roll.jitter.ms", "log.roll.jitter.hours", NULL},
		{"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
	};
	for (size_t g = 0; g < CH_ARRAY_LEN(groups); g++)
		for (size_t k = 0; k < 3 && groups[g][k]; k++)
			if (strcmp(groups[g][k], name) == 0) {
				size_t n = 0;
				for (size_t j = 0; j < 3 && groups[g][j]; j++)
					out[n++] = groups[g][j];
				return n;
			}
	out[0] = name;
	return 1;
}

int
ch_config_synonyms(const struct ch_config *cfg, const char *name, ch_config_entry *out, size_t cap)
{
	/* Kafka's ConfigHelper.configSynonyms: layer by layer (this broker's, the
	 * cluster default, static, built-in default), each synonym the layer
	 * sets, then everything before the first entry of name itself dropped. */
	if (def_index(name) < 0)
		return 0;
	const struct ch_config_state *st = cfg->st_;
	const char *group[3];
	size_t ng = synonym_group(name, group), n = 0;
	static const int8_t src[4] = {CH_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG,
				      CH_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG,
				      CH_CONFIG_SOURCE_STATIC_BROKER_CONFIG,
				      CH_CONFIG_SOURCE_DEFAULT_CONFIG};
	bool seen = false;
	for (int l = 0; l < 4; l++)
		for (size_t g = 0; g < ng && n < cap; g++) {
			size_t i = (size_t)def_index(group[g]);
			const char *v = l < 2    ? st->dyn[l][i]
					: l == 2 ? (st->expl[i] ? st->val[i] : NULL)
						 : cdefs[i].dflt;
			if (!v || (!seen && strcmp(group[g], name) != 0))
				continue;
			seen = true;
			broker_entry(cfg, i, &out[n]);
			out[n].value = v;
			out[n++].source = src[l];
		}
	return (int)n;
}

int
ch_topic_config_synonyms(const struct ch_config *cfg, const char *name, ch_config_entry *out,
			 size_t cap)
{
	int t = tdef_index(name);
	return t >= 0 ? ch_config_synonyms(cfg, tdefs[t].syn[0], out, cap) : 0;
}
