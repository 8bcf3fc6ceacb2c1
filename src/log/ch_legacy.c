/*
 * ch_legacy.c: magic 0/1 message sets <-> record batches v2, as Kafka 3.9
 * converts them. Formats and contracts in ch_legacy.h; the order of checks
 * follows UnifiedLog.analyzeAndValidateRecords and LogValidator (up),
 * RecordsUtil.downConvert and LazyDownConversionRecords(Send) (down).
 */
#include "log/ch_legacy.h"

#include <string.h>
#include <zlib.h>

#include "common/ch_common.h"
#include "common/ch_endian.h"
#include "log/ch_batch.h"
#include "log/ch_codec.h"
#include "proto/generated/ch_errors.h"

/* Kafka reads at most this much of a slice per down-conversion chunk
 * (LazyDownConversionRecordsSend.MAX_READ_SIZE). */
#define DOWN_CHUNK (128 * 1024)
#define HEADER_UP_TO_MAGIC 17 /* offset, size, crc, magic */

/* One message, its slices pointing into the input. */
typedef struct lmsg {
	int8_t magic;
	uint8_t attributes;
	int64_t timestamp; /* -1 for magic 0 */
	ch_bytes key, value;
} lmsg;

/* A message of n bytes at m (from its crc on). Magic 0 has its key length
 * at 6, any other magic at 14, as Kafka's LegacyRecord reads them.
 * @returns false if n is below the minimum or a length runs past n. */
static bool
msg_parse(const uint8_t *m, size_t n, lmsg *out)
{
	if (n < CH_LEGACY_OVERHEAD_V0)
		return false;
	out->magic = (int8_t)m[4];
	out->attributes = m[5];
	size_t at = out->magic == 0 ? 6 : 14;
	if (n < at + 4)
		return false;
	out->timestamp = out->magic == 0 ? -1 : (int64_t)ch_be_get64(m + 6);
	ch_bytes *f[2] = {&out->key, &out->value};
	for (int i = 0; i < 2; i++) {
		if (n - at < 4)
			return false;
		int32_t l = (int32_t)ch_be_get32(m + at);
		at += 4;
		if (l < 0) {
			*f[i] = CH_BYTES_NULL;
			continue;
		}
		if ((size_t)l > n - at)
			return false;
		*f[i] = (ch_bytes){m + at, l};
		at += (size_t)l;
	}
	return true;
}

static bool
msg_crc_ok(const uint8_t *m, size_t n)
{
	return n >= CH_LEGACY_OVERHEAD_V0 &&
	       (uint32_t)crc32(0, m + 4, (uInt)(n - 4)) == ch_be_get32(m);
}

bool
ch_legacy_is_legacy(const uint8_t *data, size_t len)
{
	size_t pos = 0;
	bool any = false;
	while (len - pos >= HEADER_UP_TO_MAGIC) {
		int32_t size = (int32_t)ch_be_get32(data + pos + 8);
		if (data[pos + 16] != 2 || size < 0)
			return true;
		if ((size_t)size > len - pos - CH_LEGACY_LOG_OVERHEAD)
			break;
		pos += CH_LEGACY_LOG_OVERHEAD + (size_t)size;
		any = true;
	}
	return !any;
}

/* ---- up ---------------------------------------------------------------------- */

typedef struct up {
	const ch_legacy_up_cfg *cfg;
	ch_legacy_up_res *res;
	ch_buf *out;
	size_t start; /* where the batch begins in out */
	ch_batch_builder bb;
	bool begun;
	bool full;  /* stopped adding: past max.message.bytes */
	bool huge;  /* stopped adding: records section past the cap */
	int target; /* the batch's codec */
} up;

static int16_t
fail(up *u, int16_t kerr, const char *why)
{
	u->res->why = why;
	return kerr;
}

/* Kafka's validateKey, then validateTimestamp: one record's error, if any.
 * batch_lat: the timestamp type of the (shallow or wrapper) message says
 * LogAppendTime, which a producer may not set. */
