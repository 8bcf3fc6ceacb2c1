/*
 * ch_topics: the topic registry. Each topic has a name, a Kafka topic id,
 * a partition count, its explicit config overrides and an internal flag
 * (__consumer_offsets, __transaction_state). Lookup by name and by id is
 * O(1); iteration is in name order (Metadata, ListTopics).
 *
 * Operations return Kafka error codes (int16, the generated CH_KERR_* of
 * proto/generated/ch_errors.h) and fill msg with a human message for the
 * response's ErrorMessage. Topic names arrive as (pointer, length) because
 * wire strings are not NUL-terminated.
 *
 * Topic objects never change. A pointer from a lookup stays valid until a
 * transaction that changes or deletes that topic is applied (on the loop
 * thread, in a done callback's turn): do not keep one across event-loop
 * turns. Indexes for ch_topics_at are invalidated by any applied change.
 *
 * Changes are transactions, applied when durable:
 *
 *   ch_topics_txn *tx = ch_topics_begin(reg);
 *   err = ch_topics_create(tx, ...);      any number of staged changes
 *   ch_topics_commit(tx, done, ud);
 *
 * Each staged change is validated against the registry as it will be after
 * everything staged before it (in this and in earlier transactions still
 * being written) and returns its Kafka error at once; nothing is visible to
 * the lookups below until the transaction is durable. Staging and commit
 * happen in one go on the loop thread (no other transaction is begun in
 * between). done(ud, 0, NULL) then runs on the loop thread once the changes
 * are durable and visible; if the write fails, nothing of the transaction
 * becomes visible and done gets KAFKA_STORAGE_ERROR and a message. Writes
 * happen one at a time in commit order, and a failed write fails every
 * transaction committed after it as well (they were validated on top of it).
 * done is called once, after the done of every earlier transaction; for a
 * transaction with nothing staged and nothing ahead of it, before
 * ch_topics_commit returns.
 *
 * Durability. The registry lives in the data directory (cfg->log_dir) and is
 * rewritten whole by every transaction: write cohort-topics.meta.tmp,
 * fdatasync it, rename it over cohort-topics.meta, fsync the directory. That
 * runs on a worker thread (ch_topics_set_exec; without an executor, inside
 * ch_topics_commit). All file access goes through the ch_logfs file layer
 * (log/ch_logfs.h), so tests fail any step or simulate a power cut
 * (src/meta/tests/test_registry_crash.c), as they do for the partition log.
 * cohort-topics.reserve keeps space allocated for the next rewrite, so that
 * a topic can be deleted on a full disk (THE RESERVE in ch_topics.c).
 * A leftover .tmp from an interrupted write is removed at open; the previous
 * registry is intact. At open, a registry file that is missing although
 * meta.properties exists, truncated or corrupt is a startup error, never an
 * empty registry.
 *
 * File format (text, one record per line, '\n' terminated):
 *   cohort-topics <version>               magic and version: 1, or 2 when
 *                                         there are broker configs
 *   topics <count>
 *   topic <id> <partitions> <internal 0|1> <nconfigs> <name>
 *   config <key> <value>                  nconfigs lines after their topic
 *   ...
 *   brokers 2                             version 2: the dynamic broker
 *   broker broker <nconfigs>              configs, this broker's layer
 *   config <key> <value>                  ...
 *   broker default <nconfigs>             and the cluster default's
 *   config <key> <value>                  ...
 *   end <crc>                             CRC-32C, 8 lowercase hex digits,
 *                                         of every byte before this line
 * id is the 22-char URL-safe base64 Kafka UUID. key and value are
 * %-escaped: bytes outside '!'..'~' and '%' itself become %XX, so a value
 * has no spaces and may be empty.
 *
 * meta.properties (as Kafka's, KRaft version 1) sits next to it:
 *   version=1  node.id=<n>  cluster.id=<base64 uuid>  directory.id=<uuid>
 * cluster.id is random on first start and kept after; a node.id that does not
 * match the configuration is a startup error, as in Kafka.
 *
 * DIR/.lock is held with flock() while the registry is open, so two brokers
 * cannot share a data directory.
 *
 * Single-threaded: call from the event-loop thread only (the executor's
 * worker runs only the file write).
 */
