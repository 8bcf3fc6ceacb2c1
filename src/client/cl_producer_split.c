/*
 * cl_producer_split.c: a record batch the broker refused as too large
 * (MESSAGE_TOO_LARGE) cut into smaller ones (cl_producer.h). Pure: the
 * caller begins each piece's builder, this adds the records to it.
 */
#include "client/cl_producer.h"

#include "common/ch_common.h"
#include "log/ch_batch.h"

int32_t
cl_batch_split(const uint8_t *batch, size_t len, size_t limit, size_t max_inflate,
	       cl_split_piece_fn piece, void *ud)
{
	ch_batch_hdr h;
	if (ch_batch_parse_hdr(batch, len, 0, &h) != CH_BATCH_OK ||
	    (size_t)ch_batch_size(&h) > len || h.records_count < 2)
		return -1;
	ch_buf scratch;
	ch_buf_init(&scratch);
	const uint8_t *recs;
	size_t recs_len;
	int32_t pieces = -1;
	if (ch_batch_records(batch, &h, &scratch, max_inflate, &recs, &recs_len) != CH_OK)
		goto out;
	ch_record_iter it;
	ch_record_iter_init(&it, recs, recs_len, h.records_count);
	ch_record rec;
	ch_batch_builder *bb = NULL;
	size_t size = 0; /* the open piece's bytes: header and records as they were */
	int32_t i = 0, np = 0;
	const uint8_t *at = recs;
	int rc;
	while ((rc = ch_record_next(&it, &rec)) == 1) {
		size_t rlen = (size_t)(it.rd.p - at);
		at = it.rd.p;
		/* a new piece when this record would take the open one past the
		 * limit, and always before the last record if the first piece
		 * would otherwise hold them all (a compressed batch whose
		 * records take less room than it did): at least two pieces */
		bool close = bb && (size + rlen > limit || (np == 1 && i == h.records_count - 1));
		int64_t ts = h.base_timestamp + rec.timestamp_delta;
		if (!bb || close) {
			if (!(bb = piece(ud, i, ts)))
				goto out;
			np++;
			size = CH_BATCH_HDR_SIZE;
		}
		ch_batch_builder_add(bb, bb->count, ts, rec.key, rec.value, rec.headers_count,
				     rec.headers, rec.headers_len);
		if (!ch_buf_ok(bb->b))
			goto out;
		size += rlen;
		i++;
	}
	if (rc == 0 && !it.err && i == h.records_count)
		pieces = np;
out:
	ch_buf_free(&scratch);
	return pieces;
}

int32_t
cl_split_seq(int32_t base_seq, int32_t first)
{
	return base_seq < 0 ? -1 : (int32_t)(((int64_t)base_seq + first) & INT32_MAX);
}
