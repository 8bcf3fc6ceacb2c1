/*
 * test_coord: unit tests of the classic group coordinator core, one per
 * behaviour, with the error codes of Apache Kafka's GroupCoordinator (3.x:
 * core/.../coordinator/group/GroupCoordinator.scala, GroupCoordinatorTest,
 * and group-coordinator's GroupMetadataManagerTest / ClassicGroupTest).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_log.h"
#include "common/ch_test.h"
#include "group/ch_coord_int.h"
#include "harness.h"

/* Coordinator INFO logs only with GROUP_TEST_LOG set. */
__attribute__((constructor)) static void
quiet_logs(void)
{
	if (!getenv("GROUP_TEST_LOG"))
		ch_log_threshold = CH_LOG_WARN;
}

#define G "grp"
#define T0 INT64_C(1700000000000)

static h_env *
env(void)
{
	return h_new(NULL, T0);
}

/* Kafka's rules where cohort's defaults differ: InitialDelayedJoin exactly
 * (group.initial.rebalance.quiet.ms=-1) and a join in CompletingRebalance
 * abandons the generation (group.rebalance.join.waits.for.sync=false). */
static h_env *
env_kafka(void)
{
	ch_coord_config cfg;
	ch_coord_config_defaults(&cfg);
	cfg.initial_rebalance_quiet_ms = -1;
	cfg.join_waits_for_sync = false;
	return h_new(&cfg, T0);
}

static void
fin(h_env *h)
{
	int v = h_free(h);
	CH_CHECK_EQ_INT(v, 0);
}

static ch_coord_group_info
info(h_env *h, const char *g)
{
	return ch_coord_group_get_info(h->c, g);
}

#define STATE(h, g) ((int)info((h), (g)).state)
#define EXISTS(h, g) (info((h), (g)).exists)

static bool
starts_with(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/* Group of n static members (instances i0..), JoinGroup v5, Stable. */
static int32_t
form_static(h_env *h, int n, char ids[][H_STR])
{
	h_req *j[16];
	char inst[16][8];
	for (int i = 0; i < n; i++) {
		snprintf(inst[i], sizeof(inst[i]), "i%d", i);
		j[i] = H_JOIN(h, .v = H_V(5), .group = G, .instance = inst[i]);
	}
	h_wait(h, j, n, 60000);
	for (int i = 0; i < n; i++) {
		if (!h_done(j[i]) || j[i]->error)
			return -1;
		strcpy(ids[i], j[i]->member_id);
	}
	int32_t gen = j[0]->generation;
	h_sync_args sa = {.v = H_V(3), .group = G, .gen = gen};
	static char names[16][8];
	for (int i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "A%d", i);
		sa.assign[i] = (h_assign){ids[i], (const uint8_t *)names[i], 2};
	}
	sa.nassign = n;
	for (int i = 0; i < n; i++) {
		h_sync_args s = sa;
		s.member = ids[i];
		s.instance = inst[i];
		if (strcmp(ids[i], j[0]->leader))
			s.nassign = 0;
		h_req *r = h_sync(h, &s);
		if (!h_done(r) || r->error)
			return -1;
	}
	return gen;
}

/* ===================================================================== */
/* JoinGroup                                                              */
/* ===================================================================== */

static void
t_join_invalid_group_id(void)
{
	h_env *h = env();
	h_req *r = H_JOIN(h, .v = H_V(0), .group = "");
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, CH_KERR_INVALID_GROUP_ID);
	r = H_JOIN(h, .v = H_V(9), .group = "");
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, CH_KERR_INVALID_GROUP_ID);
	r = H_SYNC(h, .group = "", .member = "m", .gen = 1);
	CH_CHECK(h_done(r) && r->error == CH_KERR_INVALID_GROUP_ID);
	r = H_HB(h, .group = "", .member = "m", .gen = 1);
	CH_CHECK(h_done(r) && r->error == CH_KERR_INVALID_GROUP_ID);
	CH_CHECK_EQ_INT(ch_coord_group_count(h->c), 0);
	fin(h);
}

static void
t_join_invalid_session_timeout(void)
{
	h_env *h = env();
	h_req *r = H_JOIN(h, .v = H_V(3), .group = G, .session_ms = 5999);
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, CH_KERR_INVALID_SESSION_TIMEOUT);
	r = H_JOIN(h, .v = H_V(5), .group = G, .session_ms = 1800001);
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, CH_KERR_INVALID_SESSION_TIMEOUT);
	CH_CHECK(!EXISTS(h, G) || STATE(h, G) == CH_COORD_GROUP_EMPTY);
	/* the bounds themselves are valid */
	r = H_JOIN(h, .v = H_V(5), .group = G, .session_ms = 6000);
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, CH_KERR_MEMBER_ID_REQUIRED);
	r = H_JOIN(h, .v = H_V(5), .group = G, .session_ms = 1800000);
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, CH_KERR_MEMBER_ID_REQUIRED);
	fin(h);
}

static void
t_join_member_id_required(void)
{
	h_env *h = env();
	h_req *r = H_JOIN(h, .v = H_V(4), .group = G, .client_id = "app");
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, CH_KERR_MEMBER_ID_REQUIRED);
	CH_CHECK(starts_with(r->member_id, "app-"));
	CH_CHECK(strlen(r->member_id) > 4);
	ch_coord_group_info gi = info(h, G);
	CH_CHECK(gi.exists);
	CH_CHECK_EQ_INT(gi.state, CH_COORD_GROUP_EMPTY);
	CH_CHECK_EQ_INT(gi.members, 0);
	CH_CHECK_EQ_INT(gi.pending_members, 1);
	char id[H_STR];
	strcpy(id, r->member_id);
	h_req *r2 = H_JOIN(h, .v = H_V(4), .group = G, .member = id, .client_id = "app");
	CH_CHECK(!h_done(r2));
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	CH_CHECK_EQ_INT(info(h, G).pending_members, 0);
	h_advance(h, 3000);
	CH_CHECK(h_done(r2));
	CH_CHECK_EQ_INT(r2->error, 0);
	CH_CHECK_EQ_STR(r2->member_id, id);
	CH_CHECK_EQ_STR(r2->leader, id);
	CH_CHECK_EQ_INT(r2->generation, 1);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_COMPLETING_REBALANCE);
	fin(h);
}

static void
t_join_pending_member_expires(void)
{
	h_env *h = env();
	h_req *r = H_JOIN(h, .v = H_V(5), .group = G, .session_ms = 10000);
	CH_CHECK(h_done(r) && r->error == CH_KERR_MEMBER_ID_REQUIRED);
	char id[H_STR];
	strcpy(id, r->member_id);
	CH_CHECK_EQ_INT(info(h, G).pending_members, 1);
	h_advance(h, 10001);
	CH_CHECK_EQ_INT(info(h, G).pending_members, 0);
	/* Kafka: the id is unknown now (GroupCoordinatorTest
	 * testNewMemberTimeoutCompletion / pending member expiration) */
	r = H_JOIN(h, .v = H_V(5), .group = G, .member = id);
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, CH_KERR_UNKNOWN_MEMBER_ID);
	fin(h);
}

static void
t_join_v3_direct(void)
{
	h_env *h = env();
	h_req *r = H_JOIN(h, .v = H_V(3), .group = G, .client_id = "cli");
	CH_CHECK(!h_done(r));
	h_advance(h, 3000);
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, 0);
	CH_CHECK(starts_with(r->member_id, "cli-"));
	CH_CHECK_EQ_INT(r->generation, 1);
	CH_CHECK_EQ_STR(r->leader, r->member_id);
	CH_CHECK(h_blob_str(r->protocol_name, "range"));
	CH_CHECK_EQ_INT(r->nrows, 1);
	fin(h);
}

static void
t_join_unknown_member_unknown_group(void)
{
	h_env *h = env();
	h_req *r = H_JOIN(h, .v = H_V(5), .group = G, .member = "nobody");
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, CH_KERR_UNKNOWN_MEMBER_ID);
	fin(h);
}

static void
t_join_inconsistent_protocol_type(void)
{
	h_env *h = env();
	h_req *a = H_JOIN(h, .v = H_V(3), .group = G);
	h_req *b = H_JOIN(h, .v = H_V(3), .group = G, .ptype = "connect");
	CH_CHECK(h_done(b));
	CH_CHECK_EQ_INT(b->error, CH_KERR_INCONSISTENT_GROUP_PROTOCOL);
	h_advance(h, 3000);
	CH_CHECK(h_done(a) && a->error == 0);
	/* and against a Stable group */
	h_req *c = H_JOIN(h, .v = H_V(5), .group = G, .ptype = "connect");
	CH_CHECK(h_done(c));
	CH_CHECK_EQ_INT(c->error, CH_KERR_INCONSISTENT_GROUP_PROTOCOL);
	fin(h);
}

static void
t_join_no_common_protocol(void)
{
	h_env *h = env();
	h_req *a = H_JOIN(h, .v = H_V(3), .group = G,
			  .protos = {{"range", (const uint8_t *)"x", 1}}, .nprotos = 1);
	h_req *b = H_JOIN(h, .v = H_V(3), .group = G,
			  .protos = {{"roundrobin", (const uint8_t *)"x", 1}}, .nprotos = 1);
	CH_CHECK(h_done(b));
	CH_CHECK_EQ_INT(b->error, CH_KERR_INCONSISTENT_GROUP_PROTOCOL);
	h_advance(h, 3000);
	CH_CHECK(h_done(a) && a->error == 0);
	CH_CHECK_EQ_INT(info(h, G).members, 1);
	fin(h);
}

static void
t_join_protocol_vote(void)
{
	h_env *h = env();
	const uint8_t *m = (const uint8_t *)"m";
	/* common to all: range, roundrobin. Votes: A range, B roundrobin, C range. */
	h_req *a = H_JOIN(h, .v = H_V(3), .group = G,
			  .protos = {{"range", m, 1}, {"roundrobin", m, 1}, {"sticky", m, 1}},
			  .nprotos = 3);
	h_req *b = H_JOIN(h, .v = H_V(3), .group = G,
			  .protos = {{"sticky", m, 1}, {"roundrobin", m, 1}, {"range", m, 1}},
			  .nprotos = 3);
	h_req *c = H_JOIN(h, .v = H_V(3), .group = G,
			  .protos = {{"range", m, 1}, {"roundrobin", m, 1}}, .nprotos = 2);
	h_advance(h, 6000);
	CH_CHECK(h_done(a) && h_done(b) && h_done(c));
	CH_CHECK(h_blob_str(a->protocol_name, "range"));
	CH_CHECK(h_blob_str(b->protocol_name, "range"));
	CH_CHECK_EQ_STR(info(h, G).protocol, "range");
	fin(h);

	/* the majority of first choices among the common candidates wins */
	h = env();
	a = H_JOIN(h, .v = H_V(3), .group = G, .protos = {{"range", m, 1}, {"roundrobin", m, 1}},
		   .nprotos = 2);
	b = H_JOIN(h, .v = H_V(3), .group = G, .protos = {{"roundrobin", m, 1}, {"range", m, 1}},
		   .nprotos = 2);
	c = H_JOIN(h, .v = H_V(3), .group = G, .protos = {{"roundrobin", m, 1}, {"range", m, 1}},
		   .nprotos = 2);
	h_advance(h, 6000);
	CH_CHECK(h_done(a));
	CH_CHECK(h_blob_str(a->protocol_name, "roundrobin"));
	fin(h);
}

static void
t_join_group_max_size(void)
{
	ch_coord_config cfg;
	ch_coord_config_defaults(&cfg);
	cfg.max_size = 2;
	h_env *h = h_new(&cfg, T0);
	char ids[2][H_STR];
	CH_CHECK(h_form_group(h, G, 2, ids) > 0);
	h_req *r = H_JOIN(h, .v = H_V(3), .group = G);
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, CH_KERR_GROUP_MAX_SIZE_REACHED);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_STABLE);
	CH_CHECK_EQ_INT(info(h, G).members, 2);
	fin(h);
}

static void
t_join_first_member_leads_metadata(void)
{
	h_env *h = env();
	static const char *const t1[] = {"t1", NULL}, *const t2[] = {"t2", NULL},
				 *const t3[] = {"t3", NULL};
	h_blob s1 = h_subscription(h, 0, t1), s2 = h_subscription(h, 1, t2),
	       s3 = h_subscription(h, 3, t3);
	h_req *a = h_join_full(h, &(h_join_args){.v = H_V(7),
						 .group = G,
						 .protos = {{"range", s1.p, s1.len}},
						 .nprotos = 1});
	h_advance(h, 500);
	h_req *b = h_join_full(h, &(h_join_args){.v = H_V(7),
						 .group = G,
						 .protos = {{"range", s2.p, s2.len}},
						 .nprotos = 1});
	h_req *c = h_join_full(h, &(h_join_args){.v = H_V(7),
						 .group = G,
						 .protos = {{"range", s3.p, s3.len}},
						 .nprotos = 1});
	h_advance(h, 6000);
	CH_CHECK(h_done(a) && h_done(b) && h_done(c));
	CH_CHECK_EQ_STR(a->leader, a->member_id);
	CH_CHECK_EQ_STR(b->leader, a->member_id);
	CH_CHECK_EQ_STR(c->leader, a->member_id);
	CH_CHECK_EQ_INT(a->nrows, 3);
	CH_CHECK_EQ_INT(b->nrows, 0);
	CH_CHECK_EQ_INT(c->nrows, 0);
	CH_CHECK(a->generation == 1 && b->generation == 1 && c->generation == 1);
	CH_CHECK(h_blob_str(a->protocol_type, "consumer")); /* v7+ */
	const h_row *ra = h_row_member(a, a->member_id), *rb = h_row_member(a, b->member_id),
		    *rc = h_row_member(a, c->member_id);
	CH_CHECK(ra && h_blob_eq(ra->metadata, s1.p, s1.len));
	CH_CHECK(rb && h_blob_eq(rb->metadata, s2.p, s2.len));
	CH_CHECK(rc && h_blob_eq(rc->metadata, s3.p, s3.len));
	CH_CHECK_EQ_STR(info(h, G).leader, a->member_id);
	fin(h);
}

static void
t_join_initial_delay(void)
{
	h_env *h = env();
	h_req *a = H_JOIN(h, .v = H_V(3), .group = G);
	h_advance(h, 2999);
	CH_CHECK(!h_done(a));
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	h_advance(h, 1);
	CH_CHECK(h_done(a));
	CH_CHECK_EQ_INT(a->resp_at - T0, 3000);
	fin(h);
}

/* Kafka's InitialDelayedJoin: when the delay expires and a new member came
 * in meanwhile, wait another min(delay, remaining); remaining starts at
 * rebalanceTimeout - delay. */
static void
t_join_initial_delay_extended(void)
{
	h_env *h = env_kafka();
	h_req *a = H_JOIN(h, .v = H_V(3), .group = G, .rebalance_ms = 30000);
	h_advance(h, 1000);
	h_req *b = H_JOIN(h, .v = H_V(3), .group = G, .rebalance_ms = 30000);
	h_advance(h, 2000); /* t0 + 3000 */
	CH_CHECK(!h_done(a));
	CH_CHECK(!h_done(b));
	h_advance(h, 3000); /* t0 + 6000 */
	CH_CHECK(h_done(a) && h_done(b));
	if (h_done(a))
		CH_CHECK_EQ_INT(a->resp_at - T0, 6000);
	CH_CHECK_EQ_INT(a->generation, 1);
	fin(h);
}

