#include "common/ch_map.h"

#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"
#include "common/ch_hash.h"

void
ch_map_init(ch_map *m)
{
	memset(m, 0, sizeof(*m));
}

void
ch_map_free(ch_map *m)
{
	ch_map_entry *e = m->head;
	while (e) {
		ch_map_entry *next = e->next;
		free(e);
		e = next;
	}
	free(m->buckets);
	memset(m, 0, sizeof(*m));
}

ch_map_entry *
ch_map_find(const ch_map *m, const void *key, size_t klen)
{
	if (!m->nbuckets)
		return NULL;
	uint64_t h = ch_hash_bytes(key, klen);
	for (ch_map_entry *e = m->buckets[h & (m->nbuckets - 1)]; e; e = e->chain)
		if (e->hash == h && e->klen == klen && memcmp(e->key, key, klen) == 0)
			return e;
	return NULL;
}

/* Doubles the bucket table (16 at first) and rechains every entry. */
static void
grow(ch_map *m)
{
	size_t nb = m->nbuckets ? m->nbuckets * 2 : 16;
	ch_map_entry **b = ch_xcalloc(nb, sizeof(*b));
	for (ch_map_entry *e = m->head; e; e = e->next) {
		size_t i = e->hash & (nb - 1);
		e->chain = b[i];
		b[i] = e;
	}
	free(m->buckets);
	m->buckets = b;
	m->nbuckets = nb;
}

ch_map_entry *
ch_map_put(ch_map *m, const void *key, size_t klen, void *value)
{
	if (m->n >= m->nbuckets)
		grow(m);
	ch_map_entry *e = ch_xmalloc(sizeof(*e) + klen + 1);
	e->hash = ch_hash_bytes(key, klen);
	e->value = value;
	e->klen = klen;
	if (klen)
		memcpy(e->key, key, klen);
	e->key[klen] = '\0';
	size_t i = e->hash & (m->nbuckets - 1);
	e->chain = m->buckets[i];
	m->buckets[i] = e;
	e->next = NULL;
	e->prev = m->tail;
	if (m->tail)
		m->tail->next = e;
	else
		m->head = e;
	m->tail = e;
	m->n++;
	return e;
}

void *
ch_map_remove_entry(ch_map *m, ch_map_entry *e)
{
	ch_map_entry **pp = &m->buckets[e->hash & (m->nbuckets - 1)];
	while (*pp != e)
		pp = &(*pp)->chain;
	*pp = e->chain;
	CH_DLIST_UNLINK(m->head, m->tail, e);
	m->n--;
	void *v = e->value;
	free(e);
	return v;
}

void *
ch_map_remove(ch_map *m, const void *key, size_t klen)
{
	ch_map_entry *e = ch_map_find(m, key, klen);
	return e ? ch_map_remove_entry(m, e) : NULL;
}
