/*
 * cli_rebalances.c: `cohort groups rebalances GROUP`, a group's rebalance
 * history as cohortd's admin API keeps it (README "Admin API and
 * metrics"): one row per rebalance (generations, cause, the member that
 * held the barrier, partitions moved, the longest pause), --members for
 * each member's pause, --json for the API's own JSON.
 *
 * Kafka keeps no such history, so this reads cohortd's HTTP admin API with
 * Debian's libcurl (a well-kept client; cohortd's own HTTP side is a server
 * library, libmicrohttpd, which has no client). Where: --admin-url, else
 * the bootstrap host at the port of the broker's admin.listeners (read with
 * DescribeConfigs; 9644, the default, when it has none that parses). A
 * broker whose configuration has no admin.listeners is not cohortd: exit
 * CLI_ENOTCOHORTD with a message that says so.
 */
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

#define ADMIN_DEFAULT_PORT 9644

static const cli_opt rebalances_opts[] = {
	{"admin-url", "URL",
	 "cohortd's admin API (default: the bootstrap host at the port of the broker's "
	 "admin.listeners, 9644)",
	 false},
	{"members", NULL, "one row per member of each rebalance: its pause and partitions", false},
	{NULL, NULL, NULL, false},
};

/* The body of an HTTP answer. */
typedef struct http_body {
	char *p;
	size_t n;
	bool oom;
} http_body;

static size_t
body_write(char *data, size_t size, size_t nmemb, void *ud)
{
	http_body *b = ud;
	size_t n = size * nmemb;
	char *p = realloc(b->p, b->n + n + 1);
	if (!p) {
		b->oom = true;
		return 0;
	}
	memcpy(p + b->n, data, n);
	b->n += n;
	p[b->n] = '\0';
	b->p = p;
	return n;
}

/* GET url into *body; the HTTP status, or with err set -1 (no answer) or
 * -2 (an answer that is not HTTP: some other server). */
static long
http_get(const char *url, int timeout_ms, http_body *body, char *err, size_t errlen)
{
	CURL *h = curl_easy_init();
	if (!h) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	char cerr[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, body_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "cohort-cli");
	CURLcode rc = curl_easy_perform(h);
	long status = -1;
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	else if (rc == CURLE_GOT_NOTHING || rc == CURLE_WEIRD_SERVER_REPLY)
		status = -2;
	if (rc != CURLE_OK)
		snprintf(err, errlen, "%s",
			 body->oom ? "out of memory"
			 : cerr[0] ? cerr
				   : curl_easy_strerror(rc));
	curl_easy_cleanup(h);
	return status;
}

/* The port of an admin.listeners value "http://host:port", or -1. */
static int
listener_port(const char *v)
{
	const char *colon = v ? strrchr(v, ':') : NULL;
	if (!colon || strncmp(v, "http://", 7) != 0 || colon < v + 7)
		return -1;
	char *end;
	long port = strtol(colon + 1, &end, 10);
	return *end || port <= 0 || port > 65535 ? -1 : (int)port;
}

/* The first bootstrap server's host into host (IPv6 in brackets kept). */
static void
bootstrap_host(const char *bootstrap, char *host, size_t cap)
{
	size_t n = strcspn(bootstrap, ",");
	const char *colon = NULL;
	if (bootstrap[0] == '[') {
		const char *close = memchr(bootstrap, ']', n);
		colon = close ? close + 1 : NULL;
	} else {
		for (const char *p = bootstrap; p < bootstrap + n; p++)
			if (*p == ':')
				colon = p;
	}
	size_t hl = colon && colon < bootstrap + n ? (size_t)(colon - bootstrap) : n;
	snprintf(host, cap, "%.*s", (int)hl, bootstrap);
}

/* The admin API's base URL into url: --admin-url, else derived from the
 * broker's admin.listeners. CLI_OK, or the status with the message printed
 * (CLI_ENOTCOHORTD when the broker has no admin.listeners). */
