"""Chaos for libcohort members (issue 10, "Proven by"), in groups with a
librdkafka 2.0.2 member (c/group_consumer.c), against one cohortd whose
every connection goes through fault_proxy.py:

- a member stalling past max.poll.interval.ms: it leaves the group, the
  other member gets its partitions, it is told LOST at its next poll and
  rejoins;
- a connection stalled by the proxy (the member's open connections go
  silent, TCP up): the member detects it by request.timeout.ms, reconnects
  and goes on in its generation, without a rebalance;
- a duplicate static instance: a second member with the same
  group.instance.id replaces the first, which is fenced and told so
  (cohort_poll returns FENCED_INSTANCE_ID, fatal); the new one gets the
  same partitions.

After each, over every member's stamped callbacks and reads: no partition
owned by two members at any moment (test_client_libcohort_kinds.owned_twice),
committed offsets never move backwards, every produced record read at least
once with commit-in-revoke, none re-read below the last acknowledged
commit, and the final commits are the end offsets.

Static restart (no rebalance, same partitions) is
test_client_libcohort.py's test_static_member_restart, on both brokers.
"""
import os

from client_scenarios import member_flags
from fault_proxy import FaultProxy
from harness import BrokerTestCase, free_port, main
from test_client_libcohort_kinds import (COHORT_MEMBER, RDK_MEMBER, LineMember, check_history,
                                        keep_output, wait_committed)
from test_group_helpers import GROUP_SETTINGS, create_topics, produce, wait_until

PROXY_PORT = free_port()
PARTITIONS = 4


