/*
 * cl_conf: libcohort's configuration (cohort_conf), with Apache Kafka's
 * consumer keys, value syntax, defaults and ConfigDef validators
 * (ConsumerConfig / CommonClientConfigs in Kafka 4.4). The table in
 * cl_conf.c is the one list of keys; cohort_conf_set/get go through it.
 *
 * A cohort_conf is plain data owned by one thread; a consumer takes a
 * private copy when it is created, so later changes do not reach it.
 */
#ifndef CL_CONF_H
#define CL_CONF_H

#include <stdbool.h>
#include <stdint.h>

#include "assign/ch_assign.h"
#include "common/ch_common.h"
#include "cohort/cohort.h"

typedef enum cl_offset_reset {
	CL_RESET_LATEST = 0,
	CL_RESET_EARLIEST,
	CL_RESET_NONE,
} cl_offset_reset;

/* security.protocol */
typedef enum cl_security_protocol {
	CL_PLAINTEXT = 0,
	CL_SSL,
	CL_SASL_PLAINTEXT,
	CL_SASL_SSL,
} cl_security_protocol;

/* The string-valued security keys, conf->sec[] (cl_conf.c names them;
 * NULL: not set). */
enum {
	CL_SEC_TRUSTSTORE_LOCATION, /* ssl.truststore.location (alias ssl.ca.location) */
	CL_SEC_TRUSTSTORE_TYPE,     /* ssl.truststore.type: PEM only */
	CL_SEC_KEYSTORE_LOCATION,   /* ssl.keystore.location: key and chain, PEM */
	CL_SEC_KEYSTORE_TYPE,       /* ssl.keystore.type: PEM only */
	CL_SEC_KEY_PASSWORD,        /* ssl.key.password */
	CL_SEC_CERT_LOCATION,       /* librdkafka's ssl.certificate.location */
	CL_SEC_KEY_LOCATION,        /* librdkafka's ssl.key.location */
	CL_SEC_ENDPOINT_ID,         /* ssl.endpoint.identification.algorithm */
	CL_SEC_SASL_MECHANISM,      /* sasl.mechanism (alias sasl.mechanisms) */
	CL_SEC_SASL_JAAS,           /* sasl.jaas.config */
	CL_SEC_SASL_USERNAME,       /* librdkafka's sasl.username */
	CL_SEC_SASL_PASSWORD,       /* librdkafka's sasl.password */
	CL_SEC__N
};

#define CL_TLS_V1_2 1u
#define CL_TLS_V1_3 2u

/* One bootstrap address, parsed from bootstrap.servers. */
typedef struct cl_addr {
	char *host; /* without IPv6 brackets */
	int port;
} cl_addr;

struct cohort_conf {
	/* connection */
	cl_addr *bootstrap; /* bootstrap.servers; nbootstrap == 0: unset */
	int nbootstrap;
	char *client_id;   /* "" by default */
	char *client_rack; /* "" by default: no rack */
	int32_t request_timeout_ms;
	int32_t default_api_timeout_ms;
	int64_t metadata_max_age_ms;
	int64_t retry_backoff_ms;
	int64_t retry_backoff_max_ms;
	int64_t reconnect_backoff_ms;
	int64_t reconnect_backoff_max_ms;
	int64_t socket_connection_setup_timeout_ms;
	int64_t socket_connection_setup_timeout_max_ms;
	int64_t connections_max_idle_ms;
	cl_security_protocol security_protocol;
	char *sec[CL_SEC__N];   /* CL_SEC_* */
	unsigned ssl_protocols; /* ssl.enabled.protocols: CL_TLS_V1_2 | CL_TLS_V1_3 */
	bool allow_auto_create_topics;
	bool exclude_internal_topics;
	/* group */
	char *group_id;               /* NULL: no group */
	char *group_instance_id;      /* NULL: dynamic member */
	bool group_protocol_consumer; /* group.protocol=consumer (KIP-848) */
	char *group_remote_assignor; /* the consumer protocol's ServerAssignor, NULL: the broker's */
	ch_assign_kind assignors[4]; /* partition.assignment.strategy, in preference order */
	int nassignors;
	int32_t session_timeout_ms;
	int32_t heartbeat_interval_ms;
	int32_t max_poll_interval_ms;
	bool enable_auto_commit;
	int32_t auto_commit_interval_ms;
	/* fetching */
	cl_offset_reset auto_offset_reset;
	int32_t fetch_min_bytes;
	int32_t fetch_max_wait_ms;
	int32_t fetch_max_bytes;
	int32_t max_partition_fetch_bytes;
	int32_t max_poll_records;
	bool check_crcs;
	bool read_committed; /* isolation.level=read_committed: Fetch and ListOffsets at
				the last stable offset, aborted transactions filtered */
	/* producer (ProducerConfig) */
	int16_t acks; /* -1 (all), 0, 1 */
	int64_t linger_ms;
	int32_t batch_size;
	int compression; /* CH_COMPRESSION_NONE..ZSTD */
	bool enable_idempotence;
	int partitioner; /* cl_partitioner */
	int64_t buffer_memory;
	int64_t max_block_ms;
	int32_t delivery_timeout_ms;
	int32_t max_in_flight;
	int32_t retries;
	int32_t max_request_size;
	cohort_delivery_cb delivery_cb;
	void *delivery_opaque;
	uint64_t user_set; /* bit i: keys[i] was set by cohort_conf_set */
	/* callbacks (consumer) */
	struct cl_callbacks {
		void *rebalance_listener; /* const cohort_rebalance_listener *, copied */
	} cb;
	void *listener_copy; /* owned copy of the listener struct, or NULL */
};

/* Default values into a zeroed conf. false: out of memory. */
bool cl_conf_init_defaults(cohort_conf *conf);
/* Free what a conf owns (not the struct). */
void cl_conf_release(cohort_conf *conf);
/* Deep copy src into a zeroed dst. false: out of memory (dst released). */
bool cl_conf_copy(cohort_conf *dst, const cohort_conf *src);

/* Whether key was set by cohort_conf_set (not only its default): Java's
 * producer resolves a few defaults differently then (idempotence). */
bool cl_conf_user_set(const cohort_conf *conf, const char *key);

/* snprintf into errstr when there is one (common/ch_common's ch_errf). */
#define cl_errstr ch_errf

#endif
