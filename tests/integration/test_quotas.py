"""Client quotas throttle real clients (issue 14): a producer and a consumer
(confluent-kafka-python on librdkafka, Debian's) over producer_byte_rate and
consumer_byte_rate quotas for their client ids get a throttle time in their
answers (librdkafka's throttle_cb) and still deliver and read everything; a
client id without a quota is not throttled. The quotas are set over the
wire (AlterClientQuotas v0) and survive a restart (DescribeClientQuotas).
kafka-configs' output for quotas is compared with Kafka's in
it_kafka_configs_tool; the throttle time formula is unit-tested (quota_unit).
"""
import struct
import time

import kwire
from harness import BrokerTestCase, main
from kwire import Conn

from confluent_kafka import Consumer, Producer, TopicPartition

API_DESCRIBE_CLIENT_QUOTAS = 48
API_ALTER_CLIENT_QUOTAS = 49
# bytes/s; Kafka's window is at least 10 s, so 500,000 produced bytes fit
# before a throttle, and a Fetch answers at most 1,000,000 (quota x 10 s)
RATE = 50000
FETCH_RATE = 100000


def alter_quota(conn, client_id, key, value):
    """AlterClientQuotas v0 for one client-id entity; the entry's error code."""
    w = kwire.Writer()
    w.array_len(1)
    w.array_len(1).string("client-id").string(client_id)
    w.array_len(1).string(key).raw(struct.pack(">d", value)).bool(False)
    w.bool(False)  # ValidateOnly
    r = conn.call(API_ALTER_CLIENT_QUOTAS, 0, w.bytes())
    r.int32()  # ThrottleTimeMs
    assert r.array_len() == 1
    err = r.int16()
    r.string(nullable=True)
    return err


def describe_quotas(conn):
    """DescribeClientQuotas v0, no filter: {(type, name) tuple: {key: value}}."""
    w = kwire.Writer()
    w.array_len(0).bool(False)
    r = conn.call(API_DESCRIBE_CLIENT_QUOTAS, 0, w.bytes())
    r.int32()
    assert r.int16() == 0
    r.string(nullable=True)
    out = {}
    for _ in range(r.array_len()):
        ent = tuple((r.string(), r.string(nullable=True)) for _ in range(r.array_len()))
        vals = {}
        for _ in range(r.array_len()):
            k = r.string()
            vals[k] = struct.unpack(">d", r._take(8))[0]
        out[ent] = vals
    return out


class Quotas(BrokerTestCase):
    broker_settings = {"num.partitions": "1"}

    def setUp(self):
        with Conn(self.broker.port) as c:
            self.assertEqual(alter_quota(c, "slow-producer", "producer_byte_rate", RATE), 0)
            self.assertEqual(alter_quota(c, "slow-consumer", "consumer_byte_rate", FETCH_RATE), 0)

    def produce(self, topic, client_id, n, size):
        throttles = []
        p = Producer({"bootstrap.servers": self.broker.bootstrap, "client.id": client_id,
                      "linger.ms": 5, "throttle_cb": lambda ev: throttles.append(
                          ev.throttle_time)})
        value = b"x" * size
        for _ in range(n):
            p.produce(topic, value)
            p.poll(0)
        self.assertEqual(p.flush(120), 0, "messages left undelivered")
        return throttles

    def test_producer_and_consumer_throttled(self):
        # 600 x 1,000 bytes over 50,000 bytes/s (a 10 s window): throttled
        throttles = self.produce("qt", "slow-producer", 600, 1000)
        self.assertTrue(any(t > 0 for t in throttles),
                        "a producer over producer_byte_rate got no throttle time: %r"
                        % throttles)
        # the same bytes by a client id without a quota: never throttled
        free = self.produce("qt", "free-producer", 600, 1000)
        self.assertFalse(any(t > 0 for t in free), "unquoted client throttled: %r" % free)
        # the consumer reads all 1,200 records (1.2 MB, more than one window
        # lets through: its Fetch is capped, then throttled)
        ct = []
        c = Consumer({"bootstrap.servers": self.broker.bootstrap, "client.id": "slow-consumer",
                      "group.id": "qg", "enable.auto.commit": False,
                      "throttle_cb": lambda ev: ct.append(ev.throttle_time)})
        c.assign([TopicPartition("qt", 0, 0)])
        got = 0
        deadline = time.monotonic() + 120
        while got < 1200 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got += 1
        c.close()
        self.assertEqual(got, 1200, "the throttled consumer did not read everything")
        self.assertTrue(any(t > 0 for t in ct),
                        "a consumer over consumer_byte_rate got no throttle time: %r" % ct)

    def test_quotas_survive_a_restart(self):
        self.broker.restart()
        with Conn(self.broker.port) as c:
            q = describe_quotas(c)
        self.assertEqual(q.get((("client-id", "slow-producer"),)), {"producer_byte_rate": RATE})
        self.assertEqual(q.get((("client-id", "slow-consumer"),)), {"consumer_byte_rate": FETCH_RATE})


if __name__ == "__main__":
    main()
