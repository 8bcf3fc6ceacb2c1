/*
 * cl_member.c: the consumer group member, classic protocol and the consumer
 * protocol of KIP-848 (group.protocol=consumer, its own section below)
 * (I/O thread).
 *
 * Kafka's ConsumerCoordinator, as a state machine driven by responses and
 * timers:
 *
 *   UNJOINED --(subscribe)--> [find coordinator] --> REVOKING? --> JOINING
 *   JOINING  --JoinGroup ok, leader--> ASSIGNING --metadata--> SYNCING
 *   JOINING  --JoinGroup ok, follower--> SYNCING
 *   SYNCING  --SyncGroup ok--> STABLE (cooperative: REVOKING what moved,
 *                              then JOINING again at once, KIP-429)
 *   STABLE   --Heartbeat REBALANCE_IN_PROGRESS / metadata change--> REVOKING|JOINING
 *   any      --UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION--> partitions LOST, rejoin
 *   any      --FENCED_INSTANCE_ID, GROUP_AUTHORIZATION_FAILED, ...--> FATAL
 *   STABLE   --max.poll.interval.ms without poll--> LeaveGroup, LOST, POLL_EXPIRED
 *                                                   (rejoin at the next poll)
 *   any      --close--> REVOKING --> LeaveGroup (dynamic members only) --> CLOSED
 *   any      --unsubscribe--> REVOKING (LOST mid-rebalance) --> LeaveGroup
 *                             (dynamic only) --> UNJOINED, no generation
 *
 * REVOKING hands a REVOKED event to the polling thread and waits for its
 * ack (cl_member_revoke_done); heartbeats go on meanwhile, so a slow
 * revoke callback does not cost the session. The rebalance protocol is
 * cooperative only when every configured assignor supports it (Java's
 * ConsumerCoordinator rule); else eager: everything is revoked before each
 * JoinGroup.
 *
 * The coordinator gets its own connection (node id INT32_MAX - id, as
 * Java does), so heartbeats never wait behind a long-polling Fetch.
 */
#include "client/cl_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign/ch_assign_proto.h"
#include "common/ch_log.h"
#include "common/ch_uuid.h"

typedef enum m_state {
	M_UNJOINED = 0,
	M_REVOKING,
	M_JOINING,
	M_ASSIGNING,
	M_SYNCING,
	M_STABLE,
	M_POLL_EXPIRED,
	M_LEAVING,
	M_CLOSED,
	M_FATAL,
} m_state;

static const char *const state_names[] = {
	"UNJOINED", "REVOKING",     "JOINING", "ASSIGNING", "SYNCING",
	"STABLE",   "POLL_EXPIRED", "LEAVING", "CLOSED",    "FATAL",
};

/* What to do once the polling thread acknowledged a revoke. */
typedef enum m_after_revoke {
	AFTER_JOIN,        /* send JoinGroup */
	AFTER_STABLE,      /* cooperative: back to STABLE, then rejoin */
	AFTER_LEAVE,       /* close: LeaveGroup */
	AFTER_UNSUBSCRIBE, /* unsubscribe: what is left, then LeaveGroup */
	AFTER_RECONCILE,   /* consumer protocol: take the rest of the target */
} m_after_revoke;

/* A partition of a consumer-protocol assignment, as the coordinator names it. */
typedef struct cg_part {
	ch_uuid topic_id;
	int32_t partition;
} cg_part;

/* A JoinGroup member, copied out of the response (the leader's input). */
typedef struct m_join_member {
	char *member_id;
	char *instance_id;
	uint8_t *metadata;
	int32_t metadata_len;
} m_join_member;

/* Partition counts of the group's topics when the leader assigned. */
typedef struct m_snapshot {
	char *topic;
	int32_t partitions;
} m_snapshot;

struct cl_member {
	cl_client *c;
	m_state state;
	char **topics; /* the subscription */
	int ntopics;
	bool cooperative; /* the rebalance protocol */

	cl_broker *coord; /* NULL: unknown */
	bool finding;     /* FindCoordinator in flight or scheduled */
	int find_fails;
	ch_timer find_timer;
	struct m_coord_waiter *coord_waiters;

	char *member_id;    /* "" until the coordinator gives one */
	int32_t generation; /* -1: none */
	char *protocol;     /* the chosen assignor's name */
	bool leader;
	bool need_rejoin;
	const char *rejoin_reason;
	int join_fails;
	bool reported_failure; /* REBALANCE_FAILED reported for this streak */
	ch_timer join_timer;   /* backoff before the next join attempt */

	cl_tp **owned; /* current assignment */
	int nowned;
	cl_tp **revoking; /* handed to the polling thread, not yet acked */
	int nrevoking;
	m_after_revoke after_revoke;
	cl_tp **pending_add; /* cooperative: assigned once the revoke is acked */
	int npending_add;
	cl_tp **prev; /* eager: what the last revoke before a join took,
				    the "previous assignment" sticky reports */
	int nprev;

	m_join_member *jmembers; /* leader: the members of this generation */
	int32_t njmembers;
	uint8_t **assignments; /* leader: per member, encoded */
	int32_t *assignment_lens;
	m_snapshot *snap;
	int32_t nsnap;

	ch_timer hb_timer;
	bool hb_inflight;
	ch_timer poll_timer; /* max.poll.interval.ms */

	cl_wait *close_wait;
	cl_wait *unsub_wait; /* cohort_unsubscribe in progress */

	/* group.protocol=consumer (KIP-848); generation is the member epoch */
	bool cg;
	bool cg_named;         /* the coordinator gave the member id (v0) */
	bool cg_again;         /* a heartbeat is due right after the one in flight */
	bool cg_assigned_once; /* an assigned callback ran in this membership */
	bool cg_has_target;    /* cg_target is still to be reconciled */
	cg_part *cg_target;    /* the last assignment the coordinator sent */
	int ncg_target;
	int32_t cg_interval_ms; /* the coordinator's heartbeat interval */
};

static void ensure_active(cl_member *m);
static void unsubscribe_step(cl_member *m);
static void cg_heartbeat(cl_member *m);
static void cg_reconcile(cl_member *m);
static bool cg_leave(cl_member *m, const char *why);
static void send_join(cl_member *m);
static void find_coordinator(cl_member *m);

/* Moves m to state s (logged with why); nothing else changes here. */
static void
set_state(cl_member *m, m_state s, const char *why)
{
	if (m->state == s)
		return;
	CH_LOGD(CL_LOG, "member %s: %s -> %s (%s)", m->member_id, state_names[m->state],
		state_names[s], why);
	m->state = s;
}

static bool
instance_static(const cl_member *m)
{
	return m->c->conf.group_instance_id != NULL;
}

/* Sets m's member id to p[0..len) ("" for NULL or len <= 0) and publishes a copy in
 * c->member_id under c->mu; keeps the old id without memory. */
static void
set_member_id(cl_member *m, const char *p, int32_t len)
{
	char *id = strndup(p ? p : "", p && len > 0 ? (size_t)len : 0);
	if (!id)
		return; /* keep the old one; the next join fixes it */
	free(m->member_id);
	m->member_id = id;
	char *copy = strdup(id);
	cl_lock(m->c);
	free(m->c->member_id);
	m->c->member_id = copy;
	cl_unlock(m->c);
}

typedef struct m_coord_waiter {
	struct m_coord_waiter *next;
	void (*fn)(cl_client *c, void *ud);
	void *ud;
} m_coord_waiter;

/* Runs (and frees) every call waiting for the coordinator, in the order they came; each
 * looks at m->coord itself. */
static void
run_coord_waiters(cl_member *m)
{
	m_coord_waiter *w = m->coord_waiters, *rev = NULL;
	m->coord_waiters = NULL;
	while (w) { /* the list is newest first */
		m_coord_waiter *next = w->next;
		w->next = rev;
		rev = w;
		w = next;
	}
	while (rev) {
		m_coord_waiter *next = rev->next;
		rev->fn(m->c, rev->ud);
		free(rev);
		rev = next;
	}
}

/* A fatal error: the application learns it from cohort_poll. */
static void
fail_fatal(cl_member *m, cohort_err err, const char *what)
{
	cl_client *c = m->c;
	CH_LOGW(CL_LOG, "group %s: %s: %s (fatal)", c->conf.group_id, what, cohort_err_name(err));
	set_state(m, M_FATAL, what);
	ch_timer_cancel(c->loop, &m->hb_timer);
	ch_timer_cancel(c->loop, &m->join_timer);
	cl_lock(c);
	if (!c->fatal)
		c->fatal = err;
	pthread_cond_broadcast(&c->cond);
	cl_unlock(c);
	if (m->close_wait) {
		cl_wait_finish(c, m->close_wait, err);
		m->close_wait = NULL;
	}
	if (m->unsub_wait) {
		cl_wait_finish(c, m->unsub_wait, err);
		m->unsub_wait = NULL;
	}
	run_coord_waiters(m); /* no coordinator will come: they fail now */
}

/* Push an event with these partitions (c->mu taken here). */
static void
push_tps(cl_member *m, cl_event_kind kind, cl_tp **tps, int n)
{
	cl_event *ev = calloc(1, sizeof(*ev));
	cohort_tp *list = cl_tps_new(tps, (size_t)n);
	if (!ev || (!list && n)) {
		free(ev);
		free(list);
		fail_fatal(m, COHORT_ERR__NOMEM, "rebalance event");
		return;
	}
	ev->kind = kind;
	ev->tps = list;
	ev->n = (size_t)n;
	cl_lock(m->c);
	cl_event_push(m->c, ev);
	cl_unlock(m->c);
}

/* The partitions are lost: unowned at once, the application told. */
static void
lose_partitions(cl_member *m, const char *why)
{
	cl_client *c = m->c;
	if (m->nowned == 0 && m->nrevoking == 0)
		return;
	CH_LOGI(CL_LOG, "group %s: %d partitions lost (%s)", c->conf.group_id,
		m->nowned + m->nrevoking, why);
	cl_tp **all = malloc(sizeof(cl_tp *) * (size_t)(m->nowned + m->nrevoking + 1));
	int n = 0;
	cl_lock(c);
	for (int i = 0; i < m->nowned; i++) {
		cl_tp_drop(m->owned[i]);
		if (all)
			all[n++] = m->owned[i];
	}
	for (int i = 0; i < m->nrevoking; i++) {
		cl_tp_drop(m->revoking[i]);
		if (all)
			all[n++] = m->revoking[i];
	}
	cl_unlock(c);
	m->nowned = m->nrevoking = 0;
	m->npending_add = 0;
	m->nprev = 0; /* lost partitions are claimed by nobody */
	push_tps(m, CL_EV_LOST, all, n);
	free(all);
}

