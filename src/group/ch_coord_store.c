/*
 * ch_coord_store.c: the coordinator's durable state in __consumer_offsets.
 *
 * Records use Kafka's own schemas (../shared/kafka-protocol/coordinator-records), so Kafka's
 * tools can read the topic:
 *
 *   key   = int16 key version + key struct
 *   value = int16 value version + value struct, or null (tombstone)
 *
 *   key version 0/1  OffsetCommitKey {group, topic, partition}
 *       value v1     OffsetCommitValue with expireTimestamp (commits that
 *                    asked for a retention time, OffsetCommit v1-v4)
 *       value v3     OffsetCommitValue with leaderEpoch (all others)
 *   key version 2    GroupMetadataKey {group}
 *       value v3     GroupMetadataValue {protocolType, generation, protocol,
 *                    leader, currentStateTimestamp, members[...]}
 *   key version 3-8, 16  consumer-group records (KIP-848): ch_coord_cg's
 *                    (ch_coord_cg_records.h); the shell routes them there.
 *
 * The writer is this coordinator: appends go out through ops->append and
 * come back through ch_coord_append_done; the shell puts them in record
 * batches of the group's partition and fsyncs before reporting success.
 */
#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"
#include "group/ch_coord_int.h"
#include "proto/ch_wr.h"
#include "proto/generated/ch_errors.h"

#define KEY_OFFSET_V 1
#define KEY_GROUP_V 2
#define VALUE_OFFSET_V 3
#define VALUE_OFFSET_EXPIRE_V 1
#define VALUE_GROUP_V 3

/* An empty record (key and value buffers, not a tombstone). */
static void
record_init(ch_coord_record *r)
{
	ch_buf_init(&r->key);
	ch_buf_init(&r->value);
	r->tombstone = false;
}

void
ch_coord_record_free(ch_coord_record *r)
{
	ch_buf_free(&r->key);
	ch_buf_free(&r->value);
}

/* Writes the GroupMetadataKey of `group` (key version 2) into r's key. */
static void
group_key(ch_coord_record *r, const char *group)
{
	ch_GroupMetadataKey k;
	ch_GroupMetadataKey_init(&k);
	k.group = ch_str_c(group);
	ch_wr_i16(&r->key, KEY_GROUP_V);
	ch_GroupMetadataKey_encode(&r->key, KEY_GROUP_V, &k);
}

/* The group's GroupMetadataValue record (v3): members with the selected protocol's subscription
 * and their assignment; not deferred ones (ch_coord.c's join_defer), which are not in this
 * generation. Caller frees (ch_coord_record_free). */
static void
record_group_metadata(ch_coord_record *r, const ch_coord_group *g, int64_t now)
{
	(void)now;
	record_init(r);
	group_key(r, g->group_id);
	ch_GroupMetadataValue v;
	ch_GroupMetadataValue_init(&v);
	v.protocolType = ch_str_c(g->protocol_type ? g->protocol_type : "");
	v.generation = g->generation;
	v.protocol = ch_str_c(g->protocol_name);
	v.leader = g->leader ? ch_str_c(g->leader->member_id) : CH_STR_NULL;
	v.currentStateTimestamp = g->state_ts;
	v.members = ch_xcalloc(g->members.n, sizeof(*v.members));
	int32_t i = 0;
	for (const ch_coord_member *m = g->first; m; m = m->next) {
		if (m->deferred)
			continue;
		ch_GroupMetadataValue_MemberMetadata *x = &v.members[i++];
		x->memberId = ch_str_c(m->member_id);
		x->groupInstanceId = ch_str_c(m->instance_id);
		x->clientId = ch_str_c(coord_member_client_id(m));
		x->clientHost = ch_str_c(coord_member_client_host(m));
		x->rebalanceTimeout = m->rebalance_timeout_ms;
		x->sessionTimeout = m->session_timeout_ms;
		x->subscription = (ch_bytes){(const uint8_t *)"", 0};
		for (int32_t p = 0; p < m->n_protocols; p++)
			if (g->protocol_name && strcmp(m->protocols[p].name, g->protocol_name) == 0)
				x->subscription = (ch_bytes){m->protocols[p].metadata,
							     m->protocols[p].metadata_len};
		x->assignment = (ch_bytes){m->assignment ? m->assignment : (const uint8_t *)"",
					   m->assignment ? m->assignment_len : 0};
	}
	v.members_n = i;
	ch_wr_i16(&r->value, VALUE_GROUP_V);
	ch_GroupMetadataValue_encode(&r->value, VALUE_GROUP_V, &v);
	free(v.members);
}

void
ch_coord_record_group_tombstone(ch_coord_record *r, const ch_coord_group *g)
{
	record_init(r);
	group_key(r, g->group_id);
	r->tombstone = true;
}

