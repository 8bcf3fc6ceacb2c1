/*
 * cli_consume.c: `cohort consume TOPIC...`, in one of two modes:
 *
 *   --group G  a real group member (JoinGroup, SyncGroup, heartbeats,
 *              commits) given its partitions by the group's assignor. It
 *              commits what it printed, synchronously after each batch,
 *              rather than auto-committing positions: a position is past
 *              every record the last poll returned, and with --count some
 *              of those were never printed (they would be skipped for the
 *              group). So a revoke never finds printed records uncommitted
 *              either. --from applies where the group has no commit.
 *   no group   the partitions named (--partition, default all) assigned
 *              directly (cohort_assign): no membership, no commits; --from
 *              (or --offset, kafka-console-consumer's name) says where.
 *
 * Records print one a line until --count records, --exit-at-end (every
 * assigned partition read up to the end offset it had when assigned), or
 * SIGINT/SIGTERM; then the member leaves its group.
 */
#include <jansson.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const cli_opt opts[] = {
	{"group", "G", "consume as a member of group G (without: the partitions directly)", false},
	{"strategy", "S",
	 "with --group, the assignor: range, roundrobin, sticky or cooperative-sticky (default: "
	 "Kafka's range,cooperative-sticky)",
	 false},
	{"partition", "P[,P...]", "without --group: only these partitions (default all)", true},
	{"from", "earliest|latest|OFFSET|TIME",
	 "where to start (with --group: in partitions the group never committed); TIME is "
	 "ISO-8601, YYYY-MM-DDTHH:MM:SS[.sss][Z|+HH:MM], the first record at or after it; "
	 "default latest",
	 false},
	{"offset", "earliest|latest|OFFSET",
	 "without --group: --from by kafka-console-consumer's name", false},
	{"format", "FMT",
	 "print each record by FMT: %t topic, %p partition, %o offset, %T timestamp, %k key, "
	 "%v (or %s) value, %h headers, %% a %, \\n \\t; default \"%v\\n\"",
	 false},
	{"count", "N", "stop after N records", false},
	{"exit-at-end", NULL,
	 "stop once every assigned partition is read up to the end offset it had when assigned",
	 false},
	{"property", "KEY=VALUE", "a consumer configuration key (Kafka's names)", true},
	{NULL, NULL, NULL, false},
};

/* Writes len bytes of p (NULL: "null") to f. */
static void
put_bytes(FILE *f, const void *p, int32_t len)
{
	if (!p)
		fputs("null", f);
	else
		fwrite(p, 1, (size_t)len, f);
}

/* Prints r by the --format template fmt (already checked by check_format). */
static void
print_formatted(FILE *f, const char *fmt, const cohort_record *r)
{
	for (const char *s = fmt; *s; s++) {
		if (*s == '\\' && s[1]) {
			s++;
			fputc(*s == 'n' ? '\n' : *s == 't' ? '\t' : *s, f);
			continue;
		}
		if (*s != '%' || !s[1]) {
			fputc(*s, f);
			continue;
		}
		switch (*++s) {
		case 't':
			fputs(r->topic, f);
			break;
		case 'p':
			fprintf(f, "%d", r->partition);
			break;
		case 'o':
			fprintf(f, "%lld", (long long)r->offset);
			break;
		case 'T':
			fprintf(f, "%lld", (long long)r->timestamp);
			break;
		case 'k':
			put_bytes(f, r->key, r->key_len);
			break;
		case 'v':
		case 's':
			put_bytes(f, r->value, r->value_len);
			break;
		case 'h':
			for (int32_t i = 0; i < r->headers_n; i++) {
				fprintf(f, "%s%s=", i ? "," : "", r->headers[i].key);
				put_bytes(f, r->headers[i].value, r->headers[i].value_len);
			}
			break;
		default:
			fputc(*s, f); /* %% */
			break;
		}
	}
}

