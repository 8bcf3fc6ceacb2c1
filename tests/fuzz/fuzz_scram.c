/*
 * libFuzzer target: the SCRAM server (auth/ch_scram.h) over untrusted
 * client messages. The first byte chooses what runs: the client-first
 * parser, the client-final parser, or a whole exchange (the rest split at
 * the first NUL into client-first and client-final) against a known user.
 * Nothing may read past the input or crash; a parsed message's offsets
 * must lie inside it; an exchange may only succeed with a proof (it never
 * does with fuzzed bytes, which a success here would show: abort).
 */
#include <stdlib.h>
#include <string.h>

#include "auth/ch_scram.h"

static ch_scram_cred alice;
static int ready;

static bool
lookup(void *ud, const char *user, ch_scram_mech m, ch_scram_cred *out)
{
	(void)ud;
	if (strcmp(user, "alice") != 0 || m != alice.mech)
		return false;
	*out = alice;
	return true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (!ready) {
		static const uint8_t salt[] = "fuzz-salt";
		if (ch_scram_cred_from_password(CH_SCRAM_SHA_256, "pw", 2, salt, 9, 4096, &alice))
			abort();
		ready = 1;
	}
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	char why[128];
	switch (data[0] % 3) {
	case 0: {
		ch_scram_client_first cf;
		if (ch_scram_parse_client_first(p, n, &cf, why, sizeof(why)) == 0 &&
		    (cf.gs2_len > n || cf.bare_off > n || !cf.user[0] || !cf.nonce[0]))
			abort();
		break;
	}
	case 1: {
		ch_scram_client_final cf;
		if (ch_scram_parse_client_final(p, n, &cf, why, sizeof(why)) == 0 &&
		    (cf.without_proof_len >= n || cf.proof_len == 0))
			abort();
		break;
	}
	default: {
		const uint8_t *nul = memchr(p, 0, n);
		size_t n1 = nul ? (size_t)(nul - p) : n;
		ch_scram_server s;
		ch_scram_server_init(&s, CH_SCRAM_SHA_256);
		uint8_t *out;
		size_t ol;
		const char *msg;
		int rc = ch_scram_server_step(&s, p, n1, lookup, NULL, &out, &ol, &msg);
		free(out);
		if (rc == CH_SCRAM_STEP_OK && nul) {
			rc = ch_scram_server_step(&s, nul + 1, n - n1 - 1, lookup, NULL, &out, &ol,
						  &msg);
			free(out);
			if (rc == CH_SCRAM_STEP_OK)
				abort(); /* a forged proof passed */
		}
		ch_scram_server_free(&s);
		break;
	}
	}
	return 0;
}
