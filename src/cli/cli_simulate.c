/*
 * cli_simulate.c: `cohort groups simulate GROUP`, the assignors' what-if
 * from cohortd's admin API (/v1/groups/G/simulate; README "Admin API and
 * metrics"): for a live classic consumer group, what range, roundrobin,
 * sticky and cooperative-sticky would give its members from their
 * subscriptions and owned partitions, with --add-member and
 * --remove-member applied; how balanced, how many partitions move, how many
 * rounds a cooperative change takes. The group is not touched. cohortd
 * only (Apache Kafka has no such API): exit 8 elsewhere.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const cli_opt simulate_opts[] = {
	{"strategy", "S",
	 "only assignor S: range, roundrobin, sticky, cooperative-sticky (default all)", true},
	{"add-member", "N", "N more members, subscribing to the group's topics", false},
	{"remove-member", "ID", "a member (member id or group.instance.id) leaving", true},
	{"admin-url", "URL",
	 "cohortd's admin API (default: the bootstrap host at the port of the broker's "
	 "admin.listeners, 9644)",
	 false},
	{NULL, NULL, NULL, false},
};

/* {"t": [0, 1], "u": [2]} as "t:0,1;u:2" (Kafka 4.4's tool), "-" for none. */
static void
parts_text(json_t *parts, char *out, size_t cap)
{
	size_t o = 0;
	const char *topic;
	json_t *list;
	out[0] = '\0';
	json_object_foreach(parts, topic, list)
	{
		size_t i;
		json_t *p;
		o += (size_t)snprintf(out + o, o < cap ? cap - o : 0, "%s%s:", o ? ";" : "", topic);
		json_array_foreach(list, i, p) o +=
			(size_t)snprintf(out + o, o < cap ? cap - o : 0, "%s%lld", i ? "," : "",
					 (long long)json_integer_value(p));
	}
	if (!out[0])
		snprintf(out, cap, "-");
}

static const char *
int_text(json_t *v, char *buf, size_t cap)
{
	snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
	return buf;
}

static int
print_simulation(json_t *j)
{
	json_t *strategies = json_object_get(j, "strategies");
	static const char *const hdr[] = {"STRATEGY",   "MEMBERS", "MIN",
					  "MAX",        "MOVED",   "NEW",
					  "UNASSIGNED", "ROUNDS",  "REVOKED-FIRST"};
	cli_table *t = cli_table_new(hdr, 9);
	size_t i;
	json_t *s;
	json_array_foreach(strategies, i, s)
	{
		json_t *bal = json_object_get(s, "balance");
		char m[16], mn[16], mx[16], mv[16], nw[16], un[16], r[16], rv[16];
		snprintf(m, sizeof(m), "%zu", json_array_size(json_object_get(s, "assignment")));
		cli_table_add(
			t, (const char *const[]){
				   json_string_value(json_object_get(s, "strategy")), m,
				   int_text(json_object_get(bal, "min"), mn, sizeof(mn)),
				   int_text(json_object_get(bal, "max"), mx, sizeof(mx)),
				   int_text(json_object_get(s, "moved"), mv, sizeof(mv)),
				   int_text(json_object_get(s, "newly_assigned"), nw, sizeof(nw)),
				   int_text(json_object_get(s, "unassigned"), un, sizeof(un)),
				   int_text(json_object_get(s, "rounds"), r, sizeof(r)),
				   int_text(json_object_get(s, "revoked_first_round"), rv,
					    sizeof(rv))});
	}
	json_t *chg = json_object_get(j, "change");
	printf("Group '%s' (%s, %s, generation %lld): %zu members, %lld added, %zu removed; "
	       "nothing is changed\n\n",
	       json_string_value(json_object_get(j, "group_id")),
	       json_string_value(json_object_get(j, "state")),
	       json_is_string(json_object_get(j, "protocol"))
		       ? json_string_value(json_object_get(j, "protocol"))
		       : "-",
	       (long long)json_integer_value(json_object_get(j, "generation")),
	       json_array_size(json_object_get(j, "members")),
	       (long long)json_integer_value(json_object_get(chg, "add_members")),
	       json_array_size(json_object_get(chg, "remove_members")));
	cli_table_print(t, stdout);
	cli_table_free(t);
	static const char *const ahdr[] = {"STRATEGY", "MEMBER", "#PARTITIONS", "NOW",
					   "ASSIGNMENT"};
	cli_table *a = cli_table_new(ahdr, 5);
	json_array_foreach(strategies, i, s)
	{
		size_t k;
		json_t *m;
		json_array_foreach(json_object_get(s, "assignment"), k, m)
		{
			const char *id = json_string_value(json_object_get(m, "member_id"));
			char n[16], asg[4096], now[4096] = "-";
			size_t x;
			json_t *cur;
			json_array_foreach(json_object_get(j, "members"), x, cur)
			{
				const char *cid =
					json_string_value(json_object_get(cur, "member_id"));
				if (id && cid && strcmp(id, cid) == 0)
					parts_text(json_object_get(cur, "partitions"), now,
						   sizeof(now));
			}
			parts_text(json_object_get(m, "partitions"), asg, sizeof(asg));
			cli_table_add(a,
				      (const char *const[]){
					      json_string_value(json_object_get(s, "strategy")), id,
					      int_text(json_object_get(m, "count"), n, sizeof(n)),
					      now, asg});
		}
	}
	printf("\n");
	cli_table_print(a, stdout);
	cli_table_free(a);
	return CLI_OK;
}

