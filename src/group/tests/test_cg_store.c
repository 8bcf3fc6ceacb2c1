/*
 * test_cg_store.c: the consumer groups' records in __consumer_offsets
 * (ch_coord_cg_records.h, ch_coord_cg_store.c): the bytes against Kafka
 * 4.4's schemas, answers held until the append is durable, failed appends,
 * tombstones, and restarts that replay into the same state.
 */
#include "cg_shell.h"
#include "common/ch_test.h"
#include "group/ch_coord_cg_records.h"
#include "kafka44_cg_records.h"

static void
check_bytes(const ch_buf *b, const uint8_t *want, size_t n)
{
	CH_CHECK_EQ_INT((int)b->len, (int)n);
	if (b->len == n)
		CH_CHECK(memcmp(b->data, want, n) == 0);
	if (b->len != n || memcmp(b->data, want, n) != 0) {
		for (size_t i = 0; i < b->len; i++)
			fprintf(stderr, "%02x ", b->data[i]);
		fprintf(stderr, "\n");
	}
}

#define CHECK_BYTES(b, ...)                                                                        \
	do {                                                                                       \
		static const uint8_t want_[] = {__VA_ARGS__};                                      \
		check_bytes(b, want_, sizeof want_);                                               \
	} while (0)

static const ch_uuid TOPIC = {{0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb,
			       0xcc, 0xdd, 0xee, 0xff, 0x00}};
#define TOPIC_BYTES                                                                                \
	0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff,  \
		0x00

/* Each record type byte for byte as Kafka 4.4's generated writers lay it
 * out (key: int16 type, int16-length strings; value: int16 version 0,
 * compact strings and arrays, tagged fields). */
static void
t_bytes(void)
{
	ch_coord_record r;
	ch_coord_cgrec_group(&r, "g", 5, 0);
	CHECK_BYTES(&r.key, 0, 3, 0, 1, 'g');
	CHECK_BYTES(&r.value, 0, 0, 0, 0, 0, 5, 0);
	CH_CHECK(!r.tombstone);
	ch_coord_cgrec_free(&r);
	ch_coord_cgrec_group(&r, "g", 5, 0x0102030405060708);
	CHECK_BYTES(&r.value, 0, 0, 0, 0, 0, 5, 1, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8);
	ch_coord_cgrec_free(&r);

	const char *topics[] = {"t"};
	ch_coord_cgrec_member m = {
		.instance_id = CH_STR_NULL,
		.rack_id = CH_STR_LIT("r1"),
		.client_id = CH_STR_LIT("c"),
		.client_host = CH_STR_LIT("/h"),
		.topics = topics,
		.ntopics = 1,
		.regex = CH_STR_NULL,
		.rebalance_timeout_ms = 10000,
		.server_assignor = CH_STR_LIT("uniform"),
	};
	ch_coord_cgrec_member_meta(&r, "g", "m", &m);
	CHECK_BYTES(&r.key, 0, 5, 0, 1, 'g', 0, 1, 'm');
	CHECK_BYTES(&r.value, 0, 0, 0, 3, 'r', '1', 2, 'c', 3, '/', 'h', 2, 2, 't', 0, 0, 0, 0x27,
		    0x10, 8, 'u', 'n', 'i', 'f', 'o', 'r', 'm',
		    /* ClassicMemberMetadata null, as Kafka 4.4 writes it */ 1, 0, 1, 0);
	ch_coord_cgrec_free(&r);

	ch_coord_cg_tp tps[] = {{TOPIC, 0}, {TOPIC, 2}};
	ch_coord_cgrec_current(&r, "g", "m", 3, 2, 1, tps, NULL, 2, NULL, NULL, 0);
	CHECK_BYTES(&r.key, 0, 8, 0, 1, 'g', 0, 1, 'm');
	CHECK_BYTES(&r.value, 0, 0, 0, 0, 0, 3, 0, 0, 0, 2, 1, 2, TOPIC_BYTES, 3, 0, 0, 0, 0, 0, 0,
		    0, 2, 0, 1, 0);
	ch_coord_cgrec_free(&r);
	/* With AssignmentEpochs (KIP-1251): tag 0 of each topic, size 9. */
	const int32_t eps[] = {2, 3};
	ch_coord_cgrec_current(&r, "g", "m", 3, 2, 0, tps, eps, 2, NULL, NULL, 0);
	CHECK_BYTES(&r.value, 0, 0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 2, TOPIC_BYTES, 3, 0, 0, 0, 0, 0, 0,
		    0, 2, 1, 0, 9, 3, 0, 0, 0, 2, 0, 0, 0, 3, 1, 0);
	ch_coord_cgrec_free(&r);

	ch_coord_cgrec_target_member(&r, "g", "m", tps + 1, 1);
	CHECK_BYTES(&r.key, 0, 7, 0, 1, 'g', 0, 1, 'm');
	CHECK_BYTES(&r.value, 0, 0, 2, TOPIC_BYTES, 2, 0, 0, 0, 2, 0, 0);
	ch_coord_cgrec_free(&r);

	ch_coord_cgrec_target_meta(&r, "g", 3, 0);
	CHECK_BYTES(&r.key, 0, 6, 0, 1, 'g');
	CHECK_BYTES(&r.value, 0, 0, 0, 0, 0, 3, 0);
	ch_coord_cgrec_free(&r);

	ch_coord_cgrec_tombstone(&r, CGREC_MEMBER, "g", "m");
	CHECK_BYTES(&r.key, 0, 5, 0, 1, 'g', 0, 1, 'm');
	CH_CHECK(r.tombstone);
	ch_coord_cgrec_free(&r);
	ch_coord_cgrec_tombstone(&r, CGREC_PARTITION_META, "g", "m");
	CHECK_BYTES(&r.key, 0, 4, 0, 1, 'g');
	ch_coord_cgrec_free(&r);
}

