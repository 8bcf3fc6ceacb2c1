/*
 * ch_producer_state.c: see ch_producer_state.h.
 */
#include "broker/ch_producer_state.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_buf.h"
#include "common/ch_common.h"
#include "log/ch_seg.h"
#include "proto/generated/ch_errors.h"

/* Reads of the tail at rebuild go this many bytes at a time. */
#define REBUILD_CHUNK (1 << 20)

/* One producer: epoch, last batch's max timestamp, last batches (a ring,
 * head the latest). */
typedef struct producer {
	int64_t pid;
	int16_t epoch;
	int64_t last_timestamp; /* max timestamp of its last batch (wall ms) */
	int n;                  /* batches remembered, up to CH_PRODUCER_BATCHES */
	int head;               /* index of the latest */
	ch_producer_batch b[CH_PRODUCER_BATCHES];
} producer;

void
ch_producer_state_init(ch_producer_state *ps)
{
	ch_map_init(&ps->producers);
	ps->last = NULL;
}

void
ch_producer_state_free(ch_producer_state *ps)
{
	ch_map_foreach (&ps->producers, e)
		free(e->value);
	ch_map_free(&ps->producers);
	ps->last = NULL;
}

size_t
ch_producer_state_count(const ch_producer_state *ps)
{
	return ps->producers.n;
}

/* The producer's entry, or NULL. The key is the id's bytes in host order:
 * only this process ever reads it. */
static producer *
find(ch_producer_state *ps, int64_t pid)
{
	producer *st = ps->last;
	if (st && st->pid == pid)
		return st;
	st = ch_map_get(&ps->producers, &pid, sizeof(pid));
	if (st)
		ps->last = st;
	return st;
}

/* seq + n in Kafka's wrapping sequence space (INT32_MAX + 1 is 0). */
static int32_t
seq_add(int32_t seq, int32_t n)
{
	int64_t s = (int64_t)seq + n;
	return (int32_t)(s > INT32_MAX ? s - INT32_MAX - 1 : s);
}

int
ch_producer_state_check(ch_producer_state *ps, const ch_batch_hdr *h, ch_producer_batch *dup)
{
	const producer *st = find(ps, h->producer_id);
	if (!st || st->n == 0)
		return 0;
	if (h->producer_epoch < st->epoch)
		return CH_KERR_INVALID_PRODUCER_EPOCH;
	if (h->producer_epoch > st->epoch)
		return h->base_sequence == 0 ? 0 : CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
	int32_t last_seq = seq_add(h->base_sequence, h->last_offset_delta);
	for (int i = 0; i < st->n; i++) {
		const ch_producer_batch *b = &st->b[i];
		if (b->first_seq == h->base_sequence && b->last_seq == last_seq) {
			*dup = *b;
			return CH_PRODUCER_DUPLICATE;
		}
	}
	if (h->base_sequence != seq_add(st->b[st->head].last_seq, 1))
		return CH_KERR_OUT_OF_ORDER_SEQUENCE_NUMBER;
	return 0;
}

void
ch_producer_state_update(ch_producer_state *ps, const ch_batch_hdr *h)
{
	producer *st = find(ps, h->producer_id);
	if (!st) {
		st = ch_xcalloc(1, sizeof(*st));
		st->pid = h->producer_id;
		st->epoch = h->producer_epoch;
		ch_map_put(&ps->producers, &st->pid, sizeof(st->pid), st);
		ps->last = st;
	}
	if (h->producer_epoch != st->epoch) {
		st->epoch = h->producer_epoch;
		st->n = 0;
	}
	int slot = st->n == 0 ? 0 : (st->head + 1) % CH_PRODUCER_BATCHES;
	st->b[slot] = (ch_producer_batch){h->base_sequence,
					  seq_add(h->base_sequence, h->last_offset_delta),
					  h->base_offset, ch_batch_last_offset(h)};
	st->head = slot;
	if (st->n < CH_PRODUCER_BATCHES)
		st->n++;
	st->last_timestamp = h->max_timestamp;
}

