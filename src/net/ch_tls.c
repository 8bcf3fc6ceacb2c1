/*
 * ch_tls.c: TLS contexts from Kafka's ssl.* keys. Contracts in ch_tls.h.
 */
#include "net/ch_tls.h"
#include "net/ch_tls_pem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "auth/ch_principal.h"
#include "common/ch_common.h"

struct ch_tls_ctx {
	SSL_CTX *ctx;
	ch_principal_rules *rules;
};

/* The inline chain (leaf first) into the context. 0 or -1. */
static int
use_inline_chain(SSL_CTX *ctx, const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	if (!b)
		return -1;
	X509 *leaf = PEM_read_bio_X509(b, NULL, NULL, NULL);
	int rc = leaf && SSL_CTX_use_certificate(ctx, leaf) == 1 ? 0 : -1;
	X509_free(leaf);
	X509 *ca;
	while (rc == 0 && (ca = PEM_read_bio_X509(b, NULL, NULL, NULL)))
		if (SSL_CTX_add0_chain_cert(ctx, ca) != 1) {
			X509_free(ca);
			rc = -1;
		}
	ERR_clear_error(); /* the end of the PEM stream */
	BIO_free(b);
	return rc;
}

/* The inline trusted certificates into the context's store. 0 or -1. */
static int
use_inline_trust(SSL_CTX *ctx, const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	if (!b)
		return -1;
	X509_STORE *st = SSL_CTX_get_cert_store(ctx);
	STACK_OF(X509_NAME) *names = sk_X509_NAME_new_null();
	X509 *c;
	int n = 0;
	while ((c = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
		X509_STORE_add_cert(st, c);
		X509_NAME *nm = X509_NAME_dup(X509_get_subject_name(c));
		if (nm)
			sk_X509_NAME_push(names, nm);
		X509_free(c);
		n++;
	}
	ERR_clear_error();
	BIO_free(b);
	SSL_CTX_set_client_CA_list(ctx, names);
	return n > 0 ? 0 : -1;
}

/* ssl.cipher.suites into the context: TLS 1.3 suites (TLS_AES_*, TLS_CHACHA20_*) by their own
 * names, the others IANA (as Java writes them) or OpenSSL names. 0, or -1 with the bad one in
 * bad. */
static int
use_ciphers(SSL_CTX *ctx, const char *list, char *bad, size_t badlen)
{
	char *copy = ch_xstrdup(list);
	size_t cap = strlen(list) + 64;
	char *v12 = ch_xcalloc(1, cap), *v13 = ch_xcalloc(1, cap);
	int rc = 0;
	for (char *save = NULL, *t = strtok_r(copy, ", ", &save); t;
	     t = strtok_r(NULL, ", ", &save)) {
		bool is13 = strncmp(t, "TLS_AES_", 8) == 0 || strncmp(t, "TLS_CHACHA20_", 13) == 0;
		const char *name = t;
		if (!is13) {
			const char *o = OPENSSL_cipher_name(t);
			if (o && strcmp(o, "(NONE)") != 0)
				name = o;
		}
		char *dst = is13 ? v13 : v12;
		if (dst[0])
			strcat(dst, ":");
		strcat(dst, name);
	}
	if (v12[0] && SSL_CTX_set_cipher_list(ctx, v12) != 1) {
		snprintf(bad, badlen, "%s", v12);
		rc = -1;
	}
	if (rc == 0 && v13[0] && SSL_CTX_set_ciphersuites(ctx, v13) != 1) {
		snprintf(bad, badlen, "%s", v13);
		rc = -1;
	}
	free(copy);
	free(v12);
	free(v13);
	return rc;
}

ch_tls_ctx *
ch_tls_ctx_new(const ch_listener_sec *ls, const char *listener, char *err, size_t errlen)
{
	char why[256];
	ch_tls_ctx *t = ch_xcalloc(1, sizeof(*t));
	t->ctx = SSL_CTX_new(TLS_server_method());
	if (!t->ctx) {
		snprintf(err, errlen, "listener %s: %s", listener, ch_tls_error(why, sizeof(why)));
		free(t);
		return NULL;
	}
	SSL_CTX *ctx = t->ctx;
	const char *key = NULL;
	int lo = (ls->ssl_enabled_protocols & CH_TLS_V1_2) ? TLS1_2_VERSION : TLS1_3_VERSION;
	int hi = (ls->ssl_enabled_protocols & CH_TLS_V1_3) ? TLS1_3_VERSION : TLS1_2_VERSION;
	SSL_CTX_set_min_proto_version(ctx, lo);
	SSL_CTX_set_max_proto_version(ctx, hi);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
				      SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_num_tickets(ctx, 0);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	const char *pw = ls->ssl_key_password ? ls->ssl_key_password : ls->ssl_keystore_password;
	if (ls->ssl_keystore_location) {
		key = "ssl.keystore.location";
		if (ch_tls_use_keystore(ctx, ls->ssl_keystore_location, ls->ssl_keystore_location,
					pw) != 0)
			goto fail;
	} else {
		key = "ssl.keystore.certificate.chain";
		if (use_inline_chain(ctx, ls->ssl_keystore_certificate_chain) != 0)
			goto fail;
		key = "ssl.keystore.key";
		BIO *b = BIO_new_mem_buf(ls->ssl_keystore_key, -1);
		EVP_PKEY *pk =
			b ? PEM_read_bio_PrivateKey(b, NULL, ch_tls_password_cb, (void *)pw) : NULL;
		BIO_free(b);
		int ok = pk && SSL_CTX_use_PrivateKey(ctx, pk) == 1 &&
			 SSL_CTX_check_private_key(ctx) == 1;
		EVP_PKEY_free(pk);
		if (!ok)
			goto fail;
	}
	if (ls->ssl_truststore_location) {
		key = "ssl.truststore.location";
		if (SSL_CTX_load_verify_locations(ctx, ls->ssl_truststore_location, NULL) != 1)
			goto fail;
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(ls->ssl_truststore_location);
		if (names)
			SSL_CTX_set_client_CA_list(ctx, names);
	} else if (ls->ssl_truststore_certificates) {
		key = "ssl.truststore.certificates";
		if (use_inline_trust(ctx, ls->ssl_truststore_certificates) != 0)
			goto fail;
	}
	if (ls->ssl_cipher_suites) {
		key = "ssl.cipher.suites";
		char bad[256];
		if (use_ciphers(ctx, ls->ssl_cipher_suites, bad, sizeof(bad)) != 0) {
			snprintf(err, errlen,
				 "invalid value '%s' for %s (listener %s): no cipher of '%s'",
				 ls->ssl_cipher_suites, key, listener, bad);
			ch_tls_ctx_free(t);
			return NULL;
		}
	}
	int mode = SSL_VERIFY_NONE;
	if (ls->ssl_client_auth == CH_SSL_CLIENT_AUTH_REQUESTED)
		mode = SSL_VERIFY_PEER;
	else if (ls->ssl_client_auth == CH_SSL_CLIENT_AUTH_REQUIRED)
		mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
	SSL_CTX_set_verify(ctx, mode, NULL);
	static const unsigned char sid[] = "cohortd";
	SSL_CTX_set_session_id_context(ctx, sid, sizeof(sid) - 1);
	t->rules = ch_principal_rules_parse(ls->ssl_principal_mapping_rules, why, sizeof(why));
	if (!t->rules) {
		snprintf(err, errlen,
			 "invalid value '%s' for ssl.principal.mapping.rules (listener %s): %s",
			 ls->ssl_principal_mapping_rules, listener, why);
		ch_tls_ctx_free(t);
		return NULL;
	}
	return t;
fail:
	snprintf(err, errlen, "%s (listener %s): %s", key, listener,
		 ch_tls_error(why, sizeof(why)));
	ch_tls_ctx_free(t);
	return NULL;
}

void
ch_tls_ctx_free(ch_tls_ctx *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	ch_principal_rules_free(t->rules);
	free(t);
}

SSL *
ch_tls_new_ssl(ch_tls_ctx *t, int fd)
{
	SSL *ssl = SSL_new(t->ctx);
	if (!ssl)
		return NULL;
	if (SSL_set_fd(ssl, fd) != 1) {
		SSL_free(ssl);
		return NULL;
	}
	SSL_set_accept_state(ssl);
	return ssl;
}

int
ch_tls_principal(ch_tls_ctx *t, SSL *ssl, char *out, size_t cap)
{
	X509 *cert = SSL_get0_peer_certificate(ssl);
	if (!cert) {
		snprintf(out, cap, "User:ANONYMOUS");
		return 0;
	}
	/* RFC 2253, most specific first: what Java's X500Principal.getName() gives. */
	BIO *b = BIO_new(BIO_s_mem());
	if (!b)
		return -1;
	X509_NAME_print_ex(b, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
	char dn[1024];
	int n = BIO_read(b, dn, sizeof(dn) - 1);
	BIO_free(b);
	dn[n > 0 ? n : 0] = '\0';
	char name[1024];
	if (ch_principal_map(t->rules, dn, name, sizeof(name)) != 0) {
		snprintf(out, cap, "%s", dn); /* for the caller's log */
		return -1;
	}
	snprintf(out, cap, "User:%s", name);
	return 0;
}
