/*
 * ch_topics.c: the topic registry, its file and meta.properties.
 *
 * Three chained hash tables share one bucket count: by name, by id, and by
 * "collision name" ('.' read as '_', Kafka's Topic.hasCollision). A sorted
 * pointer array gives name order. Every change is applied in memory, written
 * out whole (write tmp, fsync, rename, fsync dir) and rolled back if the
 * write fails. The file format is documented in ch_topics.h.
 */
#include "meta/ch_topics.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/ch_buf.h"
#include "common/ch_common.h"
#include "common/ch_hash.h"
#include "common/ch_log.h"

enum { H_NAME, H_ID, H_NORM, H_COUNT };

#define TOPICS_VERSION 1
#define REGISTRY_MAX_BYTES (256u << 20)
#define CONFIGS_PER_TOPIC_MAX 1000

struct ch_topics {
	const struct ch_config *cfg;
	ch_logfs *fs;      /* the file layer (tests inject faults under it) */
	char *dir;
	char *path;        /* DIR/cohort-topics.meta */
	char *tmp_path;    /* DIR/cohort-topics.meta.tmp */
	int lock_fd;
	char cluster_id[64];
	ch_topic **buckets[H_COUNT];
	size_t nbuckets;   /* power of two */
	size_t n;
	ch_topic **sorted; /* by name */
	size_t sorted_cap;
};

