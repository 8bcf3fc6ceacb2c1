/*
 * sim: a deterministic simulator of consumers against the coordinator core.
 *
 * N simulated consumers follow the real clients' loop (JoinGroup with
 * MEMBER_ID_REQUIRED, the leader computing a round-robin assignment,
 * SyncGroup, heartbeats every session/3, rejoin on REBALANCE_IN_PROGRESS,
 * commits in the revoke step and periodically), in virtual time, with
 * random crashes, slow joins, delayed responses, static restarts (the old
 * instance lingering as a zombie), graceful leaves, stale-generation
 * probes and slow appends. After every step it checks:
 *   - ch_coord_check() is NULL;
 *   - at most one consumer acts as leader (sends assignments) per generation;
 *   - every successful SyncGroup returns what the leader assigned to that
 *     member (or its static instance) for that generation, or an empty one;
 *   - within a generation no partition is owned by two members;
 *   - the group's generation never decreases, nor does any consumer's;
 *   - no request gets two responses; at the end every request has one;
 *   - commits from fenced (zombie) or stale-generation members are never
 *     accepted;
 *   - after the last disruption the group is Stable with exactly the live
 *     consumers, all at the group's generation, within a bounded time;
 *   - at the moment of every response: a successful JoinGroup or SyncGroup
 *     (or Heartbeat) is for the group's current generation (no response
 *     carries an old generation's assignment);
 *   - every acknowledged commit is readable through OffsetFetch (random
 *     versions, checked at random times, after every restart and at the
 *     end) until a later acknowledged commit overwrites it;
 *   - no SyncGroup success is lost in a coordinator restart (its
 *     generation must survive the replay).
 *
 * Group sizes run from 1 to 500 consumers (most seeds small, a few large).
 * Coordinator restarts: at random points the coordinator is dropped and a
 * fresh one rebuilt from every append that completed (h_restart); requests
 * in flight get no answer and the clients treat them as a broken connection
 * (they retry / rejoin, as librdkafka does); appends in flight are lost.
 * Duplicated and late requests: a consumer's last JoinGroup, SyncGroup
 * (with the leader's assignments), Heartbeat or OffsetCommit re-sent after
 * it moved on, and requests carrying an older generation.
 *
 *   group_sim [--seeds N] [--extra S1,S2,...] [--jobs J] [--seed S] [-v]
 * (--seeds runs 1..N; --extra adds regression seeds; --jobs splits them over
 * J worker processes; --seed runs one, verbosely)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/ch_log.h"
#include "harness.h"

#define G "simgroup"
#define TOPIC "t"
#define MAXC 640  /* consumers per seed (up to 500 at the start) */
#define PMAX 1024 /* partitions */
#define PW (PMAX / 64)
#define MAXGEN 4096
#define SESSION 10000
#define REBALANCE 20000
#define HB_EVERY (SESSION / 3)
#define BOUND 90000 /* liveness: Stable within this after the last disruption */
#define INF INT64_MAX

/* ---- rng --------------------------------------------------------------------- */

