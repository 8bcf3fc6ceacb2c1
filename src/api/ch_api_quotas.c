/*
 * ch_api_quotas.c: DescribeClientQuotas and AlterClientQuotas on the
 * broker's client quotas (quota/ch_quota.h), with Kafka's checks and
 * messages (ClientQuotasImage.describe, ClientQuotaControlManager), and the
 * throttling that Produce and Fetch ask for (ch_api_quota_throttle).
 *
 * Entities have a user part and a client-id part, or an ip part alone
 * (connection_creation_rate, enforced by the network layer through
 * ch_quotas_connection). An ip entity names an address literal: Kafka also
 * takes a host name it can resolve, cohortd does no DNS lookups on its
 * loop (README says so).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "api/ch_api.h"
#include "broker/ch_broker.h"
#include "common/ch_common.h"
#include "common/ch_log.h"
#include "proto/ch_acl.h"
#include "proto/generated/ch_errors.h"
#include "quota/ch_quota.h"
#include "quota/ch_quota_store.h"

/* ---- DescribeClientQuotas ------------------------------------------------ */

/* Reads the filter (Kafka's order of checks); 0, or an error with msg. */
static int16_t
read_filter(ch_req *req, const ch_DescribeClientQuotasRequest *rq, ch_quota_filter *f, char *msg,
	    size_t n)
{
	memset(f, 0, sizeof(*f));
	f->strict = rq->Strict;
	for (int32_t i = 0; i < CH_MAX(rq->Components_n, 0); i++) {
		const ch_DescribeClientQuotasRequest_ComponentData *c = &rq->Components[i];
		char *type = ch_req_strdup(req, c->EntityType);
		if (!type[0]) {
			snprintf(msg, n, "Invalid empty entity type.");
			return CH_KERR_INVALID_REQUEST;
		}
		int *slot = NULL;
		const char **name = NULL;
		if (strcmp(type, "user") == 0) {
			slot = &f->user;
			name = &f->user_name;
		} else if (strcmp(type, "client-id") == 0) {
			slot = &f->client;
			name = &f->client_name;
		} else if (strcmp(type, "ip") == 0) {
			slot = &f->ip;
			name = &f->ip_name;
		}
		if (slot && *slot) {
			snprintf(msg, n,
				 "Entity type %s cannot appear more than once in the filter.",
				 type);
			return CH_KERR_INVALID_REQUEST;
		}
		if (!slot) {
			snprintf(msg, n, "Unsupported entity type %s", type);
			return CH_KERR_UNSUPPORTED_VERSION;
		}
		int want;
		switch (c->MatchType) {
		case 0:
			if (c->Match.len < 0) {
				snprintf(msg, n,
					 "Request specified MATCH_TYPE_EXACT, but set match string "
					 "to "
					 "null.");
				return CH_KERR_INVALID_REQUEST;
			}
			want = 1;
			break;
		case 1:
		case 2:
			if (c->Match.len >= 0) {
				snprintf(msg, n,
					 "Request specified %s, but also specified a match string.",
					 c->MatchType == 1 ? "MATCH_TYPE_DEFAULT"
							   : "MATCH_TYPE_SPECIFIED");
				return CH_KERR_INVALID_REQUEST;
			}
			want = c->MatchType == 1 ? 2 : 3;
			break;
		default:
			snprintf(msg, n, "Unknown match type %d", c->MatchType);
			return CH_KERR_INVALID_REQUEST;
		}
		*slot = want;
		if (want == 1)
			*name = ch_req_strdup(req, c->Match);
	}
	if (f->ip && (f->user || f->client)) {
		snprintf(msg, n,
			 "Invalid entity filter component combination. IP filter component should "
			 "not be used with user or clientId filter component.");
		return CH_KERR_INVALID_REQUEST;
	}
	return 0;
}

