"""libcohort (src/client, the C client) as a group member, against cohortd
and against Apache Kafka 4.4.0 in the same test: c/cohort_member.c speaks
group_consumer.c's line protocol, so client_scenarios.py's consumer-group
scenarios run on it as on every other client:

- consume_through_rebalances with range, roundrobin, sticky and
  cooperative-sticky: members join (scale out), one leaves (scale in), one
  is killed without leaving (its partitions move after the session
  timeout); every record is read, none re-read across graceful rebalances
  (commit in revoke), none below an acknowledged commit, and the final
  commits, read back with kafka-python, are the end offsets; after each
  rebalance every partition is owned by exactly one member;
- eager: a join revokes everything first; cooperative-sticky: a join
  revokes only what moves and the old members keep the rest (KIP-429);
- a static member (group.instance.id) killed and restarted within its
  session gets its partitions back and the other member sees no rebalance;
- a member stopped past its session is told LOST when it resumes, and
  rejoins.
"""
import os
import time

from client_scenarios import CallbackClientTests, ClientGroupTest, member_flags, wait_cover
from harness import free_port, main, start_clean, stop_clean
from kafka_ref import KafkaRef
from version_proxy import VersionProxy
from test_group_helpers import (GROUP_SETTINGS, MemberProcess, all_parts, check_reads,
                                parse_parts,
                                create_topics, wait_until)

MEMBER = os.environ.get("COHORT_MEMBER", "")


def commits_backwards(members, topic):
    """Each partition's acknowledged commits, in time order across the members
    (CLOCK_MONOTONIC stamps compare across processes): those that went below
    an earlier one, as messages (none expected)."""
    commits = sorted((us, p, o, m.name) for m in members for (t, p, o, e, us) in m.commits
                     if e == "NO_ERROR" and t == topic)
    last, backwards = {}, []
    for us, p, o, name in commits:
        if p in last and o < last[p][0]:
            backwards.append("partition %d: %s committed %d after %s committed %d"
                             % (p, name, o, last[p][1], last[p][0]))
        else:
            last[p] = (o, name)
    return backwards


