/*
 * ch_api_sasl.c: the per-connection api session: which listener a
 * connection came in on and who it is (its principal). See ch_api.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/ch_api.h"
#include "api/ch_api_sasl.h"
#include "broker/ch_broker.h"
#include "common/ch_common.h"

ch_api_session *
ch_api_session_new(ch_broker *bk, int listener)
{
	ch_api_session *s = ch_xcalloc(1, sizeof(*s));
	s->bk = bk;
	s->listener = listener;
	const ch_config *cfg = bk->cfg;
	if (listener >= 0 && (size_t)listener < cfg->nlisteners)
		s->protocol = cfg->listener_sec[listener].protocol;
	s->sasl = s->protocol == CH_SEC_SASL_PLAINTEXT || s->protocol == CH_SEC_SASL_SSL;
	snprintf(s->principal, sizeof(s->principal), "User:ANONYMOUS");
	return s;
}

void
ch_api_session_free(ch_api_session *s)
{
	free(s);
}

void
ch_api_session_set_principal(ch_api_session *s, const char *principal)
{
	if (!s->sasl)
		snprintf(s->principal, sizeof(s->principal), "%s", principal);
}

bool
ch_api_session_authenticated(const ch_api_session *s)
{
	return !s->sasl;
}
