/* fuzz_batch.c: libFuzzer target for record-batch validation and record
 * iteration (the bytes a Produce request carries). Built when COHORT_FUZZ. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_buf.h"
#include "common/ch_common.h"
#include "log/ch_batch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void run(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* As is, and with length, magic and CRC made right so the fuzzer gets
	 * past them to the attributes, codecs and records. */
	run(data, size);
	if (size >= CH_BATCH_HDR_SIZE && size < (1u << 20)) {
		uint8_t *b = malloc(size);
		memcpy(b, data, size);
		uint32_t bl = (uint32_t)(size - CH_BATCH_LOG_OVERHEAD);
		b[8] = (uint8_t)(bl >> 24);
		b[9] = (uint8_t)(bl >> 16);
		b[10] = (uint8_t)(bl >> 8);
		b[11] = (uint8_t)bl;
		b[16] = CH_BATCH_MAGIC;
		uint32_t crc = ch_batch_compute_crc(b, size);
		b[17] = (uint8_t)(crc >> 24);
		b[18] = (uint8_t)(crc >> 16);
		b[19] = (uint8_t)(crc >> 8);
		b[20] = (uint8_t)crc;
		run(b, size);
		free(b);
	}
	return 0;
}

static void
run(const uint8_t *data, size_t size)
{
	size_t pos = 0;
	ch_buf scratch;
	ch_buf_init(&scratch);
	while (pos < size) {
		ch_batch_hdr h;
		if (ch_batch_check(data + pos, size - pos, 1 << 20, false, &h) != CH_BATCH_OK)
			break;
		const uint8_t *recs;
		size_t rlen;
		if (ch_batch_records(data + pos, &h, &scratch, 1 << 22, &recs, &rlen) == CH_OK) {
			ch_record_iter it;
			ch_record r;
			ch_record_iter_init(&it, recs, rlen, h.records_count);
			while (ch_record_next(&it, &r) == 1)
				;
		}
		pos += (size_t)ch_batch_size(&h);
	}
	ch_buf_free(&scratch);
}
