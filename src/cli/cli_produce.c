/*
 * cli_produce.c: `cohort produce TOPIC`: every line of stdin one record
 * (kafka-console-producer's model), sent by libcohort's producer. With
 * --key-separator a line is KEY SEP VALUE (a line without the separator
 * stops the run, as Kafka's console producer stops on one; what came
 * before is still sent). Each record's delivery report is checked: a
 * failed record is named by its line number on stderr and makes the exit
 * status 1. At EOF (or SIGINT/SIGTERM) everything queued is flushed first.
 */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const cli_opt opts[] = {
	{"key-separator", "SEP",
	 "each line is KEY SEP VALUE (split at the first SEP); without it the line is the value "
	 "and the key null",
	 false},
	{"header", "K=V", "a header on every record", true},
	{"partition", "P", "write to partition P (default: the partitioner's choice)", false},
	{"acks", "all|-1|0|1", "acknowledgements to wait for (default all)", false},
	{"compression", "CODEC", "none, gzip, snappy, lz4 or zstd (default none)", false},
	{"property", "KEY=VALUE", "a producer configuration key (Kafka's names)", true},
	{NULL, NULL, NULL, false},
};

/* What the delivery reports found. */
typedef struct outcome {
	int64_t delivered, failed;
	bool json;
} outcome;

/* cohort_delivery_cb: count the record's outcome; a failure is named by
 * its line (the record's opaque). */
static void
on_delivery(cohort_producer *p, const cohort_delivery *d, void *opaque)
{
	(void)p;
	outcome *o = opaque;
	long long line = (long long)(intptr_t)d->opaque;
	if (d->err) {
		o->failed++;
		fprintf(stderr, "cohort: produce: line %lld not written to %s: %s (%s)\n", line,
			d->topic, cohort_err_str(d->err), cohort_err_name(d->err));
	} else {
		o->delivered++;
	}
	if (o->json) {
		json_t *j = json_pack("{s:I,s:s,s:i}", "line", (json_int_t)line, "topic", d->topic,
				      "partition", d->partition);
		json_object_set_new(j, "offset",
				    d->err || d->offset < 0 ? json_null()
							    : json_integer(d->offset));
		json_object_set_new(j, "error",
				    d->err ? json_string(cohort_err_name(d->err)) : json_null());
		cli_json_print(j);
	}
}

/* The --header K=V options as headers (pointing into argv); CLI_OK or
 * CLI_EUSAGE. */
static int
parse_headers(const cli_args *a, cohort_header **out, size_t *n)
{
	int nh;
	const char *const *hs = cli_opt_all(a, "header", &nh);
	*out = nh ? calloc((size_t)nh, sizeof(**out)) : NULL;
	*n = 0;
	if (nh && !*out)
		return cli_fail(CLI_EFAIL, "out of memory");
	for (int i = 0; i < nh; i++) {
		const char *eq = strchr(hs[i], '=');
		if (!eq || eq == hs[i])
			return cli_fail(CLI_EUSAGE, "--header: expected K=V, got '%s'", hs[i]);
		char *key = strndup(hs[i], (size_t)(eq - hs[i]));
		if (!key)
			return cli_fail(CLI_EFAIL, "out of memory");
		(*out)[(*n)++] = (cohort_header){key, eq + 1, (int32_t)strlen(eq + 1)};
	}
	return CLI_OK;
}

static void
headers_free(cohort_header *h, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free((char *)h[i].key);
	free(h);
}

/* cli_auth_source for produce's producer. */
static const char *
producer_auth_error(void *handle)
{
	return cohort_producer_auth_error(handle);
}

