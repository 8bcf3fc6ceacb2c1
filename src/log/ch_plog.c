/*
 * ch_plog.c: a partition log: open/recovery of the segment set, append,
 * read, lookups, durability, retention. See ch_plog.h for the model.
 */
#include "log/ch_plog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/ch_common.h"
#include "common/ch_log.h"
#include "log/ch_plog_int.h"

#define SUB "log"
#define START_FILE "log-start-offset"
#define RECOVERY_FILE "recovery-point"
#define CHECKPOINT_MS 1000

void
ch_plog_config_default(ch_plog_config *c)
{
	c->segment_bytes = 1024LL * 1024 * 1024;
	c->segment_ms = 7LL * 24 * 3600 * 1000;
	c->index_interval_bytes = 4096;
	c->retention_ms = 7LL * 24 * 3600 * 1000;
	c->retention_bytes = -1;
	c->flush_messages = INT64_MAX;
	c->flush_ms = INT64_MAX;
	c->cleanup_delete = true;
	c->cleanup_compact = false;
	c->delete_retention_ms = 24LL * 3600 * 1000;
	c->log_append_time = false;
	c->ts_before_max_ms = INT64_MAX;
	c->ts_after_max_ms = 3600000; /* Kafka 4's default (KIP-1030) */
	c->max_message_bytes = 1048588;
	c->leader_epoch = 0;
}

char *
ch_plog_dir_path(const char *data_dir, const char *topic, int32_t partition)
{
	size_t n = strlen(data_dir) + strlen(topic) + 16;
	char *d = ch_xmalloc(n);
	snprintf(d, n, "%s/%s-%" PRId32, data_dir, topic, partition);
	return d;
}

/* ---- segment array (mutations under the lock) ------------------------------ */

/* Appends s as the new active segment under pl->lock, taking over the caller's reference, and
 * marks the directory for the next sync. */
static void
seg_push(ch_plog *pl, ch_seg *s)
{
	pthread_mutex_lock(&pl->lock);
	if (pl->n_segs == pl->cap_segs) {
		pl->cap_segs = pl->cap_segs ? pl->cap_segs * 2 : 8;
		pl->segs = ch_xrealloc(pl->segs, pl->cap_segs * sizeof(*pl->segs));
	}
	pl->segs[pl->n_segs++] = s;
	pl->dir_dirty = true;
	pthread_mutex_unlock(&pl->lock);
}

void
ch_plog_seg_replace(ch_plog *pl, size_t i, ch_seg *s)
{
	pthread_mutex_lock(&pl->lock);
	if (s) {
		pl->segs[i] = s;
	} else {
		memmove(&pl->segs[i], &pl->segs[i + 1], (pl->n_segs - i - 1) * sizeof(*pl->segs));
		pl->n_segs--;
	}
	pl->dir_dirty = true;
	pthread_mutex_unlock(&pl->lock);
}

static ch_seg *
active(const ch_plog *pl)
{
	return pl->segs[pl->n_segs - 1];
}

