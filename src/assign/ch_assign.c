/*
 * ch_assign.c: input preparation, result building and dispatch.
 *
 * Preparation is where order independence is won: topics are sorted by name
 * and members by Kafka's MemberInfo order, and from then on the assignors see
 * only integer ids in that order. It is also where most of the fixed cost of
 * a run goes at large sizes (one pass over every subscription and every
 * owned partition), so it avoids per-element hashing: subscriptions arrive as
 * topic indices, and sorting a member's topics uses a marker array when the
 * member subscribes to a sizeable share of all topics.
 */
#include "assign/ch_assign_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_hash.h"

void *
ch_as_alloc(ch_as *as, size_t n)
{
	if (as->oom)
		return NULL;
	if (as->nblk == as->capblk) {
		int32_t cap = as->capblk ? as->capblk * 2 : 32;
		void **nb = realloc(as->blk, (size_t)cap * sizeof(*nb));
		if (!nb) {
			as->oom = true;
			return NULL;
		}
		as->blk = nb;
		as->capblk = cap;
	}
	void *p = malloc(n ? n : 1);
	if (!p) {
		as->oom = true;
		return NULL;
	}
	as->blk[as->nblk++] = p;
	return p;
}

int32_t *
ch_as_i32(ch_as *as, size_t n, int fill)
{
	int32_t *p = ch_as_alloc(as, n * sizeof(int32_t));
	if (p && fill != 1)
		memset(p, fill == -1 ? 0xff : 0, n * sizeof(int32_t));
	return p;
}

void
ch_as_free(ch_as *as)
{
	for (int32_t i = 0; i < as->nblk; i++)
		free(as->blk[i]);
	free(as->blk);
	memset(as, 0, sizeof(*as));
}

int
ch_as_strcmp(ch_str a, ch_str b)
{
	int32_t la = a.len < 0 ? 0 : a.len, lb = b.len < 0 ? 0 : b.len;
	int32_t n = la < lb ? la : lb;
	int c = n ? memcmp(a.p, b.p, (size_t)n) : 0;
	if (c)
		return c;
	return la < lb ? -1 : la > lb;
}

typedef struct ch_as_key {
	ch_str a, b;
	int32_t idx;
} ch_as_key;

static int
ch_as_topic_cmp(const void *x, const void *y)
{
	const ch_as_key *a = x, *b = y;
	return ch_as_strcmp(a->a, b->a);
}

/* Kafka's MemberInfo.compareTo: members with a group.instance.id first,
 * ordered by it; then the others by member id. Member id breaks ties between
 * equal instance ids, which only invalid input has. */
static int
ch_as_member_cmp(const void *x, const void *y)
{
	const ch_as_key *a = x, *b = y;
	bool sa = a->a.len >= 0, sb = b->a.len >= 0;
	if (sa != sb)
		return sa ? -1 : 1;
	if (sa) {
		int c = ch_as_strcmp(a->a, b->a);
		if (c)
			return c;
	}
	return ch_as_strcmp(a->b, b->b);
}

static int
ch_as_i32_cmp(const void *x, const void *y)
{
	int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
	return a < b ? -1 : a > b;
}

