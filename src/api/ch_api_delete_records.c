/*
 * ch_api_delete_records.c: DeleteRecords v0-v2 (KafkaApis
 * handleDeleteRecordsRequest, ReplicaManager.deleteRecords).
 *
 * Per partition, in Kafka's order: a topic or partition the registry does
 * not have is UNKNOWN_TOPIC_OR_PARTITION; an internal topic
 * (__consumer_offsets) INVALID_TOPIC_EXCEPTION; then the partition moves its
 * log start offset (ch_part_delete_records: POLICY_VIOLATION without
 * cleanup.policy=delete, OFFSET_OUT_OF_RANGE for negative offsets other
 * than -1, the high watermark, and past it). The low watermark answered is
 * the new log start offset. The answer waits until every partition's new
 * start is durable (fsynced on a worker), so a restart never brings deleted
 * records back; with one replica there is nothing else to wait for, so
 * TimeoutMs is not used.
 */
#include <string.h>

#include "api/ch_api.h"
#include "proto/ch_acl.h"
#include "broker/ch_broker.h"
#include "broker/ch_log_manager.h"
#include "proto/generated/ch_errors.h"

typedef ch_DeleteRecordsResponse_DeleteRecordsPartitionResult dr_part;
typedef ch_DeleteRecordsResponse_DeleteRecordsTopicResult dr_topic;

typedef struct dr_ctx {
	ch_req *req;
	ch_DeleteRecordsResponse resp;
	int pending; /* partitions not answered yet, + 1 while the handler runs */
} dr_ctx;

typedef struct dr_slot {
	dr_ctx *ctx;
	dr_part *res;
} dr_slot;

static void
dr_settle(dr_ctx *c)
{
	if (--c->pending == 0)
		ch_api_send(c->req, &c->resp);
}

/* ch_part_delete_records' callback for one partition: records its error and low watermark (-1
 * on error), maybe before the handler returns; dr_settle sends the response after the last. */
static void
dr_answer(void *ud, int16_t kerr, int64_t low_watermark)
{
	dr_slot *s = ud;
	s->res->ErrorCode = kerr;
	s->res->LowWatermark = kerr ? -1 : low_watermark;
	dr_settle(s->ctx);
}

void
ch_api_DeleteRecords(ch_req *req)
{
	const ch_DeleteRecordsRequest *rq = req->body;
	ch_broker *bk = req->bk;
	dr_ctx *ctx = ch_req_alloc(req, sizeof(*ctx));
	ctx->req = req;
	ctx->pending = 1;
	ch_DeleteRecordsResponse_init(&ctx->resp);
	int32_t nt = rq->Topics_n > 0 ? rq->Topics_n : 0;
	ctx->resp.Topics = CH_REQ_NEW_ARRAY(req, dr_topic, nt);
	ctx->resp.Topics_n = nt;
	for (int32_t i = 0; i < nt; i++) {
		const ch_DeleteRecordsRequest_DeleteRecordsTopic *t = &rq->Topics[i];
		dr_topic *rt = &ctx->resp.Topics[i];
		int32_t np = t->Partitions_n > 0 ? t->Partitions_n : 0;
		rt->Name = t->Name;
		rt->Partitions = CH_REQ_NEW_ARRAY(req, dr_part, np);
		rt->Partitions_n = np;
		size_t len = (size_t)(t->Name.len > 0 ? t->Name.len : 0);
		bool internal = ch_topic_name_is_internal(t->Name.p, len);
		/* DELETE on the topic, before whether it exists (KafkaApis). */
		bool denied = !ch_api_allowed_str(req, CH_ACL_DELETE, CH_RES_TOPIC, t->Name);
		for (int32_t k = 0; k < np; k++) {
			const ch_DeleteRecordsRequest_DeleteRecordsPartition *q = &t->Partitions[k];
			dr_part *r = &rt->Partitions[k];
			r->PartitionIndex = q->PartitionIndex;
			r->LowWatermark = -1;
			if (denied) {
				r->ErrorCode = CH_KERR_TOPIC_AUTHORIZATION_FAILED;
				continue;
			}
			int16_t kerr;
			ch_part *p = ch_log_manager_get(bk->logs, t->Name.p, len, q->PartitionIndex,
							&kerr);
			if (p && internal)
				kerr = CH_KERR_INVALID_TOPIC_EXCEPTION;
			if (!p || internal) {
				r->ErrorCode = kerr;
				continue;
			}
			dr_slot *s = ch_req_alloc(req, sizeof(*s));
			s->ctx = ctx;
			s->res = r;
			ctx->pending++;
			ch_part_delete_records(p, q->Offset, dr_answer, s);
		}
	}
	dr_settle(ctx);
}