/* A first member (rebalance timeout 10 s), then one more every `every` ms
 * until the join ends or n joined; returns the first one's JoinGroup as of
 * t0 + 10 s. */
static h_req *
join_while_arriving(h_env *h, int every, int n)
{
	h_req *a = H_JOIN(h, .v = H_V(3), .group = G, .rebalance_ms = 10000);
	for (int i = 1; i <= n; i++) {
		h_advance_to(h, T0 + (int64_t)every * i);
		if (h_done(a))
			break;
		H_JOIN(h, .v = H_V(3), .group = G, .rebalance_ms = 10000);
	}
	h_advance_to(h, T0 + 10000);
	return a;
}

static void
t_join_initial_delay_bounded(void)
{
	h_env *h = env_kafka();
	h_req *a = join_while_arriving(h, 1000, 9);
	CH_CHECK(h_done(a));
	if (h_done(a)) {
		CH_CHECK(a->resp_at - T0 <= 10000);
		CH_CHECK_EQ_INT(a->resp_at - T0, 10000); /* Kafka: 3000+3000+3000+1000 */
		CH_CHECK_EQ_INT(a->nrows, 10);
	}
	fin(h);
}

/* cohort's default (quiet 500 ms): a member that arrived early in the delay
 * does not extend it; the join ends when the delay runs out. */
static void
t_join_initial_quiet_ends_at_delay(void)
{
	h_env *h = env();
	h_req *a = H_JOIN(h, .v = H_V(3), .group = G, .rebalance_ms = 30000);
	h_advance(h, 1000);
	h_req *b = H_JOIN(h, .v = H_V(3), .group = G, .rebalance_ms = 30000);
	h_advance(h, 1999); /* t0 + 2999 */
	CH_CHECK(!h_done(a) && !h_done(b));
	h_advance(h, 1); /* t0 + 3000 */
	CH_CHECK(h_done(a) && h_done(b));
	CH_CHECK_EQ_INT(a->resp_at - T0, 3000);
	CH_CHECK_EQ_INT(a->nrows, 2);
	CH_CHECK_EQ_INT(a->generation, 1);
	fin(h);
}

/* Arrivals near the end of the delay: it goes on until none has come for
 * the quiet interval. */
static void
t_join_initial_quiet_extends_while_arriving(void)
{
	h_env *h = env();
	h_req *a = H_JOIN(h, .v = H_V(3), .group = G, .rebalance_ms = 30000);
	h_advance_to(h, T0 + 2800);
	H_JOIN(h, .v = H_V(3), .group = G, .rebalance_ms = 30000);
	h_advance_to(h, T0 + 3200);
	CH_CHECK(!h_done(a)); /* 2800 + 500 */
	H_JOIN(h, .v = H_V(3), .group = G, .rebalance_ms = 30000);
	h_advance_to(h, T0 + 3699);
	CH_CHECK(!h_done(a)); /* 3200 + 500 */
	h_advance_to(h, T0 + 3700);
	CH_CHECK(h_done(a));
	CH_CHECK_EQ_INT(a->resp_at - T0, 3700);
	CH_CHECK_EQ_INT(a->nrows, 3);
	fin(h);
}

/* A consumer answered MEMBER_ID_REQUIRED is an arrival too: the delay waits
 * for its JoinGroup with the id (v4+, KIP-394). */
static void
t_join_initial_quiet_waits_for_member_id_required(void)
{
	h_env *h = env();
	h_req *a = H_JOIN(h, .v = H_V(3), .group = G, .rebalance_ms = 30000);
	h_advance_to(h, T0 + 2900);
	h_req *b = H_JOIN(h, .v = H_V(5), .group = G, .rebalance_ms = 30000);
	CH_CHECK(h_done(b));
	CH_CHECK_EQ_INT(b->error, CH_KERR_MEMBER_ID_REQUIRED);
	h_advance_to(h, T0 + 3100);
	CH_CHECK(!h_done(a));
	H_JOIN(h, .v = H_V(5), .group = G, .member = b->member_id, .rebalance_ms = 30000);
	h_advance_to(h, T0 + 3599);
	CH_CHECK(!h_done(a)); /* 3100 + 500 */
	h_advance_to(h, T0 + 3600);
	CH_CHECK(h_done(a));
	CH_CHECK_EQ_INT(a->nrows, 2);
	fin(h);
}

/* Consumers that keep arriving keep it waiting, within the rebalance timeout. */
static void
t_join_initial_quiet_bounded(void)
{
	h_env *h = env();
	h_req *a = join_while_arriving(h, 400, 24);
	CH_CHECK(h_done(a));
	if (h_done(a))
		CH_CHECK_EQ_INT(a->resp_at - T0, 10000);
	fin(h);
}

/* The quiet interval is never longer than the delay: with delay 0 the
 * first member's join completes at once, as in Kafka. */
static void
t_join_initial_quiet_not_beyond_delay(void)
{
	ch_coord_config cfg;
	ch_coord_config_defaults(&cfg);
	cfg.initial_rebalance_delay_ms = 100;
	h_env *h = h_new(&cfg, T0);
	h_req *a = H_JOIN(h, .v = H_V(3), .group = G, .rebalance_ms = 30000);
	h_advance(h, 90);
	H_JOIN(h, .v = H_V(3), .group = G, .rebalance_ms = 30000);
	h_advance(h, 99); /* t0 + 189: 90 + 100 is when it ends, not 90 + 500 */
	CH_CHECK(!h_done(a));
	h_advance(h, 1);
	CH_CHECK(h_done(a));
	CH_CHECK_EQ_INT(a->resp_at - T0, 190);
	fin(h);
}

static void
t_join_nonempty_completes_when_all_rejoined(void)
{
	h_env *h = env();
	char ids[3][H_STR];
	int32_t gen = h_form_group(h, G, 3, ids);
	CH_CHECK(gen == 1);
	h_advance(h, 100);
	h_req *a = H_JOIN(h, .v = H_V(5), .group = G, .member = ids[0]); /* leader: rebalance */
	CH_CHECK(!h_done(a));
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	h_req *hb = H_HB(h, .group = G, .member = ids[1], .gen = gen);
	CH_CHECK(h_done(hb) && hb->error == CH_KERR_REBALANCE_IN_PROGRESS);
	h_advance(h, 100);
	h_req *b = H_JOIN(h, .v = H_V(5), .group = G, .member = ids[1]);
	CH_CHECK(!h_done(b));
	h_advance(h, 100);
	h_req *c = H_JOIN(h, .v = H_V(5), .group = G, .member = ids[2]);
	/* everyone is back: no waiting for any timer */
	CH_CHECK(h_done(a) && h_done(b) && h_done(c));
	CH_CHECK_EQ_INT(a->generation, gen + 1);
	CH_CHECK_EQ_INT(a->resp_at, c->sent_at);
	CH_CHECK_EQ_STR(a->leader, ids[0]);
	CH_CHECK_EQ_INT(a->nrows, 3);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_COMPLETING_REBALANCE);
	fin(h);
}

static void
t_join_rebalance_timeout_removes_members(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	int32_t gen = h_form_group(h, G, 2, ids); /* rebalance timeout 30000 */
	int64_t start = h->now;
	h_req *a = H_JOIN(h, .v = H_V(5), .group = G, .member = ids[0]);
	/* B stays alive through heartbeats but never rejoins */
	while (!h_done(a) && h->now < start + 40000) {
		h_advance(h, 3000);
		if (!h_done(a))
			H_HB(h, .group = G, .member = ids[1], .gen = gen);
	}
	CH_CHECK(h_done(a));
	CH_CHECK_EQ_INT(a->error, 0);
	CH_CHECK_EQ_INT(a->resp_at - start, 30000);
	CH_CHECK_EQ_INT(a->generation, gen + 1);
	CH_CHECK_EQ_INT(a->nrows, 1);
	CH_CHECK_EQ_INT(info(h, G).members, 1);
	h_req *hb = H_HB(h, .group = G, .member = ids[1], .gen = gen);
	CH_CHECK_EQ_INT(hb->error, CH_KERR_UNKNOWN_MEMBER_ID);
	fin(h);
}

static void
t_join_stable_same_metadata_no_rebalance(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	int32_t gen = h_form_group(h, G, 2, ids);
	h_req *b = H_JOIN(h, .v = H_V(5), .group = G, .member = ids[1]);
	CH_CHECK(h_done(b));
	CH_CHECK_EQ_INT(b->error, 0);
	CH_CHECK_EQ_INT(b->generation, gen);
	CH_CHECK_EQ_STR(b->leader, ids[0]);
	CH_CHECK_EQ_INT(b->nrows, 0);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_STABLE);
	/* and SyncGroup gives the assignment of this generation */
	h_req *s = H_SYNC(h, .v = H_V(3), .group = G, .member = ids[1], .gen = gen);
	CH_CHECK(h_done(s) && s->error == 0);
	CH_CHECK(h_blob_str(s->assignment, "A1"));
	fin(h);
}

static void
t_join_stable_changed_metadata_rebalances(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	int32_t gen = h_form_group(h, G, 2, ids);
	static const char *const t2[] = {"t", "u", NULL};
	h_blob s = h_subscription(h, 0, t2);
	h_req *b = H_JOIN(h, .v = H_V(5), .group = G, .member = ids[1],
			  .protos = {{"range", s.p, s.len}}, .nprotos = 1);
	CH_CHECK(!h_done(b));
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	h_req *a = H_JOIN(h, .v = H_V(5), .group = G, .member = ids[0]);
	CH_CHECK(h_done(a) && h_done(b));
	CH_CHECK_EQ_INT(b->generation, gen + 1);
	fin(h);
}

static void
t_join_stable_leader_rejoin_rebalances(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	h_form_group(h, G, 2, ids);
	h_req *a = H_JOIN(h, .v = H_V(5), .group = G, .member = ids[0]);
	CH_CHECK(!h_done(a));
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	fin(h);
}

static void
t_join_completing_same_metadata_returns_current(void)
{
	h_env *h = env();
	h_req *a = H_JOIN(h, .v = H_V(3), .group = G);
	h_req *b = H_JOIN(h, .v = H_V(3), .group = G);
	h_advance(h, 6000);
	CH_CHECK(h_done(a) && h_done(b));
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_COMPLETING_REBALANCE);
	/* b lost its response and asks again with the same metadata */
	h_req *b2 = H_JOIN(h, .v = H_V(3), .group = G, .member = b->member_id);
	CH_CHECK(h_done(b2));
	CH_CHECK_EQ_INT(b2->error, 0);
	CH_CHECK_EQ_INT(b2->generation, b->generation);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_COMPLETING_REBALANCE);
	fin(h);
}

/* ===================================================================== */
/* SyncGroup                                                              */
/* ===================================================================== */

/* Two members through the join phase: a = leader. */
static int32_t
joined2(h_env *h, char *a, char *b)
{
	h_req *ra = H_JOIN(h, .v = H_V(3), .group = G);
	h_req *rb = H_JOIN(h, .v = H_V(3), .group = G);
	h_req *both[] = {ra, rb};
	if (!h_wait(h, both, 2, 60000))
		return -1;
	strcpy(a, ra->member_id);
	strcpy(b, rb->member_id);
	return ra->generation;
}

static void
t_sync_follower_before_leader(void)
{
	h_env *h = env();
	char a[H_STR], b[H_STR];
	int32_t gen = joined2(h, a, b);
	h_req *sb = H_SYNC(h, .group = G, .member = b, .gen = gen);
	CH_CHECK(!h_done(sb));
	h_req *sa =
		H_SYNC(h, .group = G, .member = a, .gen = gen,
		       .assign = {{a, (const uint8_t *)"AA", 2}, {b, (const uint8_t *)"BBB", 3}},
		       .nassign = 2);
	CH_CHECK(h_done(sa) && h_done(sb));
	CH_CHECK_EQ_INT(sa->error, 0);
	CH_CHECK_EQ_INT(sb->error, 0);
	CH_CHECK(h_blob_str(sa->assignment, "AA"));
	CH_CHECK(h_blob_str(sb->assignment, "BBB"));
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_STABLE);
	fin(h);
}

static void
t_sync_follower_after_leader(void)
{
	h_env *h = env();
	char a[H_STR], b[H_STR];
	int32_t gen = joined2(h, a, b);
	h_req *sa =
		H_SYNC(h, .group = G, .member = a, .gen = gen,
		       .assign = {{a, (const uint8_t *)"AA", 2}, {b, (const uint8_t *)"BBB", 3}},
		       .nassign = 2);
	CH_CHECK(h_done(sa) && sa->error == 0);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_STABLE);
	h_advance(h, 2000);
	h_req *sb = H_SYNC(h, .group = G, .member = b, .gen = gen);
	CH_CHECK(h_done(sb));
	CH_CHECK_EQ_INT(sb->error, 0);
	CH_CHECK(h_blob_str(sb->assignment, "BBB"));
	fin(h);
}

static void
t_sync_left_out_member_gets_empty_assignment(void)
{
	h_env *h = env();
	char a[H_STR], b[H_STR];
	int32_t gen = joined2(h, a, b);
	h_req *sb = H_SYNC(h, .v = H_V(0), .group = G, .member = b, .gen = gen);
	h_req *sa = H_SYNC(h, .group = G, .member = a, .gen = gen,
			   .assign = {{a, (const uint8_t *)"AA", 2}}, .nassign = 1);
	CH_CHECK(h_done(sa) && h_done(sb));
	CH_CHECK_EQ_INT(sb->error, 0);
	CH_CHECK_EQ_INT(sb->assignment.len, 0); /* zero-length, not null */
	fin(h);
}

static void
t_sync_waits_for_durable_store(void)
{
	h_env *h = env();
	char a[H_STR], b[H_STR];
	int32_t gen = joined2(h, a, b);
	h->hold_appends = true;
	size_t before = h_count_records(h, G, 2, false);
	h_req *sb = H_SYNC(h, .group = G, .member = b, .gen = gen);
	h_req *sa = H_SYNC(h, .group = G, .member = a, .gen = gen,
			   .assign = {{a, (const uint8_t *)"AA", 2}, {b, (const uint8_t *)"B", 1}},
			   .nassign = 2);
	CH_CHECK(!h_done(sa) && !h_done(sb));
	CH_CHECK(h_count_records(h, G, 2, false) == before + 1);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_COMPLETING_REBALANCE);
	h_release_appends(h);
	CH_CHECK(h_done(sa) && h_done(sb));
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_STABLE);
	fin(h);
}

/* Kafka: a failed store answers the waiting syncs with the (mapped) error
 * and the group rebalances (GroupCoordinator.doSyncGroup +
 * GroupMetadataManager.storeGroup: NOT_ENOUGH_REPLICAS -> COORDINATOR_NOT_AVAILABLE). */
static void
t_sync_store_failure(void)
{
	h_env *h = env();
	char a[H_STR], b[H_STR];
	int32_t gen = joined2(h, a, b);
	h->fail_next = CH_KERR_NOT_ENOUGH_REPLICAS;
	h->fail_count = 1;
	h_req *sb = H_SYNC(h, .group = G, .member = b, .gen = gen);
	h_req *sa = H_SYNC(h, .group = G, .member = a, .gen = gen,
			   .assign = {{a, (const uint8_t *)"AA", 2}}, .nassign = 1);
	CH_CHECK(h_done(sa) && h_done(sb));
	CH_CHECK_EQ_INT(sa->error, CH_KERR_COORDINATOR_NOT_AVAILABLE);
	CH_CHECK_EQ_INT(sb->error, CH_KERR_COORDINATOR_NOT_AVAILABLE);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	fin(h);
}

