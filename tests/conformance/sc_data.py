"""Produce, Fetch and ListOffsets: appends, reads and offset lookups, and their
edge cases (out of range, unknown partition, max timestamp, too large); the
versions KIP-896 removed (Produce v0-v2 with magic 0/1 message sets, Fetch
v0-v3 down-converted, ListOffsets v0) against Kafka 3.9."""
import gzip
import re
import time

import kwire_legacy as L
from conform import Scenario, V, call, poll, send_only
from kproto import ZERO_UUID, record_batch
from sclib import (CORRUPT_MESSAGE, INVALID_RECORD, INVALID_TIMESTAMP, NONE, OFFSET_OUT_OF_RANGE,
                   UNKNOWN_SERVER_ERROR, UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION,
                   create_topic)

AREA = "data"

BASE_TS = 1700000000000   # records carry their own (CreateTime) timestamps


def produce(topic, partition, batch, acks=-1, v=None):
    return {"TransactionalId": None, "Acks": acks, "TimeoutMs": 30000,
            "TopicData": [{"Name": topic, "PartitionData": [{"Index": partition,
                                                             "Records": batch}]}]}


def three_records(ts=BASE_TS):
    # timestamps ts, ts+5, ts+2: the largest is the middle record's
    return record_batch([(b"k0", b"v0", 0), (b"k1", b"v1", 5), (b"k2", b"v2", 2, [("h", b"x")])],
                        base_timestamp=ts)


def fetch(v, topic, parts, max_bytes=1 << 20, part_max=1 << 20, topic_id=None):
    """parts: {partition: offset}; v13+ names the topic by id (V("tid"))."""
    return {"ClusterId": None, "ReplicaId": -1, "MaxWaitMs": 0, "MinBytes": 1,
            "MaxBytes": max_bytes, "IsolationLevel": 0, "SessionId": 0, "SessionEpoch": -1,
            "Topics": [{"Topic": topic,
                        "TopicId": topic_id if topic_id is not None else V("tid", ZERO_UUID),
                        "Partitions": [{"Partition": p, "CurrentLeaderEpoch": -1,
                                        "FetchOffset": o, "LastFetchedEpoch": -1,
                                        "LogStartOffset": -1, "PartitionMaxBytes": part_max}
                                       for p, o in parts.items()]}],
            "ForgottenTopicsData": [], "RackId": ""}


def list_offsets(topic, parts, isolation=0):
    """parts: {partition: timestamp}"""
    return {"ReplicaId": -1, "IsolationLevel": isolation, "TimeoutMs": 30000,
            "Topics": [{"Name": topic, "Partitions": [{"PartitionIndex": p,
                                                       "CurrentLeaderEpoch": -1,
                                                       "Timestamp": ts, "MaxNumOffsets": 1}
                                                      for p, ts in parts.items()]}]}


def topic_with_data(N, name, batches=2):
    """A new 2-partition topic with `batches` three-record batches in partition 0;
    its id saved as "tid"."""
    t = N(name)
    s = create_topic("c", t, 2)
    s += [call("c", "Metadata", 12, {"Topics": [{"Name": t}], "AllowAutoTopicCreation": False},
               save={"tid": "Topics[0].TopicId"}, compare=False)]
    for i in range(batches):
        s += [call("c", "Produce", 9, produce(t, 0, three_records(BASE_TS + 100 * i)),
                   expect={"Responses[0].PartitionResponses[0].ErrorCode": NONE}, compare=False)]
    return t, s


def produce_versions(N, v):
    t = N("produce")
    s = create_topic("c", t, 2)
    s += [call("c", "Produce", v, produce(t, 0, three_records()),
               expect={"Responses[0].PartitionResponses[0].ErrorCode": NONE}),
          call("c", "Produce", v, produce(t, 0, three_records(), acks=1)),
          call("c", "Produce", v, produce(t, 1, three_records())),
          call("c", "Produce", v, produce(t, 7, three_records()),
               expect={"Responses[0].PartitionResponses[0].ErrorCode": UNKNOWN_TOPIC_OR_PARTITION}),
          call("c", "Produce", v, produce(N("nosuch"), 0, three_records())),
          call("c", "Produce", v, produce(t, 0, three_records(), acks=2)),
          # acks=0: no response; the next request on the connection is answered
          send_only("c", "Produce", v, produce(t, 0, three_records(), acks=0)),
          call("c", "ListOffsets", 7, list_offsets(t, {0: -1}))]
    return Scenario("produce v%d: acks, unknown partition and topic, bad acks" % v, s)


