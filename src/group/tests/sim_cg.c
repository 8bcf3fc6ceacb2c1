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
 * --offload: the core hands its target assignments to ops->assign_offload
 * (threshold 0-23 partitions, so small groups take the path; batched by
 * group.consumer.assignment.interval.ms in some seeds). Each job is an
 * event of its own, run and applied 0-6 s later with heartbeats, joins,
 * leaves, crashes and coordinator restarts (which lose the jobs in flight)
 * in between. Checked: one job per group at a time, none while the target
 * is current; a job done never moves the group epoch; a result applies only
 * at its epoch (else the assignment epoch stays); and a group still behind
 * afterwards has a new job in flight (unless batched).
 *
 * --classic: 40% of the consumers are classic members (JoinGroup,
 * SyncGroup, Heartbeat, LeaveGroup; the seed picks cooperative-sticky or
 * range for all of them, some also offer the other): dynamic ones learn
 * their member id through MEMBER_ID_REQUIRED, static ones restart under
 * their instance id (replacing their predecessor), some are slow to sync
 * or rejoin (the sync and join timers), answers are lost, the coordinator
 * is killed with a classic request's records in flight. A cooperative
 * member lists what it owns in its JoinGroup and gives up what its
 * SyncGroup leaves out (then rejoins); an eager one owns nothing once it
 * rejoins. Checked as for consumers: what it believes it owns is held for
 * it (assigned or pending revocation, so no partition is owned by two
 * members of either kind), its generation never goes down, it may commit
 * at its generation; at the end it is synced at the group epoch. One that
 * was fenced without knowing (a timer) is not checked until its next
 * SyncGroup. A JoinGroup to a group without members would go to the classic
 * core (not simulated, nor upgrade and downgrade: test_cg_classic): the
 * member drops what it had and waits outside until the group has members.
 *
 *   group_sim_cg [--offload] [--classic] --seeds N [--first S] [--extra S1,S2] [-v]
 *   group_sim_cg [--offload] [--classic] --seed S -v      (replays one seed)
 */
#include <inttypes.h>

#include "assign/ch_assign_proto.h"
#include "cg_shell.h"
#include "proto/generated/ch_api_keys.h"
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
	int topics[3];     /* of the first nbase topics (those are never deleted) */
	int ntopics;
	const char *regex;    /* SubscribedTopicRegex, NULL: names only */
	const char *assignor; /* NULL, "uniform", "range" */
	int restarts;
	/* A classic member (--classic): JoinGroup, SyncGroup, Heartbeat,
	 * LeaveGroup; its epoch is its generation, its rebalance is
	 * cooperative or eager as the seed's protocol. */
	bool classic;
	int cstate;         /* CL_JOIN, CL_SYNC, CL_STABLE */
	bool two_protocols; /* sends the other protocol too, second */
	int32_t session_timeout;
	int64_t sync_at; /* when it sends its SyncGroup (late: the sync timer) */
	/* Fenced without knowing it: what it believes it owns is not checked
	 * until its next SyncGroup (a zombie's, as with the classic core). */
	bool zombie;
	bool join_lost; /* its last JoinGroup's answer: it is in a rebalance */
} client;

enum {
	CL_JOIN,
	CL_SYNC,
	CL_STABLE
};
/* A classic request's answer lost, or the coordinator killed while its
 * records are not durable yet (then restarted). */
enum {
	CF_NONE,
	CF_LOSE,
	CF_CRASH
};

/* A target assignment computed away from the core (--offload): done at
 * `due`, whatever happened to the group meanwhile. */
typedef struct job_ev {
	ch_coord_cg_assign_job *job;
	int64_t due;
	int32_t epoch; /* the group epoch it was taken at */
} job_ev;

#define MAXJOBS 4

typedef struct sim {
	cg_shell sh; /* first: the core's ops->ud is the sim */
	uint64_t rng;
	int64_t now;
	client c[MAXC];
	int nbase; /* topics t0.. of the start; r0-r3 come and go after them */
	int32_t last_group_epoch;
	bool verbose;
	bool calm; /* the final phase: no faults */
	int steps;
	int restarts;
	bool offload;
	bool classic; /* classic members beside the consumer-protocol ones */
	bool eager;   /* the classic members' protocol: range, else cooperative-sticky */
	int cfault;   /* for the next classic request: CF_LOSE, CF_CRASH */
	job_ev jobs[MAXJOBS];
	int njobs;
	char job_why[256]; /* a wrong offload call, noticed inside the core's call */
	char why[16384];
} sim;

typedef struct totals {
	long restarts, offloaded, stale, applied;
	long cjoins, csyncs, crejoins; /* classic JoinGroups, SyncGroups, REBALANCE_IN_PROGRESS */
} totals;
static totals total;

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

