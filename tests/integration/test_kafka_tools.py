#!/usr/bin/env python3
"""Apache Kafka's own command-line tools (4.x jars, tools/kafka-ref.sh tool)
against cohortd and against Apache Kafka 4.x itself, the same command
sequence on both in one run: kafka-topics, kafka-console-producer and
-consumer, and kafka-consumer-groups (--list [--state], --describe with
--members [--verbose], --state, --offsets, --all-groups; --reset-offsets with
every scenario, --dry-run, --execute and --export/--from-file; --delete-offsets;
--delete), on an Empty group, a Stable group with a Java consumer in it and a
group that does not exist. Exit code, stdout and stderr (less log lines) must
be the same after normalising what may differ: ports, member ids' random part,
topic ids, column padding. Known values (offsets after each reset) are checked
on cohortd's output too."""
import atexit
import os
import re
import shutil
import sys
import tempfile
import time
import unittest
from datetime import datetime, timezone

import harness
from java_clients import JavaConsumer, KafkaTools, check_installed, java_produce
from kafka_ref import VersusKafka, kafka_tool
from test_group_helpers import GROUP_SETTINGS

SETTINGS = dict(GROUP_SETTINGS)
# A log record ("[%d] %p %m (%c)", tools/kafka/log4j2-tools.properties) may span
# lines; it ends at the line that ends with its logger's name in parentheses.
LOG_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d [0-9:,]+\] (TRACE|DEBUG|INFO|WARN|ERROR) ")
LOG_END = re.compile(r"\([\w.$]+\)$")
# Stack frames that only ToolRunner's reflective call adds to a tool's trace.
RUNNER_FRAME = re.compile(r"^\s*at (java\.base/)?(jdk\.internal\.reflect\.|java\.lang\.reflect\.Method\.invoke"
                          r"|cohortit\.ToolRunner|java\.lang\.Thread\.run)")

# Where cohortd answers differently and why (not fixed here; see the report).
KNOWN_DIFFERENCES = {
    "describe missing": "DescribeGroups v6 (KIP-1043) not served: Kafka 4.x reports GROUP_ID_NOT_FOUND "
                        "(the tool prints the exception), cohortd a Dead group (the tool: does not exist)",
    "describe missing state": "the same (DescribeGroups v6)",
    "topics describe ttp": "DescribeTopicPartitions (API 75) not served, so the tool prints Elr N/A; and "
                           "Kafka 4.x's controller keeps a cluster-wide min.insync.replicas=1 (ELR, KIP-966) "
                           "that the tool shows as a topic config (README: one broker, no replication)",
}

# Commands also run as separate JVMs (tools/kafka-ref.sh tool) to check that
# ToolRunner's in-JVM runs print and exit exactly as the real tool does.
PROCESS_CHECK = ("topics create again", "list state", "describe tg-active members verbose",
                 "reset earliest dry-run", "reset no action", "describe missing", "delete active")


def iso(ms):
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def normalise(text, port):
    out = []
    in_log = False
    for line in text.splitlines():
        if LOG_LINE.match(line) or in_log:
            in_log = not LOG_END.search(line)
            continue
        if RUNNER_FRAME.match(line):
            continue
        line = line.replace("127.0.0.1:%d" % port, "127.0.0.1:<port>")
        line = re.sub(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "-<uuid>", line)
        line = re.sub(r"TopicId: \S+", "TopicId: <id>", line)
        line = " ".join(line.split())
        if line:
            out.append(line)
    return out


def table(lines, header_word):
    """Rows of a whitespace table after its header line (the one starting with HEADER_WORD)."""
    rows, cols = [], None
    for l in lines:
        w = l.split()
        if w and w[0] == header_word:
            cols = w
            continue
        if cols and len(w) >= 3:
            rows.append(dict(zip(cols, w)))
    return rows


