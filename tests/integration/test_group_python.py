"""Consumer groups of confluent-kafka-python (1.7) and kafka-python (2.0.2)
consumers on cohortd (subscribe, poll, commit, committed, close), and the
groups admin APIs through kafka-python's KafkaAdminClient and confluent's
AdminClient: list, describe, offsets, delete."""
import queue
import threading
import time

from harness import BrokerTestCase, main
from test_group_helpers import (GROUP_SETTINGS, all_parts, create_topics, require_group_apis,
                                skip, wait_until)


class Member(threading.Thread):
    """One consumer polled on its own thread (a poll loop per consumer, as
    applications do: a client that joins inside poll() must keep polling)."""

    def __init__(self, kind, bootstrap, group, topics, name):
        super().__init__(daemon=True)
        self.kind, self.name = kind, name
        self.assignment = set()
        self.error = None
        self.stop_ev = threading.Event()
        self.cmds = queue.Queue()
        self.closed = False
        if kind == "confluent":
            import confluent_kafka
            self.c = confluent_kafka.Consumer({
                "bootstrap.servers": bootstrap, "group.id": group, "client.id": name,
                "session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
                "enable.auto.commit": False, "auto.offset.reset": "earliest"})
            self.c.subscribe(list(topics))
        else:
            import kafka
            self.c = kafka.KafkaConsumer(
                *topics, bootstrap_servers=bootstrap, group_id=group, client_id=name,
                session_timeout_ms=6000, heartbeat_interval_ms=300, max_poll_interval_ms=30000,
                enable_auto_commit=False, auto_offset_reset="earliest",
                request_timeout_ms=40000)

    def run(self):
        try:
            while not self.stop_ev.is_set():
                if self.kind == "confluent":
                    m = self.c.poll(0.1)
                    if m is not None and m.error() and m.error().code() != -191:
                        self.error = str(m.error())
                    a = {(tp.topic, tp.partition) for tp in self.c.assignment()}
                else:
                    self.c.poll(timeout_ms=100)
                    a = {(tp.topic, tp.partition) for tp in self.c.assignment()}
                self.assignment = a
                try:
                    fn, res = self.cmds.get_nowait()
                except queue.Empty:
                    continue
                try:
                    res.put(("ok", fn(self.c)))
                except Exception as e:  # the caller asserts on it
                    res.put(("err", e))
            self.c.close()
            self.closed = True
        except Exception as e:
            self.error = repr(e)

    def call(self, fn, timeout=60):
        res = queue.Queue()
        self.cmds.put((fn, res))
        kind, v = res.get(timeout=timeout)
        if kind == "err":
            raise v
        return v

    def close(self):
        self.stop_ev.set()
        self.join(60)
        return self.closed


def commit_fn(kind, offsets):
    if kind == "confluent":
        from confluent_kafka import TopicPartition

        def f(c):
            r = c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                         asynchronous=False)
            return {(tp.topic, tp.partition): (tp.offset, tp.error) for tp in r}
        return f
    from kafka import TopicPartition
    from kafka.structs import OffsetAndMetadata

    def f(c):
        c.commit({TopicPartition(t, p): OffsetAndMetadata(o, "") for (t, p), o in offsets.items()})
        return True
    return f


def committed_fn(kind, tps):
    if kind == "confluent":
        from confluent_kafka import TopicPartition

        def f(c):
            r = c.committed([TopicPartition(t, p) for t, p in tps], timeout=20)
            return {(tp.topic, tp.partition): tp.offset for tp in r}
        return f
    from kafka import TopicPartition

    def f(c):
        return {(t, p): c.committed(TopicPartition(t, p)) for t, p in tps}
    return f


def errname(e):
    """kafka-python's delete_consumer_groups gives error classes, not instances."""
    return e.__name__ if isinstance(e, type) else type(e).__name__