/* ---- offloaded target assignments (--offload) ------------------------------ */

static void
sim_offload(void *ud, ch_coord_cg_assign_job *job)
{
	sim *s = ud;
	ch_coord_cg_group_view gv;
	if (s->njobs == MAXJOBS || !ch_coord_cg_group_get(s->sh.cg, CH_STR_LIT("g"), &gv)) {
		ch_coord_cg_assign_job_free(job);
		snprintf(s->job_why, sizeof s->job_why,
			 "a job offloaded with %d in flight, or for no group", s->njobs);
		return;
	}
	/* One job per group at a time (the core picks changes up at its end). */
	if (s->njobs)
		snprintf(s->job_why, sizeof s->job_why,
			 "a second job offloaded for epoch %d while epoch %d's runs", gv.epoch,
			 s->jobs[0].epoch);
	if (gv.epoch <= gv.assignment_epoch)
		snprintf(s->job_why, sizeof s->job_why,
			 "a job offloaded at epoch %d, assignment epoch %d", gv.epoch,
			 gv.assignment_epoch);
	s->jobs[s->njobs++] = (job_ev){job, s->now + (int64_t)rnd(s, 6000), gv.epoch};
	total.offloaded++;
	if (s->verbose)
		fprintf(stderr,
			"%8" PRId64 " offload epoch %d (assignment epoch %d), due %" PRId64 "\n",
			s->now, gv.epoch, gv.assignment_epoch, s->jobs[s->njobs - 1].due);
}

/* A kill -9 loses the jobs in flight with the core. */
static void
jobs_drop(sim *s)
{
	for (int i = 0; i < s->njobs; i++)
		ch_coord_cg_assign_job_free(s->jobs[i].job);
	s->njobs = 0;
}

static void
restart_core(sim *s)
{
	jobs_drop(s);
	cg_shell_restart(&s->sh, s->now);
	s->restarts++;
}

/* The jobs due by now run and are applied, oldest first. A result for the
 * epoch the group is still at becomes its target; a stale one changes
 * nothing, and the group, still behind, has a new job (or computed it at
 * once: its partitions fell below the threshold). */
static bool
jobs_deliver(sim *s)
{
	while (s->njobs && s->jobs[0].due <= s->now) {
		job_ev j = s->jobs[0];
		memmove(&s->jobs[0], &s->jobs[1], (size_t)--s->njobs * sizeof *s->jobs);
		ch_coord_cg_group_view before, after;
		bool had = ch_coord_cg_group_get(s->sh.cg, CH_STR_LIT("g"), &before);
		ch_coord_cg_assign_job_run(j.job);
		ch_coord_cg_assign_job_done(s->sh.cg, s->now, j.job);
		if (s->sh.store && !s->sh.hold)
			cg_shell_complete(&s->sh, 0);
		if (s->job_why[0]) {
			snprintf(s->why, sizeof s->why, "%s", s->job_why);
			return false;
		}
		bool has = ch_coord_cg_group_get(s->sh.cg, CH_STR_LIT("g"), &after);
		if (s->verbose)
			fprintf(stderr,
				"%8" PRId64 " job for epoch %d done: group epoch %d, assignment "
				"epoch %d -> %d\n",
				s->now, j.epoch, had ? before.epoch : -1,
				had ? before.assignment_epoch : -1,
				has ? after.assignment_epoch : -1);
		if (!had)
			continue; /* gone: dropped */
		if (!has) {
			snprintf(s->why, sizeof s->why, "the job for epoch %d removed the group",
				 j.epoch);
			return false;
		}
		bool stale = j.epoch != before.epoch;
		total.stale += stale;
		if (after.assignment_epoch == before.epoch && !stale)
			total.applied++;
		if (after.epoch != before.epoch ||
		    (after.assignment_epoch != before.assignment_epoch &&
		     after.assignment_epoch != before.epoch)) {
			snprintf(s->why, sizeof s->why,
				 "the job for epoch %d at group epoch %d moved it to epoch %d, "
				 "assignment epoch %d -> %d",
				 j.epoch, before.epoch, after.epoch, before.assignment_epoch,
				 after.assignment_epoch);
			return false;
		}
		/* (batched: a timer may hold the next one back) */
		if (after.assignment_epoch < after.epoch && !s->njobs &&
		    !s->sh.cfg.assignment_interval_ms) {
			snprintf(s->why, sizeof s->why,
				 "the %s job for epoch %d left group epoch %d at assignment "
				 "epoch %d with no job in flight",
				 stale ? "stale" : "current", j.epoch, after.epoch,
				 after.assignment_epoch);
			return false;
		}
	}
	return true;
}

