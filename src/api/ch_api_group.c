/*
 * ch_api_group.c: the group coordinator's APIs: FindCoordinator, and the
 * glue from decoded requests to the pure coordinator core (group/) and back.
 *
 * The request itself is the core's token: the core answers through
 * ch_api_group_respond (at once, or later for JoinGroup, SyncGroup and
 * anything that waits for a __consumer_offsets append), which encodes the
 * response at the request's version and frees the request.
 */
#include <stdlib.h>
#include <string.h>

#include "api/ch_api.h"
#include "broker/ch_broker.h"
#include "common/ch_log.h"
#include "group/ch_coord.h"
#include "proto/ch_acl.h"
#include "proto/generated/ch_errors.h"

#define KEY_TYPE_GROUP 0
#define KEY_TYPE_TRANSACTION 1
#define KEY_TYPE_SHARE 2

void
ch_api_group_respond(void *ud, void *token, const void *resp)
{
	(void)ud;
	if (!ch_api_cg_respond(token, resp))
		ch_api_send(token, resp);
}

int16_t
ch_api_group_check_partition(void *ud, ch_str topic, int32_t partition)
{
	ch_broker *bk = ud;
	const ch_topic *t =
		topic.len > 0 ? ch_topics_find(bk->topics, topic.p, (size_t)topic.len) : NULL;
	if (!t || partition < 0 || partition >= t->partitions)
		return CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	return CH_KERR_NONE;
}

/* The coordinator's clock: wall-clock ms (commit timestamps are stored). */
static int64_t
now_wall(ch_req *req)
{
	return req->bk->wall_ms(req->bk->shell);
}

static bool
offsets_topic_exists(const ch_req *req)
{
	return ch_topics_find(req->bk->topics, CH_CONSUMER_OFFSETS_TOPIC,
			      sizeof(CH_CONSUMER_OFFSETS_TOPIC) - 1) != NULL;
}

typedef struct offsets_wait {
	ch_req *req;
	void (*then)(ch_req *req);
} offsets_wait;

/* ch_topics_commit's done for with_offsets_topic: logs a failure to create __consumer_offsets,
 * then runs then(req) either way (the caller's checks see whether the topic exists). */
static void
offsets_created(void *ud, int16_t err, const char *msg)
{
	offsets_wait *w = ud;
	if (err)
		CH_LOGW("api", "cannot create __consumer_offsets: %s", msg);
	w->then(w->req);
}

/* Kafka creates __consumer_offsets when a coordinator is first looked up.
 * Runs then(req) once it exists (created and durable: the registry writes
 * off the loop thread), or once creating it failed. */
static void
with_offsets_topic(ch_req *req, void (*then)(ch_req *req))
{
	if (offsets_topic_exists(req)) {
		then(req);
		return;
	}
	offsets_wait *w = ch_req_alloc(req, sizeof(*w));
	w->req = req;
	w->then = then;
	char msg[256];
	ch_topics_txn *tx = ch_topics_begin(req->bk->topics);
	if (ch_topics_ensure_offsets_topic(tx, NULL, msg, sizeof(msg)) != 0)
		CH_LOGW("api", "cannot create __consumer_offsets: %s", msg);
	ch_topics_commit(tx, offsets_created, w);
}

/* The error for a coordinator lookup of this key type. *msg is cohort's
 * own ErrorMessage where Kafka's text would mislead (no transactions), the
 * error's Kafka message where Kafka fails the whole request (a key type it
 * does not know), else NULL: the caller then writes Kafka's text. */
static int16_t
coordinator_error(ch_req *req, int8_t key_type, const char **msg)
{
	*msg = NULL;
	if (key_type == KEY_TYPE_TRANSACTION) {
		/* No transaction coordinator: the answer InitProducerId gives a
		 * transactional id too (see ch_api_producer_id.c). Kafka gives it
		 * when the id may not be used; clients treat it as fatal, where
		 * COORDINATOR_NOT_AVAILABLE made them retry until their timeout. */
		*msg = "transactions are not supported by cohortd";
		return CH_KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
	}
	if (key_type == KEY_TYPE_SHARE)
		return CH_KERR_INVALID_REQUEST; /* Kafka without a share coordinator */
	if (key_type != KEY_TYPE_GROUP) {
		/* Kafka: CoordinatorType.forId throws, the request fails whole */
		*msg = ch_kerr_message(CH_KERR_INVALID_REQUEST);
		return CH_KERR_INVALID_REQUEST;
	}
	/* with_offsets_topic ran first: the topic is there unless creating it
	 * failed (logged), which Kafka answers COORDINATOR_NOT_AVAILABLE */
	return offsets_topic_exists(req) ? CH_KERR_NONE : CH_KERR_COORDINATOR_NOT_AVAILABLE;
}