/* The leader of generation N+1 syncs while generation N's store is still
 * being appended: its assignment must still be stored and everyone answered
 * (Kafka: each storeGroup callback checks its own generation; a stale one
 * is ignored, the new one proceeds). Found by group_sim (seeds 577, 697). */
static void
t_sync_new_generation_while_old_store_in_flight(void)
{
	h_env *h = env_kafka();
	char a[H_STR], b[H_STR];
	int32_t gen = joined2(h, a, b);
	h->hold_appends = true;
	h_req *sb = H_SYNC(h, .group = G, .member = b, .gen = gen);
	h_req *sa = H_SYNC(h, .group = G, .member = a, .gen = gen,
			   .assign = {{a, (const uint8_t *)"a1", 2}, {b, (const uint8_t *)"b1", 2}},
			   .nassign = 2);
	CH_CHECK(!h_done(sa) && !h_done(sb));
	/* a new member: rebalance; the parked syncs are told to rejoin */
	h_req *c = H_JOIN(h, .v = H_V(3), .group = G);
	CH_CHECK(h_done(sa) && sa->error == CH_KERR_REBALANCE_IN_PROGRESS);
	CH_CHECK(h_done(sb) && sb->error == CH_KERR_REBALANCE_IN_PROGRESS);
	h_req *ja = H_JOIN(h, .v = H_V(3), .group = G, .member = a);
	h_req *jb = H_JOIN(h, .v = H_V(3), .group = G, .member = b);
	CH_CHECK(h_done(ja) && h_done(jb) && h_done(c));
	CH_CHECK_EQ_INT(ja->generation, gen + 1);
	h_req *s2b = H_SYNC(h, .group = G, .member = b, .gen = gen + 1);
	h_req *s2c = H_SYNC(h, .group = G, .member = c->member_id, .gen = gen + 1);
	h_req *s2a = H_SYNC(h, .group = G, .member = a, .gen = gen + 1,
			    .assign = {{a, (const uint8_t *)"a2", 2},
				       {b, (const uint8_t *)"b2", 2},
				       {c->member_id, (const uint8_t *)"c2", 2}},
			    .nassign = 3);
	h_release_appends(h);
	h_advance(h, 100);
	CH_CHECK(h_done(s2a) && h_done(s2b) && h_done(s2c));
	CH_CHECK(h_blob_str(s2b->assignment, "b2"));
	CH_CHECK(h_blob_str(s2c->assignment, "c2"));
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_STABLE);
	fin(h);
}

/* A member whose session deadline passes while its SyncGroup is parked must
 * still be expirable afterwards (ch_coord_check: every member has a session
 * timer). Found by group_sim (seed 515). */
static void
t_session_timer_survives_parked_sync(void)
{
	h_env *h = env();
	h_req *ra = H_JOIN(h, .v = H_V(3), .group = G, .session_ms = 6000, .rebalance_ms = 60000);
	h_req *rb = H_JOIN(h, .v = H_V(3), .group = G, .session_ms = 6000, .rebalance_ms = 60000);
	h_req *both[] = {ra, rb};
	CH_CHECK(h_wait(h, both, 2, 60000));
	/* b waits for an assignment the leader never sends; the leader dies */
	h_req *sb = H_SYNC(h, .group = G, .member = rb->member_id, .gen = rb->generation);
	h_advance(h, 3000);
	H_HB(h, .group = G, .member = ra->member_id, .gen = ra->generation);
	/* b's session deadline passes while its sync is parked; then a expires */
	h_advance(h, 7000);
	CH_CHECK(h_done(sb));
	CH_CHECK_EQ_INT(sb->error, CH_KERR_REBALANCE_IN_PROGRESS);
	/* b dies too: the group must end up Empty, not hold b forever */
	h_advance(h, 120000);
	CH_CHECK_EQ_INT(info(h, G).members, 0);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_EMPTY);
	fin(h);
}

static void
t_sync_illegal_generation(void)
{
	h_env *h = env();
	char a[H_STR], b[H_STR];
	int32_t gen = joined2(h, a, b);
	h_req *s = H_SYNC(h, .group = G, .member = b, .gen = gen + 1);
	CH_CHECK(h_done(s));
	CH_CHECK_EQ_INT(s->error, CH_KERR_ILLEGAL_GENERATION);
	s = H_SYNC(h, .group = G, .member = a, .gen = gen - 1);
	CH_CHECK(h_done(s));
	CH_CHECK_EQ_INT(s->error, CH_KERR_ILLEGAL_GENERATION);
	fin(h);
}

static void
t_sync_unknown_member(void)
{
	h_env *h = env();
	char a[H_STR], b[H_STR];
	int32_t gen = joined2(h, a, b);
	h_req *s = H_SYNC(h, .group = G, .member = "ghost", .gen = gen);
	CH_CHECK(h_done(s));
	CH_CHECK_EQ_INT(s->error, CH_KERR_UNKNOWN_MEMBER_ID);
	s = H_SYNC(h, .group = "nogroup", .member = "ghost", .gen = 1);
	CH_CHECK(h_done(s));
	CH_CHECK_EQ_INT(s->error, CH_KERR_UNKNOWN_MEMBER_ID);
	fin(h);
}

static void
t_sync_rebalance_in_progress(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	int32_t gen = h_form_group(h, G, 2, ids);
	H_JOIN(h, .v = H_V(5), .group = G, .member = ids[0]);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	h_req *s = H_SYNC(h, .group = G, .member = ids[1], .gen = gen);
	CH_CHECK(h_done(s));
	CH_CHECK_EQ_INT(s->error, CH_KERR_REBALANCE_IN_PROGRESS);
	fin(h);
}

static void
t_sync_pending_completing_gets_rebalance_in_progress(void)
{
	/* A follower waiting in SyncGroup when a new member joins gets
	 * REBALANCE_IN_PROGRESS (resetAndPropagateAssignmentError). */
	h_env *h = env_kafka();
	char a[H_STR], b[H_STR];
	int32_t gen = joined2(h, a, b);
	h_req *sb = H_SYNC(h, .group = G, .member = b, .gen = gen);
	CH_CHECK(!h_done(sb));
	H_JOIN(h, .v = H_V(3), .group = G);
	CH_CHECK(h_done(sb));
	CH_CHECK_EQ_INT(sb->error, CH_KERR_REBALANCE_IN_PROGRESS);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	fin(h);
}

/* cohort's default (group.rebalance.join.waits.for.sync): a member that
 * joins while the generation completes does not abort it; the generation
 * is stored and synced, then the next rebalance starts and the members
 * learn of it through their heartbeat. */
static void
t_join_in_completing_waits_for_sync(void)
{
	h_env *h = env();
	char a[H_STR], b[H_STR];
	int32_t gen = joined2(h, a, b);
	h_req *sb = H_SYNC(h, .group = G, .member = b, .gen = gen);
	h_req *c = H_JOIN(h, .v = H_V(3), .group = G);
	CH_CHECK(!h_done(sb) && !h_done(c));
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_COMPLETING_REBALANCE);
	h_req *hb = H_HB(h, .group = G, .member = a, .gen = gen);
	CH_CHECK_EQ_INT(hb->error, 0);
	h_req *sa = H_SYNC(h, .group = G, .member = a, .gen = gen,
			   .assign = {{a, (const uint8_t *)"a1", 2}, {b, (const uint8_t *)"b1", 2}},
			   .nassign = 2);
	CH_CHECK(h_done(sa) && h_done(sb));
	CH_CHECK_EQ_INT(sa->error, 0);
	CH_CHECK_EQ_INT(sb->error, 0);
	CH_CHECK(h_blob_str(sb->assignment, "b1"));
	/* synced: the deferred rebalance starts */
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	CH_CHECK(!h_done(c));
	hb = H_HB(h, .group = G, .member = b, .gen = gen);
	CH_CHECK_EQ_INT(hb->error, CH_KERR_REBALANCE_IN_PROGRESS);
	h_req *ja = H_JOIN(h, .v = H_V(3), .group = G, .member = a);
	h_req *jb = H_JOIN(h, .v = H_V(3), .group = G, .member = b);
	CH_CHECK(h_done(ja) && h_done(jb) && h_done(c));
	CH_CHECK_EQ_INT(c->error, 0);
	CH_CHECK_EQ_INT(c->generation, gen + 1);
	CH_CHECK_EQ_INT(ja->generation, gen + 1);
	CH_CHECK_EQ_INT(ja->nrows, 3);
	CH_CHECK(h_row_member(ja, c->member_id) != NULL);
	fin(h);
}

/* The deferred rebalance waits for a follower that syncs after the
 * assignment is stored (Stable, owing a SyncGroup): it still gets its
 * assignment, not REBALANCE_IN_PROGRESS. */
static void
t_join_in_completing_waits_for_late_follower(void)
{
	h_env *h = env();
	char a[H_STR], b[H_STR];
	int32_t gen = joined2(h, a, b);
	h_req *sa = H_SYNC(h, .group = G, .member = a, .gen = gen,
			   .assign = {{a, (const uint8_t *)"a1", 2}, {b, (const uint8_t *)"b1", 2}},
			   .nassign = 2);
	CH_CHECK(h_done(sa));
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_STABLE);
	h_req *c = H_JOIN(h, .v = H_V(3), .group = G);
	CH_CHECK(!h_done(c));
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_STABLE);
	h_req *sb = H_SYNC(h, .group = G, .member = b, .gen = gen);
	CH_CHECK(h_done(sb));
	CH_CHECK_EQ_INT(sb->error, 0);
	CH_CHECK(h_blob_str(sb->assignment, "b1"));
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	fin(h);
}

/* A member waiting for the next generation is not in this one: the stored
 * generation leaves it out (after a restart it must join afresh, not come
 * back as a member of a generation it never got). */
static void
t_join_in_completing_not_stored(void)
{
	h_env *h = env();
	char a[H_STR], b[H_STR];
	int32_t gen = joined2(h, a, b);
	h_req *c = H_JOIN(h, .v = H_V(3), .group = G);
	h_req *sa = H_SYNC(h, .group = G, .member = a, .gen = gen,
			   .assign = {{a, (const uint8_t *)"a1", 2}, {b, (const uint8_t *)"b1", 2}},
			   .nassign = 2);
	CH_CHECK(h_done(sa) && !h_done(c));
	CH_CHECK_EQ_INT(info(h, G).members, 3);
	h_restart(h);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_STABLE);
	CH_CHECK_EQ_INT(info(h, G).members, 2);
	h_req *hb = H_HB(h, .group = G, .member = c->member_id, .gen = gen);
	CH_CHECK_EQ_INT(hb->error, CH_KERR_UNKNOWN_MEMBER_ID);
	fin(h);
}

/* A deferred member's retried JoinGroup takes the place of its first; the
 * first is told to rejoin, and the member still joins the next generation. */
static void
t_join_in_completing_retry(void)
{
	h_env *h = env();
	char a[H_STR], b[H_STR];
	int32_t gen = joined2(h, a, b);
	h_req *c1 = H_JOIN(h, .v = H_V(5), .group = G);
	CH_CHECK_EQ_INT(c1->error, CH_KERR_MEMBER_ID_REQUIRED);
	char cid[H_STR];
	strcpy(cid, c1->member_id);
	h_req *c2 = H_JOIN(h, .v = H_V(5), .group = G, .member = cid);
	CH_CHECK(!h_done(c2));
	h_req *c3 = H_JOIN(h, .v = H_V(5), .group = G, .member = cid);
	CH_CHECK(h_done(c2));
	CH_CHECK_EQ_INT(c2->error, CH_KERR_REBALANCE_IN_PROGRESS);
	CH_CHECK(!h_done(c3));
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_COMPLETING_REBALANCE);
	h_req *sb = H_SYNC(h, .group = G, .member = b, .gen = gen);
	h_req *sa = H_SYNC(h, .group = G, .member = a, .gen = gen,
			   .assign = {{a, (const uint8_t *)"a1", 2}, {b, (const uint8_t *)"b1", 2}},
			   .nassign = 2);
	CH_CHECK(h_done(sa) && h_done(sb) && sb->error == 0);
	h_req *ja = H_JOIN(h, .v = H_V(5), .group = G, .member = a);
	h_req *jb = H_JOIN(h, .v = H_V(5), .group = G, .member = b);
	CH_CHECK(h_done(ja) && h_done(jb) && h_done(c3));
	CH_CHECK_EQ_INT(c3->generation, gen + 1);
	CH_CHECK_EQ_INT(ja->nrows, 3);
	fin(h);
}

/* A member that does not support the generation's protocol cannot wait in
 * it: the generation is abandoned, as in Kafka. */
static void
t_join_in_completing_other_protocol_rebalances(void)
{
	h_env *h = env();
	static const char *const t[] = {"t", NULL};
	h_blob s = h_subscription(h, 0, t);
	h_proto both[] = {{"range", s.p, s.len}, {"roundrobin", s.p, s.len}};
	h_req *ra = h_join(
		h, &(h_join_args){
			   .v = H_V(3), .group = G, .protos = {both[0], both[1]}, .nprotos = 2});
	h_req *rb = h_join(
		h, &(h_join_args){
			   .v = H_V(3), .group = G, .protos = {both[0], both[1]}, .nprotos = 2});
	h_req *ab[] = {ra, rb};
	CH_CHECK(h_wait(h, ab, 2, 60000));
	CH_CHECK(h_blob_str(ra->protocol_name, "range"));
	h_req *sb = H_SYNC(h, .group = G, .member = rb->member_id, .gen = rb->generation);
	h_join(h, &(h_join_args){.v = H_V(3), .group = G, .protos = {both[1]}, .nprotos = 1});
	CH_CHECK(h_done(sb));
	CH_CHECK_EQ_INT(sb->error, CH_KERR_REBALANCE_IN_PROGRESS);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	fin(h);
}

static void
t_sync_v5_inconsistent_protocol(void)
{
	h_env *h = env();
	char a[H_STR], b[H_STR];
	int32_t gen = joined2(h, a, b);
	h_req *s = H_SYNC(h, .v = H_V(5), .group = G, .member = b, .gen = gen, .ptype = "connect",
			  .pname = "range");
	CH_CHECK(h_done(s));
	CH_CHECK_EQ_INT(s->error, CH_KERR_INCONSISTENT_GROUP_PROTOCOL);
	s = H_SYNC(h, .v = H_V(5), .group = G, .member = b, .gen = gen, .ptype = "consumer",
		   .pname = "roundrobin");
	CH_CHECK(h_done(s));
	CH_CHECK_EQ_INT(s->error, CH_KERR_INCONSISTENT_GROUP_PROTOCOL);
	h_req *sb = H_SYNC(h, .v = H_V(5), .group = G, .member = b, .gen = gen, .ptype = "consumer",
			   .pname = "range");
	h_req *sa = H_SYNC(h, .v = H_V(5), .group = G, .member = a, .gen = gen, .ptype = "consumer",
			   .pname = "range",
			   .assign = {{a, (const uint8_t *)"x", 1}, {b, (const uint8_t *)"y", 1}},
			   .nassign = 2);
	CH_CHECK(h_done(sa) && h_done(sb));
	CH_CHECK_EQ_INT(sb->error, 0);
	CH_CHECK(h_blob_str(sb->protocol_type, "consumer"));
	CH_CHECK(h_blob_str(sb->protocol_name, "range"));
	CH_CHECK(h_blob_str(sb->assignment, "y"));
	fin(h);
}

