/*
 * cl_conn.c: connections to brokers, on the I/O thread's event loop.
 *
 * A broker connection goes DOWN -> CONNECTING (non-blocking connect,
 * socket.connection.setup.timeout.ms) -> [TLS] -> APIVERSIONS -> [SASL] ->
 * UP [-> REAUTH -> UP ...]. TLS (SSL, SASL_SSL: cl_tls.c) runs its
 * handshake under the same setup timeout; SASL (cl_sasl.c) runs after
 * ApiVersions, its requests sent ahead of those waiting for UP; KIP-368
 * re-authentication holds new requests back (REAUTH) until those in flight
 * are answered, then runs the exchange again on the same connection. A
 * failed handshake or authentication is fatal for the client
 * (cl_conn_auth_failed), never retried in silence.
 *
 * ApiVersions is the first request on every connection: libcohort starts at the highest
 * ApiVersions it has, and on UNSUPPORTED_VERSION retries at the highest the
 * broker listed (the answer to an unsupported ApiVersions is v0, as Kafka's
 * KIP-511 says). Every later request is sent at the highest version both
 * sides support, or fails with COHORT_ERR__NO_COMMON_VERSION.
 *
 * Requests queue in `waiting` until the connection is UP, then go out in
 * order; answers come back in order (Kafka answers each connection's
 * requests in the order it got them) and are matched by correlation id.
 * A request older than request.timeout.ms closes the connection, as Kafka's
 * NetworkClient does: the timed-out request fails with TIMED_OUT, the
 * others on that connection with TRANSPORT. A failed or lost connection
 * fails everything queued on it; the owners retry with their own backoff.
 * The next connect waits reconnect.backoff.ms doubling per consecutive
 * failure up to reconnect.backoff.max.ms, with ±20 % jitter.
 */
#include "client/cl_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/ch_endian.h"
#include "common/ch_log.h"
#include "proto/ch_wr.h"

#include <openssl/ssl.h>

/* The versions libcohort speaks, per API: the lowest is the first that has
 * what the code needs (record batches v2 in Fetch v4+, MEMBER_ID_REQUIRED
 * in JoinGroup v4+, group.instance.id in SyncGroup/Heartbeat/LeaveGroup
 * v3+), the highest the codec's. */
static const struct {
	int16_t api, min;
} api_min[] = {
	{CH_APIKEY_FETCH, 4},        {CH_APIKEY_LIST_OFFSETS, 1},
	{CH_APIKEY_METADATA, 4},     {CH_APIKEY_OFFSET_COMMIT, 2},
	{CH_APIKEY_OFFSET_FETCH, 1}, {CH_APIKEY_FIND_COORDINATOR, 1},
	{CH_APIKEY_JOIN_GROUP, 4},   {CH_APIKEY_HEARTBEAT, 3},
	{CH_APIKEY_LEAVE_GROUP, 3},  {CH_APIKEY_SYNC_GROUP, 3},
	{CH_APIKEY_API_VERSIONS, 0}, {CH_APIKEY_PRODUCE, 3}, /* record batches v2 */
};

void
cl_api_range(int16_t api, int16_t *min, int16_t *max)
{
	const ch_api_codec *codec = ch_api_codec_find(api);
	*min = 0;
	*max = codec ? codec->max_version : -1;
	for (size_t i = 0; i < sizeof(api_min) / sizeof(api_min[0]); i++)
		if (api_min[i].api == api)
			*min = api_min[i].min;
}

int64_t
cl_backoff(int64_t base, int64_t max, int n)
{
	double v = (double)base;
	for (int i = 1; i < n && v < (double)max; i++)
		v *= 2;
	if (v > (double)max)
		v = (double)max;
	double jitter = 0.8 + 0.4 * ((double)rand() / RAND_MAX);
	int64_t r = (int64_t)(v * jitter);
	return r < 0 ? 0 : r;
}

static void broker_close(cl_broker *b, cohort_err err, const char *why);
static void out_reset(cl_broker *b);
static void broker_connect(cl_broker *b);
static void start_reauth(cl_broker *b);
static void broker_up(cl_broker *b);
static void broker_arm(cl_broker *b);
static void on_readable(ch_loop *loop, ch_io *io, unsigned ev);
static void on_writable(ch_loop *loop, ch_io *io, unsigned ev);

/* ---- queues ------------------------------------------------------------- */

/* Appends r at the tail of q; q holds r until q_pop hands it back. */
static void
q_push(cl_req_queue *q, cl_req *r)
{
	CH_FIFO_APPEND(q->head, q->tail, r);
}

