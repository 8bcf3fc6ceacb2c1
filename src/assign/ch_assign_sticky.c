/*
 * ch_assign_sticky.c: the sticky engine behind sticky, cooperative-sticky
 * (client side, KIP-54, KIP-341, KIP-429) and the server-side uniform
 * assignor (KIP-848).
 *
 * 1. Ownership (AbstractStickyAssignor, Kafka 3.x). Of the members claiming
 *    a partition, the one with the highest generation owns it (the others
 *    may have lost it since); two claims at that highest generation cancel
 *    out and nobody owns it (KAFKA-12984). A member keeps nothing of a topic
 *    it no longer subscribes to. The server side passes the current target
 *    assignment and no generations: a partition claimed twice is nobody's.
 *
 * 2a. Equal subscriptions (Kafka's constrainedAssign). With P partitions and
 *    N members everyone ends with floor(P/N) or ceil(P/N), and P % N members
 *    get the ceiling. In member order: a member owning fewer than the floor
 *    keeps all; one owning at least the ceiling keeps the ceiling while
 *    ceiling slots remain; anyone else keeps the floor. Then the rest, in
 *    (partition, topic) order (Kafka 3.5+: one partition of every topic
 *    before the next of any, which spreads each topic over the members), are
 *    dealt round-robin to the members under the floor, and what remains goes
 *    one each to members at the floor. Owned partitions are kept in the same
 *    order. The
 *    ceiling slots go to members that already own that many, so the number
 *    of partitions that change owner is the minimum balance allows:
 *    sum(max(0, owned - floor)) - min(P % N, members owning > floor).
 *    O(P + N).
 *
 * 2b. Unequal subscriptions (our own algorithm; Kafka's generalAssign is a
 *    heuristic that gets quadratic). Keep every valid claim. Give the
 *    unowned partitions topic by topic, the topics with fewest subscribers
 *    first, each to the subscriber with the fewest partitions (dealt in
 *    rounds per load level). Then balance, first moving only partitions
 *    that are not with their previous owner (so that when an optimum exists
 *    that keeps every owned partition, as in the follow-up cooperative
 *    rebalance, it is found), then any:
 *      - per topic: while some owner of the topic has at least two more
 *        partitions than some subscriber of it, move one from the fullest
 *        owner to the emptiest subscriber (two heaps), preferring partitions
 *        that already moved. Every move lowers the sum of squared counts,
 *        so this ends.
 *      - chains: a sweep over load levels, highest first, runs one BFS per
 *        level from the members at that level, through "u owns a partition
 *        of topic t, v subscribes to t", looking for a member two below the
 *        level. Members reached from a higher level are not searched again
 *        (what they reach has at least level-1), so a sweep that finds
 *        nothing costs O(N + S) and proves the assignment optimal (no
 *        cost-reducing path: Harvey, Ladner, Lovasz, Tamir, "Semi-matchings
 *        for bipartite graphs and load balancing", 2003). A found chain moves
 *        one partition along each edge; then both steps repeat.
 *
 * 3. Cooperative (KIP-429): a partition given to a member other than its
 *    owner from step 1, while some other member claims it (any generation),
 *    is left out: its owner revokes it in this rebalance and the next
 *    rebalance assigns it. Kafka leaves out the partitions it revoked or
 *    found claimed twice; we also leave out those a stale member still
 *    claims, so that no two members ever hold a partition at once.
 */
#include "assign/ch_assign_int.h"

#include <stdlib.h>
#include <string.h>

/* An indexed binary heap of local subscriber indices j, keyed by the load of
 * member mem[j]; dir > 0 pops the smallest load, dir < 0 the largest. Ties go
 * to the lower j (member order), for determinism. */
typedef struct ch_as_heap {
	int32_t *h;
	int32_t *pos; /* j -> index in h, or -1 */
	int32_t n;
	int dir;
	const int32_t *load;
	const int32_t *mem;
} ch_as_heap;

