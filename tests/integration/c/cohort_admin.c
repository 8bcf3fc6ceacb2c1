/*
 * cohort_admin.c: libcohort's admin client driven over stdin/stdout by
 * test_client_libcohort_admin.py, with the command words of
 * java/cohortit/AdminDriver.java so that one script runs on both: one
 * command a line, one JSON answer a line, {"ok":RESULT} or
 * {"error":NAME} (Kafka's error name, or libcohort's local "_NAME"); calls
 * with per-item results map each item to its value or {"error":NAME}.
 *
 *   it_cohort_admin BOOTSTRAP [key=value ...]
 * Commands:
 *   describeCluster
 *   listGroups [types=consumer,classic] [states=Stable,Empty]
 *   findCoordinators G ...
 *   describeGroups G ...        (DescribeGroups only)
 *   describeConsumerGroups G ...  (ConsumerGroupDescribe first, as Java's call)
 *   listConsumerGroupOffsets G [T:P ...] [requireStable]   (several groups: G1,G2)
 *   listOffsets [readCommitted] T:P=earliest|latest|max|TIMESTAMP ...
 *                              (readCommitted: libcohort's own word, isolation level 1)
 *   alterConsumerGroupOffsets G T:P=OFFSET[/METADATA] ...
 *   deleteConsumerGroups G ...
 *   deleteConsumerGroupOffsets G T:P ...
 *   removeMembersFromConsumerGroup G [INSTANCE_ID ...]   (none: every member)
 *   createTopicsEach [validateOnly] T:N:RF[/KEY=VALUE...] ...
 *   deleteTopics T ...   | createPartitions [validateOnly] T=N ...
 *   describeTopics T ... | listTopics [internal]
 *   describeConfigs topic:T|broker:ID ...
 *   timeout MS                 (the timeout of the calls that follow; -1 default)
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cohort/cohort.h"

static int timeout_ms = -1;

/* Prints s as a JSON string (NULL as null). */
static void
jstr(const char *s)
{
	if (!s) {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

static void
jerr(cohort_err err)
{
	printf("{\"error\":");
	jstr(cohort_err_name(err));
	printf("}");
}

/* Splits "a,b,c" into words (in place); returns the count. */
static size_t
split_list(char *s, const char **out, size_t max)
{
	size_t n = 0;
	for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ","))
		out[n++] = tok;
	return n;
}

static void
describe_cluster(cohort_admin *a)
{
	cohort_cluster *c = NULL;
	cohort_err err = cohort_admin_describe_cluster(a, timeout_ms, &c);
	if (err) {
		jerr(err);
		return;
	}
	printf("{\"ok\":{\"clusterId\":");
	jstr(c->cluster_id);
	printf(",\"controller\":%d,\"brokers\":[", c->controller_id);
	for (size_t i = 0; i < c->brokers_n; i++) {
		printf("%s{\"id\":%d,\"host\":", i ? "," : "", c->brokers[i].id);
		jstr(c->brokers[i].host);
		printf(",\"port\":%d,\"rack\":", c->brokers[i].port);
		jstr(c->brokers[i].rack);
		printf("}");
	}
	printf("]}}");
	cohort_cluster_free(c);
}

static void
list_groups(cohort_admin *a, char **w, int nw)
{
	const char *states[16], *types[16];
	size_t ns = 0, nt = 0;
	for (int i = 1; i < nw; i++) {
		if (strncmp(w[i], "states=", 7) == 0)
			ns = split_list(w[i] + 7, states, 16);
		else if (strncmp(w[i], "types=", 6) == 0)
			nt = split_list(w[i] + 6, types, 16);
	}
	cohort_group_list *l = NULL;
	cohort_err err = cohort_admin_list_groups(a, states, ns, types, nt, timeout_ms, &l);
	if (!l) {
		jerr(err);
		return;
	}
	if (err) {
		jerr(err);
		cohort_group_list_free(l);
		return;
	}
	printf("{\"ok\":{");
	for (size_t i = 0; i < l->groups_n; i++) {
		const cohort_group_listing *g = &l->groups[i];
		printf("%s", i ? "," : "");
		jstr(g->group_id);
		printf(":{\"type\":");
		jstr(g->type);
		printf(",\"protocol\":");
		jstr(g->protocol_type);
		printf(",\"state\":");
		jstr(g->state);
		printf(",\"simple\":%s}", g->protocol_type[0] ? "false" : "true");
	}
	printf("}}");
	cohort_group_list_free(l);
}

