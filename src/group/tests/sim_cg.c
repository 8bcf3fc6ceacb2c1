/*
 * sim_cg.c: the consumer-protocol groups (ch_coord_cg.h) driven by
 * simulated consumers in virtual time, over many seeds.
 *
 * Each seed: a few topics, up to 12 consumers of one group (dynamic or
 * static, v0 or v1 member ids, various subscriptions and server
 * assignors). Events: heartbeats on each consumer's interval, joins,
 * graceful leaves (-1), static leaves (-2) and restarts under the same
 * instance id, crashes (silence until the session expires), consumers
 * slow to revoke (past their rebalance timeout sometimes), lost responses
 * (the consumer resends its previous request), partitions added, topics
 * r0-r3 created and deleted under consumers subscribed by regex (alone or
 * beside names; resolved again after regex_min_refresh_ms), and
 * coordinator restarts: the core is dropped and a new one replays the
 * records it wrote (cg_shell's compacted log), either between steps or
 * while a heartbeat's append is still in flight (a kill -9: the append and
 * its answer are lost, the consumer sees a lost answer).
 *
 * Checked after every step:
 *  - ch_coord_cg_check (the core's own invariants: one holder per partition...);
 *  - what every consumer still in the group believes it owns is held by its
 *    member in the coordinator (so no partition is owned by two members'
 *    consumers at once);
 *  - the group epoch never goes down; a consumer's epoch never goes down
 *    while it stays a member;
 *  - a consumer still in the group may commit what it owns at the epoch it
 *    last heard (KIP-1251), restarts or not;
 *  - a restart replays into exactly the state the coordinator had
 *    acknowledged (its digest: epochs, members, assignments, states);
 *    an append lost in a crash leaves the state as before that heartbeat.
 * At the end the churn stops: every live consumer heartbeats promptly; the
 * group must become Stable with every subscribed partition owned by
 * exactly one live consumer, as the coordinator says.
 *
 *   group_sim_cg --seeds N [--first S] [-v]     group_sim_cg --seed S -v
 */
#include <inttypes.h>

#include "cg_shell.h"
#include "regex/ch_regex.h"

#define MAXC 12
#define MAXP 256

typedef struct client {
	bool used, alive, joined;
	bool v0;
	char member_id[64];
	char instance[16]; /* "" dynamic */
	int32_t epoch;
	int32_t rebalance_timeout;
	int64_t next_hb;
	ch_coord_cg_tp owned[MAXP];
	int32_t nowned;
	ch_coord_cg_tp revoke[MAXP]; /* revoked by the coordinator, not yet let go */
	int32_t nrevoke;
	int64_t revoke_at; /* when the slow consumer lets them go */
	int topics[3]; /* of the first nbase topics (those are never deleted) */
	int ntopics;
	const char *regex; /* SubscribedTopicRegex, NULL: names only */
	const char *assignor; /* NULL, "uniform", "range" */
	int restarts;
} client;

typedef struct sim {
	cg_shell sh;
	uint64_t rng;
	int64_t now;
	client c[MAXC];
	int nbase; /* topics t0.. of the start; r0-r3 come and go after them */
	int32_t last_group_epoch;
	bool verbose;
	bool calm; /* the final phase: no faults */
	int steps;
	int restarts;
	char why[16384];
} sim;

static uint32_t
rnd(sim *s, uint32_t n)
{
	return (uint32_t)(cg_shell_rand(&s->rng) % n);
}

static bool
chance(sim *s, int pct)
{
	return (int)rnd(s, 100) < pct;
}

static int
tp_cmp(const void *a, const void *b)
{
	return ch_coord_cg_tp_cmp(a, b);
}

static bool
tps_has(const ch_coord_cg_tp *v, int32_t n, const ch_coord_cg_tp *tp)
{
	return n && bsearch(tp, v, (size_t)n, sizeof *v, tp_cmp) != NULL;
}

/* ---- the coordinator's view --------------------------------------------- */