/* Index of the last segment with base <= offset (0 if none). */
static size_t
seg_for_offset(const ch_plog *pl, int64_t offset)
{
	size_t lo = 0, hi = pl->n_segs, ans = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (pl->segs[mid]->base <= offset) {
			ans = mid;
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return ans;
}

/* ---- log-start-offset file ---------------------------------------------------- */

/* A small file holding one offset (log-start-offset, recovery-point):
 * written to a temporary name and renamed over; `durable` adds the fsyncs.
 * A failure is logged through `rl` (NULL: every one). */
static int
offset_file_write(ch_plog *pl, const char *name, int64_t off, bool durable, ch_ratelog *rl)
{
	char tname[64];
	snprintf(tname, sizeof(tname), "%s.tmp", name);
	char *tmp = ch_path_join(pl->dir, tname);
	char *dst = ch_path_join(pl->dir, name);
	char txt[32];
	int n = snprintf(txt, sizeof(txt), "%" PRId64 "\n", off);
	int fd = pl->fs->open(pl->fs, tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int r = fd;
	if (fd >= 0) {
		r = ch_logfs_write_full(pl->fs, fd, txt, (size_t)n, 0);
		if (r == 0 && durable)
			r = pl->fs->fdatasync(pl->fs, fd);
		pl->fs->close(pl->fs, fd);
		if (r == 0)
			r = pl->fs->rename(pl->fs, tmp, dst);
		if (r < 0) {
			(void)pl->fs->unlink(pl->fs, tmp);
		} else if (durable && (r = pl->fs->sync_dir(pl->fs, pl->dir)) < 0) {
			/* The new name is in place; only its durability is in doubt,
			 * and a lower start offset after a crash loses nothing. */
			CH_LOGW(SUB, "%s: sync: %s", pl->dir, strerror(-r));
			r = 0;
		}
	}
	if (r < 0 && (!rl || ch_ratelog_fail(rl, ch_now_mono_ms(), strerror(-r))))
		CH_LOGE(SUB, "%s: %s", dst, strerror(-r));
	else if (r == 0 && rl && ch_ratelog_streak(rl))
		ch_ratelog_ok(rl, ch_now_mono_ms());
	free(tmp);
	free(dst);
	return r;
}

/* The offset in checkpoint file `name` of pl->dir ("<decimal>\n") into *v, -1 if the file is
 * missing, malformed or negative. 0, or -errno when it exists but cannot be read (EACCES, EIO,
 * EISDIR): not knowing where the log starts is not the same as starting at 0, so the open
 * fails as Kafka takes a log directory offline when a checkpoint cannot be read. */
static int
offset_file_read(ch_plog *pl, const char *name, int64_t *v)
{
	*v = -1;
	char *p = ch_path_join(pl->dir, name);
	int fd = pl->fs->open(pl->fs, p, O_RDONLY, 0);
	free(p);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	char txt[32] = {0};
	ssize_t n = pl->fs->pread(pl->fs, fd, txt, sizeof(txt) - 1, 0);
	pl->fs->close(pl->fs, fd);
	if (n < 0)
		return (int)n;
	char *end;
	long long x = strtoll(txt, &end, 10);
	if (n > 0 && end != txt && *end == '\n' && x >= 0)
		*v = (int64_t)x;
	return 0;
}

/* ---- open / close ----------------------------------------------------------- */

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* "<20 digits><ext>" -> base offset, or -1. */
static int64_t
parse_seg_name(const char *name, const char *ext)
{
	size_t n = strlen(name), e = strlen(ext);
	if (n != CH_SEG_NAME_DIGITS + e || strcmp(name + CH_SEG_NAME_DIGITS, ext) != 0)
		return -1;
	int64_t v = 0;
	for (int i = 0; i < CH_SEG_NAME_DIGITS; i++) {
		if (name[i] < '0' || name[i] > '9' || v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (name[i] - '0');
	}
	return v;
}

static bool
has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n >= m && strcmp(s + n - m, suf) == 0;
}

/* Lists segment bases; removes leftovers of interrupted work. */
static int
scan_dir(ch_plog *pl, int64_t **bases, size_t *n)
{
	DIR *d = opendir(pl->dir);
	if (!d)
		return -errno;
	size_t cap = 16;
	*bases = ch_xmalloc(cap * sizeof(int64_t));
	*n = 0;
	char **orphans = NULL;
	size_t n_orph = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		const char *nm = de->d_name;
		int64_t b = parse_seg_name(nm, ".log");
		if (b >= 0) {
			if (*n == cap) {
				cap *= 2;
				*bases = ch_xrealloc(*bases, cap * sizeof(int64_t));
			}
			(*bases)[(*n)++] = b;
		} else if (has_suffix(nm, ".cleaned") || has_suffix(nm, ".tmp") ||
			   parse_seg_name(nm, ".index") >= 0 ||
			   parse_seg_name(nm, ".timeindex") >= 0) {
			orphans = ch_xrealloc(orphans, (n_orph + 1) * sizeof(char *));
			orphans[n_orph++] = ch_xstrdup(nm);
		}
	}
	closedir(d);
	qsort(*bases, *n, sizeof(int64_t), cmp_i64);
	for (size_t i = 0; i < n_orph; i++) {
		const char *nm = orphans[i];
		bool drop = has_suffix(nm, ".cleaned") || has_suffix(nm, ".tmp");
		if (!drop) {
			/* An index whose .log is gone (deletion interrupted). */
			int64_t b = parse_seg_name(nm, ".index");
			if (b < 0)
				b = parse_seg_name(nm, ".timeindex");
			drop = bsearch(&b, *bases, *n, sizeof(int64_t), cmp_i64) == NULL;
		}
		if (drop) {
			char *p = ch_path_join(pl->dir, nm);
			CH_LOGI(SUB, "removing leftover %s", p);
			(void)pl->fs->unlink(pl->fs, p);
			free(p);
		}
		free(orphans[i]);
	}
	free(orphans);
	return 0;
}

int
ch_plog_open(const char *data_dir, const char *topic, int32_t partition, const ch_plog_config *cfg,
	     ch_logfs *fs, int64_t now_ms, ch_plog **out)
{
	*out = NULL;
	if (!*topic || strchr(topic, '/') || strcmp(topic, ".") == 0 || strcmp(topic, "..") == 0 ||
	    partition < 0) {
		CH_LOGE(SUB, "bad topic-partition name %s-%" PRId32, topic, partition);
		return -EINVAL;
	}
	ch_plog *pl = ch_xcalloc(1, sizeof(*pl));
	pl->fs = fs ? fs : ch_logfs_posix();
	pl->cfg = *cfg;
	pthread_mutex_init(&pl->lock, NULL);
	atomic_init(&pl->synced, 0);
	atomic_init(&pl->failed, false);
	pl->last_flush_ms = now_ms;
	pl->dir = ch_plog_dir_path(data_dir, topic, partition);
	ch_ratelog_init(&pl->append_log, SUB, CH_LOG_ERROR, "appends to %s", pl->dir);
	ch_ratelog_init(&pl->read_log, SUB, CH_LOG_ERROR, "reads of %s", pl->dir);
	ch_ratelog_init(&pl->checkpoint_log, SUB, CH_LOG_ERROR, "recovery-point writes of %s",
			pl->dir);

	int64_t *bases = NULL;
	size_t nb = 0;
	int r = pl->fs->mkdir(pl->fs, data_dir, 0755);
	if (r == 0 || r == -EEXIST)
		r = pl->fs->mkdir(pl->fs, pl->dir, 0755);
	if (r < 0 && r != -EEXIST)
		goto fail;
	if ((r = scan_dir(pl, &bases, &nb)) < 0)
		goto fail;
	/* Sizes first: an empty segment limits no one (a roll that failed half
	 * way may have left one whose base the previous segment then grew past;
	 * that stray is dropped below). */
	int64_t *sizes = ch_xmalloc((nb + 1) * sizeof(int64_t));
	for (size_t i = 0; i < nb; i++) {
		char nm[CH_SEG_NAME_DIGITS + 8];
		snprintf(nm, sizeof(nm), "%020" PRId64 ".log", bases[i]);
		char *p = ch_path_join(pl->dir, nm);
		struct stat st;
		sizes[i] = stat(p, &st) == 0 ? (int64_t)st.st_size : 0;
		free(p);
	}
	/* Segments wholly below the recovery point were synced, indexes too:
	 * a tail check will do. From the one holding it on, everything is
	 * checked and the indexes rebuilt. No file: check everything. The last
	 * segment's end is known only once it is open: it is opened trusted
	 * when it starts at or below the recovery point (whose writers sync
	 * the active segment's indexes first), and again in full if
	 * its tail scan found offsets past it. After a clean shutdown (which
	 * syncs, then writes the log end as the recovery point) no segment is
	 * read whole, as Kafka skips recovery after one: a restart then reads
	 * __consumer_offsets once, for the replay, instead of twice. */
	int64_t rp;
	if ((r = offset_file_read(pl, RECOVERY_FILE, &rp)) < 0) {
		free(sizes);
		goto fail;
	}
	pl->checkpointed = rp;
	for (size_t i = 0; i < nb; i++) {
		ch_seg *s;
		int64_t cut;
		int64_t limit = INT64_MAX;
		bool last = i + 1 >= nb;
		bool full = rp < 0 || (last ? bases[i] > rp : bases[i + 1] > rp);
		for (size_t j = i + 1; j < nb; j++) {
			if (sizes[j] > 0) {
				limit = bases[j];
				break;
			}
		}
		if (sizes[i] == 0 && pl->n_segs > 0 && bases[i] < active(pl)->next_offset) {
			ch_seg *stray = NULL;
			CH_LOGW(SUB, "%s: removing stray empty segment %020" PRId64, pl->dir,
				bases[i]);
			if (ch_seg_open(pl->fs, pl->dir, bases[i], limit, cfg->index_interval_bytes,
					true, now_ms, &stray, &cut) == 0) {
				(void)ch_seg_delete(stray);
				ch_seg_unref(stray);
			}
			continue;
		}
		r = ch_seg_open(pl->fs, pl->dir, bases[i], limit, cfg->index_interval_bytes, full,
				now_ms, &s, &cut);
		if (r == 0 && last && !full && s->next_offset > rp) {
			ch_seg_unref(s);
			r = ch_seg_open(pl->fs, pl->dir, bases[i], limit, cfg->index_interval_bytes,
					true, now_ms, &s, &cut);
		}
		if (r < 0) {
			/* DEBUG: the caller logs the failure (rate-limited) with -r */
			CH_LOGD(SUB, "%s: opening segment %020" PRId64 ": %s", pl->dir, bases[i],
				strerror(-r));
			free(sizes);
			goto fail;
		}
		seg_push(pl, s);
	}
	free(sizes);
	/* An empty last segment past a gap (the data between was lost with a
	 * power cut, never synced) would leave offsets no fetch can pass. */
	while (pl->n_segs > 1 && active(pl)->size == 0 &&
	       active(pl)->base > pl->segs[pl->n_segs - 2]->next_offset) {
		ch_seg *s = active(pl);
		CH_LOGW(SUB, "%s: removing empty segment %020" PRId64 " after a gap from %" PRId64,
			pl->dir, s->base, pl->segs[pl->n_segs - 2]->next_offset);
		if ((r = ch_seg_delete(s)) < 0 && !s->deleted)
			goto fail;
		ch_plog_seg_replace(pl, pl->n_segs - 1, NULL);
		ch_seg_unref(s);
	}
	int64_t start;
	if ((r = offset_file_read(pl, START_FILE, &start)) < 0)
		goto fail;
	if (pl->n_segs == 0) {
		ch_seg *s;
		if ((r = ch_seg_create(pl->fs, pl->dir, start > 0 ? start : 0, "", now_ms, &s)) < 0)
			goto fail;
		seg_push(pl, s);
	}
	pl->leo = active(pl)->next_offset;
	pl->log_start = CH_MIN(CH_MAX(start, pl->segs[0]->base), pl->leo);
	/* Bytes past the recovery point came back from the page cache at best:
	 * durable only once the first sync has run (their segments are marked
	 * unsynced by the full recovery). */
	atomic_store(&pl->synced, CH_MIN(CH_MAX(rp, pl->log_start), pl->leo));
	free(bases);
	CH_LOGD(SUB, "%s: opened, %zu segments, offsets [%" PRId64 ", %" PRId64 ")", pl->dir,
		pl->n_segs, pl->log_start, pl->leo);
	*out = pl;
	return CH_OK;
fail:
	CH_LOGD(SUB, "%s: open failed: %s", pl->dir, strerror(-r));
	free(bases);
	ch_plog_close(pl);
	return r;
}

/* fdatasyncs s's offset and time indexes. 0 or -errno. */
static int
sync_seg_indexes(ch_plog *pl, ch_seg *s)
{
	int r = pl->fs->fdatasync(pl->fs, s->fd_idx);
	return r ? r : pl->fs->fdatasync(pl->fs, s->fd_tix);
}

/* fdatasyncs the indexes a recovery point at the synced offset vouches for that ch_plog_sync may
 * have left: the active segment's and those of segments closed since. 0 or -errno. */
static int
sync_indexes(ch_plog *pl)
{
	int r = 0;
	for (size_t i = 0; i < pl->n_segs && r == 0; i++)
		if (i + 1 == pl->n_segs || !pl->segs[i]->index_synced)
			r = sync_seg_indexes(pl, pl->segs[i]);
	return r;
}

void
ch_plog_close(ch_plog *pl)
{
	if (!pl)
		return;
	/* After a final sync, a fresh recovery point makes the next start fast
	 * (open trusts the indexes below it: they go first). */
	int64_t synced = atomic_load(&pl->synced);
	if (pl->n_segs && !atomic_load(&pl->failed) && synced > pl->checkpointed &&
	    sync_indexes(pl) == 0)
		(void)offset_file_write(pl, RECOVERY_FILE, synced, true, NULL);
	for (size_t i = 0; i < pl->n_segs; i++)
		ch_seg_unref(pl->segs[i]);
	free(pl->segs);
	pthread_mutex_destroy(&pl->lock);
	free(pl->dir);
	free(pl);
}

void
ch_plog_set_config(ch_plog *pl, const ch_plog_config *cfg)
{
	pl->cfg = *cfg;
}

/* ---- append ------------------------------------------------------------- */

/* The Kafka error for a ch_batch_check failure: INVALID_RECORD for inconsistent fields or bad
 * records, CORRUPT_MESSAGE for the rest (short, bad length, magic, CRC). */
static int16_t
batch_kerr(int e)
{
	switch (e) {
	case CH_BATCH_EINVALID:
	case CH_BATCH_ERECORDS:
		return CH_KERR_INVALID_RECORD;
	default:
		return CH_KERR_CORRUPT_MESSAGE;
	}
}

/* Kafka's recordHasInvalidTimestamp, without its long overflow. */
static bool
timestamp_out_of_range(int64_t ts, int64_t now, int64_t before_max, int64_t after_max)
{
	__int128 diff = (__int128)now - ts;
	return diff > before_max || -diff > after_max;
}

int16_t
ch_plog_check_records(const ch_plog_config *cfg, const uint8_t *b, const ch_batch_hdr *h,
		      int64_t now_ms, int64_t *max_ts, ch_plog_record_error_fn fn, void *ud)
{
	*max_ts = -1;
	ch_buf scratch;
	ch_buf_init(&scratch);
	const uint8_t *recs;
	size_t rlen;
	if (ch_batch_records(b, h, &scratch, CH_PLOG_MAX_INFLATE, &recs, &rlen) != CH_OK) {
		ch_buf_free(&scratch);
		return CH_KERR_CORRUPT_MESSAGE;
	}
	bool lat = h->attributes & CH_BATCH_ATTR_LOG_APPEND_TIME;
	bool compressed = ch_batch_compression(h) != CH_COMPRESSION_NONE;
	int16_t worst = CH_KERR_NONE;
	ch_record_iter it;
	ch_record rec;
	int more;
	int32_t i = 0;
	ch_record_iter_init(&it, recs, rlen, h->records_count);
	while ((more = ch_record_next(&it, &rec)) == 1) {
		/* One record per offset, as ch_batch_check wants of uncompressed
		 * batches (Kafka 4.4 fails these with UNKNOWN_SERVER_ERROR; README). */
		if (rec.offset_delta != i) {
			more = -1;
			break;
		}
		/* a LogAppendTime batch's records all carry its maxTimestamp */
		int64_t ts = lat ? h->max_timestamp : h->base_timestamp + rec.timestamp_delta;
		ch_plog_record_why why = 0;
		if (cfg->cleanup_compact && rec.key.len < 0)
			why = CH_PLOG_REC_NO_KEY;
		else if (!cfg->log_append_time && ts != -1)
			why = timestamp_out_of_range(ts, now_ms, cfg->ts_before_max_ms,
						     cfg->ts_after_max_ms)
				      ? CH_PLOG_REC_TS_RANGE
				      : 0;
		else if (lat)
			why = CH_PLOG_REC_TS_TYPE;
		if (why) {
			int16_t e = why == CH_PLOG_REC_NO_KEY ? CH_KERR_INVALID_RECORD
							      : CH_KERR_INVALID_TIMESTAMP;
			if (worst != CH_KERR_INVALID_TIMESTAMP)
				worst = e;
			if (fn) {
				/* Kafka's in-place compressed path reads no keys or values */
				ch_plog_record_error re = {
					i,
					e,
					why,
					h->base_offset + rec.offset_delta,
					ts,
					compressed || rec.key.len < 0 ? 0 : rec.key.len,
					compressed || rec.value.len < 0 ? 0 : rec.value.len};
				fn(ud, &re);
			}
		}
		if (ts > *max_ts)
			*max_ts = ts;
		i++;
	}
	ch_buf_free(&scratch);
	if (more < 0 || it.err)
		return CH_KERR_INVALID_RECORD;
	return worst;
}

/* Starts a new active segment at pl->leo, rolled at now_ms: 0, or -errno (logged, rate-limited).
 * Loop thread. */
static int
roll(ch_plog *pl, int64_t now_ms)
{
	ch_seg *s;
	int r = ch_seg_create(pl->fs, pl->dir, pl->leo, "", now_ms, &s);
	if (r < 0) {
		if (ch_ratelog_fail(&pl->append_log, ch_now_mono_ms(), strerror(-r)))
			CH_LOGE(SUB, "%s: rolling segment at %" PRId64 ": %s", pl->dir, pl->leo,
				strerror(-r));
		return r;
	}
	CH_LOGD(SUB, "%s: rolled segment %020" PRId64, pl->dir, pl->leo);
	seg_push(pl, s);
	return 0;
}

int
ch_plog_append(ch_plog *pl, uint8_t *data, size_t len, int64_t now_ms, ch_plog_append_info *info,
	       int16_t *kerr)
{
	*kerr = CH_KERR_NONE;
	memset(info, 0, sizeof(*info));
	info->log_append_time = -1;
	if (atomic_load(&pl->failed)) {
		*kerr = CH_KERR_KAFKA_STORAGE_ERROR;
		return CH_ERR;
	}
	info->now_ms = now_ms;
	/* Pass 1: validate everything before touching anything, as Kafka's
	 * UnifiedLog.analyzeAndValidateRecords and LogValidator do. */
	size_t n = 0, pos = 0;
	ch_buf max_ts; /* int64_t per batch: its largest record timestamp */
	ch_buf_init(&max_ts);
	while (pos < len) {
		ch_batch_hdr h;
		int e = ch_batch_check(data + pos, len - pos, 0, true, &h);
		if (e != CH_BATCH_OK) {
			*kerr = batch_kerr(e);
			goto invalid;
		}
		if (ch_batch_size(&h) > pl->cfg.max_message_bytes) {
			*kerr = CH_KERR_MESSAGE_TOO_LARGE;
			goto invalid;
		}
		/* a producer's batch starts at 0 and is never a control batch */
		if (h.base_offset != 0 || (h.attributes & CH_BATCH_ATTR_CONTROL)) {
			*kerr = CH_KERR_INVALID_RECORD;
			goto invalid;
		}
		int64_t m;
		*kerr = ch_plog_check_records(&pl->cfg, data + pos, &h, now_ms, &m, NULL, NULL);
		if (*kerr)
			goto invalid;
		ch_buf_append(&max_ts, &m, sizeof(m));
		pos += (size_t)ch_batch_size(&h);
		n++;
	}
	if (n == 0) {
		*kerr = CH_KERR_CORRUPT_MESSAGE;
		goto invalid;
	}
	if ((int64_t)len > pl->cfg.segment_bytes || len > INT32_MAX) {
		*kerr = CH_KERR_RECORD_LIST_TOO_LARGE;
		goto invalid;
	}
	if (!ch_buf_ok(&max_ts)) {
		*kerr = CH_KERR_UNKNOWN_SERVER_ERROR;
		goto invalid;
	}
	/* Pass 2: assign offsets (outside the CRC) and the timestamp type and
	 * maxTimestamp (inside). */
	ch_batch_hdr *hdrs = ch_xmalloc(n * sizeof(*hdrs));
	int64_t next = pl->leo;
	pos = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t *b = data + pos;
		ch_batch_parse_hdr(b, len - pos, 0, &hdrs[i]);
		size_t sz = (size_t)ch_batch_size(&hdrs[i]);
		ch_batch_set_base_offset(b, next);
		ch_batch_set_leader_epoch(b, pl->cfg.leader_epoch);
		if (pl->cfg.log_append_time) {
			ch_batch_set_log_append_time(b, sz, now_ms);
		} else {
			int64_t m;
			memcpy(&m, max_ts.data + i * sizeof(m), sizeof(m));
			ch_batch_set_create_time(b, sz, m);
		}
		ch_batch_parse_hdr(b, sz, 0, &hdrs[i]);
		next = ch_batch_last_offset(&hdrs[i]) + 1;
		pos += sz;
	}
	ch_buf_free(&max_ts);
	/* Roll when the batch set would not fit, the segment is old, or the
	 * 32-bit relative offsets / positions of the index would overflow. */
	ch_seg *s = active(pl);
	if (s->size > 0 &&
	    (s->size + (int64_t)len > pl->cfg.segment_bytes || s->size + (int64_t)len > INT32_MAX ||
	     (pl->cfg.segment_ms > 0 && now_ms - s->roll_ts >= pl->cfg.segment_ms) ||
	     next - 1 - s->base > INT32_MAX)) {
		if (roll(pl, now_ms) < 0) {
			free(hdrs);
			*kerr = CH_KERR_KAFKA_STORAGE_ERROR;
			return CH_ERR;
		}
		s = active(pl);
	}
	bool wedged = false;
	int r = ch_seg_append(s, data, len, hdrs, n, pl->cfg.index_interval_bytes, &wedged);
	free(hdrs);
	if (r < 0) {
		char *p = ch_seg_path(s, ".log", false);
		if (wedged) {
			atomic_store(&pl->failed, true);
			CH_LOGE(SUB,
				"%s: append failed (%s) and could not be rolled back; "
				"log offline until reopened",
				p, strerror(-r));
		} else if (ch_ratelog_fail(&pl->append_log, ch_now_mono_ms(), strerror(-r))) {
			CH_LOGE(SUB, "%s: append at offset %" PRId64 " failed: %s", p, pl->leo,
				strerror(-r));
		}
		free(p);
		*kerr = CH_KERR_KAFKA_STORAGE_ERROR;
		return CH_ERR;
	}
	if (ch_ratelog_streak(&pl->append_log))
		ch_ratelog_ok(&pl->append_log, ch_now_mono_ms());
	info->base_offset = pl->leo;
	info->last_offset = next - 1;
	info->records = next - pl->leo;
	info->batches = (int32_t)n;
	info->log_append_time = pl->cfg.log_append_time ? now_ms : -1;
	info->log_start_offset = pl->log_start;
	pthread_mutex_lock(&pl->lock);
	pl->leo = next;
	pthread_mutex_unlock(&pl->lock);
	return CH_OK;
invalid:
	ch_buf_free(&max_ts);
	return CH_ERR;
}

