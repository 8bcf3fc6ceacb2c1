/*
 * ch_scram_store: the broker's SCRAM credentials, durable in the data
 * directory (Kafka keeps them in its metadata log; cohort has none).
 *
 * File DIR/scram-credentials, rewritten whole on every change (write a
 * temporary file, fsync it, rename it over the old one, fsync the
 * directory), read at startup. One credential a line, fields separated by
 * one space, the name and the byte strings in base64:
 *
 *   # cohort SCRAM credentials v1
 *   base64(name) MECHANISM iterations base64(salt) base64(StoredKey) base64(ServerKey)
 *
 * Never a password. A line that does not parse stops startup (the file is
 * cohort's own: nothing else writes it). Loop thread only; changes block on
 * the fsyncs (they are rare admin operations).
 */
#ifndef CH_SCRAM_STORE_H
#define CH_SCRAM_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include "auth/ch_scram.h"

typedef struct ch_scram_store ch_scram_store;

/* Opens (and reads) dir's store; a missing file is an empty store. NULL
 * and why in err on a read error or a malformed line. */
ch_scram_store *ch_scram_store_open(const char *dir, char *err, size_t errlen);
void ch_scram_store_close(ch_scram_store *s);

/* The user's credential for the mechanism: true and *out, or false. */
bool ch_scram_store_get(const ch_scram_store *s, const char *user, ch_scram_mech m,
			ch_scram_cred *out);
/* Adds or replaces one credential, durably. 0, or -1 with why (nothing
 * changed then). */
int ch_scram_store_set(ch_scram_store *s, const char *user, const ch_scram_cred *cred, char *err,
		       size_t errlen);
/* Removes one, durably. 1 removed, 0 there was none, -1 with why. */
int ch_scram_store_delete(ch_scram_store *s, const char *user, ch_scram_mech m, char *err,
			  size_t errlen);
/* Several changes at once, in one durable rewrite (all or none):
 * cred NULL removes (user, mech), else adds or replaces it. 0, or -1 with
 * why (nothing changed then). */
typedef struct ch_scram_change {
	const char *user;
	ch_scram_mech mech;
	const ch_scram_cred *cred;
} ch_scram_change;
int ch_scram_store_apply(ch_scram_store *s, const ch_scram_change *v, size_t n, char *err,
			 size_t errlen);
/* Credentials in the order added: i from 0 while it returns true. */
bool ch_scram_store_at(const ch_scram_store *s, size_t i, const char **user,
		       const ch_scram_cred **cred);

#endif
