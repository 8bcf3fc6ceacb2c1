/*
 * assign_unit_test.c: worked examples with their expected assignments, from
 * Apache Kafka's documentation (StickyAssignor javadoc, KIP-54, KIP-881)
 * and test suites (RangeAssignorTest, RoundRobinAssignorTest,
 * AbstractStickyAssignorTest, CooperativeStickyAssignorTest and the group
 * coordinator's RangeAssignorTest), plus the user-data codecs. Every run is
 * also put through the property checker.
 */
#include <stdlib.h>
#include <string.h>

#include "assign_check.h"
#include "common/ch_test.h"
#include "proto/ch_wr.h"

static int32_t
T(ac_group *g, const char *name)
{
	for (int32_t t = 0; t < g->nt; t++)
		if (strcmp(g->tname[t], name) == 0)
			return t;
	return -1;
}

/* "a,b,c" */
static void
sub(ac_group *g, int32_t m, const char *topics)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", topics);
	for (char *s = strtok(buf, ","); s; s = strtok(NULL, ","))
		ac_subscribe(g, m, T(g, s));
}

/* "t1-0 t1-1 t2-0" */
static void
own(ac_group *g, int32_t m, const char *tps, int32_t gen)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", tps);
	for (char *s = strtok(buf, " "); s; s = strtok(NULL, " ")) {
		char *dash = strrchr(s, '-');
		*dash = 0;
		ac_own(g, m, T(g, s), atoi(dash + 1));
	}
	g->m[m].generation = gen;
}

static int32_t
mem(ac_group *g, const char *id, const char *topics)
{
	int32_t m = ac_add_member(g, id, NULL, NULL);
	sub(g, m, topics);
	return m;
}

/* The last run's result, read by the test that ran it; freed by the next
 * run, and at exit (so LeakSanitizer sees no leak). */
static ch_assign_result res;

static void
free_last_result(void)
{
	ch_assign_result_free(&res);
}

/* Runs, checks the properties, and checks determinism under a shuffle. */
static void
run(ch_assign_kind kind, ac_group *g)
{
	static bool at_exit;
	if (!at_exit)
		at_exit = atexit(free_last_result) == 0;
	ch_assign_result_free(&res);
	const ch_assign_input *in = ac_input(g);
	CH_CHECK(ch_assign(kind, in, &res) == CH_OK);
	ac_stats st;
	const char *err = ac_check(kind, in, &res, &st);
	if (err) {
		fprintf(stderr, "property: %s\n", err);
		CH_CHECK(err == NULL);
	}
	ac_group sh;
	ch_assign_result r2;
	ac_shuffled(g, &sh, 7);
	const ch_assign_input *in2 = ac_input(&sh);
	CH_CHECK(ch_assign(kind, in2, &r2) == CH_OK);
	CH_CHECK(ac_same(in, &res, in2, &r2));
	ch_assign_result_free(&r2);
	ac_free(&sh);
}

#define GOT(m) ac_fmt(&g.in, &res, (m))

/* ---- range ---------------------------------------------------------------- */

static void
t_range_one_consumer_no_topic(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "t1", 3);
	mem(&g, "c1", "");
	run(CH_ASSIGN_RANGE, &g);
	CH_CHECK_EQ_STR(GOT(0), "");
	ac_free(&g);
}

static void
t_range_mixed_topics(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "topic1", 3);
	ac_add_topic(&g, "topic2", 2);
	mem(&g, "consumer1", "topic1");
	mem(&g, "consumer2", "topic1,topic2");
	mem(&g, "consumer3", "topic1");
	run(CH_ASSIGN_RANGE, &g);
	CH_CHECK_EQ_STR(GOT(0), "topic1-0");
	CH_CHECK_EQ_STR(GOT(1), "topic1-1 topic2-0 topic2-1");
	CH_CHECK_EQ_STR(GOT(2), "topic1-2");
	ac_free(&g);
}

static void
t_range_two_consumers_six_partitions(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "topic1", 3);
	ac_add_topic(&g, "topic2", 3);
	mem(&g, "consumer2", "topic1,topic2");
	mem(&g, "consumer1", "topic1,topic2");
	run(CH_ASSIGN_RANGE, &g);
	CH_CHECK_EQ_STR(GOT(1), "topic1-0 topic1-1 topic2-0 topic2-1");
	CH_CHECK_EQ_STR(GOT(0), "topic1-2 topic2-2");
	ac_free(&g);
}

/* The example: 3 topics x 7 partitions, 3 members: 9/6/6. */
static void
t_range_three_by_seven(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "a", 7);
	ac_add_topic(&g, "b", 7);
	ac_add_topic(&g, "c", 7);
	for (int i = 0; i < 3; i++) {
		char id[8];
		snprintf(id, sizeof(id), "m%d", i);
		mem(&g, id, "a,b,c");
	}
	run(CH_ASSIGN_RANGE, &g);
	CH_CHECK_EQ_INT(res.off[1] - res.off[0], 9);
	CH_CHECK_EQ_INT(res.off[2] - res.off[1], 6);
	CH_CHECK_EQ_INT(res.off[3] - res.off[2], 6);
	CH_CHECK_EQ_STR(GOT(0), "a-0 a-1 a-2 b-0 b-1 b-2 c-0 c-1 c-2");
	ac_free(&g);
}