/* NULL or the conversion --format names that does not exist. */
static const char *
check_format(const char *fmt)
{
	static char bad[3];
	for (const char *s = fmt; *s; s++) {
		if (*s == '\\' && s[1]) {
			s++;
			continue;
		}
		if (*s == '%') {
			if (!s[1] || !strchr("tpoTkvsh%", s[1])) {
				snprintf(bad, sizeof(bad), "%%%c", s[1] ? s[1] : ' ');
				return bad;
			}
			s++;
		}
	}
	return NULL;
}

/* Bytes as a JSON string, or null; bytes that are not UTF-8 as base64
 * under "<name>_base64" instead (JSON strings must be Unicode). */
static void
json_bytes(json_t *o, const char *name, const void *p, int32_t len)
{
	if (!p) {
		json_object_set_new(o, name, json_null());
		return;
	}
	json_t *s = json_stringn(p, (size_t)len);
	if (s) {
		json_object_set_new(o, name, s);
		return;
	}
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *b = p;
	size_t n = (size_t)len, o64 = 0;
	char *out = malloc(4 * ((n + 2) / 3) + 1);
	if (!out)
		return;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)b[i] << 16 | (i + 1 < n ? (unsigned)b[i + 1] << 8 : 0) |
			     (i + 2 < n ? b[i + 2] : 0);
		out[o64++] = b64[v >> 18 & 63];
		out[o64++] = b64[v >> 12 & 63];
		out[o64++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
		out[o64++] = i + 2 < n ? b64[v & 63] : '=';
	}
	out[o64] = '\0';
	char key[64];
	snprintf(key, sizeof(key), "%s_base64", name);
	json_object_set_new(o, key, json_string(out));
	free(out);
}

/* One record as a JSON object on one line. */
static void
print_json(FILE *f, const cohort_record *r)
{
	json_t *o = json_object();
	json_object_set_new(o, "topic", json_string(r->topic));
	json_object_set_new(o, "partition", json_integer(r->partition));
	json_object_set_new(o, "offset", json_integer(r->offset));
	json_object_set_new(o, "timestamp", json_integer(r->timestamp));
	json_bytes(o, "key", r->key, r->key_len);
	json_bytes(o, "value", r->value, r->value_len);
	json_t *h = json_array();
	for (int32_t i = 0; i < r->headers_n; i++) {
		json_t *e = json_object();
		json_object_set_new(e, "key", json_string(r->headers[i].key));
		json_bytes(e, "value", r->headers[i].value, r->headers[i].value_len);
		json_array_append_new(h, e);
	}
	json_object_set_new(o, "headers", h);
	char *s = json_dumps(o, JSON_COMPACT);
	if (s)
		fprintf(f, "%s\n", s);
	free(s);
	json_decref(o);
}

/* Where --from (or --offset) says to start. */
typedef enum {
	FROM_EARLIEST,
	FROM_LATEST,
	FROM_OFFSET,
	FROM_TIME
} from_kind;

/* What the run keeps between polls and rebalance callbacks. */
typedef struct consume_state {
	from_kind from;
	int64_t from_at;       /* FROM_OFFSET: the offset; FROM_TIME: ms since the epoch */
	bool group;            /* --group */
	bool exit_at_end;      /* --exit-at-end */
	bool assigned;         /* an assignment arrived (group) or was made */
	cohort_tp_offset *end; /* exit-at-end: each partition's end when assigned
				  (topics owned) */
	size_t nend, capend;
	cohort_err err; /* a failure inside a callback, for the loop to end on */
} consume_state;

