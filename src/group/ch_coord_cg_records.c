/*
 * ch_coord_cg_records.c: encoders and decoder of the consumer groups'
 * __consumer_offsets records (layout in ch_coord_cg_records.h).
 */
#include "group/ch_coord_cg_records.h"

#include <string.h>

#include "proto/ch_wr.h"

#define VALUE_V 0

bool
ch_coord_cgrec_is_consumer_group_key(const uint8_t *key, size_t klen)
{
	if (klen < 2)
		return false;
	int16_t t = (int16_t)(key[0] << 8 | key[1]);
	return (t >= CGREC_GROUP && t <= CGREC_CURRENT) || t == CGREC_REGEX;
}

void
ch_coord_cgrec_free(ch_coord_record *r)
{
	ch_buf_free(&r->key);
	ch_buf_free(&r->value);
}

/* The key of `type` for group (and member, for the member-level types). */
static void
key_init(ch_coord_record *r, int16_t type, const char *group, const char *member)
{
	ch_buf_init(&r->key);
	ch_buf_init(&r->value);
	r->tombstone = false;
	ch_wr_i16(&r->key, type);
	ch_wr_str(&r->key, ch_str_c(group), false);
	if (member)
		ch_wr_str(&r->key, ch_str_c(member), false);
}

static bool
member_level(int16_t type)
{
	return type == CGREC_MEMBER || type == CGREC_TARGET_MEMBER || type == CGREC_CURRENT ||
	       type == CGREC_REGEX; /* the regex's key is {GroupId, RegularExpression} */
}

void
ch_coord_cgrec_tombstone(ch_coord_record *r, int16_t type, const char *group, const char *member)
{
	key_init(r, type, group, member_level(type) ? member : NULL);
	r->tombstone = true;
}

/* A tagged-field section with one int64 field at tag 0 when v != 0
 * (Kafka omits a tagged field equal to its default). */
static void
tags_i64(ch_buf *b, int64_t v)
{
	if (!v) {
		ch_wr_uvarint(b, 0);
		return;
	}
	ch_wr_uvarint(b, 1);
	ch_wr_uvarint(b, 0); /* tag */
	ch_wr_uvarint(b, 8); /* size */
	ch_wr_i64(b, v);
}

void
ch_coord_cgrec_group(ch_coord_record *r, const char *group, int32_t epoch, int64_t metadata_hash)
{
	key_init(r, CGREC_GROUP, group, NULL);
	ch_wr_i16(&r->value, VALUE_V);
	ch_wr_i32(&r->value, epoch);
	tags_i64(&r->value, metadata_hash);
}

void
ch_coord_cgrec_member_meta(ch_coord_record *r, const char *group, const char *member,
			   const ch_coord_cgrec_member *m)
{
	key_init(r, CGREC_MEMBER, group, member);
	ch_buf *b = &r->value;
	ch_wr_i16(b, VALUE_V);
	ch_wr_str(b, m->instance_id, true);
	ch_wr_str(b, m->rack_id, true);
	ch_wr_str(b, m->client_id, true);
	ch_wr_str(b, m->client_host, true);
	ch_wr_array_len(b, m->ntopics, true);
	for (int32_t i = 0; i < m->ntopics; i++)
		ch_wr_str(b, ch_str_c(m->topics[i]), true);
	ch_wr_str(b, m->regex, true);
	ch_wr_i32(b, m->rebalance_timeout_ms);
	ch_wr_str(b, m->server_assignor, true);
	/* ClassicMemberMetadata at tag 0, as Kafka 4.4 writes it: null (a
	 * consumer-protocol member) is one 0 byte, a struct is a 1 byte and
	 * the struct. */
	ch_wr_uvarint(b, 1);
	ch_wr_uvarint(b, 0);
	if (!m->classic) {
		ch_wr_uvarint(b, 1);
		ch_wr_i8(b, 0);
		return;
	}
	ch_buf c;
	ch_buf_init(&c);
	ch_wr_uvarint(&c, 1);
	ch_wr_i32(&c, m->classic_session_timeout_ms);
	ch_wr_array_len(&c, m->nprotocols, true);
	for (int32_t i = 0; i < m->nprotocols; i++) {
		ch_wr_str(&c, m->protocols[i].name, true);
		ch_wr_bytes(&c, m->protocols[i].metadata, true);
		ch_wr_uvarint(&c, 0);
	}
	ch_wr_uvarint(&c, 0);
	ch_wr_uvarint(b, (uint32_t)c.len);
	ch_buf_append(b, c.data, c.len);
	ch_buf_free(&c);
}

