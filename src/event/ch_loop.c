/*
 * ch_loop.c: epoll backend, timer heap, cross-thread post queue, signalfd.
 * The contracts are in ch_loop.h.
 */
#include "event/ch_loop.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "common/ch_common.h"
#include "common/ch_log.h"

#define CH_LOOP_MAX_EVENTS 256
#define CH_LOOP_NSIG 65 /* signal numbers 1..64 */

typedef struct ch_post {
	struct ch_post *next;
	ch_loop_fn fn;
	void *ud;
} ch_post;

struct ch_hook {
	struct ch_hook *next;
	ch_hook_fn fn;
	void *ud;
	bool dead; /* removed while hooks were running; freed after the pass */
};

struct ch_loop {
	int epfd;
	int64_t now;
	atomic_bool stop;
	uint64_t woke_us; /* when the last epoll_wait returned; 0 before the first */
	ch_hist busy;     /* woke_us to the next epoll_wait, per iteration */

	/* the batch being dispatched; ch_io_remove clears entries in it */
	struct epoll_event events[CH_LOOP_MAX_EVENTS];
	int nevents;
	int cur;
	bool dispatching;

	ch_heap timers; /* of ch_timer.node */

	/* ch_loop_post queue and its wake-up eventfd */
	pthread_mutex_t post_mu;
	ch_post *post_head;
	ch_post *post_tail;
	int efd;
	ch_io eio;

	/* signals */
	int sigfd;
	ch_io sigio;
	sigset_t sigmask;
	struct {
		ch_signal_fn cb;
		void *ud;
	} sig[CH_LOOP_NSIG];

	/* before-sleep hooks */
	ch_hook *hooks;
	bool in_hooks;
	bool hooks_dead;
};

/* ---- fd watchers ------------------------------------------------------- */

/* The epoll events for a watcher's CH_IO_* interest; EPOLLRDHUP always, so a
 * paused reader still sees hang-ups. */
static uint32_t
epoll_mask(unsigned events)
{
	uint32_t m = EPOLLRDHUP; /* always: a paused reader must see hang-ups */
	if (events & CH_IO_READ)
		m |= EPOLLIN;
	if (events & CH_IO_WRITE)
		m |= EPOLLOUT;
	return m;
}

void
ch_io_init(ch_io *io, int fd, ch_io_fn on_read, ch_io_fn on_write, void *ud)
{
	memset(io, 0, sizeof(*io));
	io->fd = fd;
	io->on_read = on_read;
	io->on_write = on_write;
	io->ud = ud;
}

int
ch_io_add(ch_loop *loop, ch_io *io, unsigned events)
{
	struct epoll_event ev = {.events = epoll_mask(events), .data.ptr = io};
	if (io->added)
		return ch_io_modify(loop, io, events);
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, io->fd, &ev) < 0)
		return CH_ERR;
	io->added = true;
	io->events = events & (CH_IO_READ | CH_IO_WRITE);
	return CH_OK;
}

int
ch_io_modify(ch_loop *loop, ch_io *io, unsigned events)
{
	events &= CH_IO_READ | CH_IO_WRITE;
	if (!io->added)
		return ch_io_add(loop, io, events);
	if (events == io->events)
		return CH_OK;
	struct epoll_event ev = {.events = epoll_mask(events), .data.ptr = io};
	if (epoll_ctl(loop->epfd, EPOLL_CTL_MOD, io->fd, &ev) < 0)
		return CH_ERR;
	io->events = events;
	return CH_OK;
}

void
ch_io_remove(ch_loop *loop, ch_io *io)
{
	if (!io->added)
		return;
	/* ENOENT/EBADF only mean the fd is already gone; nothing to undo. */
	(void)epoll_ctl(loop->epfd, EPOLL_CTL_DEL, io->fd, NULL);
	io->added = false;
	io->events = 0;
	/* The owner may free io right after this: forget its queued events,
	 * including the one being dispatched (the dispatcher re-checks it). */
	if (loop->dispatching) {
		for (int i = loop->cur; i < loop->nevents; i++)
			if (loop->events[i].data.ptr == io)
				loop->events[i].data.ptr = NULL;
	}
}

