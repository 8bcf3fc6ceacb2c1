/*
 * ch_api_fetch.c: Fetch v0-v17 for consumers (v13+ name topics by id).
 *
 * FLOW. A fetch is first scanned: for each partition, the log slice at the
 * fetch offset (ch_plog_read), bounded by PartitionMaxBytes and by what is
 * left of MaxBytes (KIP-74); only the first batch of the response may be
 * larger, and is then returned whole, as Kafka does, so a consumer cannot
 * stall on a batch larger than its limits. If the slices add up to
 * MinBytes (capped at MaxBytes, as Kafka caps it), or MaxWaitMs is 0, or a
 * partition has an error, the response goes out at once. Otherwise the fetch parks: a ch_part_watch on each partition adds the
 * bytes appended there, and once they reach MinBytes (or at MaxWaitMs, or
 * when a partition goes away) a zero-delay timer answers it with a fresh
 * scan. The timer keeps watch callbacks from answering inside an append.
 *
 * ZERO COPY. The response is encoded here rather than by the generated
 * codec: the records field of a partition is a length-prefixed byte string,
 * and its bytes are a file range of a segment. The encoder writes the
 * fields up to and including the length prefix into a memory chunk, adds
 * the file range as a file chunk (sent with sendfile, holding a segment
 * reference until sent), and goes on in a new memory chunk. The layout is
 * the generated encoder's (ch_msg_FetchResponse.c): the api unit tests
 * (src/api/tests: api_data with records, api_table with random requests)
 * decode our output at every version with the generated decoder, which
 * must consume every byte, and re-encode it to the very same bytes.
 *
 * OLD VERSIONS (Kafka 3.9 serves them, 4.0 dropped them: KIP-896). v0-v3
 * read magic 0 (v0-v1) or magic 1 (v2-v3) message sets: each partition's
 * slice is down-converted as it is sent (a made chunk, ch_api_legacy.h),
 * its records field sized as Kafka's LazyDownConversionRecords sizes it
 * (log/ch_legacy.h: at least the slice, at least the first converted
 * batch). v0-v2 have no MaxBytes and a hard PartitionMaxBytes (Kafka's
 * FetchParams.hardMaxBytesLimit): a slice is cut at the limit even inside
 * its first batch, which then converts to nothing. A topic whose
 * compression.type is zstd answers v0-v9 UNSUPPORTED_COMPRESSION_TYPE, as
 * does a first batch compressed with zstd for v0-v3; KAFKA_STORAGE_ERROR is
 * NOT_LEADER_OR_FOLLOWER for v0-v5 (clients that old do not know it).
 *
 * SESSIONS (KIP-227): cohort creates none. Every request is a full fetch
 * and the response's SessionId is 0, which tells clients asking for a
 * session (epoch 0) that they did not get one; an incremental request
 * (SessionId != 0 or epoch > 0) gets FETCH_SESSION_ID_NOT_FOUND.
 * IsolationLevel is accepted: without transactions, last stable offset =
 * high watermark = log end offset, and no aborted transactions.
 */
#include <stdlib.h>
#include <string.h>

#include "api/ch_api.h"
#include "proto/ch_acl.h"
#include "quota/ch_quota.h"
#include "api/ch_api_legacy.h"
#include "broker/ch_broker.h"
#include "broker/ch_log_manager.h"
#include "common/ch_common.h"
#include "common/ch_log.h"
#include "meta/ch_topics.h"
#include "event/ch_loop.h"
#include "net/ch_resp.h"
#include "proto/ch_wr.h"
#include "proto/generated/ch_errors.h"

typedef struct fetch fetch;

typedef struct fpart {
	fetch *f;
	int32_t topic_ix; /* index into the request's Topics */
	const ch_FetchRequest_FetchPartition *q;
	ch_str name; /* resolved topic name (NULL str if unknown) */
	ch_uuid id;
	ch_part_watch watch;
	uint64_t seen;   /* ch_part_appended_bytes at the last look */
	bool zstd_topic; /* compression.type=zstd (v0-v9 cannot read it) */
	bool denied;     /* no READ on the topic: TOPIC_AUTHORIZATION_FAILED */
	/* scan results */
	int16_t err;
	int64_t hw, lso, start;
	ch_plog_slice sl;
	ch_api_down *down; /* v0-v3: the slice, being down-converted */
	int64_t down_size;
} fpart;