void
ch_coord_cgrec_target_meta(ch_coord_record *r, const char *group, int32_t assignment_epoch,
			   int64_t timestamp)
{
	key_init(r, CGREC_TARGET_META, group, NULL);
	ch_wr_i16(&r->value, VALUE_V);
	ch_wr_i32(&r->value, assignment_epoch);
	tags_i64(&r->value, timestamp);
}

void
ch_coord_cgrec_regex(ch_coord_record *r, const char *group, const char *regex,
		     const char *const *topics, int32_t ntopics, int64_t version, int64_t timestamp)
{
	key_init(r, CGREC_REGEX, group, regex);
	ch_buf *b = &r->value;
	ch_wr_i16(b, VALUE_V);
	ch_wr_array_len(b, ntopics, true);
	for (int32_t i = 0; i < ntopics; i++)
		ch_wr_str(b, ch_str_c(topics[i]), true);
	ch_wr_i64(b, version);
	ch_wr_i64(b, timestamp);
	ch_wr_uvarint(b, 0);
}

/* A partition set as [{TopicId, Partitions[], tags}] (the set is sorted by
 * topic id, so each topic's partitions are one run); epochs (aligned with
 * v, or NULL) go in each topic's tag 0 (AssignmentEpochs). */
static void
write_topics(ch_buf *b, const ch_coord_cg_tp *v, const int32_t *epochs, int32_t n)
{
	int32_t ntopics = 0;
	for (int32_t i = 0; i < n; i++)
		ntopics += i == 0 || !ch_uuid_eq(&v[i].topic, &v[i - 1].topic);
	ch_wr_array_len(b, ntopics, true);
	for (int32_t i = 0; i < n;) {
		int32_t k = i;
		while (k < n && ch_uuid_eq(&v[k].topic, &v[i].topic))
			k++;
		ch_wr_uuid(b, v[i].topic);
		ch_wr_array_len(b, k - i, true);
		for (int32_t j = i; j < k; j++)
			ch_wr_i32(b, v[j].partition);
		if (epochs) {
			ch_wr_uvarint(b, 1);
			ch_wr_uvarint(b, 0);
			ch_wr_uvarint(b, (uint32_t)(ch_uvarint_size((uint64_t)(k - i) + 1) +
						    4 * (k - i)));
			ch_wr_array_len(b, k - i, true);
			for (int32_t j = i; j < k; j++)
				ch_wr_i32(b, epochs[j]);
		} else {
			ch_wr_uvarint(b, 0);
		}
		i = k;
	}
}

void
ch_coord_cgrec_target_member(ch_coord_record *r, const char *group, const char *member,
			     const ch_coord_cg_tp *tps, int32_t n)
{
	key_init(r, CGREC_TARGET_MEMBER, group, member);
	ch_wr_i16(&r->value, VALUE_V);
	write_topics(&r->value, tps, NULL, n);
	ch_wr_uvarint(&r->value, 0);
}

void
ch_coord_cgrec_current(ch_coord_record *r, const char *group, const char *member, int32_t epoch,
		       int32_t previous_epoch, int8_t state, const ch_coord_cg_tp *assigned,
		       const int32_t *assigned_epochs, int32_t nassigned,
		       const ch_coord_cg_tp *revoking, const int32_t *revoking_epochs,
		       int32_t nrevoking)
{
	key_init(r, CGREC_CURRENT, group, member);
	ch_buf *b = &r->value;
	ch_wr_i16(b, VALUE_V);
	ch_wr_i32(b, epoch);
	ch_wr_i32(b, previous_epoch);
	ch_wr_i8(b, state);
	write_topics(b, assigned, assigned_epochs, nassigned);
	write_topics(b, revoking, revoking_epochs, nrevoking);
	ch_wr_uvarint(b, 0);
}