/* Unlinks and returns the oldest request of q, or NULL when q is empty; the caller owns it. */
static cl_req *
q_pop(cl_req_queue *q)
{
	cl_req *r = q->head;
	if (r) {
		q->head = r->next;
		if (!q->head)
			q->tail = NULL;
	}
	return r;
}

/* Fail every request of q with err (q is taken first: callbacks may queue
 * new requests on the same broker). */
static void
q_fail(cl_client *c, cl_req_queue *q, cohort_err err)
{
	cl_req_queue taken = *q;
	q->head = q->tail = NULL;
	cl_req *r;
	while ((r = q_pop(&taken))) {
		r->done(c, err, r->version, NULL, r->ud);
		free(r);
	}
}

/* ---- brokers ------------------------------------------------------------ */

cl_broker *
cl_broker_find(cl_client *c, int32_t node_id)
{
	for (cl_broker *b = c->brokers; b; b = b->next)
		if (b->node_id == node_id)
			return b;
	return NULL;
}

/* The broker's timer: reconnects a DOWN broker with waiting requests once retry_at passed,
 * gives up a connect past the setup timeout, and closes the connection on a request timeout. */
static void
on_timer(ch_loop *loop, ch_timer *t, void *ud)
{
	cl_broker *b = ud;
	(void)t;
	int64_t now = ch_loop_now(loop);
	switch (b->state) {
	case CL_BROKER_DOWN:
		if (b->waiting.head && now >= b->retry_at)
			broker_connect(b);
		else
			broker_arm(b);
		return;
	case CL_BROKER_CONNECTING:
	case CL_BROKER_TLS:
		broker_close(b, COHORT_ERR__TIMED_OUT,
			     b->state == CL_BROKER_TLS ? "TLS handshake timed out"
						       : "connection setup timed out");
		return;
	case CL_BROKER_APIVERSIONS:
	case CL_BROKER_SASL:
	case CL_BROKER_UP:
	case CL_BROKER_REAUTH:
		if (b->state == CL_BROKER_UP && b->reauth_at && now >= b->reauth_at)
			start_reauth(b);
		for (cl_req **pp = &b->inflight.head; *pp; pp = &(*pp)->next) {
			cl_req *r = *pp;
			if (now < r->deadline)
				continue;
			/* the timed-out request gets TIMED_OUT, the rest TRANSPORT */
			*pp = r->next;
			if (b->inflight.tail == r) {
				b->inflight.tail = NULL;
				for (cl_req *x = b->inflight.head; x; x = x->next)
					b->inflight.tail = x;
			}
			char why[96];
			snprintf(why, sizeof(why), "request (api %d) timed out after %lld ms",
				 r->api, (long long)r->timeout_ms);
			broker_close(b, COHORT_ERR__TRANSPORT, why);
			r->done(b->c, COHORT_ERR__TIMED_OUT, r->version, NULL, r->ud);
			free(r);
			return;
		}
		broker_arm(b);
		return;
	}
}

cl_broker *
cl_broker_upsert(cl_client *c, int32_t node_id, const char *host, int32_t hlen, int port)
{
	cl_broker *b = cl_broker_find(c, node_id);
	if (b) {
		if ((int32_t)strlen(b->host) == hlen && memcmp(b->host, host, (size_t)hlen) == 0 &&
		    b->port == port)
			return b;
		char *h = strndup(host, (size_t)hlen);
		if (!h)
			return NULL;
		CH_LOGI(CL_LOG, "broker %d moved to %s:%d", node_id, h, port);
		broker_close(b, COHORT_ERR__TRANSPORT, "broker address changed");
		free(b->host);
		b->host = h;
		b->port = port;
		return b;
	}
	b = calloc(1, sizeof(*b));
	if (!b || !(b->host = strndup(host, (size_t)hlen))) {
		free(b);
		return NULL;
	}
	b->c = c;
	b->node_id = node_id;
	b->port = port;
	b->fd = -1;
	ch_buf_init(&b->out);
	ch_timer_init(&b->timer, on_timer, b);
	b->next = c->brokers;
	c->brokers = b;
	return b;
}

cl_broker *
cl_broker_any(cl_client *c)
{
	cl_broker *best = NULL;
	int best_rank = 99;
	for (cl_broker *b = c->brokers; b; b = b->next) {
		/* known brokers before bootstrap addresses, UP before connecting
		 * before down; among down ones the one allowed to retry first */
		int rank = b->state == CL_BROKER_UP ? 0 : b->state != CL_BROKER_DOWN ? 2 : 4;
		if (b->node_id < 0)
			rank++;
		if (rank < best_rank || (rank == best_rank && b->state == CL_BROKER_DOWN &&
					 b->retry_at < best->retry_at)) {
			best = b;
			best_rank = rank;
		}
	}
	return best;
}

