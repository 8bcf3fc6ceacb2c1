/*
 * ch_coord_offsets.c: committed offsets: OffsetCommit, OffsetFetch,
 * OffsetDelete, offsets retention, and the deferred responses that wait for
 * __consumer_offsets appends.
 *
 * An OffsetCommit is answered only after its records are durable; the
 * offsets become visible to OffsetFetch at that moment too (Kafka keeps
 * them "pending" until then).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"
#include "group/ch_coord_int.h"
#include "proto/generated/ch_errors.h"

/* ---- the offsets map ------------------------------------------------------ */

/* Key: topic bytes, a NUL, then the partition as 4 bytes. */
static size_t
offset_key(char *buf, size_t cap, const char *topic, size_t tlen, int32_t partition)
{
	if (tlen + 5 > cap)
		return 0;
	memcpy(buf, topic, tlen);
	buf[tlen] = '\0';
	memcpy(buf + tlen + 1, &partition, 4);
	return tlen + 5;
}

offset_entry *
ch_coord_offset_find(const ch_coord_group *g, const char *topic, size_t tlen, int32_t partition)
{
	char stack[512];
	char *buf = tlen + 5 <= sizeof(stack) ? stack : ch_xmalloc(tlen + 5);
	size_t klen = offset_key(buf, tlen + 5, topic, tlen, partition);
	offset_entry *e = ch_map_get(&g->offsets, buf, klen);
	if (buf != stack)
		free(buf);
	return e;
}

void
ch_coord_offset_put(ch_coord_group *g, const char *topic, size_t tlen, int32_t partition,
		    int64_t offset, int32_t leader_epoch, const char *metadata, size_t mlen,
		    int64_t commit_ts, int64_t expire_ts)
{
	offset_entry *e = ch_coord_offset_find(g, topic, tlen, partition);
	if (!e) {
		e = ch_xcalloc(1, sizeof(*e));
		char *buf = ch_xmalloc(tlen + 5);
		size_t klen = offset_key(buf, tlen + 5, topic, tlen, partition);
		ch_map_entry *me = ch_map_put(&g->offsets, buf, klen, e);
		free(buf);
		e->topic = me->key; /* NUL-terminated at tlen */
		e->topic_len = tlen;
		e->partition = partition;
	}
	/* A commit usually carries the metadata of the one before (mostly "");
	 * the same length reuses the copy (a replay overwrites millions). */
	if (!e->metadata || (size_t)e->metadata_len != mlen) {
		free(e->metadata);
		e->metadata = ch_xmalloc(mlen + 1);
	}
	if (mlen)
		memcpy(e->metadata, metadata, mlen);
	e->metadata[mlen] = '\0';
	e->metadata_len = (int32_t)mlen;
	e->offset = offset;
	e->leader_epoch = leader_epoch;
	e->commit_ts = commit_ts;
	e->expire_ts = expire_ts;
}

void
ch_coord_offset_remove(ch_coord_group *g, offset_entry *e)
{
	/* topic_len, not strlen: a replayed record's topic may hold a NUL */
	ch_map_remove(&g->offsets, e->topic, e->topic_len + 5);
	free(e->metadata);
	free(e);
}

void
ch_coord_offsets_free(ch_coord_group *g)
{
	ch_map_foreach_safe(&g->offsets, me, tmp)
	{
		offset_entry *e = me->value;
		ch_map_remove_entry(&g->offsets, me);
		free(e->metadata);
		free(e);
	}
	ch_map_free(&g->offsets);
}

/* ---- deferred responses ------------------------------------------------------ */

void *
ch_coord_deferred_alloc(deferred *d, size_t n, size_t size)
{
	if (n && size > SIZE_MAX / n)
		abort();
	void *p = ch_arena_alloc(&d->arena, (n ? n : 1) * size);
	if (!p)
		abort(); /* out of memory: the broker may abort */
	return p;
}

deferred *
ch_coord_deferred_new(const ch_coord_req *req, size_t resp_size, deferred_finish_fn *finish)
{
	deferred *d = ch_xcalloc(1, sizeof(*d));
	d->token = req->token;
	d->version = req->version;
	ch_arena_init(&d->arena);
	d->resp = ch_coord_deferred_alloc(d, 1, resp_size);
	d->finish = finish;
	return d;
}

