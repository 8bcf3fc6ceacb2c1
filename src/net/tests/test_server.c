/*
 * Unit tests for the Kafka TCP server (net/ch_server.h) with real sockets on
 * 127.0.0.1. The loop runs in its own thread; the test thread is the client
 * (blocking sockets) and reaches the loop thread only through ch_loop_post.
 * Waits have a generous watchdog so a bug fails a check instead of hanging,
 * but nothing asserts on how long anything took.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/ch_common.h"
#include "common/ch_test.h"
#include "net/ch_server.h"

/* ---- shared state (guarded by mu) -------------------------------------- */

enum {
	M_ECHO,
	M_DEFER,
	M_CLOSE,
	M_BIG
};

typedef struct held {
	ch_conn *c;
	uint64_t seq;
	uint8_t *data;
	size_t len;
} held;

#define MAX_HELD 256

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static struct {
	int mode;
	held held[MAX_HELD];
	int nheld;
	int max_held; /* most requests held at once */
	int nreq;
	int nopen;
	int nclose;
	int nrelease;  /* file chunks released */
	int nanswered; /* held requests answered by the test */
	char peer[64]; /* of the last opened connection */
} T;

static struct {
	ch_loop *loop;
	ch_server *srv;
	pthread_t th;
	int port;
} S;

#define WATCHDOG_S 60

/* Wait (mu held) until cond holds; a watchdog turns a hang into a failure. */
#define WAIT_UNTIL(cond)                                                                           \
	do {                                                                                       \
		struct timespec dl_;                                                               \
		clock_gettime(CLOCK_REALTIME, &dl_);                                               \
		dl_.tv_sec += WATCHDOG_S;                                                          \
		while (!(cond)) {                                                                  \
			if (pthread_cond_timedwait(&cv, &mu, &dl_) == ETIMEDOUT) {                 \
				CH_CHECK(!"watchdog: " #cond);                                     \
				break;                                                             \
			}                                                                          \
		}                                                                                  \
	} while (0)

static void
changed(void)
{
	pthread_cond_broadcast(&cv);
}

/* ---- server callbacks (loop thread) ------------------------------------ */

static ch_resp *
echo_resp(const uint8_t *p, size_t len)
{
	ch_resp *r = ch_resp_new();
	ch_resp_append(r, p, len);
	return r;
}

static void
on_request(void *ud, ch_conn *c, uint64_t seq, const uint8_t *frame, size_t len)
{
	CH_UNUSED(ud);
	pthread_mutex_lock(&mu);
	T.nreq++;
	int mode = T.mode;
	if (mode == M_DEFER) {
		CH_CHECK(T.nheld < MAX_HELD);
		held *h = &T.held[T.nheld++];
		h->c = c;
		h->seq = seq;
		h->data = (uint8_t *)frame; /* valid until answered */
		h->len = len;
		if (T.nheld > T.max_held)
			T.max_held = T.nheld;
	}
	changed();
	pthread_mutex_unlock(&mu);
	if (mode == M_ECHO) {
		ch_conn_respond(c, seq, echo_resp(frame, len));
	} else if (mode == M_CLOSE) {
		ch_conn_close(c); /* protocol error, then answer the closed conn */
		ch_conn_respond(c, seq, echo_resp(frame, len));
	} else if (mode == M_BIG) {
		/* 1 MiB response, filled with the request's first byte */
		ch_buf b;
		ch_buf_init(&b);
		memset(ch_buf_extend(&b, 1 << 20), frame[0], 1 << 20);
		ch_conn_respond(c, seq, ch_resp_from_buf(&b));
	}
}

static void
on_open(void *ud, ch_conn *c)
{
	CH_UNUSED(ud);
	pthread_mutex_lock(&mu);
	T.nopen++;
	snprintf(T.peer, sizeof(T.peer), "%s", ch_conn_peer(c));
	changed();
	pthread_mutex_unlock(&mu);
}

static void
on_close(void *ud, ch_conn *c)
{
	CH_UNUSED(ud);
	CH_CHECK(ch_conn_is_closed(c));
	pthread_mutex_lock(&mu);
	T.nclose++;
	changed();
	pthread_mutex_unlock(&mu);
}

static void *
loop_main(void *ud)
{
	ch_loop_run(ud);
	return NULL;
}

/* Run fn(arg) on the loop thread and wait for it. */
typedef struct call {
	void (*fn)(void *);
	void *arg;
	bool done;
} call;

static void
call_tramp(ch_loop *loop, void *ud)
{
	CH_UNUSED(loop);
	call *c = ud;
	c->fn(c->arg);
	pthread_mutex_lock(&mu);
	c->done = true;
	changed();
	pthread_mutex_unlock(&mu);
}

static void
on_loop(void (*fn)(void *), void *arg)
{
	call c = {fn, arg, false};
	ch_loop_post(S.loop, call_tramp, &c);
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(c.done);
	pthread_mutex_unlock(&mu);
}

static bool
start(int mode, void (*tweak)(ch_server_opts *))
{
	memset(&T, 0, sizeof(T));
	T.mode = mode;
	S.loop = ch_loop_new();
	ch_server_opts o;
	ch_server_opts_init(&o);
	o.host = "127.0.0.1";
	o.port = 0;
	o.on_request = on_request;
	o.on_open = on_open;
	o.on_close = on_close;
	if (tweak)
		tweak(&o);
	S.srv = ch_server_new(S.loop, &o);
	CH_CHECK(S.srv != NULL);
	if (!S.srv) {
		ch_loop_free(S.loop);
		return false;
	}
	S.port = ch_server_port(S.srv);
	CH_CHECK(S.port > 0);
	pthread_create(&S.th, NULL, loop_main, S.loop);
	return true;
}

static void
stop(void)
{
	ch_loop_stop(S.loop);
	pthread_join(S.th, NULL);
	ch_server_free(S.srv);
	ch_loop_free(S.loop);
	S.srv = NULL;
	S.loop = NULL;
}

/* ---- client side (test thread) ----------------------------------------- */

static int
cli_connect(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CH_CHECK(fd >= 0);
	struct timeval tv = {WATCHDOG_S, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)S.port)};
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int rc = connect(fd, (struct sockaddr *)&sin, sizeof(sin));
	CH_CHECK(rc == 0);
	return fd;
}

