/*
 * ch_api_list_offsets.c: ListOffsets v0-v10 (InitProducerId is in
 * ch_api_producer_id.c).
 *
 * v0 (Kafka 3.9 serves it, 4.0 dropped it: KIP-896) is the old form: up to
 * MaxNumOffsets segment base offsets, newest first, for -1 (the log end
 * too), -2 or a timestamp matched against segment file times
 * (ch_plog_legacy_offsets); other negative timestamps UNSUPPORTED_VERSION.
 *
 * Timestamps (KIP-79, KIP-734, KIP-1005): -1 latest (the log end offset),
 * -2 earliest (the log start offset), -3 the record with the largest
 * timestamp, -4 earliest local (= earliest: every segment is local), -5
 * earliest pending upload (none: -1), any other negative value
 * INVALID_REQUEST. Otherwise the first offset whose timestamp is >= the one
 * asked, via the time index. No such offset: offset, timestamp and leader
 * epoch -1, as Kafka answers.
 */
#include <string.h>

#include "api/ch_api.h"
#include "proto/ch_acl.h"
#include "broker/ch_broker.h"
#include "broker/ch_log_manager.h"
#include "meta/ch_topics.h"
#include "proto/generated/ch_errors.h"

/* KafkaApis.handleListOffsetRequestV0 for one partition. */
static void
list_v0(ch_req *req, ch_part *p, const ch_ListOffsetsRequest_ListOffsetsPartition *q,
	ch_ListOffsetsResponse_ListOffsetsPartitionResponse *r)
{
	if (q->MaxNumOffsets < 0) {
		/* Kafka fails allocating a negative array (UNKNOWN_SERVER_ERROR) */
		r->ErrorCode = CH_KERR_INVALID_REQUEST;
		return;
	}
	ch_plog *pl = ch_part_log(p);
	int64_t *offs = CH_REQ_NEW_ARRAY(req, int64_t, ch_plog_segment_count(pl) + 1);
	int32_t n = 0;
	int16_t kerr = 0;
	ch_broker *bk = req->bk;
	ch_plog_legacy_offsets(pl, q->Timestamp, q->MaxNumOffsets, bk->wall_ms(bk->shell), offs, &n,
			       &kerr);
	r->ErrorCode = kerr;
	r->OldStyleOffsets = kerr ? NULL : offs;
	r->OldStyleOffsets_n = kerr ? 0 : n;
}

/* One partition of a ListOffsets request: the offset (and timestamp) its
 * Timestamp asks for, or the partition's error with offset, timestamp and
 * leader epoch -1; v0 answers in its old form (list_v0). */
static void
list_one(ch_req *req, const ch_ListOffsetsRequest_ListOffsetsTopic *tq,
	 const ch_ListOffsetsRequest_ListOffsetsPartition *q,
	 ch_ListOffsetsResponse_ListOffsetsPartitionResponse *r)
{
	ch_broker *bk = req->bk;
	r->PartitionIndex = q->PartitionIndex;
	r->Timestamp = -1;
	r->Offset = -1;
	r->LeaderEpoch = 0;
	r->OldStyleOffsets_n = 0;
	if (req->version == 0 && q->Timestamp < -2) {
		r->ErrorCode = CH_KERR_UNSUPPORTED_VERSION;
		return;
	}
	int16_t kerr = CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	ch_part *p = tq->Name.len > 0
			     ? ch_log_manager_get(bk->logs, tq->Name.p, (size_t)tq->Name.len,
						  q->PartitionIndex, &kerr)
			     : NULL;
	if (!p) {
		r->ErrorCode = kerr;
		r->LeaderEpoch = -1;
		return;
	}
	if (req->version == 0) {
		list_v0(req, p, q, r);
		return;
	}
	ch_plog *pl = ch_part_log(p);
	kerr = 0;
	switch (q->Timestamp) {
	case -1:
		r->Offset = ch_plog_end_offset(pl);
		break;
	case -2:
	case -4:
		r->Offset = ch_plog_start_offset(pl);
		break;
	case -3:
		ch_plog_max_timestamp(pl, &r->Offset, &r->Timestamp, &kerr);
		break;
	case -5:
		break;
	default:
		if (q->Timestamp < 0)
			kerr = CH_KERR_INVALID_REQUEST;
		else
			ch_plog_offset_for_time(pl, q->Timestamp, &r->Offset, &r->Timestamp, &kerr);
		break;
	}
	if (kerr) {
		r->Offset = -1;
		r->Timestamp = -1;
	}
	if (r->Offset < 0) /* no such offset: no epoch either (Kafka's -1/-1/-1) */
		r->LeaderEpoch = -1;
	r->ErrorCode = kerr;
}

void
ch_api_ListOffsets(ch_req *req)
{
	const ch_ListOffsetsRequest *rq = req->body;
	ch_ListOffsetsResponse resp;
	ch_ListOffsetsResponse_init(&resp);
	int32_t nt = rq->Topics_n > 0 ? rq->Topics_n : 0;
	resp.Topics = CH_REQ_NEW_ARRAY(req, ch_ListOffsetsResponse_ListOffsetsTopicResponse, nt);
	resp.Topics_n = nt;
	for (int32_t i = 0; i < nt; i++) {
		const ch_ListOffsetsRequest_ListOffsetsTopic *tq = &rq->Topics[i];
		ch_ListOffsetsResponse_ListOffsetsTopicResponse *tr = &resp.Topics[i];
		int32_t np = tq->Partitions_n > 0 ? tq->Partitions_n : 0;
		tr->Name = tq->Name;
		tr->Partitions = CH_REQ_NEW_ARRAY(
			req, ch_ListOffsetsResponse_ListOffsetsPartitionResponse, np);
		tr->Partitions_n = np;
		/* DESCRIBE on the topic (KafkaApis: before anything else). */
		bool denied = !ch_api_allowed_str(req, CH_ACL_DESCRIBE, CH_RES_TOPIC, tq->Name);
		for (int32_t k = 0; k < np; k++) {
			ch_ListOffsetsResponse_ListOffsetsPartitionResponse *r = &tr->Partitions[k];
			if (!denied) {
				list_one(req, tq, &tq->Partitions[k], r);
				continue;
			}
			r->PartitionIndex = tq->Partitions[k].PartitionIndex;
			r->ErrorCode = CH_KERR_TOPIC_AUTHORIZATION_FAILED;
			r->Timestamp = -1;
			r->Offset = -1;
			r->LeaderEpoch = -1;
			r->OldStyleOffsets_n = 0;
		}
	}
	ch_api_send(req, &resp);
}