/* The earliest moment the broker's timer must look at it. */
static void
broker_arm(cl_broker *b)
{
	ch_loop *loop = b->c->loop;
	int64_t at = -1;
	if (b->state == CL_BROKER_DOWN) {
		if (b->waiting.head)
			at = b->retry_at;
	} else if (b->state != CL_BROKER_CONNECTING && b->state != CL_BROKER_TLS) {
		for (cl_req *r = b->inflight.head; r; r = r->next)
			if (at < 0 || r->deadline < at)
				at = r->deadline;
		if (b->state == CL_BROKER_UP && b->reauth_at && (at < 0 || b->reauth_at < at))
			at = b->reauth_at;
	} else {
		return; /* armed by broker_connect for the setup timeout */
	}
	if (at < 0)
		ch_timer_cancel(loop, &b->timer);
	else
		ch_timer_arm(loop, &b->timer, at);
}

/* Drops the connection (if any), marks b DOWN with a backoff, and fails every in-flight and
 * waiting request with err; why (may be NULL) is logged only when a socket was open. */
static void
broker_close(cl_broker *b, cohort_err err, const char *why)
{
	cl_client *c = b->c;
	if (b->fd >= 0) {
		if (why)
			CH_LOGI(CL_LOG, "broker %d (%s:%d): %s", b->node_id, b->host, b->port, why);
		ch_io_remove(c->loop, &b->io);
		cl_tls_free(b);
		close(b->fd);
		b->fd = -1;
		ch_framer_free(&b->fr);
	}
	b->reauth_at = 0;
	if (b->state != CL_BROKER_UP && b->state != CL_BROKER_REAUTH)
		b->failures++;
	else
		b->failures = 0;
	b->state = CL_BROKER_DOWN;
	b->retry_at = ch_loop_now(c->loop) + cl_backoff(c->conf.reconnect_backoff_ms,
							c->conf.reconnect_backoff_max_ms,
							b->failures ? b->failures : 1);
	out_reset(b);
	ch_timer_cancel(c->loop, &b->timer);
	q_fail(c, &b->inflight, err);
	q_fail(c, &b->waiting, err);
	cl_sasl_free(b); /* after the failed requests' callbacks, which reach it */
	broker_arm(b);
}

/* ---- the output: out's bytes with the refs between them ------------------- */

#define OUT_IOV_MAX 64

/* Empties the output (everything written, or the connection closed). */
static void
out_reset(cl_broker *b)
{
	ch_buf_reset(&b->out);
	b->out_off = 0;
	b->n_refs = b->ref_i = 0;
	b->ref_off = 0;
	b->out_sent = b->out_total;
}

/* The pieces not written yet, in order, into iov (at least one while
 * anything is left); returns how many. */
static int
out_iov(const cl_broker *b, struct iovec *iov)
{
	int n = 0;
	size_t off = b->out_off, roff = b->ref_off;
	for (int32_t i = b->ref_i; n < OUT_IOV_MAX;) {
		size_t stop = i < b->n_refs ? b->refs[i].at : b->out.len;
		if (off < stop) {
			iov[n++] = (struct iovec){b->out.data + off, stop - off};
			off = stop;
		} else if (i < b->n_refs) {
			const struct cl_ref *r = &b->refs[i++];
			iov[n++] = (struct iovec){(void *)(uintptr_t)(r->p + roff), r->len - roff};
			roff = 0;
		} else {
			break;
		}
	}
	return n;
}

/* n more bytes were written. */
static void
out_advance(cl_broker *b, size_t n)
{
	b->out_sent += n;
	while (n > 0) {
		size_t stop = b->ref_i < b->n_refs ? b->refs[b->ref_i].at : b->out.len;
		if (b->out_off < stop) {
			size_t k = CH_MIN(n, stop - b->out_off);
			b->out_off += k;
			n -= k;
			continue;
		}
		const struct cl_ref *r = &b->refs[b->ref_i];
		size_t k = CH_MIN(n, r->len - b->ref_off);
		b->ref_off += k;
		n -= k;
		if (b->ref_off == r->len) {
			b->ref_i++;
			b->ref_off = 0;
		}
	}
}

