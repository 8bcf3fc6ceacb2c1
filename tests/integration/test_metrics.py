"""/metrics on the admin listener: the page passes `promtool check metrics`
(Debian's prometheus 2.42, tools/install-promtool.sh), and its counters move
as a scripted group works: kafka-python consumers join (rebalance), a second
one joins (rebalance), commits, leaves (rebalance); a simple group commits
behind the end offset (lag), DeleteRecords moves the log start past its
commit (flagged), and DeleteGroups removes it. Request, error, latency,
network, loop and fsync counters are checked to move with them."""
import os
import queue
import re
import subprocess
import threading
import time
import urllib.request

import kwire
from harness import BrokerTestCase, main
from test_delete_records import delete_records

try:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
except ImportError:  # main() reports the skip
    pass

HERE = os.path.dirname(os.path.abspath(__file__))
PROMTOOL = os.environ.get("PROMTOOL") or os.path.join(HERE, "..", "..", ".deps", "promtool")
TOPIC = "metrics-t"
LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def parse(text):
    """{(name, frozenset of (label, value))): float} of every sample."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = LINE.match(line)
        assert m, "not a sample line: %r" % line
        labels = frozenset((k, v.encode().decode("unicode_escape"))
                           for k, v in LABEL.findall(m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def val(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples, name, **labels):
    """Sum over every series of name whose labels include labels."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= ls)


class Member:
    """A kafka-python consumer of group metrics-g polling on its own thread
    (a rebalance needs every member polling at once); commit() and stop()
    run their calls on that thread, kafka-python's consumers not being
    thread-safe."""

    def __init__(self, bootstrap, name):
        self.c = KafkaConsumer(bootstrap_servers=bootstrap, group_id="metrics-g",
                               client_id=name, auto_offset_reset="earliest",
                               enable_auto_commit=False, session_timeout_ms=6000,
                               heartbeat_interval_ms=500, max_poll_interval_ms=60000)
        self.c.subscribe([TOPIC])
        self.calls = queue.Queue()
        self.done = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while True:
            try:
                fn, ev = self.calls.get_nowait()
                fn()
                ev.set()
                if fn == self.c.close:
                    return
            except queue.Empty:
                pass
            self.c.poll(timeout_ms=100)

    def call(self, fn):
        ev = threading.Event()
        out = []
        self.calls.put((lambda: out.append(fn()), ev) if fn != self.c.close else (fn, ev))
        if not ev.wait(60):
            raise AssertionError("consumer call %s never returned" % fn)
        return out[0] if out else None

    def positions(self):
        """{partition: position} of what the member owns now."""
        return self.call(lambda: {tp.partition: self.c.position(tp)
                                  for tp in self.c.assignment()})

    def commit(self):
        self.call(self.c.commit)

    def stop(self):
        if self.t.is_alive():
            self.call(self.c.close)
            self.t.join(30)


