/*
 * ch_api.c: request header parsing, version checks, dispatch through the
 * handler table, response header encoding. See ch_api.h.
 */
#include "api/ch_api.h"

#include <stdio.h>

#include <stdlib.h>
#include <string.h>

#include "api/ch_api_sasl.h"
#include "broker/ch_broker.h"
#include "common/ch_common.h"
#include "common/ch_log.h"
#include "proto/ch_wr.h"
#include "proto/generated/ch_errors.h"

/* Decoded requests may not take more memory than this many times the frame
 * (plus a floor): bounds what a hostile frame can make us allocate. */
#define ARENA_FACTOR 16
#define ARENA_FLOOR (1u << 20)
/* ch_api_send keeps its encoding buffer when it holds at most this much. */
#define CH_API_REUSE_MAX (64u * 1024)

/* { key, MinVersion, MaxVersion, handler }: what this build serves, one row
 * per API in key order (ch_api_handler_find searches it; two dozen rows).
 * Ranges are those of the generated codec unless an API is served only in
 * part. ApiVersions is answered from this table. */
static const ch_api_handler handlers[] = {
	{CH_APIKEY_PRODUCE, 0, 11, ch_api_Produce}, /* v0-v2: magic 0/1, converted */
	{CH_APIKEY_FETCH, 0, 17, ch_api_Fetch},     /* v0-v3: down-converted to magic 0/1 */
	{CH_APIKEY_LIST_OFFSETS, 0, 10, ch_api_ListOffsets},
	{CH_APIKEY_METADATA, 0, 12, ch_api_Metadata},
	{CH_APIKEY_OFFSET_COMMIT, 0, 9, ch_api_group},
	{CH_APIKEY_OFFSET_FETCH, 0, 9, ch_api_group},
	{CH_APIKEY_FIND_COORDINATOR, 0, 6, ch_api_FindCoordinator},
	{CH_APIKEY_JOIN_GROUP, 0, 9, ch_api_group},
	{CH_APIKEY_HEARTBEAT, 0, 4, ch_api_group},
	{CH_APIKEY_LEAVE_GROUP, 0, 5, ch_api_group},
	{CH_APIKEY_SYNC_GROUP, 0, 5, ch_api_group},
	{CH_APIKEY_DESCRIBE_GROUPS, 0, 6, ch_api_group},
	{CH_APIKEY_LIST_GROUPS, 0, 5, ch_api_group},
	{CH_APIKEY_SASL_HANDSHAKE, 0, 1, ch_api_SaslHandshake},
	{CH_APIKEY_API_VERSIONS, 0, 4, ch_api_ApiVersions},
	{CH_APIKEY_CREATE_TOPICS, 0, 7, ch_api_CreateTopics},
	{CH_APIKEY_DELETE_TOPICS, 0, 6, ch_api_DeleteTopics},
	{CH_APIKEY_DELETE_RECORDS, 0, 2, ch_api_DeleteRecords},
	{CH_APIKEY_INIT_PRODUCER_ID, 0, 5, ch_api_InitProducerId},
	{CH_APIKEY_DESCRIBE_CONFIGS, 0, 4, ch_api_DescribeConfigs},
	{CH_APIKEY_ALTER_CONFIGS, 0, 2, ch_api_AlterConfigs},
	{CH_APIKEY_DESCRIBE_ACLS, 0, 3, ch_api_DescribeAcls},
	{CH_APIKEY_CREATE_ACLS, 0, 3, ch_api_CreateAcls},
	{CH_APIKEY_DELETE_ACLS, 0, 3, ch_api_DeleteAcls},
	{CH_APIKEY_SASL_AUTHENTICATE, 0, 2, ch_api_SaslAuthenticate},
	{CH_APIKEY_CREATE_PARTITIONS, 0, 3, ch_api_CreatePartitions},
	{CH_APIKEY_DELETE_GROUPS, 0, 2, ch_api_group},
	{CH_APIKEY_INCREMENTAL_ALTER_CONFIGS, 0, 1, ch_api_IncrementalAlterConfigs},
	{CH_APIKEY_OFFSET_DELETE, 0, 0, ch_api_group},
	{CH_APIKEY_DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0, ch_api_DescribeUserScramCredentials},
	{CH_APIKEY_ALTER_USER_SCRAM_CREDENTIALS, 0, 0, ch_api_AlterUserScramCredentials},
	{CH_APIKEY_DESCRIBE_CLIENT_QUOTAS, 0, 1, ch_api_DescribeClientQuotas},
	{CH_APIKEY_ALTER_CLIENT_QUOTAS, 0, 1, ch_api_AlterClientQuotas},
	{CH_APIKEY_DESCRIBE_CLUSTER, 0, 1, ch_api_DescribeCluster},
	{CH_APIKEY_CONSUMER_GROUP_HEARTBEAT, 0, 1, ch_api_ConsumerGroupHeartbeat},
	{CH_APIKEY_CONSUMER_GROUP_DESCRIBE, 0, 1, ch_api_ConsumerGroupDescribe},
};

