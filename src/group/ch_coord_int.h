/*
 * ch_coord_int.h: the coordinator's private structures, shared by the files
 * of src/group/ (membership, offsets, admin, storage). Not for other layers.
 */
#ifndef CH_GROUP_INT_H
#define CH_GROUP_INT_H

#include <stddef.h>
#include <string.h>

#include "common/ch_arena.h"
#include "common/ch_heap.h"
#include "common/ch_map.h"
#include "group/ch_coord.h"

typedef struct ch_coord_group ch_coord_group;
typedef struct ch_coord_member ch_coord_member;

/* What a heap node belongs to; the node is the first field of its owner's
 * timer struct so the owner can be found from the node. */
typedef enum timer_kind {
	T_GROUP_JOIN, /* owner: ch_coord_group (initial delay / rebalance timeout) */
	T_GROUP_SYNC, /* owner: ch_coord_group (pending sync) */
	T_MEMBER,     /* owner: ch_coord_member (session expiry) */
	T_PENDING,    /* owner: pending member (MEMBER_ID_REQUIRED, not yet back) */
	T_RETENTION,  /* owner: the coordinator */
} timer_kind;

typedef struct coord_timer {
	ch_heap_node node; /* must be first */
	timer_kind kind;
	void *owner;
} coord_timer;
/* ch_coord_tick turns the heap's top node back into its coord_timer. */
_Static_assert(offsetof(coord_timer, node) == 0, "the heap node must be first of coord_timer");

typedef struct member_protocol {
	char *name;
	uint8_t *metadata;
	int32_t metadata_len;
} member_protocol;

/* One allocation with its client id, client host and instance id after it
 * (member_add: coord_member_client_id/_host find the first two); the fields
 * are ordered so that none pads (issue 15: the coordinator's bytes per
 * member). */
struct ch_coord_member {
	ch_coord_group *group;
	char *member_id;            /* key in group->members */
	char *instance_id;          /* group.instance.id, NULL for dynamic members; in the tail */
	member_protocol *protocols; /* in the member's order of preference; one block */
	uint8_t *assignment;        /* from the leader's SyncGroup; NULL = none */

	/* Parked requests: a JoinGroup waiting for the join phase to end, a
	 * SyncGroup waiting for the leader's assignment. */
	void *join_token;
	void *sync_token;

	int64_t joined_at;            /* when is_new was set (new-member join timeout) */
	int64_t join_parked_at;       /* when join_token was parked (rebalance history) */
	coord_timer session;          /* session (or new-member) expiry; may fire early */
	int64_t session_due;          /* the expiry itself (session_arm) */
	ch_coord_member *prev, *next; /* group order: first joined first (leader choice) */
	int32_t session_timeout_ms;
	int32_t rebalance_timeout_ms;
	int32_t n_protocols;
	int32_t assignment_len;
	int16_t join_version;
	int16_t sync_version;

	bool is_new; /* joined during this rebalance, never completed one */
	bool deferred; /* joined after this generation's join phase: parked for the next (join_defer) */
	bool pending_sync; /* must send SyncGroup for the current generation */
};

/* m's client id and client host: NUL-terminated, right after the struct. */
static inline const char *
coord_member_client_id(const ch_coord_member *m)
{
	return (const char *)(m + 1);
}
static inline const char *
coord_member_client_host(const ch_coord_member *m)
{
	const char *id = coord_member_client_id(m);
	return id + strlen(id) + 1;
}

/* A v4+ member that was given an id with MEMBER_ID_REQUIRED and has not
 * joined with it yet. */
typedef struct pending_member {
	ch_coord_group *group;
	char *member_id;
	coord_timer timer;
} pending_member;

typedef struct offset_entry {
	char *topic; /* points into the map key: topic_len bytes, a NUL, the partition */
	size_t topic_len;
	int32_t partition;
	int64_t offset;
	int32_t leader_epoch;
	/* Commit metadata: bytes with a length (NULs allowed; a copy with a
	 * NUL after them). A null metadata is stored as "", as Kafka does. */
	char *metadata;
	int32_t metadata_len;
	int64_t commit_ts;
	int64_t expire_ts; /* -1: default retention */
} offset_entry;

/* Why a state changed: a cause and its detail ("member X joined"). */
#define COORD_DETAIL_MAX 256
typedef struct coord_reason {
	ch_coord_cause cause;
	char detail[COORD_DETAIL_MAX];
} coord_reason;

