"""libcohort against a real multi-broker Kafka (issue 10, "Proven by"):
three Apache Kafka 4.4 nodes on 127.0.0.1 (kafka_ref.KafkaCluster: each a
combined broker and KRaft controller, `__consumer_offsets` replicated three
times over three partitions), two libcohort members (c/cohort_member.c)
bootstrapped on node 1 only.

- The group is one whose coordinator is not node 1, and the topic's
  partitions are led by more than one broker.
- The coordinator's broker is killed (SIGKILL) while the group consumes:
  the members lose it (disconnect, then NOT_COORDINATOR or
  COORDINATOR_LOAD_IN_PROGRESS from the others), find the new coordinator
  (their commits are accepted there), and go on; no committed offset is
  lost (each partition's commit at least what it was before the kill).
- That broker is restarted, then a broker leading partitions of the topic
  is killed: the members' fetches move to the new leaders (the records
  produced after the kill are read).
After both, as in the chaos tests: no partition owned twice on the stamped
timeline, every record read, none re-read below an acknowledged commit,
commits never backwards, final commits at the end offsets.

Three JVM brokers do not fit `make test`'s time budget: this runs in
`make test-cluster` (ctest label "cluster", excluded from `make test`).
"""
import os
import sys
import time
import unittest

import kwire
from client_scenarios import member_flags
from harness import main
from kafka_ref import KafkaCluster
from test_client_libcohort_kinds import (COHORT_MEMBER, LineMember, check_history,
                                        group_offsets, keep_output, wait_committed)
from test_group_helpers import produce, wait_until

TOPIC = "cluster-t"
PARTITIONS = 6
SESSION_MS = 10000   # longer than a broker's fencing plus the new coordinator's load
SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "500",
    "num.partitions": "3",
    "broker.heartbeat.interval.ms": "500",
    "broker.session.timeout.ms": "3000",   # a killed broker is fenced after 3 s
    "replica.lag.time.max.ms": "3000",
}


def wait_metadata(port, ok, what, timeout=60):
    """Metadata v9 from the broker at port, until ok(metadata) holds."""
    last = {}

    def check():
        try:
            with kwire.Conn(port) as c:
                last["md"] = md = kwire.metadata(c, 9, [TOPIC], allow_auto=False)
        except OSError:
            return False
        return md if ok(md) else None
    try:
        return wait_until(check, timeout, what, 0.2)
    except AssertionError:
        raise AssertionError("%s; last metadata %s" % (what, last.get("md")))


def fully_replicated(md):
    """Every partition of the topic has a leader and three replicas in sync."""
    t = md["topics"].get(TOPIC)
    return t is not None and len(t["partitions"]) == PARTITIONS and all(
        p["leader"] >= 0 and len(p["isr"]) == 3 for p in t["partitions"])


def leaders(md):
    t = md["topics"][TOPIC]
    return {p["partition"]: p["leader"] for p in t["partitions"]}


def coordinator(port, group):
    with kwire.Conn(port) as c:
        (r,) = kwire.find_coordinator(c, 3, group)
    return r["node_id"] if r["error_code"] == 0 else None


