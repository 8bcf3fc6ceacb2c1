/*
 * ch_coord_cg_regex.c: the members' SubscribedTopicRegex (KIP-848), as
 * Kafka 4.4's GroupMetadataManager.maybeUpdateRegularExpressions,
 * TopicRegexResolver and handleRegularExpressionsResult do it:
 *
 *   - a regex new to the group (no member subscribes to it) is compiled
 *     first: INVALID_REGULAR_EXPRESSION if RE2J would refuse it; one a
 *     member already uses is not checked again;
 *   - each distinct regex of a group is resolved once for the whole group
 *     (every topic name, whole-name match), filtered by what the member
 *     whose heartbeat triggered it may DESCRIBE;
 *   - resolved again only when one is not resolved yet, topics came or
 *     went since (Kafka: new topics in the metadata image), or
 *     group.consumer.regex.refresh.interval.ms passed; never within
 *     regex_min_refresh_ms (Kafka's 10 s) of the last resolution;
 *   - a changed resolution bumps the group epoch; a member that takes up
 *     a regex already resolved bumps it too; the last member to drop one
 *     removes it (its record's tombstone).
 * Kafka resolves on an executor and applies the result in a later write;
 * here it is done inside the heartbeat (the core is one thread and the
 * work is bounded by the interval above).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/ch_coord_cg_int.h"
#include "proto/generated/ch_errors.h"
#include "regex/ch_regex.h"

static bool
is_regex(const char *s)
{
	return s && *s; /* Kafka's isNotEmpty: "" is no regex */
}

static cg_regex *
regex_get(const cg_group *g, const char *pattern)
{
	return ch_map_get(&g->regexes, pattern, strlen(pattern));
}

static void
topics_free(char **t, int32_t n)
{
	for (int32_t i = 0; i < n; i++)
		free(t[i]);
	free(t);
}

static void
regex_drop(cg_group *g, cg_regex *r)
{
	ch_map_remove(&g->regexes, r->pattern, strlen(r->pattern));
	topics_free(r->topics, r->ntopics);
	free(r);
	g->store_scan = true; /* its record's tombstone */
	g->meta_stale = true; /* its topics may leave the subscription */
}

void
ch_coord_cg_regex_free_all(cg_group *g)
{
	ch_map_foreach (&g->regexes, e) {
		cg_regex *r = e->value;
		topics_free(r->topics, r->ntopics);
		free(r);
	}
	ch_map_free(&g->regexes);
}

int16_t
ch_coord_cg_regex_check(const cg_group *g, ch_str regex, char *msg, size_t cap)
{
	if (regex.len <= 0)
		return 0;
	if (g) {
		const cg_regex *r = ch_map_get(&g->regexes, regex.p, (size_t)regex.len);
		if (r && r->members > 0)
			return 0;
	}
	char why[128];
	ch_regex *re = ch_regex_compile(regex.p, (size_t)regex.len, why, sizeof why);
	if (re) {
		ch_regex_free(re);
		return 0;
	}
	snprintf(msg, cap, "SubscribedTopicRegex `%.*s` is not a valid regular expression: %s.",
		 (int)regex.len, regex.p, why);
	return CH_KERR_INVALID_REGULAR_EXPRESSION;
}

bool
ch_coord_cg_regex_member_update(cg_group *g, cg_member *m, const char *old)
{
	const char *now = m->regex;
	if ((!is_regex(old) && !is_regex(now)) || (old && now && strcmp(old, now) == 0))
		return false;
	ch_coord_cg_log(g->cg, CH_LOG_DEBUG,
			"[GroupId %s] Member %s updated its subscribed regex to: %s.", g->id, m->id,
			now ? now : "null");
	if (is_regex(old)) {
		cg_regex *r = regex_get(g, old);
		if (r && r->members > 0 && --r->members == 0)
			regex_drop(g, r);
	}
	if (!is_regex(now))
		return false;
	cg_regex *r = regex_get(g, now);
	if (!r) {
		r = ch_xcalloc(1, sizeof *r);
		ch_map_entry *e = ch_map_put(&g->regexes, now, strlen(now), r);
		r->pattern = e->key;
	}
	r->members++;
	return r->members > 1 && r->resolved; /* a new one is resolved at the refresh */
}