static int
admin_url(cli_args *a, const char *cmd, char *url, size_t cap)
{
	const char *given = cli_opt_get(a, "admin-url");
	if (given) {
		if (strncmp(given, "http://", 7) != 0 && strncmp(given, "https://", 8) != 0)
			return cli_fail(CLI_EUSAGE,
					"--admin-url: not an http:// or https:// URL: %s", given);
		snprintf(url, cap, "%.*s", (int)strcspn(given, "?#"), given);
		size_t n = strlen(url);
		while (n > 8 && url[n - 1] == '/') /* no trailing slash: paths follow */
			url[--n] = '\0';
		return CLI_OK;
	}
	cohort_cluster *cl = NULL;
	cohort_err e = cohort_admin_describe_cluster(a->admin, a->timeout_ms, &cl);
	if (e || !cl->brokers_n) {
		cohort_cluster_free(cl);
		return cli_fail(e ? cli_status(e) : CLI_EFAIL, "%s: %s", cmd,
				e ? cohort_err_str(e) : "the cluster named no broker");
	}
	char id[16];
	snprintf(id, sizeof(id), "%d", cl->brokers[0].id);
	cohort_cluster_free(cl);
	cohort_config_resource res = {COHORT_RESOURCE_BROKER, id};
	cohort_configs *cf = NULL;
	e = cohort_admin_describe_configs(a->admin, &res, 1, a->timeout_ms, &cf);
	if (!e && cf->resources_n && cf->resources[0].err)
		e = cf->resources[0].err;
	if (e) {
		cohort_configs_free(cf);
		return cli_fail(cli_status(e), "%s: broker %s's configuration: %s", cmd, id,
				cohort_err_str(e));
	}
	const cohort_config_result *r = &cf->resources[0];
	const cohort_config_entry *listeners = NULL;
	for (size_t i = 0; i < r->entries_n; i++)
		if (strcmp(r->entries[i].name, "admin.listeners") == 0)
			listeners = &r->entries[i];
	if (!listeners) {
		cohort_configs_free(cf);
		return cli_fail(CLI_ENOTCOHORTD,
				"%s: the cluster at %s is not cohortd (broker %s has no "
				"admin.listeners): this is cohortd's own admin API, Apache Kafka "
				"has none",
				cmd, a->bootstrap, id);
	}
	if (!listeners->value || !listeners->value[0]) {
		cohort_configs_free(cf);
		return cli_fail(CLI_EUNREACHABLE,
				"%s: cohortd's admin API is off on broker %s "
				"(admin.listeners is empty)",
				cmd, id);
	}
	int port = listener_port(listeners->value);
	cohort_configs_free(cf);
	char host[256];
	bootstrap_host(a->bootstrap, host, sizeof(host));
	snprintf(url, cap, "http://%s:%d", host, port > 0 ? port : ADMIN_DEFAULT_PORT);
	return CLI_OK;
}

/* ms since the epoch as "YYYY-MM-DDTHH:MM:SS.mmmZ". */
static void
format_ms(json_t *v, char *out, size_t cap)
{
	if (!json_is_integer(v)) {
		snprintf(out, cap, "-");
		return;
	}
	json_int_t ms = json_integer_value(v);
	time_t s = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&s, &tm);
	size_t n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, cap - n, ".%03dZ", (int)(ms % 1000));
}

/* An integer field as text, "-" when null or absent. */
static void
int_cell(json_t *v, char *out, size_t cap)
{
	if (json_is_integer(v))
		snprintf(out, cap, "%lld", (long long)json_integer_value(v));
	else
		snprintf(out, cap, "-");
}

static const char *
str_field(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "-";
}

