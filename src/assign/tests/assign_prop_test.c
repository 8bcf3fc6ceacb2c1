/*
 * assign_prop_test.c: property tests over random groups, many seeds.
 *
 * For every assignor and random input (members, topics, partition counts,
 * subscriptions equal or not, previous ownership with conflicts and stale
 * generations) ac_check verifies: every subscribed partition assigned exactly
 * once (cooperative: or withheld because another member claims it), only to
 * subscribers; balance (range: per-topic quotas; roundrobin and sticky with
 * equal subscriptions: counts within one; sticky with unequal ones: no
 * cost-reducing chain); with equal subscriptions the sticky assignors move
 * exactly the minimum number of partitions balance requires. On top:
 * determinism under shuffled input, stability (an assignment fed back as the
 * owned partitions comes back unchanged), the cooperative result being the
 * sticky one minus withheld partitions, and its convergence in one more
 * rebalance. Sizes stay small enough for the suite to run in seconds under
 * ASan; the benchmark covers large groups.
 */
#include <stdlib.h>
#include <string.h>

#include "assign_check.h"
#include "common/ch_test.h"

static const ch_assign_kind kinds[] = {CH_ASSIGN_RANGE,          CH_ASSIGN_ROUNDROBIN,
				       CH_ASSIGN_STICKY,         CH_ASSIGN_COOPERATIVE_STICKY,
				       CH_ASSIGN_SERVER_UNIFORM, CH_ASSIGN_SERVER_RANGE};

static int failures_reported;

static bool
check(ch_assign_kind kind, ac_group *g, ch_assign_result *r, uint64_t seed, ac_stats *st)
{
	const ch_assign_input *in = ac_input(g);
	if (ch_assign(kind, in, r) != CH_OK) {
		fprintf(stderr, "seed %llu %s: error %s\n", (unsigned long long)seed,
			ch_assign_name(kind), r->errstr);
		return false;
	}
	const char *err = ac_check(kind, in, r, st);
	if (err) {
		if (failures_reported++ < 10)
			fprintf(stderr, "seed %llu %s (%d members, %d topics): %s\n",
				(unsigned long long)seed, ch_assign_name(kind), g->nm, g->nt, err);
		ch_assign_result_free(r);
		return false;
	}
	return true;
}

static bool
deterministic(ch_assign_kind kind, ac_group *g, const ch_assign_result *r, uint64_t seed)
{
	ac_group sh;
	ch_assign_result r2;
	ac_shuffled(g, &sh, seed ^ 0xabcdef);
	bool ok = ch_assign(kind, ac_input(&sh), &r2) == CH_OK && ac_same(&g->in, r, &sh.in, &r2);
	if (!ok && failures_reported++ < 10)
		fprintf(stderr, "seed %llu %s: not deterministic under shuffle\n",
			(unsigned long long)seed, ch_assign_name(kind));
	ch_assign_result_free(&r2);
	ac_free(&sh);
	ac_input(g);
	return ok;
}

/* One random scenario for every assignor. */
static void
scenario(uint64_t seed, int32_t members, int32_t topics, int32_t maxparts, int density, bool owned)
{
	ac_group g;
	ac_random(&g, seed, members, topics, maxparts, density, owned);
	for (size_t k = 0; k < CH_ARRAY_LEN(kinds); k++) {
		ch_assign_result r;
		ac_stats st;
		if (!check(kinds[k], &g, &r, seed, &st)) {
			CH_CHECK(!"property");
			continue;
		}
		CH_CHECK(deterministic(kinds[k], &g, &r, seed));
		ch_assign_result_free(&r);
	}
	ac_free(&g);
}

static void
t_random_small(void)
{
	uint64_t s = 1;
	for (uint64_t seed = 0; seed < 1500; seed++) {
		int32_t members = 1 + (int32_t)(ac_rand(&s) % 12);
		int32_t topics = 1 + (int32_t)(ac_rand(&s) % 6);
		int32_t maxparts = 1 + (int32_t)(ac_rand(&s) % 10);
		int density = seed % 3 == 0 ? 100 : 20 + (int)(ac_rand(&s) % 70);
		scenario(seed, members, topics, maxparts, density, seed % 4 != 0);
	}
}

static void
t_random_medium(void)
{
	uint64_t s = 2;
	for (uint64_t seed = 1000; seed < 1150; seed++) {
		int32_t members = 1 + (int32_t)(ac_rand(&s) % 150);
		int32_t topics = 1 + (int32_t)(ac_rand(&s) % 40);
		int32_t maxparts = 1 + (int32_t)(ac_rand(&s) % 60);
		int density = seed % 2 == 0 ? 100 : 5 + (int)(ac_rand(&s) % 90);
		scenario(seed, members, topics, maxparts, density, true);
	}
}

/* Large groups with equal subscriptions (the checker is linear there). */
static void
t_random_large_equal(void)
{
	uint64_t s = 3;
	for (uint64_t seed = 2000; seed < 2006; seed++) {
		int32_t members = 500 + (int32_t)(ac_rand(&s) % 1501);
		int32_t topics = 1 + (int32_t)(ac_rand(&s) % 500);
		ac_group g;
		ac_random(&g, seed, members, topics, 1 + (int32_t)(100000 / topics), 100, true);
		const ch_assign_kind k3[] = {CH_ASSIGN_STICKY, CH_ASSIGN_SERVER_UNIFORM,
					     CH_ASSIGN_RANGE, CH_ASSIGN_ROUNDROBIN};
		for (size_t k = 0; k < CH_ARRAY_LEN(k3); k++) {
			ch_assign_result r;
			ac_stats st;
			CH_CHECK(check(k3[k], &g, &r, seed, &st));
			ch_assign_result_free(&r);
		}
		ac_free(&g);
	}
}

