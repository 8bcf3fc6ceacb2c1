/*
 * harness: a fake shell around the coordinator core for tests and the
 * simulator. Virtual time; requests built from plain C arguments; every
 * response copied (per token) while the callback runs; durable appends
 * queued and completed at once, after a virtual delay, or failed on demand;
 * ch_coord_check() after every step (violations are counted and printed).
 */
#ifndef GROUP_TESTS_HARNESS_H
#define GROUP_TESTS_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "group/ch_coord.h"
#include "proto/generated/ch_errors.h"
#include "proto/generated/ch_msgs.h"

#define H_STR 192

/* API of a request (the Kafka api key). */
enum {
	H_OFFSET_COMMIT = 8,
	H_OFFSET_FETCH = 9,
	H_JOIN = 11,
	H_HEARTBEAT = 12,
	H_LEAVE = 13,
	H_SYNC = 14,
	H_DESCRIBE = 15,
	H_LIST = 16,
	H_DELETE_GROUPS = 42,
	H_OFFSET_DELETE = 47,
};

/* Bytes or string copied out of a response; len -1 = null. */
typedef struct h_blob {
	uint8_t *p; /* NUL-terminated copy (so strings can be compared) */
	int32_t len;
} h_blob;

/* One flattened entry of a multi-entry response: a JoinGroup member, a
 * LeaveGroup member, an OffsetCommit/OffsetFetch/OffsetDelete partition, a
 * ListGroups/DescribeGroups/DeleteGroups group or a DescribeGroups member. */
typedef struct h_row {
	char group[H_STR];
	char topic[H_STR];
	int32_t partition;
	int64_t offset;
	int32_t leader_epoch;
	h_blob metadata; /* offset metadata, or member metadata */
	h_blob assignment;
	int16_t error;
	char member_id[H_STR];
	h_blob instance_id;
	char client_id[H_STR];
	char client_host[H_STR];
	char state[64];
	char protocol_type[H_STR];
	char protocol[H_STR];
	char group_type[64];
	bool is_member; /* DescribeGroups: a member row (else a group row) */
} h_row;

typedef struct h_req {
	int api;
	int16_t version;
	int nresp;       /* responses received (must end at exactly 1) */
	int64_t sent_at; /* virtual time of the request */
	int64_t resp_at; /* virtual time of the (first) response */
	int16_t error;   /* top-level error (JoinGroup, SyncGroup, Heartbeat,
			    LeaveGroup, ListGroups, OffsetFetch v2-7, OffsetDelete) */
	/* JoinGroup */
	int32_t generation;
	h_blob protocol_type;
	h_blob protocol_name;
	char leader[H_STR];
	bool skip_assignment;
	char member_id[H_STR];
	/* SyncGroup */
	h_blob assignment;
	/* rows (see h_row) */
	int nrows;
	h_row *rows;
	/* what was asked (for the simulator) */
	char req_group[H_STR];
	char req_member[H_STR];
	int32_t req_generation;
	void *user;
	int tag; /* the test's own use (the simulator: consumer index + 1) */
	/* the coordinator crashed (h_restart) before answering: no response
	 * will ever come; the client sees a broken connection at lost_at */
	bool lost;
	int64_t lost_at;
	uint64_t resp_seq; /* order of the (first) response, env-wide */
	struct h_req *next_alloc;
} h_req;

/* A record appended through ops->append. */
typedef struct h_record {
	int32_t partition;
	uint8_t *key;
	size_t klen;
	uint8_t *val;
	size_t vlen;
	bool tombstone;
	uint64_t append_id;
	size_t append_idx; /* in h_env.appends (ids repeat across restarts) */
} h_record;

typedef struct h_append {
	uint64_t id;
	int32_t partition;
	size_t first_rec, nrec; /* in h_env.recs */
	int64_t complete_at;
	int16_t error; /* to complete with */
	bool done;
	bool lost; /* the coordinator crashed before it completed: not durable */
} h_append;

