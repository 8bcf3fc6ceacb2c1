/* fuzz_records.c: libFuzzer target for libcohort's decoding of a Fetch
 * partition's Records field (cl_records_decode: batches, codecs, records,
 * headers), which a broker controls. The input is decoded as is, and with
 * the first batch's length, magic and CRC made right so the fuzzer gets
 * past them, each under read_uncommitted and under read_committed (a few
 * aborted transactions taken from the input). Every record handed out must
 * lie inside the chunk's memory.
 * Built when COHORT_FUZZ. */
#include <stdbool.h>
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
run(const uint8_t *data, size_t size, bool read_committed)
{
	cl_tp tp = {.topic = "t", .partition = 0};
	int64_t next;
	cohort_err err;
	int64_t from = size > 0 ? data[0] % 8 : 0;
	/* aborted transactions from the input's second and third bytes: producer ids 0-3
	 * (fuzzed batches' ids are mostly small) and first offsets 0-15 */
	ch_FetchResponse_AbortedTransaction ab[4];
	int32_t nab = 0;
	for (size_t i = 1; i < 3 && i < size; i++) {
		ab[nab++] = (ch_FetchResponse_AbortedTransaction){data[i] & 3, data[i] >> 4};
		ab[nab++] = (ch_FetchResponse_AbortedTransaction){(data[i] >> 2) & 3, data[i] & 15};
	}
	cl_decode_opts o = {true, read_committed, ab, nab};
	cl_chunk *ch = cl_records_decode(&tp, &o, from, data, size, &next, &err);
	if (!ch)
		return;
	if (ch->next_offset != next)
		abort();
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
	run(data, size, false);
	run(data, size, true);
	if (size >= CH_BATCH_HDR_SIZE && size < (1u << 20)) {
		uint8_t *b = malloc(size);
		memcpy(b, data, size);
		ch_be_put32(b + 8, (uint32_t)(size - CH_BATCH_LOG_OVERHEAD));
		b[16] = CH_BATCH_MAGIC;
		ch_be_put32(b + 17, ch_batch_compute_crc(b, size));
		run(b, size, false);
		run(b, size, true);
		free(b);
	}
	return 0;
}
