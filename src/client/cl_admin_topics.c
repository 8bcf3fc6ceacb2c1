/*
 * cl_admin_topics.c: the admin calls on topics and configurations: create,
 * delete and describe topics, create partitions (at the controller
 * Metadata names, as Java's AdminClient sends them), describe configs.
 * Each is an ad_call (cl_admin_int.h).
 */
#include "client/cl_admin_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A broker's message into a result's fixed buffer ("" for none). */
static void
copy_msg(char *dst, size_t size, ch_str msg)
{
	if (msg.len <= 0) {
		dst[0] = '\0';
		return;
	}
	snprintf(dst, size, "%.*s", (int)msg.len, msg.p);
}

/* Controller-side topic errors Java's AdminClient retries: NOT_CONTROLLER
 * (look the controller up again) and THROTTLING_QUOTA_EXCEEDED. */
static bool
controller_retry(ad_call *k, ad_item *it, int16_t err)
{
	if (err == CH_KERR_NOT_CONTROLLER) {
		ad_retry(k, it, err, true);
		return true;
	}
	if (err == CH_KERR_THROTTLING_QUOTA_EXCEEDED) {
		ad_retry(k, it, err, false);
		return true;
	}
	return false;
}

/* ---- create topics -------------------------------------------------------- */

typedef struct topics_call {
	cohort_new_topic *topics;
	cohort_new_partitions *parts;
	bool validate_only;
} topics_call;

/* Encodes CreateTopics for the batch's topics with their configs. */
static void
build_create_topics(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n,
		    size_t *encoded)
{
	topics_call *tc = k->ud;
	size_t nconf = 0;
	for (size_t i = 0; i < n; i++)
		nconf += tc->topics[items[i]->idx].configs_n;
	ch_CreateTopicsRequest m;
	ch_CreateTopicsRequest_init(&m);
	ch_CreateTopicsRequest_CreatableTopic *t = calloc(n + 1, sizeof(*t));
	ch_CreateTopicsRequest_CreatableTopicConfig *cf = calloc(nconf + 1, sizeof(*cf));
	if (!t || !cf) {
		free(t);
		free(cf);
		b->oom = true;
		return;
	}
	size_t c = 0;
	for (size_t i = 0; i < n; i++) {
		const cohort_new_topic *nt = &tc->topics[items[i]->idx];
		t[i].Name = ch_str_c(nt->name);
		t[i].NumPartitions = nt->partitions;
		t[i].ReplicationFactor = nt->replication_factor;
		t[i].Assignments_n = 0;
		t[i].Configs = cf + c;
		t[i].Configs_n = (int32_t)nt->configs_n;
		for (size_t j = 0; j < nt->configs_n; j++, c++) {
			cf[c].Name = ch_str_c(nt->configs[j].name);
			cf[c].Value = ch_str_c(nt->configs[j].value);
		}
	}
	m.Topics = t;
	m.Topics_n = (int32_t)n;
	m.timeoutMs = k->c->conf.request_timeout_ms;
	m.validateOnly = tc->validate_only;
	ch_CreateTopicsRequest_encode(b, version, &m);
	free(t);
	free(cf);
	*encoded = n;
}

/* Takes each topic's error and message; NOT_CONTROLLER and throttling retry. */
static void
done_create_topics(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	(void)version;
	topics_call *tc = k->ud;
	const ch_CreateTopicsResponse *m = resp;
	for (size_t i = 0; i < n; i++) {
		ad_item *it = items[i];
		const ch_CreateTopicsResponse_CreatableTopicResult *r =
			AD_FIND(m->Topics, m->Topics_n, Name, it->key);
		if (!r) {
			ad_done(k, it, COHORT_ERR__BAD_MSG);
			continue;
		}
		if (controller_retry(k, it, r->ErrorCode))
			continue;
		cohort_new_topic *d = &tc->topics[it->idx];
		copy_msg(d->errmsg, sizeof(d->errmsg), r->ErrorMessage);
		ad_done(k, it, r->ErrorCode);
	}
}

static const ad_ops create_topics_ops = {
	.api = CH_APIKEY_CREATE_TOPICS,
	.route = R_CONTROLLER,
	.max_version = -1,
	.build = build_create_topics,
	.done = done_create_topics,
};

