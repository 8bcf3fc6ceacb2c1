/*
 * assign_proto_test.c: the consumer embedded protocol glue against frames
 * captured from real members (tests/golden/embedded/, see its README):
 * JoinGroup requests carrying ConsumerProtocolSubscription and SyncGroup
 * requests carrying ConsumerProtocolAssignment, from librdkafka 2.0.2
 * (range, roundrobin, cooperative-sticky) and kafka-python 2.0.2 (range,
 * roundrobin, sticky). Checks the decoded fields, that re-encoding gives the
 * same bytes, and that our range / roundrobin over the captured members'
 * metadata write byte for byte what those clients' leaders wrote.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign/ch_assign.h"
#include "assign/ch_assign_proto.h"
#include "common/ch_test.h"
#include "proto/ch_rd.h"
#include "proto/ch_wr.h"
#include "proto/generated/ch_msgs.h"

#ifndef CH_GOLDEN_DIR
#error "CH_GOLDEN_DIR must point at tests/golden/embedded"
#endif

/* ---- golden frames ---- */

typedef struct frame {
	uint8_t *p;
	size_t len;
	ch_arena a;
	ch_RequestHeader h;
	ch_JoinGroupRequest join;
	ch_SyncGroupRequest sync;
} frame;

static bool
load(frame *f, const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", CH_GOLDEN_DIR, name);
	memset(f, 0, sizeof(*f));
	ch_arena_init(&f->a);
	FILE *fp = fopen(path, "rb");
	if (!fp) {
		fprintf(stderr, "cannot open %s\n", path);
		return false;
	}
	fseek(fp, 0, SEEK_END);
	long n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	f->p = malloc(n > 0 ? (size_t)n : 1);
	f->len = f->p && n > 0 ? fread(f->p, 1, (size_t)n, fp) : 0;
	fclose(fp);
	ch_rd r;
	ch_rd_init(&r, f->p, f->len);
	/* All captured versions are non-flexible: request header v1. */
	if (ch_RequestHeader_decode(&r, &f->a, 1, &f->h) != 0)
		return false;
	if (f->h.RequestApiKey == 11)
		return ch_JoinGroupRequest_decode(&r, &f->a, f->h.RequestApiVersion, &f->join) ==
			       0 &&
		       ch_rd_left(&r) == 0;
	if (f->h.RequestApiKey == 14)
		return ch_SyncGroupRequest_decode(&r, &f->a, f->h.RequestApiVersion, &f->sync) ==
			       0 &&
		       ch_rd_left(&r) == 0;
	return false;
}

static void
unload(frame *f)
{
	free(f->p);
	ch_arena_free(&f->a);
}

static ch_bytes
join_meta(const frame *f, const char *proto)
{
	for (int32_t i = 0; i < f->join.Protocols_n; i++)
		if (ch_str_eq_c(f->join.Protocols[i].Name, proto))
			return f->join.Protocols[i].Metadata;
	return CH_BYTES_NULL;
}

static bool
bytes_eq(const ch_buf *b, ch_bytes x)
{
	return x.len >= 0 && b->len == (size_t)x.len &&
	       (b->len == 0 || memcmp(b->data, x.p, b->len) == 0);
}

/* "t:p,t:p" of an assignment (entries in order, partitions in order). */
static void
asg_str(const ch_ConsumerProtocolAssignment *m, char *out, size_t cap)
{
	size_t k = 0;
	out[0] = 0;
	for (int32_t i = 0; i < m->AssignedPartitions_n; i++) {
		const ch_ConsumerProtocolAssignment_TopicPartition *tp = &m->AssignedPartitions[i];
		for (int32_t j = 0; j < tp->Partitions_n && k < cap; j++)
			k += (size_t)snprintf(out + k, cap - k, "%s%.*s:%d", k ? "," : "",
					      (int)tp->Topic.len, tp->Topic.p,
					      (int)tp->Partitions[j]);
	}
}

