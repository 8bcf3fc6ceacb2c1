/*
 * cli_json.c: the documented --json of every command (`cohort help json`).
 *
 * One source: cli_json.json, a JSON Schema per command and view, compiled
 * into the tool (tools/cmake/embed.cmake). `cohort help json` renders it
 * for people, `--markdown` for docs/cli-json.md (a test compares the two),
 * `--schema` prints it for scripts and for the test that validates every
 * command's --json output against it (test_cli_json.py), and the man page
 * has the same field lists: what a command prints and what is written down
 * cannot drift apart unnoticed.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

extern const unsigned char cli_json_schemas[];
extern const size_t cli_json_schemas_len;

/* The parsed document (loaded once; NULL when it does not parse, which
 * the build's own test would have caught). */
static json_t *
doc(void)
{
	static json_t *d;
	if (!d)
		d = json_loadb((const char *)cli_json_schemas, cli_json_schemas_len, 0, NULL);
	return d;
}

void
cli_json_print_schemas(FILE *f)
{
	fwrite(cli_json_schemas, 1, cli_json_schemas_len, f);
}

/* The schema a local "$ref" (#/$defs/NAME) of entry points to. */
static json_t *
resolve(json_t *root, json_t *s)
{
	const char *ref = json_string_value(json_object_get(s, "$ref"));
	if (!ref || strncmp(ref, "#/$defs/", 8) != 0)
		return s;
	json_t *t = json_object_get(json_object_get(root, "$defs"), ref + 8);
	return t ? t : s;
}

/* "integer|null", "array of object", "OK|WARN|..." for a schema. */
static void
type_text(json_t *root, json_t *s, char *out, size_t cap)
{
	s = resolve(root, s);
	json_t *t = json_object_get(s, "type"), *en = json_object_get(s, "enum");
	size_t o = 0, i;
	json_t *v;
	out[0] = '\0';
	if (en) {
		json_array_foreach(en, i, v) o += (size_t)snprintf(
			out + o, o < cap ? cap - o : 0, "%s%s", i ? "|" : "", json_string_value(v));
		return;
	}
	if (json_is_string(t)) {
		snprintf(out, cap, "%s", json_string_value(t));
	} else {
		json_array_foreach(t, i, v) o += (size_t)snprintf(
			out + o, o < cap ? cap - o : 0, "%s%s", i ? "|" : "", json_string_value(v));
	}
	json_t *items = json_object_get(s, "items");
	if (items && strncmp(out, "array", 5) == 0) {
		char it[64];
		type_text(root, items, it, sizeof(it));
		snprintf(out, cap, "array of %s", it);
	}
	if (json_object_get(s, "additionalProperties") &&
	    json_is_object(json_object_get(s, "additionalProperties")))
		snprintf(out, cap, "object of string");
}

/* How one line of the field list is written (text, markdown or roff). */
typedef enum {
	OUT_TEXT,
	OUT_MD,
	OUT_MAN
} out_kind;

static void
field_line(FILE *f, out_kind k, const char *path, const char *type, const char *desc)
{
	switch (k) {
	case OUT_TEXT:
		fprintf(f, "  %-36s %-16s %s\n", path, type, desc);
		break;
	case OUT_MD:
		fprintf(f, "| `%s` | ", path);
		for (const char *c = type; *c; c++) /* a bare | would end the cell */
			fputs(*c == '|' ? "\\|" : (char[2]){*c, 0}, f);
		fprintf(f, " | %s |\n", desc);
		break;
	case OUT_MAN: {
		char line[1024];
		snprintf(line, sizeof(line), "%s (%s)", path, type);
		fputs(".TP\n", f);
		cli_roff(f, line);
		cli_roff(f, *desc ? desc : "-");
		break;
	}
	}
}

