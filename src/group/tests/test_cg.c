/*
 * test_cg.c: unit tests of the consumer-protocol groups (ch_coord_cg.h):
 * Kafka's answers to each kind of ConsumerGroupHeartbeat, reconciliation
 * step by step, timeouts and static members.
 */
#include "cg_shell.h"
#include "common/ch_test.h"

static void
setup(cg_shell *sh, int32_t partitions)
{
	ch_coord_cg_config cfg;
	ch_coord_cg_config_defaults(&cfg);
	cg_shell_init(sh, &cfg, 1);
	cg_shell_add_topic(sh, "t", partitions);
}

static void
check(cg_shell *sh)
{
	CH_CHECK(cg_shell_ok(sh));
}

static int32_t
count_answer(const cg_shell *sh)
{
	return sh->a.has_assignment ? sh->a.ntps : -1;
}

static void
t_validation(void)
{
	cg_shell sh;
	setup(&sh, 4);
	hb h;
	hb_join(&h, "g", "", "t");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_INVALID_REQUEST);
	CH_CHECK_EQ_STR(sh.a.msg, "MemberId can't be empty.");
	CH_CHECK(!sh.a.has_member_id);

	/* Kafka's messages, one broken rule per request. */
	static const struct {
		int edit;
		const char *msg;
	} invalid[] = {
		{0, "GroupId can't be empty."},
		{1, "InstanceId can't be empty."},
		{2, "RebalanceTimeoutMs must be provided in first request."},
		{3, "TopicPartitions must be empty when (re-)joining."},
		{4, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
		    "(re-)joining."},
		{5, "InstanceId can't be null."},
		{6, "MemberEpoch is invalid."},
	};
	for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
		hb_join(&h, "g", "m", "t");
		switch (invalid[i].edit) {
		case 0:
			h.r.GroupId = CH_STR_LIT(" ");
			break;
		case 1:
			h.r.InstanceId = CH_STR_LIT("");
			break;
		case 2:
			h.r.RebalanceTimeoutMs = -1;
			break;
		case 3:
			h.r.TopicPartitions_n = -1;
			break;
		case 4:
			h.r.SubscribedTopicNames_n = -1;
			break;
		case 5:
			h.r.MemberEpoch = -2;
			break;
		case 6:
			h.r.MemberEpoch = -3;
			break;
		}
		cg_shell_heartbeat(&sh, 0, 1, &h.r);
		CH_CHECK_EQ_INT(sh.a.err, CH_KERR_INVALID_REQUEST);
		CH_CHECK_EQ_STR(sh.a.msg, invalid[i].msg);
	}

	hb_join(&h, "g", "m", "t");
	h.r.ServerAssignor = CH_STR_LIT("sticky");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_UNSUPPORTED_ASSIGNOR);
	CH_CHECK_EQ_STR(sh.a.msg, "ServerAssignor sticky is not supported. Supported assignors: "
				  "uniform, range.");

	/* v0: an empty member id on a join gets one from the coordinator. */
	hb_join(&h, "g", "", "t");
	cg_shell_heartbeat(&sh, 0, 0, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK_EQ_INT(strlen(sh.a.member_id), CH_UUID_STR_LEN);
	CH_CHECK_EQ_INT(sh.a.epoch, 2);
	CH_CHECK_EQ_INT(sh.a.interval, 5000);
	check(&sh);
	cg_shell_free(&sh);
}

static void
t_not_found_unknown_full(void)
{
	cg_shell sh;
	ch_coord_cg_config cfg;
	ch_coord_cg_config_defaults(&cfg);
	cfg.max_size = 1;
	cg_shell_init(&sh, &cfg, 2);
	cg_shell_add_topic(&sh, "t", 4);
	snprintf(sh.classic[sh.nclassic++], 32, "old");
	hb h;
	hb_beat(&h, "g", "m", 4, &sh, NULL);
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_GROUP_ID_NOT_FOUND);
	CH_CHECK_EQ_STR(sh.a.msg, "Consumer group g not found.");
	hb_join(&h, "old", "m", "t");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_GROUP_ID_NOT_FOUND);
	CH_CHECK_EQ_STR(sh.a.msg, "Group old is not a consumer group.");

	hb_join(&h, "g", "a", "t");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	hb_join(&h, "g", "b", "t");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_GROUP_MAX_SIZE_REACHED);
	CH_CHECK_EQ_STR(sh.a.msg,
			"The consumer group has reached its maximum capacity of 1 members.");
	hb_beat(&h, "g", "zz", 2, &sh, NULL);
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_GROUP_MAX_SIZE_REACHED);

	cfg.max_size = 10;
	cg_shell_free(&sh);
	cg_shell_init(&sh, &cfg, 2);
	cg_shell_add_topic(&sh, "t", 4);
	hb_join(&h, "g", "a", "t");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	hb_beat(&h, "g", "zz", 2, &sh, NULL);
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_UNKNOWN_MEMBER_ID);
	CH_CHECK_EQ_STR(sh.a.msg, "Member zz is not a member of group g.");
	/* A refused join does not leave a group behind. */
	hb_join(&h, "h", "m", "t");
	h.r.ServerAssignor = CH_STR_LIT("nope");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	ch_coord_cg_group_view gv;
	CH_CHECK(!ch_coord_cg_group_get(sh.cg, CH_STR_LIT("h"), &gv));
	check(&sh);
	cg_shell_free(&sh);
}

