/*
 * cl_int.h: libcohort's internals, shared by the files of src/client/.
 *
 * Threads and what each one owns:
 *
 *   I/O thread       runs c->loop (event/ch_loop): every cl_broker
 *                    (connections, requests), the metadata, the group
 *                    member and the fetcher's requests. Nothing else
 *                    touches them.
 *   polling thread   the application's: the public calls and every callback.
 *                    It talks to the I/O thread by posting closures
 *                    (ch_loop_post) and waiting on a cl_wait when it needs
 *                    an answer.
 *   shared, c->mu    the partition table (cl_tp: positions, fetched records)
 *                    and the event queue (callbacks to run on the polling
 *                    thread); c->cond wakes a polling thread waiting for them.
 *
 * File per concern: cl_conf (configuration), cl_conn (broker connections,
 * ApiVersions, request/response), cl_metadata (bootstrap, Metadata),
 * cl_member (the group member: coordinator, join, sync, heartbeat, leave),
 * cl_offsets (OffsetCommit, OffsetFetch, ListOffsets), cl_fetcher (Fetch,
 * record batches), cl_consumer (the public consumer calls and the queue),
 * cl_producer (the producer: accumulator, sender, delivery reports; its
 * threads are described at its top) and cl_producer_part (partitioners).
 */
#ifndef CL_INT_H
#define CL_INT_H

#include <pthread.h>
#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "client/cl_conf.h"
#include "cohort/cohort.h"
#include "common/ch_arena.h"
#include "common/ch_buf.h"
#include "event/ch_loop.h"
#include "net/ch_frame.h"
#include "proto/generated/ch_api_keys.h"
#include "proto/generated/ch_errors.h"
#include "proto/generated/ch_msgs.h"

typedef struct cl_client cl_client;
typedef struct cl_broker cl_broker;
typedef struct cl_req cl_req;

/* ---- requests (cl_conn.c) ---------------------------------------------- */

/* Encode the request body for `version` into b (the header is the
 * connection's). Called on the I/O thread when the request is sent. */
typedef void (*cl_build_fn)(cl_client *c, int16_t version, ch_buf *b, void *ud);
/*
 * The answer: err is COHORT_OK with resp the decoded response (a ch_*Response
 * struct of `version`, in memory valid during the call), or a local error
 * (TRANSPORT: connection lost; TIMED_OUT: request.timeout.ms passed;
 * BAD_MSG: undecodable; NO_COMMON_VERSION; CLOSED: the client is stopping)
 * with resp NULL. Called exactly once per request, on the I/O thread.
 */
typedef void (*cl_resp_fn)(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud);

struct cl_req {
	cl_req *next;
	int16_t api;
	int16_t version;
	int32_t corr;
	int64_t timeout_ms;  /* request.timeout.ms unless longer */
	int16_t max_version; /* the caller's cap, or -1 */
	int16_t min_version; /* the caller's floor (0: libcohort's own) */
	int64_t deadline;    /* monotonic ms; set when sent */
	bool noreply;        /* no answer comes (Produce acks=0) */
	uint64_t end;        /* the broker's out_total at the end of its frame */
	cl_build_fn build;
	cl_resp_fn done;
	void *ud;
};

typedef struct cl_req_queue {
	cl_req *head, *tail;
} cl_req_queue;

typedef enum cl_broker_state {
	CL_BROKER_DOWN = 0,    /* not connected; may be backing off */
	CL_BROKER_CONNECTING,  /* non-blocking connect in progress */
	CL_BROKER_TLS,         /* connected, TLS handshake in progress (SSL, SASL_SSL) */
	CL_BROKER_APIVERSIONS, /* connected, ApiVersions in flight */
	CL_BROKER_SASL,        /* versions known, SASL exchange in flight (SASL_*) */
	CL_BROKER_UP,          /* versions known, requests flow */
	CL_BROKER_REAUTH,      /* KIP-368: new requests wait; once those in flight are
				  answered, the SASL exchange runs again, then UP */
} cl_broker_state;

typedef struct cl_sasl cl_sasl;

#define CL_API_KEYS 75 /* api keys below this are tracked per broker */

