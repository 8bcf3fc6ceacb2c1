/*
 * ch_assign_range.c: the range and roundrobin assignors (client side) and the
 * KIP-848 server-side range assignor.
 *
 * range (RangeAssignor): for each topic on its own, its subscribers in
 * MemberInfo order get contiguous ranges; with n partitions and k members
 * the first n % k get n / k + 1, the rest n / k. Members of topics with the
 * same partition count and the same subscribers get the same partition
 * numbers, which is what co-partitioned joins rely on.
 *
 * Rack-aware range (KIP-881, Kafka 3.5+). It applies to a topic when some
 * subscriber has a rack, some replica is on one of those racks, and the
 * partitions do not all have replicas on the same set of racks (otherwise
 * every choice is equally local). Then, before the plain ranges:
 *   - topics with the same subscribers and partition count (co-partitioned)
 *     are walked partition by partition: partition i of all of them goes to
 *     the first member whose rack holds a replica of partition i in every one
 *     of them and that is still under its quota in every one;
 *   - any other rack-aware topic: each member in order takes, up to its
 *     quota, the first unassigned partitions with a replica on its rack.
 * The quota: n / k each, and n % k members may take one more; a member over
 * n / k uses up one of those extra slots. The plain ranges then hand out what
 * is left in partition order under the same quotas, so the counts are
 * exactly those of the rack-unaware assignor.
 *
 * roundrobin (RoundRobinAssignor): all partitions of all subscribed topics in
 * (topic, partition) order; a cursor walks the members in order and each
 * partition goes to the next member (from the cursor, wrapping) subscribed to
 * its topic.
 *
 * Server-side range (KIP-848, group-coordinator RangeAssignor): the same
 * per-topic quotas, but sticky: each member first keeps its lowest
 * min(current, n / k) partitions of the topic, a member holding more keeps
 * one more while extra slots remain; then the rest, ascending, fill the
 * members in order, each taking what it lacks plus one extra while extra
 * slots remain. When co-partitioning is possible the claims are first made
 * equal across the topics (server_range_copartition), so every topic gets
 * the same answer. Kafka's coordinator RangeAssignor is not sticky (it
 * re-deals contiguous ranges in member order): ours differs on purpose.
 */
#include "assign/ch_assign_int.h"

#include <stdlib.h>
#include <string.h>

#include "common/ch_hash.h"

/* ---- rack interning ---------------------------------------------------- */

typedef struct ch_as_racks {
	ch_str *name; /* by rack id */
	int32_t n, cap;
	int32_t *tab; /* open addressing: rack ids */
	uint32_t mask;
} ch_as_racks;

/* The small id of rack name s in the group's rack table (open addressing,
 * grown in the assignment's arena); add: a new name gets the next id. -1 for
 * a null rack, an unknown one when !add, or no memory. */
static int32_t
ch_as_rack_id(ch_as *as, ch_as_racks *r, ch_str s, bool add)
{
	if (s.len < 0)
		return -1;
	uint32_t h = (uint32_t)ch_hash_bytes(s.p, (size_t)s.len) & r->mask;
	while (r->tab[h] >= 0) {
		if (ch_str_eq(r->name[r->tab[h]], s))
			return r->tab[h];
		h = (h + 1) & r->mask;
	}
	if (!add)
		return -1;
	if (r->n == r->cap || (uint32_t)r->n * 2 >= r->mask) {
		/* Grow: rebuild the table twice as large. */
		int32_t cap = r->cap * 2;
		ch_str *nn = ch_as_alloc(as, (size_t)cap * sizeof(ch_str));
		uint32_t mask = r->mask * 2 + 1;
		int32_t *tab = ch_as_i32(as, (size_t)mask + 1, -1);
		if (!nn || !tab)
			return -1;
		memcpy(nn, r->name, (size_t)r->n * sizeof(ch_str));
		for (int32_t i = 0; i < r->n; i++) {
			uint32_t g = (uint32_t)ch_hash_bytes(nn[i].p, (size_t)nn[i].len) & mask;
			while (tab[g] >= 0)
				g = (g + 1) & mask;
			tab[g] = i;
		}
		r->name = nn;
		r->cap = cap;
		r->tab = tab;
		r->mask = mask;
		h = (uint32_t)ch_hash_bytes(s.p, (size_t)s.len) & mask;
		while (r->tab[h] >= 0)
			h = (h + 1) & mask;
	}
	r->name[r->n] = s;
	r->tab[h] = r->n;
	return r->n++;
}