class LibcohortGroups(CallbackClientTests, ClientGroupTest):
    """Against cohortd."""

    CLIENT = "libcohort"

    @classmethod
    def setUpClass(cls):
        if not os.access(MEMBER, os.X_OK):
            raise SystemExit("FAIL: COHORT_MEMBER (it_cohort_member) not built: %r" % MEMBER)
        super().setUpClass()

    def member_argv(self, *flags):
        return [MEMBER] + member_flags(self.broker.bootstrap, *flags)

    def consume_and_check_revoke_commits(self, assignor):
        """consume_through_rebalances, and every commit made inside a revoke
        callback was accepted: the scenario itself lets a refused commit
        explain a re-read, but a member of the current generation committing
        in revoked() must never be refused (Kafka accepts commits of the
        current generation while the group prepares a rebalance)."""
        members = self.consume_through_rebalances(assignor)
        self.assertEqual(commits_backwards(members, "ct-%s-%s" % (self.CLIENT, assignor)), [])
        refused = []
        for m in members:
            in_revoke = False
            for line in m.lines:
                if line.startswith("REVOKED "):
                    in_revoke = True
                elif line.startswith("ASSIGNMENT "):
                    in_revoke = False
                elif in_revoke and line.startswith("COMMIT ") and " NO_ERROR " not in line:
                    refused.append((m.name, line))
        self.assertEqual(refused, [], "commits refused inside revoked()")

    def test_consume_eager_range(self):
        self.consume_and_check_revoke_commits("range")

    def test_consume_cooperative_sticky(self):
        self.consume_and_check_revoke_commits("cooperative-sticky")

    def test_consume_roundrobin(self):
        self.consume_and_check_revoke_commits("roundrobin")

    def test_consume_sticky(self):
        self.consume_and_check_revoke_commits("sticky")

    def test_heartbeats_during_slow_revoke(self):
        """Heartbeats come from libcohort's I/O thread: a member whose revoke
        callback takes twice its session timeout stays in the group (no
        LOST, its commits in revoke accepted) and the rebalance completes."""
        topic, group = "hb-libcohort", "g-hb-libcohort"
        create_topics(self.broker.port, {topic: 4})
        parts = all_parts({topic: 4})
        slow = MemberProcess([MEMBER, "-W", "6000"] + member_flags(
            self.broker.bootstrap, group, [topic], "libcohort-hb-slow", "range", None,
            3000, True, 0, 0), "libcohort-hb-slow")
        self.addCleanup(slow.cleanup)
        wait_cover([slow], parts)
        other = self.member(group, [topic], "libcohort-hb-other", session_ms=3000)
        wait_cover([slow, other], parts, timeout=90, each_owns=True)
        kinds = [k for k, _ in slow.events if k in ("REVOKED", "LOST")]
        self.assertEqual(kinds, ["REVOKED"], slow.events)
        refused = [l for l in slow.lines if l.startswith("COMMIT ") and " NO_ERROR " not in l]
        self.assertEqual(refused, [])
        for m in (other, slow):
            self.assertIsNone(m.fatal, m.name)
        self.assertEqual(other.close(), 0)
        self.assertEqual(slow.close(timeout=90), 0)

    def test_coordinator_killed(self):
        """cohortd killed with SIGKILL and restarted while the group consumes:
        the members lose their connections (coordinator and leader), find
        the coordinator again, rejoin and go on: every record read, none
        re-read below an acknowledged commit, the final commits at the end."""
        if not hasattr(self.broker, "kill9"):
            self.skipTest("needs a broker the test can restart")
        topic, group = "ck-libcohort", "g-ck-libcohort"
        create_topics(self.broker.port, {topic: 4})
        ends = self.produce(topic, 4, 150)
        members = [self.member(group, [topic], "libcohort-ck%d" % i, delay_ms=4)
                   for i in range(2)]
        self.wait_group(members, all_parts({topic: 4}), group)
        self.wait_read(members, topic, 200)
        self.broker.kill9()
        time.sleep(1.0)          # the members see refused connections meanwhile
        self.broker.start()
        self.wait_read(members, topic, 600, timeout=120)
        self.wait_group(members, all_parts({topic: 4}), group)
        want = {(topic, p): e for p, e in ends.items()}
        last = {}

        def committed_all():
            for m in members:
                m.send("commitpos")
            time.sleep(0.5)
            last["v"] = type(self).read_offsets(self.broker.bootstrap, group)
            return last["v"] == want
        try:
            wait_until(committed_all, 60, "the committed offsets to be the end offsets", 0.5)
        except AssertionError:
            raise AssertionError("committed %s, end offsets %s" % (last.get("v"), want))
        dups, problems = check_reads(members, topic, ends)
        self.assertEqual(problems, [])
        for m in members:
            self.assertIsNone(m.fatal, m.name)
            self.assertEqual(m.close(), 0)

    def test_coordinator_killed_mid_rebalance(self):
        """Chaos: cohortd SIGKILLed and restarted while the group rebalances (a
        third member has just joined and the old ones are revoking): the
        members find the coordinator again and finish the rebalance; every
        record is read, none re-read below an acknowledged commit, and the
        acknowledged commits of each partition, in time order across all
        members, never move backwards."""
        if not hasattr(self.broker, "kill9"):
            self.skipTest("needs a broker the test can restart")
        topic, group = "ckr-libcohort", "g-ckr-libcohort"
        create_topics(self.broker.port, {topic: 6})
        ends = self.produce(topic, 6, 100)
        parts = all_parts({topic: 6})
        members = [self.member(group, [topic], "libcohort-ckr%d" % i, delay_ms=4)
                   for i in range(2)]
        self.wait_group(members, parts, group)
        self.wait_read(members, topic, 150)
        events = [m.n_rebalance_events() for m in members]
        members.append(self.member(group, [topic], "libcohort-ckr2", delay_ms=4))
        wait_until(lambda: any(m.n_rebalance_events() > e for m, e in zip(members, events)),
                   60, "the rebalance to start at an old member")
        self.broker.kill9()
        time.sleep(1.0)          # the members see refused connections meanwhile
        self.broker.start()
        self.wait_group(members, parts, group, timeout=120)
        self.wait_read(members, topic, 600, timeout=120)
        for m in members:
            m.send("commitpos")
        time.sleep(1.0)
        dups, problems = check_reads(members, topic, ends)
        self.assertEqual(problems, [])
        self.assertEqual(commits_backwards(members, topic), [])
        for m in members:
            self.assertIsNone(m.fatal, m.name)
            self.assertEqual(m.close(), 0)

    def test_auto_commit(self):
        """enable.auto.commit: the consumed positions are committed before a
        revoke (a member joining takes over where the first one stopped,
        nothing read twice), and every auto.commit.interval.ms from poll
        (the group's commits reach the end offsets without any explicit
        commit)."""
        topic = "ac-libcohort"
        create_topics(self.broker.port, {topic: 4})
        ends = self.produce(topic, 4, 100)
        parts = all_parts({topic: 4})

        def auto_member(group, name, interval_ms):
            m = MemberProcess([MEMBER, "-X", "enable.auto.commit=true",
                               "-X", "auto.commit.interval.ms=%d" % interval_ms] + member_flags(
                self.broker.bootstrap, group, [topic], name, "range", None, 3000, False, 0, 4),
                name)
            self.addCleanup(m.cleanup)
            return m
        # before a revoke: the interval is too long to matter here
        a = auto_member("g-ac-revoke", "libcohort-ac-a", 600000)
        wait_cover([a], parts)
        self.wait_read([a], topic, 100)
        b = auto_member("g-ac-revoke", "libcohort-ac-b", 600000)
        wait_cover([a, b], parts, each_owns=True)
        self.wait_read([a, b], topic, 400)
        reads = [(p, o) for m in (a, b) for (t, p, o, us) in m.msgs]
        self.assertEqual(len(reads), len(set(reads)), "records read twice across the revoke")
        # periodic, from poll
        c = auto_member("g-ac-periodic", "libcohort-ac-c", 300)
        want = {(topic, p): e for p, e in ends.items()}
        wait_until(lambda: type(self).read_offsets(self.broker.bootstrap, "g-ac-periodic") == want,
                   60, "auto-committed offsets at the end offsets", 0.5)
        for m in (a, b, c):
            self.assertIsNone(m.fatal, m.name)
            self.assertEqual(m.close(), 0)

    def test_seek_async_commit_committed(self):
        """cohort_seek re-reads from the offset given (records past it fetched
        earlier are dropped); cohort_commit_async reports through its
        callback on the polling thread; cohort_committed reads it back."""
        topic, group = "sk-libcohort", "g-sk-libcohort"
        create_topics(self.broker.port, {topic: 1})
        self.produce(topic, 1, 100)
        m = self.member(group, [topic], "libcohort-sk", commit_on_revoke=False, commit_every=0)
        self.wait_read([m], topic, 100)
        n = len(m.msgs)
        m.send("seek %s 0 90" % topic)
        m.wait(lambda s: len(s.msgs) >= n + 10, 30, "the 10 records after the seek")
        self.assertIn("SEEK %s 0 90 NO_ERROR" % topic, m.lines)
        self.assertEqual([o for (t, p, o, us) in m.msgs[n:]], list(range(90, 100)))
        m.send("seek %s 7 0" % topic)   # not assigned
        m.wait(lambda s: any(l.startswith("SEEK %s 7" % topic) for l in s.lines), 30, "SEEK")
        self.assertIn("SEEK %s 7 0 _UNKNOWN_PARTITION" % topic, m.lines)
        m.send("commitasync")
        m.wait(lambda s: any(c[2] == 100 for c in s.commits), 30, "the async commit's result")
        self.assertEqual([c[:4] for c in m.commits], [(topic, 0, 100, "NO_ERROR")])
        self.assertEqual(m.fetch_committed(topic, [0]), {0: 100})
        self.assertEqual(m.close(), 0)

    def test_fenced_static_duplicate(self):
        """A second member with the same group.instance.id takes the place of
        the first (KIP-345); the first learns it is fenced: cohort_poll
        returns FENCED_INSTANCE_ID, a fatal error, and it stops."""
        topic, group = "fe-libcohort", "g-fe-libcohort"
        create_topics(self.broker.port, {topic: 2})
        parts = all_parts({topic: 2})
        a = self.member(group, [topic], "libcohort-fe-a", instance="dup", session_ms=10000)
        wait_cover([a], parts)
        a2 = self.member(group, [topic], "libcohort-fe-a2", instance="dup", session_ms=10000)
        a.wait(lambda s: s.fatal is not None, 60, "FENCED_INSTANCE_ID")
        self.assertTrue(a.fatal.startswith("FENCED_INSTANCE_ID"), a.fatal)
        a.wait(lambda s: s.closed, 60, "the fenced member to stop")
        wait_cover([a2], parts)
        self.assertIsNone(a2.fatal)
        self.assertEqual(a2.close(), 0)

    def test_poll_interval_exceeded(self):
        """max.poll.interval.ms: a member that does not poll in time leaves
        the group (its partitions are lost, told at the next poll) and
        rejoins at that poll."""
        topic, group = "pi-libcohort", "g-pi-libcohort"
        create_topics(self.broker.port, {topic: 1})
        self.produce(topic, 1, 2)
        m = MemberProcess([MEMBER, "-L", "-X", "max.poll.interval.ms=2000"] + member_flags(
            self.broker.bootstrap, group, [topic], "libcohort-pi", "range", None, 6000, False,
            0, 2500), "libcohort-pi")   # 2.5 s per record: 5 s between two polls
        self.addCleanup(m.cleanup)

        def lost_then_assigned(s):
            kinds = [k for k, _ in s.events if k in ("ASSIGNED", "LOST")]
            return "LOST" in kinds and "ASSIGNED" in kinds[kinds.index("LOST"):]
        m.wait(lost_then_assigned, 60, "LOST, then ASSIGNED again")
        self.assertIsNone(m.fatal)
        # the commit tried inside lost() was refused locally (-L)
        with m.cv:
            lost_at = next(i for i, l in enumerate(m.lines) if l.startswith("LOST "))
            tried = [l for l in m.lines[lost_at:] if l.startswith("COMMIT ")]
        self.assertTrue(tried, m.lines[lost_at:])
        self.assertTrue(all(" _ASSIGNMENT_LOST " in l for l in tried), tried)
        self.assertEqual(m.close(timeout=90), 0)

    def test_eager_sticky_keeps(self):
        """Eager sticky (KIP-54): members revoke everything before the join,
        but report their previous assignment in the user data, so on a join
        the old members get back a subset of what they had."""
        topic, group = "es-libcohort", "g-es-libcohort"
        create_topics(self.broker.port, {topic: 12})
        parts = all_parts({topic: 12})
        olds = [self.member(group, [topic], "libcohort-es%d" % i, assignor="sticky")
                for i in range(3)]
        wait_cover(olds, parts, each_owns=True)
        time.sleep(1.0)
        wait_cover(olds, parts, each_owns=True)
        before = {m.name: set(m.assignment) for m in olds}
        new = self.member(group, [topic], "libcohort-es3", assignor="sticky")
        wait_cover(olds + [new], parts, each_owns=True)
        for m in olds:
            self.assertTrue(m.assignment <= before[m.name],
                            "%s: %s, had %s" % (m.name, sorted(m.assignment),
                                                sorted(before[m.name])))
        for m in [new] + olds:
            self.assertEqual(m.close(), 0)

    def test_compressed_batches(self):
        """Records produced by librdkafka (confluent-kafka) uncompressed and
        with gzip, snappy, lz4 and zstd come out of libcohort byte for byte:
        keys (one null), values (one empty, one null), headers."""
        import confluent_kafka
        for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
            topic = "cz-%s" % codec
            create_topics(self.broker.port, {topic: 1})
            p = confluent_kafka.Producer({"bootstrap.servers": self.broker.bootstrap,
                                          "compression.type": codec, "linger.ms": 20,
                                          "acks": "all"})
            want = []
            for i in range(300):
                key = None if i == 7 else b"key-%d" % i
                value = None if i == 11 else b"" if i == 12 else (b"value-%d-" % i) * (i % 40)
                headers = [] if i % 3 else [("h%d" % i, b"x" * (i % 5)), ("n", None)]
                p.produce(topic, key=key, value=value, headers=headers or None, partition=0)
                hx = lambda b: "~" if b is None else (b.hex() if b else '""')
                want.append("REC %s 0 %d %s %s %s" % (
                    topic, i, hx(key), hx(value),
                    ",".join("%s=%s" % (k, hx(v)) for k, v in headers) or "-"))
            self.assertEqual(p.flush(30), 0)
            m = MemberProcess([MEMBER, "-V", "-q"] + member_flags(
                self.broker.bootstrap, "g-" + topic, [topic], "libcohort-cz-" + codec, "range",
                None, 6000, False, 0, 0), "libcohort-cz-" + codec)
            self.addCleanup(m.cleanup)
            wait_until(lambda: sum(1 for l in m.lines if l.startswith("REC ")) >= 300, 60,
                       "300 records of %s" % topic)
            got = [l for l in m.lines if l.startswith("REC ")]
            self.assertEqual(got, want, codec)
            self.assertEqual(m.close(), 0)

    def test_static_member_close_sends_no_leave(self):
        """KIP-345: a static member's close sends no LeaveGroup, so closing
        and restarting it within its session is no rebalance either: the
        restarted member gets the same partitions, the other sees nothing."""
        topic, group = "stc-libcohort", "g-stc-libcohort"
        create_topics(self.broker.port, {topic: 4})
        parts = all_parts({topic: 4})
        kw = dict(assignor="range", session_ms=10000)
        a = self.member(group, [topic], "libcohort-stc-a", instance="stc-a", **kw)
        b = self.member(group, [topic], "libcohort-stc-b", instance="stc-b", **kw)
        wait_cover([a, b], parts, each_owns=True)
        time.sleep(1.0)
        wait_cover([a, b], parts, each_owns=True)
        b_events, a_parts = b.n_rebalance_events(), set(a.assignment)
        self.assertEqual(a.close(), 0)
        a2 = self.member(group, [topic], "libcohort-stc-a2", instance="stc-a", **kw)
        wait_cover([a2, b], parts, each_owns=True)
        self.assertEqual(a2.assignment, a_parts)
        time.sleep(3.0)  # a rebalance would reach b through its heartbeat by now
        self.assertEqual(b.n_rebalance_events(), b_events,
                         "the other member saw a rebalance: %s" % b.events)
        for m in (a2, b):
            self.assertIsNone(m.fatal, m.name)
            self.assertEqual(m.close(), 0)


    def test_pattern_subscription(self):
        """cohort_subscribe_pattern: the topics whose whole name matches are
        assigned (not one that matches only inside its name); a matching
        topic created mid-group is picked up by a rejoin, and so are
        partitions added to a subscribed topic (CreatePartitions: the leader
        rejoins), as Java's consumer does."""
        import kwire
        a_t, b_t, group = "rx-libcohort-a", "rx-libcohort-b", "g-rx-libcohort"
        create_topics(self.broker.port, {a_t: 2, "xrx-libcohort-a": 1, "rxno-libcohort": 1})
        m = MemberProcess([MEMBER, "-T", "rx-libcohort-.*"] + member_flags(
            self.broker.bootstrap, group, ["-"], "libcohort-rx", "cooperative-sticky", None,
            6000, True, 0, 0), "libcohort-rx")
        self.addCleanup(m.cleanup)
        self.addCleanup(self._dump, m)
        wait_cover([m], all_parts({a_t: 2}))
        create_topics(self.broker.port, {b_t: 2})
        wait_cover([m], all_parts({a_t: 2, b_t: 2}))
        with kwire.Conn(self.broker.port) as c:
            self.assertEqual(kwire.create_partitions(c, {a_t: 4})[a_t][0], 0)
        wait_cover([m], all_parts({a_t: 4, b_t: 2}))
        self.assertIsNone(m.fatal)
        self.assertEqual(m.close(), 0)

    def test_unsubscribe(self):
        """cohort_unsubscribe (Java's unsubscribe): the member's partitions go
        to its revoke callback inside the call (its commits there accepted)
        and it sends LeaveGroup, so the other member gets them in one
        rebalance while the leaver's 60 s session is far from over; a
        subscribe on the same handle joins again as a new member, and after
        another unsubscribe the handle takes a manual assignment."""
        topic, group = "us-libcohort", "g-us-libcohort"
        create_topics(self.broker.port, {topic: 4})
        self.produce(topic, 4, 10)
        parts = all_parts({topic: 4})

        def member(name, session_ms):
            m = MemberProcess([MEMBER, "-X", "heartbeat.interval.ms=300"] + member_flags(
                self.broker.bootstrap, group, [topic], name, "cooperative-sticky", None,
                session_ms, True, 0, 0), name)
            self.addCleanup(m.cleanup)
            self.addCleanup(self._dump, m)
            return m

        def run(m, cmd, reply):
            k = len(m.lines)
            m.send(cmd)
            m.wait(lambda s: any(l.startswith(reply) for l in s.lines[k:]), 60, reply)
            return m.lines[k:]

        b = member("libcohort-us-b", 6000)
        wait_cover([b], parts)
        a = member("libcohort-us-a", 60000)
        wait_cover([a, b], parts, each_owns=True)
        self.produce(topic, 4, 5)   # b committed what it read in its revoke
        a.wait(lambda s: {(t, p) for (t, p, o, us) in s.msgs} >= s.assignment, 60,
               "a record of each of a's partitions")
        a_parts, a_id, b_events = set(a.assignment), a.member_id, b.n_rebalance_events()
        lines = run(a, "unsubscribe", "UNSUBSCRIBED ")
        self.assertIn("UNSUBSCRIBED NO_ERROR", lines)
        revoked = [l for l in lines if l.startswith(("REVOKED ", "LOST "))]
        self.assertEqual(revoked, ["REVOKED " + ",".join(
            "%s:%d" % tp for tp in sorted(a_parts))], lines)
        done = lines.index("UNSUBSCRIBED NO_ERROR")
        commits = {(l.split()[1], int(l.split()[2])): l.split()[4]
                   for l in lines[:done] if l.startswith("COMMIT ")}
        self.assertEqual(commits, {tp: "NO_ERROR" for tp in a_parts}, lines)
        self.assertEqual(a.assignment, set())
        wait_cover([b], parts, timeout=30)   # a's session (60 s) is not what ended it
        with b.cv:
            since = [e for e in b.events if e[0] in ("ASSIGNED", "REVOKED", "LOST")][b_events:]
        self.assertEqual(since, [("ASSIGNED", frozenset(a_parts))], b.events)
        self.assertIn("SUBSCRIBED NO_ERROR", run(a, "subscribe " + topic, "SUBSCRIBED "))
        wait_cover([a, b], parts, each_owns=True)
        self.assertNotEqual(a.member_id, a_id, "joined again as a new member")
        self.assertIn("UNSUBSCRIBED NO_ERROR", run(a, "unsubscribe", "UNSUBSCRIBED "))
        wait_cover([b], parts, timeout=30)
        self.assertIn("ASSIGNED_MANUALLY NO_ERROR",
                      run(a, "assign %s:0" % topic, "ASSIGNED_MANUALLY "))
        a.wait(lambda s: s.assignment == {(topic, 0)}, 30, "the manual assignment")
        n = len(a.msgs)
        self.produce(topic, 4, 1)
        a.wait(lambda s: any(p == 0 for (t, p, o, us) in s.msgs[n:]), 60,
               "a record of the manually assigned partition")
        for m in (a, b):
            self.assertIsNone(m.fatal, m.name)
            self.assertEqual(m.close(), 0)

    # ---- manual assignment, seeks, pause (cohort_assign and friends) ----

    def manual(self, name, parts, group="", *extra):
        """A member on a manual assignment (-A): no group.id when group is ""."""
        argv = [MEMBER, "-b", self.broker.bootstrap, "-g", group, "-n", name,
                "-A", ",".join("%s:%d" % tp for tp in parts)]
        for kv in extra:
            argv += ["-X", kv]
        m = MemberProcess(argv, name)
        self.addCleanup(m.cleanup)
        self.addCleanup(self._dump, m)
        return m

    def produce_at(self, topic, partition, timestamps):
        """One record per timestamp (ms) into topic-partition, in order."""
        import confluent_kafka
        p = confluent_kafka.Producer({"bootstrap.servers": self.broker.bootstrap,
                                      "linger.ms": 0, "acks": "all"})
        for ts in timestamps:
            p.produce(topic, value=b"v-%d" % ts, partition=partition, timestamp=ts)
        self.assertEqual(p.flush(30), 0)

    @staticmethod
    def offsets(m, partition, start=0):
        with m.cv:
            return [o for (t, p, o, us) in m.msgs[start:] if p == partition]

    def test_manual_assign_and_seeks(self):
        """cohort_assign: without group.id a member reads exactly the partitions
        it assigned (auto.offset.reset, no rebalance callbacks); with one it
        starts at the group's committed offset and its own commits (no
        generation, as Java's) are accepted. Then the lazy seeks: to the
        beginning, to the end (only what is produced after), to a timestamp
        (the first record at or after it; past the last one: the end)."""
        topic, group = "ma-libcohort", "g-ma-libcohort"
        create_topics(self.broker.port, {topic: 2})
        base = int(time.time() * 1000) - 60000
        for part in (0, 1):
            self.produce_at(topic, part, [base + 1000 * i for i in range(5)])
        x = self.manual("libcohort-ma-x", [(topic, 1)])
        x.wait(lambda s: len(s.msgs) >= 5, 60, "partition 1's records")
        self.assertEqual([(p, o) for (t, p, o, us) in x.msgs], [(1, o) for o in range(5)])
        self.assertEqual(x.n_rebalance_events(), 0, x.events)
        self.assertEqual(x.assignment, {(topic, 1)})
        self.assertEqual(x.close(), 0)
        y1 = self.manual("libcohort-ma-y1", [(topic, 0)], group)
        y1.wait(lambda s: len(s.msgs) >= 5, 60, "partition 0's records")
        self.assertEqual(y1.commit(topic, 0, 2), "NO_ERROR")
        self.assertEqual(y1.close(), 0)
        y = self.manual("libcohort-ma-y", [(topic, 0)], group)
        y.wait(lambda s: len(s.msgs) >= 3, 60, "the records after the commit")
        self.assertEqual(self.offsets(y, 0), [2, 3, 4])
        n = len(y.msgs)
        y.send("seekbeg %s 0" % topic)
        y.wait(lambda s: len(s.msgs) >= n + 5, 30, "the records again from the beginning")
        self.assertEqual(self.offsets(y, 0, n), [0, 1, 2, 3, 4])
        self.assertIn("SEEK %s 0 beg NO_ERROR" % topic, y.lines)
        n = len(y.msgs)
        y.send("seekend %s 0" % topic)
        y.wait(lambda s: "SEEK %s 0 end NO_ERROR" % topic in s.lines, 30, "SEEK end")

        def position(want):
            k = len(y.lines)
            y.send("position %s 0" % topic)
            y.wait(lambda s: any(l.startswith("POSITION") for l in s.lines[k:]), 30, "POSITION")
            return [l for l in y.lines[k:] if l.startswith("POSITION")][0] == \
                "POSITION %s 0 %d NO_ERROR" % (topic, want)
        wait_until(lambda: position(5), 30, "the position at the end (5)")
        self.assertEqual(len(y.msgs), n)
        self.produce_at(topic, 0, [base + 5000])
        y.wait(lambda s: len(s.msgs) >= n + 1, 30, "the record produced after seekend")
        self.assertEqual(self.offsets(y, 0, n), [5])
        n = len(y.msgs)
        y.send("seekts %s 0 %d" % (topic, base + 2500))
        y.wait(lambda s: len(s.msgs) >= n + 3, 30, "the records from the timestamp")
        self.assertEqual(self.offsets(y, 0, n), [3, 4, 5])
        y.send("seekts %s 0 %d" % (topic, base + 3600000))   # after every record
        wait_until(lambda: position(6), 30, "the position at the end (6)")
        y.send("seekend %s 7" % topic)
        y.wait(lambda s: any(l.startswith("SEEK %s 7" % topic) for l in s.lines), 30, "SEEK")
        self.assertIn("SEEK %s 7 end _UNKNOWN_PARTITION" % topic, y.lines)
        self.assertIsNone(y.fatal)
        self.assertEqual(y.close(), 0)

    def test_pause_resume(self):
        """cohort_pause: no record of a paused partition is returned while the
        others go on; cohort_resume: its records come, none skipped or
        repeated (those fetched before the pause were kept back)."""
        topic = "pr-libcohort"
        create_topics(self.broker.port, {topic: 2})
        self.produce(topic, 2, 5)
        m = self.manual("libcohort-pr", [(topic, 0), (topic, 1)])
        m.wait(lambda s: len(s.msgs) >= 10, 60, "the first records")
        m.send("pause %s 0" % topic)
        m.send("pause %s 7" % topic)
        m.wait(lambda s: any(l.startswith("PAUSE %s 7" % topic) for l in s.lines), 30, "PAUSE")
        self.assertIn("PAUSE %s 0 NO_ERROR" % topic, m.lines)
        self.assertIn("PAUSE %s 7 _UNKNOWN_PARTITION" % topic, m.lines)
        n = len(m.msgs)
        self.produce(topic, 2, 30)
        m.wait(lambda s: len(self.offsets(s, 1)) >= 35, 60, "partition 1 going on")
        time.sleep(1.0)   # partition 0's records would have come by now
        self.assertEqual(self.offsets(m, 0, n), [])
        m.send("paused")
        m.wait(lambda s: any(l.startswith("PAUSED") for l in s.lines), 30, "PAUSED")
        self.assertIn("PAUSED %s:0" % topic, m.lines)
        m.send("resume %s 0" % topic)
        m.wait(lambda s: len(self.offsets(s, 0)) >= 35, 60, "partition 0 after the resume")
        self.assertEqual(self.offsets(m, 0), list(range(35)))
        self.assertEqual(self.offsets(m, 1), list(range(35)))
        self.assertEqual(m.close(), 0)

    def test_pause_through_rebalance(self):
        """A paused partition stays paused through a cooperative rebalance that
        keeps it with its member, and an eager rebalance (revoke everything)
        forgets it, as Java's SubscriptionState does."""
        for assignor, kept in (("cooperative-sticky", True), ("range", False)):
            topic, group = "pt-%s" % assignor, "g-pt-%s" % assignor
            create_topics(self.broker.port, {topic: 4})
            parts = all_parts({topic: 4})
            a = self.member(group, [topic], "libcohort-pt-a-" + assignor, assignor=assignor)
            wait_cover([a], parts)
            for p in range(4):
                a.send("pause %s %d" % (topic, p))
            a.wait(lambda s: sum(1 for l in s.lines if l.startswith("PAUSE ")) == 4, 30,
                   "4 PAUSE lines")
            b = self.member(group, [topic], "libcohort-pt-b-" + assignor, assignor=assignor)
            wait_cover([a, b], parts, each_owns=True)
            k = len(a.lines)
            a.send("paused")
            a.wait(lambda s: any(l.startswith("PAUSED") for l in s.lines[k:]), 30, "PAUSED")
            line = [l for l in a.lines[k:] if l.startswith("PAUSED")][0]
            want = set(a.assignment) if kept else set()
            self.assertEqual(parse_parts(line.split(" ", 1)[1]), want, assignor)
            for m in (a, b):
                self.assertEqual(m.close(), 0)


