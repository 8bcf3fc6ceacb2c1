/*
 * ch_coord_cg_store.c: the consumer groups in __consumer_offsets (the
 * records of ch_coord_cg_records.h): writing what changed, answering
 * heartbeats once it is durable, and the replay at startup.
 *
 * Each group's store remembers the value bytes of every record key as last
 * written or replayed. A flush encodes the group's current records, writes
 * those whose bytes differ, and tombstones for keys the group no longer
 * has. Order inside a batch follows Kafka's replay rules (its
 * GroupMetadataManager.replay refuses other orders): a removed member's
 * tombstones first, current assignment, then target, then subscription
 * (its epoch must be "left" and its target gone before the member goes);
 * then subscriptions, the group epoch, targets, the target epoch, and last
 * the current assignments; a deleted group's epoch record last of all.
 */
#include <stdlib.h>
#include <string.h>

#include "common/ch_hash.h"
#include "group/ch_coord_cg_int.h"
#include "group/ch_coord_cg_records.h"
#include "proto/generated/ch_errors.h"

#define LEAVE_EPOCH (-1)

/* ---- stores ---------------------------------------------------------------- */

static cg_store *
store_get(ch_coord_cg *cg, const char *group_id, bool create)
{
	size_t len = strlen(group_id);
	cg_store *st = ch_map_get(&cg->stores, group_id, len);
	if (st || !create)
		return st;
	st = ch_xcalloc(1, sizeof *st);
	ch_map_init(&st->recs);
	st->partition = ch_group_partition(group_id, len, cg->cfg.offsets_partitions);
	ch_map_entry *e = ch_map_put(&cg->stores, group_id, len, st);
	st->group_id = e->key;
	return st;
}

static void
written_free(cg_written *w)
{
	ch_buf_free(&w->value);
	free(w->member);
	free(w);
}

static void
store_drop(ch_coord_cg *cg, cg_store *st)
{
	ch_map_foreach (&st->recs, e)
		written_free(e->value);
	ch_map_free(&st->recs);
	ch_map_remove(&cg->stores, st->group_id, strlen(st->group_id));
	free(st);
}

/* The entry of key (created empty and unknown if absent and create). */
static cg_written *
written_get(cg_store *st, const ch_buf *key, int16_t type, const char *member, bool create)
{
	cg_written *w = ch_map_get(&st->recs, key->data, key->len);
	if (w || !create)
		return w;
	w = ch_xcalloc(1, sizeof *w);
	ch_buf_init(&w->value);
	w->unknown = true;
	w->type = type;
	w->member = member ? ch_xstrdup(member) : NULL;
	ch_map_put(&st->recs, key->data, key->len, w);
	return w;
}

static void
written_remove(cg_store *st, const ch_buf *key)
{
	cg_written *w = ch_map_get(&st->recs, key->data, key->len);
	if (!w)
		return;
	ch_map_remove(&st->recs, key->data, key->len);
	written_free(w);
}

/* ---- the records a flush writes ------------------------------------------ */

typedef struct out_recs {
	ch_coord_record *v;
	size_t n, cap;
} out_recs;

static void
out_push(out_recs *o, ch_coord_record *r)
{
	if (o->n == o->cap) {
		o->cap = o->cap ? o->cap * 2 : 8;
		o->v = ch_xrealloc(o->v, o->cap * sizeof *o->v);
	}
	o->v[o->n++] = *r;
}

/* r goes out if its value differs from what the store has (which then
 * has it); else it is dropped. */
static void
want(cg_store *st, out_recs *o, ch_coord_record *r, int16_t type, const char *member)
{
	cg_written *w = written_get(st, &r->key, type, member, true);
	if (!w->unknown && w->value.len == r->value.len &&
	    memcmp(w->value.data, r->value.data, r->value.len) == 0) {
		ch_coord_cgrec_free(r);
		return;
	}
	ch_buf_reset(&w->value);
	ch_buf_append(&w->value, r->value.data, r->value.len);
	w->unknown = false;
	out_push(o, r);
}

static void
tombstone(cg_store *st, out_recs *o, int16_t type, const char *group, const char *member)
{
	ch_coord_record r;
	ch_coord_cgrec_tombstone(&r, type, group, member);
	written_remove(st, &r.key);
	out_push(o, &r);
}

/* out's protocols point into m, or to the caller's protos (at least
 * m->classic->nprotocols). */
