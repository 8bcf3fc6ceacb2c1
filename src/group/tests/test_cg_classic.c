/*
 * test_cg_classic.c: classic members (JoinGroup/SyncGroup/Heartbeat/
 * LeaveGroup) inside a consumer group (ch_coord_cg_classic_*), beside
 * consumer-protocol members: Kafka 4.x's answers, revocation acknowledged
 * by the rejoin, their timers, commits, and their records across a restart;
 * the online upgrade of a classic group and the downgrade of a consumer group.
 */
#include "assign/ch_assign_proto.h"
#include "cg_shell.h"
#include "common/ch_test.h"
#include "proto/generated/ch_api_keys.h"

/* The answer to one classic request. */
typedef struct cap {
	int16_t key;
	int answered;
	int16_t err;
	int32_t generation;
	char member_id[64];
	char protocol[32];
	bool has_protocol;
	int16_t asg_version;
	int32_t parts[64]; /* the SyncGroup assignment's partitions of "t", sorted */
	int32_t nparts;
	int16_t member_errs[4];
	int32_t nmembers;
} cap;

static int
i32_cmp(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return x < y ? -1 : x > y;
}

static void
on_answer(void *token, const void *resp)
{
	cap *c = token;
	c->answered++;
	switch (c->key) {
	case CH_APIKEY_JOIN_GROUP: {
		const ch_JoinGroupResponse *r = resp;
		c->err = r->ErrorCode;
		c->generation = r->GenerationId;
		cg_shell_copy_str(c->member_id, sizeof c->member_id, r->MemberId);
		c->has_protocol = r->ProtocolName.len >= 0;
		cg_shell_copy_str(c->protocol, sizeof c->protocol, r->ProtocolName);
		CH_CHECK_EQ_INT(r->Members_n, 0);
		CH_CHECK_EQ_INT(r->Leader.len, 0);
		break;
	}
	case CH_APIKEY_SYNC_GROUP: {
		const ch_SyncGroupResponse *r = resp;
		c->err = r->ErrorCode;
		c->nparts = 0;
		if (r->ErrorCode)
			break;
		ch_arena ar;
		ch_arena_init(&ar);
		ch_assign_assignment asg;
		CH_CHECK_EQ_INT(ch_assign_assignment_decode(r->Assignment.p,
							    (size_t)r->Assignment.len, &ar, &asg),
				CH_OK);
		c->asg_version = asg.version;
		for (int32_t i = 0; i < asg.m.AssignedPartitions_n; i++) {
			const ch_ConsumerProtocolAssignment_TopicPartition *t =
				&asg.m.AssignedPartitions[i];
			CH_CHECK(ch_str_eq_c(t->Topic, "t"));
			for (int32_t k = 0; k < t->Partitions_n; k++)
				c->parts[c->nparts++] = t->Partitions[k];
		}
		qsort(c->parts, (size_t)c->nparts, sizeof *c->parts, i32_cmp);
		ch_arena_reset(&ar);
		break;
	}
	case CH_APIKEY_HEARTBEAT:
		c->err = ((const ch_HeartbeatResponse *)resp)->ErrorCode;
		break;
	default: {
		const ch_LeaveGroupResponse *r = resp;
		c->err = r->ErrorCode;
		c->nmembers = r->Members_n > 0 ? r->Members_n : 0;
		for (int32_t i = 0; i < c->nmembers && i < 4; i++)
			c->member_errs[i] = r->Members[i].ErrorCode;
		break;
	}
	}
}

static void
setup(cg_shell *sh, int32_t partitions, ch_coord_cg_migration policy)
{
	ch_coord_cg_config cfg;
	ch_coord_cg_config_defaults(&cfg);
	cfg.migration_policy = policy;
	cg_shell_init(sh, &cfg, 7);
	sh->other = on_answer;
	cg_shell_add_topic(sh, "t", partitions);
}

/* A request to the core with c as the token; c's answer checked to come
 * exactly once (appends completed first unless held). */
static void
call(cg_shell *sh, ch_coord_cg_request_fn *fn, int64_t now, int16_t key, int16_t version,
     const void *body, cap *c)
{
	memset(c, 0, sizeof *c);
	c->key = key;
	ch_coord_req req = {.now = now,
			    .token = c,
			    .version = version,
			    .body = body,
			    .client_id = CH_STR_LIT("classic"),
			    .client_host = "/127.0.0.1"};
	sh->now = now;
	fn(sh->cg, &req);
	if (sh->store && !sh->hold)
		cg_shell_complete(sh, 0);
	if (!sh->hold)
		CH_CHECK_EQ_INT(c->answered, 1);
	CH_CHECK(cg_shell_ok(sh));
}

/* JoinGroup of a consumer subscribed to "t" that owns `owned` (-1 ends;
 * NULL: none), with the protocols an assignor kind sends. */
static void
joing(cg_shell *sh, int64_t now, const char *member, const char *instance, ch_assign_kind kind,
      const int32_t *owned, int32_t generation, cap *c)
{
	ch_buf md;
	ch_buf_init(&md);
	ch_str topics[] = {CH_STR_LIT("t")};
	int32_t n = 0;
	while (owned && owned[n] >= 0)
		n++;
	ch_assign_tplist own = {CH_STR_LIT("t"), owned, n};
	ch_assign_member_metadata(&md, kind, 3, topics, 1, &own, n ? 1 : 0, generation,
				  CH_STR_NULL);
	ch_JoinGroupRequest_JoinGroupRequestProtocol p = {
		ch_str_c(kind == CH_ASSIGN_RANGE ? "range" : "cooperative-sticky"),
		{md.data, (int32_t)md.len}};
	ch_JoinGroupRequest rq;
	ch_JoinGroupRequest_init(&rq);
	rq.GroupId = CH_STR_LIT("g");
	rq.SessionTimeoutMs = 10000;
	rq.RebalanceTimeoutMs = 30000;
	rq.MemberId = ch_str_c(member);
	rq.GroupInstanceId = instance ? ch_str_c(instance) : CH_STR_NULL;
	rq.ProtocolType = CH_STR_LIT("consumer");
	rq.Protocols = &p;
	rq.Protocols_n = 1;
	call(sh, ch_coord_cg_classic_join, now, CH_APIKEY_JOIN_GROUP, 9, &rq, c);
	ch_buf_free(&md);
}

static void
syncg(cg_shell *sh, int64_t now, const char *member, int32_t generation, const char *protocol,
      cap *c)
{
	ch_SyncGroupRequest rq;
	ch_SyncGroupRequest_init(&rq);
	rq.GroupId = CH_STR_LIT("g");
	rq.GenerationId = generation;
	rq.MemberId = ch_str_c(member);
	rq.GroupInstanceId = CH_STR_NULL;
	rq.ProtocolType = CH_STR_LIT("consumer");
	rq.ProtocolName = ch_str_c(protocol);
	rq.Assignments_n = 0;
	call(sh, ch_coord_cg_classic_sync, now, CH_APIKEY_SYNC_GROUP, 5, &rq, c);
}

static void
beat(cg_shell *sh, int64_t now, const char *member, int32_t generation, cap *c)
{
	ch_HeartbeatRequest rq;
	ch_HeartbeatRequest_init(&rq);
	rq.GroupId = CH_STR_LIT("g");
	rq.GenerationId = generation;
	rq.MemberId = ch_str_c(member);
	rq.GroupInstanceId = CH_STR_NULL;
	call(sh, ch_coord_cg_classic_heartbeat, now, CH_APIKEY_HEARTBEAT, 4, &rq, c);
}

