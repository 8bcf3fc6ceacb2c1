/*
 * ch_seg.c: segment files, sparse indexes, recovery. Format in ch_seg.h.
 */
#include "common/ch_endian.h"
#include "log/ch_seg.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"
#include "common/ch_log.h"

#define SUB "log"

char *
ch_seg_path(const ch_seg *s, const char *ext, bool with_suffix)
{
	const char *suf = with_suffix ? s->suffix : "";
	size_t n = strlen(s->prefix) + strlen(ext) + strlen(suf) + 1;
	char *p = ch_xmalloc(n);
	snprintf(p, n, "%s%s%s", s->prefix, ext, suf);
	return p;
}

/* A segment for base in dir with one reference and no file open (fds -1): the caller opens them.
 * suffix is not copied: a string that outlives s. */
static ch_seg *
seg_new(ch_logfs *fs, const char *dir, int64_t base, const char *suffix)
{
	ch_seg *s = ch_xcalloc(1, sizeof(*s));
	size_t n = strlen(dir) + CH_SEG_NAME_DIGITS + 2;
	s->prefix = ch_xmalloc(n);
	snprintf(s->prefix, n, "%s/%020" PRId64, dir, base);
	s->suffix = suffix ? suffix : "";
	s->fs = fs;
	s->base = base;
	s->fd_log = s->fd_idx = s->fd_tix = -1;
	s->next_offset = base;
	s->max_ts = -1;
	s->max_ts_offset = -1;
	s->roll_ts = -1;
	atomic_init(&s->size, 0);
	atomic_init(&s->refs, 1);
	return s;
}

/* Closes s's open files and frees it; the files stay. At the last unref, or when creating or
 * opening s fails. */
static void
seg_free(ch_seg *s)
{
	if (s->fd_log >= 0)
		s->fs->close(s->fs, s->fd_log);
	if (s->fd_idx >= 0)
		s->fs->close(s->fs, s->fd_idx);
	if (s->fd_tix >= 0)
		s->fs->close(s->fs, s->fd_tix);
	free(s->prefix);
	free(s);
}

ch_seg *
ch_seg_ref(ch_seg *s)
{
	atomic_fetch_add(&s->refs, 1);
	return s;
}

void
ch_seg_unref(ch_seg *s)
{
	if (s && atomic_fetch_sub(&s->refs, 1) == 1)
		seg_free(s);
}

/* Opens s's file with extension ext (and s->suffix) into *fd, mode 0644 if created: 0 or -errno. */
static int
seg_open_file(ch_seg *s, const char *ext, int flags, int *fd)
{
	char *p = ch_seg_path(s, ext, true);
	int r = s->fs->open(s->fs, p, flags, 0644);
	free(p);
	if (r < 0)
		return r;
	*fd = r;
	return 0;
}

int
ch_seg_create(ch_logfs *fs, const char *dir, int64_t base, const char *suffix, int64_t now_ms,
	      ch_seg **out)
{
	ch_seg *s = seg_new(fs, dir, base, suffix);
	int flags = O_RDWR | O_CREAT | O_TRUNC;
	int r;
	if ((r = seg_open_file(s, ".log", flags, &s->fd_log)) < 0 ||
	    (r = seg_open_file(s, ".index", flags, &s->fd_idx)) < 0 ||
	    (r = seg_open_file(s, ".timeindex", flags, &s->fd_tix)) < 0) {
		/* Leave no empty stray behind: it would claim offsets from base on
		 * (open also copes with one, should this unlink fail too). */
		if (s->fd_log >= 0)
			(void)ch_seg_delete(s);
		seg_free(s);
		return r;
	}
	s->roll_ts = now_ms;
	*out = s;
	return 0;
}

