/*
 * cli_args.c: the option parser. GNU style: "--name value" or
 * "--name=value", flags take no value, "--" ends the options; options may
 * stand before, between or after positional arguments. Every command also
 * takes the options of cli_common_opts.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

const cli_opt cli_common_opts[] = {
	{"bootstrap-server", "HOST:PORT,...",
	 "brokers to start from (default $COHORT_BOOTSTRAP, else 127.0.0.1:9092)", false},
	{"command-config", "FILE", "client properties (Kafka's keys) to apply", false},
	{"json", NULL, "print JSON for scripts instead of text", false},
	{"timeout-ms", "MS", "how long to wait for the cluster (default 30000)", false},
	{"help", NULL, "show this command's help", false},
	{NULL, NULL, NULL, false},
};

/* The index of `name` (len bytes) in opts, or -1. */
static int
opt_index(const cli_opt *opts, const char *name, size_t len)
{
	for (int i = 0; opts && opts[i].name; i++)
		if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0)
			return i;
	return -1;
}

/* Store value for the command's option i (kept in order when it repeats). */
static int
store(cli_args *a, int i, const char *value)
{
	const cli_opt *o = &a->cmd->opts[i];
	if (a->val[i] && !o->repeat)
		return cli_fail(CLI_EUSAGE, "--%s given twice (%s)", o->name, a->cmd->words);
	a->val[i] = value;
	const char **n = realloc(a->vals[i], sizeof(char *) * (size_t)(a->nvals[i] + 1));
	if (!n)
		return cli_fail(CLI_EFAIL, "out of memory");
	a->vals[i] = n;
	n[a->nvals[i]++] = value;
	return CLI_OK;
}

/* Apply a common option (index i of cli_common_opts). */
static int
store_common(cli_args *a, int i, const char *value)
{
	const char *name = cli_common_opts[i].name;
	if (strcmp(name, "bootstrap-server") == 0) {
		a->bootstrap = value;
	} else if (strcmp(name, "command-config") == 0) {
		a->command_config = value;
	} else if (strcmp(name, "json") == 0) {
		a->json = true;
	} else if (strcmp(name, "timeout-ms") == 0) {
		char *end;
		errno = 0;
		long long v = strtoll(value, &end, 10);
		if (errno || end == value || *end || v < 1 || v > 86400000)
			return cli_fail(
				CLI_EUSAGE,
				"--timeout-ms: expected milliseconds in [1, 86400000], got '%s'",
				value);
		a->timeout_ms = (int)v;
	} else if (strcmp(name, "help") == 0) {
		a->help = true;
	}
	return CLI_OK;
}

int
cli_parse(const cli_command *cmd, int argc, char **argv, cli_args *a)
{
	a->cmd = cmd;
	const char *env = getenv("COHORT_BOOTSTRAP");
	a->bootstrap = env && *env ? env : "127.0.0.1:9092";
	a->timeout_ms = 30000;
	bool options_done = false;
	for (int k = 0; k < argc; k++) {
		const char *s = argv[k];
		if (options_done || s[0] != '-' || strcmp(s, "-") == 0) {
			if (a->npos == CLI_MAX_POS)
				return cli_fail(CLI_EUSAGE, "too many arguments for '%s'",
						cmd->words);
			a->pos[a->npos++] = s;
			continue;
		}
		if (strcmp(s, "--") == 0) {
			options_done = true;
			continue;
		}
		if (s[1] != '-')
			return cli_fail(CLI_EUSAGE,
					"unknown option '%s' for '%s' (options are --long; see "
					"cohort %s --help)",
					s, cmd->words, cmd->words);
		const char *name = s + 2, *eq = strchr(name, '=');
		size_t len = eq ? (size_t)(eq - name) : strlen(name);
		int i = opt_index(cmd->opts, name, len), ci = -1;
		if (i < 0 && (ci = opt_index(cli_common_opts, name, len)) < 0)
			return cli_fail(CLI_EUSAGE,
					"unknown option '--%.*s' for '%s' (see cohort %s --help)",
					(int)len, name, cmd->words, cmd->words);
		const cli_opt *o = i >= 0 ? &cmd->opts[i] : &cli_common_opts[ci];
		const char *value = "";
		if (o->arg) {
			if (eq) {
				value = eq + 1;
			} else if (k + 1 < argc) {
				value = argv[++k];
			} else {
				return cli_fail(CLI_EUSAGE, "--%s needs a value (%s)", o->name,
						o->arg);
			}
		} else if (eq) {
			return cli_fail(CLI_EUSAGE, "--%s takes no value", o->name);
		}
		int rc = i >= 0 ? store(a, i, value) : store_common(a, ci, value);
		if (rc != CLI_OK)
			return rc;
	}
	if (a->help)
		return CLI_OK;
	if (a->npos < cmd->min_pos)
		return cli_fail(CLI_EUSAGE, "'%s' needs %s (see cohort %s --help)", cmd->words,
				cmd->usage, cmd->words);
	if (a->npos > cmd->max_pos)
		return cli_fail(CLI_EUSAGE, "unexpected argument '%s' for '%s'",
				a->pos[cmd->max_pos], cmd->words);
	return CLI_OK;
}

