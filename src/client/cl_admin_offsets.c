/*
 * cl_admin_offsets.c: the admin calls on offsets and on groups' lives:
 * list offsets (ListOffsets at the partitions' leaders), committed offsets
 * of many groups (OffsetFetch), alter and delete a group's offsets
 * (OffsetCommit without a member, OffsetDelete), delete groups
 * (DeleteGroups), remove members (LeaveGroup with member identities).
 * Each is an ad_call (cl_admin_int.h).
 */
#include "client/cl_admin_int.h"

#include <stdlib.h>
#include <string.h>

/* Leader errors after which Java's AdminClient looks the leader up again
 * (InvalidMetadataException, and OFFSET_NOT_AVAILABLE while a new leader
 * catches up). */
static bool
stale_leader(int16_t err)
{
	switch (err) {
	case CH_KERR_NOT_LEADER_OR_FOLLOWER:
	case CH_KERR_LEADER_NOT_AVAILABLE:
	case CH_KERR_UNKNOWN_TOPIC_OR_PARTITION:
	case CH_KERR_FENCED_LEADER_EPOCH:
	case CH_KERR_UNKNOWN_LEADER_EPOCH:
	case CH_KERR_REPLICA_NOT_AVAILABLE:
	case CH_KERR_KAFKA_STORAGE_ERROR:
	case CH_KERR_OFFSET_NOT_AVAILABLE:
		return true;
	default:
		return false;
	}
}

/* ---- list offsets ------------------------------------------------------------ */

/* A list-offsets call's data (k->ud). */
typedef struct lo_call {
	cohort_offset_query *q;
	int8_t isolation; /* cohort_isolation_level */
} lo_call;

/* Encodes ListOffsets for the batch, partitions grouped by topic; max-timestamp items end UNSUPPORTED_VERSION below v7. */
static void
build_list_offsets(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n,
		   size_t *encoded)
{
	const lo_call *lo = k->ud;
	cohort_offset_query *q = lo->q;
	/* max timestamp needs v7: those items end here, after the encoded ones;
	 * a partition asked for again (another spec) waits for a request of its
	 * own, since answers are told apart by partition only */
	size_t enc = 0;
	for (size_t i = 0; i < n; i++) {
		if (q[items[i]->idx].spec == COHORT_OFFSET_SPEC_MAX_TIMESTAMP && version < 7) {
			ad_done(k, items[i], CH_KERR_UNSUPPORTED_VERSION);
			continue;
		}
		bool again = false;
		for (size_t j = 0; j < enc && !again; j++)
			again = items[j]->partition == items[i]->partition &&
				strcmp(items[j]->key, items[i]->key) == 0;
		if (again)
			continue;
		ad_item *t = items[enc];
		items[enc++] = items[i];
		items[i] = t;
	}
	ch_ListOffsetsRequest m;
	ch_ListOffsetsRequest_init(&m);
	ch_ListOffsetsRequest_ListOffsetsTopic *t = calloc(enc + 1, sizeof(*t));
	ch_ListOffsetsRequest_ListOffsetsPartition *p = calloc(enc + 1, sizeof(*p));
	if (!t || !p) {
		free(t);
		free(p);
		b->oom = true;
		return;
	}
	/* partitions grouped by topic, in the order the topics come */
	int32_t nt = 0;
	size_t np = 0;
	for (size_t i = 0; i < enc; i++) {
		bool seen = false;
		for (int32_t j = 0; j < nt && !seen; j++)
			seen = ch_str_eq_c(t[j].Name, items[i]->key);
		if (seen)
			continue;
		t[nt].Name = ch_str_c(items[i]->key);
		t[nt].Partitions = p + np;
		for (size_t j = i; j < enc; j++) {
			if (strcmp(items[j]->key, items[i]->key) != 0)
				continue;
			p[np].PartitionIndex = items[j]->partition;
			p[np].CurrentLeaderEpoch = -1;
			p[np].Timestamp = q[items[j]->idx].spec;
			p[np].MaxNumOffsets = 1;
			np++;
			t[nt].Partitions_n++;
		}
		nt++;
	}
	m.ReplicaId = -1;
	m.IsolationLevel = lo->isolation; /* read_committed: LATEST is the LSO */
	m.Topics = t;
	m.Topics_n = nt;
	m.TimeoutMs = k->c->conf.request_timeout_ms;
	ch_ListOffsetsRequest_encode(b, version, &m);
	free(t);
	free(p);
	*encoded = enc;
}

