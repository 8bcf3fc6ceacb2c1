/*
 * ch_heap: an intrusive min-heap of deadlines. A node lives inside the
 * object that owns the timer and records its slot, so re-arming and
 * cancelling are O(log n) with no search (session timers of 100k members
 * move on every heartbeat). Pure: no clock; deadlines are plain numbers.
 */
#ifndef CH_HEAP_H
#define CH_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ch_heap_node {
	int64_t deadline;
	size_t slot; /* 1-based index in the heap; 0 = not in the heap */
	uint64_t seq; /* insertion order: equal deadlines fire first-armed first */
} ch_heap_node;

typedef struct ch_heap {
	ch_heap_node **v; /* v[1..n] */
	size_t n, cap;
	uint64_t seq;
} ch_heap;

void ch_heap_init(ch_heap *h);
void ch_heap_free(ch_heap *h);
/* Insert or move a node to `deadline`. */
void ch_heap_set(ch_heap *h, ch_heap_node *node, int64_t deadline);
void ch_heap_remove(ch_heap *h, ch_heap_node *node);
/* The earliest node, or NULL. */
static inline ch_heap_node *
ch_heap_top(const ch_heap *h)
{
	return h->n ? h->v[1] : NULL;
}
static inline bool
ch_heap_armed(const ch_heap_node *node)
{
	return node->slot != 0;
}

#endif
