/*
 * ch_partition.c: one partition: its life, append, replay, DeleteRecords
 * and watches. See ch_partition.h for the model and ch_broker_int.h for
 * what the log manager drives.
 */
#include "broker/ch_partition.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/ch_broker_int.h"
#include "common/ch_buf.h"
#include "common/ch_common.h"
#include "common/ch_log.h"
#include "config/ch_config.h"
#include "proto/generated/ch_errors.h"

#define SUB "partition"
#define REPLAY_CHUNK (1 << 20)
#define REPLAY_MAX_DECOMPRESSED (256u << 20)

/* ---- life ---------------------------------------------------------------- */

ch_part *
ch_part_open(ch_log_manager *lm, const char *topic, int32_t index, ch_uuid topic_id,
	     const ch_plog_config *pc, int *err)
{
	ch_plog *pl = NULL;
	int r = ch_plog_open(lm->cfg->log_dir, topic, index, pc, lm->fs, ch_now_wall_ms(), &pl);
	if (r != CH_OK) {
		*err = r;
		return NULL;
	}
	ch_part *p = ch_xcalloc(1, sizeof(*p));
	p->lm = lm;
	p->topic = ch_xstrdup(topic);
	p->index = index;
	p->topic_id = topic_id;
	p->pl = pl;
	p->cfg = *pc;
	p->watch_head.next = p->watch_head.prev = &p->watch_head;
	ch_producer_state_init(&p->producers);
	int64_t batches =
		ch_producer_state_rebuild(&p->producers, pl, CH_PRODUCER_STATE_TAIL_BYTES);
	size_t n_prod = ch_producer_state_count(&p->producers);
	if (n_prod)
		CH_LOGI(SUB,
			"%s-%d: producer state of %zu producer(s) rebuilt from %" PRId64
			" batch(es) at the log's tail",
			topic, index, n_prod, batches);
	CH_LOGD(SUB, "opened %s-%d: offsets [%" PRId64 ", %" PRId64 "), %zu producer(s)", topic,
		index, ch_plog_start_offset(pl), ch_plog_end_offset(pl), n_prod);
	return p;
}

/* Syncs (unless the log is failed or going away) and closes the log, removes
 * its directory when asked, frees the partition. */
static void
part_free_now(ch_part *p)
{
	if (!p->remove_dir && !ch_plog_failed(p->pl))
		ch_plog_sync(p->pl);
	ch_plog_close(p->pl);
	if (p->remove_dir) {
		char *d = ch_lm_part_dir(p->lm, p->topic, p->index);
		ch_lm_rm_dir(d);
		free(d);
	}
	ch_producer_state_free(&p->producers);
	free(p->topic);
	free(p);
}

void
ch_part_maybe_free(ch_part *p)
{
	if (p->retired && !p->sync_busy && !p->clean_busy && !p->lso_busy)
		part_free_now(p);
}

static void lso_release(ch_part *p, int16_t kerr, int64_t upto);

void
ch_part_retire(ch_part *p, int16_t kerr, bool remove_dir)
{
	p->retired = true;
	p->remove_dir = remove_dir;
	p->retire_kerr = kerr;
	while (p->watch_head.next != &p->watch_head) {
		ch_part_watch *w = p->watch_head.next;
		ch_part_watch_remove(w);
		w->fn(w, CH_PART_EV_GONE);
	}
	if (!p->sync_busy)
		ch_lm_release_durable(p, kerr, 0);
	else
		p->sync_again = false; /* sync_done fails or releases them */
	if (!p->lso_busy)
		lso_release(p, kerr, INT64_MAX);
	ch_part_maybe_free(p);
}

ch_plog *
ch_part_log(ch_part *p)
{
	return p->pl;
}

const char *
ch_part_topic(const ch_part *p)
{
	return p->topic;
}

int32_t
ch_part_index(const ch_part *p)
{
	return p->index;
}

ch_uuid
ch_part_topic_id(const ch_part *p)
{
	return p->topic_id;
}

/* ---- DeleteRecords: the log start offset, moved durably ----------------------- */

/* Calls (and frees) the DeleteRecords waiters whose target is at most upto:
 * with kerr, or (kerr 0) with the log start offset as their low watermark. */
static void
lso_release(ch_part *p, int16_t kerr, int64_t upto)
{
	for (lso_waiter **pp = &p->lso_head; *pp;) {
		lso_waiter *w = *pp;
		if (w->target > upto) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		w->cb(w->ud, kerr, kerr ? -1 : ch_plog_start_offset(p->pl));
		free(w);
	}
}

/* Worker thread: writes (and fsyncs) the new log start offset. */
static void
lso_run(ch_work *j)
{
	ch_part *p = j->ud;
	p->lso_rc = ch_plog_start_offset_write(p->pl, p->lso_target);
}

static void lso_done(ch_work *j);