/* ---- read ------------------------------------------------------------------ */

/* First batch with lastOffset >= offset, from segment index i on.
 * @returns 1 found, 0 none, -errno. */
static int
find_batch(ch_plog *pl, int64_t offset, size_t *i, ch_seg_pos *bp)
{
	for (size_t k = seg_for_offset(pl, offset); k < pl->n_segs; k++) {
		int r = ch_seg_find(pl->segs[k], CH_MAX(offset, pl->segs[k]->base), bp);
		if (r != 0) {
			*i = k;
			return r;
		}
	}
	return 0;
}

int
ch_plog_read(ch_plog *pl, int64_t offset, int64_t max_bytes, ch_plog_slice *out, int16_t *kerr)
{
	memset(out, 0, sizeof(*out));
	out->fd = -1;
	*kerr = CH_KERR_NONE;
	if (offset < pl->log_start || offset > pl->leo) {
		*kerr = CH_KERR_OFFSET_OUT_OF_RANGE;
		return CH_ERR;
	}
	if (offset == pl->leo)
		return CH_OK;
	size_t i;
	ch_seg_pos bp;
	int r = find_batch(pl, offset, &i, &bp);
	if (r < 0) {
		if (ch_ratelog_fail(&pl->read_log, ch_now_mono_ms(), strerror(-r)))
			CH_LOGE(SUB, "%s: read at %" PRId64 ": %s", pl->dir, offset, strerror(-r));
		*kerr = CH_KERR_KAFKA_STORAGE_ERROR;
		return CH_ERR;
	}
	if (ch_ratelog_streak(&pl->read_log))
		ch_ratelog_ok(&pl->read_log, ch_now_mono_ms());
	if (r == 0)
		return CH_OK;
	ch_seg *s = pl->segs[i];
	int64_t first = ch_batch_size(&bp.h);
	out->seg = ch_seg_ref(s);
	out->fd = s->fd_log;
	out->pos = bp.pos;
	out->len = CH_MIN(CH_MAX(max_bytes, first), s->size - bp.pos);
	out->first_offset = bp.h.base_offset;
	return CH_OK;
}