struct cl_broker {
	cl_client *c;
	cl_broker *next; /* c->brokers list */
	int32_t node_id; /* < 0: a bootstrap address (-1, -2, ...) */
	char *host;
	int port;
	cl_broker_state state;
	int fd;
	ch_io io;
	ch_framer fr;
	ch_buf out;     /* encoded frames not yet written */
	size_t out_off; /* bytes of out already written */
	/* Bytes sent from where they are (cl_request_ref): refs[i] goes out
	 * after the first refs[i].at bytes of out, in order. */
	struct cl_ref {
		size_t at;
		const uint8_t *p;
		size_t len;
	} * refs;
	int32_t n_refs, cap_refs;
	int32_t ref_i;         /* the first ref not fully written */
	size_t ref_off;        /* bytes of refs[ref_i] written */
	uint64_t out_total;    /* bytes ever queued (out and refs) */
	uint64_t out_sent;     /* bytes ever written */
	size_t framing_refs;   /* ref bytes of the frame being built */
	cl_req_queue waiting;  /* not sent yet (connection not UP) */
	cl_req_queue inflight; /* sent, in correlation order */
	int32_t next_corr;
	int16_t apiversions_version;                  /* the ApiVersions version being tried */
	int16_t vmin[CL_API_KEYS], vmax[CL_API_KEYS]; /* broker's; vmax -1: not served */
	int failures;                                 /* consecutive connection failures */
	int64_t retry_at;                             /* monotonic ms: no connect before */
	ch_timer timer;                               /* connect/request timeouts and reconnect */
	struct ssl_st *ssl;                           /* the TLS session, NULL without TLS */
	bool tls_read_wants_write;                    /* SSL_read waits for the socket to drain */
	cl_sasl *sasl;                                /* the SASL exchange in progress, or NULL */
	int64_t reauth_at; /* monotonic ms to re-authenticate, 0: never */
	bool fetching;     /* a Fetch is in flight to this broker */
	int32_t producing; /* the producer's Produce requests in flight */
};

/* For a request's build function: the n bytes at p go into the frame
 * without being copied (the socket reads them where they are), which the
 * caller keeps unchanged until the request's callback has run. Copies
 * when the request has no answer (acks=0), whose callback runs as soon as
 * the frame is built. */
void cl_request_ref(cl_client *c, ch_buf *out, const void *p, size_t n);

/* Queue a request to broker b; connects if needed. The callback runs
 * exactly once: later, or from inside this call when the request cannot
 * even be queued (CLOSED, NOMEM, NO_COMMON_VERSION); callers must not
 * retry from their callback on those. */
void cl_request(cl_broker *b, int16_t api, cl_build_fn build, cl_resp_fn done, void *ud);
/* Same with a request timeout other than request.timeout.ms (JoinGroup
 * waits up to the rebalance timeout at the coordinator). */
void cl_request_timeout(cl_broker *b, int16_t api, int64_t timeout_ms, cl_build_fn build,
			cl_resp_fn done, void *ud);
/* A request the broker does not answer (Produce with acks=0): done runs
 * with COHORT_OK and resp NULL once it is framed for sending. */
void cl_request_noreply(cl_broker *b, int16_t api, cl_build_fn build, cl_resp_fn done, void *ud);
/* Same, sent at no more than max_version (the fetcher without topic ids). */
void cl_request_ex(cl_broker *b, int16_t api, int16_t max_version, int64_t timeout_ms,
		   cl_build_fn build, cl_resp_fn done, void *ud);
/* Same at no less than min_version (a field older versions lack, such as
 * ConsumerGroupHeartbeat v1's SubscribedTopicRegex): a broker without it
 * fails the request with COHORT_ERR__NO_COMMON_VERSION, as without the API. */
void cl_request_min(cl_broker *b, int16_t api, int16_t min_version, cl_build_fn build,
		    cl_resp_fn done, void *ud);
/* The broker with this node id, NULL if unknown. */
cl_broker *cl_broker_find(cl_client *c, int32_t node_id);
/* Add or update node_id's address. NULL only when out of memory. */
cl_broker *cl_broker_upsert(cl_client *c, int32_t node_id, const char *host, int32_t hlen,
			    int port);
