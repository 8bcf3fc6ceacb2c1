/*
 * ch_api_topics.c: CreateTopics, DeleteTopics, CreatePartitions.
 *
 * cohortd is a one-broker cluster: a replication factor of 1 (or -1, "the
 * broker default") is all it can honour; anything else is
 * INVALID_REPLICATION_FACTOR, as Kafka answers when there are fewer brokers
 * than replicas. Manual replica assignments are accepted when every replica
 * list is exactly [this node].
 */
#include <stdio.h>
#include <string.h>

#include "api/ch_api.h"
#include "proto/ch_acl.h"
#include "broker/ch_broker.h"
#include "broker/ch_log_manager.h"
#include "common/ch_log.h"
#include "proto/generated/ch_errors.h"

typedef ch_CreateTopicsRequest_CreatableTopic ct_req;
typedef ch_CreateTopicsResponse_CreatableTopicResult ct_res;

/* Whether names[i] appears again among the request's n names, before or after i. */
static bool
duplicated(const ch_str *names, int32_t n, int32_t i)
{
	/* O(n^2) over one request's topics: admin requests name few topics. */
	for (int32_t j = 0; j < n; j++)
		if (j != i && ch_str_eq(names[j], names[i]))
			return true;
	return false;
}

/* A name that appeared earlier in the request: Kafka answers a duplicated
 * name once ("Duplicate topic name."), not once per entry. */
static bool
seen_before(const ch_str *names, int32_t i)
{
	for (int32_t j = 0; j < i; j++)
		if (ch_str_eq(names[j], names[i]))
			return true;
	return false;
}

#define DUPLICATE_TOPIC "Duplicate topic name."

static char *
arena_msg(ch_req *req, const char *msg)
{
	return ch_req_strdup(req, ch_str_c(msg));
}

/* A CreateTopics result carrying an error: Kafka's -1 counts and an empty
 * config list; msg NULL gives the error's default message. */
static void
set_error(ch_req *req, ct_res *r, int16_t err, const char *msg)
{
	r->ErrorCode = err;
	r->ErrorMessage = ch_str_c(arena_msg(req, msg ? msg : ch_kerr_message(err)));
	r->NumPartitions = -1;
	r->ReplicationFactor = -1;
	r->Configs = NULL;
	r->Configs_n = 0; /* Kafka: an empty list, not null */
}

/* Kafka's validateManualPartitionAssignment for one replica list: on one
 * broker the only valid list is [this node]. */
static int16_t
check_replicas(ch_req *req, const int32_t *ids, int32_t n, char *msg, size_t msglen)
{
	if (n == 0) {
		snprintf(msg, msglen,
			 "The manual partition assignment includes an empty replica list.");
		return CH_KERR_INVALID_REPLICA_ASSIGNMENT;
	}
	for (int32_t i = 0; i < n; i++) {
		if (ids[i] != req->bk->node_id) {
			snprintf(msg, msglen,
				 "The manual partition assignment includes broker %d, but no such "
				 "broker is registered.",
				 ids[i]);
			return CH_KERR_INVALID_REPLICA_ASSIGNMENT;
		}
	}
	if (n > 1) {
		snprintf(msg, msglen,
			 "The manual partition assignment includes the broker %d more than once.",
			 ids[0]);
		return CH_KERR_INVALID_REPLICA_ASSIGNMENT;
	}
	return CH_KERR_NONE;
}

/* Partition count from the request's manual assignment, or an error
 * (Kafka's ReplicationControlManager.createTopic: its checks, its order). */
static int16_t
check_assignments(ch_req *req, const ct_req *t, int32_t *partitions, char *msg, size_t msglen)
{
	if (t->ReplicationFactor != -1) {
		snprintf(msg, msglen,
			 "A manual partition assignment was specified, but replication "
			 "factor was not set to -1.");
		return CH_KERR_INVALID_REQUEST;
	}
	if (t->NumPartitions != -1) {
		snprintf(msg, msglen,
			 "A manual partition assignment was specified, but numPartitions "
			 "was not set to -1.");
		return CH_KERR_INVALID_REQUEST;
	}
	for (int32_t i = 0; i < t->Assignments_n; i++) {
		const ch_CreateTopicsRequest_CreatableReplicaAssignment *a = &t->Assignments[i];
		for (int32_t j = 0; j < i; j++)
			if (t->Assignments[j].PartitionIndex == a->PartitionIndex) {
				snprintf(msg, msglen,
					 "Found multiple manual partition assignments for "
					 "partition %d",
					 a->PartitionIndex);
				return CH_KERR_INVALID_REPLICA_ASSIGNMENT;
			}
		int16_t err =
			check_replicas(req, a->BrokerIds, CH_MAX(a->BrokerIds_n, 0), msg, msglen);
		if (err)
			return err;
	}
	for (int32_t i = 0; i < t->Assignments_n; i++)
		if (t->Assignments[i].PartitionIndex < 0 ||
		    t->Assignments[i].PartitionIndex >= t->Assignments_n) {
			snprintf(msg, msglen,
				 "partitions should be a consecutive 0-based integer sequence");
			return CH_KERR_INVALID_REPLICA_ASSIGNMENT;
		}
	*partitions = t->Assignments_n;
	return CH_KERR_NONE;
}

