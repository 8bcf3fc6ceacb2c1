/*
 * ch_server.c: listener, connections, framing, ordered responses.
 * Contracts in ch_server.h.
 *
 * Reading: one 64 KiB read buffer is shared by every connection (there is
 * one loop thread); complete frames are copied out into their own
 * allocations, which the pending request owns. A frame whose remainder is
 * larger than that buffer is read straight into its own allocation instead
 * (ch_framer_direct), so big Produce requests are copied once.
 *
 * Per-connection order queue: a ring of slots indexed by seq. head_seq is
 * the oldest request whose response has not yet moved to the send queue;
 * next_seq the next to be assigned. A response moves to the send queue when
 * every earlier one has. Ring size (next_seq - head_seq) is what
 * max_inflight bounds.
 *
 * Deferred work: responses, stashed input and failures found inside an API
 * call are not acted on in place. The connection goes on the server's
 * pending list, which the before-sleep hook works off: run the stash, write
 * queued responses (one sendmsg for many), close doomed connections. That
 * keeps on_request and on_close from ever being re-entered from inside
 * ch_conn_respond, and batches writes.
 *
 * References: the socket holds one, each pending request one, the pending
 * list one per queued connection, and every callback path takes a
 * temporary one (hold/release) around code that may close the connection.
 * The struct is freed when the count reaches zero, never earlier.
 */
#include "net/ch_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "common/ch_common.h"
#include "common/ch_log.h"
#include "common/ch_map.h"
#include "net/ch_frame.h"
#include "net/ch_resp_int.h"
#include "net/ch_tls.h"

#define CH_RBUF_SIZE (64 * 1024)   /* shared read buffer */
#define CH_READ_BUDGET (1u << 20)  /* bytes read per readable event */
#define CH_WRITE_BUDGET (4u << 20) /* bytes written per flush */
#define CH_SENDFILE_MAX (1u << 30) /* bytes per sendfile call */
#define CH_IOV_MAX 64
#define CH_ACCEPT_BATCH 128    /* accepts per readable event */
#define CH_ACCEPT_PAUSE_MS 100 /* back-off after EMFILE and friends */
#define CH_LISTEN_BACKLOG 4096
#define CH_TLS_WRITE_CHUNK (16u * 1024) /* plaintext per SSL_write: one record */

typedef struct ch_slot {
	uint8_t *frame; /* owned until answered */
	size_t held;    /* bytes of the request memory pool it holds */
	ch_resp *resp;  /* answered, waiting for earlier requests */
	bool done;      /* answered */
} ch_slot;

struct ch_conn {
	ch_server *srv; /* NULL once closed */
	ch_loop *loop;
	ch_io io;
	int fd; /* -1 once closed */
	uint64_t id;
	char peer[64];
	int refs;
	bool closed;        /* socket gone; on_close has run */
	bool doomed;        /* close at the next safe point */
	bool write_blocked; /* the socket said EAGAIN: wait for EPOLLOUT */
	bool queued;        /* on srv->pending */
	bool reading;       /* in conn_on_read, which flushes and sets interest after */
	void *ud;           /* API layer's */

	ch_framer fr;
	ch_buf stash; /* read but not yet framed (paused mid-buffer) */
	size_t stash_off;
	size_t fr_held;        /* pool bytes reserved for the frame being read */
	bool mem_wait;         /* muted: its next frame waits for pool memory */
	ch_conn *mnext;        /* srv->mem_wait list */
	int64_t frame_started; /* when the partial frame's first byte came; 0: none */
	ch_timer recv_timer;   /* request_receive_timeout_ms */

	ch_slot *ring; /* order queue, ring_cap slots (power of two) */
	size_t ring_cap;
	uint64_t head_seq;
	uint64_t next_seq;
	size_t npending; /* not yet answered */

	ch_resp *sq_head; /* send queue */
	ch_resp *sq_tail;
	size_t out_bytes; /* unsent bytes in the send queue, prefixes included */

	ch_timer idle;
	int64_t last_active;
	ch_timer close_timer;    /* ch_conn_close_later */
	int64_t throttled_until; /* ch_conn_throttle: not read before; 0: not throttled */
	ch_timer throttle_timer;
	bool closing; /* ch_conn_close_later: reads and sends no more until close_timer */

	int tag; /* the listener's */
	struct ch_listen *lst;
	ch_map_entry *ip_entry; /* srv->ip_counts: this peer address's count */
	char *principal;        /* NULL: User:ANONYMOUS */

	/* TLS (listener with a ch_tls_ctx): every byte goes through ssl. */
	SSL *ssl;
	ch_tls_ctx *tls;
	bool tls_handshaking;     /* until SSL_do_handshake succeeds */
	bool tls_hs_want_write;   /* the handshake waits for EPOLLOUT (else EPOLLIN) */
	bool tls_read_want_write; /* SSL_read needs the socket writable first */
	bool tls_read_pending;    /* plaintext buffered in ssl: read it before sleeping */

	ch_conn *prev; /* srv->conns */
	ch_conn *next;
	ch_conn *pnext; /* srv->pending */
};

/* One listening socket; its connections carry its tag (and its TLS context). */
typedef struct ch_listen {
	ch_server *srv;
	int fd;
	ch_io io;
	bool watching; /* its io is in the loop: it accepts */
	size_t nconns; /* open connections it accepted */
	int port;      /* bound */
	int tag;
	ch_tls_ctx *tls; /* NULL: plaintext */
} ch_listen;

struct ch_server {
	ch_loop *loop;
	ch_server_opts opts;
	ch_listen ls[CH_SERVER_MAX_LISTENERS];
	size_t nls;
	bool stopped;
	ch_timer accept_timer;    /* resumes accepting after EMFILE or a creation-rate wait */
	ch_timer limit_timer;     /* re-reads the connection limits while at one */
	struct held_socket *held; /* ip_throttle's, by close time */
	ch_timer held_timer;      /* closes the first of them */
	ch_map ip_counts;         /* peer address -> open connections (uintptr_t) */
	double rate_tokens;       /* max_creation_rate's bucket: connections accepted now */
	int64_t rate_at;          /* when it was last filled; 0: never */
	ch_conn *conns;
	size_t nconns;
	ch_conn *pending;
	ch_conn *mem_wait_head, *mem_wait_tail; /* FIFO, a reference each */
	ch_hook *hook;
	uint8_t *rbuf;
	uint8_t *tls_wbuf; /* CH_TLS_WRITE_CHUNK of plaintext gathered for SSL_write */
	ch_server_stats stats;
};

static atomic_uint_fast64_t conn_ids;

static void conn_teardown(ch_conn *c);
static void recv_clock(ch_conn *c);
static void accept_update(ch_server *s);
static ch_map_entry *ip_count_add(ch_server *s, const struct sockaddr_storage *ss);
static void ip_count_drop(ch_server *s, ch_map_entry *e);
static void update_interest(ch_conn *c);

/* ---- references -------------------------------------------------------- */

/* Frees the connection's memory once its last reference is gone: the order
 * ring's frames and responses, the framer, the stash. */
static void
conn_free(ch_conn *c)
{
	for (size_t i = 0; i < c->ring_cap; i++) {
		free(c->ring[i].frame);
		ch_resp_free(c->ring[i].resp);
	}
	free(c->ring);
	ch_framer_free(&c->fr);
	ch_buf_free(&c->stash);
	free(c->principal);
	SSL_free(c->ssl);
	free(c);
}

void
ch_conn_keep(ch_conn *c)
{
	c->refs++;
}

void
ch_conn_release(ch_conn *c)
{
	if (--c->refs == 0)
		conn_free(c);
}

/* Puts the connection on the server's list for the before-sleep pass (stash,
 * flush, doom), once, holding a reference. */
static void
queue_pending(ch_conn *c)
{
	if (c->queued || c->closed)
		return;
	c->queued = true;
	c->refs++;
	c->pnext = c->srv->pending;
	c->srv->pending = c;
}

/* ---- order queue and send queue ---------------------------------------- */