/* Append the frame of request r (at r->version) to the output buffer. */
static void
frame_request(cl_broker *b, cl_req *r)
{
	cl_client *c = b->c;
	const ch_api_codec *codec = ch_api_codec_find(r->api);
	bool flex = codec->flex_version >= 0 && r->version >= codec->flex_version;
	size_t start = b->out.len;
	ch_wr_i32(&b->out, 0);
	ch_RequestHeader h;
	ch_RequestHeader_init(&h);
	h.RequestApiKey = r->api;
	h.RequestApiVersion = r->version;
	h.CorrelationId = r->corr = b->next_corr++;
	h.ClientId = ch_str_c(c->client_id);
	ch_RequestHeader_encode(&b->out, flex ? 2 : 1, &h);
	size_t len0 = b->out.len;
	b->framing_refs = 0;
	c->framing = r->noreply ? NULL : b;
	r->build(c, r->version, &b->out, r->ud);
	c->framing = NULL;
	if (ch_buf_ok(&b->out))
		ch_be_put32(b->out.data + start,
			    (uint32_t)(b->out.len - start - 4 + b->framing_refs));
	b->out_total += b->out.len - len0 + b->framing_refs + (len0 - start);
	r->end = b->out_total;
	r->deadline = ch_loop_now(c->loop) + r->timeout_ms;
}

void
cl_request_ref(cl_client *c, ch_buf *out, const void *p, size_t n)
{
	cl_broker *b = c->framing;
	if (n == 0)
		return;
	if (!b || out != &b->out) {
		ch_buf_append(out, p, n);
		return;
	}
	if (b->n_refs == b->cap_refs) {
		int32_t cap = b->cap_refs ? b->cap_refs * 2 : 8;
		struct cl_ref *nr = realloc(b->refs, sizeof(*nr) * (size_t)cap);
		if (!nr) {
			ch_buf_append(out, p, n); /* a copy still works */
			return;
		}
		b->refs = nr;
		b->cap_refs = cap;
	}
	b->refs[b->n_refs++] = (struct cl_ref){out->len, p, n};
	b->framing_refs += n;
}

/* A TLS error on an established session: before UP it is the peer refusing us (TLS 1.3
 * sends a rejected client certificate's alert after the handshake): an authentication
 * failure; later, a broken connection. */
static void
tls_failed(cl_broker *b, const char *why)
{
	if (b->state == CL_BROKER_UP || b->state == CL_BROKER_REAUTH) {
		broker_close(b, COHORT_ERR__TRANSPORT, why);
		return;
	}
	char msg[360];
	snprintf(msg, sizeof(msg), "SSL handshake failed: %s", why);
	cl_conn_auth_failed(b, COHORT_ERR__SSL, msg);
}

/* Writes b->out until done or EAGAIN (then waits for CH_IO_WRITE); closes the broker on a
 * send error or an earlier out-of-memory in b->out.  b must have an open fd. */
static void
flush_out(cl_broker *b)
{
	cl_client *c = b->c;
	if (!ch_buf_ok(&b->out)) {
		broker_close(b, COHORT_ERR__NOMEM, "out of memory");
		return;
	}
	while (b->out_off < b->out.len || b->ref_i < b->n_refs) {
		char tls_why[300];
		struct iovec iov[OUT_IOV_MAX];
		int niov = out_iov(b, iov);
		ssize_t n;
		if (b->ssl) { /* one piece at a time: SSL_write takes one buffer */
			n = cl_tls_send(b, iov[0].iov_base, iov[0].iov_len, tls_why,
					sizeof(tls_why));
		} else {
			struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
			n = sendmsg(b->fd, &mh, MSG_NOSIGNAL);
		}
		if (n == -2) {
			tls_failed(b, tls_why);
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				ch_io_modify(c->loop, &b->io, CH_IO_READ | CH_IO_WRITE);
				return;
			}
			char why[128];
			snprintf(why, sizeof(why), "send failed: %s", strerror(errno));
			broker_close(b, COHORT_ERR__TRANSPORT, why);
			return;
		}
		out_advance(b, (size_t)n);
	}
	out_reset(b);
	ch_io_modify(c->loop, &b->io, CH_IO_READ);
}

/* Send request r now (the connection is UP): pick its version. */
static void
send_now(cl_broker *b, cl_req *r)
{
	int16_t min, max;
	cl_api_range(r->api, &min, &max);
	int16_t bmin = r->api < CL_API_KEYS ? b->vmin[r->api] : 0;
	int16_t bmax = r->api < CL_API_KEYS ? b->vmax[r->api] : -1;
	if (r->max_version >= 0)
		max = CH_MIN(max, r->max_version);
	min = CH_MAX(min, r->min_version);
	int16_t v = CH_MIN(max, bmax);
	if (bmax < 0 || v < CH_MAX(min, bmin)) {
		CH_LOGW(CL_LOG, "broker %d serves api %d at v%d-v%d, libcohort needs v%d-v%d",
			b->node_id, r->api, bmin, bmax, min, max);
		r->done(b->c, COHORT_ERR__NO_COMMON_VERSION, -1, NULL, r->ud);
		free(r);
		return;
	}
	r->version = v;
	frame_request(b, r);
	if (r->noreply) {
		r->done(b->c, COHORT_OK, v, NULL, r->ud);
		free(r);
		return;
	}
	q_push(&b->inflight, r);
	broker_arm(b);
}