/* Two members: the second gets its partitions only after the first
 * acknowledged their revocation. */
static void
t_revocation_before_assignment(void)
{
	cg_shell sh;
	setup(&sh, 4);
	hb h;
	hb_join(&h, "g", "a", "t");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, 2);
	CH_CHECK_EQ_INT(count_answer(&sh), 4);
	int32_t all[] = {0, 1, 2, 3, -1};
	hb_beat(&h, "g", "a", 2, &sh, all);
	cg_shell_heartbeat(&sh, 1000, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK(!sh.a.has_assignment); /* not a full request, nothing changed */
	ch_coord_cg_group_view gv;
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.state, CH_COORD_CG_STABLE);

	hb_join(&h, "g", "b", "t");
	cg_shell_heartbeat(&sh, 2000, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK_EQ_INT(sh.a.epoch, 3);
	CH_CHECK_EQ_INT(count_answer(&sh), 0); /* its partitions are still a's */
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.epoch, 3);
	CH_CHECK_EQ_INT(gv.state, CH_COORD_CG_RECONCILING);
	check(&sh);

	/* a learns what to keep, at its old epoch. */
	hb_beat(&h, "g", "a", 2, &sh, all);
	h.r.TopicPartitions_n = -1; /* an ordinary heartbeat: owned unchanged */
	cg_shell_heartbeat(&sh, 3000, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, 2);
	CH_CHECK_EQ_INT(count_answer(&sh), 2);
	int32_t keep[2] = {sh.a.tps[0].partition, sh.a.tps[1].partition};

	/* b asks again: nothing yet. */
	int32_t none[] = {-1};
	hb_beat(&h, "g", "b", 3, &sh, none);
	h.r.RebalanceTimeoutMs = 10000; /* names stay null: not a full request */
	cg_shell_heartbeat(&sh, 3500, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, 3);
	CH_CHECK(!sh.a.has_assignment);

	/* a acknowledges: reports only what it keeps; it moves to epoch 3. */
	int32_t kept[] = {keep[0], keep[1], -1};
	hb_beat(&h, "g", "a", 2, &sh, kept);
	cg_shell_heartbeat(&sh, 4000, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, 3);
	check(&sh);

	/* Now b gets the two others. */
	hb_beat(&h, "g", "b", 3, &sh, none);
	cg_shell_heartbeat(&sh, 4500, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, 3);
	CH_CHECK_EQ_INT(count_answer(&sh), 2);
	CH_CHECK(sh.a.tps[0].partition != keep[0] && sh.a.tps[0].partition != keep[1]);
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.state, CH_COORD_CG_STABLE);
	check(&sh);

	/* The lost-response rule: a one epoch behind, owning a subset of its
	 * assignment, is accepted; two behind or owning more is fenced. */
	hb_beat(&h, "g", "a", 2, &sh, kept);
	cg_shell_heartbeat(&sh, 5000, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	hb_beat(&h, "g", "a", 2, &sh, all);
	cg_shell_heartbeat(&sh, 5000, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_FENCED_MEMBER_EPOCH);
	CH_CHECK_EQ_STR(sh.a.msg, "The consumer group member has a smaller member epoch (2) than "
				  "the one known by the group coordinator (3). The member must "
				  "abandon all its partitions and rejoin.");
	hb_beat(&h, "g", "a", 8, &sh, kept);
	cg_shell_heartbeat(&sh, 5000, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_FENCED_MEMBER_EPOCH);
	check(&sh);

	/* Fenced, a rejoins at epoch 0 under the same id, owning nothing (what
	 * Java's consumer and librdkafka do, KIP-1082): Kafka 4.4 accepts epoch
	 * 0 whatever the member's epoch (throwIfConsumerGroupMemberEpochIsInvalid
	 * returns at once), and the full answer hands it back its assignment at
	 * the current epoch. Fencing it again would keep it out until its
	 * session timed out. */
	hb_join(&h, "g", "a", "t");
	cg_shell_heartbeat(&sh, 5500, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK_EQ_INT(sh.a.epoch, 3);
	CH_CHECK(sh.a.has_assignment);
	CH_CHECK_EQ_INT(count_answer(&sh), 2);
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.epoch, 3); /* same subscription: no new group epoch */
	check(&sh);
	cg_shell_free(&sh);
}

/* A member that reported an owned list short of its assignment before it
 * ever reported all of it (Java's consumer acknowledges a partial
 * reconciliation while it resolves topic ids, then takes the rest): the
 * missing partitions are not proof it let them go, so a revocation waits
 * for a report after it was told (Kafka gives them to their new owner at
 * once; it_java_consumer_protocol's pattern test caught both members owning
 * jrx-1:2 and :3 under load). A rejoin at epoch 0 starts from nothing. */