static inline ch_slot *
slot_of(ch_conn *c, uint64_t seq)
{
	return &c->ring[seq & (c->ring_cap - 1)];
}

/* Doubles the order ring (a power of two, indexed by seq) keeping the slots
 * of requests in flight. */
static void
ring_grow(ch_conn *c)
{
	size_t cap = c->ring_cap ? c->ring_cap * 2 : 4;
	ch_slot *ring = ch_xcalloc(cap, sizeof(*ring));
	for (uint64_t s = c->head_seq; s < c->next_seq; s++)
		ring[s & (cap - 1)] = *slot_of(c, s);
	free(c->ring);
	c->ring = ring;
	c->ring_cap = cap;
}

/* Whether c may start another request: open, not doomed, fewer than max_inflight requests in
 * its order queue and at most max_queued_bytes queued to send. */
static bool
can_dispatch(const ch_conn *c)
{
	if (c->closed || c->doomed || c->closing || c->mem_wait || c->throttled_until)
		return false;
	const ch_server_opts *o = &c->srv->opts;
	return c->next_seq - c->head_seq < (uint64_t)o->max_inflight &&
	       c->out_bytes <= o->max_queued_bytes;
}

/* Log now, close at the next safe point (we may be inside an API call). */
static void
conn_doom(ch_conn *c)
{
	c->doomed = true;
	queue_pending(c);
}

/* Frames a finished response (its 4-byte size) and queues it for sending; a
 * response that ran out of memory or is too large to frame dooms the
 * connection instead. */
static void
send_queue_push(ch_conn *c, ch_resp *r)
{
	if (r->bad) {
		CH_LOGE("net", "closing connection from %s: response ran out of memory", c->peer);
		ch_resp_free(r);
		conn_doom(c);
		return;
	}
	if (r->total > INT32_MAX) {
		CH_LOGE("net", "closing connection from %s: response of %zu bytes cannot be framed",
			c->peer, r->total);
		ch_resp_free(r);
		conn_doom(c);
		return;
	}
	uint32_t n = (uint32_t)r->total;
	r->hdr[0] = (uint8_t)(n >> 24);
	r->hdr[1] = (uint8_t)(n >> 16);
	r->hdr[2] = (uint8_t)(n >> 8);
	r->hdr[3] = (uint8_t)n;
	r->hdr_sent = 0;
	r->cur = r->head;
	r->cur_off = 0;
	CH_FIFO_APPEND(c->sq_head, c->sq_tail, r);
	c->out_bytes += 4 + r->total;
	/* Activity: the idle timer may fire before the flush this iteration. */
	c->last_active = ch_loop_now(c->loop);
}

/* Drops every response not yet sent (the connection is closing). */
static void
send_queue_clear(ch_conn *c)
{
	while (c->sq_head) {
		ch_resp *r = c->sq_head;
		c->sq_head = r->next;
		ch_resp_free(r);
	}
	c->sq_tail = NULL;
	c->out_bytes = 0;
}

/* Account n bytes written from the head of the send queue. */
static void
send_queue_advance(ch_conn *c, size_t n)
{
	c->out_bytes -= n;
	while (c->sq_head) {
		ch_resp *r = c->sq_head;
		if (r->hdr_sent < 4) {
			size_t k = CH_MIN((size_t)(4 - r->hdr_sent), n);
			r->hdr_sent += (uint8_t)k;
			n -= k;
		}
		while (r->hdr_sent == 4 && r->cur && n > 0) {
			size_t k = CH_MIN(r->cur->len - r->cur_off, n);
			r->cur_off += k;
			n -= k;
			if (r->cur_off == r->cur->len) {
				r->cur = r->cur->next;
				r->cur_off = 0;
			}
		}
		if (r->hdr_sent < 4 || r->cur)
			break; /* head response not finished */
		c->sq_head = r->next;
		if (!c->sq_head)
			c->sq_tail = NULL;
		ch_resp_free(r); /* releases file chunks */
	}
}

/*
 * Write as much of the send queue as the socket takes, up to a budget.
 * Returns CH_OK (queue empty), CH_AGAIN (more to write; write_blocked set)
 * or CH_ERR (connection torn down).
 */
/* n bytes of the send queue went out: cursors, counters, activity. */
static void
wrote(ch_conn *c, size_t n)
{
	send_queue_advance(c, n);
	c->srv->stats.bytes_out += (uint64_t)n;
	c->last_active = ch_loop_now(c->loop);
}

/* Copies up to cap bytes of the send queue, from its cursors on (which it
 * does not move), into out: prefixes, memory, made and file chunks alike.
 * Returns the bytes copied, or -1 when a chunk cannot be had (a made chunk
 * failed, a file is shorter than promised: errno). */
static ssize_t
gather(ch_conn *c, uint8_t *out, size_t cap)
{
	size_t n = 0;
	for (ch_resp *r = c->sq_head; r && n < cap; r = r->next) {
		bool head = r == c->sq_head;
		size_t hs = head ? r->hdr_sent : 0;
		if (hs < 4) {
			size_t k = CH_MIN((size_t)(4 - hs), cap - n);
			memcpy(out + n, r->hdr + hs, k);
			n += k;
		}
		ch_chunk *ck = head ? r->cur : r->head;
		size_t off = head ? r->cur_off : 0;
		for (; ck && n < cap; ck = ck->next, off = 0) {
			while (off < ck->len && n < cap) {
				size_t k;
				if (ck->is_file) {
					ssize_t got = pread(ck->fd, out + n,
							    CH_MIN(ck->len - off, cap - n),
							    ck->off + (off_t)off);
					if (got <= 0) {
						if (got == 0)
							errno = EIO;
						return -1;
					}
					k = (size_t)got;
				} else if (ck->fill) {
					const uint8_t *p;
					size_t avail;
					if (ch_chunk_made_at(ck, off, &p, &avail) != CH_OK) {
						errno = EIO;
						return -1;
					}
					k = CH_MIN(avail, cap - n);
					memcpy(out + n, p, k);
				} else {
					k = CH_MIN(ck->len - off, cap - n);
					memcpy(out + n, ck->mem.data + off, k);
				}
				off += k;
				n += k;
			}
		}
	}
	return (ssize_t)n;
}

/* flush() for a TLS connection: the send queue in records of at most
 * CH_TLS_WRITE_CHUNK plaintext bytes. A write that OpenSSL must retry is
 * retried with the same bytes from the same cursors (they move only once
 * SSL_write took the bytes). Same returns as flush(). */
static int
flush_tls(ch_conn *c)
{
	size_t total = 0;
	c->write_blocked = false;
	while (c->sq_head) {
		if (total >= CH_WRITE_BUDGET) {
			c->write_blocked = true;
			return CH_AGAIN;
		}
		ssize_t want = gather(c, c->srv->tls_wbuf, CH_TLS_WRITE_CHUNK);
		if (want <= 0) {
			CH_LOGE("net",
				"closing connection from %s: a response could not be completed",
				c->peer);
			conn_teardown(c);
			return CH_ERR;
		}
		ERR_clear_error();
		int n = SSL_write(c->ssl, c->srv->tls_wbuf, (int)want);
		if (n <= 0) {
			int e = SSL_get_error(c->ssl, n);
			if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
				c->write_blocked = true;
				return CH_AGAIN;
			}
			char why[160];
			CH_LOGD("net", "TLS write to %s: %s", c->peer,
				e == SSL_ERROR_SYSCALL ? strerror(errno)
						       : ch_tls_error(why, sizeof(why)));
			conn_teardown(c);
			return CH_ERR;
		}
		wrote(c, (size_t)n);
		total += (size_t)n;
	}
	return CH_OK;
}

