"""Consumer-group scenarios shared by the registry-client tests
(test_client_*.py): each client runs as member processes speaking
c/group_consumer.c's line protocol (test_group_helpers.MemberProcess), so
one scenario checks every client the same way.

A test class sets CLIENT (a name for messages) and member_argv(); the
scenarios then assert real outcomes:
- consume_through_rebalances: members join, one leaves, one crashes while
  the group consumes; every record is read, a record is read twice only
  where Kafka allows it (a crashed member's partitions, a refused commit, a
  lost assignment) and never below an acknowledged commit; the final
  commits, read back by another client, are the end offsets.
- eager / cooperative callbacks: what each member is told on a join.
- static_restart: a static member killed and restarted within its session
  keeps its partitions and the other member sees no rebalance.
- lost_after_stop: a member stopped (SIGSTOP) past its session timeout is
  told its partitions were lost when it resumes, and rejoins.
"""
import os
import re
import signal
import sys
import time

from harness import BrokerTestCase, run
from test_group_helpers import (GROUP_SETTINGS, MemberProcess, all_parts, check_reads,
                                cover_ok, create_topics, describe_cover, wait_until)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VENV_PYTHON = os.path.join(ROOT, ".deps", "venv", "bin", "python")
SESSION_MS = 3000


def require_file(path, what):
    """A registry client the install step should have put there: its absence
    is a failure of `make test`'s install step, never a skip."""
    if not os.path.exists(path):
        raise SystemExit("FAIL: %s not found at %s (tools/install-clients.sh installs it)"
                         % (what, path))


def venv_offsets(bootstrap, group):
    """The group's committed offsets {(topic, partition): offset}, read with
    kafka-python 2.2's admin client (OffsetFetch from an independent client)."""
    from kafka import KafkaAdminClient
    adm = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="readback",
                           request_timeout_ms=30000)
    try:
        res = adm.list_consumer_group_offsets(group)
    finally:
        adm.close()
    return {(tp.topic, tp.partition): om.offset for tp, om in res.items()}