/* Takes each partition's offset; a stale leader is looked up again. */
static void
done_list_offsets(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	(void)version;
	cohort_offset_query *q = ((lo_call *)k->ud)->q;
	const ch_ListOffsetsResponse *m = resp;
	for (size_t i = 0; i < n; i++) {
		ad_item *it = items[i];
		const ch_ListOffsetsResponse_ListOffsetsTopicResponse *t =
			AD_FIND(m->Topics, m->Topics_n, Name, it->key);
		const ch_ListOffsetsResponse_ListOffsetsPartitionResponse *pr =
			t ? AD_FIND_PART(t->Partitions, t->Partitions_n, it->partition) : NULL;
		if (!pr) {
			ad_done(k, it, COHORT_ERR__BAD_MSG);
		} else if (stale_leader(pr->ErrorCode)) {
			ad_retry(k, it, pr->ErrorCode, true);
		} else if (pr->ErrorCode) {
			ad_done(k, it, pr->ErrorCode);
		} else {
			cohort_offset_query *d = &q[it->idx];
			d->offset = pr->Offset;
			d->timestamp = pr->Timestamp;
			d->leader_epoch = pr->LeaderEpoch;
		}
	}
}

static const ad_ops list_offsets_ops = {
	.api = CH_APIKEY_LIST_OFFSETS,
	.route = R_LEADER,
	.max_version = -1,
	.build = build_list_offsets,
	.done = done_list_offsets,
};

cohort_err
cohort_admin_list_offsets(cohort_admin *a, cohort_offset_query *q, size_t n, int timeout_ms)
{
	return cohort_admin_list_offsets_isolation(a, q, n, timeout_ms, COHORT_READ_UNCOMMITTED);
}

cohort_err
cohort_admin_list_offsets_isolation(cohort_admin *a, cohort_offset_query *q, size_t n,
				    int timeout_ms, cohort_isolation_level isolation)
{
	if (!a || (n && !q) ||
	    (isolation != COHORT_READ_UNCOMMITTED && isolation != COHORT_READ_COMMITTED))
		return COHORT_ERR__INVALID_ARG;
	for (size_t i = 0; i < n; i++)
		if (!q[i].topic || q[i].partition < 0 ||
		    q[i].spec < COHORT_OFFSET_SPEC_MAX_TIMESTAMP)
			return COHORT_ERR__INVALID_ARG;
	lo_call lo = {q, (int8_t)isolation}; /* lives until ad_run returns */
	cohort_err *errs = calloc(n + 1, sizeof(*errs));
	ad_call *k = errs ? ad_new(&a->c, &list_offsets_ops, n, &lo, errs, timeout_ms) : NULL;
	if (!k) {
		free(errs);
		return COHORT_ERR__NOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		k->items[i].key = q[i].topic;
		k->items[i].partition = q[i].partition;
		q[i].offset = q[i].timestamp = -1;
		q[i].leader_epoch = -1;
	}
	cohort_err err = ad_run(k);
	for (size_t i = 0; i < n; i++)
		q[i].err = err ? err : errs[i];
	if (!err)
		err = ad_first_err(errs, n);
	free(errs);
	return err;
}

/* ---- committed offsets of many groups ------------------------------------------------ */

typedef struct {
	cohort_group_offsets_list pub;
	ch_arena arena;
} offsets_res;

typedef struct fetch_call {
	offsets_res *r;
	const cohort_group_offsets_spec *spec;
	bool require_stable;
} fetch_call;

/* Topics of a spec, grouped: tops[0..*nt) with their partition indexes in
 * idx (spec order). Allocated from a. false on OOM. */
static bool
group_topics(ch_arena *a, const cohort_tp *tps, size_t n, ch_str **names, int32_t ***parts,
	     int32_t **counts, int32_t *nt)
{
	*names = ch_arena_alloc(a, sizeof(ch_str) * (n + 1));
	*parts = ch_arena_alloc(a, sizeof(int32_t *) * (n + 1));
	*counts = ch_arena_alloc(a, sizeof(int32_t) * (n + 1));
	if (!*names || !*parts || !*counts)
		return false;
	*nt = 0;
	for (size_t i = 0; i < n; i++) {
		int32_t j = 0;
		while (j < *nt && !ch_str_eq_c((*names)[j], tps[i].topic))
			j++;
		if (j == *nt) {
			(*names)[j] = ch_str_c(tps[i].topic);
			if (!((*parts)[j] = ch_arena_alloc(a, sizeof(int32_t) * n)))
				return false;
			(*nt)++;
		}
		(*parts)[j][(*counts)[j]++] = tps[i].partition;
	}
	return true;
}

