/*
 * group_consumer.c: one librdkafka (C API) group consumer, driven line by
 * line over stdin/stdout by the test_group_*.py integration tests.
 *
 *   group_consumer -b HOST:PORT -g GROUP -t TOPIC[,TOPIC...] [options]
 *     -a ASSIGNOR   partition.assignment.strategy (range, roundrobin,
 *                   cooperative-sticky; default range)
 *     -i ID         group.instance.id (static membership)
 *     -s MS         session.timeout.ms (default 6000); heartbeat = MS/10
 *     -n NAME       client.id
 *     -R            commit the consumed positions of revoked partitions
 *                   (synchronously) in the revoke / lost callback
 *     -P N          commit consumed positions synchronously every N messages
 *     -q            do not print MSG lines (consume quietly)
 *     -D MS         sleep MS milliseconds after each message (a slow consumer)
 *     -X key=value  any other librdkafka property (repeatable)
 *
 * Output, one event per line (stdout is line buffered):
 *   READY
 *   ASSIGNED <member-id> <t:p,t:p,...>   partitions added by this rebalance
 *   REVOKED <t:p,...>                    partitions taken away (or LOST)
 *   LOST <t:p,...>
 *   ASSIGNMENT <member-id> <t:p,...>     the full assignment after a change
 *   (each ASSIGNMENT comes after OWNS <usec> <t:p,...>: the same, stamped)
 *   MSG <topic> <partition> <offset> <usec>
 *   COMMIT <topic> <partition> <offset> <error-name> <usec>   a sync commit result
 *   (<usec>: CLOCK_MONOTONIC in microseconds, comparable across processes)
 *   COMMITTED <topic> <partition> <offset>             answer to "committed"
 *   ERROR <error-name> <reason>          error_cb
 *   FATAL <error-name> <reason>          rd_kafka_fatal_error()
 *   CLOSED
 * Commands on stdin:
 *   close                    rd_kafka_consumer_close, destroy, CLOSED, exit 0
 *   commit T P O             synchronous commit of offset O for T/P
 *   commitpos                synchronous commit of the current positions
 *   committed T P [P...]     rd_kafka_committed for those partitions
 *   exit                     _exit(3) without closing (a crash)
 * A "-" partition list is empty.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int opt_commit_on_revoke;
static int opt_commit_every;
static int opt_quiet;
static int opt_delay_ms;
static long consumed_since_commit;
static volatile sig_atomic_t stop_flag;

static void
die(const char *fmt, const char *a)
{
	fprintf(stderr, "group_consumer: ");
	fprintf(stderr, fmt, a);
	fprintf(stderr, "\n");
	exit(2);
}

static long long
now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
set(rd_kafka_conf_t *conf, const char *k, const char *v)
{
	char err[512];
	if (rd_kafka_conf_set(conf, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK)
		die("config: %s", err);
}

static void
print_list(const rd_kafka_topic_partition_list_t *l)
{
	if (!l || l->cnt == 0) {
		fputs("-", stdout);
		return;
	}
	for (int i = 0; i < l->cnt; i++)
		printf("%s%s:%d", i ? "," : "", l->elems[i].topic, (int)l->elems[i].partition);
}

static void
print_member(rd_kafka_t *rk)
{
	char *m = rd_kafka_memberid(rk);
	fputs(m && *m ? m : "-", stdout);
	if (m)
		rd_kafka_mem_free(rk, m);
}

static void
print_assignment(rd_kafka_t *rk)
{
	rd_kafka_topic_partition_list_t *a = NULL;
	if (rd_kafka_assignment(rk, &a) != RD_KAFKA_RESP_ERR_NO_ERROR)
		return;
	printf("OWNS %lld ", now_us());
	print_list(a);
	fputc('\n', stdout);
	fputs("ASSIGNMENT ", stdout);
	print_member(rk);
	fputc(' ', stdout);
	print_list(a);
	fputc('\n', stdout);
	rd_kafka_topic_partition_list_destroy(a);
}

/* Synchronously commit the current positions of `parts` (all assigned when NULL). */
static void
commit_positions(rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *parts)
{
	rd_kafka_topic_partition_list_t *a = NULL, *c;
	if (parts)
		a = rd_kafka_topic_partition_list_copy(parts);
	else if (rd_kafka_assignment(rk, &a) != RD_KAFKA_RESP_ERR_NO_ERROR)
		return;
	rd_kafka_position(rk, a);
	c = rd_kafka_topic_partition_list_new(a->cnt);
	for (int i = 0; i < a->cnt; i++)
		if (a->elems[i].offset >= 0)
			rd_kafka_topic_partition_list_add(c, a->elems[i].topic,
							  a->elems[i].partition)
				->offset = a->elems[i].offset;
	if (c->cnt > 0) {
		rd_kafka_resp_err_t err = rd_kafka_commit(rk, c, 0);
		for (int i = 0; i < c->cnt; i++)
			printf("COMMIT %s %d %lld %s %lld\n", c->elems[i].topic,
			       (int)c->elems[i].partition, (long long)c->elems[i].offset,
			       rd_kafka_err2name(err ? err : c->elems[i].err), now_us());
	}
	consumed_since_commit = 0;
	rd_kafka_topic_partition_list_destroy(c);
	rd_kafka_topic_partition_list_destroy(a);
}

