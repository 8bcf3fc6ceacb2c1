/*
 * What the broker is and speaks, at every version, against a whole broker
 * without sockets (api_harness.h): ApiVersions (the handler table itself,
 * KIP-511 client names, the v0 UNSUPPORTED_VERSION answer to a version it
 * does not know, header v0 always), DescribeCluster, and the requests that
 * Kafka answers by closing the connection.
 */
#include <stdio.h>
#include <string.h>

#include "api_flows.h"
#include "common/ch_common.h"
#include "proto/ch_wr.h"

/* ApiKeys must list the handler table, in its order, with its ranges. */
typedef struct table_check {
	const ch_ApiVersionsResponse *r;
	int32_t i;
	bool same;
} table_check;

static void
check_entry(const ch_api_handler *h, void *ud)
{
	table_check *t = ud;
	if (t->i >= t->r->ApiKeys_n) {
		t->same = false;
		return;
	}
	const ch_ApiVersionsResponse_ApiVersion *k = &t->r->ApiKeys[t->i++];
	if (k->ApiKey != h->key || k->MinVersion != h->min_version ||
	    k->MaxVersion != h->max_version) {
		fprintf(stderr, "  ApiKeys[%d] = %d v%d-%d, table has %d v%d-%d\n", t->i - 1,
			k->ApiKey, k->MinVersion, k->MaxVersion, h->key, h->min_version,
			h->max_version);
		t->same = false;
	}
}

static bool
lists_the_table(const ch_ApiVersionsResponse *r)
{
	table_check t = {r, 0, true};
	ch_api_foreach_handler(check_entry, &t);
	return t.same && t.i == r->ApiKeys_n;
}

static void
t_api_versions(void)
{
	tb b;
	tb_open(&b, NULL, 0);
	ch_arena a;
	ch_arena_init(&a);
	const ch_api_handler *h = ch_api_handler_find(CH_APIKEY_API_VERSIONS);
	CH_CHECK(h != NULL);
	for (int16_t v = h ? h->min_version : 0; h && v <= h->max_version; v++) {
		ch_ApiVersionsRequest q;
		ch_ApiVersionsRequest_init(&q);
		q.ClientSoftwareName = ch_str_c("api-test");
		q.ClientSoftwareVersion = ch_str_c("1.0.0");
		/* tb_decode also checks the header: v0 here at every version. */
		ch_ApiVersionsResponse *r = tb_call(&b, CH_APIKEY_API_VERSIONS, v, &q, &a);
		CH_CHECK(r != NULL);
		if (r) {
			CH_CHECK_EQ_INT(r->ErrorCode, 0);
			CH_CHECK(lists_the_table(r));
			CH_CHECK_EQ_INT(r->ThrottleTimeMs, 0);
		}
		if (v >= 3) {
			/* KIP-511: names are [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? */
			q.ClientSoftwareName = ch_str_c("bad name");
			r = tb_call(&b, CH_APIKEY_API_VERSIONS, v, &q, &a);
			CH_CHECK(r && r->ErrorCode == CH_KERR_INVALID_REQUEST);
			q.ClientSoftwareName = ch_str_c("api-test");
			q.ClientSoftwareVersion = ch_str_c("1.0.");
			r = tb_call(&b, CH_APIKEY_API_VERSIONS, v, &q, &a);
			CH_CHECK(r && r->ErrorCode == CH_KERR_INVALID_REQUEST);
		}
	}
	/* A version from the future: Kafka answers v0 UNSUPPORTED_VERSION with
	 * its ranges (and reads no body), so the client can retry. */
	int16_t future[2] = {(int16_t)(h ? h->max_version + 1 : 5), 300};
	for (int k = 0; k < 2; k++) {
		ch_buf f;
		ch_buf_init(&f);
		ch_RequestHeader hd;
		ch_RequestHeader_init(&hd);
		hd.RequestApiKey = CH_APIKEY_API_VERSIONS;
		hd.RequestApiVersion = future[k];
		hd.CorrelationId = 4242;
		hd.ClientId = ch_str_c("api-test");
		ch_RequestHeader_encode(&f, 2, &hd);
		ch_wr_uvarint(&f, 0);
		ch_buf_append(&f, "some future body", 16);
		uint64_t seq =
			tb_send_frame(&b, f.data, f.len, CH_APIKEY_API_VERSIONS, future[k], 4242);
		ch_buf_free(&f);
		CH_CHECK(tb_wait(&b, seq));
		ch_ApiVersionsResponse *r = tb_decode_at(&b, seq, 0, &a);
		CH_CHECK(r != NULL);
		if (r) {
			CH_CHECK_EQ_INT(r->ErrorCode, CH_KERR_UNSUPPORTED_VERSION);
			/* only ApiVersions' own range, as Kafka answers */
			const ch_api_handler *av = ch_api_handler_find(CH_APIKEY_API_VERSIONS);
			CH_CHECK(av && r->ApiKeys_n == 1 &&
				 r->ApiKeys[0].ApiKey == CH_APIKEY_API_VERSIONS &&
				 r->ApiKeys[0].MinVersion == av->min_version &&
				 r->ApiKeys[0].MaxVersion == av->max_version);
		}
	}
	ch_arena_reset(&a);
	CH_CHECK_EQ_INT(tb_close(&b), 0);
}

