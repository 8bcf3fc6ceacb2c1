/*
 * test_regex.c: ch_regex against what Kafka's RE2J 1.8 answers: each
 * pattern's verdict and error description below was measured with
 * com.google.re2j.Pattern.compile (re2j-1.8.jar of Kafka 4.4.0), and the
 * matches with Matcher.matches().
 */
#include <string.h>

#include "common/ch_test.h"
#include "regex/ch_regex.h"

typedef struct verdict {
	const char *pattern;
	const char *error; /* NULL: valid */
} verdict;

static const verdict verdicts[] = {
	{"(abc", "missing closing )"},
	{"abc)", "regexp/syntax: internal error"},
	{"[abc", "missing closing ]"},
	{"[z-a]", "invalid character class range"},
	{"a**", "invalid nested repetition operator"},
	{"a{2,1}", "invalid repeat count"},
	{"a{1001}", "invalid repeat count"},
	{"*a", "missing argument to repetition operator"},
	{"x\\", "trailing backslash at end of expression"},
	{"\\8", "invalid escape sequence"},
	{"(?P<n>a)(?P<n>b)", "duplicate capture group name"},
	{"(?P<>a)", "invalid named capture"},
	{"(?i", "invalid or unsupported Perl syntax"},
	{"(?<n>a)", NULL},
	{"[[:foo:]]", "invalid character class range"},
	{"\\pX", "invalid character class range"},
	{"(?=a)", "invalid or unsupported Perl syntax"},
	{"(?<=a)b", "invalid named capture"},
	{"(?<!a)b", "invalid named capture"},
	{"a++", "invalid nested repetition operator"},
	{"\\Q.*", NULL},
	{"\\Q(?<n>\\E", NULL},
	{"[(?<]x", NULL},
	{"topic-.*", NULL},
	{"^t.*$", NULL},
	{"(a|b", "missing closing )"},
	{"a{,3}", NULL},
	{"\\z", NULL},
	{"\\Z", "invalid escape sequence"},
	{"[]", "missing closing ]"},
	{"\\C", "invalid escape sequence"},
	{"[\\C]", "invalid escape sequence"},
	{"(?P=n)", "invalid or unsupported Perl syntax"},
	{"x{2}{3}", "invalid nested repetition operator"},
	{"(?P<n>a)|(?P<m>b)", NULL},
	{"\\1", "invalid escape sequence"},
	{"[[:alpha:]]+", NULL},
	{"[[:alpha:]", "missing closing ]"},
};

static void
t_verdicts_as_re2j(void)
{
	for (size_t i = 0; i < sizeof verdicts / sizeof *verdicts; i++) {
		const verdict *v = &verdicts[i];
		char err[128] = "";
		ch_regex *re = ch_regex_compile(v->pattern, strlen(v->pattern), err, sizeof err);
		if (!v->error) {
			if (!re)
				fprintf(stderr, "  %s refused: %s\n", v->pattern, err);
			CH_CHECK(re != NULL);
		} else {
			if (re)
				fprintf(stderr, "  %s accepted\n", v->pattern);
			CH_CHECK(re == NULL);
			CH_CHECK_EQ_STR(err, v->error);
		}
		ch_regex_free(re);
	}
}

static bool
matches(const char *pattern, const char *s)
{
	char err[128];
	ch_regex *re = ch_regex_compile(pattern, strlen(pattern), err, sizeof err);
	CH_CHECK(re != NULL);
	bool m = re && ch_regex_full_match(re, s, strlen(s));
	ch_regex_free(re);
	return m;
}

/* Matcher.matches(): the whole name, never a part of it. */
static void
t_full_match(void)
{
	CH_CHECK(matches("orders.*", "orders"));
	CH_CHECK(matches("orders.*", "orders-eu"));
	CH_CHECK(!matches("orders", "orders-eu"));
	CH_CHECK(!matches("eu", "orders-eu"));
	CH_CHECK(matches(".*eu", "orders-eu"));
	CH_CHECK(matches("^orders-(eu|us)$", "orders-us"));
	CH_CHECK(!matches("orders-(eu|us)", "orders-usa"));
	CH_CHECK(matches("(?<region>eu|us)-.*", "eu-1"));
	CH_CHECK(matches("(?i)ORDERS", "orders"));
	CH_CHECK(matches("a.c", "a.c"));
	CH_CHECK(matches("a\\.c", "a.c"));
	CH_CHECK(!matches("a\\.c", "abc"));
	CH_CHECK(matches("\\Q.*\\E", ".*"));
	CH_CHECK(!matches("\\Q.*\\E", "xx"));
	CH_CHECK(matches("", ""));
	CH_CHECK(!matches("", "t"));
	/* the length is the caller's: no NUL needed, none looked at */
	char err[64];
	ch_regex *re = ch_regex_compile("t[0-9]xyz", 6, err, sizeof err);
	CH_CHECK(re != NULL);
	CH_CHECK(re && ch_regex_full_match(re, "t7abc", 2));
	ch_regex_free(re);
}

CH_TEST_MAIN(CH_TEST(t_verdicts_as_re2j), CH_TEST(t_full_match))