/* Calls the watchers of the events epoll returned: on_read for input,
 * hang-up or error, then on_write for output (or a hang-up while writing); a
 * watcher removed by a callback is skipped (ch_io_remove clears its pending
 * events). */
static void
dispatch_events(ch_loop *loop)
{
	loop->dispatching = true;
	for (loop->cur = 0; loop->cur < loop->nevents; loop->cur++) {
		struct epoll_event *ev = &loop->events[loop->cur];
		ch_io *io = ev->data.ptr;
		if (!io)
			continue;
		uint32_t e = ev->events;
		unsigned rev = 0;
		if (e & EPOLLIN)
			rev |= CH_IO_READ;
		if (e & EPOLLOUT)
			rev |= CH_IO_WRITE;
		if (e & (EPOLLRDHUP | EPOLLHUP))
			rev |= CH_IO_HUP;
		if (e & EPOLLERR)
			rev |= CH_IO_ERR;
		if (io->on_read && (rev & (CH_IO_READ | CH_IO_HUP | CH_IO_ERR))) {
			io->on_read(loop, io, rev);
			if (ev->data.ptr == NULL) /* removed (maybe freed) meanwhile */
				continue;
		}
		if (io->on_write && io->added &&
		    ((rev & CH_IO_WRITE) ||
		     ((rev & (CH_IO_HUP | CH_IO_ERR)) && (io->events & CH_IO_WRITE))))
			io->on_write(loop, io, rev);
	}
	loop->dispatching = false;
	loop->nevents = 0;
}

/* ---- timers ------------------------------------------------------------ */

void
ch_timer_init(ch_timer *t, ch_timer_fn cb, void *ud)
{
	memset(t, 0, sizeof(*t));
	t->cb = cb;
	t->ud = ud;
}

void
ch_timer_arm(ch_loop *loop, ch_timer *t, int64_t deadline_ms)
{
	ch_heap_set(&loop->timers, &t->node, deadline_ms);
}

void
ch_timer_cancel(ch_loop *loop, ch_timer *t)
{
	ch_heap_remove(&loop->timers, &t->node);
}

const ch_hist *
ch_loop_busy(const ch_loop *loop)
{
	return &loop->busy;
}

size_t
ch_loop_timer_count(const ch_loop *loop)
{
	return loop->timers.n;
}

/* Runs the timers due at the loop's now, earliest first; only those armed
 * before this pass started. */
static void
run_timers(ch_loop *loop)
{
	/* Timers armed from here on get a larger seq and wait for the next
	 * iteration, so a callback re-arming "now" cannot spin this pass. */
	uint64_t limit = loop->timers.seq;
	ch_heap_node *n;
	while ((n = ch_heap_top(&loop->timers)) && n->deadline <= loop->now &&
	       ch_heap_top_seq(&loop->timers) <= limit) {
		ch_timer *t = (ch_timer *)((char *)n - offsetof(ch_timer, node));
		ch_heap_remove(&loop->timers, n);
		t->cb(loop, t, t->ud);
	}
}

/* ---- posted callbacks -------------------------------------------------- */

/* Wakes the loop's epoll_wait through its eventfd; any thread may call it, and it never blocks
 * (the eventfd is non-blocking). */
static void
wake(ch_loop *loop)
{
	uint64_t one = 1;
	/* EAGAIN means the counter is already non-zero: awake anyway. */
	ssize_t n = write(loop->efd, &one, sizeof(one));
	(void)n;
}

/* The eventfd woke the loop: runs every callback posted from other threads,
 * in posting order. */
static void
on_eventfd(ch_loop *loop, ch_io *io, unsigned revents)
{
	CH_UNUSED(io);
	CH_UNUSED(revents);
	uint64_t v;
	/* Reset the counter before taking the queue: a post racing with us
	 * then either lands in what we take or writes the eventfd again. */
	ssize_t n = read(loop->efd, &v, sizeof(v));
	(void)n;
	pthread_mutex_lock(&loop->post_mu);
	ch_post *p = loop->post_head;
	loop->post_head = loop->post_tail = NULL;
	pthread_mutex_unlock(&loop->post_mu);
	while (p) {
		ch_post *next = p->next;
		p->fn(loop, p->ud);
		free(p);
		p = next;
	}
}

