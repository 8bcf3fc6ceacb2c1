/*
 * ch_api_sasl.h: the inside of ch_api_session (ch_api.h), shared by
 * ch_api.c (the gate before authentication) and ch_api_sasl.c.
 *
 * A SASL listener's connection goes through Kafka's SaslServerAuthenticator
 * states:
 *
 *   HANDSHAKE_OR_VERSIONS --ApiVersions--> HANDSHAKE --SaslHandshake--> AUTHENTICATE
 *   HANDSHAKE_OR_VERSIONS --SaslHandshake--> AUTHENTICATE
 *   AUTHENTICATE --SaslAuthenticate (or raw tokens after a v0 handshake)...--> COMPLETE
 *   any --a request not allowed there, or a failed exchange--> FAILED (closed)
 *
 * Re-authentication (KIP-368), when the listener's connections.max.reauth.ms
 * is set and the client spoke SaslAuthenticate v1+: the session lifetime is
 * answered with the last token; a request after it ends closes the
 * connection (Kafka's "expired session"), and a SaslHandshake while
 * COMPLETE starts the exchange again (same mechanism, same principal) with
 * the connection usable afterwards:
 *
 *   COMPLETE --SaslHandshake v1+--> AUTHENTICATE (reauth) --...--> COMPLETE
 *
 * Before COMPLETE only those requests are read; frames are bounded by
 * sasl.server.max.receive.size (the shell sets the connection's limit).
 */
#ifndef CH_API_SASL_H
#define CH_API_SASL_H

#include <stdbool.h>

#include "auth/ch_scram.h"
#include "config/ch_config.h"

typedef enum ch_sasl_state {
	CH_SASL_HANDSHAKE_OR_VERSIONS = 0,
	CH_SASL_HANDSHAKE,
	CH_SASL_AUTHENTICATE,
	CH_SASL_COMPLETE,
	CH_SASL_FAILED,
} ch_sasl_state;

struct ch_api_session {
	ch_broker *bk;
	int listener;                  /* index in cfg->listeners */
	ch_security_protocol protocol; /* the listener's */
	bool sasl;                     /* a SASL listener */
	ch_sasl_state state;
	bool raw_tokens;          /* SaslHandshake v0: tokens without Kafka headers */
	unsigned mech;            /* CH_SASL_* of the exchange */
	ch_scram_server scram;    /* when mech is SCRAM */
	char principal[512];      /* "User:ANONYMOUS" until someone sets it */
	bool client_reauth;       /* it sent SaslAuthenticate v1+ (supports KIP-368) */
	bool reauth;              /* the exchange is a re-authentication */
	unsigned reauth_bad_mech; /* re-authentication asked for another mechanism */
	int64_t expires_ms;       /* session end (monotonic); 0: none */
};

/* Whether the authenticated session of s is over at now_ms (KIP-368); such
 * a connection may send only SaslHandshake (to re-authenticate). */
bool ch_api_sasl_expired(const ch_api_session *s, int64_t now_ms);

/* The gate of ch_api_on_frame for a SASL connection not yet authenticated:
 * true if it took the frame (a raw token answered, or a request not allowed
 * in this state: connection closed); false to dispatch it as usual (an
 * allowed ApiVersions, SaslHandshake or SaslAuthenticate). */
bool ch_api_sasl_gate(ch_broker *bk, ch_api_session *s, void *conn, uint64_t seq, const char *peer,
		      const uint8_t *frame, size_t len);

#endif
