/*
 * ch_coord.h: the classic group coordinator (Kafka's GroupCoordinator), as a
 * pure state machine.
 *
 * Names. The module's one prefix is ch_coord (CH_COORD for constants): every
 * function group/ exports, every type and constant of this header and every
 * ch_ name of ch_coord_int.h (ch_coord_group, ch_coord_member) has it, and
 * the files are ch_coord*.c; what one file alone uses is static. Why
 * ch_coord and not ch_group: the module is the coordinator, its API (the
 * shell in cohortd/coord_shell.c, ch_broker's `coord`) was already
 * ch_coord_*, and "group" is one of the things it holds (ch_coord_group),
 * so ch_group_find could not say whether it finds a group or is the module.
 * The folder (and CMake library ch_group) keeps DESIGN.md's name, group/.
 * The group_symbols test fails if the library exports a name without the
 * prefix. Types private to group/ (ch_coord_int.h) without a ch_ keep short
 * names (coord_timer, pending_member, deferred): no other layer sees them.
 *
 * No sockets, files or clock in here. Everything comes in as a call with the
 * current time (`now`, wall-clock milliseconds, virtual in the simulator):
 * a decoded request with an opaque `token`, a timer tick, the completion of
 * a durable append, a record replayed from __consumer_offsets. Everything
 * goes out through ch_coord_ops: a response for a token, records to append,
 * log lines, and the next deadline (ch_coord_next_deadline) for the shell to
 * wake at. Member ids take their randomness from ops->random_uuid.
 *
 * Each request call ends with exactly one ops->respond(token, resp) — at
 * once, or later (a JoinGroup waits for the rebalance, a SyncGroup for the
 * leader's assignment, an OffsetCommit for its durable append). `resp`
 * points to the response struct of the request's API (the codec's type,
 * e.g. ch_JoinGroupResponse), with every field for the request's version
 * filled; it and what it points to are valid only during the callback.
 *
 * Group states (Kafka's names; GroupState in ListGroups/DescribeGroups):
 *
 *              +------------------------------------------------+
 *              v                                                |
 *   Empty --join--> PreparingRebalance --join done--> CompletingRebalance
 *     ^               ^   |    ^                          |      |
 *     |               |   |    +--member change/timeout---+      |
 *     |  all left/    |   |                                      | leader's
 *     +--expired------+---+                                      | SyncGroup
 *                     ^                                          v
 *                     +----join/leave/expiry/metadata change-- Stable
 *
 *   Dead: deleted (DeleteGroups, offsets expired, tombstone replayed).
 *
 *   cohort, not Kafka (group.rebalance.join.waits.for.sync): a new member
 *   in CompletingRebalance, or in Stable while members still owe a
 *   SyncGroup, waits parked in its JoinGroup; Stable and every member
 *   synced -> PreparingRebalance (join_defer, deferred_rebalance_start).
 *
 * Transitions, with the function that performs them (ch_coord.c unless
 * named); each goes through ch_coord_group_set_state, which logs it with
 * its reason:
 *   Empty|Stable|CompletingRebalance -> PreparingRebalance   prepare_rebalance
 *   PreparingRebalance -> CompletingRebalance|Empty          complete_join
 *   CompletingRebalance -> Stable                            ch_coord_sync_append_done (the
 *                                                            leader's assignment is durable)
 *   any -> Dead                                              ch_coord_group_delete
 *   replay: -> Stable|Empty                                  load_group, load_finish_groups
 *                                                            (ch_coord_store.c)
 *
 * PreparingRebalance has a sub-state, how its join phase ends: when every
 * member has rejoined or at the rebalance timeout (Kafka's DelayedJoin), or,
 * entered from Empty, only when group.initial.rebalance.delay.ms runs out,
 * then on while new members keep arriving, within the rebalance timeout
 * (Kafka's InitialDelayedJoin re-arms the whole delay after any arrival;
 * cohort by default only until group.initial.rebalance.quiet.ms passed
 * without one).
 *
 * What each state does with each request, the state table. The handlers
 * look their cell up in ch_coord_table.c and do what it says; this copy is
 * rendered from those rules, and the group_coord test fails when the two
 * differ (GROUP_STATE_TABLE_WRITE=1 group_test_coord t_state_table_in_header
 * rewrites it). Before the table come the checks that do not depend on the
 * state: the group id (INVALID_GROUP_ID), the partition's load state (see
 * "Loading" below) and, for JoinGroup, the session timeout's bounds
 * (INVALID_SESSION_TIMEOUT), group.max.size for a member not yet in the
 * group (GROUP_MAX_SIZE_REACHED) and the protocols (Kafka's
 * supportsProtocols: INCONSISTENT_GROUP_PROTOCOL). The Dead column is
 * Kafka's answer for a group being unloaded; a deleted group here leaves
 * the coordinator at once, so a request finds no group instead. Not in the
 * table: ListGroups (every state is listed) and OffsetDelete (Dead and
 * no group: GROUP_ID_NOT_FOUND; otherwise it depends on the members and
 * the protocol type, ch_coord_offsets.c).
 *
 * BEGIN STATE TABLE
 *                   no group     Empty        Preparing    Completing   Stable       Dead
 * JoinGroup, no id  create       new          new          new          new          NOT_AVAIL
 *   new instance    create       add          add          add          add          NOT_AVAIL
 *   known instance  -            -            replace      replace+rb   keep|rb      NOT_AVAIL
 *   pending id      -            add          add          add          add          NOT_AVAIL
 *   member's id     -            -            update       resend|rb    current|rb   NOT_AVAIL
 *   fenced instance -            -            fenced       fenced       fenced       NOT_AVAIL
 *   unknown id      UNKNOWN      UNKNOWN      UNKNOWN      UNKNOWN      UNKNOWN      NOT_AVAIL
 * SyncGroup         UNKNOWN      UNKNOWN*     REBALANCING* wait*        assignment*  NOT_AVAIL
 * Heartbeat         UNKNOWN      UNKNOWN*     REBALANCING* NONE*        NONE*        NOT_AVAIL
 * LeaveGroup        remove       remove       remove       remove       remove       NOT_AVAIL
 * OffsetCommit      simple       commit*      commit*      REBALANCING* commit*      NOT_AVAIL
 * OffsetFetch       offsets      offsets      offsets      offsets      offsets      offsets
 * DescribeGroups    Dead         summary      summary      summary      full         summary
 * DeleteGroups      NOT_FOUND    delete       NON_EMPTY    NON_EMPTY    NON_EMPTY    NOT_FOUND
 *
 * * the member is checked first (validateMember, then the generation; SyncGroup
 *   also the protocol type and name; OffsetCommit: validateOffsetCommit): its
 *   error is the answer if it fails
 * -           cannot happen (no such member can exist in that state)
 * create      the group is created Empty, then as Empty
 *             (getOrMaybeCreateClassicGroup: only without a member id)
 * new         v4+: MEMBER_ID_REQUIRED with a new id, kept pending until the
 *             member joins with it (KIP-394); v0-v3: add
 *             (classicGroupJoinNewDynamicMember)
 * add         the member is added and the group rebalances; from Empty after
 *             group.initial.rebalance.delay.ms
 *             (addMemberThenRebalanceOrCompleteJoin, InitialDelayedJoin);
 *             cohort: in CompletingRebalance (or Stable with members to sync) it
 *             waits for the generation to be stored and synced
 *             (group.rebalance.join.waits.for.sync)
 * fenced      FENCED_INSTANCE_ID: a newer member id holds the instance; logged
 *             with both ids (validateExistingMember)
 * replace     new member id for the instance, the old one fenced; the join phase
 *             goes on (updateStaticMemberThenRebalanceOrCompleteJoin, KIP-345)
 * replace+rb  replace, and rebalance: the leader may have assigned to the old id
 *             (updateStaticMemberThenRebalanceOrCompleteJoin)
 * keep|rb     replace; protocol unchanged: stored, answered with the current
 *             generation, no rebalance (v9+: a returning leader gets
 *             SkipAssignment, KIP-814); else rebalance
 *             (updateStaticMemberThenRebalanceOrCompleteJoin)
 * update      the member's protocols are updated and its JoinGroup waits for the
 *             join phase (classicGroupJoinExistingMember,
 *             updateMemberThenRebalanceOrCompleteJoin)
 * resend|rb   same protocols: this generation's JoinGroup answer again (a lost
 *             response); else update and rebalance
 *             (classicGroupJoinExistingMember)
 * current|rb  a follower with the same protocols gets the current generation;
 *             the leader or changed protocols: update and rebalance
 *             (classicGroupJoinExistingMember)
 * wait        the SyncGroup waits; the leader's assignment is stored, then every
 *             waiting member is answered (classicGroupSyncToClassicGroup)
 * assignment  the member's stored assignment: a late follower or a retry
 *             (classicGroupSyncToClassicGroup)
 * remove      each named member leaves, an unknown one gets UNKNOWN_MEMBER_ID, a
 *             fenced one FENCED_INSTANCE_ID (classicGroupLeaveToClassicGroup,
 *             removeMemberAndUpdateClassicGroup)
 * commit      the offsets are appended and answered once durable
 *             (ClassicGroup.validateOffsetCommit passed)
 * simple      generation -1: the group is created, then as Empty; else
 *             ILLEGAL_GENERATION (OffsetMetadataManager.validateOffsetCommit)
 * offsets     the committed offsets; -1 and "" where none (fetchOffsets,
 *             fetchAllOffsets)
 * full        state, protocol, members with metadata and assignment
 *             (describeGroups)
 * summary     state and members with their assignment, no protocol or metadata
 *             (describeGroups: describeNoMetadata)
 * Dead        described as Dead: no error up to v5, GROUP_ID_NOT_FOUND with
 *             "Group <id> not found." from v6 (describeGroups, KIP-1043)
 * delete      tombstones for the offsets and the group, answered once durable
 *             (ClassicGroup.validateDeleteGroup passed)
 * UNKNOWN     UNKNOWN_MEMBER_ID
 * REBALANCING REBALANCE_IN_PROGRESS
 * NOT_AVAIL   COORDINATOR_NOT_AVAILABLE
 * NON_EMPTY   NON_EMPTY_GROUP
 * NOT_FOUND   GROUP_ID_NOT_FOUND
 * END STATE TABLE
 *
 * Timers (one heap, O(log n) per re-arm; no scan of members per tick):
 *   group join timer     initial rebalance delay / rebalance timeout
 *   group sync timer     members that never send SyncGroup after a join
 *   member session       session.timeout.ms since the last heartbeat
 *   pending member       a v4+ first join that never came back
 *   offsets retention    every offsets.retention.check.interval.ms
 */
