/*
 * ch_workers.c: see ch_workers.h. One mutex-protected FIFO, one condition
 * variable; the threads take items in order.
 */
#include "common/ch_workers.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"
#include "common/ch_log.h"

#define MAX_THREADS 64

struct ch_workers {
	ch_workers_post_fn post;
	void *ctx;
	pthread_t threads[MAX_THREADS];
	int n_threads;
	pthread_mutex_t qlock;
	pthread_cond_t qcond;
	ch_work *q_head, *q_tail; /* under qlock */
	bool q_stop;              /* under qlock */
	size_t inflight;          /* owner's thread: queued, done not yet run */
};

/* A worker thread: takes items until stopped and the queue is empty. */
static void *
worker_main(void *arg)
{
	ch_workers *wk = arg;
	for (;;) {
		pthread_mutex_lock(&wk->qlock);
		while (!wk->q_head && !wk->q_stop)
			pthread_cond_wait(&wk->qcond, &wk->qlock);
		ch_work *w = wk->q_head;
		if (!w) {
			pthread_mutex_unlock(&wk->qlock);
			break;
		}
		wk->q_head = w->next;
		if (!wk->q_head)
			wk->q_tail = NULL;
		pthread_mutex_unlock(&wk->qlock);
		w->run(w);
		wk->post(wk->ctx, w);
	}
	return NULL;
}

ch_workers *
ch_workers_new(int n_threads, ch_workers_post_fn post, void *ctx)
{
	ch_workers *wk = ch_xcalloc(1, sizeof(*wk));
	wk->post = post;
	wk->ctx = ctx;
	pthread_mutex_init(&wk->qlock, NULL);
	pthread_cond_init(&wk->qcond, NULL);
	n_threads = CH_MAX(1, CH_MIN(n_threads, MAX_THREADS));
	for (int i = 0; i < n_threads; i++) {
		int e = pthread_create(&wk->threads[i], NULL, worker_main, wk);
		if (e != 0) {
			CH_LOGE("workers", "cannot start a worker thread: %s", strerror(e));
			break;
		}
		wk->n_threads++;
	}
	if (wk->n_threads == 0)
		abort();
	return wk;
}

void
ch_workers_queue(ch_workers *wk, ch_work *w)
{
	wk->inflight++;
	w->next = NULL;
	w->pool = wk;
	pthread_mutex_lock(&wk->qlock);
	CH_FIFO_APPEND(wk->q_head, wk->q_tail, w);
	pthread_cond_signal(&wk->qcond);
	pthread_mutex_unlock(&wk->qlock);
}

void
ch_workers_complete(ch_work *w)
{
	w->pool->inflight--;
	w->done(w);
}

size_t
ch_workers_inflight(const ch_workers *wk)
{
	return wk->inflight;
}

/* ch_workers_run's item: the caller's functions and argument. */
typedef struct fn_work {
	ch_work work;
	void (*fn)(void *arg);
	void (*done)(void *arg);
	void *arg;
} fn_work;

/* Worker half of a ch_workers_run item. */
static void
fn_run(ch_work *w)
{
	fn_work *f = (fn_work *)w;
	f->fn(f->arg);
}

/* Owner's half of a ch_workers_run item: frees it, then calls done. */
static void
fn_done(ch_work *w)
{
	fn_work *f = (fn_work *)w;
	void (*done)(void *) = f->done;
	void *arg = f->arg;
	free(f);
	done(arg);
}

void
ch_workers_run(ch_workers *wk, void (*work)(void *arg), void (*done)(void *arg), void *arg)
{
	fn_work *f = ch_xcalloc(1, sizeof(*f));
	f->work.run = fn_run;
	f->work.done = fn_done;
	f->fn = work;
	f->done = done;
	f->arg = arg;
	ch_workers_queue(wk, &f->work);
}

void
ch_workers_free(ch_workers *wk)
{
	if (!wk)
		return;
	pthread_mutex_lock(&wk->qlock);
	wk->q_stop = true;
	pthread_cond_broadcast(&wk->qcond);
	pthread_mutex_unlock(&wk->qlock);
	for (int i = 0; i < wk->n_threads; i++)
		pthread_join(wk->threads[i], NULL);
	pthread_mutex_destroy(&wk->qlock);
	pthread_cond_destroy(&wk->qcond);
	free(wk);
}
