/*
 * ch_log: leveled logging to stderr, one line per event:
 *   2026-11-29T13:48:13.123Z INFO [net] accepted 127.0.0.1:53122
 */
#ifndef CH_LOG_H
#define CH_LOG_H

typedef enum ch_log_level {
	CH_LOG_ERROR = 0,
	CH_LOG_WARN = 1,
	CH_LOG_INFO = 2,
	CH_LOG_DEBUG = 3,
	CH_LOG_TRACE = 4,
} ch_log_level;

extern ch_log_level ch_log_threshold;

/* Parses "error", "warn", "info", "debug", "trace" (case-insensitive). */
int ch_log_level_parse(const char *s, ch_log_level *out);
const char *ch_log_level_name(ch_log_level l);

void ch_log(ch_log_level level, const char *subsys, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define ch_log_enabled(l) ((l) <= ch_log_threshold)
#define CH_LOGE(sub, ...) ch_log(CH_LOG_ERROR, sub, __VA_ARGS__)
#define CH_LOGW(sub, ...) ch_log(CH_LOG_WARN, sub, __VA_ARGS__)
#define CH_LOGI(sub, ...) ch_log(CH_LOG_INFO, sub, __VA_ARGS__)
#define CH_LOGD(sub, ...)                                                                          \
	do {                                                                                       \
		if (ch_log_enabled(CH_LOG_DEBUG))                                                  \
			ch_log(CH_LOG_DEBUG, sub, __VA_ARGS__);                                    \
	} while (0)
#define CH_LOGT(sub, ...)                                                                          \
	do {                                                                                       \
		if (ch_log_enabled(CH_LOG_TRACE))                                                  \
			ch_log(CH_LOG_TRACE, sub, __VA_ARGS__);                                    \
	} while (0)

#endif