void
ch_coord_cg_regex_release(cg_group *g, const cg_member *m)
{
	if (!is_regex(m->regex))
		return;
	cg_regex *r = regex_get(g, m->regex);
	if (r && r->members > 0 && --r->members == 0)
		regex_drop(g, r);
}

const char *const *
ch_coord_cg_regex_topics(const cg_group *g, const cg_member *m, int32_t *n)
{
	*n = 0;
	if (!is_regex(m->regex))
		return NULL;
	const cg_regex *r = regex_get(g, m->regex);
	if (!r || !r->resolved)
		return NULL;
	*n = r->ntopics;
	return (const char *const *)r->topics;
}

void
ch_coord_cg_regex_loaded(cg_group *g)
{
	ch_map_foreach (&g->regexes, e)
		((cg_regex *)e->value)->members = 0;
	ch_map_foreach (&g->members, e) {
		const cg_member *m = e->value;
		if (!is_regex(m->regex))
			continue;
		cg_regex *r = regex_get(g, m->regex);
		if (!r) { /* a member's regex without its record: resolved at the next refresh */
			r = ch_xcalloc(1, sizeof *r);
			ch_map_entry *x = ch_map_put(&g->regexes, m->regex, strlen(m->regex), r);
			r->pattern = x->key;
		}
		r->members++;
	}
	ch_map_foreach_safe(&g->regexes, e, tmp)
	{
		cg_regex *r = e->value;
		if (r->members == 0)
			regex_drop(g, r);
		else
			r->version = -1; /* the change count restarted with the process */
	}
}

static int
cstr_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void
ch_coord_cg_regex_replay(cg_group *g, ch_str regex, const ch_str *topics, int32_t n, int64_t ts)
{
	cg_regex *r = ch_map_get(&g->regexes, regex.p, (size_t)regex.len);
	if (!topics) {
		if (r)
			regex_drop(g, r);
		return;
	}
	if (!r) {
		r = ch_xcalloc(1, sizeof *r);
		ch_map_entry *e = ch_map_put(&g->regexes, regex.p, (size_t)regex.len, r);
		r->pattern = e->key;
	}
	topics_free(r->topics, r->ntopics);
	r->topics = ch_xmalloc((size_t)(n ? n : 1) * sizeof *r->topics);
	r->ntopics = 0;
	for (int32_t i = 0; i < n; i++)
		r->topics[r->ntopics++] = ch_coord_cg_dup_str(topics[i]);
	if (r->ntopics > 1) /* Kafka writes them sorted; any order is read */
		qsort(r->topics, (size_t)r->ntopics, sizeof *r->topics, cstr_cmp);
	r->resolved = true;
	r->ts = ts;
	/* Kafka's lastResolvedRegularExpressionRefreshTimeMs: the latest */
	if (g->regex_never || ts > g->regex_ts)
		g->regex_ts = ts;
	g->regex_never = false;
}

/* ---- resolution (TopicRegexResolver) ----------------------------------------- */

typedef struct resolving {
	cg_group *g;
	void *token;
	size_t n;
	cg_regex **rs;
	ch_regex **res; /* compiled; NULL: does not compile (logged, matches nothing) */
	char ***found;  /* per regex: matched names */
	int32_t *nfound, *capfound;
	size_t scanned;
} resolving;

