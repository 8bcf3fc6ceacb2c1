/*
 * test_cg_assign.c: target assignments off the core's thread and batched
 * (ch_coord_cg.h, issue 13): an offloaded result equals the one computed
 * within the call, a stale one is dropped and computed again, other groups
 * are served while a big one computes on another thread, and changes
 * within group.consumer.assignment.interval.ms get one assignment.
 */
#include <pthread.h>

#include "cg_shell.h"
#include "common/ch_test.h"
#include "group/ch_coord_cg_int.h"

#define BIG 12000 /* partitions: above the default offload threshold */

/* The shell's offload: jobs wait here until the test runs them. */
static ch_coord_cg_assign_job *queued[8];
static int nqueued;
static int computed; /* "Computed a new target assignment" lines */

static void
offload(void *ud, ch_coord_cg_assign_job *job)
{
	(void)ud;
	CH_CHECK(nqueued < 8);
	queued[nqueued++] = job;
}

static void
count_log(void *ud, ch_log_level level, const char *line)
{
	(void)ud, (void)level;
	if (strstr(line, "Computed a new target assignment"))
		computed++;
}

/* A shell whose core offloads (or not), with `partitions` in topic t. */
static void
setup(cg_shell *sh, bool off, int32_t partitions, int32_t interval_ms)
{
	ch_coord_cg_config cfg;
	ch_coord_cg_config_defaults(&cfg);
	cfg.assignment_interval_ms = interval_ms;
	cg_shell_init(sh, &cfg, 1);
	ch_coord_cg_free(sh->cg);
	sh->ops.log = count_log;
	if (off)
		sh->ops.assign_offload = offload;
	sh->cg = ch_coord_cg_new(&sh->cfg, &sh->ops);
	cg_shell_add_topic(sh, "t", partitions);
	cg_shell_add_topic(sh, "small", 6);
	nqueued = 0;
	computed = 0;
}

static void
join(cg_shell *sh, int64_t now, const char *group, const char *member, const char *topic)
{
	hb h;
	cg_shell_heartbeat(sh, now, 1, &hb_join(&h, group, member, topic)->r);
	CH_CHECK_EQ_INT(sh->a.err, 0);
}

static cg_group *
group(cg_shell *sh, const char *id)
{
	cg_group *g = ch_coord_cg_group_find(sh->cg, ch_str_c(id));
	CH_CHECK(g != NULL);
	return g;
}

/* Every member of a's group g has the same target in b. */
static void
check_same_targets(cg_shell *a, cg_shell *b, const char *g)
{
	cg_group *ga = group(a, g), *gb = group(b, g);
	CH_CHECK_EQ_INT(ga->assignment_epoch, gb->assignment_epoch);
	CH_CHECK_EQ_INT((int)ga->members.n, (int)gb->members.n);
	ch_map_foreach (&ga->members, e) {
		const cg_member *ma = e->value;
		const cg_member *mb = ch_coord_cg_member_find(gb, ch_str_c(ma->id));
		CH_CHECK(mb != NULL);
		CH_CHECK(ma->target.n > 0);
		CH_CHECK(ch_coord_cg_set_eq(&ma->target, &mb->target));
	}
}

static void
run_done(cg_shell *sh, int64_t now)
{
	while (nqueued) {
		ch_coord_cg_assign_job *job = queued[0];
		memmove(&queued[0], &queued[1], (size_t)--nqueued * sizeof *queued);
		ch_coord_cg_assign_job_run(job);
		ch_coord_cg_assign_job_done(sh->cg, now, job);
	}
}

static void
t_offloaded_equals_sync(void)
{
	cg_shell a, b;
	setup(&a, false, BIG, 0);
	join(&a, 0, "g", "m1", "t");
	join(&a, 1, "g", "m2", "t");
	join(&a, 2, "g", "m3", "t");
	int sync_computed = computed;
	setup(&b, true, BIG, 0);
	join(&b, 0, "g", "m1", "t"); /* the group's first target: at once */
	CH_CHECK_EQ_INT(nqueued, 0);
	join(&b, 1, "g", "m2", "t");
	CH_CHECK_EQ_INT(nqueued, 1);
	/* Pending: the group is Assigning, the joiner has the current (empty)
	 * target at the current assignment epoch. */
	cg_group *g = group(&b, "g");
	CH_CHECK_EQ_INT(g->epoch, 3);
	CH_CHECK_EQ_INT(g->assignment_epoch, 2);
	CH_CHECK_EQ_INT(b.a.epoch, 2);
	CH_CHECK_EQ_INT(b.a.ntps, 0);
	run_done(&b, 1);
	CH_CHECK_EQ_INT(g->assignment_epoch, 3);
	join(&b, 2, "g", "m3", "t");
	run_done(&b, 2);
	CH_CHECK_EQ_INT(computed, sync_computed);
	check_same_targets(&a, &b, "g");
	CH_CHECK(cg_shell_ok(&a) && cg_shell_ok(&b));
	cg_shell_free(&a);
	cg_shell_free(&b);
}