static void
member_records(const cg_member *m, ch_coord_cgrec_member *out, ch_coord_cgrec_protocol *protos)
{
	*out = (ch_coord_cgrec_member){
		.instance_id = m->instance_id ? ch_str_c(m->instance_id) : CH_STR_NULL,
		.rack_id = m->rack ? ch_str_c(m->rack) : CH_STR_NULL,
		.client_id = ch_str_c(m->client_id ? m->client_id : ""),
		.client_host = ch_str_c(m->client_host ? m->client_host : ""),
		.topics = (const char *const *)m->topics,
		.ntopics = m->ntopics,
		/* "" until one is sent: Kafka's ConsumerGroupMember.Builder */
		.regex = ch_str_c(m->regex ? m->regex : ""),
		.rebalance_timeout_ms = m->rebalance_timeout_ms,
		.server_assignor = m->server_assignor ? ch_str_c(m->server_assignor) : CH_STR_NULL,
		.classic = m->classic != NULL,
	};
	if (!m->classic)
		return;
	out->classic_session_timeout_ms = m->classic->session_timeout_ms;
	for (int32_t i = 0; i < m->classic->nprotocols; i++) {
		const cg_classic_protocol *p = &m->classic->protocols[i];
		protos[i] = (ch_coord_cgrec_protocol){ch_str_c(p->name),
						      (ch_bytes){p->metadata, (int32_t)p->len}};
	}
	out->protocols = protos;
	out->nprotocols = m->classic->nprotocols;
}

static bool
member_touched(const cg_store *st, const cg_group *g, const cg_member *m)
{
	return st->dirty || g->store_all || m->store_dirty;
}

/* Kafka's order of a member's tombstones (removeMember). */
static int
tombstone_rank(int16_t type)
{
	return type == CGREC_CURRENT ? 0 : type == CGREC_TARGET_MEMBER ? 1 : 2;
}

typedef struct gone {
	char *member;
	int16_t type;
} gone;

static int
gone_cmp(const void *a, const void *b)
{
	const gone *x = a, *y = b;
	int c = strcmp(x->member, y->member);
	return c ? c : tombstone_rank(x->type) - tombstone_rank(y->type);
}

/* The tombstones of what the store has and group g (NULL: deleted) no
 * longer does: members first, then (g NULL) the group-level records. */
static void
collect_tombstones(cg_store *st, cg_group *g, out_recs *o)
{
	if (g && !g->store_scan && !st->dirty)
		return; /* nothing went since the last flush: no scan per heartbeat */
	if (g)
		g->store_scan = false;
	gone *v = NULL;
	size_t n = 0, cap = 0;
	ch_map_foreach (&st->recs, e) {
		const cg_written *w = e->value;
		bool member_level = w->type == CGREC_MEMBER || w->type == CGREC_TARGET_MEMBER ||
				    w->type == CGREC_CURRENT;
		if (!member_level || (g && ch_coord_cg_member_find(g, ch_str_c(w->member))))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			v = ch_xrealloc(v, cap * sizeof *v);
		}
		v[n++] = (gone){ch_xstrdup(w->member), w->type};
	}
	if (n > 1)
		qsort(v, n, sizeof *v, gone_cmp);
	for (size_t i = 0; i < n; i++) {
		tombstone(st, o, v[i].type, st->group_id, v[i].member);
		free(v[i].member);
	}
	free(v);
	/* Kafka 4.1+ keeps no partition metadata record: one replayed from an
	 * older log goes (Kafka writes the same tombstone). */
	static const int16_t group_level[] = {CGREC_REGEX, CGREC_TARGET_META, CGREC_PARTITION_META,
					      CGREC_GROUP};
	for (size_t k = 0; k < sizeof group_level / sizeof *group_level; k++) {
		int16_t type = group_level[k];
		if (g && type != CGREC_PARTITION_META && type != CGREC_REGEX)
			continue;
		ch_map_foreach_safe(&st->recs, e, tmp)
		{
			cg_written *w = e->value;
			if (w->type != type)
				continue;
			/* a live group's regex goes with its last subscriber */
			if (g && type == CGREC_REGEX && w->member &&
			    ch_map_get(&g->regexes, w->member, strlen(w->member)))
				continue;
			ch_coord_record r;
			ch_buf_init(&r.key);
			ch_buf_init(&r.value);
			ch_buf_append(&r.key, e->key, e->klen);
			r.tombstone = true;
			ch_map_remove(&st->recs, r.key.data, r.key.len);
			written_free(w);
			out_push(o, &r);
		}
	}
}