static void
leave(cg_shell *sh, int64_t now, const char *m1, const char *m2, cap *c)
{
	ch_LeaveGroupRequest_MemberIdentity ids[2] = {
		{ch_str_c(m1), CH_STR_NULL, CH_STR_NULL},
		{ch_str_c(m2 ? m2 : ""), CH_STR_NULL, CH_STR_NULL},
	};
	ch_LeaveGroupRequest rq;
	ch_LeaveGroupRequest_init(&rq);
	rq.GroupId = CH_STR_LIT("g");
	rq.Members = ids;
	rq.Members_n = m2 ? 2 : 1;
	call(sh, ch_coord_cg_classic_leave, now, CH_APIKEY_LEAVE_GROUP, 5, &rq, c);
}

/* The member view of `id` (false: not in the group). */
typedef struct find_ctx {
	const char *id;
	ch_coord_cg_member_view v;
	bool found;
} find_ctx;

static void
find_cb(void *ud, const ch_coord_cg_member_view *m)
{
	find_ctx *f = ud;
	if (strcmp(m->member_id, f->id) == 0) {
		f->v = *m;
		f->found = true;
	}
}

static find_ctx
member(const cg_shell *sh, const char *id)
{
	find_ctx f = {.id = id};
	ch_coord_cg_foreach_member(sh->cg, CH_STR_LIT("g"), find_cb, &f);
	return f;
}

static int32_t
group_epoch(const cg_shell *sh)
{
	ch_coord_cg_group_view gv;
	CH_CHECK(ch_coord_cg_group_get(sh->cg, CH_STR_LIT("g"), &gv));
	return gv.epoch;
}

/* A consumer-protocol member "a" owns all of "t". */
static void
start_with_consumer(cg_shell *sh)
{
	hb h;
	hb_join(&h, "g", "a", "t");
	cg_shell_heartbeat(sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh->a.err, 0);
	CH_CHECK_EQ_INT(sh->a.ntps, 4);
	/* it took them (the acknowledgement a client sends; an owned list
	 * short of its assignment before one would not be proof of a release) */
	int32_t all[] = {0, 1, 2, 3, -1};
	hb_beat(&h, "g", "a", sh->a.epoch, sh, all);
	cg_shell_heartbeat(sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh->a.err, 0);
}

/* A classic member joins a consumer group: MEMBER_ID_REQUIRED, then its
 * generation is its member epoch; it waits for the partitions the consumer
 * member still holds and learns through Heartbeat when they are free. */
static void
t_join_sync_heartbeat(void)
{
	cg_shell sh;
	setup(&sh, 4, CH_COORD_CG_MIGRATION_BIDIRECTIONAL);
	start_with_consumer(&sh);
	cap c;
	joing(&sh, 10, "", NULL, CH_ASSIGN_COOPERATIVE_STICKY, NULL, -1, &c);
	CH_CHECK_EQ_INT(c.err, CH_KERR_MEMBER_ID_REQUIRED);
	CH_CHECK_EQ_INT((int)strlen(c.member_id), CH_UUID_STR_LEN);
	CH_CHECK(!member(&sh, c.member_id).found); /* nothing kept for it */
	char b[64];
	snprintf(b, sizeof b, "%s", c.member_id);
	joing(&sh, 20, b, NULL, CH_ASSIGN_COOPERATIVE_STICKY, NULL, -1, &c);
	CH_CHECK_EQ_INT(c.err, 0);
	CH_CHECK_EQ_STR(c.member_id, b);
	CH_CHECK_EQ_STR(c.protocol, "cooperative-sticky");
	CH_CHECK_EQ_INT(c.generation, 3);
	CH_CHECK_EQ_INT(group_epoch(&sh), 3);
	find_ctx f = member(&sh, b);
	CH_CHECK(f.found && f.v.classic);
	CH_CHECK_EQ_INT(f.v.state, CH_COORD_CG_MEMBER_UNRELEASED_PARTITIONS);
	CH_CHECK_EQ_INT(f.v.ntarget, 2);
	CH_CHECK_EQ_STR(f.v.client_id, "classic");
	/* nothing yet: "a" has not revoked */
	syncg(&sh, 30, b, 3, "cooperative-sticky", &c);
	CH_CHECK_EQ_INT(c.err, 0);
	CH_CHECK_EQ_INT(c.nparts, 0);
	CH_CHECK_EQ_INT(c.asg_version, 3);
	beat(&sh, 40, b, 3, &c);
	CH_CHECK_EQ_INT(c.err, 0); /* still waiting on "a" */
	/* "a" revokes two */
	hb h;
	int32_t all[] = {0, 1, 2, 3, -1};
	hb_beat(&h, "g", "a", 2, &sh, all);
	cg_shell_heartbeat(&sh, 50, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.ntps, 2);
	int32_t kept[3] = {sh.a.tps[0].partition, sh.a.tps[1].partition, -1};
	hb_beat(&h, "g", "a", 2, &sh, kept);
	cg_shell_heartbeat(&sh, 60, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, 3);
	/* now free: the classic member is told to rejoin, and gets them */
	beat(&sh, 70, b, 3, &c);
	CH_CHECK_EQ_INT(c.err, CH_KERR_REBALANCE_IN_PROGRESS);
	joing(&sh, 80, b, NULL, CH_ASSIGN_COOPERATIVE_STICKY, NULL, 3, &c);
	CH_CHECK_EQ_INT(c.generation, 3);
	syncg(&sh, 90, b, 3, "cooperative-sticky", &c);
	CH_CHECK_EQ_INT(c.nparts, 2);
	CH_CHECK(c.parts[0] != kept[0] && c.parts[0] != kept[1]);
	CH_CHECK(c.parts[1] != kept[0] && c.parts[1] != kept[1]);
	beat(&sh, 100, b, 3, &c);
	CH_CHECK_EQ_INT(c.err, 0);
	CH_CHECK_EQ_INT(member(&sh, b).v.state, CH_COORD_CG_MEMBER_STABLE);
	cg_shell_free(&sh);
}

/* The cooperative half of t_revocation_by_rejoin: "b" rejoined still
 * owning the partition it must give up. */
static void
revoke_by_rejoin(cg_shell *sh, cap *c, find_ctx f, ch_assign_kind kind, const char *proto)
{
	hb h;
	CH_CHECK_EQ_INT(c->generation, 3);
	CH_CHECK_EQ_INT(f.v.state, CH_COORD_CG_MEMBER_UNREVOKED_PARTITIONS);
	CH_CHECK_EQ_INT(f.v.nrevoking, 1);
	int32_t revoked = f.v.revoking[0].partition;
	syncg(sh, 90, "b", 3, proto, c);
	CH_CHECK_EQ_INT(c->err, 0);
	CH_CHECK_EQ_INT(c->nparts, 1); /* not the one it must revoke */
	CH_CHECK(c->parts[0] != revoked);
	beat(sh, 100, "b", 3, c);
	CH_CHECK_EQ_INT(c->err, CH_KERR_REBALANCE_IN_PROGRESS);
	/* "c" cannot have it while "b" holds it */
	hb_beat(&h, "g", "c", 4, sh, NULL);
	h.r.TopicPartitions_n = 0;
	cg_shell_heartbeat(sh, 105, 1, &h.r);
	for (int32_t i = 0; i < sh->a.ntps; i++)
		CH_CHECK(sh->a.tps[i].partition != revoked);
	int32_t after[2] = {c->parts[0], -1};
	joing(sh, 110, "b", NULL, kind, after, 3, c);
	CH_CHECK_EQ_INT(c->generation, 4);
	CH_CHECK_EQ_INT(member(sh, "b").v.nrevoking, 0);
	hb_beat(&h, "g", "c", 4, sh, NULL);
	h.r.TopicPartitions_n = 0;
	cg_shell_heartbeat(sh, 120, 1, &h.r);
	bool got = false;
	for (int32_t i = 0; i < sh->a.ntps; i++)
		got |= sh->a.tps[i].partition == revoked;
	CH_CHECK(got);
}

