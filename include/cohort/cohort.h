/*
 * cohort.h: libcohort, cohort's C client for Kafka-compatible clusters
 * (cohortd, Apache Kafka).
 *
 * Conventions that hold for every call below:
 *
 *   Handles     cohort_conf and cohort_consumer are opaque; create them with
 *               their _new function and release them with their _free (or,
 *               for a consumer, cohort_consumer_close + cohort_consumer_free).
 *   Errors      a cohort_err: 0 is success; positive values (and -1,
 *               UNKNOWN_SERVER_ERROR) are Kafka's own error codes as a
 *               broker sent them (Kafka's Errors.java numbering); values from
 *               -100 down are local errors raised by the library
 *               (COHORT_ERR__*). cohort_err_str() gives the text,
 *               cohort_err_name() the name, cohort_err_is_retriable() whether
 *               retrying the same call may succeed, cohort_err_is_fatal()
 *               whether the handle is unusable from now on (close it).
 *   Strings     const char * arguments are NUL-terminated and only read
 *               during the call (the library copies what it keeps).
 *   errstr      calls that can fail on bad input take (errstr, errstr_size)
 *               and write one line there naming what is wrong; may be NULL.
 *   Threads     every call says which thread may make it. "Any thread"
 *               means the call is thread-safe.
 *
 * Configuration keys, values and defaults are Apache Kafka's consumer
 * configuration (ConsumerConfig); README.md "libcohort" lists them.
 */
#ifndef COHORT_H
#define COHORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define COHORT_API __attribute__((visibility("default")))
#else
#define COHORT_API
#endif

/* ---- version ---------------------------------------------------------- */

#define COHORT_VERSION_MAJOR 0
#define COHORT_VERSION_MINOR 1
#define COHORT_VERSION_PATCH 0
#define COHORT_VERSION_STR "0.1.0"

/* The library's version as "MAJOR.MINOR.PATCH" (static storage). Any thread. */
COHORT_API const char *cohort_version(void);

/* ---- errors ----------------------------------------------------------- */

typedef int cohort_err;

#define COHORT_OK 0

/* Local errors: the library's own, never sent by a broker. */
#define COHORT_ERR__BAD_CONF (-100)    /* unknown key or invalid value */
#define COHORT_ERR__INVALID_ARG (-101) /* a call's argument is invalid */
#define COHORT_ERR__NOMEM (-102)       /* out of memory */
#define COHORT_ERR__TIMED_OUT (-103)   /* the call's timeout passed */
#define COHORT_ERR__TRANSPORT (-104)   /* connection failed or was lost */
#define COHORT_ERR__CLOSED (-105)      /* the handle is closed or closing */
#define COHORT_ERR__STATE                                                                          \
	(-106)                     /* not allowed in the current state
					     (e.g. commit without a group) */
#define COHORT_ERR__BAD_MSG (-107) /* a response or record did not decode */
#define COHORT_ERR__NO_COMMON_VERSION                                                              \
	(-108) /* the broker serves no version
					     of an API the library needs */
#define COHORT_ERR__ASSIGNMENT_LOST                                                                \
	(-109)                               /* partitions lost (session expiry,
					     fencing, poll interval passed):
					     commits for them are refused */
#define COHORT_ERR__UNKNOWN_PARTITION (-110) /* not in the current assignment */
#define COHORT_ERR__REBALANCE_FAILED                                                               \
	(-111) /* the rebalance could not complete
					     within the retries it allows */
#define COHORT_ERR__OFFSET_OUT_OF_RANGE                                                            \
	(-112)                         /* out of range and
					     auto.offset.reset=none */
#define COHORT_ERR__UNSUPPORTED (-113) /* the feature is not implemented */
#define COHORT_ERR__SYSTEM                                                                         \
	(-114)                        /* a system call failed (threads,
					     sockets, epoll) */
#define COHORT_ERR__WAKEUP (-115)     /* cohort_wakeup interrupted the call */
#define COHORT_ERR__QUEUE_FULL (-116) /* producer: buffer.memory used up */
#define COHORT_ERR__FATAL (-117)      /* producer: stopped by a fatal error */
#define COHORT_ERR__SSL                                                                            \
	(-118) /* the TLS handshake failed (the broker's certificate is
		  not trusted or does not name the host, it refused ours,
		  or it speaks no TLS): Java's SslAuthenticationException;
		  fatal, the reason in cohort_*_auth_error */

/* Some Kafka codes an application may want to test by name (Errors.java). */
#define COHORT_ERR_UNKNOWN_SERVER_ERROR (-1)
#define COHORT_ERR_OFFSET_OUT_OF_RANGE 1
#define COHORT_ERR_CORRUPT_MESSAGE 2 /* poll: a fetched batch is corrupt */
#define COHORT_ERR_UNKNOWN_TOPIC_OR_PARTITION 3
#define COHORT_ERR_COORDINATOR_LOAD_IN_PROGRESS 14
#define COHORT_ERR_COORDINATOR_NOT_AVAILABLE 15
#define COHORT_ERR_NOT_COORDINATOR 16
#define COHORT_ERR_ILLEGAL_GENERATION 22
#define COHORT_ERR_INCONSISTENT_GROUP_PROTOCOL 23
#define COHORT_ERR_INVALID_GROUP_ID 24
#define COHORT_ERR_UNKNOWN_MEMBER_ID 25
#define COHORT_ERR_INVALID_SESSION_TIMEOUT 26
#define COHORT_ERR_REBALANCE_IN_PROGRESS 27
#define COHORT_ERR_GROUP_AUTHORIZATION_FAILED 30
#define COHORT_ERR_UNSUPPORTED_VERSION 35
#define COHORT_ERR_NON_EMPTY_GROUP 68
#define COHORT_ERR_GROUP_ID_NOT_FOUND 69
#define COHORT_ERR_MEMBER_ID_REQUIRED 79
#define COHORT_ERR_GROUP_MAX_SIZE_REACHED 81
#define COHORT_ERR_FENCED_INSTANCE_ID 82
/* group.protocol=consumer (fatal, as Java's consumer treats them): the
 * instance id's previous member has not left yet; no common server assignor */
#define COHORT_ERR_UNRELEASED_INSTANCE_ID 111
#define COHORT_ERR_UNSUPPORTED_ASSIGNOR 112
/* group.protocol=consumer: a pattern the broker cannot compile (fatal) */
#define COHORT_ERR_INVALID_REGULAR_EXPRESSION 128
#define COHORT_ERR_MESSAGE_TOO_LARGE 10
#define COHORT_ERR_INVALID_TOPIC_EXCEPTION 17
#define COHORT_ERR_NOT_LEADER_OR_FOLLOWER 6
#define COHORT_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER 45
#define COHORT_ERR_UNKNOWN_PRODUCER_ID 59
#define COHORT_ERR_UNSUPPORTED_SASL_MECHANISM 33
#define COHORT_ERR_ILLEGAL_SASL_STATE 34
#define COHORT_ERR_SASL_AUTHENTICATION_FAILED 58 /* wrong password, unknown user */

/* Kafka's name ("FENCED_INSTANCE_ID") or the local name ("_BAD_CONF"), or
 * "UNKNOWN" for a code neither knows. Static storage. Any thread. */
COHORT_API const char *cohort_err_name(cohort_err err);
/* A one-line description (Kafka's message for its codes). Static storage.
 * Any thread. */
COHORT_API const char *cohort_err_str(cohort_err err);
/* 1 if retrying the same operation may succeed (Kafka's RetriableException
 * for broker codes; timeouts and transport errors locally), else 0. */
