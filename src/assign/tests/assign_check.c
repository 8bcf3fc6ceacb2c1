/*
 * assign_check.c: group model and property checkers (see assign_check.h).
 * Written for clarity over speed, except where the benchmark needs to build
 * a million owned partitions (ac_own appends to the last topic group in O(1)).
 */
#include "assign_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *
ac_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q) {
		fprintf(stderr, "out of memory\n");
		abort();
	}
	return q;
}

static char *
ac_strdup(const char *s)
{
	return s ? strcpy(ac_xrealloc(NULL, strlen(s) + 1), s) : NULL;
}

uint64_t
ac_rand(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void
ac_init(ac_group *g)
{
	memset(g, 0, sizeof(*g));
}

static void
ac_member_free(ac_member *m)
{
	free(m->id);
	free(m->instance);
	free(m->rack);
	free(m->topics);
	for (int32_t i = 0; i < m->nowned && !m->pool; i++)
		free((void *)m->owned[i].partitions);
	free(m->owned);
	free(m->pool);
	memset(m, 0, sizeof(*m));
}

void
ac_free(ac_group *g)
{
	for (int32_t t = 0; t < g->nt; t++) {
		free(g->tname[t]);
		free(g->tracks[t]);
	}
	free(g->tname);
	free(g->tparts);
	free(g->tracks);
	for (int32_t m = 0; m < g->nm; m++)
		ac_member_free(&g->m[m]);
	free(g->m);
	free(g->vt);
	free(g->vm);
	memset(g, 0, sizeof(*g));
}

int32_t
ac_add_topic(ac_group *g, const char *name, int32_t partitions)
{
	g->tname = ac_xrealloc(g->tname, (size_t)(g->nt + 1) * sizeof(char *));
	g->tparts = ac_xrealloc(g->tparts, (size_t)(g->nt + 1) * sizeof(int32_t));
	g->tracks = ac_xrealloc(g->tracks, (size_t)(g->nt + 1) * sizeof(*g->tracks));
	g->tname[g->nt] = ac_strdup(name);
	g->tparts[g->nt] = partitions;
	g->tracks[g->nt] = NULL;
	return g->nt++;
}

int32_t
ac_add_member(ac_group *g, const char *id, const char *instance, const char *rack)
{
	g->m = ac_xrealloc(g->m, (size_t)(g->nm + 1) * sizeof(ac_member));
	ac_member *m = &g->m[g->nm];
	memset(m, 0, sizeof(*m));
	m->id = ac_strdup(id);
	m->instance = ac_strdup(instance);
	m->rack = ac_strdup(rack);
	m->generation = CH_ASSIGN_NO_GENERATION;
	return g->nm++;
}

void
ac_subscribe(ac_group *g, int32_t mi, int32_t t)
{
	ac_member *m = &g->m[mi];
	if ((m->ntopics & (m->ntopics - 1)) == 0)
		m->topics = ac_xrealloc(m->topics, (size_t)(m->ntopics ? m->ntopics * 2 : 1) *
							   sizeof(int32_t));
	m->topics[m->ntopics++] = t;
}

void
ac_own(ac_group *g, int32_t mi, int32_t t, int32_t p)
{
	ac_member *m = &g->m[mi];
	if (m->pool) {
		/* back to one array per group */
		for (int32_t i = 0; i < m->nowned; i++) {
			ch_assign_owned *o = &m->owned[i];
			int32_t cap = 1;
			while (cap < o->n)
				cap *= 2;
			int32_t *p = ac_xrealloc(NULL, (size_t)cap * sizeof(int32_t));
			o->partitions = memcpy(p, o->partitions, (size_t)o->n * sizeof(int32_t));
		}
		free(m->pool);
		m->pool = NULL;
		int32_t cap = 1;
		while (cap < m->nowned)
			cap *= 2;
		m->owned = ac_xrealloc(m->owned, (size_t)cap * sizeof(*m->owned));
	}
	if (m->nowned == 0 || m->owned[m->nowned - 1].topic != t) {
		if ((m->nowned & (m->nowned - 1)) == 0)
			m->owned = ac_xrealloc(m->owned, (size_t)(m->nowned ? m->nowned * 2 : 1) *
								 sizeof(*m->owned));
		m->owned[m->nowned++] = (ch_assign_owned){t, NULL, 0};
	}
	ch_assign_owned *o = &m->owned[m->nowned - 1];
	if ((o->n & (o->n - 1)) == 0)
		o->partitions = ac_xrealloc((void *)o->partitions,
					    (size_t)(o->n ? o->n * 2 : 1) * sizeof(int32_t));
	((int32_t *)o->partitions)[o->n++] = p;
}

void
ac_remove_member(ac_group *g, int32_t mi)
{
	ac_member_free(&g->m[mi]);
	memmove(&g->m[mi], &g->m[mi + 1], (size_t)(g->nm - mi - 1) * sizeof(ac_member));
	g->nm--;
}

void
ac_set_owned(ac_group *g, const ch_assign_result *r, int32_t gen)
{
	for (int32_t mi = 0; mi < g->nm; mi++) {
		ac_member *m = &g->m[mi];
		for (int32_t i = 0; i < m->nowned && !m->pool; i++)
			free((void *)m->owned[i].partitions);
		free(m->owned);
		free(m->pool);
		m->owned = NULL;
		m->pool = NULL;
		m->nowned = 0;
		m->generation = gen;
		if (mi >= r->nmembers)
			continue;
		/* One block per member, as a decoder's arena would give. */
		int32_t a = r->off[mi], b = r->off[mi + 1], ng = 0;
		for (int32_t i = a; i < b; i++)
			ng += i == a || r->tps[i].topic != r->tps[i - 1].topic;
		m->owned = ac_xrealloc(NULL, (size_t)(ng + 1) * sizeof(*m->owned));
		m->pool = ac_xrealloc(NULL, (size_t)(b - a + 1) * sizeof(int32_t));
		for (int32_t i = a; i < b; i++) {
			if (i == a || r->tps[i].topic != r->tps[i - 1].topic)
				m->owned[m->nowned++] =
					(ch_assign_owned){r->tps[i].topic, m->pool + (i - a), 0};
			m->pool[i - a] = r->tps[i].partition;
			m->owned[m->nowned - 1].n++;
		}
	}
}

const ch_assign_input *
ac_input(ac_group *g)
{
	g->vt = ac_xrealloc(g->vt, (size_t)(g->nt + 1) * sizeof(*g->vt));
	g->vm = ac_xrealloc(g->vm, (size_t)(g->nm + 1) * sizeof(*g->vm));
	for (int32_t t = 0; t < g->nt; t++)
		g->vt[t] = (ch_assign_topic){ch_str_c(g->tname[t]), g->tparts[t], g->tracks[t]};
	for (int32_t i = 0; i < g->nm; i++) {
		ac_member *m = &g->m[i];
		g->vm[i] = (ch_assign_member){ch_str_c(m->id),   ch_str_c(m->instance),
					      ch_str_c(m->rack), m->topics,
					      m->ntopics,        m->owned,
					      m->nowned,         m->generation};
		if (g->share && i > 0 && m->ntopics == g->vm[i - 1].ntopics &&
		    memcmp(m->topics, g->vm[i - 1].topics, (size_t)m->ntopics * sizeof(int32_t)) ==
			    0)
			g->vm[i].topics = g->vm[i - 1].topics;
	}
	g->in = (ch_assign_input){g->vt, g->nt, g->vm, g->nm};
	return &g->in;
}

static void
ac_perm(int32_t *p, int32_t n, uint64_t *s)
{
	for (int32_t i = 0; i < n; i++)
		p[i] = i;
	for (int32_t i = n - 1; i > 0; i--) {
		int32_t j = (int32_t)(ac_rand(s) % (uint64_t)(i + 1)), x = p[i];
		p[i] = p[j];
		p[j] = x;
	}
}

void
ac_shuffled(const ac_group *src, ac_group *dst, uint64_t seed)
{
	uint64_t s = seed;
	ac_init(dst);
	int32_t *tp = ac_xrealloc(NULL, (size_t)(src->nt + 1) * sizeof(int32_t));
	int32_t *inv = ac_xrealloc(NULL, (size_t)(src->nt + 1) * sizeof(int32_t));
	ac_perm(tp, src->nt, &s); /* new position i holds old topic tp[i] */
	for (int32_t i = 0; i < src->nt; i++) {
		inv[tp[i]] = i;
		ac_add_topic(dst, src->tname[tp[i]], src->tparts[tp[i]]);
		dst->tracks[i] = NULL;
		if (src->tracks[tp[i]]) {
			size_t sz = (size_t)src->tparts[tp[i]] * sizeof(ch_assign_racks);
			dst->tracks[i] = memcpy(ac_xrealloc(NULL, sz), src->tracks[tp[i]], sz);
		}
	}
	int32_t *mp = ac_xrealloc(NULL, (size_t)(src->nm + 1) * sizeof(int32_t));
	ac_perm(mp, src->nm, &s);
	for (int32_t i = 0; i < src->nm; i++) {
		const ac_member *m = &src->m[mp[i]];
		int32_t d = ac_add_member(dst, m->id, m->instance, m->rack);
		dst->m[d].generation = m->generation;
		int32_t *q = ac_xrealloc(NULL, (size_t)(m->ntopics + 1) * sizeof(int32_t));
		ac_perm(q, m->ntopics, &s);
		for (int32_t j = 0; j < m->ntopics; j++) {
			int32_t t = m->topics[q[j]];
			ac_subscribe(dst, d, t >= 0 && t < src->nt ? inv[t] : t);
		}
		q = ac_xrealloc(q, (size_t)(m->nowned + 1) * sizeof(int32_t));
		ac_perm(q, m->nowned, &s);
		for (int32_t j = 0; j < m->nowned; j++) {
			const ch_assign_owned *o = &m->owned[q[j]];
			int32_t t = o->topic >= 0 && o->topic < src->nt ? inv[o->topic] : o->topic;
			int32_t *pq = ac_xrealloc(NULL, (size_t)(o->n + 1) * sizeof(int32_t));
			ac_perm(pq, o->n, &s);
			/* a fresh group for each source group, even if topics repeat */
			ac_member *dm = &dst->m[d];
			dm->owned = ac_xrealloc(dm->owned,
						(size_t)(dm->nowned + 1) * sizeof(*dm->owned));
			int32_t *parts = ac_xrealloc(NULL, (size_t)(o->n + 1) * sizeof(int32_t));
			for (int32_t x = 0; x < o->n; x++)
				parts[x] = o->partitions[pq[x]];
			dm->owned[dm->nowned++] = (ch_assign_owned){t, parts, o->n};
			free(pq);
		}
		free(q);
	}
	free(mp);
	free(tp);
	free(inv);
	/* ac_own's doubling assumption no longer holds for dst: owned arrays are exact-size. */
}

static ch_str ac_racks[8] = {{"r0", 2}, {"r1", 2}, {"r2", 2}, {"r3", 2},
			     {"r0", 2}, {"r1", 2}, {"r2", 2}, {"r3", 2}};

void
ac_random(ac_group *g, uint64_t seed, int32_t members, int32_t topics, int32_t maxparts,
	  int density, bool owned)
{
	/* Every fifth seed: KIP-881 racks on members and replicas. */
	bool racks = seed % 5 == 1;
	uint64_t s = seed * 0x100000001b3ull + 17;
	char buf[64];
	ac_init(g);
	for (int32_t t = 0; t < topics; t++) {
		snprintf(buf, sizeof(buf), "topic-%03d-%02x", t, (unsigned)(ac_rand(&s) & 0xff));
		int32_t t2 = ac_add_topic(g, buf, 1 + (int32_t)(ac_rand(&s) % (uint64_t)maxparts));
		if (racks && ac_rand(&s) % 4 != 0) {
			int32_t n = g->tparts[t2];
			ch_assign_racks *r = ac_xrealloc(NULL, (size_t)n * sizeof(*r));
			for (int32_t p = 0; p < n; p++)
				r[p] = (ch_assign_racks){ac_racks + ac_rand(&s) % 4,
							 (int32_t)(ac_rand(&s) % 3)};
			g->tracks[t2] = r;
		}
	}
	for (int32_t i = 0; i < members; i++) {
		char ib[32];
		snprintf(buf, sizeof(buf), "consumer-%u-%d", (unsigned)(ac_rand(&s) % 100000), i);
		bool stat = ac_rand(&s) % 4 == 0;
		snprintf(ib, sizeof(ib), "instance-%d", (int)(ac_rand(&s) % 100000) * 1000 + i);
		char rb[8];
		snprintf(rb, sizeof(rb), "r%d", (int)(ac_rand(&s) % 4));
		int32_t m = ac_add_member(g, buf, stat ? ib : NULL,
					  racks && ac_rand(&s) % 5 != 0 ? rb : NULL);
		int32_t n = 0;
		for (int32_t t = 0; t < topics; t++)
			if (density >= 100 || (int)(ac_rand(&s) % 100) < density) {
				ac_subscribe(g, m, t);
				n++;
			}
		if (n == 0)
			ac_subscribe(g, m, (int32_t)(ac_rand(&s) % (uint64_t)topics));
	}
	if (!owned || members == 0)
		return;
	int32_t gen = 5;
	for (int32_t m = 0; m < members; m++) {
		uint64_t r = ac_rand(&s) % 10;
		g->m[m].generation = r < 7 ? gen : r < 9 ? gen - 1 : CH_ASSIGN_NO_GENERATION;
	}
	/* Previous owners: mostly one random member each (even one that no
	 * longer subscribes), sometimes none, sometimes two (a conflict). */
	for (int32_t t = 0; t < topics; t++)
		for (int32_t p = 0; p < g->tparts[t]; p++) {
			uint64_t r = ac_rand(&s) % 100;
			if (r < 15)
				continue;
			ac_own(g, (int32_t)(ac_rand(&s) % (uint64_t)members), t, p);
			if (r >= 97)
				ac_own(g, (int32_t)(ac_rand(&s) % (uint64_t)members), t, p);
		}
}

/* ---- checks ---------------------------------------------------------------- */

static char ac_err[512];

#define AC_FAIL(...)                                                                               \
	do {                                                                                       \
		snprintf(ac_err, sizeof(ac_err), __VA_ARGS__);                                     \
		res = ac_err;                                                                      \
		goto out;                                                                          \
	} while (0)

static bool
ac_claims(const ch_assign_member *m, int32_t t, int32_t p)
{
	for (int32_t i = 0; i < m->nowned; i++)
		if (m->owned[i].topic == t)
			for (int32_t x = 0; x < m->owned[i].n; x++)
				if (m->owned[i].partitions[x] == p)
					return true;
	return false;
}

static int
ac_strcmp(ch_str a, ch_str b)
{
	int32_t n = a.len < b.len ? a.len : b.len;
	int c = n > 0 ? memcmp(a.p, b.p, (size_t)n) : 0;
	return c ? c : (a.len > b.len) - (a.len < b.len);
}

static int
ch_as_strcmp_test(const ch_assign_input *in, ch_assign_tp a, ch_assign_tp b)
{
	int c = ac_strcmp(in->topics[a.topic].name, in->topics[b.topic].name);
	return c ? c : (a.partition > b.partition) - (a.partition < b.partition);
}

const char *
ac_check(ch_assign_kind kind, const ch_assign_input *in, const ch_assign_result *r, ac_stats *st)
{
	const char *res = NULL;
	int32_t nt = in->ntopics, nm = in->nmembers;
	memset(st, 0, sizeof(*st));
	int64_t *base = calloc((size_t)nt + 1, sizeof(int64_t));
	for (int32_t t = 0; t < nt; t++)
		base[t + 1] =
			base[t] + (in->topics[t].partitions > 0 ? in->topics[t].partitions : 0);
	int64_t np = base[nt];
	int32_t *owner = malloc((size_t)(np + 1) * sizeof(int32_t));
	int32_t *prev = malloc((size_t)(np + 1) * sizeof(int32_t));
	int32_t *nsubs = calloc((size_t)nt + 1, sizeof(int32_t));
	uint8_t *subm = calloc((size_t)nm * (size_t)nt + 1, 1); /* test sizes only */
	int32_t *load = calloc((size_t)nm + 1, sizeof(int32_t));
	int32_t *ownc = calloc((size_t)nm * (size_t)nt + 1, sizeof(int32_t));
	int32_t *q = malloc((size_t)(nm + 1) * sizeof(int32_t));
	uint8_t *vis = malloc((size_t)nm + 1);
	for (int64_t i = 0; i < np; i++)
		owner[i] = prev[i] = -1;
	if (r->nmembers != nm)
		AC_FAIL("result has %d members, input %d", r->nmembers, nm);
	for (int32_t m = 0; m < nm; m++)
		for (int32_t j = 0; j < in->members[m].ntopics; j++) {
			int32_t t = in->members[m].topics[j];
			if (t >= 0 && t < nt && !subm[(size_t)m * nt + t]) {
				subm[(size_t)m * nt + t] = 1;
				nsubs[t]++;
			}
		}
	st->equal = true;
	for (int32_t m = 1; m < nm && st->equal; m++)
		st->equal = memcmp(subm, subm + (size_t)m * nt, (size_t)nt) == 0;

	/* Valid, unique, subscribed. */
	for (int32_t m = 0; m < nm; m++) {
		for (int32_t i = r->off[m]; i < r->off[m + 1]; i++) {
			int32_t t = r->tps[i].topic, p = r->tps[i].partition;
			if (t < 0 || t >= nt || p < 0 || p >= in->topics[t].partitions)
				AC_FAIL("member %d got invalid partition %d/%d", m, t, p);
			if (i > r->off[m] && (ch_as_strcmp_test(in, r->tps[i - 1], r->tps[i]) >= 0))
				AC_FAIL("member %d's list is not sorted", m);
			if (owner[base[t] + p] >= 0)
				AC_FAIL("partition %s-%d assigned twice", in->topics[t].name.p, p);
			if (!subm[(size_t)m * nt + t])
				AC_FAIL("member %d got %s-%d without subscribing", m,
					in->topics[t].name.p, p);
			owner[base[t] + p] = m;
			load[m]++;
			ownc[(size_t)m * nt + t]++;
			st->assigned++;
		}
	}
	st->min_load = INT32_MAX;
	st->max_load = 0;
	for (int32_t m = 0; m < nm; m++) {
		st->min_load = load[m] < st->min_load ? load[m] : st->min_load;
		st->max_load = load[m] > st->max_load ? load[m] : st->max_load;
	}
	if (nm == 0)
		st->min_load = 0;

	/* Previous valid owners (sticky rules) and moves. */
	/* Per partition the claim of the highest generation; a tie there is
	 * nobody's (the server side ignores generations). */
	bool gen = kind == CH_ASSIGN_STICKY || kind == CH_ASSIGN_COOPERATIVE_STICKY;
	int32_t *best = malloc((size_t)(np + 1) * sizeof(int32_t));
	for (int32_t m = 0; m < nm; m++) {
		const ch_assign_member *mb = &in->members[m];
		int32_t mg = gen ? mb->generation : 0;
		for (int32_t i = 0; i < mb->nowned; i++) {
			int32_t t = mb->owned[i].topic;
			if (t < 0 || t >= nt)
				continue;
			for (int32_t x = 0; x < mb->owned[i].n; x++) {
				int32_t p = mb->owned[i].partitions[x];
				if (p < 0 || p >= in->topics[t].partitions)
					continue;
				int64_t x = base[t] + p;
				if (prev[x] == m)
					continue;
				if (prev[x] == -1 || mg > best[x]) {
					prev[x] = m;
					best[x] = mg;
				} else if (mg == best[x]) {
					prev[x] = -2;
				}
			}
		}
	}
	int32_t *o = calloc((size_t)nm + 1, sizeof(int32_t));
	for (int32_t t = 0; t < nt; t++)
		for (int32_t p = 0; p < in->topics[t].partitions; p++) {
			int32_t c = prev[base[t] + p];
			if (c < 0 || !subm[(size_t)c * nt + t]) {
				prev[base[t] + p] = -1;
				continue;
			}
			o[c]++;
			if (owner[base[t] + p] != c)
				st->moved++;
		}
	if (st->equal && nm > 0) {
		int64_t total = 0;
		for (int32_t t = 0; t < nt; t++)
			if (nsubs[t])
				total += in->topics[t].partitions;
		int64_t minq = total / nm, rem = total % nm, over = 0;
		for (int32_t m = 0; m < nm; m++) {
			st->min_moved += o[m] > minq ? o[m] - minq : 0;
			over += o[m] > minq;
		}
		st->min_moved -= over < rem ? over : rem;
	}
	free(o);
	free(best);

	/* Every subscribed partition assigned; cooperative may withhold one that
	 * moves to a new owner while another member claims it, and must. */
	for (int32_t t = 0; t < nt; t++) {
		if (!nsubs[t])
			continue;
		for (int32_t p = 0; p < in->topics[t].partitions; p++) {
			int32_t o = owner[base[t] + p];
			bool claimed = false;
			if (kind == CH_ASSIGN_COOPERATIVE_STICKY) {
				for (int32_t m = 0; m < nm; m++) {
					if (m == o || !ac_claims(&in->members[m], t, p))
						continue;
					claimed = true;
					if (o >= 0 && o != prev[base[t] + p])
						AC_FAIL("cooperative: %s-%d given to %d while %d "
							"claims it",
							in->topics[t].name.p, p, o, m);
				}
			}
			if (o < 0) {
				st->unassigned++;
				if (!claimed)
					AC_FAIL("partition %s-%d unassigned", in->topics[t].name.p,
						p);
			}
		}
	}

	/* Balance. */
	switch (kind) {
	case CH_ASSIGN_RANGE:
	case CH_ASSIGN_SERVER_RANGE:
		for (int32_t t = 0; t < nt; t++) {
			if (!nsubs[t])
				continue;
			int32_t n = in->topics[t].partitions, per = n / nsubs[t], more = 0;
			for (int32_t m = 0; m < nm; m++) {
				if (!subm[(size_t)m * nt + t])
					continue;
				int32_t c = ownc[(size_t)m * nt + t];
				if (c != per && c != per + 1)
					AC_FAIL("range: member %d has %d of %s (quota %d)", m, c,
						in->topics[t].name.p, per);
				more += c == per + 1;
			}
			if (more != n % nsubs[t])
				AC_FAIL("range: %d members over quota on %s, want %d", more,
					in->topics[t].name.p, n % nsubs[t]);
		}
		/* Co-partitioning (both range assignors promise it): with equal
		 * subscriptions to topics of one partition count, partition p of
		 * every subscribed topic has one owner. */
		if (st->equal && nm > 0) {
			int32_t first = -1;
			bool same = true;
			for (int32_t t = 0; t < nt && same; t++) {
				if (!nsubs[t])
					continue;
				if (first < 0)
					first = t;
				same = in->topics[t].partitions == in->topics[first].partitions;
			}
			for (int32_t t = first + 1; same && first >= 0 && t < nt; t++) {
				if (!nsubs[t])
					continue;
				for (int32_t p = 0; p < in->topics[t].partitions; p++)
					if (owner[base[t] + p] != owner[base[first] + p])
						AC_FAIL("range: %s-%d and %s-%d have different "
							"owners "
							"(co-partitioning)",
							in->topics[first].name.p, p,
							in->topics[t].name.p, p);
			}
		}
		break;
	case CH_ASSIGN_ROUNDROBIN:
		if (st->equal && st->max_load - st->min_load > 1)
			AC_FAIL("roundrobin: loads %d..%d", st->min_load, st->max_load);
		break;
	case CH_ASSIGN_STICKY:
	case CH_ASSIGN_SERVER_UNIFORM:
		if (st->equal) {
			if (st->max_load - st->min_load > 1)
				AC_FAIL("sticky: loads %d..%d", st->min_load, st->max_load);
			if (st->moved != st->min_moved)
				AC_FAIL("sticky: moved %lld, minimum %lld", (long long)st->moved,
					(long long)st->min_moved);
			break;
		}
		/* No cost-reducing path: BFS from every member. */
		for (int32_t s = 0; s < nm; s++) {
			memset(vis, 0, (size_t)nm);
			int32_t qh = 0, qt = 0;
			q[qt++] = s;
			vis[s] = 1;
			while (qh < qt) {
				int32_t u = q[qh++];
				if (load[u] <= load[s] - 2)
					AC_FAIL("sticky: chain from member %d (%d) to %d (%d)", s,
						load[s], u, load[u]);
				for (int32_t t = 0; t < nt; t++) {
					if (!ownc[(size_t)u * nt + t])
						continue;
					for (int32_t v = 0; v < nm; v++)
						if (!vis[v] && subm[(size_t)v * nt + t]) {
							vis[v] = 1;
							q[qt++] = v;
						}
				}
			}
		}
		break;
	default:
		break;
	}
out:
	free(base);
	free(owner);
	free(prev);
	free(nsubs);
	free(subm);
	free(load);
	free(ownc);
	free(q);
	free(vis);
	return res;
}

static const ch_assign_input *ac_sort_in;

static int
ac_member_cmp(const void *x, const void *y)
{
	return ac_strcmp(ac_sort_in->members[*(const int32_t *)x].member_id,
			 ac_sort_in->members[*(const int32_t *)y].member_id);
}

static int32_t *
ac_by_id(const ch_assign_input *in)
{
	int32_t *ix = malloc((size_t)(in->nmembers + 1) * sizeof(int32_t));
	for (int32_t i = 0; i < in->nmembers; i++)
		ix[i] = i;
	ac_sort_in = in;
	qsort(ix, (size_t)in->nmembers, sizeof(int32_t), ac_member_cmp);
	return ix;
}

bool
ac_same(const ch_assign_input *a, const ch_assign_result *ra, const ch_assign_input *b,
	const ch_assign_result *rb)
{
	if (a->nmembers != b->nmembers)
		return false;
	int32_t *ia = ac_by_id(a), *ib = ac_by_id(b);
	bool same = true;
	for (int32_t i = 0; i < a->nmembers && same; i++) {
		int32_t x = ia[i], y = ib[i];
		int32_t n = ra->off[x + 1] - ra->off[x];
		same = ac_strcmp(a->members[x].member_id, b->members[y].member_id) == 0 &&
		       n == rb->off[y + 1] - rb->off[y];
		for (int32_t j = 0; j < n && same; j++) {
			ch_assign_tp p = ra->tps[ra->off[x] + j], q = rb->tps[rb->off[y] + j];
			same = p.partition == q.partition &&
			       ac_strcmp(a->topics[p.topic].name, b->topics[q.topic].name) == 0;
		}
	}
	free(ia);
	free(ib);
	return same;
}

const char *
ac_fmt(const ch_assign_input *in, const ch_assign_result *r, int32_t m)
{
	static char buf[4096];
	size_t w = 0;
	buf[0] = 0;
	for (int32_t i = r->off[m]; i < r->off[m + 1] && w < sizeof(buf) - 64; i++) {
		ch_str n = in->topics[r->tps[i].topic].name;
		w += (size_t)snprintf(buf + w, sizeof(buf) - w, "%s%.*s-%d", w ? " " : "",
				      (int)n.len, n.p, r->tps[i].partition);
	}
	return buf;
}
