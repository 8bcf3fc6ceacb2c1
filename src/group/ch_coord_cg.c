/*
 * ch_coord_cg.c: the consumer rebalance protocol's groups (KIP-848), see
 * ch_coord_cg.h. Each step names the Kafka code it follows
 * (GroupMetadataManager, CurrentAssignmentBuilder, TargetAssignmentBuilder,
 * ConsumerGroup in the group-coordinator module).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group/ch_coord_cg_int.h"
#include "proto/generated/ch_errors.h"

#define LEAVE_EPOCH (-1)        /* LEAVE_GROUP_MEMBER_EPOCH */
#define STATIC_LEAVE_EPOCH (-2) /* LEAVE_GROUP_STATIC_MEMBER_EPOCH */

/* ---- config ------------------------------------------------------------- */

void
ch_coord_cg_config_defaults(ch_coord_cg_config *c)
{
	memset(c, 0, sizeof *c);
	c->session_timeout_ms = 45000;
	c->min_session_timeout_ms = 45000;
	c->max_session_timeout_ms = 60000;
	c->heartbeat_interval_ms = 5000;
	c->min_heartbeat_interval_ms = 5000;
	c->max_heartbeat_interval_ms = 15000;
	c->max_size = INT32_MAX;
	c->assignors[0] = CH_ASSIGN_SERVER_UNIFORM;
	c->assignors[1] = CH_ASSIGN_SERVER_RANGE;
	c->nassignors = 2;
	c->migration_policy = CH_COORD_CG_MIGRATION_BIDIRECTIONAL;
	c->offsets_partitions = 50;
	c->classic_min_session_timeout_ms = 6000;
	c->classic_max_session_timeout_ms = 1800000;
	c->classic_max_size = INT32_MAX;
	c->regex_refresh_interval_ms = 600000;
	c->regex_min_refresh_ms = 10000;
	c->assignment_interval_ms = 0;
	c->assignor_offload = true;
	c->assignor_offload_min_partitions = 10000;
}

const char *
ch_coord_cg_config_check(const ch_coord_cg_config *c)
{
	/* GroupCoordinatorConfig's requirements, in its words. */
	if (c->min_session_timeout_ms > c->max_session_timeout_ms)
		return "group.consumer.max.session.timeout.ms must be greater than or equal to "
		       "group.consumer.min.session.timeout.ms";
	if (c->session_timeout_ms < c->min_session_timeout_ms)
		return "group.consumer.session.timeout.ms must be greater than or equal to "
		       "group.consumer.min.session.timeout.ms";
	if (c->session_timeout_ms > c->max_session_timeout_ms)
		return "group.consumer.session.timeout.ms must be less than or equal to "
		       "group.consumer.max.session.timeout.ms";
	if (c->min_heartbeat_interval_ms > c->max_heartbeat_interval_ms)
		return "group.consumer.max.heartbeat.interval.ms must be greater than or equal to "
		       "group.consumer.min.heartbeat.interval.ms";
	if (c->heartbeat_interval_ms < c->min_heartbeat_interval_ms)
		return "group.consumer.heartbeat.interval.ms must be greater than or equal to "
		       "group.consumer.min.heartbeat.interval.ms";
	if (c->heartbeat_interval_ms > c->max_heartbeat_interval_ms)
		return "group.consumer.heartbeat.interval.ms must be less than or equal to "
		       "group.consumer.max.heartbeat.interval.ms";
	if (c->heartbeat_interval_ms >= c->session_timeout_ms)
		return "group.consumer.heartbeat.interval.ms must be less than "
		       "group.consumer.session.timeout.ms";
	if (c->max_size < 1)
		return "group.consumer.max.size must be at least 1";
	if (c->nassignors < 1 || c->nassignors > CH_COORD_CG_MAX_ASSIGNORS)
		return "group.consumer.assignors must name at least one assignor";
	if (c->assignment_interval_ms < 0)
		return "group.consumer.assignment.interval.ms must be at least 0";
	if (c->assignor_offload_min_partitions < 0)
		return "group.consumer.assignor.offload.min.partitions must be at least 0";
	return NULL;
}

int
ch_coord_cg_assignor_by_name(ch_str name)
{
	if (ch_str_eq_c(name, "uniform") ||
	    ch_str_eq_c(name, "org.apache.kafka.coordinator.group.assignor.UniformAssignor"))
		return CH_ASSIGN_SERVER_UNIFORM;
	if (ch_str_eq_c(name, "range") ||
	    ch_str_eq_c(name, "org.apache.kafka.coordinator.group.assignor.RangeAssignor"))
		return CH_ASSIGN_SERVER_RANGE;
	return -1;
}

static const char *const migration_names[] = {"disabled", "downgrade", "upgrade", "bidirectional"};

int
ch_coord_cg_migration_by_name(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (strcasecmp(s, migration_names[i]) == 0)
			return i;
	return -1;
}

const char *
ch_coord_cg_migration_name(ch_coord_cg_migration m)
{
	return (unsigned)m < 4 ? migration_names[m] : "?";
}

const char *
ch_coord_cg_state_name(ch_coord_cg_state s)
{
	static const char *const n[] = {"Empty", "Assigning", "Reconciling", "Stable"};
	return (unsigned)s < 4 ? n[s] : "Unknown";
}

const char *
ch_coord_cg_member_state_name(ch_coord_cg_member_state s)
{
	static const char *const n[] = {"STABLE", "UNREVOKED_PARTITIONS", "UNRELEASED_PARTITIONS"};
	return (unsigned)s < 3 ? n[s] : "UNKNOWN";
}

/* ---- partition sets ------------------------------------------------------ */

int
ch_coord_cg_tp_cmp(const ch_coord_cg_tp *a, const ch_coord_cg_tp *b)
{
	int c = memcmp(a->topic.b, b->topic.b, 16);
	if (c)
		return c;
	return a->partition < b->partition ? -1 : a->partition > b->partition;
}

static int
tp_qcmp(const void *a, const void *b)
{
	return ch_coord_cg_tp_cmp(a, b);
}

void
ch_coord_cg_set_push(cg_set *s, const ch_coord_cg_tp *tp)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 8;
		s->v = ch_xrealloc(s->v, (size_t)s->cap * sizeof *s->v);
	}
	s->v[s->n++] = *tp;
}

void
ch_coord_cg_set_free(cg_set *s)
{
	free(s->v);
	*s = (cg_set){0};
}

/* Sorts and removes repeats (after pushes in any order). */
void
ch_coord_cg_set_normalize(cg_set *s)
{
	if (s->n < 2)
		return;
	qsort(s->v, (size_t)s->n, sizeof *s->v, tp_qcmp);
	int32_t k = 1;
	for (int32_t i = 1; i < s->n; i++)
		if (ch_coord_cg_tp_cmp(&s->v[i], &s->v[k - 1]) != 0)
			s->v[k++] = s->v[i];
	s->n = k;
}

bool
ch_coord_cg_set_has(const cg_set *s, const ch_coord_cg_tp *tp)
{
	return s->n && bsearch(tp, s->v, (size_t)s->n, sizeof *s->v, tp_qcmp) != NULL;
}

bool
ch_coord_cg_set_eq(const cg_set *a, const cg_set *b)
{
	return a->n == b->n && (a->n == 0 || memcmp(a->v, b->v, (size_t)a->n * sizeof *a->v) == 0);
}

/* out = a ∩ b (keep) or a - b (!keep); out is fresh. */
static void
set_filter(const cg_set *a, const cg_set *b, bool keep, cg_set *out)
{
	*out = (cg_set){0};
	int32_t j = 0;
	for (int32_t i = 0; i < a->n; i++) {
		while (j < b->n && ch_coord_cg_tp_cmp(&b->v[j], &a->v[i]) < 0)
			j++;
		bool in_b = j < b->n && ch_coord_cg_tp_cmp(&b->v[j], &a->v[i]) == 0;
		if (in_b == keep)
			ch_coord_cg_set_push(out, &a->v[i]);
	}
}

void
ch_coord_cg_set_copy(const cg_set *a, cg_set *out)
{
	*out = (cg_set){0};
	for (int32_t i = 0; i < a->n; i++)
		ch_coord_cg_set_push(out, &a->v[i]);
}

/* ---- helpers ------------------------------------------------------------- */

void
ch_coord_cg_log(const ch_coord_cg *cg, ch_log_level level, const char *fmt, ...)
{
	if (!cg->ops.log || (cg->ops.log_enabled && !cg->ops.log_enabled(cg->ops.ud, level)))
		return;
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	cg->ops.log(cg->ops.ud, level, line);
}

char *
ch_coord_cg_dup_str(ch_str s)
{
	return s.len < 0 ? NULL : ch_xstrndup(s.p ? s.p : "", (size_t)s.len);
}

/* Replaces *dst with s when s is not null (Kafka's maybeUpdate*). */
static void
maybe_update(char **dst, ch_str s)
{
	if (s.len < 0)
		return;
	free(*dst);
	*dst = ch_coord_cg_dup_str(s);
}

/* Java's String.trim().isEmpty() for a present string (throwIfEmptyString). */
static bool
str_blank(ch_str s)
{
	if (s.len < 0)
		return false;
	for (int32_t i = 0; i < s.len; i++)
		if ((unsigned char)s.p[i] > ' ')
			return false;
	return true;
}

static int
cstr_qcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void
ch_coord_cg_timer_set(ch_coord_cg *cg, cg_timer *t, int64_t deadline)
{
	ch_heap_set(&cg->timers, &t->node, deadline);
}

void
ch_coord_cg_timer_cancel(ch_coord_cg *cg, cg_timer *t)
{
	ch_heap_remove(&cg->timers, &t->node);
}

/* ---- groups and members ------------------------------------------------- */