/* ---- consumers ------------------------------------------------------------ */

static void
client_forget(client *c)
{
	c->nowned = 0;
	c->nrevoke = 0;
	c->joined = false;
	c->epoch = 0;
	c->cstate = CL_JOIN;
	c->zombie = c->join_lost = false;
}

static void
client_new(sim *s, client *c, bool keep_instance)
{
	char inst[16];
	memcpy(inst, c->instance, sizeof inst);
	int restarts = c->restarts;
	bool was_classic = c->classic;
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
	if (s->classic && (keep_instance ? was_classic : chance(s, 40))) {
		/* names only; a member id comes from the coordinator */
		c->classic = true;
		c->regex = NULL;
		c->assignor = NULL;
		c->v0 = false;
		c->member_id[0] = 0;
		int k = 0; /* distinct names, as a consumer sends them */
		for (int i = 0; i < c->ntopics; i++) {
			bool dup = false;
			for (int j = 0; j < k; j++)
				dup |= c->topics[j] == c->topics[i];
			if (!dup)
				c->topics[k++] = c->topics[i];
		}
		c->ntopics = k ? k : 1;
		c->two_protocols = chance(s, 40);
		c->session_timeout = 6000 + (int32_t)rnd(s, 40000);
		c->cstate = CL_JOIN;
	}
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
			restart_core(s);
			bool ok = restart_check(s, before.p,
						"after a crash with an append in flight");
			free(before.p);
			return ok;
		}
		free(before.p);
		/* Answered at once (it wrote nothing): killed right after. */
		cg_shell_digest after;
		cg_shell_digest_group(&s->sh, "g", &after);
		restart_core(s);
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

/* ---- classic members (--classic) ------------------------------------------ */

/* The answer to one classic request (the shell hands it here). */
typedef struct classic_ans {
	const cg_shell *sh;
	int16_t key;
	int answered;
	int16_t err;
	int32_t generation;
	char member_id[64];
	char protocol[32];
	ch_coord_cg_tp tps[MAXP]; /* SyncGroup's assignment, by topic id, sorted */
	int32_t ntps;
	bool bad;  /* the assignment did not parse or names a topic not there */
	bool lost; /* never reached the client (it tries again) */
} classic_ans;

static void
classic_answer(void *token, const void *resp)
{
	classic_ans *a = token;
	a->answered++;
	switch (a->key) {
	case CH_APIKEY_JOIN_GROUP: {
		const ch_JoinGroupResponse *r = resp;
		a->err = r->ErrorCode;
		a->generation = r->GenerationId;
		cg_shell_copy_str(a->member_id, sizeof a->member_id, r->MemberId);
		cg_shell_copy_str(a->protocol, sizeof a->protocol, r->ProtocolName);
		break;
	}
	case CH_APIKEY_SYNC_GROUP: {
		const ch_SyncGroupResponse *r = resp;
		a->err = r->ErrorCode;
		if (a->err)
			break;
		ch_arena ar;
		ch_arena_init(&ar);
		ch_assign_assignment asg;
		if (ch_assign_assignment_decode(r->Assignment.p, (size_t)r->Assignment.len, &ar,
						&asg) != CH_OK) {
			a->bad = true;
			ch_arena_reset(&ar);
			break;
		}
		for (int32_t i = 0; i < asg.m.AssignedPartitions_n; i++) {
			const ch_ConsumerProtocolAssignment_TopicPartition *t =
				&asg.m.AssignedPartitions[i];
			ch_coord_cg_topic topic;
			if (!cg_shell_topic_cb((void *)a->sh, t->Topic, &topic)) {
				a->bad = true;
				continue;
			}
			for (int32_t k = 0; k < t->Partitions_n && a->ntps < MAXP; k++)
				a->tps[a->ntps++] = (ch_coord_cg_tp){topic.id, t->Partitions[k]};
		}
		qsort(a->tps, (size_t)a->ntps, sizeof *a->tps, tp_cmp);
		ch_arena_reset(&ar);
		break;
	}
	case CH_APIKEY_HEARTBEAT:
		a->err = ((const ch_HeartbeatResponse *)resp)->ErrorCode;
		break;
	default: {
		const ch_LeaveGroupResponse *r = resp;
		a->err = r->ErrorCode;
		if (!a->err && r->Members_n > 0)
			a->err = r->Members[0].ErrorCode;
		break;
	}
	}
}

/* One classic request of c, answered exactly once (appends completed), or
 * a->lost (s->cfault). */
