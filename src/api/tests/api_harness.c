/*
 * api_harness.c: see api_harness.h.
 */
#include "api_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth/ch_authz.h"
#include "common/ch_common.h"
#include "common/ch_log.h"
#include "net/ch_resp.h"
#include "proto/ch_rd.h"
#include "proto/generated/ch_msgs.h"

static bool
flexible(const ch_api_codec *c, int16_t v)
{
	return c && c->flex_version >= 0 && v >= c->flex_version;
}

const char *
tb_name(int16_t key, int16_t v)
{
	static char buf[80];
	const ch_api_codec *c = ch_api_codec_find(key);
	snprintf(buf, sizeof(buf), "%s v%d", c ? c->name : "api?", v);
	return buf;
}

/* The request seq names, or NULL (and a stray answer counted). */
static tb_req *
req_for(tb *b, void *conn, uint64_t seq)
{
	if (conn != &b->conn || seq == 0 || seq > b->n_reqs) {
		fprintf(stderr, "harness: answer for unknown request seq %llu\n",
			(unsigned long long)seq);
		b->stray++;
		return NULL;
	}
	return &b->reqs[seq - 1];
}

static void
shell_reply(void *shell, void *conn, uint64_t seq, ch_buf *resp)
{
	tb *b = shell;
	tb_req *r = req_for(b, conn, seq);
	if (!resp) {
		if (r)
			r->nones++;
		return;
	}
	if (r && r->replies++ == 0) {
		r->resp = *resp; /* take the bytes */
		ch_buf_init(resp);
	}
	ch_buf_free(resp); /* the bytes of a second reply; the struct is the caller's */
}

static void
shell_reply_resp(void *shell, void *conn, uint64_t seq, ch_resp *resp)
{
	tb *b = shell;
	tb_req *r = req_for(b, conn, seq);
	if (r && r->replies++ == 0 && ch_resp_flatten(resp, &r->resp) != CH_OK)
		r->flatten_failed = true;
	ch_resp_free(resp);
}

static void
shell_close(void *shell, void *conn, uint64_t seq)
{
	tb *b = shell;
	tb_req *r = req_for(b, conn, seq);
	if (r)
		r->closes++;
}

static int64_t
shell_now(void *shell)
{
	return ch_loop_now(((tb *)shell)->loop);
}

static int64_t
shell_wall(void *shell)
{
	(void)shell;
	return ch_now_wall_ms();
}

/* The session of the one connection (NULL until tb_set_principal). */
static ch_api_session *
shell_session(void *shell, void *conn)
{
	(void)conn;
	return ((tb *)shell)->sess;
}

void
tb_set_principal(tb *b, const char *principal)
{
	if (!b->sess)
		b->sess = ch_api_session_new(&b->bk, 0);
	ch_api_session_set_principal(b->sess, principal);
}

void
tb_open(tb *b, const char *const *sets, size_t nsets)
{
	memset(b, 0, sizeof(*b));
	const char *base = getenv("TMPDIR");
	snprintf(b->dir, sizeof(b->dir), "%s/ch_api_test_XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(b->dir)) {
		perror("mkdtemp");
		abort();
	}
	char logdirs[600];
	snprintf(logdirs, sizeof(logdirs), "log.dirs=%s/data", b->dir);
	const char *defaults[] = {logdirs, "group.initial.rebalance.delay.ms=0",
				  "offsets.topic.num.partitions=3", "log.level=warn"};
	size_t nd = CH_ARRAY_LEN(defaults);
	const char **all = ch_xcalloc(nd + nsets, sizeof(*all));
	memcpy(all, defaults, sizeof(defaults));
	for (size_t i = 0; i < nsets; i++)
		all[nd + i] = sets[i];
	char err[512];
	if (ch_config_load(&b->cfg, NULL, all, nd + nsets, err, sizeof(err)) != CH_OK) {
		fprintf(stderr, "harness: configuration: %s\n", err);
		abort();
	}
	free(all);
	ch_log_threshold = b->cfg.log_level;
	b->loop = ch_loop_new();
	if (!b->loop)
		abort();
	ch_broker *bk = &b->bk;
	ch_broker_shell sh = {
		b,    shell_reply, shell_close, shell_now, shell_wall, shell_reply_resp,
		NULL, NULL,        NULL,        NULL};
	if (ch_broker_open(bk, &b->cfg, b->loop, &sh, err, sizeof(err)) != CH_OK) {
		fprintf(stderr, "harness: data directory: %s\n", err);
		abort();
	}
	bk->session = shell_session; /* NULL until tb_set_principal: User:ANONYMOUS */
	b->topics = bk->topics;
	if (b->cfg.authorizer_enabled &&
	    !(bk->acls = ch_acl_store_open(b->cfg.log_dir, err, sizeof(err)))) {
		fprintf(stderr, "harness: ACLs: %s\n", err);
		abort();
	}
	if (ch_log_manager_open_all(bk->logs) != 0) /* every log opened (a no-op lookup) */
		abort();
	b->coord = coord_shell_start(b->loop, bk, bk->logs);
	if (!b->coord)
		abort();
	b->client_id = "api-test";
}