/* A classic member that must give partitions up keeps them until its
 * rejoin no longer lists them (cooperative), and its SyncGroup never hands
 * out a partition pending revocation; an eager member (range) rejoins
 * owning nothing. */
static void
t_revocation_by_rejoin(void)
{
	for (int eager = 0; eager < 2; eager++) {
		cg_shell sh;
		setup(&sh, 4, CH_COORD_CG_MIGRATION_BIDIRECTIONAL);
		start_with_consumer(&sh);
		ch_assign_kind kind = eager ? CH_ASSIGN_RANGE : CH_ASSIGN_COOPERATIVE_STICKY;
		const char *proto = eager ? "range" : "cooperative-sticky";
		cap c;
		joing(&sh, 10, "b", NULL, kind, NULL, -1, &c);
		/* "a" lets go of two, "b" takes them */
		hb h;
		int32_t all[] = {0, 1, 2, 3, -1};
		hb_beat(&h, "g", "a", 2, &sh, all);
		cg_shell_heartbeat(&sh, 20, 1, &h.r);
		int32_t kept[3] = {sh.a.tps[0].partition, sh.a.tps[1].partition, -1};
		hb_beat(&h, "g", "a", 2, &sh, kept);
		cg_shell_heartbeat(&sh, 30, 1, &h.r);
		joing(&sh, 40, "b", NULL, kind, NULL, 3, &c);
		syncg(&sh, 50, "b", 3, proto, &c);
		CH_CHECK_EQ_INT(c.nparts, 2);
		int32_t mine[3] = {c.parts[0], c.parts[1], -1};
		/* a third member: "b" must give one up */
		hb_join(&h, "g", "c", "t");
		cg_shell_heartbeat(&sh, 60, 1, &h.r);
		CH_CHECK_EQ_INT(group_epoch(&sh), 4);
		beat(&sh, 70, "b", 3, &c);
		CH_CHECK_EQ_INT(c.err, CH_KERR_REBALANCE_IN_PROGRESS);
		syncg(&sh, 75, "b", 3, proto, &c); /* a stale sync: rejoin first */
		CH_CHECK_EQ_INT(c.err, CH_KERR_REBALANCE_IN_PROGRESS);
		joing(&sh, 80, "b", NULL, kind, eager ? NULL : mine, 3, &c);
		find_ctx f = member(&sh, "b");
		if (eager) {
			/* nothing owned: the revocation is done, the new epoch at once */
			CH_CHECK_EQ_INT(c.generation, 4);
			CH_CHECK_EQ_INT(f.v.nrevoking, 0);
		} else {
			revoke_by_rejoin(&sh, &c, f, kind, proto);
		}
		syncg(&sh, 130, "b", 4, proto, &c);
		CH_CHECK_EQ_INT(c.nparts, 1);
		cg_shell_free(&sh);
	}
}

/* Kafka's errors for classic requests to a consumer group. */
static void
t_errors(void)
{
	cg_shell sh;
	setup(&sh, 4, CH_COORD_CG_MIGRATION_BIDIRECTIONAL);
	start_with_consumer(&sh);
	cap c;
	joing(&sh, 10, "b", NULL, CH_ASSIGN_COOPERATIVE_STICKY, NULL, -1, &c);
	CH_CHECK_EQ_INT(c.err, 0);
	int32_t gen = c.generation;
	syncg(&sh, 20, "b", gen + 1, "cooperative-sticky", &c);
	CH_CHECK_EQ_INT(c.err, CH_KERR_ILLEGAL_GENERATION);
	syncg(&sh, 20, "b", gen, "range", &c);
	CH_CHECK_EQ_INT(c.err, CH_KERR_INCONSISTENT_GROUP_PROTOCOL);
	beat(&sh, 30, "b", gen - 1, &c);
	CH_CHECK_EQ_INT(c.err, CH_KERR_ILLEGAL_GENERATION);
	/* the consumer-protocol member is not a classic one */
	beat(&sh, 30, "a", 2, &c);
	CH_CHECK_EQ_INT(c.err, CH_KERR_UNKNOWN_MEMBER_ID);
	syncg(&sh, 30, "a", 2, "cooperative-sticky", &c);
	CH_CHECK_EQ_INT(c.err, CH_KERR_UNKNOWN_MEMBER_ID);
	beat(&sh, 30, "nobody", 2, &c);
	CH_CHECK_EQ_INT(c.err, CH_KERR_UNKNOWN_MEMBER_ID);
	/* protocols the classic members do not all support */
	joing(&sh, 40, "d", NULL, CH_ASSIGN_RANGE, NULL, -1, &c);
	CH_CHECK_EQ_INT(c.err, CH_KERR_INCONSISTENT_GROUP_PROTOCOL);
	CH_CHECK(!member(&sh, "d").found);
	/* commits: the generation is the member epoch, any version */
	char msg[256];
	ch_coord_cg_commit_tp tp = {sh.topics[0].id, true, CH_STR_LIT("t"), 0};
	CH_CHECK_EQ_INT(ch_coord_cg_validate_commit(sh.cg, CH_STR_LIT("g"), CH_STR_LIT("b"), gen, 2,
						    &tp, 1, msg, sizeof msg),
			0);
	CH_CHECK_EQ_INT(ch_coord_cg_validate_commit(sh.cg, CH_STR_LIT("g"), CH_STR_LIT("b"),
						    gen - 1, 2, &tp, 1, msg, sizeof msg),
			CH_KERR_ILLEGAL_GENERATION);
	CH_CHECK_EQ_STR(msg, "The received generation id 2 does not match the expected member "
			     "epoch 3.");
	CH_CHECK_EQ_INT(ch_coord_cg_validate_fetch(sh.cg, CH_STR_LIT("g"), CH_STR_LIT("b"), 7, msg,
						   sizeof msg),
			CH_KERR_ILLEGAL_GENERATION);
	cg_shell_free(&sh);

	/* group.consumer.migration.policy=disabled: no classic member joins */
	setup(&sh, 4, CH_COORD_CG_MIGRATION_DISABLED);
	start_with_consumer(&sh);
	joing(&sh, 10, "b", NULL, CH_ASSIGN_COOPERATIVE_STICKY, NULL, -1, &c);
	CH_CHECK_EQ_INT(c.err, CH_KERR_INCONSISTENT_GROUP_PROTOCOL);
	CH_CHECK(!member(&sh, "b").found);
	cg_shell_free(&sh);

	/* a session timeout out of the classic bounds; metadata that does not parse */
	setup(&sh, 4, CH_COORD_CG_MIGRATION_UPGRADE);
	start_with_consumer(&sh);
	ch_JoinGroupRequest_JoinGroupRequestProtocol p = {CH_STR_LIT("range"),
							  {(const uint8_t *)"\xff", 1}};
	ch_JoinGroupRequest rq;
	ch_JoinGroupRequest_init(&rq);
	rq.GroupId = CH_STR_LIT("g");
	rq.SessionTimeoutMs = 1000;
	rq.RebalanceTimeoutMs = 30000;
	rq.MemberId = CH_STR_LIT("b");
	rq.GroupInstanceId = CH_STR_NULL;
	rq.ProtocolType = CH_STR_LIT("consumer");
	rq.Protocols = &p;
	rq.Protocols_n = 1;
	call(&sh, ch_coord_cg_classic_join, 10, CH_APIKEY_JOIN_GROUP, 9, &rq, &c);
	CH_CHECK_EQ_INT(c.err, CH_KERR_INVALID_SESSION_TIMEOUT);
	rq.SessionTimeoutMs = 10000;
	call(&sh, ch_coord_cg_classic_join, 10, CH_APIKEY_JOIN_GROUP, 9, &rq, &c);
	CH_CHECK_EQ_INT(c.err, CH_KERR_UNKNOWN_SERVER_ERROR);
	CH_CHECK(!member(&sh, "b").found);
	rq.ProtocolType = CH_STR_LIT("connect");
	call(&sh, ch_coord_cg_classic_join, 10, CH_APIKEY_JOIN_GROUP, 9, &rq, &c);
	CH_CHECK_EQ_INT(c.err, CH_KERR_INCONSISTENT_GROUP_PROTOCOL);
	CH_CHECK_EQ_INT(group_epoch(&sh), 2);
	cg_shell_free(&sh);
}