/* Every field of schema s under path prefix, depth first. */
static void
fields(FILE *f, out_kind k, json_t *root, json_t *s, const char *prefix, int depth)
{
	s = resolve(root, s);
	if (depth > 8)
		return;
	json_t *items = json_object_get(s, "items");
	if (items) {
		char p[256];
		snprintf(p, sizeof(p), "%s[]", prefix);
		fields(f, k, root, items, p, depth + 1);
		return;
	}
	const char *key;
	json_t *ps;
	json_object_foreach(json_object_get(s, "properties"), key, ps)
	{
		char p[256], type[128];
		snprintf(p, sizeof(p), "%s%s%s", prefix, *prefix ? "." : "", key);
		type_text(root, ps, type, sizeof(type));
		const char *d = json_string_value(json_object_get(ps, "description"));
		if (!d)
			d = json_string_value(json_object_get(resolve(root, ps), "description"));
		field_line(f, k, p, type, d ? d : "");
		fields(f, k, root, ps, p, depth + 1);
	}
}

/* The whole document in one of the three forms. */
static void
render(FILE *f, out_kind k)
{
	json_t *d = doc();
	const char *words;
	json_t *e;
	json_object_foreach(json_object_get(d, "commands"), words, e)
	{
		const char *out = json_string_value(json_object_get(e, "output"));
		const char *how = out && strcmp(out, "lines") == 0 ? "One JSON value a line"
								   : "One JSON value";
		json_t *s = json_object_get(e, "schema");
		const char *views = json_string_value(json_object_get(e, "views_of"));
		const char *desc = json_string_value(json_object_get(s ? s : e, "description"));
		char type[128] = "";
		if (s)
			type_text(s, s, type, sizeof(type));
		switch (k) {
		case OUT_TEXT:
			fprintf(f, "\ncohort %s --json: %s%s%s\n", words, how, *type ? ", " : "",
				type);
			if (desc)
				fprintf(f, "  %s\n", desc);
			break;
		case OUT_MD:
			fprintf(f, "\n### `cohort %s --json`\n\n%s%s%s.%s%s\n", words, how,
				*type ? ": " : "", type, desc ? " " : "", desc ? desc : "");
			if (s)
				fprintf(f, "\n| field | type | meaning |\n|---|---|---|\n");
			break;
		case OUT_MAN: {
			char line[1024];
			fprintf(f, ".SS \"cohort %s \\-\\-json\"\n", words);
			snprintf(line, sizeof(line), "%s%s%s.%s%s", how, *type ? ": " : "", type,
				 desc ? " " : "", desc ? desc : "");
			cli_roff(f, line);
			break;
		}
		}
		if (views) {
			char line[256];
			snprintf(line, sizeof(line),
				 "The fields are those of cohort %s --json in the view given.",
				 views);
			if (k == OUT_MAN)
				cli_roff(f, line);
			else if (k == OUT_MD)
				fprintf(f, "\n%s\n", line);
		}
		if (s)
			fields(f, k, s, s, "", 0);
	}
	const char *words2;
	json_t *why;
	if (k == OUT_MD)
		fprintf(f, "\n### Commands without JSON\n\n");
	else if (k == OUT_TEXT)
		fprintf(f, "\nWithout JSON:\n");
	json_object_foreach(json_object_get(d, "no_json"), words2, why)
	{
		if (k == OUT_MD)
			fprintf(f, "- `cohort %s`: %s\n", words2, json_string_value(why));
		else if (k == OUT_TEXT)
			fprintf(f, "  cohort %s: %s\n", words2, json_string_value(why));
	}
}

static const char intro[] =
	"Every command takes --json. Its output is stable: fields are added, never renamed "
	"or removed, and each is documented here (from the JSON Schema compiled into "
	"cohort: `cohort help json --schema` prints it). Errors still go to stderr as one "
	"line, with the exit status of cohort help exit-status; a command that fails may "
	"print nothing on stdout. Offsets and times are integers (times in ms since the "
	"epoch), null where there is none; error names are Kafka's (NONE for success).";

void
cli_json_help(FILE *f, bool markdown)
{
	if (markdown) {
		fprintf(f,
			"# cohort --json\n\n<!-- generated by `cohort help json --markdown` "
			"from src/cli/cli_json.json: edit that, then regenerate -->\n\n%s\n",
			intro);
		render(f, OUT_MD);
		return;
	}
	cli_print_topic(f, &(cli_topic){"json", "", intro, NULL});
	render(f, OUT_TEXT);
}

void
cli_json_man(FILE *f)
{
	fputs(".SH \"JSON OUTPUT\"\n", f);
	cli_roff(f, intro);
	render(f, OUT_MAN);
}
