/*
 * cl_metadata.c: bootstrap and cluster metadata (I/O thread).
 *
 * The bootstrap.servers entries become brokers with ids -1, -2, ...; the
 * first Metadata answer adds the real brokers by node id, and later
 * requests prefer those (cl_broker_any). Metadata asks for the topics in
 * c->md_topics only (the subscription, and for a group leader the group's
 * topics): an empty list is "no topics", never "all topics".
 *
 * Refreshes: every metadata.max.age.ms, on demand (coalesced: one request
 * in flight, at most one more queued behind it), sooner (retry.backoff.ms,
 * growing to retry.backoff.max.ms) after a failure or while a wanted topic
 * has no leader. After each answer the member, the offset lookups and the
 * fetcher look at the new metadata.
 */
#include "client/cl_int.h"

#include <stdlib.h>
#include <string.h>

#include "common/ch_log.h"

typedef struct cl_md_waiter {
	struct cl_md_waiter *next;
	cl_md_fn fn;
	void *ud;
} cl_md_waiter;

static void send_metadata(cl_client *c);

/* The metadata timer: metadata.max.age.ms passed, or a failed request's backoff did. */
static void
on_timer(ch_loop *loop, ch_timer *t, void *ud)
{
	(void)loop;
	(void)t;
	cl_metadata_refresh(ud);
}

void
cl_metadata_init(cl_client *c)
{
	ch_timer_init(&c->md.timer, on_timer, c);
	for (int i = 0; i < c->conf.nbootstrap; i++) {
		const cl_addr *a = &c->conf.bootstrap[i];
		cl_broker_upsert(c, -1 - i, a->host, (int32_t)strlen(a->host), a->port);
	}
}

/* Frees n metadata topics with their names and partition arrays, and the array. */
static void
free_topics(cl_md_topic *t, int32_t n)
{
	for (int32_t i = 0; i < n; i++) {
		free(t[i].name);
		free(t[i].parts);
	}
	free(t);
}

/* Calls and frees every waiter of the list w with err. */
static void
call_waiters(cl_client *c, cl_md_waiter *w, cohort_err err)
{
	while (w) {
		cl_md_waiter *next = w->next;
		w->fn(c, err, w->ud);
		free(w);
		w = next;
	}
}

void
cl_metadata_free(cl_client *c)
{
	ch_timer_cancel(c->loop, &c->md.timer);
	free_topics(c->md.topics, c->md.ntopics);
	c->md.topics = NULL;
	c->md.ntopics = 0;
	call_waiters(c, c->md.waiters, COHORT_ERR__CLOSED);
	call_waiters(c, c->md.next_waiters, COHORT_ERR__CLOSED);
	c->md.waiters = c->md.next_waiters = NULL;
}

