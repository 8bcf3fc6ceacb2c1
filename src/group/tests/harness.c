/*
 * harness.c: the fake shell (see harness.h).
 */
#include "harness.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_arena.h"
#include "common/ch_buf.h"
#include "proto/ch_rd.h"

/* ---- small helpers -------------------------------------------------------- */

static void *
xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);
	if (!p)
		abort();
	return p;
}

static void *
xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		abort();
	return p;
}

static void
cpy(char *dst, size_t cap, const char *p, int32_t len)
{
	if (len < 0 || !p)
		len = 0;
	if ((size_t)len >= cap)
		len = (int32_t)cap - 1;
	if (len > 0)
		memcpy(dst, p, (size_t)len);
	dst[len] = 0;
}

static void
cpy_str(char *dst, size_t cap, ch_str s)
{
	cpy(dst, cap, s.p, s.len);
}

static h_blob
blob_of(const void *p, int32_t len)
{
	h_blob b = {NULL, len};
	if (len < 0)
		return b;
	b.p = xcalloc((size_t)len + 1, 1);
	if (len > 0)
		memcpy(b.p, p, (size_t)len);
	return b;
}

static h_blob
blob_str(ch_str s)
{
	return blob_of(s.p, s.len);
}

static h_blob
blob_bytes(ch_bytes s)
{
	return blob_of(s.p, s.len);
}

static void
blob_free(h_blob *b)
{
	free(b->p);
	b->p = NULL;
}

/* Memory owned by the env (subscriptions etc.). */
typedef struct owned {
	struct owned *next;
	uint8_t data[];
} owned;
static owned *g_owned; /* process-wide: freed at exit by the OS; tests are short */

static uint8_t *
own(const void *p, size_t n)
{
	owned *o = xcalloc(1, sizeof(*o) + n + 1);
	if (n)
		memcpy(o->data, p, n);
	o->next = g_owned;
	g_owned = o;
	return o->data;
}

static const char *
str_or_empty(const char *s)
{
	return s ? s : "";
}

static ch_str
cstr(const char *s)
{
	return ch_str_c(s);
}

static int16_t
pick_version(int v, int16_t latest)
{
	return (v & 0x100) ? (int16_t)(v & 0xff) : latest;
}

/* ---- ops -------------------------------------------------------------------- */

static h_row *
add_row(h_req *r)
{
	r->rows = xrealloc(r->rows, sizeof(h_row) * (size_t)(r->nrows + 1));
	h_row *w = &r->rows[r->nrows++];
	memset(w, 0, sizeof(*w));
	w->partition = -1;
	w->metadata.len = -1;
	w->assignment.len = -1;
	w->instance_id.len = -1;
	return w;
}

static void
copy_join(h_req *r, const ch_JoinGroupResponse *m)
{
	r->error = m->ErrorCode;
	r->generation = m->GenerationId;
	r->protocol_type = blob_str(m->ProtocolType);
	r->protocol_name = blob_str(m->ProtocolName);
	cpy_str(r->leader, sizeof(r->leader), m->Leader);
	r->skip_assignment = m->SkipAssignment;
	cpy_str(r->member_id, sizeof(r->member_id), m->MemberId);
	for (int32_t i = 0; i < m->Members_n; i++) {
		h_row *w = add_row(r);
		cpy_str(w->member_id, sizeof(w->member_id), m->Members[i].MemberId);
		w->instance_id = blob_str(m->Members[i].GroupInstanceId);
		w->metadata = blob_bytes(m->Members[i].Metadata);
	}
}

static void
copy_sync(h_req *r, const ch_SyncGroupResponse *m)
{
	r->error = m->ErrorCode;
	r->protocol_type = blob_str(m->ProtocolType);
	r->protocol_name = blob_str(m->ProtocolName);
	r->assignment = blob_bytes(m->Assignment);
}

static void
copy_leave(h_req *r, const ch_LeaveGroupResponse *m)
{
	r->error = m->ErrorCode;
	for (int32_t i = 0; i < m->Members_n; i++) {
		h_row *w = add_row(r);
		cpy_str(w->member_id, sizeof(w->member_id), m->Members[i].MemberId);
		w->instance_id = blob_str(m->Members[i].GroupInstanceId);
		w->error = m->Members[i].ErrorCode;
	}
}

static void
copy_commit(h_req *r, const ch_OffsetCommitResponse *m)
{
	for (int32_t i = 0; i < m->Topics_n; i++) {
		const ch_OffsetCommitResponse_OffsetCommitResponseTopic *t = &m->Topics[i];
		for (int32_t j = 0; j < t->Partitions_n; j++) {
			h_row *w = add_row(r);
			cpy(w->group, sizeof(w->group), r->req_group,
			    (int32_t)strlen(r->req_group));
			cpy_str(w->topic, sizeof(w->topic), t->Name);
			w->partition = t->Partitions[j].PartitionIndex;
			w->error = t->Partitions[j].ErrorCode;
		}
	}
}

static void
copy_fetch(h_req *r, const ch_OffsetFetchResponse *m)
{
	if (r->version < 8) {
		r->error = m->ErrorCode;
		for (int32_t i = 0; i < m->Topics_n; i++) {
			const ch_OffsetFetchResponse_OffsetFetchResponseTopic *t = &m->Topics[i];
			for (int32_t j = 0; j < t->Partitions_n; j++) {
				const ch_OffsetFetchResponse_OffsetFetchResponsePartition *p =
					&t->Partitions[j];
				h_row *w = add_row(r);
				cpy(w->group, sizeof(w->group), r->req_group,
				    (int32_t)strlen(r->req_group));
				cpy_str(w->topic, sizeof(w->topic), t->Name);
				w->partition = p->PartitionIndex;
				w->offset = p->CommittedOffset;
				w->leader_epoch = p->CommittedLeaderEpoch;
				w->metadata = blob_str(p->Metadata);
				w->error = p->ErrorCode;
			}
		}
		return;
	}
	for (int32_t g = 0; g < m->Groups_n; g++) {
		const ch_OffsetFetchResponse_OffsetFetchResponseGroup *gr = &m->Groups[g];
		h_row *gw = add_row(r);
		cpy_str(gw->group, sizeof(gw->group), gr->GroupId);
		gw->error = gr->ErrorCode;
		gw->is_member = false;
		strcpy(gw->state, "group");
		for (int32_t i = 0; i < gr->Topics_n; i++) {
			const ch_OffsetFetchResponse_OffsetFetchResponseTopics *t = &gr->Topics[i];
			for (int32_t j = 0; j < t->Partitions_n; j++) {
				const ch_OffsetFetchResponse_OffsetFetchResponsePartitions *p =
					&t->Partitions[j];
				h_row *w = add_row(r);
				cpy_str(w->group, sizeof(w->group), gr->GroupId);
				cpy_str(w->topic, sizeof(w->topic), t->Name);
				w->partition = p->PartitionIndex;
				w->offset = p->CommittedOffset;
				w->leader_epoch = p->CommittedLeaderEpoch;
				w->metadata = blob_str(p->Metadata);
				w->error = p->ErrorCode;
			}
		}
	}
}

