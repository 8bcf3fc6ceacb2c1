/*
 * ch_api_alter_configs.c: AlterConfigs v0-v2 (replace a resource's dynamic
 * configs) and IncrementalAlterConfigs v0-v1 (SET / DELETE / APPEND /
 * SUBTRACT), for topics (resource type 2) and brokers (4: name "" is the
 * cluster default, name = node id this broker).
 *
 * Kafka's checks, in its order (ConfigAdminManager.preprocess on the broker,
 * then ConfigurationControlManager and ControllerConfigurationValidator on
 * the controller):
 *   - a resource named twice: INVALID_REQUEST for each ("Each resource must
 *     appear at most once."); a key named twice in a resource, or a null
 *     value (other than for DELETE): INVALID_REQUEST;
 *   - broker: a name that is not "" or this node's id, INVALID_REQUEST; an
 *     operation code that is not 0-3, INVALID_REQUEST; APPEND/SUBTRACT on a
 *     key that is not a list, INVALID_CONFIG; then the new set as a whole:
 *     a key that cannot change while running, a bad value, INVALID_REQUEST
 *     (KAFKA-13609: Kafka keeps INVALID_REQUEST there);
 *   - topic: an empty name, INVALID_REQUEST; an invalid one,
 *     INVALID_TOPIC_EXCEPTION; APPEND/SUBTRACT on a key that is not a list,
 *     INVALID_CONFIG; the new set as a whole (unknown key, bad value,
 *     min.compaction.lag.ms > max.compaction.lag.ms), INVALID_CONFIG; then
 *     an unknown topic, UNKNOWN_TOPIC_OR_PARTITION.
 * APPEND and SUBTRACT start from the resource's current value, or the key's
 * default when it has none, as Kafka does. ValidateOnly checks all of it and
 * changes nothing.
 *
 * What passes is staged in one topic registry transaction (topic overrides
 * and broker config layers live there, durable together) and answered when
 * that is durable. The partition logs then take the new configs at once
 * (ch_log_manager_configs_changed): retention, compaction, segment and message
 * sizes apply without a restart.
 *
 * cohort differs from Kafka where it has nothing to change: BROKER_LOGGER
 * (log4j levels), GROUP and CLIENT_METRICS resources are INVALID_REQUEST, and
 * an unknown broker key is refused where Kafka keeps it for plugins.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/ch_api.h"
#include "proto/ch_acl.h"
#include "broker/ch_broker.h"
#include "broker/ch_log_manager.h"
#include "common/ch_log.h"
#include "proto/generated/ch_errors.h"

#define RESOURCE_TOPIC 2
#define RESOURCE_BROKER 4
#define RESOURCE_BROKER_LOGGER 8

enum {
	OP_SET = 0,
	OP_DELETE = 1,
	OP_APPEND = 2,
	OP_SUBTRACT = 3
};

/* One config change of a resource; legacy AlterConfigs entries are SETs. */
typedef struct alter_op {
	ch_str name, value;
	int8_t op;
} alter_op;

typedef struct alter_res {
	int8_t type;
	ch_str name;
	alter_op *ops;
	int32_t n;
} alter_res;

typedef struct alter_ctx {
	ch_req *req;
	bool incremental;
	alter_res *res;
	int32_t n;
	int16_t *err;
	const char **msg;
	bool *staged;
} alter_ctx;

/* A resource's new entries being built, in the request arena. */
typedef struct kvset {
	ch_topic_kv *kv;
	size_t n, cap;
} kvset;

static void
fail(alter_ctx *c, int32_t i, int16_t err, const char *msg)
{
	c->err[i] = err;
	c->msg[i] = ch_req_strdup(c->req, ch_str_c(msg));
}

/* s's entry for key, or NULL; the pointer is good until the next kv_set or kv_del on s. */
static ch_topic_kv *
kv_find(kvset *s, const char *key)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->kv[i].key, key) == 0)
			return &s->kv[i];
	return NULL;
}

/* Sets key to a copy of value (non-NULL: NULL would be stored as ""), appending it if new; the
 * copies and a grown array live in req's arena, so nothing is freed here. */