/* Encodes OffsetFetch: every group of the batch at v8+, the first one below. */
static void
build_fetch(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n, size_t *encoded)
{
	fetch_call *f = k->ud;
	size_t enc = version >= 8 ? n : 1;
	ch_arena a;
	ch_arena_init(&a);
	ch_OffsetFetchRequest m;
	ch_OffsetFetchRequest_init(&m);
	m.RequireStable = f->require_stable;
	ch_OffsetFetchRequest_OffsetFetchRequestGroup *g =
		ch_arena_alloc(&a, sizeof(*g) * (enc + 1));
	bool ok = g != NULL;
	for (size_t i = 0; ok && i < enc; i++) {
		const cohort_group_offsets_spec *s = &f->spec[items[i]->idx];
		ch_str *names = NULL;
		int32_t **parts = NULL, *counts = NULL, nt = -1;
		if (s->partitions && !(ok = group_topics(&a, s->partitions, s->partitions_n, &names,
							 &parts, &counts, &nt)))
			break;
		if (version >= 8) {
			g[i].GroupId = ch_str_c(items[i]->key);
			g[i].MemberId = CH_STR_NULL;
			g[i].MemberEpoch = -1;
			g[i].Topics_n = nt;
			if (nt >= 0 && !(g[i].Topics = ch_arena_alloc(
						 &a, sizeof(*g[i].Topics) * ((size_t)nt + 1))))
				ok = false;
			for (int32_t j = 0; ok && j < nt; j++)
				g[i].Topics[j] = (ch_OffsetFetchRequest_OffsetFetchRequestTopics){
					names[j], parts[j], counts[j]};
		} else {
			m.GroupId = ch_str_c(items[i]->key);
			m.Topics_n = nt;
			if (nt >= 0 &&
			    !(m.Topics = ch_arena_alloc(&a, sizeof(*m.Topics) * ((size_t)nt + 1))))
				ok = false;
			for (int32_t j = 0; ok && j < nt; j++)
				m.Topics[j] = (ch_OffsetFetchRequest_OffsetFetchRequestTopic){
					names[j], parts[j], counts[j]};
		}
	}
	if (version >= 8) {
		m.Groups = g;
		m.Groups_n = (int32_t)enc;
	}
	if (ok)
		ch_OffsetFetchRequest_encode(b, version, &m);
	else
		b->oom = true;
	ch_arena_free(&a);
	*encoded = enc;
}

/* One committed partition into the result (copied). */
static void
take_offset(ch_arena *ra, cohort_group_offset *d, ch_str topic, int32_t partition, int64_t offset,
	    int32_t epoch, ch_str meta, int16_t err, bool *oom)
{
	d->topic = ad_strdup(ra, topic, oom);
	d->partition = partition;
	d->offset = offset;
	d->leader_epoch = epoch;
	d->metadata = ad_strdup(ra, meta, oom);
	d->err = err;
}