static void
member_meta_record(cg_store *st, cg_group *g, cg_member *m, out_recs *o)
{
	ch_coord_record r;
	ch_coord_cgrec_member mm;
	int32_t np = m->classic ? m->classic->nprotocols : 0;
	ch_coord_cgrec_protocol *protos = ch_xcalloc((size_t)(np ? np : 1), sizeof *protos);
	member_records(m, &mm, protos);
	ch_coord_cgrec_member_meta(&r, g->id, m->id, &mm);
	free(protos);
	want(st, o, &r, CGREC_MEMBER, m->id);
}

static void
target_member_record(cg_store *st, cg_group *g, cg_member *m, out_recs *o)
{
	ch_coord_record r;
	ch_coord_cgrec_target_member(&r, g->id, m->id, m->target.v, m->target.n);
	want(st, o, &r, CGREC_TARGET_MEMBER, m->id);
}

static void
current_record(cg_store *st, cg_group *g, cg_member *m, out_recs *o)
{
	ch_coord_record r;
	ch_coord_cgrec_current(&r, g->id, m->id, m->epoch, m->previous_epoch, (int8_t)m->state,
			       m->assigned.v, m->assigned_ep, m->assigned.n, m->revoking.v,
			       m->revoking_ep, m->revoking.n);
	want(st, o, &r, CGREC_CURRENT, m->id);
	m->store_dirty = false;
}

/* fn for each member whose records may have changed, in the members' order:
 * all of them when only is NULL and scan, else only (NULL: none). */
static void
each_touched(cg_store *st, cg_group *g, bool scan, cg_member *only, out_recs *o,
	     void (*fn)(cg_store *, cg_group *, cg_member *, out_recs *))
{
	if (!scan) {
		if (only && only->store_dirty)
			fn(st, g, only, o);
		return;
	}
	ch_map_foreach (&g->members, e) {
		cg_member *m = e->value;
		if (member_touched(st, g, m))
			fn(st, g, m, o);
	}
}

/* Every record of g that changed, in Kafka's order (see the top). Every
 * member is looked at only when all may have changed or more than one was
 * touched (ch_coord_cg_member_touch); one touched member is found by id (it
 * may be gone: its tombstones are collect_tombstones'). */
static void
collect_values(cg_store *st, cg_group *g, out_recs *o)
{
	ch_coord_record r;
	bool scan = st->dirty || g->store_all || g->store_touched > 1;
	cg_member *only = !scan && g->store_touched == 1
				  ? ch_coord_cg_member_find(g, ch_str_c(g->store_touched_id))
				  : NULL;
	each_touched(st, g, scan, only, o, member_meta_record);
	/* Kafka writes a resolution before the epoch it bumps. */
	ch_map_foreach (&g->regexes, e) {
		cg_regex *x = e->value;
		if (!x->resolved || (!x->store_dirty && !st->dirty))
			continue;
		ch_coord_cgrec_regex(&r, g->id, x->pattern, (const char *const *)x->topics,
				     x->ntopics, x->version, x->ts);
		want(st, o, &r, CGREC_REGEX, x->pattern);
		x->store_dirty = false;
	}
	ch_coord_cgrec_group(&r, g->id, g->epoch, g->meta_hash);
	want(st, o, &r, CGREC_GROUP, NULL);
	each_touched(st, g, scan, only, o, target_member_record);
	ch_coord_cgrec_target_meta(&r, g->id, g->assignment_epoch, g->assignment_ts);
	want(st, o, &r, CGREC_TARGET_META, NULL);
	each_touched(st, g, scan, only, o, current_record);
	g->store_all = false;
	g->store_touched = 0;
	free(g->store_touched_id);
	g->store_touched_id = NULL;
}

/* ---- answers ---------------------------------------------------------------- */

static ch_str
str_copy(ch_str s)
{
	if (s.len < 0)
		return CH_STR_NULL;
	char *p = ch_xmalloc((size_t)s.len + 1);
	if (s.len)
		memcpy(p, s.p, (size_t)s.len);
	p[s.len] = 0;
	return (ch_str){p, s.len};
}

