/*
 * cl_consumer.c: the public consumer calls (polling thread), the I/O
 * thread's start and stop, and the queue between the two.
 *
 * The polling thread never touches brokers, metadata or the member: it
 * posts closures to the loop (ch_loop_post) and, for calls that need an
 * answer, waits on a cl_wait. Records and callbacks reach it through the
 * chunk queue and the event queue under c->mu; cohort_poll runs the events
 * first (so assigned() precedes the records of those partitions, and a
 * revoked partition's records are never returned after revoked()), then
 * returns records.
 */
#include "client/cl_int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/ch_log.h"

struct cohort_consumer {
	cl_client c;
};

cl_tp *
cl_tp_find(cl_client *c, const char *topic, int32_t partition)
{
	for (int i = 0; i < c->ntps; i++)
		if (c->tps[i]->partition == partition && strcmp(c->tps[i]->topic, topic) == 0)
			return c->tps[i];
	return NULL;
}

cl_tp *
cl_tp_get(cl_client *c, const char *topic, int32_t partition)
{
	cl_tp *tp = cl_tp_find(c, topic, partition);
	if (tp)
		return tp;
	cl_tp **n = realloc(c->tps, sizeof(cl_tp *) * (size_t)(c->ntps + 1));
	if (!n)
		return NULL;
	c->tps = n;
	tp = calloc(1, sizeof(*tp));
	if (!tp || !(tp->topic = strdup(topic))) {
		free(tp);
		return NULL;
	}
	tp->partition = partition;
	tp->position = tp->fetch_pos = -1;
	tp->leader_epoch = -1;
	tp->reset_to = CL_RESET_TO_CONF;
	c->tps[c->ntps++] = tp;
	return tp;
}

void
cl_tp_take(cl_tp *tp)
{
	tp->owned = true;
	tp->epoch++;
	tp->position = tp->fetch_pos = -1;
	tp->leader_epoch = -1;
	tp->offset_lookup = tp->reset = tp->corrupt = tp->paused = false;
	tp->reset_to = CL_RESET_TO_CONF;
}

void
cl_tp_drop(cl_tp *tp)
{
	tp->owned = false;
	tp->epoch++;
	tp->paused = false; /* Java's SubscriptionState forgets it with the partition */
}

cohort_tp *
cl_tps_new(cl_tp *const *tps, size_t n)
{
	size_t names = 0;
	for (size_t i = 0; i < n; i++)
		names += strlen(tps[i]->topic) + 1;
	cohort_tp *d = malloc(sizeof(*d) * n + names + 1);
	if (!d)
		return NULL;
	char *p = (char *)(d + n);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(tps[i]->topic) + 1;
		memcpy(p, tps[i]->topic, len);
		d[i].topic = p;
		d[i].partition = tps[i]->partition;
		p += len;
	}
	return d;
}

void
cl_event_push(cl_client *c, cl_event *ev)
{
	CH_FIFO_APPEND(c->ev_head, c->ev_tail, ev);
	pthread_cond_broadcast(&c->cond);
}

/* Frees an application event and the partition and offset arrays it owns. */
static void
event_free(cl_event *ev)
{
	free(ev->tps);
	free(ev->offsets);
	free(ev);
}

cohort_consumer *
cohort_consumer_new(const cohort_conf *conf, char *errstr, size_t errstr_size)
{
	if (!conf) {
		cl_errstr(errstr, errstr_size, "cohort_consumer_new: NULL conf");
		return NULL;
	}
	if (conf->nbootstrap == 0) {
		cl_errstr(errstr, errstr_size,
			  "No resolvable bootstrap urls given in bootstrap.servers");
		return NULL;
	}
	/* ConsumerConfig.checkUnsupportedConfigsPostProcess: the keys the other
	 * protocol owns, when set with a group.id */
	static const char *const classic_only[] = {"partition.assignment.strategy",
						   "heartbeat.interval.ms", "session.timeout.ms"};
	char bad[128] = "";
	for (size_t i = 0; conf->group_id && conf->group_protocol_consumer && i < 3; i++)
		if (cl_conf_user_set(conf, classic_only[i]))
			snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), "%s%s",
				 bad[0] ? ", " : "", classic_only[i]);
	if (conf->group_id && !conf->group_protocol_consumer && conf->group_remote_assignor &&
	    conf->group_remote_assignor[0])
		snprintf(bad, sizeof(bad), "group.remote.assignor");
	if (bad[0]) {
		cl_errstr(errstr, errstr_size, "%s cannot be set when group.protocol=%s", bad,
			  conf->group_protocol_consumer ? "CONSUMER" : "CLASSIC");
		return NULL;
	}
	if (!conf->group_protocol_consumer &&
	    conf->heartbeat_interval_ms >= conf->session_timeout_ms) {
		cl_errstr(
			errstr, errstr_size,
			"heartbeat.interval.ms (%d) must be set lower than session.timeout.ms (%d)",
			conf->heartbeat_interval_ms, conf->session_timeout_ms);
		return NULL;
	}
	if (conf->group_instance_id && !conf->group_id) {
		cl_errstr(errstr, errstr_size, "group.instance.id is set but group.id is not");
		return NULL;
	}
	cohort_consumer *cc = calloc(1, sizeof(*cc));
	if (!cc) {
		cl_errstr(errstr, errstr_size, "out of memory");
		return NULL;
	}
	cl_client *c = &cc->c;
	if (!cl_client_init(c, conf, CL_CONSUMER, errstr, errstr_size)) {
		free(cc);
		return NULL;
	}
	if (conf->listener_copy)
		c->listener = *(const cohort_rebalance_listener *)conf->listener_copy;
	c->member = c->conf.group_id ? cl_member_new(c) : NULL;
	if (c->conf.group_id && !c->member) {
		cl_errstr(errstr, errstr_size, "cannot create the group member (out of memory)");
		goto fail;
	}
	c->last_poll = ch_now_mono_ms();
	if (!cl_client_start(c, errstr, errstr_size))
		goto fail;
	return cc;
