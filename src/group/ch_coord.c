/*
 * ch_coord.c: membership: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, the
 * group state machine and its timers. Offsets are in ch_coord_offsets.c,
 * admin requests in ch_coord_admin.c, records in ch_coord_store.c.
 *
 * The behaviour follows Apache Kafka's classic GroupCoordinator; comments
 * name the Kafka function a piece mirrors where that helps reading both.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"
#include "common/ch_hash.h"
#include "group/ch_coord_int.h"
#include "proto/generated/ch_errors.h"

static const char *const state_names[] = {"Empty", "PreparingRebalance", "CompletingRebalance",
					  "Stable", "Dead"};
_Static_assert(CH_ARRAY_LEN(state_names) == CH_COORD_GROUP_DEAD + 1, "a name for every state");

const char *
ch_coord_group_state_name(ch_coord_group_state s)
{
	return (unsigned)s < CH_ARRAY_LEN(state_names) ? state_names[s] : "Unknown";
}

static const char *const cause_names[] = {
	[CH_COORD_CAUSE_NONE] = "none",
	[CH_COORD_CAUSE_MEMBER_JOINED] = "member joined",
	[CH_COORD_CAUSE_METADATA_CHANGED] = "member metadata changed",
	[CH_COORD_CAUSE_LEADER_REJOINED] = "leader rejoined",
	[CH_COORD_CAUSE_STATIC_REPLACED] = "static member replaced",
	[CH_COORD_CAUSE_MEMBER_LEFT] = "member left",
	[CH_COORD_CAUSE_SESSION_TIMEOUT] = "session timeout",
	[CH_COORD_CAUSE_SYNC_TIMEOUT] = "sync timeout",
	[CH_COORD_CAUSE_STORE_FAILED] = "assignment store failed",
	[CH_COORD_CAUSE_JOIN_DONE] = "join phase done",
	[CH_COORD_CAUSE_ASSIGNMENT_STORED] = "assignment stored",
	[CH_COORD_CAUSE_LOADED] = "loaded",
	[CH_COORD_CAUSE_JOIN_REFUSED] = "join refused",
	[CH_COORD_CAUSE_DELETED] = "deleted",
};
/* The checker and ch_coord_cause_name take DELETED for the last cause. */
_Static_assert(CH_ARRAY_LEN(cause_names) == CH_COORD_CAUSE_DELETED + 1,
	       "a name for every cause, DELETED last");

const char *
ch_coord_cause_name(ch_coord_cause c)
{
	return (unsigned)c < CH_ARRAY_LEN(cause_names) && cause_names[c] ? cause_names[c] : "?";
}

coord_reason
ch_coord_reason_make(ch_coord_cause cause, const char *fmt, ...)
{
	coord_reason r;
	r.cause = cause;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r.detail, sizeof(r.detail), fmt, ap);
	va_end(ap);
	return r;
}

void
ch_coord_config_defaults(ch_coord_config *c)
{
	c->min_session_timeout_ms = 6000;
	c->max_session_timeout_ms = 1800000;
	c->initial_rebalance_delay_ms = 3000;
	c->initial_rebalance_quiet_ms = 500;
	c->join_waits_for_sync = true;
	c->max_size = INT32_MAX;
	c->offset_metadata_max_bytes = 4096;
	c->offsets_retention_ms = 10080LL * 60 * 1000;
	c->offsets_retention_check_ms = 600000;
	c->offsets_partitions = 50;
	c->new_member_join_timeout_ms = 300000;
	c->rebalance_history_size = 100;
}

/* ---- small helpers -------------------------------------------------------- */

char *
ch_coord_str_dup(ch_str s)
{
	return s.len < 0 ? NULL : ch_xstrndup(s.p ? s.p : "", (size_t)s.len);
}

/* True for a null or zero-length string (an absent id). */
static bool
str_is_empty(ch_str s)
{
	return s.len <= 0;
}

/* A NUL-terminated string as a ch_str (NULL stays null). */
static ch_str
cstr(const char *s)
{
	return ch_str_c(s);
}

/* (Re-)arms t on the coordinator's heap at deadline (O(log n)). */
static void
timer_set(ch_coord *c, coord_timer *t, int64_t deadline)
{
	ch_heap_set(&c->timers, &t->node, deadline);
}

/* Disarms t; a timer not armed is left alone. */
static void
timer_cancel(ch_coord *c, coord_timer *t)
{
	ch_heap_remove(&c->timers, &t->node);
}

void
ch_coord_log(const ch_coord *c, ch_log_level level, const char *fmt, ...)
{
	if (!c->ops.log || (c->ops.log_enabled && !c->ops.log_enabled(c->ops.ud, level)))
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	c->ops.log(c->ops.ud, level, line);
}

#ifdef CH_COORD_CHECKS
void
ch_coord_never(const ch_coord *c, const char *where)
{
	ch_coord_log(c, CH_LOG_ERROR, "a state table cell that cannot happen was reached in %s",
		     where);
	abort();
}
#endif

/* A fresh member-id UUID from the shell's randomness, as 36 hex chars and a NUL. */
static void
uuid_for(ch_coord *c, char *out /* 37 bytes */)
{
	ch_uuid u;
	c->ops.random_uuid(c->ops.ud, &u);
	ch_uuid_to_hex(&u, out);
}

/* Kafka: clientId-UUID for dynamic members, groupInstanceId-UUID for static. */
static char *
new_member_id(ch_coord *c, ch_str prefix)
{
	char uuid[37];
	uuid_for(c, uuid);
	size_t n = prefix.len > 0 ? (size_t)prefix.len : 0;
	char *id = ch_xmalloc(n + 1 + 36 + 1);
	if (n)
		memcpy(id, prefix.p, n);
	id[n] = '-';
	memcpy(id + n + 1, uuid, 37);
	return id;
}

/* ---- groups ----------------------------------------------------------------- */

ch_coord_group *
ch_coord_group_find(const ch_coord *c, ch_str id)
{
	return coord_map_get(&c->groups, id);
}

int32_t
ch_coord_partition_for(const ch_coord *c, ch_str group_id)
{
	return ch_group_partition(group_id.p ? group_id.p : "",
				  group_id.len > 0 ? (size_t)group_id.len : 0,
				  c->cfg.offsets_partitions);
}

ch_coord_load_state
ch_coord_partition_state(const ch_coord *c, int32_t partition)
{
	if (partition < 0 || partition >= c->cfg.offsets_partitions)
		return CH_COORD_UNLOADED;
	return (ch_coord_load_state)c->load_state[partition];
}

int32_t
ch_coord_partition_count(const ch_coord *c, ch_coord_load_state s)
{
	int32_t n = 0;
	for (int32_t p = 0; p < c->cfg.offsets_partitions; p++)
		n += c->load_state[p] == s;
	return n;
}

const char *
ch_coord_load_state_name(ch_coord_load_state s)
{
	switch (s) {
	case CH_COORD_UNLOADED:
		return "Unloaded";
	case CH_COORD_LOADING:
		return "Loading";
	case CH_COORD_LOADED:
		return "Loaded";
	case CH_COORD_LOAD_FAILED:
		return "LoadFailed";
	}
	return "?";
}

int16_t
ch_coord_load_error(const ch_coord *c, ch_str group_id)
{
	switch (ch_coord_partition_state(c, ch_coord_partition_for(c, group_id))) {
	case CH_COORD_LOADED:
		return CH_KERR_NONE;
	case CH_COORD_LOADING:
		return CH_KERR_COORDINATOR_LOAD_IN_PROGRESS;
	default:
		return CH_KERR_NOT_COORDINATOR;
	}
}

ch_coord_group *
ch_coord_group_get_or_create(ch_coord *c, ch_str id, int64_t now)
{
	ch_coord_group *g = ch_coord_group_find(c, id);
	if (g)
		return g;
	g = ch_xcalloc(1, sizeof(*g));
	g->coord = c;
	ch_map_entry *e = ch_map_put(&c->groups, id.p ? id.p : "", (size_t)CH_MAX(id.len, 0), g);
	g->group_id = e->key;
	g->state = CH_COORD_GROUP_EMPTY;
	g->state_ts = now;
	ch_map_init(&g->members);
	ch_map_init(&g->static_members);
	ch_map_init(&g->pending);
	ch_map_init(&g->protocol_votes);
	ch_map_init(&g->offsets);
	g->join_timer.kind = T_GROUP_JOIN;
	g->join_timer.owner = g;
	g->sync_timer.kind = T_GROUP_SYNC;
	g->sync_timer.owner = g;
	g->partition = ch_coord_partition_for(c, id);
	return g;
}

void
ch_coord_group_set_state(ch_coord_group *g, ch_coord_group_state s, int64_t now,
			 const coord_reason *why)
{
	if (g->state == s)
		return;
	/* Replay and a group that a refused JoinGroup created and drops again
	 * would be one line per group: DEBUG. */
	ch_log_level level =
		why->cause == CH_COORD_CAUSE_LOADED || why->cause == CH_COORD_CAUSE_JOIN_REFUSED
			? CH_LOG_DEBUG
			: CH_LOG_INFO;
	ch_coord_log(g->coord, level, "group %s: %s -> %s (generation %d): %s", g->group_id,
		     ch_coord_group_state_name(g->state), ch_coord_group_state_name(s),
		     g->generation, why->detail);
	ch_coord_history_phase(g, now, s, why->cause);
	if (s == CH_COORD_GROUP_PREPARING_REBALANCE)
		ch_coord_history_prepare(g, now, why->cause, why->detail);
	else if (s == CH_COORD_GROUP_STABLE || s == CH_COORD_GROUP_EMPTY ||
		 s == CH_COORD_GROUP_DEAD)
		ch_coord_history_end(g, now, s);
	if (s == CH_COORD_GROUP_PREPARING_REBALANCE && (unsigned)why->cause < CH_COORD_CAUSE_N)
		g->coord->stats.rebalances[why->cause]++;
	else if (s == CH_COORD_GROUP_STABLE && g->state == CH_COORD_GROUP_COMPLETING_REBALANCE)
		g->coord->stats.completed_rebalances++;
	if (s == CH_COORD_GROUP_PREPARING_REBALANCE) {
		g->rebalance_reason = *why;
		g->join_wait = JOIN_WAIT_MEMBERS;
	} else {
		g->join_wait = JOIN_WAIT_NONE;
		memset(&g->initial, 0, sizeof(g->initial));
	}
	g->state = s;
	g->state_ts = now;
}

/* True if instance_id is held by a member other than member_id (KIP-345 fencing). */
static bool
group_is_static_fenced(const ch_coord_group *g, ch_str instance_id, ch_str member_id)
{
	if (instance_id.len < 0)
		return false;
	ch_coord_member *m = coord_map_get(&g->static_members, instance_id);
	return m && !ch_str_eq_c(member_id, m->member_id);
}

ch_coord_member *
ch_coord_member_find(const ch_coord_group *g, ch_str member_id)
{
	return coord_map_get(&g->members, member_id);
}

/* ch_coord_validate_member, and the member found (when it is known: *m
 * may be set even with an error, ILLEGAL_GENERATION). */
static int16_t
validate_member_find(const ch_coord_group *g, ch_str member_id, ch_str instance_id,
		     int32_t generation, ch_coord_member **m)
{
	if (instance_id.len >= 0 && !coord_map_get(&g->static_members, instance_id))
		return CH_KERR_UNKNOWN_MEMBER_ID;
	if (group_is_static_fenced(g, instance_id, member_id))
		return CH_KERR_FENCED_INSTANCE_ID;
	if (!(*m = ch_coord_member_find(g, member_id)))
		return CH_KERR_UNKNOWN_MEMBER_ID;
	if (generation != g->generation)
		return CH_KERR_ILLEGAL_GENERATION;
	return CH_KERR_NONE;
}

