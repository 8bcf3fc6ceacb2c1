/*
 * ch_coord_cg_int.h: the consumer-protocol groups' structures, shared by
 * ch_coord_cg.c (the state machine) and ch_coord_cg_check.c (invariants).
 */
#ifndef CH_COORD_CG_INT_H
#define CH_COORD_CG_INT_H

#include "common/ch_buf.h"
#include "common/ch_heap.h"
#include "common/ch_map.h"
#include "group/ch_coord_cg.h"

/* A set of partitions: sorted by (topic id bytes, partition), no repeats. */
typedef struct cg_set {
	ch_coord_cg_tp *v;
	int32_t n, cap;
} cg_set;

typedef enum cg_timer_kind {
	CG_TIMER_SESSION = 0,
	CG_TIMER_REBALANCE,
	CG_TIMER_JOIN,   /* classic member: rejoin within its rebalance timeout */
	CG_TIMER_SYNC,   /* classic member: SyncGroup within its rebalance timeout */
	CG_TIMER_ASSIGN, /* the group's assignment interval ended (g set, m NULL) */
} cg_timer_kind;

typedef struct cg_timer {
	ch_heap_node node; /* must be first */
	cg_timer_kind kind;
	struct cg_member *m;
	struct cg_group *g; /* CG_TIMER_ASSIGN only */
} cg_timer;

/* What a classic-protocol member inside a consumer group sent in its
 * JoinGroup (Kafka's ClassicMemberMetadata of ConsumerGroupMemberMetadata). */
typedef struct cg_classic_protocol {
	char *name;
	uint8_t *metadata;
	size_t len;
} cg_classic_protocol;

typedef struct cg_classic {
	int32_t session_timeout_ms;
	cg_classic_protocol *protocols; /* in the JoinGroup's order; the first one answers */
	int32_t nprotocols;
} cg_classic;

typedef struct cg_member {
	struct cg_group *g;
	char *id;                                               /* the member map's key copy */
	char *instance_id;                                      /* NULL: dynamic */
	char *rack, *client_id, *client_host, *server_assignor; /* NULL: none */
	char **topics; /* subscribed topic names, sorted, no repeats */
	int32_t ntopics;
	int32_t epoch, previous_epoch;
	ch_coord_cg_member_state state;
	int32_t rebalance_timeout_ms;
	cg_set assigned; /* current assignment */
	cg_set revoking; /* partitions pending revocation */
	/* The member reported owning all of `assigned` since it last grew. Until
	 * then an owned list without a partition may be a client still taking
	 * it (Java's consumer acknowledges a partial reconciliation while topic
	 * ids resolve, then takes the rest): not proof it let go. */
	bool acked;
	cg_set target; /* target assignment (of the group's assignment epoch) */
	/* partition key (cg_tp_key) -> the member epoch at which it was
	 * assigned (KIP-1251), for every assigned or revoking partition */
	ch_map aepochs;
	int32_t *assigned_ep, *revoking_ep; /* the same, aligned with the sets */
	char *regex; /* SubscribedTopicRegex as last sent ("" is none); NULL: never */
	cg_timer session;
	cg_timer rebalance;
	cg_classic *classic;     /* NULL: a consumer-protocol member */
	cg_timer join, sync;     /* classic members only (ch_coord_cg_classic.c) */
	bool store_dirty;        /* its records may have changed since the last flush */
	int32_t rebalance_epoch; /* the member epoch the rebalance timer is for */
} cg_member;

/* One subscribed topic as the group last read it (Kafka's subscription
 * metadata); a change bumps the group epoch. */
typedef struct cg_topic_meta {
	char *name;
	ch_uuid id;
	int32_t partitions;
} cg_topic_meta;

/* A regular expression members of a group subscribe to (Kafka's
 * ResolvedRegularExpression, plus who uses it): resolved once for the
 * group, not per member (ch_coord_cg_regex.c). */
typedef struct cg_regex {
	char *pattern;   /* the map's key copy */
	int32_t members; /* members subscribed to it (0 while replaying) */
	bool resolved;   /* topics is a resolution (else none yet) */
	char **topics;   /* the topics it matched that the member may describe, sorted */
	int32_t ntopics;
	int64_t version;  /* the topic change count it was resolved at */
	int64_t ts;       /* when it was resolved */
	bool store_dirty; /* its record may have changed since the last flush */
} cg_regex;