/* Writes the largest target waiting, if no write runs. */
static void
lso_kick(ch_part *p)
{
	if (p->lso_busy || !p->lso_head)
		return;
	int64_t target = 0;
	for (lso_waiter *w = p->lso_head; w; w = w->next)
		target = CH_MAX(target, w->target);
	p->lso_busy = true;
	p->lso_target = target;
	p->lso_job.run = lso_run;
	p->lso_job.done = lso_done;
	p->lso_job.ud = p;
	ch_workers_queue(p->lm->workers, &p->lso_job);
}

/* Loop thread, after the write: moves the start offset (deleting segments
 * below it) and answers the waiters it covers; then the next write. */
static void
lso_done(ch_work *j)
{
	ch_part *p = j->ud;
	p->lso_busy = false;
	if (p->retired) {
		lso_release(p, p->retire_kerr, INT64_MAX);
		ch_part_maybe_free(p);
		return;
	}
	if (p->lso_rc < 0) {
		CH_LOGE(SUB, "%s-%d: cannot persist log start offset %" PRId64 ": %s", p->topic,
			p->index, p->lso_target, strerror(-p->lso_rc));
		lso_release(p, CH_KERR_KAFKA_STORAGE_ERROR, p->lso_target);
	} else {
		int64_t before = ch_plog_start_offset(p->pl);
		int64_t start = ch_plog_start_offset_set(p->pl, p->lso_target);
		if (start != before)
			CH_LOGI(SUB,
				"%s-%d: log start offset %" PRId64 " -> %" PRId64
				" (DeleteRecords)",
				p->topic, p->index, before, start);
		lso_release(p, 0, p->lso_target);
	}
	lso_kick(p);
}

void
ch_part_delete_records(ch_part *p, int64_t before, ch_part_lso_fn cb, void *ud)
{
	int64_t target;
	int16_t kerr = 0;
	if (p->retired) {
		kerr = CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	} else if (!p->cfg.cleanup_delete) {
		kerr = CH_KERR_POLICY_VIOLATION; /* Partition.deleteRecordsOnLeader */
	} else if (ch_plog_start_offset_check(p->pl, before, &target, &kerr) == CH_OK &&
		   target <= ch_plog_start_offset(p->pl)) {
		cb(ud, 0, ch_plog_start_offset(p->pl)); /* nothing to move */
		return;
	}
	if (kerr) {
		cb(ud, kerr, -1);
		return;
	}
	lso_waiter *w = ch_xmalloc(sizeof(*w));
	*w = (lso_waiter){p->lso_head, target, cb, ud};
	p->lso_head = w;
	lso_kick(p);
}

/* ---- append ----------------------------------------------------------------------- */

/* The idempotence check before an append: the first batch of an idempotent
 * producer in data decides. 0 to append (*any_pid: some batch has a
 * producer id), a Kafka error, or CH_PRODUCER_DUPLICATE with the original
 * in *dup. */
static int
producer_check(ch_part *p, const uint8_t *data, size_t len, ch_producer_batch *dup, int64_t *pid,
	       bool *any_pid)
{
	*any_pid = false;
	ch_batch_hdr h;
	for (size_t pos = 0; pos < len;) {
		if (ch_batch_parse_hdr(data + pos, len - pos, 0, &h) != CH_BATCH_OK)
			break; /* ch_plog_append rejects it */
		if (h.producer_id >= 0) {
			*pid = h.producer_id;
			int r = ch_producer_state_check(&p->producers, &h, dup);
			*any_pid = r == 0;
			return r;
		}
		if (ch_batch_size(&h) > (int64_t)(len - pos))
			break;
		pos += (size_t)ch_batch_size(&h);
	}
	return 0;
}

int16_t
ch_part_append(ch_part *p, uint8_t *data, size_t len, ch_part_durable_fn durable, void *ud,
	       ch_plog_append_info *info)
{
	memset(info, 0, sizeof(*info));
	if (p->retired)
		return CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	ch_producer_batch dup;
	int64_t pid = -1;
	bool any_pid;
	int r = producer_check(p, data, len, &dup, &pid, &any_pid);
	if (r == CH_PRODUCER_DUPLICATE) {
		info->base_offset = dup.base_offset;
		info->last_offset = dup.last_offset;
		info->log_append_time = -1;
		info->log_start_offset = ch_plog_start_offset(p->pl);
		CH_LOGD(SUB,
			"%s-%d: duplicate batch of producer %" PRId64 " seq %d (offset %" PRId64
			")",
			p->topic, p->index, pid, dup.first_seq, dup.base_offset);
		if (durable)
			ch_lm_park_durable(p, dup.base_offset, dup.last_offset, durable, ud);
		return 0;
	}
	if (r)
		return (int16_t)r;
	int16_t kerr = 0;
	if (ch_plog_append(p->pl, data, len, ch_now_wall_ms(), info, &kerr) != CH_OK)
		return kerr ? kerr : CH_KERR_KAFKA_STORAGE_ERROR;
	if (any_pid) {
		/* The headers as stored: offsets and LogAppendTime assigned. */
		ch_batch_hdr h;
		for (size_t pos = 0; pos < len;) {
			if (ch_batch_parse_hdr(data + pos, len - pos, 0, &h) != CH_BATCH_OK)
				break;
			if (h.producer_id >= 0)
				ch_producer_state_update(&p->producers, &h);
			pos += (size_t)ch_batch_size(&h);
		}
	}
	p->appended_bytes += len;
	for (ch_part_watch *w = p->watch_head.next, *nx; w != &p->watch_head; w = nx) {
		nx = w->next;
		w->fn(w, CH_PART_EV_APPEND);
	}
	if (durable)
		ch_lm_park_durable(p, info->base_offset, info->last_offset, durable, ud);
	else if (ch_plog_flush_due(p->pl, ch_now_wall_ms()))
		ch_lm_want_sync(p);
	return 0;
}

