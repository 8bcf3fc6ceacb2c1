/*
 * ch_clean.c: log compaction (cleanup.policy=compact). The protocol (begin
 * on the loop thread, run anywhere, finish on the loop thread) and the crash
 * story are in ch_plog.h; this file is the mechanics.
 *
 * The offset map holds every key of the closed segments with the offset of
 * its latest record (keys copied; Kafka keeps a fixed-size map of key
 * hashes instead, log.cleaner.dedupe.buffer.size, and cleans in rounds when
 * it fills; TODO when memory says so).
 *
 * Rewriting a batch: kept as it is, bytes untouched (compression and CRC
 * included), when all its records survive; dropped when none does;
 * otherwise rebuilt with the same baseOffset, lastOffsetDelta, producer
 * fields, timestamps, attributes and codec, holding the surviving records
 * with their original offset deltas. Control batches are always kept.
 * Records with a null key (which a compacted topic should refuse) are kept.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"
#include "common/ch_hash.h"
#include "common/ch_log.h"
#include "log/ch_plog_int.h"

#define SUB "log"
#define MAX_DECOMPRESSED (256u << 20)

/* ---- key -> latest offset map (open addressing) ------------------------------- */

typedef struct omap_ent {
	uint64_t hash; /* 0 = empty slot */
	uint8_t *key;
	int32_t klen;
	int64_t offset;
} omap_ent;

typedef struct omap {
	omap_ent *e;
	size_t cap; /* power of two */
	size_t n;
} omap;

static uint64_t
key_hash(const uint8_t *k, int32_t n)
{
	uint64_t h = ch_hash_bytes(k, (size_t)n);
	return h ? h : 1;
}

/* The slot holding key k (hash h), or the empty slot where it would go. Needs m->cap > 0 and a
 * free slot (omap_put keeps the table under 3/4 full), or it never returns. */
static omap_ent *
omap_slot(omap *m, const uint8_t *k, int32_t n, uint64_t h)
{
	for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		omap_ent *e = &m->e[i];
		if (e->hash == 0 ||
		    (e->hash == h && e->klen == n && (n == 0 || memcmp(e->key, k, (size_t)n) == 0)))
			return e;
	}
}

/* Records offset for key k if it is the key's largest yet; a new key is copied (m owns the copy).
 * Grows the table first (doubling, from 1024) to stay under 3/4 full. */
static void
omap_put(omap *m, const uint8_t *k, int32_t n, int64_t offset)
{
	if ((m->n + 1) * 4 > m->cap * 3) {
		omap old = *m;
		m->cap = old.cap ? old.cap * 2 : 1024;
		m->e = ch_xcalloc(m->cap, sizeof(omap_ent));
		for (size_t i = 0; i < old.cap; i++)
			if (old.e[i].hash)
				*omap_slot(m, old.e[i].key, old.e[i].klen, old.e[i].hash) =
					old.e[i];
		free(old.e);
	}
	uint64_t h = key_hash(k, n);
	omap_ent *e = omap_slot(m, k, n, h);
	if (e->hash == 0) {
		e->hash = h;
		e->klen = n;
		e->key = ch_xmalloc((size_t)n + 1);
		if (n)
			memcpy(e->key, k, (size_t)n);
		m->n++;
		e->offset = offset;
	} else if (offset > e->offset) {
		e->offset = offset;
	}
}

/* The largest offset recorded for key k, or -1 if k is not in m. */
static int64_t
omap_get(omap *m, const uint8_t *k, int32_t n)
{
	if (!m->cap)
		return -1;
	omap_ent *e = omap_slot(m, k, n, key_hash(k, n));
	return e->hash ? e->offset : -1;
}

/* Frees the table and every key copy; m is left dangling, not reset. */
static void
omap_free(omap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->e[i].key);
	free(m->e);
}

/* ---- the clean ---------------------------------------------------------------- */

