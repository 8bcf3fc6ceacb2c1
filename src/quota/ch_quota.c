/*
 * ch_quota.c: entities, Kafka's quota precedence, the sampled rates and the
 * throttle time. Contracts in ch_quota.h.
 */
#include "quota/ch_quota.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"
#include "common/ch_map.h"
#include "proto/generated/ch_errors.h"

/* One rate (Kafka's Rate over a SampledStat): samples of
 * CH_QUOTA_WINDOW_MS, the current one cur. */
typedef struct sensor {
	int64_t start[CH_QUOTA_WINDOW_NUM];
	double val[CH_QUOTA_WINDOW_NUM];
	int cur;
	int64_t last; /* last record: idle sensors are dropped */
	/* controller_mutation_rate's token bucket (Kafka's TokenBucket) */
	double tokens;
	int64_t tokens_at; /* 0: never measured (then it is full) */
} sensor;

struct ch_quotas {
	ch_quota_entry *v;
	size_t n, cap;
	ch_map sensors;   /* "K|user|client" (tags) -> sensor */
	uint64_t records; /* a sweep of idle sensors every 4096 */
};

static const char *const key_names[CH_QK_N] = {
	"producer_byte_rate",       "consumer_byte_rate",       "request_percentage",
	"controller_mutation_rate", "connection_creation_rate",
};

const char *
ch_quota_key_name(ch_quota_key k)
{
	return k < CH_QK_N ? key_names[k] : "?";
}

ch_quotas *
ch_quotas_new(void)
{
	ch_quotas *q = ch_xcalloc(1, sizeof(*q));
	ch_map_init(&q->sensors);
	return q;
}

static void
entity_free(ch_quota_entity *e)
{
	free(e->user_name);
	free(e->client_name);
	free(e->ip_name);
	e->user_name = e->client_name = e->ip_name = NULL;
}

void
ch_quotas_free(ch_quotas *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->n; i++)
		entity_free(&q->v[i].e);
	free(q->v);
	ch_map_foreach (&q->sensors, e)
		free(e->value);
	ch_map_free(&q->sensors);
	free(q);
}

const ch_quota_entry *
ch_quotas_at(const ch_quotas *q, size_t i)
{
	return i < q->n ? &q->v[i] : NULL;
}

static bool
part_eq(ch_qpart a, const char *an, ch_qpart b, const char *bn)
{
	return a == b && (a != CH_QP_NAME || strcmp(an, bn) == 0);
}

static bool
entity_eq(const ch_quota_entity *a, const ch_quota_entity *b)
{
	return part_eq(a->user, a->user_name, b->user, b->user_name) &&
	       part_eq(a->client, a->client_name, b->client, b->client_name) &&
	       part_eq(a->ip, a->ip_name, b->ip, b->ip_name);
}

void
ch_quotas_put(ch_quotas *q, const ch_quota_entity *e, ch_quota_key k, double v, bool remove)
{
	size_t i = 0;
	while (i < q->n && !entity_eq(&q->v[i].e, e))
		i++;
	if (i == q->n) {
		if (remove)
			return;
		if (q->n == q->cap) {
			q->cap = q->cap ? q->cap * 2 : 8;
			q->v = ch_xrealloc(q->v, q->cap * sizeof(*q->v));
		}
		ch_quota_entry *ne = &q->v[q->n++];
		memset(ne, 0, sizeof(*ne));
		ne->e.user = e->user;
		ne->e.client = e->client;
		ne->e.user_name = e->user == CH_QP_NAME ? ch_xstrdup(e->user_name) : NULL;
		ne->e.client_name = e->client == CH_QP_NAME ? ch_xstrdup(e->client_name) : NULL;
		ne->e.ip = e->ip;
		ne->e.ip_name = e->ip == CH_QP_NAME ? ch_xstrdup(e->ip_name) : NULL;
	}
	ch_quota_entry *en = &q->v[i];
	en->set[k] = !remove;
	en->v[k] = remove ? 0 : v;
	for (int j = 0; j < CH_QK_N; j++)
		if (en->set[j])
			return;
	entity_free(&en->e);
	memmove(en, en + 1, (q->n - i - 1) * sizeof(*en));
	q->n--;
}

