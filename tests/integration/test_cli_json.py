"""Every command's --json against its documented schema (src/cli/cli_json.json,
printed by `cohort help json --schema`), validated with jsonschema (pinned in
requirements.txt) on real output from cohortd: topics, produce and consume
(a value that is not UTF-8 too), a group's describe views, watch, health,
reset, delete-offsets, remove-members, rebalances and delete. The schemas
close every object (additionalProperties false), so a field printed and not
documented fails here, as does a documented field missing or of another
type; the last test checks that every command of the document was run.

Also `groups describe` caught in the middle of a rebalance: a librdkafka
member that owns the partitions stops polling, a second one joins, and the
group stays in PreparingRebalance until the first rejoins (the holder does
not serve its revoke callback): describe's views show the state, both
members and Kafka's "is rebalancing" warning. test_cli_kafka.py runs the
same scenario against Kafka 4.4 beside kafka-consumer-groups.
"""
import contextlib
import json
import os
import subprocess
import threading
import time
import urllib.error
import urllib.request

from harness import BrokerTestCase, free_port, main
from test_group_helpers import wait_until

try:
    from confluent_kafka import Consumer
except ImportError:  # main() reports the skip
    pass
try:
    import jsonschema  # not needed by test_cli_kafka.py, which imports held_rebalance
except ImportError:
    pass

CLI = os.environ.get("COHORT_CLI", "")
TOPIC = "json-t"
ADMIN_PORT = free_port()


def cli(bootstrap, *args, stdin=None, timeout=90):
    return subprocess.run([CLI] + list(args) + ["--bootstrap-server", bootstrap],
                          input=stdin, capture_output=True, timeout=timeout)


class Poller:
    """A librdkafka (confluent-kafka) consumer polling on its own thread
    while `polling` is set; pause() stops serving it (its rebalance
    callbacks wait, so it does not rejoin)."""

    def __init__(self, bootstrap, group, topic, name, strategy="range"):
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                           "client.id": name, "enable.auto.commit": False,
                           "partition.assignment.strategy": strategy,
                           "session.timeout.ms": 6000, "heartbeat.interval.ms": 100,
                           "max.poll.interval.ms": 60000, "auto.offset.reset": "earliest"})
        self.assigned = []
        self.c.subscribe([topic], on_assign=self._on_assign)
        self.polling = threading.Event()
        self.polling.set()
        self.stopping = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _on_assign(self, _c, parts):
        self.assigned = [p.partition for p in parts]

    def _run(self):
        while not self.stopping:
            if self.polling.wait(0.05):
                self.c.poll(0.05)
        self.c.close()

    def pause(self):
        self.polling.clear()
        time.sleep(0.2)  # a poll() under way returns within its 0.05 s

    def stop(self):
        self.polling.set()
        self.stopping = True
        self.t.join(60)


def wait_for(what, cond, timeout=60):
    return wait_until(cond, timeout=timeout, what=what)


@contextlib.contextmanager
def held_rebalance(bootstrap, group, topic, describe_state):
    """A librdkafka group of one member owning topic's partitions, then a
    second member joining while the first does not poll: inside the block
    the group is in PreparingRebalance, held by the first (it has not
    rejoined). describe_state() reads the group's state. release() lets
    the first poll again and returns once the group is Stable with both.
    Leaving the block stops both members."""
    holder = Poller(bootstrap, group, topic, "holder")
    joiner = None
    try:
        wait_for("the holder's assignment", lambda: holder.assigned)
        wait_for("a Stable group", lambda: describe_state() == "Stable")
        holder.pause()
        joiner = Poller(bootstrap, group, topic, "joiner")
        wait_for("PreparingRebalance", lambda: describe_state() == "PreparingRebalance")

        def release():
            holder.polling.set()
            wait_for("Stable with both", lambda: describe_state() == "Stable" and
                     holder.assigned and joiner.assigned)
        yield release
    finally:
        holder.stop()
        if joiner:
            joiner.stop()


