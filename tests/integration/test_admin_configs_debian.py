"""Changing configs with Debian's admin clients (for /usr/bin/python3):
kafka-python 2.0.2 KafkaAdminClient.alter_configs and confluent-kafka 1.7.0
(librdkafka 2.0.2) AdminClient.alter_configs, both AlterConfigs (API 33).
DescribeConfigs shows each change and its source; a change takes effect at
once (a lowered max.message.bytes refuses a big produce) and survives a
restart and kill -9; errors come back as the clients' Kafka errors.
"""
from harness import BrokerTestCase, main

try:
    import kafka.errors as Errors
    from kafka import KafkaProducer
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka import admin as cka
except ImportError:  # main() reports the skip
    pass

SRC_TOPIC, SRC_BROKER, SRC_DEFAULT_BROKER = 1, 2, 3


class AdminConfigsDebian(BrokerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.kp = KafkaAdminClient(bootstrap_servers=cls.broker.bootstrap,
                                  client_id="cohort-it-kp-admin", request_timeout_ms=20000)
        cls.kp.create_topics([NewTopic("kpc", 1, 1), NewTopic("ckc", 1, 1)])

    @classmethod
    def tearDownClass(cls):
        cls.kp.close()
        super().tearDownClass()

    def kp_describe(self, rtype, name, key):
        [resp] = self.kp.describe_configs([ConfigResource(rtype, name, configs={key: None})])
        [(err, _msg, _t, _n, entries)] = resp.resources
        self.assertEqual(err, 0)
        by = {e[0]: e for e in entries}  # (name, value, read_only, source, sensitive, synonyms)
        return by[key][1], by[key][3]

    def ck_admin(self):
        return cka.AdminClient({"bootstrap.servers": self.broker.bootstrap,
                                "client.id": "cohort-it-ck-admin"})

    def ck_alter(self, a, res):
        for fut in a.alter_configs([res], request_timeout=20).values():
            fut.result(timeout=30)

    def test_kafka_python_alter_configs(self):
        [resp] = [self.kp.alter_configs([ConfigResource(
            ConfigResourceType.TOPIC, "kpc", configs={"max.message.bytes": "100000",
                                                      "retention.ms": "86400000"})])]
        self.assertEqual([r[0] for r in resp.resources], [0])
        self.assertEqual(self.kp_describe(ConfigResourceType.TOPIC, "kpc", "max.message.bytes"),
                         ("100000", SRC_TOPIC))
        p = KafkaProducer(bootstrap_servers=self.broker.bootstrap, acks=1,
                          max_request_size=1 << 20, retries=0)
        try:
            with self.assertRaises(Errors.MessageSizeTooLargeError):
                p.send("kpc", b"x" * 200000).get(timeout=20)
            p.send("kpc", b"small").get(timeout=20)
        finally:
            p.close()
        [resp] = [self.kp.alter_configs([ConfigResource(
            ConfigResourceType.TOPIC, "kpc", configs={"retention.ms": "soon"})])]
        self.assertEqual(resp.resources[0][0], Errors.InvalidConfigurationError.errno)
        node = str(self.broker_node())
        [resp] = [self.kp.alter_configs([ConfigResource(
            ConfigResourceType.BROKER, node, configs={"log.cleaner.backoff.ms": "20000"})])]
        self.assertEqual([r[0] for r in resp.resources], [0])
        self.assertEqual(self.kp_describe(ConfigResourceType.BROKER, node, "log.cleaner.backoff.ms"),
                         ("20000", SRC_BROKER))
        [resp] = [self.kp.alter_configs([ConfigResource(
            ConfigResourceType.BROKER, node, configs={"broker.id": "4"})])]
        self.assertEqual(resp.resources[0][0], Errors.InvalidRequestError.errno)

        b = self.broker
        b.stop()
        b.start()
        self.reconnect()
        self.assertEqual(self.kp_describe(ConfigResourceType.TOPIC, "kpc", "max.message.bytes"),
                         ("100000", SRC_TOPIC))
        b.kill9()
        b.start()
        self.reconnect()
        self.assertEqual(self.kp_describe(ConfigResourceType.BROKER, node, "log.cleaner.backoff.ms"),
                         ("20000", SRC_BROKER))

    def reconnect(self):
        type(self).kp.close()
        type(self).kp = KafkaAdminClient(bootstrap_servers=self.broker.bootstrap,
                                         client_id="cohort-it-kp-admin", request_timeout_ms=20000)

    def broker_node(self):
        return self.kp.describe_cluster()["controller_id"]

    def test_confluent_alter_configs(self):
        a = self.ck_admin()
        self.ck_alter(a, cka.ConfigResource("topic", "ckc", set_config={"cleanup.policy": "compact",
                                                                         "segment.ms": "600000"}))
        fut = a.describe_configs([cka.ConfigResource("topic", "ckc")], request_timeout=20)
        cfg = list(fut.values())[0].result(timeout=30)
        self.assertEqual(cfg["cleanup.policy"].value, "compact")
        self.assertEqual(cfg["cleanup.policy"].source, SRC_TOPIC)
        self.assertEqual(cfg["segment.ms"].value, "600000")
        with self.assertRaises(KafkaException) as cm:
            self.ck_alter(a, cka.ConfigResource("topic", "ckc", set_config={"no.such.key": "1"}))
        self.assertEqual(cm.exception.args[0].code(), KafkaError.INVALID_CONFIG)
        with self.assertRaises(KafkaException) as cm:
            self.ck_alter(a, cka.ConfigResource("topic", "ck-never", set_config={"segment.ms": "1"}))
        self.assertEqual(cm.exception.args[0].code(), KafkaError.UNKNOWN_TOPIC_OR_PART)
        # The cluster-wide default (resource name "" is not expressible in
        # 1.7.0; the node's own layer is).
        node = str(self.broker_node())
        self.ck_alter(a, cka.ConfigResource("broker", node, set_config={"log.segment.bytes": "5000000"}))
        fut = a.describe_configs([cka.ConfigResource("topic", "ckc")], request_timeout=20)
        cfg = list(fut.values())[0].result(timeout=30)
        self.assertEqual((cfg["segment.bytes"].value, cfg["segment.bytes"].source),
                         ("5000000", SRC_BROKER))
        self.ck_alter(a, cka.ConfigResource("broker", node, set_config={}))


if __name__ == "__main__":
    main(requires_modules=["kafka", "confluent_kafka"])
