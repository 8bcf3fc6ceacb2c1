/*
 * libFuzzer target: the incremental frame reader (net/ch_frame.h) over
 * untrusted bytes cut into arbitrary chunks. The first input byte chooses
 * the chunking; the rest is the byte stream. Every complete frame must have
 * exactly the claimed length, and the reader must stop at the first bad
 * size prefix without reading past what it was given.
 */
#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"
#include "net/ch_frame.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned chunk = (data[0] & 0x3f) + 1;
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	ch_framer f;
	ch_framer_init(&f, 1 << 16);
	size_t off = 0;
	while (off < n) {
		size_t want = CH_MIN((size_t)chunk, n - off);
		size_t used = 0;
		int rc = ch_framer_feed(&f, p + off, want, &used);
		if (used > want)
			abort();
		off += used;
		if (rc == CH_ERR)
			break;
		if (rc == CH_OK) {
			size_t len = 0;
			uint8_t *frame = ch_framer_take(&f, &len);
			if (!frame || len == 0 || len > (1 << 16))
				abort();
			free(frame);
		} else if (used != want) {
			abort(); /* CH_AGAIN must consume everything it was given */
		}
	}
	ch_framer_free(&f);
	return 0;
}