/* Kafka's ClassicGroup.validateMember, then the generation: an instance id
 * no static member holds is UNKNOWN_MEMBER_ID, even with a known member id. */
int16_t
ch_coord_validate_member(const ch_coord_group *g, ch_str member_id, ch_str instance_id,
			 int32_t generation)
{
	ch_coord_member *m;
	return validate_member_find(g, member_id, instance_id, generation, &m);
}

/* The group's rebalance timeout: the largest of its members' (Kafka's). */
static int32_t
group_rebalance_timeout(const ch_coord_group *g)
{
	int32_t t = 0;
	for (ch_coord_member *m = g->first; m; m = m->next)
		t = CH_MAX(t, m->rebalance_timeout_ms);
	return t;
}

/* ---- protocols ------------------------------------------------------------ */

/* Adds delta to the vote count of each protocol m supports; a count of 0 leaves the map. */
static void
votes_add(ch_coord_group *g, const ch_coord_member *m, int delta)
{
	for (int32_t i = 0; i < m->n_protocols; i++) {
		const char *name = m->protocols[i].name;
		size_t len = strlen(name);
		ch_map_entry *e = ch_map_find(&g->protocol_votes, name, len);
		if (!e)
			e = ch_map_put(&g->protocol_votes, name, len, (void *)(intptr_t)0);
		intptr_t v = (intptr_t)e->value + delta;
		if (v == 0)
			ch_map_remove_entry(&g->protocol_votes, e);
		else
			e->value = (void *)v;
	}
}

/* How many members support the protocol `name`. */
static intptr_t
votes_for(const ch_coord_group *g, ch_str name)
{
	return (intptr_t)ch_map_get(&g->protocol_votes, name.p, (size_t)CH_MAX(name.len, 0));
}

/* Kafka's supportsProtocols: a member may join if the group is empty (and
 * it names a type and protocols), or if it has the group's protocol type
 * and at least one protocol every current member supports. */
static bool
supports_protocols(const ch_coord_group *g, const ch_JoinGroupRequest *rq)
{
	if (g->members.n == 0)
		return !str_is_empty(rq->ProtocolType) && rq->Protocols_n > 0;
	if (!g->protocol_type || !ch_str_eq_c(rq->ProtocolType, g->protocol_type))
		return false;
	for (int32_t i = 0; i < rq->Protocols_n; i++)
		if (votes_for(g, rq->Protocols[i].Name) == (intptr_t)g->members.n)
			return true;
	return false;
}

/* Kafka's selectProtocol: candidates are the protocols every member
 * supports; each member votes for its most preferred candidate; most votes
 * wins. Ties go to the candidate the earliest member prefers (Kafka leaves
 * ties to hash order; we make them deterministic). */
static const char *
select_protocol(const ch_coord_group *g)
{
	size_t n = g->members.n;
	if (!n || !g->first)
		return NULL;
	const ch_coord_member *first = g->first;
	int32_t best = -1;
	intptr_t best_votes = -1;
	for (int32_t i = 0; i < first->n_protocols; i++) {
		const char *cand = first->protocols[i].name;
		if (votes_for(g, cstr(cand)) != (intptr_t)n)
			continue;
		intptr_t votes = 0;
		for (const ch_coord_member *m = g->first; m; m = m->next) {
			for (int32_t j = 0; j < m->n_protocols; j++) {
				const char *p = m->protocols[j].name;
				if (votes_for(g, cstr(p)) == (intptr_t)n) {
					votes += strcmp(p, cand) == 0;
					break;
				}
			}
		}
		if (votes > best_votes) {
			best_votes = votes;
			best = i;
		}
	}
	return best >= 0 ? first->protocols[best].name : NULL;
}

const member_protocol *
ch_coord_member_protocol(const ch_coord_member *m, const char *name)
{
	if (!name)
		return NULL;
	for (int32_t i = 0; i < m->n_protocols; i++)
		if (strcmp(m->protocols[i].name, name) == 0)
			return &m->protocols[i];
	return NULL;
}

/* Frees n protocols and the array. */
static void
protocols_free(member_protocol *p, int32_t n)
{
	(void)n; /* one block: protocols_copy */
	free(p);
}

/* Copies a JoinGroup's protocols (names and metadata); *n gets their count.
 * One allocation: the array, then each name (NUL-terminated) and its
 * metadata, so a member's protocols cost one allocator header, not 1 + 2
 * per protocol. Caller frees with protocols_free. */
static member_protocol *
protocols_copy(const ch_JoinGroupRequest *rq, int32_t *n)
{
	*n = CH_MAX(rq->Protocols_n, 0);
	size_t size = (size_t)*n * sizeof(member_protocol);
	for (int32_t i = 0; i < *n; i++)
		size += (size_t)CH_MAX(rq->Protocols[i].Name.len, 0) + 1 +
			(size_t)CH_MAX(rq->Protocols[i].Metadata.len, 0);
	member_protocol *p = ch_xcalloc(1, CH_MAX(size, 1));
	char *tail = (char *)(p + *n);
	for (int32_t i = 0; i < *n; i++) {
		const ch_JoinGroupRequest_JoinGroupRequestProtocol *q = &rq->Protocols[i];
		size_t nl = (size_t)CH_MAX(q->Name.len, 0);
		p[i].name = tail;
		if (nl)
			memcpy(tail, q->Name.p, nl);
		tail += nl + 1; /* the NUL: calloc's */
		p[i].metadata = (uint8_t *)tail;
		p[i].metadata_len = CH_MAX(q->Metadata.len, 0);
		if (p[i].metadata_len)
			memcpy(tail, q->Metadata.p, (size_t)p[i].metadata_len);
		tail += p[i].metadata_len;
	}
	return p;
}

/* Kafka's MemberMetadata.matches: same protocols, same metadata, same order. */
static bool
member_matches(const ch_coord_member *m, const ch_JoinGroupRequest *rq)
{
	if (m->n_protocols != CH_MAX(rq->Protocols_n, 0))
		return false;
	for (int32_t i = 0; i < m->n_protocols; i++) {
		const ch_JoinGroupRequest_JoinGroupRequestProtocol *q = &rq->Protocols[i];
		if (!ch_str_eq_c(q->Name, m->protocols[i].name) ||
		    CH_MAX(q->Metadata.len, 0) != m->protocols[i].metadata_len ||
		    (m->protocols[i].metadata_len &&
		     memcmp(q->Metadata.p, m->protocols[i].metadata,
			    (size_t)m->protocols[i].metadata_len) != 0))
			return false;
	}
	return true;
}

/* ---- responses ------------------------------------------------------------- */

/* Answers token through the shell (ops->respond); resp is the API's response struct. */
static void
respond(ch_coord *c, void *token, const void *resp)
{
	c->ops.respond(c->ops.ud, token, resp);
}

/* An error answer naming member_id: Kafka echoes a known member's own id
 * and gives "" to a member that joined without one. */
static void
join_error_as(ch_coord *c, void *token, int16_t err, ch_str member_id, int32_t generation)
{
	ch_JoinGroupResponse r;
	ch_JoinGroupResponse_init(&r);
	r.ErrorCode = err;
	r.GenerationId = generation;
	r.MemberId = member_id.len >= 0 ? member_id : cstr("");
	r.Leader = cstr("");
	r.ProtocolName = CH_STR_NULL;
	r.Members_n = 0;
	respond(c, token, &r);
}

/* A JoinGroup error answer naming member_id ("" for NULL), as join_error_as. */
static void
join_error(ch_coord *c, void *token, int16_t err, const char *member_id, int32_t generation)
{
	join_error_as(c, token, err, cstr(member_id ? member_id : ""), generation);
}

/* A JoinGroup response for the current generation; the leader (when
 * `as_leader`) gets every member's metadata for the selected protocol. */
static void
join_respond(ch_coord *c, ch_coord_group *g, ch_coord_member *m, void *token, int16_t version,
	     bool as_leader, const char *leader_id, bool skip_assignment)
{
	ch_JoinGroupResponse r;
	ch_JoinGroupResponse_init(&r);
	r.ErrorCode = CH_KERR_NONE;
	r.GenerationId = g->generation;
	r.ProtocolType = cstr(g->protocol_type);
	r.ProtocolName = cstr(g->protocol_name);
	/* Before v7 the protocol name is not nullable. */
	if (version < 7 && !g->protocol_name)
		r.ProtocolName = cstr("");
	r.Leader = cstr(leader_id ? leader_id : "");
	r.MemberId = cstr(m->member_id);
	r.SkipAssignment = skip_assignment;
	ch_JoinGroupResponse_JoinGroupResponseMember *members = NULL;
	int32_t n = 0;
	if (as_leader) {
		members = ch_xcalloc(g->members.n, sizeof(*members));
		for (ch_coord_member *x = g->first; x; x = x->next) {
			const member_protocol *p = ch_coord_member_protocol(x, g->protocol_name);
			members[n].MemberId = cstr(x->member_id);
			members[n].GroupInstanceId = cstr(x->instance_id);
			members[n].Metadata = p ? (ch_bytes){p->metadata, p->metadata_len}
						: (ch_bytes){(const uint8_t *)"", 0};
			n++;
		}
	}
	r.Members = members;
	r.Members_n = n;
	respond(c, token, &r);
	free(members);
}

/* Answers a SyncGroup: err, or (err 0) the protocol and the assignment (never null). */
static void
sync_respond(ch_coord *c, ch_coord_group *g, void *token, int16_t err, const uint8_t *assignment,
	     int32_t len)
{
	ch_SyncGroupResponse r;
	ch_SyncGroupResponse_init(&r);
	r.ErrorCode = err;
	/* Kafka names the protocol only in a successful answer. */
	r.ProtocolType = g && !err ? cstr(g->protocol_type) : CH_STR_NULL;
	r.ProtocolName = g && !err ? cstr(g->protocol_name) : CH_STR_NULL;
	/* An empty assignment is a zero-length byte string, never null. */
	r.Assignment =
		(ch_bytes){assignment ? assignment : (const uint8_t *)"", assignment ? len : 0};
	respond(c, token, &r);
}

/* ---- members ----------------------------------------------------------------- */

/* Sets m's expiry to deadline. The heap moves only when the expiry comes
 * sooner: a later one (every heartbeat's) leaves the timer where it is, and
 * session_expired re-arms it at session_due when it fires early, so a member
 * costs a heap move per session timeout instead of per heartbeat (the sift
 * was ~8 % of a heartbeat's instructions at 100 members, more with more). */
static void
session_arm(ch_coord *c, ch_coord_member *m, int64_t deadline)
{
	m->session_due = deadline;
	if (!ch_heap_armed(&m->session.node) || m->session.node.deadline > deadline)
		timer_set(c, &m->session, deadline);
}

void
ch_coord_member_touch_session(ch_coord_member *m, int64_t now)
{
	session_arm(m->group->coord, m, now + m->session_timeout_ms);
}

/* Forgets m's parked JoinGroup (without answering it) and keeps awaiting_join right. */
static void
member_unpark_join(ch_coord_group *g, ch_coord_member *m)
{
	if (m->join_token) {
		m->join_token = NULL;
		g->awaiting_join--;
	}
}

/* m no longer owes a SyncGroup; keeps the pending_sync counter right. */
static void
member_clear_pending_sync(ch_coord_group *g, ch_coord_member *m)
{
	if (m->pending_sync) {
		m->pending_sync = false;
		g->pending_sync--;
	}
}

/* Adds a member (member_id owned by the call) at the end of the group order, with the
 * JoinGroup's protocols; the first member leads and sets the protocol type. */
