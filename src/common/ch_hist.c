/*
 * ch_hist: fixed-bucket latency histograms (see ch_hist.h).
 */
#include "common/ch_hist.h"

const uint64_t ch_hist_bounds_us[CH_HIST_NB] = {
	50,    100,    250,    500,    1000,    2500,    5000,    10000,    25000,
	50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 30000000,
};

/* The bucket of us: the first bound >= us, or the +Inf bucket. */
static size_t
bucket_of(uint64_t us)
{
	size_t i = 0;
	while (i < CH_HIST_NB && us > ch_hist_bounds_us[i])
		i++;
	return i;
}

void
ch_hist_observe(ch_hist *h, uint64_t us)
{
	h->bucket[bucket_of(us)]++;
	h->count++;
	h->sum_us += us;
}

void
ch_hist_render(ch_buf *b, const char *name, const char *labels, const ch_hist *h)
{
	const char *sep = labels && *labels ? "," : "";
	labels = labels ? labels : "";
	uint64_t cum = 0;
	for (size_t i = 0; i < CH_HIST_NB; i++) {
		cum += h->bucket[i];
		ch_buf_printf(b, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, sep,
			      (double)ch_hist_bounds_us[i] / 1e6, (unsigned long long)cum);
	}
	cum += h->bucket[CH_HIST_NB];
	ch_buf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, sep,
		      (unsigned long long)cum);
	const char *lb = *labels ? "{" : "", *le = *labels ? "}" : "";
	ch_buf_printf(b, "%s_sum%s%s%s %.6f\n", name, lb, labels, le, (double)h->sum_us / 1e6);
	ch_buf_printf(b, "%s_count%s%s%s %llu\n", name, lb, labels, le, (unsigned long long)cum);
}