static int
flush(ch_conn *c)
{
	if (c->ssl)
		return flush_tls(c);
	size_t total = 0;
	c->write_blocked = false;
	while (c->sq_head) {
		if (total >= CH_WRITE_BUDGET) {
			/* Fairness: let others run; EPOLLOUT brings us back at once. */
			c->write_blocked = true;
			return CH_AGAIN;
		}
		struct iovec iov[CH_IOV_MAX];
		int niov = 0;
		size_t want = 0;
		ch_chunk *file = NULL;
		for (ch_resp *r = c->sq_head; r && niov < CH_IOV_MAX; r = r->next) {
			if (r->hdr_sent < 4) {
				iov[niov].iov_base = r->hdr + r->hdr_sent;
				iov[niov].iov_len = 4u - r->hdr_sent;
				want += iov[niov++].iov_len;
			}
			ch_chunk *ck = r->cur;
			size_t off = r->cur_off;
			bool partial = false; /* a made chunk has more to make */
			for (; ck && niov < CH_IOV_MAX; ck = ck->next, off = 0) {
				if (ck->is_file)
					break;
				if (ck->fill) {
					const uint8_t *p;
					size_t n;
					if (ch_chunk_made_at(ck, off, &p, &n) != CH_OK) {
						CH_LOGE("net",
							"closing connection from %s: a response "
							"could not be completed",
							c->peer);
						conn_teardown(c);
						return CH_ERR;
					}
					iov[niov].iov_base = (void *)(uintptr_t)p;
					iov[niov].iov_len = n;
					want += iov[niov++].iov_len;
					if (off + n < ck->len) {
						partial = true;
						break;
					}
					continue;
				}
				iov[niov].iov_base = ck->mem.data + off;
				iov[niov].iov_len = ck->len - off;
				want += iov[niov++].iov_len;
			}
			if (partial)
				break;
			if (ck) { /* a file chunk, or out of iovecs */
				if (niov == 0)
					file = ck;
				break;
			}
		}
		ssize_t n;
		if (niov > 0) {
			struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)niov};
			n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		} else {
			ch_resp *r = c->sq_head;
			off_t off = file->off + (off_t)r->cur_off;
			want = CH_MIN(file->len - r->cur_off, (size_t)CH_SENDFILE_MAX);
			n = sendfile(c->fd, file->fd, &off, want);
			if (n == 0) {
				CH_LOGE("net",
					"closing connection from %s: file chunk is shorter "
					"than promised (%zu bytes missing)",
					c->peer, file->len - r->cur_off);
				conn_teardown(c);
				return CH_ERR;
			}
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				c->write_blocked = true;
				return CH_AGAIN;
			}
			CH_LOGD("net", "write to %s: %s", c->peer, strerror(errno));
			conn_teardown(c);
			return CH_ERR;
		}
		wrote(c, (size_t)n);
		total += (size_t)n;
		if (niov > 0 && (size_t)n < want) {
			/* The socket buffer is full; don't spend a syscall on EAGAIN. */
			c->write_blocked = true;
			return CH_AGAIN;
		}
	}
	return CH_OK;
}

/* ---- request memory (queued.max.request.bytes) ------------------------ */

static void pool_wake(ch_server *s);

/* Whether the pool has memory left (or is unbounded). */
static bool
pool_room(const ch_server *s)
{
	return s->opts.max_request_memory <= 0 ||
	       s->stats.request_memory < s->opts.max_request_memory;
}

/* The frame being read holds n bytes of the pool. */
static void
pool_hold(ch_conn *c, size_t n)
{
	c->fr_held = n;
	c->srv->stats.request_memory += (int64_t)n;
}

/* Reserves pool bytes for the frame whose size prefix just arrived; false
 * (nothing reserved) when the pool is spent. Non-strict, as Kafka's
 * SimpleMemoryPool for requests: a frame is admitted while any memory is
 * left, so the pool can overshoot by one frame and a frame larger than the
 * whole pool still gets in. */
static bool
pool_reserve(ch_conn *c)
{
	if (!pool_room(c->srv))
		return false;
	pool_hold(c, c->fr.size);
	return true;
}

/* Gives n bytes back and lets muted connections read again. */
static void
pool_release(ch_server *s, size_t n)
{
	if (!s || n == 0)
		return;
	s->stats.request_memory -= (int64_t)n;
	if (s->mem_wait_head)
		pool_wake(s);
}

/* Mutes c (can_dispatch is false) until its frame's memory is reserved;
 * the wait list holds a reference. */
static void
pool_wait(ch_conn *c)
{
	ch_server *s = c->srv;
	c->mem_wait = true;
	c->refs++;
	c->mnext = NULL;
	if (s->mem_wait_tail)
		s->mem_wait_tail->mnext = c;
	else
		s->mem_wait_head = c;
	s->mem_wait_tail = c;
	s->stats.memory_waiters++;
	CH_LOGD("net", "%s muted: %lld of queued.max.request.bytes=%lld held by requests", c->peer,
		(long long)s->stats.request_memory, (long long)s->opts.max_request_memory);
}

/* Takes c off the wait list (it is closing); the list's reference is
 * dropped by the caller's teardown path. */
static void
pool_unwait(ch_conn *c)
{
	ch_server *s = c->srv;
	ch_conn **pp = &s->mem_wait_head, *prev = NULL;
	while (*pp && *pp != c) {
		prev = *pp;
		pp = &(*pp)->mnext;
	}
	if (!*pp)
		return;
	*pp = c->mnext;
	if (s->mem_wait_tail == c)
		s->mem_wait_tail = prev;
	c->mnext = NULL;
	c->mem_wait = false;
	s->stats.memory_waiters--;
	ch_conn_release(c);
}

/* Admits muted connections, oldest first, while the pool has memory. */
static void
pool_wake(ch_server *s)
{
	while (s->mem_wait_head) {
		if (!pool_room(s))
			return;
		ch_conn *c = s->mem_wait_head;
		s->mem_wait_head = c->mnext;
		if (!s->mem_wait_head)
			s->mem_wait_tail = NULL;
		c->mnext = NULL;
		c->mem_wait = false;
		s->stats.memory_waiters--;
		(void)pool_reserve(c);                   /* there is memory: it succeeds */
		c->frame_started = ch_loop_now(c->loop); /* the muted time is ours */
		if (c->ssl)
			c->tls_read_pending = true; /* OpenSSL may hold its bytes */
		queue_pending(c);
		ch_conn_release(c); /* the list's; the pending list holds one */
	}
}

/* ---- reading ----------------------------------------------------------- */

/* Gives one whole request frame an order slot and a sequence number and
 * hands it to the api layer; the request holds a reference on the connection
 * until answered. */
static void
dispatch(ch_conn *c, uint8_t *frame, size_t len)
{
	if (c->next_seq - c->head_seq == c->ring_cap)
		ring_grow(c);
	uint64_t seq = c->next_seq++;
	ch_slot *sl = slot_of(c, seq);
	sl->frame = frame;
	sl->held = c->fr_held;
	c->fr_held = 0;
	c->frame_started = 0;
	sl->resp = NULL;
	sl->done = false;
	c->npending++;
	c->refs++; /* the request's reference */
	c->srv->opts.on_request(c->srv->opts.ud, c, seq, frame, len);
}

/* Frame and dispatch bytes while the connection may take requests. Returns
 * the bytes consumed. Never touches p after a callback closed c. */
static size_t
feed(ch_conn *c, const uint8_t *p, size_t n)
{
	size_t off = 0;
	while (off < n && can_dispatch(c)) {
		/* A whole frame in the buffer (most requests): one copy, when the
		 * pool has memory (as pool_reserve after a prefix). */
		size_t len;
		uint8_t *frame;
		if (pool_room(c->srv) &&
		    (frame = ch_framer_whole(&c->fr, p + off, n - off, &len))) {
			off += 4 + len;
			pool_hold(c, len);
			dispatch(c, frame, len);
			continue;
		}
		size_t used;
		int rc = ch_framer_feed(&c->fr, p + off, n - off, &used);
		off += used;
		if (rc == CH_ERR) {
			CH_LOGW("net", "closing connection from %s: %s", c->peer, c->fr.err);
			conn_teardown(c);
			break;
		}
		if (rc == CH_FRAME_SIZED) {
			if (!pool_reserve(c))
				pool_wait(c); /* stops the loop: the rest is stashed */
			continue;
		}
		if (rc == CH_OK) {
			frame = ch_framer_take(&c->fr, &len);
			dispatch(c, frame, len);
		}
	}
	return off;
}

