/*
 * cl_admin.c: the admin client's handle and the engine every admin call
 * runs on (cl_admin_int.h draws an item's states): routing items to their
 * broker (FindCoordinator, Metadata), batching them into requests, retries
 * with backoff, the deadline, and the hand-over to the waiting caller.
 * The calls themselves are in cl_admin_groups.c and cl_admin_topics.c.
 */
#include "client/cl_admin_int.h"

#include <stdlib.h>
#include <string.h>

#include "common/ch_log.h"

static void kick(ad_call *k);

/* ---- small helpers ------------------------------------------------------- */

char *
ad_strdup(ch_arena *a, ch_str s, bool *oom)
{
	if (s.len < 0)
		return NULL;
	char *d = ch_arena_alloc(a, (size_t)s.len + 1);
	if (!d) {
		*oom = true;
		return NULL;
	}
	memcpy(d, s.p, (size_t)s.len);
	return d;
}

char *
ad_strdup_c(ch_arena *a, const char *s, bool *oom)
{
	return s ? ad_strdup(a, ch_str_c(s), oom) : NULL;
}

void
ad_node(ch_arena *a, cl_client *c, int32_t id, cohort_node *out, bool *oom)
{
	cl_broker *b = id >= 0 ? cl_broker_find(c, id) : NULL;
	out->id = b ? id : -1;
	out->host = b ? ad_strdup_c(a, b->host, oom) : NULL;
	out->port = b ? b->port : -1;
	out->rack = NULL;
}

int64_t
ad_timeout(const cl_client *c, int timeout_ms)
{
	return timeout_ms < 0 ? c->conf.default_api_timeout_ms : timeout_ms;
}

cohort_err
ad_first_err(const cohort_err *errs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (errs[i])
			return errs[i];
	return COHORT_OK;
}

const void *
ad_find_name(const void *arr, int32_t n, size_t stride, size_t name_off, const char *key)
{
	const char *e = arr;
	for (int32_t i = 0; i < n; i++, e += stride) {
		ch_str name;
		memcpy(&name, e + name_off, sizeof(name));
		if (ch_str_eq_c(name, key))
			return e;
	}
	return NULL;
}

const void *
ad_find_part(const void *arr, int32_t n, size_t stride, size_t index_off, int32_t index)
{
	const char *e = arr;
	for (int32_t i = 0; i < n; i++, e += stride) {
		int32_t p;
		memcpy(&p, e + index_off, sizeof(p));
		if (p == index)
			return e;
	}
	return NULL;
}

ch_str *
ad_keys(ad_item **items, size_t n, ch_buf *b)
{
	ch_str *s = calloc(n + 1, sizeof(*s));
	if (!s)
		b->oom = true;
	for (size_t i = 0; s && i < n; i++)
		s[i] = ch_str_c(items[i]->key);
	return s;
}

/* ---- item transitions ------------------------------------------------------ */

void
ad_done(ad_call *k, ad_item *it, cohort_err err)
{
	(void)k;
	it->st = IT_DONE;
	it->err = err;
}

void
ad_retry(ad_call *k, ad_item *it, cohort_err err, bool relookup)
{
	cl_client *c = k->c;
	it->err = err;
	it->tries++;
	it->st = IT_BACKOFF;
	bool fixed = k->ops->route == R_NODE || k->ops->route == R_ANY;
	it->after = relookup && !fixed ? IT_LOOKUP : IT_SEND;
	if (relookup && !fixed)
		it->node = -1;
	it->retry_at = ch_loop_now(c->loop) + cl_backoff(c->conf.retry_backoff_ms,
							 c->conf.retry_backoff_max_ms, it->tries);
}

bool
ad_coordinator_error(ad_call *k, ad_item *it, int16_t err)
{
	switch (err) {
	case CH_KERR_NOT_COORDINATOR:
	case CH_KERR_COORDINATOR_NOT_AVAILABLE:
		ad_retry(k, it, err, true);
		return true;
	case CH_KERR_COORDINATOR_LOAD_IN_PROGRESS:
		ad_retry(k, it, err, false);
		return true;
	default:
		return false;
	}
}

/* ---- finishing ----------------------------------------------------------------- */

