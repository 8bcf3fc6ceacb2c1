"""A __consumer_offsets partition whose log cannot be opened at startup.

Its groups must be refused with Kafka's errors (NOT_COORDINATOR from the
group APIs, COORDINATOR_NOT_AVAILABLE from FindCoordinator) instead of
OffsetFetch answering "never committed" (-1, no error), which makes a
consumer apply auto.offset.reset and re-read or skip data. Groups on the
other partitions keep working, the failure is logged at ERROR with the
partition and the cause, and once the log can be opened again the broker
loads it by itself (retry with backoff) and the group resumes from its
committed offsets.

The open is made to fail with a regular file where the partition's
directory should be: the tests run as root, where chmod stops nothing.
"""
import os
import re
import shutil
import unittest

import kwire
from harness import Broker, main
from test_group_helpers import (GROUP_SETTINGS, RdkConsumer, create_topics, produce,
                                require_group_apis, skip, wait_until)

NOT_COORDINATOR = 16
COORDINATOR_NOT_AVAILABLE = 15
NPART = 5  # offsets.topic.num.partitions in GROUP_SETTINGS


def java_hash(s):
    """Java's String.hashCode over UTF-16 code units, as a signed int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group):
    """Kafka's Utils.abs(groupId.hashCode()) % partitions (abs(MIN) = 0)."""
    h = java_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % NPART


def group_on(partition, not_on=None, prefix="gl"):
    for i in range(1000):
        g = "%s-%d" % (prefix, i)
        p = partition_for(g)
        if (partition is None or p == partition) and p != not_on:
            return g
    raise AssertionError("no group name found")


class CoordinatorLoadFailure(unittest.TestCase):

    def broker(self):
        b = Broker(settings=dict(GROUP_SETTINGS), name="group-load")
        self.addCleanup(b.cleanup)
        b.start()
        if not require_group_apis(b.port):
            b.stop()
            skip("cohortd does not serve the group APIs yet")
        return b

    def test_partition_that_cannot_be_opened(self):
        b = self.broker()
        create_topics(b.port, {"gl-t": 1})
        produce(b.bootstrap, "gl-t", 1, 10)
        bad = group_on(None)
        pbad = partition_for(bad)
        good = group_on(None, not_on=pbad)
        with kwire.Conn(b.port) as c:
            self.assertEqual(kwire.offset_commit(c, 2, bad, [("gl-t", 0, 6, "")]),
                             {("gl-t", 0): 0})
            self.assertEqual(kwire.offset_commit(c, 2, good, [("gl-t", 0, 3, "")]),
                             {("gl-t", 0): 0})
        b.stop()

        part_dir = os.path.join(b.data_dir, "__consumer_offsets-%d" % pbad)
        aside = part_dir + ".aside"
        self.assertTrue(os.path.isdir(part_dir), part_dir)
        os.rename(part_dir, aside)
        with open(part_dir, "w") as f:
            f.write("not a directory\n")
        b.start()

        # Logged at ERROR, naming the partition and the cause.
        err = b.stderr()
        pat = r"ERROR \[cohortd\] __consumer_offsets-%d cannot be loaded: .*Not a directory" % pbad
        self.assertRegex(err, pat)

        with kwire.Conn(b.port) as c:
            # OffsetFetch: an error at every version, never offset -1 without one.
            got = kwire.offset_fetch(c, 1, bad, {"gl-t": [0]})
            self.assertEqual(got, {("gl-t", 0): (-1, b"", NOT_COORDINATOR)})
            for v in (2, 5, 7, 8):
                with self.assertRaisesRegex(kwire.ProtocolError, "error %d" % NOT_COORDINATOR,
                                            msg="OffsetFetch v%d" % v):
                    kwire.offset_fetch(c, v, bad, {"gl-t": [0]})
            self.assertEqual(kwire.offset_commit(c, 2, bad, [("gl-t", 0, 7, "")]),
                             {("gl-t", 0): NOT_COORDINATOR})
            # FindCoordinator does not hand the group to this broker.
            for v in (1, 3):
                fc = kwire.find_coordinator(c, v, bad)[0]
                self.assertEqual(fc["error_code"], COORDINATOR_NOT_AVAILABLE, (v, fc))
                self.assertEqual(fc["node_id"], -1)
            fc = {x["key"]: x for x in kwire.find_coordinator(c, 4, [bad, good])}
            self.assertEqual(fc[bad]["error_code"], COORDINATOR_NOT_AVAILABLE)
            self.assertEqual(fc[good]["error_code"], 0)
            self.assertEqual(fc[good]["port"], b.port)
            # The other partitions serve as before.
            self.assertEqual(kwire.offset_fetch(c, 5, good, {"gl-t": [0]}),
                             {("gl-t", 0): (3, b"", 0)})
            self.assertEqual(kwire.offset_commit(c, 2, good, [("gl-t", 0, 4, "")]),
                             {("gl-t", 0): 0})
            lg = kwire.parse_list_groups(c.call(16, 3, kwire.list_groups_body(3)), 3)
            self.assertEqual(lg["error_code"], 0)
            self.assertIn(good, lg["groups"])
            self.assertNotIn(bad, lg["groups"])

        # A consumer of the group waits (no coordinator) instead of resetting
        # to earliest; once the log is back it is loaded without a restart
        # and the consumer starts from the committed offset 6.
        cons = RdkConsumer(b.bootstrap, bad, ["gl-t"], name="gl-c", session_ms=6000)
        self.addCleanup(cons.cleanup)
        cons.wait(lambda s: any(l.startswith("READY") for l in s.lines), 30, "READY")
        os.unlink(part_dir)
        os.rename(aside, part_dir)
        wait_until(lambda: re.search(r"__consumer_offsets-%d loaded after \d+ failed attempt"
                                     % pbad, b.stderr()), 120,
                   "the broker to load __consumer_offsets-%d again" % pbad, interval=0.2)
        cons.wait(lambda s: s.msgs, 120, "messages")
        first = cons.msgs[0]
        self.assertEqual((first[0], first[1], first[2]), ("gl-t", 0, 6),
                         "the consumer did not resume from the committed offset")
        with kwire.Conn(b.port) as c:
            self.assertEqual(kwire.offset_fetch(c, 5, good, {"gl-t": [0]}),
                             {("gl-t", 0): (4, b"", 0)})
        self.assertEqual(cons.close(), 0)
        b.stop()


if __name__ == "__main__":
    main()
