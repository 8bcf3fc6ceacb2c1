/*
 * ch_api_metadata.c: Metadata v0-v12. One broker (this one) leads every
 * partition; replicas and ISR are [this node]. Unknown topics named in the
 * request are created when auto.create.topics.enable and the request allow
 * it (v4+ AllowAutoTopicCreation; always allowed before v4), with
 * num.partitions partitions; the answer waits until the creation is
 * durable, so they are returned ready (Kafka answers LEADER_NOT_AVAILABLE
 * until its controller catches up, which clients retry on).
 */
#include <string.h>

#include "api/ch_api.h"
#include "broker/ch_broker.h"
#include "common/ch_log.h"
#include "proto/ch_acl.h"
#include "proto/generated/ch_errors.h"

typedef ch_MetadataResponse_MetadataResponseTopic resp_topic;
typedef ch_MetadataResponse_MetadataResponsePartition resp_part;

/* An existing topic as Metadata shows it: this broker leads every partition
 * and is its only replica and ISR; ops says whether authorized operations
 * were asked (else INT32_MIN, Kafka's "not included"). */
static void
fill_topic(ch_req *req, resp_topic *t, const ch_topic *tp, const int32_t *self, bool ops)
{
	t->ErrorCode = CH_KERR_NONE;
	t->Name = (ch_str){tp->name, (int32_t)tp->name_len};
	t->TopicId = tp->id;
	t->IsInternal = tp->internal;
	t->TopicAuthorizedOperations = ops ? CH_TOPIC_AUTHORIZED_OPS : INT32_MIN;
	t->Partitions = CH_REQ_NEW_ARRAY(req, resp_part, tp->partitions);
	t->Partitions_n = tp->partitions;
	for (int32_t p = 0; p < tp->partitions; p++) {
		resp_part *rp = &t->Partitions[p];
		rp->ErrorCode = CH_KERR_NONE;
		rp->PartitionIndex = p;
		rp->LeaderId = self[0];
		rp->LeaderEpoch = 0;
		rp->ReplicaNodes = (int32_t *)self; /* read-only while encoding */
		rp->ReplicaNodes_n = 1;
		rp->IsrNodes = (int32_t *)self;
		rp->IsrNodes_n = 1;
		rp->OfflineReplicas = NULL;
		rp->OfflineReplicas_n = 0;
	}
}

/* A topic answered with an error and no partitions. */
static void
topic_error(resp_topic *t, ch_str name, int16_t err, bool ops)
{
	t->ErrorCode = err;
	t->Name = name;
	t->IsInternal = false;
	t->Partitions = NULL;
	t->Partitions_n = 0;
	t->TopicAuthorizedOperations = ops ? 0 : INT32_MIN;
}

/* Per named topic of a request that auto-creates: -1 not attempted, else
 * the creation's error (0: created, look it up when answering). */
typedef struct md_ctx {
	ch_req *req;
	int16_t *err;   /* NULL: nothing was created */
	bool *staged;   /* created by this request's transaction */
	int8_t *denied; /* per named topic: DENY_* (NULL: no authorizer) */
} md_ctx;

/* What the authorizer says of a named topic (KafkaApis.handleTopicMetadataRequest). */
enum {
	DENY_NONE = 0,
	DENY_DESCRIBE,
	DENY_CREATE
};

static bool
creatable(const ch_req *req, ch_str name, bool allow_create)
{
	return allow_create && req->bk->cfg->auto_create_topics_enable &&
	       ch_topic_name_validate(name.p, (size_t)name.len, NULL, 0) == 0;
}

/* Whether a topic of the request is named by its id (v10+): a null name, or
 * a non-zero id whatever the name (Java sends the schema's default name ""
 * beside the id; Kafka's handleTopicMetadataRequest looks the ids up and
 * ignores the names when any id is set). */
static bool
by_id(const ch_MetadataRequest_MetadataRequestTopic *q)
{
	return ch_str_is_null(q->Name) || !ch_uuid_is_zero(&q->TopicId);
}

/* A named topic's DENY_*: no DESCRIBE on it; or it does not exist, would be
 * auto-created, and neither the cluster nor the topic allows CREATE. */
