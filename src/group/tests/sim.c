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
 *     consumers, all at the group's generation, within a bounded time.
 *
 *   group_sim [--seeds N] [--extra S1,S2,...] [--seed S] [-v]
 * (--seeds runs 1..N; --extra adds regression seeds; --seed runs one, verbosely)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_log.h"
#include "harness.h"

#define G "simgroup"
#define TOPIC "t"
#define MAXC 128
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

/* ---- model ------------------------------------------------------------------- */

enum { C_OFF, C_JOIN, C_SYNC, C_STABLE };

typedef struct slot {
	h_req *r;
	int64_t delay; /* network delay of the response */
	int kind;      /* what to do with it */
} slot;

enum { K_JOIN = 1, K_SYNC, K_HB, K_COMMIT, K_LEAVE, K_PROBE };

typedef struct cons {
	int idx;
	bool alive;  /* runs its loop */
	bool zombie; /* an old static instance that was replaced */
	int64_t fenced_at; /* zombie: when the new instance joined */
	bool is_static;
	char inst[16];
	char member[H_STR];
	int32_t gen;
	int32_t max_gen_seen;
	int st;
	int jv, sv, hv, cv, lv;
	slot main;   /* join / sync / leave */
	slot hb;
	slot commit;
	slot probe;
	int64_t join_at; /* a (re)join to send at this time */
	int64_t next_hb, next_commit;
	uint64_t parts;
	int32_t parts_gen;
	int64_t commit_offset;
} cons;

typedef struct gen_rec {
	int leader_cons; /* consumer index that sent assignments, -1 none */
	int n;
	char member[MAXC][H_STR];
	char inst[MAXC][16];
	uint64_t mask[MAXC];
	/* ownership from successful SyncGroup responses */
	int nown;
	char owner[MAXC][H_STR];
	uint64_t owned[MAXC];
} gen_rec;

static struct {
	h_env *h;
	cons c[MAXC];
	int nc;
	int parts; /* partitions of TOPIC, <= 64 */
	gen_rec *gens[MAXGEN];
	int32_t max_group_gen;
	int64_t last_disruption;
	int64_t quiet_from;
	int64_t stable_since; /* after the last disruption; -1 = not yet */
	int failures;
	bool verbose;
	/* counters */
	int n_join, n_sync, n_hb, n_commit_ok, n_commit_rej, n_crash, n_leave, n_static,
	    n_zombie_fenced, n_probe, n_new;
	h_req **all;
	size_t nall, capall;
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
	(void)c;
	s->r = r;
	s->kind = kind;
	s->delay = net_delay();
	track(r);
}

/* ---- requests ------------------------------------------------------------------ */

static void
send_join(cons *c)
{
	h_join_args a = {.v = H_V(c->jv), .group = G, .member = c->member,
			 .instance = c->is_static ? c->inst : NULL, .session_ms = SESSION,
			 .rebalance_ms = REBALANCE};
	static const char *const topics[] = {TOPIC, NULL};
	h_blob sub = h_subscription(S.h, 0, topics);
	a.protos[0] = (h_proto){"roundrobin", sub.p, sub.len};
	a.nprotos = 1;
	char cid[16];
	snprintf(cid, sizeof(cid), "c%d", c->idx);
	a.client_id = cid;
	c->st = C_JOIN;
	c->join_at = INF;
	/* a static restart: from now on the old instance is fenced */
	if (c->is_static && !c->zombie)
		for (int i = 0; i < S.nc; i++) {
			cons *o = &S.c[i];
			if (o->idx < c->idx && o->is_static && !strcmp(o->inst, c->inst) &&
			    o->alive && !o->zombie) {
				o->zombie = true;
				o->fenced_at = S.h->now;
			}
		}
	send(c, &c->main, K_JOIN, h_join(S.h, &a));
	S.n_join++;
}

static void
send_commit(cons *c, int32_t gen, bool probe)
{
	h_commit_args a = {.v = H_V(c->cv), .group = G, .member = c->member, .gen = gen,
			   .instance = c->is_static ? c->inst : NULL};
	int n = 0;
	for (int p = 0; p < S.parts && n < 16; p++)
		if (c->parts >> p & 1)
			a.offsets[n++] = (h_offset){TOPIC, p, ++c->commit_offset};
	if (n == 0)
		a.offsets[n++] = (h_offset){TOPIC, 0, c->commit_offset};
	a.noffsets = n;
	ch_group_info gi = ch_coord_group_info(S.h->c, G);
	bool must_fail = c->zombie || gen != gi.generation ||
			 gi.state == CH_GROUP_COMPLETING_REBALANCE;
	h_req *r = h_commit(S.h, &a);
	r->user = (void *)(uintptr_t)(must_fail ? 1 : 0);
	send(c, probe ? &c->probe : &c->commit, probe ? K_PROBE : K_COMMIT, r);
}

