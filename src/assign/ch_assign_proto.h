/*
 * ch_assign_proto.h: the consumer embedded protocol (protocol type "consumer")
 * between the classic group protocol's opaque bytes and ch_assign.
 *
 * Wire form (JoinGroup member metadata, SyncGroup assignment): an int16
 * version, then ConsumerProtocolSubscription / ConsumerProtocolAssignment of
 * that version (non-flexible, big-endian). A version above 3 is read as 3 and
 * trailing bytes are ignored, as Kafka's ConsumerProtocol does; a negative one
 * is an error.
 *
 * What real members send (captured from cohortd, tests/golden/embedded/):
 *   librdkafka 2.0   subscription v1: topics, user data (empty bytes for
 *                    range/roundrobin; StickyAssignorUserData v1 with the
 *                    previous assignment and generation for sticky AND
 *                    cooperative-sticky), owned partitions (empty when eager);
 *                    as leader it writes assignments at v0, may repeat a topic
 *                    in two entries, and echoes the member's user data.
 *   kafka-python 2.0 subscription v0, user data empty bytes; assignment v0.
 *   Java 3.x         subscription v3 (generation, rack); assignment v3 with
 *                    null user data (ConsumerCoordinator.onLeaderElected ->
 *                    ConsumerProtocol.serializeAssignment(assignment), always
 *                    HIGHEST_SUPPORTED_VERSION; not the members' minimum).
 * Every assignment version has the same layout and every client above reads
 * any version (Java reads a newer one as its highest; librdkafka and
 * kafka-python do not look at it), so the leader here writes v3 like Java.
 *
 * Leader side:
 *   ch_assign_group g;
 *   ch_assign_group_decode(&g, members, n);        JoinGroup response members
 *   ch_assign_group_topics(&g, &names)             topics to fetch metadata for
 *   ch_assign_group_build(&g, kind, topics, nt);   g.in is the ch_assign input
 *   ch_assign(kind, &g.in, &res);
 *   for each member i: ch_assign_assignment_write(&buf, CH_ASSIGN_PROTO_VERSION,
 *       topics, res.tps + res.off[i], res.off[i+1] - res.off[i], CH_BYTES_NULL);
 *   ch_assign_group_free(&g);
 * How each assignor's owned partitions and generation are taken: ch_assign.h,
 * "Building the input", except that eager sticky takes both from the user
 * data whatever the subscription version (Java's StickyAssignor.memberData
 * does), and for cooperative-sticky members on subscription v0-v1: user data
 * of exactly 4 bytes is Java's generation;
 * longer user data that parses as StickyAssignorUserData v1 is librdkafka's,
 * and its generation is used (Java would read the topic count as the
 * generation there); anything else: Kafka's rule (first int32, or none).
 * A member whose metadata does not parse stays in the group with no topics
 * (g.bad[i] set): it gets an empty assignment, and the others are assigned.
 *
 * Member side (libcohort): ch_assign_member_metadata writes what Java's
 * ConsumerCoordinator.metadata() writes, with the user data of the assignor.
 *
 * Memory: decoders allocate from the caller's arena (slices point into the
 * input bytes, which must outlive the result); ch_assign_group owns an arena.
 */
#ifndef CH_ASSIGN_PROTO_H
#define CH_ASSIGN_PROTO_H

#include <stdbool.h>
#include <stdint.h>

#include "assign/ch_assign.h"
#include "common/ch_arena.h"
#include "common/ch_buf.h"
#include "proto/generated/ch_msgs.h"

#define CH_ASSIGN_PROTO_TYPE "consumer"
#define CH_ASSIGN_PROTO_VERSION 3 /* the version written (Java's HIGHEST_SUPPORTED_VERSION) */

/* ---- the two messages, with their version prefix ---- */

typedef struct ch_assign_subscription {
	int16_t version;                   /* as sent; the body was read as min(version, 3) */
	ch_ConsumerProtocolSubscription m; /* fields newer than that: defaults */
} ch_assign_subscription;

