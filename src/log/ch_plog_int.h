/*
 * ch_plog_int.h: the partition log's private state, shared by ch_plog.c and
 * the cleaner (ch_clean.c). Threading rules are in ch_plog.h.
 */
#ifndef CH_PLOG_INT_H
#define CH_PLOG_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "common/ch_ratelog.h"
#include "log/ch_plog.h"

struct ch_plog {
	char *dir; /* <data>/<topic>-<partition> */
	ch_plog_config cfg;
	ch_logfs *fs;
	pthread_mutex_t lock; /* segs/n_segs, seg->synced_size, leo writes, dir_dirty */
	ch_seg **segs;        /* by base offset; the last is the active one */
	size_t n_segs;
	size_t cap_segs;
	int64_t log_start;      /* loop thread */
	int64_t leo;            /* log end offset; written under lock */
	_Atomic int64_t synced; /* offsets below are durable */
	atomic_bool failed;     /* storage error: appends refused */
	bool dir_dirty;         /* names changed since the last sync */
	int64_t last_flush_ms;  /* flush.ms timer (loop thread) */
	bool cleaning;          /* a ch_plog_clean is outstanding */
	int64_t checkpointed;   /* recovery point last written (sync worker) */
	int64_t checkpoint_ms;  /* when (monotonic; sync worker) */
	/* Errors that repeat per request, logged rate-limited (ch_ratelog.h;
	 * monotonic ms). */
	ch_ratelog append_log;     /* appends and rolls refused (loop thread) */
	ch_ratelog read_log;       /* reads failed (loop thread) */
	ch_ratelog checkpoint_log; /* recovery-point writes (sync worker: never ticked) */
};

/* Replaces segment old (at index i) with s, or removes it when s is NULL;
 * takes the lock. The array's reference to old is handed to the caller. */
void ch_plog_seg_replace(ch_plog *pl, size_t i, ch_seg *s);

#endif