static bool
classic_send(sim *s, client *c, ch_coord_cg_request_fn *fn, int16_t key, int16_t version,
	     const void *body, classic_ans *a)
{
	int fault = s->cfault;
	s->cfault = CF_NONE;
	memset(a, 0, sizeof *a);
	a->sh = &s->sh;
	a->key = key;
	ch_coord_req req = {.now = s->now,
			    .token = a,
			    .version = version,
			    .body = body,
			    .client_id = CH_STR_LIT("classic"),
			    .client_host = "/127.0.0.1"};
	s->sh.now = s->now;
	cg_shell_digest before = {0};
	if (fault == CF_CRASH) {
		cg_shell_digest_group(&s->sh, "g", &before);
		s->sh.hold = true;
	}
	fn(s->sh.cg, &req);
	if (fault == CF_CRASH) {
		/* Answered at once: it wrote nothing. Else killed before its
		 * records were durable: as if it never came. */
		s->sh.hold = false;
		cg_shell_digest after = {0};
		if (a->answered)
			cg_shell_digest_group(&s->sh, "g", &after);
		if (s->verbose)
			fprintf(stderr,
				"%8" PRId64 " crash %s a classic request's records were durable\n",
				s->now, a->answered ? "after" : "before");
		restart_core(s);
		bool ok = restart_check(s, a->answered ? after.p : before.p,
					a->answered
						? "after a classic answer that wrote nothing"
						: "after a crash with a classic append in flight");
		free(before.p);
		free(after.p);
		if (!ok)
			return false;
		if (!a->answered) {
			a->lost = true;
			return true;
		}
	} else if (s->sh.store && !s->sh.hold) {
		cg_shell_complete(&s->sh, 0);
	}
	static const char *const names[] = {[CH_APIKEY_JOIN_GROUP] = "join",
					    [CH_APIKEY_SYNC_GROUP] = "sync",
					    [CH_APIKEY_HEARTBEAT] = "heartbeat",
					    [CH_APIKEY_LEAVE_GROUP] = "leave"};
	if (s->verbose)
		fprintf(stderr,
			"%8" PRId64 " classic %s %s%s%s gen %d owned %d -> err %d gen %d%s%s\n",
			s->now, names[key], c->member_id[0] ? c->member_id : "(new)",
			c->instance[0] ? "/" : "", c->instance, c->epoch, c->nowned, a->err,
			a->generation,
			key == CH_APIKEY_SYNC_GROUP && !a->err ? " (assignment)" : "",
			fault == CF_LOSE ? " (lost)" : "");
	if (a->answered != 1) {
		snprintf(s->why, sizeof s->why, "classic %s of %s answered %d times", names[key],
			 c->member_id, a->answered);
		return false;
	}
	a->lost = fault == CF_LOSE;
	return true;
}

static const char *
classic_protocol(const sim *s, int k)
{
	return (k == 0) == s->eager ? "range" : "cooperative-sticky";
}

/* Whether the consumer group has members: a classic JoinGroup goes to it
 * then, else to the classic core (not simulated: the member waits). */
static bool
group_has_members(const sim *s)
{
	ch_coord_cg_group_view gv;
	return ch_coord_cg_group_get(s->sh.cg, CH_STR_LIT("g"), &gv) && gv.members > 0;
}

