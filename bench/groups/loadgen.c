/*
 * loadgen.c: coordinator throughput from raw Kafka protocol. Many group
 * members, one TCP connection each, speaking JoinGroup v5, SyncGroup v3,
 * Heartbeat v3 and OffsetCommit v7 directly (no client library), so the
 * figures are the coordinator's and not a client's.
 *
 *   loadgen -b HOST:PORT -m MEMBERS -g GROUPS -t TOPIC -P PARTITIONS
 *           [-d SECONDS per phase] [-p BROKER_PID] [-x NAME] [-E]
 *           [-c CONNECTIONS] [-S SOURCES] [-i INTERVAL_MS] [-M]
 *
 * Phases: join (every member joins one of GROUPS groups, MEMBER_ID_REQUIRED
 * round included, the leader syncs with an empty assignment for everyone,
 * members rejoin on REBALANCE_IN_PROGRESS until every group is Stable),
 * then heartbeats for SECONDS with one heartbeat in flight per member, then
 * offset commits (one partition per member; each acknowledged only when
 * fsynced) for SECONDS the same way. Prints one result line:
 *   RESULT name members groups join_s hb_per_s commit_per_s rss_before_kb rss_after_kb errors
 *          hb_p50_us hb_p99_us hb_max_us commit_p50_us commit_p99_us commit_max_us
 * (latency: request written to response read, one in flight per member).
 * -T CAFILE: every connection over TLS (OpenSSL; the broker's certificate
 * checked against CAFILE), for the TLS-vs-plaintext rows.
 * -c CONNECTIONS: the members share that many connections (member i on
 * connection i / (MEMBERS / CONNECTIONS), so consecutive members, which are
 * in different groups, share one), each with as many requests in flight as
 * it has members; the responses come in order, as the protocol says. For
 * more members than a process may hold sockets (cohortd pipelines a
 * connection's requests; Kafka reads a connection's next request only once
 * the last is answered, so a parked JoinGroup holds the rest up there).
 * Default: one connection per member.
 * -S SOURCES: connection j binds 127.0.0.(1 + j % SOURCES) first (one
 * source address has ~28,000 ephemeral ports per destination).
 * -i INTERVAL_MS: each member heartbeats (and, in the commit phase,
 * commits) once every INTERVAL_MS, spread evenly, instead of back to back:
 * latency at a given load (Kafka's heartbeat.interval.ms is 3000).
 * -M: memory: every connection first asks ApiVersions (so the broker holds
 * all it keeps per connection), then BROKER_PID's RSS is read (and
 * LOADGEN_PHASE_HOOK runs `CMD conns`) before any member joins; prints
 *   MEMORY name members connections rss_before_kb rss_connected_kb rss_joined_kb
 * and the join time no longer includes connecting. `CMD hb` runs as soon
 * as every group is Stable, then the members heartbeat as in the join for
 * 2 s (the backlog a hook's pause of the broker leaves) before the timed
 * phase starts.
 * The soft fd limit is raised to the hard one; more connections than that
 * allows is an error, said before connecting.
 * -E: against bench/groups/hb_echo.c, the least a server can do per
 * heartbeat: no join, no commits, heartbeats only (the loopback peer).
 * -C: the consumer rebalance protocol (KIP-848) instead: each member joins
 * with ConsumerGroupHeartbeat v0 (epoch 0, subscribed to TOPIC, the broker's
 * assignor), heartbeats at the interval the broker gives and at once after a
 * new assignment (acknowledging it with its TopicPartitions, as clients
 * reconcile), until every group's partitions are all owned and every member
 * owns its share (floor or ceiling of partitions / members); then heartbeats for SECONDS as fast as answered (one in flight
 * per member: epoch and member id, the other fields null as a client's
 * steady heartbeat). No commit phase (commit_per_s 0). With -p, lines
 * "CPU name us_per_heartbeat" and "CPUJOIN name ms" on stderr: the broker's
 * CPU time (user + system, all its threads) over the heartbeat phase per
 * heartbeat answered, and over the join.
 * -G PREFIX: the groups are PREFIX-MEMBERS-i (default lg).
 * LOADGEN_PHASE_HOOK=CMD: `CMD hb`, `CMD commit`, `CMD done` run (and waited
 * for) as each phase starts and at the end, and "COUNT phase n" lines on
 * stderr give each phase's answered requests (run-coord.sh dumps callgrind's
 * counters there: instructions per heartbeat and per commit).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

enum {
	K_OFFSET_COMMIT = 8,
	K_JOIN = 11,
	K_HEARTBEAT = 12,
	K_SYNC = 14,
	K_CG_HEARTBEAT = 68
};
enum {
	E_NONE = 0,
	E_ILLEGAL_GENERATION = 22,
	E_UNKNOWN_MEMBER = 25,
	E_REBALANCING = 27,
	E_MEMBER_ID_REQUIRED = 79
};
enum {
	ST_IDLE,
	ST_JOIN,
	ST_SYNC,
	ST_STABLE,
	ST_HB,
	ST_COMMIT,
	ST_CG /* -C: a ConsumerGroupHeartbeat in flight */
};
enum {
	PH_JOIN,
	PH_HB,
	PH_COMMIT,
	PH_DONE
};

typedef struct member member;
/* A connection and the members whose requests are in flight on it, oldest
 * first (the broker answers in that order). */
typedef struct {
	int fd;
	SSL *ssl;            /* -T: the connection's TLS; NULL: plaintext */
	unsigned char *part; /* a response not yet whole */
	size_t plen;
	member **q; /* ring of qcap: each member at most once */
	int qhead, qlen, qcap;
} conn;