/* Sends every waiting request once b is UP (stops if one of them closes b), then flushes. */
static void
send_waiting(cl_broker *b)
{
	cl_req *r;
	while (b->state == CL_BROKER_UP && (r = q_pop(&b->waiting)))
		send_now(b, r);
	if (b->state == CL_BROKER_UP)
		flush_out(b);
}

/* ---- ApiVersions ---------------------------------------------------------- */

/* Encodes the ApiVersions request body (client software name and version) at version. */
static void
build_apiversions(cl_client *c, int16_t version, ch_buf *b, void *ud)
{
	(void)c;
	(void)ud;
	ch_ApiVersionsRequest m;
	ch_ApiVersionsRequest_init(&m);
	m.ClientSoftwareName = CH_STR_LIT("libcohort");
	m.ClientSoftwareVersion = CH_STR_LIT(COHORT_VERSION_STR);
	ch_ApiVersionsRequest_encode(b, version, &m);
}

static void send_apiversions(cl_broker *b);

/* ApiVersions answer: retries lower on UNSUPPORTED_VERSION, else records the ranges, marks b UP
 * and sends what waited. An answer that does not decode closes the connection (as Java's
 * NetworkClient does): what waited fails and its owners retry after the reconnect backoff. */
static void
done_apiversions(cl_client *c, cohort_err err, int16_t version, void *resp, void *ud)
{
	cl_broker *b = ud;
	(void)c;
	(void)version;
	if (err) {
		/* BAD_MSG or NOMEM from handle_frame: the connection is still open,
		 * with nothing in flight; the other errors come from broker_close */
		if (b->state == CL_BROKER_APIVERSIONS)
			broker_close(b, COHORT_ERR__TRANSPORT,
				     err == COHORT_ERR__BAD_MSG
					     ? "ApiVersions answer does not decode"
					     : "out of memory");
		return;
	}
	ch_ApiVersionsResponse *m = resp;
	if (m->ErrorCode == CH_KERR_UNSUPPORTED_VERSION) {
		int16_t broker_max = -1;
		for (int32_t i = 0; i < m->ApiKeys_n; i++)
			if (m->ApiKeys[i].ApiKey == CH_APIKEY_API_VERSIONS)
				broker_max = m->ApiKeys[i].MaxVersion;
		if (broker_max >= 0 && broker_max < b->apiversions_version) {
			b->apiversions_version = broker_max;
			send_apiversions(b);
			return;
		}
	}
	if (m->ErrorCode) {
		char why[96];
		snprintf(why, sizeof(why), "ApiVersions failed: %s", ch_kerr_name(m->ErrorCode));
		broker_close(b, COHORT_ERR__TRANSPORT, why);
		return;
	}
	for (int k = 0; k < CL_API_KEYS; k++)
		b->vmin[k] = 0, b->vmax[k] = -1;
	for (int32_t i = 0; i < m->ApiKeys_n; i++) {
		int16_t k = m->ApiKeys[i].ApiKey;
		if (k >= 0 && k < CL_API_KEYS) {
			b->vmin[k] = m->ApiKeys[i].MinVersion;
			b->vmax[k] = m->ApiKeys[i].MaxVersion;
		}
	}
	if (b->c->sasl_mech >= 0) {
		b->state = CL_BROKER_SASL;
		cl_sasl_start(b);
		return;
	}
	broker_up(b);
}

void
cl_conn_send_setup(cl_broker *b, int16_t api, int16_t version, cl_build_fn build, cl_resp_fn done,
		   void *ud)
{
	cl_req *r = calloc(1, sizeof(*r));
	if (!r) {
		broker_close(b, COHORT_ERR__NOMEM, "out of memory");
		return;
	}
	r->api = api;
	r->version = version;
	r->timeout_ms = b->c->conf.request_timeout_ms;
	r->max_version = -1;
	r->build = build;
	r->done = done;
	r->ud = ud;
	frame_request(b, r);
	q_push(&b->inflight, r);
	broker_arm(b);
	flush_out(b);
}

/* Frames and sends ApiVersions at b->apiversions_version ahead of any waiting request; the
 * request goes straight to inflight (b is not UP yet). */
static void
send_apiversions(cl_broker *b)
{
	cl_conn_send_setup(b, CH_APIKEY_API_VERSIONS, b->apiversions_version, build_apiversions,
			   done_apiversions, b);
}

void
cl_conn_close(cl_broker *b, cohort_err err, const char *why)
{
	broker_close(b, err, why);
}

