/*
 * ch_principal.c: ssl.principal.mapping.rules. Contract in ch_principal.h.
 */
#include "auth/ch_principal.h"

#include <ctype.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"

typedef struct rule {
	bool is_default;
	regex_t re;
	size_t ngroups;
	char *replacement;
	char casing; /* 0, 'L' or 'U' */
} rule;

struct ch_principal_rules {
	rule *v;
	size_t n;
};

void
ch_principal_rules_free(ch_principal_rules *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		if (!r->v[i].is_default)
			regfree(&r->v[i].re);
		free(r->v[i].replacement);
	}
	free(r->v);
	free(r);
}

/* Reads a '/'-terminated part of a RULE from *p ('\' escapes the next char, kept as written,
 * as Kafka's splitter keeps it); malloc'd, or NULL if there is no closing '/'. */
static char *
rule_part(const char **p)
{
	const char *s = *p;
	size_t n = 0;
	while (s[n] && s[n] != '/') {
		if (s[n] == '\\' && s[n + 1])
			n++;
		n++;
	}
	if (s[n] != '/')
		return NULL;
	char *out = ch_xmalloc(n + 1);
	memcpy(out, s, n);
	out[n] = '\0';
	*p = s + n + 1;
	return out;
}

ch_principal_rules *
ch_principal_rules_parse(const char *rules, char *why, size_t whylen)
{
	ch_principal_rules *r = ch_xcalloc(1, sizeof(*r));
	const char *p = rules;
	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		rule ru = {0};
		const char *start = p;
		if (strncmp(p, "DEFAULT", 7) == 0) {
			ru.is_default = true;
			p += 7;
		} else if (strncmp(p, "RULE:", 5) == 0) {
			p += 5;
			char *pat = rule_part(&p);
			char *rep = pat ? rule_part(&p) : NULL;
			if (!rep) {
				snprintf(why, whylen, "Invalid rule: %s", start);
				free(pat);
				ch_principal_rules_free(r);
				return NULL;
			}
			int rc = regcomp(&ru.re, pat, REG_EXTENDED);
			if (rc != 0) {
				char e[128];
				regerror(rc, &ru.re, e, sizeof(e));
				snprintf(why, whylen, "Invalid rule: %s (pattern '%s': %s)", start,
					 pat, e);
				free(pat);
				free(rep);
				ch_principal_rules_free(r);
				return NULL;
			}
			free(pat);
			ru.ngroups = ru.re.re_nsub;
			ru.replacement = rep;
			if (*p == 'L' || *p == 'U')
				ru.casing = *p++;
		} else {
			snprintf(why, whylen, "Invalid rule: %s", start);
			ch_principal_rules_free(r);
			return NULL;
		}
		while (isspace((unsigned char)*p))
			p++;
		if (*p && *p != ',') {
			snprintf(why, whylen, "Invalid rule: `%s`, unmatched substring: `%s`",
				 start, p);
			if (!ru.is_default) {
				regfree(&ru.re);
				free(ru.replacement);
			}
			ch_principal_rules_free(r);
			return NULL;
		}
		if (*p == ',')
			p++;
		r->v = ch_xrealloc(r->v, (r->n + 1) * sizeof(*r->v));
		r->v[r->n++] = ru;
	}
	return r;
}

/* Appends c to out[*o] if room (one byte kept for the NUL). */
static void
put(char *out, size_t cap, size_t *o, char c)
{
	if (*o + 1 < cap)
		out[(*o)++] = c;
}

int
ch_principal_map(const ch_principal_rules *r, const char *dn, char *out, size_t cap)
{
	size_t len = strlen(dn);
	for (size_t i = 0; i < r->n; i++) {
		const rule *ru = &r->v[i];
		if (ru->is_default) {
			snprintf(out, cap, "%s", dn);
			return 0;
		}
		regmatch_t m[10];
		if (regexec(&ru->re, dn, 10, m, 0) != 0 || m[0].rm_so != 0 ||
		    (size_t)m[0].rm_eo != len)
			continue; /* Kafka: the pattern must match the whole subject */
		size_t o = 0;
		for (const char *s = ru->replacement; *s; s++) {
			if (*s == '\\' && s[1]) {
				put(out, cap, &o, *++s);
			} else if (*s == '$' && s[1] >= '1' && s[1] <= '9' &&
				   (size_t)(s[1] - '0') <= ru->ngroups && (s[1] - '0') < 10) {
				int g = *++s - '0';
				for (regoff_t k = m[g].rm_so; k >= 0 && k < m[g].rm_eo; k++)
					put(out, cap, &o, dn[k]);
			} else {
				put(out, cap, &o, *s);
			}
		}
		out[o] = '\0';
		for (size_t k = 0; k < o && ru->casing; k++)
			out[k] = (char)(ru->casing == 'L' ? tolower((unsigned char)out[k])
							  : toupper((unsigned char)out[k]));
		return 0;
	}
	return -1;
}
