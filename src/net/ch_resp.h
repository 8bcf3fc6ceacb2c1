/*
 * ch_resp: one response on its way to a client, as a chain of chunks.
 *
 * A chunk is memory (bytes the response owns), a file range (fd, offset,
 * length) that the server sends with sendfile(), so the Fetch API can ship
 * log segments without copying them through user space, or made: a length
 * whose bytes a callback makes as the send reaches them, a window at a time
 * (Fetch v0-v3 down-converts log data so, in bounded memory). The
 * server writes the 4-byte size prefix itself: the sum of all chunk lengths
 * (Kafka frames are at most INT32_MAX bytes; a longer response closes the
 * connection with an ERROR log, as it cannot be framed).
 *
 * Ownership:
 *   - ch_resp_add_buf() takes the bytes of a ch_buf (the ch_buf is left
 *     empty and may be reused); ch_resp_append() copies.
 *   - a file chunk does not own its fd: `release(ud)` is called exactly once,
 *     when the chunk has been sent or the response is dropped (connection
 *     gone), so the log can unpin the segment. The file must hold
 *     `len` bytes at `off` until then; a file that turns out shorter closes
 *     the connection (the frame size was already promised).
 *   - a made chunk's fill(ud, out, max) appends its next 1..max bytes to
 *     out; release(ud) is called exactly once, when all len bytes are sent
 *     or the response is dropped. A fill that fails (CH_ERR) closes the
 *     connection: the frame size was already promised.
 *   - ch_conn_respond() takes the whole response; so does ch_resp_free().
 *
 * A ch_buf that ran out of memory (ch_buf_ok() false) poisons the response:
 * the server closes the connection instead of sending a truncated frame.
 *
 * Loop thread only, like everything attached to a connection. A response
 * may be built on a worker thread as long as it is handed over (posted)
 * before the loop thread submits it.
 */
#ifndef CH_RESP_H
#define CH_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/ch_buf.h"

typedef struct ch_resp ch_resp;
typedef void (*ch_release_fn)(void *ud);
typedef int (*ch_make_fn)(void *ud, ch_buf *out, size_t max);

ch_resp *ch_resp_new(void);
/* Convenience: a response made of one memory chunk taken from b. */
ch_resp *ch_resp_from_buf(ch_buf *b);
/* The same, but at most CH_RESP_INLINE bytes are copied into the response's
 * own allocation (one malloc and one free a response, and b keeps its memory
 * to be reused: it is left empty, not freed); more are taken as by
 * ch_resp_from_buf. Either way the caller frees b. */
#define CH_RESP_INLINE 256
ch_resp *ch_resp_from_small_buf(ch_buf *b);
/* Free the response and all its chunks (file chunks are released). */
void ch_resp_free(ch_resp *r);

/* Append b's bytes as a memory chunk, taking ownership (b is left empty). */
void ch_resp_add_buf(ch_resp *r, ch_buf *b);
/* Copy n bytes; they extend the last chunk when it is memory. */
void ch_resp_append(ch_resp *r, const void *p, size_t n);
/* Append the file range [off, off+len) of fd; release(ud) when done with it
 * (release may be NULL). A zero-length range is released at once. */
void ch_resp_add_file(ch_resp *r, int fd, off_t off, size_t len, ch_release_fn release, void *ud);

/* Append a made chunk of len bytes (see above); release may be NULL. A
 * zero-length one is released at once. */
void ch_resp_add_made(ch_resp *r, size_t len, ch_make_fn fill, ch_release_fn release, void *ud);

/* Total bytes, not counting the 4-byte size prefix. */
size_t ch_resp_len(const ch_resp *r);
/* False if a chunk's buffer had run out of memory. */
bool ch_resp_ok(const ch_resp *r);

/* The response's bytes in one buffer, as the client would receive them
 * (without the size prefix): memory chunks copied, file ranges read with
 * pread, made chunks made (each becomes a memory chunk of its bytes, so the
 * response still holds the same bytes). Appends to out. For tests and
 * tools: the server sends chunks as they are.
 * @returns CH_OK, or CH_ERR if r is poisoned (!ch_resp_ok), a file range
 * cannot be read in full (errno set; EIO for a file that is too short), a
 * made chunk fails or out runs out of memory. */
int ch_resp_flatten(ch_resp *r, ch_buf *out);

#endif
