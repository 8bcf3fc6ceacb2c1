/*
 * cl_offsets.c: offset commits, committed offsets and starting positions
 * (I/O thread).
 *
 * OffsetCommit carries the member's generation and member id: only a member
 * of the current generation (STABLE, or REVOKING: the commit inside
 * revoked()) commits; a partition it does not own is refused locally with
 * COHORT_ERR__ASSIGNMENT_LOST. REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION and
 * UNKNOWN_MEMBER_ID answers are returned as they are, never retried as if
 * current. STALE_MEMBER_EPOCH (consumer protocol) is retried only for the
 * auto-commit before a revoke, and then with the member's latest epoch read
 * again at each send while it has one: Java's CommitRequestManager does the
 * same for its auto-commits (isStaleEpochErrorAndValidEpochAvailable) and
 * turns it into CommitFailedException for commitSync. Coordinator errors
 * (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
 * a lost connection) find the coordinator again and retry, until
 * default.api.timeout.ms.
 *
 * A newly owned partition starts at its committed offset (OffsetFetch);
 * without one, or after OFFSET_OUT_OF_RANGE, at auto.offset.reset
 * (ListOffsets -2 earliest / -1 latest to the partition's leader).
 */
#include "client/cl_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_log.h"

/* One commit or committed-offsets call in progress. */
typedef struct o_committed_lookup o_committed_lookup;

typedef struct o_call {
	struct o_call *next, *prev; /* c->calls */
	cl_client *c;
	o_committed_lookup *lookup; /* set for a position lookup's OffsetFetch */
	bool commit;                /* OffsetCommit, else OffsetFetch */
	cohort_tp_offset *offs;     /* own copy (topics inside) */
	size_t n;
	cl_wait *w;          /* sync caller, or NULL */
	cohort_commit_cb cb; /* async caller */
	void *opaque;
	int32_t generation;
	char *member_id;
	bool manual;      /* assigned by the application: no generation, no instance id */
	bool retry_stale; /* STALE_MEMBER_EPOCH retried with the latest epoch (auto-commit) */
	bool refresh;     /* read generation and member id again before the next send */
	int64_t deadline;
	int tries;
	ch_timer retry;
	ch_timer expire; /* default.api.timeout.ms while waiting for a coordinator */
} o_call;

/* Unlinks o from c->calls, cancels its retry timer and frees it with its offsets copy;
 * o->w and o->lookup are not touched (call_finish completes w first). */
static void
call_free(o_call *o)
{
	CH_LIST_UNLINK(o->c->calls, o);
	ch_timer_cancel(o->c->loop, &o->retry);
	ch_timer_cancel(o->c->loop, &o->expire);
	free(o->offs);
	free(o->member_id);
	free(o);
}

/* Hand the result to the caller and free the call. */
static void
call_finish(o_call *o, cohort_err err)
{
	cl_client *c = o->c;
	if (o->w) {
		cl_lock(c);
		bool gone = o->w->abandoned;
		if (!gone && o->w->offsets)
			for (size_t i = 0; i < o->n && i < o->w->n; i++) {
				o->w->offsets[i].offset = o->offs[i].offset;
				o->w->offsets[i].err = o->offs[i].err;
			}
		cl_unlock(c);
		cl_wait_finish(c, o->w, err);
	} else if (o->cb) {
		cl_event *ev = calloc(1, sizeof(*ev));
		if (ev) {
			ev->kind = CL_EV_COMMIT;
			ev->err = err;
			ev->offsets = o->offs;
			ev->n = o->n;
			ev->cb = o->cb;
			ev->opaque = o->opaque;
			o->offs = NULL;
			cl_lock(c);
			cl_event_push(c, ev);
			cl_unlock(c);
		}
	}
	call_free(o);
}

/* ---- OffsetCommit ------------------------------------------------------------ */

/* Topics of o->offs in first-seen order, for grouping partitions. */
static int
distinct_topics(const o_call *o, const char **names, bool (*use)(const cohort_tp_offset *))
{
	int n = 0;
	for (size_t i = 0; i < o->n; i++) {
		if (use && !use(&o->offs[i]))
			continue;
		int j = 0;
		while (j < n && strcmp(names[j], o->offs[i].topic) != 0)
			j++;
		if (j == n)
			names[n++] = o->offs[i].topic;
	}
	return n;
}

static bool
to_send(const cohort_tp_offset *o)
{
	return o->err == COHORT_OK;
}

/* Encodes OffsetCommit for the partitions of o still without a local error, with o's
 * generation and member id; a leader epoch only where the offset is the current position. */
static void
build_commit(cl_client *c, int16_t version, ch_buf *b, void *ud)
{
	o_call *o = ud;
	ch_OffsetCommitRequest r;
	ch_OffsetCommitRequest_init(&r);
	r.GroupId = ch_str_c(c->conf.group_id);
	r.GenerationIdOrMemberEpoch = o->generation;
	r.MemberId = ch_str_c(o->member_id);
	r.GroupInstanceId = o->manual ? CH_STR_NULL : ch_str_c(c->conf.group_instance_id);
	r.RetentionTimeMs = -1;
	const char **names = calloc(o->n + 1, sizeof(char *));
	ch_OffsetCommitRequest_OffsetCommitRequestTopic *t = calloc(o->n + 1, sizeof(*t));
	ch_OffsetCommitRequest_OffsetCommitRequestPartition *p = calloc(o->n + 1, sizeof(*p));
	if (!names || !t || !p) {
		b->oom = true;
		goto out;
	}
	int nt = distinct_topics(o, names, to_send);
	ch_OffsetCommitRequest_OffsetCommitRequestPartition *next = p;
	for (int j = 0; j < nt; j++) {
		t[j].Name = ch_str_c(names[j]);
		t[j].Partitions = next;
		for (size_t i = 0; i < o->n; i++) {
			if (!to_send(&o->offs[i]) || strcmp(o->offs[i].topic, names[j]) != 0)
				continue;
			next->PartitionIndex = o->offs[i].partition;
			next->CommittedOffset = o->offs[i].offset;
			next->CommittedLeaderEpoch = -1;
			next->CommitTimestamp = -1;
			next->CommittedMetadata = CH_STR_LIT("");
			cl_lock(c);
			cl_tp *tp = cl_tp_find(c, o->offs[i].topic, o->offs[i].partition);
			if (tp && tp->position == o->offs[i].offset)
				next->CommittedLeaderEpoch = tp->leader_epoch;
			cl_unlock(c);
			next++;
			t[j].Partitions_n++;
		}
	}
	r.Topics = t;
	r.Topics_n = nt;
	ch_OffsetCommitRequest_encode(b, version, &r);
out:
	free(names);
	free(t);
	free(p);
}