#ifndef CH_GROUP_H
#define CH_GROUP_H

#include <stdbool.h>
#include <stdint.h>

#include "common/ch_buf.h"
#include "common/ch_hist.h"
#include "common/ch_log.h"
#include "common/ch_uuid.h"
#include "proto/generated/ch_msgs.h"

typedef struct ch_coord ch_coord;

typedef struct ch_coord_config {
	int32_t min_session_timeout_ms;     /* group.min.session.timeout.ms (6000) */
	int32_t max_session_timeout_ms;     /* group.max.session.timeout.ms (1800000) */
	int32_t initial_rebalance_delay_ms; /* group.initial.rebalance.delay.ms (3000) */
	/* group.initial.rebalance.quiet.ms (cohort): once the delay ran out,
	 * wait on only until no consumer has arrived for this long; -1: Kafka's
	 * rule (another whole delay after any arrival during the last one) */
	int32_t initial_rebalance_quiet_ms;
	/* group.rebalance.join.waits.for.sync (cohort, true): a member joining
	 * in CompletingRebalance waits for the generation (ch_coord.c's
	 * join_defer); false: Kafka's rule, the generation is abandoned */
	bool join_waits_for_sync;
	int32_t max_size;                   /* group.max.size (INT32_MAX) */
	int32_t offset_metadata_max_bytes;  /* offset.metadata.max.bytes (4096) */
	int64_t offsets_retention_ms;       /* offsets.retention.minutes * 60000 */
	int64_t offsets_retention_check_ms; /* offsets.retention.check.interval.ms */
	int32_t offsets_partitions;         /* offsets.topic.num.partitions (50) */
	int32_t new_member_join_timeout_ms; /* Kafka's fixed 300000 */
	int32_t rebalance_history_size;     /* group.rebalance.history.size (cohort: 100; 0 off) */
} ch_coord_config;