/* What Kafka 4.4 writes and cohortd does not: AssignmentEpochs (KIP-1251)
 * in the current assignment, AssignmentTimestamp, a tag of a later version
 * (CreationTimeMs, tag 1): all decoded or skipped. Broken bytes refused. */
static void
t_decode_kafka_fields(void)
{
	ch_arena a;
	ch_arena_init(&a);
	ch_coord_cgrec rec;
	const uint8_t key8[] = {0, 8, 0, 1, 'g', 0, 1, 'm'};
	const uint8_t cur[] = {0, 0, 0, 0, 0, 4, 0, 0, 0, 3, 0, 2, TOPIC_BYTES, 3, 0, 0, 0, 1, 0, 0,
			       0, 5,
			       /* tags: AssignmentEpochs [3, 4] */
			       1, 0, 9, 3, 0, 0, 0, 3, 0, 0, 0, 4,
			       /* pending revocation: none; no tags */
			       1, 0};
	CH_CHECK_EQ_INT(ch_coord_cgrec_decode(key8, sizeof key8, cur, sizeof cur, false, &a, &rec),
			0);
	CH_CHECK_EQ_INT(rec.type, CGREC_CURRENT);
	CH_CHECK(ch_str_eq_c(rec.group, "g") && ch_str_eq_c(rec.member, "m"));
	CH_CHECK_EQ_INT(rec.epoch, 4);
	CH_CHECK_EQ_INT(rec.previous_epoch, 3);
	CH_CHECK_EQ_INT(rec.state, 0);
	CH_CHECK_EQ_INT(rec.nparts, 1);
	CH_CHECK_EQ_INT(rec.parts[0].n, 2);
	CH_CHECK_EQ_INT(rec.parts[0].partitions[1], 5);
	CH_CHECK(rec.parts[0].epochs && rec.parts[0].epochs[1] == 4);
	CH_CHECK_EQ_INT(rec.nrevoking, 0);
	/* Every shorter prefix is refused. */
	for (size_t n = 2; n < sizeof cur; n++)
		CH_CHECK_EQ_INT(ch_coord_cgrec_decode(key8, sizeof key8, cur, n, false, &a, &rec),
				-1);

	const uint8_t key3[] = {0, 3, 0, 1, 'g'};
	const uint8_t grp[] = {0, 0, 0, 0, 0, 9, 2, 0, 8, 0, 0, 0, 0, 0,
			       0, 0, 7, 1, 8, 0, 0, 0, 0, 0, 0, 1, 0};
	CH_CHECK_EQ_INT(ch_coord_cgrec_decode(key3, sizeof key3, grp, sizeof grp, false, &a, &rec),
			0);
	CH_CHECK_EQ_INT(rec.epoch, 9);
	CH_CHECK(rec.hash_or_ts == 7);
	/* Value version 1 does not exist in 4.4. */
	const uint8_t v1[] = {0, 1, 0, 0, 0, 9, 0};
	CH_CHECK_EQ_INT(ch_coord_cgrec_decode(key3, sizeof key3, v1, sizeof v1, false, &a, &rec),
			-1);
	/* Tombstone: the key alone. */
	CH_CHECK_EQ_INT(ch_coord_cgrec_decode(key3, sizeof key3, NULL, 0, true, &a, &rec), 0);
	CH_CHECK(rec.tombstone);
	/* Not a consumer group's key (GroupMetadataKey, type 2). */
	const uint8_t key2[] = {0, 2, 0, 1, 'g'};
	CH_CHECK_EQ_INT(ch_coord_cgrec_decode(key2, sizeof key2, NULL, 0, true, &a, &rec), -1);
	ch_arena_reset(&a);
}

/* ConsumerGroupRegularExpression (type 16) against the bytes Kafka 4.4.0's
 * GroupCoordinatorRecordSerde made of newConsumerGroupRegularExpressionRecord
 * ("golden", "gold.*", topics {gold, gold-b}, version 42, timestamp
 * 1764650000000) and of its tombstone; and Kafka's bytes decoded. */