/* Drops one reference; the last one frees the call (I/O thread). */
static void
unref(ad_call *k)
{
	if (--k->refs > 0)
		return;
	ch_timer_cancel(k->c->loop, &k->timer);
	free(k->items);
	free(k);
}

/* Hand the results over: unanswered items get their last retriable error
 * (TIMED_OUT if none), the caller is woken, and the call leaves the list. */
static void
finish(ad_call *k, cohort_err call_err)
{
	cl_client *c = k->c;
	cohort_admin *a = (cohort_admin *)c;
	if (k->finished)
		return;
	k->finished = true;
	ch_timer_cancel(c->loop, &k->timer);
	for (ad_call **pp = &a->calls; *pp; pp = &(*pp)->next)
		if (*pp == k) {
			*pp = k->next;
			break;
		}
	cl_lock(c);
	if (!k->err)
		k->err = call_err;
	for (size_t i = 0; i < k->n; i++) {
		ad_item *it = &k->items[i];
		if (it->st != IT_DONE)
			it->err = call_err ? call_err : it->err ? it->err : COHORT_ERR__TIMED_OUT;
		if (k->errs_out)
			k->errs_out[it->idx] = it->err;
	}
	if (k->ops->finish)
		k->ops->finish(k);
	k->waiter->err = k->err;
	k->waiter->done = true;
	pthread_cond_broadcast(&c->cond);
	cl_unlock(c);
	unref(k);
}

void
ad_shutdown(cl_client *c)
{
	cohort_admin *a = (cohort_admin *)c;
	while (a->calls)
		finish(a->calls, COHORT_ERR__CLOSED);
}

/* The call's timer: the deadline passed, or a backoff ended. */
static void
on_timer(ch_loop *loop, ch_timer *t, void *ud)
{
	(void)t;
	ad_call *k = ud;
	if (ch_loop_now(loop) >= k->deadline) {
		finish(k, COHORT_OK);
		return;
	}
	kick(k);
}

/* ---- lookups: FindCoordinator ---------------------------------------------------- */

typedef struct ad_req {
	ad_call *k;
	ad_item **items; /* the batch */
	size_t n;
	size_t encoded;
} ad_req;

/* Allocates a request context for the n items in batch order, or NULL. */
static ad_req *
req_new(ad_call *k, ad_item **items, size_t n)
{
	ad_req *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->items = malloc(sizeof(*items) * (n ? n : 1));
	if (!r->items) {
		free(r);
		return NULL;
	}
	memcpy(r->items, items, sizeof(*items) * n);
	r->k = k;
	r->n = n;
	k->refs++;
	return r;
}

/* Frees r and drops its reference on the call. */
static void
req_free(ad_req *r)
{
	ad_call *k = r->k;
	free(r->items);
	free(r);
	unref(k);
}

/* A request failed as a whole: local errors that retrying cannot fix end
 * the items; a lost connection or a timed-out request is retried. */
static void
req_failed(ad_req *r, cohort_err err, bool relookup)
{
	for (size_t i = 0; i < r->n; i++) {
		ad_item *it = r->items[i];
		if (it->st != IT_SENT && it->st != IT_LOOKING)
			continue;
		if (err == COHORT_ERR__TRANSPORT || err == COHORT_ERR__TIMED_OUT)
			ad_retry(r->k, it, err, relookup);
		else
			ad_done(r->k, it, err);
	}
}

/*
 * The request of a call that finished before it was built (it waited for a
 * connection past the deadline): the caller's data its build would read is
 * gone, so the body is the API's default message (no groups, topics or
 * partitions; Kafka's defaults), which asks for nothing. Returns true when
 * it wrote that.
 */
static bool
build_finished(ad_req *r, int16_t api, int16_t version, ch_buf *b)
{
	if (!r->k->finished)
		return false;
	const ch_api_codec *codec = ch_api_codec_find(api);
	void *m = calloc(1, codec->req_size);
	if (!m) {
		b->oom = true;
		return true;
	}
	codec->req_init(m);
	codec->req_encode(b, version, m);
	free(m);
	r->encoded = 0;
	return true;
}