/* Check a subscription: version, topics "a,b", user data length, owned "t:p,...". */
static void
check_sub(const char *file, const char *proto, int16_t version, const char *topics, int32_t udlen,
	  const char *owned)
{
	frame f;
	CH_CHECK(load(&f, file));
	ch_bytes md = join_meta(&f, proto);
	CH_CHECK(md.len > 0);
	ch_arena a;
	ch_arena_init(&a);
	ch_assign_subscription s;
	CH_CHECK_EQ_INT(ch_assign_subscription_decode(md.p, (size_t)md.len, &a, &s), CH_OK);
	CH_CHECK_EQ_INT(s.version, version);
	char buf[512];
	size_t k = 0;
	buf[0] = 0;
	for (int32_t i = 0; i < s.m.Topics_n; i++)
		k += (size_t)snprintf(buf + k, sizeof(buf) - k, "%s%.*s", i ? "," : "",
				      (int)s.m.Topics[i].len, s.m.Topics[i].p);
	CH_CHECK_EQ_STR(buf, topics);
	CH_CHECK_EQ_INT(s.m.UserData.len, udlen);
	k = 0;
	buf[0] = 0;
	for (int32_t i = 0; i < s.m.OwnedPartitions_n; i++)
		for (int32_t j = 0; j < s.m.OwnedPartitions[i].Partitions_n; j++)
			k += (size_t)snprintf(buf + k, sizeof(buf) - k, "%s%.*s:%d", k ? "," : "",
					      (int)s.m.OwnedPartitions[i].Topic.len,
					      s.m.OwnedPartitions[i].Topic.p,
					      (int)s.m.OwnedPartitions[i].Partitions[j]);
	CH_CHECK_EQ_STR(buf, owned);
	/* The format is canonical for what we decoded: same bytes back. */
	ch_buf b;
	ch_buf_init(&b);
	ch_assign_subscription_encode(&b, s.version, &s.m);
	CH_CHECK(bytes_eq(&b, md));
	ch_buf_free(&b);
	ch_arena_free(&a);
	unload(&f);
}

/* Check member i of a SyncGroup: id prefix, partitions, user data length. */
static void
check_asg(const char *file, int32_t i, const char *member_prefix, const char *parts, int32_t udlen)
{
	frame f;
	CH_CHECK(load(&f, file));
	CH_CHECK(i < f.sync.Assignments_n);
	if (i >= f.sync.Assignments_n) {
		unload(&f);
		return;
	}
	const ch_SyncGroupRequest_SyncGroupRequestAssignment *x = &f.sync.Assignments[i];
	CH_CHECK(x->MemberId.len >= (int32_t)strlen(member_prefix) &&
		 memcmp(x->MemberId.p, member_prefix, strlen(member_prefix)) == 0);
	ch_arena a;
	ch_arena_init(&a);
	ch_assign_assignment s;
	CH_CHECK_EQ_INT(
		ch_assign_assignment_decode(x->Assignment.p, (size_t)x->Assignment.len, &a, &s),
		CH_OK);
	CH_CHECK_EQ_INT(s.version, 0); /* librdkafka and kafka-python write v0 */
	char buf[512];
	asg_str(&s.m, buf, sizeof(buf));
	CH_CHECK_EQ_STR(buf, parts);
	CH_CHECK_EQ_INT(s.m.UserData.len, udlen);
	ch_buf b;
	ch_buf_init(&b);
	ch_assign_assignment_encode(&b, s.version, &s.m);
	CH_CHECK(bytes_eq(&b, x->Assignment));
	ch_buf_free(&b);
	ch_arena_free(&a);
	unload(&f);
}

/* ---- subscriptions ---- */

static void
t_rdk_subscriptions(void)
{
	check_sub("rdk_range_join_first.bin", "range", 1, "cap-a,cap-b", 0, "");
	check_sub("rdk_range_join_rejoin.bin", "range", 1, "cap-a,cap-b", 0, "");
	check_sub("rdk_roundrobin_join.bin", "roundrobin", 1, "cap-a,cap-b", 0, "");
	check_sub("rdk_coop_join_first.bin", "cooperative-sticky", 1, "cap-a,cap-b", 0, "");
	check_sub("rdk_coop_join_owned.bin", "cooperative-sticky", 1, "cap-a,cap-b", 58,
		  "cap-a:0,cap-a:1,cap-a:2,cap-a:3,cap-b:0,cap-b:1,cap-b:2");
	check_sub("rdk_coop_join_m2.bin", "cooperative-sticky", 1, "cap-a,cap-b", 31,
		  "cap-a:0,cap-a:1,cap-a:2");
	check_sub("rdk_coop_join_gen3_m1.bin", "cooperative-sticky", 1, "cap-a,cap-b", 46,
		  "cap-a:3,cap-b:0,cap-b:1,cap-b:2");
	check_sub("rdk_coop_join_gen3_m2.bin", "cooperative-sticky", 1, "cap-a,cap-b", 8, "");
}

