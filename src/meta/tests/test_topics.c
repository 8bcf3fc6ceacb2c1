/*
 * test_topics.c: the topic registry: create/delete/lookup, Kafka's name
 * rules and '.'/'_' collisions, persistence round trip, crash leftovers,
 * corrupt files, meta.properties and the directory lock.
 */
#include "common/ch_test.h"
#include "meta/ch_topics.h"
#include "meta/tests/meta_util.h"
#include "common/ch_buf.h"
#include "common/ch_hash.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static struct ch_topics *
open_ok(struct ch_config *cfg)
{
	struct ch_topics *reg;
	char err[512];
	if (ch_topics_open(&reg, cfg, err, sizeof(err)) != CH_OK) {
		fprintf(stderr, "open: %s\n", err);
		return NULL;
	}
	return reg;
}

static int16_t
create(struct ch_topics *reg, const char *name, int32_t parts, char *msg)
{
	return mu_create(reg, name, strlen(name), parts, NULL, 0, false, NULL, msg, 512);
}

static void
t_name_rules(void)
{
	char msg[512];
	CH_CHECK_EQ_INT(ch_topic_name_validate("orders", 6, msg, sizeof(msg)), 0);
	CH_CHECK_EQ_INT(ch_topic_name_validate("a.b_c-D9", 8, msg, sizeof(msg)), 0);
	CH_CHECK_EQ_INT(ch_topic_name_validate("...", 3, msg, sizeof(msg)), 0);
	CH_CHECK_EQ_INT(ch_topic_name_validate("", 0, msg, sizeof(msg)), 17);
	CH_CHECK_EQ_STR(msg, "Topic name is invalid: the empty string is not allowed");
	CH_CHECK_EQ_INT(ch_topic_name_validate(".", 1, msg, sizeof(msg)), 17);
	CH_CHECK_EQ_STR(msg, "Topic name is invalid: '.' is not allowed");
	CH_CHECK_EQ_INT(ch_topic_name_validate("..", 2, msg, sizeof(msg)), 17);
	CH_CHECK_EQ_STR(msg, "Topic name is invalid: '..' is not allowed");
	CH_CHECK_EQ_INT(ch_topic_name_validate("a b", 3, msg, sizeof(msg)), 17);
	CH_CHECK_EQ_STR(msg, "Topic name is invalid: 'a b' contains one or more characters other "
			     "than ASCII alphanumerics, '.', '_' and '-'");
	CH_CHECK_EQ_INT(ch_topic_name_validate("a\0b", 3, msg, sizeof(msg)), 17);
	CH_CHECK_EQ_INT(ch_topic_name_validate("t\xc3\xa9", 3, msg, sizeof(msg)), 17);
	CH_CHECK_EQ_INT(ch_topic_name_validate("a/b", 3, msg, sizeof(msg)), 17);
	char name[300];
	memset(name, 'x', sizeof(name));
	CH_CHECK_EQ_INT(ch_topic_name_validate(name, 249, msg, sizeof(msg)), 0);
	CH_CHECK_EQ_INT(ch_topic_name_validate(name, 250, msg, sizeof(msg)), 17);
	CH_CHECK(strstr(msg, "Topic name is invalid: the length of 'xxx") == msg);
	CH_CHECK(strstr(msg, "' is longer than the max allowed length 249") != NULL);
	CH_CHECK(ch_topic_name_is_internal("__consumer_offsets", 18));
	CH_CHECK(!ch_topic_name_is_internal("__consumer_offset", 17));

	struct ch_config cfg;
	char dir[512];
	mu_new_cfg(&cfg, dir, sizeof(dir));
	struct ch_topics *reg = open_ok(&cfg);
	CH_CHECK(reg != NULL);
	if (!reg)
		goto out;
	CH_CHECK_EQ_INT(create(reg, "a_b", 1, msg), 0);
	CH_CHECK_EQ_INT(create(reg, "a.b", 1, msg), 17);
	CH_CHECK_EQ_STR(msg, "Topic 'a.b' collides with existing topic: a_b");
	CH_CHECK_EQ_INT(create(reg, "x.y.z", 1, msg), 0);
	CH_CHECK_EQ_INT(create(reg, "x_y.z", 1, msg), 17);
	CH_CHECK_EQ_STR(msg, "Topic 'x_y.z' collides with existing topic: x.y.z");
	CH_CHECK_EQ_INT(create(reg, "a_b", 1, msg), 36);
	CH_CHECK_EQ_STR(msg, "Topic 'a_b' already exists.");
	CH_CHECK_EQ_INT(create(reg, "bad name", 1, msg), 17);
	/* after deleting a_b, a.b no longer collides */
	CH_CHECK_EQ_INT(mu_delete(reg, "a_b", 3, msg, sizeof(msg)), 0);
	CH_CHECK_EQ_INT(create(reg, "a.b", 1, msg), 0);
	ch_topics_close(reg);
out:
	ch_config_free(&cfg);
}

