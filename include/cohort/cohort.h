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
	(-114) /* a system call failed (threads,
					     sockets, epoll) */

/* Some Kafka codes an application may want to test by name (Errors.java). */
#define COHORT_ERR_UNKNOWN_SERVER_ERROR (-1)
#define COHORT_ERR_OFFSET_OUT_OF_RANGE 1
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
#define COHORT_ERR_MEMBER_ID_REQUIRED 79
#define COHORT_ERR_GROUP_MAX_SIZE_REACHED 81
#define COHORT_ERR_FENCED_INSTANCE_ID 82

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
 * (FENCED_INSTANCE_ID, GROUP_AUTHORIZATION_FAILED, INVALID_GROUP_ID,
 * UNSUPPORTED_VERSION, NO_COMMON_VERSION, ...), else 0. */
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
 * partitions are committed (synchronously) before revoked runs.
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
 * empty, heartbeat.interval.ms not below session.timeout.ms, ...) or when
 * the thread cannot start. Any thread.
 */
COHORT_API cohort_consumer *cohort_consumer_new(const cohort_conf *conf, char *errstr,
						size_t errstr_size);

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
 * COHORT_ERR__OFFSET_OUT_OF_RANGE (auto.offset.reset=none), or
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
 * committed offset). Polling thread (callbacks included).
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
 * JoinGroup answer), copied NUL-terminated into buf. COHORT_ERR__INVALID_ARG
 * when it does not fit. Any thread. */
COHORT_API cohort_err cohort_group_member_id(cohort_consumer *c, char *buf, size_t size);

/*
 * Leave the group and stop: revoked runs for the assignment (after the
 * auto-commit when enabled), then a dynamic member sends LeaveGroup; a
 * static member (group.instance.id) does not, as KIP-345 says: its
 * partitions stay with it until session.timeout.ms. Waits at most
 * default.api.timeout.ms. Later calls but cohort_consumer_free return
 * COHORT_ERR__CLOSED. Polling thread.
 */
COHORT_API cohort_err cohort_consumer_close(cohort_consumer *c);
/* Free the consumer (closing it first if needed). Polling thread. */
COHORT_API void cohort_consumer_free(cohort_consumer *c);

#ifdef __cplusplus
}
#endif

#endif