/* ---- decoding ------------------------------------------------------------ */

/* A tagged-field section: tag 0's bytes in *t0 (len -1 if absent); the
 * others are skipped (fields of versions after 4.4). */
static void
read_tags(ch_rd *r, ch_bytes *t0)
{
	t0->len = -1;
	uint32_t n = ch_rd_uvarint(r);
	for (uint32_t i = 0; i < n && ch_rd_ok(r); i++) {
		uint32_t tag = ch_rd_uvarint(r);
		uint32_t size = ch_rd_uvarint(r);
		const uint8_t *p = ch_rd_take(r, size);
		if (tag == 0 && p)
			*t0 = (ch_bytes){p, (int32_t)size};
	}
}

/* An int64 tagged field's value, or 0 (its default) when absent. */
static int64_t
tag_i64(ch_rd *r, ch_bytes t0)
{
	if (t0.len < 0)
		return 0;
	ch_rd f;
	ch_rd_init(&f, t0.p, (size_t)t0.len);
	int64_t v = ch_rd_i64(&f);
	if (!ch_rd_ok(&f))
		ch_rd_fail(r, CH_RD_EINVAL);
	return v;
}

/* ClassicMemberMetadata from tag 0's bytes (absent or a 0 byte: null);
 * 0, or -1 if they do not parse. */
static int
read_classic(ch_rd *r, ch_arena *a, ch_bytes t0, ch_coord_cgrec_member *m)
{
	m->classic = false;
	if (t0.len <= 0)
		return 0;
	ch_rd f;
	ch_rd_init(&f, t0.p, (size_t)t0.len);
	if (ch_rd_uvarint(&f) == 0)
		return 0;
	m->classic = true;
	m->classic_session_timeout_ms = ch_rd_i32(&f);
	m->nprotocols = ch_rd_array_len(&f, true, 3);
	if (m->nprotocols < 0)
		return -1;
	ch_coord_cgrec_protocol *v =
		ch_arena_alloc(a, (size_t)(m->nprotocols ? m->nprotocols : 1) * sizeof *v);
	for (int32_t i = 0; i < m->nprotocols && ch_rd_ok(&f); i++) {
		v[i].name = ch_rd_str(&f, true);
		v[i].metadata = ch_rd_bytes(&f, true);
		ch_rd_skip_tags(&f);
		if (v[i].name.len < 0 || v[i].metadata.len < 0)
			return -1;
	}
	ch_rd_skip_tags(&f);
	m->protocols = v;
	if (!ch_rd_ok(&f)) {
		ch_rd_fail(r, CH_RD_EINVAL);
		return -1;
	}
	return 0;
}

/* A compact []int32 (count -1: null) into the arena. */
static const int32_t *
read_i32s(ch_rd *r, ch_arena *a, int32_t *n)
{
	*n = ch_rd_array_len(r, true, 4);
	if (*n <= 0)
		return NULL;
	int32_t *v = ch_arena_alloc(a, (size_t)*n * sizeof *v);
	for (int32_t i = 0; i < *n; i++)
		v[i] = ch_rd_i32(r);
	return v;
}

/* [{TopicId, Partitions[], tags: AssignmentEpochs (0)}] */
static ch_coord_cgrec_topic *
read_topics(ch_rd *r, ch_arena *a, int32_t *n)
{
	*n = ch_rd_array_len(r, true, 16 + 1 + 1);
	if (*n <= 0) {
		if (*n < 0)
			ch_rd_fail(r, CH_RD_EINVAL); /* not nullable */
		*n = 0;
		return NULL;
	}
	ch_coord_cgrec_topic *v = ch_arena_alloc(a, (size_t)*n * sizeof *v);
	for (int32_t i = 0; i < *n && ch_rd_ok(r); i++) {
		v[i].topic = ch_rd_uuid(r);
		v[i].partitions = read_i32s(r, a, &v[i].n);
		if (v[i].n < 0)
			ch_rd_fail(r, CH_RD_EINVAL);
		ch_bytes t0;
		read_tags(r, &t0);
		v[i].epochs = NULL;
		if (t0.len >= 0) {
			ch_rd f;
			ch_rd_init(&f, t0.p, (size_t)t0.len);
			int32_t ne;
			const int32_t *e = read_i32s(&f, a, &ne);
			if (!ch_rd_ok(&f) || (ne >= 0 && ne != v[i].n))
				ch_rd_fail(r, CH_RD_EINVAL);
			v[i].epochs = ne > 0 ? e : NULL;
		}
	}
	return v;
}