static void
rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
	     void *opaque)
{
	(void)opaque;
	int coop = !strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE");
	if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
		fputs("ASSIGNED ", stdout);
		print_member(rk);
		fputc(' ', stdout);
		print_list(parts);
		fputc('\n', stdout);
		if (coop) {
			rd_kafka_error_t *e = rd_kafka_incremental_assign(rk, parts);
			if (e) {
				printf("ERROR %s incremental_assign: %s\n",
				       rd_kafka_err2name(rd_kafka_error_code(e)),
				       rd_kafka_error_string(e));
				rd_kafka_error_destroy(e);
			}
		} else {
			rd_kafka_assign(rk, parts);
		}
	} else {
		int lost = rd_kafka_assignment_lost(rk);
		fputs(lost ? "LOST " : "REVOKED ", stdout);
		print_list(parts);
		fputc('\n', stdout);
		if (opt_commit_on_revoke && !lost)
			commit_positions(rk, parts);
		if (coop) {
			rd_kafka_error_t *e = rd_kafka_incremental_unassign(rk, parts);
			if (e)
				rd_kafka_error_destroy(e);
		} else {
			rd_kafka_assign(rk, NULL);
		}
	}
	print_assignment(rk);
	fflush(stdout);
}

static void
error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	(void)opaque;
	if (err == RD_KAFKA_RESP_ERR__FATAL) {
		char buf[512];
		rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, buf, sizeof(buf));
		printf("FATAL %s %s\n", rd_kafka_err2name(orig), buf);
	} else {
		printf("ERROR %s %s\n", rd_kafka_err2name(err), reason);
	}
	fflush(stdout);
}

static void
on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* Print (and optionally commit) one consumed message or error event. */
static void
handle_message(rd_kafka_t *rk, rd_kafka_message_t *m)
{
	if (!m->err) {
		if (!opt_quiet)
			printf("MSG %s %d %lld %lld\n", rd_kafka_topic_name(m->rkt),
			       (int)m->partition, (long long)m->offset, now_us());
		if (opt_delay_ms > 0) {
			struct timespec d = {opt_delay_ms / 1000, (opt_delay_ms % 1000) * 1000000L};
			nanosleep(&d, NULL);
		}
		if (opt_commit_every > 0 && ++consumed_since_commit >= opt_commit_every)
			commit_positions(rk, NULL);
	} else if (m->err == RD_KAFKA_RESP_ERR__FATAL) {
		char buf[512];
		rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, buf, sizeof(buf));
		printf("FATAL %s %s\n", rd_kafka_err2name(orig), buf);
	} else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
		printf("ERROR %s %s\n", rd_kafka_err2name(m->err), rd_kafka_message_errstr(m));
	}
	rd_kafka_message_destroy(m);
}

