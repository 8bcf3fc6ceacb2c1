#!/usr/bin/env python3
"""The old message formats over raw sockets, cohortd against Apache Kafka 3.9.2
(the last release that serves them; KIP-896 removed them in 4.0): the same
requests go to both brokers in the same run and their answers are compared.

- Produce v0, v1 and v2 with good and bad magic 0/1 message sets: every
  error code and base offset equals 3.9's, but for the cases README.md lists
  where 3.9 fails with an internal error (KNOWN_DIFFERENCES, checked both
  ways); topic settings (LogAppendTime, compaction, max.message.bytes,
  compression.type); a bad partition fails alone, acks=0 closes the
  connection on both.
- Fetch v0-v3: the down-converted records byte for byte (uncompressed and
  gzip wrappers; the overflow headers and cut messages at the end, the hard
  partition limit of v0-v2, the first batch larger than the limit at v3,
  128 KiB conversion chunks), zstd topics.
- ListOffsets v0: latest, earliest, by time, max_num_offsets.
Requests are written by hand (kwire_legacy.py), independent of cohort's code.
"""
import struct
import time

import harness
import kwire
import kwire_legacy as L
from kafka_ref import BothBrokers

m = L.message

SETTINGS = {"group.initial.rebalance.delay.ms": "0"}

# Produce cases: name -> records. Offsets and timestamps fixed, so both
# brokers store the same bytes.
PRODUCE_CASES = [
    ("empty", b""),
    ("partial entry", m(b"v", b"k")[:20]),
    ("magic 0", m(b"v", b"k", magic=0) + m(b"w", None, magic=0) + m(None, b"k2", magic=0)),
    ("magic 1 CreateTime", m(b"v1", b"k", timestamp=1000) + m(b"v2", None, timestamp=900)),
    ("trailing partial entry", m(b"v1", b"k", timestamp=1000) + m(b"v2")[:10]),
    ("size below 14", m(b"v")[:8] + struct.pack(">i", 13) + m(b"v")[12:]),
    ("magic 5", (lambda e: e[:16] + b"\x05" + e[17:])(m(b"v"))),
    ("magic -1", (lambda e: e[:16] + b"\xff" + e[17:])(m(b"v"))),
    ("CRC", (lambda e: e[:-1] + b"X")(m(b"v"))),
    ("CRC of the second", m(b"a") + (lambda e: e[:-1] + b"X")(m(b"b"))),
    ("key length past the end",
     L.fix_crc((lambda e: e[:26] + struct.pack(">i", 1000) + e[30:])(m(b"v", b"k", timestamp=5)))),
    ("codec 5", m(b"v", None, attributes=5, timestamp=5)),
    ("zstd wrapper", m(b"v", None, attributes=4, timestamp=5)),
    ("wrapper with a null value", m(None, None, attributes=L.GZIP, timestamp=5)),
    ("wrapper value not gzip", m(b"not gzip at all", None, attributes=L.GZIP, timestamp=5)),
    ("wrapper without messages", L.gzip_wrapper(b"")),
    ("nested compression", L.gzip_wrapper(L.gzip_wrapper(m(b"x")))),
    ("inner magic differs", L.gzip_wrapper(m(b"a", offset=0) + m(b"b", offset=1, magic=0), offset=1)),
    ("inner CRC", L.gzip_wrapper((lambda e: e[:-1] + b"X")(m(b"a")))),
    ("inner size below 14", L.gzip_wrapper(m(b"a")[:8] + struct.pack(">i", 3) + m(b"a")[12:])),
    ("wrapper offset below the last inner",
     L.gzip_wrapper(m(b"a", offset=0) + m(b"b", offset=5), offset=4)),
    ("wrapper offset 0", L.gzip_wrapper(m(b"a", offset=0) + m(b"b", offset=1), offset=0)),
    ("wrapper offset past the last inner",
     L.gzip_wrapper(m(b"a", offset=0) + m(b"b", offset=1), offset=90)),
    ("magic 0 wrapper", L.gzip_wrapper(m(b"a", magic=0, offset=3) + m(b"b", magic=0, offset=4),
                                       magic=0)),
    ("two wrappers", L.gzip_wrapper(m(b"a")) + L.gzip_wrapper(m(b"b"))),
    ("a message and a wrapper", m(b"a") + L.gzip_wrapper(m(b"b"))),
    ("magic 0 then 1", m(b"a", magic=0) + m(b"b", magic=1)),
    ("LogAppendTime without timestamp", m(b"a", attributes=L.LOG_APPEND_TIME, timestamp=-1)),
    ("LogAppendTime with timestamp", m(b"a", attributes=L.LOG_APPEND_TIME, timestamp=5000)),
    ("timestamp -5", m(b"a", timestamp=-5)),
    ("LogAppendTime wrapper",
     L.gzip_wrapper(m(b"a", timestamp=1, offset=0) + m(b"b", timestamp=2, offset=1),
                    timestamp=777, offset=1, attributes=L.LOG_APPEND_TIME)),
    ("inner partial", L.gzip_wrapper(m(b"a", offset=0) + m(b"bbbbbb", offset=1)[:20])),
]

