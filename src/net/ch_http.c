/*
 * ch_http: libmicrohttpd on its own poll thread, pages rendered on the loop
 * thread (see ch_http.h for the contract and docs/NOTES.md for why).
 *
 * A request's life:
 *
 *   MHD thread   on_request (first call): GET/HEAD? job queued, connection
 *                suspended, eventfd written
 *   loop thread  on_jobs: the queue taken under the lock; each job's page
 *                rendered by the handler; job->done; connection resumed
 *   MHD thread   on_request (called again after the resume): the rendered
 *                page queued as the response
 *   MHD thread   on_completed: the job freed (also when the peer vanished)
 *
 * The loop touches a job only between taking it from the queue and resuming
 * its connection; MHD does not look at a suspended connection, so it cannot
 * free the job meanwhile.
 */
#include "net/ch_http.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/ch_common.h"
#include "common/ch_log.h"

typedef struct http_job {
	struct http_job *next;
	struct ch_http *h;
	struct MHD_Connection *conn;
	char *path;
	ch_buf query; /* "k=v&k2" as sent, NUL-terminated */
	bool done;    /* rendered: out holds the page (written by the loop, under mu) */
	ch_http_reply out;
	/* An event stream (out.stream), under mu: */
	struct http_job *snext; /* in h->streams */
	bool streaming;         /* its response is queued: in h->streams */
	bool parked;            /* suspended until the next event */
	uint64_t seq;           /* the last event taken */
	ch_buf ev;              /* the event being sent, from off */
	size_t off;
} http_job;

struct ch_http {
	ch_loop *loop;
	struct MHD_Daemon *d;
	ch_http_handler_fn fn;
	void *ud;
	int port;
	int efd;  /* eventfd: the MHD thread's "jobs queued" to the loop */
	ch_io io; /* the loop's watcher on efd */
	pthread_mutex_t mu;
	http_job *head, **tail; /* queued jobs, under mu */
	http_job *streams;      /* open event streams, under mu */
	ch_buf event;           /* the latest published event, under mu */
	uint64_t event_seq;     /* 0: none yet */
	bool closing;           /* ch_http_free: streams end */
	char lasterr[256];      /* MHD's last log line, for a failed start */
};

static const char TEXT[] = "text/plain; charset=utf-8";

/* MHD's log lines: kept for ch_http_new's error, debug level otherwise (a
 * client sending garbage makes MHD say so, and must not fill the log). Runs
 * on either thread; lasterr is only read after a failed start. */
static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	ch_http *h = cls;
	char line[256];
	vsnprintf(line, sizeof(line), fmt, ap);
	size_t n = strlen(line);
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	if (!h->d)
		memcpy(h->lasterr, line, n + 1);
	CH_LOGD("http", "libmicrohttpd: %s", line);
}

/* Leaves the URL as sent: handlers decode path segments themselves, so a
 * group named "a/b" (sent as a%2Fb) stays one segment. */
static size_t
keep_escaped(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return strlen(s);
}

/* MHD_get_connection_values: one query argument appended to the ch_buf
 * cls as "&key=value" ("key" alone without a value; no "&" first). */
static enum MHD_Result
query_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	(void)kind;
	ch_buf *q = cls;
	if (q->len)
		ch_buf_append(q, "&", 1);
	ch_buf_append(q, key, strlen(key));
	if (value) {
		ch_buf_append(q, "=", 1);
		ch_buf_append(q, value, strlen(value));
	}
	return MHD_YES;
}

/* Queues a response of status with body (copied) and content type. */
static enum MHD_Result
queue(struct MHD_Connection *c, int status, const char *ctype, const void *body, size_t len,
      const char *allow)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	enum MHD_Result rc = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return rc;
}

/* MHD thread: the next bytes of an event stream. No new event: the
 * connection is suspended (parked) until ch_http_publish resumes it. */
static ssize_t
stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	http_job *job = cls;
	ch_http *h = job->h;
	pthread_mutex_lock(&h->mu);
	if (h->closing) {
		pthread_mutex_unlock(&h->mu);
		return MHD_CONTENT_READER_END_OF_STREAM;
	}
	if (job->off >= job->ev.len && job->seq != h->event_seq) { /* take the latest */
		job->ev.len = 0;
		ch_buf_append(&job->ev, h->event.data, h->event.len);
		job->off = 0;
		job->seq = h->event_seq;
		if (!ch_buf_ok(&job->ev)) {
			pthread_mutex_unlock(&h->mu);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
	}
	size_t n = job->ev.len - job->off;
	if (n == 0) {
		job->parked = true;
		MHD_suspend_connection(job->conn);
		pthread_mutex_unlock(&h->mu);
		return 0;
	}
	if (n > max)
		n = max;
	memcpy(buf, job->ev.data + job->off, n);
	job->off += n;
	pthread_mutex_unlock(&h->mu);
	return (ssize_t)n;
}