static void
copy_list(h_req *r, const ch_ListGroupsResponse *m)
{
	r->error = m->ErrorCode;
	for (int32_t i = 0; i < m->Groups_n; i++) {
		h_row *w = add_row(r);
		cpy_str(w->group, sizeof(w->group), m->Groups[i].GroupId);
		cpy_str(w->protocol_type, sizeof(w->protocol_type), m->Groups[i].ProtocolType);
		cpy_str(w->state, sizeof(w->state), m->Groups[i].GroupState);
		cpy_str(w->group_type, sizeof(w->group_type), m->Groups[i].GroupType);
	}
}

static void
copy_describe(h_req *r, const ch_DescribeGroupsResponse *m)
{
	for (int32_t i = 0; i < m->Groups_n; i++) {
		const ch_DescribeGroupsResponse_DescribedGroup *g = &m->Groups[i];
		h_row *w = add_row(r);
		w->error = g->ErrorCode;
		cpy_str(w->group, sizeof(w->group), g->GroupId);
		cpy_str(w->state, sizeof(w->state), g->GroupState);
		cpy_str(w->protocol_type, sizeof(w->protocol_type), g->ProtocolType);
		cpy_str(w->protocol, sizeof(w->protocol), g->ProtocolData);
		for (int32_t j = 0; j < g->Members_n; j++) {
			const ch_DescribeGroupsResponse_DescribedGroupMember *mm = &g->Members[j];
			h_row *x = add_row(r);
			x->is_member = true;
			cpy_str(x->group, sizeof(x->group), g->GroupId);
			cpy_str(x->member_id, sizeof(x->member_id), mm->MemberId);
			x->instance_id = blob_str(mm->GroupInstanceId);
			cpy_str(x->client_id, sizeof(x->client_id), mm->ClientId);
			cpy_str(x->client_host, sizeof(x->client_host), mm->ClientHost);
			x->metadata = blob_bytes(mm->MemberMetadata);
			x->assignment = blob_bytes(mm->MemberAssignment);
		}
	}
}

static void
copy_delete(h_req *r, const ch_DeleteGroupsResponse *m)
{
	for (int32_t i = 0; i < m->Results_n; i++) {
		h_row *w = add_row(r);
		cpy_str(w->group, sizeof(w->group), m->Results[i].GroupId);
		w->error = m->Results[i].ErrorCode;
	}
}

static void
copy_offset_delete(h_req *r, const ch_OffsetDeleteResponse *m)
{
	r->error = m->ErrorCode;
	for (int32_t i = 0; i < m->Topics_n; i++) {
		const ch_OffsetDeleteResponse_OffsetDeleteResponseTopic *t = &m->Topics[i];
		for (int32_t j = 0; j < t->Partitions_n; j++) {
			h_row *w = add_row(r);
			cpy_str(w->topic, sizeof(w->topic), t->Name);
			w->partition = t->Partitions[j].PartitionIndex;
			w->error = t->Partitions[j].ErrorCode;
		}
	}
}

static void
op_respond(void *ud, void *token, const void *resp)
{
	h_env *h = ud;
	h_req *r = token;
	h->responses++;
	if (h->crashing) {
		if (!h->quiet)
			fprintf(stderr, "harness: a crashed coordinator answered api %d\n", r->api);
		h->violations++;
		h->last_violation = "a coordinator answered while being freed after a crash";
		return;
	}
	r->nresp++;
	if (r->nresp > 1) {
		if (!h->quiet)
			fprintf(stderr, "harness: request api %d v%d answered %d times\n", r->api,
				r->version, r->nresp);
		return;
	}
	r->resp_at = h->now;
	switch (r->api) {
	case H_JOIN:
		copy_join(r, resp);
		break;
	case H_SYNC:
		copy_sync(r, resp);
		break;
	case H_HEARTBEAT:
		r->error = ((const ch_HeartbeatResponse *)resp)->ErrorCode;
		break;
	case H_LEAVE:
		copy_leave(r, resp);
		break;
	case H_OFFSET_COMMIT:
		copy_commit(r, resp);
		break;
	case H_OFFSET_FETCH:
		copy_fetch(r, resp);
		break;
	case H_LIST:
		copy_list(r, resp);
		break;
	case H_DESCRIBE:
		copy_describe(r, resp);
		break;
	case H_DELETE_GROUPS:
		copy_delete(r, resp);
		break;
	case H_OFFSET_DELETE:
		copy_offset_delete(r, resp);
		break;
	default:
		abort();
	}
	r->resp_seq = ++h->resp_seq;
	if (h->on_respond)
		h->on_respond(h, r);
}

static void
op_append(void *ud, int32_t partition, const ch_coord_record *recs, size_t n, uint64_t id)
{
	h_env *h = ud;
	if (h->nappends == h->cap_appends) {
		h->cap_appends = h->cap_appends ? h->cap_appends * 2 : 16;
		h->appends = xrealloc(h->appends, h->cap_appends * sizeof(h_append));
	}
	h_append *a = &h->appends[h->nappends++];
	memset(a, 0, sizeof(*a));
	a->id = id;
	a->partition = partition;
	a->first_rec = h->nrecs;
	a->nrec = n;
	a->complete_at = h->now + h->append_delay;
	if (h->fifo_appends) {
		if (a->complete_at < h->fifo_tail)
			a->complete_at = h->fifo_tail;
		h->fifo_tail = a->complete_at;
	}
	if (h->fail_count > 0) {
		a->error = h->fail_next;
		h->fail_count--;
	}
	for (size_t i = 0; i < n; i++) {
		if (h->nrecs == h->cap_recs) {
			h->cap_recs = h->cap_recs ? h->cap_recs * 2 : 64;
			h->recs = xrealloc(h->recs, h->cap_recs * sizeof(h_record));
		}
		h_record *r = &h->recs[h->nrecs++];
		memset(r, 0, sizeof(*r));
		r->partition = partition;
		r->append_id = id;
		r->append_idx = h->nappends - 1;
		r->klen = recs[i].key.len;
		r->key = xcalloc(r->klen + 1, 1);
		memcpy(r->key, recs[i].key.data, r->klen);
		r->tombstone = recs[i].tombstone;
		if (!r->tombstone) {
			r->vlen = recs[i].value.len;
			r->val = xcalloc(r->vlen + 1, 1);
			if (r->vlen)
				memcpy(r->val, recs[i].value.data, r->vlen);
		}
	}
}