fail:
	cl_member_free(c->member);
	cl_client_release(c);
	free(cc);
	return NULL;
}

void
cohort_conf_set_rebalance_listener(cohort_conf *conf, const cohort_rebalance_listener *listener)
{
	free(conf->listener_copy);
	conf->listener_copy = NULL;
	if (listener && (conf->listener_copy = malloc(sizeof(*listener))))
		memcpy(conf->listener_copy, listener, sizeof(*listener));
}

/* A call that needs a group: CLOSED after close, STATE without group.id. */
static cohort_err
group_call(const cl_client *c)
{
	return c->closed ? COHORT_ERR__CLOSED : !c->member ? COHORT_ERR__STATE : COHORT_OK;
}

/* ---- subscribe ----------------------------------------------------------------- */

typedef struct subscribe_msg {
	cl_client *c;
	char **topics;
	int n;
	char *pattern_text; /* cohort_subscribe_pattern (topics NULL) */
	regex_t *pattern;   /* and its compiled form, classic protocol only */
} subscribe_msg;

/* Frees a pattern subscription's compiled expression (NULL is fine). */
static void
pattern_free(regex_t *re)
{
	if (re) {
		regfree(re);
		free(re);
	}
}

/* I/O thread: c's pattern subscription becomes text and re (NULL, NULL: none). */
static void
pattern_set(cl_client *c, char *text, regex_t *re)
{
	pattern_free(c->pattern);
	free(c->pattern_text);
	c->pattern = re;
	c->pattern_text = text;
}

/* I/O thread: the topics metadata asks for become a copy of topics[0..n) (distinct). */
static void
set_md_topics(cl_client *c, char *const *topics, int n)
{
	for (int i = 0; i < c->nmd_topics; i++)
		free(c->md_topics[i]);
	free(c->md_topics);
	c->md_topics = calloc((size_t)n + 1, sizeof(char *));
	c->nmd_topics = 0;
	for (int i = 0; c->md_topics && i < n; i++) {
		bool dup = false;
		for (int j = 0; j < c->nmd_topics && !dup; j++)
			dup = strcmp(c->md_topics[j], topics[i]) == 0;
		if (!dup && (c->md_topics[c->nmd_topics] = strdup(topics[i])))
			c->nmd_topics++;
	}
}

/* I/O thread: replaces the topics metadata is asked for, refreshes metadata and hands the
 * topics array to the member (which owns it afterwards); frees s itself. */
static void
io_subscribe(ch_loop *loop, void *ud)
{
	(void)loop;
	subscribe_msg *s = ud;
	cl_client *c = s->c;
	pattern_set(c, s->pattern_text, s->pattern);
	set_md_topics(c, s->topics, s->n);
	cl_metadata_refresh(c);
	/* classic: the topics matching the pattern come with the metadata;
	 * the consumer protocol subscribes to the pattern itself */
	if (!s->pattern)
		cl_member_subscribe(c, s->topics, s->n); /* takes the topics */
	free(s);
}