void
cl_conn_auth_failed(cl_broker *b, cohort_err err, const char *why)
{
	cl_client *c = b->c;
	CH_LOGW(CL_LOG, "broker %d (%s:%d): authentication failed: %s", b->node_id, b->host,
		b->port, why);
	cl_lock(c);
	if (!c->auth_error)
		c->auth_error = strdup(why); /* NULL when out of memory: the code still tells */
	if (!c->fatal)
		c->fatal = err;
	pthread_cond_broadcast(&c->cond);
	cl_unlock(c);
	broker_close(b, err, NULL);
}

/* Marks b UP (first exchange or re-authentication) and sends what waited. */
static void
broker_up(cl_broker *b)
{
	b->state = CL_BROKER_UP;
	b->failures = 0;
	CH_LOGD(CL_LOG, "broker %d (%s:%d) up", b->node_id, b->host, b->port);
	send_waiting(b);
	if (b->state == CL_BROKER_UP)
		broker_arm(b);
}

void
cl_conn_sasl_done(cl_broker *b, int64_t session_ms)
{
	/* KIP-368: Java's client re-authenticates at 85-95 % of the session */
	b->reauth_at = 0;
	if (session_ms > 0) {
		double f = 0.85 + 0.10 * ((double)rand() / RAND_MAX);
		b->reauth_at = ch_loop_now(b->c->loop) + (int64_t)((double)session_ms * f);
		if (b->reauth_at <= ch_loop_now(b->c->loop))
			b->reauth_at = ch_loop_now(b->c->loop) + 1;
	}
	broker_up(b);
}

/* The re-authentication time came (UP): new requests wait; the exchange starts once nothing
 * is in flight (handle_frame calls this again after each answer). */
static void
start_reauth(cl_broker *b)
{
	if (b->state == CL_BROKER_UP) {
		CH_LOGD(CL_LOG, "broker %d: re-authenticating (KIP-368)", b->node_id);
		b->state = CL_BROKER_REAUTH;
		b->reauth_at = 0;
	}
	if (b->state == CL_BROKER_REAUTH && !b->inflight.head && !b->sasl)
		cl_sasl_start(b);
}

/* ---- connecting --------------------------------------------------------- */

static void start_apiversions(cl_broker *b);

/* The TLS handshake of b advanced (CL_BROKER_TLS): done starts ApiVersions, a failure is
 * fatal (cl_conn_auth_failed). */
static void
tls_step(cl_broker *b)
{
	char why[360];
	int rc = cl_tls_handshake(b, why, sizeof(why));
	if (rc == CH_AGAIN)
		return;
	if (rc == CH_ERR) {
		cl_conn_auth_failed(b, COHORT_ERR__SSL, why);
		return;
	}
	CH_LOGD(CL_LOG, "broker %d (%s:%d): TLS %s", b->node_id, b->host, b->port,
		SSL_get_version(b->ssl));
	start_apiversions(b);
}

/* The TCP connection of b is established: TLS first when configured, else ApiVersions. */
static void
connected(cl_broker *b)
{
	int one = 1;
	setsockopt(b->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (b->c->tls) {
		if (!cl_tls_start(b)) {
			broker_close(b, COHORT_ERR__NOMEM, "cannot start TLS (out of memory)");
			return;
		}
		b->state = CL_BROKER_TLS; /* the setup timer stays armed */
		tls_step(b);
		return;
	}
	start_apiversions(b);
}

/* Starts the framer and the ApiVersions request on b's connection. */
static void
start_apiversions(cl_broker *b)
{
	b->state = CL_BROKER_APIVERSIONS;
	ch_timer_cancel(b->c->loop, &b->timer);
	ch_framer_init(&b->fr, INT32_MAX);
	int16_t min;
	cl_api_range(CH_APIKEY_API_VERSIONS, &min, &b->apiversions_version);
	send_apiversions(b);
}

/* Starts a non-blocking connect to b's address (resolved with a blocking getaddrinfo);
 * failure closes b with a backoff, in-progress arms the connection setup timeout. */
static void
broker_connect(cl_broker *b)
{
	cl_client *c = b->c;
	char port[16];
	snprintf(port, sizeof(port), "%d", b->port);
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC};
	struct addrinfo *res = NULL;
	/* getaddrinfo blocks: fine for numeric addresses and local names */
	int rc = getaddrinfo(b->host, port, &hints, &res);
	if (rc != 0 || !res) {
		char why[160];
		snprintf(why, sizeof(why), "cannot resolve %s: %s", b->host, gai_strerror(rc));
		b->fd = -1;
		broker_close(b, COHORT_ERR__TRANSPORT, NULL);
		CH_LOGW(CL_LOG, "%s", why);
		return;
	}
	int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		freeaddrinfo(res);
		broker_close(b, COHORT_ERR__TRANSPORT, NULL);
		return;
	}
	rc = connect(fd, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	b->fd = fd;
	ch_io_init(&b->io, fd, on_readable, on_writable, b);
	if (ch_io_add(c->loop, &b->io, CH_IO_WRITE) != CH_OK) {
		broker_close(b, COHORT_ERR__SYSTEM, "epoll registration failed");
		return;
	}
	if (rc == 0) {
		b->state = CL_BROKER_CONNECTING;
		ch_timer_arm(c->loop, &b->timer,
			     ch_loop_now(c->loop) + c->conf.socket_connection_setup_timeout_ms);
		connected(b);
		return;
	}
	if (errno != EINPROGRESS) {
		char why[128];
		snprintf(why, sizeof(why), "connect failed: %s", strerror(errno));
		broker_close(b, COHORT_ERR__TRANSPORT, why);
		return;
	}
	b->state = CL_BROKER_CONNECTING;
	ch_timer_arm(c->loop, &b->timer,
		     ch_loop_now(c->loop) + c->conf.socket_connection_setup_timeout_ms);
}

