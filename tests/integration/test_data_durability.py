"""The log under stress, with kafka-python (Debian's python3-kafka):

- SIGKILL while three producers send with acks=all: after a restart every
  acknowledged message is there, exactly once, in send order per producer,
  and offsets are contiguous;
- a segment whose tail is garbage or whose last batch has a flipped byte:
  recovery truncates it (WARN in the log) and the broker serves the rest,
  then appends after it;
- retention by time and by size deletes old segments and moves the log
  start offset;
- compaction keeps the latest value per key and drops tombstones after
  delete.retention.ms.
"""
import glob
import os
import threading
import time

import kwire
from harness import Broker, BrokerTestCase, main

from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def consume_all(bootstrap, topic, partitions=1, timeout=20.0):
    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                      auto_offset_reset="earliest", consumer_timeout_ms=1500,
                      api_version=(2, 5))
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    end = c.end_offsets(tps)
    out = {tp.partition: [] for tp in tps}
    deadline = time.time() + timeout
    while time.time() < deadline and any(c.position(tp) < end[tp] for tp in tps):
        for tp, msgs in c.poll(timeout_ms=500).items():
            out[tp.partition].extend(msgs)
    c.close()
    return out


def create(port, name, parts=1, configs=None):
    with kwire.Conn(port) as c:
        res = kwire.create_topics(c, [(name, parts, 1, configs or {})], 4)
    assert res["topics"][name]["error_code"] == 0, res


