/*
 * ch_coord_cg.h: consumer groups of the consumer rebalance protocol
 * (KIP-848, ConsumerGroupHeartbeat), as a pure state machine beside the
 * classic coordinator of ch_coord.h. Same rules as there: no socket, file,
 * clock or randomness; time comes in as `now`, member ids from
 * ops->random_uuid, topics from ops->topic, answers go out through
 * ops->respond.
 *
 * The model is Kafka's GroupMetadataManager.consumerGroupHeartbeat:
 *
 *   group epoch          bumped when a member joins with a subscription,
 *                        changes it, leaves or is fenced, or when the
 *                        subscribed topics' partitions change.
 *   target assignment    computed by the server-side assignor (uniform or
 *                        range of src/assign) when the group epoch is ahead
 *                        of the assignment epoch; stamped with it.
 *   member epoch         a member reaches the assignment epoch by
 *                        reconciling (Kafka's CurrentAssignmentBuilder):
 *
 *       STABLE --new target epoch--> UNREVOKED_PARTITIONS (must give up
 *         ^   \                        partitions; keeps its epoch until a
 *         |    \                       heartbeat no longer lists them)
 *         |     +--> UNRELEASED_PARTITIONS (at the target epoch, waiting for
 *         |           partitions another member still holds)
 *         +-------- every target partition held, none to give up
 *
 * A partition goes to its new owner only once no other member holds it
 * (assigned or pending revocation): the previous owner acknowledged the
 * revocation in a heartbeat, left, or was fenced (session timeout, or the
 * rebalance timeout while in UNREVOKED_PARTITIONS).
 *
 * Group state (ConsumerGroup.ConsumerGroupState, Kafka's names): Empty (no
 * members), Assigning (group epoch > assignment epoch), Reconciling (a
 * member not yet STABLE at the assignment epoch), Stable.
 *
 * Timers (one heap): member session (group.consumer.session.timeout.ms
 * since its last heartbeat), member rebalance timeout (armed while the
 * member has partitions to revoke, for that member epoch).
 *
 * Durable (ch_coord_cg_store.c, records of ch_coord_cg_records.h): after
 * each change the group's records that differ from what was last written go
 * out through ops->append in one batch, and the heartbeat that caused them
 * is answered once ch_coord_cg_append_done reports them durable (as Kafka
 * answers after its append commits). A restart replays them
 * (ch_coord_cg_load_record, ch_coord_cg_load_end) into the same state;
 * members then have one session timeout to heartbeat again.
 *
 * Classic members inside a consumer group: ch_coord_cg_classic_join and
 * its siblings below.
 *
 * Regular expressions (SubscribedTopicRegex, RE2 syntax, src/regex): each
 * distinct one of a group is resolved once for the group against
 * ops->foreach_topic (ch_coord_cg_regex.c); a member subscribes to its
 * names and what its regex resolved to. Resolved again when Kafka does:
 * a regex not resolved yet, topics created or deleted since
 * (ch_coord_cg_metadata_changed), or regex_refresh_interval_ms passed,
 * but never within regex_min_refresh_ms of the last time. Kafka resolves
 * off its event loop and answers the heartbeat before the result; cohortd
 * resolves within the heartbeat (same rules, the answer already has it).
 *
 * Target assignments of large groups off the caller's thread (issue 13,
 * Kafka's KIP-1263): when ops->assign_offload is set, assignor_offload is on
 * and the group's subscribed topics have at least
 * assignor_offload_min_partitions partitions, the heartbeat that moved the
 * group epoch snapshots the assignor's input into a job and hands it to
 * the shell, which runs ch_coord_cg_assign_job_run on any thread and
 * ch_coord_cg_assign_job_done on this core's thread. Meanwhile the group is
 * Assigning and heartbeats answer with the current target (as Kafka's do
 * while its assignment is pending); the result is applied only if the group
 * is still at the epoch it was computed for (else computed again). The
 * first assignment of a group is always computed at once (its members need
 * a non-zero epoch to reconcile to). Without assign_offload (the simulator,
 * the unit tests) everything runs within the call, deterministically.
 *
 * Batching (group.consumer.assignment.interval.ms): a target is computed at
 * most once per interval; changes within it wait for a timer at the
 * interval's end and get one assignment between them.
 */