/* The classic member's own session timeout, the sync timeout after a join
 * and the join timeout once told to rejoin (its rebalance timeout). */
static void
t_timers(void)
{
	for (int which = 0; which < 4; which++) {
		cg_shell sh;
		setup(&sh, 4, CH_COORD_CG_MIGRATION_BIDIRECTIONAL);
		start_with_consumer(&sh);
		cap c;
		joing(&sh, 10, "b", NULL, CH_ASSIGN_COOPERATIVE_STICKY, NULL, -1, &c);
		int64_t dead; /* when it is fenced */
		hb h;
		int32_t none[] = {-1};
		if (which == 0) { /* sync timeout: 30 s, though it heartbeats */
			for (int64_t t = 3000; t < 30000; t += 3000) {
				beat(&sh, t, "b", 3, &c);
				hb_beat(&h, "g", "a", sh.a.epoch, &sh, none);
				cg_shell_heartbeat(&sh, t, 1, &h.r);
			}
			dead = 30010;
		} else if (which == 1) { /* session timeout: its own 10 s, not 45 s */
			syncg(&sh, 20, "b", 3, "cooperative-sticky", &c);
			dead = 10020;
		} else if (which == 3) {
			/* Revoking is no deadline of its own for a classic member (no
			 * rebalance timer): only the join timeout, armed by the first
			 * REBALANCE_IN_PROGRESS after its rejoin. */
			syncg(&sh, 20, "b", 3, "cooperative-sticky", &c);
			int32_t all[] = {0, 1, 2, 3, -1};
			hb_beat(&h, "g", "a", 2, &sh, all);
			cg_shell_heartbeat(&sh, 30, 1, &h.r);
			int32_t kept[3] = {sh.a.tps[0].partition, sh.a.tps[1].partition, -1};
			hb_beat(&h, "g", "a", 2, &sh, kept);
			cg_shell_heartbeat(&sh, 40, 1, &h.r);
			joing(&sh, 50, "b", NULL, CH_ASSIGN_COOPERATIVE_STICKY, NULL, 3, &c);
			syncg(&sh, 60, "b", 3, "cooperative-sticky", &c);
			int32_t mine[3] = {c.parts[0], c.parts[1], -1};
			hb_join(&h, "g", "c", "t");
			cg_shell_heartbeat(&sh, 100, 1, &h.r);
			joing(&sh, 200, "b", NULL, CH_ASSIGN_COOPERATIVE_STICKY, mine, 3, &c);
			CH_CHECK_EQ_INT(member(&sh, "b").v.state,
					CH_COORD_CG_MEMBER_UNREVOKED_PARTITIONS);
			syncg(&sh, 210, "b", 3, "cooperative-sticky", &c);
			for (int64_t t = 3000; t < 33000; t += 3000) {
				beat(&sh, t, "b", 3, &c);
				CH_CHECK_EQ_INT(c.err, CH_KERR_REBALANCE_IN_PROGRESS);
				hb_beat(&h, "g", "a", sh.a.epoch, &sh, NULL);
				h.r.TopicPartitions_n = -1;
				cg_shell_heartbeat(&sh, t, 1, &h.r);
			}
			dead = 33000;
		} else { /* join timeout: told to rejoin at 1000, never does */
			syncg(&sh, 20, "b", 3, "cooperative-sticky", &c);
			hb_join(&h, "g", "c", "t");
			cg_shell_heartbeat(&sh, 500, 1, &h.r);
			beat(&sh, 1000, "b", 3, &c);
			CH_CHECK_EQ_INT(c.err, CH_KERR_REBALANCE_IN_PROGRESS);
			for (int64_t t = 4000; t < 31000; t += 3000) {
				beat(&sh, t, "b", 3, &c);
				CH_CHECK_EQ_INT(c.err, CH_KERR_REBALANCE_IN_PROGRESS);
			}
			dead = 31000;
		}
		cg_shell_tick(&sh, dead - 1);
		CH_CHECK(member(&sh, "b").found);
		int32_t epoch = group_epoch(&sh);
		cg_shell_tick(&sh, dead);
		CH_CHECK(!member(&sh, "b").found);
		CH_CHECK_EQ_INT(group_epoch(&sh), epoch + 1);
		CH_CHECK(cg_shell_ok(&sh));
		cg_shell_free(&sh);
	}
}

/* LeaveGroup: classic members leave (one epoch bump), a consumer-protocol
 * member named there is UNKNOWN_MEMBER_ID; v0-v2 answer at the top. */
static void
t_leave(void)
{
	cg_shell sh;
	setup(&sh, 4, CH_COORD_CG_MIGRATION_BIDIRECTIONAL);
	start_with_consumer(&sh);
	cap c;
	joing(&sh, 10, "b", NULL, CH_ASSIGN_COOPERATIVE_STICKY, NULL, -1, &c);
	joing(&sh, 20, "d", NULL, CH_ASSIGN_COOPERATIVE_STICKY, NULL, -1, &c);
	int32_t epoch = group_epoch(&sh);
	leave(&sh, 30, "b", "a", &c);
	CH_CHECK_EQ_INT(c.err, 0);
	CH_CHECK_EQ_INT(c.nmembers, 2);
	CH_CHECK_EQ_INT(c.member_errs[0], 0);
	CH_CHECK_EQ_INT(c.member_errs[1], CH_KERR_UNKNOWN_MEMBER_ID);
	CH_CHECK(!member(&sh, "b").found && member(&sh, "a").found);
	CH_CHECK_EQ_INT(group_epoch(&sh), epoch + 1);
	ch_LeaveGroupRequest rq;
	ch_LeaveGroupRequest_init(&rq);
	rq.GroupId = CH_STR_LIT("g");
	rq.MemberId = CH_STR_LIT("nobody");
	call(&sh, ch_coord_cg_classic_leave, 40, CH_APIKEY_LEAVE_GROUP, 1, &rq, &c);
	CH_CHECK_EQ_INT(c.err, CH_KERR_UNKNOWN_MEMBER_ID);
	rq.MemberId = CH_STR_LIT("d");
	call(&sh, ch_coord_cg_classic_leave, 50, CH_APIKEY_LEAVE_GROUP, 1, &rq, &c);
	CH_CHECK_EQ_INT(c.err, 0);
	CH_CHECK(!member(&sh, "d").found);
	CH_CHECK_EQ_INT(group_epoch(&sh), epoch + 2);
	cg_shell_free(&sh);
}