static bool
send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n > 0) {
		ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		b += k;
		n -= (size_t)k;
	}
	return true;
}

static bool
recv_all(int fd, void *p, size_t n)
{
	uint8_t *b = p;
	while (n > 0) {
		ssize_t k = recv(fd, b, n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		b += k;
		n -= (size_t)k;
	}
	return true;
}

static void
be32(uint8_t *h, uint32_t n)
{
	h[0] = (uint8_t)(n >> 24);
	h[1] = (uint8_t)(n >> 16);
	h[2] = (uint8_t)(n >> 8);
	h[3] = (uint8_t)n;
}

static bool
send_frame(int fd, const void *p, size_t n)
{
	uint8_t h[4];
	be32(h, (uint32_t)n);
	return send_all(fd, h, 4) && send_all(fd, p, n);
}

/* Receive one frame into a malloc'd buffer; NULL on EOF/error. */
static uint8_t *
recv_frame(int fd, size_t *len)
{
	uint8_t h[4];
	if (!recv_all(fd, h, 4))
		return NULL;
	size_t n = ((size_t)h[0] << 24) | ((size_t)h[1] << 16) | ((size_t)h[2] << 8) | h[3];
	uint8_t *p = malloc(n ? n : 1);
	if (!recv_all(fd, p, n)) {
		free(p);
		return NULL;
	}
	*len = n;
	return p;
}

static bool
expect_frame(int fd, const void *want, size_t n)
{
	size_t len = 0;
	uint8_t *p = recv_frame(fd, &len);
	bool ok = p && len == n && memcmp(p, want, n) == 0;
	free(p);
	return ok;
}

/* True if the server closed the connection (EOF or reset). */
static bool
wait_eof(int fd)
{
	char c;
	for (;;) {
		ssize_t k = recv(fd, &c, 1, 0);
		if (k == 0 || (k < 0 && errno == ECONNRESET))
			return true;
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return false; /* watchdog (SO_RCVTIMEO) */
	}
}

/* ---- helpers run on the loop thread ------------------------------------ */

/* Answer held requests in reverse order; skip index `skip` (NULL resp). */
static int skip_idx = -1;

static void
respond_reverse(void *arg)
{
	CH_UNUSED(arg);
	pthread_mutex_lock(&mu);
	int n = T.nheld;
	held h[MAX_HELD];
	memcpy(h, T.held, sizeof(held) * (size_t)n);
	T.nheld = 0;
	T.nanswered += n;
	pthread_mutex_unlock(&mu);
	for (int i = n - 1; i >= 0; i--)
		ch_conn_respond(h[i].c, h[i].seq,
				i == skip_idx ? NULL : echo_resp(h[i].data, h[i].len));
}

static void
respond_all(void *arg)
{
	CH_UNUSED(arg);
	skip_idx = -1;
	respond_reverse(NULL);
}

/* ---- tests ------------------------------------------------------------- */

static void
t_echo_byte_by_byte(void)
{
	if (!start(M_ECHO, NULL))
		return;
	int fd = cli_connect();
	const char msg[] = "hello, kafka";
	uint8_t wire[4 + sizeof(msg)];
	be32(wire, sizeof(msg));
	memcpy(wire + 4, msg, sizeof(msg));
	for (size_t i = 0; i < sizeof(wire); i++) {
		CH_CHECK(send_all(fd, wire + i, 1));
		usleep(500); /* give each byte a chance to arrive alone */
	}
	CH_CHECK(expect_frame(fd, msg, sizeof(msg)));
	/* A frame bigger than the server's read buffer (zero-copy path). */
	size_t big = 3u << 20;
	uint8_t *p = malloc(big);
	for (size_t i = 0; i < big; i++)
		p[i] = (uint8_t)(i * 13 + 1);
	CH_CHECK(send_frame(fd, p, big));
	CH_CHECK(expect_frame(fd, p, big));
	free(p);
	pthread_mutex_lock(&mu);
	CH_CHECK_EQ_INT(T.nreq, 2);
	CH_CHECK(strncmp(T.peer, "127.0.0.1:", 10) == 0);
	pthread_mutex_unlock(&mu);
	close(fd);
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(T.nclose == 1);
	pthread_mutex_unlock(&mu);
	stop();
}

static void
t_pipelined_out_of_order(void)
{
	if (!start(M_DEFER, NULL))
		return;
	int fd = cli_connect();
	char msg[10][16];
	for (int i = 0; i < 10; i++) {
		snprintf(msg[i], sizeof(msg[i]), "request-%d", i);
		CH_CHECK(send_frame(fd, msg[i], strlen(msg[i])));
	}
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(T.nheld == 10);
	pthread_mutex_unlock(&mu);
	skip_idx = 5; /* like Produce acks=0: no response at all */
	on_loop(respond_reverse, NULL);
	for (int i = 0; i < 10; i++)
		if (i != 5)
			CH_CHECK(expect_frame(fd, msg[i], strlen(msg[i])));
	/* Nothing else is queued: the next request's answer comes next. */
	CH_CHECK(send_frame(fd, "last", 4));
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(T.nheld == 1);
	pthread_mutex_unlock(&mu);
	on_loop(respond_all, NULL);
	CH_CHECK(expect_frame(fd, "last", 4));
	close(fd);
	stop();
}

static void
small_limit(ch_server_opts *o)
{
	o->max_request_bytes = 1000;
}

static void
t_bad_sizes_close(void)
{
	if (!start(M_ECHO, small_limit))
		return;
	int good = cli_connect();
	CH_CHECK(send_frame(good, "ping", 4));
	CH_CHECK(expect_frame(good, "ping", 4));
	static const uint32_t bad[] = {1001, 0xffffffffu, 0x80000000u, 0, 104857601};
	for (size_t i = 0; i < CH_ARRAY_LEN(bad); i++) {
		int fd = cli_connect();
		uint8_t h[8] = {0};
		be32(h, bad[i]);
		CH_CHECK(send_all(fd, h, sizeof(h)));
		CH_CHECK(wait_eof(fd));
		close(fd);
		/* the other connection keeps working */
		CH_CHECK(send_frame(good, "pong", 4));
		CH_CHECK(expect_frame(good, "pong", 4));
	}
	uint8_t ok[1000];
	memset(ok, 'k', sizeof(ok));
	CH_CHECK(send_frame(good, ok, sizeof(ok))); /* exactly at the limit */
	CH_CHECK(expect_frame(good, ok, sizeof(ok)));
	close(good);
	stop();
}

/* The peer vanishes while its requests wait; answering later must neither
 * leak nor touch freed memory (run under ASan/LSan). */
static void
count_release(void *ud)
{
	CH_UNUSED(ud);
	pthread_mutex_lock(&mu);
	T.nrelease++;
	changed();
	pthread_mutex_unlock(&mu);
}

static int tmp_fd = -1;

static void
respond_with_files(void *arg)
{
	CH_UNUSED(arg);
	pthread_mutex_lock(&mu);
	int n = T.nheld;
	held h[MAX_HELD];
	memcpy(h, T.held, sizeof(held) * (size_t)n);
	T.nheld = 0;
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < n; i++) {
		CH_CHECK(ch_conn_is_closed(h[i].c));
		CH_CHECK(h[i].len == 3 && memcmp(h[i].data, "abc", 3) == 0); /* still valid */
		ch_resp *r = echo_resp(h[i].data, h[i].len);
		ch_resp_add_file(r, tmp_fd, 0, 10, count_release, NULL);
		ch_conn_respond(h[i].c, h[i].seq, r);
	}
}

