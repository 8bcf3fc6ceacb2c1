"""The libcohort example programs (examples/, built by the build), run as a
user would run them, against cohortd and against Apache Kafka 4.4.0:

- rebalance_listener: on a rebalance it commits what it processed inside
  revoked() and releases each partition's state, so the next owner starts
  exactly there (no record read twice); when its partitions are lost
  (stopped past its session) it releases them and commits nothing;
- static_member: stopped (SIGTERM: close, no LeaveGroup) and started again
  within its session, it gets the same partitions and the other member sees
  no rebalance;
- lag_monitor: committed offset, end offset and lag per partition, "-"
  where nothing is committed, 0 (never negative) for a commit past the end.
"""
import os
import re
import signal
import subprocess
import threading
import time

from client_scenarios import ClientGroupTest
from harness import _pdeathsig, main, start_clean, stop_clean
from kafka_ref import KafkaRef
from test_group_helpers import GROUP_SETTINGS, MemberProcess, create_topics, wait_until

EXAMPLES = os.environ.get("COHORT_EXAMPLES", "")
MEMBER = os.environ.get("COHORT_MEMBER", "")


class Example:
    """One example process; its stdout lines collected on a thread."""

    def __init__(self, argv, env=None):
        self.lines = []
        self.cv = threading.Condition()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=dict(os.environ, **(env or {})),
                                     preexec_fn=_pdeathsig)
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for raw in self.proc.stdout:
            with self.cv:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self.cv.notify_all()

    def wait(self, pred, timeout=60, what="output"):
        deadline = time.monotonic() + timeout
        with self.cv:
            while not pred(self.lines):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("timed out waiting for %s; last lines:\n%s\nstderr: %s"
                                         % (what, "\n".join(self.lines[-15:]), self.stderr()))
                self.cv.wait(min(left, 0.2))

    def stderr(self):
        if self.proc.poll() is None:
            return "(running)"
        return self.proc.stderr.read().decode("utf-8", "replace")[-2000:]

    def owned(self):
        """Partitions assigned and not revoked or lost since, from the lines."""
        own = set()
        with self.cv:
            for l in self.lines:
                m = re.match(r"(assigned|revoked|lost) (\S+)-(\d+)", l)
                if m:
                    tp = (m.group(2), int(m.group(3)))
                    (own.add if m.group(1) == "assigned" else own.discard)(tp)
        return own

    def records(self):
        with self.cv:
            return [(m.group(1), int(m.group(2)), int(m.group(3))) for m in
                    (re.match(r"record (\S+)-(\d+)@(\d+)$", l) for l in self.lines) if m]

    def stop(self, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout)
        self.t.join(5)
        return rc

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.t.join(5)
        for f in (self.proc.stdout, self.proc.stderr):
            f.close()


