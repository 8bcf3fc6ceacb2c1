/*
 * ch_codec.c: gzip, snappy, lz4 and zstd for record batches (see ch_codec.h).
 */
#include "log/ch_codec.h"

#include <lz4frame.h>
#include <snappy-c.h>
#include <string.h>
#include <xxhash.h>
#include <zlib.h>
#include <zstd.h>

#include "common/ch_common.h"
#include "common/ch_endian.h"
#include "log/ch_batch.h"

#define CHUNK 65536

/* Inflates the gzip (or zlib) stream of in, appending to out; further gzip members are read
 * too and other bytes after a member are ignored, as Java's GZIPInputStream does. CH_ERR if it
 * is bad, truncated or past max_out bytes (out may then hold a part). */
static int
gzip_decompress(const uint8_t *in, size_t in_len, ch_buf *out, size_t max_out)
{
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 32) != Z_OK) /* +32: gzip or zlib header */
		return CH_ERR;
	zs.next_in = (Bytef *)(uintptr_t)in;
	zs.avail_in = (uInt)in_len;
	int zrc = Z_OK;
	size_t start = out->len;
	while (zrc != Z_STREAM_END) {
		if (out->len - start >= max_out || !ch_buf_reserve(out, CHUNK))
			break;
		zs.next_out = out->data + out->len;
		zs.avail_out = CHUNK;
		zrc = inflate(&zs, Z_NO_FLUSH);
		out->len += CHUNK - zs.avail_out;
		if (zrc == Z_STREAM_END && zs.avail_in >= 2 && zs.next_in[0] == 0x1f &&
		    zs.next_in[1] == 0x8b && inflateReset(&zs) == Z_OK) {
			zrc = Z_OK; /* another gzip member follows: Java reads it too */
			continue;
		}
		if (zrc != Z_OK && zrc != Z_STREAM_END)
			break;
		if (zrc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0)
			break; /* input ended inside the stream */
	}
	inflateEnd(&zs);
	return zrc == Z_STREAM_END && out->len - start <= max_out ? CH_OK : CH_ERR;
}

/* Appends in gzipped, one member, with the header Java writes. CH_OK / CH_ERR. */
static int
gzip_compress(const uint8_t *in, size_t in_len, ch_buf *out)
{
	z_stream zs;
	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return CH_ERR;
	/* The header Java's GZIPOutputStream writes (OS 255, "unknown"; zlib
	 * would say 3, Unix): with the same deflate stream, Kafka's bytes. */
	gz_header gh = {.os = 255};
	deflateSetHeader(&zs, &gh);
	size_t bound = deflateBound(&zs, (uLong)in_len);
	if (!ch_buf_reserve(out, bound)) {
		deflateEnd(&zs);
		return CH_ERR;
	}
	zs.next_in = (Bytef *)(uintptr_t)in;
	zs.avail_in = (uInt)in_len;
	zs.next_out = out->data + out->len;
	zs.avail_out = (uInt)bound;
	int zrc = deflate(&zs, Z_FINISH);
	out->len += bound - zs.avail_out;
	deflateEnd(&zs);
	return zrc == Z_STREAM_END ? CH_OK : CH_ERR;
}

/* Appends one raw snappy block in, uncompressed, to out. CH_ERR if it is bad or out would hold
 * more than max_out bytes past start (where this whole decompression began). */
static int
snappy_raw(const uint8_t *in, size_t in_len, ch_buf *out, size_t max_out, size_t start)
{
	size_t n;
	if (snappy_uncompressed_length((const char *)in, in_len, &n) != SNAPPY_OK)
		return CH_ERR;
	if (n == 0)
		return CH_OK;
	if (out->len - start + n > max_out || !ch_buf_reserve(out, n))
		return CH_ERR;
	if (snappy_uncompress((const char *)in, in_len, (char *)out->data + out->len, &n) !=
	    SNAPPY_OK)
		return CH_ERR;
	out->len += n;
	return CH_OK;
}

