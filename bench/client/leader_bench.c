/*
 * leader_bench: a libcohort group leader assigning a very large group, timed
 * from the outside.
 *
 *   leader_bench MEMBERS TOPICS PARTITIONS_PER_TOPIC [ASSIGNOR]
 *
 * One real libcohort consumer (this process, cohort_subscribe to every
 * topic, cooperative-sticky unless ASSIGNOR says otherwise) joins a group
 * served by a fake coordinator in this same process: a small blocking
 * Kafka-protocol server on 127.0.0.1 that answers ApiVersions, Metadata
 * (TOPICS x PARTITIONS_PER_TOPIC partitions, all led by itself),
 * FindCoordinator, JoinGroup, SyncGroup and Heartbeat with the project's
 * generated codec, OffsetFetch with offset 0 for every partition, and Fetch
 * with nothing after its wait (the member pauses every partition in its
 * assigned callback, so no more fetches follow). Its JoinGroup
 * answer makes the libcohort member the leader of MEMBERS members: itself
 * plus MEMBERS-1 simulated members whose subscription metadata is what a
 * cooperative-sticky member sends (src/assign's ch_assign_member_metadata:
 * every topic, the partitions it owns, its generation), as bench/groups'
 * loadgen.c simulates members over raw protocol. Nothing but the leader
 * runs a client: the other members exist only in the JoinGroup answer.
 *
 * Two rounds: "fresh" (generation 1, nobody owns anything) and "steady"
 * (generation 2 after a Heartbeat answered REBALANCE_IN_PROGRESS: every
 * simulated member reports the partitions round 1 gave it, the leader its
 * own). Per round, all on one CLOCK_MONOTONIC:
 *   metadata   the leader's Metadata request read -> answer written (the
 *              fake broker's encode of the whole topic list is cached)
 *   leader     JoinGroup answer starts out -> SyncGroup request fully read:
 *              the leader's whole work (the Metadata round trip it makes
 *              after the join, decoding MEMBERS subscriptions, the assignor,
 *              encoding MEMBERS assignments, the request)
 *   sync rtt   SyncGroup answer starts out -> the assigned callback running
 *              on the polling thread (decode of its own assignment)
 *   total      JoinGroup answer starts out -> assigned callback
 * and the SyncGroup request's size. The assignment in the SyncGroup is
 * checked: every partition exactly once, every member within one partition
 * of the others' counts (cooperative-sticky with equal subscriptions).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <cohort/cohort.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "assign/ch_assign.h"
#include "assign/ch_assign_proto.h"
#include "common/ch_log.h"
#include "common/ch_uuid.h"
#include "proto/ch_rd.h"
#include "proto/generated/ch_api_keys.h"
#include "proto/generated/ch_errors.h"
#include "proto/generated/ch_msgs.h"

#define GROUP "leader-bench"

static int nmembers, ntopics, nper;
static ch_assign_kind kind = CH_ASSIGN_COOPERATIVE_STICKY;
static const char *assignor_name = "cooperative-sticky";
static char **topic_names;
static ch_uuid *topic_ids;
static int port;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int round_no;         /* 1 fresh, 2 steady */
static int rebalance_wanted; /* the next Heartbeat answers REBALANCE_IN_PROGRESS */
static double t_md_in, t_md_out, t_join_out, t_sync_in, t_sync_out, t_assigned;
static size_t sync_bytes;
static int assigned_round; /* rounds whose assigned callback ran */
/* per simulated member (index 1..), the partitions round 1 gave it, by topic */
static int32_t **owned_parts; /* [member][topic * ...] flat: topic index, partition */
static int32_t *owned_n;
static int check_failed;

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
die(const char *what)
{
	fprintf(stderr, "leader_bench: %s\n", what);
	exit(1);
}

static int
read_full(int fd, void *p, size_t n)
{
	for (size_t got = 0; got < n;) {
		ssize_t r = read(fd, (char *)p + got, n - got);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static void
write_full(int fd, const void *p, size_t n)
{
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, (const char *)p + off, n - off);
		if (w <= 0)
			return; /* the client went away; the bench notices elsewhere */
		off += (size_t)w;
	}
}

/* Frames and sends body under a response header for corr (v1 when flexible, never for
 * ApiVersions); the body is not copied. */