typedef struct find_ctx {
	const char *id;
	bool found;
	int32_t epoch;
	ch_coord_cg_tp held[2 * MAXP];
	int32_t nheld;
	ch_coord_cg_tp assigned[MAXP];
	int32_t nassigned;
	ch_coord_cg_member_state state;
} find_ctx;

static void
find_fn(void *ud, const ch_coord_cg_member_view *m)
{
	find_ctx *f = ud;
	if (strcmp(m->member_id, f->id) != 0)
		return;
	f->found = true;
	f->epoch = m->epoch;
	f->state = m->state;
	f->nheld = 0;
	for (int32_t i = 0; i < m->nassigned; i++) {
		f->held[f->nheld++] = m->assigned[i];
		f->assigned[i] = m->assigned[i];
	}
	f->nassigned = m->nassigned;
	for (int32_t i = 0; i < m->nrevoking; i++)
		f->held[f->nheld++] = m->revoking[i];
	qsort(f->held, (size_t)f->nheld, sizeof *f->held, tp_cmp);
}

static bool
coord_member(sim *s, const char *id, find_ctx *f)
{
	f->id = id;
	f->found = false;
	f->nheld = f->nassigned = 0;
	ch_coord_cg_foreach_member(s->sh.cg, CH_STR_LIT("g"), find_fn, f);
	return f->found;
}

/* ---- consumers ------------------------------------------------------------ */

static void
client_forget(client *c)
{
	c->nowned = 0;
	c->nrevoke = 0;
	c->joined = false;
	c->epoch = 0;
}

static void
client_new(sim *s, client *c, bool keep_instance)
{
	char inst[16];
	memcpy(inst, c->instance, sizeof inst);
	int restarts = c->restarts;
	memset(c, 0, sizeof *c);
	c->used = c->alive = true;
	c->restarts = restarts + 1;
	if (keep_instance)
		memcpy(c->instance, inst, sizeof inst);
	else if (chance(s, 40)) /* unique among live consumers: one per slot */
		snprintf(c->instance, sizeof c->instance, "i%d.%d", (int)(c - s->c), c->restarts);
	c->v0 = chance(s, 25);
	if (!c->v0)
		snprintf(c->member_id, sizeof c->member_id, "m%" PRIu64,
			 cg_shell_rand(&s->rng) % 1000000000);
	c->rebalance_timeout = 5000 + (int32_t)rnd(s, 60000);
	c->ntopics = 1 + (int)rnd(s, (uint32_t)(s->nbase < 3 ? s->nbase : 3));
	for (int i = 0; i < c->ntopics; i++)
		c->topics[i] = (int)rnd(s, (uint32_t)s->nbase);
	if (chance(s, 35)) {
		static const char *const regexes[] = {"r.*", "t0|r[0-2]", "(t1|r1)", ".*", "r[13]"};
		c->regex = regexes[rnd(s, 5)];
		if (chance(s, 50))
			c->ntopics = 0; /* the regex alone */
	}
	c->assignor = chance(s, 70) ? NULL : chance(s, 50) ? "uniform" : "range";
	c->next_hb = s->now;
}

static bool restart_check(sim *s, const char *want, const char *how);

/* Builds and sends one heartbeat of c; applies the answer unless lost.
 * crash: the coordinator is killed while the heartbeat's records are not
 * yet durable (then restarted). */