int
tb_close(tb *b)
{
	ch_coord_shutdown(b->bk.coord);
	coord_shell_quiesce(b->coord);
	ch_api_session_free(b->sess);
	b->sess = NULL;
	ch_acl_store_close(b->bk.acls);
	b->bk.acls = NULL;
	ch_broker_close(&b->bk);
	b->topics = NULL;
	coord_shell_stop(b->coord);
	ch_loop_free(b->loop);
	ch_config_free(&b->cfg);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", b->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "harness: cannot remove %s\n", b->dir);

	int bad = b->stray;
	for (size_t i = 0; i < b->n_reqs; i++) {
		tb_req *r = &b->reqs[i];
		int answers = r->replies + r->nones + r->closes;
		if (answers != 1) {
			fprintf(stderr,
				"harness: %s (seq %zu, corr %d) answered %d times "
				"(%d replies, %d none, %d closes)\n",
				tb_name(r->key, r->version), i + 1, r->corr, answers, r->replies,
				r->nones, r->closes);
			bad++;
		}
		free(r->frame);
		ch_buf_free(&r->resp);
	}
	free(b->reqs);
	b->reqs = NULL;
	b->n_reqs = b->cap_reqs = 0;
	return bad;
}

uint64_t
tb_send_frame(tb *b, const uint8_t *frame, size_t len, int16_t key, int16_t v, int32_t corr)
{
	if (b->n_reqs == b->cap_reqs) {
		b->cap_reqs = b->cap_reqs ? 2 * b->cap_reqs : 64;
		b->reqs = realloc(b->reqs, b->cap_reqs * sizeof(*b->reqs));
		if (!b->reqs)
			abort();
	}
	tb_req *r = &b->reqs[b->n_reqs++];
	memset(r, 0, sizeof(*r));
	r->key = key;
	r->version = v;
	r->corr = corr;
	r->frame = ch_xmalloc(len ? len : 1);
	memcpy(r->frame, frame, len);
	r->frame_len = len;
	ch_buf_init(&r->resp);
	uint64_t seq = b->n_reqs;
	/* The frame must stay put while the request is open: r->frame does,
	 * even when reqs is reallocated. */
	ch_api_on_frame(&b->bk, &b->conn, seq, "127.0.0.1:40000", r->frame, len,
			ch_loop_now(b->loop));
	return seq;
}

uint64_t
tb_send(tb *b, int16_t key, int16_t v, const void *body)
{
	const ch_api_codec *c = ch_api_codec_find(key);
	if (!c)
		abort();
	ch_RequestHeader h;
	ch_RequestHeader_init(&h);
	h.RequestApiKey = key;
	h.RequestApiVersion = v;
	h.CorrelationId = (int32_t)b->n_reqs + 1000;
	h.ClientId = ch_str_c(b->client_id);
	ch_buf f;
	ch_buf_init(&f);
	ch_RequestHeader_encode(&f, flexible(c, v) ? 2 : 1, &h);
	c->req_encode(&f, v, body);
	if (!ch_buf_ok(&f))
		abort();
	uint64_t seq = tb_send_frame(b, f.data, f.len, key, v, h.CorrelationId);
	ch_buf_free(&f);
	return seq;
}

static bool
answered(const tb_req *r)
{
	return r->replies + r->nones + r->closes > 0;
}

bool
tb_wait(tb *b, uint64_t seq)
{
	int64_t start = ch_now_mono_ms();
	while (!answered(&b->reqs[seq - 1])) {
		if (ch_now_mono_ms() - start > TB_BOUND_MS) {
			const tb_req *r = &b->reqs[seq - 1];
			fprintf(stderr,
				"harness: %s (seq %llu, corr %d) not answered within %d ms\n",
				tb_name(r->key, r->version), (unsigned long long)seq, r->corr,
				TB_BOUND_MS);
			return false;
		}
		ch_loop_run_once(b->loop, 100);
	}
	return true;
}

void
tb_poll(tb *b)
{
	ch_loop_run_once(b->loop, 0);
}

bool
tb_poll_until(tb *b, uint64_t seq, int n)
{
	for (int i = 0; i < n && !answered(&b->reqs[seq - 1]); i++)
		tb_poll(b);
	return answered(&b->reqs[seq - 1]);
}

const tb_req *
tb_get(const tb *b, uint64_t seq)
{
	return &b->reqs[seq - 1];
}

void
tb_forget(tb *b, uint64_t seq)
{
	tb_req *r = &b->reqs[seq - 1];
	free(r->frame);
	r->frame = NULL;
	ch_buf_free(&r->resp);
}