typedef struct cg_group {
	ch_coord_cg *cg;
	char *id;
	int32_t epoch;
	int32_t assignment_epoch;
	ch_map members;      /* member id -> cg_member, join order */
	ch_map statics;      /* instance id -> cg_member */
	ch_map owners;       /* partition key (cg_tp_key) -> cg_member holding it
			  * (assigned or pending revocation): Kafka's
			  * currentPartitionEpoch */
	cg_topic_meta *meta; /* sorted by name */
	int32_t nmeta;
	bool meta_stale; /* re-read topics at the next heartbeat */
	/* Hash of meta as stored (ConsumerGroupMetadataValue.MetadataHash);
	 * meta_unknown: replayed, meta not read yet: the next read compares
	 * by this hash, so a restart alone does not bump the epoch. */
	int64_t meta_hash;
	bool meta_unknown;
	bool store_all; /* every member's records may have changed (new target) */
	/* Members marked store_dirty since the last flush (ch_coord_cg_member_touch),
	 * and the first one's id: a flush after one member's heartbeat writes
	 * that member's records without scanning every member (1,000 members:
	 * three walks of the map per heartbeat were most of its cost). */
	int32_t store_touched;
	char *store_touched_id;
	int64_t assignment_ts; /* when the target was computed (AssignmentTimestamp) */
	/* The store may hold keys the group no longer has (a member removed;
	 * after a replay): the next flush looks for them. */
	bool store_scan;
	ch_map regexes; /* pattern -> cg_regex */
	/* When the regexes were last resolved (Kafka's
	 * lastResolvedRegularExpressionRefreshTimeMs); regex_never: not yet. */
	int64_t regex_ts;
	bool regex_never;
	/* Off-loop targets (ch_coord_cg_assign_job): the sequence number of the
	 * job in flight (0: none); the group epoch whose offloaded computation
	 * the assignor refused (computed within the next heartbeat, which
	 * answers the error); the end of the assignment interval. */
	uint64_t assign_job;
	int32_t assign_failed_epoch;
	cg_timer assign_timer;
} cg_group;

/* One record of a group as last written (or replayed): its value bytes;
 * unknown: an append of it failed, so what is on disk is not known. */
typedef struct cg_written {
	ch_buf value;
	bool unknown;
	int16_t type;
	char *member;  /* NULL for the group-level types */
	uint32_t seen; /* the flush that last wanted it */
} cg_written;

/* What __consumer_offsets holds for one group id: record key bytes ->
 * cg_written. Outlives the group (its tombstones are still to be
 * written when an append failed). */
typedef struct cg_store {
	char *group_id; /* the map's key copy */
	int32_t partition;
	ch_map recs;
	bool dirty; /* an append failed: write the difference again */
} cg_store;

/* An answer of another API than ConsumerGroupHeartbeat (a classic member's
 * JoinGroup, SyncGroup, Heartbeat, LeaveGroup): send answers the token
 * (error != 0: the append failed, that error instead), free frees it. */
typedef struct cg_answer_ops {
	void (*send)(ch_coord_cg *cg, void *token, const void *ans, int16_t error);
	void (*free)(void *ans);
} cg_answer_ops;

/* A heartbeat answer waiting for its records to be durable (a deep copy),
 * or another API's answer (ops set, ans owned). */
typedef struct cg_deferred {
	void *token;
	ch_ConsumerGroupHeartbeatResponse r; /* strings and arrays owned */
	const cg_answer_ops *ops;
	void *ans;
	struct cg_deferred *next;
} cg_deferred;

/* An append in flight: the keys it wrote (to mark them unknown if it
 * fails) and the answers waiting on it. */
typedef struct cg_append {
	uint64_t id;
	int32_t partition;
	char *group_id;
	ch_buf *keys; /* [nkeys] */
	bool *tombstones;
	size_t nkeys;
	cg_deferred *answers, **answers_tail;
	struct cg_append *next;
} cg_append;

struct ch_coord_cg {
	ch_coord_cg_config cfg;
	ch_coord_cg_ops ops;
	ch_map groups; /* group id -> cg_group */
	ch_heap timers;
	int64_t now;
	ch_map stores;                      /* group id -> cg_store */
	cg_append *appends, **appends_tail; /* in flight, oldest first */
	uint64_t next_append_id;
	uint32_t flushes;
	size_t load_skipped;
	int64_t topics_version; /* ch_coord_cg_metadata_changed calls: topics came or went */
	uint64_t assign_jobs;   /* offloaded jobs so far: the next one's sequence number */
};