cohort_err
cohort_admin_create_topics(cohort_admin *a, cohort_new_topic *topics, size_t n, int validate_only,
			   int timeout_ms)
{
	if (!a || (n && !topics))
		return COHORT_ERR__INVALID_ARG;
	for (size_t i = 0; i < n; i++) {
		if (!topics[i].name || (topics[i].configs_n && !topics[i].configs))
			return COHORT_ERR__INVALID_ARG;
		for (size_t j = 0; j < topics[i].configs_n; j++)
			if (!topics[i].configs[j].name)
				return COHORT_ERR__INVALID_ARG;
	}
	topics_call tc = {topics, NULL, validate_only != 0};
	cohort_err *errs = calloc(n + 1, sizeof(*errs));
	ad_call *k = errs ? ad_new(&a->c, &create_topics_ops, n, &tc, errs, timeout_ms) : NULL;
	for (size_t i = 0; k && i < n; i++) {
		k->items[i].key = topics[i].name;
		topics[i].errmsg[0] = '\0';
	}
	cohort_err err = k ? ad_run_all(k, errs, n) : COHORT_ERR__NOMEM;
	for (size_t i = 0; i < n; i++)
		topics[i].err = k ? errs[i] : err;
	free(errs);
	return err;
}

/* ---- create partitions ------------------------------------------------------ */

/* Encodes CreatePartitions (new totals, no assignments). */
static void
build_create_parts(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n,
		   size_t *encoded)
{
	topics_call *tc = k->ud;
	ch_CreatePartitionsRequest m;
	ch_CreatePartitionsRequest_init(&m);
	ch_CreatePartitionsRequest_CreatePartitionsTopic *t = calloc(n + 1, sizeof(*t));
	if (!t) {
		b->oom = true;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		t[i].Name = ch_str_c(items[i]->key);
		t[i].Count = tc->parts[items[i]->idx].total;
		t[i].Assignments = NULL;
		t[i].Assignments_n = -1;
	}
	m.Topics = t;
	m.Topics_n = (int32_t)n;
	m.TimeoutMs = k->c->conf.request_timeout_ms;
	m.ValidateOnly = tc->validate_only;
	ch_CreatePartitionsRequest_encode(b, version, &m);
	free(t);
	*encoded = n;
}

/* Takes each topic's error and message; NOT_CONTROLLER and throttling retry. */
static void
done_create_parts(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	(void)version;
	topics_call *tc = k->ud;
	const ch_CreatePartitionsResponse *m = resp;
	for (size_t i = 0; i < n; i++) {
		ad_item *it = items[i];
		const ch_CreatePartitionsResponse_CreatePartitionsTopicResult *r =
			AD_FIND(m->Results, m->Results_n, Name, it->key);
		if (!r) {
			ad_done(k, it, COHORT_ERR__BAD_MSG);
			continue;
		}
		if (controller_retry(k, it, r->ErrorCode))
			continue;
		cohort_new_partitions *d = &tc->parts[it->idx];
		copy_msg(d->errmsg, sizeof(d->errmsg), r->ErrorMessage);
		ad_done(k, it, r->ErrorCode);
	}
}

static const ad_ops create_parts_ops = {
	.api = CH_APIKEY_CREATE_PARTITIONS,
	.route = R_CONTROLLER,
	.max_version = -1,
	.build = build_create_parts,
	.done = done_create_parts,
};

cohort_err
cohort_admin_create_partitions(cohort_admin *a, cohort_new_partitions *p, size_t n,
			       int validate_only, int timeout_ms)
{
	if (!a || (n && !p))
		return COHORT_ERR__INVALID_ARG;
	for (size_t i = 0; i < n; i++)
		if (!p[i].topic)
			return COHORT_ERR__INVALID_ARG;
	topics_call tc = {NULL, p, validate_only != 0};
	cohort_err *errs = calloc(n + 1, sizeof(*errs));
	ad_call *k = errs ? ad_new(&a->c, &create_parts_ops, n, &tc, errs, timeout_ms) : NULL;
	for (size_t i = 0; k && i < n; i++) {
		k->items[i].key = p[i].topic;
		p[i].errmsg[0] = '\0';
	}
	cohort_err err = k ? ad_run_all(k, errs, n) : COHORT_ERR__NOMEM;
	for (size_t i = 0; i < n; i++)
		p[i].err = k ? errs[i] : err;
	free(errs);
	return err;
}

/* ---- delete topics -------------------------------------------------------------- */