static cg_deferred *
deferred_new(void *token, const ch_ConsumerGroupHeartbeatResponse *r)
{
	cg_deferred *d = ch_xcalloc(1, sizeof *d);
	d->token = token;
	d->r = *r;
	d->r.ErrorMessage = str_copy(r->ErrorMessage);
	d->r.MemberId = str_copy(r->MemberId);
	d->r.Assignment = NULL;
	if (r->Assignment) {
		const ch_ConsumerGroupHeartbeatResponse_Assignment *a = r->Assignment;
		ch_ConsumerGroupHeartbeatResponse_Assignment *c = ch_xcalloc(1, sizeof *c);
		c->TopicPartitions_n = a->TopicPartitions_n;
		c->TopicPartitions =
			ch_xcalloc((size_t)(a->TopicPartitions_n ? a->TopicPartitions_n : 1),
				   sizeof *c->TopicPartitions);
		for (int32_t i = 0; i < a->TopicPartitions_n; i++) {
			c->TopicPartitions[i] = a->TopicPartitions[i];
			int32_t n = a->TopicPartitions[i].Partitions_n;
			int32_t *p = ch_xmalloc((size_t)(n ? n : 1) * sizeof *p);
			if (n)
				memcpy(p, a->TopicPartitions[i].Partitions, (size_t)n * sizeof *p);
			c->TopicPartitions[i].Partitions = p;
		}
		d->r.Assignment = c;
	}
	return d;
}

static void
deferred_free(cg_deferred *d)
{
	if (d->ops)
		d->ops->free(d->ans);
	free((void *)d->r.ErrorMessage.p);
	free((void *)d->r.MemberId.p);
	if (d->r.Assignment) {
		for (int32_t i = 0; i < d->r.Assignment->TopicPartitions_n; i++)
			free((void *)d->r.Assignment->TopicPartitions[i].Partitions);
		free(d->r.Assignment->TopicPartitions);
		free(d->r.Assignment);
	}
	free(d);
}

/* GroupCoordinatorService.handleOperationException's mapping of a failed
 * write. */
static int16_t
write_error(int16_t e)
{
	switch (e) {
	case CH_KERR_UNKNOWN_TOPIC_OR_PARTITION:
	case CH_KERR_NOT_ENOUGH_REPLICAS:
	case CH_KERR_REQUEST_TIMED_OUT:
		return CH_KERR_COORDINATOR_NOT_AVAILABLE;
	case CH_KERR_NOT_LEADER_OR_FOLLOWER:
	case CH_KERR_KAFKA_STORAGE_ERROR:
		return CH_KERR_NOT_COORDINATOR;
	case CH_KERR_MESSAGE_TOO_LARGE:
	case CH_KERR_RECORD_LIST_TOO_LARGE:
	case CH_KERR_INVALID_FETCH_SIZE:
		return CH_KERR_UNKNOWN_SERVER_ERROR;
	default:
		return e;
	}
}

static void
answer_all(ch_coord_cg *cg, cg_append *a, int16_t error)
{
	for (cg_deferred *d = a->answers, *next; d; d = next) {
		next = d->next;
		if (d->ops) {
			d->ops->send(cg, d->token, d->ans, error ? write_error(error) : 0);
		} else if (error) {
			ch_ConsumerGroupHeartbeatResponse r;
			ch_ConsumerGroupHeartbeatResponse_init(&r);
			r.ErrorCode = write_error(error);
			r.ErrorMessage = ch_str_c(ch_kerr_name(r.ErrorCode));
			cg->ops.respond(cg->ops.ud, d->token, &r);
		} else {
			cg->ops.respond(cg->ops.ud, d->token, &d->r);
		}
		deferred_free(d);
	}
	a->answers = NULL;
	a->answers_tail = &a->answers;
}

static cg_append *
last_append_of(ch_coord_cg *cg, int32_t partition)
{
	cg_append *last = NULL;
	for (cg_append *a = cg->appends; a; a = a->next)
		if (a->partition == partition)
			last = a;
	return last;
}

/* What a flush answers: a heartbeat's answer (copied when it must wait),
 * or another API's (owned). */
typedef struct flush_answer {
	void *token;
	const ch_ConsumerGroupHeartbeatResponse *hb;
	const cg_answer_ops *ops;
	void *ans;
} flush_answer;

static bool
has_answer(const flush_answer *fa)
{
	return fa->hb || fa->ops;
}