static int16_t
op_check_partition(void *ud, ch_str topic, int32_t partition)
{
	h_env *h = ud;
	if (h->unknown_topic[0] && ch_str_eq_c(topic, h->unknown_topic))
		return CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	if (partition < 0)
		return CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	return 0;
}

static void
op_uuid(void *ud, ch_uuid *out)
{
	h_env *h = ud;
	uint64_t v = ++h->uuid_seq;
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < 8; i++)
		out->b[8 + i] = (uint8_t)(v >> (56 - 8 * i));
	out->b[0] = 0x42;
	out->b[6] = 0x40; /* v4 */
	out->b[8] = (uint8_t)((out->b[8] & 0x3f) | 0x80);
}

/* The core's log lines, stamped with virtual time; the tests' threshold
 * (ch_log_threshold) silences them. */
static void
op_log(void *ud, ch_log_level level, const char *line)
{
	h_env *h = ud;
	if (h->capture_log)
		snprintf(h->last_log, sizeof(h->last_log), "%s", line);
	if (ch_log_enabled(level))
		fprintf(stderr, "t=%lld %s [group] %s\n", (long long)h->now,
			ch_log_level_name(level), line);
}

static bool
op_log_enabled(void *ud, ch_log_level level)
{
	const h_env *h = ud;
	return h->capture_log || ch_log_enabled(level);
}

/* ---- env ---------------------------------------------------------------- */

static h_env *
env_new(const ch_coord_config *cfg, int64_t start, bool loaded)
{
	h_env *h = xcalloc(1, sizeof(*h));
	if (cfg)
		h->cfg = *cfg;
	else
		ch_coord_config_defaults(&h->cfg);
	h->now = start;
	ch_coord_ops ops = {
		.ud = h,
		.respond = op_respond,
		.append = op_append,
		.check_partition = op_check_partition,
		.random_uuid = op_uuid,
		.log = op_log,
		.log_enabled = op_log_enabled,
	};
	h->in_call = true;
	h->c = ch_coord_new(&h->cfg, &ops, start);
	if (loaded)
		ch_coord_load_done(h->c, start); /* nothing to replay: serve */
	h->in_call = false;
	h_check(h, "new");
	return h;
}

h_env *
h_new(const ch_coord_config *cfg, int64_t start)
{
	return env_new(cfg, start, true);
}

h_env *
h_new_unloaded(const ch_coord_config *cfg, int64_t start)
{
	return env_new(cfg, start, false);
}

static void
req_free(h_req *r)
{
	blob_free(&r->protocol_type);
	blob_free(&r->protocol_name);
	blob_free(&r->assignment);
	for (int i = 0; i < r->nrows; i++) {
		blob_free(&r->rows[i].metadata);
		blob_free(&r->rows[i].assignment);
		blob_free(&r->rows[i].instance_id);
	}
	free(r->rows);
	free(r);
}

int
h_free(h_env *h)
{
	int v = h->violations;
	if (h->c)
		ch_coord_free(h->c);
	for (h_req *r = h->reqs, *n; r; r = n) {
		n = r->next_alloc;
		req_free(r);
	}
	for (size_t i = 0; i < h->nrecs; i++) {
		free(h->recs[i].key);
		free(h->recs[i].val);
	}
	free(h->recs);
	free(h->appends);
	free(h);
	return v;
}

void
h_check(h_env *h, const char *where)
{
	if (h->check_stride > 1 && h->check_n++ % (unsigned)h->check_stride != 0)
		return;
	const char *e = ch_coord_check(h->c);
	if (e) {
		h->violations++;
		h->last_violation = e;
		if (!h->quiet || h->violations < 5)
			fprintf(stderr, "harness: invariant violated after %s at t=%lld: %s\n",
				where, (long long)h->now, e);
	}
}

static h_append *
next_append(const h_env *h)
{
	h_append *best = NULL;
	if (h->hold_appends)
		return NULL;
	for (size_t i = h->open_from; i < h->nappends; i++) {
		h_append *a = &h->appends[i];
		if (a->done)
			continue;
		if (!best || a->complete_at < best->complete_at)
			best = a;
	}
	return best;
}

int64_t
h_next_event(const h_env *h)
{
	int64_t t = ch_coord_next_deadline(h->c);
	h_append *a = next_append(h);
	if (a && a->complete_at < t)
		t = a->complete_at;
	return t;
}

static void
complete_append(h_env *h, h_append *a)
{
	a->done = true;
	while (h->open_from < h->nappends && h->appends[h->open_from].done)
		h->open_from++;
	h->in_call = true;
	ch_coord_append_done(h->c, h->now, a->id, a->error);
	h->in_call = false;
	h_check(h, "append_done");
}

/* Complete appends that are due now (issued with no delay). */
static void
settle(h_env *h)
{
	for (;;) {
		h_append *a = next_append(h);
		if (!a || a->complete_at > h->now)
			break;
		complete_append(h, a);
	}
}

void
h_advance_to(h_env *h, int64_t t)
{
	settle(h);
	for (int guard = 0; guard < 10000000; guard++) {
		int64_t dl = ch_coord_next_deadline(h->c);
		h_append *a = next_append(h);
		int64_t at = a ? a->complete_at : INT64_MAX;
		int64_t next = dl < at ? dl : at;
		if (next > t)
			break;
		if (next > h->now)
			h->now = next;
		if (a && at <= dl) {
			complete_append(h, a);
		} else {
			h->in_call = true;
			ch_coord_tick(h->c, h->now);
			h->in_call = false;
			h_check(h, "tick");
			if (ch_coord_next_deadline(h->c) <= h->now) {
				/* a deadline that does not move is a livelock */
				static int warned;
				if (!warned++)
					fprintf(stderr,
						"harness: deadline %lld not advanced by tick\n",
						(long long)ch_coord_next_deadline(h->c));
				h->violations++;
				break;
			}
		}
	}
	if (t > h->now)
		h->now = t;
}