/* The producer for a's options, or NULL with the message printed. */
static cohort_producer *
make_producer(const cli_args *a, outcome *o, int *rc)
{
	cohort_conf *conf = cli_conf(a, rc);
	if (!conf)
		return NULL;
	char v[32];
	snprintf(v, sizeof(v), "%d", a->timeout_ms);
	/* a topic's metadata or buffer room not there within --timeout-ms */
	*rc = cli_conf_set(conf, "max.block.ms", v, "--timeout-ms");
	const char *acks = cli_opt_get(a, "acks"), *codec = cli_opt_get(a, "compression");
	if (!*rc && acks)
		*rc = cli_conf_set(conf, "acks", acks, "--acks");
	if (!*rc && codec)
		*rc = cli_conf_set(conf, "compression.type", codec, "--compression");
	if (!*rc)
		*rc = cli_conf_properties(a, conf);
	cohort_producer *p = NULL;
	if (!*rc) {
		cohort_conf_set_delivery_cb(conf, on_delivery, o);
		char err[512];
		if (!(p = cohort_producer_new(conf, err, sizeof(err))))
			*rc = cli_fail(CLI_EUSAGE, "produce: %s", err);
		else
			cli_auth_source(producer_auth_error, p);
	}
	cohort_conf_free(conf);
	return p;
}

static int
run(cli_args *a)
{
	const char *topic = a->pos[0], *sep = cli_opt_get(a, "key-separator");
	if (sep && !*sep)
		return cli_fail(CLI_EUSAGE, "--key-separator: must not be empty");
	int32_t nparts;
	int64_t partition;
	int rc = cli_topic_partitions(a->admin, "produce", topic, &nparts);
	if (!rc)
		rc = cli_opt_int(a, "partition", 0, INT32_MAX, COHORT_PARTITION_ANY, &partition);
	if (!rc && partition >= nparts)
		rc = cli_fail(CLI_ENOTFOUND, "--partition %lld: topic '%s' has %d partition%s",
			      (long long)partition, topic, nparts, nparts == 1 ? "" : "s");
	cohort_header *hdrs = NULL;
	size_t nhdrs = 0;
	if (!rc)
		rc = parse_headers(a, &hdrs, &nhdrs);
	outcome o = {0, 0, a->json};
	cohort_producer *p = rc ? NULL : make_producer(a, &o, &rc);
	if (!p) {
		headers_free(hdrs, nhdrs);
		return rc;
	}
	cli_catch_stop_signals();
	char *line = NULL;
	size_t cap = 0, seplen = sep ? strlen(sep) : 0;
	ssize_t len;
	intptr_t lineno = 0;
	while (!rc && !cli_stop_requested && (len = getline(&line, &cap, stdin)) >= 0) {
		lineno++;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len && line[len - 1] == '\r')
			line[--len] = '\0';
		const char *key = NULL, *value = line;
		size_t klen = 0, vlen = (size_t)len;
		if (sep) {
			const char *at = strstr(line, sep);
			if (!at) {
				rc = cli_fail(CLI_EFAIL,
					      "produce: no key separator '%s' on line %lld; it and "
					      "the lines after it were not sent",
					      sep, (long long)lineno);
				break;
			}
			key = line;
			klen = (size_t)(at - line);
			value = at + seplen;
			vlen = (size_t)len - klen - seplen;
		}
		cohort_err e = cohort_produce(p, topic, (int32_t)partition, key, klen, value, vlen,
					      hdrs, nhdrs, COHORT_TIMESTAMP_NOW, (void *)lineno);
		if (e) {
			rc = cli_fail(cli_status(e),
				      "produce: line %lld not queued: %s (%s); the lines after it "
				      "were not read",
				      (long long)lineno, cohort_err_str(e), cohort_err_name(e));
			break;
		}
		cohort_producer_poll(p, 0);
	}
	if (!rc && ferror(stdin) && errno != EINTR)
		rc = cli_fail(CLI_EFAIL, "produce: reading stdin: %s", strerror(errno));
	free(line);
	/* every queued record gets its report (delivery.timeout.ms bounds it) */
	cohort_err e = cohort_producer_close(p, -1);
	cli_auth_source(NULL, NULL);
	cohort_producer_free(p);
	headers_free(hdrs, nhdrs);
	if (!rc && e)
		rc = cli_fail(cli_status(e), "produce: flushing: %s", cohort_err_str(e));
	if (!rc && o.failed)
		rc = cli_fail(CLI_EFAIL, "produce: %lld of %lld records failed",
			      (long long)o.failed, (long long)(o.failed + o.delivered));
	return rc;
}

const cli_command cli_produce_cmd = {
	"produce", "TOPIC", "write each line of stdin to a topic as one record", opts, 1, 1,
	run,       true,
};