static bool
client_heartbeat_crash(sim *s, client *c, bool lose_answer, bool crash)
{
	ch_ConsumerGroupHeartbeatRequest rq;
	ch_ConsumerGroupHeartbeatRequest_init(&rq);
	ch_str names[3];
	ch_ConsumerGroupHeartbeatRequest_TopicPartitions tps[CG_SHELL_TOPICS];
	int32_t parts[MAXP];
	rq.GroupId = CH_STR_LIT("g");
	rq.MemberId = ch_str_c(c->member_id);
	rq.InstanceId = c->instance[0] ? ch_str_c(c->instance) : CH_STR_NULL;
	rq.MemberEpoch = c->joined ? c->epoch : 0;
	bool full = !c->joined || chance(s, 20);
	rq.RebalanceTimeoutMs = full ? c->rebalance_timeout : -1;
	if (full) {
		for (int i = 0; i < c->ntopics; i++)
			names[i] = ch_str_c(s->sh.topics[c->topics[i]].name);
		rq.SubscribedTopicNames = names;
		/* Both fields, as librdkafka sends them ("" and [] for none): a
		 * null one would keep what a static predecessor had. */
		rq.SubscribedTopicNames_n = c->ntopics;
		rq.SubscribedTopicRegex = ch_str_c(c->regex ? c->regex : "");
		rq.ServerAssignor = c->assignor ? ch_str_c(c->assignor) : CH_STR_NULL;
	}
	/* What it owns now: what it kept, plus what it has not let go yet. */
	ch_coord_cg_tp mine[2 * MAXP];
	int32_t nmine = 0;
	for (int32_t i = 0; i < c->nowned; i++)
		mine[nmine++] = c->owned[i];
	for (int32_t i = 0; i < c->nrevoke; i++)
		mine[nmine++] = c->revoke[i];
	qsort(mine, (size_t)nmine, sizeof *mine, tp_cmp);
	if (!c->joined) {
		rq.TopicPartitions = tps;
		rq.TopicPartitions_n = 0;
	} else if (full || chance(s, 80)) {
		rq.TopicPartitions = tps;
		rq.TopicPartitions_n = 0;
		int32_t np = 0;
		for (int32_t i = 0; i < nmine; i++) {
			if (i == 0 || !ch_uuid_eq(&mine[i].topic, &mine[i - 1].topic))
				tps[rq.TopicPartitions_n++] =
					(ch_ConsumerGroupHeartbeatRequest_TopicPartitions){
						mine[i].topic, parts + np, 0};
			parts[np++] = mine[i].partition;
			tps[rq.TopicPartitions_n - 1].Partitions_n++;
		}
	} else {
		rq.TopicPartitions_n = -1; /* unchanged */
	}
	cg_shell_digest before = {0};
	int answers = s->sh.answers;
	if (crash) {
		cg_shell_digest_group(&s->sh, "g", &before);
		s->sh.hold = true;
	}
	cg_shell_heartbeat(&s->sh, s->now, c->v0 ? 0 : 1, &rq);
	if (crash) {
		s->sh.hold = false;
		bool answered = s->sh.answers != answers;
		if (!answered) {
			/* Killed before the append: as if nothing happened. */
			if (s->verbose)
				fprintf(stderr,
					"%8" PRId64 " crash before %s's records were durable\n",
					s->now, c->member_id[0] ? c->member_id : "(new)");
			cg_shell_restart(&s->sh, s->now);
			s->restarts++;
			bool ok = restart_check(s, before.p,
						"after a crash with an append in flight");
			free(before.p);
			return ok;
		}
		free(before.p);
		/* Answered at once (it wrote nothing): killed right after. */
		cg_shell_digest after;
		cg_shell_digest_group(&s->sh, "g", &after);
		cg_shell_restart(&s->sh, s->now);
		s->restarts++;
		bool ok = restart_check(s, after.p, "after an answer that wrote nothing");
		free(after.p);
		if (!ok)
			return false;
	}
	const cg_answer *a = &s->sh.a;
	if (s->verbose)
		fprintf(stderr,
			"%8" PRId64 " hb %s%s%s epoch %d owned %d -> err %d epoch %d %s%d%s\n",
			s->now, c->member_id[0] ? c->member_id : "(new)", c->instance[0] ? "/" : "",
			c->instance, rq.MemberEpoch, nmine, a->err, a->epoch,
			a->has_assignment ? "assignment " : "", a->has_assignment ? a->ntps : 0,
			lose_answer ? " (lost)" : "");
	if (lose_answer)
		return true;
	c->next_hb = s->now + (a->interval > 0 ? a->interval : 1000);
	switch (a->err) {
	case 0:
		break;
	case CH_KERR_FENCED_MEMBER_EPOCH:
	case CH_KERR_UNKNOWN_MEMBER_ID:
		/* Abandon everything, rejoin (v1 keeps its member id). */
		client_forget(c);
		if (c->v0)
			c->member_id[0] = 0;
		return true;
	case CH_KERR_UNRELEASED_INSTANCE_ID:
		c->next_hb = s->now + 1000;
		return true;
	default:
		snprintf(s->why, sizeof s->why, "unexpected error %d (%.200s) for %.60s", a->err,
			 a->msg, c->member_id);
		return false;
	}
	if (a->epoch < c->epoch && c->joined) {
		snprintf(s->why, sizeof s->why, "member %s epoch went from %d to %d", c->member_id,
			 c->epoch, a->epoch);
		return false;
	}
	snprintf(c->member_id, sizeof c->member_id, "%s", a->member_id);
	c->epoch = a->epoch;
	c->joined = true;
	if (a->has_assignment) {
		/* Keep what stays, take what is new, let go of the rest (now,
		 * or later for a slow consumer). */
		ch_coord_cg_tp next[MAXP];
		int32_t nnext = 0;
		for (int32_t i = 0; i < a->ntps && nnext < MAXP; i++)
			next[nnext++] = a->tps[i];
		for (int32_t i = 0; i < c->nowned; i++)
			if (!tps_has(next, nnext, &c->owned[i]) && c->nrevoke < MAXP)
				c->revoke[c->nrevoke++] = c->owned[i];
		/* A partition given back before it was let go stays owned. */
		int32_t k = 0;
		for (int32_t i = 0; i < c->nrevoke; i++)
			if (!tps_has(next, nnext, &c->revoke[i]))
				c->revoke[k++] = c->revoke[i];
		c->nrevoke = k;
		qsort(c->revoke, (size_t)c->nrevoke, sizeof *c->revoke, tp_cmp);
		memcpy(c->owned, next, (size_t)nnext * sizeof *next);
		c->nowned = nnext;
		if (c->nrevoke) {
			bool slow = !s->calm && chance(s, 15);
			c->revoke_at =
				s->now +
				(slow ? (int64_t)rnd(s, (uint32_t)c->rebalance_timeout * 2) : 0);
		}
	}
	return true;
}