static int8_t
topic_denied(ch_req *req, const ch_MetadataRequest_MetadataRequestTopic *q, bool allow_create)
{
	ch_str name = q->Name;
	if (by_id(q))
		return DENY_NONE; /* md_send decides */
	if (!ch_api_allowed_str(req, CH_ACL_DESCRIBE, CH_RES_TOPIC, name))
		return DENY_DESCRIBE;
	if (allow_create && req->bk->cfg->auto_create_topics_enable &&
	    !ch_topics_find(req->bk->topics, name.p, (size_t)name.len) &&
	    !ch_api_cluster_allowed(req, CH_ACL_CREATE) &&
	    !ch_api_allowed_str(req, CH_ACL_CREATE, CH_RES_TOPIC, name))
		return DENY_CREATE;
	return DENY_NONE;
}

/* Builds the answer from the registry as it is now and sends it. */
static void
md_send(ch_req *req, const md_ctx *ctx)
{
	const ch_MetadataRequest *rq = req->body;
	ch_broker *bk = req->bk;
	ch_MetadataResponse resp;
	ch_MetadataResponse_init(&resp);

	int32_t *self = CH_REQ_NEW_ARRAY(req, int32_t, 1);
	self[0] = bk->node_id;
	resp.Brokers = CH_REQ_NEW_ARRAY(req, ch_MetadataResponse_MetadataResponseBroker, 1);
	resp.Brokers_n = 1;
	resp.Brokers[0].NodeId = bk->node_id;
	resp.Brokers[0].Host = ch_str_c(ch_api_adv_host(req));
	resp.Brokers[0].Port = ch_api_adv_port(req);
	resp.Brokers[0].Rack = ch_str_c(bk->cfg->broker_rack);
	resp.ClusterId = ch_str_c(bk->cluster_id);
	resp.ControllerId = bk->node_id;
	resp.ClusterAuthorizedOperations =
		rq->IncludeClusterAuthorizedOperations ? ch_api_cluster_ops(req) : INT32_MIN;
	bool ops = rq->IncludeTopicAuthorizedOperations;
	bool authz = ch_api_authz_on(req);

	/* All topics: a null list (v1+), or an empty list in v0. */
	if (rq->Topics_n < 0 || (rq->Topics_n == 0 && req->version == 0)) {
		/* Topics the principal may not describe are left out. */
		size_t n = ch_topics_count(bk->topics);
		resp.Topics = CH_REQ_NEW_ARRAY(req, resp_topic, n);
		resp.Topics_n = 0;
		for (size_t i = 0; i < n; i++) {
			const ch_topic *tp = ch_topics_at(bk->topics, i);
			if (authz && !ch_api_allowed(req, CH_ACL_DESCRIBE, CH_RES_TOPIC, tp->name))
				continue;
			resp_topic *t = &resp.Topics[resp.Topics_n++];
			fill_topic(req, t, tp, self, ops);
			if (ops && authz)
				t->TopicAuthorizedOperations =
					ch_api_authorized_ops(req, CH_RES_TOPIC, tp->name);
		}
		ch_api_send(req, &resp);
		return;
	}

	resp.Topics = CH_REQ_NEW_ARRAY(req, resp_topic, rq->Topics_n);
	resp.Topics_n = rq->Topics_n;
	for (int32_t i = 0; i < rq->Topics_n; i++) {
		const ch_MetadataRequest_MetadataRequestTopic *q = &rq->Topics[i];
		resp_topic *t = &resp.Topics[i];
		if (by_id(q)) {
			const ch_topic *tp = ch_uuid_is_zero(&q->TopicId)
						     ? NULL
						     : ch_topics_find_id(bk->topics, &q->TopicId);
			if (tp && authz &&
			    !ch_api_allowed(req, CH_ACL_DESCRIBE, CH_RES_TOPIC, tp->name)) {
				/* ids are not secret: the id with the error, no name */
				topic_error(t, CH_STR_NULL, CH_KERR_TOPIC_AUTHORIZATION_FAILED,
					    false);
				t->TopicId = q->TopicId;
			} else if (tp) {
				fill_topic(req, t, tp, self, ops);
				if (ops && authz)
					t->TopicAuthorizedOperations =
						ch_api_authorized_ops(req, CH_RES_TOPIC, tp->name);
			} else {
				topic_error(t, CH_STR_NULL,
					    ch_uuid_is_zero(&q->TopicId) ? CH_KERR_INVALID_REQUEST
									 : CH_KERR_UNKNOWN_TOPIC_ID,
					    ops);
				t->TopicId = q->TopicId;
			}
			continue;
		}
		const ch_topic *tp = ch_topics_find(bk->topics, q->Name.p, (size_t)q->Name.len);
		int16_t err = ctx->err ? ctx->err[i] : -1;
		if (ctx->denied && ctx->denied[i]) {
			/* no DESCRIBE: whether it exists is not said; no CREATE: not created */
			topic_error(t, q->Name, CH_KERR_TOPIC_AUTHORIZATION_FAILED, false);
			t->IsInternal = ctx->denied[i] == DENY_CREATE &&
					ch_str_eq_c(q->Name, CH_CONSUMER_OFFSETS_TOPIC);
			continue;
		}
		if (tp)
			fill_topic(req, t, tp, self, ops);
		else if (err > 0)
			topic_error(t, q->Name, err, ops);
		else if (err == 0) /* created, and deleted again since */
			topic_error(t, q->Name, CH_KERR_UNKNOWN_TOPIC_OR_PARTITION, ops);
		else if (ch_topic_name_validate(q->Name.p, (size_t)q->Name.len, NULL, 0) != 0)
			topic_error(t, q->Name, CH_KERR_INVALID_TOPIC_EXCEPTION, ops);
		else
			topic_error(t, q->Name, CH_KERR_UNKNOWN_TOPIC_OR_PARTITION, ops);
		if (ops && authz)
			t->TopicAuthorizedOperations = ch_api_authorized_ops(
				req, CH_RES_TOPIC, ch_req_strdup(req, q->Name));
	}
	ch_api_send(req, &resp);
}