/* CreateTopics v5+: the new topic's resolved configs (its overrides over the
 * broker's defaults), as DescribeConfigs would list them. */
static void
describe_created(ch_req *req, ct_res *r, const ch_topic_kv *kv, size_t n)
{
	const ch_config *cfg = req->bk->cfg;
	size_t count = ch_topic_config_count();
	r->Configs = CH_REQ_NEW_ARRAY(req, ch_CreateTopicsResponse_CreatableTopicConfigs, count);
	r->Configs_n = 0;
	size_t it = 0;
	ch_config_entry e;
	while (ch_topic_config_next(cfg, kv, n, &it, &e) && (size_t)r->Configs_n < count) {
		ch_CreateTopicsResponse_CreatableTopicConfigs *c = &r->Configs[r->Configs_n++];
		c->Name = ch_str_c(arena_msg(req, e.name));
		c->Value = e.value ? ch_str_c(arena_msg(req, e.value)) : CH_STR_NULL;
		c->ReadOnly = e.read_only;
		c->ConfigSource = e.source;
		c->IsSensitive = e.sensitive;
	}
}

/* A request whose answer waits for its registry transaction: the response
 * lives in the request's arena; staged[i] says item i is in the
 * transaction, so its result is the transaction's. */
typedef struct admin_ctx {
	ch_req *req;
	bool *staged;
	union {
		ch_CreateTopicsResponse create;
		ch_DeleteTopicsResponse del;
		ch_CreatePartitionsResponse parts;
	} resp;
} admin_ctx;

/* A zeroed context in req's arena with staged[] for n items (n >= 0: callers clamp it); the
 * caller initialises the response in it. */
static admin_ctx *
admin_ctx_new(ch_req *req, int32_t n)
{
	admin_ctx *c = ch_req_alloc(req, sizeof(*c));
	c->req = req;
	c->staged = CH_REQ_NEW_ARRAY(req, bool, n);
	return c;
}

/* The CreateTopics transaction is durable (err 0) or failed: staged topics
 * get the transaction's result, then the response goes. */
static void
created(void *ud, int16_t err, const char *msg)
{
	admin_ctx *c = ud;
	ch_CreateTopicsResponse *resp = &c->resp.create;
	for (int32_t i = 0; i < resp->Topics_n; i++) {
		if (!c->staged[i])
			continue;
		ct_res *r = &resp->Topics[i];
		if (err)
			set_error(c->req, r, err, msg);
		else
			CH_LOGI("api", "created topic '%.*s' (%d partitions) for %s", r->Name.len,
				r->Name.p, r->NumPartitions, c->req->peer);
	}
	ch_api_send(c->req, resp);
}

