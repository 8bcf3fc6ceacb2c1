/*
 * ch_authz: the ACL authorizer, with the semantics of Kafka's
 * StandardAuthorizer (org.apache.kafka.metadata.authorizer), and the
 * durable store of its ACL bindings.
 *
 * A binding: (resource type, resource name, pattern LITERAL or PREFIXED,
 * principal "Type:name" or "User:*", host or "*", operation, ALLOW/DENY).
 * A question: may principal P from host H do operation O on the literal
 * resource (type, name)? Answered as StandardAuthorizerData.authorize:
 *
 *   P in super.users                       -> allowed
 *   the bindings of that resource type whose pattern matches the name
 *   (LITERAL equal, LITERAL "*", PREFIXED a prefix of the name):
 *     none at all                          -> allow.everyone.if.no.acl.found
 *     one for P or User:*, host H or "*", that applies to O:
 *       a DENY                             -> denied (deny wins)
 *       else an ALLOW                      -> allowed
 *     else                                 -> denied
 *
 * "Applies to O": operation ALL, or O itself; for an ALLOW also the
 * implications: DESCRIBE is implied by READ, WRITE, DELETE and ALTER,
 * DESCRIBE_CONFIGS by ALTER_CONFIGS. A DENY of READ does not deny
 * DESCRIBE (Kafka's findResult).
 *
 * The store is DIR/acls, rewritten whole on every change (temporary file,
 * fsync, rename, fsync of the directory), read at startup. One binding a
 * line, fields separated by one space, the three strings in base64:
 *
 *   # cohort ACLs v1
 *   TOPIC LITERAL base64(name) base64(principal) base64(host) READ ALLOW
 *
 * A line that does not parse stops startup. Loop thread only; pure apart
 * from the file.
 */
#ifndef CH_AUTHZ_H
#define CH_AUTHZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/ch_acl.h"

/* One ACL binding (strings owned by whoever made it). */
typedef struct ch_acl {
	int8_t res_type; /* CH_RES_TOPIC .. CH_RES_USER */
	int8_t pattern;  /* CH_PAT_LITERAL or CH_PAT_PREFIXED */
	int8_t op;       /* CH_ACL_ALL .. CH_ACL_DESCRIBE_TOKENS */
	int8_t perm;     /* CH_PERM_DENY or CH_PERM_ALLOW */
	const char *name;
	const char *principal;
	const char *host;
} ch_acl;

/* An AclBindingFilter: codes may be ANY (pattern also MATCH); NULL
 * strings match every value. */
typedef ch_acl ch_acl_filter;

/* Why a binding may not be created (AclControlManager.validateNewAcl and
 * the broker's checks, Kafka's messages), or NULL when it may. */
const char *ch_acl_invalid(const ch_acl *a, char *buf, size_t cap);
/* Why a filter matches nothing it should (AclControlManager.validateFilter:
 * "Unknown patternFilter." / "Unknown entryFilter."), or NULL. */
const char *ch_acl_filter_invalid(const ch_acl_filter *f);
/* Whether filter f matches binding a (ResourcePatternFilter.matches and
 * AccessControlEntryFilter.matches: a MATCH filter with a name matches
 * the LITERAL, "*" and PREFIXED bindings that would apply to that name). */
bool ch_acl_filter_matches(const ch_acl_filter *f, const ch_acl *a);

/* ---- the store ----------------------------------------------------------- */

typedef struct ch_acl_store ch_acl_store;

/* Opens (and reads) dir's store; a missing file is an empty store. NULL
 * and why on a read error or a malformed line. */
ch_acl_store *ch_acl_store_open(const char *dir, char *err, size_t errlen);
void ch_acl_store_close(ch_acl_store *s);
/* Bindings in the order added: i from 0 while it returns non-NULL. */
const ch_acl *ch_acl_store_at(const ch_acl_store *s, size_t i);
size_t ch_acl_store_count(const ch_acl_store *s);
/* Adds bindings (each valid: ch_acl_invalid), durably, in one rewrite;
 * one already there is not added twice (Kafka's answer is still success).
 * 0, or -1 with why (nothing changed then). */
int ch_acl_store_add(ch_acl_store *s, const ch_acl *v, size_t n, char *err, size_t errlen);
/* Removes every binding that filter fs[k] matches, for each k, in one
 * durable rewrite; cb(ud, k, binding) is called for each binding removed
 * by filter k (a binding two filters match is reported under both, as
 * Kafka does) before it is freed. 0, or -1 with why (nothing changed). */
typedef void (*ch_acl_removed_fn)(void *ud, size_t k, const ch_acl *a);
int ch_acl_store_remove(ch_acl_store *s, const ch_acl_filter *fs, size_t n, ch_acl_removed_fn cb,
			void *ud, char *err, size_t errlen);

/* ---- the authorizer ------------------------------------------------------ */

typedef struct ch_authz {
	const ch_acl_store *acls;
	const char *super_users; /* super.users: "User:a;User:b" (NULL: none) */
	bool allow_if_no_acl;    /* allow.everyone.if.no.acl.found */
} ch_authz;

/* Whether principal from host may do op on the literal resource (res_type,
 * name). */
bool ch_authz_allowed(const ch_authz *z, const char *principal, const char *host, int op,
		      int res_type, const char *name);
/* Whether principal from host may do op on some resource of the type
 * (Kafka's Authorizer.authorizeByResourceType: an ALLOW of op or ALL on any
 * pattern that no DENY shadows; super users and the no-ACL default as for
 * one resource). InitProducerId asks it for WRITE on any topic. */
bool ch_authz_allowed_any(const ch_authz *z, const char *principal, const char *host, int op,
			  int res_type);
/* KIP-430's authorized-operations bit field: the operations of the
 * resource type's supported set (proto/ch_acl.h) that are allowed. */
int32_t ch_authz_ops(const ch_authz *z, const char *principal, const char *host, int res_type,
		     const char *name);

#endif