/* Static members sort first, by group.instance.id (MemberInfo order). */
static void
t_range_static_members_first(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "t", 3);
	int32_t a = mem(&g, "a-dynamic", "t");
	int32_t z = ac_add_member(&g, "z-static", "instance-1", NULL);
	sub(&g, z, "t");
	int32_t y = ac_add_member(&g, "b-static", "instance-2", NULL);
	sub(&g, y, "t");
	run(CH_ASSIGN_RANGE, &g);
	CH_CHECK_EQ_STR(GOT(z), "t-0");
	CH_CHECK_EQ_STR(GOT(y), "t-1");
	CH_CHECK_EQ_STR(GOT(a), "t-2");
	ac_free(&g);
}

static ch_str rack_a[] = {{"a", 1}}, rack_b[] = {{"b", 1}}, rack_ab[] = {{"a", 1}, {"b", 1}};

/* KIP-881: partitions whose replicas are on the member's rack go to it. */
static void
t_range_rack_aware(void)
{
	ac_group g;
	ac_init(&g);
	int32_t t1 = ac_add_topic(&g, "t1", 4);
	int32_t t2 = ac_add_topic(&g, "t2", 4);
	for (int32_t t = t1; t <= t2; t++) {
		ch_assign_racks *r = malloc(4 * sizeof(*r));
		r[0] = r[1] = (ch_assign_racks){rack_b, 1};
		r[2] = r[3] = (ch_assign_racks){rack_a, 1};
		g.tracks[t] = r;
	}
	int32_t c0 = ac_add_member(&g, "c0", NULL, "a");
	sub(&g, c0, "t1,t2");
	int32_t c1 = ac_add_member(&g, "c1", NULL, "b");
	sub(&g, c1, "t1,t2");
	run(CH_ASSIGN_RANGE, &g);
	CH_CHECK_EQ_STR(GOT(c0), "t1-2 t1-3 t2-2 t2-3");
	CH_CHECK_EQ_STR(GOT(c1), "t1-0 t1-1 t2-0 t2-1");
	/* Only t1 (not co-partitioned with t3): rack matching per topic. */
	ac_free(&g);

	ac_init(&g);
	t1 = ac_add_topic(&g, "t1", 3);
	ch_assign_racks *r = malloc(3 * sizeof(*r));
	r[0] = (ch_assign_racks){rack_b, 1};
	r[1] = (ch_assign_racks){rack_ab, 2};
	r[2] = (ch_assign_racks){rack_a, 1};
	g.tracks[t1] = r;
	c0 = ac_add_member(&g, "c0", NULL, "b");
	sub(&g, c0, "t1");
	c1 = ac_add_member(&g, "c1", NULL, "a");
	sub(&g, c1, "t1");
	run(CH_ASSIGN_RANGE, &g);
	/* quota 1 + one extra: c0 (rack b) takes t1-0 and t1-1, c1 t1-2 */
	CH_CHECK_EQ_STR(GOT(c0), "t1-0 t1-1");
	CH_CHECK_EQ_STR(GOT(c1), "t1-2");
	ac_free(&g);

	/* Every partition on every rack: rack-aware logic does not apply. */
	ac_init(&g);
	t1 = ac_add_topic(&g, "t1", 2);
	r = malloc(2 * sizeof(*r));
	r[0] = r[1] = (ch_assign_racks){rack_ab, 2};
	g.tracks[t1] = r;
	c0 = ac_add_member(&g, "c0", NULL, "b");
	sub(&g, c0, "t1");
	run(CH_ASSIGN_RANGE, &g);
	CH_CHECK_EQ_STR(GOT(c0), "t1-0 t1-1");
	ac_free(&g);
}

/* Kafka's AbstractPartitionAssignorTest layout: brokers on racks
 * brokers[0..nb), partition i of a topic has rf replicas on brokers
 * (i + j + next) % nb; `next` runs on over topics in their listed order. */
static const char *const all_racks[] = {"a", "b", "c", "d"};

static int32_t
rack_topic(ac_group *g, const char *name, int32_t n, int32_t rf, int32_t nb, int32_t *next)
{
	int32_t t = ac_add_topic(g, name, n);
	ch_assign_racks *r = malloc((size_t)n * (sizeof(*r) + (size_t)rf * sizeof(ch_str)));
	ch_str *pool = (ch_str *)(r + n);
	for (int32_t i = 0; i < n; i++) {
		r[i] = (ch_assign_racks){pool + (size_t)i * rf, 0};
		for (int32_t j = 0; j < rf; j++) {
			ch_str x = ch_str_c(all_racks[(i + j + *next) % nb]);
			bool dup = false;
			for (int32_t k = 0; k < r[i].n; k++)
				dup |= ch_str_eq(r[i].rack[k], x);
			if (!dup)
				((ch_str *)r[i].rack)[r[i].n++] = x;
		}
	}
	*next += n;
	g->tracks[t] = r;
	return t;
}

