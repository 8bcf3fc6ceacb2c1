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
#define COHORT_ERR__BAD_CONF (-100)       /* unknown key or invalid value */
#define COHORT_ERR__INVALID_ARG (-101)    /* a call's argument is invalid */
#define COHORT_ERR__NOMEM (-102)          /* out of memory */
#define COHORT_ERR__TIMED_OUT (-103)      /* the call's timeout passed */
#define COHORT_ERR__TRANSPORT (-104)      /* connection failed or was lost */
#define COHORT_ERR__CLOSED (-105)         /* the handle is closed or closing */
#define COHORT_ERR__STATE (-106)          /* not allowed in the current state
					     (e.g. commit without a group) */
#define COHORT_ERR__BAD_MSG (-107)        /* a response or record did not decode */
#define COHORT_ERR__NO_COMMON_VERSION (-108) /* the broker serves no version
					     of an API the library needs */
#define COHORT_ERR__ASSIGNMENT_LOST (-109) /* partitions lost (session expiry,
					     fencing, poll interval passed):
					     commits for them are refused */
#define COHORT_ERR__UNKNOWN_PARTITION (-110) /* not in the current assignment */
#define COHORT_ERR__REBALANCE_FAILED (-111) /* the rebalance could not complete
					     within the retries it allows */
#define COHORT_ERR__OFFSET_OUT_OF_RANGE (-112) /* out of range and
					     auto.offset.reset=none */
#define COHORT_ERR__UNSUPPORTED (-113)    /* the feature is not implemented */
#define COHORT_ERR__SYSTEM (-114)         /* a system call failed (threads,
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

#ifdef __cplusplus
}
#endif

#endif