COHORT_API int cohort_err_is_retriable(cohort_err err);
/* 1 if the handle that returned it can no longer work and must be closed
 * (FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR,
 * GROUP_AUTHORIZATION_FAILED, INVALID_GROUP_ID, GROUP_MAX_SIZE_REACHED,
 * INVALID_REGULAR_EXPRESSION, UNSUPPORTED_VERSION, NO_COMMON_VERSION,
 * SASL_AUTHENTICATION_FAILED,
 * UNSUPPORTED_SASL_MECHANISM, _SSL, ...), else 0. */
COHORT_API int cohort_err_is_fatal(cohort_err err);

/* ---- configuration ---------------------------------------------------- */

typedef struct cohort_conf cohort_conf;

/* A configuration holding every key's default. NULL when out of memory.
 * The caller owns it (cohort_conf_free), until a _new call takes it.
 * A configuration is used by one thread at a time. */
COHORT_API cohort_conf *cohort_conf_new(void);
COHORT_API void cohort_conf_free(cohort_conf *conf);
/* A copy with the same values and callbacks; NULL when out of memory. */
COHORT_API cohort_conf *cohort_conf_dup(const cohort_conf *conf);

/*
 * Set key to value (Kafka's key names and value syntax: integers in
 * decimal, booleans "true"/"false", lists comma-separated, names
 * case-insensitive where Kafka's are). Returns COHORT_OK, or
 * COHORT_ERR__BAD_CONF with errstr naming the key (unknown key, value of
 * the wrong type or out of range, a value Kafka knows but libcohort does
 * not implement yet); the configuration is then unchanged. value NULL
 * restores the key's default.
 */
COHORT_API cohort_err cohort_conf_set(cohort_conf *conf, const char *key, const char *value,
				      char *errstr, size_t errstr_size);
/*
 * The current value of key in its canonical text form, copied into
 * buf[0..size) NUL-terminated; a key without a value (group.id unset)
 * gives "". Returns COHORT_OK, COHORT_ERR__BAD_CONF for an unknown key, or
 * COHORT_ERR__INVALID_ARG when buf is too small (nothing written then).
 * *needed (may be NULL) gets the size needed, NUL included.
 */
COHORT_API cohort_err cohort_conf_get(const cohort_conf *conf, const char *key, char *buf,
				      size_t size, size_t *needed);

/* ---- consumer ---------------------------------------------------------- */

/*
 * Threads. A consumer runs one I/O thread of its own (the library's event
 * loop): connections, metadata, the group member (FindCoordinator,
 * JoinGroup, SyncGroup, heartbeats, LeaveGroup), fetching and offset
 * commits all happen there, so heartbeats keep going while the
 * application is busy, inside a callback included. The application's
 * thread (one at a time: the "polling thread") calls cohort_poll; every
 * callback (rebalance listener, async commit results) runs on that thread,
 * inside cohort_poll, cohort_consumer_close or a commit call.
 * max.poll.interval.ms bounds the time between two cohort_poll calls:
 * past it the member leaves the group (its partitions are then lost) and
 * rejoins at the next poll.
 */
typedef struct cohort_consumer cohort_consumer;

/* A topic-partition. In callbacks, topic points at library memory valid
 * during the callback only. */
typedef struct cohort_tp {
	const char *topic;
	int32_t partition;
} cohort_tp;

/* A topic-partition and an offset (commits, committed offsets). */
typedef struct cohort_tp_offset {
	const char *topic;
	int32_t partition;
	int64_t offset; /* the next offset to consume; -1: none */
	cohort_err err; /* per-partition result, where a call reports one */
} cohort_tp_offset;

/* One record. Every pointer is into library memory that stays valid until
 * the next cohort_poll (or close) of the same consumer. */
typedef struct cohort_header {
	const char *key;   /* NUL-terminated copy */
	const void *value; /* NULL for a null value */
	int32_t value_len;
} cohort_header;

typedef struct cohort_record {
	const char *topic;
	int32_t partition;
	int64_t offset;
	int64_t timestamp;    /* ms since the epoch */
	int timestamp_type;   /* 0 CreateTime, 1 LogAppendTime */
	int32_t leader_epoch; /* -1 if unknown */
	const void *key;      /* NULL for a null key */
	int32_t key_len;
	const void *value; /* NULL for a null value (tombstone) */
	int32_t value_len;
	const cohort_header *headers;
	int32_t headers_n;
} cohort_record;

/*
 * The rebalance listener (Java's ConsumerRebalanceListener). Each callback
 * runs on the polling thread and gets the partitions concerned:
 *   revoked   the partitions are taken away in an orderly rebalance (all of
 *             them before an eager rejoin; only those that move, with
 *             cooperative-sticky) and on close; committing inside it works
 *             (the member keeps its generation until the callback returns)
 *   assigned  the partitions are now owned (with cooperative-sticky: the
 *             ones added); it runs before any of their records are returned
 *             and may seek
 *   lost      the partitions were lost without an orderly revoke (session
 *             expired, fenced, poll interval passed); commits for them are
 *             refused with COHORT_ERR__ASSIGNMENT_LOST
 * Any may be NULL. With enable.auto.commit the consumed positions of the
 * partitions are committed (synchronously) before revoked runs; that commit
 * is retried on coordinator errors and, with group.protocol=consumer, on
 * STALE_MEMBER_EPOCH with the member's latest epoch (as Java's).
 * With group.protocol=consumer (KIP-848: the broker assigns, each member
 * reconciles on its heartbeat) the callbacks are incremental, as with
 * cooperative-sticky: revoked for what leaves the member's assignment
 * (acknowledged to the coordinator once it returns), then assigned for
 * what joins it (also, empty, after the first heartbeat that assigns);
 * lost when the member is fenced (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID:
 * it then joins again at epoch 0).
 */
typedef struct cohort_rebalance_listener {
	void (*assigned)(cohort_consumer *c, const cohort_tp *tps, size_t n, void *opaque);
	void (*revoked)(cohort_consumer *c, const cohort_tp *tps, size_t n, void *opaque);
	void (*lost)(cohort_consumer *c, const cohort_tp *tps, size_t n, void *opaque);
	void *opaque;
} cohort_rebalance_listener;

/* Use this listener for consumers made from conf (copied; NULL removes). */
COHORT_API void cohort_conf_set_rebalance_listener(cohort_conf *conf,
						   const cohort_rebalance_listener *listener);

/*
 * Create a consumer and start its I/O thread. It connects to the
 * bootstrap servers at once (metadata); group membership begins with
 * cohort_subscribe. conf is copied (the caller still owns and frees it).
 * Returns NULL with errstr set on invalid configuration (bootstrap.servers
 * empty, heartbeat.interval.ms not below session.timeout.ms, ...; with a
 * group.id, partition.assignment.strategy, session.timeout.ms or
 * heartbeat.interval.ms set with group.protocol=consumer, or
 * group.remote.assignor with classic, as Java refuses them) or when the
 * thread cannot start. Any thread. With group.protocol=consumer a broker
 * without ConsumerGroupHeartbeat makes cohort_poll return the fatal
 * COHORT_ERR_UNSUPPORTED_VERSION.
 */
COHORT_API cohort_consumer *cohort_consumer_new(const cohort_conf *conf, char *errstr,
						size_t errstr_size);
/*
 * Why authentication failed: the first failed TLS handshake (OpenSSL's
 * reason, "SSL handshake failed: ... certificate verify failed ...") or
 * SASL exchange (the broker's ErrorMessage, e.g. Kafka's "Authentication
 * failed during authentication due to invalid credentials with SASL
 * mechanism SCRAM-SHA-512") on any of the handle's connections; NULL while
 * none failed. cohort_poll (and the calls) return the code,
 * COHORT_ERR__SSL or COHORT_ERR_SASL_AUTHENTICATION_FAILED, which is fatal.
 * Valid until the handle is freed. Any thread.
 */
