/*
 * cl_fetcher.c: Fetch requests and record batches (I/O thread).
 *
 * One Fetch in flight per leader broker, for the owned partitions whose
 * position is known and that have nothing queued for the polling thread
 * (Java's fetcher skips partitions with buffered records too), with
 * fetch.min.bytes, fetch.max.wait.ms, fetch.max.bytes and
 * max.partition.fetch.bytes. Fetch sessions (KIP-227) where the broker
 * offers them: the first fetch to a broker is full with epoch 0; when the
 * answer carries a session id, the next ones send only the partitions added
 * or whose offset or leader epoch changed, and list the ones no longer
 * wanted (paused, with records queued, moved) as forgotten; any error
 * starts over with a full fetch. A broker without sessions (cohortd)
 * answers id 0: every fetch stays full. Fetch v13+ names topics by id; when
 * a topic's id is not known the request stays at v12.
 *
 * Record batches (magic 2) are checked (CRC-32C when check.crcs),
 * decompressed with the same code and Debian libraries as cohortd's log
 * (log/ch_batch.c, log/ch_codec.c), and their records copied into a chunk
 * (keys, values and headers in one buffer) that the polling thread owns
 * from then on. Control batches and records below the fetch position are
 * skipped; a batch cut at the end of the response is left for the next
 * fetch. A corrupt batch (CRC, structure, codec) at the fetch position stops
 * the partition's fetching: cohort_poll returns CORRUPT_MESSAGE until the
 * application seeks. A partition answered OFFSET_OUT_OF_RANGE is reset by
 * auto.offset.reset; leader errors refresh the metadata.
 */
#include "client/cl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_log.h"
#include "log/ch_batch.h"

#define MAX_DECOMPRESSED (256u << 20) /* a batch inflating past this is corrupt */

typedef struct f_part {
	cl_tp *tp;
	uint64_t epoch;
	int64_t offset;
	int32_t leader_epoch;
} f_part;

/* A partition as a fetch session (KIP-227) holds it: what was last sent. */
typedef struct f_sp {
	char *topic;
	ch_uuid topic_id;
	int32_t partition;
	int64_t offset;
	int32_t leader_epoch;
} f_sp;

/* The fetch session with one broker. id 0: none (the next fetch is full and
 * asks for one, epoch 0; a broker without sessions answers id 0 again). */
struct f_session {
	struct f_session *next; /* c->fsessions */
	int32_t node;
	int32_t id;
	int32_t epoch;
	bool ids; /* made at v13+ (topics by id) */
	f_sp *parts;
	int n;
};

typedef struct f_req {
	cl_client *c;
	cl_broker *b;
	f_part *parts; /* every partition wanted from b (the session's next set) */
	int n;
	bool ids;        /* every topic has an id: v13+ allowed */
	int32_t sepoch;  /* what was sent: -1 sessionless, 0 full (new session), > 0 incremental */
	bool sent_parts; /* build_fetch ran: the session fields are set */
} f_req;

/* base + delta on broker-sent values: wraps instead of overflowing (a
 * hostile batch must not be undefined behaviour). */
static int64_t
add_wrap(int64_t base, int64_t delta)
{
	return (int64_t)((uint64_t)base + (uint64_t)delta);
}

/* True when u is the all-zero topic id (the broker did not send one: Fetch stays below v13). */
static bool
uuid_zero(ch_uuid u)
{
	for (int i = 0; i < 16; i++)
		if (u.b[i])
			return false;
	return true;
}

void
cl_chunk_free(cl_chunk *ch)
{
	if (!ch)
		return;
	free(ch->recs);
	ch_buf_free(&ch->data);
	free(ch);
}

/* The session with broker node, created (id 0) when missing; NULL when out of memory. */
static struct f_session *
session_get(cl_client *c, int32_t node)
{
	for (struct f_session *s = c->fsessions; s; s = s->next)
		if (s->node == node)
			return s;
	struct f_session *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->node = node;
	s->next = c->fsessions;
	c->fsessions = s;
	return s;
}

/* Forgets s's partitions and id: the next fetch is full. */
static void
session_reset(struct f_session *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->parts[i].topic);
	free(s->parts);
	s->parts = NULL;
	s->n = 0;
	s->id = 0;
	s->epoch = 0;
}