/*
 * librdkafka 2.0.2 can hang for ever in rd_kafka_assign() called from the
 * revoke callback inside rd_kafka_consumer_close() (librdkafka issues
 * #4884 and #4527, seen here on a loaded machine). The workaround upstream
 * suggests: unsubscribe, keep polling (messages still count, so positions
 * and commits stay right) until the assignment is empty, then close.
 */
static void
drain_before_close(rd_kafka_t *rk)
{
	if (rd_kafka_unsubscribe(rk))
		return;
	long long deadline = now_us() + 15LL * 1000 * 1000;
	while (now_us() < deadline) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 50);
		if (m) {
			handle_message(rk, m);
			fflush(stdout);
		}
		rd_kafka_topic_partition_list_t *a = NULL;
		if (rd_kafka_assignment(rk, &a) == RD_KAFKA_RESP_ERR_NO_ERROR && a) {
			int empty = a->cnt == 0;
			rd_kafka_topic_partition_list_destroy(a);
			if (empty)
				return;
		}
	}
}

static int
handle_command(rd_kafka_t *rk, char *line)
{
	char *save = NULL;
	char *cmd = strtok_r(line, " \t\r\n", &save);
	if (!cmd)
		return 0;
	if (!strcmp(cmd, "close")) {
		return 1;
	} else if (!strcmp(cmd, "exit")) {
		fflush(stdout);
		_exit(3);
	} else if (!strcmp(cmd, "commitpos")) {
		commit_positions(rk, NULL);
	} else if (!strcmp(cmd, "commit")) {
		char *t = strtok_r(NULL, " \t\r\n", &save);
		char *p = strtok_r(NULL, " \t\r\n", &save);
		char *o = strtok_r(NULL, " \t\r\n", &save);
		if (!t || !p || !o) {
			printf("ERROR _INVALID_ARG usage: commit T P O\n");
		} else {
			rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
			rd_kafka_topic_partition_list_add(l, t, atoi(p))->offset = atoll(o);
			rd_kafka_resp_err_t err = rd_kafka_commit(rk, l, 0);
			printf("COMMIT %s %s %s %s %lld\n", t, p, o,
			       rd_kafka_err2name(err ? err : l->elems[0].err), now_us());
			rd_kafka_topic_partition_list_destroy(l);
		}
	} else if (!strcmp(cmd, "committed")) {
		char *t = strtok_r(NULL, " \t\r\n", &save);
		rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(8);
		char *p;
		while (t && (p = strtok_r(NULL, " \t\r\n", &save)))
			rd_kafka_topic_partition_list_add(l, t, atoi(p));
		rd_kafka_resp_err_t err = rd_kafka_committed(rk, l, 10000);
		if (err)
			printf("COMMITTED_ERROR %s\n", rd_kafka_err2name(err));
		else
			for (int i = 0; i < l->cnt; i++)
				printf("COMMITTED %s %d %lld\n", l->elems[i].topic,
				       (int)l->elems[i].partition, (long long)l->elems[i].offset);
		rd_kafka_topic_partition_list_destroy(l);
	} else {
		printf("ERROR _INVALID_ARG unknown command %s\n", cmd);
	}
	fflush(stdout);
	return 0;
}

