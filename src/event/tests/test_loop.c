/*
 * Unit tests for the event loop (event/ch_loop.h): timers, posts from other
 * threads, signals, fd watchers, before-sleep hooks. No timing assertions:
 * expired deadlines are placed in the past, and waits only wait.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ch_common.h"
#include "common/ch_test.h"
#include "event/ch_loop.h"

/* ---- timers ------------------------------------------------------------ */

#define NTIMERS 100000

typedef struct ttimer {
	ch_timer t;
	int64_t want; /* expected deadline */
	bool cancelled;
	int fired;
} ttimer;

static int64_t last_fired;
static int order_errors;
static int nfired;

static void
on_ttimer(ch_loop *loop, ch_timer *t, void *ud)
{
	CH_UNUSED(loop);
	ttimer *tt = ud;
	tt->fired++;
	nfired++;
	if (ch_timer_deadline(t) < last_fired || ch_timer_deadline(t) != tt->want)
		order_errors++;
	last_fired = ch_timer_deadline(t);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t
xrand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void
t_timers_100k(void)
{
	ch_loop *loop = ch_loop_new();
	CH_CHECK(loop != NULL);
	if (!loop)
		return;
	ttimer *ts = ch_xcalloc(NTIMERS, sizeof(*ts));
	/* All deadlines lie in the past, so one iteration fires them all and
	 * the test never waits on the clock (monotonic ms may be small or
	 * negative-relative: any int64 deadline is fine). */
	int64_t base = ch_loop_now(loop) - 10000000;
	for (int i = 0; i < NTIMERS; i++) {
		ch_timer_init(&ts[i].t, on_ttimer, &ts[i]);
		ts[i].want = base + (int64_t)(xrand() % 5000000);
		ch_timer_arm(loop, &ts[i].t, ts[i].want);
	}
	CH_CHECK_EQ_INT(ch_loop_timer_count(loop), NTIMERS);
	/* Cancel every third, re-arm every fifth (twice for some), cancel
	 * already-cancelled ones again (no-op). */
	int live = NTIMERS;
	for (int i = 0; i < NTIMERS; i++) {
		if (i % 3 == 0) {
			ch_timer_cancel(loop, &ts[i].t);
			ch_timer_cancel(loop, &ts[i].t);
			CH_CHECK(!ch_timer_armed(&ts[i].t));
			ts[i].cancelled = true;
			live--;
		} else if (i % 5 == 0) {
			ts[i].want = base + (int64_t)(xrand() % 5000000);
			ch_timer_arm(loop, &ts[i].t, ts[i].want);
			if (i % 7 == 0) {
				ts[i].want = base + (int64_t)(xrand() % 5000000);
				ch_timer_arm(loop, &ts[i].t, ts[i].want);
			}
		}
	}
	/* Re-arm some cancelled ones, then cancel them again. */
	for (int i = 0; i < NTIMERS; i += 300) {
		ch_timer_arm(loop, &ts[i].t, base);
		ch_timer_cancel(loop, &ts[i].t);
	}
	CH_CHECK_EQ_INT(ch_loop_timer_count(loop), live);
	last_fired = INT64_MIN;
	order_errors = 0;
	nfired = 0;
	ch_loop_run_once(loop, 0);
	CH_CHECK_EQ_INT(nfired, live);
	CH_CHECK_EQ_INT(order_errors, 0);
	int wrong = 0;
	for (int i = 0; i < NTIMERS; i++) {
		if (ts[i].fired != (ts[i].cancelled ? 0 : 1))
			wrong++;
		if (ch_timer_armed(&ts[i].t))
			wrong++;
	}
	CH_CHECK_EQ_INT(wrong, 0);
	CH_CHECK_EQ_INT(ch_loop_timer_count(loop), 0);
	free(ts);
	ch_loop_free(loop);
}

/* Equal deadlines fire in arm order; a re-arm counts as a new arm. */
static int fifo_log[8];
static int fifo_n;

static void
on_fifo(ch_loop *loop, ch_timer *t, void *ud)
{
	CH_UNUSED(loop);
	CH_UNUSED(t);
	fifo_log[fifo_n++] = (int)(intptr_t)ud;
}

static void
t_timer_fifo(void)
{
	ch_loop *loop = ch_loop_new();
	ch_timer t[4];
	int64_t d = ch_loop_now(loop) - 1;
	for (int i = 0; i < 4; i++) {
		ch_timer_init(&t[i], on_fifo, (void *)(intptr_t)i);
		ch_timer_arm(loop, &t[i], d);
	}
	ch_timer_arm(loop, &t[1], d); /* moves behind 3 */
	fifo_n = 0;
	ch_loop_run_once(loop, 0);
	CH_CHECK_EQ_INT(fifo_n, 4);
	CH_CHECK_EQ_INT(fifo_log[0], 0);
	CH_CHECK_EQ_INT(fifo_log[1], 2);
	CH_CHECK_EQ_INT(fifo_log[2], 3);
	CH_CHECK_EQ_INT(fifo_log[3], 1);
	ch_loop_free(loop);
}

/* A callback that re-arms itself at "now" runs once per iteration. */
static int rearm_count;

static void
on_rearm(ch_loop *loop, ch_timer *t, void *ud)
{
	CH_UNUSED(ud);
	if (++rearm_count < 3)
		ch_timer_arm(loop, t, ch_loop_now(loop) - 5);
}

static void
t_timer_rearm_in_callback(void)
{
	ch_loop *loop = ch_loop_new();
	ch_timer t;
	ch_timer_init(&t, on_rearm, NULL);
	ch_timer_arm(loop, &t, ch_loop_now(loop));
	rearm_count = 0;
	ch_loop_run_once(loop, 0);
	CH_CHECK_EQ_INT(rearm_count, 1);
	ch_loop_run_once(loop, 0);
	CH_CHECK_EQ_INT(rearm_count, 2);
	ch_loop_run_once(loop, 0);
	CH_CHECK_EQ_INT(rearm_count, 3);
	CH_CHECK(!ch_timer_armed(&t));
	ch_loop_free(loop);
}

/* A timer in the future: the loop sleeps until it is due. */
static void
on_future(ch_loop *loop, ch_timer *t, void *ud)
{
	CH_UNUSED(t);
	(*(int *)ud)++;
	ch_loop_stop(loop);
}

static void
t_timer_future(void)
{
	ch_loop *loop = ch_loop_new();
	int fired = 0;
	ch_timer t;
	ch_timer_init(&t, on_future, &fired);
	ch_timer_arm(loop, &t, ch_loop_now(loop) + 20);
	ch_loop_run(loop);
	CH_CHECK_EQ_INT(fired, 1);
	CH_CHECK(ch_loop_now(loop) >= ch_timer_deadline(&t));
	ch_loop_free(loop);
}

/* ---- ch_loop_post from other threads ----------------------------------- */

#define NTHREADS 4
#define NPOSTS 20000

typedef struct post_arg {
	ch_loop *loop;
	int thread;
} post_arg;

static int post_seen[NTHREADS]; /* loop thread only */
static int post_order_errors;
static int post_total;

static void
on_post(ch_loop *loop, void *ud)
{
	intptr_t v = (intptr_t)ud;
	int th = (int)(v / NPOSTS), i = (int)(v % NPOSTS);
	if (post_seen[th] != i) /* per-thread FIFO */
		post_order_errors++;
	post_seen[th] = i + 1;
	if (++post_total == NTHREADS * NPOSTS)
		ch_loop_stop(loop);
}

static void *
poster(void *ud)
{
	post_arg *a = ud;
	for (int i = 0; i < NPOSTS; i++)
		ch_loop_post(a->loop, on_post, (void *)(intptr_t)(a->thread * NPOSTS + i));
	return NULL;
}

static void
t_post_from_threads(void)
{
	ch_loop *loop = ch_loop_new();
	pthread_t th[NTHREADS];
	post_arg args[NTHREADS];
	memset(post_seen, 0, sizeof(post_seen));
	post_order_errors = 0;
	post_total = 0;
	for (int i = 0; i < NTHREADS; i++) {
		args[i] = (post_arg){loop, i};
		pthread_create(&th[i], NULL, poster, &args[i]);
	}
	ch_loop_run(loop);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	CH_CHECK_EQ_INT(post_total, NTHREADS * NPOSTS);
	CH_CHECK_EQ_INT(post_order_errors, 0);
	ch_loop_free(loop);
}

/* ch_loop_stop from another thread wakes a loop sleeping with no timers.
 * Fails if ch_loop_run returns before the stop was asked for (it did not
 * sleep), and a watchdog fails the test instead of hanging ctest if the stop
 * never wakes the loop. */
static atomic_int stop_asked;
static atomic_int run_returned;

static void *
stopper(void *ud)
{
	usleep(10000);
	atomic_store(&stop_asked, 1);
	ch_loop_stop(ud);
	return NULL;
}

static void *
stop_watchdog(void *ud)
{
	CH_UNUSED(ud);
	for (int i = 0; i < 1000 && !atomic_load(&run_returned); i++)
		usleep(10000);
	if (!atomic_load(&run_returned)) {
		fprintf(stderr, "t_stop_from_thread: ch_loop_stop from another thread "
				"did not wake the loop in 10 s\n");
		_exit(1);
	}
	return NULL;
}

static void
t_stop_from_thread(void)
{
	ch_loop *loop = ch_loop_new();
	pthread_t th, wd;
	atomic_store(&stop_asked, 0);
	atomic_store(&run_returned, 0);
	pthread_create(&wd, NULL, stop_watchdog, NULL);
	pthread_create(&th, NULL, stopper, loop);
	ch_loop_run(loop);
	CH_CHECK_EQ_INT(atomic_load(&stop_asked), 1);
	atomic_store(&run_returned, 1);
	pthread_join(th, NULL);
	pthread_join(wd, NULL);
	ch_loop_free(loop);
}

/* ---- signals ----------------------------------------------------------- */

static void
on_sig(ch_loop *loop, int signo, void *ud)
{
	*(int *)ud = signo;
	ch_loop_stop(loop);
}

static void
t_signal(void)
{
	ch_loop *loop = ch_loop_new();
	int got = 0;
	CH_CHECK_EQ_INT(ch_loop_on_signal(loop, SIGUSR1, on_sig, &got), CH_OK);
	CH_CHECK_EQ_INT(ch_loop_on_signal(loop, SIGUSR2, on_sig, &got), CH_OK);
	raise(SIGUSR2); /* blocked: waits in the signalfd */
	ch_loop_run(loop);
	CH_CHECK_EQ_INT(got, SIGUSR2);
	raise(SIGUSR1);
	ch_loop_run(loop);
	CH_CHECK_EQ_INT(got, SIGUSR1);
	ch_loop_free(loop);
}

/* ---- fd watchers ------------------------------------------------------- */

typedef struct pipe_w {
	ch_io io;
	int rfd, wfd;
	struct pipe_w *other;
	int calls;
} pipe_w;

static int pipe_calls;

/* Whichever fires first removes and frees the other, which was readable in
 * the same batch: its queued event must be dropped (ASan would catch a
 * use-after-free). */
static void
on_pipe(ch_loop *loop, ch_io *io, unsigned revents)
{
	pipe_w *w = io->ud;
	CH_CHECK(revents & CH_IO_READ);
	w->calls++;
	pipe_calls++;
	if (w->other) {
		pipe_w *o = w->other;
		ch_io_remove(loop, &o->io);
		close(o->rfd);
		close(o->wfd);
		o->other->other = NULL;
		free(o);
		w->other = NULL;
	}
	char c;
	CH_CHECK(read(w->rfd, &c, 1) == 1);
}

static void
t_io_remove_in_batch(void)
{
	ch_loop *loop = ch_loop_new();
	pipe_w *a = ch_xcalloc(1, sizeof(*a)), *b = ch_xcalloc(1, sizeof(*b));
	int p[2];
	CH_CHECK(pipe(p) == 0);
	a->rfd = p[0];
	a->wfd = p[1];
	CH_CHECK(pipe(p) == 0);
	b->rfd = p[0];
	b->wfd = p[1];
	a->other = b;
	b->other = a;
	ch_io_init(&a->io, a->rfd, on_pipe, NULL, a);
	ch_io_init(&b->io, b->rfd, on_pipe, NULL, b);
	CH_CHECK_EQ_INT(ch_io_add(loop, &a->io, CH_IO_READ), CH_OK);
	CH_CHECK_EQ_INT(ch_io_add(loop, &b->io, CH_IO_READ), CH_OK);
	CH_CHECK(write(a->wfd, "x", 1) == 1);
	CH_CHECK(write(b->wfd, "y", 1) == 1);
	pipe_calls = 0;
	ch_loop_run_once(loop, 1000);
	CH_CHECK_EQ_INT(pipe_calls, 1);
	pipe_w *left = a->other == NULL && a->calls == 1 ? a : b;
	/* interest 0: nothing is reported for plain readability */
	CH_CHECK(write(left->wfd, "z", 1) == 1);
	CH_CHECK_EQ_INT(ch_io_modify(loop, &left->io, 0), CH_OK);
	ch_loop_run_once(loop, 0);
	CH_CHECK_EQ_INT(pipe_calls, 1);
	CH_CHECK_EQ_INT(ch_io_modify(loop, &left->io, CH_IO_READ), CH_OK);
	ch_loop_run_once(loop, 1000);
	CH_CHECK_EQ_INT(pipe_calls, 2);
	ch_io_remove(loop, &left->io);
	ch_io_remove(loop, &left->io); /* idempotent */
	close(left->rfd);
	close(left->wfd);
	free(left);
	ch_loop_free(loop);
}

/* ---- before-sleep hooks ------------------------------------------------ */

typedef struct hook_st {
	int calls;
	int want_more; /* return true this many times */
	ch_hook *self;
	bool remove_self;
} hook_st;

static bool
on_hook(ch_loop *loop, void *ud)
{
	hook_st *h = ud;
	h->calls++;
	if (h->remove_self)
		ch_loop_remove_before_sleep(loop, h->self);
	if (h->want_more > 0) {
		h->want_more--;
		return true;
	}
	return false;
}

static void
t_hooks(void)
{
	ch_loop *loop = ch_loop_new();
	hook_st a = {0}, b = {0};
	a.self = ch_loop_add_before_sleep(loop, on_hook, &a);
	b.self = ch_loop_add_before_sleep(loop, on_hook, &b);
	b.remove_self = true;
	a.want_more = 2;
	/* With work left (want_more), iterations don't block even with a
	 * long max wait and nothing else to do. */
	ch_loop_run_once(loop, 60000);
	ch_loop_run_once(loop, 60000);
	CH_CHECK_EQ_INT(a.calls, 2);
	CH_CHECK_EQ_INT(b.calls, 1); /* removed itself during the first pass */
	ch_loop_run_once(loop, 0);
	CH_CHECK_EQ_INT(a.calls, 3);
	ch_loop_remove_before_sleep(loop, a.self);
	ch_loop_run_once(loop, 0);
	CH_CHECK_EQ_INT(a.calls, 3);
	ch_loop_free(loop);
}

CH_TEST_MAIN(CH_TEST(t_timers_100k), CH_TEST(t_timer_fifo), CH_TEST(t_timer_rearm_in_callback),
	     CH_TEST(t_timer_future), CH_TEST(t_post_from_threads), CH_TEST(t_stop_from_thread),
	     CH_TEST(t_signal), CH_TEST(t_io_remove_in_batch), CH_TEST(t_hooks))