static void
t_sync_pending_members_removed_at_timeout(void)
{
	h_env *h = env_kafka();
	char a[H_STR], b[H_STR];
	h_req *ra = H_JOIN(h, .v = H_V(3), .group = G, .rebalance_ms = 20000);
	h_req *rb = H_JOIN(h, .v = H_V(3), .group = G, .rebalance_ms = 20000);
	h_advance(h, 6000);
	CH_CHECK(h_done(ra) && h_done(rb));
	strcpy(a, ra->member_id);
	strcpy(b, rb->member_id);
	int32_t gen = ra->generation;
	int64_t joined = h->now;
	h_req *sa = H_SYNC(h, .group = G, .member = a, .gen = gen,
			   .assign = {{a, (const uint8_t *)"x", 1}}, .nassign = 1);
	CH_CHECK(h_done(sa));
	/* b heartbeats but never syncs */
	while (h->now + 3000 < joined + 20000) {
		h_advance(h, 3000);
		H_HB(h, .group = G, .member = a, .gen = gen);
		H_HB(h, .group = G, .member = b, .gen = gen);
	}
	CH_CHECK_EQ_INT(info(h, G).members, 2);
	h_advance_to(h, joined + 20000);
	CH_CHECK_EQ_INT(info(h, G).members, 1);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	h_req *hb = H_HB(h, .group = G, .member = b, .gen = gen);
	CH_CHECK_EQ_INT(hb->error, CH_KERR_UNKNOWN_MEMBER_ID);
	hb = H_HB(h, .group = G, .member = a, .gen = gen);
	CH_CHECK_EQ_INT(hb->error, CH_KERR_REBALANCE_IN_PROGRESS);
	fin(h);
}

/* ===================================================================== */
/* Heartbeat                                                              */
/* ===================================================================== */

static void
t_hb_states(void)
{
	h_env *h = env_kafka(); /* Stable, b not synced: a join rebalances */
	char a[H_STR], b[H_STR];
	int32_t gen = joined2(h, a, b);
	/* CompletingRebalance, current generation */
	h_req *r = H_HB(h, .group = G, .member = b, .gen = gen);
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, 0);
	H_SYNC(h, .group = G, .member = a, .gen = gen, .assign = {{a, (const uint8_t *)"x", 1}},
	       .nassign = 1);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_STABLE);
	r = H_HB(h, .v = H_V(0), .group = G, .member = b, .gen = gen);
	CH_CHECK_EQ_INT(r->error, 0);
	r = H_HB(h, .group = G, .member = b, .gen = gen + 1);
	CH_CHECK_EQ_INT(r->error, CH_KERR_ILLEGAL_GENERATION);
	r = H_HB(h, .group = G, .member = "ghost", .gen = gen);
	CH_CHECK_EQ_INT(r->error, CH_KERR_UNKNOWN_MEMBER_ID);
	r = H_HB(h, .group = "nogroup", .member = "ghost", .gen = 1);
	CH_CHECK_EQ_INT(r->error, CH_KERR_UNKNOWN_MEMBER_ID);
	/* PreparingRebalance */
	H_JOIN(h, .v = H_V(3), .group = G);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	r = H_HB(h, .group = G, .member = b, .gen = gen);
	CH_CHECK_EQ_INT(r->error, CH_KERR_REBALANCE_IN_PROGRESS);
	fin(h);
}

static void
t_hb_keeps_session_alive(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	int32_t gen = h_form_group(h, G, 2, ids);
	for (int i = 0; i < 20; i++) {
		h_advance(h, 3000);
		h_req *r1 = H_HB(h, .group = G, .member = ids[0], .gen = gen);
		h_req *r2 = H_HB(h, .group = G, .member = ids[1], .gen = gen);
		CH_CHECK(r1->error == 0 && r2->error == 0);
	}
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_STABLE);
	CH_CHECK_EQ_INT(info(h, G).members, 2);
	fin(h);
}

static void
t_session_expiry_rebalances(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	int32_t gen = h_form_group(h, G, 2, ids); /* session 10000 */
	int64_t last = h->now;
	/* only the leader heartbeats */
	h_advance(h, 3000);
	H_HB(h, .group = G, .member = ids[0], .gen = gen);
	h_advance(h, 3000);
	H_HB(h, .group = G, .member = ids[0], .gen = gen);
	h_advance_to(h, last + 9000);
	H_HB(h, .group = G, .member = ids[0], .gen = gen);
	CH_CHECK_EQ_INT(info(h, G).members, 2);
	h_advance_to(h, last + 10001);
	CH_CHECK_EQ_INT(info(h, G).members, 1);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	h_req *r = H_HB(h, .group = G, .member = ids[0], .gen = gen);
	CH_CHECK_EQ_INT(r->error, CH_KERR_REBALANCE_IN_PROGRESS);
	h_req *j = H_JOIN(h, .v = H_V(5), .group = G, .member = ids[0]);
	CH_CHECK(h_done(j));
	CH_CHECK_EQ_INT(j->generation, gen + 1);
	CH_CHECK_EQ_INT(j->nrows, 1);
	fin(h);
}

static void
t_session_expiry_of_awaiting_new_member(void)
{
	/* A member that is waiting in JoinGroup is not expired by its session
	 * (Kafka: new members get NewMemberJoinTimeoutMs; waiting joins are
	 * covered by the rebalance timeout). Here: the join completes normally
	 * after the initial delay even with a short session. */
	h_env *h = env_kafka();
	h_req *a = H_JOIN(h, .v = H_V(3), .group = G, .session_ms = 6000, .rebalance_ms = 60000);
	for (int i = 0; i < 5; i++) {
		h_advance(h, 1000);
		H_JOIN(h, .v = H_V(3), .group = G, .session_ms = 6000, .rebalance_ms = 60000);
	}
	h_advance(h, 20000);
	CH_CHECK(h_done(a));
	CH_CHECK_EQ_INT(a->error, 0);
	CH_CHECK_EQ_INT(a->nrows, 6);
	fin(h);
}

/* ===================================================================== */
/* LeaveGroup                                                             */
/* ===================================================================== */

static void
t_leave_v0_single(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	h_form_group(h, G, 2, ids);
	h_req *r = H_LEAVE(h, .v = H_V(0), .group = G, .member = "ghost");
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, CH_KERR_UNKNOWN_MEMBER_ID);
	r = H_LEAVE(h, .v = H_V(2), .group = "nogroup", .member = "ghost");
	CH_CHECK_EQ_INT(r->error, CH_KERR_UNKNOWN_MEMBER_ID);
	r = H_LEAVE(h, .v = H_V(1), .group = G, .member = ids[1]);
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, 0);
	CH_CHECK_EQ_INT(info(h, G).members, 1);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	fin(h);
}

static void
t_leave_v3_batch(void)
{
	h_env *h = env();
	char ids[3][H_STR];
	h_form_group(h, G, 3, ids);
	h_req *r = H_LEAVE(h, .v = H_V(3), .group = G,
			   .members = {{.member = ids[1]}, {.member = "ghost"}, {.member = ids[2]}},
			   .nmembers = 3);
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, 0);
	CH_CHECK_EQ_INT(r->nrows, 3);
	const h_row *w = h_row_member(r, ids[1]);
	CH_CHECK(w && w->error == 0);
	w = h_row_member(r, "ghost");
	CH_CHECK(w && w->error == CH_KERR_UNKNOWN_MEMBER_ID);
	w = h_row_member(r, ids[2]);
	CH_CHECK(w && w->error == 0);
	CH_CHECK_EQ_INT(info(h, G).members, 1);
	/* unknown group: top level NONE, each member UNKNOWN_MEMBER_ID */
	r = H_LEAVE(h, .v = H_V(5), .group = "nogroup", .members = {{.member = "x"}},
		    .nmembers = 1);
	CH_CHECK_EQ_INT(r->error, 0);
	CH_CHECK(r->nrows == 1 && r->rows[0].error == CH_KERR_UNKNOWN_MEMBER_ID);
	fin(h);
}

static void
t_leave_by_instance_id(void)
{
	h_env *h = env();
	char ids[3][H_STR];
	CH_CHECK(form_static(h, 3, ids) > 0);
	h_req *r = H_LEAVE(h, .v = H_V(4), .group = G,
			   .members = {{.instance = "i1"},
				       {.instance = "nope"},
				       {.member = "wrong", .instance = "i2"}},
			   .nmembers = 3);
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, 0);
	CH_CHECK_EQ_INT(r->nrows, 3);
	if (r->nrows == 3) {
		CH_CHECK_EQ_INT(r->rows[0].error, 0);
		CH_CHECK(h_blob_str(r->rows[0].instance_id, "i1"));
		CH_CHECK_EQ_INT(r->rows[1].error, CH_KERR_UNKNOWN_MEMBER_ID);
		CH_CHECK_EQ_INT(r->rows[2].error, CH_KERR_FENCED_INSTANCE_ID);
	}
	CH_CHECK_EQ_INT(info(h, G).members, 2);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	fin(h);
}

static void
t_leave_last_member_empties_group(void)
{
	h_env *h = env();
	char ids[1][H_STR];
	int32_t gen = h_form_group(h, G, 1, ids);
	h_req *r =
		H_LEAVE(h, .v = H_V(5), .group = G, .members = {{.member = ids[0]}}, .nmembers = 1);
	CH_CHECK(h_done(r) && r->error == 0);
	ch_coord_group_info gi = info(h, G);
	CH_CHECK_EQ_INT(gi.state, CH_COORD_GROUP_EMPTY);
	CH_CHECK_EQ_INT(gi.members, 0);
	CH_CHECK_EQ_INT(gi.generation, gen + 1);
	fin(h);
}

static void
t_leave_pending_member(void)
{
	h_env *h = env();
	h_req *j = H_JOIN(h, .v = H_V(5), .group = G);
	CH_CHECK(j->error == CH_KERR_MEMBER_ID_REQUIRED);
	h_req *r = H_LEAVE(h, .v = H_V(3), .group = G, .members = {{.member = j->member_id}},
			   .nmembers = 1);
	CH_CHECK(r->nrows == 1 && r->rows[0].error == 0);
	CH_CHECK_EQ_INT(info(h, G).pending_members, 0);
	fin(h);
}

/* ===================================================================== */
/* Static membership (KIP-345, KIP-814)                                   */
/* ===================================================================== */

static void
t_static_rejoin_replaces_and_fences(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	int32_t gen = form_static(h, 2, ids);
	CH_CHECK(gen > 0);
	h_req *j = H_JOIN(h, .v = H_V(5), .group = G, .instance = "i1");
	CH_CHECK(h_done(j));
	CH_CHECK_EQ_INT(j->error, 0);
	CH_CHECK(strcmp(j->member_id, ids[1]) != 0);
	CH_CHECK(starts_with(j->member_id, "i1-"));
	CH_CHECK_EQ_INT(j->generation, gen);
	CH_CHECK_EQ_STR(j->leader, ids[0]);
	CH_CHECK_EQ_INT(j->nrows, 0);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_STABLE);
	CH_CHECK_EQ_INT(info(h, G).generation, gen);
	CH_CHECK_EQ_INT(info(h, G).members, 2);
	char nid[H_STR];
	strcpy(nid, j->member_id);
	/* the old id is fenced */
	h_req *r = H_HB(h, .group = G, .member = ids[1], .gen = gen, .instance = "i1");
	CH_CHECK_EQ_INT(r->error, CH_KERR_FENCED_INSTANCE_ID);
	r = H_SYNC(h, .group = G, .member = ids[1], .gen = gen, .instance = "i1");
	CH_CHECK_EQ_INT(r->error, CH_KERR_FENCED_INSTANCE_ID);
	r = H_COMMIT(h, .group = G, .member = ids[1], .gen = gen, .instance = "i1",
		     .offsets = {{"t", 0, 5}}, .noffsets = 1);
	CH_CHECK(h_done(r) && r->nrows == 1 && r->rows[0].error == CH_KERR_FENCED_INSTANCE_ID);
	h->capture_log = true;
	r = H_JOIN(h, .v = H_V(5), .group = G, .member = ids[1], .instance = "i1");
	CH_CHECK_EQ_INT(r->error, CH_KERR_FENCED_INSTANCE_ID);
	/* said with both ids, as Kafka's validateExistingMember logs it */
	char fenced[2 * H_STR + 64];
	snprintf(fenced, sizeof(fenced), "member %s for static instance i1 is fenced by member %s",
		 ids[1], nid);
	CH_CHECK(strstr(h->last_log, fenced) != NULL);
	h->capture_log = false;
	/* the new id gets the previous assignment */
	r = H_SYNC(h, .group = G, .member = nid, .gen = gen, .instance = "i1");
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, 0);
	CH_CHECK(h_blob_str(r->assignment, "A1"));
	r = H_HB(h, .group = G, .member = nid, .gen = gen, .instance = "i1");
	CH_CHECK_EQ_INT(r->error, 0);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_STABLE);
	fin(h);
}

static void
t_static_leader_rejoin_v9_skip_assignment(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	int32_t gen = form_static(h, 2, ids);
	h_req *j = H_JOIN(h, .v = H_V(9), .group = G, .instance = "i0");
	CH_CHECK(h_done(j));
	CH_CHECK_EQ_INT(j->error, 0);
	CH_CHECK(j->skip_assignment);
	CH_CHECK_EQ_STR(j->leader, j->member_id);
	CH_CHECK_EQ_INT(j->nrows, 2);
	CH_CHECK_EQ_INT(j->generation, gen);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_STABLE);
	h_req *s = H_SYNC(h, .group = G, .member = j->member_id, .gen = gen, .instance = "i0");
	CH_CHECK(h_done(s) && s->error == 0);
	CH_CHECK(h_blob_str(s->assignment, "A0"));
	fin(h);
}

static void
t_static_leader_rejoin_v5_old_leader_id(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	int32_t gen = form_static(h, 2, ids);
	for (int v = 5; v <= 8; v++) {
		char prev[H_STR];
		strcpy(prev, info(h, G).leader ? info(h, G).leader : "");
		h_req *j = H_JOIN(h, .v = H_V(v), .group = G, .instance = "i0");
		CH_CHECK(h_done(j));
		CH_CHECK_EQ_INT(j->error, 0);
		CH_CHECK(!j->skip_assignment);
		CH_CHECK_EQ_STR(j->leader, prev); /* the OLD leader id */
		CH_CHECK(strcmp(j->leader, j->member_id) != 0);
		CH_CHECK_EQ_INT(j->nrows, 0);
		CH_CHECK_EQ_INT(j->generation, gen);
		CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_STABLE);
	}
	fin(h);
}

static void
t_static_rejoin_completing_rebalances(void)
{
	h_env *h = env();
	h_req *a = H_JOIN(h, .v = H_V(5), .group = G, .instance = "i0");
	h_req *b = H_JOIN(h, .v = H_V(5), .group = G, .instance = "i1");
	h_advance(h, 6000);
	CH_CHECK(h_done(a) && h_done(b));
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_COMPLETING_REBALANCE);
	/* the follower waits for the leader's assignment... */
	h_req *sb = H_SYNC(h, .group = G, .member = b->member_id, .gen = b->generation,
			   .instance = "i1");
	CH_CHECK(!h_done(sb));
	/* ...when the leader's instance restarts: new rebalance */
	h_req *a2 = H_JOIN(h, .v = H_V(5), .group = G, .instance = "i0");
	CH_CHECK(!h_done(a2));
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	CH_CHECK(h_done(sb));
	h_req *sa = sb;
	CH_CHECK_EQ_INT(sa->error, CH_KERR_REBALANCE_IN_PROGRESS);
	fin(h);
}

