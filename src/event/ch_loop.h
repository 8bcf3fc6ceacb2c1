/*
 * ch_loop: the single-threaded epoll event loop that runs the network and
 * the coordinator (DESIGN.md principle 5).
 *
 * Everything here is called on the loop thread, except ch_loop_post() and
 * ch_loop_stop(), which any thread may call.
 *
 * One iteration of ch_loop_run():
 *
 *   1. before-sleep hooks      (the server flushes queued responses here, so
 *                               many responses leave in one writev)
 *   2. epoll_wait              (timeout: the earliest timer, or 0 if a hook
 *                               asked for another pass or work was posted)
 *   3. now = monotonic ms      (ch_loop_now(): read once per iteration)
 *   4. fd callbacks
 *   5. expired timers          (in deadline order; FIFO among equal deadlines)
 *
 * Posted callbacks and signals arrive as fd events (an eventfd, a signalfd).
 *
 * Ownership: fd watchers (ch_io) and timers (ch_timer) are embedded in the
 * objects that own them; the loop only links to them and never allocates or
 * frees them. An owner must remove its watcher and cancel its timers before
 * freeing itself. Removing a watcher is safe at any moment, also from inside
 * a callback of this very iteration: pending events for it are discarded.
 *
 * Timers live in a ch_heap (common/ch_heap.h: entries hold deadline, arm
 * sequence and node; each timer remembers its heap slot), so arm, re-arm and
 * cancel are all O(log n). 100,000 member session timers re-armed by every heartbeat cost a
 * few sift steps each. A timer armed from inside a timer callback with an
 * already-expired deadline fires on the next iteration, never in the same
 * pass, so a callback that re-arms "now" cannot starve the loop.
 */
#ifndef CH_LOOP_H
#define CH_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ch_heap.h"
#include "common/ch_hist.h"

typedef struct ch_loop ch_loop;
typedef struct ch_io ch_io;
typedef struct ch_timer ch_timer;

/* ---- fd watchers ------------------------------------------------------- */

#define CH_IO_READ 0x1u  /* interest / event: readable */
#define CH_IO_WRITE 0x2u /* interest / event: writable */
#define CH_IO_HUP 0x4u   /* event only: peer hung up (EPOLLRDHUP / EPOLLHUP) */
#define CH_IO_ERR 0x8u   /* event only: error pending on the fd (EPOLLERR) */

/*
 * on_read is called when the fd is readable, and also on CH_IO_HUP/CH_IO_ERR
 * even when CH_IO_READ is not in the interest set, so an owner that paused
 * reading still learns that its peer went away. on_write is called when the
 * fd is writable (and on CH_IO_ERR/CH_IO_HUP while CH_IO_WRITE is wanted).
 * Either may be NULL. `revents` is the CH_IO_* set that fired.
 */
typedef void (*ch_io_fn)(ch_loop *loop, ch_io *io, unsigned revents);

struct ch_io {
	int fd;
	unsigned events; /* current interest, CH_IO_READ|CH_IO_WRITE */
	bool added;      /* registered with epoll */
	ch_io_fn on_read;
	ch_io_fn on_write;
	void *ud;
};

void ch_io_init(ch_io *io, int fd, ch_io_fn on_read, ch_io_fn on_write, void *ud);
/* Register with interest `events` (may be 0: then only hang-up/error are
 * reported). Returns CH_OK, or CH_ERR with errno set. */
int ch_io_add(ch_loop *loop, ch_io *io, unsigned events);
/* Change the interest set; a no-op when unchanged. */
int ch_io_modify(ch_loop *loop, ch_io *io, unsigned events);
/* Unregister (before close(fd)). Idempotent. */
void ch_io_remove(ch_loop *loop, ch_io *io);

/* ---- timers ------------------------------------------------------------ */

typedef void (*ch_timer_fn)(ch_loop *loop, ch_timer *t, void *ud);

struct ch_timer {
	ch_heap_node node; /* node.deadline: monotonic ms, meaningful while armed */
	ch_timer_fn cb;
	void *ud;
};

