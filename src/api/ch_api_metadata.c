/*
 * ch_api_metadata.c: Metadata v0-v12. One broker (this one) leads every
 * partition; replicas and ISR are [this node]. Unknown topics named in the
 * request are created when auto.create.topics.enable and the request allow
 * it (v4+ AllowAutoTopicCreation; always allowed before v4), with
 * num.partitions partitions; cohortd creates them at once, so they are
 * returned ready (Kafka answers LEADER_NOT_AVAILABLE until its controller
 * catches up, which clients retry on).
 */
#include <string.h>

#include "api/ch_api.h"
#include "api/ch_api_util.h"
#include "api/ch_broker.h"
#include "common/ch_log.h"
#include "proto/generated/ch_errors.h"

typedef ch_MetadataResponse_MetadataResponseTopic resp_topic;
typedef ch_MetadataResponse_MetadataResponsePartition resp_part;

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

/* A topic named in the request that does not exist: create it or say why not. */
static void
missing_topic(ch_req *req, resp_topic *t, ch_str name, bool allow_create, const int32_t *self,
	      bool ops)
{
	ch_broker *bk = req->bk;
	char msg[256];
	int16_t err = ch_topic_name_validate(name.p, (size_t)name.len, msg, sizeof(msg));
	if (err) {
		topic_error(t, name, CH_KERR_INVALID_TOPIC_EXCEPTION, ops);
		return;
	}
	if (!allow_create || !bk->cfg->auto_create_topics_enable) {
		topic_error(t, name, CH_KERR_UNKNOWN_TOPIC_OR_PARTITION, ops);
		return;
	}
	const ch_topic *tp = NULL;
	if (ch_str_eq_c(name, CH_CONSUMER_OFFSETS_TOPIC))
		err = ch_topics_ensure_offsets_topic(bk->topics, &tp, msg, sizeof(msg));
	else
		err = ch_topics_create(bk->topics, name.p, (size_t)name.len,
				       bk->cfg->num_partitions, NULL, 0, false, &tp, msg,
				       sizeof(msg));
	if (err || !tp) {
		CH_LOGW("api", "%s: auto-creating topic '%.*s' failed: %s", req->peer, name.len,
			name.p, msg);
		topic_error(t, name, err ? err : CH_KERR_UNKNOWN_SERVER_ERROR, ops);
		return;
	}
	CH_LOGI("api", "auto-created topic '%s' with %d partitions for %s", tp->name,
		tp->partitions, req->peer);
	fill_topic(req, t, tp, self, ops);
}

void
ch_api_Metadata(ch_req *req)
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
	resp.Brokers[0].Host = ch_str_c(bk->adv_host);
	resp.Brokers[0].Port = bk->adv_port;
	resp.Brokers[0].Rack = ch_str_c(bk->cfg->broker_rack);
	resp.ClusterId = ch_str_c(bk->cluster_id);
	resp.ControllerId = bk->node_id;
	resp.ClusterAuthorizedOperations =
		rq->IncludeClusterAuthorizedOperations ? CH_CLUSTER_AUTHORIZED_OPS : INT32_MIN;
	bool ops = rq->IncludeTopicAuthorizedOperations;
	bool allow_create = req->version < 4 || rq->AllowAutoTopicCreation;

	/* All topics: a null list (v1+), or an empty list in v0. */
	if (rq->Topics_n < 0 || (rq->Topics_n == 0 && req->version == 0)) {
		size_t n = ch_topics_count(bk->topics);
		resp.Topics = CH_REQ_NEW_ARRAY(req, resp_topic, n);
		resp.Topics_n = (int32_t)n;
		for (size_t i = 0; i < n; i++)
			fill_topic(req, &resp.Topics[i], ch_topics_at(bk->topics, i), self, ops);
		ch_api_send(req, &resp);
		return;
	}

	resp.Topics = CH_REQ_NEW_ARRAY(req, resp_topic, rq->Topics_n);
	resp.Topics_n = rq->Topics_n;
	for (int32_t i = 0; i < rq->Topics_n; i++) {
		const ch_MetadataRequest_MetadataRequestTopic *q = &rq->Topics[i];
		resp_topic *t = &resp.Topics[i];
		if (ch_str_is_null(q->Name)) {
			/* v10+: by topic id. */
			const ch_topic *tp = ch_uuid_is_zero(&q->TopicId)
						     ? NULL
						     : ch_topics_find_id(bk->topics, &q->TopicId);
			if (tp) {
				fill_topic(req, t, tp, self, ops);
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
		if (tp)
			fill_topic(req, t, tp, self, ops);
		else
			missing_topic(req, t, q->Name, allow_create, self, ops);
	}
	ch_api_send(req, &resp);
}
