/*
 * ch_assign_proto.c: the consumer embedded protocol glue (see ch_assign_proto.h).
 */
#include "assign/ch_assign_proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/ch_rd.h"
#include "proto/ch_wr.h"

#define MAXV 3 /* the highest version of both messages we know */

/* ---- messages ---- */

/* Reads the int16 version that starts an embedded consumer protocol message; CH_ERR if it is
 * missing or negative. */
static int
read_version(ch_rd *r, int16_t *version)
{
	int16_t v = ch_rd_i16(r);
	if (!ch_rd_ok(r) || v < 0)
		return CH_ERR;
	*version = v;
	return CH_OK;
}

int
ch_assign_subscription_decode(const uint8_t *p, size_t len, ch_arena *a,
			      ch_assign_subscription *out)
{
	ch_rd r;
	ch_rd_init(&r, p, len);
	ch_ConsumerProtocolSubscription_init(&out->m);
	out->version = 0;
	if (read_version(&r, &out->version) != CH_OK)
		return CH_ERR;
	int16_t v = out->version > MAXV ? MAXV : out->version;
	/* Trailing bytes (fields of a newer version) are ignored. */
	return ch_ConsumerProtocolSubscription_decode(&r, a, v, &out->m) == 0 ? CH_OK : CH_ERR;
}

int
ch_assign_assignment_decode(const uint8_t *p, size_t len, ch_arena *a, ch_assign_assignment *out)
{
	ch_rd r;
	ch_rd_init(&r, p, len);
	ch_ConsumerProtocolAssignment_init(&out->m);
	out->version = 0;
	if (read_version(&r, &out->version) != CH_OK)
		return CH_ERR;
	int16_t v = out->version > MAXV ? MAXV : out->version;
	return ch_ConsumerProtocolAssignment_decode(&r, a, v, &out->m) == 0 ? CH_OK : CH_ERR;
}

void
ch_assign_subscription_encode(ch_buf *b, int16_t version, const ch_ConsumerProtocolSubscription *m)
{
	ch_wr_i16(b, version);
	ch_ConsumerProtocolSubscription_encode(b,
					       version > MAXV ? MAXV
					       : version < 0  ? 0
							      : version,
					       m);
}

void
ch_assign_assignment_encode(ch_buf *b, int16_t version, const ch_ConsumerProtocolAssignment *m)
{
	ch_wr_i16(b, version);
	ch_ConsumerProtocolAssignment_encode(b,
					     version > MAXV ? MAXV
					     : version < 0  ? 0
							    : version,
					     m);
}

/* ---- leader side ---- */

static void *
arena_array(ch_arena *a, size_t n, size_t size)
{
	return ch_arena_alloc(a, (n ? n : 1) * size);
}

int
ch_assign_group_decode(ch_assign_group *g, const ch_assign_join_member *members, int32_t n)
{
	memset(g, 0, sizeof(*g));
	ch_arena_init(&g->arena);
	g->nmembers = n > 0 ? n : 0;
	g->min_version = MAXV;
	g->subs = arena_array(&g->arena, (size_t)g->nmembers, sizeof(*g->subs));
	g->bad = arena_array(&g->arena, (size_t)g->nmembers, sizeof(*g->bad));
	ch_assign_member *ms = arena_array(&g->arena, (size_t)g->nmembers, sizeof(*ms));
	if (!g->subs || !g->bad || !ms) {
		snprintf(g->errstr, sizeof(g->errstr), "out of memory");
		return CH_ERR;
	}
	bool any = false;
	for (int32_t i = 0; i < g->nmembers; i++) {
		const ch_assign_join_member *jm = &members[i];
		ms[i].member_id = jm->member_id;
		ms[i].instance_id = jm->instance_id;
		ms[i].rack = CH_STR_NULL;
		ms[i].generation = CH_ASSIGN_NO_GENERATION;
		if (jm->metadata.len < 0 ||
		    ch_assign_subscription_decode(jm->metadata.p, (size_t)jm->metadata.len,
						  &g->arena, &g->subs[i]) != CH_OK) {
			g->bad[i] = true;
			ch_ConsumerProtocolSubscription_init(&g->subs[i].m);
			g->subs[i].m.Topics_n = 0;
			continue;
		}
		int16_t v = g->subs[i].version > MAXV ? MAXV : g->subs[i].version;
		if (!any || v < g->min_version)
			g->min_version = v;
		any = true;
	}
	g->in.members = ms;
	g->in.nmembers = g->nmembers;
	return CH_OK;
}