static int
make_tmp(size_t size, uint8_t **content)
{
	char path[] = "/tmp/ch_net_test_XXXXXX";
	int fd = mkstemp(path);
	CH_CHECK(fd >= 0);
	unlink(path);
	uint8_t *p = malloc(size);
	for (size_t i = 0; i < size; i++)
		p[i] = (uint8_t)(i * 7 + (i >> 12));
	CH_CHECK(write(fd, p, size) == (ssize_t)size);
	if (content)
		*content = p;
	else
		free(p);
	return fd;
}

static void
t_disconnect_with_deferred(void)
{
	if (!start(M_DEFER, NULL))
		return;
	tmp_fd = make_tmp(100, NULL);
	int fd = cli_connect();
	for (int i = 0; i < 3; i++)
		CH_CHECK(send_frame(fd, "abc", 3));
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(T.nheld == 3);
	pthread_mutex_unlock(&mu);
	close(fd);
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(T.nclose == 1);
	pthread_mutex_unlock(&mu);
	on_loop(respond_with_files, NULL);
	pthread_mutex_lock(&mu);
	CH_CHECK_EQ_INT(T.nrelease, 3); /* dropped responses release their files */
	pthread_mutex_unlock(&mu);
	stop();
	close(tmp_fd);
}

/* ch_conn_close from inside on_request, then answering the closed conn. */
static void
t_close_in_handler(void)
{
	if (!start(M_CLOSE, NULL))
		return;
	int fd = cli_connect();
	CH_CHECK(send_frame(fd, "x", 1));
	CH_CHECK(send_frame(fd, "y", 1));
	CH_CHECK(wait_eof(fd));
	close(fd);
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(T.nclose == 1);
	CH_CHECK_EQ_INT(T.nreq, 1); /* the second frame is never dispatched */
	pthread_mutex_unlock(&mu);
	stop();
}