static void
t_create_delete_lookup(void)
{
	struct ch_config cfg;
	char dir[512], msg[512];
	mu_new_cfg(&cfg, dir, sizeof(dir));
	struct ch_topics *reg = open_ok(&cfg);
	CH_CHECK(reg != NULL);
	if (!reg) {
		ch_config_free(&cfg);
		return;
	}
	CH_CHECK_EQ_INT(ch_topics_count(reg), 0);
	const ch_topic *t;
	ch_topic_kv kv[] = {{"retention.ms", "1000"}, {"cleanup.policy", "compact, delete"}};
	CH_CHECK_EQ_INT(mu_create(reg, "orders", 6, 3, kv, 2, false, &t, msg, sizeof(msg)), 0);
	CH_CHECK(t != NULL);
	CH_CHECK_EQ_STR(t->name, "orders");
	CH_CHECK_EQ_INT(t->partitions, 3);
	CH_CHECK(!t->internal);
	CH_CHECK(!ch_uuid_is_zero(&t->id));
	CH_CHECK_EQ_INT(t->n_configs, 2);
	CH_CHECK_EQ_STR(t->configs[0].key, "cleanup.policy"); /* sorted */
	CH_CHECK_EQ_STR(t->configs[1].value, "1000");
	CH_CHECK(ch_topics_find(reg, "orders", 6) == t);
	CH_CHECK(ch_topics_find(reg, "ordersX", 6) == t); /* length-delimited */
	CH_CHECK(ch_topics_find(reg, "order", 5) == NULL);
	CH_CHECK(ch_topics_find_id(reg, &t->id) == t);
	ch_uuid other = ch_uuid_random();
	CH_CHECK(ch_topics_find_id(reg, &other) == NULL);

	/* -1 partitions: num.partitions */
	CH_CHECK_EQ_INT(create(reg, "defaults", -1, msg), 0);
	CH_CHECK_EQ_INT(ch_topics_find(reg, "defaults", 8)->partitions, 1);
	CH_CHECK_EQ_INT(create(reg, "zero", 0, msg), 37);
	CH_CHECK_EQ_STR(msg, "Number of partitions was set to an invalid non-positive value.");
	CH_CHECK_EQ_INT(create(reg, "neg", -5, msg), 37);
	CH_CHECK_EQ_INT(create(reg, "huge", CH_TOPIC_PARTITIONS_MAX + 1, msg), 37);

	/* configs */
	ch_topic_kv badv[] = {{"retention.ms", "soon"}};
	CH_CHECK_EQ_INT(mu_create(reg, "c1", 2, 1, badv, 1, false, NULL, msg, sizeof(msg)), 40);
	CH_CHECK_EQ_STR(
		msg,
		"Invalid value soon for configuration retention.ms: Not a number of type LONG");
	ch_topic_kv badk[] = {{"log.retention.ms", "1"}};
	CH_CHECK_EQ_INT(mu_create(reg, "c1", 2, 1, badk, 1, false, NULL, msg, sizeof(msg)), 40);
	CH_CHECK_EQ_STR(msg, "Unknown topic config name: log.retention.ms");
	ch_topic_kv nullv[] = {{"retention.ms", NULL}};
	CH_CHECK_EQ_INT(mu_create(reg, "c1", 2, 1, nullv, 1, false, NULL, msg, sizeof(msg)), 40);
	CH_CHECK(ch_topics_find(reg, "c1", 2) == NULL);

	/* validate_only changes nothing */
	CH_CHECK_EQ_INT(mu_create(reg, "dry", 3, 2, NULL, 0, true, &t, msg, sizeof(msg)), 0);
	CH_CHECK(t == NULL);
	CH_CHECK(ch_topics_find(reg, "dry", 3) == NULL);

	/* many topics: iteration in name order, hash growth */
	char name[32];
	for (int i = 99; i >= 0; i--) {
		snprintf(name, sizeof(name), "t%03d", i);
		CH_CHECK_EQ_INT(create(reg, name, 1 + i % 4, msg), 0);
	}
	CH_CHECK_EQ_INT(ch_topics_count(reg), 102);
	for (size_t i = 1; i < ch_topics_count(reg); i++)
		CH_CHECK(strcmp(ch_topics_at(reg, i - 1)->name, ch_topics_at(reg, i)->name) < 0);
	CH_CHECK(ch_topics_at(reg, 102) == NULL);
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "t%03d", i);
		const ch_topic *x = ch_topics_find(reg, name, strlen(name));
		CH_CHECK(x && x->partitions == 1 + i % 4);
		CH_CHECK(x && ch_topics_find_id(reg, &x->id) == x);
	}

	/* delete by name and by id */
	CH_CHECK_EQ_INT(mu_delete(reg, "t050", 4, msg, sizeof(msg)), 0);
	CH_CHECK(ch_topics_find(reg, "t050", 4) == NULL);
	CH_CHECK_EQ_INT(mu_delete(reg, "t050", 4, msg, sizeof(msg)), 3);
	t = ch_topics_find(reg, "t051", 4);
	ch_uuid id51 = t->id;
	CH_CHECK_EQ_INT(mu_delete_id(reg, &id51, msg, sizeof(msg)), 0);
	CH_CHECK(ch_topics_find(reg, "t051", 4) == NULL);
	CH_CHECK(ch_topics_find_id(reg, &id51) == NULL);
	CH_CHECK_EQ_INT(mu_delete_id(reg, &id51, msg, sizeof(msg)), 100);
	CH_CHECK_EQ_INT(ch_topics_count(reg), 100);

	/* add partitions */
	CH_CHECK_EQ_INT(mu_add_partitions(reg, "orders", 6, 2, false, msg, sizeof(msg)), 37);
	CH_CHECK_EQ_STR(
		msg, "The topic orders currently has 3 partition(s); 2 would not be an increase.");
	CH_CHECK_EQ_INT(mu_add_partitions(reg, "orders", 6, 3, false, msg, sizeof(msg)), 37);
	CH_CHECK_EQ_INT(mu_add_partitions(reg, "orders", 6, 5, true, msg, sizeof(msg)), 0);
	CH_CHECK_EQ_INT(ch_topics_find(reg, "orders", 6)->partitions, 3);
	CH_CHECK_EQ_INT(mu_add_partitions(reg, "orders", 6, 5, false, msg, sizeof(msg)), 0);
	CH_CHECK_EQ_INT(ch_topics_find(reg, "orders", 6)->partitions, 5);
	CH_CHECK_EQ_INT(mu_add_partitions(reg, "nope", 4, 5, false, msg, sizeof(msg)), 3);

	/* alter configs */
	ch_topic_kv nk[] = {{"segment.bytes", "1048576"}};
	CH_CHECK_EQ_INT(mu_alter_configs(reg, "orders", 6, nk, 1, false, msg, sizeof(msg)), 0);
	t = ch_topics_find(reg, "orders", 6);
	CH_CHECK_EQ_INT(t->n_configs, 1);
	CH_CHECK_EQ_STR(t->configs[0].key, "segment.bytes");
	CH_CHECK_EQ_INT(mu_alter_configs(reg, "orders", 6, badv, 1, false, msg, sizeof(msg)), 40);
	CH_CHECK_EQ_INT(t->n_configs, 1);

	/* __consumer_offsets */
	const ch_topic *co;
	CH_CHECK_EQ_INT(mu_ensure_offsets(reg, &co, msg, sizeof(msg)), 0);
	CH_CHECK(co && co->internal && co->partitions == 50);
	ch_topic_config tc;
	ch_topic_config_resolve(&cfg, co->configs, co->n_configs, &tc);
	CH_CHECK_EQ_INT(tc.cleanup_policy, CH_CLEANUP_COMPACT);
	CH_CHECK_EQ_INT(tc.segment_bytes, 104857600);
	const ch_topic *co2;
	CH_CHECK_EQ_INT(mu_ensure_offsets(reg, &co2, msg, sizeof(msg)), 0);
	CH_CHECK(co2 == co);
	ch_topics_close(reg);

	/* delete.topic.enable=false */
	const char *sets[] = {"delete.topic.enable=false"};
	char set0[600];
	snprintf(set0, sizeof(set0), "log.dirs=%s", dir);
	const char *sets2[] = {set0, sets[0]};
	struct ch_config cfg2;
	char err[512];
	CH_CHECK(ch_config_load(&cfg2, NULL, sets2, 2, err, sizeof(err)) == CH_OK);
	reg = open_ok(&cfg2);
	CH_CHECK(reg != NULL);
	if (reg) {
		CH_CHECK_EQ_INT(mu_delete(reg, "orders", 6, msg, sizeof(msg)), 73);
		CH_CHECK(ch_topics_find(reg, "orders", 6) != NULL);
		ch_topics_close(reg);
	}
	ch_config_free(&cfg2);
	ch_config_free(&cfg);
}

