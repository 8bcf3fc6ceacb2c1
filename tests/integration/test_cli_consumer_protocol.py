"""The cohort CLI on a consumer-protocol group (KIP-848), against cohortd
and Apache Kafka 4.4 in one run: two confluent-kafka 2.x members
(group.protocol=consumer, one static) consume the same topics on each
broker, and on each one

- `cohort groups describe` (offsets, --members [--verbose], --state
  [--verbose]) prints what Kafka 4.4's kafka-consumer-groups prints for the
  same group at the same moment: headers, rows, KIP-1099's epochs and
  current/target assignments;
- `cohort groups list --type` and Kafka's `--list --type --state` agree on
  type and state, and the type filter keeps only consumer groups;
- --json carries the same epochs and assignments;

and the same group described on the two brokers is the same (member ids,
hosts and the coordinator aside): cohortd's consumer groups look as
Kafka's do through ConsumerGroupDescribe.
"""
import json
import os
import subprocess
import time
import unittest

from client_scenarios import VENV_PYTHON, HERE, member_flags, wait_cover
from harness import Broker, main, start_clean, stop_clean
from java_clients import KafkaTools, check_installed
from kafka_ref import KafkaRef
from test_consumer_protocol import CONSUMER_SETTINGS
from test_group_helpers import MemberProcess, all_parts, create_topics, produce

CLI = os.environ.get("COHORT_CLI", "")
MEMBER = os.path.join(HERE, "py_member.py")
GROUP = "cli-cp"
TOPICS = {"cpa": 3, "cpb": 1}


def table(text, first):
    """The rows (split on blanks) of text whose first cell is `first`."""
    return [line.split() for line in text.splitlines() if line.split()[:1] == [first]]


