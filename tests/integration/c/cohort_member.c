/*
 * cohort_member.c: one libcohort group consumer, driven line by line over
 * stdin/stdout with c/group_consumer.c's protocol (options, events and
 * commands; test_group_helpers.MemberProcess parses it), so the scenarios
 * of client_scenarios.py run on libcohort as on every other client.
 *
 *   cohort_member -b HOST:PORT -g GROUP -t TOPIC[,TOPIC...] [-a ASSIGNOR]
 *                 [-i INSTANCE] [-s SESSION_MS] [-n NAME] [-R] [-P N] [-q]
 *                 [-D MS] [-X key=value]...
 *
 * -W MS sleeps MS milliseconds inside every revoke callback (a slow one).
 * -V prints every record whole: REC t p o key value h1=v1,h2=v2 (key,
 * value and header values in hex, "~" for null, "-" for no headers).
 * -R commits the consumed positions of revoked partitions synchronously in
 * the revoke callback (never in lost; -L tries it in lost too: such a commit
 * must be refused, COMMIT lines show it); -P N commits the consumed positions
 * every N records. Events: READY, ASSIGNED <member> <parts>, REVOKED
 * <parts>, LOST <parts>, ASSIGNMENT <member> <parts> (after OWNS usec <parts>,
 * the same assignment stamped), MSG t p o usec,
 * COMMIT t p o ERROR usec, COMMITTED t p o, ERROR name reason, FATAL name
 * reason, CLOSED. Commands: close, commit T P O, commitpos, committed T P...,
 * exit; and libcohort's own: seek T P O, commitasync (the processed
 * positions, COMMIT lines printed by the result callback), seekbeg T P,
 * seekend T P, seekts T P MS (SEEK lines), pause T P, resume T P (PAUSE /
 * RESUME T P ERROR), paused (PAUSED parts), position T P (POSITION T P O),
 * endoffset T P (cohort_end_offsets: ENDOFFSET T P O ERROR),
 * stall MS (no poll for MS milliseconds, then STALLED MS), unsubscribe
 * (the revoke runs inside it; UNSUBSCRIBED ERROR, then ASSIGNMENT),
 * subscribe T[,T...] (SUBSCRIBED ERROR), assign T:P[,T:P...] (ASSIGNED_MANUALLY
 * ERROR, then ASSIGNMENT).
 *
 * -C joins with the consumer protocol (group.protocol=consumer, KIP-848):
 * -a names the broker's assignor (group.remote.assignor) and -s is not
 * set (the broker's group.consumer.* settings rule).
 *
 * -T PATTERN subscribes to the topics matching PATTERN
 * (cohort_subscribe_pattern) instead of -t's list.
 * -A T:P[,T:P...] assigns these partitions (cohort_assign) instead of
 * subscribing (-t is then not needed, -g optional); ASSIGNMENT lines follow
 * the assignment, no rebalance callbacks come.
 */
#define _POSIX_C_SOURCE 200809L
#include <cohort/cohort.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXP 1024

/* The assignment, and per partition the offset after the last record this
 * program processed (-1: none since it was assigned). Commits use these,
 * not cohort_position(): the library's position is past the whole batch
 * the last poll returned, the program's is past the records it printed. */
static struct {
	char topic[128];
	int32_t partition;
	int64_t pos;
} owned[MAXP];
static int nowned;
static int opt_commit_on_revoke, opt_commit_every, opt_quiet, opt_delay_ms, opt_verbose;
static int opt_revoke_sleep_ms, opt_commit_on_lost;
static long since_commit;

static long long
now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static const char *
ename(cohort_err e)
{
	return e == COHORT_OK ? "NO_ERROR" : cohort_err_name(e);
}

static void
hex(const void *p, int32_t len)
{
	if (!p && len < 0) {
		printf("~");
		return;
	}
	if (len == 0)
		printf("\"\"");
	for (int32_t i = 0; i < len; i++)
		printf("%02x", ((const unsigned char *)p)[i]);
}

static void
print_record(const cohort_record *r)
{
	printf("REC %s %d %lld ", r->topic, r->partition, (long long)r->offset);
	hex(r->key, r->key_len);
	printf(" ");
	hex(r->value, r->value_len);
	printf(" ");
	if (r->headers_n == 0)
		printf("-");
	for (int32_t i = 0; i < r->headers_n; i++) {
		printf("%s%s=", i ? "," : "", r->headers[i].key);
		hex(r->headers[i].value, r->headers[i].value_len);
	}
	printf("\n");
}

