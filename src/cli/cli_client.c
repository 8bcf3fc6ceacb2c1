/*
 * cli_client.c: the client configuration every command starts from —
 * bootstrap.servers from --bootstrap-server, then the keys of
 * --command-config (a Java properties file, read as Kafka's tools read it),
 * then what the command sets itself.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/ch_common.h"
#include "common/ch_props.h"

int
cli_conf_set(cohort_conf *conf, const char *key, const char *value, const char *origin)
{
	char why[512];
	if (cohort_conf_set(conf, key, value, why, sizeof(why)) == COHORT_OK)
		return CLI_OK;
	return cli_fail(CLI_EUSAGE, "%s: %s", origin, why);
}

/* ch_props_fn: one key of --command-config onto the configuration. */
static int
set_from_file(void *ud, const char *key, const char *value, const char *where, char *err,
	      size_t errlen)
{
	char why[512];
	if (cohort_conf_set(ud, key, value, why, sizeof(why)) == COHORT_OK)
		return CH_OK;
	snprintf(err, errlen, "%s: %s", where, why);
	return CH_ERR;
}

cohort_conf *
cli_conf(const cli_args *a, int *status)
{
	cohort_conf *conf = cohort_conf_new();
	if (!conf) {
		*status = cli_fail(CLI_EFAIL, "out of memory");
		return NULL;
	}
	if ((*status = cli_conf_set(conf, "bootstrap.servers", a->bootstrap,
				    "--bootstrap-server")) != CLI_OK) {
		cohort_conf_free(conf);
		return NULL;
	}
	if (a->command_config) {
		char err[1024];
		if (ch_props_load_file(a->command_config, set_from_file, conf, err, sizeof(err)) !=
		    CH_OK) {
			*status = cli_fail(CLI_EUSAGE, "--command-config %s", err);
			cohort_conf_free(conf);
			return NULL;
		}
	}
	return conf;
}

cohort_admin *
cli_admin(const cli_args *a, int *status)
{
	cohort_conf *conf = cli_conf(a, status);
	if (!conf)
		return NULL;
	char v[32];
	snprintf(v, sizeof(v), "%d", a->timeout_ms);
	if ((*status = cli_conf_set(conf, "default.api.timeout.ms", v, "--timeout-ms")) != CLI_OK) {
		cohort_conf_free(conf);
		return NULL;
	}
	char err[512];
	cohort_admin *ad = cohort_admin_new(conf, err, sizeof(err));
	cohort_conf_free(conf);
	if (!ad)
		*status = cli_fail(CLI_EUSAGE, "%s", err);
	return ad;
}

void
cli_json_print(json_t *v)
{
	char *s = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	if (s)
		printf("%s\n", s);
	free(s);
	json_decref(v);
}

int
cli_conf_properties(const cli_args *a, cohort_conf *conf)
{
	int n, rc = CLI_OK;
	const char *const *props = cli_opt_all(a, "property", &n);
	for (int i = 0; i < n && !rc; i++) {
		const char *eq = strchr(props[i], '=');
		if (!eq || eq == props[i])
			return cli_fail(CLI_EUSAGE, "--property: expected KEY=VALUE, got '%s'",
					props[i]);
		char key[256];
		snprintf(key, sizeof(key), "%.*s", (int)(eq - props[i]), props[i]);
		rc = cli_conf_set(conf, key, eq + 1, "--property");
	}
	return rc;
}

int
cli_topic_partitions(cohort_admin *ad, const char *cmd, const char *topic, int32_t *count)
{
	cohort_topic_descriptions *d = NULL;
	const char *one[1] = {topic};
	cohort_err e = cohort_admin_describe_topics(ad, one, 1, -1, &d);
	if (!e && d && d->topics_n)
		e = d->topics[0].err;
	*count = e || !d || !d->topics_n ? 0 : (int32_t)d->topics[0].partitions_n;
	cohort_topic_descriptions_free(d);
	if (e == COHORT_ERR_UNKNOWN_TOPIC_OR_PARTITION)
		return cli_fail(CLI_ENOTFOUND, "%s: topic '%s' does not exist", cmd, topic);
	if (e)
		return cli_fail(cli_status(e), "%s: topic '%s': %s", cmd, topic, cohort_err_str(e));
	return CLI_OK;
}

int
cli_check_partitions(cohort_admin *ad, const char *cmd, const cohort_tp *tps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		bool seen = false; /* each topic asked once */
		for (size_t k = 0; k < i && !seen; k++)
			seen = strcmp(tps[k].topic, tps[i].topic) == 0;
		if (seen)
			continue;
		int32_t count;
		int rc = cli_topic_partitions(ad, cmd, tps[i].topic, &count);
		for (size_t k = i; !rc && k < n; k++)
			if (strcmp(tps[k].topic, tps[i].topic) == 0 && tps[k].partition >= count)
				rc = cli_fail(CLI_ENOTFOUND,
					      "%s: topic '%s' has no partition %d (it has %d)", cmd,
					      tps[i].topic, tps[k].partition, count);
		if (rc)
			return rc;
	}
	return CLI_OK;
}
