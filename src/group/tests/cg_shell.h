/*
 * cg_shell.h: a fake shell for the consumer-protocol core (ch_coord_cg.h),
 * shared by its unit tests and its simulator: topics in memory, member ids
 * from a seeded generator, the last response copied out. With a store
 * (cg_shell_store_on): __consumer_offsets as a compacted log in memory
 * (the last record of each key, in the order they were last written);
 * appends stay pending until completed, and a restart replays the log
 * into a new core (what a kill -9 leaves: pending appends are lost).
 */
#ifndef CG_SHELL_H
#define CG_SHELL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"
#include "group/ch_coord_cg.h"
#include "proto/generated/ch_errors.h"

#define CG_SHELL_TOPICS 8

typedef struct cg_shell_topic {
	char name[16];
	ch_uuid id;
	int32_t partitions;
} cg_shell_topic;

typedef struct cg_shell_rec {
	uint8_t *key, *val;
	size_t klen, vlen;
	bool tombstone;
	int32_t partition;
} cg_shell_rec;

typedef struct cg_shell_append {
	uint64_t id;
	cg_shell_rec *recs;
	size_t n;
} cg_shell_append;

/* The last response, copied. */
typedef struct cg_answer {
	int16_t err;
	char msg[512];
	char member_id[64];
	bool has_member_id;
	int32_t epoch;
	int32_t interval;
	bool has_assignment;
	ch_coord_cg_tp *tps;
	int32_t ntps;
} cg_answer;

typedef struct cg_shell {
	cg_shell_topic topics[CG_SHELL_TOPICS];
	int ntopics;
	int topic_serial;   /* topics ever added: the next one's id */
	int scans;          /* foreach_topic calls: regex resolutions */
	char denied[4][16]; /* topics the members may not DESCRIBE */
	int ndenied;
	char classic[8][32]; /* names of classic groups */
	int nclassic;
	char classic_known[8][32]; /* classic groups without members (and classic[]) */
	int nclassic_known;
	uint64_t rng;
	cg_answer a;
	int answers;
	/* Answers with a token (the classic APIs' tests): handed here. */
	void (*other)(void *token, const void *resp);
	ch_coord_cg *cg;
	ch_coord_cg_config cfg;
	ch_coord_cg_ops ops;
	/* the store */
	bool store;
	bool hold; /* appends wait for cg_shell_complete (else done after each call) */
	cg_shell_rec *log;
	size_t nlog, caplog;
	size_t written; /* records appended in all */
	cg_shell_append *pending;
	size_t npending;
	int64_t now;
} cg_shell;

static inline uint64_t
cg_shell_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int
cg_shell_tp_cmp(const void *a, const void *b)
{
	return ch_coord_cg_tp_cmp(a, b);
}

static void
cg_shell_respond(void *ud, void *token, const void *resp)
{
	cg_shell *sh = ud;
	if (token && sh->other) {
		sh->other(token, resp);
		return;
	}
	const ch_ConsumerGroupHeartbeatResponse *r = resp;
	free(sh->a.tps);
	memset(&sh->a, 0, sizeof sh->a);
	sh->answers++;
	sh->a.err = r->ErrorCode;
	if (r->ErrorMessage.len >= 0)
		snprintf(sh->a.msg, sizeof sh->a.msg, "%.*s", (int)r->ErrorMessage.len,
			 r->ErrorMessage.p);
	if (r->MemberId.len >= 0) {
		sh->a.has_member_id = true;
		snprintf(sh->a.member_id, sizeof sh->a.member_id, "%.*s", (int)r->MemberId.len,
			 r->MemberId.p);
	}
	sh->a.epoch = r->MemberEpoch;
	sh->a.interval = r->HeartbeatIntervalMs;
	if (r->Assignment) {
		sh->a.has_assignment = true;
		int32_t n = 0;
		for (int32_t i = 0; i < r->Assignment->TopicPartitions_n; i++)
			n += r->Assignment->TopicPartitions[i].Partitions_n;
		sh->a.tps = calloc((size_t)(n ? n : 1), sizeof *sh->a.tps);
		for (int32_t i = 0; i < r->Assignment->TopicPartitions_n; i++) {
			const ch_ConsumerGroupHeartbeatResponse_TopicPartitions *t =
				&r->Assignment->TopicPartitions[i];
			for (int32_t k = 0; k < t->Partitions_n; k++)
				sh->a.tps[sh->a.ntps++] =
					(ch_coord_cg_tp){t->TopicId, t->Partitions[k]};
		}
		qsort(sh->a.tps, (size_t)sh->a.ntps, sizeof *sh->a.tps, cg_shell_tp_cmp);
	}
}