static void
t_regex_record_kafka44(void)
{
	static const uint8_t key[] = {0x00, 0x10, 0x00, 0x06, 0x67, 0x6f, 0x6c, 0x64, 0x65,
				      0x6e, 0x00, 0x06, 0x67, 0x6f, 0x6c, 0x64, 0x2e, 0x2a};
	static const uint8_t val[] = {0x00, 0x00, 0x03, 0x05, 0x67, 0x6f, 0x6c, 0x64,
				      0x07, 0x67, 0x6f, 0x6c, 0x64, 0x2d, 0x62, 0x00,
				      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, 0x00,
				      0x00, 0x01, 0x9a, 0xdd, 0x56, 0x1e, 0x80, 0x00};
	/* resolved to nothing ("none", version 7, timestamp 5) */
	static const uint8_t val_empty[] = {0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
					    0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00,
					    0x00, 0x00, 0x00, 0x00, 0x05, 0x00};
	const char *topics[] = {"gold", "gold-b"};
	ch_coord_record r;
	ch_coord_cgrec_regex(&r, "golden", "gold.*", topics, 2, 42, 1764650000000);
	check_bytes(&r.key, key, sizeof key);
	check_bytes(&r.value, val, sizeof val);
	ch_coord_cgrec_free(&r);
	ch_coord_cgrec_regex(&r, "golden", "none", NULL, 0, 7, 5);
	check_bytes(&r.value, val_empty, sizeof val_empty);
	ch_coord_cgrec_free(&r);
	ch_coord_cgrec_tombstone(&r, CGREC_REGEX, "golden", "gold.*");
	check_bytes(&r.key, key, sizeof key);
	CH_CHECK(r.tombstone);
	ch_coord_cgrec_free(&r);

	ch_arena a;
	ch_arena_init(&a);
	ch_coord_cgrec rec;
	CH_CHECK_EQ_INT(ch_coord_cgrec_decode(key, sizeof key, val, sizeof val, false, &a, &rec),
			0);
	CH_CHECK_EQ_INT(rec.type, CGREC_REGEX);
	CH_CHECK(ch_str_eq_c(rec.group, "golden"));
	CH_CHECK(ch_str_eq_c(rec.member, "gold.*"));
	CH_CHECK_EQ_INT(rec.nparts, 2);
	CH_CHECK(rec.nparts == 2 && ch_str_eq_c(rec.topic_names[0], "gold") &&
		 ch_str_eq_c(rec.topic_names[1], "gold-b"));
	CH_CHECK_EQ_INT(rec.version, 42);
	CH_CHECK_EQ_INT(rec.hash_or_ts, 1764650000000);
	CH_CHECK_EQ_INT(
		ch_coord_cgrec_decode(key, sizeof key, val, sizeof val - 3, false, &a, &rec), -1);
	CH_CHECK_EQ_INT(ch_coord_cgrec_decode(key, sizeof key, NULL, 0, true, &a, &rec), 0);
	CH_CHECK(rec.tombstone && ch_str_eq_c(rec.member, "gold.*"));
	ch_arena_reset(&a);
}

/* ---- the store ------------------------------------------------------------- */

typedef struct store_hb {
	ch_ConsumerGroupHeartbeatRequest r;
	ch_str names[2];
	ch_ConsumerGroupHeartbeatRequest_TopicPartitions tps[1];
	int32_t parts[64];
} store_hb;

/* A heartbeat of member at epoch (0: a join) owning what sh->a last gave
 * it (`owned`, n). */
static store_hb *
beat(store_hb *h, const cg_shell *sh, const char *member, const char *instance, int32_t epoch,
     const ch_coord_cg_tp *owned, int32_t n)
{
	memset(h, 0, sizeof *h);
	ch_ConsumerGroupHeartbeatRequest_init(&h->r);
	h->r.GroupId = CH_STR_LIT("g");
	h->r.MemberId = ch_str_c(member);
	h->r.InstanceId = instance ? ch_str_c(instance) : CH_STR_NULL;
	h->r.MemberEpoch = epoch;
	h->r.RebalanceTimeoutMs = epoch == 0 ? 10000 : -1;
	h->names[0] = ch_str_c(sh->topics[0].name);
	h->r.SubscribedTopicNames = h->names;
	h->r.SubscribedTopicNames_n = epoch == 0 ? 1 : -1;
	h->r.TopicPartitions = h->tps;
	h->r.TopicPartitions_n = epoch == 0 ? 0 : 1;
	h->tps[0].TopicId = sh->topics[0].id;
	h->tps[0].Partitions = h->parts;
	for (int32_t i = 0; i < n; i++)
		h->parts[i] = owned[i].partition;
	h->tps[0].Partitions_n = n;
	return h;
}

typedef struct member_state {
	char id[64];
	int32_t epoch;
	ch_coord_cg_tp owned[64];
	int32_t n;
} member_state;

/* One heartbeat of ms; its answer applied (assignment taken at once). */
static void
beat_apply(cg_shell *sh, member_state *ms, const char *instance, int64_t now)
{
	store_hb h;
	beat(&h, sh, ms->id, instance, ms->epoch, ms->owned, ms->n);
	cg_shell_heartbeat(sh, now, 1, &h.r);
	CH_CHECK_EQ_INT(sh->a.err, 0);
	ms->epoch = sh->a.epoch;
	if (sh->a.has_assignment) {
		ms->n = sh->a.ntps;
		memcpy(ms->owned, sh->a.tps, (size_t)sh->a.ntps * sizeof *ms->owned);
	}
}