/* "G" or "G1-G2" for a record spanning generations. */
static void
generations_cell(json_t *r, char *out, size_t cap)
{
	json_t *rounds = json_object_get(r, "rounds");
	size_t n = json_array_size(rounds);
	if (n < 2) {
		int_cell(json_object_get(r, "generation"), out, cap);
		return;
	}
	snprintf(out, cap, "%lld-%lld",
		 (long long)json_integer_value(
			 json_object_get(json_array_get(rounds, 0), "generation")),
		 (long long)json_integer_value(
			 json_object_get(json_array_get(rounds, n - 1), "generation")));
}

static bool
add_rebalance_row(cli_table *t, json_t *r)
{
	char gen[32], start[40], dur[24], moved[16], wait[24], pause[24], in[16], out[16];
	generations_cell(r, gen, sizeof(gen));
	format_ms(json_object_get(r, "start_ms"), start, sizeof(start));
	int_cell(json_object_get(r, "duration_ms"), dur, sizeof(dur));
	int_cell(json_object_get(r, "partitions_moved"), moved, sizeof(moved));
	json_t *bar = json_object_get(r, "barrier");
	int_cell(json_object_get(bar, "after_first_join_ms"), wait, sizeof(wait));
	snprintf(in, sizeof(in), "%zu", json_array_size(json_object_get(r, "members_in")));
	snprintf(out, sizeof(out), "%zu", json_array_size(json_object_get(r, "members_out")));
	/* the longest pause of its members (the cooperative or the eager rule) */
	json_int_t max = -1;
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(r, "members"), i, m)
	{
		json_t *p = json_object_get(m, "pause_ms");
		if (json_is_integer(p) && json_integer_value(p) > max)
			max = json_integer_value(p);
	}
	if (max >= 0)
		snprintf(pause, sizeof(pause), "%lld", (long long)max);
	else
		snprintf(pause, sizeof(pause), "-");
	json_t *cause = json_object_get(r, "cause");
	char triggers[16];
	snprintf(triggers, sizeof(triggers), "%zu",
		 json_array_size(json_object_get(r, "triggers")));
	const char *row[] = {gen,
			     str_field(r, "protocol"),
			     start,
			     dur,
			     str_field(r, "outcome"),
			     str_field(cause, "cause"),
			     triggers,
			     in,
			     out,
			     str_field(bar, "member_id"),
			     wait,
			     moved,
			     pause,
			     str_field(cause, "detail")};
	return cli_table_add(t, row);
}

/* --members: one row per member of each rebalance. */
static bool
add_member_rows(cli_table *t, json_t *r)
{
	char gen[32];
	generations_cell(r, gen, sizeof(gen));
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(r, "members"), i, m)
	{
		char pause[24], before[16], after[16], lost[16], sync_gen[16];
		int_cell(json_object_get(m, "pause_ms"), pause, sizeof(pause));
		int_cell(json_object_get(m, "partitions_before"), before, sizeof(before));
		int_cell(json_object_get(m, "partitions_after"), after, sizeof(after));
		int_cell(json_object_get(m, "partitions_lost"), lost, sizeof(lost));
		int_cell(json_object_get(m, "sync_generation"), sync_gen, sizeof(sync_gen));
		const char *row[] = {gen,     str_field(m, "member_id"), pause, before, after, lost,
				     sync_gen};
		if (!cli_table_add(t, row))
			return false;
	}
	return true;
}

static int
print_history(cli_args *a, json_t *rebalances)
{
	static const char *const hdr[] = {
		"GENERATION",      "PROTOCOL", "STARTED",      "DURATION-MS", "OUTCOME",
		"CAUSE",           "TRIGGERS", "IN",           "OUT",         "BARRIER",
		"BARRIER-WAIT-MS", "MOVED",    "MAX-PAUSE-MS", "DETAIL"};
	static const char *const mhdr[] = {"GENERATION",        "MEMBER",           "PAUSE-MS",
					   "PARTITIONS-BEFORE", "PARTITIONS-AFTER", "LOST",
					   "SYNCED-GENERATION"};
	bool members = cli_opt_has(a, "members");
	cli_table *t = members ? cli_table_new(mhdr, 7) : cli_table_new(hdr, 14);
	bool ok = t != NULL;
	size_t i;
	json_t *r;
	json_array_foreach(rebalances, i, r)
	{
		if (ok)
			ok = members ? add_member_rows(t, r) : add_rebalance_row(t, r);
	}
	if (!ok) {
		cli_table_free(t);
		return cli_fail(CLI_EFAIL, "groups rebalances: out of memory");
	}
	cli_table_print(t, stdout);
	cli_table_free(t);
	return CLI_OK;
}