void
ch_api_CreateTopics(ch_req *req)
{
	const ch_CreateTopicsRequest *rq = req->body;
	ch_broker *bk = req->bk;
	int32_t n = rq->Topics_n > 0 ? rq->Topics_n : 0;
	admin_ctx *ctx = admin_ctx_new(req, n);
	ch_CreateTopicsResponse *resp = &ctx->resp.create;
	ch_CreateTopicsResponse_init(resp);
	resp->Topics = CH_REQ_NEW_ARRAY(req, ct_res, n);
	resp->Topics_n = 0;
	ch_str *names = CH_REQ_NEW_ARRAY(req, ch_str, n);
	for (int32_t i = 0; i < n; i++)
		names[i] = rq->Topics[i].Name;

	/* CREATE on the cluster or the topic; DESCRIBE_CONFIGS to see its
	 * configs (ControllerApis.createTopics). */
	bool cluster_create = ch_api_cluster_allowed(req, CH_ACL_CREATE);
	bool mutation_quota = ch_api_quota_mutation_applies(req);
	int32_t throttle = 0;
	ch_topics_txn *tx = ch_topics_begin(bk->topics);
	for (int32_t i = 0; i < n; i++) {
		const ct_req *t = &rq->Topics[i];
		if (seen_before(names, i))
			continue;
		int32_t ri = resp->Topics_n++; /* results, and ctx->staged, per distinct name */
		ct_res *r = &resp->Topics[ri];
		char msg[512] = "";
		r->Name = t->Name;
		if (duplicated(names, n, i)) {
			set_error(req, r, CH_KERR_INVALID_REQUEST, DUPLICATE_TOPIC);
			continue;
		}
		if (!cluster_create &&
		    !ch_api_allowed_str(req, CH_ACL_CREATE, CH_RES_TOPIC, t->Name)) {
			set_error(req, r, CH_KERR_TOPIC_AUTHORIZATION_FAILED,
				  "Authorization failed.");
			continue;
		}
		int32_t partitions =
			t->NumPartitions == -1 ? bk->cfg->num_partitions : t->NumPartitions;
		int16_t rf = t->ReplicationFactor == -1
				     ? (int16_t)bk->cfg->default_replication_factor
				     : t->ReplicationFactor;
		int16_t err = CH_KERR_NONE;
		if (t->Assignments_n > 0) {
			err = check_assignments(req, t, &partitions, msg, sizeof(msg));
			rf = 1;
		} else if (partitions <= 0) {
			err = CH_KERR_INVALID_PARTITIONS;
			snprintf(msg, sizeof(msg),
				 "Number of partitions was set to an invalid non-positive value.");
		} else if (rf <= 0) {
			err = CH_KERR_INVALID_REPLICATION_FACTOR;
			snprintf(msg, sizeof(msg),
				 "Replication factor must be larger than 0, or -1 to use the "
				 "default "
				 "value.");
		} else if (rf > 1) {
			err = CH_KERR_INVALID_REPLICATION_FACTOR;
			snprintf(msg, sizeof(msg),
				 "Unable to replicate the partition %d time(s): The target "
				 "replication factor of %d cannot be reached because only 1 "
				 "broker(s) are registered or some brokers have all their log "
				 "directories cordoned.",
				 rf, rf);
		}
		if (err) {
			set_error(req, r, err, msg);
			continue;
		}
		int32_t nkv = t->Configs_n > 0 ? t->Configs_n : 0;
		ch_topic_kv *kv = CH_REQ_NEW_ARRAY(req, ch_topic_kv, nkv);
		for (int32_t k = 0; k < nkv && !err; k++) {
			const ch_CreateTopicsRequest_CreatableTopicConfig *c = &t->Configs[k];
			if (ch_str_is_null(c->Value)) {
				err = CH_KERR_INVALID_CONFIG;
				snprintf(msg, sizeof(msg),
					 "Null value not supported for topic configs: %.*s",
					 c->Name.len > 0 ? c->Name.len : 0, c->Name.p);
			}
			kv[k].key = ch_req_strdup(req, c->Name);
			kv[k].value = ch_req_strdup(req, c->Value);
		}
		if (err) {
			set_error(req, r, err, msg);
			continue;
		}
		const ch_topic *tp = NULL;
		size_t name_len = (size_t)(t->Name.len > 0 ? t->Name.len : 0);
		/* controller_mutation_rate after every other check, as the
		 * controller's createTopic: validated first when it may refuse */
		if (mutation_quota) {
			err = ch_topics_create(tx, t->Name.p, name_len, partitions, kv, (size_t)nkv,
					       true, &tp, msg, sizeof(msg));
			if (!err)
				err = ch_api_quota_mutation(req, partitions, 6, &throttle);
		}
		if (!err && !(mutation_quota && rq->validateOnly))
			err = ch_topics_create(tx, t->Name.p, name_len, partitions, kv, (size_t)nkv,
					       rq->validateOnly, &tp, msg, sizeof(msg));
		if (err) {
			set_error(req, r, err, msg[0] ? msg : NULL);
			if (err == CH_KERR_THROTTLING_QUOTA_EXCEEDED)
				r->ErrorMessage = CH_STR_NULL; /* Kafka sends none */
			continue;
		}
		r->ErrorCode = CH_KERR_NONE;
		r->ErrorMessage = CH_STR_NULL;
		/* validate_only too is answered with an id (never used), as Kafka does */
		r->TopicId = tp ? tp->id : ch_uuid_random();
		r->NumPartitions = partitions;
		r->ReplicationFactor = rf;
		if (ch_api_allowed_str(req, CH_ACL_DESCRIBE_CONFIGS, CH_RES_TOPIC, t->Name))
			describe_created(req, r, kv, (size_t)nkv);
		else
			r->TopicConfigErrorCode = CH_KERR_TOPIC_AUTHORIZATION_FAILED;
		ctx->staged[ri] = !rq->validateOnly;
	}
	resp->ThrottleTimeMs = throttle;
	ch_api_quota_throttle(req, throttle);
	ch_topics_commit(tx, created, ctx);
}

