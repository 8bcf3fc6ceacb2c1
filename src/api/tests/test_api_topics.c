/*
 * The topic admin family at every version, against a whole broker without
 * sockets (api_harness.h): CreateTopics -> Metadata -> DescribeConfigs ->
 * CreatePartitions -> DeleteTopics, asserting Kafka's error codes and the
 * contents of each response, and what the registry holds afterwards.
 */
#include <stdio.h>
#include <string.h>

#include "api_flows.h"
#include "config/ch_config.h"

static const int16_t family[] = {CH_APIKEY_CREATE_TOPICS, CH_APIKEY_METADATA,
				 CH_APIKEY_DESCRIBE_CONFIGS, CH_APIKEY_CREATE_PARTITIONS,
				 CH_APIKEY_DELETE_TOPICS};

typedef ch_CreateTopicsRequest_CreatableTopic ct_topic;
typedef ch_CreateTopicsResponse_CreatableTopicResult ct_result;

static const ch_topic *
registry_topic(tb *b, const char *name)
{
	return ch_topics_find(b->topics, name, strlen(name));
}

static const ch_DescribeConfigsResponse_DescribeConfigsResourceResult *
find_config(const ch_DescribeConfigsResponse_DescribeConfigsResult *r, const char *name)
{
	for (int32_t i = 0; i < r->Configs_n; i++)
		if (ch_str_eq_c(r->Configs[i].Name, name))
			return &r->Configs[i];
	return NULL;
}