static void
find_coordinators(cohort_admin *a, char **w, int nw)
{
	cohort_coordinators *c = NULL;
	cohort_err err = cohort_admin_find_coordinators(a, (const char *const *)w + 1,
							(size_t)nw - 1, timeout_ms, &c);
	if (!c) {
		jerr(err);
		return;
	}
	printf("{\"ok\":{");
	for (size_t i = 0; i < c->groups_n; i++) {
		printf("%s", i ? "," : "");
		jstr(c->groups[i].group_id);
		printf(":");
		if (c->groups[i].err)
			jerr(c->groups[i].err);
		else
			printf("{\"id\":%d,\"port\":%d}", c->groups[i].node.id,
			       c->groups[i].node.port);
	}
	printf("}}");
	cohort_coordinators_free(c);
}

static void
describe_groups(cohort_admin *a, char **w, int nw, bool consumer)
{
	cohort_group_descriptions *d = NULL;
	cohort_err err =
		(consumer ? cohort_admin_describe_consumer_groups : cohort_admin_describe_groups)(
			a, (const char *const *)w + 1, (size_t)nw - 1, timeout_ms, &d);
	if (!d) {
		jerr(err);
		return;
	}
	printf("{\"ok\":{");
	for (size_t i = 0; i < d->groups_n; i++) {
		const cohort_group_description *g = &d->groups[i];
		printf("%s", i ? "," : "");
		jstr(g->group_id);
		printf(":");
		if (g->err) {
			jerr(g->err);
			continue;
		}
		printf("{\"state\":");
		jstr(g->state);
		printf(",\"protocolType\":");
		jstr(g->protocol_type);
		printf(",\"assignor\":");
		jstr(g->protocol);
		printf(",\"type\":");
		jstr(g->type);
		printf(",\"groupEpoch\":%d,\"assignmentEpoch\":%d", g->group_epoch,
		       g->assignment_epoch);
		printf(",\"coordinator\":%d,\"members\":[", g->coordinator.id);
		for (size_t j = 0; j < g->members_n; j++) {
			const cohort_member_description *m = &g->members[j];
			printf("%s{\"member\":", j ? "," : "");
			jstr(m->member_id);
			printf(",\"instance\":");
			jstr(m->group_instance_id);
			printf(",\"client\":");
			jstr(m->client_id);
			printf(",\"host\":");
			jstr(m->host);
			printf(",\"assignment\":[");
			for (size_t t = 0; t < m->assignment_n; t++) {
				printf("%s\"%s:%d\"", t ? "," : "", m->assignment[t].topic,
				       m->assignment[t].partition);
			}
			printf("],\"subscription\":[");
			for (size_t t = 0; t < m->subscription_n; t++) {
				printf("%s", t ? "," : "");
				jstr(m->subscription[t]);
			}
			printf("],\"decodeError\":");
			jstr(m->decode_err ? cohort_err_name(m->decode_err) : NULL);
			printf("}");
		}
		printf("]}");
	}
	printf("}}");
	cohort_group_descriptions_free(d);
}

/* "topic:partition" (the last colon) into tp; 0 on success. */
static int
parse_tp(char *s, const char **topic, int32_t *partition)
{
	char *colon = strrchr(s, ':');
	if (!colon || colon == s)
		return -1;
	*colon = '\0';
	*topic = s;
	*partition = atoi(colon + 1);
	return 0;
}

static void
jtp_key(const char *topic, int32_t partition)
{
	printf("\"%s:%d\":", topic, partition);
}