/* FindCoordinator for the batch: v4+ carries every group, older one. */
static void
build_findcoord(cl_client *c, int16_t version, ch_buf *b, void *ud)
{
	(void)c;
	ad_req *r = ud;
	if (build_finished(r, CH_APIKEY_FIND_COORDINATOR, version, b))
		return;
	ch_FindCoordinatorRequest m;
	ch_FindCoordinatorRequest_init(&m);
	m.KeyType = 0; /* group */
	ch_str *keys = NULL;
	if (version >= 4) {
		keys = calloc(r->n + 1, sizeof(*keys));
		if (!keys) {
			b->oom = true;
			return;
		}
		for (size_t i = 0; i < r->n; i++)
			keys[i] = ch_str_c(r->items[i]->key);
		m.CoordinatorKeys = keys;
		m.CoordinatorKeys_n = (int32_t)r->n;
		r->encoded = r->n;
	} else {
		m.Key = ch_str_c(r->items[0]->key);
		r->encoded = 1;
	}
	ch_FindCoordinatorRequest_encode(b, version, &m);
	free(keys);
}

/* One group's FindCoordinator result (v0-v3 answer or a v4+ entry). */
static void
coord_result(ad_call *k, ad_item *it, int16_t err, int32_t node, ch_str host, int32_t port)
{
	if (err == CH_KERR_COORDINATOR_NOT_AVAILABLE ||
	    err == CH_KERR_COORDINATOR_LOAD_IN_PROGRESS || err == CH_KERR_NOT_COORDINATOR) {
		ad_retry(k, it, err, true);
		return;
	}
	if (err) {
		ad_done(k, it, err);
		return;
	}
	if (host.len < 0 || !cl_broker_upsert(k->c, node, host.p, host.len, port)) {
		ad_done(k, it, host.len < 0 ? COHORT_ERR__BAD_MSG : COHORT_ERR__NOMEM);
		return;
	}
	it->node = node;
	it->st = IT_SEND;
	it->err = COHORT_OK;
	if (!k->ops->build)
		ad_done(k, it, COHORT_OK);
}

/* FindCoordinator answer: each group gets its coordinator or its error;
 * groups a v0-v3 request could not carry go back to LOOKUP. */
static void
done_findcoord(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	(void)c;
	ad_req *r = ud;
	ad_call *k = r->k;
	if (k->finished) {
		req_free(r);
		return;
	}
	if (err) {
		req_failed(r, err, true);
	} else {
		const ch_FindCoordinatorResponse *m = resp;
		for (size_t i = 0; i < r->n; i++) {
			ad_item *it = r->items[i];
			if (it->st != IT_LOOKING)
				continue;
			if (i >= r->encoded) {
				it->st = IT_LOOKUP;
				continue;
			}
			if (version < 4) {
				coord_result(k, it, m->ErrorCode, m->NodeId, m->Host, m->Port);
				continue;
			}
			const ch_FindCoordinatorResponse_Coordinator *e =
				AD_FIND(m->Coordinators, m->Coordinators_n, Key, it->key);
			if (e)
				coord_result(k, it, e->ErrorCode, e->NodeId, e->Host, e->Port);
			else
				ad_done(k, it, COHORT_ERR__BAD_MSG);
		}
	}
	req_free(r);
	kick(k);
}

/* ---- lookups: Metadata (leaders, controller) ----------------------------------------- */

/* Metadata for the topics of the batch (none for R_CONTROLLER). */
static void
build_metadata(cl_client *c, int16_t version, ch_buf *b, void *ud)
{
	(void)c;
	ad_req *r = ud;
	if (build_finished(r, CH_APIKEY_METADATA, version, b))
		return;
	ch_MetadataRequest m;
	ch_MetadataRequest_init(&m);
	ch_MetadataRequest_MetadataRequestTopic *t = calloc(r->n + 1, sizeof(*t));
	if (!t) {
		b->oom = true;
		return;
	}
	int32_t nt = 0;
	for (size_t i = 0; r->k->ops->route == R_LEADER && i < r->n; i++) {
		bool dup = false;
		for (int32_t j = 0; j < nt && !dup; j++)
			dup = ch_str_eq_c(t[j].Name, r->items[i]->key);
		if (!dup)
			t[nt++].Name = ch_str_c(r->items[i]->key);
	}
	m.Topics = t;
	m.Topics_n = nt;
	m.AllowAutoTopicCreation = false;
	ch_MetadataRequest_encode(b, version, &m);
	free(t);
	r->encoded = r->n;
}