static void
send_hb(cons *c, int32_t gen, bool probe)
{
	h_req *r = h_heartbeat(S.h, &(h_hb_args){.v = H_V(c->hv), .group = G, .member = c->member,
						  .gen = gen,
						  .instance = c->is_static ? c->inst : NULL});
	send(c, probe ? &c->probe : &c->hb, probe ? K_PROBE : K_HB, r);
	if (!probe)
		S.n_hb++;
}

static void
die(cons *c);

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

/* Leader: round-robin over the members of the join response. */
static void
lead(cons *c, const h_req *j)
{
	gen_rec *gr = gen_get(j->generation);
	int n = j->nrows;
	int order[MAXC];
	for (int i = 0; i < n && i < MAXC; i++)
		order[i] = i;
	for (int i = 1; i < n; i++) /* sort by member id */
		for (int k = i; k > 0 && strcmp(j->rows[order[k - 1]].member_id,
						j->rows[order[k]].member_id) > 0;
		     k--) {
			int t = order[k];
			order[k] = order[k - 1];
			order[k - 1] = t;
		}
	uint64_t mask[MAXC] = {0};
	for (int p = 0; p < S.parts && n > 0; p++)
		mask[p % n] |= UINT64_C(1) << p;
	if (gr) {
		if (gr->leader_cons >= 0 && gr->leader_cons != c->idx)
			fail("two leaders in generation (%s) %lld", "", j->generation);
		gr->leader_cons = c->idx;
		gr->n = n;
		for (int i = 0; i < n; i++) {
			const h_row *w = &j->rows[order[i]];
			strcpy(gr->member[i], w->member_id);
			snprintf(gr->inst[i], sizeof(gr->inst[i]), "%s",
				 w->instance_id.len > 0 ? (const char *)w->instance_id.p : "");
			gr->mask[i] = mask[i];
		}
	}
	h_sync_args sa = {.v = H_V(c->sv), .group = G, .member = c->member, .gen = j->generation,
			  .instance = c->is_static ? c->inst : NULL, .ptype = "consumer",
			  .pname = "roundrobin"};
	int na = 0;
	for (int i = 0; i < n && na < 128; i++) {
		int32_t ps[64];
		int np = 0;
		for (int p = 0; p < S.parts; p++)
			if (mask[i] >> p & 1)
				ps[np++] = p;
		h_blob b = h_assignment(S.h, TOPIC, ps, np);
		sa.assign[na++] = (h_assign){j->rows[order[i]].member_id, b.p, b.len};
	}
	sa.nassign = na;
	send(c, &c->main, K_SYNC, h_sync(S.h, &sa));
	S.n_sync++;
}

static void
follow(cons *c, const h_req *j)
{
	send(c, &c->main, K_SYNC,
	     h_sync(S.h, &(h_sync_args){.v = H_V(c->sv), .group = G, .member = c->member,
					.gen = j->generation,
					.instance = c->is_static ? c->inst : NULL,
					.ptype = "consumer", .pname = "roundrobin"}));
	S.n_sync++;
}

/* ---- responses ------------------------------------------------------------- */

static void
check_sync_assignment(cons *c, const h_req *r)
{
	int32_t gen = r->req_generation;
	gen_rec *gr = gen_get(gen);
	if (!gr)
		return;
	int32_t ps[64];
	char topic[64];
	int np = h_decode_assignment(r->assignment.p, r->assignment.len, topic, sizeof(topic), ps, 64);
	if (np < 0) {
		fail("undecodable assignment%s (len %lld)", "", r->assignment.len);
		return;
	}
	uint64_t got = 0;
	for (int i = 0; i < np; i++)
		got |= UINT64_C(1) << ps[i];
	if (gr->leader_cons < 0) {
		fail("SyncGroup succeeded for a generation no leader assigned%s: %lld", "", gen);
		return;
	}
	int k = -1;
	for (int i = 0; i < gr->n; i++)
		if (!strcmp(gr->member[i], c->member) ||
		    (c->is_static && !strcmp(gr->inst[i], c->inst)))
			k = i;
	uint64_t want = k >= 0 ? gr->mask[k] : 0;
	if (got != want)
		fail("member %s got an assignment other than the leader's for generation %lld",
		     c->member, gen);
	if (k < 0 && r->assignment.len != 0)
		fail("left-out member %s got a non-empty assignment (gen %lld)", c->member, gen);
	/* ownership within the generation */
	const char *key = c->is_static ? c->inst : c->member;
	uint64_t others = 0;
	int me = -1;
	for (int i = 0; i < gr->nown; i++) {
		if (!strcmp(gr->owner[i], key))
			me = i;
		else
			others |= gr->owned[i];
	}
	if (got & others)
		fail("partition owned twice in generation (%s) %lld", key, gen);
	if (me < 0 && gr->nown < MAXC) {
		me = gr->nown++;
		snprintf(gr->owner[me], sizeof(gr->owner[me]), "%s", key);
	}
	if (me >= 0)
		gr->owned[me] = got;
	c->parts = got;
	c->parts_gen = gen;
}