static void
small_idle(ch_server_opts *o)
{
	o->idle_ms = 100;
}

static void
t_idle_reaping(void)
{
	if (!start(M_DEFER, small_idle))
		return;
	int idle = cli_connect();
	CH_CHECK(wait_eof(idle)); /* reaped */
	close(idle);
	/* A connection waiting for an answer is busy, not idle. */
	int busy = cli_connect();
	CH_CHECK(send_frame(busy, "wait", 4));
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(T.nheld == 1);
	pthread_mutex_unlock(&mu);
	usleep(400 * 1000);
	char c;
	ssize_t k = recv(busy, &c, 1, MSG_DONTWAIT);
	CH_CHECK(k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)); /* still open */
	on_loop(respond_all, NULL);
	CH_CHECK(expect_frame(busy, "wait", 4));
	CH_CHECK(wait_eof(busy)); /* idle again afterwards */
	close(busy);
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(T.nclose == 2);
	pthread_mutex_unlock(&mu);
	stop();
}

/* Memory + file range + memory, the file part big enough to fill the
 * socket buffer several times over (EAGAIN in the middle of sendfile). */
static uint8_t *file_content;

/* The one held request, taken. */
static held
take_held(void)
{
	pthread_mutex_lock(&mu);
	held h = T.held[0];
	T.nheld = 0;
	pthread_mutex_unlock(&mu);
	return h;
}

