#include "common/ch_arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct ch_arena_chunk {
	ch_arena_chunk *next;
	size_t used, cap;
	max_align_t data[]; /* cap bytes */
};

#define CHUNK_MIN 4096

void
ch_arena_init(ch_arena *a)
{
	memset(a, 0, sizeof(*a));
}

void *
ch_arena_alloc(ch_arena *a, size_t n)
{
	const size_t align = sizeof(max_align_t);
	if (n == 0)
		n = 1;
	if (n > SIZE_MAX / 2)
		return NULL;
	n = (n + align - 1) & ~(align - 1);
	if (a->limit && a->total + n > a->limit)
		return NULL;
	ch_arena_chunk *c = a->head;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > CHUNK_MIN ? n : CHUNK_MIN;
		if (c && c->cap * 2 > cap && c->cap < (1u << 20))
			cap = c->cap * 2;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->used = 0;
		c->cap = cap;
		c->next = a->head;
		a->head = c;
	}
	void *p = (char *)c->data + c->used;
	c->used += n;
	a->total += n;
	memset(p, 0, n);
	return p;
}

void
ch_arena_reset(ch_arena *a)
{
	ch_arena_chunk *c = a->head;
	while (c) {
		ch_arena_chunk *next = c->next;
		free(c);
		c = next;
	}
	a->head = NULL;
	a->total = 0;
}
