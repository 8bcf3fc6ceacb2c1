"""Changing configs and deleting records with current clients from PyPI
(the project venv): confluent-kafka 2.x (its wheel's librdkafka)
incremental_alter_configs (SET, DELETE, APPEND, SUBTRACT, validate_only),
describe_configs, delete_records and list_offsets; kafka-python 2.2
delete_records. Run with .deps/venv/bin/python (tools/install-clients.sh).
"""

from harness import BrokerTestCase, main

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka import admin as cka
from kafka import TopicPartition as KpTopicPartition
from kafka.admin import KafkaAdminClient

SET, DELETE, APPEND, SUBTRACT = (cka.AlterConfigOpType.SET, cka.AlterConfigOpType.DELETE,
                                 cka.AlterConfigOpType.APPEND, cka.AlterConfigOpType.SUBTRACT)


class AdminConfigsClients(BrokerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.admin = cka.AdminClient({"bootstrap.servers": cls.broker.bootstrap})
        for f in cls.admin.create_topics([cka.NewTopic(t, 1, 1) for t in ("mc", "mr", "kr")],
                                         request_timeout=20).values():
            f.result(timeout=30)
        p = Producer({"bootstrap.servers": cls.broker.bootstrap})
        for t in ("mr", "kr"):
            for i in range(10):
                p.produce(t, b"v%d" % i, partition=0)
        assert p.flush(30) == 0

    def incremental(self, res, validate_only=False):
        for f in self.admin.incremental_alter_configs([res], request_timeout=20,
                                                      validate_only=validate_only).values():
            f.result(timeout=30)

    def describe(self, rtype, name):
        fut = self.admin.describe_configs([cka.ConfigResource(rtype, name)], request_timeout=20)
        return list(fut.values())[0].result(timeout=30)

    def op(self, key, op, value=None):
        return cka.ConfigEntry(key, value, incremental_operation=op)

    def test_incremental_alter_configs(self):
        R = cka.ConfigResource
        self.incremental(R("topic", "mc", incremental_configs=[
            self.op("retention.ms", SET, "600000")]), validate_only=True)
        self.assertNotEqual(self.describe("topic", "mc")["retention.ms"].value, "600000")
        self.incremental(R("topic", "mc", incremental_configs=[
            self.op("retention.ms", SET, "600000"), self.op("cleanup.policy", APPEND, "compact")]))
        cfg = self.describe("topic", "mc")
        self.assertEqual(cfg["retention.ms"].value, "600000")
        self.assertEqual(cfg["retention.ms"].source, cka.ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
        self.assertEqual(cfg["cleanup.policy"].value, "delete,compact")
        self.incremental(R("topic", "mc", incremental_configs=[
            self.op("cleanup.policy", SUBTRACT, "delete"), self.op("retention.ms", DELETE)]))
        cfg = self.describe("topic", "mc")
        self.assertEqual(cfg["cleanup.policy"].value, "compact")
        self.assertNotEqual(cfg["retention.ms"].source, cka.ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
        with self.assertRaises(KafkaException) as cm:
            self.incremental(R("topic", "mc", incremental_configs=[
                self.op("retention.ms", APPEND, "5")]))
        self.assertEqual(cm.exception.args[0].code(), KafkaError.INVALID_CONFIG)
        # The broker: its own layer, and read-only keys refused.
        node = str(list(self.admin.list_topics(timeout=20).brokers)[0])
        self.incremental(R("broker", node, incremental_configs=[
            self.op("log.retention.bytes", SET, "1000000000")]))
        e = self.describe("broker", node)["log.retention.bytes"]
        self.assertEqual((e.value, e.source), ("1000000000",
                                               cka.ConfigSource.DYNAMIC_BROKER_CONFIG.value))
        self.assertFalse(e.is_read_only)
        self.assertEqual(self.describe("topic", "mc")["retention.bytes"].value, "1000000000")
        with self.assertRaises(KafkaException) as cm:
            self.incremental(R("broker", node, incremental_configs=[
                self.op("num.partitions", SET, "4")]))
        self.assertEqual(cm.exception.args[0].code(), KafkaError.INVALID_REQUEST)
        self.incremental(R("broker", node, incremental_configs=[
            self.op("log.retention.bytes", DELETE)]))

    def test_confluent_delete_records(self):
        futs = self.admin.delete_records([TopicPartition("mr", 0, 4)], request_timeout=20)
        res = list(futs.values())[0].result(timeout=30)
        self.assertEqual(res.low_watermark, 4)
        futs = self.admin.list_offsets({TopicPartition("mr", 0): cka.OffsetSpec.earliest()},
                                       request_timeout=20)
        self.assertEqual(list(futs.values())[0].result(timeout=30).offset, 4)
        futs = self.admin.delete_records([TopicPartition("mr", 0, 99)], request_timeout=20)
        with self.assertRaises(KafkaException) as cm:
            list(futs.values())[0].result(timeout=30)
        self.assertEqual(cm.exception.args[0].code(), KafkaError.OFFSET_OUT_OF_RANGE)

    def test_kafka_python_delete_records(self):
        kp = KafkaAdminClient(bootstrap_servers=self.broker.bootstrap, request_timeout_ms=20000)
        try:
            out = kp.delete_records({KpTopicPartition("kr", 0): 6})
            self.assertEqual(out[KpTopicPartition("kr", 0)]["low_watermark"], 6)
        finally:
            kp.close()
        futs = self.admin.list_offsets({TopicPartition("kr", 0): cka.OffsetSpec.earliest()},
                                       request_timeout=20)
        self.assertEqual(list(futs.values())[0].result(timeout=30).offset, 6)


if __name__ == "__main__":
    main()