static void
t_describe_cluster(void)
{
	tb b;
	tb_open(&b, NULL, 0);
	ch_arena a;
	ch_arena_init(&a);
	const ch_api_handler *h = ch_api_handler_find(CH_APIKEY_DESCRIBE_CLUSTER);
	CH_CHECK(h != NULL);
	for (int16_t v = h ? h->min_version : 0; h && v <= h->max_version; v++) {
		for (int ops = 0; ops < 2; ops++) {
			ch_DescribeClusterRequest q;
			ch_DescribeClusterRequest_init(&q);
			q.IncludeClusterAuthorizedOperations = ops;
			q.EndpointType = 1;
			ch_DescribeClusterResponse *r =
				tb_call(&b, CH_APIKEY_DESCRIBE_CLUSTER, v, &q, &a);
			CH_CHECK(r != NULL);
			if (!r)
				continue;
			CH_CHECK_EQ_INT(r->ErrorCode, 0);
			CH_CHECK_STR(r->ClusterId, b.bk.cluster_id);
			CH_CHECK_EQ_INT(r->ControllerId, b.bk.node_id);
			CH_CHECK_EQ_INT(r->Brokers_n, 1);
			if (r->Brokers_n == 1) {
				CH_CHECK_EQ_INT(r->Brokers[0].BrokerId, b.bk.node_id);
				CH_CHECK_STR(r->Brokers[0].Host, b.bk.adv_host);
				CH_CHECK_EQ_INT(r->Brokers[0].Port, b.bk.adv_port);
				CH_CHECK(ch_str_is_null(r->Brokers[0].Rack));
			}
			if (ops)
				CH_CHECK(r->ClusterAuthorizedOperations != INT32_MIN &&
					 r->ClusterAuthorizedOperations != 0);
			else
				CH_CHECK_EQ_INT(r->ClusterAuthorizedOperations, INT32_MIN);
			if (v >= 1)
				CH_CHECK_EQ_INT(r->EndpointType, 1);
		}
		if (v >= 1) {
			/* KIP-919: controllers (2) are not served here. */
			ch_DescribeClusterRequest q;
			ch_DescribeClusterRequest_init(&q);
			q.EndpointType = 2;
			ch_DescribeClusterResponse *r =
				tb_call(&b, CH_APIKEY_DESCRIBE_CLUSTER, v, &q, &a);
			CH_CHECK(r && r->ErrorCode == CH_KERR_UNSUPPORTED_ENDPOINT_TYPE);
		}
	}
	ch_arena_reset(&a);
	CH_CHECK_EQ_INT(tb_close(&b), 0);
}

/* Frames Kafka does not answer: it closes the connection. */
static void
t_closed_for_protocol_errors(void)
{
	tb b;
	tb_open(&b, NULL, 0);
	/* Shorter than a request header. */
	static const uint8_t tiny[3] = {0, 3, 0};
	uint64_t seq = tb_send_frame(&b, tiny, sizeof(tiny), CH_APIKEY_METADATA, 0, 0);
	CH_CHECK(tb_wait(&b, seq) && tb_get(&b, seq)->closes == 1);

	/* An api key nobody has. */
	ch_buf f;
	ch_buf_init(&f);
	ch_RequestHeader hd;
	ch_RequestHeader_init(&hd);
	hd.RequestApiKey = 9999;
	hd.RequestApiVersion = 0;
	hd.CorrelationId = 1;
	hd.ClientId = ch_str_c("api-test");
	ch_RequestHeader_encode(&f, 1, &hd);
	seq = tb_send_frame(&b, f.data, f.len, 9999, 0, 1);
	CH_CHECK(tb_wait(&b, seq) && tb_get(&b, seq)->closes == 1);

	/* A body cut short: Metadata v1 promising two topics, naming one. */
	ch_buf_reset(&f);
	hd.RequestApiKey = CH_APIKEY_METADATA;
	hd.RequestApiVersion = 1;
	ch_RequestHeader_encode(&f, 1, &hd);
	ch_wr_i32(&f, 2);
	ch_wr_str(&f, ch_str_c("only-one"), false);
	seq = tb_send_frame(&b, f.data, f.len, CH_APIKEY_METADATA, 1, 1);
	CH_CHECK(tb_wait(&b, seq) && tb_get(&b, seq)->closes == 1);
	CH_CHECK_EQ_INT(tb_get(&b, seq)->replies, 0);

	/* A flexible request with a non-flexible header (no tagged fields):
	 * the body then starts one byte early and does not decode. */
	ch_buf_reset(&f);
	hd.RequestApiKey = CH_APIKEY_METADATA;
	hd.RequestApiVersion = 12;
	ch_RequestHeader_encode(&f, 1, &hd);
	ch_wr_uvarint(&f, 0); /* Topics: null */
	seq = tb_send_frame(&b, f.data, f.len, CH_APIKEY_METADATA, 12, 1);
	CH_CHECK(tb_wait(&b, seq) && tb_get(&b, seq)->closes == 1);
	ch_buf_free(&f);
	CH_CHECK_EQ_INT(tb_close(&b), 0);
}

CH_TEST_MAIN(CH_TEST(t_api_versions), CH_TEST(t_describe_cluster),
	     CH_TEST(t_closed_for_protocol_errors))
