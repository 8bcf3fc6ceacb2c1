/*
 * libFuzzer target: libcohort's side of SCRAM (auth/ch_scram.h) over
 * untrusted server messages. The first byte chooses what runs: the
 * server-first parser alone, or an exchange (client nonce "fuzznonce")
 * whose server-first and server-final are the rest split at the first NUL.
 * Nothing may read past the input or crash; a parsed server-first must have
 * a nonce, a salt and iterations; verification may only pass with the
 * ServerSignature, which fuzzed bytes never carry (a pass here aborts).
 */
#include <stdlib.h>
#include <string.h>

#include "auth/ch_scram.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const uint8_t *p = data + 1;
	size_t n = size - 1;
	char why[256], out[CH_SCRAM_MSG_MAX + 512];
	if (data[0] % 2 == 0) {
		ch_scram_server_first sf;
		if (ch_scram_parse_server_first(p, n, &sf, why, sizeof(why)) == 0 &&
		    (!sf.nonce[0] || sf.salt_len == 0 || sf.salt_len > sizeof(sf.salt)))
			abort();
		return 0;
	}
	const uint8_t *nul = memchr(p, 0, n);
	size_t first_len = nul ? (size_t)(nul - p) : n;
	const uint8_t *fin = nul ? nul + 1 : p + n;
	size_t fin_len = nul ? n - first_len - 1 : 0;
	ch_scram_client cl;
	ch_scram_mech m = (data[0] & 2) ? CH_SCRAM_SHA_512 : CH_SCRAM_SHA_256;
	if (ch_scram_client_begin(&cl, m, "alice", "fuzznonce", out, sizeof(out)) < 0)
		abort();
	if (ch_scram_client_respond(&cl, "pw", p, first_len, out, sizeof(out), why, sizeof(why)) <
	    0)
		return 0;
	if (ch_scram_client_verify(&cl, fin, fin_len, why, sizeof(why)) == 0)
		abort();
	return 0;
}