static void
respond_mixed(void *arg)
{
	CH_UNUSED(arg);
	held h = take_held();
	ch_resp *r = ch_resp_new();
	ch_buf b;
	ch_buf_init(&b);
	ch_buf_append(&b, "HEAD", 4);
	ch_resp_add_buf(r, &b);
	CH_CHECK(b.data == NULL); /* taken */
	ch_resp_add_file(r, tmp_fd, 100, 5u << 20, count_release, NULL);
	ch_resp_add_file(r, tmp_fd, 0, 0, count_release, NULL); /* empty: released now */
	ch_resp_append(r, "TAIL", 4);
	CH_CHECK_EQ_INT(ch_resp_len(r), 8 + (5u << 20));
	ch_conn_respond(h.c, h.seq, r);
}

static void
t_sendfile(void)
{
	if (!start(M_DEFER, NULL))
		return;
	tmp_fd = make_tmp(6u << 20, &file_content);
	int fd = cli_connect();
	CH_CHECK(send_frame(fd, "fetch", 5));
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(T.nheld == 1);
	pthread_mutex_unlock(&mu);
	on_loop(respond_mixed, NULL);
	usleep(50 * 1000); /* let the socket buffer fill up first */
	size_t len = 0;
	uint8_t *p = recv_frame(fd, &len);
	CH_CHECK(p != NULL);
	if (p) {
		CH_CHECK_EQ_INT(len, 8 + (5u << 20));
		CH_CHECK(memcmp(p, "HEAD", 4) == 0);
		CH_CHECK(memcmp(p + 4, file_content + 100, 5u << 20) == 0);
		CH_CHECK(memcmp(p + 4 + (5u << 20), "TAIL", 4) == 0);
	}
	free(p);
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(T.nrelease == 2);
	pthread_mutex_unlock(&mu);
	close(fd);
	stop();
	close(tmp_fd);
	free(file_content);
}

/* A made chunk (ch_resp_add_made) between memory and a file range: its
 * bytes are made a window at a time as the socket drains, in the pieces the
 * maker chooses; a maker that fails closes only its connection. */
typedef struct maker {
	size_t made, len;
	bool fail_at_half;
} maker;

static uint8_t
made_byte(size_t i)
{
	return (uint8_t)(i * 13 + (i >> 9));
}

static int
make_some(void *ud, ch_buf *out, size_t max)
{
	maker *m = ud;
	if (m->fail_at_half && m->made >= m->len / 2)
		return CH_ERR;
	size_t n = CH_MIN(max, 1 + (m->made * 31) % 70000); /* uneven pieces */
	for (size_t i = 0; i < n; i++)
		ch_buf_append(out, &(uint8_t){made_byte(m->made + i)}, 1);
	m->made += n;
	return CH_OK;
}

static void
release_maker(void *ud)
{
	free(ud);
	count_release(NULL);
}

static bool made_fail;