static void
respond(int fd, int16_t api, int16_t version, int32_t corr, const ch_buf *body)
{
	const ch_api_codec *codec = ch_api_codec_find(api);
	bool flex = codec->flex_version >= 0 && version >= codec->flex_version &&
		    api != CH_APIKEY_API_VERSIONS;
	uint8_t head[9];
	size_t hlen = flex ? 9 : 8;
	uint32_t size = htonl((uint32_t)(hlen - 4 + body->len));
	uint32_t c = htonl((uint32_t)corr);
	memcpy(head, &size, 4);
	memcpy(head + 4, &c, 4);
	head[8] = 0; /* no tagged fields */
	write_full(fd, head, hlen);
	write_full(fd, body->data, body->len);
}

static void
encode_apiversions(ch_buf *b, int16_t v)
{
	ch_ApiVersionsResponse r;
	ch_ApiVersionsResponse_init(&r);
	ch_ApiVersionsResponse_ApiVersion *keys = calloc(ch_api_codecs_n, sizeof(*keys));
	for (size_t i = 0; i < ch_api_codecs_n; i++)
		keys[i] = (ch_ApiVersionsResponse_ApiVersion){ch_api_codecs[i].key,
							      ch_api_codecs[i].min_version,
							      ch_api_codecs[i].max_version};
	r.ApiKeys = keys;
	r.ApiKeys_n = (int32_t)ch_api_codecs_n;
	ch_ApiVersionsResponse_encode(b, v, &r);
	free(keys);
}

/* The whole topic list at version v, encoded once per version. */
static ch_buf md_cache[CH_METADATARESPONSE_MAX_VERSION + 1];

static const ch_buf *
metadata_body(int16_t v)
{
	ch_buf *b = &md_cache[v];
	if (b->len)
		return b;
	static int32_t zero = 0;
	ch_MetadataResponse r;
	ch_MetadataResponse_init(&r);
	ch_MetadataResponse_MetadataResponseBroker br = {0, ch_str_c("127.0.0.1"), port,
							 CH_STR_NULL};
	r.Brokers = &br;
	r.Brokers_n = 1;
	r.ClusterId = ch_str_c("leader-bench");
	r.ControllerId = 0;
	ch_MetadataResponse_MetadataResponseTopic *ts = calloc((size_t)ntopics, sizeof(*ts));
	ch_MetadataResponse_MetadataResponsePartition *ps = calloc((size_t)nper, sizeof(*ps));
	for (int32_t p = 0; p < nper; p++)
		ps[p] = (ch_MetadataResponse_MetadataResponsePartition){
			.PartitionIndex = p,
			.LeaderId = 0,
			.LeaderEpoch = 0,
			.ReplicaNodes = &zero,
			.ReplicaNodes_n = 1,
			.IsrNodes = &zero,
			.IsrNodes_n = 1,
		};
	for (int t = 0; t < ntopics; t++)
		ts[t] = (ch_MetadataResponse_MetadataResponseTopic){
			.Name = ch_str_c(topic_names[t]),
			.TopicId = topic_ids[t],
			.Partitions = ps,
			.Partitions_n = nper,
			.TopicAuthorizedOperations = INT32_MIN,
		};
	r.Topics = ts;
	r.Topics_n = ntopics;
	ch_buf_init(b);
	ch_MetadataResponse_encode(b, v, &r);
	free(ts);
	free(ps);
	return b;
}

/* A simulated member's JoinGroup metadata: every topic, what it owns (steady), its
 * generation. */
static void
member_metadata(ch_buf *b, int i, int32_t generation)
{
	static ch_str *tnames;
	if (!tnames) {
		tnames = calloc((size_t)ntopics, sizeof(*tnames));
		for (int t = 0; t < ntopics; t++)
			tnames[t] = ch_str_c(topic_names[t]);
	}
	ch_assign_tplist *owned = calloc((size_t)ntopics, sizeof(*owned));
	int32_t *byt = calloc((size_t)owned_n[i] + 1, sizeof(int32_t));
	int32_t nowned = 0, k = 0;
	/* owned_parts[i] is (topic, partition) pairs sorted by topic */
	for (int32_t j = 0; j < owned_n[i]; j += 2) {
		int32_t t = owned_parts[i][j];
		if (nowned == 0 || owned[nowned - 1].topic.p != topic_names[t])
			owned[nowned++] = (ch_assign_tplist){ch_str_c(topic_names[t]), byt + k, 0};
		byt[k++] = owned_parts[i][j + 1];
		owned[nowned - 1].n++;
	}
	ch_assign_member_metadata(b, kind, CH_ASSIGN_PROTO_VERSION, tnames, ntopics, owned, nowned,
				  generation, CH_STR_NULL);
	free(owned);
	free(byt);
}