static int16_t
check_record(const ch_legacy_up_cfg *cfg, bool batch_lat, int64_t ts, bool has_key)
{
	if (cfg->compacted && !has_key)
		return CH_KERR_INVALID_RECORD;
	if (ts < -1)
		return CH_KERR_INVALID_TIMESTAMP; /* Kafka's batch builder throws */
	if (!cfg->log_append_time && ts != -1)
		return 0; /* the KIP-937 window: ch_plog_append, on the converted batch */
	if (batch_lat)
		return CH_KERR_INVALID_TIMESTAMP;
	return 0;
}

/* Adds one validated record to the converted batch (begun at the first, its timestamp the base);
 * past CH_LEGACY_MAX_INFLATE (huge) or, with no codec, max.message.bytes (full), adds no more. */
static void
add(up *u, int64_t ts, ch_bytes key, ch_bytes value)
{
	if (u->full || u->huge)
		return;
	if (!u->begun) {
		ch_batch_builder_begin(&u->bb, u->out, 0, 0, ts, -1, -1, -1);
		u->begun = true;
	}
	ch_batch_builder_add(&u->bb, u->bb.count, ts, key, value, 0, NULL, 0);
	size_t n = u->out->len - u->start;
	if (n - CH_BATCH_HDR_SIZE > CH_LEGACY_MAX_INFLATE)
		u->huge = true;
	else if (u->target == CH_COMPRESSION_NONE &&
		 n > (size_t)CH_MAX(u->cfg->max_message_bytes, 0))
		u->full = true;
	u->res->records++;
}

/* The records of a compressed wrapper (Kafka's DeepRecordsIterator, then
 * LogValidator's loop over them). e: the entry (12 + size bytes). */
static int16_t
deep(up *u, const uint8_t *e, const lmsg *w)
{
	int codec = w->attributes & CH_LEGACY_ATTR_CODEC;
	if (codec == CH_COMPRESSION_ZSTD)
		return fail(u, CH_KERR_INVALID_RECORD, "zstd in a magic 0/1 wrapper");
	if (w->value.len < 0)
		return fail(u, CH_KERR_INVALID_RECORD, "compressed message with a null value");
	ch_buf in;
	ch_buf_init(&in);
	int16_t kerr = 0;
	if (ch_codec_decompress_legacy(codec, w->magic, w->value.p, (size_t)w->value.len, &in,
				       CH_LEGACY_MAX_INFLATE) != CH_OK) {
		kerr = fail(u, CH_KERR_CORRUPT_MESSAGE, "compressed value does not decompress");
		goto out;
	}
	/* Kafka reads every inner entry before looking at any: sizes first. */
	size_t pos = 0, end = 0;
	int64_t last_inner = -1;
	int n = 0;
	while (in.len - pos >= CH_LEGACY_LOG_OVERHEAD) {
		int32_t isz = (int32_t)ch_be_get32(in.data + pos + 8);
		if (isz < CH_LEGACY_OVERHEAD_V0) {
			kerr = fail(u, CH_KERR_CORRUPT_MESSAGE,
				    "inner message size below the minimum");
			goto out;
		}
		if ((size_t)isz > in.len - pos - CH_LEGACY_LOG_OVERHEAD)
			break; /* a partial last inner message is dropped */
		last_inner = (int64_t)ch_be_get64(in.data + pos);
		pos += CH_LEGACY_LOG_OVERHEAD + (size_t)isz;
		n++;
	}
	end = pos;
	if (n == 0) {
		kerr = fail(u, CH_KERR_INVALID_RECORD,
			    "compressed message set with no inner messages");
		goto out;
	}
	int64_t wrapper_offset = (int64_t)ch_be_get64(e);
	if (w->magic == 1 && wrapper_offset != 0 && wrapper_offset < last_inner) {
		kerr = fail(u, CH_KERR_INVALID_RECORD,
			    "v1 wrapper offset is less than its last inner offset");
		goto out;
	}
	bool lat = w->magic == 1 && (w->attributes & CH_LEGACY_ATTR_LOG_APPEND_TIME);
	int16_t rec_err = 0;
	for (pos = 0; pos < end;) {
		size_t isz = ch_be_get32(in.data + pos + 8);
		const uint8_t *m = in.data + pos + CH_LEGACY_LOG_OVERHEAD;
		pos += CH_LEGACY_LOG_OVERHEAD + isz;
		if (m[5] & CH_LEGACY_ATTR_CODEC) {
			kerr = fail(u, CH_KERR_INVALID_RECORD,
				    "inner messages must not be compressed");
			goto out;
		}
		if ((int8_t)m[4] != w->magic) {
			rec_err = rec_err ? rec_err : CH_KERR_INVALID_RECORD;
			u->res->why = "inner message magic differs from its wrapper's";
			continue;
		}
		lmsg im;
		if (!msg_crc_ok(m, isz)) {
			kerr = fail(u, CH_KERR_CORRUPT_MESSAGE, "inner message CRC mismatch");
			goto out;
		}
		if (!msg_parse(m, isz, &im)) {
			kerr = fail(u, CH_KERR_CORRUPT_MESSAGE,
				    "inner message key or value length past its end");
			goto out;
		}
		int64_t ts = im.magic == 0 ? -1 : (lat ? w->timestamp : im.timestamp);
		int16_t e1 = check_record(u->cfg, lat, ts, im.key.len >= 0);
		if (e1) {
			if (e1 == CH_KERR_INVALID_TIMESTAMP || !rec_err)
				rec_err = e1;
			u->res->why = e1 == CH_KERR_INVALID_TIMESTAMP
					      ? "invalid timestamp"
					      : "record without key on a compacted topic";
			continue;
		}
		if (!rec_err)
			add(u, ts, im.key, im.value);
	}
	kerr = rec_err;
out:
	ch_buf_free(&in);
	return kerr;
}

