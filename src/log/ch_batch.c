/*
 * ch_batch.c: record batch v2 validation, in-place rewrites, record
 * iteration and a builder. See ch_batch.h for the format.
 */
#include "common/ch_endian.h"
#include "log/ch_batch.h"

#include <string.h>

#include "common/ch_common.h"
#include "common/ch_hash.h"
#include "log/ch_codec.h"
#include "proto/ch_wr.h"

static const char *const batch_err_names[] = {
	"ok",           "truncated batch",           "bad batch length",  "unsupported magic",
	"CRC mismatch", "inconsistent batch header", "malformed records",
};

const char *
ch_batch_err_str(int err)
{
	return (unsigned)err < CH_ARRAY_LEN(batch_err_names) ? batch_err_names[err] : "?";
}

int
ch_batch_parse_hdr(const uint8_t *p, size_t len, int64_t max_size, ch_batch_hdr *h)
{
	/* Magic first: an old-format message set must say "magic", not "short". */
	if (len < 17)
		return CH_BATCH_ESHORT;
	h->base_offset = (int64_t)ch_be_get64(p);
	h->batch_length = (int32_t)ch_be_get32(p + 8);
	h->partition_leader_epoch = (int32_t)ch_be_get32(p + 12);
	h->magic = (int8_t)p[16];
	if (h->magic != CH_BATCH_MAGIC)
		return CH_BATCH_EMAGIC;
	if (h->batch_length < CH_BATCH_HDR_SIZE - CH_BATCH_LOG_OVERHEAD)
		return CH_BATCH_ELENGTH;
	if (max_size > 0 && (int64_t)h->batch_length > max_size - CH_BATCH_LOG_OVERHEAD)
		return CH_BATCH_ELENGTH;
	if (len < CH_BATCH_HDR_SIZE)
		return CH_BATCH_ESHORT;
	h->crc = ch_be_get32(p + 17);
	h->attributes = (int16_t)((p[21] << 8) | p[22]);
	h->last_offset_delta = (int32_t)ch_be_get32(p + 23);
	h->base_timestamp = (int64_t)ch_be_get64(p + 27);
	h->max_timestamp = (int64_t)ch_be_get64(p + 35);
	h->producer_id = (int64_t)ch_be_get64(p + 43);
	h->producer_epoch = (int16_t)((p[51] << 8) | p[52]);
	h->base_sequence = (int32_t)ch_be_get32(p + 53);
	h->records_count = (int32_t)ch_be_get32(p + 57);
	return CH_BATCH_OK;
}

uint32_t
ch_batch_compute_crc(const uint8_t *p, size_t size)
{
	return ch_crc32c(0, p + CH_BATCH_CRC_START, size - CH_BATCH_CRC_START);
}

void
ch_record_iter_init(ch_record_iter *it, const uint8_t *records, size_t len, int32_t count)
{
	ch_rd_init(&it->rd, records, len);
	it->left = count;
	it->err = CH_BATCH_OK;
}

int
ch_record_next(ch_record_iter *it, ch_record *rec)
{
	if (it->err)
		return -1;
	if (it->left <= 0) {
		if (ch_rd_left(&it->rd) != 0)
			it->err = CH_BATCH_ERECORDS; /* trailing garbage */
		return 0;
	}
	int32_t len = ch_rd_varint(&it->rd);
	if (!ch_rd_ok(&it->rd) || len < 0 || (size_t)len > ch_rd_left(&it->rd))
		goto bad;
	ch_rd r;
	ch_rd_init(&r, it->rd.p, (size_t)len);
	it->rd.p += len;
	rec->attributes = ch_rd_i8(&r);
	rec->timestamp_delta = ch_rd_varlong(&r);
	rec->offset_delta = ch_rd_varint(&r);
	int32_t klen = ch_rd_varint(&r);
	if (klen < -1)
		goto bad;
	rec->key = klen < 0 ? CH_BYTES_NULL : (ch_bytes){ch_rd_take(&r, (size_t)klen), klen};
	int32_t vlen = ch_rd_varint(&r);
	if (vlen < -1)
		goto bad;
	rec->value = vlen < 0 ? CH_BYTES_NULL : (ch_bytes){ch_rd_take(&r, (size_t)vlen), vlen};
	rec->headers_count = ch_rd_varint(&r);
	if (!ch_rd_ok(&r) || rec->headers_count < 0)
		goto bad;
	rec->headers = r.p;
	for (int32_t i = 0; i < rec->headers_count; i++) {
		int32_t hk = ch_rd_varint(&r);
		if (hk < 0)
			goto bad;
		ch_rd_take(&r, (size_t)hk);
		int32_t hv = ch_rd_varint(&r);
		if (hv < -1)
			goto bad;
		if (hv > 0)
			ch_rd_take(&r, (size_t)hv);
		if (!ch_rd_ok(&r))
			goto bad;
	}
	if (!ch_rd_ok(&r) || ch_rd_left(&r) != 0)
		goto bad;
	rec->headers_len = (size_t)(r.p - rec->headers);
	it->left--;
	return 1;
bad:
	it->err = CH_BATCH_ERECORDS;
	return -1;
}

