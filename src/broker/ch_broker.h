/*
 * ch_broker: the broker every api handler sees: configuration, the topic
 * registry, the partition logs (ch_log_manager), this node's identity, the
 * group coordinator, and the shell's functions (reply, close, clocks). The
 * api layer never touches sockets itself: the shell (cohortd's network
 * server, or the api tests' harness) hands it frames and takes its
 * responses through these functions.
 *
 * LIFECYCLE (cohortd's main and the api harness do the same):
 *   ch_loop_new; signals blocked (ch_loop_on_signal: before threads start)
 *   ch_broker_open         registry, log manager (its worker threads),
 *                          every partition recovered
 *   coord_shell_start      the coordinator, replayed from __consumer_offsets
 *   ... ch_loop_run ...
 *   ch_coord_shutdown, coord_shell_quiesce
 *   ch_broker_close        pending work finished, logs and registry closed
 *   coord_shell_stop; ch_loop_free
 */
#ifndef CH_BROKER_H
#define CH_BROKER_H

#include <stddef.h>
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

/* The shell's side: hand a finished response frame body (header + body,
 * without the size prefix; the shell takes or copies its bytes and leaves
 * the ch_buf empty, perhaps with memory, for the caller to free or reuse)
 * or NULL for "no response";
 * close a connection; the clocks. */
typedef struct ch_broker_shell {
	void *shell;
	void (*reply)(void *shell, void *conn, uint64_t seq, ch_buf *resp);
	void (*close)(void *shell, void *conn, uint64_t seq);
	int64_t (*now_ms)(void *shell);  /* monotonic */
	int64_t (*wall_ms)(void *shell); /* wall clock, for the coordinator */
	/* Hand a response made of chunks (memory and file ranges, ch_resp.h):
	 * header + body, ownership passes. Fetch sends log data this way. */
	void (*reply_resp)(void *shell, void *conn, uint64_t seq, struct ch_resp *resp);
	/* Optional (NULL: every connection is PLAINTEXT on listener 0, anonymous):
	 * the connection's api session (ch_api.h), kept by the shell; a SASL
	 * exchange that succeeded (principal for ch_conn, the frame limit lifted);
	 * one that failed (close after delay_ms, what is queued sent first). */
	struct ch_api_session *(*session)(void *shell, void *conn);
	void (*authenticated)(void *shell, void *conn, const char *principal);
	void (*close_later)(void *shell, void *conn, int64_t delay_ms);
	/* Optional: stop reading the connection for ms (a client quota's
	 * throttle), its queued answers still sent. */
	void (*throttle)(void *shell, void *conn, int32_t ms);
} ch_broker_shell;

typedef struct ch_broker ch_broker;

struct ch_broker {
	const ch_config *cfg;
	ch_topics *topics;
	int32_t node_id;
	const char *adv_host; /* advertised listener host (the first listener's) */
	int32_t adv_port;     /* advertised listener port */
	/* Each listener's advertised address, by index in cfg->listeners
	 * ([0] is adv_host/adv_port); a port of 0 is for the shell to replace
	 * with the bound one. */
	const char *adv_hosts[CH_LISTENERS_MAX];
	int32_t adv_ports[CH_LISTENERS_MAX];
	/* Authentication, set by the shell after ch_broker_open (NULL: none). */
	struct ch_scram_store *scram;                         /* SCRAM credentials */
	struct ch_plain_users *plain_users[CH_LISTENERS_MAX]; /* each listener's PLAIN users */
	struct ch_quotas *quotas; /* client quotas (quota/ch_quota.h); NULL: none */
	/* The request whose handler is running (request_percentage: its time
	 * so far is the loop's time on it); NULL between handlers. */
	struct ch_req *handling;
	struct ch_acl_store *acls; /* ACL bindings, when authorizer.class.name is set (else NULL) */
	const char *cluster_id;
	ch_coord *coord;              /* the group coordinator (group/), set by coord_shell_start */
	struct ch_coord_cg *cgroups;  /* its consumer-protocol groups (KIP-848), likewise */
	uint64_t cgroups_topics_seen; /* ch_topics_changes when cgroups last heard of them */

	/* The shell's functions (ch_broker_shell, copied by ch_broker_open). */
	void *shell;
	void (*reply)(void *shell, void *conn, uint64_t seq, ch_buf *resp);
	void (*close)(void *shell, void *conn, uint64_t seq);
	int64_t (*now_ms)(void *shell);
	int64_t (*wall_ms)(void *shell);
	void (*reply_resp)(void *shell, void *conn, uint64_t seq, struct ch_resp *resp);
	struct ch_api_session *(*session)(void *shell, void *conn);
	void (*authenticated)(void *shell, void *conn, const char *principal);
	void (*close_later)(void *shell, void *conn, int64_t delay_ms);
	void (*throttle)(void *shell, void *conn, int32_t ms);

	/* The data path: the log manager and the loop, for timers of parked
	 * requests (Fetch long polling). */
	struct ch_log_manager *logs;
	struct ch_loop *loop;

	/* Counters for logs and tests. */
	uint64_t n_requests, n_rejected;
	struct ch_api_stats *api_stats; /* the api layer's (ch_api.h); freed by close */
};

/*
 * Opens the broker on cfg's data directory: the topic registry, the log
 * manager (starting its worker threads; the registry's writes run on
 * them), and every partition (recovered; one that fails is logged and
 * retried at its next lookup). The advertised address comes from
 * advertised.listeners (a port of 0 is for the caller to replace with the
 * bound one). cfg (whose dynamic layers the registry changes) and loop
 * must outlive the broker.
 * @returns CH_OK, or CH_ERR with the reason in err (nothing left open).
 */
int ch_broker_open(ch_broker *bk, ch_config *cfg, struct ch_loop *loop,
		   const ch_broker_shell *shell, char *err, size_t errlen);
/* Closes what ch_broker_open opened: lets pending work finish (its
 * completions still reach the coordinator, which must be quiesced first:
 * coord_shell_quiesce), closes the logs and the registry. The loop must
 * still exist. */
void ch_broker_close(ch_broker *bk);

#endif