static void
msgf(char *msg, size_t msglen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
msgf(char *msg, size_t msglen, const char *fmt, ...)
{
	if (!msg || msglen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
}

static char *
path_join(const char *dir, const char *file)
{
	size_t n = strlen(dir) + strlen(file) + 2;
	char *p = ch_xmalloc(n);
	snprintf(p, n, "%s/%s", dir, file);
	return p;
}

/* ---- hashing and indexes ---- */

static uint64_t
norm_hash(const char *name, size_t len)
{
	char buf[CH_TOPIC_NAME_MAX];
	len = CH_MIN(len, sizeof(buf));
	for (size_t i = 0; i < len; i++)
		buf[i] = name[i] == '.' ? '_' : name[i];
	return ch_hash_bytes(buf, len);
}

static bool
norm_eq(const char *a, const char *b, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char x = a[i] == '.' ? '_' : a[i], y = b[i] == '.' ? '_' : b[i];
		if (x != y)
			return false;
	}
	return true;
}

static void
hash_insert(struct ch_topics *reg, ch_topic *t)
{
	for (int k = 0; k < H_COUNT; k++) {
		size_t b = t->hash_[k] & (reg->nbuckets - 1);
		t->next_[k] = reg->buckets[k][b];
		reg->buckets[k][b] = t;
	}
}

static void
rehash(struct ch_topics *reg, size_t nbuckets)
{
	for (int k = 0; k < H_COUNT; k++) {
		free(reg->buckets[k]);
		reg->buckets[k] = ch_xcalloc(nbuckets, sizeof(ch_topic *));
	}
	reg->nbuckets = nbuckets;
	for (size_t i = 0; i < reg->n; i++)
		hash_insert(reg, reg->sorted[i]);
}

/* Position of name in sorted, or where it would go. */
static size_t
sorted_pos(const struct ch_topics *reg, const char *name, bool *found)
{
	size_t lo = 0, hi = reg->n;
	*found = false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(reg->sorted[mid]->name, name);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void
index_add(struct ch_topics *reg, ch_topic *t)
{
	bool found;
	size_t pos = sorted_pos(reg, t->name, &found);
	if (reg->n == reg->sorted_cap) {
		reg->sorted_cap = reg->sorted_cap ? reg->sorted_cap * 2 : 16;
		reg->sorted = ch_xrealloc(reg->sorted, reg->sorted_cap * sizeof(ch_topic *));
	}
	memmove(&reg->sorted[pos + 1], &reg->sorted[pos], (reg->n - pos) * sizeof(ch_topic *));
	reg->sorted[pos] = t;
	reg->n++;
	if (reg->n > reg->nbuckets)
		rehash(reg, reg->nbuckets * 2);
	else
		hash_insert(reg, t);
}

static void
index_remove(struct ch_topics *reg, ch_topic *t)
{
	for (int k = 0; k < H_COUNT; k++) {
		ch_topic **pp = &reg->buckets[k][t->hash_[k] & (reg->nbuckets - 1)];
		while (*pp != t)
			pp = &(*pp)->next_[k];
		*pp = t->next_[k];
		t->next_[k] = NULL;
	}
	bool found;
	size_t pos = sorted_pos(reg, t->name, &found);
	memmove(&reg->sorted[pos], &reg->sorted[pos + 1], (reg->n - pos - 1) * sizeof(ch_topic *));
	reg->n--;
}

static ch_topic *
find_name(const struct ch_topics *reg, const char *name, size_t len)
{
	uint64_t h = ch_hash_bytes(name, len);
	for (ch_topic *t = reg->buckets[H_NAME][h & (reg->nbuckets - 1)]; t; t = t->next_[H_NAME])
		if (t->hash_[H_NAME] == h && t->name_len == len && memcmp(t->name, name, len) == 0)
			return t;
	return NULL;
}

static ch_topic *
find_id(const struct ch_topics *reg, const ch_uuid *id)
{
	uint64_t h = ch_hash_bytes(id->b, sizeof(id->b));
	for (ch_topic *t = reg->buckets[H_ID][h & (reg->nbuckets - 1)]; t; t = t->next_[H_ID])
		if (t->hash_[H_ID] == h && ch_uuid_eq(&t->id, id))
			return t;
	return NULL;
}

static ch_topic *
find_collision(const struct ch_topics *reg, const char *name, size_t len)
{
	uint64_t h = norm_hash(name, len);
	for (ch_topic *t = reg->buckets[H_NORM][h & (reg->nbuckets - 1)]; t; t = t->next_[H_NORM])
		if (t->hash_[H_NORM] == h && t->name_len == len && norm_eq(t->name, name, len))
			return t;
	return NULL;
}

/* ---- topics ---- */

static int
kv_cmp(const void *a, const void *b)
{
	return strcmp(((const ch_topic_kv *)a)->key, ((const ch_topic_kv *)b)->key);
}

static ch_topic_kv *
kv_copy(const ch_topic_kv *kv, size_t n)
{
	if (n == 0)
		return NULL;
	ch_topic_kv *c = ch_xcalloc(n, sizeof(*c));
	for (size_t i = 0; i < n; i++) {
		c[i].key = ch_xstrdup(kv[i].key);
		c[i].value = ch_xstrdup(kv[i].value ? kv[i].value : "");
	}
	qsort(c, n, sizeof(*c), kv_cmp);
	return c;
}

static void
kv_free(ch_topic_kv *kv, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

static ch_topic *
topic_new(const char *name, size_t len, const ch_uuid *id, int32_t partitions)
{
	ch_topic *t = ch_xcalloc(1, sizeof(*t));
	t->name = ch_xstrndup(name, len);
	t->name_len = len;
	t->id = *id;
	t->partitions = partitions;
	t->internal = ch_topic_name_is_internal(name, len);
	t->hash_[H_NAME] = ch_hash_bytes(name, len);
	t->hash_[H_ID] = ch_hash_bytes(id->b, sizeof(id->b));
	t->hash_[H_NORM] = norm_hash(name, len);
	return t;
}

static void
topic_free(ch_topic *t)
{
	if (!t)
		return;
	kv_free(t->configs, t->n_configs);
	free(t->name);
	free(t);
}

bool
ch_topic_name_is_internal(const char *name, size_t len)
{
	return (len == strlen(CH_CONSUMER_OFFSETS_TOPIC) &&
		memcmp(name, CH_CONSUMER_OFFSETS_TOPIC, len) == 0) ||
	       (len == strlen(CH_TRANSACTION_STATE_TOPIC) &&
		memcmp(name, CH_TRANSACTION_STATE_TOPIC, len) == 0);
}

int16_t
ch_topic_name_validate(const char *name, size_t len, char *msg, size_t msglen)
{
	if (len == 0) {
		msgf(msg, msglen, "Topic name is illegal, it can't be empty");
		return CH_TOPIC_ERR_INVALID_TOPIC_EXCEPTION;
	}
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.')) {
		msgf(msg, msglen, "Topic name cannot be \".\" or \"..\"");
		return CH_TOPIC_ERR_INVALID_TOPIC_EXCEPTION;
	}
	if (len > CH_TOPIC_NAME_MAX) {
		msgf(msg, msglen, "Topic name is illegal, it can't be longer than %d characters, "
		     "topic name: %.*s", CH_TOPIC_NAME_MAX, (int)CH_MIN(len, 300), name);
		return CH_TOPIC_ERR_INVALID_TOPIC_EXCEPTION;
	}
	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-')) {
			/* Quote only the printable part: the name is untrusted. */
			char safe[CH_TOPIC_NAME_MAX + 1];
			for (size_t j = 0; j < len; j++)
				safe[j] = name[j] >= 0x20 && name[j] < 0x7f ? name[j] : '?';
			safe[len] = '\0';
			msgf(msg, msglen, "Topic name \"%s\" is illegal, it contains a character "
			     "other than ASCII alphanumerics, '.', '_' and '-'", safe);
			return CH_TOPIC_ERR_INVALID_TOPIC_EXCEPTION;
		}
	}
	return CH_TOPIC_ERR_NONE;
}

/* ---- files (all through the ch_logfs file layer) ---- */

/* Crash-safe replace: tmp, fdatasync, rename over path, sync the directory.
 * @returns 0 or -errno, with err naming the step that failed. */