struct member {
	conn *c;
	int group, idx, state, inflight, is_leader;
	int32_t gen, corr;
	int64_t sent_us;
	char member_id[128];
	int64_t next_hb_ms, offset;
	unsigned char wbuf[512];
	/* leader: members to name in the sync (empty assignments) */
	char (*peers)[128];
	int npeers;
	/* -C: the last assignment's TopicPartitions as encoded (sent back as
	 * owned once, to acknowledge it), its partition count, the interval */
	unsigned char *cg_tp;
	size_t cg_tplen;
	int cg_owned, cg_ack, cg_joined;
	int32_t cg_interval_ms;
};

static member *M;
static conn *C;
static int nmembers, ngroups, nparts, phase, nconns, interval_ms, cg_mode;
static const char *topic;
static long n_ok, n_err, n_rebal;
/* Latencies of the heartbeat and commit phases, in µs. */
typedef struct {
	uint32_t *v;
	size_t n, cap;
} lat;
static lat lat_hb, lat_commit;
/* When the timed phase began: a request sent before (a join-phase
 * heartbeat, one held up by the phase hook) is not in its latencies. */
static int64_t phase_t0_us;

static void
lat_add(lat *l, int64_t us)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 65536;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = (uint32_t)(us < 0 ? 0 : us > UINT32_MAX ? UINT32_MAX : us);
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of l, sorted in place; 0 when empty. */
static uint32_t
lat_q(lat *l, double q)
{
	if (!l->n)
		return 0;
	qsort(l->v, l->n, sizeof(*l->v), cmp_u32);
	size_t i = (size_t)(q * (double)(l->n - 1) + 0.5);
	return l->v[i];
}

static int64_t
now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- transport: plaintext, or TLS with -T */
static SSL_CTX *tls_ctx;

/* A TLS session on connected socket fd, handshaken (blocking). */
static SSL *
tls_open(int fd)
{
	SSL *s = SSL_new(tls_ctx);
	if (!s || SSL_set_fd(s, fd) != 1 || SSL_connect(s) != 1) {
		fprintf(stderr, "loadgen: TLS handshake failed\n");
		ERR_print_errors_fp(stderr);
		exit(1);
	}
	return s;
}

/* write/read through s when set; EAGAIN as the socket calls do. */
static ssize_t
io_write(int fd, SSL *s, const void *p, size_t n)
{
	if (!s)
		return write(fd, p, n);
	int k = SSL_write(s, p, (int)n);
	if (k > 0)
		return k;
	int e = SSL_get_error(s, k);
	errno = e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ ? EAGAIN : EIO;
	return -1;
}

static ssize_t
io_read(int fd, SSL *s, void *p, size_t n)
{
	if (!s)
		return read(fd, p, n);
	int k = SSL_read(s, p, (int)n);
	if (k > 0)
		return k;
	int e = SSL_get_error(s, k);
	if (e == SSL_ERROR_ZERO_RETURN)
		return 0;
	errno = e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? EAGAIN : EIO;
	return -1;
}

static int64_t
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The CPU time (user + system) of process pid in clock ticks; -1 unknown. */
static long long
cpu_ticks(int pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* the command may hold spaces */
	unsigned long long ut, st;
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (long long)(ut + st);
}

static long
rss_kb(int pid)
{
	char path[64], line[256];
	long kb = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = atol(line + 6);
	fclose(f);
	return kb;
}

/* ---- encoding */
typedef struct {
	unsigned char *p;
	size_t n, cap;
} wb;
static void
put(wb *w, const void *d, size_t n)
{
	if (w->n + n > w->cap) {
		fprintf(stderr, "loadgen: request too large\n");
		exit(1);
	}
	memcpy(w->p + w->n, d, n);
	w->n += n;
}
static void
i16(wb *w, int16_t v)
{
	uint16_t b = htons((uint16_t)v);
	put(w, &b, 2);
}
static void
i32(wb *w, int32_t v)
{
	uint32_t b = htonl((uint32_t)v);
	put(w, &b, 4);
}
static void
i64(wb *w, int64_t v)
{
	i32(w, (int32_t)((uint64_t)v >> 32));
	i32(w, (int32_t)(v & 0xffffffff));
}
static void
str(wb *w, const char *s)
{
	if (!s) {
		i16(w, -1);
		return;
	}
	i16(w, (int16_t)strlen(s));
	put(w, s, strlen(s));
}

static char group_names[100000][24];

static void
begin(wb *w, member *m, int16_t key, int16_t ver)
{
	w->n = 4;
	i16(w, key);
	i16(w, ver);
	i32(w, ++m->corr);
	str(w, "loadgen");
}
static void
finish(wb *w)
{
	uint32_t len = htonl((uint32_t)(w->n - 4));
	memcpy(w->p, &len, 4);
}

static unsigned char *bigbuf; /* leader's SyncGroup */
static size_t bigcap;

static void
send_buf(member *m, unsigned char *p, size_t n)
{
	conn *c = m->c;
	size_t off = 0;
	while (off < n) { /* local socket: a short blocking loop is fine */
		ssize_t k = io_write(c->fd, c->ssl, p + off, n - off);
		if (k < 0) {
			if (errno == EAGAIN || errno == EINTR) {
				struct timespec d = {0, 100000};
				nanosleep(&d, NULL);
				continue;
			}
			perror("loadgen: write");
			exit(1);
		}
		off += (size_t)k;
	}
	if (c->qlen == c->qcap) {
		fprintf(stderr, "loadgen: member %d: a second request in flight\n", m->idx);
		exit(1);
	}
	c->q[(c->qhead + c->qlen++) % c->qcap] = m;
	m->inflight = 1;
	m->sent_us = now_us();
}