/* Sensible defaults (Kafka's). */
void ch_coord_config_defaults(ch_coord_config *c);

/* One record for __consumer_offsets: Kafka's key and value encodings
 * (version-prefixed GroupMetadata* / OffsetCommit* schemas). */
typedef struct ch_coord_record {
	ch_buf key;
	ch_buf value;   /* ignored when tombstone */
	bool tombstone; /* null value: delete the key */
} ch_coord_record;

typedef struct ch_coord_ops {
	void *ud;
	/* A response for a request token (see above). */
	void (*respond)(void *ud, void *token, const void *resp);
	/* Append records durably to __consumer_offsets partition `partition`;
	 * the shell calls ch_coord_append_done(coord, id, error) once they are
	 * on disk (error = a Kafka error code, 0 on success). The records are
	 * valid only during the call. */
	void (*append)(void *ud, int32_t partition, const ch_coord_record *recs, size_t n,
		       uint64_t id);
	/* Kafka error code for committing to topic/partition: 0 if it exists,
	 * UNKNOWN_TOPIC_OR_PARTITION otherwise. NULL: every partition exists. */
	int16_t (*check_partition)(void *ud, ch_str topic, int32_t partition);
	/* 16 random bytes for a member id (required: the core has no source
	 * of randomness; the simulator's are deterministic). */
	void (*random_uuid)(void *ud, ch_uuid *out);
	/* One log line of the core at `level` (no newline; the shell adds the
	 * time and writes it). NULL: the core logs nothing. */
	void (*log)(void *ud, ch_log_level level, const char *line);
	/* Whether a line at `level` would be written, so the core can skip
	 * formatting it. NULL: every line goes to log. */
	bool (*log_enabled)(void *ud, ch_log_level level);
} ch_coord_ops;