/* Whether subscriber a comes before b: the less loaded if dir > 0, the more loaded if dir < 0;
 * ties go to the lower index. */
static inline bool
ch_as_heap_before(const ch_as_heap *hp, int32_t a, int32_t b)
{
	int32_t la = hp->load[hp->mem[a]], lb = hp->load[hp->mem[b]];
	if (la != lb)
		return hp->dir > 0 ? la < lb : la > lb;
	return a < b;
}

/* Moves the heap entry at i up while it is before its parent (less loaded
 * first for dir > 0, more loaded first for dir < 0; ties by member index). */
static void
ch_as_heap_up(ch_as_heap *hp, int32_t i)
{
	int32_t x = hp->h[i];
	while (i > 0) {
		int32_t pi = (i - 1) / 2;
		if (!ch_as_heap_before(hp, x, hp->h[pi]))
			break;
		hp->h[i] = hp->h[pi];
		hp->pos[hp->h[i]] = i;
		i = pi;
	}
	hp->h[i] = x;
	hp->pos[x] = i;
}

/* Moves the heap entry at i down while a child is before it. */
static void
ch_as_heap_down(ch_as_heap *hp, int32_t i)
{
	int32_t x = hp->h[i];
	for (;;) {
		int32_t c = 2 * i + 1;
		if (c >= hp->n)
			break;
		if (c + 1 < hp->n && ch_as_heap_before(hp, hp->h[c + 1], hp->h[c]))
			c++;
		if (!ch_as_heap_before(hp, hp->h[c], x))
			break;
		hp->h[i] = hp->h[c];
		hp->pos[hp->h[i]] = i;
		i = c;
	}
	hp->h[i] = x;
	hp->pos[x] = i;
}

/* Heapifies the hp->n entries already in hp->h and sets their pos (the pos of others is left as
 * it is). */
static void
ch_as_heap_build(ch_as_heap *hp)
{
	for (int32_t i = 0; i < hp->n; i++)
		hp->pos[hp->h[i]] = i;
	for (int32_t i = hp->n / 2 - 1; i >= 0; i--)
		ch_as_heap_down(hp, i);
}

/* Restores heap order after subscriber j's load changed; nothing if j was popped. */
static void
ch_as_heap_fix(ch_as_heap *hp, int32_t j)
{
	int32_t i = hp->pos[j];
	if (i < 0)
		return;
	ch_as_heap_up(hp, i);
	ch_as_heap_down(hp, hp->pos[j]);
}

/* Removes the top member from the heap (its pos becomes -1). */
static void
ch_as_heap_pop(ch_as_heap *hp)
{
	int32_t top = hp->h[0];
	hp->pos[top] = -1;
	if (--hp->n > 0) {
		hp->h[0] = hp->h[hp->n];
		hp->pos[hp->h[0]] = 0;
		ch_as_heap_down(hp, 0);
	}
}

typedef struct ch_as_st {
	ch_as *as;
	int32_t *load; /* per member */
	int32_t *own;  /* per (topic, subscriber) position q in ts_mem[]: how
	                    many partitions of the topic the member has; topic-
	                    major so that per-topic work touches one region */
	int32_t *tord; /* topics, fewest subscribers first */
	int32_t ntord;
	/* scratch sized by the largest topic / subscriber count */
	int32_t *hA, *pA, *hB, *pB, *bcnt, *bpos, *bl, *lcnt;
	uint8_t *kept; /* per partition: still with the member that owned it */
	int32_t *fown; /* per q: of own[], partitions not kept (free to move) */
} ch_as_st;

/* Step 1: claims into as->owner, load and own[] filled. Returns the raw claims
 * of all members (for the cooperative rule) when `raw` is wanted. */