int16_t
ch_quota_check_key(const char *key, double value, bool remove, bool ip_entity, ch_quota_key *out,
		   char *msg, size_t n)
{
	int k = 0;
	while (k < CH_QK_N && strcmp(key, key_names[k]) != 0)
		k++;
	if (k == CH_QK_N || (k == CH_QK_CONNECTION_CREATION_RATE) != ip_entity) {
		snprintf(msg, n, "Invalid configuration key %s", key);
		return CH_KERR_INVALID_REQUEST;
	}
	*out = (ch_quota_key)k;
	if (remove)
		return 0;
	if (!(value > 0.0)) {
		snprintf(msg, n, "Quota %s must be greater than 0", key);
		return CH_KERR_INVALID_REQUEST;
	}
	/* the byte rates are Kafka LONGs, the connection rate an INT, the
	 * other two DOUBLEs (validateQuotaKeyValue) */
	bool is_long = k == CH_QK_PRODUCER_BYTE_RATE || k == CH_QK_CONSUMER_BYTE_RATE;
	if (!is_long && k != CH_QK_CONNECTION_CREATION_RATE)
		return 0;
	if (value > (is_long ? 9.2233720368547758e18 : 2147483647.0)) {
		snprintf(msg, n, "Proposed value for %s is too large for %s.", key,
			 is_long ? "a LONG" : "an INT");
		return CH_KERR_INVALID_REQUEST;
	}
	if (fabs(fmod(value, 1.0)) > 1e-6) {
		snprintf(msg, n, "%s cannot be a fractional value.", key);
		return CH_KERR_INVALID_REQUEST;
	}
	return 0;
}

static bool
part_matches(ch_qpart p, const char *name, int want, const char *want_name)
{
	switch (want) {
	case 1:
		return p == CH_QP_NAME && strcmp(name, want_name) == 0;
	case 2:
		return p == CH_QP_DEFAULT;
	case 3:
		return p != CH_QP_ABSENT;
	default:
		return true;
	}
}

bool
ch_quota_matches(const ch_quota_entity *e, const ch_quota_filter *f)
{
	if (f->strict) {
		int parts = (e->user != CH_QP_ABSENT) + (e->client != CH_QP_ABSENT) +
			    (e->ip != CH_QP_ABSENT);
		if (parts != (f->user != 0) + (f->client != 0) + (f->ip != 0))
			return false;
	}
	return part_matches(e->user, e->user_name, f->user, f->user_name) &&
	       part_matches(e->client, e->client_name, f->client, f->client_name) &&
	       part_matches(e->ip, e->ip_name, f->ip, f->ip_name);
}

/* ---- enforcement ----------------------------------------------------- */

/* The entry for exactly entity want with key k set, or NULL. */
static const ch_quota_entry *
find_entity(const ch_quotas *q, ch_quota_key k, const ch_quota_entity *want)
{
	for (size_t i = 0; i < q->n; i++)
		if (q->v[i].set[k] && entity_eq(&q->v[i].e, want))
			return &q->v[i];
	return NULL;
}

/* The quota for (user, client) and the tags of the rate it shares (Kafka's
 * eight levels, ch_quota.h); false when none applies (or q is NULL or
 * empty). NULL user or client is "". */
