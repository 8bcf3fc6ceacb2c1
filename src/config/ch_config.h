/*
 * ch_config: cohortd's configuration, with Apache Kafka's key names and
 * defaults, and the topic-level configs of CreateTopics/DescribeConfigs.
 *
 * Sources, applied in order (later wins):
 *   1. built-in defaults (Kafka's, except where marked "cohort:" below)
 *   2. a server.properties-style file (cohortd -c FILE)
 *   3. --set key=value overrides
 *
 * File syntax is the java.util.Properties subset Kafka users write: '#' or '!'
 * comment lines, "key=value", "key: value" or "key value", whitespace
 * trimmed, a trailing backslash continues the line, \t \n \r \f \uXXXX and
 * \<char> escapes. A key repeated later wins.
 *
 * Use:
 *   struct ch_config cfg;
 *   if (ch_config_load(&cfg, path, sets, nsets, err, sizeof(err)) != CH_OK)
 *           { fprintf(stderr, "cohortd: %s\n", err); exit(1); }
 *   ... cfg.num_partitions, cfg.log_dir, cfg.listener.port ...
 *   ch_config_free(&cfg);
 * or the pieces: ch_config_init, ch_config_load_file / ch_config_set*,
 * then ch_config_finish (which must run before the typed fields are read).
 *
 * Every function returns CH_OK or CH_ERR with a message in err naming the key,
 * e.g. "unknown configuration key 'foo' (server.properties:3)" or
 * "invalid value 'abc' for num.partitions: expected an integer >= 1
 * (--set)". Nothing here exits the process or logs.
 *
 * Synonyms, resolved by ch_config_finish as Kafka does:
 *   node_id        node.id, or broker.id (both set and different: error)
 *   log_dir        log.dirs, else log.dir, else log.dirs' default ./data;
 *                  cohort supports exactly one directory
 *   log_retention_ms  log.retention.ms > log.retention.minutes > .hours
 *                  (any negative value means unlimited and becomes -1)
 *   log_roll_ms    log.roll.ms > log.roll.hours
 *   log_roll_jitter_ms  log.roll.jitter.ms > log.roll.jitter.hours
 *   log_flush_interval_ms  log.flush.interval.ms, unset = INT64_MAX
 *   advertised     advertised.listeners, else listeners
 *
 * Listeners: "NAME://host:port,..." (up to CH_LISTENERS_MAX, distinct names
 * and ports, as Kafka requires). NAME is a security protocol (PLAINTEXT, SSL,
 * SASL_PLAINTEXT, SASL_SSL) or any name that listener.security.protocol.map
 * maps to one. host may be empty (all interfaces), a name, an IPv4 address or
 * [IPv6]; port 0 asks for an ephemeral port. advertised.listeners names a
 * subset of them (a listener it leaves out advertises its own address, as
 * Kafka does); an empty advertised host means "this machine's name" and
 * advertised port 0 means "the bound port": the shell fills those in. As in
 * Kafka, advertised listeners may not use 0.0.0.0 / [::].
 *
 * Per-listener settings: listener.name.NAME.KEY (NAME lower-case, as Kafka
 * writes it) overrides KEY for that listener, for the ssl.* and sasl.* keys,
 * connections.max.reauth.ms and sasl.server.max.receive.size; and
 * listener.name.NAME.MECH.sasl.jaas.config (MECH lower-case: plain) holds the
 * PLAIN users of that listener (see ch_listener_sec). The resolved values are
 * in cfg.listener_sec[i], one per listener.
 *
 * Not thread-safe; after ch_config_finish the struct is read-only and may be
 * shared by readers.
 */
#ifndef CH_CONFIG_H
#define CH_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ch_compression.h"
#include "common/ch_common.h"
#include "common/ch_log.h"

/* DescribeConfigs ConfigSource (Kafka's DescribeConfigsResponse, v1+). */
#define CH_CONFIG_SOURCE_UNKNOWN 0
#define CH_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG 1
#define CH_CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG 2
#define CH_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG 3
#define CH_CONFIG_SOURCE_STATIC_BROKER_CONFIG 4
#define CH_CONFIG_SOURCE_DEFAULT_CONFIG 5

/* DescribeConfigs ConfigType (v3+). */
#define CH_CONFIG_TYPE_UNKNOWN 0
#define CH_CONFIG_TYPE_BOOLEAN 1
#define CH_CONFIG_TYPE_STRING 2
#define CH_CONFIG_TYPE_INT 3
#define CH_CONFIG_TYPE_SHORT 4
#define CH_CONFIG_TYPE_LONG 5
#define CH_CONFIG_TYPE_DOUBLE 6
#define CH_CONFIG_TYPE_LIST 7
#define CH_CONFIG_TYPE_CLASS 8
#define CH_CONFIG_TYPE_PASSWORD 9