def produce_bad(N, v):
    t = N("produce-bad")
    good = three_records()
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF          # payload changed, CRC not
    big = record_batch([(b"k", b"x" * (1048588 + 100))])
    s = create_topic("c", t, 1)
    # A batch that says zstd but holds plain records: before v7 Kafka refuses
    # zstd outright (UNSUPPORTED_COMPRESSION_TYPE, checked before inflating);
    # from v7 both inflate it and fail (produce_not_inflating).
    zstd = record_batch([(b"k", b"v")], attributes=4)
    s += [call("c", "Produce", v, produce(t, 0, bytes(corrupt))),
          call("c", "Produce", v, produce(t, 0, big)),
          call("c", "Produce", v, produce(t, 0, good[:-3])),            # no whole batch
          call("c", "Produce", v, produce(t, 0, good + good)),          # two batches
          call("c", "Produce", v, produce(t, 0, good + good[:20])),     # a whole one, a torn tail
          *([call("c", "Produce", v, produce(t, 0, zstd))] if v < 7 else []),
          call("c", "Produce", v, produce(t, 0, b"\x00" * 11)),
          call("c", "ListOffsets", 7, list_offsets(t, {0: -1})),
          call("c", "Fetch", 12, fetch(12, t, {0: 0}, topic_id=None))]
    return Scenario("produce v%d: corrupt, too large, truncated batches" % v, s)


# ---- LogValidator: records checked one by one, compressed or not

def gz(section):
    return gzip.compress(section, mtime=0)


GZIP = 1
LOG_APPEND_TIME_ATTR = 0x08
CONTROL_ATTR = 0x20
RECS = [(b"k0", b"v0", 0), (b"k1", b"v1", 5), (b"k2", b"v2", 2)]


def produce_validation(N, v):
    """Batches whose header is right but whose records are not, compressed
    and not; header fields Kafka rewrites (maxTimestamp, the timestamp type)."""
    t = N("validate")
    cases = [
        ("gzip", record_batch(RECS, attributes=GZIP, compress=gz), NONE),
        ("gzip, a record cut short", record_batch(
            RECS, attributes=GZIP, compress=lambda sec: gz(sec[:-3])), INVALID_RECORD),
        ("gzip, fewer records than counted", record_batch(
            RECS[:2], attributes=GZIP, compress=gz, count=3, last_offset_delta=2),
         INVALID_RECORD),
        ("gzip, more records than counted", record_batch(
            RECS, attributes=GZIP, compress=gz, count=2, last_offset_delta=1), INVALID_RECORD),
        ("gzip, count and last offset disagree", record_batch(
            RECS, attributes=GZIP, compress=gz, last_offset_delta=5), INVALID_RECORD),
        # the record's length varint claims 63 bytes
        ("uncompressed, a malformed record", record_batch(
            RECS[:1], compress=lambda sec: bytes([0x7e]) + sec[1:]), INVALID_RECORD),
        ("maxTimestamp below the records'", record_batch(RECS, max_timestamp=BASE_TS - 1), NONE),
        ("gzip, maxTimestamp above the records'", record_batch(
            RECS, attributes=GZIP, compress=gz, max_timestamp=BASE_TS + 99), NONE),
        ("LogAppendTime set by the producer", record_batch(
            RECS, attributes=LOG_APPEND_TIME_ATTR), NONE),
        ("base offset 5", record_batch(RECS, base_offset=5), INVALID_RECORD),
        ("a control batch", record_batch(RECS, attributes=CONTROL_ATTR), INVALID_RECORD),
    ]
    s = create_topic("c", t, 1)
    for name, batch, want in cases:
        s.append(call("c", "Produce", v, produce(t, 0, batch), label=name,
                      expect={"Responses[0].PartitionResponses[0].ErrorCode": want}))
    s += [call("c", "Fetch", 12, fetch(12, t, {0: 0}, topic_id=None)),
          call("c", "ListOffsets", 7, list_offsets(t, {0: -3}))]
    return Scenario("produce v%d: records checked one by one (LogValidator)" % v, s)