static int32_t *
ch_as_claims(ch_as *as, int32_t *load, bool gen, bool raw)
{
	const ch_assign_input *in = as->in;
	int32_t lo = INT32_MAX, hi = INT32_MIN;
	for (int32_t m = 0; m < as->nm; m++) {
		int32_t g = in->members[m].generation;
		lo = g < lo ? g : lo;
		hi = g > hi ? g : hi;
	}
	/* Generations only matter when they differ. */
	int32_t *best = gen && lo != hi ? ch_as_i32(as, (size_t)as->np, 1) : NULL;
	int32_t *rclaim = raw ? ch_as_i32(as, (size_t)as->np, -1) : NULL;
	if (as->oom)
		return NULL;
	int32_t *owner = as->owner;
	for (int32_t m = 0; m < as->nm; m++) {
		const ch_assign_member *mb = &in->members[as->m_ext[m]];
		int32_t mg = mb->generation;
		for (int32_t i = 0; i < mb->nowned; i++) {
			const ch_assign_owned *o = &mb->owned[i];
			if (o->topic < 0 || o->topic >= as->nt)
				continue;
			int32_t t = as->t_int[o->topic], base = as->t_base[t];
			int32_t n = as->t_base[t + 1] - base;
			for (int32_t x = 0; x < o->n; x++) {
				int32_t p = o->partitions[x];
				if (p < 0 || p >= n)
					continue;
				int32_t g = base + p, c = owner[g];
				if (raw)
					rclaim[g] = rclaim[g] == -1 || rclaim[g] == m ? m : -2;
				if (c == m)
					continue; /* listed twice */
				if (!best) {
					owner[g] = c == -1 ? m : -2;
				} else if (c == -1 || mg > best[g]) {
					owner[g] = m;
					best[g] = mg;
				} else if (mg == best[g]) {
					owner[g] = -2; /* a tie at the highest generation */
				}
			}
		}
	}
	/* Drop double claims and claims on topics the claimer left. */
	if (as->equal) {
		for (int32_t t = 0; t < as->nt; t++)
			for (int32_t g = as->t_base[t]; g < as->t_base[t + 1]; g++) {
				int32_t m = owner[g];
				if (m >= 0 && as->eq_flag[t])
					load[m]++;
				else
					owner[g] = -1;
			}
		return rclaim;
	}
	uint8_t *subd = ch_as_alloc(as, (size_t)as->nm + 1);
	if (!subd)
		return NULL;
	memset(subd, 0, (size_t)as->nm + 1);
	for (int32_t t = 0; t < as->nt; t++) {
		for (int32_t q = as->ts_off[t]; q < as->ts_off[t + 1]; q++)
			subd[as->ts_mem[q]] = 1;
		for (int32_t g = as->t_base[t]; g < as->t_base[t + 1]; g++) {
			int32_t m = owner[g];
			if (m >= 0 && subd[m])
				load[m]++;
			else
				owner[g] = -1;
		}
		for (int32_t q = as->ts_off[t]; q < as->ts_off[t + 1]; q++)
			subd[as->ts_mem[q]] = 0;
	}
	return rclaim;
}

