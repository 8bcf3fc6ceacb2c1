/*
 * ch_assign_userdata.c: the user data the client-side sticky assignors put in
 * ConsumerProtocolSubscription.user_data, in Kafka's classic (non-flexible)
 * Struct encoding: int16-length strings, int32-count arrays, big-endian.
 *
 * StickyAssignorUserData (StickyAssignor, KIP-54; generation added by
 * KIP-341 as v1):
 *   v0: previous_assignment: [ topic: string, partitions: [int32] ]
 *   v1: v0, then generation: int32
 * A reader tries v1 first and falls back to v0 (a v0 blob is a v1 blob cut
 * short of its last four bytes); trailing bytes are ignored; bytes that parse
 * as neither are ignored by Kafka (no previous assignment), which the caller
 * does on CH_ERR.
 *
 * CooperativeStickyAssignor user data (KIP-429): generation: int32. Sent so
 * that leaders on subscription v0-v1 learn the generation; v2+ carries it in
 * the subscription's generation_id field.
 */
#include "assign/ch_assign.h"

#include <stdlib.h>
#include <string.h>

#include "proto/ch_wr.h"

/* Decodes StickyAssignor user data as v0 (topic partitions) or, with v1, v0
 * followed by the generation; CH_ERR (out freed) if it does not decode that
 * way. */
static int
ch_assign_sticky_data_try(const uint8_t *p, size_t len, bool v1, ch_assign_sticky_data *out)
{
	ch_rd r;
	ch_rd_init(&r, p, len);
	memset(out, 0, sizeof(*out));
	out->generation = CH_ASSIGN_NO_GENERATION;
	/* Each topic entry is at least a string length and an array count. */
	int32_t nt = ch_rd_array_len(&r, false, 6);
	if (!ch_rd_ok(&r))
		return CH_ERR;
	if (nt > 0) {
		out->topics = calloc((size_t)nt, sizeof(*out->topics));
		if (!out->topics)
			return CH_ERR;
	}
	out->ntopics = nt > 0 ? nt : 0;
	for (int32_t i = 0; i < out->ntopics && ch_rd_ok(&r); i++) {
		ch_assign_sticky_topic *t = &out->topics[i];
		t->topic = ch_rd_str(&r, false);
		int32_t n = ch_rd_array_len(&r, false, 4);
		if (!ch_rd_ok(&r) || t->topic.len < 0)
			break;
		t->n = n > 0 ? n : 0;
		t->partitions = malloc((size_t)(t->n ? t->n : 1) * sizeof(int32_t));
		if (!t->partitions)
			break;
		for (int32_t x = 0; x < t->n; x++)
			t->partitions[x] = ch_rd_i32(&r);
	}
	if (v1)
		out->generation = ch_rd_i32(&r);
	/* Trailing bytes are ignored, as Kafka's Schema.read does. */
	if (!ch_rd_ok(&r) || (out->ntopics > 0 && !out->topics[out->ntopics - 1].partitions)) {
		ch_assign_sticky_data_free(out);
		return CH_ERR;
	}
	return CH_OK;
}

int
ch_assign_sticky_data_decode(const uint8_t *p, size_t len, ch_assign_sticky_data *out)
{
	if (ch_assign_sticky_data_try(p, len, true, out) == CH_OK)
		return CH_OK;
	return ch_assign_sticky_data_try(p, len, false, out);
}

void
ch_assign_sticky_data_free(ch_assign_sticky_data *d)
{
	for (int32_t i = 0; i < d->ntopics; i++)
		free(d->topics[i].partitions);
	free(d->topics);
	memset(d, 0, sizeof(*d));
	d->generation = CH_ASSIGN_NO_GENERATION;
}

void
ch_assign_sticky_data_encode(ch_buf *b, const ch_assign_sticky_data *d)
{
	ch_wr_array_len(b, d->ntopics, false);
	for (int32_t i = 0; i < d->ntopics; i++) {
		ch_wr_str(b, d->topics[i].topic, false);
		ch_wr_array_len(b, d->topics[i].n, false);
		for (int32_t x = 0; x < d->topics[i].n; x++)
			ch_wr_i32(b, d->topics[i].partitions[x]);
	}
	if (d->generation != CH_ASSIGN_NO_GENERATION)
		ch_wr_i32(b, d->generation);
}

int32_t
ch_assign_coop_data_decode(const uint8_t *p, size_t len)
{
	ch_rd r;
	ch_rd_init(&r, p, len);
	int32_t g = ch_rd_i32(&r);
	return ch_rd_ok(&r) ? g : CH_ASSIGN_NO_GENERATION;
}

void
ch_assign_coop_data_encode(ch_buf *b, int32_t generation)
{
	ch_wr_i32(b, generation);
}