/* Sticky sequences: fresh, then stable, then churn; moves stay minimal. */
static void
t_sticky_sequences(void)
{
	uint64_t s = 4;
	for (uint64_t seed = 3000; seed < 3300; seed++) {
		ch_assign_kind kind = seed % 2 ? CH_ASSIGN_STICKY : CH_ASSIGN_SERVER_UNIFORM;
		int density = seed % 4 < 2 ? 100 : 30 + (int)(ac_rand(&s) % 60);
		ac_group g;
		ac_random(&g, seed, 2 + (int32_t)(ac_rand(&s) % 40),
			  1 + (int32_t)(ac_rand(&s) % 15), 1 + (int32_t)(ac_rand(&s) % 30), density,
			  false);
		ch_assign_result r, r2;
		ac_stats st;
		int32_t gen = 1;
		if (!check(kind, &g, &r, seed, &st)) {
			CH_CHECK(!"fresh");
			ac_free(&g);
			continue;
		}
		for (int step = 0; step < 6; step++) {
			ac_set_owned(&g, &r, gen++);
			/* Stable: the same group gets the same assignment back. */
			CH_CHECK(check(kind, &g, &r2, seed, &st));
			CH_CHECK_EQ_INT(st.moved, 0);
			CH_CHECK(ac_same(&g.in, &r, &g.in, &r2));
			ch_assign_result_free(&r2);
			/* Churn: a member leaves, or one joins. */
			if (step % 2 == 0 && g.nm > 1) {
				ac_remove_member(&g, (int32_t)(ac_rand(&s) % (uint64_t)g.nm));
			} else {
				char id[32];
				snprintf(id, sizeof(id), "joiner-%d", step);
				int32_t m = ac_add_member(&g, id, NULL, NULL);
				for (int32_t t = 0; t < g.nt; t++)
					if (density >= 100 || (int)(ac_rand(&s) % 100) < density)
						ac_subscribe(&g, m, t);
				if (g.m[m].ntopics == 0)
					ac_subscribe(&g, m, 0);
			}
			ch_assign_result_free(&r);
			if (!check(kind, &g, &r, seed, &st)) {
				CH_CHECK(!"churn");
				break;
			}
			/* equal subscriptions: ac_check compared moved with the minimum */
		}
		ch_assign_result_free(&r);
		ac_free(&g);
	}
}

/* Cooperative = sticky minus withheld partitions; converges next round. */
static void
t_cooperative(void)
{
	uint64_t s = 5;
	for (uint64_t seed = 4000; seed < 4600; seed++) {
		ac_group g;
		int density = seed % 2 ? 100 : 20 + (int)(ac_rand(&s) % 70);
		ac_random(&g, seed, 1 + (int32_t)(ac_rand(&s) % 25), 1 + (int32_t)(ac_rand(&s) % 8),
			  1 + (int32_t)(ac_rand(&s) % 20), density, true);
		ch_assign_result rs, rc;
		ac_stats st;
		if (!check(CH_ASSIGN_STICKY, &g, &rs, seed, &st)) {
			CH_CHECK(!"sticky");
			ac_free(&g);
			continue;
		}
		if (!check(CH_ASSIGN_COOPERATIVE_STICKY, &g, &rc, seed, &st)) {
			CH_CHECK(!"coop");
			ch_assign_result_free(&rs);
			ac_free(&g);
			continue;
		}
		/* Subset, member by member (lists are sorted the same way). */
		for (int32_t m = 0; m < g.nm; m++) {
			int32_t i = rs.off[m];
			for (int32_t j = rc.off[m]; j < rc.off[m + 1]; j++) {
				while (i < rs.off[m + 1] &&
				       (rs.tps[i].topic != rc.tps[j].topic ||
					rs.tps[i].partition != rc.tps[j].partition))
					i++;
				CH_CHECK(i < rs.off[m + 1]);
			}
		}
		/* Members revoke, rejoin with the new generation: nothing withheld. */
		int32_t maxgen = 0;
		for (int32_t m = 0; m < g.nm; m++)
			maxgen = g.m[m].generation > maxgen ? g.m[m].generation : maxgen;
		ac_set_owned(&g, &rc, maxgen + 1);
		ch_assign_result r2;
		if (check(CH_ASSIGN_COOPERATIVE_STICKY, &g, &r2, seed, &st)) {
			CH_CHECK_EQ_INT(st.unassigned, 0);
			if (st.unassigned)
				fprintf(stderr, "seed %llu equal %d nm %d\n",
					(unsigned long long)seed, st.equal, g.nm);
			ch_assign_result_free(&r2);
		} else {
			CH_CHECK(!"coop second round");
		}
		ch_assign_result_free(&rs);
		ch_assign_result_free(&rc);
		ac_free(&g);
	}
}

CH_TEST_MAIN(CH_TEST(t_random_small), CH_TEST(t_random_medium), CH_TEST(t_random_large_equal),
	     CH_TEST(t_sticky_sequences), CH_TEST(t_cooperative))