static void
t_partial_acknowledgement(void)
{
	cg_shell sh;
	setup(&sh, 4);
	hb h;
	hb_join(&h, "g", "a", "t");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(count_answer(&sh), 4);
	int32_t none[] = {-1}, all[] = {0, 1, 2, 3, -1};
	hb_beat(&h, "g", "a", 2, &sh, none); /* it has taken none of them yet */
	cg_shell_heartbeat(&sh, 100, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	hb_join(&h, "g", "b", "t");
	cg_shell_heartbeat(&sh, 200, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, 3);
	CH_CHECK_EQ_INT(count_answer(&sh), 0);

	/* a again reports nothing: told to give two back, at epoch 2 */
	hb_beat(&h, "g", "a", 2, &sh, none);
	cg_shell_heartbeat(&sh, 300, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK_EQ_INT(sh.a.epoch, 2);
	CH_CHECK_EQ_INT(count_answer(&sh), 2);
	int32_t kept[] = {sh.a.tps[0].partition, sh.a.tps[1].partition, -1};
	hb_beat(&h, "g", "b", 3, &sh, none);
	cg_shell_heartbeat(&sh, 400, 1, &h.r);
	CH_CHECK(!sh.a.has_assignment || sh.a.ntps == 0); /* still a's */
	check(&sh);

	/* a finishes taking the four (the older answer), then gives two back */
	hb_beat(&h, "g", "a", 2, &sh, all);
	cg_shell_heartbeat(&sh, 500, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, 2);
	hb_beat(&h, "g", "b", 3, &sh, none);
	cg_shell_heartbeat(&sh, 600, 1, &h.r);
	CH_CHECK(!sh.a.has_assignment || sh.a.ntps == 0);
	hb_beat(&h, "g", "a", 2, &sh, kept);
	cg_shell_heartbeat(&sh, 700, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, 3);
	hb_beat(&h, "g", "b", 3, &sh, none);
	cg_shell_heartbeat(&sh, 800, 1, &h.r);
	CH_CHECK_EQ_INT(count_answer(&sh), 2);
	check(&sh);

	/* a rejoins at epoch 0 owning nothing (fenced, KIP-1082) and is handed
	 * its two back: not taken yet either. c joins; a and b answer owning
	 * nothing: whichever gives one up is told to first, c gets nothing yet */
	hb_join(&h, "g", "a", "t");
	cg_shell_heartbeat(&sh, 900, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK_EQ_INT(count_answer(&sh), 2);
	hb_join(&h, "g", "c", "t");
	cg_shell_heartbeat(&sh, 1000, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, 4);
	CH_CHECK_EQ_INT(count_answer(&sh), 0);
	int given_up = 0;
	const char *ab[] = {"a", "b"};
	for (int i = 0; i < 2; i++) {
		hb_beat(&h, "g", ab[i], 3, &sh, none);
		cg_shell_heartbeat(&sh, 1100 + i, 1, &h.r);
		CH_CHECK_EQ_INT(sh.a.err, 0);
		if (sh.a.has_assignment && sh.a.ntps < 2) {
			CH_CHECK_EQ_INT(sh.a.epoch, 3); /* UNREVOKED_PARTITIONS */
			given_up++;
		}
	}
	CH_CHECK_EQ_INT(given_up, 1);
	hb_beat(&h, "g", "c", 4, &sh, none);
	cg_shell_heartbeat(&sh, 1200, 1, &h.r);
	CH_CHECK(!sh.a.has_assignment || sh.a.ntps == 0);
	check(&sh);
	cg_shell_free(&sh);
}

/* A member that never acknowledges its revocation is fenced at its
 * rebalance timeout; one that stops heartbeating at its session timeout. */
static void
t_timeouts(void)
{
	cg_shell sh;
	setup(&sh, 4);
	hb h;
	hb_join(&h, "g", "a", "t");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	hb_join(&h, "g", "b", "t");
	cg_shell_heartbeat(&sh, 100, 1, &h.r);
	int32_t all[] = {0, 1, 2, 3, -1};
	hb_beat(&h, "g", "a", 2, &sh, all);
	cg_shell_heartbeat(&sh, 200, 1, &h.r); /* UNREVOKED from now, timeout 10 s */
	CH_CHECK_EQ_INT(count_answer(&sh), 2);
	/* b keeps heartbeating; a keeps reporting everything. */
	int32_t none[] = {-1};
	for (int64_t t = 1000; t < 10200; t += 1000) {
		hb_beat(&h, "g", "b", 3, &sh, none);
		cg_shell_heartbeat(&sh, t, 1, &h.r);
		CH_CHECK(!sh.a.has_assignment || sh.a.ntps == 0);
		ch_coord_cg_tick(sh.cg, t);
	}
	CH_CHECK_EQ_INT(ch_coord_cg_next_deadline(sh.cg), 10200);
	ch_coord_cg_tick(sh.cg, 10200);
	ch_coord_cg_group_view gv;
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.members, 1);
	CH_CHECK_EQ_INT(gv.epoch, 4);
	hb_beat(&h, "g", "b", 3, &sh, none);
	cg_shell_heartbeat(&sh, 11000, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, 4);
	CH_CHECK_EQ_INT(count_answer(&sh), 4);
	hb_beat(&h, "g", "a", 2, &sh, all);
	cg_shell_heartbeat(&sh, 11000, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_UNKNOWN_MEMBER_ID);
	/* b's session: 45 s after its last heartbeat. */
	ch_coord_cg_tick(sh.cg, 11000 + 44999);
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.members, 1);
	ch_coord_cg_tick(sh.cg, 11000 + 45000);
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.members, 0);
	CH_CHECK_EQ_INT(gv.state, CH_COORD_CG_EMPTY);
	check(&sh);
	cg_shell_free(&sh);
}

