/*
 * meta_util.h: helpers for the meta/ unit tests: configs whose data
 * directory is a fresh directory under one mkdtemp() removed at exit.
 */
#ifndef META_UTIL_H
#define META_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "config/ch_config.h"

static char mu_tmpdir[256];
static int mu_dir_seq;

static void
mu_cleanup(void)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", mu_tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup failed: %s\n", mu_tmpdir);
}

/* A config (defaults) whose log.dirs is a new directory, not yet created;
 * its path is copied to dir when dir is not NULL. */
static void
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

#endif