#ifndef CH_COORD_CG_H
#define CH_COORD_CG_H

#include "assign/ch_assign.h"
#include "group/ch_coord.h"

typedef struct ch_coord_cg ch_coord_cg;

/* group.consumer.migration.policy */
typedef enum ch_coord_cg_migration {
	CH_COORD_CG_MIGRATION_DISABLED = 0,
	CH_COORD_CG_MIGRATION_DOWNGRADE,
	CH_COORD_CG_MIGRATION_UPGRADE,
	CH_COORD_CG_MIGRATION_BIDIRECTIONAL,
} ch_coord_cg_migration;

#define CH_COORD_CG_MAX_ASSIGNORS 4

typedef struct ch_coord_cg_config {
	int32_t session_timeout_ms;        /* group.consumer.session.timeout.ms (45000) */
	int32_t min_session_timeout_ms;    /* group.consumer.min.session.timeout.ms (45000) */
	int32_t max_session_timeout_ms;    /* group.consumer.max.session.timeout.ms (60000) */
	int32_t heartbeat_interval_ms;     /* group.consumer.heartbeat.interval.ms (5000) */
	int32_t min_heartbeat_interval_ms; /* group.consumer.min.heartbeat.interval.ms (5000) */
	int32_t max_heartbeat_interval_ms; /* group.consumer.max.heartbeat.interval.ms (15000) */
	int32_t max_size;                  /* group.consumer.max.size (INT32_MAX) */
	/* group.consumer.assignors (uniform,range): the first is the default */
	ch_assign_kind assignors[CH_COORD_CG_MAX_ASSIGNORS];
	int32_t nassignors;
	ch_coord_cg_migration
		migration_policy;   /* group.consumer.migration.policy (bidirectional) */
	int32_t offsets_partitions; /* of __consumer_offsets: where a group's records go (50) */
	/* The classic protocol's bounds, for classic members inside a consumer
	 * group: group.min.session.timeout.ms (6000), group.max.session.timeout.ms
	 * (1800000), group.max.size (INT32_MAX). */
	int32_t classic_min_session_timeout_ms;
	int32_t classic_max_session_timeout_ms;
	int32_t classic_max_size;
	/* group.consumer.regex.refresh.interval.ms (600000): regexes resolved
	 * again at least this often (new ACLs) */
	int32_t regex_refresh_interval_ms;
	/* Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS (10000, a constant there,
	 * not a config; cohortd keeps it): never resolved again sooner */
	int32_t regex_min_refresh_ms;
	/* group.consumer.assignment.interval.ms: a group's target is computed
	 * at most once per interval (KIP-1263; Kafka 4.3+ defaults to 1000,
	 * cohortd to 0: at every change, as before; README) */
	int32_t assignment_interval_ms;
	/* group.consumer.assignor.offload.enable (true): large groups' targets
	 * are computed through ops->assign_offload */
	bool assignor_offload;
	/* group.consumer.assignor.offload.min.partitions (cohortd's own,
	 * 10000): "large" is at least this many partitions subscribed (below,
	 * an assignment costs the loop under ~1 ms; docs/NOTES.md) */
	int32_t assignor_offload_min_partitions;
} ch_coord_cg_config;

/* A target assignment computed away from the core's thread (above). */
typedef struct ch_coord_cg_assign_job ch_coord_cg_assign_job;

void ch_coord_cg_config_defaults(ch_coord_cg_config *c);
/* Checks the bounds Kafka's GroupCoordinatorConfig requires (min <= value
 * <= max, heartbeat interval < session timeout, at least one assignor);
 * NULL or why not. */
const char *ch_coord_cg_config_check(const ch_coord_cg_config *c);
/* "uniform" / "range" (also Kafka's class names) -> kind; -1 if unknown. */
int ch_coord_cg_assignor_by_name(ch_str name);
/* Parses group.consumer.migration.policy (case-insensitive); -1 if unknown. */
int ch_coord_cg_migration_by_name(const char *s);
const char *ch_coord_cg_migration_name(ch_coord_cg_migration m);