/* Forget the generation (and for UNKNOWN_MEMBER_ID the member id): what
 * is owned is lost. */
static void
reset_generation(cl_member *m, bool member_id_too, const char *why)
{
	lose_partitions(m, why);
	m->generation = -1;
	m->leader = false;
	if (member_id_too)
		set_member_id(m, "", 0);
}

/* Marks that m must join again; why becomes JoinGroup's reason, so it must be static. */
static void
request_rejoin(cl_member *m, const char *why)
{
	if (!m->need_rejoin)
		CH_LOGD(CL_LOG, "group %s: rejoin: %s", m->c->conf.group_id, why);
	m->need_rejoin = true;
	m->rejoin_reason = why;
}

/* ---- coordinator ---------------------------------------------------------- */

/* Encodes FindCoordinator for the group (key type 0), as Key and as CoordinatorKeys (v4+). */
static void
build_find(cl_client *c, int16_t version, ch_buf *b, void *ud)
{
	(void)ud;
	ch_FindCoordinatorRequest r;
	ch_FindCoordinatorRequest_init(&r);
	ch_str key = ch_str_c(c->conf.group_id);
	r.Key = key;
	r.KeyType = 0;
	r.CoordinatorKeys = &key;
	r.CoordinatorKeys_n = 1;
	ch_FindCoordinatorRequest_encode(b, version, &r);
}

/* Schedules the next FindCoordinator after a growing backoff (find_timer). */
static void
find_later(cl_member *m)
{
	cl_client *c = m->c;
	m->find_fails++;
	int64_t wait =
		cl_backoff(c->conf.retry_backoff_ms, c->conf.retry_backoff_max_ms, m->find_fails);
	ch_timer_arm(c->loop, &m->find_timer, ch_loop_now(c->loop) + wait);
}

/* FindCoordinator answer: records the coordinator (node INT32_MAX - id), runs the waiters
 * and drives the member on; errors back off, GROUP_AUTHORIZATION/INVALID_GROUP are fatal. */
static void
done_find(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	cl_member *m = ud;
	m->finding = false;
	if (err == COHORT_ERR__CLOSED || m->state == M_CLOSED || m->state == M_FATAL)
		return;
	int16_t kerr = 0;
	int32_t node = -1, port = 0;
	ch_str host = CH_STR_NULL;
	if (!err) {
		const ch_FindCoordinatorResponse *r = resp;
		if (version >= 4) {
			if (r->Coordinators_n < 1) {
				kerr = CH_KERR_COORDINATOR_NOT_AVAILABLE;
			} else {
				kerr = r->Coordinators[0].ErrorCode;
				node = r->Coordinators[0].NodeId;
				host = r->Coordinators[0].Host;
				port = r->Coordinators[0].Port;
			}
		} else {
			kerr = r->ErrorCode;
			node = r->NodeId;
			host = r->Host;
			port = r->Port;
		}
	}
	if (err || kerr) {
		if (kerr == CH_KERR_GROUP_AUTHORIZATION_FAILED ||
		    kerr == CH_KERR_INVALID_GROUP_ID) {
			fail_fatal(m, kerr, "FindCoordinator");
			return;
		}
		CH_LOGD(CL_LOG, "FindCoordinator for %s: %s", c->conf.group_id,
			cohort_err_name(err ? err : kerr));
		find_later(m);
		return;
	}
	m->find_fails = 0;
	m->coord = cl_broker_upsert(c, INT32_MAX - node, host.p, host.len, port);
	if (!m->coord) {
		find_later(m);
		return;
	}
	CH_LOGD(CL_LOG, "group %s: coordinator %d at %.*s:%d", c->conf.group_id, node, host.len,
		host.p, port);
	run_coord_waiters(m);
	ensure_active(m);
}

/* Sends FindCoordinator to any broker unless one is in flight, backing off, known, or the
 * client is closing. */
static void
find_coordinator(cl_member *m)
{
	cl_client *c = m->c;
	if (m->finding || m->coord || c->closing || m->state == M_FATAL || m->state == M_CLOSED)
		return;
	if (ch_timer_armed(&m->find_timer))
		return; /* backing off */
	cl_broker *b = cl_broker_any(c);
	if (!b)
		return;
	m->finding = true;
	cl_request(b, CH_APIKEY_FIND_COORDINATOR, build_find, done_find, m);
}

/* find_timer: the backoff passed, look for the coordinator again. */
static void
on_find_timer(ch_loop *loop, ch_timer *t, void *ud)
{
	(void)loop;
	(void)t;
	find_coordinator(ud);
}

void
cl_member_coordinator_lost(cl_client *c, int16_t err)
{
	cl_member *m = c->member;
	if (!m || !m->coord)
		return;
	CH_LOGD(CL_LOG, "group %s: coordinator lost (%s)", c->conf.group_id, cohort_err_name(err));
	m->coord = NULL;
	find_coordinator(m);
}

bool
cl_member_cancel_waiter(cl_client *c, void *ud)
{
	cl_member *m = c->member;
	for (m_coord_waiter **pp = m ? &m->coord_waiters : NULL; pp && *pp; pp = &(*pp)->next)
		if ((*pp)->ud == ud) {
			m_coord_waiter *w = *pp;
			*pp = w->next;
			free(w);
			return true;
		}
	return false;
}

cohort_err
cl_member_failed(cl_client *c)
{
	cl_member *m = c->member;
	if (!m || m->state != M_FATAL)
		return COHORT_OK;
	cl_lock(c);
	cohort_err err = c->fatal;
	cl_unlock(c);
	return err ? err : COHORT_ERR__STATE;
}

cl_broker *
cl_member_coordinator(cl_client *c)
{
	return c->member ? c->member->coord : NULL;
}

bool
cl_member_with_coordinator(cl_client *c, void (*fn)(cl_client *c, void *ud), void *ud)
{
	cl_member *m = c->member;
	if (m->coord || m->state == M_FATAL) {
		fn(c, ud); /* fatal: it sees no coordinator and fails */
		return false;
	}
	m_coord_waiter *w = malloc(sizeof(*w));
	if (!w) {
		fn(c, ud); /* it sees no coordinator and fails */
		return false;
	}
	w->fn = fn;
	w->ud = ud;
	w->next = m->coord_waiters;
	m->coord_waiters = w;
	find_coordinator(m);
	return true;
}

/* Errors that mean "find the coordinator again" (Kafka's list). */
static bool
coordinator_error(int err)
{
	return err == CH_KERR_NOT_COORDINATOR || err == CH_KERR_COORDINATOR_NOT_AVAILABLE ||
	       err == COHORT_ERR__TRANSPORT || err == COHORT_ERR__TIMED_OUT;
}

/* ---- heartbeat and poll interval ------------------------------------------ */

/* Encodes Heartbeat with m's generation, member id and group.instance.id. */
static void
build_heartbeat(cl_client *c, int16_t version, ch_buf *b, void *ud)
{
	cl_member *m = ud;
	ch_HeartbeatRequest r;
	ch_HeartbeatRequest_init(&r);
	r.GroupId = ch_str_c(c->conf.group_id);
	r.GenerationId = m->generation;
	r.MemberId = ch_str_c(m->member_id);
	r.GroupInstanceId = ch_str_c(c->conf.group_instance_id);
	ch_HeartbeatRequest_encode(b, version, &r);
}

static bool
heartbeating(const cl_member *m)
{
	return m->generation >= 0 && (m->state == M_STABLE || m->state == M_REVOKING ||
				      m->state == M_ASSIGNING || m->state == M_SYNCING);
}

static void
arm_heartbeat(cl_member *m)
{
	cl_client *c = m->c;
	ch_timer_arm(c->loop, &m->hb_timer, ch_loop_now(c->loop) + c->conf.heartbeat_interval_ms);
}

/* Heartbeat answer: re-arms while heartbeating; REBALANCE_IN_PROGRESS rejoins, a stale
 * generation loses the partitions, fencing/authorization is fatal, coordinator errors refind. */
static void
done_heartbeat(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	(void)version;
	cl_member *m = ud;
	m->hb_inflight = false;
	if (err == COHORT_ERR__CLOSED || m->state >= M_LEAVING)
		return;
	int e = err ? err : ((ch_HeartbeatResponse *)resp)->ErrorCode;
	if (heartbeating(m))
		arm_heartbeat(m);
	switch (e) {
	case 0:
		return;
	case CH_KERR_REBALANCE_IN_PROGRESS:
		if (m->state == M_STABLE) {
			request_rejoin(m, "group is rebalancing");
			ensure_active(m);
		}
		return;
	case CH_KERR_ILLEGAL_GENERATION:
	case CH_KERR_UNKNOWN_MEMBER_ID:
		if (m->state == M_STABLE || m->state == M_REVOKING) {
			reset_generation(m, e == CH_KERR_UNKNOWN_MEMBER_ID, cohort_err_name(e));
			request_rejoin(m, cohort_err_name(e));
			if (m->state == M_REVOKING)
				return; /* the ack continues */
			set_state(m, M_UNJOINED, cohort_err_name(e));
			ensure_active(m);
		}
		return;
	case CH_KERR_FENCED_INSTANCE_ID:
		lose_partitions(m, "fenced"); /* another member has them now */
		fail_fatal(m, e, "Heartbeat");
		return;
	case CH_KERR_GROUP_AUTHORIZATION_FAILED:
		fail_fatal(m, e, "Heartbeat");
		return;
	case CH_KERR_COORDINATOR_LOAD_IN_PROGRESS:
		return;
	default:
		if (coordinator_error(e))
			cl_member_coordinator_lost(c, (int16_t)(e > 0 ? e : 0));
		return;
	}
}

/* hb_timer: sends one Heartbeat while heartbeating (none in flight), or looks for the
 * coordinator and re-arms when it is unknown. */
static void
on_hb_timer(ch_loop *loop, ch_timer *t, void *ud)
{
	(void)loop;
	(void)t;
	cl_member *m = ud;
	if (m->cg) {
		if (!m->hb_inflight) /* else its answer re-arms the timer */
			cg_heartbeat(m);
		return;
	}
	if (!heartbeating(m) || m->hb_inflight)
		return;
	if (!m->coord) {
		find_coordinator(m);
		arm_heartbeat(m);
		return;
	}
	m->hb_inflight = true;
	cl_request(m->coord, CH_APIKEY_HEARTBEAT, build_heartbeat, done_heartbeat, m);
}

static void send_leave(cl_member *m, const char *reason);