static void
t_static_changed_protocol_rebalances(void)
{
	/* Stable, static rejoin whose protocols change the group's selected
	 * protocol: rebalance (updateStaticMemberAndRebalance). */
	h_env *h = env();
	const uint8_t *m = (const uint8_t *)"m";
	h_req *a = H_JOIN(h, .v = H_V(5), .group = G, .instance = "i0",
			  .protos = {{"range", m, 1}, {"roundrobin", m, 1}}, .nprotos = 2);
	h_advance(h, 3001);
	CH_CHECK(h_done(a));
	H_SYNC(h, .group = G, .member = a->member_id, .gen = a->generation, .instance = "i0",
	       .assign = {{a->member_id, m, 1}}, .nassign = 1);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_STABLE);
	h_req *a2 = H_JOIN(h, .v = H_V(5), .group = G, .instance = "i0",
			   .protos = {{"roundrobin", m, 1}}, .nprotos = 1);
	/* a rebalance, which completes at once (the only member is back) */
	h_advance(h, 1);
	CH_CHECK(h_done(a2));
	CH_CHECK_EQ_INT(a2->generation, a->generation + 1);
	CH_CHECK(h_blob_str(a2->protocol_name, "roundrobin"));
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_COMPLETING_REBALANCE);
	fin(h);
}

static void
t_static_not_removed_at_join_timeout(void)
{
	/* onCompleteJoin removes only dynamic members that did not rejoin. */
	h_env *h = env();
	char ids[2][H_STR];
	int32_t gen = form_static(h, 2, ids);
	int64_t start = h->now;
	h_req *a = H_JOIN(h, .v = H_V(5), .group = G, .member = ids[0], .instance = "i0");
	CH_CHECK(!h_done(a));
	while (!h_done(a) && h->now < start + 40000) {
		h_advance(h, 3000);
		if (!h_done(a))
			H_HB(h, .group = G, .member = ids[1], .gen = gen, .instance = "i1");
	}
	CH_CHECK(h_done(a));
	CH_CHECK_EQ_INT(a->resp_at - start, 30000);
	CH_CHECK_EQ_INT(info(h, G).members, 2);
	fin(h);
}

static void
t_static_session_expiry_removes(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	int32_t gen = form_static(h, 2, ids);
	int64_t start = h->now;
	while (h->now < start + 9000) {
		h_advance(h, 3000);
		H_HB(h, .group = G, .member = ids[0], .gen = gen, .instance = "i0");
	}
	CH_CHECK_EQ_INT(info(h, G).members, 2);
	h_advance_to(h, start + 10001);
	CH_CHECK_EQ_INT(info(h, G).members, 1);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	fin(h);
}

/* ===================================================================== */
/* OffsetCommit                                                           */
/* ===================================================================== */

static void
t_commit_member_ok_and_fetch(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	int32_t gen = h_form_group(h, G, 2, ids);
	h_req *c = H_COMMIT(h, .v = H_V(8), .group = G, .member = ids[1], .gen = gen,
			    .offsets = {{"t", 0, 42, 7, "meta", false, true}, {"t", 1, 43}},
			    .noffsets = 2);
	CH_CHECK(h_done(c));
	CH_CHECK_EQ_INT(c->nrows, 2);
	CH_CHECK(h_row_tp(c, NULL, "t", 0) && h_row_tp(c, NULL, "t", 0)->error == 0);
	CH_CHECK(h_row_tp(c, NULL, "t", 1) && h_row_tp(c, NULL, "t", 1)->error == 0);
	CH_CHECK(h_count_records(h, G, 1, false) >= 2);
	h_req *f = H_FETCH(h, .v = H_V(7),
			   .groups = {{G, .topics = {{"t", {0, 1}, 2}}, .ntopics = 1}});
	CH_CHECK(h_done(f));
	const h_row *w = h_row_tp(f, NULL, "t", 0);
	CH_CHECK(w && w->offset == 42 && w->leader_epoch == 7 && h_blob_str(w->metadata, "meta"));
	w = h_row_tp(f, NULL, "t", 1);
	CH_CHECK(w && w->offset == 43 && w->leader_epoch == -1);
	CH_CHECK_EQ_INT(info(h, G).offsets, 2);
	fin(h);
}

static void
t_commit_member_checks(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	int32_t gen = h_form_group(h, G, 2, ids);
	h_req *c = H_COMMIT(h, .group = G, .member = ids[1], .gen = gen + 1,
			    .offsets = {{"t", 0, 1}}, .noffsets = 1);
	CH_CHECK(h_done(c) && c->nrows == 1);
	CH_CHECK_EQ_INT(c->rows[0].error, CH_KERR_ILLEGAL_GENERATION);
	c = H_COMMIT(h, .group = G, .member = "ghost", .gen = gen, .offsets = {{"t", 0, 1}},
		     .noffsets = 1);
	CH_CHECK_EQ_INT(c->rows[0].error, CH_KERR_UNKNOWN_MEMBER_ID);
	/* generation -1 / no member id on a group with members */
	c = H_COMMIT(h, .group = G, .member = "", .gen = -1, .offsets = {{"t", 0, 1}},
		     .noffsets = 1);
	CH_CHECK_EQ_INT(c->rows[0].error, CH_KERR_UNKNOWN_MEMBER_ID);
	/* generation >= 0 on an unknown group */
	c = H_COMMIT(h, .group = "nogroup", .member = "x", .gen = 3, .offsets = {{"t", 0, 1}},
		     .noffsets = 1);
	CH_CHECK_EQ_INT(c->rows[0].error, CH_KERR_ILLEGAL_GENERATION);
	CH_CHECK(!EXISTS(h, "nogroup") || STATE(h, "nogroup") == CH_COORD_GROUP_DEAD);
	CH_CHECK_EQ_INT(info(h, G).offsets, 0);
	fin(h);
}

static void
t_commit_preparing_old_generation_accepted(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	int32_t gen = h_form_group(h, G, 2, ids);
	H_JOIN(h, .v = H_V(5), .group = G, .member = ids[0]);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_PREPARING_REBALANCE);
	h_req *c = H_COMMIT(h, .group = G, .member = ids[1], .gen = gen, .offsets = {{"t", 0, 9}},
			    .noffsets = 1);
	CH_CHECK(h_done(c));
	CH_CHECK_EQ_INT(c->rows[0].error, 0);
	fin(h);
}

static void
t_commit_completing_rebalance_in_progress(void)
{
	h_env *h = env();
	char a[H_STR], b[H_STR];
	int32_t gen = joined2(h, a, b);
	h_req *c = H_COMMIT(h, .group = G, .member = b, .gen = gen, .offsets = {{"t", 0, 9}},
			    .noffsets = 1);
	CH_CHECK(h_done(c));
	CH_CHECK_EQ_INT(c->rows[0].error, CH_KERR_REBALANCE_IN_PROGRESS);
	fin(h);
}

static void
t_commit_standalone_creates_group(void)
{
	h_env *h = env();
	h_req *c = H_COMMIT(h, .v = H_V(2), .group = "solo", .member = "", .gen = -1,
			    .offsets = {{"t", 0, 100}}, .noffsets = 1);
	CH_CHECK(h_done(c));
	CH_CHECK_EQ_INT(c->rows[0].error, 0);
	CH_CHECK(EXISTS(h, "solo"));
	CH_CHECK_EQ_INT(STATE(h, "solo"), CH_COORD_GROUP_EMPTY);
	/* again, on the existing Empty group */
	c = H_COMMIT(h, .v = H_V(9), .group = "solo", .member = "", .gen = -1,
		     .offsets = {{"t", 0, 101}}, .noffsets = 1);
	CH_CHECK_EQ_INT(c->rows[0].error, 0);
	h_req *f = H_FETCH(h, .v = H_V(1),
			   .groups = {{"solo", .topics = {{"t", {0}, 1}}, .ntopics = 1}});
	CH_CHECK(h_row_tp(f, NULL, "t", 0) && h_row_tp(f, NULL, "t", 0)->offset == 101);
	/* v0 (no generation field) too */
	c = H_COMMIT(h, .v = H_V(0), .group = "solo0", .gen = -1, .offsets = {{"t", 1, 5}},
		     .noffsets = 1);
	CH_CHECK(h_done(c) && c->rows[0].error == 0);
	fin(h);
}

static void
t_commit_metadata_too_large(void)
{
	h_env *h = env();
	char *big = malloc(4098), *ok = malloc(4097);
	memset(big, 'x', 4097);
	big[4097] = 0;
	memset(ok, 'y', 4096);
	ok[4096] = 0;
	h_req *c = H_COMMIT(h, .group = "solo", .gen = -1,
			    .offsets = {{"t", 0, 1, .metadata = big}, {"t", 1, 2, .metadata = ok}},
			    .noffsets = 2);
	CH_CHECK(h_done(c));
	const h_row *w0 = h_row_tp(c, NULL, "t", 0), *w1 = h_row_tp(c, NULL, "t", 1);
	CH_CHECK(w0 && w0->error == CH_KERR_OFFSET_METADATA_TOO_LARGE);
	CH_CHECK(w1 && w1->error == 0);
	h_req *f = H_FETCH(h, .v = H_V(5),
			   .groups = {{"solo", .topics = {{"t", {0, 1}, 2}}, .ntopics = 1}});
	w0 = h_row_tp(f, NULL, "t", 0);
	w1 = h_row_tp(f, NULL, "t", 1);
	CH_CHECK(w0 && w0->offset == -1);
	CH_CHECK(w1 && w1->offset == 2 && w1->metadata.len == 4096);
	free(big);
	free(ok);
	fin(h);
}

/* The stored OffsetCommitValue of the last record for (group, topic, p),
 * decoded with the generated codec into a; NULL if none. */
static const ch_OffsetCommitValue *
stored_offset_value(const h_env *h, const char *group, const char *topic, int32_t partition,
		    ch_arena *a, ch_OffsetCommitValue *v)
{
	for (size_t i = h->nrecs; i-- > 0;) {
		const h_record *r = &h->recs[i];
		int kv = h_record_key_version(r);
		if ((kv != 0 && kv != 1) || r->tombstone)
			continue;
		ch_rd rd;
		ch_rd_init(&rd, r->key + 2, r->klen - 2);
		ch_OffsetCommitKey k;
		if (ch_OffsetCommitKey_decode(&rd, a, (int16_t)kv, &k) != 0 ||
		    !ch_str_eq_c(k.group, group) || !ch_str_eq_c(k.topic, topic) ||
		    k.partition != partition)
			continue;
		ch_rd_init(&rd, r->val + 2, r->vlen - 2);
		int16_t vv = (int16_t)((r->val[0] << 8) | r->val[1]);
		return ch_OffsetCommitValue_decode(&rd, a, vv, v) == 0 ? v : NULL;
	}
	return NULL;
}

/* Fetched metadata of t-0..t-2 as committed by t_commit_metadata_is_bytes. */
static void
check_fetched_metadata(h_env *h, const char *bytes, int32_t len)
{
	for (int v = 1; v <= 9; v++) {
		h_req *f = H_FETCH(
			h, .v = H_V(v),
			.groups = {{"meta", .topics = {{"t", {0, 1, 2, 3}, 4}}, .ntopics = 1}},
			.ngroups = 1);
		CH_CHECK(h_done(f));
		const h_row *w = h_row_tp(f, NULL, "t", 0);
		CH_CHECK(w && w->offset == 10 && h_blob_eq(w->metadata, bytes, len));
		/* null and empty metadata both come back "" (Kafka's NO_METADATA) */
		w = h_row_tp(f, NULL, "t", 1);
		CH_CHECK(w && w->offset == 11 && w->metadata.len == 0);
		w = h_row_tp(f, NULL, "t", 2);
		CH_CHECK(w && w->offset == 12 && w->metadata.len == 0);
		/* never committed: offset -1, metadata "" */
		w = h_row_tp(f, NULL, "t", 3);
		CH_CHECK(w && w->offset == -1 && w->metadata.len == 0);
	}
}

/* Commit metadata is bytes with a length (Kafka: a Java String, NULs and
 * all): kept whole in memory, in the __consumer_offsets record and through
 * a replay; null is stored as "" (OffsetAndMetadata.fromRequest). */
static void
t_commit_metadata_is_bytes(void)
{
	static const char hello[] = "Hello\0world!"; /* 12 bytes */
	h_env *h = env();
	h_req *c = H_COMMIT(h, .v = H_V(8), .group = "meta", .gen = -1,
			    .offsets = {{"t", 0, 10, .metadata = hello, .metadata_len = 12},
					{"t", 1, 11, .null_metadata = true},
					{"t", 2, 12, .metadata = ""}},
			    .noffsets = 3);
	CH_CHECK(h_done(c) && c->nrows == 3);
	for (int i = 0; i < c->nrows; i++)
		CH_CHECK_EQ_INT(c->rows[i].error, 0);
	check_fetched_metadata(h, hello, 12);

	ch_arena a;
	ch_arena_init(&a);
	ch_OffsetCommitValue v;
	CH_CHECK(stored_offset_value(h, "meta", "t", 0, &a, &v) && v.metadata.len == 12 &&
		 memcmp(v.metadata.p, hello, 12) == 0);
	CH_CHECK(stored_offset_value(h, "meta", "t", 1, &a, &v) && v.metadata.len == 0);
	CH_CHECK(stored_offset_value(h, "meta", "t", 2, &a, &v) && v.metadata.len == 0);
	ch_arena_reset(&a);

	h_env *r = h_replay(h);
	check_fetched_metadata(r, hello, 12);
	h_restart(r);
	check_fetched_metadata(r, hello, 12);
	/* a commit over it replaces every byte, NULs at both ends too */
	static const char edge[] = "\0mid\0"; /* 5 bytes */
	c = H_COMMIT(r, .group = "meta", .gen = -1,
		     .offsets = {{"t", 0, 10, .metadata = edge, .metadata_len = 5}}, .noffsets = 1);
	CH_CHECK(h_done(c) && c->rows[0].error == 0);
	h_restart(r);
	h_req *f = H_FETCH(r, .groups = {{"meta", .topics = {{"t", {0}, 1}}, .ntopics = 1}},
			   .ngroups = 1);
	CH_CHECK(h_row_tp(f, NULL, "t", 0) &&
		 h_blob_eq(h_row_tp(f, NULL, "t", 0)->metadata, edge, 5));
	fin(r);
	fin(h);
}

static void
t_commit_answered_after_append(void)
{
	h_env *h = env();
	h->hold_appends = true;
	h_req *c = H_COMMIT(h, .group = "solo", .gen = -1, .offsets = {{"t", 0, 1}}, .noffsets = 1);
	CH_CHECK(!h_done(c));
	CH_CHECK_EQ_INT(h_pending_appends(h), 1);
	h_advance(h, 5000);
	CH_CHECK(!h_done(c));
	h_release_appends(h);
	CH_CHECK(h_done(c));
	CH_CHECK_EQ_INT(c->rows[0].error, 0);
	/* with a virtual append delay */
	h->append_delay = 250;
	c = H_COMMIT(h, .group = "solo", .gen = -1, .offsets = {{"t", 0, 2}}, .noffsets = 1);
	CH_CHECK(!h_done(c));
	h_advance(h, 250);
	CH_CHECK(h_done(c));
	CH_CHECK_EQ_INT(c->resp_at - c->sent_at, 250);
	fin(h);
}