# Where cohortd answers on purpose what README.md's "where cohort differs"
# says: Kafka 3.9 fails with an internal error (UNKNOWN_SERVER_ERROR).
KNOWN_DIFFERENCES = {
    "key length past the end": (L.UNKNOWN_SERVER_ERROR, L.CORRUPT_MESSAGE),
    "codec 5": (L.UNKNOWN_SERVER_ERROR, L.INVALID_RECORD),
    "wrapper value not gzip": (L.UNKNOWN_SERVER_ERROR, L.CORRUPT_MESSAGE),
    "timestamp -5": (L.UNKNOWN_SERVER_ERROR, L.INVALID_TIMESTAMP),
}


def batch_v2(n, ts, headers=False):
    """A record batch v2 (Produce v3) of n records "k<i>"/"v<i>", written by hand."""
    recs = b""
    for i in range(n):
        key, val = b"k%d" % i, b"v%d" % i
        body = b"\x00" + kwire_varint(i) + kwire_varint(i) + kwire_varint(len(key)) + key
        body += kwire_varint(len(val)) + val
        if headers:
            body += kwire_varint(1) + kwire_varint(1) + b"h" + kwire_varint(1) + b"x"
        else:
            body += kwire_varint(0)
        recs += kwire_varint(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0, n - 1, ts, ts + n - 1, -1, -1, -1, n) + recs
    crc = crc32c(after_crc)
    head = struct.pack(">ibI", 0, 2, crc)
    return struct.pack(">qi", 0, len(head) + len(after_crc)) + head + after_crc


def kwire_varint(v):
    z = (v << 1) ^ (v >> 63)
    out = b""
    while True:
        b = z & 0x7f
        z >>= 7
        if z:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


_CRC32C = []


def crc32c(data):
    if not _CRC32C:
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            _CRC32C.append(c)
    c = 0xffffffff
    for b in data:
        c = _CRC32C[(c ^ b) & 0xff] ^ (c >> 8)
    return c ^ 0xffffffff


def produce_v3(conn, topic, records, partition=0):
    """Produce v3 (a batch v2): (error, base offset)."""
    w = kwire.Writer(False)
    w.string(None).int16(1).int32(10000).array_len(1).string(topic).array_len(1)
    w.int32(partition).raw(struct.pack(">i", len(records)) + records)
    r = conn.call(L.API_PRODUCE, 3, w.bytes())
    r.array_len()
    r.string()
    r.array_len()
    r.int32()
    err, base = r.int16(), r.int64()
    r.int64()
    return err, base