def produce_deltas(N, v):
    """Records whose offset deltas are not 0, 1, 2, ...: a topic of their own
    (Kafka keeps one of them, so what follows would differ)."""
    t = N("deltas")
    s = create_topic("c", t, 1)
    for name, batch in (("uncompressed, offset deltas 0 2 1",
                         record_batch(RECS, offset_deltas=[0, 2, 1])),
                        ("gzip, offset deltas 0 2 1",
                         record_batch(RECS, attributes=GZIP, compress=gz, offset_deltas=[0, 2, 1])),
                        ("gzip, offset deltas 1 2 3",
                         record_batch(RECS, attributes=GZIP, compress=gz, offset_deltas=[1, 2, 3]))):
        s.append(call("c", "Produce", v, produce(t, 0, batch), label=name, accept=DELTAS,
                      expect={"Responses[0].PartitionResponses[0].ErrorCode":
                              lambda e: e in (NONE, INVALID_RECORD, UNKNOWN_SERVER_ERROR)}))
    return Scenario("produce v%d: offset deltas other than 0, 1, 2, ..." % v, s)


# README: offset deltas other than 0..n-1 are INVALID_RECORD; Kafka 4.4 stores
# an uncompressed such batch as it is and fails a compressed one
# (UNKNOWN_SERVER_ERROR).
DELTAS = [(r"^Produce:Responses\[Name=[^\]]*\]\.PartitionResponses\[0\]\."
           r"(ErrorCode|BaseOffset|LogStartOffset)$",
           "README: a batch whose offset deltas are not 0, 1, 2, ... is INVALID_RECORD")]


# README: a compressed batch that does not inflate is CORRUPT_MESSAGE; Kafka
# fails with an internal error.
NOT_INFLATED = [(r"^Produce:Responses\[Name=[^\]]*\]\.PartitionResponses\[0\]\."
                 r"(ErrorCode|LogStartOffset)$",
                 "README: a compressed batch that does not inflate is CORRUPT_MESSAGE")]


def topic_codec(N, v):
    """A topic's compression.type other than producer: Kafka recompresses
    (LogValidator.buildRecordsAndAssignOffsets), and so does cohortd."""
    tg, tn = N("codec-gzip"), N("codec-none")
    s = create_topic("c", tg, 1, {"compression.type": "gzip"})
    s += create_topic("c", tn, 1, {"compression.type": "uncompressed"})
    s += [call("c", "Produce", v, produce(tg, 0, record_batch(RECS))),
          call("c", "Produce", v, produce(tn, 0, record_batch(RECS, attributes=GZIP, compress=gz))),
          call("c", "Fetch", 12, fetch(12, tg, {0: 0}, topic_id=None), accept=GZIP_BYTES),
          call("c", "Fetch", 12, fetch(12, tn, {0: 0}, topic_id=None))]
    return Scenario("produce v%d: a topic's compression.type" % v, s)


# The records of a gzip batch are compared record by record (kproto.parse_batches);
# the deflate bytes, and so the batch's length, may differ between two correct
# brokers.
GZIP_BYTES = [(r"^Fetch:Responses\[Topic=[^\]]*\]\.Partitions\[PartitionIndex=0\]\.Records\[0\]"
               r"\.BatchLength$",
               "gzip output may differ in length between zlib and java.util.zip")]


def produce_not_inflating(N, v):
    t = N("inflate")
    s = create_topic("c", t, 1)
    s += [call("c", "Produce", v, produce(t, 0, record_batch(RECS, attributes=GZIP)),
               label="gzip over plain records", accept=NOT_INFLATED,
               expect={"Responses[0].PartitionResponses[0].ErrorCode":
                       lambda e: e in (CORRUPT_MESSAGE, UNKNOWN_SERVER_ERROR)})]
    if v >= 7:
        s += [call("c", "Produce", v, produce(t, 0, record_batch(RECS, attributes=4)),
                   label="zstd over plain records", accept=NOT_INFLATED,
                   expect={"Responses[0].PartitionResponses[0].ErrorCode":
                           lambda e: e in (CORRUPT_MESSAGE, UNKNOWN_SERVER_ERROR)})]
    s += [call("c", "ListOffsets", 7, list_offsets(t, {0: -1}))]
    return Scenario("produce v%d: a compressed batch that does not inflate" % v, s)


WINDOW = re.compile(r"within \[(-?\d+), (-?\d+)\]")