static void
t_persistence(void)
{
	struct ch_config cfg;
	char dir[512], msg[512];
	mu_new_cfg(&cfg, dir, sizeof(dir));
	struct ch_topics *reg = open_ok(&cfg);
	CH_CHECK(reg != NULL);
	if (!reg) {
		ch_config_free(&cfg);
		return;
	}
	char cid[64];
	snprintf(cid, sizeof(cid), "%s", ch_topics_cluster_id(reg));
	CH_CHECK_EQ_INT(strlen(cid), 22);
	ch_topic_kv kv[] = {{"cleanup.policy", " compact, delete "}, {"retention.ms", "100%"}};
	/* "100%" is invalid for retention.ms; use a valid odd value instead */
	kv[1].value = (char *)"-1";
	const ch_topic *t;
	CH_CHECK_EQ_INT(mu_create(reg, "alpha", 5, 7, kv, 2, false, &t, msg, sizeof(msg)), 0);
	ch_uuid alpha_id = t->id;
	CH_CHECK_EQ_INT(create(reg, "beta.x", 2, msg), 0);
	CH_CHECK_EQ_INT(mu_ensure_offsets(reg, NULL, msg, sizeof(msg)), 0);
	CH_CHECK_EQ_INT(create(reg, "gone", 1, msg), 0);
	CH_CHECK_EQ_INT(mu_delete(reg, "gone", 4, msg, sizeof(msg)), 0);
	ch_topics_close(reg);

	reg = open_ok(&cfg);
	CH_CHECK(reg != NULL);
	if (!reg) {
		ch_config_free(&cfg);
		return;
	}
	CH_CHECK_EQ_STR(ch_topics_cluster_id(reg), cid);
	CH_CHECK_EQ_INT(ch_topics_count(reg), 3);
	t = ch_topics_find(reg, "alpha", 5);
	CH_CHECK(t && ch_uuid_eq(&t->id, &alpha_id) && t->partitions == 7 && !t->internal);
	CH_CHECK(t && t->n_configs == 2);
	if (t && t->n_configs == 2) {
		CH_CHECK_EQ_STR(t->configs[0].key, "cleanup.policy");
		CH_CHECK_EQ_STR(t->configs[0].value, " compact, delete ");
		CH_CHECK_EQ_STR(t->configs[1].value, "-1");
	}
	CH_CHECK(ch_topics_find_id(reg, &alpha_id) == t);
	t = ch_topics_find(reg, "__consumer_offsets", 18);
	CH_CHECK(t && t->internal && t->partitions == 50 && t->n_configs == 3);
	CH_CHECK(ch_topics_find(reg, "gone", 4) == NULL);
	/* the collision index is rebuilt too */
	CH_CHECK_EQ_INT(create(reg, "beta_x", 1, msg), 17);
	ch_topics_close(reg);
	ch_config_free(&cfg);
}

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = malloc(1 << 20);
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

