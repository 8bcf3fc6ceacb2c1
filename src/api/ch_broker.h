/*
 * ch_broker: the broker context every api handler sees: configuration, the
 * topic registry, this node's identity, and the shell's reply functions.
 * Built by cohortd's main; the api layer never touches sockets itself.
 */
#ifndef CH_BROKER_H
#define CH_BROKER_H

#include <stdint.h>

#include "common/ch_buf.h"
#include "config/ch_config.h"
#include "group/ch_coord.h"
#include "meta/ch_topics.h"

typedef struct ch_config ch_config;
typedef struct ch_topics ch_topics;
struct ch_log_manager;
struct ch_loop;
struct ch_resp;

struct ch_broker {
	const ch_config *cfg;
	ch_topics *topics;
	int32_t node_id;
	const char *adv_host; /* advertised listener host */
	int32_t adv_port;     /* advertised listener port */
	const char *cluster_id;
	ch_coord *coord; /* the group coordinator (group/) */

	/* The shell: hand a finished response frame body (header + body,
	 * without the size prefix; ownership passes) or NULL for "no response";
	 * close a connection. */
	void *shell;
	void (*reply)(void *shell, void *conn, uint64_t seq, ch_buf *resp);
	void (*close)(void *shell, void *conn, uint64_t seq);
	int64_t (*now_ms)(void *shell);  /* monotonic */
	int64_t (*wall_ms)(void *shell); /* wall clock, for the coordinator */
	/* Hand a response made of chunks (memory and file ranges, ch_resp.h):
	 * header + body, ownership passes. Fetch sends log data this way. */
	void (*reply_resp)(void *shell, void *conn, uint64_t seq, struct ch_resp *resp);

	/* The data path: the log manager (src/broker) and the loop,
	 * for timers of parked requests (Fetch long polling). */
	struct ch_log_manager *logs;
	struct ch_loop *loop;

	/* Counters for logs and tests. */
	uint64_t n_requests, n_rejected;
};

#endif
