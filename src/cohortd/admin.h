/*
 * admin: what cohortd's admin HTTP listener (admin.listeners) serves: the
 * route table from a URL path to a page. Runs on the loop thread (ch_http.h),
 * so pages read the broker and the coordinator directly.
 *
 *   /          a plain-text index of the endpoints
 *   anything else: 404
 */
#ifndef COHORTD_ADMIN_H
#define COHORTD_ADMIN_H

#include "broker/ch_broker.h"
#include "net/ch_http.h"

typedef struct admin admin;

/* Binds the listener l (admin.listeners) on loop; NULL with the reason in
 * err when it cannot. Pages read bk, which may still be unopened then but
 * must be open once the loop runs, and must outlive the listener. */
admin *admin_start(ch_loop *loop, const ch_listener *l, ch_broker *bk, char *err, size_t errlen);
/* The bound port. */
int admin_port(const admin *a);
/* Closes the listener and its connections. NULL is a no-op. */
void admin_stop(admin *a);

#endif