static int32_t
rack_member(ac_group *g, int i, const char *rack, const char *topics)
{
	char id[16];
	snprintf(id, sizeof(id), "consumer%d", i);
	int32_t m = ac_add_member(g, id, NULL, rack);
	sub(g, m, topics);
	return m;
}

/* RangeAssignorTest.testRackAwareAssignmentWithUniformSubscription */
static void
t_range_kip881_uniform_subscription(void)
{
	for (int v = 0; v < 2; v++) {
		ac_group g;
		int32_t next = 0;
		ac_init(&g);
		/* v0: replication 1 on racks a b c; v1: replication 3 on a b (no
		 * rack-aware logic: every partition is on every rack) */
		int32_t rf = v ? 3 : 1, nb = v ? 2 : 3;
		rack_topic(&g, "t1", 6, rf, nb, &next);
		rack_topic(&g, "t2", 7, rf, nb, &next);
		rack_topic(&g, "t3", 2, rf, nb, &next);
		for (int i = 0; i < 3; i++)
			rack_member(&g, i, all_racks[i], "t1,t2,t3");
		run(CH_ASSIGN_RANGE, &g);
		if (v == 0) {
			CH_CHECK_EQ_STR(GOT(0), "t1-0 t1-3 t2-0 t2-3 t2-6");
			CH_CHECK_EQ_STR(GOT(1), "t1-1 t1-4 t2-1 t2-4 t3-0");
			CH_CHECK_EQ_STR(GOT(2), "t1-2 t1-5 t2-2 t2-5 t3-1");
		} else {
			CH_CHECK_EQ_STR(GOT(0), "t1-0 t1-1 t2-0 t2-1 t2-2 t3-0");
			CH_CHECK_EQ_STR(GOT(1), "t1-2 t1-3 t2-3 t2-4 t3-1");
			CH_CHECK_EQ_STR(GOT(2), "t1-4 t1-5 t2-5 t2-6");
		}
		ac_free(&g);
	}
}

/* RangeAssignorTest.testRackAwareAssignmentWithUniformPartitionsNonEqualSubscription */
static void
t_range_kip881_copartitioned_unequal(void)
{
	ac_group g;
	int32_t next = 0;
	ac_init(&g);
	rack_topic(&g, "t1", 5, 2, 3, &next);
	rack_topic(&g, "t2", 5, 2, 3, &next);
	rack_topic(&g, "t3", 5, 2, 3, &next);
	rack_member(&g, 0, "a", "t1,t2,t3");
	rack_member(&g, 1, "b", "t1,t2,t3");
	rack_member(&g, 2, "c", "t1,t3");
	run(CH_ASSIGN_RANGE, &g);
	CH_CHECK_EQ_STR(GOT(0), "t1-2 t2-0 t2-1 t2-3 t3-2");
	CH_CHECK_EQ_STR(GOT(1), "t1-0 t1-3 t2-2 t2-4 t3-0 t3-3");
	CH_CHECK_EQ_STR(GOT(2), "t1-1 t1-4 t3-1 t3-4");
	ac_free(&g);
}

/* RangeAssignorTest.testRackAwareAssignmentWithCoPartitioning */
static void
t_range_kip881_copartitioning(void)
{
	for (int v = 0; v < 2; v++) {
		ac_group g;
		int32_t next = 0;
		ac_init(&g);
		rack_topic(&g, "t1", 6, 1, 2, &next);
		rack_topic(&g, "t2", 6, 1, 2, &next);
		rack_topic(&g, "t3", 2, 1, 2, &next);
		rack_topic(&g, "t4", 2, 1, 2, &next);
		const char *racks[] = {"a", "b", "b", "a"};
		for (int i = 0; i < 4; i++)
			rack_member(&g, i, racks[i], v ? "t1,t2,t3,t4" : i < 2 ? "t1,t2" : "t3,t4");
		run(CH_ASSIGN_RANGE, &g);
		if (v == 0) {
			CH_CHECK_EQ_STR(GOT(0), "t1-0 t1-2 t1-4 t2-0 t2-2 t2-4");
			CH_CHECK_EQ_STR(GOT(1), "t1-1 t1-3 t1-5 t2-1 t2-3 t2-5");
			CH_CHECK_EQ_STR(GOT(2), "t3-1 t4-1");
			CH_CHECK_EQ_STR(GOT(3), "t3-0 t4-0");
		} else {
			CH_CHECK_EQ_STR(GOT(0), "t1-0 t1-2 t2-0 t2-2 t3-0 t4-0");
			CH_CHECK_EQ_STR(GOT(1), "t1-1 t1-3 t2-1 t2-3 t3-1 t4-1");
			CH_CHECK_EQ_STR(GOT(2), "t1-5 t2-5");
			CH_CHECK_EQ_STR(GOT(3), "t1-4 t2-4");
		}
		ac_free(&g);
	}
}