/* What the core knows of a topic: ops->topic fills it. */
typedef struct ch_coord_cg_topic {
	ch_uuid id;
	int32_t partitions;
} ch_coord_cg_topic;

typedef struct ch_coord_cg_ops {
	void *ud;
	/* The ConsumerGroupHeartbeat response for a request token; `resp` is a
	 * ch_ConsumerGroupHeartbeatResponse valid during the call. */
	void (*respond)(void *ud, void *token, const void *resp);
	/* The topic named `name`: true and *out filled, or false if it does
	 * not exist. */
	bool (*topic)(void *ud, ch_str name, ch_coord_cg_topic *out);
	/* Whether a classic group named `group_id` with members exists
	 * (ch_coord's): a heartbeat other than a join to it is GROUP_ID_NOT_FOUND,
	 * a join upgrades it if it may (below). NULL: no classic groups. */
	bool (*classic_group_exists)(void *ud, ch_str group_id);
	/* Whether any classic group of that id exists, with members or not (an
	 * empty one holds a simple consumer's offsets): only the words of a
	 * refused heartbeat's error follow it. NULL: classic_group_exists. */
	bool (*classic_group_known)(void *ud, ch_str group_id);
	/* KIP-848's online upgrade: fn sees classic group group_id
	 * (ch_coord_group_export; false if it has no members), and once this
	 * core took it over its membership ends there
	 * (ch_coord_group_hand_over). NULL: classic groups are never upgraded. */
	bool (*classic_group_export)(void *ud, ch_str group_id,
				     void (*fn)(void *fnud, const ch_coord_export_group *g),
				     void *fnud);
	void (*classic_group_hand_over)(void *ud, ch_str group_id, int64_t now);
	/* KIP-848's online downgrade: the consumer group's classic members
	 * become classic group group_id (ch_coord_group_import). NULL: no
	 * downgrade. */
	void (*classic_group_import)(void *ud, ch_str group_id, const ch_coord_export_group *g,
				     int64_t now);
	void (*random_uuid)(void *ud, ch_uuid *out); /* v0 member ids */
	/* fn(arg, name, len) for every topic (what regexes are matched
	 * against). NULL: no topics. */
	void (*foreach_topic)(void *ud, void (*fn)(void *arg, const char *name, size_t len),
			      void *arg);
	/* Whether the sender of the request `token` may DESCRIBE topic name:
	 * a regex only resolves to those (Kafka's
	 * filterTopicDescribeAuthorizedTopics). NULL: every topic. */
	bool (*may_describe)(void *ud, void *token, const char *name, size_t len);
	/* Append records durably to __consumer_offsets partition `partition`
	 * (one batch); the shell calls ch_coord_cg_append_done(id) once they
	 * are on disk or failed. The records are valid during the call only.
	 * NULL: nothing is stored and every answer goes out at once. */
	void (*append)(void *ud, int32_t partition, const ch_coord_record *recs, size_t n,
		       uint64_t id);
	void (*log)(void *ud, ch_log_level level, const char *line); /* NULL: silent */
	bool (*log_enabled)(void *ud, ch_log_level level);           /* NULL: all */
	/* Run ch_coord_cg_assign_job_run(job) on any thread, then
	 * ch_coord_cg_assign_job_done(job) on the core's thread (or, shutting
	 * down, ch_coord_cg_assign_job_free). NULL: targets are computed within
	 * the call that needs them. */
	void (*assign_offload)(void *ud, ch_coord_cg_assign_job *job);
} ch_coord_cg_ops;

ch_coord_cg *ch_coord_cg_new(const ch_coord_cg_config *cfg, const ch_coord_cg_ops *ops);
/* Jobs handed to ops->assign_offload are not the core's: the shell
 * delivers or frees them (before or after this). */
void ch_coord_cg_free(ch_coord_cg *cg);

/* The assignor over the job's snapshot: touches nothing but the job, so
 * any thread may run it (once). */
