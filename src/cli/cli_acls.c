/*
 * cli_acls.c: `cohort acls list | add | remove`, the cluster's ACL
 * bindings, on libcohort's admin calls, with kafka-acls' options
 * (--topic, --group, --cluster, --transactional-id,
 * --resource-pattern-type, --allow-principal / --deny-principal,
 * --allow-host / --deny-host, --operation, --principal) and its text:
 *
 *   Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`:
 *   	(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)
 *
 * remove does not ask (kafka-acls asks unless --force): it removes and
 * prints what went, in the same form. Text only (cli_json.json lists acls
 * under no_json): --json is ignored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define RES_NAME(c) cohort_acl_name(COHORT_ACL_KIND_RESOURCE, (c))
#define PATTERN_NAME(c) cohort_acl_name(COHORT_ACL_KIND_PATTERN, (c))
#define OP_NAME(c) cohort_acl_name(COHORT_ACL_KIND_OPERATION, (c))
#define PERM_NAME(c) cohort_acl_name(COHORT_ACL_KIND_PERMISSION, (c))

static const cli_opt list_opts[] = {
	{"topic", "TOPIC", "only this topic's bindings", false},
	{"group", "GROUP", "only this group's bindings", false},
	{"cluster", NULL, "only the cluster's bindings", false},
	{"transactional-id", "ID", "only this transactional id's bindings", false},
	{"resource-pattern-type", "TYPE",
	 "literal (default with a resource), prefixed, any or match (every binding that applies "
	 "to the name)",
	 false},
	{"principal", "PRINCIPAL", "only this principal's bindings (User:alice)", true},
	{NULL, NULL, NULL, false},
};

static const cli_opt change_opts[] = {
	{"topic", "TOPIC", "a topic resource (repeatable)", true},
	{"group", "GROUP", "a group resource (repeatable)", true},
	{"cluster", NULL, "the cluster resource", false},
	{"transactional-id", "ID", "a transactional id resource (repeatable)", true},
	{"resource-pattern-type", "TYPE", "literal (default) or prefixed (remove: also any, match)",
	 false},
	{"allow-principal", "PRINCIPAL", "principal to allow (User:alice, User:*; repeatable)",
	 true},
	{"deny-principal", "PRINCIPAL", "principal to deny (repeatable)", true},
	{"allow-host", "HOST", "host the allowed principals may come from (default *)", true},
	{"deny-host", "HOST", "host the denied principals are denied from (default *)", true},
	{"operation", "OP",
	 "READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, "
	 "ALTER_CONFIGS, IDEMPOTENT_WRITE or ALL (default ALL; repeatable)",
	 true},
	{NULL, NULL, NULL, false},
};

/* Kafka's ResourcePattern(Filter).toString. */
static void
print_pattern(const cohort_acl *a, bool filter)
{
	printf("%s(resourceType=%s, name=%s, patternType=%s)",
	       filter ? "ResourcePatternFilter" : "ResourcePattern", RES_NAME(a->resource_type),
	       a->resource_name ? a->resource_name : "<any>", PATTERN_NAME(a->pattern_type));
}

/* kafka-acls' block (Kafka 4.4's AclCommand) for the bindings in[i] with
 * v[first]'s resource: "<head> `RESOURCE`:\n\t(entry)\n\t(entry)\n\n". */
static void
print_block(const char *head, const cohort_acl *v, const bool *in, size_t n, size_t first)
{
	printf("%s `", head);
	print_pattern(&v[first], false);
	printf("`:\n");
	bool sep = false;
	for (size_t i = first; i < n; i++) {
		if (!in[i])
			continue;
		printf("%s\t(principal=%s, host=%s, operation=%s, permissionType=%s)",
		       sep ? "\n" : "", v[i].principal, v[i].host, OP_NAME(v[i].operation),
		       PERM_NAME(v[i].permission));
		sep = true;
	}
	printf("\n\n");
}

