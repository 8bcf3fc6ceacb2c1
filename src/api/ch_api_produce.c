/*
 * ch_api_produce.c: Produce v0-v11. v3+ carry record batches v2; v0-v2
 * carry message sets of magic 0 or 1 (or batches v2, which Kafka takes
 * there too), converted into one batch v2 per partition before the append
 * as Kafka 3.9 converts them (ch_api_legacy.h, log/ch_legacy.h).
 *
 * Each partition's records go through ch_part_append, the same path the
 * coordinator uses, which validates (CRC, sizes, producer sequences) and
 * appends. acks=0 sends nothing (or closes the connection if a partition
 * failed, as Kafka does: it is the only way to tell the producer), acks=1
 * answers at once (the data is in the page cache; log.flush.interval.* may
 * ask for a sync), acks=-1 (all) parks the request until every appended
 * partition is fsynced: the fsync worker batches the syncs (group commit,
 * ch_log_manager.h), so many producers' requests share one fdatasync.
 *
 * The batches are rewritten in place (offsets, leader epoch, LogAppendTime)
 * inside the request frame, which the server keeps, unchanged and at the
 * same address, until the response is submitted (ch_server.h).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "api/ch_api.h"
#include "proto/ch_acl.h"
#include "quota/ch_quota.h"
#include "api/ch_api_legacy.h"
#include "broker/ch_broker.h"
#include "broker/ch_log_manager.h"
#include "common/ch_log.h"
#include "config/ch_config.h"
#include "log/ch_legacy.h"
#include "log/ch_plog.h"
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

/* acks=all: one partition's append is durable (kerr 0) or failed; the
 * response goes once the last partition is in. */
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

/* Kafka's ProduceRequest.validateRecords (v3+), before anything is
 * appended, and LogValidator's rule for batches v2 that v0-v2 carry: the
 * records must hold exactly one whole batch, of magic 2. Like
 * Kafka's batch iterator, an incomplete batch at the end is not a batch: it
 * is left out of *use_len (Kafka trims it the same way). A batch length
 * below the minimum is a corrupt frame. */
static int16_t
one_batch(int16_t version, const uint8_t *p, size_t len, size_t *use_len)
{
	enum {
		LOG_OVERHEAD = 12,
		MIN_BATCH = 14,
		MAGIC_AT = 16,
		ATTRIBUTES_AT = 21,
		ZSTD = 4
	};
	size_t pos = 0;
	int whole = 0;
	while (len - pos >= LOG_OVERHEAD) {
		uint32_t size = (uint32_t)p[pos + 8] << 24 | (uint32_t)p[pos + 9] << 16 |
				(uint32_t)p[pos + 10] << 8 | p[pos + 11];
		if (size < MIN_BATCH || size > INT32_MAX)
			return CH_KERR_CORRUPT_MESSAGE;
		if (len - pos - LOG_OVERHEAD < size)
			break;
		if (++whole == 1)
			*use_len = LOG_OVERHEAD + size;
		pos += LOG_OVERHEAD + size;
	}
	if (whole != 1 || p[MAGIC_AT] != 2)
		return CH_KERR_INVALID_RECORD;
	/* v0-v2 are not checked for zstd (validateRecords is for v3+) */
	if (version >= 3 && version < 7 && (p[ATTRIBUTES_AT + 1] & 0x7) == ZSTD &&
	    *use_len > ATTRIBUTES_AT + 1)
		return CH_KERR_UNSUPPORTED_COMPRESSION_TYPE;
	return CH_KERR_NONE;
}

/* The append errors Kafka's ReplicaManager answers with no log start offset
 * (UNKNOWN_LOG_APPEND_INFO); every other one carries the partition's. */
static bool
append_error_without_start(int16_t kerr)
{
	return kerr == CH_KERR_UNKNOWN_TOPIC_OR_PARTITION ||
	       kerr == CH_KERR_NOT_LEADER_OR_FOLLOWER || kerr == CH_KERR_MESSAGE_TOO_LARGE ||
	       kerr == CH_KERR_RECORD_LIST_TOO_LARGE || kerr == CH_KERR_CORRUPT_MESSAGE ||
	       kerr == CH_KERR_KAFKA_STORAGE_ERROR;
}

/* ---- record errors (v8+): what Kafka's RecordValidationException carries ---- */

typedef struct rec_errs {
	ch_req *req;
	const char *topic;
	int32_t partition;
	int64_t now, before_max, after_max;
	ch_ProduceResponse_BatchIndexAndErrorMessage *out; /* NULL: count only */
	int32_t n;
} rec_errs;