static ch_coord_member *
member_add(ch_coord_group *g, char *member_id, ch_str instance_id, ch_str client_id,
	   const char *client_host, const ch_JoinGroupRequest *rq, int32_t rebalance_timeout)
{
	/* One allocation: the member, then its client id, client host and
	 * instance id (each NUL-terminated; they never change). */
	size_t cl = (size_t)CH_MAX(client_id.len, 0);
	size_t hl = strlen(client_host ? client_host : "");
	size_t il = (size_t)CH_MAX(instance_id.len, 0);
	ch_coord_member *m =
		ch_xcalloc(1, sizeof(*m) + cl + 1 + hl + 1 + (instance_id.len >= 0 ? il + 1 : 0));
	char *tail = (char *)(m + 1);
	m->group = g;
	ch_map_entry *e = ch_map_put(&g->members, member_id, strlen(member_id), m);
	free(member_id);
	m->member_id = e->key;
	if (cl)
		memcpy(tail, client_id.p, cl);
	tail += cl + 1; /* the NULs: calloc's */
	if (hl)
		memcpy(tail, client_host, hl);
	tail += hl + 1;
	if (instance_id.len >= 0) {
		m->instance_id = tail;
		if (il)
			memcpy(tail, instance_id.p, il);
	}
	m->session_timeout_ms = rq->SessionTimeoutMs;
	m->rebalance_timeout_ms = rebalance_timeout;
	m->protocols = protocols_copy(rq, &m->n_protocols);
	m->session.kind = T_MEMBER;
	m->session.owner = m;
	votes_add(g, m, +1);
	if (m->instance_id)
		ch_map_put(&g->static_members, m->instance_id, strlen(m->instance_id), m);
	m->prev = g->last;
	if (g->last)
		g->last->next = m;
	else
		g->first = m;
	g->last = m;
	if (!g->leader)
		g->leader = m;
	if (g->members.n == 1) {
		/* The first member of an empty group sets its protocol type. */
		char *type = ch_coord_str_dup(rq->ProtocolType); /* may alias the old one */
		free(g->protocol_type);
		g->protocol_type = type;
	}
	return m;
}

/* Unlink and free a member. Parked requests are answered first: a parked
 * JoinGroup gets UNKNOWN_MEMBER_ID (Kafka does this so a still-live client
 * rejoins); a parked SyncGroup too (Kafka leaves it to time out). */
static void
member_remove(ch_coord_group *g, ch_coord_member *m, int64_t now)
{
	ch_coord *c = g->coord;
	if (m->join_token) {
		void *t = m->join_token;
		member_unpark_join(g, m);
		join_error(c, t, CH_KERR_UNKNOWN_MEMBER_ID, "", -1);
	}
	if (m->sync_token) {
		void *t = m->sync_token;
		m->sync_token = NULL;
		sync_respond(c, g, t, CH_KERR_UNKNOWN_MEMBER_ID, NULL, 0);
	}
	member_clear_pending_sync(g, m);
	ch_coord_history_member_out(g, m, now);
	timer_cancel(c, &m->session);
	votes_add(g, m, -1);
	if (m->instance_id) {
		ch_coord_member *s =
			ch_map_get(&g->static_members, m->instance_id, strlen(m->instance_id));
		if (s == m)
			ch_map_remove(&g->static_members, m->instance_id, strlen(m->instance_id));
	}
	CH_DLIST_UNLINK(g->first, g->last, m);
	if (g->leader == m)
		g->leader = g->first; /* Kafka: the next member in order leads */
	protocols_free(m->protocols, m->n_protocols);
	free(m->assignment);
	ch_map_remove(&g->members, m->member_id, strlen(m->member_id));
	free(m);
	/* The protocol type stays after the last member leaves: Kafka keeps it,
	 * and offsets retention tells consumer groups from simple ones by it. */
}

/* Drops a pending (MEMBER_ID_REQUIRED) member and its timer. */
static void
pending_remove(ch_coord_group *g, pending_member *p)
{
	timer_cancel(g->coord, &p->timer);
	ch_map_remove(&g->pending, p->member_id, strlen(p->member_id));
	free(p);
	if (!g->pending.n) { /* its bucket table too: a member's bytes (issue 15) */
		ch_map_free(&g->pending);
		ch_map_init(&g->pending);
	}
}

void
ch_coord_member_drop(ch_coord_group *g, ch_coord_member *m)
{
	if (m->join_token) {
		m->join_token = NULL;
		g->awaiting_join--;
	}
	m->sync_token = NULL;
	member_remove(g, m, 0); /* not a rebalance: no time for the history */
}

ch_coord_member *
ch_coord_member_restore(ch_coord_group *g, ch_str member_id, ch_str instance_id, ch_str client_id,
			ch_str client_host, int32_t session_timeout, int32_t rebalance_timeout,
			ch_bytes subscription, ch_bytes assignment)
{
	ch_JoinGroupRequest rq;
	ch_JoinGroupRequest_init(&rq);
	ch_JoinGroupRequest_JoinGroupRequestProtocol proto;
	proto.Name = cstr(g->protocol_name ? g->protocol_name : "");
	proto.Metadata = subscription;
	rq.Protocols = &proto;
	rq.Protocols_n = g->protocol_name ? 1 : 0;
	rq.SessionTimeoutMs = session_timeout;
	rq.ProtocolType = cstr(g->protocol_type ? g->protocol_type : "");
	char *host = ch_coord_str_dup(client_host.len < 0 ? cstr("") : client_host);
	ch_coord_member *m = member_add(g, ch_coord_str_dup(member_id), instance_id, client_id,
					host, &rq, rebalance_timeout);
	free(host);
	m->assignment_len = CH_MAX(assignment.len, 0);
	m->assignment = ch_xmalloc((size_t)m->assignment_len + 1);
	if (m->assignment_len)
		memcpy(m->assignment, assignment.p, (size_t)m->assignment_len);
	return m;
}

/* ---- the state machine ------------------------------------------------------- */

static void prepare_rebalance(ch_coord_group *g, int64_t now, const coord_reason *why);
static int16_t store_error(int16_t e);
static void try_complete_join(ch_coord_group *g, int64_t now);

/* Kafka's maybePrepareRebalance: a rebalance starts unless one is already
 * in its join phase, which may now be complete. */
static void
maybe_prepare_rebalance(ch_coord_group *g, int64_t now, const coord_reason *why)
{
	if (g->state == CH_COORD_GROUP_STABLE || g->state == CH_COORD_GROUP_COMPLETING_REBALANCE ||
	    g->state == CH_COORD_GROUP_EMPTY) {
		prepare_rebalance(g, now, why);
	} else if (g->state == CH_COORD_GROUP_PREPARING_REBALANCE) {
		COORD_LOGD(g->coord, "group %s (PreparingRebalance): %s", g->group_id, why->detail);
		ch_coord_history_trigger(g, now, why->cause, why->detail);
		try_complete_join(g, now);
	}
}

/* Kafka's resetAndPropagateAssignmentError: members waiting for their
 * assignment learn that a new rebalance started. */
static void
reset_assignments(ch_coord_group *g, int16_t err)
{
	for (ch_coord_member *m = g->first; m; m = m->next) {
		free(m->assignment);
		m->assignment = NULL;
		m->assignment_len = 0;
		if (m->sync_token) {
			void *t = m->sync_token;
			m->sync_token = NULL;
			sync_respond(g->coord, g, t, err, NULL, 0);
		}
	}
}

/* Kafka's prepareRebalance: Stable, CompletingRebalance or Empty ->
 * PreparingRebalance. Parked SyncGroups learn of it; the join phase ends
 * when every member has rejoined or at the rebalance timeout, or, from
 * Empty, when the initial delay runs out. */
static void
prepare_rebalance(ch_coord_group *g, int64_t now, const coord_reason *why)
{
	ch_coord *c = g->coord;
	if (g->state == CH_COORD_GROUP_COMPLETING_REBALANCE)
		reset_assignments(g, CH_KERR_REBALANCE_IN_PROGRESS);
	timer_cancel(c, &g->sync_timer);
	g->rebalance_deferred = false;
	for (ch_coord_member *m = g->first; m; m = m->next) {
		member_clear_pending_sync(g, m);
		m->deferred = false; /* its parked JoinGroup joins this one */
	}
	if (g->state == CH_COORD_GROUP_STABLE || g->state == CH_COORD_GROUP_EMPTY)
		g->rebalance_started = now;
	int32_t timeout = group_rebalance_timeout(g);
	bool from_empty = g->state == CH_COORD_GROUP_EMPTY;
	ch_coord_group_set_state(g, CH_COORD_GROUP_PREPARING_REBALANCE, now, why);
	if (from_empty) {
		/* Kafka's InitialDelayedJoin: an Empty group waits the initial
		 * delay for more members, then on while new ones keep coming
		 * (join_timer_fired), within the rebalance timeout; it never
		 * completes early. */
		int32_t delay = c->cfg.initial_rebalance_delay_ms;
		g->join_wait = JOIN_WAIT_INITIAL;
		g->initial.member_joined = false;
		g->initial.last_arrival = 0;
		g->initial.remaining_ms = CH_MAX(timeout - delay, 0);
		timer_set(c, &g->join_timer, now + delay);
		return;
	}
	timer_set(c, &g->join_timer, now + timeout);
	try_complete_join(g, now);
}

/* Kafka's hasAllMembersJoined: every member has a parked JoinGroup and no
 * member id handed out with MEMBER_ID_REQUIRED is still outstanding. */
static bool
all_joined(const ch_coord_group *g)
{
	return (size_t)g->awaiting_join == g->members.n && g->pending.n == 0;
}

static void complete_join(ch_coord_group *g, int64_t now);

/* Ends the join phase if it waits for members and every one has rejoined. */
static void
try_complete_join(ch_coord_group *g, int64_t now)
{
	if (g->join_wait == JOIN_WAIT_MEMBERS && all_joined(g))
		complete_join(g, now);
}

/* Kafka's onCompleteJoin: drop members that did not rejoin, start the next
 * generation, answer every parked JoinGroup (the leader with all members'
 * metadata), and start waiting for SyncGroups. */
static void
complete_join(ch_coord_group *g, int64_t now)
{
	ch_coord *c = g->coord;
	timer_cancel(c, &g->join_timer);
	int removed = 0;
	for (ch_coord_member *m = g->first, *next; m; m = next) {
		next = m->next;
		/* Kafka removes only dynamic members here: a static member that
		 * has not rejoined keeps its place until its session expires (or
		 * it fails to sync, below). */
		if (!m->join_token && !m->instance_id) {
			COORD_LOGI(g->coord,
				   "group %s: removing member %s, which did not rejoin before the "
				   "join phase ended",
				   g->group_id, m->member_id);
			member_remove(g, m, now);
			removed++;
		}
	}
	g->generation++;
	free(g->protocol_name);
	g->protocol_name = NULL;
	if (g->members.n == 0) {
		coord_reason why =
			ch_coord_reason_make(CH_COORD_CAUSE_JOIN_DONE,
					     "join phase ended with no members (rebalance: %s)",
					     ch_coord_cause_name(g->rebalance_reason.cause));
		ch_coord_group_set_state(g, CH_COORD_GROUP_EMPTY, now, &why);
		ch_coord_group_store(g, A_FIRE, NULL, 0, now, NULL);
		return;
	}
	const char *proto = select_protocol(g);
	g->protocol_name = proto ? ch_xstrdup(proto) : NULL;
	coord_reason why = ch_coord_reason_make(
		CH_COORD_CAUSE_JOIN_DONE,
		"join phase ended: %zu members, leader %s, protocol %s, %d removed, %" PRId64
		" ms since the rebalance began (rebalance: %s)",
		g->members.n, g->leader->member_id, g->protocol_name ? g->protocol_name : "-",
		removed, now - g->rebalance_started,
		ch_coord_cause_name(g->rebalance_reason.cause));
	ch_coord_history_join_done(g, now,
				   g->join_wait == JOIN_WAIT_INITIAL ? "initial delay"
				   : removed || g->awaiting_join < (int32_t)g->members.n
					   ? "rebalance timeout"
					   : "all members joined");
	ch_coord_group_set_state(g, CH_COORD_GROUP_COMPLETING_REBALANCE, now, &why);
	for (ch_coord_member *m = g->first; m; m = m->next) {
		void *t = m->join_token;
		int16_t v = m->join_version;
		member_unpark_join(g, m);
		m->is_new = false;
		m->pending_sync = true;
		g->pending_sync++;
		ch_coord_member_touch_session(m, now);
		if (t)
			join_respond(c, g, m, t, v, m == g->leader, g->leader->member_id, false);
	}
	/* Members that never send SyncGroup are removed after the rebalance
	 * timeout (Kafka's pending-sync expiration). */
	timer_set(c, &g->sync_timer, now + group_rebalance_timeout(g));
}