/* --from / --offset into st; CLI_OK or CLI_EUSAGE. */
static int
parse_from(const cli_args *a, consume_state *st)
{
	const char *v = cli_opt_get(a, "from"), *o = cli_opt_get(a, "offset"), *name = "--from";
	if (v && o)
		return cli_fail(CLI_EUSAGE, "--from and --offset say the same thing: give one");
	if (o) {
		if (st->group)
			return cli_fail(CLI_EUSAGE, "--offset is for consuming without --group "
						    "(with a group: --from)");
		v = o;
		name = "--offset";
	}
	st->from = FROM_LATEST;
	if (!v || strcmp(v, "latest") == 0)
		return CLI_OK;
	if (strcmp(v, "earliest") == 0) {
		st->from = FROM_EARLIEST;
		return CLI_OK;
	}
	char *end;
	errno = 0;
	long long n = strtoll(v, &end, 10);
	if (!errno && end != v && !*end && n >= 0 && *v != '+' && *v != '-') {
		st->from = FROM_OFFSET;
		st->from_at = n;
		return CLI_OK;
	}
	if (!o && (st->from_at = cli_parse_datetime(v)) >= 0) {
		st->from = FROM_TIME;
		return CLI_OK;
	}
	return cli_fail(CLI_EUSAGE, "%s: expected earliest, latest, an offset%s, got '%s'", name,
			o ? "" : " or an ISO-8601 time (YYYY-MM-DDTHH:MM:SS[.sss][Z|+HH:MM])", v);
}

/* The group.id, strategy, reset and --property keys onto conf. */
static int
configure(const cli_args *a, const consume_state *st, cohort_conf *conf)
{
	int rc = CLI_OK;
	if (st->group)
		rc = cli_conf_set(conf, "group.id", cli_opt_get(a, "group"), "--group");
	if (!rc)
		rc = cli_conf_set(conf, "enable.auto.commit", "false", "consume");
	char ms[32];
	snprintf(ms, sizeof(ms), "%d", a->timeout_ms);
	if (!rc) /* the metadata and offset lookups wait at most --timeout-ms */
		rc = cli_conf_set(conf, "default.api.timeout.ms", ms, "--timeout-ms");
	/* a typo in a topic name must not create a topic */
	if (!rc)
		rc = cli_conf_set(conf, "allow.auto.create.topics", "false", "consume");
	const char *v;
	if (!rc && (v = cli_opt_get(a, "strategy")))
		rc = cli_conf_set(conf, "partition.assignment.strategy", v, "--strategy");
	/* an offset or time is sought in the partitions that need it; the
	 * others (and an offset out of range) start by auto.offset.reset */
	if (!rc)
		rc = cli_conf_set(conf, "auto.offset.reset",
				  st->from == FROM_EARLIEST ? "earliest" : "latest", "--from");
	if (!rc)
		rc = cli_conf_properties(a, conf);
	return rc;
}

/* Note the end offsets of tps (exit-at-end's targets), replacing older
 * ones of the same partitions. */
static cohort_err
note_ends(cohort_consumer *c, consume_state *st, const cohort_tp *tps, size_t n)
{
	cohort_tp_offset *q = calloc(n ? n : 1, sizeof(*q));
	if (!q)
		return COHORT_ERR__NOMEM;
	for (size_t i = 0; i < n; i++)
		q[i] = (cohort_tp_offset){tps[i].topic, tps[i].partition, -1, COHORT_OK};
	cohort_err e = n ? cohort_end_offsets(c, q, n) : COHORT_OK;
	for (size_t i = 0; !e && i < n; i++) {
		size_t k = 0;
		while (k < st->nend && (st->end[k].partition != q[i].partition ||
					strcmp(st->end[k].topic, q[i].topic) != 0))
			k++;
		if (k == st->nend) {
			char *t = strdup(q[i].topic);
			if (!t || !cli_grow(&st->end, &st->capend, st->nend, sizeof(*st->end))) {
				free(t);
				e = COHORT_ERR__NOMEM;
				break;
			}
			st->end[st->nend++] = (cohort_tp_offset){t, q[i].partition, -1, COHORT_OK};
		}
		st->end[k].offset = q[i].offset;
	}
	free(q);
	return e;
}

/* Seek tps where --from says (with a group: only those without a commit;
 * earliest and latest need no seek, auto.offset.reset does it). */