void ch_coord_cg_assign_job_run(ch_coord_cg_assign_job *job);
/* On the core's thread, after _run: the result becomes the group's target
 * if the group is still at the epoch it was taken for (and the job is its
 * latest), else it is dropped and, if the group still needs one, a new
 * target computed; the group's records follow. Frees the job. */
void ch_coord_cg_assign_job_done(ch_coord_cg *cg, int64_t now, ch_coord_cg_assign_job *job);
/* Drops a job without applying it (shutdown). */
void ch_coord_cg_assign_job_free(ch_coord_cg_assign_job *job);

/* ConsumerGroupHeartbeat v0-v1 (req->body: ch_ConsumerGroupHeartbeatRequest),
 * answered through ops->respond before it returns. Errors where Kafka
 * returns them (GroupCoordinatorService and GroupMetadataManager):
 * INVALID_REQUEST (malformed: empty ids, missing join fields, bad epoch),
 * INVALID_REGULAR_EXPRESSION (a regex new to the group that RE2J would
 * refuse), UNSUPPORTED_ASSIGNOR,
 * GROUP_ID_NOT_FOUND (no such group and epoch != 0, or a classic group),
 * GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH,
 * UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID. */
void ch_coord_cg_heartbeat(ch_coord_cg *cg, const ch_coord_req *req);

/* A member of the classic protocol inside a consumer group (Kafka 4.x's
 * classicGroup*ToConsumerGroup, ch_coord_cg_classic.c): the member is a
 * consumer-group member with classic metadata (its JoinGroup protocols and
 * session timeout). Its JoinGroup subscribes and reconciles it as a
 * heartbeat would, with the owned partitions of its subscription as the
 * acknowledgement of revocations; its generation is its member epoch; its
 * SyncGroup answers its current assignment (ConsumerProtocolAssignment at
 * its protocol's version); Heartbeat answers REBALANCE_IN_PROGRESS when it
 * must rejoin (its epoch behind the assignment, partitions to revoke, or
 * partitions that became free). Timers: its own session timeout, a sync
 * timeout after a join and a join timeout once told to rejoin (both its
 * rebalance timeout); no revocation timer. Answers go out through
 * ops->respond as that API's response (ch_JoinGroupResponse...), after the
 * records they depend on are durable.
 *
 * JoinGroup goes here only for a consumer group with members (the caller
 * gives an empty one to the classic core, as Kafka converts it); SyncGroup,
 * Heartbeat and LeaveGroup for any consumer group. Errors as Kafka's:
 * INVALID_GROUP_ID, INVALID_SESSION_TIMEOUT, INCONSISTENT_GROUP_PROTOCOL
 * (protocol type or names not supported by all classic members, migration
 * policy disabled, SyncGroup's protocol differs), GROUP_MAX_SIZE_REACHED,
 * MEMBER_ID_REQUIRED, UNKNOWN_MEMBER_ID (not a member, or not a classic
 * one), FENCED_INSTANCE_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS,
 * UNKNOWN_SERVER_ERROR (subscription metadata that does not parse). */
typedef void ch_coord_cg_request_fn(ch_coord_cg *cg, const ch_coord_req *req);
ch_coord_cg_request_fn ch_coord_cg_classic_join;
ch_coord_cg_request_fn ch_coord_cg_classic_sync;
ch_coord_cg_request_fn ch_coord_cg_classic_heartbeat;
ch_coord_cg_request_fn ch_coord_cg_classic_leave;

/* Online upgrade (Kafka's validateOnlineUpgrade, ConsumerGroup.fromClassicGroup):
 * a ConsumerGroupHeartbeat joining (epoch 0) a classic group with members
 * turns it into a consumer group when group.consumer.migration.policy is
 * upgrade or bidirectional, its protocol type is "consumer" and it has no
 * more members than group.consumer.max.size; else GROUP_ID_NOT_FOUND with
 * Kafka 4.4's reason. Its members become classic members of the consumer
 * group at its generation (group epoch, assignment epoch and member
 * epochs), each with its last assignment as current and target assignment;
 * the joining member then bumps the epoch as any new member does, and the
 * classic members learn of it through Heartbeat's REBALANCE_IN_PROGRESS.
 * The classic group's GroupMetadata tombstone is written before the
 * consumer group's records (two appends to the same partition; Kafka writes
 * one batch); the committed offsets stay. */

