/*
 * admin: what cohortd's admin HTTP listener (admin.listeners) serves: the
 * route table from a URL path to a page. Runs on the loop thread (ch_http.h),
 * so pages read the broker and the coordinator directly.
 *
 *   /          a plain-text index of the endpoints
 *   /metrics   Prometheus text format (admin_metrics.c)
 *   /v1/groups, /v1/groups/G, /v1/groups/G/rebalances   JSON (admin_groups.c)
 *   /v1/groups/G/simulate   the assignors' what-if, JSON (admin_simulate.c)
 *   anything else: 404
 */
#ifndef COHORTD_ADMIN_H
#define COHORTD_ADMIN_H

#include <stdbool.h>

#include "broker/ch_broker.h"
#include "group/ch_coord.h"
#include "net/ch_http.h"

typedef struct admin admin;

/* What the pages read: the broker (its registry, logs, coordinator and the
 * api layer's counters), the Kafka server's counters and the loop's. */
typedef struct admin_sources {
	ch_broker *bk;
	struct ch_server *server;
	ch_loop *loop;
} admin_sources;

/* Binds the listener l (admin.listeners) on src->loop; NULL with the reason
 * in err when it cannot. src is copied; the broker may still be unopened
 * then but must be open once the loop runs, and must outlive the listener. */
admin *admin_start(const ch_listener *l, const admin_sources *src, char *err, size_t errlen);
/* The bound port. */
int admin_port(const admin *a);
/* Closes the listener and its connections. NULL is a no-op. */
void admin_stop(admin *a);

/* Appends the /metrics page to b (admin_metrics.c). */
void admin_render_metrics(const admin_sources *src, ch_buf *b);
/* The group pages (admin_groups.c): every group; one group (404 when there
 * is none), with its whole rebalance history when rebalances. */
void admin_page_groups(const admin_sources *src, ch_http_reply *out);
void admin_page_group(const admin_sources *src, const char *id, bool rebalances,
		      ch_http_reply *out);
/* /v1/groups/G/simulate?strategy=S&add_member=N&remove_member=ID...: a
 * copy of the group taken here, the assignors run on the HTTP thread
 * (out->finish). */
void admin_page_simulate(const admin_sources *src, const char *id, const char *query,
			 ch_http_reply *out);
/* Start and end offsets of topic's partition, false when its log is not
 * open (admin_metrics.c). */
bool admin_part_offsets(ch_broker *bk, const char *topic, int32_t partition, int64_t *start,
			int64_t *end);
/* The live page (admin_page.c): the page itself, a group's partitions with
 * owner, offsets and lag, and the summary the event stream sends. */
void admin_page_ui(ch_http_reply *out);
void admin_page_partitions(const admin_sources *src, const char *id, ch_http_reply *out);
/* The groups' summary as one server-sent event ("event: groups"), into b. */
void admin_render_summary(const admin_sources *src, ch_buf *b);
struct json_t;
/* A group's identity on a JSON object: group_id, state, protocol_type,
 * protocol (null when none) and generation. */
void admin_group_head(struct json_t *o, const char *id, ch_coord_group_state state,
		      const char *protocol_type, const char *protocol, int32_t generation);
/* Sets out's body to j as one line of JSON (and frees j). */
void admin_reply_json(ch_http_reply *out, struct json_t *j);
/* Decodes the %XX escapes of [s, s+n) into out (cap bytes); false for a bad
 * escape, a NUL or a result that does not fit. */
bool admin_pct_decode(const char *s, size_t n, char *out, size_t cap);

#endif
