/*
 * cli_main.c: `cohort COMMAND... [OPTIONS]`: finds the command by its
 * words, parses its options, runs it, and turns the outcome into an exit
 * status. Help, the bash completion and the list of commands are all made
 * from the command table, so they cannot disagree with the parser.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "common/ch_log.h"

static int cmd_version(cli_args *a);
static int cmd_help(cli_args *a);
static int cmd_completion(cli_args *a);

static const cli_opt no_opts[] = {{NULL, NULL, NULL, false}};

static const cli_opt help_opts[] = {
	{"man", NULL, "print the manual page (roff) made from this help", false},
	{"schema", NULL, "with json: the JSON Schema of every command's --json (one document)",
	 false},
	{"markdown", NULL, "with json: the field lists as markdown (docs/cli-json.md)", false},
	{NULL, NULL, NULL, false},
};

static const cli_command version_cmd = {
	"version", "", "print cohort's and libcohort's version", no_opts, 0, 0, cmd_version, false};
static const cli_command help_cmd = {"help",
				     "[COMMAND...|TOPIC]",
				     "explain a command or a topic, or list them all",
				     help_opts,
				     0,
				     3,
				     cmd_help,
				     false};
static const cli_command completion_cmd = {
	"completion",   "bash", "print a bash completion script (source it)", no_opts, 1, 1,
	cmd_completion, false};

static const cli_command *const commands[] = {
	&cli_topics_list_cmd,
	&cli_topics_describe_cmd,
	&cli_topics_create_cmd,
	&cli_topics_delete_cmd,
	&cli_topics_add_partitions_cmd,
	&cli_produce_cmd,
	&cli_consume_cmd,
	&cli_groups_list_cmd,
	&cli_groups_describe_cmd,
	&cli_groups_reset_cmd,
	&cli_groups_delete_cmd,
	&cli_groups_delete_offsets_cmd,
	&cli_groups_remove_members_cmd,
	&cli_groups_watch_cmd,
	&cli_groups_health_cmd,
	&cli_groups_rebalances_cmd,
	&cli_groups_simulate_cmd,
	&cli_users_list_cmd,
	&cli_users_set_cmd,
	&cli_users_delete_cmd,
	&cli_acls_list_cmd,
	&cli_acls_add_cmd,
	&cli_acls_remove_cmd,
	&help_cmd,
	&version_cmd,
	&completion_cmd,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

volatile sig_atomic_t cli_stop_requested;

/* SIGINT/SIGTERM: ask the running command to stop. */
static void
on_stop_signal(int sig)
{
	(void)sig;
	cli_stop_requested = 1;
}

