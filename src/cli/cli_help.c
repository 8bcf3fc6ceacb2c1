/*
 * cli_help.c: what `cohort help` explains beyond one command: the exit
 * statuses, the help topics (`cohort help lag`, ...), and the manual page
 * (`cohort help --man`, which the build writes to cohort.1), all made from
 * the command table and these texts so that --help, help topics and the
 * man page say the same thing.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char *const exit_texts[] = {
	"done",
	"the operation failed (the cluster said why)",
	"bad command line (unknown command or option, bad value; the message names it)",
	"no broker answered in time (--timeout-ms)",
	"no such group, topic or partition",
	"refused by the cluster's state (e.g. a group with active members)",
	"groups health: the group is WARN",
	"groups health: the group is STOP, STALL or REWIND",
	"the cluster is not cohortd (a cohortd-only command: groups rebalances, groups simulate)",
};
#define NEXITS (sizeof(exit_texts) / sizeof(exit_texts[0]))

/* The commands whose exit statuses are not 0 to 5 (the command table's
 * entries stay as they are; a new command ends with 0 to 5 unless named
 * here). */
static const struct {
	const char *words, *exits;
} special_exits[] = {
	{"groups health", "0123467"},   {"groups rebalances", "0123458"},
	{"groups simulate", "0123458"}, {"help", "02"},
	{"completion", "02"},           {"version", "0"},
};

/* The statuses cmd can end with, as digits. */
static const char *
exits_of(const cli_command *cmd)
{
	for (size_t i = 0; cmd && i < sizeof(special_exits) / sizeof(special_exits[0]); i++)
		if (strcmp(cmd->words, special_exits[i].words) == 0)
			return special_exits[i].exits;
	return cmd ? "012345" : "012345678";
}

void
cli_print_exits(FILE *f, const cli_command *cmd)
{
	fprintf(f, "Exit status:\n");
	for (const char *d = exits_of(cmd); *d; d++)
		if ((size_t)(*d - '0') < NEXITS)
			fprintf(f, "  %c  %s\n", *d, exit_texts[*d - '0']);
}

static void
print_all_exits(FILE *f)
{
	cli_print_exits(f, NULL);
}

static void
print_json_topic(FILE *f)
{
	cli_json_help(f, false);
}

const cli_topic cli_topics[] = {
	{"lag", "how describe and health count lag",
	 "LAG = max(0, LOG-END-OFFSET - max(CURRENT-OFFSET, LOG-START-OFFSET)).\n"
	 "\n"
	 "CURRENT-OFFSET is the group's committed offset, LOG-END-OFFSET the next offset to be "
	 "written (the high watermark). The committed offsets are read first and the end offsets "
	 "after them: end offsets only grow, so the lag is never negative while producers and "
	 "the group are running.\n"
	 "\n"
	 "A partition the group never committed shows \"-\", not the whole log (\"fake lag\"). A "
	 "committed offset below the log start offset means retention deleted records before "
	 "the group read them: describe names them in a Note line, and counts the lag from the "
	 "log start. A partition with lag and no owner in a group that has members gets a Note "
	 "too.\n",
	 NULL},
	{"health", "Burrow's rules in groups health",
	 "groups health samples the group every --interval during --window, and applies "
	 "Burrow's consumer lag evaluation rules to each partition's samples with a commit, in "
	 "this order:\n"
	 "\n"
	 "OK: the lag is 0 now or in any sample.\n"
	 "REWIND: the committed offset moved back between two samples.\n"
	 "STALL or STOP: the committed offset last changed longer ago than the window's start "
	 "was before that change: STALL while a member owns the partition (alive, not "
	 "progressing), STOP when nobody does.\n"
	 "WARN: commits advance but the lag never went down.\n"
	 "OK otherwise.\n"
	 "\n"
	 "The group's status is its worst partition's (OK < WARN < STOP < STALL < REWIND). Exit "
	 "status 0 for OK, 6 for WARN, 7 for the others.\n",
	 NULL},
	{"format", "consume's --format and --json",
	 "--format FMT prints each record by FMT, kcat's conversions: %t topic, %p partition, "
	 "%o offset, %T timestamp (ms since the epoch), %k key, %v or %s value, %h headers as "
	 "k=v,k=v, %% a percent sign; \\n and \\t are a newline and a tab. A null key or value "
	 "prints as null. The default is \"%v\\n\": the value alone, one record a line.\n"
	 "\n"
	 "--json prints one object a line: topic, partition, offset, timestamp, key, value, "
	 "headers (a list of {key, value}); bytes that are not UTF-8 go to key_base64, "
	 "value_base64 instead.\n",
	 NULL},
	{"time", "how times and durations are written",
	 "A time (consume --from, reset-offsets --to-datetime) is ISO-8601: "
	 "YYYY-MM-DDTHH:MM:SS, optionally .sss, then Z or +HH:MM or -HH:MM; without a zone it "
	 "is UTC.\n"
	 "\n"
	 "A duration (reset-offsets --by-duration) is ISO-8601's PnDTnHnMnS, as Java's "
	 "Duration.parse reads it (days at most). A span (groups health --window, --interval) "
	 "is that, or a number with ms, s, m, h or d (a bare number is seconds).\n",
	 NULL},
	{"config", "reaching the cluster",
	 "--bootstrap-server HOST:PORT,... names the brokers to start from; without it, "
	 "$COHORT_BOOTSTRAP, else 127.0.0.1:9092.\n"
	 "\n"
	 "--command-config FILE applies client properties (Kafka's key names and values, a "
	 "Java properties file as Kafka's tools read it); consume and produce also take "
	 "--property KEY=VALUE. --timeout-ms bounds each wait for the cluster (default 30000): "
	 "a broker that does not answer ends the command with exit status 3.\n",
	 NULL},
	{"json", "what --json prints, command by command (--schema: the JSON Schema)", NULL,
	 print_json_topic},
	{"exit-status", "what the exit statuses mean", NULL, print_all_exits},
	{NULL, NULL, NULL, NULL},
};

