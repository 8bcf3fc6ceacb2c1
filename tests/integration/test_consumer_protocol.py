"""The consumer rebalance protocol (KIP-848, group.protocol=consumer) with
confluent-kafka 2.x (librdkafka 2.x, in .deps/venv) against cohortd: the
members (py_member.py --protocol consumer) heartbeat with
ConsumerGroupHeartbeat and the broker assigns (uniform / range).

Scenarios: members joining one by one (scale out), one leaving (scale in),
one killed (its partitions move when its session expires), commits in the
revoke listener so no record is read twice across graceful moves; a static
member that closes and comes back under its instance id gets the same
partitions and the other member sees no rebalance; AdminClient lists the
group as a consumer group. cohortd killed with SIGKILL and restarted under
a consuming group: the group comes back from __consumer_offsets and its
members go on without rejoining; DeleteGroups of a consumer group. A
member subscribed by regex (evaluated by the broker) follows topics
created and deleted; an invalid regex gets Kafka's error."""
import os
import re
import shutil
import tempfile
import time


from confluent_kafka import ConsumerGroupState, ConsumerGroupType
from confluent_kafka.admin import AdminClient

import kwire
from client_scenarios import (HERE, SESSION_MS, VENV_PYTHON, ClientGroupTest, describe_cover,
                              member_flags, wait_cover)
from harness import Broker, main, start_clean, stop_clean
from kafka_ref import KafkaRef
from test_group_helpers import (GROUP_SETTINGS, MemberProcess, all_parts, check_reads, create_topics,
                                wait_until)

NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND = 68, 69

MEMBER = os.path.join(HERE, "py_member.py")

# Short timeouts so a killed member's partitions move within seconds
# (Kafka's minimums are 45 s and 5 s; the keys are Kafka's).
CONSUMER_SETTINGS = dict(GROUP_SETTINGS, **{
    "group.consumer.min.session.timeout.ms": "3000",
    "group.consumer.session.timeout.ms": "3000",
    "group.consumer.min.heartbeat.interval.ms": "300",
    "group.consumer.heartbeat.interval.ms": "300",
})


