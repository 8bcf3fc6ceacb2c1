"""Fetch and ListOffsets over raw sockets (kwire, independent of cohort's
codec), for the versions no installed client speaks: Fetch v12 (flexible),
v13+ (topic ids) up to v17. Checks the whole response parses with no byte
left over, the records are the batches produced, long polling waits for
max_wait_ms when nothing comes and OFFSET_OUT_OF_RANGE past the end."""
import struct
import subprocess
import time

import kwire
import test_data_idempotent as idem
from harness import BrokerTestCase, main

T = "raw-data"
OFFSET_OUT_OF_RANGE = 1


def fetch_body(v, topic, topic_id, part, offset, max_wait=0, min_bytes=1, max_bytes=1 << 20,
               part_max=1 << 20):
    w = kwire.Writer(v >= 12)
    if v <= 14:
        w.int32(-1)                        # ReplicaId
    w.int32(max_wait).int32(min_bytes).int32(max_bytes).int8(0)
    if v >= 7:
        w.int32(0).int32(-1)               # SessionId, SessionEpoch
    w.array_len(1)
    if v <= 12:
        w.string(topic)
    else:
        w.uuid(topic_id)
    w.array_len(1)
    w.int32(part)
    if v >= 9:
        w.int32(-1)                        # CurrentLeaderEpoch
    w.int64(offset)
    if v >= 12:
        w.int32(-1)                        # LastFetchedEpoch
    if v >= 5:
        w.int64(-1)                        # LogStartOffset
    w.int32(part_max)                      # PartitionMaxBytes
    if v >= 12:
        w.tags()
        w.tags()
    if v >= 7:
        w.array_len(0)                     # ForgottenTopicsData
    if v >= 11:
        w.string("")                       # RackId
    if v >= 12:
        w.tags()
    return w.bytes()


def parse_fetch(r, v):
    r.int32()  # throttle
    top = r.int16() if v >= 7 else 0
    if v >= 7:
        r.int32()  # session id
    out = []
    for _ in range(r.array_len()):
        t = r.string() if v <= 12 else r.uuid()
        for _ in range(r.array_len()):
            p = {"topic": t, "partition": r.int32(), "error": r.int16(), "hw": r.int64(),
                 "lso": r.int64(), "start": r.int64() if v >= 5 else None}
            r.array_len(nullable=True)  # aborted transactions: null
            if v >= 11:
                r.int32()  # preferred read replica
            n = (r.uvarint() - 1) if r.flexible else r.int32()
            p["records"] = r._take(n) if n > 0 else b""
            if r.flexible:
                r.tags()
            out.append(p)
        if r.flexible:
            r.tags()
    if r.flexible:
        r.tags()
    return top, out


def fetch_multi_body(max_bytes, parts, part_max=1 << 20, min_bytes=1, max_wait=0):
    """Fetch v11 (non-flexible) for [(topic, partition, offset)], in order."""
    w = kwire.Writer(False)
    w.int32(-1).int32(max_wait).int32(min_bytes).int32(max_bytes).int8(0)
    w.int32(0).int32(-1)                   # SessionId, SessionEpoch
    w.array_len(len(parts))
    for topic, part, offset in parts:
        w.string(topic).array_len(1)
        w.int32(part).int32(-1).int64(offset).int64(-1).int32(part_max)
    w.array_len(0)
    w.string("")
    return w.bytes()