/* ---- range --------------------------------------------------------------- */

typedef struct ch_as_rstate {
	int32_t *mrack;  /* per member rack id or -1 */
	int32_t *pr_off; /* np + 1: replica racks of each partition (CSR) */
	int32_t *pr;
	int32_t *acnt;              /* per slot: partitions assigned to (member, topic) */
	int32_t *per, *extra, *nwe; /* per topic: n / k, n % k, extra slots used */
	int32_t *cursor;            /* per topic: lowest possibly unassigned partition */
} ch_as_rstate;

/* Whether member m may take partition g under KIP-881: a member without a
 * rack matches any partition, else one of g's replicas must be on its rack. */
static bool
ch_as_racks_match(const ch_as_rstate *st, int32_t m, int32_t g)
{
	int32_t r = st->mrack[m];
	if (r < 0)
		return true;
	for (int32_t i = st->pr_off[g]; i < st->pr_off[g + 1]; i++)
		if (st->pr[i] == r)
			return true;
	return false;
}

static int32_t
ch_as_max_assignable(const ch_as_rstate *st, int32_t t, int32_t slot)
{
	int32_t v = st->per[t] + (st->nwe[t] < st->extra[t] ? 1 : 0) - st->acnt[slot];
	return v > 0 ? v : 0;
}

/* Gives partition g of topic t to member m, counted in m's slot; the slot's (per[t] + 1)th
 * partition takes one of t's extras. The caller checked ch_as_max_assignable. */
static void
ch_as_range_give(ch_as *as, ch_as_rstate *st, int32_t t, int32_t m, int32_t slot, int32_t g)
{
	as->owner[g] = m;
	if (++st->acnt[slot] == st->per[t] + 1)
		st->nwe[t]++;
}

/* Each subscriber in order takes up to its quota of the first unassigned
 * partitions it may have (rack-matching when `rack`). */
static void
ch_as_assign_ranges(ch_as *as, ch_as_rstate *st, int32_t t, bool rack)
{
	int32_t end = as->t_base[t + 1];
	for (int32_t q = as->ts_off[t]; q < as->ts_off[t + 1]; q++) {
		int32_t m = as->ts_mem[q], slot = as->ts_slot[q];
		while (st->cursor[t] < end && as->owner[st->cursor[t]] >= 0)
			st->cursor[t]++;
		if (st->cursor[t] == end)
			break;
		int32_t want = ch_as_max_assignable(st, t, slot);
		for (int32_t g = st->cursor[t]; g < end && want > 0; g++) {
			if (as->owner[g] >= 0 || (rack && !ch_as_racks_match(st, m, g)))
				continue;
			ch_as_range_give(as, st, t, m, slot, g);
			want--;
		}
	}
}

typedef struct ch_as_tkey {
	uint64_t h;
	int32_t n, t;
	const ch_as *as;
} ch_as_tkey;

/* qsort order of topics by (subscriber hash, subscriber count, subscriber
 * list, topic index): topics with the same subscribers end up adjacent. */
static int
ch_as_tkey_cmp(const void *x, const void *y)
{
	const ch_as_tkey *a = x, *b = y;
	if (a->h != b->h)
		return a->h < b->h ? -1 : 1;
	if (a->n != b->n)
		return a->n < b->n ? -1 : 1;
	const ch_as *as = a->as;
	int32_t la = as->ts_off[a->t + 1] - as->ts_off[a->t];
	int32_t lb = as->ts_off[b->t + 1] - as->ts_off[b->t];
	if (la != lb)
		return la < lb ? -1 : 1;
	int c = memcmp(as->ts_mem + as->ts_off[a->t], as->ts_mem + as->ts_off[b->t],
		       (size_t)la * sizeof(int32_t));
	if (c)
		return c;
	return a->t < b->t ? -1 : a->t > b->t;
}

