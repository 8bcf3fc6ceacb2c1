/*
 * ch_http: the admin HTTP listener (admin.listeners) on a ch_loop, served by
 * libmicrohttpd (MHD).
 *
 * Integration: MHD serves the sockets on a thread of its own (poll), so no
 * HTTP client, slow or hostile, costs the event loop any I/O. Pages are
 * rendered on the loop thread: the MHD thread queues the request, suspends
 * the connection and wakes the loop through an eventfd; the loop calls the
 * handler, which reads the broker's and the coordinator's state directly
 * (no lock, no snapshot: counters on the Kafka path stay plain increments),
 * then resumes the connection and MHD sends the page. docs/NOTES.md says
 * why not MHD's external-epoll mode.
 *
 * Requests: GET and HEAD only (others: 405 with Allow); the handler maps a
 * path to a status, a content type and a body. Malformed HTTP is answered
 * by MHD (400, 413, 431...) or the connection is closed. At most
 * CH_HTTP_MAX_CONNS connections at once; idle ones are closed after
 * CH_HTTP_IDLE_S seconds.
 */
#ifndef CH_HTTP_H
#define CH_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "common/ch_buf.h"
#include "event/ch_loop.h"

#define CH_HTTP_MAX_CONNS 64
#define CH_HTTP_IDLE_S 30

typedef struct ch_http ch_http;

/* What a handler answers. body starts empty (ch_buf_init'ed); the handler
 * appends to it. content_type must be a static string.
 *
 * A page that needs work reading no loop state (the admin API's what-if
 * runs assignors on a copy of a group) sets finish: it is then called once
 * on the HTTP thread with finish_ud, after the loop's part and before the
 * reply is sent, to complete status, content type and body; or with out
 * NULL when the request went away first, to free finish_ud only. The
 * loop is not blocked meanwhile (other admin requests wait for it). */
typedef struct ch_http_reply {
	int status; /* 200 unless the handler says otherwise */
	const char *content_type;
	ch_buf body;
	void (*finish)(struct ch_http_reply *out, void *finish_ud);
	void *finish_ud;
	/* An event stream (server-sent events, text/event-stream): the
	 * connection stays open and gets every event ch_http_publish sends,
	 * the latest one first; body is ignored. */
	bool stream;
} ch_http_reply;

/* Called on the loop thread for every GET/HEAD; path is the URL path as sent
 * (percent-escapes kept), query its query string as sent ("" for none:
 * "a=1&b=x%20y", arguments in order, escapes kept). */
typedef void (*ch_http_handler_fn)(void *ud, const char *path, const char *query,
				   ch_http_reply *out);

/*
 * Binds host:port (host as in listeners: "" all interfaces, a name, an IPv4
 * or IPv6 literal; port 0 ephemeral) and starts serving on loop.
 * @returns the listener, or NULL with the reason in err.
 */
ch_http *ch_http_new(ch_loop *loop, const char *host, int port, ch_http_handler_fn fn, void *ud,
		     char *err, size_t errlen);
/* The bound port. */
int ch_http_port(const ch_http *h);
/* Loop thread: ev (len bytes, one or more complete "event: ...\ndata:
 * ...\n\n" blocks, copied) to every open event stream, and to each one
 * opened later as its first event. A stream still sending the previous
 * event finishes it first; one that falls behind skips to the latest. */
void ch_http_publish(ch_http *h, const char *ev, size_t len);
/* Closes every connection and the listener. NULL is a no-op. */
void ch_http_free(ch_http *h);

#endif