const cl_md_topic *
cl_metadata_topic(const cl_client *c, const char *name)
{
	int32_t lo = 0, hi = c->md.ntopics; /* md.topics is sorted by name (take_topics) */
	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;
		int cmp = strcmp(c->md.topics[mid].name, name);
		if (cmp == 0)
			return &c->md.topics[mid];
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

bool
cl_metadata_want(cl_client *c, const ch_str *topics, int32_t n)
{
	for (int32_t i = 0; i < n; i++) {
		bool have = false;
		for (int j = 0; j < c->nmd_topics && !have; j++)
			have = ch_str_eq_c(topics[i], c->md_topics[j]);
		if (have)
			continue;
		char **nt = realloc(c->md_topics, sizeof(char *) * (size_t)(c->nmd_topics + 1));
		if (!nt)
			return false;
		c->md_topics = nt;
		if (!(nt[c->nmd_topics] = strndup(topics[i].p, (size_t)topics[i].len)))
			return false;
		c->nmd_topics++;
	}
	return true;
}

/* Encodes Metadata for c->md_topics (an empty list asks for no topics, never for all), or
 * for every topic with a pattern subscription. */
static void
build_metadata(cl_client *c, int16_t version, ch_buf *b, void *ud)
{
	(void)ud;
	ch_MetadataRequest m;
	ch_MetadataRequest_init(&m);
	ch_MetadataRequest_MetadataRequestTopic *t = calloc((size_t)c->nmd_topics + 1, sizeof(*t));
	if (!t) {
		b->oom = true;
		return;
	}
	for (int i = 0; i < c->nmd_topics; i++)
		t[i].Name = ch_str_c(c->md_topics[i]);
	m.Topics = t;
	m.Topics_n = c->nmd_topics;
	m.AllowAutoTopicCreation = c->conf.allow_auto_create_topics;
	if (c->pattern_text) { /* every topic: to match the pattern against (Java's), or
				  to name the topic ids the broker's matches assign */
		m.Topics_n = -1;
		m.AllowAutoTopicCreation = false;
	}
	ch_MetadataRequest_encode(b, version, &m);
	free(t);
}

static int
cmp_part(const void *a, const void *b)
{
	const cl_md_partition *x = a, *y = b;
	return (x->partition > y->partition) - (x->partition < y->partition);
}

static int
cmp_topic(const void *a, const void *b)
{
	return strcmp(((const cl_md_topic *)a)->name, ((const cl_md_topic *)b)->name);
}

/* Copy the answer's topics; false on out of memory. *incomplete: some
 * wanted topic or partition has no leader yet. */
static bool
take_topics(cl_client *c, const ch_MetadataResponse *m, bool *incomplete)
{
	cl_md_topic *t = calloc((size_t)m->Topics_n + 1, sizeof(*t));
	if (!t)
		return false;
	int32_t n = 0;
	*incomplete = false;
	for (int32_t i = 0; i < m->Topics_n; i++) {
		const ch_MetadataResponse_MetadataResponseTopic *mt = &m->Topics[i];
		if (mt->Name.len < 0)
			continue;
		cl_md_topic *d = &t[n++];
		d->name = strndup(mt->Name.p, (size_t)mt->Name.len);
		d->id = mt->TopicId;
		d->err = mt->ErrorCode;
		d->internal = mt->IsInternal;
		d->parts = calloc((size_t)mt->Partitions_n + 1, sizeof(*d->parts));
		if (!d->name || !d->parts) {
			free_topics(t, n);
			return false;
		}
		if (mt->ErrorCode)
			*incomplete = true;
		for (int32_t j = 0; j < mt->Partitions_n; j++) {
			const ch_MetadataResponse_MetadataResponsePartition *p = &mt->Partitions[j];
			d->parts[j] = (cl_md_partition){p->PartitionIndex, p->LeaderId,
							p->LeaderEpoch, p->ErrorCode};
			if (p->LeaderId < 0)
				*incomplete = true;
		}
		d->nparts = mt->Partitions_n;
		bool sorted = true; /* brokers list them in order: no sort for a large topic */
		for (int32_t j = 1; j < d->nparts && sorted; j++)
			sorted = d->parts[j - 1].partition < d->parts[j].partition;
		if (!sorted)
			qsort(d->parts, (size_t)d->nparts, sizeof(*d->parts), cmp_part);
	}
	qsort(t, (size_t)n, sizeof(*t), cmp_topic);
	free_topics(c->md.topics, c->md.ntopics);
	c->md.topics = t;
	c->md.ntopics = n;
	return true;
}

/* Metadata answer: updates brokers and topics, arms the next refresh (backoff while it
 * fails or leaders are missing), runs the waiters and what depends on fresh metadata. */
static void
done_metadata(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	(void)version;
	(void)ud;
	cl_metadata *md = &c->md;
	md->inflight = false;
	cl_md_waiter *waiters = md->waiters;
	md->waiters = NULL;
	if (c->closing) {
		call_waiters(c, waiters, COHORT_ERR__CLOSED);
		return;
	}
	bool incomplete = false;
	if (!err) {
		const ch_MetadataResponse *m = resp;
		for (int32_t i = 0; i < m->Brokers_n; i++) {
			const ch_MetadataResponse_MetadataResponseBroker *br = &m->Brokers[i];
			if (br->Host.len >= 0 &&
			    !cl_broker_upsert(c, br->NodeId, br->Host.p, br->Host.len, br->Port))
				err = COHORT_ERR__NOMEM;
		}
		if (!err && !take_topics(c, m, &incomplete))
			err = COHORT_ERR__NOMEM;
	}
	int64_t now = ch_loop_now(c->loop);
	if (err) {
		md->fails++;
		CH_LOGD(CL_LOG, "metadata request failed: %s", cohort_err_name(err));
	} else {
		md->fails = incomplete ? md->fails + 1 : 0;
		md->updated = now;
		md->version++;
	}
	int64_t next = md->fails ? cl_backoff(c->conf.retry_backoff_ms,
					      c->conf.retry_backoff_max_ms, md->fails)
				 : c->conf.metadata_max_age_ms;
	ch_timer_arm(c->loop, &md->timer, now + next);
	call_waiters(c, waiters, err);
	if (!err) {
		if (c->on_metadata)
			c->on_metadata(c);
		cl_member_metadata_changed(c);
		cl_offsets_lookup(c);
		cl_fetcher_kick(c);
	}
	if (md->again && !c->closing) {
		md->again = false;
		send_metadata(c);
	}
}

/* Sends Metadata to cl_broker_any's broker; the waiters registered so far wait for this
 * answer.  Without a broker nothing is sent. */
static void
send_metadata(cl_client *c)
{
	cl_broker *b = cl_broker_any(c);
	if (!b)
		return;
	c->md.inflight = true;
	c->md.waiters = c->md.next_waiters;
	c->md.next_waiters = NULL;
	cl_request(b, CH_APIKEY_METADATA, build_metadata, done_metadata, NULL);
}

void
cl_metadata_refresh(cl_client *c)
{
	if (c->closing)
		return;
	if (c->md.inflight) {
		c->md.again = true;
		return;
	}
	send_metadata(c);
}

void
cl_metadata_refresh_then(cl_client *c, cl_md_fn fn, void *ud)
{
	cl_md_waiter *w = malloc(sizeof(*w));
	if (!w) {
		fn(c, COHORT_ERR__NOMEM, ud);
		return;
	}
	w->fn = fn;
	w->ud = ud;
	/* a request in flight may have been built before the caller's change
	 * to md_topics: wait for the next one */
	w->next = c->md.next_waiters;
	c->md.next_waiters = w;
	cl_metadata_refresh(c);
}
