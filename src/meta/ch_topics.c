/*
 * ch_topics.c: the topic registry, its file and meta.properties.
 *
 * The topics: three ch_maps (by name, by id, by "collision name", '.' read
 * as '_' as Kafka's Topic.hasCollision does) and a pointer array in name
 * order. Topic objects never change: a change makes a new version.
 *
 * A staged change is applied to the indexes at once and recorded as an
 * (old, new) pair in its transaction, so later requests (on the same
 * connection too) see it; the replaced version stays alive until the
 * transaction is durable, to undo it if the write fails. A write covers
 * every transaction committed when it starts (group commit): the file is
 * the indexes serialized on the loop thread, the worker writes the bytes.
 * The file format is documented in ch_topics.h.
 */
#include "meta/ch_topics.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
#include "common/ch_map.h"

#define REGISTRY_MAX_BYTES (256u << 20)
#define CONFIGS_PER_TOPIC_MAX 1000

/* A broker config layer (CH_CONFIG_LAYER_*): explicit entries, sorted. */
typedef struct blayer {
	ch_topic_kv *kv;
	size_t n;
} blayer;

typedef struct change {
	ch_topic *old; /* the version it replaced; NULL: a new topic */
	ch_topic *neu; /* the new version; NULL: deleted */
	int layer;     /* >= 0: a broker config layer replaced (old, neu NULL) */
	blayer was;    /* what it held before */
} change;

struct ch_topics_txn {
	struct ch_topics *reg;
	ch_topics_txn *prev, *next; /* reg's list, oldest first */
	bool committed;
	bool in_write; /* covered by the write now running */
	change *ch;
	size_t n, cap;
	ch_topics_done_fn done;
	void *ud;
};

struct ch_topics {
	struct ch_config *cfg; /* its dynamic layers are the broker configs here */
	ch_logfs *fs;          /* the file layer (tests inject faults under it) */
	char *dir;
	char *path;     /* DIR/cohort-topics.meta */
	char *tmp_path; /* DIR/cohort-topics.meta.tmp */
	int lock_fd;
	char cluster_id[64];
	ch_map by_name, by_id, by_norm;
	uint64_t changes;  /* topics added or removed from the index (ch_topics_changes) */
	blayer broker[2];  /* dynamic broker configs, by CH_CONFIG_LAYER_* */
	ch_topic **sorted; /* by name */
	size_t n, sorted_cap;
	ch_topics_exec exec;
	bool has_exec;
	ch_topics_txn *first, *last; /* not yet durable, oldest first */
	bool writing;                /* a write is with the worker */
	ch_buf file;                 /* its bytes */
	int write_rc;                /* its result: 0 or -errno */
	char write_err[300];
	bool used_reserve; /* it gave the reserve back to make room */
	/* Written by the write job (one at a time) and at open: */
	char *reserve_path; /* DIR/cohort-topics.reserve */
	int reserve_fd;     /* -1: none (could not be created) */
	int64_t reserve_size;
	int64_t file_size; /* of the registry file on disk */
};

/* ---- keys and the visible indexes ---- */

/* Kafka's collision name: '.' read as '_'. buf holds CH_TOPIC_NAME_MAX. */
static size_t
norm_name(const char *name, size_t len, char *buf)
{
	len = CH_MIN(len, (size_t)CH_TOPIC_NAME_MAX);
	for (size_t i = 0; i < len; i++)
		buf[i] = name[i] == '.' ? '_' : name[i];
	return len;
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

/* Makes t visible (no topic of that name, id or collision name is). */
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
	reg->changes++;
	char norm[CH_TOPIC_NAME_MAX];
	ch_map_put(&reg->by_name, t->name, t->name_len, t);
	ch_map_put(&reg->by_id, t->id.b, sizeof(t->id.b), t);
	ch_map_put(&reg->by_norm, norm, norm_name(t->name, t->name_len, norm), t);
}

/* Takes t out of the three maps and the sorted array; t must be visible. It is not freed. */
static void
index_remove(struct ch_topics *reg, ch_topic *t)
{
	char norm[CH_TOPIC_NAME_MAX];
	ch_map_remove(&reg->by_name, t->name, t->name_len);
	ch_map_remove(&reg->by_id, t->id.b, sizeof(t->id.b));
	ch_map_remove(&reg->by_norm, norm, norm_name(t->name, t->name_len, norm));
	bool found;
	size_t pos = sorted_pos(reg, t->name, &found);
	memmove(&reg->sorted[pos], &reg->sorted[pos + 1], (reg->n - pos - 1) * sizeof(ch_topic *));
	reg->n--;
	reg->changes++;
}

static ch_topic *
find_name(const struct ch_topics *reg, const char *name, size_t len)
{
	return len <= CH_TOPIC_NAME_MAX ? ch_map_get(&reg->by_name, name, len) : NULL;
}

static ch_topic *
find_id(const struct ch_topics *reg, const ch_uuid *id)
{
	return ch_map_get(&reg->by_id, id->b, sizeof(id->b));
}

static ch_topic *
find_collision(const struct ch_topics *reg, const char *name, size_t len)
{
	char norm[CH_TOPIC_NAME_MAX];
	return ch_map_get(&reg->by_norm, norm, norm_name(name, len, norm));
}

/* ---- topics ---- */

static int
kv_cmp(const void *a, const void *b)
{
	return strcmp(((const ch_topic_kv *)a)->key, ((const ch_topic_kv *)b)->key);
}

/* Deep copy of kv[0..n) sorted by key, a NULL value copied as ""; NULL when n is 0. Free with
 * kv_free. */
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