/* The DeleteTopics transaction is durable or failed: on success each deleted
 * topic's logs are closed and removed too, then the response goes. */
static void
deleted(void *ud, int16_t err, const char *msg)
{
	admin_ctx *c = ud;
	ch_broker *bk = c->req->bk;
	ch_DeleteTopicsResponse *resp = &c->resp.del;
	for (int32_t i = 0; i < resp->Responses_n; i++) {
		if (!c->staged[i])
			continue;
		ch_DeleteTopicsResponse_DeletableTopicResult *r = &resp->Responses[i];
		if (err) {
			r->ErrorCode = err;
			r->ErrorMessage = ch_str_c(arena_msg(c->req, msg));
			continue;
		}
		CH_LOGI("api", "deleted topic '%.*s' for %s", r->Name.len, r->Name.p, c->req->peer);
		if (bk->logs && r->Name.len > 0) /* the logs go too */
			ch_log_manager_topic_deleted(bk->logs, r->Name.p, (size_t)r->Name.len);
	}
	ch_api_send(c->req, resp);
}

enum {
	DEL_BY_NAME,
	DEL_BY_ID,
	DEL_OTHER
};

/* How a DeleteTopics entry names its topic: by name, by id, or wrongly
 * (both, or neither). */
static int
delete_kind(ch_str name, const ch_uuid *id)
{
	if (!ch_str_is_null(name) && ch_uuid_is_zero(id))
		return DEL_BY_NAME;
	if (ch_str_is_null(name) && !ch_uuid_is_zero(id))
		return DEL_BY_ID;
	return DEL_OTHER;
}