/* How PreparingRebalance ends (Kafka keeps one delayed operation per
 * group: DelayedJoin or, from Empty, InitialDelayedJoin). */
typedef enum join_wait {
	JOIN_WAIT_NONE = 0, /* not PreparingRebalance */
	JOIN_WAIT_MEMBERS,  /* every member rejoined, or the rebalance timeout (DelayedJoin) */
	JOIN_WAIT_INITIAL,  /* only when group.initial.rebalance.delay.ms runs out,
			     * re-armed while members keep joining (InitialDelayedJoin) */
} join_wait;

/* Kafka's InitialDelayedJoin: the delay is re-armed once per expiry while
 * new members arrived during it, until the rebalance timeout is used up
 * (cohort's default instead waits on only until arrivals stop for
 * group.initial.rebalance.quiet.ms). */
typedef struct initial_delay {
	int32_t remaining_ms; /* what is left of the rebalance timeout for re-arms */
	bool member_joined;   /* a new member arrived since the delay was (re-)armed */
	/* the last arrival after the first member's (a JoinGroup that added a
	 * member or was answered MEMBER_ID_REQUIRED); 0: none yet */
	int64_t last_arrival;
} initial_delay;

/* A group's rebalance history: a ring of records (ch_coord_history.c). */
typedef struct coord_history {
	ch_coord_rebalance *ring;
	int32_t cap, head, n;
	/* The last record's members by id: open addressing (load <= 1/2) over
	 * 1 + their index in its members (0: a free slot), the ids being the
	 * entries' own: 8 bytes or so a member, not a map entry and a key copy
	 * (~120; issue 15). */
	int32_t *index;
	uint32_t index_cap; /* a power of two, or 0 */
	/* The open record's owners when it began, "topic\0partition" -> 1 +
	 * the owner's entry (consumer protocol type; built at its first
	 * assignment, kept across a cooperative follow-up round). */
	ch_map before;
	bool before_built;
	/* The rebalance under way (metrics): when and why it started. */
	int64_t cycle_start;
	ch_coord_cause cycle_cause;
	/* Members removed while no record was open (a leave or an expiry
	 * removes the member, then starts the rebalance): the record opened at
	 * the same time takes them as its members out. */
	char **gone;
	int32_t n_gone;
	int64_t gone_at;
} coord_history;

struct ch_coord_group {
	ch_coord *coord;
	char *group_id; /* key in coord->groups */
	ch_coord_group_state state;
	int64_t state_ts; /* when the current state was entered (wall ms) */
	int32_t generation;
	char *protocol_type; /* NULL until the first member */
	char *protocol_name; /* selected protocol of the current generation */
	ch_coord_member *leader;
	ch_map members; /* member id -> ch_coord_member */
	ch_coord_member *first, *last;
	ch_map static_members; /* instance id -> ch_coord_member */
	ch_map pending;        /* member id -> pending_member */
	ch_map protocol_votes; /* protocol name -> (intptr) members supporting it */
	int32_t awaiting_join; /* members with a parked JoinGroup */
	int32_t pending_sync;  /* members that owe a SyncGroup */
	join_wait join_wait;   /* PreparingRebalance's sub-state; JOIN_WAIT_NONE outside it */
	initial_delay initial; /* JOIN_WAIT_INITIAL only; zero otherwise */
	/* The rebalance in progress, or the last one: what started it (the
	 * latest PreparingRebalance entered) and when it began (the group left
	 * Stable or Empty). The group's own copy, for logs and the history. */
	coord_reason rebalance_reason;
	int64_t rebalance_started;
	/* cohort: a member arrived in CompletingRebalance (join_defer); the
	 * next rebalance, for this reason, starts once the generation is stored
	 * and every member synced. Only in CompletingRebalance and Stable. */
	bool rebalance_deferred;
	coord_reason deferred_reason;
	coord_timer join_timer;
	coord_timer sync_timer;
	ch_map offsets;           /* "topic\0partition" -> offset_entry */
	int32_t partition;        /* __consumer_offsets partition */
	uint64_t store_id;        /* in-flight assignment store (0 = none) */
	int32_t store_generation; /* the generation that store is for */
	coord_history history;
};