static void
t_kp_subscriptions(void)
{
	/* kafka-python: v0, topics in set order, empty (not null) user data. */
	check_sub("kp_range_join.bin", "range", 0, "cap-b,cap-a", 0, "");
	check_sub("kp_range_join_rejoin.bin", "range", 0, "cap-b,cap-a", 0, "");
	check_sub("kp_roundrobin_join.bin", "roundrobin", 0, "cap-b,cap-a", 0, "");
	check_sub("kp_sticky_join.bin", "sticky", 0, "cap-a,cap-b", 0, "");
}

/* librdkafka's cooperative-sticky user data is StickyAssignorUserData v1. */
static void
t_rdk_coop_userdata(void)
{
	frame f;
	CH_CHECK(load(&f, "rdk_coop_join_m2.bin"));
	ch_bytes md = join_meta(&f, "cooperative-sticky");
	ch_arena a;
	ch_arena_init(&a);
	ch_assign_subscription s;
	CH_CHECK_EQ_INT(ch_assign_subscription_decode(md.p, (size_t)md.len, &a, &s), CH_OK);
	ch_assign_sticky_data d;
	CH_CHECK_EQ_INT(ch_assign_sticky_data_decode(s.m.UserData.p, (size_t)s.m.UserData.len, &d),
			CH_OK);
	CH_CHECK_EQ_INT(d.ntopics, 1);
	CH_CHECK(d.ntopics == 1 && ch_str_eq_c(d.topics[0].topic, "cap-a") && d.topics[0].n == 3 &&
		 d.topics[0].partitions[0] == 2 && d.topics[0].partitions[2] == 0);
	CH_CHECK_EQ_INT(d.generation, 3);
	/* and it re-encodes to the same bytes */
	ch_buf b;
	ch_buf_init(&b);
	ch_assign_sticky_data_encode(&b, &d);
	CH_CHECK(bytes_eq(&b, s.m.UserData));
	ch_buf_free(&b);
	ch_assign_sticky_data_free(&d);
	ch_arena_free(&a);
	unload(&f);
}

/* ---- assignments ---- */

static void
t_rdk_assignments(void)
{
	/* librdkafka leader, range: empty (not null) user data */
	check_asg("rdk_range_sync_leader.bin", 0, "rdk-range-1-", "cap-a:0,cap-a:1,cap-b:0,cap-b:1",
		  0);
	check_asg("rdk_range_sync_leader.bin", 1, "rdk-range-2-", "cap-a:2,cap-a:3,cap-b:2", 0);
	check_asg("rdk_roundrobin_sync_leader.bin", 0, "rdk-roundrobin-1-",
		  "cap-a:0,cap-a:2,cap-b:0,cap-b:2", 0);
	check_asg("rdk_roundrobin_sync_leader.bin", 1, "rdk-roundrobin-2-",
		  "cap-a:1,cap-a:3,cap-b:1", 0);
	/* cooperative-sticky: the member's subscription user data echoed back */
	check_asg("rdk_coop_sync_gen2.bin", 0, "rdk-cooperative-sticky-1-",
		  "cap-a:3,cap-b:0,cap-b:1,cap-b:2", 58);
	check_asg("rdk_coop_sync_gen2.bin", 1, "rdk-cooperative-sticky-2-", "", 0);
	check_asg("rdk_coop_sync_gen3.bin", 0, "rdk-cooperative-sticky-1-",
		  "cap-a:3,cap-b:0,cap-b:1,cap-b:2", 46);
	check_asg("rdk_coop_sync_gen3.bin", 1, "rdk-cooperative-sticky-2-",
		  "cap-a:2,cap-a:1,cap-a:0", 8);
	/* a topic in two entries, partitions unsorted: decoded as given, same bytes back */
	check_asg("rdk_coop_sync_duptopic.bin", 0, "rdk-cooperative-sticky-2-",
		  "cap-a:0,cap-a:1,cap-a:2,cap-b:2,cap-b:1,cap-b:0,cap-a:3", 31);
	check_asg("mix_range_sync_rdk_leader.bin", 0, "mix-range-1-", "cap-a:2,cap-a:3,cap-b:2", 0);
	check_asg("mix_range_sync_rdk_leader.bin", 1, "kafka-python-",
		  "cap-a:0,cap-a:1,cap-b:0,cap-b:1", 0);
}

