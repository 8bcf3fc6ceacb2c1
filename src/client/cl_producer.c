/*
 * cl_producer.c: the producer (cohort_producer_*, cohort_produce): the
 * accumulator that producing threads append to, the I/O thread's sender
 * (Produce requests, retries, idempotence) and the delivery reports.
 *
 * Who owns what:
 *
 *   c->mu (any producing thread, the I/O thread, the polling thread)
 *       the topic table (ptopic: partition count, leaders, the sticky
 *       partition), every partition's queue of batches not in flight
 *       (ppart.head..tail; the tail may still take records), the memory
 *       count (buffer.memory), the count of records without a report yet,
 *       and the queue of finished batches whose reports have not run.
 *   I/O thread only
 *       batches in flight (owned by their request), per-partition sequence
 *       numbers and in-flight counts, the producer id and epoch.
 *
 * A record is encoded into its partition's open batch by the producing
 * thread (record batch v2, uncompressed: ch_batch_builder), so the caller's
 * buffers are free when cohort_produce returns. The sender takes ready
 * batches out of the queues (full, older than linger.ms, a later batch
 * behind it, a retry, or a flush), one per partition per request and one
 * request per leader up to max.in.flight.requests.per.connection, and
 * seals each the first time it leaves: producer id, epoch and base
 * sequence written, records compressed (compression.type), CRC. A batch
 * that comes back with a retriable error goes back to the front of its
 * queue in its original order, and its partition sends nothing more until
 * every batch of it in flight has returned: what is resent then starts at
 * the lowest sequence, so retries neither reorder nor (with idempotence)
 * duplicate. A batch of several records refused as too large
 * (MESSAGE_TOO_LARGE) is split and its pieces take its place in the queue
 * (batch_split). A sequence gap the broker reports for the next expected
 * batch (OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID), or a batch
 * failed for good with idempotence on, bumps the epoch as Java's
 * idempotent producer does (KIP-360): sending stops until nothing is in
 * flight, the epoch goes up by one (locally; InitProducerId for a new id
 * once the epoch is exhausted), every partition's sequences restart at 0
 * and the batches not yet acknowledged are renumbered in order.
 */
#include "client/cl_producer.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/cl_int.h"
#include "common/ch_endian.h"
#include "common/ch_log.h"
#include "log/ch_batch.h"
#include "proto/ch_wr.h"

/* batch.size from which records are checksummed as they are appended. */
#define CRC_AT_APPEND (256 * 1024)

/* Batch buffers a producer keeps for reuse (see cohort_producer.spare). */
#define BUF_SPARES 4

typedef struct ptopic ptopic;
typedef struct ppart ppart;
typedef struct pbatch pbatch;

/* What a delivery report needs of one record. */
typedef struct pmsg {
	void *opaque;
	int64_t timestamp;
} pmsg;

struct pbatch {
	pbatch *next; /* in its queue, or the report queue */
	ppart *pp;
	ch_buf buf; /* the v2 batch: records uncompressed until sealed */
	ch_batch_builder bb;
	pmsg *msgs;
	int32_t n, cap;
	size_t acct;      /* bytes counted against buffer.memory */
	int64_t created;  /* monotonic ms */
	int64_t deadline; /* created + delivery.timeout.ms */
	bool full;        /* batch.size reached: takes no more records */
	bool sealed;      /* header final and records compressed */
	uint64_t order;   /* per-partition send order, 0 before the first send */
	uint32_t sub;     /* then the pieces of a split batch (order_before) */
	uint64_t span;    /* sub keys from sub on that its pieces may take */
	bool piece;       /* a piece of a split batch (batch_split) */
	int64_t pid;      /* producer id, epoch and base sequence it carries */
	int16_t epoch;
	int32_t base_seq;
	int32_t attempts; /* sends that came back failed */
	int64_t retry_at; /* monotonic ms: not before (retry.backoff.ms) */
	cohort_err err;   /* outcome */
	int64_t base_offset;
	int64_t append_time; /* LogAppendTime, -1 for CreateTime */
};

struct ppart {
	ptopic *t;
	int32_t partition;
	int32_t leader;      /* node id, -1 unknown (c->mu) */
	pbatch *head, *tail; /* queued, oldest first (c->mu) */
	/* I/O thread */
	int32_t inflight;   /* batches in flight */
	int32_t pieces_out; /* of them, pieces of a split batch */
	bool stalled;       /* a batch is back for a retry: wait for inflight 0 */
	int32_t next_seq;   /* next base sequence to hand out */
	int32_t acked_next; /* sequence after the last acknowledged batch */
	bool acked_once;    /* a batch of this epoch was acknowledged */
	uint64_t next_order;
};

struct ptopic {
	ptopic *next;
	char *name;
	int32_t nparts; /* -1: not in the metadata yet */
	cohort_err err; /* a topic error no wait will cure */
	ppart **parts;
	int32_t *avail; /* partitions with a leader (sticky choice) */
	int32_t navail;
	int32_t sticky; /* KIP-480's current partition, -1 none */
	bool asked;     /* the I/O thread has it in its metadata topics */
};

typedef enum pid_state {
	PID_NONE,      /* not idempotent */
	PID_WANTED,    /* InitProducerId to send (or to retry after a backoff) */
	PID_INFLIGHT,  /* InitProducerId in flight */
	PID_OK,        /* pid and epoch known: batches may go */
	PID_BUMP_WAIT, /* an epoch bump waits for the batches in flight */
	PID_FATAL,     /* refused for good: p->fatal */
} pid_state;

struct cohort_producer {
	cl_client c;
	/* c.mu */
	ptopic *topics;
	int64_t mem_used;
	int64_t unfinished; /* records without a finished batch yet */
	pbatch *rep_head, *rep_tail;
	int flushing;
	bool wake_posted;
	bool closed_p; /* close began: produce refuses */
	cohort_err fatal;
	uint64_t rng;
	ch_buf hdrs; /* scratch: one record's encoded headers */
	/* Buffers of finished batches, kept for the next batches: a new 1 MB
	 * buffer per batch costs its growth's reallocs, page faults and an
	 * munmap when freed (bench/produce, 1 KB records). */
	ch_buf spare[BUF_SPARES];
	int nspare;
	/* I/O thread */
	bool idempotent;
	pid_state pid_state;
	int64_t pid;
	int16_t epoch;
	int pid_fails;
	int32_t requests; /* Produce requests in flight */
	ch_timer timer;   /* linger, backoff and delivery deadlines */
	ch_timer pid_timer;
};

/* A delivery callback running on this thread: produce must not block. */
static __thread cohort_producer *in_callback;

static void sender_run(cohort_producer *p);
static void pid_request(cohort_producer *p);

/* ---- batches ---------------------------------------------------------- */

/* Frees a batch and what it owns. */
static void
batch_free(pbatch *b)
{
	if (!b)
		return;
	ch_buf_free(&b->buf);
	free(b->msgs);
	free(b);
}

/* Keeps the buffer of a finished batch for a later batch, or frees it
 * (c->mu held). Kept: at most BUF_SPARES, none larger than twice
 * batch.size (a batch grown past batch.size by one large record). The
 * spares are not counted against buffer.memory, as Java's BufferPool
 * keeps its free batch.size buffers; they cost at most BUF_SPARES x
 * 2 x batch.size of memory while idle. */