static void
spit(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	fwrite(data, 1, len, f);
	fclose(f);
}

static void
t_crash_leftover_tmp(void)
{
	struct ch_config cfg;
	char dir[512], msg[512], path[600];
	mu_new_cfg(&cfg, dir, sizeof(dir));
	struct ch_topics *reg = open_ok(&cfg);
	CH_CHECK(reg != NULL);
	if (!reg) {
		ch_config_free(&cfg);
		return;
	}
	CH_CHECK_EQ_INT(create(reg, "keep", 4, msg), 0);
	ch_topics_close(reg);

	/* An interrupted write: a half-written tmp file next to the registry. */
	snprintf(path, sizeof(path), "%s/%s.tmp", dir, CH_TOPICS_FILE);
	spit(path, "cohort-topics 1\ntopics 2\ntopic AAAA", 35);
	snprintf(path, sizeof(path), "%s/%s.tmp", dir, CH_META_PROPERTIES_FILE);
	spit(path, "version=1\nnode.", 15);
	reg = open_ok(&cfg);
	CH_CHECK(reg != NULL);
	if (reg) {
		CH_CHECK_EQ_INT(ch_topics_count(reg), 1);
		const ch_topic *t = ch_topics_find(reg, "keep", 4);
		CH_CHECK(t && t->partitions == 4);
		CH_CHECK(access(path, F_OK) != 0); /* removed */
		snprintf(path, sizeof(path), "%s/%s.tmp", dir, CH_TOPICS_FILE);
		CH_CHECK(access(path, F_OK) != 0);
		/* and the registry still accepts writes */
		CH_CHECK_EQ_INT(create(reg, "more", 1, msg), 0);
		ch_topics_close(reg);
	}
	reg = open_ok(&cfg);
	CH_CHECK(reg && ch_topics_count(reg) == 2);
	ch_topics_close(reg);
	ch_config_free(&cfg);
}

static void
expect_open_error(struct ch_config *cfg, const char *want)
{
	struct ch_topics *reg;
	char err[1024] = "";
	int rc = ch_topics_open(&reg, cfg, err, sizeof(err));
	CH_CHECK_EQ_INT(rc, CH_ERR);
	if (rc == CH_OK)
		ch_topics_close(reg);
	if (!strstr(err, want)) {
		fprintf(stderr, "  error was: %s\n  wanted:    %s\n", err, want);
		CH_CHECK(strstr(err, want) != NULL);
	}
}