class LibcohortGroupsKafka(LibcohortGroups):
    """The same scenarios against Apache Kafka 4.4.0 (tools/kafka-ref.sh),
    but roundrobin and sticky: the leader's assignor runs in libcohort and the
    broker relays its bytes, so on Kafka they repeat what range (eager) and
    cooperative-sticky prove here and what the cohortd class and the mixed
    groups (librdkafka leading roundrobin on Kafka) prove about them."""

    test_consume_roundrobin = None
    test_consume_sticky = None

    @classmethod
    def setUpClass(cls):
        if not os.access(MEMBER, os.X_OK):
            raise SystemExit("FAIL: COHORT_MEMBER (it_cohort_member) not built: %r" % MEMBER)
        cls.broker = start_clean(KafkaRef("4", settings=dict(GROUP_SETTINGS), name=cls.__name__))

    @classmethod
    def tearDownClass(cls):
        stop_clean(cls.broker)


RDK_MEMBER = os.environ.get("GROUP_CONSUMER", "")   # c/group_consumer.c (librdkafka 2.0.2)


class LibcohortMixedGroups(ClientGroupTest):
    """Mixed groups: libcohort members and librdkafka 2.0.2 (Debian) members
    in one group, each kind leading in turn (the first member to join leads):
    the same consume-through-rebalances checks, so each side must read the
    other's assignments (the consumer embedded protocol, byte-compatible)
    and honour its rebalance protocol."""

    CLIENT = "mixed-cohort"
    KINDS = ("libcohort", "librdkafka", "libcohort")   # members 1, 2, 3

    @classmethod
    def setUpClass(cls):
        for path, what in ((MEMBER, "COHORT_MEMBER"), (RDK_MEMBER, "GROUP_CONSUMER")):
            if not os.access(path, os.X_OK):
                raise SystemExit("FAIL: %s not built: %r" % (what, path))
        super().setUpClass()

    def member_argv(self, group, topics, name, *rest):
        kind = self.KINDS[(int(name.rsplit("-", 1)[1]) - 1) % len(self.KINDS)]
        prog = MEMBER if kind == "libcohort" else RDK_MEMBER
        return [prog] + member_flags(self.broker.bootstrap, group, topics, name, *rest)

    def test_libcohort_leads_range(self):
        self.consume_through_rebalances("range")

    def test_libcohort_leads_cooperative_sticky(self):
        self.consume_through_rebalances("cooperative-sticky")

    def test_librdkafka_leads_range(self):
        self.KINDS = ("librdkafka", "libcohort", "librdkafka")
        self.CLIENT = "mixed-rdk"   # its own topic and group
        self.consume_through_rebalances("range")

    def test_librdkafka_leads_roundrobin(self):
        self.KINDS = ("librdkafka", "libcohort", "librdkafka")
        self.CLIENT = "mixed-rdk"   # its own topic and group
        self.consume_through_rebalances("roundrobin")

    def test_librdkafka_leads_cooperative_sticky(self):
        self.KINDS = ("librdkafka", "libcohort", "librdkafka")
        self.CLIENT = "mixed-rdk"   # its own topic and group
        self.consume_through_rebalances("cooperative-sticky")


