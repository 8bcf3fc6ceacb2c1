"""libcohort's producer (src/client/cl_producer*.c) against cohortd and
against Apache Kafka 4.4.0 in the same test. c/cohort_producer.c is the
producer process (commands on stdin, one delivery report per line); the
records are read back with confluent-kafka (librdkafka 2.0.2, Debian).

- keyed records land where librdkafka's producer with the same
  `partitioner` puts the same keys (murmur2_random is Java's default
  partitioner: toPositive(murmur2(key)) % n; also consistent_random and
  fnv1a_random), and every record is at the partition and offset its
  delivery report gave, with its key, value, headers and timestamp;
- records without a key stick to one partition per batch (KIP-480): in
  produce order, the partition changes only when a batch is full;
- an explicit partition is honoured; a partition the topic does not have
  and a topic that never appears time out after max.block.ms, an invalid
  topic name gets INVALID_TOPIC_EXCEPTION, a record above
  max.request.size MESSAGE_TOO_LARGE;
- every compression.type, acks 0 / 1 / all; close flushes what lingers;
- a batch the broker refuses as above the topic's max.message.bytes
  (MESSAGE_TOO_LARGE) is split and resent, down to single records, with
  idempotence on and off: every record once, in order, with its headers
  and timestamp, every report a success; a single record above it fails
  its report with MESSAGE_TOO_LARGE;
- idempotence: behind fault_proxy.py, which drops or delays Produce
  answers the broker has written, the idempotent producer's retries leave
  each record exactly once and in order per partition, where the same run
  without idempotence writes duplicates (the proxy's faults are real);
- a broker that answers OUT_OF_ORDER_SEQUENCE_NUMBER for the batch it
  expected next makes the producer bump its epoch (KIP-360) and go on at
  sequence 0; NOT_LEADER_OR_FOLLOWER makes it refresh the metadata and
  resend, in order;
- buffer.memory with max.block.ms=0: while the proxy holds every request,
  produce returns _QUEUE_FULL; once released, every accepted record is
  delivered.
"""
import os
import struct
import subprocess
import threading
import time
import unittest

import harness
import kwire
import kwire_legacy
from fault_proxy import FaultProxy
from harness import free_port, main, start_clean, stop_clean
from kafka_ref import KafkaRef
from test_group_helpers import create_topics

PRODUCER = os.environ.get("COHORT_PRODUCER", "")


def run_producer(bootstrap, commands, settings=(), timeout=180):
    """Runs the producer over a whole script; returns (reports, errors,
    other lines): reports {seq: (partition, offset, err, ts)}, errors
    {seq: err}."""
    argv = [PRODUCER, bootstrap] + ["%s=%s" % kv for kv in settings]
    p = subprocess.run(argv, input="\n".join(commands) + "\n", stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout,
                       preexec_fn=harness._pdeathsig)
    if p.returncode != 0:
        raise AssertionError("producer exited %d: %s\n%s" % (p.returncode, p.stdout[-2000:],
                                                             p.stderr[-3000:]))
    return parse(p.stdout.splitlines())


def parse(lines):
    reports, errors, other = {}, {}, []
    for line in lines:
        f = line.split()
        if f and f[0] == "D":
            seq = int(f[1])
            if seq in reports:
                raise AssertionError("two reports for record %d" % seq)
            reports[seq] = (int(f[2]), int(f[3]), f[4], int(f[5]))
        elif f and f[0] == "E":
            errors[int(f[1])] = f[2]
        else:
            other.append(line)
    return reports, errors, other