static int
topic_index(ch_str name)
{
	/* names are t%05d */
	if (name.len < 2)
		return -1;
	int t = atoi(name.p + 1);
	return t >= 0 && t < ntopics ? t : -1;
}

/* Checks the SyncGroup's assignments (every partition once, counts within one) and keeps
 * each simulated member's partitions for the steady round. */
static void
check_sync(const ch_SyncGroupRequest *r)
{
	if (r->Assignments_n != nmembers) {
		fprintf(stderr, "leader_bench: %d assignments for %d members\n", r->Assignments_n,
			nmembers);
		check_failed = 1;
		return;
	}
	size_t total = (size_t)ntopics * (size_t)nper;
	uint8_t *seen = calloc(total, 1);
	int32_t lo = INT32_MAX, hi = 0;
	for (int32_t i = 0; i < r->Assignments_n; i++) {
		const ch_SyncGroupRequest_SyncGroupRequestAssignment *a = &r->Assignments[i];
		int idx = atoi(a->MemberId.p + 2); /* m-%05d */
		ch_arena ar;
		ch_arena_init(&ar);
		ch_assign_assignment as;
		if (ch_assign_assignment_decode(a->Assignment.p, (size_t)a->Assignment.len, &ar,
						&as) != CH_OK) {
			check_failed = 1;
			ch_arena_free(&ar);
			continue;
		}
		int32_t cnt = 0;
		for (int32_t j = 0; j < as.m.AssignedPartitions_n; j++)
			cnt += as.m.AssignedPartitions[j].Partitions_n;
		free(owned_parts[idx]);
		owned_parts[idx] = calloc((size_t)cnt * 2 + 1, sizeof(int32_t));
		owned_n[idx] = 0;
		for (int32_t j = 0; j < as.m.AssignedPartitions_n; j++) {
			const ch_ConsumerProtocolAssignment_TopicPartition *tp =
				&as.m.AssignedPartitions[j];
			int t = topic_index(tp->Topic);
			for (int32_t q = 0; t >= 0 && q < tp->Partitions_n; q++) {
				int32_t p = tp->Partitions[q];
				if (p < 0 || p >= nper ||
				    seen[(size_t)t * (size_t)nper + (size_t)p]++)
					check_failed = 1;
				owned_parts[idx][owned_n[idx]++] = t;
				owned_parts[idx][owned_n[idx]++] = p;
			}
		}
		lo = cnt < lo ? cnt : lo;
		hi = cnt > hi ? cnt : hi;
		ch_arena_free(&ar);
	}
	for (size_t i = 0; i < total; i++)
		if (seen[i] != 1)
			check_failed = 1;
	free(seen);
	if (hi - lo > 1)
		check_failed = 1;
	if (check_failed)
		fprintf(stderr, "leader_bench: the assignment is wrong (counts %d..%d)\n", lo, hi);
}

/* JoinGroup: the member is m-00000 and leads; the others are simulated. */
static void
answer_join(int fd, int16_t v, int32_t corr, const ch_JoinGroupRequest *req)
{
	pthread_mutex_lock(&mu);
	int gen = ++round_no;
	pthread_mutex_unlock(&mu);
	ch_JoinGroupResponse r;
	ch_JoinGroupResponse_init(&r);
	r.GenerationId = gen;
	r.ProtocolType = ch_str_c("consumer");
	r.ProtocolName = ch_str_c(assignor_name);
	r.Leader = ch_str_c("m-00000");
	r.MemberId = ch_str_c("m-00000");
	ch_JoinGroupResponse_JoinGroupResponseMember *ms = calloc((size_t)nmembers, sizeof(*ms));
	ch_buf *metas = calloc((size_t)nmembers, sizeof(*metas));
	char(*ids)[16] = calloc((size_t)nmembers, 16);
	const ch_bytes *own = NULL;
	for (int32_t i = 0; i < req->Protocols_n; i++)
		if (ch_str_eq_c(req->Protocols[i].Name, assignor_name))
			own = &req->Protocols[i].Metadata;
	if (!own)
		die("the member does not offer the assignor");
	for (int i = 0; i < nmembers; i++) {
		snprintf(ids[i], 16, "m-%05d", i);
		ms[i].MemberId = ch_str_c(ids[i]);
		ms[i].GroupInstanceId = CH_STR_NULL;
		if (i == 0) {
			ms[i].Metadata = *own;
			continue;
		}
		ch_buf_init(&metas[i]);
		member_metadata(&metas[i], i, gen == 1 ? -1 : gen - 1);
		ms[i].Metadata = (ch_bytes){metas[i].data, (int32_t)metas[i].len};
	}
	r.Members = ms;
	r.Members_n = nmembers;
	ch_buf b;
	ch_buf_init(&b);
	ch_JoinGroupResponse_encode(&b, v, &r);
	pthread_mutex_lock(&mu);
	t_join_out = now_s(); /* the answer starts to go out */
	pthread_mutex_unlock(&mu);
	respond(fd, CH_APIKEY_JOIN_GROUP, v, corr, &b);
	ch_buf_free(&b);
	for (int i = 0; i < nmembers; i++)
		ch_buf_free(&metas[i]);
	free(metas);
	free(ms);
	free(ids);
}