/* Completions may come in any order (an append refused at once is posted
 * before earlier ones are durable); an id completed twice, or one whose
 * slot was reused, answers nothing. */
static void
t_append_completions_any_order(void)
{
	h_env *h = env();
	h->hold_appends = true;
	enum {
		N = 200
	}; /* more than the table's first 64 slots */
	h_req *c[N];
	for (int i = 0; i < N; i++)
		c[i] = H_COMMIT(h, .group = "solo", .gen = -1, .offsets = {{"t", i, 100 + i}},
				.noffsets = 1);
	CH_CHECK_EQ_INT(h_pending_appends(h), N);
	size_t first = h->nappends - N;
	uint64_t done_id = 0;
	for (int i = N - 1; i >= 0; i--) { /* last issued completes first */
		h_append *a = &h->appends[first + (size_t)i];
		a->done = true;
		ch_coord_append_done(h->c, h->now, a->id, 0);
		CH_CHECK(h_done(c[i]));
		if (i == N / 2) {
			done_id = a->id;
			ch_coord_append_done(h->c, h->now, a->id, 0); /* again: nothing */
		}
		h_check(h, "append_done");
	}
	for (int i = 0; i < N; i++)
		CH_CHECK(h_done(c[i]) && c[i]->rows[0].error == 0);
	/* A new append takes a freed slot under a new id; the old id of that
	 * slot finds nothing and the new commit stays unanswered until its own
	 * completion. */
	h_req *late =
		H_COMMIT(h, .group = "solo", .gen = -1, .offsets = {{"t", 0, 7}}, .noffsets = 1);
	uint64_t late_id = h->appends[h->nappends - 1].id;
	CH_CHECK(late_id != done_id);
	for (int i = 0; i < N; i++)
		ch_coord_append_done(h->c, h->now, h->appends[first + (size_t)i].id, 0);
	CH_CHECK(!h_done(late));
	h_release_appends(h);
	CH_CHECK(h_done(late));
	h_req *f = H_FETCH(h, .v = H_V(3), .groups = {{"solo", .ntopics = -1}});
	CH_CHECK_EQ_INT(f->nrows, N);
	const h_row *w0 = h_row_tp(f, NULL, "t", 0), *w9 = h_row_tp(f, NULL, "t", N - 1);
	CH_CHECK(w0 && w0->offset == 7 && w9 && w9->offset == 100 + N - 1);
	fin(h);
}

static void
t_commit_append_failure(void)
{
	h_env *h = env();
	H_COMMIT(h, .group = "solo", .gen = -1, .offsets = {{"t", 0, 1}}, .noffsets = 1);
	h->fail_next = CH_KERR_NOT_ENOUGH_REPLICAS;
	h->fail_count = 1;
	h_req *c = H_COMMIT(h, .group = "solo", .gen = -1, .offsets = {{"t", 0, 2}}, .noffsets = 1);
	CH_CHECK(h_done(c));
	/* GroupMetadataManager.storeOffsets: NOT_ENOUGH_REPLICAS -> COORDINATOR_NOT_AVAILABLE */
	CH_CHECK_EQ_INT(c->rows[0].error, CH_KERR_COORDINATOR_NOT_AVAILABLE);
	h_req *f = H_FETCH(h, .v = H_V(3), .groups = {{"solo", .ntopics = -1}});
	const h_row *w = h_row_tp(f, NULL, "t", 0);
	CH_CHECK(w && w->offset == 1);
	h->fail_next = CH_KERR_NOT_LEADER_OR_FOLLOWER;
	h->fail_count = 1;
	c = H_COMMIT(h, .group = "solo", .gen = -1, .offsets = {{"t", 0, 3}}, .noffsets = 1);
	CH_CHECK_EQ_INT(c->rows[0].error, CH_KERR_NOT_COORDINATOR);
	fin(h);
}

static void
t_commit_unknown_partition(void)
{
	h_env *h = env();
	strcpy(h->unknown_topic, "missing");
	h_req *c = H_COMMIT(h, .group = "solo", .gen = -1,
			    .offsets = {{"missing", 0, 1}, {"t", 0, 1}}, .noffsets = 2);
	CH_CHECK(h_done(c));
	CH_CHECK(h_row_tp(c, NULL, "missing", 0) &&
		 h_row_tp(c, NULL, "missing", 0)->error == CH_KERR_UNKNOWN_TOPIC_OR_PARTITION);
	CH_CHECK(h_row_tp(c, NULL, "t", 0) && h_row_tp(c, NULL, "t", 0)->error == 0);
	fin(h);
}

/* ===================================================================== */
/* OffsetFetch                                                            */
/* ===================================================================== */

static void
seed_offsets(h_env *h, const char *g)
{
	h_req *c = H_COMMIT(h, .group = g, .gen = -1,
			    .offsets = {{"t", 0, 10}, {"t", 1, 20}, {"u", 0, 30}}, .noffsets = 3);
	CH_CHECK(h_done(c));
}

static void
t_fetch_v1_to_v7(void)
{
	h_env *h = env();
	seed_offsets(h, G);
	for (int v = 1; v <= 7; v++) {
		h_req *f = H_FETCH(h, .v = H_V(v),
				   .groups = {{G, .topics = {{"t", {0, 1, 2}, 3}}, .ntopics = 1}});
		CH_CHECK(h_done(f));
		CH_CHECK_EQ_INT(f->error, 0);
		CH_CHECK_EQ_INT(f->nrows, 3);
		const h_row *w = h_row_tp(f, NULL, "t", 0);
		CH_CHECK(w && w->offset == 10 && w->error == 0);
		w = h_row_tp(f, NULL, "t", 1);
		CH_CHECK(w && w->offset == 20);
		w = h_row_tp(f, NULL, "t", 2);
		CH_CHECK(w && w->offset == -1 && w->error == 0);
		if (w && v >= 5)
			CH_CHECK_EQ_INT(w->leader_epoch, -1);
	}
	/* unknown group: -1 */
	h_req *f = H_FETCH(h, .v = H_V(1),
			   .groups = {{"nogroup", .topics = {{"t", {0}, 1}}, .ntopics = 1}});
	CH_CHECK(h_row_tp(f, NULL, "t", 0) && h_row_tp(f, NULL, "t", 0)->offset == -1);
	fin(h);
}

static void
t_fetch_all_topics(void)
{
	h_env *h = env();
	seed_offsets(h, G);
	h_req *f = H_FETCH(h, .v = H_V(2), .groups = {{G, .ntopics = -1}});
	CH_CHECK(h_done(f));
	CH_CHECK_EQ_INT(f->nrows, 3);
	CH_CHECK(h_row_tp(f, NULL, "u", 0) && h_row_tp(f, NULL, "u", 0)->offset == 30);
	f = H_FETCH(h, .v = H_V(6), .groups = {{"nogroup", .ntopics = -1}});
	CH_CHECK(h_done(f));
	CH_CHECK_EQ_INT(f->nrows, 0);
	fin(h);
}

static void
t_fetch_v8_multi_group(void)
{
	h_env *h = env();
	seed_offsets(h, "g1");
	seed_offsets(h, "g2");
	h_req *f = H_FETCH(h, .v = H_V(8),
			   .groups = {{"g1", .topics = {{"t", {1, 5}, 2}}, .ntopics = 1},
				      {"g2", .ntopics = -1},
				      {"g3", .topics = {{"t", {0}, 1}}, .ntopics = 1}},
			   .ngroups = 3);
	CH_CHECK(h_done(f));
	CH_CHECK(h_row_group(f, "g1") && h_row_group(f, "g1")->error == 0);
	CH_CHECK(h_row_group(f, "g2") && h_row_group(f, "g3"));
	const h_row *w = h_row_tp(f, "g1", "t", 1);
	CH_CHECK(w && w->offset == 20);
	w = h_row_tp(f, "g1", "t", 5);
	CH_CHECK(w && w->offset == -1);
	CH_CHECK(h_row_tp(f, "g1", "u", 0) == NULL);
	w = h_row_tp(f, "g2", "u", 0);
	CH_CHECK(w && w->offset == 30);
	CH_CHECK(h_row_tp(f, "g2", "t", 0) && h_row_tp(f, "g2", "t", 1));
	w = h_row_tp(f, "g3", "t", 0);
	CH_CHECK(w && w->offset == -1);
	fin(h);
}

/* ===================================================================== */
/* ListGroups, DescribeGroups, DeleteGroups, OffsetDelete                 */
/* ===================================================================== */

static void
t_list_groups(void)
{
	h_env *h = env();
	char ids[1][H_STR];
	h_form_group(h, G, 1, ids);
	seed_offsets(h, "solo");
	H_JOIN(h, .v = H_V(3), .group = "prep");
	h_req *l = H_LIST(h, .v = H_V(0));
	CH_CHECK(h_done(l));
	CH_CHECK_EQ_INT(l->error, 0);
	CH_CHECK_EQ_INT(l->nrows, 3);
	const h_row *w = h_row_group(l, G);
	CH_CHECK(w && !strcmp(w->protocol_type, "consumer"));
	w = h_row_group(l, "solo");
	CH_CHECK(w && !strcmp(w->protocol_type, ""));
	l = H_LIST(h, .v = H_V(4), .states = {"Stable"}, .nstates = 1);
	CH_CHECK_EQ_INT(l->nrows, 1);
	CH_CHECK(h_row_group(l, G) && !strcmp(h_row_group(l, G)->state, "Stable"));
	l = H_LIST(h, .v = H_V(4), .states = {"Empty", "PreparingRebalance"}, .nstates = 2);
	CH_CHECK_EQ_INT(l->nrows, 2);
	CH_CHECK(h_row_group(l, "solo") && !strcmp(h_row_group(l, "solo")->state, "Empty"));
	CH_CHECK(h_row_group(l, "prep") &&
		 !strcmp(h_row_group(l, "prep")->state, "PreparingRebalance"));
	l = H_LIST(h, .v = H_V(5), .types = {"classic"}, .ntypes = 1);
	CH_CHECK_EQ_INT(l->nrows, 3);
	if (l->nrows > 0)
		CH_CHECK_EQ_STR(l->rows[0].group_type, "classic");
	l = H_LIST(h, .v = H_V(5), .types = {"consumer"}, .ntypes = 1);
	CH_CHECK_EQ_INT(l->nrows, 0);
	fin(h);
}

static void
t_describe_groups(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	h_form_group(h, G, 2, ids);
	const char *gs[] = {G, "nogroup"};
	h_req *d = h_describe(h, H_V(5), gs, 2);
	CH_CHECK(h_done(d));
	const h_row *w = h_row_group(d, G);
	CH_CHECK(w && w->error == 0 && !strcmp(w->state, "Stable") &&
		 !strcmp(w->protocol_type, "consumer") && !strcmp(w->protocol, "range"));
	w = h_row_group(d, "nogroup");
	CH_CHECK(w && w->error == 0 && !strcmp(w->state, "Dead"));
	const h_row *m0 = h_row_member(d, ids[0]), *m1 = h_row_member(d, ids[1]);
	CH_CHECK(m0 && m1);
	if (m0 && m1) {
		CH_CHECK(h_blob_str(m0->assignment, "A0"));
		CH_CHECK(h_blob_str(m1->assignment, "A1"));
		CH_CHECK(m0->metadata.len > 0);
		CH_CHECK_EQ_STR(m0->client_id, "c0");
		CH_CHECK(strlen(m0->client_host) > 0);
	}
	/* while rebalancing: no protocol, no metadata, the assignment still held
	 * (Kafka 4's describeNoMetadata) */
	H_JOIN(h, .v = H_V(5), .group = G, .member = ids[0]);
	d = h_describe(h, H_V(0), gs, 1);
	w = h_row_group(d, G);
	CH_CHECK(w && !strcmp(w->state, "PreparingRebalance") && !strcmp(w->protocol, ""));
	m0 = h_row_member(d, ids[0]);
	CH_CHECK(m0 && h_blob_str(m0->assignment, "A0") && m0->metadata.len == 0);
	fin(h);
}

static void
t_delete_groups(void)
{
	h_env *h = env();
	char ids[1][H_STR];
	h_form_group(h, G, 1, ids);
	seed_offsets(h, "solo");
	const char *gs[] = {"nogroup", G, "solo"};
	h_req *d = h_delete_groups(h, H_V(2), gs, 3);
	CH_CHECK(h_done(d));
	CH_CHECK(h_row_group(d, "nogroup") &&
		 h_row_group(d, "nogroup")->error == CH_KERR_GROUP_ID_NOT_FOUND);
	CH_CHECK(h_row_group(d, G) && h_row_group(d, G)->error == CH_KERR_NON_EMPTY_GROUP);
	CH_CHECK(h_row_group(d, "solo") && h_row_group(d, "solo")->error == 0);
	CH_CHECK(!EXISTS(h, "solo") || STATE(h, "solo") == CH_COORD_GROUP_DEAD);
	CH_CHECK_EQ_INT(h_count_records(h, "solo", 1, true), 3); /* offset tombstones */
	CH_CHECK(h_count_records(h, "solo", 2, true) >= 1);      /* group tombstone */
	h_req *f = H_FETCH(h, .v = H_V(7), .groups = {{"solo", .ntopics = -1}});
	CH_CHECK_EQ_INT(f->nrows, 0);
	const char *s1[] = {"solo"};
	d = h_describe(h, H_V(5), s1, 1);
	CH_CHECK(h_row_group(d, "solo") && !strcmp(h_row_group(d, "solo")->state, "Dead"));
	/* after the member leaves, the group can be deleted */
	H_LEAVE(h, .v = H_V(0), .group = G, .member = ids[0]);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_EMPTY);
	const char *g1[] = {G};
	d = h_delete_groups(h, H_V(0), g1, 1);
	CH_CHECK(h_row_group(d, G) && h_row_group(d, G)->error == 0);
	fin(h);
}

static void
t_offset_delete(void)
{
	h_env *h = env();
	char ids[1][H_STR];
	int32_t gen = h_form_group(h, G, 1, ids); /* subscribed to "t" */
	H_COMMIT(h, .group = G, .member = ids[0], .gen = gen,
		 .offsets = {{"t", 0, 1}, {"other", 0, 2}}, .noffsets = 2);
	h_tp tps[] = {{"t", {0}, 1}, {"other", {0}, 1}};
	h_req *d = h_offset_delete(h, G, tps, 2);
	CH_CHECK(h_done(d));
	CH_CHECK_EQ_INT(d->error, 0);
	CH_CHECK(h_row_tp(d, NULL, "t", 0) &&
		 h_row_tp(d, NULL, "t", 0)->error == CH_KERR_GROUP_SUBSCRIBED_TO_TOPIC);
	CH_CHECK(h_row_tp(d, NULL, "other", 0) && h_row_tp(d, NULL, "other", 0)->error == 0);
	CH_CHECK_EQ_INT(h_count_records(h, G, 1, true), 1);
	CH_CHECK_EQ_INT(info(h, G).offsets, 1);
	d = h_offset_delete(h, "nogroup", tps, 1);
	CH_CHECK_EQ_INT(d->error, CH_KERR_GROUP_ID_NOT_FOUND);
	/* Empty group: everything can go */
	seed_offsets(h, "solo");
	h_tp t2[] = {{"t", {0, 1}, 2}};
	d = h_offset_delete(h, "solo", t2, 1);
	CH_CHECK(d->error == 0 && d->nrows == 2 && d->rows[0].error == 0);
	CH_CHECK_EQ_INT(info(h, "solo").offsets, 1);
	fin(h);
}