/* Whether two topics have exactly the same subscribers (their keys compare
 * equal but for the topic). */
static bool
ch_as_tkey_same(const ch_as_tkey *a, const ch_as_tkey *b)
{
	ch_as_tkey x = *a, y = *b;
	x.t = y.t = 0;
	if (x.h != y.h || x.n != y.n)
		return false;
	const ch_as *as = a->as;
	int32_t la = as->ts_off[a->t + 1] - as->ts_off[a->t];
	int32_t lb = as->ts_off[b->t + 1] - as->ts_off[b->t];
	return la == lb && memcmp(as->ts_mem + as->ts_off[a->t], as->ts_mem + as->ts_off[b->t],
				  (size_t)la * sizeof(int32_t)) == 0;
}

/* Partition i of every topic in the group to the first member that matches
 * racks and has room in all of them. */
static void
ch_as_copartitioned(ch_as *as, ch_as_rstate *st, const ch_as_tkey *grp, int32_t ng)
{
	int32_t t0 = grp[0].t, k = as->ts_off[t0 + 1] - as->ts_off[t0], n = grp[0].n;
	uint8_t *gone = ch_as_alloc(as, (size_t)k + 1);
	if (!gone)
		return;
	memset(gone, 0, (size_t)k + 1);
	int32_t left = k;
	for (int32_t i = 0; i < n && left > 0; i++) {
		for (int32_t j = 0; j < k; j++) {
			if (gone[j])
				continue;
			int32_t m = as->ts_mem[as->ts_off[t0] + j];
			bool ok = true;
			for (int32_t x = 0; x < ng && ok; x++) {
				int32_t t = grp[x].t, q = as->ts_off[t] + j;
				ok = ch_as_racks_match(st, m, as->t_base[t] + i) &&
				     ch_as_max_assignable(st, t, as->ts_slot[q]) > 0;
			}
			if (!ok)
				continue;
			bool room = false;
			for (int32_t x = 0; x < ng; x++) {
				int32_t t = grp[x].t, q = as->ts_off[t] + j;
				ch_as_range_give(as, st, t, m, as->ts_slot[q], as->t_base[t] + i);
				room |= ch_as_max_assignable(st, t, as->ts_slot[q]) > 0;
			}
			if (!room) {
				gone[j] = 1;
				left--;
			}
			break;
		}
	}
}

/* Whether KIP-881 applies to topic t (AbstractPartitionAssignor's
 * useRackAwareAssignment). `mark` is a zeroed scratch array per rack id. */
static bool
ch_as_range_needs_racks(ch_as *as, ch_as_rstate *st, int32_t t, uint8_t *mark, int32_t nracks)
{
	int32_t base = as->t_base[t], end = as->t_base[t + 1];
	if (end == base || st->pr_off[end] == st->pr_off[base])
		return false;
	bool any = false;
	for (int32_t q = as->ts_off[t]; q < as->ts_off[t + 1]; q++)
		any |= st->mrack[as->ts_mem[q]] >= 0;
	if (!any)
		return false;
	int32_t nu = 0;
	for (int32_t i = st->pr_off[base]; i < st->pr_off[end]; i++)
		if (!mark[st->pr[i]]) {
			mark[st->pr[i]] = 1;
			nu++;
		}
	bool meet = false;
	for (int32_t q = as->ts_off[t]; q < as->ts_off[t + 1]; q++) {
		int32_t r = st->mrack[as->ts_mem[q]];
		meet |= r >= 0 && mark[r];
	}
	memset(mark, 0, (size_t)nracks);
	if (!meet)
		return false;
	for (int32_t g = base; g < end; g++)
		if (st->pr_off[g + 1] - st->pr_off[g] != nu)
			return true;
	return false;
}