struct fetch {
	ch_req *req;
	ch_timer timer;
	fpart *parts;
	int32_t n;
	int64_t have; /* bytes available (scan + appended since) */
	int64_t need; /* MinBytes */
	bool parked;
};

/* ch_resp_add_file's release: drops the segment reference of encode's heap copy of a slice and
 * frees the copy, once the range is sent or the response is freed. */
static void
slice_release_cb(void *ud)
{
	ch_plog_slice *s = ud;
	ch_plog_slice_release(s);
	free(s);
}

/* The request's MaxBytes as Kafka applies it: capped by fetch.max.bytes
 * (v0-v2 have none: INT32_MAX) and by what the client's consumer_byte_rate
 * lets through in one quota window. */
static int64_t
max_bytes(ch_req *req)
{
	const ch_FetchRequest *rq = req->body;
	int64_t m = CH_MIN((int64_t)rq->MaxBytes, (int64_t)req->bk->cfg->fetch_max_bytes);
	return CH_MAX(CH_MIN(m, ch_api_quota_window_max(req, CH_QK_CONSUMER_BYTE_RATE)), 0);
}

/* Reads every partition; returns the bytes found; *any_err if a partition
 * has an error. Kafka's ReplicaManager.readFromLog: each partition reads at
 * most min(PartitionMaxBytes, what is left of MaxBytes); until some
 * partition has returned data (minOneMessage) a first batch larger than
 * that is returned whole; after that such a partition gets no records. */
static int64_t
scan(fetch *f, bool *any_err)
{
	ch_req *req = f->req;
	ch_broker *bk = req->bk;
	int64_t total = 0;
	int64_t left = max_bytes(req); /* of the response's MaxBytes */
	*any_err = false;
	for (int32_t i = 0; i < f->n; i++) {
		fpart *fp = &f->parts[i];
		memset(&fp->sl, 0, sizeof(fp->sl));
		fp->hw = fp->lso = fp->start = -1;
		fp->err = 0;
		ch_part *p = NULL;
		if (fp->denied) {
			fp->err = CH_KERR_TOPIC_AUTHORIZATION_FAILED;
			continue; /* not an error that ends a long poll (Kafka's erroneous) */
		}
		if (fp->name.len <= 0) {
			fp->err = req->version >= 13 ? CH_KERR_UNKNOWN_TOPIC_ID
						     : CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
		} else {
			p = ch_log_manager_get(bk->logs, fp->name.p, (size_t)fp->name.len,
					       fp->q->Partition, &fp->err);
		}
		if (!p) {
			*any_err = true;
			continue;
		}
		ch_plog *pl = ch_part_log(p);
		fp->hw = fp->lso = ch_plog_end_offset(pl);
		fp->start = ch_plog_start_offset(pl);
		bool min_one = total == 0 && req->version >= 3; /* v0-v2: a hard limit */
		/* read even with nothing left: the offset is still checked */
		int64_t lim = CH_MIN(CH_MAX(fp->q->PartitionMaxBytes, 0), left);
		int16_t kerr = 0;
		if (ch_plog_read(pl, fp->q->FetchOffset, lim, &fp->sl, &kerr) != CH_OK) {
			fp->err = kerr;
			memset(&fp->sl, 0, sizeof(fp->sl));
			*any_err = true;
			continue;
		}
		/* Kafka (ReplicaManager.readFromLog): minOneMessage holds only
		 * until a partition has returned data; after that a first batch
		 * larger than what is left (firstEntryIncomplete) becomes an
		 * empty record set, no error, and later partitions are still
		 * read with the remaining bytes. A partial trailing batch within
		 * the limit is sent as Kafka sends it. */
		if (fp->sl.len > lim && req->version <= 2) {
			/* LogSegment.read without minOneMessage: the bytes up to
			 * the limit, a partial batch included */
			fp->sl.len = lim;
			if (lim == 0) {
				ch_plog_slice_release(&fp->sl);
				memset(&fp->sl, 0, sizeof(fp->sl));
			}
		} else if (fp->sl.len > lim && !min_one) {
			ch_plog_slice_release(&fp->sl);
			memset(&fp->sl, 0, sizeof(fp->sl));
		}
		total += fp->sl.len;
		left = CH_MAX(left - fp->sl.len, 0);
	}
	return total;
}

