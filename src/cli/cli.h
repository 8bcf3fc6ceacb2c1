/*
 * cli.h: the cohort command-line tool (issue 11), on libcohort's public API.
 *
 * One command per file (cli_consume.c, ...), each a cli_command: its words
 * ("groups describe"), its options (which --help, the parser and the bash
 * completion all read), and its run function. cli_main.c finds the command,
 * parses the options, builds the client configuration (cli_client.c) and
 * turns the result into an exit status.
 */
#ifndef CLI_H
#define CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>

#include "cohort/cohort.h"

/* Exit statuses, documented in `cohort help` (cli_main.c). */
enum {
	CLI_OK = 0,
	CLI_EFAIL = 1,        /* the operation failed (the broker said why) */
	CLI_EUSAGE = 2,       /* bad command line: unknown command, flag, bad value */
	CLI_EUNREACHABLE = 3, /* no broker answered in time */
	CLI_ENOTFOUND = 4,    /* the group, topic or partition does not exist */
	CLI_EREFUSED = 5,     /* refused by the cluster's state (group not empty, ...) */
	CLI_EWARN = 6,        /* groups health: WARN */
	CLI_EUNHEALTHY = 7,   /* groups health: STOP, STALL or REWIND */
	CLI_ENOTCOHORTD = 8,  /* a cohortd-only command on another cluster (Apache Kafka) */
};

/* An option of a command. arg NULL: a flag. */
typedef struct cli_opt {
	const char *name; /* without the leading "--" */
	const char *arg;  /* the value's name in --help ("N", "FILE"), NULL for a flag */
	const char *help;
	bool repeat; /* may be given more than once (values kept in order) */
} cli_opt;

#define CLI_MAX_OPTS 24
#define CLI_MAX_POS 16

/* A parsed command line. */
typedef struct cli_args {
	const struct cli_command *cmd;
	const char *pos[CLI_MAX_POS]; /* positional arguments */
	int npos;
	/* per option of cmd->opts (same index): the last value ("" for a
	 * flag given), NULL when absent; repeated values in order */
	const char *val[CLI_MAX_OPTS];
	const char **vals[CLI_MAX_OPTS];
	int nvals[CLI_MAX_OPTS];
	/* the options every command takes */
	const char *bootstrap;      /* --bootstrap-server, COHORT_BOOTSTRAP, 127.0.0.1:9092 */
	const char *command_config; /* --command-config FILE, or NULL */
	bool json;                  /* --json */
	int timeout_ms;             /* --timeout-ms, default 30000 */
	bool help;                  /* --help */
	cohort_admin *admin;        /* for commands with cli_command.admin */
} cli_args;

typedef struct cli_command {
	const char *words; /* "topics list" */
	const char *usage; /* positional part of the synopsis: "TOPIC", "" */
	const char *summary;
	const cli_opt *opts; /* NULL-name terminated, at most CLI_MAX_OPTS */
	int min_pos, max_pos;
	int (*run)(cli_args *a);
	bool admin; /* run gets an admin client in a->admin (freed after) */
} cli_command;

/* The commands of each file. */
extern const cli_command cli_consume_cmd, cli_produce_cmd;
extern const cli_command cli_topics_list_cmd, cli_topics_describe_cmd, cli_topics_create_cmd,
	cli_topics_delete_cmd, cli_topics_add_partitions_cmd;
extern const cli_command cli_groups_list_cmd, cli_groups_describe_cmd, cli_groups_reset_cmd,
	cli_groups_delete_cmd, cli_groups_delete_offsets_cmd, cli_groups_remove_members_cmd,
	cli_groups_watch_cmd, cli_groups_health_cmd;
extern const cli_command cli_groups_rebalances_cmd; /* cli_rebalances.c */
extern const cli_command cli_groups_simulate_cmd;   /* cli_simulate.c */
extern const cli_command cli_users_list_cmd, cli_users_set_cmd,
	cli_users_delete_cmd;                                                      /* cli_users.c */
extern const cli_command cli_acls_list_cmd, cli_acls_add_cmd, cli_acls_remove_cmd; /* cli_acls.c */

