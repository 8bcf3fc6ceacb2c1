/*
 * Every served (api, version), found by walking the handler table (so an API
 * added to the table is covered without editing this file), against a whole
 * broker without sockets (api_harness.h):
 *
 *   - random requests from the generated fillers (ch_msgs_fill.c), several
 *     seeds per version, with the few fields that would make a request wait
 *     long or mean nothing clamped (see clamp()). Each must be answered
 *     exactly once and never by closing the connection, and its response
 *     must decode with the generated decoder at that version, consume every
 *     byte and re-encode to the same bytes. The one exception is Kafka's:
 *     Produce with acks=0 gets no response, or a closed connection when a
 *     partition failed (KafkaApis.handleProduceRequest).
 *     Random strings are short lowercase words, so requests sometimes meet
 *     topics and groups that earlier random requests created.
 *   - the versions just outside each served range: the connection is
 *     closed, except for ApiVersions, which answers v0 UNSUPPORTED_VERSION.
 */
#include <stdlib.h>
#include <string.h>

#include "api_harness.h"
#include "common/ch_common.h"
#include "common/ch_test.h"
#include "proto/generated/ch_errors.h"
#include "proto/generated/ch_msgs.h"

#define SEEDS 16

/* The table, collected through the public iterator. */
static const ch_api_handler *handlers[128];
static size_t n_handlers;

static void
collect(const ch_api_handler *h, void *ud)
{
	(void)ud;
	if (n_handlers < CH_ARRAY_LEN(handlers))
		handlers[n_handlers++] = h;
}

static void
load_table(void)
{
	n_handlers = 0;
	ch_api_foreach_handler(collect, NULL);
}

/* The filler of an API's request ("<Name>Request"). */
static const ch_msg_filler *
request_filler(const char *api)
{
	char want[96];
	snprintf(want, sizeof(want), "%sRequest", api);
	for (size_t i = 0; i < ch_msg_fillers_n; i++)
		if (strcmp(ch_msg_fillers[i].name, want) == 0)
			return &ch_msg_fillers[i];
	return NULL;
}

static int32_t
bounded(int32_t x, uint32_t n)
{
	return (int32_t)((uint32_t)x % n);
}

/*
 * Random values are fine almost everywhere: they give error answers, which
 * is what these requests are for. A few would only make the test slow or
 * big: a long poll (Fetch MaxWaitMs), a join phase as long as a random
 * rebalance timeout, topics with 100,000 partitions. Produce's acks are
 * spread over 0, 1, -1 and a random (invalid) value.
 */
static void
clamp(const char *api, uint64_t seed, void *body)
{
	if (!strcmp(api, "Fetch")) {
		ch_FetchRequest *q = body;
		q->MaxWaitMs = bounded(q->MaxWaitMs, 50);
	} else if (!strcmp(api, "JoinGroup")) {
		/* Half the joins are new members: a random member id is one
		 * the broker never handed out (always UNKNOWN_MEMBER_ID). */
		ch_JoinGroupRequest *q = body;
		q->SessionTimeoutMs = bounded(q->SessionTimeoutMs, 400);
		q->RebalanceTimeoutMs = bounded(q->RebalanceTimeoutMs, 400);
		if (seed % 2)
			q->MemberId = ch_str_c("");
	} else if (!strcmp(api, "CreateTopics")) {
		ch_CreateTopicsRequest *q = body;
		for (int32_t i = 0; i < q->Topics_n; i++)
			q->Topics[i].NumPartitions = bounded(q->Topics[i].NumPartitions, 5) - 1;
	} else if (!strcmp(api, "CreatePartitions")) {
		ch_CreatePartitionsRequest *q = body;
		for (int32_t i = 0; i < q->Topics_n; i++)
			q->Topics[i].Count = bounded(q->Topics[i].Count, 8);
	} else if (!strcmp(api, "DescribeAcls")) {
		/* Code 0 (UNKNOWN) closes the connection, as Kafka (test_api_acls). */
		ch_DescribeAclsRequest *q = body;
		q->ResourceTypeFilter |= 1;
		q->PatternTypeFilter |= 1;
		q->Operation |= 1;
		q->PermissionType |= 1;
	} else if (!strcmp(api, "CreateAcls")) {
		ch_CreateAclsRequest *q = body;
		for (int32_t i = 0; i < q->Creations_n; i++) {
			q->Creations[i].ResourceType |= 1;
			q->Creations[i].ResourcePatternType |= 1;
			q->Creations[i].Operation |= 1;
			q->Creations[i].PermissionType |= 1;
		}
	} else if (!strcmp(api, "DeleteAcls")) {
		ch_DeleteAclsRequest *q = body;
		for (int32_t i = 0; i < q->Filters_n; i++) {
			q->Filters[i].ResourceTypeFilter |= 1;
			q->Filters[i].PatternTypeFilter |= 1;
			q->Filters[i].Operation |= 1;
			q->Filters[i].PermissionType |= 1;
		}
	} else if (!strcmp(api, "Produce")) {
		ch_ProduceRequest *q = body;
		static const int16_t acks[] = {0, 1, -1};
		if (seed % 4 < 3)
			q->Acks = acks[seed % 4];
	}
}