/* Writes the OffsetCommitKey (version 1) of group/topic/partition into r's key. */
static void
offset_key(ch_coord_record *r, const char *group, const char *topic, int32_t partition)
{
	ch_OffsetCommitKey k;
	ch_OffsetCommitKey_init(&k);
	k.group = ch_str_c(group);
	k.topic = ch_str_c(topic);
	k.partition = partition;
	ch_wr_i16(&r->key, KEY_OFFSET_V);
	ch_OffsetCommitKey_encode(&r->key, KEY_OFFSET_V, &k);
}

void
ch_coord_record_offset(ch_coord_record *r, const char *group, const char *topic, int32_t partition,
		       int64_t offset, int32_t leader_epoch, const char *metadata, size_t mlen,
		       int64_t commit_ts, int64_t expire_ts)
{
	record_init(r);
	offset_key(r, group, topic, partition);
	ch_OffsetCommitValue v;
	ch_OffsetCommitValue_init(&v);
	v.offset = offset;
	v.leaderEpoch = leader_epoch;
	v.metadata = metadata ? (ch_str){metadata, (int32_t)mlen} : CH_STR_LIT("");
	v.commitTimestamp = commit_ts;
	v.expireTimestamp = expire_ts;
	int16_t ver = expire_ts >= 0 ? VALUE_OFFSET_EXPIRE_V : VALUE_OFFSET_V;
	ch_wr_i16(&r->value, ver);
	ch_OffsetCommitValue_encode(&r->value, ver, &v);
}

void
ch_coord_record_offset_tombstone(ch_coord_record *r, const char *group, const char *topic,
				 int32_t partition)
{
	record_init(r);
	offset_key(r, group, topic, partition);
	r->tombstone = true;
}

/* ---- appends -------------------------------------------------------------- */

/* Takes a free slot of the table (growing it) for a; sets a->id. */
static void
appends_insert(append_table *t, pending_append *a)
{
	if (t->nfree == 0) {
		uint32_t cap = t->cap ? t->cap * 2 : 64;
		t->slot = ch_xrealloc(t->slot, cap * sizeof(*t->slot));
		t->free = ch_xrealloc(t->free, cap * sizeof(*t->free));
		for (uint32_t i = cap; i > t->cap; i--) {
			t->slot[i - 1] = NULL;
			t->free[t->nfree++] = i - 1;
		}
		t->cap = cap;
	}
	uint32_t s = t->free[--t->nfree];
	t->slot[s] = a;
	t->n++;
	a->id = (uint64_t)++t->next_seq << 32 | s; /* never 0: seq starts at 1 */
}

const pending_append *
ch_coord_append_find(const append_table *t, uint64_t id)
{
	uint32_t s = (uint32_t)id;
	return s < t->cap && t->slot[s] && t->slot[s]->id == id ? t->slot[s] : NULL;
}

/* The append in flight with this id, removed from the table; NULL if none. */
static pending_append *
appends_take(append_table *t, uint64_t id)
{
	uint32_t s = (uint32_t)id;
	if (!ch_coord_append_find(t, id))
		return NULL;
	pending_append *a = t->slot[s];
	t->slot[s] = NULL;
	t->free[t->nfree++] = s;
	t->n--;
	return a;
}

void
ch_coord_append_table_free(append_table *t, void (*drop)(pending_append *a))
{
	for (uint32_t s = 0; s < t->cap; s++)
		if (t->slot[s])
			drop(t->slot[s]);
	free(t->slot);
	free(t->free);
	memset(t, 0, sizeof(*t));
}

pending_append *
ch_coord_append_new(ch_coord *c, append_kind kind, ch_coord_group *g, void *token, int16_t version)
{
	pending_append *a = ch_xcalloc(1, sizeof(*a));
	appends_insert(&c->appends, a);
	a->kind = kind;
	a->group_id = ch_xstrdup(g->group_id);
	a->generation = g->generation;
	a->token = token;
	a->version = version;
	return a;
}

void
ch_coord_append_issue(ch_coord *c, pending_append *a, const ch_coord_record *recs, size_t n,
		      int32_t partition)
{
	c->ops.append(c->ops.ud, partition, recs, n, a->id);
}

void
ch_coord_group_store(ch_coord_group *g, append_kind kind, void *token, int16_t version, int64_t now,
		     void *data)
{
	ch_coord *c = g->coord;
	pending_append *a = ch_coord_append_new(c, kind, g, token, version);
	a->data = data;
	if (kind == A_SYNC_STORE) {
		g->store_id = a->id;
		g->store_generation = g->generation;
	}
	ch_coord_record r;
	record_group_metadata(&r, g, now);
	ch_coord_append_issue(c, a, &r, 1, g->partition);
	ch_coord_record_free(&r);
}