/* A group left with classic members only (no downgrade: policy upgrade,
 * or no classic core to take them): their heartbeats move its target when
 * the group epoch moved on (a member gone, partitions added), else nobody
 * would (their heartbeats compare with the assignment epoch, and only a
 * JoinGroup or a ConsumerGroupHeartbeat computes one). group_sim_cg
 * --classic --seed 18 stalled there: "not stable after settling". */
static void
t_classic_only_group_moves_on(void)
{
	for (int how = 0; how < 3; how++) {
		cg_shell sh;
		setup(&sh, 4, CH_COORD_CG_MIGRATION_UPGRADE);
		cg_shell_store_on(&sh);
		sh.other = on_answer;
		start_with_consumer(&sh);
		cap c;
		joing(&sh, 10, "b", NULL, CH_ASSIGN_COOPERATIVE_STICKY, NULL, -1, &c);
		joing(&sh, 11, "d", NULL, CH_ASSIGN_COOPERATIVE_STICKY, NULL, -1, &c);
		hb h;
		int32_t none[] = {-1};
		hb_beat(&h, "g", "a", member(&sh, "a").v.epoch, &sh, none); /* lets all go */
		cg_shell_heartbeat(&sh, 20, 1, &h.r);
		const char *ids[] = {"b", "d"};
		for (int i = 0; i < 2; i++) { /* both take their shares */
			joing(&sh, 30, ids[i], NULL, CH_ASSIGN_COOPERATIVE_STICKY, NULL, 3, &c);
			syncg(&sh, 31, ids[i], c.generation, "cooperative-sticky", &c);
		}
		if (how == 0) { /* "a" leaves: "b" and "d" have what it had */
			hb_beat(&h, "g", "a", -1, &sh, NULL);
			cg_shell_heartbeat(&sh, 40, 1, &h.r);
		} else if (how == 1) { /* "a"'s session ends (its consumer crashed) */
			for (int64_t t = 3000; t <= 48000; t += 3000) {
				for (int i = 0; i < 2; i++) {
					find_ctx f = member(&sh, ids[i]);
					beat(&sh, t, ids[i], f.v.epoch, &c);
					CH_CHECK_EQ_INT(c.err, 0);
				}
				cg_shell_tick(&sh, t);
			}
		} else { /* "a" leaves, then "t" gets partitions */
			hb_beat(&h, "g", "a", -1, &sh, NULL);
			cg_shell_heartbeat(&sh, 40, 1, &h.r);
			for (int i = 0; i < 2; i++) {
				joing(&sh, 50, ids[i], NULL, CH_ASSIGN_COOPERATIVE_STICKY, NULL,
				      member(&sh, ids[i]).v.epoch, &c);
				syncg(&sh, 51, ids[i], c.generation, "cooperative-sticky", &c);
			}
			sh.topics[0].partitions = 8;
			ch_coord_cg_metadata_changed(sh.cg);
		}
		CH_CHECK(!member(&sh, "a").found);
		/* The classic members' heartbeats: told to rejoin, then everything
		 * is theirs, the group Stable. */
		int rebalances = 0;
		for (int round = 0; round < 3; round++)
			for (int i = 0; i < 2; i++) {
				find_ctx f = member(&sh, ids[i]);
				beat(&sh, 50000 + round * 100 + i, ids[i], f.v.epoch, &c);
				if (c.err == 0)
					continue;
				CH_CHECK_EQ_INT(c.err, CH_KERR_REBALANCE_IN_PROGRESS);
				rebalances++;
				int32_t own[9], n = 0;
				for (int32_t k = 0; k < f.v.nassigned; k++)
					own[n++] = f.v.assigned[k].partition;
				own[n] = -1;
				joing(&sh, 50010 + round * 100 + i, ids[i], NULL,
				      CH_ASSIGN_COOPERATIVE_STICKY, own, f.v.epoch, &c);
				CH_CHECK_EQ_INT(c.err, 0);
				syncg(&sh, 50020 + round * 100 + i, ids[i], c.generation,
				      "cooperative-sticky", &c);
				CH_CHECK_EQ_INT(c.err, 0);
			}
		CH_CHECK(rebalances >= 2);
		int32_t parts = how == 2 ? 8 : 4;
		CH_CHECK_EQ_INT(member(&sh, "b").v.nassigned + member(&sh, "d").v.nassigned, parts);
		ch_coord_cg_group_view gv;
		CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
		CH_CHECK_EQ_STR(ch_coord_cg_state_name(gv.state), "Stable");
		CH_CHECK(cg_shell_ok(&sh));
		CH_CHECK(cg_shell_restart_same(&sh, 60000, "g")); /* what moved is durable */
		cg_shell_free(&sh);
	}
}

/* A classic member's records carry its ClassicMemberMetadata: after a
 * restart it is still a classic member with its protocols and session. */
static void
t_restart(void)
{
	cg_shell sh;
	setup(&sh, 4, CH_COORD_CG_MIGRATION_BIDIRECTIONAL);
	cg_shell_store_on(&sh);
	sh.other = on_answer;
	start_with_consumer(&sh);
	cap c;
	joing(&sh, 10, "b", NULL, CH_ASSIGN_COOPERATIVE_STICKY, NULL, -1, &c);
	cg_shell_digest before, after;
	cg_shell_digest_group(&sh, "g", &before);
	cg_shell_restart(&sh, 1000);
	cg_shell_digest_group(&sh, "g", &after);
	CH_CHECK_EQ_STR(after.p, before.p);
	free(before.p);
	free(after.p);
	CH_CHECK(member(&sh, "b").v.classic);
	/* its session is its own 10 s from the load, renewed by its requests */
	cg_shell_tick(&sh, 10999);
	CH_CHECK(member(&sh, "b").found);
	syncg(&sh, 10999, "b", 3, "cooperative-sticky", &c);
	CH_CHECK_EQ_INT(c.err, 0);
	cg_shell_tick(&sh, 20998);
	CH_CHECK(member(&sh, "b").found);
	cg_shell_tick(&sh, 20999);
	CH_CHECK(!member(&sh, "b").found);
	cg_shell_free(&sh);
}

/* ---- the online upgrade ------------------------------------------------------ */

/* A classic group "g" as the classic core would export it. */
static struct fake_classic {
	const char *type;
	int32_t generation, nmembers;
	bool malformed;
	int handed_over;
	ch_buf md[3], asg[3];
	ch_coord_export_protocol protos[3];
	ch_coord_export_member members[3];
} fake;

