"""Apache Kafka's Java client (kafka-clients 4.x) in the tests: the drivers in
java/cohortit/ (compiled at build time against the jars tools/kafka-ref.sh
installed; JAVA_IT_CLASSES names the class dir) run as child processes that
print one JSON event a line (not a test itself).

- JavaConsumer: one KafkaConsumer (classic protocol), commands on stdin.
- JavaAdmin: the AdminClient, one command and one JSON answer at a time.
- java_produce, java_produce_topics: a KafkaProducer run to completion.
"""
import atexit
import base64
import functools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import harness
import kafka_ref

JAVA = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"
# Short-lived client JVMs: small heap, C1 only (starts in about a second here).
JVM_FLAGS = ["-Xmx256m"] + kafka_ref.TEST_JVM_OPTS.split() + ["-Djava.awt.headless=true",
             "-Dlog4j2.configurationFile=" + os.path.join(kafka_ref.ROOT, "tools", "kafka",
                                                           "log4j2-tools.properties")]

ASSIGNORS = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "sticky": "org.apache.kafka.clients.consumer.StickyAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}


# The drivers' stderr files, removed when the test process exits (COHORT_IT_KEEP=1 keeps them).
_LOG_DIR = tempfile.mkdtemp(prefix="cohort-java-")
if not os.environ.get("COHORT_IT_KEEP"):
    atexit.register(shutil.rmtree, _LOG_DIR, True)


def check_installed():
    """An error (never a skip) when the JDK, the jars or the compiled drivers are missing."""
    classes = os.environ.get("JAVA_IT_CLASSES", "")
    if not os.access(JAVA, os.X_OK):
        raise AssertionError("no JVM at %s: tools/install-deps.sh test installs it" % JAVA)
    if not classes or not os.path.isdir(os.path.join(classes, "cohortit")):
        raise AssertionError("JAVA_IT_CLASSES=%r has no compiled drivers: run tools/install-deps.sh "
                             "test, then re-run cmake and build (target it_java_classes)" % classes)
    kafka_ref.classpath("4")


@functools.lru_cache(maxsize=None)
def _kafka_jvm():
    """Kafka 4's class path and archive flags, asked of kafka-ref.sh once per process."""
    return kafka_ref.classpath("4"), tuple(kafka_ref.jvm_opts("4"))


def java_argv(main, *args):
    # Kafka's jars first: the class-data archive maps only for a class path that
    # starts with the one it was made from.
    cp, opts = _kafka_jvm()
    return ([JAVA] + JVM_FLAGS + list(opts) + ["-cp", cp + ":" + os.environ["JAVA_IT_CLASSES"],
                                               "cohortit." + main] + [str(a) for a in args])


class JavaClientsTestCase(harness.BrokerTestCase):
    """A broker per class and Java driver processes per test: those put in
    self.procs are killed when the test ends."""

    @classmethod
    def setUpClass(cls):
        check_installed()
        super().setUpClass()

    def setUp(self):
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            p.kill()


class JavaProcess:
    """A driver process whose stdout JSON lines are collected on a thread."""

    def __init__(self, name, argv):
        self.name = name
        self.events = []
        self.cv = threading.Condition()
        self.stderr_path = os.path.join(_LOG_DIR, "%s.%x.stderr" % (name, id(self)))
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, preexec_fn=harness._pdeathsig)
        self._t = threading.Thread(target=self._reader, daemon=True)
        self._t.start()

    def _reader(self):
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").strip()
            try:
                ev = json.loads(line)
            except ValueError:
                ev = {"ev": "stdout", "line": line}
            with self.cv:
                self.events.append(ev)
                self.cv.notify_all()
        with self.cv:
            self.events.append({"ev": "eof"})
            self.cv.notify_all()

    def send(self, line):
        self.proc.stdin.write((line + "\n").encode())
        self.proc.stdin.flush()

    def wait(self, pred, timeout=60.0, what="event", start=0):
        """The first event from index START on for which pred(event) holds."""
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                for ev in self.events[start:]:
                    if pred(ev):
                        return ev
                left = deadline - time.monotonic()
                if left <= 0 or (self.events and self.events[-1].get("ev") == "eof" and not pred(self.events[-1])):
                    raise AssertionError("%s: no %s within %.0f s; last events:\n%s\nstderr:\n%s"
                                         % (self.name, what, timeout,
                                            "\n".join(json.dumps(e) for e in self.events[-12:]),
                                            self.stderr_tail()))
                self.cv.wait(min(left, 0.2))

    def stderr_tail(self, n=30):
        try:
            with open(self.stderr_path, "rb") as f:
                return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-n:])
        except OSError:
            return ""

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)
        self._close_files()

    def _close_files(self):
        for f in (self.proc.stdin, self._err):
            try:
                f.close()
            except (OSError, ValueError):
                pass
        self._t.join(10)
        self.proc.stdout.close()