/* The leader of item's partition in m, or its error (Java's
 * PartitionLeaderStrategy: unknown topics and partitions and missing
 * leaders are retried, other topic errors end the item). */
static void
leader_result(ad_call *k, ad_item *it, const ch_MetadataResponse *m)
{
	const ch_MetadataResponse_MetadataResponseTopic *t =
		AD_FIND(m->Topics, m->Topics_n, Name, it->key);
	int16_t terr = t ? t->ErrorCode : CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	switch (terr) {
	case CH_KERR_NONE:
		break;
	case CH_KERR_UNKNOWN_TOPIC_OR_PARTITION:
	case CH_KERR_LEADER_NOT_AVAILABLE:
	case CH_KERR_BROKER_NOT_AVAILABLE:
		ad_retry(k, it, terr, true);
		return;
	default:
		ad_done(k, it, terr);
		return;
	}
	const ch_MetadataResponse_MetadataResponsePartition *p =
		AD_FIND_PART(t->Partitions, t->Partitions_n, it->partition);
	if (!p || p->LeaderId < 0 || !cl_broker_find(k->c, p->LeaderId)) {
		ad_retry(k, it,
			 p ? CH_KERR_LEADER_NOT_AVAILABLE : CH_KERR_UNKNOWN_TOPIC_OR_PARTITION,
			 true);
		return;
	}
	it->node = p->LeaderId;
	it->st = IT_SEND;
}

/* Metadata answer for a lookup: brokers learnt, each item routed. */
static void
done_metadata(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	(void)version;
	ad_req *r = ud;
	ad_call *k = r->k;
	if (k->finished) {
		req_free(r);
		return;
	}
	k->lookup_inflight = false;
	if (err) {
		req_failed(r, err, true);
	} else {
		const ch_MetadataResponse *m = resp;
		for (int32_t i = 0; i < m->Brokers_n; i++)
			if (m->Brokers[i].Host.len >= 0)
				cl_broker_upsert(c, m->Brokers[i].NodeId, m->Brokers[i].Host.p,
						 m->Brokers[i].Host.len, m->Brokers[i].Port);
		for (size_t i = 0; i < r->n; i++) {
			ad_item *it = r->items[i];
			if (it->st != IT_LOOKING)
				continue;
			if (k->ops->route == R_LEADER) {
				leader_result(k, it, m);
			} else if (m->ControllerId >= 0 && cl_broker_find(c, m->ControllerId)) {
				it->node = m->ControllerId;
				it->st = IT_SEND;
			} else {
				ad_retry(k, it, CH_KERR_NOT_CONTROLLER, true);
			}
		}
	}
	req_free(r);
	kick(k);
}

/* ---- the requests ----------------------------------------------------------------------- */

/* The call's request for its batch, at the version the broker speaks. */
static void
build_call(cl_client *c, int16_t version, ch_buf *b, void *ud)
{
	(void)c;
	ad_req *r = ud;
	if (build_finished(r, r->k->ops->api, version, b))
		return;
	r->encoded = 0;
	r->k->ops->build(r->k, version, b, r->items, r->n, &r->encoded);
}

/* The call's answer: items the request did not carry go again; the ops
 * decide for the others; those it leaves SENT succeeded. */
static void
done_call(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	(void)c;
	ad_req *r = ud;
	ad_call *k = r->k;
	if (k->finished) {
		req_free(r);
		return;
	}
	bool relookup = k->ops->route == R_COORD || k->ops->route == R_LEADER ||
			k->ops->route == R_CONTROLLER;
	if (err) {
		req_failed(r, err, relookup);
	} else {
		for (size_t i = r->encoded; i < r->n; i++)
			if (r->items[i]->st == IT_SENT)
				r->items[i]->st = IT_SEND;
		k->ops->done(k, version, resp, r->items, r->encoded);
		for (size_t i = 0; i < r->encoded; i++)
			if (r->items[i]->st == IT_SENT)
				ad_done(k, r->items[i], COHORT_OK);
	}
	req_free(r);
	kick(k);
}