static void
t_leave_and_static(void)
{
	cg_shell sh;
	setup(&sh, 4);
	hb h;
	hb_join(&h, "g", "a", "t");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	hb_join(&h, "g", "s1", "t");
	h.r.InstanceId = CH_STR_LIT("inst");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	int32_t all[] = {0, 1, 2, 3, -1};
	hb_beat(&h, "g", "a", 2, &sh, all);
	cg_shell_heartbeat(&sh, 10, 1, &h.r);
	int32_t kept[] = {sh.a.tps[0].partition, sh.a.tps[1].partition, -1};
	hb_beat(&h, "g", "a", 2, &sh, kept);
	cg_shell_heartbeat(&sh, 20, 1, &h.r);
	int32_t none[] = {-1};
	hb_beat(&h, "g", "s1", 3, &sh, none);
	h.r.InstanceId = CH_STR_LIT("inst");
	cg_shell_heartbeat(&sh, 30, 1, &h.r);
	CH_CHECK_EQ_INT(count_answer(&sh), 2);
	int32_t s_parts[] = {sh.a.tps[0].partition, sh.a.tps[1].partition, -1};
	ch_coord_cg_group_view gv;
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.epoch, 3);
	CH_CHECK_EQ_INT(gv.state, CH_COORD_CG_STABLE);

	/* The instance id is taken while s1 is there. */
	hb_join(&h, "g", "s2", "t");
	h.r.InstanceId = CH_STR_LIT("inst");
	cg_shell_heartbeat(&sh, 40, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_UNRELEASED_INSTANCE_ID);
	CH_CHECK_EQ_STR(sh.a.msg, "Static member s2 with instance id inst cannot join the group "
				  "because the instance id is owned by s1 member.");
	hb_beat(&h, "g", "s2", 3, &sh, none);
	h.r.InstanceId = CH_STR_LIT("inst");
	cg_shell_heartbeat(&sh, 40, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_FENCED_INSTANCE_ID);

	/* s1 leaves for now (-2): epoch -2 answered, no rebalance. */
	hb_beat(&h, "g", "s1", -2, &sh, NULL);
	h.r.InstanceId = CH_STR_LIT("inst");
	cg_shell_heartbeat(&sh, 50, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK_EQ_INT(sh.a.epoch, -2);
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.epoch, 3);
	check(&sh);

	/* It comes back under a new member id: same partitions, same epoch. */
	hb_join(&h, "g", "s2", "t");
	h.r.InstanceId = CH_STR_LIT("inst");
	cg_shell_heartbeat(&sh, 60, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK_EQ_INT(sh.a.epoch, 3);
	CH_CHECK_EQ_INT(count_answer(&sh), 2);
	CH_CHECK_EQ_INT(sh.a.tps[0].partition, s_parts[0]);
	CH_CHECK_EQ_INT(sh.a.tps[1].partition, s_parts[1]);
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.epoch, 3);
	CH_CHECK_EQ_INT(gv.members, 2);
	hb_beat(&h, "g", "s1", 3, &sh, s_parts);
	h.r.InstanceId = CH_STR_LIT("inst");
	cg_shell_heartbeat(&sh, 70, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_FENCED_INSTANCE_ID);
	check(&sh);

	/* A dynamic leave (-1): the epoch moves, the other member gets all. */
	hb_beat(&h, "g", "a", -1, &sh, NULL);
	cg_shell_heartbeat(&sh, 80, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK_EQ_INT(sh.a.epoch, -1);
	CH_CHECK_EQ_STR(sh.a.member_id, "a");
	hb_beat(&h, "g", "s2", 3, &sh, s_parts);
	h.r.InstanceId = CH_STR_LIT("inst");
	cg_shell_heartbeat(&sh, 90, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, 4);
	CH_CHECK_EQ_INT(count_answer(&sh), 4);
	hb_beat(&h, "g", "a", -1, &sh, NULL);
	cg_shell_heartbeat(&sh, 100, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_UNKNOWN_MEMBER_ID);
	hb_beat(&h, "g", "x", -2, &sh, NULL);
	h.r.InstanceId = CH_STR_LIT("other");
	cg_shell_heartbeat(&sh, 100, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_UNKNOWN_MEMBER_ID);
	CH_CHECK_EQ_STR(sh.a.msg, "Instance id other is unknown.");
	check(&sh);
	cg_shell_free(&sh);
}