/* ---- I/O callbacks ------------------------------------------------------- */

/* Writable fd: finishes a pending connect (SO_ERROR) or continues flushing b->out. */
static void
on_writable(ch_loop *loop, ch_io *io, unsigned ev)
{
	(void)loop;
	(void)ev;
	cl_broker *b = io->ud;
	if (b->state == CL_BROKER_CONNECTING) {
		int err = 0;
		socklen_t len = sizeof(err);
		getsockopt(b->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err) {
			char why[128];
			snprintf(why, sizeof(why), "connect failed: %s", strerror(err));
			broker_close(b, COHORT_ERR__TRANSPORT, why);
			return;
		}
		connected(b);
		return;
	}
	if (b->state == CL_BROKER_TLS) {
		tls_step(b);
		return;
	}
	flush_out(b);
	if (b->fd >= 0 && b->tls_read_wants_write) {
		b->tls_read_wants_write = false;
		on_readable(loop, io, ev);
	}
}

/* One complete response frame: match it with the oldest request. */
static void
handle_frame(cl_broker *b, uint8_t *frame, size_t len)
{
	cl_client *c = b->c;
	cl_req *r = b->inflight.head;
	ch_rd rd;
	ch_rd_init(&rd, frame, len);
	int32_t corr = ch_rd_i32(&rd);
	if (!r || !ch_rd_ok(&rd) || corr != r->corr) {
		char why[96];
		snprintf(why, sizeof(why), "response with unexpected correlation id %d", corr);
		broker_close(b, COHORT_ERR__TRANSPORT, why);
		return;
	}
	if (b->out_sent < r->end) {
		/* its bytes (maybe a caller's, cl_request_ref) are still queued:
		 * the callback must not run before they are written */
		broker_close(b, COHORT_ERR__TRANSPORT, "response before its request was sent");
		return;
	}
	q_pop(&b->inflight);
	const ch_api_codec *codec = ch_api_codec_find(r->api);
	bool flex = codec->flex_version >= 0 && r->version >= codec->flex_version;
	if (flex && r->api != CH_APIKEY_API_VERSIONS) /* ApiVersions: header v0 always */
		ch_rd_skip_tags(&rd);
	int16_t version = r->version;
	if (r->api == CH_APIKEY_API_VERSIONS && ch_rd_left(&rd) >= 2 &&
	    (int16_t)((rd.p[0] << 8) | rd.p[1]) == CH_KERR_UNSUPPORTED_VERSION)
		version = 0; /* KIP-511: the error answer is v0 */
	ch_arena a;
	ch_arena_init(&a);
	void *msg = ch_arena_alloc(&a, codec->resp_size);
	cohort_err err = COHORT_ERR__NOMEM;
	if (msg) {
		codec->resp_init(msg);
		err = codec->resp_decode(&rd, &a, version, msg) == 0 ? COHORT_OK
								     : COHORT_ERR__BAD_MSG;
	}
	if (err == COHORT_ERR__BAD_MSG)
		CH_LOGW(CL_LOG, "broker %d: undecodable %s v%d response", b->node_id, codec->name,
			version);
	r->done(c, err, version, err ? NULL : msg, r->ud);
	free(r);
	ch_arena_free(&a);
	if (b->state == CL_BROKER_REAUTH)
		start_reauth(b);
	if (b->state != CL_BROKER_DOWN)
		broker_arm(b);
}

/* Reads up to 16 buffers and hands each complete frame to handle_frame; stops when a
 * callback closed (or replaced) b's connection; closes b on EOF, recv error or bad frame. */
