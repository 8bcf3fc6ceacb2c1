/*
 * api_harness: a whole broker in the test process, without sockets, for the
 * api layer's unit tests.
 *
 * tb_open builds what cohortd's main builds (configuration with --set style
 * overrides, topic registry in a temporary log.dirs, event loop, partition
 * manager, the group coordinator through cohortd's coord_shell) but puts
 * itself where ch_server would be: the broker's reply, reply_resp and close
 * callbacks record, per request, what the api layer answered. A request is
 * encoded into a frame (request header v1, or v2 for flexible versions, then
 * the body) and handed to ch_api_on_frame; tb_wait runs the loop until it is
 * answered (deferred answers: Produce acks=all after the fsync, JoinGroup
 * after the join phase, Fetch long polls), at most TB_BOUND_MS, so a request
 * that is never answered fails with its API and version named instead of
 * hanging the test.
 *
 * The harness checks and reports (one line on stderr naming the request);
 * the test asserts on what it returns. Every response is decoded with the
 * generated decoder at the request's version, must consume every byte, and
 * must re-encode, with the generated encoder, to the very same bytes (so a
 * hand-built response such as Fetch's has exactly the generated layout).
 */
#ifndef API_HARNESS_H
#define API_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/ch_api.h"
#include "broker/ch_broker.h"
#include "broker/ch_log_manager.h"
#include "cohortd/coord_shell.h"
#include "common/ch_arena.h"
#include "common/ch_buf.h"
#include "config/ch_config.h"
#include "event/ch_loop.h"
#include "meta/ch_topics.h"

/* The longest a request may take to be answered before it counts as never
 * answered. Generous: it only bounds a hang (fsyncs on a loaded machine). */
#define TB_BOUND_MS 30000

/* What the api layer did with one request. */
typedef struct tb_req {
	int16_t key, version;
	int32_t corr;
	uint8_t *frame; /* the request frame, alive until tb_close (Produce rewrites it) */
	size_t frame_len;
	int replies; /* response frames handed over (reply or reply_resp) */
	int nones;   /* "no response" (reply with NULL: Produce acks=0) */
	int closes;  /* connection closed */
	bool flatten_failed;
	ch_buf resp; /* the response frame: header + body, no size prefix */
} tb_req;

typedef struct tb {
	struct ch_config cfg;
	char dir[512];
	ch_loop *loop;
	struct ch_topics *topics;
	ch_broker bk;
	coord_shell *coord;
	int conn;     /* its address is the one fake connection */
	tb_req *reqs; /* by seq - 1 */
	size_t n_reqs, cap_reqs;
	int stray; /* answers for a request or connection we never sent */
	const char *client_id;
	ch_api_session *sess; /* the connection's, once tb_set_principal made it */
} tb;

/* Opens a broker in a fresh temporary data directory. Besides log.dirs the
 * defaults are group.initial.rebalance.delay.ms=0,
 * offsets.topic.num.partitions=3 and log.level=warn; `sets` (key=value, as
 * cohortd --set) come after them and win. Aborts if the broker cannot be
 * built: nothing can be tested then. */
void tb_open(tb *b, const char *const *sets, size_t nsets);
/* Shuts down as cohortd does (parked group requests answered, pending
 * appends finished), removes the data directory, and checks that every
 * request was answered exactly once (a reply, a "none" or a close) and that
 * no answer came for a request never sent.
 * @returns the number of requests that broke that rule (each named on
 * stderr), plus the stray answers. */
int tb_close(tb *b);

/* Requests from now on come from principal ("User:alice"), from host
 * 127.0.0.1, as if a PLAINTEXT listener had mapped it. */
void tb_set_principal(tb *b, const char *principal);

/* Encodes body (the codec's request struct for key) at version v behind a
 * request header and submits it. @returns its seq (1, 2, ...). */
uint64_t tb_send(tb *b, int16_t key, int16_t v, const void *body);
/* Submits a frame as it is (copied). key/version are for messages only. */
uint64_t tb_send_frame(tb *b, const uint8_t *frame, size_t len, int16_t key, int16_t v,
		       int32_t corr);
/* Runs the loop until request seq has an answer or TB_BOUND_MS pass.
 * @returns true if answered (the test then looks at tb_get). */
bool tb_wait(tb *b, uint64_t seq);
/* One loop iteration that does not sleep: lets posted work and due timers
 * run, for tests that check a request is still parked. */
void tb_poll(tb *b);
/* Up to n such iterations, until request seq is answered: for an answer
 * that must come from work already done (a parked Fetch woken by a produce
 * arms a zero-delay timer), where waiting for a deadline would hide that
 * the wake-up never came. @returns whether it was answered. */
bool tb_poll_until(tb *b, uint64_t seq, int n);
const tb_req *tb_get(const tb *b, uint64_t seq);
/* Frees the stored frames of an answered request (long random runs). */
void tb_forget(tb *b, uint64_t seq);

/* Decodes request seq's response (it must have exactly one reply and no
 * close) into a response struct allocated in `a`: checks the response
 * header (v0, or v1 for flexible versions except ApiVersions) and its
 * correlation id, that the body decodes at the request's version with no
 * byte left, and that re-encoding gives the same bytes.
 * @returns the struct (pointing into the stored frame) or NULL. */
void *tb_decode(tb *b, uint64_t seq, ch_arena *a);
/* The same at version v (ApiVersions' v0 answer to an unsupported version). */
void *tb_decode_at(tb *b, uint64_t seq, int16_t v, ch_arena *a);
/* tb_send + tb_wait + tb_decode. */
void *tb_call(tb *b, int16_t key, int16_t v, const void *body, ch_arena *a);

/* Creates a topic straight in the registry (setup for tests that are not
 * about CreateTopics); aborts if it cannot. */
const ch_topic *tb_create_topic(tb *b, const char *name, int32_t partitions);

/* "API vN" for messages, in a static buffer. */
const char *tb_name(int16_t key, int16_t v);

/* A version for step i of a conversation that walks every version of
 * several APIs at once: i clamped to key's served range. */
int16_t tb_version(int16_t key, int i);
/* How many steps (i = 0, 1, ...) tb_version needs so that every key in
 * keys[0..n) meets every version it serves: the largest max_version + 1. */
int tb_steps(const int16_t *keys, size_t n);

#endif