/* ServerAssignor picks the assignor: range gives contiguous ranges. */
static void
t_server_assignor(void)
{
	cg_shell sh;
	setup(&sh, 4);
	hb h;
	hb_join(&h, "g", "a", "t");
	h.r.ServerAssignor = CH_STR_LIT("range");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	hb_join(&h, "g", "b", "t");
	h.r.ServerAssignor = CH_STR_LIT("range");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	ch_coord_cg_group_view gv;
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.assignment_epoch, 3);
	/* Range over one topic of 4 partitions, members a < b: a 0-1, b 2-3. */
	int32_t all[] = {0, 1, 2, 3, -1};
	hb_beat(&h, "g", "a", 2, &sh, all);
	cg_shell_heartbeat(&sh, 10, 1, &h.r);
	CH_CHECK_EQ_INT(count_answer(&sh), 2);
	CH_CHECK_EQ_INT(sh.a.tps[0].partition, 0);
	CH_CHECK_EQ_INT(sh.a.tps[1].partition, 1);
	check(&sh);
	cg_shell_free(&sh);
}

/* Topics created later or growing: the group epoch moves at the next
 * heartbeat after ch_coord_cg_metadata_changed. */
static void
t_metadata_change(void)
{
	cg_shell sh;
	setup(&sh, 2);
	hb h;
	hb_join(&h, "g", "a", "t");
	h.names[1] = CH_STR_LIT("later");
	h.r.SubscribedTopicNames_n = 2;
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(count_answer(&sh), 2);
	cg_shell_add_topic(&sh, "later", 3);
	int32_t all[] = {0, 1, -1};
	hb_beat(&h, "g", "a", 2, &sh, all);
	cg_shell_heartbeat(&sh, 10, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, 2); /* not told yet */
	ch_coord_cg_metadata_changed(sh.cg);
	hb_beat(&h, "g", "a", 2, &sh, all);
	cg_shell_heartbeat(&sh, 20, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, 3);
	CH_CHECK_EQ_INT(count_answer(&sh), 5);
	check(&sh);
	cg_shell_free(&sh);
}

/* A join subscribed by regex only (names null, as the Java client sends). */
static hb *
hb_join_regex(hb *h, const char *group, const char *member, const char *regex)
{
	hb_join(h, group, member, NULL);
	h->r.SubscribedTopicNames_n = -1;
	h->r.SubscribedTopicRegex = ch_str_c(regex);
	return h;
}

/* A heartbeat owning exactly what the last answer assigned (any topic). */
static hb *
hb_ack(hb *h, const char *group, const char *member, const cg_shell *sh)
{
	hb_beat(h, group, member, sh->a.epoch, sh, NULL);
	h->r.TopicPartitions_n = 0;
	for (int32_t i = 0; i < sh->a.ntps; i++) {
		int32_t t = h->r.TopicPartitions_n;
		if (t == 0 || !ch_uuid_eq(&h->tps[t - 1].TopicId, &sh->a.tps[i].topic)) {
			h->tps[t].TopicId = sh->a.tps[i].topic;
			h->tps[t].Partitions = h->parts[t];
			h->tps[t].Partitions_n = 0;
			h->r.TopicPartitions_n = ++t;
		}
		ch_ConsumerGroupHeartbeatRequest_TopicPartitions *tp = &h->tps[t - 1];
		h->parts[t - 1][tp->Partitions_n++] = sh->a.tps[i].partition;
	}
	return h;
}

typedef struct member_target {
	const char *member;
	int32_t n;
} member_target;

static void
target_of(void *ud, const ch_coord_cg_member_view *m)
{
	member_target *t = ud;
	if (strcmp(m->member_id, t->member) == 0)
		t->n = m->ntarget;
}

/* How many partitions the group's target gives member. */
static int32_t
target_size(const cg_shell *sh, const char *member)
{
	member_target t = {member, -1};
	ch_coord_cg_foreach_member(sh->cg, CH_STR_LIT("g"), target_of, &t);
	return t.n;
}

/* Kafka's INVALID_REGULAR_EXPRESSION (128) for a regex RE2J refuses, with
 * its message; nothing of the request stays (no group, no member). A regex
 * already in use is not compiled again. */