int
main(int argc, char **argv)
{
	char err[512];
	const char *bootstrap = NULL, *group = NULL, *topics = NULL, *assignor = "range";
	const char *instance = NULL, *name = "cohort-it-group";
	int session_ms = 6000;
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	int c;

	while ((c = getopt(argc, argv, "b:g:t:a:i:s:n:RP:qD:X:")) != -1) {
		switch (c) {
		case 'b':
			bootstrap = optarg;
			break;
		case 'g':
			group = optarg;
			break;
		case 't':
			topics = optarg;
			break;
		case 'a':
			assignor = optarg;
			break;
		case 'i':
			instance = optarg;
			break;
		case 's':
			session_ms = atoi(optarg);
			break;
		case 'n':
			name = optarg;
			break;
		case 'R':
			opt_commit_on_revoke = 1;
			break;
		case 'P':
			opt_commit_every = atoi(optarg);
			break;
		case 'q':
			opt_quiet = 1;
			break;
		case 'D':
			opt_delay_ms = atoi(optarg);
			break;
		case 'X': {
			char *eq = strchr(optarg, '=');
			if (!eq)
				die("-X %s: expected key=value", optarg);
			*eq = 0;
			set(conf, optarg, eq + 1);
			break;
		}
		default:
			die("bad option%s", "");
		}
	}
	if (!bootstrap || !group || !topics)
		die("usage: group_consumer -b HOST:PORT -g GROUP -t TOPICS [...]%s", "");

	char num[32];
	set(conf, "bootstrap.servers", bootstrap);
	set(conf, "group.id", group);
	set(conf, "client.id", name);
	set(conf, "partition.assignment.strategy", assignor);
	snprintf(num, sizeof(num), "%d", session_ms);
	set(conf, "session.timeout.ms", num);
	snprintf(num, sizeof(num), "%d", session_ms / 10 > 100 ? session_ms / 10 : 100);
	set(conf, "heartbeat.interval.ms", num);
	set(conf, "enable.auto.commit", "false");
	set(conf, "auto.offset.reset", "earliest");
	set(conf, "topic.metadata.refresh.interval.ms", "2000");
	if (instance)
		set(conf, "group.instance.id", instance);
	rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
	rd_kafka_conf_set_error_cb(conf, error_cb);

	rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
	if (!rk)
		die("rd_kafka_new: %s", err);
	rd_kafka_poll_set_consumer(rk);

	rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(4);
	char *tcopy = strdup(topics), *save = NULL;
	for (char *t = strtok_r(tcopy, ",", &save); t; t = strtok_r(NULL, ",", &save))
		rd_kafka_topic_partition_list_add(sub, t, RD_KAFKA_PARTITION_UA);
	free(tcopy);
	rd_kafka_resp_err_t e = rd_kafka_subscribe(rk, sub);
	rd_kafka_topic_partition_list_destroy(sub);
	if (e)
		die("subscribe: %s", rd_kafka_err2str(e));

	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("READY\n");

	char line[1024];
	size_t have = 0;
	int stdin_open = 1;
	while (!stop_flag) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 50);
		if (m) {
			handle_message(rk, m);
			fflush(stdout);
		}
		if (!stdin_open)
			continue;
		struct pollfd pfd = {.fd = 0, .events = POLLIN};
		if (poll(&pfd, 1, 0) <= 0)
			continue;
		ssize_t n = read(0, line + have, sizeof(line) - 1 - have);
		if (n <= 0) {
			stdin_open =
				0; /* EOF: the driver went away; keep consuming until signalled */
			if (n == 0)
				break;
			continue;
		}
		have += (size_t)n;
		line[have] = 0;
		char *nl;
		int quit = 0;
		while ((nl = strchr(line, '\n'))) {
			*nl = 0;
			char cmd[1024];
			snprintf(cmd, sizeof(cmd), "%s", line);
			size_t used = (size_t)(nl + 1 - line);
			memmove(line, nl + 1, have - used);
			have -= used;
			line[have] = 0;
			if (handle_command(rk, cmd))
				quit = 1;
		}
		if (have >= sizeof(line) - 1)
			have = 0;
		if (quit)
			break;
	}
	if (!stop_flag)
		drain_before_close(rk);
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	printf("CLOSED\n");
	return 0;
}
