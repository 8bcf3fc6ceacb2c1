/*
 * cl_admin_int.h: the admin client's internals (cl_admin*.c).
 *
 * A public call builds an ad_call on the caller's thread: a list of items
 * (a group, a partition, a broker, a topic) and an ad_ops saying how items
 * find their broker and what request serves them. The call is posted to
 * the I/O thread, which drives it (ad_kick) and finishes it; the caller
 * waits on its own stack (ad_run) and then reads the results.
 *
 * An item's life on the I/O thread:
 *
 *   LOOKUP --lookup sent--> LOOKING --broker known--> SEND --request--> SENT
 *      ^                       |                        ^                 |
 *      |                       +-- retriable error --> BACKOFF <----------+
 *      +------------ coordinator moved / stale leader -----+       DONE <-+
 *
 * Routes: R_COORD (FindCoordinator for the item's group, batched v4+),
 * R_LEADER (Metadata for the item's topic: the partition's leader),
 * R_CONTROLLER (Metadata: the controller), R_ANY (any broker), R_NODE (the
 * item's node, fixed). An ops without build is a lookup only: the item is
 * done once its broker is known (find coordinators). Requests to one broker carry as many SEND items as
 * ops->max_batch allows; a build function that can encode fewer at the
 * version the broker speaks says so (*encoded) and the rest go again.
 *
 * The deadline (the call's timeout) is kept on the I/O thread: when it
 * passes, items not DONE get their last retriable error (or TIMED_OUT) and
 * the call finishes. Requests still in flight then find the call finished
 * and only drop their reference (k->refs); the last one frees it.
 */
#ifndef CL_ADMIN_INT_H
#define CL_ADMIN_INT_H

#include <stddef.h>

#include "client/cl_int.h"

typedef struct ad_call ad_call;
typedef struct ad_item ad_item;

typedef struct ad_waiter {
	bool done;
	cohort_err err;
} ad_waiter;

typedef enum ad_route {
	R_COORD,
	R_LEADER,
	R_CONTROLLER,
	R_ANY,
	R_NODE
} ad_route;

typedef enum ad_state {
	IT_LOOKUP,
	IT_LOOKING,
	IT_SEND,
	IT_SENT,
	IT_BACKOFF,
	IT_DONE
} ad_state;

struct ad_item {
	const char *key;   /* group id or topic */
	int32_t partition; /* R_LEADER */
	size_t idx;        /* the caller's index (results) */
	int32_t node;      /* the broker serving it, -1 unknown */
	ad_state st;
	ad_state after; /* BACKOFF: the state to go back to */
	int64_t retry_at;
	int tries;
	cohort_err err;  /* DONE: the result; else the last retriable error */
	void *ud;        /* the call's per-item data */
	ad_item *next_b; /* in a batch */
};

typedef struct ad_ops {
	int16_t api;
	ad_route route;
	size_t max_batch;    /* items per request; 0: unlimited */
	int16_t max_version; /* cap, -1 none */
	/* Encode the request for items[0..n) at version; *encoded = how many
	 * of them it holds (the first ones). */
	void (*build)(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n,
		      size_t *encoded);
	/* The answer for the items encoded: each is left SENT (then it is done
	 * with NO error), or given ad_done / ad_retry. */
	void (*done)(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n);
	/* Optional: runs on the I/O thread when the call finishes, before the
	 * caller wakes (results that need the I/O thread's brokers). */
	void (*finish)(ad_call *k);
} ad_ops;

struct ad_call {
	cl_client *c;
	const ad_ops *ops;
	ad_item *items;
	size_t n;
	void *ud;                 /* the call's data (results) */
	int64_t deadline;         /* monotonic ms */
	ch_timer timer;           /* deadline and backoffs */
	int refs;                 /* 1 for the call + requests in flight */
	bool finished;            /* results handed over: late answers are dropped */
	bool kicking;             /* inside ad_kick (no re-entry) */
	bool lookup_inflight;     /* R_LEADER / R_CONTROLLER: one Metadata at a time */
	cohort_err err;           /* a call-level error (NOMEM, CLOSED) */
	cohort_err *errs_out;     /* the caller's per-item errors, written at finish */
	struct ad_waiter *waiter; /* the caller's (c->mu) */
	struct ad_call *next;     /* the admin's calls in progress (I/O thread) */
};