static void
list_group_offsets(cohort_admin *a, char **w, int nw)
{
	cohort_group_offsets_spec specs[16];
	const char *gids[16];
	size_t ng = 0;
	for (char *g = strtok(w[1], ","); g && ng < 16; g = strtok(NULL, ","))
		gids[ng++] = g;
	cohort_tp tps[256];
	size_t ntp = 0;
	int stable = 0;
	for (int i = 2; i < nw; i++) {
		if (strcmp(w[i], "requireStable") == 0)
			stable = 1;
		else if (ntp < 256 && parse_tp(w[i], &tps[ntp].topic, &tps[ntp].partition) == 0)
			ntp++;
	}
	for (size_t i = 0; i < ng; i++)
		specs[i] = (cohort_group_offsets_spec){gids[i], ntp ? tps : NULL, ntp};
	cohort_group_offsets_list *l = NULL;
	cohort_err err = cohort_admin_list_group_offsets(a, specs, ng, stable, timeout_ms, &l);
	if (!l) {
		jerr(err);
		return;
	}
	printf("{\"ok\":{");
	for (size_t g = 0; g < l->groups_n; g++) {
		const cohort_group_offsets *go = &l->groups[g];
		printf("%s", g ? "," : "");
		jstr(go->group_id);
		printf(":");
		if (go->err) {
			jerr(go->err);
			continue;
		}
		printf("{");
		for (size_t i = 0; i < go->offsets_n; i++) {
			const cohort_group_offset *o = &go->offsets[i];
			printf("%s", i ? "," : "");
			jtp_key(o->topic, o->partition);
			if (o->err) {
				jerr(o->err);
				continue;
			}
			if (o->offset < 0) {
				printf("null");
				continue;
			}
			printf("{\"offset\":%lld,\"metadata\":", (long long)o->offset);
			jstr(o->metadata);
			if (o->leader_epoch >= 0)
				printf(",\"leaderEpoch\":%d}", o->leader_epoch);
			else
				printf(",\"leaderEpoch\":null}");
		}
		printf("}");
	}
	printf("}}");
	cohort_group_offsets_list_free(l);
}

static void
list_offsets(cohort_admin *a, char **w, int nw)
{
	cohort_offset_query q[256];
	size_t n = 0;
	bool committed = nw > 1 && strcmp(w[1], "readCommitted") == 0;
	for (int i = committed ? 2 : 1; i < nw && n < 256; i++) {
		char *eq = strrchr(w[i], '=');
		if (!eq)
			continue;
		*eq = '\0';
		const char *s = eq + 1;
		memset(&q[n], 0, sizeof(q[n]));
		if (parse_tp(w[i], &q[n].topic, &q[n].partition))
			continue;
		q[n].spec = strcmp(s, "earliest") == 0 ? COHORT_OFFSET_SPEC_EARLIEST
			    : strcmp(s, "latest") == 0 ? COHORT_OFFSET_SPEC_LATEST
			    : strcmp(s, "max") == 0    ? COHORT_OFFSET_SPEC_MAX_TIMESTAMP
						       : atoll(s);
		n++;
	}
	cohort_err err = committed ? cohort_admin_list_offsets_isolation(a, q, n, timeout_ms,
									 COHORT_READ_COMMITTED)
				   : cohort_admin_list_offsets(a, q, n, timeout_ms);
	if (err < 0 && err != COHORT_ERR__TIMED_OUT) {
		jerr(err);
		return;
	}
	printf("{\"ok\":{");
	for (size_t i = 0; i < n; i++) {
		printf("%s", i ? "," : "");
		jtp_key(q[i].topic, q[i].partition);
		if (q[i].err)
			jerr(q[i].err);
		else
			printf("{\"offset\":%lld,\"timestamp\":%lld,\"leaderEpoch\":%d}",
			       (long long)q[i].offset, (long long)q[i].timestamp,
			       q[i].leader_epoch);
	}
	printf("}}");
}