/* The shallow walk (analyzeAndValidateRecords): sizes, magic, size limit,
 * CRC of every whole entry. Fills *valid, *n, *source, *first_magic. */
static int16_t
shallow(up *u, const uint8_t *in, size_t len, size_t *valid, int *n, int *source, int *first_magic)
{
	size_t pos = 0;
	*n = 0;
	*source = CH_COMPRESSION_NONE;
	*first_magic = -1;
	while (len - pos >= CH_LEGACY_LOG_OVERHEAD) {
		const uint8_t *e = in + pos;
		int32_t size = (int32_t)ch_be_get32(e + 8);
		if (size < CH_LEGACY_OVERHEAD_V0)
			return fail(u, CH_KERR_CORRUPT_MESSAGE,
				    "message size below the minimum (14)");
		if (len - pos < HEADER_UP_TO_MAGIC)
			break;
		int8_t magic = (int8_t)e[16];
		if (magic < 0 || magic > CH_BATCH_MAGIC)
			return fail(u, CH_KERR_CORRUPT_MESSAGE, "invalid magic");
		if ((size_t)size > len - pos - CH_LEGACY_LOG_OVERHEAD)
			break; /* a partial last entry: Kafka trims it */
		size_t es = CH_LEGACY_LOG_OVERHEAD + (size_t)size;
		int codec;
		if (magic == CH_BATCH_MAGIC) {
			if (ch_be_get64(e) != 0)
				return fail(u, CH_KERR_INVALID_RECORD,
					    "the baseOffset of a record batch should be 0");
			if (es > (size_t)CH_MAX(u->cfg->max_message_bytes, 0))
				return fail(u, CH_KERR_MESSAGE_TOO_LARGE,
					    "record batch larger than max.message.bytes");
			if (es < CH_BATCH_HDR_SIZE ||
			    ch_batch_compute_crc(e, es) != ch_be_get32(e + CH_BATCH_CRC_START - 4))
				return fail(u, CH_KERR_CORRUPT_MESSAGE,
					    "record batch CRC mismatch");
			codec = e[22] & CH_BATCH_ATTR_COMPRESSION;
		} else {
			if (es > (size_t)CH_MAX(u->cfg->max_message_bytes, 0))
				return fail(u, CH_KERR_MESSAGE_TOO_LARGE,
					    "message larger than max.message.bytes");
			if (!msg_crc_ok(e + CH_LEGACY_LOG_OVERHEAD, (size_t)size))
				return fail(u, CH_KERR_CORRUPT_MESSAGE, "message CRC mismatch");
			lmsg m;
			if (!msg_parse(e + CH_LEGACY_LOG_OVERHEAD, (size_t)size, &m))
				return fail(u, CH_KERR_CORRUPT_MESSAGE,
					    "key or value length past the end of the message");
			codec = m.attributes & CH_LEGACY_ATTR_CODEC;
		}
		if (codec > CH_COMPRESSION_ZSTD)
			return fail(u, CH_KERR_INVALID_RECORD, "unknown compression codec");
		if (codec != CH_COMPRESSION_NONE)
			*source = codec;
		if (*n == 0)
			*first_magic = magic;
		(*n)++;
		pos += es;
	}
	*valid = pos;
	return 0;
}