def read_all(bootstrap, topic, nparts, at_least=0):
    """Every record of topic: {partition: [(offset, key, value, headers, ts)]}.
    at_least: wait (30 s at most) until the end offsets add up to that many
    records first (acks=0: the producer is done before the broker is)."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader-%s" % topic,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    out = {}
    try:
        ends = {}
        deadline = time.monotonic() + 30
        while True:
            for p in range(nparts):
                lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
                ends[p] = hi
                out[p] = []
            if sum(ends.values()) >= at_least or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        c.assign([TopicPartition(topic, p, 0) for p in range(nparts)])
        deadline = time.monotonic() + 60
        while any(len(out[p]) < ends[p] for p in out) and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None or m.error():
                continue
            out[m.partition()].append((m.offset(), m.key(), m.value(),
                                       m.headers() or [], m.timestamp()[1]))
    finally:
        c.close()
    return out


def wait_line(lines, prefix, count=1, timeout=60):
    """Waits until count lines starting with prefix are in lines (filled by
    a reader thread)."""
    deadline = time.monotonic() + timeout
    while sum(l.startswith(prefix) for l in list(lines)) < count:
        if time.monotonic() > deadline:
            raise AssertionError("no %r line: %r" % (prefix, lines[-10:]))
        time.sleep(0.05)


def batch_headers(port, topic, nparts):
    """The record batch headers in the log, read with raw Fetch v10:
    {partition: [(base_offset, attributes, producer_id, epoch, base_seq, count)]}."""
    out = {}
    with kwire.Conn(port) as c:
        for p in range(nparts):
            out[p] = []
            off = 0
            while True:
                err, hw, data = kwire_legacy.fetch(c, 10, topic, [(p, off, 8 << 20)])[p]
                if err or not data:
                    break
                i = 0
                while i + 61 <= len(data):
                    base, blen = struct.unpack(">qi", data[i:i + 12])
                    if i + 12 + blen > len(data):
                        break
                    attrs, last_delta = struct.unpack(">hi", data[i + 21:i + 27])
                    pid, epoch, seq, count = struct.unpack(">qhii", data[i + 43:i + 61])
                    out[p].append((base, attrs, pid, epoch, seq, count))
                    off = base + last_delta + 1
                    i += 12 + blen
                if off >= hw:
                    break
    return out


def rdk_partitions(bootstrap, topic, keys, partitioner):
    """Where librdkafka's producer puts each key: {key: partition}."""
    from confluent_kafka import Producer
    got = {}
    p = Producer({"bootstrap.servers": bootstrap, "partitioner": partitioner,
                  "linger.ms": 5})

    def dr(err, msg):
        if err is None:
            got[msg.key().decode()] = msg.partition()

    for k in keys:
        p.produce(topic, key=k.encode(), value=b"x", on_delivery=dr)
        p.poll(0)
    p.flush(60)
    return got