#ifndef CH_TOPICS_H
#define CH_TOPICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/ch_uuid.h"
#include "config/ch_config.h"
#include "log/ch_logfs.h"
#include "proto/generated/ch_errors.h"

#define CH_TOPIC_NAME_MAX 249
/* cohort's cap per topic (Kafka has none): a CreateTopics asking for 2^31
 * partitions would otherwise have log/ create that many directories. */
#define CH_TOPIC_PARTITIONS_MAX 100000

#define CH_CONSUMER_OFFSETS_TOPIC "__consumer_offsets"
#define CH_TRANSACTION_STATE_TOPIC "__transaction_state"

#define CH_TOPICS_FILE "cohort-topics.meta"
#define CH_TOPICS_RESERVE_FILE "cohort-topics.reserve"
#define CH_META_PROPERTIES_FILE "meta.properties"

typedef struct ch_topic {
	char *name; /* NUL-terminated */
	size_t name_len;
	ch_uuid id;
	int32_t partitions;
	bool internal;
	ch_topic_kv *configs; /* explicit overrides, sorted by key */
	size_t n_configs;
} ch_topic;

struct ch_topics;
typedef struct ch_topics_txn ch_topics_txn;

/* Runs work(arg) on a worker thread, then done(arg) on the loop thread. */
typedef struct ch_topics_exec {
	void (*run)(void *ud, void (*work)(void *arg), void (*done)(void *arg), void *arg);
	void *ud;
} ch_topics_exec;

/* A transaction's outcome: err 0, or KAFKA_STORAGE_ERROR with a message. */
typedef void (*ch_topics_done_fn)(void *ud, int16_t err, const char *msg);

/* Opens (creating if needed) the data directory cfg->log_dir: takes the lock,
 * checks or creates meta.properties, loads the registry and sets its dynamic
 * broker configs into cfg. cfg must outlive the registry. CH_ERR with a
 * message naming the file on any problem. */
int ch_topics_open(struct ch_topics **out, struct ch_config *cfg, char *err, size_t errlen);
/* The same through a file layer (fault injection and crash tests, ch_logfs.h);
 * fs NULL is the real file system. fs must outlive the registry. */
int ch_topics_open_fs(struct ch_topics **out, struct ch_config *cfg, ch_logfs *fs, char *err,
		      size_t errlen);
void ch_topics_close(struct ch_topics *reg);

const char *ch_topics_cluster_id(const struct ch_topics *reg); /* base64 */
const char *ch_topics_dir(const struct ch_topics *reg);

/* Lookup. NULL if absent. */
const ch_topic *ch_topics_find(const struct ch_topics *reg, const char *name, size_t len);
const ch_topic *ch_topics_find_id(const struct ch_topics *reg, const ch_uuid *id);

/* Iteration in name order: for (i = 0; i < count; i++) ch_topics_at(reg, i). */
size_t ch_topics_count(const struct ch_topics *reg);
/* Grows whenever a topic is created, deleted or changed (partitions,
 * configs): who caches topic metadata compares it with the value it saw. */
uint64_t ch_topics_changes(const struct ch_topics *reg);
const ch_topic *ch_topics_at(const struct ch_topics *reg, size_t i);

/* Kafka's Topic.validate: 1..249 chars of [a-zA-Z0-9._-], not "." or "..".
 * Returns 0 or INVALID_TOPIC_EXCEPTION. */
int16_t ch_topic_name_validate(const char *name, size_t len, char *msg, size_t msglen);
bool ch_topic_name_is_internal(const char *name, size_t len);

/* Where registry writes run (copied). NULL: inside ch_topics_commit, on the
 * calling thread (startup, tests, tools). Not while a write is running. */
void ch_topics_set_exec(struct ch_topics *reg, const ch_topics_exec *exec);
/* True while a transaction is begun, queued or being written. */
bool ch_topics_busy(const struct ch_topics *reg);