/* ---- replay -------------------------------------------------------------------------- */

/* Calls fn for the records of one batch at or after `from`. 0 to go on,
 * fn's non-zero value, or -1 with *kerr for a batch that does not decode. */
static int
replay_batch(const uint8_t *batch, const ch_batch_hdr *h, int64_t from, ch_buf *scratch,
	     ch_part_record_fn fn, void *ud, int16_t *kerr)
{
	const uint8_t *rp;
	size_t rl;
	ch_buf_reset(scratch);
	if (ch_batch_records(batch, h, scratch, REPLAY_MAX_DECOMPRESSED, &rp, &rl) != CH_OK) {
		*kerr = CH_KERR_CORRUPT_MESSAGE;
		return -1;
	}
	ch_record_iter it;
	ch_record_iter_init(&it, rp, rl, h->records_count);
	ch_record rec;
	int r, rc = 0;
	while ((r = ch_record_next(&it, &rec)) == 1) {
		int64_t o = h->base_offset + rec.offset_delta;
		if (o < from)
			continue;
		int64_t ts = (h->attributes & CH_BATCH_ATTR_LOG_APPEND_TIME)
				     ? h->max_timestamp
				     : h->base_timestamp + rec.timestamp_delta;
		if ((rc = fn(ud, h, &rec, o, ts)) != 0)
			return rc;
	}
	if (r < 0 || it.err) {
		*kerr = CH_KERR_CORRUPT_MESSAGE;
		return -1;
	}
	return 0;
}

int
ch_part_replay(ch_part *p, int64_t from, ch_part_record_fn fn, void *ud, int16_t *kerr)
{
	*kerr = 0;
	int64_t off = CH_MAX(from, ch_plog_start_offset(p->pl));
	int64_t end = ch_plog_end_offset(p->pl);
	ch_buf buf, scratch;
	ch_buf_init(&buf);
	ch_buf_init(&scratch);
	int rc = 0;
	while (off < end && rc == 0) {
		ch_buf_reset(&buf);
		if (ch_plog_read_copy(p->pl, off, REPLAY_CHUNK, &buf, kerr) != CH_OK) {
			rc = -1;
			break;
		}
		if (buf.len == 0)
			break;
		size_t pos = 0;
		int64_t next = off;
		while (pos < buf.len && rc == 0) {
			ch_batch_hdr h;
			int e = ch_batch_parse_hdr(buf.data + pos, buf.len - pos, 0, &h);
			if (e == CH_BATCH_ESHORT ||
			    (e == CH_BATCH_OK && ch_batch_size(&h) > (int64_t)(buf.len - pos)))
				break; /* cut short by the chunk: read on from there */
			if (e != CH_BATCH_OK) {
				*kerr = CH_KERR_CORRUPT_MESSAGE;
				rc = -1;
				break;
			}
			const uint8_t *batch = buf.data + pos;
			pos += (size_t)ch_batch_size(&h);
			next = ch_batch_last_offset(&h) + 1;
			if (ch_batch_last_offset(&h) >= off)
				rc = replay_batch(batch, &h, off, &scratch, fn, ud, kerr);
		}
		if (rc == 0 && next == off) {
			/* no whole batch in a chunk: cannot happen (a read returns at
			 * least one whole batch); refuse to spin */
			*kerr = CH_KERR_CORRUPT_MESSAGE;
			rc = -1;
		}
		off = next;
	}
	ch_buf_free(&buf);
	ch_buf_free(&scratch);
	return rc;
}

/* ---- watches ------------------------------------------------------------------- */

void
ch_part_watch_add(ch_part *p, ch_part_watch *w)
{
	w->part = p;
	w->prev = p->watch_head.prev;
	w->next = &p->watch_head;
	p->watch_head.prev->next = w;
	p->watch_head.prev = w;
}

void
ch_part_watch_remove(ch_part_watch *w)
{
	if (!w->part)
		return;
	w->prev->next = w->next;
	w->next->prev = w->prev;
	w->prev = w->next = NULL;
	w->part = NULL;
}

uint64_t
ch_part_appended_bytes(const ch_part *p)
{
	return p->appended_bytes;
}