/* Frees the n entries' keys and values and the array itself (NULL when n is 0). */
static void
kv_free(ch_topic_kv *kv, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

/* A new topic (caller owns it; topic_free) named by a copy of [name, name+len), no configs,
 * internal by its name. */
static ch_topic *
topic_new(const char *name, size_t len, const ch_uuid *id, int32_t partitions)
{
	ch_topic *t = ch_xcalloc(1, sizeof(*t));
	t->name = ch_xstrndup(name, len);
	t->name_len = len;
	t->id = *id;
	t->partitions = partitions;
	t->internal = ch_topic_name_is_internal(name, len);
	return t;
}

/* A new version of t, to be changed before it is staged. */
static ch_topic *
topic_copy(const ch_topic *t)
{
	ch_topic *c = topic_new(t->name, t->name_len, &t->id, t->partitions);
	c->internal = t->internal;
	c->configs = kv_copy(t->configs, t->n_configs);
	c->n_configs = t->n_configs;
	return c;
}

/* Frees t with its name and configs; NULL does nothing. t must no longer be visible. */
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
		ch_errf(msg, msglen, "Topic name is invalid: the empty string is not allowed");
		return CH_KERR_INVALID_TOPIC_EXCEPTION;
	}
	if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.')) {
		ch_errf(msg, msglen, "Topic name is invalid: '%.*s' is not allowed", (int)len,
			name);
		return CH_KERR_INVALID_TOPIC_EXCEPTION;
	}
	if (len > CH_TOPIC_NAME_MAX) {
		ch_errf(msg, msglen,
			"Topic name is invalid: the length of '%.*s' is longer than the max "
			"allowed length %d",
			(int)CH_MIN(len, 300), name, CH_TOPIC_NAME_MAX);
		return CH_KERR_INVALID_TOPIC_EXCEPTION;
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
			ch_errf(msg, msglen,
				"Topic name is invalid: '%s' contains one or more characters "
				"other than ASCII alphanumerics, '.', '_' and '-'",
				safe);
			return CH_KERR_INVALID_TOPIC_EXCEPTION;
		}
	}
	return CH_KERR_NONE;
}

/* ---- files (all through the ch_logfs file layer) ---- */

/* Crash-safe replace: tmp, fdatasync, rename over path, sync the directory.
 * @returns 0 or -errno, with err naming the step that failed. */
static int
write_atomic(ch_logfs *fs, const char *dir, const char *path, const char *tmp, const void *data,
	     size_t len, char *err, size_t errlen)
{
	int fd = fs->open(fs, tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		ch_errf(err, errlen, "cannot create %s: %s", tmp, strerror(-fd));
		return fd;
	}
	int r = ch_logfs_write_full(fs, fd, data, len, 0);
	if (r == 0)
		r = fs->fdatasync(fs, fd);
	int rc = fs->close(fs, fd);
	if (r == 0)
		r = rc;
	if (r < 0) {
		ch_errf(err, errlen, "cannot write %s: %s", tmp, strerror(-r));
		(void)fs->unlink(fs, tmp);
		return r;
	}
	if ((r = fs->rename(fs, tmp, path)) < 0) {
		ch_errf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(-r));
		(void)fs->unlink(fs, tmp);
		return r;
	}
	if ((r = fs->sync_dir(fs, dir)) < 0) {
		ch_errf(err, errlen, "cannot fsync directory %s: %s", dir, strerror(-r));
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

/* Creates dir (non-empty) and its missing parents, mode 0755, through fs; CH_OK if dir is then a
 * directory (checked with stat, not fs). */
static int
mkdir_p(ch_logfs *fs, const char *dir, char *err, size_t errlen)
{
	char *p = ch_xstrdup(dir);
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		int r = fs->mkdir(fs, p, 0755);
		if (r < 0 && r != -EEXIST) {
			ch_errf(err, errlen, "cannot create data directory %s: %s", p,
				strerror(-r));
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
		ch_errf(err, errlen, "data directory %s is not a directory", dir);
		return CH_ERR;
	}
	return CH_OK;
}

/* ---- registry file ---- */

/* Appends s to b, each byte outside '!'..'~' and each '%' written as %xx (lower-case hex), as
 * unescape_tok reads it. */
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

/* Appends a "config KEY VALUE" line, both escaped, for each of kv[0..n). */
static void
put_configs(ch_buf *b, const ch_topic_kv *kv, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		put_str(b, "config ");
		put_escaped(b, kv[k].key);
		put_str(b, " ");
		put_escaped(b, kv[k].value);
		put_str(b, "\n");
	}
}

static const char *const layer_names[2] = {"broker", "default"};

/* Appends the whole registry file (format in ch_topics.h, version 2 only if a broker layer is
 * non-empty) to b; the caller checks ch_buf_ok. */
static void
serialize(const struct ch_topics *reg, ch_buf *b)
{
	char line[128];
	/* Version 2 only when it has broker configs: a registry without them
	 * stays readable by a cohortd that reads version 1. */
	bool brokers = reg->broker[0].n || reg->broker[1].n;
	snprintf(line, sizeof(line), "cohort-topics %d\ntopics %zu\n", brokers ? 2 : 1, reg->n);
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
		put_configs(b, t->configs, t->n_configs);
	}
	if (brokers) {
		put_str(b, "brokers 2\n");
		for (int l = 0; l < 2; l++) {
			snprintf(line, sizeof(line), "broker %s %zu\n", layer_names[l],
				 reg->broker[l].n);
			put_str(b, line);
			put_configs(b, reg->broker[l].kv, reg->broker[l].n);
		}
	}
	uint32_t crc = ch_crc32c(0, b->data, b->len);
	snprintf(line, sizeof(line), "end %08" PRIx32 "\n", crc);
	put_str(b, line);
}