int
ch_batch_check(const uint8_t *p, size_t len, int64_t max_size, bool strict_producer,
	       ch_batch_hdr *h)
{
	int rc = ch_batch_parse_hdr(p, len, max_size, h);
	if (rc != CH_BATCH_OK)
		return rc;
	size_t size = (size_t)ch_batch_size(h);
	if (len < size)
		return CH_BATCH_ESHORT;
	if (ch_batch_compute_crc(p, size) != h->crc)
		return CH_BATCH_ECRC;
	if ((h->attributes & ~CH_BATCH_ATTR_KNOWN) != 0 ||
	    ch_batch_compression(h) > CH_COMPRESSION_ZSTD)
		return CH_BATCH_EINVALID;
	if (h->last_offset_delta < 0 || h->records_count < 0)
		return CH_BATCH_EINVALID;
	/* A producer's batch has one record per offset (Kafka's LogValidator);
	 * a cleaned batch may have fewer, never more. */
	if (strict_producer) {
		if (h->records_count == 0 || h->records_count - 1 != h->last_offset_delta)
			return CH_BATCH_EINVALID;
	} else if (h->records_count > (int64_t)h->last_offset_delta + 1) {
		return CH_BATCH_EINVALID;
	}
	if (ch_batch_compression(h) != CH_COMPRESSION_NONE)
		return CH_BATCH_OK; /* records are checked when decompressed */
	/* Each record takes at least 7 bytes: cap the count before looping. */
	if ((size_t)h->records_count > (size - CH_BATCH_HDR_SIZE) / 7 + 1)
		return CH_BATCH_ERECORDS;
	ch_record_iter it;
	ch_record rec;
	ch_record_iter_init(&it, p + CH_BATCH_HDR_SIZE, size - CH_BATCH_HDR_SIZE, h->records_count);
	int64_t prev = -1;
	int32_t i = 0;
	int more;
	while ((more = ch_record_next(&it, &rec)) == 1) {
		if (strict_producer
			    ? rec.offset_delta != i
			    : (rec.offset_delta <= prev || rec.offset_delta > h->last_offset_delta))
			return CH_BATCH_ERECORDS;
		prev = rec.offset_delta;
		i++;
	}
	if (more < 0 || it.err)
		return CH_BATCH_ERECORDS;
	return CH_BATCH_OK;
}

void
ch_batch_set_base_offset(uint8_t *p, int64_t base_offset)
{
	ch_be_put64(p, (uint64_t)base_offset);
}

void
ch_batch_set_leader_epoch(uint8_t *p, int32_t epoch)
{
	ch_be_put32(p + 12, (uint32_t)epoch);
}

void
ch_batch_set_log_append_time(uint8_t *p, size_t size, int64_t ts)
{
	uint16_t attr = (uint16_t)((p[21] << 8) | p[22]);
	attr |= CH_BATCH_ATTR_LOG_APPEND_TIME;
	p[21] = (uint8_t)(attr >> 8);
	p[22] = (uint8_t)attr;
	ch_be_put64(p + 35, (uint64_t)ts);
	ch_be_put32(p + 17, ch_batch_compute_crc(p, size));
}

void
ch_batch_set_create_time(uint8_t *p, size_t size, int64_t max_ts)
{
	uint16_t attr = (uint16_t)((p[21] << 8) | p[22]);
	if (!(attr & CH_BATCH_ATTR_LOG_APPEND_TIME) && (int64_t)ch_be_get64(p + 35) == max_ts)
		return;
	attr &= (uint16_t)~CH_BATCH_ATTR_LOG_APPEND_TIME;
	p[21] = (uint8_t)(attr >> 8);
	p[22] = (uint8_t)attr;
	ch_be_put64(p + 35, (uint64_t)max_ts);
	ch_be_put32(p + 17, ch_batch_compute_crc(p, size));
}