/* A zeroed timer is also a valid unarmed timer (with no callback yet). */
void ch_timer_init(ch_timer *t, ch_timer_fn cb, void *ud);
/* Arm for `deadline_ms` (monotonic, compare ch_loop_now()). Re-arming an
 * armed timer moves it. The callback runs once; it may re-arm. */
void ch_timer_arm(ch_loop *loop, ch_timer *t, int64_t deadline_ms);
/* Disarm; a no-op when not armed. */
void ch_timer_cancel(ch_loop *loop, ch_timer *t);
static inline bool
ch_timer_armed(const ch_timer *t)
{
	return ch_heap_armed(&t->node);
}
static inline int64_t
ch_timer_deadline(const ch_timer *t)
{
	return t->node.deadline;
}

/* ---- the loop ---------------------------------------------------------- */

typedef void (*ch_loop_fn)(ch_loop *loop, void *ud);
/* A before-sleep hook returns true if it left work that needs another pass
 * before the loop may block (the next epoll_wait then does not sleep). */
typedef bool (*ch_hook_fn)(ch_loop *loop, void *ud);
typedef void (*ch_signal_fn)(ch_loop *loop, int signo, void *ud);

/* Returns NULL (and logs) if epoll/eventfd cannot be created. */
ch_loop *ch_loop_new(void);
/*
 * Frees the loop. Watchers and timers must have been removed by their owners
 * (the loop does not touch them). Callbacks still queued by ch_loop_post are
 * discarded without running: stop worker threads and run one last iteration
 * first if they carry resources. Signals blocked by ch_loop_on_signal stay
 * blocked: a SIGTERM arriving during shutdown must not kill the process
 * halfway through a clean exit.
 */
void ch_loop_free(ch_loop *loop);

/* Run until ch_loop_stop(). Returns when the current iteration finishes,
 * after one more pass of the before-sleep hooks (so replies queued during
 * the last iteration are still written). */
void ch_loop_run(ch_loop *loop);
/* One iteration, sleeping at most max_wait_ms (-1: as long as needed). */
void ch_loop_run_once(ch_loop *loop, int max_wait_ms);
/* Make ch_loop_run return after the current iteration. Thread-safe. */
void ch_loop_stop(ch_loop *loop);

/* Monotonic milliseconds, sampled once per iteration (after epoll_wait). */
int64_t ch_loop_now(const ch_loop *loop);
/* Re-sample the clock now (after a long computation on the loop thread). */
int64_t ch_loop_update_now(ch_loop *loop);

/*
 * Run fn(loop, ud) on the loop thread during a later iteration. Thread-safe:
 * this is how worker threads (fsync) hand results back. Callbacks run in the
 * order they were posted. Aborts on out-of-memory like ch_xmalloc.
 */
void ch_loop_post(ch_loop *loop, ch_loop_fn fn, void *ud);

/*
 * Deliver signal `signo` to cb on the loop thread, through a signalfd. The
 * signal is blocked in the calling thread: call this on the loop thread
 * before starting other threads (they inherit the mask), otherwise the
 * kernel may deliver the signal to a thread that still has it unblocked.
 * cb == NULL removes the callback (the signal stays blocked and is
 * drained unhandled). Returns CH_OK or CH_ERR.
 */
int ch_loop_on_signal(ch_loop *loop, int signo, ch_signal_fn cb, void *ud);

/* Before-sleep hooks run in registration order at the start of every
 * iteration. The handle stays valid until removed; removal from inside a
 * hook is allowed. */
typedef struct ch_hook ch_hook;
ch_hook *ch_loop_add_before_sleep(ch_loop *loop, ch_hook_fn fn, void *ud);
void ch_loop_remove_before_sleep(ch_loop *loop, ch_hook *h);

/* How long each iteration worked, from waking up (epoll_wait returned) to
 * sleeping again: what an event arriving meanwhile waits at most
 * (/metrics' cohort_event_loop_iteration_seconds). */
const ch_hist *ch_loop_busy(const ch_loop *loop);

/* Armed timers (tests and metrics). */
size_t ch_loop_timer_count(const ch_loop *loop);

#endif