/* Writes the registry as it is now (startup: no transaction, no worker). */
static int
persist_now(struct ch_topics *reg, char *err, size_t errlen)
{
	ch_buf b;
	ch_buf_init(&b);
	serialize(reg, &b);
	int rc = ch_buf_ok(&b) ? write_atomic(reg->fs, reg->dir, reg->path, reg->tmp_path, b.data,
					      b.len, err, errlen)
			       : -ENOMEM;
	if (rc == 0)
		reg->file_size = (int64_t)b.len;
	ch_buf_free(&b);
	return rc;
}

/* ---- transactions ---- */

/* Applies a change now and records it in t, to undo or confirm later. */
static void
txn_stage(ch_topics_txn *t, ch_topic *old, ch_topic *neu)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 4;
		t->ch = ch_xrealloc(t->ch, t->cap * sizeof(*t->ch));
	}
	t->ch[t->n++] = (change){old, neu, -1, {NULL, 0}};
	if (old)
		index_remove(t->reg, old);
	if (neu)
		index_add(t->reg, neu);
}

/* Makes a broker config layer the registry's and the config's. */
static void
layer_apply(struct ch_topics *reg, int layer, blayer l)
{
	char err[400];
	reg->broker[layer] = l;
	if (ch_config_set_dynamic(reg->cfg, layer, l.kv, l.n, err, sizeof(err)) != CH_OK)
		CH_LOGE("meta", "%s", err);
}

/* The write failed: t's changes are taken back, newest first. */
static void
txn_undo(ch_topics_txn *t)
{
	for (size_t i = t->n; i-- > 0;) {
		change *c = &t->ch[i];
		if (c->layer >= 0) {
			blayer l = t->reg->broker[c->layer];
			layer_apply(t->reg, c->layer, c->was);
			kv_free(l.kv, l.n);
			continue;
		}
		if (c->neu) {
			index_remove(t->reg, c->neu);
			topic_free(c->neu);
		}
		if (c->old)
			index_add(t->reg, c->old);
	}
}

/* Logs a change that became durable (topic created, deleted, resized or reconfigured, or a
 * broker config layer). */
static void
log_change(const change *c)
{
	char ids[CH_UUID_STR_LEN + 1];
	if (c->layer >= 0) {
		CH_LOGI("meta", "dynamic broker configs (%s) changed",
			c->layer == CH_CONFIG_LAYER_BROKER ? "this broker" : "cluster default");
	} else if (!c->old) {
		ch_uuid_to_base64(&c->neu->id, ids);
		CH_LOGI("meta", "created topic %s (id %s, %d partitions)", c->neu->name, ids,
			c->neu->partitions);
	} else if (!c->neu) {
		CH_LOGI("meta", "deleted topic %s", c->old->name);
	} else if (c->old->partitions != c->neu->partitions) {
		CH_LOGI("meta", "topic %s: %d -> %d partitions", c->neu->name, c->old->partitions,
			c->neu->partitions);
	} else {
		CH_LOGI("meta", "topic %s: %zu config override(s)", c->neu->name,
			c->neu->n_configs);
	}
}

/* Answers a transaction taken off the list, and frees it. */
static void
txn_done(ch_topics_txn *t, int16_t err, const char *msg)
{
	if (!err) {
		for (size_t i = 0; i < t->n; i++) {
			log_change(&t->ch[i]);
			topic_free(t->ch[i].old);
			kv_free(t->ch[i].was.kv, t->ch[i].was.n);
		}
	}
	if (t->done)
		t->done(t->ud, err, err ? msg : NULL);
	free(t->ch);
	free(t);
}

/* Takes the first transactions off the list, up to (not including) stop. */
static ch_topics_txn *
txn_detach(struct ch_topics *reg, ch_topics_txn *stop)
{
	ch_topics_txn *head = reg->first;
	if (head == stop)
		return NULL;
	ch_topics_txn *tail = stop ? stop->prev : reg->last;
	tail->next = NULL;
	reg->first = stop;
	if (stop)
		stop->prev = NULL;
	else
		reg->last = NULL;
	return head;
}

/* Answers with success the first transactions: those the finished write
 * covered, or (covered_only false) the committed ones. */
static void
txn_confirm(struct ch_topics *reg, bool covered_only)
{
	ch_topics_txn *stop = reg->first;
	while (stop && (covered_only ? stop->in_write : stop->committed))
		stop = stop->next;
	for (ch_topics_txn *t = txn_detach(reg, stop), *nx; t; t = nx) {
		nx = t->next;
		txn_done(t, CH_KERR_NONE, NULL);
	}
}

static void txn_kick(struct ch_topics *reg);

/* The write is over. Success: the transactions it covered are durable.
 * Failure: every transaction not yet durable is undone, newest first (the
 * later ones were validated on top of the failed ones), and fails. Callbacks
 * run after the list is settled (they may begin new transactions). */
static void
txn_written(void *arg)
{
	struct ch_topics *reg = arg;
	reg->writing = false;
	ch_buf_reset(&reg->file);
	if (reg->used_reserve)
		CH_LOGW("meta",
			"disk full in %s: the topic registry was written into its reserved "
			"space%s",
			reg->dir, reg->write_rc == 0 ? "" : ", and still failed");
	if (reg->write_rc == 0) {
		txn_confirm(reg, true);
		txn_kick(reg);
		return;
	}
	CH_LOGE("meta", "failed to persist the topic registry: %s", reg->write_err);
	for (ch_topics_txn *t = reg->last; t; t = t->prev)
		txn_undo(t);
	char msg[400];
	snprintf(msg, sizeof(msg), "failed to persist the topic registry: %s", reg->write_err);
	for (ch_topics_txn *t = txn_detach(reg, NULL), *nx; t; t = nx) {
		nx = t->next;
		txn_done(t, CH_KERR_KAFKA_STORAGE_ERROR,
			 t->in_write ? msg
				     : "an earlier change to the topic registry failed to persist");
	}
}

