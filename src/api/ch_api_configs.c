/*
 * ch_api_configs.c: DescribeConfigs v0-v4 for the broker (resource type 4:
 * name = this node id, every broker config with its source and whether it
 * can change while running; name "", the cluster-wide dynamic defaults set
 * with AlterConfigs, as Kafka lists them) and for topics (resource type 2).
 * Changing them is ch_api_alter_configs.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/ch_api.h"
#include "proto/ch_acl.h"
#include "broker/ch_broker.h"
#include "common/ch_common.h"
#include "proto/generated/ch_errors.h"

#define RESOURCE_TOPIC 2
#define RESOURCE_BROKER 4

typedef ch_DescribeConfigsResponse_DescribeConfigsResourceResult cfg_res;
typedef ch_DescribeConfigsRequest_DescribeConfigsResource cfg_req;

/* Whether resource q asks for config name: all of them when ConfigurationKeys is null. */
static bool
wanted(const cfg_req *q, const char *name)
{
	if (q->ConfigurationKeys_n <= 0) /* null or empty: every key, as Kafka 4.4 answers */
		return true;
	for (int32_t i = 0; i < q->ConfigurationKeys_n; i++)
		if (ch_str_eq_c(q->ConfigurationKeys[i], name))
			return true;
	return false;
}

/* Fills c from entry e, its name and value copied into req's arena (the doc string is not
 * copied); with IncludeSynonyms also e's synonyms, at most 16, the value in use first. */
static void
add_entry(ch_req *req, const ch_DescribeConfigsRequest *rq, cfg_res *c, const ch_config_entry *e,
	  bool topic)
{
	c->Name = ch_str_c(ch_req_strdup(req, ch_str_c(e->name)));
	c->Value = e->value ? ch_str_c(ch_req_strdup(req, ch_str_c(e->value))) : CH_STR_NULL;
	c->ReadOnly = e->read_only;
	c->IsDefault = e->is_default;
	c->ConfigSource = e->source;
	c->IsSensitive = e->sensitive;
	c->ConfigType = e->type;
	c->Documentation = rq->IncludeDocumentation && e->doc ? ch_str_c(e->doc) : CH_STR_NULL;
	c->Synonyms = NULL;
	c->Synonyms_n = 0;
	if (!rq->IncludeSynonyms)
		return;
	/* Kafka lists the value in use first, then what it overrides: a topic
	 * override, then the broker key's dynamic, static and default values. */
	enum {
		MAXSYN = 16
	};
	ch_config_entry syn[MAXSYN];
	int n = 0;
	if (topic && e->source == CH_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG)
		syn[n++] = *e;
	if (topic)
		n += ch_topic_config_synonyms(req->bk->cfg, e->name, syn + n, (size_t)(MAXSYN - n));
	else
		n += ch_config_synonyms(req->bk->cfg, e->name, syn + n, (size_t)(MAXSYN - n));
	c->Synonyms = CH_REQ_NEW_ARRAY(req, ch_DescribeConfigsResponse_DescribeConfigsSynonym, n);
	c->Synonyms_n = n;
	for (int k = 0; k < n; k++) {
		c->Synonyms[k].Name = ch_str_c(ch_req_strdup(req, ch_str_c(syn[k].name)));
		c->Synonyms[k].Value =
			syn[k].value ? ch_str_c(ch_req_strdup(req, ch_str_c(syn[k].value)))
				     : CH_STR_NULL;
		c->Synonyms[k].Source = syn[k].source;
	}
}

/* r's Configs, in req's arena: for ResourceName "" what the cluster default layer sets, else
 * every broker config; only the keys q asks for (wanted). */
static void
describe_broker(ch_req *req, const ch_DescribeConfigsRequest *rq, const cfg_req *q,
		ch_DescribeConfigsResponse_DescribeConfigsResult *r)
{
	const ch_config *cfg = req->bk->cfg;
	size_t cap = ch_config_count();
	r->Configs = CH_REQ_NEW_ARRAY(req, cfg_res, cap);
	r->Configs_n = 0;
	size_t it = 0;
	ch_config_entry e;
	/* The cluster default (name "") lists what is set there (Kafka's
	 * ConfigHelper: currentDynamicDefaultConfigs); the node, everything. */
	bool dflt = q->ResourceName.len <= 0;
	while ((dflt ? ch_config_layer_next(cfg, CH_CONFIG_LAYER_DEFAULT, &it, &e)
		     : ch_config_next(cfg, &it, &e)) &&
	       (size_t)r->Configs_n < cap)
		if (wanted(q, e.name))
			add_entry(req, rq, &r->Configs[r->Configs_n++], &e, false);
}

/* r's Configs, in req's arena: every topic config as it applies to the registered topic tp
 * (its overrides, else the broker's values); only the keys q asks for (wanted). */
