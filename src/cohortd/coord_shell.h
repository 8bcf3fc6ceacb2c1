/*
 * coord_shell: cohortd's side of the group coordinator. The core (group/)
 * is pure; this file gives it what it asks for:
 *   - appends to __consumer_offsets, as record batches through the
 *     log manager's durable path (answered after fsync);
 *   - a wall clock, and one loop timer kept at the core's next deadline;
 *   - at startup, a replay of every __consumer_offsets partition. One that
 *     cannot be opened or read is LOAD_FAILED in the core (its groups are
 *     refused, see ch_coord.h), logged at ERROR with the cause, and tried
 *     again on a timer with backoff (1 s doubling to 60 s) until it loads.
 */
#ifndef COHORTD_COORD_SHELL_H
#define COHORTD_COORD_SHELL_H

#include "api/ch_api.h"
#include "broker/ch_broker.h"
#include "broker/ch_log_manager.h"
#include "event/ch_loop.h"

typedef struct coord_shell coord_shell;

/* Creates the coordinator, replays its state and sets bk->coord. A
 * partition that fails to load does not stop the others. */
coord_shell *coord_shell_start(ch_loop *loop, ch_broker *bk, ch_log_manager *logs);

/* The consumer-protocol groups' settings from cfg (group.consumer.*): 0, or
 * -1 with why in err (an unknown assignor, bounds Kafka refuses). */
struct ch_coord_cg_config;
int coord_shell_consumer_config(const ch_config *cfg, struct ch_coord_cg_config *out, char *err,
				size_t errlen);
/* Shutdown, after ch_coord_shutdown and before ch_log_manager_free: the core gets
 * no more timer ticks and failed partitions no more load retries, so
 * nothing it does on a timer (a session expiring) appends to logs that are
 * being closed, where the append's completion would be posted to a loop
 * that no longer runs. Completions of appends in flight still reach the
 * core. */
void coord_shell_quiesce(coord_shell *s);
/* Frees the shell and the coordinator (after ch_log_manager_free). */
void coord_shell_stop(coord_shell *s);

#endif