/* A broker good for cluster-wide requests (Metadata, FindCoordinator):
 * an UP one, else a connecting one, else the one whose backoff ends first.
 * NULL when there is none. */
cl_broker *cl_broker_any(cl_client *c);
/* Close every connection, failing their requests with err. */
void cl_brokers_close(cl_client *c, cohort_err err);
void cl_brokers_free(cl_client *c);
/* Versions libcohort sends of an API: [min, max]. */
void cl_api_range(int16_t api, int16_t *min, int16_t *max);
/* A connection-setup request (SASL) sent now at version, ahead of what
 * waits for UP; done as for cl_request. */
void cl_conn_send_setup(cl_broker *b, int16_t api, int16_t version, cl_build_fn build,
			cl_resp_fn done, void *ud);
/* Close b's connection, failing its requests with err (why is logged). */
void cl_conn_close(cl_broker *b, cohort_err err, const char *why);
/* Authentication failed on b (TLS: COHORT_ERR__SSL; SASL: the broker's
 * code, e.g. SASL_AUTHENTICATION_FAILED): the first such error becomes the
 * client's fatal error with why as its message (cohort_*_auth_error), and
 * b closes failing its requests with err. */
void cl_conn_auth_failed(cl_broker *b, cohort_err err, const char *why);
/* The SASL exchange on b succeeded; session_ms > 0: the broker ends the
 * session then (KIP-368), so b re-authenticates before. */
void cl_conn_sasl_done(cl_broker *b, int64_t session_ms);

/* ---- TLS (cl_tls.c) and SASL (cl_sasl.c) on connections ----------------- */

/* c->tls from c->conf's ssl.* keys; false with errstr naming the key. */
bool cl_tls_ctx_new(cl_client *c, char *errstr, size_t esz);
void cl_tls_ctx_free(cl_client *c);
/* b->ssl on b->fd, client side, with SNI and the host name check; false
 * when OpenSSL cannot make it. */
bool cl_tls_start(cl_broker *b);
/* One step of b's handshake: CH_OK done, CH_AGAIN (the interest set is
 * adjusted), CH_ERR with the reason in why. */
int cl_tls_handshake(cl_broker *b, char *why, size_t cap);
/* recv/send through TLS: > 0 bytes, 0 the broker closed (recv), -1 with
 * errno EAGAIN (wait for the loop), -2 a TLS error with its reason in why. */
ssize_t cl_tls_recv(cl_broker *b, void *buf, size_t n, char *why, size_t cap);
ssize_t cl_tls_send(cl_broker *b, const void *buf, size_t n, char *why, size_t cap);
void cl_tls_free(cl_broker *b);
/* c->sasl_* from c->conf's sasl.* keys; false with errstr set. */
bool cl_sasl_conf(cl_client *c, char *errstr, size_t esz);
void cl_sasl_conf_free(cl_client *c);
/* Start (or restart, KIP-368) b's SASL exchange; it ends in
 * cl_conn_sasl_done or cl_conn_auth_failed. */
void cl_sasl_start(cl_broker *b);
void cl_sasl_free(cl_broker *b);

/* ---- metadata (cl_metadata.c) ------------------------------------------ */

typedef struct cl_md_partition {
	int32_t partition;
	int32_t leader; /* node id, -1 none */
	int32_t leader_epoch;
	int16_t err;
} cl_md_partition;

typedef struct cl_md_topic {
	char *name;
	ch_uuid id;
	int16_t err;
	bool internal;
	cl_md_partition *parts; /* sorted by partition */
	int32_t nparts;
} cl_md_topic;

typedef struct cl_metadata {
	cl_md_topic *topics; /* the topics asked for, sorted by name */
	int32_t ntopics;
	int64_t updated; /* monotonic ms of the last answer, 0: never */
	bool inflight;
	bool again;                        /* another refresh was asked for while in flight */
	struct cl_md_waiter *waiters;      /* called after the answer in flight */
	struct cl_md_waiter *next_waiters; /* called after the next one */
	int64_t version;                   /* bumped by every answer */
	int fails;                         /* consecutive failures, for backoff */
	ch_timer timer;                    /* periodic (metadata.max.age.ms) and retry */
} cl_metadata;

