/*
 * ch_common.h: return codes and small helpers shared by every layer.
 *
 * Return codes separate "need more" from "failed" (nginx's NGX_AGAIN):
 *   CH_OK     done
 *   CH_AGAIN  incomplete: need more bytes / would block; call again later
 *   CH_ERR    failed; the detail is in an errstr or a Kafka error code
 * Kafka wire error codes are positive int16 values (see proto/ch_errors.h);
 * they are never mixed with these.
 */
#ifndef CH_COMMON_H
#define CH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define CH_OK 0
#define CH_AGAIN 1
#define CH_ERR (-1)

#define CH_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define CH_MIN(a, b) ((a) < (b) ? (a) : (b))
#define CH_MAX(a, b) ((a) > (b) ? (a) : (b))
#define CH_UNUSED(x) ((void)(x))

/* Allocation that aborts on out-of-memory: for the broker only (the client
 * library must report errors instead; it uses plain malloc). */
void *ch_xmalloc(size_t n);
void *ch_xcalloc(size_t n, size_t size);
void *ch_xrealloc(void *p, size_t n);
char *ch_xstrdup(const char *s);
char *ch_xstrndup(const char *s, size_t n);

/* Monotonic and wall clocks in milliseconds. Only the shell (net, cohortd)
 * calls these; pure cores (group/, assign/) receive now_ms as an argument. */
int64_t ch_now_mono_ms(void);
int64_t ch_now_wall_ms(void);

#endif