/* An append in flight and what to do when it completes. */
typedef enum append_kind {
	A_SYNC_STORE,   /* leader's assignment: then answer the syncs */
	A_STATIC_STORE, /* static member replaced in Stable: then answer its join */
	A_DEFERRED,     /* commit, group or offset deletion: then finish and answer */
	A_FIRE,         /* tombstones, empty-group stores: nothing to answer */
} append_kind;

typedef struct pending_append {
	uint64_t id; /* (sequence << 32) | slot in coord->appends */
	append_kind kind;
	char *group_id;
	int32_t generation;
	void *token;
	int16_t version;
	void *data; /* kind-specific */
} pending_append;

/* The appends in flight, found by id in O(1): a slot array with a free
 * list; an id names its slot and a sequence number, so an id that is not
 * (or no longer) in flight finds nothing. Completions do not come in issue
 * order, not even per partition (an append refused at once is posted
 * before earlier ones are durable), so a FIFO would not do. */
typedef struct append_table {
	pending_append **slot; /* [cap]; NULL = free */
	uint32_t *free;        /* stack of free slot indexes */
	uint32_t nfree, cap;
	size_t n;          /* in flight */
	uint32_t next_seq; /* of the next id */
} append_table;

struct ch_coord {
	ch_coord_config cfg;
	ch_coord_ops ops;
	ch_map groups; /* group id -> ch_coord_group */
	ch_heap timers;
	coord_timer retention;
	append_table appends;
	unsigned checks_since_full; /* CH_COORD_CHECKS: entry points since a full check */
	size_t load_skipped;
	/* The group of the last offset record replayed (NULL: none; cleared
	 * when that group is freed): the records of one commit are one batch of
	 * one group, so a replay finds each group once per batch, not per record. */
	struct ch_coord_group *load_last;
	size_t load_last_len;
	uint8_t *load_state; /* ch_coord_load_state per __consumer_offsets partition */
	size_t bytes;        /* approximate heap use */
	ch_coord_stats stats;
};
/* load_state holds a ch_coord_load_state in a byte; the checker takes
 * LOAD_FAILED for the last state. */
_Static_assert(CH_COORD_LOAD_FAILED <= UINT8_MAX, "a load state must fit load_state's byte");
/* The checker takes A_FIRE for the last append kind. */
_Static_assert(A_FIRE == 3 && A_SYNC_STORE == 0, "append kinds are 0..A_FIRE");

/* ---- the state table (ch_coord_table.c) ---------------------------------- */

/* The requests of the table (rows). A JoinGroup is one of seven kinds,
 * told apart by its member id and instance id (join_classify). */
typedef enum coord_req {
	REQ_JOIN_NEW,        /* no member id, no instance id */
	REQ_JOIN_STATIC_NEW, /* no member id, an instance id no member holds */
	REQ_JOIN_STATIC,     /* no member id, the instance id of a member */
	REQ_JOIN_PENDING,    /* the id a MEMBER_ID_REQUIRED answer handed out */
	REQ_JOIN_KNOWN,      /* a member's own id (and instance id, if static) */
	REQ_JOIN_FENCED,     /* a member id with an instance id another member holds */
	REQ_JOIN_UNKNOWN,    /* a member id the group does not know */
	REQ_SYNC,
	REQ_HEARTBEAT,
	REQ_LEAVE,
	REQ_COMMIT,
	REQ_FETCH,
	REQ_DESCRIBE,
	REQ_DELETE,
	COORD_REQ_N
} coord_req;

/* Columns: no such group, then one per ch_coord_group_state. */
enum {
	COORD_COL_NO_GROUP = 0,
	COORD_COL_N = CH_COORD_GROUP_DEAD + 2
};
/* Column state + 1 is that state's: the states are 0..Dead, in order. */
_Static_assert(CH_COORD_GROUP_EMPTY == 0 && CH_COORD_GROUP_PREPARING_REBALANCE == 1 &&
		       CH_COORD_GROUP_COMPLETING_REBALANCE == 2 && CH_COORD_GROUP_STABLE == 3 &&
		       CH_COORD_GROUP_DEAD == 4,
	       "the state table's columns follow ch_coord_group_state's order");

