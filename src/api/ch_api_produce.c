/*
 * ch_api_produce.c: Produce v3-v11 (record batch v2 only).
 *
 * Each partition's records go through ch_part_append, the same path the
 * coordinator uses, which validates (CRC, sizes, producer sequences) and
 * appends. acks=0 sends nothing (or closes the connection if a partition
 * failed, as Kafka does: it is the only way to tell the producer), acks=1
 * answers at once (the data is in the page cache; log.flush.interval.* may
 * ask for a sync), acks=-1 (all) parks the request until every appended
 * partition is fsynced: the fsync worker batches the syncs (group commit,
 * ch_parts.h), so many producers' requests share one fdatasync.
 *
 * The batches are rewritten in place (offsets, leader epoch, LogAppendTime)
 * inside the request frame, which the server keeps, unchanged and at the
 * same address, until the response is submitted (ch_server.h).
 */
#include <string.h>

#include "api/ch_api.h"
#include "api/ch_broker.h"
#include "broker/ch_parts.h"
#include "common/ch_log.h"
#include "meta/ch_topics.h"
#include "proto/generated/ch_errors.h"

typedef struct produce_ctx {
	ch_req *req;
	ch_ProduceResponse resp;
	int pending; /* partitions waiting for their fsync */
	bool failed; /* a partition was answered with an error */
} produce_ctx;

typedef struct produce_wait {
	produce_ctx *ctx;
	ch_ProduceResponse_PartitionProduceResponse *pr;
} produce_wait;

static void
on_durable(void *ud, int16_t kerr, int64_t base, int64_t last)
{
	(void)base;
	(void)last;
	produce_wait *w = ud;
	if (kerr) {
		w->pr->ErrorCode = kerr;
		w->pr->BaseOffset = -1;
	}
	if (--w->ctx->pending == 0)
		ch_api_send(w->ctx->req, &w->ctx->resp);
}

void
ch_api_Produce(ch_req *req)
{
	const ch_ProduceRequest *rq = req->body;
	ch_broker *bk = req->bk;
	produce_ctx *ctx = ch_req_alloc(req, sizeof(*ctx));
	ctx->req = req;
	ch_ProduceResponse_init(&ctx->resp);
	int16_t acks = rq->Acks;
	bool acks_ok = acks == 0 || acks == 1 || acks == -1;
	int32_t nt = rq->TopicData_n > 0 ? rq->TopicData_n : 0;
	ctx->resp.Responses = CH_REQ_NEW_ARRAY(req, ch_ProduceResponse_TopicProduceResponse, nt);
	ctx->resp.Responses_n = nt;
	ctx->pending = 1; /* held until the loop below is done */
	for (int32_t i = 0; i < nt; i++) {
		const ch_ProduceRequest_TopicProduceData *td = &rq->TopicData[i];
		ch_ProduceResponse_TopicProduceResponse *tr = &ctx->resp.Responses[i];
		int32_t np = td->PartitionData_n > 0 ? td->PartitionData_n : 0;
		tr->Name = td->Name;
		tr->PartitionResponses =
			CH_REQ_NEW_ARRAY(req, ch_ProduceResponse_PartitionProduceResponse, np);
		tr->PartitionResponses_n = np;
		const ch_topic *t = td->Name.len > 0
					    ? ch_topics_find(bk->topics, td->Name.p, (size_t)td->Name.len)
					    : NULL;
		for (int32_t k = 0; k < np; k++) {
			const ch_ProduceRequest_PartitionProduceData *pd = &td->PartitionData[k];
			ch_ProduceResponse_PartitionProduceResponse *pr = &tr->PartitionResponses[k];
			pr->Index = pd->Index;
			pr->BaseOffset = -1;
			pr->LogAppendTimeMs = -1;
			pr->LogStartOffset = -1;
			pr->CurrentLeader.LeaderId = -1;
			pr->CurrentLeader.LeaderEpoch = -1;
			int16_t kerr = 0;
			ch_part *p = NULL;
			if (!acks_ok)
				kerr = CH_KERR_INVALID_REQUIRED_ACKS;
			else if (!t)
				kerr = CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
			else if (t->internal)
				kerr = CH_KERR_INVALID_TOPIC_EXCEPTION;
			else if (pd->Records.len <= 0)
				kerr = CH_KERR_INVALID_RECORD;
			else
				p = ch_parts_get(bk->parts, td->Name.p, (size_t)td->Name.len,
						 pd->Index, &kerr);
			if (p) {
				ch_plog_append_info info;
				produce_wait *w = NULL;
				if (acks == -1) {
					w = ch_req_alloc(req, sizeof(*w));
					w->ctx = ctx;
					w->pr = pr;
				}
				kerr = ch_part_append(p, (uint8_t *)pd->Records.p,
						      (size_t)pd->Records.len,
						      acks == -1 ? on_durable : NULL, w, &info);
				if (!kerr) {
					pr->BaseOffset = info.base_offset;
					pr->LogAppendTimeMs = info.log_append_time;
					pr->LogStartOffset = info.log_start_offset;
					if (acks == -1)
						ctx->pending++;
				}
			}
			pr->ErrorCode = kerr;
			ctx->failed |= kerr != 0;
			if (kerr)
				CH_LOGD("api", "%s: produce to %.*s-%d: error %d (%s)", req->peer,
					td->Name.len, td->Name.p, pd->Index, kerr,
					ch_kerr_message(kerr));
		}
	}
	if (acks == 0) {
		/* No response is sent, so an error can only be told by closing
		 * the connection: the producer then refreshes its metadata
		 * (KafkaApis.handleProduceRequest does the same). */
		if (ctx->failed) {
			CH_LOGI("api", "%s: closing the connection: a produce with acks=0 failed "
				"(correlation id %d)",
				req->peer, req->corr);
			ch_api_close(req, NULL);
			return;
		}
		ch_api_send_none(req);
		return;
	}
	if (--ctx->pending == 0)
		ch_api_send(req, &ctx->resp);
}
