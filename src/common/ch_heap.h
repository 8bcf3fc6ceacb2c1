/*
 * ch_heap: an intrusive min-heap of deadlines, the one timer heap of the
 * tree (the event loop's timers and the coordinator's virtual-time timers).
 *
 * A node lives inside the object that owns the timer and records its slot,
 * so re-arming and cancelling are O(log n) with no search (session timers of
 * 100k members move on every heartbeat). The heap's entries carry the sort
 * key (deadline, arm sequence) next to the node pointer, so sifting compares
 * without chasing pointers. Equal deadlines pop in arm order (FIFO; a re-arm
 * counts as a new arm). Pure: no clock; deadlines are plain numbers.
 */
#ifndef CH_HEAP_H
#define CH_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ch_heap_node {
	int64_t deadline; /* meaningful while armed */
	size_t slot;      /* 1-based index in the heap; 0 = not in the heap */
} ch_heap_node;

typedef struct ch_heap_ent {
	int64_t deadline;
	uint64_t seq; /* arm order */
	ch_heap_node *node;
} ch_heap_ent;

typedef struct ch_heap {
	ch_heap_ent *v; /* v[1..n]; v[1] is the earliest */
	size_t n, cap;
	uint64_t seq; /* the last arm sequence handed out */
} ch_heap;

void ch_heap_init(ch_heap *h);
/* Frees the array; nodes still in the heap are marked unarmed. */
void ch_heap_free(ch_heap *h);
/* Insert or move a node to `deadline` (a move is a new arm: it goes after
 * nodes already at that deadline). Aborts on out-of-memory. */
void ch_heap_set(ch_heap *h, ch_heap_node *node, int64_t deadline);
/* Remove a node; a no-op when it is not in the heap. */
void ch_heap_remove(ch_heap *h, ch_heap_node *node);

/* The earliest node, or NULL. */
static inline ch_heap_node *
ch_heap_top(const ch_heap *h)
{
	return h->n ? h->v[1].node : NULL;
}
/* The arm sequence of the earliest node (the heap must not be empty). */
static inline uint64_t
ch_heap_top_seq(const ch_heap *h)
{
	return h->v[1].seq;
}
static inline bool
ch_heap_armed(const ch_heap_node *node)
{
	return node->slot != 0;
}

#endif