static void
t_corrupt(void)
{
	struct ch_config cfg;
	char dir[512], msg[512], path[600];
	mu_new_cfg(&cfg, dir, sizeof(dir));
	struct ch_topics *reg = open_ok(&cfg);
	CH_CHECK(reg != NULL);
	if (!reg) {
		ch_config_free(&cfg);
		return;
	}
	CH_CHECK_EQ_INT(create(reg, "one", 1, msg), 0);
	CH_CHECK_EQ_INT(create(reg, "two", 2, msg), 0);
	ch_topics_close(reg);
	snprintf(path, sizeof(path), "%s/%s", dir, CH_TOPICS_FILE);
	size_t len;
	char *good = slurp(path, &len);
	CH_CHECK(good && len > 40);
	if (!good) {
		ch_config_free(&cfg);
		return;
	}
	char *bad = malloc(len);

	/* a flipped byte */
	memcpy(bad, good, len);
	bad[len / 2] ^= 0x04;
	spit(path, bad, len);
	expect_open_error(&cfg, "checksum mismatch");
	/* torn tail, at several points */
	for (size_t cut = 1; cut < len; cut += 7) {
		spit(path, good, len - cut);
		expect_open_error(&cfg, "corrupt topic registry");
	}
	spit(path, good, 0);
	expect_open_error(&cfg, "truncated");
	/* a different version, with a valid checksum */
	{
		ch_buf b;
		ch_buf_init(&b);
		const char *body = "cohort-topics 9\ntopics 0\n";
		ch_buf_append(&b, body, strlen(body));
		char end[32];
		snprintf(end, sizeof(end), "end %08x\n", ch_crc32c(0, body, strlen(body)));
		ch_buf_append(&b, end, strlen(end));
		spit(path, (const char *)b.data, b.len);
		ch_buf_free(&b);
		expect_open_error(&cfg, "unsupported version '9'");
	}
	/* a registry missing while meta.properties exists */
	unlink(path);
	expect_open_error(&cfg, "is missing");
	/* the good file works again */
	spit(path, good, len);
	reg = open_ok(&cfg);
	CH_CHECK(reg && ch_topics_count(reg) == 2);
	ch_topics_close(reg);
	free(bad);
	free(good);
	ch_config_free(&cfg);
}

static void
t_meta_properties(void)
{
	struct ch_config cfg;
	char dir[512], path[600], err[512];
	mu_new_cfg(&cfg, dir, sizeof(dir));
	struct ch_topics *reg = open_ok(&cfg);
	CH_CHECK(reg != NULL);
	if (!reg) {
		ch_config_free(&cfg);
		return;
	}
	char cid[64];
	snprintf(cid, sizeof(cid), "%s", ch_topics_cluster_id(reg));
	ch_uuid u;
	CH_CHECK(ch_uuid_from_base64(cid, &u) == 0);

	/* the data directory is locked while open */
	struct ch_topics *reg2;
	CH_CHECK(ch_topics_open(&reg2, &cfg, err, sizeof(err)) == CH_ERR);
	CH_CHECK(strstr(err, "in use by another process") != NULL);
	ch_topics_close(reg);

	for (int i = 0; i < 3; i++) {
		reg = open_ok(&cfg);
		CH_CHECK(reg && strcmp(ch_topics_cluster_id(reg), cid) == 0);
		ch_topics_close(reg);
	}
	snprintf(path, sizeof(path), "%s/%s", dir, CH_META_PROPERTIES_FILE);
	size_t len;
	char *text = slurp(path, &len);
	CH_CHECK(text != NULL);
	if (text) {
		text[len] = '\0';
		CH_CHECK(strstr(text, "version=1\n") != NULL);
		CH_CHECK(strstr(text, "node.id=1\n") != NULL);
		CH_CHECK(strstr(text, cid) != NULL);
		CH_CHECK(strstr(text, "directory.id=") != NULL);
		free(text);
	}

	/* node.id mismatch */
	struct ch_config cfg2;
	char set0[600];
	snprintf(set0, sizeof(set0), "log.dirs=%s", dir);
	const char *sets[] = {set0, "node.id=2"};
	CH_CHECK(ch_config_load(&cfg2, NULL, sets, 2, err, sizeof(err)) == CH_OK);
	expect_open_error(&cfg2, "configured node.id 2 doesn't match node.id 1 stored in");
	ch_config_free(&cfg2);

	/* a damaged meta.properties */
	spit(path, "version=1\nnode.id=1\n", 20);
	expect_open_error(&cfg, "missing or invalid cluster.id");
	spit(path, "version=0\nbroker.id=1\ncluster.id=x\n", 35);
	expect_open_error(&cfg, "unsupported or missing version '0'");
	/* hand-edited: comments, CRLF, spaces around '=' (Java Properties) */
	char hand[200];
	int n = snprintf(hand, sizeof(hand),
			 "#hand written\r\n  cluster.id = %s\r\nversion=1\nnode.id=1", cid);
	spit(path, hand, (size_t)n);
	reg = open_ok(&cfg);
	CH_CHECK(reg && strcmp(ch_topics_cluster_id(reg), cid) == 0);
	ch_topics_close(reg);

	/* a fresh directory gets a different cluster id */
	struct ch_config cfg3;
	char dir3[512];
	mu_new_cfg(&cfg3, dir3, sizeof(dir3));
	reg = open_ok(&cfg3);
	CH_CHECK(reg && strcmp(ch_topics_cluster_id(reg), cid) != 0);
	ch_topics_close(reg);
	ch_config_free(&cfg3);
	ch_config_free(&cfg);
}