def window_width(r):
    """keep=: the timestamp window in Kafka's messages depends on each
    broker's clock; its width (before.max.ms + after.max.ms) does not."""
    def fix(m):
        return "within a window %d ms wide" % ((int(m.group(2)) - int(m.group(1))) & (2 ** 64 - 1))
    def walk(x):
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        if isinstance(x, str):
            return WINDOW.sub(fix, x)
        return x
    return walk(r)


def append_time_set(r):
    """keep=: each broker's own clock: whether LogAppendTimeMs is one."""
    r = window_width(r)
    for t in r["Responses"]:
        for p in t["PartitionResponses"]:
            p["LogAppendTimeMs"] = p["LogAppendTimeMs"] > 1600000000000
    return r


def produce_timestamps(N, v, now):
    """KIP-937's message.timestamp.before/after.max.ms (Kafka 4's defaults:
    no limit behind, one hour ahead), the window per topic, LogAppendTime
    topics, compacted topics' keys: RecordErrors and ErrorMessage (v8+)."""
    t, narrow, lat, compact = N("ts"), N("ts-narrow"), N("ts-lat"), N("ts-compact")
    ahead = now + 2 * 3600 * 1000
    s = create_topic("c", t, 1)
    s += create_topic("c", narrow, 1, {"message.timestamp.before.max.ms": "600000",
                                       "message.timestamp.after.max.ms": "60000"})
    s += create_topic("c", lat, 1, {"message.timestamp.type": "LogAppendTime"})
    s += create_topic("c", compact, 1, {"cleanup.policy": "compact"})
    ts_err = {"Responses[0].PartitionResponses[0].ErrorCode": INVALID_TIMESTAMP}
    ok = {"Responses[0].PartitionResponses[0].ErrorCode": NONE}

    def p(topic, batch, expect, label):
        return call("c", "Produce", v, produce(topic, 0, batch), expect=expect, label=label,
                    keep=window_width)
    s += [p(t, record_batch(RECS, base_timestamp=ahead), ts_err, "two hours ahead"),
          p(t, record_batch([(b"k", b"ok", 0), (b"k", b"late", 7200000)], base_timestamp=now),
            ts_err, "one record of two ahead"),
          p(t, record_batch(RECS, base_timestamp=ahead, attributes=GZIP, compress=gz), ts_err,
            "gzip, ahead"),
          p(t, record_batch(RECS, base_timestamp=now - 10 ** 10), ok, "long ago"),
          p(t, record_batch(RECS, base_timestamp=-1), ok, "no timestamp (-1)"),
          p(narrow, record_batch(RECS, base_timestamp=now - 3600 * 1000), ts_err,
            "an hour ago, ten minutes allowed"),
          p(narrow, record_batch(RECS, base_timestamp=now + 600000), ts_err,
            "ten minutes ahead, one allowed"),
          p(narrow, record_batch(RECS, base_timestamp=now), ok, "now"),
          p(narrow, record_batch(RECS, base_timestamp=ahead, attributes=LOG_APPEND_TIME_ATTR),
            ts_err, "LogAppendTime from the producer, its time ahead"),
          call("c", "Produce", v, produce(lat, 0, record_batch(RECS, base_timestamp=ahead)),
               expect=ok, label="LogAppendTime topic, ahead", keep=append_time_set),
          p(lat, record_batch(RECS, attributes=LOG_APPEND_TIME_ATTR), ts_err,
            "LogAppendTime topic, LogAppendTime from the producer"),
          p(compact, record_batch([(b"k", b"v"), (None, b"v"), (None, b"w")]),
            {"Responses[0].PartitionResponses[0].ErrorCode": INVALID_RECORD},
            "compacted, two records without a key"),
          p(compact, record_batch([(None, b"v", 0), (b"k", b"v", 7200000)], base_timestamp=now),
            ts_err, "compacted, no key and ahead"),
          call("c", "ListOffsets", 7, list_offsets(t, {0: -1})),
          call("c", "ListOffsets", 7, list_offsets(narrow, {0: -1}))]
    return Scenario("produce v%d: timestamps out of the window (KIP-937)" % v, s)


