/*
 * ch_api_producer_id.c: InitProducerId v0-v5 for idempotent producers
 * (KIP-98). A fresh producer id, epoch 0, every time: without transactions
 * there is nothing to fence. Ids come from ch_parts_next_producer_id, seeded
 * from the wall clock so they do not repeat across restarts. A
 * transactional id is refused: cohort has no transaction coordinator.
 */
#include "api/ch_api.h"
#include "api/ch_broker.h"
#include "broker/ch_parts.h"
#include "common/ch_log.h"
#include "proto/generated/ch_errors.h"

void
ch_api_InitProducerId(ch_req *req)
{
	const ch_InitProducerIdRequest *rq = req->body;
	ch_InitProducerIdResponse resp;
	ch_InitProducerIdResponse_init(&resp);
	resp.ProducerId = -1;
	resp.ProducerEpoch = -1;
	if (!ch_str_is_null(rq->TransactionalId)) {
		resp.ErrorCode = CH_KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
	} else if (req->version >= 3 && rq->ProducerId >= 0) {
		/* KIP-360: bump the epoch of a known producer. */
		resp.ProducerId = rq->ProducerId;
		resp.ProducerEpoch = (int16_t)(rq->ProducerEpoch + 1);
		if (resp.ProducerEpoch < 0) {
			resp.ProducerId = ch_parts_next_producer_id(req->bk->parts);
			resp.ProducerEpoch = 0;
		}
	} else {
		resp.ProducerId = ch_parts_next_producer_id(req->bk->parts);
		resp.ProducerEpoch = 0;
	}
	CH_LOGD("api", "%s: InitProducerId -> %lld/%d", req->peer, (long long)resp.ProducerId,
		resp.ProducerEpoch);
	ch_api_send(req, &resp);
}
