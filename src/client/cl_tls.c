/*
 * cl_tls.c: TLS on libcohort's broker connections (security.protocol SSL
 * and SASL_SSL), with OpenSSL.
 *
 * One SSL_CTX per client, built by cl_tls_ctx_new from Kafka's keys (Java's
 * names; librdkafka's as aliases, see cl_conf.c):
 *
 *   ssl.truststore.location (ssl.ca.location)  PEM CAs the broker's chain is
 *                      checked against; unset: OpenSSL's default paths (Java
 *                      uses the JVM's cacerts then)
 *   ssl.keystore.location + ssl.key.password   PEM file with the client's key
 *                      and certificate chain (ssl.keystore.type=PEM), or
 *   ssl.certificate.location + ssl.key.location (librdkafka's two files)
 *   ssl.endpoint.identification.algorithm      "https" (default): the
 *                      broker's certificate must name the host (DNS SAN, or
 *                      the IP SAN for a numeric address); "": not checked
 *   ssl.enabled.protocols                      TLSv1.2, TLSv1.3
 *
 * The broker's chain is always verified (Java has no switch for that
 * either). A connection runs the handshake on the I/O loop after TCP
 * connect, non-blocking, before ApiVersions (cl_conn.c); reads and writes
 * then go through SSL_read / SSL_write. No renegotiation; session tickets
 * the broker sends are read and dropped (nothing is resumed).
 */
#include "client/cl_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "net/ch_tls_pem.h"

/* Whether s is a numeric IPv4 or IPv6 address (then it is checked against the IP SANs and
 * sent without SNI, which takes host names only). */
static bool
is_ip(const char *s)
{
	unsigned char buf[16];
	return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

bool
cl_tls_ctx_new(cl_client *c, char *errstr, size_t esz)
{
	const cohort_conf *cf = &c->conf;
	char why[256];
	const char *const *sec = (const char *const *)cf->sec;
	if (sec[CL_SEC_TRUSTSTORE_LOCATION] &&
	    strcasecmp(sec[CL_SEC_TRUSTSTORE_TYPE], "PEM") != 0 &&
	    cl_conf_user_set(cf, "ssl.truststore.location")) {
		cl_errstr(errstr, esz,
			  "ssl.truststore.type %s: libcohort reads PEM trust stores only (set "
			  "ssl.truststore.type=PEM, or use ssl.ca.location)",
			  sec[CL_SEC_TRUSTSTORE_TYPE]);
		return false;
	}
	if (sec[CL_SEC_KEYSTORE_LOCATION] && strcasecmp(sec[CL_SEC_KEYSTORE_TYPE], "PEM") != 0) {
		cl_errstr(errstr, esz,
			  "ssl.keystore.type %s: libcohort reads PEM key stores only (set "
			  "ssl.keystore.type=PEM)",
			  sec[CL_SEC_KEYSTORE_TYPE]);
		return false;
	}
	if (!!sec[CL_SEC_CERT_LOCATION] != !!sec[CL_SEC_KEY_LOCATION]) {
		cl_errstr(errstr, esz, "ssl.certificate.location and ssl.key.location go together");
		return false;
	}
	if (sec[CL_SEC_KEYSTORE_LOCATION] && sec[CL_SEC_CERT_LOCATION]) {
		cl_errstr(
			errstr, esz,
			"ssl.keystore.location and ssl.certificate.location both set: choose one");
		return false;
	}
	const char *eia = sec[CL_SEC_ENDPOINT_ID];
	if (eia[0] && strcasecmp(eia, "https") != 0) {
		cl_errstr(
			errstr, esz,
			"Invalid value %s for configuration ssl.endpoint.identification.algorithm: "
			"expected https or an empty string",
			eia);
		return false;
	}
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx) {
		cl_errstr(errstr, esz, "TLS: %s", ch_tls_error(why, sizeof(why)));
		return false;
	}
	SSL_CTX_set_min_proto_version(ctx, (cf->ssl_protocols & CL_TLS_V1_2) ? TLS1_2_VERSION
									     : TLS1_3_VERSION);
	SSL_CTX_set_max_proto_version(ctx, (cf->ssl_protocols & CL_TLS_V1_3) ? TLS1_3_VERSION
									     : TLS1_2_VERSION);
	/* EOF without close_notify reads as a closed connection (TRANSPORT), not a TLS failure */
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
				      SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	const char *key = NULL;
	if (sec[CL_SEC_TRUSTSTORE_LOCATION]) {
		key = "ssl.truststore.location";
		if (SSL_CTX_load_verify_locations(ctx, sec[CL_SEC_TRUSTSTORE_LOCATION], NULL) != 1)
			goto fail;
	} else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
		key = "the default trust store";
		goto fail;
	}
	const char *pw = sec[CL_SEC_KEY_PASSWORD];
	if (sec[CL_SEC_KEYSTORE_LOCATION]) {
		key = "ssl.keystore.location";
		if (ch_tls_use_keystore(ctx, sec[CL_SEC_KEYSTORE_LOCATION],
					sec[CL_SEC_KEYSTORE_LOCATION], pw) != 0)
			goto fail;
	} else if (sec[CL_SEC_CERT_LOCATION]) {
		key = "ssl.certificate.location / ssl.key.location";
		if (ch_tls_use_keystore(ctx, sec[CL_SEC_CERT_LOCATION], sec[CL_SEC_KEY_LOCATION],
					pw) != 0)
			goto fail;
	}
	c->tls = ctx;
	return true;