/* What a state does with a request (ch_coord_table.c explains each). */
typedef enum coord_act {
	ACT_NEVER,  /* cannot happen; answers `err` (CH_COORD_CHECKS builds abort) */
	ACT_ANSWER, /* answer `err` */
	ACT_CREATE,
	ACT_JOIN_NEW,
	ACT_JOIN_ADD,
	ACT_JOIN_FENCED,
	ACT_JOIN_REPLACE,
	ACT_JOIN_REPLACE_REBALANCE,
	ACT_JOIN_REPLACE_KEEP,
	ACT_JOIN_UPDATE,
	ACT_JOIN_RESEND,
	ACT_JOIN_CURRENT,
	ACT_SYNC_WAIT,
	ACT_SYNC_ASSIGNMENT,
	ACT_LEAVE,
	ACT_COMMIT,
	ACT_COMMIT_SIMPLE,
	ACT_FETCH,
	ACT_DESCRIBE_FULL,
	ACT_DESCRIBE_SUMMARY,
	ACT_DESCRIBE_DEAD,
	ACT_DELETE,
	ACT_N
} coord_act;

typedef struct coord_rule {
	coord_act act;
	int16_t err; /* ACT_ANSWER, ACT_NEVER: the error answered */
	bool check;  /* validate the member first; its error wins */
} coord_rule;

/* The cell of request `req` for group g (NULL: no such group). */
const coord_rule *ch_coord_rule_for(coord_req req, const ch_coord_group *g);
/* The cell of `req` in column `col` (COORD_COL_NO_GROUP or state + 1). */
const coord_rule *ch_coord_rule_at(coord_req req, int col);

/* A cell that cannot be reached was: with CH_COORD_CHECKS the process
 * aborts (a bug in the table or in join_classify); without, the cell's
 * error is answered. */
#ifdef CH_COORD_CHECKS
void ch_coord_never(const ch_coord *c, const char *where) __attribute__((noreturn));
#define COORD_NEVER(c, r) ((r)->act == ACT_NEVER ? ch_coord_never((c), __func__) : (void)0)
#else
#define COORD_NEVER(c, r) ((void)(c), (void)(r))
#endif

/* ---- shared helpers (ch_coord.c) ---------------------------------------- */

/* The value under key in m; NULL for a null string (len < 0) or a missing key. */
static inline void *
coord_map_get(const ch_map *m, ch_str key)
{
	return key.len < 0 ? NULL : ch_map_get(m, key.p, (size_t)key.len);
}
/* Log through ops->log (the core has no log of its own); the line is
 * formatted only when the shell would write it. */
