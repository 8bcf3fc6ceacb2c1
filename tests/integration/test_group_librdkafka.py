"""Consumer groups of librdkafka C API consumers (c/group_consumer.c) on cohortd:
range, roundrobin and cooperative-sticky groups form with every partition
assigned exactly once; members join, leave (close) and crash (SIGKILL: their
partitions move after the session timeout); static membership (a restart
within the session timeout causes no rebalance for the others; a second
instance with the same group.instance.id fences the first); commit and
committed offsets."""
import os
import sys
import time

from harness import BrokerTestCase, main
from test_group_helpers import (GROUP_SETTINGS, RdkConsumer, all_parts, create_topics,
                                describe_cover, require_group_apis, skip, wait_cover,
                                wait_until)

SESSION_MS = 3000


class GroupTestBase(BrokerTestCase):
    broker_settings = dict(GROUP_SETTINGS)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not require_group_apis(cls.broker.port):
            cls.tearDownClass()
            skip("cohortd does not serve JoinGroup yet")

    def consumer(self, group, topics, **kw):
        c = RdkConsumer(self.broker.bootstrap, group, list(topics), **kw)
        self.addCleanup(c.cleanup)
        self.addCleanup(self._dump_on_failure, c)
        return c

    def _dump_on_failure(self, c):
        # unittest has no public "did this test fail" hook; print only on request
        if os.environ.get("GROUP_IT_VERBOSE"):
            sys.stderr.write("--- %s stdout:\n%s\n" % (c.name, "\n".join(c.lines[-40:])))