void
ch_api_DeleteTopics(ch_req *req)
{
	const ch_DeleteTopicsRequest *rq = req->body;
	ch_broker *bk = req->bk;
	/* v0-5 name topics; v6 names or ids. Normalise to (name, id) pairs. */
	int32_t n = req->version >= 6 ? rq->Topics_n : rq->TopicNames_n;
	if (n < 0)
		n = 0;
	admin_ctx *ctx = admin_ctx_new(req, n);
	ch_DeleteTopicsResponse *resp = &ctx->resp.del;
	ch_DeleteTopicsResponse_init(resp);
	resp->Responses = CH_REQ_NEW_ARRAY(req, ch_DeleteTopicsResponse_DeletableTopicResult, n);
	resp->Responses_n = 0;
	ch_str *names = CH_REQ_NEW_ARRAY(req, ch_str, n);
	ch_uuid *ids = CH_REQ_NEW_ARRAY(req, ch_uuid, n);
	for (int32_t i = 0; i < n; i++) {
		names[i] = req->version >= 6 ? rq->Topics[i].Name : rq->TopicNames[i];
		ids[i] = req->version >= 6 ? rq->Topics[i].TopicId : (ch_uuid){{0}};
	}
	/* DELETE on the cluster allows every topic; else DESCRIBE and DELETE
	 * on each (ControllerApis.deleteTopics). */
	bool cluster_delete = ch_api_cluster_allowed(req, CH_ACL_DELETE);
	int32_t throttle = 0;
	ch_topics_txn *tx = ch_topics_begin(bk->topics);
	for (int32_t i = 0; i < n; i++) {
		ch_str name = names[i];
		ch_uuid id = ids[i];
		/* Kafka's ControllerApis.deleteTopics: a name or an id given twice
		 * is answered once, as an error. */
		int kind = delete_kind(name, &id);
		bool by_id = kind == DEL_BY_ID, dup = false, again = false;
		for (int32_t j = 0; j < n && kind != DEL_OTHER; j++) {
			bool same = delete_kind(names[j], &ids[j]) == kind &&
				    (by_id ? ch_uuid_eq(&ids[j], &id) : ch_str_eq(names[j], name));
			dup |= j != i && same;
			again |= j < i && same;
		}
		if (again)
			continue;
		int32_t ri = resp->Responses_n++; /* results, and ctx->staged, per distinct topic */
		ch_DeleteTopicsResponse_DeletableTopicResult *r = &resp->Responses[ri];
		char msg[512] = "";
		int16_t err;
		r->Name = name;
		r->TopicId = id;
		if (!ch_str_is_null(name) && !ch_uuid_is_zero(&id)) {
			err = CH_KERR_INVALID_REQUEST;
			snprintf(msg, sizeof(msg),
				 "You may not specify both topic name and topic id.");
		} else if (dup) {
			err = CH_KERR_INVALID_REQUEST;
			snprintf(msg, sizeof(msg), by_id ? "Duplicate topic id." : DUPLICATE_TOPIC);
		} else if (!bk->cfg->delete_topic_enable) {
			err = CH_KERR_TOPIC_DELETION_DISABLED;
		} else if (!ch_str_is_null(name)) {
			const ch_topic *tp = ch_topics_find(bk->topics, name.p, (size_t)name.len);
			if (!cluster_delete &&
			    !ch_api_allowed_str(req, CH_ACL_DESCRIBE, CH_RES_TOPIC, name)) {
				err = CH_KERR_TOPIC_AUTHORIZATION_FAILED;
			} else if (tp && !cluster_delete &&
				   !ch_api_allowed_str(req, CH_ACL_DELETE, CH_RES_TOPIC, name)) {
				err = CH_KERR_TOPIC_AUTHORIZATION_FAILED;
			} else {
				if (tp)
					r->TopicId = tp->id;
				err = tp ? ch_api_quota_mutation(req, tp->partitions, 5, &throttle)
					 : 0;
				if (!err)
					err = ch_topics_delete(tx, name.p, (size_t)name.len, msg,
							       sizeof(msg));
			}
		} else if (!ch_uuid_is_zero(&id)) {
			const ch_topic *tp = ch_topics_find_id(bk->topics, &id);
			ch_str tn = tp ? ch_str_c(ch_req_strdup(
						 req, (ch_str){tp->name, (int32_t)tp->name_len}))
				       : CH_STR_NULL;
			if (tp && !cluster_delete &&
			    !ch_api_allowed_str(req, CH_ACL_DELETE, CH_RES_TOPIC, tn)) {
				/* the name only to whom may describe it; ids are not secret */
				err = CH_KERR_TOPIC_AUTHORIZATION_FAILED;
				if (ch_api_allowed_str(req, CH_ACL_DESCRIBE, CH_RES_TOPIC, tn))
					r->Name = tn;
			} else {
				r->Name = tn; /* the name goes with the topic object: copied */
				err = tp ? ch_api_quota_mutation(req, tp->partitions, 5, &throttle)
					 : 0;
				if (!err)
					err = ch_topics_delete_id(tx, &id, msg, sizeof(msg));
			}
		} else {
			err = CH_KERR_INVALID_REQUEST;
			snprintf(msg, sizeof(msg), "Neither topic name nor id were specified.");
		}
		r->ErrorCode = err;
		/* Kafka: THROTTLING_QUOTA_EXCEEDED without a message */
		r->ErrorMessage =
			err && err != CH_KERR_THROTTLING_QUOTA_EXCEEDED
				? ch_str_c(arena_msg(req, msg[0] ? msg : ch_kerr_message(err)))
				: CH_STR_NULL;
		ctx->staged[ri] = err == 0;
	}
	if (req->version >= 1)
		resp->ThrottleTimeMs = throttle;
	ch_api_quota_throttle(req, throttle);
	ch_topics_commit(tx, deleted, ctx);
}

/* The CreatePartitions transaction is durable or failed: staged topics get
 * its result, then the response goes. */
static void
partitions_added(void *ud, int16_t err, const char *msg)
{
	admin_ctx *c = ud;
	ch_CreatePartitionsResponse *resp = &c->resp.parts;
	for (int32_t i = 0; i < resp->Results_n; i++) {
		if (!c->staged[i])
			continue;
		ch_CreatePartitionsResponse_CreatePartitionsTopicResult *r = &resp->Results[i];
		if (err) {
			r->ErrorCode = err;
			r->ErrorMessage = ch_str_c(arena_msg(c->req, msg));
		} else {
			CH_LOGI("api", "topic '%.*s' has more partitions (for %s)", r->Name.len,
				r->Name.p, c->req->peer);
		}
	}
	ch_api_send(c->req, resp);
}