int16_t
ch_legacy_up(const uint8_t *in, size_t len, const ch_legacy_up_cfg *cfg, ch_buf *out,
	     ch_legacy_up_res *res)
{
	memset(res, 0, sizeof(*res));
	up u = {.cfg = cfg, .res = res, .out = out, .start = out->len};
	size_t valid;
	int n, source, first_magic;
	int16_t kerr = shallow(&u, in, len, &valid, &n, &source, &first_magic);
	if (kerr)
		return kerr;
	res->valid_bytes = valid;
	if (n == 0)
		return 0;
	u.target = cfg->codec == CH_COMPRESSION_PRODUCER ? source : cfg->codec;
	res->codec = u.target;
	/* getFirstBatchAndMaybeValidateNoMoreBatches */
	if (n > 1 && (first_magic == CH_BATCH_MAGIC || source != CH_COMPRESSION_NONE))
		return fail(&u, CH_KERR_INVALID_RECORD,
			    "compressed outer record has more than one batch");
	if (first_magic == CH_BATCH_MAGIC)
		return fail(&u, CH_KERR_INVALID_RECORD, "a record batch v2 among old messages");
	for (size_t pos = 0; pos < valid;) {
		const uint8_t *e = in + pos;
		size_t size = ch_be_get32(e + 8);
		pos += CH_LEGACY_LOG_OVERHEAD + size;
		if (e[16] != first_magic) {
			kerr = fail(&u, CH_KERR_INVALID_RECORD,
				    "message magic differs from the first message's");
			goto bad;
		}
		lmsg m;
		msg_parse(e + CH_LEGACY_LOG_OVERHEAD, size, &m); /* checked by shallow() */
		if (m.attributes & CH_LEGACY_ATTR_CODEC) {
			kerr = deep(&u, e, &m);
		} else {
			bool lat = m.magic == 1 && (m.attributes & CH_LEGACY_ATTR_LOG_APPEND_TIME);
			kerr = check_record(cfg, lat, m.timestamp, m.key.len >= 0);
			if (kerr)
				u.res->why = kerr == CH_KERR_INVALID_TIMESTAMP
						     ? "invalid timestamp"
						     : "record without key on a compacted topic";
			else
				add(&u, m.timestamp, m.key, m.value);
		}
		if (kerr)
			goto bad;
	}
	if (u.huge) {
		kerr = fail(&u, CH_KERR_MESSAGE_TOO_LARGE, "converted records past 64 MiB");
		goto bad;
	}
	if (u.full) {
		kerr = fail(&u, CH_KERR_MESSAGE_TOO_LARGE,
			    "converted record batch larger than max.message.bytes");
		goto bad;
	}
	if (ch_batch_builder_end_codec(&u.bb, -1, u.target) != CH_OK) {
		kerr = fail(&u, CH_KERR_UNKNOWN_SERVER_ERROR, "out of memory converting messages");
		goto bad;
	}
	if (out->len - u.start > (size_t)CH_MAX(cfg->max_message_bytes, 0)) {
		kerr = fail(&u, CH_KERR_MESSAGE_TOO_LARGE,
			    "converted record batch larger than max.message.bytes");
		goto bad;
	}
	return 0;
bad:
	out->len = u.start;
	res->records = 0;
	return kerr;
}

