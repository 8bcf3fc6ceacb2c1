/*
 * ch_arena: a bump allocator freed all at once. A decoded request lives in
 * one arena (its arrays and structs); strings and bytes point into the frame
 * itself, so the frame must outlive the decoded message.
 *
 * Allocation failure returns NULL (decoders turn it into a decode error), so
 * the same code serves the broker and the client library.
 */
#ifndef CH_ARENA_H
#define CH_ARENA_H

#include <stddef.h>

typedef struct ch_arena_chunk ch_arena_chunk;

typedef struct ch_arena {
	ch_arena_chunk *head; /* newest chunk first */
	size_t total;         /* bytes handed out, for limits and stats */
	size_t limit;         /* 0 = unlimited; past it allocations fail */
} ch_arena;

void ch_arena_init(ch_arena *a);
/* Zeroed memory, aligned for any type; NULL on failure or past the limit. */
void *ch_arena_alloc(ch_arena *a, size_t n);
/* Free everything; the arena can be used again. */
void ch_arena_reset(ch_arena *a);
#define ch_arena_free ch_arena_reset

#endif