/* ===================================================================== */
/* Retention and replay                                                   */
/* ===================================================================== */

#define DAY INT64_C(86400000)

static void
t_retention_from_empty(void)
{
	h_env *h = env();
	char ids[1][H_STR];
	/* long sessions so a few heartbeats cover days */
	h_req *j = H_JOIN(h, .v = H_V(3), .group = G, .session_ms = 1800000);
	h_advance(h, 3001);
	CH_CHECK(h_done(j));
	strcpy(ids[0], j->member_id);
	int32_t gen = j->generation;
	H_SYNC(h, .group = G, .member = ids[0], .gen = gen,
	       .assign = {{ids[0], (const uint8_t *)"x", 1}}, .nassign = 1);
	H_COMMIT(h, .group = G, .member = ids[0], .gen = gen, .offsets = {{"t", 0, 5}},
		 .noffsets = 1);
	int64_t start = h->now;
	while (h->now < start + 8 * DAY) {
		h_advance(h, 600000);
		H_HB(h, .group = G, .member = ids[0], .gen = gen);
	}
	/* still there: a Stable group subscribed to "t" keeps its offsets */
	CH_CHECK_EQ_INT(info(h, G).offsets, 1);
	H_LEAVE(h, .v = H_V(0), .group = G, .member = ids[0]);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_EMPTY);
	int64_t empty_at = h->now;
	h_advance_to(h, empty_at + 7 * DAY - 11 * 60000);
	CH_CHECK_EQ_INT(info(h, G).offsets, 1);
	h_advance_to(h, empty_at + 7 * DAY + 11 * 60000);
	CH_CHECK(!EXISTS(h, G) || info(h, G).offsets == 0);
	CH_CHECK(!EXISTS(h, G) || STATE(h, G) == CH_COORD_GROUP_DEAD);
	CH_CHECK_EQ_INT(h_count_records(h, G, 1, true), 1);
	CH_CHECK(h_count_records(h, G, 2, true) >= 1);
	fin(h);
}

static void
t_retention_standalone_by_commit_time(void)
{
	h_env *h = env();
	seed_offsets(h, "solo");
	h_advance(h, 3 * DAY);
	H_COMMIT(h, .group = "solo", .gen = -1, .offsets = {{"t", 0, 11}}, .noffsets = 1);
	h_advance_to(h, T0 + 7 * DAY + 11 * 60000);
	/* t/1 and u/0 expired (7 days after their commit); t/0 recommitted */
	CH_CHECK_EQ_INT(info(h, "solo").offsets, 1);
	CH_CHECK_EQ_INT(h_count_records(h, "solo", 1, true), 2);
	h_advance_to(h, T0 + 10 * DAY + 11 * 60000);
	CH_CHECK(!EXISTS(h, "solo") || info(h, "solo").offsets == 0);
	fin(h);
}

static void
t_replay_rebuilds_groups(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	int32_t gen = h_form_group(h, G, 2, ids);
	H_COMMIT(h, .group = G, .member = ids[0], .gen = gen, .offsets = {{"t", 0, 7}, {"t", 1, 8}},
		 .noffsets = 2);
	seed_offsets(h, "solo");
	seed_offsets(h, "gone");
	const char *gone[] = {"gone"};
	h_delete_groups(h, H_V(2), gone, 1);
	ch_coord_group_info before = info(h, G);

	h_env *r = h_replay(h);
	ch_coord_group_info after = info(r, G);
	CH_CHECK(after.exists);
	CH_CHECK_EQ_INT(after.state, CH_COORD_GROUP_STABLE);
	CH_CHECK_EQ_INT(after.generation, before.generation);
	CH_CHECK_EQ_INT(after.members, 2);
	CH_CHECK_EQ_INT(after.offsets, 2);
	CH_CHECK(after.leader && before.leader && !strcmp(after.leader, before.leader));
	CH_CHECK(after.protocol && !strcmp(after.protocol, "range"));
	CH_CHECK_EQ_INT(info(r, "solo").offsets, 3);
	CH_CHECK(!EXISTS(r, "gone") || STATE(r, "gone") == CH_COORD_GROUP_DEAD);
	h_req *f = H_FETCH(r, .v = H_V(8), .groups = {{G, .ntopics = -1}, {"solo", .ntopics = -1}},
			   .ngroups = 2);
	CH_CHECK(h_row_tp(f, G, "t", 0) && h_row_tp(f, G, "t", 0)->offset == 7);
	CH_CHECK(h_row_tp(f, G, "t", 1) && h_row_tp(f, G, "t", 1)->offset == 8);
	CH_CHECK(h_row_tp(f, "solo", "u", 0) && h_row_tp(f, "solo", "u", 0)->offset == 30);
	/* members carry on with the same generation and assignments */
	h_req *hb = H_HB(r, .group = G, .member = ids[1], .gen = gen);
	CH_CHECK_EQ_INT(hb->error, 0);
	h_req *s = H_SYNC(r, .group = G, .member = ids[1], .gen = gen);
	CH_CHECK(h_done(s) && s->error == 0 && h_blob_str(s->assignment, "A1"));
	/* a second generation of replay is stable too */
	h_env *r2 = h_replay(r);
	CH_CHECK_EQ_INT(info(r2, G).generation, before.generation);
	CH_CHECK_EQ_INT(info(r2, "solo").offsets, 3);
	fin(r2);
	fin(r);
	fin(h);
}

static void
t_replay_empty_group_and_static(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	int32_t gen = form_static(h, 2, ids);
	/* static replacement in Stable is stored */
	h_req *j = H_JOIN(h, .v = H_V(5), .group = G, .instance = "i1");
	CH_CHECK(h_done(j));
	char nid[H_STR];
	strcpy(nid, j->member_id);
	seed_offsets(h, "solo");
	h_env *r = h_replay(h);
	CH_CHECK_EQ_INT(STATE(r, G), CH_COORD_GROUP_STABLE);
	CH_CHECK_EQ_INT(info(r, G).generation, gen);
	h_req *hb = H_HB(r, .group = G, .member = nid, .gen = gen, .instance = "i1");
	CH_CHECK_EQ_INT(hb->error, 0);
	hb = H_HB(r, .group = G, .member = ids[1], .gen = gen, .instance = "i1");
	CH_CHECK_EQ_INT(hb->error, CH_KERR_FENCED_INSTANCE_ID);
	CH_CHECK_EQ_INT(STATE(r, "solo"), CH_COORD_GROUP_EMPTY);
	fin(r);
	fin(h);
}

/* ===================================================================== */
/* Loading __consumer_offsets partitions (CoordinatorRuntime's states)    */
/* ===================================================================== */

/* Every group API for G, as Kafka's GroupCoordinatorService answers them
 * while G's partition is not loaded: load_err is COORDINATOR_LOAD_IN_PROGRESS
 * (LOADING) or NOT_COORDINATOR (UNLOADED, LOAD_FAILED). Nothing may be
 * appended and no offsets may be shown. */
static void
check_refused(h_env *h, int16_t load_err, const char *member, int32_t gen)
{
	bool loading = load_err == CH_KERR_COORDINATOR_LOAD_IN_PROGRESS;
	size_t appends = h->nappends;
	h_req *r = H_JOIN(h, .v = H_V(5), .group = G, .member = member);
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, load_err);
	r = H_JOIN(h, .v = H_V(9), .group = G);
	CH_CHECK_EQ_INT(r->error, load_err);
	r = H_SYNC(h, .v = H_V(3), .group = G, .member = member, .gen = gen);
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->error, loading ? CH_KERR_REBALANCE_IN_PROGRESS : load_err);
	r = H_HB(h, .group = G, .member = member, .gen = gen);
	CH_CHECK_EQ_INT(r->error, loading ? CH_KERR_NONE : load_err);
	r = H_LEAVE(h, .v = H_V(1), .group = G, .member = member);
	CH_CHECK_EQ_INT(r->error, load_err);
	r = H_LEAVE(h, .group = G, .members = {{member}}, .nmembers = 1);
	CH_CHECK_EQ_INT(r->error, load_err);
	CH_CHECK_EQ_INT(r->nrows, 0);
	r = H_COMMIT(h, .group = G, .member = member, .gen = gen,
		     .offsets = {{"t", 0, 90}, {"t", 1, 91}}, .noffsets = 2);
	CH_CHECK(h_done(r));
	CH_CHECK_EQ_INT(r->nrows, 2);
	for (int i = 0; i < r->nrows; i++)
		CH_CHECK_EQ_INT(r->rows[i].error, load_err);
	r = H_COMMIT(h, .v = H_V(2), .group = G, .gen = -1, .offsets = {{"t", 0, 92}},
		     .noffsets = 1);
	CH_CHECK(h_row_tp(r, NULL, "t", 0) && h_row_tp(r, NULL, "t", 0)->error == load_err);
	/* OffsetFetch: an error, never "nothing committed" (offset -1, no error) */
	r = H_FETCH(h, .groups = {{G, .topics = {{"t", {0, 1}, 2}}, .ntopics = 1}}, .ngroups = 1);
	CH_CHECK(h_row_group(r, G) && h_row_group(r, G)->error == load_err);
	CH_CHECK(h_row_tp(r, G, "t", 0) == NULL);
	r = H_FETCH(h, .v = H_V(8), .groups = {{G, .ntopics = -1}}, .ngroups = 1);
	CH_CHECK(h_row_group(r, G) && h_row_group(r, G)->error == load_err);
	for (int v = 2; v <= 7; v++) {
		r = H_FETCH(h, .v = H_V(v),
			    .groups = {{G, .topics = {{"t", {0}, 1}}, .ntopics = 1}});
		CH_CHECK_EQ_INT(r->error, load_err);
		CH_CHECK_EQ_INT(r->nrows, 0);
	}
	for (int v = 0; v <= 1; v++) {
		r = H_FETCH(h, .v = H_V(v),
			    .groups = {{G, .topics = {{"t", {0, 1}, 2}}, .ntopics = 1}});
		CH_CHECK_EQ_INT(r->nrows, 2);
		for (int i = 0; i < r->nrows; i++) {
			CH_CHECK_EQ_INT(r->rows[i].error, load_err);
			CH_CHECK_EQ_INT(r->rows[i].offset, -1);
		}
	}
	const char *groups[] = {G};
	r = h_describe(h, H_V(5), groups, 1);
	CH_CHECK(h_row_group(r, G) && h_row_group(r, G)->error == load_err);
	CH_CHECK(h_row_member(r, member) == NULL);
	r = h_delete_groups(h, H_V(2), groups, 1);
	CH_CHECK(h_row_group(r, G) && h_row_group(r, G)->error == load_err);
	h_tp tp = {"t", {0}, 1};
	r = h_offset_delete(h, G, &tp, 1);
	CH_CHECK_EQ_INT(r->error, load_err);
	CH_CHECK_EQ_INT(h->nappends, appends);
}

/* A group on another partition than G's. */
static const char *
other_group(h_env *h)
{
	static const char *cands[] = {"other", "solo", "g1", "g2", "g3"};
	int32_t pg = ch_coord_partition_for(h->c, ch_str_c(G));
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++)
		if (ch_coord_partition_for(h->c, ch_str_c(cands[i])) != pg)
			return cands[i];
	abort();
}

static void
t_load_state_basics(void)
{
	h_env *h = h_new_unloaded(NULL, T0);
	int32_t n = h->cfg.offsets_partitions;
	CH_CHECK_EQ_INT(ch_coord_partition_count(h->c, CH_COORD_UNLOADED), n);
	CH_CHECK_EQ_INT(ch_coord_partition_state(h->c, 3), CH_COORD_UNLOADED);
	CH_CHECK_EQ_INT(ch_coord_partition_state(h->c, -1), CH_COORD_UNLOADED);
	CH_CHECK_EQ_INT(ch_coord_partition_state(h->c, n), CH_COORD_UNLOADED);
	CH_CHECK(!ch_coord_load_begin(h->c, -1));
	CH_CHECK(!ch_coord_load_begin(h->c, n));
	/* load_end without a load_begin changes nothing */
	CH_CHECK_EQ_INT(ch_coord_load_end(h->c, h->now, 3, true), 0);
	CH_CHECK_EQ_INT(ch_coord_partition_state(h->c, 3), CH_COORD_UNLOADED);
	CH_CHECK(ch_coord_load_begin(h->c, 3));
	CH_CHECK_EQ_INT(ch_coord_partition_state(h->c, 3), CH_COORD_LOADING);
	ch_coord_load_end(h->c, h->now, 3, false);
	CH_CHECK_EQ_INT(ch_coord_partition_state(h->c, 3), CH_COORD_LOAD_FAILED);
	CH_CHECK(ch_coord_load_begin(h->c, 4));
	ch_coord_load_end(h->c, h->now, 4, true);
	CH_CHECK_EQ_INT(ch_coord_partition_state(h->c, 4), CH_COORD_LOADED);
	CH_CHECK(!ch_coord_load_begin(h->c, 4)); /* loaded stays loaded */
	CH_CHECK_EQ_INT(ch_coord_partition_state(h->c, 4), CH_COORD_LOADED);
	/* load_done serves everything but what failed */
	CH_CHECK(ch_coord_load_begin(h->c, 5));
	ch_coord_load_done(h->c, h->now);
	CH_CHECK_EQ_INT(ch_coord_partition_count(h->c, CH_COORD_LOADED), n - 1);
	CH_CHECK_EQ_INT(ch_coord_partition_state(h->c, 5), CH_COORD_LOADED);
	CH_CHECK_EQ_INT(ch_coord_partition_state(h->c, 3), CH_COORD_LOAD_FAILED);
	CH_CHECK_EQ_STR(ch_coord_load_state_name(CH_COORD_LOAD_FAILED), "LoadFailed");
	CH_CHECK_EQ_STR(ch_coord_load_state_name(CH_COORD_LOADING), "Loading");
	fin(h);
}

/* Before and while its partition loads, a group is refused as Kafka does;
 * groups on loaded partitions are served meanwhile; once loaded it serves
 * the stored state. */
static void
t_load_refuses_until_loaded(void)
{
	h_env *src = env();
	char ids[2][H_STR];
	int32_t gen = h_form_group(src, G, 2, ids);
	H_COMMIT(src, .group = G, .member = ids[0], .gen = gen, .offsets = {{"t", 0, 7}},
		 .noffsets = 1);
	int32_t pg = ch_coord_partition_for(src->c, ch_str_c(G));
	const char *other = other_group(src);
	int32_t po = ch_coord_partition_for(src->c, ch_str_c(other));

	h_env *h = h_new_unloaded(NULL, src->now);
	check_refused(h, CH_KERR_NOT_COORDINATOR, ids[1], gen);
	CH_CHECK(!EXISTS(h, G)); /* refused requests create nothing */
	h_req *l = H_LIST(h);
	CH_CHECK_EQ_INT(l->error, 0); /* unloaded partitions add nothing */
	CH_CHECK_EQ_INT(l->nrows, 0);

	/* another partition loads and serves while G's does not */
	h_load_partition(h, src, po, true);
	h_req *c = H_COMMIT(h, .group = other, .gen = -1, .offsets = {{"t", 0, 5}}, .noffsets = 1);
	CH_CHECK(h_done(c) && c->rows[0].error == 0);

	CH_CHECK(ch_coord_load_begin(h->c, pg));
	check_refused(h, CH_KERR_COORDINATOR_LOAD_IN_PROGRESS, ids[1], gen);
	l = H_LIST(h);
	CH_CHECK_EQ_INT(l->error, CH_KERR_COORDINATOR_LOAD_IN_PROGRESS);
	CH_CHECK_EQ_INT(l->nrows, 0);
	/* ... and the other partition's groups go on */
	c = H_COMMIT(h, .group = other, .gen = -1, .offsets = {{"t", 0, 6}}, .noffsets = 1);
	CH_CHECK(h_done(c) && c->rows[0].error == 0);

	CH_CHECK_EQ_INT(h_load_partition(h, src, pg, true), 1);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_STABLE);
	CH_CHECK_EQ_INT(info(h, G).generation, gen);
	h_req *f =
		H_FETCH(h, .groups = {{G, .topics = {{"t", {0}, 1}}, .ntopics = 1}}, .ngroups = 1);
	CH_CHECK(h_row_group(f, G) && h_row_group(f, G)->error == 0);
	CH_CHECK(h_row_tp(f, G, "t", 0) && h_row_tp(f, G, "t", 0)->offset == 7);
	h_req *hb = H_HB(h, .group = G, .member = ids[1], .gen = gen);
	CH_CHECK_EQ_INT(hb->error, 0);
	l = H_LIST(h);
	CH_CHECK_EQ_INT(l->error, 0);
	CH_CHECK(h_row_group(l, G) != NULL);
	fin(h);
	fin(src);
}