static void
respond_made(void *arg)
{
	CH_UNUSED(arg);
	held h = take_held();
	ch_resp *r = ch_resp_new();
	ch_resp_append(r, "HEAD", 4);
	maker *m = calloc(1, sizeof(*m));
	m->len = 3u << 20;
	m->fail_at_half = made_fail;
	ch_resp_add_made(r, m->len, make_some, release_maker, m);
	ch_resp_add_file(r, tmp_fd, 7, 1000, count_release, NULL);
	ch_resp_append(r, "TAIL", 4);
	CH_CHECK_EQ_INT(ch_resp_len(r), 8 + (3u << 20) + 1000);
	ch_conn_respond(h.c, h.seq, r);
}

static void
t_made_chunk(void)
{
	if (!start(M_DEFER, NULL))
		return;
	tmp_fd = make_tmp(1u << 20, &file_content);
	for (int fail = 0; fail <= 1; fail++) {
		made_fail = fail;
		pthread_mutex_lock(&mu);
		T.nrelease = 0;
		pthread_mutex_unlock(&mu);
		int fd = cli_connect();
		int other = cli_connect();
		CH_CHECK(send_frame(fd, "fetch", 5));
		pthread_mutex_lock(&mu);
		WAIT_UNTIL(T.nheld == 1);
		pthread_mutex_unlock(&mu);
		on_loop(respond_made, NULL);
		usleep(50 * 1000); /* let the socket buffer fill up first */
		if (!fail) {
			size_t len = 0;
			uint8_t *p = recv_frame(fd, &len);
			CH_CHECK(p != NULL);
			if (p) {
				CH_CHECK_EQ_INT(len, 8 + (3u << 20) + 1000);
				CH_CHECK(memcmp(p, "HEAD", 4) == 0);
				size_t bad = 0;
				for (size_t i = 0; i < (3u << 20); i++)
					bad += p[4 + i] != made_byte(i);
				CH_CHECK_EQ_INT(bad, 0);
				CH_CHECK(memcmp(p + 4 + (3u << 20), file_content + 7, 1000) == 0);
				CH_CHECK(memcmp(p + len - 4, "TAIL", 4) == 0);
			}
			free(p);
		} else {
			CH_CHECK(wait_eof(fd));                 /* the frame cannot be finished */
			CH_CHECK(send_frame(other, "ping", 4)); /* the others go on */
			pthread_mutex_lock(&mu);
			WAIT_UNTIL(T.nheld == 1);
			pthread_mutex_unlock(&mu);
			on_loop(respond_all, NULL);
			CH_CHECK(expect_frame(other, "ping", 4));
		}
		pthread_mutex_lock(&mu);
		WAIT_UNTIL(T.nrelease == 2); /* the maker and the file, once each */
		CH_CHECK_EQ_INT(T.nrelease, 2);
		pthread_mutex_unlock(&mu);
		close(fd);
		close(other);
	}
	stop();
	close(tmp_fd);
	free(file_content);
}

static void
inflight_4(ch_server_opts *o)
{
	o->max_inflight = 4;
}

/* Reading stops at max_inflight pending requests and resumes as they are
 * answered; bytes read past the limit are stashed, not lost. */
static void
t_inflight_limit(void)
{
	if (!start(M_DEFER, inflight_4))
		return;
	int fd = cli_connect();
	char msg[40][16];
	for (int i = 0; i < 40; i++) {
		snprintf(msg[i], sizeof(msg[i]), "r%d", i);
		CH_CHECK(send_frame(fd, msg[i], strlen(msg[i])));
	}
	for (;;) {
		pthread_mutex_lock(&mu);
		WAIT_UNTIL(T.nheld > 0 || T.nanswered == 40);
		bool all = T.nanswered == 40 || T.nheld == 0; /* or watchdog */
		pthread_mutex_unlock(&mu);
		if (all)
			break;
		on_loop(respond_all, NULL);
	}
	for (int i = 0; i < 40; i++)
		CH_CHECK(expect_frame(fd, msg[i], strlen(msg[i])));
	pthread_mutex_lock(&mu);
	CH_CHECK(T.max_held <= 4);
	CH_CHECK_EQ_INT(T.nreq, 40);
	pthread_mutex_unlock(&mu);
	close(fd);
	stop();
}