static bool
resolve(const ch_quotas *q, ch_quota_key k, const char *user, const char *client, double *bound,
	char *tags, size_t tn)
{
	if (!q || q->n == 0)
		return false;
	user = user ? user : "";
	client = client ? client : "";
	static const struct {
		ch_qpart u, c;
		bool tag_user, tag_client;
	} levels[] = {
		{CH_QP_NAME, CH_QP_NAME, true, true},
		{CH_QP_NAME, CH_QP_DEFAULT, true, true},
		{CH_QP_NAME, CH_QP_ABSENT, true, false},
		{CH_QP_DEFAULT, CH_QP_NAME, true, true},
		{CH_QP_DEFAULT, CH_QP_DEFAULT, true, true},
		{CH_QP_DEFAULT, CH_QP_ABSENT, true, false},
		{CH_QP_ABSENT, CH_QP_NAME, false, true},
		{CH_QP_ABSENT, CH_QP_DEFAULT, false, true},
	};
	for (size_t i = 0; i < CH_ARRAY_LEN(levels); i++) {
		ch_quota_entity want = {.user = levels[i].u,
					.client = levels[i].c,
					.user_name = (char *)user,
					.client_name = (char *)client};
		const ch_quota_entry *e = find_entity(q, k, &want);
		if (!e)
			continue;
		*bound = e->v[k];
		snprintf(tags, tn, "%d\x1f%s\x1f%s", (int)k, levels[i].tag_user ? user : "",
			 levels[i].tag_client ? client : "");
		return true;
	}
	return false;
}

/* Kafka's purgeObsoleteSamples: samples older than the whole window start
 * over at now. */
static void
purge(sensor *s, int64_t now)
{
	for (int i = 0; i < CH_QUOTA_WINDOW_NUM; i++)
		if (now - s->start[i] >= (int64_t)CH_QUOTA_WINDOW_NUM * CH_QUOTA_WINDOW_MS) {
			s->start[i] = now;
			s->val[i] = 0;
		}
}

static void
add(sensor *s, double v, int64_t now)
{
	if (now - s->start[s->cur] >= CH_QUOTA_WINDOW_MS) {
		s->cur = (s->cur + 1) % CH_QUOTA_WINDOW_NUM;
		s->start[s->cur] = now;
		s->val[s->cur] = 0;
	}
	s->val[s->cur] += v;
	s->last = now;
}

/* The rate's window in ms (Kafka's Rate.windowSize: from the oldest
 * sample, never less than all but one sample) and the rate per second. */
static double
rate(sensor *s, int64_t now, double *window_ms)
{
	purge(s, now);
	int64_t oldest = now;
	double total = 0;
	for (int i = 0; i < CH_QUOTA_WINDOW_NUM; i++) {
		total += s->val[i];
		if (s->start[i] < oldest)
			oldest = s->start[i];
	}
	int64_t elapsed = now - oldest;
	int64_t full = elapsed / CH_QUOTA_WINDOW_MS;
	if (full < CH_QUOTA_WINDOW_NUM - 1)
		elapsed += (CH_QUOTA_WINDOW_NUM - 1 - full) * CH_QUOTA_WINDOW_MS;
	*window_ms = (double)elapsed;
	return total / ((double)elapsed / 1000.0);
}

static sensor *
sensor_for(ch_quotas *q, const char *tags, int64_t now)
{
	size_t tl = strlen(tags);
	sensor *s = ch_map_get(&q->sensors, tags, tl);
	if (s)
		return s;
	s = ch_xcalloc(1, sizeof(*s));
	for (int i = 0; i < CH_QUOTA_WINDOW_NUM; i++)
		s->start[i] = now;
	s->last = now;
	ch_map_put(&q->sensors, tags, tl, s);
	return s;
}

/* Drops rates idle for longer than their window: they measure 0 anyway,
 * and a client cycling client ids must not grow the map for ever. */
static void
sweep(ch_quotas *q, int64_t now)
{
	ch_map_foreach_safe(&q->sensors, e, tmp)
	{
		sensor *s = e->value;
		if (now - s->last > (int64_t)CH_QUOTA_WINDOW_NUM * CH_QUOTA_WINDOW_MS) {
			ch_map_remove_entry(&q->sensors, e);
			free(s);
		}
	}
}

/* The rate with tags, made if new; every 4096th use sweeps the idle ones. */
static sensor *
sensor_at(ch_quotas *q, const char *tags, int64_t now)
{
	if (++q->records % 4096 == 0)
		sweep(q, now);
	return sensor_for(q, tags, now);
}

/* Records v in s; true when the rate is then over bound, with *throttle_ms
 * Kafka's QuotaUtils.throttleTime (else 0). */