/* Kafka's removeMemberAndUpdateGroup: a completed generation rebalances;
 * a join phase may now be complete. `why` is logged either way. */
static void
remove_member_and_update(ch_coord_group *g, ch_coord_member *m, int64_t now,
			 const coord_reason *why)
{
	member_remove(g, m, now);
	switch (g->state) {
	case CH_COORD_GROUP_STABLE:
	case CH_COORD_GROUP_COMPLETING_REBALANCE:
		prepare_rebalance(g, now, why);
		break;
	case CH_COORD_GROUP_PREPARING_REBALANCE:
		COORD_LOGI(g->coord, "group %s (PreparingRebalance): %s", g->group_id, why->detail);
		try_complete_join(g, now);
		break;
	default:
		COORD_LOGI(g->coord, "group %s (%s): %s", g->group_id,
			   ch_coord_group_state_name(g->state), why->detail);
		break;
	}
}

/* ---- JoinGroup -------------------------------------------------------------- */

/* One JoinGroup, as its paths below see it. */
typedef struct join_ctx {
	ch_coord *c;
	ch_coord_group *g; /* NULL until the group exists */
	int64_t now;
	void *token;
	int16_t version;
	const ch_JoinGroupRequest *rq;
	ch_str client_id;
	const char *client_host;
	int32_t rebalance_timeout; /* v0 has none: the session timeout */
	ch_coord_member *m;        /* the member the member id names */
	pending_member *pm;        /* the pending member it names */
	ch_coord_member *instance; /* the member holding the instance id */
} join_ctx;

/* Which row of the state table a JoinGroup is (fills j->m, pm, instance).
 * The order is Kafka's: a pending id first, then the fenced instance,
 * then an id the group does not know. */
static coord_req
join_classify(join_ctx *j)
{
	const ch_JoinGroupRequest *rq = j->rq;
	ch_coord_group *g = j->g;
	bool has_instance = rq->GroupInstanceId.len >= 0;
	j->m = NULL;
	j->pm = NULL;
	j->instance = g && has_instance ? ch_map_get(&g->static_members, rq->GroupInstanceId.p,
						     (size_t)rq->GroupInstanceId.len)
					: NULL;
	if (str_is_empty(rq->MemberId))
		return !has_instance ? REQ_JOIN_NEW
		       : j->instance ? REQ_JOIN_STATIC
				     : REQ_JOIN_STATIC_NEW;
	if (!g)
		return REQ_JOIN_UNKNOWN;
	j->m = ch_coord_member_find(g, rq->MemberId);
	j->pm = coord_map_get(&g->pending, rq->MemberId);
	if (j->pm)
		return REQ_JOIN_PENDING;
	if (group_is_static_fenced(g, rq->GroupInstanceId, rq->MemberId))
		return REQ_JOIN_FENCED;
	if (!j->m || (has_instance && !j->instance))
		return REQ_JOIN_UNKNOWN;
	return REQ_JOIN_KNOWN;
}

/* The checks that come before the state table: a group id, a session
 * timeout within the broker's bounds, a loaded partition. Answers and
 * returns true when one fails. */
static bool
join_invalid(ch_coord *c, void *token, const ch_JoinGroupRequest *rq)
{
	int16_t err = CH_KERR_NONE;
	if (str_is_empty(rq->GroupId))
		err = CH_KERR_INVALID_GROUP_ID;
	else if (rq->SessionTimeoutMs < c->cfg.min_session_timeout_ms ||
		 rq->SessionTimeoutMs > c->cfg.max_session_timeout_ms)
		err = CH_KERR_INVALID_SESSION_TIMEOUT;
	else
		err = ch_coord_load_error(c, rq->GroupId);
	if (err)
		join_error(c, token, err, "", -1);
	return err != CH_KERR_NONE;
}

/* Drops a group that a refused JoinGroup found with nothing in it (it was
 * usually created by that request). */
static void
join_drop_unused_group(join_ctx *j, bool new_only, const char *what)
{
	ch_coord_group *g = j->g;
	if (g->members.n || g->offsets.n || g->state != CH_COORD_GROUP_EMPTY ||
	    (new_only && g->generation))
		return;
	coord_reason why =
		ch_coord_reason_make(CH_COORD_CAUSE_JOIN_REFUSED, "JoinGroup refused: %s", what);
	ch_coord_group_delete(g, j->now, &why);
}

/* Kafka's acceptJoiningMember (group.max.size, for anyone not yet a
 * member) and supportsProtocols, also before the state table. Answers
 * and returns true when the JoinGroup is refused. */
static bool
join_refused(join_ctx *j)
{
	ch_coord_group *g = j->g;
	if (!j->m && g->members.n >= (size_t)j->c->cfg.max_size) {
		if (j->pm)
			pending_remove(g, j->pm);
		join_error(j->c, j->token, CH_KERR_GROUP_MAX_SIZE_REACHED, "", -1);
		join_drop_unused_group(j, false, "group.max.size");
		return true;
	}
	if (!supports_protocols(g, j->rq)) {
		join_error_as(j->c, j->token, CH_KERR_INCONSISTENT_GROUP_PROTOCOL, j->rq->MemberId,
			      -1);
		join_drop_unused_group(j, true, "no protocol type or protocols");
		return true;
	}
	return false;
}

/* cohort, not Kafka: a member that arrives while a generation completes
 * (CompletingRebalance, or Stable with members still to sync) does not
 * abort it. Kafka starts the next rebalance at once, and the members whose
 * SyncGroup it answers REBALANCE_IN_PROGRESS wait out their clients' join
 * back-off (librdkafka: ~2 s, docs/NOTES.md). Here the member stays parked
 * in its JoinGroup and the next rebalance starts as soon as this
 * generation is stored and synced (deferred_rebalance_start): the others
 * learn of it through their next heartbeat. Only for a member that
 * supports the generation's protocol (every member must), and unless
 * group.rebalance.join.waits.for.sync is false. Returns true if deferred. */
static bool
join_defer(ch_coord_group *g, ch_coord_member *m, const coord_reason *why)
{
	bool completing = g->state == CH_COORD_GROUP_COMPLETING_REBALANCE ||
			  (g->state == CH_COORD_GROUP_STABLE && g->pending_sync > 0);
	if (!g->coord->cfg.join_waits_for_sync || !completing ||
	    !ch_coord_member_protocol(m, g->protocol_name))
		return false;
	m->deferred = true;
	if (!g->rebalance_deferred) {
		g->rebalance_deferred = true;
		g->deferred_reason = *why;
	}
	COORD_LOGI(g->coord,
		   "group %s (%s): %s; it joins the next generation, which starts once "
		   "generation %d is stored and synced",
		   g->group_id, ch_coord_group_state_name(g->state), why->detail, g->generation);
	return true;
}

/* The rebalance join_defer put off starts once the generation is Stable
 * and every member has its assignment. */
static void
deferred_rebalance_start(ch_coord_group *g, int64_t now)
{
	if (g->rebalance_deferred && g->state == CH_COORD_GROUP_STABLE && g->pending_sync == 0) {
		coord_reason why = g->deferred_reason;
		prepare_rebalance(g, now, &why);
	}
}

/* Kafka's addMemberThenRebalanceOrCompleteJoin: the new member (id owned
 * by the call) waits in the join phase, which starts now unless it runs
 * (or is deferred: join_defer). */
static void
join_add(join_ctx *j, char *member_id)
{
	ch_coord_group *g = j->g;
	ch_coord *c = j->c;
	ch_coord_member *m = member_add(g, member_id, j->rq->GroupInstanceId, j->client_id,
					j->client_host, j->rq, j->rebalance_timeout);
	m->is_new = true;
	m->joined_at = j->now;
	m->join_token = j->token;
	m->join_version = j->version;
	g->awaiting_join++;
	m->join_parked_at = j->now;
	if (g->join_wait == JOIN_WAIT_INITIAL) {
		g->initial.member_joined = true;
		g->initial.last_arrival = j->now;
	}
	/* A new member that never completes a join is dropped after Kafka's
	 * fixed new-member join timeout (5 minutes). */
	session_arm(c, m, j->now + c->cfg.new_member_join_timeout_ms);
	coord_reason why = m->instance_id
				   ? ch_coord_reason_make(CH_COORD_CAUSE_MEMBER_JOINED,
							  "static member %s (instance %s) joined",
							  m->member_id, m->instance_id)
				   : ch_coord_reason_make(CH_COORD_CAUSE_MEMBER_JOINED,
							  "member %s joined", m->member_id);
	if (!join_defer(g, m, &why))
		maybe_prepare_rebalance(g, j->now, &why);
}

/* ACT_JOIN_NEW, Kafka's classicGroupJoinNewDynamicMember: v4+ gets
 * MEMBER_ID_REQUIRED and an id kept pending until it joins with it
 * (KIP-394: retries leak no members); older versions join at once. */
static void
join_new_dynamic(join_ctx *j)
{
	char *id = new_member_id(j->c, j->client_id.len >= 0 ? j->client_id : cstr(""));
	if (j->version < 4) {
		join_add(j, id);
		return;
	}
	pending_member *p = ch_xcalloc(1, sizeof(*p));
	p->group = j->g;
	ch_map_entry *e = ch_map_put(&j->g->pending, id, strlen(id), p);
	p->member_id = e->key;
	p->timer.kind = T_PENDING;
	p->timer.owner = p;
	timer_set(j->c, &p->timer, j->now + j->rq->SessionTimeoutMs);
	/* a consumer that will join in a round trip: the initial delay's
	 * quiet interval waits for it too */
	if (j->g->join_wait == JOIN_WAIT_INITIAL)
		j->g->initial.last_arrival = j->now;
	join_error(j->c, j->token, CH_KERR_MEMBER_ID_REQUIRED, id, -1);
	free(id);
}

/* ACT_JOIN_ADD, a pending id: a v4+ member back with the id its
 * MEMBER_ID_REQUIRED answer handed out (KIP-394) joins with it. */
static void
join_pending(join_ctx *j)
{
	char *id = ch_xstrdup(j->pm->member_id);
	pending_remove(j->g, j->pm);
	j->pm = NULL;
	join_add(j, id);
}

/* ACT_JOIN_ADD, a new instance: a static member whose instance id no
 * member holds joins at once, with a new id "instance-UUID"
 * (classicGroupJoinNewStaticMember). */
static void
join_static_new(join_ctx *j)
{
	join_add(j, new_member_id(j->c, j->rq->GroupInstanceId));
}

/* ACT_JOIN_FENCED: the instance id is held by another member id (a newer
 * incarnation replaced this one): FENCED_INSTANCE_ID, logged as Kafka's
 * validateExistingMember does, since operators look for it. */
