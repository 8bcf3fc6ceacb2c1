"""DeleteRecords (API 21) over the raw protocol, every version.

As Kafka (KafkaApis.handleDeleteRecordsRequest, ReplicaManager.deleteRecords,
Partition.deleteRecordsOnLeader): the low watermark is the new log start
offset; -1 means the high watermark; other negative offsets and offsets past
the high watermark are OFFSET_OUT_OF_RANGE; an unknown topic or partition is
UNKNOWN_TOPIC_OR_PARTITION, an internal topic INVALID_TOPIC_EXCEPTION, a
topic without cleanup.policy=delete POLICY_VIOLATION. ListOffsets earliest
and Fetch honour the new start, and it survives a restart and kill -9.
"""
import kwire
import test_data_idempotent as idem
from harness import BrokerTestCase, main
from test_data_raw import fetch_body, parse_fetch

OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
POLICY_VIOLATION = 44


def delete_records(c, v, topics, timeout_ms=30000):
    """topics: {name: [(partition, offset)]} -> {(name, partition): (err, low_watermark)}."""
    w = kwire.Writer(v >= 2)
    w.array_len(len(topics))
    for name, parts in topics.items():
        w.string(name).array_len(len(parts))
        for p, off in parts:
            w.int32(p).int64(off)
            if v >= 2:
                w.tags()
        if v >= 2:
            w.tags()
    w.int32(timeout_ms)
    if v >= 2:
        w.tags()
    r = c.call(21, v, w.bytes())
    r.int32()  # throttle
    out = {}
    for _ in range(r.array_len()):
        name = r.string()
        for _ in range(r.array_len()):
            p, lw, err = r.int32(), r.int64(), r.int16()
            if v >= 2:
                r.tags()
            out[(name, p)] = (err, lw)
        if v >= 2:
            r.tags()
    if v >= 2:
        r.tags()
    r.done()
    return out


def earliest(c, topic, part):
    """ListOffsets v1, timestamp -2."""
    w = kwire.Writer(False)
    w.int32(-1).array_len(1).string(topic).array_len(1).int32(part).int64(-2)
    r = c.call(2, 1, w.bytes())
    r.array_len()
    r.string()
    r.array_len()
    r.int32()
    err, _ts, off = r.int16(), r.int64(), r.int64()
    assert err == 0, err
    return off


def fetch(c, topic, part, offset):
    """Fetch v11: (error, log start offset, first offset returned or None)."""
    r = c.call(1, 11, fetch_body(11, topic, None, part, offset))
    _top, parts = parse_fetch(r, 11)
    p = parts[0]
    first = None
    if len(p["records"]) >= 8:
        first = int.from_bytes(p["records"][:8], "big", signed=True)
    return p["error"], p["start"], first


class DeleteRecords(BrokerTestCase):
    broker_settings = {"num.partitions": "2"}

    def produce(self, c, topic, part, n):
        for i in range(n):
            err, _ = idem.produce(c, topic, part, idem.batch(-1, -1, -1, [b"r%d" % i]), acks=-1)
            self.assertEqual(err, 0)

    def test_every_version_and_error(self):
        b = self.broker
        with kwire.Conn(b.port) as c:
            res = kwire.create_topics(c, [("dr", 2, 1, {"segment.bytes": "200"}),
                                          ("dr-compact", 1, 1, {"cleanup.policy": "compact"})])
            self.assertEqual({t["error_code"] for t in res["topics"].values()}, {0})
            self.produce(c, "dr", 0, 10)
            self.produce(c, "dr", 1, 10)
            for v, off in ((0, 2), (1, 3), (2, 4)):
                self.assertEqual(delete_records(c, v, {"dr": [(0, off)]}), {("dr", 0): (0, off)})
            self.assertEqual(earliest(c, "dr", 0), 4)
            err, start, _ = fetch(c, "dr", 0, 3)
            self.assertEqual((err, start), (OFFSET_OUT_OF_RANGE, -1))  # (offsets -1 in error, as Kafka)
            err, start, first = fetch(c, "dr", 0, 4)
            self.assertEqual((err, start, first), (0, 4, 4))
            # Never back; past the high watermark and bad offsets fail.
            got = delete_records(c, 2, {"dr": [(0, 1)], "dr-compact": [(0, 0)],
                                        "nope": [(0, 0)], "__consumer_offsets": [(0, 0)]})
            self.assertEqual(got[("dr", 0)], (0, 4))
            self.assertEqual(got[("dr-compact", 0)], (POLICY_VIOLATION, -1))
            self.assertEqual(got[("nope", 0)], (UNKNOWN_TOPIC_OR_PARTITION, -1))
            # (no FindCoordinator yet, so no __consumer_offsets either)
            self.assertEqual(got[("__consumer_offsets", 0)], (UNKNOWN_TOPIC_OR_PARTITION, -1))
            got = delete_records(c, 1, {"dr": [(0, 11), (1, -2), (7, 0)]})
            self.assertEqual(got, {("dr", 0): (OFFSET_OUT_OF_RANGE, -1),
                                   ("dr", 1): (OFFSET_OUT_OF_RANGE, -1),
                                   ("dr", 7): (UNKNOWN_TOPIC_OR_PARTITION, -1)})
            # -1: up to the high watermark.
            self.assertEqual(delete_records(c, 0, {"dr": [(1, -1)]}), {("dr", 1): (0, 10)})
            self.assertEqual(earliest(c, "dr", 1), 10)
            kwire.find_coordinator(c, 0, ["g"])
            got = delete_records(c, 0, {"__consumer_offsets": [(0, 0)]})
            self.assertEqual(got, {("__consumer_offsets", 0): (INVALID_TOPIC_EXCEPTION, -1)})
            # The log goes on from where it was.
            err, base = idem.produce(c, "dr", 1, idem.batch(-1, -1, -1, [b"x"]), acks=-1)
            self.assertEqual((err, base), (0, 10))
        b.stop()
        b.start()
        with kwire.Conn(b.port) as c:
            self.assertEqual(earliest(c, "dr", 0), 4)
            self.assertEqual(earliest(c, "dr", 1), 10)
            self.assertEqual(delete_records(c, 1, {"dr": [(0, 7)]}), {("dr", 0): (0, 7)})
        b.kill9()
        b.start()
        with kwire.Conn(b.port) as c:
            self.assertEqual(earliest(c, "dr", 0), 7)
            err, start, first = fetch(c, "dr", 0, 7)
            self.assertEqual((err, start, first), (0, 7, 7))


if __name__ == "__main__":
    main()
