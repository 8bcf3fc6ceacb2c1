/*
 * ch_tls_pem.c: PEM key stores into OpenSSL contexts. Contracts in
 * ch_tls_pem.h.
 */
#include "net/ch_tls_pem.h"

#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

const char *
ch_tls_error(char *buf, size_t cap)
{
	unsigned long e = ERR_get_error();
	if (!e) {
		snprintf(buf, cap, "unknown TLS error");
	} else {
		ERR_error_string_n(e, buf, cap);
	}
	ERR_clear_error();
	return buf;
}

int
ch_tls_password_cb(char *buf, int size, int rwflag, void *ud)
{
	(void)rwflag;
	const char *pw = ud;
	if (!pw)
		return 0;
	size_t n = strlen(pw);
	if (n > (size_t)size)
		n = (size_t)size;
	memcpy(buf, pw, n);
	return (int)n;
}

int
ch_tls_use_keystore(SSL_CTX *ctx, const char *cert_file, const char *key_file, const char *password)
{
	SSL_CTX_set_default_passwd_cb(ctx, ch_tls_password_cb);
	SSL_CTX_set_default_passwd_cb_userdata(ctx, (void *)password);
	int ok = SSL_CTX_use_certificate_chain_file(ctx, cert_file) == 1 &&
		 SSL_CTX_use_PrivateKey_file(ctx, key_file, SSL_FILETYPE_PEM) == 1 &&
		 SSL_CTX_check_private_key(ctx) == 1;
	SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL);
	return ok ? 0 : -1;
}
