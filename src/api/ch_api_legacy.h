/*
 * ch_api_legacy: the api side of the message formats before record batches
 * (magic 0 and 1, log/ch_legacy.h), which Produce v0-v2 and Fetch v0-v3
 * carry: the topic's settings for the conversion on append, and a log
 * slice down-converted into a response as it is sent.
 */
#ifndef CH_API_LEGACY_H
#define CH_API_LEGACY_H

#include <stdint.h>

#include "api/ch_api.h"
#include "common/ch_buf.h"
#include "log/ch_plog.h"
#include "meta/ch_topics.h"
#include "net/ch_resp.h"

/* A Produce v0-v2 partition's records, converted into one record batch v2
 * in out with topic t's compression.type, message.timestamp.type,
 * cleanup.policy and max.message.bytes. Empty out: nothing to append.
 * @returns 0 or the partition's error code (logged at debug level). */
int16_t ch_api_legacy_up(ch_req *req, const ch_topic *t, const uint8_t *records, size_t len,
			 ch_buf *out);

/* One Fetch v0-v3 partition's down-conversion in progress. */
typedef struct ch_api_down ch_api_down;

/* Starts down-converting the slice to `magic` for a fetch at fetch_offset
 * (ch_legacy_down_init): *sl passes to the conversion (emptied here, also on
 * error). @returns 0 with *out and the records field's size in *size (0:
 * nothing to send, *out NULL), or the partition's error code. */
int16_t ch_api_down_begin(ch_plog_slice *sl, int magic, int64_t fetch_offset, ch_api_down **out,
			  int64_t *size);
/* Adds the conversion to r as a made chunk of *size bytes; r owns it then. */
void ch_api_down_add(ch_resp *r, ch_api_down *d);
/* Frees a conversion never added. */
void ch_api_down_free(ch_api_down *d);

#endif