class ProducerTests:
    broker = None

    def setUp(self):
        if not os.access(PRODUCER, os.X_OK):
            raise SystemExit("FAIL: COHORT_PRODUCER (it_cohort_producer) not built: %r" % PRODUCER)

    def topic(self, name, parts, configs=None):
        name = "%s-%s" % (name, self.SUFFIX)
        create_topics(self.broker.port, {name: parts}, configs=configs)
        return name

    def test_keyed_like_librdkafka(self):
        keys = ["key-%d" % i for i in range(300)]
        for partitioner in ("murmur2_random", "consistent_random", "fnv1a_random"):
            with self.subTest(partitioner=partitioner):
                mine = self.topic("keyed-%s" % partitioner.split("_")[0], 7)
                theirs = self.topic("keyed-rdk-%s" % partitioner.split("_")[0], 7)
                reports, errors, other = run_producer(
                    self.broker.bootstrap, ["G %s -1 300 40 key-" % mine, "F -1"],
                    [("partitioner", partitioner)])
                self.assertEqual(errors, {})
                self.assertEqual(len(reports), 300, other)
                got = {keys[s]: r[0] for s, r in reports.items()}
                self.assertEqual({r[2] for r in reports.values()}, {"NONE"})
                want = rdk_partitions(self.broker.bootstrap, theirs, keys, partitioner)
                self.assertEqual(len(want), 300)
                self.assertEqual({k: (got[k], want.get(k)) for k in got if got[k] != want.get(k)}, {})
                self.assertGreater(len(set(got.values())), 4)
                # each record where its report says, with its key and value
                log = read_all(self.broker.bootstrap, mine, 7)
                where = {(p, o): (k, v) for p, recs in log.items() for o, k, v, _, _ in recs}
                self.assertEqual(len(where), 300)
                for s, (part, off, _, _) in reports.items():
                    k, v = where[(part, off)]
                    self.assertEqual(k, keys[s].encode())
                    self.assertTrue(v.startswith(b"%d:" % s), v)

    def test_unkeyed_sticky(self):
        """KIP-480: one partition per batch. With linger.ms long, batches
        leave only when full (batch.size), so in produce order every run of
        one partition but the last is one full batch, and the runs spread
        over several partitions."""
        t = self.topic("sticky", 6)
        reports, errors, other = run_producer(
            self.broker.bootstrap, ["G %s -1 400 100 -" % t, "F -1"],
            [("linger.ms", "60000"), ("batch.size", "2000")])
        self.assertEqual(errors, {})
        self.assertEqual(len(reports), 400, other)
        self.assertEqual({r[2] for r in reports.values()}, {"NONE"})
        parts = [reports[s][0] for s in range(400)]
        runs = []
        for p in parts:
            if runs and runs[-1][0] == p:
                runs[-1][1] += 1
            else:
                runs.append([p, 1])
        lens = [n for _, n in runs[:-1]]
        self.assertGreater(len(runs), 5, runs)
        self.assertEqual(len(set(lens)), 1, runs)      # every batch equally full
        self.assertGreater(lens[0], 10, runs)
        self.assertGreater(len({p for p, _ in runs}), 2, runs)
        # one batch: everything on one partition
        t2 = self.topic("sticky-one", 6)
        reports, errors, _ = run_producer(self.broker.bootstrap,
                                          ["G %s -1 50 100 -" % t2, "F -1"],
                                          [("linger.ms", "60000"), ("batch.size", "100000")])
        self.assertEqual(len({r[0] for r in reports.values()}), 1, reports)
        self.assertEqual({r[2] for r in reports.values()}, {"NONE"})

    def test_partition_and_errors(self):
        t = self.topic("explicit", 3)
        reports, errors, other = run_producer(
            self.broker.bootstrap,
            ["P %s 2 k1 v1" % t, "P %s 0 k1 v2" % t, "P %s 9 k v" % t,
             "P bad/topic -1 k v", "G %s 1 1 3000 big" % t, "F -1"],
            [("max.block.ms", "3000"), ("max.request.size", "2000")])
        self.assertEqual(errors, {2: "_TIMED_OUT", 3: "INVALID_TOPIC_EXCEPTION",
                                  4: "MESSAGE_TOO_LARGE"})
        self.assertEqual(reports[0][:3], (2, 0, "NONE"))
        self.assertEqual(reports[1][:3], (0, 0, "NONE"))
        self.assertEqual(set(reports), {0, 1})
        log = read_all(self.broker.bootstrap, t, 3)
        self.assertEqual([(k, v) for _, k, v, _, _ in log[2]], [(b"k1", b"v1")])
        self.assertEqual([(k, v) for _, k, v, _, _ in log[0]], [(b"k1", b"v2")])
        # a topic that is not there (auto-creation is off): max.block.ms
        reports, errors, _ = run_producer(self.broker.bootstrap, ["P nosuch-%s -1 k v" % t],
                                          [("max.block.ms", "1000")])
        self.assertEqual(errors, {0: "_TIMED_OUT"})
        self.assertEqual(reports, {})

    def test_records_and_codecs(self):
        """Keys, values, headers (null values too), empty keys and explicit
        timestamps come back byte for byte, with every codec."""
        for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
            with self.subTest(codec=codec):
                t = self.topic("codec-%s" % codec, 2)
                cmds = []
                want = []
                for i in range(120):
                    key = "~" if i % 10 == 0 else "k%d" % i
                    val = "-" if i % 7 == 0 else ("value-%d-" % i) * (1 + i % 5)
                    cmds += ["T %d" % (1700000000000 + i),
                             "P %s %d %s %s h1=a%d h2=- h3=~" % (t, i % 2, key, val, i)]
                    want.append((i % 2, b"" if key == "~" else key.encode(),
                                 None if val == "-" else val.encode(),
                                 [("h1", b"a%d" % i), ("h2", None), ("h3", b"")],
                                 1700000000000 + i))
                reports, errors, other = run_producer(
                    self.broker.bootstrap, cmds + ["F -1"], [("compression.type", codec)])
                self.assertEqual(errors, {})
                self.assertEqual(len(reports), 120, other)
                codec_id = ("none", "gzip", "snappy", "lz4", "zstd").index(codec)
                heads = batch_headers(self.broker.port, t, 2)
                self.assertEqual({h[1] & 7 for l in heads.values() for h in l}, {codec_id})
                log = read_all(self.broker.bootstrap, t, 2)
                at = {(p, r[0]): r[1:] for p, recs in log.items() for r in recs}
                for s, (part, off, err, ts) in reports.items():
                    self.assertEqual(err, "NONE")
                    self.assertEqual(ts, want[s][4])
                    self.assertEqual((part,) + at[(part, off)], want[s])

    def test_split_too_large(self):
        """30 records of ~530 bytes in one batch (batch.size 100000,
        linger.ms 60 s, sent by the flush): ~16 KB, refused by a topic of
        max.message.bytes 2048 with MESSAGE_TOO_LARGE. The producer splits
        it in halves until the broker takes the pieces (Java's
        ProducerBatch.split; Java splits at batch.size, which here would
        resend it whole until delivery.timeout.ms)."""
        n = 30
        for idem in ("true", "false"):
            with self.subTest(idempotence=idem):
                t = self.topic("split-%s" % idem, 1, {"max.message.bytes": "2048"})
                cmds = []
                for i in range(n):
                    val = ("%d:" % i).ljust(500, "abcdefghijklmnopqrstuvwxyz"[i % 26])
                    cmds += ["T %d" % (1700000000000 + i), "P %s 0 k%d %s h=%d" % (t, i, val, i)]
                reports, errors, other = run_producer(
                    self.broker.bootstrap, cmds + ["F -1"],
                    [("batch.size", "100000"), ("linger.ms", "60000"),
                     ("enable.idempotence", idem), ("acks", "all")])
                self.assertEqual(errors, {})
                self.assertEqual(len(reports), n, other)
                self.assertEqual({r[2] for r in reports.values()}, {"NONE"}, reports)
                # in order, once: record i at offset i
                self.assertEqual([reports[i][:2] for i in range(n)], [(0, i) for i in range(n)])
                self.assertEqual([reports[i][3] for i in range(n)],
                                 [1700000000000 + i for i in range(n)])
                log = read_all(self.broker.bootstrap, t, 1)
                self.assertEqual([r[0] for r in log[0]], list(range(n)))
                for i, (off, k, v, hdrs, ts) in enumerate(log[0]):
                    self.assertEqual(k, b"k%d" % i)
                    self.assertTrue(v.startswith(b"%d:" % i) and len(v) == 500, v[:10])
                    self.assertEqual(hdrs, [("h", b"%d" % i)])
                    self.assertEqual(ts, 1700000000000 + i)
                # several batches, each taken whole; with idempotence one
                # producer id and epoch, sequences without a gap from 0
                heads = batch_headers(self.broker.port, t, 1)[0]
                self.assertGreater(len(heads), 7, heads)
                self.assertEqual(sum(h[5] for h in heads), n)
                seqs = [h[4] for h in heads]
                if idem == "true":
                    self.assertEqual(len({(h[2], h[3]) for h in heads}), 1, heads)
                    self.assertGreaterEqual(heads[0][2], 0)
                    want = [sum(h[5] for h in heads[:j]) for j in range(len(heads))]
                    self.assertEqual(seqs, want, heads)
                else:
                    self.assertEqual({h[2] for h in heads}, {-1}, heads)
        # one record above max.message.bytes: its report fails; the small
        # records around it, in the same batch, are written
        for idem in ("true", "false"):
            with self.subTest(one_record=idem):
                t = self.topic("split-one-%s" % idem, 1, {"max.message.bytes": "2048"})
                reports, errors, other = run_producer(
                    self.broker.bootstrap,
                    ["P %s 0 a small-a" % t, "G %s 0 1 3000 big" % t, "P %s 0 b small-b" % t,
                     "F -1"],
                    [("batch.size", "100000"), ("linger.ms", "60000"),
                     ("enable.idempotence", idem)])
                self.assertEqual(errors, {})
                self.assertEqual(set(reports), {0, 1, 2}, other)
                self.assertEqual(reports[1][2], "MESSAGE_TOO_LARGE")
                self.assertEqual((reports[0][2], reports[2][2]), ("NONE", "NONE"))
                log = read_all(self.broker.bootstrap, t, 1)
                self.assertEqual([v for _, _, v, _, _ in log[0]], [b"small-a", b"small-b"])

    def test_acks(self):
        for acks in ("0", "1", "all"):
            with self.subTest(acks=acks):
                t = self.topic("acks-%s" % acks, 3)
                reports, errors, other = run_producer(
                    self.broker.bootstrap, ["G %s -1 200 50 k" % t, "F -1"],
                    [("acks", acks)])
                self.assertEqual(errors, {})
                self.assertEqual(len(reports), 200, other)
                self.assertEqual({r[2] for r in reports.values()}, {"NONE"})
                offsets = {r[1] for r in reports.values()}
                if acks == "0":
                    self.assertEqual(offsets, {-1})   # as Java: no offsets without acks
                log = read_all(self.broker.bootstrap, t, 3, at_least=200)
                self.assertEqual(sum(len(v) for v in log.values()), 200)
                if acks != "0":
                    got = {(p, r[0]) for p, recs in log.items() for r in recs}
                    self.assertEqual(got, {(r[0], r[1]) for r in reports.values()})

    def test_close_flushes(self):
        """Records lingering (linger.ms far away) are sent by close."""
        t = self.topic("close", 1)
        reports, errors, other = run_producer(self.broker.bootstrap,
                                              ["G %s 0 30 10 k" % t],
                                              [("linger.ms", "600000")])
        self.assertEqual(len(reports), 30, other)
        self.assertIn("CLOSED NONE", other)
        self.assertEqual([reports[s][1] for s in range(30)], list(range(30)))