static void
setup(cg_shell *sh)
{
	ch_coord_cg_config cfg;
	ch_coord_cg_config_defaults(&cfg);
	cfg.offsets_partitions = 3;
	cg_shell_init(sh, &cfg, 7);
	cg_shell_add_topic(sh, "t", 6);
	cg_shell_store_on(sh);
}

static void
check(cg_shell *sh)
{
	CH_CHECK(cg_shell_ok(sh));
}

/* A group restarted mid-reconciliation comes back as it was; its members
 * go on at their epochs without rejoining, and a heartbeat that changes
 * nothing writes nothing (no epoch bump from the restart itself). */
static void
t_restart_same_state(void)
{
	cg_shell sh;
	setup(&sh);
	member_state a = {"a", 0, {{{{0}}, 0}}, 0}, b = {"b", 0, {{{{0}}, 0}}, 0};
	beat_apply(&sh, &a, NULL, 0);
	CH_CHECK_EQ_INT(a.n, 6);
	beat_apply(&sh, &a, NULL, 100);
	beat_apply(&sh, &b, "ib", 200); /* static; a must give up three */
	CH_CHECK_EQ_INT(b.epoch, 3);
	CH_CHECK_EQ_INT(b.n, 0);
	beat_apply(&sh, &a, NULL, 300); /* told to revoke: UNREVOKED_PARTITIONS */
	CH_CHECK_EQ_INT(a.n, 3);
	check(&sh);

	cg_shell_digest before, after;
	cg_shell_digest_group(&sh, "g", &before);
	CH_CHECK(strstr(before.p, "UNREVOKED_PARTITIONS") != NULL);
	size_t replayed = cg_shell_restart(&sh, 400);
	CH_CHECK(replayed > 0);
	cg_shell_digest_group(&sh, "g", &after);
	CH_CHECK_EQ_STR(after.p, before.p);
	check(&sh);
	free(after.p);

	/* They continue: a acknowledges, b gets the rest; same epochs as
	 * without the restart. */
	beat_apply(&sh, &a, NULL, 500);
	CH_CHECK_EQ_INT(a.epoch, 3);
	beat_apply(&sh, &b, "ib", 600);
	CH_CHECK_EQ_INT(b.n, 3);
	ch_coord_cg_group_view gv;
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.state, CH_COORD_CG_STABLE);
	CH_CHECK_EQ_INT(gv.epoch, 3);
	size_t written = sh.written;
	beat_apply(&sh, &a, NULL, 700);
	CH_CHECK_EQ_INT((int)sh.written, (int)written);

	/* Restarted again: the session timers run from the load. */
	cg_shell_restart(&sh, 1000);
	CH_CHECK_EQ_INT((int)ch_coord_cg_next_deadline(sh.cg), 1000 + 45000);
	beat_apply(&sh, &b, "ib", 2000);
	CH_CHECK_EQ_INT(b.epoch, 3);
	free(before.p);
	cg_shell_tick(&sh, 1000 + 45000); /* a never came back */
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.members, 1);
	CH_CHECK_EQ_INT(gv.epoch, 4);
	cg_shell_digest_group(&sh, "g", &before);
	cg_shell_restart(&sh, 50000);
	cg_shell_digest_group(&sh, "g", &after);
	CH_CHECK_EQ_STR(after.p, before.p);
	CH_CHECK(strstr(after.p, "\n  a ") == NULL);
	free(before.p);
	free(after.p);
	check(&sh);
	cg_shell_free(&sh);
}

/* The last record of key type 16 for regex in the shell's log: 1 value,
 * 0 tombstone, -1 none. */
static int
regex_in_log(const cg_shell *sh, const char *regex)
{
	int found = -1;
	size_t n = strlen(regex);
	for (size_t i = 0; i < sh->nlog; i++) {
		const cg_shell_rec *r = &sh->log[i];
		if (r->klen == 4 + 1 + 2 + n && r->key[1] == CGREC_REGEX &&
		    memcmp(r->key + 7, regex, n) == 0)
			found = r->tombstone ? 0 : 1;
	}
	return found;
}

/* A regex member's group restarted: its resolution is replayed (no epoch
 * bump, no resolution within 10 s of the stored one), resolved again once
 * due with the same answer (still no bump); the regex's tombstone once its
 * last member leaves. */
