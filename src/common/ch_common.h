/*
 * ch_common.h: return codes and small helpers shared by every layer.
 *
 * Return codes separate "need more" from "failed" (nginx's NGX_AGAIN):
 *   CH_OK     done
 *   CH_AGAIN  incomplete: need more bytes / would block; call again later
 *   CH_ERR    failed; the detail is in an errstr or a Kafka error code
 * Kafka wire error codes are positive int16 values (CH_KERR_* in
 * proto/generated/ch_errors.h);
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
/* 1 in an AddressSanitizer build. Memory kept for reuse (the arena's spare
 * chunk) is not kept there: a block handed out again would hide a use after
 * free from ASan, so ASan builds allocate and free every time. */
#if defined(__SANITIZE_ADDRESS__)
#define CH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CH_ASAN 1
#endif
#endif
#ifndef CH_ASAN
#define CH_ASAN 0
#endif

#define CH_MIN(a, b) ((a) < (b) ? (a) : (b))
#define CH_MAX(a, b) ((a) > (b) ? (a) : (b))
#define CH_UNUSED(x) ((void)(x))
/* Append node at the tail of the singly linked FIFO (head, tail) linked by
 * ->next; head and tail are lvalues (NULL, NULL when empty). */
#define CH_FIFO_APPEND(head, tail, node)                                                           \
	do {                                                                                       \
		(node)->next = NULL;                                                               \
		if (tail)                                                                          \
			(tail)->next = (node);                                                     \
		else                                                                               \
			(head) = (node);                                                           \
		(tail) = (node);                                                                   \
	} while (0)

/* Doubly linked lists by ->prev and ->next. CH_LIST_UNLINK takes node out
 * of a list known by its head only, CH_DLIST_UNLINK out of one with head
 * and tail (all lvalues); node's own links are left as they were. */
#define CH_LIST_UNLINK(head, node)                                                                 \
	do {                                                                                       \
		if ((node)->prev)                                                                  \
			(node)->prev->next = (node)->next;                                         \
		else                                                                               \
			(head) = (node)->next;                                                     \
		if ((node)->next)                                                                  \
			(node)->next->prev = (node)->prev;                                         \
	} while (0)
#define CH_DLIST_UNLINK(head, tail, node)                                                          \
	do {                                                                                       \
		if (!(node)->next)                                                                 \
			(tail) = (node)->prev;                                                     \
		CH_LIST_UNLINK(head, node);                                                        \
	} while (0)

/* Allocation that aborts on out-of-memory: for the broker only (the client
 * library must report errors instead; it uses plain malloc). */
void *ch_xmalloc(size_t n);
void *ch_xcalloc(size_t n, size_t size);
void *ch_xrealloc(void *p, size_t n);
char *ch_xstrdup(const char *s);
/* snprintf into a caller's error buffer: truncated to errlen, always
 * terminated; a NULL err or errlen 0 drops the message. */
void ch_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
char *ch_xstrndup(const char *s, size_t n);
/* "dir/name", allocated (caller frees). */
char *ch_path_join(const char *dir, const char *name);

/* Monotonic and wall clocks in milliseconds. The pure cores (group/,
 * assign/) never call these: they receive now_ms as an argument. The rest
 * reads the clock where it needs it: the event loop (its cached now), the
 * broker (append and retention times), the log (rate-limited error lines),
 * ch_log (line timestamps) and cohortd. */
int64_t ch_now_mono_ms(void);
/* Monotonic microseconds (the same clock; for latency histograms). */
uint64_t ch_now_mono_us(void);
int64_t ch_now_wall_ms(void);

#endif