static void
alter_offsets(cohort_admin *a, char **w, int nw)
{
	cohort_group_offset o[256];
	size_t n = 0;
	for (int i = 2; i < nw && n < 256; i++) {
		char *eq = strrchr(w[i], '=');
		if (!eq)
			continue;
		*eq = '\0';
		memset(&o[n], 0, sizeof(o[n]));
		char *slash = strchr(eq + 1, '/');
		if (slash)
			*slash = '\0';
		o[n].offset = atoll(eq + 1);
		o[n].metadata = slash ? slash + 1 : NULL;
		o[n].leader_epoch = -1;
		if (parse_tp(w[i], &o[n].topic, &o[n].partition) == 0)
			n++;
	}
	cohort_err err = cohort_admin_alter_group_offsets(a, w[1], o, n, timeout_ms);
	if (err < 0 && err != COHORT_ERR__TIMED_OUT) {
		jerr(err);
		return;
	}
	printf("{\"ok\":{");
	for (size_t i = 0; i < n; i++) {
		printf("%s", i ? "," : "");
		jtp_key(o[i].topic, o[i].partition);
		if (o[i].err)
			jerr(o[i].err);
		else
			printf("null");
	}
	printf("}}");
}

static void
delete_groups(cohort_admin *a, char **w, int nw)
{
	cohort_err errs[256];
	size_t n = (size_t)nw - 1;
	cohort_err err =
		cohort_admin_delete_groups(a, (const char *const *)w + 1, n, errs, timeout_ms);
	if (err < 0 && err != COHORT_ERR__TIMED_OUT) {
		jerr(err);
		return;
	}
	printf("{\"ok\":{");
	for (size_t i = 0; i < n; i++) {
		printf("%s", i ? "," : "");
		jstr(w[i + 1]);
		printf(":");
		if (errs[i])
			jerr(errs[i]);
		else
			printf("null");
	}
	printf("}}");
}

static void
delete_offsets(cohort_admin *a, char **w, int nw)
{
	cohort_tp_offset p[256];
	size_t n = 0;
	for (int i = 2; i < nw && n < 256; i++) {
		memset(&p[n], 0, sizeof(p[n]));
		if (parse_tp(w[i], &p[n].topic, &p[n].partition) == 0)
			n++;
	}
	cohort_err err = cohort_admin_delete_group_offsets(a, w[1], p, n, timeout_ms);
	printf("{\"ok\":{\"all\":");
	if (err)
		jerr(err);
	else
		printf("null");
	printf(",\"partitions\":{");
	for (size_t i = 0; i < n; i++) {
		printf("%s", i ? "," : "");
		jtp_key(p[i].topic, p[i].partition);
		if (p[i].err)
			jerr(p[i].err);
		else
			printf("null");
	}
	printf("}}}");
}

static void
remove_members(cohort_admin *a, char **w, int nw)
{
	cohort_err errs[256];
	size_t n = (size_t)nw - 2;
	cohort_err err = cohort_admin_remove_members(a, w[1], (const char *const *)w + 2, n,
						     n ? errs : NULL, NULL, timeout_ms);
	printf("{\"ok\":{\"all\":");
	if (err)
		jerr(err);
	else
		printf("null");
	printf(",\"members\":{");
	for (size_t i = 0; i < n; i++) {
		printf("%s", i ? "," : "");
		jstr(w[i + 2]);
		printf(":");
		if (errs[i])
			jerr(errs[i]);
		else
			printf("null");
	}
	printf("}}}");
}

/* Prints null, or {"error":NAME,"message":MSG} with the broker's message. */
static void
jresult(cohort_err err, const char *msg)
{
	if (!err) {
		printf("null");
		return;
	}
	printf("{\"error\":");
	jstr(cohort_err_name(err));
	printf(",\"message\":");
	jstr(msg);
	printf("}");
}

