/*
 * ch_api_util.h: small helpers shared by the api handlers.
 */
#ifndef CH_API_UTIL_H
#define CH_API_UTIL_H

#include <stdint.h>

/* Authorized-operations bit sets (KIP-430) for a broker without an
 * authorizer: every operation the resource type has. Bits are Kafka's
 * AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7,
 * DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11,
 * IDEMPOTENT_WRITE 12. The cluster has no token operations (those belong to
 * users: AclEntry.supportedOperations(CLUSTER), 8096 on Kafka 4.4). */
#define CH_ACL_BIT(op) (1 << (op))
#define CH_TOPIC_AUTHORIZED_OPS                                                           \
	(CH_ACL_BIT(3) | CH_ACL_BIT(4) | CH_ACL_BIT(5) | CH_ACL_BIT(6) | CH_ACL_BIT(7) |    \
	 CH_ACL_BIT(8) | CH_ACL_BIT(10) | CH_ACL_BIT(11))
#define CH_CLUSTER_AUTHORIZED_OPS                                                         \
	(CH_ACL_BIT(5) | CH_ACL_BIT(7) | CH_ACL_BIT(8) | CH_ACL_BIT(9) | CH_ACL_BIT(10) |   \
	 CH_ACL_BIT(11) | CH_ACL_BIT(12))

#endif
