/*
 * ch_assign.h: partition assignors, as pure functions.
 *
 * One input shape serves every assignor: the topic metadata (name, partition
 * count, optionally the racks of each partition's replicas) and the members
 * (member id, group.instance.id, rack, subscribed topics, owned partitions and
 * the generation they were owned in). Topics are referred to by their index
 * in the caller's topic array, so the leader interns names once
 * (ch_assign_topic_index) and the coordinator passes indices it already has.
 * The output is one partition list per member, in the caller's member order,
 * each sorted by (topic name, partition).
 *
 * Deterministic: the result depends on the set of members and topics, never on
 * the order they are given in (members and topics are sorted internally:
 * members in Kafka's MemberInfo order, static members by group.instance.id
 * first, then by member id; topics by name, as Java's String.compareTo does
 * for ASCII names).
 *
 * Client-side (classic protocol, the group leader runs them):
 *   range              per topic, contiguous ranges in member order, the first
 *                      n % m members one more (RangeAssignor); rack-aware as
 *                      in KIP-881 when member racks and replica racks match.
 *   roundrobin         every subscribed partition, sorted, dealt in turn to the
 *                      next member subscribed to its topic (RoundRobinAssignor).
 *   sticky             balanced, then moving as few partitions as possible
 *                      (KIP-54, KIP-341; AbstractStickyAssignor): of the
 *                      members claiming a partition the one with the highest
 *                      generation owns it; a tie there means nobody does.
 *   cooperative-sticky the sticky result, minus every partition that moves
 *                      to a new owner while another member still claims it
 *                      (KIP-429): it is only revoked now and assigned in the
 *                      follow-up rebalance.
 * Server-side (KIP-848; the coordinator runs them, the owned partitions being
 * the current target assignment and the result the next one):
 *   uniform            sticky and balanced (UniformAssignor).
 *   range              per-topic quotas as the group coordinator's
 *                      RangeAssignor, but sticky where Kafka's re-deals
 *                      contiguous ranges (on purpose, README): members keep
 *                      what they have; co-partitioned as Kafka promises
 *                      (equal subscriptions, one partition count: partition
 *                      p of every topic has one owner).
 *
 * Balance: with equal subscriptions every member gets floor(P/N) or ceil(P/N).
 * With unequal ones the result has no cost-reducing path: no chain of moves
 * (each to a member subscribed to the moved partition's topic) can lower a
 * member's count while raising a member that has two fewer, which is the
 * optimality condition for semi-matchings (Harvey et al., 2003): the maximum
 * and every L_p norm of the counts are minimal.
 *
 * Cost: O(P + N log N + S) time and memory for P partitions, N members and S
 * (member, topic) subscriptions; memory stays linear in P + N + S. The
 * unequal-subscription sticky case adds balancing passes, O(P + S) each,
 * and one O(N + S) search per partition moved along a chain (rare: the
 * per-topic passes do nearly all of the balancing). Measured figures:
 * bench/assign/README.md.
 *
 * Building the input (the group leader, classic protocol):
 *   topics      the metadata of every subscribed topic; racks from the
 *               replicas' brokers when known (KIP-881).
 *   topics[]    ConsumerProtocolSubscription.topics mapped with
 *               ch_assign_topic_index_get (skip unknown topics).
 *   rack        ConsumerProtocolSubscription.rack_id (v3+).
 *   owned       sticky (eager): previous_assignment of the user data
 *               (ch_assign_sticky_data_decode), as Kafka's StickyAssignor
 *               reads it there; everything else: owned_partitions (v1+).
 *   generation  generation_id when the subscription is v2+; else
 *               cooperative-sticky: ch_assign_coop_data_decode(user_data),
 *               sticky: the user data's generation; else NO_GENERATION.
 * The server side passes the current target assignment as `owned` and no
 * generation.
 *
 * Ownership: the input is only read. The result is owned by the caller and
 * freed with ch_assign_result_free. Allocation failure returns CH_ERR.
 */
#ifndef CH_ASSIGN_H
#define CH_ASSIGN_H

#include <stdint.h>

#include "common/ch_buf.h"
#include "common/ch_common.h"
#include "proto/ch_rd.h"

#define CH_ASSIGN_NO_GENERATION (-1) /* Kafka's DEFAULT_GENERATION */

typedef enum ch_assign_kind {
	CH_ASSIGN_RANGE = 0,
	CH_ASSIGN_ROUNDROBIN,
	CH_ASSIGN_STICKY,
	CH_ASSIGN_COOPERATIVE_STICKY,
	CH_ASSIGN_SERVER_UNIFORM, /* KIP-848 "uniform" */
	CH_ASSIGN_SERVER_RANGE,   /* KIP-848 "range" */
	CH_ASSIGN_KIND_COUNT
} ch_assign_kind;

/* The replica racks of one partition (KIP-881). */
typedef struct ch_assign_racks {
	const ch_str *rack;
	int32_t n;
} ch_assign_racks;