static bool
record_over(sensor *s, double v, double bound, int64_t now, int64_t *throttle_ms)
{
	add(s, v, now);
	double w;
	double r = rate(s, now, &w);
	*throttle_ms = r <= bound ? 0 : (int64_t)llround((r - bound) / bound * w);
	return r > bound;
}

int64_t
ch_quotas_record(ch_quotas *q, ch_quota_key k, const char *user, const char *client_id,
		 double value, int64_t now_ms)
{
	double bound;
	char tags[600];
	if (!resolve(q, k, user, client_id, &bound, tags, sizeof(tags)))
		return 0;
	int64_t t;
	(void)record_over(sensor_at(q, tags, now_ms), value, bound, now_ms, &t);
	return t;
}

void
ch_quotas_unrecord(ch_quotas *q, ch_quota_key k, const char *user, const char *client_id,
		   double value, int64_t now_ms)
{
	double bound;
	char tags[600];
	if (resolve(q, k, user, client_id, &bound, tags, sizeof(tags)))
		add(sensor_for(q, tags, now_ms), -value, now_ms);
}

/* Kafka's TokenBucket.refill: quota tokens a second, at most burst. */
static void
refill(sensor *s, double quota, int64_t now)
{
	double burst = quota * CH_QUOTA_WINDOW_NUM * CH_QUOTA_WINDOW_MS / 1000.0;
	double add = s->tokens_at ? quota * (double)(now - s->tokens_at) / 1000.0 : burst;
	s->tokens = s->tokens + add < burst ? s->tokens + add : burst;
	s->tokens_at = now;
}

bool
ch_quotas_mutate(ch_quotas *q, const char *user, const char *client_id, double n, bool strict,
		 int64_t now_ms, int64_t *throttle_ms)
{
	*throttle_ms = 0;
	double bound;
	char tags[600];
	if (!resolve(q, CH_QK_CONTROLLER_MUTATION_RATE, user, client_id, &bound, tags,
		     sizeof(tags)))
		return true;
	sensor *s = sensor_at(q, tags, now_ms);
	s->last = now_ms;
	refill(s, bound, now_ms);
	/* strict: Sensor.checkQuotas before the record refuses a bucket below
	 * zero; permissive: the record is checked after it */
	if (strict && s->tokens < 0) {
		*throttle_ms = llround(-s->tokens / bound * 1000.0);
		return false;
	}
	s->tokens -= n;
	if (!strict && s->tokens < 0)
		*throttle_ms = llround(-s->tokens / bound * 1000.0);
	return true;
}

int64_t
ch_quotas_connection(ch_quotas *q, const char *ip, int64_t now_ms)
{
	if (!q || q->n == 0)
		return 0;
	const ch_quota_key k = CH_QK_CONNECTION_CREATION_RATE;
	ch_quota_entity own = {.ip = CH_QP_NAME, .ip_name = (char *)ip};
	ch_quota_entity any = {.ip = CH_QP_DEFAULT};
	const ch_quota_entry *e = find_entity(q, k, &own);
	if (!e && !(e = find_entity(q, k, &any)))
		return 0;
	char tags[600];
	snprintf(tags, sizeof(tags), "%d\x1f%s", (int)k, ip);
	sensor *s = sensor_at(q, tags, now_ms);
	int64_t t;
	if (!record_over(s, 1, e->v[k], now_ms, &t))
		return 0;
	add(s, -1, now_ms); /* not accepted: not counted */
	return t < CH_QUOTA_WINDOW_MS ? t : CH_QUOTA_WINDOW_MS;
}

bool
ch_quotas_apply(const ch_quotas *q, ch_quota_key k, const char *user, const char *client_id)
{
	double bound;
	char tags[600];
	return resolve(q, k, user, client_id, &bound, tags, sizeof(tags));
}

double
ch_quotas_window_max(const ch_quotas *q, ch_quota_key k, const char *user, const char *client_id)
{
	double bound;
	char tags[600];
	if (!resolve(q, k, user, client_id, &bound, tags, sizeof(tags)))
		return -1;
	return bound * (CH_QUOTA_WINDOW_NUM - 1) * CH_QUOTA_WINDOW_MS / 1000.0;
}