static void
t_persist_failure_rolls_back(void)
{
	struct ch_config cfg;
	char dir[512], msg[512], path[600];
	mu_new_cfg(&cfg, dir, sizeof(dir));
	struct ch_topics *reg = open_ok(&cfg);
	CH_CHECK(reg != NULL);
	if (!reg) {
		ch_config_free(&cfg);
		return;
	}
	CH_CHECK_EQ_INT(create(reg, "base", 2, msg), 0);
	/* A directory where the tmp file goes makes every write fail (even as
	 * root, unlike permissions). */
	snprintf(path, sizeof(path), "%s/%s.tmp", dir, CH_TOPICS_FILE);
	CH_CHECK(mkdir(path, 0755) == 0);
	CH_CHECK_EQ_INT(create(reg, "new", 1, msg), 56);
	CH_CHECK(strstr(msg, "failed to persist the topic registry") == msg);
	CH_CHECK(ch_topics_find(reg, "new", 3) == NULL);
	CH_CHECK_EQ_INT(mu_delete(reg, "base", 4, msg, sizeof(msg)), 56);
	CH_CHECK(ch_topics_find(reg, "base", 4) != NULL);
	CH_CHECK_EQ_INT(mu_add_partitions(reg, "base", 4, 9, false, msg, sizeof(msg)), 56);
	CH_CHECK_EQ_INT(ch_topics_find(reg, "base", 4)->partitions, 2);
	ch_topic_kv kv[] = {{"retention.ms", "5"}};
	CH_CHECK_EQ_INT(mu_alter_configs(reg, "base", 4, kv, 1, false, msg, sizeof(msg)), 56);
	CH_CHECK_EQ_INT(ch_topics_find(reg, "base", 4)->n_configs, 0);
	CH_CHECK(rmdir(path) == 0);
	CH_CHECK_EQ_INT(create(reg, "new", 1, msg), 0);
	ch_topics_close(reg);
	reg = open_ok(&cfg);
	CH_CHECK(reg && ch_topics_count(reg) == 2);
	if (reg) {
		const ch_topic *b = ch_topics_find(reg, "base", 4);
		CH_CHECK(b && b->partitions == 2 && b->n_configs == 0);
	}
	ch_topics_close(reg);
	ch_config_free(&cfg);
}

/* A fresh registry over a fault layer (nothing armed). */
static struct ch_topics *
open_faulty(struct ch_config *cfg, char *dir, size_t dirlen, ch_logfs_fault *f)
{
	char err[512];
	struct ch_topics *reg = NULL;
	mu_new_cfg(cfg, dir, dirlen);
	ch_logfs_fault_init(f, ch_logfs_posix());
	CH_CHECK_EQ_INT(ch_topics_open_fs(&reg, cfg, &f->ops, err, sizeof(err)), CH_OK);
	return reg;
}

/* An executor the test steps by hand: one write at a time, run on demand. */
typedef struct manual_exec {
	void (*work)(void *arg);
	void (*done)(void *arg);
	void *arg;
	int queued, runs;
} manual_exec;

static void
mx_run(void *ud, void (*work)(void *), void (*done)(void *), void *arg)
{
	manual_exec *m = ud;
	CH_CHECK_EQ_INT(m->queued, 0); /* the registry writes one at a time */
	m->work = work;
	m->done = done;
	m->arg = arg;
	m->queued = 1;
}

/* Runs the queued write (the worker's part, then the loop's). */
static void
mx_step(manual_exec *m)
{
	CH_CHECK_EQ_INT(m->queued, 1);
	if (!m->queued)
		return;
	m->queued = 0;
	m->runs++;
	m->work(m->arg);
	m->done(m->arg);
}

/* Outcomes of transactions, in the order they were answered. */
typedef struct outcome {
	int order;
	int16_t err;
	char msg[200];
} outcome;
static int answered;

static void
record(void *ud, int16_t err, const char *msg)
{
	outcome *o = ud;
	o->order = ++answered;
	o->err = err;
	snprintf(o->msg, sizeof(o->msg), "%s", msg ? msg : "");
}

static bool
file_has(const char *dir, const char *needle)
{
	char path[600];
	size_t len;
	snprintf(path, sizeof(path), "%s/%s", dir, CH_TOPICS_FILE);
	char *data = slurp(path, &len);
	bool found = data && memmem(data, len, needle, strlen(needle)) != NULL;
	free(data);
	return found;
}

/* Writes off the loop thread: visible at once, answered when durable, one
 * write at a time covering every transaction committed before it started,
 * answers in commit order, a failed write undoes and fails everything not
 * yet durable. */
