"""confluent-kafka-python 2.x (PyPI, in .deps/venv; its wheel carries
librdkafka 2.x) against cohortd: group consumers (py_member.py) with
on_assign / on_revoke / on_lost, eager range and cooperative-sticky,
static membership; AdminClient list / describe consumer groups, group
offsets, list_offsets with OffsetSpec, alter group offsets, delete groups;
list_topics and a regex subscription (Metadata v12 from librdkafka >= 2.1
carries four bytes after the body, which Kafka ignores and so does cohortd)."""
import os
import sys
import time

import confluent_kafka
from confluent_kafka import ConsumerGroupState, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from client_scenarios import (HERE, VENV_PYTHON, CallbackClientTests, ClientGroupTest,
                              member_flags, wait_cover)
from harness import main
from test_group_helpers import all_parts, create_topics, wait_until

MEMBER = os.path.join(HERE, "py_member.py")


class ConfluentGroups(CallbackClientTests, ClientGroupTest):
    CLIENT = "confluent"

    def member_argv(self, *flags):
        return [VENV_PYTHON, MEMBER, "--client", "confluent"] + member_flags(
            self.broker.bootstrap, *flags)

    def admin(self):
        return AdminClient({"bootstrap.servers": self.broker.bootstrap})

    def test_list_topics_and_regex_subscription(self):
        create_topics(self.broker.port, {"topic-rx-a": 2, "topic-rx-b": 1, "other-rx": 1})
        md = self.admin().list_topics(timeout=20)   # Metadata for all topics
        self.assertTrue({"topic-rx-a", "topic-rx-b", "other-rx"} <= set(md.topics), md.topics)
        self.assertEqual(len(md.topics["topic-rx-a"].partitions), 2)
        self.assertEqual([b.id for b in md.brokers.values()], [1])
        m = self.member("g-regex", ["^topic-rx-.*"], "rx-a")
        wait_cover([m], {("topic-rx-a", 0), ("topic-rx-a", 1), ("topic-rx-b", 0)})
        # a topic created later that matches joins the subscription
        create_topics(self.broker.port, {"topic-rx-c": 1})
        wait_cover([m], {("topic-rx-a", 0), ("topic-rx-a", 1), ("topic-rx-b", 0),
                         ("topic-rx-c", 0)})
        self.assertIsNone(m.fatal)
        self.assertEqual(m.close(), 0)

    def produce_timed(self, topic, partition, stamps):
        p = confluent_kafka.Producer({"bootstrap.servers": self.broker.bootstrap, "acks": "all"})
        for i, ts in enumerate(stamps):
            p.produce(topic, value=b"v%d" % i, partition=partition, timestamp=ts)
        self.assertEqual(p.flush(30), 0)

    def test_admin(self):
        adm = self.admin()
        t, g = "adm2", "g-adm2"
        create_topics(self.broker.port, {t: 3})
        parts = all_parts({t: 3})
        # partition 0: ten records stamped 1000..10000 ms, the largest in the middle
        stamps = [1000 * (i + 1) for i in range(10)]
        stamps[6] = 50000
        self.produce_timed(t, 0, stamps)
        self.produce_timed(t, 1, [5, 6, 7])

        def offsets(spec, p=0):
            tp = TopicPartition(t, p)
            return adm.list_offsets({tp: spec}, request_timeout=20)[tp].result(30)
        self.assertEqual(offsets(OffsetSpec.earliest()).offset, 0)
        self.assertEqual(offsets(OffsetSpec.latest()).offset, 10)
        self.assertEqual(offsets(OffsetSpec.latest(), 1).offset, 3)
        self.assertEqual(offsets(OffsetSpec.latest(), 2).offset, 0)
        r = offsets(OffsetSpec.for_timestamp(5500))
        self.assertEqual((r.offset, r.timestamp), (5, 6000))
        r = offsets(OffsetSpec.max_timestamp())
        self.assertEqual((r.offset, r.timestamp), (6, 50000))
        self.assertEqual(offsets(OffsetSpec.for_timestamp(60000)).offset, -1)

        ms = [self.member(g, [t], "adm-%d" % i, commit_on_revoke=False, commit_every=0)
              for i in range(2)]
        wait_cover(ms, parts, each_owns=True)
        for m in ms:
            for (tt, p) in sorted(m.assignment):
                self.assertEqual(m.commit(tt, p, 1 + p), "NO_ERROR")

        res = adm.list_consumer_groups(request_timeout=20).result(30)
        self.assertEqual(res.errors, [])
        mine = [x for x in res.valid if x.group_id == g]
        self.assertEqual(len(mine), 1, [x.group_id for x in res.valid])
        self.assertEqual(mine[0].state, ConsumerGroupState.STABLE)
        self.assertFalse(mine[0].is_simple_consumer_group)
        only_empty = adm.list_consumer_groups(states={ConsumerGroupState.EMPTY},
                                              request_timeout=20).result(30)
        self.assertNotIn(g, [x.group_id for x in only_empty.valid])
        only_stable = adm.list_consumer_groups(states={ConsumerGroupState.STABLE},
                                               request_timeout=20).result(30)
        self.assertIn(g, [x.group_id for x in only_stable.valid])

        d = adm.describe_consumer_groups([g], request_timeout=20)[g].result(30)
        self.assertEqual(d.group_id, g)
        self.assertEqual(d.state, ConsumerGroupState.STABLE)
        self.assertEqual(d.partition_assignor, "range")
        self.assertFalse(d.is_simple_consumer_group)
        self.assertEqual(d.coordinator.id, 1)
        self.assertEqual((d.coordinator.host, d.coordinator.port), ("127.0.0.1", self.broker.port))
        self.assertEqual(sorted(x.client_id for x in d.members), ["adm-0", "adm-1"])
        owned = [(tp.topic, tp.partition) for x in d.members for tp in x.assignment.topic_partitions]
        self.assertEqual(sorted(owned), sorted(parts))
        by_client = {x.client_id: {(tp.topic, tp.partition) for tp in x.assignment.topic_partitions}
                     for x in d.members}
        self.assertEqual(by_client, {m.name: m.assignment for m in ms})
        self.assertEqual({x.member_id for x in d.members}, {m.member_id for m in ms})

        def group_offsets():
            r = adm.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)],
                                                request_timeout=20)[g].result(30)
            return {(tp.topic, tp.partition): tp.offset for tp in r.topic_partitions}
        self.assertEqual(group_offsets(), {(t, 0): 1, (t, 1): 2, (t, 2): 3})

        # altering offsets of a group with live members is refused (Kafka:
        # UNKNOWN_MEMBER_ID, the admin commit carries no member id)
        f = adm.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(g, [TopicPartition(t, 0, 4)])], request_timeout=20)[g]
        r = None
        try:
            r = f.result(30)
        except confluent_kafka.KafkaException as e:
            self.assertEqual(e.args[0].name(), "UNKNOWN_MEMBER_ID")
        if r is not None:
            self.assertEqual([tp.error.name() if tp.error else None for tp in r.topic_partitions],
                             ["UNKNOWN_MEMBER_ID"])
        # deleting a group with members: NON_EMPTY_GROUP
        with self.assertRaises(confluent_kafka.KafkaException) as cm:
            adm.delete_consumer_groups([g], request_timeout=20)[g].result(30)
        self.assertEqual(cm.exception.args[0].name(), "NON_EMPTY_GROUP")

        for m in ms:
            self.assertEqual(m.close(), 0)
        wait_until(lambda: adm.describe_consumer_groups([g], request_timeout=20)[g]
                   .result(30).state == ConsumerGroupState.EMPTY, 30, "the group to be Empty")
        r = adm.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(g, [TopicPartition(t, 0, 4), TopicPartition(t, 1, 0)])],
            request_timeout=20)[g].result(30)
        self.assertEqual(sorted((tp.partition, tp.offset, tp.error) for tp in r.topic_partitions),
                         [(0, 4, None), (1, 0, None)])
        self.assertEqual(group_offsets(), {(t, 0): 4, (t, 1): 0, (t, 2): 3})
        # a new member starts where the admin client put the offsets
        c = self.member(g, [t], "adm-2", commit_on_revoke=False, commit_every=0)
        c.wait(lambda s: {p for (_, p, _, _) in s.msgs} >= {0, 1}, 60, "records of 0 and 1")
        first = {}
        for (_, p, o, _) in c.msgs:
            first.setdefault(p, o)
        self.assertEqual((first[0], first[1]), (4, 0))
        self.assertEqual(c.close(), 0)

        only_empty = adm.list_consumer_groups(states={ConsumerGroupState.EMPTY},
                                              request_timeout=20).result(30)
        self.assertIn(g, [x.group_id for x in only_empty.valid])
        self.assertIsNone(adm.delete_consumer_groups([g], request_timeout=20)[g].result(30))
        listed = adm.list_consumer_groups(request_timeout=20).result(30)
        self.assertNotIn(g, [x.group_id for x in listed.valid])
        with self.assertRaises(confluent_kafka.KafkaException) as cm:
            adm.delete_consumer_groups([g], request_timeout=20)[g].result(30)
        self.assertEqual(cm.exception.args[0].name(), "GROUP_ID_NOT_FOUND")
        # the deleted group's offsets are gone
        self.assertEqual(group_offsets(), {})


if __name__ == "__main__":
    sys.stdout.write("confluent-kafka %s, librdkafka %s\n"
                     % (confluent_kafka.version(), confluent_kafka.libversion()[0]))
    main()