/* qsort order of committed offsets: topic, then partition. */
static int
cmp_offset(const void *a, const void *b)
{
	const cohort_group_offset *x = a, *y = b;
	int c = strcmp(x->topic, y->topic);
	return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

/* A group's answer: its partitions (v0-7 and v8+ entries differ only in
 * type: the caller passes the fields through get). */
typedef struct fetched {
	ch_str topic;
	int32_t partition;
	int64_t offset;
	int32_t epoch;
	ch_str meta;
	int16_t err;
} fetched;

/* A group's fetched partitions into its result: the ones asked in their order (missing ones -1), or all, sorted. */
static void
take_group_offsets(ad_call *k, ad_item *it, const fetched *fp, size_t nf, int16_t group_err)
{
	fetch_call *f = k->ud;
	offsets_res *r = f->r;
	const cohort_group_offsets_spec *s = &f->spec[it->idx];
	cohort_group_offsets *g = &r->pub.groups[it->idx];
	bool oom = false;
	g->err = group_err;
	size_t want = s->partitions ? s->partitions_n : nf;
	g->offsets = ch_arena_alloc(&r->arena, sizeof(cohort_group_offset) * (want + 1));
	g->offsets_n = 0;
	if (!g->offsets) {
		ad_done(k, it, COHORT_ERR__NOMEM);
		return;
	}
	if (!s->partitions) {
		for (size_t i = 0; i < nf; i++)
			take_offset(&r->arena, &g->offsets[g->offsets_n++], fp[i].topic,
				    fp[i].partition, fp[i].offset, fp[i].epoch, fp[i].meta,
				    fp[i].err, &oom);
		if (!oom && g->offsets_n)
			qsort(g->offsets, g->offsets_n, sizeof(cohort_group_offset), cmp_offset);
	} else {
		for (size_t i = 0; i < s->partitions_n; i++) {
			const cohort_tp *tp = &s->partitions[i];
			const fetched *hit = NULL;
			for (size_t j = 0; j < nf && !hit; j++)
				if (fp[j].partition == tp->partition &&
				    ch_str_eq_c(fp[j].topic, tp->topic))
					hit = &fp[j];
			if (hit)
				take_offset(&r->arena, &g->offsets[g->offsets_n++], hit->topic,
					    hit->partition, hit->offset, hit->epoch, hit->meta,
					    hit->err, &oom);
			else
				take_offset(&r->arena, &g->offsets[g->offsets_n++],
					    ch_str_c(tp->topic), tp->partition, -1, -1,
					    CH_STR_LIT(""), 0, &oom);
		}
	}
	ad_done(k, it, oom ? COHORT_ERR__NOMEM : group_err);
}

/* Takes each group's offsets from a v0-v7 or a v8+ answer; coordinator errors retry. */
static void
done_fetch(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	const ch_OffsetFetchResponse *m = resp;
	for (size_t i = 0; i < n; i++) {
		ad_item *it = items[i];
		int16_t gerr = 0;
		fetched *fp = NULL;
		size_t nf = 0, cap = 0;
		bool found = version < 8;
		if (version < 8) {
			gerr = version >= 2 ? m->ErrorCode : 0;
			for (int32_t t = 0; t < m->Topics_n; t++)
				cap += m->Topics[t].Partitions_n > 0
					       ? (size_t)m->Topics[t].Partitions_n
					       : 0;
			fp = calloc(cap + 1, sizeof(*fp));
			for (int32_t t = 0; fp && t < m->Topics_n; t++)
				for (int32_t p = 0; p < m->Topics[t].Partitions_n; p++) {
					const ch_OffsetFetchResponse_OffsetFetchResponsePartition
						*x = &m->Topics[t].Partitions[p];
					fp[nf++] = (fetched){
						m->Topics[t].Name,
						x->PartitionIndex,
						x->CommittedOffset,
						version >= 5 ? x->CommittedLeaderEpoch : -1,
						x->Metadata,
						x->ErrorCode};
				}
		} else {
			for (int32_t g = 0; g < m->Groups_n && !found; g++) {
				const ch_OffsetFetchResponse_OffsetFetchResponseGroup *gr =
					&m->Groups[g];
				if (!ch_str_eq_c(gr->GroupId, it->key))
					continue;
				found = true;
				gerr = gr->ErrorCode;
				for (int32_t t = 0; t < gr->Topics_n; t++)
					cap += gr->Topics[t].Partitions_n > 0
						       ? (size_t)gr->Topics[t].Partitions_n
						       : 0;
				fp = calloc(cap + 1, sizeof(*fp));
				for (int32_t t = 0; fp && t < gr->Topics_n; t++)
					for (int32_t p = 0; p < gr->Topics[t].Partitions_n; p++) {
						const ch_OffsetFetchResponse_OffsetFetchResponsePartitions
							*x = &gr->Topics[t].Partitions[p];
						fp[nf++] = (fetched){
							gr->Topics[t].Name, x->PartitionIndex,
							x->CommittedOffset, x->CommittedLeaderEpoch,
							x->Metadata,        x->ErrorCode};
					}
			}
		}
		/* v0-v1 carry coordinator errors per partition */
		for (size_t p = 0; !gerr && p < nf; p++)
			if (fp[p].err == CH_KERR_NOT_COORDINATOR ||
			    fp[p].err == CH_KERR_COORDINATOR_NOT_AVAILABLE ||
			    fp[p].err == CH_KERR_COORDINATOR_LOAD_IN_PROGRESS)
				gerr = fp[p].err;
		if (!found)
			ad_done(k, it, COHORT_ERR__BAD_MSG);
		else if (!fp)
			ad_done(k, it, COHORT_ERR__NOMEM);
		else if (!ad_coordinator_error(k, it, gerr))
			take_group_offsets(k, it, fp, nf, gerr);
		free(fp);
	}
}

static const ad_ops fetch_ops = {
	.api = CH_APIKEY_OFFSET_FETCH,
	.route = R_COORD,
	.max_version = -1,
	.build = build_fetch,
	.done = done_fetch,
};

cohort_err
cohort_admin_list_group_offsets(cohort_admin *a, const cohort_group_offsets_spec *groups, size_t n,
				int require_stable, int timeout_ms, cohort_group_offsets_list **out)
{
	if (!a || !out || (n && !groups))
		return COHORT_ERR__INVALID_ARG;
	*out = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!groups[i].group_id || (groups[i].partitions_n && !groups[i].partitions))
			return COHORT_ERR__INVALID_ARG;
		for (size_t j = 0; j < groups[i].partitions_n; j++)
			if (!groups[i].partitions[j].topic)
				return COHORT_ERR__INVALID_ARG;
	}
	offsets_res *r = calloc(1, sizeof(*r));
	cohort_err *errs = calloc(n + 1, sizeof(*errs));
	if (!r || !errs) {
		free(r);
		free(errs);
		return COHORT_ERR__NOMEM;
	}
	ch_arena_init(&r->arena);
	fetch_call f = {r, groups, require_stable != 0};
	bool oom = false;
	r->pub.groups = ch_arena_alloc(&r->arena, sizeof(cohort_group_offsets) * (n + 1));
	for (size_t i = 0; r->pub.groups && i < n; i++)
		r->pub.groups[i].group_id = ad_strdup_c(&r->arena, groups[i].group_id, &oom);
	ad_call *k =
		r->pub.groups && !oom ? ad_new(&a->c, &fetch_ops, n, &f, errs, timeout_ms) : NULL;
	if (!k) {
		free(errs);
		cohort_group_offsets_list_free(&r->pub);
		return COHORT_ERR__NOMEM;
	}
	r->pub.groups_n = n;
	for (size_t i = 0; i < n; i++)
		k->items[i].key = r->pub.groups[i].group_id;
	cohort_err cerr = ad_run(k);
	for (size_t i = 0; i < n; i++)
		r->pub.groups[i].err = errs[i];
	cohort_err err = cerr ? cerr : ad_first_err(errs, n);
	free(errs);
	if (cerr) {
		cohort_group_offsets_list_free(&r->pub);
		return cerr;
	}
	*out = &r->pub;
	return err;
}