class Sequence:
    """Runs the tool commands against one broker, keeping (name, rc, stdout, stderr)."""

    def __init__(self, bootstrap, port, runner):
        self.bootstrap = bootstrap
        self.port = port
        self.runner = runner
        self.results = []
        self.process_mismatch = []
        self.t0 = time.monotonic()

    def tool(self, name, tool, *args, input=None, sort=False):
        argv = ["--bootstrap-server", self.bootstrap] + list(args)
        p = self.runner.run(tool, *argv, input=input)
        got = (p.returncode, normalise(p.stdout, self.port), normalise(p.stderr, self.port))
        if name in PROCESS_CHECK:
            q = kafka_tool("4", tool, *argv, input=input, timeout=180)
            real = (q.returncode, normalise(q.stdout, self.port), normalise(q.stderr, self.port))
            if real != got:
                self.process_mismatch.append((name, got, real))
        out = sorted(got[1]) if sort else got[1]
        self.results.append((name, got[0], out, got[2]))
        print("  %6.1f s  %s" % (time.monotonic() - self.t0, name), file=sys.stderr)
        return out

    def groups(self, name, *args, **kw):
        return self.tool(name, "kafka-consumer-groups", *args, **kw)

    def reset(self, name, *args):
        return self.groups(name, "--reset-offsets", "--group", "tg", *args)