/* cleanup.policy bits. */
#define CH_CLEANUP_DELETE 0x1
#define CH_CLEANUP_COMPACT 0x2

/* compression.type: values are Kafka's record-batch codec ids; PRODUCER keeps
 * whatever codec the producer used. */

/* message.timestamp.type; values match the record-batch attribute bit. */
typedef enum ch_timestamp_type {
	CH_TIMESTAMP_CREATE_TIME = 0,
	CH_TIMESTAMP_LOG_APPEND_TIME = 1,
} ch_timestamp_type;

#define CH_LISTENER_HOST_MAX 255

#define CH_LISTENERS_MAX 8

/* Security protocols (Kafka's SecurityProtocol ids). */
typedef enum ch_security_protocol {
	CH_SEC_PLAINTEXT = 0,
	CH_SEC_SSL = 1,
	CH_SEC_SASL_PLAINTEXT = 2,
	CH_SEC_SASL_SSL = 3,
} ch_security_protocol;

typedef struct ch_listener {
	char name[64];                       /* "PLAINTEXT", "INTERNAL", ... upper-case */
	char host[CH_LISTENER_HOST_MAX + 1]; /* "" = any / this host; no brackets */
	uint16_t port;                       /* 0 = ephemeral / the bound port */
} ch_listener;

/* sasl.enabled.mechanisms bits. */
#define CH_SASL_GSSAPI 0x1
#define CH_SASL_PLAIN 0x2
#define CH_SASL_SCRAM_SHA_256 0x4
#define CH_SASL_SCRAM_SHA_512 0x8

/* ssl.client.auth */
typedef enum ch_ssl_client_auth {
	CH_SSL_CLIENT_AUTH_NONE = 0,
	CH_SSL_CLIENT_AUTH_REQUESTED = 1,
	CH_SSL_CLIENT_AUTH_REQUIRED = 2,
} ch_ssl_client_auth;

/* ssl.enabled.protocols bits. */
#define CH_TLS_V1_2 0x1
#define CH_TLS_V1_3 0x2

/* One listener's security settings, resolved: listener.name.NAME.KEY, else
 * KEY. Strings point into cfg's state (NULL: unset). */
typedef struct ch_listener_sec {
	ch_security_protocol protocol;
	/* TLS (SSL, SASL_SSL) */
	const char *ssl_keystore_type; /* "PEM" (the only one cohort reads) */
	const char *ssl_keystore_location;
	const char *ssl_keystore_password; /* PEM: the key's password if ssl.key.password unset */
	const char *ssl_key_password;
	const char *ssl_keystore_certificate_chain; /* inline PEM */
	const char *ssl_keystore_key;               /* inline PEM */
	const char *ssl_truststore_type;
	const char *ssl_truststore_location;
	const char *ssl_truststore_certificates; /* inline PEM */
	unsigned ssl_enabled_protocols;          /* CH_TLS_* */
	const char *ssl_cipher_suites;           /* NULL: OpenSSL's defaults */
	ch_ssl_client_auth ssl_client_auth;
	const char *ssl_principal_mapping_rules;
	/* SASL (SASL_PLAINTEXT, SASL_SSL) */
	unsigned sasl_mechanisms;             /* CH_SASL_* */
	const char *plain_jaas;               /* listener.name.NAME.plain.sasl.jaas.config */
	int64_t connections_max_reauth_ms;    /* 0: no re-authentication */
	int32_t sasl_server_max_receive_size; /* frame limit before authentication */
	int32_t max_connections;              /* listener.name.NAME.max.connections */
} ch_listener_sec;

/* One explicit topic config (CreateTopics, the registry). Owned strings. */
typedef struct ch_topic_kv {
	char *key;
	char *value;
} ch_topic_kv;

struct ch_config_state;

