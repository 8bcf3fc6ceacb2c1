/*
 * ch_api_legacy.c: topic settings for Produce v0-v2's conversion and the
 * made chunk that sends a down-converted slice for Fetch v0-v3. See
 * ch_api_legacy.h and log/ch_legacy.h.
 */
#include "api/ch_api_legacy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/ch_api.h"
#include "broker/ch_broker.h"
#include "common/ch_common.h"
#include "common/ch_log.h"
#include "config/ch_config.h"
#include "log/ch_legacy.h"
#include "proto/generated/ch_errors.h"

int16_t
ch_api_legacy_up(ch_req *req, const ch_topic *t, const uint8_t *records, size_t len, ch_buf *out)
{
	ch_topic_config tc;
	ch_topic_config_resolve(req->bk->cfg, t->configs, t->n_configs, &tc);
	ch_legacy_up_cfg c = {
		.codec = tc.compression_type,
		.log_append_time = tc.message_timestamp_type == CH_TIMESTAMP_LOG_APPEND_TIME,
		.compacted = (tc.cleanup_policy & CH_CLEANUP_COMPACT) != 0,
		.max_message_bytes = tc.max_message_bytes,
	};
	ch_legacy_up_res res;
	int16_t kerr = ch_legacy_up(records, len, &c, out, &res);
	if (kerr)
		CH_LOGD("api", "%s: produce v%d to %s: %s", req->peer, req->version, t->name,
			res.why ? res.why : ch_kerr_message(kerr));
	return kerr;
}

struct ch_api_down {
	ch_plog_slice sl;
	ch_legacy_down d;
};

/* Reads the slice's bytes at pos (a segment held by the slice). */
static int
slice_read(void *ud, int64_t pos, void *dst, size_t n)
{
	ch_api_down *a = ud;
	uint8_t *p = dst;
	off_t off = (off_t)(a->sl.pos + pos);
	while (n > 0) {
		ssize_t k = pread(a->sl.fd, p, n, off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			CH_LOGE("api", "down-conversion: reading a log segment: %s",
				k < 0 ? strerror(errno) : "file shorter than expected");
			return CH_ERR;
		}
		p += k;
		n -= (size_t)k;
		off += k;
	}
	return CH_OK;
}

void
ch_api_down_free(ch_api_down *a)
{
	if (!a)
		return;
	ch_legacy_down_free(&a->d);
	ch_plog_slice_release(&a->sl);
	free(a);
}

int16_t
ch_api_down_begin(ch_plog_slice *sl, int magic, int64_t fetch_offset, ch_api_down **out,
		  int64_t *size)
{
	*out = NULL;
	*size = 0;
	ch_api_down *a = ch_xcalloc(1, sizeof(*a));
	a->sl = *sl;
	memset(sl, 0, sizeof(*sl));
	int16_t kerr = ch_legacy_down_init(&a->d, magic, fetch_offset, a->sl.len, slice_read, a);
	if (kerr || a->d.size == 0) {
		ch_api_down_free(a);
		return kerr;
	}
	*out = a;
	*size = a->d.size;
	return 0;
}

static int
down_make(void *ud, ch_buf *out, size_t max)
{
	ch_api_down *a = ud;
	return ch_legacy_down_fill(&a->d, out, max);
}

static void
down_release(void *ud)
{
	ch_api_down_free(ud);
}

void
ch_api_down_add(ch_resp *r, ch_api_down *a)
{
	ch_resp_add_made(r, (size_t)a->d.size, down_make, down_release, a);
}
