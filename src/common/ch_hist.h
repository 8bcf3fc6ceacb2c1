/*
 * ch_hist: a latency histogram with fixed bucket bounds, for /metrics
 * (Prometheus histograms: cumulative buckets, a count and a sum, in
 * seconds). Observations are plain increments: a histogram belongs to one
 * thread (all of cohortd's are the loop thread's: the fsync workers hand
 * their durations back with their completions). The bounds are one table
 * for every histogram, so dashboards can compare them: 50 us to 30 s.
 */
#ifndef CH_HIST_H
#define CH_HIST_H

#include <stddef.h>
#include <stdint.h>

#include "common/ch_buf.h"

#define CH_HIST_NB 18 /* finite bounds; one more bucket for +Inf */

/* The upper bounds in microseconds, ascending. */
extern const uint64_t ch_hist_bounds_us[CH_HIST_NB];

typedef struct ch_hist {
	uint64_t bucket[CH_HIST_NB + 1]; /* not cumulative; the last is +Inf */
	uint64_t count;
	uint64_t sum_us;
} ch_hist;

/* Record one observation of us microseconds. */
void ch_hist_observe(ch_hist *h, uint64_t us);

/*
 * Appends h as Prometheus text: NAME_bucket{LABELS,le="..."} lines
 * (cumulative), NAME_sum (seconds) and NAME_count. labels is "" or
 * 'k="v",...' (already escaped) without braces. The # HELP/# TYPE lines are
 * the caller's (once per family).
 */
void ch_hist_render(ch_buf *b, const char *name, const char *labels, const ch_hist *h);

#endif
