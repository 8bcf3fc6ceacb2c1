"""AlterConfigs (API 33) and IncrementalAlterConfigs (API 44) over the raw
protocol, every version: Kafka's validation and errors (ConfigAdminManager,
ConfigurationControlManager, ControllerConfigurationValidator, LogConfig),
DescribeConfigs showing each change and its source, the change applied to
the running logs without a restart, and kept across a restart and kill -9.
"""
import os
import time

import kwire
import test_data_idempotent as idem
from harness import BrokerTestCase, main
from test_data_raw import fetch_body, parse_fetch
from test_delete_records import delete_records, earliest

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
UNKNOWN_TOPIC_OR_PARTITION = 3
MESSAGE_TOO_LARGE = 10
INVALID_TOPIC_EXCEPTION = 17
INVALID_CONFIG = 40
INVALID_REQUEST = 42
POLICY_VIOLATION = 44
SRC_TOPIC, SRC_BROKER, SRC_DEFAULT_BROKER, SRC_STATIC, SRC_DEFAULT = 1, 2, 3, 4, 5


def alter(c, v, resources, validate_only=False):
    """AlterConfigs: resources [(type, name, {key: value})] -> [(err, msg)]."""
    ops = [(t, n, [(k, SET, val) for k, val in cfg.items()]) for t, n, cfg in resources]
    return _call(c, 33, v, v >= 2, ops, validate_only, incremental=False)


def incremental(c, v, resources, validate_only=False):
    """IncrementalAlterConfigs: resources [(type, name, [(key, op, value)])]."""
    return _call(c, 44, v, v >= 1, resources, validate_only, incremental=True)


def _call(c, key, v, fl, resources, validate_only, incremental):
    w = kwire.Writer(fl)
    w.array_len(len(resources))
    for rtype, name, ops in resources:
        w.int8(rtype).string(name).array_len(len(ops))
        for k, op, val in ops:
            w.string(k)
            if incremental:
                w.int8(op)
            w.string(val)
            if fl:
                w.tags()
        if fl:
            w.tags()
    w.bool(validate_only)
    if fl:
        w.tags()
    return _results(c.call(key, v, w.bytes()), fl, resources)


def _results(r, fl, resources):
    r.int32()  # throttle
    out = []
    for i in range(r.array_len()):
        err, msg, rtype, name = r.int16(), r.string(nullable=True), r.int8(), r.string()
        if fl:
            r.tags()
        assert (rtype, name) == resources[i][:2], (rtype, name)
        out.append((err, msg))
    if fl:
        r.tags()
    r.done()
    return out


def keyed_batch(key, value):
    """A v2 record batch of one record with a key (compaction needs keys)."""
    import struct
    ts = int(time.time() * 1000)
    body = (b"\x00" + idem.varint(0) + idem.varint(0) + idem.varint(len(key)) + key +
            idem.varint(len(value)) + value + idem.varint(0))
    recs = idem.varint(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0, 0, ts, ts, -1, -1, -1, 1) + recs
    tail = struct.pack(">ibI", -1, 2, idem.crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(tail)) + tail


def count_records(c, topic):
    """Records in the partition from its start to its end (batch headers;
    a Fetch answers from one segment at a time)."""
    offset, n = earliest(c, topic, 0), 0
    while True:
        r = c.call(1, 11, fetch_body(11, topic, None, 0, offset))
        p = parse_fetch(r, 11)[1][0]
        data, pos = p["records"], 0
        while pos + 61 <= len(data):
            length = int.from_bytes(data[pos + 8:pos + 12], "big")
            if pos + 12 + length > len(data):
                break
            n += int.from_bytes(data[pos + 57:pos + 61], "big")
            offset = (int.from_bytes(data[pos:pos + 8], "big") +
                      int.from_bytes(data[pos + 23:pos + 27], "big") + 1)
            pos += 12 + length
        if offset >= p["hw"] or not data:
            return n


def describe(c, rtype, name, keys=None, synonyms=False):
    res = kwire.describe_configs(c, [(rtype, name, keys)], version=4, include_synonyms=synonyms)[0]
    assert res["error_code"] == 0, res
    return res["configs"]