const ch_api_handler *
ch_api_handler_find(int16_t key)
{
	for (size_t i = 0; i < CH_ARRAY_LEN(handlers); i++)
		if (handlers[i].key == key)
			return &handlers[i];
	return NULL;
}

void
ch_api_foreach_handler(void (*fn)(const ch_api_handler *h, void *ud), void *ud)
{
	for (size_t i = 0; i < CH_ARRAY_LEN(handlers); i++)
		fn(&handlers[i], ud);
}

static bool
is_flexible(const ch_api_codec *c, int16_t v)
{
	return c && c->flex_version >= 0 && v >= c->flex_version;
}

void *
ch_req_alloc(ch_req *req, size_t n)
{
	size_t limit = req->arena.limit;
	req->arena.limit = 0; /* responses are ours, not the client's to bound */
	void *p = ch_arena_alloc(&req->arena, n);
	req->arena.limit = limit;
	if (!p)
		abort();
	return p;
}

char *
ch_req_strdup(ch_req *req, ch_str s)
{
	size_t n = s.len > 0 ? (size_t)s.len : 0;
	char *p = ch_req_alloc(req, n + 1);
	if (n)
		memcpy(p, s.p, n);
	p[n] = '\0';
	return p;
}

/* bk's counters, allocated at first use (requests may be built without
 * ch_api_on_frame: the api tests call handlers directly). */
static ch_api_stats *
stats_of(ch_broker *bk)
{
	if (!bk->api_stats)
		bk->api_stats = ch_xcalloc(1, sizeof(ch_api_stats));
	return bk->api_stats;
}

const ch_api_stats *
ch_api_get_stats(ch_broker *bk)
{
	return stats_of(bk);
}

void
ch_api_note_error(ch_req *req, int16_t code)
{
	int k = req->key, e = code + 1;
	if (k >= 0 && k < CH_API_STATS_KEYS && e >= 0 && e < CH_API_STATS_ERRORS)
		stats_of(req->bk)->errors[k][e]++;
}

/* ch_error_fn for a response's _errors walk; ud is the request. */
static void
note_error_cb(void *ud, int16_t code)
{
	ch_api_note_error(ud, code);
}

/* A zeroed request that lives in its own arena's first chunk (the thread's
 * spare, ch_arena.c): no malloc of its own per request. */
static ch_req *
req_new(void)
{
	ch_arena a;
	ch_arena_init(&a);
	ch_req *req = ch_arena_alloc(&a, sizeof(*req));
	if (!req)
		abort();
	req->arena = a; /* chunks do not point back at their arena: it may move */
	return req;
}

/* Ends a request: its count and latency go to the stats, then it is freed. */
static void
req_free(ch_req *req)
{
	int k = req->key, v = req->version;
	if (req->bk->handling == req)
		req->bk->handling = NULL;
	if (k >= 0 && k < CH_API_STATS_KEYS && v >= 0 && v < CH_API_STATS_VERSIONS)
		ch_hist_observe(&stats_of(req->bk)->latency[k][v],
				ch_now_mono_us() - req->received_us);
	ch_arena a = req->arena; /* req itself is in it */
	ch_arena_reset(&a);
}

/* Logs at warning level why a request from peer is refused (the API named when key is known);
 * logging only: the caller then answers or closes the connection. */
static void
log_reject(const char *peer, int16_t key, int16_t version, int32_t corr, const char *why)
{
	const ch_api_codec *c = ch_api_codec_find(key);
	CH_LOGW("api",
		"rejected request from %s: api_key=%d (%s) api_version=%d correlation_id=%d: %s",
		peer, key, c ? c->name : "unknown", version, corr, why);
}

/* ApiVersions at an unsupported version: Kafka answers with a v0 response
 * carrying UNSUPPORTED_VERSION and ApiVersions' own range only
 * (ApiVersionsRequest.getErrorResponse), so that the client can retry with a
 * version both sides know. */