/* The index of option `name` in a's command; aborts on a name the command
 * does not declare (a bug in the command, not bad input). */
static int
declared(const cli_args *a, const char *name)
{
	int i = opt_index(a->cmd->opts, name, strlen(name));
	if (i < 0)
		abort();
	return i;
}

const char *
cli_opt_get(const cli_args *a, const char *name)
{
	return a->val[declared(a, name)];
}

bool
cli_opt_has(const cli_args *a, const char *name)
{
	return cli_opt_get(a, name) != NULL;
}

const char *const *
cli_opt_all(const cli_args *a, const char *name, int *n)
{
	int i = declared(a, name);
	*n = a->nvals[i];
	return a->vals[i];
}

int
cli_opt_int(const cli_args *a, const char *name, int64_t min, int64_t max, int64_t dflt,
	    int64_t *out)
{
	const char *v = cli_opt_get(a, name);
	if (!v) {
		*out = dflt;
		return CLI_OK;
	}
	char *end;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	if (errno || end == v || *end || x < min || x > max)
		return cli_fail(CLI_EUSAGE,
				"--%s: expected an integer in [%" PRId64 ", %" PRId64 "], got '%s'",
				name, min, max, v);
	*out = x;
	return CLI_OK;
}

void
cli_args_free(cli_args *a)
{
	for (int i = 0; i < CLI_MAX_OPTS; i++)
		free(a->vals[i]);
}

int64_t
cli_parse_datetime(const char *s)
{
	struct tm tm = {0};
	int ms = 0, used = 0;
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &used) != 6 ||
	    used != 19)
		return -1;
	const char *p = s + used;
	if (*p == '.') {
		int digits = 0;
		for (p++; *p >= '0' && *p <= '9' && digits < 3; p++, digits++)
			ms = ms * 10 + (*p - '0');
		if (!digits)
			return -1;
		while (digits++ < 3)
			ms *= 10;
	}
	int64_t offset_s = 0; /* east of UTC */
	if (*p == 'Z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int hh, mm, n = 0;
		if (sscanf(p + 1, "%2d:%2d%n", &hh, &mm, &n) != 2 || n != 5 || hh > 18 || mm > 59)
			return -1;
		offset_s = (*p == '-' ? -1 : 1) * (int64_t)(hh * 3600 + mm * 60);
		p += 1 + n;
	}
	if (*p || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
	    tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 59)
		return -1;
	int mday = tm.tm_mday;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	time_t t = timegm(&tm);
	if (tm.tm_mday != mday) /* timegm normalised a 31st of a shorter month */
		return -1;
	t -= (time_t)offset_s;
	return t < 0 ? -1 : (int64_t)t * 1000 + ms;
}

int64_t
cli_parse_duration(const char *s)
{
	if (*s != 'P' && *s != 'p')
		return -1;
	s++;
	int64_t ms = 0;
	bool in_time = false, any = false;
	while (*s) {
		if (*s == 'T' || *s == 't') {
			if (in_time)
				return -1;
			in_time = true;
			s++;
			continue;
		}
		char *end;
		double v = strtod(s, &end);
		if (end == s || v < 0 || !(*s >= '0' && *s <= '9'))
			return -1;
		char u = *end;
		double mult = u == 'D' || u == 'd'   ? (in_time ? -1 : 86400000.0)
			      : u == 'H' || u == 'h' ? (in_time ? 3600000.0 : -1)
			      : u == 'M' || u == 'm' ? (in_time ? 60000.0 : -1)
			      : u == 'S' || u == 's' ? (in_time ? 1000.0 : -1)
						     : -1;
		if (mult < 0 || v * mult > 1e15)
			return -1;
		ms += (int64_t)(v * mult);
		any = true;
		s = end + 1;
	}
	return any ? ms : -1;
}

int64_t
cli_parse_span(const char *s)
{
	if (*s == 'P' || *s == 'p')
		return cli_parse_duration(s);
	if (!(*s >= '0' && *s <= '9'))
		return -1;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s)
		return -1;
	double mult = strcmp(end, "ms") == 0                          ? 1
		      : strcmp(end, "s") == 0 || strcmp(end, "") == 0 ? 1000
		      : strcmp(end, "m") == 0                         ? 60000
		      : strcmp(end, "h") == 0                         ? 3600000
		      : strcmp(end, "d") == 0                         ? 86400000
								      : -1;
	if (mult < 0 || v * mult > 1e15)
		return -1;
	return (int64_t)(v * mult);
}