/* ---- options (cli_args.c) ---- */

/* The options every command takes (NULL-name terminated). */
extern const cli_opt cli_common_opts[];
/* Free what cli_parse allocated. */
void cli_args_free(cli_args *a);

/* The value of option `name` of a's command, NULL when absent. */
const char *cli_opt_get(const cli_args *a, const char *name);
/* Whether flag or option `name` was given. */
bool cli_opt_has(const cli_args *a, const char *name);
/* Every value of a repeated option; *n gets the count. */
const char *const *cli_opt_all(const cli_args *a, const char *name, int *n);
/* The option as an integer in [min, max]: *out, or CLI_EUSAGE with a
 * message naming the option. Absent: *out = dflt. */
int cli_opt_int(const cli_args *a, const char *name, int64_t min, int64_t max, int64_t dflt,
		int64_t *out);
/* ms since the epoch of an ISO-8601 time "YYYY-MM-DDTHH:MM:SS[.sss]"
 * with "Z", "+HH:MM" or "-HH:MM" (none: UTC),
 * or -1 when it is not one. */
int64_t cli_parse_datetime(const char *s);
/* ms of an ISO-8601 duration "PnDTnHnMn[.n]S" (Java's Duration.parse, days
 * at most), or -1. */
int64_t cli_parse_duration(const char *s);
/* ms of a span: "500ms", "30s", "5m", "2h", "1d", a bare number of seconds,
 * or an ISO-8601 duration; -1 when it is none of them. */
int64_t cli_parse_span(const char *s);
/* Parse argv (after the command words) into a; CLI_OK or CLI_EUSAGE with
 * the message printed. */
int cli_parse(const cli_command *cmd, int argc, char **argv, cli_args *a);

/* ---- help (cli_help.c) ---- */

/* A help topic: `cohort help NAME`, a section of the man page. */
typedef struct cli_topic {
	const char *name, *summary;
	const char *text;       /* NULL: print does it */
	void (*print)(FILE *f); /* the exit statuses, the JSON schemas */
} cli_topic;
extern const cli_topic cli_topics[]; /* NULL-name terminated */
const cli_topic *cli_find_topic(const char *name);
void cli_print_topic(FILE *f, const cli_topic *t);
/* The exit statuses cmd can end with (NULL: all of them), explained. */
void cli_print_exits(FILE *f, const cli_command *cmd);
/* The manual page (roff, man(7)) of these commands, the common options,
 * the topics and the exit statuses. */
void cli_man(FILE *f, const cli_command *const *cmds, size_t n);
/* s escaped for roff, one output line per line of s (cli_help.c). */
void cli_roff(FILE *f, const char *s);

/* ---- the documented --json (cli_json.c, from cli_json.json) ---- */

/* `cohort help json`: every command's JSON fields, for people, or as
 * markdown (docs/cli-json.md). */
void cli_json_help(FILE *f, bool markdown);
/* The JSON Schema document itself (`cohort help json --schema`). */
void cli_json_print_schemas(FILE *f);
/* The man page's JSON OUTPUT section. */
void cli_json_man(FILE *f);

/* ---- messages (cli_main.c) ---- */

/* Set by SIGINT or SIGTERM once cli_catch_stop_signals ran: long-running
 * commands (consume, watch) end cleanly when they see it. */
extern volatile sig_atomic_t cli_stop_requested;
void cli_catch_stop_signals(void);

/* "cohort: <message>" on stderr; returns status (for `return cli_fail(...)`).
 * When the command's client failed to authenticate, the reason follows on
 * a line of its own (the broker's SASL message, OpenSSL's for TLS). */
int cli_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The client whose authentication failure cli_fail reports: fn(handle) is its
 * cohort_*_auth_error. */
void cli_auth_source(const char *(*fn)(void *handle), void *handle);
/* The exit status for a libcohort error. */
int cli_status(cohort_err err);

/* ---- tables (cli_table.c) ---- */

/* Room for one more element of size bytes in *(void **)arrp, which holds n
 * of *cap (doubling, from 16); false (nothing changed) on OOM. */
