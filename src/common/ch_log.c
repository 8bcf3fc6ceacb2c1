#include "common/ch_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <strings.h>
#include <time.h>

ch_log_level ch_log_threshold = CH_LOG_INFO;

static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};

const char *
ch_log_level_name(ch_log_level l)
{
	return (unsigned)l < 5 ? level_names[l] : "?";
}

int
ch_log_level_parse(const char *s, ch_log_level *out)
{
	for (int i = 0; i < 5; i++) {
		if (strcasecmp(s, level_names[i]) == 0) {
			*out = (ch_log_level)i;
			return 0;
		}
	}
	return -1;
}

void
ch_log(ch_log_level level, const char *subsys, const char *fmt, ...)
{
	if (!ch_log_enabled(level))
		return;
	char line[2048];
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	int n = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s [%s] ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
			 tm.tm_sec, ts.tv_nsec / 1000000, level_names[level], subsys);
	va_list ap;
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(line))
		vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", line);
}
