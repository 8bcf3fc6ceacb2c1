/*
 * ch_props: read a Java properties file, as java.util.Properties.load does.
 */
#ifndef CH_PROPS_H
#define CH_PROPS_H

#include <stddef.h>

/* One key and value (UTF-8, unescaped, never NULL) of the file; where is
 * "PATH:LINE". CH_OK to go on, CH_ERR (err filled) to stop. */
typedef int (*ch_props_fn)(void *ud, const char *key, const char *value, const char *where,
			   char *err, size_t errlen);

/* Read path (at most 16 MiB) and call fn for every entry in file order.
 * CH_OK, or CH_ERR with the cause in err: the file cannot be read, a
 * malformed \uXXXX or a \u0000 (no C string holds it) at PATH:LINE, or what
 * fn said. */
int ch_props_load_file(const char *path, ch_props_fn fn, void *ud, char *err, size_t errlen);

#endif