static void
join_fenced(join_ctx *j)
{
	COORD_LOGI(j->c,
		   "group %s: JoinGroup of member %.*s for static instance %s is fenced by "
		   "member %s",
		   j->g->group_id, j->rq->MemberId.len, j->rq->MemberId.p, j->instance->instance_id,
		   j->instance->member_id);
	join_error_as(j->c, j->token, CH_KERR_FENCED_INSTANCE_ID, j->rq->MemberId, -1);
}

/* Kafka's updateMember (with a parked JoinGroup). */
static void
member_update(ch_coord_group *g, ch_coord_member *m, const ch_JoinGroupRequest *rq,
	      int32_t rebalance_timeout, void *token, int16_t version)
{
	votes_add(g, m, -1);
	protocols_free(m->protocols, m->n_protocols);
	m->protocols = protocols_copy(rq, &m->n_protocols);
	votes_add(g, m, +1);
	m->rebalance_timeout_ms = rebalance_timeout;
	m->session_timeout_ms = rq->SessionTimeoutMs;
	if (m->join_token) {
		/* A second JoinGroup while one is parked (a client retry):
		 * the newer request takes the place of the older one. */
		join_error(g->coord, m->join_token, CH_KERR_REBALANCE_IN_PROGRESS, m->member_id,
			   g->generation);
		m->join_token = NULL;
		g->awaiting_join--;
	}
	if (token) {
		m->join_token = token;
		m->join_version = version;
		g->awaiting_join++;
	}
}

/* Kafka's updateMemberThenRebalanceOrCompleteJoin: the member's JoinGroup
 * waits for the join phase, which starts now unless it runs. */
static void
join_update(join_ctx *j, ch_coord_cause cause, const char *what)
{
	member_update(j->g, j->m, j->rq, j->rebalance_timeout, j->token, j->version);
	j->m->join_parked_at = j->now;
	coord_reason why = ch_coord_reason_make(cause, "member %s %s", j->m->member_id, what);
	maybe_prepare_rebalance(j->g, j->now, &why);
}

/* ACT_JOIN_UPDATE (PreparingRebalance): the member rejoins the join phase. */
static void
join_known_update(join_ctx *j)
{
	join_update(j, CH_COORD_CAUSE_METADATA_CHANGED, "rejoined");
}

/* A deferred member (join_defer) sent JoinGroup again: the newer request
 * waits in its place; other protocols that leave out the generation's
 * start the next rebalance now. Returns false if m is not deferred. */
static bool
join_deferred_again(join_ctx *j)
{
	if (!j->m->deferred)
		return false;
	member_update(j->g, j->m, j->rq, j->rebalance_timeout, j->token, j->version);
	j->m->join_parked_at = j->now;
	if (!ch_coord_member_protocol(j->m, j->g->protocol_name)) {
		coord_reason why = ch_coord_reason_make(CH_COORD_CAUSE_METADATA_CHANGED,
							"member %s rejoined with other protocols",
							j->m->member_id);
		prepare_rebalance(j->g, j->now, &why);
	}
	return true;
}

/* ACT_JOIN_RESEND (CompletingRebalance): the same protocols mean a lost
 * JoinGroup response, sent again; others force a new rebalance. */
static void
join_known_resend(join_ctx *j)
{
	ch_coord_group *g = j->g;
	if (join_deferred_again(j))
		return;
	if (!member_matches(j->m, j->rq)) {
		join_update(j, CH_COORD_CAUSE_METADATA_CHANGED, "rejoined with other protocols");
		return;
	}
	bool leader = j->m == g->leader;
	join_respond(j->c, g, j->m, j->token, j->version, leader, g->leader->member_id, false);
}

/* ACT_JOIN_CURRENT (Stable): a follower with the same protocols gets the
 * current generation; the leader rejoining wants a new assignment (topic
 * metadata changed), changed protocols need one. */
static void
join_known_current(join_ctx *j)
{
	ch_coord_group *g = j->g;
	if (join_deferred_again(j))
		return;
	if (j->m == g->leader) {
		join_update(j, CH_COORD_CAUSE_LEADER_REJOINED, "(the leader) rejoined");
	} else if (!member_matches(j->m, j->rq)) {
		join_update(j, CH_COORD_CAUSE_METADATA_CHANGED, "rejoined with other protocols");
	} else {
		ch_coord_member_touch_session(j->m, j->now);
		join_respond(j->c, g, j->m, j->token, j->version, false, g->leader->member_id,
			     false);
	}
}

/* Rename a member (static replacement); returns the member. */
static ch_coord_member *
member_rename(ch_coord_group *g, ch_coord_member *m, char *new_id)
{
	ch_map_remove(&g->members, m->member_id, strlen(m->member_id));
	ch_map_entry *e = ch_map_put(&g->members, new_id, strlen(new_id), m);
	free(new_id);
	m->member_id = e->key;
	return m;
}

/* Data kept while a static member's replacement is being stored. */
typedef struct static_store {
	char *old_member_id;
	char *old_leader_id;
	member_protocol *old_protocols;
	int32_t n_old_protocols;
	int32_t old_session_timeout, old_rebalance_timeout;
	char *instance_id;
	char *new_member_id;
} static_store;

/* Frees what a static replacement kept for a revert. */
static void
static_store_free(static_store *st)
{
	protocols_free(st->old_protocols, st->n_old_protocols);
	free(st->old_member_id);
	free(st->old_leader_id);
	free(st->instance_id);
	free(st->new_member_id);
	free(st);
}

/* The first half of Kafka's updateStaticMemberThenRebalanceOrCompleteJoin
 * (KIP-345): a known group.instance.id joined with an empty member id. The
 * old incarnation's parked requests are fenced, the member gets a new id
 * and the request's protocols; returns what a failed store must put back
 * (the caller frees it). */
static static_store *
static_replace(join_ctx *j)
{
	ch_coord_group *g = j->g;
	ch_coord_member *m = j->instance;
	char *old_id = ch_xstrdup(m->member_id);
	if (m->join_token) {
		void *t = m->join_token;
		member_unpark_join(g, m);
		join_error(j->c, t, CH_KERR_FENCED_INSTANCE_ID, old_id, -1);
	}
	if (m->sync_token) {
		void *t = m->sync_token;
		m->sync_token = NULL;
		sync_respond(j->c, g, t, CH_KERR_FENCED_INSTANCE_ID, NULL, 0);
	}
	static_store *st = ch_xcalloc(1, sizeof(*st));
	st->old_member_id = old_id;
	st->old_leader_id = g->leader ? ch_xstrdup(g->leader->member_id) : NULL;
	st->n_old_protocols = m->n_protocols;
	st->old_protocols = m->protocols;
	st->old_session_timeout = m->session_timeout_ms;
	st->old_rebalance_timeout = m->rebalance_timeout_ms;
	/* Detach the old protocol list so member_update does not free it. */
	votes_add(g, m, -1);
	m->protocols = NULL;
	m->n_protocols = 0;
	member_rename(g, m, new_member_id(j->c, j->rq->GroupInstanceId));
	COORD_LOGI(j->c,
		   "group %s: static member %s (instance %s) rejoined in state %s; "
		   "replacing member id %s",
		   g->group_id, m->member_id, m->instance_id, ch_coord_group_state_name(g->state),
		   old_id);
	ch_coord_member_touch_session(m, j->now);
	member_update(g, m, j->rq, j->rebalance_timeout, j->token, j->version);
	m->join_parked_at = j->now;
	return st;
}

/* ACT_JOIN_REPLACE (PreparingRebalance): the join phase goes on with the
 * new id. */
static void
join_static_replace(join_ctx *j)
{
	static_store_free(static_replace(j));
	try_complete_join(j->g, j->now);
}

/* A static replacement that needs a new rebalance. */
static void
static_rebalance(join_ctx *j, static_store *st, const char *what)
{
	ch_coord_member *m = j->instance;
	coord_reason why =
		ch_coord_reason_make(CH_COORD_CAUSE_STATIC_REPLACED,
				     "static member %s (instance %s) rejoined %s, replacing %s",
				     m->member_id, m->instance_id, what, st->old_member_id);
	prepare_rebalance(j->g, j->now, &why);
	static_store_free(st);
}

/* ACT_JOIN_REPLACE_REBALANCE (CompletingRebalance): the leader may already
 * have assigned to the old id, so the group rebalances. */
static void
join_static_replace_rebalance(join_ctx *j)
{
	static_rebalance(j, static_replace(j), "in CompletingRebalance");
}

/* ACT_JOIN_REPLACE_KEEP (Stable): with the selected protocol unchanged
 * there is no rebalance: the new member id is stored, then the JoinGroup
 * is answered (ch_coord_static_append_done; the request waits on the append, not in
 * the member). Otherwise the group rebalances. */
static void
join_static_replace_keep(join_ctx *j)
{
	ch_coord_group *g = j->g;
	static_store *st = static_replace(j);
	ch_coord_member *m = j->instance;
	const char *next = select_protocol(g);
	if (!next || !g->protocol_name || strcmp(next, g->protocol_name) != 0) {
		static_rebalance(j, st, "with other protocols");
		return;
	}
	void *t = m->join_token;
	member_unpark_join(g, m);
	st->instance_id = ch_xstrdup(m->instance_id);
	st->new_member_id = ch_xstrdup(m->member_id);
	ch_coord_group_store(g, A_STATIC_STORE, t, j->version, j->now, st);
}

/* The member a static store was for, or NULL if it was replaced again or
 * left while the store was in flight. */
static ch_coord_member *
static_store_member(const ch_coord_group *g, const static_store *st)
{
	ch_coord_member *m =
		g ? ch_map_get(&g->static_members, st->instance_id, strlen(st->instance_id)) : NULL;
	return m && strcmp(m->member_id, st->new_member_id) == 0 ? m : NULL;
}

/* The store failed: Kafka puts the old member id, protocols and timeouts
 * back and reports the error. */
static void
static_store_revert(ch_coord_group *g, ch_coord_member *m, static_store *st, void *token,
		    int16_t error, int64_t now)
{
	COORD_LOGW(g->coord, "group %s: failed to store static member %s: %s", g->group_id,
		   m->member_id, ch_kerr_name(error));
	votes_add(g, m, -1);
	protocols_free(m->protocols, m->n_protocols);
	m->protocols = st->old_protocols;
	m->n_protocols = st->n_old_protocols;
	st->old_protocols = NULL;
	st->n_old_protocols = 0;
	votes_add(g, m, +1);
	m->session_timeout_ms = st->old_session_timeout;
	m->rebalance_timeout_ms = st->old_rebalance_timeout;
	member_rename(g, m, ch_xstrdup(st->old_member_id));
	ch_coord_member_touch_session(m, now);
	join_error(g->coord, token, store_error(error), "", g->generation);
}

/* The replacement is durable: the member resumes in the current
 * generation. KIP-814 (v9+): a returning leader is told it leads but skips
 * the assignment. Before v9 the old leader id is returned, so a returning
 * leader does not compute an assignment a Stable group would never hand
 * out. */
static void
static_store_answer(ch_coord_group *g, ch_coord_member *m, const static_store *st, void *token,
		    int16_t version)
{
	if (version >= 9) {
		bool leader = m == g->leader;
		join_respond(g->coord, g, m, token, version, leader, g->leader->member_id, leader);
	} else {
		join_respond(g->coord, g, m, token, version, false,
			     st->old_leader_id ? st->old_leader_id : "", false);
	}
}

void
ch_coord_static_append_done(ch_coord *c, pending_append *a, int16_t error, int64_t now)
{
	static_store *st = a->data;
	ch_coord_group *g = ch_coord_group_find(c, cstr(a->group_id));
	ch_coord_member *m = static_store_member(g, st);
	if (!m)
		join_error(c, a->token, g ? CH_KERR_FENCED_INSTANCE_ID : CH_KERR_UNKNOWN_MEMBER_ID,
			   "", -1);
	else if (error)
		static_store_revert(g, m, st, a->token, error, now);
	else
		static_store_answer(g, m, st, a->token, a->version);
	static_store_free(st);
}