ch_coord *ch_coord_new(const ch_coord_config *cfg, const ch_coord_ops *ops, int64_t now);
void ch_coord_free(ch_coord *c);

/* ---- requests ----------------------------------------------------------- */

/* A decoded request for the core. */
typedef struct ch_coord_req {
	int64_t now; /* wall-clock ms */
	void *token; /* answered once through ops->respond */
	int16_t version;
	const void *body; /* the codec's request struct of the API (ch_JoinGroupRequest...) */
	ch_str client_id; /* JoinGroup: for member ids and DescribeGroups (copied) */
	const char *client_host; /* JoinGroup: for DescribeGroups (copied) */
} ch_coord_req;

/* One function per API, all of this shape (body: the API's request). */
typedef void ch_coord_request_fn(ch_coord *c, const ch_coord_req *req);
ch_coord_request_fn ch_coord_join;          /* JoinGroup */
ch_coord_request_fn ch_coord_sync;          /* SyncGroup */
ch_coord_request_fn ch_coord_heartbeat;     /* Heartbeat */
ch_coord_request_fn ch_coord_leave;         /* LeaveGroup */
ch_coord_request_fn ch_coord_commit;        /* OffsetCommit */
ch_coord_request_fn ch_coord_fetch;         /* OffsetFetch */
ch_coord_request_fn ch_coord_list;          /* ListGroups */
ch_coord_request_fn ch_coord_describe;      /* DescribeGroups */
ch_coord_request_fn ch_coord_delete_groups; /* DeleteGroups */
ch_coord_request_fn ch_coord_offset_delete; /* OffsetDelete */

/* ---- time, durability, recovery ----------------------------------------- */

/* When the shell must next call ch_coord_tick; INT64_MAX if never. */
int64_t ch_coord_next_deadline(const ch_coord *c);
/* Fire every timer due at `now`. */
void ch_coord_tick(ch_coord *c, int64_t now);
/* An append issued through ops->append is durable (error 0) or failed. */
void ch_coord_append_done(ch_coord *c, int64_t now, uint64_t id, int16_t error);

/* The coordinator is going away (shutdown): every parked JoinGroup and
 * SyncGroup is answered with NOT_COORDINATOR, as Kafka does when it
 * unloads a group, so no request is left without an answer. Appends in
 * flight are still completed through ch_coord_append_done. */
void ch_coord_shutdown(ch_coord *c);