def confluent_offsets(bootstrap, group):
    """The same read with confluent-kafka 2.x's AdminClient (for the
    kafka-python consumer tests: another client than the one committing)."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient
    adm = AdminClient({"bootstrap.servers": bootstrap})
    r = adm.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                        request_timeout=20)[group].result(30)
    return {(tp.topic, tp.partition): tp.offset for tp in r.topic_partitions}


def describe_assignment(bootstrap, group):
    """{member_id: {(topic, partition)}} and the state, as DescribeGroups tells."""
    from kafka import KafkaAdminClient
    adm = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="describe",
                           request_timeout_ms=30000)
    try:
        (d,) = adm.describe_consumer_groups([group])
    finally:
        adm.close()
    out = {}
    for m in d.members:
        a = m.member_assignment
        out[m.member_id] = {(t, p) for t, ps in (a.assignment if a else []) for p in ps}
    return d.state, out


def wait_cover(members, parts, timeout=60.0, each_owns=False):
    """test_group_helpers.wait_cover, failing at once when a member process
    died or reported a fatal error (with its stderr)."""
    def ok():
        for m in members:
            if not m.alive() or m.fatal:
                raise AssertionError("%s died (exit %s, fatal %s): %s\n%s"
                                     % (m.name, m.proc.poll(), m.fatal, m.lines[-10:],
                                        m.stderr()[-2000:]))
        return cover_ok(members, parts) and not (each_owns and
                                                 any(not m.assignment for m in members))
    try:
        wait_until(ok, timeout, "every partition assigned exactly once")
    except AssertionError as e:
        if "died" in str(e):
            raise
        raise AssertionError("assignment never covered %d partitions exactly once: %s"
                             % (len(parts), describe_cover(members)))


def callbacks(m, start=0):
    """The member's rebalance callbacks (ASSIGNED / REVOKED / LOST) as
    (kind, partitions), from its start-th event on."""
    with m.cv:
        return [(k, tps) for k, tps in m.events[start:] if k in ("ASSIGNED", "REVOKED", "LOST")]


def lost_or_refused(members, topic):
    """Partitions where Kafka's at-least-once rule allows a re-read: a
    refused commit or a LOST event in some member."""
    parts = {p for c in members for (t, p, o, e, us) in c.commits
             if t == topic and e != "NO_ERROR"}
    for c in members:
        for kind, tps in callbacks(c):
            if kind == "LOST":
                parts |= {p for (t, p) in tps if t == topic}
    return parts


def member_flags(bootstrap, group, topics, name, assignor, instance, session_ms,
                 commit_on_revoke, commit_every, delay_ms):
    """The options every member program takes (c/group_consumer.c's)."""
    argv = ["-b", bootstrap, "-g", group, "-t", ",".join(topics), "-a", assignor,
            "-s", str(session_ms), "-n", name, "-P", str(commit_every), "-D", str(delay_ms)]
    if instance:
        argv += ["-i", instance]
    if commit_on_revoke:
        argv += ["-R"]
    return argv


class ClientGroupTest(BrokerTestCase):
    """Base of the per-client classes; runs nothing itself."""

    broker_settings = dict(GROUP_SETTINGS)
    CLIENT = None
    REPORTS_ASSIGNMENT = True   # the member prints ASSIGNED/REVOKED/ASSIGNMENT
    # The member commits in its revoke callback, so a graceful rebalance
    # re-delivers nothing and nothing is re-read below an acknowledged
    # commit. False for a client without a revoke callback whose commits
    # may cross into the next generation (kafka-go): then only "every record
    # read, the final commits at the end" is checked.
    GRACEFUL_EXACTLY_ONCE = True
    read_offsets = staticmethod(venv_offsets)   # commits read back by another client

    def member_argv(self, *flags):
        """The command of one member process, given member_flags' arguments
        after the bootstrap."""
        raise NotImplementedError

    def client_faults(self, members, topic):
        """{member name: partitions} where the member's own client library is
        shown (by its logs) to have re-read records for a reason of its own;
        those re-reads are not held against the broker. None by default."""
        return {}

    def member(self, group, topics, name, assignor="range", instance=None,
               session_ms=SESSION_MS, commit_on_revoke=True, commit_every=20, delay_ms=0):
        argv = self.member_argv(group, list(topics), name, assignor, instance, session_ms,
                                commit_on_revoke, commit_every, delay_ms)
        m = MemberProcess(argv, name)
        self.addCleanup(m.cleanup)
        self.addCleanup(self._dump, m)
        return m

    def _dump(self, m):
        keep = os.environ.get("GROUP_IT_KEEP_DIR")   # every member's whole stdout there
        if keep:
            with open(os.path.join(keep, "%s.%s.log" % (self.id(), m.name)), "w") as f:
                f.write("\n".join(m.lines) + "\n--- stderr:\n" + m.stderr())
        if os.environ.get("GROUP_IT_VERBOSE") or m.fatal:
            sys.stderr.write("--- %s stdout (last lines):\n%s\n--- stderr:\n%s\n"
                             % (m.name, "\n".join(m.lines[-30:]), m.stderr()[-3000:]))

    def produce(self, topic, nparts, per_part):
        """per_part records into each partition; {partition: end offset}."""
        from test_group_helpers import produce
        return produce(self.broker.bootstrap, topic, nparts, per_part)

    # -- waiting
    def wait_group(self, members, parts, group, timeout=90):
        """Every partition owned by exactly one member and every member owning
        one: from the members' own reports, or (for a client without
        rebalance callbacks) from DescribeGroups."""
        if self.REPORTS_ASSIGNMENT:
            wait_cover(members, parts, timeout=timeout, each_owns=True)
            return
        last = {}

        def ok():
            for m in members:
                if m.fatal or not m.alive():
                    raise AssertionError("%s died: %s" % (m.name, m.lines[-10:]))
            state, a = describe_assignment(self.broker.bootstrap, group)
            last["v"] = (state, a)
            owned = [tp for s in a.values() for tp in s]
            return (state == "Stable" and len(a) == len(members) and
                    len(owned) == len(set(owned)) and set(owned) == parts and
                    all(a.values()))
        try:
            wait_until(ok, timeout, "a Stable group covering every partition", interval=0.5)
        except AssertionError:
            raise AssertionError("group %s never covered %s: %s" % (group, sorted(parts),
                                                                    last.get("v")))

    @staticmethod
    def distinct(members, topic):
        return len({(p, o) for c in members for (t, p, o, _) in c.msgs if t == topic})

    def wait_read(self, members, topic, n, timeout=120):
        wait_until(lambda: self.distinct(members, topic) >= n, timeout,
                   "%d distinct records read" % n)

    def commit_final(self, m, group, ends, timeout=60):
        """commitpos on the last member, then the group's commits, read back
        by another client, must reach the end offsets."""
        want = {(t, p): e for (t, p), e in ends.items()}
        last = {}

        def done():
            # again each round: the member may still be re-reading what a
            # crashed member had read (the distinct count was reached first)
            m.send("commitpos")
            time.sleep(0.5)
            last["v"] = type(self).read_offsets(self.broker.bootstrap, group)
            return last["v"] == want
        try:
            wait_until(done, timeout, "the committed offsets to be the end offsets", 0.5)
        except AssertionError:
            raise AssertionError("committed %s, end offsets %s" % (last.get("v"), want))

    # -- scenarios
    def consume_through_rebalances(self, assignor, nparts=6, per=150, delay_ms=4):
        topic = "ct-%s-%s" % (self.CLIENT, assignor)
        group = "g-ct-%s-%s" % (self.CLIENT, assignor)
        create_topics(self.broker.port, {topic: nparts})
        ends = self.produce(topic, nparts, per)
        total = nparts * per
        parts = all_parts({topic: nparts})
        everyone = []

        def add(name):
            m = self.member(group, [topic], name, assignor=assignor, delay_ms=delay_ms)
            everyone.append(m)
            return m

        m1 = add("%s-1" % self.CLIENT)
        self.wait_group([m1], parts, group)
        self.wait_read(everyone, topic, total // 6)
        m2 = add("%s-2" % self.CLIENT)             # a member joins
        self.wait_group([m1, m2], parts, group)
        self.wait_read(everyone, topic, total // 3)
        m3 = add("%s-3" % self.CLIENT)             # another joins
        self.wait_group([m1, m2, m3], parts, group)
        self.wait_read(everyone, topic, total // 2)
        self.assertEqual(m1.close(), 0, "%s did not close cleanly" % m1.name)  # one leaves
        self.wait_group([m2, m3], parts, group)
        self.wait_read(everyone, topic, 2 * total // 3)
        # a client that does not report its assignment: any partition may have been m3's
        crashed = set(m3.assignment) if self.REPORTS_ASSIGNMENT else parts
        m3.kill9()                                  # one crashes: moves after its session
        self.wait_group([m2], parts, group, timeout=SESSION_MS / 1000 + 90)
        self.wait_read(everyone, topic, total, timeout=180)
        self.commit_final(m2, group, {(topic, p): e for p, e in ends.items()})
        for m in everyone:
            self.assertIsNone(m.fatal, m.name)
        self.assertEqual(m2.close(), 0)

        readers = [m.name for m in everyone if m.msgs]
        self.assertGreaterEqual(len(readers), 2, "only %s read anything" % readers)
        dups, problems = check_reads(everyone, topic, ends)
        faults = self.client_faults(everyone, topic)
        for x in [x for x in problems if " re-read by " in x]:
            p, name = re.match(r"partition (\d+) offset \d+ re-read by (\S+) ", x).groups()
            if int(p) in faults.get(name, ()):
                problems.remove(x)
        if faults:
            sys.stdout.write("%s: the client's own fault (client_faults) on %s\n"
                             % (self.CLIENT, sorted(faults.items())))
        if not self.GRACEFUL_EXACTLY_ONCE:
            # only loss and reads past the end count (see GRACEFUL_EXACTLY_ONCE)
            problems = [x for x in problems if " re-read by " not in x]
        self.assertEqual(problems, [])
        allowed = lost_or_refused(everyone, topic)
        allowed |= {p for (t, p) in crashed}
        if not self.GRACEFUL_EXACTLY_ONCE:
            allowed = set(range(nparts))
        seen, unexplained = set(), []
        for m in everyone:
            for (t, p, o, us) in m.msgs:
                if t == topic and (p, o) in seen and p not in allowed | faults.get(m.name, set()):
                    unexplained.append((m.name, p, o))
                seen.add((p, o))
        self.assertEqual(unexplained[:10], [],
                         "%s: records read twice across graceful rebalances (%d; re-reads "
                         "allowed only on partitions %s)" % (self.CLIENT, len(unexplained),
                                                             sorted(allowed)))
        sys.stdout.write("%s %s: %d records, %d read twice (crash / refused / lost on %s)\n"
                         % (self.CLIENT, assignor, total, dups, sorted(allowed)))
        return everyone

    def eager_join_revokes_all(self, assignor):
        """Eager protocol: on a join every old member is told REVOKED with
        all it owned, then ASSIGNED its new set."""
        topic, group = "eg-%s-%s" % (self.CLIENT, assignor), "g-eg-%s-%s" % (self.CLIENT, assignor)
        create_topics(self.broker.port, {topic: 4})
        parts = all_parts({topic: 4})
        a = self.member(group, [topic], "%s-ea" % self.CLIENT, assignor=assignor)
        wait_cover([a], parts)
        self.assertEqual(callbacks(a), [("ASSIGNED", frozenset(parts))])
        n = len(a.events)
        b = self.member(group, [topic], "%s-eb" % self.CLIENT, assignor=assignor)
        wait_cover([a, b], parts, each_owns=True)
        later = callbacks(a, n)
        self.assertEqual(later[0], ("REVOKED", frozenset(parts)), later)
        self.assertEqual(later[-1], ("ASSIGNED", frozenset(a.assignment)), later)
        self.assertNotIn("LOST", [k for k, _ in later])
        for m in (b, a):
            self.assertEqual(m.close(), 0)

    def cooperative_join_keeps(self):
        """Cooperative protocol: on a join the old members are told REVOKED
        only for partitions that move, never gain any, and the moved ones
        reach the new member (second round)."""
        topic, group = "co-%s" % self.CLIENT, "g-co-%s" % self.CLIENT
        create_topics(self.broker.port, {topic: 6})
        parts = all_parts({topic: 6})
        olds = [self.member(group, [topic], "%s-co%d" % (self.CLIENT, i),
                            assignor="cooperative-sticky") for i in range(2)]
        wait_cover(olds, parts, each_owns=True)
        before = {m.name: set(m.assignment) for m in olds}
        marks = {m.name: len(m.events) for m in olds}
        new = self.member(group, [topic], "%s-co2" % self.CLIENT, assignor="cooperative-sticky")
        wait_cover(olds + [new], parts, each_owns=True)
        moved = set()
        for m in olds:
            self.assertTrue(m.assignment <= before[m.name],
                            "%s gained %s" % (m.name, m.assignment - before[m.name]))
            for kind, tps in callbacks(m, marks[m.name]):
                self.assertNotEqual(kind, "LOST", m.events)
                if kind == "REVOKED":
                    moved |= tps
                    self.assertNotEqual(set(tps), before[m.name],
                                        "%s had everything revoked" % m.name)
        self.assertEqual(moved, new.assignment, describe_cover(olds + [new]))
        for m in [new] + olds:
            self.assertEqual(m.close(), 0)

    def static_restart(self, assignor="range"):
        topic = "st-%s" % self.CLIENT
        group = "g-st-%s" % self.CLIENT
        create_topics(self.broker.port, {topic: 4})
        parts = all_parts({topic: 4})
        kw = dict(assignor=assignor, session_ms=10000)
        a = self.member(group, [topic], "%s-sa" % self.CLIENT, instance="inst-a", **kw)
        b = self.member(group, [topic], "%s-sb" % self.CLIENT, instance="inst-b", **kw)
        wait_cover([a, b], parts, each_owns=True)
        time.sleep(1.0)  # a trailing rebalance would show up in the count below
        wait_cover([a, b], parts, each_owns=True)
        b_events, a_parts = b.n_rebalance_events(), set(a.assignment)
        a.kill9()        # a static member does not leave: it comes back in its session
        a2 = self.member(group, [topic], "%s-sa2" % self.CLIENT, instance="inst-a", **kw)
        wait_cover([a2, b], parts, each_owns=True)
        self.assertEqual(a2.assignment, a_parts,
                         "the restarted static member got another assignment: %s"
                         % describe_cover([a2, b]))
        time.sleep(3.0)  # time for a (wrong) rebalance to reach b through its heartbeat
        self.assertEqual(b.n_rebalance_events(), b_events,
                         "the other member saw a rebalance: %s" % b.events)
        for m in (a2, b):
            self.assertIsNone(m.fatal, m.name)
            self.assertEqual(m.close(), 0)

    def lost_after_stop(self, assignor="range", expect="LOST"):
        """A member frozen past its session timeout: the group moves on
        without it; resumed, it learns its assignment is gone (LOST where the
        client has that callback, `expect`), and then rejoins."""
        topic = "lo-%s-%s" % (self.CLIENT, assignor)
        group = "g-lo-%s-%s" % (self.CLIENT, assignor)
        create_topics(self.broker.port, {topic: 4})
        parts = all_parts({topic: 4})
        a = self.member(group, [topic], "%s-la" % self.CLIENT, assignor=assignor)
        b = self.member(group, [topic], "%s-lb" % self.CLIENT, assignor=assignor)
        wait_cover([a, b], parts, each_owns=True)
        had = set(b.assignment)
        n = len(b.events)
        b.proc.send_signal(signal.SIGSTOP)
        try:
            wait_until(lambda: a.assignment == parts, SESSION_MS / 1000 + 60,
                       "the live member to own everything")
        finally:
            b.proc.send_signal(signal.SIGCONT)
        b.wait(lambda s: any(k == expect for k, _ in callbacks(s, n)), 60, expect + " event")
        first = next(tps for k, tps in callbacks(b, n) if k == expect)
        self.assertEqual(set(first), had)
        wait_cover([a, b], parts, each_owns=True)
        for m in (a, b):
            self.assertIsNone(m.fatal, m.name)
            self.assertEqual(m.close(), 0)


GO_CLIENTS = os.path.join(ROOT, ".deps", "go", "bin", "it-go-clients")


class GoClientTest(ClientGroupTest):
    """Members and the producer from it-go-clients (tests/integration/go)."""

    GO_CLIENT = None   # franz, sarama, kafkago

    @classmethod
    def setUpClass(cls):
        require_file(GO_CLIENTS, "it-go-clients")
        super().setUpClass()

    def member_argv(self, *flags):
        return ([GO_CLIENTS, "member", "-client", self.GO_CLIENT] +
                member_flags(self.broker.bootstrap, *flags))

    def produce(self, topic, nparts, per_part):
        """The client's own producer (acks=all, explicit partitions)."""
        p = run([GO_CLIENTS, "produce", "-client", self.GO_CLIENT, "-b", self.broker.bootstrap,
                 "-t", topic, "-p", str(nparts), "-n", str(per_part)], timeout=180)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split(), ["PRODUCED", str(nparts * per_part)])
        return {q: per_part for q in range(nparts)}


class CallbackClientTests:
    """The tests of a client with eager and cooperative protocols, rebalance
    callbacks including a lost one, and static membership (confluent-kafka,
    franz-go); mixed into a ClientGroupTest."""

    def test_consume_eager_range(self):
        self.consume_through_rebalances("range")

    def test_consume_cooperative_sticky(self):
        self.consume_through_rebalances("cooperative-sticky")

    def test_eager_callbacks(self):
        self.eager_join_revokes_all("range")

    def test_cooperative_callbacks(self):
        self.cooperative_join_keeps()

    def test_static_member_restart(self):
        self.static_restart()

    def test_on_lost(self):
        self.lost_after_stop()


NODE_MODULES = os.path.join(HERE, "node_modules")