/* Does what the state table's cell says for this JoinGroup. */
static void
join_dispatch(join_ctx *j, coord_req kind, const coord_rule *r)
{
	switch (r->act) {
	case ACT_JOIN_NEW:
		join_new_dynamic(j);
		break;
	case ACT_JOIN_ADD:
		if (kind == REQ_JOIN_PENDING)
			join_pending(j);
		else
			join_static_new(j);
		break;
	case ACT_JOIN_FENCED:
		join_fenced(j);
		break;
	case ACT_JOIN_REPLACE:
		join_static_replace(j);
		break;
	case ACT_JOIN_REPLACE_REBALANCE:
		join_static_replace_rebalance(j);
		break;
	case ACT_JOIN_REPLACE_KEEP:
		join_static_replace_keep(j);
		break;
	case ACT_JOIN_UPDATE:
		join_known_update(j);
		break;
	case ACT_JOIN_RESEND:
		join_known_resend(j);
		break;
	case ACT_JOIN_CURRENT:
		join_known_current(j);
		break;
	default: /* ACT_ANSWER, ACT_NEVER */
		COORD_NEVER(j->c, r);
		join_error_as(j->c, j->token, r->err, j->rq->MemberId, -1);
		break;
	}
}

void
ch_coord_join(ch_coord *c, const ch_coord_req *req)
{
	const ch_JoinGroupRequest *rq = req->body;
	int64_t now = req->now;
	void *token = req->token;
	int16_t version = req->version;
	ch_str client_id = req->client_id;
	const char *client_host = req->client_host;
	COORD_CHECK_ON_RETURN(c, rq->GroupId);
	if (join_invalid(c, token, rq))
		return;
	join_ctx j = {
		.c = c,
		.g = ch_coord_group_find(c, rq->GroupId),
		.now = now,
		.token = token,
		.version = version,
		.rq = rq,
		.client_id = client_id,
		.client_host = client_host,
		.rebalance_timeout = version >= 1 && rq->RebalanceTimeoutMs > 0
					     ? rq->RebalanceTimeoutMs
					     : rq->SessionTimeoutMs,
	};
	coord_req kind = join_classify(&j);
	const coord_rule *r = ch_coord_rule_for(kind, j.g);
	if (r->act == ACT_CREATE) {
		j.g = ch_coord_group_get_or_create(c, rq->GroupId, now);
		r = ch_coord_rule_for(kind, j.g);
	}
	if (j.g && join_refused(&j))
		return;
	join_dispatch(&j, kind, r);
}

/* ---- SyncGroup ---------------------------------------------------------------- */

/* Kafka's validateSyncGroup past Dead: the member and its generation,
 * then the protocol type and name when the request names them (v5). */
static int16_t
sync_check(const ch_coord_group *g, const ch_SyncGroupRequest *rq)
{
	int16_t err =
		ch_coord_validate_member(g, rq->MemberId, rq->GroupInstanceId, rq->GenerationId);
	if (!err && rq->ProtocolType.len >= 0 &&
	    (!g->protocol_type || !ch_str_eq_c(rq->ProtocolType, g->protocol_type)))
		err = CH_KERR_INCONSISTENT_GROUP_PROTOCOL;
	if (!err && rq->ProtocolName.len >= 0 &&
	    (!g->protocol_name || !ch_str_eq_c(rq->ProtocolName, g->protocol_name)))
		err = CH_KERR_INCONSISTENT_GROUP_PROTOCOL;
	return err;
}

/* The leader's assignment becomes the members' (a member it left out gets
 * an empty one, never null; an id named twice keeps its first) and is
 * stored; ch_coord_sync_append_done answers the waiting SyncGroups once it is
 * durable, or resets the assignments if the store fails. */
static void
sync_store_assignment(ch_coord_group *g, const ch_SyncGroupRequest *rq, int16_t version,
		      int64_t now)
{
	ch_coord_history_leader_sync(g, rq, now);
	for (ch_coord_member *x = g->first; x; x = x->next) {
		free(x->assignment);
		x->assignment = NULL;
		x->assignment_len = 0;
	}
	for (int32_t i = 0; i < rq->Assignments_n; i++) {
		const ch_SyncGroupRequest_SyncGroupRequestAssignment *a = &rq->Assignments[i];
		ch_coord_member *x = ch_coord_member_find(g, a->MemberId);
		if (!x || x->assignment)
			continue;
		x->assignment_len = CH_MAX(a->Assignment.len, 0);
		x->assignment = ch_xmalloc((size_t)x->assignment_len);
		if (x->assignment_len)
			memcpy(x->assignment, a->Assignment.p, (size_t)x->assignment_len);
	}
	for (ch_coord_member *x = g->first; x; x = x->next)
		if (!x->assignment)
			x->assignment = ch_xcalloc(1, 1); /* zero-length, not null */
	ch_coord_group_store(g, A_SYNC_STORE, NULL, version, now, NULL);
}

/* ACT_SYNC_WAIT (CompletingRebalance): the SyncGroup waits for the
 * leader's assignment (a retry replaces the waiting one). Only the
 * leader's first SyncGroup of this generation stores it; an older
 * generation's store still in flight does not block it (its completion is
 * ignored: store_id moves on). */
static void
sync_wait(ch_coord_group *g, ch_coord_member *m, void *token, int16_t version,
	  const ch_SyncGroupRequest *rq, int64_t now)
{
	if (m->sync_token)
		sync_respond(g->coord, g, m->sync_token, CH_KERR_REBALANCE_IN_PROGRESS, NULL, 0);
	m->sync_token = token;
	m->sync_version = version;
	member_clear_pending_sync(g, m);
	ch_coord_member_touch_session(m, now);
	if (m == g->leader && !(g->store_id && g->store_generation == g->generation))
		sync_store_assignment(g, rq, version, now);
}

/* ACT_SYNC_ASSIGNMENT (Stable): a late follower, or a retry: the stored
 * assignment is already there. */
static void
sync_answer_assignment(ch_coord_group *g, ch_coord_member *m, void *token, int64_t now)
{
	member_clear_pending_sync(g, m);
	ch_coord_member_touch_session(m, now);
	ch_coord_history_synced(g, m, now);
	sync_respond(g->coord, g, token, CH_KERR_NONE, m->assignment, m->assignment_len);
	deferred_rebalance_start(g, now);
}

/* The checks before the state table: a group id and a loaded partition.
 * Kafka loses the rebalance state with a reload, so LOAD_IN_PROGRESS is
 * answered REBALANCE_IN_PROGRESS, which sends the member back to JoinGroup
 * (old clients do not know LOAD_IN_PROGRESS here). */
static int16_t
sync_invalid(const ch_coord *c, const ch_SyncGroupRequest *rq)
{
	if (str_is_empty(rq->GroupId))
		return CH_KERR_INVALID_GROUP_ID;
	int16_t err = ch_coord_load_error(c, rq->GroupId);
	return err == CH_KERR_COORDINATOR_LOAD_IN_PROGRESS ? CH_KERR_REBALANCE_IN_PROGRESS : err;
}

void
ch_coord_sync(ch_coord *c, const ch_coord_req *req)
{
	const ch_SyncGroupRequest *rq = req->body;
	int64_t now = req->now;
	void *token = req->token;
	int16_t version = req->version;
	COORD_CHECK_ON_RETURN(c, rq->GroupId);
	int16_t err = sync_invalid(c, rq);
	ch_coord_group *g = err ? NULL : ch_coord_group_find(c, rq->GroupId);
	const coord_rule *r = ch_coord_rule_for(REQ_SYNC, g);
	if (!err && r->check)
		err = sync_check(g, rq);
	if (!err) {
		switch (r->act) {
		case ACT_SYNC_WAIT:
			sync_wait(g, ch_coord_member_find(g, rq->MemberId), token, version, rq,
				  now);
			return;
		case ACT_SYNC_ASSIGNMENT:
			sync_answer_assignment(g, ch_coord_member_find(g, rq->MemberId), token,
					       now);
			return;
		default: /* ACT_ANSWER */
			COORD_NEVER(c, r);
			err = r->err;
			break;
		}
	}
	sync_respond(c, g, token, err, NULL, 0);
}

/* Kafka's storeGroup maps append failures for the members waiting on it. */
static int16_t
store_error(int16_t e)
{
	switch (e) {
	case CH_KERR_UNKNOWN_TOPIC_OR_PARTITION:
	case CH_KERR_NOT_ENOUGH_REPLICAS:
	case CH_KERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
		return CH_KERR_COORDINATOR_NOT_AVAILABLE;
	case CH_KERR_NOT_LEADER_OR_FOLLOWER:
	case CH_KERR_KAFKA_STORAGE_ERROR:
		return CH_KERR_NOT_COORDINATOR;
	case CH_KERR_REQUEST_TIMED_OUT:
		return CH_KERR_REBALANCE_IN_PROGRESS;
	case CH_KERR_MESSAGE_TOO_LARGE:
	case CH_KERR_RECORD_LIST_TOO_LARGE:
	case CH_KERR_INVALID_FETCH_SIZE:
		return CH_KERR_UNKNOWN_SERVER_ERROR;
	default:
		return e;
	}
}

void
ch_coord_sync_append_done(ch_coord *c, pending_append *a, int16_t error, int64_t now)
{
	ch_coord_group *g = ch_coord_group_find(c, cstr(a->group_id));
	if (!g || g->store_id != a->id)
		return;
	g->store_id = 0;
	if (g->state != CH_COORD_GROUP_COMPLETING_REBALANCE || g->generation != a->generation)
		return; /* a newer rebalance already started */
	if (error) {
		COORD_LOGW(g->coord, "group %s: storing the assignment of generation %d failed: %s",
			   g->group_id, g->generation, ch_kerr_name(error));
		reset_assignments(g, store_error(error));
		coord_reason why =
			ch_coord_reason_make(CH_COORD_CAUSE_STORE_FAILED,
					     "storing the assignment of generation %d failed: %s",
					     g->generation, ch_kerr_name(error));
		maybe_prepare_rebalance(g, now, &why);
		return;
	}
	for (ch_coord_member *m = g->first; m; m = m->next) {
		if (m->sync_token) {
			void *t = m->sync_token;
			m->sync_token = NULL;
			ch_coord_history_synced(g, m, now);
			sync_respond(c, g, t, CH_KERR_NONE, m->assignment, m->assignment_len);
		}
	}
	coord_reason why = ch_coord_reason_make(CH_COORD_CAUSE_ASSIGNMENT_STORED,
						"assignment stored: %zu members, %" PRId64
						" ms after the rebalance began (rebalance: %s)",
						g->members.n, now - g->rebalance_started,
						ch_coord_cause_name(g->rebalance_reason.cause));
	ch_coord_group_set_state(g, CH_COORD_GROUP_STABLE, now, &why);
	deferred_rebalance_start(g, now);
}

/* ---- Heartbeat, LeaveGroup ------------------------------------------------------- */

/* Kafka's classicGroupHeartbeatToClassicGroup: the cell's error, after
 * the member check where the cell has one (the member's session is then
 * renewed). A partition still loading answers blindly, as Kafka does. */