static bool
fake_export(void *ud, ch_str group_id, void (*fn)(void *fnud, const ch_coord_export_group *g),
	    void *fnud)
{
	(void)ud;
	if (!ch_str_eq_c(group_id, "g") || fake.handed_over)
		return false;
	ch_coord_export_group x = {
		CH_COORD_GROUP_STABLE, fake.generation, fake.type, "cooperative-sticky",
		fake.members,          fake.nmembers,   false};
	fn(fnud, &x);
	return true;
}

static void
fake_hand_over(void *ud, ch_str group_id, int64_t now)
{
	cg_shell *sh = ud;
	(void)now;
	CH_CHECK(ch_str_eq_c(group_id, "g"));
	fake.handed_over++;
	sh->nclassic = 0; /* the classic core has no group "g" with members any more */
}

/* Classic members k0..k(n-1) of generation 5, member i owning partitions
 * 2i and 2i+1 of "t". */
static void
fake_setup(cg_shell *sh, int32_t n)
{
	for (int i = 0; i < 3; i++) {
		ch_buf_free(&fake.md[i]);
		ch_buf_free(&fake.asg[i]);
	}
	memset(&fake, 0, sizeof fake);
	fake.type = "consumer";
	fake.generation = 5;
	fake.nmembers = n;
	static const char *const ids[] = {"k0", "k1", "k2"};
	ch_str topics[] = {CH_STR_LIT("t")};
	for (int32_t i = 0; i < n; i++) {
		int32_t parts[2] = {2 * i, 2 * i + 1};
		ch_assign_tplist own = {CH_STR_LIT("t"), parts, 2};
		ch_buf_init(&fake.md[i]);
		ch_assign_member_metadata(&fake.md[i], CH_ASSIGN_COOPERATIVE_STICKY, 3, topics, 1,
					  &own, 1, 5, CH_STR_NULL);
		ch_ConsumerProtocolAssignment_TopicPartition tp = {CH_STR_LIT("t"), parts, 2};
		ch_ConsumerProtocolAssignment a = {&tp, 1, CH_BYTES_NULL};
		ch_buf_init(&fake.asg[i]);
		ch_assign_assignment_encode(&fake.asg[i], 3, &a);
		fake.protos[i] = (ch_coord_export_protocol){"cooperative-sticky", fake.md[i].data,
							    (int32_t)fake.md[i].len};
		fake.members[i] = (ch_coord_export_member){ids[i],
							   NULL,
							   "classic",
							   "/127.0.0.1",
							   10000,
							   30000,
							   &fake.protos[i],
							   1,
							   fake.asg[i].data,
							   (int32_t)fake.asg[i].len};
	}
	snprintf(sh->classic[0], sizeof sh->classic[0], "g");
	sh->nclassic = 1;
	sh->ops.classic_group_export = fake_export;
	sh->ops.classic_group_hand_over = fake_hand_over;
	ch_coord_cg_free(sh->cg);
	sh->cg = ch_coord_cg_new(&sh->cfg, &sh->ops);
}

static void
fake_free(void)
{
	for (int i = 0; i < 3; i++) {
		ch_buf_free(&fake.md[i]);
		ch_buf_free(&fake.asg[i]);
	}
	memset(&fake, 0, sizeof fake);
}

/* Who holds each partition of "t" (assigned or revoking); -1: nobody, -2:
 * two members. */
typedef struct holders {
	int32_t who[8];
	int32_t idx;
} holders;

static void
holders_cb(void *ud, const ch_coord_cg_member_view *m)
{
	holders *h = ud;
	for (int32_t i = 0; i < m->nassigned; i++)
		h->who[m->assigned[i].partition] =
			h->who[m->assigned[i].partition] == -1 ? h->idx : -2;
	for (int32_t i = 0; i < m->nrevoking; i++)
		h->who[m->revoking[i].partition] =
			h->who[m->revoking[i].partition] == -1 ? h->idx : -2;
	h->idx++;
}

static holders
holders_of(const cg_shell *sh)
{
	holders h;
	for (int i = 0; i < 8; i++)
		h.who[i] = -1;
	h.idx = 0;
	ch_coord_cg_foreach_member(sh->cg, CH_STR_LIT("g"), holders_cb, &h);
	return h;
}

/* A classic group becomes a consumer group when a consumer-protocol member
 * joins: its members stay with their assignments at its generation, learn
 * of the new epoch through Heartbeat, and hand partitions over by their
 * rejoins; no partition is held twice; the records survive a restart. */
static void
t_upgrade(void)
{
	cg_shell sh;
	setup(&sh, 4, CH_COORD_CG_MIGRATION_BIDIRECTIONAL);
	cg_shell_store_on(&sh);
	sh.other = on_answer;
	fake_setup(&sh, 2);
	hb h;
	hb_join(&h, "g", "a", "t");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK_EQ_INT(fake.handed_over, 1);
	CH_CHECK_EQ_INT(group_epoch(&sh), 6);
	CH_CHECK_EQ_INT(sh.a.ntps, 0); /* everything is still the classic members' */
	find_ctx k0 = member(&sh, "k0");
	CH_CHECK(k0.found && k0.v.classic);
	CH_CHECK_EQ_INT(k0.v.epoch, 5);
	CH_CHECK_EQ_INT(k0.v.nassigned, 2);
	CH_CHECK_EQ_INT(k0.v.assigned[0].partition, 0);
	CH_CHECK_EQ_INT(k0.v.assigned[1].partition, 1);
	CH_CHECK_EQ_INT(member(&sh, "k1").v.assigned[0].partition, 2);
	/* restart: the same group from the records */
	cg_shell_digest before, after;
	cg_shell_digest_group(&sh, "g", &before);
	cg_shell_restart(&sh, 10);
	cg_shell_digest_group(&sh, "g", &after);
	CH_CHECK_EQ_STR(after.p, before.p);
	free(before.p);
	free(after.p);
	CH_CHECK(member(&sh, "k1").v.classic);
	/* the classic members, at generation 5, are told to rejoin */
	cap c;
	beat(&sh, 20, "k0", 5, &c);
	CH_CHECK_EQ_INT(c.err, CH_KERR_REBALANCE_IN_PROGRESS);
	for (int round = 0; round < 3; round++) {
		const char *ids[] = {"k0", "k1"};
		for (int i = 0; i < 2; i++) {
			find_ctx f = member(&sh, ids[i]);
			int32_t own[9];
			int32_t n = 0;
			for (int32_t k = 0; k < f.v.nassigned; k++)
				own[n++] = f.v.assigned[k].partition;
			own[n] = -1;
			joing(&sh, 30 + round * 10, ids[i], NULL, CH_ASSIGN_COOPERATIVE_STICKY, own,
			      f.v.epoch, &c);
			CH_CHECK_EQ_INT(c.err, 0);
			syncg(&sh, 31 + round * 10, ids[i], c.generation, "cooperative-sticky", &c);
			CH_CHECK_EQ_INT(c.err, 0);
			holders hs = holders_of(&sh);
			for (int p = 0; p < 4; p++)
				CH_CHECK(hs.who[p] != -2);
		}
		find_ctx fa = member(&sh, "a");
		int32_t aown[9];
		int32_t na = 0;
		for (int32_t k = 0; k < fa.v.nassigned; k++)
			aown[na++] = fa.v.assigned[k].partition;
		aown[na] = -1;
		hb_beat(&h, "g", "a", fa.v.epoch, &sh, aown);
		cg_shell_heartbeat(&sh, 35 + round * 10, 1, &h.r);
	}
	/* settled: every partition with one member, "a" has its share */
	holders hs = holders_of(&sh);
	for (int p = 0; p < 4; p++)
		CH_CHECK(hs.who[p] >= 0);
	CH_CHECK(member(&sh, "a").v.nassigned >= 1);
	ch_coord_cg_group_view gv;
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_STR(ch_coord_cg_state_name(gv.state), "Stable");
	cg_shell_free(&sh);
	fake_free();
}