/*
 * Loading, per __consumer_offsets partition (Kafka's CoordinatorRuntime
 * states). A new coordinator has every partition UNLOADED; a partition
 * serves its groups only once LOADED. Until then every request for one of
 * its groups is refused with the error Kafka's GroupCoordinatorService
 * gives: COORDINATOR_LOAD_IN_PROGRESS while LOADING, NOT_COORDINATOR when
 * UNLOADED or LOAD_FAILED, mapped per API:
 *
 *   API             LOADING                          UNLOADED / LOAD_FAILED
 *   JoinGroup       COORDINATOR_LOAD_IN_PROGRESS     NOT_COORDINATOR
 *   SyncGroup       REBALANCE_IN_PROGRESS (old clients do not know LOAD_IN_PROGRESS)
 *                                                    NOT_COORDINATOR
 *   Heartbeat       NONE (answered blindly)          NOT_COORDINATOR
 *   LeaveGroup, OffsetDelete    top-level error, as the columns say
 *   OffsetCommit    the error on every partition
 *   OffsetFetch     v8+: the group's error; v2-v7: top-level; v0-v1: on
 *                   every requested partition (offset -1); no offsets
 *   DescribeGroups, DeleteGroups    per group
 *   ListGroups      any partition LOADING: COORDINATOR_LOAD_IN_PROGRESS and
 *                   no groups; unloaded partitions have no groups to list
 *
 * FindCoordinator (api/) answers COORDINATOR_NOT_AVAILABLE for a group on
 * an UNLOADED or LOAD_FAILED partition (Kafka: the partition has no
 * leader) and this broker while it is LOADING (Kafka: the leader, whose
 * group APIs then say LOAD_IN_PROGRESS).
 */
typedef enum ch_coord_load_state {
	CH_COORD_UNLOADED = 0,
	CH_COORD_LOADING,
	CH_COORD_LOADED,
	CH_COORD_LOAD_FAILED,
} ch_coord_load_state;

const char *ch_coord_load_state_name(ch_coord_load_state s);
/* State of one partition; UNLOADED for an index out of range. */
ch_coord_load_state ch_coord_partition_state(const ch_coord *c, int32_t partition);
/* Count of partitions in state s (for logs and metrics). */
int32_t ch_coord_partition_count(const ch_coord *c, ch_coord_load_state s);

/* A replay of `partition` starts (from UNLOADED or LOAD_FAILED; LOADED is
 * left alone and returns false). */
bool ch_coord_load_begin(ch_coord *c, int32_t partition);
/* Replay one record of __consumer_offsets (val NULL: tombstone), of a
 * partition being loaded. Unknown or malformed records are skipped and
 * counted; returns 0 if the record was understood. */
int ch_coord_load_record(ch_coord *c, const uint8_t *key, size_t klen, const uint8_t *val,
			 size_t vlen, bool tombstone);
/* The replay of `partition` ended. ok: the partition is LOADED; its groups
 * with members become Stable and their members get a fresh session
 * timeout, as Kafka does on coordinator load. !ok: LOAD_FAILED; whatever
 * it had loaded is dropped (nothing is written), as Kafka unloads a
 * coordinator whose load failed. Returns the partition's group count. */
size_t ch_coord_load_end(ch_coord *c, int64_t now, int32_t partition, bool ok);
/* Every partition not LOADED or LOAD_FAILED ends its load successfully
 * (a fresh coordinator with nothing to replay, tests, the simulator). */
void ch_coord_load_done(ch_coord *c, int64_t now);

/* ---- introspection (tests, simulator, metrics) -------------------------- */

typedef enum ch_coord_group_state {
	CH_COORD_GROUP_EMPTY = 0,
	CH_COORD_GROUP_PREPARING_REBALANCE,
	CH_COORD_GROUP_COMPLETING_REBALANCE,
	CH_COORD_GROUP_STABLE,
	CH_COORD_GROUP_DEAD,
} ch_coord_group_state;

const char *ch_coord_group_state_name(ch_coord_group_state s);

/* Why a group changed state: the cause of a rebalance (what the rebalance
 * history and metrics count) or of another transition. */