void
cohort_group_offsets_list_free(cohort_group_offsets_list *l)
{
	if (!l)
		return;
	offsets_res *r = (offsets_res *)l;
	ch_arena_free(&r->arena);
	free(r);
}

/* ---- one group's partitions: alter and delete offsets ------------------------------------- */

/* The partitions of a one-group call (alter: cohort_group_offset, delete:
 * cohort_tp_offset), by index. */
typedef struct parts_call {
	cohort_group_offset *alter;
	cohort_tp_offset *del;
	size_t n;
} parts_call;

/* The topic of partition i of a one-group call. */
static const char *
part_topic(const parts_call *pc, size_t i)
{
	return pc->alter ? pc->alter[i].topic : pc->del[i].topic;
}

/* The partition number of partition i of a one-group call. */
static int32_t
part_index(const parts_call *pc, size_t i)
{
	return pc->alter ? pc->alter[i].partition : pc->del[i].partition;
}

/* Sets partition i's result of a one-group call. */
static void
set_part_err(parts_call *pc, size_t i, cohort_err err)
{
	if (pc->alter)
		pc->alter[i].err = err;
	else
		pc->del[i].err = err;
}

/* The caller's partitions grouped by topic into topic[] / part[] (index
 * lists). false on OOM. */
static bool
parts_by_topic(const parts_call *pc, size_t **order, size_t **starts, size_t *nt)
{
	*order = calloc(pc->n + 1, sizeof(size_t));
	*starts = calloc(pc->n + 2, sizeof(size_t));
	if (!*order || !*starts)
		return false;
	bool *used = calloc(pc->n + 1, sizeof(bool));
	if (!used)
		return false;
	size_t k = 0;
	*nt = 0;
	for (size_t i = 0; i < pc->n; i++) {
		if (used[i])
			continue;
		(*starts)[(*nt)++] = k;
		for (size_t j = i; j < pc->n; j++)
			if (!used[j] && strcmp(part_topic(pc, j), part_topic(pc, i)) == 0) {
				used[j] = true;
				(*order)[k++] = j;
			}
	}
	(*starts)[*nt] = k;
	free(used);
	return true;
}

/* Encodes OffsetCommit as an admin: generation -1, member id "", no instance id. */
static void
build_commit(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n, size_t *encoded)
{
	parts_call *pc = k->ud;
	size_t *order = NULL, *starts = NULL, nt = 0;
	ch_OffsetCommitRequest m;
	ch_OffsetCommitRequest_init(&m);
	ch_OffsetCommitRequest_OffsetCommitRequestTopic *t = NULL;
	ch_OffsetCommitRequest_OffsetCommitRequestPartition *p = NULL;
	if (!parts_by_topic(pc, &order, &starts, &nt) || !(t = calloc(nt + 1, sizeof(*t))) ||
	    !(p = calloc(pc->n + 1, sizeof(*p)))) {
		b->oom = true;
		goto out;
	}
	for (size_t i = 0; i < nt; i++) {
		t[i].Name = ch_str_c(part_topic(pc, order[starts[i]]));
		t[i].Partitions = p + starts[i];
		t[i].Partitions_n = (int32_t)(starts[i + 1] - starts[i]);
		for (size_t j = starts[i]; j < starts[i + 1]; j++) {
			const cohort_group_offset *o = &pc->alter[order[j]];
			p[j].PartitionIndex = o->partition;
			p[j].CommittedOffset = o->offset;
			p[j].CommittedLeaderEpoch = o->leader_epoch;
			p[j].CommitTimestamp = -1;
			p[j].CommittedMetadata =
				o->metadata ? ch_str_c(o->metadata) : CH_STR_LIT("");
		}
	}
	m.GroupId = ch_str_c(items[0]->key);
	m.GenerationIdOrMemberEpoch = -1;
	m.MemberId = CH_STR_LIT("");
	m.GroupInstanceId = CH_STR_NULL;
	m.RetentionTimeMs = -1;
	m.Topics = t;
	m.Topics_n = (int32_t)nt;
	ch_OffsetCommitRequest_encode(b, version, &m);
	*encoded = n;
out:
	free(order);
	free(starts);
	free(t);
	free(p);
}