static void
t_regex_invalid(void)
{
	cg_shell sh;
	setup(&sh, 2);
	hb h;
	hb_join_regex(&h, "g", "a", "(abc");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_INVALID_REGULAR_EXPRESSION);
	CH_CHECK_EQ_INT(CH_KERR_INVALID_REGULAR_EXPRESSION, 128);
	CH_CHECK_EQ_STR(sh.a.msg, "SubscribedTopicRegex `(abc` is not a valid regular "
				  "expression: missing closing ).");
	ch_coord_cg_group_view gv;
	CH_CHECK(!ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));

	/* a member of a live group switching to a bad one keeps what it had */
	hb_join_regex(&h, "g", "a", "t.*");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK_EQ_INT(count_answer(&sh), 2);
	hb_ack(&h, "g", "a", &sh);
	h.r.SubscribedTopicRegex = CH_STR_LIT("t[");
	cg_shell_heartbeat(&sh, 10, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_INVALID_REGULAR_EXPRESSION);
	CH_CHECK_EQ_STR(sh.a.msg, "SubscribedTopicRegex `t[` is not a valid regular "
				  "expression: missing closing ].");
	CH_CHECK_EQ_INT(target_size(&sh, "a"), 2);
	/* a static member refused the same way, before it takes anything */
	hb_join_regex(&h, "g", "s", "a**");
	h.r.InstanceId = CH_STR_LIT("i");
	cg_shell_heartbeat(&sh, 20, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_INVALID_REGULAR_EXPRESSION);
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.members, 1);
	/* "" is no regex (librdkafka sends it with a list) */
	hb_join(&h, "g", "b", "t");
	h.r.SubscribedTopicRegex = CH_STR_LIT("");
	cg_shell_heartbeat(&sh, 30, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	check(&sh);
	cg_shell_free(&sh);
}

/* A regex member gets the topics its regex matches in full (not a part of
 * the name), its names besides; topics created later join once the
 * regexes may be resolved again (not within 10 s of the last time, as
 * Kafka), deleted ones leave at once; topics it may not DESCRIBE never
 * match; every step keeps the invariants. */
static void
t_regex_subscription(void)
{
	cg_shell sh;
	setup(&sh, 2); /* "t" */
	cg_shell_add_topic(&sh, "other", 1);
	cg_shell_add_topic(&sh, "xt", 1);
	hb h;
	hb_join_regex(&h, "g", "a", "t.*");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK_EQ_INT(count_answer(&sh), 2); /* t-0, t-1; not xt */
	CH_CHECK_EQ_INT(sh.a.epoch, 2);
	CH_CHECK_EQ_INT(sh.scans, 1);
	check(&sh);

	/* names and a regex: both */
	hb_join(&h, "g", "b", "other");
	h.r.SubscribedTopicRegex = CH_STR_LIT("t.*");
	cg_shell_heartbeat(&sh, 100, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK_EQ_INT(sh.a.epoch, 3);
	CH_CHECK_EQ_INT(sh.scans, 1); /* the same regex: not resolved again */
	CH_CHECK_EQ_INT(target_size(&sh, "a") + target_size(&sh, "b"), 3);
	CH_CHECK(target_size(&sh, "b") >= 1);
	check(&sh);

	/* a topic made after the join, one denied */
	cg_shell_add_topic(&sh, "t2", 3);
	cg_shell_add_topic(&sh, "t3", 4);
	snprintf(sh.denied[sh.ndenied++], 16, "t3");
	ch_coord_cg_metadata_changed(sh.cg);
	hb_beat(&h, "g", "a", 2, &sh, NULL);
	h.r.TopicPartitions_n = -1;
	cg_shell_heartbeat(&sh, 9000, 1, &h.r); /* within 10 s of the resolution */
	CH_CHECK_EQ_INT(sh.scans, 1);
	CH_CHECK_EQ_INT(target_size(&sh, "a") + target_size(&sh, "b"), 3);
	h.r.MemberEpoch = sh.a.epoch;
	cg_shell_heartbeat(&sh, 10001, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK_EQ_INT(sh.scans, 2); /* one resolution for both members */
	ch_coord_cg_group_view gv;
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.epoch, 4);
	CH_CHECK_EQ_INT(target_size(&sh, "a") + target_size(&sh, "b"), 6); /* t, t2, other */
	check(&sh);

	/* deleted: gone at the next heartbeat, no resolution needed */
	cg_shell_del_topic(&sh, "t2");
	ch_coord_cg_metadata_changed(sh.cg);
	h.r.MemberEpoch = sh.a.epoch;
	cg_shell_heartbeat(&sh, 10002, 1, &h.r);
	CH_CHECK_EQ_INT(sh.scans, 2);
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.epoch, 5);
	CH_CHECK_EQ_INT(target_size(&sh, "a") + target_size(&sh, "b"), 3);
	check(&sh);

	/* made again (a new id): matched again once due */
	cg_shell_add_topic(&sh, "t2", 2);
	ch_coord_cg_metadata_changed(sh.cg);
	h.r.MemberEpoch = sh.a.epoch;
	cg_shell_heartbeat(&sh, 20002, 1, &h.r);
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.epoch, 6);
	CH_CHECK_EQ_INT(target_size(&sh, "a") + target_size(&sh, "b"), 5);
	check(&sh);

	/* the last member of a regex leaving takes its topics out */
	hb_beat(&h, "g", "b", 3, &sh, NULL);
	h.r.MemberEpoch = -1;
	cg_shell_heartbeat(&sh, 20003, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	hb_beat(&h, "g", "a", 2, &sh, NULL);
	h.r.MemberEpoch = -1;
	cg_shell_heartbeat(&sh, 20004, 1, &h.r);
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.members, 0);
	check(&sh);
	cg_shell_free(&sh);
}