def timestamp_configs(N):
    """The KIP-937 keys: defaults, validation, DescribeConfigs of topic and broker."""
    t, bad = N("ts-config"), N("ts-config-bad")
    keys = ["message.timestamp.before.max.ms", "message.timestamp.after.max.ms",
            "message.timestamp.type"]
    bkeys = ["log." + k for k in keys]

    def describe(rtype, name, ks):
        return {"Resources": [{"ResourceType": rtype, "ResourceName": name,
                               "ConfigurationKeys": ks}],
                "IncludeSynonyms": True, "IncludeDocumentation": False}
    s = create_topic("c", t, 1, {"message.timestamp.after.max.ms": "5000"})
    s += [call("c", "DescribeConfigs", 4, describe(2, t, keys)),
          call("c", "DescribeConfigs", 4, describe(4, "1", bkeys)),
          call("c", "CreateTopics", 7, {"Topics": [
              {"Name": bad, "NumPartitions": 1, "ReplicationFactor": 1,
               "Configs": [{"Name": "message.timestamp.before.max.ms", "Value": "-1"}]}],
              "timeoutMs": 30000, "validateOnly": True}, accept=CONFIG_MESSAGE),
          call("c", "IncrementalAlterConfigs", 1, {"Resources": [
              {"ResourceType": 2, "ResourceName": t, "Configs": [
                  {"Name": "message.timestamp.after.max.ms", "ConfigOperation": 0,
                   "Value": "not a number"}]}], "ValidateOnly": False}, accept=CONFIG_MESSAGE),
          call("c", "IncrementalAlterConfigs", 1, {"Resources": [
              {"ResourceType": 2, "ResourceName": t, "Configs": [
                  {"Name": "message.timestamp.before.max.ms", "ConfigOperation": 0,
                   "Value": "1000"}]}], "ValidateOnly": False}),
          # Kafka applies a change through its metadata log: shown a moment later
          poll("c", "DescribeConfigs", 4, describe(2, t, keys), compare=True,
               until=lambda r: any(c["Name"] == "message.timestamp.before.max.ms"
                                   and c["Value"] == "1000" for c in r["Results"][0]["Configs"]))]
    return Scenario("message.timestamp.before/after.max.ms: defaults, validation, describe", s)


# README: a bad config value gets Kafka's error code with cohortd's own words.
CONFIG_MESSAGE = [(r"^(CreateTopics|IncrementalAlterConfigs):.*ErrorMessage$",
                   "README: a bad topic config value has cohortd's own message")]


def fetch_versions(N, v):
    t, s = topic_with_data(N, "fetch")
    s += [call("c", "Fetch", v, fetch(v, t, {0: 0, 1: 0}),
               expect={"Responses[0].Partitions[0].ErrorCode": NONE}),
          call("c", "Fetch", v, fetch(v, t, {0: 3})),
          call("c", "Fetch", v, fetch(v, t, {0: 6})),                          # at the end
          call("c", "Fetch", v, fetch(v, t, {0: 100}),
               expect={"Responses[0].Partitions[0].ErrorCode": OFFSET_OUT_OF_RANGE}),
          call("c", "Fetch", v, fetch(v, t, {0: -5})),
          call("c", "Fetch", v, fetch(v, t, {5: 0}),
               expect={"Responses[0].Partitions[0].ErrorCode": UNKNOWN_TOPIC_OR_PARTITION}),
          # one byte of room: the first batch still comes, whole
          call("c", "Fetch", v, fetch(v, t, {0: 0}, max_bytes=1)),
          call("c", "Fetch", v, fetch(v, t, {0: 0}, part_max=1))]
    if v >= 13:
        s += [call("c", "Fetch", v, fetch(v, t, {0: 0},
                                          topic_id="8f1f5d8e-8d6e-4c6a-9d1c-3a5b1e2f4a6b"),
                   expect={"Responses[0].Partitions[0].ErrorCode": UNKNOWN_TOPIC_ID})]
    else:
        s += [call("c", "Fetch", v, fetch(v, N("nosuch"), {0: 0}))]
    return Scenario("fetch v%d: records, end, out of range, unknown partition, limits" % v, s)


