/*
 * The consumer protocol's subscription in ConsumerGroupHeartbeat
 * (cl_member.c build_cg_heartbeat, cg_send): a pattern is
 * SubscribedTopicRegex with an empty SubscribedTopicNames, sent at v1 or
 * later only (a coordinator without v1 fails the member with the fatal
 * UNSUPPORTED_VERSION); a names subscription sends "" as the regex from
 * v1, so a member that moved from a pattern to names clears it (null
 * would keep it), and nothing at v0.
 *
 * No thread and no broker (as test_lookup_oom): the brokers are kept DOWN
 * with their reconnect backoff far away, so requests wait in their queues;
 * the test answers FindCoordinator and heartbeats itself and encodes the
 * waiting heartbeat at the version it picks.
 */
#include "client/cl_int.h"
#include "client_shell.h"
#include "common/ch_test.h"

#define COORD_NODE 1

static cl_client *
client_new(void)
{
	cl_client *c = client_shell_new("group.protocol", "consumer");
	cl_broker_upsert(c, COORD_NODE, "127.0.0.1", 9, 9);
	cl_broker_upsert(c, INT32_MAX - COORD_NODE, "127.0.0.1", 9, 9); /* its coordinator entry */
	client_shell_hold_brokers(c);
	return c;
}

/* Takes the oldest waiting request of this api off any broker's queue (the caller answers
 * it and frees it), and its broker in *on; NULL if none waits. */
static cl_req *
take(cl_client *c, int16_t api, cl_broker **on)
{
	for (cl_broker *b = c->brokers; b; b = b->next)
		for (cl_req **pp = &b->waiting.head, *prev = NULL; *pp;
		     prev = *pp, pp = &(*pp)->next) {
			cl_req *r = *pp;
			if (r->api != api)
				continue;
			*pp = r->next;
			if (b->waiting.tail == r)
				b->waiting.tail = prev;
			r->next = NULL;
			if (on)
				*on = b;
			return r;
		}
	return NULL;
}

/* Answers the waiting FindCoordinator: node COORD_NODE (v4's Coordinators). */
static void
answer_find(cl_client *c)
{
	cl_req *r = take(c, CH_APIKEY_FIND_COORDINATOR, NULL);
	CH_CHECK(r != NULL);
	if (!r)
		return;
	ch_FindCoordinatorResponse resp;
	ch_FindCoordinatorResponse_init(&resp);
	ch_FindCoordinatorResponse_Coordinator co = {
		CH_STR_LIT("g"), COORD_NODE, CH_STR_LIT("127.0.0.1"), 9, 0, CH_STR_NULL,
	};
	resp.Coordinators = &co;
	resp.Coordinators_n = 1;
	r->done(c, COHORT_OK, 4, &resp, r->ud);
	free(r);
}

/* Encodes heartbeat r at version into buf and decodes it into out (its strings point into
 * buf; a: the decoder's arena). */
static void
encode(cl_client *c, cl_req *r, int16_t version, ch_buf *buf, ch_arena *a,
       ch_ConsumerGroupHeartbeatRequest *out)
{
	ch_buf_reset(buf);
	r->build(c, version, buf, r->ud);
	CH_CHECK(ch_buf_ok(buf));
	ch_rd rd;
	ch_rd_init(&rd, buf->data, buf->len);
	ch_ConsumerGroupHeartbeatRequest_init(out);
	CH_CHECK_EQ_INT(ch_ConsumerGroupHeartbeatRequest_decode(&rd, a, version, out), 0);
	CH_CHECK_EQ_INT(ch_rd_left(&rd), 0);
}

/* The heartbeat waiting for the coordinator (the caller answers it). */
static cl_req *
heartbeat(cl_client *c)
{
	cl_broker *b = NULL;
	cl_req *r = take(c, CH_APIKEY_CONSUMER_GROUP_HEARTBEAT, &b);
	CH_CHECK(r != NULL);
	if (r)
		CH_CHECK_EQ_INT(b->node_id, INT32_MAX - COORD_NODE);
	return r;
}

/* Answers heartbeat r: no error, this epoch, no assignment. */
static void
answer_heartbeat(cl_client *c, cl_req *r, int32_t epoch)
{
	ch_ConsumerGroupHeartbeatResponse resp;
	ch_ConsumerGroupHeartbeatResponse_init(&resp);
	resp.MemberEpoch = epoch;
	resp.HeartbeatIntervalMs = 5000;
	r->done(c, COHORT_OK, 1, &resp, r->ud);
	free(r);
}