/* Step 2a: equal subscriptions. */
static int
ch_as_constrained(ch_as *as, int32_t *load)
{
	int32_t nm = as->nm, *owner = as->owner;
	int64_t total = 0;
	for (int32_t j = 0; j < as->neq; j++) {
		int32_t t = as->eq_topics[j];
		total += as->t_base[t + 1] - as->t_base[t];
	}
	int32_t minq = (int32_t)(total / nm), rem = (int32_t)(total % nm);
	int32_t over = 0;
	int32_t *cap = ch_as_i32(as, (size_t)nm, 1);
	int32_t *under = ch_as_i32(as, (size_t)nm, 1);
	int32_t *exmin = ch_as_i32(as, (size_t)nm, 1);
	if (as->oom)
		return CH_ERR;
	int32_t nunder = 0, nex = 0;
	bool trim = false;
	for (int32_t m = 0; m < nm; m++) {
		int32_t o = load[m];
		if (o < minq) {
			cap[m] = o;
			under[nunder++] = m;
		} else if (o > minq && over < rem) {
			cap[m] = minq + 1;
			if (++over == rem)
				nex = 0; /* no more ceiling slots to hand out */
		} else {
			cap[m] = minq;
			if (over < rem)
				exmin[nex++] = m;
		}
		trim |= o > cap[m];
		load[m] = 0;
	}
	/* Owned partitions are kept in (partition, topic) order, as Kafka 3.5+
	 * does: one partition of every topic before the next of any. */
	int32_t *ord = trim ? ch_as_i32(as, (size_t)total + 1, 1) : NULL;
	int32_t *act = ch_as_i32(as, (size_t)as->neq + 1, 1);
	if (as->oom)
		return CH_ERR;
	int32_t nord = 0, na = trim ? as->neq : 0;
	memcpy(act, as->eq_topics, (size_t)na * sizeof(int32_t));
	for (int32_t p = 0; na > 0; p++) {
		int32_t k = 0;
		for (int32_t i = 0; i < na; i++) {
			int32_t t = act[i], n = as->t_base[t + 1] - as->t_base[t];
			if (p < n)
				ord[nord++] = as->t_base[t] + p;
			if (p + 1 < n)
				act[k++] = t;
		}
		na = k;
	}
	/* Keep up to cap, in that order (nobody over its cap: keep all). */
	for (int32_t m = 0; m < nm && !trim; m++)
		load[m] = cap[m];
	for (int32_t x = 0; x < nord; x++) {
		int32_t g = ord[x], m = owner[g];
		if (m < 0)
			continue;
		if (load[m] < cap[m])
			load[m]++;
		else
			owner[g] = -1;
	}
	/* Deal the rest in (topic, partition) order: rounds over the members
	 * under the floor, then one each to members at the floor. */
	int32_t ui = 0, ei = 0;
	for (int32_t j = 0; j < as->neq; j++) {
		int32_t t = as->eq_topics[j];
		for (int32_t g = as->t_base[t]; g < as->t_base[t + 1]; g++) {
			if (owner[g] >= 0)
				continue;
			int32_t m;
			if (nunder > 0 && ui >= nunder) {
				/* End of a round: drop those that reached the floor. */
				int32_t w = 0;
				for (int32_t i = 0; i < nunder; i++)
					if (load[under[i]] < minq)
						under[w++] = under[i];
				nunder = w;
				ui = 0;
			}
			if (nunder > 0) {
				m = under[ui++];
				if (load[m] + 1 == minq)
					exmin[nex++] = m;
			} else if (ei < nex) {
				m = exmin[ei++];
			} else {
				return CH_ERR; /* cannot happen: the quotas add up to P */
			}
			owner[g] = m;
			load[m]++;
		}
	}
	return CH_OK;
}

/* Moves partition g from member `from` to `to` (fq, tq: their (member,
 * topic) slots) and updates owner, load and per-topic counts; a partition
 * moved is no longer "kept". */
static void
ch_as_move(ch_as_st *s, int32_t g, int32_t from, int32_t fq, int32_t to, int32_t tq)
{
	s->as->owner[g] = to;
	if (!s->kept[g])
		s->fown[fq]--;
	s->fown[tq]++;
	s->kept[g] = 0;
	s->load[from]--;
	s->load[to]++;
	s->own[fq]--;
	s->own[tq]++;
}

static int
ch_as_lj_cmp(const void *x, const void *y)
{
	const int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
	return a < b ? -1 : a > b;
}

/* Unowned partitions of each topic to its least loaded subscribers: each
 * goes to the subscriber with the fewest partitions, ties to member order.
 * That is dealt in rounds per load level (all members at the lowest level
 * get one each in member order, then those now at the next level join in),
 * which gives what a heap would, at O(1) per partition. */