/* Drops every partition's slice reference and down-conversion, leaving them empty; safe to call
 * again (answer and parking both call it). */
static void
release_slices(fetch *f)
{
	for (int32_t i = 0; i < f->n; i++) {
		if (f->parts[i].sl.len > 0)
			ch_plog_slice_release(&f->parts[i].sl);
		memset(&f->parts[i].sl, 0, sizeof(f->parts[i].sl));
		ch_api_down_free(f->parts[i].down);
		f->parts[i].down = NULL;
	}
}

/* A partition answered with an error alone (Kafka's
 * FetchResponse.partitionResponse): no offsets, no records. */
static void
part_error(fpart *fp, int16_t kerr)
{
	fp->err = kerr;
	fp->hw = fp->lso = fp->start = -1;
	if (fp->sl.len > 0)
		ch_plog_slice_release(&fp->sl);
	memset(&fp->sl, 0, sizeof(fp->sl));
}

/* What Kafka's KafkaApis.maybeConvertFetchedData does to each partition
 * for old versions: zstd topics for v0-v9, down-conversion for v0-v3. */
static void
convert_old(fetch *f)
{
	int16_t v = f->req->version;
	for (int32_t i = 0; i < f->n; i++) {
		fpart *fp = &f->parts[i];
		if (v < 10 && fp->zstd_topic) {
			part_error(fp, CH_KERR_UNSUPPORTED_COMPRESSION_TYPE);
			continue;
		}
		if (v > 3 || fp->sl.len == 0)
			continue;
		int16_t kerr = ch_api_down_begin(&fp->sl, v <= 1 ? 0 : 1, fp->q->FetchOffset,
						 &fp->down, &fp->down_size);
		if (kerr)
			part_error(fp, kerr);
	}
}

/* Encodes the response around the slices (which pass to the response). */
static ch_resp *
encode(fetch *f, int16_t top_err, int32_t throttle_ms)
{
	ch_req *req = f->req;
	const ch_FetchRequest *rq = req->body;
	int16_t v = req->version;
	bool flex = v >= 12;
	ch_resp *r = ch_resp_new();
	ch_buf b;
	ch_buf_init(&b);
	ch_api_resp_header(req, &b);
	if (v >= 1)
		ch_wr_i32(&b, throttle_ms);
	if (v >= 7) {
		ch_wr_i16(&b, top_err);
		ch_api_note_error(req, top_err);
		ch_wr_i32(&b, 0); /* SessionId: no sessions */
	}
	/* An error, or a throttled fetch (Kafka's getThrottledResponse): no topics. */
	int32_t nt = top_err || throttle_ms ? 0 : (rq->Topics_n > 0 ? rq->Topics_n : 0);
	ch_wr_array_len(&b, nt, flex);
	int32_t j = 0;
	for (int32_t t = 0; t < nt; t++) {
		const ch_FetchRequest_FetchTopic *tq = &rq->Topics[t];
		if (v <= 12)
			ch_wr_str(&b, tq->Topic, flex);
		else
			ch_wr_uuid(&b, tq->TopicId);
		int32_t np = tq->Partitions_n > 0 ? tq->Partitions_n : 0;
		ch_wr_array_len(&b, np, flex);
		for (int32_t k = 0; k < np; k++, j++) {
			fpart *fp = &f->parts[j];
			/* A partition in error has no offsets (-1, Kafka's INVALID_*).
			 * One Kafka never looked up (unknown topic or partition) has
			 * its PartitionData defaults: no aborted transactions is then
			 * an empty list; after a read, null. */
			bool unknown = fp->err == CH_KERR_UNKNOWN_TOPIC_OR_PARTITION ||
				       fp->err == CH_KERR_UNKNOWN_TOPIC_ID;
			ch_wr_i32(&b, fp->q->Partition);
			int16_t perr = fp->err == CH_KERR_KAFKA_STORAGE_ERROR && v <= 5
					       ? CH_KERR_NOT_LEADER_OR_FOLLOWER
					       : fp->err;
			ch_wr_i16(&b, perr);
			ch_api_note_error(req, perr);
			ch_wr_i64(&b, fp->err ? -1 : fp->hw);
			if (v >= 4) {
				ch_wr_i64(&b, fp->err ? -1 : fp->lso);
				if (v >= 5)
					ch_wr_i64(&b, fp->err ? -1 : fp->start);
				ch_wr_array_len(&b, unknown ? 0 : -1,
						flex); /* AbortedTransactions */
			}
			if (v >= 11)
				ch_wr_i32(&b, -1); /* PreferredReadReplica */
			int64_t len = fp->down ? fp->down_size : fp->sl.len;
			if (flex)
				ch_wr_uvarint(&b, (uint32_t)len + 1);
			else
				ch_wr_i32(&b, (int32_t)len);
			if (fp->down) {
				ch_resp_add_buf(r, &b);
				ch_api_down_add(r, fp->down);
				fp->down = NULL;
			} else if (len > 0) {
				ch_resp_add_buf(r, &b);
				ch_plog_slice *s = ch_xmalloc(sizeof(*s));
				*s = fp->sl;
				memset(&fp->sl, 0, sizeof(fp->sl));
				ch_resp_add_file(r, s->fd, (off_t)s->pos, (size_t)s->len,
						 slice_release_cb, s);
			}
			if (flex)
				ch_wr_uvarint(&b, 0); /* partition tagged fields */
		}
		if (flex)
			ch_wr_uvarint(&b, 0); /* topic tagged fields */
	}
	if (flex)
		ch_wr_uvarint(&b, 0); /* top-level tagged fields */
	ch_resp_add_buf(r, &b);
	ch_buf_free(&b);
	return r;
}