static void
create_topics(cohort_admin *a, char **w, int nw)
{
	int from = 1, validate = 0;
	if (nw > 1 && strcmp(w[1], "validateOnly") == 0)
		validate = 1, from = 2;
	cohort_new_topic t[64];
	cohort_config_kv kv[256];
	size_t n = 0, nkv = 0;
	for (int i = from; i < nw && n < 64; i++) {
		memset(&t[n], 0, sizeof(t[n]));
		char *save = NULL;
		char *spec = strtok_r(w[i], "/", &save);
		char *c1 = strchr(spec, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c1 = *c2 = '\0';
		t[n].name = spec;
		t[n].partitions = atoi(c1 + 1);
		t[n].replication_factor = (int16_t)atoi(c2 + 1);
		t[n].configs = kv + nkv;
		for (char *c = strtok_r(NULL, "/", &save); c && nkv < 256;
		     c = strtok_r(NULL, "/", &save)) {
			char *eq = strchr(c, '=');
			if (!eq)
				continue;
			*eq = '\0';
			kv[nkv++] = (cohort_config_kv){c, eq + 1};
			t[n].configs_n++;
		}
		n++;
	}
	cohort_err err = cohort_admin_create_topics(a, t, n, validate, timeout_ms);
	if (err < 0 && err != COHORT_ERR__TIMED_OUT) {
		jerr(err);
		return;
	}
	printf("{\"ok\":{");
	for (size_t i = 0; i < n; i++) {
		printf("%s", i ? "," : "");
		jstr(t[i].name);
		printf(":");
		jresult(t[i].err, t[i].errmsg);
	}
	printf("}}");
}

static void
delete_topics(cohort_admin *a, char **w, int nw)
{
	cohort_err errs[256];
	size_t n = (size_t)nw - 1;
	cohort_err err =
		cohort_admin_delete_topics(a, (const char *const *)w + 1, n, errs, timeout_ms);
	if (err < 0 && err != COHORT_ERR__TIMED_OUT) {
		jerr(err);
		return;
	}
	printf("{\"ok\":{");
	for (size_t i = 0; i < n; i++) {
		printf("%s", i ? "," : "");
		jstr(w[i + 1]);
		printf(":");
		jresult(errs[i], NULL);
	}
	printf("}}");
}

static void
create_partitions(cohort_admin *a, char **w, int nw)
{
	int from = 1, validate = 0;
	if (nw > 1 && strcmp(w[1], "validateOnly") == 0)
		validate = 1, from = 2;
	cohort_new_partitions p[64];
	size_t n = 0;
	for (int i = from; i < nw && n < 64; i++) {
		char *eq = strrchr(w[i], '=');
		if (!eq)
			continue;
		*eq = '\0';
		memset(&p[n], 0, sizeof(p[n]));
		p[n].topic = w[i];
		p[n].total = atoi(eq + 1);
		n++;
	}
	cohort_err err = cohort_admin_create_partitions(a, p, n, validate, timeout_ms);
	if (err < 0 && err != COHORT_ERR__TIMED_OUT) {
		jerr(err);
		return;
	}
	printf("{\"ok\":{");
	for (size_t i = 0; i < n; i++) {
		printf("%s", i ? "," : "");
		jstr(p[i].topic);
		printf(":");
		jresult(p[i].err, p[i].errmsg);
	}
	printf("}}");
}

static void
jids(const int32_t *ids, size_t n)
{
	printf("[");
	for (size_t i = 0; i < n; i++)
		printf("%s%d", i ? "," : "", ids[i]);
	printf("]");
}

/* A topic id as Java's Uuid.toString prints it (URL-safe base64, no padding). */
static void
juuid(const uint8_t *id)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	char out[24];
	size_t k = 0;
	for (int i = 0; i < 16; i += 3) {
		uint32_t v = (uint32_t)id[i] << 16;
		if (i + 1 < 16)
			v |= (uint32_t)id[i + 1] << 8;
		if (i + 2 < 16)
			v |= id[i + 2];
		out[k++] = b64[(v >> 18) & 63];
		out[k++] = b64[(v >> 12) & 63];
		if (i + 1 < 16)
			out[k++] = b64[(v >> 6) & 63];
		if (i + 2 < 16)
			out[k++] = b64[v & 63];
	}
	out[k] = '\0';
	jstr(out);
}