def run_sequence(bootstrap, port, base_ts, workdir):
    runner = KafkaTools()
    procs = [runner]
    s = Sequence(bootstrap, port, runner)
    try:
        # ---- kafka-topics
        s.tool("topics create", "kafka-topics", "--create", "--topic", "tt", "--partitions", "3",
               "--replication-factor", "1")
        s.tool("topics create again", "kafka-topics", "--create", "--topic", "tt", "--partitions", "3")
        s.tool("topics create bad name", "kafka-topics", "--create", "--topic", "bad/name")
        s.tool("topics create rf 3", "kafka-topics", "--create", "--topic", "t-rf3", "--replication-factor", "3")
        s.tool("topics create tts", "kafka-topics", "--create", "--topic", "tts", "--partitions", "2")
        s.tool("topics create ttp", "kafka-topics", "--create", "--topic", "ttp", "--partitions", "1")
        s.tool("topics alter ttp", "kafka-topics", "--alter", "--topic", "ttp", "--partitions", "3")
        s.tool("topics alter ttp fewer", "kafka-topics", "--alter", "--topic", "ttp", "--partitions", "2")
        s.tool("topics describe ttp", "kafka-topics", "--describe", "--topic", "ttp")
        s.tool("topics delete ttp", "kafka-topics", "--delete", "--topic", "ttp")
        s.tool("topics list", "kafka-topics", "--list")
        s.tool("topics describe missing", "kafka-topics", "--describe", "--topic", "nosuch")

        # ---- console producer and consumer
        lines = "".join("k%d:v%d\n" % (i, i) for i in range(30))
        s.tool("console-producer", "kafka-console-producer", "--topic", "tt",
               "--reader-property", "parse.key=true", "--reader-property", "key.separator=:", input=lines)
        s.tool("console-consumer group", "kafka-console-consumer", "--topic", "tt", "--group", "tg",
               "--from-beginning", "--max-messages", "30", "--formatter-property", "print.key=true",
               "--formatter-property", "print.partition=true", sort=True)
        s.tool("console-consumer partition offset", "kafka-console-consumer", "--topic", "tt",
               "--partition", "1", "--offset", "2", "--max-messages", "3",
               "--formatter-property", "print.offset=true", "--formatter-property", "print.key=true")
        java_produce(bootstrap, "tts", 14, 2, timestamps=base_ts)

        # ---- a Stable group: one Java consumer that committed what it read
        c = JavaConsumer(bootstrap, "tg-active", ["tt"], name="tg-active-c")
        procs.append(c)
        c.wait(lambda e: len(c.of("msg")) >= 30, 90, "30 records")
        n = len(c.events)
        c.send("commit")
        c.wait(lambda e: e.get("ev") == "commit", 60, "commit", start=n)

        # ---- kafka-consumer-groups: list and describe
        # (list order is the broker's map order on both: compared sorted)
        s.groups("list", "--list", sort=True)
        s.groups("list state", "--list", "--state", sort=True)
        s.groups("list state Empty", "--list", "--state", "Empty", sort=True)
        s.groups("list state Stable", "--list", "--state", "Stable", sort=True)
        s.groups("list type", "--list", "--type", sort=True)
        s.groups("list type classic", "--list", "--type", "classic", sort=True)
        for g in ("tg", "tg-active"):
            s.groups("describe %s" % g, "--describe", "--group", g)
            s.groups("describe %s members" % g, "--describe", "--group", g, "--members")
            s.groups("describe %s members verbose" % g, "--describe", "--group", g, "--members", "--verbose")
            s.groups("describe %s state" % g, "--describe", "--group", g, "--state")
            s.groups("describe %s state verbose" % g, "--describe", "--group", g, "--state", "--verbose")
            s.groups("describe %s offsets" % g, "--describe", "--group", g, "--offsets")
        s.groups("describe all groups", "--describe", "--all-groups", sort=True)
        s.groups("describe missing", "--describe", "--group", "nosuch")
        s.groups("describe missing state", "--describe", "--group", "nosuch", "--state")

        # ---- --reset-offsets on the Empty group tg
        s.reset("reset no action", "--topic", "tt", "--to-earliest")
        s.reset("reset earliest dry-run", "--topic", "tt", "--to-earliest", "--dry-run")
        s.reset("reset earliest", "--topic", "tt", "--to-earliest", "--execute")
        s.groups("after earliest", "--describe", "--group", "tg", "--offsets")
        s.reset("reset latest", "--all-topics", "--to-latest", "--execute")
        s.reset("reset to-offset", "--topic", "tt:0,1", "--to-offset", "2", "--execute")
        s.groups("after to-offset", "--describe", "--group", "tg", "--offsets")
        s.reset("reset to-offset past end", "--topic", "tt:2", "--to-offset", "1000", "--dry-run")
        s.reset("reset current", "--all-topics", "--to-current", "--dry-run")
        s.reset("reset shift -1", "--topic", "tt", "--shift-by", "-1", "--execute")
        s.groups("after shift", "--describe", "--group", "tg", "--offsets")
        s.reset("reset shift +100", "--topic", "tt", "--shift-by", "100", "--dry-run")
        s.reset("reset shift -100", "--topic", "tt", "--shift-by", "-100", "--dry-run")
        s.reset("reset datetime", "--topic", "tts", "--to-datetime", iso(base_ts + 3500), "--execute")
        s.reset("reset datetime past", "--topic", "tts", "--to-datetime", iso(base_ts - 3600000), "--dry-run")
        s.reset("reset datetime future", "--topic", "tts", "--to-datetime", iso(base_ts + 7200000),
                "--dry-run")
        s.reset("reset duration long", "--topic", "tts", "--by-duration", "PT30M", "--dry-run")
        s.reset("reset duration zero", "--topic", "tts", "--by-duration", "PT0S", "--dry-run")
        s.groups("after datetime", "--describe", "--group", "tg", "--offsets")
        s.reset("reset export", "--topic", "tt", "--to-offset", "1", "--dry-run", "--export")
        csv = os.path.join(workdir, "offsets.csv")
        with open(csv, "w") as f:
            f.write("tt,0,3\ntt,1,4\ntt,2,5\n")
        s.reset("reset from-file", "--from-file", csv, "--execute")
        s.groups("after from-file", "--describe", "--group", "tg", "--offsets")
        s.reset("reset unknown partition", "--topic", "tt:7", "--to-earliest", "--dry-run")
        s.groups("reset active group", "--reset-offsets", "--group", "tg-active", "--topic", "tt",
                 "--to-earliest", "--execute")
        s.groups("reset missing group", "--reset-offsets", "--group", "nosuch", "--topic", "tt",
                 "--to-earliest", "--dry-run")

        # ---- --delete-offsets and --delete
        s.groups("delete-offsets", "--delete-offsets", "--group", "tg", "--topic", "tt:0")
        s.groups("delete-offsets active", "--delete-offsets", "--group", "tg-active", "--topic", "tt")
        s.groups("delete-offsets missing", "--delete-offsets", "--group", "nosuch", "--topic", "tt")
        s.groups("after delete-offsets", "--describe", "--group", "tg", "--offsets")
        s.groups("delete active", "--delete", "--group", "tg-active")
        s.groups("delete", "--delete", "--group", "tg")
        s.groups("delete missing", "--delete", "--group", "nosuch")
        c.close("close-leave")
        s.groups("delete now empty", "--delete", "--group", "tg-active")
        s.groups("list end", "--list", sort=True)
        runner.close()
    finally:
        for p in procs:
            p.kill()
    return s


