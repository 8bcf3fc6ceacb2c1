"""A librdkafka consumer (confluent-kafka-python on Debian's librdkafka)
configured with fetch.max.bytes=1000000, max.partition.fetch.bytes=20000000
and receive.message.max.bytes=2000000 reads ~25 MB of large batches.

Kafka caps every partition of a fetch by what is left of the request's
MaxBytes (KIP-74), so no response is much larger than fetch.max.bytes unless
its first batch is (it is then sent whole, so the consumer progresses).
A broker that lets the first partition fill max.partition.fetch.bytes
answers with a ~20 MB response here, which librdkafka refuses ("Invalid
response size ... increase receive.message.max.bytes") before reconnecting
and asking again, forever. Three raw batches of 1.5 MB, larger than
fetch.max.bytes, check the first-batch exception on the way."""
import time

import kwire
import test_data_idempotent as idem
from harness import BrokerTestCase, main

try:
    from confluent_kafka import Consumer, Producer, TopicPartition
except ImportError:  # main() reports the skip
    pass

T = "fetch-limits"
VALUE = 50000          # bytes per produced message
PER_PART = 250         # messages per partition from the producer: 2 x 12.5 MB
BIG = 150000           # records of the raw batches
BIG_BATCHES = 3        # of 10 records each (1.5 MB), on partition 0 after the rest


def value(p, i):
    head = b"%d:%06d:" % (p, i)
    return head + b"v" * (VALUE - len(head))


class FetchLimitsLibrdkafka(BrokerTestCase):
    broker_settings = {"message.max.bytes": "3000000"}

    def produce(self):
        with kwire.Conn(self.broker.port) as c:
            res = kwire.create_topics(c, [(T, 2, 1)], 4)
            self.assertEqual(res["topics"][T]["error_code"], 0, res)
        p = Producer({"bootstrap.servers": self.broker.bootstrap, "linger.ms": 100,
                      "batch.size": 1000000, "compression.type": "none", "acks": "all"})
        failed = []
        for part in (0, 1):
            for i in range(PER_PART):
                while True:
                    try:
                        p.produce(T, value(part, i), partition=part,
                                  on_delivery=lambda err, m: err and failed.append(err))
                        break
                    except BufferError:
                        p.poll(0.1)
                p.poll(0)
        self.assertEqual(p.flush(120), 0)
        self.assertEqual(failed, [])
        with kwire.Conn(self.broker.port) as c:
            for k in range(BIG_BATCHES):
                b = idem.batch(-1, -1, -1, [b"B%d:" % k + b"b" * (BIG - 3)] * 10)
                self.assertGreater(len(b), 1000000)
                err, base = idem.produce(c, T, 0, b)
                self.assertEqual((err, base), (0, PER_PART + 10 * k))

    def test_consume_25mb_with_small_fetch_max_bytes(self):
        self.produce()
        errors = []
        c = Consumer({"bootstrap.servers": self.broker.bootstrap, "group.id": "fetch-limits",
                      "enable.auto.commit": False,
                      "fetch.max.bytes": 1000000,
                      "max.partition.fetch.bytes": 20000000,
                      "receive.message.max.bytes": 2000000,
                      "error_cb": lambda e: errors.append(e.str())})
        want = {0: PER_PART + 10 * BIG_BATCHES, 1: PER_PART}
        got = {0: [], 1: []}
        try:
            c.assign([TopicPartition(T, 0, 0), TopicPartition(T, 1, 0)])
            deadline = time.monotonic() + 180
            while any(len(got[p]) < n for p, n in want.items()):
                self.assertLess(time.monotonic(), deadline,
                                "consumed %r of %r; client errors: %r"
                                % ({p: len(v) for p, v in got.items()}, want, errors[:5]))
                self.assertFalse([e for e in errors if "response size" in e], errors[:5])
                m = c.poll(0.5)
                if m is None:
                    continue
                self.assertIsNone(m.error(), m.error())
                got[m.partition()].append((m.offset(), m.value()))
        finally:
            c.close()
        self.assertEqual(errors, [])
        for part in (0, 1):
            self.assertEqual([o for o, _ in got[part]], list(range(want[part])))
            for i in range(PER_PART):
                self.assertEqual(got[part][i][1], value(part, i))
        for k in range(BIG_BATCHES):
            for j in range(10):
                v = got[0][PER_PART + 10 * k + j][1]
                self.assertEqual((len(v), v[:3]), (BIG, b"B%d:" % k))
        self.broker.assert_alive()


if __name__ == "__main__":
    main(requires_modules=["confluent_kafka"])
