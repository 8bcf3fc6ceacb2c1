/*
 * ch_compression: Kafka's compression codecs, numbered as in a record
 * batch's attributes (bits 0-2); PRODUCER is the compression.type config
 * value "producer" (keep what the producer sent). Shared by config/ (the
 * compression.type settings) and log/ (batches).
 */
#ifndef CH_COMPRESSION_H
#define CH_COMPRESSION_H

typedef enum ch_compression {
	CH_COMPRESSION_PRODUCER = -1,
	CH_COMPRESSION_NONE = 0, /* "uncompressed" */
	CH_COMPRESSION_GZIP = 1,
	CH_COMPRESSION_SNAPPY = 2,
	CH_COMPRESSION_LZ4 = 3,
	CH_COMPRESSION_ZSTD = 4,
} ch_compression;

#endif