static void
match_topic(void *arg, const char *name, size_t len)
{
	resolving *z = arg;
	z->scanned++;
	int allowed = -1; /* asked once per topic, only if something matched */
	for (size_t i = 0; i < z->n; i++) {
		if (!z->res[i] || !ch_regex_full_match(z->res[i], name, len))
			continue;
		if (allowed < 0) {
			const ch_coord_cg_ops *ops = &z->g->cg->ops;
			allowed = !ops->may_describe ||
				  ops->may_describe(ops->ud, z->token, name, len);
		}
		if (!allowed)
			return;
		if (z->nfound[i] == z->capfound[i]) {
			z->capfound[i] = z->capfound[i] ? z->capfound[i] * 2 : 8;
			z->found[i] = ch_xrealloc(z->found[i],
						  (size_t)z->capfound[i] * sizeof *z->found[i]);
		}
		z->found[i][z->nfound[i]++] = ch_xstrndup(name, len);
	}
}

static bool
topics_eq(char **a, int32_t na, char **b, int32_t nb)
{
	if (na != nb)
		return false;
	for (int32_t i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

/* Every regex of g resolved against the topics now; whether one changed. */
static bool
resolve_all(cg_group *g, void *token, int64_t now)
{
	ch_coord_cg *cg = g->cg;
	resolving z = {.g = g, .token = token, .n = g->regexes.n};
	size_t n = z.n ? z.n : 1;
	z.rs = ch_xcalloc(n, sizeof *z.rs);
	z.res = ch_xcalloc(n, sizeof *z.res);
	z.found = ch_xcalloc(n, sizeof *z.found);
	z.nfound = ch_xcalloc(n, sizeof *z.nfound);
	z.capfound = ch_xcalloc(n, sizeof *z.capfound);
	size_t i = 0;
	ch_map_foreach (&g->regexes, e) {
		cg_regex *r = e->value;
		z.rs[i] = r;
		char why[128];
		z.res[i] = ch_regex_compile(r->pattern, strlen(r->pattern), why, sizeof why);
		if (!z.res[i]) /* checked when it came; Kafka logs and ignores it too */
			ch_coord_cg_log(
				cg, CH_LOG_ERROR,
				"[GroupId %s] Couldn't parse regular expression '%s' due to "
				"`%s`. Ignoring it.",
				g->id, r->pattern, why);
		i++;
	}
	if (cg->ops.foreach_topic)
		cg->ops.foreach_topic(cg->ops.ud, match_topic, &z);
	bool changed = false;
	for (i = 0; i < z.n; i++) {
		cg_regex *r = z.rs[i];
		if (z.nfound[i] > 1)
			qsort(z.found[i], (size_t)z.nfound[i], sizeof *z.found[i], cstr_cmp);
		/* Kafka compares with the empty set when it was not resolved */
		if (!topics_eq(r->topics, r->ntopics, z.found[i], z.nfound[i])) {
			changed = true;
			topics_free(r->topics, r->ntopics);
			r->topics = z.found[i];
			r->ntopics = z.nfound[i];
		} else {
			topics_free(z.found[i], z.nfound[i]);
		}
		r->resolved = true;
		r->version = cg->topics_version;
		r->ts = now;
		r->store_dirty = true;
		ch_regex_free(z.res[i]);
	}
	ch_coord_cg_log(cg, CH_LOG_INFO,
			"[GroupId %s] Scanned %zu topics to refresh %zu regular expressions.",
			g->id, z.scanned, z.n);
	free(z.rs);
	free(z.res);
	free(z.found);
	free(z.nfound);
	free(z.capfound);
	g->regex_ts = now;
	g->regex_never = false;
	return changed;
}

bool
ch_coord_cg_regex_maybe_refresh(cg_group *g, void *token, int64_t now)
{
	if (g->regexes.n == 0)
		return false;
	const ch_coord_cg_config *cfg = &g->cg->cfg;
	if (!g->regex_never && now <= g->regex_ts + cfg->regex_min_refresh_ms)
		return false;
	bool due = g->regex_never || now > g->regex_ts + cfg->regex_refresh_interval_ms;
	ch_map_foreach (&g->regexes, e) {
		const cg_regex *r = e->value;
		due |= !r->resolved || r->version < g->cg->topics_version;
	}
	if (!due || !resolve_all(g, token, now))
		return false;
	g->meta_stale = true;
	return true;
}