cohort_err
cohort_subscribe(cohort_consumer *cc, const char *const *topics, size_t n)
{
	cl_client *c = &cc->c;
	cohort_err gerr = group_call(c);
	if (gerr)
		return gerr;
	if (n == 0 || !topics)
		return COHORT_ERR__INVALID_ARG;
	if (c->manual_api)
		return COHORT_ERR__STATE; /* Java: subscribe and assign are exclusive */
	subscribe_msg *s = calloc(1, sizeof(*s));
	char **copy = calloc(n, sizeof(char *));
	if (!s || !copy) {
		free(s);
		free(copy);
		return COHORT_ERR__NOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (!topics[i] || !topics[i][0] || !(copy[i] = strdup(topics[i]))) {
			for (size_t j = 0; j <= i && j < n; j++)
				free(copy[j]);
			free(copy);
			free(s);
			return topics[i] && topics[i][0] ? COHORT_ERR__NOMEM
							 : COHORT_ERR__INVALID_ARG;
		}
	s->c = c;
	s->topics = copy;
	s->n = (int)n;
	c->subscribed = true;
	ch_loop_post(c->loop, io_subscribe, s);
	return COHORT_OK;
}

cohort_err
cohort_subscribe_pattern(cohort_consumer *cc, const char *pattern, char *errstr, size_t errstr_size)
{
	cl_client *c = &cc->c;
	cohort_err gerr = group_call(c);
	if (gerr)
		return gerr;
	if (!pattern || !pattern[0]) {
		cl_errstr(errstr, errstr_size, "an empty pattern");
		return COHORT_ERR__INVALID_ARG;
	}
	if (c->manual_api)
		return COHORT_ERR__STATE;
	subscribe_msg *s = calloc(1, sizeof(*s));
	char *text = strdup(pattern);
	if (!s || !text) {
		free(s);
		free(text);
		return COHORT_ERR__NOMEM;
	}
	*s = (subscribe_msg){c, NULL, 0, text, NULL};
	if (c->conf.group_protocol_consumer) {
		/* the broker compiles and matches it (RE2; an invalid one fails the
		 * member with INVALID_REGULAR_EXPRESSION), as Java's SubscriptionPattern */
		c->subscribed = true;
		ch_loop_post(c->loop, io_subscribe, s);
		return COHORT_OK;
	}
	/* the whole topic name must match, as Java's Pattern.matcher().matches() */
	size_t len = strlen(pattern);
	char *anchored = malloc(len + 5);
	regex_t *re = calloc(1, sizeof(*re));
	if (!anchored || !re) {
		free(anchored);
		free(re);
		free(text);
		free(s);
		return COHORT_ERR__NOMEM;
	}
	snprintf(anchored, len + 5, "^(%s)$", pattern);
	int rc = regcomp(re, anchored, REG_EXTENDED | REG_NOSUB);
	free(anchored);
	if (rc != 0) {
		char why[256];
		regerror(rc, re, why, sizeof(why));
		cl_errstr(errstr, errstr_size, "pattern %s: %s", pattern, why);
		free(re);
		free(text);
		free(s);
		return COHORT_ERR__INVALID_ARG;
	}
	s->pattern = re;
	c->subscribed = true;
	ch_loop_post(c->loop, io_subscribe, s);
	return COHORT_OK;
}

/* ---- manual assignment ---------------------------------------------------------- */

/* I/O thread: metadata asks for the assigned topics; the lookups and the fetcher follow
 * its answer. Frees s and its topics. */
static void
io_assign(ch_loop *loop, void *ud)
{
	(void)loop;
	subscribe_msg *s = ud;
	cl_client *c = s->c;
	set_md_topics(c, s->topics, s->n);
	for (int i = 0; i < s->n; i++)
		free(s->topics[i]);
	free(s->topics);
	free(s);
	cl_metadata_refresh(c);
	cl_offsets_lookup(c);
	cl_fetcher_kick(c);
}

cohort_err
cohort_assign(cohort_consumer *cc, const cohort_tp *tps, size_t n)
{
	cl_client *c = &cc->c;
	if (c->closed)
		return COHORT_ERR__CLOSED;
	if (c->subscribed)
		return COHORT_ERR__STATE; /* Java: subscribe and assign are exclusive */
	if (n && !tps)
		return COHORT_ERR__INVALID_ARG;
	for (size_t i = 0; i < n; i++)
		if (!tps[i].topic || !tps[i].topic[0] || tps[i].partition < 0)
			return COHORT_ERR__INVALID_ARG;
	subscribe_msg *s = calloc(1, sizeof(*s));
	char **topics = calloc(n + 1, sizeof(char *));
	bool ok = s && topics;
	for (size_t i = 0; ok && i < n; i++)
		ok = (topics[i] = strdup(tps[i].topic)) != NULL;
	cl_lock(c);
	for (size_t i = 0; ok && i < n; i++)
		ok = cl_tp_get(c, tps[i].topic, tps[i].partition) != NULL;
	if (!ok) {
		cl_unlock(c);
		for (size_t i = 0; topics && i < n; i++)
			free(topics[i]);
		free(topics);
		free(s);
		return COHORT_ERR__NOMEM;
	}
	/* partitions that stay keep their position (Java's assignFromUser) */
	for (int i = 0; i < c->ntps; i++) {
		cl_tp *tp = c->tps[i];
		bool want = false;
		for (size_t j = 0; j < n && !want; j++)
			want = tps[j].partition == tp->partition &&
			       strcmp(tps[j].topic, tp->topic) == 0;
		if (want && !tp->owned)
			cl_tp_take(tp);
		else if (!want && tp->owned)
			cl_tp_drop(tp);
	}
	c->manual = n > 0;
	cl_unlock(c);
	c->manual_api = n > 0;
	*s = (subscribe_msg){c, topics, (int)n, NULL, NULL};
	ch_loop_post(c->loop, io_assign, s);
	return COHORT_OK;
}

/* ---- poll ------------------------------------------------------------------------ */

static void
io_kick(ch_loop *loop, void *ud)
{
	(void)loop;
	cl_fetcher_kick(ud);
}

static void
io_polled(ch_loop *loop, void *ud)
{
	(void)loop;
	cl_member_polled(ud);
}

static void
io_revoke_done(ch_loop *loop, void *ud)
{
	(void)loop;
	cl_member_revoke_done(ud);
}

/* The consumed positions of the owned partitions (or of tps when given),
 * for commits. *n gets the count; NULL when out of memory or none. */
static cohort_tp_offset *
owned_positions(cl_client *c, const cohort_tp *tps, size_t ntps, size_t *n)
{
	cl_lock(c);
	size_t cnt = 0;
	for (int i = 0; i < c->ntps; i++)
		if (c->tps[i]->owned && c->tps[i]->position >= 0)
			cnt++;
	cohort_tp_offset *o = calloc(cnt + 1, sizeof(*o));
	size_t k = 0;
	for (int i = 0; o && i < c->ntps; i++) {
		cl_tp *tp = c->tps[i];
		if (!tp->owned || tp->position < 0)
			continue;
		bool want = tps == NULL;
		for (size_t j = 0; !want && j < ntps; j++)
			want = tps[j].partition == tp->partition &&
			       strcmp(tps[j].topic, tp->topic) == 0;
		if (want)
			o[k++] = (cohort_tp_offset){tp->topic, tp->partition, tp->position, 0};
	}
	cl_unlock(c);
	*n = k;
	return o;
}

typedef struct commit_msg {
	cl_client *c;
	cl_wait *w;
	cohort_commit_cb cb;
	void *opaque;
	bool retry_stale; /* the auto-commit before a revoke (cl_offsets_commit) */
} commit_msg;

/* I/O thread: starts the commit of m's offsets; a sync commit completes m->w, an async one
 * frees w here (cl_offsets_commit copies the offsets).  Frees m. */
static void
io_commit(ch_loop *loop, void *ud)
{
	(void)loop;
	commit_msg *m = ud;
	cl_wait *w = m->w;
	cl_offsets_commit(m->c, w->offsets, w->n, m->cb ? NULL : w, m->cb, m->opaque,
			  m->retry_stale);
	if (m->cb) /* async: the wait only carried the offsets */
		cl_wait_free(w);
	free(m);
}

/* Commit offsets (copied) and wait, or queue with cb; retry_stale as cl_offsets_commit's. */
static cohort_err
commit_as(cl_client *c, const cohort_tp_offset *offs, size_t n, cohort_tp_offset *out,
	  cohort_commit_cb cb, void *opaque, bool retry_stale)
{
	cl_wait *w = cl_wait_new(offs, n);
	commit_msg *m = calloc(1, sizeof(*m));
	if (!w || !m) {
		free(m);
		cl_wait_free(w);
		return COHORT_ERR__NOMEM;
	}
	m->c = c;
	m->w = w;
	m->cb = cb;
	m->opaque = opaque;
	m->retry_stale = retry_stale;
	ch_loop_post(c->loop, io_commit, m);
	if (cb)
		return COHORT_OK;
	return cl_wait_for(c, w, c->conf.default_api_timeout_ms, out);
}

/* An application's commit: a STALE_MEMBER_EPOCH answer is its result (Java's commitSync
 * throws CommitFailedException for it). */
static cohort_err
commit(cl_client *c, const cohort_tp_offset *offs, size_t n, cohort_tp_offset *out,
       cohort_commit_cb cb, void *opaque)
{
	return commit_as(c, offs, n, out, cb, opaque, false);
}

/* Auto-commit of the consumed positions (of tps, or all when NULL) before a revoke or a
 * close, retried with the latest epoch on STALE_MEMBER_EPOCH as Java's auto-commit
 * before revocation (the epoch may move while the revoke is under way). */
static void
auto_commit_sync(cl_client *c, const cohort_tp *tps, size_t ntps)
{
	size_t n;
	cohort_tp_offset *o = owned_positions(c, tps, ntps, &n);
	if (o && n) {
		cohort_err err = commit_as(c, o, n, o, NULL, NULL, true);
		if (err)
			CH_LOGW(CL_LOG, "auto-commit before revoke failed: %s",
				cohort_err_name(err));
	}
	free(o);
}

/* Run one event's callback (c->mu not held). Returns an error poll must
 * return, else COHORT_OK. */
static cohort_err
run_event(cohort_consumer *cc, cl_event *ev)
{
	cl_client *c = &cc->c;
	cohort_err ret = COHORT_OK;
	switch (ev->kind) {
	case CL_EV_ASSIGNED:
		if (c->listener.assigned)
			c->listener.assigned(cc, ev->tps, ev->n, c->listener.opaque);
		break;
	case CL_EV_REVOKED:
		if (c->conf.enable_auto_commit)
			auto_commit_sync(c, ev->tps, ev->n);
		if (c->listener.revoked)
			c->listener.revoked(cc, ev->tps, ev->n, c->listener.opaque);
		/* from now on none of their records is returned */
		cl_lock(c);
		for (size_t i = 0; i < ev->n; i++) {
			cl_tp *tp = cl_tp_find(c, ev->tps[i].topic, ev->tps[i].partition);
			if (tp)
				cl_tp_drop(tp);
		}
		c->revoke_pending = false;
		cl_unlock(c);
		ch_loop_post(c->loop, io_revoke_done, c);
		break;
	case CL_EV_LOST:
		if (c->listener.lost)
			c->listener.lost(cc, ev->tps, ev->n, c->listener.opaque);
		break;
	case CL_EV_COMMIT:
		if (ev->cb)
			ev->cb(cc, ev->err, ev->offsets, ev->n, ev->opaque);
		break;
	case CL_EV_ERROR:
		ret = ev->err;
		break;
	}
	event_free(ev);
	return ret;
}

/* Run every queued event; stops at one that poll must return. */
static cohort_err
run_events(cohort_consumer *cc)
{
	cl_client *c = &cc->c;
	for (;;) {
		cl_lock(c);
		cl_event *ev = c->ev_head;
		if (ev) {
			c->ev_head = ev->next;
			if (!c->ev_head)
				c->ev_tail = NULL;
		}
		cl_unlock(c);
		if (!ev)
			return COHORT_OK;
		cohort_err err = run_event(cc, ev);
		if (err)
			return err;
	}
}

/* Take up to max records from the queue (c->mu held). */
static size_t
take_records(cl_client *c, size_t max, bool *kick)
{
	size_t n = 0;
	cl_chunk **pp = &c->q_head, *prev = NULL;
	while (*pp && n < max) {
		cl_chunk *ch = *pp;
		cl_tp *tp = ch->tp;
		bool stale = ch->epoch != tp->epoch || !tp->owned;
		if (!stale && tp->paused) { /* kept for after the resume, as Java does */
			prev = ch;
			pp = &ch->next;
			continue;
		}
		if (!stale) {
			while (ch->pos < ch->n && n < max) {
				cohort_record *r = &ch->recs[ch->pos++];
				c->poll_recs[n++] = *r;
				tp->position = r->offset + 1;
				tp->leader_epoch = r->leader_epoch;
			}
		}
		if (stale || ch->pos == ch->n) {
			/* past the chunk's control and aborted batches too (Java's
			 * FetchCollector moves the position to nextFetchOffset) */
			if (!stale && ch->next_offset > tp->position)
				tp->position = ch->next_offset;
			*pp = ch->next;
			if (c->q_tail == ch)
				c->q_tail = prev;
			tp->queued--;
			c->q_bytes -= ch->bytes;
			*kick = true;
			/* its records may have been returned: free at the next poll */
			ch->next = c->returned;
			c->returned = ch;
		}
	}
	return n;
}

/* True when an owned partition sits at a corrupt batch with none of its
 * records left to return (c->mu held): what was fetched before the batch
 * (queued while the application did not poll) comes first, as Java's
 * FetchCollector returns the records before a corrupt batch and raises at
 * the next poll. */
static bool
corrupt_owned(const cl_client *c)
{
	for (int i = 0; i < c->ntps; i++)
		if (c->tps[i]->owned && c->tps[i]->corrupt && c->tps[i]->queued == 0)
			return true;
	return false;
}

cohort_err
cohort_poll(cohort_consumer *cc, int timeout_ms, const cohort_record **records, size_t *count)
{
	cl_client *c = &cc->c;
	*records = NULL;
	*count = 0;
	if (c->closed)
		return COHORT_ERR__CLOSED;
	/* records of the previous poll are released now */
	cl_lock(c);
	cl_chunk *ret = c->returned;
	c->returned = NULL;
	c->last_poll = ch_now_mono_ms();
	bool expired = c->poll_expired;
	c->poll_expired = false;
	cl_unlock(c);
	while (ret) {
		cl_chunk *next = ret->next;
		cl_chunk_free(ret);
		ret = next;
	}
	if (expired || c->member)
		ch_loop_post(c->loop, io_polled, c);
	size_t max = (size_t)c->conf.max_poll_records;
	if (c->poll_cap < max) {
		cohort_record *r = realloc(c->poll_recs, max * sizeof(*r));
		if (!r)
			return COHORT_ERR__NOMEM;
		c->poll_recs = r;
		c->poll_cap = max;
	}
	int64_t now = ch_now_mono_ms();
	if (c->member && c->conf.enable_auto_commit && now >= c->next_auto_commit) {
		if (c->next_auto_commit) {
			size_t n;
			cohort_tp_offset *o = owned_positions(c, NULL, 0, &n);
			if (o && n)
				commit(c, o, n, NULL, NULL, NULL);
			free(o);
		}
		c->next_auto_commit = now + c->conf.auto_commit_interval_ms;
	}
	int64_t deadline = timeout_ms < 0 ? INT64_MAX : now + timeout_ms;
	for (;;) {
		cohort_err err = run_events(cc);
		if (err)
			return err;
		cl_lock(c);
		if (c->fatal) {
			err = c->fatal;
			cl_unlock(c);
			return err;
		}
		if (corrupt_owned(c)) {
			cl_unlock(c);
			return COHORT_ERR_CORRUPT_MESSAGE;
		}
		if (c->wakeup) { /* Java's WakeupException, raised once */
			c->wakeup = false;
			cl_unlock(c);
			return COHORT_ERR__WAKEUP;
		}
		bool kick = false;
		size_t n = c->ev_head ? 0 : take_records(c, max, &kick);
		if (n || c->ev_head) {
			cl_unlock(c);
			if (kick)
				ch_loop_post(c->loop, io_kick, c);
			if (!n)
				continue;
			*records = c->poll_recs;
			*count = n;
			return COHORT_OK;
		}
		if (kick)
			ch_loop_post(c->loop, io_kick, c);
		now = ch_now_mono_ms();
		if (now >= deadline) {
			cl_unlock(c);
			return COHORT_OK;
		}
		struct timespec ts;
		cl_deadline_ts(&ts, deadline == INT64_MAX ? 1000 : deadline - now);
		pthread_cond_timedwait(&c->cond, &c->mu, &ts);
		cl_unlock(c);
	}
}

/* ---- commits, positions ------------------------------------------------------------- */

cohort_err
cohort_commit_sync(cohort_consumer *cc, cohort_tp_offset *offsets, size_t n)
{
	cl_client *c = &cc->c;
	cohort_err gerr = group_call(c);
	if (gerr)
		return gerr;
	if (offsets)
		return n ? commit(c, offsets, n, offsets, NULL, NULL) : COHORT_OK;
	size_t cnt;
	cohort_tp_offset *o = owned_positions(c, NULL, 0, &cnt);
	if (!o)
		return COHORT_ERR__NOMEM;
	cohort_err err = cnt ? commit(c, o, cnt, o, NULL, NULL) : COHORT_OK;
	free(o);
	return err;
}

cohort_err
cohort_commit_async(cohort_consumer *cc, const cohort_tp_offset *offsets, size_t n,
		    cohort_commit_cb cb, void *opaque)
{
	cl_client *c = &cc->c;
	cohort_err gerr = group_call(c);
	if (gerr)
		return gerr;
	cohort_commit_cb use = cb;
	cohort_err err;
	if (offsets) {
		err = n ? commit(c, offsets, n, NULL, use, opaque) : COHORT_OK;
	} else {
		size_t cnt;
		cohort_tp_offset *o = owned_positions(c, NULL, 0, &cnt);
		if (!o)
			return COHORT_ERR__NOMEM;
		err = cnt ? commit(c, o, cnt, NULL, use, opaque) : COHORT_OK;
		free(o);
	}
	return err;
}

cohort_err
cohort_committed(cohort_consumer *cc, cohort_tp_offset *offsets, size_t n)
{
	cl_client *c = &cc->c;
	cohort_err gerr = group_call(c);
	if (gerr)
		return gerr;
	if (n == 0)
		return COHORT_OK;
	return cl_call(c, cl_offsets_committed, offsets, n, c->conf.default_api_timeout_ms,
		       offsets);
}

/* ListOffsets for offs, every one at ts (ts > -3), or at its own .offset (ts -3). */
static cohort_err
list_offsets(cohort_consumer *cc, cohort_tp_offset *offs, size_t n, int64_t ts)
{
	cl_client *c = &cc->c;
	if (c->closed)
		return COHORT_ERR__CLOSED;
	if (n == 0)
		return COHORT_OK;
	if (!offs)
		return COHORT_ERR__INVALID_ARG;
	for (size_t i = 0; i < n; i++)
		if (!offs[i].topic || !offs[i].topic[0] || offs[i].partition < 0 ||
		    (ts == -3 && offs[i].offset < 0))
			return COHORT_ERR__INVALID_ARG;
	cohort_tp_offset *in = cl_offsets_copy(offs, n);
	if (!in)
		return COHORT_ERR__NOMEM;
	for (size_t i = 0; ts != -3 && i < n; i++)
		in[i].offset = ts;
	cohort_err err = cl_call(c, cl_offsets_list, in, n, c->conf.default_api_timeout_ms, offs);
	free(in);
	return err;
}

cohort_err
cohort_beginning_offsets(cohort_consumer *cc, cohort_tp_offset *offsets, size_t n)
{
	return list_offsets(cc, offsets, n, -2);
}

cohort_err
cohort_end_offsets(cohort_consumer *cc, cohort_tp_offset *offsets, size_t n)
{
	return list_offsets(cc, offsets, n, -1);
}

cohort_err
cohort_offsets_for_times(cohort_consumer *cc, cohort_tp_offset *offsets, size_t n)
{
	return list_offsets(cc, offsets, n, -3);
}

cohort_err
cohort_partitions_for(cohort_consumer *cc, const char *topic, int32_t *count)
{
	cl_client *c = &cc->c;
	if (c->closed)
		return COHORT_ERR__CLOSED;
	if (!topic || !topic[0] || !count)
		return COHORT_ERR__INVALID_ARG;
	cohort_tp_offset o = {topic, 0, -1, 0};
	cohort_err err =
		cl_call(c, cl_offsets_partitions, &o, 1, c->conf.default_api_timeout_ms, &o);
	if (!err)
		*count = (int32_t)o.offset;
	return err;
}

cohort_err
cohort_position(cohort_consumer *cc, const char *topic, int32_t partition, int64_t *offset)
{
	cl_client *c = &cc->c;
	if (c->closed)
		return COHORT_ERR__CLOSED;
	cl_lock(c);
	cl_tp *tp = cl_tp_find(c, topic, partition);
	cohort_err err = tp && tp->owned ? COHORT_OK : COHORT_ERR__UNKNOWN_PARTITION;
	if (!err)
		*offset = tp->position;
	cl_unlock(c);
	return err;
}

cohort_err
cohort_seek(cohort_consumer *cc, const char *topic, int32_t partition, int64_t offset)
{
	cl_client *c = &cc->c;
	if (c->closed)
		return COHORT_ERR__CLOSED;
	if (offset < 0)
		return COHORT_ERR__INVALID_ARG;
	cl_lock(c);
	cl_tp *tp = cl_tp_find(c, topic, partition);
	cohort_err err = tp && tp->owned ? COHORT_OK : COHORT_ERR__UNKNOWN_PARTITION;
	if (!err) {
		tp->epoch++; /* drops fetches in flight and queued records */
		tp->position = tp->fetch_pos = offset;
		tp->offset_lookup = false;
		tp->reset = false;
		tp->corrupt = false;
	}
	cl_unlock(c);
	if (!err)
		ch_loop_post(c->loop, io_kick, c);
	return err;
}

/* The owned partitions among tps[0..n) (every owned one when n is 0) into *out (malloc'd,
 * *nout entries); UNKNOWN_PARTITION when one of tps is not owned. c->mu held. */
static cohort_err
owned_among(cl_client *c, const cohort_tp *tps, size_t n, cl_tp ***out, size_t *nout)
{
	*out = calloc((n ? n : (size_t)c->ntps) + 1, sizeof(cl_tp *));
	*nout = 0;
	if (!*out)
		return COHORT_ERR__NOMEM;
	for (size_t i = 0; i < n; i++) {
		cl_tp *tp = tps[i].topic ? cl_tp_find(c, tps[i].topic, tps[i].partition) : NULL;
		if (!tp || !tp->owned) {
			free(*out);
			*out = NULL;
			return COHORT_ERR__UNKNOWN_PARTITION;
		}
		(*out)[(*nout)++] = tp;
	}
	for (int i = 0; n == 0 && i < c->ntps; i++)
		if (c->tps[i]->owned)
			(*out)[(*nout)++] = c->tps[i];
	return COHORT_OK;
}

/* I/O thread: positions to look up (lazy seeks), then fetch. */
static void
io_lookup(ch_loop *loop, void *ud)
{
	(void)loop;
	cl_offsets_lookup(ud);
	cl_fetcher_kick(ud);
}

/* Runs fn(tp, arg) under c->mu for each of tps (every owned partition when n is 0), or for
 * none when one of them is not assigned (UNKNOWN_PARTITION). Polling thread. */
static cohort_err
each_owned(cl_client *c, const cohort_tp *tps, size_t n, void (*fn)(cl_tp *tp, int64_t arg),
	   int64_t arg)
{
	if (c->closed)
		return COHORT_ERR__CLOSED;
	if (n && !tps)
		return COHORT_ERR__INVALID_ARG;
	cl_tp **set;
	size_t k;
	cl_lock(c);
	cohort_err err = owned_among(c, tps, n, &set, &k);
	for (size_t i = 0; !err && i < k; i++)
		fn(set[i], arg);
	pthread_cond_broadcast(&c->cond); /* a resume may make kept records ready */
	cl_unlock(c);
	free(set);
	return err;
}

/* Java's lazy seek of one partition: its position is looked up (ListOffsets at ts) before
 * its next fetch. */
static void
seek_one(cl_tp *tp, int64_t ts)
{
	tp->epoch++; /* drops fetches in flight, lookups and queued records */
	tp->position = tp->fetch_pos = -1;
	tp->offset_lookup = tp->corrupt = false;
	tp->reset = true;
	tp->reset_to = ts;
}

static cohort_err
seek_lazy(cohort_consumer *cc, const cohort_tp *tps, size_t n, int64_t ts)
{
	cl_client *c = &cc->c;
	cohort_err err = each_owned(c, tps, n, seek_one, ts);
	if (!err)
		ch_loop_post(c->loop, io_lookup, c);
	return err;
}

cohort_err
cohort_seek_to_beginning(cohort_consumer *cc, const cohort_tp *tps, size_t n)
{
	return seek_lazy(cc, tps, n, -2);
}

cohort_err
cohort_seek_to_end(cohort_consumer *cc, const cohort_tp *tps, size_t n)
{
	return seek_lazy(cc, tps, n, -1);
}

cohort_err
cohort_seek_to_timestamp(cohort_consumer *cc, const cohort_tp *tps, size_t n, int64_t timestamp_ms)
{
	if (timestamp_ms < 0)
		return COHORT_ERR__INVALID_ARG;
	return seek_lazy(cc, tps, n, timestamp_ms);
}

/* ---- pause, resume, wakeup ------------------------------------------------------ */

static void
pause_one(cl_tp *tp, int64_t paused)
{
	tp->paused = paused != 0;
}

/* Sets the paused flag of tps; UNKNOWN_PARTITION (nothing changed) when one is not
 * assigned, as Java's IllegalStateException. */
static cohort_err
set_paused(cohort_consumer *cc, const cohort_tp *tps, size_t n, bool paused)
{
	cl_client *c = &cc->c;
	cohort_err err = each_owned(c, tps, n, pause_one, paused);
	if (!err && !paused)
		ch_loop_post(c->loop, io_kick, c);
	return err;
}

cohort_err
cohort_pause(cohort_consumer *cc, const cohort_tp *tps, size_t n)
{
	return n ? set_paused(cc, tps, n, true) : COHORT_ERR__INVALID_ARG;
}

cohort_err
cohort_resume(cohort_consumer *cc, const cohort_tp *tps, size_t n)
{
	return n ? set_paused(cc, tps, n, false) : COHORT_ERR__INVALID_ARG;
}

cohort_err
cohort_paused(cohort_consumer *cc, cohort_tp **tps, size_t *n)
{
	cl_client *c = &cc->c;
	*tps = NULL;
	*n = 0;
	if (c->closed)
		return COHORT_ERR__CLOSED;
	cl_lock(c);
	cl_tp **set = calloc((size_t)c->ntps + 1, sizeof(cl_tp *));
	size_t k = 0;
	for (int i = 0; set && i < c->ntps; i++)
		if (c->tps[i]->owned && c->tps[i]->paused)
			set[k++] = c->tps[i];
	*tps = set ? cl_tps_new(set, k) : NULL;
	cl_unlock(c);
	free(set);
	if (!*tps)
		return COHORT_ERR__NOMEM;
	*n = k;
	return COHORT_OK;
}

void
cohort_wakeup(cohort_consumer *cc)
{
	cl_client *c = &cc->c;
	cl_lock(c);
	c->wakeup = true;
	pthread_cond_broadcast(&c->cond);
	cl_unlock(c);
}

cohort_err
cohort_assignment(cohort_consumer *cc, cohort_tp **tps, size_t *n)
{
	cl_client *c = &cc->c;
	*tps = NULL;
	*n = 0;
	if (c->closed)
		return COHORT_ERR__CLOSED;
	cl_lock(c);
	cl_tp **owned = calloc((size_t)c->ntps + 1, sizeof(cl_tp *));
	size_t k = 0;
	for (int i = 0; owned && i < c->ntps; i++)
		if (c->tps[i]->owned)
			owned[k++] = c->tps[i];
	*tps = owned ? cl_tps_new(owned, k) : NULL;
	cl_unlock(c);
	free(owned);
	if (!*tps)
		return COHORT_ERR__NOMEM;
	*n = k;
	return COHORT_OK;
}

cohort_err
cohort_group_member_id(cohort_consumer *cc, char *buf, size_t size)
{
	cl_client *c = &cc->c;
	cl_lock(c);
	const char *id = c->member_id ? c->member_id : "";
	size_t len = strlen(id);
	cohort_err err = len + 1 <= size ? COHORT_OK : COHORT_ERR__INVALID_ARG;
	if (!err)
		memcpy(buf, id, len + 1);
	cl_unlock(c);
	return err;
}

/* ---- calls that run the callbacks while the member works ------------------------ */

/*
 * Post start (cl_member_close, cl_member_unsubscribe) and run the events it
 * brings (the revoke, with its commits) on this thread until it finishes,
 * a fatal error stops the member, or default.api.timeout.ms passes
 * (TIMED_OUT). A fatal error already reported ends it with COHORT_OK.
 */
static cohort_err
member_call(cohort_consumer *cc, cl_wait_start_fn start)
{
	cl_client *c = &cc->c;
	cl_wait *w = cl_wait_new(NULL, 0);
	if (!w || !cl_post_wait(c, w, start)) {
		cl_wait_free(w);
		return COHORT_ERR__NOMEM;
	}
	int64_t deadline = ch_now_mono_ms() + c->conf.default_api_timeout_ms;
	for (;;) {
		run_events(cc);
		cl_lock(c);
		bool done = w->done || c->fatal;
		if (!done && !c->ev_head) {
			struct timespec ts;
			cl_deadline_ts(&ts, 100);
			pthread_cond_timedwait(&c->cond, &c->mu, &ts);
		}
		done = w->done || c->fatal;
		cl_unlock(c);
		if (done || ch_now_mono_ms() >= deadline)
			break;
	}
	cohort_err err = cl_wait_for(c, w, 0, NULL);
	if (err == COHORT_ERR__TIMED_OUT) {
		cl_lock(c);
		if (c->fatal)
			err = COHORT_OK; /* the fatal error was already reported */
		cl_unlock(c);
	}
	return err;
}

/* I/O thread: no topics asked for, no pattern matched, then the member's unsubscribe
 * (w finishes at its end), or w at once without a group. */
static void
io_unsubscribe(cl_client *c, cl_wait *w)
{
	pattern_set(c, NULL, NULL);
	set_md_topics(c, NULL, 0);
	if (c->member)
		cl_member_unsubscribe(c, w);
	else
		cl_wait_finish(c, w, COHORT_OK);
}

cohort_err
cohort_unsubscribe(cohort_consumer *cc)
{
	cl_client *c = &cc->c;
	if (c->closed)
		return COHORT_ERR__CLOSED;
	cohort_err err = member_call(cc, io_unsubscribe);
	if (err == COHORT_ERR__NOMEM)
		return err;
	/* a manual assignment ends too (Java's SubscriptionState.unsubscribe) */
	cl_lock(c);
	for (int i = 0; c->manual && i < c->ntps; i++)
		if (c->tps[i]->owned)
			cl_tp_drop(c->tps[i]);
	c->manual = false;
	cl_unlock(c);
	c->manual_api = false;
	c->subscribed = false;
	return err;
}

/* ---- close ---------------------------------------------------------------------------- */

cohort_err
cohort_consumer_close(cohort_consumer *cc)
{
	cl_client *c = &cc->c;
	if (c->closed)
		return COHORT_ERR__CLOSED;
	cohort_err err = COHORT_OK;
	if (c->member)
		err = member_call(cc, cl_member_close);
	cl_client_stop(c);
	return err;
}

void
cohort_consumer_free(cohort_consumer *cc)
{
	if (!cc)
		return;
	cl_client *c = &cc->c;
	if (!c->closed)
		cohort_consumer_close(cc);
	/* the I/O thread is gone: everything is this thread's now */
	cl_member_free(c->member);
	c->member = NULL;
	cl_chunk *ch = c->q_head;
	while (ch) {
		cl_chunk *next = ch->next;
		cl_chunk_free(ch);
		ch = next;
	}
	ch = c->returned;
	while (ch) {
		cl_chunk *next = ch->next;
		cl_chunk_free(ch);
		ch = next;
	}
	cl_event *ev = c->ev_head;
	while (ev) {
		cl_event *next = ev->next;
		event_free(ev);
		ev = next;
	}
	for (int i = 0; i < c->ntps; i++) {
		free(c->tps[i]->topic);
		free(c->tps[i]);
	}
	free(c->tps);
	free(c->poll_recs);
	free(c->member_id);
	pattern_set(c, NULL, NULL);
	cl_fetcher_free(c);
	cl_client_release(c);
	free(cc);
}

const char *
cohort_consumer_auth_error(cohort_consumer *c)
{
	return cl_client_auth_error(&c->c);
}
