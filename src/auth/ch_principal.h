/*
 * ch_principal: ssl.principal.mapping.rules, as Kafka's SslPrincipalMapper
 * applies them to a client certificate's subject (RFC 2253 form, e.g.
 * "CN=alice,OU=eng,O=Example,C=US"):
 *
 *   DEFAULT                          the subject as it is
 *   RULE:pattern/replacement/[L|U]   if pattern matches the whole subject,
 *                                    the replacement ($1.. its groups),
 *                                    lower- or upper-cased with L / U
 *
 * comma-separated, the first rule that applies wins; none applies: the
 * connection is refused (Kafka's NoMatchingRule). The principal is
 * "User:" + the name. Patterns are POSIX extended regular expressions
 * (Java's lazy quantifiers and classes like \d are not ERE: README). Pure.
 */
#ifndef CH_PRINCIPAL_H
#define CH_PRINCIPAL_H

#include <stddef.h>

typedef struct ch_principal_rules ch_principal_rules;

/* Parses rules; NULL and why (Kafka's "Invalid rule: ...") on a bad one. */
ch_principal_rules *ch_principal_rules_parse(const char *rules, char *why, size_t whylen);
void ch_principal_rules_free(ch_principal_rules *r);
/* Maps a subject to a name in out (cap bytes). 0, or -1 when no rule applies. */
int ch_principal_map(const ch_principal_rules *r, const char *dn, char *out, size_t cap);

#endif