static const uint8_t xerial_magic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};

/* Appends in uncompressed: xerial framing (what Java writes) when it starts with the xerial magic,
 * else one raw block. CH_ERR if bad, truncated or past max_out bytes in all. */
static int
snappy_decompress(const uint8_t *in, size_t in_len, ch_buf *out, size_t max_out)
{
	size_t start = out->len;
	if (in_len < 16 || memcmp(in, xerial_magic, 8) != 0)
		return snappy_raw(in, in_len, out, max_out, start);
	size_t pos = 16;
	while (pos < in_len) {
		if (in_len - pos < 4)
			return CH_ERR;
		uint32_t blen = ((uint32_t)in[pos] << 24) | ((uint32_t)in[pos + 1] << 16) |
				((uint32_t)in[pos + 2] << 8) | in[pos + 3];
		pos += 4;
		if (blen > in_len - pos)
			return CH_ERR;
		if (snappy_raw(in + pos, blen, out, max_out, start) != CH_OK)
			return CH_ERR;
		pos += blen;
	}
	return CH_OK;
}

/* Appends in compressed as one raw snappy block. CH_OK / CH_ERR. */
static int
snappy_compress_buf(const uint8_t *in, size_t in_len, ch_buf *out)
{
	size_t n = snappy_max_compressed_length(in_len);
	if (!ch_buf_reserve(out, n))
		return CH_ERR;
	if (snappy_compress((const char *)in, in_len, (char *)out->data + out->len, &n) !=
	    SNAPPY_OK)
		return CH_ERR;
	out->len += n;
	return CH_OK;
}

/* snappy-java's SnappyOutputStream, what Kafka's Java client writes: the
 * xerial header (magic, version 1, compatible 1), then each 32 KiB of input
 * as [i32 BE length][raw snappy block]. */
#define XERIAL_BLOCK 32768

/* Appends in in the xerial framing above. CH_ERR on oom or a snappy failure (out may then hold
 * a part). */
static int
snappy_compress_xerial(const uint8_t *in, size_t in_len, ch_buf *out)
{
	static const uint8_t hdr[16] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0,
					0,    0,   0,   1,   0,   0,   0,   1};
	ch_buf_append(out, hdr, sizeof(hdr));
	for (size_t pos = 0; pos < in_len; pos += XERIAL_BLOCK) {
		size_t n = CH_MIN(in_len - pos, (size_t)XERIAL_BLOCK);
		uint8_t *lenp = ch_buf_extend(out, 4);
		if (!lenp)
			return CH_ERR;
		size_t at = out->len;
		if (snappy_compress_buf(in + pos, n, out) != CH_OK)
			return CH_ERR;
		lenp = out->data + at - 4; /* the buffer may have moved */
		ch_be_put32(lenp, (uint32_t)(out->len - at));
	}
	return ch_buf_ok(out) ? CH_OK : CH_ERR;
}

/* Appends the LZ4 frame in, decompressed, to out. CH_ERR if it is bad, truncated or past max_out
 * bytes (out may then hold a part); bytes after the frame's end are ignored, a second frame
 * too, as Kafka 4.4's reader does. */
static int
lz4_decompress(const uint8_t *in, size_t in_len, ch_buf *out, size_t max_out)
{
	LZ4F_dctx *dctx;
	if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION)))
		return CH_ERR;
	size_t start = out->len, pos = 0, hint = 1;
	int rc = CH_ERR;
	while (hint != 0) {
		if (out->len - start >= max_out || !ch_buf_reserve(out, CHUNK))
			goto done;
		size_t dst = CHUNK, src = in_len - pos;
		hint = LZ4F_decompress(dctx, out->data + out->len, &dst, in + pos, &src, NULL);
		if (LZ4F_isError(hint))
			goto done;
		pos += src;
		out->len += dst;
		if (hint != 0 && src == 0 && dst == 0)
			goto done; /* input ended inside the frame */
	}
	rc = out->len - start <= max_out ? CH_OK : CH_ERR;