static bool
same_resource(const cohort_acl *a, const cohort_acl *b)
{
	return a->resource_type == b->resource_type && a->pattern_type == b->pattern_type &&
	       strcmp(a->resource_name, b->resource_name) == 0;
}

/* Prints v[0..n) grouped by resource (in the order resources first appear),
 * only those whose principal is in principals[0..np) when np > 0. */
static void
print_grouped(const char *head, const cohort_acl *v, size_t n, const char *const *principals,
	      int np)
{
	bool *done = calloc(n + 1, sizeof(*done)), *in = calloc(n + 1, sizeof(*in));
	if (!done || !in) {
		free(done);
		free(in);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		bool want = np == 0;
		for (int k = 0; k < np && !want; k++)
			want = strcmp(v[i].principal, principals[k]) == 0;
		done[i] = !want;
	}
	for (size_t i = 0; i < n; i++) {
		if (done[i])
			continue;
		for (size_t j = i; j < n; j++) {
			in[j] = !done[j] && same_resource(&v[i], &v[j]);
			done[j] |= in[j];
		}
		print_block(head, v, in, n, i);
	}
	free(done);
	free(in);
}

/* The pattern type of --resource-pattern-type (dflt when absent), or -1
 * with the message printed when it is not one of `allowed` (a mask of
 * 1 << code). */
static int
pattern_opt(const cli_args *a, const char *cmd, int dflt, unsigned allowed)
{
	const char *s = cli_opt_get(a, "resource-pattern-type");
	if (!s)
		return dflt;
	int p = cohort_acl_parse(COHORT_ACL_KIND_PATTERN, s);
	if (p <= 0 || !(allowed & (1u << p))) {
		cli_fail(CLI_EUSAGE, "%s: --resource-pattern-type must be %s, not '%s'", cmd,
			 allowed & (1u << COHORT_ACL_PATTERN_ANY)
				 ? "literal, prefixed, any or match"
				 : "literal or prefixed",
			 s);
		return -1;
	}
	return p;
}

/* The resources the command names, as bindings with only the resource
 * set (filled into out, at most cap); the count, or -1 with the message
 * printed. */
static int
resources_of(const cli_args *a, const char *cmd, int pattern, cohort_acl *out, int cap)
{
	static const struct {
		const char *opt;
		int type;
	} kinds[] = {
		{"topic", COHORT_ACL_RESOURCE_TOPIC},
		{"group", COHORT_ACL_RESOURCE_GROUP},
		{"transactional-id", COHORT_ACL_RESOURCE_TRANSACTIONAL_ID},
	};
	int n = 0;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		int m = 0;
		const char *const *v = cli_opt_all(a, kinds[k].opt, &m);
		for (int i = 0; i < m && n < cap; i++)
			out[n++] = (cohort_acl){.resource_type = kinds[k].type,
						.resource_name = v[i],
						.pattern_type = pattern};
	}
	if (cli_opt_has(a, "cluster") && n < cap)
		out[n++] = (cohort_acl){.resource_type = COHORT_ACL_RESOURCE_CLUSTER,
					.resource_name = "kafka-cluster",
					.pattern_type = pattern};
	(void)cmd;
	return n;
}

static int
acl_fail(const char *cmd, cohort_err e, const char *msg)
{
	if (msg && strcmp(msg, cohort_err_str(e)) == 0)
		msg = NULL; /* the broker's text is the error's own */
	return cli_fail(cli_status(e), "%s: %s%s%s", cmd, cohort_err_str(e),
			msg && *msg ? ": " : "", msg && *msg ? msg : "");
}

/* The status of a create or delete: its first failed entry, told once (the
 * same refusal would repeat for each), or the call's error. */
static int
report(const char *cmd, cohort_err e, const cohort_acl_result *r, size_t n)
{
	for (size_t i = 0; e && r && i < n; i++)
		if (r[i].err)
			return acl_fail(cmd, r[i].err, r[i].errmsg);
	return e ? acl_fail(cmd, e, NULL) : CLI_OK;
}