int
ch_as_range(ch_as *as)
{
	const ch_assign_input *in = as->in;
	bool mracks = false, tracks = false;
	if (!as->equal && ch_as_expand(as) != CH_OK)
		return CH_ERR;
	for (int32_t m = 0; m < as->nm; m++)
		mracks |= in->members[as->m_ext[m]].rack.len > 0;
	for (int32_t t = 0; t < as->nt; t++)
		tracks |= in->topics[as->t_ext[t]].racks != NULL;

	if (!mracks || !tracks) {
		/* The plain assignor: ranges by formula. */
		for (int32_t t = 0; t < as->nt; t++) {
			const int32_t *mem;
			int32_t k = ch_as_subs(as, t, &mem);
			if (k == 0)
				continue;
			int32_t n = as->t_base[t + 1] - as->t_base[t], per = n / k, extra = n % k;
			int32_t g = as->t_base[t];
			for (int32_t j = 0; j < k; j++) {
				int32_t len = per + (j < extra ? 1 : 0), m = mem[j];
				for (int32_t x = 0; x < len; x++)
					as->owner[g++] = m;
			}
		}
		return CH_OK;
	}

	ch_as_rstate st;
	ch_as_racks rk = {0};
	if (ch_as_expand(as) != CH_OK)
		return CH_ERR;
	rk.cap = 16;
	rk.mask = 63;
	rk.name = ch_as_alloc(as, (size_t)rk.cap * sizeof(ch_str));
	rk.tab = ch_as_i32(as, 64, -1);
	st.mrack = ch_as_i32(as, (size_t)as->nm, -1);
	st.pr_off = ch_as_i32(as, (size_t)as->np + 1, 0);
	int32_t nsub = as->sub_off[as->nm];
	st.acnt = ch_as_i32(as, (size_t)nsub, 0);
	st.per = ch_as_i32(as, (size_t)as->nt, 0);
	st.extra = ch_as_i32(as, (size_t)as->nt, 0);
	st.nwe = ch_as_i32(as, (size_t)as->nt, 0);
	st.cursor = ch_as_i32(as, (size_t)as->nt, 0);
	if (as->oom)
		return CH_ERR;
	for (int32_t m = 0; m < as->nm; m++) {
		/* An empty client.rack means none (Kafka filters it out). */
		ch_str r = in->members[as->m_ext[m]].rack;
		st.mrack[m] = r.len > 0 ? ch_as_rack_id(as, &rk, r, true) : -1;
	}
	/* Replica racks, deduplicated per partition. */
	int64_t nr = 0;
	for (int32_t t = 0; t < as->nt; t++) {
		const ch_assign_topic *tp = &in->topics[as->t_ext[t]];
		if (tp->racks)
			for (int32_t p = 0; p < tp->partitions; p++)
				nr += tp->racks[p].n > 0 ? tp->racks[p].n : 0;
	}
	st.pr = ch_as_i32(as, (size_t)nr, 1);
	if (as->oom)
		return CH_ERR;
	int32_t w = 0;
	for (int32_t t = 0; t < as->nt; t++) {
		const ch_assign_topic *tp = &in->topics[as->t_ext[t]];
		int32_t base = as->t_base[t];
		for (int32_t p = 0; p < as->t_base[t + 1] - base; p++) {
			st.pr_off[base + p] = w;
			if (!tp->racks)
				continue;
			for (int32_t i = 0; i < tp->racks[p].n; i++) {
				int32_t r = ch_as_rack_id(as, &rk, tp->racks[p].rack[i], true);
				if (r < 0)
					continue;
				bool dup = false;
				for (int32_t x = st.pr_off[base + p]; x < w && !dup; x++)
					dup = st.pr[x] == r;
				if (!dup)
					st.pr[w++] = r;
			}
		}
	}
	st.pr_off[as->np] = w;
	if (as->oom)
		return CH_ERR;

	uint8_t *mark = ch_as_alloc(as, (size_t)rk.n + 1);
	uint8_t *needs = ch_as_alloc(as, (size_t)as->nt + 1);
	ch_as_tkey *keys = ch_as_alloc(as, ((size_t)as->nt + 1) * sizeof(*keys));
	if (as->oom)
		return CH_ERR;
	memset(mark, 0, (size_t)rk.n + 1);
	bool use = false;
	int32_t nk = 0;
	for (int32_t t = 0; t < as->nt; t++) {
		int32_t k = as->ts_off[t + 1] - as->ts_off[t];
		int32_t n = as->t_base[t + 1] - as->t_base[t];
		needs[t] = 0;
		if (k == 0 || n == 0)
			continue;
		st.per[t] = n / k;
		st.extra[t] = n % k;
		st.cursor[t] = as->t_base[t];
		needs[t] = ch_as_range_needs_racks(as, &st, t, mark, rk.n);
		use |= needs[t];
		uint64_t h = ch_hash_bytes(as->ts_mem + as->ts_off[t], (size_t)k * sizeof(int32_t));
		keys[nk++] = (ch_as_tkey){h, n, t, as};
	}
	if (use) {
		qsort(keys, (size_t)nk, sizeof(*keys), ch_as_tkey_cmp);
		for (int32_t i = 0; i < nk;) {
			int32_t j = i + 1;
			while (j < nk && ch_as_tkey_same(&keys[i], &keys[j]))
				j++;
			if (j - i > 1)
				ch_as_copartitioned(as, &st, keys + i, j - i);
			else if (needs[keys[i].t])
				ch_as_assign_ranges(as, &st, keys[i].t, true);
			i = j;
		}
	}
	for (int32_t t = 0; t < as->nt; t++)
		if (as->ts_off[t + 1] > as->ts_off[t])
			ch_as_assign_ranges(as, &st, t, false);
	return as->oom ? CH_ERR : CH_OK;
}