void
ch_plog_slice_release(ch_plog_slice *s)
{
	if (s->seg)
		ch_seg_unref(s->seg);
	s->seg = NULL;
	s->len = 0;
}

int
ch_plog_read_copy(ch_plog *pl, int64_t offset, int64_t max_bytes, ch_buf *out, int16_t *kerr)
{
	ch_plog_slice sl;
	if (ch_plog_read(pl, offset, max_bytes, &sl, kerr) != CH_OK)
		return CH_ERR;
	int rc = CH_OK;
	if (sl.len > 0) {
		uint8_t *p = ch_buf_extend(out, (size_t)sl.len);
		if (!p || ch_logfs_read_full(pl->fs, sl.fd, p, (size_t)sl.len, sl.pos) < 0) {
			*kerr = CH_KERR_KAFKA_STORAGE_ERROR;
			rc = CH_ERR;
		}
	}
	ch_plog_slice_release(&sl);
	return rc;
}

int64_t
ch_plog_start_offset(const ch_plog *pl)
{
	return pl->log_start;
}

int64_t
ch_plog_end_offset(const ch_plog *pl)
{
	return pl->leo;
}

int64_t
ch_plog_size_bytes(const ch_plog *pl)
{
	int64_t t = 0;
	for (size_t i = 0; i < pl->n_segs; i++)
		t += pl->segs[i]->size;
	return t;
}