typedef struct ch_assign_assignment {
	int16_t version;
	ch_ConsumerProtocolAssignment m; /* a topic may appear in several entries */
} ch_assign_assignment;

/* CH_OK, or CH_ERR (short, malformed, negative version, arena exhausted). */
int ch_assign_subscription_decode(const uint8_t *p, size_t len, ch_arena *a,
				  ch_assign_subscription *out);
int ch_assign_assignment_decode(const uint8_t *p, size_t len, ch_arena *a,
				ch_assign_assignment *out);
/* Prefix + body at version (0..3; a larger one is written as 3 with its own
 * number in the prefix, as Kafka would read it back). */
void ch_assign_subscription_encode(ch_buf *b, int16_t version,
				   const ch_ConsumerProtocolSubscription *m);
void ch_assign_assignment_encode(ch_buf *b, int16_t version,
				 const ch_ConsumerProtocolAssignment *m);

/* ---- leader side ---- */

typedef struct ch_assign_join_member { /* one JoinGroup response member */
	ch_str member_id;
	ch_str instance_id; /* len < 0: none */
	ch_bytes metadata;  /* the "consumer" protocol metadata */
} ch_assign_join_member;

typedef struct ch_assign_group {
	ch_assign_input in; /* after build: the ch_assign input; in.members[i]
					  is members[i] given to decode */
	int32_t nmembers;
	ch_assign_subscription *subs; /* per member, decoded */
	bool *bad;                    /* per member: metadata did not parse */
	int16_t min_version;          /* lowest subscription version among good members */
	ch_arena arena;
	char errstr[128];
} ch_assign_group;

/* Decode every member's metadata (the bytes must outlive g). CH_ERR only on
 * out of memory; malformed metadata sets bad[i]. */
int ch_assign_group_decode(ch_assign_group *g, const ch_assign_join_member *members, int32_t n);
/* The distinct subscribed topic names, sorted; *out from g's arena. Returns
 * the count, or -1 (out of memory). */
int32_t ch_assign_group_topics(ch_assign_group *g, const ch_str **out);
/* Build g->in for assignor kind over the topic metadata (topics must outlive
 * g->in). Subscribed topics missing from `topics` are skipped, as are owned
 * partitions of unknown topics. CH_OK or CH_ERR (out of memory). */
int ch_assign_group_build(ch_assign_group *g, ch_assign_kind kind, const ch_assign_topic *topics,
			  int32_t ntopics);
void ch_assign_group_free(ch_assign_group *g);

/* One member's ConsumerProtocolAssignment from an assignor's result: tps
 * sorted by topic (ch_assign's result is), one entry per run of a topic. */
void ch_assign_assignment_write(ch_buf *b, int16_t version, const ch_assign_topic *topics,
				const ch_assign_tp *tps, int32_t n, ch_bytes user_data);

/* ---- member side ---- */

typedef struct ch_assign_tplist {
	ch_str topic;
	const int32_t *partitions;
	int32_t n;
} ch_assign_tplist;

/* The JoinGroup metadata of a member using assignor kind, at version (0..3;
 * CH_ASSIGN_PROTO_VERSION normally). `owned` is the member's current (or, for
 * an eager member that revoked before joining, its previous) assignment and
 * `generation` the generation it was received in (NO_GENERATION if none):
 *   cooperative-sticky  owned_partitions = owned; user data = the generation
 *                       (CooperativeStickyAssignor, int32, always present)
 *   sticky              owned_partitions empty (eager); user data =
 *                       StickyAssignorUserData v1 (owned, generation) once the
 *                       member has had an assignment (generation >= 0), else null
 *   range, roundrobin   owned_partitions empty (eager); user data null
 * generation_id (v2+) = generation; rack_id (v3+) = rack (len < 0: null).
 * Topics and owned are written in the order given. */
void ch_assign_member_metadata(ch_buf *b, ch_assign_kind kind, int16_t version,
			       const ch_str *topics, int32_t ntopics, const ch_assign_tplist *owned,
			       int32_t nowned, int32_t generation, ch_str rack);

#endif