void ch_coord_log(const ch_coord *c, ch_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define COORD_LOGW(c, ...) ch_coord_log((c), CH_LOG_WARN, __VA_ARGS__)
#define COORD_LOGI(c, ...) ch_coord_log((c), CH_LOG_INFO, __VA_ARGS__)
#define COORD_LOGD(c, ...) ch_coord_log((c), CH_LOG_DEBUG, __VA_ARGS__)
ch_coord_group *ch_coord_group_find(const ch_coord *c, ch_str id);
ch_coord_group *ch_coord_group_get_or_create(ch_coord *c, ch_str id, int64_t now);
/* A reason, formatted ("member %s joined"); the detail is cut to fit. */
coord_reason ch_coord_reason_make(ch_coord_cause cause, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Every state change goes through here: logged at INFO (replay at DEBUG)
 * with its reason; PreparingRebalance keeps the reason as the rebalance's. */
void ch_coord_group_set_state(ch_coord_group *g, ch_coord_group_state s, int64_t now,
			      const coord_reason *why);
/* -> Dead: the group leaves the coordinator and is freed. */
void ch_coord_group_delete(ch_coord_group *g, int64_t now, const coord_reason *why);
ch_coord_member *ch_coord_member_find(const ch_coord_group *g, ch_str member_id);
void ch_coord_member_touch_session(ch_coord_member *m, int64_t now);
/* Validate member/instance/generation as Kafka's validateCurrentMember;
 * 0 when fine. */
int16_t ch_coord_validate_member(const ch_coord_group *g, ch_str member_id, ch_str instance_id,
				 int32_t generation);
char *ch_coord_str_dup(ch_str s); /* NULL for a null string */
/* 0 if the group's partition is LOADED, else the error Kafka gives before
 * any API mapping: COORDINATOR_LOAD_IN_PROGRESS or NOT_COORDINATOR. */
int16_t ch_coord_load_error(const ch_coord *c, ch_str group_id);

/* ---- rebalance history hooks (ch_coord_history.c) ------------------------
 * Each records one step of the group's open rebalance record; none changes
 * the group's behaviour. Call sites: */
/* set_state, before the state changes to s (cause: why, for
 * PreparingRebalance): the rebalance duration histograms (ch_coord_stats);
 * kept with or without a history. */
void ch_coord_history_phase(ch_coord_group *g, int64_t now, ch_coord_group_state s,
			    ch_coord_cause cause);
/* set_state -> PreparingRebalance: opens a record, or folds the cause in. */
void ch_coord_history_prepare(ch_coord_group *g, int64_t now, ch_coord_cause cause,
			      const char *detail);
/* A cause that did not change the state (a join in PreparingRebalance):
 * folded into the open record, if any. */
void ch_coord_history_trigger(ch_coord_group *g, int64_t now, ch_coord_cause cause,
			      const char *detail);
/* member_remove: m leaves the group (kept for the record this removal
 * opens, if it opens one at the same now). */
void ch_coord_history_member_out(ch_coord_group *g, const ch_coord_member *m, int64_t now);
/* complete_join, after the generation, protocol and leader are set and
 * before the parked JoinGroups are answered (their join_parked_at give the
 * barrier). */
void ch_coord_history_join_done(ch_coord_group *g, int64_t now, const char *ended_by);
/* The leader's SyncGroup, before its assignments replace the old ones. */
void ch_coord_history_leader_sync(ch_coord_group *g, const ch_SyncGroupRequest *rq, int64_t now);
/* A SyncGroup answered with m's assignment (also a late one in Stable). */
void ch_coord_history_synced(ch_coord_group *g, const ch_coord_member *m, int64_t now);
/* set_state -> Stable, Empty or Dead: closes the open record (a cooperative
 * one whose last round took partitions away expects its follow-up round:
 * the next prepare reopens it). */
void ch_coord_history_end(ch_coord_group *g, int64_t now, ch_coord_group_state s);
/* group_free. */
void ch_coord_history_free(ch_coord_group *g);

/* ---- appends (ch_coord_store.c) ----------------------------------------- */
/* A new append in flight (in c->appends from now: issue it at once). */
pending_append *ch_coord_append_new(ch_coord *c, append_kind kind, ch_coord_group *g, void *token,
				    int16_t version);
/* The append in flight with this id, or NULL (it stays in the table). */
const pending_append *ch_coord_append_find(const append_table *t, uint64_t id);
/* Frees the table; drop(a) frees each append still in flight, unanswered
 * (the coordinator is going away). */
void ch_coord_append_table_free(append_table *t, void (*drop)(pending_append *a));
void ch_coord_append_issue(ch_coord *c, pending_append *a, const ch_coord_record *recs, size_t n,
			   int32_t partition);
void ch_coord_record_free(ch_coord_record *r);
void ch_coord_record_group_tombstone(ch_coord_record *r, const ch_coord_group *g);
void ch_coord_record_offset(ch_coord_record *r, const char *group, const char *topic,
			    int32_t partition, int64_t offset, int32_t leader_epoch,
			    const char *metadata, size_t mlen, int64_t commit_ts,
			    int64_t expire_ts);
void ch_coord_record_offset_tombstone(ch_coord_record *r, const char *group, const char *topic,
				      int32_t partition);
/* Store the group's metadata (after a sync or a static replacement). */
void ch_coord_group_store(ch_coord_group *g, append_kind kind, void *token, int16_t version,
			  int64_t now, void *data);

/* ---- offsets (ch_coord_offsets.c) --------------------------------------- */
offset_entry *ch_coord_offset_find(const ch_coord_group *g, const char *topic, size_t tlen,
				   int32_t partition);
/* Set a committed offset; metadata is mlen bytes (NULL with 0: ""). */
void ch_coord_offset_put(ch_coord_group *g, const char *topic, size_t tlen, int32_t partition,
			 int64_t offset, int32_t leader_epoch, const char *metadata, size_t mlen,
			 int64_t commit_ts, int64_t expire_ts);
void ch_coord_offset_remove(ch_coord_group *g, offset_entry *e);
/* When offsets retention removes e as the group is now (Kafka's
 * cleanupGroupMetadata, KIP-211): an Empty consumer group's offsets
 * offsets.retention after it became Empty; a simple group's by commit
 * time; a Stable consumer group's only for topics nobody subscribes to, by
 * commit time; an explicit expire timestamp (OffsetCommit v1-v4) always.
 * INT64_MAX: not while the group stays as it is. */
int64_t ch_coord_offset_expires_at(const ch_coord_group *g, const offset_entry *e);
void ch_coord_offsets_free(ch_coord_group *g);
void ch_coord_deferred_append_done(ch_coord *c, pending_append *a, int16_t error, int64_t now);
/* A response that waits for one or more appends (ch_coord_offsets.c). */
typedef struct deferred deferred;
/* Applies what the appends made durable (d->error: the first failure). */
typedef void deferred_finish_fn(ch_coord *c, deferred *d, int64_t now);
struct deferred {
	void *token;
	int16_t version;
	ch_arena arena; /* the response and everything it points to */
	void *resp;
	int outstanding;            /* appends not yet done */
	int16_t error;              /* first append error */
	deferred_finish_fn *finish; /* NULL: nothing to apply */
	void *ctx;
};
/* The deferred response to req: d->resp is resp_size zeroed bytes in its
 * arena (run the codec's _init on it); once no append is outstanding
 * (ch_coord_deferred_start, or the last completion) finish runs and d->resp is
 * sent, and d is freed. */
deferred *ch_coord_deferred_new(const ch_coord_req *req, size_t resp_size,
				deferred_finish_fn *finish);
/* n (at least one) zeroed elements of `size` bytes that live as long as d. */
void *ch_coord_deferred_alloc(deferred *d, size_t n, size_t size);
/* A copy of s that lives as long as d (null stays null). */
ch_str ch_coord_deferred_str(deferred *d, ch_str s);
void ch_coord_deferred_add_append(ch_coord *c, deferred *d, ch_coord_group *g,
				  const ch_coord_record *recs, size_t n);
/* Answer at once if no append was issued. */
void ch_coord_deferred_start(ch_coord *c, deferred *d, int64_t now);
void ch_coord_retention_run(ch_coord *c, int64_t now);

/* ---- invariants (ch_coord_check.c) --------------------------------------- */
/* With CH_COORD_CHECKS, the end of an entry point checks the group it
 * named (everything for a null id, and every so many calls) and a
 * violation aborts with its text; without, these are no-ops.
 *   COORD_CHECK_AFTER(c, group_id): check now (a function's single exit).
 *   COORD_CHECK_ON_RETURN(c, group_id): first in a function with several
 *   returns: check whenever it returns. The id is copied at once (a
 *   request's memory is freed when it is answered). */
#ifdef CH_COORD_CHECKS
typedef struct coord_entry {
	ch_coord *c;
	const char *where;
	char *group; /* a copy; NULL: check everything */
} coord_entry;
coord_entry ch_coord_entry_begin(ch_coord *c, const char *where, ch_str group_id);
void ch_coord_entry_end(coord_entry *e);
#define COORD_CHECK_ON_RETURN(c, group_id)                                                         \
	coord_entry coord_entry_ __attribute__((cleanup(ch_coord_entry_end), unused)) =            \
		ch_coord_entry_begin((c), __func__, (group_id))
#define COORD_CHECK_AFTER(c, group_id)                                                             \
	do {                                                                                       \
		coord_entry e_ = ch_coord_entry_begin((c), __func__, (group_id));                  \
		ch_coord_entry_end(&e_);                                                           \
	} while (0)
#else
#define COORD_CHECK_ON_RETURN(c, group_id) ((void)(c), (void)(group_id))
#define COORD_CHECK_AFTER(c, group_id) ((void)(c), (void)(group_id))
#endif

/* ---- membership (ch_coord.c) -------------------------------------------- */
/* The member's protocol of that name, or NULL. */
const member_protocol *ch_coord_member_protocol(const ch_coord_member *m, const char *name);
/* Replay: drop a member without answering anything; restore a stored one
 * (its only protocol is the group's selected one, with its subscription). */
void ch_coord_member_drop(ch_coord_group *g, ch_coord_member *m);
ch_coord_member *ch_coord_member_restore(ch_coord_group *g, ch_str member_id, ch_str instance_id,
					 ch_str client_id, ch_str client_host,
					 int32_t session_timeout, int32_t rebalance_timeout,
					 ch_bytes subscription, ch_bytes assignment);
void ch_coord_sync_append_done(ch_coord *c, pending_append *a, int16_t error, int64_t now);
void ch_coord_static_append_done(ch_coord *c, pending_append *a, int16_t error, int64_t now);

#endif