class AlterConfigs(BrokerTestCase):
    broker_settings = {"log.retention.check.interval.ms": "300",
                       "log.cleaner.backoff.ms": "100",
                       "log.retention.hours": "100"}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        with kwire.Conn(cls.broker.port) as c:
            res = kwire.create_topics(c, [(t, 1, 1) for t in
                                          ("t1", "live", "ret", "seg", "comp", "keep")])
            assert {t["error_code"] for t in res["topics"].values()} == {0}, res

    def test_topic_errors_every_version(self):
        with kwire.Conn(self.broker.port) as c:
            for v in (0, 1, 2):
                got = alter(c, v, [(TOPIC, "nope", {"retention.ms": "1"}),
                                   (TOPIC, "t1", {"no.such.key": "1"}),
                                   (TOPIC, "t1", {"retention.ms": "soon"})])
                # (t1 twice: both fail as a duplicate resource)
                self.assertEqual(got[0], (UNKNOWN_TOPIC_OR_PARTITION,
                                          "The topic 'nope' does not exist."))
                self.assertEqual(got[1][0], INVALID_REQUEST)
                self.assertEqual(got[2], got[1])
                self.assertEqual(got[1][1], "Each resource must appear at most once.")
                got = alter(c, v, [(TOPIC, "t1", {"no.such.key": "1"})])
                self.assertEqual(got, [(INVALID_CONFIG, "Unknown topic config name: no.such.key")])
                got = alter(c, v, [(TOPIC, "t1", {"retention.ms": "soon"}), (TOPIC, "", {}),
                                   (TOPIC, "a b", {}), (99, "x", {}),
                                   (TOPIC, "t1x", {"min.compaction.lag.ms": "10",
                                                   "max.compaction.lag.ms": "5"})])
                self.assertEqual(got[0][0], INVALID_CONFIG)
                self.assertIn("retention.ms", got[0][1])
                self.assertEqual(got[1], (INVALID_REQUEST, "Default topic resources are not allowed."))
                self.assertEqual(got[2][0], INVALID_TOPIC_EXCEPTION)
                self.assertEqual(got[3], (INVALID_REQUEST, "Unknown resource type 99"))
                self.assertEqual(got[4][0], INVALID_CONFIG)  # validated before existence
                self.assertIn("conflict topic config", got[4][1])
                got = alter(c, v, [(TOPIC, "t1", {"retention.ms": None}),
                                   (BROKER_LOGGER, "kafka", {})])
                self.assertEqual(got[0], (INVALID_REQUEST, "Null value not supported for : retention.ms"))
                self.assertEqual(got[1], (INVALID_REQUEST, "Unknown resource type 8"))
            for v in (0, 1):
                got = incremental(c, v, [(TOPIC, "t1", [("retention.ms", APPEND, "5")]),
                                         (TOPIC, "live", [("retention.ms", 7, "5")]),
                                         (TOPIC, "seg", [("a", SET, "1"), ("a", DELETE, None)]),
                                         (TOPIC, "ret", [("retention.ms", SET, None)]),
                                         (BROKER_LOGGER, "kafka.server", [("kafka", SET, "INFO")])])
                self.assertEqual(got[0], (INVALID_CONFIG, "Can't APPEND to key retention.ms "
                                          "because its type is not LIST."))
                self.assertEqual(got[1], (INVALID_REQUEST, "Unknown operations type 7"))
                self.assertEqual(got[2], (INVALID_REQUEST, "Error due to duplicate config keys"))
                self.assertEqual(got[3], (INVALID_REQUEST, "Null value not supported for : retention.ms"))
                self.assertEqual(got[4][0], INVALID_REQUEST)
                got = incremental(c, v, [(TOPIC, "nope", [("retention.ms", DELETE, None)])])
                self.assertEqual(got[0][0], UNKNOWN_TOPIC_OR_PARTITION)
            # Nothing of that changed t1.
            self.assertEqual(describe(c, TOPIC, "t1", ["retention.ms"])["retention.ms"]["source"],
                             SRC_DEFAULT)

    def test_describe_empty_key_list_means_every_key(self):
        # Kafka 4.4 answers an empty ConfigurationKeys list as a null one:
        # every key (350 broker entries either way, measured on 4.4.0).
        with kwire.Conn(self.broker.port) as c:
            for rtype, name in ((TOPIC, "t1"), (BROKER, "1")):
                every = describe(c, rtype, name, None)
                self.assertGreater(len(every), 10)
                self.assertEqual(describe(c, rtype, name, []), every)

    def test_topic_changes_and_sources(self):
        with kwire.Conn(self.broker.port) as c:
            # validate_only changes nothing.
            self.assertEqual(incremental(c, 1, [(TOPIC, "t1", [("retention.ms", SET, "1000")])],
                                         validate_only=True), [(0, None)])
            e = describe(c, TOPIC, "t1", ["retention.ms"])["retention.ms"]
            # The value follows log.retention.hours; the source is that of
            # log.retention.ms itself, as Kafka's ConfigHelper gives it.
            self.assertEqual((e["value"], e["source"]), (str(100 * 3600000), SRC_DEFAULT))
            self.assertEqual(incremental(c, 0, [(TOPIC, "t1", [("retention.ms", SET, "1000"),
                                                               ("cleanup.policy", APPEND, "compact")])]),
                             [(0, None)])
            cfg = describe(c, TOPIC, "t1", synonyms=True)
            self.assertEqual((cfg["retention.ms"]["value"], cfg["retention.ms"]["source"]),
                             ("1000", SRC_TOPIC))
            # APPEND starts from Kafka's default, delete.
            self.assertEqual(cfg["cleanup.policy"]["value"], "delete,compact")
            syn = cfg["retention.ms"]["synonyms"]
            self.assertEqual(syn[0], ("retention.ms", "1000", SRC_TOPIC))
            self.assertEqual(syn, [("retention.ms", "1000", SRC_TOPIC)])  # as Kafka: no log.retention.ms
            mm = cfg["max.message.bytes"]["synonyms"]
            self.assertEqual(mm, [("message.max.bytes", "1048588", SRC_DEFAULT)])
            self.assertEqual(incremental(c, 1, [(TOPIC, "t1", [("cleanup.policy", SUBTRACT, "delete"),
                                                               ("retention.ms", DELETE, None)])]),
                             [(0, None)])
            cfg = describe(c, TOPIC, "t1")
            self.assertEqual((cfg["cleanup.policy"]["value"], cfg["cleanup.policy"]["source"]),
                             ("compact", SRC_TOPIC))
            self.assertEqual(cfg["retention.ms"]["source"], SRC_DEFAULT)
            # Legacy AlterConfigs replaces the whole set.
            self.assertEqual(alter(c, 2, [(TOPIC, "t1", {"segment.ms": "60000"})]), [(0, None)])
            cfg = describe(c, TOPIC, "t1")
            self.assertEqual(cfg["segment.ms"]["source"], SRC_TOPIC)
            self.assertEqual(cfg["cleanup.policy"]["source"], SRC_DEFAULT)
            self.assertEqual(alter(c, 1, [(TOPIC, "t1", {})]), [(0, None)])
            self.assertEqual(describe(c, TOPIC, "t1")["segment.ms"]["source"], SRC_DEFAULT)

    def test_broker_errors_layers_and_sources(self):
        with kwire.Conn(self.broker.port) as c:
            got = alter(c, 1, [(BROKER, "2", {"log.retention.ms": "1"}),
                               (BROKER, "one", {"log.retention.ms": "1"}),
                               (BROKER, "1", {"node.id": "7", "log.dirs": "/x"}),
                               (BROKER, "", {"no.such.key": "1"})])
            self.assertEqual(got[0], (INVALID_REQUEST, "Unexpected broker id, expected 1, but received 2"))
            self.assertEqual(got[1], (INVALID_REQUEST, "Node id must be an integer, but it is: one"))
            self.assertEqual(got[2], (INVALID_REQUEST, "Cannot update these configs dynamically: "
                                      "[node.id, log.dirs]"))
            self.assertEqual(got[3][0], INVALID_REQUEST)
            got = incremental(c, 1, [(BROKER, "1", [("log.retention.ms", SET, "forever")]),
                                     (BROKER, "", [("log.retention.ms", APPEND, "5")])])
            self.assertEqual(got[0][0], INVALID_REQUEST)
            self.assertIn("log.retention.ms", got[0][1])
            self.assertEqual(got[1], (INVALID_CONFIG, "Config value append is not allowed for "
                                      "config key: log.retention.ms"))
            # The two layers: this broker's beats the cluster default.
            self.assertEqual(incremental(c, 0, [(BROKER, "", [("message.max.bytes", SET, "500000"),
                                                              ("log.roll.ms", SET, "7200000")])]),
                             [(0, None)])
            self.assertEqual(alter(c, 0, [(BROKER, "1", {"log.roll.ms": "3600000"})]), [(0, None)])
            d = describe(c, BROKER, "")
            self.assertEqual({k: (e["value"], e["source"]) for k, e in d.items()},
                             {"message.max.bytes": ("500000", SRC_DEFAULT_BROKER),
                              "log.roll.ms": ("7200000", SRC_DEFAULT_BROKER)})
            b = describe(c, BROKER, "1", synonyms=True)
            self.assertEqual((b["log.roll.ms"]["value"], b["log.roll.ms"]["source"]),
                             ("3600000", SRC_BROKER))
            self.assertEqual(b["log.roll.ms"]["synonyms"][:2],
                             [("log.roll.ms", "3600000", SRC_BROKER),
                              ("log.roll.ms", "7200000", SRC_DEFAULT_BROKER)])
            self.assertEqual((b["message.max.bytes"]["value"], b["message.max.bytes"]["source"]),
                             ("500000", SRC_DEFAULT_BROKER))
            self.assertFalse(b["message.max.bytes"]["read_only"])
            self.assertTrue(b["node.id"]["read_only"])
            self.assertTrue(b["log.retention.hours"]["read_only"])
            # Topics without an override inherit it, with its source.
            t = describe(c, TOPIC, "keep", ["max.message.bytes", "segment.ms"])
            self.assertEqual((t["max.message.bytes"]["value"], t["max.message.bytes"]["source"]),
                             ("500000", SRC_DEFAULT_BROKER))
            self.assertEqual((t["segment.ms"]["value"], t["segment.ms"]["source"]),
                             ("3600000", SRC_BROKER))
            # DELETE takes a key out of the layer: back to the default layer.
            self.assertEqual(incremental(c, 1, [(BROKER, "1", [("log.roll.ms", DELETE, None)])]),
                             [(0, None)])
            self.assertEqual(describe(c, BROKER, "1", ["log.roll.ms"])["log.roll.ms"]["value"],
                             "7200000")
            self.assertEqual(alter(c, 2, [(BROKER, "", {})]), [(0, None)])
            self.assertEqual(describe(c, BROKER, ""), {})

    def produce(self, c, topic, value, ts=None):
        return idem.produce(c, topic, 0, idem.batch(-1, -1, -1, [value], ts=ts), acks=-1)[0]

    def test_live_message_size_and_cleanup_policy(self):
        with kwire.Conn(self.broker.port) as c:
            big = b"m" * 200000
            self.assertEqual(self.produce(c, "live", big), 0)
            self.assertEqual(incremental(c, 1, [(TOPIC, "live", [("max.message.bytes", SET, "100000")])]),
                             [(0, None)])
            self.assertEqual(self.produce(c, "live", big), MESSAGE_TOO_LARGE)
            self.assertEqual(self.produce(c, "live", b"small"), 0)
            # The broker-wide default reaches topics without an override.
            self.assertEqual(self.produce(c, "keep", big), 0)
            self.assertEqual(alter(c, 1, [(BROKER, "", {"message.max.bytes": "150000"})]), [(0, None)])
            self.assertEqual(self.produce(c, "keep", big), MESSAGE_TOO_LARGE)
            self.assertEqual(alter(c, 1, [(BROKER, "", {})]), [(0, None)])
            self.assertEqual(self.produce(c, "keep", big), 0)
            # cleanup.policy: DeleteRecords needs delete (Kafka's POLICY_VIOLATION).
            self.assertEqual(incremental(c, 1, [(TOPIC, "keep", [("cleanup.policy", SET, "compact")])]),
                             [(0, None)])
            self.assertEqual(delete_records(c, 2, {"keep": [(0, 1)]})[("keep", 0)][0], POLICY_VIOLATION)
            self.assertEqual(incremental(c, 1, [(TOPIC, "keep", [("cleanup.policy", APPEND, "delete")])]),
                             [(0, None)])
            self.assertEqual(delete_records(c, 2, {"keep": [(0, 1)]})[("keep", 0)], (0, 1))

    def test_live_segments_and_retention(self):
        b = self.broker
        seg_dir = os.path.join(b.data_dir, "seg-0")
        with kwire.Conn(b.port) as c:
            for i in range(5):
                self.assertEqual(self.produce(c, "seg", b"s" * 600), 0)
            self.assertEqual(len([f for f in os.listdir(seg_dir) if f.endswith(".log")]), 1)
            self.assertEqual(incremental(c, 1, [(TOPIC, "seg", [("segment.bytes", SET, "1000")])]),
                             [(0, None)])
            for i in range(5):
                self.assertEqual(self.produce(c, "seg", b"s" * 600), 0)
            self.assertGreaterEqual(len([f for f in os.listdir(seg_dir) if f.endswith(".log")]), 4)
            # Old records (an hour old) and small segments; retention.ms lowered
            # below their age deletes them at the next retention check.
            old = int(time.time() * 1000) - 3600000
            self.assertEqual(incremental(c, 1, [(TOPIC, "ret", [("segment.bytes", SET, "1000")])]),
                             [(0, None)])
            for i in range(6):
                self.assertEqual(self.produce(c, "ret", b"r" * 600, ts=old), 0)
            self.assertEqual(earliest(c, "ret", 0), 0)
            self.assertEqual(incremental(c, 1, [(TOPIC, "ret", [("retention.ms", SET, "60000")])]),
                             [(0, None)])
            deadline = time.monotonic() + 30
            while earliest(c, "ret", 0) == 0 and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertGreaterEqual(earliest(c, "ret", 0), 5)

    def test_live_compaction(self):
        with kwire.Conn(self.broker.port) as c:
            self.assertEqual(incremental(c, 1, [(TOPIC, "squash", [("segment.bytes", SET, "300")])]),
                             [(UNKNOWN_TOPIC_OR_PARTITION, "The topic 'squash' does not exist.")])
            res = kwire.create_topics(c, [("squash", 1, 1, {"segment.bytes": "300"})])
            self.assertEqual(res["topics"]["squash"]["error_code"], 0)
            for i in range(30):
                err, _ = idem.produce(c, "squash", 0, keyed_batch(b"k%d" % (i % 2), b"v%d" % i),
                                      acks=-1)
                self.assertEqual(err, 0)
            self.assertEqual(count_records(c, "squash"), 30)
            # Deleting topics are never compacted; switched to compact, the
            # closed segments are, at the next cleaner pass.
            self.assertEqual(incremental(c, 1, [(TOPIC, "squash", [("cleanup.policy", SET, "compact")])]),
                             [(0, None)])
            deadline = time.monotonic() + 30
            while count_records(c, "squash") == 30 and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertLess(count_records(c, "squash"), 30)

    def test_persisted_across_restart_and_kill9(self):
        b = self.broker
        with kwire.Conn(b.port) as c:
            self.assertEqual(incremental(c, 1, [(TOPIC, "comp", [("cleanup.policy", SET, "compact"),
                                                                 ("retention.ms", SET, "123456")]),
                                                (BROKER, "1", [("log.cleaner.backoff.ms", SET, "250")]),
                                                (BROKER, "", [("log.segment.bytes", SET, "2000000")])]),
                             [(0, None)] * 3)
        b.stop()
        b.start()
        with kwire.Conn(b.port) as c:
            t = describe(c, TOPIC, "comp", ["cleanup.policy", "retention.ms", "segment.bytes"])
            self.assertEqual((t["cleanup.policy"]["value"], t["retention.ms"]["value"]),
                             ("compact", "123456"))
            self.assertEqual((t["segment.bytes"]["value"], t["segment.bytes"]["source"]),
                             ("2000000", SRC_DEFAULT_BROKER))
            e = describe(c, BROKER, "1", ["log.cleaner.backoff.ms"])["log.cleaner.backoff.ms"]
            self.assertEqual((e["value"], e["source"]), ("250", SRC_BROKER))
            self.assertEqual(alter(c, 0, [(TOPIC, "comp", {"retention.ms": "654321"}),
                                          (BROKER, "", {})]), [(0, None)] * 2)
        b.kill9()
        b.start()
        with kwire.Conn(b.port) as c:
            t = describe(c, TOPIC, "comp", ["cleanup.policy", "retention.ms", "segment.bytes"])
            self.assertEqual(t["retention.ms"]["value"], "654321")
            self.assertEqual(t["cleanup.policy"]["source"], SRC_DEFAULT)
            self.assertEqual(t["segment.bytes"]["source"], SRC_DEFAULT)
            self.assertEqual(describe(c, BROKER, ""), {})


if __name__ == "__main__":
    main()
