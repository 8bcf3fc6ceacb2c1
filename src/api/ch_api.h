/*
 * ch_api: from a request frame to a response frame.
 *
 *   net  --frame-->  ch_api_on_frame()  --decode-->  handler(req)
 *   handler --ch_api_send(req, resp)-->  encode header + body  --reply-->  net
 *
 * The api layer knows nothing of sockets: the shell (cohortd) gives it a
 * reply function and an opaque connection pointer. A handler answers at once
 * or keeps the request and answers later (JoinGroup waits for the rebalance,
 * Produce acks=all waits for the fsync); either way it ends the request with
 * exactly one ch_api_send / ch_api_send_none / ch_api_close.
 *
 * Protocol errors follow Kafka's broker: an unknown api key, an unsupported
 * version (except ApiVersions, which answers v0 with UNSUPPORTED_VERSION and
 * the supported ranges) or a body that does not decode closes the
 * connection, with one log line naming the client, api key and version.
 * Bytes after a body that decodes are ignored, as Kafka ignores them.
 */
#ifndef CH_API_H
#define CH_API_H

#include <stdbool.h>
#include <stdint.h>

#include "common/ch_arena.h"
#include "common/ch_hist.h"
#include "proto/ch_rd.h"
#include "proto/generated/ch_api_keys.h"
#include "group/ch_coord.h"
#include "proto/generated/ch_msgs.h"

typedef struct ch_broker ch_broker;

/* One request in flight. Owned by the api layer; freed by the ch_api_send*
 * call that ends it. */
typedef struct ch_req {
	ch_broker *bk;
	void *conn;       /* opaque connection handle of the shell */
	uint64_t seq;     /* request sequence on that connection */
	const char *peer; /* "ip:port" of the client, for logs */
	int16_t key;      /* ApiKey */
	int16_t version;  /* request api version */
	int32_t corr;     /* correlation id */
	ch_str client_id; /* header client id (may be null) */
	size_t size;      /* the request's frame in bytes (producer_byte_rate counts them) */
	const ch_api_codec *codec;
	void *body;            /* decoded request, codec->req_size bytes, in arena */
	ch_arena arena;        /* decoded request and response scratch */
	int64_t received_ms;   /* monotonic time of arrival */
	uint64_t received_us;  /* the same in microseconds, for the latency histogram */
	uint64_t handler_us;   /* a parked request's time in its handler (request_percentage) */
	int listener;          /* index in cfg->listeners of the one it came in on */
	const char *principal; /* who sent it ("User:ANONYMOUS", "User:alice",
				* a certificate's mapped name): what the authorizer
				* checks (ch_api_allowed) */
	struct ch_api_session *sess; /* the connection's (NULL: no shell session) */

	/* What a handler's pre-core hook leaves for its response hook
	 * (ch_api_consumer_group.c's DeleteGroups), in arena. */
	void *hook_ctx;
	/* Set by a handler that took entries out of the request before its
	 * core saw it (ACL checks): ch_api_send passes the response through it
	 * and encodes what it returns (a replacement in the arena). */
	const void *(*finish)(struct ch_req *req, const void *resp);
	void *finish_ud;
} ch_req;

/* Per-connection state of the api layer: the listener, the principal and
 * the SASL exchange (ch_api_sasl.c). The shell makes one when a connection
 * opens (bk->session returns it) and frees it when the connection is gone
 * and its requests answered. */
typedef struct ch_api_session ch_api_session;
ch_api_session *ch_api_session_new(ch_broker *bk, int listener);
void ch_api_session_free(ch_api_session *s);
/* The principal of a connection that needs no SASL (the TLS client
 * certificate's mapped name); ignored once SASL has set one. */
void ch_api_session_set_principal(ch_api_session *s, const char *principal);
/* Whether the connection may send any request (not a SASL listener, or authenticated). */
bool ch_api_session_authenticated(const ch_api_session *s);

/* The advertised address of the listener req came in on (Metadata,
 * FindCoordinator, DescribeCluster answer each client with its own). */
const char *ch_api_adv_host(const ch_req *req);
int32_t ch_api_adv_port(const ch_req *req);

/* Called by the shell for every complete frame. The frame bytes stay valid
 * until the request is answered. */
void ch_api_on_frame(ch_broker *bk, void *conn, uint64_t seq, const char *peer,
		     const uint8_t *frame, size_t len, int64_t now_ms);

/* Encode `resp` (the codec's response struct for req->key) with the right
 * response header and hand it to the shell; frees req. */
void ch_api_send(ch_req *req, const void *resp);
/* For responses built by hand (Fetch with file chunks): writes req's
 * response header (correlation id, and tagged fields when flexible) to b. */