/* poll_timer: past max.poll.interval.ms without a poll, a dynamic member leaves, the
 * partitions are lost and m waits in POLL_EXPIRED; else re-arms for the new deadline. */
static void
on_poll_timer(ch_loop *loop, ch_timer *t, void *ud)
{
	(void)t;
	cl_member *m = ud;
	cl_client *c = m->c;
	cl_lock(c);
	int64_t last = c->last_poll;
	cl_unlock(c);
	int64_t now = ch_loop_now(loop);
	if (m->state == M_UNJOINED || m->state >= M_POLL_EXPIRED)
		return;
	if (now - last < c->conf.max_poll_interval_ms) {
		ch_timer_arm(loop, &m->poll_timer, last + c->conf.max_poll_interval_ms + 1);
		return;
	}
	CH_LOGW(CL_LOG,
		"group %s: no poll for %lld ms (max.poll.interval.ms %d): leaving the group",
		c->conf.group_id, (long long)(now - last), c->conf.max_poll_interval_ms);
	/* KIP-800's reason, Java's words */
	if (m->cg) {
		cg_leave(m, "consumer poll timeout has expired.");
		lose_partitions(m, "poll timeout");
		m->generation = -1; /* the member id stays (KIP-1082) */
	} else {
		if (!instance_static(m))
			send_leave(m, "consumer poll timeout has expired.");
		reset_generation(m, !instance_static(m), "poll timeout");
	}
	ch_timer_cancel(loop, &m->hb_timer);
	set_state(m, M_POLL_EXPIRED, "poll timeout");
	cl_lock(c);
	c->poll_expired = true;
	cl_unlock(c);
}

void
cl_member_polled(cl_client *c)
{
	cl_member *m = c->member;
	if (!m)
		return;
	if (m->state == M_POLL_EXPIRED) {
		set_state(m, M_UNJOINED, "polled again");
		request_rejoin(m, "rejoining after the poll timeout");
		ensure_active(m);
	}
	if (m->state != M_UNJOINED && m->state < M_POLL_EXPIRED && !ch_timer_armed(&m->poll_timer))
		ch_timer_arm(c->loop, &m->poll_timer,
			     ch_loop_now(c->loop) + c->conf.max_poll_interval_ms + 1);
}

/* ---- JoinGroup -------------------------------------------------------------- */

static ch_assign_kind
protocol_kind(const cl_member *m)
{
	int k = m->protocol ? ch_assign_kind_by_name(ch_str_c(m->protocol)) : -1;
	return k < 0 ? m->c->conf.assignors[0] : (ch_assign_kind)k;
}

/* The owned partitions grouped by topic, for the subscription metadata. */
static int
owned_lists(cl_member *m, ch_assign_tplist **out, int32_t **parts_out)
{
	/* an eager member revoked everything before joining: it reports the
	 * assignment it had (the sticky assignor's previous assignment) */
	cl_tp **set = m->nowned || m->cooperative ? m->owned : m->prev;
	int nset = m->nowned || m->cooperative ? m->nowned : m->nprev;
	*out = calloc((size_t)nset + 1, sizeof(**out));
	*parts_out = calloc((size_t)nset + 1, sizeof(int32_t));
	if (!*out || !*parts_out)
		return -1;
	int n = 0;
	for (int i = 0; i < nset; i++) {
		cl_tp *tp = set[i];
		int j = 0;
		while (j < n && !ch_str_eq_c((*out)[j].topic, tp->topic))
			j++;
		if (j == n)
			(*out)[n++].topic = ch_str_c(tp->topic);
	}
	int32_t *p = *parts_out;
	for (int j = 0; j < n; j++) {
		(*out)[j].partitions = p;
		for (int i = 0; i < nset; i++)
			if (ch_str_eq_c((*out)[j].topic, set[i]->topic))
				*p++ = set[i]->partition, (*out)[j].n++;
	}
	return n;
}

/* Encodes JoinGroup: one protocol per configured assignor, each with the subscription, the
 * owned partitions (eager: what the last revoke took) and the generation. */
static void
build_join(cl_client *c, int16_t version, ch_buf *b, void *ud)
{
	cl_member *m = ud;
	ch_JoinGroupRequest r;
	ch_JoinGroupRequest_init(&r);
	r.GroupId = ch_str_c(c->conf.group_id);
	r.SessionTimeoutMs = c->conf.session_timeout_ms;
	r.RebalanceTimeoutMs = c->conf.max_poll_interval_ms;
	r.MemberId = ch_str_c(m->member_id);
	r.GroupInstanceId = ch_str_c(c->conf.group_instance_id);
	r.ProtocolType = CH_STR_LIT(CH_ASSIGN_PROTO_TYPE);
	r.Reason = ch_str_c(m->rejoin_reason);
	ch_str *topics = calloc((size_t)m->ntopics + 1, sizeof(ch_str));
	ch_assign_tplist *owned = NULL;
	int32_t *parts = NULL;
	int nowned = owned_lists(m, &owned, &parts);
	ch_buf meta[4];
	ch_JoinGroupRequest_JoinGroupRequestProtocol protos[4];
	if (!topics || nowned < 0) {
		b->oom = true;
		goto out;
	}
	for (int i = 0; i < m->ntopics; i++)
		topics[i] = ch_str_c(m->topics[i]);
	ch_str rack = c->conf.client_rack[0] ? ch_str_c(c->conf.client_rack) : CH_STR_NULL;
	for (int i = 0; i < c->conf.nassignors; i++) {
		ch_buf_init(&meta[i]);
		ch_assign_member_metadata(&meta[i], c->conf.assignors[i], CH_ASSIGN_PROTO_VERSION,
					  topics, m->ntopics, owned, nowned, m->generation, rack);
		if (!ch_buf_ok(&meta[i]))
			b->oom = true;
		protos[i].Name = ch_str_c(ch_assign_name(c->conf.assignors[i]));
		protos[i].Metadata = (ch_bytes){meta[i].data, (int32_t)meta[i].len};
	}
	r.Protocols = protos;
	r.Protocols_n = c->conf.nassignors;
	ch_JoinGroupRequest_encode(b, version, &r);
	for (int i = 0; i < c->conf.nassignors; i++)
		ch_buf_free(&meta[i]);
out:
	free(topics);
	free(owned);
	free(parts);
}

static void free_join_members(cl_member *m);
static void leader_assign(cl_member *m);
static void send_sync(cl_member *m);

/* Retry the join after a backoff; report a rebalance that keeps failing. */
static void
join_later(cl_member *m, cohort_err why)
{
	cl_client *c = m->c;
	m->join_fails++;
	set_state(m, M_UNJOINED, cohort_err_name(why));
	request_rejoin(m, cohort_err_name(why));
	if (m->join_fails >= 10 && !m->reported_failure) {
		/* tell the application once per streak; keep trying */
		m->reported_failure = true;
		cl_event *ev = calloc(1, sizeof(*ev));
		if (ev) {
			ev->kind = CL_EV_ERROR;
			ev->err = COHORT_ERR__REBALANCE_FAILED;
			cl_lock(c);
			cl_event_push(c, ev);
			cl_unlock(c);
		}
	}
	int64_t wait =
		cl_backoff(c->conf.retry_backoff_ms, c->conf.retry_backoff_max_ms, m->join_fails);
	ch_timer_arm(c->loop, &m->join_timer, ch_loop_now(c->loop) + wait);
}

/* join_timer: the join backoff passed, try again. */
static void
on_join_timer(ch_loop *loop, ch_timer *t, void *ud)
{
	(void)loop;
	(void)t;
	ensure_active(ud);
}

/* Common handling of a JoinGroup/SyncGroup error. */
static void
group_error(cl_member *m, int e, const char *api)
{
	switch (e) {
	case CH_KERR_MEMBER_ID_REQUIRED: /* handled by the caller */
		return;
	case CH_KERR_REBALANCE_IN_PROGRESS:
		set_state(m, M_UNJOINED, "rebalance in progress");
		request_rejoin(m, "group is rebalancing");
		ensure_active(m);
		return;
	case CH_KERR_UNKNOWN_MEMBER_ID:
	case CH_KERR_ILLEGAL_GENERATION:
		reset_generation(m, e == CH_KERR_UNKNOWN_MEMBER_ID, cohort_err_name(e));
		set_state(m, M_UNJOINED, cohort_err_name(e));
		request_rejoin(m, cohort_err_name(e));
		ensure_active(m);
		return;
	case CH_KERR_COORDINATOR_LOAD_IN_PROGRESS:
		join_later(m, e);
		return;
	case CH_KERR_FENCED_INSTANCE_ID:
		lose_partitions(m, "fenced"); /* another member has them now */
		fail_fatal(m, e, api);
		return;
	case CH_KERR_GROUP_AUTHORIZATION_FAILED:
	case CH_KERR_INVALID_GROUP_ID:
	case CH_KERR_INCONSISTENT_GROUP_PROTOCOL:
	case CH_KERR_GROUP_MAX_SIZE_REACHED:
	case CH_KERR_INVALID_SESSION_TIMEOUT:
	case CH_KERR_UNSUPPORTED_VERSION:
	case COHORT_ERR__NO_COMMON_VERSION:
	case COHORT_ERR__NOMEM:
		fail_fatal(m, e, api);
		return;
	default:
		if (coordinator_error(e))
			cl_member_coordinator_lost(m->c, (int16_t)(e > 0 ? e : 0));
		join_later(m, e);
		return;
	}
}

/* JoinGroup answer (ignored unless JOINING): takes id, generation and protocol; the leader
 * copies the members and assigns, a follower syncs.  MEMBER_ID_REQUIRED joins again. */