/* Feeds bytes read earlier while the connection was paused, as far as it
 * takes requests now; frees the stash once used up. */
static void
process_stash(ch_conn *c)
{
	if (c->stash.len == c->stash_off || !can_dispatch(c))
		return;
	size_t used = feed(c, c->stash.data + c->stash_off, c->stash.len - c->stash_off);
	if (c->closed)
		return;
	c->stash_off += used;
	if (c->stash_off == c->stash.len) {
		ch_buf_free(&c->stash); /* don't keep 64 KiB on an idle conn */
		c->stash_off = 0;
	}
	recv_clock(c);
}

/* One read from the socket, through TLS when the connection has it: > 0
 * bytes, 0 the peer closed, -1 with errno (EAGAIN: nothing now; a TLS read
 * that needs the socket writable sets tls_read_want_write). */
static ssize_t
conn_recv(ch_conn *c, uint8_t *dst, size_t room)
{
	if (!c->ssl)
		return recv(c->fd, dst, room, 0);
	ERR_clear_error();
	int n = SSL_read(c->ssl, dst, (int)CH_MIN(room, (size_t)INT_MAX));
	if (n > 0)
		return n;
	int e = SSL_get_error(c->ssl, n);
	if (e == SSL_ERROR_WANT_READ) {
		errno = EAGAIN;
		return -1;
	}
	if (e == SSL_ERROR_WANT_WRITE) {
		c->tls_read_want_write = true;
		errno = EAGAIN;
		return -1;
	}
	if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && errno == 0))
		return 0; /* close_notify, or EOF */
	if (e == SSL_ERROR_SSL &&
	    ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
		ERR_clear_error();
		return 0; /* a peer that closed without close_notify: most clients */
	}
	if (e == SSL_ERROR_SSL) {
		char why[160];
		CH_LOGD("net", "TLS read from %s: %s", c->peer, ch_tls_error(why, sizeof(why)));
		errno = EPROTO;
	}
	return -1;
}

/* A request partly arrived starts its receive clock (once per request; the
 * timer is armed only for requests that span reads, so a request that comes
 * in one read costs nothing). */
static void
recv_clock(ch_conn *c)
{
	if (c->closed || c->mem_wait || c->srv->opts.request_receive_timeout_ms <= 0)
		return;
	int64_t limit = c->srv->opts.request_receive_timeout_ms;
	if (ch_framer_pending(&c->fr) == 0) {
		c->frame_started = 0;
		return;
	}
	if (!c->frame_started)
		c->frame_started = ch_loop_now(c->loop);
	if (!ch_timer_armed(&c->recv_timer))
		ch_timer_arm(c->loop, &c->recv_timer, c->frame_started + limit);
}

/* request_receive_timeout_ms: closes a connection whose request has not
 * all arrived in time since its first byte, however steadily it trickles
 * (each byte resets the idle timer, so connections.max.idle.ms alone keeps
 * such a client forever, in Kafka too). */
static void
conn_on_recv_timer(ch_loop *loop, ch_timer *t, void *ud)
{
	ch_conn *c = ud;
	if (c->closed || !c->frame_started || c->mem_wait)
		return;           /* recv_clock arms it again for the next partial request */
	if (c->throttled_until) { /* muted by a quota: that time is ours */
		ch_timer_arm(loop, t, c->throttled_until + c->srv->opts.request_receive_timeout_ms);
		return;
	}
	int64_t due = c->frame_started + c->srv->opts.request_receive_timeout_ms;
	if (ch_loop_now(loop) < due) {
		ch_timer_arm(loop, t, due);
		return;
	}
	CH_LOGW("net",
		"closing connection from %s: a request of %zu bytes is still incomplete %lld ms "
		"after its first byte (%zu bytes arrived; socket.request.receive.timeout.ms)",
		c->peer, c->fr.hdr_got == 4 ? c->fr.size : (size_t)0,
		(long long)(ch_loop_now(loop) - c->frame_started), ch_framer_pending(&c->fr));
	c->srv->stats.receive_timeouts++;
	conn_teardown(c);
}

/* throttle_timer: the quota's mute is over; read again (what was stashed,
 * what OpenSSL holds, then the socket). */
static void
conn_on_throttle_timer(ch_loop *loop, ch_timer *t, void *ud)
{
	CH_UNUSED(loop);
	CH_UNUSED(t);
	ch_conn *c = ud;
	c->throttled_until = 0;
	if (c->closed)
		return;
	if (c->frame_started)
		c->frame_started = ch_loop_now(c->loop); /* the muted time was ours */
	if (c->ssl)
		c->tls_read_pending = true;
	queue_pending(c);
}

/* Reads at most CH_READ_BUDGET bytes, straight into the framer's buffer
 * when a large frame is being read, framing and dispatching requests until
 * the connection pauses (in-flight or queued-bytes limits). */
static void
conn_read(ch_conn *c)
{
	size_t total = 0;
	while (!c->closed && total < CH_READ_BUDGET) {
		size_t room;
		uint8_t *dst = ch_framer_direct(&c->fr, CH_RBUF_SIZE, &room);
		bool direct = dst != NULL;
		if (!direct) {
			dst = c->srv->rbuf;
			room = CH_RBUF_SIZE;
		}
		ssize_t n = conn_recv(c, dst, room);
		if (n == 0) {
			CH_LOGD("net", "%s closed the connection", c->peer);
			conn_teardown(c);
			break;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK) {
				CH_LOGD("net", "read from %s: %s", c->peer, strerror(errno));
				conn_teardown(c);
			}
			break;
		}
		total += (size_t)n;
		c->srv->stats.bytes_in += (uint64_t)n;
		c->last_active = ch_loop_now(c->loop);
		if (direct) {
			if (ch_framer_advance(&c->fr, (size_t)n) == CH_OK) {
				size_t len;
				uint8_t *frame = ch_framer_take(&c->fr, &len);
				dispatch(c, frame, len);
			}
		} else {
			size_t used = feed(c, dst, (size_t)n);
			if (!c->closed && used < (size_t)n) {
				/* Paused mid-buffer: keep the rest for later. */
				ch_buf_append(&c->stash, dst + used, (size_t)n - used);
				break;
			}
		}
		/* A short plaintext read means the socket is empty; TLS reads a
		 * record at a time, so only EAGAIN says that. */
		if (c->closed || !can_dispatch(c) || (!c->ssl && (size_t)n < room))
			break;
	}
	recv_clock(c);
}

/* The TLS handshake, one step: on success the peer's principal is set
 * (or the connection refused when no mapping rule applies) and reading
 * starts; on failure the connection is closed with an INFO line, as Kafka
 * logs a failed authentication. */
static void
conn_handshake(ch_conn *c)
{
	ERR_clear_error();
	int r = SSL_do_handshake(c->ssl);
	c->last_active = ch_loop_now(c->loop);
	if (r == 1) {
		c->tls_handshaking = false;
		char p[1100];
		if (ch_tls_principal(c->tls, c->ssl, p, sizeof(p)) != 0) {
			CH_LOGI("net",
				"closing TLS connection from %s: no ssl.principal.mapping.rules "
				"rule applies to %s",
				c->peer, p);
			conn_teardown(c);
			return;
		}
		if (strcmp(p, "User:ANONYMOUS") != 0)
			ch_conn_set_principal(c, p);
		CH_LOGD("net", "TLS handshake with %s done: %s, %s, %s", c->peer,
			SSL_get_version(c->ssl), SSL_get_cipher_name(c->ssl), ch_conn_principal(c));
		c->tls_read_pending = true; /* the first request may already be in */
		queue_pending(c);
		return;
	}
	int e = SSL_get_error(c->ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		c->tls_hs_want_write = e == SSL_ERROR_WANT_WRITE;
		update_interest(c);
		return;
	}
	char why[200];
	if (e == SSL_ERROR_SYSCALL)
		snprintf(why, sizeof(why), "%s", errno ? strerror(errno) : "peer closed");
	else
		ch_tls_error(why, sizeof(why));
	/* At once, as Kafka: its failed-authentication delay applies to the
	 * SASL exchange only (KafkaChannel.prepare delays a failure of
	 * authenticate(), not of the TLS handshake). */
	CH_LOGI("net", "TLS handshake with %s failed: %s", c->peer, why);
	conn_teardown(c);
}