class JavaConsumer(JavaProcess):
    def __init__(self, bootstrap, group, topics, assignor="range", instance=None, session_ms=6000,
                 commit_on_revoke=True, name=None, props=None, protocol="classic", wait_go=False):
        """protocol "consumer" (KIP-848): ASSIGNOR names the broker's assignor
        (uniform, range) and the broker sets the session and heartbeat times
        (the client refuses session_ms and the assignment strategy then).
        wait_go: the JVM starts now, the consumer subscribes at go()."""
        self.name = name or "jc-%x" % id(self)
        args = [bootstrap, group, ",".join(topics)]
        if commit_on_revoke:
            args.append("--commit-on-revoke")
        if wait_go:
            args.append("--wait-go")
        if protocol == "consumer":
            p = {"group.protocol": "consumer", "group.remote.assignor": assignor,
                 "client.id": self.name}
        else:
            p = {"partition.assignment.strategy": ASSIGNORS[assignor], "client.id": self.name,
                 "session.timeout.ms": session_ms, "heartbeat.interval.ms": max(100, session_ms // 6)}
        if instance:
            p["group.instance.id"] = instance
        p.update(props or {})
        args += ["%s=%s" % kv for kv in p.items()]
        super().__init__(self.name, java_argv("ConsumerDriver", *args))

    def go(self, timeout=120.0):
        """A wait_go consumer subscribes, once its JVM has started."""
        self.wait(lambda e: e.get("ev") == "started", timeout, "the JVM's start")
        self.send("go")

    # -- views of the events
    def of(self, *kinds):
        with self.cv:
            return [e for e in self.events if e.get("ev") in kinds]

    def rebalance_events(self):
        return [(e["ev"], frozenset(e["parts"])) for e in self.of("assigned", "revoked", "lost")]

    def assignment(self):
        evs = self.of("assigned", "revoked", "lost")
        return set(evs[-1]["assignment"]) if evs else set()

    def member(self):
        evs = self.of("assigned")
        return evs[-1]["member"] if evs else None

    def consumed(self):
        """[(tp, offset)] in consumption order."""
        return [(e["tp"], e["offset"]) for e in self.of("msg")]

    def wait_assignment(self, parts, timeout=60.0):
        """Until this consumer's latest assignment is exactly PARTS (a set of "t:p")."""
        return self.wait(lambda e: e.get("ev") in ("assigned", "revoked", "lost") and set(e["assignment"]) == set(parts)
                         and self.assignment() == set(parts), timeout, "assignment %s" % sorted(parts))

    def close(self, how="close", timeout=60.0):
        n = len(self.events)
        self.send(how)
        self.wait(lambda e: e["ev"] == "closed", timeout, "closed", start=n)
        rc = self.proc.wait(timeout)
        self._close_files()
        return rc

    def stop_process(self):
        os.kill(self.proc.pid, signal.SIGSTOP)

    def continue_process(self):
        os.kill(self.proc.pid, signal.SIGCONT)


class JavaAdmin(JavaProcess):
    def __init__(self, bootstrap, name="admin"):
        super().__init__(name, java_argv("AdminDriver", bootstrap))
        self.wait(lambda e: e["ev"] == "ready", 60, "ready")

    def call(self, *words, timeout=90.0):
        """One command; its {"ok":..} or {"error":..} answer as a dict."""
        n = len(self.events)
        self.send(" ".join(str(w) for w in words))
        return self.wait(lambda e: "ok" in e or "error" in e, timeout, "answer to %s" % (words,), start=n)

    def ok(self, *words, timeout=90.0):
        r = self.call(*words, timeout=timeout)
        if "ok" not in r:
            raise AssertionError("%s: %s" % (" ".join(map(str, words)), r))
        return r["ok"]

    def close(self):
        self.send("quit")
        self.proc.wait(60)
        self._close_files()


def java_produce(bootstrap, topic, count, partitions, props=None, timestamps=None):
    """Produce COUNT records k<i>/v<i>, record i to partition i % PARTITIONS
    (timestamps=BASE: stamped BASE + (i % 7) * 1000); returns {"t:p": [first, last]}
    of the acknowledged offsets. java_produce_topics: several topics, one JVM."""
    return java_produce_topics(bootstrap, {topic: (count, partitions)}, props, timestamps)


def java_produce_topics(bootstrap, topics, props=None, timestamps=None):
    """java_produce for each TOPIC: (COUNT, PARTITIONS) of topics, in one producer."""
    extra = ["--timestamps", timestamps] if timestamps is not None else []
    names = list(topics)
    argv = java_argv("ProducerDriver", bootstrap, ",".join(names),
                     ",".join(str(topics[t][0]) for t in names),
                     ",".join(str(topics[t][1]) for t in names), *extra,
                     *["%s=%s" % kv for kv in (props or {}).items()])
    p = harness.run(argv, timeout=180)
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines or lines[-1]["ev"] != "produced":
        raise AssertionError("ProducerDriver exit %d: %s\n%s" % (p.returncode, p.stdout, p.stderr[-3000:]))
    return lines[-1]["offsets"]


class ToolResult:
    def __init__(self, rc, out, err):
        self.returncode, self.stdout, self.stderr = rc, out, err


class KafkaTools(JavaProcess):
    """Kafka's command-line tools run one after another in one JVM
    (java/cohortit/ToolRunner.java): run(name, *args) is what
    `tools/kafka-ref.sh tool 4 name args` prints and exits with."""

    def __init__(self, name="tools"):
        super().__init__(name, java_argv("ToolRunner"))
        self._classes = {}

    def main_class(self, tool):
        if tool not in self._classes:
            p = subprocess.run([kafka_ref.SCRIPT, "mainclass", "4", tool], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
            if p.returncode != 0:
                raise AssertionError(p.stderr)
            self._classes[tool] = p.stdout.strip()
        return self._classes[tool]

    def run(self, tool, *args, input=None, timeout=180.0):
        if any("\t" in a or "\n" in a for a in args):
            raise ValueError("tabs and newlines cannot pass through ToolRunner: %r" % (args,))
        stdin = base64.b64encode((input or "").encode()).decode()
        n = len(self.events)
        self.send("\t".join([self.main_class(tool), stdin] + list(args)))
        r = self.wait(lambda e: "rc" in e, timeout, "%s %s" % (tool, " ".join(args)), start=n)
        return ToolResult(r["rc"], r["out"], r["err"])

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(60)
        self._close_files()
