"""kafka-python (Debian's python3-kafka) producers and consumers on the data
path: acks=0/1/all, gzip, keys and headers; consumers from earliest, from
latest (waiting for new messages: Fetch long polling), and by timestamp
(offsets_for_times: ListOffsets by time), end/beginning offsets."""
import time

import kwire
from harness import BrokerTestCase, main

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

T = "kp-data"
T2 = "kp-data-ts"


class KafkaPythonData(BrokerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        with kwire.Conn(cls.broker.port) as c:
            res = kwire.create_topics(c, [(T, 3, 1), (T2, 3, 1)], 4)
        assert res["topics"][T]["error_code"] == 0, res
        assert res["topics"][T2]["error_code"] == 0, res

    def consumer(self):
        return KafkaConsumer(bootstrap_servers=self.broker.bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=3000, api_version=(2, 5))

    def test_roundtrip(self):
        sent = []
        for acks, codec in ((0, None), (1, "gzip"), ("all", None)):
            p = KafkaProducer(bootstrap_servers=self.broker.bootstrap, acks=acks,
                              compression_type=codec, api_version=(2, 5), linger_ms=5)
            futs = []
            for i in range(300):
                k, v = b"key-%d" % (i % 7), b"%s-%d" % (str(acks).encode(), i)
                futs.append(p.send(T, key=k, value=v, headers=[("h", b"%d" % i)]))
                sent.append((k, v, b"%d" % i))
            p.flush()
            for f in futs:
                md = f.get(timeout=10)
                if acks != 0:
                    self.assertGreaterEqual(md.offset, 0)
            p.close()
        c = self.consumer()
        tps = [TopicPartition(T, i) for i in range(3)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        got = []
        per_part = {}
        while len(got) < len(sent):
            recs = c.poll(timeout_ms=3000)
            if not recs:
                break
            for tp, msgs in recs.items():
                for m in msgs:
                    self.assertEqual(m.offset, per_part.get(tp.partition, -1) + 1)
                    per_part[tp.partition] = m.offset
                    got.append((m.key, m.value, dict(m.headers)["h"]))
        self.assertEqual(sorted(got), sorted(sent))
        ends = c.end_offsets(tps)
        self.assertEqual(sum(ends.values()), len(sent))
        self.assertEqual(c.beginning_offsets(tps), {tp: 0 for tp in tps})
        c.close()

    def test_latest_and_timestamp(self):
        tp = TopicPartition(T2, 2)
        p = KafkaProducer(bootstrap_servers=self.broker.bootstrap, acks=1, api_version=(2, 5))
        base = int(time.time() * 1000) - 100000
        for i in range(50):
            p.send(T2, value=b"ts-%d" % i, partition=2, timestamp_ms=base + i * 1000)
        p.flush()
        c = self.consumer()
        res = c.offsets_for_times({tp: base + 20500})
        start = c.beginning_offsets([tp])[tp]
        end = c.end_offsets([tp])[tp]
        self.assertIsNotNone(res[tp])
        c.assign([tp])
        c.seek(tp, res[tp].offset)
        m = next(iter(c))
        self.assertEqual(m.value, b"ts-21")
        self.assertEqual(m.timestamp, base + 21000)
        self.assertIsNone(c.offsets_for_times({tp: int(time.time() * 1000) + 3600000})[tp])
        # latest: a consumer at the end sees only what comes after
        c.seek_to_end(tp)
        self.assertEqual(c.position(tp), end)
        self.assertGreaterEqual(end, start + 50)
        p.send(T2, value=b"after-latest", partition=2)
        p.flush()
        m = next(iter(c))
        self.assertEqual(m.value, b"after-latest")
        self.assertEqual(m.offset, end)
        c.close()
        p.close()


if __name__ == "__main__":
    main(requires_modules=("kafka",))