static void
buf_release(cohort_producer *p, ch_buf *buf)
{
	if (buf->data && p->nspare < BUF_SPARES && !buf->oom &&
	    buf->cap <= 2 * (size_t)p->c.conf.batch_size) {
		ch_buf_reset(buf);
		p->spare[p->nspare++] = *buf;
		ch_buf_init(buf);
		return;
	}
	ch_buf_free(buf);
}

/* A new open batch for pp whose first record is at ts, in a spare buffer
 * when there is one (c->mu held); NULL on OOM. */
static pbatch *
batch_new(cohort_producer *p, ppart *pp, int64_t ts, int64_t now)
{
	pbatch *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->pp = pp;
	if (p->nspare > 0)
		b->buf = p->spare[--p->nspare];
	else
		ch_buf_init(&b->buf);
	ch_buf_reserve(&b->buf, CH_BATCH_HDR_SIZE + 256);
	ch_batch_builder_begin(&b->bb, &b->buf, 0, 0, ts, -1, -1, -1);
	/* Uncompressed batches larger than a core's cache: each record's CRC
	 * while cohort_produce has it in the cache, not a cold read of the
	 * whole batch on the I/O thread at seal (1 KB records in 1 MB batches:
	 * 14 % less CPU). A 16 KB batch is still warm at seal, and there the
	 * call per record cost more than it saved (100 B records). */
	if (p->c.conf.compression == CH_COMPRESSION_NONE && p->c.conf.batch_size >= CRC_AT_APPEND)
		ch_batch_builder_track_crc(&b->bb);
	b->created = now;
	b->deadline = now + p->c.conf.delivery_timeout_ms;
	b->pid = -1;
	b->epoch = -1;
	b->base_seq = -1;
	b->base_offset = -1;
	b->append_time = -1;
	return b;
}

/* Queue tail of pp (c->mu held). */
static void
queue_push(ppart *pp, pbatch *b)
{
	b->next = NULL;
	if (pp->tail)
		pp->tail->next = b;
	else
		pp->head = b;
	pp->tail = b;
}

/* Whether a was sent before b (both sent): by order, then for the pieces
 * of one split batch by sub (a batch's pieces take sub keys within its
 * span, so a piece split again stays before its batch's later pieces). */
static bool
order_before(const pbatch *a, const pbatch *b)
{
	return a->order < b->order || (a->order == b->order && a->sub < b->sub);
}

/* Put a batch back for a retry: before every batch sent later than it,
 * so the queue stays in send order (c->mu held). */
static void
queue_requeue(ppart *pp, pbatch *b)
{
	pbatch **pp_next = &pp->head, *prev = NULL;
	while (*pp_next && (*pp_next)->order && order_before(*pp_next, b)) {
		prev = *pp_next;
		pp_next = &(*pp_next)->next;
	}
	b->next = *pp_next;
	*pp_next = b;
	if (!b->next)
		pp->tail = b;
	(void)prev;
}

/* An upper bound of a record's encoded size in a batch (Java's
 * estimateSizeInBytesUpperBound without the batch header). */
static size_t
record_bound(size_t klen, size_t vlen, size_t hlen)
{
	/* length 5, attributes 1, timestamp delta 10, offset delta 5, key and
	 * value lengths 5 each, header count 5 */
	return 36 + klen + vlen + hlen;
}

/* Encodes the headers into p->hdrs (c->mu held); false on OOM. */
static bool
encode_headers(cohort_producer *p, const cohort_header *h, size_t n)
{
	ch_buf_reset(&p->hdrs);
	for (size_t i = 0; i < n; i++) {
		size_t kl = strlen(h[i].key);
		ch_wr_varint(&p->hdrs, (int32_t)kl);
		ch_buf_append(&p->hdrs, h[i].key, kl);
		if (!h[i].value) {
			ch_wr_varint(&p->hdrs, -1);
		} else {
			ch_wr_varint(&p->hdrs, h[i].value_len);
			ch_buf_append(&p->hdrs, h[i].value, (size_t)h[i].value_len);
		}
	}
	return ch_buf_ok(&p->hdrs);
}

/* ---- topics ----------------------------------------------------------- */

/* I/O thread: ask the metadata for a topic a producing thread needs. */
typedef struct want_msg {
	cohort_producer *p;
	char *name;
} want_msg;

/* I/O thread: adds the topic to the metadata's list and refreshes. */
static void
io_want(ch_loop *loop, void *ud)
{
	(void)loop;
	want_msg *m = ud;
	ch_str s = ch_str_c(m->name);
	if (!m->p->c.closing && cl_metadata_want(&m->p->c, &s, 1))
		cl_metadata_refresh(&m->p->c);
	free(m->name);
	free(m);
}

/* I/O thread: fresh metadata, for a partition a producing thread does not see. */
static void
io_refresh(ch_loop *loop, void *ud)
{
	(void)loop;
	cohort_producer *p = ud;
	cl_metadata_refresh(&p->c);
}

/* The topic entry of name, created when missing; NULL on OOM (c->mu). */
static ptopic *
topic_get(cohort_producer *p, const char *name)
{
	for (ptopic *t = p->topics; t; t = t->next)
		if (strcmp(t->name, name) == 0)
			return t;
	ptopic *t = calloc(1, sizeof(*t));
	want_msg *m = calloc(1, sizeof(*m));
	if (!t || !m || !(t->name = strdup(name)) || !(m->name = strdup(name))) {
		if (t)
			free(t->name);
		free(t);
		free(m);
		return NULL;
	}
	t->nparts = -1;
	t->sticky = -1;
	t->asked = true;
	t->next = p->topics;
	p->topics = t;
	m->p = p;
	ch_loop_post(p->c.loop, io_want, m);
	return t;
}

/* Metadata answered (I/O thread): partition counts and leaders of the
 * producer's topics, the waiting producing threads woken, batches sent. */
static void
on_metadata(cl_client *c)
{
	cohort_producer *p = (cohort_producer *)c;
	cl_lock(c);
	for (ptopic *t = p->topics; t; t = t->next) {
		const cl_md_topic *md = cl_metadata_topic(c, t->name);
		if (!md)
			continue;
		if (md->err == CH_KERR_INVALID_TOPIC_EXCEPTION ||
		    md->err == CH_KERR_TOPIC_AUTHORIZATION_FAILED) {
			t->err = md->err;
			continue;
		}
		if (md->err || md->nparts <= 0)
			continue; /* not there yet (auto-creation, a new topic): wait */
		if (md->nparts > t->nparts) {
			ppart **np = realloc(t->parts, sizeof(*np) * (size_t)md->nparts);
			int32_t *na = realloc(t->avail, sizeof(*na) * (size_t)md->nparts);
			if (np)
				t->parts = np;
			if (na)
				t->avail = na;
			if (!np || !na)
				continue;
			int32_t from = t->nparts < 0 ? 0 : t->nparts;
			for (int32_t i = from; i < md->nparts; i++) {
				ppart *pp = calloc(1, sizeof(*pp));
				if (!pp)
					break;
				pp->t = t;
				pp->partition = i;
				pp->leader = -1;
				t->parts[i] = pp;
				t->nparts = i + 1;
			}
		}
		t->navail = 0;
		for (int32_t i = 0; i < t->nparts; i++)
			t->parts[i]->leader = -1;
		for (int32_t i = 0; i < md->nparts; i++) {
			const cl_md_partition *mp = &md->parts[i];
			if (mp->partition < 0 || mp->partition >= t->nparts)
				continue;
			ppart *pp = t->parts[mp->partition];
			pp->leader = mp->err ? -1 : mp->leader;
			if (pp->leader >= 0)
				t->avail[t->navail++] = pp->partition;
		}
	}
	pthread_cond_broadcast(&c->cond);
	cl_unlock(c);
	sender_run(p);
}