static void
unwatch(fetch *f)
{
	for (int32_t i = 0; i < f->n; i++)
		ch_part_watch_remove(&f->parts[i].watch);
}

/* Sends the response from the last scan (top_err: v7+ ErrorCode, then no topics); frees req and
 * f with it, so f must no longer be watched and its timer must not be armed. */
static void
answer(fetch *f, int16_t top_err)
{
	ch_req *req = f->req;
	convert_old(f);
	/* consumer_byte_rate counts the records answered; over the quota,
	 * Kafka takes them back and answers no data with the throttle time. */
	int64_t bytes = 0;
	for (int32_t i = 0; i < f->n; i++)
		bytes += f->parts[i].down ? f->parts[i].down_size : f->parts[i].sl.len;
	int32_t throttle = ch_api_quota_record(req, CH_QK_CONSUMER_BYTE_RATE, (double)bytes);
	/* request_percentage too: either throttle answers no data (KafkaApis) */
	throttle = CH_MAX(throttle, ch_api_quota_request_time(req));
	if (throttle > 0) {
		ch_api_quota_unrecord(req, CH_QK_CONSUMER_BYTE_RATE, (double)bytes);
		release_slices(f);
	}
	ch_resp *r = encode(f, top_err, throttle);
	release_slices(f); /* none left unless encode skipped them */
	ch_api_quota_throttle(req, throttle);
	ch_api_send_resp(req, r); /* frees req and f (in its arena) */
}

/* The wait is over (max_wait_ms, min_bytes reached, or a partition gone):
 * answer with what the partitions hold now. */
static void
on_timer(ch_loop *loop, ch_timer *t, void *ud)
{
	(void)loop;
	(void)t;
	fetch *f = ud;
	unwatch(f);
	bool any_err;
	scan(f, &any_err);
	answer(f, 0);
}

/* A watched partition grew or went away: count its new bytes and answer (on
 * a zero-delay timer, outside the append) once min_bytes are there or at
 * once when it is gone. */
static void
on_watch(ch_part_watch *w, int ev)
{
	fpart *fp = w->ud;
	fetch *f = fp->f;
	ch_loop *loop = f->req->bk->loop;
	if (ev == CH_PART_EV_GONE) {
		ch_timer_arm(loop, &f->timer, ch_loop_now(loop));
		return;
	}
	uint64_t now = ch_part_appended_bytes(w->part);
	f->have += (int64_t)(now - fp->seen);
	fp->seen = now;
	if (f->have >= f->need)
		ch_timer_arm(loop, &f->timer, ch_loop_now(loop));
}