static void
send_join(member *m)
{
	wb w = {m->wbuf, 0, sizeof(m->wbuf)};
	begin(&w, m, K_JOIN, 5);
	str(&w, group_names[m->group]);
	i32(&w, 30000); /* session */
	i32(&w, 60000); /* rebalance */
	str(&w, m->member_id);
	str(&w, NULL);
	str(&w, "consumer");
	i32(&w, 1);
	str(&w, "range");
	/* ConsumerProtocolSubscription v0: topics [topic], user_data null */
	int32_t ml = 2 + 4 + 2 + (int32_t)strlen(topic) + 4;
	i32(&w, ml);
	i16(&w, 0);
	i32(&w, 1);
	str(&w, topic);
	i32(&w, -1);
	finish(&w);
	m->state = ST_JOIN;
	send_buf(m, w.p, w.n);
}

static void
send_sync(member *m)
{
	if (m->is_leader) {
		size_t need = 256 + (size_t)m->npeers * 140;
		if (need > bigcap) {
			bigcap = need;
			bigbuf = realloc(bigbuf, bigcap);
		}
		wb w = {bigbuf, 0, bigcap};
		begin(&w, m, K_SYNC, 3);
		str(&w, group_names[m->group]);
		i32(&w, m->gen);
		str(&w, m->member_id);
		str(&w, NULL);
		i32(&w, m->npeers);
		for (int i = 0; i < m->npeers; i++) {
			str(&w, m->peers[i]);
			i32(&w, 0); /* empty assignment */
		}
		finish(&w);
		m->state = ST_SYNC;
		send_buf(m, w.p, w.n);
		return;
	}
	wb w = {m->wbuf, 0, sizeof(m->wbuf)};
	begin(&w, m, K_SYNC, 3);
	str(&w, group_names[m->group]);
	i32(&w, m->gen);
	str(&w, m->member_id);
	str(&w, NULL);
	i32(&w, 0);
	finish(&w);
	m->state = ST_SYNC;
	send_buf(m, w.p, w.n);
}

static void
send_hb(member *m)
{
	wb w = {m->wbuf, 0, sizeof(m->wbuf)};
	begin(&w, m, K_HEARTBEAT, 3);
	str(&w, group_names[m->group]);
	i32(&w, m->gen);
	str(&w, m->member_id);
	str(&w, NULL);
	finish(&w);
	m->state = ST_HB;
	send_buf(m, w.p, w.n);
}

static void
send_commit(member *m)
{
	wb w = {m->wbuf, 0, sizeof(m->wbuf)};
	begin(&w, m, K_OFFSET_COMMIT, 7);
	str(&w, group_names[m->group]);
	i32(&w, m->gen);
	str(&w, m->member_id);
	str(&w, NULL);
	i32(&w, 1);
	str(&w, topic);
	i32(&w, 1);
	i32(&w, m->idx % nparts);
	i64(&w, ++m->offset);
	i32(&w, -1);
	str(&w, "");
	finish(&w);
	m->state = ST_COMMIT;
	send_buf(m, w.p, w.n);
}

/* ---- decoding */
typedef struct {
	const unsigned char *p, *end;
	int bad;
} rd;
static int16_t
r16(rd *r)
{
	if (r->end - r->p < 2) {
		r->bad = 1;
		return 0;
	}
	int16_t v = (int16_t)((r->p[0] << 8) | r->p[1]);
	r->p += 2;
	return v;
}
static int32_t
r32(rd *r)
{
	if (r->end - r->p < 4) {
		r->bad = 1;
		return 0;
	}
	uint32_t v = ((uint32_t)r->p[0] << 24) | ((uint32_t)r->p[1] << 16) |
		     ((uint32_t)r->p[2] << 8) | r->p[3];
	r->p += 4;
	return (int32_t)v;
}
static void
rstr(rd *r, char *out, size_t cap)
{
	int16_t n = r16(r);
	if (out)
		out[0] = 0;
	if (n < 0)
		return;
	if (r->end - r->p < n) {
		r->bad = 1;
		return;
	}
	if (out) {
		size_t k = (size_t)n < cap - 1 ? (size_t)n : cap - 1;
		memcpy(out, r->p, k);
		out[k] = 0;
	}
	r->p += n;
}
static void
rbytes_skip(rd *r)
{
	int32_t n = r32(r);
	if (n > 0) {
		if (r->end - r->p < n) {
			r->bad = 1;
			return;
		}
		r->p += n;
	}
}

/* -i: members waiting for their next request, soonest first (each pushed
 * with a due time of now + the interval, or spread over one interval as a
 * phase starts, so the ring stays in order). */
static member **due;
static int due_head, due_len;

static void
due_push(member *m, int64_t at_us)
{
	m->state = ST_STABLE;
	m->next_hb_ms = at_us; /* µs here */
	due[(due_head + due_len++) % nmembers] = m;
}

/* Every idle member, spread over one interval from now (a phase starts). */
static void
due_spread(void)
{
	int64_t t = now_us();
	due_head = due_len = 0;
	for (int i = 0; i < nmembers; i++)
		if (!M[i].inflight && M[i].state == ST_STABLE)
			due_push(&M[i], t + (int64_t)i * interval_ms * 1000 / nmembers);
}

/* After a heartbeat or commit answered in its phase: the next one, now or
 * (-i) an interval later. */
static void
next_request(member *m)
{
	if (interval_ms)
		due_push(m, now_us() + (int64_t)interval_ms * 1000);
	else if (phase == PH_HB)
		send_hb(m);
	else
		send_commit(m);
}

/* A member is (again) in a stable generation: in the join phase it
 * heartbeats once a second (-i: every INTERVAL_MS); in a timed phase it
 * takes part. */