class LibrdkafkaGroups(GroupTestBase):

    def run_lifecycle(self, assignor):
        topics = {"lc-%s-a" % assignor: 6, "lc-%s-b" % assignor: 3}
        create_topics(self.broker.port, topics)
        parts = all_parts(topics)
        group = "g-lifecycle-" + assignor
        cs = [self.consumer(group, topics, assignor=assignor, session_ms=SESSION_MS,
                            name="%s-%d" % (assignor, i)) for i in range(3)]
        # forms: every partition exactly once, everyone owns something
        wait_cover(cs, parts, each_owns=True)

        # a member joins
        cs.append(self.consumer(group, topics, assignor=assignor, session_ms=SESSION_MS,
                                name="%s-3" % assignor))
        wait_cover(cs, parts, each_owns=True)

        # a member leaves (close: LeaveGroup)
        leaving = cs.pop(0)
        self.assertEqual(leaving.close(), 0)
        self.assertTrue(leaving.closed)
        wait_cover(cs, parts, each_owns=True)

        # a member crashes (SIGKILL): its partitions move after the session timeout
        crashed = cs.pop(0)
        lost = set(crashed.assignment)
        self.assertTrue(lost)
        crashed.kill9()
        wait_cover(cs, parts, timeout=SESSION_MS / 1000 + 60, each_owns=True)
        owners = {tp for c in cs for tp in c.assignment}
        self.assertTrue(lost <= owners)

        if assignor == "cooperative-sticky":
            # cooperative: a survivor never gave up a partition it kept
            for c in cs:
                lost_events = [e for e in c.events if e[0] == "LOST"]
                self.assertEqual(lost_events, [], c.name)
        for c in cs:
            self.assertIsNone(c.fatal, c.name)
            self.assertEqual(c.close(), 0)

    def test_range(self):
        self.run_lifecycle("range")

    def test_roundrobin(self):
        self.run_lifecycle("roundrobin")

    def test_cooperative_sticky(self):
        self.run_lifecycle("cooperative-sticky")

    def test_cooperative_sticky_keeps_partitions(self):
        """Adding a member to a cooperative group: the old members only lose
        partitions (incremental revoke), they never get a full revoke."""
        topics = {"coop-keep": 8}
        create_topics(self.broker.port, topics)
        parts = all_parts(topics)
        cs = [self.consumer("g-coop-keep", topics, assignor="cooperative-sticky",
                            session_ms=SESSION_MS, name="ck-%d" % i) for i in range(2)]
        wait_cover(cs, parts, each_owns=True)
        before = {c.name: set(c.assignment) for c in cs}
        cs.append(self.consumer("g-coop-keep", topics, assignor="cooperative-sticky",
                                session_ms=SESSION_MS, name="ck-2"))
        wait_cover(cs, parts, each_owns=True)
        for c in cs[:2]:
            self.assertTrue(c.assignment <= before[c.name],
                            "%s gained partitions %s" % (c.name, c.assignment - before[c.name]))
        for c in cs:
            self.assertEqual(c.close(), 0)

    def test_static_member_restart_no_rebalance(self):
        topics = {"static-r": 4}
        create_topics(self.broker.port, topics)
        parts = all_parts(topics)
        g = "g-static-restart"
        a = self.consumer(g, topics, instance="inst-a", session_ms=10000, name="sa")
        b = self.consumer(g, topics, instance="inst-b", session_ms=10000, name="sb")
        wait_cover([a, b], parts, each_owns=True)
        time.sleep(1.0)  # let any trailing rebalance finish before counting
        wait_cover([a, b], parts, each_owns=True)
        b_events = b.n_rebalance_events()
        a_parts = set(a.assignment)

        a.kill9()  # a static member does not leave; it comes back within the session
        a2 = self.consumer(g, topics, instance="inst-a", session_ms=10000, name="sa2")
        wait_cover([a2, b], parts, each_owns=True)
        self.assertEqual(a2.assignment, a_parts, "the restarted static member got "
                         "another assignment: %s" % describe_cover([a2, b]))
        # give a (wrong) rebalance the time to reach b: a heartbeat interval or two
        time.sleep(3.0)
        self.assertEqual(b.n_rebalance_events(), b_events,
                         "the other member saw a rebalance: %s" % b.events)
        self.assertIsNone(b.fatal)
        self.assertIsNone(a2.fatal)
        for c in (a2, b):
            self.assertEqual(c.close(), 0)

    def test_static_member_fenced(self):
        topics = {"static-f": 2}
        create_topics(self.broker.port, topics)
        parts = all_parts(topics)
        g = "g-static-fenced"
        a = self.consumer(g, topics, instance="inst-f", session_ms=10000, name="fa")
        wait_cover([a], parts)
        a2 = self.consumer(g, topics, instance="inst-f", session_ms=10000, name="fa2")
        a.wait(lambda s: s.fatal, 60, "FATAL error on the fenced instance")
        self.assertIn("FENCED_INSTANCE_ID", a.fatal)
        wait_cover([a2], parts)
        self.assertIsNone(a2.fatal)
        a.kill9()
        self.assertEqual(a2.close(), 0)

    def test_commit_and_committed(self):
        topics = {"commit-t": 3}
        create_topics(self.broker.port, topics)
        parts = all_parts(topics)
        g = "g-commit"
        a = self.consumer(g, topics, session_ms=SESSION_MS, name="cm")
        wait_cover([a], parts)
        for p in range(3):
            self.assertEqual(a.commit("commit-t", p, 10 * p + 0), "NO_ERROR")
        self.assertEqual(a.commit("commit-t", 1, 42), "NO_ERROR")
        self.assertEqual(a.fetch_committed("commit-t", [0, 1, 2]), {0: 0, 1: 42, 2: 20})
        self.assertEqual(a.close(), 0)
        # a later member of the group sees the same committed offsets
        b = self.consumer(g, topics, session_ms=SESSION_MS, name="cm2")
        wait_cover([b], parts)
        self.assertEqual(b.fetch_committed("commit-t", [0, 1, 2]), {0: 0, 1: 42, 2: 20})
        # a partition with no commit: -1001 (RD_KAFKA_OFFSET_INVALID) in librdkafka
        create_topics(self.broker.port, {"commit-none": 1})
        self.assertEqual(b.fetch_committed("commit-none", [0]), {0: -1001})
        self.assertEqual(b.close(), 0)


if __name__ == "__main__":
    gc = os.environ.get("GROUP_CONSUMER")
    if not gc or not os.access(gc, os.X_OK):
        skip("GROUP_CONSUMER (c/group_consumer.c) is not built")
    main()