int
cli_admin_get(cli_args *a, const char *cmd, const char *path, json_t **out, long *status)
{
	*out = NULL;
	char base[1024];
	int st = admin_url(a, cmd, base, sizeof(base));
	if (st != CLI_OK)
		return st;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return cli_fail(CLI_EFAIL, "%s: libcurl did not initialise", cmd);
	char url[4096];
	snprintf(url, sizeof(url), "%s%s", base, path);
	http_body body = {NULL, 0, false};
	char err[CURL_ERROR_SIZE + 32];
	*status = http_get(url, a->timeout_ms, &body, err, sizeof(err));
	curl_global_cleanup();
	if (*status == -2) {
		free(body.p);
		return cli_fail(CLI_ENOTCOHORTD, "%s: %s is not cohortd's admin API (not HTTP: %s)",
				cmd, base, err);
	}
	if (*status < 0) {
		free(body.p);
		return cli_fail(CLI_EUNREACHABLE, "%s: cohortd's admin API at %s: %s", cmd, base,
				err);
	}
	json_error_t jerr;
	json_t *j = body.p ? json_loads(body.p, 0, &jerr) : NULL;
	free(body.p);
	/* the API answers JSON objects, errors as {"error": ...} */
	if (!json_is_object(j) ||
	    (*status != 200 && !json_is_string(json_object_get(j, "error")))) {
		json_decref(j);
		return cli_fail(CLI_ENOTCOHORTD, "%s: %s is not cohortd's admin API (HTTP %ld%s)",
				cmd, base, *status, j ? "" : ", not JSON");
	}
	*out = j;
	return CLI_OK;
}

/* The group id percent-encoded into out (for a path segment). */
void
cli_url_escape(const char *s, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p && o + 4 < cap; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p)) {
			out[o++] = (char)*p;
		} else {
			out[o++] = '%';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		}
	}
	out[o] = '\0';
}

static int
run_rebalances(cli_args *a)
{
	const char *group = a->pos[0];
	char esc[1024], path[1200];
	cli_url_escape(group, esc, sizeof(esc));
	snprintf(path, sizeof(path), "/v1/groups/%s/rebalances", esc);
	json_t *j;
	long status;
	int st = cli_admin_get(a, "groups rebalances", path, &j, &status);
	if (st != CLI_OK)
		return st;
	if (status == 404) {
		json_decref(j);
		return cli_fail(CLI_ENOTFOUND, "groups rebalances: group %s does not exist", group);
	}
	json_t *list = json_object_get(j, "rebalances");
	if (status != 200 || !json_is_array(list)) {
		json_decref(j);
		return cli_fail(CLI_ENOTCOHORTD,
				"groups rebalances: the admin API answered HTTP %ld without a "
				"rebalance history: not cohortd's",
				status);
	}
	if (a->json) { /* on one line, as every command's --json */
		cli_json_print(j);
		return CLI_OK;
	}
	st = print_history(a, list);
	json_decref(j);
	return st;
}

const cli_command cli_groups_rebalances_cmd = {
	"groups rebalances",
	"GROUP",
	"a group's rebalance history from cohortd's admin API: per rebalance its generations, "
	"cause, the member that held the barrier, partitions moved and the longest pause "
	"(cohortd only: Apache Kafka keeps none)",
	rebalances_opts,
	1,
	1,
	run_rebalances,
	true,
};