struct ch_plog_clean {
	ch_logfs *fs;
	char *dir;
	int32_t index_interval;
	int64_t tombstone_horizon; /* tombstones in segments older than this go */
	size_t n;
	ch_seg **src; /* referenced, marked cleaning */
	ch_seg **dst; /* the .cleaned segments (NULL until run) */
	int rc;       /* result of run */
	int64_t bytes_in, bytes_out;
};

ch_plog_clean *
ch_plog_clean_begin(ch_plog *pl, int64_t now_ms)
{
	if (pl->cleaning || pl->n_segs < 2)
		return NULL;
	ch_plog_clean *c = ch_xcalloc(1, sizeof(*c));
	c->fs = pl->fs;
	c->dir = ch_xstrdup(pl->dir);
	c->index_interval = pl->cfg.index_interval_bytes;
	c->tombstone_horizon = now_ms - pl->cfg.delete_retention_ms;
	c->n = pl->n_segs - 1;
	c->src = ch_xcalloc(c->n, sizeof(ch_seg *));
	c->dst = ch_xcalloc(c->n, sizeof(ch_seg *));
	for (size_t i = 0; i < c->n; i++) {
		c->src[i] = ch_seg_ref(pl->segs[i]);
		c->src[i]->cleaning = true;
	}
	c->rc = CH_ERR;
	pl->cleaning = true;
	return c;
}

/* Calls fn for every batch of s. fn returns 0 to go on, -errno to stop. */
typedef int (*batch_fn)(void *ctx, ch_seg *s, const uint8_t *b, const ch_batch_hdr *h,
			const uint8_t *recs, size_t rlen);

/* Walks closed segment s batch by batch: fn gets the batch (in buf) and its records (inflated into
 * scratch; none for control batches). 0, -errno from a read or fn, -EUCLEAN on a bad batch. */
static int
each_batch(ch_seg *s, ch_buf *buf, ch_buf *scratch, batch_fn fn, void *ctx)
{
	int64_t pos = 0, end = s->size;
	while (pos < end) {
		ch_seg_pos bp;
		uint8_t hb[CH_BATCH_HDR_SIZE];
		int r = ch_logfs_read_full(s->fs, s->fd_log, hb, sizeof(hb), pos);
		if (r < 0)
			return r;
		if (ch_batch_parse_hdr(hb, sizeof(hb), 0, &bp.h) != CH_BATCH_OK)
			return -EUCLEAN;
		bp.pos = pos;
		if ((r = ch_seg_read_batch(s, &bp, buf)) < 0)
			return r;
		const uint8_t *recs = NULL;
		size_t rlen = 0;
		if (!(bp.h.attributes & CH_BATCH_ATTR_CONTROL) &&
		    ch_batch_records(buf->data, &bp.h, scratch, MAX_DECOMPRESSED, &recs, &rlen) !=
			    CH_OK)
			return -EUCLEAN;
		if ((r = fn(ctx, s, buf->data, &bp.h, recs, rlen)) < 0)
			return r;
		pos += ch_batch_size(&bp.h);
	}
	return 0;
}

/* batch_fn of the first pass: puts every keyed record of a data batch into the omap ctx at its
 * absolute offset; control batches and null keys are skipped. -EUCLEAN on bad records. */
static int
map_batch(void *ctx, ch_seg *s, const uint8_t *b, const ch_batch_hdr *h, const uint8_t *recs,
	  size_t rlen)
{
	CH_UNUSED(s);
	CH_UNUSED(b);
	omap *m = ctx;
	if (h->attributes & CH_BATCH_ATTR_CONTROL)
		return 0;
	ch_record_iter it;
	ch_record rec;
	ch_record_iter_init(&it, recs, rlen, h->records_count);
	while (ch_record_next(&it, &rec) == 1)
		if (rec.key.len >= 0)
			omap_put(m, rec.key.p, rec.key.len, h->base_offset + rec.offset_delta);
	return it.err ? -EUCLEAN : 0;
}

typedef struct write_ctx {
	ch_plog_clean *c;
	omap *m;
	ch_seg *dst;
	ch_buf out;
} write_ctx;