static void
kv_set(ch_req *req, kvset *s, const char *key, const char *value)
{
	ch_topic_kv *e = kv_find(s, key);
	if (!e) {
		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 8;
			ch_topic_kv *kv = CH_REQ_NEW_ARRAY(req, ch_topic_kv, cap);
			if (s->n)
				memcpy(kv, s->kv, s->n * sizeof(*kv));
			s->kv = kv;
			s->cap = cap;
		}
		e = &s->kv[s->n++];
		e->key = ch_req_strdup(req, ch_str_c(key));
	}
	e->value = ch_req_strdup(req, ch_str_c(value));
}

/* Removes key from s if there; the last entry takes its place, so the order of s changes. */
static void
kv_del(kvset *s, const char *key)
{
	ch_topic_kv *e = kv_find(s, key);
	if (e)
		*e = s->kv[--s->n];
}

/* Kafka's list edit: the items of cur (empty ones dropped), then for APPEND
 * each of arg's not already there, for SUBTRACT without arg's; joined by
 * ",". Result in the request arena. */
static char *
list_edit(ch_req *req, const char *cur, const char *arg, bool append)
{
	size_t cap = strlen(cur ? cur : "") + strlen(arg) + 2;
	char *out = ch_req_alloc(req, cap), *items = ch_req_strdup(req, ch_str_c(cur ? cur : ""));
	size_t o = 0;
	for (char *save = NULL, *t = strtok_r(items, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		bool drop = false;
		if (!append) {
			char *a = ch_req_strdup(req, ch_str_c(arg));
			for (char *s2 = NULL, *x = strtok_r(a, ",", &s2); x && !drop;
			     x = strtok_r(NULL, ",", &s2))
				drop = strcmp(x, t) == 0;
		}
		if (!drop)
			o += (size_t)snprintf(out + o, cap - o, "%s%s", o ? "," : "", t);
	}
	if (append) {
		char *a = ch_req_strdup(req, ch_str_c(arg));
		for (char *s2 = NULL, *x = strtok_r(a, ",", &s2); x; x = strtok_r(NULL, ",", &s2)) {
			/* already in out? compare whole items */
			bool have = false;
			char *copy = ch_req_strdup(req, ch_str_c(out));
			for (char *s3 = NULL, *y = strtok_r(copy, ",", &s3); y && !have;
			     y = strtok_r(NULL, ",", &s3))
				have = strcmp(x, y) == 0;
			if (!have)
				o += (size_t)snprintf(out + o, cap - o, "%s%s", o ? "," : "", x);
		}
	}
	return out;
}

/*
 * The resource's new set of entries: cur with the operations applied
 * (incremental), or the request's entries (legacy). For list keys
 * (is_list) APPEND/SUBTRACT start from the current value or dflt(key).
 * @returns 0 or a Kafka error with *msg.
 */
static int16_t
new_set(alter_ctx *c, const alter_res *r, const ch_topic_kv *cur, size_t ncur,
	bool (*is_list)(const char *), const char *(*dflt)(const char *), bool topic, kvset *out,
	const char **msg)
{
	ch_req *req = c->req;
	static char buf[400];
	memset(out, 0, sizeof(*out));
	if (c->incremental)
		for (size_t i = 0; i < ncur; i++)
			kv_set(req, out, cur[i].key, cur[i].value);
	for (int32_t k = 0; k < r->n; k++) {
		const alter_op *o = &r->ops[k];
		char *key = ch_req_strdup(req, o->name);
		char *val = ch_str_is_null(o->value) ? NULL : ch_req_strdup(req, o->value);
		switch (o->op) {
		case OP_SET:
			kv_set(req, out, key, val);
			break;
		case OP_DELETE:
			kv_del(out, key);
			break;
		case OP_APPEND:
		case OP_SUBTRACT: {
			const char *opname = o->op == OP_APPEND ? "APPEND" : "SUBTRACT";
			if (!is_list(key)) {
				if (topic) /* ConfigurationControlManager */
					snprintf(buf, sizeof(buf),
						 "Can't %s to key %s because its type "
						 "is not LIST.",
						 opname, key);
				else /* ConfigAdminManager.prepareIncrementalConfigs */
					snprintf(buf, sizeof(buf),
						 "Config value %s is not allowed for "
						 "config key: %s",
						 o->op == OP_APPEND ? "append" : "subtract", key);
				*msg = buf;
				return CH_KERR_INVALID_CONFIG;
			}
			ch_topic_kv *e = kv_find(out, key);
			kv_set(req, out, key,
			       list_edit(req, e ? e->value : dflt(key), val, o->op == OP_APPEND));
			break;
		}
		default:
			snprintf(buf, sizeof(buf), "Unknown operations type %d", o->op);
			*msg = buf;
			return CH_KERR_INVALID_REQUEST;
		}
	}
	return CH_KERR_NONE;
}

/* Checks that make a resource fail before any of its configs are looked at:
 * a resource named twice, a key named twice, null values. */
static bool
precheck(alter_ctx *c, int32_t i)
{
	const alter_res *r = &c->res[i];
	for (int32_t j = 0; j < c->n; j++)
		if (j != i && c->res[j].type == r->type && ch_str_eq(c->res[j].name, r->name)) {
			fail(c, i, CH_KERR_INVALID_REQUEST,
			     "Each resource must appear at most once.");
			return false;
		}
	for (int32_t k = 0; k < r->n; k++)
		for (int32_t m = 0; m < k; m++)
			if (ch_str_eq(r->ops[k].name, r->ops[m].name)) {
				fail(c, i, CH_KERR_INVALID_REQUEST,
				     "Error due to duplicate config keys");
				return false;
			}
	char nulls[512] = "";
	size_t o = 0;
	for (int32_t k = 0; k < r->n; k++)
		if (r->ops[k].op != OP_DELETE && ch_str_is_null(r->ops[k].value) &&
		    o < sizeof(nulls))
			o += (size_t)snprintf(nulls + o, sizeof(nulls) - o, "%s%.*s", o ? ", " : "",
					      CH_MAX(r->ops[k].name.len, 0), r->ops[k].name.p);
	if (o) {
		char msg[600];
		snprintf(msg, sizeof(msg), "Null value not supported for : %s", nulls);
		fail(c, i, CH_KERR_INVALID_REQUEST, msg);
		return false;
	}
	return true;
}

/* Stages broker resource i (name "": the cluster default layer, else this node's id) in tx, or
 * records its error with fail(); staged[i] only when the change is real (not validate_only). */
static void
alter_broker(alter_ctx *c, int32_t i, ch_topics_txn *tx, bool validate_only)
{
	ch_broker *bk = c->req->bk;
	const alter_res *r = &c->res[i];
	char msg[512];
	int layer = CH_CONFIG_LAYER_DEFAULT;
	if (r->name.len > 0) {
		char *name = ch_req_strdup(c->req, r->name), *end;
		long id = strtol(name, &end, 10);
		if (*end != '\0' || end == name) {
			snprintf(msg, sizeof(msg), "Node id must be an integer, but it is: %s",
				 name);
			fail(c, i, CH_KERR_INVALID_REQUEST, msg);
			return;
		}
		if (id != bk->node_id) {
			snprintf(msg, sizeof(msg),
				 "Unexpected broker id, expected %d, but received %s", bk->node_id,
				 name);
			fail(c, i, CH_KERR_INVALID_REQUEST, msg);
			return;
		}
		layer = CH_CONFIG_LAYER_BROKER;
	}
	const ch_topic_kv *cur;
	size_t ncur;
	ch_topics_broker_configs(bk->topics, layer, &cur, &ncur);
	kvset s;
	const char *why = NULL;
	int16_t err =
		new_set(c, r, cur, ncur, ch_config_is_list, ch_config_default, false, &s, &why);
	if (err) {
		fail(c, i, err, why);
		return;
	}
	err = ch_topics_set_broker_configs(tx, layer, s.kv, s.n, validate_only, msg, sizeof(msg));
	if (err) {
		fail(c, i, err, msg);
		return;
	}
	c->staged[i] = !validate_only;
}

/* Stages topic resource i's new override set in tx, checks in Kafka's order, or records the
 * error with fail(); staged[i] only when the change is real (not validate_only). */
static void
alter_topic(alter_ctx *c, int32_t i, ch_topics_txn *tx, bool validate_only)
{
	ch_broker *bk = c->req->bk;
	const alter_res *r = &c->res[i];
	char msg[512];
	if (r->name.len <= 0) {
		fail(c, i, CH_KERR_INVALID_REQUEST, "Default topic resources are not allowed.");
		return;
	}
	int16_t err = ch_topic_name_validate(r->name.p, (size_t)r->name.len, msg, sizeof(msg));
	if (err) {
		fail(c, i, err, msg);
		return;
	}
	const ch_topic *t = ch_topics_find(bk->topics, r->name.p, (size_t)r->name.len);
	kvset s;
	const char *why = NULL;
	err = new_set(c, r, t ? t->configs : NULL, t ? t->n_configs : 0, ch_topic_config_is_list,
		      ch_topic_config_default, true, &s, &why);
	if (err) {
		fail(c, i, err, why);
		return;
	}
	if (ch_topic_configs_validate(s.kv, s.n, msg, sizeof(msg)) != CH_OK) {
		fail(c, i, CH_KERR_INVALID_CONFIG, msg);
		return;
	}
	if (!t) {
		snprintf(msg, sizeof(msg), "The topic '%.*s' does not exist.", r->name.len,
			 r->name.p);
		fail(c, i, CH_KERR_UNKNOWN_TOPIC_OR_PARTITION, msg);
		return;
	}
	err = ch_topics_alter_configs(tx, r->name.p, (size_t)r->name.len, s.kv, s.n, validate_only,
				      msg, sizeof(msg));
	if (err) {
		fail(c, i, err, msg);
		return;
	}
	c->staged[i] = !validate_only;
}

/* Resource i's answer, into either response's fields. */
static void
result(const alter_ctx *c, int32_t i, int16_t *err, ch_str *msg, int8_t *type, ch_str *name)
{
	*err = c->err[i];
	*msg = ch_str_c(c->err[i] ? c->msg[i] : NULL);
	*type = c->res[i].type;
	*name = c->res[i].name;
}

/* ch_topics_commit's done for alter(): staged resources take err (0: durable), the logs take
 * the registry's configs, and the response of either API goes out, which frees req and c. */
static void
altered(void *ud, int16_t err, const char *msg)
{
	alter_ctx *c = ud;
	ch_broker *bk = c->req->bk;
	bool broker = false;
	for (int32_t i = 0; i < c->n; i++) {
		if (!c->staged[i])
			continue;
		const alter_res *r = &c->res[i];
		if (err)
			fail(c, i, err, msg);
		else
			CH_LOGI("api", "%s configs of %s '%.*s' changed for %s",
				c->incremental ? "incrementally altered" : "altered",
				r->type == RESOURCE_TOPIC ? "topic" : "broker", r->name.len,
				r->name.p, c->req->peer);
		/* The logs follow the registry (also when a failed write undid it). */
		if (r->type == RESOURCE_TOPIC && bk->logs)
			ch_log_manager_configs_changed(bk->logs, r->name.p, (size_t)r->name.len);
		broker |= r->type == RESOURCE_BROKER;
	}
	if (broker && bk->logs)
		ch_log_manager_configs_changed(bk->logs, NULL, 0);
	if (c->incremental) {
		ch_IncrementalAlterConfigsResponse resp;
		ch_IncrementalAlterConfigsResponse_init(&resp);
		resp.Responses = CH_REQ_NEW_ARRAY(
			c->req, ch_IncrementalAlterConfigsResponse_AlterConfigsResourceResponse,
			c->n);
		resp.Responses_n = c->n;
		for (int32_t i = 0; i < c->n; i++)
			result(c, i, &resp.Responses[i].ErrorCode, &resp.Responses[i].ErrorMessage,
			       &resp.Responses[i].ResourceType, &resp.Responses[i].ResourceName);
		ch_api_send(c->req, &resp);
	} else {
		ch_AlterConfigsResponse resp;
		ch_AlterConfigsResponse_init(&resp);
		resp.Responses = CH_REQ_NEW_ARRAY(
			c->req, ch_AlterConfigsResponse_AlterConfigsResourceResponse, c->n);
		resp.Responses_n = c->n;
		for (int32_t i = 0; i < c->n; i++)
			result(c, i, &resp.Responses[i].ErrorCode, &resp.Responses[i].ErrorMessage,
			       &resp.Responses[i].ResourceType, &resp.Responses[i].ResourceName);
		ch_api_send(c->req, &resp);
	}
}

/* ALTER_CONFIGS on the cluster (a broker, its loggers) or the topic, before
 * anything else is checked (ControllerApis.authorizeAlterResource): the
 * error, or 0. */
static int16_t
alter_denied(ch_req *req, const alter_res *r)
{
	if (r->type == RESOURCE_TOPIC)
		return ch_api_allowed_str(req, CH_ACL_ALTER_CONFIGS, CH_RES_TOPIC, r->name)
			       ? 0
			       : CH_KERR_TOPIC_AUTHORIZATION_FAILED;
	if (r->type == RESOURCE_BROKER || r->type == RESOURCE_BROKER_LOGGER)
		return ch_api_cluster_allowed(req, CH_ACL_ALTER_CONFIGS)
			       ? 0
			       : CH_KERR_CLUSTER_AUTHORIZATION_FAILED;
	return 0;
}

/* Both APIs once their resources are in one shape. */
static void
alter(ch_req *req, alter_ctx *c, bool validate_only)
{
	c->req = req;
	c->err = CH_REQ_NEW_ARRAY(req, int16_t, c->n);
	c->msg = CH_REQ_NEW_ARRAY(req, const char *, c->n);
	c->staged = CH_REQ_NEW_ARRAY(req, bool, c->n);
	ch_topics_txn *tx = ch_topics_begin(req->bk->topics);
	for (int32_t i = 0; i < c->n; i++) {
		int16_t denied = alter_denied(req, &c->res[i]);
		if (denied) {
			fail(c, i, denied, ch_kerr_message(denied));
			continue;
		}
		if (!precheck(c, i))
			continue;
		int8_t type = c->res[i].type;
		char msg[160];
		if (type == RESOURCE_BROKER) {
			alter_broker(c, i, tx, validate_only);
		} else if (type == RESOURCE_TOPIC) {
			alter_topic(c, i, tx, validate_only);
		} else if (type == RESOURCE_BROKER_LOGGER && c->incremental) {
			fail(c, i, CH_KERR_INVALID_REQUEST,
			     "cohortd has no per-logger levels (BROKER_LOGGER); its log level is "
			     "log.level, set at startup");
		} else {
			snprintf(msg, sizeof(msg), "Unknown resource type %d", type);
			fail(c, i, CH_KERR_INVALID_REQUEST, msg);
		}
	}
	ch_topics_commit(tx, altered, c);
}

/* The context of a request with n resources. */
static alter_ctx *
ctx_new(ch_req *req, int32_t n, bool incremental)
{
	alter_ctx *c = ch_req_alloc(req, sizeof(*c));
	c->incremental = incremental;
	c->n = n > 0 ? n : 0;
	c->res = CH_REQ_NEW_ARRAY(req, alter_res, c->n);
	return c;
}

/* Resource r with room for n operations. */
static alter_op *
res_init(ch_req *req, alter_res *r, int8_t type, ch_str name, int32_t n)
{
	r->type = type;
	r->name = name;
	r->n = n > 0 ? n : 0;
	r->ops = CH_REQ_NEW_ARRAY(req, alter_op, r->n);
	return r->ops;
}

void
ch_api_AlterConfigs(ch_req *req)
{
	const ch_AlterConfigsRequest *rq = req->body;
	alter_ctx *c = ctx_new(req, rq->Resources_n, false);
	for (int32_t i = 0; i < c->n; i++) {
		const ch_AlterConfigsRequest_AlterConfigsResource *q = &rq->Resources[i];
		alter_op *ops =
			res_init(req, &c->res[i], q->ResourceType, q->ResourceName, q->Configs_n);
		for (int32_t k = 0; k < c->res[i].n; k++)
			ops[k] = (alter_op){q->Configs[k].Name, q->Configs[k].Value, OP_SET};
	}
	alter(req, c, rq->ValidateOnly);
}

void
ch_api_IncrementalAlterConfigs(ch_req *req)
{
	const ch_IncrementalAlterConfigsRequest *rq = req->body;
	alter_ctx *c = ctx_new(req, rq->Resources_n, true);
	for (int32_t i = 0; i < c->n; i++) {
		const ch_IncrementalAlterConfigsRequest_AlterConfigsResource *q = &rq->Resources[i];
		alter_op *ops =
			res_init(req, &c->res[i], q->ResourceType, q->ResourceName, q->Configs_n);
		for (int32_t k = 0; k < c->res[i].n; k++)
			ops[k] = (alter_op){q->Configs[k].Name, q->Configs[k].Value,
					    q->Configs[k].ConfigOperation};
	}
	alter(req, c, rq->ValidateOnly);
}