/* The admin is a cl_client without a group member; calls in progress are
 * listed (I/O thread) so that free can end them. c stays first: the engine
 * finds the admin from its client. */
struct cohort_admin {
	cl_client c;
	ad_call *calls;
};

/* An item is done with err (COHORT_OK: success). */
void ad_done(ad_call *k, ad_item *it, cohort_err err);
/* A retriable error: try again after a backoff, going back to LOOKUP when
 * relookup (the coordinator or leader moved), else to SEND. */
void ad_retry(ad_call *k, ad_item *it, cohort_err err, bool relookup);
/* The coordinator-error rule of Kafka's AdminClient for a group item:
 * NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE look the coordinator up
 * again, COORDINATOR_LOAD_IN_PROGRESS retries the same one; returns true
 * when err was one of those (the item is taken care of). */
bool ad_coordinator_error(ad_call *k, ad_item *it, int16_t err);

/* A call of n items (zero state, keys set by the caller) with ops, for the
 * admin's client; NULL on OOM. errs (n entries, may be NULL) gets every
 * item's final error when the call finishes. */
ad_call *ad_new(cl_client *c, const ad_ops *ops, size_t n, void *ud, cohort_err *errs,
		int timeout_ms);
/* Run k on the I/O thread and wait until it finishes; k belongs to the I/O
 * side afterwards (do not touch it). Returns the call-level error (NOMEM,
 * CLOSED), else COHORT_OK. Any thread. */
cohort_err ad_run(ad_call *k);
/* The first non-zero of errs[0..n), COHORT_OK if none. */
cohort_err ad_first_err(const cohort_err *errs, size_t n);

/* ad_run, then a call-level error goes to every one of errs[0..n) (the
 * call's per-item errors); returns it, else the first item error. */
cohort_err ad_run_all(ad_call *k, cohort_err *errs, size_t n);
/* The whole of a call whose items are names (groups or topics) and whose
 * only results are per-name errors: checks the arguments, runs ops, fills
 * errs[0..n) as ad_run_all. */
cohort_err ad_run_names(cohort_admin *a, const ad_ops *ops, const char *const *names, size_t n,
			cohort_err *errs, int timeout_ms);

/* Finish every call still running with CLOSED (I/O thread, at stop). */
void ad_shutdown(cl_client *c);

/* A NUL-terminated copy of s in arena a; NULL for a null string, and NULL
 * with *oom set when out of memory. */
char *ad_strdup(ch_arena *a, ch_str s, bool *oom);
char *ad_strdup_c(ch_arena *a, const char *s, bool *oom);
/* Answers list their results by name or partition index in an order of
 * the broker's choosing: AD_FIND gives the entry of arr[0..n) whose ch_str
 * `field` equals the C string key, AD_FIND_PART the one whose PartitionIndex
 * is index; NULL when the answer left it out. */
#define AD_FIND(arr, n, field, key)                                                                \
	((__typeof__(&(arr)[0]))ad_find_name((arr), (n), sizeof((arr)[0]),                         \
					     offsetof(__typeof__((arr)[0]), field), (key)))
#define AD_FIND_PART(arr, n, index)                                                                \
	((__typeof__(&(arr)[0]))ad_find_part((arr), (n), sizeof((arr)[0]),                         \
					     offsetof(__typeof__((arr)[0]), PartitionIndex),       \
					     (index)))
const void *ad_find_name(const void *arr, int32_t n, size_t stride, size_t name_off,
			 const char *key);
const void *ad_find_part(const void *arr, int32_t n, size_t stride, size_t index_off,
			 int32_t index);
/* The items' keys as a calloc'd array of n ch_str (the request's list of
 * groups or topics); NULL with b->oom set when out of memory. */
ch_str *ad_keys(ad_item **items, size_t n, ch_buf *b);

/* Node id's address as the client knows it, copied into a (I/O thread). */
void ad_node(ch_arena *a, cl_client *c, int32_t id, cohort_node *out, bool *oom);
/* The timeout in ms a call gets from timeout_ms (< 0: default.api.timeout.ms). */
int64_t ad_timeout(const cl_client *c, int timeout_ms);

#endif