/* Java's AlterConsumerGroupOffsetsHandler: a coordinator error on any
 * partition retries the whole commit; the rest are per partition. */
static void
done_commit(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	(void)version;
	(void)n;
	parts_call *pc = k->ud;
	const ch_OffsetCommitResponse *m = resp;
	for (int32_t i = 0; i < m->Topics_n; i++)
		for (int32_t j = 0; j < m->Topics[i].Partitions_n; j++) {
			int16_t e = m->Topics[i].Partitions[j].ErrorCode;
			if (e == CH_KERR_REQUEST_TIMED_OUT)
				e = CH_KERR_NOT_COORDINATOR;
			if (ad_coordinator_error(k, items[0], e))
				return;
		}
	cohort_err first = COHORT_OK;
	for (size_t x = 0; x < pc->n; x++) {
		const ch_OffsetCommitResponse_OffsetCommitResponseTopic *t =
			AD_FIND(m->Topics, m->Topics_n, Name, part_topic(pc, x));
		const ch_OffsetCommitResponse_OffsetCommitResponsePartition *p =
			t ? AD_FIND_PART(t->Partitions, t->Partitions_n, part_index(pc, x)) : NULL;
		cohort_err e = p ? p->ErrorCode : COHORT_ERR__BAD_MSG;
		set_part_err(pc, x, e);
		first = first ? first : e;
	}
	ad_done(k, items[0], first);
}

static const ad_ops commit_ops = {
	.api = CH_APIKEY_OFFSET_COMMIT,
	.route = R_COORD,
	.max_version = -1,
	.build = build_commit,
	.done = done_commit,
};

/* Encodes OffsetDelete for the call's partitions, grouped by topic. */
static void
build_offset_delete(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n,
		    size_t *encoded)
{
	parts_call *pc = k->ud;
	size_t *order = NULL, *starts = NULL, nt = 0;
	ch_OffsetDeleteRequest m;
	ch_OffsetDeleteRequest_init(&m);
	ch_OffsetDeleteRequest_OffsetDeleteRequestTopic *t = NULL;
	ch_OffsetDeleteRequest_OffsetDeleteRequestPartition *p = NULL;
	if (!parts_by_topic(pc, &order, &starts, &nt) || !(t = calloc(nt + 1, sizeof(*t))) ||
	    !(p = calloc(pc->n + 1, sizeof(*p)))) {
		b->oom = true;
		goto out;
	}
	for (size_t i = 0; i < nt; i++) {
		t[i].Name = ch_str_c(part_topic(pc, order[starts[i]]));
		t[i].Partitions = p + starts[i];
		t[i].Partitions_n = (int32_t)(starts[i + 1] - starts[i]);
		for (size_t j = starts[i]; j < starts[i + 1]; j++)
			p[j].PartitionIndex = part_index(pc, order[j]);
	}
	m.GroupId = ch_str_c(items[0]->key);
	m.Topics = t;
	m.Topics_n = (int32_t)nt;
	ch_OffsetDeleteRequest_encode(b, version, &m);
	*encoded = n;
out:
	free(order);
	free(starts);
	free(t);
	free(p);
}

/* Java's DeleteConsumerGroupOffsetsHandler: a group error ends every
 * partition with it (coordinator errors retry), else per partition. */
static void
done_offset_delete(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	(void)version;
	(void)n;
	parts_call *pc = k->ud;
	const ch_OffsetDeleteResponse *m = resp;
	if (ad_coordinator_error(k, items[0], m->ErrorCode))
		return;
	cohort_err first = m->ErrorCode;
	for (size_t x = 0; x < pc->n; x++) {
		const ch_OffsetDeleteResponse_OffsetDeleteResponseTopic *t =
			AD_FIND(m->Topics, m->Topics_n, Name, part_topic(pc, x));
		const ch_OffsetDeleteResponse_OffsetDeleteResponsePartition *p =
			t ? AD_FIND_PART(t->Partitions, t->Partitions_n, part_index(pc, x)) : NULL;
		cohort_err e = m->ErrorCode ? m->ErrorCode : p ? p->ErrorCode : COHORT_ERR__BAD_MSG;
		set_part_err(pc, x, e);
		first = first ? first : e;
	}
	ad_done(k, items[0], first);
}

