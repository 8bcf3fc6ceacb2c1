#!/usr/bin/env python3
"""The reference Apache Kafka brokers (kafka_ref.py, tools/kafka-ref.sh) start,
serve on 127.0.0.1 only, run Kafka's tools and stop: what the differential and
client tests build on. Also pins what each release advertises for the request
versions KIP-896 removed in 4.0, the reason 3.9 is installed at all."""
import subprocess
import unittest

import harness
import kwire
from kafka_ref import KafkaRef, SCRIPT

API_FETCH, API_LIST_OFFSETS, API_OFFSET_COMMIT, API_OFFSET_FETCH = 1, 2, 8, 9


class KafkaRefTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.k4 = KafkaRef("4")
        cls.k39 = KafkaRef("3.9")
        for k in (cls.k4, cls.k39):
            try:
                k.start()
            except BaseException:
                cls.k4.cleanup()
                cls.k39.cleanup()
                raise

    @classmethod
    def tearDownClass(cls):
        for k in (cls.k4, cls.k39):
            k.stop()

    def api_versions(self, k):
        with kwire.Conn(k.port) as c:
            av = kwire.api_versions(c, 3)
        self.assertEqual(av["error_code"], 0)
        return av["api_keys"]

    def test_kip896_versions(self):
        # What 4.4 advertises as its lowest versions (docs/NOTES.md: it still
        # advertises Produce and JoinGroup from v0), and 3.9 everything from v0.
        v4 = self.api_versions(self.k4)
        self.assertEqual(v4[API_FETCH][0], 4)
        self.assertEqual(v4[API_LIST_OFFSETS][0], 1)
        self.assertEqual(v4[API_OFFSET_COMMIT][0], 2)
        self.assertEqual(v4[API_OFFSET_FETCH][0], 1)
        v39 = self.api_versions(self.k39)
        for api in (API_FETCH, API_LIST_OFFSETS, API_OFFSET_COMMIT, API_OFFSET_FETCH):
            self.assertEqual(v39[api][0], 0, "3.9 serves api %d from v0" % api)

    def test_metadata_one_local_broker(self):
        for k in (self.k4, self.k39):
            with kwire.Conn(k.port) as c:
                md = kwire.metadata(c, 1)
            self.assertEqual([(b["node_id"], b["host"], b["port"]) for b in md["brokers"]],
                             [(1, "127.0.0.1", k.port)])

    def test_only_loopback_listeners(self):
        # Every socket the JVM listens on is bound to 127.0.0.1.
        for k in (self.k4, self.k39):
            out = subprocess.run(["ss", "-Hltnp"], stdout=subprocess.PIPE, text=True).stdout
            mine = [l for l in out.splitlines() if "pid=%d," % k.proc.pid in l]
            self.assertEqual(len(mine), 2, out)   # broker and controller listeners
            for l in mine:
                local = l.split()[3]
                self.assertTrue(local.startswith(("127.0.0.1:", "[::ffff:127.0.0.1]:")), l)

    def test_tools(self):
        for k in (self.k4, self.k39):
            p = k.tool("kafka-topics", "--bootstrap-server", k.bootstrap, "--create",
                       "--topic", "ref-t", "--partitions", "3")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.strip(), "Created topic ref-t.")
            p = k.tool("kafka-topics", "--bootstrap-server", k.bootstrap, "--list")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("ref-t", p.stdout.split())

    def test_script_usage(self):
        p = subprocess.run([SCRIPT, "start", "5"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("unknown version '5'", p.stderr)


if __name__ == "__main__":
    harness.main()
