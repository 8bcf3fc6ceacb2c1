/*
 * libFuzzer target: the TLS record path of a cohortd listener (net/ch_tls.h)
 * over untrusted bytes. The context is built as cohortd builds it, from the
 * inline PEM keys (ssl.keystore.certificate.chain, ssl.keystore.key,
 * ssl.truststore.certificates) with ssl.client.auth=requested, from a key
 * and self-signed certificate made once at start-up (nothing committed).
 * Each input runs on a socketpair, the server side made by ch_tls_new_ssl:
 *
 *   first byte even  the rest is a client's first flight (ClientHello and
 *                    whatever follows), then EOF: the handshake and any
 *                    reads after it must fail or succeed cleanly
 *   first byte odd   a real TLS client completes the handshake first, then
 *                    the rest goes raw onto the wire after it (records the
 *                    server must decrypt, reject and alert on)
 *
 * After a handshake the principal is read as the server does
 * (ch_tls_principal). Nothing may crash, leak or hang.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "net/ch_tls.h"

static ch_tls_ctx *server_ctx;
static SSL_CTX *client_ctx;

/* PEM text of a BIO's contents, NUL-terminated; the caller frees it. */
static char *
bio_text(BIO *b)
{
	char *p;
	long n = BIO_get_mem_data(b, &p);
	char *s = malloc((size_t)n + 1);
	if (!s)
		abort();
	memcpy(s, p, (size_t)n);
	s[n] = 0;
	BIO_free(b);
	return s;
}

/* An EC P-256 key and a self-signed certificate for CN=fuzz, as PEM. */
static void
make_identity(char **cert_pem, char **key_pem)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	if (!k || !x)
		abort();
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_set_pubkey(x, k);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)"fuzz", -1, -1, 0);
	X509_set_issuer_name(x, n);
	if (!X509_sign(x, k, EVP_sha256()))
		abort();
	BIO *cb = BIO_new(BIO_s_mem()), *kb = BIO_new(BIO_s_mem());
	if (!PEM_write_bio_X509(cb, x) ||
	    !PEM_write_bio_PrivateKey(kb, k, NULL, NULL, 0, NULL, NULL))
		abort();
	*cert_pem = bio_text(cb);
	*key_pem = bio_text(kb);
	X509_free(x);
	EVP_PKEY_free(k);
}

static void
setup(void)
{
	char *cert, *key;
	make_identity(&cert, &key);
	ch_listener_sec ls;
	memset(&ls, 0, sizeof(ls));
	ls.protocol = CH_SEC_SSL;
	ls.ssl_keystore_type = "PEM";
	ls.ssl_keystore_certificate_chain = cert;
	ls.ssl_keystore_key = key;
	ls.ssl_truststore_type = "PEM";
	ls.ssl_truststore_certificates = cert;
	ls.ssl_enabled_protocols = CH_TLS_V1_2 | CH_TLS_V1_3;
	ls.ssl_client_auth = CH_SSL_CLIENT_AUTH_REQUESTED;
	ls.ssl_principal_mapping_rules = "DEFAULT";
	char err[512];
	server_ctx = ch_tls_ctx_new(&ls, "FUZZ", err, sizeof(err));
	free(cert); /* the context has its own copies */
	free(key);
	client_ctx = SSL_CTX_new(TLS_client_method());
	if (!server_ctx || !client_ctx)
		abort();
	SSL_CTX_set_verify(client_ctx, SSL_VERIFY_NONE, NULL);
}

/* Drives the client's and the server's handshakes, both non-blocking, until
 * both are done or one fails; true when both are done. */
static bool
handshake_both(SSL *srv, SSL *cli)
{
	bool sdone = false, cdone = false;
	for (int round = 0; round < 64 && !(sdone && cdone); round++) {
		if (!cdone) {
			int r = SSL_do_handshake(cli);
			int e = SSL_get_error(cli, r);
			if (r == 1)
				cdone = true;
			else if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
				return false;
		}
		if (!sdone) {
			int r = SSL_do_handshake(srv);
			int e = SSL_get_error(srv, r);
			if (r == 1)
				sdone = true;
			else if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
				return false;
		}
	}
	return sdone && cdone;
}

/* The server reads what arrives until an error, EOF or no more bytes. */
static void
server_reads(SSL *srv)
{
	uint8_t buf[4096];
	for (int i = 0; i < 256; i++) {
		int n = SSL_read(srv, buf, sizeof(buf));
		if (n <= 0)
			return;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!server_ctx)
		setup();
	if (size < 1 || size > 60000)
		return 0;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		abort();
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	SSL *srv = ch_tls_new_ssl(server_ctx, sv[0]);
	if (!srv)
		abort();
	bool after_handshake = data[0] & 1;
	SSL *cli = NULL;
	bool up = false;
	if (after_handshake) {
		cli = SSL_new(client_ctx);
		SSL_set_fd(cli, sv[1]);
		SSL_set_connect_state(cli);
		up = handshake_both(srv, cli);
		if (!up)
			abort(); /* a client of our own must always get through */
		char p[1100];
		(void)ch_tls_principal(server_ctx, srv, p, sizeof(p));
	}
	/* The fuzzed bytes, raw on the wire (a socketpair takes them all). */
	size_t off = 1;
	while (off < size) {
		ssize_t n = write(sv[1], data + off, size - off);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			break;
		}
		off += (size_t)n;
	}
	shutdown(sv[1], SHUT_WR);
	if (!after_handshake) {
		for (int i = 0; i < 16; i++) {
			int r = SSL_do_handshake(srv);
			if (r == 1) {
				char p[1100];
				(void)ch_tls_principal(server_ctx, srv, p, sizeof(p));
				up = true;
				break;
			}
			int e = SSL_get_error(srv, r);
			if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
				break;
		}
	}
	if (up)
		server_reads(srv);
	ERR_clear_error();
	SSL_free(srv);
	if (cli)
		SSL_free(cli);
	close(sv[0]);
	close(sv[1]);
	return 0;
}
