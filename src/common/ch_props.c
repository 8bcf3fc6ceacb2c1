/*
 * ch_props.c: Java properties files (java.util.Properties.load) read the way
 * Java reads them: comments (# !), key/value split at '=', ':' or blanks,
 * continuation lines, escapes, \\uXXXX to UTF-8. Used for server.properties
 * (config/) and the client properties of the cohort CLI (--command-config).
 */
#include "common/ch_props.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ch_common.h"

/* Writes code point cp (<= 0x10FFFF) as 1-4 UTF-8 bytes at out + *o, advancing *o; the caller
 * has the room. */
static void
utf8_put(char *out, size_t *o, unsigned cp)
{
	if (cp < 0x80) {
		out[(*o)++] = (char)cp;
	} else if (cp < 0x800) {
		out[(*o)++] = (char)(0xc0 | (cp >> 6));
		out[(*o)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		out[(*o)++] = (char)(0xe0 | (cp >> 12));
		out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[(*o)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		out[(*o)++] = (char)(0xf0 | (cp >> 18));
		out[(*o)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[(*o)++] = (char)(0x80 | (cp & 0x3f));
	}
}

/* The code unit of the \uXXXX escape at s[i] ('\\' at i), or -1 when
 * [i, n) holds no such escape. */
static long
escape_unit(const char *s, size_t n, size_t i)
{
	if (i + 6 > n)
		return -1;
	if (s[i] != '\\' || s[i + 1] != 'u')
		return -1;
	long u = 0;
	for (size_t k = 2; k < 6; k++) {
		char h = s[i + k];
		int d = h >= '0' && h <= '9'   ? h - '0'
			: h >= 'a' && h <= 'f' ? h - 'a' + 10
			: h >= 'A' && h <= 'F' ? h - 'A' + 10
					       : -1;
		if (d < 0)
			return -1;
		u = u << 4 | d;
	}
	return u;
}

#define UNESCAPE_MALFORMED (-1) /* a \u not followed by four hex digits */
#define UNESCAPE_NUL (-2)       /* \u0000: no C string can hold it */

/* Java properties escapes in [s, s+n) into a new string, UTF-8 as Java
 * writes its strings: a surrogate pair is one 4-byte character, a lone
 * surrogate '?' (String.getBytes). 0, UNESCAPE_MALFORMED or UNESCAPE_NUL.
 * An escaped char never needs more room than its escape. */
static int
unescape(const char *s, size_t n, char **out)
{
	char *r = ch_xmalloc(n + 1);
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '\\' || i + 1 >= n) {
			if (s[i] != '\\')
				r[o++] = s[i];
			continue;
		}
		char c = s[i + 1];
		switch (c) {
		case 't':
			r[o++] = '\t';
			break;
		case 'n':
			r[o++] = '\n';
			break;
		case 'r':
			r[o++] = '\r';
			break;
		case 'f':
			r[o++] = '\f';
			break;
		case 'u': {
			long u = escape_unit(s, n, i);
			if (u < 0 || u == 0) {
				free(r);
				return u < 0 ? UNESCAPE_MALFORMED : UNESCAPE_NUL;
			}
			i += 4;
			long lo = u >= 0xd800 && u < 0xdc00 ? escape_unit(s, n, i + 2) : -1;
			if (lo >= 0xdc00 && lo < 0xe000) {
				utf8_put(r, &o,
					 0x10000 + (((unsigned)u - 0xd800) << 10) +
						 ((unsigned)lo - 0xdc00));
				i += 6;
			} else if (u >= 0xd800 && u < 0xe000) {
				r[o++] = '?';
			} else {
				utf8_put(r, &o, (unsigned)u);
			}
			break;
		}
		default:
			r[o++] = c;
			break;
		}
		i++;
	}
	r[o] = '\0';
	*out = r;
	return 0;
}

static bool
hspace(int c)
{
	return c == ' ' || c == '\t' || c == '\f';
}

/* One logical line from [*pos, len): continuation joined, escapes kept.
 * Returns the line (caller frees) and advances *lineno over natural lines. */
static char *
logical_line(const char *buf, size_t len, size_t *pos, int *lineno)
{
	size_t p = *pos, cap = 128, o = 0;
	char *out = ch_xmalloc(cap);
	while (p < len && buf[p] != '\n' && buf[p] != '\r') {
		if (o + 3 > cap)
			out = ch_xrealloc(out, cap *= 2);
		if (buf[p] == '\\') {
			if (p + 1 >= len) {
				p++; /* Java drops a trailing backslash at EOF */
				break;
			}
			if (buf[p + 1] == '\n' || buf[p + 1] == '\r') {
				p++;
				if (buf[p] == '\r' && p + 1 < len && buf[p + 1] == '\n')
					p++;
				p++;
				(*lineno)++;
				while (p < len && hspace((unsigned char)buf[p]))
					p++;
				continue;
			}
			out[o++] = buf[p++];
			out[o++] = buf[p++];
			continue;
		}
		out[o++] = buf[p++];
	}
	if (p < len && buf[p] == '\r' && p + 1 < len && buf[p + 1] == '\n')
		p++;
	if (p < len)
		p++;
	out[o] = '\0';
	*pos = p;
	return out;
}

/* Splits one logical properties line into key and value as Java's Properties does ('=', ':' or
 * blanks), unescapes both and hands them to fn; where is FILE:LINE. */
static int
apply_line(const char *line, const char *where, ch_props_fn fn, void *ud, char *err, size_t errlen)
{
	size_t n = strlen(line), k = 0;
	while (k < n && !(line[k] == '=' || line[k] == ':' || hspace((unsigned char)line[k])))
		k += line[k] == '\\' && k + 1 < n ? 2 : 1;
	size_t v = k;
	while (v < n && hspace((unsigned char)line[v]))
		v++;
	if (v < n && (line[v] == '=' || line[v] == ':'))
		v++;
	while (v < n && hspace((unsigned char)line[v]))
		v++;
	char *key, *val;
	int ur = unescape(line, k, &key);
	if (ur != 0) {
		ch_errf(err, errlen, "%s (%s)",
			ur == UNESCAPE_NUL ? "\\u0000 (NUL) is not allowed in a key"
					   : "malformed \\uXXXX escape",
			where);
		return CH_ERR;
	}
	if ((ur = unescape(line + v, n - v, &val)) != 0) {
		ch_errf(err, errlen, "%s in the value of '%s' (%s)",
			ur == UNESCAPE_NUL ? "\\u0000 (NUL) is not allowed"
					   : "malformed \\uXXXX escape",
			key, where);
		free(key);
		return CH_ERR;
	}
	int rc = fn(ud, key, val, where, err, errlen);
	free(key);
	free(val);
	return rc;
}

#define CH_PROPS_FILE_MAX (16u << 20)

int
ch_props_load_file(const char *path, ch_props_fn fn, void *ud, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		ch_errf(err, errlen, "cannot open config file %s: %s", path, strerror(errno));
		return CH_ERR;
	}
	size_t cap = 4096, len = 0;
	char *buf = ch_xmalloc(cap);
	for (;;) {
		if (len == cap)
			buf = ch_xrealloc(buf, cap *= 2);
		size_t r = fread(buf + len, 1, cap - len, f);
		len += r;
		if (r == 0)
			break;
		if (len > CH_PROPS_FILE_MAX)
			break;
	}
	int rderr = ferror(f);
	fclose(f);
	if (rderr || len > CH_PROPS_FILE_MAX) {
		ch_errf(err, errlen, "cannot read config file %s: %s", path,
			rderr ? "read error" : "larger than 16 MiB");
		free(buf);
		return CH_ERR;
	}
	size_t pos = 0;
	int lineno = 1, rc = CH_OK;
	while (pos < len && rc == CH_OK) {
		int start = lineno;
		while (pos < len && hspace((unsigned char)buf[pos]))
			pos++;
		if (pos >= len)
			break;
		if (buf[pos] == '\n' || buf[pos] == '\r') {
			if (buf[pos] == '\r' && pos + 1 < len && buf[pos + 1] == '\n')
				pos++;
			pos++;
			lineno++;
			continue;
		}
		if (buf[pos] == '#' || buf[pos] == '!') {
			while (pos < len && buf[pos] != '\n' && buf[pos] != '\r')
				pos++;
			continue;
		}
		char *line = logical_line(buf, len, &pos, &lineno);
		lineno++;
		char where[300];
		snprintf(where, sizeof(where), "%s:%d", path, start);
		rc = apply_line(line, where, fn, ud, err, errlen);
		free(line);
	}
	free(buf);
	return rc;
}
