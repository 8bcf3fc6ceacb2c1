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
 * instructions (callgrind, bench/groups/run-coord.sh). A thread key, so that
 * a thread's spare is freed when the thread ends (the client library's I/O
 * thread comes and goes). Not under ASan (CH_ASAN): there every chunk is
 * malloc'd and freed, so a request used after it ended is still caught. */
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;

static void
spare_key_make(void)
{
	(void)pthread_key_create(&spare_key, free);
}

static ch_arena_chunk *
spare_take(void)
{
	if (CH_ASAN)
		return NULL;
	pthread_once(&spare_once, spare_key_make);
	ch_arena_chunk *c = pthread_getspecific(spare_key);
	if (c)
		(void)pthread_setspecific(spare_key, NULL);
	return c;
}

/* Keeps c as the thread's spare if it has none; false: free it. */
static bool
spare_keep(ch_arena_chunk *c)
{
	if (CH_ASAN)
		return false;
	pthread_once(&spare_once, spare_key_make);
	return !pthread_getspecific(spare_key) && pthread_setspecific(spare_key, c) == 0;
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
