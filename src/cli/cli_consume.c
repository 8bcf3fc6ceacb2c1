/*
 * cli_consume.c: `cohort consume TOPIC... --group G`: a real group member
 * (JoinGroup, SyncGroup, heartbeats, commits) that prints records, one a
 * line, until --count records, or SIGINT/SIGTERM, then leaves the group.
 * It commits what it printed, synchronously after each batch, rather than
 * auto-committing positions: a position is past every record the last poll
 * returned, and with --count some of those were never printed (they would
 * be skipped for the group). So a revoke never finds printed records
 * uncommitted either.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const cli_opt opts[] = {
	{"group", "G", "consume as a member of group G (required for now)", false},
	{"strategy", "S",
	 "the assignor: range, roundrobin, sticky or cooperative-sticky (default: Kafka's "
	 "range,cooperative-sticky)",
	 false},
	{"from", "earliest|latest",
	 "where to start in partitions the group never committed (default latest)", false},
	{"format", "FMT",
	 "print each record by FMT: %t topic, %p partition, %o offset, %T timestamp, %k key, "
	 "%v (or %s) value, %h headers, %% a %, \\n \\t; default \"%v\\n\"",
	 false},
	{"count", "N", "stop after N records", false},
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

/* The group.id, strategy, reset and --property keys onto conf. */
static int
configure(const cli_args *a, cohort_conf *conf)
{
	int rc = cli_conf_set(conf, "group.id", cli_opt_get(a, "group"), "--group");
	if (!rc)
		rc = cli_conf_set(conf, "enable.auto.commit", "false", "consume");
	const char *v;
	if (!rc && (v = cli_opt_get(a, "strategy")))
		rc = cli_conf_set(conf, "partition.assignment.strategy", v, "--strategy");
	v = cli_opt_get(a, "from");
	if (!rc && v && strcmp(v, "earliest") != 0 && strcmp(v, "latest") != 0)
		return cli_fail(CLI_EUSAGE, "--from: expected earliest or latest, got '%s'", v);
	if (!rc)
		rc = cli_conf_set(conf, "auto.offset.reset", v ? v : "latest", "--from");
	if (!rc)
		rc = cli_conf_properties(a, conf);
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

static int
run(cli_args *a)
{
	if (!cli_opt_has(a, "group"))
		return cli_fail(CLI_EUSAGE,
				"consume: --group is required (consuming without a group, by "
				"--partition and --offset, is not built yet)");
	const char *fmt = cli_opt_get(a, "format");
	const char *bad = fmt ? check_format(fmt) : NULL;
	if (bad)
		return cli_fail(CLI_EUSAGE, "--format: unknown conversion '%s'", bad);
	int64_t count;
	int rc = cli_opt_int(a, "count", 1, INT64_MAX, -1, &count);
	if (rc)
		return rc;
	cohort_conf *conf = cli_conf(a, &rc);
	if (!conf)
		return rc;
	if ((rc = configure(a, conf)) != CLI_OK) {
		cohort_conf_free(conf);
		return rc;
	}
	char err[512];
	cohort_consumer *c = cohort_consumer_new(conf, err, sizeof(err));
	cohort_conf_free(conf);
	if (!c)
		return cli_fail(CLI_EUSAGE, "%s", err);
	cohort_err e = cohort_subscribe(c, a->pos, (size_t)a->npos);
	cli_catch_stop_signals();
	int64_t seen = 0;
	printed done = {0};
	while (!e && !cli_stop_requested && (count < 0 || seen < count)) {
		const cohort_record *recs;
		size_t n;
		e = cohort_poll(c, 500, &recs, &n);
		done.n = 0;
		for (size_t i = 0; !e && i < n && (count < 0 || seen < count); i++, seen++) {
			if (a->json)
				print_json(stdout, &recs[i]);
			else
				print_formatted(stdout, fmt ? fmt : "%v\\n", &recs[i]);
			if (!printed_add(&done, &recs[i]))
				e = COHORT_ERR__NOMEM;
		}
		fflush(stdout);
		/* the names point into the records: commit before the next poll */
		if (!e && done.n)
			e = commit_printed(c, &done);
	}
	free(done.o);
	if (e)
		rc = cli_fail(cli_status(e), "consume: %s (%s)", cohort_err_str(e),
			      cohort_err_name(e));
	cohort_err ce = cohort_consumer_close(c);
	cohort_consumer_free(c);
	if (!rc && ce && ce != COHORT_ERR__CLOSED)
		rc = cli_fail(cli_status(ce), "consume: leaving the group: %s", cohort_err_str(ce));
	return rc;
}

const cli_command cli_consume_cmd = {
	"consume", "TOPIC...", "print records of topics as a member of a consumer group",
	opts,      1,          CLI_MAX_POS,
	run,       false,
};