static void send_call(cl_client *c, void *ud);

/* Retry a call after a coordinator error, within its deadline. */
static bool
retry_call(o_call *o, int16_t err)
{
	cl_client *c = o->c;
	if (c->closing)
		return false;
	int64_t now = ch_loop_now(c->loop);
	int64_t wait =
		cl_backoff(c->conf.retry_backoff_ms, c->conf.retry_backoff_max_ms, ++o->tries);
	if (now + wait >= o->deadline)
		return false;
	if (err != CH_KERR_COORDINATOR_LOAD_IN_PROGRESS && err != CH_KERR_STALE_MEMBER_EPOCH)
		cl_member_coordinator_lost(c, err);
	ch_timer_arm(c->loop, &o->retry, now + wait);
	return true;
}

/* Errors after which a commit or committed-offsets call finds the coordinator again and
 * retries (Kafka codes and the local transport/timeout errors). */
static bool
coordinator_error(int e)
{
	return e == CH_KERR_NOT_COORDINATOR || e == CH_KERR_COORDINATOR_NOT_AVAILABLE ||
	       e == CH_KERR_COORDINATOR_LOAD_IN_PROGRESS || e == COHORT_ERR__TRANSPORT ||
	       e == COHORT_ERR__TIMED_OUT;
}

/* Whether o's STALE_MEMBER_EPOCH partitions are sent again: an auto-commit
 * (retry_stale) of a member that still has an epoch to send. */
static bool
stale_retriable(o_call *o)
{
	int32_t gen;
	const char *member_id;
	return o->retry_stale && !o->manual &&
	       cl_member_commit_identity(o->c, &gen, &member_id) == COHORT_OK;
}

/* Takes the member's current generation (epoch) and member id into o before a resend
 * (o->refresh); an error when the member has none to commit with any more. */
static cohort_err
refresh_identity(o_call *o)
{
	int32_t gen;
	const char *member_id;
	o->refresh = false;
	cohort_err who = cl_member_commit_identity(o->c, &gen, &member_id);
	if (who)
		return who;
	if (strcmp(member_id, o->member_id) != 0) {
		char *copy = strdup(member_id);
		if (!copy)
			return COHORT_ERR__NOMEM;
		free(o->member_id);
		o->member_id = copy;
	}
	if (gen != o->generation)
		CH_LOGD(CL_LOG, "group %s: commit again at epoch %d (was %d)", o->c->conf.group_id,
			gen, o->generation);
	o->generation = gen;
	return COHORT_OK;
}

/* OffsetCommit answer: retries the whole call on a coordinator error, and an auto-commit's
 * STALE_MEMBER_EPOCH partitions with the latest epoch, while the deadline allows; else
 * stores each partition's error and finishes o with the first one. */
static void
done_commit(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	(void)version;
	o_call *o = ud;
	if (err == COHORT_ERR__CLOSED) {
		call_finish(o, err);
		return;
	}
	if (err) {
		if (coordinator_error(err) && retry_call(o, 0))
			return;
		call_finish(o, err);
		return;
	}
	const ch_OffsetCommitResponse *r = resp;
	cohort_err first = COHORT_OK;
	int retriable = 0;
	bool stale = false;
	for (int32_t t = 0; t < r->Topics_n; t++)
		for (int32_t p = 0; p < r->Topics[t].Partitions_n; p++) {
			const ch_OffsetCommitResponse_OffsetCommitResponsePartition *rp =
				&r->Topics[t].Partitions[p];
			for (size_t i = 0; i < o->n; i++)
				if (o->offs[i].err == COHORT_OK &&
				    o->offs[i].partition == rp->PartitionIndex &&
				    ch_str_eq_c(r->Topics[t].Name, o->offs[i].topic)) {
					if (coordinator_error(rp->ErrorCode))
						retriable = rp->ErrorCode;
					else if (rp->ErrorCode)
						o->offs[i].err = rp->ErrorCode;
					if (rp->ErrorCode == CH_KERR_STALE_MEMBER_EPOCH)
						stale = true;
				}
		}
	/* the partitions left without an error are sent again; they end with
	 * `again` if no retry fits before the deadline */
	int again = retriable;
	if (stale && stale_retriable(o)) {
		for (size_t i = 0; i < o->n; i++)
			if (o->offs[i].err == CH_KERR_STALE_MEMBER_EPOCH)
				o->offs[i].err = COHORT_OK;
		o->refresh = true;
		if (!again)
			again = CH_KERR_STALE_MEMBER_EPOCH;
	}
	if (again && retry_call(o, (int16_t)again))
		return;
	for (size_t i = 0; i < o->n; i++) {
		if (again && o->offs[i].err == COHORT_OK)
			o->offs[i].err = again;
		if (!first && o->offs[i].err)
			first = o->offs[i].err;
	}
	if (first)
		CH_LOGD(CL_LOG, "group %s: commit: %s", c->conf.group_id, cohort_err_name(first));
	call_finish(o, first);
}

/* ---- OffsetFetch (committed offsets) ------------------------------------------ */

/* Encodes OffsetFetch for every partition of o, both as Topics (v0-v7) and as one group
 * (v8+); the version picks which the encoder writes. */