static bool
str_is(ch_str s, const char *want)
{
	return s.len == (int32_t)strlen(want) && memcmp(s.p, want, (size_t)s.len) == 0;
}

/* A pattern: the regex alone, at v1+; then names: the names and "" (v1), nothing (v0). */
static void
t_pattern_then_names(void)
{
	cl_client *c = client_new();
	c->pattern_text = strdup("t-\\d+"); /* as cohort_subscribe_pattern's io_subscribe */
	cl_member_subscribe(c, NULL, 0);
	answer_find(c);
	ch_arena a;
	ch_arena_init(&a);
	ch_buf buf;
	ch_buf_init(&buf);
	ch_ConsumerGroupHeartbeatRequest q;
	cl_req *r = heartbeat(c);
	if (!r) {
		client_shell_free(c);
		return;
	}
	encode(c, r, 1, &buf, &a, &q);
	CH_CHECK_EQ_INT(r->min_version, 1);
	CH_CHECK_EQ_INT(q.MemberEpoch, 0);
	CH_CHECK(str_is(q.SubscribedTopicRegex, "t-\\d+"));
	CH_CHECK_EQ_INT(q.SubscribedTopicNames_n, 0);
	CH_CHECK(q.MemberId.len > 0); /* v1: the client's own id (KIP-1082) */
	answer_heartbeat(c, r, 1);

	free(c->pattern_text);
	c->pattern_text = NULL;
	char **names = calloc(2, sizeof(char *));
	names[0] = strdup("n1");
	names[1] = strdup("n2");
	cl_member_subscribe(c, names, 2); /* takes names */
	r = heartbeat(c);
	if (r) {
		encode(c, r, 1, &buf, &a, &q);
		CH_CHECK_EQ_INT(r->min_version, 0);
		CH_CHECK_EQ_INT(q.MemberEpoch, 1);
		CH_CHECK(str_is(q.SubscribedTopicRegex, "")); /* not null: the pattern goes */
		CH_CHECK_EQ_INT(q.SubscribedTopicNames_n, 2);
		if (q.SubscribedTopicNames_n == 2)
			CH_CHECK(str_is(q.SubscribedTopicNames[0], "n1") &&
				 str_is(q.SubscribedTopicNames[1], "n2"));
		/* the same heartbeat at v0, which has no regex field */
		encode(c, r, 0, &buf, &a, &q);
		CH_CHECK_EQ_INT(q.SubscribedTopicNames_n, 2);
		answer_heartbeat(c, r, 1);
	}
	CH_CHECK_EQ_INT(c->fatal, 0);
	ch_buf_free(&buf);
	ch_arena_free(&a);
	client_shell_free(c);
}

/* A coordinator with ConsumerGroupHeartbeat v0 only: send_now refuses the pattern's
 * heartbeat (below its v1 floor); the member is fatal, UNSUPPORTED_VERSION. */
static void
t_pattern_needs_v1(void)
{
	cl_client *c = client_new();
	c->pattern_text = strdup("t-.*");
	cl_member_subscribe(c, NULL, 0);
	answer_find(c);
	cl_broker *coord = cl_broker_find(c, INT32_MAX - COORD_NODE);
	coord->vmin[CH_APIKEY_CONSUMER_GROUP_HEARTBEAT] = 0;
	coord->vmax[CH_APIKEY_CONSUMER_GROUP_HEARTBEAT] = 0;
	cl_req *r = take(c, CH_APIKEY_CONSUMER_GROUP_HEARTBEAT, NULL);
	CH_CHECK(r != NULL);
	if (r) {
		CH_CHECK_EQ_INT(r->min_version, 1);
		/* what send_now answers when v0 is all the broker has */
		r->done(c, COHORT_ERR__NO_COMMON_VERSION, -1, NULL, r->ud);
		free(r);
	}
	CH_CHECK_EQ_INT(c->fatal, COHORT_ERR_UNSUPPORTED_VERSION);
	CH_CHECK(take(c, CH_APIKEY_CONSUMER_GROUP_HEARTBEAT, NULL) == NULL); /* nothing more */
	client_shell_free(c);
}

CH_TEST_MAIN(CH_TEST(t_pattern_then_names), CH_TEST(t_pattern_needs_v1))