void cl_metadata_init(cl_client *c);
void cl_metadata_free(cl_client *c);
/* Ask for fresh metadata now (coalesced with one in flight). */
void cl_metadata_refresh(cl_client *c);
/* Refresh, then call fn once the answer (or failure: err) is in. */
typedef void (*cl_md_fn)(cl_client *c, cohort_err err, void *ud);
void cl_metadata_refresh_then(cl_client *c, cl_md_fn fn, void *ud);
/* Make sure these topics are asked for too (the leader's group topics). */
bool cl_metadata_want(cl_client *c, const ch_str *topics, int32_t n);
const cl_md_topic *cl_metadata_topic(const cl_client *c, const char *name);

/* ---- partitions shared with the polling thread (c->mu) ----------------- */

/* A fetched, decoded run of records of one partition. */
typedef struct cl_chunk {
	struct cl_chunk *next;
	struct cl_tp *tp;
	uint64_t epoch; /* tp->epoch when fetched; stale chunks are dropped */
	cohort_record *recs;
	int32_t n;
	int32_t pos;         /* records already returned */
	int64_t next_offset; /* the fetch position after this chunk */
	ch_buf data;         /* keys, values, headers (decompressed batches) */
	void *frame;         /* the response frame the slices may point into */
	int *frame_refs;     /* shared count of chunks using frame */
	size_t bytes;        /* the Records bytes it came from, counted in c->q_bytes */
} cl_chunk;

typedef struct cl_tp {
	char *topic;
	int32_t partition;
	bool owned;           /* in the current assignment */
	int64_t position;     /* polling side: next offset to return; -1 unknown */
	int64_t fetch_pos;    /* I/O side: next offset to fetch; -1 unknown */
	int32_t leader_epoch; /* of the last record returned, -1 unknown */
	uint64_t epoch;       /* bumped by assign/seek/revoke: fetches in flight
				  or chunks queued with an older epoch are dropped */
	bool fetching;        /* a Fetch for it is in flight */
	bool offset_lookup;   /* an OffsetFetch/ListOffsets for it is in flight */
	bool reset;           /* out of range: auto.offset.reset, not the commit */
	bool corrupt;         /* the batch at fetch_pos is corrupt: not fetched, poll
				  returns CORRUPT_MESSAGE until a seek (Java's
				  KafkaException from poll) */
	bool paused;          /* cohort_pause: not fetched, its records kept back */
	int64_t reset_to;     /* with reset: the ListOffsets timestamp (-2 earliest,
				  -1 latest, >= 0 by time), CL_RESET_TO_CONF for
				  auto.offset.reset */
	int32_t queued;       /* chunks in the queue (the fetcher fetches ahead of one) */
} cl_tp;

#define CL_RESET_TO_CONF INT64_MIN

/* A partition becomes owned (assignment): position unknown, every flag of
 * an earlier ownership cleared (its answers come back with an old epoch and
 * are ignored, so they would never clear them). c->mu held. */
void cl_tp_take(cl_tp *tp);
/* A partition stops being owned (revoke, lost, unassign). c->mu held. */
void cl_tp_drop(cl_tp *tp);

/* ---- events for the polling thread (c->mu) ------------------------------ */

typedef enum cl_event_kind {
	CL_EV_ASSIGNED,
	CL_EV_REVOKED, /* the member waits for its ack (cl_member_revoke_done) */
	CL_EV_LOST,
	CL_EV_COMMIT, /* an async commit's result */
	CL_EV_ERROR,  /* a fatal error for cohort_poll to return */
} cl_event_kind;

typedef struct cl_event {
	struct cl_event *next;
	cl_event_kind kind;
	cohort_tp *tps; /* malloc'd with the topic names inside */
	size_t n;
	cohort_err err;
	cohort_tp_offset *offsets; /* COMMIT */
	cohort_commit_cb cb;
	void *opaque;
} cl_event;

/* Queue an event for the polling thread (takes ownership). c->mu held. */
void cl_event_push(cl_client *c, cl_event *ev);
/* A cohort_tp array of n entries with room for their names, as one
 * allocation; NULL when out of memory. */
cohort_tp *cl_tps_new(cl_tp *const *tps, size_t n);