bool cli_grow(void *arrp, size_t *cap, size_t n, size_t size);

/* Rows of ncols strings (copied), the first row the headers. */
typedef struct cli_table {
	int ncols;
	char **cells; /* nrows * ncols */
	size_t nrows, cap;
} cli_table;

/* A table with its header row; NULL when out of memory. */
cli_table *cli_table_new(const char *const *headers, int ncols);
/* Add a row of ncols cells (NULL cells print as "-"); false on OOM. */
bool cli_table_add(cli_table *t, const char *const *cells);
/* Print it aligned: every column as wide as its widest cell. */
void cli_table_print(const cli_table *t, FILE *f);
void cli_table_free(cli_table *t);

/* A progress line on stderr, redrawn in place, only when stderr is a
 * terminal; at most every 200 ms unless force. */
void cli_progress(bool force, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Erase the progress line, if one is shown. */
void cli_progress_end(void);

/* ---- a group's offsets (cli_groups.c) ---- */

/* One partition of a group: what describe's offsets view and health show. */
typedef struct cli_part_row {
	const char *topic;
	int32_t partition;
	int64_t committed;  /* -1: none */
	int64_t start, end; /* log start and end offsets, -1 when not read */
	cohort_err err;
	const cohort_member_description *owner; /* NULL: nobody */
} cli_part_row;

typedef struct cli_rows {
	cli_part_row *r;
	size_t n, cap;
} cli_rows;

/* Committed offsets, then log start and end offsets, of every partition
 * group g owns or has a commit for, into rs (free rs->r and *committed,
 * which the topic names point into). Commits are read first: end offsets
 * only grow, so the lag is never negative. */
cohort_err cli_read_offsets(cohort_admin *ad, const cohort_group_description *g, cli_rows *rs,
			    cohort_group_offsets_list **committed);
/* LAG = max(0, end - max(committed, start)); -1 when nothing is committed
 * (shown "-"). */
int64_t cli_lag(const cli_part_row *r);
/* qsort order: topic, then partition. */
int cli_row_cmp(const void *x, const void *y);

/* ---- clients (cli_client.c) ---- */

/* A configuration from a's --bootstrap-server and --command-config (Java
 * properties, client keys); NULL with the message printed (*status set). */
cohort_conf *cli_conf(const cli_args *a, int *status);
/* An admin client for a's cluster; NULL with the message printed
 * (*status set). */
cohort_admin *cli_admin(const cli_args *a, int *status);
/* Print a JSON value (jansson's json_t, taken) on one line of stdout. */
struct json_t;
void cli_json_print(struct json_t *v);
/* GET path ("/v1/...") of cohortd's admin API (--admin-url, else the
 * broker's admin.listeners; cli_rebalances.c) as JSON: CLI_OK with *out (an
 * object: the page, or {"error": ...} with *status a 4xx), else a printed
 * failure (CLI_ENOTCOHORTD: not cohortd's API; CLI_EUNREACHABLE), messages
 * prefixed by cmd. */
int cli_admin_get(cli_args *a, const char *cmd, const char *path, struct json_t **out,
		  long *status);
/* s percent-encoded for a URL path segment or query value. */
void cli_url_escape(const char *s, char *out, size_t cap);
/* Set key=value on conf or print why not; CLI_OK or CLI_EUSAGE. */
int cli_conf_set(cohort_conf *conf, const char *key, const char *value, const char *origin);

/* Every --property KEY=VALUE of a's command onto conf; CLI_OK or
 * CLI_EUSAGE naming the bad one. */
int cli_conf_properties(const cli_args *a, cohort_conf *conf);
/* The partition count of topic into *count; a missing topic or no broker
 * is a printed failure (CLI_ENOTFOUND, CLI_EUNREACHABLE) prefixed by cmd. */
int cli_topic_partitions(cohort_admin *ad, const char *cmd, const char *topic, int32_t *count);
/* Every topic of tps exists and has its partitions, or a printed failure
 * (CLI_ENOTFOUND naming the first missing one). */
int cli_check_partitions(cohort_admin *ad, const char *cmd, const cohort_tp *tps, size_t n);

#endif
