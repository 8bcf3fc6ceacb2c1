/*
 * ch_acl.h: Kafka's ACL operation codes (AclOperation) and the
 * authorized-operations bit sets (KIP-430) a broker without an authorizer
 * answers: every operation the resource type supports. Metadata (topics,
 * cluster), DescribeCluster and DescribeGroups read them from here.
 */
#ifndef CH_ACL_H
#define CH_ACL_H

/* AclOperation codes (org.apache.kafka.common.acl.AclOperation). */
enum {
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

#endif