static void
describe_topic(ch_req *req, const ch_DescribeConfigsRequest *rq, const cfg_req *q,
	       const ch_topic *tp, ch_DescribeConfigsResponse_DescribeConfigsResult *r)
{
	const ch_config *cfg = req->bk->cfg;
	size_t cap = ch_topic_config_count();
	r->Configs = CH_REQ_NEW_ARRAY(req, cfg_res, cap);
	r->Configs_n = 0;
	size_t it = 0;
	ch_config_entry e;
	while (ch_topic_config_next(cfg, tp->configs, tp->n_configs, &it, &e) &&
	       (size_t)r->Configs_n < cap)
		if (wanted(q, e.name))
			add_entry(req, rq, &r->Configs[r->Configs_n++], &e, true);
}

/* Answers resource r with err, a copy of msg in req's arena (NULL gives "") and no configs. */
static void
fail(ch_req *req, ch_DescribeConfigsResponse_DescribeConfigsResult *r, int16_t err, const char *msg)
{
	r->ErrorCode = err;
	r->ErrorMessage = ch_str_c(ch_req_strdup(req, ch_str_c(msg)));
	r->Configs = NULL;
	r->Configs_n = 0;
}

void
ch_api_DescribeConfigs(ch_req *req)
{
	const ch_DescribeConfigsRequest *rq = req->body;
	ch_broker *bk = req->bk;
	ch_DescribeConfigsResponse resp;
	ch_DescribeConfigsResponse_init(&resp);
	int32_t n = rq->Resources_n > 0 ? rq->Resources_n : 0;
	resp.Results = CH_REQ_NEW_ARRAY(req, ch_DescribeConfigsResponse_DescribeConfigsResult, n);
	resp.Results_n = n;
	for (int32_t i = 0; i < n; i++) {
		const cfg_req *q = &rq->Resources[i];
		ch_DescribeConfigsResponse_DescribeConfigsResult *r = &resp.Results[i];
		char msg[300];
		r->ResourceType = q->ResourceType;
		r->ResourceName = q->ResourceName;
		r->ErrorCode = CH_KERR_NONE;
		r->ErrorMessage = CH_STR_LIT(""); /* the spec's default, which Kafka leaves */
		/* DESCRIBE_CONFIGS on the cluster (a broker) or the topic, first
		 * (ConfigHelper.handleDescribeConfigsRequest). */
		int16_t denied = 0;
		if (q->ResourceType == RESOURCE_BROKER &&
		    !ch_api_cluster_allowed(req, CH_ACL_DESCRIBE_CONFIGS))
			denied = CH_KERR_CLUSTER_AUTHORIZATION_FAILED;
		else if (q->ResourceType == RESOURCE_TOPIC &&
			 !ch_api_allowed_str(req, CH_ACL_DESCRIBE_CONFIGS, CH_RES_TOPIC,
					     q->ResourceName))
			denied = CH_KERR_TOPIC_AUTHORIZATION_FAILED;
		if (denied) {
			fail(req, r, denied, ch_kerr_message(denied));
			continue;
		}
		if (q->ResourceType == RESOURCE_BROKER) {
			char self[16];
			snprintf(self, sizeof(self), "%d", bk->node_id);
			if (q->ResourceName.len > 0 && !ch_str_eq_c(q->ResourceName, self)) {
				snprintf(msg, sizeof(msg),
					 "Unexpected broker id, expected %s or empty string, but "
					 "received %.*s",
					 self, q->ResourceName.len, q->ResourceName.p);
				fail(req, r, CH_KERR_INVALID_REQUEST, msg);
				continue;
			}
			describe_broker(req, rq, q, r);
		} else if (q->ResourceType == RESOURCE_TOPIC) {
			const ch_topic *tp = q->ResourceName.len > 0
						     ? ch_topics_find(bk->topics, q->ResourceName.p,
								      (size_t)q->ResourceName.len)
						     : NULL;
			if (!tp &&
			    ch_topic_name_validate(q->ResourceName.p ? q->ResourceName.p : "",
						   (size_t)CH_MAX(q->ResourceName.len, 0), msg,
						   sizeof(msg)) != 0) {
				/* Kafka validates the name first (Topic.validate). */
				fail(req, r, CH_KERR_INVALID_TOPIC_EXCEPTION, msg);
				continue;
			}
			if (!tp) {
				snprintf(msg, sizeof(msg), "Topic '%.*s' does not exist.",
					 q->ResourceName.len > 0 ? q->ResourceName.len : 0,
					 q->ResourceName.p);
				fail(req, r, CH_KERR_UNKNOWN_TOPIC_OR_PARTITION, msg);
				continue;
			}
			describe_topic(req, rq, q, tp, r);
		} else {
			snprintf(msg, sizeof(msg), "Unsupported resource type %d", q->ResourceType);
			fail(req, r, CH_KERR_INVALID_REQUEST, msg);
		}
	}
	ch_api_send(req, &resp);
}