#define MAX_RES 64
#define ALL_PATTERNS                                                                               \
	((1u << COHORT_ACL_PATTERN_LITERAL) | (1u << COHORT_ACL_PATTERN_PREFIXED) |                \
	 (1u << COHORT_ACL_PATTERN_ANY) | (1u << COHORT_ACL_PATTERN_MATCH))

static int
run_list(cli_args *a)
{
	int pat = pattern_opt(a, "acls list", COHORT_ACL_PATTERN_LITERAL, ALL_PATTERNS);
	if (pat < 0)
		return CLI_EUSAGE;
	cohort_acl res[MAX_RES];
	int nres = resources_of(a, "acls list", pat, res, MAX_RES);
	if (nres == 0) /* every binding */
		res[nres++] = (cohort_acl){.resource_type = COHORT_ACL_RESOURCE_ANY,
					   .pattern_type = COHORT_ACL_PATTERN_ANY};
	int np = 0;
	const char *const *principals = cli_opt_all(a, "principal", &np);
	int rc = CLI_OK;
	for (int r = 0; r < nres; r++) {
		cohort_acl f = res[r];
		f.operation = COHORT_ACL_OP_ANY;
		f.permission = COHORT_ACL_PERMISSION_ANY;
		cohort_acls *l = NULL;
		cohort_err e = cohort_admin_describe_acls(a->admin, &f, a->timeout_ms, &l);
		if (e)
			rc = acl_fail("acls list", e, l ? l->errmsg : NULL);
		else
			print_grouped("Current ACLs for resource", l->acls, l->acls_n, principals,
				      np);
		cohort_acls_free(l);
	}
	return rc;
}

/* The bindings add / remove mean: each resource x each allowed (denied)
 * principal x host x operation. *n gets the count; NULL with the message
 * printed on bad input. need_principal: add must name one. */
static cohort_acl *
bindings_of(const cli_args *a, const char *cmd, const cohort_acl *res, int nres,
	    bool need_principal, size_t *n)
{
	static const struct {
		const char *who, *host;
		int perm;
	} sides[] = {{"allow-principal", "allow-host", COHORT_ACL_PERMISSION_ALLOW},
		     {"deny-principal", "deny-host", COHORT_ACL_PERMISSION_DENY}};
	int nops = 0;
	const char *const *ops = cli_opt_all(a, "operation", &nops);
	int opv[16];
	int nopv = 0;
	for (int k = 0; k < nops && nopv < 16; k++) {
		int op = cohort_acl_parse(COHORT_ACL_KIND_OPERATION, ops[k]);
		if (op <= COHORT_ACL_OP_ANY) {
			cli_fail(CLI_EUSAGE, "%s: unknown --operation '%s'", cmd, ops[k]);
			return NULL;
		}
		opv[nopv++] = op;
	}
	if (nopv == 0)
		opv[nopv++] = COHORT_ACL_OP_ALL;
	size_t cap = 1, m = 0;
	int total_who = 0;
	for (size_t s = 0; s < 2; s++) {
		int nw = 0, nh = 0;
		cli_opt_all(a, sides[s].who, &nw);
		cli_opt_all(a, sides[s].host, &nh);
		total_who += nw;
		cap += (size_t)nres * (size_t)nw * (size_t)(nh ? nh : 1) * (size_t)nopv;
	}
	if (need_principal && total_who == 0) {
		cli_fail(CLI_EUSAGE, "%s: --allow-principal or --deny-principal is required", cmd);
		return NULL;
	}
	cohort_acl *v = calloc(cap, sizeof(*v));
	if (!v) {
		cli_fail(CLI_EFAIL, "%s: out of memory", cmd);
		return NULL;
	}
	for (int r = 0; r < nres; r++)
		for (size_t s = 0; s < 2; s++) {
			int nw = 0, nh = 0;
			const char *const *who = cli_opt_all(a, sides[s].who, &nw);
			const char *const *hosts = cli_opt_all(a, sides[s].host, &nh);
			static const char *const any_host[] = {"*"};
			if (nh == 0) {
				hosts = any_host;
				nh = 1;
			}
			for (int w = 0; w < nw; w++)
				for (int h = 0; h < nh; h++)
					for (int o = 0; o < nopv; o++) {
						cohort_acl *x = &v[m++];
						*x = res[r];
						x->principal = who[w];
						x->host = hosts[h];
						x->operation = opv[o];
						x->permission = sides[s].perm;
					}
		}
	*n = m;
	return v;
}