COHORT_API const char *cohort_consumer_auth_error(cohort_consumer *c);

/*
 * Subscribe to these topics (replacing any earlier subscription): the
 * consumer joins group.id and is assigned partitions of them by the
 * group's assignor. Requires group.id (COHORT_ERR__STATE without). The
 * rebalance happens in the background; cohort_poll delivers the
 * callbacks and records. Polling thread.
 */
COHORT_API cohort_err cohort_subscribe(cohort_consumer *c, const char *const *topics, size_t n);

/*
 * Wait up to timeout_ms (0: do not wait; -1: forever) for records, running
 * due callbacks meanwhile. On COHORT_OK, *records points at *count records
 * (0 .. max.poll.records; 0 when the time ran out), valid until the next
 * cohort_poll or close. Otherwise an error the application must see: a
 * fatal one (FENCED_INSTANCE_ID, ...: close the consumer),
 * COHORT_ERR__OFFSET_OUT_OF_RANGE (auto.offset.reset=none),
 * COHORT_ERR_CORRUPT_MESSAGE (an assigned partition's next batch fails its
 * CRC or does not decode: once the records fetched before it are returned,
 * every poll returns it, as Java's poll raises its KafkaException, until the
 * application seeks that partition past it; the partition and offset are
 * logged; cohort_position gives the offset), or
 * COHORT_ERR__CLOSED. Polling thread.
 */
COHORT_API cohort_err cohort_poll(cohort_consumer *c, int timeout_ms, const cohort_record **records,
				  size_t *count);

/*
 * Commit offsets to the group coordinator and wait for the answer (at most
 * default.api.timeout.ms). offsets NULL: the consumed positions of every
 * assigned partition (the offset after the last record poll returned).
 * Each entry's err gets its partition's result; the call returns the first
 * error, COHORT_ERR__ASSIGNMENT_LOST for partitions this member no longer
 * owns, REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION when the group moved on
 * (those offsets are not committed; the next owner reads from the last
 * committed offset), and with group.protocol=consumer STALE_MEMBER_EPOCH when
 * the member's epoch moved on while the commit was under way (not retried:
 * Java's commitSync throws CommitFailedException for it; the auto-commit
 * before a revoke is retried with the latest epoch instead). Polling thread
 * (callbacks included).
 */
COHORT_API cohort_err cohort_commit_sync(cohort_consumer *c, cohort_tp_offset *offsets, size_t n);

/* Result of an async commit: offsets (with per-partition err) and the
 * overall error; runs on the polling thread inside cohort_poll. */
typedef void (*cohort_commit_cb)(cohort_consumer *c, cohort_err err,
				 const cohort_tp_offset *offsets, size_t n, void *opaque);
/* As cohort_commit_sync without waiting; cb (may be NULL) gets the result.
 * Returns COHORT_OK once queued. Polling thread. */
COHORT_API cohort_err cohort_commit_async(cohort_consumer *c, const cohort_tp_offset *offsets,
					  size_t n, cohort_commit_cb cb, void *opaque);

/* The committed offsets of these partitions (OffsetFetch), -1 where none;
 * waits at most default.api.timeout.ms. Polling thread. */
COHORT_API cohort_err cohort_committed(cohort_consumer *c, cohort_tp_offset *offsets, size_t n);

/* The next offset poll will return for an assigned partition into *offset
 * (-1 while it is still being looked up). COHORT_ERR__UNKNOWN_PARTITION if
 * not assigned. Polling thread. */
COHORT_API cohort_err cohort_position(cohort_consumer *c, const char *topic, int32_t partition,
				      int64_t *offset);

/* Make the next poll of an assigned partition start at offset (records
 * already fetched past it are dropped). Polling thread. */
COHORT_API cohort_err cohort_seek(cohort_consumer *c, const char *topic, int32_t partition,
				  int64_t offset);

/* The current assignment: *tps gets a malloc'd array of *n entries whose
 * topics are inside the same allocation (one free(*tps)). Polling thread. */
COHORT_API cohort_err cohort_assignment(cohort_consumer *c, cohort_tp **tps, size_t *n);

/* The member id the coordinator gave this member ("" before the first
 * JoinGroup answer; with group.protocol=consumer the id the member made
 * itself, KIP-1082), copied NUL-terminated into buf. COHORT_ERR__INVALID_ARG
 * when it does not fit. Any thread. */
COHORT_API cohort_err cohort_group_member_id(cohort_consumer *c, char *buf, size_t size);

/*
 * Leave the group and stop: revoked runs for the assignment (after the
 * auto-commit when enabled), then a dynamic member sends LeaveGroup; a
 * static member (group.instance.id) does not, as KIP-345 says: its
 * partitions stay with it until session.timeout.ms. With
 * group.protocol=consumer the member leaves with a heartbeat of epoch -1,
 * a static one with -2 (its assignment is kept for its instance id). Waits at most
 * default.api.timeout.ms. Later calls but cohort_consumer_free return
 * COHORT_ERR__CLOSED. Polling thread.
 */
COHORT_API cohort_err cohort_consumer_close(cohort_consumer *c);
/* Free the consumer (closing it first if needed). Polling thread. */
COHORT_API void cohort_consumer_free(cohort_consumer *c);

/* ---- admin ------------------------------------------------------------ */

/*
 * The admin client (Java's Admin): the calls an operator and the cohort CLI
 * need, each one synchronous with a timeout. It runs one I/O thread of its
 * own; every cohort_admin_* call may be made from any thread, several at
 * once, until cohort_admin_free.
 *
 * Timeouts: timeout_ms < 0 means default.api.timeout.ms. Within it, calls
 * retry what Kafka's AdminClient retries (lost connections, a coordinator
 * that moved or is loading, a stale leader, with retry.backoff.ms growing
 * to retry.backoff.max.ms); an item still unanswered when it passes gets
 * the last retriable error it saw, or COHORT_ERR__TIMED_OUT.
 *
 * Errors: each call returns COHORT_OK when every item succeeded, else the
 * first item's error in input order. A call-level error:
 * COHORT_ERR__INVALID_ARG (a NULL where a value is needed: nothing is
 * done), _NOMEM or _CLOSED (the out pointer stays NULL, in/out items get
 * that error). Per-item errors (per group, topic, partition, member) are
 * Kafka's codes as the broker sent them and as Kafka's AdminClient
 * reports them.
 *
 * Results: "in/out" arrays are the caller's, with result fields filled in;
 * other results are one allocation tree returned through an out pointer,
 * freed with the free function named next to the call (NULL is fine), and
 * every pointer inside lives until then.
 */
typedef struct cohort_admin cohort_admin;

/* Create an admin client: conf is copied (bootstrap.servers required;
 * client.id defaults to "adminclient-N" as Java's; the group and fetch
 * keys are ignored). NULL with errstr set on invalid configuration or when
 * the I/O thread cannot start. Any thread. */
COHORT_API cohort_admin *cohort_admin_new(const cohort_conf *conf, char *errstr,
					  size_t errstr_size);
/* As cohort_consumer_auth_error, for an admin client (its calls end with
 * the code). */
COHORT_API const char *cohort_admin_auth_error(cohort_admin *a);
/* Stop and free: calls still running end with COHORT_ERR__CLOSED. No call
 * may start after this begins. Any thread. */
COHORT_API void cohort_admin_free(cohort_admin *a);

/* A broker. host (and rack, NULL when none) live as long as the result. */
typedef struct cohort_node {
	int32_t id; /* -1: unknown */
	const char *host;
	int32_t port;
	const char *rack;
} cohort_node;

/* ---- admin: cluster ---- */