def list_offsets_versions(N, v):
    t, s = topic_with_data(N, "lo")
    # batch 0: ts 0, 5, 2; batch 1: ts 100, 105, 102 (relative to BASE_TS)
    s += [call("c", "ListOffsets", v, list_offsets(t, {0: -1, 1: -1})),
          call("c", "ListOffsets", v, list_offsets(t, {0: -2, 1: -2})),
          call("c", "ListOffsets", v, list_offsets(t, {0: BASE_TS + 3})),
          call("c", "ListOffsets", v, list_offsets(t, {0: BASE_TS + 101})),
          call("c", "ListOffsets", v, list_offsets(t, {0: BASE_TS - 1000})),
          call("c", "ListOffsets", v, list_offsets(t, {0: BASE_TS + 10 ** 6})),   # past the end
          call("c", "ListOffsets", v, list_offsets(t, {1: BASE_TS})),            # empty partition
          call("c", "ListOffsets", v, list_offsets(t, {9: -1})),
          call("c", "ListOffsets", v, list_offsets(N("nosuch"), {0: -1}))]
    if v >= 2:
        s += [call("c", "ListOffsets", v, list_offsets(t, {0: -1}, isolation=1))]
    if v >= 7:
        s += [call("c", "ListOffsets", v, list_offsets(t, {0: -3, 1: -3}))]      # max timestamp
    if v >= 8:
        s += [call("c", "ListOffsets", v, list_offsets(t, {0: -4}))]             # earliest local
    if v >= 9:
        s += [call("c", "ListOffsets", v, list_offsets(t, {0: -5}))]             # earliest tiered
    return Scenario("list_offsets v%d: latest, earliest, by time, max timestamp" % v, s)


# ---- the versions KIP-896 removed (Kafka 3.9): message sets of magic 0 and 1

def legacy_sets():
    """Message sets Produce v0-v2 carry (kwire_legacy writes them by hand)."""
    m = L.message
    return [
        ("magic 0", m(b"v0", b"k0", magic=0) + m(b"v1", None, magic=0), NONE),
        ("magic 1 CreateTime", m(b"a", b"k", timestamp=BASE_TS) +
         m(b"b", None, timestamp=BASE_TS - 5), NONE),
        ("gzip wrapper", L.gzip_wrapper(m(b"c", b"k", timestamp=BASE_TS, offset=0) +
                                        m(b"d", b"k", timestamp=BASE_TS + 1, offset=1),
                                        timestamp=BASE_TS + 1, offset=1), NONE),
        ("magic 0 gzip wrapper", L.gzip_wrapper(m(b"e", magic=0) + m(b"f", magic=0), magic=0),
         NONE),
        ("CRC", (lambda e: e[:-1] + b"X")(m(b"v")), CORRUPT_MESSAGE),
        ("magic 5", (lambda e: e[:16] + b"\x05" + e[17:])(m(b"v")), CORRUPT_MESSAGE),
        ("nested compression", L.gzip_wrapper(L.gzip_wrapper(m(b"x"))), None),
        ("inner CRC", L.gzip_wrapper((lambda e: e[:-1] + b"X")(m(b"a"))), CORRUPT_MESSAGE),
        ("partial entry", m(b"v", b"k")[:20], NONE),
        ("LogAppendTime set by the producer", m(b"a", attributes=L.LOG_APPEND_TIME,
                                                timestamp=5000), None),
    ]


def produce_legacy(N, v):
    t = N("produce-legacy")
    s = create_topic("c", t, 2)
    for name, records, want in legacy_sets():
        s.append(call("c", "Produce", v, produce(t, 0, records), label=name,
                      expect={} if want is None else
                      {"Responses[0].PartitionResponses[0].ErrorCode": want}))
    s += [call("c", "Produce", v, produce(t, 0, three_records()), label="batch v2"),
          call("c", "Produce", v, produce(t, 5, L.message(b"v")), label="unknown partition",
               expect={"Responses[0].PartitionResponses[0].ErrorCode":
                       UNKNOWN_TOPIC_OR_PARTITION}),
          call("c", "Produce", v, produce(t, 1, L.message(b"v"), acks=2), label="bad acks"),
          send_only("c", "Produce", v, produce(t, 1, L.message(b"v", timestamp=BASE_TS), acks=0)),
          call("c", "ListOffsets", 0, list_offsets(t, {0: -1, 1: -1}))]
    return Scenario("produce v%d: magic 0/1 message sets, wrappers, bad input" % v, s)