static void
done_join(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	(void)version;
	cl_member *m = ud;
	if (err == COHORT_ERR__CLOSED || m->state != M_JOINING)
		return;
	const ch_JoinGroupResponse *r = resp;
	int e = err ? err : r->ErrorCode;
	if (e == CH_KERR_MEMBER_ID_REQUIRED) { /* KIP-394: join again with this id */
		set_member_id(m, r->MemberId.p, r->MemberId.len);
		set_state(m, M_UNJOINED, "member id required");
		ensure_active(m);
		return;
	}
	if (e) {
		group_error(m, e, "JoinGroup");
		return;
	}
	set_member_id(m, r->MemberId.p, r->MemberId.len);
	m->generation = r->GenerationId;
	free(m->protocol);
	m->protocol = r->ProtocolName.len >= 0
			      ? strndup(r->ProtocolName.p, (size_t)r->ProtocolName.len)
			      : NULL;
	m->leader = ch_str_eq_c(r->Leader, m->member_id);
	CH_LOGI(CL_LOG, "group %s: joined generation %d as %s (%s), protocol %s, %d members",
		c->conf.group_id, m->generation, m->member_id, m->leader ? "leader" : "follower",
		m->protocol ? m->protocol : "-", r->Members_n);
	free_join_members(m);
	if (m->leader && !r->SkipAssignment) {
		m->jmembers = calloc((size_t)r->Members_n + 1, sizeof(*m->jmembers));
		if (!m->jmembers) {
			fail_fatal(m, COHORT_ERR__NOMEM, "JoinGroup");
			return;
		}
		for (int32_t i = 0; i < r->Members_n; i++) {
			const ch_JoinGroupResponse_JoinGroupResponseMember *jm = &r->Members[i];
			m_join_member *d = &m->jmembers[i];
			d->member_id = strndup(jm->MemberId.p ? jm->MemberId.p : "",
					       (size_t)CH_MAX(jm->MemberId.len, 0));
			d->instance_id = jm->GroupInstanceId.len >= 0
						 ? strndup(jm->GroupInstanceId.p,
							   (size_t)jm->GroupInstanceId.len)
						 : NULL;
			d->metadata_len = CH_MAX(jm->Metadata.len, 0);
			d->metadata = malloc((size_t)d->metadata_len + 1);
			if (d->metadata && d->metadata_len)
				memcpy(d->metadata, jm->Metadata.p, (size_t)d->metadata_len);
			m->njmembers = i + 1;
			if (!d->member_id || !d->metadata) {
				fail_fatal(m, COHORT_ERR__NOMEM, "JoinGroup");
				return;
			}
		}
		set_state(m, M_ASSIGNING, "leader");
		arm_heartbeat(m);
		leader_assign(m);
		return;
	}
	set_state(m, M_SYNCING, "follower");
	arm_heartbeat(m);
	send_sync(m);
}

/* Sends JoinGroup (timeout max.poll.interval.ms + 5 s) and enters JOINING.  m->coord must
 * be known (ensure_active checks). */
static void
send_join(cl_member *m)
{
	cl_client *c = m->c;
	set_state(m, M_JOINING, m->rejoin_reason ? m->rejoin_reason : "join");
	m->need_rejoin = false;
	/* the coordinator may hold a JoinGroup for the rebalance timeout */
	cl_request_timeout(m->coord, CH_APIKEY_JOIN_GROUP,
			   (int64_t)c->conf.max_poll_interval_ms + 5000, build_join, done_join, m);
}

/* ---- the leader's assignment ------------------------------------------------ */

/* Frees the leader's copy of the JoinGroup members and its encoded assignments. */
static void
free_join_members(cl_member *m)
{
	for (int32_t i = 0; i < m->njmembers; i++) {
		free(m->jmembers[i].member_id);
		free(m->jmembers[i].instance_id);
		free(m->jmembers[i].metadata);
		if (m->assignments)
			free(m->assignments[i]);
	}
	free(m->jmembers);
	free(m->assignments);
	free(m->assignment_lens);
	m->jmembers = NULL;
	m->assignments = NULL;
	m->assignment_lens = NULL;
	m->njmembers = 0;
}

/* Frees the partition counts the leader assigned with (m->snap). */
static void
free_snapshot(cl_member *m)
{
	for (int32_t i = 0; i < m->nsnap; i++)
		free(m->snap[i].topic);
	free(m->snap);
	m->snap = NULL;
	m->nsnap = 0;
}

/* Run the assignor over the members' subscriptions and the metadata. */
static cohort_err
compute_assignment(cl_member *m)
{
	cl_client *c = m->c;
	ch_assign_kind kind = protocol_kind(m);
	int32_t n = m->njmembers;
	ch_assign_join_member *jm = calloc((size_t)n + 1, sizeof(*jm));
	if (!jm)
		return COHORT_ERR__NOMEM;
	for (int32_t i = 0; i < n; i++) {
		jm[i].member_id = ch_str_c(m->jmembers[i].member_id);
		jm[i].instance_id = ch_str_c(m->jmembers[i].instance_id);
		jm[i].metadata = (ch_bytes){m->jmembers[i].metadata, m->jmembers[i].metadata_len};
	}
	ch_assign_group g;
	cohort_err err = COHORT_ERR__NOMEM;
	ch_assign_topic *topics = NULL;
	ch_assign_result res = {0};
	bool have_res = false;
	if (ch_assign_group_decode(&g, jm, n) != CH_OK) {
		free(jm);
		return COHORT_ERR__NOMEM;
	}
	const ch_str *names;
	int32_t nnames = ch_assign_group_topics(&g, &names);
	if (nnames < 0)
		goto out;
	topics = calloc((size_t)nnames + 1, sizeof(*topics));
	free_snapshot(m);
	m->snap = calloc((size_t)nnames + 1, sizeof(*m->snap));
	if (!topics || !m->snap)
		goto out;
	int32_t nt = 0;
	for (int32_t i = 0; i < nnames; i++) {
		char name[256];
		snprintf(name, sizeof(name), "%.*s", names[i].len, names[i].p);
		const cl_md_topic *t = cl_metadata_topic(c, name);
		m->snap[m->nsnap].topic = strdup(name);
		m->snap[m->nsnap++].partitions = t && !t->err ? t->nparts : 0;
		if (!t || t->err || t->nparts <= 0)
			continue; /* unknown topics are skipped, as Java's leader does */
		topics[nt].name = names[i];
		topics[nt].partitions = t->nparts;
		nt++;
	}
	if (ch_assign_group_build(&g, kind, topics, nt) != CH_OK)
		goto out;
	if (ch_assign(kind, &g.in, &res) != CH_OK) {
		CH_LOGW(CL_LOG, "group %s: assignor %s failed: %s", c->conf.group_id,
			ch_assign_name(kind), res.errstr);
		err = COHORT_ERR__STATE;
		goto out;
	}
	have_res = true;
	m->assignments = calloc((size_t)n + 1, sizeof(uint8_t *));
	m->assignment_lens = calloc((size_t)n + 1, sizeof(int32_t));
	if (!m->assignments || !m->assignment_lens)
		goto out;
	for (int32_t i = 0; i < n; i++) {
		ch_buf b;
		ch_buf_init(&b);
		ch_assign_assignment_write(&b, CH_ASSIGN_PROTO_VERSION, topics,
					   res.tps + res.off[i], res.off[i + 1] - res.off[i],
					   CH_BYTES_NULL);
		if (!ch_buf_ok(&b)) {
			ch_buf_free(&b);
			goto out;
		}
		size_t len;
		m->assignments[i] = ch_buf_steal(&b, &len);
		m->assignment_lens[i] = (int32_t)len;
	}
	err = COHORT_OK;
out:
	if (have_res)
		ch_assign_result_free(&res);
	ch_assign_group_free(&g);
	free(topics);
	free(jm);
	return err;
}

/* cl_metadata_refresh_then's callback for the leader: computes the assignment on fresh
 * metadata and syncs it; ignored unless still ASSIGNING. */
static void
assign_with_metadata(cl_client *c, cohort_err err, void *ud)
{
	cl_member *m = ud;
	(void)c;
	if (err == COHORT_ERR__CLOSED || m->state != M_ASSIGNING)
		return;
	if (err) {
		join_later(m, err);
		return;
	}
	err = compute_assignment(m);
	if (err) {
		group_error(m, err, "assignment");
		return;
	}
	set_state(m, M_SYNCING, "assigned");
	send_sync(m);
}

/* True when the metadata has every one of names (without error), none is being asked for
 * and it is younger than metadata.max.age.ms with every leader known: the leader may assign
 * on it as it is. */
static bool
metadata_fresh_for(cl_client *c, const ch_str *names, int32_t n)
{
	if (c->md.inflight || c->md.fails || c->md.updated <= 0 ||
	    ch_loop_now(c->loop) - c->md.updated >= c->conf.metadata_max_age_ms)
		return false;
	for (int32_t i = 0; i < n; i++) {
		char name[256];
		snprintf(name, sizeof(name), "%.*s", names[i].len, names[i].p);
		const cl_md_topic *t = cl_metadata_topic(c, name);
		if (!t || t->err)
			return false;
	}
	return true;
}

/* Leader: adds every member's topics to the metadata wanted and assigns on the metadata
 * there is when it has them all and is fresh (as Java's leader), else once a metadata
 * answer requested after this comes (assign_with_metadata). */
static void
leader_assign(cl_member *m)
{
	cl_client *c = m->c;
	/* the leader needs metadata of every member's topics */
	ch_assign_join_member *jm = calloc((size_t)m->njmembers + 1, sizeof(*jm));
	ch_assign_group g;
	bool ok = jm != NULL;
	for (int32_t i = 0; ok && i < m->njmembers; i++) {
		jm[i].member_id = ch_str_c(m->jmembers[i].member_id);
		jm[i].instance_id = ch_str_c(m->jmembers[i].instance_id);
		jm[i].metadata = (ch_bytes){m->jmembers[i].metadata, m->jmembers[i].metadata_len};
	}
	bool fresh = false;
	if (ok && ch_assign_group_decode(&g, jm, m->njmembers) == CH_OK) {
		const ch_str *names;
		int32_t n = ch_assign_group_topics(&g, &names);
		fresh = n >= 0 && metadata_fresh_for(c, names, n);
		ok = n >= 0 && cl_metadata_want(c, names, n);
		ch_assign_group_free(&g);
	} else {
		ok = false;
	}
	free(jm);
	if (!ok) {
		fail_fatal(m, COHORT_ERR__NOMEM, "assignment");
		return;
	}
	if (fresh) /* Java's ensureFreshMetadata: no refresh when nothing new is wanted */
		assign_with_metadata(c, COHORT_OK, m);
	else
		cl_metadata_refresh_then(c, assign_with_metadata, m);
}

/* ---- SyncGroup ---------------------------------------------------------------- */

/* Encodes SyncGroup; the leader sends every member's assignment, a follower none. */
static void
build_sync(cl_client *c, int16_t version, ch_buf *b, void *ud)
{
	cl_member *m = ud;
	ch_SyncGroupRequest r;
	ch_SyncGroupRequest_init(&r);
	r.GroupId = ch_str_c(c->conf.group_id);
	r.GenerationId = m->generation;
	r.MemberId = ch_str_c(m->member_id);
	r.GroupInstanceId = ch_str_c(c->conf.group_instance_id);
	r.ProtocolType = CH_STR_LIT(CH_ASSIGN_PROTO_TYPE);
	r.ProtocolName = ch_str_c(m->protocol);
	ch_SyncGroupRequest_SyncGroupRequestAssignment *a = NULL;
	if (m->assignments) {
		a = calloc((size_t)m->njmembers + 1, sizeof(*a));
		if (!a) {
			b->oom = true;
			return;
		}
		for (int32_t i = 0; i < m->njmembers; i++) {
			a[i].MemberId = ch_str_c(m->jmembers[i].member_id);
			a[i].Assignment = (ch_bytes){m->assignments[i], m->assignment_lens[i]};
		}
		r.Assignments = a;
		r.Assignments_n = m->njmembers;
	} else {
		r.Assignments_n = 0;
	}
	ch_SyncGroupRequest_encode(b, version, &r);
	free(a);
}