class Durability(BrokerTestCase):
    settings = {"log.retention.check.interval.ms": "300", "log.cleaner.backoff.ms": "300"}

    def new(self, **settings):
        s = dict(self.settings)
        s.update(settings)
        b = Broker(settings=s)
        b.start()
        self.addCleanup(b.cleanup)
        return b

    def test_sigkill_acks_all(self):
        b = self.new()
        create(b.port, "dur-kill", 1)
        acked = {n: [] for n in range(3)}
        stop = threading.Event()
        lock = threading.Lock()

        def producer(n):
            p = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all", retries=0,
                              linger_ms=2, max_in_flight_requests_per_connection=1,
                              api_version=(2, 5), request_timeout_ms=3000,
                              max_block_ms=3000)
            i = 0
            while not stop.is_set():
                val = b"%d:%d" % (n, i)

                def ok(md, v=val):
                    with lock:
                        acked[n].append(v)
                try:
                    p.send("dur-kill", value=val, partition=0).add_callback(ok)
                except Exception:
                    break
                i += 1
                if i % 200 == 0:
                    time.sleep(0.005)
            try:
                p.close(timeout=2)
            except Exception:
                pass

        threads = [threading.Thread(target=producer, args=(n,)) for n in range(3)]
        for t in threads:
            t.start()
        deadline = time.time() + 20
        while time.time() < deadline:
            with lock:
                if min(len(v) for v in acked.values()) >= 3000:
                    break
            time.sleep(0.05)
        b.kill9()
        with lock:
            snapshot = {n: list(v) for n, v in acked.items()}
        stop.set()
        for t in threads:
            t.join(timeout=30)
        self.assertTrue(all(len(v) >= 100 for v in snapshot.values()), snapshot.keys())
        b.start()
        got = consume_all(b.bootstrap, "dur-kill")[0]
        offs = [m.offset for m in got]
        self.assertEqual(offs, list(range(len(offs))), "offsets contiguous from 0")
        vals = [m.value for m in got]
        self.assertEqual(len(vals), len(set(vals)), "no duplicates")
        present = set(vals)
        for n, lst in snapshot.items():
            missing = [v for v in lst if v not in present]
            self.assertEqual(missing, [], "acknowledged but lost (producer %d)" % n)
            mine = [int(v.split(b":")[1]) for v in vals if v.startswith(b"%d:" % n)]
            self.assertEqual(mine, sorted(mine), "producer %d out of order" % n)
        b.stop()

    def produce(self, b, topic, values, key=None, ts=None, partition=0):
        p = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all", linger_ms=5,
                          api_version=(2, 5), batch_size=1024)
        for v in values:
            k = key(v) if callable(key) else key
            p.send(topic, key=k, value=v, partition=partition, timestamp_ms=ts)
        p.flush()
        p.close()

    def test_corrupt_tail(self):
        b = self.new()
        create(b.port, "dur-corrupt", 1)
        self.produce(b, "dur-corrupt", [b"m%d" % i for i in range(500)])
        self.produce(b, "dur-corrupt", [b"last"])  # its own batch, at the end
        b.stop()
        seg = sorted(glob.glob(os.path.join(b.data_dir, "dur-corrupt-0", "*.log")))[-1]
        with open(seg, "ab") as f:  # a torn write: garbage after the last batch
            f.write(os.urandom(100))
        b.start()
        got = consume_all(b.bootstrap, "dur-corrupt")[0]
        self.assertEqual([m.value for m in got], [b"m%d" % i for i in range(500)] + [b"last"])
        b.stop()
        self.assertRegex(b.stderr(), r"(?i)truncat")
        # now a flipped byte inside the last batch: that batch goes, the rest stays
        size = os.path.getsize(seg)
        with open(seg, "r+b") as f:
            f.seek(size - 3)
            c = f.read(1)
            f.seek(size - 3)
            f.write(bytes([c[0] ^ 0xFF]))
        b.start()
        got = consume_all(b.bootstrap, "dur-corrupt")[0]
        self.assertEqual([m.value for m in got], [b"m%d" % i for i in range(500)])
        self.produce(b, "dur-corrupt", [b"after"])
        got = consume_all(b.bootstrap, "dur-corrupt")[0]
        self.assertEqual(got[-1].value, b"after")
        self.assertEqual(got[-1].offset, 500)
        b.stop()

    def test_retention(self):
        b = self.new()
        create(b.port, "dur-ret-time", 1, {"segment.bytes": "4096", "retention.ms": "60000"})
        create(b.port, "dur-ret-size", 1, {"segment.bytes": "4096", "retention.bytes": "8192"})
        old = int(time.time() * 1000) - 3600 * 1000
        self.produce(b, "dur-ret-time", [b"x" * 100] * 200, ts=old)   # an hour old
        self.produce(b, "dur-ret-time", [b"new"] * 5)                  # now
        self.produce(b, "dur-ret-size", [b"y" * 100] * 400)
        deadline = time.time() + 15
        while time.time() < deadline:
            c = KafkaConsumer(bootstrap_servers=b.bootstrap, api_version=(2, 5))
            tp1, tp2 = TopicPartition("dur-ret-time", 0), TopicPartition("dur-ret-size", 0)
            beg = c.beginning_offsets([tp1, tp2])
            end = c.end_offsets([tp1, tp2])
            c.close()
            # a retention pass may run while the produce is still arriving
            # (a loaded machine): the size bound holds after the next one
            if beg[tp1] > 0 and beg[tp2] > 0 and \
                    (end[tp2] - beg[tp2]) * 100 <= 8192 + 4096 + 4096:
                break
            time.sleep(0.3)
        self.assertGreater(beg[tp1], 150, "old segments deleted by time")
        self.assertEqual(end[tp1], 205)
        got = consume_all(b.bootstrap, "dur-ret-time")[0]
        self.assertEqual([m.value for m in got][-5:], [b"new"] * 5)
        self.assertEqual(got[0].offset, beg[tp1])
        self.assertGreater(beg[tp2], 0, "deleted by size")
        self.assertLessEqual((end[tp2] - beg[tp2]) * 100, 8192 + 4096 + 4096)
        b.stop()

    def test_compaction(self):
        b = self.new()
        create(b.port, "dur-compact", 1, {"cleanup.policy": "compact", "segment.bytes": "4096",
                                          "delete.retention.ms": "1000"})
        vals = []
        for r in range(30):
            for k in range(10):
                vals.append((b"k%d" % k, b"v%d-%d" % (k, r)))
        p = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all", linger_ms=0,
                          api_version=(2, 5), batch_size=512)
        for k, v in vals:
            p.send("dur-compact", key=k, value=v, partition=0)
        p.send("dur-compact", key=b"k0", value=None, partition=0)  # tombstone
        for i in range(400):  # filler to close the segments above
            p.send("dur-compact", key=b"filler", value=b"f%d" % i, partition=0)
        p.flush()
        p.close()
        deadline = time.time() + 30
        while time.time() < deadline:
            got = consume_all(b.bootstrap, "dur-compact")[0]
            keys = [m.key for m in got]
            latest = {}
            for m in got:
                latest[m.key] = m.value
            ok = (all(keys.count(b"k%d" % k) == 1 for k in range(1, 10)) and
                  b"k0" not in keys)
            if ok:
                break
            time.sleep(0.5)
        for k in range(1, 10):
            self.assertEqual(keys.count(b"k%d" % k), 1, keys)
            self.assertEqual(latest[b"k%d" % k], b"v%d-29" % k)
        self.assertNotIn(b"k0", keys, "tombstone removed after delete.retention.ms")
        offs = [m.offset for m in got]
        self.assertEqual(offs, sorted(offs))
        self.assertEqual(latest[b"filler"], b"f399")
        b.stop()


if __name__ == "__main__":
    main(requires_modules=("kafka",))