/*
 * THE RESERVE. On a full disk a topic must still be deletable: deleting is
 * how an operator frees space, and it needs a new copy of the registry
 * first. Recording deletions without new space was the other choice
 * (overwriting a flag in the old file, or deleting the partition data
 * first); it is not sound: an in-place overwrite needs new blocks on
 * copy-on-write file systems and breaks the atomic replace, and data gone
 * before the registry says so leaves a listed topic without its data when
 * the write then fails. So cohort-topics.reserve holds allocated blocks,
 * at least the size of the registry plus slack (reserve_target). A write
 * that does not make the registry bigger (a deletion, mostly) and fails
 * with ENOSPC gives the reserve back and tries once more: the space it
 * frees holds the new copy. A write that makes the registry bigger first
 * grows the reserve to match, or fails (KAFKA_STORAGE_ERROR) on a full
 * disk, so the reserve always covers the next rewrite. A reserve given
 * back or short is grown again, best effort, at the start of every write
 * (the deleted topic's data is gone by then) and at open.
 */
#define RESERVE_SLACK (64 << 10)

static int64_t
reserve_target(int64_t size)
{
	return (size + 2 * RESERVE_SLACK - 1) / RESERVE_SLACK * RESERVE_SLACK;
}

/* Grows the reserve to want bytes: 0 or -errno (what was allocated stays). */
static int
reserve_grow(struct ch_topics *reg, int64_t want)
{
	if (reg->reserve_fd < 0 || reg->reserve_size >= want)
		return 0;
	int r = ch_logfs_allocate(reg->fs, reg->reserve_fd, want);
	if (r == 0)
		r = reg->fs->fdatasync(reg->fs, reg->reserve_fd);
	int64_t got = reg->fs->fsize(reg->fs, reg->reserve_fd);
	reg->reserve_size = got >= 0 ? got : 0;
	return r;
}

/* Worker thread: writes the serialized registry (see THE RESERVE). Touches
 * only reg->file, the result and reserve fields and the (immutable) paths
 * and file layer. */
static void
txn_write(void *arg)
{
	struct ch_topics *reg = arg;
	int64_t size = (int64_t)reg->file.len;
	bool grows = size > reg->file_size;
	reg->used_reserve = false;
	int r = reserve_grow(reg, reserve_target(size));
	if (r < 0 && grows) {
		ch_errf(reg->write_err, sizeof(reg->write_err),
			"cannot reserve space for the registry's next rewrite in %s: %s", reg->dir,
			strerror(-r));
		reg->write_rc = r;
		return;
	}
	r = write_atomic(reg->fs, reg->dir, reg->path, reg->tmp_path, reg->file.data, reg->file.len,
			 reg->write_err, sizeof(reg->write_err));
	if (r == -ENOSPC && !grows && reg->reserve_size > 0 &&
	    reg->fs->ftruncate(reg->fs, reg->reserve_fd, 0) == 0) {
		reg->used_reserve = true;
		reg->reserve_size = 0;
		r = write_atomic(reg->fs, reg->dir, reg->path, reg->tmp_path, reg->file.data,
				 reg->file.len, reg->write_err, sizeof(reg->write_err));
	}
	if (r == 0)
		reg->file_size = size;
	reg->write_rc = r;
}

/* Starts a write if none runs and some committed transaction is not yet
 * covered by one; committed transactions that changed nothing and wait for
 * no write are answered at once. */
static void
txn_kick(struct ch_topics *reg)
{
	if (reg->writing)
		return;
	bool changes = false;
	for (ch_topics_txn *t = reg->first; t && t->committed; t = t->next)
		changes |= t->n > 0;
	if (!changes) {
		txn_confirm(reg, false);
		return;
	}
	for (ch_topics_txn *t = reg->first; t && t->committed; t = t->next)
		t->in_write = true;
	reg->writing = true;
	serialize(reg, &reg->file);
	if (!ch_buf_ok(&reg->file)) {
		reg->write_rc = -ENOMEM;
		snprintf(reg->write_err, sizeof(reg->write_err), "out of memory serializing it");
		txn_written(reg);
	} else if (reg->has_exec) {
		reg->exec.run(reg->exec.ud, txn_write, txn_written, reg);
	} else {
		txn_write(reg);
		txn_written(reg);
	}
}

ch_topics_txn *
ch_topics_begin(struct ch_topics *reg)
{
	/* Changes are staged and committed in one go on the loop thread. */
	assert(!reg->last || reg->last->committed);
	ch_topics_txn *t = ch_xcalloc(1, sizeof(*t));
	t->reg = reg;
	t->prev = reg->last;
	if (reg->last)
		reg->last->next = t;
	else
		reg->first = t;
	reg->last = t;
	return t;
}

void
ch_topics_commit(ch_topics_txn *tx, ch_topics_done_fn done, void *ud)
{
	tx->committed = true;
	tx->done = done;
	tx->ud = ud;
	txn_kick(tx->reg);
}

typedef struct sync_result {
	bool called;
	int16_t err;
	char *msg;
	size_t msglen;
} sync_result;

/* ch_topics_commit_sync's done callback: records that it ran and err, and copies msg into the
 * caller's buffer on error. */
static void
sync_done(void *ud, int16_t err, const char *msg)
{
	sync_result *r = ud;
	r->called = true;
	r->err = err;
	if (err)
		ch_errf(r->msg, r->msglen, "%s", msg);
}

