"""The cohort CLI against Apache Kafka 4.4, compared with Kafka's own
kafka-consumer-groups at the same moment: describe (offsets and members
views), list by state, and reset-offsets dry runs give the same rows and
values. Where cohort's lag rule differs on purpose (a commit below the log
start) it is not exercised here; test_cli.py covers it against cohortd.
"""
import json
import os
import signal
import subprocess
import time
import unittest

import kwire
from harness import main
from kafka_ref import KafkaRef
from test_data_idempotent import batch, produce

CLI = os.environ.get("COHORT_CLI", "")
TOPIC = "kt"


def rows_of(text, first):
    """The table rows (split on blanks) whose first cell is `first`."""
    return [line.split() for line in text.splitlines() if line.split()[:1] == [first]]


class CliVersusKafkaTool(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(CLI, os.X_OK):
            raise RuntimeError("COHORT_CLI is not an executable: %r" % CLI)
        cls.kafka = KafkaRef("4", settings={"group.initial.rebalance.delay.ms": "0"})
        cls.kafka.start()
        cls.bs = cls.kafka.bootstrap
        r = cls.cli("topics", "create", TOPIC, "--partitions", "3")
        assert r.returncode == 0, r.stderr
        deadline = time.monotonic() + 60
        with kwire.Conn(cls.kafka.port) as c:
            for p in range(3):
                while True:  # Kafka serves a new topic's leaders a moment later
                    err, _ = produce(c, TOPIC, p, batch(-1, -1, -1, [b"v"] * (10 + p)))
                    if err == 0 or time.monotonic() > deadline:
                        break
                    time.sleep(0.2)
                assert err == 0, err

    @classmethod
    def tearDownClass(cls):
        cls.kafka.stop()
        cls.kafka.cleanup()

    @classmethod
    def cli(cls, *args):
        return subprocess.run([CLI] + list(args) + ["--bootstrap-server", cls.bs],
                              capture_output=True, text=True, timeout=120)

    def tool(self, *args):
        r = self.kafka.tool("kafka-consumer-groups", "--bootstrap-server", self.bs, *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def same_state_views(self, g, views=([], ["--verbose"])):
        """--state (and --state --verbose): Kafka's headers, rows and note."""
        for verbose in views:
            ours = self.cli("groups", "describe", g, "--state", *verbose)
            theirs = self.kafka.tool("kafka-consumer-groups", "--bootstrap-server", self.bs,
                                     "--describe", "--group", g, "--state", *verbose)
            self.assertEqual(theirs.returncode, 0, theirs.stderr)
            for first in ("GROUP", g):
                self.assertEqual(rows_of(ours.stdout, first), rows_of(theirs.stdout, first),
                                 (verbose, ours.stdout, theirs.stdout))
            self.assertEqual("has no active members" in ours.stderr,
                             "has no active members" in theirs.stderr, verbose)

    def test_describe_in_the_middle_of_a_rebalance_matches_kafkas_tool(self):
        """A librdkafka group held in PreparingRebalance by a member that has
        not rejoined (test_cli_json.held_rebalance): the offsets, members and
        state views print what kafka-consumer-groups prints at that moment,
        rows and the "is rebalancing" warning."""
        from test_cli_json import held_rebalance
        g = "k-held"

        def state():
            r = self.cli("groups", "describe", g, "--state", "--json")
            return r.returncode == 0 and json.loads(r.stdout)["state"]
        with held_rebalance(self.bs, g, TOPIC, state) as release:
            for view in ([], ["--members"], ["--state"]):
                ours = self.cli("groups", "describe", g, *view)
                self.assertEqual(ours.returncode, 0, ours.stderr)
                theirs = self.kafka.tool("kafka-consumer-groups", "--bootstrap-server",
                                         self.bs, "--describe", "--group", g, *view)
                self.assertEqual(theirs.returncode, 0, theirs.stderr)
                for first in ("GROUP", g):
                    self.assertEqual(sorted(rows_of(ours.stdout, first)),
                                     sorted(rows_of(theirs.stdout, first)),
                                     (view, ours.stdout, theirs.stdout))
                warned = "Consumer group '%s' is rebalancing" % g
                self.assertEqual(warned in ours.stderr, warned in theirs.stdout + theirs.stderr,
                                 (view, ours.stderr, theirs.stdout, theirs.stderr))
                self.assertIn(warned, ours.stderr)
            self.assertEqual(state(), "PreparingRebalance")
            release()

    def test_rebalances_says_kafka_is_not_cohortd(self):
        """groups rebalances reads cohortd's admin API: Kafka's broker has no
        admin.listeners, and the command says so with its own status."""
        r = self.cli("groups", "rebalances", "kg")
        self.assertEqual(r.returncode, 8, (r.stdout, r.stderr))
        self.assertIn("is not cohortd", r.stderr)
        self.assertEqual(r.stdout, "")
        r = self.cli("groups", "simulate", "kg")
        self.assertEqual(r.returncode, 8, (r.stdout, r.stderr))
        self.assertIn("is not cohortd", r.stderr)

    def test_describe_list_and_reset_match_kafkas_tool(self):
        g = "kg"
        r = self.cli("consume", TOPIC, "--group", g, "--from", "earliest", "--count", "13")
        self.assertEqual(r.returncode, 0, r.stderr)
        # offsets view of an Empty group: same rows, same values
        ours = rows_of(self.cli("groups", "describe", g).stdout, g)
        theirs = rows_of(self.tool("--describe", "--group", g), g)
        self.assertEqual(sorted(ours), sorted(theirs))
        self.assertEqual(sum(int(x[3]) for x in ours), 13)  # the records printed
        self.assertTrue(all(int(x[5]) == int(x[4]) - int(x[3]) for x in ours), ours)
        self.same_state_views(g)
        # reset dry runs: the offsets Kafka's tool would set
        for args in (["--all-topics", "--shift-by", "-2"],
                     ["--topic", TOPIC, "--to-earliest"],
                     ["--topic", TOPIC + ":1", "--to-offset", "1000"],
                     ["--all-topics", "--to-current"]):
            ours = rows_of(self.cli("groups", "reset-offsets", g, *args).stdout, g)
            theirs = rows_of(self.tool("--reset-offsets", "--group", g, "--dry-run", *args), g)
            self.assertEqual(sorted(ours), sorted(theirs), args)
        # a live member: owners and the members view agree
        p = subprocess.Popen([CLI, "consume", TOPIC, "--group", g, "--from", "earliest",
                              "--property", "group.instance.id=inst-a",
                              "--bootstrap-server", self.bs],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 90
            ours = []
            while time.monotonic() < deadline:
                ours = rows_of(self.cli("groups", "describe", g).stdout, g)
                if len(ours) == 3 and all(x[6] != "-" and x[5] == "0" for x in ours):
                    break
                time.sleep(0.5)
            theirs = rows_of(self.tool("--describe", "--group", g), g)
            self.assertEqual(sorted(ours), sorted(theirs))
            ours = rows_of(self.cli("groups", "describe", g, "--members").stdout, g)
            theirs = rows_of(self.tool("--describe", "--group", g, "--members"), g)
            self.assertEqual(ours, theirs)
            ours = self.cli("groups", "describe", g, "--members", "--verbose").stdout
            theirs = self.tool("--describe", "--group", g, "--members", "--verbose")
            self.assertEqual(rows_of(ours, "GROUP"), rows_of(theirs, "GROUP"))
            self.assertEqual(rows_of(ours, g), rows_of(theirs, g))
            self.same_state_views(g, [["--verbose"]])
            ours = rows_of(self.cli("groups", "list", "--state", "Stable").stdout, g)
            theirs = rows_of(self.tool("--list", "--state", "Stable", "--type"), g)
            self.assertEqual([x[:3] for x in ours], [x[:3] for x in theirs])
            self.assertEqual(ours[0][1], "Classic")
        finally:
            p.send_signal(signal.SIGTERM)
            p.communicate(timeout=30)


if __name__ == "__main__":
    main()