/* CreateTopics at v: one good topic, then the errors Kafka gives. */
static void
create_step(tb *b, ch_arena *a, int16_t v, const char *name, ch_uuid *id_out)
{
	ch_CreateTopicsRequest_CreatableTopicConfig cfg = {ch_str_c("retention.ms"),
							   ch_str_c("12345")};
	ct_topic good = {ch_str_c(name), 2, 1, NULL, 0, &cfg, 1};
	ch_CreateTopicsRequest q;
	ch_CreateTopicsRequest_init(&q);
	q.Topics = &good;
	q.Topics_n = 1;
	q.timeoutMs = 30000;
	CALL(r, ch_CreateTopicsResponse, b, a, CH_APIKEY_CREATE_TOPICS, v, &q);
	CH_CHECK_EQ_INT(r->Topics_n, 1);
	if (r->Topics_n != 1)
		return;
	const ct_result *t = &r->Topics[0];
	CH_CHECK_STR(t->Name, name);
	CH_CHECK_EQ_INT(t->ErrorCode, CH_KERR_NONE);
	if (v >= 1)
		CH_CHECK(ch_str_is_null(t->ErrorMessage));
	const ch_topic *rt = registry_topic(b, name);
	CH_CHECK(rt != NULL);
	if (!rt)
		return;
	CH_CHECK_EQ_INT(rt->partitions, 2);
	*id_out = rt->id;
	if (v >= 5) {
		/* KIP-525: the created topic's settings come back. */
		CH_CHECK_EQ_INT(t->NumPartitions, 2);
		CH_CHECK_EQ_INT(t->ReplicationFactor, 1);
		bool seen_retention = false, seen_cleanup = false;
		for (int32_t i = 0; i < t->Configs_n; i++) {
			const ch_CreateTopicsResponse_CreatableTopicConfigs *c = &t->Configs[i];
			if (ch_str_eq_c(c->Name, "retention.ms")) {
				seen_retention = true;
				CH_CHECK_STR(c->Value, "12345");
				CH_CHECK_EQ_INT(c->ConfigSource,
						CH_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
			} else if (ch_str_eq_c(c->Name, "cleanup.policy")) {
				seen_cleanup = true;
				CH_CHECK_STR(c->Value, "delete");
				CH_CHECK_EQ_INT(c->ConfigSource, CH_CONFIG_SOURCE_DEFAULT_CONFIG);
			}
		}
		CH_CHECK(seen_retention && seen_cleanup);
	}
	if (v >= 7)
		CH_CHECK(memcmp(t->TopicId.b, rt->id.b, 16) == 0 && !ch_uuid_is_zero(&t->TopicId));

	/* The same name again, a replication factor one broker cannot give,
	 * no partitions, a name Kafka refuses; v4+ also the broker defaults
	 * (-1, -1: KIP-464). One request, answered in order. */
	char defaults_name[64];
	snprintf(defaults_name, sizeof(defaults_name), "%s-defaults", name);
	ct_topic bad[5] = {
		{ch_str_c(name), 1, 1, NULL, 0, NULL, 0},
		{ch_str_c("rf-three"), 1, 3, NULL, 0, NULL, 0},
		{ch_str_c("no-partitions"), 0, 1, NULL, 0, NULL, 0},
		{ch_str_c("bad name"), 1, 1, NULL, 0, NULL, 0},
		{ch_str_c(defaults_name), -1, -1, NULL, 0, NULL, 0},
	};
	static const int16_t want[5] = {
		CH_KERR_TOPIC_ALREADY_EXISTS, CH_KERR_INVALID_REPLICATION_FACTOR,
		CH_KERR_INVALID_PARTITIONS, CH_KERR_INVALID_TOPIC_EXCEPTION, CH_KERR_NONE};
	int n = v >= 4 ? 5 : 4;
	q.Topics = bad;
	q.Topics_n = n;
	CALL(e, ch_CreateTopicsResponse, b, a, CH_APIKEY_CREATE_TOPICS, v, &q);
	CH_CHECK_EQ_INT(e->Topics_n, n);
	for (int i = 0; i < n && i < e->Topics_n; i++) {
		CH_CHECK_STR(e->Topics[i].Name, bad[i].Name.p);
		CH_CHECK_EQ_INT(e->Topics[i].ErrorCode, want[i]);
		if (v >= 1 && want[i])
			CH_CHECK(e->Topics[i].ErrorMessage.len > 0);
		if (v >= 5 && want[i])
			CH_CHECK_EQ_INT(e->Topics[i].NumPartitions, -1);
	}
	CH_CHECK(registry_topic(b, "rf-three") == NULL);
	if (v >= 4) {
		const ch_topic *d = registry_topic(b, defaults_name);
		CH_CHECK(d && d->partitions == 1); /* num.partitions */
		if (v >= 5 && e->Topics_n == 5) {
			CH_CHECK_EQ_INT(e->Topics[4].NumPartitions, 1);
			CH_CHECK_EQ_INT(e->Topics[4].ReplicationFactor, 1);
		}
	}

	/* validateOnly (v1+): checked, answered as a success, not created. */
	if (v >= 1) {
		char vname[64];
		snprintf(vname, sizeof(vname), "%s-validate", name);
		ct_topic only = {ch_str_c(vname), 3, 1, NULL, 0, NULL, 0};
		q.Topics = &only;
		q.Topics_n = 1;
		q.validateOnly = true;
		CALL(vo, ch_CreateTopicsResponse, b, a, CH_APIKEY_CREATE_TOPICS, v, &q);
		CH_CHECK(vo->Topics_n == 1 && vo->Topics[0].ErrorCode == CH_KERR_NONE);
		CH_CHECK(registry_topic(b, vname) == NULL);
	}
}

static void
check_partitions(const ch_MetadataResponse_MetadataResponseTopic *t, int32_t n, int32_t node)
{
	CH_CHECK_EQ_INT(t->Partitions_n, n);
	for (int32_t p = 0; p < t->Partitions_n; p++) {
		const ch_MetadataResponse_MetadataResponsePartition *mp = &t->Partitions[p];
		CH_CHECK_EQ_INT(mp->ErrorCode, 0);
		CH_CHECK_EQ_INT(mp->PartitionIndex, p);
		CH_CHECK_EQ_INT(mp->LeaderId, node);
		CH_CHECK(mp->ReplicaNodes_n == 1 && mp->ReplicaNodes[0] == node);
		CH_CHECK(mp->IsrNodes_n == 1 && mp->IsrNodes[0] == node);
	}
}

static void
metadata_step(tb *b, ch_arena *a, int16_t v, const char *name, ch_uuid id, int32_t partitions)
{
	ch_broker *bk = &b->bk;
	/* v4+ may forbid auto-creation; before v4 Metadata always creates, so
	 * the missing topic there is one whose name Kafka refuses. */
	char missing[64];
	snprintf(missing, sizeof(missing), v >= 4 ? "%s-missing" : "%s missing", name);
	ch_MetadataRequest_MetadataRequestTopic topics[2] = {{{{0}}, ch_str_c(name)},
							     {{{0}}, ch_str_c(missing)}};
	ch_MetadataRequest q;
	ch_MetadataRequest_init(&q);
	q.Topics = topics;
	q.Topics_n = 2;
	q.AllowAutoTopicCreation = false;
	CALL(r, ch_MetadataResponse, b, a, CH_APIKEY_METADATA, v, &q);
	CH_CHECK_EQ_INT(r->Brokers_n, 1);
	if (r->Brokers_n == 1) {
		CH_CHECK_EQ_INT(r->Brokers[0].NodeId, bk->node_id);
		CH_CHECK_STR(r->Brokers[0].Host, bk->adv_host);
		CH_CHECK_EQ_INT(r->Brokers[0].Port, bk->adv_port);
	}
	if (v >= 1)
		CH_CHECK_EQ_INT(r->ControllerId, bk->node_id);
	if (v >= 2)
		CH_CHECK_STR(r->ClusterId, bk->cluster_id);
	CH_CHECK_EQ_INT(r->Topics_n, 2);
	if (r->Topics_n != 2)
		return;
	const ch_MetadataResponse_MetadataResponseTopic *t = &r->Topics[0];
	CH_CHECK_EQ_INT(t->ErrorCode, CH_KERR_NONE);
	CH_CHECK_STR(t->Name, name);
	if (v >= 1)
		CH_CHECK(!t->IsInternal);
	if (v >= 10)
		CH_CHECK(memcmp(t->TopicId.b, id.b, 16) == 0);
	check_partitions(t, partitions, bk->node_id);
	CH_CHECK_STR(r->Topics[1].Name, missing);
	CH_CHECK_EQ_INT(r->Topics[1].ErrorCode, v >= 4 ? CH_KERR_UNKNOWN_TOPIC_OR_PARTITION
						       : CH_KERR_INVALID_TOPIC_EXCEPTION);
	CH_CHECK_EQ_INT(r->Topics[1].Partitions_n, 0);
	CH_CHECK(registry_topic(b, missing) == NULL);

	/* Every topic: a null list (v1+), an empty one in v0. */
	ch_MetadataRequest_init(&q);
	q.Topics = NULL;
	q.Topics_n = v >= 1 ? -1 : 0;
	CALL(all, ch_MetadataResponse, b, a, CH_APIKEY_METADATA, v, &q);
	CH_CHECK_EQ_INT(all->Topics_n, (int32_t)ch_topics_count(b->topics));
	bool seen = false;
	for (int32_t i = 0; i < all->Topics_n; i++)
		seen |= ch_str_eq_c(all->Topics[i].Name, name);
	CH_CHECK(seen);

	/* v10+: a topic named by its id; an unknown id. */
	if (v >= 10) {
		ch_uuid unknown = id;
		unknown.b[0] ^= 0x55;
		ch_MetadataRequest_MetadataRequestTopic byid[2] = {{id, CH_STR_NULL},
								   {unknown, CH_STR_NULL}};
		ch_MetadataRequest_init(&q);
		q.Topics = byid;
		q.Topics_n = 2;
		CALL(ri, ch_MetadataResponse, b, a, CH_APIKEY_METADATA, v, &q);
		CH_CHECK_EQ_INT(ri->Topics_n, 2);
		if (ri->Topics_n == 2) {
			CH_CHECK_EQ_INT(ri->Topics[0].ErrorCode, CH_KERR_NONE);
			CH_CHECK_STR(ri->Topics[0].Name, name);
			CH_CHECK_EQ_INT(ri->Topics[1].ErrorCode, CH_KERR_UNKNOWN_TOPIC_ID);
		}
		/* Java's request by id (its consumer's for an assignment's topic
		 * ids): the schema's default name "" beside each id, which is
		 * looked up by the id, never as the name "" (INVALID_TOPIC_EXCEPTION,
		 * or an auto-creation) */
		byid[0].Name = byid[1].Name = CH_STR_LIT("");
		q.AllowAutoTopicCreation = true;
		CALL(rj, ch_MetadataResponse, b, a, CH_APIKEY_METADATA, v, &q);
		CH_CHECK_EQ_INT(rj->Topics_n, 2);
		if (rj->Topics_n == 2) {
			CH_CHECK_EQ_INT(rj->Topics[0].ErrorCode, CH_KERR_NONE);
			CH_CHECK_STR(rj->Topics[0].Name, name);
			CH_CHECK(memcmp(rj->Topics[0].TopicId.b, id.b, 16) == 0);
			check_partitions(&rj->Topics[0], partitions, bk->node_id);
			CH_CHECK_EQ_INT(rj->Topics[1].ErrorCode, CH_KERR_UNKNOWN_TOPIC_ID);
			CH_CHECK(memcmp(rj->Topics[1].TopicId.b, unknown.b, 16) == 0);
		}
	}

	/* Auto-creation: before v4 always, from v4 when asked for. */
	char autoname[64];
	snprintf(autoname, sizeof(autoname), "%s-auto", name);
	ch_MetadataRequest_MetadataRequestTopic at = {{{0}}, ch_str_c(autoname)};
	ch_MetadataRequest_init(&q);
	q.Topics = &at;
	q.Topics_n = 1;
	q.AllowAutoTopicCreation = true;
	CALL(ra, ch_MetadataResponse, b, a, CH_APIKEY_METADATA, v, &q);
	CH_CHECK(ra->Topics_n == 1 && ra->Topics[0].ErrorCode == CH_KERR_NONE);
	if (ra->Topics_n == 1)
		check_partitions(&ra->Topics[0], b->cfg.num_partitions, bk->node_id);
	CH_CHECK(registry_topic(b, autoname) != NULL);
}

static void
configs_step(tb *b, ch_arena *a, int16_t v, const char *name)
{
	ch_str topic_keys[2] = {ch_str_c("retention.ms"), ch_str_c("cleanup.policy")};
	ch_str broker_keys[1] = {ch_str_c("offsets.topic.num.partitions")};
	ch_DescribeConfigsRequest_DescribeConfigsResource res[4] = {
		{2, ch_str_c(name), topic_keys, 2},
		{4, ch_str_c("1"), broker_keys, 1},
		{2, ch_str_c("no-such-topic"), NULL, -1},
		{4, ch_str_c("7"), NULL, -1},
	};
	ch_DescribeConfigsRequest q;
	ch_DescribeConfigsRequest_init(&q);
	q.Resources = res;
	q.Resources_n = 4;
	q.IncludeSynonyms = true;
	q.IncludeDocumentation = true;
	CALL(r, ch_DescribeConfigsResponse, b, a, CH_APIKEY_DESCRIBE_CONFIGS, v, &q);
	CH_CHECK_EQ_INT(r->Results_n, 4);
	if (r->Results_n != 4)
		return;
	const ch_DescribeConfigsResponse_DescribeConfigsResult *t = &r->Results[0];
	CH_CHECK_EQ_INT(t->ErrorCode, CH_KERR_NONE);
	CH_CHECK_EQ_INT(t->ResourceType, 2);
	CH_CHECK_STR(t->ResourceName, name);
	CH_CHECK_EQ_INT(t->Configs_n, 2);
	const ch_DescribeConfigsResponse_DescribeConfigsResourceResult *ret =
		find_config(t, "retention.ms");
	const ch_DescribeConfigsResponse_DescribeConfigsResourceResult *cp =
		find_config(t, "cleanup.policy");
	CH_CHECK(ret && cp);
	if (!ret || !cp)
		return;
	CH_CHECK_STR(ret->Value, "12345");
	CH_CHECK_STR(cp->Value, "delete");
	CH_CHECK(!ret->IsSensitive && !ret->ReadOnly);
	if (v == 0) {
		CH_CHECK(!ret->IsDefault);
		CH_CHECK(cp->IsDefault);
	} else {
		CH_CHECK_EQ_INT(ret->ConfigSource, CH_CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG);
		CH_CHECK_EQ_INT(cp->ConfigSource, CH_CONFIG_SOURCE_DEFAULT_CONFIG);
		/* The config itself comes first among its synonyms. */
		CH_CHECK(ret->Synonyms_n >= 1);
		if (ret->Synonyms_n >= 1) {
			CH_CHECK_STR(ret->Synonyms[0].Name, "retention.ms");
			CH_CHECK_STR(ret->Synonyms[0].Value, "12345");
		}
	}
	if (v >= 3) {
		CH_CHECK_EQ_INT(ret->ConfigType, CH_CONFIG_TYPE_LONG);
		CH_CHECK_EQ_INT(cp->ConfigType, CH_CONFIG_TYPE_LIST);
		CH_CHECK(ret->Documentation.len > 0);
	}
	/* The broker: a key the harness set, so a static broker config. */
	const ch_DescribeConfigsResponse_DescribeConfigsResult *br = &r->Results[1];
	CH_CHECK_EQ_INT(br->ErrorCode, CH_KERR_NONE);
	CH_CHECK_EQ_INT(br->Configs_n, 1);
	const ch_DescribeConfigsResponse_DescribeConfigsResourceResult *otp =
		find_config(br, "offsets.topic.num.partitions");
	CH_CHECK(otp != NULL);
	if (otp) {
		CH_CHECK_STR(otp->Value, "3");
		if (v >= 1)
			CH_CHECK_EQ_INT(otp->ConfigSource, CH_CONFIG_SOURCE_STATIC_BROKER_CONFIG);
		else
			CH_CHECK(!otp->IsDefault);
	}
	CH_CHECK_EQ_INT(r->Results[2].ErrorCode, CH_KERR_UNKNOWN_TOPIC_OR_PARTITION);
	CH_CHECK_EQ_INT(r->Results[2].Configs_n, 0);
	CH_CHECK_EQ_INT(r->Results[3].ErrorCode, CH_KERR_INVALID_REQUEST); /* not this broker */
}

static void
partitions_step(tb *b, ch_arena *a, int16_t v, const char *name)
{
	ch_CreatePartitionsRequest_CreatePartitionsTopic grow = {ch_str_c(name), 4, NULL, -1};
	ch_CreatePartitionsRequest q;
	ch_CreatePartitionsRequest_init(&q);
	q.Topics = &grow;
	q.Topics_n = 1;
	q.TimeoutMs = 30000;
	CALL(r, ch_CreatePartitionsResponse, b, a, CH_APIKEY_CREATE_PARTITIONS, v, &q);
	CH_CHECK(r->Results_n == 1 && r->Results[0].ErrorCode == CH_KERR_NONE);
	if (r->Results_n == 1) {
		CH_CHECK_STR(r->Results[0].Name, name);
		CH_CHECK(ch_str_is_null(r->Results[0].ErrorMessage));
	}
	const ch_topic *t = registry_topic(b, name);
	CH_CHECK(t && t->partitions == 4);

	/* Fewer than now, an unknown topic, validate-only growth. */
	char unknown[64];
	snprintf(unknown, sizeof(unknown), "%s-unknown", name);
	ch_CreatePartitionsRequest_CreatePartitionsTopic bad[2] = {
		{ch_str_c(name), 3, NULL, -1},
		{ch_str_c(unknown), 2, NULL, -1},
	};
	q.Topics = bad;
	q.Topics_n = 2;
	CALL(e, ch_CreatePartitionsResponse, b, a, CH_APIKEY_CREATE_PARTITIONS, v, &q);
	CH_CHECK_EQ_INT(e->Results_n, 2);
	if (e->Results_n == 2) {
		CH_CHECK_EQ_INT(e->Results[0].ErrorCode, CH_KERR_INVALID_PARTITIONS);
		CH_CHECK(e->Results[0].ErrorMessage.len > 0);
		CH_CHECK_EQ_INT(e->Results[1].ErrorCode, CH_KERR_UNKNOWN_TOPIC_OR_PARTITION);
	}
	ch_CreatePartitionsRequest_CreatePartitionsTopic more = {ch_str_c(name), 6, NULL, -1};
	q.Topics = &more;
	q.Topics_n = 1;
	q.ValidateOnly = true;
	CALL(vo, ch_CreatePartitionsResponse, b, a, CH_APIKEY_CREATE_PARTITIONS, v, &q);
	CH_CHECK(vo->Results_n == 1 && vo->Results[0].ErrorCode == CH_KERR_NONE);
	t = registry_topic(b, name);
	CH_CHECK(t && t->partitions == 4);
}

static void
delete_step(tb *b, ch_arena *a, int16_t v, const char *name, ch_uuid id)
{
	/* v6 names the topic by id (and fills in its name), v0-5 by name. */
	ch_DeleteTopicsRequest_DeleteTopicState st = {CH_STR_NULL, id};
	ch_str names[1] = {ch_str_c(name)};
	ch_DeleteTopicsRequest q;
	ch_DeleteTopicsRequest_init(&q);
	if (v >= 6) {
		q.Topics = &st;
		q.Topics_n = 1;
	} else {
		q.TopicNames = names;
		q.TopicNames_n = 1;
	}
	q.TimeoutMs = 30000;
	CALL(r, ch_DeleteTopicsResponse, b, a, CH_APIKEY_DELETE_TOPICS, v, &q);
	CH_CHECK_EQ_INT(r->Responses_n, 1);
	if (r->Responses_n == 1) {
		CH_CHECK_EQ_INT(r->Responses[0].ErrorCode, CH_KERR_NONE);
		CH_CHECK_STR(r->Responses[0].Name, name);
		if (v >= 6)
			CH_CHECK(memcmp(r->Responses[0].TopicId.b, id.b, 16) == 0);
	}
	CH_CHECK(registry_topic(b, name) == NULL);

	/* Gone: the same request again. */
	CALL(again, ch_DeleteTopicsResponse, b, a, CH_APIKEY_DELETE_TOPICS, v, &q);
	CH_CHECK_EQ_INT(again->Responses_n, 1);
	if (again->Responses_n == 1)
		CH_CHECK_EQ_INT(again->Responses[0].ErrorCode,
				v >= 6 ? CH_KERR_UNKNOWN_TOPIC_ID
				       : CH_KERR_UNKNOWN_TOPIC_OR_PARTITION);
}

static void
step(tb *b, int i)
{
	ch_arena a;
	ch_arena_init(&a);
	char name[64];
	snprintf(name, sizeof(name), "topic-%d", i);
	ch_uuid id = {{0}};
	create_step(b, &a, tb_version(CH_APIKEY_CREATE_TOPICS, i), name, &id);
	metadata_step(b, &a, tb_version(CH_APIKEY_METADATA, i), name, id, 2);
	configs_step(b, &a, tb_version(CH_APIKEY_DESCRIBE_CONFIGS, i), name);
	partitions_step(b, &a, tb_version(CH_APIKEY_CREATE_PARTITIONS, i), name);
	metadata_step(b, &a, tb_version(CH_APIKEY_METADATA, i), name, id, 4);
	delete_step(b, &a, tb_version(CH_APIKEY_DELETE_TOPICS, i), name, id);
	ch_arena_reset(&a);
}

static void
t_topics_every_version(void)
{
	tb b;
	tb_open(&b, NULL, 0);
	int steps = tb_steps(family, CH_ARRAY_LEN(family));
	for (int i = 0; i < steps; i++)
		step(&b, i);
	printf("topic admin family: %d steps, %zu requests\n", steps, b.n_reqs);
	CH_CHECK_EQ_INT(tb_close(&b), 0);
}

CH_TEST_MAIN(CH_TEST(t_topics_every_version))