static void
send_now(ch_coord_cg *cg, const flush_answer *fa)
{
	if (fa->ops) {
		fa->ops->send(cg, fa->token, fa->ans, 0);
		fa->ops->free(fa->ans);
	} else if (fa->hb) {
		cg->ops.respond(cg->ops.ud, fa->token, fa->hb);
	}
}

static void
attach(cg_append *a, const flush_answer *fa)
{
	cg_deferred *d;
	if (fa->ops) {
		d = ch_xcalloc(1, sizeof *d);
		d->token = fa->token;
		d->ops = fa->ops;
		d->ans = fa->ans;
	} else {
		d = deferred_new(fa->token, fa->hb);
	}
	*a->answers_tail = d;
	a->answers_tail = &d->next;
}

/* ---- flush ------------------------------------------------------------------ */

static void
flush(ch_coord_cg *cg, const char *group_id, const flush_answer *answer)
{
	if (!cg->ops.append) {
		send_now(cg, answer);
		return;
	}
	cg_group *g = ch_coord_cg_group_find(cg, ch_str_c(group_id));
	cg_store *st = store_get(cg, group_id, g != NULL);
	out_recs o = {0};
	if (st) {
		collect_tombstones(st, g, &o);
		if (g)
			collect_values(st, g, &o);
		st->dirty = false;
	}
	int32_t partition =
		st ? st->partition
		   : ch_group_partition(group_id, strlen(group_id), cg->cfg.offsets_partitions);
	if (o.n == 0) {
		free(o.v);
		cg_append *prev = has_answer(answer) ? last_append_of(cg, partition) : NULL;
		if (prev)
			attach(prev, answer); /* after what it may depend on */
		else
			send_now(cg, answer);
		if (st && !g && st->recs.n == 0)
			store_drop(cg, st);
		return;
	}
	cg_append *a = ch_xcalloc(1, sizeof *a);
	a->id = ++cg->next_append_id;
	a->partition = partition;
	a->group_id = ch_xstrdup(group_id);
	a->keys = ch_xcalloc(o.n, sizeof *a->keys);
	a->tombstones = ch_xcalloc(o.n, sizeof *a->tombstones);
	a->nkeys = o.n;
	for (size_t i = 0; i < o.n; i++) {
		ch_buf_init(&a->keys[i]);
		ch_buf_append(&a->keys[i], o.v[i].key.data, o.v[i].key.len);
		a->tombstones[i] = o.v[i].tombstone;
	}
	a->answers_tail = &a->answers;
	if (has_answer(answer))
		attach(a, answer);
	*cg->appends_tail = a;
	cg->appends_tail = &a->next;
	if (st && !g && st->recs.n == 0)
		store_drop(cg, st);
	/* Last: the shell may report the append done before it returns. */
	cg->ops.append(cg->ops.ud, partition, o.v, o.n, a->id);
	for (size_t i = 0; i < o.n; i++)
		ch_coord_cgrec_free(&o.v[i]);
	free(o.v);
}

void
ch_coord_cg_store_flush(ch_coord_cg *cg, const char *group_id, void *token,
			const ch_ConsumerGroupHeartbeatResponse *answer)
{
	flush(cg, group_id, &(flush_answer){token, answer, NULL, NULL});
}

void
ch_coord_cg_store_flush_answer(ch_coord_cg *cg, const char *group_id, void *token,
			       const cg_answer_ops *ops, void *ans)
{
	flush(cg, group_id, &(flush_answer){token, NULL, ops, ans});
}

static void
append_free(cg_append *a)
{
	for (size_t i = 0; i < a->nkeys; i++)
		ch_buf_free(&a->keys[i]);
	free(a->keys);
	free(a->tombstones);
	free(a->group_id);
	free(a);
}

/* After a failed append: its keys' contents on disk are unknown; the next
 * flush of the group writes them again (or their tombstones). */
static void
forget_written(ch_coord_cg *cg, const cg_append *a)
{
	cg_store *st = store_get(cg, a->group_id, true);
	for (size_t i = 0; i < a->nkeys; i++) {
		ch_arena ar;
		ch_arena_init(&ar);
		ch_coord_cgrec rec;
		if (ch_coord_cgrec_decode(a->keys[i].data, a->keys[i].len, NULL, 0, true, &ar,
					  &rec) == 0) {
			char *member = rec.member.len >= 0 ? ch_coord_cg_dup_str(rec.member) : NULL;
			cg_written *w = written_get(st, &a->keys[i], rec.type, member, true);
			w->unknown = true;
			free(member);
		}
		ch_arena_reset(&ar);
	}
	st->dirty = true;
}