class LibcohortKafkaCluster(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(COHORT_MEMBER, os.X_OK):
            raise SystemExit("FAIL: COHORT_MEMBER not built: %r" % COHORT_MEMBER)
        cls.cluster = KafkaCluster(3, settings=SETTINGS)
        t0 = time.monotonic()
        try:
            cls.cluster.start()
        except BaseException:
            cls.cluster.cleanup()
            raise
        print("three Kafka nodes serving after %.1f s" % (time.monotonic() - t0))
        cls.all_bootstrap = ",".join(k.bootstrap for k in cls.cluster.nodes)

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()
        cls.cluster.cleanup()

    def member(self, name, group):
        flags = member_flags(self.cluster.bootstrap, group, [TOPIC], name, "cooperative-sticky",
                             None, SESSION_MS, True, 10, 0)
        m = LineMember("libcohort", [COHORT_MEMBER] + flags, name)
        self.addCleanup(m.cleanup)
        self.addCleanup(keep_output, self, m)
        return m

    def produce(self, ends, per_part=25):
        for p, n in produce(self.all_bootstrap, TOPIC, PARTITIONS, per_part).items():
            ends[p] += n

    def test_coordinator_and_leader_killed(self):
        port1 = self.cluster.nodes[0].port
        # serving is not yet unfenced: a topic created before all three are
        # has its leaders on the first one
        wait_metadata(port1, lambda md: len(md["brokers"]) == 3, "three unfenced brokers")
        with kwire.Conn(port1) as c:
            res = kwire.create_topics(c, [(TOPIC, PARTITIONS, 3)])
        self.assertEqual(res["topics"][TOPIC]["error_code"], 0, res)
        md = wait_metadata(port1, lambda md: fully_replicated(md), "the topic fully replicated")
        self.assertGreater(len(set(leaders(md).values())), 1, "partitions led by one broker")
        # a group whose coordinator is not the bootstrap node
        found = {}

        def pick():
            for i in range(40):
                node = coordinator(port1, "cluster-g%d" % i)
                if node is not None and node != 1:
                    found["g"], found["node"] = "cluster-g%d" % i, node
                    return True
            return False
        wait_until(pick, 60, "a group coordinated by node 2 or 3", 0.5)
        group, coord = found["g"], found["node"]
        ends = {p: 0 for p in range(PARTITIONS)}
        self.produce(ends)
        a, b = self.member("cluster-a", group), self.member("cluster-b", group)
        members = [a, b]
        parts = {(TOPIC, p) for p in range(PARTITIONS)}

        def stable():
            owned = [tp for m in members for tp in m.assignment]
            return len(owned) == len(set(owned)) and set(owned) == parts and all(
                m.assignment for m in members)

        def read_all():
            want = sum(ends.values())
            wait_until(lambda: len({(p, o) for m in members for (t, p, o, us) in m.msgs})
                       >= want, 90, "all %d records read" % want, 0.1)
        wait_until(stable, 60, "a stable group of two")
        read_all()
        wait_committed(self.cluster.bootstrap, group, members, TOPIC, ends)
        before = dict(ends)

        # 1. the coordinator's broker dies
        killed_at = time.monotonic_ns() // 1000
        self.cluster.node(coord).crash()
        wait_until(lambda: coordinator(port1, group) not in (None, coord), 60,
                   "a new coordinator")
        # Kafka's coordinator answers from the offsets topic up to its high
        # watermark: just after the failover the new leader's may still lag
        # its log (one run in three here read 20 for a commit of 25 at once,
        # 25 a moment later), so the commits made before the kill must come
        # back, not necessarily in the first answer
        want = {(TOPIC, p): o for p, o in before.items()}
        seen = []

        def kept():
            got = group_offsets(self.cluster.bootstrap, group)
            seen.append(got)
            return got == want
        try:
            wait_until(kept, 60, "the commits made before the kill", 0.5)
        except AssertionError:
            self.fail("the commits made before the kill: the new coordinator answers %r, not %r"
                      % (seen[-1] if seen else None, want))
        older = [got for got in seen[:-1] if got]   # None: no answer yet (loading)
        if older:
            print("the new coordinator answered %r first, the commits %d reads later"
                  % (older[0], len(seen) - 1), file=sys.stderr)
        # ...and not because a member committed them again meanwhile
        back_at = time.monotonic_ns() // 1000
        for m in members:
            again = [(p, o) for (t, p, o, e, us) in m.commits if killed_at < us <= back_at]
            self.assertEqual(again, [], "%s committed between the kill and the read" % m.name)
        self.produce(ends)
        read_all()
        wait_committed(self.all_bootstrap, group, members, TOPIC, ends)
        for m in members:
            after = [(p, o) for (t, p, o, e, us) in m.commits if e == "NO_ERROR" and us > killed_at]
            self.assertTrue(after, "%s: no commit accepted after the kill" % m.name)
        wait_until(stable, 60, "the group stable again")

        # 2. it comes back; a partition leader dies
        self.cluster.node(coord).start()
        md = wait_metadata(port1, fully_replicated, "the restarted broker back in every ISR")
        led = leaders(md)
        victim = next((n for n in sorted(set(led.values()), reverse=True) if n != 1), 1)
        moved = sorted(p for p, n in led.items() if n == victim)
        self.cluster.node(victim).crash()
        port = next(k.port for k in self.cluster.nodes if k.running() and k is not
                    self.cluster.node(victim))
        wait_metadata(port, lambda md: all(leaders(md).get(p, -1) not in (victim, -1) for p in moved),
                      "new leaders for partitions %s" % moved)
        n_before = {p: max([o for m in members for (t, pp, o, us) in m.msgs if pp == p] or [-1])
                    for p in moved}
        self.produce(ends)
        read_all()
        for p in moved:   # fetched from the new leader
            got = max(o for m in members for (t, pp, o, us) in m.msgs if pp == p)
            self.assertGreater(got, n_before[p], "partition %d after its leader died" % p)
        wait_committed(self.all_bootstrap, group, members, TOPIC, ends)
        for m in members:
            self.assertIsNone(m.fatal, m.name)
            self.assertEqual(m.close(), 0, m.name)
        check_history(self, members, TOPIC, ends)


if __name__ == "__main__":
    main()