/* Loop thread: resumes every parked stream, so that it reads the new event
 * (or sees closing). The parked ones are taken under mu, resumed after it:
 * MHD takes its own lock in resume, and stream_read suspends with mu held;
 * a parked connection stays suspended (and alive) until resumed here. */
static void
wake_streams(ch_http *h)
{
	struct MHD_Connection *stack[CH_HTTP_MAX_CONNS];
	size_t n = 0;
	pthread_mutex_lock(&h->mu);
	for (http_job *j = h->streams; j && n < CH_HTTP_MAX_CONNS; j = j->snext)
		if (j->parked) {
			j->parked = false;
			stack[n++] = j->conn;
		}
	pthread_mutex_unlock(&h->mu);
	for (size_t i = 0; i < n; i++)
		MHD_resume_connection(stack[i]);
}

/* Queues job's event stream as the response (MHD thread). */
static enum MHD_Result
queue_stream(ch_http *h, struct MHD_Connection *c, http_job *job)
{
	struct MHD_Response *r =
		MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, job, NULL);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	pthread_mutex_lock(&h->mu);
	job->streaming = true;
	job->snext = h->streams;
	h->streams = job;
	pthread_mutex_unlock(&h->mu);
	enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return rc;
}

/* MHD's access handler (MHD thread): the first call queues the job for the
 * loop and suspends; the call after the resume sends the page. A request
 * body, if any, is read and dropped. */
static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
	   const char *version, const char *upload_data, size_t *upload_data_size, void **req_cls)
{
	ch_http *h = cls;
	(void)version;
	(void)upload_data;
	http_job *job = *req_cls;
	if (!job) {
		if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
		    strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
			static const char msg[] = "method not allowed: use GET\n";
			return queue(c, MHD_HTTP_METHOD_NOT_ALLOWED, TEXT, msg, sizeof(msg) - 1,
				     "GET, HEAD");
		}
		job = calloc(1, sizeof(*job));
		if (!job || !(job->path = strdup(url))) {
			free(job);
			return MHD_NO; /* out of memory: MHD closes the connection */
		}
		job->conn = c;
		job->h = h;
		ch_buf_init(&job->ev);
		ch_buf_init(&job->query);
		MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_arg, &job->query);
		ch_buf_append(&job->query, "", 1);
		if (!ch_buf_ok(&job->query)) {
			ch_buf_free(&job->query);
			free(job->path);
			free(job);
			return MHD_NO;
		}
		job->out.status = 200;
		job->out.content_type = TEXT;
		ch_buf_init(&job->out.body);
		*req_cls = job;
		MHD_suspend_connection(c);
		pthread_mutex_lock(&h->mu);
		*h->tail = job;
		h->tail = &job->next;
		pthread_mutex_unlock(&h->mu);
		uint64_t one = 1;
		if (write(h->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
			CH_LOGW("http", "eventfd write: %s", strerror(errno));
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&h->mu);
	bool done = job->done;
	pthread_mutex_unlock(&h->mu);
	if (!done)
		return MHD_YES; /* (not reached: the loop resumes only done jobs) */
	if (job->out.finish) {  /* the page's work off the loop */
		void (*finish)(ch_http_reply *, void *) = job->out.finish;
		job->out.finish = NULL;
		finish(&job->out, job->out.finish_ud);
	}
	if (job->out.stream && job->out.status == 200)
		return queue_stream(h, c, job);
	if (!ch_buf_ok(&job->out.body)) {
		static const char msg[] = "out of memory\n";
		return queue(c, MHD_HTTP_INTERNAL_SERVER_ERROR, TEXT, msg, sizeof(msg) - 1, NULL);
	}
	return queue(c, job->out.status, job->out.content_type,
		     job->out.body.data ? (void *)job->out.body.data : (void *)"",
		     job->out.body.len, NULL);
}

/* MHD thread: the request is over (answered, or the peer went away). */
static void
on_completed(void *cls, struct MHD_Connection *c, void **req_cls, enum MHD_RequestTerminationCode t)
{
	ch_http *h = cls;
	(void)c;
	(void)t;
	http_job *job = *req_cls;
	if (!job)
		return;
	/* Still queued only when MHD_stop_daemon closes a connection whose job
	 * the loop never took (ch_http_free). */
	pthread_mutex_lock(&h->mu);
	for (http_job **p = &h->streams; job->streaming && *p; p = &(*p)->snext)
		if (*p == job) {
			*p = job->snext;
			break;
		}
	for (http_job **p = &h->head; *p; p = &(*p)->next) {
		if (*p == job) {
			*p = job->next;
			if (!*p)
				h->tail = p;
			break;
		}
	}
	pthread_mutex_unlock(&h->mu);
	if (job->out.finish) /* never sent: the page's work is dropped */
		job->out.finish(NULL, job->out.finish_ud);
	ch_buf_free(&job->out.body);
	ch_buf_free(&job->query);
	ch_buf_free(&job->ev);
	free(job->path);
	free(job);
	*req_cls = NULL;
}

