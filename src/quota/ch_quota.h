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
	CH_QK_REQUEST_PERCENTAGE,       /* stored and described; not enforced yet */
	CH_QK_CONTROLLER_MUTATION_RATE, /* stored and described; not enforced yet */
	CH_QK_N,
} ch_quota_key;

/* "producer_byte_rate", ... */
const char *ch_quota_key_name(ch_quota_key k);

typedef enum ch_qpart {
	CH_QP_ABSENT = 0,
	CH_QP_DEFAULT = 1, /* <default>: a null name */
	CH_QP_NAME = 2,
} ch_qpart;

typedef struct ch_quota_entity {
	ch_qpart user, client;
	char *user_name, *client_name; /* owned; NULL unless CH_QP_NAME */
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
 * Alter's checks in Kafka's order and words (INVALID_REQUEST for each): an
 * entity part of another type ("Unhandled client quota entity type: X"), a
 * part twice, an empty name, no part; for a key: one of ch_quota_key (an
 * "ip" entity is refused: cohortd has no connection_creation_rate), > 0,
 * integral for the byte rates. 0 or a Kafka error code with msg.
 */
int16_t ch_quota_check_key(const char *key, double value, bool remove, ch_quota_key *out, char *msg,
			   size_t n);

/* Whether an entity matches a DescribeClientQuotas filter: for each part
 * type an exact name, the default or "any specified" (match NULL), or no
 * constraint; strict: no part beyond the filter's. */
typedef struct ch_quota_filter {
	int user, client;                    /* 0 none, 1 exact, 2 default, 3 specified */
	const char *user_name, *client_name; /* for exact */
	bool strict;
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

#define CH_QUOTA_WINDOW_NUM 11
#define CH_QUOTA_WINDOW_MS 1000

#endif
