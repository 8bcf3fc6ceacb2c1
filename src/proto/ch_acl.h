/*
 * ch_acl.h: Kafka's ACL wire codes (AclOperation, ResourceType,
 * PatternType, AclPermissionType) and the authorized-operations bit sets
 * (KIP-430) of every operation a resource type supports
 * (AclEntry.supportedOperations): what a broker without an authorizer
 * answers, and the operations the authorizer (auth/ch_authz.h) asks about.
 */
#ifndef CH_ACL_H
#define CH_ACL_H

#include <stdint.h>

/* AclOperation codes (org.apache.kafka.common.acl.AclOperation). */
enum {
	CH_ACL_UNKNOWN = 0,
	CH_ACL_ANY = 1,
	CH_ACL_ALL = 2,
	CH_ACL_READ = 3,
	CH_ACL_WRITE = 4,
	CH_ACL_CREATE = 5,
	CH_ACL_DELETE = 6,
	CH_ACL_ALTER = 7,
	CH_ACL_DESCRIBE = 8,
	CH_ACL_CLUSTER_ACTION = 9,
	CH_ACL_DESCRIBE_CONFIGS = 10,
	CH_ACL_ALTER_CONFIGS = 11,
	CH_ACL_IDEMPOTENT_WRITE = 12,
	CH_ACL_CREATE_TOKENS = 13,
	CH_ACL_DESCRIBE_TOKENS = 14,
	CH_ACL_OP_MAX = 14,
};

/* ResourceType codes (org.apache.kafka.common.resource.ResourceType). */
enum {
	CH_RES_UNKNOWN = 0,
	CH_RES_ANY = 1,
	CH_RES_TOPIC = 2,
	CH_RES_GROUP = 3,
	CH_RES_CLUSTER = 4,
	CH_RES_TRANSACTIONAL_ID = 5,
	CH_RES_DELEGATION_TOKEN = 6,
	CH_RES_USER = 7,
	CH_RES_MAX = 7,
};

/* The one CLUSTER resource's name (Kafka's Resource.CLUSTER_NAME). */
#define CH_CLUSTER_NAME "kafka-cluster"

/* PatternType codes (org.apache.kafka.common.resource.PatternType). */
enum {
	CH_PAT_UNKNOWN = 0,
	CH_PAT_ANY = 1,
	CH_PAT_MATCH = 2,
	CH_PAT_LITERAL = 3,
	CH_PAT_PREFIXED = 4,
	CH_PAT_MAX = 4,
};

/* AclPermissionType codes. */
enum {
	CH_PERM_UNKNOWN = 0,
	CH_PERM_ANY = 1,
	CH_PERM_DENY = 2,
	CH_PERM_ALLOW = 3,
	CH_PERM_MAX = 3,
};

/* An operation's bit in an AuthorizedOperations field. */
#define CH_ACL_BIT(op) (1 << (op))

/* A topic: everything but cluster and token operations. */
#define CH_TOPIC_AUTHORIZED_OPS                                                                    \
	(CH_ACL_BIT(CH_ACL_READ) | CH_ACL_BIT(CH_ACL_WRITE) | CH_ACL_BIT(CH_ACL_CREATE) |          \
	 CH_ACL_BIT(CH_ACL_DELETE) | CH_ACL_BIT(CH_ACL_ALTER) | CH_ACL_BIT(CH_ACL_DESCRIBE) |      \
	 CH_ACL_BIT(CH_ACL_DESCRIBE_CONFIGS) | CH_ACL_BIT(CH_ACL_ALTER_CONFIGS))

/* The cluster, without token operations (those belong to users:
 * AclEntry.supportedOperations(CLUSTER), 8096 on Kafka 4.4). */
#define CH_CLUSTER_AUTHORIZED_OPS                                                                  \
	(CH_ACL_BIT(CH_ACL_CREATE) | CH_ACL_BIT(CH_ACL_ALTER) | CH_ACL_BIT(CH_ACL_DESCRIBE) |      \
	 CH_ACL_BIT(CH_ACL_CLUSTER_ACTION) | CH_ACL_BIT(CH_ACL_DESCRIBE_CONFIGS) |                 \
	 CH_ACL_BIT(CH_ACL_ALTER_CONFIGS) | CH_ACL_BIT(CH_ACL_IDEMPOTENT_WRITE))

/* A group (Kafka 4 has group configs, KIP-848, hence the config
 * operations). */
#define CH_GROUP_AUTHORIZED_OPS                                                                    \
	(CH_ACL_BIT(CH_ACL_READ) | CH_ACL_BIT(CH_ACL_DELETE) | CH_ACL_BIT(CH_ACL_DESCRIBE) |       \
	 CH_ACL_BIT(CH_ACL_DESCRIBE_CONFIGS) | CH_ACL_BIT(CH_ACL_ALTER_CONFIGS))

/* Kafka's names of the codes ("TOPIC", "PREFIXED", "READ", "ALLOW";
 * "UNKNOWN" for anything else) and back (case-insensitive, as
 * kafka-acls; -1 for an unknown name). */
const char *ch_acl_res_name(int code);
const char *ch_acl_pattern_name(int code);
const char *ch_acl_op_name(int code);
const char *ch_acl_perm_name(int code);
int ch_acl_res_parse(const char *s);
int ch_acl_pattern_parse(const char *s);
int ch_acl_op_parse(const char *s);
int ch_acl_perm_parse(const char *s);

/* Kafka's code for a wire value it does not know: UNKNOWN (fromCode). */
int8_t ch_acl_res_code(int8_t v);
int8_t ch_acl_pattern_code(int8_t v);
int8_t ch_acl_op_code(int8_t v);
int8_t ch_acl_perm_code(int8_t v);

/* The transactional id, delegation tokens and users (AclEntry.supportedOperations). */
#define CH_TXN_ID_AUTHORIZED_OPS (CH_ACL_BIT(CH_ACL_DESCRIBE) | CH_ACL_BIT(CH_ACL_WRITE))
#define CH_TOKEN_AUTHORIZED_OPS CH_ACL_BIT(CH_ACL_DESCRIBE)
#define CH_USER_AUTHORIZED_OPS                                                                     \
	(CH_ACL_BIT(CH_ACL_CREATE_TOKENS) | CH_ACL_BIT(CH_ACL_DESCRIBE_TOKENS))

#endif