ch_coord_cg *
ch_coord_cg_new(const ch_coord_cg_config *cfg, const ch_coord_cg_ops *ops)
{
	ch_coord_cg *cg = ch_xcalloc(1, sizeof *cg);
	cg->cfg = *cfg;
	cg->ops = *ops;
	ch_map_init(&cg->groups);
	ch_heap_init(&cg->timers);
	ch_map_init(&cg->stores);
	cg->appends_tail = &cg->appends;
	return cg;
}

cg_group *
ch_coord_cg_group_find(const ch_coord_cg *cg, ch_str id)
{
	return ch_map_get(&cg->groups, id.p ? id.p : "", (size_t)(id.len < 0 ? 0 : id.len));
}

cg_group *
ch_coord_cg_group_create(ch_coord_cg *cg, ch_str id)
{
	cg_group *g = ch_xcalloc(1, sizeof *g);
	g->cg = cg;
	ch_map_init(&g->members);
	ch_map_init(&g->statics);
	ch_map_init(&g->owners);
	ch_map_init(&g->regexes);
	g->regex_never = true;
	/* Kafka 4.3+ (KAFKA-20268, ModernGroup's constructor): a group starts
	 * at epoch 1 with an empty target at epoch 1, so its first computed
	 * target is epoch 2 and a member that joins before it exists
	 * reconciles to 1, never to 0 ("joining"). Replay and the upgrade set
	 * both from what they read. */
	g->epoch = g->assignment_epoch = 1;
	g->assign_timer = (cg_timer){.kind = CG_TIMER_ASSIGN, .g = g};
	ch_map_entry *e = ch_map_put(&cg->groups, id.p, (size_t)id.len, g);
	g->id = e->key;
	return g;
}

static void
member_free(ch_coord_cg *cg, cg_member *m)
{
	ch_coord_cg_timer_cancel(cg, &m->session);
	ch_coord_cg_timer_cancel(cg, &m->rebalance);
	ch_coord_cg_timer_cancel(cg, &m->join);
	ch_coord_cg_timer_cancel(cg, &m->sync);
	ch_coord_cg_classic_free(m->classic);
	free(m->instance_id);
	free(m->rack);
	free(m->client_id);
	free(m->client_host);
	free(m->server_assignor);
	free(m->regex);
	ch_map_free(&m->aepochs);
	free(m->assigned_ep);
	free(m->revoking_ep);
	for (int32_t i = 0; i < m->ntopics; i++)
		free(m->topics[i]);
	free(m->topics);
	ch_coord_cg_set_free(&m->assigned);
	ch_coord_cg_set_free(&m->revoking);
	ch_coord_cg_set_free(&m->target);
	free(m);
}

static void
meta_free(cg_group *g)
{
	for (int32_t i = 0; i < g->nmeta; i++)
		free(g->meta[i].name);
	free(g->meta);
	g->meta = NULL;
	g->nmeta = 0;
}

void
ch_coord_cg_group_free(ch_coord_cg *cg, cg_group *g)
{
	ch_map_foreach (&g->members, e)
		member_free(cg, e->value);
	ch_map_free(&g->members);
	ch_map_free(&g->statics);
	ch_map_free(&g->owners);
	ch_coord_cg_regex_free_all(g);
	ch_coord_cg_timer_cancel(cg, &g->assign_timer);
	meta_free(g);
	free(g->store_touched_id);
	free(g);
}

void
ch_coord_cg_member_touch(cg_group *g, cg_member *m)
{
	if (m->store_dirty)
		return;
	m->store_dirty = true;
	if (g->store_touched++ == 0)
		g->store_touched_id = ch_xstrdup(m->id);
}

void
ch_coord_cg_free(ch_coord_cg *cg)
{
	if (!cg)
		return;
	ch_map_foreach (&cg->groups, e)
		ch_coord_cg_group_free(cg, e->value);
	ch_map_free(&cg->groups);
	ch_heap_free(&cg->timers);
	ch_coord_cg_store_free_all(cg);
	free(cg);
}

cg_member *
ch_coord_cg_member_find(const cg_group *g, ch_str id)
{
	return ch_map_get(&g->members, id.p ? id.p : "", (size_t)(id.len < 0 ? 0 : id.len));
}

cg_member *
ch_coord_cg_member_add(cg_group *g, ch_str id)
{
	cg_member *m = ch_xcalloc(1, sizeof *m);
	m->g = g;
	m->session.kind = CG_TIMER_SESSION;
	m->session.m = m;
	m->rebalance.kind = CG_TIMER_REBALANCE;
	m->rebalance.m = m;
	m->join = (cg_timer){.kind = CG_TIMER_JOIN, .m = m};
	m->sync = (cg_timer){.kind = CG_TIMER_SYNC, .m = m};
	m->rebalance_timeout_ms = -1;
	m->regex = ch_xstrdup(""); /* none yet: Kafka's ConsumerGroupMember.Builder has "" */
	ch_map_init(&m->aepochs);
	ch_map_entry *e = ch_map_put(&g->members, id.p ? id.p : "", (size_t)id.len, m);
	m->id = e->key;
	return m;
}

/* The member's holdings (assigned and pending revocation) enter or leave
 * the group's owner map. */
void
ch_coord_cg_owners_put(cg_group *g, cg_member *m, const cg_set *s)
{
	char k[CG_TP_KEY_LEN];
	for (int32_t i = 0; i < s->n; i++) {
		cg_tp_key(&s->v[i], k);
		ch_map_put(&g->owners, k, sizeof k, m);
	}
}

void
ch_coord_cg_owners_drop(cg_group *g, const cg_set *s)
{
	char k[CG_TP_KEY_LEN];
	for (int32_t i = 0; i < s->n; i++) {
		cg_tp_key(&s->v[i], k);
		ch_map_remove(&g->owners, k, sizeof k);
	}
}

static bool
owned_by_anyone(const cg_group *g, const ch_coord_cg_tp *tp)
{
	char k[CG_TP_KEY_LEN];
	cg_tp_key(tp, k);
	return ch_map_find(&g->owners, k, sizeof k) != NULL;
}

/* Removes the member from the group (its records' tombstones, when stored):
 * its partitions are free again. Does not bump the epoch. */
void
ch_coord_cg_member_remove(cg_group *g, cg_member *m)
{
	g->store_scan = true; /* its records' tombstones */
	ch_coord_cg_regex_release(g, m);
	ch_coord_cg_owners_drop(g, &m->assigned);
	ch_coord_cg_owners_drop(g, &m->revoking);
	if (m->instance_id && ch_map_get(&g->statics, m->instance_id, strlen(m->instance_id)) == m)
		ch_map_remove(&g->statics, m->instance_id, strlen(m->instance_id));
	ch_map_remove(&g->members, m->id, strlen(m->id));
	member_free(g->cg, m);
}

/* The group's subscribed topics read again from ops->topic: the union of
 * the members' subscriptions that exist. Returns whether it changed. */
bool
ch_coord_cg_meta_refresh(cg_group *g)
{
	ch_coord_cg *cg = g->cg;
	size_t total = 0;
	ch_map_foreach (&g->members, e)
		total += (size_t)((cg_member *)e->value)->ntopics;
	ch_map_foreach (&g->regexes, e) /* each regex once, not per member */
		total += (size_t)((cg_regex *)e->value)->ntopics;
	char **names = ch_xmalloc((total ? total : 1) * sizeof *names);
	size_t n = 0;
	ch_map_foreach (&g->members, e) {
		cg_member *m = e->value;
		for (int32_t i = 0; i < m->ntopics; i++)
			names[n++] = m->topics[i];
	}
	ch_map_foreach (&g->regexes, e) {
		cg_regex *r = e->value;
		for (int32_t i = 0; i < r->ntopics; i++)
			names[n++] = r->topics[i];
	}
	qsort(names, n, sizeof *names, cstr_qcmp);
	cg_topic_meta *meta = ch_xmalloc((n ? n : 1) * sizeof *meta);
	int32_t nmeta = 0;
	for (size_t i = 0; i < n; i++) {
		if (i && strcmp(names[i], names[i - 1]) == 0)
			continue;
		ch_coord_cg_topic t;
		if (!cg->ops.topic(cg->ops.ud, ch_str_c(names[i]), &t) || t.partitions <= 0)
			continue;
		meta[nmeta++] = (cg_topic_meta){names[i], t.id, t.partitions};
	}
	bool changed = nmeta != g->nmeta;
	for (int32_t i = 0; !changed && i < nmeta; i++)
		changed = strcmp(meta[i].name, g->meta[i].name) != 0 ||
			  !ch_uuid_eq(&meta[i].id, &g->meta[i].id) ||
			  meta[i].partitions != g->meta[i].partitions;
	int64_t hash = ch_coord_cg_meta_hash(meta, nmeta);
	if (g->meta_unknown) /* replayed: only the stored hash to compare with */
		changed = hash != g->meta_hash;
	g->meta_unknown = false;
	g->meta_hash = hash;
	if (changed || nmeta != g->nmeta) {
		meta_free(g);
		for (int32_t i = 0; i < nmeta; i++)
			meta[i].name = ch_xstrdup(meta[i].name);
		g->meta = meta;
		g->nmeta = nmeta;
	} else {
		free(meta);
	}
	free(names);
	g->meta_stale = false;
	return changed;
}

int64_t
ch_coord_cg_meta_hash(const cg_topic_meta *meta, int32_t n)
{
	if (n == 0)
		return 0;
	uint64_t h = 0xcbf29ce484222325ull;
#define FNV(byte) (h = (h ^ (uint8_t)(byte)) * 0x100000001b3ull)
	for (int32_t i = 0; i < n; i++) {
		for (const char *p = meta[i].name; *p; p++)
			FNV(*p);
		FNV(0);
		for (int k = 0; k < 16; k++)
			FNV(meta[i].id.b[k]);
		for (int k = 24; k >= 0; k -= 8)
			FNV((uint32_t)meta[i].partitions >> k);
	}
#undef FNV
	return h ? (int64_t)h : 1; /* 0 means "no topics" */
}