static bool
cg_shell_topic_cb(void *ud, ch_str name, ch_coord_cg_topic *out)
{
	cg_shell *sh = ud;
	for (int i = 0; i < sh->ntopics; i++)
		if (ch_str_eq_c(name, sh->topics[i].name)) {
			out->id = sh->topics[i].id;
			out->partitions = sh->topics[i].partitions;
			return true;
		}
	return false;
}

static void
cg_shell_foreach_topic(void *ud, void (*fn)(void *arg, const char *name, size_t len), void *arg)
{
	cg_shell *sh = ud;
	sh->scans++;
	for (int i = 0; i < sh->ntopics; i++)
		fn(arg, sh->topics[i].name, strlen(sh->topics[i].name));
}

static bool
cg_shell_may_describe(void *ud, void *token, const char *name, size_t len)
{
	(void)token;
	cg_shell *sh = ud;
	for (int i = 0; i < sh->ndenied; i++)
		if (strlen(sh->denied[i]) == len && memcmp(sh->denied[i], name, len) == 0)
			return false;
	return true;
}

static bool
cg_shell_classic(void *ud, ch_str id)
{
	cg_shell *sh = ud;
	for (int i = 0; i < sh->nclassic; i++)
		if (ch_str_eq_c(id, sh->classic[i]))
			return true;
	return false;
}

static bool
cg_shell_classic_known(void *ud, ch_str id)
{
	cg_shell *sh = ud;
	for (int i = 0; i < sh->nclassic_known; i++)
		if (ch_str_eq_c(id, sh->classic_known[i]))
			return true;
	return cg_shell_classic(ud, id);
}

static void
cg_shell_uuid(void *ud, ch_uuid *out)
{
	cg_shell *sh = ud;
	for (int i = 0; i < 16; i += 8) {
		uint64_t r = cg_shell_rand(&sh->rng);
		memcpy(out->b + i, &r, 8);
	}
	out->b[0] &= 0x7f; /* never a base64 starting with '-' (ch_uuid.h) */
}

static inline void
cg_shell_add_topic(cg_shell *sh, const char *name, int32_t partitions)
{
	cg_shell_topic *t = &sh->topics[sh->ntopics++];
	snprintf(t->name, sizeof t->name, "%s", name);
	memset(&t->id, 0, sizeof t->id);
	t->id.b[0] = (uint8_t)++sh->topic_serial; /* a topic made again gets a new id */
	t->id.b[15] = 0x5a;
	t->partitions = partitions;
}

/* Deletes topic `name` (the others keep their order); false if absent. */
static inline bool
cg_shell_del_topic(cg_shell *sh, const char *name)
{
	for (int i = 0; i < sh->ntopics; i++)
		if (strcmp(sh->topics[i].name, name) == 0) {
			memmove(&sh->topics[i], &sh->topics[i + 1],
				(size_t)(sh->ntopics - i - 1) * sizeof *sh->topics);
			sh->ntopics--;
			return true;
		}
	return false;
}

static uint8_t *
cg_shell_memdup(const void *p, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);
	if (n)
		memcpy(c, p, n);
	return c;
}