/* A load that fails drops what it had read (nothing is written) and leaves
 * the partition LOAD_FAILED: NOT_COORDINATOR, also after timers ran. A
 * later load from the same log serves the whole state again. */
static void
t_load_failure_then_retry(void)
{
	h_env *src = env();
	char ids[2][H_STR];
	int32_t gen = h_form_group(src, G, 2, ids);
	H_COMMIT(src, .group = G, .member = ids[0], .gen = gen,
		 .offsets = {{"t", 0, 7}, {"t", 1, 8}}, .noffsets = 2);
	int32_t pg = ch_coord_partition_for(src->c, ch_str_c(G));
	const char *other = other_group(src);
	seed_offsets(src, other);

	h_env *h = h_new_unloaded(NULL, src->now);
	for (int32_t p = 0; p < h->cfg.offsets_partitions; p++)
		if (p != pg)
			h_load_partition(h, src, p, true);
	CH_CHECK_EQ_INT(h_load_partition(h, src, pg, false), 1); /* read, then dropped */
	CH_CHECK_EQ_INT(ch_coord_partition_state(h->c, pg), CH_COORD_LOAD_FAILED);
	CH_CHECK_EQ_INT(ch_coord_partition_count(h->c, CH_COORD_LOAD_FAILED), 1);
	CH_CHECK(!EXISTS(h, G));
	CH_CHECK_EQ_INT(h->nappends, 0);
	check_refused(h, CH_KERR_NOT_COORDINATOR, ids[0], gen);
	h_req *l = H_LIST(h);
	CH_CHECK_EQ_INT(l->error, 0);
	CH_CHECK(h_row_group(l, other) != NULL && h_row_group(l, G) == NULL);
	/* retention and session timers run; G stays refused, nothing written */
	size_t appends = h->nappends;
	h_advance(h, h->cfg.offsets_retention_check_ms + 60000);
	CH_CHECK_EQ_INT(h->nappends, appends);
	CH_CHECK_EQ_INT(info(h, other).offsets, 3);
	check_refused(h, CH_KERR_NOT_COORDINATOR, ids[0], gen);

	/* the retry reads the same log again */
	CH_CHECK_EQ_INT(h_load_partition(h, src, pg, true), 1);
	CH_CHECK_EQ_INT(ch_coord_partition_count(h->c, CH_COORD_LOAD_FAILED), 0);
	CH_CHECK_EQ_INT(STATE(h, G), CH_COORD_GROUP_STABLE);
	CH_CHECK_EQ_INT(info(h, G).members, 2);
	h_req *f = H_FETCH(h, .v = H_V(1),
			   .groups = {{G, .topics = {{"t", {0, 1}, 2}}, .ntopics = 1}});
	CH_CHECK(h_row_tp(f, NULL, "t", 0) && h_row_tp(f, NULL, "t", 0)->offset == 7 &&
		 h_row_tp(f, NULL, "t", 0)->error == 0);
	CH_CHECK(h_row_tp(f, NULL, "t", 1) && h_row_tp(f, NULL, "t", 1)->offset == 8);
	/* the members' sessions started at the load: they expire without heartbeats */
	h_req *hb = H_HB(h, .group = G, .member = ids[0], .gen = gen);
	CH_CHECK_EQ_INT(hb->error, 0);
	h_advance(h, 11000);
	CH_CHECK_EQ_INT(info(h, G).members, 0);
	fin(h);
	fin(src);
}

/* Every error cell of the state table that a request in the group's
 * current state reaches is what that request is answered (member `mid` of
 * generation `gen` sends it, so cells with a member check pass it). */
static void
check_answer_cells(h_env *h, const char *mid, int32_t gen)
{
	ch_coord_group_info i = ch_coord_group_get_info(h->c, G);
	int col = i.exists ? (int)i.state + 1 : COORD_COL_NO_GROUP;
	const coord_rule *r;
	if ((r = ch_coord_rule_at(REQ_HEARTBEAT, col))->act == ACT_ANSWER)
		CH_CHECK_EQ_INT(H_HB(h, .group = G, .member = mid, .gen = gen)->error, r->err);
	if ((r = ch_coord_rule_at(REQ_SYNC, col))->act == ACT_ANSWER)
		CH_CHECK_EQ_INT(
			H_SYNC(h, .v = H_V(3), .group = G, .member = mid, .gen = gen)->error,
			r->err);
	if ((r = ch_coord_rule_at(REQ_COMMIT, col))->act == ACT_ANSWER) {
		h_req *c = H_COMMIT(h, .v = H_V(7), .group = G, .member = mid, .gen = gen,
				    .offsets = {{"t", 0, 1}}, .noffsets = 1);
		CH_CHECK(c->nrows == 1 && c->rows[0].error == r->err);
	}
	if ((r = ch_coord_rule_at(REQ_DELETE, col))->act == ACT_ANSWER) {
		const char *gs[] = {G};
		h_req *d = h_delete_groups(h, H_V(2), gs, 1);
		CH_CHECK(d->nrows == 1 && d->rows[0].error == r->err);
	}
	r = ch_coord_rule_at(REQ_JOIN_UNKNOWN, col);
	CH_CHECK(r->act == ACT_ANSWER);
	CH_CHECK_EQ_INT(H_JOIN(h, .v = H_V(5), .group = G, .member = "nobody")->error, r->err);
	CH_CHECK_EQ_INT(ch_coord_group_get_info(h->c, G).state, i.state); /* none moved it */
}

/* The error cells of the state table, in every state a group reaches. */
static void
t_state_table_answers(void)
{
	h_env *h = env();
	char ids[2][H_STR];
	check_answer_cells(h, "nobody", 0); /* no group */
	int32_t gen = h_form_group(h, G, 2, ids);
	CH_CHECK(info(h, G).state == CH_COORD_GROUP_STABLE);
	check_answer_cells(h, ids[0], gen);
	H_JOIN(h, .v = H_V(5), .group = G, .member = ids[0]); /* the leader: rebalance */
	CH_CHECK(info(h, G).state == CH_COORD_GROUP_PREPARING_REBALANCE);
	check_answer_cells(h, ids[1], gen);
	h_req *j1 = H_JOIN(h, .v = H_V(5), .group = G, .member = ids[1]);
	CH_CHECK(h_done(j1) && info(h, G).state == CH_COORD_GROUP_COMPLETING_REBALANCE);
	check_answer_cells(h, ids[1], j1->generation);
	H_LEAVE(h, .v = H_V(3), .group = G, .members = {{ids[0]}, {ids[1]}}, .nmembers = 2);
	CH_CHECK(info(h, G).state == CH_COORD_GROUP_EMPTY);
	check_answer_cells(h, ids[0], j1->generation);
	fin(h);
}

/* The state table in ch_coord.h is the one the code reads
 * (ch_coord_table.c). GROUP_STATE_TABLE_WRITE=1 rewrites the header's copy. */
static void
t_state_table_in_header(void)
{
	static char want[1 << 16];
	size_t n = ch_coord_state_table(want, sizeof(want));
	CH_CHECK(n > 0 && n < sizeof(want));
	const char *path = CH_SOURCE_DIR "/src/group/ch_coord.h";
	FILE *f = fopen(path, "rb");
	CH_CHECK(f != NULL);
	if (!f)
		return;
	static char hdr[1 << 18];
	size_t len = fread(hdr, 1, sizeof(hdr) - 1, f);
	fclose(f);
	hdr[len] = '\0';
	const char *begin = " * BEGIN STATE TABLE\n", *end = " * END STATE TABLE\n";
	char *b = strstr(hdr, begin);
	char *e = b ? strstr(b, end) : NULL;
	CH_CHECK(b && e);
	if (!b || !e)
		return;
	b += strlen(begin);
	bool same = (size_t)(e - b) == n && memcmp(b, want, n) == 0;
	if (!same && getenv("GROUP_STATE_TABLE_WRITE")) {
		f = fopen(path, "wb");
		CH_CHECK(f != NULL);
		if (f) {
			fwrite(hdr, 1, (size_t)(b - hdr), f);
			fwrite(want, 1, n, f);
			fputs(e, f);
			same = fclose(f) == 0;
			fprintf(stderr, "rewrote the state table in %s\n", path);
		}
	}
	if (!same)
		fprintf(stderr,
			"%s: the state table differs from ch_coord_table.c's rules; rewrite it "
			"with "
			"GROUP_STATE_TABLE_WRITE=1 group_test_coord t_state_table_in_header. The "
			"code's table:\n%s",
			path, want);
	CH_CHECK(same);
}

static void
t_partition_for(void)
{
	h_env *h = env();
	/* Java: "grp".hashCode() = 102629 -> 29 */
	CH_CHECK_EQ_INT(ch_coord_partition_for(h->c, ch_str_c("grp")), 29);
	/* "polygenelubricants".hashCode() == Integer.MIN_VALUE -> Utils.abs -> 0 */
	CH_CHECK_EQ_INT(ch_coord_partition_for(h->c, ch_str_c("polygenelubricants")), 0);
	/* negative: "my-group".hashCode() = -1906497762 -> 12 */
	CH_CHECK_EQ_INT(ch_coord_partition_for(h->c, ch_str_c("my-group")), 12);
	fin(h);
}

CH_TEST_MAIN(CH_TEST(t_load_state_basics), CH_TEST(t_load_refuses_until_loaded),
	     CH_TEST(t_load_failure_then_retry), CH_TEST(t_join_invalid_group_id),
	     CH_TEST(t_join_invalid_session_timeout), CH_TEST(t_join_member_id_required),
	     CH_TEST(t_join_pending_member_expires), CH_TEST(t_join_v3_direct),
	     CH_TEST(t_join_unknown_member_unknown_group),
	     CH_TEST(t_join_inconsistent_protocol_type), CH_TEST(t_join_no_common_protocol),
	     CH_TEST(t_join_protocol_vote), CH_TEST(t_join_group_max_size),
	     CH_TEST(t_join_first_member_leads_metadata), CH_TEST(t_join_initial_delay),
	     CH_TEST(t_join_initial_delay_extended), CH_TEST(t_join_initial_delay_bounded),
	     CH_TEST(t_join_initial_quiet_ends_at_delay),
	     CH_TEST(t_join_initial_quiet_extends_while_arriving),
	     CH_TEST(t_join_initial_quiet_waits_for_member_id_required),
	     CH_TEST(t_join_initial_quiet_bounded), CH_TEST(t_join_initial_quiet_not_beyond_delay),
	     CH_TEST(t_join_in_completing_waits_for_sync),
	     CH_TEST(t_join_in_completing_waits_for_late_follower),
	     CH_TEST(t_join_in_completing_not_stored), CH_TEST(t_join_in_completing_retry),
	     CH_TEST(t_join_in_completing_other_protocol_rebalances),
	     CH_TEST(t_join_nonempty_completes_when_all_rejoined),
	     CH_TEST(t_join_rebalance_timeout_removes_members),
	     CH_TEST(t_join_stable_same_metadata_no_rebalance),
	     CH_TEST(t_join_stable_changed_metadata_rebalances),
	     CH_TEST(t_join_stable_leader_rejoin_rebalances),
	     CH_TEST(t_join_completing_same_metadata_returns_current),
	     CH_TEST(t_sync_follower_before_leader), CH_TEST(t_sync_follower_after_leader),
	     CH_TEST(t_sync_left_out_member_gets_empty_assignment),
	     CH_TEST(t_sync_waits_for_durable_store), CH_TEST(t_sync_store_failure),
	     CH_TEST(t_sync_new_generation_while_old_store_in_flight),
	     CH_TEST(t_session_timer_survives_parked_sync), CH_TEST(t_sync_illegal_generation),
	     CH_TEST(t_sync_unknown_member), CH_TEST(t_sync_rebalance_in_progress),
	     CH_TEST(t_sync_pending_completing_gets_rebalance_in_progress),
	     CH_TEST(t_sync_v5_inconsistent_protocol),
	     CH_TEST(t_sync_pending_members_removed_at_timeout), CH_TEST(t_hb_states),
	     CH_TEST(t_hb_keeps_session_alive), CH_TEST(t_session_expiry_rebalances),
	     CH_TEST(t_session_expiry_of_awaiting_new_member), CH_TEST(t_leave_v0_single),
	     CH_TEST(t_leave_v3_batch), CH_TEST(t_leave_by_instance_id),
	     CH_TEST(t_leave_last_member_empties_group), CH_TEST(t_leave_pending_member),
	     CH_TEST(t_static_rejoin_replaces_and_fences),
	     CH_TEST(t_static_leader_rejoin_v9_skip_assignment),
	     CH_TEST(t_static_leader_rejoin_v5_old_leader_id),
	     CH_TEST(t_static_rejoin_completing_rebalances),
	     CH_TEST(t_static_changed_protocol_rebalances),
	     CH_TEST(t_static_not_removed_at_join_timeout),
	     CH_TEST(t_static_session_expiry_removes), CH_TEST(t_commit_member_ok_and_fetch),
	     CH_TEST(t_commit_member_checks), CH_TEST(t_commit_preparing_old_generation_accepted),
	     CH_TEST(t_commit_completing_rebalance_in_progress),
	     CH_TEST(t_commit_standalone_creates_group), CH_TEST(t_commit_metadata_too_large),
	     CH_TEST(t_commit_metadata_is_bytes), CH_TEST(t_commit_answered_after_append),
	     CH_TEST(t_append_completions_any_order), CH_TEST(t_commit_append_failure),
	     CH_TEST(t_commit_unknown_partition), CH_TEST(t_fetch_v1_to_v7),
	     CH_TEST(t_fetch_all_topics), CH_TEST(t_fetch_v8_multi_group), CH_TEST(t_list_groups),
	     CH_TEST(t_describe_groups), CH_TEST(t_delete_groups), CH_TEST(t_offset_delete),
	     CH_TEST(t_retention_from_empty), CH_TEST(t_retention_standalone_by_commit_time),
	     CH_TEST(t_replay_rebuilds_groups), CH_TEST(t_replay_empty_group_and_static),
	     CH_TEST(t_partition_for), CH_TEST(t_state_table_in_header),
	     CH_TEST(t_state_table_answers))
