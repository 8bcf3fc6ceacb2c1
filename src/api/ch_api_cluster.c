/*
 * ch_api_cluster.c: ApiVersions and DescribeCluster: what this broker is and
 * what it speaks.
 */
#include <string.h>

#include "api/ch_api.h"
#include "broker/ch_broker.h"
#include "common/ch_common.h"
#include "proto/ch_acl.h"
#include "proto/generated/ch_errors.h"

typedef struct versions_ctx {
	ch_ApiVersionsResponse_ApiVersion *keys;
	int32_t n;
} versions_ctx;

/* ch_api_foreach_handler callback: appends h's key and version range to c->keys, which the
 * caller sized by counting the handlers first. */
static void
add_version(const ch_api_handler *h, void *ud)
{
	versions_ctx *c = ud;
	ch_ApiVersionsResponse_ApiVersion *k = &c->keys[c->n++];
	k->ApiKey = h->key;
	k->MinVersion = h->min_version;
	k->MaxVersion = h->max_version;
}

static void
count_handler(const ch_api_handler *h, void *ud)
{
	(void)h;
	(*(int32_t *)ud)++;
}

void
ch_api_versions_fill(ch_req *req, ch_ApiVersionsResponse *resp)
{
	int32_t n = 0;
	ch_api_foreach_handler(count_handler, &n);
	versions_ctx c = {CH_REQ_NEW_ARRAY(req, ch_ApiVersionsResponse_ApiVersion, n), 0};
	ch_api_foreach_handler(add_version, &c);
	resp->ApiKeys = c.keys;
	resp->ApiKeys_n = c.n;
}

/* KIP-511: client software name and version must match
 * [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? */
static bool
valid_software_field(ch_str s)
{
	if (s.len <= 0)
		return false;
	for (int32_t i = 0; i < s.len; i++) {
		char ch = s.p[i];
		bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			     (ch >= '0' && ch <= '9');
		bool inner = ch == '-' || ch == '.';
		if (!alnum && (!inner || i == 0 || i == s.len - 1))
			return false;
	}
	return true;
}

void
ch_api_ApiVersions(ch_req *req)
{
	const ch_ApiVersionsRequest *rq = req->body;
	ch_ApiVersionsResponse resp;
	ch_ApiVersionsResponse_init(&resp);
	if (req->version >= 3 && (!valid_software_field(rq->ClientSoftwareName) ||
				  !valid_software_field(rq->ClientSoftwareVersion))) {
		resp.ErrorCode = CH_KERR_INVALID_REQUEST;
		ch_api_send(req, &resp);
		return;
	}
	ch_api_versions_fill(req, &resp);
	ch_api_send(req, &resp);
}

void
ch_api_DescribeCluster(ch_req *req)
{
	const ch_DescribeClusterRequest *rq = req->body;
	ch_broker *bk = req->bk;
	ch_DescribeClusterResponse resp;
	ch_DescribeClusterResponse_init(&resp);
	resp.EndpointType = rq->EndpointType;
	if (req->version >= 1 && rq->EndpointType != 1) {
		/* Only broker endpoints: cohortd has no separate controllers. */
		resp.ErrorCode = CH_KERR_UNSUPPORTED_ENDPOINT_TYPE;
		resp.ErrorMessage = ch_str_c("cohortd serves only the broker endpoint type (1)");
		ch_api_send(req, &resp);
		return;
	}
	resp.ClusterId = ch_str_c(bk->cluster_id);
	resp.ControllerId = bk->node_id;
	resp.Brokers = CH_REQ_NEW_ARRAY(req, ch_DescribeClusterResponse_DescribeClusterBroker, 1);
	resp.Brokers_n = 1;
	resp.Brokers[0].BrokerId = bk->node_id;
	resp.Brokers[0].Host = ch_str_c(ch_api_adv_host(req));
	resp.Brokers[0].Port = ch_api_adv_port(req);
	resp.Brokers[0].Rack = ch_str_c(bk->cfg->broker_rack);
	resp.ClusterAuthorizedOperations =
		rq->IncludeClusterAuthorizedOperations ? ch_api_cluster_ops(req) : INT32_MIN;
	ch_api_send(req, &resp);
}