void
h_advance(h_env *h, int64_t ms)
{
	h_advance_to(h, h->now + ms);
}

void
h_release_appends(h_env *h)
{
	h->hold_appends = false;
	for (size_t i = 0; i < h->nappends; i++)
		if (!h->appends[i].done)
			h->appends[i].complete_at = h->now;
	settle(h);
}

size_t
h_pending_appends(const h_env *h)
{
	size_t n = 0;
	for (size_t i = 0; i < h->nappends; i++)
		n += !h->appends[i].done;
	return n;
}

static h_req *
new_req(h_env *h, int api, int16_t version)
{
	h_req *r = xcalloc(1, sizeof(*r));
	r->api = api;
	r->version = version;
	r->sent_at = h->now;
	r->generation = -2;
	r->protocol_type.len = -1;
	r->protocol_name.len = -1;
	r->assignment.len = -1;
	r->next_alloc = h->reqs;
	h->reqs = r;
	return r;
}

static void
after_call(h_env *h, const char *what)
{
	h->in_call = false;
	h_check(h, what);
	settle(h);
}

/* ---- builders ------------------------------------------------------------- */

h_blob
h_subscription(h_env *h, int16_t v, const char *const *topics)
{
	(void)h;
	ch_ConsumerProtocolSubscription s;
	ch_ConsumerProtocolSubscription_init(&s);
	ch_str ts[16];
	int n = 0;
	while (topics && topics[n] && n < 16) {
		ts[n] = ch_str_c(topics[n]);
		n++;
	}
	s.Topics = ts;
	s.Topics_n = n;
	s.UserData = CH_BYTES_NULL;
	s.OwnedPartitions_n = 0;
	s.GenerationId = -1;
	s.RackId = CH_STR_NULL;
	ch_buf b;
	ch_buf_init(&b);
	/* Kafka's embedded protocols start with an int16 version. */
	uint8_t ver[2] = {(uint8_t)(v >> 8), (uint8_t)v};
	ch_buf_append(&b, ver, 2);
	ch_ConsumerProtocolSubscription_encode(&b, v, &s);
	h_blob out = {own(b.data, b.len), (int32_t)b.len};
	ch_buf_free(&b);
	return out;
}

h_blob
h_assignment(h_env *h, const char *topic, const int32_t *parts, int n)
{
	(void)h;
	ch_ConsumerProtocolAssignment a;
	ch_ConsumerProtocolAssignment_init(&a);
	ch_ConsumerProtocolAssignment_TopicPartition tp;
	memset(&tp, 0, sizeof(tp));
	tp.Topic = ch_str_c(topic);
	tp.Partitions = (int32_t *)parts;
	tp.Partitions_n = n;
	a.AssignedPartitions = &tp;
	a.AssignedPartitions_n = 1;
	a.UserData = CH_BYTES_NULL;
	ch_buf b;
	ch_buf_init(&b);
	uint8_t ver[2] = {0, 0};
	ch_buf_append(&b, ver, 2);
	ch_ConsumerProtocolAssignment_encode(&b, 0, &a);
	h_blob out = {own(b.data, b.len), (int32_t)b.len};
	ch_buf_free(&b);
	return out;
}

int
h_decode_assignment(const uint8_t *p, int32_t len, char *topic, size_t tcap, int32_t *parts,
		    int max)
{
	if (topic && tcap)
		topic[0] = 0;
	if (len <= 0)
		return 0;
	if (len < 2)
		return -1;
	int16_t v = (int16_t)((p[0] << 8) | p[1]);
	if (v < 0)
		return -1;
	if (v > 3)
		v = 3;
	ch_rd r;
	ch_rd_init(&r, p + 2, (size_t)len - 2);
	ch_arena ar;
	ch_arena_init(&ar);
	ch_ConsumerProtocolAssignment a;
	ch_ConsumerProtocolAssignment_init(&a);
	int n = -1;
	if (ch_ConsumerProtocolAssignment_decode(&r, &ar, v, &a) == 0) {
		n = 0;
		for (int32_t i = 0; i < a.AssignedPartitions_n; i++) {
			const ch_ConsumerProtocolAssignment_TopicPartition *tp =
				&a.AssignedPartitions[i];
			if (topic && i == 0)
				cpy_str(topic, tcap, tp->Topic);
			for (int32_t j = 0; j < tp->Partitions_n; j++)
				if (n < max)
					parts[n++] = tp->Partitions[j];
		}
	}
	ch_arena_free(&ar);
	return n;
}

h_req *
h_join(h_env *h, const h_join_args *a)
{
	int16_t v = pick_version(a->v, CH_JOINGROUPREQUEST_MAX_VERSION);
	h_req *r = new_req(h, H_JOIN, v);
	ch_JoinGroupRequest rq;
	ch_JoinGroupRequest_init(&rq);
	rq.GroupId = cstr(str_or_empty(a->group));
	rq.SessionTimeoutMs = a->session_ms ? a->session_ms : 10000;
	rq.RebalanceTimeoutMs =
		v >= 1 ? (a->rebalance_ms ? a->rebalance_ms : 30000) : rq.SessionTimeoutMs;
	rq.MemberId = cstr(str_or_empty(a->member));
	rq.GroupInstanceId = a->instance ? cstr(a->instance) : CH_STR_NULL;
	rq.ProtocolType = cstr(a->ptype ? a->ptype : "consumer");
	ch_JoinGroupRequest_JoinGroupRequestProtocol ps[4];
	int n = a->nprotos;
	if (n == 0 && !a->protos[0].name) {
		static const char *const t[] = {"t", NULL};
		h_blob s = h_subscription(h, 0, t);
		ps[0].Name = CH_STR_LIT("range");
		ps[0].Metadata = (ch_bytes){s.p, s.len};
		n = 1;
	} else {
		if (n == 0)
			n = 1;
		for (int i = 0; i < n; i++) {
			ps[i].Name = cstr(a->protos[i].name);
			if (a->protos[i].meta)
				ps[i].Metadata = (ch_bytes){a->protos[i].meta, a->protos[i].len};
			else
				ps[i].Metadata = (ch_bytes){(const uint8_t *)"", 0};
		}
	}
	rq.Protocols = ps;
	rq.Protocols_n = n;
	rq.Reason = a->reason ? cstr(a->reason) : CH_STR_NULL;
	cpy(r->req_group, sizeof(r->req_group), rq.GroupId.p, rq.GroupId.len);
	cpy(r->req_member, sizeof(r->req_member), rq.MemberId.p, rq.MemberId.len);
	h->in_call = true;
	ch_coord_join(h->c,
		      &(ch_coord_req){.now = h->now,
				      .token = r,
				      .version = v,
				      .body = &rq,
				      .client_id = cstr(a->client_id ? a->client_id : "client"),
				      .client_host = "/127.0.0.1"});
	after_call(h, "join");
	return r;
}