/* The registry transaction of the auto-created topics is durable (err 0) or
 * failed: log each, remember the errors, answer the request. */
static void
md_created(void *ud, int16_t err, const char *msg)
{
	md_ctx *c = ud;
	const ch_MetadataRequest *rq = c->req->body;
	for (int32_t i = 0; i < rq->Topics_n; i++) {
		if (!c->staged[i])
			continue;
		ch_str name = rq->Topics[i].Name;
		if (err) {
			CH_LOGW("api", "%s: auto-creating topic '%.*s' failed: %s", c->req->peer,
				name.len, name.p, msg);
			c->err[i] = err;
		} else {
			CH_LOGI("api", "auto-created topic '%.*s' for %s", name.len, name.p,
				c->req->peer);
		}
	}
	md_send(c->req, c);
}

void
ch_api_Metadata(ch_req *req)
{
	const ch_MetadataRequest *rq = req->body;
	ch_broker *bk = req->bk;
	bool allow_create = req->version < 4 || rq->AllowAutoTopicCreation;
	int32_t n = rq->Topics_n;
	md_ctx *ctx = ch_req_alloc(req, sizeof(*ctx));
	ctx->req = req;
	if (ch_api_authz_on(req) && n > 0) {
		ctx->denied = CH_REQ_NEW_ARRAY(req, int8_t, n);
		for (int32_t i = 0; i < n; i++)
			ctx->denied[i] = topic_denied(req, &rq->Topics[i], allow_create);
	}
	bool any = false;
	for (int32_t i = 0; i < n && !any; i++) {
		ch_str name = rq->Topics[i].Name;
		any = !by_id(&rq->Topics[i]) && creatable(req, name, allow_create) &&
		      !(ctx->denied && ctx->denied[i]) &&
		      !ch_topics_find(bk->topics, name.p, (size_t)name.len);
	}
	if (!any) {
		md_send(req, ctx);
		return;
	}
	/* Unknown topics are created first; the answer waits until they are
	 * durable, so it can show them ready (see the top of this file). */
	ctx->err = CH_REQ_NEW_ARRAY(req, int16_t, n);
	ctx->staged = CH_REQ_NEW_ARRAY(req, bool, n);
	ch_topics_txn *tx = ch_topics_begin(bk->topics);
	for (int32_t i = 0; i < n; i++) {
		ch_str name = rq->Topics[i].Name;
		ctx->err[i] = -1;
		if (by_id(&rq->Topics[i]) || !creatable(req, name, allow_create) ||
		    (ctx->denied && ctx->denied[i]) ||
		    ch_topics_find(bk->topics, name.p, (size_t)name.len))
			continue; /* (named twice: the first one created it) */
		char msg[256];
		if (ch_str_eq_c(name, CH_CONSUMER_OFFSETS_TOPIC))
			ctx->err[i] = ch_topics_ensure_offsets_topic(tx, NULL, msg, sizeof(msg));
		else
			ctx->err[i] = ch_topics_create(tx, name.p, (size_t)name.len,
						       bk->cfg->num_partitions, NULL, 0, false,
						       NULL, msg, sizeof(msg));
		if (ctx->err[i])
			CH_LOGW("api", "%s: auto-creating topic '%.*s' failed: %s", req->peer,
				name.len, name.p, msg);
		ctx->staged[i] = ctx->err[i] == 0;
	}
	ch_topics_commit(tx, md_created, ctx);
}