/* Encodes DeleteTopics by name (v6+: names with a zero topic id). */
static void
build_delete_topics(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n,
		    size_t *encoded)
{
	ch_DeleteTopicsRequest m;
	ch_DeleteTopicsRequest_init(&m);
	ch_DeleteTopicsRequest_DeleteTopicState *t = calloc(n + 1, sizeof(*t));
	ch_str *names = ad_keys(items, n, b);
	if (!t || !names) {
		free(t);
		free(names);
		b->oom = true;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		t[i].Name = names[i];
		memset(&t[i].TopicId, 0, sizeof(t[i].TopicId));
	}
	m.Topics = t;
	m.Topics_n = (int32_t)n;
	m.TopicNames = names;
	m.TopicNames_n = (int32_t)n;
	m.TimeoutMs = k->c->conf.request_timeout_ms;
	ch_DeleteTopicsRequest_encode(b, version, &m);
	free(t);
	free(names);
	*encoded = n;
}

/* Takes each topic's result; NOT_CONTROLLER and throttling retry. */
static void
done_delete_topics(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	(void)version;
	const ch_DeleteTopicsResponse *m = resp;
	for (size_t i = 0; i < n; i++) {
		ad_item *it = items[i];
		const ch_DeleteTopicsResponse_DeletableTopicResult *r =
			AD_FIND(m->Responses, m->Responses_n, Name, it->key);
		cohort_err e = r ? r->ErrorCode : COHORT_ERR__BAD_MSG;
		if (!controller_retry(k, it, (int16_t)(e > 0 ? e : 0)))
			ad_done(k, it, e);
	}
}

static const ad_ops delete_topics_ops = {
	.api = CH_APIKEY_DELETE_TOPICS,
	.route = R_CONTROLLER,
	.max_version = -1,
	.build = build_delete_topics,
	.done = done_delete_topics,
};

cohort_err
cohort_admin_delete_topics(cohort_admin *a, const char *const *topics, size_t n, cohort_err *errs,
			   int timeout_ms)
{
	return ad_run_names(a, &delete_topics_ops, topics, n, errs, timeout_ms);
}

/* ---- describe topics ------------------------------------------------------------------ */

typedef struct {
	cohort_topic_descriptions pub;
	ch_arena arena;
} tdesc_res;

typedef struct tdesc_call {
	tdesc_res *r;
	const char *const *names; /* NULL: every topic */
	size_t n;
} tdesc_call;

/* Encodes Metadata for the named topics, or for every topic (null list) when none is named. */
static void
build_tdesc(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n, size_t *encoded)
{
	(void)items;
	tdesc_call *tc = k->ud;
	ch_MetadataRequest m;
	ch_MetadataRequest_init(&m);
	ch_MetadataRequest_MetadataRequestTopic *t = calloc(tc->n + 1, sizeof(*t));
	if (!t) {
		b->oom = true;
		return;
	}
	for (size_t i = 0; i < tc->n; i++)
		t[i].Name = ch_str_c(tc->names[i]);
	m.Topics = tc->names ? t : NULL;
	m.Topics_n = tc->names ? (int32_t)tc->n : -1;
	m.AllowAutoTopicCreation = false;
	ch_MetadataRequest_encode(b, version, &m);
	free(t);
	*encoded = n;
}

/* qsort order of partition descriptions: by partition. */
static int
cmp_pdesc(const void *a, const void *b)
{
	const cohort_partition_description *x = a, *y = b;
	return (x->partition > y->partition) - (x->partition < y->partition);
}

/* qsort order of topic descriptions: by name. */
static int
cmp_tdesc(const void *a, const void *b)
{
	return strcmp(((const cohort_topic_description *)a)->name,
		      ((const cohort_topic_description *)b)->name);
}

/* A copy of a node id list in ra. */
static const int32_t *
copy_ids(ch_arena *ra, const int32_t *ids, int32_t n, size_t *out_n, bool *oom)
{
	*out_n = n > 0 ? (size_t)n : 0;
	int32_t *d = ch_arena_alloc(ra, sizeof(int32_t) * (*out_n + 1));
	if (!d) {
		*oom = true;
		return NULL;
	}
	if (*out_n)
		memcpy(d, ids, sizeof(int32_t) * *out_n);
	return d;
}

