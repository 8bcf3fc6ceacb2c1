"""When a group's committed offsets expire (KIP-211), in /v1/groups/G: never
while a Stable consumer group subscribes to their topic; offsets.retention
after the group became Empty (the moment its last rebalance record ended
Empty); a simple (standalone) group's by commit time."""
import json
import time
import urllib.request

import kwire
from harness import BrokerTestCase, main
from test_metrics import Member, TOPIC

try:
    from kafka import KafkaProducer
except ImportError:  # main() reports the skip
    pass

RETENTION_MS = 60000


class OffsetsExpiry(BrokerTestCase):
    broker_settings = {"admin.listeners": "http://127.0.0.1:0", "num.partitions": "2",
                       "group.initial.rebalance.delay.ms": "0",
                       "group.min.session.timeout.ms": "500",
                       "offsets.retention.minutes": str(RETENTION_MS // 60000)}

    def group(self, gid):
        url = "http://127.0.0.1:%d/v1/groups/%s" % (self.broker.admin_port(), gid)
        with urllib.request.urlopen(url, timeout=30) as r:
            return json.loads(r.read())

    def test_expiry_by_state(self):
        b = self.broker
        prod = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all")
        for i in range(4):
            prod.send(TOPIC, b"x", partition=i % 2)
        prod.flush(60)
        prod.close()
        a = Member(b.bootstrap, "a")
        self.addCleanup(a.stop)
        deadline = time.monotonic() + 60
        while sorted(a.positions().values()) != [2, 2]:
            self.assertLess(time.monotonic(), deadline, "member never read to the end")
            time.sleep(0.1)
        a.commit()
        g = self.group("metrics-g")
        self.assertEqual(g["state"], "Stable")
        self.assertEqual(len(g["offsets"]), 2)
        for o in g["offsets"]:
            self.assertIsNone(o["expires_ms"], o)  # subscribed by a Stable consumer group
        self.assertIsNone(g["offsets_expire_ms"])

        a.stop()  # the last member leaves: Empty, the clock of KIP-211 starts
        deadline = time.monotonic() + 60
        while True:
            g = self.group("metrics-g")
            if g["state"] == "Empty":
                break
            self.assertLess(time.monotonic(), deadline, g)
            time.sleep(0.1)
        became_empty = g["last_rebalance"]["end_ms"]
        self.assertEqual(g["last_rebalance"]["outcome"], "Empty")
        for o in g["offsets"]:
            self.assertEqual(o["expires_ms"], became_empty + RETENTION_MS, g)
        self.assertEqual(g["offsets_expire_ms"], became_empty + RETENTION_MS)

        # a standalone consumer's commit: by its commit time
        with kwire.Conn(b.port) as c:
            self.assertEqual(kwire.offset_commit(c, 2, "simple-g", [(TOPIC, 0, 1, None)]),
                             {(TOPIC, 0): 0})
        s = self.group("simple-g")
        self.assertIsNone(s["protocol_type"])
        (o,) = s["offsets"]
        self.assertEqual(o["expires_ms"], o["commit_ms"] + RETENTION_MS)


if __name__ == "__main__":
    main(requires_modules=("kafka",))
