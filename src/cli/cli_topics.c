/*
 * cli_topics.c: `cohort topics list | describe | create | delete |
 * add-partitions`, on libcohort's admin calls. Output as kafka-topics
 * words it where that tool has the view (describe), one name a line for
 * list; --json for scripts.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const cli_opt no_opts[] = {{NULL, NULL, NULL, false}};

/* Joins n node ids as "1,2,3" into buf. */
static const char *
ids(const int32_t *v, size_t n, char *buf, size_t size)
{
	size_t o = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n && o < size; i++)
		o += (size_t)snprintf(buf + o, size - o, "%s%d", i ? "," : "", v[i]);
	return buf;
}

/* The status and a one-line message for a failed call on topic `what`. */
static int
topic_fail(const char *cmd, const char *topic, cohort_err e, const char *msg)
{
	return cli_fail(cli_status(e), "%s: topic '%s': %s%s%s", cmd, topic, cohort_err_str(e),
			msg && *msg ? ": " : "", msg && *msg ? msg : "");
}

static int
run_list(cli_args *a)
{
	cohort_admin *ad = a->admin;
	cohort_topic_descriptions *d = NULL;
	cohort_err e = cohort_admin_describe_topics(ad, NULL, 0, -1, &d);
	if (e && !d)
		return cli_fail(cli_status(e), "topics list: %s", cohort_err_str(e));
	json_t *arr = a->json ? json_array() : NULL;
	for (size_t i = 0; d && i < d->topics_n; i++) {
		const cohort_topic_description *t = &d->topics[i];
		if (arr)
			json_array_append_new(arr, json_pack("{s:s,s:i,s:b}", "name", t->name,
							     "partitions", (int)t->partitions_n,
							     "internal", t->is_internal));
		else
			printf("%s\n", t->name);
	}
	if (arr)
		cli_json_print(arr);
	cohort_topic_descriptions_free(d);
	return CLI_OK;
}

static int
run_describe(cli_args *a)
{
	int rc = CLI_OK;
	cohort_admin *ad = a->admin;
	cohort_topic_descriptions *d = NULL;
	cohort_err e = cohort_admin_describe_topics(ad, a->pos, (size_t)a->npos, -1, &d);
	if (!d)
		return cli_fail(cli_status(e), "topics describe: %s", cohort_err_str(e));
	rc = CLI_OK;
	json_t *arr = a->json ? json_array() : NULL;
	for (size_t i = 0; i < d->topics_n; i++) {
		const cohort_topic_description *t = &d->topics[i];
		if (t->err) {
			rc = topic_fail("topics describe", t->name, t->err, NULL);
			continue;
		}
		char id[40];
		for (int k = 0; k < 16; k++)
			snprintf(id + 2 * k, 3, "%02x", t->topic_id[k]);
		json_t *parts = arr ? json_array() : NULL;
		if (!arr)
			printf("Topic: %s\tTopicId: %s\tPartitionCount: %zu\n", t->name, id,
			       t->partitions_n);
		for (size_t p = 0; p < t->partitions_n; p++) {
			const cohort_partition_description *pd = &t->partitions[p];
			char r[256], s[256];
			ids(pd->replicas, pd->replicas_n, r, sizeof(r));
			ids(pd->isr, pd->isr_n, s, sizeof(s));
			if (parts)
				json_array_append_new(parts,
						      json_pack("{s:i,s:i,s:s,s:s}", "partition",
								pd->partition, "leader", pd->leader,
								"replicas", r, "isr", s));
			else
				printf("\tTopic: %s\tPartition: %d\tLeader: %d\tReplicas: %s\tIsr: "
				       "%s\n",
				       t->name, pd->partition, pd->leader, r, s);
		}
		if (arr)
			json_array_append_new(arr, json_pack("{s:s,s:s,s:o}", "name", t->name,
							     "topic_id", id, "partitions", parts));
	}
	if (arr)
		cli_json_print(arr);
	cohort_topic_descriptions_free(d);
	return rc;
}

static const cli_opt create_opts[] = {
	{"partitions", "N", "number of partitions (default: the broker's num.partitions)", false},
	{"replication-factor", "N", "replicas per partition (default: the broker's)", false},
	{"config", "KEY=VALUE", "a topic config", true},
	{"validate-only", NULL, "only check what the broker would say", false},
	{NULL, NULL, NULL, false},
};

