/*
 * ch_quota_store: the client quotas, durable in the data directory (Kafka
 * keeps them as ClientQuotaRecords in its metadata log; cohort has none).
 *
 * File DIR/client-quotas, rewritten whole on every change (ch_durable), read
 * at startup. One quota a line:
 *
 *   # cohort client quotas v1
 *   USER CLIENT KEY VALUE
 *   ip IP KEY VALUE
 *
 * USER, CLIENT and IP: "-" absent, "*" the default, or "x" and the name in hex;
 * KEY a ch_quota_key name; VALUE a number (%.17g). A line that does not
 * parse stops startup.
 */
#ifndef CH_QUOTA_STORE_H
#define CH_QUOTA_STORE_H

#include <stddef.h>

#include "quota/ch_quota.h"

/* Reads dir's quotas into q (a missing file is none). 0, or -1 with why. */
int ch_quotas_load(ch_quotas *q, const char *dir, char *err, size_t errlen);
/* Writes q as dir's quotas, durably. 0, or -1 with why (the file is the old
 * one then). */
int ch_quotas_save(const ch_quotas *q, const char *dir, char *err, size_t errlen);

#endif