/* ---- down -------------------------------------------------------------------- */

/* Room for an entry's header: offset, size, crc, magic, attributes,
 * (timestamp,) key and value lengths. */
static size_t
msg_hdr_size(int magic)
{
	return CH_LEGACY_LOG_OVERHEAD + (magic ? CH_LEGACY_OVERHEAD_V1 : CH_LEGACY_OVERHEAD_V0);
}

/* Fills the entry header at p for a message of `size` bytes whose value
 * (vlen bytes, -1 null) follows a key of klen bytes; the caller has put
 * the key and value in place. Computes the CRC. */
static void
msg_finish(uint8_t *p, int magic, int64_t offset, uint8_t attr, int64_t ts, ch_bytes key,
	   int32_t vlen, size_t size)
{
	ch_be_put64(p, (uint64_t)offset);
	ch_be_put32(p + 8, (uint32_t)size);
	uint8_t *m = p + CH_LEGACY_LOG_OVERHEAD;
	m[4] = (uint8_t)magic;
	m[5] = attr;
	size_t at = 6;
	if (magic) {
		ch_be_put64(m + 6, (uint64_t)ts);
		at = 14;
	}
	ch_be_put32(m + at, (uint32_t)(key.len < 0 ? -1 : key.len));
	at += 4 + (key.len > 0 ? (size_t)key.len : 0);
	ch_be_put32(m + at, (uint32_t)vlen);
	ch_be_put32(m, (uint32_t)crc32(0, m + 4, (uInt)(size - 4)));
}

/* Appends one magic 0/1 entry (offset, size, message with its CRC) to out. On oom nothing is
 * appended and out's oom flag is left for the caller's ch_buf_ok. */
static void
put_msg(ch_buf *out, int magic, int64_t offset, uint8_t attr, int64_t ts, ch_bytes key,
	ch_bytes value)
{
	size_t k = key.len > 0 ? (size_t)key.len : 0, v = value.len > 0 ? (size_t)value.len : 0;
	size_t total = msg_hdr_size(magic) + k + v;
	uint8_t *p = ch_buf_extend(out, total);
	if (!p)
		return;
	size_t kat = CH_LEGACY_LOG_OVERHEAD + (magic ? 18 : 10);
	if (k)
		memcpy(p + kat, key.p, k);
	if (v)
		memcpy(p + kat + k + 4, value.p, v);
	msg_finish(p, magic, offset, attr, ts, key, value.len < 0 ? -1 : value.len,
		   total - CH_LEGACY_LOG_OVERHEAD);
}