/* ---- one synchronous call's answer -------------------------------------- */

/*
 * A polling-thread call waiting for the I/O thread. Heap-allocated and
 * shared: the waiter may give up (its timeout) while the I/O thread still
 * holds it, so whichever side lets go last frees it (under c->mu).
 * offsets is the wait's own copy: the I/O thread writes results into it.
 */
typedef struct cl_wait {
	bool done;
	bool abandoned; /* the waiter left: the I/O side frees */
	cohort_err err;
	cohort_tp_offset *offsets; /* owned (with the topic names) */
	size_t n;
} cl_wait;

/* Mark w done with err and wake its waiter (I/O thread). */
void cl_wait_finish(cl_client *c, cl_wait *w, cohort_err err);
/* A wait holding a copy of offsets (NULL, 0 for none); NULL on OOM. */
cl_wait *cl_wait_new(const cohort_tp_offset *offsets, size_t n);
/* Free a wait nobody else holds (NULL is fine). */
void cl_wait_free(cl_wait *w);
/* Wait until done or timeout_ms (< 0: forever); returns w->err or
 * TIMED_OUT. Copies per-partition results and offsets back into out
 * (n entries) and frees or abandons w. Polling thread. */
cohort_err cl_wait_for(cl_client *c, cl_wait *w, int64_t timeout_ms, cohort_tp_offset *out);
/* Work started on the I/O thread that ends by cl_wait_finish(c, w, ...). */
typedef void (*cl_wait_start_fn)(cl_client *c, cl_wait *w);
/* Post start(c, w) to the I/O thread; false (nothing posted) when out of
 * memory. Polling thread. */
bool cl_post_wait(cl_client *c, cl_wait *w, cl_wait_start_fn start);
/* The whole synchronous call: a wait with a copy of offsets, start posted,
 * waited for up to timeout_ms, results copied into out (see cl_wait_for). */
cohort_err cl_call(cl_client *c, cl_wait_start_fn start, const cohort_tp_offset *offsets, size_t n,
		   int64_t timeout_ms, cohort_tp_offset *out);
/* n offsets with their topic names copied into one allocation; NULL on OOM. */
cohort_tp_offset *cl_offsets_copy(const cohort_tp_offset *o, size_t n);
/* *ts = CLOCK_MONOTONIC now + ms (ms >= 0), for waits on c->cond. */
struct timespec;
void cl_deadline_ts(struct timespec *ts, int64_t ms);

/* ---- the group member (cl_member.c) ------------------------------------- */

typedef struct cl_member cl_member;
cl_member *cl_member_new(cl_client *c);
void cl_member_free(cl_member *m);
/* The subscription changed (I/O thread): join or rejoin. topics NULL (n
 * 0) with c->pattern_text set: the consumer protocol's pattern
 * subscription, the broker matches. */
void cl_member_subscribe(cl_client *c, char **topics, int n);
/* The polling thread ran a revoke the member asked for. */
void cl_member_revoke_done(cl_client *c);
/* Leave the group for close (LeaveGroup unless static); w finishes when
 * done. */
void cl_member_close(cl_client *c, cl_wait *w);
/* Unsubscribe (Java's unsubscribe): revoke what is owned (lost mid-rebalance),
 * LeaveGroup unless static, then no generation and no subscription; w
 * finishes when done. */
void cl_member_unsubscribe(cl_client *c, cl_wait *w);
/* Metadata changed: a leader checks whether the partition counts of the
 * subscribed topics moved. */
void cl_member_metadata_changed(cl_client *c);
/* Generation and member id for commits: COHORT_OK in a stable generation
 * (or inside its revoke), REBALANCE_IN_PROGRESS while joining or syncing,
 * _ASSIGNMENT_LOST without a generation. */
cohort_err cl_member_commit_identity(cl_client *c, int32_t *gen, const char **member_id);
/* The coordinator's broker, NULL until found. */
cl_broker *cl_member_coordinator(cl_client *c);
/* Run fn once the coordinator is known (now if it is, or if the member
 * failed fatally: fn then sees no coordinator). True when fn runs later
 * (it waits), false when it ran inside this call. */