static bool
client_heartbeat(sim *s, client *c, bool lose_answer)
{
	return client_heartbeat_crash(s, c, lose_answer, false);
}

/* ---- checks ---------------------------------------------------------------- */

/* The group after a restart must be `want` (a digest taken before). */
static bool
restart_check(sim *s, const char *want, const char *how)
{
	cg_shell_digest now;
	cg_shell_digest_group(&s->sh, "g", &now);
	bool same = strcmp(now.p, want) == 0;
	if (!same)
		snprintf(s->why, sizeof s->why, "restart %s: replayed\n%.7000s\nbut had\n%.7000s",
			 how, now.p, want);
	free(now.p);
	return same;
}

/* A clean restart: everything acknowledged is in the log. */
static bool
restart(sim *s)
{
	cg_shell_digest before;
	cg_shell_digest_group(&s->sh, "g", &before);
	if (s->verbose)
		fprintf(stderr, "%8" PRId64 " coordinator restart (%zu records)\n", s->now,
			s->sh.nlog);
	cg_shell_restart(&s->sh, s->now);
	s->restarts++;
	bool ok = restart_check(s, before.p, "between steps");
	free(before.p);
	return ok;
}

static bool
check_step(sim *s)
{
	const char *bad = ch_coord_cg_check(s->sh.cg);
	if (bad) {
		snprintf(s->why, sizeof s->why, "core: %s", bad);
		return false;
	}
	ch_coord_cg_group_view gv;
	if (ch_coord_cg_group_get(s->sh.cg, CH_STR_LIT("g"), &gv)) {
		if (gv.epoch < s->last_group_epoch) {
			snprintf(s->why, sizeof s->why, "group epoch went from %d to %d",
				 s->last_group_epoch, gv.epoch);
			return false;
		}
		s->last_group_epoch = gv.epoch;
	}
	for (int i = 0; i < MAXC; i++) {
		client *c = &s->c[i];
		if (!c->alive || !c->joined)
			continue;
		find_ctx f;
		if (!coord_member(s, c->member_id, &f))
			continue; /* fenced; it learns at its next heartbeat */
		/* KIP-1251: it may commit everything it believes it owns at the
		 * epoch it last heard, however far the coordinator moved on. */
		ch_coord_cg_commit_tp tps[2 * MAXP];
		int32_t ntps = 0;
		for (int k = 0; k < 2; k++) {
			const ch_coord_cg_tp *v = k ? c->revoke : c->owned;
			for (int32_t j = 0; j < (k ? c->nrevoke : c->nowned); j++)
				tps[ntps++] = (ch_coord_cg_commit_tp){
					v[j].topic, true, CH_STR_LIT("t"), v[j].partition};
		}
		char msg[256];
		int16_t ce = ch_coord_cg_validate_commit(s->sh.cg, CH_STR_LIT("g"),
							 ch_str_c(c->member_id), c->epoch, 9, tps,
							 ntps, msg, sizeof msg);
		if (ce) {
			snprintf(s->why, sizeof s->why,
				 "consumer %s at epoch %d may not commit: %d %s", c->member_id,
				 c->epoch, ce, msg);
			return false;
		}
		for (int k = 0; k < 2; k++) {
			const ch_coord_cg_tp *v = k ? c->revoke : c->owned;
			int32_t n = k ? c->nrevoke : c->nowned;
			for (int32_t j = 0; j < n; j++)
				if (!tps_has(f.held, f.nheld, &v[j])) {
					snprintf(s->why, sizeof s->why,
						 "consumer %s owns partition %d the coordinator "
						 "does "
						 "not hold for it",
						 c->member_id, v[j].partition);
					return false;
				}
		}
	}
	return true;
}