void
ch_coord_append_done(ch_coord *c, int64_t now, uint64_t id, int16_t error)
{
	pending_append *a = appends_take(&c->appends, id);
	if (!a)
		return;
	switch (a->kind) {
	case A_SYNC_STORE:
		ch_coord_sync_append_done(c, a, error, now);
		break;
	case A_STATIC_STORE:
		ch_coord_static_append_done(c, a, error, now);
		break;
	case A_DEFERRED:
		ch_coord_deferred_append_done(c, a, error, now);
		break;
	case A_FIRE:
		if (error)
			COORD_LOGW(c, "group %s: writing to __consumer_offsets failed: %s",
				   a->group_id, ch_kerr_name(error));
		break;
	}
	COORD_CHECK_AFTER(c, ch_str_c(a->group_id));
	free(a->group_id);
	free(a);
}

/* ---- replay ------------------------------------------------------------------ */

/* Replays one GroupMetadata record: a tombstone deletes the group, a value replaces its members
 * and generation and leaves it Stable or Empty. 0, or -1 if the value is unreadable. */
static int
load_group(ch_coord *c, ch_str group, const uint8_t *val, size_t vlen, bool tombstone)
{
	ch_coord_group *g = ch_coord_group_find(c, group);
	if (tombstone) {
		if (g) {
			coord_reason why =
				ch_coord_reason_make(CH_COORD_CAUSE_LOADED, "tombstone replayed");
			ch_coord_group_delete(g, 0, &why);
		}
		return 0;
	}
	ch_rd r;
	ch_rd_init(&r, val, vlen);
	int16_t ver = ch_rd_i16(&r);
	ch_arena a;
	ch_arena_init(&a);
	ch_GroupMetadataValue v;
	if (!ch_rd_ok(&r) || ver < 0 || ver > 4 ||
	    ch_GroupMetadataValue_decode(&r, &a, ver, &v) != 0) {
		ch_arena_reset(&a);
		return -1;
	}
	if (!g)
		g = ch_coord_group_get_or_create(c, group, v.currentStateTimestamp);
	/* Replace the members with the stored ones. */
	while (g->first)
		ch_coord_member_drop(g, g->first);
	g->generation = v.generation;
	free(g->protocol_type);
	g->protocol_type = v.protocolType.len > 0 ? ch_coord_str_dup(v.protocolType) : NULL;
	free(g->protocol_name);
	g->protocol_name = ch_coord_str_dup(v.protocol);
	g->state_ts = v.currentStateTimestamp >= 0 ? v.currentStateTimestamp : 0;
	for (int32_t i = 0; i < v.members_n; i++) {
		const ch_GroupMetadataValue_MemberMetadata *x = &v.members[i];
		ch_coord_member *m = ch_coord_member_restore(
			g, x->memberId, x->groupInstanceId, x->clientId, x->clientHost,
			x->sessionTimeout,
			x->rebalanceTimeout > 0 ? x->rebalanceTimeout : x->sessionTimeout,
			x->subscription, x->assignment);
		if (ch_str_eq(x->memberId, v.leader))
			g->leader = m;
	}
	coord_reason why = ch_coord_reason_make(
		CH_COORD_CAUSE_LOADED, "replayed from __consumer_offsets-%d", g->partition);
	ch_coord_group_set_state(g, g->members.n ? CH_COORD_GROUP_STABLE : CH_COORD_GROUP_EMPTY,
				 g->state_ts, &why);
	ch_arena_reset(&a);
	return 0;
}

/* ch_coord_group_find for a replayed record, through c->load_last. */
static ch_coord_group *
load_group_find(ch_coord *c, ch_str id)
{
	ch_coord_group *g = c->load_last;
	if (g && c->load_last_len == (size_t)id.len &&
	    memcmp(g->group_id, id.p, (size_t)id.len) == 0)
		return g;
	g = ch_coord_group_find(c, id);
	c->load_last = g;
	c->load_last_len = (size_t)id.len;
	return g;
}