void
ch_loop_post(ch_loop *loop, ch_loop_fn fn, void *ud)
{
	ch_post *p = ch_xmalloc(sizeof(*p));
	p->next = NULL;
	p->fn = fn;
	p->ud = ud;
	pthread_mutex_lock(&loop->post_mu);
	bool was_empty = loop->post_head == NULL;
	CH_FIFO_APPEND(loop->post_head, loop->post_tail, p);
	pthread_mutex_unlock(&loop->post_mu);
	if (was_empty) /* otherwise a wake-up is already pending */
		wake(loop);
}

/* ---- signals ----------------------------------------------------------- */

/* Delivers the signals read from the signalfd to their callbacks, on the
 * loop thread. */
static void
on_signalfd(ch_loop *loop, ch_io *io, unsigned revents)
{
	CH_UNUSED(io);
	CH_UNUSED(revents);
	struct signalfd_siginfo si;
	while (read(loop->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		int signo = (int)si.ssi_signo;
		if (signo > 0 && signo < CH_LOOP_NSIG && loop->sig[signo].cb)
			loop->sig[signo].cb(loop, signo, loop->sig[signo].ud);
	}
}

int
ch_loop_on_signal(ch_loop *loop, int signo, ch_signal_fn cb, void *ud)
{
	if (signo <= 0 || signo >= CH_LOOP_NSIG)
		return CH_ERR;
	loop->sig[signo].cb = cb;
	loop->sig[signo].ud = ud;
	if (!cb || sigismember(&loop->sigmask, signo) == 1)
		return CH_OK;
	sigaddset(&loop->sigmask, signo);
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, signo);
	if (pthread_sigmask(SIG_BLOCK, &one, NULL) != 0)
		return CH_ERR;
	int fd = signalfd(loop->sigfd, &loop->sigmask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0) {
		CH_LOGE("event", "signalfd: %s", strerror(errno));
		return CH_ERR;
	}
	if (loop->sigfd < 0) {
		loop->sigfd = fd;
		ch_io_init(&loop->sigio, fd, on_signalfd, NULL, NULL);
		if (ch_io_add(loop, &loop->sigio, CH_IO_READ) != CH_OK) {
			CH_LOGE("event", "epoll add signalfd: %s", strerror(errno));
			return CH_ERR;
		}
	}
	return CH_OK;
}

/* ---- hooks ------------------------------------------------------------- */

ch_hook *
ch_loop_add_before_sleep(ch_loop *loop, ch_hook_fn fn, void *ud)
{
	ch_hook *h = ch_xcalloc(1, sizeof(*h));
	h->fn = fn;
	h->ud = ud;
	ch_hook **pp = &loop->hooks;
	while (*pp)
		pp = &(*pp)->next;
	*pp = h;
	return h;
}

/* Unlinks and frees a before-sleep hook. */
static void
unlink_hook(ch_loop *loop, ch_hook *h)
{
	for (ch_hook **pp = &loop->hooks; *pp; pp = &(*pp)->next) {
		if (*pp == h) {
			*pp = h->next;
			free(h);
			return;
		}
	}
}

void
ch_loop_remove_before_sleep(ch_loop *loop, ch_hook *h)
{
	if (!h)
		return;
	if (loop->in_hooks) { /* the pass holds a pointer to it */
		h->dead = true;
		loop->hooks_dead = true;
		return;
	}
	unlink_hook(loop, h);
}

/* Runs every before-sleep hook once; hooks removed during the pass are freed
 * after it. Returns whether a hook has work left (the loop then does not
 * sleep). */
static bool
run_hooks(ch_loop *loop)
{
	bool more = false;
	loop->in_hooks = true;
	for (ch_hook *h = loop->hooks; h; h = h->next)
		if (!h->dead && h->fn(loop, h->ud))
			more = true;
	loop->in_hooks = false;
	if (loop->hooks_dead) {
		loop->hooks_dead = false;
		ch_hook **pp = &loop->hooks;
		while (*pp) {
			ch_hook *h = *pp;
			if (h->dead) {
				*pp = h->next;
				free(h);
			} else {
				pp = &h->next;
			}
		}
	}
	return more;
}

