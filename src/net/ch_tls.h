/*
 * ch_tls: a TLS listener's context (OpenSSL), built from Kafka's ssl.* keys
 * as one listener resolves them (ch_listener_sec):
 *
 *   ssl.keystore.type=PEM          the only key store cohort reads
 *   ssl.keystore.location          PEM file: the private key and the chain
 *   ssl.keystore.certificate.chain / ssl.keystore.key   the same, inline
 *   ssl.key.password               the key's password (else
 *                                  ssl.keystore.password), when encrypted
 *   ssl.truststore.location / ssl.truststore.certificates   CAs that client
 *                                  certificates are checked against
 *   ssl.enabled.protocols          TLSv1.2, TLSv1.3
 *   ssl.cipher.suites              IANA (Java) or OpenSSL names
 *   ssl.client.auth                none / requested / required
 *   ssl.principal.mapping.rules    subject -> principal (auth/ch_principal.h)
 *
 * The server (ch_server.c) makes one SSL per accepted connection and runs
 * the handshake in the event loop, non-blocking. No renegotiation, no
 * session tickets (nothing to resume: clients keep their connections).
 */
#ifndef CH_TLS_H
#define CH_TLS_H

#include <stddef.h>

#include "config/ch_config.h"
#include "net/ch_tls_pem.h"

typedef struct ch_tls_ctx ch_tls_ctx;
struct ssl_st;

/* The context of a TLS listener; NULL with the reason in err, naming the
 * key ("ssl.keystore.location (listener SSL): /x.pem: No such file ..."). */
ch_tls_ctx *ch_tls_ctx_new(const ch_listener_sec *ls, const char *listener, char *err,
			   size_t errlen);
void ch_tls_ctx_free(ch_tls_ctx *t);

/* A server-side SSL on fd (accept state), or NULL. */
struct ssl_st *ch_tls_new_ssl(ch_tls_ctx *t, int fd);
/* After the handshake: the principal of the peer's certificate into out
 * ("User:" + the mapped subject, "User:ANONYMOUS" without a certificate).
 * -1 when no mapping rule applies (Kafka refuses the connection then). */
int ch_tls_principal(ch_tls_ctx *t, struct ssl_st *ssl, char *out, size_t cap);

#endif
