/*
 * ch_regex.h: regular expressions as Kafka's group coordinator evaluates
 * SubscribedTopicRegex (KIP-848): RE2 syntax, matched against the whole
 * topic name (RE2J's Matcher.matches()).
 *
 * Built on Google's RE2 (Debian's libre2-dev, C++) behind this C
 * interface. Kafka uses RE2J 1.8, a Java port of the same syntax; where
 * the two differ, this file follows RE2J (what a Kafka broker accepts and
 * the words of its error), see ch_regex.cc.
 */
#ifndef CH_REGEX_H
#define CH_REGEX_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ch_regex ch_regex;

/* Compiles pattern[0..len). NULL if it is not valid, with RE2J's
 * description of why in err (PatternSyntaxException.getDescription(),
 * e.g. "missing closing )"). Caller frees with ch_regex_free. */
ch_regex *ch_regex_compile(const char *pattern, size_t len, char *err, size_t cap);
/* Whether the whole of s[0..len) matches (not a substring of it). */
bool ch_regex_full_match(const ch_regex *re, const char *s, size_t len);
void ch_regex_free(ch_regex *re);

#ifdef __cplusplus
}
#endif

#endif