/* True when tp (compared by pointer) is one of set[0..n). */
static bool
tp_in(cl_tp *tp, cl_tp **set, int n)
{
	for (int i = 0; i < n; i++)
		if (set[i] == tp)
			return true;
	return false;
}

static void finish_stable(cl_member *m);

/* Hand these partitions to the polling thread for revoked(). */
static void
start_revoke(cl_member *m, cl_tp **tps, int n, m_after_revoke after)
{
	free(m->revoking);
	m->revoking = tps;
	m->nrevoking = n;
	m->after_revoke = after;
	set_state(m, M_REVOKING,
		  after == AFTER_LEAVE         ? "close"
		  : after == AFTER_UNSUBSCRIBE ? "unsubscribe"
					       : "revoke");
	cl_lock(m->c);
	m->c->revoke_pending = true;
	cl_unlock(m->c);
	push_tps(m, CL_EV_REVOKED, tps, n);
}

/* SyncGroup answer (ignored unless SYNCING): decodes the assignment; what moved away is
 * revoked first (cooperative), what is new is added by finish_stable. */
static void
done_sync(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	(void)version;
	cl_member *m = ud;
	if (err == COHORT_ERR__CLOSED || m->state != M_SYNCING)
		return;
	const ch_SyncGroupResponse *r = resp;
	int e = err ? err : r->ErrorCode;
	if (e) {
		group_error(m, e, "SyncGroup");
		return;
	}
	/* decode the new assignment into partitions */
	ch_arena a;
	ch_arena_init(&a);
	ch_assign_assignment as;
	cl_tp **next = NULL;
	int nnext = 0;
	if (r->Assignment.len > 0 &&
	    ch_assign_assignment_decode(r->Assignment.p, (size_t)r->Assignment.len, &a, &as) !=
		    CH_OK) {
		ch_arena_free(&a);
		CH_LOGW(CL_LOG, "group %s: assignment does not decode", c->conf.group_id);
		join_later(m, COHORT_ERR__BAD_MSG);
		return;
	}
	if (r->Assignment.len > 0) {
		int total = 0;
		for (int32_t i = 0; i < as.m.AssignedPartitions_n; i++)
			total += as.m.AssignedPartitions[i].Partitions_n;
		next = calloc((size_t)total + 1, sizeof(*next));
		cl_lock(c);
		for (int32_t i = 0; next && i < as.m.AssignedPartitions_n; i++) {
			const ch_ConsumerProtocolAssignment_TopicPartition *tpl =
				&as.m.AssignedPartitions[i];
			char topic[256];
			snprintf(topic, sizeof(topic), "%.*s", tpl->Topic.len, tpl->Topic.p);
			for (int32_t j = 0; j < tpl->Partitions_n; j++) {
				cl_tp *tp = cl_tp_get(c, topic, tpl->Partitions[j]);
				if (tp && !tp_in(tp, next, nnext))
					next[nnext++] = tp;
			}
		}
		cl_unlock(c);
	} else {
		next = calloc(1, sizeof(*next));
	}
	ch_arena_free(&a);
	if (!next) {
		fail_fatal(m, COHORT_ERR__NOMEM, "SyncGroup");
		return;
	}
	m->join_fails = 0;
	m->reported_failure = false;
	/* cooperative: revoke what moved first; eager owned nothing here */
	cl_tp **gone = calloc((size_t)m->nowned + 1, sizeof(*gone));
	cl_tp **added = calloc((size_t)nnext + 1, sizeof(*added));
	int ngone = 0, nadded = 0;
	if (!gone || !added) {
		free(gone);
		free(added);
		free(next);
		fail_fatal(m, COHORT_ERR__NOMEM, "SyncGroup");
		return;
	}
	for (int i = 0; i < m->nowned; i++)
		if (!tp_in(m->owned[i], next, nnext))
			gone[ngone++] = m->owned[i];
	for (int i = 0; i < nnext; i++)
		if (!tp_in(next[i], m->owned, m->nowned))
			added[nadded++] = next[i];
	free(next);
	free(m->pending_add);
	m->pending_add = added;
	m->npending_add = nadded;
	CH_LOGI(CL_LOG, "group %s: generation %d: %d partitions (+%d -%d)", c->conf.group_id,
		m->generation, m->nowned - ngone + nadded, nadded, ngone);
	if (ngone) {
		/* KIP-429: revoke, then rejoin at once for the follow-up round */
		request_rejoin(m, "revoked partitions in a cooperative rebalance");
		start_revoke(m, gone, ngone, AFTER_STABLE);
		return;
	}
	free(gone);
	finish_stable(m);
}

/* The assignment is final for this generation: add the new partitions. */
static void
finish_stable(cl_member *m)
{
	cl_client *c = m->c;
	cl_tp **owned =
		realloc(m->owned, sizeof(cl_tp *) * (size_t)(m->nowned + m->npending_add + 1));
	if (!owned) {
		fail_fatal(m, COHORT_ERR__NOMEM, "assignment");
		return;
	}
	m->owned = owned;
	cl_lock(c);
	for (int i = 0; i < m->npending_add; i++) {
		cl_tp *tp = m->pending_add[i];
		cl_tp_take(tp);
		m->owned[m->nowned++] = tp;
	}
	cl_unlock(c);
	set_state(m, M_STABLE, "assignment received");
	/* Java calls onPartitionsAssigned after every rebalance, empty or not */
	push_tps(m, CL_EV_ASSIGNED, m->pending_add, m->npending_add);
	m->npending_add = 0;
	arm_heartbeat(m);
	cl_member_polled(c);
	cl_offsets_lookup(c);
	cl_fetcher_kick(c);
	if (m->need_rejoin)
		ensure_active(m);
}

/* Sends SyncGroup to the coordinator (timeout max.poll.interval.ms + 5 s), or backs off
 * the join when the coordinator is unknown. */
static void
send_sync(cl_member *m)
{
	if (!m->coord) {
		join_later(m, CH_KERR_COORDINATOR_NOT_AVAILABLE);
		return;
	}
	cl_request_timeout(m->coord, CH_APIKEY_SYNC_GROUP,
			   (int64_t)m->c->conf.max_poll_interval_ms + 5000, build_sync, done_sync,
			   m);
}

/* ---- revoke acknowledgements ---------------------------------------------------- */

void
cl_member_revoke_done(cl_client *c)
{
	cl_member *m = c->member;
	if (!m || m->state != M_REVOKING)
		return;
	/* the polling thread already marked them unowned */
	int n = 0;
	for (int i = 0; i < m->nowned; i++)
		if (!tp_in(m->owned[i], m->revoking, m->nrevoking))
			m->owned[n++] = m->owned[i];
	m->nowned = n;
	free(m->prev);
	m->prev = NULL;
	m->nprev = 0;
	if (m->after_revoke == AFTER_JOIN && !m->cooperative) {
		m->prev = m->revoking;
		m->nprev = m->nrevoking;
	} else {
		free(m->revoking);
	}
	m->revoking = NULL;
	m->nrevoking = 0;
	switch (m->after_revoke) {
	case AFTER_JOIN:
		set_state(m, M_UNJOINED, "revoked");
		ensure_active(m);
		return;
	case AFTER_STABLE:
		finish_stable(m);
		return;
	case AFTER_RECONCILE:
		set_state(m, M_STABLE, "revoked");
		cg_reconcile(m);
		return;
	case AFTER_LEAVE:
		set_state(m, M_LEAVING, "revoked for close");
		if (m->cg && cg_leave(m, "the consumer is being closed"))
			return; /* done_cg_leave finishes the close */
		if (!m->cg && !instance_static(m) && m->member_id[0] && m->coord) {
			send_leave(m, "the consumer is being closed");
			return; /* done_leave finishes the close */
		}
		set_state(m, M_CLOSED, "closed");
		if (m->close_wait) {
			cl_wait_finish(c, m->close_wait, COHORT_OK);
			m->close_wait = NULL;
		}
		return;
	case AFTER_UNSUBSCRIBE:
		unsubscribe_step(m); /* what a cooperative revoke in progress left */
		return;
	}
}

/* ---- LeaveGroup ------------------------------------------------------------------- */

typedef struct m_leave {
	cl_member *m;
	char *member_id;
	const char *reason;
} m_leave;

/* Encodes LeaveGroup for the member id copied in l, with the KIP-800 reason. */
static void
build_leave(cl_client *c, int16_t version, ch_buf *b, void *ud)
{
	m_leave *l = ud;
	ch_LeaveGroupRequest r;
	ch_LeaveGroupRequest_init(&r);
	r.GroupId = ch_str_c(c->conf.group_id);
	r.MemberId = ch_str_c(l->member_id);
	ch_LeaveGroupRequest_MemberIdentity id = {
		.MemberId = ch_str_c(l->member_id),
		.GroupInstanceId = ch_str_c(c->conf.group_instance_id),
		.Reason = ch_str_c(l->reason),
	};
	r.Members = &id;
	r.Members_n = 1;
	ch_LeaveGroupRequest_encode(b, version, &r);
}

/* A leave was answered: the unsubscribe or close waiting in LEAVING goes on. */
static void
left_group(cl_member *m)
{
	if (m->state == M_LEAVING && m->unsub_wait) {
		unsubscribe_step(m);
		return;
	}
	if (m->state == M_LEAVING) {
		set_state(m, M_CLOSED, "left");
		if (m->close_wait) {
			cl_wait_finish(m->c, m->close_wait, COHORT_OK);
			m->close_wait = NULL;
		}
	}
}

/* LeaveGroup answer (any error is only logged): a close waiting in LEAVING ends here.
 * Frees l. */
static void
done_leave(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	(void)c;
	(void)version;
	m_leave *l = ud;
	cl_member *m = l->m;
	int e = err ? err : ((ch_LeaveGroupResponse *)resp)->ErrorCode;
	if (e)
		CH_LOGD(CL_LOG, "LeaveGroup: %s", cohort_err_name(e));
	free(l->member_id);
	free(l);
	left_group(m);
}