static bool
produce_acks0(const char *api, const void *body)
{
	return !strcmp(api, "Produce") && ((const ch_ProduceRequest *)body)->Acks == 0;
}

static int32_t
produce_partitions(const ch_ProduceRequest *q)
{
	int32_t n = 0;
	for (int32_t i = 0; i < q->TopicData_n; i++)
		n += CH_MAX(q->TopicData[i].PartitionData_n, 0);
	return n;
}

/* One random request; false if it was never answered (the run stops). */
static bool
one_random(tb *b, const ch_api_handler *h, const ch_api_codec *c, const ch_msg_filler *f, int16_t v,
	   uint64_t seed)
{
	ch_arena a;
	ch_arena_init(&a);
	void *body = ch_arena_alloc(&a, f->size);
	uint64_t rng = seed * 7919 + (uint64_t)v * 104729 + (uint64_t)h->key * 15485863;
	f->fill(&a, v, &rng, body);
	clamp(c->name, seed, body);
	uint64_t seq = tb_send(b, h->key, v, body);
	bool ok = tb_wait(b, seq);
	CH_CHECK(ok);
	if (ok) {
		const tb_req *r = tb_get(b, seq);
		if (produce_acks0(c->name, body)) {
			/* Random records never pass the batch checks, so any
			 * partition fails, and a failed acks=0 produce closes. */
			bool failed = produce_partitions(body) > 0;
			if (r->replies != 0 || r->closes != failed)
				fprintf(stderr, "%s seed %llu: acks=0: %d replies, %d closes\n",
					tb_name(h->key, v), (unsigned long long)seed, r->replies,
					r->closes);
			CH_CHECK_EQ_INT(r->replies, 0);
			CH_CHECK_EQ_INT(r->closes, failed);
			CH_CHECK_EQ_INT(r->nones, !failed);
		} else {
			if (r->closes)
				fprintf(stderr, "%s seed %llu: connection closed\n",
					tb_name(h->key, v), (unsigned long long)seed);
			CH_CHECK_EQ_INT(r->closes, 0);
			ch_arena ra;
			ch_arena_init(&ra);
			void *resp = tb_decode(b, seq, &ra);
			if (!resp)
				fprintf(stderr, "%s seed %llu: bad response\n", tb_name(h->key, v),
					(unsigned long long)seed);
			CH_CHECK(resp != NULL);
			ch_arena_reset(&ra);
		}
		tb_forget(b, seq);
	}
	ch_arena_reset(&a);
	return ok;
}

