"""The cohort command-line tool (src/cli) against cohortd.

produce: lines of stdin as records (keys, headers, partition, codec), read
back with librdkafka; a failed delivery named by its line and exit 1.
lag never negative: describe sampled 300 times while records are written and
committed. Bad input: unreachable brokers, missing topics and partitions,
malformed CSV, bad times and durations.
help topics, each command's exit statuses and the man page (valid roff, the
build's cohort.1, installed by cmake --install).
groups health: each of Burrow's states provoked with real groups over one window.
consume without a group (--partition, --offset, --from TIME with a zone,
--exit-at-end; no topic auto-created) and its progress line on a terminal.
consume: a real group member that prints what it reads and commits exactly
what it printed (so --count never skips a record for the group, and a
second run goes on where the first stopped); --format and --json; SIGTERM
leaves the group cleanly. The command line: unknown commands and options,
missing values, bad numbers and --command-config errors end with status 2
and a one-line message naming the culprit; help and the bash completion
come from the same table as the parser.
"""
import json
import os
import pty
import signal
import subprocess
import tempfile
import time

import kwire
from harness import BrokerTestCase, main
from test_data_idempotent import batch, produce
from test_delete_records import delete_records

CLI = os.environ.get("COHORT_CLI", "")
TOPIC, PARTS = "cli-t", 3