static bool
classic_join(sim *s, client *c)
{
	find_ctx f;
	if (c->joined && !coord_member(s, c->member_id, &f))
		c->zombie = true; /* fenced (a timer) and does not know */
	if (s->eager)
		c->nowned = 0; /* revoked everything before joining */
	ch_str topics[3];
	for (int i = 0; i < c->ntopics; i++)
		topics[i] = ch_str_c(s->sh.topics[c->topics[i]].name);
	/* What it owns, by topic name (cooperative; eager lists nothing). */
	ch_assign_tplist own[CG_SHELL_TOPICS];
	int32_t parts[MAXP];
	int32_t nown = 0;
	for (int32_t i = 0; i < c->nowned; i++) {
		const ch_coord_cg_tp *tp = &c->owned[i];
		if (i == 0 || !ch_uuid_eq(&tp->topic, &c->owned[i - 1].topic)) {
			const char *name = "?";
			for (int t = 0; t < s->sh.ntopics; t++)
				if (ch_uuid_eq(&s->sh.topics[t].id, &tp->topic))
					name = s->sh.topics[t].name;
			own[nown++] = (ch_assign_tplist){ch_str_c(name), parts + i, 0};
		}
		parts[i] = tp->partition;
		own[nown - 1].n++;
	}
	ch_buf md[2];
	ch_JoinGroupRequest_JoinGroupRequestProtocol protos[2];
	int nprotos = c->two_protocols ? 2 : 1;
	for (int k = 0; k < nprotos; k++) {
		bool range = strcmp(classic_protocol(s, k), "range") == 0;
		ch_buf_init(&md[k]);
		ch_assign_member_metadata(
			&md[k], range ? CH_ASSIGN_RANGE : CH_ASSIGN_COOPERATIVE_STICKY, 3, topics,
			c->ntopics, own, nown, c->joined ? c->epoch : -1, CH_STR_NULL);
		protos[k] = (ch_JoinGroupRequest_JoinGroupRequestProtocol){
			ch_str_c(classic_protocol(s, k)), {md[k].data, (int32_t)md[k].len}};
	}
	ch_JoinGroupRequest rq;
	ch_JoinGroupRequest_init(&rq);
	rq.GroupId = CH_STR_LIT("g");
	rq.SessionTimeoutMs = c->session_timeout;
	rq.RebalanceTimeoutMs = c->rebalance_timeout;
	rq.GroupInstanceId = c->instance[0] ? ch_str_c(c->instance) : CH_STR_NULL;
	rq.ProtocolType = CH_STR_LIT("consumer");
	rq.Protocols = protos;
	rq.Protocols_n = nprotos;
	classic_ans a;
	bool ok = true;
	for (int tries = 0; ok && tries < 2; tries++) {
		rq.MemberId = ch_str_c(c->member_id);
		ok = classic_send(s, c, ch_coord_cg_classic_join, CH_APIKEY_JOIN_GROUP, 9, &rq, &a);
		if (!ok || a.lost || a.err != CH_KERR_MEMBER_ID_REQUIRED)
			break;
		snprintf(c->member_id, sizeof c->member_id, "%s", a.member_id);
	}
	for (int k = 0; k < nprotos; k++)
		ch_buf_free(&md[k]);
	if (!ok)
		return false;
	if (a.lost) {
		c->next_hb = s->now + 1000; /* its request timed out: again */
		c->join_lost = true;
		return true;
	}
	c->join_lost = false;
	if (a.err) {
		snprintf(s->why, sizeof s->why, "classic join of %s: unexpected error %d",
			 c->member_id, a.err);
		return false;
	}
	if (strcmp(a.protocol, classic_protocol(s, 0)) != 0) {
		snprintf(s->why, sizeof s->why, "classic join of %s: protocol %s, sent %s first",
			 c->member_id, a.protocol, classic_protocol(s, 0));
		return false;
	}
	if (c->joined && !c->zombie && strcmp(c->member_id, a.member_id) == 0 &&
	    a.generation < c->epoch) {
		snprintf(s->why, sizeof s->why, "classic member %s generation went from %d to %d",
			 c->member_id, c->epoch, a.generation);
		return false;
	}
	total.cjoins++;
	snprintf(c->member_id, sizeof c->member_id, "%s", a.member_id);
	c->epoch = a.generation;
	c->joined = true;
	c->cstate = CL_SYNC;
	bool slow = !s->calm && chance(s, 10);
	c->sync_at = s->now + (slow ? (int64_t)rnd(s, (uint32_t)c->rebalance_timeout * 2) : 0);
	return true;
}

/* c's answer lost its generation (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID):
 * its partitions are lost, it joins again (a new member id if unknown). */
static void
classic_lost(client *c, int16_t err)
{
	client_forget(c);
	if (err == CH_KERR_UNKNOWN_MEMBER_ID)
		c->member_id[0] = 0;
}

/* An error any classic request may meet; false (s->why) if unexpected. */
static bool
classic_error(sim *s, client *c, int16_t err, const char *what)
{
	switch (err) {
	case CH_KERR_REBALANCE_IN_PROGRESS:
		total.crejoins++;
		c->cstate = CL_JOIN;
		/* Slow to rejoin now and then: its join timer fences it. */
		c->next_hb = s->now + (!s->calm && chance(s, 10)
					       ? (int64_t)rnd(s, (uint32_t)c->rebalance_timeout * 2)
					       : 0);
		return true;
	case CH_KERR_ILLEGAL_GENERATION:
	case CH_KERR_UNKNOWN_MEMBER_ID:
		classic_lost(c, err);
		return true;
	case CH_KERR_FENCED_INSTANCE_ID:
		/* Another incarnation has its instance id: fatal to a client. */
		c->alive = false;
		client_forget(c);
		return true;
	default:
		snprintf(s->why, sizeof s->why, "classic %s of %s: unexpected error %d", what,
			 c->member_id, err);
		return false;
	}
}