h_req *
h_sync(h_env *h, const h_sync_args *a)
{
	int16_t v = pick_version(a->v, CH_SYNCGROUPREQUEST_MAX_VERSION);
	h_req *r = new_req(h, H_SYNC, v);
	ch_SyncGroupRequest rq;
	ch_SyncGroupRequest_init(&rq);
	rq.GroupId = cstr(str_or_empty(a->group));
	rq.GenerationId = a->gen;
	rq.MemberId = cstr(str_or_empty(a->member));
	rq.GroupInstanceId = a->instance ? cstr(a->instance) : CH_STR_NULL;
	rq.ProtocolType = v >= 5 && a->ptype ? cstr(a->ptype) : CH_STR_NULL;
	rq.ProtocolName = v >= 5 && a->pname ? cstr(a->pname) : CH_STR_NULL;
	ch_SyncGroupRequest_SyncGroupRequestAssignment as_local[128];
	ch_SyncGroupRequest_SyncGroupRequestAssignment *as = as_local;
	const h_assign *src = a->assign_ext ? a->assign_ext : a->assign;
	if (a->nassign > 128)
		as = xcalloc((size_t)a->nassign, sizeof(*as));
	for (int i = 0; i < a->nassign; i++) {
		as[i].MemberId = cstr(src[i].member);
		as[i].Assignment =
			(ch_bytes){src[i].data ? src[i].data : (const uint8_t *)"", src[i].len};
	}
	rq.Assignments = as;
	rq.Assignments_n = a->nassign;
	cpy(r->req_group, sizeof(r->req_group), rq.GroupId.p, rq.GroupId.len);
	cpy(r->req_member, sizeof(r->req_member), rq.MemberId.p, rq.MemberId.len);
	r->req_generation = a->gen;
	h->in_call = true;
	ch_coord_sync(h->c, &(ch_coord_req){.now = h->now, .token = r, .version = v, .body = &rq});
	after_call(h, "sync");
	if (as != as_local)
		free(as);
	return r;
}

h_req *
h_heartbeat(h_env *h, const h_hb_args *a)
{
	int16_t v = pick_version(a->v, CH_HEARTBEATREQUEST_MAX_VERSION);
	h_req *r = new_req(h, H_HEARTBEAT, v);
	ch_HeartbeatRequest rq;
	ch_HeartbeatRequest_init(&rq);
	rq.GroupId = cstr(str_or_empty(a->group));
	rq.GenerationId = a->gen;
	rq.MemberId = cstr(str_or_empty(a->member));
	rq.GroupInstanceId = a->instance && v >= 3 ? cstr(a->instance) : CH_STR_NULL;
	cpy(r->req_group, sizeof(r->req_group), rq.GroupId.p, rq.GroupId.len);
	cpy(r->req_member, sizeof(r->req_member), rq.MemberId.p, rq.MemberId.len);
	r->req_generation = a->gen;
	h->in_call = true;
	ch_coord_heartbeat(h->c,
			   &(ch_coord_req){.now = h->now, .token = r, .version = v, .body = &rq});
	after_call(h, "heartbeat");
	return r;
}

h_req *
h_leave(h_env *h, const h_leave_args *a)
{
	int16_t v = pick_version(a->v, CH_LEAVEGROUPREQUEST_MAX_VERSION);
	h_req *r = new_req(h, H_LEAVE, v);
	ch_LeaveGroupRequest rq;
	ch_LeaveGroupRequest_init(&rq);
	rq.GroupId = cstr(str_or_empty(a->group));
	ch_LeaveGroupRequest_MemberIdentity ms[8];
	if (v < 3) {
		rq.MemberId = cstr(str_or_empty(a->member));
		rq.Members = NULL;
		rq.Members_n = 0;
	} else {
		for (int i = 0; i < a->nmembers; i++) {
			ms[i].MemberId = cstr(str_or_empty(a->members[i].member));
			ms[i].GroupInstanceId =
				a->members[i].instance ? cstr(a->members[i].instance) : CH_STR_NULL;
			ms[i].Reason =
				a->members[i].reason ? cstr(a->members[i].reason) : CH_STR_NULL;
		}
		rq.Members = ms;
		rq.Members_n = a->nmembers;
	}
	cpy(r->req_group, sizeof(r->req_group), rq.GroupId.p, rq.GroupId.len);
	h->in_call = true;
	ch_coord_leave(h->c, &(ch_coord_req){.now = h->now, .token = r, .version = v, .body = &rq});
	after_call(h, "leave");
	return r;
}