/* One connection: requests in, answers out, in order (unknown APIs unanswered). */
static void *
serve(void *arg)
{
	int fd = (int)(intptr_t)arg;
	for (;;) {
		uint32_t size;
		if (read_full(fd, &size, 4))
			break;
		size = ntohl(size);
		uint8_t *req = malloc(size);
		if (!req || read_full(fd, req, size)) {
			free(req);
			break;
		}
		double t_in = now_s();
		ch_rd rd;
		ch_rd_init(&rd, req, size);
		int16_t api = (int16_t)((req[0] << 8) | req[1]);
		int16_t v = (int16_t)((req[2] << 8) | req[3]);
		const ch_api_codec *codec = ch_api_codec_find(api);
		if (!codec) {
			free(req);
			continue;
		}
		bool flex = codec->flex_version >= 0 && v >= codec->flex_version;
		ch_arena a;
		ch_arena_init(&a);
		ch_RequestHeader h;
		ch_RequestHeader_decode(&rd, &a, flex ? 2 : 1, &h);
		ch_buf b;
		ch_buf_init(&b);
		switch (api) {
		case CH_APIKEY_API_VERSIONS:
			encode_apiversions(&b, v);
			respond(fd, api, v, h.CorrelationId, &b);
			break;
		case CH_APIKEY_METADATA:
			respond(fd, api, v, h.CorrelationId, metadata_body(v));
			pthread_mutex_lock(&mu);
			t_md_in = t_in;
			t_md_out = now_s();
			pthread_mutex_unlock(&mu);
			break;
		case CH_APIKEY_FIND_COORDINATOR: {
			ch_FindCoordinatorResponse r;
			ch_FindCoordinatorResponse_init(&r);
			ch_FindCoordinatorResponse_Coordinator co = {
				ch_str_c(GROUP), 0, ch_str_c("127.0.0.1"), port, 0, CH_STR_NULL};
			r.NodeId = 0;
			r.Host = co.Host;
			r.Port = port;
			r.Coordinators = &co;
			r.Coordinators_n = 1;
			ch_FindCoordinatorResponse_encode(&b, v, &r);
			respond(fd, api, v, h.CorrelationId, &b);
			break;
		}
		case CH_APIKEY_JOIN_GROUP: {
			ch_JoinGroupRequest r;
			ch_JoinGroupRequest_init(&r);
			if (ch_JoinGroupRequest_decode(&rd, &a, v, &r) != CH_OK)
				die("JoinGroup does not decode");
			answer_join(fd, v, h.CorrelationId, &r);
			break;
		}
		case CH_APIKEY_SYNC_GROUP: {
			ch_SyncGroupRequest r;
			ch_SyncGroupRequest_init(&r);
			if (ch_SyncGroupRequest_decode(&rd, &a, v, &r) != CH_OK)
				die("SyncGroup does not decode");
			pthread_mutex_lock(&mu);
			t_sync_in = t_in;
			sync_bytes = size + 4;
			pthread_mutex_unlock(&mu);
			check_sync(&r);
			ch_SyncGroupResponse s;
			ch_SyncGroupResponse_init(&s);
			s.ProtocolType = ch_str_c("consumer");
			s.ProtocolName = ch_str_c(assignor_name);
			for (int32_t i = 0; i < r.Assignments_n; i++)
				if (ch_str_eq_c(r.Assignments[i].MemberId, "m-00000"))
					s.Assignment = r.Assignments[i].Assignment;
			ch_SyncGroupResponse_encode(&b, v, &s);
			pthread_mutex_lock(&mu);
			t_sync_out = now_s();
			pthread_mutex_unlock(&mu);
			respond(fd, api, v, h.CorrelationId, &b);
			break;
		}
		case CH_APIKEY_HEARTBEAT: {
			ch_HeartbeatResponse r;
			ch_HeartbeatResponse_init(&r);
			pthread_mutex_lock(&mu);
			if (rebalance_wanted) {
				r.ErrorCode = CH_KERR_REBALANCE_IN_PROGRESS;
				rebalance_wanted = 0;
			}
			pthread_mutex_unlock(&mu);
			ch_HeartbeatResponse_encode(&b, v, &r);
			respond(fd, api, v, h.CorrelationId, &b);
			break;
		}
		case CH_APIKEY_OFFSET_FETCH: {
			/* committed offset 0 everywhere: no ListOffsets follows */
			ch_OffsetFetchRequest q;
			ch_OffsetFetchRequest_init(&q);
			if (ch_OffsetFetchRequest_decode(&rd, &a, v, &q) != CH_OK || v < 8 ||
			    q.Groups_n != 1)
				die("OffsetFetch: want v8+ with one group");
			const ch_OffsetFetchRequest_OffsetFetchRequestGroup *qg = &q.Groups[0];
			ch_OffsetFetchResponse r;
			ch_OffsetFetchResponse_init(&r);
			ch_OffsetFetchResponse_OffsetFetchResponseGroup g = {.GroupId =
										     qg->GroupId};
			g.Topics =
				ch_arena_alloc(&a, sizeof(*g.Topics) * (size_t)(qg->Topics_n + 1));
			g.Topics_n = qg->Topics_n;
			for (int32_t t = 0; t < qg->Topics_n; t++) {
				const ch_OffsetFetchRequest_OffsetFetchRequestTopics *qt =
					&qg->Topics[t];
				ch_OffsetFetchResponse_OffsetFetchResponseTopics *rt = &g.Topics[t];
				rt->Name = qt->Name;
				rt->Partitions = ch_arena_alloc(
					&a, sizeof(*rt->Partitions) *
						    (size_t)(qt->PartitionIndexes_n + 1));
				rt->Partitions_n = qt->PartitionIndexes_n;
				for (int32_t i = 0; i < qt->PartitionIndexes_n; i++)
					rt->Partitions[i] =
						(ch_OffsetFetchResponse_OffsetFetchResponsePartitions){
							qt->PartitionIndexes[i], 0, -1,
							ch_str_c(""), 0};
			}
			r.Groups = &g;
			r.Groups_n = 1;
			ch_OffsetFetchResponse_encode(&b, v, &r);
			respond(fd, api, v, h.CorrelationId, &b);
			break;
		}
		case CH_APIKEY_FETCH: {
			/* nothing to return: held for the wait, as a broker does, then empty
			 * (the member pauses everything in its assigned callback, so at most
			 * one comes per round) */
			ch_FetchRequest q;
			ch_FetchRequest_init(&q);
			ch_FetchRequest_decode(&rd, &a, v, &q);
			usleep((useconds_t)(q.MaxWaitMs > 0 && q.MaxWaitMs < 500 ? q.MaxWaitMs
										 : 500) *
			       1000);
			ch_FetchResponse r;
			ch_FetchResponse_init(&r);
			ch_FetchResponse_encode(&b, v, &r);
			respond(fd, api, v, h.CorrelationId, &b);
			break;
		}
		default:
			break; /* nothing else comes before the positions are known */
		}
		ch_buf_free(&b);
		ch_arena_free(&a);
		free(req);
	}
	close(fd);
	return NULL;
}

