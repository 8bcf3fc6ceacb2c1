"""cohortd killed with SIGKILL and restarted under a consumer group: committed
offsets are intact (OffsetFetch through librdkafka and kafka-python's admin
client returns them), running consumers carry on committing, and the group
re-forms with a new member."""
import os
import unittest

import kwire
from harness import Broker, main
from test_group_helpers import (GROUP_SETTINGS, RdkConsumer, all_parts, create_topics,
                                require_group_apis, skip, wait_cover, wait_until)


class GroupRestart(unittest.TestCase):

    def broker(self):
        b = Broker(settings=dict(GROUP_SETTINGS), name="group-restart")
        self.addCleanup(b.cleanup)
        b.start()
        if not require_group_apis(b.port):
            b.stop()
            skip("cohortd does not serve JoinGroup yet")
        return b

    def consumer(self, b, group, topics, **kw):
        c = RdkConsumer(b.bootstrap, group, list(topics), session_ms=6000, **kw)
        self.addCleanup(c.cleanup)
        return c

    def admin_offsets(self, b, group):
        from kafka import KafkaAdminClient
        adm = KafkaAdminClient(bootstrap_servers=b.bootstrap, client_id="rs-adm",
                               request_timeout_ms=30000)
        try:
            offs = adm.list_consumer_group_offsets(group)
            return {(k.topic, k.partition): v.offset for k, v in offs.items()}
        finally:
            adm.close()

    def commit_retrying(self, c, t, p, o, timeout=60):
        """After a coordinator restart the first commits may fail while the
        client finds the coordinator again; retry until one is acknowledged."""
        wait_until(lambda: c.commit(t, p, o) == "NO_ERROR", timeout,
                   "an acknowledged commit after the restart", interval=0.5)

    def test_offsets_survive_kill9_and_group_reforms(self):
        b = self.broker()
        topics = {"rs-t": 3}
        create_topics(b.port, topics)
        parts = all_parts(topics)
        c = self.consumer(b, "g-rs", topics, name="rs-c")
        wait_cover([c], parts)
        want = {("rs-t", 0): 5, ("rs-t", 1): 6, ("rs-t", 2): 7}
        for (t, p), o in want.items():
            self.assertEqual(c.commit(t, p, o), "NO_ERROR")

        b.kill9()
        b.start()
        self.assertEqual(self.admin_offsets(b, "g-rs"), want)

        # the running consumer carries on against the restarted coordinator
        self.commit_retrying(c, "rs-t", 0, 8)
        self.assertEqual(c.fetch_committed("rs-t", [0, 1, 2]), {0: 8, 1: 6, 2: 7})
        # and the group re-forms with a new member
        d = self.consumer(b, "g-rs", topics, name="rs-d")
        wait_cover([c, d], parts, each_owns=True)
        self.assertIsNone(c.fatal)
        self.assertEqual(c.close(), 0)
        self.assertEqual(d.close(), 0)

        # an Empty group's offsets survive a second kill
        b.kill9()
        b.start()
        got = self.admin_offsets(b, "g-rs")
        self.assertEqual(got, {("rs-t", 0): 8, ("rs-t", 1): 6, ("rs-t", 2): 7})
        e = self.consumer(b, "g-rs", topics, name="rs-e")
        wait_cover([e], parts)
        self.assertEqual(e.fetch_committed("rs-t", [0, 1, 2]), {0: 8, 1: 6, 2: 7})
        self.assertEqual(e.close(), 0)
        b.stop()

    def test_static_member_survives_kill9(self):
        """Group metadata (static members and their assignment) is replayed:
        a static member restarting after the coordinator's restart gets its
        old partitions and the other static member keeps its own."""
        b = self.broker()
        topics = {"rs-static": 4}
        create_topics(b.port, topics)
        parts = all_parts(topics)
        x = self.consumer(b, "g-rs-static", topics, instance="sx", name="rs-sx")
        y = self.consumer(b, "g-rs-static", topics, instance="sy", name="rs-sy")
        wait_cover([x, y], parts, each_owns=True)
        before = {"x": set(x.assignment), "y": set(y.assignment)}
        x.kill9()
        b.kill9()
        b.start()
        x2 = self.consumer(b, "g-rs-static", topics, instance="sx", name="rs-sx2")
        wait_cover([x2, y], parts, each_owns=True)
        self.assertEqual(x2.assignment, before["x"])
        self.assertEqual(y.assignment, before["y"])
        self.assertIsNone(y.fatal)
        self.assertEqual(x2.close(), 0)
        self.assertEqual(y.close(), 0)
        b.stop()

    def test_commit_metadata_bytes_survive_kill9(self):
        """Commit metadata is a length-prefixed string that may hold NULs:
        "Hello\\0world!" (12 bytes) comes back whole from memory and, after
        a SIGKILL, from the replayed __consumer_offsets records; null and
        empty metadata both come back "" (Kafka stores a null as
        OffsetAndMetadata.NO_METADATA), as does a partition never committed.
        Raw commits at a non-flexible and a flexible version, and
        kafka-python's commit()/committed()."""
        from kafka import KafkaConsumer, TopicPartition
        from kafka.structs import OffsetAndMetadata
        b = self.broker()
        t = "rs-meta"
        create_topics(b.port, {t: 4})
        meta = b"Hello\x00world!"
        self.assertEqual(len(meta), 12)
        with kwire.Conn(b.port) as c:
            errs = kwire.offset_commit(c, 2, "g-meta", [(t, 0, 10, meta), (t, 1, 11, None),
                                                        (t, 2, 12, "")])
            self.assertEqual(errs, {(t, 0): 0, (t, 1): 0, (t, 2): 0})
            errs = kwire.offset_commit(c, 8, "g-meta-flex", [(t, 0, 20, meta)])
            self.assertEqual(errs, {(t, 0): 0})
        kc = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id="g-meta-kp",
                           enable_auto_commit=False, api_version_auto_timeout_ms=30000,
                           request_timeout_ms=30000)
        try:
            tp = TopicPartition(t, 3)
            kc.assign([tp])
            kc.commit({tp: OffsetAndMetadata(30, meta.decode())})
            self.assertEqual(kc.committed(tp, metadata=True), OffsetAndMetadata(30, meta.decode()))
        finally:
            kc.close()

        def check():
            with kwire.Conn(b.port) as c:
                for v in (1, 5, 7, 8, 9):
                    got = kwire.offset_fetch(c, v, "g-meta", {t: [0, 1, 2, 3]})
                    self.assertEqual(got, {(t, 0): (10, meta, 0), (t, 1): (11, b"", 0),
                                           (t, 2): (12, b"", 0), (t, 3): (-1, b"", 0)}, v)
                    got = kwire.offset_fetch(c, v, "g-meta-flex", {t: [0]})
                    self.assertEqual(got, {(t, 0): (20, meta, 0)}, v)
                    got = kwire.offset_fetch(c, v, "g-meta-kp", {t: [3]})
                    self.assertEqual(got, {(t, 3): (30, meta, 0)}, v)

        check()
        b.kill9()
        b.start()
        check()
        kc = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id="g-meta-kp",
                           enable_auto_commit=False, request_timeout_ms=30000)
        try:
            self.assertEqual(kc.committed(TopicPartition(t, 3), metadata=True),
                             OffsetAndMetadata(30, meta.decode()))
        finally:
            kc.close()
        b.stop()


if __name__ == "__main__":
    gc = os.environ.get("GROUP_CONSUMER")
    if not gc or not os.access(gc, os.X_OK):
        skip("GROUP_CONSUMER (c/group_consumer.c) is not built")
    main(requires_modules=["kafka"])