static ch_str req_printf(ch_req *req, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* printf into req's arena: the formatted text as a NUL-terminated ch_str, freed with req. */
static ch_str
req_printf(ch_req *req, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *p = ch_req_alloc(req, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return (ch_str){p, n};
}

/* Java's long arithmetic, which the window in Kafka's message uses. */
static int64_t
java_add(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* LogValidator's RecordError messages, word for word. */
static void
on_record_error(void *ud, const ch_plog_record_error *e)
{
	rec_errs *r = ud;
	if (r->out) {
		ch_str m;
		if (e->why == CH_PLOG_REC_NO_KEY)
			m = req_printf(r->req,
				       "Compacted topic cannot accept message without key in "
				       "topic partition %s-%" PRId32,
				       r->topic, r->partition);
		else if (e->why == CH_PLOG_REC_TS_RANGE)
			m = req_printf(r->req,
				       "Timestamp %" PRId64 " of message with offset %" PRId64
				       " is out of range. The timestamp should be within [%" PRId64
				       ", %" PRId64 "]",
				       e->timestamp, e->offset, java_add(r->now, -r->before_max),
				       java_add(r->now, r->after_max));
		else
			m = req_printf(
				r->req,
				"Invalid timestamp type in message DefaultRecord(offset=%" PRId64
				", timestamp=%" PRId64 ", key=%" PRId32 " bytes, value=%" PRId32
				" bytes). Producer should not "
				"set timestamp type to LogAppendTime.",
				e->offset, e->timestamp, e->key_len, e->value_len);
		r->out[r->n].BatchIndex = e->index;
		r->out[r->n].BatchIndexErrorMessage = m;
	}
	r->n++;
}

/*
 * A topic's compression.type other than producer, for a record batch v2 whose
 * codec differs: Kafka's LogValidator rebuilds the batch with the topic's
 * codec (validateMessagesAndAssignOffsetsCompressed with targetCompression).
 * On success *data and *len point at the rebuilt batch in conv; otherwise
 * (not a whole good batch: the append reports it) they are left as they were.
 * MEMORY: conv holds the rebuilt batch; inflating is bounded by
 * CH_PLOG_MAX_INFLATE as the append's checks are.
 */
static void
recompress(ch_req *req, const ch_topic *t, uint8_t **data, size_t *len, ch_buf *conv)
{
	ch_batch_hdr h;
	if (ch_batch_parse_hdr(*data, *len, 0, &h) != CH_BATCH_OK)
		return;
	ch_topic_config tc;
	ch_topic_config_resolve(req->bk->cfg, t->configs, t->n_configs, &tc);
	if (tc.compression_type == CH_COMPRESSION_PRODUCER ||
	    (int)tc.compression_type == ch_batch_compression(&h))
		return;
	if (ch_batch_recompress(*data, *len, tc.compression_type, CH_PLOG_MAX_INFLATE, conv) !=
	    CH_OK) {
		ch_buf_reset(conv);
		return;
	}
	*data = conv->data;
	*len = conv->len;
}

/*
 * After the append refused the batch at data with kerr: when records were in
 * error (not the batch), the response's RecordErrors and ErrorMessage as
 * Kafka's RecordValidationException gives them (ProduceResponse v8+).
 */
static void
record_errors(ch_req *req, const ch_topic *t, int32_t partition, const uint8_t *data, size_t len,
	      int64_t now, int16_t kerr, ch_ProduceResponse_PartitionProduceResponse *pr)
{
	ch_batch_hdr h;
	if (ch_batch_check(data, len, 0, true, &h) != CH_BATCH_OK)
		return;
	ch_topic_config tc;
	ch_topic_config_resolve(req->bk->cfg, t->configs, t->n_configs, &tc);
	ch_plog_config pc;
	ch_plog_config_default(&pc);
	pc.cleanup_compact = (tc.cleanup_policy & CH_CLEANUP_COMPACT) != 0;
	pc.log_append_time = tc.message_timestamp_type == CH_TIMESTAMP_LOG_APPEND_TIME;
	pc.ts_before_max_ms = tc.message_timestamp_before_max_ms;
	pc.ts_after_max_ms = tc.message_timestamp_after_max_ms;
	rec_errs r = {req,  t->name, partition, now, pc.ts_before_max_ms, pc.ts_after_max_ms,
		      NULL, 0};
	int64_t max_ts;
	if (ch_plog_check_records(&pc, data, &h, now, &max_ts, on_record_error, &r) != kerr ||
	    r.n == 0)
		return; /* the batch itself was refused: no record errors */
	r.out = CH_REQ_NEW_ARRAY(req, ch_ProduceResponse_BatchIndexAndErrorMessage, r.n);
	r.n = 0;
	ch_plog_check_records(&pc, data, &h, now, &max_ts, on_record_error, &r);
	pr->RecordErrors = r.out;
	pr->RecordErrors_n = r.n;
	if (kerr == CH_KERR_INVALID_TIMESTAMP) {
		pr->ErrorMessage = CH_STR_LIT(
			"One or more records have been rejected due to invalid timestamp");
		return;
	}
	/* Java's List.toString of the first three RecordErrors */
	ch_buf b;
	ch_buf_init(&b);
	for (int32_t i = 0; i < r.n && i < 3; i++) {
		const ch_str *m = &r.out[i].BatchIndexErrorMessage;
		char head[64];
		snprintf(head, sizeof(head), "%sRecordError(batchIndex=%" PRId32 ", message='",
			 i ? ", " : "", r.out[i].BatchIndex);
		ch_buf_append(&b, head, strlen(head));
		ch_buf_append(&b, m->p, (size_t)m->len);
		ch_buf_append(&b, "')", 2);
	}
	pr->ErrorMessage = req_printf(req,
				      "One or more records have been rejected due to %" PRId32
				      " record errors in total, and only showing the first "
				      "three errors at most: [%.*s]",
				      r.n, (int)b.len, b.data ? (const char *)b.data : "");
	ch_buf_free(&b);
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
	/* producer_byte_rate counts the whole request, as Kafka's does; the
	 * answer carries the throttle time and the connection is muted. */
	int32_t throttle = ch_api_quota_record(req, CH_QK_PRODUCER_BYTE_RATE, (double)req->size);
	if (req->version >= 1)
		ctx->resp.ThrottleTimeMs = throttle;
	ch_api_quota_throttle(req, throttle);
	for (int32_t i = 0; i < nt; i++) {
		const ch_ProduceRequest_TopicProduceData *td = &rq->TopicData[i];
		ch_ProduceResponse_TopicProduceResponse *tr = &ctx->resp.Responses[i];
		int32_t np = td->PartitionData_n > 0 ? td->PartitionData_n : 0;
		tr->Name = td->Name;
		tr->PartitionResponses =
			CH_REQ_NEW_ARRAY(req, ch_ProduceResponse_PartitionProduceResponse, np);
		tr->PartitionResponses_n = np;
		const ch_topic *t = td->Name.len > 0 ? ch_topics_find(bk->topics, td->Name.p,
								      (size_t)td->Name.len)
						     : NULL;
		/* WRITE on the topic, before whether it exists (KafkaApis). */
		bool denied = !ch_api_allowed_str(req, CH_ACL_WRITE, CH_RES_TOPIC, td->Name);
		for (int32_t k = 0; k < np; k++) {
			const ch_ProduceRequest_PartitionProduceData *pd = &td->PartitionData[k];
			ch_ProduceResponse_PartitionProduceResponse *pr =
				&tr->PartitionResponses[k];
			pr->Index = pd->Index;
			pr->BaseOffset = -1;
			pr->LogAppendTimeMs = -1;
			pr->LogStartOffset = -1;
			pr->CurrentLeader.LeaderId = -1;
			pr->CurrentLeader.LeaderEpoch = -1;
			pr->ErrorMessage = CH_STR_NULL; /* Kafka sends one for record errors only */
			int16_t kerr = 0;
			ch_part *p = NULL;
			if (!acks_ok)
				kerr = CH_KERR_INVALID_REQUIRED_ACKS;
			else if (denied)
				kerr = CH_KERR_TOPIC_AUTHORIZATION_FAILED;
			else if (!t)
				kerr = CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
			else if (t->internal)
				kerr = CH_KERR_INVALID_TOPIC_EXCEPTION;
			else if (pd->Records.len <= 0 && req->version >= 3)
				kerr = CH_KERR_INVALID_RECORD;
			else
				p = ch_log_manager_get(bk->logs, td->Name.p, (size_t)td->Name.len,
						       pd->Index, &kerr);
			uint8_t *data = (uint8_t *)pd->Records.p;
			size_t len = pd->Records.len > 0 ? (size_t)pd->Records.len : 0;
			ch_buf conv;
			ch_buf_init(&conv);
			if (p && req->version <= 2 && ch_legacy_is_legacy(data, len)) {
				kerr = ch_api_legacy_up(req, t, data, len, &conv);
				data = conv.data;
				len = conv.len;
			} else if (p) {
				kerr = one_batch(req->version, data, len, &len);
			}
			if (kerr)
				p = NULL;
			const uint8_t *src = data;
			size_t src_len = len;
			if (p && len > 0 && conv.len == 0)
				recompress(req, t, &data, &len, &conv);
			/* Nothing whole to append (an empty set, a partial message):
			 * Kafka answers NONE with offset -1. */
			if (p && len == 0)
				p = NULL;
			if (p) {
				ch_plog_append_info info;
				produce_wait *w = NULL;
				if (acks == -1) {
					w = ch_req_alloc(req, sizeof(*w));
					w->ctx = ctx;
					w->pr = pr;
				}
				kerr = ch_part_append(p, data, len, acks == -1 ? on_durable : NULL,
						      w, &info);
				if ((kerr == CH_KERR_INVALID_TIMESTAMP ||
				     kerr == CH_KERR_INVALID_RECORD) &&
				    req->version >= 8)
					record_errors(req, t, pd->Index, src, src_len, info.now_ms,
						      kerr, pr);
				if (kerr && !append_error_without_start(kerr))
					pr->LogStartOffset = ch_plog_start_offset(ch_part_log(p));
				if (!kerr) {
					pr->BaseOffset = info.base_offset;
					pr->LogAppendTimeMs = info.log_append_time;
					pr->LogStartOffset = info.log_start_offset;
					if (acks == -1)
						ctx->pending++;
				}
			}
			ch_buf_free(&conv);
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
			CH_LOGI("api",
				"%s: closing the connection: a produce with acks=0 failed "
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
