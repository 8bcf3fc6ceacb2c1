/*
 * cli_group_admin.c: the commands that change a group — reset-offsets,
 * delete, delete-offsets, remove-members — with kafka-consumer-groups'
 * rules: offsets are reset only while the group has no active members
 * (Empty, or no group yet), a dry run unless --execute, and Kafka's
 * clamping of a target outside [log start, log end].
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

/* ---- which partitions: --topic T[:P,...]... or --all-topics ---- */

typedef struct tp_list {
	cohort_tp *tp;
	size_t n, cap;
	char **names; /* owned topic names, one per --topic */
	size_t nnames;
} tp_list;

static void
tp_list_free(tp_list *l)
{
	for (size_t i = 0; i < l->nnames; i++)
		free(l->names[i]);
	free(l->names);
	free(l->tp);
}

static bool
tp_add(tp_list *l, const char *topic, int32_t partition)
{
	if (!cli_grow(&l->tp, &l->cap, l->n, sizeof(*l->tp)))
		return false;
	l->tp[l->n++] = (cohort_tp){topic, partition};
	return true;
}

/* --topic values into l: "T" is every partition of T (from metadata),
 * "T:0,2" those. CLI_OK or a usage/lookup failure (printed). */
static int
parse_topics(const cli_args *a, cohort_admin *ad, tp_list *l)
{
	int n;
	const char *const *ts = cli_opt_all(a, "topic", &n);
	l->names = calloc((size_t)n + 1, sizeof(char *));
	if (!l->names)
		return cli_fail(CLI_EFAIL, "out of memory");
	for (int i = 0; i < n; i++) {
		const char *colon = strchr(ts[i], ':');
		char *name = strndup(ts[i], colon ? (size_t)(colon - ts[i]) : strlen(ts[i]));
		if (!name)
			return cli_fail(CLI_EFAIL, "out of memory");
		l->names[l->nnames++] = name;
		if (!*name)
			return cli_fail(CLI_EUSAGE, "--topic: expected T or T:P,P..., got '%s'",
					ts[i]);
		if (colon) {
			const char *p = colon + 1;
			while (*p) {
				char *end;
				errno = 0;
				long v = strtol(p, &end, 10);
				if (errno || end == p || v < 0 || v > INT32_MAX ||
				    (*end && *end != ','))
					return cli_fail(CLI_EUSAGE,
							"--topic: bad partition list in '%s'",
							ts[i]);
				if (!tp_add(l, name, (int32_t)v))
					return cli_fail(CLI_EFAIL, "out of memory");
				p = *end ? end + 1 : end;
			}
			continue;
		}
		int32_t count;
		int rc = cli_topic_partitions(ad, "--topic", name, &count);
		for (int32_t p = 0; !rc && p < count; p++)
			if (!tp_add(l, name, p))
				rc = cli_fail(CLI_EFAIL, "out of memory");
		if (rc)
			return rc;
	}
	return CLI_OK;
}

/* The group's description (the caller frees d); a group that cannot be
 * described is a printed failure. */
static int
describe_one(cohort_admin *ad, const char *group, const char *cmd, cohort_group_descriptions **d,
	     const cohort_group_description **g)
{
	const char *one[1] = {group};
	cohort_err e = cohort_admin_describe_consumer_groups(ad, one, 1, -1, d);
	*g = *d && (*d)->groups_n ? &(*d)->groups[0] : NULL;
	if (!*g || (*g)->err)
		return cli_fail(cli_status(*g ? (*g)->err : e), "%s: group '%s': %s", cmd, group,
				cohort_err_str(*g ? (*g)->err : e));
	return CLI_OK;
}

/* ---- reset-offsets ---- */

static const cli_opt reset_opts[] = {
	{"topic", "T[:P,...]", "partitions to reset: every partition of T, or those listed", true},
	{"all-topics", NULL, "every partition the group has committed offsets for", false},
	{"to-earliest", NULL, "to the log start offset", false},
	{"to-latest", NULL, "to the log end offset", false},
	{"to-offset", "N", "to offset N (kept within [log start, log end])", false},
	{"shift-by", "N", "by N from the committed offset (negative: back)", false},
	{"to-datetime", "YYYY-MM-DDTHH:MM:SS[.sss][Z|+HH:MM]",
	 "to the first offset at or after this time (UTC unless a zone is given)", false},
	{"by-duration", "PnDTnHnMnS", "to the first offset at or after now minus the duration",
	 false},
	{"to-current", NULL, "to the committed offset (log end where none)", false},
	{"from-file", "CSV", "to the offsets of a CSV file: topic,partition,offset lines", false},
	{"execute", NULL, "apply the new offsets (without it: a dry run)", false},
	{"export", NULL, "print the new offsets as the CSV --from-file reads", false},
	{NULL, NULL, NULL, false},
};

