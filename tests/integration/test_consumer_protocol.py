"""The consumer rebalance protocol (KIP-848, group.protocol=consumer) with
confluent-kafka 2.x (librdkafka 2.x, in .deps/venv) against cohortd: the
members (py_member.py --protocol consumer) heartbeat with
ConsumerGroupHeartbeat and the broker assigns (uniform / range).

Scenarios: members joining one by one (scale out), one leaving (scale in),
one killed (its partitions move when its session expires), commits in the
revoke listener so no record is read twice across graceful moves; a static
member that closes and comes back under its instance id gets the same
partitions and the other member sees no rebalance; AdminClient lists the
group as a consumer group."""
import os
import re
import shutil
import tempfile
import time


from confluent_kafka import ConsumerGroupState, ConsumerGroupType
from confluent_kafka.admin import AdminClient

from client_scenarios import (HERE, VENV_PYTHON, ClientGroupTest, describe_cover, member_flags,
                              wait_cover)
from harness import main, start_clean, stop_clean
from kafka_ref import KafkaRef
from test_group_helpers import GROUP_SETTINGS, all_parts, create_topics

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