class ProducerCohortd(ProducerTests, unittest.TestCase):
    SUFFIX = "c"

    @classmethod
    def setUpClass(cls):
        cls.broker = harness.Broker(settings={"auto.create.topics.enable": "false"})
        cls.broker.start()

    @classmethod
    def tearDownClass(cls):
        cls.broker.stop()


def start_kafka(cls, settings):
    """Apache Kafka 4.4 as cls.broker (stop_kafka stops it)."""
    cls.broker = start_clean(KafkaRef("4", settings=settings, name=cls.__name__))


def stop_kafka(cls):
    stop_clean(cls.broker)


class ProducerKafka(ProducerTests, unittest.TestCase):
    SUFFIX = "k"

    @classmethod
    def setUpClass(cls):
        start_kafka(cls, {"auto.create.topics.enable": "false"})

    @classmethod
    def tearDownClass(cls):
        stop_kafka(cls)


# records run_faulty produces: enough for every partition's batches to meet
# drops and delays several times (~40 requests)
FAULTY_N = 1500


class FaultTests:
    """Behind fault_proxy.py (the broker advertises the proxy)."""

    def setUp(self):
        if not os.access(PRODUCER, os.X_OK):
            raise SystemExit("FAIL: COHORT_PRODUCER (it_cohort_producer) not built: %r" % PRODUCER)

    def proxied(self):
        return "127.0.0.1:%d" % self.proxy.port

    def check_exactly_once(self, topic, nparts, reports, n):
        """Every record produced is in the log once, in produce order within
        its partition, at the offset its report gave."""
        log = read_all(self.broker.bootstrap, topic, nparts)
        seqs = {p: [int(v.split(b":")[0]) for _, _, v, _, _ in recs] for p, recs in log.items()}
        allseq = sorted(s for l in seqs.values() for s in l)
        return seqs, allseq

    def run_faulty(self, topic, idempotent):
        self.proxy.drop_every, self.proxy.delay_every, self.proxy.delay_s = 7, 5, 2.0
        try:
            settings = [("enable.idempotence", idempotent), ("request.timeout.ms", "1000"),
                        ("linger.ms", "2"), ("batch.size", "4000"),
                        ("retry.backoff.ms", "50")]
            if idempotent == "false":
                settings.append(("acks", "1"))
            return run_producer(self.proxied(), ["G %s -1 %d 100 key" % (topic, FAULTY_N), "F -1"],
                                settings, timeout=600)
        finally:
            self.proxy.drop_every = self.proxy.delay_every = 0

    def test_idempotent_retries(self):
        t = "idem-%s" % self.SUFFIX
        create_topics(self.broker.port, {t: 3})
        before = (self.proxy.dropped, self.proxy.delayed)
        reports, errors, other = self.run_faulty(t, "true")
        self.assertGreater(self.proxy.dropped, before[0])
        self.assertGreater(self.proxy.delayed, before[1])
        self.assertEqual(errors, {})
        self.assertEqual(len(reports), FAULTY_N, other[-20:])
        self.assertEqual({r[2] for r in reports.values()}, {"NONE"})
        seqs, allseq = self.check_exactly_once(t, 3, reports, FAULTY_N)
        self.assertEqual(allseq, list(range(FAULTY_N)))          # once each
        for p, l in seqs.items():
            self.assertEqual(l, sorted(l), "partition %d out of order" % p)
        # reports give the offsets the records have
        for s, (part, off, _, _) in reports.items():
            self.assertEqual(seqs[part][off], s)
        # idempotent batches: one producer id, and within an epoch each
        # partition's sequences follow on (an epoch bump restarts them at 0)
        heads = batch_headers(self.broker.port, t, 3)
        self.assertEqual(len({h[2] for l in heads.values() for h in l}), 1, heads)
        for p, l in heads.items():
            for prev, cur in zip(l, l[1:]):
                if cur[3] == prev[3]:
                    self.assertEqual(cur[4], prev[4] + prev[5], (p, prev, cur))
                else:
                    self.assertGreater(cur[3], prev[3], (p, prev, cur))
                    self.assertEqual(cur[4], 0, (p, prev, cur))

    def test_epoch_bump(self):
        """The broker answers OUT_OF_ORDER_SEQUENCE_NUMBER for the batch it
        expected next (the proxy moved its sequence number: what a broker
        that lost the producer's state sees): the producer bumps its epoch
        as Java's idempotent producer does (KIP-360: locally, same producer
        id), restarts the sequences at 0 and resends; every record once, in
        order."""
        t = "bump-%s" % self.SUFFIX
        create_topics(self.broker.port, {t: 1})
        before = self.proxy.gaps

        def gap():
            self.proxy.gap_next = True

        try:
            reports, errors, other = self.interactive(
                [(lambda: None, ["G %s 0 300 50 k" % t]), (gap, ["G %s 0 300 50 k" % t])],
                [("linger.ms", "2")])
        finally:
            self.proxy.gap_next = False
        self.assertEqual(self.proxy.gaps, before + 1)
        self.assertEqual(errors, {})
        self.assertEqual(len(reports), 600, other)
        self.assertEqual({r[2] for r in reports.values()}, {"NONE"})
        log = read_all(self.broker.bootstrap, t, 1)
        got = [int(v.split(b":")[0]) for _, _, v, _, _ in log[0]]
        self.assertEqual(got, list(range(300)) * 2)
        heads = batch_headers(self.broker.port, t, 1)[0]
        self.assertEqual(len({h[2] for h in heads}), 1, heads)   # one producer id
        epochs = [h[3] for h in heads]
        self.assertEqual(epochs, sorted(epochs))
        self.assertEqual(len(set(epochs)), 2, heads)   # one bump
        first_new = next(h for h in heads if h[3] == epochs[-1])
        self.assertEqual(first_new[4], 0)              # sequences restart at 0

    def interactive(self, rounds, settings=()):
        """Runs the producer through the proxy, one round of commands after
        another: rounds is [(before, commands)], before() called ahead of
        its commands, each round ending at its flush. Returns parse()'s."""
        proc = subprocess.Popen([PRODUCER, self.proxied()] + ["%s=%s" % kv for kv in settings],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                preexec_fn=harness._pdeathsig)
        lines = []
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
        reader.start()
        try:
            for i, (before, commands) in enumerate(rounds):
                before()
                proc.stdin.write("\n".join(commands) + "\nF -1\n")
                proc.stdin.flush()
                wait_line(lines, "FLUSHED", count=i + 1, timeout=120)
            proc.stdin.close()
            proc.wait(timeout=120)
            reader.join(10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
        return parse([l.rstrip("\n") for l in lines])

    def test_leader_moved(self):
        """Produce answered NOT_LEADER_OR_FOLLOWER (the proxy answers three
        requests itself, as a broker that lost the leadership): the producer
        asks for metadata again and resends; every record once, and in each
        partition in the order produced."""
        t = "moved-%s" % self.SUFFIX
        create_topics(self.broker.port, {t: 2})
        seen = {}

        def move():
            seen["md"] = self.proxy.metadata_requests
            seen["sent"] = self.proxy.not_leader_sent
            self.proxy.not_leader_next = 3

        reports, errors, other = self.interactive(
            [(lambda: None, ["G %s -1 100 50 a" % t]), (move, ["G %s -1 200 50 b" % t])],
            [("linger.ms", "2"), ("batch.size", "2000")])
        self.proxy.not_leader_next = 0
        self.assertEqual(self.proxy.not_leader_sent, seen["sent"] + 3)
        self.assertGreater(self.proxy.metadata_requests, seen["md"])
        self.assertEqual(errors, {})
        self.assertEqual(len(reports), 300, other)
        self.assertEqual({r[2] for r in reports.values()}, {"NONE"})
        log = read_all(self.broker.bootstrap, t, 2)
        self.assertEqual(sum(len(l) for l in log.values()), 300)
        for p in range(2):
            offs = [reports[s][1] for s in sorted(reports) if reports[s][0] == p]
            self.assertEqual(offs, list(range(len(log[p]))), "partition %d" % p)

    def test_not_idempotent_duplicates(self):
        """The same faults without idempotence write some records twice:
        what the test above rules out is really provoked."""
        t = "noidem-%s" % self.SUFFIX
        create_topics(self.broker.port, {t: 3})
        reports, errors, other = self.run_faulty(t, "false")
        self.assertEqual(len(reports), FAULTY_N, other[-20:])
        _, allseq = self.check_exactly_once(t, 3, reports, FAULTY_N)
        self.assertEqual(sorted(set(allseq)), list(range(FAULTY_N)))
        self.assertGreater(len(allseq), FAULTY_N)   # duplicates

    def test_back_pressure(self):
        t = "bp-%s" % self.SUFFIX
        create_topics(self.broker.port, {t: 1})
        argv = [PRODUCER, self.proxied(), "buffer.memory=20000", "max.block.ms=0",
                "linger.ms=0", "batch.size=1000"]
        self.addCleanup(lambda: proc.stdout and proc.stdout.close())
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                text=True, preexec_fn=harness._pdeathsig)
        lines = []
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
        reader.start()
        try:
            # with max.block.ms=0 the first record cannot wait for the topic's
            # metadata (Java's TimeoutException); the second finds it
            proc.stdin.write("P %s 0 warm up\n" % t)
            proc.stdin.flush()
            wait_line(lines, "E 0 ")
            time.sleep(1.0)
            proc.stdin.write("P %s 0 warm up\nF -1\n" % t)   # and a connection
            proc.stdin.flush()
            wait_line(lines, "FLUSHED")
            self.proxy.stall()
            proc.stdin.write("G %s 0 500 200 k\n" % t)
            proc.stdin.flush()
            wait_line(lines, "E ", count=2)   # the first refusal of the batch
            time.sleep(0.5)
            self.proxy.release()
            proc.stdin.write("F -1\n")
            proc.stdin.close()
            proc.wait(timeout=120)
            reader.join(10)
        finally:
            self.proxy.release()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        reports, errors, other = parse([l.rstrip("\n") for l in lines])
        self.assertEqual(errors.pop(0), "_TIMED_OUT")
        self.assertEqual(reports[1][2], "NONE")
        self.assertTrue(errors, other)
        self.assertEqual(set(errors.values()), {"_QUEUE_FULL"})
        self.assertEqual(len(reports) + len(errors), 501)
        self.assertEqual({r[2] for r in reports.values()}, {"NONE"})
        log = read_all(self.broker.bootstrap, t, 1)
        self.assertEqual(len(log[0]), len(reports))


PROXY_PORT = free_port()
PROXY_PORT_K = free_port()


class FaultsCohortd(FaultTests, unittest.TestCase):
    SUFFIX = "c"

    @classmethod
    def setUpClass(cls):
        cls.broker = harness.Broker(settings={
            "advertised.listeners": "PLAINTEXT://127.0.0.1:%d" % PROXY_PORT})
        cls.broker.start()
        cls.proxy = FaultProxy(cls.broker.port, PROXY_PORT)

    @classmethod
    def tearDownClass(cls):
        cls.proxy.close()
        cls.broker.stop()


class FaultsKafka(FaultTests, unittest.TestCase):
    SUFFIX = "k"

    @classmethod
    def setUpClass(cls):
        cls.proxy = FaultProxy(0, PROXY_PORT_K)
        try:
            start_kafka(cls, {"advertised.listeners": "PLAINTEXT://127.0.0.1:%d" % PROXY_PORT_K})
        except BaseException:
            cls.proxy.close()
            raise
        cls.proxy.upstream_port = cls.broker.port

    @classmethod
    def tearDownClass(cls):
        cls.proxy.close()
        stop_kafka(cls)


if __name__ == "__main__":
    main(requires_modules=("confluent_kafka",))