/* Readable: the handshake, or reads (conn_read), then recomputes interest. */
static void
conn_on_read(ch_loop *loop, ch_io *io, unsigned revents)
{
	CH_UNUSED(loop);
	ch_conn *c = io->ud;
	ch_conn_keep(c);
	if (!(c->io.events & CH_IO_READ)) {
		/* Paused: only a hang-up or error brings us here. */
		if (revents & (CH_IO_HUP | CH_IO_ERR)) {
			CH_LOGD("net", "%s hung up with reading paused", c->peer);
			conn_teardown(c);
		}
		goto out;
	}
	if (c->tls_handshaking) {
		conn_handshake(c);
		goto out;
	}
	/* Answers given while reading are sent now, not before sleeping: what
	 * was answered at once (most requests) is written and freed before the
	 * next connection's frames are read, so the allocator hands the same
	 * few blocks round (glibc's per-thread cache holds 7 of a size; an
	 * iteration of 100 readable connections would overflow it), and the
	 * connection skips the before-sleep pass. */
	c->reading = true;
	conn_read(c);
	c->reading = false;
	if (!c->closed && c->sq_head && !c->write_blocked && !c->closing)
		(void)flush(c);
	if (!c->closed)
		update_interest(c);
out:
	ch_conn_release(c);
}

/* Writable again: flushes what the socket pushed back. */
static void
conn_on_write(ch_loop *loop, ch_io *io, unsigned revents)
{
	CH_UNUSED(loop);
	CH_UNUSED(revents);
	ch_conn *c = io->ud;
	ch_conn_keep(c);
	if (c->tls_handshaking) {
		conn_handshake(c);
	} else {
		if (c->tls_read_want_write) {
			c->tls_read_want_write = false;
			conn_read(c);
		}
		if (!c->closed && !c->closing && flush(c) != CH_ERR)
			update_interest(c);
	}
	ch_conn_release(c);
}

/* Recompute what to wait for: read while requests may be taken (stash
 * first), write while the socket pushed back. */
static void
update_interest(ch_conn *c)
{
	if (c->closed)
		return;
	unsigned ev = 0;
	if (c->tls_handshaking) {
		ev = c->tls_hs_want_write ? CH_IO_WRITE : CH_IO_READ;
	} else {
		if (can_dispatch(c)) {
			if (c->stash.len > c->stash_off) {
				queue_pending(c);
			} else {
				ev |= CH_IO_READ;
				/* Plaintext OpenSSL holds is no event for epoll. */
				if (c->ssl && SSL_pending(c->ssl) > 0) {
					c->tls_read_pending = true;
					queue_pending(c);
				}
			}
		}
		/* A connection closing later sends nothing until its timer. */
		if ((c->write_blocked || c->tls_read_want_write) && !c->closing)
			ev |= CH_IO_WRITE;
	}
	if (ch_io_modify(c->loop, &c->io, ev) != CH_OK) {
		CH_LOGE("net", "epoll_ctl for %s: %s", c->peer, strerror(errno));
		conn_doom(c);
	}
}

/* ---- connection lifetime ----------------------------------------------- */

/* The idle timer: closes a connection that has no request in flight and
 * has neither read nor queued anything for idle_ms; else re-arms for the
 * earliest moment it could be idle. */
static void
conn_on_idle(ch_loop *loop, ch_timer *t, void *ud)
{
	ch_conn *c = ud;
	int64_t now = ch_loop_now(loop);
	int64_t idle = c->srv->opts.idle_ms;
	if (c->next_seq != c->head_seq) {
		ch_timer_arm(loop, t, now + idle); /* waiting on us, not idle */
		return;
	}
	if (now - c->last_active < idle) {
		ch_timer_arm(loop, t, c->last_active + idle);
		return;
	}
	CH_LOGI("net", "closing idle connection from %s (no activity for %lld ms)", c->peer,
		(long long)(now - c->last_active));
	conn_teardown(c);
}

/* Close the socket, drop what can't be sent, tell the API layer, and drop
 * the socket's reference. Pending requests keep c alive. */
static void
conn_teardown(ch_conn *c)
{
	if (c->closed)
		return;
	ch_server *s = c->srv;
	c->closed = true;
	s->stats.closed++;
	ch_io_remove(c->loop, &c->io);
	if (c->ssl && !c->tls_handshaking)
		(void)SSL_shutdown(c->ssl); /* close_notify if the socket takes it; no wait */
	ERR_clear_error();
	close(c->fd);
	c->fd = -1;
	ch_timer_cancel(c->loop, &c->idle);
	ch_timer_cancel(c->loop, &c->close_timer);
	ch_timer_cancel(c->loop, &c->throttle_timer);
	send_queue_clear(c);
	ch_timer_cancel(c->loop, &c->recv_timer);
	if (c->mem_wait)
		pool_unwait(c);
	/* The pool's bytes come back now; frames of requests still being
	 * answered are freed later, outside the pool. */
	size_t held = c->fr_held;
	c->fr_held = 0;
	for (uint64_t seq = c->head_seq; seq < c->next_seq; seq++) {
		ch_slot *sl = slot_of(c, seq);
		ch_resp_free(sl->resp);
		sl->resp = NULL;
		held += sl->held;
		sl->held = 0;
	}
	pool_release(s, held);
	ch_framer_free(&c->fr);
	ch_buf_free(&c->stash);
	c->stash_off = 0;
	CH_LIST_UNLINK(s->conns, c);
	c->prev = c->next = NULL;
	s->nconns--;
	c->lst->nconns--;
	ip_count_drop(s, c->ip_entry);
	c->ip_entry = NULL;
	accept_update(s); /* a slot may have freed */
	CH_LOGD("net", "connection %llu from %s closed (%zu requests pending)",
		(unsigned long long)c->id, c->peer, c->npending);
	if (s->opts.on_close)
		s->opts.on_close(s->opts.ud, c);
	c->srv = NULL;
	ch_conn_release(c);
}

/* The address of a client as a literal ("127.0.0.1", "::1"; IPv4-mapped
 * addresses as IPv4) and its port; port 0 and "?" for other families. */
static unsigned
peer_ip(const struct sockaddr_storage *ss, char *ip, size_t n)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &sin->sin_addr, ip, (socklen_t)n);
		return ntohs(sin->sin_port);
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
		if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) /* dual-stack listener */
			inet_ntop(AF_INET, &sin6->sin6_addr.s6_addr[12], ip, (socklen_t)n);
		else
			inet_ntop(AF_INET6, &sin6->sin6_addr, ip, (socklen_t)n);
		return ntohs(sin6->sin6_port);
	}
	snprintf(ip, n, "?");
	return 0;
}

/* "ip:port" ("[ip6]:port") of a client address, for logs. */
static void
format_peer(char *out, size_t n, const struct sockaddr_storage *ss)
{
	char ip[INET6_ADDRSTRLEN];
	unsigned port = peer_ip(ss, ip, sizeof(ip));
	if (strchr(ip, ':'))
		snprintf(out, n, "[%s]:%u", ip, port);
	else if (port)
		snprintf(out, n, "%s:%u", ip, port);
	else
		snprintf(out, n, "?");
}

/* ---- connection limits (Kafka's ConnectionQuotas) ---------------------- */

/* The limits for listener tag (and a peer, when ip is set): unbounded
 * unless the owner's callback says otherwise. */
static void
limits_of(const ch_server *s, int tag, const char *ip, ch_conn_limits *out)
{
	*out = (ch_conn_limits){INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX};
	if (s->opts.limits)
		s->opts.limits(s->opts.ud, tag, ip, out);
}

