/*
 * coord_shell.c: see coord_shell.h.
 *
 * Time: the core works in wall-clock milliseconds (it stores commit
 * timestamps and Kafka's currentStateTimestamp); the loop's timers are
 * monotonic. The shell converts a core deadline to a loop deadline at the
 * moment it arms the timer, so a wall-clock jump shifts at most one wake-up.
 */
#include "cohortd/coord_shell.h"

#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"
#include "common/ch_log.h"
#include "group/ch_group.h"
#include "log/ch_batch.h"
#include "meta/ch_topics.h"

struct coord_shell {
	ch_loop *loop;
	ch_broker *bk;
	ch_parts *parts;
	ch_coord *coord;
	ch_timer timer;
	int64_t armed_for; /* core deadline the timer is armed for (wall ms) */
	ch_hook *hook;
	size_t replayed;
};

typedef struct append_ctx {
	coord_shell *s;
	uint64_t id;
} append_ctx;

static void
append_durable(void *ud, int16_t kerr, int64_t base, int64_t last)
{
	(void)base, (void)last;
	append_ctx *a = ud;
	ch_coord_append_done(a->s->coord, ch_now_wall_ms(), a->id, kerr);
	free(a);
}

static void
op_append(void *ud, int32_t partition, const ch_coord_record *recs, size_t n, uint64_t id)
{
	coord_shell *s = ud;
	ch_buf b;
	ch_buf_init(&b);
	ch_batch_builder bb;
	int64_t now = ch_now_wall_ms();
	/* One uncompressed v2 batch, non-transactional, no producer. */
	ch_batch_builder_begin(&bb, &b, 0, 0, now, -1, -1, -1);
	for (size_t i = 0; i < n; i++) {
		ch_bytes key = {recs[i].key.data, (int32_t)recs[i].key.len};
		ch_bytes val = recs[i].tombstone ? CH_BYTES_NULL
						 : (ch_bytes){recs[i].value.data,
							      (int32_t)recs[i].value.len};
		ch_batch_builder_add(&bb, (int32_t)i, now, key, val, 0, NULL, 0);
	}
	append_ctx *a = ch_xmalloc(sizeof(*a));
	a->s = s;
	a->id = id;
	if (ch_batch_builder_end(&bb, -1) != CH_OK) {
		ch_buf_free(&b);
		free(a);
		abort(); /* out of memory: the broker may abort */
	}
	ch_parts_append_durable(s->parts, CH_CONSUMER_OFFSETS_TOPIC, partition, b.data, b.len,
				append_durable, a);
	ch_buf_free(&b);
}

static int16_t
op_check_partition(void *ud, ch_str topic, int32_t partition)
{
	coord_shell *s = ud;
	return ch_api_group_check_partition(s->bk, topic, partition);
}

static void
timer_fired(ch_loop *loop, ch_timer *t, void *ud)
{
	(void)loop, (void)t;
	coord_shell *s = ud;
	s->armed_for = INT64_MAX;
	ch_coord_tick(s->coord, ch_now_wall_ms());
}

/* Before the loop sleeps: keep the timer at the core's next deadline. */
static bool
rearm(ch_loop *loop, void *ud)
{
	coord_shell *s = ud;
	int64_t d = ch_coord_next_deadline(s->coord);
	if (d == s->armed_for)
		return false;
	s->armed_for = d;
	if (d == INT64_MAX) {
		ch_timer_cancel(loop, &s->timer);
		return false;
	}
	int64_t wait = d - ch_now_wall_ms();
	ch_timer_arm(loop, &s->timer, ch_loop_now(loop) + (wait > 0 ? wait : 0));
	return false;
}

static int
replay_record(void *ud, const ch_batch_hdr *h, const ch_record *rec, int64_t offset, int64_t ts)
{
	(void)offset, (void)ts;
	coord_shell *s = ud;
	if (h->attributes & CH_BATCH_ATTR_CONTROL)
		return 0;
	if (rec->key.len < 0)
		return 0;
	ch_coord_load_record(s->coord, rec->key.p, (size_t)rec->key.len, rec->value.p,
			     rec->value.len < 0 ? 0 : (size_t)rec->value.len, rec->value.len < 0);
	s->replayed++;
	return 0;
}

coord_shell *
coord_shell_start(ch_loop *loop, ch_broker *bk, ch_parts *parts)
{
	const ch_config *cfg = bk->cfg;
	coord_shell *s = ch_xcalloc(1, sizeof(*s));
	s->loop = loop;
	s->bk = bk;
	s->parts = parts;
	s->armed_for = INT64_MAX;

	ch_coord_config cc;
	ch_coord_config_defaults(&cc);
	cc.min_session_timeout_ms = cfg->group_min_session_timeout_ms;
	cc.max_session_timeout_ms = cfg->group_max_session_timeout_ms;
	cc.initial_rebalance_delay_ms = cfg->group_initial_rebalance_delay_ms;
	cc.max_size = cfg->group_max_size;
	cc.offset_metadata_max_bytes = cfg->offset_metadata_max_bytes;
	cc.offsets_retention_ms = (int64_t)cfg->offsets_retention_minutes * 60000;
	cc.offsets_retention_check_ms = cfg->offsets_retention_check_interval_ms;
	/* The partition count of an existing __consumer_offsets wins: the
	 * groups' placement must not move under their stored records. */
	const ch_topic *t = ch_topics_find(bk->topics, CH_CONSUMER_OFFSETS_TOPIC,
					   strlen(CH_CONSUMER_OFFSETS_TOPIC));
	cc.offsets_partitions = t ? t->partitions : cfg->offsets_topic_num_partitions;

	ch_coord_ops ops;
	memset(&ops, 0, sizeof(ops));
	ops.ud = s;
	ops.respond = ch_api_group_respond;
	ops.append = op_append;
	ops.check_partition = op_check_partition;
	s->coord = ch_coord_new(&cc, &ops, ch_now_wall_ms());
	bk->coord = s->coord;

	if (t) {
		int64_t t0 = ch_now_mono_ms();
		for (int32_t p = 0; p < t->partitions; p++) {
			ch_part *part = ch_parts_find(parts, CH_CONSUMER_OFFSETS_TOPIC, p);
			int16_t kerr = 0;
			if (part && ch_part_replay(part, 0, replay_record, s, &kerr) < 0) {
				CH_LOGE("cohortd", "cannot replay __consumer_offsets-%d: error %d", p,
					kerr);
				coord_shell_stop(s);
				bk->coord = NULL;
				return NULL;
			}
		}
		CH_LOGI("cohortd", "replayed %zu coordinator records in %lld ms", s->replayed,
			(long long)(ch_now_mono_ms() - t0));
	}
	ch_coord_load_done(s->coord, ch_now_wall_ms());
	ch_timer_init(&s->timer, timer_fired, s);
	s->hook = ch_loop_add_before_sleep(loop, rearm, s);
	return s;
}

void
coord_shell_stop(coord_shell *s)
{
	if (!s)
		return;
	if (s->hook)
		ch_loop_remove_before_sleep(s->loop, s->hook);
	ch_timer_cancel(s->loop, &s->timer);
	ch_coord_free(s->coord);
	free(s);
}
