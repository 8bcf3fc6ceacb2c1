/*
 * ch_acl.c: the names of Kafka's ACL codes (ch_acl.h), shared by the
 * broker's authorizer and libcohort.
 */
#include "proto/ch_acl.h"

#include <ctype.h>
#include <stddef.h>

static const char *const res_names[] = {
	"UNKNOWN",          "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID",
	"DELEGATION_TOKEN", "USER"};
static const char *const pattern_names[] = {"UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"};
static const char *const op_names[] = {"UNKNOWN",
				       "ANY",
				       "ALL",
				       "READ",
				       "WRITE",
				       "CREATE",
				       "DELETE",
				       "ALTER",
				       "DESCRIBE",
				       "CLUSTER_ACTION",
				       "DESCRIBE_CONFIGS",
				       "ALTER_CONFIGS",
				       "IDEMPOTENT_WRITE",
				       "CREATE_TOKENS",
				       "DESCRIBE_TOKENS"};
static const char *const perm_names[] = {"UNKNOWN", "ANY", "DENY", "ALLOW"};

static const char *
name_of(const char *const *names, int max, int code)
{
	return code >= 0 && code <= max ? names[code] : names[0];
}

/* The code of a name (case-insensitive; '-' may stand for '_'), or -1. */
static int
parse_name(const char *const *names, int max, const char *s)
{
	for (int i = 0; i <= max; i++) {
		const char *n = names[i];
		size_t k = 0;
		while (n[k] && s[k] &&
		       (toupper((unsigned char)s[k]) == n[k] || (s[k] == '-' && n[k] == '_')))
			k++;
		if (!n[k] && !s[k])
			return i;
	}
	return -1;
}

const char *
ch_acl_res_name(int code)
{
	return name_of(res_names, CH_RES_MAX, code);
}
const char *
ch_acl_pattern_name(int code)
{
	return name_of(pattern_names, CH_PAT_MAX, code);
}
const char *
ch_acl_op_name(int code)
{
	return name_of(op_names, CH_ACL_OP_MAX, code);
}
const char *
ch_acl_perm_name(int code)
{
	return name_of(perm_names, CH_PERM_MAX, code);
}
int
ch_acl_res_parse(const char *s)
{
	return parse_name(res_names, CH_RES_MAX, s);
}
int
ch_acl_pattern_parse(const char *s)
{
	return parse_name(pattern_names, CH_PAT_MAX, s);
}
int
ch_acl_op_parse(const char *s)
{
	return parse_name(op_names, CH_ACL_OP_MAX, s);
}
int
ch_acl_perm_parse(const char *s)
{
	return parse_name(perm_names, CH_PERM_MAX, s);
}

int8_t
ch_acl_res_code(int8_t v)
{
	return v >= 0 && v <= CH_RES_MAX ? v : CH_RES_UNKNOWN;
}
int8_t
ch_acl_pattern_code(int8_t v)
{
	return v >= 0 && v <= CH_PAT_MAX ? v : CH_PAT_UNKNOWN;
}
int8_t
ch_acl_op_code(int8_t v)
{
	return v >= 0 && v <= CH_ACL_OP_MAX ? v : CH_ACL_UNKNOWN;
}
int8_t
ch_acl_perm_code(int8_t v)
{
	return v >= 0 && v <= CH_PERM_MAX ? v : CH_PERM_UNKNOWN;
}