/* One Metadata topic into d. */
static void
take_topic(ch_arena *ra, cohort_topic_description *d,
	   const ch_MetadataResponse_MetadataResponseTopic *t, bool *oom)
{
	d->err = t->ErrorCode;
	memcpy(d->topic_id, t->TopicId.b, sizeof(d->topic_id));
	d->is_internal = t->IsInternal;
	size_t np = t->Partitions_n > 0 ? (size_t)t->Partitions_n : 0;
	d->partitions = ch_arena_alloc(ra, sizeof(cohort_partition_description) * (np + 1));
	if (!d->partitions) {
		*oom = true;
		return;
	}
	for (size_t i = 0; i < np; i++) {
		const ch_MetadataResponse_MetadataResponsePartition *p = &t->Partitions[i];
		cohort_partition_description *pd = &d->partitions[d->partitions_n++];
		pd->partition = p->PartitionIndex;
		pd->err = p->ErrorCode;
		pd->leader = p->LeaderId;
		pd->leader_epoch = p->LeaderEpoch;
		pd->replicas =
			copy_ids(ra, p->ReplicaNodes, p->ReplicaNodes_n, &pd->replicas_n, oom);
		pd->isr = copy_ids(ra, p->IsrNodes, p->IsrNodes_n, &pd->isr_n, oom);
		pd->offline =
			copy_ids(ra, p->OfflineReplicas, p->OfflineReplicas_n, &pd->offline_n, oom);
	}
	if (d->partitions_n)
		qsort(d->partitions, d->partitions_n, sizeof(*d->partitions), cmp_pdesc);
}

/* Copies the described topics into the result (in the order asked, or all sorted). */
static void
done_tdesc(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	(void)version;
	(void)n;
	tdesc_call *tc = k->ud;
	tdesc_res *r = tc->r;
	const ch_MetadataResponse *m = resp;
	bool oom = false;
	size_t nt = tc->names ? tc->n : (m->Topics_n > 0 ? (size_t)m->Topics_n : 0);
	r->pub.topics = ch_arena_alloc(&r->arena, sizeof(cohort_topic_description) * (nt + 1));
	if (!r->pub.topics) {
		ad_done(k, items[0], COHORT_ERR__NOMEM);
		return;
	}
	for (size_t i = 0; i < nt; i++) {
		cohort_topic_description *d = &r->pub.topics[r->pub.topics_n];
		const ch_MetadataResponse_MetadataResponseTopic *t = NULL;
		if (tc->names) {
			t = AD_FIND(m->Topics, m->Topics_n, Name, tc->names[i]);
			d->name = ad_strdup_c(&r->arena, tc->names[i], &oom);
		} else {
			t = &m->Topics[i];
			if (t->Name.len < 0)
				continue;
			d->name = ad_strdup(&r->arena, t->Name, &oom);
		}
		r->pub.topics_n++;
		if (t)
			take_topic(&r->arena, d, t, &oom);
		else
			d->err = COHORT_ERR__BAD_MSG;
	}
	if (!tc->names && r->pub.topics_n)
		qsort(r->pub.topics, r->pub.topics_n, sizeof(*r->pub.topics), cmp_tdesc);
	if (oom)
		ad_done(k, items[0], COHORT_ERR__NOMEM);
}

static const ad_ops tdesc_ops = {
	.api = CH_APIKEY_METADATA,
	.route = R_ANY,
	.max_version = -1,
	.build = build_tdesc,
	.done = done_tdesc,
};

cohort_err
cohort_admin_describe_topics(cohort_admin *a, const char *const *topics, size_t n, int timeout_ms,
			     cohort_topic_descriptions **out)
{
	if (!a || !out || (n && !topics))
		return COHORT_ERR__INVALID_ARG;
	*out = NULL;
	for (size_t i = 0; i < n; i++)
		if (!topics[i] || !topics[i][0])
			return COHORT_ERR__INVALID_ARG;
	tdesc_res *r = calloc(1, sizeof(*r));
	if (!r)
		return COHORT_ERR__NOMEM;
	ch_arena_init(&r->arena);
	tdesc_call tc = {r, n ? topics : NULL, n};
	cohort_err gerr = COHORT_OK;
	ad_call *k = ad_new(&a->c, &tdesc_ops, 1, &tc, &gerr, timeout_ms);
	if (!k) {
		cohort_topic_descriptions_free(&r->pub);
		return COHORT_ERR__NOMEM;
	}
	cohort_err err = ad_run(k);
	if (err || gerr) {
		cohort_topic_descriptions_free(&r->pub);
		return err ? err : gerr;
	}
	for (size_t i = 0; i < r->pub.topics_n && !err; i++)
		err = r->pub.topics[i].err;
	*out = &r->pub;
	return err;
}

