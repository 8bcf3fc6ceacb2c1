/*
 * ch_server: the Kafka TCP server on a ch_loop.
 *
 * It accepts connections, cuts the byte stream into frames (ch_frame.h),
 * hands every frame to on_request, and writes responses back in request
 * order. It knows nothing about Kafka beyond the 4-byte size prefix: the
 * api/ layer decodes the frame and builds the response.
 *
 * Request lifecycle, per connection:
 *
 *   frame complete --> on_request(ud, c, seq, frame, len)        [pending]
 *                  --> ch_conn_respond(c, seq, resp) once, now or later
 *                      resp == NULL: no response (Produce acks=0)  [done]
 *                  --> queued behind earlier requests, then written
 *
 * `seq` numbers the requests of one connection 0, 1, 2... Responses leave
 * in seq order even when handlers finish out of order (a JoinGroup parked
 * for seconds holds back the responses to later requests on the same
 * connection, exactly like a Kafka broker). The frame stays valid, at the
 * same address, until its response is submitted; the server frees it then.
 * ch_conn_respond never calls back into on_request: it only queues, and the
 * server writes queued responses just before the loop sleeps.
 *
 * Connection lifetime: a ch_conn is reference counted. The socket holds one
 * reference and every pending request holds one, so a connection whose
 * peer vanished stays valid (ch_conn_is_closed() true) until each of its
 * pending requests has been answered; answering a closed connection just
 * frees the response. on_close is called once, when the socket goes away
 * (peer EOF, error, protocol error, idle timeout, ch_conn_close, server
 * free), before the socket's reference is dropped. After ch_conn_respond
 * returns, `c` may be freed unless the caller holds a reference of its own
 * (ch_conn_keep / ch_conn_release).
 *
 * Backpressure: a connection stops being read while it has max_inflight
 * requests pending (answered-but-unsent ones count, they hold a slot in the
 * order queue), or more than max_queued_bytes of responses not yet written
 * to the socket. Bytes already read past that point are stashed and
 * processed when it resumes. A paused connection still notices its peer
 * hanging up.
 *
 * Idle reaping (connections.max.idle.ms): a connection with no pending
 * request and no bytes in or out for idle_ms is closed with an INFO log.
 * Unsent responses don't keep it alive: a reader that made no progress for
 * idle_ms is as good as gone (Kafka's rule is last activity too). One timer
 * per connection, re-armed lazily: when it fires it checks the last
 * activity instead of being moved on every read.
 *
 * Everything here runs on the loop thread. Worker threads hand results over
 * with ch_loop_post() and respond from there.
 */
#ifndef CH_SERVER_H
#define CH_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event/ch_loop.h"
#include "net/ch_resp.h"

typedef struct ch_server ch_server;
typedef struct ch_conn ch_conn;
typedef struct ch_tls_ctx ch_tls_ctx; /* net/ch_tls.h */

#define CH_SERVER_MAX_LISTENERS 8

#define CH_SERVER_DEFAULT_MAX_REQUEST_BYTES 104857600 /* socket.request.max.bytes */
#define CH_SERVER_DEFAULT_IDLE_MS 600000              /* connections.max.idle.ms */
#define CH_SERVER_DEFAULT_MAX_INFLIGHT 64
#define CH_SERVER_DEFAULT_MAX_QUEUED_BYTES (16u << 20)

/* Connection limits (Kafka's ConnectionQuotas), asked for at every accept so
 * that a dynamic config change applies to the next connection. */
typedef struct ch_conn_limits {
	int32_t max_connections;          /* all listeners; at it, accepting waits */
	int32_t max_listener_connections; /* this listener's; at it, it waits */
	int32_t max_creation_rate;        /* new connections/s, all listeners; then wait */
	int32_t max_per_ip;               /* at it, a new one is accepted and closed */
} ch_conn_limits;

typedef struct ch_server_opts {
	/* Listen address: "" or "0.0.0.0" = all interfaces (IPv4 and, for "",
	 * IPv6 too when available), an IPv4/IPv6 literal ("::1" or "[::1]"),
	 * or a host name (the first address that binds). */
	const char *host;
	int port;        /* 0: ephemeral, see ch_server_port() */
	int tag;         /* this listener's tag (ch_conn_listener); more: ch_server_listen */
	ch_tls_ctx *tls; /* NULL: plaintext; else TLS with it (not owned) */
	int32_t max_request_bytes; /* 0: default; a larger frame closes the conn */
	int64_t idle_ms;           /* 0: default; < 0: never reap */
	int max_inflight;          /* 0: default; pending requests per conn */
	size_t max_queued_bytes;   /* 0: default; unsent bytes per conn */
	/* queued.max.request.bytes: the memory all connections' requests may
	 * hold, from the size prefix until the answer (<= 0: unbounded). A
	 * connection whose next frame does not fit is muted (not read, not
	 * closed) until memory frees; as Kafka's non-strict pool, a frame is
	 * admitted while any memory is left, so one larger than the rest fits. */
	int64_t max_request_memory;
	/* A request whose bytes have not all arrived this long after its first
	 * byte closes the connection (<= 0: never). Time the connection is
	 * muted by us (memory, in-flight limits) does not count. */
	int64_t request_receive_timeout_ms;

	/* Optional: the limits for a connection on listener tag from ip (an
	 * address literal; NULL when asked before accepting, for the others). */
	void (*limits)(void *ud, int tag, const char *ip, ch_conn_limits *out);
	/* Optional: called once for each socket accepted from ip, before the
	 * per-address count (Kafka's per-IP connection rate quota): > 0 holds
	 * the socket unread for that many ms, then closes it (it is no
	 * connection: no on_open, not counted). */
	int64_t (*ip_throttle)(void *ud, const char *ip);

	/* Every complete frame (size prefix stripped). Must lead to exactly one
	 * ch_conn_respond(c, seq, ...) eventually. */
	void (*on_request)(void *ud, ch_conn *c, uint64_t seq, const uint8_t *frame, size_t len);
	/* Optional: a connection was accepted (set per-connection state here). */
	void (*on_open)(void *ud, ch_conn *c);
	/* Optional: the connection's socket went away (see lifetime above). */
	void (*on_close)(void *ud, ch_conn *c);
	void *ud;
	/* Optional: where ch_server_new writes why it failed (the cause alone,
	 * e.g. "Name or service not known"), NUL-terminated. */
	char *err;
	size_t errlen;
} ch_server_opts;