int16_t
ch_topics_commit_sync(ch_topics_txn *tx, char *msg, size_t msglen)
{
	assert(!tx->reg->has_exec);
	/* On the heap: tx keeps ud, and gcc (-O2, dangling-pointer) cannot see
	 * that a commit without an executor ends, and frees tx, before it
	 * returns. */
	sync_result *r = ch_xcalloc(1, sizeof(*r));
	*r = (sync_result){false, 0, msg, msglen};
	ch_topics_commit(tx, sync_done, r);
	assert(r->called);
	int16_t err = r->err;
	free(r);
	return err;
}

void
ch_topics_set_exec(struct ch_topics *reg, const ch_topics_exec *exec)
{
	assert(!reg->writing);
	reg->has_exec = exec != NULL;
	if (exec)
		reg->exec = *exec;
}

bool
ch_topics_busy(const struct ch_topics *reg)
{
	return reg->first != NULL;
}

/* A line being parsed: strict single-space-separated tokens. */
typedef struct cursor {
	const char *p, *end; /* the rest of the current line */
} cursor;

/* Takes from c the token up to the next single space, or the rest of the line when last (tokens
 * may be empty); false if no space is left. */
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

/* Parses a token of 1 to 19 decimal digits (no sign) into *out if its value is at most max;
 * false otherwise. */
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

/* The value of a hex digit (either case), or -1. */
static int
hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* Decodes a %xx-escaped token into a new string (caller frees); NULL on a short, bad or %00
 * escape or a raw byte outside '!'..'~'. */
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

/* Reads n "config <key> <value>" lines at *lp (before end) into out; counts
 * them in *count as it goes (so the caller frees what was read). NULL, or
 * why the file is corrupt. */
static const char *
read_configs(const char **lp, const char *end, int *lineno, uint64_t n, ch_topic_kv *out,
	     size_t *count)
{
	for (uint64_t k = 0; k < n; k++) {
		if (*lp >= end)
			return "unexpected end of records";
		const char *nl = memchr(*lp, '\n', (size_t)(end - *lp));
		cursor c = {*lp, nl};
		*lp = nl + 1;
		(*lineno)++;
		const char *tok, *ktok, *vtok;
		size_t tl, kl, vl;
		if (!next_token(&c, &tok, &tl, false) || !tok_is(tok, tl, "config") ||
		    !next_token(&c, &ktok, &kl, false) || !next_token(&c, &vtok, &vl, true) ||
		    kl == 0)
			return "bad config record";
		char *key = unescape_tok(ktok, kl), *val = unescape_tok(vtok, vl);
		if (!key || !val) {
			free(key);
			free(val);
			return "bad escape in config record";
		}
		out[k].key = key;
		out[k].value = val;
		(*count)++;
	}
	return NULL;
}

/* Reads and verifies reg->path into the empty reg: topics indexed, broker layers in reg->broker
 * (not applied). On CH_ERR (why in err) what was read stays in reg for ch_topics_close to free. */