/* Sends LeaveGroup with a copy of m's current member id; does nothing (silently) without
 * a coordinator or memory.  reason must outlive the request. */
static void
send_leave(cl_member *m, const char *reason)
{
	m_leave *l = calloc(1, sizeof(*l));
	if (!l || !m->coord || !(l->member_id = strdup(m->member_id))) {
		free(l);
		return;
	}
	l->m = m;
	l->reason = reason;
	CH_LOGI(CL_LOG, "group %s: leaving (%s)", m->c->conf.group_id, reason);
	cl_request(m->coord, CH_APIKEY_LEAVE_GROUP, build_leave, done_leave, l);
}

/* ---- the consumer protocol (KIP-848, group.protocol=consumer) ------------------ */

/*
 * Java's ConsumerMembershipManager, on the same states: UNJOINED --(a
 * heartbeat with epoch 0)--> JOINING --answer--> STABLE; each answer
 * that carries an assignment is the member's new target, reconciled as
 * Kafka's clients do: what left it is revoked first (the revoked callback,
 * REVOKING until the polling thread acknowledges), then what joined it is
 * taken (the assigned callback), then a heartbeat at once tells the
 * coordinator what is owned now. m->generation is the member epoch; the
 * member id is this client's own (KIP-1082, v1), or the coordinator's
 * (v0). Fenced (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID): the partitions
 * are lost and the member joins again with epoch 0. Leaving is a heartbeat
 * with epoch -1 (-2 for a static member, which keeps its assignment for
 * the instance id within the session).
 */

#define CG_LEAVE_EPOCH (-1)
#define CG_LEAVE_STATIC_EPOCH (-2)
/* The version that carries SubscribedTopicRegex (and client-generated member ids). */
#define CG_REGEX_VERSION 1

/* The pattern the broker matches for m (cohort_subscribe_pattern with the
 * consumer protocol), NULL for a names subscription. */
static const char *
cg_pattern(const cl_member *m)
{
	return m->cg ? m->c->pattern_text : NULL;
}

/* Whether a heartbeat of m's epoch goes out on the timer now. */
static bool
cg_in_group(const cl_member *m)
{
	return m->generation >= 0 &&
	       (m->state == M_JOINING || m->state == M_STABLE || m->state == M_REVOKING);
}

/* The epoch a leave sends (Java: -2 for a static member, -1 otherwise). */
static int32_t
cg_leave_epoch(const cl_member *m)
{
	return instance_static(m) ? CG_LEAVE_STATIC_EPOCH : CG_LEAVE_EPOCH;
}

/* A ConsumerGroupHeartbeat in flight: its member and the epoch it sent
 * (a leave's -1 / -2 is answered by done_cg_leave). */
typedef struct cg_hb {
	cl_member *m;
	int32_t epoch;
} cg_hb;

/* The topic id of a topic m knows by name (its metadata), zero if none. */
static ch_uuid
cg_topic_id(const cl_client *c, const char *topic)
{
	const cl_md_topic *t = cl_metadata_topic(c, topic);
	return t && !t->err ? t->id : (ch_uuid){0};
}

/* Encodes ConsumerGroupHeartbeat: the full member (subscription, owned
 * partitions, instance id, rack, rebalance timeout, server assignor) with
 * the epoch of h; a leave carries the same fields, Kafka reads only the
 * epoch then. */
static void
build_cg_heartbeat(cl_client *c, int16_t version, ch_buf *b, void *ud)
{
	cg_hb *h = ud;
	cl_member *m = h->m;
	ch_ConsumerGroupHeartbeatRequest r;
	ch_ConsumerGroupHeartbeatRequest_init(&r);
	r.GroupId = ch_str_c(c->conf.group_id);
	/* v0: the coordinator names a joining member */
	r.MemberId = ch_str_c(version == 0 && h->epoch == 0 && !m->cg_named ? "" : m->member_id);
	r.MemberEpoch = h->epoch;
	r.InstanceId = ch_str_c(c->conf.group_instance_id);
	r.RackId = c->conf.client_rack[0] ? ch_str_c(c->conf.client_rack) : CH_STR_NULL;
	r.RebalanceTimeoutMs = c->conf.max_poll_interval_ms;
	r.ServerAssignor = ch_str_c(c->conf.group_remote_assignor);
	ch_str *names = calloc((size_t)m->ntopics + 1, sizeof(*names));
	ch_ConsumerGroupHeartbeatRequest_TopicPartitions *tps =
		calloc((size_t)m->nowned + 1, sizeof(*tps));
	int32_t *parts = calloc((size_t)m->nowned + 1, sizeof(*parts));
	if (!names || !tps || !parts) {
		b->oom = true;
		goto out;
	}
	for (int i = 0; i < m->ntopics; i++)
		names[i] = ch_str_c(m->topics[i]);
	r.SubscribedTopicNames = names;
	r.SubscribedTopicNames_n = m->ntopics; /* none with a pattern */
	/* a pattern goes at v1+ only (cg_send); a names subscription sends ""
	 * from v1, not null: null is "unchanged", and a member that moved from
	 * a pattern to names would keep matching the pattern */
	const char *pattern = cg_pattern(m);
	if (version >= CG_REGEX_VERSION)
		r.SubscribedTopicRegex = ch_str_c(pattern ? pattern : "");
	/* owned partitions by topic (owned is kept sorted by cg_reconcile) */
	int32_t nt = 0;
	for (int i = 0; i < m->nowned; i++) {
		parts[i] = m->owned[i]->partition;
		if (i == 0 || strcmp(m->owned[i - 1]->topic, m->owned[i]->topic) != 0) {
			tps[nt].TopicId = cg_topic_id(c, m->owned[i]->topic);
			tps[nt].Partitions = &parts[i];
			nt++;
		}
		tps[nt - 1].Partitions_n++;
	}
	r.TopicPartitions = tps;
	r.TopicPartitions_n = nt;
	ch_ConsumerGroupHeartbeatRequest_encode(b, version, &r);
out:
	free(names);
	free(tps);
	free(parts);
}

/* Sends a heartbeat of h's epoch to m's coordinator: at v1 or later with a
 * pattern (a broker without v1 fails it with NO_COMMON_VERSION; Java's
 * builder throws UnsupportedVersionException there); a pattern that comes
 * while it waits for the connection goes with the next one. */
static void
cg_send(cl_member *m, cl_resp_fn done, cg_hb *h)
{
	cl_request_min(m->coord, CH_APIKEY_CONSUMER_GROUP_HEARTBEAT,
		       cg_pattern(m) ? CG_REGEX_VERSION : 0, build_cg_heartbeat, done, h);
}

/* qsort order of owned partitions: topic, then partition (one entry per
 * topic in a heartbeat). */
static int
cmp_owned(const void *a, const void *b)
{
	const cl_tp *x = *(cl_tp *const *)a, *y = *(cl_tp *const *)b;
	int c = strcmp(x->topic, y->topic);
	return c ? c : (x->partition > y->partition) - (x->partition < y->partition);
}

/* Fatal for the consumer protocol; the partitions are lost first (another
 * member may own them already). */
static void
cg_fatal(cl_member *m, cohort_err e, const char *what)
{
	lose_partitions(m, what);
	fail_fatal(m, e, what);
}

/* Fenced: the partitions are lost, the member joins again at epoch 0
 * (with a revoke callback running: once it returns, so that its ack and
 * its REVOKED event cannot meet partitions of the new membership). */
static void
cg_fenced(cl_member *m, int e)
{
	lose_partitions(m, cohort_err_name(e));
	free(m->cg_target);
	m->cg_target = NULL;
	m->ncg_target = 0;
	m->cg_has_target = false;
	if (m->state == M_REVOKING) {
		m->generation = -1; /* no heartbeat until the ack */
		if (m->after_revoke == AFTER_RECONCILE)
			m->after_revoke = AFTER_JOIN;
		return;
	}
	m->generation = 0;
	m->cg_assigned_once = false;
	set_state(m, M_JOINING, cohort_err_name(e));
	cg_heartbeat(m);
}

/* Takes the answer's assignment (topic ids and partitions) as the target to reconcile. */
static bool
cg_take_target(cl_member *m, const ch_ConsumerGroupHeartbeatResponse_Assignment *as)
{
	size_t total = 0;
	for (int32_t i = 0; i < as->TopicPartitions_n; i++)
		if (as->TopicPartitions[i].Partitions_n > 0)
			total += (size_t)as->TopicPartitions[i].Partitions_n;
	cg_part *t = calloc(total + 1, sizeof(*t));
	if (!t)
		return false;
	size_t n = 0;
	for (int32_t i = 0; i < as->TopicPartitions_n; i++)
		for (int32_t j = 0; j < as->TopicPartitions[i].Partitions_n; j++)
			t[n++] = (cg_part){as->TopicPartitions[i].TopicId,
					   as->TopicPartitions[i].Partitions[j]};
	free(m->cg_target);
	m->cg_target = t;
	m->ncg_target = (int)n;
	m->cg_has_target = true;
	return true;
}