int32_t
ch_as_slot(const ch_as *as, int32_t m, int32_t t)
{
	int32_t lo = as->sub_off[m], hi = as->sub_off[m + 1];
	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;
		if (as->sub[mid] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < as->sub_off[m + 1] && as->sub[lo] == t ? lo : -1;
}

int
ch_as_prep(ch_as *as, const ch_assign_input *in, char *errstr, size_t errlen)
{
	memset(as, 0, sizeof(*as));
	as->in = in;
	int32_t nt = in->ntopics > 0 ? in->ntopics : 0;
	int32_t nm = in->nmembers > 0 ? in->nmembers : 0;
	as->nt = nt;
	as->nm = nm;

	/* Topics by name. */
	ch_as_key *k = ch_as_alloc(as, (size_t)(nt > nm ? nt : nm) * sizeof(*k) + 1);
	as->t_ext = ch_as_i32(as, (size_t)nt, 1);
	as->t_int = ch_as_i32(as, (size_t)nt, 1);
	as->t_base = ch_as_i32(as, (size_t)nt + 1, 1);
	if (as->oom)
		goto oom;
	for (int32_t i = 0; i < nt; i++)
		k[i] = (ch_as_key){in->topics[i].name, CH_STR_NULL, i};
	qsort(k, (size_t)nt, sizeof(*k), ch_as_topic_cmp);
	int64_t np = 0;
	for (int32_t t = 0; t < nt; t++) {
		if (t > 0 && ch_as_strcmp(k[t - 1].a, k[t].a) == 0) {
			snprintf(errstr, errlen, "duplicate topic %.*s", (int)k[t].a.len, k[t].a.p);
			return CH_ERR;
		}
		as->t_ext[t] = k[t].idx;
		as->t_int[k[t].idx] = t;
		as->t_base[t] = (int32_t)np;
		int32_t n = in->topics[k[t].idx].partitions;
		np += n > 0 ? n : 0;
		if (np > INT32_MAX - 1) {
			snprintf(errstr, errlen, "more than 2^31 partitions");
			return CH_ERR;
		}
	}
	as->t_base[nt] = (int32_t)np;
	as->np = (int32_t)np;

	/* Members in MemberInfo order. */
	as->m_ext = ch_as_i32(as, (size_t)nm, 1);
	if (as->oom)
		goto oom;
	for (int32_t i = 0; i < nm; i++)
		k[i] = (ch_as_key){in->members[i].instance_id, in->members[i].member_id, i};
	qsort(k, (size_t)nm, sizeof(*k), ch_as_member_cmp);
	for (int32_t m = 0; m < nm; m++) {
		as->m_ext[m] = k[m].idx;
		if (m > 0 && ch_as_strcmp(k[m - 1].b, k[m].b) == 0) {
			snprintf(errstr, errlen, "duplicate member id %.*s", (int)k[m].b.len,
				 k[m].b.p);
			return CH_ERR;
		}
	}
	/* Sorting by instance id first can leave equal member ids apart. */
	bool statics = false;
	for (int32_t i = 0; i < nm; i++)
		statics |= in->members[i].instance_id.len >= 0;
	for (int32_t i = 0; i < nm && statics; i++)
		k[i] = (ch_as_key){in->members[i].member_id, CH_STR_NULL, i};
	if (statics)
		qsort(k, (size_t)nm, sizeof(*k), ch_as_topic_cmp);
	for (int32_t i = 1; i < nm && statics; i++)
		if (ch_as_strcmp(k[i - 1].a, k[i].a) == 0) {
			snprintf(errstr, errlen, "duplicate member id %.*s", (int)k[i].a.len,
				 k[i].a.p);
			return CH_ERR;
		}

	/* Equal subscriptions? Each member is compared with the first in O(its
	 * topics), with a stamp array instead of sorting: the common case of a
	 * large group then never builds per-member topic lists. */
	as->eq_flag = ch_as_alloc(as, (size_t)nt + 1);
	int32_t *stamp = ch_as_i32(as, (size_t)nt + 1, 0);
	if (as->oom)
		goto oom;
	memset(as->eq_flag, 0, (size_t)nt + 1);
	as->equal = true;
	int32_t n0 = 0;
	const ch_assign_member *m0 = nm ? &in->members[as->m_ext[0]] : NULL;
	for (int32_t m = 0; m < nm && as->equal; m++) {
		const ch_assign_member *mb = &in->members[as->m_ext[m]];
		int32_t cnt = 0;
		/* A caller that interns subscriptions (the coordinator) passes
		 * one array to all members that share it: O(1) each. */
		if (m > 0 && mb->topics == m0->topics && mb->ntopics == m0->ntopics)
			continue;
		bool ok = true;
		for (int32_t j = 0; j < mb->ntopics; j++) {
			int32_t x = mb->topics[j];
			if (x < 0 || x >= nt)
				continue;
			int32_t t = as->t_int[x];
			if (stamp[t] == m + 1)
				continue;
			stamp[t] = m + 1;
			cnt++;
			if (m == 0)
				as->eq_flag[t] = 1;
			else
				ok &= as->eq_flag[t];
		}
		if (m == 0)
			n0 = cnt;
		else
			as->equal = ok && cnt == n0;
	}
	as->eq_topics = ch_as_i32(as, (size_t)n0 + 1, 1);
	if (as->oom)
		goto oom;
	for (int32_t t = 0; t < nt; t++)
		if (as->eq_flag[t])
			as->eq_topics[as->neq++] = t;
	as->ident = ch_as_i32(as, (size_t)nm + 1, 1);
	if (as->oom)
		goto oom;
	for (int32_t m = 0; m < nm; m++)
		as->ident[m] = m;

	as->owner = ch_as_i32(as, (size_t)as->np, -1);
	if (as->oom)
		goto oom;
	return CH_OK;
oom:
	snprintf(errstr, errlen, "out of memory");
	return CH_ERR;
}

/* Per-member topic lists and per-topic subscriber lists (see the header). */
int
ch_as_expand(ch_as *as)
{
	const ch_assign_input *in = as->in;
	int32_t nt = as->nt, nm = as->nm;
	if (as->sub_off)
		return as->oom ? CH_ERR : CH_OK;
	/* Subscriptions: internal ids, sorted, deduplicated. */
	int64_t nsub = 0;
	for (int32_t i = 0; i < nm; i++)
		nsub += in->members[i].ntopics > 0 ? in->members[i].ntopics : 0;
	if (nsub > INT32_MAX - 1) {
		as->oom = true;
		return CH_ERR;
	}
	as->sub_off = ch_as_i32(as, (size_t)nm + 1, 1);
	as->sub = ch_as_i32(as, (size_t)nsub, 1);
	uint8_t *mark = ch_as_alloc(as, (size_t)nt + 1);
	if (as->oom)
		return CH_ERR;
	memset(mark, 0, (size_t)nt + 1);
	int32_t pos = 0;
	for (int32_t m = 0; m < nm; m++) {
		const ch_assign_member *mb = &in->members[as->m_ext[m]];
		as->sub_off[m] = pos;
		int32_t start = pos;
		for (int32_t j = 0; j < mb->ntopics; j++) {
			int32_t x = mb->topics[j];
			if (x >= 0 && x < nt)
				as->sub[pos++] = as->t_int[x];
		}
		int32_t cnt = pos - start;
		if ((int64_t)cnt * 16 > nt) {
			/* Dense: a marker pass is cheaper than sorting. */
			for (int32_t j = start; j < pos; j++)
				mark[as->sub[j]] = 1;
			pos = start;
			for (int32_t t = 0; t < nt; t++)
				if (mark[t]) {
					mark[t] = 0;
					as->sub[pos++] = t;
				}
		} else if (cnt > 1) {
			qsort(as->sub + start, (size_t)cnt, sizeof(int32_t), ch_as_i32_cmp);
			int32_t w = start + 1;
			for (int32_t j = start + 1; j < pos; j++)
				if (as->sub[j] != as->sub[w - 1])
					as->sub[w++] = as->sub[j];
			pos = w;
		}
	}
	as->sub_off[nm] = pos;

	/* Subscribers per topic. */
	as->ts_off = ch_as_i32(as, (size_t)nt + 1, 0);
	as->ts_mem = ch_as_i32(as, (size_t)pos, 1);
	as->ts_slot = ch_as_i32(as, (size_t)pos, 1);
	as->sub_q = ch_as_i32(as, (size_t)pos, 1);
	int32_t *fillp = ch_as_i32(as, (size_t)nt + 1, 1);
	if (as->oom)
		return CH_ERR;
	for (int32_t j = 0; j < pos; j++)
		as->ts_off[as->sub[j] + 1]++;
	for (int32_t t = 0; t < nt; t++)
		as->ts_off[t + 1] += as->ts_off[t];
	memcpy(fillp, as->ts_off, ((size_t)nt + 1) * sizeof(int32_t));
	for (int32_t m = 0; m < nm; m++)
		for (int32_t j = as->sub_off[m]; j < as->sub_off[m + 1]; j++) {
			int32_t q = fillp[as->sub[j]]++;
			as->ts_mem[q] = m;
			as->ts_slot[q] = j;
			as->sub_q[j] = q;
		}

	return as->oom ? CH_ERR : CH_OK;
}

int
ch_as_result(ch_as *as, ch_assign_result *out)
{
	int32_t nm = as->nm;
	out->nmembers = nm;
	out->off = calloc((size_t)nm + 1, sizeof(int32_t));
	int32_t *cnt = ch_as_i32(as, (size_t)nm, 0);
	if (!out->off || !cnt) {
		free(out->off);
		out->off = NULL;
		return CH_ERR;
	}
	int32_t total = 0;
	for (int32_t g = 0; g < as->np; g++)
		if (as->owner[g] >= 0) {
			cnt[as->owner[g]]++;
			total++;
		}
	out->tps = malloc((size_t)(total ? total : 1) * sizeof(ch_assign_tp));
	if (!out->tps) {
		free(out->off);
		out->off = NULL;
		return CH_ERR;
	}
	/* Offsets in the caller's member order. */
	for (int32_t m = 0; m < nm; m++)
		out->off[as->m_ext[m] + 1] = cnt[m];
	for (int32_t i = 0; i < nm; i++)
		out->off[i + 1] += out->off[i];
	for (int32_t m = 0; m < nm; m++)
		cnt[m] = out->off[as->m_ext[m]];
	for (int32_t t = 0; t < as->nt; t++) {
		int32_t base = as->t_base[t], ext = as->t_ext[t];
		for (int32_t g = base; g < as->t_base[t + 1]; g++) {
			int32_t m = as->owner[g];
			if (m >= 0)
				out->tps[cnt[m]++] = (ch_assign_tp){ext, g - base};
		}
	}
	return CH_OK;
}

int
ch_assign(ch_assign_kind kind, const ch_assign_input *in, ch_assign_result *out)
{
	ch_as as;
	memset(out, 0, sizeof(*out));
	if (ch_as_prep(&as, in, out->errstr, sizeof(out->errstr)) != CH_OK) {
		ch_as_free(&as);
		return CH_ERR;
	}
	int rc;
	switch (kind) {
	case CH_ASSIGN_RANGE:
		rc = ch_as_range(&as);
		break;
	case CH_ASSIGN_ROUNDROBIN:
		rc = ch_as_roundrobin(&as);
		break;
	case CH_ASSIGN_STICKY:
		rc = ch_as_sticky(&as, false, true);
		break;
	case CH_ASSIGN_COOPERATIVE_STICKY:
		rc = ch_as_sticky(&as, true, true);
		break;
	case CH_ASSIGN_SERVER_UNIFORM:
		rc = ch_as_sticky(&as, false, false);
		break;
	case CH_ASSIGN_SERVER_RANGE:
		rc = ch_as_server_range(&as);
		break;
	default:
		snprintf(out->errstr, sizeof(out->errstr), "unknown assignor %d", (int)kind);
		ch_as_free(&as);
		return CH_ERR;
	}
	if (rc == CH_OK && !as.oom)
		rc = ch_as_result(&as, out);
	else
		rc = CH_ERR;
	if (rc != CH_OK)
		snprintf(out->errstr, sizeof(out->errstr), "out of memory");
	ch_as_free(&as);
	return rc;
}

void
ch_assign_result_free(ch_assign_result *out)
{
	free(out->tps);
	free(out->off);
	out->tps = NULL;
	out->off = NULL;
	out->nmembers = 0;
}

static const char *const ch_assign_names[CH_ASSIGN_KIND_COUNT] = {
	[CH_ASSIGN_RANGE] = "range",
	[CH_ASSIGN_ROUNDROBIN] = "roundrobin",
	[CH_ASSIGN_STICKY] = "sticky",
	[CH_ASSIGN_COOPERATIVE_STICKY] = "cooperative-sticky",
	[CH_ASSIGN_SERVER_UNIFORM] = "uniform",
	[CH_ASSIGN_SERVER_RANGE] = "range",
};

const char *
ch_assign_name(ch_assign_kind kind)
{
	return (unsigned)kind < CH_ASSIGN_KIND_COUNT ? ch_assign_names[kind] : "unknown";
}

int
ch_assign_kind_by_name(ch_str name)
{
	for (int k = CH_ASSIGN_RANGE; k <= CH_ASSIGN_COOPERATIVE_STICKY; k++)
		if (ch_str_eq_c(name, ch_assign_names[k]))
			return k;
	return -1;
}

bool
ch_assign_is_cooperative(ch_assign_kind kind)
{
	/* KIP-429: of Kafka's client assignors only cooperative-sticky lists
	 * COOPERATIVE among its supported protocols. */
	return kind == CH_ASSIGN_COOPERATIVE_STICKY;
}

/* Topic index: open addressing over a power-of-two table of caller indices. */
struct ch_assign_topic_index {
	const ch_assign_topic *topics;
	uint32_t mask;
	int32_t slot[];
};

ch_assign_topic_index *
ch_assign_topic_index_new(const ch_assign_topic *topics, int32_t ntopics)
{
	uint32_t cap = 8;
	while (cap < (uint32_t)(ntopics > 0 ? ntopics : 0) * 2)
		cap <<= 1;
	ch_assign_topic_index *ix = malloc(sizeof(*ix) + cap * sizeof(int32_t));
	if (!ix)
		return NULL;
	ix->topics = topics;
	ix->mask = cap - 1;
	memset(ix->slot, 0xff, cap * sizeof(int32_t));
	for (int32_t i = 0; i < ntopics; i++) {
		ch_str s = topics[i].name;
		uint32_t h = (uint32_t)ch_hash_bytes(s.p, s.len > 0 ? (size_t)s.len : 0) & ix->mask;
		while (ix->slot[h] >= 0 && !ch_str_eq(topics[ix->slot[h]].name, s))
			h = (h + 1) & ix->mask;
		if (ix->slot[h] < 0)
			ix->slot[h] = i; /* duplicates keep the first; ch_assign rejects them */
	}
	return ix;
}

int32_t
ch_assign_topic_index_get(const ch_assign_topic_index *ix, ch_str name)
{
	uint32_t h =
		(uint32_t)ch_hash_bytes(name.p, name.len > 0 ? (size_t)name.len : 0) & ix->mask;
	while (ix->slot[h] >= 0) {
		if (ch_str_eq(ix->topics[ix->slot[h]].name, name))
			return ix->slot[h];
		h = (h + 1) & ix->mask;
	}
	return -1;
}

void
ch_assign_topic_index_free(ch_assign_topic_index *ix)
{
	free(ix);
}