/* ---- producing (any thread) --------------------------------------------- */

/* I/O thread: a producing thread made a batch ready or started one. */
static void
io_wake(ch_loop *loop, void *ud)
{
	(void)loop;
	sender_run(ud);
}

/* Ask the I/O thread to look at the queues, once until it does (c->mu held).
 * Returns whether the caller must post io_wake after unlocking. */
static bool
wake_locked(cohort_producer *p)
{
	if (p->wake_posted)
		return false;
	p->wake_posted = true;
	return true;
}

/* The monotonic clock in ms, read on the first call for *now (-1 before). */
static inline int64_t
lazy_now(int64_t *now)
{
	if (*now < 0)
		*now = ch_now_mono_ms();
	return *now;
}

/* Waits on c->cond until the monotonic deadline (c->mu held); false when it passed. */
static bool
wait_until(cl_client *c, int64_t deadline)
{
	int64_t left = deadline - ch_now_mono_ms();
	if (left <= 0)
		return false;
	struct timespec ts;
	cl_deadline_ts(&ts, left);
	pthread_cond_timedwait(&c->cond, &c->mu, &ts);
	return true;
}

/* Whether a record of `need` bytes goes into pp's open batch (c->mu held). */
static bool
fits(const cohort_producer *p, const ppart *pp, size_t need)
{
	const pbatch *b = pp->tail;
	size_t room = (size_t)CH_MIN(p->c.conf.batch_size, p->c.conf.max_request_size);
	return b && !b->full && !b->sealed && b->order == 0 && b->buf.len + need <= room;
}

cohort_err
cohort_produce(cohort_producer *p, const char *topic, int32_t partition, const void *key,
	       size_t key_len, const void *value, size_t value_len, const cohort_header *headers,
	       size_t nheaders, int64_t timestamp, void *msg_opaque)
{
	if (!p || !topic || !topic[0] || partition < COHORT_PARTITION_ANY ||
	    timestamp < COHORT_TIMESTAMP_NOW || (nheaders && !headers) || key_len > INT32_MAX ||
	    value_len > INT32_MAX)
		return COHORT_ERR__INVALID_ARG;
	size_t hlen = 0;
	for (size_t i = 0; i < nheaders; i++) {
		if (!headers[i].key || headers[i].value_len < 0)
			return COHORT_ERR__INVALID_ARG;
		hlen += 10 + strlen(headers[i].key) + (headers[i].value ? headers[i].value_len : 0);
	}
	cl_client *c = &p->c;
	const cohort_conf *cf = &c->conf;
	if (timestamp == COHORT_TIMESTAMP_NOW)
		timestamp = ch_now_wall_ms();
	size_t need = record_bound(key ? key_len : 0, value ? value_len : 0, hlen);
	/* RecordTooLargeException: against max.request.size and buffer.memory */
	if (need + CH_BATCH_HDR_SIZE > (size_t)cf->max_request_size ||
	    (int64_t)(need + CH_BATCH_HDR_SIZE) > cf->buffer_memory)
		return COHORT_ERR_MESSAGE_TOO_LARGE;
	/* the monotonic clock only when a wait or a new batch needs it: most
	 * records need neither (one clock read per record less) */
	int64_t now = -1;
	bool post = false;
	cohort_err err = COHORT_OK;
	cl_lock(c);
	ptopic *t = NULL;
	if (p->closed_p)
		err = COHORT_ERR__CLOSED;
	else if (p->fatal)
		err = COHORT_ERR__FATAL;
	else if (!(t = topic_get(p, topic)))
		err = COHORT_ERR__NOMEM;
	/* Java's waitOnMetadata: the topic, and that partition of it, within
	 * max.block.ms */
	bool refreshed = false;
	while (!err && !t->err && (t->nparts < 0 || partition >= t->nparts)) {
		if (t->nparts >= 0 && !refreshed) {
			/* partitions may have been added since: look again */
			ch_loop_post(c->loop, io_refresh, p);
			refreshed = true;
		}
		if (p->closed_p || p->fatal)
			err = p->closed_p ? COHORT_ERR__CLOSED : COHORT_ERR__FATAL;
		else if (!wait_until(c, lazy_now(&now) + cf->max_block_ms))
			err = COHORT_ERR__TIMED_OUT;
	}
	if (!err && t->err)
		err = t->err;
	if (err) {
		cl_unlock(c);
		return err;
	}
	ppart *pp;
	int32_t k = partition;
	if (k < 0)
		k = cl_part_for_key((cl_partitioner)cf->partitioner, key, key_len, t->nparts);
	if (k < 0) {
		/* KIP-480: the sticky partition until it needs a new batch */
		if (t->sticky < 0 || t->sticky >= t->nparts)
			t->sticky =
				cl_part_sticky_next(t->avail, t->navail, t->nparts, -1, &p->rng);
		if (!fits(p, t->parts[t->sticky], need))
			t->sticky = cl_part_sticky_next(t->avail, t->navail, t->nparts, t->sticky,
							&p->rng);
		k = t->sticky;
	}
	pp = t->parts[k];
	/* buffer.memory: wait for room (max.block.ms), never inside a callback */
	size_t cost = need + CH_BATCH_HDR_SIZE + sizeof(pmsg);
	while (p->mem_used + (int64_t)cost > cf->buffer_memory) {
		if (in_callback == p || p->closed_p ||
		    !wait_until(c, lazy_now(&now) + cf->max_block_ms)) {
			cl_unlock(c);
			return p->closed_p ? COHORT_ERR__CLOSED : COHORT_ERR__QUEUE_FULL;
		}
	}
	pbatch *b = pp->tail;
	if (!fits(p, pp, need)) {
		if (b && !b->sealed && b->order == 0 && !b->full) {
			b->full = true; /* the next one starts: this one is ready */
			post |= wake_locked(p);
		}
		if (!(b = batch_new(p, pp, timestamp, lazy_now(&now)))) {
			cl_unlock(c);
			return COHORT_ERR__NOMEM;
		}
		queue_push(pp, b);
		post |= wake_locked(p); /* its linger starts */
	}
	if (b->n == b->cap) {
		int32_t cap = b->cap ? b->cap * 2 : 16;
		pmsg *nm = realloc(b->msgs, sizeof(*nm) * (size_t)cap);
		if (!nm) {
			cl_unlock(c);
			return COHORT_ERR__NOMEM;
		}
		b->msgs = nm;
		b->cap = cap;
	}
	if (nheaders && !encode_headers(p, headers, nheaders)) {
		cl_unlock(c);
		return COHORT_ERR__NOMEM;
	}
	size_t before = b->buf.len;
	ch_bytes kb = key ? (ch_bytes){key, (int32_t)key_len} : CH_BYTES_NULL;
	ch_bytes vb = value ? (ch_bytes){value, (int32_t)value_len} : CH_BYTES_NULL;
	ch_batch_builder_add(&b->bb, b->n, timestamp, kb, vb, (int32_t)nheaders,
			     nheaders ? p->hdrs.data : NULL, nheaders ? p->hdrs.len : 0);
	if (!ch_buf_ok(&b->buf)) {
		/* the builder's buffer is unusable now: fail the batch's records
		 * at its next send rather than lose them silently */
		b->full = true;
		cl_unlock(c);
		return COHORT_ERR__NOMEM;
	}
	b->msgs[b->n++] = (pmsg){msg_opaque, timestamp};
	size_t grew =
		b->buf.len - before + sizeof(pmsg) + (before == CH_BATCH_HDR_SIZE ? before : 0);
	b->acct += grew;
	p->mem_used += (int64_t)grew;
	p->unfinished++;
	if (b->buf.len >= (size_t)cf->batch_size) {
		b->full = true;
		post |= wake_locked(p);
	}
	cl_unlock(c);
	if (post)
		ch_loop_post(c->loop, io_wake, p);
	return COHORT_OK;
}