class LibcohortExamples(ClientGroupTest):
    CLIENT = "libcohort-examples"

    @staticmethod
    def check_built():
        for name in ("rebalance_listener", "static_member", "lag_monitor"):
            if not os.access(os.path.join(EXAMPLES, name), os.X_OK):
                raise SystemExit("FAIL: example %s not built in %r" % (name, EXAMPLES))
        if not os.access(MEMBER, os.X_OK):
            raise SystemExit("FAIL: COHORT_MEMBER not built: %r" % MEMBER)

    @classmethod
    def setUpClass(cls):
        cls.check_built()
        super().setUpClass()

    def example(self, name, *args, env=None):
        e = Example([os.path.join(EXAMPLES, name)] + list(args), env)
        self.addCleanup(e.cleanup)
        return e

    def test_rebalance_listener(self):
        topic, group = "ex-rl-" + self.CLIENT, "g-ex-rl-" + self.CLIENT
        create_topics(self.broker.port, {topic: 4})
        self.produce(topic, 4, 20)
        env = {"SESSION_MS": "3000"}
        a = self.example("rebalance_listener", self.broker.bootstrap, group, topic, env=env)
        a.wait(lambda ls: sum(l.startswith("record ") for l in ls) >= 80, 60, "80 records")
        b = self.example("rebalance_listener", self.broker.bootstrap, group, topic, env=env)
        wait_until(lambda: len(a.owned()) == 2 and len(b.owned()) == 2, 60,
                   "two partitions each")
        # a revoked everything (eager) and committed each partition at 20
        with a.cv:
            committed = [l for l in a.lines if l.startswith("revoked ")]
            released = [l for l in a.lines if l.startswith("released ")]
        self.assertEqual(sorted(committed), sorted(
            "revoked %s-%d: committed 20 NONE" % (topic, p) for p in range(4)))
        self.assertEqual(sorted(released), sorted(
            "released %s-%d after 20 record(s)" % (topic, p) for p in range(4)))
        self.produce(topic, 4, 5)
        wait_until(lambda: len(a.records()) + len(b.records()) >= 100, 60, "100 records")
        reads = a.records() + b.records()
        self.assertEqual(len(reads), len(set(reads)), "a record read twice")
        # b stopped past its session: its partitions are lost, nothing committed
        n = len(b.lines)
        b.proc.send_signal(signal.SIGSTOP)
        wait_until(lambda: len(a.owned()) == 4, 60, "a owning everything")
        b.proc.send_signal(signal.SIGCONT)
        b.wait(lambda ls: any(l.startswith("lost ") for l in ls[n:]), 60, "lost")
        b.wait(lambda ls: any(l.startswith("assigned ") for l in ls[n:]), 60, "b assigned again")
        with b.cv:
            after = b.lines[n:]
        first_assigned = next(i for i, l in enumerate(after) if l.startswith("assigned "))
        lost_part = after[:first_assigned]
        self.assertTrue(any(l.startswith("lost ") for l in lost_part), after)
        self.assertEqual([l for l in lost_part if ": committed " in l], [], after)
        self.assertEqual(len([l for l in lost_part if l.startswith("released ")]),
                         len([l for l in lost_part if l.startswith("lost ")]), after)
        for e in (a, b):
            self.assertEqual(e.stop(), 0, e.stderr())

    def test_static_member(self):
        topic, group = "ex-sm-" + self.CLIENT, "g-ex-sm-" + self.CLIENT
        create_topics(self.broker.port, {topic: 4})
        env = {"SESSION_MS": "10000"}
        a = self.example("static_member", self.broker.bootstrap, group, "sm-a", topic, env=env)
        a.wait(lambda ls: sum(l.startswith("assigned ") for l in ls) == 4, 60, "a assigned")
        b = self.example("static_member", self.broker.bootstrap, group, "sm-b", topic, env=env)
        wait_until(lambda: len(a.owned()) == 2 and len(b.owned()) == 2, 60,
                   "two partitions each")
        time.sleep(1.0)   # nothing else moves
        a_parts, b_lines = a.owned(), len(b.lines)
        self.assertEqual(a.stop(), 0, a.stderr())
        a2 = self.example("static_member", self.broker.bootstrap, group, "sm-a", topic, env=env)
        wait_until(lambda: len(a2.owned()) == 2, 60, "the restarted member assigned")
        self.assertEqual(a2.owned(), a_parts)
        time.sleep(3.0)   # a rebalance would reach b through its heartbeat by now
        with b.cv:
            self.assertEqual(b.lines[b_lines:], [], "b saw a rebalance")
        for e in (a2, b):
            self.assertEqual(e.stop(), 0, e.stderr())

    def test_lag_monitor(self):
        topic, group = "ex-lag-" + self.CLIENT, "g-ex-lag-" + self.CLIENT
        create_topics(self.broker.port, {topic: 3})
        for p, n in ((0, 10), (1, 20), (2, 30)):
            self.produce_one(topic, p, n)
        # commits with no generation, from a libcohort member on a manual assignment
        m = MemberProcess([MEMBER, "-b", self.broker.bootstrap, "-g", group, "-n", "lag-c",
                           "-A", "%s:0,%s:1" % (topic, topic)], "lag-c")
        self.addCleanup(m.cleanup)
        self.assertEqual(m.commit(topic, 0, 4, timeout=60), "NO_ERROR")
        self.assertEqual(m.commit(topic, 1, 25), "NO_ERROR")   # past the end (20)
        self.assertEqual(m.close(), 0)
        lag = self.example("lag_monitor", self.broker.bootstrap, group, topic)
        self.assertEqual(lag.proc.wait(60), 0, lag.stderr())
        lag.t.join(5)
        self.assertEqual(lag.lines, [
            "%s 0 committed=4 end=10 lag=6" % topic,
            "%s 1 committed=25 end=20 lag=0" % topic,
            "%s 2 committed=- end=30 lag=-" % topic,
        ])
        missing = self.example("lag_monitor", self.broker.bootstrap, group, "ex-lag-missing")
        self.assertEqual(missing.proc.wait(60), 1)

    def produce_one(self, topic, partition, n):
        import confluent_kafka
        p = confluent_kafka.Producer({"bootstrap.servers": self.broker.bootstrap, "acks": "all"})
        for i in range(n):
            p.produce(topic, value=b"x", partition=partition)
        self.assertEqual(p.flush(30), 0)


class LibcohortExamplesKafka(LibcohortExamples):
    """The same against Apache Kafka 4.4.0."""
    CLIENT = "libcohort-examples-kafka"

    @classmethod
    def setUpClass(cls):
        cls.check_built()
        cls.broker = start_clean(KafkaRef("4", settings=dict(GROUP_SETTINGS), name=cls.__name__))

    @classmethod
    def tearDownClass(cls):
        stop_clean(cls.broker)


if __name__ == "__main__":
    main()
