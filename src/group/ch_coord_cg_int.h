/*
 * ch_coord_cg_int.h: the consumer-protocol groups' structures, shared by
 * ch_coord_cg.c (the state machine) and ch_coord_cg_check.c (invariants).
 */
#ifndef CH_COORD_CG_INT_H
#define CH_COORD_CG_INT_H

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
} cg_timer_kind;

typedef struct cg_timer {
	ch_heap_node node; /* must be first */
	cg_timer_kind kind;
	struct cg_member *m;
} cg_timer;

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
	cg_set target;   /* target assignment (of the group's assignment epoch) */
	cg_timer session;
	cg_timer rebalance;
	int32_t rebalance_epoch; /* the member epoch the rebalance timer is for */
} cg_member;

/* One subscribed topic as the group last read it (Kafka's subscription
 * metadata); a change bumps the group epoch. */
typedef struct cg_topic_meta {
	char *name;
	ch_uuid id;
	int32_t partitions;
} cg_topic_meta;

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
} cg_group;

struct ch_coord_cg {
	ch_coord_cg_config cfg;
	ch_coord_cg_ops ops;
	ch_map groups; /* group id -> cg_group */
	ch_heap timers;
	int64_t now;
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

#endif