class CliJson(BrokerTestCase):
    broker_settings = {"admin.listeners": "http://127.0.0.1:%d" % ADMIN_PORT,
                       "group.initial.rebalance.delay.ms": "0",
                       "group.min.session.timeout.ms": "500"}
    covered = set()

    @classmethod
    def setUpClass(cls):
        if not os.access(CLI, os.X_OK):
            raise RuntimeError("COHORT_CLI is not an executable: %r" % CLI)
        doc = subprocess.run([CLI, "help", "json", "--schema"], capture_output=True,
                             check=True).stdout
        cls.doc = json.loads(doc)
        cls.validators = {}
        for name, e in cls.doc["commands"].items():
            if "schema" in e:
                jsonschema.Draft202012Validator.check_schema(e["schema"])
                cls.validators[name] = jsonschema.Draft202012Validator(e["schema"])
        super().setUpClass()
        cls.bs = cls.broker.bootstrap

    def json_of(self, name, *args, stdin=None, codes=(0,)):
        """Run `cohort <args> --json`, validate stdout against the schema of
        `name` (a command, or a command and its view), return the value (a
        list of values for commands that print one a line)."""
        r = cli(self.bs, *args, "--json", stdin=stdin)
        self.assertIn(r.returncode, codes, (args, r.stdout, r.stderr))
        e = self.doc["commands"][name]
        v = self.validators[e.get("views_of", name)]
        out = r.stdout.decode()
        if e["output"] == "lines":
            values = [json.loads(line) for line in out.splitlines()]
        else:
            self.assertEqual(len(out.splitlines()), 1, out)  # one line, for `| jq`
            values = [json.loads(out)]
        for x in values:
            errors = sorted(v.iter_errors(x), key=lambda err: err.path)
            self.assertFalse(errors, "%s: %s\n%s" % (
                name, "\n".join("%s: %s" % (list(err.path), err.message) for err in errors),
                json.dumps(x, indent=1)))
        self.covered.add(name)
        return values if e["output"] == "lines" else values[0]

    def state(self, group):
        r = cli(self.bs, "groups", "describe", group, "--state", "--json")
        return r.returncode == 0 and json.loads(r.stdout)["state"]

    def test_topics_produce_consume(self):
        v = self.json_of("version", "version")
        self.assertTrue(v["cohort"])
        v = self.json_of("topics create", "topics", "create", TOPIC, "--partitions", "2")
        self.assertEqual(v, {"created": TOPIC, "validate_only": False})
        v = self.json_of("topics create", "topics", "create", "json-v", "--validate-only")
        self.assertEqual(v["validate_only"], True)
        v = self.json_of("topics add-partitions", "topics", "add-partitions", TOPIC, "3")
        self.assertEqual(v["partitions"], 3)
        names = {t["name"]: t for t in self.json_of("topics list", "topics", "list")}
        self.assertEqual(names[TOPIC]["partitions"], 3)
        d = self.json_of("topics describe", "topics", "describe", TOPIC)
        self.assertEqual([p["partition"] for p in d[0]["partitions"]], [0, 1, 2])
        reports = self.json_of("produce", "produce", TOPIC, "--partition", "1",
                               "--key-separator", ":", "--header", "h=1",
                               stdin=b"k1:v1\nk2:\xff\xfe\n")
        self.assertEqual(sorted(r["line"] for r in reports), [1, 2])
        self.assertTrue(all(r["error"] is None and r["offset"] >= 0 for r in reports))
        recs = self.json_of("consume", "consume", TOPIC, "--partition", "1",
                            "--from", "earliest", "--exit-at-end")
        self.assertEqual([(r.get("key"), r.get("value"), r.get("value_base64")) for r in recs],
                         [("k1", "v1", None), ("k2", None, "//4=")])
        self.assertEqual(recs[0]["headers"], [{"key": "h", "value": "1"}])
        v = self.json_of("topics delete", "topics", "delete", "json-gone", codes=(4,))
        self.assertEqual(v, {"json-gone": "UNKNOWN_TOPIC_OR_PARTITION"})

    def test_groups(self):
        t, g = "json-g", "json-group"
        self.assertEqual(cli(self.bs, "topics", "create", t, "--partitions", "2").returncode, 0)
        # ten records to each partition: twelve consumed take from both, so
        # both are committed and listed (the sticky partitioner's split of
        # twenty unkeyed records varies, and a partition the group never
        # committed is not in total_lag: 5 instead of 8 once under load)
        for part in (0, 1):
            r = cli(self.bs, "produce", t, "--partition", str(part),
                    stdin=b"".join(b"r%d\n" % i for i in range(10)))
            self.assertEqual(r.returncode, 0, r.stderr)
        r = cli(self.bs, "consume", t, "--group", g, "--from", "earliest", "--count", "12")
        self.assertEqual(r.returncode, 0, r.stderr)
        listed = {x["group"]: x for x in self.json_of("groups list", "groups", "list")}
        self.assertEqual(listed[g]["state"], "Empty")
        d = self.json_of("groups describe", "groups", "describe", g)
        self.assertEqual((d["state"], d["members"], d["total_lag"]), ("Empty", 0, 8))
        self.assertEqual(self.json_of("groups describe --members", "groups", "describe", g,
                                      "--members", "--verbose"), [])
        s = self.json_of("groups describe --state", "groups", "describe", g, "--state",
                         "--verbose")
        self.assertEqual((s["state"], s["group_epoch"]), ("Empty", None))
        w = self.json_of("groups watch", "groups", "watch", g, "--iterations", "2",
                         "--interval", "10ms")
        self.assertEqual([x["total_lag"] for x in w], [8, 8])
        h = self.json_of("groups health", "groups", "health", g, "--window", "300ms",
                         "--interval", "100ms", codes=(0, 6, 7))
        self.assertEqual(h["total_lag"], 8)
        dry = self.json_of("groups reset-offsets", "groups", "reset-offsets", g,
                           "--all-topics", "--to-earliest")
        self.assertEqual((dry["executed"], {p["new_offset"] for p in dry["partitions"]}),
                         (False, {0}))
        done = self.json_of("groups reset-offsets", "groups", "reset-offsets", g,
                            "--topic", t + ":0", "--to-latest", "--execute")
        self.assertTrue(done["executed"])
        v = self.json_of("groups delete-offsets", "groups", "delete-offsets", g,
                         "--topic", t + ":1")
        self.assertEqual(v, [{"topic": t, "partition": 1, "status": "NONE"}])
        v = self.json_of("groups remove-members", "groups", "remove-members", g,
                         "--instance-id", "nobody", codes=(1, 4))
        self.assertEqual(list(v), ["nobody"])
        h = self.json_of("groups rebalances", "groups", "rebalances", g, "--admin-url",
                         "http://127.0.0.1:%d" % ADMIN_PORT)
        self.assertEqual(h["rebalances"][0]["cause"]["cause"], "member joined")
        v = self.json_of("groups delete", "groups", "delete", g)
        self.assertEqual(v, {g: "NONE"})

    def test_describe_in_the_middle_of_a_rebalance(self):
        t, g = "json-rb", "json-rb-g"
        self.assertEqual(cli(self.bs, "topics", "create", t, "--partitions", "3").returncode, 0)
        with held_rebalance(self.bs, g, t, lambda: self.state(g)) as release:
            d = self.json_of("groups describe", "groups", "describe", g)
            self.assertEqual((d["state"], d["members"]), ("PreparingRebalance", 2))
            text = cli(self.bs, "groups", "describe", g)
            self.assertEqual(text.returncode, 0, text.stderr)
            self.assertIn(b"Warning: Consumer group '%s' is rebalancing." % g.encode(),
                          text.stderr)
            self.assertIn(b"state PreparingRebalance", text.stdout)
            members = self.json_of("groups describe --members", "groups", "describe", g,
                                   "--members")
            self.assertEqual(sorted(m["client_id"] for m in members), ["holder", "joiner"])
            st = cli(self.bs, "groups", "describe", g, "--state").stdout.decode()
            row = [line.split() for line in st.splitlines() if line.startswith(g)]
            self.assertEqual(row[0][-2:], ["PreparingRebalance", "2"], st)
            release()
            d = self.json_of("groups describe", "groups", "describe", g)
            self.assertEqual((d["state"], d["members"]), ("Stable", 2))
            self.assertEqual(sorted(p["partition"] for p in d["partitions"]
                                    if p["consumer_id"]), [0, 1, 2])

    def api(self, path):
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (ADMIN_PORT, path),
                                    timeout=30) as r:
            return json.loads(r.read())

    def settled(self, g, members, parts):
        """The group once Stable with `members` members owning all `parts`
        partitions and its last rebalance closed: the simulation's view of
        who owns what ({member id: {topic: [partitions]}})."""
        def ready():
            try:
                sim = self.api("/v1/groups/%s/simulate?strategy=range" % g)
            except urllib.error.HTTPError as e:
                # 404 until the first JoinGroup; 409 while the group exists
                # but no member has joined with its protocol yet (no
                # protocol type: not yet a consumer group to simulate)
                self.assertIn(e.code, (404, 409))
                return False
            hist = self.api("/v1/groups/%s/rebalances" % g)["rebalances"]
            ok = (sim["state"] == "Stable" and len(sim["members"]) == members and
                  sum(m["count"] for m in sim["members"]) == parts and hist and
                  hist[-1]["outcome"] == "Stable" and not hist[-1]["follow_up_expected"])
            return ok and {m["member_id"]: m["partitions"] for m in sim["members"]}
        return wait_until(ready, timeout=60, what="%s settled with %d members" % (g, members))

    def test_simulate_against_a_real_scale_out(self):
        """groups simulate on live librdkafka groups: with no change the
        group's own assignor predicts what the group has; with --add-member 1
        it predicts what the group gets when a third member really joins
        (range: the same partitions, the simulated member in the joiner's
        place; cooperative-sticky: the same balance, the partitions moved and
        the two rounds that the rebalance history then records)."""
        t = "json-sim"
        self.assertEqual(cli(self.bs, "topics", "create", t, "--partitions", "6").returncode, 0)
        url = "http://127.0.0.1:%d" % ADMIN_PORT
        for strategy in ("range", "cooperative-sticky"):
            g = "sim-" + strategy
            members = [Poller(self.bs, g, t, n, strategy) for n in ("a", "b")]
            try:
                now = self.settled(g, 2, 6)
                sim = self.json_of("groups simulate", "groups", "simulate", g,
                                   "--admin-url", url)
                self.assertEqual([s["strategy"] for s in sim["strategies"]],
                                 ["range", "roundrobin", "sticky", "cooperative-sticky"])
                own = [s for s in sim["strategies"] if s["strategy"] == strategy][0]
                self.assertEqual({m["member_id"]: m["partitions"] for m in own["assignment"]},
                                 now, own)
                self.assertEqual((own["moved"], own["rounds"]), (0, 1), own)
                pred = self.json_of("groups simulate", "groups", "simulate", g,
                                    "--admin-url", url, "--strategy", strategy,
                                    "--add-member", "1")["strategies"][0]
                self.assertEqual(sorted(m["count"] for m in pred["assignment"]), [2, 2, 2])
                members.append(Poller(self.bs, g, t, "zz", strategy))
                after = self.settled(g, 3, 6)
                joiner = [m for m in after if m.startswith("zz-")][0]
                predicted = {m["member_id"]: m["partitions"] for m in pred["assignment"]}
                hist = self.api("/v1/groups/%s/rebalances" % g)["rebalances"][-1]
                self.assertEqual(hist["partitions_moved"], pred["moved"], (hist, pred))
                self.assertEqual(len(hist["rounds"]), pred["rounds"], (hist, pred))
                text = cli(self.bs, "groups", "simulate", g, "--admin-url", url,
                           "--strategy", strategy).stdout.decode()
                rows = [line.split() for line in text.splitlines()]
                self.assertIn([strategy, "3", "2", "2", "0", "0", "0", "1", "0"], rows, text)
                mine = "%s:%s" % (t, ",".join(map(str, after[joiner][t])))
                self.assertIn([strategy, joiner, "2", mine, mine], rows, text)
                if strategy == "range":  # deterministic: the very same partitions
                    predicted[joiner] = predicted.pop("simulated-member-1")
                    self.assertEqual(predicted, after)
                    self.assertEqual((pred["moved"], pred["rounds"]), (3, 1))
                else:
                    self.assertEqual(sorted(len(sum(p.values(), [])) for p in after.values()),
                                     [2, 2, 2])
                    self.assertEqual((pred["moved"], pred["rounds"],
                                      pred["revoked_first_round"]), (2, 2, 2))
            finally:
                for m in members:
                    m.stop()
        text = cli(self.bs, "groups", "simulate", "sim-range", "--admin-url", url,
                   "--remove-member", "nobody")
        self.assertEqual(text.returncode, 2, text.stderr)
        self.assertIn(b"has no member nobody", text.stderr)
        text = cli(self.bs, "groups", "simulate", "no-such-group", "--admin-url", url)
        self.assertEqual(text.returncode, 4, text.stderr)
        text = cli(self.bs, "groups", "simulate", "sim-range", "--strategy", "fair")
        self.assertEqual(text.returncode, 2, text.stderr)

    def test_zz_every_command_with_json_was_run(self):
        """After the others (unittest runs tests by name): every documented
        command and view was validated, and every command of the tool is
        documented, with JSON or as one without."""
        self.assertEqual(self.covered, set(self.doc["commands"]))
        overview = subprocess.run([CLI, "help"], capture_output=True, text=True).stdout
        documented = {w.split(" --")[0] for w in self.doc["commands"]} | set(self.doc["no_json"])
        commands = set()
        for line in overview.split("Commands:\n")[1].split("\n\n")[0].splitlines():
            words = [w for w in line.split() if w.islower() and w.replace("-", "").isalpha()]
            commands.add(" ".join(words[:2]) if words[0] in ("topics", "groups") else words[0])
        self.assertEqual(commands, documented)


if __name__ == "__main__":
    main(requires_modules=("jsonschema", "confluent_kafka"))