void
ch_api_Fetch(ch_req *req)
{
	const ch_FetchRequest *rq = req->body;
	ch_broker *bk = req->bk;
	fetch *f = ch_req_alloc(req, sizeof(*f));
	f->req = req;
	ch_timer_init(&f->timer, on_timer, f);
	if (req->version >= 7 && (rq->SessionId != 0 || rq->SessionEpoch > 0)) {
		answer(f, CH_KERR_FETCH_SESSION_ID_NOT_FOUND);
		return;
	}
	int32_t nt = rq->Topics_n > 0 ? rq->Topics_n : 0;
	int32_t n = 0;
	for (int32_t t = 0; t < nt; t++)
		n += rq->Topics[t].Partitions_n > 0 ? rq->Topics[t].Partitions_n : 0;
	f->parts = CH_REQ_NEW_ARRAY(req, fpart, n);
	f->n = n;
	int32_t j = 0, n_denied = 0;
	for (int32_t t = 0; t < nt; t++) {
		const ch_FetchRequest_FetchTopic *tq = &rq->Topics[t];
		ch_str name = CH_STR_NULL;
		const ch_topic *tp =
			req->version >= 13
				? ch_topics_find_id(bk->topics, &tq->TopicId)
				: (tq->Topic.len > 0 ? ch_topics_find(bk->topics, tq->Topic.p,
								      (size_t)tq->Topic.len)
						     : NULL);
		bool zstd = false;
		if (tp) {
			name = ch_str_c(
				ch_req_strdup(req, (ch_str){tp->name, (int32_t)tp->name_len}));
			if (req->version < 10) {
				ch_topic_config tc;
				ch_topic_config_resolve(bk->cfg, tp->configs, tp->n_configs, &tc);
				zstd = tc.compression_type == CH_COMPRESSION_ZSTD;
			}
		}
		/* READ on the topic, by the name the client gave (v13+: the one of
		 * its id; an unknown id is UNKNOWN_TOPIC_ID first), as Kafka. */
		ch_str asked = req->version >= 13 ? name : tq->Topic;
		bool denied = asked.len >= 0 &&
			      !ch_api_allowed_str(req, CH_ACL_READ, CH_RES_TOPIC, asked);
		int32_t np = tq->Partitions_n > 0 ? tq->Partitions_n : 0;
		n_denied += denied ? np : 0;
		for (int32_t k = 0; k < np; k++, j++) {
			fpart *fp = &f->parts[j];
			fp->denied = denied;
			fp->f = f;
			fp->topic_ix = t;
			fp->q = &tq->Partitions[k];
			fp->name = name;
			fp->zstd_topic = zstd;
			fp->id = tq->TopicId;
			fp->watch.ud = fp;
			fp->watch.fn = on_watch;
		}
	}
	bool any_err;
	int64_t have = scan(f, &any_err);
	/* KafkaApis.handleFetchRequest: fetchMinBytes = min(MinBytes, MaxBytes);
	 * ReplicaManager answers at once when that many bytes are readable. */
	f->need = CH_MAX(CH_MIN((int64_t)rq->MinBytes, max_bytes(req)), 0);
	if (have >= f->need || rq->MaxWaitMs <= 0 || any_err || n == n_denied) {
		answer(f, 0);
		return;
	}
	/* Park: nothing to send yet. */
	release_slices(f);
	f->have = have;
	f->parked = true;
	for (int32_t i = 0; i < n; i++) {
		fpart *fp = &f->parts[i];
		int16_t kerr;
		if (fp->denied)
			continue;
		ch_part *p = ch_log_manager_get(bk->logs, fp->name.p, (size_t)fp->name.len,
						fp->q->Partition, &kerr);
		if (!p)
			continue;
		fp->seen = ch_part_appended_bytes(p);
		ch_part_watch_add(p, &fp->watch);
	}
	ch_timer_arm(bk->loop, &f->timer, ch_loop_now(bk->loop) + rq->MaxWaitMs);
}