static void
t_random_requests(void)
{
	static const char *const sets[] = {"group.min.session.timeout.ms=100"};
	tb b;
	tb_open(&b, sets, CH_ARRAY_LEN(sets));
	load_table();
	CH_CHECK(n_handlers > 0);
	int pairs = 0, requests = 0;
	for (size_t i = 0; i < n_handlers; i++) {
		const ch_api_handler *h = handlers[i];
		const ch_api_codec *c = ch_api_codec_find(h->key);
		CH_CHECK(c != NULL);
		if (!c)
			continue;
		const ch_msg_filler *f = request_filler(c->name);
		if (!f)
			fprintf(stderr, "no filler for %sRequest\n", c->name);
		CH_CHECK(f != NULL);
		/* The table serves only versions the codec has. */
		CH_CHECK(h->min_version >= c->min_version && h->max_version <= c->max_version);
		if (!f)
			continue;
		for (int16_t v = h->min_version; v <= h->max_version; v++) {
			pairs++;
			for (uint64_t seed = 1; seed <= SEEDS; seed++) {
				requests++;
				if (!one_random(&b, h, c, f, v, seed)) {
					CH_CHECK_EQ_INT(tb_close(&b), 0);
					return;
				}
			}
		}
	}
	printf("%d random requests over %d (api, version) pairs of %zu APIs\n", requests, pairs,
	       n_handlers);
	CH_CHECK_EQ_INT(tb_close(&b), 0);
}

/* A request with an empty body at version v: only the header matters. */
static uint64_t
send_header_only(tb *b, int16_t key, int16_t v)
{
	ch_buf f;
	ch_buf_init(&f);
	ch_RequestHeader h;
	ch_RequestHeader_init(&h);
	h.RequestApiKey = key;
	h.RequestApiVersion = v;
	h.CorrelationId = 77;
	h.ClientId = ch_str_c("api-test");
	ch_RequestHeader_encode(&f, 1, &h);
	uint64_t seq = tb_send_frame(b, f.data, f.len, key, v, 77);
	ch_buf_free(&f);
	return seq;
}

static void
t_versions_outside_the_table(void)
{
	tb b;
	tb_open(&b, NULL, 0);
	load_table();
	for (size_t i = 0; i < n_handlers; i++) {
		const ch_api_handler *h = handlers[i];
		int16_t outside[2] = {(int16_t)(h->min_version - 1), (int16_t)(h->max_version + 1)};
		for (int k = 0; k < 2; k++) {
			int16_t v = outside[k];
			if (v < 0)
				continue;
			uint64_t seq = send_header_only(&b, h->key, v);
			CH_CHECK(tb_wait(&b, seq));
			const tb_req *r = tb_get(&b, seq);
			if (h->key != CH_APIKEY_API_VERSIONS) {
				if (r->closes != 1)
					fprintf(stderr, "%s: not closed\n", tb_name(h->key, v));
				CH_CHECK_EQ_INT(r->closes, 1);
				CH_CHECK_EQ_INT(r->replies, 0);
				continue;
			}
			/* ApiVersions: a v0 answer with ApiVersions' own range
			 * (Kafka's getErrorResponse), so the client can pick a
			 * version both sides know. */
			ch_arena a;
			ch_arena_init(&a);
			ch_ApiVersionsResponse *resp = tb_decode_at(&b, seq, 0, &a);
			CH_CHECK(resp != NULL);
			if (resp) {
				CH_CHECK_EQ_INT(resp->ErrorCode, CH_KERR_UNSUPPORTED_VERSION);
				CH_CHECK_EQ_INT(resp->ApiKeys_n, 1);
				CH_CHECK(resp->ApiKeys_n == 1 &&
					 resp->ApiKeys[0].ApiKey == CH_APIKEY_API_VERSIONS);
			}
			ch_arena_reset(&a);
		}
	}
	CH_CHECK_EQ_INT(tb_close(&b), 0);
}

CH_TEST_MAIN(CH_TEST(t_random_requests), CH_TEST(t_versions_outside_the_table))