done:
	LZ4F_freeDecompressionContext(dctx);
	return rc;
}

/* Kafka's frame (Lz4BlockOutputStream): independent 64 KiB blocks, no
 * content size, no checksums. Kafka's Java reader refuses linked blocks
 * ("Dependent block stream is unsupported"), liblz4's default. */
static const LZ4F_preferences_t lz4_kafka_prefs = {
	.frameInfo = {.blockSizeID = LZ4F_max64KB,
		      .blockMode = LZ4F_blockIndependent,
		      .contentChecksumFlag = LZ4F_noContentChecksum,
		      .frameType = LZ4F_frame},
};

/* Appends in as one LZ4 frame laid out as Kafka's (lz4_kafka_prefs). CH_OK / CH_ERR. */
static int
lz4_compress(const uint8_t *in, size_t in_len, ch_buf *out)
{
	size_t bound = LZ4F_compressFrameBound(in_len, &lz4_kafka_prefs);
	if (!ch_buf_reserve(out, bound))
		return CH_ERR;
	size_t n = LZ4F_compressFrame(out->data + out->len, bound, in, in_len, &lz4_kafka_prefs);
	if (LZ4F_isError(n))
		return CH_ERR;
	out->len += n;
	return CH_OK;
}

/* Bytes of the frame header up to and including its checksum byte (HC), or
 * 0 if in is too short or not an LZ4 frame. */
static size_t
lz4_header_size(const uint8_t *in, size_t in_len)
{
	if (in_len < 7 || in[0] != 0x04 || in[1] != 0x22 || in[2] != 0x4d || in[3] != 0x18)
		return 0;
	uint8_t flg = in[4];
	size_t n = 4 + 2 + ((flg & 0x08) ? 8 : 0) + ((flg & 0x01) ? 4 : 0) + 1;
	return n <= in_len ? n : 0;
}

/* Magic 0 wrappers: Kafka before 0.10 computed HC over the magic number too
 * (KAFKA-3160); Kafka 3.9 ignores HC for magic 0, so the header goes to
 * liblz4 with HC made right. */
static int
lz4_decompress_any_hc(const uint8_t *in, size_t in_len, ch_buf *out, size_t max_out)
{
	size_t hn = lz4_header_size(in, in_len);
	if (hn == 0)
		return lz4_decompress(in, in_len, out, max_out);
	ch_buf tmp;
	ch_buf_init(&tmp);
	ch_buf_append(&tmp, in, in_len);
	if (!ch_buf_ok(&tmp))
		return CH_ERR;
	tmp.data[hn - 1] = (uint8_t)(XXH32(in + 4, hn - 5, 0) >> 8);
	int rc = lz4_decompress(tmp.data, tmp.len, out, max_out);
	ch_buf_free(&tmp);
	return rc;
}

/* As lz4_compress; for magic 0, HC the broken way old clients expect
 * (Kafka 3.9's down-conversion writes it so: useBrokenFlagDescriptorChecksum). */
static int
lz4_compress_legacy(const uint8_t *in, size_t in_len, int magic, ch_buf *out)
{
	size_t at = out->len;
	if (lz4_compress(in, in_len, out) != CH_OK)
		return CH_ERR;
	size_t hn = lz4_header_size(out->data + at, out->len - at);
	if (hn == 0)
		return CH_ERR;
	if (magic == 0)
		out->data[at + hn - 1] = (uint8_t)(XXH32(out->data + at, hn - 1, 0) >> 8);
	return CH_OK;
}

/* Appends the zstd frames in, decompressed, to out: concatenated frames are read as one stream,
 * as Kafka 4.4's reader (zstd-jni) does. CH_ERR if one is bad or truncated, if other bytes
 * follow a frame (Kafka: "Unknown frame descriptor") or past max_out bytes; out may then hold
 * a part. */