/* ---- roundrobin --------------------------------------------------------------- */

static void
t_roundrobin_six_partitions(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "topic1", 3);
	ac_add_topic(&g, "topic2", 3);
	mem(&g, "consumer1", "topic1,topic2");
	mem(&g, "consumer2", "topic1,topic2");
	run(CH_ASSIGN_ROUNDROBIN, &g);
	CH_CHECK_EQ_STR(GOT(0), "topic1-0 topic1-2 topic2-1");
	CH_CHECK_EQ_STR(GOT(1), "topic1-1 topic2-0 topic2-2");
	ac_free(&g);
}

static void
t_roundrobin_mixed_topics(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "topic1", 3);
	ac_add_topic(&g, "topic2", 2);
	mem(&g, "consumer1", "topic1");
	mem(&g, "consumer2", "topic1,topic2");
	mem(&g, "consumer3", "topic1");
	run(CH_ASSIGN_ROUNDROBIN, &g);
	CH_CHECK_EQ_STR(GOT(0), "topic1-0");
	CH_CHECK_EQ_STR(GOT(1), "topic1-1 topic2-0 topic2-1");
	CH_CHECK_EQ_STR(GOT(2), "topic1-2");
	ac_free(&g);
}

/* ---- sticky ------------------------------------------------------------------- */

/* StickyAssignor javadoc, example 1: C1 leaves, C0 and C2 keep everything. */
static void
t_sticky_javadoc_example1(void)
{
	ac_group g;
	ac_init(&g);
	for (int t = 0; t < 4; t++) {
		char n[4];
		snprintf(n, sizeof(n), "t%d", t);
		ac_add_topic(&g, n, 2);
	}
	mem(&g, "C0", "t0,t1,t2,t3");
	mem(&g, "C1", "t0,t1,t2,t3");
	mem(&g, "C2", "t0,t1,t2,t3");
	run(CH_ASSIGN_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(0), "t0-0 t1-1 t3-0");
	CH_CHECK_EQ_STR(GOT(1), "t0-1 t2-0 t3-1");
	CH_CHECK_EQ_STR(GOT(2), "t1-0 t2-1");
	ac_set_owned(&g, &res, 1);
	ac_remove_member(&g, 1);
	run(CH_ASSIGN_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(0), "t0-0 t0-1 t1-1 t3-0");
	CH_CHECK_EQ_STR(GOT(1), "t1-0 t2-0 t2-1 t3-1");
	ac_free(&g);
}

/* Kafka 3.5+ keeps owned partitions in (partition, topic) order: a member
 * over its quota keeps partition 0 of each topic before any partition 1. */
static void
t_sticky_keep_order(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "a", 2);
	ac_add_topic(&g, "b", 2);
	int32_t x = mem(&g, "x", "a,b");
	mem(&g, "y", "a,b");
	own(&g, x, "a-0 a-1 b-0 b-1", 1);
	run(CH_ASSIGN_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(x), "a-0 b-0");
	ac_free(&g);
}

/* AbstractStickyAssignorTest.testEnsurePartitionsAssignedToHighestGeneration */
static void
t_sticky_highest_generation(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "topic", 3);
	ac_add_topic(&g, "topic2", 3);
	ac_add_topic(&g, "topic3", 3);
	int32_t c1 = mem(&g, "consumer1", "topic,topic2,topic3");
	int32_t c2 = mem(&g, "consumer2", "topic,topic2,topic3");
	int32_t c3 = mem(&g, "consumer3", "topic,topic2,topic3");
	own(&g, c1, "topic-0 topic2-0 topic3-0", 10);
	own(&g, c2, "topic-1 topic2-1 topic3-1", 9);
	own(&g, c3, "topic2-1 topic3-0 topic3-2", 8);
	run(CH_ASSIGN_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(c1), "topic-0 topic2-0 topic3-0");
	CH_CHECK_EQ_STR(GOT(c2), "topic-1 topic2-1 topic3-1");
	CH_CHECK_EQ_STR(GOT(c3), "topic-2 topic2-2 topic3-2");
	ac_free(&g);
}

/* AbstractStickyAssignorTest.testNoReassignmentOnCurrentMembers */
static void
t_sticky_no_reassignment_on_current_members(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "topic", 3);
	ac_add_topic(&g, "topic1", 3);
	ac_add_topic(&g, "topic2", 3);
	ac_add_topic(&g, "topic3", 3);
	const char *all = "topic,topic2,topic3,topic1";
	int32_t c1 = mem(&g, "consumer1", all);
	int32_t c2 = mem(&g, "consumer2", all);
	int32_t c3 = mem(&g, "consumer3", all);
	int32_t c4 = mem(&g, "consumer4", all);
	own(&g, c2, "topic-0 topic2-0 topic1-0", 9);
	own(&g, c3, "topic3-2 topic2-2 topic1-1", 8);
	own(&g, c4, "topic3-1 topic-1 topic-2", 7);
	run(CH_ASSIGN_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(c1), "topic1-2 topic2-1 topic3-0");
	CH_CHECK_EQ_STR(GOT(c2), "topic-0 topic1-0 topic2-0");
	ac_free(&g);
}