static int
run_create(cli_args *a)
{
	int64_t parts, rf;
	int rc = cli_opt_int(a, "partitions", 1, INT32_MAX, -1, &parts);
	if (!rc)
		rc = cli_opt_int(a, "replication-factor", 1, INT16_MAX, -1, &rf);
	if (rc)
		return rc;
	int nc;
	const char *const *cfg = cli_opt_all(a, "config", &nc);
	cohort_config_kv *kv = calloc((size_t)nc + 1, sizeof(*kv));
	char **names = calloc((size_t)nc + 1, sizeof(char *));
	if (!kv || !names) {
		free(kv);
		free(names);
		return cli_fail(CLI_EFAIL, "out of memory");
	}
	for (int i = 0; i < nc && !rc; i++) {
		const char *eq = strchr(cfg[i], '=');
		if (!eq || eq == cfg[i]) {
			rc = cli_fail(CLI_EUSAGE, "--config: expected KEY=VALUE, got '%s'", cfg[i]);
			break;
		}
		names[i] = strndup(cfg[i], (size_t)(eq - cfg[i]));
		kv[i] = (cohort_config_kv){names[i], eq + 1};
	}
	cohort_admin *ad = rc ? NULL : a->admin;
	if (ad) {
		cohort_new_topic t = {.name = a->pos[0],
				      .partitions = (int32_t)parts,
				      .replication_factor = (int16_t)rf,
				      .configs = kv,
				      .configs_n = (size_t)nc};
		cohort_err e =
			cohort_admin_create_topics(ad, &t, 1, cli_opt_has(a, "validate-only"), -1);
		if (e)
			rc = topic_fail("topics create", t.name, e, t.errmsg);
		else if (a->json)
			cli_json_print(json_pack("{s:s,s:b}", "created", t.name, "validate_only",
						 cli_opt_has(a, "validate-only")));
		else
			printf("%s topic %s.\n",
			       cli_opt_has(a, "validate-only") ? "Validated" : "Created", t.name);
	}
	for (int i = 0; i < nc; i++)
		free(names[i]);
	free(names);
	free(kv);
	return rc;
}

static int
run_delete(cli_args *a)
{
	int rc = CLI_OK;
	cohort_admin *ad = a->admin;
	cohort_err errs[CLI_MAX_POS];
	cohort_admin_delete_topics(ad, a->pos, (size_t)a->npos, errs, -1);
	rc = CLI_OK;
	for (int i = 0; i < a->npos; i++) {
		if (errs[i])
			rc = topic_fail("topics delete", a->pos[i], errs[i], NULL);
		else if (!a->json)
			printf("Deleted topic %s.\n", a->pos[i]);
	}
	if (a->json) {
		json_t *o = json_object();
		for (int i = 0; i < a->npos; i++)
			json_object_set_new(o, a->pos[i], json_string(cohort_err_name(errs[i])));
		cli_json_print(o);
	}
	return rc;
}

static int
run_add_partitions(cli_args *a)
{
	char *end;
	long total = strtol(a->pos[1], &end, 10);
	if (end == a->pos[1] || *end || total < 1 || total > INT32_MAX)
		return cli_fail(CLI_EUSAGE,
				"topics add-partitions: expected the new partition count, got '%s'",
				a->pos[1]);
	cohort_admin *ad = a->admin;
	cohort_new_partitions p = {.topic = a->pos[0], .total = (int32_t)total};
	cohort_err e = cohort_admin_create_partitions(ad, &p, 1, 0, -1);
	if (e)
		return topic_fail("topics add-partitions", p.topic, e, p.errmsg);
	if (a->json)
		cli_json_print(json_pack("{s:s,s:i}", "topic", p.topic, "partitions", p.total));
	else
		printf("Topic %s now has %d partitions.\n", p.topic, p.total);
	return CLI_OK;
}

const cli_command cli_topics_list_cmd = {
	"topics list", "", "list the cluster's topics", no_opts, 0, 0, run_list, true};
const cli_command cli_topics_describe_cmd = {
	"topics describe", "TOPIC...", "partitions, leaders, replicas and in-sync replicas",
	no_opts,           1,          CLI_MAX_POS,
	run_describe,      true};
const cli_command cli_topics_create_cmd = {
	"topics create", "TOPIC", "create a topic", create_opts, 1, 1, run_create, true};
const cli_command cli_topics_delete_cmd = {
	"topics delete", "TOPIC...", "delete topics", no_opts, 1, CLI_MAX_POS, run_delete, true};
const cli_command cli_topics_add_partitions_cmd = {
	"topics add-partitions", "TOPIC N", "grow a topic to N partitions", no_opts, 2, 2,
	run_add_partitions,      true};