static void
t_kp_assignments(void)
{
	check_asg("kp_range_sync_leader.bin", 0, "kafka-python-2.0.2-a1a7",
		  "cap-a:2,cap-a:3,cap-b:2", 0);
	check_asg("kp_range_sync_leader.bin", 1, "kafka-python-2.0.2-2492",
		  "cap-a:0,cap-a:1,cap-b:0,cap-b:1", 0);
	check_asg("kp_roundrobin_sync_leader.bin", 0, "kafka-python-2.0.2-70ee",
		  "cap-a:0,cap-a:2,cap-b:0,cap-b:2", 0);
	check_asg("kp_roundrobin_sync_leader.bin", 1, "kafka-python-2.0.2-fd4e",
		  "cap-a:1,cap-a:3,cap-b:1", 0);
	check_asg("kp_sticky_sync.bin", 0, "kafka-python-2.0.2-c932",
		  "cap-a:0,cap-a:1,cap-a:2,cap-a:3,cap-b:0,cap-b:1,cap-b:2", 0);
}

/* ---- our leader over the captured members = their leader, byte for byte ---- */

static const ch_assign_topic cap_topics[] = {
	{{"cap-a", 5}, 4, NULL},
	{{"cap-b", 5}, 3, NULL},
};

/* members: the SyncGroup's member ids, each with the metadata of join file
 * meta[i]; the assignor's output, written at v0 with empty user data as
 * librdkafka and kafka-python write it, must equal the captured bytes. */
static void
same_as_captured(ch_assign_kind kind, const char *sync_file, const char *const *meta, int32_t n,
		 ch_bytes user_data)
{
	frame sf, jf[4];
	CH_CHECK(load(&sf, sync_file));
	CH_CHECK_EQ_INT(sf.sync.Assignments_n, n);
	ch_assign_join_member jm[4];
	for (int32_t i = 0; i < n; i++) {
		CH_CHECK(load(&jf[i], meta[i]));
		jm[i].member_id = sf.sync.Assignments[i].MemberId;
		jm[i].instance_id = CH_STR_NULL;
		jm[i].metadata = join_meta(&jf[i], ch_assign_name(kind));
	}
	ch_assign_group g;
	CH_CHECK_EQ_INT(ch_assign_group_decode(&g, jm, n), CH_OK);
	const ch_str *names;
	CH_CHECK_EQ_INT(ch_assign_group_topics(&g, &names), 2);
	CH_CHECK(ch_str_eq_c(names[0], "cap-a") && ch_str_eq_c(names[1], "cap-b"));
	CH_CHECK_EQ_INT(ch_assign_group_build(&g, kind, cap_topics, 2), CH_OK);
	ch_assign_result res;
	CH_CHECK_EQ_INT(ch_assign(kind, &g.in, &res), CH_OK);
	for (int32_t i = 0; i < n; i++) {
		ch_buf b;
		ch_buf_init(&b);
		ch_assign_assignment_write(&b, 0, cap_topics, res.tps + res.off[i],
					   res.off[i + 1] - res.off[i], user_data);
		CH_CHECK(bytes_eq(&b, sf.sync.Assignments[i].Assignment));
		/* at v3 (what we send) only the version differs */
		ch_buf_reset(&b);
		ch_assign_assignment_write(&b, CH_ASSIGN_PROTO_VERSION, cap_topics,
					   res.tps + res.off[i], res.off[i + 1] - res.off[i],
					   user_data);
		CH_CHECK(b.len == (size_t)sf.sync.Assignments[i].Assignment.len && b.data[1] == 3 &&
			 memcmp(b.data + 2, sf.sync.Assignments[i].Assignment.p + 2, b.len - 2) ==
				 0);
		ch_buf_free(&b);
	}
	ch_assign_result_free(&res);
	ch_assign_group_free(&g);
	for (int32_t i = 0; i < n; i++)
		unload(&jf[i]);
	unload(&sf);
}

