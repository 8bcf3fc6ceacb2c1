"""Configuration: an unknown key or a bad value stops startup with a non-zero
exit and a message naming the key; -c FILE works and --set overrides it;
SIGINT stops cleanly like SIGTERM."""
import os
import signal
import subprocess
import tempfile
import unittest

import kwire
from harness import Broker, BrokerTestCase, cohortd_path, free_port, main, run, can_connect


class ConfigErrors(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="cohort-it-cfg-")
        self.addCleanup(self.tmp.cleanup)
        self.port = free_port()

    def base_args(self):
        return ["--set", "listeners=PLAINTEXT://127.0.0.1:%d" % self.port,
                "--set", "log.dirs=%s" % os.path.join(self.tmp.name, "data")]

    def assert_rejected(self, args, key):
        try:
            p = run([cohortd_path()] + args, timeout=30, cwd=self.tmp.name)
        except subprocess.TimeoutExpired:
            self.fail("cohortd %s did not exit within 30s (it should refuse to start)"
                      % " ".join(args))
        self.assertNotEqual(p.returncode, 0,
                            "cohortd %s exited 0; stderr:\n%s" % (" ".join(args), p.stderr))
        self.assertGreater(p.returncode, 0, "killed by a signal? stderr:\n%s" % p.stderr)
        self.assertIn(key, p.stderr, "stderr does not name the key %r:\n%s" % (key, p.stderr))
        self.assertNotIn("AddressSanitizer", p.stderr)
        self.assertNotIn("runtime error:", p.stderr)
        self.assertFalse(can_connect(self.port), "it listened anyway")
        return p

    def test_error_exits_free_everything(self):
        """Every error exit leaves through one unwind path: LeakSanitizer (on
        by default in the ASan build) reports nothing, whether cohortd stops
        at its arguments, its configuration, a key store or after the data
        directory is open (a bad --add-scram). A leak report ends in
        "SUMMARY: AddressSanitizer", which assert_rejected refuses."""
        def plain_listener(protocol):
            return ["--set", "listeners=%s://127.0.0.1:%d" % (protocol, self.port),
                    "--set", "log.dirs=%s" % os.path.join(self.tmp.name, "data"),
                    "--set", "sasl.enabled.mechanisms=PLAIN",
                    "--set", "listener.name.%s.plain.sasl.jaas.config="
                    "org.apache.kafka.common.security.plain.PlainLoginModule required "
                    'user_a="b";' % protocol.lower()]
        cases = [(["-c"], "-c"), (["--set"], "--set"), (["--add-scram"], "--add-scram"),
                 (["-S", "x=y", "--bogus"], "--bogus"),
                 (["--set", "no.such=1", "--set", "b=c"], "no.such"),
                 (plain_listener("SASL_SSL") + ["--set", "ssl.keystore.type=PEM",
                                                "--set", "ssl.keystore.location=/nonexistent"],
                  "ssl.keystore"),
                 (plain_listener("SASL_PLAINTEXT") + ["--add-scram", "bogus"], "--add-scram"),
                 (self.base_args() + ["--add-scram", "SCRAM-SHA-256=[name=u]"], "--add-scram")]
        for args, key in cases:
            with self.subTest(args=args):
                p = self.assert_rejected(args, key)
                self.assertEqual(p.returncode, 2, p.stderr)

    def test_unknown_key(self):
        self.assert_rejected(self.base_args() + ["--set", "no.such.setting=1"], "no.such.setting")

    def test_bad_values(self):
        cases = [("num.partitions", "abc"), ("num.partitions", "0"), ("num.partitions", "-3"),
                 ("num.partitions", "12abc"), ("auto.create.topics.enable", "maybe"),
                 ("node.id", "x"), ("socket.request.max.bytes", "-1"),
                 ("connections.max.idle.ms", "soon"), ("listeners", "not-a-listener"),
                 ("listeners", "PLAINTEXT://127.0.0.1:99999"), ("log.level", "loudest"),
                 ("admin.listeners", "ftp://127.0.0.1:9644"),
                 ("admin.listeners", "https://127.0.0.1:9644"),
                 ("admin.listeners", "http://127.0.0.1:99999"),
                 ("admin.listeners", "http://127.0.0.1"),
                 ("admin.listeners", "http://127.0.0.1:1,http://127.0.0.1:2")]
        for key, value in cases:
            with self.subTest(key=key, value=value):
                args = self.base_args() + ["--set", "%s=%s" % (key, value)]
                self.assert_rejected(args, key)

    def test_contradicting_keys(self):
        """Settings that parse but cannot work (together, or on one broker)
        stop startup with exit code 2 and a message naming every key."""
        cases = [
            ({"group.min.session.timeout.ms": "60000", "group.max.session.timeout.ms": "30000"},
             ["group.min.session.timeout.ms", "group.max.session.timeout.ms"]),
            ({"default.replication.factor": "3"}, ["default.replication.factor"]),
            ({"offsets.topic.replication.factor": "3"}, ["offsets.topic.replication.factor"]),
            ({"log.retention.minutes": "0"}, ["log.retention.minutes"]),
            ({"log.cleaner.dedupe.buffer.size": "2097152", "log.cleaner.threads": "2"},
             ["log.cleaner.dedupe.buffer.size", "log.cleaner.threads"]),
            ({"log.cleaner.min.compaction.lag.ms": "100", "log.cleaner.max.compaction.lag.ms": "10"},
             ["log.cleaner.min.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms"]),
        ]
        for settings, keys in cases:
            with self.subTest(settings=settings):
                args = self.base_args()
                for k, v in settings.items():
                    args += ["--set", "%s=%s" % (k, v)]
                p = self.assert_rejected(args, keys[0])
                self.assertEqual(p.returncode, 2, p.stderr)
                for k in keys:
                    self.assertIn(k, p.stderr)
                last = p.stderr.strip().splitlines()[-1]
                self.assertTrue(last.startswith("cohortd: configuration error:"), last)

    def test_unresolvable_listener_host(self):
        """The last line gives the resolver's cause, not a stale errno."""
        p = self.assert_rejected(["--set", "listeners=PLAINTEXT://no-such-host.invalid:%d" % self.port,
                                  "--set", "log.dirs=%s" % os.path.join(self.tmp.name, "data")],
                                 "no-such-host.invalid")
        lines = p.stderr.strip().splitlines()
        error_lines = [l for l in lines if "ERROR" in l and "cannot listen" in l]
        self.assertTrue(error_lines, p.stderr)
        cause = error_lines[-1].rsplit(": ", 1)[1]
        self.assertTrue(lines[-1].startswith("cohortd: cannot listen on no-such-host.invalid"), lines[-1])
        self.assertTrue(lines[-1].endswith(": " + cause),
                        "last line %r does not give the logged cause %r" % (lines[-1], cause))
        self.assertNotIn("No such file or directory", lines[-1])

    def test_set_without_equals(self):
        p = run([cohortd_path()] + self.base_args() + ["--set", "num.partitions"], timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("num.partitions", p.stderr)

    def test_unknown_key_in_file(self):
        path = os.path.join(self.tmp.name, "server.properties")
        with open(path, "w") as f:
            f.write("# comment\nnum.partitions=2\nbogus.key.in.file=yes\n")
        self.assert_rejected(["-c", path] + self.base_args(), "bogus.key.in.file")

    def test_bad_value_in_file(self):
        path = os.path.join(self.tmp.name, "server.properties")
        with open(path, "w") as f:
            f.write("auto.create.topics.enable=perhaps\n")
        self.assert_rejected(["-c", path] + self.base_args(), "auto.create.topics.enable")

    def test_missing_config_file(self):
        p = run([cohortd_path(), "-c", os.path.join(self.tmp.name, "nope.properties")]
                + self.base_args(), timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("nope.properties", p.stderr)

    def test_log_dirs_is_a_file(self):
        path = os.path.join(self.tmp.name, "not-a-dir")
        with open(path, "w") as f:
            f.write("x")
        args = ["--set", "listeners=PLAINTEXT://127.0.0.1:%d" % self.port,
                "--set", "log.dirs=%s" % path]
        try:
            p = run([cohortd_path()] + args, timeout=30)
        except subprocess.TimeoutExpired:
            self.fail("cohortd started with log.dirs pointing at a regular file")
        self.assertGreater(p.returncode, 0, p.stderr)
        self.assertIn("not-a-dir", p.stderr)


class ConfigFile(unittest.TestCase):
    def test_file_and_overrides(self):
        tmp = tempfile.TemporaryDirectory(prefix="cohort-it-cfg-")
        self.addCleanup(tmp.cleanup)
        port = free_port()
        path = os.path.join(tmp.name, "server.properties")
        with open(path, "w") as f:
            f.write("# a server.properties file\n"
                    "listeners=PLAINTEXT://127.0.0.1:%d\n"
                    "log.dirs=%s\n"
                    "node.id=5\n"
                    "num.partitions=2\n"
                    "auto.create.topics.enable=true\n"
                    "admin.listeners=\n" % (port, os.path.join(tmp.name, "data")))
        # listeners and log.dirs come from the file only; --set num.partitions wins
        b = Broker(port=port, data_dir=os.path.join(tmp.name, "data"), config_file=path,
                   settings={"num.partitions": "4"}, name="cfgfile", defaults=False)
        self.addCleanup(b.cleanup)
        b.start()
        with kwire.Conn(port) as c:
            md = kwire.metadata(c, 4, ["cfg-auto"], allow_auto=True)
            md = kwire.metadata(c, 4, ["cfg-auto"], allow_auto=False)
            self.assertEqual(md["brokers"][0]["node_id"], 5, "node.id from the file")
            self.assertEqual(len(md["topics"]["cfg-auto"]["partitions"]), 4,
                             "--set num.partitions=4 should override the file's 2")
        b.stop()

    def test_default_data_dir_is_dot_data(self):
        b = Broker(name="default-dir", defaults=False)
        self.addCleanup(b.cleanup)
        b.settings = {"listeners": "PLAINTEXT://127.0.0.1:%d" % b.port, "admin.listeners": ""}
        b.start()  # cwd is b.workdir
        with kwire.Conn(b.port) as c:
            self.assertEqual(kwire.create_topics(c, [("dflt", 1, 1)])["topics"]["dflt"]["error_code"], 0)
        b.stop()
        data = os.path.join(b.workdir, "data")
        self.assertTrue(os.path.isdir(data) and os.listdir(data),
                        "no ./data written in the working directory")

    def test_sigint_is_a_clean_stop(self):
        b = Broker(name="sigint")
        self.addCleanup(b.cleanup)
        b.start()
        b.assert_alive()
        b.stop(sig=signal.SIGINT)


if __name__ == "__main__":
    main()