static cohort_err
seek_start(cohort_consumer *c, const consume_state *st, const cohort_tp *tps, size_t n)
{
	if (!n || st->from == FROM_LATEST || (st->group && st->from == FROM_EARLIEST))
		return COHORT_OK;
	if (st->from == FROM_EARLIEST)
		return cohort_seek_to_beginning(c, tps, n);
	cohort_tp *todo = calloc(n, sizeof(*todo));
	cohort_tp_offset *q = calloc(n, sizeof(*q));
	cohort_err e = todo && q ? COHORT_OK : COHORT_ERR__NOMEM;
	size_t m = 0;
	for (size_t i = 0; !e && i < n; i++)
		q[i] = (cohort_tp_offset){tps[i].topic, tps[i].partition, -1, COHORT_OK};
	if (!e && st->group)
		e = cohort_committed(c, q, n);
	for (size_t i = 0; !e && i < n; i++)
		if (q[i].offset < 0)
			todo[m++] = tps[i];
	if (!e && m && st->from == FROM_TIME)
		e = cohort_seek_to_timestamp(c, todo, m, st->from_at);
	for (size_t i = 0; !e && st->from == FROM_OFFSET && i < m; i++)
		e = cohort_seek(c, todo[i].topic, todo[i].partition, st->from_at);
	free(todo);
	free(q);
	return e;
}

/* The rebalance listener's assigned: seek and note ends before any record
 * of the partitions is returned. */
static void
on_assigned(cohort_consumer *c, const cohort_tp *tps, size_t n, void *opaque)
{
	consume_state *st = opaque;
	cohort_err e = seek_start(c, st, tps, n);
	if (!e && st->exit_at_end)
		e = note_ends(c, st, tps, n);
	if (e && !st->err)
		st->err = e;
	st->assigned = true;
}

/* Whether every assigned partition is read up to its noted end. */
static bool
all_at_end(cohort_consumer *c, const consume_state *st)
{
	if (!st->assigned)
		return false;
	cohort_tp *tps = NULL;
	size_t n = 0;
	if (cohort_assignment(c, &tps, &n) != COHORT_OK)
		return false;
	bool done = true;
	for (size_t i = 0; done && i < n; i++) {
		int64_t pos = -1, end = -1;
		for (size_t k = 0; k < st->nend; k++)
			if (st->end[k].partition == tps[i].partition &&
			    strcmp(st->end[k].topic, tps[i].topic) == 0)
				end = st->end[k].offset;
		done = end >= 0 &&
		       cohort_position(c, tps[i].topic, tps[i].partition, &pos) == COHORT_OK &&
		       pos >= end;
	}
	free(tps);
	return done;
}

/* The partition count of topic into *count; a missing topic or no broker
 * is a printed failure (a group member would wait for either forever). */
static int
topic_partitions(cohort_consumer *c, const char *topic, int32_t *count)
{
	cohort_err e = cohort_partitions_for(c, topic, count);
	if (e == COHORT_ERR_UNKNOWN_TOPIC_OR_PARTITION)
		return cli_fail(CLI_ENOTFOUND, "consume: topic '%s' does not exist", topic);
	if (e)
		return cli_fail(cli_status(e), "consume: topic '%s': %s", topic, cohort_err_str(e));
	return CLI_OK;
}

/* The partitions to assign without a group: --partition's (each checked
 * against every topic) or every partition of each topic. */