class Metrics(BrokerTestCase):
    broker_settings = {"admin.listeners": "http://127.0.0.1:0", "num.partitions": "2",
                       "group.initial.rebalance.delay.ms": "0",
                       "group.min.session.timeout.ms": "500"}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.url = "http://127.0.0.1:%d/metrics" % cls.broker.admin_port()

    def scrape(self):
        with urllib.request.urlopen(self.url, timeout=30) as r:
            self.assertEqual(r.status, 200)
            self.assertTrue(r.headers["Content-Type"].startswith("text/plain; version=0.0.4"))
            text = r.read().decode()
        p = subprocess.run([PROMTOOL, "check", "metrics"], input=text, text=True,
                           capture_output=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout + p.stderr), (0, ""),
                         "promtool check metrics refused the page")
        return parse(text)

    def wait_for(self, what, cond, timeout=60.0):
        """Scrapes until cond(samples) holds."""
        deadline = time.monotonic() + timeout
        while True:
            time.sleep(0.1)
            s = self.scrape()
            if cond(s):
                return s
            if time.monotonic() > deadline:
                group = sorted("%s%s %g" % (n, dict(ls), v) for (n, ls), v in s.items()
                               if n.startswith("cohort_group"))
                self.fail("metrics never showed %s; last scrape:\n%s" % (what, "\n".join(group)))

    def assert_one_rebalance(self, before, after, cause, others):
        """Each rebalance duration histogram of cause took exactly one
        observation between the scrapes, in the buckets its duration falls
        into (every le >= it, none below); those of the causes in others took
        none."""
        for phase in ("join_phase", "sync_phase", "duration"):
            name = "cohort_group_coordinator_rebalance_%s_seconds" % phase
            with self.subTest(name, cause=cause):
                n = val(after, name + "_count", cause=cause) - val(before, name + "_count",
                                                                  cause=cause)
                self.assertEqual(n, 1)
                took = val(after, name + "_sum", cause=cause) - val(before, name + "_sum",
                                                                   cause=cause)
                les = [dict(ls)["le"] for (nm, ls), _ in after.items()
                       if nm == name + "_bucket" and ("cause", cause) in ls]
                self.assertEqual(len(les), 19)
                for le in les:
                    moved = (val(after, name + "_bucket", cause=cause, le=le) -
                             val(before, name + "_bucket", cause=cause, le=le))
                    self.assertEqual(moved, 1 if float(le) >= took - 1e-9 else 0,
                                     "le=%s, rebalance took %g s" % (le, took))
                for other in others:
                    self.assertEqual(val(after, name + "_count", cause=other),
                                     val(before, name + "_count", cause=other), other)

    def test_promtool_catches_a_bad_page(self):
        """The check has teeth: promtool refuses what our names avoid."""
        bad = "# HELP x_sum a gauge named like a histogram part\n# TYPE x_sum gauge\nx_sum 1\n"
        p = subprocess.run([PROMTOOL, "check", "metrics"], input=bad, text=True,
                           capture_output=True, timeout=60)
        self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_counters_move_with_a_group(self):
        b = self.broker
        s0 = self.scrape()
        prod = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all")
        for i in range(40):
            prod.send(TOPIC, b"v%d" % i, partition=i % 2)
        prod.flush(60)
        prod.close()

        a = Member(b.bootstrap, "a")
        self.addCleanup(a.stop)
        s1 = self.wait_for("one member, Stable", lambda s: (
            val(s, "cohort_group_members", group="metrics-g") == 1 and
            val(s, "cohort_group_coordinator_completed_rebalances_total") >
            val(s0, "cohort_group_coordinator_completed_rebalances_total")))
        self.assertGreater(val(s1, "cohort_group_coordinator_rebalances_total",
                               cause="member joined"),
                           val(s0, "cohort_group_coordinator_rebalances_total",
                               cause="member joined"))
        self.assert_one_rebalance(s0, s1, "member joined", ["member left"])
        self.assertGreaterEqual(val(s1, "cohort_group_coordinator_groups_by_protocol_type",
                                    protocol_type="consumer"), 1)
        self.assertGreaterEqual(val(s1, "cohort_group_coordinator_groups", protocol="classic"), 1)

        bb = Member(b.bootstrap, "b")
        self.addCleanup(bb.stop)
        s2 = self.wait_for("two members after a second rebalance", lambda s: (
            val(s, "cohort_group_members", group="metrics-g") == 2 and
            val(s, "cohort_group_coordinator_completed_rebalances_total") >
            val(s1, "cohort_group_coordinator_completed_rebalances_total") and
            val(s, "cohort_group_coordinator_classic_groups", state="Stable") >= 1))
        self.assertGreater(total(s2, "cohort_requests_total", request="JoinGroup"),
                           total(s1, "cohort_requests_total", request="JoinGroup"))

        # both consume to the end of what they own and commit it
        deadline = time.monotonic() + 60
        while True:
            pos = {}
            pos.update(a.positions())
            pos.update(bb.positions())
            if sorted(pos.values()) == [20, 20] or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.assertEqual(sorted(pos.values()), [20, 20], pos)
        a.commit()
        bb.commit()
        s3 = self.scrape()
        self.assertGreaterEqual(val(s3, "cohort_group_coordinator_offset_commits_total") -
                                val(s2, "cohort_group_coordinator_offset_commits_total"), 2)
        for p in ("0", "1"):
            self.assertEqual(val(s3, "cohort_consumer_group_lag", group="metrics-g",
                                 topic=TOPIC, partition=p), 0)
            self.assertEqual(val(s3, "cohort_log_end_offset", topic=TOPIC, partition=p), 20)
        self.assertGreater(val(s3, "cohort_log_fsync_duration_seconds_count"),
                           val(s0, "cohort_log_fsync_duration_seconds_count"))

        bb.stop()  # close: LeaveGroup
        s4 = self.wait_for("the leave's rebalance", lambda s: (
            val(s, "cohort_group_members", group="metrics-g") == 1 and
            val(s, "cohort_group_coordinator_rebalances_total", cause="member left") >
            val(s3, "cohort_group_coordinator_rebalances_total", cause="member left")))
        s4 = self.wait_for("the leave's rebalance done", lambda s: (
            val(s, "cohort_group_coordinator_rebalance_duration_seconds_count",
                cause="member left") >
            val(s3, "cohort_group_coordinator_rebalance_duration_seconds_count",
                cause="member left")))
        self.assert_one_rebalance(s3, s4, "member left", ["member joined"])
        self.assertGreater(total(s4, "cohort_requests_total", request="LeaveGroup"),
                           total(s3, "cohort_requests_total", request="LeaveGroup"))

        # a stale generation's commit: the error is counted by its name
        with kwire.Conn(b.port) as c:
            errs = kwire.offset_commit(c, 2, "metrics-g", [(TOPIC, 0, 1, None)],
                                       generation=999, member="nobody")
            self.assertNotEqual(errs[(TOPIC, 0)], 0)
        s5 = self.scrape()
        self.assertGreater(total(s5, "cohort_request_errors_total", request="OffsetCommit",
                                 error="UNKNOWN_MEMBER_ID") +
                           total(s5, "cohort_request_errors_total", request="OffsetCommit",
                                 error="ILLEGAL_GENERATION"),
                           total(s4, "cohort_request_errors_total", request="OffsetCommit",
                                 error="UNKNOWN_MEMBER_ID") +
                           total(s4, "cohort_request_errors_total", request="OffsetCommit",
                                 error="ILLEGAL_GENERATION"))

        # a simple group committed behind: its lag; then the records after the
        # commit are deleted: flagged below the log start
        with kwire.Conn(b.port) as c:
            self.assertEqual(kwire.offset_commit(c, 2, "metrics-lag", [(TOPIC, 0, 3, None),
                                                                        (TOPIC, 1, 15, None)]),
                             {(TOPIC, 0): 0, (TOPIC, 1): 0})
        s6 = self.scrape()
        self.assertEqual(val(s6, "cohort_consumer_group_lag", group="metrics-lag", topic=TOPIC,
                             partition="0"), 17)
        self.assertEqual(val(s6, "cohort_consumer_group_lag", group="metrics-lag", topic=TOPIC,
                             partition="1"), 5)
        self.assertEqual(val(s6, "cohort_consumer_group_max_lag", group="metrics-lag"), 17)
        self.assertEqual(val(s6, "cohort_consumer_group_total_lag", group="metrics-lag"), 22)
        self.assertEqual(val(s6, "cohort_consumer_group_offset_below_log_start",
                             group="metrics-lag", topic=TOPIC, partition="0"), 0)
        with kwire.Conn(b.port) as c:
            self.assertEqual(delete_records(c, 1, {TOPIC: [(0, 10)]})[(TOPIC, 0)], (0, 10))
        s7 = self.scrape()
        self.assertEqual(val(s7, "cohort_log_start_offset", topic=TOPIC, partition="0"), 10)
        self.assertEqual(val(s7, "cohort_consumer_group_offset_below_log_start",
                             group="metrics-lag", topic=TOPIC, partition="0"), 1)
        self.assertEqual(val(s7, "cohort_consumer_group_offset_below_log_start",
                             group="metrics-lag", topic=TOPIC, partition="1"), 0)

        admin = KafkaAdminClient(bootstrap_servers=b.bootstrap)
        self.addCleanup(admin.close)
        admin.delete_consumer_groups(["metrics-lag"])
        s8 = self.scrape()
        self.assertEqual(val(s8, "cohort_group_coordinator_groups_deleted_total") -
                         val(s7, "cohort_group_coordinator_groups_deleted_total"), 1)
        self.assertNotIn(("cohort_consumer_group_total_lag",
                          frozenset({("group", "metrics-lag")})), s8)

        # the rest of the runtime moved too
        for name in ("cohort_connections_accepted_total", "cohort_network_received_bytes_total",
                     "cohort_network_sent_bytes_total", "cohort_event_loop_iteration_seconds_count"):
            with self.subTest(name):
                self.assertGreater(val(s8, name), val(s0, name))
        self.assertGreaterEqual(val(s8, "cohort_connections"), 1)
        # every request series has its histogram, with as many observations
        for (n, ls), v in s8.items():
            if n == "cohort_requests_total":
                self.assertEqual(s8[("cohort_request_duration_seconds_count", ls)], v, ls)


if __name__ == "__main__":
    main(requires_modules=("kafka",))
