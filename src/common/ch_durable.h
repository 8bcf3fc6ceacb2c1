/*
 * ch_durable: small state files the broker rewrites whole (SCRAM
 * credentials, client quotas): a durable replace and a line reader.
 */
#ifndef CH_DURABLE_H
#define CH_DURABLE_H

#include <stddef.h>

/* Replaces the file path (inside dir) with data[0..len), durably: a
 * temporary file beside it, fsync, rename over it, fsync of dir. 0, or -1
 * with why (the old file is untouched then). Mode 0600. */
int ch_durable_replace(const char *dir, const char *path, const void *data, size_t len, char *err,
		       size_t errlen);

/* Calls fn for each line of path, its newline stripped, skipping empty
 * lines and '#' comments (lines of any length). 1: there is no such
 * file; 0: read; -1 with why: a read error, or fn returned non-zero for a
 * line ("PATH:LINE: " and fn's why). */
int ch_durable_read_lines(const char *path, int (*fn)(void *ud, char *line, char *why, size_t n),
			  void *ud, char *err, size_t errlen);

#endif