class KafkaToolsDifferential(VersusKafka):
    settings = SETTINGS

    @classmethod
    def setUpClass(cls):
        check_installed()
        cls.workdir = tempfile.mkdtemp(prefix="cohort-tools-")
        atexit.register(shutil.rmtree, cls.workdir, True)
        super().setUpClass()

    @classmethod
    def scenario(cls, broker, base_ts):
        return run_sequence(broker.bootstrap, broker.port, base_ts, cls.workdir)

    def test_same_output_as_kafka(self):
        ours_all, theirs_all = self.ours.results, self.theirs.results
        self.assertEqual([r[0] for r in ours_all], [r[0] for r in theirs_all])
        diffs = []
        for ours, theirs in zip(ours_all, theirs_all):
            if ours[1:] != theirs[1:]:
                if ours[0] in KNOWN_DIFFERENCES:
                    print("known difference, %s: %s" % (ours[0], KNOWN_DIFFERENCES[ours[0]]), file=sys.stderr)
                    continue
                diffs.append("%s:\n  cohortd: rc %d\n    %s\n    stderr: %s\n  kafka:   rc %d\n    %s\n    stderr: %s"
                             % (ours[0], ours[1], "\n    ".join(ours[2]), ours[3],
                                theirs[1], "\n    ".join(theirs[2]), theirs[3]))
        self.assertEqual(diffs, [], "\n".join(diffs))

    def test_runner_prints_as_the_tool_does(self):
        for seq in (self.theirs, self.ours):
            self.assertEqual(seq.process_mismatch, [])

    def out(self, name):
        return {r[0]: r for r in self.ours.results}[name]

    def offsets(self, name):
        return {(r["TOPIC"], int(r["PARTITION"])): r["CURRENT-OFFSET"]
                for r in table(self.out(name)[2], "GROUP")}

    def test_known_values(self):
        self.assertEqual(self.out("topics create")[2], ["Created topic tt."])
        consumed = self.out("console-consumer group")[2]
        self.assertEqual(len([l for l in consumed if l.startswith("Partition:")]), 30)
        committed = table(self.out("describe tg offsets")[2], "GROUP")
        self.assertEqual(sum(int(r["CURRENT-OFFSET"]) for r in committed), 30)
        self.assertTrue(all(r["CURRENT-OFFSET"] == r["LOG-END-OFFSET"] for r in committed), committed)
        self.assertEqual(self.offsets("after earliest"), {("tt", p): "0" for p in range(3)})
        after = self.offsets("after to-offset")
        self.assertEqual((after[("tt", 0)], after[("tt", 1)]), ("2", "2"))
        self.assertEqual(self.offsets("after from-file"), {("tt", 0): "3", ("tt", 1): "4", ("tt", 2): "5",
                                                           ("tts", 0): "2", ("tts", 1): "2"})


if __name__ == "__main__":
    harness.main()