int
ch_legacy_down_batch(const uint8_t *b, size_t len, int magic, int64_t first_offset, ch_buf *out)
{
	ch_batch_hdr h;
	if (ch_batch_parse_hdr(b, len, 0, &h) != CH_BATCH_OK || (size_t)ch_batch_size(&h) != len)
		return CH_LEGACY_DOWN_CORRUPT;
	if (h.attributes & CH_BATCH_ATTR_CONTROL)
		return CH_LEGACY_DOWN_OK; /* no transaction markers before magic 2 */
	int codec = ch_batch_compression(&h);
	if (codec == CH_COMPRESSION_ZSTD)
		return CH_LEGACY_DOWN_ZSTD;
	if (codec > CH_COMPRESSION_ZSTD || h.records_count < 0)
		return CH_LEGACY_DOWN_CORRUPT;
	ch_buf scratch, inner;
	ch_buf_init(&scratch);
	ch_buf_init(&inner);
	int rc = CH_LEGACY_DOWN_CORRUPT;
	size_t start = out->len;
	const uint8_t *recs;
	size_t rlen;
	if (ch_batch_records(b, &h, &scratch, CH_LEGACY_MAX_INFLATE, &recs, &rlen) != CH_OK)
		goto done;
	if ((size_t)h.records_count > rlen / 7 + 1) /* a record takes at least 7 bytes */
		goto done;
	bool lat = h.attributes & CH_BATCH_ATTR_LOG_APPEND_TIME;
	uint8_t attr = magic && lat ? CH_LEGACY_ATTR_LOG_APPEND_TIME : 0;
	ch_buf *dst = codec ? &inner : out;
	int64_t base = -1, last = -1, max_ts = -1;
	ch_record_iter it;
	ch_record rec;
	ch_record_iter_init(&it, recs, rlen, h.records_count);
	int more;
	while ((more = ch_record_next(&it, &rec)) == 1) {
		/* wrapping sums: a hostile batch's base must not be undefined behaviour */
		int64_t off =
			(int64_t)((uint64_t)h.base_offset + (uint64_t)(int64_t)rec.offset_delta);
		int64_t ts =
			lat ? h.max_timestamp
			    : (int64_t)((uint64_t)h.base_timestamp + (uint64_t)rec.timestamp_delta);
		if (!codec && off < first_offset)
			continue;
		if (base < 0)
			base = off;
		put_msg(dst, magic, codec && magic == 1 ? off - base : off, attr, ts, rec.key,
			rec.value);
		if (ts > max_ts)
			max_ts = ts;
		last = off;
	}
	if (more < 0 || it.err)
		goto done;
	if (codec && base >= 0) {
		/* The wrapper: null key, the compressed inner set as value, the
		 * last inner offset, LogAppendTime or the largest timestamp. */
		size_t at = out->len, hs = msg_hdr_size(magic);
		if (!ch_buf_extend(out, hs) ||
		    ch_codec_compress_legacy(codec, magic, inner.data, inner.len, out) != CH_OK)
			goto done;
		size_t vlen = out->len - at - hs;
		msg_finish(out->data + at, magic, last, (uint8_t)(attr | codec),
			   lat ? h.max_timestamp : max_ts, CH_BYTES_NULL, (int32_t)vlen,
			   out->len - at - CH_LEGACY_LOG_OVERHEAD);
	}
	rc = ch_buf_ok(out) && ch_buf_ok(&inner) ? CH_LEGACY_DOWN_OK : CH_LEGACY_DOWN_CORRUPT;
done:
	if (rc != CH_LEGACY_DOWN_OK)
		out->len = start;
	ch_buf_free(&scratch);
	ch_buf_free(&inner);
	return rc;
}

/* The size of the whole batch at pos (Kafka's FileLogInputStream.nextBatch).
 * @returns 1 with *size, 0 if no whole batch starts there, -1 on a read
 * error or a size below the minimum. */
static int
batch_at(ch_legacy_down *d, int64_t pos, int64_t *size)
{
	if (pos >= d->in_len - HEADER_UP_TO_MAGIC)
		return 0;
	uint8_t h[CH_LEGACY_LOG_OVERHEAD];
	if (d->read(d->ud, pos, h, sizeof(h)) != CH_OK)
		return -1;
	int32_t sz = (int32_t)ch_be_get32(h + 8);
	if (sz < CH_LEGACY_OVERHEAD_V0)
		return -1;
	if (pos > d->in_len - CH_LEGACY_LOG_OVERHEAD - sz)
		return 0;
	*size = CH_LEGACY_LOG_OVERHEAD + sz;
	return 1;
}

/* Converts the next chunk into d->pending: batches from d->in_pos while they
 * fit in `limit` bytes of input, at least one. Clears d->converting at the
 * end of the slice, or at a zstd batch (whose chunk is dropped: Kafka sends
 * overflow batches from there). *zstd tells which.
 * @returns CH_OK / CH_ERR (unreadable or malformed). */