void
ch_coord_cg_append_done(ch_coord_cg *cg, int64_t now, uint64_t id, int16_t error)
{
	cg->now = now;
	cg_append **pp = &cg->appends;
	while (*pp && (*pp)->id != id)
		pp = &(*pp)->next;
	cg_append *a = *pp;
	if (!a)
		return;
	*pp = a->next;
	if (cg->appends_tail == &a->next)
		cg->appends_tail = pp;
	if (error) {
		ch_coord_cg_log(cg, CH_LOG_WARN,
				"[GroupId %s] Writing %zu records to __consumer_offsets-%d failed: "
				"%s; they "
				"are written again at the group's next change.",
				a->group_id, a->nkeys, a->partition, ch_kerr_name(error));
		forget_written(cg, a);
	}
	answer_all(cg, a, error);
	append_free(a);
}

void
ch_coord_cg_store_free_all(ch_coord_cg *cg)
{
	for (cg_append *a = cg->appends, *next; a; a = next) {
		next = a->next;
		for (cg_deferred *d = a->answers, *dn; d; d = dn) {
			dn = d->next;
			deferred_free(d);
		}
		append_free(a);
	}
	cg->appends = NULL;
	ch_map_foreach_safe(&cg->stores, e, tmp) store_drop(cg, e->value);
	ch_map_free(&cg->stores);
}

/* ---- replay (GroupMetadataManager.replay) ------------------------------------- */

static void
set_from_topics(cg_set *s, const ch_coord_cgrec_topic *t, int32_t n)
{
	ch_coord_cg_set_free(s);
	for (int32_t i = 0; i < n; i++)
		for (int32_t k = 0; k < t[i].n; k++) {
			ch_coord_cg_tp tp = {t[i].topic, t[i].partitions[k]};
			ch_coord_cg_set_push(s, &tp);
		}
	ch_coord_cg_set_normalize(s);
}

/* The members' assignment epochs from a current-assignment record; a
 * record without them (before Kafka 4.3) counts every partition as
 * assigned at the member's epoch. */
static void
replay_epochs(cg_member *m, const ch_coord_cgrec *rec)
{
	ch_map_free(&m->aepochs);
	ch_map_init(&m->aepochs);
	const ch_coord_cgrec_topic *lists[] = {rec->parts, rec->revoking};
	int32_t ns[] = {rec->nparts, rec->nrevoking};
	char k[CG_TP_KEY_LEN];
	for (int l = 0; l < 2 && !rec->tombstone; l++)
		for (int32_t i = 0; i < ns[l]; i++)
			for (int32_t j = 0; j < lists[l][i].n; j++) {
				ch_coord_cg_tp tp = {lists[l][i].topic, lists[l][i].partitions[j]};
				int32_t e = lists[l][i].epochs ? lists[l][i].epochs[j] : m->epoch;
				cg_tp_key(&tp, k);
				ch_map_entry *x = ch_map_find(&m->aepochs, k, sizeof k);
				if (x)
					x->value = (void *)(intptr_t)e;
				else
					ch_map_put(&m->aepochs, k, sizeof k, (void *)(intptr_t)e);
			}
	ch_coord_cg_epochs_sync(m, m->epoch);
}

static void
replace_str(char **dst, ch_str s)
{
	free(*dst);
	*dst = ch_coord_cg_dup_str(s);
}