bool cl_member_with_coordinator(cl_client *c, void (*fn)(cl_client *c, void *ud), void *ud);
/* Forget the waiter with this ud (its fn will not run); false if none. */
bool cl_member_cancel_waiter(cl_client *c, void *ud);
/* The member's fatal error, COHORT_OK while it works (or without a group). */
cohort_err cl_member_failed(cl_client *c);
/* A coordinator error in a response (NOT_COORDINATOR, ...): find it again. */
void cl_member_coordinator_lost(cl_client *c, int16_t err);
/* The polling thread called poll (for max.poll.interval.ms). */
void cl_member_polled(cl_client *c);

/* ---- offsets (cl_offsets.c) --------------------------------------------- */

/* Commit (I/O thread): offsets (copied) with a commit identity; w or
 * (cb, opaque) gets the result. retry_stale: STALE_MEMBER_EPOCH answers are
 * retried with the member's latest epoch (the auto-commit before a revoke). */
void cl_offsets_commit(cl_client *c, cohort_tp_offset *offsets, size_t n, cl_wait *w,
		       cohort_commit_cb cb, void *opaque, bool retry_stale);
/* Committed offsets into w->offsets. */
void cl_offsets_committed(cl_client *c, cl_wait *w);
/* ListOffsets for w->offsets (each .offset a timestamp: -2 earliest, -1
 * latest, >= 0 by time), the offsets found written back (-1: none). */
void cl_offsets_list(cl_client *c, cl_wait *w);
/* The partition count of the topic of w->offsets[0] into its .offset. */
void cl_offsets_partitions(cl_client *c, cl_wait *w);
/* End every call still waiting (for a coordinator or a retry) with
 * CLOSED: the I/O thread is stopping. */
void cl_offsets_shutdown(cl_client *c);
/* Find starting positions for owned partitions whose fetch_pos is -1:
 * the committed offset, else auto.offset.reset (ListOffsets). */
void cl_offsets_lookup(cl_client *c);

/* ---- fetcher (cl_fetcher.c) --------------------------------------------- */

/* Send Fetch requests for owned partitions with a known position and no
 * fetch in flight, one per leader (I/O thread). */
void cl_fetcher_kick(cl_client *c);
/* Frees the fetch sessions (the I/O thread is gone). */
void cl_fetcher_free(cl_client *c);
void cl_chunk_free(cl_chunk *ch);
/* How a Fetch answer's Records are read (isolation.level). */
typedef struct cl_decode_opts {
	bool check_crcs;
	bool read_committed; /* filter the aborted transactions below */
	/* the partition's AbortedTransactions (producer id, first offset), in
	 * any order; read only with read_committed */
	const ch_FetchResponse_AbortedTransaction *aborted;
	int32_t naborted;
} cl_decode_opts;

/*
 * Decode a partition's Records field (untrusted: record batches v2, the last
 * one possibly cut) into a chunk of the records at or after `from`. Returns
 * the chunk (it may hold no records) or NULL with *err set when nothing
 * decoded; *next (and the chunk's next_offset) gets the fetch position after
 * what was read: past every batch read, control batches and, under
 * read_committed, aborted ones included, as Java's CompletedFetch. Pure (any
 * thread); fuzzed by fuzz_client_records.
 */
cl_chunk *cl_records_decode(cl_tp *tp, const cl_decode_opts *o, int64_t from, const uint8_t *p,
			    size_t len, int64_t *next, cohort_err *err);

/* ---- the client ---------------------------------------------------------- */

/* What a handle is; names the default client id as Java does. */
typedef enum cl_client_kind {
	CL_CONSUMER,
	CL_PRODUCER,
	CL_ADMIN
} cl_client_kind;

struct cl_client {
	cohort_conf conf; /* private copy */
	cl_client_kind kind;
	/* I/O thread, while stopping: the owner ends its own pending work
	 * (before connections close); NULL for none. */
	void (*on_stop)(cl_client *c);
	cohort_rebalance_listener listener;
	char *client_id;        /* conf.client_id or "cohort-consumer-N" */
	struct ssl_ctx_st *tls; /* security.protocol SSL / SASL_SSL, else NULL */
	int sasl_mech;          /* SASL_*: 0 PLAIN, 1 SCRAM-SHA-256, 2 SCRAM-SHA-512; else -1 */
	char *sasl_user, *sasl_pass; /* SASL_*: the credentials */
	char *auth_error;            /* c->mu: the first authentication failure's text, set once */
	ch_loop *loop;
	pthread_t thread;
	bool thread_started;
	bool closing; /* I/O side: no new work */

