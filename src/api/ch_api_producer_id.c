/*
 * ch_api_producer_id.c: InitProducerId v0-v5 for idempotent producers
 * (KIP-98), answered as Kafka answers a request without a transactional id
 * (KafkaApis.handleInitProducerIdRequest, then
 * TransactionCoordinator.handleInitProducerId):
 *
 *   ProducerId / ProducerEpoch (v3+)  answer
 *   -1 / -1 (and v0-v2)               a fresh producer id, epoch 0
 *   exactly one of them -1            INVALID_REQUEST
 *   both set (KIP-360)                a fresh producer id, epoch 0: Kafka
 *                                     "blindly accepts" and never bumps an
 *                                     idempotent producer's epoch, so no
 *                                     client can fence another's id here
 *
 * Ids come from ch_log_manager_next_producer_id, seeded from the wall clock so
 * they do not repeat across restarts. A transactional id (even "") gets
 * TRANSACTIONAL_ID_AUTHORIZATION_FAILED, what Kafka answers when the
 * transactional id may not be used, and what FindCoordinator answers for
 * it too: cohort has no transaction coordinator, and both clients
 * (librdkafka, Java) treat that error as fatal instead of retrying.
 */
#include "api/ch_api.h"
#include "proto/ch_acl.h"
#include "broker/ch_broker.h"
#include "broker/ch_log_manager.h"
#include "common/ch_log.h"
#include "proto/generated/ch_errors.h"

/* An idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on
 * some topic (KafkaApis.handleInitProducerIdRequest). */
static bool
producer_allowed(ch_req *req)
{
	if (!ch_api_authz_on(req) || ch_api_cluster_allowed(req, CH_ACL_IDEMPOTENT_WRITE))
		return true;
	return ch_api_allowed_any(req, CH_ACL_WRITE, CH_RES_TOPIC);
}

void
ch_api_InitProducerId(ch_req *req)
{
	const ch_InitProducerIdRequest *rq = req->body;
	ch_InitProducerIdResponse resp;
	ch_InitProducerIdResponse_init(&resp);
	resp.ProducerId = -1;
	resp.ProducerEpoch = -1;
	/* v0-v2 have no ProducerId/ProducerEpoch: the decoder leaves -1. */
	bool no_id = rq->ProducerId == -1, no_epoch = rq->ProducerEpoch == -1;
	if (!ch_str_is_null(rq->TransactionalId)) {
		resp.ErrorCode = CH_KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
	} else if (!producer_allowed(req)) {
		resp.ErrorCode = CH_KERR_CLUSTER_AUTHORIZATION_FAILED;
	} else if (no_id != no_epoch) {
		resp.ErrorCode = CH_KERR_INVALID_REQUEST;
	} else {
		resp.ProducerId = ch_log_manager_next_producer_id(req->bk->logs);
		resp.ProducerEpoch = 0;
	}
	CH_LOGD("api", "%s: InitProducerId (%lld/%d) -> %lld/%d error %d", req->peer,
		(long long)rq->ProducerId, rq->ProducerEpoch, (long long)resp.ProducerId,
		resp.ProducerEpoch, resp.ErrorCode);
	ch_api_send(req, &resp);
}