static void
t_same_as_captured_leaders(void)
{
	static const uint8_t empty[1];
	ch_bytes e = {empty, 0};
	const char *rr[] = {"rdk_range_join_rejoin.bin", "rdk_range_join_rejoin.bin"};
	same_as_captured(CH_ASSIGN_RANGE, "rdk_range_sync_leader.bin", rr, 2, e);
	const char *rrr[] = {"rdk_roundrobin_join.bin", "rdk_roundrobin_join.bin"};
	same_as_captured(CH_ASSIGN_ROUNDROBIN, "rdk_roundrobin_sync_leader.bin", rrr, 2, e);
	const char *kr[] = {"kp_range_join_rejoin.bin", "kp_range_join.bin"};
	same_as_captured(CH_ASSIGN_RANGE, "kp_range_sync_leader.bin", kr, 2, e);
	const char *krr[] = {"kp_roundrobin_join.bin", "kp_roundrobin_join.bin"};
	same_as_captured(CH_ASSIGN_ROUNDROBIN, "kp_roundrobin_sync_leader.bin", krr, 2, e);
	const char *mix[] = {"rdk_range_join_rejoin.bin", "kp_range_join.bin"};
	same_as_captured(CH_ASSIGN_RANGE, "mix_range_sync_rdk_leader.bin", mix, 2, e);
}

/* cooperative-sticky over librdkafka members: owned partitions and the
 * generation from librdkafka's sticky user data; gen 2 revokes without
 * handing over, gen 3 gives the new member what librdkafka's leader gave. */
static void
t_coop_over_rdk_members(void)
{
	const char *files[2][2] = {{"rdk_coop_join_owned.bin", "rdk_coop_join_m2_first.bin"},
				   {"rdk_coop_join_gen3_m1.bin", "rdk_coop_join_gen3_m2.bin"}};
	for (int round = 0; round < 2; round++) {
		frame jf[2];
		ch_assign_join_member jm[2];
		for (int i = 0; i < 2; i++) {
			CH_CHECK(load(&jf[i], files[round][i]));
			jm[i].member_id = jf[i].join.MemberId;
			jm[i].instance_id = CH_STR_NULL;
			jm[i].metadata = join_meta(&jf[i], "cooperative-sticky");
		}
		ch_assign_group g;
		CH_CHECK_EQ_INT(ch_assign_group_decode(&g, jm, 2), CH_OK);
		CH_CHECK_EQ_INT(g.min_version, 1);
		CH_CHECK_EQ_INT(
			ch_assign_group_build(&g, CH_ASSIGN_COOPERATIVE_STICKY, cap_topics, 2),
			CH_OK);
		/* generation from the StickyAssignorUserData librdkafka sends */
		CH_CHECK_EQ_INT(g.in.members[0].generation, round == 0 ? 1 : 2);
		CH_CHECK_EQ_INT(g.in.members[1].generation, round == 0 ? -1 : 2);
		CH_CHECK_EQ_INT(g.in.members[0].nowned, 2);
		ch_assign_result res;
		CH_CHECK_EQ_INT(ch_assign(CH_ASSIGN_COOPERATIVE_STICKY, &g.in, &res), CH_OK);
		int32_t n0 = res.off[1] - res.off[0], n1 = res.off[2] - res.off[1];
		if (round == 0) {
			CH_CHECK_EQ_INT(n0, 4); /* keeps 4 of its 7 */
			CH_CHECK_EQ_INT(n1, 0); /* the 3 moving are only revoked */
		} else {
			CH_CHECK_EQ_INT(n0, 4);
			CH_CHECK_EQ_INT(n1, 3);
			ch_buf b;
			ch_buf_init(&b);
			ch_assign_assignment_write(&b, 0, cap_topics, res.tps + res.off[1], n1,
						   CH_BYTES_NULL);
			ch_arena a;
			ch_arena_init(&a);
			ch_assign_assignment s;
			CH_CHECK_EQ_INT(ch_assign_assignment_decode(b.data, b.len, &a, &s), CH_OK);
			char buf[256];
			asg_str(&s.m, buf, sizeof(buf));
			CH_CHECK_EQ_STR(buf,
					"cap-a:0,cap-a:1,cap-a:2"); /* librdkafka: cap-a 2,1,0 */
			CH_CHECK_EQ_INT(s.m.UserData.len, -1);
			ch_arena_free(&a);
			ch_buf_free(&b);
		}
		ch_assign_result_free(&res);
		ch_assign_group_free(&g);
		unload(&jf[0]);
		unload(&jf[1]);
	}
}