static int
run_simulate(cli_args *a)
{
	const char *group = a->pos[0];
	int64_t add;
	int rc = cli_opt_int(a, "add-member", 0, 10000, 0, &add);
	if (rc)
		return rc;
	int ns, nr;
	const char *const *strategies = cli_opt_all(a, "strategy", &ns);
	const char *const *removes = cli_opt_all(a, "remove-member", &nr);
	static const char *const known[] = {"range", "roundrobin", "sticky", "cooperative-sticky"};
	for (int i = 0; i < ns; i++) {
		bool ok = false;
		for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
			ok |= strcmp(strategies[i], known[k]) == 0;
		if (!ok)
			return cli_fail(CLI_EUSAGE,
					"--strategy: not one of range, roundrobin, sticky, "
					"cooperative-sticky: '%s'",
					strategies[i]);
	}
	size_t cap = 2048 + (size_t)(ns + nr) * 1024, o = 0;
	char *path = malloc(cap), esc[1024];
	if (!path)
		return cli_fail(CLI_EFAIL, "groups simulate: out of memory");
	cli_url_escape(group, esc, sizeof(esc));
	o += (size_t)snprintf(path + o, cap - o, "/v1/groups/%s/simulate?add_member=%lld", esc,
			      (long long)add);
	for (int i = 0; i < ns; i++)
		o += (size_t)snprintf(path + o, cap - o, "&strategy=%s", strategies[i]);
	for (int i = 0; i < nr; i++) {
		cli_url_escape(removes[i], esc, sizeof(esc));
		o += (size_t)snprintf(path + o, cap - o, "&remove_member=%s", esc);
	}
	json_t *j;
	long status;
	rc = cli_admin_get(a, "groups simulate", path, &j, &status);
	free(path);
	if (rc != CLI_OK)
		return rc;
	const char *err = json_string_value(json_object_get(j, "error"));
	if (status != 200) {
		rc = status == 404   ? CLI_ENOTFOUND
		     : status == 400 ? CLI_EUSAGE
		     : status == 409 ? CLI_EREFUSED
				     : CLI_EFAIL;
		if (status == 404)
			cli_fail(rc, "groups simulate: group %s does not exist", group);
		else
			cli_fail(rc, "groups simulate: %s", err ? err : "the admin API refused");
		json_decref(j);
		return rc;
	}
	if (!json_is_array(json_object_get(j, "strategies"))) {
		json_decref(j);
		return cli_fail(CLI_ENOTCOHORTD,
				"groups simulate: the admin API answered without a simulation: not "
				"cohortd's");
	}
	if (a->json) {
		cli_json_print(j);
		return CLI_OK;
	}
	rc = print_simulation(j);
	json_decref(j);
	return rc;
}

const cli_command cli_groups_simulate_cmd = {
	"groups simulate",
	"GROUP",
	"what each assignor would give a live consumer group (with members added or removed): "
	"balance, partitions moved, cooperative rounds; nothing is changed (cohortd only)",
	simulate_opts,
	1,
	1,
	run_simulate,
	true,
};
