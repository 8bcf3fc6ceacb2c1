/*
 * Starting-position lookups under allocation failures (cl_offsets.c): a
 * partition marked offset_lookup is never fetched until that lookup ends,
 * so after cl_offsets_lookup returns, every marked partition must be held
 * by a lookup still in progress (an OffsetFetch call, or a ListOffsets
 * request queued for its leader). Each allocation of the call is failed in
 * turn (malloc and calloc wrapped at link time: -Wl,--wrap).
 *
 * No thread and no broker: the client is built by hand, the brokers are
 * kept DOWN with their reconnect backoff far away, so requests stay queued
 * where the test can see them.
 */
#include "client/cl_int.h"
#include "client_shell.h"
#include "common/ch_test.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);

static int fail_at; /* 0: no failure; else fail the fail_at-th allocation */
static int allocs;

void *
__wrap_malloc(size_t n)
{
	if (fail_at && ++allocs == fail_at)
		return NULL;
	return __real_malloc(n);
}

void *
__wrap_calloc(size_t n, size_t size)
{
	if (fail_at && ++allocs == fail_at)
		return NULL;
	return __real_calloc(n, size);
}

#define NPARTS 4

/* A client with group.id and NPARTS owned partitions of topic "t", led by
 * brokers 1 and 2 alternately, none with a position. */
static cl_client *
client_new(bool reset)
{
	cl_client *c = client_shell_new("auto.offset.reset", "earliest");
	for (int32_t id = 1; id <= 2; id++)
		cl_broker_upsert(c, id, "127.0.0.1", 9, 1);
	client_shell_hold_brokers(c);
	cl_md_topic *t = calloc(1, sizeof(*t));
	t->name = strdup("t");
	t->parts = calloc(NPARTS, sizeof(*t->parts));
	t->nparts = NPARTS;
	for (int32_t p = 0; p < NPARTS; p++)
		t->parts[p] = (cl_md_partition){p, 1 + p % 2, 0, 0};
	c->md.topics = t;
	c->md.ntopics = 1;
	for (int32_t p = 0; p < NPARTS; p++) {
		cl_tp *tp = cl_tp_get(c, "t", p);
		tp->owned = true;
		tp->reset = reset;
	}
	return c;
}

/* Whether broker id's queue holds a ListOffsets. */
static bool
list_offsets_queued(cl_client *c, int32_t id)
{
	cl_broker *b = cl_broker_find(c, id);
	for (cl_req *r = b ? b->waiting.head : NULL; r; r = r->next)
		if (r->api == CH_APIKEY_LIST_OFFSETS)
			return true;
	return false;
}

/* Committed offsets first (OffsetFetch, waiting for a coordinator): with
 * no call in progress, no partition may be marked. */
static void
t_committed_lookup(void)
{
	for (int n = 1;; n++) {
		cl_client *c = client_new(false);
		allocs = 0;
		fail_at = n;
		cl_offsets_lookup(c);
		fail_at = 0;
		bool failed = allocs >= n;
		int marked = 0;
		for (int i = 0; i < c->ntps; i++)
			marked += c->tps[i]->offset_lookup;
		if (c->calls)
			CH_CHECK_EQ_INT(marked, NPARTS); /* one call holds them all */
		else if (marked) {
			fprintf(stderr, "allocation %d failed: %d partitions marked, no lookup\n",
				n, marked);
			CH_CHECK_EQ_INT(marked, 0);
		}
		if (!failed)
			CH_CHECK(c->calls != NULL); /* nothing failed: the lookup is on */
		client_shell_free(c);
		if (!failed)
			break;
	}
}

/* auto.offset.reset (ListOffsets per leader): a partition marked has its
 * leader's ListOffsets queued. */
static void
t_reset_lookup(void)
{
	for (int n = 1;; n++) {
		cl_client *c = client_new(true);
		allocs = 0;
		fail_at = n;
		cl_offsets_lookup(c);
		fail_at = 0;
		bool failed = allocs >= n;
		for (int i = 0; i < c->ntps; i++) {
			cl_tp *tp = c->tps[i];
			int32_t leader = 1 + tp->partition % 2;
			if (tp->offset_lookup && !list_offsets_queued(c, leader)) {
				fprintf(stderr,
					"allocation %d failed: t-%d marked, no ListOffsets\n", n,
					tp->partition);
				CH_CHECK(!tp->offset_lookup);
			}
			if (!failed)
				CH_CHECK(tp->offset_lookup);
		}
		client_shell_free(c);
		if (!failed)
			break;
	}
}

CH_TEST_MAIN(CH_TEST(t_committed_lookup), CH_TEST(t_reset_lookup))