/* Whether rec survives: a null key does; a keyed record only if it holds the key's latest offset,
 * and a tombstone only while s's largest timestamp is within delete.retention.ms. */
static bool
keep_record(write_ctx *w, ch_seg *s, const ch_batch_hdr *h, const ch_record *rec)
{
	if (rec->key.len < 0)
		return true;
	if (omap_get(w->m, rec->key.p, rec->key.len) != h->base_offset + rec->offset_delta)
		return false; /* a later record has this key */
	if (rec->value.len < 0 && s->max_ts < w->c->tombstone_horizon)
		return false; /* a tombstone past delete.retention.ms */
	return true;
}

/* Appends the whole batch b (len bytes) to w->dst and counts it in bytes_out: 0 or -errno
 * (-EUCLEAN if b's header does not parse). */
static int
append_dst(write_ctx *w, const uint8_t *b, size_t len)
{
	ch_batch_hdr h;
	if (ch_batch_parse_hdr(b, len, 0, &h) != CH_BATCH_OK)
		return -EUCLEAN;
	bool wedged = false;
	w->c->bytes_out += (int64_t)len;
	return ch_seg_append(w->dst, b, len, &h, 1, w->c->index_interval, &wedged);
}

/* batch_fn of the second pass: copies b to w->dst whole if all its records survive (control ones
 * always), drops it if none does, else rebuilds it with the survivors. 0 or -errno. */
static int
write_batch(void *ctx, ch_seg *s, const uint8_t *b, const ch_batch_hdr *h, const uint8_t *recs,
	    size_t rlen)
{
	write_ctx *w = ctx;
	size_t size = (size_t)ch_batch_size(h);
	w->c->bytes_in += (int64_t)size;
	if (h->attributes & CH_BATCH_ATTR_CONTROL)
		return append_dst(w, b, size);
	ch_record_iter it;
	ch_record rec;
	int32_t kept = 0;
	ch_record_iter_init(&it, recs, rlen, h->records_count);
	while (ch_record_next(&it, &rec) == 1)
		kept += keep_record(w, s, h, &rec);
	if (it.err)
		return -EUCLEAN;
	if (kept == h->records_count)
		return append_dst(w, b, size);
	if (kept == 0)
		return 0;
	ch_batch_builder bb;
	ch_buf_reset(&w->out);
	ch_batch_builder_begin(&bb, &w->out, h->base_offset, h->attributes, h->base_timestamp,
			       h->producer_id, h->producer_epoch, h->base_sequence);
	ch_record_iter_init(&it, recs, rlen, h->records_count);
	while (ch_record_next(&it, &rec) == 1)
		if (keep_record(w, s, h, &rec))
			ch_batch_builder_add(&bb, rec.offset_delta,
					     h->base_timestamp + rec.timestamp_delta, rec.key,
					     rec.value, rec.headers_count, rec.headers,
					     rec.headers_len);
	if (ch_batch_builder_end_codec(&bb, h->last_offset_delta, ch_batch_compression(h)) != CH_OK)
		return -ENOMEM;
	ch_batch_set_leader_epoch(w->out.data, h->partition_leader_epoch);
	if (h->attributes & CH_BATCH_ATTR_LOG_APPEND_TIME)
		ch_batch_set_log_append_time(w->out.data, w->out.len, h->max_timestamp);
	return append_dst(w, w->out.data, w->out.len);
}