fail:
	cl_errstr(errstr, esz, "%s: %s", key, ch_tls_error(why, sizeof(why)));
	SSL_CTX_free(ctx);
	return false;
}

void
cl_tls_ctx_free(cl_client *c)
{
	SSL_CTX_free(c->tls);
	c->tls = NULL;
}

bool
cl_tls_start(cl_broker *b)
{
	cl_client *c = b->c;
	SSL *ssl = SSL_new(c->tls);
	if (!ssl || SSL_set_fd(ssl, b->fd) != 1) {
		SSL_free(ssl);
		return false;
	}
	SSL_set_connect_state(ssl);
	bool ip = is_ip(b->host);
	if (!ip)
		SSL_set_tlsext_host_name(ssl, b->host);
	if (c->conf.sec[CL_SEC_ENDPOINT_ID][0]) {
		X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
		X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
		int ok = ip ? X509_VERIFY_PARAM_set1_ip_asc(vp, b->host)
			    : X509_VERIFY_PARAM_set1_host(vp, b->host, 0);
		if (ok != 1) {
			SSL_free(ssl);
			return false;
		}
	}
	b->ssl = ssl;
	return true;
}

void
cl_tls_free(cl_broker *b)
{
	SSL_free(b->ssl);
	b->ssl = NULL;
	b->tls_read_wants_write = false;
	ERR_clear_error();
}

/* The reason of a failed SSL call into why: OpenSSL's error, the certificate check's verdict
 * when it failed, or what the socket said. */
static void
tls_reason(cl_broker *b, int rc, char *why, size_t cap)
{
	int e = SSL_get_error(b->ssl, rc);
	long vr = SSL_get_verify_result(b->ssl);
	char ossl[200];
	if (e == SSL_ERROR_SSL) {
		ch_tls_error(ossl, sizeof(ossl));
		if (vr != X509_V_OK)
			snprintf(why, cap, "%s (%s)", ossl, X509_verify_cert_error_string(vr));
		else
			snprintf(why, cap, "%s", ossl);
	} else if (e == SSL_ERROR_SYSCALL) {
		ERR_clear_error();
		snprintf(why, cap, "%s",
			 errno && rc < 0 ? strerror(errno) : "connection closed by the broker");
	} else if (e == SSL_ERROR_ZERO_RETURN) {
		snprintf(why, cap, "connection closed by the broker (TLS close_notify)");
	} else {
		ERR_clear_error();
		snprintf(why, cap, "SSL error %d", e);
	}
}

int
cl_tls_handshake(cl_broker *b, char *why, size_t cap)
{
	ERR_clear_error();
	int rc = SSL_do_handshake(b->ssl);
	if (rc == 1) {
		ch_io_modify(b->c->loop, &b->io, CH_IO_READ);
		return CH_OK;
	}
	int e = SSL_get_error(b->ssl, rc);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		ch_io_modify(b->c->loop, &b->io,
			     CH_IO_READ | (e == SSL_ERROR_WANT_WRITE ? CH_IO_WRITE : 0));
		return CH_AGAIN;
	}
	char r[300];
	tls_reason(b, rc, r, sizeof(r));
	snprintf(why, cap, "SSL handshake failed: %s", r);
	return CH_ERR;
}

/* What an SSL_read / SSL_write that returned rc <= 0 means, as cl_tls_recv / cl_tls_send say. */
static ssize_t
io_failed(cl_broker *b, int rc, bool reading, char *why, size_t cap)
{
	int e = SSL_get_error(b->ssl, rc);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		if (reading && e == SSL_ERROR_WANT_WRITE) { /* on_writable reads again */
			b->tls_read_wants_write = true;
			ch_io_modify(b->c->loop, &b->io, CH_IO_READ | CH_IO_WRITE);
		}
		errno = EAGAIN;
		return -1;
	}
	if (reading &&
	    (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && rc == 0 && !errno))) {
		ERR_clear_error();
		return 0;
	}
	tls_reason(b, rc, why, cap);
	return -2;
}

ssize_t
cl_tls_recv(cl_broker *b, void *buf, size_t n, char *why, size_t cap)
{
	ERR_clear_error();
	int rc = SSL_read(b->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
	return rc > 0 ? rc : io_failed(b, rc, true, why, cap);
}

ssize_t
cl_tls_send(cl_broker *b, const void *buf, size_t n, char *why, size_t cap)
{
	ERR_clear_error();
	int rc = SSL_write(b->ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
	return rc > 0 ? rc : io_failed(b, rc, false, why, cap);
}