static int
write_atomic(ch_logfs *fs, const char *dir, const char *path, const char *tmp,
	     const void *data, size_t len, char *err, size_t errlen)
{
	int fd = fs->open(fs, tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		msgf(err, errlen, "cannot create %s: %s", tmp, strerror(-fd));
		return fd;
	}
	int r = ch_logfs_write_full(fs, fd, data, len, 0);
	if (r == 0)
		r = fs->fdatasync(fs, fd);
	int rc = fs->close(fs, fd);
	if (r == 0)
		r = rc;
	if (r < 0) {
		msgf(err, errlen, "cannot write %s: %s", tmp, strerror(-r));
		(void)fs->unlink(fs, tmp);
		return r;
	}
	if ((r = fs->rename(fs, tmp, path)) < 0) {
		msgf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(-r));
		(void)fs->unlink(fs, tmp);
		return r;
	}
	if ((r = fs->sync_dir(fs, dir)) < 0) {
		msgf(err, errlen, "cannot fsync directory %s: %s", dir, strerror(-r));
		return r;
	}
	return 0;
}

/* Whole file into memory (NUL-terminated, caller frees). @returns 0 or
 * -errno (-ENOENT when absent, -EFBIG beyond max). */
static int
read_file(ch_logfs *fs, const char *path, char **data, size_t *len, size_t max)
{
	int fd = fs->open(fs, path, O_RDONLY, 0);
	if (fd < 0)
		return fd;
	int64_t size = fs->fsize(fs, fd);
	if (size < 0 || (uint64_t)size > max) {
		fs->close(fs, fd);
		return size < 0 ? (int)size : -EFBIG;
	}
	char *buf = ch_xmalloc((size_t)size + 1);
	ssize_t n = fs->pread(fs, fd, buf, (size_t)size, 0);
	fs->close(fs, fd);
	if (n < 0) {
		free(buf);
		return (int)n;
	}
	buf[n] = '\0';
	*data = buf;
	*len = (size_t)n;
	return 0;
}

static int
mkdir_p(ch_logfs *fs, const char *dir, char *err, size_t errlen)
{
	char *p = ch_xstrdup(dir);
	for (char *s = p + 1; ; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		int r = fs->mkdir(fs, p, 0755);
		if (r < 0 && r != -EEXIST) {
			msgf(err, errlen, "cannot create data directory %s: %s", p, strerror(-r));
			free(p);
			return CH_ERR;
		}
		*s = c;
		if (c == '\0')
			break;
	}
	free(p);
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		msgf(err, errlen, "data directory %s is not a directory", dir);
		return CH_ERR;
	}
	return CH_OK;
}

/* ---- registry file ---- */

static void
put_escaped(ch_buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p > ' ' && *p < 0x7f && *p != '%') {
			ch_buf_append(b, p, 1);
		} else {
			char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
			ch_buf_append(b, e, 3);
		}
	}
}

static void
put_str(ch_buf *b, const char *s)
{
	ch_buf_append(b, s, strlen(s));
}

static void
serialize(const struct ch_topics *reg, ch_buf *b)
{
	char line[128];
	snprintf(line, sizeof(line), "cohort-topics %d\ntopics %zu\n", TOPICS_VERSION, reg->n);
	put_str(b, line);
	for (size_t i = 0; i < reg->n; i++) {
		const ch_topic *t = reg->sorted[i];
		char id[CH_UUID_STR_LEN + 1];
		ch_uuid_to_base64(&t->id, id);
		snprintf(line, sizeof(line), "topic %s %" PRId32 " %d %zu ", id, t->partitions,
			 t->internal ? 1 : 0, t->n_configs);
		put_str(b, line);
		put_str(b, t->name); /* validated: [a-zA-Z0-9._-] only */
		put_str(b, "\n");
		for (size_t k = 0; k < t->n_configs; k++) {
			put_str(b, "config ");
			put_escaped(b, t->configs[k].key);
			put_str(b, " ");
			put_escaped(b, t->configs[k].value);
			put_str(b, "\n");
		}
	}
	uint32_t crc = ch_crc32c(0, b->data, b->len);
	snprintf(line, sizeof(line), "end %08" PRIx32 "\n", crc);
	put_str(b, line);
}

static int
persist(struct ch_topics *reg, char *err, size_t errlen)
{
	ch_buf b;
	ch_buf_init(&b);
	serialize(reg, &b);
	int rc = CH_ERR;
	if (!ch_buf_ok(&b))
		msgf(err, errlen, "out of memory serializing the topic registry");
	else
		rc = write_atomic(reg->fs, reg->dir, reg->path, reg->tmp_path, b.data, b.len, err,
				  errlen) == 0 ? CH_OK : CH_ERR;
	ch_buf_free(&b);
	return rc;
}

