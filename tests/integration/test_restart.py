"""Restart (SIGTERM) and kill -9 keep the topic registry: names, partition
counts and topic ids; deleted topics stay deleted; the cluster id is stable."""
import subprocess

import kwire
from harness import BrokerTestCase, main, run
from kwire import Conn


class RestartAndKill(BrokerTestCase):
    broker_settings = {"num.partitions": "2"}

    def snapshot(self):
        with Conn(self.broker.port) as c:
            md = kwire.metadata(c, 12, None, allow_auto=False)
        topics = {}
        for t in md["topic_list"]:
            self.assertEqual(t["error_code"], 0, t)
            self.assertNotEqual(t["topic_id"], kwire.ZERO_UUID, t["name"])
            topics[t["name"]] = (kwire.uuid_str(t["topic_id"]), len(t["partitions"]))
        return md["cluster_id"], topics

    def create(self, c, topics):
        res = kwire.create_topics(c, topics, 7)["topics"]
        for t in topics:
            self.assertEqual(res[t[0]]["error_code"], 0, res[t[0]])

    def assertSameTopics(self, before, after, when):
        self.assertEqual(sorted(after[1]), sorted(before[1]), "topic names differ %s" % when)
        for name in before[1]:
            self.assertEqual(after[1][name], before[1][name],
                             "topic %s (id, partitions) changed %s" % (name, when))
        self.assertEqual(after[0], before[0], "cluster id changed %s" % when)

    def test_restart_then_kill9(self):
        b = self.broker
        with Conn(b.port) as c:
            self.create(c, [("rs-one", 1, 1), ("rs-eight", 8, 1), ("rs-default", -1, -1),
                            ("rs-cfg", 3, 1, {"cleanup.policy": "compact"}),
                            ("rs-doomed", 1, 1)])
            kwire.metadata(c, 4, ["rs-auto"], allow_auto=True)  # auto-created
            res = kwire.delete_topics(c, ["rs-doomed"], 4)["results"]
            self.assertEqual(res[0]["error_code"], 0)
        before = self.snapshot()
        for name, parts in (("rs-one", 1), ("rs-eight", 8), ("rs-default", 2), ("rs-cfg", 3),
                            ("rs-auto", 2)):
            self.assertEqual(before[1].get(name, (None, None))[1], parts, name)
        self.assertNotIn("rs-doomed", before[1])

        # 1. graceful restart (stop() asserts exit code 0)
        b.restart()
        self.assertSameTopics(before, self.snapshot(), "across a SIGTERM restart")

        # 2. acknowledged changes, then kill -9 right after the last answer
        with Conn(b.port) as c:
            self.create(c, [("rs-after-restart", 4, 1)])
            res = kwire.create_partitions(c, {"rs-one": 6})
            self.assertEqual(res["rs-one"][0], 0, res)
            res = kwire.delete_topics(c, ["rs-eight"], 4)["results"]
            self.assertEqual(res[0]["error_code"], 0)
            # 30 pipelined creates, every answer read before the kill
            reqs = [kwire.request(kwire.API_CREATE_TOPICS, 4, 1000 + i,
                                  kwire.create_topics_body(4, [("rs-burst-%02d" % i, 1 + i % 3, 1)]))
                    for i in range(30)]
            c.send(b"".join(reqs))
            for i in range(30):
                r = kwire.parse_create_topics(c.recv_response(1000 + i), 4)
                self.assertEqual(r["topics"]["rs-burst-%02d" % i]["error_code"], 0)
            b.kill9()
        b.start()
        after = self.snapshot()
        self.assertNotIn("rs-eight", after[1], "a deleted topic came back after kill -9")
        self.assertEqual(after[1]["rs-one"][0], before[1]["rs-one"][0])
        self.assertEqual(after[1]["rs-one"][1], 6, "CreatePartitions lost by kill -9")
        self.assertEqual(after[1]["rs-after-restart"][1], 4)
        for i in range(30):
            self.assertEqual(after[1].get("rs-burst-%02d" % i, (None, None))[1], 1 + i % 3,
                             "acknowledged topic rs-burst-%02d lost by kill -9" % i)
        for name in ("rs-default", "rs-cfg", "rs-auto"):
            self.assertEqual(after[1][name], before[1][name])
        self.assertEqual(after[0], before[0], "cluster id changed across kill -9")

        # 3. kill -9 twice more in a row, with no traffic in between, then a clean stop
        b.kill9()
        b.start()
        b.kill9()
        b.start()
        self.assertSameTopics(after, self.snapshot(), "across two more kill -9")
        b.restart()
        self.assertSameTopics(after, self.snapshot(), "across the final restart")

    def test_fresh_data_dir_is_empty(self):
        other = self.new_broker(name="fresh")
        other.start()
        with Conn(other.port) as c:
            md = kwire.metadata(c, 12, None, allow_auto=False)
        self.assertEqual([t["name"] for t in md["topic_list"]
                          if not t["name"].startswith("__")], [])
        other.stop()


    def test_kill9_during_a_stream_of_creates(self):
        """Requests keep coming when the broker dies: every acknowledged topic
        is there after the restart, and the registry's torn tail (if any) does
        not stop the broker from starting."""
        b = self.new_broker(name="kill-mid-stream")
        b.start()
        acked = []
        with Conn(b.port) as c:
            corr = 0
            # pipeline 5 requests ahead; kill after 60 answers, with 5 in flight
            inflight = []
            i = 0
            while len(acked) < 60:
                while len(inflight) < 5:
                    corr += 1
                    name = "kill-stream-%04d" % i
                    i += 1
                    c.send(kwire.request(kwire.API_CREATE_TOPICS, 4, corr,
                                         kwire.create_topics_body(4, [(name, 1 + i % 5, 1)])))
                    inflight.append((corr, name, 1 + i % 5))
                want_corr, name, parts = inflight.pop(0)
                res = kwire.parse_create_topics(c.recv_response(want_corr), 4)
                self.assertEqual(res["topics"][name]["error_code"], 0)
                acked.append((name, parts))
            b.kill9()
        b.start()
        with Conn(b.port) as c:
            md = kwire.metadata(c, 12, None, allow_auto=False)
        have = {t["name"]: len(t["partitions"]) for t in md["topic_list"]}
        for name, parts in acked:
            self.assertEqual(have.get(name), parts, "acknowledged %s lost by kill -9" % name)
        unacked = set(have) - {n for n, _ in acked}
        self.assertLessEqual(len(unacked), 5, "topics appeared that were never requested: %r" % unacked)
        b.stop()

    def test_second_broker_on_the_same_data_dir_refuses(self):
        """Kafka locks its log dirs (.lock): a second process on the same
        directory must not start and corrupt the first one's registry."""
        b = self.new_broker(name="lock-owner")
        b.start()
        other = self.new_broker(name="lock-intruder", data_dir=b.data_dir)
        try:
            other.start(timeout=10)
        except AssertionError:
            pass  # refused (non-zero exit): what Kafka does
        else:
            other.stop(check=False)
            self.fail("a second cohortd started on the data dir of a running one")
        self.assertIsNotNone(other.proc.returncode)
        self.assertNotEqual(other.proc.returncode, 0)
        b.assert_alive()
        b.stop()

    def test_port_in_use_is_a_clear_startup_error(self):
        b = self.new_broker(name="port-owner")
        b.start()
        other = self.new_broker(name="port-intruder", port=b.port)
        # not other.start(): connecting to the port would reach the owner
        try:
            p = run(other.argv(), timeout=20)
        except subprocess.TimeoutExpired:
            self.fail("a second cohortd kept running on a port already in use")
        self.assertNotEqual(p.returncode, 0)
        self.assertGreater(p.returncode, 0, "died by a signal:\n" + p.stderr)
        self.assertIn(str(b.port), p.stderr, "the error should name the listener:\n" + p.stderr)
        b.assert_alive()
        b.stop()

    def test_concurrent_churn_then_kill9(self):
        """Several clients create, grow and delete overlapping topics at once;
        every answer is read; then kill -9: the registry after the restart is
        exactly what Metadata showed just before the kill."""
        import random
        import threading
        b = self.new_broker(name="churn")
        b.start()
        errors = []

        def worker(seed):
            rnd = random.Random(seed)
            try:
                with Conn(b.port) as c:
                    for _ in range(60):
                        name = "churn-%02d" % rnd.randrange(12)
                        op = rnd.randrange(3)
                        if op == 0:
                            r = kwire.create_topics(c, [(name, rnd.randrange(1, 4), 1)], 7)
                            code = r["topics"][name]["error_code"]
                            ok = (kwire.NONE, kwire.TOPIC_ALREADY_EXISTS)
                        elif op == 1:
                            r = kwire.delete_topics(c, [name], 6)["results"]
                            code = r[0]["error_code"]
                            ok = (kwire.NONE, kwire.UNKNOWN_TOPIC_OR_PARTITION)
                        else:
                            r = kwire.create_partitions(c, {name: rnd.randrange(1, 8)}, 3)
                            code = r[name][0]
                            ok = (kwire.NONE, kwire.UNKNOWN_TOPIC_OR_PARTITION,
                                  kwire.INVALID_PARTITIONS)
                        if code not in ok:
                            errors.append((name, op, code))
            except Exception as e:  # reported below
                errors.append(repr(e))

        threads = [threading.Thread(target=worker, args=(s,)) for s in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [])
        with Conn(b.port) as c:
            md = kwire.metadata(c, 12, None, allow_auto=False)
        before = {t["name"]: (t["topic_id"], len(t["partitions"])) for t in md["topic_list"]}
        b.kill9()
        b.start()
        with Conn(b.port) as c:
            md = kwire.metadata(c, 12, None, allow_auto=False)
        after = {t["name"]: (t["topic_id"], len(t["partitions"])) for t in md["topic_list"]}
        self.assertEqual(after, before, "registry after kill -9 differs from the acknowledged state")
        b.stop()


if __name__ == "__main__":
    main()