static uint64_t rng_s;
static uint64_t
rnd(void)
{
	uint64_t z = (rng_s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static int64_t
rr(int64_t lo, int64_t hi) /* [lo, hi] */
{
	return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}
static bool
chance(int pct)
{
	return (int)(rnd() % 100) < pct;
}

/* ---- partition sets ------------------------------------------------------------ */

typedef struct pset {
	uint64_t w[PW];
} pset;
static void
ps_add(pset *s, int p)
{
	s->w[p / 64] |= UINT64_C(1) << (p % 64);
}
static bool
ps_has(const pset *s, int p)
{
	return s->w[p / 64] >> (p % 64) & 1;
}
static bool
ps_eq(const pset *a, const pset *b)
{
	return !memcmp(a, b, sizeof(*a));
}
static bool
ps_meets(const pset *a, const pset *b)
{
	for (int i = 0; i < PW; i++)
		if (a->w[i] & b->w[i])
			return true;
	return false;
}
static void
ps_or(pset *a, const pset *b)
{
	for (int i = 0; i < PW; i++)
		a->w[i] |= b->w[i];
}

/* ---- model ------------------------------------------------------------------- */

enum {
	C_OFF,
	C_JOIN,
	C_SYNC,
	C_STABLE
};

typedef struct slot {
	h_req *r;
	int64_t delay; /* network delay of the response */
	int kind;      /* what to do with it */
	bool broken;   /* its connection broke in a coordinator restart */
	int64_t broken_at;
} slot;

enum {
	K_JOIN = 1,
	K_SYNC,
	K_HB,
	K_COMMIT,
	K_LEAVE,
	K_PROBE
};

/* What the simulator knows of a request (h_req.user). */
typedef struct rinfo {
	int cons;
	bool probe;
	bool must_fail; /* commit: from a fenced or stale member */
	bool open;      /* commit: counted in S.pend until answered or lost */
	int n;
	int32_t part[16];
	int64_t off[16];
	struct rinfo *next;
} rinfo;

typedef struct cons {
	int idx;
	bool alive;        /* runs its loop */
	bool zombie;       /* an old static instance that was replaced */
	int64_t fenced_at; /* zombie: when the new instance joined */
	bool is_static;
	char inst[16];
	char member[H_STR];
	int32_t gen;
	int32_t max_gen_seen;
	int st;
	int jv, sv, hv, cv, lv;
	slot main; /* join / sync / leave */
	slot hb;
	slot commit;
	slot probe;
	int64_t join_at; /* a (re)join to send at this time */
	int64_t next_hb, next_commit;
	pset parts;
	int32_t parts_gen;
	int64_t commit_offset;
	/* the last JoinGroup / SyncGroup sent, for duplicates */
	char last_join_member[H_STR];
	int32_t last_sync_gen;
	char last_sync_member[H_STR];
	bool last_sync_leader;
} cons;

typedef struct gen_rec {
	int leader_cons; /* consumer index that sent assignments, -1 none */
	int n;
	char (*member)[H_STR];
	char (*inst)[16];
	pset *mask;
	/* ownership from successful SyncGroup responses */
	int nown;
	char (*owner)[H_STR];
	pset *owned;
	pset all_owned;
} gen_rec;

static struct {
	h_env *h;
	cons c[MAXC];
	int nc;
	int parts; /* partitions of TOPIC, <= PMAX */
	gen_rec *gens[MAXGEN];
	int32_t max_group_gen;
	int64_t last_disruption;
	int64_t quiet_from;
	int64_t stable_since; /* after the last disruption; -1 = not yet */
	int failures;
	bool verbose;
	/* counters */
	int n_join, n_sync, n_hb, n_commit_ok, n_commit_rej, n_crash, n_leave, n_static,
		n_zombie_fenced, n_probe, n_new, n_restart, n_dup, n_lost, n_fetch_checks;
	h_req **all;
	size_t nall, capall;
	rinfo *infos;
	/* offsets model: the last acknowledged commit of each partition */
	int64_t acked[PMAX]; /* -1: none */
	int pend[PMAX];      /* commits of the partition not yet answered */
	int64_t chaos_restart_pct;
	/* scheduling: each consumer's next action, recomputed when it acts or
	 * gets a response */
	int64_t next[MAXC];
	bool dirty[MAXC];
	bool all_dirty;
} S;

static void
fail(const char *fmt, const char *a, long long x)
{
	S.failures++;
	if (S.failures <= 5) {
		fprintf(stderr, "sim: t=%lld: ", (long long)S.h->now);
		fprintf(stderr, fmt, a ? a : "", x);
		fprintf(stderr, "\n");
	}
}

static gen_rec *
gen_get(int32_t g)
{
	if (g < 0 || g >= MAXGEN)
		return NULL;
	if (!S.gens[g]) {
		S.gens[g] = calloc(1, sizeof(gen_rec));
		S.gens[g]->leader_cons = -1;
	}
	return S.gens[g];
}

static void
gen_free(int32_t g)
{
	gen_rec *gr = S.gens[g];
	if (!gr)
		return;
	free(gr->member);
	free(gr->inst);
	free(gr->mask);
	free(gr->owner);
	free(gr->owned);
	free(gr);
	S.gens[g] = NULL;
}

static rinfo *
new_info(cons *c, bool probe)
{
	rinfo *i = calloc(1, sizeof(*i));
	i->cons = c->idx;
	i->probe = probe;
	i->next = S.infos;
	S.infos = i;
	return i;
}

static void
track(h_req *r)
{
	if (S.nall == S.capall) {
		S.capall = S.capall ? S.capall * 2 : 1024;
		S.all = realloc(S.all, S.capall * sizeof(*S.all));
	}
	S.all[S.nall++] = r;
}

static int64_t
net_delay(void)
{
	if (S.h->now < S.quiet_from && chance(3))
		return rr(500, 3000);
	return rr(0, 50);
}

static void
send(cons *c, slot *s, int kind, h_req *r)
{
	r->tag = c->idx + 1;
	s->broken = false;
	s->r = r;
	s->kind = kind;
	s->delay = net_delay();
	track(r);
}

/* ---- requests ------------------------------------------------------------------ */

static rinfo *cur_info; /* the commit being sent (its response may come at once) */

static void
send_join_as(cons *c, const char *member, slot *s, int kind)
{
	h_join_args a = {.v = H_V(c->jv),
			 .group = G,
			 .member = member,
			 .instance = c->is_static ? c->inst : NULL,
			 .session_ms = SESSION,
			 .rebalance_ms = REBALANCE};
	static const char *const topics[] = {TOPIC, NULL};
	h_blob sub = h_subscription(S.h, 0, topics);
	a.protos[0] = (h_proto){"roundrobin", sub.p, sub.len};
	a.nprotos = 1;
	char cid[16];
	snprintf(cid, sizeof(cid), "c%d", c->idx);
	a.client_id = cid;
	send(c, s, kind, h_join(S.h, &a));
}

static void
send_join(cons *c)
{
	c->st = C_JOIN;
	c->join_at = INF;
	/* a static restart: from now on the old instance is fenced */
	if (c->is_static && !c->zombie && !c->member[0])
		for (int i = 0; i < S.nc; i++) {
			cons *o = &S.c[i];
			if (o != c && o->is_static && !strcmp(o->inst, c->inst) && o->alive &&
			    !o->zombie) {
				o->zombie = true;
				o->fenced_at = S.h->now;
			}
		}
	snprintf(c->last_join_member, sizeof(c->last_join_member), "%s", c->member);
	send_join_as(c, c->member, &c->main, K_JOIN);
	S.n_join++;
}

static void
send_commit(cons *c, int32_t gen, bool probe)
{
	h_commit_args a = {.v = H_V(c->cv),
			   .group = G,
			   .member = c->member,
			   .gen = gen,
			   .instance = c->is_static ? c->inst : NULL};
	int n = 0;
	for (int p = 0; p < S.parts && n < 16; p++)
		if (ps_has(&c->parts, p))
			a.offsets[n++] = (h_offset){TOPIC, p, ++c->commit_offset};
	if (n == 0)
		a.offsets[n++] = (h_offset){TOPIC, 0, c->commit_offset};
	a.noffsets = n;
	ch_coord_group_info gi = ch_coord_group_get_info(S.h->c, G);
	rinfo *in = new_info(c, probe);
	in->must_fail = c->zombie || gen != gi.generation ||
			gi.state == CH_COORD_GROUP_COMPLETING_REBALANCE;
	in->n = n;
	for (int i = 0; i < n; i++) {
		in->part[i] = a.offsets[i].partition;
		in->off[i] = a.offsets[i].offset;
		S.pend[in->part[i]]++;
	}
	in->open = true;
	cur_info = in;
	h_req *r = h_commit(S.h, &a);
	cur_info = NULL;
	r->user = in;
	send(c, probe ? &c->probe : &c->commit, probe ? K_PROBE : K_COMMIT, r);
}

static void
send_hb(cons *c, int32_t gen, bool probe)
{
	h_req *r = h_heartbeat(S.h, &(h_hb_args){.v = H_V(c->hv),
						 .group = G,
						 .member = c->member,
						 .gen = gen,
						 .instance = c->is_static ? c->inst : NULL});
	send(c, probe ? &c->probe : &c->hb, probe ? K_PROBE : K_HB, r);
	if (!probe)
		S.n_hb++;
}

static void die(cons *c);

static void
rejoin(cons *c, bool reset_member, int64_t delay)
{
	if (c->zombie) { /* a replaced static instance: it only gets fenced */
		die(c);
		return;
	}
	if (reset_member)
		c->member[0] = 0;
	c->st = C_OFF;
	c->join_at = S.h->now + delay;
}

static void
die(cons *c)
{
	c->alive = false;
	c->st = C_OFF;
}

/* The SyncGroup of the leader of generation `gen` (from the generation's
 * record), as member `member`; for a first sync and for duplicates. */
static h_req *
leader_sync(cons *c, const char *member, int32_t gen)
{
	gen_rec *gr = gen_get(gen);
	h_sync_args sa = {.v = H_V(c->sv),
			  .group = G,
			  .member = member,
			  .gen = gen,
			  .instance = c->is_static ? c->inst : NULL,
			  .ptype = "consumer",
			  .pname = "roundrobin"};
	int n = gr ? gr->n : 0;
	h_assign *as = calloc((size_t)(n ? n : 1), sizeof(*as));
	int32_t *ps = malloc(sizeof(int32_t) * PMAX);
	for (int i = 0; i < n; i++) {
		int np = 0;
		for (int p = 0; p < S.parts; p++)
			if (ps_has(&gr->mask[i], p))
				ps[np++] = p;
		h_blob b = h_assignment(S.h, TOPIC, ps, np);
		as[i] = (h_assign){gr->member[i], b.p, b.len};
	}
	sa.assign_ext = as;
	sa.nassign = n;
	h_req *r = h_sync(S.h, &sa);
	free(as);
	free(ps);
	return r;
}

/* Leader: round-robin over the members of the join response. */
static void
lead(cons *c, const h_req *j)
{
	gen_rec *gr = gen_get(j->generation);
	int n = j->nrows;
	int *order = malloc(sizeof(int) * (size_t)(n ? n : 1));
	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = 1; i < n; i++) /* sort by member id */
		for (int k = i; k > 0 && strcmp(j->rows[order[k - 1]].member_id,
						j->rows[order[k]].member_id) > 0;
		     k--) {
			int t = order[k];
			order[k] = order[k - 1];
			order[k - 1] = t;
		}
	if (gr) {
		if (gr->leader_cons >= 0 && gr->leader_cons != c->idx)
			fail("two leaders in generation (%s) %lld", "", j->generation);
		if (gr->leader_cons < 0) {
			gr->leader_cons = c->idx;
			gr->n = n;
			gr->member = calloc((size_t)(n ? n : 1), sizeof(*gr->member));
			gr->inst = calloc((size_t)(n ? n : 1), sizeof(*gr->inst));
			gr->mask = calloc((size_t)(n ? n : 1), sizeof(*gr->mask));
			for (int i = 0; i < n; i++) {
				const h_row *w = &j->rows[order[i]];
				snprintf(gr->member[i], H_STR, "%s", w->member_id);
				snprintf(gr->inst[i], sizeof(gr->inst[i]), "%s",
					 w->instance_id.len > 0 ? (const char *)w->instance_id.p
								: "");
			}
			for (int p = 0; p < S.parts && n > 0; p++)
				ps_add(&gr->mask[p % n], p);
		}
	}
	free(order);
	if (S.verbose)
		printf("  t=%lld: %s leads generation %d (%d members)\n", (long long)S.h->now,
		       c->member, j->generation, n);
	c->last_sync_gen = j->generation;
	c->last_sync_leader = true;
	snprintf(c->last_sync_member, sizeof(c->last_sync_member), "%s", c->member);
	send(c, &c->main, K_SYNC, leader_sync(c, c->member, j->generation));
	S.n_sync++;
}

static h_req *
follower_sync(cons *c, const char *member, int32_t gen)
{
	return h_sync(S.h, &(h_sync_args){.v = H_V(c->sv),
					  .group = G,
					  .member = member,
					  .gen = gen,
					  .instance = c->is_static ? c->inst : NULL,
					  .ptype = "consumer",
					  .pname = "roundrobin"});
}

static void
follow(cons *c, const h_req *j)
{
	c->last_sync_gen = j->generation;
	c->last_sync_leader = false;
	snprintf(c->last_sync_member, sizeof(c->last_sync_member), "%s", c->member);
	send(c, &c->main, K_SYNC, follower_sync(c, c->member, j->generation));
	S.n_sync++;
}

/* ---- responses ------------------------------------------------------------- */

/* A successful SyncGroup (first or duplicate) must return what the leader
 * assigned to the member for that generation; `own`: it is the consumer's
 * (not a duplicate's), so it takes ownership. */
static void
check_sync_assignment(cons *c, const h_req *r, bool own)
{
	int32_t gen = r->req_generation;
	gen_rec *gr = gen_get(gen);
	if (!gr)
		return;
	static int32_t ps[PMAX];
	char topic[64];
	int np = h_decode_assignment(r->assignment.p, r->assignment.len, topic, sizeof(topic), ps,
				     PMAX);
	if (np < 0) {
		fail("undecodable assignment%s (len %lld)", "", r->assignment.len);
		return;
	}
	pset got = {{0}};
	for (int i = 0; i < np; i++)
		if (ps[i] >= 0 && ps[i] < PMAX)
			ps_add(&got, ps[i]);
	if (gr->leader_cons < 0) {
		fail("SyncGroup succeeded for a generation no leader assigned%s: %lld", "", gen);
		return;
	}
	const char *member = r->req_member;
	int k = -1;
	for (int i = 0; i < gr->n; i++)
		if (!strcmp(gr->member[i], member) ||
		    (c->is_static && !strcmp(gr->inst[i], c->inst)))
			k = i;
	static const pset none;
	const pset *want = k >= 0 ? &gr->mask[k] : &none;
	if (!ps_eq(&got, want))
		fail("member %s got an assignment other than the leader's for generation %lld",
		     member, gen);
	if (k < 0 && r->assignment.len != 0)
		fail("left-out member %s got a non-empty assignment (gen %lld)", member, gen);
	if (!own)
		return;
	/* ownership within the generation */
	const char *key = c->is_static ? c->inst : member;
	int me = -1;
	for (int i = 0; i < gr->nown; i++)
		if (!strcmp(gr->owner[i], key))
			me = i;
	if (me >= 0) {
		if (!ps_eq(&gr->owned[me], &got))
			fail("%s got two different assignments in generation %lld", key, gen);
	} else {
		if (ps_meets(&got, &gr->all_owned))
			fail("partition owned twice in generation (%s) %lld", key, gen);
		me = gr->nown++;
		gr->owner = realloc(gr->owner, sizeof(*gr->owner) * (size_t)gr->nown);
		gr->owned = realloc(gr->owned, sizeof(*gr->owned) * (size_t)gr->nown);
		snprintf(gr->owner[me], H_STR, "%s", key);
		gr->owned[me] = got;
		ps_or(&gr->all_owned, &got);
	}
	c->parts = got;
	c->parts_gen = gen;
}

/* Inside the coordinator's respond callback: the state the response was
 * given in. */
static void
on_respond(h_env *h, h_req *r)
{
	if (!r->user && cur_info && r->api == H_OFFSET_COMMIT)
		r->user = cur_info;
	if (r->tag > 0)
		S.dirty[r->tag - 1] = true;
	ch_coord_group_info gi = ch_coord_group_get_info(h->c, G);
	switch (r->api) {
	case H_JOIN:
		if (r->error == 0 && (!gi.exists || r->generation != gi.generation))
			fail("a JoinGroup response carries generation %lld, not the group's%s",
			     NULL, r->generation);
		/* (a static member's no-rebalance rejoin is answered when its
		 * store completes, which may be after another member started a
		 * rebalance: Kafka answers it with the current generation too) */
		break;
	case H_SYNC:
		if (r->error == 0 && (!gi.exists || r->req_generation != gi.generation))
			fail("a SyncGroup of generation %lld succeeded after the group moved on%s",
			     NULL, r->req_generation);
		break;
	case H_HEARTBEAT:
		if (r->error == 0 && (!gi.exists || r->req_generation != gi.generation))
			fail("a Heartbeat of generation %lld succeeded after the group moved on%s",
			     NULL, r->req_generation);
		break;
	case H_OFFSET_COMMIT: {
		rinfo *in = r->user;
		if (!in)
			break;
		for (int i = 0; i < r->nrows; i++) {
			if (r->rows[i].error != 0)
				continue;
			if (in->must_fail)
				fail("a commit by a fenced or stale member %s was accepted (gen "
				     "%lld)",
				     r->req_member, r->req_generation);
			for (int k = 0; k < in->n; k++)
				if (in->part[k] == r->rows[i].partition)
					S.acked[in->part[k]] = in->off[k];
		}
		if (in->open) {
			in->open = false;
			for (int k = 0; k < in->n; k++)
				S.pend[in->part[k]]--;
		}
		break;
	}
	default:
		break;
	}
}

static void
on_join(cons *c, const h_req *r)
{
	switch (r->error) {
	case 0:
		if (r->generation < c->max_gen_seen)
			fail("consumer %s saw its generation go back to %lld", c->member,
			     r->generation);
		if (r->generation > c->max_gen_seen)
			c->max_gen_seen = r->generation;
		strcpy(c->member, r->member_id);
		c->gen = r->generation;
		c->st = C_SYNC;
		c->next_hb = S.h->now + HB_EVERY;
		if (!strcmp(r->leader, c->member) && !r->skip_assignment)
			lead(c, r);
		else
			follow(c, r);
		break;
	case CH_KERR_MEMBER_ID_REQUIRED:
		strcpy(c->member, r->member_id);
		rejoin(c, false, 0);
		break;
	case CH_KERR_UNKNOWN_MEMBER_ID:
		rejoin(c, true, rr(0, 100));
		break;
	case CH_KERR_FENCED_INSTANCE_ID:
		if (!c->zombie)
			fail("a live static member %s was fenced on JoinGroup%lld", c->member, 0);
		die(c);
		break;
	default:
		rejoin(c, false, rr(50, 500));
		break;
	}
}

static void
on_sync(cons *c, const h_req *r)
{
	switch (r->error) {
	case 0:
		check_sync_assignment(c, r, true);
		c->st = C_STABLE;
		c->next_commit = S.h->now + rr(1000, 6000);
		break;
	case CH_KERR_UNKNOWN_MEMBER_ID:
		rejoin(c, true, rr(0, 100));
		break;
	case CH_KERR_FENCED_INSTANCE_ID:
		if (!c->zombie)
			fail("a live static member %s was fenced on SyncGroup%lld", c->member, 0);

		die(c);
		break;
	default: /* REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, ... */
		rejoin(c, false, rr(0, 100));
		break;
	}
}

static void
on_hb(cons *c, const h_req *r)
{
	if (r->req_generation != c->gen || c->st == C_OFF || c->st == C_JOIN)
		return; /* a stale response: the client ignores it */
	switch (r->error) {
	case 0:
		break;
	case CH_KERR_REBALANCE_IN_PROGRESS:
		if (c->st == C_STABLE) {
			/* eager: commit in the revoke callback, then rejoin */
			if (!c->commit.r)
				send_commit(c, c->gen, false);
			rejoin(c, false, chance(10) && S.h->now < S.quiet_from ? rr(0, 8000) : 0);
		}
		break;
	case CH_KERR_UNKNOWN_MEMBER_ID:
		rejoin(c, true, rr(0, 100));
		break;
	case CH_KERR_FENCED_INSTANCE_ID:
		if (!c->zombie)
			fail("a live static member %s was fenced on Heartbeat%lld", c->member, 0);
		S.n_zombie_fenced++;
		die(c);
		break;
	default:
		rejoin(c, false, rr(0, 100));
		break;
	}
}

static void
on_commit(cons *c, const h_req *r)
{
	bool ok = r->nrows > 0;
	for (int i = 0; i < r->nrows; i++)
		ok = ok && r->rows[i].error == 0;
	if (ok)
		S.n_commit_ok++;
	else
		S.n_commit_rej++;
	if (!ok && r->nrows > 0 && r->rows[0].error == CH_KERR_FENCED_INSTANCE_ID && !c->zombie)
		fail("a live static member %s was fenced on OffsetCommit%lld", c->member, 0);
}

/* The connection broke (coordinator restart) before the response: the
 * client, like librdkafka, rediscovers the coordinator and carries on. */
static void
on_lost(cons *c, int kind)
{
	S.n_lost++;
	switch (kind) {
	case K_JOIN:
	case K_SYNC: /* rejoin with the member id it has */
		if (c->st == C_JOIN || c->st == C_SYNC)
			rejoin(c, false, 0);
		break;
	default: /* heartbeats go on; a lost commit is simply not acknowledged */
		break;
	}
}

static void
deliver(cons *c, slot *s)
{
	h_req *r = s->r;
	int kind = s->kind;
	s->r = NULL;
	if (!c->alive)
		return;
	if (r->lost || s->broken) {
		on_lost(c, kind);
		return;
	}
	switch (kind) {
	case K_JOIN:
		on_join(c, r);
		break;
	case K_SYNC:
		on_sync(c, r);
		break;
	case K_HB:
		on_hb(c, r);
		break;
	case K_COMMIT:
		on_commit(c, r);
		break;
	case K_PROBE:
		if (r->api == H_OFFSET_COMMIT)
			on_commit(c, r);
		else if (r->api == H_SYNC && r->error == 0)
			check_sync_assignment(c, r, false);
		break;
	case K_LEAVE:
		die(c);
		break;
	}
}

static int64_t
slot_due(const slot *s)
{
	if (!s->r)
		return INF;
	if (s->broken)
		return s->broken_at + s->delay;
	if (!h_done(s->r))
		return INF;
	return s->r->resp_at + s->delay;
}

static int64_t
cons_next(const cons *c)
{
	int64_t t = INF;
	const slot *ss[] = {&c->main, &c->hb, &c->commit, &c->probe};
	for (int i = 0; i < 4; i++) {
		int64_t d = slot_due(ss[i]);
		if (d < t)
			t = d;
	}
	if (!c->alive)
		return t;
	if (c->st == C_OFF && !c->main.r && c->join_at < t)
		t = c->join_at;
	if ((c->st == C_STABLE || c->st == C_SYNC) && !c->hb.r && c->next_hb < t)
		t = c->next_hb;
	if (c->st == C_STABLE && !c->commit.r && c->next_commit < t)
		t = c->next_commit;
	return t;
}

static void
cons_step(cons *c)
{
	int64_t now = S.h->now;
	slot *ss[] = {&c->main, &c->hb, &c->commit, &c->probe};
	for (int i = 0; i < 4; i++)
		if (slot_due(ss[i]) <= now)
			deliver(c, ss[i]);
	if (!c->alive)
		return;
	if (c->st == C_OFF && !c->main.r && c->join_at <= now) {
		if (c->zombie) { /* replaced before it ever joined */
			die(c);
			return;
		}
		send_join(c);
	}
	if ((c->st == C_STABLE || c->st == C_SYNC) && !c->hb.r && c->next_hb <= now) {
		send_hb(c, c->gen, false);
		c->next_hb = now + HB_EVERY;
	}
	if (c->st == C_STABLE && !c->commit.r && c->next_commit <= now) {
		send_commit(c, c->gen, false);
		c->next_commit = now + rr(2000, 8000);
	}
}

/* ---- offsets ------------------------------------------------------------------- */

/* OffsetFetch (a random version) must return, for every partition with no
 * commit in flight, the last acknowledged offset (-1 if none). */
static void
check_offsets(const char *when)
{
	int v = (int)rr(1, 9);
	h_fetch_args fa = {.v = H_V(v), .ngroups = 1};
	fa.groups[0].group = G;
	bool all = v >= 2 && chance(50);
	int asked[64], nasked = 0;
	if (all) {
		fa.groups[0].ntopics = -1;
	} else {
		int nt = 0;
		for (int k = 0; k < 8 && nt < 8; k++) {
			h_tp *tp = &fa.groups[0].topics[nt++];
			tp->topic = TOPIC;
			for (int j = 0; j < 8; j++) {
				int p = (int)rr(0, S.parts - 1);
				tp->partitions[tp->npartitions++] = p;
				asked[nasked++] = p;
			}
		}
		fa.groups[0].ntopics = nt;
	}
	h_req *r = h_fetch(S.h, &fa);
	S.n_fetch_checks++;
	if (!h_done(r)) {
		fail("OffsetFetch not answered at once (%s)%lld", when, 0);
		return;
	}
	if (r->error != 0 || (v >= 8 && r->nrows > 0 && r->rows[0].error != 0)) {
		fail("OffsetFetch (%s) failed: error %lld", when,
		     r->error ? r->error : r->rows[0].error);
		return;
	}
	int lim = all ? S.parts : nasked;
	for (int k = 0; k < lim; k++) {
		int p = all ? k : asked[k];
		if (S.pend[p] > 0)
			continue;
		const h_row *w = h_row_tp(r, NULL, TOPIC, p);
		int64_t got = w ? w->offset : -1;
		if (w && w->error != 0) {
			fail("OffsetFetch (%s): partition error %lld", when, w->error);
			return;
		}
		if (got != S.acked[p]) {
			char what[96];
			snprintf(what, sizeof(what), "%s, v%d, partition %d: want %lld", when, v, p,
				 (long long)S.acked[p]);
			fail("an acknowledged commit is not what OffsetFetch returns (%s): got "
			     "%lld",
			     what, got);
			return;
		}
	}
}

/* ---- coordinator restart ---------------------------------------------------------- */

static void
restart(void)
{
	S.n_restart++;
	if (S.verbose)
		printf("  t=%lld: coordinator restart\n", (long long)S.h->now);
	h_restart(S.h);
	ch_coord_group_info gi = ch_coord_group_get_info(S.h->c, G);
	int32_t loaded = gi.exists ? gi.generation : 0;
	/* generations past the replayed one never completed: no member may
	 * have been told its assignment for them */
	for (int32_t g = loaded + 1; g < MAXGEN; g++) {
		if (S.gens[g] && S.gens[g]->nown > 0)
			fail("SyncGroup of generation (%s) %lld was answered but lost in a restart",
			     "", g);
		gen_free(g);
	}
	if (S.max_group_gen > loaded)
		S.max_group_gen = loaded;
	for (int i = 0; i < S.nc; i++) {
		cons *c = &S.c[i];
		if (c->max_gen_seen > loaded)
			c->max_gen_seen = loaded;
		/* a broken connection: noticed after a reconnect backoff; a
		 * response the old coordinator sent that has not arrived yet is
		 * lost with the connection */
		slot *ss[] = {&c->main, &c->hb, &c->commit, &c->probe};
		for (int k = 0; k < 4; k++)
			if (ss[k]->r && !ss[k]->broken) {
				ss[k]->broken = true;
				ss[k]->broken_at = S.h->now;
				ss[k]->delay = rr(0, 1000);
			}
	}
	/* lost commits are no longer in flight */
	for (rinfo *in = S.infos; in; in = in->next)
		if (in->open) {
			bool lost = false;
			for (size_t k = 0; k < S.nall && !lost; k++)
				lost = S.all[k]->user == in && S.all[k]->lost;
			if (lost) {
				in->open = false;
				for (int k = 0; k < in->n; k++)
					S.pend[in->part[k]]--;
			}
		}
	/* a static replacement that was not yet durable is undone by the
	 * replay: the old instance is a member again, not a zombie */
	const char *groups[] = {G};
	h_req *d = h_describe(S.h, 5, groups, 1);
	for (int i = 0; i < S.nc; i++) {
		cons *c = &S.c[i];
		if (c->alive && c->zombie && c->member[0] && h_row_member(d, c->member))
			c->zombie = false;
	}
	/* ... and the new instance's id is unknown: as in Kafka, its next
	 * request with that id is fenced (the instance maps to the old id) */
	for (int i = 0; i < S.nc; i++) {
		cons *c = &S.c[i];
		if (!c->alive || c->zombie || !c->is_static || !c->member[0] ||
		    h_row_member(d, c->member))
			continue;
		for (int k = 0; k < d->nrows; k++)
			if (d->rows[k].is_member && h_blob_str(d->rows[k].instance_id, c->inst)) {
				c->zombie = true;
				c->fenced_at = S.h->now;
			}
	}
	check_offsets("after a restart");
}

/* ---- scenario ------------------------------------------------------------------ */

static cons *
new_cons(bool is_static, const char *inst)
{
	if (S.nc >= MAXC)
		return NULL;
	cons *c = &S.c[S.nc];
	memset(c, 0, sizeof(*c));
	c->idx = S.nc++;
	c->alive = true;
	c->is_static = is_static;
	if (inst)
		snprintf(c->inst, sizeof(c->inst), "%s", inst);
	c->gen = -1;
	c->max_gen_seen = -1;
	c->last_sync_gen = -1;
	c->jv = is_static ? (int)rr(5, 9) : (int)rr(3, 9);
	c->sv = is_static ? (int)rr(3, 5) : (int)rr(0, 5);
	c->hv = is_static ? (int)rr(3, 4) : (int)rr(0, 4);
	c->cv = is_static ? (int)rr(7, 9) : (int)rr(2, 9);
	c->lv = (int)rr(0, 5);
	c->join_at = S.h->now + rr(0, 2000);
	c->st = C_OFF;
	c->commit_offset = 0;
	return c;
}

static cons *
pick_live(bool want_static)
{
	static int idx[MAXC];
	int n = 0;
	for (int i = 0; i < S.nc; i++)
		if (S.c[i].alive && !S.c[i].zombie && (!want_static || S.c[i].is_static))
			idx[n++] = i;
	return n ? &S.c[idx[rnd() % (uint64_t)n]] : NULL;
}

/* A duplicated or late request: something the consumer sent before,
 * re-sent after it moved on (any consumer, even a dead one: its requests
 * may still be in the network). */
static void
duplicate(void)
{
	cons *c = &S.c[rnd() % (uint64_t)S.nc];
	if (c->probe.r || !c->member[0])
		return;
	S.n_dup++;
	switch (rnd() % 4) {
	case 0: /* the last JoinGroup again (a static member's first join
		 * would legitimately fence its own current incarnation) */
		if (c->is_static && !c->last_join_member[0])
			return;
		send_join_as(c, c->last_join_member, &c->probe, K_PROBE);
		break;
	case 1: /* the last SyncGroup again (with the leader's assignments) */
		if (c->last_sync_gen < 0)
			return;
		send(c, &c->probe, K_PROBE,
		     c->last_sync_leader ? leader_sync(c, c->last_sync_member, c->last_sync_gen)
					 : follower_sync(c, c->last_sync_member, c->last_sync_gen));
		break;
	case 2: /* a heartbeat of its last generation */
		if (c->gen < 0)
			return;
		send_hb(c, c->gen, true);
		break;
	default: /* a commit of its last generation */
		if (c->gen < 0)
			return;
		send_commit(c, c->gen, true);
		break;
	}
}

static void
disrupt(void)
{
	int e = (int)(rnd() % 100);
	cons *c;
	S.last_disruption = S.h->now;
	if (e < S.chaos_restart_pct) { /* the coordinator crashes and comes back */
		restart();
		return;
	}
	e = (int)(rnd() % 110);
	if (e < 15) { /* crash */
		if ((c = pick_live(false))) {
			die(c);
			S.n_crash++;
		}
	} else if (e < 25) { /* graceful leave (dynamic members only, as clients do) */
		if ((c = pick_live(false)) && !c->is_static && c->member[0]) {
			h_req *r = h_leave(S.h, &(h_leave_args){.v = H_V(c->lv),
								.group = G,
								.member = c->member,
								.members = {{.member = c->member}},
								.nmembers = 1});
			send(c, &c->probe, K_LEAVE, r);
			die(c);
			S.n_leave++;
		}
	} else if (e < 40) { /* static restart: the old instance lingers as a zombie */
		int same = 0;
		if ((c = pick_live(true)))
			for (int i = 0; i < S.nc; i++)
				same += S.c[i].alive && !strcmp(S.c[i].inst, c->inst);
		if (c && same == 1) {
			cons *n = new_cons(true, c->inst);
			if (n) {
				n->join_at = S.h->now + rr(0, SESSION / 2);
				S.n_static++;
			}
		}
	} else if (e < 55) { /* a new consumer */
		bool st = chance(40);
		char inst[16];
		snprintf(inst, sizeof(inst), "s%d", S.nc);
		if (new_cons(st, st ? inst : NULL))
			S.n_new++;
	} else if (e < 70) { /* stale generation probes */
		if ((c = pick_live(false)) && c->st == C_STABLE && c->gen > 0 && !c->probe.r) {
			if (chance(50))
				send_hb(c, c->gen - (int32_t)rr(1, c->gen), true);
			else
				send_commit(c, c->gen - (int32_t)rr(1, c->gen), true);
			S.n_probe++;
		}
	} else if (e < 80) { /* slow appends for a while */
		S.h->append_delay = rr(0, 800);
	} else if (e < 90) { /* a member rejoins with changed metadata or as the leader */
		if ((c = pick_live(false)) && c->st == C_STABLE && !c->main.r)
			rejoin(c, false, 0);
	} else if (e < 100) { /* duplicated / late requests */
		duplicate();
	} else { /* a crashed dynamic consumer comes back as a new one */
		if (new_cons(false, NULL))
			S.n_new++;
	}
}

static bool
converged(void)
{
	ch_coord_group_info gi = ch_coord_group_get_info(S.h->c, G);
	int live = 0;
	for (int i = 0; i < S.nc; i++) {
		cons *c = &S.c[i];
		if (!c->alive || c->zombie)
			continue;
		live++;
		if (c->st != C_STABLE || c->gen != gi.generation)
			return false;
	}
	if (live == 0)
		return !gi.exists || gi.members == 0;
	return gi.exists && gi.state == CH_COORD_GROUP_STABLE && gi.members == live;
}

static void
check_step(void)
{
	if (S.h->violations)
		return;
	ch_coord_group_info gi = ch_coord_group_get_info(S.h->c, G);
	if (gi.exists && gi.generation < S.max_group_gen)
		fail("group generation went back (%s) to %lld", "", gi.generation);
	if (gi.exists && gi.generation > S.max_group_gen)
		S.max_group_gen = gi.generation;
	if (S.h->now >= S.last_disruption) {
		if (converged()) {
			if (S.stable_since < 0)
				S.stable_since = S.h->now;
		} else {
			S.stable_since = -1;
		}
	}
}

/* Group size of a seed: mostly small, some medium, a few large (1..500). */
static int
group_size(uint64_t seed)
{
	if (seed % 1000 == 7)
		return 500;
	if (seed % 500 == 7)
		return (int)rr(200, 499);
	if (seed % 100 == 3)
		return (int)rr(61, 200);
	if (chance(8))
		return (int)rr(9, 60);
	return (int)rr(1, 8);
}

static int
run_seed(uint64_t seed, bool verbose)
{
	memset(&S, 0, sizeof(S));
	rng_s = seed * 0x2545f4914f6cdd1dull + 1;
	S.verbose = verbose;
	ch_coord_config cfg;
	ch_coord_config_defaults(&cfg);
	cfg.initial_rebalance_delay_ms = chance(50) ? 3000 : (int32_t)rr(0, 1000);
	/* from the seed, not the rng: the other draws (regression seeds) stay */
	cfg.initial_rebalance_quiet_ms = seed % 3 == 0 ? -1 : (int32_t)(seed * 7919 % 1001);
	S.h = h_new(&cfg, INT64_C(1600000000000) + (int64_t)(seed % 1000) * 1000);
	S.h->quiet = true;
	S.h->fifo_appends = true;
	S.h->on_respond = on_respond;
	for (int p = 0; p < PMAX; p++)
		S.acked[p] = -1;
	int n0 = group_size(seed);
	/* ch_coord_check is O(members): large groups check every 16th step */
	S.h->check_stride = n0 > 60 ? 16 : 1;
	S.parts = n0 > 32 ? (int)rr(n0 / 2, n0 * 2 > PMAX ? PMAX : n0 * 2) : (int)rr(1, 64);
	S.stable_since = -1;
	/* a third of the seeds restart the coordinator (1 in 4 disruptions) */
	S.chaos_restart_pct = chance(33) ? 25 : chance(30) ? 5 : 0;
	int pct_static = (int)rr(0, 100);
	for (int i = 0; i < n0; i++) {
		char inst[16];
		snprintf(inst, sizeof(inst), "s%d", i);
		bool st = chance(pct_static);
		new_cons(st, st ? inst : NULL);
	}
	int64_t start = S.h->now;
	int64_t chaos = n0 > 60 ? rr(0, 40000) : rr(0, 120000);
	S.quiet_from = start + chaos;
	int64_t end = S.quiet_from + 150000;
	int64_t next_event = start + rr(0, 10000);
	S.last_disruption = start;
	S.all_dirty = true;
	for (long steps = 0; S.h->now < end && !S.failures && !S.h->violations; steps++) {
		int64_t t = h_next_event(S.h);
		for (int i = 0; i < S.nc; i++) {
			if (S.all_dirty || S.dirty[i]) {
				S.next[i] = cons_next(&S.c[i]);
				S.dirty[i] = false;
			}
			if (S.next[i] < t)
				t = S.next[i];
		}
		S.all_dirty = false;
		if (next_event < t && next_event < S.quiet_from)
			t = next_event;
		if (t > end)
			t = end;
		if (t < S.h->now)
			t = S.h->now;
		if (S.h->now >= S.quiet_from)
			S.h->append_delay = 0;
		h_advance_to(S.h, t);
		if (next_event <= S.h->now && S.h->now < S.quiet_from) {
			disrupt();
			if (chance(10))
				check_offsets("during the run");
			next_event = S.h->now + rr(200, 15000);
			S.all_dirty = true;
		}
		for (int i = 0; i < S.nc; i++) {
			if (S.all_dirty || S.dirty[i] || S.next[i] <= S.h->now) {
				cons_step(&S.c[i]);
				S.dirty[i] = true;
			}
		}
		check_step();
		/* stop once the group has been stable long enough to show that
		 * it stays so (sessions, pending members and syncs would expire) */
		if (S.h->now >= S.quiet_from && S.stable_since >= 0 &&
		    S.h->now - S.stable_since > SESSION + REBALANCE + 5000)
			break;
		if (steps > 5000000) {
			fail("no progress (%s) after %lld steps", "", steps);
			break;
		}
	}
	h_release_appends(S.h); /* appends still in flight when the run stopped */
	if (!S.failures && !S.h->violations)
		check_offsets("at the end");
	/* every request has exactly one response, unless lost in a restart */
	for (size_t i = 0; i < S.nall; i++)
		if (S.all[i]->lost ? S.all[i]->nresp != 0 : S.all[i]->nresp != 1) {
			fail("a request (api %s%lld) has no single response", "",
			     S.all[i]->api * 100 + S.all[i]->nresp);
			break;
		}
	if (!S.failures && !S.h->violations) {
		if (S.stable_since < 0)
			fail("the group did not converge after the last disruption%s (%lld ms)", "",
			     end - S.last_disruption);
		else if (S.stable_since - S.last_disruption > BOUND)
			fail("the group converged only %lld ms after the last disruption%s", "",
			     S.stable_since - S.last_disruption);
	}
	int live = 0;
	for (int i = 0; i < S.nc; i++)
		live += S.c[i].alive && !S.c[i].zombie;
	ch_coord_group_info gi = ch_coord_group_get_info(S.h->c, G);
	int bad = S.failures + S.h->violations;
	if (bad && verbose) {
		printf("  end: pending_appends=%zu\n", h_pending_appends(S.h));
		printf("  end: now=%lld next_deadline=%lld pending_members=%d members=%d "
		       "leader=%s\n",
		       (long long)S.h->now, (long long)ch_coord_next_deadline(S.h->c),
		       gi.pending_members, gi.members, gi.leader ? gi.leader : "-");
		for (int i = 0; i < S.nc && i < 40; i++)
			printf("  cons %d %s%s%s member=%s inst=%s st=%d gen=%d main=%s\n", i,
			       S.c[i].alive ? "alive" : "dead", S.c[i].zombie ? " zombie" : "",
			       S.c[i].is_static ? " static" : "", S.c[i].member, S.c[i].inst,
			       S.c[i].st, S.c[i].gen,
			       S.c[i].main.r ? (h_done(S.c[i].main.r) ? "answered" : "waiting")
					     : "-");
	}
	if (verbose || bad)
		printf("seed %" PRIu64 ": %s consumers=%d live=%d parts=%d gen=%d state=%s "
		       "joins=%d syncs=%d hbs=%d commits=%d/%d rejected crash=%d leave=%d "
		       "static-restarts=%d zombies-fenced=%d probes=%d dups=%d new=%d "
		       "coord-restarts=%d lost=%d fetch-checks=%d "
		       "stable %lld ms after last disruption\n",
		       seed, bad ? "FAIL" : "ok", S.nc, live, S.parts, gi.generation,
		       gi.exists ? ch_coord_group_state_name(gi.state) : "-", S.n_join, S.n_sync,
		       S.n_hb, S.n_commit_ok, S.n_commit_rej, S.n_crash, S.n_leave, S.n_static,
		       S.n_zombie_fenced, S.n_probe, S.n_dup, S.n_new, S.n_restart, S.n_lost,
		       S.n_fetch_checks,
		       S.stable_since >= 0 ? (long long)(S.stable_since - S.last_disruption)
					   : -1LL);
	for (int g = 0; g < MAXGEN; g++)
		gen_free(g);
	for (rinfo *in = S.infos, *nx; in; in = nx) {
		nx = in->next;
		free(in);
	}
	free(S.all);
	h_free(S.h);
	return bad;
}

/* Runs the seeds with index k (1-based) where k % jobs == job; returns
 * the number that failed. */
static int
run_range(int seeds, const long long *extra, int nextra, bool verbose, int jobs, int job,
	  int *passed)
{
	int failed = 0;
	for (int k = 1; k <= seeds + nextra; k++) {
		if (k % jobs != job)
			continue;
		long long s = k <= seeds ? k : extra[k - seeds - 1];
		int bad = run_seed((uint64_t)s, verbose || k <= 3);
		if (bad) {
			failed++;
			printf("replay: group_sim --seed %lld -v\n", s);
		} else {
			(*passed)++;
		}
		fflush(stdout);
	}
	return failed;
}

int
main(int argc, char **argv)
{
	int seeds = 100, jobs = 1;
	long long one = -1;
	bool verbose = false;
	long long extra[64];
	int nextra = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--extra") && i + 1 < argc) {
			for (char *p = argv[++i]; *p && nextra < 64;) {
				extra[nextra++] = strtoll(p, &p, 10);
				while (*p == ',')
					p++;
			}
			continue;
		}
		if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
			seeds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--jobs") && i + 1 < argc)
			jobs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			one = atoll(argv[++i]);
		else if (!strcmp(argv[i], "-v"))
			verbose = true;
	}
	if (jobs < 1)
		jobs = 1;
	ch_log_threshold = verbose ? CH_LOG_INFO : CH_LOG_WARN;
	int failed = 0, passed = 0;
	if (one >= 0) {
		failed = run_seed((uint64_t)one, true) != 0;
		passed = !failed;
	} else if (jobs == 1) {
		failed = run_range(seeds, extra, nextra, verbose, 1, 0, &passed);
	} else {
		/* worker processes, each with every jobs-th seed (runs are
		 * independent and deterministic per seed) */
		fflush(stdout);
		pid_t pids[16];
		if (jobs > 16)
			jobs = 16;
		for (int j = 0; j < jobs; j++) {
			pids[j] = fork();
			if (pids[j] == 0) {
				int p = 0;
				int f = run_range(seeds, extra, nextra, verbose, jobs, j, &p);
				fflush(stdout);
				_exit(f > 250 ? 250 : f);
			}
			if (pids[j] < 0) {
				perror("fork");
				return 2;
			}
		}
		for (int j = 0; j < jobs; j++) {
			int st = 0;
			waitpid(pids[j], &st, 0);
			if (WIFEXITED(st))
				failed += WEXITSTATUS(st);
			else
				failed += 1,
					printf("worker %d died (signal %d)\n", j, WTERMSIG(st));
		}
		passed = seeds + nextra - failed;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