/* ---- roundrobin ---------------------------------------------------------- */

int
ch_as_roundrobin(ch_as *as)
{
	int32_t cur = 0; /* the cursor: next member to consider */
	if (!as->equal && ch_as_expand(as) != CH_OK)
		return CH_ERR;
	for (int32_t t = 0; t < as->nt; t++) {
		const int32_t *mem;
		int32_t k = ch_as_subs(as, t, &mem);
		if (k == 0)
			continue;
		/* First subscriber at or after the cursor, wrapping. */
		int32_t a = 0, b = k;
		while (a < b) {
			int32_t mid = a + (b - a) / 2;
			if (mem[mid] < cur)
				a = mid + 1;
			else
				b = mid;
		}
		int32_t j = a == k ? 0 : a;
		for (int32_t g = as->t_base[t]; g < as->t_base[t + 1]; g++) {
			int32_t m = mem[j];
			as->owner[g] = m;
			cur = m + 1 == as->nm ? 0 : m + 1;
			j = j + 1 == k ? 0 : j + 1;
		}
	}
	return CH_OK;
}

/* ---- server-side range (KIP-848) ------------------------------------------ */

/* When co-partitioning is possible (every member subscribes to the same
 * topics and they have one partition count n), makes partition p's claim
 * the same in every topic: the member claiming p in most of them
 * (Boyer-Moore vote, O(topics) per p), else the first topic's claimant.
 * The per-topic pass below is deterministic, so equal claims give every
 * member the same partition numbers in each topic, also after a topic was
 * added to the subscription or a claim was lost (Kafka's RangeAssignor
 * promises co-partitioning; its ranges are not sticky, ours are). */
static void
server_range_copartition(ch_as *as, int32_t *claim)
{
	if (!as->equal || as->neq < 2)
		return;
	const int32_t *tt = as->eq_topics;
	int32_t n = as->t_base[tt[0] + 1] - as->t_base[tt[0]];
	for (int32_t i = 1; i < as->neq; i++)
		if (as->t_base[tt[i] + 1] - as->t_base[tt[i]] != n)
			return;
	for (int32_t p = 0; p < n; p++) {
		int32_t cand = -1, votes = 0, first = -1;
		for (int32_t i = 0; i < as->neq; i++) {
			int32_t c = claim[as->t_base[tt[i]] + p];
			if (c < 0)
				continue;
			if (first < 0)
				first = c;
			if (votes == 0) {
				cand = c;
				votes = 1;
			} else {
				votes += c == cand ? 1 : -1;
			}
		}
		int32_t count = 0;
		for (int32_t i = 0; i < as->neq; i++)
			count += claim[as->t_base[tt[i]] + p] == cand;
		int32_t winner = cand >= 0 && 2 * count > as->neq ? cand : first;
		for (int32_t i = 0; i < as->neq; i++)
			claim[as->t_base[tt[i]] + p] = winner;
	}
}