/* A member switching regexes: the old one goes with its last subscriber,
 * a new one is resolved (now, or once 10 s have passed since the last
 * resolution), and one that another member uses is taken as resolved. */
static void
t_regex_change(void)
{
	cg_shell sh;
	setup(&sh, 2); /* "t" */
	cg_shell_add_topic(&sh, "other", 3);
	hb h;
	hb_join_regex(&h, "g", "a", "t");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(count_answer(&sh), 2);
	hb_join_regex(&h, "g", "b", "o.*");
	cg_shell_heartbeat(&sh, 20000, 1, &h.r);
	CH_CHECK_EQ_INT(sh.scans, 2);
	CH_CHECK_EQ_INT(target_size(&sh, "b"), 3);
	/* a takes b's regex, already resolved: a rebalance at once */
	hb_beat(&h, "g", "a", 2, &sh, NULL);
	h.r.TopicPartitions_n = -1;
	h.r.SubscribedTopicRegex = CH_STR_LIT("o.*");
	cg_shell_heartbeat(&sh, 20001, 1, &h.r);
	CH_CHECK_EQ_INT(sh.scans, 2);
	ch_coord_cg_group_view gv;
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.epoch, 4);
	CH_CHECK_EQ_INT(target_size(&sh, "a") + target_size(&sh, "b"), 3); /* t left */
	check(&sh);
	/* b moves to a new one within 10 s: resolved only later */
	hb_beat(&h, "g", "b", 3, &sh, NULL);
	h.r.TopicPartitions_n = -1;
	h.r.SubscribedTopicRegex = CH_STR_LIT("(t|other)");
	cg_shell_heartbeat(&sh, 25000, 1, &h.r);
	CH_CHECK_EQ_INT(sh.scans, 2);
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.epoch, 4); /* Kafka waits for the resolution to rebalance */
	hb_beat(&h, "g", "b", sh.a.epoch, &sh, NULL);
	h.r.TopicPartitions_n = -1;
	cg_shell_heartbeat(&sh, 30001, 1, &h.r);
	CH_CHECK_EQ_INT(sh.scans, 3);
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.epoch, 5);
	CH_CHECK_EQ_INT(target_size(&sh, "a") + target_size(&sh, "b"), 5); /* t and other */
	check(&sh);
	cg_shell_free(&sh);
}

/* An OffsetCommit's partitions of topic 1, as the API layer passes them. */
static int16_t
commit(cg_shell *sh, const char *member, int32_t epoch, const int32_t *parts, int32_t n, char *msg)
{
	ch_coord_cg_commit_tp tps[8];
	for (int32_t i = 0; i < n; i++)
		tps[i] = (ch_coord_cg_commit_tp){sh->topics[0].id, true, CH_STR_LIT("t"), parts[i]};
	return ch_coord_cg_validate_commit(sh->cg, CH_STR_LIT("g"), ch_str_c(member), epoch, 9, tps,
					   n, msg, 256);
}

/* KIP-1251: a member whose epoch moved on without it knowing (the answer
 * that told it was lost) still commits what it held at its epoch; what it
 * no longer holds, or got after that epoch, is STALE_MEMBER_EPOCH, as is
 * an epoch from the future. */
static void
t_commit_fencing(void)
{
	cg_shell sh;
	setup(&sh, 4);
	hb h;
	char msg[256];
	hb_join(&h, "g", "a", "t");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, 2);
	int32_t all[] = {0, 1, 2, 3, -1};
	hb_join(&h, "g", "b", "t");
	cg_shell_heartbeat(&sh, 10, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, 3);
	/* a learns what to keep (its answer at epoch 2 arrives), then
	 * acknowledges; the answer that says epoch 3 is lost. */
	hb_beat(&h, "g", "a", 2, &sh, all);
	cg_shell_heartbeat(&sh, 20, 1, &h.r);
	int32_t keep[] = {sh.a.tps[0].partition, sh.a.tps[1].partition, -1};
	int32_t gone[4], ngone = 0;
	for (int32_t p = 0; p < 4; p++)
		if (p != keep[0] && p != keep[1])
			gone[ngone++] = p;
	hb_beat(&h, "g", "a", 2, &sh, keep);
	cg_shell_heartbeat(&sh, 30, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, 3); /* lost on the way */
	/* Its commit at epoch 2 of what it kept: assigned at 2 <= 2 <= 3. */
	CH_CHECK_EQ_INT(commit(&sh, "a", 2, keep, 2, msg), 0);
	CH_CHECK_EQ_INT(commit(&sh, "a", 3, keep, 2, msg), 0);
	/* What it gave up is no longer its own. */
	CH_CHECK_EQ_INT(commit(&sh, "a", 2, gone, 1, msg), CH_KERR_STALE_MEMBER_EPOCH);
	char want[160];
	snprintf(want, sizeof want,
		 "Partition t-%d is not assigned or pending revocation for member.", gone[0]);
	CH_CHECK_EQ_STR(msg, want);
	CH_CHECK_EQ_INT(commit(&sh, "a", 4, keep, 2, msg), CH_KERR_STALE_MEMBER_EPOCH);
	CH_CHECK_EQ_STR(msg, "Received member epoch 4 is newer than current member epoch 3.");
	/* b gets the other two at epoch 3: epoch 2 is older than that. */
	int32_t none[] = {-1};
	hb_beat(&h, "g", "b", 3, &sh, none);
	cg_shell_heartbeat(&sh, 40, 1, &h.r);
	CH_CHECK_EQ_INT(count_answer(&sh), 2);
	CH_CHECK_EQ_INT(commit(&sh, "b", 3, gone, 2, msg), 0);
	CH_CHECK_EQ_INT(commit(&sh, "b", 2, gone, 1, msg), CH_KERR_STALE_MEMBER_EPOCH);
	snprintf(want, sizeof want,
		 "Received member epoch 2 is older than assignment epoch 3 for partition t-%d.",
		 gone[0]);
	CH_CHECK_EQ_STR(msg, want);
	/* A partition a still revokes counts as its own until it lets go. */
	hb_join(&h, "g", "c", "t");
	cg_shell_heartbeat(&sh, 50, 1, &h.r);
	hb_beat(&h, "g", "a", 3, &sh, keep);
	cg_shell_heartbeat(&sh, 60, 1, &h.r);
	ch_coord_cg_group_view gv;
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.epoch, 4);
	CH_CHECK_EQ_INT(commit(&sh, "a", 2, keep, 2, msg), 0);
	check(&sh);
	cg_shell_free(&sh);
}