typedef struct cohort_cluster {
	const char *cluster_id; /* NULL if the broker has none */
	int32_t controller_id;  /* -1 if unknown */
	cohort_node *brokers;   /* sorted by id */
	size_t brokers_n;
} cohort_cluster;

/* The brokers, the controller and the cluster id (Metadata for no topics). */
COHORT_API cohort_err cohort_admin_describe_cluster(cohort_admin *a, int timeout_ms,
						    cohort_cluster **out);
COHORT_API void cohort_cluster_free(cohort_cluster *c);

/* ---- admin: groups ---- */

/* One group of a ListGroups answer. */
typedef struct cohort_group_listing {
	const char *group_id;
	const char *protocol_type; /* "consumer"; "" for a group that only commits
				      offsets (Kafka's "simple" group) */
	const char *state;         /* "Stable", "Empty", ...; NULL when the broker
				      does not say (ListGroups v0-v3) */
	const char *type;          /* "classic", "consumer", ...; NULL when the
				      broker does not say (ListGroups v0-v4) */
	int32_t coordinator;       /* the broker that listed it */
} cohort_group_listing;

/* A broker that could not answer a cluster-wide call. */
typedef struct cohort_node_error {
	int32_t node_id;
	cohort_err err;
} cohort_node_error;

typedef struct cohort_group_list {
	cohort_group_listing *groups; /* sorted by group id */
	size_t groups_n;
	cohort_node_error *errors; /* brokers whose ListGroups failed */
	size_t errors_n;
} cohort_group_list;

/*
 * Every group of the cluster (ListGroups sent to every broker, as Java's
 * listGroups does), optionally only those in one of `states` (Kafka's
 * names, case-insensitive: "Stable", "PreparingRebalance", "Empty", ...)
 * and of one of `types` ("classic", "consumer"). The brokers filter
 * (ListGroups v4 for states, v5 for types). A broker too old for a filter
 * answers UNSUPPORTED_VERSION, as in Java 4.4's AdminClient, except for a
 * types filter of "classic" alone, which such a broker meets by having no
 * other kind. Returns the first broker error, with the groups of the
 * brokers that answered still in *out.
 */
COHORT_API cohort_err cohort_admin_list_groups(cohort_admin *a, const char *const *states,
					       size_t states_n, const char *const *types,
					       size_t types_n, int timeout_ms,
					       cohort_group_list **out);
COHORT_API void cohort_group_list_free(cohort_group_list *l);

/* A group's coordinator (FindCoordinator, batched v4+ where the broker
 * has it, one group per request before). */
typedef struct cohort_coordinator {
	const char *group_id;
	cohort_err err;
	cohort_node node;
} cohort_coordinator;

typedef struct cohort_coordinators {
	cohort_coordinator *groups; /* in the order asked */
	size_t groups_n;
} cohort_coordinators;

COHORT_API cohort_err cohort_admin_find_coordinators(cohort_admin *a, const char *const *groups,
						     size_t n, int timeout_ms,
						     cohort_coordinators **out);
COHORT_API void cohort_coordinators_free(cohort_coordinators *c);

/* One member of a described group. */
typedef struct cohort_member_description {
	const char *member_id;
	const char *group_instance_id; /* NULL: a dynamic member */
	const char *client_id;
	const char *host; /* as the coordinator saw it ("/127.0.0.1") */
	/* decoded with the consumer embedded protocol when the group's protocol
	 * type is "consumer" (or "" as Java reads it): */
	cohort_tp *assignment; /* sorted by topic, partition */
	size_t assignment_n;
	const char **subscription; /* topics of the member's metadata for the
				      group's protocol, as sent */
	size_t subscription_n;
	cohort_err decode_err; /* COHORT_ERR__BAD_MSG: metadata or assignment did
				  not decode (the raw bytes are still there) */
	/* the raw bytes, whatever the protocol type */
	const void *metadata;
	size_t metadata_len;
	const void *assignment_bytes;
	size_t assignment_bytes_len;
	/* a consumer group's member (ConsumerGroupDescribe, KIP-848); for a
	 * classic group's member member_epoch is -1, the rest NULL / 0: */
	int32_t member_epoch;
	cohort_tp *target_assignment; /* what the coordinator's assignment gives
					 it, sorted; assignment is what it owns */
	size_t target_assignment_n;
	const char *rack;
	const char *subscribed_topic_regex; /* NULL: a list subscription */
	/* which protocol a consumer group's member speaks (ConsumerGroupDescribe
	 * v1's MemberType, KIP-1099): "consumer" (ConsumerGroupHeartbeat) or
	 * "classic" (JoinGroup/SyncGroup inside a consumer group, KIP-848's
	 * migration); NULL when the broker does not say (v0) and for a classic
	 * group's member. Kafka's admin client calls it upgraded (true for
	 * "consumer"). */
	const char *member_type;
} cohort_member_description;

typedef struct cohort_group_description {
	const char *group_id;
	cohort_err err;            /* the group's error; a group that does not exist
				      is state "Dead" with no error (DescribeGroups
				      v0-v5, the versions libcohort speaks) */
	const char *state;         /* "Stable", "Empty", "Dead", ... */
	const char *protocol_type; /* "consumer", "" */
	const char *protocol;      /* the chosen assignor ("range", ...), "" when
				      not rebalanced */
	cohort_node coordinator;
	cohort_member_description *members;
	size_t members_n;
	const char *type;         /* "classic" or "consumer" (KIP-848); NULL for a
				     group not found */
	int32_t group_epoch;      /* a consumer group's epoch, -1 for classic */
	int32_t assignment_epoch; /* the epoch of its target assignment, -1 for
				     classic */
} cohort_group_description;

typedef struct cohort_group_descriptions {
	cohort_group_description *groups; /* in the order asked */
	size_t groups_n;
} cohort_group_descriptions;

/* Describe classic groups (DescribeGroups at each group's coordinator).
 * The first group error is returned; *out always holds every group. */
COHORT_API cohort_err cohort_admin_describe_groups(cohort_admin *a, const char *const *groups,
						   size_t n, int timeout_ms,
						   cohort_group_descriptions **out);
/* Describe groups of either protocol, as Java's describeConsumerGroups:
 * ConsumerGroupDescribe first (consumer groups: state, epochs, assignor in
 * `protocol`, each member's epoch, current and target assignment), then
 * DescribeGroups for the groups that answer says are not consumer groups
 * (GROUP_ID_NOT_FOUND) and for every group when the coordinator lacks the
 * API. A group that is neither is "Dead" with no error, as above. */
COHORT_API cohort_err cohort_admin_describe_consumer_groups(cohort_admin *a,
							    const char *const *groups, size_t n,
							    int timeout_ms,
							    cohort_group_descriptions **out);
COHORT_API void cohort_group_descriptions_free(cohort_group_descriptions *d);

/* ---- admin: offsets ---- */

/* ListOffsets specs besides a timestamp (Kafka's OffsetSpec): the log end
 * offset (high watermark), the log start offset, and the record with the
 * largest timestamp (ListOffsets v7+; UNSUPPORTED_VERSION on older
 * brokers, as Java). */
#define COHORT_OFFSET_SPEC_LATEST (-1)
#define COHORT_OFFSET_SPEC_EARLIEST (-2)
#define COHORT_OFFSET_SPEC_MAX_TIMESTAMP (-3)

/* One partition's ListOffsets query (in) and answer (out). */
typedef struct cohort_offset_query {
	const char *topic;    /* in */
	int32_t partition;    /* in */
	int64_t spec;         /* in: COHORT_OFFSET_SPEC_*, or a timestamp in ms
				  (>= 0): the first offset whose timestamp is at or
				  after it */
	int64_t offset;       /* out: -1 when there is none (a timestamp after
				  every record) */
	int64_t timestamp;    /* out: the record's timestamp, -1 for earliest
				  and latest */
	int32_t leader_epoch; /* out: -1 unknown */
	cohort_err err;       /* out */
} cohort_offset_query;