class ConsumerProtocolConfluent(ClientGroupTest):
    CLIENT = "cp"
    broker_settings = CONSUMER_SETTINGS

    def member_argv(self, group, topics, name, *flags):
        if not hasattr(self, "debug_dir"):
            self.debug_dir = tempfile.mkdtemp(prefix="cp-debug-")
            self.addCleanup(shutil.rmtree, self.debug_dir, True)
        return [VENV_PYTHON, MEMBER, "--client", "confluent", "--protocol", "consumer",
                "--debug-log", os.path.join(self.debug_dir, name + ".log")] + \
            member_flags(self.broker.bootstrap, group, topics, name, *flags)

    def client_faults(self, members, topic):
        """librdkafka 2.16's stale offset-query timer: a ListOffsets answer
        that arrives outdated (the partition was paused and resumed around an
        incremental assign while the lookup of its auto.offset.reset position
        waited behind a long-poll Fetch) re-arms the offset-query timer; the
        current answer makes the partition active, the timer still fires and
        resets the position of a partition being consumed to the earliest
        offset ("timed offset query ... in state active" in its topic log).
        Records it re-reads that way are the client's doing (docs/NOTES.md)."""
        sign = re.compile(r"Topic %s \[(\d+)\]: timed offset query for offset \S+ .*in state active"
                          % re.escape(topic))
        faults = {}
        for m in members:
            path = os.path.join(self.debug_dir, m.name + ".log")
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    found = {int(x.group(1)) for x in map(sign.search, f) if x}
                if found:
                    faults[m.name] = found
        return faults

    def test_consume_through_rebalances(self):
        self.consume_through_rebalances("uniform")

    def test_static_member_returns(self):
        """A static member that closes (epoch -2) and comes back under its
        instance id within the session gets its partitions back, and the
        group epoch does not move for the other member."""
        topic, group = "st-cp", "g-st-cp"
        create_topics(self.broker.port, {topic: 4})
        parts = all_parts({topic: 4})
        a = self.member(group, [topic], "cp-sa", assignor="range", instance="inst-a")
        b = self.member(group, [topic], "cp-sb", assignor="range", instance="inst-b")
        wait_cover([a, b], parts, each_owns=True)
        a_parts, b_events = set(a.assignment), b.n_rebalance_events()
        self.assertEqual(a.close(), 0)
        # five heartbeat intervals of b while inst-a is away: a wrong
        # rebalance (its partitions freed) would reach b in this window
        time.sleep(1.5)
        a2 = self.member(group, [topic], "cp-sa2", assignor="range", instance="inst-a")
        wait_cover([a2, b], parts, each_owns=True)
        self.assertEqual(a2.assignment, a_parts, describe_cover([a2, b]))
        self.assertEqual(b.n_rebalance_events(), b_events, "b saw a rebalance: %s" % b.events)
        adm = AdminClient({"bootstrap.servers": self.broker.bootstrap})
        listed = {g.group_id: g for g in adm.list_consumer_groups().result().valid}
        self.assertIn(group, listed)
        self.assertEqual(listed[group].type, ConsumerGroupType.CONSUMER)
        self.assertEqual(listed[group].state, ConsumerGroupState.STABLE)
        # described through ConsumerGroupDescribe: members and what they own
        desc = adm.describe_consumer_groups([group])[group].result()
        self.assertEqual(desc.type, ConsumerGroupType.CONSUMER)
        self.assertEqual(desc.state, ConsumerGroupState.STABLE)
        owned = {m.group_instance_id: {(tp.topic, tp.partition) for tp in
                                       m.assignment.topic_partitions} for m in desc.members}
        self.assertEqual(owned, {"inst-a": a2.assignment, "inst-b": b.assignment})
        for m in (a2, b):
            self.assertIsNone(m.fatal, m.name)
            self.assertEqual(m.close(), 0)

    def classic_member(self, group, topics, name, assignor, delay_ms=0, instance=None):
        """A confluent-kafka member of the classic protocol (JoinGroup,
        SyncGroup, Heartbeat) with a client-side assignor."""
        argv = [VENV_PYTHON, MEMBER, "--client", "confluent", "--protocol", "classic"] + \
            member_flags(self.broker.bootstrap, group, list(topics), name, assignor, instance,
                         SESSION_MS, True, 20, delay_ms)
        m = MemberProcess(argv, name)
        self.addCleanup(m.cleanup)
        return m

    def test_mixed_classic_and_consumer_members(self):
        """Classic members inside a consumer group (Kafka 4's migration
        path): two cooperative-sticky members join a group of consumer-protocol
        members (a classic member must name a protocol every classic member
        of the group supports), the broker assigns them all; members join
        and leave; every partition is owned by one member at a time at each
        stable point, the records are all read, commits of both kinds of
        member are accepted, and the group stays a consumer group."""
        topic, group = "mx-cp", "g-mx-cp"
        create_topics(self.broker.port, {topic: 6})
        ends = self.produce(topic, 6, 100)
        parts = all_parts({topic: 6})
        c1 = self.member(group, [topic], "mx-c1", assignor="uniform", delay_ms=5)
        wait_cover([c1], parts, each_owns=True)
        k1 = self.classic_member(group, [topic], "mx-k1", "cooperative-sticky", 5)
        wait_cover([c1, k1], parts, each_owns=True)
        k2 = self.classic_member(group, [topic], "mx-k2", "cooperative-sticky", 5)
        c2 = self.member(group, [topic], "mx-c2", assignor="uniform", delay_ms=5)
        everyone = [c1, k1, k2, c2]
        wait_cover(everyone, parts, each_owns=True)
        # more records now that each member owns a share: each classic member
        # must read the new ones of its own partitions (the first 600 may all
        # be read by c1 before a slow join hands the classic members theirs,
        # as on Kafka 4.4 once)
        self.produce(topic, 6, 50)
        ends = {p: 150 for p in range(6)}
        self.wait_read(everyone, topic, 900)
        adm = AdminClient({"bootstrap.servers": self.broker.bootstrap})
        desc = adm.describe_consumer_groups([group])[group].result()
        self.assertEqual(desc.type, ConsumerGroupType.CONSUMER)
        self.assertEqual(len(desc.members), 4)
        self.assertEqual(c1.close(), 0)            # a consumer-protocol member leaves
        self.assertEqual(k1.close(), 0)            # a classic member leaves
        wait_cover([k2, c2], parts, each_owns=True)
        c2.send("commitpos")                       # both kinds of member commit their share
        self.commit_final(k2, group, {(topic, p): e for p, e in ends.items()})
        for m in everyone:
            self.assertIsNone(m.fatal, m.name)
        for m in (k2, c2):
            self.assertEqual(m.close(), 0)
        dups, problems = check_reads(everyone, topic, ends)
        self.assertEqual([x for x in problems if " re-read by " not in x], [])
        self.assertTrue(k1.msgs and k2.msgs, "a classic member read nothing")

    def test_regex_subscription(self):
        """KIP-848's broker-side regex (SubscribedTopicRegex, librdkafka's
        subscribe(["^..."]) with group.protocol=consumer): the member owns
        the topics the regex matches, not the others; a topic created after
        it joined is picked up (up to Kafka's 10 s between two resolutions
        later, on both brokers), a deleted one leaves. A regex RE2J refuses
        is INVALID_REGULAR_EXPRESSION (128) with Kafka's message."""
        group = "g-rx-cp"
        create_topics(self.broker.port, {"rx-a1": 2, "rx-b": 1})
        m = self.member(group, ["^rx-a.*"], "cp-rx")
        wait_cover([m], all_parts({"rx-a1": 2}))
        (mid, desc), = self.describe(group)["members"].items()
        self.assertTrue(desc["regex"] and "rx-a" in desc["regex"], desc)
        create_topics(self.broker.port, {"rx-a2": 1})
        wait_cover([m], all_parts({"rx-a1": 2, "rx-a2": 1}), timeout=40)
        with kwire.Conn(self.broker.port) as c:
            res = kwire.delete_topics(c, ["rx-a1"])
            self.assertEqual([t["error_code"] for t in res["results"]], [0])
            wait_cover([m], all_parts({"rx-a2": 1}), timeout=40)
            self.assertIsNone(m.fatal, m.name)
            self.assertEqual(m.close(), 0)
            bad = kwire.consumer_group_join(c, "g-rx-bad", "AAAAAAAAAAAAAAAAAAAAAA", regex="(abc")
        self.assertEqual((bad["error"], bad["message"]),
                         (128, "SubscribedTopicRegex `(abc` is not a valid regular expression: "
                               "missing closing )."))

    def group_type(self, group):
        adm = AdminClient({"bootstrap.servers": self.broker.bootstrap})
        listed = {g.group_id: g for g in adm.list_consumer_groups().result().valid}
        return listed[group].type if group in listed else None

    def test_upgrade_and_downgrade(self):
        """Online migration (group.consumer.migration.policy=bidirectional,
        the default): a classic group of two range (eager) members
        becomes a consumer group when a consumer-protocol member joins (they
        keep their partitions until the coordinator moves some), and a
        classic group again when that member leaves; every partition owned
        by one member at each stable point, every record read."""
        topic, group = "ud-cp", "g-ud-cp"
        create_topics(self.broker.port, {topic: 4})
        ends = self.produce(topic, 4, 100)
        parts = all_parts({topic: 4})
        # eager range: a cooperative group runs a follow-up rebalance after
        # each join, and Kafka 4.4 refuses an upgrade with GROUP_ID_NOT_FOUND
        # (fatal to the joining consumer) while a member has no assignment
        k1 = self.classic_member(group, [topic], "ud-k1", "range", 5)
        k2 = self.classic_member(group, [topic], "ud-k2", "range", 5)
        wait_cover([k1, k2], parts, each_owns=True)
        self.assertEqual(self.group_type(group), ConsumerGroupType.CLASSIC)
        c1 = self.member(group, [topic], "ud-c1", assignor="uniform", delay_ms=5)
        everyone = [k1, k2, c1]
        wait_cover(everyone, parts, each_owns=True)      # upgraded
        self.assertEqual(self.group_type(group), ConsumerGroupType.CONSUMER)
        self.assertEqual(c1.close(), 0)                 # the last consumer-protocol member
        wait_until(lambda: self.group_type(group) == ConsumerGroupType.CLASSIC, 30,
                   "the group to be a classic group again")
        wait_cover([k1, k2], parts, each_owns=True)      # downgraded, rebalanced
        self.wait_read(everyone, topic, 400)
        for m in everyone:
            self.assertIsNone(m.fatal, m.name)
        for m in (k1, k2):
            self.assertEqual(m.close(), 0)
        dups, problems = check_reads(everyone, topic, ends)
        self.assertEqual([x for x in problems if " re-read by " not in x], [])

    def test_downgrade_by_replaced_static_member(self):
        """Kafka 4's other downgrade (validateOnlineDowngradeWithReplacedMemberId):
        the last consumer-protocol member is static, closes (epoch -2, its
        instance id kept) and comes back as a classic member under the same
        instance id: the group is a classic group at once, the newcomer owns
        what the old member owned, and the classic member that stayed sees no
        rebalance."""
        topic, group = "rs-cp", "g-rs-cp"
        create_topics(self.broker.port, {topic: 4})
        parts = all_parts({topic: 4})
        c1 = self.member(group, [topic], "rs-c1", assignor="uniform", instance="inst-rs")
        wait_cover([c1], parts)
        k1 = self.classic_member(group, [topic], "rs-k1", "range", 5)
        wait_cover([c1, k1], parts, each_owns=True)
        self.assertEqual(self.group_type(group), ConsumerGroupType.CONSUMER)
        c1_parts, k1_parts, k1_events = set(c1.assignment), set(k1.assignment), \
            k1.n_rebalance_events()
        self.assertEqual(c1.close(), 0)
        k2 = self.classic_member(group, [topic], "rs-k2", "range", 5, instance="inst-rs")
        wait_cover([k1, k2], parts, each_owns=True)
        self.assertEqual(self.group_type(group), ConsumerGroupType.CLASSIC)
        self.assertEqual(k2.assignment, c1_parts, describe_cover([k1, k2]))
        self.assertEqual(k1.assignment, k1_parts)
        self.assertEqual(k1.n_rebalance_events(), k1_events, "k1 saw a rebalance: %s" % k1.events)
        for m in (k1, k2):
            self.assertIsNone(m.fatal, m.name)
            self.assertEqual(m.close(), 0)

    def describe(self, group):
        c = kwire.Conn(self.broker.port)
        try:
            return kwire.consumer_group_describe(c, [group])[group]
        finally:
            c.close()

    def test_coordinator_kill9_members_continue(self):
        """The group's records in __consumer_offsets (KIP-848): cohortd killed
        with SIGKILL while two members consume and commit, restarted on the
        same data dir, replays the group as it was. The members go on under
        the same member ids and epochs, with no rebalance callback, their
        commits accepted; no record is read twice. Then DeleteGroups:
        NON_EMPTY_GROUP while it has members; once they left, the group and
        its offsets are deleted, and stay deleted across another kill."""
        if not isinstance(self.broker, Broker):
            self.skipTest("the reference Kafka is not restarted here")
        topic, group = "kr-cp", "g-kr-cp"
        nparts, per = 4, 200
        create_topics(self.broker.port, {topic: nparts})
        ends = self.produce(topic, nparts, per)
        parts = all_parts({topic: nparts})
        a = self.member(group, [topic], "cp-ka", delay_ms=4)
        b = self.member(group, [topic], "cp-kb", delay_ms=4)
        wait_cover([a, b], parts, each_owns=True)
        last = {}

        def stable():
            last["d"] = self.describe(group)
            d = last["d"]
            return d["state"] == "Stable" and len(d["members"]) == 2 and \
                all(m["epoch"] == d["epoch"] for m in d["members"].values())
        wait_until(stable, 30, "a Stable group of two")
        before = {mid: (m["epoch"], m["assignment"]) for mid, m in last["d"]["members"].items()}
        events = [m.n_rebalance_events() for m in (a, b)]
        self.wait_read([a, b], topic, nparts * per // 4)

        # Kafka's 45 s session minimum is 3 s in this class: the members get
        # 20 s to find the restarted coordinator on a loaded machine.
        settings = dict(self.broker.settings)
        self.addCleanup(self._restore, settings)
        self.broker.kill9()
        self.broker.settings["group.consumer.session.timeout.ms"] = "20000"
        self.broker.start()
        d = self.describe(group)
        self.assertEqual(d["error"], 0)
        self.assertEqual({mid: (m["epoch"], m["assignment"]) for mid, m in d["members"].items()},
                         before, "the replayed group differs")
        self.wait_read([a, b], topic, nparts * per)
        want = {(topic, p): e for p, e in ends.items()}

        def committed():   # each commits its positions, with its replayed epoch
            for m in (a, b):
                m.send("commitpos")
            time.sleep(0.5)
            last["o"] = type(self).read_offsets(self.broker.bootstrap, group)
            return last["o"] == want
        wait_until(committed, 60, "the commits to reach the end offsets", 0.5)
        self.assertEqual([m.n_rebalance_events() for m in (a, b)], events,
                         "a member rejoined: %s / %s" % (a.events, b.events))
        d = self.describe(group)
        self.assertEqual(set(d["members"]), set(before))
        for mid, m in d["members"].items():
            self.assertEqual(m["epoch"], before[mid][0])
        dups, problems = check_reads([a, b], topic, ends)
        self.assertEqual((dups, problems), (0, []))

        c = kwire.Conn(self.broker.port)
        self.addCleanup(c.close)
        self.assertEqual(kwire.delete_groups(c, [group]), {group: NON_EMPTY_GROUP})
        self.assertEqual(type(self).read_offsets(self.broker.bootstrap, group),
                         {(topic, p): e for p, e in ends.items()})
        for m in (a, b):
            self.assertIsNone(m.fatal, m.name)
            self.assertEqual(m.close(), 0)
        self.assertEqual(self.describe(group)["state"], "Empty")
        self.assertEqual(kwire.delete_groups(c, [group]), {group: 0})
        c.close()
        self.broker.kill9()
        self.broker.start()
        self.assertEqual(self.describe(group)["error"], GROUP_ID_NOT_FOUND)
        self.assertEqual(type(self).read_offsets(self.broker.bootstrap, group), {})

    def _restore(self, settings):
        """The class's broker with its own settings again (same data dir)."""
        if self.broker.settings != settings:
            self.broker.settings = settings
            self.broker.restart()


class ConsumerProtocolConfluentKafka(ConsumerProtocolConfluent):
    """The same scenarios against Apache Kafka 4.4.0 (tools/kafka-ref.sh),
    with the same group.consumer.* settings."""

    @classmethod
    def setUpClass(cls):
        cls.broker = start_clean(KafkaRef("4", settings=dict(CONSUMER_SETTINGS), name=cls.__name__))

    @classmethod
    def tearDownClass(cls):
        stop_clean(cls.broker)


if __name__ == "__main__":
    main()