static void
ch_as_fill(ch_as_st *s)
{
	ch_as *as = s->as;
	int32_t *srt = s->hA, *act = s->hB, *tmp = s->pB;
	for (int32_t i = 0; i < s->ntord; i++) {
		int32_t t = s->tord[i], lo = as->ts_off[t], k = as->ts_off[t + 1] - lo;
		const int32_t *mem = as->ts_mem + lo;
		int32_t base = as->t_base[t], end = as->t_base[t + 1], u = 0;
		for (int32_t g = base; g < end; g++)
			u += as->owner[g] < 0;
		if (u == 0 || k == 0)
			continue;
		/* Subscribers by (load, member order). */
		int32_t mn = INT32_MAX, mx = 0;
		for (int32_t j = 0; j < k; j++) {
			int32_t l = s->load[mem[j]];
			mn = l < mn ? l : mn;
			mx = l > mx ? l : mx;
		}
		uint32_t span = (uint32_t)(mx - mn);
		if (mx >= mn && span <= 4 * (uint32_t)k) {
			int32_t *c = s->lcnt;
			memset(c, 0, ((size_t)span + 2) * sizeof(int32_t));
			for (int32_t j = 0; j < k; j++)
				c[s->load[mem[j]] - mn + 1]++;
			for (int32_t l = 0; l <= mx - mn; l++)
				c[l + 1] += c[l];
			for (int32_t j = 0; j < k; j++)
				srt[c[s->load[mem[j]] - mn]++] = j;
		} else {
			int64_t *kv = (int64_t *)s->bl; /* bl has room: maxn >= 2 * maxk here */
			for (int32_t j = 0; j < k; j++)
				kv[j] = ((int64_t)s->load[mem[j]] << 32) | j;
			qsort(kv, (size_t)k, sizeof(int64_t), ch_as_lj_cmp);
			for (int32_t j = 0; j < k; j++)
				srt[j] = (int32_t)(kv[j] & 0x7fffffff);
		}
		int32_t level = s->load[mem[srt[0]]], na = 0, nx = 0, g = base;
		while (nx < k && s->load[mem[srt[nx]]] == level)
			act[na++] = srt[nx++];
		while (u > 0) {
			for (int32_t a = 0; a < na && u > 0; a++) {
				int32_t jj = act[a];
				while (as->owner[g] >= 0)
					g++;
				as->owner[g] = mem[jj];
				s->load[mem[jj]]++;
				s->own[lo + jj]++;
				s->fown[lo + jj]++;
				u--;
			}
			/* Members at the next level join, the list kept in member order. */
			level++;
			int32_t x0 = nx;
			while (nx < k && s->load[mem[srt[nx]]] == level)
				nx++;
			if (nx > x0) {
				int32_t a = 0, b = x0, w = 0;
				while (a < na || b < nx)
					tmp[w++] = b >= nx || (a < na && act[a] < srt[b])
							   ? act[a++]
							   : srt[b++];
				memcpy(act, tmp, (size_t)w * sizeof(int32_t));
				na = w;
			}
		}
	}
}

/* One balancing pass over every topic; returns whether anything moved.
 * With `freeonly`, only partitions that are not with their previous owner
 * move. */