/* When the upgrade may not happen: Kafka 4.4's GROUP_ID_NOT_FOUND reasons
 * (GROUP_MAX_SIZE_REACHED when only the joiner is one too many), nothing
 * handed over. */
static void
t_upgrade_refused(void)
{
	static const struct {
		ch_coord_cg_migration policy;
		const char *type;
		int32_t max_size;
		bool malformed;
		int32_t epoch;
		int16_t err;
		const char *msg;
	} cases[] = {
		{CH_COORD_CG_MIGRATION_DOWNGRADE, "consumer", 10, false, 0,
		 CH_KERR_GROUP_ID_NOT_FOUND,
		 "Cannot upgrade classic group g to consumer group because online upgrade is "
		 "disabled."},
		{CH_COORD_CG_MIGRATION_DISABLED, "consumer", 10, false, 0,
		 CH_KERR_GROUP_ID_NOT_FOUND,
		 "Cannot upgrade classic group g to consumer group because online upgrade is "
		 "disabled."},
		{CH_COORD_CG_MIGRATION_UPGRADE, "connect", 10, false, 0, CH_KERR_GROUP_ID_NOT_FOUND,
		 "Cannot upgrade classic group g to consumer group because the group does not use "
		 "the consumer embedded protocol."},
		{CH_COORD_CG_MIGRATION_UPGRADE, "consumer", 1, false, 0, CH_KERR_GROUP_ID_NOT_FOUND,
		 "Cannot upgrade classic group g to consumer group because the group size exceeds "
		 "the consumer group maximum size."},
		{CH_COORD_CG_MIGRATION_UPGRADE, "consumer", 2, false, 0,
		 CH_KERR_GROUP_MAX_SIZE_REACHED,
		 "The consumer group has reached its maximum capacity of 2 members."},
		{CH_COORD_CG_MIGRATION_UPGRADE, "consumer", 10, true, 0, CH_KERR_GROUP_ID_NOT_FOUND,
		 "Cannot upgrade the classic group g to consumer group because the embedded "
		 "consumer protocol is malformed."},
		{CH_COORD_CG_MIGRATION_UPGRADE, "consumer", 10, false, 1,
		 CH_KERR_GROUP_ID_NOT_FOUND, "Group g is not a consumer group."},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		cg_shell sh;
		setup(&sh, 4, cases[i].policy);
		sh.cfg.max_size = cases[i].max_size;
		fake_setup(&sh, 2);
		fake.type = cases[i].type;
		if (cases[i].malformed)
			fake.protos[1].len = 1;
		hb h;
		hb_join(&h, "g", "a", "t");
		h.r.MemberEpoch = cases[i].epoch;
		cg_shell_heartbeat(&sh, 0, 1, &h.r);
		CH_CHECK_EQ_INT(sh.a.err, cases[i].err);
		CH_CHECK_EQ_STR(sh.a.msg, cases[i].msg);
		CH_CHECK_EQ_INT(fake.handed_over, 0);
		ch_coord_cg_group_view gv;
		CH_CHECK(!ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
		cg_shell_free(&sh);
		fake_free();
	}
}

/* ---- the online downgrade ---------------------------------------------------- */

/* What the classic core was given. */
static struct imported {
	int calls;
	bool rebalance;
	int32_t generation, nmembers;
	char protocol[32];
	char ids[4][64];
	int32_t parts[4][8], nparts[4];
} imported;

static void
fake_import(void *ud, ch_str group_id, const ch_coord_export_group *x, int64_t now)
{
	(void)ud;
	(void)now;
	CH_CHECK(ch_str_eq_c(group_id, "g"));
	imported.calls++;
	imported.generation = x->generation;
	imported.rebalance = x->rebalance;
	imported.nmembers = x->nmembers;
	snprintf(imported.protocol, sizeof imported.protocol, "%s", x->protocol_name);
	CH_CHECK_EQ_STR(x->protocol_type, "consumer");
	for (int32_t i = 0; i < x->nmembers && i < 4; i++) {
		snprintf(imported.ids[i], sizeof imported.ids[i], "%s", x->members[i].member_id);
		ch_arena ar;
		ch_arena_init(&ar);
		ch_assign_assignment a;
		CH_CHECK_EQ_INT(ch_assign_assignment_decode(x->members[i].assignment,
							    (size_t)x->members[i].assignment_len,
							    &ar, &a),
				CH_OK);
		imported.nparts[i] = 0;
		for (int32_t t = 0; t < a.m.AssignedPartitions_n; t++)
			for (int32_t k = 0; k < a.m.AssignedPartitions[t].Partitions_n; k++)
				imported.parts[i][imported.nparts[i]++] =
					a.m.AssignedPartitions[t].Partitions[k];
		ch_arena_reset(&ar);
	}
}

static void
downgrade_setup(cg_shell *sh, ch_coord_cg_migration policy)
{
	setup(sh, 4, policy);
	memset(&imported, 0, sizeof imported);
	sh->ops.classic_group_import = fake_import;
	ch_coord_cg_free(sh->cg);
	sh->cg = ch_coord_cg_new(&sh->cfg, &sh->ops);
}

/* The last consumer-protocol member leaves (or its session expires): the
 * classic members become a classic group at the group epoch, each with its
 * target assignment; the consumer group is gone. Not while another
 * consumer-protocol member stays, nor when the policy forbids it. */
static void
t_downgrade(void)
{
	for (int how = 0; how < 4; how++) {
		cg_shell sh;
		downgrade_setup(&sh, how == 3 ? CH_COORD_CG_MIGRATION_UPGRADE
					      : CH_COORD_CG_MIGRATION_BIDIRECTIONAL);
		start_with_consumer(&sh);
		cap c;
		joing(&sh, 10, "b", NULL, CH_ASSIGN_COOPERATIVE_STICKY, NULL, -1, &c);
		int32_t gen = c.generation;
		syncg(&sh, 12, "b", gen, "cooperative-sticky", &c);
		hb h;
		if (how == 2) { /* a second consumer-protocol member: no downgrade */
			hb_join(&h, "g", "e", "t");
			cg_shell_heartbeat(&sh, 15, 1, &h.r);
		}
		int32_t epoch = group_epoch(&sh);
		find_ctx b = member(&sh, "b");
		int32_t target[4], nt = b.v.ntarget;
		for (int32_t i = 0; i < nt; i++)
			target[i] = b.v.target[i].partition;
		if (how == 1) { /* its session expires */
			for (int64_t t = 3000; t < 45000; t += 3000)
				beat(&sh, t, "b", gen, &c);
			cg_shell_tick(&sh, 45000);
		} else {
			hb_beat(&h, "g", "a", -1, &sh, NULL);
			cg_shell_heartbeat(&sh, 20, 1, &h.r);
			CH_CHECK_EQ_INT(sh.a.err, 0);
			CH_CHECK_EQ_INT(sh.a.epoch, -1);
		}
		ch_coord_cg_group_view gv;
		if (how >= 2) {
			CH_CHECK_EQ_INT(imported.calls, 0);
			CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
			CH_CHECK_EQ_INT(gv.epoch, epoch + 1);
			cg_shell_free(&sh);
			continue;
		}
		CH_CHECK_EQ_INT(imported.calls, 1);
		CH_CHECK(!ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
		CH_CHECK_EQ_INT(imported.generation, epoch);
		CH_CHECK_EQ_INT(imported.nmembers, 1);
		CH_CHECK_EQ_STR(imported.ids[0], "b");
		CH_CHECK_EQ_STR(imported.protocol, "cooperative-sticky");
		CH_CHECK_EQ_INT(imported.nparts[0], nt);
		for (int32_t i = 0; i < nt; i++)
			CH_CHECK_EQ_INT(imported.parts[0][i], target[i]);
		/* the classic member's requests now are the classic core's */
		beat(&sh, 50000, "b", epoch, &c);
		CH_CHECK_EQ_INT(c.err, CH_KERR_UNKNOWN_MEMBER_ID);
		CH_CHECK(cg_shell_ok(&sh));
		cg_shell_free(&sh);
	}
}

/* Kafka 4's validateOnlineDowngradeWithReplacedMemberId: a classic static
 * member's JoinGroup takes the instance id of the last consumer-protocol
 * member (a client downgraded and restarted): the group becomes a Stable
 * classic group with every member, the new one holding the replaced one's
 * target, without a rebalance; the JoinGroup is answered with its member
 * epoch. Not when the policy forbids a downgrade (it stays a consumer group
 * with the new member as a classic one), nor while another
 * consumer-protocol member stays. */
static void
t_downgrade_replaced_static(void)
{
	for (int how = 0; how < 3; how++) {
		cg_shell sh;
		downgrade_setup(&sh, how == 1 ? CH_COORD_CG_MIGRATION_UPGRADE
					      : CH_COORD_CG_MIGRATION_BIDIRECTIONAL);
		hb h;
		hb_join(&h, "g", "a", "t");
		h.r.InstanceId = CH_STR_LIT("i1");
		cg_shell_heartbeat(&sh, 0, 1, &h.r);
		CH_CHECK_EQ_INT(sh.a.err, 0);
		cap c;
		joing(&sh, 10, "b", NULL, CH_ASSIGN_COOPERATIVE_STICKY, NULL, -1, &c);
		syncg(&sh, 12, "b", c.generation, "cooperative-sticky", &c);
		if (how == 2) { /* a second consumer-protocol member */
			hb_join(&h, "g", "e", "t");
			cg_shell_heartbeat(&sh, 15, 1, &h.r);
			CH_CHECK_EQ_INT(sh.a.err, 0);
		}
		int32_t epoch = group_epoch(&sh);
		find_ctx old = member(&sh, "a");
		CH_CHECK(old.found);
		int32_t target[4], nt = old.v.ntarget;
		for (int32_t i = 0; i < nt; i++)
			target[i] = old.v.target[i].partition;
		CH_CHECK(nt > 0);

		joing(&sh, 20, "c", "i1", CH_ASSIGN_COOPERATIVE_STICKY, NULL, -1, &c);
		CH_CHECK_EQ_INT(c.err, 0);
		CH_CHECK_EQ_STR(c.member_id, "c");
		CH_CHECK_EQ_STR(c.protocol, "cooperative-sticky");
		ch_coord_cg_group_view gv;
		if (how) {
			CH_CHECK_EQ_INT(imported.calls, 0);
			CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
			CH_CHECK(member(&sh, "c").found);
			CH_CHECK(!member(&sh, "a").found);
			cg_shell_free(&sh);
			continue;
		}
		CH_CHECK_EQ_INT(imported.calls, 1);
		CH_CHECK(!imported.rebalance);
		CH_CHECK(!ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
		CH_CHECK_EQ_INT(imported.generation, epoch);
		CH_CHECK_EQ_INT(c.generation, epoch);
		CH_CHECK_EQ_INT(imported.nmembers, 2);
		int ci = strcmp(imported.ids[0], "c") == 0 ? 0 : 1;
		CH_CHECK_EQ_STR(imported.ids[ci], "c");
		CH_CHECK_EQ_STR(imported.ids[1 - ci], "b");
		CH_CHECK_EQ_INT(imported.nparts[ci], nt);
		for (int32_t i = 0; i < nt; i++)
			CH_CHECK_EQ_INT(imported.parts[ci][i], target[i]);
		CH_CHECK(cg_shell_ok(&sh));
		cg_shell_free(&sh);
	}
}

/* Right after a restart (no heartbeat yet has read the group's topics
 * again) a SyncGroup hands out what the member holds, and a downgrade
 * gives the classic group the members' assignments: they used to be empty
 * (no topic id had a name yet). group_sim_cg --classic --seed 6454: the
 * member, told nothing, never consumed its partitions. */
static void
t_sync_after_restart(void)
{
	for (int how = 0; how < 2; how++) {
		cg_shell sh;
		downgrade_setup(&sh, CH_COORD_CG_MIGRATION_BIDIRECTIONAL);
		cg_shell_store_on(&sh);
		sh.other = on_answer;
		start_with_consumer(&sh);
		cap c;
		joing(&sh, 10, "b", NULL, CH_ASSIGN_COOPERATIVE_STICKY, NULL, -1, &c);
		hb h;
		int32_t none[] = {-1};
		hb_beat(&h, "g", "a", member(&sh, "a").v.epoch, &sh, none); /* lets all go */
		cg_shell_heartbeat(&sh, 20, 1, &h.r);
		joing(&sh, 30, "b", NULL, CH_ASSIGN_COOPERATIVE_STICKY, NULL, 2, &c);
		int32_t gen = c.generation;
		find_ctx b = member(&sh, "b");
		CH_CHECK(b.v.nassigned > 0);
		int32_t held = b.v.nassigned;
		CH_CHECK(cg_shell_restart_same(&sh, 40, "g"));
		if (how == 0) { /* its SyncGroup comes after the restart */
			syncg(&sh, 50, "b", gen, "cooperative-sticky", &c);
			CH_CHECK_EQ_INT(c.err, 0);
			CH_CHECK_EQ_INT(c.nparts, held);
		} else { /* "a" leaves: the group goes to the classic core */
			hb_beat(&h, "g", "a", -1, &sh, NULL);
			cg_shell_heartbeat(&sh, 50, 1, &h.r);
			CH_CHECK_EQ_INT(imported.calls, 1);
			CH_CHECK_EQ_INT(imported.nparts[0], held);
		}
		CH_CHECK(cg_shell_ok(&sh));
		cg_shell_free(&sh);
	}
}

CH_TEST_MAIN(CH_TEST(t_join_sync_heartbeat), CH_TEST(t_revocation_by_rejoin), CH_TEST(t_errors),
	     CH_TEST(t_timers), CH_TEST(t_leave), CH_TEST(t_classic_only_group_moves_on),
	     CH_TEST(t_restart), CH_TEST(t_upgrade), CH_TEST(t_upgrade_refused),
	     CH_TEST(t_downgrade), CH_TEST(t_downgrade_replaced_static),
	     CH_TEST(t_sync_after_restart))