/* Offsets of partitions by spec, asked of each partition's leader
 * (ListOffsets, read_uncommitted). Unknown topics and partitions and stale
 * leaders are retried until the timeout, as Java's AdminClient does; such a
 * partition then ends with UNKNOWN_TOPIC_OR_PARTITION or the leader error
 * last seen. q is in/out. */
COHORT_API cohort_err cohort_admin_list_offsets(cohort_admin *a, cohort_offset_query *q, size_t n,
						int timeout_ms);

/* Kafka's IsolationLevel. */
typedef enum cohort_isolation_level {
	COHORT_READ_UNCOMMITTED = 0,
	COHORT_READ_COMMITTED = 1,
} cohort_isolation_level;

/* cohort_admin_list_offsets with an isolation level (Java's
 * ListOffsetsOptions.isolationLevel): under COHORT_READ_COMMITTED,
 * COHORT_OFFSET_SPEC_LATEST is the last stable offset (the first offset of
 * the oldest open transaction, else the high watermark).
 * COHORT_ERR__INVALID_ARG for another value. */
COHORT_API cohort_err cohort_admin_list_offsets_isolation(cohort_admin *a, cohort_offset_query *q,
							  size_t n, int timeout_ms,
							  cohort_isolation_level isolation);

/* A partition's committed offset in a group. */
typedef struct cohort_group_offset {
	const char *topic;
	int32_t partition;
	int64_t offset;       /* -1: nothing committed */
	int32_t leader_epoch; /* -1: unknown */
	const char *metadata; /* the commit's metadata; NULL in alter means "" */
	cohort_err err;       /* the partition's error */
} cohort_group_offset;

/* Which committed offsets of a group to read. */
typedef struct cohort_group_offsets_spec {
	const char *group_id;
	const cohort_tp *partitions; /* NULL: every partition with a commit */
	size_t partitions_n;
} cohort_group_offsets_spec;

typedef struct cohort_group_offsets {
	const char *group_id;
	cohort_err err;               /* the group's error */
	cohort_group_offset *offsets; /* the partitions asked, in that order;
					  or every committed one, sorted */
	size_t offsets_n;
} cohort_group_offsets;

typedef struct cohort_group_offsets_list {
	cohort_group_offsets *groups; /* in the order asked */
	size_t groups_n;
} cohort_group_offsets_list;

/* Committed offsets of many groups (OffsetFetch at each coordinator: one
 * request per coordinator with v8+, one per group before). require_stable
 * (v7+) makes the coordinator refuse partitions with pending transactional
 * commits (UNSTABLE_OFFSET_COMMIT). */
COHORT_API cohort_err cohort_admin_list_group_offsets(cohort_admin *a,
						      const cohort_group_offsets_spec *groups,
						      size_t n, int require_stable, int timeout_ms,
						      cohort_group_offsets_list **out);
COHORT_API void cohort_group_offsets_list_free(cohort_group_offsets_list *l);

/* Commit offsets for a group as an admin (OffsetCommit with no member:
 * generation -1, member id ""). Kafka takes them only while the group has
 * no members (Empty, or a group that does not exist yet): a group with
 * members answers UNKNOWN_MEMBER_ID per partition, which is returned as
 * Java's AdminClient returns it. offsets is in/out (err per partition). */
COHORT_API cohort_err cohort_admin_alter_group_offsets(cohort_admin *a, const char *group,
						       cohort_group_offset *offsets, size_t n,
						       int timeout_ms);

/* Delete a group's committed offsets of partitions (OffsetDelete): the
 * group's error (GROUP_ID_NOT_FOUND, ...) goes to every partition, else
 * each gets its own (GROUP_SUBSCRIBED_TO_TOPIC while a member consumes the
 * topic). Each entry's offset is ignored; err is out. */
COHORT_API cohort_err cohort_admin_delete_group_offsets(cohort_admin *a, const char *group,
							cohort_tp_offset *partitions, size_t n,
							int timeout_ms);

/* Delete groups (DeleteGroups at each coordinator): errs[i] (n entries)
 * gets group i's result (NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, ...). */
COHORT_API cohort_err cohort_admin_delete_groups(cohort_admin *a, const char *const *groups,
						 size_t n, cohort_err *errs, int timeout_ms);

/* Remove static members from a group by group.instance.id (LeaveGroup v3+
 * with member identities, KIP-345); errs[i] gets member i's result
 * (UNKNOWN_MEMBER_ID when no such instance is in the group). n == 0
 * removes every member (the group is described first, as Java does;
 * errs may be NULL then; a group without members is
 * COHORT_ERR__INVALID_ARG, Java's IllegalArgumentException). reason (NULL: "member was removed by an admin",
 * Java's) travels with LeaveGroup v5+ (KIP-800). */
COHORT_API cohort_err cohort_admin_remove_members(cohort_admin *a, const char *group,
						  const char *const *instance_ids, size_t n,
						  cohort_err *errs, const char *reason,
						  int timeout_ms);

/* ---- admin: topics and configurations ---- */

/* A config name and value (value NULL: Kafka's null, the default). */
typedef struct cohort_config_kv {
	const char *name;
	const char *value;
} cohort_config_kv;

/* One topic to create (in) and its result (out). */
typedef struct cohort_new_topic {
	const char *name;                /* in */
	int32_t partitions;              /* in: -1 the broker's num.partitions */
	int16_t replication_factor;      /* in: -1 the broker's default.replication.factor */
	const cohort_config_kv *configs; /* in: topic configs, may be NULL */
	size_t configs_n;
	cohort_err err;   /* out: TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_CONFIG, ... */
	char errmsg[256]; /* out: the broker's message, "" when none (cut to fit) */
} cohort_new_topic;

/* Create topics (CreateTopics at the controller Metadata names; with
 * validate_only the broker only checks them). topics is in/out. */
COHORT_API cohort_err cohort_admin_create_topics(cohort_admin *a, cohort_new_topic *topics,
						 size_t n, int validate_only, int timeout_ms);

/* Delete topics by name (DeleteTopics at the controller): errs[i] gets topic
 * i's result (UNKNOWN_TOPIC_OR_PARTITION when there is no such topic). */
COHORT_API cohort_err cohort_admin_delete_topics(cohort_admin *a, const char *const *topics,
						 size_t n, cohort_err *errs, int timeout_ms);

/* Grow a topic to `total` partitions (in) and the result (out). */
typedef struct cohort_new_partitions {
	const char *topic; /* in */
	int32_t total;     /* in: the new partition count */
	cohort_err err;    /* out: INVALID_PARTITIONS, UNKNOWN_TOPIC_OR_PARTITION, ... */
	char errmsg[256];  /* out: the broker's message, "" when none */
} cohort_new_partitions;

/* CreatePartitions at the controller (validate_only: check only). */
COHORT_API cohort_err cohort_admin_create_partitions(cohort_admin *a, cohort_new_partitions *p,
						     size_t n, int validate_only, int timeout_ms);

typedef struct cohort_partition_description {
	int32_t partition;
	cohort_err err;       /* e.g. LEADER_NOT_AVAILABLE */
	int32_t leader;       /* node id, -1 none */
	int32_t leader_epoch; /* -1 unknown */
	const int32_t *replicas;
	size_t replicas_n;
	const int32_t *isr;
	size_t isr_n;
	const int32_t *offline;
	size_t offline_n;
} cohort_partition_description;

typedef struct cohort_topic_description {
	const char *name;
	cohort_err err;       /* UNKNOWN_TOPIC_OR_PARTITION, ... */
	uint8_t topic_id[16]; /* zero when the broker gives none (Metadata < v10) */
	int is_internal;      /* __consumer_offsets */
	cohort_partition_description *partitions; /* sorted by partition */
	size_t partitions_n;
} cohort_topic_description;