int
ch_coord_load_record(ch_coord *c, const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen,
		     bool tombstone)
{
	ch_rd r;
	ch_rd_init(&r, key, klen);
	int16_t kver = ch_rd_i16(&r);
	ch_arena a;
	ch_arena_init(&a);
	int rc = -1;
	ch_str touched = CH_STR_NULL; /* the record's group (in a) */
	if (ch_rd_ok(&r) && (kver == 0 || kver == 1)) {
		ch_OffsetCommitKey k;
		if (ch_OffsetCommitKey_decode(&r, &a, kver, &k) == 0 && k.group.len >= 0 &&
		    k.topic.len >= 0) {
			touched = k.group;
			ch_coord_group *g = load_group_find(c, k.group);
			if (tombstone) {
				offset_entry *e =
					g ? ch_coord_offset_find(g, k.topic.p, (size_t)k.topic.len,
								 k.partition)
					  : NULL;
				if (e)
					ch_coord_offset_remove(g, e);
				rc = 0;
			} else {
				ch_rd vr;
				ch_rd_init(&vr, val, vlen);
				int16_t vver = ch_rd_i16(&vr);
				ch_OffsetCommitValue v;
				if (ch_rd_ok(&vr) && vver >= 0 && vver <= 4 &&
				    ch_OffsetCommitValue_decode(&vr, &a, vver, &v) == 0) {
					if (!g) {
						g = ch_coord_group_get_or_create(c, k.group,
										 v.commitTimestamp);
						c->load_last = g;
						c->load_last_len = (size_t)k.group.len;
					}
					ch_coord_offset_put(
						g, k.topic.p, (size_t)k.topic.len, k.partition,
						v.offset, vver >= 3 ? v.leaderEpoch : -1,
						v.metadata.p, (size_t)CH_MAX(v.metadata.len, 0),
						v.commitTimestamp,
						vver == 1 ? v.expireTimestamp : -1);
					rc = 0;
				}
			}
		}
	} else if (ch_rd_ok(&r) && kver == 2) {
		ch_GroupMetadataKey k;
		if (ch_GroupMetadataKey_decode(&r, &a, kver, &k) == 0 && k.group.len >= 0) {
			touched = k.group;
			rc = load_group(c, k.group, val, vlen, tombstone);
		}
	}
	if (rc == 0)
		COORD_CHECK_AFTER(c, touched);
	ch_arena_reset(&a);
	if (rc != 0)
		c->load_skipped++;
	return rc;
}

bool
ch_coord_load_begin(ch_coord *c, int32_t partition)
{
	COORD_CHECK_ON_RETURN(c, CH_STR_NULL);
	ch_coord_load_state st = ch_coord_partition_state(c, partition);
	if (partition < 0 || partition >= c->cfg.offsets_partitions || st == CH_COORD_LOADED)
		return false;
	c->load_state[partition] = CH_COORD_LOADING;
	return true;
}

/* Groups of one partition (or of every partition still to load, p = -1):
 * finish their load, or drop them when it failed. Returns how many. */
static size_t
load_finish_groups(ch_coord *c, int64_t now, int32_t partition, bool ok)
{
	size_t n = 0;
	ch_map_foreach_safe(&c->groups, e, tmp)
	{
		ch_coord_group *g = e->value;
		if (partition >= 0 ? g->partition != partition
				   : c->load_state[g->partition] == CH_COORD_LOADED)
			continue;
		n++;
		if (!ok) {
			coord_reason why = ch_coord_reason_make(
				CH_COORD_CAUSE_LOADED, "__consumer_offsets-%d failed to load",
				g->partition);
			ch_coord_group_delete(g, now, &why);
			continue;
		}
		/* Members of loaded groups must heartbeat within their session. */
		for (ch_coord_member *m = g->first; m; m = m->next)
			ch_coord_member_touch_session(m, now);
		if (g->members.n == 0 && g->state != CH_COORD_GROUP_EMPTY) {
			coord_reason why = ch_coord_reason_make(CH_COORD_CAUSE_LOADED,
								"loaded with no members");
			ch_coord_group_set_state(g, CH_COORD_GROUP_EMPTY, now, &why);
		}
	}
	return n;
}

size_t
ch_coord_load_end(ch_coord *c, int64_t now, int32_t partition, bool ok)
{
	COORD_CHECK_ON_RETURN(c, CH_STR_NULL);
	if (ch_coord_partition_state(c, partition) != CH_COORD_LOADING)
		return 0;
	size_t n = load_finish_groups(c, now, partition, ok);
	c->load_state[partition] = ok ? CH_COORD_LOADED : CH_COORD_LOAD_FAILED;
	if (ok)
		COORD_LOGD(c, "__consumer_offsets-%d loaded: %zu groups", partition, n);
	else
		COORD_LOGD(c, "__consumer_offsets-%d failed to load: %zu groups dropped", partition,
			   n);
	return n;
}

void
ch_coord_load_done(ch_coord *c, int64_t now)
{
	COORD_CHECK_ON_RETURN(c, CH_STR_NULL);
	(void)load_finish_groups(c, now, -1, true);
	for (int32_t p = 0; p < c->cfg.offsets_partitions; p++)
		if (c->load_state[p] != CH_COORD_LOAD_FAILED)
			c->load_state[p] = CH_COORD_LOADED;
	if (c->load_skipped)
		COORD_LOGW(c, "skipped %zu unreadable records of __consumer_offsets",
			   c->load_skipped);
	COORD_LOGI(c, "loaded %zu groups from __consumer_offsets", c->groups.n);
}