void ch_api_resp_header(const ch_req *req, ch_buf *b);
/* Hand a finished response (header included, see ch_api_resp_header) made
 * of chunks to the shell through bk->reply_resp; frees req. */
struct ch_resp;
void ch_api_send_resp(ch_req *req, struct ch_resp *resp);
/* No response for this request (Produce acks=0); frees req. */
void ch_api_send_none(ch_req *req);
/* Close the connection (protocol error); frees req. */
void ch_api_close(ch_req *req, const char *why);

/* ---- counters (/metrics) --------------------------------------------------
 * Kept by the api layer on the loop thread, plain increments: every request
 * ended (answered, no response, or its connection closed) by API key and
 * version with its latency (frame complete to response handed to the
 * network), and every ErrorCode of every response by API key and code
 * (Kafka's errorCounts: nested ones too, NONE included). Requests refused
 * before a handler are bk->n_rejected. */
#define CH_API_STATS_KEYS 70     /* api keys 0..69 */
#define CH_API_STATS_VERSIONS 18 /* versions 0..17 */
#define CH_API_STATS_ERRORS 130  /* error code + 1: -1 (UNKNOWN_SERVER_ERROR) .. 128 */
typedef struct ch_api_stats {
	ch_hist latency[CH_API_STATS_KEYS][CH_API_STATS_VERSIONS]; /* count = requests */
	uint64_t errors[CH_API_STATS_KEYS][CH_API_STATS_ERRORS];
} ch_api_stats;
/* bk's counters (allocated at the first request, freed by ch_broker_close). */
const ch_api_stats *ch_api_get_stats(ch_broker *bk);
/* Counts one error code of req's response, for responses built by hand
 * (Fetch); ch_api_send counts the others itself. */
void ch_api_note_error(ch_req *req, int16_t code);

/* Allocation in the request's arena that never fails (aborts on OOM: this
 * is the broker). Zeroed. */
void *ch_req_alloc(ch_req *req, size_t n);
#define CH_REQ_NEW_ARRAY(req, type, n) ((type *)ch_req_alloc((req), sizeof(type) * (size_t)(n)))
/* A NUL-terminated copy of a wire string in the request arena. */
char *ch_req_strdup(ch_req *req, ch_str s);

/* ---- the handler table -------------------------------------------------- */

typedef void (*ch_api_handler_fn)(ch_req *req);

typedef struct ch_api_handler {
	int16_t key;
	int16_t min_version, max_version; /* served (and advertised) range */
	ch_api_handler_fn fn;
} ch_api_handler;

/* The handler of an api key, or NULL when this build does not serve it (a
 * short table searched in order, ch_api.c). ApiVersions is built from the
 * same table, so it advertises exactly what works. */
const ch_api_handler *ch_api_handler_find(int16_t key);
void ch_api_foreach_handler(void (*fn)(const ch_api_handler *h, void *ud), void *ud);

/* Handlers, by family (one file each). */
void ch_api_ApiVersions(ch_req *req);
void ch_api_Metadata(ch_req *req);
void ch_api_DescribeCluster(ch_req *req);
void ch_api_CreateTopics(ch_req *req);
void ch_api_DeleteTopics(ch_req *req);
void ch_api_CreatePartitions(ch_req *req);
void ch_api_DescribeConfigs(ch_req *req);
void ch_api_AlterConfigs(ch_req *req);
void ch_api_IncrementalAlterConfigs(ch_req *req);
void ch_api_DeleteRecords(ch_req *req);
/* The data path. */
void ch_api_Produce(ch_req *req);
void ch_api_Fetch(ch_req *req);
void ch_api_ListOffsets(ch_req *req);
void ch_api_InitProducerId(ch_req *req);
void ch_api_FindCoordinator(ch_req *req);
/* ACLs (ch_api_acls.c). */
void ch_api_CreateAcls(ch_req *req);
void ch_api_DescribeAcls(ch_req *req);
void ch_api_DeleteAcls(ch_req *req);

/* ---- authorization (ch_api_acls.c, auth/ch_authz.h) -----------------------
 * Whether req's principal, from its client's address, may do op (CH_ACL_*)
 * on the literal resource (CH_RES_*, name); always true without an
 * authorizer (authorizer.class.name unset), as Kafka. */
bool ch_api_authz_on(const ch_req *req);
bool ch_api_allowed(const ch_req *req, int op, int res_type, const char *name);
bool ch_api_allowed_str(ch_req *req, int op, int res_type, ch_str name);
bool ch_api_cluster_allowed(const ch_req *req, int op);
/* Whether req may do op on some resource of the type (ch_authz_allowed_any). */
bool ch_api_allowed_any(const ch_req *req, int op, int res_type);
/* KIP-430's authorized operations of the resource for req (every supported
 * one without an authorizer). */