typedef struct ch_assign_topic {
	ch_str name;
	int32_t partitions;           /* partition count; <= 0: none */
	const ch_assign_racks *racks; /* NULL, or one entry per partition */
} ch_assign_topic;

/* Owned partitions of one topic, as the subscription carries them. */
typedef struct ch_assign_owned {
	int32_t topic; /* index into the topic array; < 0: unknown, ignored */
	const int32_t *partitions;
	int32_t n;
} ch_assign_owned;

typedef struct ch_assign_member {
	ch_str member_id;
	ch_str instance_id;    /* group.instance.id; len < 0: none */
	ch_str rack;           /* client.rack; len < 0: none */
	const int32_t *topics; /* subscribed topics, indices into the topic array;
	                                  members with equal subscriptions may share one
	                                  array, which makes them cheaper to compare */
	int32_t ntopics;
	const ch_assign_owned *owned; /* owned partitions (subscription v1+) or current target */
	int32_t nowned;
	int32_t generation; /* of owned (subscription v2+ or user data); or NO_GENERATION */
} ch_assign_member;

typedef struct ch_assign_input {
	const ch_assign_topic *topics;
	int32_t ntopics;
	const ch_assign_member *members;
	int32_t nmembers;
} ch_assign_input;

typedef struct ch_assign_tp {
	int32_t topic; /* index into the caller's topic array */
	int32_t partition;
} ch_assign_tp;

typedef struct ch_assign_result {
	ch_assign_tp *tps; /* every assigned partition, member after member */
	int32_t *off;      /* nmembers + 1: member i has tps[off[i] .. off[i+1]) */
	int32_t nmembers;
	char errstr[128]; /* why CH_ERR was returned */
} ch_assign_result;

/* Run one assignor. Returns CH_OK, or CH_ERR (invalid input: duplicate member
 * ids or topic names, more than INT32_MAX partitions; or out of memory) with
 * out->errstr set and nothing to free. */
int ch_assign(ch_assign_kind kind, const ch_assign_input *in, ch_assign_result *out);
void ch_assign_result_free(ch_assign_result *out);

/* Kafka's protocol names: "range", "roundrobin", "sticky",
 * "cooperative-sticky" (client side); "uniform", "range" (server side). */
const char *ch_assign_name(ch_assign_kind kind);
/* Client-side assignor for a protocol name, or -1. */
int ch_assign_kind_by_name(ch_str name);
/* Whether the assignor supports the cooperative protocol (KIP-429). */
bool ch_assign_is_cooperative(ch_assign_kind kind);

/* Name -> index lookup over a topic array, for building inputs from decoded
 * subscriptions (names) in O(1) each. */
typedef struct ch_assign_topic_index ch_assign_topic_index;
ch_assign_topic_index *ch_assign_topic_index_new(const ch_assign_topic *topics, int32_t ntopics);
int32_t ch_assign_topic_index_get(const ch_assign_topic_index *ix, ch_str name); /* -1: none */
void ch_assign_topic_index_free(ch_assign_topic_index *ix);

/*
 * User data of the client-side sticky assignors (in the subscription's
 * user_data bytes).
 *
 * StickyAssignorUserData (eager "sticky", KIP-54 / KIP-341):
 *   v0: previous_assignment: [topic: string, partitions: [int32]]
 *   v1: v0 + generation: int32
 * CooperativeStickyAssignor: generation: int32 (only for subscription v0-v1;
 * v2+ carries generation_id in the subscription itself).
 *
 * The decoder points into the bytes (topic names are slices) and allocates
 * the topic array and partition arrays with malloc; free with
 * ch_assign_sticky_data_free. Partitions of the whole previous assignment.
 */
typedef struct ch_assign_sticky_topic {
	ch_str topic;
	int32_t *partitions;
	int32_t n;
} ch_assign_sticky_topic;

typedef struct ch_assign_sticky_data {
	ch_assign_sticky_topic *topics;
	int32_t ntopics;
	int32_t generation; /* NO_GENERATION for v0 */
} ch_assign_sticky_data;

/* Decodes v1, falling back to v0 as Kafka does. CH_OK or CH_ERR (malformed). */
int ch_assign_sticky_data_decode(const uint8_t *p, size_t len, ch_assign_sticky_data *out);
void ch_assign_sticky_data_free(ch_assign_sticky_data *d);
/* Encodes v1 (generation >= 0) or v0 (NO_GENERATION). */
void ch_assign_sticky_data_encode(ch_buf *b, const ch_assign_sticky_data *d);

/* Cooperative-sticky user data: the generation, NO_GENERATION if absent,
 * DEFAULT on malformed bytes as Kafka does. */
int32_t ch_assign_coop_data_decode(const uint8_t *p, size_t len);
void ch_assign_coop_data_encode(ch_buf *b, int32_t generation);

#endif