/* The partitions and offsets of a --from-file CSV (topic,partition,offset
 * per line; a header line "topic,partition,offset" is skipped). */
static int
read_csv(const char *path, tp_list *l, int64_t **offs)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return cli_fail(CLI_EUSAGE, "--from-file %s: %s", path, strerror(errno));
	char line[4096];
	int lineno = 0, rc = CLI_OK;
	size_t ocap = 0;
	while (rc == CLI_OK && fgets(line, sizeof(line), f)) {
		lineno++;
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0] || (lineno == 1 && strcmp(line, "topic,partition,offset") == 0))
			continue;
		char *c1 = strchr(line, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
		char *e1, *e2;
		long p = c1 ? strtol(c1 + 1, &e1, 10) : -1;
		long long o = c2 ? strtoll(c2 + 1, &e2, 10) : -1;
		if (!c1 || !c2 || c1 == line || e1 != c2 || p < 0 || p > INT32_MAX || *e2 ||
		    e2 == c2 + 1 || o < 0) {
			rc = cli_fail(
				CLI_EUSAGE,
				"--from-file %s:%d: expected topic,partition,offset, got '%s'",
				path, lineno, line);
			break;
		}
		char *name = strndup(line, (size_t)(c1 - line));
		char **nn = realloc(l->names, sizeof(char *) * (l->nnames + 1));
		if (!name || !nn || !tp_add(l, name, (int32_t)p) ||
		    !cli_grow(offs, &ocap, l->n - 1, sizeof(int64_t))) {
			free(name);
			if (nn)
				l->names = nn;
			rc = cli_fail(CLI_EFAIL, "out of memory");
			break;
		}
		l->names = nn;
		l->names[l->nnames++] = name;
		(*offs)[l->n - 1] = o;
	}
	fclose(f);
	return rc;
}

/* Which of the --to-* modes was given; exactly one must be. */
static const char *const modes[] = {"to-earliest", "to-latest",   "to-offset",  "shift-by",
				    "to-datetime", "by-duration", "to-current", "from-file"};

/* ListOffsets of the partitions by spec into out (n entries). */
static cohort_err
offsets_by(cohort_admin *ad, const tp_list *l, int64_t spec, int64_t *out)
{
	cohort_offset_query *q = calloc(l->n + 1, sizeof(*q));
	if (!q)
		return COHORT_ERR__NOMEM;
	for (size_t i = 0; i < l->n; i++)
		q[i] = (cohort_offset_query){
			.topic = l->tp[i].topic, .partition = l->tp[i].partition, .spec = spec};
	/* in chunks, for the progress line of a reset of thousands of partitions */
	const char *what = spec == COHORT_OFFSET_SPEC_EARLIEST ? "log start"
			   : spec == COHORT_OFFSET_SPEC_LATEST ? "log end"
							       : "by time";
	cohort_err e = COHORT_OK;
	for (size_t at = 0; at < l->n; at += 1000) {
		size_t n = l->n - at < 1000 ? l->n - at : 1000;
		cli_progress(false, "reset-offsets: %s offsets of %zu of %zu partitions", what, at,
			     l->n);
		cohort_err ce = cohort_admin_list_offsets(ad, q + at, n, -1);
		e = e ? e : ce;
	}
	for (size_t i = 0; i < l->n; i++)
		out[i] = q[i].offset;
	free(q);
	return e;
}