static void
schedule_hb(member *m)
{
	if (phase == PH_HB || phase == PH_COMMIT) {
		next_request(m);
		return;
	}
	m->state = ST_STABLE;
	m->next_hb_ms = now_ms() + (interval_ms ? interval_ms : 1000);
}

/* ---- -C: ConsumerGroupHeartbeat v0 (flexible: compact strings and
 * arrays, tagged fields; request header v2, response header v1) */
static void
uvarint(wb *w, uint32_t v)
{
	while (v >= 0x80) {
		unsigned char b = (unsigned char)(v | 0x80);
		put(w, &b, 1);
		v >>= 7;
	}
	unsigned char b = (unsigned char)v;
	put(w, &b, 1);
}
static void
cstr(wb *w, const char *s)
{
	uvarint(w, (uint32_t)strlen(s) + 1);
	put(w, s, strlen(s));
}

static unsigned char cg_buf[65536];

static void
send_cgh(member *m)
{
	wb w = {cg_buf, 0, sizeof(cg_buf)};
	begin(&w, m, K_CG_HEARTBEAT, 0);
	uvarint(&w, 0); /* header tags */
	cstr(&w, group_names[m->group]);
	cstr(&w, m->member_id);
	i32(&w, m->cg_joined ? m->gen : 0);
	uvarint(&w, 0); /* InstanceId null */
	uvarint(&w, 0); /* RackId null */
	if (!m->cg_joined) {
		i32(&w, 300000); /* RebalanceTimeoutMs */
		uvarint(&w, 2);  /* SubscribedTopicNames [topic] */
		cstr(&w, topic);
		uvarint(&w, 0); /* ServerAssignor null: the broker's */
		uvarint(&w, 1); /* TopicPartitions [] */
	} else {
		i32(&w, -1);
		uvarint(&w, 0);
		uvarint(&w, 0);
		if (m->cg_ack) { /* the new assignment, owned from now on */
			put(&w, m->cg_tp, m->cg_tplen);
			m->cg_ack = 0;
		} else {
			uvarint(&w, 0);
		}
	}
	uvarint(&w, 0); /* tags */
	finish(&w);
	m->state = ST_CG;
	send_buf(m, w.p, w.n);
}

