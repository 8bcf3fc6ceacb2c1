/*
 * cli_health.c: `cohort groups health G`: Burrow's consumer lag evaluation
 * rules over samples of the group taken during --window, every
 * --interval. Each sample reads, as describe does, the committed offset,
 * the lag and the owner of every partition the group owns or committed.
 * Per partition, over its samples with a commit, in Burrow's order:
 *
 *   1. lag 0 now or in any sample                       OK
 *   2. the committed offset moved back between samples   REWIND
 *   3. the committed offset last changed longer ago than the window's
 *      start was before that change (Burrow's "stopped" timing, the
 *      first sample counting as a commit): stuck, and
 *        a member owns the partition (alive, not progressing)  STALL
 *        nobody owns it (nobody is there to commit)            STOP
 *   4. commits advance but the lag never went down        WARN
 *   5. otherwise                                          OK
 *
 * Burrow reads every commit from __consumer_offsets, with its time; a
 * sample sees only that the offset changed, so a member re-committing the
 * same offset (Java's auto-commit) and one not committing at all
 * (librdkafka's) look the same here: STALL while it owns the partition.
 * The group's status is its worst partition's (Burrow's order: OK < WARN
 * < STOP < STALL < REWIND).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

static const cli_opt opts[] = {
	{"window", "SPAN", "how long to sample: 500ms, 30s, 5m, 1h or PnDTnHnMnS (default 5m)",
	 false},
	{"interval", "SPAN", "time between samples (default a tenth of the window)", false},
	{NULL, NULL, NULL, false},
};

/* Partition statuses, in Burrow's order of severity. */
typedef enum {
	ST_OK,
	ST_WARN,
	ST_STOP,
	ST_STALL,
	ST_REWIND
} health;
static const char *const health_names[] = {"OK", "WARN", "STOP", "STALL", "REWIND"};

/* One partition at one sample. */
typedef struct sample {
	int64_t t_ms;      /* when it was read (ms since the start) */
	int64_t committed; /* -1: none */
	int64_t lag;       /* -1: nothing committed */
	bool owned;
} sample;

/* One partition's samples. */
typedef struct part_hist {
	char *topic;
	int32_t partition;
	char *owner; /* member id at the last sample, NULL: nobody */
	sample *s;
	size_t n, cap;
} part_hist;

typedef struct history {
	part_hist *p;
	size_t n, cap;
} history;

static int64_t
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The history of (topic, partition), added when missing; NULL on OOM. */
static part_hist *
hist_get(history *h, const char *topic, int32_t partition)
{
	for (size_t i = 0; i < h->n; i++)
		if (h->p[i].partition == partition && strcmp(h->p[i].topic, topic) == 0)
			return &h->p[i];
	char *t = strdup(topic);
	if (!t || !cli_grow(&h->p, &h->cap, h->n, sizeof(*h->p))) {
		free(t);
		return NULL;
	}
	h->p[h->n] = (part_hist){.topic = t, .partition = partition};
	return &h->p[h->n++];
}

static void
history_free(history *h)
{
	for (size_t i = 0; i < h->n; i++) {
		free(h->p[i].topic);
		free(h->p[i].owner);
		free(h->p[i].s);
	}
	free(h->p);
}

/* One sample of every partition of the group into h at t_ms. CLI_OK, or a
 * printed failure (a group that does not exist at the first sample:
 * CLI_ENOTFOUND). */