h_req *
h_commit(h_env *h, const h_commit_args *a)
{
	int16_t v = pick_version(a->v, CH_OFFSETCOMMITREQUEST_MAX_VERSION);
	h_req *r = new_req(h, H_OFFSET_COMMIT, v);
	ch_OffsetCommitRequest rq;
	ch_OffsetCommitRequest_init(&rq);
	rq.GroupId = cstr(str_or_empty(a->group));
	rq.GenerationIdOrMemberEpoch = a->gen;
	rq.MemberId = cstr(str_or_empty(a->member));
	rq.GroupInstanceId = a->instance && v >= 7 ? cstr(a->instance) : CH_STR_NULL;
	/* group offsets by topic, in order of first appearance */
	ch_OffsetCommitRequest_OffsetCommitRequestTopic ts[16];
	ch_OffsetCommitRequest_OffsetCommitRequestPartition ps[16][16];
	int nt = 0;
	for (int i = 0; i < a->noffsets; i++) {
		const h_offset *o = &a->offsets[i];
		int t;
		for (t = 0; t < nt; t++)
			if (ch_str_eq_c(ts[t].Name, o->topic))
				break;
		if (t == nt) {
			memset(&ts[t], 0, sizeof(ts[t]));
			ts[t].Name = cstr(o->topic);
			ts[t].Partitions = ps[t];
			ts[t].Partitions_n = 0;
			nt++;
		}
		ch_OffsetCommitRequest_OffsetCommitRequestPartition *p =
			&ps[t][ts[t].Partitions_n++];
		memset(p, 0, sizeof(*p));
		p->PartitionIndex = o->partition;
		p->CommittedOffset = o->offset;
		p->CommittedLeaderEpoch = o->set_epoch ? o->leader_epoch : -1;
		p->CommitTimestamp = -1;
		if (o->null_metadata)
			p->CommittedMetadata = CH_STR_NULL;
		else if (o->metadata_len > 0)
			p->CommittedMetadata = (ch_str){o->metadata, o->metadata_len};
		else
			p->CommittedMetadata = cstr(o->metadata ? o->metadata : "");
	}
	rq.Topics = ts;
	rq.Topics_n = nt;
	cpy(r->req_group, sizeof(r->req_group), rq.GroupId.p, rq.GroupId.len);
	cpy(r->req_member, sizeof(r->req_member), rq.MemberId.p, rq.MemberId.len);
	r->req_generation = a->gen;
	h->in_call = true;
	ch_coord_commit(h->c,
			&(ch_coord_req){.now = h->now, .token = r, .version = v, .body = &rq});
	after_call(h, "commit");
	return r;
}

h_req *
h_fetch(h_env *h, const h_fetch_args *a)
{
	int16_t v = pick_version(a->v, CH_OFFSETFETCHREQUEST_MAX_VERSION);
	h_req *r = new_req(h, H_OFFSET_FETCH, v);
	ch_OffsetFetchRequest rq;
	ch_OffsetFetchRequest_init(&rq);
	ch_OffsetFetchRequest_OffsetFetchRequestTopic t7[8];
	ch_OffsetFetchRequest_OffsetFetchRequestTopics t8[4][8];
	ch_OffsetFetchRequest_OffsetFetchRequestGroup gs[4];
	int32_t parts[4][8][8];
	rq.RequireStable = a->require_stable;
	if (v < 8) {
		const h_fetch_group *g = &a->groups[0];
		rq.GroupId = cstr(str_or_empty(g->group));
		if (g->ntopics < 0) {
			rq.Topics = NULL;
			rq.Topics_n = -1;
		} else {
			for (int i = 0; i < g->ntopics; i++) {
				memset(&t7[i], 0, sizeof(t7[i]));
				t7[i].Name = cstr(g->topics[i].topic);
				memcpy(parts[0][i], g->topics[i].partitions,
				       sizeof(int32_t) * (size_t)g->topics[i].npartitions);
				t7[i].PartitionIndexes = parts[0][i];
				t7[i].PartitionIndexes_n = g->topics[i].npartitions;
			}
			rq.Topics = t7;
			rq.Topics_n = g->ntopics;
		}
		rq.Groups = NULL;
		rq.Groups_n = 0;
		cpy(r->req_group, sizeof(r->req_group), rq.GroupId.p, rq.GroupId.len);
	} else {
		for (int gi = 0; gi < a->ngroups; gi++) {
			const h_fetch_group *g = &a->groups[gi];
			memset(&gs[gi], 0, sizeof(gs[gi]));
			gs[gi].GroupId = cstr(str_or_empty(g->group));
			gs[gi].MemberId = CH_STR_NULL;
			gs[gi].MemberEpoch = -1;
			if (g->ntopics < 0) {
				gs[gi].Topics = NULL;
				gs[gi].Topics_n = -1;
			} else {
				for (int i = 0; i < g->ntopics; i++) {
					memset(&t8[gi][i], 0, sizeof(t8[gi][i]));
					t8[gi][i].Name = cstr(g->topics[i].topic);
					memcpy(parts[gi][i], g->topics[i].partitions,
					       sizeof(int32_t) * (size_t)g->topics[i].npartitions);
					t8[gi][i].PartitionIndexes = parts[gi][i];
					t8[gi][i].PartitionIndexes_n = g->topics[i].npartitions;
				}
				gs[gi].Topics = t8[gi];
				gs[gi].Topics_n = g->ntopics;
			}
		}
		rq.GroupId = CH_STR_LIT("");
		rq.Topics = NULL;
		rq.Topics_n = 0;
		rq.Groups = gs;
		rq.Groups_n = a->ngroups;
	}
	h->in_call = true;
	ch_coord_fetch(h->c, &(ch_coord_req){.now = h->now, .token = r, .version = v, .body = &rq});
	after_call(h, "fetch");
	return r;
}

h_req *
h_list(h_env *h, const h_list_args *a)
{
	int16_t v = pick_version(a->v, CH_LISTGROUPSREQUEST_MAX_VERSION);
	h_req *r = new_req(h, H_LIST, v);
	ch_ListGroupsRequest rq;
	ch_ListGroupsRequest_init(&rq);
	ch_str ss[5], ts[3];
	for (int i = 0; i < a->nstates; i++)
		ss[i] = cstr(a->states[i]);
	for (int i = 0; i < a->ntypes; i++)
		ts[i] = cstr(a->types[i]);
	rq.StatesFilter = ss;
	rq.StatesFilter_n = v >= 4 ? a->nstates : 0;
	rq.TypesFilter = ts;
	rq.TypesFilter_n = v >= 5 ? a->ntypes : 0;
	h->in_call = true;
	ch_coord_list(h->c, &(ch_coord_req){.now = h->now, .token = r, .version = v, .body = &rq});
	after_call(h, "list");
	return r;
}

h_req *
h_describe(h_env *h, int vv, const char *const *groups, int n)
{
	int16_t v = pick_version(vv, CH_DESCRIBEGROUPSREQUEST_MAX_VERSION);
	h_req *r = new_req(h, H_DESCRIBE, v);
	ch_DescribeGroupsRequest rq;
	ch_DescribeGroupsRequest_init(&rq);
	ch_str gs[8];
	for (int i = 0; i < n; i++)
		gs[i] = cstr(groups[i]);
	rq.Groups = gs;
	rq.Groups_n = n;
	h->in_call = true;
	ch_coord_describe(h->c,
			  &(ch_coord_req){.now = h->now, .token = r, .version = v, .body = &rq});
	after_call(h, "describe");
	return r;
}