void
cl_fetcher_free(cl_client *c)
{
	while (c->fsessions) {
		struct f_session *s = c->fsessions;
		c->fsessions = s->next;
		session_reset(s);
		free(s);
	}
}

/* The session's entry for tp, NULL when the session does not hold it. */
static const f_sp *
session_find(const struct f_session *s, const cl_tp *tp)
{
	for (int i = 0; i < s->n; i++)
		if (s->parts[i].partition == tp->partition &&
		    strcmp(s->parts[i].topic, tp->topic) == 0)
			return &s->parts[i];
	return NULL;
}

/* True when f (the next set) holds the session partition sp. */
static bool
wanted(const f_req *f, const f_sp *sp)
{
	for (int i = 0; i < f->n; i++)
		if (f->parts[i].tp->partition == sp->partition &&
		    strcmp(f->parts[i].tp->topic, sp->topic) == 0)
			return true;
	return false;
}

/* After a good answer: the session holds exactly what f asked for. false on OOM. */
static bool
session_take(cl_client *c, struct f_session *s, const f_req *f)
{
	f_sp *parts = calloc((size_t)f->n + 1, sizeof(*parts));
	for (int i = 0; parts && i < f->n; i++) {
		const cl_md_topic *mt = cl_metadata_topic(c, f->parts[i].tp->topic);
		parts[i] = (f_sp){strdup(f->parts[i].tp->topic), mt ? mt->id : (ch_uuid){{0}},
				  f->parts[i].tp->partition, f->parts[i].offset,
				  f->parts[i].leader_epoch};
		if (!parts[i].topic) {
			for (int k = 0; k < i; k++)
				free(parts[k].topic);
			free(parts);
			parts = NULL;
		}
	}
	int32_t id = s->id, epoch = s->epoch;
	session_reset(s);
	if (!parts)
		return false;
	s->parts = parts;
	s->n = f->n;
	s->id = id;
	s->epoch = epoch;
	return true;
}

/* Encodes Fetch for f's partitions grouped by topic, with topic ids from the metadata and
 * each partition's fetch offset and leader epoch: sessionless below v7; else full (asking
 * for a session) or, within a session, only the partitions added or changed, and the
 * ones no longer wanted as forgotten (KIP-227, as Java's FetchSessionHandler). */