class RawData(BrokerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        with kwire.Conn(cls.broker.port) as c:
            kwire.create_topics(c, [(T, 1, 1)], 4)
            md = kwire.metadata(c, 12, [T])
            cls.topic_id = md["topics"][T]["topic_id"]
        p = subprocess.run(["kcat", "-b", cls.broker.bootstrap, "-P", "-t", T],
                           input="".join("m%d\n" % i for i in range(10)), text=True,
                           capture_output=True, timeout=30)
        assert p.returncode == 0, p.stderr

    def call_fetch(self, c, v, offset, max_wait=0):
        corr = c.next_corr()
        c.send(kwire.request(1, v, corr, fetch_body(v, T, self.topic_id, 0, offset, max_wait),
                             header_version=2 if v >= 12 else 1))
        r = c.recv_response(corr, flexible_header=v >= 12, flexible_body=v >= 12)
        res = parse_fetch(r, v)
        self.assertEqual(r.remaining(), 0, "trailing bytes in Fetch v%d" % v)
        return res

    def test_versions(self):
        with kwire.Conn(self.broker.port) as c:
            for v in (4, 7, 11, 12, 13, 15, 16, 17):
                top, parts = self.call_fetch(c, v, 0)
                self.assertEqual(top, 0, v)
                self.assertEqual(len(parts), 1)
                pd = parts[0]
                self.assertEqual(pd["error"], 0, v)
                self.assertEqual(pd["hw"], pd["lso"])
                self.assertEqual(pd["hw"], 10)
                if True:
                    base, blen = struct.unpack(">qi", pd["records"][:12])
                    self.assertEqual(base, 0)
                    self.assertEqual(pd["records"][16], 2)  # magic
            top, parts = self.call_fetch(c, 12, 10 ** 9)
            self.assertEqual(parts[0]["error"], OFFSET_OUT_OF_RANGE)

    def test_long_poll_timeout(self):
        with kwire.Conn(self.broker.port) as c:
            _, parts = self.call_fetch(c, 11, 0)
            hw = parts[0]["hw"]
            t0 = time.time()
            _, parts = self.call_fetch(c, 13, hw, max_wait=400)
            dt = time.time() - t0
            self.assertEqual(parts[0]["error"], 0)
            self.assertEqual(parts[0]["records"], b"")
            self.assertGreater(dt, 0.35)
            self.assertLess(dt, 3)

    def test_max_bytes_after_first_partition(self):
        """Kafka's ReplicaManager.readFromLog: only until some partition has
        returned data is a first batch larger than the limits sent whole
        (minOneMessage); after that, a partition whose first batch exceeds
        what is left of MaxBytes gets no records (firstEntryIncomplete is
        replaced by an empty set), no error, its watermarks, and the
        partitions after it are still read with what is left."""
        t = "raw-maxbytes"
        with kwire.Conn(self.broker.port) as c:
            kwire.create_topics(c, [(t, 3, 1)], 4)
            small = idem.batch(-1, -1, -1, [b"s%d" % i for i in range(3)])
            big = idem.batch(-1, -1, -1, [b"B" * 1000 for _ in range(4)])
            tiny = idem.batch(-1, -1, -1, [b"t"])
            self.assertEqual(idem.produce(c, t, 0, small), (0, 0))
            self.assertEqual(idem.produce(c, t, 1, big), (0, 0))
            self.assertEqual(idem.produce(c, t, 2, tiny), (0, 0))

            def fetch(max_bytes, parts):
                r = c.call(1, 11, fetch_multi_body(max_bytes, parts))
                top, out = parse_fetch(r, 11)
                self.assertEqual(r.remaining(), 0)
                self.assertEqual(top, 0)
                return out

            limit = len(small) + len(tiny) + 100  # room for small and tiny, not big
            out = fetch(limit, [(t, 0, 0), (t, 1, 0), (t, 2, 0)])
            self.assertEqual([p["error"] for p in out], [0, 0, 0])
            self.assertEqual([p["hw"] for p in out], [3, 4, 1])
            self.assertEqual(out[0]["records"][16:], small[16:])
            self.assertEqual(out[1]["records"], b"")
            self.assertEqual(out[2]["records"][16:], tiny[16:])
            # the big batch first: sent whole though it exceeds MaxBytes
            out = fetch(limit, [(t, 1, 0), (t, 0, 0)])
            self.assertEqual(out[0]["records"][16:], big[16:])
            self.assertEqual(out[1]["records"], b"")  # nothing left
            # an empty partition before it does not count as data
            out = fetch(limit, [(t, 0, 3), (t, 1, 0)])
            self.assertEqual(out[0]["records"], b"")
            self.assertEqual(out[1]["records"][16:], big[16:])


class FetchLimits(BrokerTestCase):
    """Kafka's size rules for a Fetch (KIP-74; ReplicaManager.readFromLog and
    KafkaApis.handleFetchRequest): every partition, the first included, reads
    at most min(PartitionMaxBytes, what is left of MaxBytes); only the first
    batch of the response may be larger than that, and is then sent whole;
    MinBytes is capped at MaxBytes."""

    BATCH_RECORDS = 5
    RECORD = 1000

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sizes = {}
        with kwire.Conn(cls.broker.port) as c:
            kwire.create_topics(c, [("raw-lim", 2, 1)], 4)
            cls.topic_id = kwire.metadata(c, 12, ["raw-lim"])["topics"]["raw-lim"]["topic_id"]
            for p in (0, 1):
                for i in range(20):
                    b = idem.batch(-1, -1, -1, [b"%d" % p * cls.RECORD] * cls.BATCH_RECORDS)
                    assert idem.produce(c, "raw-lim", p, b) == (0, i * cls.BATCH_RECORDS)
                    cls.sizes[p] = len(b)

    def call(self, c, v, body):
        corr = c.next_corr()
        c.send(kwire.request(1, v, corr, body, header_version=2 if v >= 12 else 1))
        data = c.recv_frame()
        r = kwire.Reader(data)
        self.assertEqual(r.int32(), corr)
        if v >= 12:
            r.flexible = True
            r.tags()
        r.flexible = v >= 12
        top, parts = parse_fetch(r, v)
        self.assertEqual(r.remaining(), 0)
        self.assertEqual(top, 0)
        return len(data), parts

    def test_max_bytes_caps_the_first_partition(self):
        batch = self.sizes[0]
        for v in (4, 7, 11, 12, 13, 17):
            for max_bytes in (batch + 1, 3 * batch + 100, 12000):
                with self.subTest(version=v, max_bytes=max_bytes), kwire.Conn(self.broker.port) as c:
                    size, [p] = self.call(c, v, fetch_body(v, "raw-lim", self.topic_id, 0, 0,
                                                           max_bytes=max_bytes,
                                                           part_max=20 * 1000 * 1000))
                    self.assertEqual(p["error"], 0)
                    self.assertEqual(len(p["records"]), max_bytes, "a partial last batch "
                                     "fills MaxBytes exactly, as Kafka's LogSegment.read")
                    self.assertLess(size, max_bytes + 200, "response larger than MaxBytes")

    def test_first_batch_larger_than_max_bytes_is_sent_whole(self):
        batch = self.sizes[0]
        for max_bytes in (0, 1, batch - 1):
            with self.subTest(max_bytes=max_bytes), kwire.Conn(self.broker.port) as c:
                _, parts = self.call(c, 11, fetch_multi_body(
                    max_bytes, [("raw-lim", 0, 0), ("raw-lim", 1, 0)], part_max=1 << 20))
                self.assertEqual(len(parts[0]["records"]), batch)
                self.assertEqual(parts[1]["records"], b"")
                self.assertEqual([p["hw"] for p in parts], [100, 100])
        # PartitionMaxBytes smaller than the first batch: the same
        with kwire.Conn(self.broker.port) as c:
            _, [p] = self.call(c, 11, fetch_multi_body(1 << 20, [("raw-lim", 0, 5)],
                                                       part_max=10))
            self.assertEqual(len(p["records"]), batch)

    def test_partitions_share_max_bytes(self):
        batch = self.sizes[0]
        for max_bytes, part_max in ((3 * batch + 500, 1 << 20), (40000, 12000),
                                    (2 * batch, 2 * batch), (5 * batch, 3 * batch),
                                    (2 * batch + 100, 2 * batch)):
            with self.subTest(max_bytes=max_bytes, part_max=part_max), \
                    kwire.Conn(self.broker.port) as c:
                size, parts = self.call(c, 11, fetch_multi_body(
                    max_bytes, [("raw-lim", 0, 0), ("raw-lim", 1, 0)], part_max=part_max))
                n0, n1 = len(parts[0]["records"]), len(parts[1]["records"])
                self.assertEqual(n0, min(part_max, max_bytes))
                # less room than p1's first batch: no records for p1
                # (firstEntryIncomplete), else what is left
                room = min(part_max, max_bytes - n0)
                self.assertEqual(n1, room if room >= batch else 0)
                self.assertLess(size, max_bytes + 200)

    def test_min_bytes_capped_at_max_bytes(self):
        """MinBytes 10 MB, MaxBytes 12000 and 100 KB in the log: Kafka waits
        for min(MinBytes, MaxBytes), so it answers at once instead of
        waiting out MaxWaitMs (five minutes here, far past the socket
        timeout)."""
        with kwire.Conn(self.broker.port, timeout=30) as c:
            _, [p] = self.call(c, 11, fetch_multi_body(12000, [("raw-lim", 0, 0)],
                                                       min_bytes=10 * 1000 * 1000,
                                                       max_wait=300000))
            self.assertEqual(len(p["records"]), 12000)

    def test_min_bytes_zero_answers_at_once(self):
        """MinBytes 0: Kafka answers at once even with nothing to read."""
        with kwire.Conn(self.broker.port, timeout=30) as c:
            _, [p] = self.call(c, 11, fetch_multi_body(1 << 20, [("raw-lim", 0, 100)],
                                                       min_bytes=0, max_wait=300000))
            self.assertEqual((p["error"], p["records"], p["hw"]), (0, b"", 100))


if __name__ == "__main__":
    main(requires_tools=("kcat",))