typedef struct cohort_topic_descriptions {
	cohort_topic_description *topics; /* in the order asked; every topic
					     (internal ones included) sorted by
					     name when none was named */
	size_t topics_n;
} cohort_topic_descriptions;

/* Describe topics (Metadata, no auto-creation): partitions, leaders,
 * replicas, in-sync replicas. n == 0 describes every topic (the CLI's
 * "topics list"). */
COHORT_API cohort_err cohort_admin_describe_topics(cohort_admin *a, const char *const *topics,
						   size_t n, int timeout_ms,
						   cohort_topic_descriptions **out);
COHORT_API void cohort_topic_descriptions_free(cohort_topic_descriptions *d);

/* Config resource types (Kafka's ConfigResource.Type). */
#define COHORT_RESOURCE_TOPIC 2
#define COHORT_RESOURCE_BROKER 4

typedef struct cohort_config_resource {
	int type;         /* COHORT_RESOURCE_* */
	const char *name; /* topic name, or broker id ("1"; "" the cluster-wide
			     dynamic defaults) */
} cohort_config_resource;

typedef struct cohort_config_entry {
	const char *name;
	const char *value; /* NULL: no value, or a sensitive one */
	int source;        /* Kafka's ConfigSource id: 1 DYNAMIC_TOPIC_CONFIG,
			      2 DYNAMIC_BROKER_CONFIG, 3 DYNAMIC_DEFAULT_BROKER_CONFIG,
			      4 STATIC_BROKER_CONFIG, 5 DEFAULT_CONFIG,
			      6 DYNAMIC_BROKER_LOGGER_CONFIG, ... */
	int read_only;
	int sensitive;
	int type;                  /* Kafka's ConfigType id (1 BOOLEAN, 2 STRING,
				      3 INT, 4 SHORT, 5 LONG, 6 DOUBLE, 7 LIST, ...) */
	const char *documentation; /* NULL when the broker sends none */
} cohort_config_entry;

typedef struct cohort_config_result {
	int type;
	const char *name;
	cohort_err err;               /* UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST, ... */
	const char *errmsg;           /* the broker's message, NULL when none */
	cohort_config_entry *entries; /* in the broker's order */
	size_t entries_n;
} cohort_config_result;

typedef struct cohort_configs {
	cohort_config_result *resources; /* in the order asked */
	size_t resources_n;
} cohort_configs;

/* Every config of topics and brokers (DescribeConfigs with documentation:
 * topics at any broker, a broker's at that broker, the cluster defaults at
 * any). */
COHORT_API cohort_err cohort_admin_describe_configs(cohort_admin *a,
						    const cohort_config_resource *res, size_t n,
						    int timeout_ms, cohort_configs **out);
COHORT_API void cohort_configs_free(cohort_configs *c);

/* ---- admin: ACLs ---- */

/* Kafka's codes: ResourceType, PatternType, AclOperation, AclPermissionType. */
#define COHORT_ACL_RESOURCE_ANY 1
#define COHORT_ACL_RESOURCE_TOPIC 2
#define COHORT_ACL_RESOURCE_GROUP 3
#define COHORT_ACL_RESOURCE_CLUSTER 4
#define COHORT_ACL_RESOURCE_TRANSACTIONAL_ID 5
#define COHORT_ACL_PATTERN_ANY 1
#define COHORT_ACL_PATTERN_MATCH 2
#define COHORT_ACL_PATTERN_LITERAL 3
#define COHORT_ACL_PATTERN_PREFIXED 4
#define COHORT_ACL_OP_ANY 1
#define COHORT_ACL_OP_ALL 2
#define COHORT_ACL_OP_READ 3
#define COHORT_ACL_OP_WRITE 4
#define COHORT_ACL_OP_CREATE 5
#define COHORT_ACL_OP_DELETE 6
#define COHORT_ACL_OP_ALTER 7
#define COHORT_ACL_OP_DESCRIBE 8
#define COHORT_ACL_OP_CLUSTER_ACTION 9
#define COHORT_ACL_OP_DESCRIBE_CONFIGS 10
#define COHORT_ACL_OP_ALTER_CONFIGS 11
#define COHORT_ACL_OP_IDEMPOTENT_WRITE 12
#define COHORT_ACL_PERMISSION_ANY 1
#define COHORT_ACL_PERMISSION_DENY 2
#define COHORT_ACL_PERMISSION_ALLOW 3

/* Kafka's name of a code of one kind ("TOPIC", "PREFIXED", "READ",
 * "ALLOW"; "UNKNOWN" for a code it does not know), and the code of a name
 * (case-insensitive, "-" for "_", as kafka-acls reads them; -1 if none). */
#define COHORT_ACL_KIND_RESOURCE 0
#define COHORT_ACL_KIND_PATTERN 1
#define COHORT_ACL_KIND_OPERATION 2
#define COHORT_ACL_KIND_PERMISSION 3
COHORT_API const char *cohort_acl_name(int kind, int code);
COHORT_API int cohort_acl_parse(int kind, const char *name);

/* An ACL binding, or a filter of them (codes ANY, pattern MATCH, NULL
 * strings: any value), as Kafka's AclBinding / AclBindingFilter. */
typedef struct cohort_acl {
	int resource_type; /* COHORT_ACL_RESOURCE_* */
	const char *resource_name;
	int pattern_type;      /* COHORT_ACL_PATTERN_* */
	const char *principal; /* "User:alice", "User:*" */
	const char *host;      /* an IP address or "*" */
	int operation;         /* COHORT_ACL_OP_* */
	int permission;        /* COHORT_ACL_PERMISSION_* */
} cohort_acl;

typedef struct cohort_acls {
	cohort_acl *acls; /* in the broker's order */
	size_t acls_n;
	char errmsg[256]; /* a failed call's message from the broker, "" when none */
} cohort_acls;

/* The bindings filter matches (DescribeAcls, any broker); *out freed with
 * cohort_acls_free, also when the call fails (its errmsg then). */
COHORT_API cohort_err cohort_admin_describe_acls(cohort_admin *a, const cohort_acl *filter,
						 int timeout_ms, cohort_acls **out);
COHORT_API void cohort_acls_free(cohort_acls *l);

/* One binding's or one filter's result. */
typedef struct cohort_acl_result {
	cohort_err err; /* INVALID_REQUEST, CLUSTER_AUTHORIZATION_FAILED, SECURITY_DISABLED, ... */
	char errmsg[256]; /* the broker's message, "" when none */
} cohort_acl_result;

/* CreateAcls of v[0..n) in one request (any broker); results[i] is v[i]'s.
 * Returns the first error (or a call-level one). */
COHORT_API cohort_err cohort_admin_create_acls(cohort_admin *a, const cohort_acl *v, size_t n,
					       cohort_acl_result *results, int timeout_ms);
/* DeleteAcls of the filters f[0..n) in one request (any broker); results[i]
 * is f[i]'s; *deleted (may be NULL) gets every binding removed, filter by
 * filter (freed with cohort_acls_free). Returns the first error. */
COHORT_API cohort_err cohort_admin_delete_acls(cohort_admin *a, const cohort_acl *f, size_t n,
					       cohort_acl_result *results, int timeout_ms,
					       cohort_acls **deleted);

/* ---- producer ---------------------------------------------------------- */

