#include "common/ch_arena.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"

struct ch_arena_chunk {
	ch_arena_chunk *next;
	size_t used, cap;
	max_align_t data[]; /* cap bytes */
};

#define CHUNK_MIN 4096

/* One CHUNK_MIN chunk kept per thread between arenas: the broker makes and
 * frees an arena per request (the request itself lives in it, ch_api.c),
 * and the malloc/free of its first chunk was a sixth of a heartbeat's
 * instructions (callgrind, bench/groups/run-coord.sh). A thread-local
 * variable (pthread_getspecific/setspecific were ~100 instructions a
 * request); the thread key only frees a thread's spare when the thread ends
 * (the client library's I/O thread comes and goes): its value is the
 * variable's address, set once per thread. Not under ASan (CH_ASAN): there
 * every chunk is malloc'd and freed, so a request used after it ended is
 * still caught. */
static _Thread_local ch_arena_chunk *spare;
static _Thread_local bool spare_keyed; /* spare_key holds &spare for this thread */
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void
spare_free(void *p)
{
	ch_arena_chunk **slot = p;
	free(*slot);
	*slot = NULL;
}

static void
spare_key_make(void)
{
	(void)pthread_key_create(&spare_key, spare_free);
}

static ch_arena_chunk *
spare_take(void)
{
	if (CH_ASAN)
		return NULL;
	ch_arena_chunk *c = spare;
	spare = NULL;
	return c;
}

/* Keeps c as the thread's spare if it has none; false: free it. */
static bool
spare_keep(ch_arena_chunk *c)
{
	if (CH_ASAN || spare)
		return false;
	if (!spare_keyed) {
		pthread_once(&spare_once, spare_key_make);
		if (pthread_setspecific(spare_key, &spare) != 0)
			return false;
		spare_keyed = true;
	}
	spare = c;
	return true;
}

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
		c = cap == CHUNK_MIN ? spare_take() : NULL;
		if (!c && !(c = malloc(sizeof(*c) + cap)))
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
		if (c->cap != CHUNK_MIN || !spare_keep(c))
			free(c);
		c = next;
	}
	a->head = NULL;
	a->total = 0;
}
