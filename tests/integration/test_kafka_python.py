"""kafka-python (Debian python3-kafka 2.0.2) KafkaAdminClient against cohortd:
create_topics, list_topics, describe_topics, describe_cluster, delete_topics,
create_partitions, describe_configs, and the errors Kafka gives."""
import logging
import time

from harness import BrokerTestCase, main

try:
    import kafka.errors as Errors
    from kafka.admin import (ConfigResource, ConfigResourceType, KafkaAdminClient,
                             NewPartitions, NewTopic)
except ImportError:  # main() reports the skip
    pass

NUM_PARTITIONS = 2


class KafkaPython(BrokerTestCase):
    broker_settings = {"num.partitions": str(NUM_PARTITIONS)}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.admin = KafkaAdminClient(bootstrap_servers=cls.broker.bootstrap,
                                         client_id="cohort-it-kafka-python",
                                         request_timeout_ms=20000,
                                         api_version_auto_timeout_ms=15000)
        except BaseException:
            cls.broker.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            cls.admin.close()
        finally:
            super().tearDownClass()

    def topics_by_name(self, names=None):
        return {t["topic"]: t for t in self.admin.describe_topics(names)}

    def test_01_version_negotiated(self):
        # kafka-python infers the broker version from ApiVersions v0: with
        # Metadata v5 available it must be at least (1, 0, 0)
        self.assertGreaterEqual(self.admin.config["api_version"], (1, 0, 0))

    def test_describe_cluster(self):
        c = self.admin.describe_cluster()
        self.assertEqual(len(c["brokers"]), 1, c)
        b = c["brokers"][0]
        self.assertEqual((b["host"], b["port"]), ("127.0.0.1", self.broker.port))
        self.assertEqual(c["controller_id"], b["node_id"])
        self.assertTrue(c["cluster_id"])

    def test_create_list_describe_delete(self):
        res = self.admin.create_topics([NewTopic("kp-a", 3, 1), NewTopic("kp-b", 1, 1),
                                        NewTopic("kp-c", 2, 1, topic_configs={"retention.ms": "86400000"})])
        self.assertEqual(sorted(t[0] for t in res.topic_errors), ["kp-a", "kp-b", "kp-c"])
        self.assertTrue(all(t[1] == 0 for t in res.topic_errors), res)
        topics = self.admin.list_topics()
        for n in ("kp-a", "kp-b", "kp-c"):
            self.assertIn(n, topics)
        desc = self.topics_by_name(["kp-a", "kp-b"])
        self.assertEqual(set(desc), {"kp-a", "kp-b"})
        node = self.admin.describe_cluster()["brokers"][0]["node_id"]
        for name, parts in (("kp-a", 3), ("kp-b", 1)):
            t = desc[name]
            self.assertEqual(t["error_code"], 0)
            self.assertFalse(t["is_internal"])
            self.assertEqual(sorted(p["partition"] for p in t["partitions"]), list(range(parts)))
            for p in t["partitions"]:
                self.assertEqual((p["error_code"], p["leader"], p["replicas"], p["isr"]),
                                 (0, node, [node], [node]))
        res = self.admin.delete_topics(["kp-a", "kp-c"])
        self.assertEqual(sorted(t[0] for t in res.topic_error_codes), ["kp-a", "kp-c"])
        topics = self.admin.list_topics()
        self.assertNotIn("kp-a", topics)
        self.assertNotIn("kp-c", topics)
        self.assertIn("kp-b", topics)

    def test_create_validate_only(self):
        self.admin.create_topics([NewTopic("kp-validate", 1, 1)], validate_only=True)
        self.assertNotIn("kp-validate", self.admin.list_topics())

    def test_topic_already_exists(self):
        self.admin.create_topics([NewTopic("kp-exists", 1, 1)])
        with self.assertRaises(Errors.TopicAlreadyExistsError):
            self.admin.create_topics([NewTopic("kp-exists", 1, 1)])

    def test_invalid_topic_names(self):
        for name in ("kp bad", "kp/slash", ".", "..", "k" * 250, "kp:colon"):
            with self.subTest(name=name[:20]):
                with self.assertRaises(Errors.InvalidTopicError):
                    self.admin.create_topics([NewTopic(name, 1, 1)])

    def test_invalid_replication_factor(self):
        for rf in (0, 2, 3):
            with self.subTest(rf=rf):
                with self.assertRaises(Errors.InvalidReplicationFactorError):
                    self.admin.create_topics([NewTopic("kp-rf-%d" % rf, 1, rf)])
        self.assertNotIn("kp-rf-3", self.admin.list_topics())

    def test_invalid_partition_count_at_creation(self):
        with self.assertRaises(Errors.InvalidPartitionsError):
            self.admin.create_topics([NewTopic("kp-zero-partitions", 0, 1)])

    def test_create_partitions(self):
        self.admin.create_topics([NewTopic("kp-grow", 2, 1)])
        res = self.admin.create_partitions({"kp-grow": NewPartitions(5)})
        self.assertEqual([tuple(t[:2]) for t in res.topic_errors], [("kp-grow", 0)])
        self.assertEqual(len(self.topics_by_name(["kp-grow"])["kp-grow"]["partitions"]), 5)
        with self.assertRaises(Errors.InvalidPartitionsError):
            self.admin.create_partitions({"kp-grow": NewPartitions(3)})  # decrease
        with self.assertRaises(Errors.InvalidPartitionsError):
            self.admin.create_partitions({"kp-grow": NewPartitions(5)})  # same count
        with self.assertRaises(Errors.UnknownTopicOrPartitionError):
            self.admin.create_partitions({"kp-no-such-topic": NewPartitions(5)})
        # validate_only changes nothing
        self.admin.create_partitions({"kp-grow": NewPartitions(9)}, validate_only=True)
        self.assertEqual(len(self.topics_by_name(["kp-grow"])["kp-grow"]["partitions"]), 5)

    def test_delete_unknown_topic(self):
        with self.assertRaises(Errors.UnknownTopicOrPartitionError):
            self.admin.delete_topics(["kp-never-existed"])

    def test_describe_unknown_topic(self):
        # MetadataRequest v4+ from the admin client has auto-creation off
        t = self.topics_by_name(["kp-unknown"])
        self.assertEqual(t["kp-unknown"]["error_code"], Errors.UnknownTopicOrPartitionError.errno)
        self.assertNotIn("kp-unknown", self.admin.list_topics())

    def test_describe_configs(self):
        self.admin.create_topics([NewTopic("kp-cfg", 1, 1,
                                           topic_configs={"cleanup.policy": "compact"})])
        node = self.admin.describe_cluster()["brokers"][0]["node_id"]
        # topic: all configs, and the one given at creation
        [resp] = self.admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-cfg")])
        obj = resp.to_object()["resources"]
        self.assertEqual(len(obj), 1)
        r = obj[0]
        self.assertEqual((r["error_code"], r["resource_name"]), (0, "kp-cfg"), r)
        entries = {e["config_names"]: e["config_value"] for e in r["config_entries"]}
        self.assertTrue(entries, "no config entries for a topic")
        self.assertEqual(entries.get("cleanup.policy"), "compact",
                         "the config given at creation is not described: %r" % entries)
        # topic: one named key
        [resp] = self.admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "kp-cfg", configs={"cleanup.policy": None})])
        r = resp.to_object()["resources"][0]
        self.assertEqual([e["config_names"] for e in r["config_entries"]], ["cleanup.policy"])
        # broker
        [resp] = self.admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, str(node))])
        r = resp.to_object()["resources"][0]
        self.assertEqual(r["error_code"], 0, r)
        entries = {e["config_names"]: e["config_value"] for e in r["config_entries"]}
        self.assertEqual(entries.get("num.partitions"), str(NUM_PARTITIONS), entries)
        # unknown topic
        [resp] = self.admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-nope")])
        r = resp.to_object()["resources"][0]
        self.assertEqual(r["error_code"], Errors.UnknownTopicOrPartitionError.errno, r)

    def test_manual_replica_assignment(self):
        node = self.admin.describe_cluster()["brokers"][0]["node_id"]
        self.admin.create_topics([NewTopic("kp-assigned", -1, -1,
                                           replica_assignments={0: [node], 1: [node]})])
        t = self.topics_by_name(["kp-assigned"])["kp-assigned"]
        self.assertEqual(sorted(p["partition"] for p in t["partitions"]), [0, 1])
        for assignment in ({0: [node + 1]}, {0: [node], 2: [node]}, {0: [node, node]}):
            with self.subTest(assignment=assignment):
                with self.assertRaises(Errors.InvalidReplicationAssignmentError):
                    self.admin.create_topics([NewTopic("kp-badassign", -1, -1,
                                                       replica_assignments=assignment)])

    def test_many_topics(self):
        names = ["kp-many-%03d" % i for i in range(100)]
        self.admin.create_topics([NewTopic(n, 1 + i % 4, 1) for i, n in enumerate(names)])
        desc = self.topics_by_name(names)
        for i, n in enumerate(names):
            self.assertEqual(len(desc[n]["partitions"]), 1 + i % 4)
        self.admin.delete_topics(names)
        left = set(self.admin.list_topics())
        self.assertFalse(left & set(names))


if __name__ == "__main__":
    logging.basicConfig(level=logging.CRITICAL)
    main(requires_modules=["kafka"])