static void
t_restart_regex(void)
{
	cg_shell sh;
	setup(&sh);
	cg_shell_add_topic(&sh, "u", 2);
	member_state m = {"r", 0, {{{{0}}, 0}}, 0};
	store_hb h;
	beat(&h, &sh, m.id, NULL, 0, NULL, 0);
	h.r.SubscribedTopicNames_n = -1;
	h.r.SubscribedTopicRegex = CH_STR_LIT("t.*");
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK_EQ_INT(sh.a.ntps, 6);
	m.epoch = sh.a.epoch;
	m.n = sh.a.ntps;
	memcpy(m.owned, sh.a.tps, (size_t)m.n * sizeof *m.owned);
	CH_CHECK_EQ_INT(regex_in_log(&sh, "t.*"), 1);
	CH_CHECK_EQ_INT(sh.scans, 1);
	check(&sh);

	cg_shell_digest before, after;
	cg_shell_digest_group(&sh, "g", &before);
	cg_shell_restart(&sh, 1000);
	cg_shell_digest_group(&sh, "g", &after);
	CH_CHECK_EQ_STR(after.p, before.p);
	free(before.p);
	free(after.p);
	check(&sh);
	size_t written = sh.written;
	beat_apply(&sh, &m, NULL, 2000);
	CH_CHECK_EQ_INT(sh.scans, 1);
	CH_CHECK_EQ_INT(m.epoch, 2);
	CH_CHECK_EQ_INT(m.n, 6);
	CH_CHECK_EQ_INT((int)sh.written, (int)written);
	beat_apply(&sh, &m, NULL, 20000); /* due: resolved again, same topics */
	CH_CHECK_EQ_INT(sh.scans, 2);
	CH_CHECK_EQ_INT(m.epoch, 2);
	check(&sh);

	/* the last subscriber leaves: the regex's record goes */
	beat(&h, &sh, m.id, NULL, -1, NULL, 0);
	h.r.TopicPartitions_n = -1;
	cg_shell_heartbeat(&sh, 21000, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK_EQ_INT(regex_in_log(&sh, "t.*"), 0);
	cg_shell_digest_group(&sh, "g", &before);
	cg_shell_restart(&sh, 22000);
	cg_shell_digest_group(&sh, "g", &after);
	CH_CHECK_EQ_STR(after.p, before.p);
	free(before.p);
	free(after.p);
	check(&sh);
	cg_shell_free(&sh);
}

/* The answer waits for the append; a failed append is answered as Kafka
 * maps it and written again at the next change. */
static void
t_answer_after_append(void)
{
	cg_shell sh;
	setup(&sh);
	sh.hold = true;
	store_hb h;
	int before = sh.answers;
	beat(&h, &sh, "a", NULL, 0, NULL, 0);
	cg_shell_heartbeat(&sh, 0, 1, &h.r);
	CH_CHECK_EQ_INT(sh.answers, before); /* not durable yet */
	CH_CHECK_EQ_INT((int)sh.npending, 1);
	CH_CHECK_EQ_INT((int)sh.pending[0].n, 5); /* member, epoch, target, target epoch, current */
	cg_shell_complete(&sh, 0);
	CH_CHECK_EQ_INT(sh.answers, before + 1);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK_EQ_INT(sh.a.epoch, 2);

	/* A second member joins; the disk fails. */
	beat(&h, &sh, "b", NULL, 0, NULL, 0);
	cg_shell_heartbeat(&sh, 10, 1, &h.r);
	cg_shell_complete(&sh, CH_KERR_KAFKA_STORAGE_ERROR);
	CH_CHECK_EQ_INT(sh.a.err, CH_KERR_NOT_COORDINATOR);
	CH_CHECK(!sh.a.has_member_id || sh.a.member_id[0] == 0);
	/* A heartbeat of a that changes nothing while an append is in flight
	 * waits behind it. */
	ch_coord_cg_tp six[6];
	for (int i = 0; i < 6; i++)
		six[i] = (ch_coord_cg_tp){sh.topics[0].id, i};
	beat(&h, &sh, "a", NULL, 2, six, 6);
	before = sh.answers;
	cg_shell_heartbeat(&sh, 20, 1, &h.r);
	/* It rewrote what the failed append had (b's records, the epoch). */
	CH_CHECK_EQ_INT((int)sh.npending, 1);
	CH_CHECK(sh.pending[0].n >= 5);
	CH_CHECK_EQ_INT(sh.answers, before);
	cg_shell_complete(&sh, 0);
	CH_CHECK_EQ_INT(sh.answers, before + 1);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	sh.hold = false;
	cg_shell_digest d1, d2;
	cg_shell_digest_group(&sh, "g", &d1);
	cg_shell_restart(&sh, 30);
	cg_shell_digest_group(&sh, "g", &d2);
	CH_CHECK_EQ_STR(d2.p, d1.p);
	CH_CHECK(strstr(d2.p, "\n  b ") != NULL);
	free(d1.p);
	free(d2.p);

	/* Crash with the append in flight: the join is lost, its answer never
	 * went out, the group is as the log has it. */
	sh.hold = true;
	cg_shell_digest_group(&sh, "g", &d1);
	beat(&h, &sh, "c", NULL, 0, NULL, 0);
	before = sh.answers;
	cg_shell_heartbeat(&sh, 40, 1, &h.r);
	CH_CHECK_EQ_INT(sh.answers, before);
	cg_shell_restart(&sh, 50);
	CH_CHECK_EQ_INT(sh.answers, before);
	cg_shell_digest_group(&sh, "g", &d2);
	CH_CHECK_EQ_STR(d2.p, d1.p);
	free(d1.p);
	free(d2.p);
	check(&sh);
	cg_shell_free(&sh);
}

/* Is key (type, member) in the log, and as a tombstone? -1 absent, 1
 * tombstone, 0 value. */
static int
log_has(const cg_shell *sh, int16_t type, const char *member)
{
	ch_coord_record r;
	ch_coord_cgrec_tombstone(&r, type, "g", member);
	int found = -1;
	for (size_t i = 0; i < sh->nlog; i++)
		if (sh->log[i].klen == r.key.len &&
		    memcmp(sh->log[i].key, r.key.data, r.key.len) == 0)
			found = sh->log[i].tombstone ? 1 : 0;
	ch_coord_cgrec_free(&r);
	return found;
}

/* A member's leave writes its three tombstones in Kafka's order (current
 * assignment, target, subscription); deleting the empty group writes the
 * group's. */
static void
t_tombstones(void)
{
	cg_shell sh;
	setup(&sh);
	member_state a = {"a", 0, {{{{0}}, 0}}, 0}, b = {"b", 0, {{{{0}}, 0}}, 0};
	beat_apply(&sh, &a, NULL, 0);
	beat_apply(&sh, &b, NULL, 10);
	CH_CHECK_EQ_INT(log_has(&sh, CGREC_CURRENT, "b"), 0);
	size_t mark = sh.nlog;
	store_hb h;
	beat(&h, &sh, "b", NULL, -1, NULL, 0);
	cg_shell_heartbeat(&sh, 20, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.epoch, -1);
	/* The three tombstones come first in the batch, in this order. */
	(void)mark;
	ch_arena ar;
	ch_arena_init(&ar);
	int16_t want[] = {CGREC_CURRENT, CGREC_TARGET_MEMBER, CGREC_MEMBER};
	size_t first = 0;
	for (size_t i = 0; i < sh.nlog; i++)
		if (sh.log[i].tombstone) {
			first = i;
			break;
		}
	for (int k = 0; k < 3; k++) {
		ch_coord_cgrec rec;
		const cg_shell_rec *r = &sh.log[first + (size_t)k];
		CH_CHECK_EQ_INT(ch_coord_cgrec_decode(r->key, r->klen, r->val, r->vlen,
						      r->tombstone, &ar, &rec),
				0);
		CH_CHECK(rec.tombstone);
		CH_CHECK_EQ_INT(rec.type, want[k]);
		CH_CHECK(ch_str_eq_c(rec.member, "b"));
	}
	ch_arena_reset(&ar);
	cg_shell_restart(&sh, 30);
	ch_coord_cg_group_view gv;
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.members, 1);

	/* Not deletable with a member; then a leaves and it is. */
	CH_CHECK(!ch_coord_cg_delete_if_empty(sh.cg, CH_STR_LIT("g")));
	beat(&h, &sh, "a", NULL, -1, NULL, 0);
	cg_shell_heartbeat(&sh, 40, 1, &h.r);
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv)); /* Empty stays */
	CH_CHECK_EQ_INT(gv.state, CH_COORD_CG_EMPTY);
	cg_shell_restart(&sh, 50);
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.epoch, 5);
	CH_CHECK(ch_coord_cg_delete_if_empty(sh.cg, CH_STR_LIT("g")));
	cg_shell_complete(&sh, 0);
	CH_CHECK_EQ_INT(log_has(&sh, CGREC_GROUP, NULL), 1);
	CH_CHECK_EQ_INT(log_has(&sh, CGREC_TARGET_META, NULL), 1);
	CH_CHECK_EQ_INT(log_has(&sh, CGREC_MEMBER, "a"), 1);
	cg_shell_restart(&sh, 60);
	CH_CHECK(!ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	cg_shell_free(&sh);
}