static void
t_stale_result_dropped(void)
{
	/* a: epoch 4's target from epoch 2's within the call (the two joins
	 * batched), what b's second job computes */
	cg_shell a, b;
	setup(&a, false, BIG, 1000);
	join(&a, 0, "g", "m1", "t");
	join(&a, 1, "g", "m2", "t");
	join(&a, 2, "g", "m3", "t");
	ch_coord_cg_tick(a.cg, 1000);
	setup(&b, true, BIG, 0);
	join(&b, 0, "g", "m1", "t");
	join(&b, 1, "g", "m2", "t"); /* job for epoch 2 */
	join(&b, 2, "g", "m3", "t"); /* epoch 3: no second job while one runs */
	CH_CHECK_EQ_INT(nqueued, 1);
	cg_group *g = group(&b, "g");
	ch_coord_cg_assign_job *job = queued[0];
	nqueued = 0;
	ch_coord_cg_assign_job_run(job);
	int before = computed;
	ch_coord_cg_assign_job_done(b.cg, 3, job);
	/* Computed for epoch 3, the group is at 4: dropped, a new job queued. */
	CH_CHECK_EQ_INT(computed, before);
	CH_CHECK_EQ_INT(g->assignment_epoch, 2);
	CH_CHECK_EQ_INT(nqueued, 1);
	const cg_member *m2 = ch_coord_cg_member_find(g, ch_str_c("m2"));
	CH_CHECK_EQ_INT(m2->target.n, 0);
	run_done(&b, 3);
	CH_CHECK_EQ_INT(g->assignment_epoch, 4);
	check_same_targets(&a, &b, "g");

	CH_CHECK(cg_shell_ok(&b));
	cg_shell_free(&a);
	cg_shell_free(&b);
}

static void *
run_thread(void *job)
{
	ch_coord_cg_assign_job_run(job);
	return NULL;
}

static void
t_other_group_served(void)
{
	cg_shell b;
	setup(&b, true, BIG, 0);
	join(&b, 0, "big", "m1", "t");
	join(&b, 1, "big", "m2", "t");
	CH_CHECK_EQ_INT(nqueued, 1);
	ch_coord_cg_assign_job *job = queued[0];
	nqueued = 0;
	pthread_t th;
	CH_CHECK(pthread_create(&th, NULL, run_thread, job) == 0);
	/* While the big group's target computes on the other thread: a small
	 * group (under the threshold: within the call) gets its assignment,
	 * and the big group's members get answers at the current target. */
	join(&b, 2, "small", "s1", "small");
	CH_CHECK_EQ_INT(b.a.epoch, 2);
	CH_CHECK_EQ_INT(b.a.ntps, 6);
	join(&b, 2, "small", "s2", "small");
	CH_CHECK_EQ_INT(b.a.epoch, 3);
	hb h;
	cg_shell_heartbeat(&b, 3, 1, &hb_beat(&h, "big", "m1", 2, &b, NULL)->r);
	CH_CHECK_EQ_INT(b.a.err, 0);
	CH_CHECK_EQ_INT(b.a.epoch, 2);
	CH_CHECK_EQ_INT(group(&b, "big")->assignment_epoch, 2);
	CH_CHECK(pthread_join(th, NULL) == 0);
	ch_coord_cg_assign_job_done(b.cg, 4, job);
	CH_CHECK_EQ_INT(group(&b, "big")->assignment_epoch, 3);
	/* m1 now gives up half of its partitions to m2. */
	cg_shell_heartbeat(&b, 5, 1, &hb_beat(&h, "big", "m1", 2, &b, NULL)->r);
	CH_CHECK_EQ_INT(b.a.err, 0);
	CH_CHECK_EQ_INT(b.a.ntps, BIG / 2);
	CH_CHECK(cg_shell_ok(&b));
	cg_shell_free(&b);
}

static void
t_batched(void)
{
	cg_shell b;
	setup(&b, false, 8, 1000);
	join(&b, 0, "g", "m1", "t"); /* first target: at once */
	CH_CHECK_EQ_INT(computed, 1);
	join(&b, 10, "g", "m2", "t");
	join(&b, 20, "g", "m3", "t");
	join(&b, 30, "g", "m4", "t");
	cg_group *g = group(&b, "g");
	CH_CHECK_EQ_INT(computed, 1);
	CH_CHECK_EQ_INT(g->epoch, 5);
	CH_CHECK_EQ_INT(g->assignment_epoch, 2);
	CH_CHECK_EQ_INT(ch_coord_cg_next_deadline(b.cg), 1000);
	ch_coord_cg_tick(b.cg, 999);
	CH_CHECK_EQ_INT(computed, 1);
	ch_coord_cg_tick(b.cg, 1000); /* the interval ended: one for the three joins */
	CH_CHECK_EQ_INT(computed, 2);
	CH_CHECK_EQ_INT(g->assignment_epoch, 5);
	CH_CHECK_EQ_INT((int)g->assignment_ts, 1000);
	/* A change after the interval: at once again. */
	join(&b, 2500, "g", "m5", "t");
	CH_CHECK_EQ_INT(computed, 3);
	CH_CHECK_EQ_INT(g->assignment_epoch, 6);
	CH_CHECK(cg_shell_ok(&b));
	cg_shell_free(&b);
}

CH_TEST_MAIN(CH_TEST(t_offloaded_equals_sync), CH_TEST(t_stale_result_dropped),
	     CH_TEST(t_other_group_served), CH_TEST(t_batched))