/* Kafka's ErrorMessage (KafkaApis.handleFindCoordinatorRequest*): v1-v3
 * Errors.message(), which is "NONE" on success; v4+ "" per key. */
static ch_str
coordinator_message(int16_t version, int16_t err, const char *msg)
{
	if (msg)
		return ch_str_c(msg);
	if (version >= 4)
		return CH_STR_LIT("");
	return ch_str_c(err ? ch_kerr_message(err) : "NONE");
}

/* A group's coordinator is this broker while its __consumer_offsets
 * partition is loaded or loading (Kafka: the partition's leader, whose group
 * APIs answer COORDINATOR_LOAD_IN_PROGRESS meanwhile). A partition whose
 * load failed has none: COORDINATOR_NOT_AVAILABLE, Kafka's answer for a
 * partition without a leader. */
static int16_t
group_key_error(ch_req *req, ch_str key)
{
	if (!ch_api_allowed_str(req, CH_ACL_DESCRIBE, CH_RES_GROUP, key))
		return CH_KERR_GROUP_AUTHORIZATION_FAILED; /* Kafka's getCoordinator */
	ch_coord *c = req->bk->coord;
	ch_coord_load_state st = ch_coord_partition_state(c, ch_coord_partition_for(c, key));
	if (st == CH_COORD_LOADED || st == CH_COORD_LOADING)
		return CH_KERR_NONE;
	return CH_KERR_COORDINATOR_NOT_AVAILABLE;
}

/* Answers FindCoordinator (v4+: per key of CoordinatorKeys): this broker for group keys whose
 * offsets partition is loaded or loading; group lookups run it after with_offsets_topic. */
static void
find_coordinator(ch_req *req)
{
	const ch_FindCoordinatorRequest *rq = req->body;
	ch_broker *bk = req->bk;
	ch_FindCoordinatorResponse resp;
	ch_FindCoordinatorResponse_init(&resp);
	int8_t key_type = req->version >= 1 ? rq->KeyType : KEY_TYPE_GROUP;
	const char *msg = NULL;
	if (req->version < 4) {
		resp.ErrorCode = coordinator_error(req, key_type, &msg);
		if (!resp.ErrorCode && key_type == KEY_TYPE_GROUP)
			resp.ErrorCode = group_key_error(req, rq->Key);
		resp.ErrorMessage = coordinator_message(req->version, resp.ErrorCode, msg);
		resp.NodeId = resp.ErrorCode ? -1 : bk->node_id;
		resp.Host = ch_str_c(resp.ErrorCode ? "" : ch_api_adv_host(req));
		resp.Port = resp.ErrorCode ? -1 : ch_api_adv_port(req);
		ch_api_send(req, &resp);
		return;
	}
	int32_t n = rq->CoordinatorKeys_n > 0 ? rq->CoordinatorKeys_n : 0;
	resp.Coordinators = CH_REQ_NEW_ARRAY(req, ch_FindCoordinatorResponse_Coordinator, n);
	resp.Coordinators_n = n;
	int16_t type_err = n ? coordinator_error(req, key_type, &msg) : CH_KERR_NONE;
	for (int32_t i = 0; i < n; i++) {
		ch_FindCoordinatorResponse_Coordinator *c = &resp.Coordinators[i];
		c->Key = rq->CoordinatorKeys[i];
		int16_t err = type_err;
		if (!err && key_type == KEY_TYPE_GROUP)
			err = group_key_error(req, c->Key);
		c->ErrorCode = err;
		c->ErrorMessage = coordinator_message(req->version, err, msg);
		c->NodeId = err ? -1 : bk->node_id;
		c->Host = ch_str_c(err ? "" : ch_api_adv_host(req));
		c->Port = err ? -1 : ch_api_adv_port(req);
	}
	ch_api_send(req, &resp);
}

void
ch_api_FindCoordinator(ch_req *req)
{
	const ch_FindCoordinatorRequest *rq = req->body;
	int8_t key_type = req->version >= 1 ? rq->KeyType : KEY_TYPE_GROUP;
	if (key_type == KEY_TYPE_GROUP)
		with_offsets_topic(req, find_coordinator);
	else
		find_coordinator(req);
}