/* ---- finishing batches (I/O thread) ---------------------------------------- */

/* A batch is done with err (COHORT_OK: written at base_offset): its memory
 * but the reports' part is released, its records counted finished, and it
 * waits for a poll to run its reports (freed now without a callback). */
static void
batch_done(cohort_producer *p, pbatch *b, cohort_err err)
{
	cl_client *c = &p->c;
	b->err = err;
	size_t keep = c->conf.delivery_cb ? sizeof(pmsg) * (size_t)b->n : 0;
	cl_lock(c);
	buf_release(p, &b->buf);
	p->mem_used -= (int64_t)(b->acct - keep);
	b->acct = keep;
	p->unfinished -= b->n;
	if (c->conf.delivery_cb) {
		b->next = NULL;
		if (p->rep_tail)
			p->rep_tail->next = b;
		else
			p->rep_head = b;
		p->rep_tail = b;
		b = NULL;
	}
	pthread_cond_broadcast(&c->cond);
	cl_unlock(c);
	batch_free(b);
}

/* Fails every queued batch with err (I/O thread; closing or fatal). */
static void
fail_queued(cohort_producer *p, cohort_err err)
{
	cl_client *c = &p->c;
	pbatch *list = NULL, **tail = &list;
	cl_lock(c);
	for (ptopic *t = p->topics; t; t = t->next)
		for (int32_t i = 0; i < t->nparts; i++) {
			ppart *pp = t->parts[i];
			if (!pp->head)
				continue;
			*tail = pp->head;
			tail = &pp->tail->next;
			pp->head = pp->tail = NULL;
		}
	cl_unlock(c);
	while (list) {
		pbatch *b = list;
		list = b->next;
		batch_done(p, b, err);
	}
}

/* ---- idempotence: the producer id ---------------------------------------- */

/* Encodes InitProducerId for an idempotent producer: no transactional id,
 * the current id and epoch for a bump (v3+), as Java sends it. */
static void
build_pid(cl_client *c, int16_t version, ch_buf *b, void *ud)
{
	(void)c;
	cohort_producer *p = ud;
	ch_InitProducerIdRequest m;
	ch_InitProducerIdRequest_init(&m);
	m.TransactionalId = CH_STR_NULL;
	m.TransactionTimeoutMs = INT32_MAX;
	m.ProducerId = p->pid;
	m.ProducerEpoch = p->epoch;
	ch_InitProducerIdRequest_encode(b, version, &m);
}

/* The pid timer: retry InitProducerId after its backoff. */
static void
on_pid_timer(ch_loop *loop, ch_timer *t, void *ud)
{
	(void)loop;
	(void)t;
	pid_request(ud);
}

/* A new epoch (or id): every partition's sequences restart at 0 (I/O thread,
 * nothing in flight). */
static void
reset_sequences(cohort_producer *p)
{
	cl_lock(&p->c);
	for (ptopic *t = p->topics; t; t = t->next)
		for (int32_t i = 0; i < t->nparts; i++) {
			ppart *pp = t->parts[i];
			pp->next_seq = pp->acked_next = 0;
			pp->acked_once = pp->stalled = false;
		}
	cl_unlock(&p->c);
}

/* InitProducerId answered: the id and epoch (sequences restart at 0), a
 * retry after a backoff, or a fatal error that fails every batch. */
static void
done_pid(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	(void)version;
	cohort_producer *p = ud;
	if (c->closing)
		return;
	int16_t kerr = err ? 0 : ((ch_InitProducerIdResponse *)resp)->ErrorCode;
	cohort_err e = err ? err : kerr;
	if (!e) {
		ch_InitProducerIdResponse *m = resp;
		if (m->ProducerId != p->pid)
			CH_LOGI(CL_LOG, "producer %s: producer id %lld epoch %d", c->client_id,
				(long long)m->ProducerId, m->ProducerEpoch);
		p->pid = m->ProducerId;
		p->epoch = m->ProducerEpoch;
		p->pid_fails = 0;
		p->pid_state = PID_OK;
		reset_sequences(p);
		sender_run(p);
		return;
	}
	if (cohort_err_is_retriable(e)) {
		p->pid_state = PID_WANTED;
		p->pid_fails++;
		ch_timer_arm(c->loop, &p->pid_timer,
			     ch_loop_now(c->loop) + cl_backoff(c->conf.retry_backoff_ms,
							       c->conf.retry_backoff_max_ms,
							       p->pid_fails));
		return;
	}
	CH_LOGW(CL_LOG, "producer %s: InitProducerId failed: %s", c->client_id, cohort_err_name(e));
	p->pid_state = PID_FATAL;
	cl_lock(c);
	p->fatal = e;
	pthread_cond_broadcast(&c->cond);
	cl_unlock(c);
	fail_queued(p, e);
}

/* Sends InitProducerId to any broker (I/O thread). */
static void
pid_request(cohort_producer *p)
{
	cl_client *c = &p->c;
	if (c->closing || p->pid_state != PID_WANTED)
		return;
	cl_broker *b = cl_broker_any(c);
	if (!b)
		return;
	p->pid_state = PID_INFLIGHT;
	cl_request(b, CH_APIKEY_INIT_PRODUCER_ID, build_pid, done_pid, p);
}

/* A sequence gap: bump the epoch once nothing is in flight (I/O thread). */
static void
epoch_bump(cohort_producer *p)
{
	if (p->pid_state == PID_OK)
		p->pid_state = PID_BUMP_WAIT;
}

/* The bump, nothing being in flight: as Java's idempotent producer, the
 * epoch goes up locally (the broker takes a higher epoch at sequence 0);
 * an exhausted epoch asks InitProducerId for a new id. */
