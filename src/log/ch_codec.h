/*
 * ch_codec: the record-batch compression codecs, on Debian's libraries.
 *
 *   1 gzip    zlib, gzip wrapper (inflate accepts zlib and gzip headers);
 *             written with Java's header (OS 255), so the same bytes as
 *             Kafka's GZIPOutputStream
 *   2 snappy  raw snappy, or the xerial framing Java clients write:
 *             magic 82 'SNAPPY' 00, version i32, compat i32, then blocks of
 *             [i32 BE length][raw snappy block]; written in that framing
 *             with 32 KiB blocks, as snappy-java writes it (so a batch
 *             cohortd builds has the size Kafka's would have)
 *   3 lz4     LZ4 frame format (magic v2 batches use a correct header
 *             checksum, so the stock frame decoder accepts them); written
 *             as Kafka writes it: independent 64 KiB blocks, no checksums
 *   4 zstd    zstd frames, content size optional
 *
 * Every decompressor stops at max_out bytes and reports CH_ERR: a batch that
 * inflates past the limit is treated as corrupt (zip-bomb guard).
 * @locality any thread; no shared state.
 */
#ifndef CH_CODEC_H
#define CH_CODEC_H

#include <stddef.h>

#include "common/ch_buf.h"

/* Appends the decompressed bytes of `in` to out. @returns CH_OK / CH_ERR. */
int ch_codec_decompress(int codec, const void *in, size_t in_len, ch_buf *out, size_t max_out);
/* Appends the compressed form of `in` to out. @returns CH_OK / CH_ERR. */
int ch_codec_compress(int codec, const void *in, size_t in_len, ch_buf *out);

/*
 * The value of a magic 0/1 compressed wrapper message (ch_legacy.h), as
 * Kafka 3.9 reads and writes it: gzip, snappy, lz4; no zstd. For magic 0
 * an lz4 frame's header checksum is the broken one of Kafka 0.8-0.9
 * (KAFKA-3160, computed over the magic number too): ignored on reading,
 * written so on writing.
 */
int ch_codec_decompress_legacy(int codec, int magic, const void *in, size_t in_len, ch_buf *out,
			       size_t max_out);
int ch_codec_compress_legacy(int codec, int magic, const void *in, size_t in_len, ch_buf *out);

#endif
