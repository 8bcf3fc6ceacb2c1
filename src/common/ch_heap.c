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
		h->v[i]->slot = 0;
	free(h->v);
	memset(h, 0, sizeof(*h));
}

static bool
before(const ch_heap_node *a, const ch_heap_node *b)
{
	return a->deadline < b->deadline || (a->deadline == b->deadline && a->seq < b->seq);
}

static void
place(ch_heap *h, size_t i, ch_heap_node *n)
{
	h->v[i] = n;
	n->slot = i;
}

static void
sift_up(ch_heap *h, size_t i)
{
	ch_heap_node *n = h->v[i];
	while (i > 1 && before(n, h->v[i / 2])) {
		place(h, i, h->v[i / 2]);
		i /= 2;
	}
	place(h, i, n);
}

static void
sift_down(ch_heap *h, size_t i)
{
	ch_heap_node *n = h->v[i];
	for (;;) {
		size_t c = i * 2;
		if (c > h->n)
			break;
		if (c + 1 <= h->n && before(h->v[c + 1], h->v[c]))
			c++;
		if (!before(h->v[c], n))
			break;
		place(h, i, h->v[c]);
		i = c;
	}
	place(h, i, n);
}

void
ch_heap_set(ch_heap *h, ch_heap_node *node, int64_t deadline)
{
	if (node->slot) {
		int64_t old = node->deadline;
		node->deadline = deadline;
		node->seq = ++h->seq;
		if (deadline < old)
			sift_up(h, node->slot);
		else
			sift_down(h, node->slot);
		return;
	}
	if (h->n + 1 >= h->cap) {
		h->cap = h->cap ? h->cap * 2 : 64;
		h->v = ch_xrealloc(h->v, h->cap * sizeof(*h->v));
	}
	node->deadline = deadline;
	node->seq = ++h->seq;
	h->n++;
	place(h, h->n, node);
	sift_up(h, h->n);
}

void
ch_heap_remove(ch_heap *h, ch_heap_node *node)
{
	size_t i = node->slot;
	if (!i)
		return;
	node->slot = 0;
	ch_heap_node *last = h->v[h->n--];
	if (i > h->n)
		return;
	place(h, i, last);
	if (i > 1 && before(last, h->v[i / 2]))
		sift_up(h, i);
	else
		sift_down(h, i);
}