/* AbstractStickyAssignorTest.testOwnedPartitionsAreInvalidatedForConsumerWithMultipleGeneration */
static void
t_sticky_multiple_generations(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "topic", 3);
	ac_add_topic(&g, "topic2", 3);
	int32_t c1 = mem(&g, "consumer1", "topic,topic2");
	int32_t c2 = mem(&g, "consumer2", "topic,topic2");
	own(&g, c1, "topic-0 topic2-1 topic-1", 10);
	own(&g, c2, "topic-0 topic2-1 topic2-2", 8);
	run(CH_ASSIGN_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(c1), "topic-0 topic-1 topic2-1");
	CH_CHECK_EQ_STR(GOT(c2), "topic-2 topic2-0 topic2-2");
	/* Nothing changes hands between members: cooperative gives the same. */
	run(CH_ASSIGN_COOPERATIVE_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(c2), "topic-2 topic2-0 topic2-2");
	ac_free(&g);
}

/* StickyAssignor javadoc, example 2: unequal subscriptions. */
static void
t_sticky_javadoc_example2(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "t0", 1);
	ac_add_topic(&g, "t1", 2);
	ac_add_topic(&g, "t2", 3);
	mem(&g, "C0", "t0");
	mem(&g, "C1", "t0,t1");
	mem(&g, "C2", "t0,t1,t2");
	run(CH_ASSIGN_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(0), "t0-0");
	CH_CHECK_EQ_STR(GOT(1), "t1-0 t1-1");
	CH_CHECK_EQ_STR(GOT(2), "t2-0 t2-1 t2-2");
	ac_set_owned(&g, &res, 1);
	ac_remove_member(&g, 0);
	run(CH_ASSIGN_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(0), "t0-0 t1-0 t1-1");
	CH_CHECK_EQ_STR(GOT(1), "t2-0 t2-1 t2-2");
	ac_free(&g);
}

static void
t_sticky_mixed_subscriptions(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "topic1", 3);
	ac_add_topic(&g, "topic2", 2);
	mem(&g, "consumer1", "topic1");
	mem(&g, "consumer2", "topic1,topic2");
	mem(&g, "consumer3", "topic1");
	run(CH_ASSIGN_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(0), "topic1-0 topic1-2");
	CH_CHECK_EQ_STR(GOT(1), "topic2-0 topic2-1");
	CH_CHECK_EQ_STR(GOT(2), "topic1-1");
	ac_free(&g);
}

static void
t_sticky_add_remove_consumer(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "topic", 3);
	mem(&g, "consumer1", "topic");
	run(CH_ASSIGN_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(0), "topic-0 topic-1 topic-2");
	ac_set_owned(&g, &res, 1);
	mem(&g, "consumer2", "topic");
	run(CH_ASSIGN_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(0), "topic-0 topic-1");
	CH_CHECK_EQ_STR(GOT(1), "topic-2");
	ac_set_owned(&g, &res, 2);
	ac_remove_member(&g, 0);
	run(CH_ASSIGN_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(0), "topic-0 topic-1 topic-2");
	ac_free(&g);
}

/* testOwnedPartitionsAreInvalidatedForConsumerWithStaleGeneration */
static void
t_sticky_stale_generation(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "topic1", 3);
	ac_add_topic(&g, "topic2", 3);
	int32_t c1 = mem(&g, "consumer1", "topic1,topic2");
	int32_t c2 = mem(&g, "consumer2", "topic1,topic2");
	own(&g, c1, "topic1-0 topic1-1 topic2-0", 2);
	own(&g, c2, "topic1-0 topic1-2 topic2-1", 1);
	run(CH_ASSIGN_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(c1), "topic1-0 topic1-1 topic2-0");
	CH_CHECK_EQ_STR(GOT(c2), "topic1-2 topic2-1 topic2-2");
	ac_free(&g);
}

/* Two members of the same generation claim a partition: neither keeps it. */
static void
t_sticky_same_generation_conflict(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "t", 4);
	int32_t a = mem(&g, "a", "t");
	int32_t b = mem(&g, "b", "t");
	own(&g, a, "t-0 t-1", 3);
	own(&g, b, "t-1 t-2", 3);
	run(CH_ASSIGN_STICKY, &g);
	/* a keeps t-0, b keeps t-2; t-1 and t-3 are dealt to a then b */
	CH_CHECK_EQ_STR(GOT(a), "t-0 t-1");
	CH_CHECK_EQ_STR(GOT(b), "t-2 t-3");
	ac_free(&g);
}