static void
cg_shell_append_cb(void *ud, int32_t partition, const ch_coord_record *recs, size_t n, uint64_t id)
{
	cg_shell *sh = ud;
	sh->pending = realloc(sh->pending, (sh->npending + 1) * sizeof *sh->pending);
	cg_shell_append *a = &sh->pending[sh->npending++];
	a->id = id;
	a->n = n;
	a->recs = calloc(n ? n : 1, sizeof *a->recs);
	for (size_t i = 0; i < n; i++)
		a->recs[i] = (cg_shell_rec){
			cg_shell_memdup(recs[i].key.data, recs[i].key.len),
			recs[i].tombstone ? NULL
					  : cg_shell_memdup(recs[i].value.data, recs[i].value.len),
			recs[i].key.len,
			recs[i].tombstone ? 0 : recs[i].value.len,
			recs[i].tombstone,
			partition,
		};
	sh->written += n;
}

static void
cg_shell_rec_free(cg_shell_rec *r)
{
	free(r->key);
	free(r->val);
}

/* r enters the compacted log (the key's older record goes). */
static void
cg_shell_log_put(cg_shell *sh, cg_shell_rec r)
{
	for (size_t i = 0; i < sh->nlog; i++)
		if (sh->log[i].klen == r.klen && memcmp(sh->log[i].key, r.key, r.klen) == 0) {
			cg_shell_rec_free(&sh->log[i]);
			memmove(&sh->log[i], &sh->log[i + 1], (sh->nlog - i - 1) * sizeof *sh->log);
			sh->nlog--;
			break;
		}
	if (sh->nlog == sh->caplog) {
		sh->caplog = sh->caplog ? sh->caplog * 2 : 64;
		sh->log = realloc(sh->log, sh->caplog * sizeof *sh->log);
	}
	sh->log[sh->nlog++] = r;
}

/* Every pending append is durable (error 0) or failed, oldest first. */
static inline void
cg_shell_complete(cg_shell *sh, int16_t error)
{
	while (sh->npending) {
		cg_shell_append a = sh->pending[0];
		memmove(&sh->pending[0], &sh->pending[1], (sh->npending - 1) * sizeof *sh->pending);
		sh->npending--;
		for (size_t i = 0; i < a.n; i++) {
			if (error)
				cg_shell_rec_free(&a.recs[i]);
			else
				cg_shell_log_put(sh, a.recs[i]);
		}
		free(a.recs);
		ch_coord_cg_append_done(sh->cg, sh->now, a.id, error);
	}
}

static void
cg_shell_drop_pending(cg_shell *sh)
{
	for (size_t k = 0; k < sh->npending; k++) {
		for (size_t i = 0; i < sh->pending[k].n; i++)
			cg_shell_rec_free(&sh->pending[k].recs[i]);
		free(sh->pending[k].recs);
	}
	sh->npending = 0;
}

static inline void
cg_shell_init(cg_shell *sh, const ch_coord_cg_config *cfg, uint64_t seed)
{
	memset(sh, 0, sizeof *sh);
	sh->rng = seed * 0x9e3779b97f4a7c15ull + 1;
	sh->cfg = *cfg;
	sh->ops = (ch_coord_cg_ops){
		.ud = sh,
		.respond = cg_shell_respond,
		.topic = cg_shell_topic_cb,
		.classic_group_exists = cg_shell_classic,
		.classic_group_known = cg_shell_classic_known,
		.random_uuid = cg_shell_uuid,
		.foreach_topic = cg_shell_foreach_topic,
		.may_describe = cg_shell_may_describe,
	};
	sh->cg = ch_coord_cg_new(cfg, &sh->ops);
}

/* From now on the core writes its records to the shell's log. */
static inline void
cg_shell_store_on(cg_shell *sh)
{
	ch_coord_cg_free(sh->cg);
	sh->store = true;
	sh->ops.append = cg_shell_append_cb;
	sh->cg = ch_coord_cg_new(&sh->cfg, &sh->ops);
}

/* kill -9 and start again: pending appends are lost (their answers were
 * never sent); a new core replays the log. Returns the records replayed. */