static bool
ch_as_topic_pass(ch_as_st *s, bool freeonly)
{
	const int32_t *cnt = freeonly ? s->fown : s->own;
	ch_as *as = s->as;
	bool moved = false;
	for (int32_t i = 0; i < s->ntord; i++) {
		int32_t t = s->tord[i], lo = as->ts_off[t], k = as->ts_off[t + 1] - lo;
		const int32_t *mem = as->ts_mem + lo, *c = cnt + lo;
		int32_t *ow = s->own + lo, *fo = s->fown + lo;
		if (k < 2)
			continue;
		int32_t mn = INT32_MAX, mx = -1;
		for (int32_t j = 0; j < k; j++) {
			int32_t l = s->load[mem[j]];
			mn = l < mn ? l : mn;
			if (c[j] > 0 && l > mx)
				mx = l;
		}
		if (mx - mn < 2)
			continue;
		/* Bucket the topic's partitions by owner (local index). */
		int32_t base = as->t_base[t], n = as->t_base[t + 1] - base;
		int32_t *bcnt = s->bcnt, *bpos = s->bpos, *bl = s->bl;
		bpos[0] = 0;
		for (int32_t j = 0; j < k; j++) {
			bcnt[j] = c[j];
			bpos[j + 1] = bpos[j] + bcnt[j];
		}
		/* Owners' local indices: members are ascending in mem[], so a
		 * binary search finds them without a member-sized map. */
		/* Partitions still with their previous owner go first, so the
		 * ones popped (from the end) are those that move for free. */
		for (int32_t j = 0; j < k; j++)
			bcnt[j] = 0;
		for (int pass = freeonly ? 0 : 1; pass >= 0; pass--)
			for (int32_t g = base; g < base + n; g++) {
				int32_t m = as->owner[g], a = 0, b = k;
				if (m < 0 || s->kept[g] != pass)
					continue;
				while (a < b) {
					int32_t mid = a + (b - a) / 2;
					if (mem[mid] < m)
						a = mid + 1;
					else
						b = mid;
				}
				bl[bpos[a] + bcnt[a]++] = g;
			}
		ch_as_heap don = {s->hA, s->pA, 0, -1, s->load, mem};
		ch_as_heap rec = {s->hB, s->pB, k, 1, s->load, mem};
		for (int32_t j = 0; j < k; j++) {
			s->pA[j] = -1;
			rec.h[j] = j;
			if (bcnt[j] > 0)
				don.h[don.n++] = j;
		}
		ch_as_heap_build(&don);
		ch_as_heap_build(&rec);
		while (don.n > 0) {
			int32_t d = don.h[0], r = rec.h[0];
			if (s->load[mem[d]] - s->load[mem[r]] < 2)
				break;
			/* One key changes at a time, so each heap fix-up sees a
			 * heap that is valid everywhere else. */
			int32_t g = bl[bpos[d] + --bcnt[d]];
			as->owner[g] = mem[r];
			if (!s->kept[g])
				fo[d]--;
			fo[r]++;
			s->kept[g] = 0;
			ow[d]--;
			ow[r]++;
			s->load[mem[d]]--;
			if (bcnt[d] == 0)
				ch_as_heap_pop(&don);
			else
				ch_as_heap_fix(&don, d);
			ch_as_heap_fix(&rec, d);
			s->load[mem[r]]++;
			ch_as_heap_fix(&rec, r);
			ch_as_heap_fix(&don, r);
			moved = true;
		}
	}
	return moved;
}

