"""confluent-kafka-python (Debian python3-confluent-kafka 1.7.0, on librdkafka)
AdminClient against cohortd: create/list/delete topics, list_topics metadata,
create_partitions, describe_configs, and the errors Kafka gives."""
from harness import BrokerTestCase, main

try:
    from confluent_kafka import KafkaError, KafkaException, Producer
    from confluent_kafka.admin import (AdminClient, ConfigResource, NewPartitions,
                                       NewTopic)
except ImportError:  # main() reports the skip
    pass

TIMEOUT = 20


class Confluent(BrokerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.admin = AdminClient({"bootstrap.servers": cls.broker.bootstrap,
                                 "client.id": "cohort-it-confluent",
                                 "socket.timeout.ms": 20000})

    @classmethod
    def tearDownClass(cls):
        del cls.admin  # destroys the librdkafka handle before the broker stops
        super().tearDownClass()

    def md(self, topic=None):
        return self.admin.list_topics(topic=topic, timeout=TIMEOUT)

    def results(self, futures):
        """{name: None or KafkaError code}"""
        out = {}
        for k, f in futures.items():
            try:
                f.result(timeout=TIMEOUT)
                out[k] = None
            except KafkaException as e:
                out[k] = e.args[0].code()
        return out

    def create(self, *topics, **kw):
        return self.results(self.admin.create_topics(list(topics), operation_timeout=10,
                                                     request_timeout=TIMEOUT, **kw))

    def test_list_topics_metadata(self):
        self.assertEqual(self.create(NewTopic("ck-meta", 4, 1)), {"ck-meta": None})
        md = self.md()
        self.assertEqual(len(md.brokers), 1)
        [b] = md.brokers.values()
        self.assertEqual((b.host, b.port), ("127.0.0.1", self.broker.port))
        self.assertEqual(md.controller_id, b.id)
        self.assertEqual(md.orig_broker_id, b.id)
        self.assertTrue(md.cluster_id)
        t = md.topics["ck-meta"]
        self.assertIsNone(t.error)
        self.assertEqual(sorted(t.partitions), [0, 1, 2, 3])
        for p in t.partitions.values():
            self.assertIsNone(p.error)
            self.assertEqual((p.leader, p.replicas, p.isrs), (b.id, [b.id], [b.id]))
        one = self.md("ck-meta")
        self.assertEqual(list(one.topics), ["ck-meta"])

    def test_create_and_delete(self):
        res = self.create(NewTopic("ck-a", 1, 1), NewTopic("ck-b", 3, -1),
                          NewTopic("ck-c", 2, 1, config={"retention.ms": "3600000"}))
        self.assertEqual(res, {"ck-a": None, "ck-b": None, "ck-c": None})
        md = self.md()
        self.assertEqual({n: len(md.topics[n].partitions) for n in ("ck-a", "ck-b", "ck-c")},
                         {"ck-a": 1, "ck-b": 3, "ck-c": 2})
        res = self.results(self.admin.delete_topics(["ck-a", "ck-c", "ck-never"],
                                                    operation_timeout=10, request_timeout=TIMEOUT))
        self.assertEqual(res, {"ck-a": None, "ck-c": None,
                               "ck-never": KafkaError.UNKNOWN_TOPIC_OR_PART})
        md = self.md()
        self.assertNotIn("ck-a", md.topics)
        self.assertNotIn("ck-c", md.topics)
        self.assertIn("ck-b", md.topics)

    def test_create_errors(self):
        self.create(NewTopic("ck-dup", 1, 1))
        res = self.create(NewTopic("ck-dup", 1, 1), NewTopic("ck-rf2", 1, 2),
                          NewTopic("ck bad", 1, 1))
        self.assertEqual(res, {"ck-dup": KafkaError.TOPIC_ALREADY_EXISTS,
                               "ck-rf2": KafkaError.INVALID_REPLICATION_FACTOR,
                               "ck bad": KafkaError.TOPIC_EXCEPTION})

    def test_validate_only(self):
        self.assertEqual(self.create(NewTopic("ck-validate", 2, 1), validate_only=True),
                         {"ck-validate": None})
        self.assertNotIn("ck-validate", self.md().topics)

    def test_create_partitions(self):
        self.create(NewTopic("ck-grow", 1, 1))
        res = self.results(self.admin.create_partitions([NewPartitions("ck-grow", 3)],
                                                        request_timeout=TIMEOUT))
        self.assertEqual(res, {"ck-grow": None})
        self.assertEqual(len(self.md("ck-grow").topics["ck-grow"].partitions), 3)
        res = self.results(self.admin.create_partitions([NewPartitions("ck-grow", 2)],
                                                        request_timeout=TIMEOUT))
        self.assertEqual(res, {"ck-grow": KafkaError.INVALID_PARTITIONS})

    def test_describe_configs(self):
        self.create(NewTopic("ck-cfg", 1, 1, config={"cleanup.policy": "compact"}))
        node = list(self.md().brokers)[0]
        futs = self.admin.describe_configs([ConfigResource("topic", "ck-cfg")],
                                           request_timeout=TIMEOUT)
        [(res, f)] = futs.items()
        configs = f.result(timeout=TIMEOUT)
        self.assertTrue(configs, "no config entries for a topic")
        self.assertIn("cleanup.policy", configs)
        self.assertEqual(configs["cleanup.policy"].value, "compact")
        futs = self.admin.describe_configs([ConfigResource("broker", str(node))],
                                           request_timeout=TIMEOUT)
        [(res, f)] = futs.items()
        configs = f.result(timeout=TIMEOUT)
        self.assertIn("num.partitions", configs)
        futs = self.admin.describe_configs([ConfigResource("topic", "ck-nope")],
                                           request_timeout=TIMEOUT)
        [(res, f)] = futs.items()
        with self.assertRaises(KafkaException) as cm:
            f.result(timeout=TIMEOUT)
        self.assertEqual(cm.exception.args[0].code(), KafkaError.UNKNOWN_TOPIC_OR_PART)

    def test_transactional_producer_fails_fast(self):
        """cohort has no transactions: init_transactions() must fail at once
        with a fatal error (TRANSACTIONAL_ID_AUTHORIZATION_FAILED from
        FindCoordinator), not retry a retriable one until its timeout."""
        p = Producer({"bootstrap.servers": self.broker.bootstrap,
                      "transactional.id": "ck-txn", "client.id": "cohort-it-txn"})
        try:
            with self.assertRaises(KafkaException) as cm:
                p.init_transactions(60)
            err = cm.exception.args[0]
            self.assertEqual(err.code(), KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                             err.str())
            self.assertTrue(err.fatal(), err.str())
        finally:
            del p


if __name__ == "__main__":
    main(requires_modules=["confluent_kafka"])