static inline size_t
cg_shell_restart(cg_shell *sh, int64_t now)
{
	cg_shell_drop_pending(sh);
	ch_coord_cg_free(sh->cg);
	sh->cg = ch_coord_cg_new(&sh->cfg, &sh->ops);
	for (size_t i = 0; i < sh->nlog; i++) {
		const cg_shell_rec *r = &sh->log[i];
		if (ch_coord_cg_load_record(sh->cg, r->key, r->klen, r->val, r->vlen,
					    r->tombstone) != 0) {
			fprintf(stderr, "record %zu of the log does not replay\n", i);
			abort();
		}
	}
	for (int32_t p = 0; p < sh->cfg.offsets_partitions; p++)
		ch_coord_cg_load_end(sh->cg, now, p, true);
	return sh->nlog;
}

static inline void
cg_shell_free(cg_shell *sh)
{
	ch_coord_cg_free(sh->cg);
	cg_shell_drop_pending(sh);
	free(sh->pending);
	for (size_t i = 0; i < sh->nlog; i++)
		cg_shell_rec_free(&sh->log[i]);
	free(sh->log);
	free(sh->a.tps);
}

/* One heartbeat in, its answer in sh->a. */
static inline void
cg_shell_heartbeat(cg_shell *sh, int64_t now, int16_t version,
		   const ch_ConsumerGroupHeartbeatRequest *rq)
{
	ch_coord_req req = {.now = now,
			    .version = version,
			    .body = rq,
			    .client_id = CH_STR_LIT("c"),
			    .client_host = "/127.0.0.1"};
	int before = sh->answers;
	sh->now = now;
	ch_coord_cg_heartbeat(sh->cg, &req);
	if (sh->store && !sh->hold)
		cg_shell_complete(sh, 0);
	if (!sh->hold && sh->answers != before + 1) {
		fprintf(stderr, "heartbeat answered %d times\n", sh->answers - before);
		abort();
	}
}

/* Everything the core shows of a group, as text (to compare a group before
 * and after a restart). */
typedef struct cg_shell_digest {
	char *p;
	size_t n, cap;
} cg_shell_digest;