int32_t ch_api_authorized_ops(const ch_req *req, int res_type, const char *name);
/* The cluster's, as Metadata and DescribeCluster give them: 0 without
 * DESCRIBE on the cluster (AuthHelper.computeDescribeClusterResponse). */
int32_t ch_api_cluster_ops(const ch_req *req);

/* SASL (ch_api_sasl.c). */
void ch_api_SaslHandshake(ch_req *req);
void ch_api_SaslAuthenticate(ch_req *req);
/* KIP-554 (ch_api_scram.c). */
void ch_api_DescribeUserScramCredentials(ch_req *req);
void ch_api_AlterUserScramCredentials(ch_req *req);
void ch_api_DescribeClientQuotas(ch_req *req);
void ch_api_AlterClientQuotas(ch_req *req);

/* Client quotas (ch_api_quotas.c). Records value (bytes) of a quota kind
 * (ch_quota_key) for the request's user and client id and returns the
 * throttle time in ms (0: none); unrecord takes it back; throttle mutes the
 * request's connection for ms after its answer (Kafka's channel mute). */
int32_t ch_api_quota_record(ch_req *req, int kind, double value);
void ch_api_quota_unrecord(ch_req *req, int kind, double value);
/* The most the request's quota of kind lets through in one window
 * (INT64_MAX: no quota): a Fetch's MaxBytes is capped by it. */
int64_t ch_api_quota_window_max(ch_req *req, int kind);
void ch_api_quota_throttle(ch_req *req, int32_t ms);
/* request_percentage (Kafka's ClientRequestQuotaManager): records the
 * loop's time on req (from its dispatch to now while its handler runs,
 * else its handler's time) as a percentage of one thread and returns the
 * throttle time, at most one quota window (1 s). Once per request: by
 * ch_api_send, and by the handlers that build their answers by hand
 * (Fetch) before they do. */
int32_t ch_api_quota_request_time(ch_req *req);
/* controller_mutation_rate (ch_quotas_mutate): partitions created or
 * deleted by req, strict from version strict_since. 0, or
 * THROTTLING_QUOTA_EXCEEDED (that item refused); *throttle raised to the
 * throttle time. _applies: whether such a quota applies to req at all. */
int16_t ch_api_quota_mutation(ch_req *req, int32_t partitions, int16_t strict_since,
			      int32_t *throttle);
bool ch_api_quota_mutation_applies(ch_req *req);
/* Every API of the group coordinator (JoinGroup, SyncGroup, Heartbeat,
 * LeaveGroup, OffsetCommit, OffsetFetch, ListGroups, DescribeGroups,
 * DeleteGroups, OffsetDelete): one table in ch_api_group.c. */
void ch_api_group(ch_req *req);
/* The group APIs' ACL checks before the core (ch_api_group_authz.c): true
 * when it answered req (refused); it may take denied entries out of the
 * request and set req->finish to answer them. */
bool ch_api_group_authorize(ch_req *req);
/* The same for ConsumerGroupHeartbeat (READ on the group, DESCRIBE on each
 * subscribed topic) and ConsumerGroupDescribe (DESCRIBE on each group,
 * authorized operations, DESCRIBE on the members' topics). */
bool ch_api_cg_authorize(ch_req *req);
/* For coord_shell's ch_coord_ops: respond ignores ud (the token is the
 * ch_req); check_partition's ud is the ch_broker. */
void ch_api_group_respond(void *ud, void *token, const void *resp);
/* "/host" of a peer "host:port" (Kafka's client host in DescribeGroups). */
void ch_api_client_host(const char *peer, char *out, size_t cap);
/* The core's request for req (the request is its token; host: scratch for
 * the client host, cap bytes). */
ch_coord_req ch_api_coord_req(ch_req *req, char *host, size_t cap);

/* The consumer rebalance protocol (ch_api_consumer_group.c). */
void ch_api_ConsumerGroupHeartbeat(ch_req *req);
void ch_api_ConsumerGroupDescribe(ch_req *req);
/* A classic group API naming a consumer group: answers it (true) when Kafka
 * refuses it, or lets it through, adjusted (an OffsetCommit the consumer
 * group validated goes on as a commit of a group without members). */
bool ch_api_cg_refused(ch_req *req);
/* The classic core's answer, merged with the consumer groups where they
 * matter (ListGroups, OffsetFetch v9): sends it and returns true, or false
 * for the caller to send it as it is. */
bool ch_api_cg_respond(ch_req *req, const void *resp);
int16_t ch_api_group_check_partition(void *ud, ch_str topic, int32_t partition);

/* The ApiKeys list of an ApiVersions response, from the handler table. */
void ch_api_versions_fill(ch_req *req, ch_ApiVersionsResponse *resp);

#endif