static void
bump_now(cohort_producer *p)
{
	if (p->pid_state != PID_BUMP_WAIT || p->requests > 0)
		return;
	if (p->epoch < INT16_MAX) {
		p->epoch++;
		CH_LOGI(CL_LOG, "producer %s: producer id %lld bumped to epoch %d", p->c.client_id,
			(long long)p->pid, p->epoch);
		p->pid_state = PID_OK;
		reset_sequences(p);
		return;
	}
	p->pid = -1;
	p->epoch = -1;
	p->pid_state = PID_WANTED;
	pid_request(p);
}

/* ---- the sender (I/O thread) --------------------------------------------- */

/* One Produce request: batches of several partitions for one leader. */
typedef struct preq {
	struct preq *next;
	cohort_producer *p;
	cl_broker *b;
	pbatch **batches;
	int32_t n, cap;
	size_t bytes;
} preq;

void
cl_produce_encode(cl_client *c, ch_buf *out, int16_t version, int16_t acks, int32_t timeout_ms,
		  const cl_produce_part *parts, int32_t n)
{
	/* ch_msg_ProduceRequest.c's layout: v9+ flexible (compact lengths,
	 * tagged fields) */
	bool flex = version >= 9;
	ch_wr_str(out, CH_STR_NULL, flex); /* TransactionalId */
	ch_wr_i16(out, acks);
	ch_wr_i32(out, timeout_ms);
	int32_t nt = 0;
	for (int32_t i = 0; i < n; i++) {
		int32_t j = 0;
		while (j < i && parts[j].topic != parts[i].topic)
			j++;
		nt += j == i;
	}
	ch_wr_array_len(out, nt, flex);
	for (int32_t i = 0; i < n; i++) {
		int32_t j = 0, np = 0;
		while (j < i && parts[j].topic != parts[i].topic)
			j++;
		if (j < i)
			continue; /* written with the topic's first partition */
		for (j = i; j < n; j++)
			np += parts[j].topic == parts[i].topic;
		ch_wr_str(out, ch_str_c(parts[i].topic), flex);
		ch_wr_array_len(out, np, flex);
		for (j = i; j < n; j++) {
			if (parts[j].topic != parts[i].topic)
				continue;
			ch_wr_i32(out, parts[j].partition);
			if (flex)
				ch_wr_uvarint(out, (uint32_t)parts[j].len + 1);
			else
				ch_wr_i32(out, (int32_t)parts[j].len);
			cl_request_ref(c, out, parts[j].records, parts[j].len);
			if (flex)
				ch_wr_uvarint(out, 0); /* partition tagged fields */
		}
		if (flex)
			ch_wr_uvarint(out, 0); /* topic tagged fields */
	}
	if (flex)
		ch_wr_uvarint(out, 0);
}

/* Encodes the Produce request of r: its batches, sent from their buffers (they stay put until
 * done_produce). */
static void
build_produce(cl_client *c, int16_t version, ch_buf *out, void *ud)
{
	preq *r = ud;
	cl_produce_part *parts = calloc((size_t)r->n, sizeof(*parts));
	if (!parts) {
		out->oom = true;
		return;
	}
	for (int32_t i = 0; i < r->n; i++) {
		const pbatch *b = r->batches[i];
		parts[i] = (cl_produce_part){b->pp->t->name, b->pp->partition, b->buf.data,
					     b->buf.len};
	}
	cl_produce_encode(c, out, version, c->conf.acks, c->conf.request_timeout_ms, parts, r->n);
	free(parts);
}

/* Whether err says the metadata is stale (leader moved, topic changed, or a lost connection). */
static bool
stale_metadata(cohort_err err)
{
	switch (err) {
	case CH_KERR_NOT_LEADER_OR_FOLLOWER:
	case CH_KERR_UNKNOWN_TOPIC_OR_PARTITION:
	case CH_KERR_LEADER_NOT_AVAILABLE:
	case CH_KERR_KAFKA_STORAGE_ERROR:
	case CH_KERR_FENCED_LEADER_EPOCH:
	case CH_KERR_UNKNOWN_LEADER_EPOCH:
	case COHORT_ERR__TRANSPORT:
	case COHORT_ERR__TIMED_OUT:
		return true;
	default:
		return false;
	}
}

/* A split in progress (batch_split): the pieces begun so far. */
typedef struct split_ctx {
	cohort_producer *p;
	pbatch *b; /* the refused batch */
	pbatch *head, **tail;
	int32_t n;
} split_ctx;

/* cl_split_piece_fn: a new piece of s->b, made as any batch (c->mu held);
 * its n holds the index of its first record until the split ends. */
static ch_batch_builder *
split_piece(void *ud, int32_t first, int64_t ts)
{
	split_ctx *s = ud;
	pbatch *nb = batch_new(s->p, s->b->pp, ts, s->b->created);
	if (!nb)
		return NULL;
	nb->n = first;
	*s->tail = nb;
	s->tail = &nb->next;
	s->n++;
	return &nb->bb;
}

/*
 * Java's Sender.completeBatch on MESSAGE_TOO_LARGE for a batch of several
 * records (ProducerBatch.split, RecordAccumulator.splitAndReenqueue): b's
 * records rebuilt into smaller batches that go back to the front of the
 * queue in its place, in order, each with its records' share of the
 * reports. They keep b's creation time and delivery deadline, and its
 * producer id and epoch, with base sequences from b's on (piece k at
 * b->base_seq + the records before it): the broker took none of b's
 * range, so nothing has a gap and the epoch stays.
 *
 * Unlike Java, which splits at batch.size, a piece is at most half of b
 * (and at most batch.size): a batch of batch.size or less refused by a
 * topic with a smaller max.message.bytes would come out of Java's split
 * whole again (one piece, refused again until delivery.timeout.ms), where
 * halving splits a refused piece again, down to single records.
 *
 * false (b unchanged): not split (malformed, out of memory); it fails.
 */
static bool
batch_split(cohort_producer *p, pbatch *b)
{
	cl_client *c = &p->c;
	ppart *pp = b->pp;
	size_t limit = CH_MIN((size_t)c->conf.batch_size, b->buf.len / 2);
	split_ctx s = {p, b, NULL, &s.head, 0};
	bool ok = false;
	cl_lock(c);
	/* b->acct counts b's records uncompressed: the bound of their inflation */
	int32_t np = cl_batch_split(b->buf.data, b->buf.len, limit, b->acct, split_piece, &s);
	*s.tail = NULL;
	if (np < 2 || np != s.n || b->span / (uint64_t)np == 0)
		goto out;
	for (pbatch *nb = s.head; nb; nb = nb->next) {
		int32_t first = nb->n, cnt = nb->bb.count;
		if (!(nb->msgs = malloc(sizeof(pmsg) * (size_t)cnt)))
			goto out;
		memcpy(nb->msgs, b->msgs + first, sizeof(pmsg) * (size_t)cnt);
	}
	uint64_t step = b->span / (uint64_t)np;
	int64_t acct = 0;
	uint32_t k = 0;
	for (pbatch *nb = s.head; nb; nb = nb->next, k++) {
		int32_t first = nb->n;
		nb->n = nb->cap = nb->bb.count;
		nb->full = true;
		nb->piece = true;
		nb->deadline = b->deadline;
		nb->pid = b->pid;
		nb->epoch = b->epoch;
		nb->base_seq = cl_split_seq(b->base_seq, first);
		nb->order = b->order;
		nb->sub = (uint32_t)(b->sub + k * step);
		nb->span = step;
		nb->acct = nb->buf.len + sizeof(pmsg) * (size_t)nb->n;
		acct += (int64_t)nb->acct;
	}
	p->mem_used += acct - (int64_t)b->acct;
	while (s.head) {
		pbatch *nb = s.head;
		s.head = nb->next;
		queue_requeue(pp, nb);
	}
	buf_release(p, &b->buf);
	ok = true;
	CH_LOGD(CL_LOG, "producer %s: %s [%d]: %d records too large in one batch: split in %d",
		c->client_id, pp->t->name, pp->partition, b->n, np);
out:
	while (s.head) {
		pbatch *nb = s.head;
		s.head = nb->next;
		batch_free(nb);
	}
	cl_unlock(c);
	if (ok)
		batch_free(b);
	return ok;
}