void
ch_api_CreatePartitions(ch_req *req)
{
	const ch_CreatePartitionsRequest *rq = req->body;
	ch_broker *bk = req->bk;
	int32_t n = rq->Topics_n > 0 ? rq->Topics_n : 0;
	admin_ctx *ctx = admin_ctx_new(req, n);
	ch_CreatePartitionsResponse *resp = &ctx->resp.parts;
	ch_CreatePartitionsResponse_init(resp);
	resp->Results =
		CH_REQ_NEW_ARRAY(req, ch_CreatePartitionsResponse_CreatePartitionsTopicResult, n);
	resp->Results_n = 0;
	ch_str *names = CH_REQ_NEW_ARRAY(req, ch_str, n);
	for (int32_t i = 0; i < n; i++)
		names[i] = rq->Topics[i].Name;
	int32_t throttle = 0;
	ch_topics_txn *tx = ch_topics_begin(bk->topics);
	for (int32_t i = 0; i < n; i++) {
		const ch_CreatePartitionsRequest_CreatePartitionsTopic *t = &rq->Topics[i];
		if (seen_before(names, i))
			continue;
		int32_t ri = resp->Results_n++; /* results, and ctx->staged, per distinct name */
		ch_CreatePartitionsResponse_CreatePartitionsTopicResult *r = &resp->Results[ri];
		char msg[512] = "";
		int16_t err = CH_KERR_NONE;
		r->Name = t->Name;
		const ch_topic *tp = ch_topics_find(bk->topics, t->Name.p, (size_t)t->Name.len);
		if (duplicated(names, n, i)) {
			err = CH_KERR_INVALID_REQUEST;
			snprintf(msg, sizeof(msg), DUPLICATE_TOPIC);
		} else if (!ch_api_allowed_str(req, CH_ACL_ALTER, CH_RES_TOPIC, t->Name)) {
			err = CH_KERR_TOPIC_AUTHORIZATION_FAILED; /* Kafka: no message */
		} else if (tp && t->Count > tp->partitions && t->Assignments_n >= 0) {
			/* Kafka's createPartitions: the count first, then each new
			 * partition's replicas ([this node] on one broker). */
			if (t->Assignments_n != t->Count - tp->partitions) {
				err = CH_KERR_INVALID_REPLICA_ASSIGNMENT;
				snprintf(msg, sizeof(msg),
					 "Attempted to add %d additional partition(s), but only %d "
					 "assignment(s) were specified.",
					 t->Count - tp->partitions, t->Assignments_n);
			}
			for (int32_t a = 0; a < t->Assignments_n && !err; a++)
				err = check_replicas(req, t->Assignments[a].BrokerIds,
						     CH_MAX(t->Assignments[a].BrokerIds_n, 0), msg,
						     sizeof(msg));
		}
		bool denied = err == CH_KERR_TOPIC_AUTHORIZATION_FAILED;
		/* the controller's createPartitions: the quota after the checks
		 * of the count and the assignments */
		if (!err && tp && t->Count > tp->partitions)
			err = ch_api_quota_mutation(req, t->Count - tp->partitions, 3, &throttle);
		if (!err)
			err = ch_topics_add_partitions(tx, t->Name.p, (size_t)t->Name.len, t->Count,
						       rq->ValidateOnly, msg, sizeof(msg));
		r->ErrorCode = err;
		/* Kafka's UnknownTopicOrPartitionException here carries no message,
		 * nor does THROTTLING_QUOTA_EXCEEDED. */
		r->ErrorMessage =
			err && err != CH_KERR_UNKNOWN_TOPIC_OR_PARTITION && !denied &&
					err != CH_KERR_THROTTLING_QUOTA_EXCEEDED
				? ch_str_c(arena_msg(req, msg[0] ? msg : ch_kerr_message(err)))
				: CH_STR_NULL;
		ctx->staged[ri] = !err && !rq->ValidateOnly;
	}
	resp->ThrottleTimeMs = throttle;
	ch_api_quota_throttle(req, throttle);
	ch_topics_commit(tx, partitions_added, ctx);
}