class LibcohortChaos(BrokerTestCase):
    broker_settings = dict(GROUP_SETTINGS, **{
        "advertised.listeners": "PLAINTEXT://127.0.0.1:%d" % PROXY_PORT})

    @classmethod
    def setUpClass(cls):
        for path, what in ((COHORT_MEMBER, "COHORT_MEMBER"), (RDK_MEMBER, "GROUP_CONSUMER")):
            if not os.access(path, os.X_OK):
                raise SystemExit("FAIL: %s not built: %r" % (what, path))
        super().setUpClass()
        cls.proxy = FaultProxy(cls.broker.port, PROXY_PORT)

    @classmethod
    def tearDownClass(cls):
        cls.proxy.close()
        super().tearDownClass()

    def setUp(self):
        self.topic = self.group = "chaos-" + self._testMethodName[5:].replace("_", "-")
        create_topics(self.broker.port, {self.topic: PARTITIONS})
        self.parts = {(self.topic, p) for p in range(PARTITIONS)}
        self.ends = {p: 0 for p in range(PARTITIONS)}
        self.everyone = []

    def member(self, kind, name, session_ms=3000, instance=None, extra=()):
        flags = member_flags("127.0.0.1:%d" % PROXY_PORT, self.group, [self.topic], name,
                             "range", instance, session_ms, True, 10, 0)
        prog = [COHORT_MEMBER] if kind == "libcohort" else [RDK_MEMBER]
        for kv in extra:
            flags += ["-X", kv]
        m = LineMember(kind, prog + flags, name)
        self.addCleanup(m.cleanup)
        self.addCleanup(keep_output, self, m)
        self.everyone.append(m)
        return m

    def produce(self, per_part=20):
        for p, n in produce(self.broker.bootstrap, self.topic, PARTITIONS, per_part).items():
            self.ends[p] += n

    def n_read(self):
        return len({(p, o) for m in self.everyone for (t, p, o, us) in m.msgs})

    def wait_read_all(self):
        want = sum(self.ends.values())
        wait_until(lambda: self.n_read() >= want, 60, "all %d records read" % want, 0.1)

    def wait_owners(self, members, each_owns=True, timeout=60):
        def ok():
            for m in self.everyone:
                if m.fatal and m in members:
                    raise AssertionError("%s: %s" % (m.name, m.fatal))
            owned = [tp for m in members for tp in m.assignment]
            return (len(owned) == len(set(owned)) and set(owned) == self.parts and
                    (not each_owns or all(m.assignment for m in members)))
        wait_until(ok, timeout, "the partitions owned once by %s" % [m.name for m in members])

    def after_checks(self, live):
        """The checks every chaos scenario ends with; closes the live members."""
        self.wait_read_all()
        wait_committed(self.broker.bootstrap, self.group, live, self.topic, self.ends)
        for m in live:
            self.assertIsNone(m.fatal, m.name)
            self.assertEqual(m.close(), 0, m.name)
        check_history(self, self.everyone, self.topic, self.ends)

    def test_poll_interval_stall(self):
        """max.poll.interval.ms 2 s and a 4 s pause of the polling thread (the
        I/O thread keeps heartbeating): the member leaves, the librdkafka
        member gets every partition, the staller is told LOST and rejoins."""
        self.produce()
        a = self.member("libcohort", "chaos-poll-a", extra=["max.poll.interval.ms=2000"])
        b = self.member("librdkafka", "chaos-poll-b")
        self.wait_owners([a, b])
        self.wait_read_all()
        mine = set(a.assignment)
        a.send("stall 4000")
        self.produce()
        wait_until(lambda: b.assignment == self.parts, 30, "b to own every partition")
        a.wait(lambda s: "STALLED 4000" in s.lines, 30, "the stall to end")

        def lost_then_assigned(s):
            kinds = [k for k, _ in s.events if k in ("ASSIGNED", "REVOKED", "LOST")]
            return "LOST" in kinds and "ASSIGNED" in kinds[kinds.index("LOST"):]
        a.wait(lost_then_assigned, 30, "LOST, then ASSIGNED again")
        with a.cv:
            lost = [tps for k, tps in a.events if k == "LOST"]
        self.assertEqual(lost, [frozenset(mine)], "told LOST of what it had")
        self.wait_owners([a, b])
        self.produce()
        self.after_checks([a, b])

    def test_stalled_connection(self):
        """The libcohort member's connections (coordinator, fetch) go silent
        through the proxy: request.timeout.ms (1.5 s, well inside the 6 s
        session) ends its requests and closes them; it reconnects and reads
        on in the same generation: no rebalance callback anywhere."""
        self.produce()
        a = self.member("libcohort", "chaos-stall-a", session_ms=6000,
                        extra=["request.timeout.ms=1500"])
        b = self.member("librdkafka", "chaos-stall-b", session_ms=6000)
        self.wait_owners([a, b])
        self.wait_read_all()
        events = (a.n_rebalance_events(), b.n_rebalance_events())
        self.assertGreaterEqual(self.proxy.stall_connections(a.name), 2,
                                "a member has a coordinator and a fetch connection")
        self.produce()
        self.wait_read_all()   # a's partitions are read by a: nobody else owns them
        self.assertGreaterEqual(self.proxy.stalled_closed, 2,
                                "the silent connections closed by the member")
        self.assertEqual((a.n_rebalance_events(), b.n_rebalance_events()), events,
                         "a rebalance: %s / %s" % (a.events, b.events))
        self.after_checks([a, b])

    def test_duplicate_static_instance(self):
        """Two members with one group.instance.id: the second replaces the
        first in the group, which is fenced: its partitions lost (the lost
        callback), then FENCED_INSTANCE_ID from cohort_poll (fatal), and it
        stops; the second owns what the first owned and the other member
        sees no rebalance."""
        self.produce()
        a = self.member("libcohort", "chaos-dup-a", session_ms=6000, instance="dup")
        b = self.member("librdkafka", "chaos-dup-b", session_ms=6000)
        self.wait_owners([a, b])
        self.wait_read_all()
        mine, events = set(a.assignment), b.n_rebalance_events()
        with a.cv:   # what a saw before (its first generation may have been alone)
            seen = len(a.events)
        a2 = self.member("libcohort", "chaos-dup-a2", session_ms=6000, instance="dup")
        a.wait(lambda s: s.fatal is not None, 60, "FENCED_INSTANCE_ID")
        self.assertTrue(a.fatal.startswith("FENCED_INSTANCE_ID"), a.fatal)
        a.wait(lambda s: s.closed, 60, "the fenced member to stop")
        with a.cv:   # cohort.h: fencing loses the partitions, told before the error
            lost = [tps for k, tps in a.events[seen:] if k in ("LOST", "REVOKED")]
            told = [l.split(" ")[0] for l in a.lines if l.startswith(("LOST ", "FATAL "))]
        self.assertEqual(lost, [frozenset(mine)])
        self.assertEqual(told, ["LOST", "FATAL"])
        self.wait_owners([a2, b])
        self.assertEqual(a2.assignment, mine)
        self.assertEqual(b.n_rebalance_events(), events, b.events)
        self.produce()
        self.after_checks([a2, b])


if __name__ == "__main__":
    main()