/* Fill in the defaults (host "127.0.0.1", port 9092, Kafka's limits). */
void ch_server_opts_init(ch_server_opts *o);

/* Bind, listen and start accepting. Returns NULL and logs an ERROR when the
 * address cannot be used. Ignores SIGPIPE process-wide: sendfile() has no
 * MSG_NOSIGNAL, and a vanished peer must not kill the broker. */
ch_server *ch_server_new(ch_loop *loop, const ch_server_opts *opts);
/* Another listening socket (up to CH_SERVER_MAX_LISTENERS in all), host as in
 * ch_server_opts; its connections carry tag and use tls (NULL: plaintext; not
 * owned, must outlive the server). CH_ERR with the cause in err. */
int ch_server_listen(ch_server *s, const char *host, int port, int tag, ch_tls_ctx *tls, char *err,
		     size_t errlen);
/* The bound port of the first listener (the ephemeral one when opts.port was 0). */
int ch_server_port(const ch_server *s);
/* The bound port of the listener with this tag, or -1. */
int ch_server_listener_port(const ch_server *s, int tag);
/* Stop accepting; existing connections carry on. Idempotent. */
void ch_server_stop(ch_server *s);
/* Stop, close every connection (on_close for each) and free the server.
 * Connections with pending requests live on, closed, until answered. */
void ch_server_free(ch_server *s);
/* Open connections. */
size_t ch_server_conn_count(const ch_server *s);
/* Counters for /metrics, since the server started. */
typedef struct ch_server_stats {
	uint64_t accepted, closed; /* connections */
	uint64_t bytes_in;         /* read from sockets */
	uint64_t bytes_out;        /* written (writev and sendfile) */
	uint64_t receive_timeouts; /* connections closed: a request too slow to arrive */
	uint64_t rejected_per_ip;  /* connections closed at once: max_per_ip */
	uint64_t throttled_ip;     /* sockets held, then closed: ip_throttle */
	uint64_t accept_waits;     /* times accepting paused for a connection limit */
	/* gauges */
	int64_t request_memory;  /* bytes held by requests (max_request_memory's pool) */
	uint64_t memory_waiters; /* connections muted until request memory frees */
} ch_server_stats;
const ch_server_stats *ch_server_get_stats(const ch_server *s);

/* Submit the response to request `seq` (see the lifecycle above). */
void ch_conn_respond(ch_conn *c, uint64_t seq, ch_resp *resp);
/* Close now (protocol error). Pending requests must still be answered. */
void ch_conn_close(ch_conn *c);
bool ch_conn_is_closed(const ch_conn *c);
/* "ip:port" of the peer; "[v6addr]:port" for IPv6. Valid while c is. */
const char *ch_conn_peer(const ch_conn *c);
/* Unique for the life of the process, starting at 1. */
uint64_t ch_conn_id(const ch_conn *c);
/* Per-connection state of the API layer (not freed by the server). */
void ch_conn_set_ud(ch_conn *c, void *ud);
void *ch_conn_get_ud(const ch_conn *c);
/* The tag of the listener that accepted c. */
int ch_conn_listener(const ch_conn *c);
/* The principal an authorizer checks ("User:ANONYMOUS" until someone sets it:
 * the TLS handshake with a client certificate, or SASL). Valid while c is. */
const char *ch_conn_principal(const ch_conn *c);
void ch_conn_set_principal(ch_conn *c, const char *principal);
/* Largest request frame from now on (0: the server's max_request_bytes):
 * sasl.server.max.receive.size until a connection has authenticated. */
void ch_conn_set_max_request(ch_conn *c, int32_t max_bytes);
/* Stop reading and sending; after delay_ms send what is queued (what the
 * socket takes at once) and close (a failed authentication:
 * connection.failed.authentication.delay.ms). Kafka's order: its Selector
 * holds the failure's answer for the delay too, so a client guessing
 * passwords learns each answer only after it. Pending requests must still
 * be answered (their answers wait with the rest). */
void ch_conn_close_later(ch_conn *c, int64_t delay_ms);
/* Stop reading for ms (a client quota's throttle; Kafka mutes the channel
 * after the answer): answers queued and to come are still sent. A longer
 * throttle extends a shorter one. */
void ch_conn_throttle(ch_conn *c, int64_t ms);
/* Requests received and not yet answered. */
size_t ch_conn_pending(const ch_conn *c);
/* Extra references, for holding on to a connection across callbacks. */
void ch_conn_keep(ch_conn *c);
void ch_conn_release(ch_conn *c);

#endif