h_req *
h_delete_groups(h_env *h, int vv, const char *const *groups, int n)
{
	int16_t v = pick_version(vv, CH_DELETEGROUPSREQUEST_MAX_VERSION);
	h_req *r = new_req(h, H_DELETE_GROUPS, v);
	ch_DeleteGroupsRequest rq;
	ch_DeleteGroupsRequest_init(&rq);
	ch_str gs[8];
	for (int i = 0; i < n; i++)
		gs[i] = cstr(groups[i]);
	rq.GroupsNames = gs;
	rq.GroupsNames_n = n;
	h->in_call = true;
	ch_coord_delete_groups(
		h->c, &(ch_coord_req){.now = h->now, .token = r, .version = v, .body = &rq});
	after_call(h, "delete_groups");
	return r;
}

h_req *
h_offset_delete(h_env *h, const char *group, const h_tp *topics, int ntopics)
{
	h_req *r = new_req(h, H_OFFSET_DELETE, 0);
	ch_OffsetDeleteRequest rq;
	ch_OffsetDeleteRequest_init(&rq);
	rq.GroupId = cstr(group);
	ch_OffsetDeleteRequest_OffsetDeleteRequestTopic ts[8];
	ch_OffsetDeleteRequest_OffsetDeleteRequestPartition ps[8][8];
	for (int i = 0; i < ntopics; i++) {
		memset(&ts[i], 0, sizeof(ts[i]));
		ts[i].Name = cstr(topics[i].topic);
		for (int j = 0; j < topics[i].npartitions; j++)
			ps[i][j].PartitionIndex = topics[i].partitions[j];
		ts[i].Partitions = ps[i];
		ts[i].Partitions_n = topics[i].npartitions;
	}
	rq.Topics = ts;
	rq.Topics_n = ntopics;
	cpy(r->req_group, sizeof(r->req_group), group, (int32_t)strlen(group));
	h->in_call = true;
	ch_coord_offset_delete(
		h->c, &(ch_coord_req){.now = h->now, .token = r, .version = 0, .body = &rq});
	after_call(h, "offset_delete");
	return r;
}

/* ---- response helpers ----------------------------------------------------- */

bool
h_done(const h_req *r)
{
	return r && r->nresp == 1;
}

const h_row *
h_row_tp(const h_req *r, const char *group, const char *topic, int32_t partition)
{
	for (int i = 0; i < r->nrows; i++) {
		const h_row *w = &r->rows[i];
		if (w->is_member || !strcmp(w->state, "group"))
			continue;
		if (group && strcmp(w->group, group))
			continue;
		if (topic && strcmp(w->topic, topic))
			continue;
		if (partition >= 0 && w->partition != partition)
			continue;
		return w;
	}
	return NULL;
}

const h_row *
h_row_member(const h_req *r, const char *member_id)
{
	for (int i = 0; i < r->nrows; i++)
		if (!strcmp(r->rows[i].member_id, member_id))
			return &r->rows[i];
	return NULL;
}

const h_row *
h_row_group(const h_req *r, const char *group)
{
	for (int i = 0; i < r->nrows; i++)
		if (!r->rows[i].is_member && !strcmp(r->rows[i].group, group) &&
		    (r->api != H_OFFSET_FETCH || !strcmp(r->rows[i].state, "group")))
			return &r->rows[i];
	return NULL;
}

bool
h_blob_eq(h_blob b, const void *p, int32_t len)
{
	if (b.len != len)
		return false;
	return len <= 0 || memcmp(b.p, p, (size_t)len) == 0;
}

bool
h_blob_str(h_blob b, const char *s)
{
	if (!s)
		return b.len < 0;
	return h_blob_eq(b, s, (int32_t)strlen(s));
}

/* ---- durable log ------------------------------------------------------------ */

int
h_record_key_version(const h_record *r)
{
	if (r->klen < 2)
		return -1;
	return (r->key[0] << 8) | r->key[1];
}

/* The group id of a record key (both key kinds start with the group string). */
static bool
record_group_is(const h_record *r, const char *group)
{
	if (r->klen < 4)
		return false;
	size_t n = (size_t)((r->key[2] << 8) | r->key[3]);
	if (4 + n > r->klen)
		return false;
	return strlen(group) == n && memcmp(r->key + 4, group, n) == 0;
}

size_t
h_count_records(const h_env *h, const char *group, int key_kind, bool tombstones_only)
{
	size_t n = 0;
	for (size_t i = 0; i < h->nrecs; i++) {
		const h_record *r = &h->recs[i];
		if (group && !record_group_is(r, group))
			continue;
		int kv = h_record_key_version(r);
		if (key_kind >= 0) {
			bool is_group = kv == 2;
			if ((key_kind == 2) != is_group)
				continue;
		}
		if (tombstones_only && !r->tombstone)
			continue;
		n++;
	}
	return n;
}

/* Is the record durable: its append completed successfully? */
static bool
record_durable(const h_env *h, const h_record *r)
{
	if (r->append_idx >= h->nappends)
		return false;
	const h_append *a = &h->appends[r->append_idx];
	return a->done && !a->lost && a->error == 0;
}

static void
load_record(h_env *h, const h_record *r, size_t i)
{
	h->in_call = true;
	int rc = ch_coord_load_record(h->c, r->key, r->klen, r->tombstone ? NULL : r->val, r->vlen,
				      r->tombstone);
	h->in_call = false;
	if (rc != 0) {
		fprintf(stderr, "harness: replay: record %zu (key v%d) not understood\n", i,
			h_record_key_version(r));
		h->violations++;
	}
}

/* Every partition starts loading: records replay only into a partition
 * being loaded (ch_coord_load_record); ch_coord_load_done ends them all. */
static void
begin_loads(h_env *h)
{
	for (int32_t p = 0; p < h->cfg.offsets_partitions; p++)
		ch_coord_load_begin(h->c, p);
}