/* Every live consumer heartbeats on time with no faults until the group is
 * Stable and the consumers own exactly the subscribed partitions. */
static bool settled(sim *s);

static bool
settle(sim *s)
{
	s->calm = true;
	/* Long enough for every session and rebalance timeout to run out. */
	for (int round = 0; round < 400; round++) {
		s->now += 500;
		cg_shell_tick(&s->sh, s->now);
		for (int i = 0; i < MAXC; i++) {
			client *c = &s->c[i];
			if (!c->alive)
				continue;
			if (c->nrevoke && s->now >= c->revoke_at)
				c->nrevoke = 0;
			if (s->now >= c->next_hb && !client_heartbeat(s, c, false))
				return false;
		}
		if (!check_step(s))
			return false;
		if (round % 20 == 19 && settled(s))
			return true;
	}
	if (!settled(s))
		return false;
	return true;
}

/* Whether the group is as it must end (s->why says why not). */
static bool
settled(sim *s)
{
	for (int i = 0; i < MAXC; i++)
		if (s->c[i].alive && s->c[i].nrevoke) {
			snprintf(s->why, sizeof s->why, "consumer %s still revoking",
				 s->c[i].member_id);
			return false;
		}
	ch_coord_cg_group_view gv;
	if (!ch_coord_cg_group_get(s->sh.cg, CH_STR_LIT("g"), &gv))
		return true; /* nobody ever joined */
	int live = 0;
	for (int i = 0; i < MAXC; i++)
		live += s->c[i].alive;
	if (gv.members != live) {
		snprintf(s->why, sizeof s->why, "settled with %d members for %d live consumers",
			 gv.members, live);
		return false;
	}
	if (live && gv.state != CH_COORD_CG_STABLE) {
		snprintf(s->why, sizeof s->why, "not stable after settling: %s",
			 ch_coord_cg_state_name(gv.state));
		return false;
	}
	/* Each subscribed partition (by name or regex) is owned by exactly
	 * one consumer. */
	for (int t = 0; t < s->sh.ntopics; t++) {
		bool subscribed = false;
		for (int i = 0; i < MAXC; i++) {
			for (int k = 0; s->c[i].alive && k < s->c[i].ntopics; k++)
				subscribed |= s->c[i].topics[k] == t;
			if (s->c[i].alive && s->c[i].regex) {
				char err[64];
				const char *rx = s->c[i].regex, *name = s->sh.topics[t].name;
				ch_regex *re = ch_regex_compile(rx, strlen(rx), err, sizeof err);
				subscribed |= re && ch_regex_full_match(re, name, strlen(name));
				ch_regex_free(re);
			}
		}
		for (int32_t p = 0; p < s->sh.topics[t].partitions; p++) {
			ch_coord_cg_tp tp = {s->sh.topics[t].id, p};
			int owners = 0;
			for (int i = 0; i < MAXC; i++)
				owners += s->c[i].alive &&
					  tps_has(s->c[i].owned, s->c[i].nowned, &tp);
			if (owners != (subscribed ? 1 : 0)) {
				snprintf(s->why, sizeof s->why,
					 "topic %s partition %d owned by %d consumers after "
					 "settling",
					 s->sh.topics[t].name, p, owners);
				return false;
			}
		}
	}
	for (int i = 0; i < MAXC; i++) {
		client *c = &s->c[i];
		find_ctx f;
		if (c->alive && (!coord_member(s, c->member_id, &f) || f.nassigned != c->nowned ||
				 f.epoch != gv.epoch)) {
			snprintf(s->why, sizeof s->why,
				 "consumer %s: %d owned, coordinator %d at epoch %d (group %d)",
				 c->member_id, c->nowned, f.nassigned, f.epoch, gv.epoch);
			return false;
		}
	}
	return true;
}