void
cohort_topic_descriptions_free(cohort_topic_descriptions *d)
{
	if (!d)
		return;
	tdesc_res *r = (tdesc_res *)d;
	ch_arena_free(&r->arena);
	free(r);
}

/* ---- describe configs ------------------------------------------------------------------------ */

typedef struct {
	cohort_configs pub;
	ch_arena arena;
} configs_res;

typedef struct configs_call {
	configs_res *r;
	const cohort_config_resource *res;
} configs_call;

/* Encodes DescribeConfigs for the batch's resources, every key, with documentation. */
static void
build_configs(ad_call *k, int16_t version, ch_buf *b, ad_item **items, size_t n, size_t *encoded)
{
	configs_call *cc = k->ud;
	ch_DescribeConfigsRequest m;
	ch_DescribeConfigsRequest_init(&m);
	ch_DescribeConfigsRequest_DescribeConfigsResource *rs = calloc(n + 1, sizeof(*rs));
	if (!rs) {
		b->oom = true;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const cohort_config_resource *res = &cc->res[items[i]->idx];
		rs[i].ResourceType = (int8_t)res->type;
		rs[i].ResourceName = ch_str_c(res->name);
		rs[i].ConfigurationKeys = NULL;
		rs[i].ConfigurationKeys_n = -1;
	}
	m.Resources = rs;
	m.Resources_n = (int32_t)n;
	m.IncludeSynonyms = false;
	m.IncludeDocumentation = true;
	ch_DescribeConfigsRequest_encode(b, version, &m);
	free(rs);
	*encoded = n;
}

/* One resource's answer into the result. */
static void
take_configs(ad_call *k, ad_item *it, const ch_DescribeConfigsResponse_DescribeConfigsResult *res,
	     int16_t version)
{
	configs_call *cc = k->ud;
	ch_arena *ra = &cc->r->arena;
	cohort_config_result *d = &cc->r->pub.resources[it->idx];
	bool oom = false;
	d->err = res->ErrorCode;
	d->errmsg = ad_strdup(ra, res->ErrorMessage, &oom);
	size_t ne = res->Configs_n > 0 ? (size_t)res->Configs_n : 0;
	d->entries = ch_arena_alloc(ra, sizeof(cohort_config_entry) * (ne + 1));
	if (!d->entries)
		oom = true;
	for (size_t i = 0; d->entries && i < ne; i++) {
		const ch_DescribeConfigsResponse_DescribeConfigsResourceResult *e =
			&res->Configs[i];
		cohort_config_entry *x = &d->entries[d->entries_n++];
		x->name = ad_strdup(ra, e->Name, &oom);
		x->value = ad_strdup(ra, e->Value, &oom);
		/* v0 has no source: a default or, else, a static config */
		x->source = version >= 1 ? e->ConfigSource : e->IsDefault ? 5 : 4;
		x->read_only = e->ReadOnly;
		x->sensitive = e->IsSensitive;
		x->type = version >= 3 ? e->ConfigType : 0;
		x->documentation = version >= 3 ? ad_strdup(ra, e->Documentation, &oom) : NULL;
	}
	ad_done(k, it, oom ? COHORT_ERR__NOMEM : res->ErrorCode);
}

/* Takes each resource's answer by type and name. */
static void
done_configs(ad_call *k, int16_t version, void *resp, ad_item **items, size_t n)
{
	configs_call *cc = k->ud;
	const ch_DescribeConfigsResponse *m = resp;
	for (size_t i = 0; i < n; i++) {
		ad_item *it = items[i];
		const cohort_config_resource *want = &cc->res[it->idx];
		const ch_DescribeConfigsResponse_DescribeConfigsResult *res = NULL;
		for (int32_t j = 0; j < m->Results_n && !res; j++)
			if (m->Results[j].ResourceType == want->type &&
			    ch_str_eq_c(m->Results[j].ResourceName, want->name))
				res = &m->Results[j];
		if (res)
			take_configs(k, it, res, version);
		else
			ad_done(k, it, COHORT_ERR__BAD_MSG);
	}
}

/* Every resource's error, answered or not, into its result. */
static void
finish_configs(ad_call *k)
{
	configs_call *cc = k->ud;
	for (size_t i = 0; i < k->n; i++)
		cc->r->pub.resources[k->items[i].idx].err = k->items[i].err;
}

