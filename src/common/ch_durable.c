/*
 * ch_durable.c: contracts in ch_durable.h.
 */
#include "common/ch_durable.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ch_common.h"

int
ch_durable_replace(const char *dir, const char *path, const void *data, size_t len, char *err,
		   size_t errlen)
{
	size_t tl = strlen(path) + 8;
	char *tmp = ch_xmalloc(tl);
	snprintf(tmp, tl, "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	int rc = 0;
	for (size_t off = 0; off < len && rc == 0;) {
		ssize_t n = write(fd, (const char *)data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			rc = -1;
		else
			off += (size_t)n;
	}
	if (rc == 0 && fsync(fd) != 0)
		rc = -1;
	int saved = errno;
	if (close(fd) != 0 && rc == 0) {
		rc = -1;
		saved = errno;
	}
	if (rc == 0 && rename(tmp, path) != 0) {
		rc = -1;
		saved = errno;
	}
	if (rc != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(saved));
		unlink(tmp);
		free(tmp);
		return -1;
	}
	free(tmp);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) != 0) {
		snprintf(err, errlen, "%s: fsync: %s", dir, strerror(errno));
		if (dfd >= 0)
			close(dfd);
		return -1;
	}
	close(dfd);
	return 0;
}

int
ch_durable_read_lines(const char *path, int (*fn)(void *ud, char *line, char *why, size_t n),
		      void *ud, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT)
			return 1;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t got;
	int lineno = 0;
	while ((got = getline(&line, &cap, f)) >= 0) {
		lineno++;
		size_t l = (size_t)got;
		if (l && line[l - 1] == '\n')
			line[--l] = '\0';
		if (l == 0 || line[0] == '#')
			continue;
		char why[256] = "malformed line";
		if (fn(ud, line, why, sizeof(why)) != 0) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
			free(line);
			fclose(f);
			return -1;
		}
	}
	free(line);
	bool bad = ferror(f);
	fclose(f);
	if (bad) {
		snprintf(err, errlen, "%s: read error", path);
		return -1;
	}
	return 0;
}