const cli_topic *
cli_find_topic(const char *name)
{
	for (const cli_topic *t = cli_topics; t->name; t++)
		if (strcmp(t->name, name) == 0)
			return t;
	return NULL;
}

void
cli_print_topic(FILE *f, const cli_topic *t)
{
	if (!t->text) {
		t->print(f);
		return;
	}
	/* each line of text wrapped at 76 columns, on blanks */
	for (const char *line = t->text; *line;) {
		size_t len = strcspn(line, "\n");
		const char *p = line, *end = line + len;
		while (end - p > 76) {
			const char *cut = p + 76;
			while (cut > p && *cut != ' ')
				cut--;
			if (cut == p)
				cut = p + 76;
			fprintf(f, "%.*s\n", (int)(cut - p), p);
			p = *cut == ' ' ? cut + 1 : cut;
		}
		fprintf(f, "%.*s\n", (int)(end - p), p);
		line = *end ? end + 1 : end;
	}
}

/* ---- the manual page ---- */

/* s escaped for roff within a line: backslashes and hyphens. */
static void
roff_inline(FILE *f, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] == '\\')
			fputs("\\e", f);
		else if (s[i] == '-')
			fputs("\\-", f);
		else
			fputc(s[i], f);
}

/* s in roff: escaped, a leading dot or quote made literal, each line its
 * own (one paragraph or list item a line), blank lines as paragraph
 * breaks. */
void
cli_roff(FILE *f, const char *s)
{
	while (*s) {
		size_t len = strcspn(s, "\n");
		if (!len) {
			fputs(".PP\n", f);
		} else {
			if (*s == '.' || *s == '\'')
				fputs("\\&", f);
			roff_inline(f, s, len);
			fputs(s[len] ? "\n.br\n" : "\n", f);
		}
		s += len + (s[len] != '\0');
	}
}

/* One option as a tagged paragraph: "--name ARG" in bold and italics. */
static void
man_opt(FILE *f, const cli_opt *o)
{
	fputs(".TP\n\\fB\\-\\-", f);
	roff_inline(f, o->name, strlen(o->name));
	fputs("\\fR", f);
	if (o->arg) {
		fputs(" \\fI", f);
		roff_inline(f, o->arg, strlen(o->arg));
		fputs("\\fR", f);
	}
	fputc('\n', f);
	cli_roff(f, o->help);
	if (o->repeat)
		fputs("(repeatable)\n", f);
}

void
cli_man(FILE *f, const cli_command *const *cmds, size_t n)
{
	fprintf(f, ".TH COHORT 1 \"\" \"cohort %s\" \"User Commands\"\n", cohort_version());
	fputs(".SH NAME\ncohort \\- Kafka topics, records and consumer groups, for cohortd and "
	      "any Kafka cluster\n"
	      ".SH SYNOPSIS\n.B cohort\n.I COMMAND\n[\\fIOPTIONS\\fR]\n"
	      ".SH DESCRIPTION\n",
	      f);
	cli_roff(f, "cohort works with topics, records and consumer groups through Kafka's "
		    "protocol: for cohortd and for any Kafka cluster. Its groups commands print "
		    "what kafka-consumer-groups prints, with the same column names. This page is "
		    "made from the same table as each command's --help.\n");
	fputs(".SH COMMANDS\n", f);
	for (size_t i = 0; i < n; i++) {
		fputs(".SS \"cohort ", f);
		fputs(cmds[i]->words, f);
		if (cmds[i]->usage[0]) {
			fputc(' ', f);
			fputs(cmds[i]->usage, f);
		}
		fputs("\"\n", f);
		cli_roff(f, cmds[i]->summary);
		for (int k = 0; cmds[i]->opts[k].name; k++)
			man_opt(f, &cmds[i]->opts[k]);
		fputs(".PP\nExit statuses:", f);
		for (const char *d = exits_of(cmds[i]); *d; d++)
			fprintf(f, " %c", *d);
		fputs(" (see EXIT STATUS).\n", f);
	}
	fputs(".SH OPTIONS\nEvery command takes these:\n", f);
	for (int k = 0; cli_common_opts[k].name; k++)
		man_opt(f, &cli_common_opts[k]);
	for (const cli_topic *t = cli_topics; t->name; t++) {
		if (!t->text)
			continue;
		fputs(".SH ", f);
		for (const char *c = t->name; *c; c++)
			fputc(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c, f);
		fputc('\n', f);
		cli_roff(f, t->text);
	}
	cli_json_man(f);
	fputs(".SH \"EXIT STATUS\"\n", f);
	for (size_t k = 0; k < NEXITS; k++) {
		fprintf(f, ".TP\n.B %zu\n", k);
		cli_roff(f, exit_texts[k]);
	}
	fputs(".SH ENVIRONMENT\n.TP\n.B COHORT_BOOTSTRAP\n", f);
	cli_roff(f, "the brokers to start from when --bootstrap-server is not given.\n");
}