static void
replay_member(cg_group *g, cg_member *m, const ch_coord_cgrec *rec)
{
	const ch_coord_cgrec_member *v = &rec->m;
	if (m->instance_id && ch_map_get(&g->statics, m->instance_id, strlen(m->instance_id)) == m)
		ch_map_remove(&g->statics, m->instance_id, strlen(m->instance_id));
	replace_str(&m->instance_id, v->instance_id);
	if (m->instance_id) {
		ch_map_entry *e = ch_map_find(&g->statics, m->instance_id, strlen(m->instance_id));
		if (e)
			e->value = m;
		else
			ch_map_put(&g->statics, m->instance_id, strlen(m->instance_id), m);
	}
	replace_str(&m->rack, v->rack_id);
	replace_str(&m->client_id, v->client_id);
	replace_str(&m->client_host, v->client_host);
	replace_str(&m->server_assignor, v->server_assignor);
	replace_str(&m->regex, v->regex);
	m->rebalance_timeout_ms = v->rebalance_timeout_ms;
	for (int32_t i = 0; i < m->ntopics; i++)
		free(m->topics[i]);
	free(m->topics);
	m->topics = ch_xmalloc((size_t)(v->ntopics ? v->ntopics : 1) * sizeof *m->topics);
	m->ntopics = 0;
	for (int32_t i = 0; i < v->ntopics; i++)
		m->topics[m->ntopics++] = ch_coord_cg_dup_str(rec->topic_names[i]);
	/* Stored sorted by cohortd; Kafka keeps them in a set, any order. */
	for (int32_t i = 1; i < m->ntopics; i++)
		for (int32_t k = i; k > 0 && strcmp(m->topics[k - 1], m->topics[k]) > 0; k--) {
			char *t = m->topics[k];
			m->topics[k] = m->topics[k - 1];
			m->topics[k - 1] = t;
		}
	ch_coord_cg_classic_free(m->classic);
	m->classic = NULL;
	if (v->classic) {
		cg_classic *c = ch_xcalloc(1, sizeof *c);
		c->session_timeout_ms = v->classic_session_timeout_ms;
		c->nprotocols = v->nprotocols;
		c->protocols = ch_xcalloc((size_t)(v->nprotocols ? v->nprotocols : 1),
					  sizeof *c->protocols);
		for (int32_t i = 0; i < v->nprotocols; i++) {
			const ch_coord_cgrec_protocol *p = &v->protocols[i];
			size_t n = (size_t)CH_MAX(p->metadata.len, 0);
			c->protocols[i].name = ch_coord_cg_dup_str(p->name);
			c->protocols[i].metadata = ch_xmalloc(n ? n : 1);
			if (n)
				memcpy(c->protocols[i].metadata, p->metadata.p, n);
			c->protocols[i].len = n;
		}
		m->classic = c;
	}
}

static void
replay(ch_coord_cg *cg, const ch_coord_cgrec *rec)
{
	cg_group *g = ch_coord_cg_group_find(cg, rec->group);
	if (!g && (rec->tombstone || rec->type == CGREC_PARTITION_META))
		return;
	if (!g) {
		g = ch_coord_cg_group_create(cg, rec->group);
		g->meta_unknown = true;
	}
	cg_member *m = NULL;
	if (rec->type == CGREC_MEMBER || rec->type == CGREC_TARGET_MEMBER ||
	    rec->type == CGREC_CURRENT) {
		m = ch_coord_cg_member_find(g, rec->member);
		if (!m && rec->tombstone)
			return;
		if (!m) {
			m = ch_coord_cg_member_add(g, rec->member);
			m->epoch = 0;
		}
	}
	switch (rec->type) {
	case CGREC_GROUP:
		if (rec->tombstone) { /* the group's members went before it */
			ch_map_remove(&cg->groups, g->id, strlen(g->id));
			ch_coord_cg_group_free(cg, g);
			return;
		}
		g->epoch = rec->epoch;
		g->meta_hash = rec->hash_or_ts;
		g->meta_unknown = true;
		break;
	case CGREC_MEMBER:
		if (rec->tombstone)
			ch_coord_cg_member_remove(g, m);
		else
			replay_member(g, m, rec);
		break;
	case CGREC_TARGET_MEMBER:
		if (rec->tombstone)
			ch_coord_cg_set_free(&m->target);
		else
			set_from_topics(&m->target, rec->parts, rec->nparts);
		break;
	case CGREC_TARGET_META:
		if (!rec->tombstone) {
			g->assignment_epoch = rec->epoch;
			g->assignment_ts = rec->hash_or_ts;
		}
		break;
	case CGREC_CURRENT: /* the owners are rebuilt at the end of the load */
		if (rec->tombstone) {
			m->epoch = m->previous_epoch = LEAVE_EPOCH;
			m->state = CH_COORD_CG_MEMBER_STABLE;
			ch_coord_cg_set_free(&m->assigned);
			ch_coord_cg_set_free(&m->revoking);
		} else {
			m->epoch = rec->epoch;
			m->previous_epoch = rec->previous_epoch;
			m->state = rec->state >= 0 && rec->state <= 2
					   ? (ch_coord_cg_member_state)rec->state
					   : CH_COORD_CG_MEMBER_STABLE;
			set_from_topics(&m->assigned, rec->parts, rec->nparts);
			set_from_topics(&m->revoking, rec->revoking, rec->nrevoking);
		}
		replay_epochs(m, rec);
		break;
	case CGREC_REGEX:
		ch_coord_cg_regex_replay(g, rec->member, rec->tombstone ? NULL : rec->topic_names,
					 rec->tombstone ? 0 : rec->nparts, rec->hash_or_ts);
		break;
	default: /* partition metadata: nothing to replay */
		break;
	}
}