static void cg_shell_digest_add(cg_shell_digest *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void
cg_shell_digest_add(cg_shell_digest *d, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (k < 0)
		return;
	size_t len = (size_t)k < sizeof tmp ? (size_t)k : sizeof tmp - 1;
	if (d->n + len + 1 > d->cap) {
		d->cap = (d->n + len + 1) * 2;
		d->p = realloc(d->p, d->cap);
	}
	memcpy(d->p + d->n, tmp, len + 1);
	d->n += len;
}

static void
cg_shell_digest_tps(cg_shell_digest *d, const char *what, const ch_coord_cg_tp *v, int32_t n)
{
	cg_shell_digest_add(d, " %s[", what);
	for (int32_t i = 0; i < n; i++)
		cg_shell_digest_add(d, "%s%02x:%d", i ? "," : "", v[i].topic.b[0], v[i].partition);
	cg_shell_digest_add(d, "]");
}

static void
cg_shell_digest_member(void *ud, const ch_coord_cg_member_view *m)
{
	cg_shell_digest *d = ud;
	cg_shell_digest_add(d, "\n  %s inst=%s rack=%s client=%s/%s epoch=%d prev=%d %s topics=",
			    m->member_id, m->instance_id ? m->instance_id : "-",
			    m->rack ? m->rack : "-", m->client_id, m->client_host, m->epoch,
			    m->previous_epoch, ch_coord_cg_member_state_name(m->state));
	for (int32_t i = 0; i < m->ntopics; i++)
		cg_shell_digest_add(d, "%s%s", i ? "," : "", m->topics[i]);
	cg_shell_digest_add(d, " regex=%s", m->regex ? m->regex : "-");
	cg_shell_digest_tps(d, "assigned", m->assigned, m->nassigned);
	cg_shell_digest_tps(d, "revoking", m->revoking, m->nrevoking);
	cg_shell_digest_tps(d, "target", m->target, m->ntarget);
}

/* The digest of `group` (free d->p); "none" if there is no such group. */
static inline void
cg_shell_digest_group(const cg_shell *sh, const char *group, cg_shell_digest *d)
{
	memset(d, 0, sizeof *d);
	ch_coord_cg_group_view gv;
	if (!ch_coord_cg_group_get(sh->cg, ch_str_c(group), &gv)) {
		cg_shell_digest_add(d, "none");
		return;
	}
	cg_shell_digest_add(d, "%s %s epoch=%d assignment=%d members=%d assignor=%s", gv.group_id,
			    ch_coord_cg_state_name(gv.state), gv.epoch, gv.assignment_epoch,
			    gv.members, gv.assignor);
	ch_coord_cg_foreach_member(sh->cg, ch_str_c(group), cg_shell_digest_member, d);
}

/* A restart replays `group` into what it was (both digests printed if
 * not). */
static inline bool
cg_shell_restart_same(cg_shell *sh, int64_t now, const char *group)
{
	cg_shell_digest before, after;
	cg_shell_digest_group(sh, group, &before);
	cg_shell_restart(sh, now);
	cg_shell_digest_group(sh, group, &after);
	bool same = strcmp(before.p, after.p) == 0;
	if (!same)
		fprintf(stderr, "replayed\n%s\nbut had\n%s\n", after.p, before.p);
	free(before.p);
	free(after.p);
	return same;
}

/* s (null: "") into dst, cut at cap. */
static inline void
cg_shell_copy_str(char *dst, size_t cap, ch_str s)
{
	snprintf(dst, cap, "%.*s", (int)(s.len > 0 ? s.len : 0), s.p ? s.p : "");
}

/* The core's invariants hold (the broken one printed if not). */
static inline bool
cg_shell_ok(const cg_shell *sh)
{
	const char *bad = ch_coord_cg_check(sh->cg);
	if (bad)
		fprintf(stderr, "invariant: %s\n", bad);
	return bad == NULL;
}

/* Timers up to now (appends completed unless held). */
static inline void
cg_shell_tick(cg_shell *sh, int64_t now)
{
	sh->now = now;
	ch_coord_cg_tick(sh->cg, now);
	if (sh->store && !sh->hold)
		cg_shell_complete(sh, 0);
}

/* ---- ConsumerGroupHeartbeat requests (the unit tests) ---- */

/* A request under construction. */
typedef struct hb {
	ch_ConsumerGroupHeartbeatRequest r;
	ch_str names[4];
	ch_ConsumerGroupHeartbeatRequest_TopicPartitions tps[4];
	int32_t parts[4][64];
} hb;

static inline hb *
hb_join(hb *h, const char *group, const char *member, const char *topic)
{
	memset(h, 0, sizeof *h);
	ch_ConsumerGroupHeartbeatRequest_init(&h->r);
	h->r.GroupId = ch_str_c(group);
	h->r.MemberId = ch_str_c(member);
	h->r.MemberEpoch = 0;
	h->r.RebalanceTimeoutMs = 10000;
	h->names[0] = ch_str_c(topic);
	h->r.SubscribedTopicNames = h->names;
	h->r.SubscribedTopicNames_n = topic ? 1 : 0;
	h->r.TopicPartitions = h->tps;
	h->r.TopicPartitions_n = 0;
	return h;
}

/* A heartbeat at `epoch` reporting the partitions of topic 1 in `owned`
 * (-1 ends the list). */
static inline hb *
hb_beat(hb *h, const char *group, const char *member, int32_t epoch, const cg_shell *sh,
	const int32_t *owned)
{
	memset(h, 0, sizeof *h);
	ch_ConsumerGroupHeartbeatRequest_init(&h->r);
	h->r.GroupId = ch_str_c(group);
	h->r.MemberId = ch_str_c(member);
	h->r.MemberEpoch = epoch;
	h->r.RebalanceTimeoutMs = -1;
	h->r.SubscribedTopicNames_n = -1;
	h->r.TopicPartitions = h->tps;
	h->r.TopicPartitions_n = 1;
	h->tps[0].TopicId = sh->topics[0].id;
	h->tps[0].Partitions = h->parts[0];
	int32_t n = 0;
	while (owned && owned[n] >= 0) {
		h->parts[0][n] = owned[n];
		n++;
	}
	h->tps[0].Partitions_n = n;
	return h;
}

#endif
