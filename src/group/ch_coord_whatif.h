/*
 * ch_coord_whatif.h: the admin API's what-if for assignors (issue 12): for a
 * live classic group of protocol type "consumer", what each client-side
 * assignor of src/assign would give its members, from their subscriptions
 * and the partitions they own, with members added or removed, without
 * touching the group.
 *
 * Two steps, so that the event loop pays only for a copy:
 *   ch_coord_whatif_snapshot   on the loop: the group's members (ids, each
 *                        protocol's metadata, the assignment the leader gave
 *                        them: copied bytes) and the partition counts of the
 *                        topics they subscribe to (decoding the
 *                        subscriptions: linear in their bytes, the walk a
 *                        DescribeGroups answer makes).
 *   ch_coord_whatif_run        anywhere (the admin API runs it on the HTTP
 *                        thread): the assignor on the copy.
 *
 * The input of the assignor is what the members would send at the next
 * rebalance: each member's subscription from its metadata for that
 * assignor's protocol (else for the group's protocol, else its first); the
 * partitions it owns are the assignment it holds now (cooperative-sticky's
 * owned_partitions, sticky's previous assignment) with the group's
 * generation; a member that holds none brings what its metadata says. Added
 * members ("simulated-member-N") subscribe to every topic the group
 * subscribes to and own nothing; removed ones leave with what they own.
 *
 * Moves: a partition moves when it had an owner and gets another. A
 * cooperative change (cooperative-sticky, KIP-429) is run round by round as
 * the group would: each round's assignment revokes the partitions that
 * change owner, the next round (generation + 1, owning what the last gave)
 * hands them over; rounds counts them (1: nothing had to be revoked). An
 * eager assignor is one round in which every member gives up everything.
 */
#ifndef CH_COORD_WHATIF_H
#define CH_COORD_WHATIF_H

#include <stdbool.h>
#include <stdint.h>

#include "assign/ch_assign.h"
#include "group/ch_coord.h"

#define CH_COORD_WHATIF_MAX_ROUNDS 4 /* a cooperative change needs 2; more is a bug shown as is */

typedef struct ch_coord_whatif_member {
	char *member_id, *instance_id, *client_id; /* instance_id NULL: dynamic */
	int32_t n_protocols;
	char **protocol_names;
	uint8_t **metadata;
	int32_t *metadata_len;
	uint8_t *assignment; /* NULL: none */
	int32_t assignment_len;
} ch_coord_whatif_member;

/* A copy of one group: nothing in it points into the coordinator. */
typedef struct ch_coord_whatif_group {
	char *group_id;
	ch_coord_group_state state;
	char *protocol_type, *protocol; /* NULL: none */
	int32_t generation;
	ch_coord_whatif_member *members;
	int32_t n_members;
	ch_assign_topic *topics; /* subscribed topics that exist (names owned) */
	int32_t n_topics;
} ch_coord_whatif_group;

/* Partition count of a topic (name of len bytes): -1 when there is none. */
typedef int32_t (*ch_coord_whatif_partitions_fn)(void *ud, const char *name, size_t len);

/* Copies group_id of c into *out (false: no such group). */
bool ch_coord_whatif_snapshot(const ch_coord *c, const char *group_id,
			      ch_coord_whatif_partitions_fn parts, void *ud,
			      ch_coord_whatif_group *out);
void ch_coord_whatif_group_free(ch_coord_whatif_group *g);
/* The partitions member i of g holds now (its assignment's partitions of
 * g's topics), sorted, each once; *n their count. Free the array. */
ch_assign_tp *ch_coord_whatif_owned(const ch_coord_whatif_group *g, int32_t i, int32_t *n);

/* The change to simulate. */
typedef struct ch_coord_whatif_change {
	int32_t add_members;       /* new members */
	const char *const *remove; /* member ids (or group.instance.ids) leaving */
	int32_t n_remove;
} ch_coord_whatif_change;

/* One member of the result, in the group's order, added members last. */
typedef struct ch_coord_whatif_owner {
	char *member_id;
	bool simulated;       /* added by the change */
	ch_assign_tp *before; /* what it owns now (topic: index into g->topics) */
	int32_t n_before;
	ch_assign_tp *after; /* what the assignor gives it, after every round */
	int32_t n_after;
} ch_coord_whatif_owner;

typedef struct ch_coord_whatif_result {
	ch_assign_kind kind;
	ch_coord_whatif_owner *owners;
	int32_t n_owners;
	int32_t min_partitions, max_partitions; /* per member after */
	int32_t assigned;                       /* partitions assigned after */
	int32_t moved;                          /* had an owner, get another */
	int32_t newly_assigned;      /* had no owner (a removed member's partitions: moved) */
	int32_t unassigned;          /* subscribed partitions nobody gets */
	int32_t rounds;              /* rebalances to get there */
	int32_t revoked_first_round; /* cooperative: taken away before being given */
	char errstr[160];            /* why ch_coord_whatif_run failed */
} ch_coord_whatif_result;

/* Runs assignor kind (range, roundrobin, sticky or cooperative-sticky) on
 * g with chg applied. CH_OK, or CH_ERR with out->errstr: an unknown member
 * to remove, a group that is not of protocol type consumer, out of memory.
 * Free out with ch_coord_whatif_result_free either way. */
int ch_coord_whatif_run(const ch_coord_whatif_group *g, ch_assign_kind kind,
			const ch_coord_whatif_change *chg, ch_coord_whatif_result *out);
void ch_coord_whatif_result_free(ch_coord_whatif_result *r);

#endif