static int
manual_partitions(const cli_args *a, cohort_consumer *c, cohort_tp **out, size_t *n)
{
	int np;
	const char *const *ps = cli_opt_all(a, "partition", &np);
	int32_t *want = NULL;
	size_t nwant = 0, cap = 0;
	*out = NULL;
	*n = 0;
	for (int i = 0; i < np; i++)
		for (const char *p = ps[i]; *p;) {
			char *end;
			errno = 0;
			long v = strtol(p, &end, 10);
			if (errno || end == p || v < 0 || v > INT32_MAX || (*end && *end != ',') ||
			    *p == '+' || *p == '-') {
				free(want);
				return cli_fail(CLI_EUSAGE,
						"--partition: expected P or P,P,..., got '%s'",
						ps[i]);
			}
			if (!cli_grow(&want, &cap, nwant, sizeof(*want))) {
				free(want);
				return cli_fail(CLI_EFAIL, "out of memory");
			}
			want[nwant++] = (int32_t)v;
			p = *end ? end + 1 : end;
		}
	size_t capo = 0;
	int rc = CLI_OK;
	for (int t = 0; !rc && t < a->npos; t++) {
		int32_t count = 0;
		rc = topic_partitions(c, a->pos[t], &count);
		for (int32_t p = 0; !rc && p < (nwant ? (int32_t)nwant : count); p++) {
			int32_t part = nwant ? want[p] : p;
			if (part >= count)
				rc = cli_fail(CLI_ENOTFOUND,
					      "--partition %d: topic '%s' has %d partition%s", part,
					      a->pos[t], count, count == 1 ? "" : "s");
			else if (!cli_grow(out, &capo, *n, sizeof(**out)))
				rc = cli_fail(CLI_EFAIL, "out of memory");
			else
				(*out)[(*n)++] = (cohort_tp){a->pos[t], part};
		}
	}
	free(want);
	return rc;
}

/* The next offset of each partition printed from, to commit. */
typedef struct printed {
	cohort_tp_offset *o;
	size_t n, cap;
} printed;

/* Notes that r was printed; false when out of memory. */
static bool
printed_add(printed *p, const cohort_record *r)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->o[i].partition == r->partition && strcmp(p->o[i].topic, r->topic) == 0) {
			p->o[i].offset = r->offset + 1;
			return true;
		}
	if (!cli_grow(&p->o, &p->cap, p->n, sizeof(*p->o)))
		return false;
	p->o[p->n++] = (cohort_tp_offset){r->topic, r->partition, r->offset + 1, COHORT_OK};
	return true;
}

/* Commit what was printed. A rebalance that took partitions away first
 * (their records were printed, the new owner reads them again: at least
 * once) is a warning, not the end; other errors end the command. */
static cohort_err
commit_printed(cohort_consumer *c, printed *p)
{
	cohort_err e = cohort_commit_sync(c, p->o, p->n);
	if (e == COHORT_ERR_REBALANCE_IN_PROGRESS || e == COHORT_ERR_ILLEGAL_GENERATION ||
	    e == COHORT_ERR_UNKNOWN_MEMBER_ID || e == COHORT_ERR__ASSIGNMENT_LOST ||
	    cohort_err_is_retriable(e)) {
		fprintf(stderr,
			"cohort: consume: commit not done (%s); the group's next owner "
			"reads those records again\n",
			cohort_err_name(e));
		return COHORT_OK;
	}
	return e;
}

/* cli_auth_source for consume's consumer. */
static const char *
consumer_auth_error(void *handle)
{
	return cohort_consumer_auth_error(handle);
}

/* The consumer, subscribed (group) or assigned (no group), or NULL with
 * the message printed. */
static cohort_consumer *
start(cli_args *a, consume_state *st, int *rc)
{
	cohort_conf *conf = cli_conf(a, rc);
	if (!conf)
		return NULL;
	if ((*rc = configure(a, st, conf)) != CLI_OK) {
		cohort_conf_free(conf);
		return NULL;
	}
	cohort_rebalance_listener l = {on_assigned, NULL, NULL, st};
	if (st->group)
		cohort_conf_set_rebalance_listener(conf, &l);
	char err[512];
	cohort_consumer *c = cohort_consumer_new(conf, err, sizeof(err));
	cohort_conf_free(conf);
	if (!c) {
		*rc = cli_fail(CLI_EUSAGE, "%s", err);
		return NULL;
	}
	cli_auth_source(consumer_auth_error, c);
	cohort_err e = COHORT_OK;
	if (st->group) {
		int32_t count;
		for (int t = 0; !*rc && t < a->npos; t++)
			*rc = topic_partitions(c, a->pos[t], &count);
		if (!*rc)
			e = cohort_subscribe(c, a->pos, (size_t)a->npos);
	} else {
		cohort_tp *tps = NULL;
		size_t n = 0;
		if ((*rc = manual_partitions(a, c, &tps, &n)) == CLI_OK) {
			e = cohort_assign(c, tps, n);
			if (!e)
				on_assigned(c, tps, n, st);
			e = e ? e : st->err;
		}
		free(tps);
	}
	if (e)
		*rc = cli_fail(cli_status(e), "consume: %s (%s)", cohort_err_str(e),
			       cohort_err_name(e));
	if (*rc) {
		cli_auth_source(NULL, NULL);
		cohort_consumer_free(c);
		return NULL;
	}
	return c;
}

