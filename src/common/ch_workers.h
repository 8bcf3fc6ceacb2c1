/*
 * ch_workers: a fixed pool of threads that run blocking work (fsync,
 * compaction, the topic registry's writes) off the event-loop thread
 * (DESIGN.md, principle 5).
 *
 * A work item runs in two halves: run(w) on one of the pool's threads, then
 * done(w) on the owner's thread. The pool knows no event loop: after run it
 * hands the item to the owner's `post` function (on the worker thread),
 * which must arrange for ch_workers_complete(w) on the owner's thread
 * (cohortd posts it to its loop with ch_loop_post). Items run in the order
 * they were queued, several at a time (one per thread); an item is queued
 * again only after its done ran.
 *
 * @locality ch_workers_queue/_run/_complete/_inflight on the owner's thread;
 * run on a worker; post on a worker.
 */
#ifndef CH_WORKERS_H
#define CH_WORKERS_H

#include <stddef.h>

typedef struct ch_workers ch_workers;

typedef struct ch_work ch_work;
struct ch_work {
	ch_work *next;            /* private: the queue */
	ch_workers *pool;         /* private: set by ch_workers_queue */
	void (*run)(ch_work *w);  /* worker thread */
	void (*done)(ch_work *w); /* owner's thread, after run */
	void *ud;
};

/* Called on the worker thread once w->run returned. */
typedef void (*ch_workers_post_fn)(void *ctx, ch_work *w);

/* Starts n_threads threads (aborts when not even one can be started). */
ch_workers *ch_workers_new(int n_threads, ch_workers_post_fn post, void *ctx);
/* Queues w (its run and done set). */
void ch_workers_queue(ch_workers *wk, ch_work *w);
/* Queues work(arg) on a worker and done(arg) on the owner's thread after it
 * (the item is allocated and freed by the pool). */
void ch_workers_run(ch_workers *wk, void (*work)(void *arg), void (*done)(void *arg), void *arg);
/* The owner's half of a finished item: counts it done and calls w->done. */
void ch_workers_complete(ch_work *w);
/* Items queued whose done has not run yet. */
size_t ch_workers_inflight(const ch_workers *wk);
/* Stops the threads once the queue is empty and joins them. Completions
 * not delivered yet are the owner's to deliver (or drop) first: call when
 * ch_workers_inflight is 0. NULL is a no-op. */
void ch_workers_free(ch_workers *wk);

#endif