size_t
ch_plog_segment_count(const ch_plog *pl)
{
	return pl->n_segs;
}

int64_t
ch_plog_active_base(const ch_plog *pl)
{
	return active(pl)->base;
}

/* ---- timestamps ------------------------------------------------------------ */

/* Within the batch at bp: the first record with timestamp >= ts. */
static int
record_for_time(ch_seg *s, const ch_seg_pos *bp, int64_t ts, int64_t *offset, int64_t *found)
{
	*offset = bp->h.base_offset;
	*found = bp->h.max_timestamp;
	if (bp->h.attributes & CH_BATCH_ATTR_LOG_APPEND_TIME)
		return 0; /* every record carries the batch's append time */
	ch_buf b, scratch;
	ch_buf_init(&b);
	ch_buf_init(&scratch);
	int r = ch_seg_read_batch(s, bp, &b);
	const uint8_t *recs;
	size_t rlen;
	if (r == 0 &&
	    ch_batch_records(b.data, &bp->h, &scratch, 64u << 20, &recs, &rlen) == CH_OK) {
		ch_record_iter it;
		ch_record rec;
		ch_record_iter_init(&it, recs, rlen, bp->h.records_count);
		while (ch_record_next(&it, &rec) == 1) {
			int64_t t = bp->h.base_timestamp + rec.timestamp_delta;
			if (t >= ts) {
				*offset = bp->h.base_offset + rec.offset_delta;
				*found = t;
				break;
			}
		}
	}
	ch_buf_free(&b);
	ch_buf_free(&scratch);
	return r;
}