/* qsort order of wire strings: bytewise, a prefix first. */
static int
str_cmp(const void *a, const void *b)
{
	const ch_str *x = a, *y = b;
	int32_t n = x->len < y->len ? x->len : y->len;
	int c = n > 0 ? memcmp(x->p, y->p, (size_t)n) : 0;
	if (c)
		return c;
	return (x->len > y->len) - (x->len < y->len);
}

/* True when a and b list the same topics in the same order. */
static bool
same_topics(const ch_assign_subscription *a, const ch_assign_subscription *b)
{
	if (a->m.Topics_n != b->m.Topics_n)
		return false;
	for (int32_t j = 0; j < a->m.Topics_n; j++)
		if (str_cmp(&a->m.Topics[j], &b->m.Topics[j]) != 0)
			return false;
	return true;
}

int32_t
ch_assign_group_topics(ch_assign_group *g, const ch_str **out)
{
	size_t total = 0;
	for (int32_t i = 0; i < g->nmembers; i++)
		total += g->subs[i].m.Topics_n > 0 ? (size_t)g->subs[i].m.Topics_n : 0;
	ch_str *all = arena_array(&g->arena, total, sizeof(*all));
	if (!all)
		return -1;
	size_t k = 0;
	const ch_assign_subscription *last = NULL; /* the last member whose topics were taken */
	for (int32_t i = 0; i < g->nmembers; i++) {
		const ch_assign_subscription *s = &g->subs[i];
		if (last && same_topics(last, s))
			continue; /* a large group mostly subscribes alike: sort each list once */
		for (int32_t j = 0; j < s->m.Topics_n; j++)
			all[k++] = s->m.Topics[j];
		last = s;
	}
	if (k > 1)
		qsort(all, k, sizeof(*all), str_cmp);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (u == 0 || str_cmp(&all[u - 1], &all[i]) != 0)
			all[u++] = all[i];
	*out = all;
	return (int32_t)u;
}

/* Owned partitions from the sticky user data (copied into the arena). */
static int
owned_from_sticky(ch_assign_group *g, const ch_assign_topic_index *ix, ch_bytes ud,
		  ch_assign_member *m)
{
	if (ud.len <= 0)
		return CH_OK; /* null or empty: no previous assignment (Java) */
	ch_assign_sticky_data d;
	if (ch_assign_sticky_data_decode(ud.p, (size_t)ud.len, &d) != CH_OK)
		return CH_OK; /* unparseable: ignored, DEFAULT_GENERATION (Java) */
	int rc = CH_OK;
	ch_assign_owned *ow = arena_array(&g->arena, (size_t)d.ntopics, sizeof(*ow));
	if (!ow)
		rc = CH_ERR;
	for (int32_t t = 0; rc == CH_OK && t < d.ntopics; t++) {
		int32_t *ps = arena_array(&g->arena, (size_t)d.topics[t].n, sizeof(int32_t));
		if (!ps) {
			rc = CH_ERR;
			break;
		}
		if (d.topics[t].n > 0)
			memcpy(ps, d.topics[t].partitions, (size_t)d.topics[t].n * sizeof(int32_t));
		ow[t].topic = ch_assign_topic_index_get(ix, d.topics[t].topic);
		ow[t].partitions = ps;
		ow[t].n = d.topics[t].n;
	}
	if (rc == CH_OK) {
		m->owned = ow;
		m->nowned = d.ntopics;
		m->generation = d.generation;
	}
	ch_assign_sticky_data_free(&d);
	return rc;
}