static void
print_parts(const char *what, const char *member, const cohort_tp *tps, size_t n)
{
	printf("%s", what);
	if (member)
		printf(" %s", member[0] ? member : "-");
	printf(" ");
	if (n == 0)
		printf("-");
	for (size_t i = 0; i < n; i++)
		printf("%s%s:%d", i ? "," : "", tps[i].topic, tps[i].partition);
	printf("\n");
}

static void
print_assignment(cohort_consumer *c)
{
	char id[256] = "";
	cohort_group_member_id(c, id, sizeof(id));
	cohort_tp tps[MAXP];
	for (int i = 0; i < nowned; i++) {
		tps[i].topic = owned[i].topic;
		tps[i].partition = owned[i].partition;
	}
	char owns[32];
	snprintf(owns, sizeof(owns), "OWNS %lld", now_us());
	print_parts(owns, NULL, tps, (size_t)nowned);
	print_parts("ASSIGNMENT", id, tps, (size_t)nowned);
}

static void
commit_offsets(cohort_consumer *c, cohort_tp_offset *o, size_t n)
{
	if (n == 0)
		return;
	cohort_err err = cohort_commit_sync(c, o, n);
	long long us = now_us();
	for (size_t i = 0; i < n; i++)
		printf("COMMIT %s %d %lld %s %lld\n", o[i].topic, o[i].partition,
		       (long long)o[i].offset, ename(o[i].err ? o[i].err : err), us);
}

/* The processed positions of these partitions (all owned when tps NULL). */
static void
commit_positions(cohort_consumer *c, const cohort_tp *tps, size_t n)
{
	cohort_tp_offset o[MAXP];
	size_t k = 0;
	for (int i = 0; i < nowned; i++) {
		int want = tps == NULL;
		for (size_t j = 0; !want && j < n; j++)
			want = owned[i].partition == tps[j].partition &&
			       strcmp(owned[i].topic, tps[j].topic) == 0;
		if (want && owned[i].pos >= 0)
			o[k++] = (cohort_tp_offset){owned[i].topic, owned[i].partition,
						    owned[i].pos, 0};
	}
	commit_offsets(c, o, k);
}

static void
processed(const cohort_record *r)
{
	for (int i = 0; i < nowned; i++)
		if (owned[i].partition == r->partition && strcmp(owned[i].topic, r->topic) == 0)
			owned[i].pos = r->offset + 1;
}

static void
on_assigned(cohort_consumer *c, const cohort_tp *tps, size_t n, void *opaque)
{
	(void)opaque;
	char id[256] = "";
	cohort_group_member_id(c, id, sizeof(id));
	print_parts("ASSIGNED", id, tps, n);
	for (size_t i = 0; i < n && nowned < MAXP; i++) {
		snprintf(owned[nowned].topic, sizeof(owned[nowned].topic), "%s", tps[i].topic);
		owned[nowned].pos = -1;
		owned[nowned++].partition = tps[i].partition;
	}
	print_assignment(c);
}

static void
drop(const cohort_tp *tps, size_t n)
{
	int k = 0;
	for (int i = 0; i < nowned; i++) {
		int gone = 0;
		for (size_t j = 0; j < n && !gone; j++)
			gone = owned[i].partition == tps[j].partition &&
			       strcmp(owned[i].topic, tps[j].topic) == 0;
		if (!gone)
			owned[k++] = owned[i];
	}
	nowned = k;
}

static void
on_revoked(cohort_consumer *c, const cohort_tp *tps, size_t n, void *opaque)
{
	(void)opaque;
	print_parts("REVOKED", NULL, tps, n);
	if (opt_revoke_sleep_ms)
		usleep((useconds_t)opt_revoke_sleep_ms * 1000);
	if (opt_commit_on_revoke)
		commit_positions(c, tps, n);
	drop(tps, n);
	print_assignment(c);
}

static void
on_lost(cohort_consumer *c, const cohort_tp *tps, size_t n, void *opaque)
{
	(void)opaque;
	print_parts("LOST", NULL, tps, n);
	if (opt_commit_on_lost)
		commit_positions(c, tps, n);
	drop(tps, n);
	print_assignment(c);
}

/* After cohort_assign: the partitions are owned at once (no callback). */
static void
on_assigned_manually(cohort_consumer *c, const cohort_tp *tps, size_t n)
{
	for (size_t i = 0; i < n && nowned < MAXP; i++) {
		snprintf(owned[nowned].topic, sizeof(owned[nowned].topic), "%s", tps[i].topic);
		owned[nowned].pos = -1;
		owned[nowned++].partition = tps[i].partition;
	}
	print_assignment(c);
}

