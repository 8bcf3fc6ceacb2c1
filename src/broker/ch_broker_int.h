/*
 * ch_broker_int.h: what the files of broker/ share and nobody else sees (the
 * way SQLite keeps btreeInt.h): the log manager's and a partition's
 * structs, and the functions each side drives of the other.
 *
 * Who does what:
 *   ch_log_manager.c     the topic table, lookups, deletion, configuration,
 *                        group commit (fsyncs and durable waiters),
 *                        housekeeping (flush timer, retention, compaction's
 *                        scheduling and its job, producer expiry)
 *   ch_partition.c       a partition's life (open, retire, free), append,
 *                        replay, DeleteRecords, watches
 *   ch_producer_state.c  idempotent producers of one partition, producer ids
 */
#ifndef CH_BROKER_INT_H
#define CH_BROKER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "broker/ch_log_manager.h"
#include "broker/ch_partition.h"
#include "broker/ch_producer_state.h"
#include "common/ch_map.h"
#include "common/ch_ratelog.h"
#include "common/ch_workers.h"
#include "event/ch_loop.h"
#include "log/ch_plog.h"

/* A topic of the table: its partitions, opened lazily. */
typedef struct ptopic {
	ch_map_entry *entry; /* in topics_by_name; its key is the name */
	ch_uuid id;
	ch_part **parts;      /* [n], NULL: not opened (yet) */
	ch_ratelog *open_log; /* [n]: opens that failed (a lookup retries each time) */
	int32_t n;
} ptopic;

struct ch_log_manager {
	ch_loop *loop;
	const struct ch_config *cfg;
	struct ch_topics *topics;
	ch_workers *workers;
	ch_map topics_by_name; /* name -> ptopic: the topics looked up so far */
	int open_errno;        /* cause of the last failed open (ch_log_manager_find) */
	ch_timer tick;
	int64_t last_retention_ms;  /* monotonic */
	int64_t last_expiration_ms; /* monotonic */
	ch_producer_ids producer_ids;
	ch_log_manager_stats stats;
	bool closing;
	ch_logfs *fs; /* NULL: the real file system (tests set one) */
};

/* An append waiting for its fsync. */
typedef struct waiter {
	struct waiter *next;
	int64_t base, last;
	ch_part_durable_fn cb;
	void *ud;
} waiter;

/* A DeleteRecords waiting for the start offset's write. */
typedef struct lso_waiter {
	struct lso_waiter *next;
	int64_t target;
	ch_part_lso_fn cb;
	void *ud;
} lso_waiter;

struct ch_part {
	ch_log_manager *lm;
	char *topic;
	int32_t index;
	ch_uuid topic_id;
	ch_plog *pl;
	ch_plog_config cfg;

	waiter *w_head, *w_tail; /* durable waiters, in offset order */
	bool sync_busy;          /* a sync job is queued or running */
	bool sync_again;         /* a flush was asked for while busy */
	int sync_rc;
	uint64_t sync_us; /* how long that sync took (worker -> sync_done) */
	ch_work sync_job;

	lso_waiter *lso_head; /* DeleteRecords waiting for a start-offset write */
	bool lso_busy;        /* a start-offset write is queued or running */
	int64_t lso_target;   /* what it writes */
	int lso_rc;
	ch_work lso_job;

	bool clean_busy; /* a compaction job is queued or running */
	ch_plog_clean *clean;
	int clean_rc;
	int64_t last_clean_ms;     /* monotonic */
	int64_t clean_base;        /* active segment base at the last clean */
	int64_t clean_followup_ms; /* monotonic: clean again for tombstones */
	ch_work clean_job;

	bool retired;        /* deleted (or shutting down): free when idle */
	bool remove_dir;     /* and delete its directory then */
	int16_t retire_kerr; /* for waiters a sync left behind after that */

	uint64_t appended_bytes;
	ch_part_watch watch_head; /* sentinel of a circular list */

	ch_producer_state producers;
};

/* ---- ch_partition.c, for the log manager ---- */

/* Opens (recovers) one partition's log with configuration pc and rebuilds
 * its producer state; NULL with *err the negative errno when the log cannot
 * be opened. */
ch_part *ch_part_open(ch_log_manager *lm, const char *topic, int32_t index, ch_uuid topic_id,
		      const ch_plog_config *pc, int *err);
/* The partition leaves the table: watchers are told (GONE), waiters failed
 * with kerr; the log is closed (and with remove_dir its directory removed)
 * once no job uses it. */
void ch_part_retire(ch_part *p, int16_t kerr, bool remove_dir);
/* Frees a retired partition once none of its jobs is queued or running. */
void ch_part_maybe_free(ch_part *p);

/* ---- ch_log_manager.c, for partitions ---- */

/* Queues a sync of the log unless one is queued (then one more runs). */
void ch_lm_want_sync(ch_part *p);
/* Parks an append's durable callback until [.., last] is fsynced. */
void ch_lm_park_durable(ch_part *p, int64_t base, int64_t last, ch_part_durable_fn cb, void *ud);
/* Calls (and frees) durable waiters from the head: all of them with
 * kerr != 0, else those whose last offset is below `below`. */
void ch_lm_release_durable(ch_part *p, int16_t kerr, int64_t below);
/* The directory of a partition's log: "<log.dirs>/<topic>-<index>" (caller
 * frees). */
char *ch_lm_part_dir(const ch_log_manager *lm, const char *topic, int32_t index);
/* Removes a partition directory and the files in it (no subdirectories). */
void ch_lm_rm_dir(const char *dir);

#endif