void
cli_catch_stop_signals(void)
{
	struct sigaction sa = {.sa_handler = on_stop_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* The command line, for "no broker answered" messages (NULL outside
 * the run). */
static const cli_args *parsed;

static const char *(*auth_fn)(void *);
static void *auth_handle;

void
cli_auth_source(const char *(*fn)(void *handle), void *handle)
{
	auth_fn = fn;
	auth_handle = handle;
}

/* cli_auth_source for the command's admin client. */
static const char *
admin_auth_error(void *handle)
{
	return cohort_admin_auth_error(handle);
}

int
cli_fail(int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cli_progress_end(); /* the message on a line of its own */
	fputs("cohort: ", stderr);
	vfprintf(stderr, fmt, ap);
	if (status == CLI_EUNREACHABLE && parsed)
		fprintf(stderr, " (no broker answered at %s within %d ms)", parsed->bootstrap,
			parsed->timeout_ms);
	fputc('\n', stderr);
	const char *auth = auth_fn ? auth_fn(auth_handle) : NULL;
	if (auth)
		fprintf(stderr, "cohort: %s\n", auth);
	va_end(ap);
	return status;
}

int
cli_status(cohort_err err)
{
	switch (err) {
	case COHORT_OK:
		return CLI_OK;
	case COHORT_ERR__BAD_CONF:
	case COHORT_ERR__INVALID_ARG:
		return CLI_EUSAGE;
	case COHORT_ERR__TIMED_OUT:
	case COHORT_ERR__TRANSPORT:
		return CLI_EUNREACHABLE;
	case COHORT_ERR_UNKNOWN_TOPIC_OR_PARTITION:
		return CLI_ENOTFOUND;
	default:
		return CLI_EFAIL;
	}
}

/* How many of argv's leading words spell cmd's words (0: not cmd). */
static int
words_match(const cli_command *cmd, int argc, char **argv)
{
	const char *w = cmd->words;
	int n = 0;
	while (*w) {
		size_t len = strcspn(w, " ");
		if (n >= argc || strlen(argv[n]) != len || strncmp(argv[n], w, len) != 0)
			return 0;
		n++;
		w += len;
		while (*w == ' ')
			w++;
	}
	return n;
}

/* The command argv starts with (the longest match), its word count in *n. */
static const cli_command *
find_command(int argc, char **argv, int *n)
{
	const cli_command *best = NULL;
	*n = 0;
	for (size_t i = 0; i < NCOMMANDS; i++) {
		int m = words_match(commands[i], argc, argv);
		if (m > *n) {
			*n = m;
			best = commands[i];
		}
	}
	return best;
}

/* Prints one option line of --help. */
static void
print_opt(FILE *f, const cli_opt *o)
{
	char left[64];
	snprintf(left, sizeof(left), "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
	fprintf(f, "  %-28s %s%s\n", left, o->help, o->repeat ? " (repeatable)" : "");
}

/* `cohort CMD --help`. */
static void
command_help(FILE *f, const cli_command *cmd)
{
	fprintf(f, "Usage: cohort %s%s%s [OPTIONS]\n\n%s.\n\nOptions:\n", cmd->words,
		cmd->usage[0] ? " " : "", cmd->usage, cmd->summary);
	for (int i = 0; cmd->opts[i].name; i++)
		print_opt(f, &cmd->opts[i]);
	fprintf(f, "\nCommon options:\n");
	for (int i = 0; cli_common_opts[i].name; i++)
		print_opt(f, &cli_common_opts[i]);
	fputc('\n', f);
	cli_print_exits(f, cmd);
}

/* `cohort help` and `cohort` alone. */
static void
overview(FILE *f)
{
	fprintf(f, "Usage: cohort COMMAND [OPTIONS]\n\n"
		   "Kafka topics, records and consumer groups, for cohortd and any Kafka "
		   "cluster.\n\nCommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		char left[64];
		snprintf(left, sizeof(left), "%s %s", commands[i]->words, commands[i]->usage);
		fprintf(f, "  %-34s %s\n", left, commands[i]->summary);
	}
	fprintf(f, "\nTopics (cohort help TOPIC):\n");
	for (const cli_topic *t = cli_topics; t->name; t++)
		fprintf(f, "  %-34s %s\n", t->name, t->summary);
	fprintf(f, "\n`cohort COMMAND --help` explains one command.\n\n");
	cli_print_exits(f, NULL);
}

static int
cmd_version(cli_args *a)
{
	/* the tool is built from the same tree as the library it links */
	if (a && a->json)
		cli_json_print(json_pack("{s:s,s:s}", "cohort", cohort_version(), "libcohort",
					 cohort_version()));
	else
		printf("cohort %s\n", cohort_version());
	return CLI_OK;
}

static int
cmd_help(cli_args *a)
{
	if (cli_opt_has(a, "man")) {
		cli_man(stdout, commands, NCOMMANDS);
		return CLI_OK;
	}
	if (a->npos == 0) {
		overview(stdout);
		return CLI_OK;
	}
	bool json_topic = a->npos == 1 && strcmp(a->pos[0], "json") == 0;
	if ((cli_opt_has(a, "schema") || cli_opt_has(a, "markdown")) && !json_topic)
		return cli_fail(CLI_EUSAGE, "--schema and --markdown go with 'cohort help json'");
	if (json_topic && cli_opt_has(a, "schema")) {
		cli_json_print_schemas(stdout);
		return CLI_OK;
	}
	if (json_topic && cli_opt_has(a, "markdown")) {
		cli_json_help(stdout, true);
		return CLI_OK;
	}
	int n;
	const cli_command *cmd = find_command(a->npos, (char **)a->pos, &n);
	const cli_topic *t = a->npos == 1 ? cli_find_topic(a->pos[0]) : NULL;
	if (t) {
		cli_print_topic(stdout, t);
		return CLI_OK;
	}
	if (!cmd || n != a->npos)
		return cli_fail(CLI_EUSAGE, "no command or topic '%s' (cohort help lists them)",
				a->pos[0]);
	command_help(stdout, cmd);
	return CLI_OK;
}

/* bash: the next command word while the words typed are a prefix of
 * commands, then the options of the command they spell. */
static int
cmd_completion(cli_args *a)
{
	if (strcmp(a->pos[0], "bash") != 0)
		return cli_fail(CLI_EUSAGE, "completion: only 'bash' is supported, not '%s'",
				a->pos[0]);
	printf("# cohort bash completion: source <(cohort completion bash)\n"
	       "_cohort() {\n"
	       "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" "
	       "typed=\"${COMP_WORDS[*]:1:COMP_CWORD-1}\"\n"
	       "  local c rest words=()\n"
	       "  local cmds=(");
	for (size_t i = 0; i < NCOMMANDS; i++)
		printf("%s\"%s\"", i ? " " : "", commands[i]->words);
	printf(")\n"
	       "  for c in \"${cmds[@]}\"; do\n"
	       "    [[ \"$typed\" == \"$c\" || \"$typed\" == \"$c \"* ]] || continue\n"
	       "    case \"$c\" in\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		printf("      \"%s\") words=(", commands[i]->words);
		for (int k = 0; commands[i]->opts[k].name; k++)
			printf("--%s ", commands[i]->opts[k].name);
		for (int k = 0; cli_common_opts[k].name; k++)
			printf("--%s ", cli_common_opts[k].name);
		printf(") ;;\n");
	}
	printf("    esac\n"
	       "    COMPREPLY=($(compgen -W \"${words[*]}\" -- \"$cur\")); return\n"
	       "  done\n"
	       "  for c in \"${cmds[@]}\"; do\n"
	       "    if [[ -z \"$typed\" ]]; then words+=(\"${c%%%% *}\")\n"
	       "    elif [[ \"$c\" == \"$typed \"* ]]; then rest=\"${c#\"$typed \"}\"; "
	       "words+=(\"${rest%%%% *}\"); fi\n"
	       "  done\n"
	       "  COMPREPLY=($(compgen -W \"${words[*]}\" -- \"$cur\"))\n"
	       "}\n"
	       "complete -F _cohort cohort\n");
	return CLI_OK;
}

int
main(int argc, char **argv)
{
	/* libcohort logs its joins, leaves and reconnects at INFO on stderr:
	 * noise for a tool whose stderr carries one line per failure. The
	 * tool links libcohort statically and shares its log threshold. */
	ch_log_threshold = CH_LOG_ERROR;
	if (argc < 2) {
		overview(stderr);
		return CLI_EUSAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		overview(stdout);
		return CLI_OK;
	}
	if (strcmp(argv[1], "--version") == 0)
		return cmd_version(NULL);
	int n;
	const cli_command *cmd = find_command(argc - 1, argv + 1, &n);
	if (!cmd)
		return cli_fail(CLI_EUSAGE, "unknown command '%s' (cohort help lists them)",
				argv[1]);
	cli_args a = {0};
	int rc = cli_parse(cmd, argc - 1 - n, argv + 1 + n, &a);
	if (rc == CLI_OK) {
		parsed = &a;
		if (a.help)
			command_help(stdout, cmd);
		else if (!cmd->admin || (a.admin = cli_admin(&a, &rc))) {
			if (a.admin)
				cli_auth_source(admin_auth_error, a.admin);
			rc = cmd->run(&a);
		}
		cli_auth_source(NULL, NULL);
		cohort_admin_free(a.admin);
	}
	parsed = NULL;
	cli_args_free(&a);
	return rc;
}