void
ch_coord_heartbeat(ch_coord *c, const ch_coord_req *req)
{
	const ch_HeartbeatRequest *rq = req->body;
	int64_t now = req->now;
	void *token = req->token;
	COORD_CHECK_ON_RETURN(c, rq->GroupId);
	ch_HeartbeatResponse r;
	ch_HeartbeatResponse_init(&r);
	if (str_is_empty(rq->GroupId)) {
		r.ErrorCode = CH_KERR_INVALID_GROUP_ID;
	} else if ((r.ErrorCode = ch_coord_load_error(c, rq->GroupId)) != CH_KERR_NONE) {
		if (r.ErrorCode == CH_KERR_COORDINATOR_LOAD_IN_PROGRESS)
			r.ErrorCode = CH_KERR_NONE;
	} else {
		ch_coord_group *g = ch_coord_group_find(c, rq->GroupId);
		const coord_rule *rule = ch_coord_rule_for(REQ_HEARTBEAT, g);
		COORD_NEVER(c, rule);
		r.ErrorCode = rule->err;
		if (rule->check) {
			ch_coord_member *m = NULL;
			int16_t err = validate_member_find(g, rq->MemberId, rq->GroupInstanceId,
							   rq->GenerationId, &m);
			if (err)
				r.ErrorCode = err;
			else
				ch_coord_member_touch_session(m, now);
		}
	}
	respond(c, token, &r);
}

/* One member of a LeaveGroup (Kafka's removeMemberAndUpdateGroup per
 * identity): by instance id alone (v3+ static members), a pending member,
 * or a member; returns that member's error. */
static int16_t
leave_one(ch_coord_group *g, int64_t now, ch_str member_id, ch_str instance_id, ch_str reason)
{
	const char *sep = reason.len > 0 ? ": " : "";
	int rlen = CH_MAX(reason.len, 0);
	const char *rtext = reason.p ? reason.p : "";
	if (str_is_empty(member_id) && instance_id.len >= 0) {
		ch_coord_member *m = coord_map_get(&g->static_members, instance_id);
		if (!m)
			return CH_KERR_UNKNOWN_MEMBER_ID;
		coord_reason why = ch_coord_reason_make(
			CH_COORD_CAUSE_MEMBER_LEFT, "static member %s (instance %s) left%s%.*s",
			m->member_id, m->instance_id, sep, rlen, rtext);
		remove_member_and_update(g, m, now, &why);
		return CH_KERR_NONE;
	}
	pending_member *p = member_id.len > 0 ? coord_map_get(&g->pending, member_id) : NULL;
	if (p) {
		pending_remove(g, p);
		try_complete_join(g, now);
		return CH_KERR_NONE;
	}
	if (group_is_static_fenced(g, instance_id, member_id))
		return CH_KERR_FENCED_INSTANCE_ID;
	ch_coord_member *m = ch_coord_member_find(g, member_id);
	if (!m)
		return CH_KERR_UNKNOWN_MEMBER_ID;
	coord_reason why = ch_coord_reason_make(CH_COORD_CAUSE_MEMBER_LEFT, "member %s left%s%.*s",
						m->member_id, sep, rlen, rtext);
	remove_member_and_update(g, m, now, &why);
	return CH_KERR_NONE;
}

void
ch_coord_leave(ch_coord *c, const ch_coord_req *req)
{
	const ch_LeaveGroupRequest *rq = req->body;
	int64_t now = req->now;
	void *token = req->token;
	int16_t version = req->version;
	COORD_CHECK_ON_RETURN(c, rq->GroupId);
	ch_LeaveGroupResponse r;
	ch_LeaveGroupResponse_init(&r);
	/* v0-v2 name one member; v3+ a batch. Normalise to identities. */
	ch_LeaveGroupRequest_MemberIdentity single;
	const ch_LeaveGroupRequest_MemberIdentity *ids = rq->Members;
	int32_t n = CH_MAX(rq->Members_n, 0);
	if (version < 3) {
		memset(&single, 0, sizeof(single));
		single.MemberId = rq->MemberId;
		single.GroupInstanceId = CH_STR_NULL;
		single.Reason = CH_STR_NULL;
		ids = &single;
		n = 1;
	}
	ch_LeaveGroupResponse_MemberResponse *out = ch_xcalloc((size_t)n, sizeof(*out));
	ch_coord_group *g = str_is_empty(rq->GroupId) ? NULL : ch_coord_group_find(c, rq->GroupId);
	if (str_is_empty(rq->GroupId))
		r.ErrorCode = CH_KERR_INVALID_GROUP_ID;
	else
		r.ErrorCode = ch_coord_load_error(c, rq->GroupId);
	const coord_rule *rule = ch_coord_rule_for(REQ_LEAVE, g);
	if (!r.ErrorCode && rule->act != ACT_LEAVE) {
		COORD_NEVER(c, rule);
		r.ErrorCode = rule->err;
	}
	for (int32_t i = 0; i < n && !r.ErrorCode; i++) {
		out[i].MemberId = ids[i].MemberId;
		out[i].GroupInstanceId = ids[i].GroupInstanceId;
		out[i].ErrorCode = g ? leave_one(g, now, ids[i].MemberId, ids[i].GroupInstanceId,
						 ids[i].Reason)
				     : CH_KERR_UNKNOWN_MEMBER_ID;
	}
	if (version < 3) {
		/* One member, one top-level error (Kafka's LeaveGroupResponse). */
		if (!r.ErrorCode)
			r.ErrorCode = out[0].ErrorCode;
		r.Members = NULL;
		r.Members_n = 0;
	} else {
		r.Members = r.ErrorCode ? NULL : out;
		r.Members_n = r.ErrorCode ? 0 : n;
	}
	respond(c, token, &r);
	free(out);
}

/* ---- timers -------------------------------------------------------------------- */

/* How much longer the initial delay waits now that it ran out (0: not at
 * all), within what is left of the rebalance timeout. Kafka's rule
 * (quiet.ms -1): another whole delay if a member was added during the last
 * one. cohort's: until no consumer has arrived for quiet.ms (at most the
 * delay), so consumers that started together are not kept waiting a second
 * delay. */
static int32_t
initial_delay_extension(const ch_coord_group *g, int64_t now)
{
	const ch_coord_config *cfg = &g->coord->cfg;
	if (g->initial.remaining_ms <= 0)
		return 0;
	if (cfg->initial_rebalance_quiet_ms < 0)
		return g->initial.member_joined
			       ? CH_MIN(cfg->initial_rebalance_delay_ms, g->initial.remaining_ms)
			       : 0;
	if (!g->initial.last_arrival)
		return 0;
	/* never longer than the delay itself: delay 0 still means no wait */
	int32_t quiet = CH_MIN(cfg->initial_rebalance_quiet_ms, cfg->initial_rebalance_delay_ms);
	int64_t quiet_until = g->initial.last_arrival + quiet;
	return quiet_until > now ? (int32_t)CH_MIN(quiet_until - now, g->initial.remaining_ms) : 0;
}

/* The join timer: the initial delay goes on while members keep arriving (within the rebalance
 * timeout); otherwise the join phase ends. */
static void
join_timer_fired(ch_coord_group *g, int64_t now)
{
	ch_coord *c = g->coord;
	if (g->state != CH_COORD_GROUP_PREPARING_REBALANCE)
		return;
	int32_t more = g->join_wait == JOIN_WAIT_INITIAL ? initial_delay_extension(g, now) : 0;
	if (more > 0) {
		g->initial.remaining_ms = CH_MAX(g->initial.remaining_ms - more, 0);
		g->initial.member_joined = false;
		timer_set(c, &g->join_timer, now + more);
		return;
	}
	complete_join(g, now);
}

/* The pending-sync timer: members that sent no SyncGroup for this generation are removed and
 * the group rebalances. */
static void
sync_timer_fired(ch_coord_group *g, int64_t now)
{
	if ((g->state != CH_COORD_GROUP_COMPLETING_REBALANCE &&
	     g->state != CH_COORD_GROUP_STABLE) ||
	    g->pending_sync == 0)
		return;
	int removed = 0;
	char first[COORD_DETAIL_MAX / 2] = "";
	for (ch_coord_member *m = g->first, *next; m; m = next) {
		next = m->next;
		if (m->pending_sync) {
			if (!removed++)
				snprintf(first, sizeof(first), "%s", m->member_id);
			member_remove(g, m, now);
		}
	}
	coord_reason why = ch_coord_reason_make(
		CH_COORD_CAUSE_SYNC_TIMEOUT,
		"%d member(s) sent no SyncGroup for generation %d in time (%s%s); removed", removed,
		g->generation, first, removed > 1 ? ", ..." : "");
	prepare_rebalance(g, now, &why);
}

/* A member's session (or new-member join) timer: a member with a parked request is alive and
 * re-armed; otherwise it is removed (Kafka's heartbeat expiration). */
static void
session_expired(ch_coord_member *m, int64_t now)
{
	ch_coord_group *g = m->group;
	ch_coord *c = g->coord;
	if (m->session_due > now) { /* fired early: heartbeats moved the expiry */
		timer_set(c, &m->session, m->session_due);
		return;
	}
	if (m->join_token && m->is_new) {
		if (now - m->joined_at < c->cfg.new_member_join_timeout_ms) {
			session_arm(c, m, m->joined_at + c->cfg.new_member_join_timeout_ms);
			return;
		}
	} else if (m->join_token || m->sync_token) {
		/* Kafka's hasSatisfiedHeartbeat: a member with a parked request
		 * is alive. Keep watching it: if the request is answered with an
		 * error and the member then goes silent, it must still expire. */
		session_arm(c, m, now + m->session_timeout_ms);
		return;
	}
	coord_reason why = ch_coord_reason_make(CH_COORD_CAUSE_SESSION_TIMEOUT,
						"session of member %s%s%s%s expired after %d ms",
						m->member_id, m->instance_id ? " (instance " : "",
						m->instance_id ? m->instance_id : "",
						m->instance_id ? ")" : "", m->session_timeout_ms);
	remove_member_and_update(g, m, now, &why);
}

/* The group a timer belongs to; NULL for the coordinator's own
 * (retention). */
static const ch_coord_group *
timer_group(const coord_timer *t)
{
	switch (t->kind) {
	case T_GROUP_JOIN:
	case T_GROUP_SYNC:
		return t->owner;
	case T_MEMBER:
		return ((const ch_coord_member *)t->owner)->group;
	case T_PENDING:
		return ((const pending_member *)t->owner)->group;
	default:
		return NULL;
	}
}

/* Runs what a due timer (already out of the heap) stands for. */
static void
timer_fire(ch_coord *c, coord_timer *t, int64_t now)
{
	switch (t->kind) {
	case T_GROUP_JOIN:
		join_timer_fired(t->owner, now);
		break;
	case T_GROUP_SYNC:
		sync_timer_fired(t->owner, now);
		break;
	case T_MEMBER:
		session_expired(t->owner, now);
		break;
	case T_PENDING: {
		pending_member *p = t->owner;
		ch_coord_group *g = p->group;
		COORD_LOGI(c, "group %s: pending member %s never rejoined; dropping it",
			   g->group_id, p->member_id);
		pending_remove(g, p);
		try_complete_join(g, now);
		break;
	}
	case T_RETENTION:
		ch_coord_retention_run(c, now);
		timer_set(c, &c->retention, now + c->cfg.offsets_retention_check_ms);
		break;
	}
}

int64_t
ch_coord_next_deadline(const ch_coord *c)
{
	const ch_heap_node *n = ch_heap_top(&c->timers);
	return n ? n->deadline : INT64_MAX;
}

void
ch_coord_tick(ch_coord *c, int64_t now)
{
	for (;;) {
		ch_heap_node *n = ch_heap_top(&c->timers);
		if (!n || n->deadline > now)
			break;
		coord_timer *t = (coord_timer *)n;
		ch_heap_remove(&c->timers, n);
		const ch_coord_group *g = timer_group(t);
		/* each fired timer's group is checked after it (all, for retention) */
		COORD_CHECK_ON_RETURN(c, g ? ch_str_c(g->group_id) : CH_STR_NULL);
		timer_fire(c, t, now);
	}
}

/* ---- lifecycle ------------------------------------------------------------------- */