static void
set(cohort_conf *conf, const char *k, const char *v)
{
	char err[512];
	if (cohort_conf_set(conf, k, v, err, sizeof(err)) != COHORT_OK) {
		fprintf(stderr, "cohort_member: %s\n", err);
		exit(2);
	}
}

static void
on_commit_async(cohort_consumer *c, cohort_err err, const cohort_tp_offset *o, size_t n,
		void *opaque)
{
	(void)c;
	(void)opaque;
	long long us = now_us();
	for (size_t i = 0; i < n; i++)
		printf("COMMIT %s %d %lld %s %lld\n", o[i].topic, o[i].partition,
		       (long long)o[i].offset, ename(o[i].err ? o[i].err : err), us);
}

/* One command line; returns 1 to close, 2 to exit without closing. */
static int
command(cohort_consumer *c, char *line)
{
	char *w[64];
	int n = 0;
	for (char *s = strtok(line, " \t\r\n"); s && n < 64; s = strtok(NULL, " \t\r\n"))
		w[n++] = s;
	if (n == 0)
		return 0;
	if (strcmp(w[0], "close") == 0)
		return 1;
	if (strcmp(w[0], "exit") == 0)
		return 2;
	if (strcmp(w[0], "commitpos") == 0) {
		commit_positions(c, NULL, 0);
	} else if (strcmp(w[0], "stall") == 0 && n == 2) {
		long ms = atol(w[1]);
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
		nanosleep(&ts, NULL);
		printf("STALLED %ld\n", ms);
	} else if (strcmp(w[0], "commit") == 0 && n == 4) {
		cohort_tp_offset o = {w[1], atoi(w[2]), atoll(w[3]), 0};
		commit_offsets(c, &o, 1);
	} else if (strcmp(w[0], "seek") == 0 && n == 4) {
		cohort_err err = cohort_seek(c, w[1], atoi(w[2]), atoll(w[3]));
		printf("SEEK %s %s %s %s\n", w[1], w[2], w[3], ename(err));
	} else if ((strcmp(w[0], "seekbeg") == 0 || strcmp(w[0], "seekend") == 0) && n == 3) {
		cohort_tp tp = {w[1], atoi(w[2])};
		cohort_err err = w[0][4] == 'b' ? cohort_seek_to_beginning(c, &tp, 1)
						: cohort_seek_to_end(c, &tp, 1);
		printf("SEEK %s %s %s %s\n", w[1], w[2], w[0] + 4, ename(err));
	} else if (strcmp(w[0], "seekts") == 0 && n == 4) {
		cohort_tp tp = {w[1], atoi(w[2])};
		cohort_err err = cohort_seek_to_timestamp(c, &tp, 1, atoll(w[3]));
		printf("SEEK %s %s ts:%s %s\n", w[1], w[2], w[3], ename(err));
	} else if ((strcmp(w[0], "pause") == 0 || strcmp(w[0], "resume") == 0) && n == 3) {
		cohort_tp tp = {w[1], atoi(w[2])};
		cohort_err err =
			w[0][0] == 'p' ? cohort_pause(c, &tp, 1) : cohort_resume(c, &tp, 1);
		printf("%s %s %s %s\n", w[0][0] == 'p' ? "PAUSE" : "RESUME", w[1], w[2],
		       ename(err));
	} else if (strcmp(w[0], "paused") == 0) {
		cohort_tp *tps;
		size_t k;
		if (cohort_paused(c, &tps, &k) == COHORT_OK) {
			print_parts("PAUSED", NULL, tps, k);
			free(tps);
		}
	} else if (strcmp(w[0], "position") == 0 && n == 3) {
		int64_t pos = -1;
		cohort_err err = cohort_position(c, w[1], atoi(w[2]), &pos);
		printf("POSITION %s %s %lld %s\n", w[1], w[2], (long long)pos, ename(err));
	} else if (strcmp(w[0], "endoffset") == 0 && n == 3) {
		cohort_tp_offset o = {w[1], atoi(w[2]), -1, 0};
		cohort_err err = cohort_end_offsets(c, &o, 1);
		printf("ENDOFFSET %s %s %lld %s\n", w[1], w[2], (long long)o.offset, ename(err));
	} else if (strcmp(w[0], "unsubscribe") == 0) {
		cohort_err err = cohort_unsubscribe(c);
		printf("UNSUBSCRIBED %s\n", ename(err));
		if (!err)
			nowned = 0; /* a manual assignment ends without a callback */
		print_assignment(c);
	} else if (strcmp(w[0], "subscribe") == 0 && n == 2) {
		const char *topics[64];
		size_t nt = 0;
		for (char *t = strtok(w[1], ","); t && nt < 64; t = strtok(NULL, ","))
			topics[nt++] = t;
		printf("SUBSCRIBED %s\n", ename(cohort_subscribe(c, topics, nt)));
	} else if (strcmp(w[0], "assign") == 0 && n == 2) {
		cohort_tp tps[64];
		size_t nt = 0;
		for (char *t = strtok(w[1], ","); t && nt < 64; t = strtok(NULL, ",")) {
			char *colon = strrchr(t, ':');
			if (colon) {
				*colon = 0;
				tps[nt++] = (cohort_tp){t, atoi(colon + 1)};
			}
		}
		cohort_err err = cohort_assign(c, tps, nt);
		printf("ASSIGNED_MANUALLY %s\n", ename(err));
		if (!err)
			on_assigned_manually(c, tps, nt);
	} else if (strcmp(w[0], "commitasync") == 0) {
		cohort_tp_offset o[MAXP];
		size_t k = 0;
		for (int i = 0; i < nowned; i++)
			if (owned[i].pos >= 0)
				o[k++] = (cohort_tp_offset){owned[i].topic, owned[i].partition,
							    owned[i].pos, 0};
		cohort_err err = cohort_commit_async(c, o, k, on_commit_async, NULL);
		if (err)
			printf("ERROR %s commitasync\n", ename(err));
	} else if (strcmp(w[0], "committed") == 0 && n >= 3) {
		cohort_tp_offset o[64];
		for (int i = 2; i < n; i++)
			o[i - 2] = (cohort_tp_offset){w[1], atoi(w[i]), -1, 0};
		cohort_err err = cohort_committed(c, o, (size_t)(n - 2));
		if (err)
			printf("COMMITTED_ERROR %s\n", ename(err));
		else
			for (int i = 0; i < n - 2; i++)
				printf("COMMITTED %s %d %lld\n", o[i].topic, o[i].partition,
				       (long long)(o[i].offset < 0 ? -1001 : o[i].offset));
	} else {
		printf("ERROR _INVALID_ARG unknown command\n");
	}
	return 0;
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	cohort_conf *conf = cohort_conf_new();
	const char *topics_arg = NULL;
	int session_ms = 6000, opt, nextra = 0;
	char *extra[32];
	char hb[32], sess[32];
	const char *assign_arg = NULL, *pattern_arg = NULL, *assignor = NULL;
	int consumer_protocol = 0;
	while ((opt = getopt(argc, argv, "b:g:t:a:i:s:n:RLP:qD:X:VW:A:T:C")) != -1) {
		switch (opt) {
		case 'b':
			set(conf, "bootstrap.servers", optarg);
			break;
		case 'g':
			if (optarg[0]) /* -g "": no group.id (with -A) */
				set(conf, "group.id", optarg);
			break;
		case 't':
			topics_arg = optarg;
			break;
		case 'a':
			assignor = optarg;
			break;
		case 'C':
			consumer_protocol = 1;
			break;
		case 'i':
			set(conf, "group.instance.id", optarg);
			break;
		case 's':
			session_ms = atoi(optarg);
			break;
		case 'n':
			set(conf, "client.id", optarg);
			break;
		case 'R':
			opt_commit_on_revoke = 1;
			break;
		case 'L':
			opt_commit_on_lost = 1;
			break;
		case 'P':
			opt_commit_every = atoi(optarg);
			break;
		case 'q':
			opt_quiet = 1;
			break;
		case 'V':
			opt_verbose = 1;
			break;
		case 'W':
			opt_revoke_sleep_ms = atoi(optarg);
			break;
		case 'D':
			opt_delay_ms = atoi(optarg);
			break;
		case 'A':
			assign_arg = optarg;
			break;
		case 'T':
			pattern_arg = optarg;
			break;
		case 'X':
			if (!strchr(optarg, '=') || nextra == 32) {
				fprintf(stderr, "cohort_member: -X wants key=value\n");
				return 2;
			}
			extra[nextra++] = optarg; /* applied after the fixed settings */
			break;
		default:
			fprintf(stderr,
				"usage: cohort_member -b HOST:PORT -g GROUP -t TOPICS ...\n");
			return 2;
		}
	}
	if (!topics_arg && !assign_arg && !pattern_arg) {
		fprintf(stderr, "cohort_member: -t, -T or -A is required\n");
		return 2;
	}
	snprintf(sess, sizeof(sess), "%d", session_ms);
	snprintf(hb, sizeof(hb), "%d", session_ms / 10 > 100 ? session_ms / 10 : 100);
	if (consumer_protocol) {
		set(conf, "group.protocol", "consumer");
		if (assignor)
			set(conf, "group.remote.assignor", assignor);
	} else {
		set(conf, "session.timeout.ms", sess);
		set(conf, "heartbeat.interval.ms", hb);
		if (assignor)
			set(conf, "partition.assignment.strategy", assignor);
	}
	set(conf, "enable.auto.commit", "false");
	set(conf, "auto.offset.reset", "earliest");
	set(conf, "metadata.max.age.ms", "2000");
	for (int i = 0; i < nextra; i++) {
		char *eq = strchr(extra[i], '=');
		*eq = 0;
		set(conf, extra[i], eq + 1);
	}
	cohort_rebalance_listener l = {on_assigned, on_revoked, on_lost, NULL};
	cohort_conf_set_rebalance_listener(conf, &l);
	char err[512];
	cohort_consumer *c = cohort_consumer_new(conf, err, sizeof(err));
	cohort_conf_free(conf);
	if (!c) {
		fprintf(stderr, "cohort_member: %s\n", err);
		return 2;
	}
	char *tlist = strdup(topics_arg ? topics_arg : assign_arg ? assign_arg : "");
	const char *topics[64];
	size_t nt = 0;
	for (char *s = strtok(tlist, ","); s && nt < 64; s = strtok(NULL, ","))
		topics[nt++] = s;
	cohort_err e;
	if (assign_arg) {
		cohort_tp tps[64];
		for (size_t i = 0; i < nt; i++) {
			char *colon = strrchr((char *)topics[i], ':');
			if (!colon) {
				fprintf(stderr, "cohort_member: -A wants TOPIC:PARTITION,...\n");
				return 2;
			}
			*colon = 0;
			tps[i] = (cohort_tp){topics[i], atoi(colon + 1)};
		}
		e = cohort_assign(c, tps, nt);
		if (!e)
			on_assigned_manually(c, tps, nt);
	} else if (pattern_arg) {
		e = cohort_subscribe_pattern(c, pattern_arg, err, sizeof(err));
		if (e)
			fprintf(stderr, "cohort_member: %s\n", err);
	} else {
		e = cohort_subscribe(c, topics, nt);
	}
	if (e) {
		printf("FATAL %s %s\n", ename(e), assign_arg ? "assign" : "subscribe");
		return 2;
	}
	printf("READY\n");
	char line[4096];
	size_t have = 0;
	int stop = 0;
	while (!stop) {
		const cohort_record *recs;
		size_t n;
		e = cohort_poll(c, 50, &recs, &n);
		if (e) {
			printf("%s %s %s\n", cohort_err_is_fatal(e) ? "FATAL" : "ERROR", ename(e),
			       cohort_err_str(e));
			if (cohort_err_is_fatal(e))
				break;
		}
		for (size_t i = 0; i < n; i++) {
			if (!opt_quiet)
				printf("MSG %s %d %lld %lld\n", recs[i].topic, recs[i].partition,
				       (long long)recs[i].offset, now_us());
			if (opt_verbose)
				print_record(&recs[i]);
			processed(&recs[i]);
			if (opt_delay_ms)
				usleep((useconds_t)opt_delay_ms * 1000);
			if (opt_commit_every && ++since_commit >= opt_commit_every) {
				since_commit = 0;
				commit_positions(c, NULL, 0);
			}
		}
		struct pollfd pfd = {0, POLLIN, 0};
		while (!stop && poll(&pfd, 1, 0) > 0) {
			ssize_t r = read(0, line + have, sizeof(line) - 1 - have);
			if (r <= 0) {
				stop = 1; /* stdin closed: close */
				break;
			}
			have += (size_t)r;
			char *nl;
			while (!stop && (nl = memchr(line, '\n', have))) {
				*nl = 0;
				int rc = command(c, line);
				size_t used = (size_t)(nl - line) + 1;
				memmove(line, nl + 1, have - used);
				have -= used;
				if (rc == 2) {
					fflush(stdout);
					_exit(3);
				}
				if (rc == 1)
					stop = 1;
			}
			if (have == sizeof(line) - 1)
				have = 0;
		}
	}
	e = cohort_consumer_close(c);
	if (e && !cohort_err_is_fatal(e))
		printf("ERROR %s close\n", ename(e));
	cohort_consumer_free(c);
	free(tlist);
	printf("CLOSED\n");
	return 0;
}
