/*
 * ch_quota: client quotas, as Kafka's ClientQuotaManager applies them and
 * its quota records (ClientQuotaControlManager) store them. Pure: time is
 * the caller's (now_ms), nothing here does I/O (ch_quota_store.h keeps the
 * entries on disk).
 *
 * An entity is a user part and a client-id part, each absent, the default
 * (<default>, a null name on the wire) or a name. The quota that applies to
 * a request by (user, client-id) is the first entity that has the key, in
 * Kafka's order:
 *
 *   1 user/client-id   2 user/<default>   3 user   4 <default>/client-id
 *   5 <default>/<default>   6 <default>   7 client-id   8 <default> client-id
 *
 * Requests that share the matched entity share one rate (a user quota is
 * shared by all of that user's clients, Kafka's metric tags). A rate is
 * measured over quota.window.num (11) samples of quota.window.size.seconds
 * (1), never over less than 10 s, and a request that takes it above the
 * quota is throttled for (rate - quota) / quota x window, Kafka's
 * QuotaUtils.throttleTime.
 */
#ifndef CH_QUOTA_H
#define CH_QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum ch_quota_key {
	CH_QK_PRODUCER_BYTE_RATE = 0,   /* bytes/s of Produce requests */
	CH_QK_CONSUMER_BYTE_RATE,       /* bytes/s of Fetch responses */
	CH_QK_REQUEST_PERCENTAGE,       /* % of one thread: the loop's time on requests */
	CH_QK_CONTROLLER_MUTATION_RATE, /* partitions created or deleted per second */
	CH_QK_CONNECTION_CREATION_RATE, /* an ip entity's: new connections per second */
	CH_QK_N,
} ch_quota_key;

/* "producer_byte_rate", ... */
const char *ch_quota_key_name(ch_quota_key k);

typedef enum ch_qpart {
	CH_QP_ABSENT = 0,
	CH_QP_DEFAULT = 1, /* <default>: a null name */
	CH_QP_NAME = 2,
} ch_qpart;

/* A user and/or client-id entity, or an ip entity (never both kinds). */
typedef struct ch_quota_entity {
	ch_qpart user, client;
	char *user_name, *client_name; /* owned; NULL unless CH_QP_NAME */
	ch_qpart ip;
	char *ip_name; /* an address literal; owned; NULL unless CH_QP_NAME */
} ch_quota_entity;

typedef struct ch_quota_entry {
	ch_quota_entity e;
	bool set[CH_QK_N];
	double v[CH_QK_N];
} ch_quota_entry;

typedef struct ch_quotas ch_quotas;

ch_quotas *ch_quotas_new(void);
void ch_quotas_free(ch_quotas *q);

/* Entries in the order first set; i from 0 while non-NULL. */
const ch_quota_entry *ch_quotas_at(const ch_quotas *q, size_t i);
/* Sets (or, with remove, removes) one key of an entity; an entity left
 * with no key is dropped. Entity strings are copied. */
void ch_quotas_put(ch_quotas *q, const ch_quota_entity *e, ch_quota_key k, double v, bool remove);

/*
 * A key's checks in Kafka's order and words (INVALID_REQUEST for each): one
 * of the entity kind's keys (an ip entity: connection_creation_rate; a
 * user/client-id one: the other four), > 0, integral for the byte rates
 * (LONG) and the connection rate (INT). 0 or a Kafka error code with msg.
 */
int16_t ch_quota_check_key(const char *key, double value, bool remove, bool ip_entity,
			   ch_quota_key *out, char *msg, size_t n);

/* Whether an entity matches a DescribeClientQuotas filter: for each part
 * type an exact name, the default or "any specified" (match NULL), or no
 * constraint; strict: no part beyond the filter's. */
typedef struct ch_quota_filter {
	int user, client;                    /* 0 none, 1 exact, 2 default, 3 specified */
	const char *user_name, *client_name; /* for exact */
	bool strict;
	int ip; /* as user and client */
	const char *ip_name;
} ch_quota_filter;
bool ch_quota_matches(const ch_quota_entity *e, const ch_quota_filter *f);

/*
 * Enforcement. Records value (bytes) of kind k by (user, client_id) at
 * now_ms and returns how long to throttle the client, 0 when no quota
 * applies or the rate stays within it. ch_quotas_unrecord takes a recorded
 * value back (a Fetch answered empty because it was throttled, as Kafka
 * does).
 */
int64_t ch_quotas_record(ch_quotas *q, ch_quota_key k, const char *user, const char *client_id,
			 double value, int64_t now_ms);
void ch_quotas_unrecord(ch_quotas *q, ch_quota_key k, const char *user, const char *client_id,
			double value, int64_t now_ms);
/* The most a quota lets through in one window (quota x (samples - 1) x
 * window, Kafka's getMaxValueInQuotaWindow): a Fetch's MaxBytes is capped
 * by it, else one response over it is throttled for ever. -1: no quota. */
double ch_quotas_window_max(const ch_quotas *q, ch_quota_key k, const char *user,
			    const char *client_id);

/*
 * controller_mutation_rate (KIP-599): n partitions created or deleted, taken
 * from a token bucket per matched entity that holds quota x samples x
 * window (s) tokens, starts full and refills at quota a second (Kafka's
 * TokenBucket). strict (CreateTopics v6+, DeleteTopics v5+,
 * CreatePartitions v3+): false (refused) while the bucket is below zero,
 * *throttle_ms the time until it is not; else taken, even below zero.
 * Permissive (older versions): always taken, *throttle_ms what brings the
 * bucket back to zero. No quota: true, 0.
 */
bool ch_quotas_mutate(ch_quotas *q, const char *user, const char *client_id, double n, bool strict,
		      int64_t now_ms, int64_t *throttle_ms);
/*
 * connection_creation_rate (KIP-612): records a new connection from ip (an
 * address literal) against the quota of its own ip entity, else of the
 * <default> ip entity, each address with its own rate. Returns 0 (accept
 * it), or how long to hold the connection before closing it unread
 * (Kafka's ConnectionThrottledException; the connection is then not
 * counted), at most one window (1 s).
 */
int64_t ch_quotas_connection(ch_quotas *q, const char *ip, int64_t now_ms);

/* Whether a quota of kind k applies to (user, client_id). */
bool ch_quotas_apply(const ch_quotas *q, ch_quota_key k, const char *user, const char *client_id);

#define CH_QUOTA_WINDOW_NUM 11
#define CH_QUOTA_WINDOW_MS 1000

#endif