int
ch_batch_records(const uint8_t *batch, const ch_batch_hdr *h, ch_buf *scratch, size_t max_out,
		 const uint8_t **out, size_t *out_len)
{
	const uint8_t *rec = batch + CH_BATCH_HDR_SIZE;
	size_t rec_len = (size_t)ch_batch_size(h) - CH_BATCH_HDR_SIZE;
	if (ch_batch_compression(h) == CH_COMPRESSION_NONE) {
		*out = rec;
		*out_len = rec_len;
		return CH_OK;
	}
	ch_buf_reset(scratch);
	if (ch_codec_decompress(ch_batch_compression(h), rec, rec_len, scratch, max_out) != CH_OK)
		return CH_ERR;
	static const uint8_t empty[1];
	*out = scratch->len ? scratch->data : empty;
	*out_len = scratch->len;
	return CH_OK;
}

void
ch_batch_builder_begin(ch_batch_builder *bb, ch_buf *out, int64_t base_offset, int16_t attributes,
		       int64_t base_timestamp, int64_t producer_id, int16_t producer_epoch,
		       int32_t base_sequence)
{
	bb->b = out;
	bb->start = out->len;
	bb->base_timestamp = base_timestamp;
	bb->max_timestamp = -1;
	bb->count = 0;
	bb->last_offset_delta = -1;
	bb->track_crc = false;
	bb->records_crc = 0;
	ch_wr_i64(out, base_offset);
	ch_wr_i32(out, 0); /* batchLength, filled by end */
	ch_wr_i32(out, 0); /* partitionLeaderEpoch */
	ch_wr_i8(out, CH_BATCH_MAGIC);
	ch_wr_u32(out, 0); /* crc */
	ch_wr_i16(out, (int16_t)(attributes & ~CH_BATCH_ATTR_COMPRESSION));
	ch_wr_i32(out, 0); /* lastOffsetDelta */
	ch_wr_i64(out, base_timestamp);
	ch_wr_i64(out, -1); /* maxTimestamp */
	ch_wr_i64(out, producer_id);
	ch_wr_i16(out, producer_epoch);
	ch_wr_i32(out, base_sequence);
	ch_wr_i32(out, 0); /* recordsCount */
}