static void
queue_64k(ch_server_opts *o)
{
	o->max_queued_bytes = 64 * 1024;
}

/* Responses bigger than the send-queue limit: the server stops reading
 * while they drain, and everything still arrives in order. */
static void
t_send_queue_limit(void)
{
	if (!start(M_BIG, queue_64k))
		return;
	int fd = cli_connect();
	for (int i = 0; i < 20; i++) {
		uint8_t b = (uint8_t)('a' + i);
		CH_CHECK(send_frame(fd, &b, 1));
	}
	usleep(50 * 1000); /* the client is slow to read */
	for (int i = 0; i < 20; i++) {
		size_t len = 0;
		uint8_t *p = recv_frame(fd, &len);
		CH_CHECK(p && len == (1u << 20) && p[0] == 'a' + i && p[len - 1] == 'a' + i);
		free(p);
	}
	close(fd);
	stop();
}

#define NCONNS 2000

static void
count_conns(void *arg)
{
	*(size_t *)arg = ch_server_conn_count(S.srv);
}

static void
t_many_connections(void)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < 2 * NCONNS + 100) {
		fprintf(stderr, "skipping: RLIMIT_NOFILE %llu too low\n",
			(unsigned long long)rl.rlim_cur);
		return;
	}
	if (!start(M_ECHO, NULL))
		return;
	static int fds[NCONNS];
	for (int i = 0; i < NCONNS; i++)
		fds[i] = cli_connect();
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(T.nopen == NCONNS);
	pthread_mutex_unlock(&mu);
	size_t n = 0;
	on_loop(count_conns, &n);
	CH_CHECK_EQ_INT(n, NCONNS);
	for (int i = 0; i < NCONNS; i++) {
		char m[16];
		snprintf(m, sizeof(m), "c%d", i);
		CH_CHECK(send_frame(fds[i], m, strlen(m)));
	}
	int bad = 0;
	for (int i = 0; i < NCONNS; i++) {
		char m[16];
		snprintf(m, sizeof(m), "c%d", i);
		bad += !expect_frame(fds[i], m, strlen(m));
	}
	CH_CHECK_EQ_INT(bad, 0);
	for (int i = 0; i < NCONNS; i++)
		close(fds[i]);
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(T.nclose == NCONNS);
	pthread_mutex_unlock(&mu);
	on_loop(count_conns, &n);
	CH_CHECK_EQ_INT(n, 0);
	stop();
}

/* Free the server while a request is pending; answer it afterwards. */
static void
t_free_with_pending(void)
{
	if (!start(M_DEFER, NULL))
		return;
	int fd = cli_connect();
	CH_CHECK(send_frame(fd, "late", 4));
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(T.nheld == 1);
	pthread_mutex_unlock(&mu);
	ch_loop_stop(S.loop);
	pthread_join(S.th, NULL);
	ch_server_free(S.srv); /* closes the connection: on_close runs */
	CH_CHECK_EQ_INT(T.nclose, 1);
	CH_CHECK(ch_conn_is_closed(T.held[0].c));
	CH_CHECK_EQ_INT(ch_conn_pending(T.held[0].c), 1);
	respond_all(NULL); /* loop stopped: this thread owns everything now */
	ch_loop_free(S.loop);
	CH_CHECK(wait_eof(fd));
	close(fd);
}

/* ch_server_stop: no new connections, existing ones keep working. */
static void
stop_server(void *arg)
{
	CH_UNUSED(arg);
	ch_server_stop(S.srv);
}

static void
t_stop_accepting(void)
{
	if (!start(M_ECHO, NULL))
		return;
	int fd = cli_connect();
	CH_CHECK(send_frame(fd, "a", 1));
	CH_CHECK(expect_frame(fd, "a", 1));
	on_loop(stop_server, NULL);
	int fd2 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)S.port)};
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CH_CHECK(connect(fd2, (struct sockaddr *)&sin, sizeof(sin)) < 0);
	close(fd2);
	CH_CHECK(send_frame(fd, "b", 1));
	CH_CHECK(expect_frame(fd, "b", 1));
	close(fd);
	stop();
}