/* Whether listener l is at max.connections (all listeners', or its own). */
static bool
at_connection_limit(const ch_server *s, const ch_listen *l, const ch_conn_limits *lim)
{
	return s->nconns >= (size_t)CH_MAX(lim->max_connections, 0) ||
	       l->nconns >= (size_t)CH_MAX(lim->max_listener_connections, 0);
}

/* Counts one more connection from ss's address; the entry to drop later. */
static ch_map_entry *
ip_count_add(ch_server *s, const struct sockaddr_storage *ss)
{
	char ip[INET6_ADDRSTRLEN];
	(void)peer_ip(ss, ip, sizeof(ip));
	ch_map_entry *e = ch_map_find(&s->ip_counts, ip, strlen(ip));
	if (!e)
		e = ch_map_put(&s->ip_counts, ip, strlen(ip), (void *)(uintptr_t)0);
	e->value = (void *)((uintptr_t)e->value + 1);
	return e;
}

static void
ip_count_drop(ch_server *s, ch_map_entry *e)
{
	if (!e)
		return;
	e->value = (void *)((uintptr_t)e->value - 1);
	if (!e->value)
		ch_map_remove_entry(&s->ip_counts, e);
}

/* A socket accepted and held unread until `until`, then closed
 * (ip_throttle; Kafka's DelayedCloseSocket). */
typedef struct held_socket {
	int fd;
	int64_t until;
	struct held_socket *next;
} held_socket;

static void
held_arm(ch_server *s)
{
	if (s->held)
		ch_timer_arm(s->loop, &s->held_timer, s->held->until);
	else
		ch_timer_cancel(s->loop, &s->held_timer);
}

static void
hold_socket(ch_server *s, int fd, int64_t ms)
{
	held_socket *h = ch_xcalloc(1, sizeof(*h));
	h->fd = fd;
	h->until = ch_loop_now(s->loop) + ms;
	held_socket **p = &s->held;
	while (*p && (*p)->until <= h->until)
		p = &(*p)->next;
	h->next = *p;
	*p = h;
	held_arm(s);
}

/* Closes every held socket whose time is up (all of them: stop). */
static void
held_close(ch_server *s, bool all)
{
	int64_t now = ch_loop_now(s->loop);
	while (s->held && (all || s->held->until <= now)) {
		held_socket *h = s->held;
		s->held = h->next;
		close(h->fd);
		free(h);
	}
	held_arm(s);
}

static void
on_held_timer(ch_loop *loop, ch_timer *t, void *ud)
{
	CH_UNUSED(loop);
	CH_UNUSED(t);
	held_close(ud, false);
}

/* Whether max_creation_rate lets one more connection in now (then it is
 * counted); else *wait_ms until it does. A token bucket holding a second's
 * worth: bursts up to the rate, then the rate. */
static bool
rate_admit(ch_server *s, int32_t rate, int64_t *wait_ms)
{
	if (rate <= 0 || rate == INT32_MAX)
		return true;
	int64_t now = ch_loop_now(s->loop);
	if (!s->rate_at)
		s->rate_tokens = rate;
	else
		s->rate_tokens += (double)(now - s->rate_at) * rate / 1000.0;
	if (s->rate_tokens > rate)
		s->rate_tokens = rate;
	s->rate_at = now;
	if (s->rate_tokens >= 1) {
		s->rate_tokens -= 1;
		return true;
	}
	*wait_ms = (int64_t)((1 - s->rate_tokens) * 1000.0 / rate) + 1;
	return false;
}

/* Puts each listener in the loop or takes it out: it accepts unless the
 * server stopped, accepting is paused (EMFILE, creation rate: accept_timer)
 * or max_connections (all, or its own) is reached, as Kafka's acceptor
 * waits for a connection slot. While one waits for a slot, the limits are
 * re-read every second (a dynamic change may raise them). */
static void
accept_update(ch_server *s)
{
	bool paused = ch_timer_armed(&s->accept_timer);
	bool at_limit = false;
	for (size_t k = 0; k < s->nls; k++) {
		ch_listen *l = &s->ls[k];
		ch_conn_limits lim;
		limits_of(s, l->tag, NULL, &lim);
		bool full = at_connection_limit(s, l, &lim);
		at_limit |= full;
		bool want = !s->stopped && l->fd >= 0 && !paused && !full;
		if (want == l->watching)
			continue;
		if (want && ch_io_add(s->loop, &l->io, CH_IO_READ) != CH_OK) {
			CH_LOGE("net", "epoll_ctl for listener: %s", strerror(errno));
			continue;
		}
		if (!want)
			ch_io_remove(s->loop, &l->io);
		l->watching = want;
		if (full && !want) {
			s->stats.accept_waits++;
			CH_LOGI("net",
				"listener on port %d waits for a connection slot (%zu connections, "
				"%zu on it; max.connections %d, for it %d)",
				l->port, s->nconns, l->nconns, lim.max_connections,
				lim.max_listener_connections);
		}
	}
	if (at_limit && !s->stopped && !ch_timer_armed(&s->limit_timer))
		ch_timer_arm(s->loop, &s->limit_timer, ch_loop_now(s->loop) + 1000);
}

static void
on_limit_timer(ch_loop *loop, ch_timer *t, void *ud)
{
	CH_UNUSED(loop);
	CH_UNUSED(t);
	accept_update(ud);
}

/* An accepted socket becomes a connection: TCP_NODELAY, read interest, idle
 * timer, on_open; on an epoll failure the socket is closed at once. */
/* close_timer (ch_conn_close_later): the delay is over. */
static void
conn_on_close_timer(ch_loop *loop, ch_timer *t, void *ud)
{
	CH_UNUSED(loop);
	CH_UNUSED(t);
	ch_conn *c = ud;
	ch_conn_keep(c);
	CH_LOGD("net", "closing connection from %s after the failed-authentication delay", c->peer);
	/* The answer that said why, held for the delay, goes out first; what
	 * the socket does not take at once is dropped. */
	if (!c->closed && c->sq_head && flush(c) == CH_ERR) {
		ch_conn_release(c);
		return;
	}
	conn_teardown(c);
	ch_conn_release(c);
}

static void
conn_new(ch_server *s, ch_listen *l, int fd, const struct sockaddr_storage *ss)
{
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ch_conn *c = ch_xcalloc(1, sizeof(*c));
	c->srv = s;
	c->loop = s->loop;
	c->fd = fd;
	c->id = atomic_fetch_add(&conn_ids, 1) + 1;
	c->refs = 1; /* the socket's */
	c->tag = l->tag;
	c->lst = l;
	format_peer(c->peer, sizeof(c->peer), ss);
	if (l->tls) {
		c->tls = l->tls;
		c->ssl = ch_tls_new_ssl(l->tls, fd);
		if (!c->ssl) {
			char why[160];
			CH_LOGE("net", "TLS for %s: %s", c->peer, ch_tls_error(why, sizeof(why)));
			close(fd);
			free(c);
			return;
		}
		c->tls_handshaking = true;
	}
	ch_framer_init(&c->fr, s->opts.max_request_bytes);
	c->fr.stop_at_size = true; /* each frame's memory is reserved first */
	ch_buf_init(&c->stash);
	ch_io_init(&c->io, fd, conn_on_read, conn_on_write, c);
	if (ch_io_add(s->loop, &c->io, CH_IO_READ) != CH_OK) {
		CH_LOGE("net", "epoll_ctl for %s: %s", c->peer, strerror(errno));
		close(fd);
		conn_free(c);
		return;
	}
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->nconns++;
	l->nconns++;
	c->ip_entry = ip_count_add(s, ss);
	c->last_active = ch_loop_now(s->loop);
	ch_timer_init(&c->idle, conn_on_idle, c);
	ch_timer_init(&c->close_timer, conn_on_close_timer, c);
	ch_timer_init(&c->recv_timer, conn_on_recv_timer, c);
	ch_timer_init(&c->throttle_timer, conn_on_throttle_timer, c);
	if (s->opts.idle_ms > 0)
		ch_timer_arm(s->loop, &c->idle, c->last_active + s->opts.idle_ms);
	CH_LOGD("net", "accepted connection %llu from %s", (unsigned long long)c->id, c->peer);
	if (s->opts.on_open) {
		ch_conn_keep(c);
		s->opts.on_open(s->opts.ud, c);
		ch_conn_release(c);
	}
}