/* add / remove: the resources named (at least one) with the pattern type
 * of --resource-pattern-type (one of `allowed`); the count, or -1 with the
 * message printed. */
static int
named_resources(const cli_args *a, const char *cmd, unsigned allowed, cohort_acl *res)
{
	int pat = pattern_opt(a, cmd, COHORT_ACL_PATTERN_LITERAL, allowed);
	if (pat < 0)
		return -1;
	int nres = resources_of(a, cmd, pat, res, MAX_RES);
	if (nres == 0) {
		cli_fail(CLI_EUSAGE,
			 "%s: name a resource: --topic, --group, --cluster or --transactional-id",
			 cmd);
		return -1;
	}
	return nres;
}

static int
run_add(cli_args *a)
{
	cohort_acl res[MAX_RES];
	int nres = named_resources(
		a, "acls add",
		(1u << COHORT_ACL_PATTERN_LITERAL) | (1u << COHORT_ACL_PATTERN_PREFIXED), res);
	if (nres < 0)
		return CLI_EUSAGE;
	size_t n = 0;
	cohort_acl *v = bindings_of(a, "acls add", res, nres, true, &n);
	if (!v)
		return CLI_EUSAGE;
	print_grouped("Adding ACLs for resource", v, n, NULL, 0);
	cohort_acl_result *r = calloc(n, sizeof(*r));
	cohort_err e =
		r ? cohort_admin_create_acls(a->admin, v, n, r, a->timeout_ms) : COHORT_ERR__NOMEM;
	int rc = report("acls add", e, r, n);
	free(r);
	free(v);
	return rc;
}

static int
run_remove(cli_args *a)
{
	cohort_acl res[MAX_RES];
	int nres = named_resources(a, "acls remove", ALL_PATTERNS, res);
	if (nres < 0)
		return CLI_EUSAGE;
	size_t n = 0;
	cohort_acl *v = bindings_of(a, "acls remove", res, nres, false, &n);
	if (!v)
		return CLI_EUSAGE;
	if (n == 0) {
		/* No principal: every binding of each resource (kafka-acls' "all
		 * ACLs for resource filter"). */
		for (int r = 0; r < nres; r++) {
			v[n] = res[r];
			v[n].operation = COHORT_ACL_OP_ANY;
			v[n++].permission = COHORT_ACL_PERMISSION_ANY;
		}
	}
	cohort_acl_result *r = calloc(n, sizeof(*r));
	cohort_acls *gone = NULL;
	cohort_err e = r ? cohort_admin_delete_acls(a->admin, v, n, r, a->timeout_ms, &gone)
			 : COHORT_ERR__NOMEM;
	if (gone)
		print_grouped("Removed ACLs for resource", gone->acls, gone->acls_n, NULL, 0);
	int rc = report("acls remove", e, r, n);
	cohort_acls_free(gone);
	free(r);
	free(v);
	return rc;
}

const cli_command cli_acls_list_cmd = {
	"acls list", "",  "the ACL bindings (all, or those of a resource or principal)",
	list_opts,   0,   0,
	run_list,    true};
const cli_command cli_acls_add_cmd = {
	"acls add",  "",  "add ACL bindings (each resource x principal x host x operation)",
	change_opts, 0,   0,
	run_add,     true};
const cli_command cli_acls_remove_cmd = {
	"acls remove", "",  "remove ACL bindings (a resource's, or only the principals named)",
	change_opts,   0,   0,
	run_remove,    true};
