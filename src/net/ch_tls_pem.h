/*
 * ch_tls_pem: loading PEM stores into an OpenSSL context, the part a TLS
 * listener (ch_tls.c) and libcohort's connections (client/cl_tls.c) share.
 * Pure OpenSSL: no allocation of ours, nothing that aborts (libcohort
 * compiles this file in).
 */
#ifndef CH_TLS_PEM_H
#define CH_TLS_PEM_H

#include <stddef.h>

struct ssl_ctx_st;

/* The certificate chain (leaf first) of cert_file and the private key of
 * key_file (the same file for Kafka's ssl.keystore.location), decrypted
 * with password when it is encrypted (NULL: none), into ctx; the key is
 * checked against the certificate. 0, or -1 with OpenSSL's reason queued
 * (ch_tls_error). */
int ch_tls_use_keystore(struct ssl_ctx_st *ctx, const char *cert_file, const char *key_file,
			const char *password);
/* OpenSSL's PEM password callback; ud is the password (NUL-terminated) or NULL. */
int ch_tls_password_cb(char *buf, int size, int rwflag, void *ud);
/* The last OpenSSL error of this thread as text (for logs), and clear the queue. */
const char *ch_tls_error(char *buf, size_t cap);

#endif