/* The level sweep for a cost-reducing chain; applies the first one found. */
static bool
ch_as_chain(ch_as_st *s, bool freeonly, int32_t *lorder, int32_t *cnt, int32_t *par, int32_t *part,
	    int32_t *queue, uint8_t *vm, uint8_t *vt)
{
	ch_as *as = s->as;
	const int32_t *has = freeonly ? s->fown : s->own;
	if (as->nm <= 0 || as->nt <= 0)
		return false;
	int32_t nm = as->nm, maxl = 0;
	for (int32_t m = 0; m < nm; m++)
		maxl = s->load[m] > maxl ? s->load[m] : maxl;
	/* Members by load, highest first (counting sort). */
	memset(cnt, 0, ((size_t)maxl + 2) * sizeof(int32_t));
	for (int32_t m = 0; m < nm; m++)
		cnt[maxl - s->load[m] + 1]++;
	for (int32_t l = 0; l <= maxl; l++)
		cnt[l + 1] += cnt[l];
	for (int32_t m = 0; m < nm; m++)
		lorder[cnt[maxl - s->load[m]]++] = m;
	memset(vm, 0, (size_t)nm);
	memset(vt, 0, (size_t)as->nt);
	int32_t i = 0;
	while (i < nm) {
		int32_t level = s->load[lorder[i]], qh = 0, qt = 0;
		for (; i < nm && s->load[lorder[i]] == level; i++) {
			int32_t m = lorder[i];
			if (!vm[m]) {
				vm[m] = 1;
				par[m] = -1;
				queue[qt++] = m;
			}
		}
		if (level < 2)
			break;
		while (qh < qt) {
			int32_t u = queue[qh++];
			for (int32_t j = as->sub_off[u]; j < as->sub_off[u + 1]; j++) {
				int32_t t = as->sub[j];
				if (has[as->sub_q[j]] == 0 || vt[t])
					continue;
				vt[t] = 1;
				for (int32_t q = as->ts_off[t]; q < as->ts_off[t + 1]; q++) {
					int32_t v = as->ts_mem[q];
					if (vm[v])
						continue;
					vm[v] = 1;
					par[v] = u;
					part[v] = t;
					if (s->load[v] <= level - 2) {
						/* Move one partition along each edge. */
						for (int32_t x = v; par[x] >= 0; x = par[x]) {
							int32_t y = par[x], tt = part[x], pick = -1;
							for (int32_t g = as->t_base[tt];
							     g < as->t_base[tt + 1]; g++)
								if (as->owner[g] == y &&
								    (!freeonly || !s->kept[g])) {
									pick = g;
									if (!s->kept[g])
										break; /* moves for free */
								}
							ch_as_move(
								s, pick, y,
								as->sub_q[ch_as_slot(as, y, tt)], x,
								as->sub_q[ch_as_slot(as, x, tt)]);
						}
						return true;
					}
					queue[qt++] = v;
				}
			}
		}
	}
	return false;
}

typedef struct ch_as_tk {
	int32_t k, t;
} ch_as_tk;

/* qsort order of (subscriber count, topic) pairs: fewest subscribers first, then by topic index. */
static int
ch_as_tk_cmp(const void *x, const void *y)
{
	const ch_as_tk *a = x, *b = y;
	if (a->k != b->k)
		return a->k < b->k ? -1 : 1;
	return a->t < b->t ? -1 : a->t > b->t;
}