/* ---- accepting --------------------------------------------------------- */

/* Accepts up to CH_ACCEPT_BATCH connections; out of descriptors or memory,
 * stops listening for CH_ACCEPT_PAUSE_MS instead of spinning. */
static void
on_accept(ch_loop *loop, ch_io *io, unsigned revents)
{
	CH_UNUSED(revents);
	ch_listen *l = io->ud;
	ch_server *s = l->srv;
	for (int i = 0; i < CH_ACCEPT_BATCH && !s->stopped && l->watching; i++) {
		ch_conn_limits lim;
		limits_of(s, l->tag, NULL, &lim);
		if (at_connection_limit(s, l, &lim)) {
			accept_update(s); /* waits for a slot */
			return;
		}
		int64_t wait_ms;
		if (!rate_admit(s, lim.max_creation_rate, &wait_ms)) {
			CH_LOGD("net",
				"max.connection.creation.rate %d: accepting again in %lld ms",
				lim.max_creation_rate, (long long)wait_ms);
			s->stats.accept_waits++;
			ch_timer_arm(loop, &s->accept_timer, ch_loop_now(loop) + wait_ms);
			accept_update(s);
			return;
		}
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(l->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			s->stats.accepted++;
			char ip[INET6_ADDRSTRLEN];
			(void)peer_ip(&ss, ip, sizeof(ip));
			int64_t hold =
				s->opts.ip_throttle ? s->opts.ip_throttle(s->opts.ud, ip) : 0;
			if (hold > 0) {
				CH_LOGD("net",
					"Delaying closing of connection from /%s for %lld ms", ip,
					(long long)hold);
				s->stats.throttled_ip++;
				hold_socket(s, fd, hold);
				continue;
			}
			ch_conn_limits per;
			limits_of(s, l->tag, ip, &per);
			uintptr_t have = (uintptr_t)ch_map_get(&s->ip_counts, ip, strlen(ip));
			if (have >= (uintptr_t)CH_MAX(per.max_per_ip, 0)) {
				/* Kafka's words (TooManyConnectionsException) */
				CH_LOGI("net",
					"Rejected connection from /%s, address already has the "
					"configured maximum of %d connections.",
					ip, per.max_per_ip);
				s->stats.rejected_per_ip++;
				close(fd);
				continue;
			}
			conn_new(s, l, fd, &ss);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			/* Level-triggered epoll would report the backlog again at
			 * once: stop listening for a moment instead of spinning. */
			CH_LOGW("net", "accept: %s; pausing new connections for %d ms",
				strerror(errno), CH_ACCEPT_PAUSE_MS);
			ch_timer_arm(loop, &s->accept_timer,
				     ch_loop_now(loop) + CH_ACCEPT_PAUSE_MS);
			accept_update(s);
			return;
		}
		CH_LOGE("net", "accept: %s", strerror(errno));
		return;
	}
}

/* accept_timer: the pause (EMFILE, creation rate) is over. */
static void
on_accept_resume(ch_loop *loop, ch_timer *t, void *ud)
{
	CH_UNUSED(loop);
	CH_UNUSED(t);
	accept_update(ud);
}

/* ---- the before-sleep hook --------------------------------------------- */

/* The loop's before-sleep hook: for each connection queued (queue_pending)
 * closes the doomed, feeds stashed bytes, flushes responses and recomputes
 * interest; a few rounds, as work may queue more. Returns whether work is
 * left. */
static bool
before_sleep(ch_loop *loop, void *ud)
{
	CH_UNUSED(loop);
	ch_server *s = ud;
	for (int round = 0; round < 4 && s->pending; round++) {
		ch_conn *list = s->pending;
		s->pending = NULL;
		while (list) {
			ch_conn *c = list;
			list = c->pnext;
			c->pnext = NULL;
			c->queued = false;
			if (!c->closed && c->doomed)
				conn_teardown(c);
			if (!c->closed)
				process_stash(c);
			if (!c->closed && c->tls_read_pending && can_dispatch(c)) {
				c->tls_read_pending = false;
				conn_read(c);
			}
			if (!c->closed && c->sq_head && !c->write_blocked && !c->closing)
				(void)flush(c);
			if (!c->closed)
				update_interest(c);
			ch_conn_release(c); /* the list's reference */
		}
	}
	return s->pending != NULL;
}

/* ---- listening --------------------------------------------------------- */

/* A non-blocking listening socket bound to sa (v6 sockets dual-stack when
 * asked); records the bound port. -1 with errno on failure. */