static int
run_reset(cli_args *a)
{
	const char *mode = NULL;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (cli_opt_has(a, modes[i])) {
			if (mode)
				return cli_fail(CLI_EUSAGE,
						"reset-offsets: --%s and --%s cannot go together",
						mode, modes[i]);
			mode = modes[i];
		}
	if (!mode)
		return cli_fail(CLI_EUSAGE, "reset-offsets: name one of --to-earliest, "
					    "--to-latest, --to-offset, --shift-by, --to-datetime, "
					    "--by-duration, --to-current, --from-file");
	bool from_file = strcmp(mode, "from-file") == 0;
	bool all = cli_opt_has(a, "all-topics");
	int nt;
	cli_opt_all(a, "topic", &nt);
	if (!from_file && all == (nt > 0))
		return cli_fail(CLI_EUSAGE,
				"reset-offsets: give --topic T[:P,...] or --all-topics");
	int64_t arg = 0;
	int rc = CLI_OK;
	if (strcmp(mode, "to-offset") == 0)
		rc = cli_opt_int(a, "to-offset", 0, INT64_MAX, 0, &arg);
	else if (strcmp(mode, "shift-by") == 0)
		rc = cli_opt_int(a, "shift-by", INT64_MIN / 2, INT64_MAX / 2, 0, &arg);
	else if (strcmp(mode, "to-datetime") == 0 &&
		 (arg = cli_parse_datetime(cli_opt_get(a, "to-datetime"))) < 0)
		rc = cli_fail(CLI_EUSAGE,
			      "--to-datetime: expected YYYY-MM-DDTHH:MM:SS[.sss], got '%s'",
			      cli_opt_get(a, "to-datetime"));
	else if (strcmp(mode, "by-duration") == 0) {
		int64_t d = cli_parse_duration(cli_opt_get(a, "by-duration"));
		if (d < 0)
			rc = cli_fail(CLI_EUSAGE, "--by-duration: expected PnDTnHnMnS, got '%s'",
				      cli_opt_get(a, "by-duration"));
		arg = (int64_t)time(NULL) * 1000 - d;
	}
	if (rc)
		return rc;
	const char *group = a->pos[0];
	cohort_admin *ad = a->admin;
	tp_list l = {0};
	int64_t *target = NULL, *lo = NULL, *hi = NULL;
	cohort_group_descriptions *d = NULL;
	const cohort_group_description *g;
	cohort_group_offsets_list *committed = NULL;
	rc = describe_one(ad, group, "reset-offsets", &d, &g);
	if (!rc && strcmp(g->state, "Empty") != 0 && strcmp(g->state, "Dead") != 0)
		rc = cli_fail(CLI_EREFUSED,
			      "reset-offsets: Assignments can only be reset if the group '%s' is "
			      "inactive, but the current state is %s.",
			      group, g->state);
	cohort_group_offsets_spec spec = {group, NULL, 0};
	if (!rc) {
		cohort_err e = cohort_admin_list_group_offsets(ad, &spec, 1, 0, -1, &committed);
		if (e)
			rc = cli_fail(cli_status(e), "reset-offsets: group '%s': %s", group,
				      cohort_err_str(e));
	}
	const cohort_group_offsets *go = committed ? &committed->groups[0] : NULL;
	if (!rc && from_file)
		rc = read_csv(cli_opt_get(a, "from-file"), &l, &target);
	else if (!rc && all)
		for (size_t i = 0; i < go->offsets_n; i++)
			tp_add(&l, go->offsets[i].topic, go->offsets[i].partition);
	else if (!rc)
		rc = parse_topics(a, ad, &l);
	if (!rc && !l.n)
		rc = cli_fail(CLI_ENOTFOUND, "reset-offsets: no partitions to reset");
	if (!rc) /* at once, rather than ListOffsets retrying them until the timeout */
		rc = cli_check_partitions(ad, "reset-offsets", l.tp, l.n);
	if (!rc) {
		if (!target)
			target = calloc(l.n, sizeof(int64_t));
		lo = calloc(l.n, sizeof(int64_t));
		hi = calloc(l.n, sizeof(int64_t));
		cohort_err e = !target || !lo || !hi
				       ? COHORT_ERR__NOMEM
				       : offsets_by(ad, &l, COHORT_OFFSET_SPEC_EARLIEST, lo);
		if (!e)
			e = offsets_by(ad, &l, COHORT_OFFSET_SPEC_LATEST, hi);
		if (!e && (strcmp(mode, "to-datetime") == 0 || strcmp(mode, "by-duration") == 0))
			e = offsets_by(ad, &l, arg, target);
		if (e)
			rc = cli_fail(cli_status(e), "reset-offsets: %s", cohort_err_str(e));
	}
	for (size_t i = 0; !rc && i < l.n; i++) {
		int64_t cur = -1;
		for (size_t k = 0; go && k < go->offsets_n; k++)
			if (go->offsets[k].partition == l.tp[i].partition &&
			    strcmp(go->offsets[k].topic, l.tp[i].topic) == 0)
				cur = go->offsets[k].offset;
		int64_t t;
		if (strcmp(mode, "to-earliest") == 0)
			t = lo[i];
		else if (strcmp(mode, "to-latest") == 0)
			t = hi[i];
		else if (strcmp(mode, "to-offset") == 0)
			t = arg;
		else if (strcmp(mode, "shift-by") == 0)
			t = (cur >= 0 ? cur : hi[i]) + arg;
		else if (strcmp(mode, "to-current") == 0)
			t = cur >= 0 ? cur : hi[i];
		else if (from_file)
			t = target[i];
		else /* by time: no record at or after it -> the log end */
			t = target[i] >= 0 ? target[i] : hi[i];
		/* Kafka's tool keeps a target within [log start, log end] */
		target[i] = t < lo[i] ? lo[i] : t > hi[i] ? hi[i] : t;
	}
	bool execute = cli_opt_has(a, "execute");
	cohort_group_offset *go_new = rc ? NULL : calloc(l.n, sizeof(*go_new));
	if (!rc && !go_new)
		rc = cli_fail(CLI_EFAIL, "out of memory");
	for (size_t i = 0; !rc && i < l.n; i++)
		go_new[i] = (cohort_group_offset){l.tp[i].topic, l.tp[i].partition, target[i], -1,
						  NULL,          COHORT_OK};
	if (!rc && execute) {
		cli_progress(true, "reset-offsets: committing %zu offsets", l.n);
		cohort_err e = cohort_admin_alter_group_offsets(ad, group, go_new, l.n, -1);
		if (e == COHORT_ERR_UNKNOWN_MEMBER_ID)
			rc = cli_fail(CLI_EREFUSED,
				      "reset-offsets: the group '%s' got members while resetting: "
				      "nothing changed where the broker refused",
				      group);
		else if (e)
			rc = cli_fail(cli_status(e), "reset-offsets: %s", cohort_err_str(e));
	}
	cli_progress_end();
	if (!rc) {
		json_t *arr = a->json ? json_array() : NULL;
		static const char *const hdr[] = {"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"};
		cli_table *t = a->json || cli_opt_has(a, "export") ? NULL : cli_table_new(hdr, 4);
		for (size_t i = 0; i < l.n; i++) {
			char p[16], o[24];
			snprintf(p, sizeof(p), "%d", l.tp[i].partition);
			snprintf(o, sizeof(o), "%lld", (long long)target[i]);
			if (arr)
				json_array_append_new(arr,
						      json_pack("{s:s,s:s,s:i,s:I}", "group", group,
								"topic", l.tp[i].topic, "partition",
								l.tp[i].partition, "new_offset",
								(json_int_t)target[i]));
			else if (t)
				cli_table_add(t, (const char *const[]){group, l.tp[i].topic, p, o});
			else
				printf("%s,%d,%lld\n", l.tp[i].topic, l.tp[i].partition,
				       (long long)target[i]);
		}
		if (arr) {
			json_t *o = json_pack("{s:s,s:b,s:o}", "group", group, "executed", execute,
					      "partitions", arr);
			cli_json_print(o);
		} else if (t) {
			printf("\n");
			cli_table_print(t, stdout);
			if (!execute)
				printf("\nDry run: nothing changed (add --execute to apply).\n");
		}
		cli_table_free(t);
	}
	free(go_new);
	free(target);
	free(lo);
	free(hi);
	tp_list_free(&l);
	cohort_group_offsets_list_free(committed);
	cohort_group_descriptions_free(d);
	return rc;
}