int
ch_plog_offset_for_time(ch_plog *pl, int64_t ts, int64_t *offset, int64_t *found_ts, int16_t *kerr)
{
	*kerr = CH_KERR_NONE;
	*offset = -1;
	*found_ts = -1;
	for (size_t i = 0; i < pl->n_segs; i++) {
		ch_seg *s = pl->segs[i];
		if (s->max_ts < ts)
			continue;
		ch_seg_pos bp;
		int r = ch_seg_find_ts(s, ts, &bp);
		if (r == 1)
			r = record_for_time(s, &bp, ts, offset, found_ts);
		if (r < 0) {
			*kerr = CH_KERR_KAFKA_STORAGE_ERROR;
			return CH_ERR;
		}
		if (*offset >= 0) {
			if (*offset < pl->log_start)
				*offset = pl->log_start;
			return CH_OK;
		}
	}
	return CH_OK;
}

int
ch_plog_max_timestamp(ch_plog *pl, int64_t *offset, int64_t *ts, int16_t *kerr)
{
	*kerr = CH_KERR_NONE;
	*offset = -1;
	*ts = -1;
	ch_seg *best = NULL;
	for (size_t i = 0; i < pl->n_segs; i++)
		if (pl->segs[i]->size > 0 && (!best || pl->segs[i]->max_ts > best->max_ts))
			best = pl->segs[i];
	if (!best)
		return CH_OK;
	ch_seg_pos bp;
	int r = ch_seg_find(best, best->max_ts_offset, &bp);
	if (r == 1)
		r = record_for_time(best, &bp, best->max_ts, offset, ts);
	if (r < 0) {
		*kerr = CH_KERR_KAFKA_STORAGE_ERROR;
		return CH_ERR;
	}
	return CH_OK;
}

