"""kcat (librdkafka) produces 1,000,000 keyed messages with headers into a
4-partition topic uncompressed, and 1,000,000 compressed, 250,000 with each
codec (gzip, snappy, lz4, zstd; COHORT_IT_N / COHORT_IT_NC change the
counts), with acks=all, and consumes them back: the same multiset of
key/value/header lines, and within each partition offsets 0.. in order
with the producer's order preserved. Also: a consumer started first is
woken by the produce (Fetch long polling), and ListOffsets by time via
kcat -o s@TS."""
import collections
import os
import tempfile
import time

import subprocess

import kwire
from harness import BrokerTestCase, main, run


def run_in(argv, data, timeout=60):
    return subprocess.run(argv, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout)

N = int(os.environ.get("COHORT_IT_N", "1000000"))      # uncompressed
NC = int(os.environ.get("COHORT_IT_NC", "250000"))    # per compression codec
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
PARTS = 4


class KcatData(BrokerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix="cohort-data-kcat-")
        cls.infile = os.path.join(cls.tmp, "in.txt")
        with open(cls.infile, "w") as f:
            for i in range(N):
                f.write("k%d:v%d-%s\n" % (i % 9973, i, "x" * (i % 37)))
        cls.infile_c = os.path.join(cls.tmp, "in-c.txt")
        with open(cls.infile) as f, open(cls.infile_c, "w") as g:
            for i, line in zip(range(NC), f):
                g.write(line)
        with kwire.Conn(cls.broker.port) as c:
            topics = [("data-%s" % codec, PARTS, 1) for codec in CODECS]
            topics.append(("data-poll", 1, 1))
            res = kwire.create_topics(c, topics, 4)
            for t, _, _ in topics:
                assert res["topics"][t]["error_code"] == 0, res

    def kcat(self, *args, timeout=180):
        p = run(["kcat", "-b", self.broker.bootstrap, "-q"] + list(args), timeout=timeout)
        self.assertEqual(p.returncode, 0, "kcat %s failed:\n%s" % (args, p.stderr[-2000:]))
        return p.stdout

    def roundtrip(self, codec):
        topic = "data-%s" % codec
        infile, n = (self.infile, N) if codec == "none" else (self.infile_c, NC)
        self.kcat("-P", "-t", topic, "-K:", "-H", "hk=hv", "-X", "acks=all",
                  "-X", "compression.codec=%s" % codec, "-X", "linger.ms=20",
                  "-X", "batch.num.messages=10000", "-l", infile)
        out = self.kcat("-C", "-t", topic, "-o", "beginning", "-e",
                        "-f", "%p %o %k:%s %h\n")
        lines = out.splitlines()
        self.assertEqual(len(lines), n, codec)
        got = []
        last = collections.defaultdict(lambda: -1)
        last_seq = {}
        for ln in lines:
            p, o, kv, h = ln.split(" ")
            p, o = int(p), int(o)
            self.assertEqual(o, last[p] + 1, "partition %d offsets not contiguous" % p)
            last[p] = o
            self.assertEqual(h, "hk=hv")
            got.append(kv)
            # per key, values keep the producer's order
            k, v = kv.split(":", 1)
            seq = int(v[1:].split("-")[0])
            self.assertGreater(seq, last_seq.get(k, -1))
            last_seq[k] = seq
        with open(infile) as f:
            want = f.read().splitlines()
        self.assertEqual(sorted(got), sorted(want), codec)
        self.assertEqual(len(last), PARTS, "all partitions used")
        self.broker.assert_alive()

    def test_none(self):
        self.roundtrip("none")

    def test_gzip(self):
        self.roundtrip("gzip")

    def test_snappy(self):
        self.roundtrip("snappy")

    def test_lz4(self):
        self.roundtrip("lz4")

    def test_zstd(self):
        self.roundtrip("zstd")

    def test_long_poll_and_timestamp(self):
        cons = subprocess.Popen(["kcat", "-b", self.broker.bootstrap, "-q", "-C", "-t",
                                 "data-poll", "-o", "beginning", "-c", "3", "-f", "%s\n"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)  # the consumer is parked in a Fetch now
        t0 = time.time()
        p = run_in(["kcat", "-b", self.broker.bootstrap, "-q", "-P", "-t", "data-poll"],
                   "a\nb\nc\n")
        self.assertEqual(p.returncode, 0, p.stderr)
        out, err = cons.communicate(timeout=60)
        self.assertEqual(out.splitlines(), ["a", "b", "c"], err)
        self.assertLess(time.time() - t0, 20)
        # by timestamp: everything produced after ts
        time.sleep(0.05)
        ts = int(time.time() * 1000)
        time.sleep(0.05)
        p = run_in(["kcat", "-b", self.broker.bootstrap, "-q", "-P", "-t", "data-poll"],
                   "d\ne\n")
        out = self.kcat("-C", "-t", "data-poll", "-o", "s@%d" % ts, "-e", "-f", "%s\n")
        self.assertEqual(out.splitlines(), ["d", "e"])
        out = self.kcat("-C", "-t", "data-poll", "-o", "-2", "-e", "-f", "%s\n")
        self.assertEqual(out.splitlines(), ["d", "e"])  # the last two


if __name__ == "__main__":
    main(requires_tools=("kcat",))