/* A NUL-terminated copy of n bytes of s that lives as long as d. */
static char *
dstrdup(deferred *d, const char *s, size_t n)
{
	char *p = ch_coord_deferred_alloc(d, n + 1, 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

ch_str
ch_coord_deferred_str(deferred *d, ch_str s)
{
	if (s.len < 0)
		return CH_STR_NULL;
	return (ch_str){dstrdup(d, s.p ? s.p : "", (size_t)s.len), s.len};
}

void
ch_coord_deferred_add_append(ch_coord *c, deferred *d, ch_coord_group *g,
			     const ch_coord_record *recs, size_t n)
{
	pending_append *a = ch_coord_append_new(c, A_DEFERRED, g, d->token, d->version);
	a->data = d;
	d->outstanding++;
	ch_coord_append_issue(c, a, recs, n, g->partition);
}

/* Applies d's finish, sends its response and frees it. */
static void
deferred_finish(ch_coord *c, deferred *d, int64_t now)
{
	if (d->finish)
		d->finish(c, d, now);
	c->ops.respond(c->ops.ud, d->token, d->resp);
	ch_arena_reset(&d->arena);
	free(d);
}

void
ch_coord_deferred_start(ch_coord *c, deferred *d, int64_t now)
{
	if (d->outstanding == 0)
		deferred_finish(c, d, now);
}

void
ch_coord_deferred_append_done(ch_coord *c, pending_append *a, int16_t error, int64_t now)
{
	deferred *d = a->data;
	if (error && !d->error)
		d->error = error;
	if (--d->outstanding == 0)
		deferred_finish(c, d, now);
}

/* Kafka maps append failures to what a committing client understands. */
static int16_t
commit_error(int16_t append_error)
{
	switch (append_error) {
	case CH_KERR_UNKNOWN_TOPIC_OR_PARTITION:
	case CH_KERR_NOT_ENOUGH_REPLICAS:
	case CH_KERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
	case CH_KERR_REQUEST_TIMED_OUT:
		return CH_KERR_COORDINATOR_NOT_AVAILABLE;
	case CH_KERR_NOT_LEADER_OR_FOLLOWER:
	case CH_KERR_KAFKA_STORAGE_ERROR:
		return CH_KERR_NOT_COORDINATOR;
	case CH_KERR_MESSAGE_TOO_LARGE:
	case CH_KERR_RECORD_LIST_TOO_LARGE:
	case CH_KERR_INVALID_FETCH_SIZE:
		return CH_KERR_INVALID_COMMIT_OFFSET_SIZE;
	default:
		return append_error;
	}
}

/* ---- OffsetCommit ------------------------------------------------------------- */

typedef struct commit_item {
	ch_OffsetCommitResponse_OffsetCommitResponsePartition *out;
	const char *topic;
	size_t tlen;
	int32_t partition;
	int64_t offset;
	int32_t leader_epoch;
	const char *metadata;
	size_t mlen;
	int64_t commit_ts, expire_ts;
} commit_item;

typedef struct commit_ctx {
	char *group_id;
	commit_item *items;
	int32_t n;
} commit_ctx;

/* OffsetCommit once its records are durable: the offsets become visible, or each gets the
 * mapped append error. */
static void
commit_finish(ch_coord *c, deferred *d, int64_t now)
{
	(void)now;
	commit_ctx *x = d->ctx;
	if (!x)
		return; /* rejected before anything was appended */
	ch_coord_group *g = ch_coord_group_find(c, ch_str_c(x->group_id));
	for (int32_t i = 0; i < x->n; i++) {
		commit_item *it = &x->items[i];
		if (d->error) {
			it->out->ErrorCode = commit_error(d->error);
			continue;
		}
		if (g) {
			ch_coord_offset_put(g, it->topic, it->tlen, it->partition, it->offset,
					    it->leader_epoch, it->metadata, it->mlen, it->commit_ts,
					    it->expire_ts);
			c->stats.offset_commits++;
		}
	}
}

/* The member check of a commit (Kafka's ClassicGroup.validateOffsetCommit,
 * the state table's check): a member, instance or generation named must
 * be this generation's member; a simple commit (none of them) is only for
 * a group without members. */
static int16_t
commit_check(const ch_coord_group *g, int32_t generation, ch_str member_id, ch_str instance_id)
{
	if (generation >= 0 || member_id.len > 0 || instance_id.len >= 0)
		return ch_coord_validate_member(g, member_id, instance_id, generation);
	return g->members.n > 0 ? CH_KERR_UNKNOWN_MEMBER_ID : CH_KERR_NONE;
}

/* What the state table says of a commit to group id `id` (which exists or
 * not); *gp is the group, created for a simple commit to none. */
static int16_t
commit_rule(ch_coord *c, ch_str id, int32_t generation, ch_str member_id, ch_str instance_id,
	    int64_t now, ch_coord_group **gp)
{
	ch_coord_group *g = ch_coord_group_find(c, id);
	const coord_rule *r = ch_coord_rule_for(REQ_COMMIT, g);
	*gp = NULL;
	if (r->act == ACT_COMMIT_SIMPLE) {
		/* OffsetMetadataManager.validateOffsetCommit: only a simple
		 * commit (generation -1) creates a group. */
		if (generation >= 0)
			return CH_KERR_ILLEGAL_GENERATION;
		g = ch_coord_group_get_or_create(c, id, now);
		r = ch_coord_rule_for(REQ_COMMIT, g);
	}
	*gp = g;
	int16_t err = r->check ? commit_check(g, generation, member_id, instance_id) : CH_KERR_NONE;
	if (!err && r->act != ACT_COMMIT) {
		COORD_NEVER(c, r);
		err = r->err;
	}
	return err;
}

void
ch_coord_commit(ch_coord *c, const ch_coord_req *req)
{
	const ch_OffsetCommitRequest *rq = req->body;
	int64_t now = req->now;
	int16_t version = req->version;
	COORD_CHECK_ON_RETURN(c, rq->GroupId);
	deferred *d = ch_coord_deferred_new(req, sizeof(ch_OffsetCommitResponse), commit_finish);
	ch_OffsetCommitResponse *resp = d->resp;
	ch_OffsetCommitResponse_init(resp);
	int32_t nt = CH_MAX(rq->Topics_n, 0);
	resp->Topics = ch_coord_deferred_alloc(d, (size_t)nt, sizeof(*resp->Topics));
	resp->Topics_n = nt;
	int32_t total = 0;
	for (int32_t t = 0; t < nt; t++) {
		const ch_OffsetCommitRequest_OffsetCommitRequestTopic *tq = &rq->Topics[t];
		ch_OffsetCommitResponse_OffsetCommitResponseTopic *to = &resp->Topics[t];
		int32_t np = CH_MAX(tq->Partitions_n, 0);
		to->Name = ch_coord_deferred_str(d, tq->Name.len < 0 ? ch_str_c("") : tq->Name);
		to->Partitions = ch_coord_deferred_alloc(d, (size_t)np, sizeof(*to->Partitions));
		to->Partitions_n = np;
		for (int32_t p = 0; p < np; p++)
			to->Partitions[p].PartitionIndex = tq->Partitions[p].PartitionIndex;
		total += np;
	}
	int32_t generation = version >= 1 ? rq->GenerationIdOrMemberEpoch : -1;
	ch_str member_id = version >= 1 ? rq->MemberId : ch_str_c("");
	ch_str instance_id = version >= 7 ? rq->GroupInstanceId : CH_STR_NULL;

	int16_t err = CH_KERR_NONE;
	ch_coord_group *g = NULL;
	if (rq->GroupId.len < 0) {
		err = CH_KERR_INVALID_GROUP_ID;
	} else if ((err = ch_coord_load_error(c, rq->GroupId)) == CH_KERR_NONE) {
		err = commit_rule(c, rq->GroupId, generation, member_id, instance_id, now, &g);
	}
	if (err) {
		for (int32_t t = 0; t < nt; t++)
			for (int32_t p = 0; p < resp->Topics[t].Partitions_n; p++)
				resp->Topics[t].Partitions[p].ErrorCode = err;
		ch_coord_deferred_start(c, d, now);
		return;
	}
	ch_coord_member *m = ch_coord_member_find(g, member_id);
	if (m)
		ch_coord_member_touch_session(m, now);

	commit_ctx *x = ch_coord_deferred_alloc(d, 1, sizeof(*x));
	x->group_id = dstrdup(d, g->group_id, strlen(g->group_id));
	x->items = ch_coord_deferred_alloc(d, (size_t)total, sizeof(*x->items));
	d->ctx = x;
	ch_coord_record *recs = ch_xcalloc((size_t)(total ? total : 1), sizeof(*recs));
	int32_t nrec = 0;
	int64_t expire = version >= 2 && version <= 4 && rq->RetentionTimeMs >= 0
				 ? now + rq->RetentionTimeMs
				 : -1;
	for (int32_t t = 0; t < nt; t++) {
		const ch_OffsetCommitRequest_OffsetCommitRequestTopic *tq = &rq->Topics[t];
		ch_OffsetCommitResponse_OffsetCommitResponseTopic *to = &resp->Topics[t];
		for (int32_t p = 0; p < to->Partitions_n; p++) {
			const ch_OffsetCommitRequest_OffsetCommitRequestPartition *pq =
				&tq->Partitions[p];
			ch_OffsetCommitResponse_OffsetCommitResponsePartition *po =
				&to->Partitions[p];
			if (c->ops.check_partition) {
				po->ErrorCode = c->ops.check_partition(c->ops.ud, tq->Name,
								       pq->PartitionIndex);
				if (po->ErrorCode)
					continue;
			}
			int32_t mlen = CH_MAX(pq->CommittedMetadata.len, 0);
			if (mlen > c->cfg.offset_metadata_max_bytes) {
				po->ErrorCode = CH_KERR_OFFSET_METADATA_TOO_LARGE;
				continue;
			}
			commit_item *it = &x->items[x->n++];
			it->out = po;
			it->topic = to->Name.p;
			it->tlen = (size_t)to->Name.len;
			it->partition = pq->PartitionIndex;
			it->offset = pq->CommittedOffset;
			it->leader_epoch = version >= 6 ? pq->CommittedLeaderEpoch : -1;
			it->metadata =
				dstrdup(d, mlen ? pq->CommittedMetadata.p : "", (size_t)mlen);
			it->mlen = (size_t)mlen;
			it->commit_ts = version == 1 && pq->CommitTimestamp >= 0
						? pq->CommitTimestamp
						: now;
			it->expire_ts = expire;
			ch_coord_record_offset(&recs[nrec++], g->group_id, it->topic, it->partition,
					       it->offset, it->leader_epoch, it->metadata, it->mlen,
					       it->commit_ts, it->expire_ts);
		}
	}
	if (nrec)
		ch_coord_deferred_add_append(c, d, g, recs, (size_t)nrec);
	for (int32_t i = 0; i < nrec; i++)
		ch_coord_record_free(&recs[i]);
	free(recs);
	ch_coord_deferred_start(c, d, now);
}

/* ---- OffsetFetch ----------------------------------------------------------------- */

typedef ch_OffsetFetchResponse_OffsetFetchResponsePartitions fetch_part; /* v8+ shape */
typedef ch_OffsetFetchResponse_OffsetFetchResponseTopics fetch_topic;

/* One partition of an OffsetFetch answer: the group's commit, or -1 and "" without one. */
static void
fill_part(fetch_part *o, const ch_coord_group *g, const char *topic, size_t tlen, int32_t partition)
{
	const offset_entry *e = g ? ch_coord_offset_find(g, topic, tlen, partition) : NULL;
	o->PartitionIndex = partition;
	o->CommittedOffset = e ? e->offset : -1;
	o->CommittedLeaderEpoch = e ? e->leader_epoch : -1;
	/* Kafka answers "" (NO_METADATA) for a partition without a commit. */
	o->Metadata = e ? (ch_str){e->metadata, e->metadata_len} : CH_STR_LIT("");
	o->ErrorCode = CH_KERR_NONE;
}

/* One group's offsets, in the v8+ shape (converted for older versions). */
static void
fetch_group(deferred *d, const ch_coord_group *g,
	    const ch_OffsetFetchRequest_OffsetFetchRequestTopics *topics, int32_t ntopics,
	    fetch_topic **out, int32_t *nout)
{
	if (ntopics >= 0) {
		*out = ch_coord_deferred_alloc(d, (size_t)ntopics, sizeof(**out));
		*nout = ntopics;
		for (int32_t t = 0; t < ntopics; t++) {
			const ch_OffsetFetchRequest_OffsetFetchRequestTopics *tq = &topics[t];
			fetch_topic *to = &(*out)[t];
			int32_t np = CH_MAX(tq->PartitionIndexes_n, 0);
			to->Name = tq->Name;
			to->Partitions = ch_coord_deferred_alloc(d, (size_t)np, sizeof(fetch_part));
			to->Partitions_n = np;
			for (int32_t p = 0; p < np; p++)
				fill_part(&to->Partitions[p], g, tq->Name.p ? tq->Name.p : "",
					  (size_t)CH_MAX(tq->Name.len, 0), tq->PartitionIndexes[p]);
		}
		return;
	}
	/* All committed partitions, grouped by topic in first-commit order. */
	*out = NULL;
	*nout = 0;
	if (!g || g->offsets.n == 0)
		return;
	*out = ch_coord_deferred_alloc(d, g->offsets.n, sizeof(**out));
	ch_map topic_idx;
	ch_map_init(&topic_idx);
	ch_map_foreach (&g->offsets, me) {
		const offset_entry *e = me->value;
		size_t tlen = strlen(e->topic);
		intptr_t idx = (intptr_t)ch_map_get(&topic_idx, e->topic, tlen);
		if (!idx) {
			idx = ++*nout;
			ch_map_put(&topic_idx, e->topic, tlen, (void *)idx);
			fetch_topic *to = &(*out)[idx - 1];
			to->Name = ch_str_c(e->topic);
			to->Partitions =
				ch_coord_deferred_alloc(d, g->offsets.n, sizeof(fetch_part));
			to->Partitions_n = 0;
		}
		fetch_topic *to = &(*out)[idx - 1];
		fill_part(&to->Partitions[to->Partitions_n++], g, e->topic, tlen, e->partition);
	}
	ch_map_free(&topic_idx);
}

/* Why a group's offsets cannot be fetched: its partition is not loaded,
 * or its state table cell is an error (none is: OffsetFetch does not
 * depend on the state). 0 and *gp = the group (or NULL): fetch. */
static int16_t
fetch_error(const ch_coord *c, ch_str id, const ch_coord_group **gp)
{
	*gp = NULL;
	int16_t err = ch_coord_load_error(c, id);
	if (err)
		return err;
	const ch_coord_group *g = ch_coord_group_find(c, id);
	const coord_rule *r = ch_coord_rule_for(REQ_FETCH, g);
	if (r->act != ACT_FETCH) {
		COORD_NEVER(c, r);
		return r->err;
	}
	*gp = g;
	return CH_KERR_NONE;
}

void
ch_coord_fetch(ch_coord *c, const ch_coord_req *req)
{
	const ch_OffsetFetchRequest *rq = req->body;
	int64_t now = req->now;
	int16_t version = req->version;
	COORD_CHECK_ON_RETURN(c, version >= 8 ? CH_STR_NULL : rq->GroupId);
	deferred *d = ch_coord_deferred_new(req, sizeof(ch_OffsetFetchResponse), NULL);
	ch_OffsetFetchResponse *resp = d->resp;
	ch_OffsetFetchResponse_init(resp);
	if (version >= 8) {
		int32_t ng = CH_MAX(rq->Groups_n, 0);
		resp->Groups = ch_coord_deferred_alloc(d, (size_t)ng, sizeof(*resp->Groups));
		resp->Groups_n = ng;
		for (int32_t i = 0; i < ng; i++) {
			const ch_OffsetFetchRequest_OffsetFetchRequestGroup *gq = &rq->Groups[i];
			ch_OffsetFetchResponse_OffsetFetchResponseGroup *go = &resp->Groups[i];
			go->GroupId = gq->GroupId;
			const ch_coord_group *g;
			go->ErrorCode = fetch_error(c, gq->GroupId, &g);
			if (go->ErrorCode) /* no offsets: "none committed" would be a lie */
				continue;
			fetch_group(d, g, gq->Topics, gq->Topics_n, &go->Topics, &go->Topics_n);
		}
		ch_coord_deferred_start(c, d, now);
		return;
	}
	/* v0-v7: one group; the same data in the older field set. Before v2
	 * there is no top-level error: a load error goes on every requested
	 * partition (with offset -1, as Kafka's getErrorResponse does). */
	const ch_coord_group *g = NULL;
	int16_t load_err = rq->GroupId.len < 0 ? 0 : fetch_error(c, rq->GroupId, &g);
	if (load_err && version >= 2) {
		resp->ErrorCode = load_err;
		resp->Topics_n = 0;
		ch_coord_deferred_start(c, d, now);
		return;
	}
	int32_t nq = rq->Topics_n;
	ch_OffsetFetchRequest_OffsetFetchRequestTopics *tq = NULL;
	if (nq > 0) {
		tq = ch_coord_deferred_alloc(d, (size_t)nq, sizeof(*tq));
		for (int32_t t = 0; t < nq; t++) {
			tq[t].Name = rq->Topics[t].Name;
			tq[t].PartitionIndexes = rq->Topics[t].PartitionIndexes;
			tq[t].PartitionIndexes_n = rq->Topics[t].PartitionIndexes_n;
		}
	}
	fetch_topic *topics;
	int32_t n;
	fetch_group(d, g, tq, nq, &topics, &n);
	resp->Topics = ch_coord_deferred_alloc(d, (size_t)n, sizeof(*resp->Topics));
	resp->Topics_n = n;
	for (int32_t t = 0; t < n; t++) {
		resp->Topics[t].Name = topics[t].Name;
		int32_t np = topics[t].Partitions_n;
		resp->Topics[t].Partitions_n = np;
		resp->Topics[t].Partitions =
			ch_coord_deferred_alloc(d, (size_t)np, sizeof(*resp->Topics[t].Partitions));
		for (int32_t p = 0; p < np; p++) {
			ch_OffsetFetchResponse_OffsetFetchResponsePartition *o =
				&resp->Topics[t].Partitions[p];
			const fetch_part *s = &topics[t].Partitions[p];
			o->PartitionIndex = s->PartitionIndex;
			o->CommittedOffset = s->CommittedOffset;
			o->CommittedLeaderEpoch = s->CommittedLeaderEpoch;
			o->Metadata = s->Metadata;
			o->ErrorCode = load_err ? load_err : s->ErrorCode;
		}
	}
	if (rq->GroupId.len < 0)
		resp->ErrorCode = CH_KERR_INVALID_GROUP_ID;
	ch_coord_deferred_start(c, d, now);
}

/* ---- OffsetDelete ------------------------------------------------------------------ */

/* Topics the group's members subscribe to (consumer protocol). */
static bool
group_subscribes(const ch_coord_group *g, ch_str topic)
{
	if (!g->protocol_type || strcmp(g->protocol_type, "consumer") != 0 || !g->protocol_name)
		return false;
	for (const ch_coord_member *m = g->first; m; m = m->next) {
		for (int32_t i = 0; i < m->n_protocols; i++) {
			if (strcmp(m->protocols[i].name, g->protocol_name) != 0)
				continue;
			ch_rd r;
			ch_rd_init(&r, m->protocols[i].metadata,
				   (size_t)m->protocols[i].metadata_len);
			int16_t v = ch_rd_i16(&r);
			ch_arena a;
			ch_arena_init(&a);
			ch_ConsumerProtocolSubscription s;
			/* Newer versions parse as the newest we know (Kafka's rule). */
			if (v > 3)
				v = 3;
			bool found = false;
			if (ch_rd_ok(&r) && v >= 0 &&
			    ch_ConsumerProtocolSubscription_decode(&r, &a, v, &s) == 0)
				for (int32_t t = 0; t < s.Topics_n && !found; t++)
					found = ch_str_eq(s.Topics[t], topic);
			ch_arena_reset(&a);
			if (found)
				return true;
		}
	}
	return false;
}

typedef struct odel_ctx {
	ch_OffsetDeleteResponse_OffsetDeleteResponsePartition **deleted;
	int32_t n;
} odel_ctx;

/* OffsetDelete once its tombstones are durable or failed: a failure goes on each deleted
 * partition. */
static void
odel_finish(ch_coord *c, deferred *d, int64_t now)
{
	(void)c, (void)now;
	odel_ctx *x = d->ctx;
	if (d->error && x)
		for (int32_t i = 0; i < x->n; i++)
			x->deleted[i]->ErrorCode = commit_error(d->error);
}

void
ch_coord_offset_delete(ch_coord *c, const ch_coord_req *req)
{
	const ch_OffsetDeleteRequest *rq = req->body;
	int64_t now = req->now;
	COORD_CHECK_ON_RETURN(c, rq->GroupId);
	deferred *d = ch_coord_deferred_new(req, sizeof(ch_OffsetDeleteResponse), odel_finish);
	ch_OffsetDeleteResponse *resp = d->resp;
	ch_OffsetDeleteResponse_init(resp);
	ch_coord_group *g = rq->GroupId.len < 0 ? NULL : ch_coord_group_find(c, rq->GroupId);
	int16_t load_err = rq->GroupId.len < 0 ? 0 : ch_coord_load_error(c, rq->GroupId);
	if (rq->GroupId.len < 0) {
		resp->ErrorCode = CH_KERR_INVALID_GROUP_ID;
	} else if (load_err) {
		resp->ErrorCode = load_err;
	} else if (!g || g->state == CH_COORD_GROUP_DEAD) {
		resp->ErrorCode = CH_KERR_GROUP_ID_NOT_FOUND;
	} else if (g->members.n > 0 &&
		   (!g->protocol_type || strcmp(g->protocol_type, "consumer") != 0)) {
		resp->ErrorCode = CH_KERR_NON_EMPTY_GROUP;
	}
	if (resp->ErrorCode) {
		ch_coord_deferred_start(c, d, now);
		return;
	}
	int32_t nt = CH_MAX(rq->Topics_n, 0), total = 0;
	for (int32_t t = 0; t < nt; t++)
		total += CH_MAX(rq->Topics[t].Partitions_n, 0);
	odel_ctx *x = ch_coord_deferred_alloc(d, 1, sizeof(*x));
	x->deleted = ch_coord_deferred_alloc(d, (size_t)total, sizeof(*x->deleted));
	d->ctx = x;
	ch_coord_record *recs = ch_xcalloc((size_t)(total ? total : 1), sizeof(*recs));
	int32_t nrec = 0;
	resp->Topics = ch_coord_deferred_alloc(d, (size_t)nt, sizeof(*resp->Topics));
	resp->Topics_n = nt;
	for (int32_t t = 0; t < nt; t++) {
		const ch_OffsetDeleteRequest_OffsetDeleteRequestTopic *tq = &rq->Topics[t];
		ch_OffsetDeleteResponse_OffsetDeleteResponseTopic *to = &resp->Topics[t];
		int32_t np = CH_MAX(tq->Partitions_n, 0);
		to->Name = ch_coord_deferred_str(d, tq->Name);
		to->Partitions = ch_coord_deferred_alloc(d, (size_t)np, sizeof(*to->Partitions));
		to->Partitions_n = np;
		bool subscribed = g->members.n > 0 && group_subscribes(g, tq->Name);
		for (int32_t p = 0; p < np; p++) {
			int32_t part = tq->Partitions[p].PartitionIndex;
			to->Partitions[p].PartitionIndex = part;
			if (subscribed) {
				to->Partitions[p].ErrorCode = CH_KERR_GROUP_SUBSCRIBED_TO_TOPIC;
				continue;
			}
			if (c->ops.check_partition &&
			    c->ops.check_partition(c->ops.ud, tq->Name, part) != 0) {
				to->Partitions[p].ErrorCode = CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
				continue;
			}
			offset_entry *e = tq->Name.len >= 0
						  ? ch_coord_offset_find(g, tq->Name.p,
									 (size_t)tq->Name.len, part)
						  : NULL;
			if (!e)
				continue; /* nothing to delete: success */
			ch_coord_record_offset_tombstone(&recs[nrec++], g->group_id, e->topic,
							 part);
			x->deleted[x->n++] = &to->Partitions[p];
			ch_coord_offset_remove(g, e);
			c->stats.offset_deletions++;
		}
	}
	if (nrec)
		ch_coord_deferred_add_append(c, d, g, recs, (size_t)nrec);
	for (int32_t i = 0; i < nrec; i++)
		ch_coord_record_free(&recs[i]);
	free(recs);
	ch_coord_deferred_start(c, d, now);
}

/* ---- retention ------------------------------------------------------------------------ */

/* Kafka's cleanupGroupMetadata: expire offsets (KIP-211: for an Empty
 * group, offsets.retention after it became Empty; for a Stable consumer
 * group, offsets of topics nobody subscribes to, by commit time; explicit
 * expire timestamps from OffsetCommit v1-v4 always), then drop Empty groups
 * that have no offsets left. */
int64_t
ch_coord_offset_expires_at(const ch_coord_group *g, const offset_entry *e)
{
	int64_t ret = g->coord->cfg.offsets_retention_ms;
	bool empty = g->state == CH_COORD_GROUP_EMPTY;
	/* A group that never had a protocol type is a simple (standalone)
	 * consumer's: its offsets expire by commit time. */
	bool simple = empty && !g->protocol_type;
	bool stable_consumer = g->state == CH_COORD_GROUP_STABLE && g->protocol_type &&
			       strcmp(g->protocol_type, "consumer") == 0;
	int64_t t = e->expire_ts >= 0 ? e->expire_ts : INT64_MAX;
	if (simple)
		t = CH_MIN(t, e->commit_ts + ret);
	else if (empty)
		t = CH_MIN(t, g->state_ts + ret);
	else if (stable_consumer && e->expire_ts < 0 && !group_subscribes(g, ch_str_c(e->topic)))
		t = e->commit_ts + ret;
	return t;
}

void
ch_coord_retention_run(ch_coord *c, int64_t now)
{
	size_t expired_total = 0, groups_removed = 0;
	ch_map_foreach_safe(&c->groups, ge, gtmp)
	{
		ch_coord_group *g = ge->value;
		if (g->store_id)
			continue; /* a store in flight: look again next time */
		if (ch_coord_partition_state(c, g->partition) != CH_COORD_LOADED)
			continue; /* still loading: its records are not all in */
		bool empty = g->state == CH_COORD_GROUP_EMPTY;
		size_t n = 0;
		ch_coord_record *recs = NULL;
		ch_map_foreach_safe(&g->offsets, oe, otmp)
		{
			offset_entry *e = oe->value;
			if (ch_coord_offset_expires_at(g, e) > now)
				continue;
			recs = ch_xrealloc(recs, (n + 1) * sizeof(*recs));
			ch_coord_record_offset_tombstone(&recs[n++], g->group_id, e->topic,
							 e->partition);
			ch_coord_offset_remove(g, e);
		}
		bool drop = empty && g->offsets.n == 0;
		if (drop) {
			recs = ch_xrealloc(recs, (n + 1) * sizeof(*recs));
			ch_coord_record_group_tombstone(&recs[n++], g);
		}
		if (n) {
			pending_append *a = ch_coord_append_new(c, A_FIRE, g, NULL, 0);
			ch_coord_append_issue(c, a, recs, n, g->partition);
		}
		expired_total += drop ? n - 1 : n;
		c->stats.offset_expirations += drop ? n - 1 : n;
		for (size_t i = 0; i < n; i++)
			ch_coord_record_free(&recs[i]);
		free(recs);
		if (drop) {
			coord_reason why = ch_coord_reason_make(
				CH_COORD_CAUSE_DELETED,
				"offsets retention: Empty with no offsets left");
			ch_coord_group_delete(g, now, &why);
			groups_removed++;
		}
	}
	if (expired_total || groups_removed)
		COORD_LOGI(c, "offsets retention: expired %zu offsets, removed %zu empty groups",
			   expired_total, groups_removed);
}