static int
load_registry(struct ch_topics *reg, char *err, size_t errlen)
{
	char *data;
	size_t len;
	int r = read_file(reg->fs, reg->path, &data, &len, REGISTRY_MAX_BYTES);
	if (r < 0) {
		ch_errf(err, errlen, "cannot read topic registry %s: %s", reg->path, strerror(-r));
		return CH_ERR;
	}
	reg->file_size = (int64_t)len;
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
#define NEXT_LINE()                                                                                \
	do {                                                                                       \
		if (lp >= data + last) {                                                           \
			why = "unexpected end of records";                                         \
			goto corrupt;                                                              \
		}                                                                                  \
		const char *nl_ = memchr(lp, '\n', (size_t)(data + last - lp));                    \
		c.p = lp;                                                                          \
		c.end = nl_;                                                                       \
		lp = nl_ + 1;                                                                      \
		lineno++;                                                                          \
	} while (0)

	NEXT_LINE();
	if (!next_token(&c, &tok, &tl, false) || !tok_is(tok, tl, "cohort-topics")) {
		why = "not a cohort topic registry (bad magic)";
		goto corrupt;
	}
	next_token(&c, &tok, &tl, true);
	int version = tok_is(tok, tl, "1") ? 1 : tok_is(tok, tl, "2") ? 2 : 0;
	if (!version) {
		snprintf(whybuf, sizeof(whybuf),
			 "unsupported version '%.*s' (this cohortd reads 1 and 2)",
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
		char norm[CH_TOPIC_NAME_MAX];
		if (find_name(reg, tok, tl) || find_id(reg, &id) ||
		    ch_map_find(&reg->by_norm, norm, norm_name(tok, tl, norm))) {
			why = "duplicate topic name or id, or colliding names";
			goto corrupt;
		}
		ch_topic *t = topic_new(tok, tl, &id, (int32_t)parts);
		t->internal = internal != 0;
		t->configs = nconf ? ch_xcalloc(nconf, sizeof(ch_topic_kv)) : NULL;
		index_add(reg, t);
		if ((why = read_configs(&lp, data + last, &lineno, nconf, t->configs,
					&t->n_configs)))
			goto corrupt;
	}
	if (version == 2) {
		NEXT_LINE();
		uint64_t nl;
		if (!next_token(&c, &tok, &tl, false) || !tok_is(tok, tl, "brokers") ||
		    !next_token(&c, &tok, &tl, true) || !tok_u64(tok, tl, 2, &nl) || nl != 2) {
			why = "bad brokers record";
			goto corrupt;
		}
		for (int l = 0; l < 2; l++) {
			uint64_t nconf;
			NEXT_LINE();
			if (!next_token(&c, &tok, &tl, false) || !tok_is(tok, tl, "broker") ||
			    !next_token(&c, &tok, &tl, false) || !tok_is(tok, tl, layer_names[l]) ||
			    !next_token(&c, &tok, &tl, true) ||
			    !tok_u64(tok, tl, CONFIGS_PER_TOPIC_MAX, &nconf)) {
				why = "bad broker record";
				goto corrupt;
			}
			blayer *bl = &reg->broker[l];
			bl->kv = nconf ? ch_xcalloc(nconf, sizeof(ch_topic_kv)) : NULL;
			if ((why = read_configs(&lp, data + last, &lineno, nconf, bl->kv, &bl->n)))
				goto corrupt;
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
		ch_errf(err, errlen, "corrupt topic registry %s: line %d: %s", reg->path, lineno,
			why);
	else
		ch_errf(err, errlen, "corrupt topic registry %s: %s", reg->path, why);
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
	char *path = ch_path_join(dir, CH_META_PROPERTIES_FILE);
	char *data = NULL;
	size_t len;
	int rc = CH_ERR;

	int r = read_file(fs, path, &data, &len, 1u << 20);
	if (r < 0) {
		if (r != -ENOENT) {
			ch_errf(err, errlen, "cannot read %s: %s", path, strerror(-r));
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
		char *tmp = ch_path_join(dir, CH_META_PROPERTIES_FILE ".tmp");
		rc = write_atomic(fs, dir, path, tmp, text, (size_t)n, err, errlen) == 0 ? CH_OK
											 : CH_ERR;
		free(tmp);
		if (rc == CH_OK) {
			snprintf(cluster_id, cluster_id_len, "%s", cs);
			CH_LOGI("meta", "formatted %s: cluster.id %s, node.id %d", dir, cs,
				node_id);
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
		ch_errf(err, errlen, "%s: unsupported or missing version '%s' (expected 1)", path,
			version ? version : "");
		goto out;
	}
	ch_uuid u;
	if (!cid || ch_uuid_from_base64(cid, &u) != 0) {
		ch_errf(err, errlen, "%s: missing or invalid cluster.id", path);
		goto out;
	}
	char *end = NULL;
	long long stored = nid ? strtoll(nid, &end, 10) : -1;
	if (!nid || *nid == '\0' || *end != '\0') {
		ch_errf(err, errlen, "%s: missing or invalid node.id", path);
		goto out;
	}
	if (stored != node_id) {
		ch_errf(err, errlen,
			"configured node.id %" PRId32 " doesn't match node.id %lld "
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
ch_topics_open(struct ch_topics **out, struct ch_config *cfg, char *err, size_t errlen)
{
	return ch_topics_open_fs(out, cfg, NULL, err, errlen);
}

int
ch_topics_open_fs(struct ch_topics **out, struct ch_config *cfg, ch_logfs *fs, char *err,
		  size_t errlen)
{
	*out = NULL;
	struct ch_topics *reg = ch_xcalloc(1, sizeof(*reg));
	reg->cfg = cfg;
	reg->fs = fs ? fs : ch_logfs_posix();
	reg->dir = ch_xstrdup(cfg->log_dir);
	reg->path = ch_path_join(reg->dir, CH_TOPICS_FILE);
	reg->tmp_path = ch_path_join(reg->dir, CH_TOPICS_FILE ".tmp");
	reg->reserve_path = ch_path_join(reg->dir, CH_TOPICS_RESERVE_FILE);
	reg->lock_fd = -1;
	reg->reserve_fd = -1;
	ch_map_init(&reg->by_name);
	ch_map_init(&reg->by_id);
	ch_map_init(&reg->by_norm);
	ch_buf_init(&reg->file);

	if (mkdir_p(reg->fs, reg->dir, err, errlen) != CH_OK)
		goto fail;
	char *lock = ch_path_join(reg->dir, ".lock");
	reg->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (reg->lock_fd < 0 || flock(reg->lock_fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EWOULDBLOCK)
			ch_errf(err, errlen,
				"data directory %s is in use by another process (lock %s)",
				reg->dir, lock);
		else
			ch_errf(err, errlen, "cannot lock %s: %s", lock, strerror(errno));
		free(lock);
		goto fail;
	}
	free(lock);

	/* A leftover from a write that never reached rename: the old file is
	 * the truth. */
	char *mtmp = ch_path_join(reg->dir, CH_META_PROPERTIES_FILE ".tmp");
	const char *tmps[] = {reg->tmp_path, mtmp};
	for (size_t i = 0; i < 2; i++) {
		if (reg->fs->unlink(reg->fs, tmps[i]) == 0)
			CH_LOGW("meta", "removed %s left by an interrupted write", tmps[i]);
	}
	free(mtmp);

	char *meta = ch_path_join(reg->dir, CH_META_PROPERTIES_FILE);
	bool formatted = file_exists(meta);
	free(meta);
	if (file_exists(reg->path)) {
		if (load_registry(reg, err, errlen) != CH_OK)
			goto fail;
		/* Dynamic broker configs apply from the start; ones this build
		 * does not accept are logged and ignored, as Kafka does. */
		for (int l = 0; l < 2; l++)
			if (reg->broker[l].n)
				layer_apply(reg, l, reg->broker[l]);
	} else if (formatted) {
		ch_errf(err, errlen,
			"topic registry %s is missing but %s/%s exists; refusing to "
			"start with no topics",
			reg->path, reg->dir, CH_META_PROPERTIES_FILE);
		goto fail;
	} else if (persist_now(reg, err, errlen) != 0) {
		/* Written before meta.properties, so a formatted dir always has one. */
		goto fail;
	}
	if (ch_meta_properties_ensure(reg->fs, reg->dir, cfg->node_id, reg->cluster_id,
				      sizeof(reg->cluster_id), err, errlen) != CH_OK)
		goto fail;
	/* The reserve (see THE RESERVE): a start on a full disk goes on without
	 * it, and the next write tries again. */
	int fd = reg->fs->open(reg->fs, reg->reserve_path, O_RDWR | O_CREAT, 0644);
	if (fd >= 0) {
		reg->reserve_fd = fd;
		int64_t got = reg->fs->fsize(reg->fs, fd);
		reg->reserve_size = got >= 0 ? got : 0;
	}
	int r = fd < 0 ? fd : reserve_grow(reg, reserve_target(reg->file_size));
	if (r < 0)
		CH_LOGW("meta",
			"cannot reserve %" PRId64 " bytes in %s (%s): deleting a topic on a "
			"full disk may fail until space is freed",
			reserve_target(reg->file_size), reg->reserve_path, strerror(-r));
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
	/* The owner drained the worker first (ch_topics_busy); what is still
	 * pending was never written: it is dropped unanswered. */
	assert(!reg->writing);
	for (ch_topics_txn *t = txn_detach(reg, NULL), *nx; t; t = nx) {
		nx = t->next;
		CH_LOGW("meta", "dropping a topic registry change that was never written");
		for (size_t i = 0; i < t->n; i++) {
			topic_free(t->ch[i].old);
			kv_free(t->ch[i].was.kv, t->ch[i].was.n);
		}
		free(t->ch);
		free(t);
	}
	for (int l = 0; l < 2; l++)
		kv_free(reg->broker[l].kv, reg->broker[l].n);
	for (size_t i = 0; i < reg->n; i++)
		topic_free(reg->sorted[i]);
	ch_map_free(&reg->by_name);
	ch_map_free(&reg->by_id);
	ch_map_free(&reg->by_norm);
	ch_buf_free(&reg->file);
	free(reg->sorted);
	if (reg->reserve_fd >= 0)
		reg->fs->close(reg->fs, reg->reserve_fd);
	if (reg->lock_fd >= 0)
		close(reg->lock_fd); /* releases the flock */
	free(reg->dir);
	free(reg->path);
	free(reg->tmp_path);
	free(reg->reserve_path);
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

uint64_t
ch_topics_changes(const struct ch_topics *reg)
{
	return reg->changes;
}

const ch_topic *
ch_topics_at(const struct ch_topics *reg, size_t i)
{
	return i < reg->n ? reg->sorted[i] : NULL;
}

/* ---- changes ---- */

/* Validates a topic's config overrides (count, names, values, duplicates); CH_KERR_NONE, or
 * CH_KERR_INVALID_CONFIG with why in msg. */
static int16_t
check_configs(const ch_topic_kv *configs, size_t n, char *msg, size_t msglen)
{
	if (n > CONFIGS_PER_TOPIC_MAX) {
		ch_errf(msg, msglen, "too many topic configs (%zu)", n);
		return CH_KERR_INVALID_CONFIG;
	}
	if (ch_topic_configs_validate(configs, n, msg, msglen) != CH_OK)
		return CH_KERR_INVALID_CONFIG;
	return CH_KERR_NONE;
}

/* True (with Kafka-style wording in msg) when a topic would have more
 * partitions than cohort allows (CH_TOPIC_PARTITIONS_MAX). */
static bool
over_partition_limit(int32_t partitions, char *msg, size_t msglen)
{
	if (partitions <= CH_TOPIC_PARTITIONS_MAX)
		return false;
	ch_errf(msg, msglen,
		"Number of partitions %" PRId32 " exceeds cohort's limit of %d per topic.",
		partitions, CH_TOPIC_PARTITIONS_MAX);
	return true;
}

int16_t
ch_topics_create(ch_topics_txn *tx, const char *name, size_t len, int32_t partitions,
		 const ch_topic_kv *configs, size_t n_configs, bool validate_only,
		 const ch_topic **out, char *msg, size_t msglen)
{
	struct ch_topics *reg = tx->reg;
	int16_t ec;
	ch_errf(msg, msglen, "%s", "");
	if (out)
		*out = NULL;
	if ((ec = ch_topic_name_validate(name, len, msg, msglen)) != 0)
		return ec;
	if (find_name(reg, name, len)) {
		ch_errf(msg, msglen, "Topic '%.*s' already exists.", (int)len, name);
		return CH_KERR_TOPIC_ALREADY_EXISTS;
	}
	const ch_topic *other = find_collision(reg, name, len);
	if (other) {
		ch_errf(msg, msglen, "Topic '%.*s' collides with existing topic: %s", (int)len,
			name, other->name);
		return CH_KERR_INVALID_TOPIC_EXCEPTION;
	}
	if (partitions == -1)
		partitions = reg->cfg->num_partitions;
	if (partitions < 1) {
		ch_errf(msg, msglen,
			"Number of partitions was set to an invalid non-positive value.");
		return CH_KERR_INVALID_PARTITIONS;
	}
	if (over_partition_limit(partitions, msg, msglen))
		return CH_KERR_INVALID_PARTITIONS;
	if ((ec = check_configs(configs, n_configs, msg, msglen)) != 0)
		return ec;
	if (validate_only)
		return CH_KERR_NONE;

	ch_uuid id;
	do
		id = ch_uuid_random();
	while (find_id(reg, &id));
	ch_topic *t = topic_new(name, len, &id, partitions);
	t->configs = kv_copy(configs, n_configs);
	t->n_configs = n_configs;
	txn_stage(tx, NULL, t);
	if (out)
		*out = t;
	return CH_KERR_NONE;
}

int16_t
ch_topics_ensure_offsets_topic(ch_topics_txn *tx, const ch_topic **out, char *msg, size_t msglen)
{
	struct ch_topics *reg = tx->reg;
	const char *name = CH_CONSUMER_OFFSETS_TOPIC;
	const ch_topic *t = find_name(reg, name, strlen(name));
	if (t) {
		if (out)
			*out = t;
		ch_errf(msg, msglen, "%s", "");
		return CH_KERR_NONE;
	}
	char seg[16];
	snprintf(seg, sizeof(seg), "%" PRId32, reg->cfg->offsets_topic_segment_bytes);
	/* GroupCoordinator.offsetsTopicConfigs in Kafka. */
	ch_topic_kv kv[] = {
		{(char *)"cleanup.policy", (char *)"compact"},
		{(char *)"compression.type", (char *)"producer"},
		{(char *)"segment.bytes", seg},
	};
	return ch_topics_create(tx, name, strlen(name), reg->cfg->offsets_topic_num_partitions, kv,
				CH_ARRAY_LEN(kv), false, out, msg, msglen);
}

/* Stages deleting visible t in tx unless delete.topic.enable is false (TOPIC_DELETION_DISABLED);
 * t is freed once tx is durable. */
static int16_t
delete_topic(ch_topics_txn *tx, ch_topic *t, char *msg, size_t msglen)
{
	if (!tx->reg->cfg->delete_topic_enable) {
		ch_errf(msg, msglen, "Topic deletion is disabled.");
		return CH_KERR_TOPIC_DELETION_DISABLED;
	}
	txn_stage(tx, t, NULL);
	return CH_KERR_NONE;
}

int16_t
ch_topics_delete(ch_topics_txn *tx, const char *name, size_t len, char *msg, size_t msglen)
{
	ch_errf(msg, msglen, "%s", "");
	ch_topic *t = find_name(tx->reg, name, len);
	if (!t) {
		ch_errf(msg, msglen, "This server does not host this topic-partition.");
		return CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	}
	return delete_topic(tx, t, msg, msglen);
}

int16_t
ch_topics_delete_id(ch_topics_txn *tx, const ch_uuid *id, char *msg, size_t msglen)
{
	ch_errf(msg, msglen, "%s", "");
	ch_topic *t = find_id(tx->reg, id);
	if (!t) {
		ch_errf(msg, msglen, "This server does not host this topic ID.");
		return CH_KERR_UNKNOWN_TOPIC_ID;
	}
	return delete_topic(tx, t, msg, msglen);
}

int16_t
ch_topics_add_partitions(ch_topics_txn *tx, const char *name, size_t len, int32_t total,
			 bool validate_only, char *msg, size_t msglen)
{
	ch_errf(msg, msglen, "%s", "");
	ch_topic *t = find_name(tx->reg, name, len);
	if (!t) {
		ch_errf(msg, msglen, "This server does not host this topic-partition.");
		return CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	}
	if (total < t->partitions) {
		ch_errf(msg, msglen,
			"The topic %s currently has %" PRId32 " partition(s); %" PRId32
			" would not be an increase.",
			t->name, t->partitions, total);
		return CH_KERR_INVALID_PARTITIONS;
	}
	if (total == t->partitions) {
		ch_errf(msg, msglen, "Topic already has %" PRId32 " partition(s).", t->partitions);
		return CH_KERR_INVALID_PARTITIONS;
	}
	if (over_partition_limit(total, msg, msglen))
		return CH_KERR_INVALID_PARTITIONS;
	if (validate_only)
		return CH_KERR_NONE;
	ch_topic *c = topic_copy(t);
	c->partitions = total;
	txn_stage(tx, t, c);
	return CH_KERR_NONE;
}

int16_t
ch_topics_alter_configs(ch_topics_txn *tx, const char *name, size_t len, const ch_topic_kv *configs,
			size_t n_configs, bool validate_only, char *msg, size_t msglen)
{
	ch_errf(msg, msglen, "%s", "");
	ch_topic *t = find_name(tx->reg, name, len);
	if (!t) {
		ch_errf(msg, msglen, "This server does not host this topic-partition.");
		return CH_KERR_UNKNOWN_TOPIC_OR_PARTITION;
	}
	int16_t ec = check_configs(configs, n_configs, msg, msglen);
	if (ec != 0 || validate_only)
		return ec;
	ch_topic *c = topic_copy(t);
	kv_free(c->configs, c->n_configs);
	c->configs = kv_copy(configs, n_configs);
	c->n_configs = n_configs;
	txn_stage(tx, t, c);
	return CH_KERR_NONE;
}

int16_t
ch_topics_set_broker_configs(ch_topics_txn *tx, int layer, const ch_topic_kv *configs,
			     size_t n_configs, bool validate_only, char *msg, size_t msglen)
{
	struct ch_topics *reg = tx->reg;
	ch_errf(msg, msglen, "%s", "");
	if (n_configs > CONFIGS_PER_TOPIC_MAX) {
		ch_errf(msg, msglen, "too many broker configs (%zu)", n_configs);
		return CH_KERR_INVALID_REQUEST;
	}
	/* Kafka answers INVALID_REQUEST for any broker config it cannot take
	 * (ConfigAdminManager.validateBrokerConfigChange, KAFKA-13609). */
	if (ch_config_check_dynamic(reg->cfg, layer, configs, n_configs, msg, msglen) != CH_OK)
		return CH_KERR_INVALID_REQUEST;
	if (validate_only)
		return CH_KERR_NONE;
	if (tx->n == tx->cap) {
		tx->cap = tx->cap ? tx->cap * 2 : 4;
		tx->ch = ch_xrealloc(tx->ch, tx->cap * sizeof(*tx->ch));
	}
	tx->ch[tx->n++] = (change){NULL, NULL, layer, reg->broker[layer]};
	layer_apply(reg, layer, (blayer){kv_copy(configs, n_configs), n_configs});
	return CH_KERR_NONE;
}

void
ch_topics_broker_configs(const struct ch_topics *reg, int layer, const ch_topic_kv **kv, size_t *n)
{
	*kv = reg->broker[layer].kv;
	*n = reg->broker[layer].n;
}
