/*
 * cli_table.c: tables for people, laid out as Kafka's tools lay them out
 * (kafka-consumer-groups: each column as wide as its widest cell, a space
 * between; the last column not padded).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

bool
cli_grow(void *arrp, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return true;
	size_t ncap = *cap ? *cap * 2 : 16;
	void *p = realloc(*(void **)arrp, ncap * size);
	if (!p)
		return false;
	*(void **)arrp = p;
	*cap = ncap;
	return true;
}

cli_table *
cli_table_new(const char *const *headers, int ncols)
{
	cli_table *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->ncols = ncols;
	if (!cli_table_add(t, headers)) {
		free(t);
		return NULL;
	}
	return t;
}

bool
cli_table_add(cli_table *t, const char *const *cells)
{
	if (!cli_grow(&t->cells, &t->cap, t->nrows, (size_t)t->ncols * sizeof(char *)))
		return false;
	char **row = t->cells + t->nrows * (size_t)t->ncols;
	for (int i = 0; i < t->ncols; i++) {
		row[i] = strdup(cells[i] ? cells[i] : "-");
		if (!row[i]) {
			while (i--)
				free(row[i]);
			return false;
		}
	}
	t->nrows++;
	return true;
}

void
cli_table_print(const cli_table *t, FILE *f)
{
	size_t w[64] = {0};
	int nc = t->ncols < 64 ? t->ncols : 64;
	for (size_t r = 0; r < t->nrows; r++)
		for (int c = 0; c < nc; c++) {
			size_t len = strlen(t->cells[r * (size_t)t->ncols + (size_t)c]);
			if (len > w[c])
				w[c] = len;
		}
	for (size_t r = 0; r < t->nrows; r++) {
		for (int c = 0; c < nc; c++) {
			const char *s = t->cells[r * (size_t)t->ncols + (size_t)c];
			if (c + 1 < nc)
				fprintf(f, "%-*s ", (int)w[c], s);
			else
				fprintf(f, "%s\n", s);
		}
	}
}

void
cli_table_free(cli_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}

/* Whether a progress line is on the terminal now, and when it was drawn. */
static bool progress_shown;
static struct timespec progress_at;

void
cli_progress(bool force, const char *fmt, ...)
{
	static int tty = -1;
	if (tty < 0)
		tty = isatty(STDERR_FILENO);
	if (!tty)
		return;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	long long ms = (now.tv_sec - progress_at.tv_sec) * 1000LL +
		       (now.tv_nsec - progress_at.tv_nsec) / 1000000;
	if (!force && progress_shown && ms < 200)
		return;
	progress_at = now;
	va_list ap;
	va_start(ap, fmt);
	fputs("\rcohort: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputs("\033[K", stderr); /* erase what a longer line left */
	va_end(ap);
	progress_shown = true;
}

void
cli_progress_end(void)
{
	if (progress_shown)
		fputs("\r\033[K", stderr);
	progress_shown = false;
}