/* Online downgrade (Kafka's validateOnlineDowngradeWithFencedMembers,
 * ClassicGroup.fromConsumerGroup): when the last consumer-protocol member
 * leaves or is fenced and every other member is a classic one, the policy
 * is downgrade or bidirectional and they are at most group.max.size, the
 * group becomes a classic group at its group epoch: each member with its
 * protocols and its target assignment (at the selected protocol's version),
 * and a rebalance starts. Also (validateOnlineDowngradeWithReplacedMemberId)
 * when a classic static member's JoinGroup takes the instance id of the
 * last consumer-protocol member: every member, the new one with the old
 * one's assignment, joins a Stable classic group, no rebalance; its
 * JoinGroup answer (its member epoch as the generation) goes out when the
 * conversion is durable and its SyncGroup is the classic core's. The
 * consumer group's tombstones are written before the classic group's
 * record (two appends of one partition; Kafka writes one batch). */

/* Topics were created, deleted or got partitions: every group re-reads its
 * subscribed topics at its next heartbeat (a change bumps its epoch). */
void ch_coord_cg_metadata_changed(ch_coord_cg *cg);

/* The append `id` of ops->append is durable (error 0) or failed (a Kafka
 * error code): the heartbeats waiting on it are answered; a failure is
 * answered as Kafka's handleOperationException maps it (NOT_COORDINATOR,
 * COORDINATOR_NOT_AVAILABLE...) and the group's records are written again
 * at its next change or tick (cohort keeps the state in memory; Kafka
 * reverts it). */
void ch_coord_cg_append_done(ch_coord_cg *cg, int64_t now, uint64_t id, int16_t error);

/* Replay one record of __consumer_offsets (val NULL: tombstone). Returns 0
 * if it is a consumer group's record and parsed, 1 if it is not a
 * consumer group's (the classic core's), -1 if malformed (skipped, counted). */
int ch_coord_cg_load_record(ch_coord_cg *cg, const uint8_t *key, size_t klen, const uint8_t *val,
			    size_t vlen, bool tombstone);
/* The replay of `partition` ended: ok, its groups serve (session timers
 * from now, rebalance timers for members still revoking, as Kafka's
 * onLoaded); !ok, what it had loaded is dropped. */
void ch_coord_cg_load_end(ch_coord_cg *cg, int64_t now, int32_t partition, bool ok);
/* Records skipped as malformed since the start. */
size_t ch_coord_cg_load_skipped(const ch_coord_cg *cg);

int64_t ch_coord_cg_next_deadline(const ch_coord_cg *cg);
void ch_coord_cg_tick(ch_coord_cg *cg, int64_t now);

/* ---- introspection (describe, tests, the simulator) ---------------------- */

typedef enum ch_coord_cg_state {
	CH_COORD_CG_EMPTY = 0,
	CH_COORD_CG_ASSIGNING,
	CH_COORD_CG_RECONCILING,
	CH_COORD_CG_STABLE,
} ch_coord_cg_state;
const char *ch_coord_cg_state_name(ch_coord_cg_state s); /* "Empty", "Assigning"... */

typedef enum ch_coord_cg_member_state {
	CH_COORD_CG_MEMBER_STABLE = 0,
	CH_COORD_CG_MEMBER_UNREVOKED_PARTITIONS,
	CH_COORD_CG_MEMBER_UNRELEASED_PARTITIONS,
} ch_coord_cg_member_state;
const char *ch_coord_cg_member_state_name(ch_coord_cg_member_state s);

/* A partition by topic id. */
typedef struct ch_coord_cg_tp {
	ch_uuid topic;
	int32_t partition;
} ch_coord_cg_tp;
/* The order of partition sets: topic id bytes, then partition. */
int ch_coord_cg_tp_cmp(const ch_coord_cg_tp *a, const ch_coord_cg_tp *b);