void
h_restart(h_env *h)
{
	/* appends still in flight never reach the log */
	for (size_t i = h->open_from; i < h->nappends; i++)
		if (!h->appends[i].done) {
			h->appends[i].done = true;
			h->appends[i].lost = true;
		}
	h->open_from = h->nappends;
	h->fifo_tail = h->now;
	/* requests the old coordinator never answered are gone */
	for (h_req *r = h->reqs; r; r = r->next_alloc)
		if (r->nresp == 0 && !r->lost) {
			r->lost = true;
			r->lost_at = h->now;
		}
	h->crashing = true;
	h->in_call = true;
	ch_coord_free(h->c);
	h->crashing = false;
	ch_coord_config cfg = h->cfg;
	ch_coord_ops ops = {
		.ud = h,
		.respond = op_respond,
		.append = op_append,
		.check_partition = op_check_partition,
		.random_uuid = op_uuid,
		.log = op_log,
		.log_enabled = op_log_enabled,
	};
	h->c = ch_coord_new(&cfg, &ops, h->now);
	begin_loads(h);
	h->in_call = false;
	for (size_t i = 0; i < h->nrecs; i++)
		if (record_durable(h, &h->recs[i]))
			load_record(h, &h->recs[i], i);
	h->in_call = true;
	ch_coord_load_done(h->c, h->now);
	h->in_call = false;
	h->restarts++;
	h_check(h, "restart");
	settle(h);
}

size_t
h_load_partition(h_env *h, const h_env *from, int32_t partition, bool ok)
{
	h->in_call = true;
	bool began = ch_coord_load_begin(h->c, partition);
	h->in_call = false;
	if (!began) {
		fprintf(stderr, "harness: partition %d cannot start loading\n", partition);
		h->violations++;
		return 0;
	}
	h_check(h, "load_begin");
	for (size_t i = 0; i < from->nrecs; i++)
		if (from->recs[i].partition == partition && record_durable(from, &from->recs[i]))
			load_record(h, &from->recs[i], i);
	h_check(h, "load_record");
	h->in_call = true;
	size_t n = ch_coord_load_end(h->c, h->now, partition, ok);
	h->in_call = false;
	h_check(h, "load_end");
	return n;
}

h_env *
h_replay(h_env *h)
{
	h_env *n = h_new_unloaded(&h->cfg, h->now);
	n->in_call = true;
	begin_loads(n);
	n->in_call = false;
	n->uuid_seq = h->uuid_seq + 1000000;
	for (size_t i = 0; i < h->nrecs; i++) {
		const h_record *r = &h->recs[i];
		if (!record_durable(h, r))
			continue;
		/* keep the log in the new env too, so it can be replayed again */
		if (n->nrecs == n->cap_recs) {
			n->cap_recs = n->cap_recs ? n->cap_recs * 2 : 64;
			n->recs = xrealloc(n->recs, n->cap_recs * sizeof(h_record));
		}
		h_record *c = &n->recs[n->nrecs++];
		*c = *r;
		c->key = xcalloc(r->klen + 1, 1);
		memcpy(c->key, r->key, r->klen);
		c->val = NULL;
		if (!r->tombstone) {
			c->val = xcalloc(r->vlen + 1, 1);
			if (r->vlen)
				memcpy(c->val, r->val, r->vlen);
		}
		c->append_id = 0; /* marker: loaded */
		c->append_idx = 0;
		load_record(n, r, i);
	}
	/* loaded records count as durable in the new env */
	if (n->nappends == n->cap_appends) {
		n->cap_appends = 16;
		n->appends = xrealloc(n->appends, n->cap_appends * sizeof(h_append));
	}
	h_append *a = &n->appends[n->nappends++];
	memset(a, 0, sizeof(*a));
	a->id = 0;
	a->done = true;
	n->in_call = true;
	ch_coord_load_done(n->c, n->now);
	n->in_call = false;
	h_check(n, "load_done");
	settle(n);
	return n;
}

/* ---- flows ------------------------------------------------------------------ */

h_req *
h_join_full(h_env *h, const h_join_args *a)
{
	h_req *r = h_join(h, a);
	int16_t v = pick_version(a->v, CH_JOINGROUPREQUEST_MAX_VERSION);
	if (v >= 4 && h_done(r) && r->error == CH_KERR_MEMBER_ID_REQUIRED) {
		h_join_args b = *a;
		char id[H_STR];
		strcpy(id, r->member_id);
		b.member = id;
		return h_join(h, &b);
	}
	return r;
}

bool
h_wait(h_env *h, h_req *const *rs, int n, int64_t cap)
{
	int64_t end = h->now + cap;
	for (;;) {
		bool all = true;
		for (int i = 0; i < n; i++)
			all = all && h_done(rs[i]);
		if (all)
			return true;
		if (h->now >= end)
			return false;
		int64_t next = h_next_event(h);
		if (next > end)
			next = end;
		if (next < h->now + 1)
			next = h->now + 1;
		h_advance_to(h, next);
	}
}

int32_t
h_form_group(h_env *h, const char *group, int n, char ids[][H_STR])
{
	h_req *joins[64] = {0};
	char cid[32];
	for (int i = 0; i < n; i++) {
		snprintf(cid, sizeof(cid), "c%d", i);
		joins[i] = h_join_full(
			h, &(h_join_args){.v = H_V(5), .group = group, .client_id = cid});
	}
	h_wait(h, joins, n, 60000);
	const char *leader = NULL;
	for (int i = 0; i < n; i++) {
		if (!h_done(joins[i]) || joins[i]->error != 0)
			return -1;
		strcpy(ids[i], joins[i]->member_id);
		leader = joins[i]->leader;
	}
	int32_t gen = joins[0]->generation;
	h_sync_args sa = {.v = H_V(3), .group = group, .gen = gen};
	static char names[64][8];
	for (int i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "A%d", i);
		sa.assign[i] =
			(h_assign){ids[i], (const uint8_t *)names[i], (int32_t)strlen(names[i])};
	}
	sa.nassign = n;
	h_req *syncs[64];
	for (int i = 0; i < n; i++) {
		h_sync_args s = sa;
		s.member = ids[i];
		if (strcmp(ids[i], leader) != 0)
			s.nassign = 0;
		syncs[i] = h_sync(h, &s);
	}
	for (int i = 0; i < n; i++)
		if (!h_done(syncs[i]) || syncs[i]->error != 0)
			return -1;
	return gen;
}