int
ch_plog_legacy_offsets(ch_plog *pl, int64_t ts, int32_t max, int64_t now_ms, int64_t *out,
		       int32_t *n, int16_t *kerr)
{
	*kerr = CH_KERR_NONE;
	*n = 0;
	/* Kafka's offsetTimeArray: (segment base, or the log start when above
	 * it; the .log file's mtime) per segment, then (log end, now) when the
	 * active segment is not empty. */
	size_t m = pl->n_segs + (active(pl)->size > 0 ? 1 : 0);
	int64_t start = m - 1; /* -1: latest */
	if (ts == -2) {
		start = 0;
	} else if (ts != -1) {
		for (; start >= 0; start--) {
			int64_t mtime = now_ms;
			if ((size_t)start < pl->n_segs) {
				struct stat st;
				if (fstat(pl->segs[start]->fd_log, &st) != 0) {
					*kerr = CH_KERR_KAFKA_STORAGE_ERROR;
					return CH_ERR;
				}
				mtime = (int64_t)st.st_mtim.tv_sec * 1000 +
					st.st_mtim.tv_nsec / 1000000;
			}
			if (mtime <= ts)
				break;
		}
	}
	for (int64_t i = start; i >= 0 && *n < max; i--)
		out[(*n)++] =
			(size_t)i < pl->n_segs ? CH_MAX(pl->segs[i]->base, pl->log_start) : pl->leo;
	return CH_OK;
}

/* ---- durability ------------------------------------------------------------ */

typedef struct sync_item {
	ch_seg *seg;
	int64_t size;
	bool index;  /* its indexes too: a closed one's once, the active one's at a checkpoint */
	bool closed; /* index_synced may be set (the active segment's indexes still grow) */
} sync_item;

int
ch_plog_sync(ch_plog *pl)
{
	/* The recovery point, at most once a second: an old one only means
	 * more to check after a crash. The active segment's indexes are
	 * synced only then: open trusts those of a last segment that starts
	 * at or below the recovery point. */
	int64_t now = ch_now_mono_ms();
	pthread_mutex_lock(&pl->lock);
	bool checkpoint = pl->leo > pl->checkpointed && now - pl->checkpoint_ms >= CHECKPOINT_MS;
	sync_item *items = ch_xmalloc((pl->n_segs + 1) * sizeof(*items));
	size_t n = 0;
	for (size_t i = 0; i < pl->n_segs; i++) {
		ch_seg *s = pl->segs[i];
		int64_t sz = s->size;
		bool closed = i + 1 < pl->n_segs;
		bool idx = closed ? !s->index_synced : checkpoint;
		if (s->synced_size < sz || idx)
			items[n++] = (sync_item){ch_seg_ref(s), sz, idx, closed};
	}
	int64_t leo = pl->leo;
	bool dir = pl->dir_dirty;
	pl->dir_dirty = false;
	pthread_mutex_unlock(&pl->lock);

	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		ch_seg *s = items[i].seg;
		if (s->synced_size < items[i].size)
			r = pl->fs->fdatasync(pl->fs, s->fd_log);
		if (r == 0 && items[i].index)
			r = sync_seg_indexes(pl, s);
	}
	if (r == 0 && dir)
		r = pl->fs->sync_dir(pl->fs, pl->dir);

	pthread_mutex_lock(&pl->lock);
	if (r == 0) {
		for (size_t i = 0; i < n; i++) {
			if (items[i].seg->synced_size < items[i].size)
				items[i].seg->synced_size = items[i].size;
			if (items[i].index && items[i].closed)
				items[i].seg->index_synced = true;
		}
	} else if (dir) {
		pl->dir_dirty = true;
	}
	pthread_mutex_unlock(&pl->lock);
	for (size_t i = 0; i < n; i++)
		ch_seg_unref(items[i].seg);
	free(items);
	if (r < 0) {
		/* After a failed fsync the kernel may have dropped the pages: the
		 * only honest answer is to stop until recovery has looked. */
		atomic_store(&pl->failed, true);
		CH_LOGE(SUB, "%s: fdatasync failed: %s; log offline until reopened", pl->dir,
			strerror(-r));
		return CH_ERR;
	}
	int64_t cur = atomic_load(&pl->synced);
	while (cur < leo && !atomic_compare_exchange_weak(&pl->synced, &cur, leo))
		;
	/* The recovery point: written after the data and the indexes are
	 * durable, so it never claims more than is; fsynced itself, so that
	 * it is never garbage (cheap at this rate). */
	if (checkpoint) {
		if (offset_file_write(pl, RECOVERY_FILE, leo, true, &pl->checkpoint_log) == 0)
			pl->checkpointed = leo;
		pl->checkpoint_ms = now;
	}
	return CH_OK;
}