typedef enum ch_coord_cause {
	CH_COORD_CAUSE_NONE = 0,
	CH_COORD_CAUSE_MEMBER_JOINED,     /* a new member, dynamic or static */
	CH_COORD_CAUSE_METADATA_CHANGED,  /* a member rejoined with other protocols */
	CH_COORD_CAUSE_LEADER_REJOINED,   /* the leader asks for a new assignment */
	CH_COORD_CAUSE_STATIC_REPLACED,   /* a static member came back with a new id */
	CH_COORD_CAUSE_MEMBER_LEFT,       /* LeaveGroup */
	CH_COORD_CAUSE_SESSION_TIMEOUT,   /* a member's session expired */
	CH_COORD_CAUSE_SYNC_TIMEOUT,      /* members sent no SyncGroup in the rebalance timeout */
	CH_COORD_CAUSE_STORE_FAILED,      /* the leader's assignment could not be stored */
	CH_COORD_CAUSE_JOIN_DONE,         /* the join phase ended (PreparingRebalance left) */
	CH_COORD_CAUSE_ASSIGNMENT_STORED, /* the leader's assignment is durable (Stable) */
	CH_COORD_CAUSE_LOADED,            /* replayed (or dropped by a failed load) */
	CH_COORD_CAUSE_JOIN_REFUSED,      /* a refused JoinGroup drops the group it created */
	CH_COORD_CAUSE_DELETED,           /* DeleteGroups, offsets retention */
} ch_coord_cause;

#define CH_COORD_CAUSE_N (CH_COORD_CAUSE_DELETED + 1)

const char *ch_coord_cause_name(ch_coord_cause c);

/* Counters of the coordinator's own doing, for /metrics; they only grow.
 * Replay from __consumer_offsets counts nothing. */
typedef struct ch_coord_stats {
	uint64_t offset_commits;       /* offsets an OffsetCommit made durable, one per partition */
	uint64_t offset_expirations;   /* offsets removed by offsets retention */
	uint64_t offset_deletions;     /* offsets removed by OffsetDelete */
	uint64_t completed_rebalances; /* CompletingRebalance -> Stable */
	uint64_t rebalances[CH_COORD_CAUSE_N]; /* PreparingRebalance entered, by its cause */
	uint64_t groups_deleted;               /* DeleteGroups, offsets retention */
	/* Rebalance durations by the cause that started the rebalance (a
	 * restart keeps it): the join phase (PreparingRebalance left), the sync
	 * phase (CompletingRebalance to Stable) and the whole (to Stable or
	 * Empty); ch_coord_history_phase observes them. */
	ch_hist rebalance_join[CH_COORD_CAUSE_N];
	ch_hist rebalance_sync[CH_COORD_CAUSE_N];
	ch_hist rebalance_whole[CH_COORD_CAUSE_N];
} ch_coord_stats;

const ch_coord_stats *ch_coord_get_stats(const ch_coord *c);

/* One group as /metrics and the admin API see it; valid during the call. */
typedef struct ch_coord_group_view {
	const char *group_id;
	ch_coord_group_state state;
	const char *protocol_type; /* NULL before the first member */
	const char *protocol;      /* the generation's protocol; NULL if none */
	int32_t generation;
	int32_t members;
	int32_t offsets; /* committed partitions */
} ch_coord_group_view;

/* ---- rebalance history (ch_coord_history.c) ------------------------------
 * Per group, the last ch_coord_config.rebalance_history_size rebalances
 * (group.rebalance.history.size), oldest first. Times are the core's wall
 * clock ms; -1 where a step has not happened (yet). */
#define CH_COORD_HISTORY_TRIGGERS 8

typedef struct ch_coord_rebalance_trigger {
	ch_coord_cause cause;
	int64_t at_ms;
	char *detail; /* "member X joined", "session of member X expired ..." */
} ch_coord_rebalance_trigger;

#define CH_COORD_HISTORY_ROUNDS 8

typedef struct ch_coord_rebalance_member {
	char *member_id;
	int64_t join_ms; /* its first JoinGroup of this rebalance; -1: none (a static member kept) */
	int64_t sync_ms;         /* its SyncGroup answered, in the last round it took part in */
	int32_t sync_generation; /* the generation of that SyncGroup; -1: none */
	int32_t partitions_before, partitions_after; /* protocol type consumer; else -1 */
	int32_t partitions_lost; /* taken from it by a round's assignment (consumer); else -1 */
} ch_coord_rebalance_member;