/* ---- the loop ---------------------------------------------------------- */

ch_loop *
ch_loop_new(void)
{
	ch_loop *loop = ch_xcalloc(1, sizeof(*loop));
	loop->sigfd = -1;
	loop->efd = -1;
	sigemptyset(&loop->sigmask);
	atomic_init(&loop->stop, false);
	pthread_mutex_init(&loop->post_mu, NULL);
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0) {
		CH_LOGE("event", "epoll_create1: %s", strerror(errno));
		goto fail;
	}
	loop->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (loop->efd < 0) {
		CH_LOGE("event", "eventfd: %s", strerror(errno));
		goto fail;
	}
	ch_io_init(&loop->eio, loop->efd, on_eventfd, NULL, NULL);
	if (ch_io_add(loop, &loop->eio, CH_IO_READ) != CH_OK) {
		CH_LOGE("event", "epoll add eventfd: %s", strerror(errno));
		goto fail;
	}
	ch_heap_init(&loop->timers);
	loop->now = ch_now_mono_ms();
	return loop;
fail:
	ch_loop_free(loop);
	return NULL;
}

void
ch_loop_free(ch_loop *loop)
{
	if (!loop)
		return;
	if (loop->efd >= 0)
		close(loop->efd);
	if (loop->sigfd >= 0)
		close(loop->sigfd);
	if (loop->epfd >= 0)
		close(loop->epfd);
	ch_post *p = loop->post_head;
	while (p) {
		ch_post *next = p->next;
		free(p);
		p = next;
	}
	while (loop->hooks) {
		ch_hook *h = loop->hooks;
		loop->hooks = h->next;
		free(h);
	}
	/* Timers still armed belong to their owners; just forget them. */
	ch_heap_free(&loop->timers);
	pthread_mutex_destroy(&loop->post_mu);
	free(loop);
}

int64_t
ch_loop_now(const ch_loop *loop)
{
	return loop->now;
}

int64_t
ch_loop_update_now(ch_loop *loop)
{
	loop->now = ch_now_mono_ms();
	return loop->now;
}

void
ch_loop_stop(ch_loop *loop)
{
	atomic_store(&loop->stop, true);
	wake(loop);
}

/* How long epoll_wait may sleep: 0 with work left or a stop asked, else
 * until the first timer, capped by max_wait_ms (-1: no cap). */
static int
compute_timeout(ch_loop *loop, bool more, int max_wait_ms)
{
	if (more || atomic_load(&loop->stop))
		return 0;
	int timeout = -1;
	const ch_heap_node *first = ch_heap_top(&loop->timers);
	if (first) {
		int64_t d = first->deadline - ch_now_mono_ms();
		timeout = d <= 0 ? 0 : d > INT_MAX ? INT_MAX : (int)d;
	}
	if (max_wait_ms >= 0 && (timeout < 0 || timeout > max_wait_ms))
		timeout = max_wait_ms;
	return timeout;
}

void
ch_loop_run_once(ch_loop *loop, int max_wait_ms)
{
	bool more = run_hooks(loop);
	int timeout = compute_timeout(loop, more, max_wait_ms);
	uint64_t sleep_us = ch_now_mono_us();
	if (loop->woke_us)
		ch_hist_observe(&loop->busy, sleep_us - loop->woke_us);
	int n = epoll_wait(loop->epfd, loop->events, CH_LOOP_MAX_EVENTS, timeout);
	if (n < 0) {
		if (errno != EINTR)
			CH_LOGE("event", "epoll_wait: %s", strerror(errno));
		n = 0;
	}
	loop->woke_us = ch_now_mono_us();
	loop->now = (int64_t)(loop->woke_us / 1000u);
	loop->nevents = n;
	dispatch_events(loop);
	run_timers(loop);
}

void
ch_loop_run(ch_loop *loop)
{
	while (!atomic_load(&loop->stop))
		ch_loop_run_once(loop, -1);
	(void)run_hooks(loop); /* flush what the last iteration queued */
	/* Cleared on the way out, not on entry: a stop requested by another
	 * thread before run started must not be lost. */
	atomic_store(&loop->stop, false);
}