typedef struct ch_coord_cg_member_view {
	const char *member_id;
	const char *instance_id; /* NULL: dynamic */
	const char *rack;        /* NULL: none */
	const char *client_id, *client_host;
	bool classic;              /* a member of the classic protocol */
	const char *const *topics; /* subscribed topic names, sorted */
	int32_t ntopics;
	const char *regex; /* SubscribedTopicRegex (NULL: none sent) */
	int32_t epoch, previous_epoch;
	ch_coord_cg_member_state state;
	const ch_coord_cg_tp *assigned; /* sorted by (topic id, partition) */
	const int32_t *assigned_epochs; /* aligned: the epoch each was assigned at (KIP-1251) */
	int32_t nassigned;
	const ch_coord_cg_tp *revoking; /* pending revocation */
	const int32_t *revoking_epochs;
	int32_t nrevoking;
	const ch_coord_cg_tp *target;
	int32_t ntarget;
} ch_coord_cg_member_view;

typedef struct ch_coord_cg_group_view {
	const char *group_id;
	ch_coord_cg_state state;
	int32_t epoch;            /* group epoch */
	int32_t assignment_epoch; /* target assignment epoch */
	int32_t members;
	const char *assignor; /* the one the next assignment would use */
} ch_coord_cg_group_view;

/* false if there is no consumer group of that id. */
bool ch_coord_cg_group_get(const ch_coord_cg *cg, ch_str group_id, ch_coord_cg_group_view *out);
/* fn for each member of the group, in join order; fn must not change cg. */
void ch_coord_cg_foreach_member(const ch_coord_cg *cg, ch_str group_id,
				void (*fn)(void *ud, const ch_coord_cg_member_view *m), void *ud);
/* fn for each consumer group, in creation order. */
void ch_coord_cg_foreach_group(const ch_coord_cg *cg,
			       void (*fn)(void *ud, const ch_coord_cg_group_view *g), void *ud);

/* A partition an OffsetCommit names: topic id (known false: no such
 * topic), name for messages. */
typedef struct ch_coord_cg_commit_tp {
	ch_uuid topic;
	bool known;
	ch_str name;
	int32_t partition;
} ch_coord_cg_commit_tp;

/* OffsetCommit to consumer group group_id (Kafka 4.4's
 * ConsumerGroup.validateOffsetCommit with KIP-1251's relaxed fencing): 0
 * (commit), or UNKNOWN_MEMBER_ID, UNSUPPORTED_VERSION (a consumer-protocol
 * member below OffsetCommit v9), STALE_MEMBER_EPOCH, with msg. An epoch < 0
 * may commit while the group has no members. An epoch above the member's is
 * stale; one below it may commit the partitions (tps) the member holds
 * (assigned or pending revocation) that were assigned to it at that epoch
 * or before: assignment epoch <= epoch <= member epoch. */
int16_t ch_coord_cg_validate_commit(const ch_coord_cg *cg, ch_str group_id, ch_str member_id,
				    int32_t epoch, int16_t version,
				    const ch_coord_cg_commit_tp *tps, int32_t ntps, char *msg,
				    size_t cap);
/* OffsetFetch of consumer group group_id (ConsumerGroup.validateOffsetFetch):
 * a null member id with epoch < 0 always may; else the member must exist
 * (UNKNOWN_MEMBER_ID) at that epoch (STALE_MEMBER_EPOCH). */
int16_t ch_coord_cg_validate_fetch(const ch_coord_cg *cg, ch_str group_id, ch_str member_id,
				   int32_t epoch, char *msg, size_t cap);
/* Removes group_id if it is a consumer group without members (a classic
 * JoinGroup or DeleteGroups takes the id over, as Kafka does); true if it
 * is gone or was never there, false if it has members. */
bool ch_coord_cg_delete_if_empty(ch_coord_cg *cg, ch_str group_id);

/* Every internal invariant (ch_coord_cg_check.c); NULL or the first broken. */
const char *ch_coord_cg_check(const ch_coord_cg *cg);

#endif