void *
tb_decode(tb *b, uint64_t seq, ch_arena *a)
{
	return tb_decode_at(b, seq, b->reqs[seq - 1].version, a);
}

void *
tb_decode_at(tb *b, uint64_t seq, int16_t v, ch_arena *a)
{
	const tb_req *r = &b->reqs[seq - 1];
	const char *what = tb_name(r->key, v);
	const ch_api_codec *c = ch_api_codec_find(r->key);
	if (r->closes || r->replies != 1 || r->nones) {
		fprintf(stderr, "harness: %s: %d replies, %d none, %d closes; wanted one reply\n",
			what, r->replies, r->nones, r->closes);
		return NULL;
	}
	if (r->flatten_failed) {
		fprintf(stderr, "harness: %s: the response's file chunks cannot be read\n", what);
		return NULL;
	}
	/* ApiVersions answers with header v0 always (clients read it before
	 * they know what the broker speaks). */
	int hv = r->key != CH_APIKEY_API_VERSIONS && flexible(c, v) ? 1 : 0;
	ch_rd rd;
	ch_rd_init(&rd, r->resp.data, r->resp.len);
	ch_ResponseHeader h;
	if (ch_ResponseHeader_decode(&rd, a, (int16_t)hv, &h) != 0) {
		fprintf(stderr, "harness: %s: response header v%d does not decode\n", what, hv);
		return NULL;
	}
	if (h.CorrelationId != r->corr) {
		fprintf(stderr, "harness: %s: correlation id %d, sent %d\n", what, h.CorrelationId,
			r->corr);
		return NULL;
	}
	const uint8_t *body = rd.p;
	size_t body_len = ch_rd_left(&rd);
	void *m = ch_arena_alloc(a, c->resp_size);
	if (!m)
		abort();
	int rc = c->resp_decode(&rd, a, v, m);
	if (rc != 0 || ch_rd_left(&rd) != 0) {
		fprintf(stderr,
			"harness: %s: response body of %zu bytes: decode rc=%d err=%d, "
			"%zu bytes left over\n",
			what, body_len, rc, rd.err, ch_rd_left(&rd));
		return NULL;
	}
	ch_buf again;
	ch_buf_init(&again);
	c->resp_encode(&again, v, m);
	bool same = again.len == body_len && memcmp(again.data, body, body_len) == 0;
	if (!same) {
		size_t at = 0;
		while (at < again.len && at < body_len && again.data[at] == body[at])
			at++;
		fprintf(stderr,
			"harness: %s: response of %zu bytes re-encodes to %zu bytes, "
			"first difference at byte %zu\n",
			what, body_len, again.len, at);
	}
	ch_buf_free(&again);
	return same ? m : NULL;
}

void *
tb_call(tb *b, int16_t key, int16_t v, const void *body, ch_arena *a)
{
	uint64_t seq = tb_send(b, key, v, body);
	if (!tb_wait(b, seq))
		return NULL;
	return tb_decode(b, seq, a);
}

typedef struct create_wait {
	bool done;
	int16_t err;
	char msg[256];
} create_wait;

static void
created(void *ud, int16_t err, const char *msg)
{
	create_wait *w = ud;
	w->done = true;
	w->err = err;
	snprintf(w->msg, sizeof(w->msg), "%s", msg ? msg : "");
}

const ch_topic *
tb_create_topic(tb *b, const char *name, int32_t partitions)
{
	create_wait w = {false, 0, ""};
	ch_topics_txn *tx = ch_topics_begin(b->topics);
	int16_t err = ch_topics_create(tx, name, strlen(name), partitions, NULL, 0, false, NULL,
				       w.msg, sizeof(w.msg));
	ch_topics_commit(tx, created, &w);
	int64_t start = ch_now_mono_ms();
	while (!w.done && ch_now_mono_ms() - start < TB_BOUND_MS)
		ch_loop_run_once(b->loop, 100);
	const ch_topic *t = ch_topics_find(b->topics, name, strlen(name));
	if (err || !w.done || w.err || !t) {
		fprintf(stderr, "harness: cannot create topic %s: error %d/%d %s\n", name, err,
			w.err, w.msg);
		abort();
	}
	return t;
}

int16_t
tb_version(int16_t key, int i)
{
	const ch_api_handler *h = ch_api_handler_find(key);
	if (!h)
		abort();
	return (int16_t)CH_MAX(h->min_version, CH_MIN(h->max_version, i));
}

int
tb_steps(const int16_t *keys, size_t n)
{
	int steps = 0;
	for (size_t i = 0; i < n; i++) {
		const ch_api_handler *h = ch_api_handler_find(keys[i]);
		if (!h)
			abort();
		steps = CH_MAX(steps, h->max_version + 1);
	}
	return steps;
}