int64_t
ch_plog_synced_offset(ch_plog *pl)
{
	return atomic_load(&pl->synced);
}

void
ch_plog_log_tick(ch_plog *pl, int64_t now_mono_ms)
{
	ch_ratelog_tick(&pl->append_log, now_mono_ms);
	ch_ratelog_tick(&pl->read_log, now_mono_ms);
}

bool
ch_plog_flush_due(ch_plog *pl, int64_t now_ms)
{
	int64_t unsynced = pl->leo - atomic_load(&pl->synced);
	if (unsynced <= 0) {
		pl->last_flush_ms = now_ms;
		return false;
	}
	if (unsynced >= pl->cfg.flush_messages ||
	    (pl->cfg.flush_ms != INT64_MAX && now_ms - pl->last_flush_ms >= pl->cfg.flush_ms)) {
		pl->last_flush_ms = now_ms;
		return true;
	}
	return false;
}

bool
ch_plog_failed(ch_plog *pl)
{
	return atomic_load(&pl->failed);
}

/* ---- retention --------------------------------------------------------------- */

/* Deletes the oldest segment (never the active one). */
static int
delete_first(ch_plog *pl)
{
	ch_seg *s = pl->segs[0];
	int r = ch_seg_delete(s);
	if (r < 0 && !s->deleted) {
		char *p = ch_seg_path(s, ".log", false);
		CH_LOGE(SUB, "%s: delete: %s", p, strerror(-r));
		free(p);
		return r;
	}
	ch_plog_seg_replace(pl, 0, NULL);
	CH_LOGD(SUB, "%s: deleted segment %020" PRId64, pl->dir, s->base);
	ch_seg_unref(s);
	if (pl->log_start < pl->segs[0]->base)
		pl->log_start = pl->segs[0]->base;
	return 0;
}

int
ch_plog_retention(ch_plog *pl, int64_t now_ms, int *deleted, int16_t *kerr)
{
	*kerr = CH_KERR_NONE;
	*deleted = 0;
	if (!pl->cfg.cleanup_delete)
		return CH_OK;
	int64_t total = ch_plog_size_bytes(pl);
	while (pl->n_segs > 1) {
		ch_seg *s = pl->segs[0];
		if (s->cleaning)
			break;
		int64_t ts = s->max_ts >= 0 ? s->max_ts : s->roll_ts;
		bool by_time = pl->cfg.retention_ms >= 0 &&
			       (s->size == 0 || now_ms - ts > pl->cfg.retention_ms);
		bool by_size =
			pl->cfg.retention_bytes >= 0 && total - s->size >= pl->cfg.retention_bytes;
		bool below_start = pl->segs[1]->base <= pl->log_start; /* DeleteRecords */
		if (!by_time && !by_size && !below_start)
			break;
		int64_t sz = s->size;
		if (delete_first(pl) < 0) {
			*kerr = CH_KERR_KAFKA_STORAGE_ERROR;
			return CH_ERR;
		}
		total -= sz;
		(*deleted)++;
	}
	return CH_OK;
}

int
ch_plog_start_offset_check(ch_plog *pl, int64_t before_offset, int64_t *target, int16_t *kerr)
{
	*kerr = CH_KERR_NONE;
	if (before_offset == -1)
		before_offset = pl->leo;
	if (before_offset < 0 || before_offset > pl->leo) {
		*kerr = CH_KERR_OFFSET_OUT_OF_RANGE;
		return CH_ERR;
	}
	*target = before_offset;
	return CH_OK;
}

int
ch_plog_start_offset_write(ch_plog *pl, int64_t target)
{
	return offset_file_write(pl, START_FILE, target, true, NULL);
}

int64_t
ch_plog_start_offset_set(ch_plog *pl, int64_t target)
{
	if (target > pl->log_start)
		pl->log_start = CH_MIN(target, pl->leo);
	while (pl->n_segs > 1 && !pl->segs[0]->cleaning && pl->segs[1]->base <= pl->log_start) {
		if (delete_first(pl) < 0)
			break; /* the start offset moved anyway; retention retries */
	}
	return pl->log_start;
}

int
ch_plog_delete_records(ch_plog *pl, int64_t before_offset, int64_t *low_watermark, int16_t *kerr)
{
	int64_t target;
	if (ch_plog_start_offset_check(pl, before_offset, &target, kerr) != CH_OK)
		return CH_ERR;
	if (target > pl->log_start && ch_plog_start_offset_write(pl, target) < 0) {
		*kerr = CH_KERR_KAFKA_STORAGE_ERROR;
		return CH_ERR;
	}
	*low_watermark = ch_plog_start_offset_set(pl, target);
	return CH_OK;
}
