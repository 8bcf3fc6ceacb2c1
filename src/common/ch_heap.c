/*
 * ch_heap.c: binary min-heap over inline (deadline, seq, node) entries. See
 * ch_heap.h.
 */
#include "common/ch_heap.h"

#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"

void
ch_heap_init(ch_heap *h)
{
	memset(h, 0, sizeof(*h));
}

void
ch_heap_free(ch_heap *h)
{
	for (size_t i = 1; i <= h->n; i++)
		h->v[i].node->slot = 0;
	free(h->v);
	memset(h, 0, sizeof(*h));
}

static inline bool
before(const ch_heap_ent *a, const ch_heap_ent *b)
{
	return a->deadline < b->deadline || (a->deadline == b->deadline && a->seq < b->seq);
}

/* Put entry e at slot i and tell its node where it is. */
static inline void
place(ch_heap *h, size_t i, ch_heap_ent e)
{
	h->v[i] = e;
	e.node->slot = i;
}

/* Moves the entry at slot i up while it is due before its parent. */
static void
sift_up(ch_heap *h, size_t i)
{
	ch_heap_ent e = h->v[i];
	while (i > 1 && before(&e, &h->v[i / 2])) {
		place(h, i, h->v[i / 2]);
		i /= 2;
	}
	place(h, i, e);
}

/* Moves the entry at slot i down while a child is due before it. */
static void
sift_down(ch_heap *h, size_t i)
{
	ch_heap_ent e = h->v[i];
	for (;;) {
		size_t c = i * 2;
		if (c > h->n)
			break;
		if (c + 1 <= h->n && before(&h->v[c + 1], &h->v[c]))
			c++;
		if (!before(&h->v[c], &e))
			break;
		place(h, i, h->v[c]);
		i = c;
	}
	place(h, i, e);
}

/* Restore the heap order around slot i after its entry changed. */
static void
fix(ch_heap *h, size_t i)
{
	if (i > 1 && before(&h->v[i], &h->v[i / 2]))
		sift_up(h, i);
	else
		sift_down(h, i);
}

void
ch_heap_set(ch_heap *h, ch_heap_node *node, int64_t deadline)
{
	node->deadline = deadline;
	if (node->slot) {
		ch_heap_ent *e = &h->v[node->slot];
		e->deadline = deadline;
		e->seq = ++h->seq;
		fix(h, node->slot);
		return;
	}
	if (h->n + 1 >= h->cap) {
		h->cap = h->cap ? h->cap * 2 : 64;
		h->v = ch_xrealloc(h->v, h->cap * sizeof(*h->v));
	}
	h->n++;
	place(h, h->n, (ch_heap_ent){deadline, ++h->seq, node});
	sift_up(h, h->n);
}

void
ch_heap_remove(ch_heap *h, ch_heap_node *node)
{
	size_t i = node->slot;
	if (!i)
		return;
	node->slot = 0;
	ch_heap_ent last = h->v[h->n--];
	if (i > h->n) /* it was the last entry */
		return;
	place(h, i, last);
	fix(h, i);
}