/* Sends a request for batch[0..n) to broker b: a lookup (api FindCoordinator
 * or Metadata) or the call's own. */
static void
send_batch(ad_call *k, cl_broker *b, ad_item **batch, size_t n, bool lookup)
{
	ad_req *r = req_new(k, batch, n);
	for (size_t i = 0; i < n; i++)
		batch[i]->st = lookup ? IT_LOOKING : IT_SENT;
	if (!r) {
		for (size_t i = 0; i < n; i++)
			ad_done(k, batch[i], COHORT_ERR__NOMEM);
		return;
	}
	if (lookup && k->ops->route == R_COORD)
		cl_request(b, CH_APIKEY_FIND_COORDINATOR, build_findcoord, done_findcoord, r);
	else if (lookup)
		cl_request(b, CH_APIKEY_METADATA, build_metadata, done_metadata, r);
	else
		cl_request_ex(b, k->ops->api, k->ops->max_version, k->c->conf.request_timeout_ms,
			      build_call, done_call, r);
}

/* Moves the call forward: backoffs that ended, lookups for items without a
 * broker, requests for items with one (batched per broker), the timer for
 * what is left; finishes the call when every item is done. */
static void
kick(ad_call *k)
{
	cl_client *c = k->c;
	if (k->finished || k->kicking)
		return;
	k->kicking = true;
	k->refs++; /* callbacks run from inside cl_request may finish the call */
	int64_t now = ch_loop_now(c->loop);
	ad_item **batch = calloc(k->n + 1, sizeof(*batch));
	if (!batch) {
		k->kicking = false;
		finish(k, COHORT_ERR__NOMEM);
		unref(k);
		return;
	}
	for (size_t i = 0; i < k->n; i++) {
		ad_item *it = &k->items[i];
		if (it->st == IT_BACKOFF && now >= it->retry_at)
			it->st = it->after;
		if (it->st == IT_SEND && k->ops->route == R_NODE && !cl_broker_find(c, it->node))
			ad_done(k, it, COHORT_ERR__TRANSPORT);
	}
	/* lookups: one request for every item that needs one */
	size_t nb = 0;
	if (k->ops->route != R_ANY && k->ops->route != R_NODE &&
	    (k->ops->route == R_COORD || !k->lookup_inflight))
		for (size_t i = 0; i < k->n; i++)
			if (k->items[i].st == IT_LOOKUP)
				batch[nb++] = &k->items[i];
	cl_broker *any = cl_broker_any(c);
	if (nb && !any) {
		for (size_t i = 0; i < nb; i++)
			ad_done(k, batch[i], COHORT_ERR__TRANSPORT);
	} else if (nb) {
		if (k->ops->route != R_COORD)
			k->lookup_inflight = true;
		send_batch(k, any, batch, nb, true);
	}
	/* the call's requests, per broker */
	for (size_t i = 0; i < k->n && !k->finished; i++) {
		ad_item *first = &k->items[i];
		if (first->st != IT_SEND)
			continue;
		cl_broker *b =
			k->ops->route == R_ANY ? cl_broker_any(c) : cl_broker_find(c, first->node);
		if (!b) {
			ad_retry(k, first, COHORT_ERR__TRANSPORT, true);
			continue;
		}
		nb = 0;
		for (size_t j = i; j < k->n; j++) {
			ad_item *it = &k->items[j];
			if (it->st == IT_SEND &&
			    (k->ops->route == R_ANY || it->node == first->node) &&
			    (!k->ops->max_batch || nb < k->ops->max_batch))
				batch[nb++] = it;
		}
		send_batch(k, b, batch, nb, false);
	}
	free(batch);
	k->kicking = false;
	if (!k->finished) {
		bool all_done = true;
		int64_t at = k->deadline;
		for (size_t i = 0; i < k->n; i++) {
			ad_item *it = &k->items[i];
			if (it->st != IT_DONE)
				all_done = false;
			if (it->st == IT_BACKOFF && it->retry_at < at)
				at = it->retry_at;
		}
		if (all_done)
			finish(k, COHORT_OK);
		else
			ch_timer_arm(c->loop, &k->timer, at);
	}
	unref(k);
}