int
ch_as_server_range(ch_as *as)
{
	const ch_assign_input *in = as->in;
	if (!as->equal && ch_as_expand(as) != CH_OK)
		return CH_ERR;
	/* Current target: claims; a partition claimed twice belongs to nobody. */
	int32_t *claim = ch_as_i32(as, (size_t)as->np, -1);
	int32_t *loc = ch_as_i32(as, (size_t)as->nm, -1);
	int32_t *bcnt = ch_as_i32(as, (size_t)as->nm + 1, 0);
	int32_t *bpos = ch_as_i32(as, (size_t)as->nm + 1, 0);
	int32_t *bl = ch_as_i32(as, (size_t)as->np, 1);
	if (as->oom)
		return CH_ERR;
	for (int32_t m = 0; m < as->nm; m++) {
		const ch_assign_member *mb = &in->members[as->m_ext[m]];
		for (int32_t i = 0; i < mb->nowned; i++) {
			const ch_assign_owned *o = &mb->owned[i];
			if (o->topic < 0 || o->topic >= as->nt)
				continue;
			int32_t t = as->t_int[o->topic], n = as->t_base[t + 1] - as->t_base[t];
			for (int32_t x = 0; x < o->n; x++) {
				int32_t p = o->partitions[x];
				if (p < 0 || p >= n)
					continue;
				int32_t g = as->t_base[t] + p;
				claim[g] = claim[g] == -1 || claim[g] == m ? m : -2;
			}
		}
	}
	server_range_copartition(as, claim);
	for (int32_t t = 0; t < as->nt; t++) {
		const int32_t *mem;
		int32_t k = ch_as_subs(as, t, &mem);
		int32_t base = as->t_base[t], n = as->t_base[t + 1] - base;
		if (k == 0 || n == 0)
			continue;
		int32_t minq = n / k, extra = n % k;
		/* Bucket this topic's claimed partitions by subscriber, ascending. */
		for (int32_t j = 0; j < k; j++) {
			loc[mem[j]] = j;
			bcnt[j] = 0;
		}
		for (int32_t g = base; g < base + n; g++)
			if (claim[g] >= 0 && loc[claim[g]] >= 0)
				bcnt[loc[claim[g]]]++;
		bpos[0] = 0;
		for (int32_t j = 0; j < k; j++)
			bpos[j + 1] = bpos[j] + bcnt[j];
		for (int32_t g = base; g < base + n; g++)
			if (claim[g] >= 0 && loc[claim[g]] >= 0)
				bl[bpos[loc[claim[g]]]++] = g;
		for (int32_t j = k; j > 0; j--)
			bpos[j] = bpos[j - 1];
		bpos[0] = 0;
		/* Keep; bcnt[j] becomes how many more member j takes. */
		for (int32_t j = 0; j < k; j++) {
			int32_t m = mem[j], cur = bcnt[j];
			int32_t keep = cur < minq ? cur : minq;
			for (int32_t x = 0; x < keep; x++)
				as->owner[bl[bpos[j] + x]] = m;
			int32_t rem = minq - cur;
			if (rem < 0 && extra > 0) {
				extra--;
				as->owner[bl[bpos[j] + minq]] = m;
				bcnt[j] = -1; /* settled */
			} else {
				bcnt[j] = rem < 0 ? -1 : rem;
			}
		}
		int32_t g = base;
		for (int32_t j = 0; j < k; j++) {
			if (bcnt[j] < 0)
				continue;
			int32_t rem = bcnt[j], m = mem[j];
			if (extra > 0) {
				rem++;
				extra--;
			}
			while (rem > 0 && g < base + n) {
				if (as->owner[g] < 0) {
					as->owner[g] = m;
					rem--;
				}
				g++;
			}
		}
		for (int32_t j = 0; j < k; j++)
			loc[mem[j]] = -1;
	}
	return CH_OK;
}
