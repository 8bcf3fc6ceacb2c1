/*
 * ch_ratelog: an error that can repeat for every request (a full disk
 * refuses every append, a broken partition every open) logged without
 * flooding the log: the first failure of a streak in full, by the caller;
 * the later ones counted and summarised at most once per interval; one
 * line when the operation works again. One limiter per failing thing (a
 * partition's appends, its reads, its open), so that one partition working
 * again does not hide another that still fails.
 *
 *   if (ch_ratelog_fail(&rl, now, strerror(e)))
 *           CH_LOGE("log", "%s: append at offset %lld failed: %s", ...);
 *   ch_ratelog_ok(&rl, now);    after a success (logs only after failures)
 *   ch_ratelog_tick(&rl, now);  now and then: a summary that is due
 *
 * Lines it writes itself ("what" is the phrase given to init):
 *   <what>: 1499 more failures in the last 10.0 s (No space left on device)
 *   <what>: working again after 1500 failures in 12.3 s
 *
 * Times are the caller's milliseconds (any clock, the same for every call).
 * Not thread-safe: one thread at a time per limiter.
 */
#ifndef CH_RATELOG_H
#define CH_RATELOG_H

#include <stdbool.h>
#include <stdint.h>

#include "common/ch_log.h"

#define CH_RATELOG_INTERVAL_MS 10000

typedef struct ch_ratelog {
	char what[160];       /* "appends to data/t-0": the subject of its lines */
	const char *sub;      /* log subsystem (a string literal) */
	ch_log_level level;   /* of the summaries (the recovery line is INFO) */
	uint64_t streak;      /* failures since the last success; 0 = working */
	uint64_t unlogged;    /* failures in no line yet */
	int64_t streak_start; /* when the streak began */
	int64_t last_line;    /* when this streak was last logged */
	char cause[128];      /* of the latest failure */
} ch_ratelog;

void ch_ratelog_init(ch_ratelog *rl, const char *sub, ch_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* One failure. true: the first of a streak, the caller logs it in full;
 * false: counted (and summarised if the interval since the last line has
 * passed). */
bool ch_ratelog_fail(ch_ratelog *rl, int64_t now_ms, const char *cause);
/* The operation worked: after a streak, one INFO line with its total. */
void ch_ratelog_ok(ch_ratelog *rl, int64_t now_ms);
/* Writes the summary of a streak whose interval has passed. */
void ch_ratelog_tick(ch_ratelog *rl, int64_t now_ms);
/* Failures since the last success (0: working). */
static inline uint64_t
ch_ratelog_streak(const ch_ratelog *rl)
{
	return rl->streak;
}

#endif