/* eager sticky reads owned partitions and generation from the user data */
static void
t_sticky_from_userdata(void)
{
	frame f;
	CH_CHECK(load(&f, "rdk_coop_join_owned.bin"));
	ch_assign_join_member jm = {CH_STR_LIT("m1"), CH_STR_NULL,
				    join_meta(&f, "cooperative-sticky")};
	ch_assign_group g;
	CH_CHECK_EQ_INT(ch_assign_group_decode(&g, &jm, 1), CH_OK);
	CH_CHECK_EQ_INT(ch_assign_group_build(&g, CH_ASSIGN_STICKY, cap_topics, 2), CH_OK);
	CH_CHECK_EQ_INT(g.in.members[0].generation, 1);
	CH_CHECK_EQ_INT(g.in.members[0].nowned, 2);
	CH_CHECK(g.in.members[0].nowned == 2 && g.in.members[0].owned[0].topic == 0 &&
		 g.in.members[0].owned[0].n == 4 && g.in.members[0].owned[1].n == 3);
	ch_assign_group_free(&g);
	unload(&f);
}

/* ---- member side ---- */

static void
t_member_metadata(void)
{
	ch_str topics[] = {CH_STR_LIT("cap-a"), CH_STR_LIT("cap-b")};
	int32_t pa[] = {0, 3}, pb[] = {1};
	ch_assign_tplist owned[] = {{CH_STR_LIT("cap-a"), pa, 2}, {CH_STR_LIT("cap-b"), pb, 1}};
	for (int k = CH_ASSIGN_RANGE; k <= CH_ASSIGN_COOPERATIVE_STICKY; k++) {
		for (int16_t v = 0; v <= 4; v++) {
			ch_buf b;
			ch_buf_init(&b);
			ch_assign_member_metadata(&b, (ch_assign_kind)k, v, topics, 2, owned, 2, 7,
						  CH_STR_LIT("rack-1"));
			ch_arena a;
			ch_arena_init(&a);
			ch_assign_subscription s;
			CH_CHECK_EQ_INT(ch_assign_subscription_decode(b.data, b.len, &a, &s),
					CH_OK);
			CH_CHECK_EQ_INT(s.version, v);
			CH_CHECK_EQ_INT(s.m.Topics_n, 2);
			if (v >= 1)
				CH_CHECK_EQ_INT(s.m.OwnedPartitions_n,
						k == CH_ASSIGN_COOPERATIVE_STICKY ? 2 : 0);
			CH_CHECK_EQ_INT(s.m.GenerationId, v >= 2 ? 7 : -1);
			CH_CHECK(v >= 3 ? ch_str_eq_c(s.m.RackId, "rack-1")
					: ch_str_is_null(s.m.RackId));
			if (k == CH_ASSIGN_COOPERATIVE_STICKY) {
				CH_CHECK_EQ_INT(s.m.UserData.len, 4);
				CH_CHECK_EQ_INT(ch_assign_coop_data_decode(s.m.UserData.p, 4), 7);
			} else if (k == CH_ASSIGN_STICKY) {
				ch_assign_sticky_data d;
				CH_CHECK_EQ_INT(
					ch_assign_sticky_data_decode(s.m.UserData.p,
								     (size_t)s.m.UserData.len, &d),
					CH_OK);
				CH_CHECK_EQ_INT(d.generation, 7);
				CH_CHECK(d.ntopics == 2 && d.topics[0].n == 2 &&
					 d.topics[0].partitions[1] == 3 && d.topics[1].n == 1 &&
					 d.topics[1].partitions[0] == 1);
				ch_assign_sticky_data_free(&d);
			} else {
				CH_CHECK_EQ_INT(s.m.UserData.len, -1);
			}
			/* a leader here reads it back: owned and generation per assignor */
			ch_assign_join_member jm = {
				CH_STR_LIT("m"), CH_STR_NULL, {b.data, (int32_t)b.len}};
			ch_assign_group g;
			CH_CHECK_EQ_INT(ch_assign_group_decode(&g, &jm, 1), CH_OK);
			CH_CHECK_EQ_INT(ch_assign_group_build(&g, (ch_assign_kind)k, cap_topics, 2),
					CH_OK);
			const ch_assign_member *m = &g.in.members[0];
			CH_CHECK_EQ_INT(m->ntopics, 2);
			bool has_owned = k == CH_ASSIGN_STICKY ||
					 (k == CH_ASSIGN_COOPERATIVE_STICKY && v >= 1);
			CH_CHECK_EQ_INT(m->nowned, has_owned ? 2 : 0);
			bool has_gen = v >= 2 || k == CH_ASSIGN_STICKY ||
				       k == CH_ASSIGN_COOPERATIVE_STICKY;
			CH_CHECK_EQ_INT(m->generation, has_gen ? 7 : -1);
			CH_CHECK(v >= 3 ? ch_str_eq_c(m->rack, "rack-1") : ch_str_is_null(m->rack));
			ch_assign_group_free(&g);
			ch_arena_free(&a);
			ch_buf_free(&b);
		}
	}
	/* a sticky member before its first assignment sends null user data */
	ch_buf b;
	ch_buf_init(&b);
	ch_assign_member_metadata(&b, CH_ASSIGN_STICKY, 3, topics, 2, NULL, 0,
				  CH_ASSIGN_NO_GENERATION, CH_STR_NULL);
	ch_arena a;
	ch_arena_init(&a);
	ch_assign_subscription s;
	CH_CHECK_EQ_INT(ch_assign_subscription_decode(b.data, b.len, &a, &s), CH_OK);
	CH_CHECK_EQ_INT(s.m.UserData.len, -1);
	/* and our bytes are what the generated encoder writes (canonical) */
	ch_buf c;
	ch_buf_init(&c);
	ch_assign_subscription_encode(&c, 3, &s.m);
	CH_CHECK(c.len == b.len && memcmp(c.data, b.data, b.len) == 0);
	ch_buf_free(&c);
	ch_arena_free(&a);
	ch_buf_free(&b);
}

