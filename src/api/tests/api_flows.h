/*
 * api_flows.h: what the conversation tests (test_api_<family>.c) share on
 * top of api_harness.h. Each test file walks its API family through every
 * version: step i sends each API at tb_version(key, i).
 */
#ifndef API_FLOWS_H
#define API_FLOWS_H

#include "api_harness.h"
#include "common/ch_common.h"
#include "common/ch_test.h"
#include "proto/generated/ch_errors.h"
#include "proto/generated/ch_msgs.h"

/* Send `req` (a pointer to the request struct of `key`) at version v and
 * declare `var`, the decoded response of type `type`; a missing or bad
 * response fails the check and returns from the calling function (the
 * step), so the next step still runs. */
#define CALL(var, type, b, a, key, v, req)                                                         \
	type *var = tb_call((b), (key), (v), (req), (a));                                          \
	CH_CHECK(var != NULL);                                                                     \
	if (!var) {                                                                                \
		fprintf(stderr, "  in %s (%s:%d)\n", tb_name((key), (v)), __FILE__, __LINE__);     \
		return;                                                                            \
	}

/* A ch_str equals a C string (and is not null). */
#define CH_CHECK_STR(s, c)                                                                         \
	do {                                                                                       \
		ch_str s_ = (s);                                                                   \
		const char *c_ = (c);                                                              \
		bool eq_ = s_.len >= 0 && (size_t)s_.len == strlen(c_) &&                          \
			   memcmp(s_.p, c_, (size_t)s_.len) == 0;                                  \
		if (!eq_)                                                                          \
			fprintf(stderr, "  got \"%.*s\" (len %d), want \"%s\"\n",                  \
				s_.len > 0 ? s_.len : 0, s_.p ? s_.p : "", s_.len, c_);            \
		CH_CHECK(eq_);                                                                     \
	} while (0)

#endif
