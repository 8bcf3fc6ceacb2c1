/*
 * ch_test.h: the unit-test harness. A test file defines test functions and a
 * table; main runs them all, or only those named on the command line.
 *
 *   static void t_roundtrip(void) { CH_CHECK(x == 1); CH_CHECK_EQ_INT(a, b); }
 *   CH_TEST_MAIN(CH_TEST(t_roundtrip), ...)
 *
 * Prints one line per failed check and a closing "N passed, N failed" line;
 * the exit code is non-zero if anything failed (ctest reads it).
 */
#ifndef CH_TEST_H
#define CH_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stdint.h>

static int ch_test_failures_;

#define CH_CHECK(cond)                                                                             \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			ch_test_failures_++;                                                       \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
		}                                                                                  \
	} while (0)

#define CH_CHECK_EQ_INT(a, b)                                                                      \
	do {                                                                                       \
		long long a_ = (long long)(a), b_ = (long long)(b);                                \
		if (a_ != b_) {                                                                    \
			ch_test_failures_++;                                                       \
			fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__,        \
				__LINE__, #a, #b, a_, b_);                                         \
		}                                                                                  \
	} while (0)

#define CH_CHECK_EQ_STR(a, b)                                                                      \
	do {                                                                                       \
		const char *a_ = (a), *b_ = (b);                                                   \
		if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                           \
			ch_test_failures_++;                                                       \
			fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__,    \
				__LINE__, #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)");         \
		}                                                                                  \
	} while (0)

/* A small deterministic generator for seeded tests (an LCG; the top bits). */
static inline uint32_t
ch_test_rand(uint32_t *state)
{
	*state = *state * 1103515245u + 12345u;
	return *state >> 8;
}

/* Runs fn(arg) with stderr going to a temporary file; returns what it wrote
 * (malloc'd, caller frees). For tests of what gets logged. */
static inline char *
ch_test_capture_stderr(void (*fn)(void *arg), void *arg)
{
	fflush(stderr);
	FILE *tmp = tmpfile();
	int saved = dup(2);
	if (!tmp || saved < 0)
		abort();
	dup2(fileno(tmp), 2);
	fn(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	long n = ftell(tmp);
	char *out = malloc((size_t)(n > 0 ? n : 0) + 1);
	rewind(tmp);
	size_t got = out ? fread(out, 1, (size_t)(n > 0 ? n : 0), tmp) : 0;
	fclose(tmp);
	if (!out)
		abort();
	out[got] = '\0';
	return out;
}

/* Occurrences of needle in s. */
static inline int
ch_test_count(const char *s, const char *needle)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* What a limited error streak (common/ch_ratelog.h) of a few fast failures
 * logs: the first failure once, the recovery once, no other line. */
#define CH_CHECK_LOGGED_STREAK(out, first, recovery)                                               \
	do {                                                                                       \
		int before_ = ch_test_failures_;                                                   \
		CH_CHECK_EQ_INT(ch_test_count((out), (first)), 1);                                 \
		CH_CHECK_EQ_INT(ch_test_count((out), (recovery)), 1);                              \
		CH_CHECK_EQ_INT(ch_test_count((out), "\n"), 2);                                    \
		if (ch_test_failures_ != before_)                                                  \
			fprintf(stderr, "logged:\n%s", (out));                                     \
	} while (0)

typedef struct ch_test_case {
	const char *name;
	void (*fn)(void);
} ch_test_case;

#define CH_TEST(f)                                                                                 \
	{                                                                                          \
#f, f                                                                              \
	}

#define CH_TEST_MAIN(...)                                                                          \
	int main(int argc, char **argv)                                                            \
	{                                                                                          \
		static const ch_test_case cases[] = {__VA_ARGS__};                                 \
		int passed = 0, failed = 0;                                                        \
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {                    \
			if (argc > 1) {                                                            \
				int want = 0;                                                      \
				for (int j = 1; j < argc; j++)                                     \
					want |= strcmp(argv[j], cases[i].name) == 0;               \
				if (!want)                                                         \
					continue;                                                  \
			}                                                                          \
			int before = ch_test_failures_;                                            \
			cases[i].fn();                                                             \
			if (ch_test_failures_ == before) {                                         \
				passed++;                                                          \
			} else {                                                                   \
				failed++;                                                          \
				fprintf(stderr, "FAIL %s\n", cases[i].name);                       \
			}                                                                          \
		}                                                                                  \
		printf("%d passed, %d failed\n", passed, failed);                                  \
		return failed ? 1 : 0;                                                             \
	}

#endif