/* Reports a failed persist as the Kafka error for the request. */
static int16_t
persist_or_fail(struct ch_topics *reg, char *msg, size_t msglen)
{
	char err[512];
	if (persist(reg, err, sizeof(err)) == CH_OK)
		return CH_TOPIC_ERR_NONE;
	CH_LOGE("meta", "failed to persist the topic registry: %s", err);
	msgf(msg, msglen, "failed to persist the topic registry: %s", err);
	return CH_TOPIC_ERR_KAFKA_STORAGE_ERROR;
}

/* A line being parsed: strict single-space-separated tokens. */
typedef struct cursor {
	const char *p, *end; /* the rest of the current line */
} cursor;

static bool
next_token(cursor *c, const char **tok, size_t *len, bool last)
{
	const char *s = c->p;
	const char *e = last ? c->end : memchr(s, ' ', (size_t)(c->end - s));
	if (!e)
		return false;
	*tok = s;
	*len = (size_t)(e - s);
	c->p = e < c->end ? e + 1 : e;
	return true;
}

static bool
tok_is(const char *tok, size_t len, const char *want)
{
	return len == strlen(want) && memcmp(tok, want, len) == 0;
}

static bool
tok_u64(const char *tok, size_t len, uint64_t max, uint64_t *out)
{
	if (len == 0 || len > 19)
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		if (tok[i] < '0' || tok[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(tok[i] - '0');
	}
	if (v > max)
		return false;
	*out = v;
	return true;
}

static int
hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
		: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static char *
unescape_tok(const char *tok, size_t len)
{
	char *out = ch_xmalloc(len + 1);
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		if (tok[i] == '%') {
			if (i + 2 >= len)
				goto bad;
			int h = hexval(tok[i + 1]), l = hexval(tok[i + 2]);
			if (h < 0 || l < 0 || (h == 0 && l == 0))
				goto bad;
			out[o++] = (char)(h << 4 | l);
			i += 2;
		} else if ((unsigned char)tok[i] <= ' ' || (unsigned char)tok[i] >= 0x7f) {
			goto bad;
		} else {
			out[o++] = tok[i];
		}
	}
	out[o] = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

static int
load_registry(struct ch_topics *reg, char *err, size_t errlen)
{
	char *data;
	size_t len;
	int r = read_file(reg->fs, reg->path, &data, &len, REGISTRY_MAX_BYTES);
	if (r < 0) {
		msgf(err, errlen, "cannot read topic registry %s: %s", reg->path, strerror(-r));
		return CH_ERR;
	}
	const char *why = NULL;
	int lineno = 0;
	char whybuf[128];

	/* The end record and checksum first: a torn or damaged file fails here. */
	if (len == 0 || data[len - 1] != '\n') {
		why = "truncated (the file does not end with a complete end record)";
		goto corrupt;
	}
	size_t last = len - 1;
	while (last > 0 && data[last - 1] != '\n')
		last--;
	uint64_t crc;
	if (len - last != 13 || memcmp(data + last, "end ", 4) != 0) {
		why = "truncated (no end record)";
		goto corrupt;
	}
	crc = 0;
	for (size_t i = 0; i < 8; i++) {
		int h = hexval(data[last + 4 + i]);
		if (h < 0) {
			why = "malformed end record";
			goto corrupt;
		}
		crc = crc << 4 | (unsigned)h;
	}
	if ((uint32_t)crc != ch_crc32c(0, data, last)) {
		why = "checksum mismatch";
		goto corrupt;
	}

	cursor c;
	const char *lp = data;
	const char *tok;
	size_t tl;
	uint64_t ntopics = 0;
#define NEXT_LINE()                                                          \
	do {                                                                 \
		if (lp >= data + last) {                                     \
			why = "unexpected end of records";                   \
			goto corrupt;                                        \
		}                                                            \
		const char *nl_ = memchr(lp, '\n', (size_t)(data + last - lp)); \
		c.p = lp;                                                    \
		c.end = nl_;                                                 \
		lp = nl_ + 1;                                                \
		lineno++;                                                    \
	} while (0)

	NEXT_LINE();
	if (!next_token(&c, &tok, &tl, false) || !tok_is(tok, tl, "cohort-topics")) {
		why = "not a cohort topic registry (bad magic)";
		goto corrupt;
	}
	next_token(&c, &tok, &tl, true);
	if (!tok_is(tok, tl, "1")) {
		snprintf(whybuf, sizeof(whybuf), "unsupported version '%.*s' (this cohortd reads 1)",
			 (int)CH_MIN(tl, 20), tok);
		why = whybuf;
		goto corrupt;
	}
	NEXT_LINE();
	if (!next_token(&c, &tok, &tl, false) || !tok_is(tok, tl, "topics") ||
	    !next_token(&c, &tok, &tl, true) || !tok_u64(tok, tl, 10000000, &ntopics)) {
		why = "bad topics record";
		goto corrupt;
	}
	for (uint64_t i = 0; i < ntopics; i++) {
		uint64_t parts, internal, nconf;
		ch_uuid id;
		char idbuf[CH_UUID_STR_LEN + 1];
		NEXT_LINE();
		if (!next_token(&c, &tok, &tl, false) || !tok_is(tok, tl, "topic") ||
		    !next_token(&c, &tok, &tl, false) || tl != CH_UUID_STR_LEN) {
			why = "bad topic record";
			goto corrupt;
		}
		memcpy(idbuf, tok, tl);
		idbuf[tl] = '\0';
		if (ch_uuid_from_base64(idbuf, &id) != 0 || ch_uuid_is_zero(&id)) {
			why = "bad topic id";
			goto corrupt;
		}
		if (!next_token(&c, &tok, &tl, false) || !tok_u64(tok, tl, INT32_MAX, &parts) ||
		    parts < 1 || !next_token(&c, &tok, &tl, false) ||
		    !tok_u64(tok, tl, 1, &internal) || !next_token(&c, &tok, &tl, false) ||
		    !tok_u64(tok, tl, CONFIGS_PER_TOPIC_MAX, &nconf) ||
		    !next_token(&c, &tok, &tl, true)) {
			why = "bad topic record";
			goto corrupt;
		}
		if (ch_topic_name_validate(tok, tl, NULL, 0) != 0) {
			why = "invalid topic name";
			goto corrupt;
		}
		if (find_name(reg, tok, tl) || find_id(reg, &id)) {
			why = "duplicate topic name or id";
			goto corrupt;
		}
		ch_topic *t = topic_new(tok, tl, &id, (int32_t)parts);
		t->internal = internal != 0;
		t->configs = nconf ? ch_xcalloc(nconf, sizeof(ch_topic_kv)) : NULL;
		index_add(reg, t);
		for (uint64_t k = 0; k < nconf; k++) {
			const char *ktok, *vtok;
			size_t kl, vl;
			NEXT_LINE();
			if (!next_token(&c, &tok, &tl, false) || !tok_is(tok, tl, "config") ||
			    !next_token(&c, &ktok, &kl, false) || !next_token(&c, &vtok, &vl, true) ||
			    kl == 0) {
				why = "bad config record";
				goto corrupt;
			}
			char *key = unescape_tok(ktok, kl), *val = unescape_tok(vtok, vl);
			if (!key || !val) {
				free(key);
				free(val);
				why = "bad escape in config record";
				goto corrupt;
			}
			t->configs[k].key = key;
			t->configs[k].value = val;
			t->n_configs++;
		}
	}
	if (lp != data + last) {
		why = "records after the last topic";
		goto corrupt;
	}
#undef NEXT_LINE
	free(data);
	return CH_OK;

corrupt:
	if (lineno > 0)
		msgf(err, errlen, "corrupt topic registry %s: line %d: %s", reg->path, lineno, why);
	else
		msgf(err, errlen, "corrupt topic registry %s: %s", reg->path, why);
	free(data);
	return CH_ERR;
}

/* ---- meta.properties ---- */

int
ch_meta_properties_ensure(ch_logfs *fs, const char *dir, int32_t node_id, char *cluster_id,
			  size_t cluster_id_len, char *err, size_t errlen)
{
	if (!fs)
		fs = ch_logfs_posix();
	char *path = path_join(dir, CH_META_PROPERTIES_FILE);
	char *data = NULL;
	size_t len;
	int rc = CH_ERR;

	int r = read_file(fs, path, &data, &len, 1u << 20);
	if (r < 0) {
		if (r != -ENOENT) {
			msgf(err, errlen, "cannot read %s: %s", path, strerror(-r));
			goto out;
		}
		/* First start: a new cluster. */
		ch_uuid cid = ch_uuid_random(), did = ch_uuid_random();
		char cs[CH_UUID_STR_LEN + 1], ds[CH_UUID_STR_LEN + 1], text[256];
		ch_uuid_to_base64(&cid, cs);
		ch_uuid_to_base64(&did, ds);
		int n = snprintf(text, sizeof(text),
				 "#\n#Written by cohortd. Do not edit.\n"
				 "node.id=%" PRId32 "\ndirectory.id=%s\nversion=1\ncluster.id=%s\n",
				 node_id, ds, cs);
		char *tmp = path_join(dir, CH_META_PROPERTIES_FILE ".tmp");
		rc = write_atomic(fs, dir, path, tmp, text, (size_t)n, err, errlen) == 0 ? CH_OK
										 : CH_ERR;
		free(tmp);
		if (rc == CH_OK) {
			snprintf(cluster_id, cluster_id_len, "%s", cs);
			CH_LOGI("meta", "formatted %s: cluster.id %s, node.id %d", dir, cs, node_id);
		}
		goto out;
	}

	char *version = NULL, *nid = NULL, *cid = NULL;
	for (char *line = data, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		size_t l = strlen(line);
		while (l > 0 && (line[l - 1] == '\r' || line[l - 1] == ' ' || line[l - 1] == '\t'))
			line[--l] = '\0';
		while (*line == ' ' || *line == '\t')
			line++;
		if (*line == '#' || *line == '!' || *line == '\0')
			continue;
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		char *v = eq + 1, *k_end = eq;
		while (k_end > line && (k_end[-1] == ' ' || k_end[-1] == '\t'))
			k_end--;
		*k_end = '\0';
		while (*v == ' ' || *v == '\t')
			v++;
		if (strcmp(line, "version") == 0)
			version = v;
		else if (strcmp(line, "node.id") == 0)
			nid = v;
		else if (strcmp(line, "cluster.id") == 0)
			cid = v;
	}
	if (!version || strcmp(version, "1") != 0) {
		msgf(err, errlen, "%s: unsupported or missing version '%s' (expected 1)", path,
		     version ? version : "");
		goto out;
	}
	ch_uuid u;
	if (!cid || ch_uuid_from_base64(cid, &u) != 0) {
		msgf(err, errlen, "%s: missing or invalid cluster.id", path);
		goto out;
	}
	char *end = NULL;
	long long stored = nid ? strtoll(nid, &end, 10) : -1;
	if (!nid || *nid == '\0' || *end != '\0') {
		msgf(err, errlen, "%s: missing or invalid node.id", path);
		goto out;
	}
	if (stored != node_id) {
		msgf(err, errlen, "configured node.id %" PRId32 " doesn't match node.id %lld "
		     "stored in %s. If you moved your data, make sure your configured node.id "
		     "matches; to create a new node, remove all data in the data directory",
		     node_id, stored, path);
		goto out;
	}
	snprintf(cluster_id, cluster_id_len, "%s", cid);
	rc = CH_OK;
out:
	free(data);
	free(path);
	return rc;
}

/* ---- open / close ---- */

static int
file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

int
ch_topics_open(struct ch_topics **out, const struct ch_config *cfg, char *err, size_t errlen)
{
	return ch_topics_open_fs(out, cfg, NULL, err, errlen);
}

int
ch_topics_open_fs(struct ch_topics **out, const struct ch_config *cfg, ch_logfs *fs, char *err,
		  size_t errlen)
{
	*out = NULL;
	struct ch_topics *reg = ch_xcalloc(1, sizeof(*reg));
	reg->cfg = cfg;
	reg->fs = fs ? fs : ch_logfs_posix();
	reg->dir = ch_xstrdup(cfg->log_dir);
	reg->path = path_join(reg->dir, CH_TOPICS_FILE);
	reg->tmp_path = path_join(reg->dir, CH_TOPICS_FILE ".tmp");
	reg->lock_fd = -1;
	rehash(reg, 16);

	if (mkdir_p(reg->fs, reg->dir, err, errlen) != CH_OK)
		goto fail;
	char *lock = path_join(reg->dir, ".lock");
	reg->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (reg->lock_fd < 0 || flock(reg->lock_fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EWOULDBLOCK)
			msgf(err, errlen, "data directory %s is in use by another process (lock %s)",
			     reg->dir, lock);
		else
			msgf(err, errlen, "cannot lock %s: %s", lock, strerror(errno));
		free(lock);
		goto fail;
	}
	free(lock);

	/* A leftover from a write that never reached rename: the old file is
	 * the truth. */
	char *mtmp = path_join(reg->dir, CH_META_PROPERTIES_FILE ".tmp");
	const char *tmps[] = {reg->tmp_path, mtmp};
	for (size_t i = 0; i < 2; i++) {
		if (reg->fs->unlink(reg->fs, tmps[i]) == 0)
			CH_LOGW("meta", "removed %s left by an interrupted write", tmps[i]);
	}
	free(mtmp);

	char *meta = path_join(reg->dir, CH_META_PROPERTIES_FILE);
	bool formatted = file_exists(meta);
	free(meta);
	if (file_exists(reg->path)) {
		if (load_registry(reg, err, errlen) != CH_OK)
			goto fail;
	} else if (formatted) {
		msgf(err, errlen, "topic registry %s is missing but %s/%s exists; refusing to "
		     "start with no topics", reg->path, reg->dir, CH_META_PROPERTIES_FILE);
		goto fail;
	} else if (persist(reg, err, errlen) != CH_OK) {
		/* Written before meta.properties, so a formatted dir always has one. */
		goto fail;
	}
	if (ch_meta_properties_ensure(reg->fs, reg->dir, cfg->node_id, reg->cluster_id,
				      sizeof(reg->cluster_id), err, errlen) != CH_OK)
		goto fail;
	CH_LOGI("meta", "loaded %zu topics from %s", reg->n, reg->path);
	*out = reg;
	return CH_OK;
fail:
	ch_topics_close(reg);
	return CH_ERR;
}

void
ch_topics_close(struct ch_topics *reg)
{
	if (!reg)
		return;
	for (size_t i = 0; i < reg->n; i++)
		topic_free(reg->sorted[i]);
	for (int k = 0; k < H_COUNT; k++)
		free(reg->buckets[k]);
	free(reg->sorted);
	if (reg->lock_fd >= 0)
		close(reg->lock_fd); /* releases the flock */
	free(reg->dir);
	free(reg->path);
	free(reg->tmp_path);
	free(reg);
}

const char *
ch_topics_cluster_id(const struct ch_topics *reg)
{
	return reg->cluster_id;
}

const char *
ch_topics_dir(const struct ch_topics *reg)
{
	return reg->dir;
}

/* ---- queries ---- */

const ch_topic *
ch_topics_find(const struct ch_topics *reg, const char *name, size_t len)
{
	return len <= CH_TOPIC_NAME_MAX ? find_name(reg, name, len) : NULL;
}

const ch_topic *
ch_topics_find_id(const struct ch_topics *reg, const ch_uuid *id)
{
	return find_id(reg, id);
}

size_t
ch_topics_count(const struct ch_topics *reg)
{
	return reg->n;
}

const ch_topic *
ch_topics_at(const struct ch_topics *reg, size_t i)
{
	return i < reg->n ? reg->sorted[i] : NULL;
}

/* ---- changes ---- */

static int16_t
check_configs(const ch_topic_kv *configs, size_t n, char *msg, size_t msglen)
{
	if (n > CONFIGS_PER_TOPIC_MAX) {
		msgf(msg, msglen, "too many topic configs (%zu)", n);
		return CH_TOPIC_ERR_INVALID_CONFIG;
	}
	if (ch_topic_configs_validate(configs, n, msg, msglen) != CH_OK)
		return CH_TOPIC_ERR_INVALID_CONFIG;
	return CH_TOPIC_ERR_NONE;
}

int16_t
ch_topics_create(struct ch_topics *reg, const char *name, size_t len, int32_t partitions,
		 const ch_topic_kv *configs, size_t n_configs, bool validate_only,
		 const ch_topic **out, char *msg, size_t msglen)
{
	int16_t ec;
	msgf(msg, msglen, "%s", "");
	if (out)
		*out = NULL;
	if ((ec = ch_topic_name_validate(name, len, msg, msglen)) != 0)
		return ec;
	if (find_name(reg, name, len)) {
		msgf(msg, msglen, "Topic '%.*s' already exists.", (int)len, name);
		return CH_TOPIC_ERR_TOPIC_ALREADY_EXISTS;
	}
	const ch_topic *other = find_collision(reg, name, len);
	if (other) {
		msgf(msg, msglen, "Topic '%.*s' collides with existing topic: %s", (int)len, name,
		     other->name);
		return CH_TOPIC_ERR_INVALID_TOPIC_EXCEPTION;
	}
	if (partitions == -1)
		partitions = reg->cfg->num_partitions;
	if (partitions < 1) {
		msgf(msg, msglen, "Number of partitions was set to an invalid non-positive value.");
		return CH_TOPIC_ERR_INVALID_PARTITIONS;
	}
	if (partitions > CH_TOPIC_PARTITIONS_MAX) {
		msgf(msg, msglen, "Number of partitions %" PRId32 " exceeds cohort's limit of %d "
		     "per topic.", partitions, CH_TOPIC_PARTITIONS_MAX);
		return CH_TOPIC_ERR_INVALID_PARTITIONS;
	}
	if ((ec = check_configs(configs, n_configs, msg, msglen)) != 0)
		return ec;
	if (validate_only)
		return CH_TOPIC_ERR_NONE;

	ch_uuid id;
	do
		id = ch_uuid_random();
	while (find_id(reg, &id));
	ch_topic *t = topic_new(name, len, &id, partitions);
	t->configs = kv_copy(configs, n_configs);
	t->n_configs = n_configs;
	index_add(reg, t);
	if ((ec = persist_or_fail(reg, msg, msglen)) != 0) {
		index_remove(reg, t);
		topic_free(t);
		return ec;
	}
	char ids[CH_UUID_STR_LEN + 1];
	ch_uuid_to_base64(&id, ids);
	CH_LOGI("meta", "created topic %s (id %s, %d partitions)", t->name, ids, partitions);
	if (out)
		*out = t;
	return CH_TOPIC_ERR_NONE;
}

int16_t
ch_topics_ensure_offsets_topic(struct ch_topics *reg, const ch_topic **out, char *msg,
			       size_t msglen)
{
	const char *name = CH_CONSUMER_OFFSETS_TOPIC;
	const ch_topic *t = find_name(reg, name, strlen(name));
	if (t) {
		if (out)
			*out = t;
		msgf(msg, msglen, "%s", "");
		return CH_TOPIC_ERR_NONE;
	}
	char seg[16];
	snprintf(seg, sizeof(seg), "%" PRId32, reg->cfg->offsets_topic_segment_bytes);
	/* GroupCoordinator.offsetsTopicConfigs in Kafka. */
	ch_topic_kv kv[] = {
		{(char *)"cleanup.policy", (char *)"compact"},
		{(char *)"compression.type", (char *)"producer"},
		{(char *)"segment.bytes", seg},
	};
	return ch_topics_create(reg, name, strlen(name), reg->cfg->offsets_topic_num_partitions,
				kv, CH_ARRAY_LEN(kv), false, out, msg, msglen);
}

static int16_t
delete_topic(struct ch_topics *reg, ch_topic *t, char *msg, size_t msglen)
{
	if (!reg->cfg->delete_topic_enable) {
		msgf(msg, msglen, "Topic deletion is disabled.");
		return CH_TOPIC_ERR_TOPIC_DELETION_DISABLED;
	}
	index_remove(reg, t);
	int16_t ec = persist_or_fail(reg, msg, msglen);
	if (ec != 0) {
		index_add(reg, t);
		return ec;
	}
	CH_LOGI("meta", "deleted topic %s", t->name);
	topic_free(t);
	return CH_TOPIC_ERR_NONE;
}

int16_t
ch_topics_delete(struct ch_topics *reg, const char *name, size_t len, char *msg, size_t msglen)
{
	msgf(msg, msglen, "%s", "");
	ch_topic *t = len <= CH_TOPIC_NAME_MAX ? find_name(reg, name, len) : NULL;
	if (!t) {
		msgf(msg, msglen, "This server does not host this topic-partition.");
		return CH_TOPIC_ERR_UNKNOWN_TOPIC_OR_PARTITION;
	}
	return delete_topic(reg, t, msg, msglen);
}

int16_t
ch_topics_delete_id(struct ch_topics *reg, const ch_uuid *id, char *msg, size_t msglen)
{
	msgf(msg, msglen, "%s", "");
	ch_topic *t = find_id(reg, id);
	if (!t) {
		msgf(msg, msglen, "This server does not host this topic ID.");
		return CH_TOPIC_ERR_UNKNOWN_TOPIC_ID;
	}
	return delete_topic(reg, t, msg, msglen);
}

int16_t
ch_topics_add_partitions(struct ch_topics *reg, const char *name, size_t len, int32_t total,
			 bool validate_only, char *msg, size_t msglen)
{
	msgf(msg, msglen, "%s", "");
	ch_topic *t = len <= CH_TOPIC_NAME_MAX ? find_name(reg, name, len) : NULL;
	if (!t) {
		msgf(msg, msglen, "This server does not host this topic-partition.");
		return CH_TOPIC_ERR_UNKNOWN_TOPIC_OR_PARTITION;
	}
	if (total < t->partitions) {
		msgf(msg, msglen, "The topic %s currently has %" PRId32 " partition(s); %" PRId32
		     " would not be an increase.", t->name, t->partitions, total);
		return CH_TOPIC_ERR_INVALID_PARTITIONS;
	}
	if (total == t->partitions) {
		msgf(msg, msglen, "Topic already has %" PRId32 " partition(s).", t->partitions);
		return CH_TOPIC_ERR_INVALID_PARTITIONS;
	}
	if (total > CH_TOPIC_PARTITIONS_MAX) {
		msgf(msg, msglen, "Number of partitions %" PRId32 " exceeds cohort's limit of %d "
		     "per topic.", total, CH_TOPIC_PARTITIONS_MAX);
		return CH_TOPIC_ERR_INVALID_PARTITIONS;
	}
	if (validate_only)
		return CH_TOPIC_ERR_NONE;
	int32_t old = t->partitions;
	t->partitions = total;
	int16_t ec = persist_or_fail(reg, msg, msglen);
	if (ec != 0) {
		t->partitions = old;
		return ec;
	}
	CH_LOGI("meta", "topic %s: %d -> %d partitions", t->name, old, total);
	return CH_TOPIC_ERR_NONE;
}

int16_t
ch_topics_alter_configs(struct ch_topics *reg, const char *name, size_t len,
			const ch_topic_kv *configs, size_t n_configs, bool validate_only,
			char *msg, size_t msglen)
{
	msgf(msg, msglen, "%s", "");
	ch_topic *t = len <= CH_TOPIC_NAME_MAX ? find_name(reg, name, len) : NULL;
	if (!t) {
		msgf(msg, msglen, "This server does not host this topic-partition.");
		return CH_TOPIC_ERR_UNKNOWN_TOPIC_OR_PARTITION;
	}
	int16_t ec = check_configs(configs, n_configs, msg, msglen);
	if (ec != 0 || validate_only)
		return ec;
	ch_topic_kv *old = t->configs;
	size_t nold = t->n_configs;
	t->configs = kv_copy(configs, n_configs);
	t->n_configs = n_configs;
	if ((ec = persist_or_fail(reg, msg, msglen)) != 0) {
		kv_free(t->configs, t->n_configs);
		t->configs = old;
		t->n_configs = nold;
		return ec;
	}
	kv_free(old, nold);
	return CH_TOPIC_ERR_NONE;
}