static void
build_fetch_offsets(cl_client *c, int16_t version, ch_buf *b, void *ud)
{
	o_call *o = ud;
	ch_OffsetFetchRequest r;
	ch_OffsetFetchRequest_init(&r);
	const char **names = calloc(o->n + 1, sizeof(char *));
	ch_OffsetFetchRequest_OffsetFetchRequestTopic *t = calloc(o->n + 1, sizeof(*t));
	ch_OffsetFetchRequest_OffsetFetchRequestTopics *t8 = calloc(o->n + 1, sizeof(*t8));
	int32_t *parts = calloc(o->n + 1, sizeof(int32_t));
	ch_OffsetFetchRequest_OffsetFetchRequestGroup g = {0};
	if (!names || !t || !t8 || !parts) {
		b->oom = true;
		goto out;
	}
	int nt = distinct_topics(o, names, NULL);
	int32_t *next = parts;
	for (int j = 0; j < nt; j++) {
		t[j].Name = t8[j].Name = ch_str_c(names[j]);
		t[j].PartitionIndexes = t8[j].PartitionIndexes = next;
		for (size_t i = 0; i < o->n; i++)
			if (strcmp(o->offs[i].topic, names[j]) == 0) {
				*next++ = o->offs[i].partition;
				t[j].PartitionIndexes_n++;
			}
		t8[j].PartitionIndexes_n = t[j].PartitionIndexes_n;
	}
	r.GroupId = ch_str_c(c->conf.group_id);
	r.Topics = t;
	r.Topics_n = nt;
	g.GroupId = r.GroupId;
	g.MemberId = CH_STR_NULL;
	g.MemberEpoch = -1;
	g.Topics = t8;
	g.Topics_n = nt;
	r.Groups = &g;
	r.Groups_n = 1;
	ch_OffsetFetchRequest_encode(b, version, &r);
out:
	free(names);
	free(t);
	free(t8);
	free(parts);
}

/* Store one partition's answer into the call. */
static void
take_committed(o_call *o, ch_str topic, int32_t partition, int64_t offset, int16_t err,
	       int *retriable)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->offs[i].partition == partition && ch_str_eq_c(topic, o->offs[i].topic)) {
			if (coordinator_error(err) || err == CH_KERR_UNSTABLE_OFFSET_COMMIT)
				*retriable = err;
			o->offs[i].err = err;
			o->offs[i].offset = err ? -1 : offset;
		}
}

/* OffsetFetch answer of cohort_committed: stores offsets and errors in o, retries on
 * coordinator errors and UNSTABLE_OFFSET_COMMIT, else finishes o with the first error. */
static void
done_fetch_offsets(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	(void)c;
	o_call *o = ud;
	if (err) {
		if (err != COHORT_ERR__CLOSED && coordinator_error(err) && retry_call(o, 0))
			return;
		call_finish(o, err);
		return;
	}
	const ch_OffsetFetchResponse *r = resp;
	int retriable = 0;
	int16_t top = 0;
	if (version >= 8) {
		for (int32_t g = 0; g < r->Groups_n; g++) {
			if (r->Groups[g].ErrorCode)
				top = r->Groups[g].ErrorCode;
			for (int32_t t = 0; t < r->Groups[g].Topics_n; t++) {
				const ch_OffsetFetchResponse_OffsetFetchResponseTopics *rt =
					&r->Groups[g].Topics[t];
				for (int32_t p = 0; p < rt->Partitions_n; p++)
					take_committed(o, rt->Name,
						       rt->Partitions[p].PartitionIndex,
						       rt->Partitions[p].CommittedOffset,
						       rt->Partitions[p].ErrorCode, &retriable);
			}
		}
	} else {
		top = version >= 2 ? r->ErrorCode : 0;
		for (int32_t t = 0; t < r->Topics_n; t++)
			for (int32_t p = 0; p < r->Topics[t].Partitions_n; p++)
				take_committed(o, r->Topics[t].Name,
					       r->Topics[t].Partitions[p].PartitionIndex,
					       r->Topics[t].Partitions[p].CommittedOffset,
					       r->Topics[t].Partitions[p].ErrorCode, &retriable);
	}
	if (top && coordinator_error(top))
		retriable = top;
	if (retriable && retry_call(o, (int16_t)retriable))
		return;
	cohort_err first = top;
	for (size_t i = 0; i < o->n && !first; i++)
		first = o->offs[i].err;
	call_finish(o, first);
}

/* Sends o's OffsetCommit or OffsetFetch to the coordinator (cl_member_with_coordinator's
 * fn); without one, retries later or finishes o with COORDINATOR_NOT_AVAILABLE. */
static void
send_call(cl_client *c, void *ud)
{
	o_call *o = ud;
	ch_timer_cancel(c->loop, &o->expire);
	cl_broker *coord = cl_member_coordinator(c);
	cohort_err failed = cl_member_failed(c);
	if (failed) { /* no coordinator will be found (FindCoordinator was fatal) */
		call_finish(o, failed);
		return;
	}
	if (!coord) {
		if (!retry_call(o, CH_KERR_COORDINATOR_NOT_AVAILABLE))
			call_finish(o, COHORT_ERR_COORDINATOR_NOT_AVAILABLE);
		return;
	}
	if (o->commit && o->refresh) {
		cohort_err who = refresh_identity(o);
		if (who) {
			for (size_t i = 0; i < o->n; i++)
				if (o->offs[i].err == COHORT_OK)
					o->offs[i].err = CH_KERR_STALE_MEMBER_EPOCH;
			call_finish(o, CH_KERR_STALE_MEMBER_EPOCH);
			return;
		}
	}
	if (o->commit)
		cl_request(coord, CH_APIKEY_OFFSET_COMMIT, build_commit, done_commit, o);
	else
		cl_request(coord, CH_APIKEY_OFFSET_FETCH, build_fetch_offsets, done_fetch_offsets,
			   o);
}