static void
send_api_versions_fallback(ch_broker *bk, void *conn, uint64_t seq, int32_t corr)
{
	ch_req *req = req_new();
	req->bk = bk;
	req->conn = conn;
	req->seq = seq;
	req->key = CH_APIKEY_API_VERSIONS;
	req->version = 0;
	req->corr = corr;
	req->codec = ch_api_codec_find(CH_APIKEY_API_VERSIONS);
	req->received_us = ch_now_mono_us();
	ch_ApiVersionsResponse resp;
	ch_ApiVersionsResponse_init(&resp);
	ch_api_versions_fill(req, &resp);
	for (int32_t i = 0; i < resp.ApiKeys_n; i++)
		if (resp.ApiKeys[i].ApiKey == CH_APIKEY_API_VERSIONS) {
			resp.ApiKeys += i;
			resp.ApiKeys_n = 1;
			break;
		}
	resp.ErrorCode = CH_KERR_UNSUPPORTED_VERSION;
	ch_api_send(req, &resp);
}

const char *
ch_api_adv_host(const ch_req *req)
{
	int i = req->listener;
	return i > 0 && i < CH_LISTENERS_MAX && req->bk->adv_hosts[i] ? req->bk->adv_hosts[i]
								      : req->bk->adv_host;
}

int32_t
ch_api_adv_port(const ch_req *req)
{
	int i = req->listener;
	return i > 0 && i < CH_LISTENERS_MAX && req->bk->adv_hosts[i] ? req->bk->adv_ports[i]
								      : req->bk->adv_port;
}

void
ch_api_on_frame(ch_broker *bk, void *conn, uint64_t seq, const char *peer, const uint8_t *frame,
		size_t len, int64_t now_ms)
{
	bk->n_requests++;
	ch_api_session *sess = bk->session ? bk->session(bk->shell, conn) : NULL;
	/* Before authentication only ApiVersions and the SASL requests (or raw tokens). */
	if (sess && !ch_api_session_authenticated(sess) &&
	    ch_api_sasl_gate(bk, sess, conn, seq, peer, frame, len))
		return;
	/* KIP-368: after its session lifetime a connection may only re-authenticate. */
	if (sess && ch_api_sasl_expired(sess, now_ms) &&
	    (len < 2 || ((frame[0] << 8) | frame[1]) != CH_APIKEY_SASL_HANDSHAKE)) {
		bk->n_rejected++;
		CH_LOGI("api",
			"closing connection from %s: %s session expired (re-authenticate "
			"within connections.max.reauth.ms)",
			peer, sess->principal);
		bk->close(bk->shell, conn, seq);
		return;
	}
	ch_rd r;
	ch_rd_init(&r, frame, len);
	int16_t key = ch_rd_i16(&r);
	int16_t version = ch_rd_i16(&r);
	int32_t corr = ch_rd_i32(&r);
	if (!ch_rd_ok(&r)) {
		bk->n_rejected++;
		log_reject(peer, key, version, corr, "frame shorter than a request header");
		bk->close(bk->shell, conn, seq);
		return;
	}
	const ch_api_codec *codec = ch_api_codec_find(key);
	const ch_api_handler *h = ch_api_handler_find(key);
	if (!codec || !h) {
		bk->n_rejected++;
		log_reject(peer, key, version, corr, "unsupported api key");
		bk->close(bk->shell, conn, seq);
		return;
	}
	if (version < h->min_version || version > h->max_version) {
		bk->n_rejected++;
		if (key == CH_APIKEY_API_VERSIONS) {
			log_reject(peer, key, version, corr,
				   "unsupported version; answering v0 UNSUPPORTED_VERSION");
			send_api_versions_fallback(bk, conn, seq, corr);
		} else {
			log_reject(peer, key, version, corr, "unsupported version");
			bk->close(bk->shell, conn, seq);
		}
		return;
	}
	/* Header v1 has the client id; v2 (flexible requests) adds tagged fields. */
	ch_rd_init(&r, frame, len);
	ch_RequestHeader hdr;
	ch_arena ha;
	ch_arena_init(&ha);
	int hv = is_flexible(codec, version) ? 2 : 1;
	if (ch_RequestHeader_decode(&r, &ha, (int16_t)hv, &hdr) != 0) {
		ch_arena_reset(&ha);
		bk->n_rejected++;
		log_reject(peer, key, version, corr, "malformed request header");
		bk->close(bk->shell, conn, seq);
		return;
	}
	ch_arena_reset(&ha); /* the header has no arrays: nothing lives there */

	ch_req *req = req_new();
	req->bk = bk;
	req->conn = conn;
	req->seq = seq;
	req->peer = peer;
	req->key = key;
	req->version = version;
	req->corr = corr;
	req->size = len;
	req->client_id = hdr.ClientId;
	req->codec = codec;
	req->received_ms = now_ms;
	req->received_us = ch_now_mono_us();
	req->sess = sess;
	req->listener = sess ? sess->listener : 0;
	/* A copy: a parked request outlives its connection's session (but the
	 * usual principal needs none). */
	req->principal = sess && strcmp(sess->principal, "User:ANONYMOUS") != 0
				 ? ch_req_strdup(req, ch_str_c(sess->principal))
				 : "User:ANONYMOUS";
	/* the request's own bytes are the broker's, not the client's to bound */
	req->arena.limit = len * ARENA_FACTOR + ARENA_FLOOR + req->arena.total;
	req->body = ch_arena_alloc(&req->arena, codec->req_size);
	if (!req->body || codec->req_decode(&r, &req->arena, version, req->body) != 0) {
		static const char *const why[] = {
			"ok", "truncated body", "malformed body", "body needs too much memory",
			"body has more array elements or tagged fields than Kafka accepts"};
		bk->n_rejected++;
		log_reject(peer, key, version, corr,
			   why[r.err >= 0 && r.err <= CH_RD_ELIMIT ? r.err : CH_RD_EINVAL]);
		ch_api_close(req, NULL);
		return;
	}
	/* Kafka reads the fields its schema names for this version (the tagged
	 * fields too, when flexible) and never looks at what follows, for every
	 * API and version: librdkafka >= 2.1 relies on it (its Metadata v9+
	 * "all topics" request carries a 4-byte count where a 1-byte one
	 * belongs, so its own fields trail the ones Kafka reads as zeros). */
	if (ch_rd_left(&r) != 0)
		CH_LOGD("api", "%s: %s v%d corr=%d: %zu bytes after the body ignored", peer,
			codec->name, version, corr, ch_rd_left(&r));
	req->arena.limit = 0;
	CH_LOGT("api", "%s: %s v%d corr=%d", peer, codec->name, version, corr);
	bk->handling = req;
	h->fn(req);
	/* Still set: the handler parked req (answered later, from a timer or
	 * the log); its time so far is what request_percentage counts. */
	if (bk->handling == req)
		req->handler_us = ch_now_mono_us() - req->received_us;
	bk->handling = NULL;
}