class CliConsumerProtocol(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(CLI, os.X_OK):
            raise RuntimeError("COHORT_CLI is not an executable: %r" % CLI)
        check_installed()
        cls.brokers, cls.tools = {}, None
        try:
            cls.tools = KafkaTools()  # Kafka's tools in one JVM (a start per run costs 1-10 s)
            cls.brokers["cohortd"] = start_clean(Broker(settings=dict(CONSUMER_SETTINGS)))
            cls.brokers["kafka"] = start_clean(KafkaRef("4", settings=dict(CONSUMER_SETTINGS),
                                                        name=cls.__name__))
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.tools:
            cls.tools.close()
        for b in cls.brokers.values():
            stop_clean(b)

    def cli(self, broker, *args):
        r = subprocess.run([CLI] + list(args) + ["--bootstrap-server", broker.bootstrap],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, (args, r.stdout, r.stderr))
        return r

    def tool(self, broker, *args):
        r = self.tools.run("kafka-consumer-groups", "--bootstrap-server", broker.bootstrap,
                           *args)
        self.assertEqual(r.returncode, 0, (args, r.stdout, r.stderr))
        return r

    def members(self, broker):
        """Two consumer-protocol members of GROUP on broker, the second one
        joining once the first owns everything (the same epochs on both
        brokers), both owning their part of TOPICS."""
        parts = all_parts(TOPICS)
        ms = []
        for name, instance in (("cpm-a", "inst-a"), ("cpm-b", None)):
            argv = [VENV_PYTHON, MEMBER, "--client", "confluent", "--protocol", "consumer"] + \
                member_flags(broker.bootstrap, GROUP, list(TOPICS), name, "range", instance,
                             3000, True, 1, 0)
            m = MemberProcess(argv, name)
            self.addCleanup(m.cleanup)
            ms.append(m)
            wait_cover(ms, parts, each_owns=True)
        return ms

    def settled(self, broker):
        """The state and members views (--json) once the group is Stable,
        every member owns its target and has committed every record (the
        views then stay as they are); fails after a deadline."""
        deadline = time.monotonic() + 60
        while True:
            st = json.loads(self.cli(broker, "groups", "describe", GROUP, "--state", "--verbose",
                                     "--json").stdout)
            ms = json.loads(self.cli(broker, "groups", "describe", GROUP, "--members",
                                     "--json").stdout)
            offs = json.loads(self.cli(broker, "groups", "describe", GROUP, "--json").stdout)
            if st["state"] == "Stable" and len(ms) == 2 and all(
                    m["assignment"] == m["target_assignment"] and
                    m["current_epoch"] == st["target_assignment_epoch"] for m in ms) and all(
                    p["lag"] == 0 for p in offs["partitions"]) and \
                    len(offs["partitions"]) == sum(TOPICS.values()):
                return st, ms
            self.assertLess(time.monotonic(), deadline, (st, ms))
            time.sleep(0.2)

    def same_as_tool(self, broker, view, group=GROUP):
        """One view printed by cohort and by Kafka's tool: the same header
        and rows (sorted: both print members in the broker's order)."""
        ours = self.cli(broker, "groups", "describe", group, *view).stdout
        theirs = self.tool(broker, "--describe", "--group", group, *view).stdout
        self.assertTrue(table(theirs, "GROUP"), theirs)
        self.assertEqual(table(ours, "GROUP") + sorted(table(ours, group)),
                         table(theirs, "GROUP") + sorted(table(theirs, group)),
                         (view, ours, theirs))
        return ours

    def describe_both_ways(self, name):
        """Every view on one broker, cohort against Kafka's tool; returns
        the views as cohort prints them, ids and hosts replaced."""
        broker = self.brokers[name]
        create_topics(broker.port, TOPICS)
        for t, n in TOPICS.items():
            produce(broker.bootstrap, t, n, 5)
        ms = self.members(broker)
        st, jm = self.settled(broker)
        self.assertEqual(st["assignment_strategy"], "range")
        self.assertEqual(st["members"], 2)
        self.assertGreaterEqual(st["group_epoch"], st["target_assignment_epoch"])
        self.assertEqual(sorted(m["group_instance_id"] or "-" for m in jm), ["-", "inst-a"])
        # range over cpa (3) and cpb (1): 3 partitions for the member whose
        # id sorts first, 1 for the other (member ids are random)
        self.assertEqual(sorted(m["partitions"] for m in jm), [1, 3], jm)
        views = {}
        for view in ((), ("--members", "--verbose"), ("--state", "--verbose")):
            views[view] = self.same_as_tool(broker, view)
        # the list: Kafka's --list --type --state columns are cohort's first three
        ours = table(self.cli(broker, "groups", "list", "--type", "consumer").stdout, GROUP)
        theirs = table(self.tool(broker, "--list", "--type", "--state").stdout, GROUP)
        self.assertEqual([r[:3] for r in ours], theirs)
        self.assertEqual(ours[0][1:3], ["Consumer", "Stable"])
        self.assertEqual(table(self.cli(broker, "groups", "list", "--type", "classic").stdout,
                               GROUP), [])
        listed = json.loads(self.cli(broker, "groups", "list", "--json").stdout)
        self.assertIn({"group": GROUP, "type": "consumer", "state": "Stable",
                       "protocol_type": "consumer", "protocol": "range", "members": 2}, listed)
        for m in ms:
            self.assertEqual(m.close(), 0)
        # ids, hosts, the coordinator and which member got what differ
        # between brokers: those are masked, the assignments compared as a
        # set. So are the epochs, each checked against its own group's
        # (settled): both brokers start a group at epoch 1 (Kafka 4.3+'s
        # KAFKA-20268, cohortd since 2026-12-02), but this test does not
        # compare them across brokers.
        mask = {m["consumer_id"]: "ID" for m in jm}
        self.assertEqual(st["group_epoch"], st["target_assignment_epoch"])
        epoch = str(st["group_epoch"])
        # the epoch cells, counted from the end (a blank GROUP-INSTANCE-ID
        # is no cell once split)
        epoch_cells = {("--members", "--verbose"): (-4, -2), ("--state", "--verbose"): (-3, -2)}
        mask.update({m["host"]: "HOST" for m in jm})
        mask.update({m["assignment"]: "ASSIGNMENT" for m in jm})
        out = {"assignments": sorted(m["assignment"] for m in jm)}
        for view, text in views.items():
            rows = [[mask.get(c, c) for c in r] for r in table(text, "GROUP") +
                    sorted(table(text, GROUP))]
            if view[:1] == ("--state",):  # COORDINATOR (ID): host:port and id
                rows = [r[:1] + r[3:] if r[0] != "GROUP" else r for r in rows]
            for r in rows[1:]:
                for i in epoch_cells.get(view, ()):
                    self.assertEqual(r[i], epoch, (view, r))
                    r[i] = "EPOCH"

            out[view] = sorted(rows)
        return out

    def mixed_group(self, name):
        """A consumer group with a consumer-protocol member and a classic
        one (KIP-848's migration) on one broker: --members --verbose has
        Kafka 4.4's UPGRADED column (true / false), as Kafka's tool prints it;
        without --verbose, and in a group of one kind, it has none. Returns
        the members view's header and its UPGRADED cells, sorted."""
        broker, group, topic = self.brokers[name], "cli-mixed", "cpmix"
        create_topics(broker.port, {topic: 4})
        parts = all_parts({topic: 4})
        ms = []
        for mname, protocol, assignor in (("mix-c", "consumer", "range"),
                                          ("mix-k", "classic", "cooperative-sticky")):
            argv = [VENV_PYTHON, MEMBER, "--client", "confluent", "--protocol", protocol] + \
                member_flags(broker.bootstrap, group, [topic], mname, assignor, None, 3000,
                             True, 1, 0)
            m = MemberProcess(argv, mname)
            self.addCleanup(m.cleanup)
            ms.append(m)
            wait_cover(ms, parts, each_owns=True)
            if len(ms) == 1:  # one kind: no UPGRADED
                one = self.same_as_tool(broker, ("--members", "--verbose"), group)
                self.assertNotIn("UPGRADED", one)
        # the classic member's share moves in a rebalance of its own: wait
        # until the coordinator's view is settled (each owns its target)
        deadline = time.monotonic() + 60
        while True:
            jm = json.loads(self.cli(broker, "groups", "describe", group, "--members",
                                     "--json").stdout)
            if len(jm) == 2 and all(m["assignment"] == m["target_assignment"] != "-"
                                    for m in jm):
                break
            self.assertLess(time.monotonic(), deadline, jm)
            time.sleep(0.2)
        self.assertEqual(sorted((m["client_id"], m["upgraded"]) for m in jm),
                         [("mix-c", True), ("mix-k", False)], jm)
        ours = self.same_as_tool(broker, ("--members", "--verbose"), group)
        plain = self.same_as_tool(broker, ("--members",), group)
        self.assertNotIn("UPGRADED", plain)
        for m in ms:
            self.assertEqual(m.close(), 0)
        rows = table(ours, "GROUP") + table(ours, group)
        col = rows[0].index("UPGRADED")
        self.assertEqual(col, len(rows[0]) - 1, rows[0])
        return rows[0], sorted(r[-1] for r in rows[1:])

    def test_mixed_group_upgraded_column_on_both_brokers(self):
        ours = self.mixed_group("cohortd")
        self.assertEqual(ours[1], ["false", "true"])
        self.assertEqual(ours, self.mixed_group("kafka"))

    def test_describe_matches_kafkas_tool_on_both_brokers(self):
        ours = self.describe_both_ways("cohortd")
        kafka = self.describe_both_ways("kafka")
        for view in ours:
            self.assertEqual(ours[view], kafka[view], view)
        self.assertEqual(len(ours), 4)


if __name__ == "__main__":
    main()