int
ch_plog_clean_run(ch_plog_clean *c)
{
	omap m = {0};
	ch_buf buf, scratch;
	ch_buf_init(&buf);
	ch_buf_init(&scratch);
	int r = 0;
	for (size_t i = 0; i < c->n && r == 0; i++)
		r = each_batch(c->src[i], &buf, &scratch, map_batch, &m);
	write_ctx w = {.c = c, .m = &m};
	ch_buf_init(&w.out);
	for (size_t i = 0; i < c->n && r == 0; i++) {
		r = ch_seg_create(c->fs, c->dir, c->src[i]->base, ".cleaned", c->src[i]->roll_ts,
				  &c->dst[i]);
		if (r < 0)
			break;
		w.dst = c->dst[i];
		r = each_batch(c->src[i], &buf, &scratch, write_batch, &w);
		if (r == 0)
			r = ch_seg_sync(c->dst[i]);
		c->dst[i]->synced_size = c->dst[i]->size;
		c->dst[i]->index_synced = true;
	}
	if (r < 0)
		CH_LOGE(SUB, "%s: compaction failed: %s", c->dir, strerror(-r));
	else
		CH_LOGI(SUB,
			"%s: compacted %zu segments, %" PRId64 " -> %" PRId64 " bytes, %zu keys",
			c->dir, c->n, c->bytes_in, c->bytes_out, m.n);
	ch_buf_free(&w.out);
	ch_buf_free(&buf);
	ch_buf_free(&scratch);
	omap_free(&m);
	c->rc = r < 0 ? CH_ERR : CH_OK;
	return c->rc;
}

/* Renames one cleaned segment over its source (see ch_plog.h for why in
 * this order). */
static int
swap_files(ch_seg *src, ch_seg *dst)
{
	static const char *const exts[] = {".log", ".index", ".timeindex"};
	ch_logfs *fs = src->fs;
	char *p;
	int r;
	for (size_t i = 1; i < 3; i++) {
		p = ch_seg_path(src, exts[i], false);
		r = fs->unlink(fs, p);
		free(p);
		if (r < 0 && r != -ENOENT)
			return r;
	}
	for (size_t i = 0; i < 3; i++) {
		char *from = ch_seg_path(dst, exts[i], true);
		char *to = ch_seg_path(dst, exts[i], false);
		r = fs->rename(fs, from, to);
		free(from);
		free(to);
		if (r < 0)
			return i == 0 ? r : 0; /* missing indexes are rebuilt on open */
	}
	return 0;
}

/* Where s sits in pl->segs, or SIZE_MAX if it was removed while the clean ran. Loop thread. */
static size_t
seg_index(ch_plog *pl, ch_seg *s)
{
	for (size_t i = 0; i < pl->n_segs; i++)
		if (pl->segs[i] == s)
			return i;
	return SIZE_MAX;
}

int
ch_plog_clean_finish(ch_plog *pl, ch_plog_clean *c)
{
	int rc = c->rc;
	size_t i = 0;
	for (; rc == CH_OK && i < c->n; i++) {
		ch_seg *src = c->src[i], *dst = c->dst[i];
		size_t at = seg_index(pl, src);
		if (at == SIZE_MAX)
			continue; /* gone meanwhile; its cleaned copy is dropped below */
		int r = swap_files(src, dst);
		if (r < 0) {
			char *p = ch_seg_path(src, ".log", false);
			CH_LOGE(SUB, "%s: compaction swap: %s", p, strerror(-r));
			free(p);
			rc = CH_ERR;
			break;
		}
		dst->suffix = "";
		c->dst[i] = NULL;
		src->cleaning = false;
		if (dst->size == 0 && at > 0) {
			/* Nothing left: drop the segment (offsets may have gaps). */
			(void)ch_seg_delete(dst);
			ch_seg_unref(dst);
			ch_plog_seg_replace(pl, at, NULL);
		} else {
			ch_plog_seg_replace(pl, at, dst);
		}
		ch_seg_unref(src); /* the array's reference */
	}
	for (size_t k = 0; k < c->n; k++) {
		if (c->dst[k]) {
			(void)ch_seg_delete(c->dst[k]);
			ch_seg_unref(c->dst[k]);
		}
		c->src[k]->cleaning = false;
		ch_seg_unref(c->src[k]);
	}
	pl->cleaning = false;
	free(c->src);
	free(c->dst);
	free(c->dir);
	free(c);
	return rc;
}

int
ch_plog_compact(ch_plog *pl, int64_t now_ms)
{
	ch_plog_clean *c = ch_plog_clean_begin(pl, now_ms);
	if (!c)
		return CH_OK;
	ch_plog_clean_run(c);
	return ch_plog_clean_finish(pl, c);
}