/*
 * The producer (Java's KafkaProducer). Threads: cohort_produce may be
 * called from any number of threads at once; the producer's own I/O
 * thread batches the records per partition (linger.ms, batch.size),
 * compresses them (compression.type) and sends one Produce request per
 * leader at a time up to max.in.flight.requests.per.connection, retrying
 * as Kafka's producer does. Delivery reports run on the thread that calls
 * cohort_producer_poll, cohort_flush or cohort_producer_close (one such
 * thread at a time), never on the I/O thread; with a delivery callback
 * set, poll regularly: reports waiting for a poll count against
 * buffer.memory.
 *
 * Configuration: Apache Kafka's producer keys and defaults (acks=all,
 * linger.ms=5, batch.size=16384, compression.type=none,
 * enable.idempotence=true, buffer.memory=33554432, max.block.ms=60000,
 * delivery.timeout.ms=120000, max.in.flight.requests.per.connection=5,
 * retries=2147483647, max.request.size=1048576) and `partitioner` with
 * librdkafka's names (murmur2_random, the default, puts keyed records
 * where Java's default partitioner does). README.md "libcohort" has the
 * whole list.
 */
typedef struct cohort_producer cohort_producer;

/* cohort_produce's partition argument: let the partitioner choose. */
#define COHORT_PARTITION_ANY (-1)
/* cohort_produce's timestamp argument: the current time. */
#define COHORT_TIMESTAMP_NOW (-1)

/* One record's outcome. topic points at library memory valid during the
 * callback only. */
typedef struct cohort_delivery {
	const char *topic;
	int32_t partition;
	int64_t offset;    /* the record's offset; -1 when failed or acks=0 */
	int64_t timestamp; /* CreateTime given or taken, or the broker's
			      LogAppendTime when the topic uses it */
	cohort_err err;    /* COHORT_OK: written (as acks asked) */
	void *opaque;      /* cohort_produce's msg_opaque */
} cohort_delivery;

/* A delivery report, one per record produced (success or failure), in the
 * order of the records within each partition. Runs on the thread inside
 * cohort_producer_poll / cohort_flush / cohort_producer_close. */
typedef void (*cohort_delivery_cb)(cohort_producer *p, const cohort_delivery *d, void *opaque);

/* Use cb (NULL: none) with opaque for producers made from conf. */
COHORT_API void cohort_conf_set_delivery_cb(cohort_conf *conf, cohort_delivery_cb cb, void *opaque);

/*
 * Create a producer and start its I/O thread (it connects to the bootstrap
 * servers at once; with enable.idempotence it asks for a producer id).
 * conf is copied. NULL with errstr set on invalid configuration
 * (bootstrap.servers empty; enable.idempotence=true set explicitly with
 * acks other than all, retries 0 or more than 5 requests in flight;
 * delivery.timeout.ms below linger.ms + request.timeout.ms set
 * explicitly) or when the thread cannot start. Any thread.
 */
COHORT_API cohort_producer *cohort_producer_new(const cohort_conf *conf, char *errstr,
						size_t errstr_size);
/* As cohort_consumer_auth_error, for a producer. */
COHORT_API const char *cohort_producer_auth_error(cohort_producer *p);

/*
 * Queue one record for topic. Every argument is copied before the call
 * returns (key, value, headers: the caller may reuse its buffers at once).
 *   partition  a partition number, or COHORT_PARTITION_ANY for the
 *              partitioner (keyed: by key; no key: sticky, KIP-480)
 *   key        NULL for a null key (key_len ignored); value NULL: null value
 *   headers    nheaders headers (NULL when 0); a header's value may be NULL
 *   timestamp  ms since the epoch, or COHORT_TIMESTAMP_NOW
 *   msg_opaque given back in this record's delivery report
 * Blocks up to max.block.ms while the topic's metadata is unknown (the
 * first record of a topic) and while buffer.memory is used up. Returns
 * COHORT_OK (queued: the delivery report tells the outcome), or, with no
 * report to come:
 *   COHORT_ERR__QUEUE_FULL       no room within max.block.ms (0: at once;
 *                                inside a delivery callback: at once)
 *   COHORT_ERR__TIMED_OUT        the topic, or that partition of it, is not
 *                                in the metadata after max.block.ms
 *   COHORT_ERR_MESSAGE_TOO_LARGE the record is larger than
 *                                max.request.size or buffer.memory
 *   a broker's topic error (INVALID_TOPIC_EXCEPTION, TOPIC_AUTHORIZATION_FAILED)
 *   COHORT_ERR__INVALID_ARG      NULL or empty topic, partition below -1,
 *                                timestamp below -1, a NULL header key
 *   COHORT_ERR__FATAL            the producer hit a fatal error (see
 *                                cohort_producer_fatal_error); close it
 *   COHORT_ERR__CLOSED           cohort_producer_close was called
 * Any thread.
 */
COHORT_API cohort_err cohort_produce(cohort_producer *p, const char *topic, int32_t partition,
				     const void *key, size_t key_len, const void *value,
				     size_t value_len, const cohort_header *headers,
				     size_t nheaders, int64_t timestamp, void *msg_opaque);

/* Run the delivery reports that are due, waiting up to timeout_ms (0: do
 * not wait; -1: forever) for the first. Returns how many ran. One thread
 * at a time. */
COHORT_API int cohort_producer_poll(cohort_producer *p, int timeout_ms);

/*
 * Send every queued record now (linger.ms no longer waits) and wait until
 * each has its delivery report, running them on this thread. Returns
 * COHORT_OK, or COHORT_ERR__TIMED_OUT when timeout_ms (-1: forever) passed
 * first (the records stay queued). One thread at a time (the one that polls).
 */
COHORT_API cohort_err cohort_flush(cohort_producer *p, int timeout_ms);

/* The fatal error that stopped the producer (a broker refusing its
 * producer id: CLUSTER_AUTHORIZATION_FAILED, ...), or COHORT_OK. Any thread. */
COHORT_API cohort_err cohort_producer_fatal_error(cohort_producer *p);

/*
 * Flush (up to timeout_ms; -1: forever, Java's close()), then stop: records
 * still undelivered fail with COHORT_ERR__CLOSED, every delivery report
 * runs on this thread before the call returns. Returns COHORT_OK, or
 * COHORT_ERR__TIMED_OUT when records had to be failed. Later calls but
 * cohort_producer_free return COHORT_ERR__CLOSED. Call it when no other
 * thread uses the producer any more.
 */
COHORT_API cohort_err cohort_producer_close(cohort_producer *p, int timeout_ms);
/* Free the producer (closing it first, with timeout -1, if needed). */
COHORT_API void cohort_producer_free(cohort_producer *p);

/*
 * Subscribe to every topic whose whole name matches pattern, replacing any
 * earlier subscription. Its syntax depends on group.protocol:
 *
 * - classic: a POSIX extended regular expression (<regex.h>; Java takes a
 *   java.util.regex Pattern: README.md says where the two differ), matched
 *   here. The metadata (every topic, refreshed each metadata.max.age.ms)
 *   is matched again on each answer: a topic created or deleted that
 *   changes the matching set rejoins the group. Internal topics match only
 *   with exclude.internal.topics=false. COHORT_ERR__INVALID_ARG with errstr
 *   set for a pattern that does not compile.
 * - consumer (KIP-848): RE2 syntax, sent as it is to the broker
 *   (ConsumerGroupHeartbeat v1 SubscribedTopicRegex, as Java's
 *   subscribe(SubscriptionPattern)), which matches it and re-evaluates it
 *   as topics come and go; the member joins even while nothing matches
 *   (an empty assignment). A pattern the broker cannot compile makes
 *   cohort_poll return the fatal COHORT_ERR_INVALID_REGULAR_EXPRESSION; a
 *   broker without ConsumerGroupHeartbeat v1 the fatal
 *   COHORT_ERR_UNSUPPORTED_VERSION (never a client-side match in its place).
 *
 * Otherwise as cohort_subscribe. Polling thread.
 */