void
ch_api_DescribeClientQuotas(ch_req *req)
{
	const ch_DescribeClientQuotasRequest *rq = req->body;
	ch_DescribeClientQuotasResponse resp;
	ch_DescribeClientQuotasResponse_init(&resp);
	ch_quota_filter f;
	char msg[300];
	/* KafkaApis: DESCRIBE_CONFIGS on the cluster, else the error alone */
	int16_t err = ch_api_cluster_allowed(req, CH_ACL_DESCRIBE_CONFIGS)
			      ? read_filter(req, rq, &f, msg, sizeof(msg))
			      : CH_KERR_CLUSTER_AUTHORIZATION_FAILED;
	if (err == CH_KERR_CLUSTER_AUTHORIZATION_FAILED)
		snprintf(msg, sizeof(msg), "%s", ch_kerr_message(err));
	if (err) {
		resp.ErrorCode = err;
		resp.ErrorMessage = ch_str_c(ch_req_strdup(req, ch_str_c(msg)));
		resp.Entries_n = -1;
		ch_api_send(req, &resp);
		return;
	}
	const ch_quotas *q = req->bk->quotas;
	size_t total = 0;
	while (q && ch_quotas_at(q, total))
		total++;
	typedef ch_DescribeClientQuotasResponse_EntryData entry;
	resp.Entries = CH_REQ_NEW_ARRAY(req, entry, total);
	resp.Entries_n = 0;
	for (size_t i = 0; i < total; i++) {
		const ch_quota_entry *e = ch_quotas_at(q, i);
		if (!ch_quota_matches(&e->e, &f))
			continue;
		entry *o = &resp.Entries[resp.Entries_n++];
		o->Entity = CH_REQ_NEW_ARRAY(req, ch_DescribeClientQuotasResponse_EntityData, 2);
		o->Entity_n = 0;
		if (e->e.user != CH_QP_ABSENT)
			o->Entity[o->Entity_n++] = (ch_DescribeClientQuotasResponse_EntityData){
				CH_STR_LIT("user"),
				e->e.user == CH_QP_NAME ? ch_str_c(e->e.user_name) : CH_STR_NULL};
		if (e->e.client != CH_QP_ABSENT)
			o->Entity[o->Entity_n++] = (ch_DescribeClientQuotasResponse_EntityData){
				CH_STR_LIT("client-id"), e->e.client == CH_QP_NAME
								 ? ch_str_c(e->e.client_name)
								 : CH_STR_NULL};
		if (e->e.ip != CH_QP_ABSENT)
			o->Entity[o->Entity_n++] = (ch_DescribeClientQuotasResponse_EntityData){
				CH_STR_LIT("ip"),
				e->e.ip == CH_QP_NAME ? ch_str_c(e->e.ip_name) : CH_STR_NULL};
		o->Values =
			CH_REQ_NEW_ARRAY(req, ch_DescribeClientQuotasResponse_ValueData, CH_QK_N);
		o->Values_n = 0;
		for (int k = 0; k < CH_QK_N; k++)
			if (e->set[k])
				o->Values[o->Values_n++] =
					(ch_DescribeClientQuotasResponse_ValueData){
						ch_str_c(ch_quota_key_name((ch_quota_key)k)),
						e->v[k]};
	}
	ch_api_send(req, &resp);
}

/* ---- AlterClientQuotas --------------------------------------------------- */

/* An entry's entity, checked as Kafka's validateEntity and
 * configKeysForEntityType do; 0, or an error with msg. */
static int16_t
read_entity(ch_req *req, const ch_AlterClientQuotasRequest_EntryData *en, ch_quota_entity *e,
	    char *msg, size_t n)
{
	memset(e, 0, sizeof(*e));
	if (en->Entity_n <= 0) {
		snprintf(msg, n, "Invalid empty client quota entity");
		return CH_KERR_INVALID_REQUEST;
	}
	for (int32_t i = 0; i < en->Entity_n; i++) {
		const ch_AlterClientQuotasRequest_EntityData *d = &en->Entity[i];
		char *type = ch_req_strdup(req, d->EntityType);
		ch_qpart *part = NULL;
		char **name = NULL;
		if (strcmp(type, "user") == 0) {
			part = &e->user;
			name = &e->user_name;
		} else if (strcmp(type, "client-id") == 0) {
			part = &e->client;
			name = &e->client_name;
		} else if (strcmp(type, "ip") == 0) {
			part = &e->ip;
			name = &e->ip_name;
		} else {
			snprintf(msg, n, "Unhandled client quota entity type: %s", type);
			return CH_KERR_INVALID_REQUEST;
		}
		if (*part != CH_QP_ABSENT) {
			snprintf(msg, n, "Invalid client quota entity, duplicate entity entry %s",
				 type);
			return CH_KERR_INVALID_REQUEST;
		}
		if (d->EntityName.len == 0) {
			snprintf(msg, n, "Empty %s not supported", type);
			return CH_KERR_INVALID_REQUEST;
		}
		*part = d->EntityName.len < 0 ? CH_QP_DEFAULT : CH_QP_NAME;
		if (*part == CH_QP_NAME)
			*name = ch_req_strdup(req, d->EntityName);
	}
	if (e->ip && (e->user || e->client)) {
		snprintf(msg, n,
			 "Invalid quota entity combination, IP entity shouldnot be combined with "
			 "User or ClientId");
		return CH_KERR_INVALID_REQUEST;
	}
	unsigned char addr[sizeof(struct in6_addr)];
	if (e->ip == CH_QP_NAME && inet_pton(AF_INET, e->ip_name, addr) != 1 &&
	    inet_pton(AF_INET6, e->ip_name, addr) != 1) {
		snprintf(msg, n, "%s is not a valid IP or resolvable host.", e->ip_name);
		return CH_KERR_INVALID_REQUEST;
	}
	return 0;
}

