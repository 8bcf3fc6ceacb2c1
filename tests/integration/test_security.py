"""Transport and authentication (issue 14): several listeners with their
own security protocols and advertised addresses. One cohortd for the
module; every listener on a free port."""
import os
import tempfile
import unittest

import kwire
from harness import Broker, cohortd_path, free_port, main, run, start_clean, stop_clean


class Listeners(unittest.TestCase):
    """PLAINTEXT plus a second plaintext listener under its own name (mapped by
    listener.security.protocol.map) that advertises another address: each
    client is told the address of the listener it connected to."""

    @classmethod
    def setUpClass(cls):
        cls.port = free_port()
        cls.internal = free_port()
        cls.broker = start_clean(Broker(port=cls.port, name="Listeners", settings={
            "listeners": "PLAINTEXT://127.0.0.1:%d,INTERNAL://127.0.0.1:%d"
                         % (cls.port, cls.internal),
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
            "advertised.listeners": "INTERNAL://localhost:%d" % cls.internal,
        }))

    @classmethod
    def tearDownClass(cls):
        stop_clean(cls.broker)

    def test_metadata_per_listener(self):
        for port, host in ((self.port, "127.0.0.1"), (self.internal, "localhost")):
            with self.subTest(port=port), kwire.Conn(port) as c:
                md = kwire.metadata(c, version=9, topics=[])
                self.assertEqual([(b["host"], b["port"]) for b in md["brokers"]], [(host, port)])
                fc = kwire.find_coordinator(c, 4, ["g"])
                self.assertEqual((fc[0]["host"], fc[0]["port"]), (host, port))
                dc = kwire.describe_cluster(c)
                self.assertEqual([(b["host"], b["port"]) for b in dc["brokers"]], [(host, port)])


class ListenerConfigErrors(unittest.TestCase):
    """Bad listener settings stop startup (exit 2) naming the key."""

    def test_rejected(self):
        tmp = tempfile.TemporaryDirectory(prefix="cohort-it-sec-")
        self.addCleanup(tmp.cleanup)
        port = free_port()
        base = ["--set", "log.dirs=%s" % os.path.join(tmp.name, "data"), "--set", "admin.listeners="]
        cases = [
            ({"listeners": "PLAINTEXT://127.0.0.1:%d,CLIENT://127.0.0.1:0" % port},
             "No security protocol defined for listener CLIENT"),
            ({"listeners": "PLAINTEXT://127.0.0.1:%d" % port,
              "listener.name.other.ssl.client.auth": "required"}, "listener.name.other"),
            ({"listeners": "PLAINTEXT://127.0.0.1:%d" % port,
              "listener.name.plaintext.ssl.client.auth": "sometimes"},
             "listener.name.plaintext.ssl.client.auth"),
            ({"listeners": "PLAINTEXT://127.0.0.1:%d" % port,
              "advertised.listeners": "SSL://h:1"}, "advertised.listeners"),
        ]
        for settings, msg in cases:
            with self.subTest(settings=settings):
                argv = [cohortd_path()] + base
                for k, v in settings.items():
                    argv += ["--set", "%s=%s" % (k, v)]
                p = run(argv, timeout=30, cwd=tmp.name)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(msg, p.stderr)


if __name__ == "__main__":
    main()