static void
build_fetch(cl_client *c, int16_t version, ch_buf *b, void *ud)
{
	f_req *f = ud;
	struct f_session *s = version >= 7 ? session_get(c, f->b->node_id) : NULL;
	if (s && s->id && s->ids != f->ids)
		session_reset(s); /* made with the other naming of topics */
	f->sepoch = !s ? -1 : s->id ? s->epoch : 0;
	f->sent_parts = true;
	ch_FetchRequest r;
	ch_FetchRequest_init(&r);
	r.ReplicaId = -1;
	r.ReplicaState.ReplicaId = -1;
	r.ReplicaState.ReplicaEpoch = -1;
	r.MaxWaitMs = c->conf.fetch_max_wait_ms;
	r.MinBytes = c->conf.fetch_min_bytes;
	r.MaxBytes = c->conf.fetch_max_bytes;
	r.IsolationLevel = c->conf.read_committed ? 1 : 0;
	r.SessionId = f->sepoch > 0 ? s->id : 0;
	r.SessionEpoch = f->sepoch;
	r.RackId = ch_str_c(c->conf.client_rack);
	r.ForgottenTopicsData_n = 0;
	ch_FetchRequest_FetchTopic *t = calloc((size_t)f->n + 1, sizeof(*t));
	ch_FetchRequest_FetchPartition *p = calloc((size_t)f->n + 1, sizeof(*p));
	bool *send = calloc((size_t)f->n + 1, sizeof(bool));
	int nforget = f->sepoch > 0 ? s->n : 0;
	ch_FetchRequest_ForgottenTopic *ft = calloc((size_t)nforget + 1, sizeof(*ft));
	int32_t *fp = calloc((size_t)nforget + 1, sizeof(int32_t));
	if (!t || !p || !send || !ft || !fp) {
		b->oom = true;
		goto out;
	}
	for (int i = 0; i < f->n; i++) {
		const f_sp *sp = f->sepoch > 0 ? session_find(s, f->parts[i].tp) : NULL;
		send[i] = !sp || sp->offset != f->parts[i].offset ||
			  sp->leader_epoch != f->parts[i].leader_epoch;
	}
	int nft = 0; /* forgotten: in the session, not wanted now (grouped by topic) */
	int32_t *nextf = fp;
	for (int i = 0; i < nforget; i++) {
		if (wanted(f, &s->parts[i]))
			continue;
		int j = 0;
		while (j < nft && !ch_str_eq_c(ft[j].Topic, s->parts[i].topic))
			j++;
		if (j == nft) {
			ft[nft].Topic = ch_str_c(s->parts[i].topic);
			ft[nft].TopicId = s->parts[i].topic_id;
			ft[nft].Partitions = nextf;
			for (int k = i; k < nforget; k++)
				if (strcmp(s->parts[k].topic, s->parts[i].topic) == 0 &&
				    !wanted(f, &s->parts[k])) {
					*nextf++ = s->parts[k].partition;
					ft[nft].Partitions_n++;
				}
			nft++;
		}
	}
	r.ForgottenTopicsData = ft;
	r.ForgottenTopicsData_n = nft;
	int nt = 0;
	ch_FetchRequest_FetchPartition *next = p;
	for (int i = 0; i < f->n; i++) {
		if (!send[i])
			continue;
		int j = 0;
		while (j < nt && !ch_str_eq_c(t[j].Topic, f->parts[i].tp->topic))
			j++;
		if (j < nt)
			continue;
		const cl_md_topic *mt = cl_metadata_topic(c, f->parts[i].tp->topic);
		t[nt].Topic = ch_str_c(f->parts[i].tp->topic);
		if (mt)
			t[nt].TopicId = mt->id;
		t[nt].Partitions = next;
		for (int k = i; k < f->n; k++) {
			if (!send[k] || strcmp(f->parts[k].tp->topic, f->parts[i].tp->topic) != 0)
				continue;
			next->Partition = f->parts[k].tp->partition;
			next->CurrentLeaderEpoch = f->parts[k].leader_epoch;
			next->FetchOffset = f->parts[k].offset;
			next->LastFetchedEpoch = -1;
			next->LogStartOffset = -1;
			next->PartitionMaxBytes = c->conf.max_partition_fetch_bytes;
			next++;
			t[nt].Partitions_n++;
		}
		nt++;
	}
	r.Topics = t;
	r.Topics_n = nt;
	ch_FetchRequest_encode(b, version, &r);
out:
	free(t);
	free(p);
	free(send);
	free(ft);
	free(fp);
}

/* The session with f's broker after its answer (err: the request or the whole response
 * failed, e.g. FETCH_SESSION_ID_NOT_FOUND): reset, or made, or moved to the next epoch. */
static void
session_after(cl_client *c, const f_req *f, cohort_err err, const ch_FetchResponse *r)
{
	if (!f->sent_parts || f->sepoch < 0)
		return;
	struct f_session *s = session_get(c, f->b->node_id);
	if (!s)
		return;
	if (err || (f->sepoch > 0 && r->SessionId != s->id) || (f->sepoch == 0 && !r->SessionId)) {
		session_reset(s); /* a broker without sessions answers id 0: stay full */
		return;
	}
	if (f->sepoch == 0) {
		s->id = r->SessionId;
		s->epoch = 0;
		s->ids = f->ids;
	}
	s->epoch = s->epoch == INT32_MAX ? 1 : s->epoch + 1;
	if (!session_take(c, s, f))
		session_reset(s);
}

/* Offsets of the slices inside chunk->data, turned into pointers at the
 * end (the buffer moves while it grows). */
typedef struct rec_slices {
	int64_t key, value; /* offset into data, -1 null */
	int64_t headers;    /* offset of the cohort_header array in data, -1 none */
} rec_slices;

/* Appends n bytes of p (and a NUL when nul) to b; returns the offset where they start.
 * An allocation failure is left in b for ch_buf_ok. */
static int64_t
put(ch_buf *b, const void *p, size_t n, bool nul)
{
	int64_t at = (int64_t)b->len;
	if (n)
		ch_buf_append(b, p, n);
	if (nul)
		ch_buf_append(b, "", 1);
	return at;
}

/* Parse a record's raw headers into data: an aligned cohort_header array
 * whose pointers are offsets until fix-up. */
