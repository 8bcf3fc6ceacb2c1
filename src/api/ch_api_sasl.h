/*
 * ch_api_sasl.h: the inside of ch_api_session (ch_api.h), shared by
 * ch_api.c (the gate before authentication) and ch_api_sasl.c.
 */
#ifndef CH_API_SASL_H
#define CH_API_SASL_H

#include <stdbool.h>

#include "config/ch_config.h"

struct ch_api_session {
	ch_broker *bk;
	int listener;                  /* index in cfg->listeners */
	ch_security_protocol protocol; /* the listener's */
	bool sasl;                     /* a SASL listener */
	char principal[512];           /* "User:ANONYMOUS" until someone sets it */
};

#endif