class LegacyVersusKafka39(BothBrokers):
    settings = SETTINGS

    def both(self, topics, scenario):
        """Creates the topics on both brokers, runs scenario(conn) on each:
        (Kafka's result, cohortd's)."""
        out = []
        for b in (self.kafka, self.cohortd):
            L.create_topics_ready(b.port, topics)
            with kwire.Conn(b.port) as c:
                out.append(scenario(c))
        return out

    def assert_same(self, theirs, ours, what):
        diff = L.differences(theirs, ours)
        if diff:
            self.fail("%s differ (Kafka 3.9 | cohortd):\n%s" % (what, "\n".join(diff[:60])))

    # ------------------------------------------------------------------ Produce
    def test_produce_v0_v2_cases(self):
        def scenario(c):
            out = {}
            for v in (0, 1, 2):
                for name, rec in PRODUCE_CASES:
                    err, base, lat = L.produce(c, v, "lr-produce", {0: rec})[0]
                    out[(v, name)] = (err, base, lat)
            # what was stored, back through the newest old version
            out["fetch"] = L.fetch(c, 3, "lr-produce", [(0, 0, 1 << 20)])[0]
            return out
        theirs, ours = self.both([("lr-produce", 1, {})], scenario)
        for (v, name), (k39, mine) in [((v, n), d) for v in (0, 1, 2)
                                       for n, d in KNOWN_DIFFERENCES.items()]:
            self.assertEqual(theirs[(v, name)][0], k39, "Kafka 3.9, v%d %s" % (v, name))
            self.assertEqual(ours[(v, name)][0], mine, "cohortd, v%d %s" % (v, name))
            theirs[(v, name)] = ours[(v, name)] = None
        self.assert_same(theirs, ours, "Produce v0-v2 answers")
        self.assertEqual(ours[(2, "magic 0")], (0, ours[(2, "magic 0")][1], -1))
        self.assertGreater(ours[(2, "magic 0")][1], 0)

    def test_produce_topic_settings(self):
        topics = [("lr-lat", 1, {"message.timestamp.type": "LogAppendTime"}),
                  ("lr-compact", 1, {"cleanup.policy": "compact"}),
                  ("lr-small", 1, {"max.message.bytes": "200"}),
                  ("lr-gzip", 1, {"compression.type": "gzip"}),
                  ("lr-none", 1, {"compression.type": "uncompressed"})]
        wrap = L.gzip_wrapper(m(b"a", b"k", timestamp=10, offset=0) +
                              m(b"b", b"k", timestamp=11, offset=1), timestamp=11, offset=1)

        def scenario(c):
            out = {}
            err, base, lat = L.produce(c, 2, "lr-lat", {0: m(b"a", b"k", timestamp=5)})[0]
            out["lat produce"] = (err, base, lat > 1e12)
            out["lat with attribute"] = L.produce(
                c, 2, "lr-lat", {0: m(b"a", b"k", attributes=L.LOG_APPEND_TIME, timestamp=7)})[0]
            _, _, rec = L.fetch(c, 2, "lr-lat", [(0, 0, 1 << 20)])[0]
            out["lat fetch"] = [(e["attributes"], e["timestamp"] > 1e12)
                                for e in L.parse_message_set(rec) if "partial" not in e]
            out["compact no key"] = L.produce(c, 1, "lr-compact", {0: m(b"a", None)})[0]
            out["compact no key inner"] = L.produce(
                c, 1, "lr-compact", {0: L.gzip_wrapper(m(b"a", b"k") + m(b"b", None))})[0]
            out["compact keyed"] = L.produce(c, 1, "lr-compact", {0: m(b"a", b"k")})[0]
            out["small entry too large"] = L.produce(c, 2, "lr-small", {0: m(b"x" * 200)})[0]
            out["small converted too large"] = L.produce(
                c, 2, "lr-small", {0: b"".join(m(b"y" * 40) for _ in range(6))})[0]
            out["small fits"] = L.produce(c, 2, "lr-small", {0: m(b"z" * 40)})[0]
            out["gzip from plain"] = L.produce(
                c, 2, "lr-gzip", {0: m(b"a", b"k", timestamp=3) + m(b"b", b"k", timestamp=4)})[0]
            out["gzip fetch"] = L.fetch(c, 2, "lr-gzip", [(0, 0, 1 << 20)])[0]
            out["none from gzip"] = L.produce(c, 2, "lr-none", {0: wrap})[0]
            out["none fetch"] = L.fetch(c, 2, "lr-none", [(0, 0, 1 << 20)])[0]
            return out
        theirs, ours = self.both(topics, scenario)
        self.assert_same(theirs, ours, "topic settings")
        self.assertEqual(ours["lat produce"], (0, 0, True))
        self.assertEqual(ours["small converted too large"][0], L.MESSAGE_TOO_LARGE)
        gz = L.parse_message_set(ours["gzip fetch"][2])
        self.assertEqual(gz[0]["attributes"] & 7, L.GZIP, gz)

    def test_bad_partition_fails_alone(self):
        def scenario(c):
            out = {}
            parts = {0: m(b"good", b"k"), 1: (lambda e: e[:-1] + b"X")(m(b"bad")),
                     2: m(b"good2", b"k")}
            out["mixed"] = L.produce(c, 0, "lr-alone", parts)
            out["after"] = L.produce(c, 1, "lr-alone", {1: m(b"fine")})
            # acks=0: a failed partition can only be told by closing
            c.send(kwire.request(L.API_PRODUCE, 0, c.next_corr(),
                                 L.produce_body("lr-alone", {0: m(b"x")[:-1] + b"?"}, acks=0)))
            out["acks=0 closed"] = c.wait_closed(10.0)
            return out
        theirs, ours = self.both([("lr-alone", 3, {})], scenario)
        self.assert_same(theirs, ours, "per-partition errors")
        self.assertEqual(ours["mixed"][1][0], L.CORRUPT_MESSAGE)
        self.assertTrue(ours["acks=0 closed"])

    # -------------------------------------------------------------------- Fetch
    def fetch_data(self, c, topic):
        """Mixed data: magic 1 plain, a gzip v1 wrapper, magic 0 plain, a
        batch v2 with headers (Produce v3), a magic 0 gzip wrapper."""
        L.produce(c, 2, topic, {0: m(b"a", b"k0", timestamp=1000) + m(b"b", None, timestamp=1001)
                                + m(None, b"k2", timestamp=1002)})
        L.produce(c, 2, topic, {0: L.gzip_wrapper(
            m(b"c", b"k3", timestamp=2000, offset=0) + m(b"d", b"k4", timestamp=2001, offset=1)
            + m(b"e", b"k5", timestamp=2002, offset=2), timestamp=2002, offset=2)})
        L.produce(c, 0, topic, {0: m(b"f", b"k6", magic=0) + m(b"g", b"k7", magic=0)})
        self.assertEqual(produce_v3(c, topic, batch_v2(3, 3000, headers=True))[0], 0)
        L.produce(c, 1, topic, {0: L.gzip_wrapper(m(b"h", b"k11", magic=0) +
                                                  m(b"i", b"k12", magic=0), magic=0)})

    def test_fetch_v0_v3_down_conversion(self):
        def scenario(c):
            self.fetch_data(c, "lr-fetch")
            out = {}
            for v in range(4):
                for off in (0, 1, 4, 6, 8, 9, 11, 13):
                    for pmax in (1 << 20, 200, 100, 30, 0):
                        out[(v, off, pmax)] = L.fetch(c, v, "lr-fetch", [(0, off, pmax)])[0]
            # two partitions in one request: v3's MaxBytes, v0-v2's sum
            L.produce(c, 1, "lr-fetch", {1: b"".join(m(b"p1-%d" % i, timestamp=i)
                                                     for i in range(9))})
            for v in range(4):
                out[(v, "two")] = L.fetch(c, v, "lr-fetch", [(0, 4, 150), (1, 0, 150)],
                                          max_bytes=200)
            return out
        theirs, ours = self.both([("lr-fetch", 2, {})], scenario)
        self.assert_same(theirs, ours, "Fetch v0-v3 responses (raw records)")
        # the checks above compare bytes; make sure they compare something
        err, hw, rec = ours[(2, 0, 1 << 20)]
        self.assertEqual((err, hw), (0, 13))
        ents = L.parse_message_set(rec)
        self.assertEqual([e.get("magic") for e in ents[:4]], [1, 1, 1, 1])
        self.assertEqual([i["value"] for i in L.inner_messages(ents[3])], [b"c", b"d", b"e"])
        self.assertEqual(ours[(0, 0, 30)][2], b"")   # v0: hard limit inside the first batch
        self.assertGreater(len(ours[(3, 0, 30)][2]), 30)   # v3: the first batch whole

    def test_fetch_large_chunks_and_cut(self):
        """Enough data for several 128 KiB conversion chunks, fetched with
        limits that cut the converted stream inside a message."""
        def scenario(c):
            for i in range(60):
                L.produce(c, 2, "lr-big", {0: b"".join(
                    m(b"%05d-" % j + b"x" * 700, b"k%d" % j, timestamp=100 + j)
                    for j in range(i * 10, i * 10 + 10))})
            out = {}
            for v in (0, 2, 3):
                for off, pmax in ((0, 1 << 20), (5, 300000), (123, 1 << 20), (0, 7000)):
                    out[(v, off, pmax)] = L.fetch(c, v, "lr-big", [(0, off, pmax)])[0]
            return out
        theirs, ours = self.both([("lr-big", 1, {})], scenario)
        self.assert_same(theirs, ours, "large down-converted fetches")
        self.assertGreater(len(ours[(0, 0, 1 << 20)][2]), 3 * 128 * 1024)

    def test_fetch_zstd(self):
        """A zstd topic cannot be read before Fetch v10 (KafkaApis checks the
        topic's compression.type); a zstd batch in a producer-codec topic
        cannot be down-converted (the first batch: the partition's error)."""
        def scenario(c):
            out = {}
            for v in (0, 2, 3, 4, 9, 10):
                out[("topic", v)] = L.fetch(c, v, "lr-zstd", [(0, 0, 1000)])
            return out
        theirs, ours = self.both([("lr-zstd", 1, {"compression.type": "zstd"})], scenario)
        self.assert_same(theirs, ours, "zstd topic")
        for v in (0, 2, 3, 4, 9):
            self.assertEqual(ours[("topic", v)][0][:2], (L.UNSUPPORTED_COMPRESSION_TYPE, -1))
        self.assertEqual(ours[("topic", 10)][0][0], 0)

    # -------------------------------------------------------------- ListOffsets
    def test_list_offsets_v0(self):
        def scenario(c):
            for i in range(3):
                L.produce(c, 2, "lr-lo", {0: m(b"v%d" % i, timestamp=10 + i)})
            now = int(time.time() * 1000)
            out = {}
            for label, ts, n in (("latest 1", -1, 1), ("latest 10", -1, 10), ("earliest", -2, 10),
                                 ("-3", -3, 1), ("-7", -7, 1), ("time 0", 0, 10),
                                 ("future", now + 3600000, 10), ("latest 0", -1, 0)):
                out[label] = L.list_offsets_v0(c, "lr-lo", [(0, ts, n)])
            out["unknown"] = L.list_offsets_v0(c, "lr-lo-none", [(0, -1, 1)])
            out["bad partition"] = L.list_offsets_v0(c, "lr-lo", [(5, -1, 1)])
            out["negative max"] = L.list_offsets_v0(c, "lr-lo", [(0, -1, -1)])[0][0]
            out["empty topic"] = L.list_offsets_v0(c, "lr-lo-empty", [(0, -1, 5), (0, -2, 5)])
            return out
        theirs, ours = self.both([("lr-lo", 1, {}), ("lr-lo-empty", 1, {})], scenario)
        self.assertEqual(theirs.pop("negative max"), L.UNKNOWN_SERVER_ERROR)
        self.assertEqual(ours.pop("negative max"), 42)   # INVALID_REQUEST, README.md
        self.assert_same(theirs, ours, "ListOffsets v0")
        self.assertEqual(ours["latest 10"], {0: (0, [3, 0])})


if __name__ == "__main__":
    harness.main()