void
ch_api_send(ch_req *req, const void *resp)
{
	ch_broker *bk = req->bk;
	if (req->finish)
		resp = req->finish(req, resp);
	/* request_percentage: the answer carries the larger throttle time
	 * (Kafka's maybeSetThrottleTimeMs), the connection is muted after it. */
	int32_t throttle = ch_api_quota_request_time(req);
	const ch_api_codec *codec = req->codec;
	if (throttle > 0 && codec->throttle_off >= 0 && req->version >= codec->throttle_version) {
		void *copy = ch_req_alloc(req, codec->resp_size);
		memcpy(copy, resp, codec->resp_size);
		int32_t *t = (int32_t *)((char *)copy + codec->throttle_off);
		*t = CH_MAX(*t, throttle);
		resp = copy;
	}
	ch_api_quota_throttle(req, throttle);
	/* The thread's encoding buffer, kept between answers: the shell copies
	 * a small answer out of it (ch_resp_from_small_buf), so most requests
	 * reuse its memory. Not under ASan, which is to see every buffer. */
	static _Thread_local ch_buf reuse;
	ch_buf buf, *b = CH_ASAN ? &buf : &reuse;
	if (CH_ASAN)
		ch_buf_init(b);
	ch_buf_reset(b);
	ch_wr_i32(b, req->corr);
	/* Response header v1 (tagged fields) for flexible versions, except
	 * ApiVersions, whose response header is always v0 so that a client can
	 * read it before it knows what the broker supports. */
	if (req->key != CH_APIKEY_API_VERSIONS && is_flexible(req->codec, req->version))
		ch_wr_uvarint(b, 0);
	req->codec->resp_encode(b, req->version, resp);
	if (!ch_buf_ok(b))
		abort();
	req->codec->resp_errors(resp, req->version, note_error_cb, req);
	bk->reply(bk->shell, req->conn, req->seq, b);
	if (CH_ASAN || b->cap > CH_API_REUSE_MAX)
		ch_buf_free(b); /* empty: the bytes went with the reply */
	req_free(req);
}

void
ch_api_resp_header(const ch_req *req, ch_buf *b)
{
	ch_wr_i32(b, req->corr);
	if (req->key != CH_APIKEY_API_VERSIONS && is_flexible(req->codec, req->version))
		ch_wr_uvarint(b, 0);
}

void
ch_api_send_resp(ch_req *req, struct ch_resp *resp)
{
	req->bk->reply_resp(req->bk->shell, req->conn, req->seq, resp);
	req_free(req);
}

void
ch_api_send_none(ch_req *req)
{
	req->bk->reply(req->bk->shell, req->conn, req->seq, NULL);
	req_free(req);
}

void
ch_api_close(ch_req *req, const char *why)
{
	if (why)
		log_reject(req->peer, req->key, req->version, req->corr, why);
	req->bk->close(req->bk->shell, req->conn, req->seq);
	req_free(req);
}