static int
take_sample(cohort_admin *ad, const char *group, history *h, int64_t t_ms, bool first)
{
	const char *one[1] = {group};
	cohort_group_descriptions *d = NULL;
	cohort_err e = cohort_admin_describe_consumer_groups(ad, one, 1, -1, &d);
	const cohort_group_description *g = d && d->groups_n ? &d->groups[0] : NULL;
	if (!g || g->err)
		e = g ? g->err : e;
	cli_rows rs = {0};
	cohort_group_offsets_list *committed = NULL;
	if (!e)
		e = cli_read_offsets(ad, g, &rs, &committed);
	int rc = CLI_OK;
	if (e)
		rc = cli_fail(cli_status(e), "groups health: group '%s': %s", group,
			      cohort_err_str(e));
	else if (first && strcmp(g->state, "Dead") == 0 && rs.n == 0)
		rc = cli_fail(CLI_ENOTFOUND, "groups health: Consumer group '%s' does not exist.",
			      group);
	for (size_t i = 0; !rc && i < rs.n; i++) {
		const cli_part_row *r = &rs.r[i];
		part_hist *ph = hist_get(h, r->topic, r->partition);
		char *owner = r->owner ? strdup(r->owner->member_id) : NULL;
		if (!ph || (r->owner && !owner) ||
		    !cli_grow(&ph->s, &ph->cap, ph->n, sizeof(*ph->s))) {
			free(owner);
			rc = cli_fail(CLI_EFAIL, "out of memory");
			break;
		}
		free(ph->owner);
		ph->owner = owner;
		ph->s[ph->n++] = (sample){t_ms, r->committed, cli_lag(r), r->owner != NULL};
	}
	free(rs.r);
	cohort_group_offsets_list_free(committed);
	cohort_group_descriptions_free(d);
	return rc;
}

/* Burrow's rules (the file's comment) over one partition's samples. */
static health
evaluate(const part_hist *ph)
{
	size_t first = 0;
	while (first < ph->n && ph->s[first].committed < 0)
		first++;
	const sample *s = ph->s + first;
	size_t n = ph->n - first;
	if (n < 2 || s[n - 1].lag <= 0) /* nothing to judge, or no lag now */
		return ST_OK;
	for (size_t i = 0; i < n; i++)
		if (s[i].lag == 0)
			return ST_OK;
	for (size_t i = 1; i < n; i++)
		if (s[i].committed < s[i - 1].committed)
			return ST_REWIND;
	int64_t t_first = s[0].t_ms, t_last = s[0].t_ms, now = s[n - 1].t_ms;
	for (size_t i = 1; i < n; i++)
		if (s[i].committed != s[i - 1].committed)
			t_last = s[i].t_ms;
	if (now - t_last > t_last - t_first)
		return s[n - 1].owned ? ST_STALL : ST_STOP;
	for (size_t i = 1; i < n; i++)
		if (s[i].lag < s[i - 1].lag)
			return ST_OK;
	return ST_WARN;
}

static int
hist_cmp(const void *x, const void *y)
{
	const part_hist *a = x, *b = y;
	int c = strcmp(a->topic, b->topic);
	return c ? c : (a->partition > b->partition) - (a->partition < b->partition);
}

/* The first and last samples with a commit (NULL when none). */
static void
ends_of(const part_hist *ph, const sample **a, const sample **b)
{
	*a = *b = NULL;
	for (size_t i = 0; i < ph->n; i++)
		if (ph->s[i].committed >= 0) {
			if (!*a)
				*a = &ph->s[i];
			*b = &ph->s[i];
		}
}

static json_t *
sample_json(const sample *s)
{
	if (!s)
		return json_null();
	return json_pack("{s:I,s:I,s:I}", "offset", (json_int_t)s->committed, "lag",
			 (json_int_t)s->lag, "at_ms", (json_int_t)s->t_ms);
}