/* The generation a cooperative-sticky member on subscription v0-v1 sends. */
static int32_t
coop_generation(ch_bytes ud)
{
	if (ud.len < 0)
		return CH_ASSIGN_NO_GENERATION;
	if (ud.len > 4) {
		/* librdkafka sends its StickyAssignorUserData v1 here. */
		ch_assign_sticky_data d;
		if (ch_assign_sticky_data_decode(ud.p, (size_t)ud.len, &d) == CH_OK) {
			int32_t gen = d.generation;
			ch_assign_sticky_data_free(&d);
			return gen;
		}
	}
	return ch_assign_coop_data_decode(ud.p, (size_t)ud.len);
}

int
ch_assign_group_build(ch_assign_group *g, ch_assign_kind kind, const ch_assign_topic *topics,
		      int32_t ntopics)
{
	g->in.topics = topics;
	g->in.ntopics = ntopics;
	ch_assign_topic_index *ix = ch_assign_topic_index_new(topics, ntopics);
	int32_t *stamp = calloc((size_t)(ntopics > 0 ? ntopics : 1), sizeof(int32_t));
	if (!ix || !stamp) {
		ch_assign_topic_index_free(ix);
		free(stamp);
		snprintf(g->errstr, sizeof(g->errstr), "out of memory");
		return CH_ERR;
	}
	ch_assign_member *ms = (ch_assign_member *)g->in.members;
	int rc = CH_OK;
	for (int32_t i = 0; rc == CH_OK && i < g->nmembers; i++) {
		ch_assign_member *m = &ms[i];
		const ch_assign_subscription *s = &g->subs[i];
		m->topics = NULL;
		m->ntopics = 0;
		m->owned = NULL;
		m->nowned = 0;
		m->generation = CH_ASSIGN_NO_GENERATION;
		m->rack = CH_STR_NULL;
		if (g->bad[i])
			continue;
		int16_t v = s->version > MAXV ? MAXV : s->version;
		if (v >= 3)
			m->rack = s->m.RackId;
		/* Subscribed topics: known ones, each once. */
		int32_t *ts =
			arena_array(&g->arena, (size_t)(s->m.Topics_n > 0 ? s->m.Topics_n : 0),
				    sizeof(int32_t));
		if (!ts) {
			rc = CH_ERR;
			break;
		}
		for (int32_t j = 0; j < s->m.Topics_n; j++) {
			int32_t t = ch_assign_topic_index_get(ix, s->m.Topics[j]);
			if (t < 0 || stamp[t] == i + 1)
				continue;
			stamp[t] = i + 1;
			ts[m->ntopics++] = t;
		}
		m->topics = ts;
		if (kind == CH_ASSIGN_STICKY) {
			rc = owned_from_sticky(g, ix, s->m.UserData, m);
			continue;
		}
		if (v >= 1 && s->m.OwnedPartitions_n > 0) {
			ch_assign_owned *ow =
				arena_array(&g->arena, (size_t)s->m.OwnedPartitions_n, sizeof(*ow));
			if (!ow) {
				rc = CH_ERR;
				break;
			}
			for (int32_t j = 0; j < s->m.OwnedPartitions_n; j++) {
				const ch_ConsumerProtocolSubscription_TopicPartition *tp =
					&s->m.OwnedPartitions[j];
				ow[j].topic = ch_assign_topic_index_get(ix, tp->Topic);
				ow[j].partitions = tp->Partitions;
				ow[j].n = tp->Partitions_n > 0 ? tp->Partitions_n : 0;
			}
			m->owned = ow;
			m->nowned = s->m.OwnedPartitions_n;
		}
		if (v >= 2)
			m->generation = s->m.GenerationId;
		else if (kind == CH_ASSIGN_COOPERATIVE_STICKY)
			m->generation = coop_generation(s->m.UserData);
	}
	ch_assign_topic_index_free(ix);
	free(stamp);
	if (rc != CH_OK)
		snprintf(g->errstr, sizeof(g->errstr), "out of memory");
	return rc;
}