/* One join phase and its assignment: one generation. An eager rebalance
 * has one round unless it restarted; a cooperative one (KIP-429) a second
 * when the first took partitions away (their owners revoke, then rejoin). */
typedef struct ch_coord_rebalance_round {
	int32_t generation;
	int64_t join_end_ms;       /* the join phase ended (JoinGroup responses sent) */
	const char *join_ended_by; /* "all members joined", "rebalance timeout", "initial delay" */
	char *leader;
	int64_t leader_sync_ms;     /* the leader's SyncGroup brought the assignment */
	char *barrier_member;       /* the last JoinGroup of the join phase */
	int64_t first_join_ms;      /* the first JoinGroup of the join phase */
	int64_t barrier_ms;         /* barrier's JoinGroup - first_join_ms */
	int32_t partitions_revoked; /* owned before it, not after by the same member; -1: unknown */
} ch_coord_rebalance_round;

typedef struct ch_coord_rebalance {
	char *protocol_type, *protocol;
	bool cooperative;        /* the protocol is cooperative (KIP-429) */
	bool follow_up_expected; /* closed, but its last round revoked partitions:
				   * the group's next rebalance is folded in */
	int64_t start_ms;        /* PreparingRebalance entered */
	int64_t end_ms;          /* Stable, Empty or deleted */
	const char *outcome;     /* NULL while open, else the state it ended in */
	ch_coord_cause cause;    /* what started it */
	char *cause_detail;
	ch_coord_rebalance_trigger triggers[CH_COORD_HISTORY_TRIGGERS]; /* folded in later */
	int32_t n_triggers, triggers_dropped;
	ch_coord_rebalance_round rounds[CH_COORD_HISTORY_ROUNDS]; /* the newest last */
	int32_t n_rounds, rounds_dropped;
	/* joined during it (the ids are those of `members`' entries); removed
	 * during it */
	char **members_in, **members_out;
	int32_t n_in, n_out;
	ch_coord_rebalance_member *members; /* every member that took part */
	int32_t n_members;
	int32_t partitions_moved; /* to another member (consumer protocol type); else -1 */
} ch_coord_rebalance;

/* r's last round, NULL before its first join phase ended. */
const ch_coord_rebalance_round *ch_coord_rebalance_last_round(const ch_coord_rebalance *r);

/* m's pause in r, -1 while unknown. Eager: its JoinGroup to its SyncGroup
 * answer. Cooperative: 0 when no round took a partition from it, else its
 * JoinGroup to its SyncGroup of the round that assigned what was taken (the
 * record's last; unknown while that round is still to come, or when the
 * record ended Empty). */
int64_t ch_coord_rebalance_pause_ms(const ch_coord_rebalance *r,
				    const ch_coord_rebalance_member *m);

/* fn for each of group_id's rebalances, oldest first (none: no such group). */
void ch_coord_foreach_rebalance(const ch_coord *c, const char *group_id,
				void (*fn)(void *ud, const ch_coord_rebalance *r), void *ud);

/* fn for every group, in no particular order; fn must not change c. */
void ch_coord_foreach_group(const ch_coord *c, void (*fn)(void *ud, const ch_coord_group_view *g),
			    void *ud);
/* One member of a group for the admin API's what-if: its ids, every
 * protocol it offered with that protocol's metadata (for "consumer": a
 * ConsumerProtocolSubscription), and the assignment the leader gave it;
 * valid during the call. */
typedef struct ch_coord_member_view {
	const char *member_id;
	const char *instance_id; /* NULL: dynamic */
	const char *client_id, *client_host;
	int32_t n_protocols;
	const char *const *protocol_names; /* the member's order of preference */
	const uint8_t *const *protocol_metadata;
	const int32_t *protocol_metadata_len;
	const uint8_t *assignment; /* NULL: none (a rebalance since, or never) */
	int32_t assignment_len;
} ch_coord_member_view;

/* fn for each member of group_id, first joined first (nothing when there is
 * no such group); O(members + protocols), the walk DescribeGroups makes.
 * fn must not change c. */
void ch_coord_foreach_member(const ch_coord *c, const char *group_id,
			     void (*fn)(void *ud, const ch_coord_member_view *m), void *ud);