static int
run(cli_args *a)
{
	consume_state st = {.group = cli_opt_has(a, "group"),
			    .exit_at_end = cli_opt_has(a, "exit-at-end")};
	if (!st.group && cli_opt_has(a, "strategy"))
		return cli_fail(CLI_EUSAGE, "--strategy is the group's assignor: it needs --group");
	if (st.group && cli_opt_has(a, "partition"))
		return cli_fail(CLI_EUSAGE, "--partition consumes without a group: drop --group "
					    "(a group's assignor picks its partitions)");
	const char *fmt = cli_opt_get(a, "format");
	const char *bad = fmt ? check_format(fmt) : NULL;
	if (bad)
		return cli_fail(CLI_EUSAGE, "--format: unknown conversion '%s'", bad);
	int64_t count;
	int rc = cli_opt_int(a, "count", 1, INT64_MAX, -1, &count);
	if (!rc)
		rc = parse_from(a, &st);
	if (rc)
		return rc;
	cohort_consumer *c = start(a, &st, &rc);
	if (!c)
		goto out;
	cli_catch_stop_signals();
	int64_t seen = 0;
	printed done = {0};
	cohort_err e = COHORT_OK;
	while (!e && !cli_stop_requested && (count < 0 || seen < count)) {
		if (st.exit_at_end && all_at_end(c, &st))
			break;
		const cohort_record *recs;
		size_t n;
		e = cohort_poll(c, 500, &recs, &n);
		e = e ? e : st.err;
		done.n = 0;
		for (size_t i = 0; !e && i < n && (count < 0 || seen < count); i++, seen++) {
			if (a->json)
				print_json(stdout, &recs[i]);
			else
				print_formatted(stdout, fmt ? fmt : "%v\\n", &recs[i]);
			if (st.group && !printed_add(&done, &recs[i]))
				e = COHORT_ERR__NOMEM;
		}
		fflush(stdout);
		if (count > 0)
			cli_progress(false, "consume: %lld of %lld records", (long long)seen,
				     (long long)count);
		else if (st.exit_at_end)
			cli_progress(false, "consume: %lld records", (long long)seen);
		/* the names point into the records: commit before the next poll */
		if (!e && done.n)
			e = commit_printed(c, &done);
	}
	cli_progress_end();
	free(done.o);
	if (e)
		rc = cli_fail(cli_status(e), "consume: %s (%s)", cohort_err_str(e),
			      cohort_err_name(e));
	cohort_err ce = cohort_consumer_close(c);
	cli_auth_source(NULL, NULL);
	cohort_consumer_free(c);
	if (!rc && ce && ce != COHORT_ERR__CLOSED)
		rc = cli_fail(cli_status(ce), "consume: leaving the group: %s", cohort_err_str(ce));
out:
	for (size_t i = 0; i < st.nend; i++)
		free((char *)st.end[i].topic);
	free(st.end);
	return rc;
}

const cli_command cli_consume_cmd = {
	"consume", "TOPIC...", "print records of topics, as a group member or from partitions",
	opts,      1,          CLI_MAX_POS,
	run,       false,
};
