/*
 * meta_util.h: helpers for tests of the topic registry (meta/ and broker/):
 * configs whose data directory is a fresh directory under one mkdtemp()
 * removed at exit, and one-change transactions written at once (no
 * executor): each returns the validation error, else the commit's.
 */
#ifndef META_UTIL_H
#define META_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "config/ch_config.h"
#include "meta/ch_topics.h"

static char mu_tmpdir[256];
static int mu_dir_seq;

static inline void
mu_cleanup(void)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", mu_tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup failed: %s\n", mu_tmpdir);
}

/* A config (defaults) whose log.dirs is a new directory, not yet created;
 * its path is copied to dir when dir is not NULL. */
static inline void
mu_new_cfg(struct ch_config *cfg, char *dir, size_t dirlen)
{
	if (!mu_tmpdir[0]) {
		const char *base = getenv("TMPDIR");
		snprintf(mu_tmpdir, sizeof(mu_tmpdir), "%s/ch_meta_XXXXXX", base ? base : "/tmp");
		if (!mkdtemp(mu_tmpdir))
			abort();
		atexit(mu_cleanup);
	}
	char path[400], set[600];
	snprintf(path, sizeof(path), "%s/d%d/data", mu_tmpdir, ++mu_dir_seq);
	if (dir)
		snprintf(dir, dirlen, "%s", path);
	snprintf(set, sizeof(set), "log.dirs=%s", path);
	const char *sets[] = {set};
	char err[512];
	if (ch_config_load(cfg, NULL, sets, 1, err, sizeof(err)) != CH_OK) {
		fprintf(stderr, "%s\n", err);
		abort();
	}
}

/* Ends a one-change transaction: ec is the staging result. */
static inline int16_t
mu_end(ch_topics_txn *tx, int16_t ec, char *msg, size_t msglen)
{
	char m2[512];
	int16_t c = ch_topics_commit_sync(tx, m2, sizeof(m2));
	if (!ec && c && msg)
		snprintf(msg, msglen, "%s", m2);
	return ec ? ec : c;
}

static inline int16_t
mu_create(struct ch_topics *reg, const char *name, size_t len, int32_t parts, const ch_topic_kv *kv,
	  size_t n, bool validate_only, const ch_topic **out, char *msg, size_t msglen)
{
	ch_topics_txn *tx = ch_topics_begin(reg);
	int16_t ec = ch_topics_create(tx, name, len, parts, kv, n, validate_only, out, msg, msglen);
	ec = mu_end(tx, ec, msg, msglen);
	if (ec && out)
		*out = NULL;
	return ec;
}

static inline int16_t
mu_ensure_offsets(struct ch_topics *reg, const ch_topic **out, char *msg, size_t msglen)
{
	ch_topics_txn *tx = ch_topics_begin(reg);
	int16_t ec = ch_topics_ensure_offsets_topic(tx, out, msg, msglen);
	ec = mu_end(tx, ec, msg, msglen);
	if (ec && out)
		*out = NULL;
	return ec;
}

static inline int16_t
mu_delete(struct ch_topics *reg, const char *name, size_t len, char *msg, size_t msglen)
{
	ch_topics_txn *tx = ch_topics_begin(reg);
	return mu_end(tx, ch_topics_delete(tx, name, len, msg, msglen), msg, msglen);
}

static inline int16_t
mu_delete_id(struct ch_topics *reg, const ch_uuid *id, char *msg, size_t msglen)
{
	ch_topics_txn *tx = ch_topics_begin(reg);
	return mu_end(tx, ch_topics_delete_id(tx, id, msg, msglen), msg, msglen);
}

static inline int16_t
mu_add_partitions(struct ch_topics *reg, const char *name, size_t len, int32_t total,
		  bool validate_only, char *msg, size_t msglen)
{
	ch_topics_txn *tx = ch_topics_begin(reg);
	return mu_end(tx,
		      ch_topics_add_partitions(tx, name, len, total, validate_only, msg, msglen),
		      msg, msglen);
}

static inline int16_t
mu_alter_configs(struct ch_topics *reg, const char *name, size_t len, const ch_topic_kv *kv,
		 size_t n, bool validate_only, char *msg, size_t msglen)
{
	ch_topics_txn *tx = ch_topics_begin(reg);
	return mu_end(tx, ch_topics_alter_configs(tx, name, len, kv, n, validate_only, msg, msglen),
		      msg, msglen);
}

#endif