void
ch_coord_cg_bump_epoch(cg_group *g, const char *why)
{
	g->epoch++;
	ch_coord_cg_log(g->cg, CH_LOG_INFO, "[GroupId %s] Bumped group epoch to %d (%s).", g->id,
			g->epoch, why);
}

/* Kafka's consumerGroupFenceMembers: the members leave, the subscribed
 * topics are read again without them, the group epoch is bumped; a group
 * left empty has its target assignment epoch brought to the group epoch
 * (KAFKA-20442: an empty group's epochs match), with timestamp 0. */
void
ch_coord_cg_members_fenced(cg_group *g, const char *why)
{
	ch_coord_cg_meta_refresh(g);
	ch_coord_cg_bump_epoch(g, why);
	if (g->members.n == 0) {
		g->assignment_epoch = g->epoch;
		g->assignment_ts = 0;
	}
}

/* Kafka's consumerGroupFenceMember. */
bool
ch_coord_cg_fence_member(cg_group *g, cg_member *m)
{
	if (ch_coord_cg_downgrade(g, m))
		return false;
	ch_coord_cg_member_remove(g, m);
	ch_coord_cg_members_fenced(g, "member removed");
	return true;
}

/* ---- target assignment (TargetAssignmentBuilder) -------------------------- */

/* The assignor most members ask for (ConsumerGroup.computePreferredServerAssignor;
 * ties go to the earlier one in group.consumer.assignors), else the first
 * configured. */
static ch_assign_kind
preferred_assignor(const cg_group *g)
{
	const ch_coord_cg_config *cfg = &g->cg->cfg;
	int32_t votes[CH_ASSIGN_KIND_COUNT] = {0};
	ch_map_foreach (&g->members, e) {
		const cg_member *m = e->value;
		if (m->server_assignor) {
			int k = ch_coord_cg_assignor_by_name(ch_str_c(m->server_assignor));
			if (k >= 0)
				votes[k]++;
		}
	}
	ch_assign_kind best = cfg->assignors[0];
	int32_t best_votes = 0;
	for (int32_t i = 0; i < cfg->nassignors; i++)
		if (votes[cfg->assignors[i]] > best_votes)
			best = cfg->assignors[i], best_votes = votes[cfg->assignors[i]];
	return best;
}