/* A compact []string, none of them null, into the arena; NULL if broken. */
static ch_str *
read_names(ch_rd *r, ch_arena *a, int32_t *n)
{
	*n = ch_rd_array_len(r, true, 1);
	if (*n < 0)
		return NULL;
	ch_str *v = ch_arena_alloc(a, (size_t)(*n ? *n : 1) * sizeof *v);
	for (int32_t i = 0; i < *n && ch_rd_ok(r); i++) {
		v[i] = ch_rd_str(r, true);
		if (v[i].len < 0)
			return NULL;
	}
	return v;
}

static int
decode_value(ch_rd *r, ch_arena *a, ch_coord_cgrec *o)
{
	ch_bytes t0;
	switch (o->type) {
	case CGREC_GROUP:
		o->epoch = ch_rd_i32(r);
		read_tags(r, &t0);
		o->hash_or_ts = tag_i64(r, t0);
		break;
	case CGREC_TARGET_META:
		o->epoch = ch_rd_i32(r);
		read_tags(r, &t0);
		o->hash_or_ts = tag_i64(r, t0);
		break;
	case CGREC_MEMBER: {
		ch_coord_cgrec_member *m = &o->m;
		m->instance_id = ch_rd_str(r, true);
		m->rack_id = ch_rd_str(r, true);
		m->client_id = ch_rd_str(r, true);
		m->client_host = ch_rd_str(r, true);
		if (m->client_id.len < 0 || m->client_host.len < 0 ||
		    !(o->topic_names = read_names(r, a, &m->ntopics)))
			return -1;
		m->regex = ch_rd_str(r, true);
		m->rebalance_timeout_ms = ch_rd_i32(r);
		m->server_assignor = ch_rd_str(r, true);
		read_tags(r, &t0);
		if (read_classic(r, a, t0, m) != 0)
			return -1;
		break;
	}
	case CGREC_TARGET_MEMBER:
		o->parts = read_topics(r, a, &o->nparts);
		read_tags(r, &t0);
		break;
	case CGREC_CURRENT:
		o->epoch = ch_rd_i32(r);
		o->previous_epoch = ch_rd_i32(r);
		o->state = ch_rd_i8(r);
		o->parts = read_topics(r, a, &o->nparts);
		o->revoking = read_topics(r, a, &o->nrevoking);
		read_tags(r, &t0);
		break;
	case CGREC_REGEX:
		if (!(o->topic_names = read_names(r, a, &o->nparts)))
			return -1;
		o->version = ch_rd_i64(r);
		o->hash_or_ts = ch_rd_i64(r);
		read_tags(r, &t0);
		break;
	default: /* 4: replayed as nothing (see the header) */
		return 0;
	}
	return ch_rd_ok(r) ? 0 : -1;
}

int
ch_coord_cgrec_decode(const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen,
		      bool tombstone, ch_arena *a, ch_coord_cgrec *out)
{
	memset(out, 0, sizeof *out);
	if (!ch_coord_cgrec_is_consumer_group_key(key, klen))
		return -1;
	ch_rd r;
	ch_rd_init(&r, key, klen);
	out->type = ch_rd_i16(&r);
	out->group = ch_rd_str(&r, false);
	out->member = member_level(out->type) ? ch_rd_str(&r, false) : CH_STR_NULL;
	if (!ch_rd_ok(&r) || out->group.len < 0 || (member_level(out->type) && out->member.len < 0))
		return -1;
	out->tombstone = tombstone || !val;
	if (out->tombstone)
		return 0;
	ch_rd v;
	ch_rd_init(&v, val, vlen);
	int16_t ver = ch_rd_i16(&v);
	if (!ch_rd_ok(&v) || ver != VALUE_V)
		return -1;
	return decode_value(&v, a, out);
}