static bool
classic_sync(sim *s, client *c)
{
	ch_SyncGroupRequest rq;
	ch_SyncGroupRequest_init(&rq);
	rq.GroupId = CH_STR_LIT("g");
	rq.GenerationId = c->epoch;
	rq.MemberId = ch_str_c(c->member_id);
	rq.GroupInstanceId = c->instance[0] ? ch_str_c(c->instance) : CH_STR_NULL;
	rq.ProtocolType = CH_STR_LIT("consumer");
	rq.ProtocolName = ch_str_c(classic_protocol(s, 0));
	rq.Assignments_n = 0;
	classic_ans a;
	if (!classic_send(s, c, ch_coord_cg_classic_sync, CH_APIKEY_SYNC_GROUP, 5, &rq, &a))
		return false;
	if (a.lost) {
		c->sync_at = s->now + 1000;
		return true;
	}
	if (a.err)
		return classic_error(s, c, a.err, "sync");
	if (a.bad) {
		snprintf(s->why, sizeof s->why, "classic sync of %s: a bad assignment",
			 c->member_id);
		return false;
	}
	total.csyncs++;
	/* Owned from now on: the assignment. A cooperative member that had
	 * to let go of some rejoins at once (Java's ConsumerCoordinator). */
	bool revoked = false;
	for (int32_t i = 0; i < c->nowned; i++)
		revoked |= !tps_has(a.tps, a.ntps, &c->owned[i]);
	memcpy(c->owned, a.tps, (size_t)a.ntps * sizeof *a.tps);
	c->nowned = a.ntps;
	c->zombie = false;
	c->cstate = revoked && !s->eager ? CL_JOIN : CL_STABLE;
	c->next_hb = s->now + (c->cstate == CL_JOIN ? 0 : CH_MIN(3000, c->session_timeout / 3));
	return true;
}

static bool
classic_beat(sim *s, client *c)
{
	ch_HeartbeatRequest rq;
	ch_HeartbeatRequest_init(&rq);
	rq.GroupId = CH_STR_LIT("g");
	rq.GenerationId = c->epoch;
	rq.MemberId = ch_str_c(c->member_id);
	rq.GroupInstanceId = c->instance[0] ? ch_str_c(c->instance) : CH_STR_NULL;
	classic_ans a;
	if (!classic_send(s, c, ch_coord_cg_classic_heartbeat, CH_APIKEY_HEARTBEAT, 4, &rq, &a))
		return false;
	c->next_hb = s->now + CH_MIN(3000, c->session_timeout / 3);
	return a.err && !a.lost ? classic_error(s, c, a.err, "heartbeat") : true;
}

/* What c does now: join, sync or heartbeat, as many as follow at once. */
static bool
classic_step(sim *s, client *c)
{
	for (int k = 0; k < 4 && c->alive; k++) {
		if (c->cstate == CL_JOIN) {
			if (s->now < c->next_hb)
				return true;
			if (!group_has_members(s)) {
				/* Its JoinGroup would go to the classic core (a
				 * classic group of its own): what it had is gone. */
				classic_lost(c, CH_KERR_UNKNOWN_MEMBER_ID);
				c->next_hb = s->now + 1000;
				return true;
			}
			if (!classic_join(s, c))
				return false;
		} else if (c->cstate == CL_SYNC) {
			if (s->now < c->sync_at)
				return true;
			if (!classic_sync(s, c))
				return false;
		} else {
			if (s->now < c->next_hb)
				return true;
			int state = c->cstate;
			if (!classic_beat(s, c))
				return false;
			if (c->cstate == state)
				return true;
		}
	}
	return true;
}

/* LeaveGroup (a dynamic member's close; a static one's with its instance
 * id, as an admin's removal or KIP-345's close would). */
static bool
classic_leave(sim *s, client *c)
{
	ch_LeaveGroupRequest_MemberIdentity id = {
		ch_str_c(c->member_id), c->instance[0] ? ch_str_c(c->instance) : CH_STR_NULL,
		CH_STR_NULL};
	ch_LeaveGroupRequest rq;
	ch_LeaveGroupRequest_init(&rq);
	rq.GroupId = CH_STR_LIT("g");
	rq.Members = &id;
	rq.Members_n = 1;
	classic_ans a;
	if (!classic_send(s, c, ch_coord_cg_classic_leave, CH_APIKEY_LEAVE_GROUP, 5, &rq, &a))
		return false;
	c->alive = false;
	client_forget(c);
	return true;
}

/* ---- checks ---------------------------------------------------------------- */