/* Step 2b: unequal subscriptions. */
static int
ch_as_general(ch_as *as, int32_t *load)
{
	ch_as_st s = {.as = as, .load = load};
	int32_t nsub = as->sub_off[as->nm], maxk = 1, maxn = 1;
	s.own = ch_as_i32(as, (size_t)nsub, 0);
	s.tord = ch_as_i32(as, (size_t)as->nt, 1);
	ch_as_tk *tk = ch_as_alloc(as, ((size_t)as->nt + 1) * sizeof(*tk));
	if (as->oom)
		return CH_ERR;
	int32_t *loc = ch_as_i32(as, (size_t)as->nm, -1);
	if (!loc)
		return CH_ERR;
	for (int32_t t = 0; t < as->nt; t++) {
		int32_t lo = as->ts_off[t], k = as->ts_off[t + 1] - lo;
		int32_t n = as->t_base[t + 1] - as->t_base[t];
		if (k == 0 || n == 0)
			continue;
		maxk = k > maxk ? k : maxk;
		maxn = n > maxn ? n : maxn;
		tk[s.ntord++] = (ch_as_tk){k, t};
		for (int32_t q = lo; q < lo + k; q++)
			loc[as->ts_mem[q]] = q;
		for (int32_t g = as->t_base[t]; g < as->t_base[t] + n; g++)
			if (as->owner[g] >= 0)
				s.own[loc[as->owner[g]]]++;
		for (int32_t q = lo; q < lo + k; q++)
			loc[as->ts_mem[q]] = -1;
	}
	qsort(tk, (size_t)s.ntord, sizeof(*tk), ch_as_tk_cmp);
	for (int32_t i = 0; i < s.ntord; i++)
		s.tord[i] = tk[i].t;
	s.hA = ch_as_i32(as, (size_t)maxk, 1);
	s.pA = ch_as_i32(as, (size_t)maxk, 1);
	s.hB = ch_as_i32(as, (size_t)maxk, 1);
	s.pB = ch_as_i32(as, (size_t)maxk, 1);
	s.bcnt = ch_as_i32(as, (size_t)maxk, 1);
	s.bpos = ch_as_i32(as, (size_t)maxk + 1, 1);
	s.bl = ch_as_i32(as, (size_t)(maxn > 2 * maxk ? maxn : 2 * maxk), 1);
	s.lcnt = ch_as_i32(as, 4 * (size_t)maxk + 2, 1);
	if (as->oom)
		return CH_ERR;

	s.kept = ch_as_alloc(as, (size_t)as->np + 1);
	s.fown = ch_as_i32(as, (size_t)nsub, 0);
	if (as->oom)
		return CH_ERR;
	for (int32_t g = 0; g < as->np; g++)
		s.kept[g] = as->owner[g] >= 0;
	ch_as_fill(&s);
	while (ch_as_topic_pass(&s, true))
		;
	int32_t maxl = 0;
	for (int32_t m = 0; m < as->nm; m++)
		maxl = load[m] > maxl ? load[m] : maxl;
	int32_t *lorder = ch_as_i32(as, (size_t)as->nm, 1);
	int32_t *cnt = ch_as_i32(as, (size_t)maxl + 2, 1);
	int32_t *par = ch_as_i32(as, (size_t)as->nm, 1);
	int32_t *part = ch_as_i32(as, (size_t)as->nm, 1);
	int32_t *queue = ch_as_i32(as, (size_t)as->nm, 1);
	uint8_t *vm = ch_as_alloc(as, (size_t)as->nm + 1);
	uint8_t *vt = ch_as_alloc(as, (size_t)as->nt + 1);
	if (as->oom)
		return CH_ERR;
	/* Balance with free partitions first: if an optimal assignment exists
	 * that keeps every owned partition (the follow-up cooperative
	 * rebalance), this finds one. Then with all. Loads never rise above
	 * the current maximum, so cnt stays big enough. */
	while (ch_as_chain(&s, true, lorder, cnt, par, part, queue, vm, vt))
		while (ch_as_topic_pass(&s, true))
			;
	while (ch_as_topic_pass(&s, false))
		;
	while (ch_as_chain(&s, false, lorder, cnt, par, part, queue, vm, vt))
		while (ch_as_topic_pass(&s, false))
			;
	return CH_OK;
}

int
ch_as_sticky(ch_as *as, bool coop, bool gen)
{
	if (as->nm == 0)
		return CH_OK;
	int32_t *load = ch_as_i32(as, (size_t)as->nm, 0);
	if (!load || (!as->equal && ch_as_expand(as) != CH_OK))
		return CH_ERR;
	int32_t *rclaim = ch_as_claims(as, load, gen, coop);
	int32_t *owner0 = coop ? ch_as_i32(as, (size_t)as->np, 1) : NULL;
	if (as->oom)
		return CH_ERR;
	if (coop)
		memcpy(owner0, as->owner, (size_t)as->np * sizeof(int32_t));

	int rc = as->equal ? ch_as_constrained(as, load) : ch_as_general(as, load);
	if (rc != CH_OK)
		return rc;

	if (coop) {
		/* Withhold g from m unless m owned it or nobody else claims it. */
		for (int32_t g = 0; g < as->np; g++) {
			int32_t m = as->owner[g], c = rclaim[g];
			if (m >= 0 && m != owner0[g] && c != -1 && c != m)
				as->owner[g] = -1;
		}
	}
	return CH_OK;
}