	cl_broker *brokers;
	cl_broker *framing; /* whose frame a request with an answer is building (cl_request_ref) */
	int32_t next_bootstrap; /* next negative id for bootstrap entries */
	cl_metadata md;
	void (*on_metadata)(cl_client *c); /* after each Metadata answer (producer), or NULL */
	char **md_topics;                  /* topics the metadata asks for (subscription) */
	int nmd_topics;
	char *pattern_text; /* cohort_subscribe_pattern's pattern as given, NULL
			       without one: metadata asks for every topic; the
			       consumer protocol sends it (SubscribedTopicRegex,
			       RE2 on the broker) */
	regex_t *pattern;   /* the classic protocol's: pattern_text compiled
			       (POSIX ERE, anchored), the member subscribes to
			       the topics matching it; NULL with the consumer
			       protocol, whose broker matches */
	cl_member *member;
	struct o_call *calls;        /* cl_offsets.c: calls in progress */
	struct f_session *fsessions; /* cl_fetcher.c: fetch sessions, per broker */

	/* shared with the polling thread */
	pthread_mutex_t mu;
	pthread_cond_t cond;
	cl_tp **tps; /* every partition ever owned (owned or not) */
	int ntps;
	cl_chunk *q_head, *q_tail; /* fetched records, in arrival order */
	size_t q_bytes;            /* the chunks' Records bytes: bounds fetching ahead */
	cl_event *ev_head, *ev_tail;
	cohort_err fatal;    /* first fatal error, reported by poll */
	bool poll_expired;   /* the member left for max.poll.interval.ms */
	char *member_id;     /* a copy of the member's id, for the API */
	bool manual;         /* cohort_assign: partitions chosen by the application */
	bool wakeup;         /* cohort_wakeup: the next (or current) poll returns */
	int64_t last_poll;   /* monotonic ms of the last poll */
	bool revoke_pending; /* a REVOKED event awaits its ack */

	/* polling thread only */
	cl_chunk *returned; /* chunks whose records the last poll returned */
	cohort_record *poll_recs;
	size_t poll_cap;
	bool closed;
	bool subscribed; /* cohort_subscribe was called */
	bool manual_api; /* cohort_assign holds partitions */
	int64_t next_auto_commit;
};

/* ---- life of a client (cl_client.c) ----------------------------------------- */

/* Fill c (zeroed by the caller) from conf: copy, client id, loop, metadata
 * with the bootstrap brokers. Nothing runs yet. false with errstr set on
 * failure (c released). */
bool cl_client_init(cl_client *c, const cohort_conf *conf, cl_client_kind kind, char *errstr,
		    size_t errstr_size);
/* Start the I/O thread (its first task: Metadata). false with errstr set. */
bool cl_client_start(cl_client *c, char *errstr, size_t errstr_size);
/* Mark c closed, end what is in flight (CLOSED) and join the I/O thread.
 * Polling thread, once. */
void cl_client_stop(cl_client *c);
/* Free what cl_client_init made (after stop, or when start failed). */
void cl_client_release(cl_client *c);
/* The text of c's first authentication failure, NULL while none. Any thread. */
const char *cl_client_auth_error(cl_client *c);

/* The partition, created (not owned) when missing; NULL when out of memory.
 * c->mu held. */
cl_tp *cl_tp_get(cl_client *c, const char *topic, int32_t partition);
cl_tp *cl_tp_find(cl_client *c, const char *topic, int32_t partition);
/* Lock/unlock c->mu. */
void cl_lock(cl_client *c);
void cl_unlock(cl_client *c);

/* Exponential backoff with Kafka's ±20 % jitter: base * 2^(n-1), capped. */
int64_t cl_backoff(int64_t base, int64_t max, int n);

#define CL_LOG "cohort"

#endif