/* Typed, resolved values. Field names follow the key with '.' -> '_'. */
struct ch_config {
	/* broker */
	int32_t node_id;                                /* node.id / broker.id */
	char *broker_rack;                              /* broker.rack; NULL if unset */
	ch_listener listener;                           /* listeners: the first one */
	ch_listener advertised;                         /* its advertised address */
	ch_listener listeners[CH_LISTENERS_MAX];        /* listeners, in order */
	ch_listener advertised_of[CH_LISTENERS_MAX];    /* each one's advertised address */
	ch_listener_sec listener_sec[CH_LISTENERS_MAX]; /* each one's security settings */
	size_t nlisteners;
	int64_t connection_failed_authentication_delay_ms;
	char *authorizer_class_name; /* authorizer.class.name ("" or NULL: none) */
	bool authorizer_enabled;     /* it names cohortd's authorizer (auth/ch_authz.h) */
	char *super_users;           /* super.users: "User:a;User:b" (NULL: none) */
	bool allow_everyone_if_no_acl_found;
	char *log_dir;              /* log.dirs / log.dir: the data directory */
	ch_log_level log_level;     /* log.level (cohort) */
	ch_listener admin_listener; /* admin.listeners (cohort): HTTP, when admin_enabled */
	bool admin_enabled;         /* admin.listeners is not empty */

	/* network */
	int32_t socket_request_max_bytes;
	int32_t socket_send_buffer_bytes;    /* -1: OS default */
	int32_t socket_receive_buffer_bytes; /* -1: OS default */
	int64_t connections_max_idle_ms;
	int64_t queued_max_request_bytes;          /* <= 0: unbounded (Kafka's -1) */
	int64_t socket_request_receive_timeout_ms; /* cohort; <= 0: none */
	int32_t max_connections;
	int32_t max_connections_per_ip;
	char *max_connections_per_ip_overrides; /* "ip:count,..." (checked) */
	int32_t max_connection_creation_rate;   /* per second, all listeners */
	int32_t num_network_threads;            /* accepted; cohort: one loop */
	int32_t num_io_threads;                 /* accepted; cohort: one loop */
	int32_t fetch_max_bytes;

	/* topics */
	int32_t num_partitions;
	int32_t default_replication_factor;
	int32_t min_insync_replicas;
	bool auto_create_topics_enable;
	bool delete_topic_enable;
	int32_t message_max_bytes;
	ch_compression compression_type;

	/* log */
	int32_t log_segment_bytes;
	int64_t log_roll_ms;
	int64_t log_roll_jitter_ms;
	int64_t log_retention_ms;    /* -1: unlimited */
	int64_t log_retention_bytes; /* -1: unlimited */
	int64_t log_retention_check_interval_ms;
	int64_t log_segment_delete_delay_ms;
	int64_t log_flush_interval_messages;
	int64_t log_flush_interval_ms;
	int32_t log_index_size_max_bytes;
	int32_t log_index_interval_bytes;
	bool log_preallocate;
	unsigned log_cleanup_policy; /* CH_CLEANUP_* bits */
	bool log_cleaner_enable;
	int32_t log_cleaner_threads;
	int64_t log_cleaner_backoff_ms;
	int64_t log_cleaner_dedupe_buffer_size;
	double log_cleaner_min_cleanable_ratio;
	int64_t log_cleaner_min_compaction_lag_ms;
	int64_t log_cleaner_max_compaction_lag_ms;
	int64_t log_cleaner_delete_retention_ms;
	ch_timestamp_type log_message_timestamp_type;
	int64_t log_message_timestamp_after_max_ms;
	int64_t log_message_timestamp_before_max_ms;
	int32_t num_recovery_threads_per_data_dir;
	int32_t producer_id_expiration_ms; /* idempotent producers (ch_producer_state.h) */

	/* group coordinator and __consumer_offsets */
	int32_t offsets_topic_num_partitions;
	int16_t offsets_topic_replication_factor;
	int32_t offsets_topic_segment_bytes;
	int32_t offsets_load_buffer_size;
	int32_t offsets_retention_minutes;
	int64_t offsets_retention_check_interval_ms;
	int32_t offset_metadata_max_bytes;
	int32_t offsets_commit_timeout_ms;
	int32_t group_min_session_timeout_ms;
	int32_t group_max_session_timeout_ms;
	int32_t group_initial_rebalance_delay_ms;
	int32_t group_initial_rebalance_quiet_ms;
	bool group_rebalance_join_waits_for_sync;
	int32_t group_max_size;
	int32_t group_rebalance_history_size; /* cohort: rebalances kept per group */
	int32_t group_consumer_session_timeout_ms;
	int32_t group_consumer_min_session_timeout_ms;
	int32_t group_consumer_max_session_timeout_ms;
	int32_t group_consumer_heartbeat_interval_ms;
	int32_t group_consumer_min_heartbeat_interval_ms;
	int32_t group_consumer_max_heartbeat_interval_ms;
	int32_t group_consumer_max_size;
	int32_t group_consumer_regex_refresh_interval_ms;
	int32_t group_consumer_assignment_interval_ms;
	bool group_consumer_assignor_offload_enable;
	int32_t group_consumer_assignor_offload_min_partitions;
	char *group_consumer_assignors;      /* group.consumer.assignors, comma-separated */
	int group_consumer_migration_policy; /* ch_coord_cg_migration */