static void *
accept_loop(void *arg)
{
	int ls = (int)(intptr_t)arg;
	for (;;) {
		int fd = accept(ls, NULL, NULL);
		if (fd < 0)
			continue;
		int one = 1; /* header and body go out as two writes */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		pthread_t t;
		pthread_create(&t, NULL, serve, (void *)(intptr_t)fd);
		pthread_detach(t);
	}
	return NULL;
}

static void
on_assigned(cohort_consumer *c, const cohort_tp *tps, size_t n, void *opaque)
{
	(void)opaque;
	if (n)
		cohort_pause(c, tps, n);
	pthread_mutex_lock(&mu);
	t_assigned = now_s();
	assigned_round = round_no;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&mu);
}

static void
cset(cohort_conf *c, const char *k, const char *v)
{
	char err[256];
	if (cohort_conf_set(c, k, v, err, sizeof(err)))
		die(err);
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 4) {
		fprintf(stderr,
			"usage: leader_bench MEMBERS TOPICS PARTITIONS_PER_TOPIC [ASSIGNOR]\n");
		return 2;
	}
	/* the library's INFO lines (one per generation) would interleave with the figures */
	ch_log_threshold = getenv("LEADER_BENCH_DEBUG") ? CH_LOG_DEBUG : CH_LOG_WARN;
	nmembers = atoi(argv[1]);
	ntopics = atoi(argv[2]);
	nper = atoi(argv[3]);
	if (argc > 4) {
		int k = ch_assign_kind_by_name(ch_str_c(argv[4]));
		if (k < 0)
			die("unknown assignor");
		kind = (ch_assign_kind)k;
		assignor_name = argv[4];
	}
	topic_names = calloc((size_t)ntopics, sizeof(char *));
	topic_ids = calloc((size_t)ntopics, sizeof(ch_uuid));
	for (int t = 0; t < ntopics; t++) {
		if (asprintf(&topic_names[t], "t%05d", t) < 0)
			die("out of memory");
		topic_ids[t] = ch_uuid_random();
	}
	owned_parts = calloc((size_t)nmembers, sizeof(*owned_parts));
	owned_n = calloc((size_t)nmembers, sizeof(*owned_n));

	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 16) ||
	    getsockname(ls, (struct sockaddr *)&sa, &sl))
		die("cannot listen on 127.0.0.1");
	port = ntohs(sa.sin_port);
	pthread_t at;
	pthread_create(&at, NULL, accept_loop, (void *)(intptr_t)ls);
	pthread_detach(at);

	char boot[64];
	snprintf(boot, sizeof(boot), "127.0.0.1:%d", port);
	cohort_conf *conf = cohort_conf_new();
	cset(conf, "bootstrap.servers", boot);
	cset(conf, "group.id", GROUP);
	cset(conf, "partition.assignment.strategy", assignor_name);
	cset(conf, "heartbeat.interval.ms", "100");
	cset(conf, "request.timeout.ms", "300000");
	cset(conf, "enable.auto.commit", "false");
	cohort_rebalance_listener l = {on_assigned, NULL, NULL, NULL};
	cohort_conf_set_rebalance_listener(conf, &l);
	char err[512];
	cohort_consumer *c = cohort_consumer_new(conf, err, sizeof(err));
	cohort_conf_free(conf);
	if (!c)
		die(err);
	const char **subs = calloc((size_t)ntopics, sizeof(char *));
	for (int t = 0; t < ntopics; t++)
		subs[t] = topic_names[t];
	if (cohort_subscribe(c, subs, (size_t)ntopics))
		die("subscribe refused");
	printf("libcohort %s leader, %s, %d members (1 real, %d simulated), %d topics x %d "
	       "partitions = %ld partitions\n",
	       cohort_version(), assignor_name, nmembers, nmembers - 1, ntopics, nper,
	       (long)ntopics * nper);
	const char *names[] = {"fresh", "steady"};
	for (int rnd = 1; rnd <= 2; rnd++) {
		double t0 = now_s();
		for (;;) {
			const cohort_record *recs;
			size_t n;
			cohort_err e = cohort_poll(c, 100, &recs, &n);
			if (e)
				die(cohort_err_name(e));
			pthread_mutex_lock(&mu);
			int done = assigned_round == rnd;
			pthread_mutex_unlock(&mu);
			if (done)
				break;
			if (now_s() - t0 > 300)
				die("no assignment within 300 s");
		}
		pthread_mutex_lock(&mu);
		printf("  %-6s metadata %7.1f ms   leader %7.1f ms   sync rtt %6.1f ms   total "
		       "%7.1f ms   SyncGroup %.1f MB\n",
		       names[rnd - 1], (t_md_out - t_md_in) * 1e3, (t_sync_in - t_join_out) * 1e3,
		       (t_assigned - t_sync_out) * 1e3, (t_assigned - t_join_out) * 1e3,
		       sync_bytes / 1e6);
		rebalance_wanted = 1;
		pthread_mutex_unlock(&mu);
	}
	if (check_failed) {
		printf("  the assignment was wrong\n");
		_exit(1);
	}
	_exit(0); /* the consumer waits on requests the fake broker never answers */
}
