/*
 * ch_frame: the incremental Kafka framer. Pure (no I/O), so it is unit-tested
 * and fuzzed on its own, apart from the sockets.
 *
 * Wire format of every Kafka request and response:
 *
 *   OFFSET SIZE  FIELD
 *   0      4     size: int32, big-endian, bytes that follow
 *   4      size  the message (request header + body)
 *
 * The framer accepts bytes in pieces of any size and keeps what it has of the
 * current frame: the size prefix (even split over several reads) and the
 * message bytes received so far. Validation follows Kafka's NetworkReceive:
 * a negative size, or a size above socket.request.max.bytes, is an
 * InvalidReceiveException and the connection is closed. A zero size closes
 * too (no request header fits in zero bytes).
 *
 * Memory: the claimed size is only a promise. The message buffer grows as
 * bytes actually arrive (doubling, capped at the claimed size), so a peer
 * that claims 100 MB and sends 10 bytes costs a few KB, not 100 MB. A
 * completed frame is handed over with ch_framer_take(); the caller owns it
 * and frees it with free().
 */
#ifndef CH_FRAME_H
#define CH_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ch_framer {
	uint8_t hdr[4];    /* size prefix bytes received so far */
	uint8_t hdr_got;   /* 0..4 */
	int32_t max;       /* largest accepted size */
	size_t size;       /* claimed message size, once hdr_got == 4 */
	uint8_t *buf;      /* message bytes, owned until taken */
	size_t got;        /* bytes in buf */
	size_t cap;        /* bytes allocated for buf */
	char err[96];      /* reason, after CH_ERR (Kafka's wording) */
	bool stop_at_size; /* feed returns CH_FRAME_SIZED once each prefix is in */
} ch_framer;

/* ch_framer_feed's answer, when stop_at_size is set, once a frame's size
 * prefix is complete (f->size known) and before any of its message bytes
 * are taken: the caller may reserve memory for it, then feed again. */
#define CH_FRAME_SIZED 2

void ch_framer_init(ch_framer *f, int32_t max_size);
/* Frees a partial frame. The framer can be reused after ch_framer_init. */
void ch_framer_free(ch_framer *f);

/*
 * Consume bytes p[0..n). Sets *used to the bytes consumed and returns:
 *   CH_OK     a frame is complete (take it before feeding again); bytes
 *             after it (n - *used) were not consumed
 *   CH_AGAIN  all n bytes consumed, frame not complete yet
 *   CH_ERR    invalid size prefix; f->err says why; the framer is dead
 *   CH_FRAME_SIZED  (stop_at_size only) the size prefix just completed;
 *             *used counts its bytes, no message byte was consumed
 */
int ch_framer_feed(ch_framer *f, const uint8_t *p, size_t n, size_t *used);

/* Hand over the completed frame (size prefix stripped); caller frees. The
 * framer is ready for the next frame. A 0-length frame is never produced. */
uint8_t *ch_framer_take(ch_framer *f, size_t *len);

/*
 * The short cut for a whole frame at p: when the framer holds nothing of a
 * frame and p[0..n) starts with a valid size prefix and all of its message,
 * returns the message in a buffer of its own (caller frees; *len its size,
 * 4 + *len bytes of p consumed), as feed + take would, in one copy. Else
 * NULL, nothing consumed: feed as usual (which also reports a bad prefix).
 */
uint8_t *ch_framer_whole(ch_framer *f, const uint8_t *p, size_t n, size_t *len);

/*
 * Zero-copy receive of large messages. When the size prefix is complete and
 * at least `min_remaining` message bytes are still missing, returns where
 * the next bytes go and sets *room (grown by doubling, never past the
 * claimed size); read into it, then call ch_framer_advance(). Otherwise
 * returns NULL and the caller reads into its own buffer and feeds.
 */
uint8_t *ch_framer_direct(ch_framer *f, size_t min_remaining, size_t *room);
/* n bytes were written at the pointer ch_framer_direct returned.
 * CH_OK: the frame is complete; CH_AGAIN: more to come. */
int ch_framer_advance(ch_framer *f, size_t n);

/* Bytes held for the current partial frame (prefix included). */
size_t ch_framer_pending(const ch_framer *f);

#endif