/* The outcome of one batch of a Produce answer (I/O thread): delivered,
 * back in its queue for a retry, or failed. */
static void
batch_result(cohort_producer *p, pbatch *b, cohort_err err, int64_t base, int64_t append_time,
	     bool *refresh)
{
	cl_client *c = &p->c;
	ppart *pp = b->pp;
	pp->inflight--;
	pp->pieces_out -= b->piece;
	if (err == COHORT_OK || err == CH_KERR_DUPLICATE_SEQUENCE_NUMBER) {
		b->base_offset = err ? -1 : base;
		b->append_time = append_time;
		if (p->idempotent && b->pid == p->pid && b->epoch == p->epoch) {
			pp->acked_next = b->base_seq + b->n;
			pp->acked_once = true;
		}
		batch_done(p, b, COHORT_OK);
		return;
	}
	if (err == CH_KERR_MESSAGE_TOO_LARGE && b->n > 1 && !c->closing && batch_split(p, b)) {
		/* the pieces go once the partition's batches in flight are back */
		pp->stalled = true;
		return;
	}
	int64_t now = ch_now_mono_ms();
	bool retriable = cohort_err_is_retriable(err);
	bool bump = false;
	if (p->idempotent &&
	    (err == CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER || err == CH_KERR_UNKNOWN_PRODUCER_ID)) {
		/* Java's TransactionManager.canRetry: the next expected batch
		 * with a gap means the broker lost the producer's state (bump);
		 * a later one only follows an earlier failure (plain retry) */
		retriable = true;
		bump = b->pid == p->pid && b->epoch == p->epoch && b->base_seq == pp->acked_next;
	}
	if (stale_metadata(err))
		*refresh = true;
	b->attempts++;
	if (retriable && !c->closing && b->attempts <= c->conf.retries && now < b->deadline) {
		CH_LOGD(CL_LOG, "producer %s: %s [%d] attempt %d failed (%s): retrying",
			c->client_id, pp->t->name, pp->partition, b->attempts,
			cohort_err_name(err));
		b->retry_at = now + cl_backoff(c->conf.retry_backoff_ms,
					       c->conf.retry_backoff_max_ms, b->attempts);
		cl_lock(c);
		queue_requeue(pp, b);
		cl_unlock(c);
		pp->stalled = true;
		if (bump)
			epoch_bump(p);
		return;
	}
	cohort_err final = c->closing                        ? COHORT_ERR__CLOSED
			   : retriable && now >= b->deadline ? COHORT_ERR__TIMED_OUT
							     : err;
	CH_LOGD(CL_LOG, "producer %s: %s [%d]: %d records failed: %s", c->client_id, pp->t->name,
		pp->partition, b->n, cohort_err_name(final));
	/* the sequence numbers after it now have a gap: restart them */
	if (p->idempotent && !c->closing && b->base_seq >= 0)
		epoch_bump(p);
	batch_done(p, b, final);
}

/* Produce answered (or failed: err): each batch's outcome, then more sending. */
static void
done_produce(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	(void)version;
	preq *r = ud;
	cohort_producer *p = r->p;
	r->b->producing--;
	p->requests--;
	bool refresh = false;
	const ch_ProduceResponse *m = resp;
	for (int32_t i = 0; i < r->n; i++) {
		pbatch *b = r->batches[i];
		cohort_err e = err;
		int64_t base = -1, lat = -1;
		if (!err && m) {
			e = CH_KERR_UNKNOWN_TOPIC_OR_PARTITION; /* not in the answer */
			for (int32_t ti = 0; ti < m->Responses_n; ti++) {
				const ch_ProduceResponse_TopicProduceResponse *tr =
					&m->Responses[ti];
				if (!ch_str_eq_c(tr->Name, b->pp->t->name))
					continue;
				for (int32_t pi = 0; pi < tr->PartitionResponses_n; pi++) {
					const ch_ProduceResponse_PartitionProduceResponse *pr =
						&tr->PartitionResponses[pi];
					if (pr->Index != b->pp->partition)
						continue;
					e = pr->ErrorCode;
					base = pr->BaseOffset;
					lat = pr->LogAppendTimeMs;
				}
			}
		}
		batch_result(p, b, e, base, lat, &refresh);
	}
	free(r->batches);
	free(r);
	if (c->closing)
		return;
	if (refresh)
		cl_metadata_refresh(c);
	bump_now(p);
	/* not sender_run from here: acks=0 answers inside cl_request */
	ch_timer_arm(c->loop, &p->timer, ch_loop_now(c->loop));
}

/* Seals b for sending: producer id, epoch and sequence (new ones after an
 * epoch bump), records compressed the first time, CRC. false: the batch
 * cannot be built (out of memory, codec failure). */
static bool
batch_seal(cohort_producer *p, pbatch *b)
{
	ppart *pp = b->pp;
	if (!b->order) {
		b->order = ++pp->next_order;
		b->sub = 0;
		b->span = (uint64_t)UINT32_MAX + 1;
	}
	if (p->idempotent && (b->pid != p->pid || b->epoch != p->epoch || b->base_seq < 0)) {
		b->pid = p->pid;
		b->epoch = p->epoch;
		b->base_seq = pp->next_seq;
		pp->next_seq = (int32_t)(((int64_t)pp->next_seq + b->n) & INT32_MAX);
	}
	if (!ch_buf_ok(&b->buf))
		return false;
	uint8_t *h = b->buf.data;
	ch_be_put64(h + 43, (uint64_t)b->pid);
	h[51] = (uint8_t)((uint16_t)b->epoch >> 8);
	h[52] = (uint8_t)b->epoch;
	ch_be_put32(h + 53, (uint32_t)b->base_seq);
	if (!b->sealed) {
		if (ch_batch_builder_end_codec(&b->bb, -1, p->c.conf.compression) != CH_OK)
			return false;
		b->sealed = true;
	} else {
		ch_be_put32(h + 17, ch_batch_compute_crc(h, b->buf.len));
	}
	return true;
}

