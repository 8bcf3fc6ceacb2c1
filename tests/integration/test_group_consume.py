"""Consumption end to end through consumer groups (needs Produce and Fetch):
librdkafka consumers that commit their positions every few messages and in
the revoke callback consume every partition's messages through a series of
rebalances (joins and closes): every message read, none twice. Then a member
crash (SIGKILL) and a cohortd SIGKILL + restart while consuming: every
message read at least once, and nothing re-read below an acknowledged
commit."""
import os
import sys
import time
import unittest

from harness import Broker, main
from test_group_helpers import (GROUP_SETTINGS, RdkConsumer, check_reads, create_topics,
                                have_produce_fetch, produce, require_group_apis, skip,
                                wait_until)


class GroupConsume(unittest.TestCase):

    def broker(self):
        b = Broker(settings=dict(GROUP_SETTINGS), name="group-consume")
        self.addCleanup(b.cleanup)
        b.start()
        if not require_group_apis(b.port) or not have_produce_fetch(b.port):
            b.stop()
            skip("cohortd does not serve JoinGroup, Produce and Fetch yet")
        return b

    def consumer(self, b, group, topic, assignor, name):
        c = RdkConsumer(b.bootstrap, group, [topic], assignor=assignor, session_ms=3000,
                        name=name, commit_on_revoke=True, commit_every=20, delay_ms=2)
        self.addCleanup(c.cleanup)
        return c

    @staticmethod
    def distinct(cs, topic):
        return len({(p, o) for c in cs for (t, p, o, _) in c.msgs if t == topic})

    def wait_read(self, cs, topic, n, timeout=120):
        wait_until(lambda: self.distinct(cs, topic) >= n, timeout,
                   "%d distinct messages read" % n)

    def run_series(self, assignor):
        b = self.broker()
        topic = "cons-%s" % assignor
        nparts, per = 6, 300
        create_topics(b.port, {topic: nparts})
        ends = produce(b.bootstrap, topic, nparts, per)
        total = nparts * per
        g = "g-cons-" + assignor
        everyone = []

        def add(name):
            c = self.consumer(b, g, topic, assignor, name)
            everyone.append(c)
            return c

        c1 = add("s1")
        self.wait_read(everyone, topic, total // 8)
        c2 = add("s2")
        self.wait_read(everyone, topic, total // 4)
        c3 = add("s3")
        self.wait_read(everyone, topic, 3 * total // 8)
        self.assertEqual(c1.close(), 0)
        self.wait_read(everyone, topic, total // 2)
        c4 = add("s4")
        self.wait_read(everyone, topic, 5 * total // 8)
        self.assertEqual(c2.close(), 0)
        self.wait_read(everyone, topic, total)
        for c in (c3, c4):
            c.send("commitpos")
        time.sleep(0.5)
        for c in (c3, c4):
            self.assertIsNone(c.fatal)
            self.assertEqual(c.close(), 0)
        # the series really moved partitions between readers (on a loaded
        # machine a late joiner may find nothing left to read)
        readers = [c.name for c in everyone if c.msgs]
        self.assertGreaterEqual(len(readers), 2, "only %s read anything" % readers)
        dups, problems = check_reads(everyone, topic, ends)
        self.assertEqual(problems, [])
        # A periodic commit sent with generation N just after the member's
        # JoinGroup can reach the coordinator after generation N+1 formed:
        # it is refused with ILLEGAL_GENERATION (Apache Kafka's
        # validateOffsetCommit does the same) and librdkafka then drops its
        # assignment, so the new owner re-reads from the last acknowledged
        # commit. Duplicates are allowed only on partitions whose commit was
        # refused or that were declared lost; elsewhere there must be none.
        refused = {p for c in everyone for (t, p, o, e, us) in c.commits
                   if t == topic and e != "NO_ERROR"}
        for c in everyone:  # partitions librdkafka declared lost after that
            for line in c.lines:
                if line.startswith("LOST "):
                    for tp in line.split(" ", 1)[1].split(","):
                        if tp.startswith(topic + ":"):
                            refused.add(int(tp.rsplit(":", 1)[1]))
        seen, unexplained = set(), 0
        for c in everyone:
            for (t, p, o, us) in c.msgs:
                if t == topic and (p, o) in seen and p not in refused:
                    unexplained += 1
                seen.add((p, o))
        self.assertEqual(unexplained, 0,
                         "messages read twice across graceful rebalances (%d duplicates, "
                         "refused commits on partitions %s)" % (dups, sorted(refused)))
        # the final commits are the end offsets
        last = add("s5")
        wait_until(lambda: last.assignment, 60, "s5 assigned")
        got = last.fetch_committed(topic, list(range(nparts)))
        self.assertEqual(got, ends)
        self.assertEqual(last.close(), 0)
        b.stop()

    def test_eager_range_series(self):
        self.run_series("range")

    def test_cooperative_sticky_series(self):
        self.run_series("cooperative-sticky")

    def test_member_crash_and_cohortd_kill9(self):
        b = self.broker()
        topic = "cons-crash"
        nparts, per = 4, 400
        create_topics(b.port, {topic: nparts})
        ends = produce(b.bootstrap, topic, nparts, per)
        total = nparts * per
        g = "g-cons-crash"
        cs = [self.consumer(b, g, topic, "range", "k%d" % i) for i in range(2)]
        self.wait_read(cs, topic, total // 5)
        cs[0].kill9()          # its partitions move after the session timeout
        cs.append(self.consumer(b, g, topic, "range", "k2"))
        self.wait_read(cs, topic, 2 * total // 5)
        b.kill9()              # the coordinator and the logs go down
        b.start()
        cs.append(self.consumer(b, g, topic, "range", "k3"))
        self.wait_read(cs, topic, total, timeout=180)
        for c in cs[1:]:
            c.send("commitpos")
        time.sleep(0.5)
        for c in cs[1:]:
            self.assertIsNone(c.fatal, c.name)
        for c in cs[:3]:
            self.assertTrue(c.msgs, "%s read nothing" % c.name)
        dups, problems = check_reads(cs, topic, ends)
        self.assertEqual(problems, [])
        sys.stdout.write("crash + kill -9: %d messages read twice (at or above a commit)\n" % dups)
        for c in cs[1:]:
            self.assertEqual(c.close(), 0)
        b.stop()


if __name__ == "__main__":
    gc = os.environ.get("GROUP_CONSUMER")
    if not gc or not os.access(gc, os.X_OK):
        skip("GROUP_CONSUMER (c/group_consumer.c) is not built")
    main(requires_modules=["confluent_kafka"])