/* Where key (type, member) was last written in the log (the shell keeps
 * each key's last record, in the order written); -1 absent. */
static int
log_pos(const cg_shell *sh, int16_t type, const char *member)
{
	ch_coord_record r;
	ch_coord_cgrec_tombstone(&r, type, "g", member);
	int pos = -1;
	for (size_t i = 0; i < sh->nlog; i++)
		if (sh->log[i].klen == r.key.len &&
		    memcmp(sh->log[i].key, r.key.data, r.key.len) == 0)
			pos = (int)i;
	ch_coord_cgrec_free(&r);
	return pos;
}

/* A heartbeat that changes one member's record writes that record and no
 * other member's, in a group of many (the flush finds the one member it
 * touched without walking them all, ch_coord_cg_member_touch); a new
 * target still writes every member's; a restart gives the same state. */
static void
t_one_member_flush(void)
{
	cg_shell sh;
	setup(&sh);
	enum {
		N = 6
	};
	member_state ms[N];
	for (int i = 0; i < N; i++) {
		memset(&ms[i], 0, sizeof ms[i]);
		snprintf(ms[i].id, sizeof ms[i].id, "m%d", i);
	}
	int64_t now = 0;
	for (int round = 0; round < 4; round++)
		for (int i = 0; i < N; i++)
			beat_apply(&sh, &ms[i], NULL, now += 10);
	ch_coord_cg_group_view gv;
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("g"), &gv));
	CH_CHECK_EQ_INT(gv.state, CH_COORD_CG_STABLE);
	for (int i = 0; i < N; i++)
		CH_CHECK_EQ_INT(ms[i].n, 1);
	/* nothing changed: nothing written */
	size_t written = sh.written;
	beat_apply(&sh, &ms[3], NULL, now += 10);
	CH_CHECK_EQ_INT((int)sh.written, (int)written);
	/* m3's rebalance timeout changes: its member record alone */
	store_hb h;
	beat(&h, &sh, ms[3].id, NULL, ms[3].epoch, ms[3].owned, ms[3].n);
	h.r.RebalanceTimeoutMs = 20000;
	cg_shell_heartbeat(&sh, now += 10, 1, &h.r);
	CH_CHECK_EQ_INT(sh.a.err, 0);
	CH_CHECK_EQ_INT((int)sh.written, (int)written + 1);
	/* the last record of the log is m3's new subscription record */
	ch_arena ar;
	ch_arena_init(&ar);
	ch_coord_cgrec rec;
	const cg_shell_rec *last = &sh.log[sh.nlog - 1];
	CH_CHECK_EQ_INT(ch_coord_cgrec_decode(last->key, last->klen, last->val, last->vlen,
					      last->tombstone, &ar, &rec),
			0);
	CH_CHECK_EQ_INT(rec.type, CGREC_MEMBER);
	CH_CHECK(ch_str_eq_c(rec.member, "m3"));
	CH_CHECK_EQ_INT(rec.m.rebalance_timeout_ms, 20000);
	ch_arena_reset(&ar);
	check(&sh);
	cg_shell_digest before, after;
	cg_shell_digest_group(&sh, "g", &before);
	cg_shell_restart(&sh, now += 10);
	cg_shell_digest_group(&sh, "g", &after);
	CH_CHECK_EQ_STR(after.p, before.p);
	free(before.p);
	free(after.p);
	/* one more member: a new target, every member's current record moves on */
	member_state x;
	memset(&x, 0, sizeof x);
	snprintf(x.id, sizeof x.id, "x");
	beat_apply(&sh, &x, NULL, now += 10);
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < N; i++)
			beat_apply(&sh, &ms[i], NULL, now += 10);
	beat_apply(&sh, &x, NULL, now += 10);
	int xpos = log_pos(&sh, CGREC_MEMBER, "x");
	CH_CHECK(xpos >= 0);
	for (int i = 0; i < N; i++)
		CH_CHECK(log_pos(&sh, CGREC_CURRENT, ms[i].id) > xpos);
	check(&sh);
	cg_shell_free(&sh);
}