static const ad_ops configs_any_ops = {
	.api = CH_APIKEY_DESCRIBE_CONFIGS,
	.route = R_ANY,
	.max_version = -1,
	.build = build_configs,
	.done = done_configs,
	.finish = finish_configs,
};

static const ad_ops configs_node_ops = {
	.api = CH_APIKEY_DESCRIBE_CONFIGS,
	.route = R_NODE,
	.max_version = -1,
	.build = build_configs,
	.done = done_configs,
	.finish = finish_configs,
};

/* A broker resource names its node ("1"); -1 for any other resource (a
 * topic, the cluster defaults "", a name that is no id: any broker). */
static int32_t
resource_node(const cohort_config_resource *r)
{
	if (r->type != COHORT_RESOURCE_BROKER || !r->name[0])
		return -1;
	char *end;
	long v = strtol(r->name, &end, 10);
	return *end || v < 0 || v > INT32_MAX ? -1 : (int32_t)v;
}

/* Runs the resources that go to their own broker (by_node) or to any;
 * item idx is the caller's index, results land there. */
static cohort_err
run_configs(cohort_admin *a, configs_call *cc, size_t n, bool by_node, int timeout_ms)
{
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if ((resource_node(&cc->res[i]) >= 0) == by_node)
			m++;
	if (m == 0)
		return COHORT_OK;
	ad_call *k = ad_new(&a->c, by_node ? &configs_node_ops : &configs_any_ops, m, cc, NULL,
			    timeout_ms);
	if (!k)
		return COHORT_ERR__NOMEM;
	m = 0;
	for (size_t i = 0; i < n; i++) {
		if ((resource_node(&cc->res[i]) >= 0) != by_node)
			continue;
		k->items[m].key = cc->res[i].name;
		k->items[m].idx = i;
		k->items[m].node = resource_node(&cc->res[i]);
		m++;
	}
	return ad_run(k);
}

cohort_err
cohort_admin_describe_configs(cohort_admin *a, const cohort_config_resource *res, size_t n,
			      int timeout_ms, cohort_configs **out)
{
	if (!a || !out || (n && !res))
		return COHORT_ERR__INVALID_ARG;
	*out = NULL;
	bool nodes = false;
	for (size_t i = 0; i < n; i++) {
		if (!res[i].name ||
		    (res[i].type != COHORT_RESOURCE_TOPIC && res[i].type != COHORT_RESOURCE_BROKER))
			return COHORT_ERR__INVALID_ARG;
		nodes |= resource_node(&res[i]) >= 0;
	}
	int64_t start = ch_now_mono_ms();
	if (nodes) { /* the brokers must be known by id */
		cohort_cluster *cl = NULL;
		cohort_err err = cohort_admin_describe_cluster(a, timeout_ms, &cl);
		cohort_cluster_free(cl);
		if (err)
			return err;
	}
	configs_res *r = calloc(1, sizeof(*r));
	if (!r)
		return COHORT_ERR__NOMEM;
	ch_arena_init(&r->arena);
	bool oom = false;
	r->pub.resources = ch_arena_alloc(&r->arena, sizeof(cohort_config_result) * (n + 1));
	for (size_t i = 0; r->pub.resources && i < n; i++) {
		r->pub.resources[i].type = res[i].type;
		r->pub.resources[i].name = ad_strdup_c(&r->arena, res[i].name, &oom);
	}
	if (!r->pub.resources || oom) {
		cohort_configs_free(&r->pub);
		return COHORT_ERR__NOMEM;
	}
	r->pub.resources_n = n;
	configs_call cc = {r, res};
	cohort_err err = run_configs(a, &cc, n, false, timeout_ms);
	int64_t left = ad_timeout(&a->c, timeout_ms) - (ch_now_mono_ms() - start);
	if (!err)
		err = run_configs(a, &cc, n, true, (int)(left > 0 ? left : 0));
	if (err) {
		cohort_configs_free(&r->pub);
		return err;
	}
	for (size_t i = 0; i < n && !err; i++)
		err = r->pub.resources[i].err;
	*out = &r->pub;
	return err;
}

void
cohort_configs_free(cohort_configs *c)
{
	if (!c)
		return;
	configs_res *r = (configs_res *)c;
	ch_arena_free(&r->arena);
	free(r);
}