/* ---- versions and malformed input ---- */

static void
t_versions_and_errors(void)
{
	ch_arena a;
	ch_arena_init(&a);
	ch_assign_subscription s;
	ch_assign_assignment as;
	/* a newer version is read as v3, trailing bytes ignored */
	ch_buf b;
	ch_buf_init(&b);
	ch_str topics[] = {CH_STR_LIT("t")};
	ch_assign_member_metadata(&b, CH_ASSIGN_RANGE, 9, topics, 1, NULL, 0, 4, CH_STR_LIT("r"));
	ch_wr_i32(&b, 12345); /* a v9 field */
	CH_CHECK_EQ_INT(ch_assign_subscription_decode(b.data, b.len, &a, &s), CH_OK);
	CH_CHECK_EQ_INT(s.version, 9);
	CH_CHECK_EQ_INT(s.m.GenerationId, 4);
	CH_CHECK(ch_str_eq_c(s.m.RackId, "r"));
	/* every truncation fails cleanly */
	for (size_t n = 0; n + 4 < b.len; n++)
		CH_CHECK_EQ_INT(ch_assign_subscription_decode(b.data, n, &a, &s), CH_ERR);
	/* negative version */
	static const uint8_t neg[] = {0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
	CH_CHECK_EQ_INT(ch_assign_subscription_decode(neg, sizeof(neg), &a, &s), CH_ERR);
	CH_CHECK_EQ_INT(ch_assign_assignment_decode(neg, sizeof(neg), &a, &as), CH_ERR);
	static const uint8_t v5[] = {0, 5, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 2};
	CH_CHECK_EQ_INT(ch_assign_assignment_decode(v5, sizeof(v5), &a, &as), CH_OK);
	CH_CHECK_EQ_INT(as.version, 5);
	CH_CHECK_EQ_INT(as.m.UserData.len, -1);
	CH_CHECK_EQ_INT(ch_assign_assignment_decode(v5, 5, &a, &as), CH_ERR);
	CH_CHECK_EQ_INT(ch_assign_assignment_decode(NULL, 0, &a, &as), CH_ERR);
	/* a bad member in a group: no topics, empty assignment; others assigned */
	ch_assign_join_member jm[3] = {
		{CH_STR_LIT("a"), CH_STR_NULL, {b.data, (int32_t)b.len}},
		{CH_STR_LIT("b"), CH_STR_NULL, {neg, (int32_t)sizeof(neg)}},
		{CH_STR_LIT("c"), CH_STR_NULL, CH_BYTES_NULL},
	};
	ch_assign_topic t1[] = {{CH_STR_LIT("t"), 5, NULL}};
	ch_assign_group g;
	CH_CHECK_EQ_INT(ch_assign_group_decode(&g, jm, 3), CH_OK);
	CH_CHECK(!g.bad[0] && g.bad[1] && g.bad[2]);
	CH_CHECK_EQ_INT(g.min_version, 3);
	CH_CHECK_EQ_INT(ch_assign_group_build(&g, CH_ASSIGN_RANGE, t1, 1), CH_OK);
	ch_assign_result res;
	CH_CHECK_EQ_INT(ch_assign(CH_ASSIGN_RANGE, &g.in, &res), CH_OK);
	CH_CHECK_EQ_INT(res.off[1] - res.off[0], 5);
	CH_CHECK_EQ_INT(res.off[3] - res.off[1], 0);
	ch_assign_result_free(&res);
	ch_assign_group_free(&g);
	/* cooperative generation rules on v0-v1 */
	ch_buf u;
	ch_buf_init(&u);
	ch_wr_i16(&u, 1);
	ch_wr_array_len(&u, 1, false);
	ch_wr_str(&u, CH_STR_LIT("t"), false);
	ch_wr_i32(&u, 2); /* 2 bytes of user data: too short for a generation */
	ch_wr_i16(&u, 7);
	ch_wr_array_len(&u, 0, false);
	ch_assign_join_member one = {CH_STR_LIT("a"), CH_STR_NULL, {u.data, (int32_t)u.len}};
	CH_CHECK_EQ_INT(ch_assign_group_decode(&g, &one, 1), CH_OK);
	CH_CHECK_EQ_INT(ch_assign_group_build(&g, CH_ASSIGN_COOPERATIVE_STICKY, t1, 1), CH_OK);
	CH_CHECK_EQ_INT(g.in.members[0].generation, CH_ASSIGN_NO_GENERATION);
	ch_assign_group_free(&g);
	ch_buf_free(&u);
	ch_buf_free(&b);
	ch_arena_free(&a);
}

/* Every golden frame, cut anywhere, never crashes the glue. */
static void
t_golden_truncations(void)
{
	const char *files[] = {"rdk_coop_join_owned.bin", "rdk_coop_sync_duptopic.bin",
			       "kp_range_sync_leader.bin"};
	for (size_t fi = 0; fi < sizeof(files) / sizeof(files[0]); fi++) {
		frame f;
		CH_CHECK(load(&f, files[fi]));
		ch_bytes x = f.h.RequestApiKey == 11 ? join_meta(&f, "cooperative-sticky")
						     : f.sync.Assignments[0].Assignment;
		for (int32_t n = 0; n < x.len; n++) {
			ch_arena a;
			ch_arena_init(&a);
			ch_assign_subscription s;
			ch_assign_assignment as;
			int rc1 = ch_assign_subscription_decode(x.p, (size_t)n, &a, &s);
			int rc2 = ch_assign_assignment_decode(x.p, (size_t)n, &a, &as);
			(void)rc1;
			(void)rc2;
			ch_assign_join_member jm = {CH_STR_LIT("m"), CH_STR_NULL, {x.p, n}};
			ch_assign_group g;
			CH_CHECK_EQ_INT(ch_assign_group_decode(&g, &jm, 1), CH_OK);
			CH_CHECK_EQ_INT(ch_assign_group_build(&g, CH_ASSIGN_STICKY, cap_topics, 2),
					CH_OK);
			ch_assign_group_free(&g);
			ch_arena_free(&a);
		}
		unload(&f);
	}
}

CH_TEST_MAIN(CH_TEST(t_rdk_subscriptions), CH_TEST(t_kp_subscriptions),
	     CH_TEST(t_rdk_coop_userdata), CH_TEST(t_rdk_assignments), CH_TEST(t_kp_assignments),
	     CH_TEST(t_same_as_captured_leaders), CH_TEST(t_coop_over_rdk_members),
	     CH_TEST(t_sticky_from_userdata), CH_TEST(t_member_metadata),
	     CH_TEST(t_versions_and_errors), CH_TEST(t_golden_truncations))