def legacy_data(N, name):
    """A 2-partition topic, partition 0 holding magic 1, a gzip wrapper, magic
    0 and a batch v2 (offsets 0-2, 3-4, 5-6, 7-9)."""
    t = N(name)
    m = L.message
    s = create_topic("c", t, 2)
    for v, records in ((2, m(b"a", b"k0", timestamp=BASE_TS) + m(b"b", None, timestamp=BASE_TS + 1)
                        + m(None, b"k2", timestamp=BASE_TS + 2)),
                       (2, L.gzip_wrapper(m(b"c", b"k3", timestamp=BASE_TS + 10, offset=0)
                                          + m(b"d", b"k4", timestamp=BASE_TS + 11, offset=1),
                                          timestamp=BASE_TS + 11, offset=1)),
                       (0, m(b"e", b"k5", magic=0) + m(b"f", b"k6", magic=0)),
                       (3, three_records(BASE_TS + 20))):
        s.append(call("c", "Produce", v, produce(t, 0, records), compare=False,
                      expect={"Responses[0].PartitionResponses[0].ErrorCode": NONE}))
    return t, s


def fetch_legacy(N, v):
    t, s = legacy_data(N, "fetch-legacy")
    for off in (0, 1, 4, 6, 8, 10):
        s.append(call("c", "Fetch", v, fetch(v, t, {0: off}), label="offset %d" % off))
    s += [call("c", "Fetch", v, fetch(v, t, {0: 0, 1: 0}, part_max=60), label="small limit"),
          call("c", "Fetch", v, fetch(v, t, {0: 0}, max_bytes=1), label="max_bytes 1"),
          call("c", "Fetch", v, fetch(v, t, {0: 11}),
               expect={"Responses[0].Partitions[0].ErrorCode": OFFSET_OUT_OF_RANGE}),
          call("c", "Fetch", v, fetch(v, t, {4: 0}),
               expect={"Responses[0].Partitions[0].ErrorCode": UNKNOWN_TOPIC_OR_PARTITION}),
          call("c", "Fetch", v, fetch(v, N("nosuch"), {0: 0}))]
    return Scenario("fetch v%d: down-converted to magic %d, limits, errors" % (v, 0 if v < 2 else 1),
                    s)


def list_offsets_v0(N):
    t, s = legacy_data(N, "lo-legacy")

    def lo(parts):
        """parts: {partition: (timestamp, max_num_offsets)}"""
        return {"ReplicaId": -1, "Topics": [{"Name": t, "Partitions": [
            {"PartitionIndex": p, "Timestamp": ts, "MaxNumOffsets": n}
            for p, (ts, n) in parts.items()]}]}
    s += [call("c", "ListOffsets", 0, lo({0: (-1, 1), 1: (-1, 1)})),
          call("c", "ListOffsets", 0, lo({0: (-1, 10), 1: (-2, 10)})),
          call("c", "ListOffsets", 0, lo({0: (-2, 1)})),
          call("c", "ListOffsets", 0, lo({0: (BASE_TS, 10)})),
          call("c", "ListOffsets", 0, lo({0: (BASE_TS + 10 ** 9, 10)})),
          call("c", "ListOffsets", 0, lo({0: (-1, 0)})),
          call("c", "ListOffsets", 0, lo({7: (-1, 1)})),
          call("c", "ListOffsets", 0, {"ReplicaId": -1, "Topics": [{"Name": N("nosuch"),
                                                                     "Partitions": [
              {"PartitionIndex": 0, "Timestamp": -1, "MaxNumOffsets": 1}]}]})]
    return Scenario("list_offsets v0: latest, earliest, by time, max_num_offsets", s)


def scenarios(ctx):
    N = ctx.name
    out = [produce_legacy(N, v) for v in range(0, 3)]
    out += [fetch_legacy(N, v) for v in range(0, 4)]
    out += [list_offsets_v0(N)]
    out += [produce_versions(N, v) for v in range(3, 12)]
    out += [produce_bad(N, v) for v in (3, 6, 7, 8, 11)]
    out += [produce_validation(N, v) for v in (3, 8, 11)]
    out += [produce_not_inflating(N, v) for v in (3, 7, 11)]
    out += [produce_deltas(N, v) for v in (3, 11)]
    out += [topic_codec(N, 9)]
    now = int(time.time() * 1000)
    out += [produce_timestamps(N, v, now) for v in (3, 7, 8, 11)]
    out += [timestamp_configs(N)]
    out += [fetch_versions(N, v) for v in range(4, 18)]
    out += [list_offsets_versions(N, v) for v in range(1, 11)]
    return out