/* Runs send_call once the coordinator is known; a call still waiting for one at its
 * deadline ends with TIMED_OUT (on_expire). */
static void
call_when_coordinator(o_call *o)
{
	if (cl_member_with_coordinator(o->c, send_call, o))
		ch_timer_arm(o->c->loop, &o->expire, o->deadline);
}

/* o's retry timer: waits for the coordinator again, then send_call. */
static void
on_retry(ch_loop *loop, ch_timer *t, void *ud)
{
	(void)loop;
	(void)t;
	call_when_coordinator(ud);
}

/* o's deadline passed while it waited for a coordinator: TIMED_OUT (a sync caller gave up
 * already; an async one gets its callback). */
static void
on_expire(ch_loop *loop, ch_timer *t, void *ud)
{
	(void)loop;
	(void)t;
	o_call *o = ud;
	cl_member_cancel_waiter(o->c, o);
	call_finish(o, COHORT_ERR__TIMED_OUT);
}

/* A call on a copy of offs (errors cleared) with deadline default.api.timeout.ms, linked
 * into c->calls; NULL without memory.  Freed by call_finish or call_free. */
static o_call *
call_new(cl_client *c, const cohort_tp_offset *offs, size_t n)
{
	o_call *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->c = c;
	o->n = n;
	o->offs = cl_offsets_copy(offs, n);
	if (!o->offs) {
		free(o);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		o->offs[i].err = COHORT_OK;
	ch_timer_init(&o->retry, on_retry, o);
	ch_timer_init(&o->expire, on_expire, o);
	o->deadline = ch_loop_now(c->loop) + c->conf.default_api_timeout_ms;
	o->next = c->calls;
	if (c->calls)
		c->calls->prev = o;
	c->calls = o;
	return o;
}

void
cl_offsets_commit(cl_client *c, cohort_tp_offset *offsets, size_t n, cl_wait *w,
		  cohort_commit_cb cb, void *opaque, bool retry_stale)
{
	o_call *o = call_new(c, offsets, n);
	if (!o) {
		if (w)
			cl_wait_finish(c, w, COHORT_ERR__NOMEM);
		return;
	}
	o->commit = true;
	o->retry_stale = retry_stale;
	o->w = w;
	o->cb = cb;
	o->opaque = opaque;
	const char *member_id = NULL;
	if (!c->conf.group_id) {
		call_finish(o, COHORT_ERR__STATE);
		return;
	}
	/* a rebalance in flight: REBALANCE_IN_PROGRESS (retriable), as Java's
	 * RebalanceInProgressException; a partition not owned: lost. With a
	 * manual assignment Java commits any partition with no generation
	 * (-1, member id ""), as a simple consumer group. */
	cl_lock(c);
	o->manual = c->manual;
	cl_unlock(c);
	cohort_err who = COHORT_OK;
	if (o->manual) {
		o->generation = -1;
		member_id = "";
	} else {
		who = cl_member_commit_identity(c, &o->generation, &member_id);
	}
	size_t sendable = 0;
	cohort_err first = COHORT_OK;
	cl_lock(c);
	for (size_t i = 0; i < n; i++) {
		cl_tp *tp = cl_tp_find(c, o->offs[i].topic, o->offs[i].partition);
		if (!o->manual && (!tp || !tp->owned))
			o->offs[i].err = COHORT_ERR__ASSIGNMENT_LOST;
		else if (who)
			o->offs[i].err = who;
		else
			sendable++;
		if (!first)
			first = o->offs[i].err;
	}
	cl_unlock(c);
	if (!sendable) {
		call_finish(o, first);
		return;
	}
	o->member_id = strdup(member_id);
	if (!o->member_id) {
		call_finish(o, COHORT_ERR__NOMEM);
		return;
	}
	call_when_coordinator(o);
}

void
cl_offsets_committed(cl_client *c, cl_wait *w)
{
	if (!c->conf.group_id) {
		cl_wait_finish(c, w, COHORT_ERR__STATE);
		return;
	}
	o_call *o = call_new(c, w->offsets, w->n);
	if (!o) {
		cl_wait_finish(c, w, COHORT_ERR__NOMEM);
		return;
	}
	o->w = w;
	call_when_coordinator(o);
}

/* ---- starting positions --------------------------------------------------------- */

/* One lookup round: the partitions, with the epochs they had. */
typedef struct o_lookup {
	cl_client *c;
	cl_tp **tps;
	uint64_t *epochs;
	int n;
	cl_broker *leader; /* ListOffsets rounds */
	int32_t *leader_epochs;
	int64_t *timestamps; /* ListOffsets: -2 earliest, -1 latest, >= 0 by time */
} o_lookup;

/* Frees a lookup round and its arrays (not the cl_tp it points at). */
static void
lookup_free(o_lookup *l)
{
	free(l->tps);
	free(l->epochs);
	free(l->leader_epochs);
	free(l->timestamps);
	free(l);
}

/* Done with a partition's lookup (c->mu held): position known or not. */
static void
lookup_end(cl_tp *tp, uint64_t epoch, int64_t offset)
{
	if (tp->epoch != epoch)
		return; /* a seek or a new assignment came first */
	tp->offset_lookup = false;
	if (offset >= 0) {
		tp->fetch_pos = tp->position = offset;
		tp->reset = false;
		tp->reset_to = CL_RESET_TO_CONF;
	}
}

/* One partition of a ListOffsets request. */
typedef struct o_lo_entry {
	const char *topic;
	int32_t partition;
	int32_t leader_epoch; /* -1 unknown */
	int64_t timestamp;    /* -2 earliest, -1 latest, >= 0 by time */
} o_lo_entry;

/* Encodes ListOffsets for e[0..n), grouped by topic (the entries' order within a topic). */
static void
encode_list_offsets(cl_client *c, int16_t version, ch_buf *b, const o_lo_entry *e, int n)
{
	ch_ListOffsetsRequest r;
	ch_ListOffsetsRequest_init(&r);
	r.ReplicaId = -1;
	r.IsolationLevel = c->conf.read_committed ? 1 : 0; /* LATEST: the LSO */
	r.TimeoutMs = c->conf.request_timeout_ms;
	ch_ListOffsetsRequest_ListOffsetsTopic *t = calloc((size_t)n + 1, sizeof(*t));
	ch_ListOffsetsRequest_ListOffsetsPartition *p = calloc((size_t)n + 1, sizeof(*p));
	if (!t || !p) {
		b->oom = true;
		free(t);
		free(p);
		return;
	}
	int nt = 0;
	ch_ListOffsetsRequest_ListOffsetsPartition *next = p;
	for (int i = 0; i < n; i++) {
		int j = 0;
		while (j < nt && !ch_str_eq_c(t[j].Name, e[i].topic))
			j++;
		if (j < nt)
			continue; /* its topic is done */
		t[nt].Name = ch_str_c(e[i].topic);
		t[nt].Partitions = next;
		for (int k = i; k < n; k++)
			if (strcmp(e[k].topic, e[i].topic) == 0) {
				next->PartitionIndex = e[k].partition;
				next->CurrentLeaderEpoch = e[k].leader_epoch;
				next->Timestamp = e[k].timestamp;
				next->MaxNumOffsets = 1;
				next++;
				t[nt].Partitions_n++;
			}
		nt++;
	}
	r.Topics = t;
	r.Topics_n = nt;
	ch_ListOffsetsRequest_encode(b, version, &r);
	free(t);
	free(p);
}

/* The answer's entry for (topic, partition), NULL when it has none. */
static const ch_ListOffsetsResponse_ListOffsetsPartitionResponse *
list_offsets_find(const ch_ListOffsetsResponse *r, const char *topic, int32_t partition)
{
	for (int32_t t = 0; t < r->Topics_n; t++) {
		if (!ch_str_eq_c(r->Topics[t].Name, topic))
			continue;
		for (int32_t p = 0; p < r->Topics[t].Partitions_n; p++)
			if (r->Topics[t].Partitions[p].PartitionIndex == partition)
				return &r->Topics[t].Partitions[p];
	}
	return NULL;
}

/* Encodes ListOffsets for l's partitions, each at its timestamp. */
static void
build_list_offsets(cl_client *c, int16_t version, ch_buf *b, void *ud)
{
	o_lookup *l = ud;
	o_lo_entry *e = calloc((size_t)l->n + 1, sizeof(*e));
	if (!e) {
		b->oom = true;
		return;
	}
	for (int i = 0; i < l->n; i++)
		e[i] = (o_lo_entry){l->tps[i]->topic, l->tps[i]->partition, l->leader_epochs[i],
				    l->timestamps[i]};
	encode_list_offsets(c, version, b, e, l->n);
	free(e);
}

/* ListOffsets answer: sets the position of each partition whose epoch is unchanged; errors
 * refresh metadata so the next lookup retries.  Frees l. */
static void
done_list_offsets(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	(void)version;
	o_lookup *l = ud;
	bool refresh = err != COHORT_OK, again = false;
	cl_lock(c);
	for (int i = 0; i < l->n; i++) {
		int64_t off = -1;
		bool answered = false;
		const ch_ListOffsetsResponse_ListOffsetsPartitionResponse *rp =
			err ? NULL
			    : list_offsets_find(resp, l->tps[i]->topic, l->tps[i]->partition);
		if (rp && rp->ErrorCode)
			refresh = true;
		else if (rp)
			off = rp->Offset, answered = true;
		lookup_end(l->tps[i], l->epochs[i], off);
		if (off < 0 && l->tps[i]->epoch == l->epochs[i]) {
			l->tps[i]->offset_lookup = false;
			if (answered && l->timestamps[i] >= 0) {
				/* no record at or after that time: the end, as
				 * kafka-consumer-groups --to-datetime goes */
				l->tps[i]->reset_to = -1;
				again = true;
			}
		}
	}
	cl_unlock(c);
	lookup_free(l);
	if (err == COHORT_ERR__CLOSED)
		return;
	if (refresh)
		cl_metadata_refresh(c); /* the next answer runs the lookups again */
	if (again)
		cl_offsets_lookup(c);
	cl_fetcher_kick(c);
}

/* Gives partitions of a lookup round back (offset_lookup cleared where their epoch is
 * unchanged) so that a later round looks them up: those with skip[i] set (when skip is
 * given) are not touched. Then asks for a metadata refresh, whose answer runs the next
 * round. For lookups that cannot go on (out of memory). */
static void
release_lookups(cl_client *c, cl_tp **tps, const uint64_t *epochs, int n, const bool *skip)
{
	cl_lock(c);
	for (int i = 0; i < n; i++)
		if ((!skip || !skip[i]) && tps[i]->epoch == epochs[i])
			tps[i]->offset_lookup = false;
	cl_unlock(c);
	cl_metadata_refresh(c);
}

/* ListOffsets for partitions without a committed offset, per leader. */
static void
reset_positions(cl_client *c, cl_tp **tps, uint64_t *epochs, int n)
{
	bool *done = calloc((size_t)n + 1, sizeof(bool));
	int64_t *ts = calloc((size_t)n + 1, sizeof(int64_t));
	if (!done || !ts) {
		free(done);
		free(ts);
		release_lookups(c, tps, epochs, n, NULL);
		return;
	}
	/* a seek names its timestamp; otherwise auto.offset.reset, and with
	 * "none" the application is told instead */
	bool refused = false;
	cl_lock(c);
	for (int i = 0; i < n; i++) {
		ts[i] = tps[i]->reset_to;
		if (ts[i] != CL_RESET_TO_CONF)
			continue;
		if (c->conf.auto_offset_reset == CL_RESET_NONE) {
			lookup_end(tps[i], epochs[i], -1);
			done[i] = refused = true;
		}
		ts[i] = c->conf.auto_offset_reset == CL_RESET_EARLIEST ? -2 : -1;
	}
	cl_event *ev = refused ? calloc(1, sizeof(*ev)) : NULL;
	if (ev) {
		ev->kind = CL_EV_ERROR;
		ev->err = COHORT_ERR__OFFSET_OUT_OF_RANGE;
		cl_event_push(c, ev);
	}
	cl_unlock(c);
	for (int i = 0; i < n; i++) {
		if (done[i])
			continue;
		const cl_md_topic *t = cl_metadata_topic(c, tps[i]->topic);
		const cl_md_partition *p = NULL;
		for (int32_t k = 0; t && k < t->nparts; k++)
			if (t->parts[k].partition == tps[i]->partition)
				p = &t->parts[k];
		cl_broker *leader = p && p->leader >= 0 ? cl_broker_find(c, p->leader) : NULL;
		if (!leader) {
			done[i] = true;
			cl_lock(c);
			lookup_end(tps[i], epochs[i], -1);
			if (tps[i]->epoch == epochs[i])
				tps[i]->offset_lookup = false;
			cl_unlock(c);
			cl_metadata_refresh(c);
			continue;
		}
		o_lookup *l = calloc(1, sizeof(*l));
		if (l) {
			l->c = c;
			l->leader = leader;
			l->tps = calloc((size_t)n, sizeof(cl_tp *));
			l->epochs = calloc((size_t)n, sizeof(uint64_t));
			l->leader_epochs = calloc((size_t)n, sizeof(int32_t));
			l->timestamps = calloc((size_t)n, sizeof(int64_t));
		}
		if (!l || !l->tps || !l->epochs || !l->leader_epochs || !l->timestamps) {
			if (l)
				lookup_free(l);
			/* the partitions not sent yet go back to the next round */
			release_lookups(c, tps, epochs, n, done);
			break;
		}
		for (int k = i; k < n; k++) {
			if (done[k])
				continue;
			const cl_md_topic *tk = cl_metadata_topic(c, tps[k]->topic);
			for (int32_t q = 0; tk && q < tk->nparts; q++)
				if (tk->parts[q].partition == tps[k]->partition &&
				    tk->parts[q].leader == leader->node_id) {
					done[k] = true;
					l->tps[l->n] = tps[k];
					l->epochs[l->n] = epochs[k];
					l->timestamps[l->n] = ts[k];
					l->leader_epochs[l->n++] = tk->parts[q].leader_epoch;
				}
		}
		cl_request(leader, CH_APIKEY_LIST_OFFSETS, build_list_offsets, done_list_offsets,
			   l);
	}
	free(done);
	free(ts);
}

static void done_lookup_committed(cl_client *c, cohort_err err, int16_t version, void *resp,
				  void *ud);

static void
build_lookup_committed(cl_client *c, int16_t version, ch_buf *b, void *ud)
{
	o_call *o = ((o_call **)ud)[0];
	build_fetch_offsets(c, version, b, o);
}

/* OffsetFetch for the partitions of l, then reset those without one. */
struct o_committed_lookup {
	o_call *o;
	o_lookup *l;
};

/* Sends the position lookup's OffsetFetch to the coordinator, or ends the lookup with
 * COORDINATOR_NOT_AVAILABLE when there is none. */
static void
send_lookup_committed(cl_client *c, void *ud)
{
	o_committed_lookup *cl = ud;
	cl_broker *coord = cl_member_coordinator(c);
	if (!coord) {
		done_lookup_committed(c, COHORT_ERR_COORDINATOR_NOT_AVAILABLE, -1, NULL, cl);
		return;
	}
	cl_request(coord, CH_APIKEY_OFFSET_FETCH, build_lookup_committed, done_lookup_committed,
		   cl);
}

/* Position lookup's OffsetFetch answer: partitions with a committed offset start there, the
 * rest go to reset_positions; on error all are released for the next round.  Frees cl, o, l. */
static void
done_lookup_committed(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	o_committed_lookup *cl = ud;
	o_call *o = cl->o;
	o_lookup *l = cl->l;
	if (!err) {
		/* reuse the commit path's parsing */
		const ch_OffsetFetchResponse *r = resp;
		int retriable = 0;
		if (version >= 8) {
			for (int32_t g = 0; g < r->Groups_n; g++) {
				if (r->Groups[g].ErrorCode)
					err = r->Groups[g].ErrorCode;
				for (int32_t t = 0; t < r->Groups[g].Topics_n; t++)
					for (int32_t p = 0; p < r->Groups[g].Topics[t].Partitions_n;
					     p++) {
						const ch_OffsetFetchResponse_OffsetFetchResponsePartitions
							*rp = &r->Groups[g].Topics[t].Partitions[p];
						take_committed(o, r->Groups[g].Topics[t].Name,
							       rp->PartitionIndex,
							       rp->CommittedOffset, rp->ErrorCode,
							       &retriable);
					}
			}
		} else {
			if (version >= 2 && r->ErrorCode)
				err = r->ErrorCode;
			for (int32_t t = 0; t < r->Topics_n; t++)
				for (int32_t p = 0; p < r->Topics[t].Partitions_n; p++)
					take_committed(o, r->Topics[t].Name,
						       r->Topics[t].Partitions[p].PartitionIndex,
						       r->Topics[t].Partitions[p].CommittedOffset,
						       r->Topics[t].Partitions[p].ErrorCode,
						       &retriable);
		}
		if (!err && retriable)
			err = retriable;
	}
	if (err) {
		/* give the partitions back to the next lookup round */
		cl_lock(c);
		for (int i = 0; i < l->n; i++)
			if (l->tps[i]->epoch == l->epochs[i])
				l->tps[i]->offset_lookup = false;
		cl_unlock(c);
		if (err != COHORT_ERR__CLOSED && coordinator_error(err))
			cl_member_coordinator_lost(c, (int16_t)(err > 0 ? err : 0));
		if (err != COHORT_ERR__CLOSED)
			CH_LOGD(CL_LOG, "committed offsets lookup: %s", cohort_err_name(err));
		call_free(o);
		lookup_free(l);
		free(cl);
		if (err != COHORT_ERR__CLOSED)
			cl_metadata_refresh(c); /* its answer runs the lookups again */
		return;
	}
	cl_tp **reset = calloc((size_t)l->n + 1, sizeof(cl_tp *));
	uint64_t *reset_epochs = calloc((size_t)l->n + 1, sizeof(uint64_t));
	int nreset = 0;
	bool lost = false;
	cl_lock(c);
	for (int i = 0; i < l->n; i++) {
		if (o->offs[i].offset >= 0) {
			lookup_end(l->tps[i], l->epochs[i], o->offs[i].offset);
		} else if (reset && reset_epochs) {
			if (l->tps[i]->epoch == l->epochs[i]) {
				reset[nreset] = l->tps[i];
				reset_epochs[nreset++] = l->epochs[i];
			}
		} else if (l->tps[i]->epoch == l->epochs[i]) {
			l->tps[i]->offset_lookup = false; /* out of memory: the next round */
			lost = true;
		}
	}
	cl_unlock(c);
	if (lost)
		cl_metadata_refresh(c);
	if (nreset)
		reset_positions(c, reset, reset_epochs, nreset);
	free(reset);
	free(reset_epochs);
	call_free(o);
	lookup_free(l);
	free(cl);
	cl_fetcher_kick(c);
}

void
cl_offsets_lookup(cl_client *c)
{
	if (c->closing || cl_member_failed(c))
		return;
	/* with group.id the committed offset comes first; without, the reset */
	bool committed_first = c->member != NULL;
	cl_lock(c);
	int n = 0;
	for (int i = 0; i < c->ntps; i++) {
		cl_tp *tp = c->tps[i];
		if (tp->owned && tp->fetch_pos < 0 && !tp->offset_lookup)
			n++;
	}
	if (n == 0) {
		cl_unlock(c);
		return;
	}
	/* everything is allocated before any partition is marked: a partition
	 * marked offset_lookup must be in a lookup that will clear it */
	cl_tp **tps = calloc((size_t)n, sizeof(cl_tp *));
	uint64_t *epochs = calloc((size_t)n, sizeof(uint64_t));
	cohort_tp_offset *offs = calloc((size_t)n, sizeof(*offs));
	o_committed_lookup *cl = NULL;
	o_lookup *l = NULL;
	o_call *o = NULL;
	int nc = 0, nr = 0; /* committed lookups first, resets at the end */
	bool ok = tps && epochs && offs;
	for (int i = 0; ok && i < c->ntps; i++) {
		cl_tp *tp = c->tps[i];
		if (!tp->owned || tp->fetch_pos >= 0 || tp->offset_lookup)
			continue;
		if (tp->reset || !committed_first) {
			tps[n - 1 - nr] = tp;
			epochs[n - 1 - nr++] = tp->epoch;
		} else {
			offs[nc] = (cohort_tp_offset){tp->topic, tp->partition, -1, 0};
			tps[nc] = tp;
			epochs[nc++] = tp->epoch;
		}
	}
	if (ok && nc) {
		cl = calloc(1, sizeof(*cl));
		l = calloc(1, sizeof(*l));
		o = cl && l ? call_new(c, offs, (size_t)nc) : NULL;
		ok = o != NULL;
	}
	for (int i = 0; ok && i < n; i++)
		if (i < nc || i >= n - nr)
			tps[i]->offset_lookup = true;
	cl_unlock(c);
	if (!ok) { /* nothing marked: the next metadata answer tries again */
		free(cl);
		free(l);
		free(tps);
		free(epochs);
		free(offs);
		return;
	}
	if (nr)
		reset_positions(c, tps + n - nr, epochs + n - nr, nr);
	if (nc) {
		l->c = c;
		l->tps = tps;
		l->epochs = epochs;
		l->n = nc;
		cl->o = o;
		cl->l = l;
		o->lookup = cl;
		tps = NULL;
		epochs = NULL;
		cl_member_with_coordinator(c, send_lookup_committed, cl);
	}
	free(tps);
	free(epochs);
	free(offs);
}

void
cl_offsets_shutdown(cl_client *c)
{
	while (c->calls) {
		o_call *o = c->calls;
		if (o->lookup) {
			o_committed_lookup *cl = o->lookup;
			lookup_free(cl->l);
			free(cl);
			call_free(o);
		} else {
			call_finish(o, COHORT_ERR__CLOSED);
		}
	}
}

/* ---- offsets by time (ListOffsets calls of the application) ------------------------ */

/* One cohort_end_offsets / _beginning_offsets / _offsets_for_times call: w's offsets are
 * the ListOffsets timestamps in, the offsets out. */
typedef struct o_list {
	cl_client *c;
	cl_wait *w;
	cohort_tp_offset *offs; /* own copy: results go here until the end */
	size_t n;
	int pending; /* ListOffsets requests in flight */
} o_list;

/* The partitions of one ListOffsets request (to one leader): indexes into L->offs. */
typedef struct o_list_req {
	o_list *L;
	size_t *idx;
	int n;
} o_list_req;

/* Hands the results to the waiter (first error as the call's) and frees L. */
static void
list_finish(o_list *L, cohort_err err)
{
	cl_client *c = L->c;
	for (size_t i = 0; i < L->n && !err; i++)
		err = L->offs[i].err;
	cl_lock(c);
	for (size_t i = 0; i < L->n && !L->w->abandoned; i++) {
		L->w->offsets[i].offset = L->offs[i].offset;
		L->w->offsets[i].err = L->offs[i].err;
	}
	cl_unlock(c);
	cl_wait_finish(c, L->w, err);
	free(L->offs);
	free(L);
}

/* Encodes ListOffsets for the partitions of q, each at its timestamp. */
static void
build_list_req(cl_client *c, int16_t version, ch_buf *b, void *ud)
{
	o_list_req *q = ud;
	o_lo_entry *e = calloc((size_t)q->n + 1, sizeof(*e));
	if (!e) {
		b->oom = true;
		return;
	}
	for (int i = 0; i < q->n; i++) {
		const cohort_tp_offset *o = &q->L->offs[q->idx[i]];
		e[i] = (o_lo_entry){o->topic, o->partition, -1, o->offset};
	}
	encode_list_offsets(c, version, b, e, q->n);
	free(e);
}

/* A ListOffsets answer of a list call: each partition's offset or error; the call ends
 * with its last answer. Frees q. */
static void
done_list_req(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	(void)c;
	(void)version;
	o_list_req *q = ud;
	o_list *L = q->L;
	for (int i = 0; i < q->n; i++) {
		cohort_tp_offset *o = &L->offs[q->idx[i]];
		const ch_ListOffsetsResponse_ListOffsetsPartitionResponse *rp =
			err ? NULL : list_offsets_find(resp, o->topic, o->partition);
		o->err = err ? err : rp ? rp->ErrorCode : CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
		o->offset = rp && !rp->ErrorCode ? rp->Offset : -1;
	}
	free(q->idx);
	free(q);
	if (--L->pending == 0)
		list_finish(L, COHORT_OK);
}

/* The metadata of the call's topics is in: one ListOffsets per leader. */
static void
list_with_metadata(cl_client *c, cohort_err err, void *ud)
{
	o_list *L = ud;
	if (err) {
		list_finish(L, err);
		return;
	}
	cl_broker **leader = calloc(L->n + 1, sizeof(*leader));
	if (!leader) {
		list_finish(L, COHORT_ERR__NOMEM);
		return;
	}
	for (size_t i = 0; i < L->n; i++) {
		const cl_md_topic *t = cl_metadata_topic(c, L->offs[i].topic);
		const cl_md_partition *p = NULL;
		for (int32_t k = 0; t && k < t->nparts; k++)
			if (t->parts[k].partition == L->offs[i].partition)
				p = &t->parts[k];
		if (t && t->err)
			L->offs[i].err = t->err;
		else if (!p)
			L->offs[i].err = CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
		else if (!(leader[i] = p->leader >= 0 ? cl_broker_find(c, p->leader) : NULL))
			L->offs[i].err = CH_KERR_LEADER_NOT_AVAILABLE;
	}
	L->pending = 1; /* held while the requests go out */
	for (size_t i = 0; i < L->n; i++) {
		if (!leader[i])
			continue;
		o_list_req *q = calloc(1, sizeof(*q));
		size_t *idx = calloc(L->n, sizeof(*idx));
		if (!q || !idx) {
			free(q);
			free(idx);
			for (size_t k = i; k < L->n; k++)
				if (leader[k])
					L->offs[k].err = COHORT_ERR__NOMEM, leader[k] = NULL;
			break;
		}
		cl_broker *b = leader[i];
		for (size_t k = i; k < L->n; k++)
			if (leader[k] == b) {
				idx[q->n++] = k;
				leader[k] = NULL;
			}
		q->L = L;
		q->idx = idx;
		L->pending++;
		cl_request(b, CH_APIKEY_LIST_OFFSETS, build_list_req, done_list_req, q);
	}
	free(leader);
	if (--L->pending == 0)
		list_finish(L, COHORT_OK);
}

/* The topics of offs[0..n) (distinct) as ch_str, for cl_metadata_want; NULL on OOM. */
static ch_str *
topics_of(const cohort_tp_offset *offs, size_t n, int32_t *nt)
{
	ch_str *names = calloc(n + 1, sizeof(*names));
	*nt = 0;
	for (size_t i = 0; names && i < n; i++) {
		bool seen = false;
		for (int32_t j = 0; j < *nt && !seen; j++)
			seen = ch_str_eq_c(names[j], offs[i].topic);
		if (!seen)
			names[(*nt)++] = ch_str_c(offs[i].topic);
	}
	return names;
}

void
cl_offsets_list(cl_client *c, cl_wait *w)
{
	o_list *L = calloc(1, sizeof(*L));
	int32_t nt;
	ch_str *names = topics_of(w->offsets, w->n, &nt);
	if (!L || !names || !(L->offs = cl_offsets_copy(w->offsets, w->n)) ||
	    !cl_metadata_want(c, names, nt)) {
		if (L)
			free(L->offs);
		free(L);
		free(names);
		cl_wait_finish(c, w, COHORT_ERR__NOMEM);
		return;
	}
	free(names);
	for (size_t i = 0; i < w->n; i++)
		L->offs[i].err = COHORT_OK;
	L->c = c;
	L->w = w;
	L->n = w->n;
	cl_metadata_refresh_then(c, list_with_metadata, L); /* leaders first */
}

/* The metadata of the topic of w->offsets[0] is in: its partition count into .offset. */
static void
partitions_with_metadata(cl_client *c, cohort_err err, void *ud)
{
	cl_wait *w = ud;
	const cl_md_topic *t = err ? NULL : cl_metadata_topic(c, w->offsets[0].topic);
	if (!err)
		err = !t ? CH_KERR_UNKNOWN_TOPIC_OR_PARTITION : t->err;
	cl_lock(c);
	if (!w->abandoned && !err)
		w->offsets[0].offset = t->nparts;
	cl_unlock(c);
	cl_wait_finish(c, w, err);
}

void
cl_offsets_partitions(cl_client *c, cl_wait *w)
{
	ch_str name = ch_str_c(w->offsets[0].topic);
	if (!cl_metadata_want(c, &name, 1)) {
		cl_wait_finish(c, w, COHORT_ERR__NOMEM);
		return;
	}
	cl_metadata_refresh_then(c, partitions_with_metadata, w);
}