static void
describe_topics(cohort_admin *a, char **w, int nw, int list, int internal)
{
	cohort_topic_descriptions *d = NULL;
	cohort_err err = cohort_admin_describe_topics(a, (const char *const *)w + 1,
						      list ? 0 : (size_t)nw - 1, timeout_ms, &d);
	if (!d) {
		jerr(err);
		return;
	}
	printf("{\"ok\":%s", list ? "[" : "{");
	int first = 1;
	for (size_t i = 0; i < d->topics_n; i++) {
		const cohort_topic_description *t = &d->topics[i];
		if (list) {
			if (!t->err && (internal || !t->is_internal)) {
				printf("%s", first ? "" : ",");
				jstr(t->name);
				first = 0;
			}
			continue;
		}
		printf("%s", i ? "," : "");
		jstr(t->name);
		printf(":");
		if (t->err) {
			jresult(t->err, NULL);
			continue;
		}
		printf("{\"internal\":%s,\"topicId\":", t->is_internal ? "true" : "false");
		juuid(t->topic_id);
		printf(",\"partitions\":[");
		for (size_t j = 0; j < t->partitions_n; j++) {
			const cohort_partition_description *p = &t->partitions[j];
			printf("%s{\"partition\":%d,\"leader\":", j ? "," : "", p->partition);
			if (p->leader >= 0)
				printf("%d", p->leader);
			else
				printf("null");
			printf(",\"replicas\":");
			jids(p->replicas, p->replicas_n);
			printf(",\"isr\":");
			jids(p->isr, p->isr_n);
			printf("}");
		}
		printf("]}");
	}
	printf("%s}", list ? "]" : "}");
	cohort_topic_descriptions_free(d);
}

/* Kafka's ConfigSource and ConfigType names by id (ConfigEntry's enums). */
static const char *const sources[] = {"UNKNOWN",
				      "DYNAMIC_TOPIC_CONFIG",
				      "DYNAMIC_BROKER_CONFIG",
				      "DYNAMIC_DEFAULT_BROKER_CONFIG",
				      "STATIC_BROKER_CONFIG",
				      "DEFAULT_CONFIG",
				      "DYNAMIC_BROKER_LOGGER_CONFIG",
				      "CLIENT_METRICS_CONFIG",
				      "GROUP_CONFIG"};
static const char *const types[] = {"UNKNOWN", "BOOLEAN", "STRING", "INT",   "SHORT",
				    "LONG",    "DOUBLE",  "LIST",   "CLASS", "PASSWORD"};

