/*
 * cl_client.c: what every libcohort handle is made of — consumer, producer
 * and admin client alike: the private configuration copy, the client id,
 * the event loop and the I/O thread that runs it, the mutex and condition
 * the polling thread waits on, and the posted-call-with-wait (cl_wait) by
 * which a polling-thread call gets an answer from the I/O thread.
 *
 * Life of a client: cl_client_init (nothing running yet), cl_client_start
 * (the I/O thread runs; its first task is a Metadata request),
 * cl_client_stop (fails what is in flight, joins the thread), and
 * cl_client_release (frees what init made; the owner frees its own parts
 * first).
 */
#include "client/cl_int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void
cl_lock(cl_client *c)
{
	pthread_mutex_lock(&c->mu);
}

void
cl_unlock(cl_client *c)
{
	pthread_mutex_unlock(&c->mu);
}

void
cl_deadline_ts(struct timespec *ts, int64_t ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/* ---- offsets arrays ----------------------------------------------------- */

cohort_tp_offset *
cl_offsets_copy(const cohort_tp_offset *o, size_t n)
{
	size_t names = 0;
	for (size_t i = 0; i < n; i++)
		names += strlen(o[i].topic) + 1;
	cohort_tp_offset *d = malloc(sizeof(*d) * n + names + 1);
	if (!d)
		return NULL;
	char *p = (char *)(d + n);
	for (size_t i = 0; i < n; i++) {
		d[i] = o[i];
		size_t len = strlen(o[i].topic) + 1;
		memcpy(p, o[i].topic, len);
		d[i].topic = p;
		p += len;
	}
	return d;
}

/* ---- one synchronous call's answer --------------------------------------- */

cl_wait *
cl_wait_new(const cohort_tp_offset *offsets, size_t n)
{
	cl_wait *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	if (n) {
		w->offsets = cl_offsets_copy(offsets, n);
		if (!w->offsets) {
			free(w);
			return NULL;
		}
	}
	w->n = n;
	return w;
}

void
cl_wait_free(cl_wait *w)
{
	if (!w)
		return;
	free(w->offsets);
	free(w);
}

void
cl_wait_finish(cl_client *c, cl_wait *w, cohort_err err)
{
	cl_lock(c);
	if (w->abandoned) {
		cl_unlock(c);
		cl_wait_free(w);
		return;
	}
	w->err = err;
	w->done = true;
	pthread_cond_broadcast(&c->cond);
	cl_unlock(c);
}

cohort_err
cl_wait_for(cl_client *c, cl_wait *w, int64_t timeout_ms, cohort_tp_offset *out)
{
	struct timespec ts;
	cl_deadline_ts(&ts, timeout_ms < 0 ? 0 : timeout_ms);
	cl_lock(c);
	while (!w->done) {
		if (timeout_ms < 0)
			pthread_cond_wait(&c->cond, &c->mu);
		else if (pthread_cond_timedwait(&c->cond, &c->mu, &ts) != 0)
			break;
	}
	if (!w->done) {
		w->abandoned = true; /* the I/O thread frees it */
		cl_unlock(c);
		return COHORT_ERR__TIMED_OUT;
	}
	cohort_err err = w->err;
	for (size_t i = 0; out && i < w->n; i++) {
		out[i].offset = w->offsets[i].offset;
		out[i].err = w->offsets[i].err;
	}
	cl_unlock(c);
	cl_wait_free(w);
	return err;
}

/* A call posted to the I/O thread that completes a caller's cl_wait. */
typedef struct wait_msg {
	cl_client *c;
	cl_wait *w;
	cl_wait_start_fn start;
} wait_msg;

/* I/O thread: starts m->start, which completes m->w; frees m. */
static void
io_wait_msg(ch_loop *loop, void *ud)
{
	(void)loop;
	wait_msg *m = ud;
	m->start(m->c, m->w);
	free(m);
}

bool
cl_post_wait(cl_client *c, cl_wait *w, cl_wait_start_fn start)
{
	wait_msg *m = calloc(1, sizeof(*m));
	if (!m)
		return false;
	*m = (wait_msg){c, w, start};
	ch_loop_post(c->loop, io_wait_msg, m);
	return true;
}

cohort_err
cl_call(cl_client *c, cl_wait_start_fn start, const cohort_tp_offset *offsets, size_t n,
	int64_t timeout_ms, cohort_tp_offset *out)
{
	cl_wait *w = cl_wait_new(offsets, n);
	if (!w || !cl_post_wait(c, w, start)) {
		cl_wait_free(w);
		return COHORT_ERR__NOMEM;
	}
	return cl_wait_for(c, w, timeout_ms, out);
}

/* ---- the I/O thread --------------------------------------------------------- */

/* The I/O thread's body: runs c's loop until io_stop stops it. */
static void *
io_main(void *ud)
{
	cl_client *c = ud;
	ch_loop_run(c->loop);
	return NULL;
}

/* The I/O thread's first task (posted before the thread starts): the first Metadata request. */
static void
io_start(ch_loop *loop, void *ud)
{
	(void)loop;
	cl_client *c = ud;
	cl_metadata_refresh(c);
}

/* I/O thread: marks c closing, fails requests in flight and pending calls (the
 * owner's on_stop first), and stops the loop (no new request can start after this). */
static void
io_stop(ch_loop *loop, void *ud)
{
	cl_client *c = ud;
	c->closing = true;
	if (c->on_stop)
		c->on_stop(c);
	cl_brokers_close(c, COHORT_ERR__CLOSED); /* requests in flight end */
	cl_offsets_shutdown(c);                  /* calls waiting for a retry end */
	ch_loop_stop(loop);
}

static _Atomic int client_seq[3];

bool
cl_client_init(cl_client *c, const cohort_conf *conf, cl_client_kind kind, char *errstr,
	       size_t errstr_size)
{
	if (!cl_conf_copy(&c->conf, conf)) {
		cl_errstr(errstr, errstr_size, "out of memory");
		return false;
	}
	c->kind = kind;
	pthread_mutex_init(&c->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	/* Java's default client ids: consumer-<group>-<n>, producer-<n>, adminclient-<n> */
	int seq = ++client_seq[kind];
	char id[300];
	if (c->conf.client_id[0])
		snprintf(id, sizeof(id), "%s", c->conf.client_id);
	else if (kind == CL_CONSUMER)
		snprintf(id, sizeof(id), "consumer-%s-%d", c->conf.group_id ? c->conf.group_id : "",
			 seq);
	else
		snprintf(id, sizeof(id), "%s-%d", kind == CL_PRODUCER ? "producer" : "adminclient",
			 seq);
	c->client_id = strdup(id);
	c->loop = ch_loop_new();
	if (!c->client_id || !c->loop) {
		cl_errstr(errstr, errstr_size, "cannot create the client (out of memory or epoll)");
		cl_client_release(c);
		return false;
	}
	cl_metadata_init(c);
	c->sasl_mech = -1;
	cl_security_protocol sp = c->conf.security_protocol;
	if (((sp == CL_SSL || sp == CL_SASL_SSL) && !cl_tls_ctx_new(c, errstr, errstr_size)) ||
	    ((sp == CL_SASL_PLAINTEXT || sp == CL_SASL_SSL) &&
	     !cl_sasl_conf(c, errstr, errstr_size))) {
		cl_client_release(c);
		return false;
	}
	return true;
}

const char *
cl_client_auth_error(cl_client *c)
{
	cl_lock(c);
	const char *m = c->auth_error; /* set once, freed with c */
	cl_unlock(c);
	return m;
}

bool
cl_client_start(cl_client *c, char *errstr, size_t errstr_size)
{
	ch_loop_post(c->loop, io_start, c);
	if (pthread_create(&c->thread, NULL, io_main, c) != 0) {
		cl_errstr(errstr, errstr_size, "cannot start the I/O thread");
		return false;
	}
	c->thread_started = true;
	return true;
}

void
cl_client_stop(cl_client *c)
{
	c->closed = true;
	ch_loop_post(c->loop, io_stop, c);
	if (c->thread_started) {
		pthread_join(c->thread, NULL);
		c->thread_started = false;
	}
}

void
cl_client_release(cl_client *c)
{
	if (c->loop) {
		cl_metadata_free(c);
		cl_brokers_free(c);
		ch_loop_free(c->loop);
		c->loop = NULL;
	}
	for (int i = 0; i < c->nmd_topics; i++)
		free(c->md_topics[i]);
	free(c->md_topics);
	c->md_topics = NULL;
	c->nmd_topics = 0;
	free(c->client_id);
	c->client_id = NULL;
	cl_tls_ctx_free(c);
	cl_sasl_conf_free(c);
	free(c->auth_error);
	c->auth_error = NULL;
	cl_conf_release(&c->conf);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cond);
}