typedef struct h_env {
	ch_coord *c;
	ch_coord_config cfg;
	int64_t now;
	/* appends */
	int64_t append_delay; /* virtual ms before completion (0: right after the call) */
	int16_t fail_next;    /* error for the next append(s) */
	int fail_count;       /* how many appends get fail_next */
	bool hold_appends;    /* don't complete until h_release_appends */
	h_append *appends;
	size_t nappends, cap_appends;
	h_record *recs; /* every record ever appended, in order */
	size_t nrecs, cap_recs;
	/* partitions that do not exist (check_partition) */
	char unknown_topic[H_STR];
	/* deterministic uuids */
	uint64_t uuid_seq;
	/* invariant violations seen by ch_coord_check */
	int violations;
	const char *last_violation;
	/* all requests, freed with the env */
	h_req *reqs;
	int responses; /* total responses */
	bool in_call;  /* inside a coordinator call (reentrancy check) */
	int reentrant; /* ops called back into the coordinator (bug) */
	bool quiet;
	/* appends complete in the order issued (as a log's appends do) */
	bool fifo_appends;
	int64_t fifo_tail;
	size_t open_from; /* appends before this index are all done */
	/* called after every response is copied (inside the coordinator's
	 * callback: only read the coordinator through const introspection) */
	void (*on_respond)(struct h_env *h, h_req *r);
	uint64_t resp_seq;
	int restarts;
	/* run ch_coord_check on every check_stride-th step only (0/1: every
	 * step; the simulator's large groups, where it is O(members)) */
	int check_stride;
	unsigned check_n;
	bool crashing; /* inside ch_coord_free of a crashed coordinator */
	/* capture_log: every core log line (any level) is kept in last_log,
	 * the latest one, besides going to stderr above the threshold */
	bool capture_log;
	char last_log[1024];
} h_env;

/* A fresh coordinator at virtual time `start` (ms); cfg NULL: defaults.
 * Every __consumer_offsets partition is loaded (nothing to replay). */
h_env *h_new(const ch_coord_config *cfg, int64_t start);
/* The same with every partition still UNLOADED (see h_load_partition). */
h_env *h_new_unloaded(const ch_coord_config *cfg, int64_t start);
/* Frees everything; returns the number of invariant violations seen. */
int h_free(h_env *h);

/* Run ch_coord_check (done after every step anyway). */
void h_check(h_env *h, const char *where);
/* Complete due appends, fire due timers, up to now + ms (in order). */
void h_advance(h_env *h, int64_t ms);
void h_advance_to(h_env *h, int64_t t);
/* The earliest pending internal event (timer or append completion). */
int64_t h_next_event(const h_env *h);
/* Complete every held/delayed append now (in order). */
void h_release_appends(h_env *h);
size_t h_pending_appends(const h_env *h);

/* ---- request builders ---------------------------------------------------- */

/* Version: H_V(n) selects version n; 0 means the latest. */
#define H_V(n) (0x100 | (n))

typedef struct h_proto {
	const char *name;
	const uint8_t *meta;
	int32_t len;
} h_proto;

typedef struct h_join_args {
	int v;
	const char *group;
	const char *member;   /* NULL: "" */
	const char *instance; /* NULL: null */
	int32_t session_ms;   /* 0: 10000 */
	int32_t rebalance_ms; /* 0: 30000 */
	const char *ptype;    /* NULL: "consumer" */
	h_proto protos[4];    /* none: {"range", <subscription to "t">} */
	int nprotos;
	const char *client_id; /* NULL: "client" */
	const char *reason;
} h_join_args;
h_req *h_join(h_env *h, const h_join_args *a);
#define H_JOIN(h, ...) h_join((h), &(h_join_args){__VA_ARGS__})

typedef struct h_assign {
	const char *member;
	const uint8_t *data;
	int32_t len;
} h_assign;

typedef struct h_sync_args {
	int v;
	const char *group;
	const char *member;
	int32_t gen;
	const char *instance;
	const char *ptype; /* v5: NULL = null */
	const char *pname; /* v5: NULL = null */
	h_assign assign[128];
	int nassign;
	const h_assign *assign_ext; /* if set: nassign entries from here */
} h_sync_args;
h_req *h_sync(h_env *h, const h_sync_args *a);
#define H_SYNC(h, ...) h_sync((h), &(h_sync_args){__VA_ARGS__})

typedef struct h_hb_args {
	int v;
	const char *group;
	const char *member;
	int32_t gen;
	const char *instance;
} h_hb_args;
h_req *h_heartbeat(h_env *h, const h_hb_args *a);
#define H_HB(h, ...) h_heartbeat((h), &(h_hb_args){__VA_ARGS__})

typedef struct h_leave_member {
	const char *member;   /* NULL: "" */
	const char *instance; /* NULL: null */
	const char *reason;
} h_leave_member;
typedef struct h_leave_args {
	int v;
	const char *group;
	const char *member; /* v0-2 */
	h_leave_member members[8];
	int nmembers;
} h_leave_args;
h_req *h_leave(h_env *h, const h_leave_args *a);
#define H_LEAVE(h, ...) h_leave((h), &(h_leave_args){__VA_ARGS__})

typedef struct h_offset {
	const char *topic;
	int32_t partition;
	int64_t offset;
	int32_t leader_epoch; /* 0 means -1 unless set_epoch */
	const char *metadata; /* NULL: "" */
	bool null_metadata;
	bool set_epoch;
	int32_t metadata_len; /* 0: strlen(metadata); else bytes (NULs allowed) */
} h_offset;
typedef struct h_commit_args {
	int v;
	const char *group;
	const char *member; /* NULL: "" */
	int32_t gen;        /* as given (use -1 for standalone) */
	const char *instance;
	h_offset offsets[16];
	int noffsets;
} h_commit_args;
h_req *h_commit(h_env *h, const h_commit_args *a);
#define H_COMMIT(h, ...) h_commit((h), &(h_commit_args){__VA_ARGS__})

