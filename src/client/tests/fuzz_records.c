/* fuzz_records.c: libFuzzer target for libcohort's decoding of a Fetch
 * partition's Records field (cl_records_decode: batches, codecs, records,
 * headers), which a broker controls. The input is decoded as is, and with
 * the first batch's length, magic and CRC made right so the fuzzer gets
 * past them. Every record handed out must lie inside the chunk's memory.
 * Built when COHORT_FUZZ. */
#include <stdlib.h>
#include <string.h>

#include "client/cl_int.h"
#include "common/ch_endian.h"
#include "log/ch_batch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_inside(const cl_chunk *ch, const void *p, int32_t len)
{
	if (!p || len <= 0)
		return;
	const uint8_t *b = ch->data.data, *q = p;
	if (q < b || q + len > b + ch->data.len)
		abort();
}

static void
run(const uint8_t *data, size_t size)
{
	cl_tp tp = {.topic = "t", .partition = 0};
	int64_t next;
	cohort_err err;
	int64_t from = size > 0 ? data[0] % 8 : 0;
	cl_chunk *ch = cl_records_decode(&tp, true, from, data, size, &next, &err);
	if (!ch)
		return;
	for (int32_t i = 0; i < ch->n; i++) {
		const cohort_record *r = &ch->recs[i];
		if (r->offset < from)
			abort();
		check_inside(ch, r->key, r->key_len);
		check_inside(ch, r->value, r->value_len);
		for (int32_t k = 0; k < r->headers_n; k++) {
			check_inside(ch, r->headers[k].key, 1);
			check_inside(ch, r->headers[k].value, r->headers[k].value_len);
		}
	}
	cl_chunk_free(ch);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	run(data, size);
	if (size >= CH_BATCH_HDR_SIZE && size < (1u << 20)) {
		uint8_t *b = malloc(size);
		memcpy(b, data, size);
		ch_be_put32(b + 8, (uint32_t)(size - CH_BATCH_LOG_OVERHEAD));
		b[16] = CH_BATCH_MAGIC;
		ch_be_put32(b + 17, ch_batch_compute_crc(b, size));
		run(b, size);
		free(b);
	}
	return 0;
}
