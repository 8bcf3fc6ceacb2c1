/*
 * ch_map: a hash map from byte-string keys to pointers. Keys are copied
 * into the entry; iteration is in insertion order (a linked list), which
 * keeps every output that walks a map deterministic. Chained buckets,
 * power-of-two table, grows at load 1. The broker aborts on OOM.
 */
#ifndef CH_MAP_H
#define CH_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ch_map_entry {
	struct ch_map_entry *chain;       /* bucket chain */
	struct ch_map_entry *prev, *next; /* insertion order */
	uint64_t hash;
	void *value;
	size_t klen;
	char key[]; /* klen bytes + NUL */
} ch_map_entry;

typedef struct ch_map {
	ch_map_entry **buckets;
	size_t nbuckets; /* power of two, or 0 */
	size_t n;
	ch_map_entry *head, *tail;
} ch_map;

void ch_map_init(ch_map *m);
/* Frees the entries, not the values. */
void ch_map_free(ch_map *m);
ch_map_entry *ch_map_find(const ch_map *m, const void *key, size_t klen);
static inline void *
ch_map_get(const ch_map *m, const void *key, size_t klen)
{
	ch_map_entry *e = ch_map_find(m, key, klen);
	return e ? e->value : NULL;
}
/* Insert (key must not be present); returns the entry (its key is a stable
 * NUL-terminated copy, usable as the value's name). */
ch_map_entry *ch_map_put(ch_map *m, const void *key, size_t klen, void *value);
/* Remove an entry; returns its value. */
void *ch_map_remove_entry(ch_map *m, ch_map_entry *e);
void *ch_map_remove(ch_map *m, const void *key, size_t klen);
#define ch_map_foreach(m, e) for (ch_map_entry *e = (m)->head; e; e = e->next)
/* Safe against removing e inside the loop. */
#define ch_map_foreach_safe(m, e, tmp)                                                             \
	for (ch_map_entry *e = (m)->head, *tmp = e ? e->next : NULL; e;                            \
	     e = tmp, tmp = e ? e->next : NULL)

#endif