static int32_t
meta_index_by_name(const cg_group *g, const char *name)
{
	int32_t lo = 0, hi = g->nmeta;
	while (lo < hi) {
		int32_t mid = (lo + hi) / 2;
		int c = strcmp(g->meta[mid].name, name);
		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int32_t
meta_index_by_id(const cg_group *g, const ch_uuid *id)
{
	for (int32_t i = 0; i < g->nmeta; i++)
		if (ch_uuid_eq(&g->meta[i].id, id))
			return i;
	return -1;
}

/* The assignor's input for g's target at its epoch, copied (a worker
 * thread reads it while the group goes on changing) and its result. */
struct ch_coord_cg_assign_job {
	uint64_t seq; /* g->assign_job while it is the group's latest (0: within the call) */
	char *group_id;
	int32_t epoch;
	ch_assign_kind kind;
	cg_topic_meta *meta; /* the group's topics as read: result indexes are into it */
	int32_t nmeta;
	ch_assign_topic *topics;
	ch_assign_member *in;
	char **ids, **instances, **racks; /* of in[i] (instances[i], racks[i] may be NULL) */
	int32_t **parts;                  /* in[i].owned's partitions */
	int32_t nm;
	bool ran, ok;
	ch_assign_result res;
	char err[256];
};

void
ch_coord_cg_assign_job_free(ch_coord_cg_assign_job *job)
{
	if (!job)
		return;
	for (int32_t i = 0; i < job->nm; i++) {
		free((void *)job->in[i].topics);
		free((void *)job->in[i].owned);
		free(job->parts[i]);
		free(job->ids[i]);
		free(job->instances[i]);
		free(job->racks[i]);
	}
	for (int32_t i = 0; i < job->nmeta; i++)
		free(job->meta[i].name);
	if (job->ran && job->ok)
		ch_assign_result_free(&job->res);
	free(job->meta);
	free(job->topics);
	free(job->in);
	free(job->ids);
	free(job->instances);
	free(job->racks);
	free(job->parts);
	free(job->group_id);
	free(job);
}

static char *
dup_or_null(const char *s)
{
	return s ? ch_xstrdup(s) : NULL;
}

/* g's assignor input (Kafka's TargetAssignmentBuilder): every member with
 * its subscribed names and what its regex resolved to, the current target
 * as owned partitions (sticky), the preferred assignor. */
static ch_coord_cg_assign_job *
job_snapshot(cg_group *g)
{
	int32_t nm = (int32_t)g->members.n;
	size_t nm1 = (size_t)(nm ? nm : 1);
	ch_coord_cg_assign_job *job = ch_xcalloc(1, sizeof *job);
	job->group_id = ch_xstrdup(g->id);
	job->epoch = g->epoch;
	job->kind = preferred_assignor(g);
	job->nmeta = g->nmeta;
	job->meta = ch_xcalloc((size_t)(g->nmeta ? g->nmeta : 1), sizeof *job->meta);
	job->topics = ch_xcalloc((size_t)(g->nmeta ? g->nmeta : 1), sizeof *job->topics);
	for (int32_t i = 0; i < g->nmeta; i++) {
		job->meta[i] = g->meta[i];
		job->meta[i].name = ch_xstrdup(g->meta[i].name);
		job->topics[i] =
			(ch_assign_topic){ch_str_c(job->meta[i].name), g->meta[i].partitions, NULL};
	}
	job->in = ch_xcalloc(nm1, sizeof *job->in);
	job->ids = ch_xcalloc(nm1, sizeof *job->ids);
	job->instances = ch_xcalloc(nm1, sizeof *job->instances);
	job->racks = ch_xcalloc(nm1, sizeof *job->racks);
	job->parts = ch_xcalloc(nm1, sizeof *job->parts);
	int32_t i = 0;
	ch_map_foreach (&g->members, e) {
		cg_member *m = e->value;
		/* its names and what its regex resolved to, both sorted: merged */
		int32_t nrx;
		const char *const *rx = ch_coord_cg_regex_topics(g, m, &nrx);
		int32_t *tix =
			ch_xmalloc((size_t)(m->ntopics + nrx ? m->ntopics + nrx : 1) * sizeof *tix);
		int32_t nt = 0;
		for (int32_t a = 0, b = 0; a < m->ntopics || b < nrx;) {
			int c = a == m->ntopics ? 1 : b == nrx ? -1 : strcmp(m->topics[a], rx[b]);
			const char *name = c <= 0 ? m->topics[a] : rx[b];
			a += c <= 0;
			b += c >= 0;
			int32_t ix = meta_index_by_name(g, name);
			if (ix >= 0)
				tix[nt++] = ix;
		}
		/* The current target as owned partitions, one entry per topic
		 * (the set is sorted by topic id, so a topic's run is contiguous). */
		ch_assign_owned *own =
			ch_xcalloc((size_t)(m->target.n ? m->target.n : 1), sizeof *own);
		int32_t *parts =
			ch_xmalloc((size_t)(m->target.n ? m->target.n : 1) * sizeof *parts);
		job->parts[i] = parts;
		int32_t no = 0;
		for (int32_t k = 0; k < m->target.n;) {
			int32_t ix = meta_index_by_id(g, &m->target.v[k].topic);
			int32_t start = k;
			while (k < m->target.n &&
			       ch_uuid_eq(&m->target.v[k].topic, &m->target.v[start].topic)) {
				parts[k] = m->target.v[k].partition;
				k++;
			}
			if (ix >= 0)
				own[no++] = (ch_assign_owned){ix, parts + start, k - start};
		}
		job->ids[i] = ch_xstrdup(m->id);
		job->instances[i] = dup_or_null(m->instance_id);
		job->racks[i] = dup_or_null(m->rack);
		job->in[i] = (ch_assign_member){
			.member_id = ch_str_c(job->ids[i]),
			.instance_id = ch_str_c(job->instances[i]),
			.rack = ch_str_c(job->racks[i]),
			.topics = tix,
			.ntopics = nt,
			.owned = own,
			.nowned = no,
			.generation = CH_ASSIGN_NO_GENERATION,
		};
		i++;
	}
	job->nm = nm;
	return job;
}

void
ch_coord_cg_assign_job_run(ch_coord_cg_assign_job *job)
{
	ch_assign_input input = {job->topics, job->nmeta, job->in, job->nm};
	job->ok = ch_assign(job->kind, &input, &job->res) == CH_OK;
	job->ran = true;
	if (!job->ok)
		snprintf(job->err, sizeof job->err,
			 "Failed to compute a new target assignment for epoch %d: %s", job->epoch,
			 job->res.errstr);
}

/* The job's result becomes g's target. false (nothing changed) when g's
 * members are no longer those of the snapshot: a static member replaced
 * (same epoch) is found by its instance id. */
static bool
job_apply(cg_group *g, const ch_coord_cg_assign_job *job)
{
	ch_coord_cg *cg = g->cg;
	if ((int32_t)g->members.n != job->nm)
		return false;
	cg_member **ms = ch_xcalloc((size_t)(job->nm ? job->nm : 1), sizeof *ms);
	for (int32_t i = 0; i < job->nm; i++) {
		ms[i] = ch_coord_cg_member_find(g, ch_str_c(job->ids[i]));
		if (!ms[i] && job->instances[i])
			ms[i] = ch_map_get(&g->statics, job->instances[i],
					   strlen(job->instances[i]));
		if (!ms[i]) {
			free(ms);
			return false;
		}
	}
	for (int32_t i = 0; i < job->nm; i++) {
		cg_member *m = ms[i];
		ch_coord_cg_set_free(&m->target);
		for (int32_t k = job->res.off[i]; k < job->res.off[i + 1]; k++) {
			ch_coord_cg_tp tp = {job->meta[job->res.tps[k].topic].id,
					     job->res.tps[k].partition};
			ch_coord_cg_set_push(&m->target, &tp);
		}
		ch_coord_cg_set_normalize(&m->target);
	}
	free(ms);
	g->assignment_epoch = job->epoch;
	g->assignment_ts = cg->now;
	g->store_all = true;
	ch_coord_cg_log(cg, CH_LOG_INFO,
			"[GroupId %s] Computed a new target assignment for epoch %d with '%s' "
			"assignor.",
			g->id, job->epoch, ch_assign_name(job->kind));
	return true;
}

/* A new target assignment for every member at the group epoch, from the
 * previous target (sticky), within the call. Returns false (the reason
 * logged and in err) when the assignor refuses its input. */
bool
ch_coord_cg_update_target(cg_group *g, char *err, size_t errcap)
{
	ch_coord_cg_assign_job *job = job_snapshot(g);
	ch_coord_cg_assign_job_run(job);
	bool ok = job->ok;
	if (ok) {
		job_apply(g, job); /* the same members: nothing ran in between */
	} else {
		snprintf(err, errcap, "%s", job->err);
		ch_coord_cg_log(g->cg, CH_LOG_ERROR, "[GroupId %s] %s.", g->id, err);
	}
	ch_coord_cg_assign_job_free(job);
	return ok;
}

/* The partitions of g's subscribed topics (what an assignment's cost
 * follows: bench/assign, group_cg_assign_bench). */
static int64_t
group_partitions(const cg_group *g)
{
	int64_t n = 0;
	for (int32_t i = 0; i < g->nmeta; i++)
		n += g->meta[i].partitions;
	return n;
}

bool
ch_coord_cg_target_follow(cg_group *g, char *err, size_t errcap)
{
	ch_coord_cg *cg = g->cg;
	if (g->epoch <= g->assignment_epoch || g->assign_job)
		return true; /* current, or a job in flight (its end looks again) */
	/* The first target (a new group's epoch 2) at once, as before Kafka
	 * 4.3 made groups start at 1 so that it could wait: cohortd's groups
	 * start at 1 too (ch_coord_cg_group_create), which would allow it. */
	if (g->assignment_epoch > 1 && g->assign_failed_epoch != g->epoch) {
		int64_t due = g->assignment_ts + cg->cfg.assignment_interval_ms;
		if (cg->cfg.assignment_interval_ms > 0 && cg->now < due) {
			if (!ch_heap_armed(&g->assign_timer.node))
				ch_coord_cg_timer_set(cg, &g->assign_timer, due);
			return true;
		}
		if (cg->ops.assign_offload && cg->cfg.assignor_offload &&
		    group_partitions(g) >= cg->cfg.assignor_offload_min_partitions) {
			ch_coord_cg_assign_job *job = job_snapshot(g);
			job->seq = g->assign_job = ++cg->assign_jobs;
			ch_coord_cg_log(cg, CH_LOG_DEBUG,
					"[GroupId %s] Computing the target assignment for epoch %d "
					"off the coordinator's thread.",
					g->id, g->epoch);
			cg->ops.assign_offload(cg->ops.ud, job);
			return true;
		}
	}
	ch_coord_cg_timer_cancel(cg, &g->assign_timer);
	return ch_coord_cg_update_target(g, err, errcap);
}

void
ch_coord_cg_assign_job_done(ch_coord_cg *cg, int64_t now, ch_coord_cg_assign_job *job)
{
	cg->now = now;
	cg_group *g = ch_coord_cg_group_find(cg, ch_str_c(job->group_id));
	if (!g || g->assign_job != job->seq) {
		ch_coord_cg_assign_job_free(job); /* the group went (and came again) */
		return;
	}
	g->assign_job = 0;
	bool applied = false;
	if (g->epoch == job->epoch) {
		if (!job->ok) {
			/* The next heartbeat computes it within the call and
			 * answers the assignor's error. */
			g->assign_failed_epoch = job->epoch;
			ch_coord_cg_log(cg, CH_LOG_ERROR, "[GroupId %s] %s.", g->id, job->err);
		} else {
			applied = job_apply(g, job);
		}
	}
	ch_coord_cg_assign_job_free(job);
	int32_t before = g->assignment_epoch;
	char err[256];
	if (!applied && g->assign_failed_epoch != g->epoch)
		ch_coord_cg_target_follow(g, err, sizeof err); /* stale: again */
	if (applied || g->assignment_epoch != before)
		ch_coord_cg_store_flush(cg, g->id, NULL, NULL);
}

/* ---- reconciliation (CurrentAssignmentBuilder) ---------------------------- */

/* Whether the member still reports one of `s` (a null owned list: it may). */
static bool
owns_any(const cg_set *owned, const cg_set *s)
{
	if (!owned)
		return true;
	for (int32_t i = 0; i < owned->n; i++)
		if (ch_coord_cg_set_has(s, &owned->v[i]))
			return true;
	return false;
}

void
ch_coord_cg_epochs_sync(cg_member *m, int32_t epoch)
{
	ch_map_foreach_safe(&m->aepochs, e, tmp)
	{
		ch_coord_cg_tp tp;
		memcpy(tp.topic.b, e->key, 16);
		tp.partition = (int32_t)((uint32_t)(uint8_t)e->key[16] << 24 |
					 (uint32_t)(uint8_t)e->key[17] << 16 |
					 (uint32_t)(uint8_t)e->key[18] << 8 |
					 (uint32_t)(uint8_t)e->key[19]);
		if (!ch_coord_cg_set_has(&m->assigned, &tp) &&
		    !ch_coord_cg_set_has(&m->revoking, &tp))
			ch_map_remove_entry(&m->aepochs, e);
	}
	const cg_set *sets[] = {&m->assigned, &m->revoking};
	int32_t **arrays[] = {&m->assigned_ep, &m->revoking_ep};
	char k[CG_TP_KEY_LEN];
	for (int s = 0; s < 2; s++) {
		free(*arrays[s]);
		int32_t *v = ch_xmalloc((size_t)(sets[s]->n ? sets[s]->n : 1) * sizeof *v);
		for (int32_t i = 0; i < sets[s]->n; i++) {
			cg_tp_key(&sets[s]->v[i], k);
			ch_map_entry *e = ch_map_find(&m->aepochs, k, sizeof k);
			if (!e)
				e = ch_map_put(&m->aepochs, k, sizeof k, (void *)(intptr_t)epoch);
			v[i] = (int32_t)(intptr_t)e->value;
		}
		*arrays[s] = v;
	}
}

static void
set_epoch(cg_member *m, int32_t epoch)
{
	m->previous_epoch = m->epoch;
	m->epoch = epoch;
}

/* Kafka's computeNextAssignment: what the member keeps, must revoke and can
 * take now towards its target. */
static void
compute_next(cg_group *g, cg_member *m, int32_t epoch, const cg_set *owned)
{
	cg_set keep, revoke, pending, take = {0};
	set_filter(&m->assigned, &m->target, true, &keep);
	set_filter(&m->assigned, &keep, false, &revoke);
	set_filter(&m->target, &keep, false, &pending);
	bool unreleased = false;
	for (int32_t i = 0; i < pending.n; i++) {
		if (owned_by_anyone(g, &pending.v[i]))
			unreleased = true;
		else
			ch_coord_cg_set_push(&take, &pending.v[i]);
	}
	ch_coord_cg_set_free(&pending);
	ch_coord_cg_owners_drop(g, &m->assigned);
	ch_coord_cg_owners_drop(g, &m->revoking);
	ch_coord_cg_set_free(&m->assigned);
	ch_coord_cg_set_free(&m->revoking);
	/* Kafka revokes only what the member still reports; cohortd also asks a
	 * consumer-protocol member that has not yet reported owning all it was
	 * given, since it may still take the rest (Kafka gives those partitions
	 * to their new owner at once: both own them for a moment). A classic
	 * member reports in every JoinGroup: its list is its whole truth. */
	if (revoke.n && (owns_any(owned, &revoke) || (!m->acked && !m->classic))) {
		m->state = CH_COORD_CG_MEMBER_UNREVOKED_PARTITIONS;
		set_epoch(m, epoch);
		m->assigned = keep;
		m->revoking = revoke;
		ch_coord_cg_set_free(&take);
	} else {
		ch_coord_cg_set_free(&revoke);
		for (int32_t i = 0; i < take.n; i++)
			ch_coord_cg_set_push(&keep, &take.v[i]);
		ch_coord_cg_set_normalize(&keep);
		if (take.n)
			m->acked = false;
		ch_coord_cg_set_free(&take);
		m->state = unreleased ? CH_COORD_CG_MEMBER_UNRELEASED_PARTITIONS
				      : CH_COORD_CG_MEMBER_STABLE;
		set_epoch(m, g->assignment_epoch);
		m->assigned = keep;
	}
	ch_coord_cg_owners_put(g, m, &m->assigned);
	ch_coord_cg_owners_put(g, m, &m->revoking);
	ch_coord_cg_epochs_sync(m, m->epoch);
}

/* Kafka's maybeReconcile: moves the member towards the target assignment
 * epoch; arms the rebalance timeout while it has partitions to revoke. */
void
ch_coord_cg_maybe_reconcile(cg_group *g, cg_member *m, const cg_set *owned, int64_t now)
{
	if (m->state == CH_COORD_CG_MEMBER_STABLE && m->epoch == g->assignment_epoch)
		return;
	int32_t epoch0 = m->epoch, prev0 = m->previous_epoch;
	ch_coord_cg_member_state state0 = m->state;
	cg_set assigned0, revoking0;
	ch_coord_cg_set_copy(&m->assigned, &assigned0);
	ch_coord_cg_set_copy(&m->revoking, &revoking0);
	switch (m->state) {
	case CH_COORD_CG_MEMBER_STABLE:
		compute_next(g, m, m->epoch, owned);
		break;
	case CH_COORD_CG_MEMBER_UNREVOKED_PARTITIONS:
		if (!owns_any(owned, &m->revoking))
			compute_next(g, m, m->epoch + 1, owned);
		break;
	case CH_COORD_CG_MEMBER_UNRELEASED_PARTITIONS:
		compute_next(g, m, m->epoch, owned);
		break;
	}
	bool changed = m->epoch != epoch0 || m->previous_epoch != prev0 || m->state != state0 ||
		       !ch_coord_cg_set_eq(&m->assigned, &assigned0) ||
		       !ch_coord_cg_set_eq(&m->revoking, &revoking0);
	ch_coord_cg_set_free(&assigned0);
	ch_coord_cg_set_free(&revoking0);
	if (!changed)
		return;
	ch_coord_cg_log(g->cg, CH_LOG_DEBUG,
			"[GroupId %s] Member %s new assignment state: epoch=%d, previousEpoch=%d, "
			"state=%s, %d assigned and %d pending revocation.",
			g->id, m->id, m->epoch, m->previous_epoch,
			ch_coord_cg_member_state_name(m->state), m->assigned.n, m->revoking.n);
	if (m->classic) {
		/* Kafka: a classic member has only its join and sync timers. */
	} else if (m->state == CH_COORD_CG_MEMBER_UNREVOKED_PARTITIONS) {
		m->rebalance_epoch = m->epoch;
		ch_coord_cg_timer_set(g->cg, &m->rebalance, now + m->rebalance_timeout_ms);
	} else {
		ch_coord_cg_timer_cancel(g->cg, &m->rebalance);
	}
}

/* ---- the heartbeat --------------------------------------------------------- */

typedef struct hb_answer {
	ch_ConsumerGroupHeartbeatResponse r;
	char msg[512];
} hb_answer;

static void respond_error(ch_coord_cg *cg, void *token, int16_t err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void
respond_error(ch_coord_cg *cg, void *token, int16_t err, const char *fmt, ...)
{
	hb_answer a;
	ch_ConsumerGroupHeartbeatResponse_init(&a.r);
	a.r.ErrorCode = err;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a.msg, sizeof a.msg, fmt, ap);
	va_end(ap);
	a.r.ErrorMessage = ch_str_c(a.msg);
	cg->ops.respond(cg->ops.ud, token, &a.r);
}

/* Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid (GroupCoordinatorService):
 * the message of the first rule broken, or NULL. */
static const char *
request_invalid(const ch_coord_cg *cg, const ch_ConsumerGroupHeartbeatRequest *rq, int16_t version,
		int16_t *err, char *buf, size_t cap)
{
	*err = CH_KERR_INVALID_REQUEST;
	if ((version >= 1 || rq->MemberEpoch > 0 || rq->MemberEpoch == LEAVE_EPOCH) &&
	    str_blank(rq->MemberId))
		return "MemberId can't be empty.";
	if (str_blank(rq->GroupId) || rq->GroupId.len < 0)
		return "GroupId can't be empty.";
	if (str_blank(rq->InstanceId))
		return "InstanceId can't be empty.";
	if (str_blank(rq->RackId))
		return "RackId can't be empty.";
	if (rq->MemberEpoch == 0) {
		if (rq->RebalanceTimeoutMs == -1)
			return "RebalanceTimeoutMs must be provided in first request.";
		if (rq->TopicPartitions_n != 0)
			return "TopicPartitions must be empty when (re-)joining.";
		if (rq->SubscribedTopicNames_n < 0 && rq->SubscribedTopicRegex.len < 0)
			return "Either SubscribedTopicNames or SubscribedTopicRegex must be "
			       "non-null when (re-)joining.";
	} else if (rq->MemberEpoch == STATIC_LEAVE_EPOCH) {
		if (rq->InstanceId.len < 0)
			return "InstanceId can't be null.";
	} else if (rq->MemberEpoch < STATIC_LEAVE_EPOCH) {
		return "MemberEpoch is invalid.";
	}
	if (rq->ServerAssignor.len >= 0) {
		int k = ch_coord_cg_assignor_by_name(rq->ServerAssignor);
		bool enabled = false;
		for (int32_t i = 0; k >= 0 && i < cg->cfg.nassignors; i++)
			enabled |= cg->cfg.assignors[i] == (ch_assign_kind)k;
		if (!enabled) {
			size_t n =
				(size_t)snprintf(buf, cap,
						 "ServerAssignor %.*s is not supported. "
						 "Supported assignors: ",
						 (int)rq->ServerAssignor.len, rq->ServerAssignor.p);
			for (int32_t i = 0; i < cg->cfg.nassignors && n < cap; i++)
				n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "",
						      ch_assign_name(cg->cfg.assignors[i]));
			if (n < cap)
				snprintf(buf + n, cap - n, ".");
			*err = CH_KERR_UNSUPPORTED_ASSIGNOR;
			return buf;
		}
	}
	return NULL;
}

/* The owned partitions of the request as a set; NULL for a null list. */
static const cg_set *
owned_from_request(const ch_ConsumerGroupHeartbeatRequest *rq, cg_set *s)
{
	*s = (cg_set){0};
	if (rq->TopicPartitions_n < 0)
		return NULL;
	for (int32_t i = 0; i < rq->TopicPartitions_n; i++) {
		const ch_ConsumerGroupHeartbeatRequest_TopicPartitions *t = &rq->TopicPartitions[i];
		for (int32_t k = 0; k < t->Partitions_n; k++) {
			ch_coord_cg_tp tp = {t->TopicId, t->Partitions[k]};
			ch_coord_cg_set_push(s, &tp);
		}
	}
	ch_coord_cg_set_normalize(s);
	return s;
}

static bool
is_subset(const cg_set *owned, const cg_set *of)
{
	if (!owned)
		return false;
	for (int32_t i = 0; i < owned->n; i++)
		if (!ch_coord_cg_set_has(of, &owned->v[i]))
			return false;
	return true;
}

/* Kafka's throwIfConsumerGroupMemberEpochIsInvalid; 0 or FENCED_MEMBER_EPOCH
 * with msg filled. Epoch 0 is a (re)join and always accepted, as in Kafka
 * 4.4: a fenced client rejoins under the same member id (KIP-1082) owning
 * nothing, and gets its current assignment back in the full answer (Kafka's
 * Oct 2024 code fenced it until its session expired). A member one epoch
 * behind whose owned partitions are part of its assignment lost our last
 * answer: accepted. */
static int16_t
check_epoch(const cg_member *m, int32_t epoch, const cg_set *owned, char *msg, size_t cap)
{
	if (epoch == 0)
		return 0;
	if (epoch > m->epoch) {
		snprintf(msg, cap,
			 "The consumer group member has a greater member epoch (%d) than the one "
			 "known by the group coordinator (%d). The member must abandon all its "
			 "partitions and rejoin.",
			 epoch, m->epoch);
		return CH_KERR_FENCED_MEMBER_EPOCH;
	}
	if (epoch < m->epoch && (epoch != m->previous_epoch || !is_subset(owned, &m->assigned))) {
		snprintf(msg, cap,
			 "The consumer group member has a smaller member epoch (%d) than the one "
			 "known by the group coordinator (%d). The member must abandon all its "
			 "partitions and rejoin.",
			 epoch, m->epoch);
		return CH_KERR_FENCED_MEMBER_EPOCH;
	}
	return 0;
}

bool
ch_coord_cg_member_set_topics(cg_member *m, const ch_str *names, int32_t count)
{
	char **t = ch_xmalloc((size_t)(count > 0 ? count : 1) * sizeof *t);
	int32_t n = 0;
	for (int32_t i = 0; i < count; i++)
		if (names[i].len >= 0)
			t[n++] = ch_coord_cg_dup_str(names[i]);
	qsort(t, (size_t)n, sizeof *t, cstr_qcmp);
	int32_t k = 0;
	for (int32_t i = 0; i < n; i++) {
		if (k && strcmp(t[i], t[k - 1]) == 0)
			free(t[i]);
		else
			t[k++] = t[i];
	}
	n = k;
	bool changed = n != m->ntopics;
	for (int32_t i = 0; !changed && i < n; i++)
		changed = strcmp(t[i], m->topics[i]) != 0;
	for (int32_t i = 0; i < m->ntopics; i++)
		free(m->topics[i]);
	free(m->topics);
	m->topics = t;
	m->ntopics = n;
	return changed;
}

/* The subscription of the request, sorted; whether it differs from m's. */
static bool
update_topics(cg_member *m, const ch_ConsumerGroupHeartbeatRequest *rq)
{
	if (rq->SubscribedTopicNames_n < 0)
		return false;
	return ch_coord_cg_member_set_topics(m, rq->SubscribedTopicNames,
					     rq->SubscribedTopicNames_n);
}

static void
respond_ok(ch_coord_cg *cg, void *token, const cg_member *m, bool with_assignment)
{
	ch_ConsumerGroupHeartbeatResponse r;
	ch_ConsumerGroupHeartbeatResponse_init(&r);
	r.MemberId = ch_str_c(m->id);
	r.MemberEpoch = m->epoch;
	r.HeartbeatIntervalMs = cg->cfg.heartbeat_interval_ms;
	ch_ConsumerGroupHeartbeatResponse_Assignment a = {NULL, 0};
	ch_ConsumerGroupHeartbeatResponse_TopicPartitions *tps = NULL;
	int32_t *parts = NULL;
	if (with_assignment) {
		const cg_set *s = &m->assigned;
		tps = ch_xcalloc((size_t)(s->n ? s->n : 1), sizeof *tps);
		parts = ch_xmalloc((size_t)(s->n ? s->n : 1) * sizeof *parts);
		for (int32_t k = 0; k < s->n; k++) {
			parts[k] = s->v[k].partition;
			if (k == 0 || !ch_uuid_eq(&s->v[k].topic, &s->v[k - 1].topic)) {
				tps[a.TopicPartitions_n++] =
					(ch_ConsumerGroupHeartbeatResponse_TopicPartitions){
						s->v[k].topic, parts + k, 0};
			}
			tps[a.TopicPartitions_n - 1].Partitions_n++;
		}
		a.TopicPartitions = tps;
		r.Assignment = &a;
	}
	ch_coord_cg_store_flush(cg, m->g->id, token, &r);
	free(tps);
	free(parts);
}

cg_member *
ch_coord_cg_member_replace(cg_group *g, cg_member *old, ch_str new_id)
{
	ch_coord_cg *cg = g->cg;
	cg_member tmp = *old;
	ch_map_remove(&g->members, old->id, strlen(old->id));
	g->store_scan = true;
	ch_map_remove(&g->statics, old->instance_id, strlen(old->instance_id));
	ch_coord_cg_timer_cancel(cg, &old->session);
	ch_coord_cg_timer_cancel(cg, &old->rebalance);
	ch_coord_cg_timer_cancel(cg, &old->join);
	ch_coord_cg_timer_cancel(cg, &old->sync);
	cg_member *stale = ch_coord_cg_member_find(g, new_id);
	if (stale)
		ch_coord_cg_member_remove(g, stale);
	cg_member *m = ch_coord_cg_member_add(g, new_id);
	char *id = m->id;
	cg_timer s = m->session, rb = m->rebalance, jn = m->join, sy = m->sync;
	free(m->regex); /* the old one's is taken over */
	*m = tmp;
	m->id = id;
	m->session = s;
	m->rebalance = rb;
	m->join = jn;
	m->sync = sy;
	m->epoch = 0;
	m->previous_epoch = 0;
	ch_coord_cg_owners_drop(g, &m->assigned);
	ch_coord_cg_owners_drop(g, &m->revoking);
	ch_coord_cg_owners_put(g, m, &m->assigned);
	ch_coord_cg_owners_put(g, m, &m->revoking);
	free(old);
	return m;
}

/* Whether any classic group (with members or not: Kafka keeps an empty one,
 * e.g. of a simple consumer's commits, in its group map) holds the id. */
static bool
classic_group_known(const ch_coord_cg *cg, ch_str group_id)
{
	if (cg->ops.classic_group_known)
		return cg->ops.classic_group_known(cg->ops.ud, group_id);
	return cg->ops.classic_group_exists && cg->ops.classic_group_exists(cg->ops.ud, group_id);
}

/* Kafka's consumerGroupLeave and consumerGroupStaticMemberGroupLeave. */
static void
heartbeat_leave(ch_coord_cg *cg, const ch_coord_req *req,
		const ch_ConsumerGroupHeartbeatRequest *rq)
{
	cg_group *g = ch_coord_cg_group_find(cg, rq->GroupId);
	if (!g) {
		/* Kafka 4.4's words (conformance_kafka): "Group", not
		 * "Consumer group", for a leave; any classic group, even one
		 * without members, is not a consumer group. */
		respond_error(cg, req->token, CH_KERR_GROUP_ID_NOT_FOUND,
			      classic_group_known(cg, rq->GroupId)
				      ? "Group %.*s is not a consumer group."
				      : "Group %.*s not found.",
			      (int)rq->GroupId.len, rq->GroupId.p);
		return;
	}
	cg_member *m;
	if (rq->InstanceId.len < 0) {
		m = ch_coord_cg_member_find(g, rq->MemberId);
		if (!m) {
			respond_error(cg, req->token, CH_KERR_UNKNOWN_MEMBER_ID,
				      "Member %.*s is not a member of group %s.",
				      (int)rq->MemberId.len, rq->MemberId.p, g->id);
			return;
		}
	} else {
		m = ch_map_get(&g->statics, rq->InstanceId.p, (size_t)rq->InstanceId.len);
		if (!m) {
			respond_error(cg, req->token, CH_KERR_UNKNOWN_MEMBER_ID,
				      "Instance id %.*s is unknown.", (int)rq->InstanceId.len,
				      rq->InstanceId.p);
			return;
		}
		if (!ch_str_eq_c(rq->MemberId, m->id)) {
			respond_error(
				cg, req->token, CH_KERR_FENCED_INSTANCE_ID,
				"Static member %.*s with instance id %.*s was fenced by member "
				"%s.",
				(int)rq->MemberId.len, rq->MemberId.p, (int)rq->InstanceId.len,
				rq->InstanceId.p, m->id);
			return;
		}
	}
	ch_ConsumerGroupHeartbeatResponse r;
	ch_ConsumerGroupHeartbeatResponse_init(&r);
	r.MemberId = rq->MemberId;
	r.MemberEpoch = rq->MemberEpoch;
	if (rq->MemberEpoch == STATIC_LEAVE_EPOCH && m->instance_id) {
		/* Temporarily gone: keeps its assignment (nobody else gets it)
		 * until it rejoins with its instance id or its session expires. */
		ch_coord_cg_log(
			cg, CH_LOG_INFO,
			"[GroupId %s] Static Member %s with instance id %s temporarily left the "
			"consumer group.",
			g->id, m->id, m->instance_id);
		ch_coord_cg_owners_drop(g, &m->revoking);
		ch_coord_cg_set_free(&m->revoking);
		m->epoch = STATIC_LEAVE_EPOCH; /* setMemberEpoch: the previous one stays */
		/* Kafka 4.4 then writes the assignment epochs as 0. */
		ch_map_free(&m->aepochs);
		ch_map_init(&m->aepochs);
		ch_coord_cg_epochs_sync(m, 0);
		ch_coord_cg_member_touch(g, m); /* its current assignment record says -2 */
		m->state = CH_COORD_CG_MEMBER_STABLE;
		ch_coord_cg_timer_cancel(cg, &m->rebalance);
	} else {
		ch_coord_cg_log(cg, CH_LOG_INFO, "[GroupId %s] Member %s left the consumer group.",
				g->id, m->id);
		ch_coord_cg_fence_and_flush(g, m, req->token, &r);
		return;
	}
	(void)req->now;
	ch_coord_cg_store_flush(cg, g->id, req->token, &r);
}

static void
heartbeat(ch_coord_cg *cg, const ch_coord_req *req)
{
	const ch_ConsumerGroupHeartbeatRequest *rq = req->body;
	int64_t now = req->now;
	cg->now = now;
	char buf[512];
	int16_t err;
	const char *bad = request_invalid(cg, rq, req->version, &err, buf, sizeof buf);
	if (bad) {
		respond_error(cg, req->token, err, "%s", bad);
		return;
	}
	if (rq->MemberEpoch == LEAVE_EPOCH || rq->MemberEpoch == STATIC_LEAVE_EPOCH) {
		heartbeat_leave(cg, req, rq);
		return;
	}

	/* getOrMaybeCreateConsumerGroup */
	bool join = rq->MemberEpoch == 0;
	cg_group *g = ch_coord_cg_group_find(cg, rq->GroupId);
	if (!g && cg->ops.classic_group_exists &&
	    cg->ops.classic_group_exists(cg->ops.ud, rq->GroupId)) {
		if (join)
			g = ch_coord_cg_upgrade(cg, rq->GroupId, &err, buf, sizeof buf);
		else
			snprintf(buf, sizeof buf, "Group %.*s is not a consumer group.",
				 (int)rq->GroupId.len, rq->GroupId.p);
		if (!g) {
			respond_error(cg, req->token, join ? err : CH_KERR_GROUP_ID_NOT_FOUND, "%s",
				      buf);
			return;
		}
	}
	if (!g && !join) {
		respond_error(cg, req->token, CH_KERR_GROUP_ID_NOT_FOUND,
			      classic_group_known(cg, rq->GroupId)
				      ? "Group %.*s is not a consumer group."
				      : "Consumer group %.*s not found.",
			      (int)rq->GroupId.len, rq->GroupId.p);
		return;
	}
	bool created = !g;
	if (!g)
		g = ch_coord_cg_group_create(cg, rq->GroupId);

	/* throwIfConsumerGroupIsFull */
	if ((int64_t)g->members.n >= cg->cfg.max_size &&
	    (rq->MemberId.len <= 0 || !ch_coord_cg_member_find(g, rq->MemberId))) {
		respond_error(cg, req->token, CH_KERR_GROUP_MAX_SIZE_REACHED,
			      "The consumer group has reached its maximum capacity of %d members.",
			      cg->cfg.max_size);
		goto drop_new;
	}

	char idbuf[CH_UUID_STR_LEN + 1];
	ch_str member_id = rq->MemberId;
	if (member_id.len <= 0) {
		ch_uuid u;
		cg->ops.random_uuid(cg->ops.ud, &u);
		ch_uuid_to_base64(&u, idbuf);
		member_id = ch_str_c(idbuf);
	}
	cg_set owned_buf;
	const cg_set *owned = owned_from_request(rq, &owned_buf);
	/* A regex new to the group is compiled first; refused (Kafka's
	 * maybeUpdateRegularExpressions) once the member is found, before
	 * anything changes. */
	char rxmsg[512];
	int16_t rx_err = ch_coord_cg_regex_check(g, rq->SubscribedTopicRegex, rxmsg, sizeof rxmsg);
	cg_member *m;
	bool subscription_changed = false;
	int16_t e = 0;
	if (rq->InstanceId.len < 0) {
		/* getOrMaybeSubscribeDynamicConsumerGroupMember */
		m = ch_coord_cg_member_find(g, member_id);
		if (!m && !join) {
			respond_error(cg, req->token, CH_KERR_UNKNOWN_MEMBER_ID,
				      "Member %.*s is not a member of group %s.",
				      (int)member_id.len, member_id.p, g->id);
			goto drop_owned;
		}
		if (m && (e = check_epoch(m, rq->MemberEpoch, owned, buf, sizeof buf))) {
			respond_error(cg, req->token, e, "%s", buf);
			goto drop_owned;
		}
		if (rx_err) {
			respond_error(cg, req->token, rx_err, "%s", rxmsg);
			goto drop_owned;
		}
		if (!m) {
			m = ch_coord_cg_member_add(g, member_id);
			ch_coord_cg_log(cg, CH_LOG_INFO,
					"[GroupId %s] Member %s joins the consumer group using the "
					"consumer "
					"protocol.",
					g->id, m->id);
		}
	} else {
		/* getOrMaybeSubscribeStaticConsumerGroupMember */
		cg_member *old =
			ch_map_get(&g->statics, rq->InstanceId.p, (size_t)rq->InstanceId.len);
		if (join) {
			if (old && old->epoch != STATIC_LEAVE_EPOCH) {
				respond_error(
					cg, req->token, CH_KERR_UNRELEASED_INSTANCE_ID,
					"Static member %.*s with instance id %.*s cannot join the "
					"group because the instance id is owned by %s member.",
					(int)member_id.len, member_id.p, (int)rq->InstanceId.len,
					rq->InstanceId.p, old->id);
				goto drop_owned;
			}
			if (rx_err) {
				respond_error(cg, req->token, rx_err, "%s", rxmsg);
				goto drop_owned;
			}
			if (!old) {
				/* a join (epoch 0) under a known id: accepted (check_epoch) */
				m = ch_coord_cg_member_find(g, member_id);
				if (!m)
					m = ch_coord_cg_member_add(g, member_id);
				ch_coord_cg_log(
					cg, CH_LOG_INFO,
					"[GroupId %s] Static member %s with instance id %.*s joins "
					"the "
					"consumer group using the consumer protocol.",
					g->id, m->id, (int)rq->InstanceId.len, rq->InstanceId.p);
			} else {
				char *old_id = ch_xstrdup(old->id);
				m = ch_coord_cg_member_replace(g, old, member_id);
				ch_coord_cg_log(
					cg, CH_LOG_INFO,
					"[GroupId %s] Static member with instance id %s re-joins "
					"the "
					"consumer group using the consumer protocol. Created a new "
					"member %s to replace the existing member %s.",
					g->id, m->instance_id, m->id, old_id);
				free(old_id);
			}
		} else {
			if (!old) {
				respond_error(cg, req->token, CH_KERR_UNKNOWN_MEMBER_ID,
					      "Instance id %.*s is unknown.",
					      (int)rq->InstanceId.len, rq->InstanceId.p);
				goto drop_owned;
			}
			if (!ch_str_eq(member_id, ch_str_c(old->id))) {
				respond_error(
					cg, req->token, CH_KERR_FENCED_INSTANCE_ID,
					"Static member %.*s with instance id %.*s was fenced by "
					"member %s.",
					(int)member_id.len, member_id.p, (int)rq->InstanceId.len,
					rq->InstanceId.p, old->id);
				goto drop_owned;
			}
			if ((e = check_epoch(old, rq->MemberEpoch, owned, buf, sizeof buf))) {
				respond_error(cg, req->token, e, "%s", buf);
				goto drop_owned;
			}
			if (rx_err) {
				respond_error(cg, req->token, rx_err, "%s", rxmsg);
				goto drop_owned;
			}
			m = old;
		}
		if (!m->instance_id) {
			m->instance_id = ch_coord_cg_dup_str(rq->InstanceId);
		}
		if (!ch_map_get(&g->statics, m->instance_id, strlen(m->instance_id)))
			ch_map_put(&g->statics, m->instance_id, strlen(m->instance_id), m);
	}

	/* 1. The member's fields; the group epoch moves when the group is new
	 * or a subscription changed, or the subscribed topics changed. */
	ch_coord_cg_member_touch(g, m);
	if (m->classic) { /* setClassicMemberMetadata(null): it speaks the consumer protocol now */
		ch_coord_cg_classic_free(m->classic);
		m->classic = NULL;
		ch_coord_cg_timer_cancel(cg, &m->join);
		ch_coord_cg_timer_cancel(cg, &m->sync);
	}
	maybe_update(&m->rack, rq->RackId);
	if (rq->RebalanceTimeoutMs != -1)
		m->rebalance_timeout_ms = rq->RebalanceTimeoutMs;
	maybe_update(&m->server_assignor, rq->ServerAssignor);
	bool regex_bump = false;
	if (rq->SubscribedTopicRegex.len >= 0) {
		char *old_regex = m->regex;
		m->regex = ch_coord_cg_dup_str(rq->SubscribedTopicRegex);
		regex_bump = ch_coord_cg_regex_member_update(g, m, old_regex);
		free(old_regex);
	}
	subscription_changed = update_topics(m, rq);
	free(m->client_id);
	m->client_id =
		ch_coord_cg_dup_str(req->client_id.len >= 0 ? req->client_id : CH_STR_LIT(""));
	free(m->client_host);
	m->client_host = ch_xstrdup(req->client_host ? req->client_host : "");

	bool bump = g->epoch == 0 || subscription_changed || regex_bump;
	if (ch_coord_cg_regex_maybe_refresh(g, req->token, now))
		bump = subscription_changed = true; /* a regex's topics changed */
	if (bump || g->meta_stale) {
		if (ch_coord_cg_meta_refresh(g))
			bump = true;
		if (bump)
			ch_coord_cg_bump_epoch(g, subscription_changed ? "subscription changed"
						  : created            ? "new group"
								       : "metadata changed");
	}

	/* 2. The target assignment follows the group epoch. */
	if (!ch_coord_cg_target_follow(g, buf, sizeof buf)) {
		respond_error(cg, req->token, CH_KERR_UNKNOWN_SERVER_ERROR, "%s", buf);
		goto drop_owned;
	}

	/* 3. Reconcile the member towards it. */
	/* A (re)joining client owns nothing and has no older answer to take
	 * partitions from: its empty list is the truth for what it revokes now
	 * (else a static successor would wait at epoch 0); what it is handed
	 * back it has yet to take. */
	bool joining = rq->MemberEpoch == 0;
	if (joining || (owned && is_subset(&m->assigned, owned)))
		m->acked = true;
	cg_set before;
	ch_coord_cg_set_copy(&m->assigned, &before);
	ch_coord_cg_maybe_reconcile(g, m, owned, now);
	if (joining)
		m->acked = m->assigned.n == 0;
	ch_coord_cg_timer_set(cg, &m->session, now + cg->cfg.session_timeout_ms);

	/* The assignment goes out on a full request (a join, or every
	 * non-optional field set: the subscription by names or by regex) or
	 * when it changed. */
	bool full =
		rq->MemberEpoch == 0 ||
		(rq->RebalanceTimeoutMs != -1 &&
		 (rq->SubscribedTopicNames_n >= 0 || rq->SubscribedTopicRegex.len >= 0) && owned);
	respond_ok(cg, req->token, m, full || !ch_coord_cg_set_eq(&before, &m->assigned));
	ch_coord_cg_set_free(&before);
	ch_coord_cg_set_free(&owned_buf);
	return;

drop_owned:
	ch_coord_cg_set_free(&owned_buf);
drop_new:
	if (created && g->members.n == 0) {
		ch_map_remove(&cg->groups, g->id, strlen(g->id));
		ch_coord_cg_group_free(cg, g);
	}
}

void
ch_coord_cg_heartbeat(ch_coord_cg *cg, const ch_coord_req *req)
{
	/* The request may be gone once answered: the group id is copied. */
	const ch_ConsumerGroupHeartbeatRequest *rq = req->body;
	char *id = rq->GroupId.len > 0 ? ch_coord_cg_dup_str(rq->GroupId) : NULL;
	heartbeat(cg, req);
	/* What an error answer left changed (a group created, then refused). */
	if (id)
		ch_coord_cg_store_flush(cg, id, NULL, NULL);
	free(id);
}

void
ch_coord_cg_metadata_changed(ch_coord_cg *cg)
{
	cg->topics_version++; /* regexes see new topics at their next refresh */
	ch_map_foreach (&cg->groups, e)
		((cg_group *)e->value)->meta_stale = true;
}

/* ---- timers ---------------------------------------------------------------- */

void
ch_coord_cg_fence_and_flush(cg_group *g, cg_member *m, void *token,
			    const ch_ConsumerGroupHeartbeatResponse *answer)
{
	ch_coord_cg *cg = g->cg;
	char *id = ch_xstrdup(g->id);
	ch_coord_cg_fence_member(g, m); /* g may be gone: downgraded */
	ch_coord_cg_store_flush(cg, id, token, answer);
	free(id);
}

int64_t
ch_coord_cg_next_deadline(const ch_coord_cg *cg)
{
	const ch_heap_node *n = ch_heap_top(&cg->timers);
	return n ? n->deadline : INT64_MAX;
}

void
ch_coord_cg_tick(ch_coord_cg *cg, int64_t now)
{
	cg->now = now;
	ch_map_foreach_safe(&cg->stores, e, tmp)
	{
		cg_store *st = e->value;
		if (st->dirty)
			ch_coord_cg_store_flush(cg, st->group_id, NULL, NULL);
	}
	ch_heap_node *n;
	while ((n = ch_heap_top(&cg->timers)) && n->deadline <= now) {
		cg_timer *t = (cg_timer *)n;
		ch_heap_remove(&cg->timers, n);
		if (t->kind == CG_TIMER_ASSIGN) {
			/* The interval ended: the changes within it get one target. */
			char err[256];
			if (ch_coord_cg_target_follow(t->g, err, sizeof err))
				ch_coord_cg_store_flush(cg, t->g->id, NULL, NULL);
			continue;
		}
		cg_member *m = t->m;
		cg_group *g = m->g;
		if (t->kind == CG_TIMER_SESSION) {
			ch_coord_cg_log(
				cg, CH_LOG_INFO,
				"[GroupId %s] Member %s fenced from the group because its session "
				"expired.",
				g->id, m->id);
			ch_coord_cg_fence_and_flush(g, m, NULL, NULL);
		} else if (t->kind == CG_TIMER_JOIN || t->kind == CG_TIMER_SYNC) {
			ch_coord_cg_classic_timer(cg, t);
		} else if (m->epoch == m->rebalance_epoch) {
			ch_coord_cg_log(
				cg, CH_LOG_INFO,
				"[GroupId %s] Member %s fenced from the group because it failed to "
				"transition from epoch %d within %dms.",
				g->id, m->id, m->epoch, m->rebalance_timeout_ms);
			ch_coord_cg_fence_and_flush(g, m, NULL, NULL);
		}
	}
}

/* ---- introspection ----------------------------------------------------------- */

static ch_coord_cg_state
group_state(const cg_group *g)
{
	if (g->members.n == 0)
		return CH_COORD_CG_EMPTY;
	if (g->epoch != g->assignment_epoch)
		return CH_COORD_CG_ASSIGNING;
	ch_map_foreach (&g->members, e) {
		const cg_member *m = e->value;
		if (m->state != CH_COORD_CG_MEMBER_STABLE || m->epoch != g->assignment_epoch)
			return CH_COORD_CG_RECONCILING;
	}
	return CH_COORD_CG_STABLE;
}

bool
ch_coord_cg_group_get(const ch_coord_cg *cg, ch_str group_id, ch_coord_cg_group_view *out)
{
	const cg_group *g = ch_coord_cg_group_find(cg, group_id);
	if (!g)
		return false;
	*out = (ch_coord_cg_group_view){
		.group_id = g->id,
		.state = group_state(g),
		.epoch = g->epoch,
		.assignment_epoch = g->assignment_epoch,
		.members = (int32_t)g->members.n,
		.assignor = ch_assign_name(preferred_assignor(g)),
	};
	return true;
}

void
ch_coord_cg_foreach_group(const ch_coord_cg *cg,
			  void (*fn)(void *ud, const ch_coord_cg_group_view *g), void *ud)
{
	ch_map_foreach (&cg->groups, e) {
		ch_coord_cg_group_view v;
		const cg_group *g = e->value;
		ch_coord_cg_group_get(cg, ch_str_c(g->id), &v);
		fn(ud, &v);
	}
}

/* The member a commit or fetch names, or NULL with UNKNOWN_MEMBER_ID's
 * message in msg. */
static const cg_member *
known_member(const cg_group *g, ch_str member_id, char *msg, size_t cap)
{
	const cg_member *m = member_id.len >= 0 ? ch_coord_cg_member_find(g, member_id) : NULL;
	if (!m)
		snprintf(msg, cap, "Member %.*s is not a member of group %s.",
			 (int)(member_id.len > 0 ? member_id.len : 0),
			 member_id.p ? member_id.p : "", g->id);
	return m;
}

static int16_t
stale_epoch(const cg_member *m, int32_t epoch, char *msg, size_t cap)
{
	if (epoch == m->epoch)
		return 0;
	snprintf(msg, cap,
		 "The received member epoch %d does not match the expected member epoch %d.", epoch,
		 m->epoch);
	return CH_KERR_STALE_MEMBER_EPOCH;
}

/* ConsumerGroup.validateMemberEpoch for a classic member. */
static int16_t
classic_generation(const cg_member *m, int32_t generation, char *msg, size_t cap)
{
	if (generation == m->epoch)
		return 0;
	snprintf(msg, cap,
		 "The received generation id %d does not match the expected member epoch %d.",
		 generation, m->epoch);
	return CH_KERR_ILLEGAL_GENERATION;
}

int16_t
ch_coord_cg_validate_commit(const ch_coord_cg *cg, ch_str group_id, ch_str member_id, int32_t epoch,
			    int16_t version, const ch_coord_cg_commit_tp *tps, int32_t ntps,
			    char *msg, size_t cap)
{
	const cg_group *g = ch_coord_cg_group_find(cg, group_id);
	if (!g || (epoch < 0 && g->members.n == 0))
		return 0;
	const cg_member *m = known_member(g, member_id, msg, cap);
	if (!m)
		return CH_KERR_UNKNOWN_MEMBER_ID;
	if (m->classic) /* any version; its generation is its member epoch */
		return classic_generation(m, epoch, msg, cap);
	if (version < 9) {
		snprintf(msg, cap,
			 "OffsetCommit version 9 or above must be used by members using "
			 "the consumer group protocol");
		return CH_KERR_UNSUPPORTED_VERSION;
	}
	if (epoch == m->epoch)
		return 0;
	if (epoch > m->epoch) {
		snprintf(msg, cap,
			 "Received member epoch %d is newer than current member epoch %d.", epoch,
			 m->epoch);
		return CH_KERR_STALE_MEMBER_EPOCH;
	}
	/* KIP-1251 (createAssignmentEpochValidator): an older epoch commits
	 * what it held at that epoch. */
	char k[CG_TP_KEY_LEN];
	for (int32_t i = 0; i < ntps; i++) {
		const ch_coord_cg_commit_tp *c = &tps[i];
		ch_coord_cg_tp tp = {c->topic, c->partition};
		const ch_map_entry *e = NULL;
		if (c->known && (ch_coord_cg_set_has(&m->assigned, &tp) ||
				 ch_coord_cg_set_has(&m->revoking, &tp))) {
			cg_tp_key(&tp, k);
			e = ch_map_find(&m->aepochs, k, sizeof k);
		}
		int32_t name_len = c->name.len > 0 ? c->name.len : 0;
		if (!e) {
			snprintf(msg, cap,
				 "Partition %.*s-%d is not assigned or pending revocation for "
				 "member.",
				 (int)name_len, c->name.p ? c->name.p : "", c->partition);
			return CH_KERR_STALE_MEMBER_EPOCH;
		}
		int32_t assigned_at = (int32_t)(intptr_t)e->value;
		if (epoch < assigned_at) {
			snprintf(msg, cap,
				 "Received member epoch %d is older than assignment epoch %d for "
				 "partition %.*s-%d.",
				 epoch, assigned_at, (int)name_len, c->name.p ? c->name.p : "",
				 c->partition);
			return CH_KERR_STALE_MEMBER_EPOCH;
		}
	}
	return 0;
}

int16_t
ch_coord_cg_validate_fetch(const ch_coord_cg *cg, ch_str group_id, ch_str member_id, int32_t epoch,
			   char *msg, size_t cap)
{
	const cg_group *g = ch_coord_cg_group_find(cg, group_id);
	if (!g || (member_id.len < 0 && epoch < 0))
		return 0;
	const cg_member *m = known_member(g, member_id, msg, cap);
	if (!m)
		return CH_KERR_UNKNOWN_MEMBER_ID;
	if (m->classic)
		return classic_generation(m, epoch, msg, cap);
	return stale_epoch(m, epoch, msg, cap);
}

bool
ch_coord_cg_delete_if_empty(ch_coord_cg *cg, ch_str group_id)
{
	cg_group *g = ch_coord_cg_group_find(cg, group_id);
	if (!g)
		return true;
	if (g->members.n)
		return false;
	char *id = ch_xstrdup(g->id);
	ch_map_remove(&cg->groups, g->id, strlen(g->id));
	ch_coord_cg_group_free(cg, g);
	ch_coord_cg_store_flush(cg, id, NULL, NULL); /* the group's tombstones */
	free(id);
	return true;
}

void
ch_coord_cg_foreach_member(const ch_coord_cg *cg, ch_str group_id,
			   void (*fn)(void *ud, const ch_coord_cg_member_view *m), void *ud)
{
	const cg_group *g = ch_coord_cg_group_find(cg, group_id);
	if (!g)
		return;
	ch_map_foreach (&g->members, e) {
		const cg_member *m = e->value;
		ch_coord_cg_member_view v = {
			.member_id = m->id,
			.instance_id = m->instance_id,
			.rack = m->rack,
			.client_id = m->client_id ? m->client_id : "",
			.client_host = m->client_host ? m->client_host : "",
			.classic = m->classic != NULL,
			.topics = (const char *const *)m->topics,
			.ntopics = m->ntopics,
			.regex = m->regex,
			.epoch = m->epoch,
			.previous_epoch = m->previous_epoch,
			.state = m->state,
			.assigned = m->assigned.v,
			.assigned_epochs = m->assigned_ep,
			.nassigned = m->assigned.n,
			.revoking = m->revoking.v,
			.revoking_epochs = m->revoking_ep,
			.nrevoking = m->revoking.n,
			.target = m->target.v,
			.ntarget = m->target.n,
		};
		fn(ud, &v);
	}
}