/* ---- delete, delete-offsets, remove-members ---- */

static const cli_opt no_opts[] = {{NULL, NULL, NULL, false}};

static int
run_delete(cli_args *a)
{
	int rc = CLI_OK;
	cohort_admin *ad = a->admin;
	cohort_err errs[CLI_MAX_POS];
	cohort_admin_delete_groups(ad, a->pos, (size_t)a->npos, errs, -1);
	json_t *o = a->json ? json_object() : NULL;
	for (int i = 0; i < a->npos; i++) {
		if (o)
			json_object_set_new(o, a->pos[i], json_string(cohort_err_name(errs[i])));
		if (errs[i])
			rc = cli_fail(errs[i] == COHORT_ERR_GROUP_ID_NOT_FOUND ? CLI_ENOTFOUND
				      : errs[i] == COHORT_ERR_NON_EMPTY_GROUP  ? CLI_EREFUSED
									      : cli_status(errs[i]),
				      "groups delete: Group '%s' could not be deleted due to: %s",
				      a->pos[i], cohort_err_str(errs[i]));
		else if (!o)
			printf("Deletion of requested consumer groups ('%s') was successful.\n",
			       a->pos[i]);
	}
	if (o)
		cli_json_print(o);
	return rc;
}

static const cli_opt delete_offsets_opts[] = {
	{"topic", "T[:P,...]", "partitions whose committed offsets to delete", true},
	{NULL, NULL, NULL, false},
};