static bool
same_entity(const ch_AlterClientQuotasRequest_EntryData *a,
	    const ch_AlterClientQuotasRequest_EntryData *b)
{
	if (a->Entity_n != b->Entity_n)
		return false;
	for (int32_t i = 0; i < a->Entity_n; i++) {
		bool found = false;
		for (int32_t j = 0; j < b->Entity_n && !found; j++)
			found = ch_str_eq(a->Entity[i].EntityType, b->Entity[j].EntityType) &&
				ch_str_eq(a->Entity[i].EntityName, b->Entity[j].EntityName);
		if (!found)
			return false;
	}
	return true;
}

/* The checks of one entry (entity, then keys: duplicates, names, values);
 * 0, or an error with msg. */
static int16_t
check_entry(ch_req *req, const ch_AlterClientQuotasRequest *rq, int32_t idx, ch_quota_entity *e,
	    char *msg, size_t n)
{
	const ch_AlterClientQuotasRequest_EntryData *en = &rq->Entries[idx];
	for (int32_t j = 0; j < idx; j++)
		if (same_entity(&rq->Entries[j], en)) {
			snprintf(msg, n, "Ignoring duplicate entity");
			return CH_KERR_INVALID_REQUEST;
		}
	for (int32_t i = 0; i < CH_MAX(en->Ops_n, 0); i++)
		for (int32_t j = 0; j < i; j++)
			if (ch_str_eq(en->Ops[i].Key, en->Ops[j].Key)) {
				snprintf(
					msg, n,
					"Duplicate quota key %s not updating quota for this entity",
					ch_req_strdup(req, en->Ops[i].Key));
				return CH_KERR_INVALID_REQUEST;
			}
	int16_t err = read_entity(req, en, e, msg, n);
	if (err)
		return err;
	for (int32_t i = 0; i < CH_MAX(en->Ops_n, 0); i++) {
		ch_quota_key k;
		err = ch_quota_check_key(ch_req_strdup(req, en->Ops[i].Key), en->Ops[i].Value,
					 en->Ops[i].Remove, e->ip != CH_QP_ABSENT, &k, msg, n);
		if (err)
			return err;
	}
	return 0;
}

void
ch_api_AlterClientQuotas(ch_req *req)
{
	const ch_AlterClientQuotasRequest *rq = req->body;
	ch_broker *bk = req->bk;
	ch_AlterClientQuotasResponse resp;
	ch_AlterClientQuotasResponse_init(&resp);
	int32_t ne = CH_MAX(rq->Entries_n, 0);
	typedef ch_AlterClientQuotasResponse_EntryData out_entry;
	resp.Entries = CH_REQ_NEW_ARRAY(req, out_entry, ne);
	resp.Entries_n = ne;
	bool changed = false;
	/* KafkaApis: ALTER_CONFIGS on the cluster, else every entry refused */
	bool allowed = ch_api_cluster_allowed(req, CH_ACL_ALTER_CONFIGS);
	if (!bk->quotas) /* a broker without the shell's quotas (the api tests) */
		allowed = false;
	for (int32_t i = 0; i < ne; i++) {
		const ch_AlterClientQuotasRequest_EntryData *en = &rq->Entries[i];
		out_entry *o = &resp.Entries[i];
		o->Entity_n = CH_MAX(en->Entity_n, 0);
		o->Entity =
			CH_REQ_NEW_ARRAY(req, ch_AlterClientQuotasResponse_EntityData, o->Entity_n);
		for (int32_t j = 0; j < o->Entity_n; j++)
			o->Entity[j] = (ch_AlterClientQuotasResponse_EntityData){
				en->Entity[j].EntityType, en->Entity[j].EntityName};
		char msg[300];
		ch_quota_entity e;
		o->ErrorCode = allowed ? check_entry(req, rq, i, &e, msg, sizeof(msg))
				       : CH_KERR_CLUSTER_AUTHORIZATION_FAILED;
		if (!allowed)
			snprintf(msg, sizeof(msg), "%s", ch_kerr_message(o->ErrorCode));
		if (o->ErrorCode) {
			o->ErrorMessage = ch_str_c(ch_req_strdup(req, ch_str_c(msg)));
			continue;
		}
		if (rq->ValidateOnly)
			continue;
		for (int32_t k = 0; k < CH_MAX(en->Ops_n, 0); k++) {
			ch_quota_key key;
			(void)ch_quota_check_key(ch_req_strdup(req, en->Ops[k].Key),
						 en->Ops[k].Value, en->Ops[k].Remove,
						 e.ip != CH_QP_ABSENT, &key, msg, sizeof(msg));
			ch_quotas_put(bk->quotas, &e, key, en->Ops[k].Value, en->Ops[k].Remove);
			changed = true;
		}
	}
	if (changed) {
		char err[300];
		if (ch_quotas_save(bk->quotas, bk->cfg->log_dir, err, sizeof(err)) != 0) {
			/* In memory it applies now; on disk it did not: say so on every
			 * accepted entry (a restart would lose it). */
			CH_LOGE("api", "client quotas not stored: %s", err);
			for (int32_t i = 0; i < ne; i++)
				if (!resp.Entries[i].ErrorCode) {
					resp.Entries[i].ErrorCode = CH_KERR_KAFKA_STORAGE_ERROR;
					resp.Entries[i].ErrorMessage =
						ch_str_c(ch_req_strdup(req, ch_str_c(err)));
				}
		} else {
			CH_LOGI("api", "client quotas changed by %s", req->principal);
		}
	}
	ch_api_send(req, &resp);
}