static void
on_join(cons *c, const h_req *r)
{
	switch (r->error) {
	case 0:
		if (r->generation < c->max_gen_seen)
			fail("consumer %s saw its generation go back to %lld", c->member, r->generation);
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
		check_sync_assignment(c, r);
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
	if (ok && r->user)
		fail("a commit by a fenced or stale member %s was accepted (gen %lld)", c->member,
		     r->req_generation);
	if (!ok && r->nrows > 0 && r->rows[0].error == CH_KERR_FENCED_INSTANCE_ID && !c->zombie)
		fail("a live static member %s was fenced on OffsetCommit%lld", c->member, 0);
}

static void
deliver(cons *c, slot *s)
{
	h_req *r = s->r;
	int kind = s->kind;
	s->r = NULL;
	if (!c->alive)
		return;
	switch (kind) {
	case K_JOIN: on_join(c, r); break;
	case K_SYNC: on_sync(c, r); break;
	case K_HB: on_hb(c, r); break;
	case K_COMMIT: on_commit(c, r); break;
	case K_PROBE:
		if (r->api == H_OFFSET_COMMIT)
			on_commit(c, r);
		break;
	case K_LEAVE: die(c); break;
	}
}

static int64_t
slot_due(const slot *s)
{
	if (!s->r || !h_done(s->r))
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
	int idx[MAXC], n = 0;
	for (int i = 0; i < S.nc; i++)
		if (S.c[i].alive && !S.c[i].zombie && (!want_static || S.c[i].is_static))
			idx[n++] = i;
	return n ? &S.c[idx[rnd() % (uint64_t)n]] : NULL;
}

static void
disrupt(void)
{
	int e = (int)(rnd() % 100);
	cons *c;
	S.last_disruption = S.h->now;
	if (e < 15) { /* crash */
		if ((c = pick_live(false))) {
			die(c);
			S.n_crash++;
		}
	} else if (e < 25) { /* graceful leave (dynamic members only, as clients do) */
		if ((c = pick_live(false)) && !c->is_static && c->member[0]) {
			h_req *r = h_leave(S.h, &(h_leave_args){.v = H_V(c->lv), .group = G,
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
				send_hb(c, c->gen - 1, true);
			else
				send_commit(c, c->gen - 1, true);
			S.n_probe++;
		}
	} else if (e < 80) { /* slow appends for a while */
		S.h->append_delay = rr(0, 800);
	} else if (e < 90) { /* a member rejoins with changed metadata or as the leader */
		if ((c = pick_live(false)) && c->st == C_STABLE && !c->main.r)
			rejoin(c, false, 0);
	} else { /* a crashed dynamic consumer comes back as a new one */
		if (new_cons(false, NULL))
			S.n_new++;
	}
}

static bool
converged(void)
{
	ch_group_info gi = ch_coord_group_info(S.h->c, G);
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
	return gi.exists && gi.state == CH_GROUP_STABLE && gi.members == live;
}

static void
check_step(void)
{
	if (S.h->violations)
		return;
	ch_group_info gi = ch_coord_group_info(S.h->c, G);
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

static int
run_seed(uint64_t seed, bool verbose)
{
	memset(&S, 0, sizeof(S));
	rng_s = seed * 0x2545f4914f6cdd1dull + 1;
	S.verbose = verbose;
	ch_coord_config cfg;
	ch_coord_config_defaults(&cfg);
	cfg.initial_rebalance_delay_ms = chance(50) ? 3000 : (int32_t)rr(0, 1000);
	S.h = h_new(&cfg, INT64_C(1600000000000) + (int64_t)(seed % 1000) * 1000);
	S.h->quiet = true;
	S.parts = (int)rr(1, 64);
	S.stable_since = -1;
	int n0 = chance(10) ? (int)rr(20, 60) : (int)rr(1, 8);
	int pct_static = (int)rr(0, 100);
	for (int i = 0; i < n0; i++) {
		char inst[16];
		snprintf(inst, sizeof(inst), "s%d", i);
		bool st = chance(pct_static);
		new_cons(st, st ? inst : NULL);
	}
	int64_t start = S.h->now;
	int64_t chaos = rr(0, 120000);
	S.quiet_from = start + chaos;
	int64_t end = S.quiet_from + 150000;
	int64_t next_event = start + rr(0, 10000);
	S.last_disruption = start;
	for (long steps = 0; S.h->now < end && !S.failures && !S.h->violations; steps++) {
		int64_t t = h_next_event(S.h);
		for (int i = 0; i < S.nc; i++) {
			int64_t x = cons_next(&S.c[i]);
			if (x < t)
				t = x;
		}
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
			next_event = S.h->now + rr(200, 15000);
		}
		for (int i = 0; i < S.nc; i++)
			cons_step(&S.c[i]);
		check_step();
		if (steps > 5000000) {
			fail("no progress (%s) after %lld steps", "", steps);
			break;
		}
	}
	/* every request has exactly one response */
	for (size_t i = 0; i < S.nall; i++)
		if (S.all[i]->nresp != 1) {
			fail("a request (api %s%lld) has no single response", "", S.all[i]->api * 100 +
				  S.all[i]->nresp);
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
	ch_group_info gi = ch_coord_group_info(S.h->c, G);
	int bad = S.failures + S.h->violations;
	if (bad && verbose) {
		printf("  end: pending_appends=%zu\n", h_pending_appends(S.h));
		printf("  end: now=%lld next_deadline=%lld pending_members=%d members=%d leader=%s\n",
		       (long long)S.h->now, (long long)ch_coord_next_deadline(S.h->c), gi.pending_members,
		       gi.members, gi.leader ? gi.leader : "-");
		for (int i = 0; i < S.nc; i++)
			printf("  cons %d %s%s%s member=%s inst=%s st=%d gen=%d main=%s\n", i,
			       S.c[i].alive ? "alive" : "dead", S.c[i].zombie ? " zombie" : "",
			       S.c[i].is_static ? " static" : "", S.c[i].member, S.c[i].inst, S.c[i].st,
			       S.c[i].gen,
			       S.c[i].main.r ? (h_done(S.c[i].main.r) ? "answered" : "waiting") : "-");
	}
	if (verbose || bad)
		printf("seed %" PRIu64 ": %s consumers=%d live=%d parts=%d gen=%d state=%s "
		       "joins=%d syncs=%d hbs=%d commits=%d/%d rejected crash=%d leave=%d "
		       "static-restarts=%d zombies-fenced=%d probes=%d new=%d "
		       "stable %lld ms after last disruption\n",
		       seed, bad ? "FAIL" : "ok", S.nc, live, S.parts, gi.generation,
		       gi.exists ? ch_group_state_name(gi.state) : "-", S.n_join, S.n_sync, S.n_hb,
		       S.n_commit_ok, S.n_commit_rej, S.n_crash, S.n_leave, S.n_static,
		       S.n_zombie_fenced, S.n_probe, S.n_new,
		       S.stable_since >= 0 ? (long long)(S.stable_since - S.last_disruption) : -1LL);
	for (int g = 0; g < MAXGEN; g++)
		free(S.gens[g]);
	free(S.all);
	h_free(S.h);
	return bad;
}

int
main(int argc, char **argv)
{
	int seeds = 100;
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
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			one = atoll(argv[++i]);
		else if (!strcmp(argv[i], "-v"))
			verbose = true;
	}
	ch_log_threshold = verbose ? CH_LOG_INFO : CH_LOG_WARN;
	int failed = 0, passed = 0;
	if (one >= 0) {
		failed = run_seed((uint64_t)one, true) != 0;
		passed = !failed;
	} else {
		for (int k = 1; k <= seeds + nextra; k++) {
			long long s = k <= seeds ? k : extra[k - seeds - 1];
			int bad = run_seed((uint64_t)s, verbose || k <= 3);
			if (bad) {
				failed++;
				printf("replay: group_sim --seed %lld -v\n", s);
			} else {
				passed++;
			}
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