static int
run_delete_offsets(cli_args *a)
{
	int rc = CLI_OK, nt;
	cli_opt_all(a, "topic", &nt);
	if (!nt)
		return cli_fail(CLI_EUSAGE, "delete-offsets: give --topic T[:P,...]");
	cohort_admin *ad = a->admin;
	tp_list l = {0};
	rc = parse_topics(a, ad, &l);
	cohort_tp_offset *parts = rc ? NULL : calloc(l.n + 1, sizeof(*parts));
	if (!rc && parts) {
		for (size_t i = 0; i < l.n; i++)
			parts[i] =
				(cohort_tp_offset){l.tp[i].topic, l.tp[i].partition, -1, COHORT_OK};
		cohort_admin_delete_group_offsets(ad, a->pos[0], parts, l.n, -1);
		static const char *const hdr[] = {"TOPIC", "PARTITION", "STATUS"};
		cli_table *t = a->json ? NULL : cli_table_new(hdr, 3);
		json_t *arr = a->json ? json_array() : NULL;
		for (size_t i = 0; i < l.n; i++) {
			char p[16], st[300];
			snprintf(p, sizeof(p), "%d", parts[i].partition);
			snprintf(st, sizeof(st), "%s%s", parts[i].err ? "Error: " : "Successful",
				 parts[i].err ? cohort_err_str(parts[i].err) : "");
			if (parts[i].err && !rc)
				rc = cli_status(parts[i].err) == CLI_EFAIL
					     ? CLI_EREFUSED
					     : cli_status(parts[i].err);
			if (arr)
				json_array_append_new(
					arr, json_pack("{s:s,s:i,s:s}", "topic", parts[i].topic,
						       "partition", parts[i].partition, "status",
						       cohort_err_name(parts[i].err)));
			else
				cli_table_add(t, (const char *const[]){parts[i].topic, p, st});
		}
		if (arr) {
			cli_json_print(arr);
		} else {
			printf("\n");
			cli_table_print(t, stdout);
		}
		cli_table_free(t);
	} else if (!rc) {
		rc = cli_fail(CLI_EFAIL, "out of memory");
	}
	free(parts);
	tp_list_free(&l);
	return rc;
}

static const cli_opt remove_opts[] = {
	{"instance-id", "ID", "the group.instance.id of a static member to remove", true},
	{NULL, NULL, NULL, false},
};

static int
run_remove_members(cli_args *a)
{
	int rc = CLI_OK, n;
	const char *const *ids = cli_opt_all(a, "instance-id", &n);
	if (!n)
		return cli_fail(CLI_EUSAGE, "remove-members: give --instance-id ID");
	cohort_admin *ad = a->admin;
	cohort_err *errs = calloc((size_t)n, sizeof(*errs));
	cohort_err e =
		errs ? cohort_admin_remove_members(ad, a->pos[0], ids, (size_t)n, errs, NULL, -1)
		     : COHORT_ERR__NOMEM;
	json_t *o = a->json ? json_object() : NULL;
	for (int i = 0; errs && i < n; i++) {
		if (o)
			json_object_set_new(o, ids[i], json_string(cohort_err_name(errs[i])));
		if (errs[i])
			rc = cli_fail(errs[i] == COHORT_ERR_UNKNOWN_MEMBER_ID ? CLI_ENOTFOUND
									      : cli_status(errs[i]),
				      "remove-members: member '%s' of group '%s': %s", ids[i],
				      a->pos[0], cohort_err_str(errs[i]));
		else if (!o)
			printf("Removed member '%s' from group '%s'.\n", ids[i], a->pos[0]);
	}
	if (o)
		cli_json_print(o);
	if (!errs || (e && !rc))
		rc = cli_fail(cli_status(e), "remove-members: %s", cohort_err_str(e));
	free(errs);
	return rc;
}

const cli_command cli_groups_reset_cmd = {
	"groups reset-offsets",
	"GROUP",
	"compute (and with --execute apply) new committed offsets of an inactive group",
	reset_opts,
	1,
	1,
	run_reset,
	true};
const cli_command cli_groups_delete_cmd = {
	"groups delete", "GROUP...", "delete groups that have no members", no_opts, 1, CLI_MAX_POS,
	run_delete,      true};
const cli_command cli_groups_delete_offsets_cmd = {
	"groups delete-offsets", "GROUP", "delete a group's committed offsets of partitions",
	delete_offsets_opts,     1,       1,
	run_delete_offsets,      true};
const cli_command cli_groups_remove_members_cmd = {
	"groups remove-members",
	"GROUP",
	"remove static members by group.instance.id (KIP-345)",
	remove_opts,
	1,
	1,
	run_remove_members,
	true};