/* Whether the head batch b of pp may leave now; *at gets when it will be. */
static bool
batch_ready(const cohort_producer *p, const pbatch *b, int64_t now, bool flushing, int64_t *at)
{
	if (b->retry_at > now) {
		*at = b->retry_at;
		return false;
	}
	if (b->full || b->next || b->order || flushing)
		return true;
	int64_t linger = b->created + p->c.conf.linger_ms;
	if (now >= linger)
		return true;
	*at = linger;
	return false;
}

/* The sender's timer: linger.ms, retry backoffs and delivery deadlines. */
static void
on_timer(ch_loop *loop, ch_timer *t, void *ud)
{
	(void)loop;
	(void)t;
	sender_run(ud);
}

/* Sends what is ready (I/O thread): expired batches failed, ready ones
 * drained into one request per leader (several rounds while leaders have
 * room in flight), the timer armed for the next moment something will be
 * ready. */
static void
sender_run(cohort_producer *p)
{
	cl_client *c = &p->c;
	if (c->closing)
		return;
	if (p->pid_state == PID_WANTED && !ch_timer_armed(&p->pid_timer))
		pid_request(p);
	int64_t now = ch_now_mono_ms();
	int64_t next = -1;
	bool can_send = !p->idempotent || p->pid_state == PID_OK;
	pbatch *expired = NULL;
	for (int round = 0; round < c->conf.max_in_flight; round++) {
		preq *reqs = NULL;
		bool oom = false;
		cl_lock(c);
		p->wake_posted = false;
		bool flushing = p->flushing > 0;
		for (ptopic *t = p->topics; t; t = t->next)
			for (int32_t i = 0; i < t->nparts; i++) {
				ppart *pp = t->parts[i];
				pbatch *b;
				/* delivery.timeout.ms passed while queued */
				while ((b = pp->head) && now >= b->deadline && !pp->stalled) {
					pp->head = b->next;
					if (!pp->head)
						pp->tail = NULL;
					b->next = expired;
					expired = b;
				}
				if (!b)
					continue;
				if (next < 0 || b->deadline < next)
					next = b->deadline;
				if (pp->stalled && pp->inflight > 0)
					continue;
				/* A broker without state for this producer on the
				 * partition takes any first sequence: until one batch
				 * of the epoch is acknowledged, one in flight, or a
				 * later batch could land before a retried first one
				 * (seen on Kafka 4.4: the first Produce to a new topic
				 * is NOT_LEADER_OR_FOLLOWER, the next one is written). */
				if (p->idempotent && !pp->acked_once && pp->inflight > 0)
					continue;
				/* Without idempotence a piece of a split batch goes
				 * alone: it may be refused as too large again, and
				 * nothing would stop the broker from writing what was
				 * sent after it first (Java reorders there with
				 * max.in.flight.requests.per.connection > 1). With
				 * idempotence the broker refuses those (sequence
				 * gap), and they are resent in order. */
				if (!p->idempotent && pp->inflight > 0 &&
				    (b->piece || pp->pieces_out > 0))
					continue;
				pp->stalled = false;
				int64_t at = -1;
				if (!can_send || pp->leader < 0)
					continue;
				if (!batch_ready(p, b, now, flushing, &at)) {
					if (at >= 0 && (next < 0 || at < next))
						next = at;
					continue;
				}
				cl_broker *br = cl_broker_find(c, pp->leader);
				if (!br)
					continue;
				preq *r = reqs;
				while (r && r->b != br)
					r = r->next;
				if (!r && br->producing >= c->conf.max_in_flight)
					continue;
				if (r && r->bytes + b->buf.len > (size_t)c->conf.max_request_size)
					continue;
				if (!r) {
					if (!(r = calloc(1, sizeof(*r)))) {
						oom = true;
						continue;
					}
					r->p = p;
					r->b = br;
					r->next = reqs;
					reqs = r;
					br->producing++; /* counted now: the round's limit */
				}
				if (r->n == r->cap) {
					int32_t cap = r->cap ? r->cap * 2 : 8;
					pbatch **nb =
						realloc(r->batches, sizeof(*nb) * (size_t)cap);
					if (!nb) {
						oom = true;
						continue;
					}
					r->batches = nb;
					r->cap = cap;
				}
				pp->head = b->next;
				if (!pp->head)
					pp->tail = NULL;
				b->next = NULL;
				r->batches[r->n++] = b;
				r->bytes += b->buf.len;
				pp->inflight++;
				pp->pieces_out += b->piece;
			}
		cl_unlock(c);
		bool sent = false;
		while (reqs) {
			preq *r = reqs;
			reqs = r->next;
			/* seal outside the lock: compression takes time */
			int32_t keep = 0;
			for (int32_t i = 0; i < r->n; i++) {
				pbatch *b = r->batches[i];
				if (batch_seal(p, b)) {
					r->batches[keep++] = b;
				} else {
					b->pp->inflight--;
					b->pp->pieces_out -= b->piece;
					batch_done(p, b, COHORT_ERR__NOMEM);
				}
			}
			r->n = keep;
			if (r->n == 0) {
				r->b->producing--;
				free(r->batches);
				free(r);
				continue;
			}
			p->requests++;
			sent = true;
			if (c->conf.acks == 0)
				cl_request_noreply(r->b, CH_APIKEY_PRODUCE, build_produce,
						   done_produce, r);
			else
				cl_request(r->b, CH_APIKEY_PRODUCE, build_produce, done_produce, r);
		}
		if (!sent || oom)
			break;
	}
	while (expired) {
		pbatch *b = expired;
		expired = b->next;
		if (p->idempotent && b->base_seq >= 0)
			epoch_bump(p); /* its sequence numbers are lost: a gap */
		batch_done(p, b, COHORT_ERR__TIMED_OUT);
	}
	if (p->pid_state == PID_BUMP_WAIT && p->requests == 0) {
		bump_now(p);
		ch_timer_arm(c->loop, &p->timer, ch_loop_now(c->loop)); /* send again */
	}
	if (next >= 0)
		ch_timer_arm(c->loop, &p->timer, next);
}

/* I/O thread, while stopping: queued batches fail (CLOSED), timers stop. */
static void
on_stop(cl_client *c)
{
	cohort_producer *p = (cohort_producer *)c;
	ch_timer_cancel(c->loop, &p->timer);
	ch_timer_cancel(c->loop, &p->pid_timer);
	fail_queued(p, COHORT_ERR__CLOSED);
}

/* I/O thread's first producer task: the producer id (idempotence). */
static void
io_begin(ch_loop *loop, void *ud)
{
	(void)loop;
	cohort_producer *p = ud;
	if (p->idempotent)
		pid_request(p);
}

/* ---- public calls ------------------------------------------------------------- */

void
cohort_conf_set_delivery_cb(cohort_conf *conf, cohort_delivery_cb cb, void *opaque)
{
	conf->delivery_cb = cb;
	conf->delivery_opaque = opaque;
}

/* ProducerConfig's checks of a configuration, and its resolved
 * idempotence (Java turns the default off when it conflicts). */