static uint32_t
ruvarint(rd *r)
{
	uint32_t v = 0;
	for (int shift = 0; shift < 35; shift += 7) {
		if (r->p >= r->end) {
			r->bad = 1;
			return 0;
		}
		unsigned char b = *r->p++;
		v |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = 1;
	return 0;
}
static void
rskip(rd *r, size_t n)
{
	if ((size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return;
	}
	r->p += n;
}
static void
rtags(rd *r)
{
	for (uint32_t k = ruvarint(r); k > 0 && !r->bad; k--) {
		ruvarint(r);
		rskip(r, ruvarint(r));
	}
}
/* A compact (nullable) string into out (cap bytes), "" when null. */
static void
rcstr(rd *r, char *out, size_t cap)
{
	uint32_t n = ruvarint(r);
	out[0] = 0;
	if (n == 0 || r->bad)
		return;
	n--;
	if ((size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return;
	}
	size_t k = n < cap - 1 ? n : cap - 1;
	memcpy(out, r->p, k);
	out[k] = 0;
	r->p += n;
}

static long n_cg_assign;

/* A ConsumerGroupHeartbeat response (after the correlation id). */
static void
on_cgh_response(member *m, rd *r)
{
	rtags(r); /* response header v1 */
	r32(r);   /* throttle */
	int16_t err = r16(r);
	char msg[256], mid[128];
	rcstr(r, msg, sizeof(msg));
	rcstr(r, mid, sizeof(mid));
	int32_t epoch = r32(r);
	int32_t interval = r32(r);
	int8_t has = 0;
	if (!r->bad && r->p < r->end)
		has = (int8_t)*r->p++;
	if (err) {
		if (!n_err)
			fprintf(stderr, "loadgen: first ConsumerGroupHeartbeat error %d (%s)\n",
				err, msg);
		n_err++;
		if (err == E_UNKNOWN_MEMBER || err == 110 /* FENCED_MEMBER_EPOCH */) {
			m->cg_joined = 0; /* join again, owning nothing */
			m->cg_owned = 0;
		}
		if (phase == PH_HB) { /* on at once: the phase counts answers */
			send_cgh(m);
			return;
		}
		m->state = ST_STABLE;
		m->next_hb_ms = now_ms() + 100;
		return;
	}
	if (!m->cg_joined) {
		snprintf(m->member_id, sizeof(m->member_id), "%s", mid);
		m->cg_joined = 1;
	}
	m->gen = epoch;
	m->cg_interval_ms = interval > 0 ? interval : 1000;
	if (has == 1 && !r->bad) {
		/* Assignment: TopicPartitions [{TopicId, Partitions [int32], tags}] */
		const unsigned char *start = r->p;
		int owned = 0;
		uint32_t nt = ruvarint(r);
		for (uint32_t t = 1; t < nt && !r->bad; t++) {
			rskip(r, 16);
			uint32_t np = ruvarint(r);
			if (np > 1) {
				owned += (int)np - 1;
				rskip(r, 4 * ((size_t)np - 1));
			}
			rtags(r);
		}
		if (!r->bad) {
			size_t len = (size_t)(r->p - start);
			m->cg_tp = realloc(m->cg_tp, len);
			memcpy(m->cg_tp, start, len);
			m->cg_tplen = len;
			m->cg_owned = owned;
			m->cg_ack = 1;
			if (phase != PH_JOIN)
				n_cg_assign++;
		}
	}
	if (r->bad) {
		fprintf(stderr, "loadgen: member %d: bad ConsumerGroupHeartbeat response\n",
			m->idx);
		exit(1);
	}
	if (phase == PH_HB) {
		lat_add(&lat_hb, now_us() - m->sent_us);
		n_ok++;
		send_cgh(m);
		return;
	}
	m->state = ST_STABLE;
	/* acknowledge a new assignment at once, else heartbeat at the interval */
	m->next_hb_ms = m->cg_ack ? 0 : now_ms() + m->cg_interval_ms;
}

/* -C: every group's partitions all owned, every member owning its share
 * (the floor or the ceiling of partitions / members of its group) and none still to
 * acknowledge its assignment. */
static int
cg_all_stable(void)
{
	static long *owned, *size;
	if (!owned) {
		owned = calloc((size_t)ngroups, sizeof(*owned));
		size = calloc((size_t)ngroups, sizeof(*size));
		for (int i = 0; i < nmembers; i++)
			size[M[i].group]++;
	}
	memset(owned, 0, (size_t)ngroups * sizeof(*owned));
	for (int i = 0; i < nmembers; i++) {
		long sz = size[M[i].group];
		if (M[i].cg_ack || M[i].cg_owned < nparts / sz ||
		    M[i].cg_owned > (nparts + sz - 1) / sz)
			return 0;
		owned[M[i].group] += M[i].cg_owned;
	}
	for (int g = 0; g < ngroups; g++)
		if (owned[g] != nparts)
			return 0;
	return 1;
}

static void
on_response(member *m, const unsigned char *p, size_t n)
{
	rd r = {p, p + n, 0};
	int32_t corr = r32(&r);
	m->inflight = 0;
	if (corr != m->corr) {
		fprintf(stderr, "loadgen: member %d: correlation %d != %d\n", m->idx, corr,
			m->corr);
		exit(1);
	}
	switch (m->state) {
	case ST_CG:
		on_cgh_response(m, &r);
		return;
	case ST_JOIN: {
		r32(&r);
		int16_t err = r16(&r);
		int32_t gen = r32(&r);
		char leader[128], mid[128];
		rstr(&r, NULL, 0);
		rstr(&r, leader, sizeof(leader));
		rstr(&r, mid, sizeof(mid));
		if (err == E_MEMBER_ID_REQUIRED) {
			snprintf(m->member_id, sizeof(m->member_id), "%s", mid);
			send_join(m);
			return;
		}
		if (err == E_UNKNOWN_MEMBER) {
			m->member_id[0] = 0;
			send_join(m);
			return;
		}
		if (err) {
			if (!n_err)
				fprintf(stderr, "loadgen: first JoinGroup error %d\n", err);
			n_err++;
			send_join(m);
			return;
		}
		m->gen = gen;
		snprintf(m->member_id, sizeof(m->member_id), "%s", mid);
		m->is_leader = !strcmp(leader, mid);
		if (m->is_leader) {
			int32_t cnt = r32(&r);
			free(m->peers);
			m->peers = calloc(cnt > 0 ? (size_t)cnt : 1, sizeof(*m->peers));
			m->npeers = 0;
			for (int32_t i = 0; i < cnt && !r.bad; i++) {
				rstr(&r, m->peers[m->npeers++], 128);
				rstr(&r, NULL, 0);
				rbytes_skip(&r);
			}
		}
		send_sync(m);
		return;
	}
	case ST_SYNC: {
		r32(&r);
		int16_t err = r16(&r);
		if (err == E_NONE) {
			schedule_hb(m);
		} else {
			if (err != E_REBALANCING) {
				if (!n_err)
					fprintf(stderr, "loadgen: first SyncGroup error %d\n", err);
				n_err++;
			}
			if (err == E_UNKNOWN_MEMBER)
				m->member_id[0] = 0;
			send_join(m);
		}
		return;
	}
	case ST_HB:
	case ST_COMMIT: {
		int16_t err;
		if (m->state == ST_HB) {
			r32(&r);
			err = r16(&r);
		} else {
			r32(&r);
			r32(&r); /* topics */
			rstr(&r, NULL, 0);
			r32(&r);
			r32(&r);
			err = r16(&r);
		}
		if (err == E_NONE) {
			if (m->sent_us < phase_t0_us)
				; /* sent before the phase */
			else if (phase == PH_HB && m->state == ST_HB)
				lat_add(&lat_hb, now_us() - m->sent_us);
			else if (phase == PH_COMMIT && m->state == ST_COMMIT)
				lat_add(&lat_commit, now_us() - m->sent_us);
			if (phase != PH_JOIN)
				n_ok++;
		} else if (err == E_REBALANCING || err == E_ILLEGAL_GENERATION ||
			   err == E_UNKNOWN_MEMBER) {
			if (phase != PH_JOIN)
				n_rebal++;
			if (err == E_UNKNOWN_MEMBER)
				m->member_id[0] = 0;
			send_join(m);
			return;
		} else {
			if (!n_err)
				fprintf(stderr, "loadgen: first %s error %d\n",
					m->state == ST_HB ? "Heartbeat" : "OffsetCommit", err);
			n_err++;
		}
		if (phase == PH_HB || phase == PH_COMMIT)
			next_request(m);
		else
			schedule_hb(m);
		return;
	}
	default:
		fprintf(stderr, "loadgen: unexpected response in state %d\n", m->state);
		exit(1);
	}
}

/* One read buffer for every connection: what is left of a response that is
 * not yet whole goes back to its connection (c->part). */
static unsigned char *rbuf;
static size_t rcap;

static void
on_readable(conn *c)
{
	size_t rlen = c->plen;
	if (rcap < rlen + 65536) {
		rcap = rlen + (1 << 20);
		rbuf = realloc(rbuf, rcap);
	}
	if (c->plen)
		memcpy(rbuf, c->part, c->plen);
	for (;;) {
		if (rcap - rlen < 65536) {
			rcap *= 2;
			rbuf = realloc(rbuf, rcap);
		}
		ssize_t k = io_read(c->fd, c->ssl, rbuf + rlen, rcap - rlen);
		if (k == 0) {
			fprintf(stderr, "loadgen: connection %d closed by the broker\n",
				(int)(c - C));
			exit(1);
		}
		if (k < 0) {
			if (errno == EAGAIN)
				break;
			if (errno == EINTR)
				continue;
			perror("loadgen: read");
			exit(1);
		}
		rlen += (size_t)k;
	}
	size_t off = 0;
	while (rlen - off >= 4) {
		uint32_t len = ((uint32_t)rbuf[off] << 24) | ((uint32_t)rbuf[off + 1] << 16) |
			       ((uint32_t)rbuf[off + 2] << 8) | rbuf[off + 3];
		if (rlen - off - 4 < len)
			break;
		if (!c->qlen) {
			fprintf(stderr, "loadgen: connection %d: a response nobody asked for\n",
				(int)(c - C));
			exit(1);
		}
		member *m = c->q[c->qhead];
		c->qhead = (c->qhead + 1) % c->qcap;
		c->qlen--;
		on_response(m, rbuf + off + 4, len); /* may send: c->q grows, rbuf stays */
		off += 4 + len;
	}
	c->plen = rlen - off;
	if (c->plen) {
		c->part = realloc(c->part, c->plen);
		memcpy(c->part, rbuf + off, c->plen);
	}
}

/* LOADGEN_PHASE_HOOK's command for phase name (see the top). */
static void
phase_hook(const char *name)
{
	const char *hook = getenv("LOADGEN_PHASE_HOOK");
	if (!hook || !*hook)
		return;
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "%s %s", hook, name);
	if (system(cmd) != 0)
		fprintf(stderr, "loadgen: phase hook failed: %s\n", cmd);
}

static int
all_stable(void)
{
	/* every member stable, and within each group one generation */
	static int32_t *gen;
	if (!gen)
		gen = calloc((size_t)ngroups, sizeof(*gen));
	memset(gen, 0, (size_t)ngroups * sizeof(*gen));
	for (int i = 0; i < nmembers; i++) {
		if (M[i].state != ST_STABLE)
			return 0;
		if (!gen[M[i].group])
			gen[M[i].group] = M[i].gen;
		else if (gen[M[i].group] != M[i].gen)
			return 0;
	}
	return 1;
}

/* One request on a blocking connection; the error code at body offset
 * err_at (after the correlation id). */
static int16_t
call_err(int fd, SSL *ssl, const unsigned char *req, size_t n, size_t err_at)
{
	unsigned char resp[512];
	if (io_write(fd, ssl, req, n) != (ssize_t)n)
		exit(1);
	size_t got = 0, need = 4;
	while (got < need) {
		ssize_t k = io_read(fd, ssl, resp + got, need - got);
		if (k <= 0)
			exit(1);
		got += (size_t)k;
		if (got == 4) {
			need = 4 + (((size_t)resp[0] << 24) | ((size_t)resp[1] << 16) |
				    ((size_t)resp[2] << 8) | resp[3]);
			if (need > sizeof(resp) || need < 8 + err_at + 2)
				exit(1);
		}
	}
	return (int16_t)((resp[8 + err_at] << 8) | resp[9 + err_at]);
}

/* FindCoordinator v1 for every group, as clients do first (Kafka creates
 * __consumer_offsets on the first lookup), then OffsetFetch v2 until the
 * group's coordinator answers it (Kafka's offsets partitions take a moment
 * to load after that: JoinGroup would meet NOT_COORDINATOR), so the timed
 * join starts with every coordinator ready. Blocking, on one connection. */
static void
find_coordinators(struct sockaddr_in *sa)
{
	member tmp = {0};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)sa, sizeof(*sa)) < 0) {
		perror("loadgen: connect");
		exit(1);
	}
	SSL *ssl = tls_ctx ? tls_open(fd) : NULL;
	for (int g = 0; g < ngroups; g++) {
		for (int step = 0; step < 2; step++) {
			int16_t err = -1;
			for (int attempt = 0; attempt < 300 && err; attempt++) {
				unsigned char buf[256];
				wb w = {buf, 0, sizeof(buf)};
				if (step == 0) {
					begin(&w, &tmp, 10, 1);
					str(&w, group_names[g]);
					put(&w, "\0", 1); /* key_type GROUP */
				} else {
					begin(&w, &tmp, 9, 2);
					str(&w, group_names[g]);
					i32(&w, -1); /* every topic */
				}
				finish(&w);
				/* FindCoordinator v1: throttle, error; OffsetFetch v2:
				 * an empty topic array, error */
				err = call_err(fd, ssl, buf, w.n, 4);
				if (err) {
					struct timespec d = {0, 100000000};
					nanosleep(&d, NULL);
				}
			}
		}
	}
	if (ssl)
		SSL_free(ssl);
	close(fd);
}