/* Epochs and answers as Kafka 4.4 gives them (conformance_kafka): a new
 * group is at epoch 1 (KAFKA-20268), so a member subscribed to nothing stays
 * there and the first target is epoch 2; a full heartbeat of a regex member
 * (names null) carries the assignment; the last member's leave brings the
 * target epoch to the group's (KAFKA-20442); a leave names a missing group
 * "Group", an empty classic group is "not a consumer group". */
static void
t_kafka44_epochs(void)
{
	cg_shell sh;
	setup(&sh, 2);
	snprintf(sh.classic_known[sh.nclassic_known++], 32, "simple");
	hb h;
	hb_join(&h, "e", "a", NULL);
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK_EQ_INT(sh.a.epoch, 1);
	ch_coord_cg_group_view gv;
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("e"), &gv));
	CH_CHECK_EQ_INT(gv.epoch, 1);
	CH_CHECK_EQ_INT(gv.assignment_epoch, 1);

	hb_join_regex(&h, "g", "r", "t");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, 2);
	CH_CHECK_EQ_INT(count_answer(&sh), 2);
	hb_ack(&h, "g", "r", &sh);
	h.r.SubscribedTopicRegex = CH_STR_LIT("t");
	h.r.SubscribedTopicNames_n = -1;
	h.r.RebalanceTimeoutMs = 10000;
	cg_shell_heartbeat(&sh, 10, 1, &h.r);
	CH_CHECK(sh.a.has_assignment); /* a full request, unchanged */
	CH_CHECK_EQ_INT(count_answer(&sh), 2);
	h.r.RebalanceTimeoutMs = -1;
	cg_shell_heartbeat(&sh, 20, 1, &h.r);
	CH_CHECK(!sh.a.has_assignment);

	hb_beat(&h, "g", "r", -1, &sh, NULL);
	cg_shell_heartbeat(&sh, 30, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, -1);
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.state, CH_COORD_CG_EMPTY);
	CH_CHECK_EQ_INT(gv.epoch, 3);
	CH_CHECK_EQ_INT(gv.assignment_epoch, 3);

	hb_beat(&h, "nope", "r", -1, &sh, NULL);
	cg_shell_heartbeat(&sh, 40, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_GROUP_ID_NOT_FOUND);
	CH_CHECK_EQ_STR(sh.a.msg, "Group nope not found.");
	hb_beat(&h, "simple", "r", 4, &sh, NULL);
	cg_shell_heartbeat(&sh, 50, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_GROUP_ID_NOT_FOUND);
	CH_CHECK_EQ_STR(sh.a.msg, "Group simple is not a consumer group.");
	hb_beat(&h, "simple", "r", -1, &sh, NULL);
	cg_shell_heartbeat(&sh, 60, 1, &h.r);
	CH_CHECK_EQ_STR(sh.a.msg, "Group simple is not a consumer group.");
	hb_join(&h, "simple", "r", "t"); /* a join takes an empty classic group's id */
	cg_shell_heartbeat(&sh, 70, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	check(&sh);
	cg_shell_free(&sh);
}

CH_TEST_MAIN(CH_TEST(t_validation), CH_TEST(t_kafka44_epochs), CH_TEST(t_not_found_unknown_full),
	     CH_TEST(t_revocation_before_assignment), CH_TEST(t_partial_acknowledgement),
	     CH_TEST(t_timeouts), CH_TEST(t_leave_and_static), CH_TEST(t_server_assignor),
	     CH_TEST(t_metadata_change), CH_TEST(t_commit_fencing), CH_TEST(t_regex_invalid),
	     CH_TEST(t_regex_subscription), CH_TEST(t_regex_change))