/* A member that dropped a topic gives up its partitions. */
static void
t_sticky_unsubscribe(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "t1", 2);
	ac_add_topic(&g, "t2", 2);
	int32_t a = mem(&g, "a", "t1");
	int32_t b = mem(&g, "b", "t1,t2");
	own(&g, a, "t1-0 t2-0", 1);
	own(&g, b, "t1-1 t2-1", 1);
	run(CH_ASSIGN_STICKY, &g);
	/* b then has 3 and a 1: b hands a partition of t1 to a */
	CH_CHECK_EQ_STR(GOT(a), "t1-0 t1-1");
	CH_CHECK_EQ_STR(GOT(b), "t2-0 t2-1");
	ac_free(&g);
}

/* A chain: only a path a -> b -> c balances (single moves cannot). */
static void
t_sticky_chain(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "x", 5);
	ac_add_topic(&g, "y", 4);
	ac_add_topic(&g, "z", 3);
	int32_t a = mem(&g, "a", "x");
	int32_t b = mem(&g, "b", "x,y");
	int32_t c = mem(&g, "c", "y,z");
	own(&g, a, "x-0 x-1 x-2 x-3 x-4", 1);
	own(&g, b, "y-0 y-1 y-2 y-3", 1);
	own(&g, c, "z-0 z-1 z-2", 1);
	run(CH_ASSIGN_STICKY, &g);
	CH_CHECK_EQ_INT(res.off[a + 1] - res.off[a], 4);
	CH_CHECK_EQ_INT(res.off[b + 1] - res.off[b], 4);
	CH_CHECK_EQ_INT(res.off[c + 1] - res.off[c], 4);
	ac_free(&g);
}

/* ---- cooperative-sticky ---------------------------------------------------------- */

static void
t_coop_two_phase(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "topic", 3);
	int32_t c1 = mem(&g, "consumer1", "topic");
	own(&g, c1, "topic-0 topic-1 topic-2", 1);
	int32_t c2 = mem(&g, "consumer2", "topic");
	run(CH_ASSIGN_COOPERATIVE_STICKY, &g);
	/* topic-2 is revoked from consumer1 but not yet given to consumer2 */
	CH_CHECK_EQ_STR(GOT(c1), "topic-0 topic-1");
	CH_CHECK_EQ_STR(GOT(c2), "");
	ac_set_owned(&g, &res, 2);
	run(CH_ASSIGN_COOPERATIVE_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(c1), "topic-0 topic-1");
	CH_CHECK_EQ_STR(GOT(c2), "topic-2");
	ac_free(&g);
}

/* A partition moving away from its owner is withheld even from a stale
 * member that claims it too (Kafka: it is in allRevokedPartitions). */
static void
t_coop_stale_claim_withheld(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "t", 3);
	int32_t a = mem(&g, "a", "t");
	int32_t b = mem(&g, "b", "t");
	int32_t c = mem(&g, "c", "t");
	own(&g, a, "t-0 t-1 t-2", 4);
	g.m[b].generation = 4;
	own(&g, c, "t-2", 3);
	run(CH_ASSIGN_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(a), "t-0");
	CH_CHECK_EQ_STR(GOT(b), "t-1");
	CH_CHECK_EQ_STR(GOT(c), "t-2");
	run(CH_ASSIGN_COOPERATIVE_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(a), "t-0");
	CH_CHECK_EQ_STR(GOT(b), "");
	CH_CHECK_EQ_STR(GOT(c), "");
	/* A stale claim nobody else makes stays with its member. */
	ac_free(&g);
	ac_init(&g);
	ac_add_topic(&g, "t", 2);
	a = mem(&g, "a", "t");
	b = mem(&g, "b", "t");
	own(&g, a, "t-0", 4);
	own(&g, b, "t-1", 2);
	run(CH_ASSIGN_COOPERATIVE_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(a), "t-0");
	CH_CHECK_EQ_STR(GOT(b), "t-1");
	ac_free(&g);
}

/* ---- server side (KIP-848) -------------------------------------------------------- */

static void
t_server_range_two_members(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "topic1", 3);
	ac_add_topic(&g, "topic3", 2);
	int32_t a = mem(&g, "memberA", "topic1,topic3");
	int32_t b = mem(&g, "memberB", "topic1,topic3");
	run(CH_ASSIGN_SERVER_RANGE, &g);
	CH_CHECK_EQ_STR(GOT(a), "topic1-0 topic1-1 topic3-0");
	CH_CHECK_EQ_STR(GOT(b), "topic1-2 topic3-1");
	ac_set_owned(&g, &res, CH_ASSIGN_NO_GENERATION);
	int32_t c = mem(&g, "memberC", "topic1,topic3");
	run(CH_ASSIGN_SERVER_RANGE, &g);
	CH_CHECK_EQ_STR(GOT(a), "topic1-0 topic3-0");
	CH_CHECK_EQ_STR(GOT(b), "topic1-2 topic3-1");
	CH_CHECK_EQ_STR(GOT(c), "topic1-1");
	ac_free(&g);
}

/* One of 20 members leaves and another joins, two co-partitioned topics:
 * every member that stayed keeps exactly its partitions (Kafka 4.0's
 * coordinator RangeAssignor re-deals contiguous ranges in member order and
 * moves most of them), the newcomer gets the leaver's, and partition p of
 * both topics keeps one owner (run's ac_check). */