static int
zstd_decompress(const uint8_t *in, size_t in_len, ch_buf *out, size_t max_out)
{
	ZSTD_DStream *ds = ZSTD_createDStream();
	if (!ds)
		return CH_ERR;
	ZSTD_inBuffer ib = {in, in_len, 0};
	size_t start = out->len, zrc = 1;
	int rc = CH_ERR;
	while (zrc != 0 || ib.pos < in_len) {
		if (out->len - start >= max_out || !ch_buf_reserve(out, CHUNK))
			goto done;
		ZSTD_outBuffer ob = {out->data + out->len, CHUNK, 0};
		size_t before = ib.pos;
		zrc = ZSTD_decompressStream(ds, &ob, &ib);
		if (ZSTD_isError(zrc))
			goto done;
		out->len += ob.pos;
		if (zrc != 0 && ib.pos == before && ob.pos == 0)
			goto done; /* input ended inside the frame */
	}
	rc = ib.pos == in_len && out->len - start <= max_out ? CH_OK : CH_ERR;
done:
	ZSTD_freeDStream(ds);
	return rc;
}

/* Appends in as one zstd frame at level 3 (Kafka's default compression.zstd.level).
 * CH_OK / CH_ERR. */
static int
zstd_compress(const uint8_t *in, size_t in_len, ch_buf *out)
{
	size_t bound = ZSTD_compressBound(in_len);
	if (!ch_buf_reserve(out, bound))
		return CH_ERR;
	size_t n = ZSTD_compress(out->data + out->len, bound, in, in_len, 3);
	if (ZSTD_isError(n))
		return CH_ERR;
	out->len += n;
	return CH_OK;
}

int
ch_codec_decompress(int codec, const void *in, size_t in_len, ch_buf *out, size_t max_out)
{
	switch (codec) {
	case CH_COMPRESSION_GZIP:
		return gzip_decompress(in, in_len, out, max_out);
	case CH_COMPRESSION_SNAPPY:
		return snappy_decompress(in, in_len, out, max_out);
	case CH_COMPRESSION_LZ4:
		return lz4_decompress(in, in_len, out, max_out);
	case CH_COMPRESSION_ZSTD:
		return zstd_decompress(in, in_len, out, max_out);
	default:
		return CH_ERR;
	}
}

int
ch_codec_compress(int codec, const void *in, size_t in_len, ch_buf *out)
{
	switch (codec) {
	case CH_COMPRESSION_GZIP:
		return gzip_compress(in, in_len, out);
	case CH_COMPRESSION_SNAPPY:
		return snappy_compress_xerial(in, in_len, out);
	case CH_COMPRESSION_LZ4:
		return lz4_compress(in, in_len, out);
	case CH_COMPRESSION_ZSTD:
		return zstd_compress(in, in_len, out);
	default:
		return CH_ERR;
	}
}

int
ch_codec_decompress_legacy(int codec, int magic, const void *in, size_t in_len, ch_buf *out,
			   size_t max_out)
{
	if (codec == CH_COMPRESSION_LZ4 && magic == 0)
		return lz4_decompress_any_hc(in, in_len, out, max_out);
	if (codec == CH_COMPRESSION_ZSTD)
		return CH_ERR; /* no zstd before magic 2 */
	return ch_codec_decompress(codec, in, in_len, out, max_out);
}

int
ch_codec_compress_legacy(int codec, int magic, const void *in, size_t in_len, ch_buf *out)
{
	switch (codec) {
	case CH_COMPRESSION_LZ4:
		return lz4_compress_legacy(in, in_len, magic, out);
	case CH_COMPRESSION_GZIP:
	case CH_COMPRESSION_SNAPPY:
		return ch_codec_compress(codec, in, in_len, out);
	default:
		return CH_ERR;
	}
}