int
ch_seg_delete(ch_seg *s)
{
	static const char *const exts[] = {".log", ".index", ".timeindex"};
	int first = 0;
	for (size_t i = 0; i < CH_ARRAY_LEN(exts); i++) {
		char *p = ch_seg_path(s, exts[i], true);
		int r = s->fs->unlink(s->fs, p);
		if (r < 0 && r != -ENOENT) {
			if (i == 0) {
				free(p);
				return r; /* nothing removed: the segment stays whole */
			}
			/* An orphan index is removed at the next open. */
			CH_LOGW(SUB, "unlink %s: %s", p, strerror(-r));
			if (!first)
				first = r;
		}
		free(p);
	}
	s->deleted = true;
	return first;
}

int
ch_seg_sync(ch_seg *s)
{
	int r = s->fs->fdatasync(s->fs, s->fd_log);
	if (r == 0)
		r = s->fs->fdatasync(s->fs, s->fd_idx);
	if (r == 0)
		r = s->fs->fdatasync(s->fs, s->fd_tix);
	return r;
}

/* ---- index entries --------------------------------------------------------- */

/* Reads offset index entry i (relative offset, .log position): 0 or -errno (-EIO past the end). */
static int
idx_read(ch_seg *s, uint32_t i, uint32_t *rel, uint32_t *pos)
{
	uint8_t e[CH_SEG_IDX_ENTRY];
	int r = ch_logfs_read_full(s->fs, s->fd_idx, e, sizeof(e), (int64_t)i * CH_SEG_IDX_ENTRY);
	if (r < 0)
		return r;
	*rel = ch_be_get32(e);
	*pos = ch_be_get32(e + 4);
	return 0;
}

/* Reads time index entry i (timestamp, relative offset): 0 or -errno (-EIO past the end). */
static int
tix_read(ch_seg *s, uint32_t i, int64_t *ts, uint32_t *rel)
{
	uint8_t e[CH_SEG_TIX_ENTRY];
	int r = ch_logfs_read_full(s->fs, s->fd_tix, e, sizeof(e), (int64_t)i * CH_SEG_TIX_ENTRY);
	if (r < 0)
		return r;
	*ts = (int64_t)ch_be_get64(e);
	*rel = ch_be_get32(e + 8);
	return 0;
}