	struct ch_config_state *st_; /* private: per-key strings and sources */
};

/* Lifecycle. init sets every default (and runs finish); free releases. */
void ch_config_init(struct ch_config *cfg);
void ch_config_free(struct ch_config *cfg);

/* init + optional file (NULL: none) + "key=value" overrides + finish. cfg
 * must not be initialised yet. On error cfg is still initialised and must be
 * freed. */
int ch_config_load(struct ch_config *cfg, const char *path, const char *const *sets, size_t nsets,
		   char *err, size_t errlen);

/* Reads a properties file. A missing or unreadable file is an error. */
int ch_config_load_file(struct ch_config *cfg, const char *path, char *err, size_t errlen);

/* Sets one key after validating its value. origin names the source for
 * messages ("server.properties:12", "--set"); may be NULL. */
int ch_config_set(struct ch_config *cfg, const char *key, const char *value, const char *origin,
		  char *err, size_t errlen);

/* One --set argument: "key=value" (split at the first '='). */
int ch_config_set_arg(struct ch_config *cfg, const char *arg, char *err, size_t errlen);

/* Parses every value into the typed fields, resolves synonyms and checks
 * cross-key rules: listeners, group.min/max.session.timeout.ms, replication
 * factors above 1 (one broker), a resolved log.retention of 0, the
 * cleaner's dedupe buffer per thread, min/max compaction lag. Call after
 * the last set. */
int ch_config_finish(struct ch_config *cfg, char *err, size_t errlen);

/*
 * DescribeConfigs. An entry's strings stay valid while cfg (and, for topic
 * entries, the override list) is alive and unchanged.
 */
typedef struct ch_config_entry {
	const char *name;
	const char *value; /* NULL: an unset optional config */
	const char *doc;
	int8_t source;   /* CH_CONFIG_SOURCE_* */
	int8_t type;     /* CH_CONFIG_TYPE_* */
	bool is_default; /* source == DEFAULT_CONFIG (v0's IsDefault) */
	bool read_only;  /* broker configs: not dynamic; topics: false */
	bool sensitive;  /* passwords and keys: value is NULL, as Kafka hides them */
} ch_config_entry;

/* Iterates all broker configs in table order. Start with *it = 0; returns
 * false at the end. */
bool ch_config_next(const struct ch_config *cfg, size_t *it, ch_config_entry *e);
/* One broker config by name; CH_ERR if there is no such key. */
int ch_config_describe(const struct ch_config *cfg, const char *name, ch_config_entry *e);
size_t ch_config_count(void);

/*
 * Topic-level configs. Defaults come from the broker config (retention.ms
 * from log.retention.*, segment.bytes from log.segment.bytes, ...).
 */
typedef struct ch_topic_config {
	unsigned cleanup_policy; /* CH_CLEANUP_* bits */
	ch_compression compression_type;
	int64_t delete_retention_ms;
	int64_t file_delete_delay_ms;
	int64_t flush_messages;
	int64_t flush_ms;
	int32_t index_interval_bytes;
	int64_t max_compaction_lag_ms;
	int32_t max_message_bytes;
	ch_timestamp_type message_timestamp_type;
	int64_t message_timestamp_after_max_ms; /* KIP-937, CreateTime only */
	int64_t message_timestamp_before_max_ms;
	double min_cleanable_dirty_ratio;
	int64_t min_compaction_lag_ms;
	int32_t min_insync_replicas;
	bool preallocate;
	int64_t retention_bytes; /* -1: unlimited */
	int64_t retention_ms;    /* -1: unlimited */
	int32_t segment_bytes;
	int32_t segment_index_bytes;
	int64_t segment_jitter_ms;
	int64_t segment_ms;
} ch_topic_config;

bool ch_topic_config_is_known(const char *name);

/* Validates one topic config. Unknown key or bad value (NULL counts as bad):
 * CH_ERR and a message for CreateTopics' INVALID_CONFIG. */
int ch_topic_config_validate(const char *name, const char *value, char *err, size_t errlen);

/* Validates a whole override set: each pair, no duplicate keys, and cross-key
 * rules (min.compaction.lag.ms <= max.compaction.lag.ms). */
int ch_topic_configs_validate(const ch_topic_kv *kv, size_t n, char *err, size_t errlen);