/* Starts a transaction (see the top of this file). */
ch_topics_txn *ch_topics_begin(struct ch_topics *reg);
/* Commits it; done (may be NULL) is called as described above. tx is freed
 * after done returns. */
void ch_topics_commit(ch_topics_txn *tx, ch_topics_done_fn done, void *ud);
/* Commits and returns done's error (message in msg): only without an
 * executor, where the write runs inside the call (tests, tools). */
int16_t ch_topics_commit_sync(ch_topics_txn *tx, char *msg, size_t msglen);
/*
 * Staged changes. Each returns 0 or the Kafka error of its validation (with
 * msg); validate_only checks without staging. Topic pointers handed out
 * (*out) are the staged versions: valid until the transaction is done, and
 * visible from then on if it succeeded.
 *
 * Create: a fresh random id; partitions -1 means num.partitions (KIP-464).
 * Checks, in Kafka's order: name (INVALID_TOPIC_EXCEPTION), exists
 * (TOPIC_ALREADY_EXISTS), '.'/'_' collision (INVALID_TOPIC_EXCEPTION),
 * partitions (INVALID_PARTITIONS), configs (INVALID_CONFIG).
 */
int16_t ch_topics_create(ch_topics_txn *tx, const char *name, size_t len, int32_t partitions,
			 const ch_topic_kv *configs, size_t n_configs, bool validate_only,
			 const ch_topic **out, char *msg, size_t msglen);

/* __consumer_offsets if absent, with offsets.topic.num.partitions
 * partitions and Kafka's configs for it (cleanup.policy=compact,
 * segment.bytes=offsets.topic.segment.bytes, compression.type=producer);
 * *out gets it (existing or staged). */
int16_t ch_topics_ensure_offsets_topic(ch_topics_txn *tx, const ch_topic **out, char *msg,
				       size_t msglen);

/* Deletes a topic (TOPIC_DELETION_DISABLED if delete.topic.enable=false).
 * Once done, the caller removes the partition logs. */
int16_t ch_topics_delete(ch_topics_txn *tx, const char *name, size_t len, char *msg, size_t msglen);
int16_t ch_topics_delete_id(ch_topics_txn *tx, const ch_uuid *id, char *msg, size_t msglen);

/* CreatePartitions: grow to total partitions (increase only). */
int16_t ch_topics_add_partitions(ch_topics_txn *tx, const char *name, size_t len, int32_t total,
				 bool validate_only, char *msg, size_t msglen);

/* AlterConfigs: replace the topic's overrides with this set (validated as in
 * create). IncrementalAlterConfigs computes the new set and calls this. */
int16_t ch_topics_alter_configs(ch_topics_txn *tx, const char *name, size_t len,
				const ch_topic_kv *configs, size_t n_configs, bool validate_only,
				char *msg, size_t msglen);

/*
 * Dynamic broker configs, kept in the registry (durable with it) by layer
 * (CH_CONFIG_LAYER_BROKER: this broker's, CH_CONFIG_LAYER_DEFAULT: the
 * cluster default). The registry sets them into cfg (ch_config_set_dynamic)
 * at open and whenever a layer changes or is undone. Replacing a layer:
 * INVALID_REQUEST with Kafka's message if cfg cannot take it
 * (ch_config_check_dynamic). The entries stay valid until the layer changes.
 */
int16_t ch_topics_set_broker_configs(ch_topics_txn *tx, int layer, const ch_topic_kv *configs,
				     size_t n_configs, bool validate_only, char *msg,
				     size_t msglen);
void ch_topics_broker_configs(const struct ch_topics *reg, int layer, const ch_topic_kv **kv,
			      size_t *n);

/* Checks or creates DIR/meta.properties through fs (NULL: the real file
 * system). On success copies the cluster id (22 chars + NUL) into cluster_id. */
int ch_meta_properties_ensure(ch_logfs *fs, const char *dir, int32_t node_id, char *cluster_id,
			      size_t cluster_id_len, char *err, size_t errlen);

#endif
