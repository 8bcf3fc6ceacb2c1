/*
 * ch_regex.cc: ch_regex.h on RE2 (C++), the one C++ file of cohort.
 *
 * Kafka compiles SubscribedTopicRegex with RE2J 1.8 (Pattern.compile) and
 * matches topic names with Matcher.matches(). RE2 (C++, 2022-06) parses
 * the same syntax but differs in a few places; measured on both, and
 * bridged here so cohortd accepts and refuses what Kafka does:
 *   - (?<name>re): RE2J accepts it as (?P<name>re); this RE2 refuses it:
 *     rewritten to (?P<name> before compiling.
 *   - a repeated group name (?P<n>a)(?P<n>b): RE2J refuses it ("duplicate
 *     capture group name"); this RE2 accepts it: counted and refused.
 *   - \C (any byte): RE2J refuses it ("invalid escape sequence").
 *   - the error texts: RE2's codes mapped to RE2J's descriptions (an
 *     unexpected ")" is RE2J 1.8's "regexp/syntax: internal error").
 * Left different: RE2's limits. Nested repetition past 1000
 * (((a{1000}){1000}){1000}: "invalid repeat count"; RE2J says "missing
 * closing )") and its memory budget (ErrorPatternTooLarge; RE2J has none).
 */
#include "regex/ch_regex.h"

#include <re2/re2.h>

#include <cstdio>
#include <new>
#include <string>

struct ch_regex {
	RE2 *re;
};

namespace {

/* RE2J 1.8's words (com.google.re2j.Parser's ERR_ constants) for RE2's codes. */
const char *
re2j_description(RE2::ErrorCode code)
{
	switch (code) {
	case RE2::ErrorBadEscape:
		return "invalid escape sequence";
	case RE2::ErrorBadCharClass:
	case RE2::ErrorBadCharRange:
		return "invalid character class range";
	case RE2::ErrorMissingBracket:
		return "missing closing ]";
	case RE2::ErrorMissingParen:
		return "missing closing )";
	case RE2::ErrorTrailingBackslash:
		return "trailing backslash at end of expression";
	case RE2::ErrorRepeatArgument:
		return "missing argument to repetition operator";
	case RE2::ErrorRepeatSize:
		return "invalid repeat count";
	case RE2::ErrorRepeatOp:
		return "invalid nested repetition operator";
	case RE2::ErrorBadPerlOp:
		return "invalid or unsupported Perl syntax";
	case RE2::ErrorBadUTF8:
		return "invalid UTF-8";
	case RE2::ErrorBadNamedCapture:
		return "invalid named capture";
	case RE2::ErrorPatternTooLarge:
		return "pattern too large - compile failed";
	case RE2::ErrorUnexpectedParen:
	case RE2::ErrorInternal:
	default:
		return "regexp/syntax: internal error";
	}
}

/* Walks the pattern outside escapes, \Q...\E and character classes:
 * rewrites (?<name> as (?P<name>, counts named groups; false (with the
 * description) for what RE2J refuses and RE2 accepts. */
bool
prepare(const char *p, size_t n, std::string &out, int &named, const char *&why)
{
	out.reserve(n + 8);
	named = 0;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (c == '\\' && i + 1 < n) {
			char e = p[i + 1];
			if (e == 'C') {
				why = "invalid escape sequence";
				return false;
			}
			if (e == 'Q') { /* literal text up to \E or the end */
				size_t end = i + 2;
				while (end < n && !(p[end] == '\\' && end + 1 < n && p[end + 1] == 'E'))
					end++;
				end = end < n ? end + 2 : n;
				out.append(p + i, end - i);
				i = end - 1;
				continue;
			}
			out.append(p + i, 2);
			i++;
			continue;
		}
		if (c == '[') { /* a class: up to its ], a leading ] (or ^]) is literal */
			size_t j = i + 1;
			if (j < n && p[j] == '^')
				j++;
			if (j < n && p[j] == ']')
				j++;
			while (j < n && p[j] != ']') {
				if (p[j] == '\\' && j + 1 < n)
					j++;
				else if (p[j] == '[' && j + 1 < n && p[j + 1] == ':') {
					size_t k = j + 2;
					while (k + 1 < n && !(p[k] == ':' && p[k + 1] == ']'))
						k++;
					if (k + 1 < n)
						j = k + 1;
				}
				j++;
			}
			size_t end = j < n ? j + 1 : n;
			out.append(p + i, end - i);
			i = end - 1;
			continue;
		}
		if (c == '(' && i + 2 < n && p[i + 1] == '?') {
			if (p[i + 2] == 'P' && i + 3 < n && p[i + 3] == '<') {
				named++;
			} else if (p[i + 2] == '<') { /* (?<= and (?<! too: RE2J calls them bad names */
				named++;
				out.append("(?P<");
				i += 2;
				continue;
			}
		}
		out.push_back(c);
	}
	return true;
}

void
put_err(char *err, size_t cap, const char *why)
{
	if (cap)
		std::snprintf(err, cap, "%s", why);
}

} // namespace

extern "C" ch_regex *
ch_regex_compile(const char *pattern, size_t len, char *err, size_t cap)
{
	std::string text;
	int named = 0;
	const char *why = nullptr;
	if (!prepare(pattern, len, text, named, why)) {
		put_err(err, cap, why);
		return nullptr;
	}
	RE2::Options opt;
	opt.set_log_errors(false); /* the caller reports it */
	RE2 *re = new (std::nothrow) RE2(text, opt);
	if (!re) {
		put_err(err, cap, "out of memory");
		return nullptr;
	}
	if (!re->ok()) {
		put_err(err, cap, re2j_description(re->error_code()));
		delete re;
		return nullptr;
	}
	if (static_cast<size_t>(named) > re->NamedCapturingGroups().size()) {
		put_err(err, cap, "duplicate capture group name");
		delete re;
		return nullptr;
	}
	ch_regex *r = new (std::nothrow) ch_regex;
	if (!r) {
		delete re;
		put_err(err, cap, "out of memory");
		return nullptr;
	}
	r->re = re;
	return r;
}

extern "C" bool
ch_regex_full_match(const ch_regex *re, const char *s, size_t len)
{
	return RE2::FullMatch(re2::StringPiece(s, len), *re->re);
}

extern "C" void
ch_regex_free(ch_regex *re)
{
	if (!re)
		return;
	delete re->re;
	delete re;
}