int
ch_coord_cg_load_record(ch_coord_cg *cg, const uint8_t *key, size_t klen, const uint8_t *val,
			size_t vlen, bool tombstone)
{
	if (!ch_coord_cgrec_is_consumer_group_key(key, klen))
		return 1;
	ch_arena ar;
	ch_arena_init(&ar);
	ch_coord_cgrec rec;
	int rc = ch_coord_cgrec_decode(key, klen, val, vlen, tombstone, &ar, &rec);
	if (rc == 0 && rec.group.len > 0) {
		char *gid = ch_coord_cg_dup_str(rec.group);
		cg_store *st = store_get(cg, gid, true);
		ch_buf k = {.data = (uint8_t *)key, .len = klen};
		if (rec.tombstone) {
			written_remove(st, &k);
		} else {
			char *member = rec.member.len >= 0 ? ch_coord_cg_dup_str(rec.member) : NULL;
			cg_written *w = written_get(st, &k, rec.type, member, true);
			ch_buf_reset(&w->value);
			ch_buf_append(&w->value, val, vlen);
			w->unknown = false;
			free(member);
		}
		replay(cg, &rec);
		if (st->recs.n == 0 && !ch_coord_cg_group_find(cg, rec.group))
			store_drop(cg, st);
		free(gid);
	} else {
		rc = -1;
		cg->load_skipped++;
	}
	ch_arena_reset(&ar);
	return rc;
}

size_t
ch_coord_cg_load_skipped(const ch_coord_cg *cg)
{
	return cg->load_skipped;
}

/* Like ch_coord_cg_owners_put, but a partition two members claim (a log cohortd did
 * not write) goes to the later one instead of breaking the map. */
static void
owners_rebuild_put(cg_group *g, cg_member *m, const cg_set *s)
{
	char k[CG_TP_KEY_LEN];
	for (int32_t i = 0; i < s->n; i++) {
		cg_tp_key(&s->v[i], k);
		ch_map_entry *e = ch_map_find(&g->owners, k, sizeof k);
		if (e)
			e->value = m;
		else
			ch_map_put(&g->owners, k, sizeof k, m);
	}
}

void
ch_coord_cg_load_end(ch_coord_cg *cg, int64_t now, int32_t partition, bool ok)
{
	cg->now = now;
	ch_map_foreach_safe(&cg->groups, e, tmp)
	{
		cg_group *g = e->value;
		if (ch_group_partition(g->id, strlen(g->id), cg->cfg.offsets_partitions) !=
		    partition)
			continue;
		if (!ok) {
			ch_map_remove(&cg->groups, g->id, strlen(g->id));
			ch_coord_cg_group_free(cg, g);
			continue;
		}
		/* Kafka's onLoaded: every member's session runs from now; a member
		 * still revoking gets its rebalance timeout again. The owners
		 * are rebuilt from the members' final holdings. */
		ch_map_free(&g->owners);
		ch_map_init(&g->owners);
		ch_map_foreach (&g->members, me) {
			cg_member *m = me->value;
			owners_rebuild_put(g, m, &m->assigned);
			owners_rebuild_put(g, m, &m->revoking);
			ch_coord_cg_timer_set(cg, &m->session,
					      now + (m->classic ? m->classic->session_timeout_ms
								: cg->cfg.session_timeout_ms));
			if (m->state == CH_COORD_CG_MEMBER_UNREVOKED_PARTITIONS && !m->classic &&
			    m->rebalance_timeout_ms >= 0) {
				m->rebalance_epoch = m->epoch;
				ch_coord_cg_timer_set(cg, &m->rebalance,
						      now + m->rebalance_timeout_ms);
			}
		}
		ch_coord_cg_regex_loaded(g);
		g->meta_stale = true;
		g->store_scan = true; /* the first flush looks for stale keys once */
	}
	if (!ok)
		ch_map_foreach_safe(&cg->stores, e, tmp)
		{
			cg_store *st = e->value;
			if (st->partition == partition)
				store_drop(cg, st);
		}
}