/* Print the evaluation; returns the group's status. */
static health
report(const cli_args *a, history *h, int64_t window_ms, int64_t interval_ms, size_t samples)
{
	const char *group = a->pos[0];
	qsort(h->p, h->n, sizeof(*h->p), hist_cmp);
	health worst = ST_OK;
	size_t count[5] = {0};
	int64_t total = 0;
	static const char *const hdr[] = {"GROUP",     "TOPIC",        "PARTITION",
					  "STATUS",    "FIRST-COMMIT", "LAST-COMMIT",
					  "FIRST-LAG", "LAST-LAG",     "CONSUMER-ID"};
	cli_table *t = a->json ? NULL : cli_table_new(hdr, 9);
	json_t *arr = a->json ? json_array() : NULL;
	for (size_t i = 0; i < h->n; i++) {
		const part_hist *ph = &h->p[i];
		health st = evaluate(ph);
		count[st]++;
		if (st > worst)
			worst = st;
		const sample *f, *l;
		ends_of(ph, &f, &l);
		if (l && l->lag > 0)
			total += l->lag;
		if (arr) {
			json_t *o = json_pack("{s:s,s:i,s:s,s:i}", "topic", ph->topic, "partition",
					      ph->partition, "status", health_names[st], "samples",
					      (int)ph->n);
			json_object_set_new(o, "first", sample_json(f));
			json_object_set_new(o, "last", sample_json(l));
			json_object_set_new(o, "consumer_id",
					    ph->owner ? json_string(ph->owner) : json_null());
			json_array_append_new(arr, o);
			continue;
		}
		char p[16], fo[24], lo[24], fl[24], ll[24];
		snprintf(p, sizeof(p), "%d", ph->partition);
		snprintf(fo, sizeof(fo), "%lld", f ? (long long)f->committed : -1LL);
		snprintf(lo, sizeof(lo), "%lld", l ? (long long)l->committed : -1LL);
		snprintf(fl, sizeof(fl), "%lld", f ? (long long)f->lag : -1LL);
		snprintf(ll, sizeof(ll), "%lld", l ? (long long)l->lag : -1LL);
		cli_table_add(t, (const char *const[]){group, ph->topic, p, health_names[st],
						       f ? fo : NULL, l ? lo : NULL, f ? fl : NULL,
						       l ? ll : NULL, ph->owner});
	}
	if (arr) {
		json_t *o = json_pack("{s:s,s:s,s:I,s:I,s:i,s:I}", "group", group, "status",
				      health_names[worst], "window_ms", (json_int_t)window_ms,
				      "interval_ms", (json_int_t)interval_ms, "samples",
				      (int)samples, "total_lag", (json_int_t)total);
		json_object_set_new(o, "partitions", arr);
		cli_json_print(o);
		return worst;
	}
	printf("\n");
	cli_table_print(t, stdout);
	cli_table_free(t);
	printf("\n%s: %s over %.1fs (%zu samples, every %.1fs): %zu partition%s", group,
	       health_names[worst], (double)window_ms / 1000, samples, (double)interval_ms / 1000,
	       h->n, h->n == 1 ? "" : "s");
	for (int st = 0; st < 5; st++)
		if (count[st])
			printf(", %zu %s", count[st], health_names[st]);
	printf("; total lag %lld\n", (long long)total);
	return worst;
}

static int
run(cli_args *a)
{
	const char *w = cli_opt_get(a, "window"), *iv = cli_opt_get(a, "interval");
	int64_t window = w ? cli_parse_span(w) : 300000;
	if (window < 0 || (w && window < 1))
		return cli_fail(CLI_EUSAGE,
				"--window: expected a duration (500ms, 30s, 5m, 1h, "
				"PnDTnHnMnS), got '%s'",
				w);
	int64_t interval = iv ? cli_parse_span(iv) : window / 10;
	if (iv && (interval < 1 || interval > window))
		return cli_fail(
			CLI_EUSAGE,
			"--interval: expected a duration from 1ms up to the window, got '%s'", iv);
	if (interval < 1)
		interval = 1;
	cli_catch_stop_signals();
	history h = {0};
	int64_t t0 = now_ms(), last = 0;
	size_t samples = 0;
	int rc = CLI_OK;
	for (int64_t k = 0; !rc; k++) {
		last = now_ms() - t0;
		if ((rc = take_sample(a->admin, a->pos[0], &h, last, k == 0)) != CLI_OK)
			break;
		samples++;
		if (last >= window || cli_stop_requested)
			break;
		cli_progress(true, "groups health: %zu sample%s, %.0fs left", samples,
			     samples == 1 ? "" : "s", (double)(window - last) / 1000);
		/* the next sample at t0 + (k + 1) * interval, the last at the window's end */
		int64_t next = (k + 1) * interval < window ? (k + 1) * interval : window;
		while (!cli_stop_requested && now_ms() - t0 < next)
			usleep(10000);
	}
	cli_progress_end();
	if (!rc) {
		health st = report(a, &h, last, interval, samples);
		rc = st == ST_OK ? CLI_OK : st == ST_WARN ? CLI_EWARN : CLI_EUNHEALTHY;
	}
	history_free(&h);
	return rc;
}

const cli_command cli_groups_health_cmd = {
	"groups health",
	"GROUP",
	"Burrow's evaluation of a group over a window: OK, WARN, STALL, STOP or REWIND per "
	"partition",
	opts,
	1,
	1,
	run,
	true};