static bool
check_conf(const cohort_conf *cf, bool *idempotent, char *errstr, size_t esz)
{
	if (cf->nbootstrap == 0) {
		cl_errstr(errstr, esz, "No resolvable bootstrap urls given in bootstrap.servers");
		return false;
	}
	if (cf->delivery_timeout_ms < cf->linger_ms + cf->request_timeout_ms &&
	    cl_conf_user_set(cf, "delivery.timeout.ms")) {
		cl_errstr(errstr, esz,
			  "delivery.timeout.ms should be equal to or larger than linger.ms + "
			  "request.timeout.ms");
		return false;
	}
	bool explicit_idem = cl_conf_user_set(cf, "enable.idempotence");
	*idempotent = cf->enable_idempotence;
	if (!*idempotent)
		return true;
	const char *why = NULL;
	if (cf->max_in_flight > 5)
		why = "Must set max.in.flight.requests.per.connection to at most 5 to use the "
		      "idempotent producer.";
	else if (cf->retries == 0)
		why = "Must set retries to non-zero when using the idempotent producer.";
	else if (cf->acks != -1)
		why = "Must set acks to all in order to use the idempotent producer. Otherwise we "
		      "cannot guarantee idempotence.";
	if (why && explicit_idem) {
		cl_errstr(errstr, esz, "%s", why);
		return false;
	}
	if (why)
		*idempotent = false; /* Java: the default yields to the conflicting setting */
	return true;
}

cohort_producer *
cohort_producer_new(const cohort_conf *conf, char *errstr, size_t errstr_size)
{
	if (!conf) {
		cl_errstr(errstr, errstr_size, "cohort_producer_new: NULL conf");
		return NULL;
	}
	bool idem;
	if (!check_conf(conf, &idem, errstr, errstr_size))
		return NULL;
	cohort_producer *p = calloc(1, sizeof(*p));
	if (!p) {
		cl_errstr(errstr, errstr_size, "out of memory");
		return NULL;
	}
	cl_client *c = &p->c;
	if (!cl_client_init(c, conf, CL_PRODUCER, errstr, errstr_size)) {
		free(p);
		return NULL;
	}
	c->on_stop = on_stop;
	c->on_metadata = on_metadata;
	p->idempotent = idem;
	p->pid_state = idem ? PID_WANTED : PID_NONE;
	p->pid = -1;
	p->epoch = -1;
	p->rng = (uint64_t)ch_now_mono_ms() * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)p;
	if (!p->rng)
		p->rng = 1;
	ch_buf_init(&p->hdrs);
	ch_timer_init(&p->timer, on_timer, p);
	ch_timer_init(&p->pid_timer, on_pid_timer, p);
	ch_loop_post(c->loop, io_begin, p);
	if (!cl_client_start(c, errstr, errstr_size)) {
		cl_client_release(c);
		ch_buf_free(&p->hdrs);
		free(p);
		return NULL;
	}
	return p;
}

/* Runs the reports of the finished batches taken from the queue; returns
 * how many ran. Waits up to timeout_ms for the first when none is due. */
static int
run_reports(cohort_producer *p, int64_t timeout_ms)
{
	cl_client *c = &p->c;
	cl_lock(c);
	int64_t deadline = ch_now_mono_ms() + timeout_ms;
	while (!p->rep_head && timeout_ms != 0 && !c->closed) {
		if (timeout_ms < 0)
			pthread_cond_wait(&c->cond, &c->mu);
		else if (!wait_until(c, deadline))
			break;
	}
	pbatch *list = p->rep_head;
	p->rep_head = p->rep_tail = NULL;
	for (pbatch *b = list; b; b = b->next) {
		p->mem_used -= (int64_t)b->acct; /* produce inside a callback has room */
		b->acct = 0;
	}
	if (list)
		pthread_cond_broadcast(&c->cond);
	cl_unlock(c);
	int ran = 0;
	cohort_producer *outer = in_callback;
	in_callback = p;
	while (list) {
		pbatch *b = list;
		list = b->next;
		for (int32_t i = 0; i < b->n; i++) {
			cohort_delivery d = {
				.topic = b->pp->t->name,
				.partition = b->pp->partition,
				.offset = b->err || b->base_offset < 0 ? -1 : b->base_offset + i,
				.timestamp = b->append_time >= 0 && !b->err ? b->append_time
									    : b->msgs[i].timestamp,
				.err = b->err,
				.opaque = b->msgs[i].opaque,
			};
			c->conf.delivery_cb(p, &d, c->conf.delivery_opaque);
			ran++;
		}
		batch_free(b);
	}
	in_callback = outer;
	return ran;
}

int
cohort_producer_poll(cohort_producer *p, int timeout_ms)
{
	return run_reports(p, timeout_ms < 0 ? -1 : timeout_ms);
}

cohort_err
cohort_flush(cohort_producer *p, int timeout_ms)
{
	cl_client *c = &p->c;
	if (c->closed)
		return COHORT_ERR__CLOSED;
	int64_t deadline = timeout_ms < 0 ? INT64_MAX : ch_now_mono_ms() + timeout_ms;
	cl_lock(c);
	p->flushing++;
	bool post = wake_locked(p);
	cl_unlock(c);
	if (post)
		ch_loop_post(c->loop, io_wake, p);
	cohort_err err = COHORT_OK;
	for (;;) {
		run_reports(p, 0);
		cl_lock(c);
		bool done = p->unfinished == 0 && !p->rep_head;
		if (!done && !p->rep_head) {
			if (timeout_ms < 0)
				pthread_cond_wait(&c->cond, &c->mu);
			else if (!wait_until(c, deadline))
				err = COHORT_ERR__TIMED_OUT;
		}
		if (done || err) {
			p->flushing--;
			cl_unlock(c);
			return err;
		}
		cl_unlock(c);
	}
}

cohort_err
cohort_producer_fatal_error(cohort_producer *p)
{
	cl_lock(&p->c);
	cohort_err err = p->fatal;
	cl_unlock(&p->c);
	return err;
}

cohort_err
cohort_producer_close(cohort_producer *p, int timeout_ms)
{
	cl_client *c = &p->c;
	if (c->closed)
		return COHORT_ERR__CLOSED;
	cohort_err err = cohort_flush(p, timeout_ms);
	cl_lock(c);
	p->closed_p = true;
	pthread_cond_broadcast(&c->cond);
	cl_unlock(c);
	cl_client_stop(c); /* what is left fails with CLOSED */
	run_reports(p, 0);
	return err;
}

void
cohort_producer_free(cohort_producer *p)
{
	if (!p)
		return;
	if (!p->c.closed)
		cohort_producer_close(p, -1);
	run_reports(p, 0);
	cl_client_release(&p->c);
	for (ptopic *t = p->topics; t;) {
		ptopic *next = t->next;
		for (int32_t i = 0; i < t->nparts; i++) {
			for (pbatch *b = t->parts[i]->head; b;) {
				pbatch *bn = b->next;
				batch_free(b);
				b = bn;
			}
			free(t->parts[i]);
		}
		free(t->parts);
		free(t->avail);
		free(t->name);
		free(t);
		t = next;
	}
	ch_buf_free(&p->hdrs);
	while (p->nspare > 0)
		ch_buf_free(&p->spare[--p->nspare]);
	free(p);
}

const char *
cohort_producer_auth_error(cohort_producer *p)
{
	return cl_client_auth_error(&p->c);
}