size_t
ch_producer_state_expire(ch_producer_state *ps, int64_t now_ms, int64_t expiration_ms)
{
	size_t n = 0;
	ch_map_foreach_safe(&ps->producers, e, tmp)
	{
		producer *st = e->value;
		/* Kafka: currentTimeMs - lastTimestamp >= producerIdExpirationMs,
		 * written so that a client's wild timestamp cannot overflow. */
		if (st->last_timestamp <= now_ms - expiration_ms) {
			ch_map_remove_entry(&ps->producers, e);
			if (ps->last == st)
				ps->last = NULL;
			free(st);
			n++;
		}
	}
	return n;
}

/*
 * The offset from which the last `budget` bytes of the log start (at a batch
 * boundary): walks back whole segments while they fit, then binary-searches
 * the segment where the budget runs out for the first batch at or after
 * (segment size - what is left of the budget). ch_plog_read finds a batch by
 * offset through the sparse index, so this costs O(log n) small reads.
 */
static int64_t
tail_start(ch_plog *pl, int64_t budget)
{
	int64_t start = ch_plog_start_offset(pl);
	int64_t hi = ch_plog_end_offset(pl);
	while (hi > start && budget > 0) {
		ch_plog_slice sl;
		int16_t kerr;
		if (ch_plog_read(pl, hi - 1, 1, &sl, &kerr) != CH_OK || sl.len == 0)
			return hi;
		ch_seg *seg = sl.seg;
		int64_t base = CH_MAX(seg->base, start);
		int64_t size = seg->size;
		ch_plog_slice_release(&sl);
		if (size <= budget) {
			budget -= size;
			hi = base;
			continue;
		}
		int64_t want = size - budget; /* first batch at or after this position */
		int64_t lo = base, up = hi - 1;
		while (lo < up) {
			int64_t mid = lo + (up - lo) / 2;
			if (ch_plog_read(pl, mid, 1, &sl, &kerr) != CH_OK)
				return hi;
			bool after = sl.len == 0 || sl.seg != seg || sl.pos >= want;
			ch_plog_slice_release(&sl);
			if (after)
				up = mid;
			else
				lo = mid + 1;
		}
		return lo;
	}
	return hi;
}

/*
 * Producer state after a restart (Kafka rebuilds it from its snapshots and
 * the log): the headers of the batches in the last tail_bytes of the log
 * are replayed through ch_producer_state_update, oldest first, so each
 * producer whose last batches are there gets back its epoch and last five
 * batches' sequence ranges and offsets. A retried batch is then a duplicate
 * answered with its original offsets, and a gap is
 * OUT_OF_ORDER_SEQUENCE_NUMBER, as before the restart. Bounded work: at most
 * that many bytes read, headers parsed, no decompression.
 */
int64_t
ch_producer_state_rebuild(ch_producer_state *ps, ch_plog *pl, int64_t tail_bytes)
{
	int64_t off = tail_start(pl, tail_bytes);
	int64_t end = ch_plog_end_offset(pl);
	ch_buf buf;
	ch_buf_init(&buf);
	int64_t batches = 0;
	while (off < end) {
		int16_t kerr;
		ch_buf_reset(&buf);
		if (ch_plog_read_copy(pl, off, REBUILD_CHUNK, &buf, &kerr) != CH_OK || buf.len == 0)
			break;
		size_t pos = 0;
		int64_t next = off;
		while (pos < buf.len) {
			ch_batch_hdr h;
			if (ch_batch_parse_hdr(buf.data + pos, buf.len - pos, 0, &h) !=
				    CH_BATCH_OK ||
			    ch_batch_size(&h) > (int64_t)(buf.len - pos))
				break; /* cut short by the chunk: read on from there */
			pos += (size_t)ch_batch_size(&h);
			next = ch_batch_last_offset(&h) + 1;
			batches++;
			if (h.producer_id >= 0 && !(h.attributes & CH_BATCH_ATTR_CONTROL) &&
			    ch_batch_last_offset(&h) >= off)
				ch_producer_state_update(ps, &h);
		}
		if (next <= off)
			break; /* no whole batch: recovery left a valid log, so never */
		off = next;
	}
	ch_buf_free(&buf);
	return batches;
}

/* ---- producer ids ------------------------------------------------------------ */

void
ch_producer_ids_init(ch_producer_ids *ids, int64_t wall_ms)
{
	ids->next = wall_ms * 1000;
}

int64_t
ch_producer_ids_next(ch_producer_ids *ids)
{
	return ids->next++;
}