static void
t_server_range_sticky_copartitioned(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "a", 100);
	ac_add_topic(&g, "b", 100);
	char id[16], *before[20];
	for (int i = 0; i < 20; i++) {
		snprintf(id, sizeof(id), "m%02d", i);
		mem(&g, id, "a,b");
	}
	run(CH_ASSIGN_SERVER_RANGE, &g);
	for (int i = 0; i < 20; i++)
		before[i] = strdup(GOT(i));
	char *leaver = strdup(GOT(5));
	ac_set_owned(&g, &res, CH_ASSIGN_NO_GENERATION);
	ac_remove_member(&g, 5);
	int32_t n = mem(&g, "n20", "a,b");
	run(CH_ASSIGN_SERVER_RANGE, &g);
	for (int i = 0; i < 20; i++) {
		if (i != 5)
			CH_CHECK_EQ_STR(GOT(i < 5 ? i : i - 1), before[i]);
		free(before[i]);
	}
	CH_CHECK_EQ_STR(GOT(n), leaver);
	free(leaver);
	ac_free(&g);
}

static void
t_server_uniform_sticky(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "a", 3);
	ac_add_topic(&g, "b", 3);
	mem(&g, "m1", "a,b");
	mem(&g, "m2", "a,b");
	mem(&g, "m3", "a,b");
	run(CH_ASSIGN_SERVER_UNIFORM, &g);
	CH_CHECK_EQ_STR(GOT(0), "a-0 b-0");
	CH_CHECK_EQ_STR(GOT(1), "a-1 b-1");
	CH_CHECK_EQ_STR(GOT(2), "a-2 b-2");
	/* The target assignment carries no generation: all claims count. */
	ac_set_owned(&g, &res, CH_ASSIGN_NO_GENERATION);
	g.m[0].generation = 7;
	ac_remove_member(&g, 2);
	run(CH_ASSIGN_SERVER_UNIFORM, &g);
	CH_CHECK_EQ_STR(GOT(0), "a-0 a-2 b-0");
	CH_CHECK_EQ_STR(GOT(1), "a-1 b-1 b-2");
	ac_free(&g);
}

/* ---- input validation and names -------------------------------------------------- */

static void
t_invalid_input(void)
{
	ac_group g;
	ac_init(&g);
	ac_add_topic(&g, "t", 1);
	ac_add_topic(&g, "t", 2);
	mem(&g, "a", "t");
	ch_assign_result r;
	CH_CHECK(ch_assign(CH_ASSIGN_RANGE, ac_input(&g), &r) == CH_ERR);
	CH_CHECK(strstr(r.errstr, "duplicate topic") != NULL);
	ac_free(&g);
	ac_init(&g);
	ac_add_topic(&g, "t", 1);
	mem(&g, "a", "t");
	int32_t s = ac_add_member(&g, "a", "i", NULL);
	sub(&g, s, "t");
	CH_CHECK(ch_assign(CH_ASSIGN_STICKY, ac_input(&g), &r) == CH_ERR);
	CH_CHECK(strstr(r.errstr, "duplicate member") != NULL);
	ac_free(&g);
	/* Unknown topic indices and out-of-range partitions are ignored. */
	ac_init(&g);
	ac_add_topic(&g, "t", 2);
	int32_t m = mem(&g, "a", "t");
	ac_subscribe(&g, m, 9);
	ac_own(&g, m, 9, 0);
	ac_own(&g, m, 0, 5);
	g.m[m].generation = 1;
	run(CH_ASSIGN_COOPERATIVE_STICKY, &g);
	CH_CHECK_EQ_STR(GOT(m), "t-0 t-1");
	ac_free(&g);
	/* No members. */
	ac_init(&g);
	ac_add_topic(&g, "t", 2);
	for (int k = 0; k < CH_ASSIGN_KIND_COUNT; k++) {
		CH_CHECK(ch_assign(k, ac_input(&g), &r) == CH_OK);
		CH_CHECK_EQ_INT(r.nmembers, 0);
		ch_assign_result_free(&r);
	}
	ac_free(&g);
}

static void
t_names(void)
{
	CH_CHECK_EQ_INT(ch_assign_kind_by_name(CH_STR_LIT("cooperative-sticky")),
			CH_ASSIGN_COOPERATIVE_STICKY);
	CH_CHECK_EQ_INT(ch_assign_kind_by_name(CH_STR_LIT("range")), CH_ASSIGN_RANGE);
	CH_CHECK_EQ_INT(ch_assign_kind_by_name(CH_STR_LIT("uniform")), -1);
	CH_CHECK_EQ_STR(ch_assign_name(CH_ASSIGN_SERVER_UNIFORM), "uniform");
	CH_CHECK(ch_assign_is_cooperative(CH_ASSIGN_COOPERATIVE_STICKY));
	CH_CHECK(!ch_assign_is_cooperative(CH_ASSIGN_STICKY));

	ch_assign_topic tt[3] = {{CH_STR_LIT("x"), 1, NULL},
				 {CH_STR_LIT("y"), 1, NULL},
				 {CH_STR_LIT("zz"), 1, NULL}};
	ch_assign_topic_index *ix = ch_assign_topic_index_new(tt, 3);
	CH_CHECK_EQ_INT(ch_assign_topic_index_get(ix, CH_STR_LIT("zz")), 2);
	CH_CHECK_EQ_INT(ch_assign_topic_index_get(ix, CH_STR_LIT("x")), 0);
	CH_CHECK_EQ_INT(ch_assign_topic_index_get(ix, CH_STR_LIT("q")), -1);
	ch_assign_topic_index_free(ix);
}