static const ad_ops offset_delete_ops = {
	.api = CH_APIKEY_OFFSET_DELETE,
	.route = R_COORD,
	.max_version = -1,
	.build = build_offset_delete,
	.done = done_offset_delete,
};

/* Runs a one-group call over pc's partitions; a call-level error (or a
 * timeout before any answer) goes to every partition. */
static cohort_err
run_parts(cohort_admin *a, const ad_ops *ops, const char *group, parts_call *pc, int timeout_ms)
{
	cohort_err gerr = COHORT_OK;
	ad_call *k = ad_new(&a->c, ops, 1, pc, &gerr, timeout_ms);
	if (!k)
		return COHORT_ERR__NOMEM;
	k->items[0].key = group;
	for (size_t i = 0; i < pc->n; i++)
		set_part_err(pc, i, COHORT_OK);
	cohort_err err = ad_run(k);
	if (err || gerr) {
		for (size_t i = 0; i < pc->n; i++) {
			cohort_err pe = pc->alter ? pc->alter[i].err : pc->del[i].err;
			if (!pe || err)
				set_part_err(pc, i, err ? err : gerr);
		}
	}
	return err ? err : gerr;
}

cohort_err
cohort_admin_alter_group_offsets(cohort_admin *a, const char *group, cohort_group_offset *offsets,
				 size_t n, int timeout_ms)
{
	if (!a || !group || (n && !offsets))
		return COHORT_ERR__INVALID_ARG;
	for (size_t i = 0; i < n; i++)
		if (!offsets[i].topic || offsets[i].partition < 0 || offsets[i].offset < 0)
			return COHORT_ERR__INVALID_ARG;
	parts_call pc = {offsets, NULL, n};
	return run_parts(a, &commit_ops, group, &pc, timeout_ms);
}

cohort_err
cohort_admin_delete_group_offsets(cohort_admin *a, const char *group, cohort_tp_offset *partitions,
				  size_t n, int timeout_ms)
{
	if (!a || !group || (n && !partitions))
		return COHORT_ERR__INVALID_ARG;
	for (size_t i = 0; i < n; i++)
		if (!partitions[i].topic || partitions[i].partition < 0)
			return COHORT_ERR__INVALID_ARG;
	parts_call pc = {NULL, partitions, n};
	return run_parts(a, &offset_delete_ops, group, &pc, timeout_ms);
}

/* ---- delete groups -------------------------------------------------------------------------- */

/* Encodes DeleteGroups for the batch's groups. */
static void
build_delete_groups(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n,
		    size_t *encoded)
{
	(void)k;
	ch_DeleteGroupsRequest m;
	ch_DeleteGroupsRequest_init(&m);
	ch_str *g = ad_keys(items, n, b);
	if (!g)
		return;
	m.GroupsNames = g;
	m.GroupsNames_n = (int32_t)n;
	ch_DeleteGroupsRequest_encode(b, version, &m);
	free(g);
	*encoded = n;
}

/* Takes each group's result; coordinator errors retry. */
static void
done_delete_groups(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	(void)version;
	const ch_DeleteGroupsResponse *m = resp;
	for (size_t i = 0; i < n; i++) {
		ad_item *it = items[i];
		const ch_DeleteGroupsResponse_DeletableGroupResult *r =
			AD_FIND(m->Results, m->Results_n, GroupId, it->key);
		cohort_err e = r ? r->ErrorCode : COHORT_ERR__BAD_MSG;
		if (!ad_coordinator_error(k, it, (int16_t)(e > 0 ? e : 0)))
			ad_done(k, it, e);
	}
}

static const ad_ops delete_groups_ops = {
	.api = CH_APIKEY_DELETE_GROUPS,
	.route = R_COORD,
	.max_version = -1,
	.build = build_delete_groups,
	.done = done_delete_groups,
};

cohort_err
cohort_admin_delete_groups(cohort_admin *a, const char *const *groups, size_t n, cohort_err *errs,
			   int timeout_ms)
{
	return ad_run_names(a, &delete_groups_ops, groups, n, errs, timeout_ms);
}

/* ---- remove members ---------------------------------------------------------------------------- */

typedef struct leave_call {
	const char **member_ids;   /* "" for removal by instance id */
	const char **instance_ids; /* NULL for a dynamic member (remove all) */
	cohort_err *errs;
	size_t n;
	const char *reason;
} leave_call;

