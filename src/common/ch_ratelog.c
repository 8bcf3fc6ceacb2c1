#include "common/ch_ratelog.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void
ch_ratelog_init(ch_ratelog *rl, const char *sub, ch_log_level level, const char *fmt, ...)
{
	memset(rl, 0, sizeof(*rl));
	rl->sub = sub;
	rl->level = level;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rl->what, sizeof(rl->what), fmt, ap);
	va_end(ap);
}

/* The failures counted since the last line, in one line. */
static void
summary(ch_ratelog *rl, int64_t now_ms)
{
	ch_log(rl->level, rl->sub, "%s: %" PRIu64 " more failures in the last %.1f s (%s)",
	       rl->what, rl->unlogged, (double)(now_ms - rl->last_line) / 1000.0, rl->cause);
	rl->unlogged = 0;
	rl->last_line = now_ms;
}

bool
ch_ratelog_fail(ch_ratelog *rl, int64_t now_ms, const char *cause)
{
	snprintf(rl->cause, sizeof(rl->cause), "%s", cause ? cause : "");
	if (rl->streak++ == 0) {
		rl->streak_start = rl->last_line = now_ms;
		return true;
	}
	rl->unlogged++;
	if (now_ms - rl->last_line >= CH_RATELOG_INTERVAL_MS)
		summary(rl, now_ms);
	return false;
}

void
ch_ratelog_ok(ch_ratelog *rl, int64_t now_ms)
{
	if (rl->streak == 0)
		return;
	ch_log(CH_LOG_INFO, rl->sub, "%s: working again after %" PRIu64 " failures in %.1f s",
	       rl->what, rl->streak, (double)(now_ms - rl->streak_start) / 1000.0);
	rl->streak = rl->unlogged = 0;
}

void
ch_ratelog_tick(ch_ratelog *rl, int64_t now_ms)
{
	if (rl->unlogged && now_ms - rl->last_line >= CH_RATELOG_INTERVAL_MS)
		summary(rl, now_ms);
}