/* One committed offset; valid during the call. */
typedef struct ch_coord_offset_view {
	const char *topic; /* tlen bytes, not NUL-terminated */
	size_t tlen;
	int32_t partition;
	int64_t offset;
	int64_t commit_ms;
	int64_t expires_ms; /* offsets retention (KIP-211); INT64_MAX: not while the
			     * group stays as it is (members subscribed to the topic) */
} ch_coord_offset_view;

/* fn for every committed offset of group_id (nothing when there is no such
 * group). fn must not change c. */
void ch_coord_foreach_offset(const ch_coord *c, const char *group_id,
			     void (*fn)(void *ud, const ch_coord_offset_view *o), void *ud);

typedef struct ch_coord_group_info {
	bool exists;
	ch_coord_group_state state;
	int32_t generation;
	int32_t members;
	int32_t pending_members;
	const char *leader;   /* NULL if none */
	const char *protocol; /* NULL if none */
	int32_t offsets;      /* committed partitions */
} ch_coord_group_info;

ch_coord_group_info ch_coord_group_get_info(const ch_coord *c, const char *group_id);

/* ---- KIP-848's online upgrade (the consumer-protocol core takes a group) --- */

typedef struct ch_coord_export_protocol {
	const char *name;
	const uint8_t *metadata;
	int32_t len;
} ch_coord_export_protocol;

typedef struct ch_coord_export_member {
	const char *member_id, *instance_id; /* instance_id NULL: dynamic */
	const char *client_id, *client_host;
	int32_t session_timeout_ms, rebalance_timeout_ms;
	const ch_coord_export_protocol *protocols; /* in the member's order */
	int32_t nprotocols;
	const uint8_t *assignment; /* its last SyncGroup assignment; NULL: none yet */
	int32_t assignment_len;
} ch_coord_export_member;

typedef struct ch_coord_export_group {
	ch_coord_group_state state;
	int32_t generation;
	const char *protocol_type, *protocol_name; /* NULL: none */
	const ch_coord_export_member *members;     /* in join order */
	int32_t nmembers;
	/* ch_coord_group_import: start a rebalance (a member left); false: the
	 * group stays Stable (a static member replaced the last
	 * consumer-protocol one and takes over its assignment). */
	bool rebalance;
} ch_coord_export_group;

/* fn sees group_id as it is now (valid during the call); false (fn not
 * called) if there is no such group with members. */
bool ch_coord_group_export(const ch_coord *c, const char *group_id,
			   void (*fn)(void *ud, const ch_coord_export_group *g), void *ud);
/* The group's membership ends here (Kafka's convertToConsumerGroup): parked
 * JoinGroup and SyncGroup requests are answered REBALANCE_IN_PROGRESS, the
 * members and their timers go, the GroupMetadata tombstone is written; its
 * committed offsets stay (a group without members holds them, or none is
 * left if it had none). */
void ch_coord_group_hand_over(ch_coord *c, const char *group_id, int64_t now);
/* KIP-848's online downgrade (Kafka's ClassicGroup.fromConsumerGroup and
 * convertToClassicGroup): group_id becomes a classic group of x's members
 * (each with its protocols, its session and rebalance timeouts and
 * assignment), Stable at x->generation with x->protocol_name selected and
 * the first member leading; its GroupMetadata is written and a rebalance
 * starts at once (the members learn it from their next Heartbeat). A group
 * of that id holding offsets keeps them. */
void ch_coord_group_import(ch_coord *c, const char *group_id, const ch_coord_export_group *x,
			   int64_t now);
size_t ch_coord_group_count(const ch_coord *c);
/* Approximate heap bytes held (for the memory-per-member benchmark). */
size_t ch_coord_memory(const ch_coord *c);
/* Check every internal invariant; returns NULL or a description of the
 * first violation (tests and the simulator call it after every step). */
const char *ch_coord_check(const ch_coord *c);

/* The state table as the code has it, in the comment form of the copy
 * above (the group_coord test compares them); returns its length (written
 * up to cap bytes, NUL-terminated when it fits). */
size_t ch_coord_state_table(char *buf, size_t cap);

/* __consumer_offsets partition of a group (Kafka: Utils.abs(hashCode) % n). */
int32_t ch_coord_partition_for(const ch_coord *c, ch_str group_id);

#endif