/* Encodes LeaveGroup v3+ with the member identities (and the reason, v5+). */
static void
build_leave(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n, size_t *encoded)
{
	leave_call *l = k->ud;
	ch_LeaveGroupRequest m;
	ch_LeaveGroupRequest_init(&m);
	ch_LeaveGroupRequest_MemberIdentity *mi = calloc(l->n + 1, sizeof(*mi));
	if (!mi) {
		b->oom = true;
		return;
	}
	for (size_t i = 0; i < l->n; i++) {
		mi[i].MemberId = ch_str_c(l->member_ids[i]);
		mi[i].GroupInstanceId = ch_str_c(l->instance_ids[i]);
		mi[i].Reason = ch_str_c(l->reason);
	}
	m.GroupId = ch_str_c(items[0]->key);
	m.Members = mi;
	m.Members_n = (int32_t)l->n;
	ch_LeaveGroupRequest_encode(b, version, &m);
	free(mi);
	*encoded = n;
}

/* Java's RemoveMembersFromConsumerGroupHandler: a group error ends every
 * member with it (coordinator errors retry), else each member its own. */
static void
done_leave(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	(void)version;
	(void)n;
	leave_call *l = k->ud;
	const ch_LeaveGroupResponse *m = resp;
	if (ad_coordinator_error(k, items[0], m->ErrorCode))
		return;
	cohort_err first = m->ErrorCode;
	for (size_t i = 0; i < l->n; i++) {
		cohort_err e = m->ErrorCode ? m->ErrorCode : COHORT_ERR__BAD_MSG;
		for (int32_t j = 0; !m->ErrorCode && j < m->Members_n; j++) {
			const ch_LeaveGroupResponse_MemberResponse *r = &m->Members[j];
			bool same = l->instance_ids[i]
					    ? ch_str_eq_c(r->GroupInstanceId, l->instance_ids[i])
					    : ch_str_eq_c(r->MemberId, l->member_ids[i]);
			if (same)
				e = r->ErrorCode;
		}
		l->errs[i] = e;
		if (!first)
			first = e;
	}
	ad_done(k, items[0], first);
}

static const ad_ops leave_ops = {
	.api = CH_APIKEY_LEAVE_GROUP,
	.route = R_COORD,
	.max_version = -1,
	.build = build_leave,
	.done = done_leave,
};

cohort_err
cohort_admin_remove_members(cohort_admin *a, const char *group, const char *const *instance_ids,
			    size_t n, cohort_err *errs, const char *reason, int timeout_ms)
{
	if (!a || !group || (n && (!instance_ids || !errs)))
		return COHORT_ERR__INVALID_ARG;
	for (size_t i = 0; i < n; i++)
		if (!instance_ids[i])
			return COHORT_ERR__INVALID_ARG;
	int64_t start = ch_now_mono_ms();
	cohort_group_descriptions *d = NULL;
	leave_call l = {NULL, NULL, errs, n, reason ? reason : "member was removed by an admin"};
	cohort_err err = COHORT_OK;
	if (n == 0) { /* every member: the group says who they are */
		err = cohort_admin_describe_groups(a, &group, 1, timeout_ms, &d);
		if (err) {
			cohort_group_descriptions_free(d);
			return err;
		}
		l.n = d->groups[0].members_n;
		if (l.n == 0) { /* Java: IllegalArgumentException, nothing to remove */
			cohort_group_descriptions_free(d);
			return COHORT_ERR__INVALID_ARG;
		}
	}
	l.member_ids = calloc(l.n + 1, sizeof(char *));
	l.instance_ids = calloc(l.n + 1, sizeof(char *));
	if (!l.errs)
		l.errs = calloc(l.n + 1, sizeof(cohort_err));
	if (!l.member_ids || !l.instance_ids || !l.errs) {
		err = COHORT_ERR__NOMEM;
		goto out;
	}
	for (size_t i = 0; i < l.n; i++) {
		l.member_ids[i] = d ? d->groups[0].members[i].member_id : "";
		l.instance_ids[i] = d ? d->groups[0].members[i].group_instance_id : instance_ids[i];
		l.errs[i] = COHORT_OK;
	}
	int64_t left = ad_timeout(&a->c, timeout_ms) - (ch_now_mono_ms() - start);
	cohort_err gerr = COHORT_OK;
	ad_call *k = ad_new(&a->c, &leave_ops, 1, &l, &gerr, (int)(left > 0 ? left : 0));
	if (!k) {
		err = COHORT_ERR__NOMEM;
		goto out;
	}
	k->items[0].key = group;
	err = ad_run(k);
	if (err || gerr)
		for (size_t i = 0; i < l.n; i++)
			if (!l.errs[i] || err)
				l.errs[i] = err ? err : gerr;
	if (!err)
		err = gerr;
out:
	free(l.member_ids);
	free(l.instance_ids);
	if (l.errs != errs)
		free(l.errs);
	cohort_group_descriptions_free(d);
	return err;
}