/* ---- records Kafka 4.4 wrote (kafka44_cg_records.h) ------------------------- */

static char *
cstr(ch_str s)
{
	return s.len < 0 ? NULL : ch_xstrndup(s.p ? s.p : "", (size_t)s.len);
}

/* A decoded partition list as one sorted array (+ epochs, or NULL when a
 * topic had none). */
static int32_t
flatten(const ch_coord_cgrec_topic *t, int32_t nt, ch_coord_cg_tp *out, int32_t *ep, bool *has_ep)
{
	int32_t n = 0;
	*has_ep = true;
	for (int32_t i = 0; i < nt; i++) {
		*has_ep &= t[i].epochs != NULL;
		for (int32_t k = 0; k < t[i].n; k++) {
			out[n] = (ch_coord_cg_tp){t[i].topic, t[i].partitions[k]};
			ep[n++] = t[i].epochs ? t[i].epochs[k] : 0;
		}
	}
	return n;
}

/* Our encoding of what Kafka's record says (NULL for a tombstone). */
static void
reencode(const ch_coord_cgrec *rec, ch_coord_record *r)
{
	char *g = cstr(rec->group), *m = cstr(rec->member);
	ch_coord_cg_tp a[16], v[16];
	int32_t ea[16], ev[16];
	bool ha, hv;
	if (rec->tombstone) {
		ch_coord_cgrec_tombstone(r, rec->type, g, m);
	} else if (rec->type == CGREC_GROUP) {
		ch_coord_cgrec_group(r, g, rec->epoch, rec->hash_or_ts);
	} else if (rec->type == CGREC_TARGET_META) {
		ch_coord_cgrec_target_meta(r, g, rec->epoch, rec->hash_or_ts);
	} else if (rec->type == CGREC_TARGET_MEMBER) {
		int32_t n = flatten(rec->parts, rec->nparts, a, ea, &ha);
		ch_coord_cgrec_target_member(r, g, m, a, n);
	} else if (rec->type == CGREC_CURRENT) {
		int32_t n = flatten(rec->parts, rec->nparts, a, ea, &ha);
		int32_t k = flatten(rec->revoking, rec->nrevoking, v, ev, &hv);
		ch_coord_cgrec_current(r, g, m, rec->epoch, rec->previous_epoch, rec->state, a,
				       ha ? ea : NULL, n, v, hv ? ev : NULL, k);
	} else {
		char *topics[8];
		ch_coord_cgrec_member mm = rec->m;
		for (int32_t i = 0; i < mm.ntopics; i++)
			topics[i] = cstr(rec->topic_names[i]);
		mm.topics = (const char *const *)topics;
		ch_coord_cgrec_member_meta(r, g, m, &mm);
		for (int32_t i = 0; i < mm.ntopics; i++)
			free(topics[i]);
	}
	free(g);
	free(m);
}

typedef struct golden_member {
	int n;
	ch_coord_cg_member_view v;
	char id[64], inst[16], rack[8], client[16], host[16], topic[8];
	int32_t assigned_epochs[3];
} golden_member;