def run(*args, timeout=60, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([CLI] + list(args), capture_output=True, text=True,
                          timeout=timeout, env=e)


def read_log(bootstrap, topic, nparts):
    """Every record of topic, read by librdkafka (confluent-kafka), not by the
    tool: {partition: [(offset, key, value, headers)]}."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader-%s" % topic,
                  "enable.auto.commit": False})
    out = {p: [] for p in range(nparts)}
    try:
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                for p in range(nparts)}
        c.assign([TopicPartition(topic, p, 0) for p in range(nparts)])
        deadline = time.monotonic() + 60
        while any(len(out[p]) < ends[p] for p in out) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                out[m.partition()].append((m.offset(), m.key(), m.value(), m.headers() or []))
    finally:
        c.close()
    return out


def on_a_terminal(argv):
    """Run argv with stderr on a pseudo-terminal: (status, stdout, stderr bytes)."""
    master, slave = pty.openpty()
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=slave, timeout=60)
        os.close(slave)
        slave = None
        err = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    return p.returncode, p.stdout, err


class Cli(BrokerTestCase):
    broker_settings = {"group.initial.rebalance.delay.ms": "0"}

    @classmethod
    def setUpClass(cls):
        if not os.access(CLI, os.X_OK):
            raise RuntimeError("COHORT_CLI is not an executable: %r" % CLI)
        super().setUpClass()
        cls.bs = "127.0.0.1:%d" % cls.broker.port
        with kwire.Conn(cls.broker.port) as c:
            res = kwire.create_topics(c, [(TOPIC, PARTS, 1)])
            assert {t["error_code"] for t in res["topics"].values()} == {0}, res
        cls.sent = []
        cls.produce_round(10)

    @classmethod
    def produce_round(cls, per_part):
        with kwire.Conn(cls.broker.port) as c:
            for p in range(PARTS):
                vals = [b"v-%d-%d" % (p, len(cls.sent) + i) for i in range(per_part)]
                err, _ = produce(c, TOPIC, p, batch(-1, -1, -1, vals))
                assert err == 0, err
                cls.sent += [v.decode() for v in vals]

    def committed(self, group):
        with kwire.Conn(self.broker.port) as c:
            got = kwire.offset_fetch(c, 5, group, {TOPIC: list(range(PARTS))})
        return {p: got[(TOPIC, p)][0] for p in range(PARTS)}

    def committed_total(self, group):
        """Records committed over all partitions (-1, none committed, counts 0)."""
        return sum(max(o, 0) for o in self.committed(group).values())

    def test_consume_count_commits_what_it_printed(self):
        r = run("consume", TOPIC, "--group", "g1", "--from", "earliest", "--count", "7",
                "--bootstrap-server", self.bs)
        self.assertEqual(r.returncode, 0, r.stderr)
        first = r.stdout.splitlines()
        self.assertEqual(len(first), 7, r.stdout)
        self.assertTrue(set(first) <= set(self.sent), first)
        # exactly the printed records are committed: a second run reads on
        # from there, no record skipped and none printed twice
        self.assertEqual(self.committed_total("g1"), 7)
        r = run("consume", TOPIC, "--group", "g1", "--from", "earliest",
                "--count", str(len(self.sent) - 7), "--bootstrap-server", self.bs)
        self.assertEqual(r.returncode, 0, r.stderr)
        second = r.stdout.splitlines()
        self.assertEqual(sorted(first + second), sorted(self.sent))
        self.assertEqual(self.committed("g1"), {p: 10 for p in range(PARTS)})

    def test_format_and_json(self):
        r = run("consume", TOPIC, "--group", "g2", "--from", "earliest", "--count", "30",
                "--format", "%t|%p|%o|%k|%v\\n", "--bootstrap-server", self.bs)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = [line.split("|") for line in r.stdout.splitlines()]
        self.assertEqual(len(rows), 30)
        for t, p, o, k, v in rows:
            self.assertEqual((t, k), (TOPIC, "null"))
            self.assertEqual(v.split("-")[1], p)
        # per partition, offsets in order from 0
        for p in range(PARTS):
            self.assertEqual([int(o) for _, pp, o, _, _ in rows if pp == str(p)],
                             list(range(10)))
        r = run("consume", TOPIC, "--group", "g3", "--from", "earliest", "--count", "30",
                "--json", "--bootstrap-server", self.bs)
        self.assertEqual(r.returncode, 0, r.stderr)
        recs = [json.loads(line) for line in r.stdout.splitlines()]
        self.assertEqual(sorted(x["value"] for x in recs), sorted(self.sent[:30]))
        self.assertEqual({x["key"] for x in recs}, {None})
        self.assertEqual({x["topic"] for x in recs}, {TOPIC})
        self.assertTrue(all(x["headers"] == [] and x["timestamp"] > 0 for x in recs))

    def test_produce(self):
        topic = "cli-produce"
        self.assertEqual(run("topics", "create", topic, "--partitions", "3",
                             "--bootstrap-server", self.bs).returncode, 0)
        lines = ["k%d::value %d" % (i, i) for i in range(40)] + ["::no key", "k::", ""]
        r = subprocess.run([CLI, "produce", topic, "--key-separator", "::", "--header", "h=1",
                            "--header", "app=cli", "--compression", "lz4", "--json",
                            "--bootstrap-server", self.bs],
                           input="\r\n".join(lines[:-1]) + "\n", capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        reports = [json.loads(x) for x in r.stdout.splitlines()]
        self.assertEqual(sorted(x["line"] for x in reports), list(range(1, 43)))
        log = read_log(self.bs, topic, 3)
        got = {(p, o): (k, v, h) for p, recs in log.items() for o, k, v, h in recs}
        self.assertEqual(len(got), 42)
        for x in reports:
            k, v, h = got[(x["partition"], x["offset"])]
            want_k, want_v = lines[x["line"] - 1].split("::", 1)
            self.assertEqual((k, v), (want_k.encode(), want_v.encode()))
            self.assertEqual(h, [("h", b"1"), ("app", b"cli")])
        # keys land where Java's murmur2 partitioner puts them: same key, same partition
        by_key = {}
        for x in reports:
            by_key.setdefault(lines[x["line"] - 1].split("::")[0], set()).add(x["partition"])
        self.assertTrue(all(len(ps) == 1 for ps in by_key.values()))
        # one partition, no key: every line a value in order
        r = subprocess.run([CLI, "produce", topic, "--partition", "2", "--acks", "1",
                            "--bootstrap-server", self.bs], input="p2-a\np2-b\n",
                           capture_output=True, text=True, timeout=60)
        self.assertEqual((r.returncode, r.stdout), (0, ""), r.stderr)
        tail = read_log(self.bs, topic, 3)[2][-2:]
        self.assertEqual([(k, v) for _, k, v, _ in tail], [(None, b"p2-a"), (None, b"p2-b")])
        # a line without the separator stops the run; the lines before it are written
        r = subprocess.run([CLI, "produce", topic, "--partition", "0", "--key-separator", "=",
                            "--bootstrap-server", self.bs], input="a=1\nb=2\nbad\nc=3\n",
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no key separator '=' on line 3", r.stderr)
        tail = read_log(self.bs, topic, 3)[0][-2:]
        self.assertEqual([(k, v) for _, k, v, _ in tail], [(b"a", b"1"), (b"b", b"2")])
        # a missing topic, a partition it does not have, a bad codec
        for args, status, want in [
                (["produce", "no-such-topic"], 4, "topic 'no-such-topic' does not exist"),
                (["produce", topic, "--partition", "3"], 4, "has 3 partitions"),
                (["produce", topic, "--compression", "brotli"], 2, "compression.type"),
                (["produce", topic, "--acks", "2"], 2, "acks"),
                (["produce", topic, "--header", "novalue"], 2, "expected K=V")]:
            r = subprocess.run([CLI] + args + ["--bootstrap-server", self.bs], input="x\n",
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, status, (args, r.stderr))
            self.assertIn(want, r.stderr, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, (args, r.stderr))

    def test_produce_reports_failed_deliveries(self):
        """A record the broker refuses (larger than the topic's max.message.bytes)
        is named by its line, the others are written, the exit status is 1."""
        topic = "cli-produce-big"
        self.assertEqual(run("topics", "create", topic, "--partitions", "1", "--config",
                             "max.message.bytes=2000", "--bootstrap-server", self.bs)
                         .returncode, 0)
        # batch.size below the big record: each record is a batch of its own
        r = subprocess.run([CLI, "produce", topic, "--property", "batch.size=10",
                            "--bootstrap-server", self.bs],
                           input="small\n%s\nsmall again\n" % ("x" * 5000),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("line 2 not written to %s" % topic, r.stderr)
        self.assertIn("1 of 3 records failed", r.stderr)
        self.assertEqual([v for _, _, v, _ in read_log(self.bs, topic, 1)[0]],
                         [b"small", b"small again"])

    def test_consume_without_a_group(self):
        fmt = ["--format", "%p:%o:%v\\n", "--bootstrap-server", self.bs]
        r = run("consume", TOPIC, "--partition", "1", "--from", "earliest", "--exit-at-end",
                *fmt)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual(r.stdout.splitlines(), ["1:%d:%s" % (i, self.sent[10 + i])
                                                 for i in range(10)])
        want = ["%d:%d:%s" % (p, o, self.sent[p * 10 + o]) for p in (0, 2) for o in (7, 8, 9)]
        for parts in (["--partition", "0,2"], ["--partition", "2", "--partition", "0"]):
            r = run("consume", TOPIC, *parts, "--offset", "7", "--exit-at-end", *fmt)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(sorted(r.stdout.splitlines()), want, parts)
        r = run("consume", TOPIC, "--from", "earliest", "--count", "30", "--json", *fmt[2:])
        self.assertEqual(sorted(json.loads(x)["value"] for x in r.stdout.splitlines()),
                         sorted(self.sent[:30]))
        # latest (the default) at once at the end: nothing to print, done
        r = run("consume", TOPIC, "--exit-at-end", *fmt)
        self.assertEqual((r.returncode, r.stdout), (0, ""), r.stderr)
        r = run("consume", TOPIC, "--partition", "3", *fmt)
        self.assertEqual(r.returncode, 4)
        self.assertIn("--partition 3: topic 'cli-t' has 3 partitions", r.stderr)
        r = run("consume", "cli-missing", "--exit-at-end", *fmt)
        self.assertEqual(r.returncode, 4)
        self.assertIn("topic 'cli-missing' does not exist", r.stderr)
        listed = json.loads(run("topics", "list", "--json", *fmt[2:]).stdout)
        self.assertNotIn("cli-missing", [t["name"] for t in listed])   # not auto-created

    def test_consume_from_a_time(self):
        topic = "cli-time"
        day = {"jan": 1704067200000, "jun": 1717200000000, "next": 1735689600000}
        with kwire.Conn(self.broker.port) as c:
            kwire.create_topics(c, [(topic, 1, 1)])
            for name in ("jan", "jun", "next"):
                vals = [b"%s-%d" % (name.encode(), i) for i in range(3)]
                self.assertEqual(produce(c, topic, 0, batch(-1, -1, -1, vals, day[name]))[0], 0)
        bs = ["--bootstrap-server", self.bs]
        # 23:00 at UTC-2 is 01:00Z on June 1: after the June records
        r = run("consume", topic, "--from", "2024-05-31T23:00:00-02:00", "--exit-at-end", *bs)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["next-0", "next-1", "next-2"])
        r = run("consume", topic, "--from", "2024-06-01T00:00:00.000Z", "--exit-at-end", *bs)
        self.assertEqual(r.stdout.split()[:4], ["jun-0", "jun-1", "jun-2", "next-0"])
        # a group: the time applies where it never committed, then its commits do
        for want in (["jun-0", "jun-1", "jun-2", "next-0", "next-1", "next-2"], []):
            r = run("consume", topic, "--group", "timeg", "--from", "2024-03-01T00:00:00",
                    "--exit-at-end", *bs)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.split(), want)
        # an offset for a group that never committed
        r = run("consume", topic, "--group", "offg", "--from", "7", "--exit-at-end", *bs)
        self.assertEqual(r.stdout.split(), ["next-1", "next-2"])

    def test_group_exit_at_end_and_progress(self):
        r = run("consume", TOPIC, "--group", "endg", "--from", "earliest", "--exit-at-end",
                "--bootstrap-server", self.bs)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual(sorted(r.stdout.splitlines()), sorted(self.sent[:30]))
        self.assertEqual(self.committed("endg"), {p: 10 for p in range(PARTS)})
        # progress on stderr when it is a terminal
        rc, out, err = on_a_terminal([CLI, "consume", TOPIC, "--from", "earliest", "--count",
                                      "12", "--bootstrap-server", self.bs])
        self.assertEqual(rc, 0)
        self.assertEqual(len(out.splitlines()), 12)
        self.assertRegex(err, rb"^\rcohort: consume: \d+ of 12 records\x1b\[K")
        self.assertTrue(err.endswith(b"\r\x1b[K"), err)   # erased at the end

    def test_groups_health(self):
        """Each of Burrow's states provoked with a real group, all sampled at
        once over one short window."""
        from confluent_kafka import Consumer
        t, tw, tst = "cli-health", "cli-health-w", "cli-health-s"
        with kwire.Conn(self.broker.port) as c:
            kwire.create_topics(c, [(t, 2, 1), (tw, 1, 1), (tst, 1, 1)])
            for topic, p in ((t, 0), (t, 1), (tw, 0), (tst, 0)):
                self.assertEqual(produce(c, topic, p, batch(-1, -1, -1, [b"x"] * 10))[0], 0)

            def commit(group, offsets):
                got = kwire.offset_commit(c, 5, group, [o + ("",) for o in offsets])
                self.assertEqual(set(got.values()), {0}, got)
            commit("h-ok", [(t, 0, 10), (t, 1, 10)])           # no lag: OK
            commit("h-stop", [(t, 0, 10), (t, 1, 4)])          # lag, nobody there: STOP
            commit("h-rewind", [(t, 0, 9), (t, 1, 10)])
            commit("h-warn", [(tw, 0, 1)])
        # STALL: a live member (librdkafka heartbeats in the background) whose
        # commit stays at 2 while records wait
        stalled = Consumer({"bootstrap.servers": self.bs, "group.id": "h-stall",
                            "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        self.addCleanup(stalled.close)
        stalled.subscribe([tst])
        deadline = time.monotonic() + 60
        while not stalled.assignment() and time.monotonic() < deadline:
            stalled.poll(0.2)
        from confluent_kafka import TopicPartition
        stalled.commit(offsets=[TopicPartition(tst, 0, 2)], asynchronous=False)
        # h-rewind samples often (a random pair of its samples sees the
        # commit move back: missed with odds 32/2^31); h-warn seldom (a sample
        # that read the commit before a step and the end offset after it sees
        # a lag the next one would undercut if it came within a step)
        interval = {"h-rewind": "50ms", "h-warn": "250ms"}
        procs = {g: subprocess.Popen([CLI, "groups", "health", g, "--window", "1500ms",
                                      "--interval", interval.get(g, "150ms"),
                                      "--bootstrap-server", self.bs] +
                                     ([] if g == "h-stop" else ["--json"]),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for g in ("h-ok", "h-stop", "h-rewind", "h-warn", "h-stall")}
        try:
            # while they sample: h-rewind's commit jumps between 9 and 3 (back
            # at random moments between samples); h-warn's advances by one
            # while 20 records arrive each time (lag growing, never falling)
            with kwire.Conn(self.broker.port) as c:
                step = 0
                while any(p.poll() is None for p in procs.values()):
                    step += 1
                    commit("h-rewind", [(t, 0, 3 if step % 2 else 9)])
                    self.assertEqual(produce(c, tw, 0, batch(-1, -1, -1, [b"y"] * 20))[0], 0)
                    commit("h-warn", [(tw, 0, 1 + step)])
                    time.sleep(0.005)
            out = {g: p.communicate(timeout=60) for g, p in procs.items()}
        finally:
            for p in procs.values():
                if p.poll() is None:
                    p.kill()
        codes = {g: p.returncode for g, p in procs.items()}
        self.assertEqual(codes, {"h-ok": 0, "h-stop": 7, "h-rewind": 7, "h-warn": 6,
                                 "h-stall": 7}, out)
        j = {g: json.loads(o[0]) for g, o in out.items() if g != "h-stop"}
        status = {g: (v["status"], [(x["partition"], x["status"]) for x in v["partitions"]])
                  for g, v in j.items()}
        self.assertEqual(status, {"h-ok": ("OK", [(0, "OK"), (1, "OK")]),
                                  "h-rewind": ("REWIND", [(0, "REWIND"), (1, "OK")]),
                                  "h-warn": ("WARN", [(0, "WARN")]),
                                  "h-stall": ("STALL", [(0, "STALL")])})
        self.assertGreaterEqual(j["h-ok"]["samples"], 2)
        self.assertEqual(j["h-stall"]["partitions"][0]["last"]["lag"], 8)
        self.assertIsNotNone(j["h-stall"]["partitions"][0]["consumer_id"])
        rows = [line.split() for line in out["h-stop"][0].splitlines() if line.strip()]
        self.assertEqual(rows[0], ["GROUP", "TOPIC", "PARTITION", "STATUS", "FIRST-COMMIT",
                                   "LAST-COMMIT", "FIRST-LAG", "LAST-LAG", "CONSUMER-ID"])
        self.assertEqual(rows[1:3], [["h-stop", t, "0", "OK", "10", "10", "0", "0", "-"],
                                     ["h-stop", t, "1", "STOP", "4", "4", "6", "6", "-"]])
        self.assertIn("h-stop: STOP over", out["h-stop"][0])
        r = run("groups", "health", "no-such-group", "--window", "1ms",
                "--bootstrap-server", self.bs)
        self.assertEqual(r.returncode, 4, r.stderr)

    def test_lag_never_negative_under_load(self):
        """describe sampled 300 times (groups watch, 10 ms apart) while a
        librdkafka producer writes and a group consumes and commits after
        every batch: every sample's LAG >= 0 and CURRENT-OFFSET <= LOG-END-OFFSET."""
        import threading
        from confluent_kafka import Producer
        topic, g = "cli-load", "loadg"
        self.assertEqual(run("topics", "create", topic, "--partitions", "3",
                             "--bootstrap-server", self.bs).returncode, 0)
        stop = threading.Event()

        def write():
            p = Producer({"bootstrap.servers": self.bs, "linger.ms": 1})
            i = 0
            while not stop.is_set():
                p.produce(topic, b"r%d" % i, partition=i % 3)
                i += 1
                if i % 50 == 0:
                    p.poll(0)
                    time.sleep(0.002)
            p.flush(30)
        writer = threading.Thread(target=write)
        writer.start()
        consumer = subprocess.Popen([CLI, "consume", topic, "--group", g, "--from", "earliest",
                                     "--bootstrap-server", self.bs], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60   # the group committed on every partition
            while time.monotonic() < deadline and not all(
                    o > 0 for o in self.committed_of(g, topic, 3).values()):
                time.sleep(0.1)
            r = run("groups", "watch", g, "--interval", "10ms", "--iterations", "300", "--json",
                    "--bootstrap-server", self.bs, timeout=240)
        finally:
            stop.set()
            writer.join(60)
            consumer.send_signal(signal.SIGTERM)
            consumer.communicate(timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        samples = [json.loads(line) for line in r.stdout.splitlines()]
        self.assertEqual(len(samples), 300)
        rows = [x for s in samples for x in s["partitions"]]
        self.assertEqual(len(rows), 900)
        for x in rows:
            self.assertIsNotNone(x["current_offset"], x)
            self.assertGreaterEqual(x["lag"], 0, x)
            self.assertLessEqual(x["current_offset"], x["log_end_offset"], x)
            self.assertEqual(x["lag"], x["log_end_offset"] - x["current_offset"], x)
        # it ran under load: records written and commits made while sampling
        for key in ("log_end_offset", "current_offset"):
            first = sum(x[key] for x in samples[0]["partitions"])
            last = sum(x[key] for x in samples[-1]["partitions"])
            self.assertGreater(last, first, key)

    def committed_of(self, group, topic, nparts):
        with kwire.Conn(self.broker.port) as c:
            got = kwire.offset_fetch(c, 5, group, {topic: list(range(nparts))})
        return {p: got[(topic, p)][0] for p in range(nparts)}

    def test_sigterm_leaves_the_group(self):
        p = subprocess.Popen([CLI, "consume", TOPIC, "--group", "g4", "--from", "earliest",
                              "--bootstrap-server", self.bs],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if self.committed_total("g4") >= 30:
                    break
                time.sleep(0.2)
            p.send_signal(signal.SIGTERM)
            out, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
        self.assertEqual(p.returncode, 0, err)
        self.assertGreaterEqual(len(out.splitlines()), 30)
        # it left (LeaveGroup): the group is Empty at once, not after a session timeout
        with kwire.Conn(self.broker.port) as c:
            r = c.call(kwire.API_LIST_GROUPS, 4, kwire.list_groups_body(4))
            groups = kwire.parse_list_groups(r, 4)["groups"]
        self.assertEqual(groups["g4"]["state"], "Empty", groups)

    def table(self, *args):
        """Run a command printing a table: rows as lists of cells (header first)."""
        r = run(*args, "--bootstrap-server", self.bs)
        self.assertEqual(r.returncode, 0, (args, r.stderr))
        lines = [line for line in r.stdout.splitlines() if line.strip()]
        return [line.split() for line in lines], r

    def test_topics(self):
        r = run("topics", "create", "cli-new", "--partitions", "2", "--config",
                "retention.ms=3600000", "--bootstrap-server", self.bs)
        self.assertEqual((r.returncode, r.stdout), (0, "Created topic cli-new.\n"), r.stderr)
        r = run("topics", "create", "cli-new", "--partitions", "2", "--bootstrap-server", self.bs)
        self.assertEqual(r.returncode, 1)
        self.assertIn("already exists", r.stderr)
        r = run("topics", "create", "bad", "--config", "retention.ms=soon",
                "--bootstrap-server", self.bs)
        self.assertEqual(r.returncode, 1)
        self.assertIn("retention.ms", r.stderr)
        r = run("topics", "add-partitions", "cli-new", "5", "--bootstrap-server", self.bs)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run("topics", "describe", "cli-new", "--bootstrap-server", self.bs)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("PartitionCount: 5", r.stdout)
        self.assertEqual(r.stdout.count("\tPartition: "), 5)
        r = run("topics", "list", "--json", "--bootstrap-server", self.bs)
        listed = {t["name"]: t["partitions"] for t in json.loads(r.stdout)}
        self.assertEqual((listed["cli-new"], listed[TOPIC]), (5, PARTS))
        r = run("topics", "delete", "cli-new", "--bootstrap-server", self.bs)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run("topics", "delete", "cli-new", "--bootstrap-server", self.bs)
        self.assertEqual(r.returncode, 4, r.stderr)
        r = run("topics", "add-partitions", "cli-new", "x", "--bootstrap-server", self.bs)
        self.assertEqual(r.returncode, 2)

    def test_groups_describe_lag_owners_and_notes(self):
        topic = "cli-lag"
        with kwire.Conn(self.broker.port) as c:
            kwire.create_topics(c, [(topic, 2, 1)])
            for p in range(2):
                self.assertEqual(produce(c, topic, p, batch(-1, -1, -1, [b"x"] * 10))[0], 0)
        # a group that read 4 of partition 0 and nothing of 1, then left
        r = run("consume", topic, "--group", "lagg", "--from", "earliest", "--count", "4",
                "--bootstrap-server", self.bs)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows, res = self.table("groups", "describe", "lagg")
        self.assertEqual(rows[0], ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET",
                                   "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"])
        body = {r[2]: r for r in rows[1:] if r[0] == "lagg"}
        self.assertEqual(body["0"][3:9], ["4", "10", "6", "-", "-", "-"])
        self.assertIn("has no active members", res.stderr)
        # retention (DeleteRecords) past the commit: lag counts from the log
        # start, and the deleted records are named
        with kwire.Conn(self.broker.port) as c:
            got = delete_records(c, 2, {topic: [(0, 7)]})
            self.assertEqual(got[(topic, 0)][0], 0)
        rows, res = self.table("groups", "describe", "lagg")
        body = {r[2]: r for r in rows[1:] if r[0] == "lagg"}
        self.assertEqual(body["0"][3:6], ["4", "10", "3"])
        self.assertIn("committed offset 4 is below the log start offset 7", res.stdout)
        # a live member that never committed: "-", not "all messages"
        p = subprocess.Popen([CLI, "consume", topic, "--group", "liveg",
                              "--bootstrap-server", self.bs],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            rows = []
            while time.monotonic() < deadline:
                r = run("groups", "describe", "liveg", "--bootstrap-server", self.bs)
                rows = [line.split() for line in r.stdout.splitlines() if line.strip()]
                if r.returncode == 0 and len(rows) > 2 and all(x[6] != "-" for x in rows[1:3]):
                    break
                time.sleep(0.3)
            body = {r[2]: r for r in rows[1:] if r[0] == "liveg"}
            self.assertEqual(sorted(body), ["0", "1"], rows)
            for part in ("0", "1"):
                self.assertEqual(body[part][3:6], ["-", "10", "-"])
                self.assertTrue(body[part][6].startswith("consumer-liveg-"), body[part])
            members, _ = self.table("groups", "describe", "liveg", "--members", "--verbose")
            self.assertEqual(members[0], ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID",
                                          "#PARTITIONS", "CURRENT-EPOCH", "CURRENT-ASSIGNMENT",
                                          "TARGET-EPOCH", "TARGET-ASSIGNMENT"])
            self.assertEqual(members[1][1], body["0"][6])
            self.assertEqual(members[1][4:], ["2", "-", "%s:0,1" % topic, "-", "-"])
            plain, _ = self.table("groups", "describe", "liveg", "--members")
            self.assertEqual(plain[0], ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID",
                                        "#PARTITIONS"])
            state, _ = self.table("groups", "describe", "liveg", "--state")
            self.assertEqual(state[1][-2:], ["Stable", "1"])
            listed, _ = self.table("groups", "list", "--state", "Stable")
            self.assertIn(["liveg", "Classic", "Stable", "consumer", "range", "1"], listed)
            self.assertNotIn("lagg", [r[0] for r in listed])
            j = json.loads(run("groups", "describe", "liveg", "--json",
                               "--bootstrap-server", self.bs).stdout)
            self.assertEqual((j["state"], j["members"], j["total_lag"]), ("Stable", 1, 0))
            self.assertEqual({x["lag"] for x in j["partitions"]}, {None})
        finally:
            p.send_signal(signal.SIGTERM)
            p.communicate(timeout=30)
        # watch: the describe refreshed, with the lag's rate from the second on
        r = run("groups", "watch", "lagg", "--interval", "1", "--iterations", "2",
                "--bootstrap-server", self.bs)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.count("Every 1s: cohort groups describe lagg"), 2)
        self.assertEqual(r.stdout.count("CURRENT-OFFSET"), 2)
        self.assertIn("lag rate: +0.0 records/s", r.stdout)
        r = run("groups", "describe", "no-such-group", "--bootstrap-server", self.bs)
        self.assertEqual(r.returncode, 4)
        self.assertIn("does not exist", r.stderr)

    def test_reset_delete_and_remove(self):
        topic, g = "cli-reset", "rg"
        with kwire.Conn(self.broker.port) as c:
            kwire.create_topics(c, [(topic, 2, 1)])
            for p in range(2):
                self.assertEqual(produce(c, topic, p, batch(-1, -1, -1, [b"x"] * 10))[0], 0)
            delete_records(c, 2, {topic: [(1, 3)]})

        def committed():
            with kwire.Conn(self.broker.port) as c:
                got = kwire.offset_fetch(c, 5, g, {topic: [0, 1]})
            return [got[(topic, p)][0] for p in (0, 1)]

        def reset(*args, rc=0):
            r = run("groups", "reset-offsets", g, *args, "--bootstrap-server", self.bs)
            self.assertEqual(r.returncode, rc, (args, r.stdout, r.stderr))
            return r

        def new_offsets(r):
            return [int(line.split()[3]) for line in r.stdout.splitlines()
                    if line.startswith(g + " ")]

        # a group that never existed may be reset (Kafka: state Dead)
        r = reset("--topic", topic, "--to-earliest")
        self.assertEqual(new_offsets(r), [0, 3])
        self.assertIn("Dry run", r.stdout)
        self.assertEqual(committed(), [-1, -1])          # dry run: nothing changed
        reset("--topic", topic, "--to-offset", "5", "--execute")
        self.assertEqual(committed(), [5, 5])
        self.assertEqual(new_offsets(reset("--all-topics", "--shift-by", "-4")), [1, 3])
        self.assertEqual(new_offsets(reset("--topic", topic + ":1", "--to-offset", "99")), [10])
        self.assertEqual(new_offsets(reset("--all-topics", "--to-latest")), [10, 10])
        self.assertEqual(new_offsets(reset("--all-topics", "--to-current")), [5, 5])
        self.assertEqual(new_offsets(reset("--all-topics", "--to-datetime",
                                           "2999-01-01T00:00:00")), [10, 10])
        self.assertEqual(new_offsets(reset("--all-topics", "--to-datetime",
                                           "2000-01-01T00:00:00.000Z")), [0, 3])
        self.assertEqual(new_offsets(reset("--all-topics", "--by-duration", "P1DT2H")), [0, 3])
        csv = reset("--all-topics", "--shift-by", "2", "--export").stdout
        self.assertEqual(csv, "%s,0,7\n%s,1,7\n" % (topic, topic))
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write(csv.replace(",7\n", ",8\n", 1))
        self.addCleanup(os.unlink, f.name)
        j = json.loads(reset("--from-file", f.name, "--execute", "--json").stdout)
        self.assertEqual([x["new_offset"] for x in j["partitions"]], [8, 7])
        self.assertEqual(committed(), [8, 7])
        # bad input
        for args, want in ((["--all-topics"], "name one of"),
                           (["--to-latest"], "--topic"),
                           (["--all-topics", "--to-latest", "--to-earliest"], "cannot go together"),
                           (["--all-topics", "--to-datetime", "yesterday"], "--to-datetime"),
                           (["--all-topics", "--by-duration", "1 day"], "--by-duration"),
                           (["--topic", topic + ":x", "--to-latest"], "bad partition list")):
            self.assertIn(want, reset(*args, rc=2).stderr)
        for args, want in ((["--all-topics", "--to-datetime", "2024-02-30T00:00:00"],
                            "--to-datetime"),
                           (["--all-topics", "--by-duration", "PT"], "--by-duration")):
            self.assertIn(want, reset(*args, rc=2).stderr)
        for content, status, want in (
                ("%s,0,8\n%s;1;7\n" % (topic, topic), 2, "%s:2" % f.name),
                ("%s,0,8,9\n" % topic, 2, "%s:1: expected topic,partition,offset" % f.name),
                ("%s,0,-1\n" % topic, 2, "%s:1" % f.name),
                ("", 4, "no partitions to reset"),
                ("%s,0,8\nno-such-topic,0,1\n" % topic, 4, "topic 'no-such-topic' does not"),
                ("%s,5,1\n" % topic, 4, "topic '%s' has no partition 5 (it has 2)" % topic)):
            with open(f.name, "w") as bad:
                bad.write(content)
            r = reset("--from-file", f.name, "--execute", rc=status)
            self.assertIn(want, r.stderr, content)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertEqual(committed(), [8, 7])    # nothing changed
        self.assertIn("has no partition 7",
                      reset("--topic", topic + ":0,7", "--to-earliest", rc=4).stderr)
        self.assertIn("does not exist",
                      reset("--topic", "no-such-topic", "--to-earliest", rc=4).stderr)
        # a progress line on a terminal, erased before the table
        rc, out, err = on_a_terminal([CLI, "groups", "reset-offsets", g, "--all-topics",
                                      "--to-earliest", "--bootstrap-server", self.bs])
        self.assertEqual(rc, 0)
        self.assertIn(b"\rcohort: reset-offsets: log start offsets of 0 of 2 partitions", err)
        self.assertTrue(err.endswith(b"\r\x1b[K"), err)
        # refused while the group has a member
        p = subprocess.Popen([CLI, "consume", topic, "--group", g, "--property",
                              "group.instance.id=inst-1", "--bootstrap-server", self.bs],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                state, _ = self.table("groups", "describe", g, "--state")
                if state[1][-2:] == ["Stable", "1"]:
                    break
                time.sleep(0.3)
            r = reset("--all-topics", "--to-earliest", "--execute", rc=5)
            self.assertIn("can only be reset if the group '%s' is inactive" % g, r.stderr)
            # not reset to [0, 3] (the member may have committed further on)
            self.assertTrue(all(o >= 7 for o in committed()), committed())
            r = run("groups", "delete", g, "--bootstrap-server", self.bs)
            self.assertEqual(r.returncode, 5, r.stderr)
            r = run("groups", "remove-members", g, "--instance-id", "nobody",
                    "--bootstrap-server", self.bs)
            self.assertEqual(r.returncode, 4, r.stderr)
            r = run("groups", "remove-members", g, "--instance-id", "inst-1",
                    "--bootstrap-server", self.bs)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("Removed member 'inst-1'", r.stdout)
        finally:
            p.send_signal(signal.SIGTERM)
            p.communicate(timeout=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            state, _ = self.table("groups", "describe", g, "--state")
            if state[1][-2] == "Empty":
                break
            time.sleep(0.3)
        r = run("groups", "delete-offsets", g, "--topic", topic + ":1",
                "--bootstrap-server", self.bs)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split()[3:], [topic, "1", "Successful"])
        self.assertEqual(committed()[1], -1)
        r = run("groups", "delete", g, "--bootstrap-server", self.bs)
        self.assertEqual((r.returncode, r.stdout.strip()),
                         (0, "Deletion of requested consumer groups ('%s') was successful." % g),
                         r.stderr)
        r = run("groups", "delete", g, "--bootstrap-server", self.bs)
        self.assertEqual(r.returncode, 4, r.stderr)

    def test_unreachable_broker(self):
        # every kind of command: an admin call, the producer, a group member
        # (which would otherwise wait for the broker forever), health
        for args in (["topics", "list"], ["produce", TOPIC], ["consume", TOPIC, "--group", "u"],
                     ["consume", TOPIC], ["groups", "health", "u", "--window", "1s"]):
            t0 = time.monotonic()
            r = subprocess.run([CLI] + args + ["--bootstrap-server", "127.0.0.1:1",
                                               "--timeout-ms", "1000"],
                               input="x\n", capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 3, (args, r.stdout, r.stderr))
            self.assertLess(time.monotonic() - t0, 30)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn("no broker answered at 127.0.0.1:1 within 1000 ms", r.stderr)

    def test_bad_command_lines(self):
        cases = [
            (["nope"], "unknown command 'nope'"),
            (["consume"], "'consume' needs TOPIC..."),
            (["consume", "t", "--bogus"], "unknown option '--bogus' for 'consume'"),
            (["consume", "t", "-x"], "unknown option '-x'"),
            (["consume", "t", "--group"], "--group needs a value"),
            (["consume", "t", "--group", "g", "--count", "0"], "--count: expected an integer"),
            (["consume", "t", "--group", "g", "--count", "ten"], "--count: expected an integer"),
            (["consume", "t", "--group", "g", "--from", "never"], "--from: expected earliest"),
            (["consume", "t", "--from", "2024-02-30T00:00:00"], "--from: expected earliest"),
            (["consume", "t", "--from", "2024-01-01T10:00:00+5"], "--from: expected earliest"),
            (["consume", "t", "--from", "-3"], "--from: expected earliest"),
            (["consume", "t", "--offset", "2024-01-01T00:00:00"], "--offset: expected"),
            (["consume", "t", "--from", "1", "--offset", "2"], "give one"),
            (["consume", "t", "--group", "g", "--offset", "2"], "--offset is for consuming"),
            (["consume", "t", "--group", "g", "--partition", "0"], "drop --group"),
            (["consume", "t", "--strategy", "range"], "it needs --group"),
            (["consume", "t", "--partition", "0,x"], "--partition: expected P"),
            (["consume", "t", "--group", "g", "--format", "%q"], "unknown conversion '%q'"),
            (["consume", "t", "--group", "g", "--group", "h"], "--group given twice"),
            (["consume", "t", "--group", "g", "--property", "nokey"], "expected KEY=VALUE"),
            (["consume", "t", "--group", "g", "--property", "no.such.key=1"], "no.such.key"),
            (["consume", "t", "--group", "g", "--timeout-ms", "-5"], "--timeout-ms"),
            (["consume", "t", "--group", "g", "--bootstrap-server", ""], "bootstrap"),
            (["consume", "t", "--json=yes"], "--json takes no value"),
            (["groups", "health", "g", "--window", "5x"], "--window: expected a duration"),
            (["groups", "health", "g", "--window", "PT"], "--window: expected a duration"),
            (["groups", "health", "g", "--window", "1m", "--interval", "2m"], "--interval"),
            (["groups", "describe", "g", "--members", "--state"], "two views"),
            (["groups", "watch", "g", "--interval", "0"], "--interval: expected a duration"),
            (["completion", "zsh"], "only 'bash'"),
            (["help", "nope"], "no command or topic 'nope'"),
            (["help", "--mab"], "unknown option '--mab'"),
        ]
        for args, want in cases:
            r = run(*args)
            self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
            self.assertIn(want, r.stderr, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, (args, r.stderr))

    def test_command_config(self):
        with tempfile.NamedTemporaryFile("w", suffix=".properties", delete=False) as f:
            f.write("# client settings\nclient.id = cli-test\nsession.timeout.ms: lots\n")
        self.addCleanup(os.unlink, f.name)
        r = run("consume", TOPIC, "--group", "g5", "--command-config", f.name)
        self.assertEqual(r.returncode, 2)
        self.assertIn("%s:3" % f.name, r.stderr)
        self.assertIn("session.timeout.ms", r.stderr)
        r = run("consume", TOPIC, "--group", "g5", "--command-config", "/nonexistent.props")
        self.assertEqual(r.returncode, 2)
        self.assertIn("/nonexistent.props", r.stderr)
        with open(f.name, "w") as g:
            g.write("client.id=cli-test\n")
        r = run("consume", TOPIC, "--group", "g5", "--from", "earliest", "--count", "1",
                "--command-config", f.name, env={"COHORT_BOOTSTRAP": self.bs})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(r.stdout.splitlines()), 1)

    def test_help_topics_and_man_page(self):
        r = run("help", "lag")
        self.assertEqual(r.returncode, 0)
        self.assertIn("LAG = max(0, LOG-END-OFFSET - max(CURRENT-OFFSET, LOG-START-OFFSET))",
                      r.stdout)
        self.assertTrue(all(len(line) <= 76 for line in r.stdout.splitlines()), r.stdout)
        top = run("help").stdout
        for topic in ("lag", "health", "format", "time", "config", "exit-status"):
            self.assertIn("\n  %s " % topic, top)
            self.assertEqual(run("help", topic).returncode, 0, topic)
        codes = run("help", "exit-status").stdout
        self.assertEqual([line.split()[0] for line in codes.splitlines()[1:]],
                         [str(i) for i in range(9)])
        # each command's --help lists the statuses it can end with
        health = run("groups", "health", "--help").stdout.split("Exit status:\n")[1]
        self.assertEqual([line.split()[0] for line in health.splitlines()],
                         ["0", "1", "2", "3", "4", "6", "7"])
        plain = run("topics", "list", "--help").stdout.split("Exit status:\n")[1]
        self.assertEqual([line.split()[0] for line in plain.splitlines()],
                         ["0", "1", "2", "3", "4", "5"])
        # the man page: written by the build from the same table, valid roff
        man = run("help", "--man")
        self.assertEqual(man.returncode, 0, man.stderr)
        with open(os.path.join(os.path.dirname(CLI), "cohort.1")) as f:
            self.assertEqual(f.read(), man.stdout)
        lint = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z"], input=man.stdout,
                              capture_output=True, text=True)
        self.assertEqual((lint.returncode, lint.stderr), (0, ""))
        commands = top.split("Commands:\n")[1].split("\n\n")[0].splitlines()
        self.assertGreater(len(commands), 15)
        for line in commands:   # "  words usage<padding> summary"
            self.assertIn('.SS "cohort %s"' % line[2:36].strip(), man.stdout, line)
        self.assertIn("\\fB\\-\\-exit\\-at\\-end\\fR", man.stdout)
        # make install's step installs it beside the tool
        with tempfile.TemporaryDirectory() as prefix:
            r = subprocess.run(["cmake", "--install", os.path.dirname(CLI), "--prefix", prefix],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(prefix, "share", "man", "man1", "cohort.1")) as f:
                self.assertEqual(f.read(), man.stdout)
            self.assertTrue(os.access(os.path.join(prefix, "bin", "cohort"), os.X_OK))

    def test_help_and_completion_come_from_the_table(self):
        r = run("consume", "--help")
        self.assertEqual(r.returncode, 0)
        for opt in ("--group G", "--strategy S", "--from", "--format FMT", "--count N",
                    "--property KEY=VALUE", "--bootstrap-server", "--json", "Exit status"):
            self.assertIn(opt, r.stdout)
        self.assertEqual(run("help", "consume").stdout, r.stdout)
        top = run("help")
        self.assertEqual(top.returncode, 0)
        self.assertIn("consume TOPIC...", top.stdout)
        comp = run("completion", "bash")
        self.assertEqual(comp.returncode, 0)
        script = comp.stdout + "\nCOMP_WORDS=(cohort consume --gr); COMP_CWORD=2; _cohort; " \
                               "echo \"${COMPREPLY[*]}\"\n" \
                               "COMP_WORDS=(cohort co); COMP_CWORD=1; _cohort; " \
                               "echo \"${COMPREPLY[*]}\"\n"
        out = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
        self.assertEqual(out.stdout.splitlines(), ["--group", "consume completion"], out.stderr)


if __name__ == "__main__":
    main()