static size_t
varint_size(int64_t v)
{
	return ch_uvarint_size(((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void
ch_batch_builder_add(ch_batch_builder *bb, int32_t offset_delta, int64_t timestamp, ch_bytes key,
		     ch_bytes value, int32_t headers_count, const uint8_t *headers,
		     size_t headers_len)
{
	size_t before = bb->b->len;
	int64_t ts_delta = timestamp - bb->base_timestamp;
	size_t k = key.len > 0 ? (size_t)key.len : 0, v = value.len > 0 ? (size_t)value.len : 0;
	size_t body = 1 + varint_size(ts_delta) + varint_size(offset_delta) +
		      varint_size(key.len < 0 ? -1 : key.len) + k +
		      varint_size(value.len < 0 ? -1 : value.len) + v + varint_size(headers_count) +
		      headers_len;
	ch_wr_varint(bb->b, (int32_t)body);
	ch_wr_i8(bb->b, 0);
	ch_wr_varlong(bb->b, ts_delta);
	ch_wr_varint(bb->b, offset_delta);
	ch_wr_varint(bb->b, key.len < 0 ? -1 : key.len);
	if (k)
		ch_buf_append(bb->b, key.p, k);
	ch_wr_varint(bb->b, value.len < 0 ? -1 : value.len);
	if (v)
		ch_buf_append(bb->b, value.p, v);
	ch_wr_varint(bb->b, headers_count);
	if (headers_len)
		ch_buf_append(bb->b, headers, headers_len);
	if (timestamp > bb->max_timestamp)
		bb->max_timestamp = timestamp;
	bb->count++;
	bb->last_offset_delta = offset_delta;
	if (bb->track_crc && ch_buf_ok(bb->b))
		bb->records_crc =
			ch_crc32c(bb->records_crc, bb->b->data + before, bb->b->len - before);
}

void
ch_batch_builder_track_crc(ch_batch_builder *bb)
{
	/* from the first record on: the running CRC covers all of them */
	if (bb->count == 0)
		bb->track_crc = true;
}

int
ch_batch_builder_end_codec(ch_batch_builder *bb, int32_t last_offset_delta, int codec)
{
	if (!ch_buf_ok(bb->b) || bb->count == 0)
		return CH_ERR;
	if (codec != CH_COMPRESSION_NONE) {
		size_t rec_off = bb->start + CH_BATCH_HDR_SIZE;
		ch_buf z;
		ch_buf_init(&z);
		if (ch_codec_compress(codec, bb->b->data + rec_off, bb->b->len - rec_off, &z) !=
		    CH_OK) {
			ch_buf_free(&z);
			return CH_ERR;
		}
		bb->b->len = rec_off;
		ch_buf_append(bb->b, z.data, z.len);
		ch_buf_free(&z);
		if (!ch_buf_ok(bb->b))
			return CH_ERR;
		uint8_t *a = bb->b->data + bb->start + 21;
		a[1] = (uint8_t)((a[1] & ~CH_BATCH_ATTR_COMPRESSION) | codec);
	}
	uint8_t *p = bb->b->data + bb->start;
	size_t size = bb->b->len - bb->start;
	if (last_offset_delta < 0)
		last_offset_delta = bb->last_offset_delta;
	ch_be_put32(p + 8, (uint32_t)(size - CH_BATCH_LOG_OVERHEAD));
	ch_be_put32(p + 23, (uint32_t)last_offset_delta);
	ch_be_put64(p + 35, (uint64_t)bb->max_timestamp);
	ch_be_put32(p + 57, (uint32_t)bb->count);
	uint32_t crc;
	if (codec == CH_COMPRESSION_NONE && bb->track_crc)
		crc = ch_crc32c_combine(ch_crc32c(0, p + CH_BATCH_CRC_START,
						  CH_BATCH_HDR_SIZE - CH_BATCH_CRC_START),
					bb->records_crc, size - CH_BATCH_HDR_SIZE);
	else
		crc = ch_batch_compute_crc(p, size);
	ch_be_put32(p + 17, crc);
	return CH_OK;
}

int
ch_batch_builder_end(ch_batch_builder *bb, int32_t last_offset_delta)
{
	return ch_batch_builder_end_codec(bb, last_offset_delta, CH_COMPRESSION_NONE);
}

int
ch_batch_recompress(const uint8_t *p, size_t len, int codec, size_t max_inflate, ch_buf *out)
{
	ch_batch_hdr h;
	if (ch_batch_parse_hdr(p, len, 0, &h) != CH_BATCH_OK)
		return CH_ERR;
	size_t size = (size_t)ch_batch_size(&h);
	if (len < size || ch_batch_compute_crc(p, size) != h.crc)
		return CH_ERR;
	if ((h.attributes & ~CH_BATCH_ATTR_KNOWN) != 0 ||
	    ch_batch_compression(&h) > CH_COMPRESSION_ZSTD || h.records_count <= 0 ||
	    h.last_offset_delta < 0 || codec < CH_COMPRESSION_NONE || codec > CH_COMPRESSION_ZSTD)
		return CH_ERR;
	ch_buf scratch;
	ch_buf_init(&scratch);
	const uint8_t *recs;
	size_t recs_len;
	int rc = CH_ERR;
	if (ch_batch_records(p, &h, &scratch, max_inflate, &recs, &recs_len) != CH_OK)
		goto done;
	/* Each record takes at least 7 bytes: cap the count before looping. */
	if ((size_t)h.records_count > recs_len / 7 + 1)
		goto done;
	size_t start = out->len;
	ch_batch_builder bb;
	ch_batch_builder_begin(&bb, out, h.base_offset, h.attributes, h.base_timestamp,
			       h.producer_id, h.producer_epoch, h.base_sequence);
	ch_record_iter it;
	ch_record rec;
	ch_record_iter_init(&it, recs, recs_len, h.records_count);
	int more;
	int32_t n = 0;
	while ((more = ch_record_next(&it, &rec)) == 1) {
		ch_batch_builder_add(&bb, rec.offset_delta, h.base_timestamp + rec.timestamp_delta,
				     rec.key, rec.value, rec.headers_count, rec.headers,
				     rec.headers_len);
		n++;
	}
	if (more < 0 || it.err || n != h.records_count || !ch_buf_ok(out) ||
	    ch_batch_builder_end_codec(&bb, h.last_offset_delta, codec) != CH_OK) {
		out->len = start;
		goto done;
	}
	/* Keep the producer's header fields the records do not determine. */
	uint8_t *q = out->data + start;
	size_t qsize = out->len - start;
	ch_be_put32(q + 12, (uint32_t)h.partition_leader_epoch);
	ch_be_put64(q + 35, (uint64_t)h.max_timestamp);
	ch_be_put32(q + 17, ch_batch_compute_crc(q, qsize));
	rc = CH_OK;
done:
	ch_buf_free(&scratch);
	return rc;
}