static long total_restarts;

static bool
run(uint64_t seed, bool verbose, int *steps_out)
{
	sim s;
	memset(&s, 0, sizeof s);
	s.rng = seed * 0x2545f4914f6cdd1dull + 7;
	s.verbose = verbose;
	ch_coord_cg_config cfg;
	ch_coord_cg_config_defaults(&cfg);
	if (chance(&s, 30)) {
		cfg.assignors[0] = CH_ASSIGN_SERVER_RANGE;
		cfg.assignors[1] = CH_ASSIGN_SERVER_UNIFORM;
	}
	cfg.offsets_partitions = 1 + (int32_t)rnd(&s, 4);
	if (chance(&s, 50))
		cfg.regex_min_refresh_ms = (int32_t)rnd(&s, 10000);
	cg_shell_init(&s.sh, &cfg, seed);
	cg_shell_store_on(&s.sh);
	int ntopics = 1 + (int)rnd(&s, 3);
	for (int t = 0; t < ntopics; t++) {
		char name[8];
		snprintf(name, sizeof name, "t%d", t);
		cg_shell_add_topic(&s.sh, name, 1 + (int32_t)rnd(&s, 16));
	}
	s.nbase = ntopics;
	int nclients = 1 + (int)rnd(&s, MAXC);
	for (int i = 0; i < nclients; i++)
		if (chance(&s, 60))
			client_new(&s, &s.c[i], false);
	int steps = 200 + (int)rnd(&s, 600);
	bool ok = true;
	for (int step = 0; ok && step < steps; step++) {
		s.now += rnd(&s, 1500);
		cg_shell_tick(&s.sh, s.now);
		int i = (int)rnd(&s, (uint32_t)nclients);
		client *c = &s.c[i];
		uint32_t ev = rnd(&s, 100);
		if (!c->used || (!c->alive && ev < 30)) {
			/* a new consumer, or one restarting (static: same instance) */
			if (ev < 20 || !c->used)
				client_new(&s, c, c->used && c->instance[0] && chance(&s, 80));
		} else if (!c->alive) {
			/* stays down */
		} else if (ev < 3) {
			/* crash: silent from now on */
			c->alive = false;
		} else if (ev < 6 && c->joined) {
			/* graceful leave: -2 for a static member, else -1 */
			ch_ConsumerGroupHeartbeatRequest rq;
			ch_ConsumerGroupHeartbeatRequest_init(&rq);
			rq.GroupId = CH_STR_LIT("g");
			rq.MemberId = ch_str_c(c->member_id);
			rq.InstanceId = c->instance[0] ? ch_str_c(c->instance) : CH_STR_NULL;
			rq.MemberEpoch = c->instance[0] ? -2 : -1;
			rq.TopicPartitions_n = -1;
			rq.SubscribedTopicNames_n = -1;
			cg_shell_heartbeat(&s.sh, s.now, c->v0 ? 0 : 1, &rq);
			if (verbose)
				fprintf(stderr, "%8" PRId64 " leave %s epoch %d -> err %d\n", s.now,
					c->member_id, rq.MemberEpoch, s.sh.a.err);
			c->alive = false;
			client_forget(c);
		} else if (ev == 7 && chance(&s, 40)) {
			ok = restart(&s);
		} else if (ev == 8 && chance(&s, 40)) {
			if (c->nrevoke && s.now >= c->revoke_at)
				c->nrevoke = 0;
			ok = client_heartbeat_crash(&s, c, false, true);
		} else if (ev == 9 && chance(&s, 50)) {
			/* a regex topic created or deleted */
			char name[8];
			snprintf(name, sizeof name, "r%d", (int)rnd(&s, 4));
			bool gone = cg_shell_del_topic(&s.sh, name);
			if (!gone && s.sh.ntopics < CG_SHELL_TOPICS)
				cg_shell_add_topic(&s.sh, name, 1 + (int32_t)rnd(&s, 8));
			ch_coord_cg_metadata_changed(s.sh.cg);
			if (verbose)
				fprintf(stderr, "%8" PRId64 " topic %s %s\n", s.now, name,
					gone ? "deleted" : "created");
		} else if (ev < 7 && s.sh.topics[0].partitions < 40) {
			int t = (int)rnd(&s, (uint32_t)s.sh.ntopics);
			s.sh.topics[t].partitions += 1 + (int32_t)rnd(&s, 3);
			ch_coord_cg_metadata_changed(s.sh.cg);
			if (verbose)
				fprintf(stderr, "%8" PRId64 " topic %s now %d partitions\n", s.now,
					s.sh.topics[t].name, s.sh.topics[t].partitions);
		} else {
			if (c->nrevoke && s.now >= c->revoke_at)
				c->nrevoke = 0;
			if (s.now >= c->next_hb || chance(&s, 10))
				ok = client_heartbeat(&s, c, chance(&s, 5));
		}
		ok = ok && check_step(&s);
		s.steps++;
	}
	ok = ok && settle(&s);
	if (!ok)
		fprintf(stderr, "seed %" PRIu64 " failed at step %d (t=%" PRId64 "): %s\n", seed,
			s.steps, s.now, s.why);
	*steps_out = s.steps;
	total_restarts += s.restarts;
	cg_shell_free(&s.sh);
	return ok;
}

int
main(int argc, char **argv)
{
	uint64_t first = 1, n = 1000;
	bool verbose = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
			n = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--first") && i + 1 < argc)
			first = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			first = strtoull(argv[++i], NULL, 10), n = 1;
		else if (!strcmp(argv[i], "-v"))
			verbose = true;
		else {
			fprintf(stderr, "usage: %s [--seeds N] [--first S] [--seed S] [-v]\n",
				argv[0]);
			return 2;
		}
	}
	int failed = 0;
	long steps = 0;
	for (uint64_t seed = first; seed < first + n; seed++) {
		int st = 0;
		if (!run(seed, verbose, &st))
			failed++;
		steps += st;
		if (failed >= 5)
			break;
	}
	printf("%" PRIu64 " seeds, %ld steps, %ld coordinator restarts, %d failed\n", n, steps,
	       total_restarts, failed);
	return failed ? 1 : 0;
}