/* The answer to a heartbeat of the member's own epoch. */
static void
done_cg_heartbeat(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	(void)version;
	cg_hb *h = ud;
	cl_member *m = h->m;
	free(h);
	m->hb_inflight = false;
	if (err == COHORT_ERR__CLOSED || m->state >= M_POLL_EXPIRED || m->generation < 0)
		return;
	const ch_ConsumerGroupHeartbeatResponse *r = resp;
	int e = err ? err : r->ErrorCode;
	int64_t now = ch_loop_now(c->loop);
	switch (e) {
	case 0:
		break;
	case CH_KERR_FENCED_MEMBER_EPOCH:
	case CH_KERR_UNKNOWN_MEMBER_ID:
		CH_LOGI(CL_LOG, "group %s: member %s fenced (%s)", c->conf.group_id, m->member_id,
			cohort_err_name(e));
		cg_fenced(m, e);
		return;
	case COHORT_ERR__NO_COMMON_VERSION:
	case CH_KERR_UNSUPPORTED_VERSION:
		if (cg_pattern(m) && m->coord &&
		    m->coord->vmax[CH_APIKEY_CONSUMER_GROUP_HEARTBEAT] >= 0) {
			/* the API without v1: never the pattern's topics as names
			 * (a meaning the application did not ask for); Java's words */
			CH_LOGE(CL_LOG,
				"group %s: the cluster does not support regular expressions "
				"resolution on ConsumerGroupHeartbeat API version 0. It must be "
				"upgraded to use ConsumerGroupHeartbeat API version >= 1 to allow "
				"to subscribe to a pattern (or use group.protocol=classic, where "
				"libcohort matches it).",
				c->conf.group_id);
			cg_fatal(m, COHORT_ERR_UNSUPPORTED_VERSION, "SubscribedTopicRegex");
			return;
		}
		/* Java's words (and librdkafka's fatal error) */
		CH_LOGE(CL_LOG,
			"group %s: the cluster does not support the new CONSUMER group protocol. "
			"Set "
			"group.protocol=classic on the consumer configs to revert to the CLASSIC "
			"protocol until the cluster is upgraded.",
			c->conf.group_id);
		cg_fatal(m, COHORT_ERR_UNSUPPORTED_VERSION, "ConsumerGroupHeartbeat");
		return;
	case CH_KERR_COORDINATOR_LOAD_IN_PROGRESS:
		ch_timer_arm(c->loop, &m->hb_timer, now + c->conf.retry_backoff_ms);
		return;
	default:
		if (coordinator_error(e)) {
			cl_member_coordinator_lost(c, (int16_t)(e > 0 ? e : 0));
			ch_timer_arm(c->loop, &m->hb_timer, now + c->conf.retry_backoff_ms);
			return;
		}
		/* UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED,
		 * UNSUPPORTED_ASSIGNOR, INVALID_REQUEST, authorization: Java's fatal ones */
		CH_LOGW(CL_LOG, "group %s: ConsumerGroupHeartbeat: %s: %.*s", c->conf.group_id,
			cohort_err_name(e), r && r->ErrorMessage.len > 0 ? r->ErrorMessage.len : 0,
			r && r->ErrorMessage.len > 0 ? r->ErrorMessage.p : "");
		cg_fatal(m, e, "ConsumerGroupHeartbeat");
		return;
	}
	if (r->MemberId.len > 0) {
		set_member_id(m, r->MemberId.p, r->MemberId.len);
		m->cg_named = true;
	}
	if (m->generation != r->MemberEpoch)
		CH_LOGI(CL_LOG, "group %s: member %s epoch %d", c->conf.group_id, m->member_id,
			r->MemberEpoch);
	m->generation = r->MemberEpoch;
	if (r->HeartbeatIntervalMs > 0)
		m->cg_interval_ms = r->HeartbeatIntervalMs;
	if (m->state == M_JOINING)
		set_state(m, M_STABLE, "joined");
	if (r->Assignment && !cg_take_target(m, r->Assignment)) {
		cg_fatal(m, COHORT_ERR__NOMEM, "assignment");
		return;
	}
	m->join_fails = 0;
	ch_timer_arm(c->loop, &m->hb_timer, now + m->cg_interval_ms);
	if (m->cg_has_target)
		cg_reconcile(m);
	if (m->cg_again && !m->hb_inflight) {
		m->cg_again = false;
		cg_heartbeat(m);
	}
}

/* Sends a heartbeat of m's epoch now, or right after the one in flight. */
static void
cg_heartbeat(cl_member *m)
{
	cl_client *c = m->c;
	if (!cg_in_group(m))
		return;
	if (m->hb_inflight) {
		m->cg_again = true;
		return;
	}
	if (!m->coord) {
		find_coordinator(m);
		ch_timer_arm(c->loop, &m->hb_timer,
			     ch_loop_now(c->loop) + c->conf.retry_backoff_ms);
		return;
	}
	cg_hb *h = malloc(sizeof(*h));
	if (!h) {
		cg_fatal(m, COHORT_ERR__NOMEM, "heartbeat");
		return;
	}
	*h = (cg_hb){m, m->generation};
	m->hb_inflight = true;
	m->cg_again = false;
	cg_send(m, done_cg_heartbeat, h);
}

/*
 * Moves the owned partitions toward the target: resolves its topic ids
 * (a refresh of the metadata when one is unknown; cl_member_metadata_changed
 * comes back here), revokes what left it (REVOKING; the ack comes back
 * here), then takes what joined it and acknowledges with a heartbeat.
 */
static void
cg_reconcile(cl_member *m)
{
	cl_client *c = m->c;
	if (!m->cg_has_target || m->state != M_STABLE)
		return;
	cl_tp **next = calloc((size_t)m->ncg_target + 1, sizeof(*next));
	if (!next) {
		cg_fatal(m, COHORT_ERR__NOMEM, "assignment");
		return;
	}
	int nnext = 0;
	bool unknown = false;
	cl_lock(c);
	for (int i = 0; i < m->ncg_target && !unknown; i++) {
		const cl_md_topic *t = NULL;
		for (int32_t k = 0; k < c->md.ntopics && !t; k++)
			if (ch_uuid_eq(&c->md.topics[k].id, &m->cg_target[i].topic_id))
				t = &c->md.topics[k];
		cl_tp *tp = t ? cl_tp_get(c, t->name, m->cg_target[i].partition) : NULL;
		if (!tp)
			unknown = true;
		else if (!tp_in(tp, next, nnext))
			next[nnext++] = tp;
	}
	cl_unlock(c);
	if (unknown) { /* a topic created since, or not asked for yet */
		free(next);
		cl_metadata_refresh(c);
		return;
	}
	cl_tp **gone = calloc((size_t)m->nowned + 1, sizeof(*gone));
	int ngone = 0;
	if (!gone) {
		free(next);
		cg_fatal(m, COHORT_ERR__NOMEM, "assignment");
		return;
	}
	for (int i = 0; i < m->nowned; i++)
		if (!tp_in(m->owned[i], next, nnext))
			gone[ngone++] = m->owned[i];
	if (ngone) {
		free(next);
		start_revoke(m, gone, ngone, AFTER_RECONCILE); /* the ack comes back here */
		return;
	}
	free(gone);
	cl_tp **owned = realloc(m->owned, sizeof(cl_tp *) * ((size_t)nnext + 1));
	cl_tp **added = calloc((size_t)nnext + 1, sizeof(*added));
	if (!owned || !added) {
		if (owned)
			m->owned = owned;
		free(added);
		free(next);
		cg_fatal(m, COHORT_ERR__NOMEM, "assignment");
		return;
	}
	m->owned = owned;
	int nadded = 0;
	cl_lock(c);
	for (int i = 0; i < nnext; i++)
		if (!tp_in(next[i], m->owned, m->nowned)) {
			cl_tp_take(next[i]);
			added[nadded++] = next[i];
		}
	cl_unlock(c);
	memcpy(m->owned, next, sizeof(cl_tp *) * (size_t)nnext);
	m->nowned = nnext;
	qsort(m->owned, (size_t)m->nowned, sizeof(cl_tp *), cmp_owned);
	free(next);
	m->cg_has_target = false;
	CH_LOGI(CL_LOG, "group %s: epoch %d: %d partitions (+%d)", c->conf.group_id, m->generation,
		m->nowned, nadded);
	/* Java's onPartitionsAssigned after each reconciliation that added, and
	 * after the first one of a membership even when empty */
	if (nadded || !m->cg_assigned_once)
		push_tps(m, CL_EV_ASSIGNED, added, nadded);
	m->cg_assigned_once = true;
	free(added);
	cl_member_polled(c);
	cl_offsets_lookup(c);
	cl_fetcher_kick(c);
	cg_heartbeat(m); /* the acknowledgement */
}

/* A leave heartbeat's answer (errors only logged): the close or
 * unsubscribe waiting in LEAVING goes on. */
static void
done_cg_leave(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	(void)c;
	(void)version;
	cg_hb *h = ud;
	cl_member *m = h->m;
	free(h);
	int e = err ? err : ((ch_ConsumerGroupHeartbeatResponse *)resp)->ErrorCode;
	if (e)
		CH_LOGD(CL_LOG, "ConsumerGroupHeartbeat (leave): %s", cohort_err_name(e));
	left_group(m);
}

/* Sends the leave heartbeat (epoch -1, or -2 for a static member); false
 * (nothing sent) without a membership, a coordinator or memory. */
static bool
cg_leave(cl_member *m, const char *why)
{
	if (m->generation < 0 || !m->coord || !m->member_id[0])
		return false;
	cg_hb *h = malloc(sizeof(*h));
	if (!h)
		return false;
	*h = (cg_hb){m, cg_leave_epoch(m)};
	CH_LOGI(CL_LOG, "group %s: leaving with epoch %d (%s)", m->c->conf.group_id, h->epoch, why);
	cg_send(m, done_cg_leave, h);
	return true;
}

/* ensure_active for the consumer protocol: join (epoch 0) when not in the
 * group, else tell a changed subscription at once. */
static void
cg_ensure_active(cl_member *m)
{
	if (m->state == M_UNJOINED) {
		if (!m->coord) {
			find_coordinator(m);
			return;
		}
		m->generation = 0;
		m->cg_assigned_once = false;
		m->need_rejoin = false;
		set_state(m, M_JOINING, "joining");
		cg_heartbeat(m);
		cl_member_polled(m->c);
	} else if (m->need_rejoin && (m->state == M_STABLE || m->state == M_JOINING)) {
		m->need_rejoin = false;
		cg_heartbeat(m);
	}
}

/* ---- driving ----------------------------------------------------------------------- */

/* Move toward a stable membership: the next step for the current state. */
static void
ensure_active(cl_member *m)
{
	cl_client *c = m->c;
	if (c->closing || (m->ntopics == 0 && !cg_pattern(m)))
		return; /* unsubscribed (a consumer-protocol pattern subscribes to no names) */
	if (m->cg) {
		cg_ensure_active(m);
		return;
	}
	if (m->state != M_UNJOINED && m->state != M_STABLE)
		return; /* a step is in flight, or closed, fatal, expired */
	if (m->state == M_STABLE && !m->need_rejoin)
		return;
	if (ch_timer_armed(&m->join_timer))
		return; /* backing off */
	if (!m->coord) {
		find_coordinator(m);
		return;
	}
	if (!m->cooperative && m->nowned > 0) {
		/* eager: revoke everything before joining */
		cl_tp **all = malloc(sizeof(cl_tp *) * (size_t)m->nowned);
		if (!all) {
			fail_fatal(m, COHORT_ERR__NOMEM, "revoke");
			return;
		}
		memcpy(all, m->owned, sizeof(cl_tp *) * (size_t)m->nowned);
		start_revoke(m, all, m->nowned, AFTER_JOIN);
		return;
	}
	if (m->cooperative && m->nowned > 0) {
		/* cooperative: revoke only what is no longer subscribed */
		cl_tp **gone = malloc(sizeof(cl_tp *) * (size_t)m->nowned);
		int n = 0;
		for (int i = 0; gone && i < m->nowned; i++) {
			bool sub = false;
			for (int j = 0; j < m->ntopics && !sub; j++)
				sub = strcmp(m->topics[j], m->owned[i]->topic) == 0;
			if (!sub)
				gone[n++] = m->owned[i];
		}
		if (n) {
			start_revoke(m, gone, n, AFTER_JOIN);
			return;
		}
		free(gone);
	}
	send_join(m);
}