static void
on_readable(ch_loop *loop, ch_io *io, unsigned ev)
{
	(void)loop;
	cl_broker *b = io->ud;
	if (b->state == CL_BROKER_CONNECTING) {
		on_writable(loop, io, ev);
		return;
	}
	if (b->state == CL_BROKER_TLS) {
		tls_step(b);
		return;
	}
	uint8_t buf[65536];
	int fd = b->fd;
	for (int rounds = 0; rounds < 16 && b->fd == fd; rounds++) {
		char tls_why[300];
		ssize_t n = b->ssl ? cl_tls_recv(b, buf, sizeof(buf), tls_why, sizeof(tls_why))
				   : recv(fd, buf, sizeof(buf), 0);
		if (n == -2) {
			tls_failed(b, tls_why);
			return;
		}
		if (n == 0) {
			broker_close(b, COHORT_ERR__TRANSPORT, "connection closed by the broker");
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			char why[128];
			snprintf(why, sizeof(why), "recv failed: %s", strerror(errno));
			broker_close(b, COHORT_ERR__TRANSPORT, why);
			return;
		}
		size_t off = 0;
		while (off < (size_t)n && b->fd == fd) {
			size_t used = 0;
			int rc = ch_framer_feed(&b->fr, buf + off, (size_t)n - off, &used);
			off += used;
			if (rc == CH_ERR) {
				broker_close(b, COHORT_ERR__TRANSPORT, b->fr.err);
				return;
			}
			if (rc == CH_AGAIN)
				break;
			size_t len;
			uint8_t *frame = ch_framer_take(&b->fr, &len);
			handle_frame(b, frame, len);
			free(frame);
		}
		/* a TLS read returns one record (16 KB at most): read on until EAGAIN */
		if ((size_t)n < sizeof(buf) && !b->ssl)
			return;
	}
}

/* ---- the public side of this file ---------------------------------------- */

void
cl_request(cl_broker *b, int16_t api, cl_build_fn build, cl_resp_fn done, void *ud)
{
	cl_request_timeout(b, api, b->c->conf.request_timeout_ms, build, done, ud);
}

void
cl_request_timeout(cl_broker *b, int16_t api, int64_t timeout_ms, cl_build_fn build,
		   cl_resp_fn done, void *ud)
{
	cl_request_ex(b, api, -1, timeout_ms, build, done, ud);
}

/* cl_request_ex's body; noreply: the broker sends no answer. */
static void
request(cl_broker *b, int16_t api, int16_t min_version, int16_t max_version, int64_t timeout_ms,
	bool noreply, cl_build_fn build, cl_resp_fn done, void *ud)
{
	cl_client *c = b->c;
	cl_req *r = calloc(1, sizeof(*r));
	if (!r || c->closing) {
		free(r);
		done(c, r ? COHORT_ERR__CLOSED : COHORT_ERR__NOMEM, -1, NULL, ud);
		return;
	}
	r->noreply = noreply;
	r->api = api;
	r->timeout_ms = CH_MAX(timeout_ms, (int64_t)c->conf.request_timeout_ms);
	r->max_version = max_version;
	r->min_version = min_version;
	r->build = build;
	r->done = done;
	r->ud = ud;
	if (b->state == CL_BROKER_UP) {
		send_now(b, r);
		flush_out(b);
		return;
	}
	q_push(&b->waiting, r);
	if (b->state == CL_BROKER_DOWN) {
		if (ch_loop_now(c->loop) >= b->retry_at)
			broker_connect(b);
		else
			broker_arm(b);
	}
}

void
cl_request_ex(cl_broker *b, int16_t api, int16_t max_version, int64_t timeout_ms, cl_build_fn build,
	      cl_resp_fn done, void *ud)
{
	request(b, api, 0, max_version, timeout_ms, false, build, done, ud);
}

void
cl_request_min(cl_broker *b, int16_t api, int16_t min_version, cl_build_fn build, cl_resp_fn done,
	       void *ud)
{
	request(b, api, min_version, -1, b->c->conf.request_timeout_ms, false, build, done, ud);
}

void
cl_request_noreply(cl_broker *b, int16_t api, cl_build_fn build, cl_resp_fn done, void *ud)
{
	request(b, api, 0, -1, b->c->conf.request_timeout_ms, true, build, done, ud);
}

void
cl_brokers_close(cl_client *c, cohort_err err)
{
	for (cl_broker *b = c->brokers; b; b = b->next)
		broker_close(b, err, NULL);
}

void
cl_brokers_free(cl_client *c)
{
	cl_brokers_close(c, COHORT_ERR__CLOSED);
	cl_broker *b = c->brokers;
	while (b) {
		cl_broker *next = b->next;
		ch_timer_cancel(c->loop, &b->timer);
		ch_buf_free(&b->out);
		free(b->refs);
		free(b->host);
		free(b);
		b = next;
	}
	c->brokers = NULL;
}