/* Peer host without the port, for DescribeGroups' client host ("/1.2.3.4"
 * in Kafka, which prints an InetAddress). */
void
ch_api_client_host(const char *peer, char *out, size_t cap)
{
	const char *colon = strrchr(peer, ':');
	size_t n = colon ? (size_t)(colon - peer) : strlen(peer);
	if (n + 2 > cap)
		n = cap - 2;
	out[0] = '/';
	memcpy(out + 1, peer, n);
	out[n + 1] = '\0';
	/* "[::1]" -> "/::1" */
	if (out[1] == '[') {
		memmove(out + 1, out + 2, n);
		char *b = strchr(out, ']');
		if (b)
			*b = '\0';
	}
}

/* SyncGroup v5 makes the protocol type and name mandatory: Kafka answers
 * a request without them before the coordinator sees it. */
static bool
sync_group_refused(ch_req *req)
{
	const ch_SyncGroupRequest *rq = req->body;
	if (req->version < 5 || (rq->ProtocolType.len >= 0 && rq->ProtocolName.len >= 0))
		return false;
	ch_SyncGroupResponse resp;
	ch_SyncGroupResponse_init(&resp);
	resp.ErrorCode = CH_KERR_INCONSISTENT_GROUP_PROTOCOL;
	resp.Assignment = (ch_bytes){(const uint8_t *)"", 0};
	ch_api_send(req, &resp);
	return true;
}

/* The group APIs: the core's entry point for each, a check of the request
 * Kafka makes before its coordinator (answers and returns true to refuse),
 * and whether it must wait for __consumer_offsets (with_offsets_topic):
 * real clients look up the coordinator first, which creates it, but a
 * client that goes straight to JoinGroup or OffsetCommit must not form a
 * group whose state cannot be stored. One hash lookup once it exists. */
static const struct group_api {
	int16_t key;
	ch_coord_request_fn *call;
	bool (*refused)(ch_req *req);
	bool needs_offsets_topic;
} group_apis[] = {
	{8, ch_coord_commit, NULL, true},              /* OffsetCommit */
	{9, ch_coord_fetch, NULL, false},              /* OffsetFetch */
	{11, ch_coord_join, NULL, true},               /* JoinGroup */
	{12, ch_coord_heartbeat, NULL, false},         /* Heartbeat */
	{13, ch_coord_leave, NULL, false},             /* LeaveGroup */
	{14, ch_coord_sync, sync_group_refused, true}, /* SyncGroup */
	{15, ch_coord_describe, NULL, false},          /* DescribeGroups */
	{16, ch_coord_list, NULL, false},              /* ListGroups */
	{42, ch_coord_delete_groups, NULL, true},      /* DeleteGroups */
	{47, ch_coord_offset_delete, NULL, true},      /* OffsetDelete */
};

/* The group_apis entry for api key, or NULL when the table lacks it. */
static const struct group_api *
group_api_for(int16_t key)
{
	for (size_t i = 0; i < CH_ARRAY_LEN(group_apis); i++)
		if (group_apis[i].key == key)
			return &group_apis[i];
	return NULL;
}

/* Hands the decoded request to the core, which answers it through
 * ch_api_group_respond (the request is the token). */
ch_coord_req
ch_api_coord_req(ch_req *req, char *host, size_t cap)
{
	ch_api_client_host(req->peer, host, cap);
	return (ch_coord_req){
		.now = now_wall(req),
		.token = req,
		.version = req->version,
		.body = req->body,
		.client_id = req->client_id,
		.client_host = host,
	};
}

static void
group_call(ch_req *req)
{
	char host[80];
	ch_coord_req r = ch_api_coord_req(req, host, sizeof(host));
	group_api_for(req->key)->call(req->bk->coord, &r);
}

void
ch_api_group(ch_req *req)
{
	const struct group_api *a = group_api_for(req->key);
	if (!a)
		abort(); /* the handler table (ch_api.c) names an API this table lacks */
	if (a->refused && a->refused(req))
		return;
	if (ch_api_group_authorize(req))
		return;
	if (ch_api_cg_refused(req))
		return;
	if (a->needs_offsets_topic)
		with_offsets_topic(req, group_call);
	else
		group_call(req);
}