typedef struct h_tp {
	const char *topic;
	int32_t partitions[8];
	int npartitions;
} h_tp;
typedef struct h_fetch_group {
	const char *group;
	h_tp topics[8];
	int ntopics; /* -1: all (null topics) */
} h_fetch_group;
typedef struct h_fetch_args {
	int v;
	h_fetch_group groups[4]; /* v0-7: groups[0] only */
	int ngroups;
	bool require_stable;
} h_fetch_args;
h_req *h_fetch(h_env *h, const h_fetch_args *a);
#define H_FETCH(h, ...) h_fetch((h), &(h_fetch_args){__VA_ARGS__})

typedef struct h_list_args {
	int v;
	const char *states[5];
	int nstates;
	const char *types[3];
	int ntypes;
} h_list_args;
h_req *h_list(h_env *h, const h_list_args *a);
#define H_LIST(h, ...) h_list((h), &(h_list_args){__VA_ARGS__})

h_req *h_describe(h_env *h, int v, const char *const *groups, int n);
h_req *h_delete_groups(h_env *h, int v, const char *const *groups, int n);
h_req *h_offset_delete(h_env *h, const char *group, const h_tp *topics, int ntopics);

/* ---- response helpers ---------------------------------------------------- */

/* True if the request has exactly one response. */
bool h_done(const h_req *r);
/* Row lookup: by group/topic/partition (NULL/-1 = any), by member id. */
const h_row *h_row_tp(const h_req *r, const char *group, const char *topic, int32_t partition);
const h_row *h_row_member(const h_req *r, const char *member_id);
const h_row *h_row_group(const h_req *r, const char *group);
bool h_blob_eq(h_blob b, const void *p, int32_t len);
bool h_blob_str(h_blob b, const char *s); /* NULL s: null */

/* ---- consumer protocol ------------------------------------------------- */

/* Encoded ConsumerProtocolSubscription (version v) to the given topics,
 * NULL-terminated; returns a static-lifetime buffer owned by the env. */
h_blob h_subscription(h_env *h, int16_t v, const char *const *topics);
/* A ConsumerProtocolAssignment of one topic and partitions. */
h_blob h_assignment(h_env *h, const char *topic, const int32_t *parts, int n);
/* Decode a ConsumerProtocolAssignment: fills topic/partitions (first topic);
 * returns the number of partitions (<= max) or -1 if malformed. Handles
 * zero-length (empty) assignments (returns 0). */
int h_decode_assignment(const uint8_t *p, int32_t len, char *topic, size_t tcap, int32_t *parts,
			int max);

/* ---- durable log --------------------------------------------------------- */

/* Record kinds by key version: 0/1 offset commit, 2 group metadata. */
int h_record_key_version(const h_record *r);
/* Count records for a group (optionally only tombstones / only key kind). */
size_t h_count_records(const h_env *h, const char *group, int key_kind, bool tombstones_only);
/* Load one partition into h's coordinator: load_begin, every durable
 * record `from` appended to that partition (from may be h), load_end(ok).
 * Returns load_end's group count. */
size_t h_load_partition(h_env *h, const h_env *from, int32_t partition, bool ok);
/* A new env whose coordinator was rebuilt from this env's durable records
 * (those whose append succeeded), at the same virtual time. */
h_env *h_replay(h_env *h);
/* The coordinator crashes and a fresh one is rebuilt in the same env from
 * the durable records (every append that completed successfully, in log
 * order; then ch_coord_load_done). Appends not completed are lost; requests
 * not yet answered are marked lost (they never get a response). */
void h_restart(h_env *h);

/* ---- convenience flows --------------------------------------------------- */

/* Advance in small steps until every request has its response (or `cap` ms
 * passed); returns true if all are answered. */
bool h_wait(h_env *h, h_req *const *rs, int n, int64_t cap);

/* Join (v-given, handling MEMBER_ID_REQUIRED for v4+) and wait: returns the
 * final JoinGroup request (which may still be pending). */
h_req *h_join_full(h_env *h, const h_join_args *a);

/* Form a Stable group of n dynamic members (JoinGroup v5 flow, initial delay
 * waited out), the leader assigning `assign_len` bytes "A<i>" to member i.
 * ids[i] receives the member ids (first = leader). Returns the generation or
 * -1 on failure. */
int32_t h_form_group(h_env *h, const char *group, int n, char ids[][H_STR]);

#endif