ch_coord *
ch_coord_new(const ch_coord_config *cfg, const ch_coord_ops *ops, int64_t now)
{
	if (!ops->respond || !ops->append || !ops->random_uuid)
		abort(); /* the shell must supply these (ch_coord.h) */
	ch_coord *c = ch_xcalloc(1, sizeof(*c));
	c->cfg = *cfg;
	if (c->cfg.offsets_partitions <= 0)
		c->cfg.offsets_partitions = 50;
	c->ops = *ops;
	c->load_state = ch_xcalloc((size_t)c->cfg.offsets_partitions, 1); /* all UNLOADED */
	ch_map_init(&c->groups);
	ch_heap_init(&c->timers);
	c->retention.kind = T_RETENTION;
	c->retention.owner = c;
	timer_set(c, &c->retention, now + c->cfg.offsets_retention_check_ms);
	COORD_CHECK_AFTER(c, CH_STR_NULL);
	return c;
}

/* Frees a group and everything in it, answering nothing (shutdown, deletion). */
static void
group_free(ch_coord_group *g)
{
	ch_coord *c = g->coord;
	if (c->load_last == g)
		c->load_last = NULL;
	while (g->first) /* without answering: the coordinator is going away */
		ch_coord_member_drop(g, g->first);
	ch_map_foreach_safe(&g->pending, e, tmp)
	{
		pending_remove(g, e->value);
	}
	timer_cancel(c, &g->join_timer);
	timer_cancel(c, &g->sync_timer);
	ch_coord_offsets_free(g);
	ch_map_free(&g->members);
	ch_map_free(&g->static_members);
	ch_map_free(&g->pending);
	ch_map_free(&g->protocol_votes);
	free(g->protocol_type);
	free(g->protocol_name);
	ch_coord_history_free(g);
	free(g);
}

void
ch_coord_group_delete(ch_coord_group *g, int64_t now, const coord_reason *why)
{
	ch_coord *c = g->coord;
	if (why->cause == CH_COORD_CAUSE_DELETED)
		c->stats.groups_deleted++;
	ch_coord_group_set_state(g, CH_COORD_GROUP_DEAD, now, why);
	ch_map_remove(&c->groups, g->group_id, strlen(g->group_id));
	group_free(g);
}

/* An append still in flight when the coordinator is freed: its data goes,
 * nothing is answered. */
static void
append_drop(pending_append *a)
{
	if (a->kind == A_STATIC_STORE) {
		static_store_free(a->data);
	} else if (a->kind == A_DEFERRED) {
		deferred *d = a->data; /* shared by its appends */
		if (--d->outstanding == 0) {
			ch_arena_reset(&d->arena);
			free(d);
		}
	}
	free(a->group_id);
	free(a);
}

void
ch_coord_free(ch_coord *c)
{
	ch_map_foreach_safe(&c->groups, e, tmp)
	{
		ch_coord_group *g = e->value;
		ch_map_remove_entry(&c->groups, e);
		group_free(g);
	}
	ch_map_free(&c->groups);
	ch_coord_append_table_free(&c->appends, append_drop);
	ch_heap_free(&c->timers);
	free(c->load_state);
	free(c);
}

void
ch_coord_shutdown(ch_coord *c)
{
	COORD_CHECK_ON_RETURN(c, CH_STR_NULL);
	ch_map_foreach (&c->groups, e) {
		ch_coord_group *g = e->value;
		for (ch_coord_member *m = g->first; m; m = m->next) {
			if (m->join_token) {
				void *t = m->join_token;
				member_unpark_join(g, m);
				join_error(c, t, CH_KERR_NOT_COORDINATOR, m->member_id, -1);
			}
			if (m->sync_token) {
				void *t = m->sync_token;
				m->sync_token = NULL;
				sync_respond(c, g, t, CH_KERR_NOT_COORDINATOR, NULL, 0);
			}
		}
	}
}

/* ---- introspection --------------------------------------------------------------- */

ch_coord_group_info
ch_coord_group_get_info(const ch_coord *c, const char *group_id)
{
	ch_coord_group_info i;
	memset(&i, 0, sizeof(i));
	ch_coord_group *g = ch_coord_group_find(c, cstr(group_id));
	if (!g) {
		i.state = CH_COORD_GROUP_DEAD;
		return i;
	}
	i.exists = true;
	i.state = g->state;
	i.generation = g->generation;
	i.members = (int32_t)g->members.n;
	i.pending_members = (int32_t)g->pending.n;
	i.leader = g->leader ? g->leader->member_id : NULL;
	i.protocol = g->protocol_name;
	i.offsets = (int32_t)g->offsets.n;
	return i;
}

bool
ch_coord_group_export(const ch_coord *c, const char *group_id,
		      void (*fn)(void *ud, const ch_coord_export_group *g), void *ud)
{
	const ch_coord_group *g = ch_coord_group_find(c, cstr(group_id));
	if (!g || g->members.n == 0)
		return false;
	size_t n = g->members.n, np = 0;
	for (const ch_coord_member *m = g->first; m; m = m->next)
		np += (size_t)m->n_protocols;
	ch_coord_export_member *v = ch_xcalloc(n, sizeof(*v));
	ch_coord_export_protocol *pv = ch_xcalloc(np ? np : 1, sizeof(*pv));
	size_t i = 0, k = 0;
	for (const ch_coord_member *m = g->first; m; m = m->next, i++) {
		v[i] = (ch_coord_export_member){m->member_id,
						m->instance_id,
						coord_member_client_id(m),
						coord_member_client_host(m),
						m->session_timeout_ms,
						m->rebalance_timeout_ms,
						pv + k,
						m->n_protocols,
						m->assignment,
						m->assignment ? m->assignment_len : 0};
		for (int32_t j = 0; j < m->n_protocols; j++)
			pv[k++] = (ch_coord_export_protocol){m->protocols[j].name,
							     m->protocols[j].metadata,
							     m->protocols[j].metadata_len};
	}
	ch_coord_export_group x = {g->state,   g->generation, g->protocol_type, g->protocol_name, v,
				   (int32_t)n, false};
	fn(ud, &x);
	free(v);
	free(pv);
	return true;
}

void
ch_coord_group_hand_over(ch_coord *c, const char *group_id, int64_t now)
{
	COORD_CHECK_ON_RETURN(c, cstr(group_id));
	ch_coord_group *g = ch_coord_group_find(c, cstr(group_id));
	if (!g)
		return;
	/* completeAllJoinFutures / completeAllSyncFutures(REBALANCE_IN_PROGRESS):
	 * they rejoin, now as classic members of the consumer group */
	for (ch_coord_member *m = g->first; m; m = m->next) {
		if (m->join_token) {
			void *t = m->join_token;
			member_unpark_join(g, m);
			join_error(c, t, CH_KERR_REBALANCE_IN_PROGRESS, m->member_id,
				   g->generation);
		}
		if (m->sync_token) {
			void *t = m->sync_token;
			m->sync_token = NULL;
			sync_respond(c, g, t, CH_KERR_REBALANCE_IN_PROGRESS, NULL, 0);
		}
	}
	while (g->first)
		member_remove(g, g->first, now);
	ch_map_foreach_safe(&g->pending, e, tmp) pending_remove(g, e->value);
	timer_cancel(c, &g->join_timer);
	timer_cancel(c, &g->sync_timer);
	g->store_id = 0; /* a sync store in flight answers nothing now */
	g->leader = NULL;
	g->rebalance_deferred = false;
	free(g->protocol_type);
	free(g->protocol_name);
	g->protocol_type = g->protocol_name = NULL;
	coord_reason why = ch_coord_reason_make(CH_COORD_CAUSE_MEMBER_LEFT,
						"upgraded to a consumer group (KIP-848)");
	ch_coord_group_set_state(g, CH_COORD_GROUP_EMPTY, now, &why);
	ch_coord_record r;
	ch_coord_record_group_tombstone(&r, g);
	ch_coord_append_issue(c, ch_coord_append_new(c, A_FIRE, g, NULL, 0), &r, 1, g->partition);
	ch_coord_record_free(&r);
	if (g->offsets.n == 0)
		ch_coord_group_delete(g, now, &why);
}

void
ch_coord_group_import(ch_coord *c, const char *group_id, const ch_coord_export_group *x,
		      int64_t now)
{
	COORD_CHECK_ON_RETURN(c, cstr(group_id));
	ch_coord_group *g = ch_coord_group_get_or_create(c, cstr(group_id), now);
	while (g->first)
		member_remove(g, g->first, now);
	g->generation = x->generation;
	free(g->protocol_type);
	free(g->protocol_name);
	g->protocol_type = ch_xstrdup(x->protocol_type ? x->protocol_type : "consumer");
	g->protocol_name = ch_xstrdup(x->protocol_name ? x->protocol_name : "");
	for (int32_t i = 0; i < x->nmembers; i++) {
		const ch_coord_export_member *xm = &x->members[i];
		ch_bytes sub = {(const uint8_t *)"", 0};
		for (int32_t k = 0; k < xm->nprotocols; k++)
			if (strcmp(xm->protocols[k].name, g->protocol_name) == 0)
				sub = (ch_bytes){xm->protocols[k].metadata, xm->protocols[k].len};
		ch_coord_member *m = ch_coord_member_restore(
			g, cstr(xm->member_id), cstr(xm->instance_id), cstr(xm->client_id),
			cstr(xm->client_host), xm->session_timeout_ms, xm->rebalance_timeout_ms,
			sub,
			(ch_bytes){xm->assignment ? xm->assignment : (const uint8_t *)"",
				   xm->assignment_len});
		ch_coord_member_touch_session(m, now);
	}
	g->leader = g->first;
	coord_reason why =
		x->rebalance
			? ch_coord_reason_make(
				  CH_COORD_CAUSE_MEMBER_LEFT,
				  "Downgrade group %s from consumer to classic for member leaving.",
				  g->group_id)
			: ch_coord_reason_make(CH_COORD_CAUSE_STATIC_REPLACED,
					       "Downgrade group %s from consumer to classic: a "
					       "static member replaced the last consumer one.",
					       g->group_id);
	ch_coord_group_set_state(g, CH_COORD_GROUP_STABLE, now, &why);
	ch_coord_group_store(g, A_FIRE, NULL, 0, now, NULL);
	if (x->rebalance)
		prepare_rebalance(g, now, &why);
}

size_t
ch_coord_group_count(const ch_coord *c)
{
	return c->groups.n;
}

size_t
ch_coord_memory(const ch_coord *c)
{
	size_t b =
		sizeof(*c) + c->timers.cap * sizeof(void *) + c->groups.nbuckets * sizeof(void *);
	ch_map_foreach (&c->groups, e) {
		const ch_coord_group *g = e->value;
		b += sizeof(*g) + sizeof(ch_map_entry) + e->klen + 1;
		b += (g->members.nbuckets + g->static_members.nbuckets + g->offsets.nbuckets) *
		     sizeof(void *);
		for (const ch_coord_member *m = g->first; m; m = m->next) {
			b += sizeof(*m) + sizeof(ch_map_entry) + strlen(m->member_id) + 1;
			b += strlen(coord_member_client_id(m)) + 1 +
			     strlen(coord_member_client_host(m)) + 1;
			if (m->instance_id)
				b += strlen(m->instance_id) + 1 + sizeof(ch_map_entry) +
				     strlen(m->instance_id) + 1;
			b += (size_t)m->n_protocols * sizeof(member_protocol);
			for (int32_t i = 0; i < m->n_protocols; i++)
				b += strlen(m->protocols[i].name) + 1 +
				     (size_t)m->protocols[i].metadata_len;
			b += (size_t)m->assignment_len;
		}
		ch_map_foreach (&g->offsets, o) {
			const offset_entry *oe = o->value;
			b += sizeof(*oe) + sizeof(ch_map_entry) + o->klen + 1 +
			     (size_t)oe->metadata_len + 1;
		}
	}
	return b;
}