static void
t_async_transactions(void)
{
	struct ch_config cfg;
	char dir[512], msg[512];
	ch_logfs_fault f;
	struct ch_topics *reg = open_faulty(&cfg, dir, sizeof(dir), &f);
	static manual_exec mx;
	ch_topics_set_exec(reg, &(ch_topics_exec){mx_run, &mx});
	answered = 0;
	outcome o[8];
	memset(o, 0, sizeof(o));

	ch_topics_txn *tx = ch_topics_begin(reg);
	CH_CHECK_EQ_INT(ch_topics_create(tx, "x", 1, 2, NULL, 0, false, NULL, msg, sizeof(msg)), 0);
	ch_topics_commit(tx, record, &o[0]);
	/* Visible to the next request at once; not answered, not on disk. */
	CH_CHECK(ch_topics_find(reg, "x", 1) != NULL);
	CH_CHECK(o[0].order == 0 && mx.queued == 1 && ch_topics_busy(reg));
	CH_CHECK(!file_has(dir, " x\n"));
	/* Validation sees it too. */
	tx = ch_topics_begin(reg);
	CH_CHECK_EQ_INT(ch_topics_create(tx, "x", 1, 1, NULL, 0, false, NULL, msg, sizeof(msg)),
			36);
	CH_CHECK_EQ_INT(ch_topics_create(tx, "y", 1, 1, NULL, 0, false, NULL, msg, sizeof(msg)), 0);
	ch_topics_commit(tx, record, &o[1]);
	tx = ch_topics_begin(reg); /* nothing staged: still answered after the others */
	ch_topics_commit(tx, record, &o[2]);
	CH_CHECK(o[1].order == 0 && o[2].order == 0);

	mx_step(&mx); /* the write of x alone */
	CH_CHECK(o[0].order == 1 && o[0].err == 0 && o[1].order == 0 && o[2].order == 0);
	CH_CHECK(file_has(dir, " x\n") && !file_has(dir, " y\n"));
	CH_CHECK_EQ_INT(mx.queued, 1); /* the next one, for y and the empty one */
	mx_step(&mx);
	CH_CHECK(o[1].order == 2 && o[1].err == 0 && o[2].order == 3 && o[2].err == 0);
	CH_CHECK(file_has(dir, " y\n") && !ch_topics_busy(reg));
	CH_CHECK_EQ_INT(mx.runs, 2);

	/* An empty transaction with nothing ahead is answered at once. */
	tx = ch_topics_begin(reg);
	ch_topics_commit(tx, record, &o[3]);
	CH_CHECK(o[3].order == 4 && mx.queued == 0);

	/* Group commit: three transactions committed during one write are
	 * covered by the next single write. */
	for (int i = 0; i < 3; i++) {
		char name[8];
		snprintf(name, sizeof(name), "g%d", i);
		tx = ch_topics_begin(reg);
		CH_CHECK_EQ_INT(
			ch_topics_create(tx, name, 2, 1, NULL, 0, false, NULL, msg, sizeof(msg)),
			0);
		ch_topics_commit(tx, record, &o[4 + (i > 0)]);
	}
	mx_step(&mx);
	long steps = atomic_load(&f.steps);
	mx_step(&mx);
	CH_CHECK_EQ_INT(atomic_load(&f.steps) - steps, 5); /* one write for g1 and g2 */
	CH_CHECK(mx.queued == 0 && file_has(dir, " g2\n"));

	/* A failed write: it and the one committed after it are undone, in
	 * memory, and both fail; the registry goes on afterwards. */
	tx = ch_topics_begin(reg);
	CH_CHECK_EQ_INT(ch_topics_create(tx, "z", 1, 1, NULL, 0, false, NULL, msg, sizeof(msg)), 0);
	ch_topics_commit(tx, record, &o[6]);
	tx = ch_topics_begin(reg);
	CH_CHECK_EQ_INT(ch_topics_delete(tx, "x", 1, msg, sizeof(msg)), 0);
	ch_topics_commit(tx, record, &o[7]);
	CH_CHECK(ch_topics_find(reg, "z", 1) && !ch_topics_find(reg, "x", 1));
	ch_logfs_fault_arm(&f, 2, ENOSPC, false); /* the write of z */
	mx_step(&mx);
	CH_CHECK(o[6].err == 56 && strstr(o[6].msg, "No space left on device"));
	CH_CHECK(o[7].err == 56 && strstr(o[7].msg, "an earlier change"));
	CH_CHECK(o[6].order + 1 == o[7].order);
	CH_CHECK(!ch_topics_find(reg, "z", 1) && ch_topics_find(reg, "x", 1));
	CH_CHECK(mx.queued == 0 && !ch_topics_busy(reg));
	tx = ch_topics_begin(reg);
	CH_CHECK_EQ_INT(ch_topics_delete(tx, "y", 1, msg, sizeof(msg)), 0);
	ch_topics_commit(tx, record, &o[7]);
	mx_step(&mx);
	CH_CHECK(o[7].err == 0);
	ch_topics_set_exec(reg, NULL);
	ch_topics_close(reg);

	reg = open_ok(&cfg);
	CH_CHECK(reg && ch_topics_count(reg) == 4); /* x g0 g1 g2 */
	CH_CHECK(reg && ch_topics_find(reg, "x", 1) && !ch_topics_find(reg, "y", 1) &&
		 !ch_topics_find(reg, "z", 1));
	ch_topics_close(reg);
	ch_config_free(&cfg);
}