COHORT_API cohort_err cohort_subscribe_pattern(cohort_consumer *c, const char *pattern,
					       char *errstr, size_t errstr_size);

/*
 * Unsubscribe (Java's unsubscribe): stop being a member and drop every
 * partition. In a group the owned partitions go to the listener's revoked
 * callback, run on this thread inside the call (committing there works; in
 * the middle of a rebalance or without a generation they go to lost
 * instead, as Java's), then a dynamic member sends LeaveGroup with the
 * reason "the consumer unsubscribed from all topics" and waits for its
 * answer (a static member sends none, KIP-345: its session runs out), and
 * the member forgets its id and generation. A manual assignment
 * (cohort_assign) is cleared. Afterwards the consumer may cohort_subscribe
 * (it joins again as a new member) or cohort_assign. Returns COHORT_OK,
 * COHORT_ERR__TIMED_OUT after default.api.timeout.ms (the member goes on
 * unsubscribing), COHORT_ERR__CLOSED after close, or a fatal error that
 * stopped the member meanwhile. Polling thread.
 */
COHORT_API cohort_err cohort_unsubscribe(cohort_consumer *c);

/* ---- consumer: manual assignment, seeks, pause, wakeup ------------------ */

/*
 * Consume exactly these partitions (Java's assign): no group membership,
 * no rebalance and no listener callbacks; replaces an earlier assignment
 * (partitions that stay keep their position); n 0 clears it. Each new
 * partition starts at its committed offset when group.id is set (commits
 * then go to the group with no generation, as Java's do), else (or
 * without one) by auto.offset.reset. COHORT_ERR__STATE after
 * cohort_subscribe (Java: the two are exclusive), COHORT_ERR__INVALID_ARG
 * for an empty topic or a negative partition. Polling thread.
 */
COHORT_API cohort_err cohort_assign(cohort_consumer *c, const cohort_tp *tps, size_t n);

/*
 * Seek these assigned partitions (n 0: every assigned one) to their first
 * offset, to their end (the next offset produced), or to the first offset
 * whose timestamp is at or after timestamp_ms (the end when there is none).
 * Lazy as Java's seekToBeginning/End: the offset is looked up (ListOffsets)
 * before the partition's next fetch, cohort_position says -1 until then,
 * records fetched before are dropped. COHORT_ERR__UNKNOWN_PARTITION (no
 * partition sought) if one is not assigned. Polling thread.
 */
COHORT_API cohort_err cohort_seek_to_beginning(cohort_consumer *c, const cohort_tp *tps, size_t n);
COHORT_API cohort_err cohort_seek_to_end(cohort_consumer *c, const cohort_tp *tps, size_t n);
COHORT_API cohort_err cohort_seek_to_timestamp(cohort_consumer *c, const cohort_tp *tps, size_t n,
					       int64_t timestamp_ms);

/*
 * Stop fetching these assigned partitions (pause) or start again (resume);
 * records already fetched for a paused partition are kept back and
 * returned after the resume (as Java does). No rebalance follows. A paused
 * partition stays paused while it stays assigned: through a cooperative
 * rebalance that keeps it, not through an eager one, nor when lost (Java's
 * SubscriptionState). COHORT_ERR__UNKNOWN_PARTITION (nothing changed) if
 * one is not assigned; n must be > 0. Polling thread.
 */
COHORT_API cohort_err cohort_pause(cohort_consumer *c, const cohort_tp *tps, size_t n);
COHORT_API cohort_err cohort_resume(cohort_consumer *c, const cohort_tp *tps, size_t n);
/* The paused partitions, as cohort_assignment gives the assignment. */
COHORT_API cohort_err cohort_paused(cohort_consumer *c, cohort_tp **tps, size_t *n);

/*
 * Offsets of any partitions (assigned or not; Java's beginningOffsets,
 * endOffsets, offsetsForTimes), from each partition's leader
 * (ListOffsets), waiting at most default.api.timeout.ms. Each entry's
 * offset gets the first offset, the end offset (the next one to be
 * written), or (offsets_for_times: .offset is a timestamp in ms on input)
 * the first offset whose timestamp is at or after it, -1 when there is
 * none. Each entry's err gets its partition's result
 * (UNKNOWN_TOPIC_OR_PARTITION, ...); the call returns the first error.
 * Polling thread.
 */
COHORT_API cohort_err cohort_beginning_offsets(cohort_consumer *c, cohort_tp_offset *offsets,
					       size_t n);
COHORT_API cohort_err cohort_end_offsets(cohort_consumer *c, cohort_tp_offset *offsets, size_t n);
COHORT_API cohort_err cohort_offsets_for_times(cohort_consumer *c, cohort_tp_offset *offsets,
					       size_t n);
/* The number of partitions of topic into *count (Metadata; Java's
 * partitionsFor; auto-creates it when allow.auto.create.topics is true, as
 * Java's does). UNKNOWN_TOPIC_OR_PARTITION when it does not exist. Polling
 * thread. */
COHORT_API cohort_err cohort_partitions_for(cohort_consumer *c, const char *topic, int32_t *count);

/*
 * Make a cohort_poll blocked in another thread return COHORT_ERR__WAKEUP
 * now, or, if none is blocked, the next cohort_poll (once; Java's
 * wakeup()). Any thread, signal handlers excepted.
 */
COHORT_API void cohort_wakeup(cohort_consumer *c);

/* ---- admin: SCRAM users (KIP-554) ---- */

/* Kafka's ScramMechanism types. */
#define COHORT_SCRAM_SHA_256 1
#define COHORT_SCRAM_SHA_512 2

/* One user's SCRAM credentials, as DescribeUserScramCredentials answers. */
typedef struct cohort_scram_user {
	const char *name;
	cohort_err err;     /* RESOURCE_NOT_FOUND (no credential), DUPLICATE_RESOURCE, ... */
	const char *errmsg; /* the broker's message, NULL when none */
	struct {
		int mechanism; /* COHORT_SCRAM_SHA_* */
		int32_t iterations;
	} creds[2];
	size_t creds_n;
} cohort_scram_user;

typedef struct cohort_scram_users {
	cohort_scram_user *users;
	size_t users_n;
} cohort_scram_users;

/* The SCRAM credentials of the named users (n == 0: every user that has
 * one), in the broker's order; *out freed with cohort_scram_users_free.
 * Any broker answers (Java's describeUserScramCredentials). */
COHORT_API cohort_err cohort_admin_describe_scram_users(cohort_admin *a, const char *const *users,
							size_t n, int timeout_ms,
							cohort_scram_users **out);
COHORT_API void cohort_scram_users_free(cohort_scram_users *u);

/* One SCRAM change: an upsertion (iterations > 0, with the salt and
 * SaltedPassword = PBKDF2-HMAC(password, salt, iterations) the caller
 * computed, as the wire carries them) or a deletion (iterations 0). */
typedef struct cohort_scram_alteration {
	const char *user;    /* in */
	int mechanism;       /* in: COHORT_SCRAM_SHA_* */
	int32_t iterations;  /* in: 0 deletes */
	const uint8_t *salt; /* in: upsertions */
	size_t salt_len;
	const uint8_t *salted_password; /* in: upsertions */
	size_t salted_password_len;
	cohort_err err;   /* out: UNACCEPTABLE_CREDENTIAL, RESOURCE_NOT_FOUND, ... */
	char errmsg[256]; /* out: the broker's message, "" when none */
} cohort_scram_alteration;

/* AlterUserScramCredentials for v[0..n) in one request; each v[i].err is
 * its result. Returns the first error (or a call-level one). */
COHORT_API cohort_err cohort_admin_alter_scram_users(cohort_admin *a, cohort_scram_alteration *v,
						     size_t n, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