int
main(int argc, char **argv)
{
	const char *bootstrap = NULL, *name = "cohortd";
	int secs = 3, pid = 0, c, echo = 0, nsrc = 1, memory = 0;
	nmembers = 1000;
	ngroups = 10;
	nparts = 10;
	topic = "loadgen";
	const char *cafile = NULL;
	const char *gprefix = "lg";
	while ((c = getopt(argc, argv, "b:m:g:t:P:d:p:x:ET:c:S:i:MCG:")) != -1) {
		switch (c) {
		case 'G':
			gprefix = optarg;
			break;
		case 'C':
			cg_mode = 1;
			break;
		case 'c':
			nconns = atoi(optarg);
			break;
		case 'S':
			nsrc = atoi(optarg);
			break;
		case 'i':
			interval_ms = atoi(optarg);
			break;
		case 'M':
			memory = 1;
			break;
		case 'T':
			cafile = optarg;
			break;
		case 'E':
			echo = 1;
			break;
		case 'b':
			bootstrap = optarg;
			break;
		case 'm':
			nmembers = atoi(optarg);
			break;
		case 'g':
			ngroups = atoi(optarg);
			break;
		case 't':
			topic = optarg;
			break;
		case 'P':
			nparts = atoi(optarg);
			break;
		case 'd':
			secs = atoi(optarg);
			break;
		case 'p':
			pid = atoi(optarg);
			break;
		case 'x':
			name = optarg;
			break;
		default:
			return 2;
		}
	}
	if (!bootstrap || ngroups < 1 || ngroups > 100000 || nmembers < 1 || nparts < 1 ||
	    nconns < 0 || nsrc < 1 || nsrc > 254 || interval_ms < 0) {
		fprintf(stderr, "usage: loadgen -b HOST:PORT -m MEMBERS -g GROUPS [-t TOPIC -P "
				"PARTS -d SECS -p PID -c CONNS -S SOURCES -i MS -M]\n");
		return 2;
	}
	if (!nconns || nconns > nmembers)
		nconns = nmembers;
	int per = (nmembers + nconns - 1) / nconns; /* members per connection */
	nconns = (nmembers + per - 1) / per;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if ((rlim_t)nconns + 64 > rl.rlim_cur) {
		fprintf(stderr,
			"loadgen: %d connections need as many fds, the limit is %llu "
			"(ulimit -Hn): fewer with -c\n",
			nconns, (unsigned long long)rl.rlim_cur);
		return 2;
	}
	if (cafile) {
		tls_ctx = SSL_CTX_new(TLS_client_method());
		if (!tls_ctx || SSL_CTX_load_verify_locations(tls_ctx, cafile, NULL) != 1) {
			fprintf(stderr, "loadgen: cannot load %s\n", cafile);
			return 2;
		}
		SSL_CTX_set_verify(tls_ctx, SSL_VERIFY_PEER, NULL);
	}
	char host[64];
	snprintf(host, sizeof(host), "%s", bootstrap);
	char *colon = strrchr(host, ':');
	if (!colon)
		return 2;
	*colon = 0;
	int port = atoi(colon + 1);
	for (int g = 0; g < ngroups; g++)
		snprintf(group_names[g], sizeof(group_names[g]), "%.8s-%d-%d", gprefix, nmembers,
			 g);

	long rss0 = pid ? rss_kb(pid) : -1, rss_conn = -1;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	M = calloc((size_t)nmembers, sizeof(*M));
	C = calloc((size_t)nconns, sizeof(*C));
	due = calloc((size_t)nmembers, sizeof(*due));
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	inet_pton(AF_INET, host, &sa.sin_addr);
	if (!getenv("LOADGEN_NO_FIND") && !echo)
		find_coordinators(&sa);
	for (int i = 0; i < nmembers; i++) {
		member *m = &M[i];
		m->idx = i;
		m->group = i % ngroups;
		m->c = &C[i / per];
		if (echo) { /* nothing to join: stable at once */
			snprintf(m->member_id, sizeof(m->member_id), "echo-%d", i);
			m->gen = 1;
			m->state = ST_STABLE;
		}
	}
	long long cpu_join = pid ? cpu_ticks(pid) : -1;
	int64_t t0 = now_ms();
	for (int j = 0; j < nconns; j++) {
		conn *cn = &C[j];
		cn->qcap = per;
		cn->q = calloc((size_t)per, sizeof(*cn->q));
		/* CLOEXEC: the phase hook's gdb breaks on fds above FD_SETSIZE */
		cn->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (cn->fd < 0) {
			perror("loadgen: socket");
			return 1;
		}
		if (nsrc > 1) { /* 127.0.0.(1 + j % nsrc), the port chosen at connect */
			int one = 1;
			setsockopt(cn->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
			struct sockaddr_in src = {
				.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(0x7f000001u + (uint32_t)(j % nsrc))};
			if (bind(cn->fd, (struct sockaddr *)&src, sizeof(src)) < 0) {
				perror("loadgen: bind");
				return 1;
			}
		}
		if (connect(cn->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			fprintf(stderr, "loadgen: connection %d: ", j);
			perror("connect");
			return 1;
		}
		int one = 1;
		setsockopt(cn->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (tls_ctx)
			cn->ssl = tls_open(cn->fd);
		if (memory) { /* ApiVersions v0: the error code first */
			member tmp = {0};
			unsigned char buf[64];
			wb w = {buf, 0, sizeof(buf)};
			begin(&w, &tmp, 18, 0);
			finish(&w);
			if (call_err(cn->fd, cn->ssl, buf, w.n, 0)) {
				fprintf(stderr, "loadgen: ApiVersions failed\n");
				return 1;
			}
		}
		fcntl(cn->fd, F_SETFL, O_NONBLOCK);
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = cn};
		epoll_ctl(ep, EPOLL_CTL_ADD, cn->fd, &ev);
		if (!memory && !echo) /* as before -M: members join as they connect */
			for (int i = j * per; i < nmembers && i < (j + 1) * per; i++)
				(cg_mode ? send_cgh : send_join)(&M[i]);
	}
	if (memory) {
		rss_conn = pid ? rss_kb(pid) : -1;
		phase_hook("conns");
		cpu_join = pid ? cpu_ticks(pid) : -1;
		t0 = now_ms();
		if (!echo)
			for (int i = 0; i < nmembers; i++)
				(cg_mode ? send_cgh : send_join)(&M[i]);
	}

	struct epoll_event evs[256];
	int64_t phase_start = 0, join_ms = 0;
	long long hb_rate = 0, commit_rate = 0;
	long rss1 = -1;
	long long cpu0 = -1;
	int64_t deadline = t0 + 300000, next_scan = 0, settle_until = 0;
	phase = PH_JOIN;
	while (phase != PH_DONE) {
		int n = epoll_wait(ep, evs, 256, interval_ms ? 1 : 5);
		for (int i = 0; i < n; i++)
			on_readable(evs[i].data.ptr);
		if (interval_ms && (phase == PH_HB || phase == PH_COMMIT)) {
			int64_t t = now_us();
			while (due_len && due[due_head]->next_hb_ms <= t) {
				member *m = due[due_head];
				due_head = (due_head + 1) % nmembers;
				due_len--;
				if (phase == PH_HB)
					send_hb(m);
				else
					send_commit(m);
			}
		}
		int64_t now = now_ms();
		if (now > deadline) {
			fprintf(stderr, "loadgen: no stable groups within 300 s\n");
			return 1;
		}
		if (phase == PH_JOIN) {
			if (now < next_scan) /* the scans are O(members): every 10 ms */
				continue;
			next_scan = now + 10;
			for (int i = 0; i < nmembers; i++)
				if (M[i].state == ST_STABLE && !M[i].inflight &&
				    now >= M[i].next_hb_ms)
					(cg_mode ? send_cgh : send_hb)(&M[i]);
			if (settle_until || (cg_mode ? cg_all_stable() : all_stable())) {
				if (!settle_until) {
					join_ms = now - t0;
					rss1 = pid ? rss_kb(pid) : -1;
				}
				if (memory && !settle_until) {
					/* -M's hook stops the broker (gdb, a full GC):
					 * 2 s for the backlog it leaves, as in the join */
					phase_hook("hb");
					settle_until = now_ms() + 2000;
					continue;
				}
				if (now < settle_until)
					continue;
				phase = PH_HB;
				if (!memory)
					phase_hook("hb");
				n_ok = n_rebal = 0;
				phase_start = now_ms();
				phase_t0_us = now_us();
				cpu0 = pid ? cpu_ticks(pid) : -1;
				if (cg_mode && cpu0 >= 0 && cpu_join >= 0)
					fprintf(stderr, "CPUJOIN %s %.0f\n", name,
						(double)(cpu0 - cpu_join) * 1000 /
							(double)sysconf(_SC_CLK_TCK));
				if (interval_ms)
					due_spread();
				else
					for (int i = 0; i < nmembers; i++)
						if (!M[i].inflight)
							(cg_mode ? send_cgh : send_hb)(&M[i]);
			}
		} else if (now - phase_start >= secs * 1000) {
			long long rate = n_ok * 1000LL / (now - phase_start);
			fprintf(stderr, "COUNT %s %ld\n", phase == PH_HB ? "hb" : "commit", n_ok);
			if (phase == PH_HB && echo) {
				hb_rate = rate;
				fprintf(stderr, "loadgen: heartbeats: %lld/s (echo peer)\n", rate);
				phase = PH_DONE;
			} else if (phase == PH_HB && cg_mode) {
				hb_rate = rate;
				fprintf(stderr,
					"loadgen: ConsumerGroupHeartbeats: %lld/s (%ld errors, %ld "
					"new "
					"assignments)\n",
					rate, n_err, n_cg_assign);
				long long cpu1 = pid ? cpu_ticks(pid) : -1;
				if (cpu0 >= 0 && cpu1 >= 0 && n_ok > 0)
					fprintf(stderr, "CPU %s %.1f\n", name,
						(double)(cpu1 - cpu0) * 1e6 /
							(double)sysconf(_SC_CLK_TCK) /
							(double)n_ok);
				phase = PH_DONE;
				phase_hook("done");
			} else if (phase == PH_HB) {
				hb_rate = rate;
				phase = PH_COMMIT;
				phase_hook("commit");
				fprintf(stderr,
					"loadgen: heartbeats: %lld/s (%ld rebalance errors)\n",
					rate, n_rebal);
				/* let in-flight heartbeats drain into commits */
				n_ok = n_rebal = 0;
				phase_start = now;
				phase_t0_us = now_us();
				if (interval_ms)
					due_spread();
				else
					for (int i = 0; i < nmembers; i++)
						if (!M[i].inflight && M[i].state == ST_STABLE)
							send_commit(&M[i]);
			} else {
				commit_rate = rate;
				fprintf(stderr, "loadgen: commits: %lld/s (%ld rebalance errors)\n",
					rate, n_rebal);
				phase = PH_DONE;
				phase_hook("done");
			}
		}
	}
	printf("RESULT %s %d %d %.2f %lld %lld %ld %ld %ld", name, nmembers, ngroups,
	       join_ms / 1000.0, hb_rate, commit_rate, rss0, rss1, n_err);
	printf(" %u %u %u", lat_q(&lat_hb, 0.5), lat_q(&lat_hb, 0.99), lat_q(&lat_hb, 1));
	printf(" %u %u %u\n", lat_q(&lat_commit, 0.5), lat_q(&lat_commit, 0.99),
	       lat_q(&lat_commit, 1));
	if (memory)
		printf("MEMORY %s %d %d %ld %ld %ld\n", name, nmembers, nconns, rss0, rss_conn,
		       rss1);
	return 0;
}