/* ---- running a call --------------------------------------------------------------------- */

ad_call *
ad_new(cl_client *c, const ad_ops *ops, size_t n, void *ud, cohort_err *errs, int timeout_ms)
{
	ad_call *k = calloc(1, sizeof(*k));
	if (!k || !(k->items = calloc(n + 1, sizeof(*k->items)))) {
		free(k);
		return NULL;
	}
	k->c = c;
	k->ops = ops;
	k->n = n;
	k->ud = ud;
	k->errs_out = errs;
	k->refs = 1;
	k->deadline = ch_now_mono_ms() + ad_timeout(c, timeout_ms);
	ch_timer_init(&k->timer, on_timer, k);
	for (size_t i = 0; i < n; i++) {
		k->items[i].idx = i;
		k->items[i].node = -1;
		k->items[i].st = ops->route == R_NODE  ? IT_SEND
				 : ops->route == R_ANY ? IT_SEND
						       : IT_LOOKUP;
	}
	return k;
}

/* I/O thread: the call joins the admin's list and starts. */
static void
io_start_call(ch_loop *loop, void *ud)
{
	(void)loop;
	ad_call *k = ud;
	cohort_admin *a = (cohort_admin *)k->c;
	if (k->c->closing) {
		finish(k, COHORT_ERR__CLOSED);
		return;
	}
	k->next = a->calls;
	a->calls = k;
	if (k->n == 0)
		finish(k, COHORT_OK);
	else
		kick(k);
}

cohort_err
ad_run(ad_call *k)
{
	cl_client *c = k->c;
	ad_waiter w = {false, COHORT_OK}; /* k may be freed as soon as it is done */
	k->waiter = &w;
	ch_loop_post(c->loop, io_start_call, k);
	cl_lock(c);
	while (!w.done)
		pthread_cond_wait(&c->cond, &c->mu);
	cl_unlock(c);
	return w.err;
}

cohort_err
ad_run_all(ad_call *k, cohort_err *errs, size_t n)
{
	cohort_err err = ad_run(k);
	for (size_t i = 0; err && i < n; i++)
		errs[i] = err;
	return err ? err : ad_first_err(errs, n);
}

cohort_err
ad_run_names(cohort_admin *a, const ad_ops *ops, const char *const *names, size_t n,
	     cohort_err *errs, int timeout_ms)
{
	if (!a || (n && (!names || !errs)))
		return COHORT_ERR__INVALID_ARG;
	for (size_t i = 0; i < n; i++)
		if (!names[i])
			return COHORT_ERR__INVALID_ARG;
	ad_call *k = ad_new(&a->c, ops, n, NULL, errs, timeout_ms);
	if (!k)
		return COHORT_ERR__NOMEM;
	for (size_t i = 0; i < n; i++)
		k->items[i].key = names[i];
	return ad_run_all(k, errs, n);
}

/* ---- the handle ------------------------------------------------------------------------- */

cohort_admin *
cohort_admin_new(const cohort_conf *conf, char *errstr, size_t errstr_size)
{
	if (!conf) {
		cl_errstr(errstr, errstr_size, "cohort_admin_new: NULL conf");
		return NULL;
	}
	if (conf->nbootstrap == 0) {
		cl_errstr(errstr, errstr_size,
			  "No resolvable bootstrap urls given in bootstrap.servers");
		return NULL;
	}
	cohort_admin *a = calloc(1, sizeof(*a));
	if (!a) {
		cl_errstr(errstr, errstr_size, "out of memory");
		return NULL;
	}
	if (!cl_client_init(&a->c, conf, CL_ADMIN, errstr, errstr_size)) {
		free(a);
		return NULL;
	}
	a->c.on_stop = ad_shutdown;
	if (!cl_client_start(&a->c, errstr, errstr_size)) {
		cl_client_release(&a->c);
		free(a);
		return NULL;
	}
	return a;
}

void
cohort_admin_free(cohort_admin *a)
{
	if (!a)
		return;
	cl_client_stop(&a->c);
	cl_client_release(&a->c);
	free(a);
}

const char *
cohort_admin_auth_error(cohort_admin *a)
{
	return cl_client_auth_error(&a->c);
}
