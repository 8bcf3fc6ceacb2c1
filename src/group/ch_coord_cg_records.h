/*
 * ch_coord_cg_records.h: the consumer groups' records in __consumer_offsets,
 * in Kafka 4.4's schemas (group-coordinator's ConsumerGroup*Key/Value.json,
 * CoordinatorRecordType), so a Kafka broker can read cohortd's log and
 * cohortd can read Kafka's.
 *
 *   key   = int16 record type + key struct (not flexible: int16-length strings)
 *   value = int16 version (0) + value struct (flexible: compact strings and
 *           arrays, tagged fields), or null: a tombstone
 *
 *   type  key                          value v0 (tagged fields: tag)
 *   3     ConsumerGroupMetadata        Epoch; MetadataHash int64 (0)
 *         {GroupId}
 *   4     ConsumerGroupPartitionMetadata  Topics[...]; Kafka 4.1+ writes only
 *         {GroupId}                    its tombstone, and so does cohortd
 *   5     ConsumerGroupMemberMetadata  InstanceId?, RackId?, ClientId,
 *         {GroupId, MemberId}          ClientHost, SubscribedTopicNames[],
 *                                      SubscribedTopicRegex?, RebalanceTimeoutMs,
 *                                      ServerAssignor?; ClassicMemberMetadata (0)
 *   6     ConsumerGroupTargetAssignmentMetadata  AssignmentEpoch;
 *         {GroupId}                    AssignmentTimestamp int64 (0, KIP-1263)
 *   7     ConsumerGroupTargetAssignmentMember  TopicPartitions[{TopicId,
 *         {GroupId, MemberId}          Partitions[]}]
 *   8     ConsumerGroupCurrentMemberAssignment  MemberEpoch, PreviousMemberEpoch,
 *         {GroupId, MemberId}          State int8 (0 stable, 1 unrevoked,
 *                                      2 unreleased), AssignedPartitions[],
 *                                      PartitionsPendingRevocation[]: each
 *                                      {TopicId, Partitions[]; AssignmentEpochs[] (0,
 *                                      KIP-1251)}
 *   16    ConsumerGroupRegularExpression  Topics[] (compact strings, sorted),
 *         {GroupId, RegularExpression}  Version int64, Timestamp int64: a
 *                                      regex's resolution (Kafka's Version is
 *                                      its metadata image offset; cohortd's is
 *                                      its topic change count, and a replay
 *                                      resolves again once either way)
 *
 * Written by hand: ../shared/kafka-protocol's copies of these schemas are
 * from before 4.0 and lack the tagged fields 4.1-4.4 added. The encoders
 * give Kafka 4.4's bytes for the same content (group_cg_store's golden
 * test, on records Kafka 4.4.0 wrote).
 */
#ifndef CH_COORD_CG_RECORDS_H
#define CH_COORD_CG_RECORDS_H

#include "common/ch_arena.h"
#include "common/ch_buf.h"
#include "group/ch_coord.h"
#include "group/ch_coord_cg.h"
#include "proto/ch_rd.h"

enum {
	CGREC_GROUP = 3,
	CGREC_PARTITION_META = 4,
	CGREC_MEMBER = 5,
	CGREC_TARGET_META = 6,
	CGREC_TARGET_MEMBER = 7,
	CGREC_CURRENT = 8,
	CGREC_REGEX = 16,
};

/* Whether a record key's type (its first int16) is a consumer group's. */
bool ch_coord_cgrec_is_consumer_group_key(const uint8_t *key, size_t klen);

/* One protocol of a classic member (ClassicMemberMetadata.SupportedProtocols). */
typedef struct ch_coord_cgrec_protocol {
	ch_str name;
	ch_bytes metadata;
} ch_coord_cgrec_protocol;

/* The member-metadata fields (type 5). */
typedef struct ch_coord_cgrec_member {
	ch_str instance_id, rack_id; /* null: none */
	ch_str client_id, client_host;
	const char *const *topics; /* encode: NUL-terminated names */
	int32_t ntopics;
	ch_str regex; /* null: none */
	int32_t rebalance_timeout_ms;
	ch_str server_assignor; /* null: none */
	/* ClassicMemberMetadata: present for a member of the classic protocol
	 * (SessionTimeoutMs, SupportedProtocols[{Name, Metadata}]). */
	bool classic;
	int32_t classic_session_timeout_ms;
	const ch_coord_cgrec_protocol *protocols;
	int32_t nprotocols;
} ch_coord_cgrec_member;

/* One topic's run of a partition list (decode). */
typedef struct ch_coord_cgrec_topic {
	ch_uuid topic;
	const int32_t *partitions;
	int32_t n;
	const int32_t *epochs; /* NULL: absent (AssignmentEpochs) */
} ch_coord_cgrec_topic;

/* A decoded record; strings and arrays point into the input or the arena. */
typedef struct ch_coord_cgrec {
	int16_t type;
	ch_str group, member;
	bool tombstone;
	int32_t epoch;               /* 3: group epoch; 6: assignment epoch; 8: member epoch */
	int64_t hash_or_ts;          /* 3: MetadataHash; 6: AssignmentTimestamp; 16: Timestamp */
	int64_t version;             /* 16 */
	int32_t previous_epoch;      /* 8 */
	int8_t state;                /* 8 */
	ch_coord_cgrec_member m;     /* 5 */
	ch_str *topic_names;         /* 5, 16 (decode; 16's count in nparts) */
	ch_coord_cgrec_topic *parts; /* 7: target; 8: assigned */
	int32_t nparts;
	ch_coord_cgrec_topic *revoking; /* 8 */
	int32_t nrevoking;
} ch_coord_cgrec;

/* Decodes a consumer-group record (value NULL or tombstone: key only).
 * 0, or -1 if the key is not one or the bytes do not parse. */
int ch_coord_cgrec_decode(const uint8_t *key, size_t klen, const uint8_t *val, size_t vlen,
			  bool tombstone, ch_arena *a, ch_coord_cgrec *out);

/* Encoders: r is initialised here (caller frees: ch_coord_cgrec_free). */
void ch_coord_cgrec_free(ch_coord_record *r);
void ch_coord_cgrec_group(ch_coord_record *r, const char *group, int32_t epoch,
			  int64_t metadata_hash);
void ch_coord_cgrec_member_meta(ch_coord_record *r, const char *group, const char *member,
				const ch_coord_cgrec_member *m);
void ch_coord_cgrec_target_meta(ch_coord_record *r, const char *group, int32_t assignment_epoch,
				int64_t timestamp);
/* tps sorted by (topic id, partition). */
void ch_coord_cgrec_target_member(ch_coord_record *r, const char *group, const char *member,
				  const ch_coord_cg_tp *tps, int32_t n);
/* epochs: each partition's AssignmentEpochs entry (aligned; NULL: omitted). */
void ch_coord_cgrec_current(ch_coord_record *r, const char *group, const char *member,
			    int32_t epoch, int32_t previous_epoch, int8_t state,
			    const ch_coord_cg_tp *assigned, const int32_t *assigned_epochs,
			    int32_t nassigned, const ch_coord_cg_tp *revoking,
			    const int32_t *revoking_epochs, int32_t nrevoking);
/* A regex's resolution; topics sorted. */
void ch_coord_cgrec_regex(ch_coord_record *r, const char *group, const char *regex,
			  const char *const *topics, int32_t ntopics, int64_t version,
			  int64_t timestamp);
/* A tombstone of record type `type` (member NULL for the group-level ones). */
void ch_coord_cgrec_tombstone(ch_coord_record *r, int16_t type, const char *group,
			      const char *member);

#endif