static int
try_listen(ch_listen *l, const struct sockaddr *sa, socklen_t salen, bool dual_stack)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int one = 1, zero = 0;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->sa_family == AF_INET6 && dual_stack)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, sa, salen) < 0 || listen(fd, CH_LISTEN_BACKLOG) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		l->port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
						   : ntohs(((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

/* A listening socket on host:port for l, or -1 with the cause in why[0..whylen). */
static int
open_listener(ch_listen *l, const char *host, int port_no, char *why, size_t whylen)
{
	char buf[256];
	size_t hl = strlen(host);
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']' && hl - 2 < sizeof(buf)) {
		memcpy(buf, host + 1, hl - 2); /* "[::1]" -> "::1" */
		buf[hl - 2] = '\0';
		host = buf;
	}
	if (port_no < 0 || port_no > 65535) {
		snprintf(why, whylen, "%s", strerror(EINVAL));
		return -1;
	}
	if (host[0] == '\0') {
		/* All interfaces: one dual-stack socket if IPv6 exists. */
		struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6,
					    .sin6_port = htons((uint16_t)port_no),
					    .sin6_addr = IN6ADDR_ANY_INIT};
		int fd = try_listen(l, (struct sockaddr *)&sin6, sizeof(sin6), true);
		if (fd >= 0)
			return fd;
		host = "0.0.0.0";
	}
	char port[16];
	snprintf(port, sizeof(port), "%d", port_no);
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(host, port, &hints, &res);
	if (rc != 0) {
		/* EAI_SYSTEM is the one code whose cause is in errno. */
		snprintf(why, whylen, "%s", rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
		return -1;
	}
	int fd = -1, err = EADDRNOTAVAIL;
	for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
		fd = try_listen(l, ai->ai_addr, ai->ai_addrlen, false);
		if (fd < 0)
			err = errno;
	}
	freeaddrinfo(res);
	if (fd < 0)
		snprintf(why, whylen, "%s", strerror(err));
	return fd;
}

/* ---- public ------------------------------------------------------------ */

void
ch_server_opts_init(ch_server_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->host = "127.0.0.1";
	o->port = 9092;
	o->max_request_bytes = CH_SERVER_DEFAULT_MAX_REQUEST_BYTES;
	o->idle_ms = CH_SERVER_DEFAULT_IDLE_MS;
	o->max_inflight = CH_SERVER_DEFAULT_MAX_INFLIGHT;
	o->max_queued_bytes = CH_SERVER_DEFAULT_MAX_QUEUED_BYTES;
}

/* Binds l (the next free slot of s) to host:port and starts accepting on it; CH_ERR with the
 * cause in why. */
static int
listen_add(ch_server *s, const char *host, int port, int tag, ch_tls_ctx *tls, char *why,
	   size_t whylen)
{
	if (s->nls == CH_SERVER_MAX_LISTENERS) {
		snprintf(why, whylen, "too many listeners");
		return CH_ERR;
	}
	ch_listen *l = &s->ls[s->nls];
	memset(l, 0, sizeof(*l));
	l->srv = s;
	l->tag = tag;
	l->tls = tls;
	l->fd = open_listener(l, host ? host : "", port, why, whylen);
	if (l->fd < 0)
		return CH_ERR;
	ch_io_init(&l->io, l->fd, on_accept, NULL, l);
	if (ch_io_add(s->loop, &l->io, CH_IO_READ) != CH_OK) {
		snprintf(why, whylen, "epoll_ctl: %s", strerror(errno));
		close(l->fd);
		return CH_ERR;
	}
	l->watching = true;
	s->nls++;
	CH_LOGI("net", "listening on %s:%d%s", host && host[0] ? host : "*", l->port,
		tls ? " (TLS)" : "");
	return CH_OK;
}

ch_server *
ch_server_new(ch_loop *loop, const ch_server_opts *opts)
{
	if (!opts->on_request) {
		CH_LOGE("net", "ch_server_new: on_request is required");
		return NULL;
	}
	ch_server *s = ch_xcalloc(1, sizeof(*s));
	s->loop = loop;
	s->opts = *opts;
	s->opts.host = NULL; /* the caller's string: not kept */
	if (s->opts.max_request_bytes <= 0)
		s->opts.max_request_bytes = CH_SERVER_DEFAULT_MAX_REQUEST_BYTES;
	if (s->opts.idle_ms == 0)
		s->opts.idle_ms = CH_SERVER_DEFAULT_IDLE_MS;
	if (s->opts.max_inflight <= 0)
		s->opts.max_inflight = CH_SERVER_DEFAULT_MAX_INFLIGHT;
	if (s->opts.max_queued_bytes == 0)
		s->opts.max_queued_bytes = CH_SERVER_DEFAULT_MAX_QUEUED_BYTES;
	signal(SIGPIPE, SIG_IGN);

	char why[256];
	if (listen_add(s, opts->host, opts->port, opts->tag, opts->tls, why, sizeof(why)) !=
	    CH_OK) {
		CH_LOGE("net", "cannot listen on %s:%d: %s", opts->host ? opts->host : "",
			opts->port, why);
		if (opts->err && opts->errlen)
			snprintf(opts->err, opts->errlen, "%s", why);
		free(s);
		return NULL;
	}
	ch_timer_init(&s->accept_timer, on_accept_resume, s);
	ch_timer_init(&s->limit_timer, on_limit_timer, s);
	ch_timer_init(&s->held_timer, on_held_timer, s);
	ch_map_init(&s->ip_counts);
	s->rbuf = ch_xmalloc(CH_RBUF_SIZE);
	s->tls_wbuf = ch_xmalloc(CH_TLS_WRITE_CHUNK);
	s->hook = ch_loop_add_before_sleep(loop, before_sleep, s);
	return s;
}

int
ch_server_listen(ch_server *s, const char *host, int port, int tag, ch_tls_ctx *tls, char *err,
		 size_t errlen)
{
	char why[256];
	if (s->stopped) {
		snprintf(why, sizeof(why), "server stopped");
	} else if (listen_add(s, host, port, tag, tls, why, sizeof(why)) == CH_OK) {
		return CH_OK;
	}
	CH_LOGE("net", "cannot listen on %s:%d: %s", host ? host : "", port, why);
	if (err && errlen)
		snprintf(err, errlen, "%s", why);
	return CH_ERR;
}

int
ch_server_port(const ch_server *s)
{
	return s->ls[0].port;
}

int
ch_server_listener_port(const ch_server *s, int tag)
{
	for (size_t i = 0; i < s->nls; i++)
		if (s->ls[i].tag == tag)
			return s->ls[i].port;
	return -1;
}

const ch_server_stats *
ch_server_get_stats(const ch_server *s)
{
	return &s->stats;
}

size_t
ch_server_conn_count(const ch_server *s)
{
	return s->nconns;
}

void
ch_server_stop(ch_server *s)
{
	if (s->stopped)
		return;
	s->stopped = true;
	for (size_t i = 0; i < s->nls; i++) {
		if (s->ls[i].watching)
			ch_io_remove(s->loop, &s->ls[i].io);
		s->ls[i].watching = false;
		close(s->ls[i].fd);
		s->ls[i].fd = -1;
	}
	ch_timer_cancel(s->loop, &s->accept_timer);
	ch_timer_cancel(s->loop, &s->limit_timer);
	held_close(s, true);
}

void
ch_server_free(ch_server *s)
{
	if (!s)
		return;
	ch_server_stop(s);
	while (s->conns)
		conn_teardown(s->conns);
	while (s->pending) {
		ch_conn *c = s->pending;
		s->pending = c->pnext;
		c->pnext = NULL;
		c->queued = false;
		ch_conn_release(c);
	}
	ch_loop_remove_before_sleep(s->loop, s->hook);
	ch_map_free(&s->ip_counts);
	free(s->rbuf);
	free(s->tls_wbuf);
	free(s);
}

void
ch_conn_respond(ch_conn *c, uint64_t seq, ch_resp *resp)
{
	if (seq < c->head_seq || seq >= c->next_seq || slot_of(c, seq)->done) {
		CH_LOGE("net", "%s: response to unknown or answered request #%llu", c->peer,
			(unsigned long long)seq);
		ch_resp_free(resp);
		return;
	}
	ch_slot *sl = slot_of(c, seq);
	free(sl->frame);
	sl->frame = NULL;
	pool_release(c->srv, sl->held); /* NULL srv: released at teardown */
	sl->held = 0;
	sl->done = true;
	c->npending--;
	if (c->closed) {
		ch_resp_free(resp);
		ch_conn_release(c); /* the request's reference; may free c */
		return;
	}
	sl->resp = resp;
	/* Move the answered prefix of the order queue to the send queue. */
	while (c->head_seq < c->next_seq && !c->doomed) {
		ch_slot *h = slot_of(c, c->head_seq);
		if (!h->done)
			break;
		ch_resp *r = h->resp;
		h->resp = NULL;
		h->done = false;
		c->head_seq++;
		if (r)
			send_queue_push(c, r);
	}
	if (c->reading) { /* conn_on_read flushes and sets interest next */
		ch_conn_release(c);
		return;
	}
	if (c->sq_head)
		queue_pending(c);
	update_interest(c);
	ch_conn_release(c);
}

void
ch_conn_close(ch_conn *c)
{
	if (c->closed)
		return;
	ch_conn_keep(c);
	conn_teardown(c);
	ch_conn_release(c);
}

bool
ch_conn_is_closed(const ch_conn *c)
{
	return c->closed;
}

const char *
ch_conn_peer(const ch_conn *c)
{
	return c->peer;
}

uint64_t
ch_conn_id(const ch_conn *c)
{
	return c->id;
}

void
ch_conn_set_ud(ch_conn *c, void *ud)
{
	c->ud = ud;
}

void *
ch_conn_get_ud(const ch_conn *c)
{
	return c->ud;
}

int
ch_conn_listener(const ch_conn *c)
{
	return c->tag;
}

const char *
ch_conn_principal(const ch_conn *c)
{
	return c->principal ? c->principal : "User:ANONYMOUS";
}

void
ch_conn_set_principal(ch_conn *c, const char *principal)
{
	free(c->principal);
	c->principal = principal ? ch_xstrdup(principal) : NULL;
}

void
ch_conn_set_max_request(ch_conn *c, int32_t max_bytes)
{
	if (c->closed)
		return;
	c->fr.max = max_bytes > 0 ? max_bytes : c->srv->opts.max_request_bytes;
}

void
ch_conn_close_later(ch_conn *c, int64_t delay_ms)
{
	if (c->closed || c->closing)
		return;
	c->closing = true;
	ch_timer_arm(c->loop, &c->close_timer, ch_loop_now(c->loop) + CH_MAX(delay_ms, 0));
	queue_pending(c); /* drop read interest */
}

void
ch_conn_throttle(ch_conn *c, int64_t ms)
{
	if (c->closed || ms <= 0)
		return;
	int64_t until = ch_loop_now(c->loop) + ms;
	if (until <= c->throttled_until)
		return;
	c->throttled_until = until;
	ch_timer_arm(c->loop, &c->throttle_timer, until);
	update_interest(c);
}

size_t
ch_conn_pending(const ch_conn *c)
{
	return c->npending;
}