static int
convert_chunk(ch_legacy_down *d, int64_t limit, bool *zstd)
{
	*zstd = false;
	int64_t from = d->in_pos, to = from, sz;
	int r;
	while ((r = batch_at(d, to, &sz)) == 1 && (to == from || to - from + sz <= limit))
		to += sz;
	if (r < 0)
		return CH_ERR;
	if (to == from) {
		d->converting = false;
		return CH_OK;
	}
	ch_buf_reset(&d->in);
	uint8_t *p = ch_buf_extend(&d->in, (size_t)(to - from));
	if (!p || d->read(d->ud, from, p, (size_t)(to - from)) != CH_OK)
		return CH_ERR;
	size_t before = d->pending.len;
	for (size_t pos = 0; pos < d->in.len;) {
		size_t bs = CH_LEGACY_LOG_OVERHEAD + ch_be_get32(d->in.data + pos + 8);
		int rc = ch_legacy_down_batch(d->in.data + pos, bs, d->magic, d->first_offset,
					      &d->pending);
		if (rc == CH_LEGACY_DOWN_ZSTD) {
			d->pending.len = before;
			d->converting = false;
			*zstd = true;
			return CH_OK;
		}
		if (rc != CH_LEGACY_DOWN_OK)
			return CH_ERR;
		pos += bs;
	}
	d->in_pos = to;
	return ch_buf_ok(&d->pending) ? CH_OK : CH_ERR;
}

int16_t
ch_legacy_down_init(ch_legacy_down *d, int magic, int64_t first_offset, int64_t in_len,
		    ch_legacy_read_fn read, void *ud)
{
	memset(d, 0, sizeof(*d));
	d->magic = magic;
	d->first_offset = first_offset;
	d->in_len = in_len;
	d->read = read;
	d->ud = ud;
	ch_buf_init(&d->pending);
	ch_buf_init(&d->in);
	d->converting = true;
	/* The first batch that converts to something, each on its own. */
	bool any = false, zstd;
	while (d->converting && d->pending.len == 0) {
		int64_t sz;
		if (batch_at(d, d->in_pos, &sz) == 1)
			any = true;
		if (convert_chunk(d, 0, &zstd) != CH_OK) {
			d->converting = false;
			return CH_KERR_CORRUPT_MESSAGE;
		}
		if (zstd)
			return CH_KERR_UNSUPPORTED_COMPRESSION_TYPE;
	}
	if (d->pending.len > 0)
		d->size = CH_MAX(in_len, (int64_t)d->pending.len);
	else
		d->size = any ? CH_LEGACY_LOG_OVERHEAD : 0;
	return 0;
}

/* Kafka's buildOverflowBatch for what is left: offset -1, a length past the
 * end, zeros; at most 128 KiB at a time. */
static void
overflow(ch_legacy_down *d)
{
	int64_t left = d->size - d->out_pos;
	int64_t n = CH_MAX((int64_t)CH_LEGACY_LOG_OVERHEAD, CH_MIN(left + 1, (int64_t)DOWN_CHUNK));
	uint8_t *p = ch_buf_extend(&d->pending, (size_t)n);
	if (!p)
		return;
	memset(p, 0, (size_t)n);
	ch_be_put64(p, UINT64_MAX);
	ch_be_put32(p + 8, (uint32_t)CH_MAX(left + 1, (int64_t)CH_BATCH_HDR_SIZE));
}

int
ch_legacy_down_fill(ch_legacy_down *d, ch_buf *out, size_t max)
{
	size_t given = 0;
	while (d->out_pos < d->size && given < max) {
		if (d->pending_off == d->pending.len) {
			ch_buf_reset(&d->pending);
			d->pending_off = 0;
			if (d->converting) {
				bool zstd;
				if (convert_chunk(d, DOWN_CHUNK, &zstd) != CH_OK)
					return CH_ERR;
				continue;
			}
			overflow(d);
			if (!ch_buf_ok(&d->pending))
				return CH_ERR;
		}
		size_t n = CH_MIN(d->pending.len - d->pending_off, max - given);
		n = (size_t)CH_MIN((int64_t)n, d->size - d->out_pos);
		ch_buf_append(out, d->pending.data + d->pending_off, n);
		d->pending_off += n;
		d->out_pos += (int64_t)n;
		given += n;
	}
	return ch_buf_ok(out) ? CH_OK : CH_ERR;
}

void
ch_legacy_down_free(ch_legacy_down *d)
{
	ch_buf_free(&d->pending);
	ch_buf_free(&d->in);
}