/* Position to start scanning for offset: the last entry at or below it. */
static int
idx_lookup(ch_seg *s, int64_t offset, int64_t *pos)
{
	*pos = 0;
	if (s->n_idx == 0 || offset < s->base)
		return 0;
	uint32_t lo = 0, hi = s->n_idx; /* answer in [lo-1, hi) */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2, rel, p;
		int r = idx_read(s, mid, &rel, &p);
		if (r < 0)
			return r;
		if (s->base + rel <= offset) {
			*pos = p;
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return 0;
}

/* Position to start scanning for timestamp ts: after the last entry whose
 * running maximum is < ts, every record up to its batch is older than ts. */
static int
tix_lookup(ch_seg *s, int64_t ts, int64_t *pos)
{
	*pos = 0;
	uint32_t lo = 0, hi = s->n_idx;
	int64_t best = -1;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2, rel;
		int64_t t;
		int r = tix_read(s, mid, &t, &rel);
		if (r < 0)
			return r;
		if (t < ts) {
			best = mid;
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	if (best >= 0) {
		uint32_t rel, p;
		int r = idx_read(s, (uint32_t)best, &rel, &p);
		if (r < 0)
			return r;
		*pos = p;
	}
	return 0;
}

/* ---- scanning ------------------------------------------------------------- */

/* Reads and parses the batch header at pos of the .log: 0, -errno, or -EUCLEAN if none is there. */
static int
read_hdr(ch_seg *s, int64_t pos, ch_batch_hdr *h)
{
	uint8_t b[CH_BATCH_HDR_SIZE];
	int r = ch_logfs_read_full(s->fs, s->fd_log, b, sizeof(b), pos);
	if (r < 0)
		return r;
	/* Batches below size were checked on the way in: a bad header now is
	 * corruption under our feet. */
	if (ch_batch_parse_hdr(b, sizeof(b), 0, h) != CH_BATCH_OK)
		return -EUCLEAN;
	return 0;
}

/* Reads batch headers forward through an 8 KiB window, so a scan over an
 * index interval of small batches costs one or two preads, not one each. */
typedef struct hdr_cursor {
	ch_seg *s;
	int64_t end;     /* segment size when the scan started */
	int64_t win_pos; /* file position of win[0] */
	size_t win_len;
	uint8_t win[8192];
} hdr_cursor;

/* Parses the batch header at pos through c's window, refilled from pos when it lacks the header.
 * -EUCLEAN past c->end or if it does not parse, -errno on a read error. */
static int
cursor_hdr(hdr_cursor *c, int64_t pos, ch_batch_hdr *h)
{
	if (pos + CH_BATCH_HDR_SIZE > c->end)
		return -EUCLEAN;
	if (pos < c->win_pos || pos + CH_BATCH_HDR_SIZE > c->win_pos + (int64_t)c->win_len) {
		size_t want = (size_t)CH_MIN(c->end - pos, (int64_t)sizeof(c->win));
		int r = ch_logfs_read_full(c->s->fs, c->s->fd_log, c->win, want, pos);
		if (r < 0)
			return r;
		c->win_pos = pos;
		c->win_len = want;
	}
	if (ch_batch_parse_hdr(c->win + (pos - c->win_pos), CH_BATCH_HDR_SIZE, 0, h) != CH_BATCH_OK)
		return -EUCLEAN;
	return 0;
}

/* Scans from pos for the first batch with lastOffset >= key (by_ts false)
 * or maxTimestamp >= key (by_ts true). */
static int
scan_for(ch_seg *s, int64_t pos, int64_t key, bool by_ts, ch_seg_pos *out)
{
	hdr_cursor c;
	c.s = s;
	c.end = s->size;
	c.win_pos = 0;
	c.win_len = 0;
	while (pos < c.end) {
		int r = cursor_hdr(&c, pos, &out->h);
		if (r < 0)
			return r;
		if (by_ts ? out->h.max_timestamp >= key : ch_batch_last_offset(&out->h) >= key) {
			out->pos = pos;
			return 1;
		}
		pos += ch_batch_size(&out->h);
	}
	return 0;
}

int
ch_seg_find(ch_seg *s, int64_t offset, ch_seg_pos *out)
{
	int64_t pos;
	int r = idx_lookup(s, offset, &pos);
	return r < 0 ? r : scan_for(s, pos, offset, false, out);
}

int
ch_seg_find_ts(ch_seg *s, int64_t ts, ch_seg_pos *out)
{
	int64_t pos;
	int r = tix_lookup(s, ts, &pos);
	return r < 0 ? r : scan_for(s, pos, ts, true, out);
}

int
ch_seg_read_batch(ch_seg *s, const ch_seg_pos *bp, ch_buf *buf)
{
	size_t n = (size_t)ch_batch_size(&bp->h);
	ch_buf_reset(buf);
	if (!ch_buf_reserve(buf, n))
		return -ENOMEM;
	int r = ch_logfs_read_full(s->fs, s->fd_log, buf->data, n, bp->pos);
	if (r < 0)
		return r;
	buf->len = n;
	return 0;
}

/* ---- append ------------------------------------------------------------- */

/* Index entries for one more batch: Kafka's rule (see ch_seg.h). Returns
 * true when the batch gets an entry, written to ie/te. */
static bool
index_step(ch_seg *s, const ch_batch_hdr *h, int64_t pos, int32_t interval, int64_t *counter,
	   int64_t *max_ts, int64_t *max_off, uint8_t *ie, uint8_t *te)
{
	bool entry = false;
	if (h->max_timestamp > *max_ts || *max_off < 0) {
		*max_ts = CH_MAX(h->max_timestamp, *max_ts);
		*max_off = h->base_offset;
	}
	if (*counter > interval) {
		ch_be_put32(ie, (uint32_t)(h->base_offset - s->base));
		ch_be_put32(ie + 4, (uint32_t)pos);
		ch_be_put64(te, (uint64_t)*max_ts);
		ch_be_put32(te + 8, (uint32_t)(*max_off - s->base));
		*counter = 0;
		entry = true;
	}
	*counter += ch_batch_size(h);
	return entry;
}

int
ch_seg_append(ch_seg *s, const uint8_t *data, size_t len, const ch_batch_hdr *hdrs, size_t n,
	      int32_t index_interval, bool *wedged)
{
	int64_t pos0 = s->size, pos = pos0;
	int64_t counter = s->bytes_since_index, max_ts = s->max_ts, max_off = s->max_ts_offset;
	uint8_t *ib = ch_xmalloc(n * CH_SEG_IDX_ENTRY + 1);
	uint8_t *tb = ch_xmalloc(n * CH_SEG_TIX_ENTRY + 1);
	size_t ne = 0;
	int r;
	for (size_t i = 0; i < n; i++) {
		if (index_step(s, &hdrs[i], pos, index_interval, &counter, &max_ts, &max_off,
			       ib + ne * CH_SEG_IDX_ENTRY, tb + ne * CH_SEG_TIX_ENTRY))
			ne++;
		pos += ch_batch_size(&hdrs[i]);
	}
	r = ch_logfs_write_full(s->fs, s->fd_log, data, len, pos0);
	if (r < 0)
		goto undo_log;
	if (ne) {
		r = ch_logfs_write_full(s->fs, s->fd_idx, ib, ne * CH_SEG_IDX_ENTRY,
					(int64_t)s->n_idx * CH_SEG_IDX_ENTRY);
		if (r < 0)
			goto undo_idx;
		r = ch_logfs_write_full(s->fs, s->fd_tix, tb, ne * CH_SEG_TIX_ENTRY,
					(int64_t)s->n_idx * CH_SEG_TIX_ENTRY);
		if (r < 0)
			goto undo_tix;
	}
	free(ib);
	free(tb);
	s->n_idx += (uint32_t)ne;
	if (ne)
		s->index_synced = false;
	s->bytes_since_index = counter;
	s->max_ts = max_ts;
	s->max_ts_offset = max_off;
	s->next_offset = ch_batch_last_offset(&hdrs[n - 1]) + 1;
	s->size = pos0 + (int64_t)len; /* last: the sync worker reads it */
	return 0;

	/* Roll back so the files end where memory says they do. */
undo_tix:
	if (s->fs->ftruncate(s->fs, s->fd_tix, (int64_t)s->n_idx * CH_SEG_TIX_ENTRY) < 0)
		*wedged = true;
undo_idx:
	if (s->fs->ftruncate(s->fs, s->fd_idx, (int64_t)s->n_idx * CH_SEG_IDX_ENTRY) < 0)
		*wedged = true;
undo_log:
	if (s->fs->ftruncate(s->fs, s->fd_log, pos0) < 0)
		*wedged = true;
	free(ib);
	free(tb);
	return r;
}

/* ---- open and recovery ---------------------------------------------------- */

/* Checks the index files as ch_seg.h describes; sets s->n_idx on success. */
static bool
index_sane(ch_seg *s, int64_t log_size)
{
	int64_t isz = s->fs->fsize(s->fs, s->fd_idx);
	int64_t tsz = s->fs->fsize(s->fs, s->fd_tix);
	if (isz < 0 || tsz < 0 || isz % CH_SEG_IDX_ENTRY || tsz % CH_SEG_TIX_ENTRY ||
	    isz / CH_SEG_IDX_ENTRY != tsz / CH_SEG_TIX_ENTRY || isz / CH_SEG_IDX_ENTRY > UINT32_MAX)
		return false;
	uint32_t n = (uint32_t)(isz / CH_SEG_IDX_ENTRY);
	if (n == 0) {
		s->n_idx = 0;
		return true;
	}
	uint32_t rel, pos, rel2, pos2, trel;
	int64_t ts;
	ch_batch_hdr h;
	if (idx_read(s, n - 1, &rel, &pos) < 0 || tix_read(s, n - 1, &ts, &trel) < 0)
		return false;
	if (pos == 0 || (int64_t)pos + CH_BATCH_HDR_SIZE > log_size || trel > rel)
		return false;
	if (n >= 2) {
		if (idx_read(s, n - 2, &rel2, &pos2) < 0 || rel2 >= rel || pos2 >= pos)
			return false;
	}
	if (read_hdr(s, pos, &h) < 0 || h.base_offset != s->base + rel)
		return false;
	s->n_idx = n;
	return true;
}

/* Drops index entries from n on (files and count). */
static int
index_truncate(ch_seg *s, uint32_t n)
{
	int r = s->fs->ftruncate(s->fs, s->fd_idx, (int64_t)n * CH_SEG_IDX_ENTRY);
	if (r == 0)
		r = s->fs->ftruncate(s->fs, s->fd_tix, (int64_t)n * CH_SEG_TIX_ENTRY);
	if (r == 0)
		s->n_idx = n;
	return r;
}

/* The state the segment had right after the indexed batch at entry n-1 was
 * appended, before scanning on from it. */
static int
scan_start(ch_seg *s, int64_t *pos, int64_t *max_ts, int64_t *max_off)
{
	*pos = 0;
	*max_ts = -1;
	*max_off = -1;
	if (s->n_idx == 0)
		return 0;
	uint32_t rel, p, trel;
	int64_t ts;
	int r;
	if ((r = idx_read(s, s->n_idx - 1, &rel, &p)) < 0 ||
	    (r = tix_read(s, s->n_idx - 1, &ts, &trel)) < 0)
		return r;
	*pos = p;
	*max_ts = ts;
	*max_off = s->base + trel;
	return 0;
}

int
ch_seg_open(ch_logfs *fs, const char *dir, int64_t base, int64_t limit, int32_t index_interval,
	    bool full, int64_t now_ms, ch_seg **out, int64_t *truncated)
{
	ch_seg *s = seg_new(fs, dir, base, "");
	ch_buf buf;
	ch_buf_init(&buf);
	int r;
	*truncated = 0;
	if ((r = seg_open_file(s, ".log", O_RDWR, &s->fd_log)) < 0 ||
	    (r = seg_open_file(s, ".index", O_RDWR | O_CREAT, &s->fd_idx)) < 0 ||
	    (r = seg_open_file(s, ".timeindex", O_RDWR | O_CREAT, &s->fd_tix)) < 0)
		goto fail;
	int64_t fsz = fs->fsize(fs, s->fd_log);
	if (fsz < 0) {
		r = (int)fsz;
		goto fail;
	}
	s->index_synced = true;
	if (full || !index_sane(s, fsz)) {
		if (!full) {
			char *p = ch_seg_path(s, ".index", false);
			CH_LOGW(SUB, "%s: index missing or inconsistent, rebuilding", p);
			free(p);
		}
		if ((r = index_truncate(s, 0)) < 0)
			goto fail;
		s->index_synced = false;
	}

	/* Scan forward from the last index entry. If the indexed batch itself is
	 * bad, drop that entry and start again from the one before. */
	int64_t pos, max_ts, max_off, counter;
	const char *why = NULL;
	for (;;) {
		if ((r = scan_start(s, &pos, &max_ts, &max_off)) < 0)
			goto fail;
		int64_t start = pos, prev_next = base;
		counter = 0;
		why = NULL;
		while (pos < fsz) {
			ch_batch_hdr h;
			size_t avail = (size_t)CH_MIN(fsz - pos, (int64_t)CH_BATCH_HDR_SIZE);
			if (!ch_buf_reserve(&buf, CH_BATCH_HDR_SIZE)) {
				r = -ENOMEM;
				goto fail;
			}
			if ((r = ch_logfs_read_full(fs, s->fd_log, buf.data, avail, pos)) < 0)
				goto fail;
			int e = ch_batch_parse_hdr(buf.data, avail, 0, &h);
			if (e == CH_BATCH_OK && ch_batch_size(&h) > fsz - pos)
				e = CH_BATCH_ESHORT;
			if (e == CH_BATCH_OK) {
				size_t n = (size_t)ch_batch_size(&h);
				ch_buf_reset(&buf);
				if (!ch_buf_reserve(&buf, n)) {
					r = -ENOMEM;
					goto fail;
				}
				if ((r = ch_logfs_read_full(fs, s->fd_log, buf.data, n, pos)) < 0)
					goto fail;
				e = ch_batch_check(buf.data, n, 0, false, &h);
			}
			if (e == CH_BATCH_OK &&
			    (h.base_offset < prev_next || ch_batch_last_offset(&h) >= limit ||
			     ch_batch_last_offset(&h) - base > UINT32_MAX || pos > UINT32_MAX))
				e = CH_BATCH_EINVALID;
			if (e != CH_BATCH_OK) {
				why = ch_batch_err_str(e);
				break;
			}
			if (pos == start && s->n_idx > 0) {
				/* The indexed batch: its entry exists; counter restarts. */
				if (h.max_timestamp > max_ts) {
					max_ts = h.max_timestamp;
					max_off = h.base_offset;
				}
				counter = ch_batch_size(&h);
			} else {
				uint8_t ie[CH_SEG_IDX_ENTRY], te[CH_SEG_TIX_ENTRY];
				if (index_step(s, &h, pos, index_interval, &counter, &max_ts,
					       &max_off, ie, te)) {
					if ((r = ch_logfs_write_full(
						     fs, s->fd_idx, ie, sizeof(ie),
						     (int64_t)s->n_idx * CH_SEG_IDX_ENTRY)) < 0 ||
					    (r = ch_logfs_write_full(fs, s->fd_tix, te, sizeof(te),
								     (int64_t)s->n_idx *
									     CH_SEG_TIX_ENTRY)) < 0)
						goto fail;
					s->n_idx++;
					s->index_synced = false;
				}
			}
			prev_next = ch_batch_last_offset(&h) + 1;
			s->next_offset = prev_next;
			pos += ch_batch_size(&h);
		}
		if (why && pos == start && s->n_idx > 0) {
			if ((r = index_truncate(s, s->n_idx - 1)) < 0)
				goto fail;
			s->index_synced = false;
			continue;
		}
		break;
	}
	if (why) {
		char *p = ch_seg_path(s, ".log", false);
		CH_LOGW(SUB,
			"%s: %s at position %" PRId64 ", truncating %" PRId64
			" bytes (log ends at offset %" PRId64 ")",
			p, why, pos, fsz - pos, s->next_offset);
		free(p);
		if ((r = fs->ftruncate(fs, s->fd_log, pos)) < 0)
			goto fail;
		*truncated = fsz - pos;
	}
	/* next_offset of a segment whose tail scan found nothing past the start:
	 * recover it from the last batch before the scan start. */
	if (s->next_offset == base && pos > 0) {
		ch_batch_hdr h;
		int64_t p = 0;
		while (p < pos) {
			if ((r = read_hdr(s, p, &h)) < 0)
				goto fail;
			s->next_offset = ch_batch_last_offset(&h) + 1;
			p += ch_batch_size(&h);
		}
	}
	s->size = pos;
	s->synced_size = full ? 0 : pos;
	s->bytes_since_index = counter;
	s->max_ts = max_ts;
	s->max_ts_offset = max_off;
	s->roll_ts = now_ms;
	if (pos > 0) {
		ch_batch_hdr h;
		if ((r = read_hdr(s, 0, &h)) < 0)
			goto fail;
		if (h.max_timestamp >= 0)
			s->roll_ts = h.max_timestamp;
	}
	ch_buf_free(&buf);
	*out = s;
	return 0;
fail:
	ch_buf_free(&buf);
	seg_free(s);
	return r;
}