static void
describe_configs(cohort_admin *a, char **w, int nw)
{
	cohort_config_resource res[64];
	size_t n = 0;
	for (int i = 1; i < nw && n < 64; i++) {
		char *colon = strchr(w[i], ':');
		if (!colon)
			continue;
		*colon = '\0';
		res[n].type =
			strcmp(w[i], "topic") == 0 ? COHORT_RESOURCE_TOPIC : COHORT_RESOURCE_BROKER;
		res[n].name = colon + 1;
		n++;
	}
	cohort_configs *c = NULL;
	cohort_err err = cohort_admin_describe_configs(a, res, n, timeout_ms, &c);
	if (!c) {
		jerr(err);
		return;
	}
	printf("{\"ok\":{");
	for (size_t i = 0; i < c->resources_n; i++) {
		const cohort_config_result *r = &c->resources[i];
		printf("%s\"%s:", i ? "," : "",
		       r->type == COHORT_RESOURCE_TOPIC ? "topic" : "broker");
		printf("%s\":", r->name);
		if (r->err) {
			jresult(r->err, r->errmsg);
			continue;
		}
		printf("{");
		for (size_t j = 0; j < r->entries_n; j++) {
			const cohort_config_entry *e = &r->entries[j];
			printf("%s", j ? "," : "");
			jstr(e->name);
			printf(":{\"value\":");
			jstr(e->value);
			printf(",\"source\":\"%s\",\"readOnly\":%s,\"sensitive\":%s,\"type\":\"%"
			       "s\",\"doc\":",
			       e->source >= 0 && e->source < 9 ? sources[e->source] : "UNKNOWN",
			       e->read_only ? "true" : "false", e->sensitive ? "true" : "false",
			       e->type >= 0 && e->type < 10 ? types[e->type] : "UNKNOWN");
			jstr(e->documentation);
			printf("}");
		}
		printf("}");
	}
	printf("}}");
	cohort_configs_free(c);
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s BOOTSTRAP [key=value ...]\n", argv[0]);
		return 2;
	}
	cohort_conf *conf = cohort_conf_new();
	char errstr[512];
	if (cohort_conf_set(conf, "bootstrap.servers", argv[1], errstr, sizeof(errstr))) {
		fprintf(stderr, "%s\n", errstr);
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		if (!eq) {
			fprintf(stderr, "not key=value: %s\n", argv[i]);
			return 2;
		}
		*eq = '\0';
		if (cohort_conf_set(conf, argv[i], eq + 1, errstr, sizeof(errstr))) {
			fprintf(stderr, "%s\n", errstr);
			return 2;
		}
	}
	cohort_admin *a = cohort_admin_new(conf, errstr, sizeof(errstr));
	cohort_conf_free(conf);
	if (!a) {
		fprintf(stderr, "cohort_admin_new: %s\n", errstr);
		return 1;
	}
	printf("{\"ev\":\"ready\"}\n");
	fflush(stdout);
	char line[65536];
	while (fgets(line, sizeof(line), stdin)) {
		char *w[1024];
		int nw = 0;
		for (char *tok = strtok(line, " \t\r\n"); tok && nw < 1024;
		     tok = strtok(NULL, " \t\r\n"))
			w[nw++] = tok;
		if (nw == 0)
			continue;
		if (strcmp(w[0], "quit") == 0)
			break;
		if (strcmp(w[0], "describeCluster") == 0)
			describe_cluster(a);
		else if (strcmp(w[0], "listGroups") == 0)
			list_groups(a, w, nw);
		else if (strcmp(w[0], "findCoordinators") == 0)
			find_coordinators(a, w, nw);
		else if (strcmp(w[0], "describeGroups") == 0)
			describe_groups(a, w, nw, false);
		else if (strcmp(w[0], "describeConsumerGroups") == 0)
			describe_groups(a, w, nw, true);
		else if (strcmp(w[0], "listConsumerGroupOffsets") == 0 && nw >= 2)
			list_group_offsets(a, w, nw);
		else if (strcmp(w[0], "listOffsets") == 0)
			list_offsets(a, w, nw);
		else if (strcmp(w[0], "alterConsumerGroupOffsets") == 0 && nw >= 2)
			alter_offsets(a, w, nw);
		else if (strcmp(w[0], "deleteConsumerGroups") == 0)
			delete_groups(a, w, nw);
		else if (strcmp(w[0], "deleteConsumerGroupOffsets") == 0 && nw >= 2)
			delete_offsets(a, w, nw);
		else if (strcmp(w[0], "removeMembersFromConsumerGroup") == 0 && nw >= 2)
			remove_members(a, w, nw);
		else if (strcmp(w[0], "createTopicsEach") == 0)
			create_topics(a, w, nw);
		else if (strcmp(w[0], "deleteTopics") == 0)
			delete_topics(a, w, nw);
		else if (strcmp(w[0], "createPartitions") == 0)
			create_partitions(a, w, nw);
		else if (strcmp(w[0], "describeTopics") == 0)
			describe_topics(a, w, nw, 0, 0);
		else if (strcmp(w[0], "listTopics") == 0)
			describe_topics(a, w, nw, 1, nw > 1 && strcmp(w[1], "internal") == 0);
		else if (strcmp(w[0], "describeConfigs") == 0)
			describe_configs(a, w, nw);
		else if (strcmp(w[0], "timeout") == 0 && nw == 2) {
			timeout_ms = atoi(w[1]);
			printf("{\"ok\":null}");
		} else
			printf("{\"error\":\"unknown command %s\"}", w[0]);
		printf("\n");
		fflush(stdout);
	}
	cohort_admin_free(a);
	return 0;
}