void
ch_assign_group_free(ch_assign_group *g)
{
	ch_arena_free(&g->arena);
	memset(g, 0, sizeof(*g));
}

void
ch_assign_assignment_write(ch_buf *b, int16_t version, const ch_assign_topic *topics,
			   const ch_assign_tp *tps, int32_t n, ch_bytes user_data)
{
	ch_wr_i16(b, version);
	int32_t runs = 0;
	for (int32_t i = 0; i < n; i++)
		if (i == 0 || tps[i].topic != tps[i - 1].topic)
			runs++;
	ch_wr_array_len(b, runs, false);
	for (int32_t i = 0; i < n;) {
		int32_t j = i;
		while (j < n && tps[j].topic == tps[i].topic)
			j++;
		ch_wr_str(b, topics[tps[i].topic].name, false);
		ch_wr_array_len(b, j - i, false);
		for (int32_t k = i; k < j; k++)
			ch_wr_i32(b, tps[k].partition);
		i = j;
	}
	ch_wr_bytes(b, user_data, false);
}

/* ---- member side ---- */

/* Writes a [topic, [partition]] list (non-flexible encoding). */
static void
write_tplists(ch_buf *b, const ch_assign_tplist *l, int32_t n)
{
	ch_wr_array_len(b, n, false);
	for (int32_t i = 0; i < n; i++) {
		ch_wr_str(b, l[i].topic, false);
		ch_wr_array_len(b, l[i].n, false);
		for (int32_t k = 0; k < l[i].n; k++)
			ch_wr_i32(b, l[i].partitions[k]);
	}
}

void
ch_assign_member_metadata(ch_buf *b, ch_assign_kind kind, int16_t version, const ch_str *topics,
			  int32_t ntopics, const ch_assign_tplist *owned, int32_t nowned,
			  int32_t generation, ch_str rack)
{
	int16_t v = version > MAXV ? MAXV : version < 0 ? 0 : version;
	ch_wr_i16(b, version);
	ch_wr_array_len(b, ntopics, false);
	for (int32_t i = 0; i < ntopics; i++)
		ch_wr_str(b, topics[i], false);
	/* user data */
	if (kind == CH_ASSIGN_COOPERATIVE_STICKY) {
		ch_wr_i32(b, 4);
		ch_assign_coop_data_encode(b, generation);
	} else if (kind == CH_ASSIGN_STICKY && generation >= 0) {
		/* StickyAssignorUserData v1: previous assignment, generation */
		size_t at = b->len;
		ch_wr_i32(b, 0); /* length, patched below */
		size_t start = b->len;
		write_tplists(b, owned, nowned);
		ch_wr_i32(b, generation);
		if (ch_buf_ok(b)) {
			uint32_t n = (uint32_t)(b->len - start);
			b->data[at] = (uint8_t)(n >> 24);
			b->data[at + 1] = (uint8_t)(n >> 16);
			b->data[at + 2] = (uint8_t)(n >> 8);
			b->data[at + 3] = (uint8_t)n;
		}
	} else {
		ch_wr_bytes(b, CH_BYTES_NULL, false);
	}
	if (v >= 1) {
		if (kind == CH_ASSIGN_COOPERATIVE_STICKY)
			write_tplists(b, owned, nowned);
		else
			ch_wr_array_len(b, 0, false); /* eager: revoked before joining */
	}
	if (v >= 2)
		ch_wr_i32(b, generation);
	if (v >= 3)
		ch_wr_str(b, rack, false);
}