static int
put_headers(ch_buf *d, const uint8_t *h, size_t len, int32_t count, int64_t *at)
{
	while (d->len % 8)
		ch_buf_append(d, "", 1);
	*at = (int64_t)d->len;
	size_t arr = sizeof(cohort_header) * (size_t)count;
	uint8_t *space = ch_buf_extend(d, arr);
	if (!space)
		return CH_ERR;
	memset(space, 0, arr);
	ch_rd rd;
	ch_rd_init(&rd, h, len);
	for (int32_t i = 0; i < count; i++) {
		int32_t kl = ch_rd_varint(&rd);
		const uint8_t *k = kl > 0 ? ch_rd_take(&rd, (size_t)kl) : NULL;
		int32_t vl = ch_rd_varint(&rd);
		const uint8_t *v = vl > 0 ? ch_rd_take(&rd, (size_t)vl) : NULL;
		if (!ch_rd_ok(&rd) || kl < 0)
			return CH_ERR;
		int64_t ko = put(d, k, (size_t)kl, true);
		int64_t vo = vl >= 0 ? put(d, v, (size_t)vl, false) : -1;
		cohort_header *hd = (cohort_header *)(d->data + *at) + i;
		hd->key = (const char *)(intptr_t)ko;
		hd->value = (const void *)(intptr_t)vo;
		hd->value_len = vl;
	}
	return CH_OK;
}

/* read_committed while one Records field is decoded (Java's CompletedFetch): the aborted
 * transactions the answer lists, by first offset, not reached yet; and the producers whose
 * open transaction is aborted (sorted, distinct) until their ABORT marker. */
typedef struct txn_filter {
	ch_FetchResponse_AbortedTransaction *pending;
	int32_t npending, at;
	int64_t *pids;
	int32_t npids;
} txn_filter;

static int
cmp_first_offset(const void *a, const void *b)
{
	int64_t x = ((const ch_FetchResponse_AbortedTransaction *)a)->FirstOffset;
	int64_t y = ((const ch_FetchResponse_AbortedTransaction *)b)->FirstOffset;
	return (x > y) - (x < y);
}

/* false: out of memory. */
static bool
txn_filter_init(txn_filter *tf, const cl_decode_opts *o)
{
	memset(tf, 0, sizeof(*tf));
	int32_t n = o->aborted ? CH_MAX(o->naborted, 0) : 0;
	tf->pending = calloc((size_t)n + 1, sizeof(*tf->pending));
	tf->pids = calloc((size_t)n + 1, sizeof(*tf->pids)); /* at most n distinct */
	if (!tf->pending || !tf->pids)
		return false;
	if (n)
		memcpy(tf->pending, o->aborted, (size_t)n * sizeof(*tf->pending));
	qsort(tf->pending, (size_t)n, sizeof(*tf->pending), cmp_first_offset);
	tf->npending = n;
	return true;
}

static void
txn_filter_free(txn_filter *tf)
{
	free(tf->pending);
	free(tf->pids);
}