static void
golden_member_fn(void *ud, const ch_coord_cg_member_view *m)
{
	golden_member *g = ud;
	g->n++;
	g->v = *m;
	snprintf(g->id, sizeof g->id, "%s", m->member_id);
	snprintf(g->inst, sizeof g->inst, "%s", m->instance_id ? m->instance_id : "-");
	snprintf(g->rack, sizeof g->rack, "%s", m->rack ? m->rack : "-");
	snprintf(g->client, sizeof g->client, "%s", m->client_id);
	snprintf(g->host, sizeof g->host, "%s", m->client_host);
	snprintf(g->topic, sizeof g->topic, "%s", m->ntopics == 1 ? m->topics[0] : "?");
	for (int32_t i = 0; i < m->nassigned && i < 3; i++)
		g->assigned_epochs[i] = m->assigned_epochs[i];
}

/* What Apache Kafka 4.4.0 wrote for a consumer-protocol group (captured by
 * tools/capture-kafka-cg-records.py): every record decodes, cohortd's
 * encoders give back Kafka's bytes for each (tagged fields included), and
 * the replay yields the group Kafka had at the end. */
static void
t_kafka44_golden(void)
{
	size_t n = sizeof kafka44_recs / sizeof *kafka44_recs;
	int seen[17] = {0};
	ch_arena ar;
	ch_arena_init(&ar);
	for (size_t i = 0; i < n; i++) {
		const struct kafka44_rec *k = &kafka44_recs[i];
		ch_coord_cgrec rec;
		int rc = ch_coord_cgrec_decode(k->key, k->klen, k->val, k->vlen, k->val == NULL,
					       &ar, &rec);
		CH_CHECK_EQ_INT(rc, 0);
		if (rc)
			continue;
		CH_CHECK(ch_str_eq_c(rec.group, "golden"));
		seen[rec.type]++;
		ch_coord_record r;
		reencode(&rec, &r);
		if (k->val) {
			CH_CHECK(!r.tombstone);
			check_bytes(&r.value, k->val, k->vlen);
		} else {
			CH_CHECK(r.tombstone);
		}
		check_bytes(&r.key, k->key, k->klen);
		ch_coord_cgrec_free(&r);
	}
	ch_arena_reset(&ar);
	CH_CHECK(seen[CGREC_GROUP] >= 2 && seen[CGREC_MEMBER] >= 3 &&
		 seen[CGREC_TARGET_META] >= 2 && seen[CGREC_TARGET_MEMBER] >= 3 &&
		 seen[CGREC_CURRENT] >= 4);

	ch_coord_cg_config cfg;
	ch_coord_cg_config_defaults(&cfg);
	cfg.offsets_partitions = 1;
	cg_shell sh;
	cg_shell_init(&sh, &cfg, 1);
	for (size_t i = 0; i < n; i++) {
		const struct kafka44_rec *k = &kafka44_recs[i];
		CH_CHECK_EQ_INT(ch_coord_cg_load_record(sh.cg, k->key, k->klen, k->val, k->vlen,
							k->val == NULL),
				0);
	}
	ch_coord_cg_load_end(sh.cg, 0, 0, true);
	check(&sh);
	ch_coord_cg_group_view gv;
	CH_CHECK(ch_coord_cg_group_get(sh.cg, CH_STR_LIT("golden"), &gv));
	CH_CHECK_EQ_INT(gv.epoch, 4);
	CH_CHECK_EQ_INT(gv.assignment_epoch, 4);
	CH_CHECK_EQ_INT(gv.members, 1);
	golden_member gm = {0};
	ch_coord_cg_foreach_member(sh.cg, CH_STR_LIT("golden"), golden_member_fn, &gm);
	CH_CHECK_EQ_INT(gm.n, 1);
	CH_CHECK_EQ_STR(gm.inst, "inst-a");
	CH_CHECK_EQ_STR(gm.rack, "r1");
	CH_CHECK_EQ_STR(gm.client, "gold-a");
	CH_CHECK_EQ_STR(gm.host, "/127.0.0.1");
	CH_CHECK_EQ_STR(gm.topic, "gold");
	CH_CHECK_EQ_INT(gm.v.epoch, -2); /* closed: a static leave */
	CH_CHECK_EQ_INT(gm.v.previous_epoch, 3);
	CH_CHECK_EQ_INT(gm.v.nassigned, 3);
	CH_CHECK_EQ_INT(gm.v.ntarget, 3);
	CH_CHECK_EQ_INT(gm.v.nrevoking, 0);
	CH_CHECK(memcmp(gm.v.target[0].topic.b, kafka44_topic_id, 16) == 0);
	CH_CHECK_EQ_INT(gm.assigned_epochs[2], 0);
	cg_shell_free(&sh);
}

CH_TEST_MAIN(CH_TEST(t_bytes), CH_TEST(t_decode_kafka_fields), CH_TEST(t_restart_same_state),
	     CH_TEST(t_answer_after_append), CH_TEST(t_tombstones), CH_TEST(t_one_member_flush),
	     CH_TEST(t_kafka44_golden), CH_TEST(t_regex_record_kafka44), CH_TEST(t_restart_regex))