/* Dynamic broker configs live in the registry: durable with it, set into
 * the config at open and on each change, undone with a failed write. */
static void
t_broker_configs(void)
{
	struct ch_config cfg;
	char dir[512], msg[512], err[512];
	ch_logfs_fault f;
	struct ch_topics *reg = open_faulty(&cfg, dir, sizeof(dir), &f);
	CH_CHECK(file_has(dir, "cohort-topics 1\n"));
	ch_topic_kv bad[] = {{"node.id", "5"}};
	ch_topics_txn *tx = ch_topics_begin(reg);
	CH_CHECK_EQ_INT(ch_topics_set_broker_configs(tx, CH_CONFIG_LAYER_BROKER, bad, 1, false, msg,
						     sizeof(msg)),
			42);
	CH_CHECK_EQ_STR(msg, "Cannot update these configs dynamically: [node.id]");
	ch_topic_kv dflt[] = {{"message.max.bytes", "5000"}, {"log.roll.ms", "60000"}};
	CH_CHECK_EQ_INT(ch_topics_set_broker_configs(tx, CH_CONFIG_LAYER_DEFAULT, dflt, 2, false,
						     msg, sizeof(msg)),
			0);
	CH_CHECK_EQ_INT(cfg.message_max_bytes, 5000); /* at once, like a topic change */
	CH_CHECK_EQ_INT(ch_topics_commit_sync(tx, msg, sizeof(msg)), 0);
	CH_CHECK(file_has(dir, "cohort-topics 2\n") && file_has(dir, "broker default 2\n"));
	const ch_topic_kv *kv;
	size_t n;
	ch_topics_broker_configs(reg, CH_CONFIG_LAYER_DEFAULT, &kv, &n);
	CH_CHECK(n == 2 && strcmp(kv[0].key, "log.roll.ms") == 0);

	/* A failed write takes the layer, and the config, back. */
	ch_topic_kv mine[] = {{"message.max.bytes", "7000"}};
	tx = ch_topics_begin(reg);
	CH_CHECK_EQ_INT(ch_topics_set_broker_configs(tx, CH_CONFIG_LAYER_BROKER, mine, 1, false,
						     msg, sizeof(msg)),
			0);
	CH_CHECK_EQ_INT(cfg.message_max_bytes, 7000);
	ch_logfs_fault_arm(&f, 1, EIO, true);
	CH_CHECK_EQ_INT(ch_topics_commit_sync(tx, msg, sizeof(msg)), 56);
	ch_logfs_fault_arm(&f, 0, 0, false);
	CH_CHECK_EQ_INT(cfg.message_max_bytes, 5000);
	ch_topics_broker_configs(reg, CH_CONFIG_LAYER_BROKER, &kv, &n);
	CH_CHECK_EQ_INT(n, 0);
	ch_topics_close(reg);
	ch_config_free(&cfg);

	/* A restart reads them back into a fresh config. */
	struct ch_config cfg2;
	char set[600];
	snprintf(set, sizeof(set), "log.dirs=%s", dir);
	const char *sets[] = {set};
	CH_CHECK(ch_config_load(&cfg2, NULL, sets, 1, err, sizeof(err)) == CH_OK);
	reg = open_ok(&cfg2);
	CH_CHECK(reg != NULL);
	CH_CHECK(cfg2.message_max_bytes == 5000 && cfg2.log_roll_ms == 60000);
	ch_config_entry e;
	CH_CHECK(ch_config_describe(&cfg2, "log.roll.ms", &e) == CH_OK &&
		 e.source == CH_CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG);
	/* Emptying both layers writes version 1 again. */
	tx = ch_topics_begin(reg);
	CH_CHECK_EQ_INT(ch_topics_set_broker_configs(tx, CH_CONFIG_LAYER_DEFAULT, NULL, 0, false,
						     msg, sizeof(msg)),
			0);
	CH_CHECK_EQ_INT(ch_topics_commit_sync(tx, msg, sizeof(msg)), 0);
	CH_CHECK(file_has(dir, "cohort-topics 1\n") && cfg2.message_max_bytes == 1048588);
	ch_topics_close(reg);
	ch_config_free(&cfg2);
}

CH_TEST_MAIN(CH_TEST(t_name_rules), CH_TEST(t_async_transactions), CH_TEST(t_broker_configs),
	     CH_TEST(t_create_delete_lookup), CH_TEST(t_persistence), CH_TEST(t_crash_leftover_tmp),
	     CH_TEST(t_corrupt), CH_TEST(t_meta_properties), CH_TEST(t_persist_failure_rolls_back))
