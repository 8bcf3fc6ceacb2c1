/*
 * client_shell.h: a cl_client built by hand for unit tests without a
 * thread or a broker (test_lookup_oom, test_cg_subscription): its brokers
 * are kept DOWN with their reconnect backoff far away, so requests wait in
 * their queues where a test can see, answer or encode them.
 */
#ifndef CL_CLIENT_SHELL_H
#define CL_CLIENT_SHELL_H

#include <stdint.h>
#include <stdlib.h>

#include "client/cl_int.h"
#include "common/ch_test.h"

/* A consumer of group "g" with one more setting (key = value), bootstrap
 * 127.0.0.1:1 (nothing listens), and its member. */
static inline cl_client *
client_shell_new(const char *key, const char *value)
{
	cl_client *c = calloc(1, sizeof(*c));
	cohort_conf *conf = cohort_conf_new();
	CH_CHECK(cohort_conf_set(conf, "bootstrap.servers", "127.0.0.1:1", NULL, 0) == COHORT_OK);
	CH_CHECK(cohort_conf_set(conf, "group.id", "g", NULL, 0) == COHORT_OK);
	CH_CHECK(cohort_conf_set(conf, key, value, NULL, 0) == COHORT_OK);
	CH_CHECK(cl_client_init(c, conf, CL_CONSUMER, NULL, 0));
	cohort_conf_free(conf);
	c->member = cl_member_new(c);
	return c;
}

/* Brokers known now wait: no connection attempt before the end of the test. */
static inline void
client_shell_hold_brokers(cl_client *c)
{
	for (cl_broker *b = c->brokers; b; b = b->next)
		b->retry_at = INT64_MAX / 2; /* requests wait in b->waiting */
}

/* Ends the queued requests (CLOSED), then frees the member, the partitions,
 * a pattern and the client. */
static inline void
client_shell_free(cl_client *c)
{
	c->closing = true;
	cl_brokers_close(c, COHORT_ERR__CLOSED); /* queued requests end */
	cl_offsets_shutdown(c);
	cl_member_free(c->member);
	for (int i = 0; i < c->ntps; i++) {
		free(c->tps[i]->topic);
		free(c->tps[i]);
	}
	free(c->tps);
	free(c->pattern_text);
	cl_client_release(c);
	free(c);
}

#endif
