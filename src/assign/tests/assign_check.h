/*
 * assign_check.h: test-side helpers for the assignors: a group model that
 * owns its input arrays (built by hand or at random), and checkers for the
 * properties every assignor promises. Shared by the property test and the
 * benchmark (which reports moved-partition counts with it).
 */
#ifndef ASSIGN_CHECK_H
#define ASSIGN_CHECK_H

#include <stdint.h>

#include "assign/ch_assign.h"

typedef struct ac_member {
	char *id, *instance, *rack; /* instance/rack may be NULL */
	int32_t *topics;
	int32_t ntopics;
	ch_assign_owned *owned; /* each with its own malloc'ed partitions, */
	int32_t *pool;          /* or all pointing into this one block */
	int32_t nowned;
	int32_t generation;
} ac_member;

typedef struct ac_group {
	char **tname;
	int32_t *tparts;
	ch_assign_racks **tracks; /* per topic NULL or per-partition racks */
	int32_t nt;
	ac_member *m;
	int32_t nm;
	/* the ch_assign view, rebuilt by ac_input */
	ch_assign_topic *vt;
	ch_assign_member *vm;
	ch_assign_input in;
	bool share; /* ac_input: equal topic lists share one array */
} ac_group;

void ac_init(ac_group *g);
void ac_free(ac_group *g);
int32_t ac_add_topic(ac_group *g, const char *name, int32_t partitions);
int32_t ac_add_member(ac_group *g, const char *id, const char *instance, const char *rack);
void ac_subscribe(ac_group *g, int32_t m, int32_t t);
void ac_own(ac_group *g, int32_t m, int32_t t, int32_t p);
void ac_remove_member(ac_group *g, int32_t m);
/* Every member's owned partitions := its assignment in r, generation gen. */
void ac_set_owned(ac_group *g, const ch_assign_result *r, int32_t gen);
const ch_assign_input *ac_input(ac_group *g);
/* A copy with members, topics and owned lists in a random order. */
void ac_shuffled(const ac_group *src, ac_group *dst, uint64_t seed);

/* Random group: members, topics, partition range, subscription density
 * (percent; 100 = equal subscriptions), random previous ownership with
 * conflicts and stale generations when `owned`. */
void ac_random(ac_group *g, uint64_t seed, int32_t members, int32_t topics, int32_t maxparts,
	       int density, bool owned);

uint64_t ac_rand(uint64_t *s);

typedef struct ac_stats {
	int64_t assigned;   /* partitions assigned */
	int64_t unassigned; /* subscribed partitions not assigned */
	int64_t moved;      /* validly owned partitions now assigned elsewhere or withheld */
	int64_t min_moved;  /* with equal subscriptions: the minimum balance requires */
	int32_t min_load, max_load;
	bool equal; /* all subscriptions equal */
} ac_stats;

/* Checks the assignor's promises; returns NULL or a description of the first
 * violation (static buffer). */
const char *ac_check(ch_assign_kind kind, const ch_assign_input *in, const ch_assign_result *r,
		     ac_stats *st);
/* Same assignment by names (for the shuffled-input determinism check). */
bool ac_same(const ch_assign_input *a, const ch_assign_result *ra, const ch_assign_input *b,
	     const ch_assign_result *rb);
/* "t0-0 t0-1 t1-2": member m's assignment, for unit tests (static buffer). */
const char *ac_fmt(const ch_assign_input *in, const ch_assign_result *r, int32_t m);

#endif