static int
line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The digest d with its member lines sorted (free it): a replay makes the
 * members in the order their records were last written (a classic
 * member's at each JoinGroup: its protocols carry its owned partitions),
 * not their join order; neither Kafka nor the core gives it a meaning. */
static char *
digest_sorted(const char *d)
{
	size_t len = strlen(d);
	char *copy = malloc(len + 1), *out = malloc(len + 1);
	memcpy(copy, d, len + 1);
	char *lines[4 * MAXC + 8];
	size_t n = 0;
	for (char *p = strtok(copy, "\n"); p && n < sizeof lines / sizeof *lines;
	     p = strtok(NULL, "\n"))
		lines[n++] = p;
	if (n > 1)
		qsort(lines + 1, n - 1, sizeof *lines, line_cmp);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(lines[i]);
		memcpy(out + k, lines[i], l);
		k += l;
		if (i + 1 < n)
			out[k++] = '\n';
	}
	out[k] = 0;
	free(copy);
	return out;
}

/* The group after a restart must be `want` (a digest taken before). */
static bool
restart_check(sim *s, const char *want, const char *how)
{
	cg_shell_digest now;
	cg_shell_digest_group(&s->sh, "g", &now);
	char *a = digest_sorted(now.p), *b = digest_sorted(want);
	bool same = strcmp(a, b) == 0;
	free(a);
	free(b);
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
	restart_core(s);
	bool ok = restart_check(s, before.p, "between steps");
	free(before.p);
	return ok;
}