class PythonClientGroups(BrokerTestCase):
    broker_settings = dict(GROUP_SETTINGS)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not require_group_apis(cls.broker.port):
            cls.tearDownClass()
            skip("cohortd does not serve JoinGroup yet")

    def member(self, kind, group, topics, name):
        m = Member(kind, self.broker.bootstrap, group, topics, name)
        self.addCleanup(lambda: m.stop_ev.set())
        m.start()
        return m

    def wait_cover(self, members, parts, timeout=60):
        def ok():
            seen = []
            for m in members:
                if m.error:
                    raise AssertionError("%s: %s" % (m.name, m.error))
                seen += list(m.assignment)
            return len(seen) == len(set(seen)) and set(seen) == parts and \
                all(m.assignment for m in members)
        try:
            wait_until(ok, timeout, "every partition assigned exactly once")
        except AssertionError:
            raise AssertionError("no exact cover: %s"
                                 % {m.name: sorted(m.assignment) for m in members})

    def run_group(self, kind):
        t = "py-%s" % kind
        topics = {t: 4}
        create_topics(self.broker.port, topics)
        parts = all_parts(topics)
        g = "g-py-%s" % kind
        a = self.member(kind, g, topics, "%s-a" % kind)
        self.wait_cover([a], parts)
        b = self.member(kind, g, topics, "%s-b" % kind)
        self.wait_cover([a, b], parts)
        # commit from a member of the current generation, read it back from both
        mine = sorted(a.assignment)
        offs = {tp: 7 + i for i, tp in enumerate(mine)}
        a.call(commit_fn(kind, offs))
        self.assertEqual(a.call(committed_fn(kind, mine)), offs)
        self.assertEqual(b.call(committed_fn(kind, mine)), offs)
        # a leaves: b gets everything
        self.assertTrue(a.close(), a.error)
        self.wait_cover([b], parts)
        self.assertEqual(b.call(committed_fn(kind, mine)), offs)
        self.assertTrue(b.close(), b.error)
        return g, t, offs

    def test_confluent_kafka_group(self):
        self.run_group("confluent")

    def test_kafka_python_group(self):
        self.run_group("kafka-python")

    def test_admin_kafka_python(self):
        from kafka import KafkaAdminClient, TopicPartition
        t = "adm-kp"
        create_topics(self.broker.port, {t: 2})
        g = "g-admin-kp"
        m = self.member("kafka-python", g, [t], "adm-kp-a")
        self.wait_cover([m], all_parts({t: 2}))
        m.call(commit_fn("kafka-python", {(t, 0): 11, (t, 1): 12}))
        adm = KafkaAdminClient(bootstrap_servers=self.broker.bootstrap, client_id="adm-kp",
                               request_timeout_ms=30000)
        self.addCleanup(adm.close)
        groups = adm.list_consumer_groups()
        self.assertIn((g, "consumer"), groups)
        (d,) = adm.describe_consumer_groups([g])
        self.assertEqual(d.group, g)
        self.assertEqual(d.state, "Stable")
        self.assertEqual(d.protocol_type, "consumer")
        self.assertEqual(d.protocol, "range")
        self.assertEqual(len(d.members), 1)
        mem = d.members[0]
        self.assertEqual(mem.client_id, "adm-kp-a")
        self.assertEqual(sorted(mem.member_metadata.subscription), [t])
        assigned = {(tp, p) for tp, ps in mem.member_assignment.assignment for p in ps}
        self.assertEqual(assigned, {(t, 0), (t, 1)})
        offs = adm.list_consumer_group_offsets(g)
        self.assertEqual({(k.topic, k.partition): v.offset for k, v in offs.items()},
                         {(t, 0): 11, (t, 1): 12})
        # deleting a group with members: NON_EMPTY_GROUP
        res = dict(adm.delete_consumer_groups([g]))
        self.assertEqual(errname(res[g]), "NonEmptyGroupError", res)
        # an unknown group: GROUP_ID_NOT_FOUND (or, from older brokers, not a coordinator)
        res = dict(adm.delete_consumer_groups(["g-admin-none"]))
        self.assertEqual(errname(res["g-admin-none"]), "GroupIdNotFoundError", res)
        self.assertTrue(m.close())
        wait_until(lambda: adm.describe_consumer_groups([g])[0].state == "Empty", 30,
                   "the group to become Empty")
        res = dict(adm.delete_consumer_groups([g]))
        self.assertEqual(errname(res[g]), "NoError", res)
        self.assertNotIn(g, [x[0] for x in adm.list_consumer_groups()])
        offs = adm.list_consumer_group_offsets(g, partitions=[TopicPartition(t, 0)])
        self.assertEqual({(k.topic, k.partition): v.offset for k, v in offs.items()},
                         {(t, 0): -1})

    def test_admin_confluent(self):
        import confluent_kafka
        from confluent_kafka.admin import AdminClient
        t = "adm-ck"
        create_topics(self.broker.port, {t: 3})
        g = "g-admin-ck"
        ms = [self.member("confluent", g, [t], "adm-ck-%d" % i) for i in range(2)]
        self.wait_cover(ms, all_parts({t: 3}))
        adm = AdminClient({"bootstrap.servers": self.broker.bootstrap})
        # list_groups (1.7: ListGroups + DescribeGroups)
        gl = adm.list_groups(timeout=20)
        mine = [x for x in gl if x.id == g]
        self.assertEqual(len(mine), 1, [x.id for x in gl])
        gm = mine[0]
        self.assertEqual(gm.state, "Stable")
        self.assertEqual(gm.protocol_type, "consumer")
        self.assertEqual(gm.protocol, "range")
        self.assertEqual(sorted(x.client_id for x in gm.members), ["adm-ck-0", "adm-ck-1"])
        for x in gm.members:
            self.assertTrue(x.id.startswith(x.client_id + "-"), x.id)
            self.assertTrue(len(x.assignment) > 0)
        one = adm.list_groups(g, timeout=20)
        self.assertEqual([x.id for x in one], [g])
        # the newer group admin calls, where this version has them
        if hasattr(adm, "list_consumer_group_offsets"):
            from confluent_kafka import ConsumerGroupTopicPartitions
            f = adm.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)])
            f[g].result(20)
        for m in ms:
            self.assertTrue(m.close())
        wait_until(lambda: [x.state for x in adm.list_groups(g, timeout=20)] == ["Empty"],
                   30, "the group to become Empty")
        if hasattr(adm, "delete_consumer_groups"):
            f = adm.delete_consumer_groups([g], request_timeout=20)
            f[g].result(20)
            self.assertEqual([x.state for x in adm.list_groups(g, timeout=20)], ["Dead"])
        del confluent_kafka


if __name__ == "__main__":
    main(requires_modules=["kafka", "confluent_kafka"])