/* Takes the queued jobs (the loop's side of the hand-over). */
static http_job *
take_jobs(ch_http *h)
{
	pthread_mutex_lock(&h->mu);
	http_job *list = h->head;
	h->head = NULL;
	h->tail = &h->head;
	pthread_mutex_unlock(&h->mu);
	return list;
}

/* Marks job rendered and gives its connection back to MHD. */
static void
finish_job(ch_http *h, http_job *job)
{
	pthread_mutex_lock(&h->mu);
	job->done = true;
	pthread_mutex_unlock(&h->mu);
	MHD_resume_connection(job->conn);
}

/* Loop thread: renders every queued page. */
static void
on_jobs(ch_loop *loop, ch_io *io, unsigned revents)
{
	(void)loop;
	(void)revents;
	ch_http *h = io->ud;
	uint64_t n;
	if (read(h->efd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		CH_LOGW("http", "eventfd read: %s", strerror(errno));
	for (http_job *job = take_jobs(h), *next; job; job = next) {
		next = job->next;
		h->fn(h->ud, job->path, (const char *)job->query.data, &job->out);
		finish_job(h, job);
	}
}

ch_http *
ch_http_new(ch_loop *loop, const char *host, int port, ch_http_handler_fn fn, void *ud, char *err,
	    size_t errlen)
{
	char portstr[8];
	snprintf(portstr, sizeof(portstr), "%d", port);
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
				 .ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
	struct addrinfo *ai = NULL;
	/* "" binds every IPv4 interface. */
	int gai = getaddrinfo(host && *host ? host : "0.0.0.0", portstr, &hints, &ai);
	if (gai != 0 || !ai) {
		snprintf(err, errlen, "%s", gai ? gai_strerror(gai) : "no address");
		return NULL;
	}
	ch_http *h = ch_xmalloc(sizeof(*h));
	memset(h, 0, sizeof(*h));
	h->loop = loop;
	h->fn = fn;
	h->ud = ud;
	h->tail = &h->head;
	ch_buf_init(&h->event);
	pthread_mutex_init(&h->mu, NULL);
	snprintf(h->lasterr, sizeof(h->lasterr), "cannot start the HTTP server");
	h->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (h->efd < 0) {
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		freeaddrinfo(ai);
		pthread_mutex_destroy(&h->mu);
		free(h);
		return NULL;
	}
	ch_io_init(&h->io, h->efd, on_jobs, NULL, h);
	ch_io_add(loop, &h->io, CH_IO_READ);
	/* poll, not epoll: MHD's epoll mode is edge-triggered and misses a FIN
	 * that arrives with a request's last bytes (docs/NOTES.md). */
	unsigned flags =
		MHD_USE_POLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	h->d = MHD_start_daemon(
		flags, (uint16_t)port, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
		MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h, MHD_OPTION_UNESCAPE_CALLBACK, keep_escaped,
		NULL, MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned)CH_HTTP_MAX_CONNS, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)CH_HTTP_IDLE_S, MHD_OPTION_END);
	freeaddrinfo(ai);
	if (!h->d) {
		snprintf(err, errlen, "%s", h->lasterr);
		ch_io_remove(loop, &h->io);
		close(h->efd);
		pthread_mutex_destroy(&h->mu);
		free(h);
		return NULL;
	}
	const union MHD_DaemonInfo *pi = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = pi ? pi->port : port;
	return h;
}

int
ch_http_port(const ch_http *h)
{
	return h->port;
}

void
ch_http_free(ch_http *h)
{
	if (!h)
		return;
	/* Stop accepting, answer the jobs queued so far with 503, then stop
	 * MHD's thread: a job it queues meanwhile is freed by on_completed
	 * when MHD_stop_daemon closes its connection. */
	int lfd = MHD_quiesce_daemon(h->d);
	/* MHD must not be stopped with suspended connections: wake every
	 * stream, which then ends (closing). */
	pthread_mutex_lock(&h->mu);
	h->closing = true;
	pthread_mutex_unlock(&h->mu);
	wake_streams(h);
	ch_io_remove(h->loop, &h->io);
	for (http_job *job = take_jobs(h), *next; job; job = next) {
		next = job->next;
		job->out.status = 503;
		finish_job(h, job);
	}
	MHD_stop_daemon(h->d);
	if (lfd >= 0)
		close(lfd);
	close(h->efd);
	ch_buf_free(&h->event);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

void
ch_http_publish(ch_http *h, const char *ev, size_t len)
{
	pthread_mutex_lock(&h->mu);
	h->event.len = 0;
	ch_buf_append(&h->event, ev, len);
	h->event_seq++;
	pthread_mutex_unlock(&h->mu);
	wake_streams(h);
}