static bool
check_step(sim *s)
{
	if (s->job_why[0]) {
		snprintf(s->why, sizeof s->why, "%s", s->job_why);
		return false;
	}
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
		if (!coord_member(s, c->member_id, &f)) {
			c->zombie = c->classic; /* until its next SyncGroup */
			continue;               /* fenced; it learns at its next heartbeat */
		}
		if (c->zombie)
			continue;                /* rejoined, not synced yet */
		bool may_commit = !c->join_lost; /* else its generation may be behind */
		/* KIP-1251: it may commit everything it believes it owns at the
		 * epoch it last heard, however far the coordinator moved on (a
		 * classic member: at its generation, its member epoch). */
		ch_coord_cg_commit_tp tps[2 * MAXP];
		int32_t ntps = 0;
		for (int k = 0; k < 2; k++) {
			const ch_coord_cg_tp *v = k ? c->revoke : c->owned;
			for (int32_t j = 0; j < (k ? c->nrevoke : c->nowned); j++)
				tps[ntps++] = (ch_coord_cg_commit_tp){
					v[j].topic, true, CH_STR_LIT("t"), v[j].partition};
		}
		char msg[256];
		int16_t ce = !may_commit ? 0
					 : ch_coord_cg_validate_commit(s->sh.cg, CH_STR_LIT("g"),
								       ch_str_c(c->member_id),
								       c->epoch, c->classic ? 8 : 9,
								       tps, ntps, msg, sizeof msg);
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

/* What c does at its turn (a consumer: its heartbeat when due). */
static bool
client_act(sim *s, client *c)
{
	if (c->classic)
		return classic_step(s, c);
	return s->now < c->next_hb || client_heartbeat(s, c, false);
}

static bool
settle(sim *s)
{
	s->calm = true;
	/* Long enough for every session and rebalance timeout to run out. */
	for (int round = 0; round < 400; round++) {
		s->now += 500;
		cg_shell_tick(&s->sh, s->now);
		if (!jobs_deliver(s))
			return false;
		for (int i = 0; i < MAXC; i++) {
			client *c = &s->c[i];
			if (!c->alive)
				continue;
			if (c->nrevoke && s->now >= c->revoke_at)
				c->nrevoke = 0;
			if (!client_act(s, c))
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
	/* Classic members wait outside a group without members (their
	 * JoinGroup would make a classic group: not simulated). */
	bool outside[MAXC] = {0};
	int live = 0;
	for (int i = 0; i < MAXC; i++) {
		client *c = &s->c[i];
		if (c->alive && c->classic && gv.members == 0) {
			if (c->cstate != CL_JOIN || c->nowned) {
				snprintf(s->why, sizeof s->why,
					 "classic %s owns %d outside the empty group", c->member_id,
					 c->nowned);
				return false;
			}
			outside[i] = true;
		} else if (c->alive && c->classic && c->cstate != CL_STABLE) {
			snprintf(s->why, sizeof s->why, "classic %s not synced after settling",
				 c->member_id);
			return false;
		}
		live += c->alive && !outside[i];
	}
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
			if (outside[i])
				continue;
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
		if (c->alive && !outside[i] &&
		    (!coord_member(s, c->member_id, &f) || f.nassigned != c->nowned ||
		     f.epoch != gv.epoch)) {
			snprintf(s->why, sizeof s->why,
				 "consumer %s: %d owned, coordinator %d at epoch %d (group %d)",
				 c->member_id, c->nowned, f.nassigned, f.epoch, gv.epoch);
			return false;
		}
	}
	return true;
}

typedef struct mode {
	bool offload, classic;
} mode;

static bool
run(uint64_t seed, const mode *md, bool verbose, int *steps_out)
{
	sim s;
	memset(&s, 0, sizeof s);
	s.rng = seed * 0x2545f4914f6cdd1dull + 7;
	s.verbose = verbose;
	s.offload = md->offload;
	s.classic = md->classic;
	ch_coord_cg_config cfg;
	ch_coord_cg_config_defaults(&cfg);
	if (chance(&s, 30)) {
		cfg.assignors[0] = CH_ASSIGN_SERVER_RANGE;
		cfg.assignors[1] = CH_ASSIGN_SERVER_UNIFORM;
	}
	cfg.offsets_partitions = 1 + (int32_t)rnd(&s, 4);
	if (chance(&s, 50))
		cfg.regex_min_refresh_ms = (int32_t)rnd(&s, 10000);
	if (s.offload) { /* small groups take the path too; batched sometimes */
		cfg.assignor_offload_min_partitions = (int32_t)rnd(&s, 24);
		if (chance(&s, 30))
			cfg.assignment_interval_ms = 1 + (int32_t)rnd(&s, 3000);
	}
	cg_shell_init(&s.sh, &cfg, seed);
	if (s.offload) {
		s.sh.ops.assign_offload = sim_offload;
	}
	cg_shell_store_on(&s.sh);
	if (s.classic) {
		s.eager = chance(&s, 40);
		s.sh.other = classic_answer;
	}
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
		if (!jobs_deliver(&s)) {
			ok = false;
			break;
		}
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
		} else if (ev < 6 && c->joined && c->classic) {
			if (c->instance[0] && chance(&s, 50)) {
				c->alive = false; /* a static member just stops */
			} else {
				ok = classic_leave(&s, c);
			}
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
		} else if (ev == 8 && c->classic && chance(&s, 40)) {
			s.cfault = CF_CRASH;
			ok = classic_step(&s, c);
			s.cfault = CF_NONE;
		} else if (ev == 8 && !c->classic && chance(&s, 40)) {
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
			if (c->classic) {
				s.cfault = chance(&s, 5) ? CF_LOSE : CF_NONE;
				ok = classic_step(&s, c);
				s.cfault = CF_NONE;
			} else if (s.now >= c->next_hb || chance(&s, 10))
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
	total.restarts += s.restarts;
	jobs_drop(&s);
	cg_shell_free(&s.sh);
	return ok;
}

int
main(int argc, char **argv)
{
	uint64_t first = 1, n = 1000;
	uint64_t extra[64];
	int nextra = 0;
	mode md = {0};
	bool verbose = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
			n = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--first") && i + 1 < argc)
			first = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			first = strtoull(argv[++i], NULL, 10), n = 1;
		else if (!strcmp(argv[i], "--extra") && i + 1 < argc)
			for (char *p = argv[++i]; *p && nextra < 64;) {
				extra[nextra++] = strtoull(p, &p, 10);
				if (*p == ',')
					p++;
			}
		else if (!strcmp(argv[i], "--offload"))
			md.offload = true;
		else if (!strcmp(argv[i], "--classic"))
			md.classic = true;
		else if (!strcmp(argv[i], "-v"))
			verbose = true;
		else {
			fprintf(stderr,
				"usage: %s [--offload] [--classic] [--seeds N] [--first S] [--seed "
				"S] "
				"[--extra S1,S2...] [-v]\n",
				argv[0]);
			return 2;
		}
	}
	int failed = 0;
	long steps = 0;
	uint64_t ran = 0;
	for (uint64_t k = 0; k < n + (uint64_t)nextra; k++) {
		uint64_t seed = k < n ? first + k : extra[k - n];
		if (k >= n && seed >= first && seed < first + n)
			continue; /* an extra seed the range ran already */
		int st = 0;
		ran++;
		if (!run(seed, &md, verbose, &st))
			failed++;
		steps += st;
		if (failed >= 5)
			break;
	}
	printf("%" PRIu64 " seeds, %ld steps, %ld coordinator restarts", ran, steps,
	       total.restarts);
	if (md.offload)
		printf(", %ld jobs offloaded (%ld applied, %ld stale)", total.offloaded,
		       total.applied, total.stale);
	if (md.classic)
		printf(", classic members: %ld joins, %ld syncs, %ld told to rejoin", total.cjoins,
		       total.csyncs, total.crejoins);
	printf(", %d failed\n", failed);
	return failed ? 1 : 0;
}