/* Effective topic config: broker-derived defaults, then the overrides (which
 * were validated when stored; an invalid one is ignored). */
void ch_topic_config_resolve(const struct ch_config *cfg, const ch_topic_kv *kv, size_t n,
			     ch_topic_config *out);

/* DescribeConfigs of a topic with the given overrides: overrides report
 * DYNAMIC_TOPIC_CONFIG; the rest report the broker-derived value with the
 * source of its first broker synonym (as Kafka: retention.ms inherited from
 * a static log.retention.hours is DEFAULT_CONFIG, log.retention.ms unset). */
bool ch_topic_config_next(const struct ch_config *cfg, const ch_topic_kv *kv, size_t n, size_t *it,
			  ch_config_entry *e);
int ch_topic_config_describe(const struct ch_config *cfg, const ch_topic_kv *kv, size_t n,
			     const char *name, ch_config_entry *e);
size_t ch_topic_config_count(void);

/*
 * Dynamic broker configs (AlterConfigs on the broker resource), two layers
 * over the static ones as in Kafka's DynamicBrokerConfig: this broker's
 * (resource name = node id) and the cluster default (resource name ""). A
 * key's value is the first set of: this broker's, the cluster default, the
 * static one (file, --set), the built-in default. The topic registry stores
 * the layers and sets them here at startup and on every change; the typed
 * fields follow at once.
 */
#define CH_CONFIG_LAYER_BROKER 0
#define CH_CONFIG_LAYER_DEFAULT 1

/* Keys AlterConfigs may change (Kafka's dynamic set among cohort's keys). */
bool ch_config_is_dynamic(const char *name);
/* LIST-typed keys (IncrementalAlterConfigs APPEND/SUBTRACT); broker, topic. */
bool ch_config_is_list(const char *name);
bool ch_topic_config_is_list(const char *name);
/* Built-in default as a string (NULL: none, or no such key). For a topic
 * config, Kafka's default of it (its first broker synonym's built-in one). */
const char *ch_config_default(const char *name);
const char *ch_topic_config_default(const char *name);

/* Would the layer hold kv (replacing what it has)? Every key known and
 * dynamic, every value valid, the whole configuration still consistent.
 * CH_ERR with Kafka's messages ("Cannot update these configs dynamically:
 * Set(node.id)", "Invalid value x for configuration y: ..."). */
int ch_config_check_dynamic(const struct ch_config *cfg, int layer, const ch_topic_kv *kv, size_t n,
			    char *err, size_t errlen);
/* Replaces a layer and re-resolves the typed fields. Entries that do not
 * pass (stored by another build) are skipped and CH_ERR names them; the
 * rest is set. */
int ch_config_set_dynamic(struct ch_config *cfg, int layer, const ch_topic_kv *kv, size_t n,
			  char *err, size_t errlen);
/* The entries one layer sets (DescribeConfigs of the cluster default). */
bool ch_config_layer_next(const struct ch_config *cfg, int layer, size_t *it, ch_config_entry *e);
/* DescribeConfigs synonyms of a broker key as Kafka lists them: layer by
 * layer (dynamic broker, dynamic default, static, default), each key of its
 * synonym group set there (log.retention.ms/.minutes/.hours), from the
 * first entry of the key itself. @returns count. */
int ch_config_synonyms(const struct ch_config *cfg, const char *name, ch_config_entry *out,
		       size_t cap);
/* The same for the broker key a topic config defaults to (retention.ms:
 * log.retention.ms), as Kafka's ConfigHelper. */
int ch_topic_config_synonyms(const struct ch_config *cfg, const char *name, ch_config_entry *out,
			     size_t cap);

/* Parses one "NAME://host:port" listener (the name is not checked against
 * the protocol map: finish does that); used by finish, exposed for the CLI
 * and tests. */
int ch_listener_parse(const char *s, ch_listener *out, char *err, size_t errlen);
/* Parses an admin.listeners value: "" (off: *on false) or one http://host:port (host as for
 * listeners, port 0 ephemeral). CH_OK, or CH_ERR and why in err. */
int ch_admin_listener_parse(const char *s, ch_listener *out, bool *on, char *err, size_t errlen);
/* "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL". */
const char *ch_security_protocol_name(ch_security_protocol p);
/* The index of the listener named name (case-insensitive) in cfg.listeners, or -1. */
int ch_config_listener_index(const struct ch_config *cfg, const char *name);
/* max.connections.per.ip for ip (an address literal), its
 * max.connections.per.ip.overrides entry applied. */
int32_t ch_config_max_connections_per_ip(const struct ch_config *cfg, const char *ip);

#endif