/* ---- throttling ------------------------------------------------------------ */

/* The broker's quotas when any is set, and then the quota subject of the
 * request: the principal's name (Kafka's user entity: "alice" of
 * User:alice, ANONYMOUS without authentication) and the client id (""
 * when null). NULL when there are none: Produce and Fetch then pay for no
 * lookup and no copy. */
static ch_quotas *
subject(ch_req *req, const char **user, const char **client)
{
	ch_quotas *q = req->bk->quotas;
	if (!q || !ch_quotas_at(q, 0))
		return NULL;
	/* (no principal: the v0 answer to an unsupported ApiVersions) */
	const char *p = req->principal ? req->principal : "User:ANONYMOUS";
	*user = strncmp(p, "User:", 5) == 0 ? p + 5 : p;
	*client = ch_req_strdup(req, req->client_id.len >= 0 ? req->client_id : CH_STR_LIT(""));
	return q;
}

int32_t
ch_api_quota_record(ch_req *req, int kind, double value)
{
	const char *user, *client;
	ch_quotas *q = subject(req, &user, &client);
	if (!q)
		return 0;
	int64_t t = ch_quotas_record(q, (ch_quota_key)kind, user, client, value,
				     req->bk->now_ms(req->bk->shell));
	return (int32_t)CH_MIN(t, (int64_t)INT32_MAX);
}

void
ch_api_quota_unrecord(ch_req *req, int kind, double value)
{
	const char *user, *client;
	ch_quotas *q = subject(req, &user, &client);
	if (q)
		ch_quotas_unrecord(q, (ch_quota_key)kind, user, client, value,
				   req->bk->now_ms(req->bk->shell));
}

int64_t
ch_api_quota_window_max(ch_req *req, int kind)
{
	const char *user, *client;
	ch_quotas *q = subject(req, &user, &client);
	double m = q ? ch_quotas_window_max(q, (ch_quota_key)kind, user, client) : -1;
	return m < 0 || m >= 9.2e18 ? INT64_MAX : (int64_t)m;
}

int32_t
ch_api_quota_request_time(ch_req *req)
{
	/* The SASL exchange is the network layer's in Kafka, never counted. */
	if (req->key == CH_APIKEY_SASL_HANDSHAKE || req->key == CH_APIKEY_SASL_AUTHENTICATE)
		return 0;
	const char *user, *client;
	ch_quotas *q = subject(req, &user, &client);
	if (!q)
		return 0;
	uint64_t us =
		req->bk->handling == req ? ch_now_mono_us() - req->received_us : req->handler_us;
	/* Kafka's nanosToPercentage: a second of one thread is 100 (%) */
	int64_t t = ch_quotas_record(q, CH_QK_REQUEST_PERCENTAGE, user, client, (double)us * 1e-4,
				     req->bk->now_ms(req->bk->shell));
	return (int32_t)CH_MIN(t, (int64_t)CH_QUOTA_WINDOW_MS);
}

int16_t
ch_api_quota_mutation(ch_req *req, int32_t partitions, int16_t strict_since, int32_t *throttle)
{
	const char *user, *client;
	ch_quotas *q = subject(req, &user, &client);
	int64_t t = 0;
	bool ok = !q || ch_quotas_mutate(q, user, client, partitions, req->version >= strict_since,
					 req->bk->now_ms(req->bk->shell), &t);
	*throttle = CH_MAX(*throttle, (int32_t)CH_MIN(t, (int64_t)INT32_MAX));
	return ok ? 0 : CH_KERR_THROTTLING_QUOTA_EXCEEDED;
}

bool
ch_api_quota_mutation_applies(ch_req *req)
{
	const char *user, *client;
	ch_quotas *q = subject(req, &user, &client);
	return q && ch_quotas_apply(q, CH_QK_CONTROLLER_MUTATION_RATE, user, client);
}

void
ch_api_quota_throttle(ch_req *req, int32_t ms)
{
	if (ms > 0 && req->bk->throttle)
		req->bk->throttle(req->bk->shell, req->conn, ms);
}