/* ---- user data ------------------------------------------------------------------- */

static void
t_sticky_user_data(void)
{
	int32_t p0[] = {0, 1};
	ch_assign_sticky_topic st[1] = {{CH_STR_LIT("t"), p0, 2}};
	ch_assign_sticky_data d = {st, 1, 3};
	ch_buf b;
	ch_buf_init(&b);
	ch_assign_sticky_data_encode(&b, &d);
	static const uint8_t want[] = {0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 2, 0,
				       0, 0, 0, 0, 0, 0, 1,   0, 0, 0, 3};
	CH_CHECK_EQ_INT(b.len, sizeof(want));
	CH_CHECK(b.len == sizeof(want) && memcmp(b.data, want, sizeof(want)) == 0);

	ch_assign_sticky_data o;
	CH_CHECK(ch_assign_sticky_data_decode(b.data, b.len, &o) == CH_OK);
	CH_CHECK_EQ_INT(o.generation, 3);
	CH_CHECK_EQ_INT(o.ntopics, 1);
	CH_CHECK(ch_str_eq_c(o.topics[0].topic, "t"));
	CH_CHECK_EQ_INT(o.topics[0].n, 2);
	CH_CHECK_EQ_INT(o.topics[0].partitions[1], 1);
	ch_assign_sticky_data_free(&o);

	/* v0: no generation */
	CH_CHECK(ch_assign_sticky_data_decode(b.data, b.len - 4, &o) == CH_OK);
	CH_CHECK_EQ_INT(o.generation, CH_ASSIGN_NO_GENERATION);
	CH_CHECK_EQ_INT(o.topics[0].n, 2);
	ch_assign_sticky_data_free(&o);

	/* garbage and truncations never crash */
	for (size_t n = 0; n < b.len - 4; n++)
		if (ch_assign_sticky_data_decode(b.data, n, &o) == CH_OK)
			ch_assign_sticky_data_free(&o);
	static const uint8_t bad[] = {0x7f, 0xff, 0xff, 0xff, 0, 1};
	CH_CHECK(ch_assign_sticky_data_decode(bad, sizeof(bad), &o) == CH_ERR);

	ch_buf_reset(&b);
	ch_assign_coop_data_encode(&b, 42);
	CH_CHECK_EQ_INT(b.len, 4);
	CH_CHECK_EQ_INT(ch_assign_coop_data_decode(b.data, b.len), 42);
	CH_CHECK_EQ_INT(ch_assign_coop_data_decode(b.data, 2), CH_ASSIGN_NO_GENERATION);
	CH_CHECK_EQ_INT(ch_assign_coop_data_decode(NULL, 0), CH_ASSIGN_NO_GENERATION);
	ch_buf_free(&b);
}

CH_TEST_MAIN(CH_TEST(t_range_one_consumer_no_topic), CH_TEST(t_range_mixed_topics),
	     CH_TEST(t_range_two_consumers_six_partitions), CH_TEST(t_range_three_by_seven),
	     CH_TEST(t_range_static_members_first), CH_TEST(t_range_rack_aware),
	     CH_TEST(t_range_kip881_uniform_subscription),
	     CH_TEST(t_range_kip881_copartitioned_unequal), CH_TEST(t_range_kip881_copartitioning),
	     CH_TEST(t_roundrobin_six_partitions), CH_TEST(t_roundrobin_mixed_topics),
	     CH_TEST(t_sticky_javadoc_example1), CH_TEST(t_sticky_keep_order),
	     CH_TEST(t_sticky_highest_generation),
	     CH_TEST(t_sticky_no_reassignment_on_current_members),
	     CH_TEST(t_sticky_multiple_generations), CH_TEST(t_sticky_javadoc_example2),
	     CH_TEST(t_sticky_mixed_subscriptions), CH_TEST(t_sticky_add_remove_consumer),
	     CH_TEST(t_sticky_stale_generation), CH_TEST(t_sticky_same_generation_conflict),
	     CH_TEST(t_sticky_unsubscribe), CH_TEST(t_sticky_chain), CH_TEST(t_coop_two_phase),
	     CH_TEST(t_coop_stale_claim_withheld), CH_TEST(t_server_range_two_members),
	     CH_TEST(t_server_range_sticky_copartitioned), CH_TEST(t_server_uniform_sticky),
	     CH_TEST(t_invalid_input), CH_TEST(t_names), CH_TEST(t_sticky_user_data))