static void
inflight_1(ch_server_opts *o)
{
	o->max_inflight = 1;
}

/* Reading is paused (one request pending, more stashed); the peer hangs up:
 * the server notices without reading, and the late answer is dropped. */
static void
t_hangup_while_paused(void)
{
	if (!start(M_DEFER, inflight_1))
		return;
	int fd = cli_connect();
	CH_CHECK(send_frame(fd, "one", 3));
	CH_CHECK(send_frame(fd, "two", 3));
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(T.nheld == 1);
	pthread_mutex_unlock(&mu);
	close(fd);
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(T.nclose == 1);
	CH_CHECK_EQ_INT(T.nreq, 1);
	pthread_mutex_unlock(&mu);
	on_loop(respond_all, NULL);
	stop();
}

/* Out of file descriptors: accept backs off (no busy loop) and resumes when
 * descriptors are free again. RLIMIT_NOFILE caps fd numbers, so the test
 * fills every free number below a low limit, leaving exactly three: two
 * client sockets plus two accepted ones need four. */
static void
t_emfile(void)
{
	if (!start(M_ECHO, NULL))
		return;
	struct rlimit old, rl;
	getrlimit(RLIMIT_NOFILE, &old);
	int probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
	close(probe);
	rl = old;
	rl.rlim_cur = (rlim_t)probe + 64;
	/* find the highest fd in use so the limit lies above it */
	for (int fd = 4095; fd > probe; fd--)
		if (fcntl(fd, F_GETFD) != -1) {
			rl.rlim_cur = (rlim_t)fd + 64;
			break;
		}
	CH_CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	static int fill[4096];
	int nfill = 0;
	for (;;) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			break;
		fill[nfill++] = fd;
	}
	for (int i = 0; i < 3 && nfill > 0; i++)
		close(fill[--nfill]);
	int a = cli_connect();
	int b = cli_connect();
	CH_CHECK(send_frame(a, "a", 1));
	CH_CHECK(send_frame(b, "b", 1));
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(T.nopen >= 1); /* one of them got in */
	pthread_mutex_unlock(&mu);
	usleep(150 * 1000); /* at least one back-off round */
	setrlimit(RLIMIT_NOFILE, &old);
	while (nfill > 0)
		close(fill[--nfill]);
	CH_CHECK(expect_frame(a, "a", 1));
	CH_CHECK(expect_frame(b, "b", 1));
	pthread_mutex_lock(&mu);
	CH_CHECK_EQ_INT(T.nopen, 2);
	pthread_mutex_unlock(&mu);
	close(a);
	close(b);
	stop();
}

/* A reader that stopped reading: responses pile up unsent, nothing is
 * pending; no progress for idle_ms gets it reaped like any idle peer. */
static void
t_idle_stuck_reader(void)
{
	if (!start(M_BIG, small_idle))
		return;
	int fd = cli_connect();
	for (int i = 0; i < 12; i++)
		CH_CHECK(send_frame(fd, "z", 1));
	pthread_mutex_lock(&mu);
	WAIT_UNTIL(T.nclose == 1);
	CH_CHECK_EQ_INT(T.nreq, 12);
	pthread_mutex_unlock(&mu);
	close(fd);
	stop();
}

CH_TEST_MAIN(CH_TEST(t_echo_byte_by_byte), CH_TEST(t_pipelined_out_of_order),
	     CH_TEST(t_bad_sizes_close), CH_TEST(t_disconnect_with_deferred),
	     CH_TEST(t_close_in_handler), CH_TEST(t_idle_reaping), CH_TEST(t_sendfile),
	     CH_TEST(t_made_chunk), CH_TEST(t_inflight_limit), CH_TEST(t_send_queue_limit),
	     CH_TEST(t_many_connections), CH_TEST(t_free_with_pending), CH_TEST(t_stop_accepting),
	     CH_TEST(t_hangup_while_paused), CH_TEST(t_emfile), CH_TEST(t_idle_stuck_reader))