#define CG_TP_KEY_LEN 20
static inline void
cg_tp_key(const ch_coord_cg_tp *tp, char out[CG_TP_KEY_LEN])
{
	for (int i = 0; i < 16; i++)
		out[i] = (char)tp->topic.b[i];
	uint32_t p = (uint32_t)tp->partition;
	out[16] = (char)(p >> 24);
	out[17] = (char)(p >> 16);
	out[18] = (char)(p >> 8);
	out[19] = (char)p;
}

bool ch_coord_cg_set_has(const cg_set *s, const ch_coord_cg_tp *tp);

/* ---- shared by ch_coord_cg.c and ch_coord_cg_store.c -------------------- */

void ch_coord_cg_log(const ch_coord_cg *cg, ch_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void ch_coord_cg_set_push(cg_set *s, const ch_coord_cg_tp *tp);
void ch_coord_cg_set_free(cg_set *s);
void ch_coord_cg_set_normalize(cg_set *s); /* sorts and removes repeats */
bool ch_coord_cg_set_eq(const cg_set *a, const cg_set *b);
void ch_coord_cg_set_copy(const cg_set *a, cg_set *out);
char *ch_coord_cg_dup_str(ch_str s); /* NULL for a null string */
cg_group *ch_coord_cg_group_find(const ch_coord_cg *cg, ch_str id);
cg_group *ch_coord_cg_group_create(ch_coord_cg *cg, ch_str id);
void ch_coord_cg_group_free(ch_coord_cg *cg, cg_group *g); /* the map entry is the caller's */
cg_member *ch_coord_cg_member_find(const cg_group *g, ch_str id);
cg_member *ch_coord_cg_member_add(cg_group *g, ch_str id);
/* Marks m's records for the next flush (m->store_dirty, counted in g). */
void ch_coord_cg_member_touch(cg_group *g, cg_member *m);
void ch_coord_cg_member_remove(cg_group *g, cg_member *m);
void ch_coord_cg_owners_put(cg_group *g, cg_member *m, const cg_set *s);
void ch_coord_cg_owners_drop(cg_group *g, const cg_set *s);
void ch_coord_cg_timer_set(ch_coord_cg *cg, cg_timer *t, int64_t deadline);
void ch_coord_cg_timer_cancel(ch_coord_cg *cg, cg_timer *t);
bool ch_coord_cg_meta_refresh(cg_group *g);
/* The assignment epochs of m's holdings follow its sets (call after any
 * change of them): a partition new to them gets `epoch`, one gone is
 * forgotten, the aligned arrays are rebuilt. */
void ch_coord_cg_epochs_sync(cg_member *m, int32_t epoch);
/* FNV-1a over the sorted topic metadata (0 for none). */
int64_t ch_coord_cg_meta_hash(const cg_topic_meta *meta, int32_t n);

/* ch_coord_cg_regex.c: the members' SubscribedTopicRegex (Kafka's
 * GroupMetadataManager.maybeUpdateRegularExpressions and its resolver). */
/* INVALID_REGULAR_EXPRESSION with Kafka's message when `regex` is new to g
 * (no member subscribes to it; g may be NULL) and does not compile; else 0. */
int16_t ch_coord_cg_regex_check(const cg_group *g, ch_str regex, char *msg, size_t cap);
/* m's regex went from old (NULL or "": none) to m->regex: the counts
 * follow, a regex nobody uses any more goes. Returns whether the group
 * epoch must move (the new one is already resolved: REGEX_UPDATED_AND_RESOLVED). */
bool ch_coord_cg_regex_member_update(cg_group *g, cg_member *m, const char *old);
/* m leaves: its regex loses a subscriber. */
void ch_coord_cg_regex_release(cg_group *g, const cg_member *m);
/* Resolves the group's regexes again when Kafka would (one unresolved, new
 * topics, the refresh interval passed; not within
 * regex_min_refresh_ms of the last time), as the member of `token` may see
 * topics. Returns whether a resolution changed (the epoch must move). */
bool ch_coord_cg_regex_maybe_refresh(cg_group *g, void *token, int64_t now);
/* The topics m's regex resolved to (NULL, 0 if none or not yet). */
const char *const *ch_coord_cg_regex_topics(const cg_group *g, const cg_member *m, int32_t *n);
/* After a replay: the counts from the members, unused regexes dropped, and
 * a refresh due (the topic change count restarted). */
void ch_coord_cg_regex_loaded(cg_group *g);
/* A ConsumerGroupRegularExpression record replayed: the regex's
 * resolution (topics NULL: its tombstone). */
void ch_coord_cg_regex_replay(cg_group *g, ch_str regex, const ch_str *topics, int32_t n,
			      int64_t ts);
void ch_coord_cg_regex_free_all(cg_group *g);

/* ch_coord_cg_store.c. Writes what changed in group_id's records since the
 * last write (its tombstones if the group is gone); `answer` (may be NULL)
 * goes out once they are durable, or at once if nothing is written and no
 * append of the partition is in flight. */
void ch_coord_cg_store_flush(ch_coord_cg *cg, const char *group_id, void *token,
			     const ch_ConsumerGroupHeartbeatResponse *answer);
/* The same for an answer of another API (ans owned from now on). */
void ch_coord_cg_store_flush_answer(ch_coord_cg *cg, const char *group_id, void *token,
				    const cg_answer_ops *ops, void *ans);
void ch_coord_cg_store_free_all(ch_coord_cg *cg);

/* ---- ch_coord_cg.c's steps, shared with ch_coord_cg_classic.c -------------- */

void ch_coord_cg_bump_epoch(cg_group *g, const char *why);
/* Removes m, re-reads the subscribed topics, bumps the group epoch; or, if
 * m was the last consumer-protocol member and the group may be downgraded,
 * the group becomes a classic one and is freed here: false then (g is
 * gone; the caller flushes by a copy of its id). */
bool ch_coord_cg_fence_member(cg_group *g, cg_member *m);
/* After members were removed: topics read again, the epoch bumped, an
 * emptied group's target epoch brought level (consumerGroupFenceMembers). */
void ch_coord_cg_members_fenced(cg_group *g, const char *why);
/* The same, then the group's records written (answer, may be NULL, once
 * they are durable). */
void ch_coord_cg_fence_and_flush(cg_group *g, cg_member *m, void *token,
				 const ch_ConsumerGroupHeartbeatResponse *answer);
/* A new target assignment at the group epoch, within the call; false (err
 * filled) if the assignor refused. */
bool ch_coord_cg_update_target(cg_group *g, char *err, size_t errcap);
/* The target follows the group epoch as configured (ch_coord_cg.h): at
 * once, at the end of the assignment interval, or offloaded. false (err
 * filled) only when computed at once and the assignor refused. */
bool ch_coord_cg_target_follow(cg_group *g, char *err, size_t errcap);
/* Moves m towards the target (owned: what it reports holding; NULL:
 * unknown). */
void ch_coord_cg_maybe_reconcile(cg_group *g, cg_member *m, const cg_set *owned, int64_t now);
/* m's subscription becomes names (sorted, repeats dropped); whether it changed. */
bool ch_coord_cg_member_set_topics(cg_member *m, const ch_str *names, int32_t n);
/* A static member's instance id passes from old to a new member new_id
 * (Kafka's replaceMember): it takes old's subscription, assignment and
 * target at epoch 0; old is gone. */
cg_member *ch_coord_cg_member_replace(cg_group *g, cg_member *old, ch_str new_id);

/* ---- ch_coord_cg_classic.c ------------------------------------------------- */

void ch_coord_cg_classic_free(cg_classic *c);
/* The consumer group made of classic group group_id (ch_coord_cg.h, online
 * upgrade), or NULL with *err and msg set (GROUP_ID_NOT_FOUND,
 * GROUP_MAX_SIZE_REACHED). */
cg_group *ch_coord_cg_upgrade(ch_coord_cg *cg, ch_str group_id, int16_t *err, char *msg,
			      size_t cap);
/* The online downgrade when `leaving` goes (ch_coord_cg.h): true if the
 * group was converted and freed. */
bool ch_coord_cg_downgrade(cg_group *g, cg_member *leaving);
/* A timer of a classic member fired (join or sync). */
void ch_coord_cg_classic_timer(ch_coord_cg *cg, cg_timer *t);

#endif