/* Index of pid in tf->pids, or where it would go (*found false). */
static int32_t
pid_at(const txn_filter *tf, int64_t pid, bool *found)
{
	int32_t lo = 0, hi = tf->npids;
	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;
		if (tf->pids[mid] < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < tf->npids && tf->pids[lo] == pid;
	return lo;
}

/* The aborted transactions that began at or before last_offset (a batch's last offset)
 * make their producers aborted. */
static void
txn_consume_up_to(txn_filter *tf, int64_t last_offset)
{
	while (tf->at < tf->npending && tf->pending[tf->at].FirstOffset <= last_offset) {
		bool found;
		int64_t pid = tf->pending[tf->at++].ProducerId;
		int32_t i = pid_at(tf, pid, &found);
		if (found)
			continue;
		memmove(tf->pids + i + 1, tf->pids + i, (size_t)(tf->npids - i) * sizeof(int64_t));
		tf->pids[i] = pid;
		tf->npids++;
	}
}

static void
txn_remove(txn_filter *tf, int64_t pid)
{
	bool found;
	int32_t i = pid_at(tf, pid, &found);
	if (!found)
		return;
	memmove(tf->pids + i, tf->pids + i + 1, (size_t)(tf->npids - i - 1) * sizeof(int64_t));
	tf->npids--;
}

/* True when the control batch's first record is an ABORT marker: its key is version int16
 * (>= 0) and type int16, 0 ABORT, 1 COMMIT (Kafka's ControlRecordType). A key that does
 * not parse is not an abort. */
static bool
abort_marker(const uint8_t *batch, const ch_batch_hdr *h, ch_buf *scratch)
{
	const uint8_t *recs;
	size_t recs_len;
	if (ch_batch_records(batch, h, scratch, MAX_DECOMPRESSED, &recs, &recs_len) != CH_OK)
		return false;
	ch_record_iter it;
	ch_record_iter_init(&it, recs, recs_len, h->records_count);
	ch_record rec;
	if (ch_record_next(&it, &rec) != 1 || rec.key.len < 4)
		return false;
	int16_t version = (int16_t)(((unsigned)rec.key.p[0] << 8) | rec.key.p[1]);
	int16_t type = (int16_t)(((unsigned)rec.key.p[2] << 8) | rec.key.p[3]);
	return version >= 0 && type == 0;
}

cl_chunk *
cl_records_decode(cl_tp *tp, const cl_decode_opts *o, int64_t from, const uint8_t *p, size_t len,
		  int64_t *next, cohort_err *err)
{
	cl_chunk *ch = calloc(1, sizeof(*ch));
	rec_slices *sl = NULL;
	size_t cap = 0;
	ch_buf scratch;
	ch_buf_init(&scratch);
	txn_filter tf;
	bool tf_ok = txn_filter_init(&tf, o);
	*next = from;
	*err = COHORT_OK;
	if (!ch || !tf_ok) {
		free(ch);
		txn_filter_free(&tf);
		*err = COHORT_ERR__NOMEM;
		return NULL;
	}
	ch_buf_init(&ch->data);
	/* never NULL: an empty key or value is a valid pointer with length 0 */
	if (!ch_buf_reserve(&ch->data, 256)) {
		free(ch);
		txn_filter_free(&tf);
		*err = COHORT_ERR__NOMEM;
		return NULL;
	}
	ch->tp = tp;
	size_t off = 0;
	while (off < len) {
		ch_batch_hdr h;
		int rc = ch_batch_parse_hdr(p + off, len - off, 0, &h);
		if (rc == CH_BATCH_ESHORT ||
		    (rc == CH_BATCH_OK && (size_t)ch_batch_size(&h) > len - off))
			break; /* cut at the end of the response */
		if (rc != CH_BATCH_OK) {
			CH_LOGW(CL_LOG, "%s-%d: bad record batch at %lld: %s", tp->topic,
				tp->partition, (long long)*next, ch_batch_err_str(rc));
			*err = COHORT_ERR__BAD_MSG;
			break;
		}
		const uint8_t *batch = p + off;
		size_t size = (size_t)ch_batch_size(&h);
		off += size;
		int64_t last_offset = add_wrap(h.base_offset, h.last_offset_delta);
		if (last_offset < *next)
			continue;
		if (o->check_crcs && ch_batch_compute_crc(batch, size) != h.crc) {
			CH_LOGW(CL_LOG, "%s-%d: record batch at %lld fails its CRC", tp->topic,
				tp->partition, (long long)h.base_offset);
			*err = COHORT_ERR__BAD_MSG;
			break;
		}
		int64_t batch_next = add_wrap(last_offset, 1);
		if (o->read_committed && h.producer_id >= 0) {
			txn_consume_up_to(&tf, last_offset);
			if (h.attributes & CH_BATCH_ATTR_CONTROL) {
				if (abort_marker(batch, &h, &scratch))
					txn_remove(&tf, h.producer_id);
			} else if (h.attributes & CH_BATCH_ATTR_TRANSACTIONAL) {
				bool aborted;
				pid_at(&tf, h.producer_id, &aborted);
				if (aborted) {
					*next = batch_next; /* skipped, and the position moves on */
					continue;
				}
			}
		}
		if (h.attributes & CH_BATCH_ATTR_CONTROL) {
			*next = batch_next;
			continue;
		}
		const uint8_t *recs;
		size_t recs_len;
		if (ch_batch_records(batch, &h, &scratch, MAX_DECOMPRESSED, &recs, &recs_len) !=
		    CH_OK) {
			CH_LOGW(CL_LOG, "%s-%d: record batch at %lld does not decompress",
				tp->topic, tp->partition, (long long)h.base_offset);
			*err = COHORT_ERR__BAD_MSG;
			break;
		}
		ch_record_iter it;
		ch_record_iter_init(&it, recs, recs_len, h.records_count);
		ch_record rec;
		int r;
		while ((r = ch_record_next(&it, &rec)) == 1) {
			int64_t offset = add_wrap(h.base_offset, rec.offset_delta);
			if (offset < *next)
				continue;
			if ((size_t)ch->n == cap) {
				cap = cap ? cap * 2 : 64;
				cohort_record *nr = realloc(ch->recs, cap * sizeof(*nr));
				rec_slices *ns = realloc(sl, cap * sizeof(*ns));
				if (nr)
					ch->recs = nr;
				if (ns)
					sl = ns;
				if (!nr || !ns) {
					*err = COHORT_ERR__NOMEM;
					goto out;
				}
			}
			cohort_record *cr = &ch->recs[ch->n];
			rec_slices *s = &sl[ch->n];
			memset(cr, 0, sizeof(*cr));
			cr->partition = tp->partition;
			cr->offset = offset;
			bool lat = (h.attributes & CH_BATCH_ATTR_LOG_APPEND_TIME) != 0;
			cr->timestamp = lat ? h.max_timestamp
					    : add_wrap(h.base_timestamp, rec.timestamp_delta);
			cr->timestamp_type = lat ? 1 : 0;
			cr->leader_epoch = h.partition_leader_epoch;
			cr->key_len = rec.key.len;
			cr->value_len = rec.value.len;
			s->key = rec.key.len >= 0
					 ? put(&ch->data, rec.key.p, (size_t)rec.key.len, false)
					 : -1;
			s->value = rec.value.len >= 0 ? put(&ch->data, rec.value.p,
							    (size_t)rec.value.len, false)
						      : -1;
			s->headers = -1;
			cr->headers_n = rec.headers_count;
			if (rec.headers_count > 0 &&
			    put_headers(&ch->data, rec.headers, rec.headers_len, rec.headers_count,
					&s->headers) != CH_OK) {
				*err = COHORT_ERR__BAD_MSG;
				goto out;
			}
			ch->n++;
			*next = add_wrap(offset, 1);
		}
		if (r < 0 || it.err) {
			CH_LOGW(CL_LOG, "%s-%d: malformed record in the batch at %lld", tp->topic,
				tp->partition, (long long)h.base_offset);
			*err = COHORT_ERR__BAD_MSG;
			break;
		}
		*next = batch_next;
	}
out:
	ch_buf_free(&scratch);
	txn_filter_free(&tf);
	ch->next_offset = *next;
	if (!*err && !ch_buf_ok(&ch->data))
		*err = COHORT_ERR__NOMEM;
	if (*err && ch->n == 0 && *next == from) {
		free(sl);
		cl_chunk_free(ch);
		return NULL;
	}
	/* the slices become pointers now that the buffer stopped moving */
	for (int32_t i = 0; i < ch->n; i++) {
		cohort_record *cr = &ch->recs[i];
		cr->topic = tp->topic;
		cr->key = sl[i].key >= 0 ? ch->data.data + sl[i].key : NULL;
		cr->value = sl[i].value >= 0 ? ch->data.data + sl[i].value : NULL;
		if (sl[i].headers >= 0) {
			cohort_header *hd = (cohort_header *)(ch->data.data + sl[i].headers);
			for (int32_t k = 0; k < cr->headers_n; k++) {
				intptr_t ko = (intptr_t)hd[k].key, vo = (intptr_t)hd[k].value;
				hd[k].key = (const char *)ch->data.data + ko;
				hd[k].value = vo >= 0 ? ch->data.data + vo : NULL;
			}
			cr->headers = hd;
		} else {
			cr->headers_n = 0;
		}
	}
	if (*err) /* keep what decoded; the next fetch starts at the bad batch */
		*err = COHORT_OK;
	free(sl);
	return ch;
}

/* The partition of f answered by (topic or, when by_id, topic id, partition); *idx gets its
 * index in f->parts.  NULL when f did not ask for it. */
static cl_tp *
f_find(f_req *f, ch_str topic, ch_uuid id, bool by_id, int32_t partition, int *idx)
{
	for (int i = 0; i < f->n; i++) {
		cl_tp *tp = f->parts[i].tp;
		if (tp->partition != partition)
			continue;
		if (by_id) {
			const cl_md_topic *mt = cl_metadata_topic(f->c, tp->topic);
			if (!mt || memcmp(mt->id.b, id.b, 16) != 0)
				continue;
		} else if (!ch_str_eq_c(topic, tp->topic)) {
			continue;
		}
		*idx = i;
		return tp;
	}
	return NULL;
}

/* Fetch answer: queues each partition's decoded records when its epoch and position are
 * unchanged, marks OFFSET_OUT_OF_RANGE ones for reset, then fetches again.  Frees f. */
static void
done_fetch(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	f_req *f = ud;
	f->b->fetching = false;
	bool refresh = false;
	if (err == COHORT_ERR__CLOSED)
		goto out;
	if (!err && ((ch_FetchResponse *)resp)->ErrorCode)
		err = ((ch_FetchResponse *)resp)->ErrorCode;
	session_after(c, f, err, resp);
	bool *seen = calloc((size_t)f->n + 1, sizeof(bool));
	if (!err && seen) {
		const ch_FetchResponse *r = resp;
		for (int32_t t = 0; t < r->Responses_n; t++) {
			const ch_FetchResponse_FetchableTopicResponse *rt = &r->Responses[t];
			for (int32_t q = 0; q < rt->Partitions_n; q++) {
				const ch_FetchResponse_PartitionData *pd = &rt->Partitions[q];
				int idx = -1;
				cl_tp *tp = f_find(f, rt->Topic, rt->TopicId, version >= 13,
						   pd->PartitionIndex, &idx);
				if (!tp)
					continue;
				seen[idx] = true;
				f_part *fp = &f->parts[idx];
				if (pd->ErrorCode == CH_KERR_OFFSET_OUT_OF_RANGE) {
					CH_LOGI(CL_LOG,
						"%s-%d: offset %lld out of range: resetting (%s)",
						tp->topic, tp->partition, (long long)fp->offset,
						c->conf.auto_offset_reset == CL_RESET_EARLIEST
							? "earliest"
						: c->conf.auto_offset_reset == CL_RESET_LATEST
							? "latest"
							: "none");
					cl_lock(c);
					if (tp->epoch == fp->epoch && tp->owned) {
						tp->fetch_pos = -1;
						tp->reset = true;
						tp->reset_to = CL_RESET_TO_CONF;
						tp->epoch++;
					}
					tp->fetching = false;
					cl_unlock(c);
					continue;
				}
				if (pd->ErrorCode) {
					refresh = true;
					CH_LOGD(CL_LOG, "%s-%d: fetch: %s", tp->topic,
						tp->partition, ch_kerr_name(pd->ErrorCode));
					cl_lock(c);
					tp->fetching = false;
					cl_unlock(c);
					continue;
				}
				int64_t next;
				cohort_err derr;
				cl_decode_opts dopts = {c->conf.check_crcs, c->conf.read_committed,
							pd->AbortedTransactions,
							pd->AbortedTransactions_n};
				cl_chunk *ch = cl_records_decode(
					tp, &dopts, fp->offset, pd->Records.p,
					(size_t)CH_MAX(pd->Records.len, 0), &next, &derr);
				cl_lock(c);
				tp->fetching = false;
				if (!ch && derr == COHORT_ERR__BAD_MSG && tp->epoch == fp->epoch &&
				    tp->owned && tp->fetch_pos == fp->offset) {
					/* fetching it again gets the same bytes: stop
					 * and let poll say so, as Java's consumer does */
					tp->corrupt = true;
					pthread_cond_broadcast(&c->cond);
					CH_LOGW(CL_LOG,
						"%s-%d: corrupt record batch at offset %lld: "
						"seek past it to continue consumption",
						tp->topic, tp->partition, (long long)fp->offset);
				}
				if (ch && tp->epoch == fp->epoch && tp->owned &&
				    tp->fetch_pos == fp->offset) {
					tp->fetch_pos = next;
					/* an answer of control or aborted batches only moves the
					 * position too: queued empty, poll takes it */
					if (ch->n > 0 || next > fp->offset) {
						ch->epoch = tp->epoch;
						ch->bytes = (size_t)CH_MAX(pd->Records.len, 0);
						c->q_bytes += ch->bytes;
						tp->queued++;
						CH_FIFO_APPEND(c->q_head, c->q_tail, ch);
						pthread_cond_broadcast(&c->cond);
						ch = NULL;
					}
				}
				cl_unlock(c);
				cl_chunk_free(ch);
				if (derr)
					CH_LOGW(CL_LOG, "%s-%d: %s", tp->topic, tp->partition,
						cohort_err_name(derr));
			}
		}
	}
	/* partitions without an answer (or the whole request failed) */
	cl_lock(c);
	for (int i = 0; i < f->n; i++)
		if (!seen || !seen[i])
			f->parts[i].tp->fetching = false;
	cl_unlock(c);
	free(seen);
	if (err) {
		CH_LOGD(CL_LOG, "fetch from broker %d: %s", f->b->node_id, cohort_err_name(err));
		refresh = true;
	}
out:
	free(f->parts);
	free(f);
	if (err == COHORT_ERR__CLOSED)
		return;
	if (refresh)
		cl_metadata_refresh(c);
	cl_offsets_lookup(c); /* partitions reset by OFFSET_OUT_OF_RANGE */
	cl_fetcher_kick(c);   /* a failed broker waits for its reconnect backoff */
}

void
cl_fetcher_kick(cl_client *c)
{
	if (c->closing)
		return;
	cl_lock(c);
	int n = c->ntps;
	f_part *cand = calloc((size_t)n + 1, sizeof(*cand));
	cl_broker **leaders = calloc((size_t)n + 1, sizeof(*leaders));
	int m = 0;
	for (int i = 0; cand && leaders && i < c->ntps; i++) {
		cl_tp *tp = c->tps[i];
		/* fetched ahead of what the application reads while the queue holds
		 * less than fetch.max.bytes (librdkafka's queued.max.messages.kbytes):
		 * a partition that still has data is read ahead, so it does not wait
		 * fetch.max.wait.ms behind a Fetch of those at the end of their logs
		 * (one Fetch per broker at a time) */
		bool ahead = tp->queued > 0 && c->q_bytes >= (size_t)c->conf.fetch_max_bytes;
		if (!tp->owned || tp->fetch_pos < 0 || tp->fetching || ahead || tp->corrupt ||
		    tp->paused)
			continue;
		const cl_md_topic *t = cl_metadata_topic(c, tp->topic);
		const cl_md_partition *p = NULL;
		for (int32_t k = 0; t && k < t->nparts; k++)
			if (t->parts[k].partition == tp->partition)
				p = &t->parts[k];
		cl_broker *b = p && p->leader >= 0 ? cl_broker_find(c, p->leader) : NULL;
		if (!b || b->fetching)
			continue;
		cand[m] = (f_part){tp, tp->epoch, tp->fetch_pos, p->leader_epoch};
		leaders[m++] = b;
	}
	cl_unlock(c);
	for (int i = 0; i < m; i++) {
		cl_broker *b = leaders[i];
		if (!b || b->fetching)
			continue;
		f_req *f = calloc(1, sizeof(*f));
		f_part *parts = calloc((size_t)m, sizeof(*parts));
		if (!f || !parts) {
			free(f);
			free(parts);
			break;
		}
		f->c = c;
		f->b = b;
		f->parts = parts;
		f->ids = true;
		for (int k = i; k < m; k++)
			if (leaders[k] == b) {
				const cl_md_topic *t = cl_metadata_topic(c, cand[k].tp->topic);
				if (!t || uuid_zero(t->id))
					f->ids = false;
				f->parts[f->n++] = cand[k];
				leaders[k] = NULL;
			}
		cl_lock(c);
		for (int k = 0; k < f->n; k++)
			f->parts[k].tp->fetching = true;
		cl_unlock(c);
		b->fetching = true;
		cl_request_ex(b, CH_APIKEY_FETCH, f->ids ? -1 : 12,
			      (int64_t)c->conf.request_timeout_ms + c->conf.fetch_max_wait_ms,
			      build_fetch, done_fetch, f);
	}
	free(cand);
	free(leaders);
}