void
cl_member_subscribe(cl_client *c, char **topics, int n)
{
	cl_member *m = c->member;
	for (int i = 0; i < m->ntopics; i++)
		free(m->topics[i]);
	free(m->topics);
	m->topics = topics;
	m->ntopics = n;
	request_rejoin(m, "subscription changed");
	if (m->state == M_POLL_EXPIRED)
		return;
	ensure_active(m);
}

/* A pattern subscription: the topics of the metadata that match it (whole names, as Java's
 * Pattern.matches; internal ones only without exclude.internal.topics) become the
 * subscription when they differ from it. */
static void
pattern_update(cl_member *m)
{
	cl_client *c = m->c;
	char **match = calloc((size_t)c->md.ntopics + 1, sizeof(char *));
	if (!match)
		return; /* out of memory: the next metadata answer tries again */
	int n = 0;
	bool oom = false;
	for (int32_t i = 0; i < c->md.ntopics && !oom; i++) {
		const cl_md_topic *t = &c->md.topics[i];
		if (t->err || (t->internal && c->conf.exclude_internal_topics) ||
		    regexec(c->pattern, t->name, 0, NULL, 0) != 0)
			continue;
		if (!(match[n] = strdup(t->name)))
			oom = true; /* keep the subscription; the next answer tries again */
		else
			n++;
	}
	/* both lists are sorted by name (md.topics is) */
	bool same = n == m->ntopics;
	for (int i = 0; same && i < n; i++)
		same = strcmp(m->topics[i], match[i]) == 0;
	if (same || oom) {
		for (int i = 0; i < n; i++)
			free(match[i]);
		free(match);
		return;
	}
	CH_LOGI(CL_LOG, "group %s: the pattern matches %d topics now (was %d)", c->conf.group_id, n,
		m->ntopics);
	cl_member_subscribe(c, match, n); /* takes match */
}

void
cl_member_metadata_changed(cl_client *c)
{
	cl_member *m = c->member;
	if (m && c->pattern)
		pattern_update(m);
	if (m && m->cg) {
		cg_reconcile(m); /* a target waiting for a topic id */
		return;
	}
	if (!m || m->state != M_STABLE || !m->leader || m->need_rejoin)
		return;
	for (int32_t i = 0; i < m->nsnap; i++) {
		const cl_md_topic *t = cl_metadata_topic(c, m->snap[i].topic);
		int32_t now = t && !t->err ? t->nparts : 0;
		if (t && now != m->snap[i].partitions) {
			CH_LOGI(CL_LOG, "group %s: topic %s has %d partitions (was %d): rejoining",
				c->conf.group_id, m->snap[i].topic, now, m->snap[i].partitions);
			request_rejoin(m, "partitions of a subscribed topic changed");
			ensure_active(m);
			return;
		}
	}
}

cohort_err
cl_member_commit_identity(cl_client *c, int32_t *gen, const char **member_id)
{
	cl_member *m = c->member;
	if (!m || m->generation < 0)
		return COHORT_ERR__ASSIGNMENT_LOST;
	if (m->cg && m->generation == 0) /* joining: no epoch to commit with yet */
		return COHORT_ERR_REBALANCE_IN_PROGRESS;
	if (m->state != M_STABLE && m->state != M_REVOKING)
		return COHORT_ERR_REBALANCE_IN_PROGRESS;
	*gen = m->generation;
	*member_id = m->member_id;
	return COHORT_OK;
}

void
cl_member_close(cl_client *c, cl_wait *w)
{
	cl_member *m = c->member;
	if (m->state == M_FATAL || m->state == M_CLOSED) {
		cl_wait_finish(c, w, COHORT_OK);
		return;
	}
	m->close_wait = w;
	if (m->unsub_wait) { /* an unsubscribe that timed out: the close takes over */
		cl_wait_finish(c, m->unsub_wait, COHORT_ERR__CLOSED);
		m->unsub_wait = NULL;
	}
	ch_timer_cancel(c->loop, &m->join_timer);
	ch_timer_cancel(c->loop, &m->poll_timer);
	if (m->state == M_REVOKING) {
		m->after_revoke = AFTER_LEAVE; /* the revoke in progress covers it */
		return;
	}
	if (m->nowned > 0 && m->generation >= 0) {
		cl_tp **all = malloc(sizeof(cl_tp *) * (size_t)m->nowned);
		if (all) {
			memcpy(all, m->owned, sizeof(cl_tp *) * (size_t)m->nowned);
			start_revoke(m, all, m->nowned, AFTER_LEAVE);
			return;
		}
	}
	if (m->nowned > 0)
		lose_partitions(m, "closing without a generation");
	m->state = M_REVOKING;
	m->after_revoke = AFTER_LEAVE;
	cl_member_revoke_done(c);
}

/*
 * The next step of an unsubscribe (Java's onLeavePrepare, then
 * maybeLeaveGroup): the owned partitions revoked (lost without a generation
 * or in the middle of a rebalance, as Java), then LeaveGroup for a dynamic
 * member with an id, then no generation and UNJOINED; unsub_wait finishes.
 */
static void
unsubscribe_step(cl_member *m)
{
	cl_client *c = m->c;
	if (m->state != M_LEAVING && m->nowned > 0) {
		bool mid =
			m->state == M_JOINING || m->state == M_ASSIGNING || m->state == M_SYNCING;
		cl_tp **all = malloc(sizeof(cl_tp *) * (size_t)m->nowned);
		if (all && m->generation >= 0 && !mid) {
			memcpy(all, m->owned, sizeof(cl_tp *) * (size_t)m->nowned);
			start_revoke(m, all, m->nowned, AFTER_UNSUBSCRIBE);
			return;
		}
		free(all);
		lose_partitions(m, mid ? "unsubscribed during a rebalance"
				       : "unsubscribed without a generation");
	}
	ch_timer_cancel(c->loop, &m->hb_timer);
	if (m->cg && m->state != M_LEAVING &&
	    cg_leave(m, "the consumer unsubscribed from all topics")) {
		set_state(m, M_LEAVING, "unsubscribe");
		return; /* done_cg_leave comes back here */
	}
	if (!m->cg && m->state != M_LEAVING && !instance_static(m) && m->member_id[0] && m->coord) {
		set_state(m, M_LEAVING, "unsubscribe");
		/* KIP-800's reason, Java's words */
		send_leave(m, "the consumer unsubscribed from all topics");
		return; /* done_leave comes back here */
	}
	/* Java's resetGenerationOnLeaveGroup: a later subscribe joins anew (the
	 * consumer protocol keeps a client-generated member id, KIP-1082) */
	m->generation = -1;
	m->leader = false;
	if (!m->cg || m->cg_named)
		set_member_id(m, "", 0);
	m->cg_named = false;
	m->cg_has_target = false;
	m->npending_add = 0;
	m->nprev = 0;
	free_join_members(m);
	free_snapshot(m);
	set_state(m, M_UNJOINED, "unsubscribed");
	if (m->unsub_wait) {
		cl_wait_finish(c, m->unsub_wait, COHORT_OK);
		m->unsub_wait = NULL;
	}
}

void
cl_member_unsubscribe(cl_client *c, cl_wait *w)
{
	cl_member *m = c->member;
	for (int i = 0; i < m->ntopics; i++)
		free(m->topics[i]);
	free(m->topics);
	m->topics = NULL;
	m->ntopics = 0; /* ensure_active joins nothing from now on */
	m->need_rejoin = false;
	if (m->unsub_wait) /* an earlier one that timed out: this one takes over */
		cl_wait_finish(c, m->unsub_wait, COHORT_OK);
	m->unsub_wait = w;
	if (m->state == M_FATAL || m->state == M_CLOSED) {
		cl_wait_finish(c, w, COHORT_OK);
		m->unsub_wait = NULL;
		return;
	}
	ch_timer_cancel(c->loop, &m->join_timer);
	ch_timer_cancel(c->loop, &m->poll_timer);
	if (m->state == M_REVOKING) {
		m->npending_add = 0; /* a cooperative round's additions never come */
		m->after_revoke = AFTER_UNSUBSCRIBE;
		return; /* the revoke in progress goes on, unsubscribe_step follows */
	}
	if (m->state == M_LEAVING)
		return; /* an unsubscribe's LeaveGroup is in flight */
	unsubscribe_step(m);
}

cl_member *
cl_member_new(cl_client *c)
{
	cl_member *m = calloc(1, sizeof(*m));
	if (!m || !(m->member_id = strdup(""))) {
		free(m);
		return NULL;
	}
	m->c = c;
	m->generation = -1;
	m->cooperative = true;
	m->cg = c->conf.group_protocol_consumer;
	m->cooperative |= m->cg;  /* the broker's reconciliation is incremental */
	m->cg_interval_ms = 3000; /* until the coordinator says */
	if (m->cg) {              /* KIP-1082: the client names itself */
		ch_uuid id = ch_uuid_random();
		char text[32];
		ch_uuid_to_base64(&id, text);
		free(m->member_id);
		if (!(m->member_id = strdup(text))) {
			free(m);
			return NULL;
		}
	}
	for (int i = 0; i < c->conf.nassignors; i++)
		if (!ch_assign_is_cooperative(c->conf.assignors[i]))
			m->cooperative = false;
	ch_timer_init(&m->find_timer, on_find_timer, m);
	ch_timer_init(&m->join_timer, on_join_timer, m);
	ch_timer_init(&m->hb_timer, on_hb_timer, m);
	ch_timer_init(&m->poll_timer, on_poll_timer, m);
	return m;
}

void
cl_member_free(cl_member *m)
{
	if (!m)
		return;
	cl_client *c = m->c;
	ch_timer_cancel(c->loop, &m->find_timer);
	ch_timer_cancel(c->loop, &m->join_timer);
	ch_timer_cancel(c->loop, &m->hb_timer);
	ch_timer_cancel(c->loop, &m->poll_timer);
	m_coord_waiter *w = m->coord_waiters;
	while (w) {
		m_coord_waiter *next = w->next;
		free(w);
		w = next;
	}
	for (int i = 0; i < m->ntopics; i++)
		free(m->topics[i]);
	free(m->topics);
	free_join_members(m);
	free_snapshot(m);
	free(m->owned);
	free(m->revoking);
	free(m->pending_add);
	free(m->prev);
	free(m->member_id);
	free(m->protocol);
	free(m->cg_target);
	free(m);
}