class LibcohortMixedGroupsKafka(LibcohortMixedGroups):
    """The mixed groups against Apache Kafka 4.4.0."""

    @classmethod
    def setUpClass(cls):
        for path, what in ((MEMBER, "COHORT_MEMBER"), (RDK_MEMBER, "GROUP_CONSUMER")):
            if not os.access(path, os.X_OK):
                raise SystemExit("FAIL: %s not built: %r" % (what, path))
        cls.broker = start_clean(KafkaRef("4", settings=dict(GROUP_SETTINGS), name=cls.__name__))

    @classmethod
    def tearDownClass(cls):
        stop_clean(cls.broker)


# A "Kafka 2.3" in ApiVersions: the highest versions libcohort may send.
OLD_BROKER_CAPS = {18: 2, 3: 7, 1: 11, 2: 5, 8: 7, 9: 5, 10: 2, 11: 5, 12: 3, 13: 3, 14: 3}
PROXY_PORT = free_port()


class LibcohortOldBroker(ClientGroupTest):
    """Version negotiation: cohortd behind version_proxy.py, which answers
    ApiVersions as an older broker (above v2: UNSUPPORTED_VERSION with a v0
    body) and caps every API libcohort uses; cohortd advertises the proxy,
    so every connection goes through it. The group scenario still works, and
    libcohort sent each API at exactly the highest version both sides have
    (after retrying ApiVersions at the broker's highest)."""

    CLIENT = "libcohort-old"
    broker_settings = dict(GROUP_SETTINGS, **{
        "advertised.listeners": "PLAINTEXT://127.0.0.1:%d" % PROXY_PORT})

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.proxy = VersionProxy(cls.broker.port, OLD_BROKER_CAPS, PROXY_PORT)

    @classmethod
    def tearDownClass(cls):
        cls.proxy.close()
        super().tearDownClass()

    def member_argv(self, *flags):
        return [MEMBER] + member_flags("127.0.0.1:%d" % PROXY_PORT, *flags)

    def test_negotiated_versions(self):
        self.consume_through_rebalances("range")
        with self.proxy.lock:
            seen = [(k, v) for cid, k, v in self.proxy.seen if cid.startswith(self.CLIENT)]
        got = {}
        for k, v in seen:
            got.setdefault(k, set()).add(v)
        want = {k: {v} for k, v in OLD_BROKER_CAPS.items() if k != 18}
        want[18] = {4, 2}   # its highest first, then the broker's
        self.assertEqual(got, want)

    def test_coordinator_rediscovery(self):
        """Heartbeats answered NOT_COORDINATOR, then COORDINATOR_NOT_AVAILABLE:
        the member looks the coordinator up again (FindCoordinator) each
        time and goes on in its generation, without a rebalance."""
        topic, group = "rd-libcohort-old", "g-rd-libcohort-old"
        create_topics(self.broker.port, {topic: 2})
        parts = all_parts({topic: 2})
        m = self.member(group, [topic], "libcohort-old-rd")
        wait_cover([m], parts)
        name = "libcohort-old-rd"

        def finds():
            with self.proxy.lock:
                return sum(1 for cid, k, v in self.proxy.seen if cid == name and k == 10)
        before, events = finds(), m.n_rebalance_events()
        with self.proxy.lock:
            self.proxy.inject += [16, 15]   # NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE
        wait_until(lambda: finds() >= before + 2, 30, "two more FindCoordinator requests")
        with self.proxy.lock:
            self.assertEqual(self.proxy.inject, [])
        time.sleep(1.0)   # more heartbeats, now answered by the coordinator
        self.assertEqual(m.n_rebalance_events(), events, m.events)
        self.assertIsNone(m.fatal)
        self.assertEqual(m.close(), 0)


if __name__ == "__main__":
    main()
