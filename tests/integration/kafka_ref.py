"""Apache Kafka itself as the reference broker in a test (stdlib only).

    from kafka_ref import KafkaRef

    k = KafkaRef("4", settings={"group.initial.rebalance.delay.ms": "0"})
    k.start()              # fresh KRaft dir, free 127.0.0.1 ports; returns when it serves
    k.bootstrap            # "127.0.0.1:PORT"
    k.tool("kafka-topics", "--bootstrap-server", k.bootstrap, "--list")  # CompletedProcess
    k.stop()               # SIGTERM, waits for the JVM to exit

"4" is the newest 4.x release, "3.9" the newest 3.9.x (it still serves the request
versions KIP-896 removed in 4.0); tools/kafka-ref.sh pins both and installs them
(tools/install-deps.sh test runs its install). A missing install is an error, not
a skip: make test installs it. Like harness.Broker, every broker started here
dies with the test process (PR_SET_PDEATHSIG, atexit, signal handlers) and its
temp dir is removed at exit (COHORT_IT_KEEP=1 keeps it); harness.main prints
its log tail when a test failed.
"""
import base64
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import harness

ROOT = os.path.dirname(os.path.dirname(harness.HERE))
SCRIPT = os.path.join(ROOT, "tools", "kafka-ref.sh")
START_TIMEOUT = 180.0   # a JVM on two shared cores under a parallel ctest
# A test's broker (and the Java drivers of java_clients.py): client compiler
# only and the serial collector (C2 and G1's threads cost a broker's start
# ~4 CPU-s more, and a test's load never needs them); benchmarks keep Kafka's
# own settings (kafka-ref.sh's default).
TEST_JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
STOP_TIMEOUT = 60.0
READY_LINE = "Kafka Server started"


class KafkaRefError(AssertionError):
    pass


def kafka_tool(version, name, *args, timeout=120, input=None):
    """Run one of Kafka's command-line tools (tools/kafka-ref.sh tool) from the
    installed jars; returns the CompletedProcess (text stdout and stderr)."""
    return subprocess.run([SCRIPT, "tool", version, name] + list(args),
                          input=input, stdin=None if input is not None else subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, preexec_fn=harness._pdeathsig)


def _script_output(*args):
    p = subprocess.run([SCRIPT] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if p.returncode != 0:
        raise KafkaRefError(p.stderr.strip())
    return p.stdout.strip()


def classpath(version="4"):
    """The installed jars of that release as a java class path ("DIR/libs/*")."""
    return _script_output("classpath", version)


def jvm_opts(version="4"):
    """The flags that map the release's class-data archive (kafka-ref.sh jvm-opts), for a
    JVM whose class path starts with classpath(version); [] when there is no archive."""
    return _script_output("jvm-opts", version).split()


class KafkaRef:
    """One single-node Apache Kafka (combined broker and controller, KRaft)."""

    def __init__(self, version="4", settings=None, name=None, env=None):
        self.version = version
        self.settings = dict(settings or {})
        self.name = name or "kafka-%s" % version
        self.workdir = tempfile.mkdtemp(prefix="cohort-kafka-")
        self.port = harness.free_port()
        self.controller_port = harness.free_port()
        self.proc = None
        self.env = env   # extra environment of kafka-ref.sh serve
        self.starts = 0
        self.stderr_path = None
        self._stderr_f = None
        harness._all.append(self)   # log tail on failure, workdir removed at exit

    @property
    def bootstrap(self):
        return "127.0.0.1:%d" % self.port

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout=START_TIMEOUT):
        """Format on first start, then run until the broker is unfenced and serving."""
        self.launch()
        return self.wait_ready(timeout)

    def launch(self):
        """Start the JVM (formatting on first start) without waiting for it."""
        if self.running():
            raise KafkaRefError("already running")
        self.starts += 1
        self.stderr_path = os.path.join(self.workdir, "server.%d.log" % self.starts)
        self._stderr_f = open(self.stderr_path, "wb")
        argv = [SCRIPT, "serve", self.version, self.workdir, str(self.port),
                str(self.controller_port)]
        argv += ["%s=%s" % kv for kv in self.settings.items()]
        env = dict(os.environ)
        env.setdefault("KAFKA_JVM_PERFORMANCE_OPTS", TEST_JVM_OPTS)
        env.update(self.env or {})
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self._stderr_f,
                                     stderr=subprocess.STDOUT, cwd=self.workdir, env=env,
                                     preexec_fn=harness._pdeathsig)
        harness._live.add(self)

    def wait_ready(self, timeout=START_TIMEOUT):
        """Until the launched broker logs that it started and takes connections."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                rc = self.proc.returncode
                self._reap()
                raise KafkaRefError("Kafka %s exited with %s during startup:\n%s"
                                    % (self.version, rc, self.stderr_tail()))
            if READY_LINE in self.log() and harness.can_connect(self.port):
                return self
            time.sleep(0.1)
        self._hard_kill()
        raise KafkaRefError("Kafka %s did not start within %.0f s:\n%s"
                            % (self.version, timeout, self.stderr_tail()))

    def stop(self, timeout=STOP_TIMEOUT):
        """SIGTERM (Kafka's controlled shutdown); SIGKILL and an error past the timeout."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._hard_kill()
                raise KafkaRefError("Kafka %s did not exit within %.0f s of SIGTERM:\n%s"
                                    % (self.version, timeout, self.stderr_tail()))
        rc = self.proc.returncode
        self._reap()
        return rc

    def tool(self, name, *args, timeout=120, input=None):
        return kafka_tool(self.version, name, *args, timeout=timeout, input=input)

    def crash(self):
        """SIGKILL, as a crashed machine: no controlled shutdown. (Not kill9:
        tests take a broker with kill9 for a cohortd they may restart at once.)"""
        if self.running():
            self.proc.kill()
            self.proc.wait()
        self._reap()

    # harness's exit hooks and failure report treat it as one of theirs
    _close_stderr = harness.Broker._close_stderr
    _reap = harness.Broker._reap
    _hard_kill = harness.Broker._hard_kill
    cleanup = harness.Broker.cleanup
    stderr = log = harness.Broker.stderr
    stderr_tail = harness.Broker.stderr_tail


def random_cluster_id():
    """A cluster id as Kafka's Uuid.randomUuid makes one (tools/kafka-ref.sh's
    serve does the same): a random UUID in base64url, never starting with '-',
    which StorageTool format -t would read as an option."""
    import uuid
    while True:
        s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not s.startswith("-"):
            return s


class KafkaCluster:
    """n Apache Kafka nodes on 127.0.0.1, each a combined broker and KRaft
    controller of one static quorum, with the group and transaction topics
    replicated n times (offsets.topic.num.partitions small: `offsets`).
    nodes[i] is node id i + 1; bootstrap is node 1 only."""

    def __init__(self, n=3, version="4", settings=None, offsets=3, name="kafka-cluster"):
        cid = random_cluster_id()
        self.nodes = [KafkaRef(version, name="%s-%d" % (name, i + 1),
                               env={"KAFKA_REF_CLUSTER_ID": cid,
                                    "KAFKA_HEAP_OPTS": "-Xms128m -Xmx384m"})
                      for i in range(n)]
        voters = ",".join("%d@127.0.0.1:%d" % (i + 1, k.controller_port)
                          for i, k in enumerate(self.nodes))
        rf = str(n)
        for i, k in enumerate(self.nodes):
            k.settings = dict({
                "node.id": str(i + 1), "controller.quorum.voters": voters,
                "offsets.topic.replication.factor": rf,
                "offsets.topic.num.partitions": str(offsets),
                "transaction.state.log.replication.factor": rf,
                "share.coordinator.state.topic.replication.factor": rf,
                "default.replication.factor": rf}, **(settings or {}))

    @property
    def bootstrap(self):
        return self.nodes[0].bootstrap

    def start(self, timeout=START_TIMEOUT):
        """All nodes at once (a node serves only once a quorum of controllers is up)."""
        for k in self.nodes:
            k.launch()
        for k in self.nodes:
            k.wait_ready(timeout)
        return self

    def node(self, node_id):
        return self.nodes[node_id - 1]

    def stop(self, timeout=30.0):
        """SIGTERM to every node at once (one by one, the last ones would wait
        for a controller quorum that is gone), SIGKILL past the timeout."""
        for k in self.nodes:
            if k.running():
                k.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for k in self.nodes:
            if k.proc is None:
                continue
            try:
                k.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                k.proc.kill()
                k.proc.wait()
            k._reap()

    def cleanup(self):
        for k in self.nodes:
            k.cleanup()


class BothBrokers(unittest.TestCase):
    """One Apache Kafka (KAFKA_VERSION) and one cohortd with the same
    settings for the whole class, as self.kafka and self.cohortd; the tests
    run their scenarios on both and compare."""

    KAFKA_VERSION = "3.9"
    settings = {}

    @classmethod
    def setUpClass(cls):
        cls.kafka = KafkaRef(cls.KAFKA_VERSION, settings=cls.settings)
        cls.cohortd = harness.Broker(settings=cls.settings, name="cohortd")
        try:
            cls.kafka.start()
            cls.cohortd.start()
        except BaseException:
            cls.kafka.cleanup()
            cls.cohortd.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.kafka.stop()
        cls.cohortd.stop()


class VersusKafka(BothBrokers):
    """A differential test: one Apache Kafka 4.x and one cohortd with the same
    settings; setUpClass runs cls.scenario(broker, base_ts) against Kafka, then
    against cohortd, keeping cls.theirs and cls.ours. base_ts (now - 60 s) is the
    same for both runs, for records whose timestamps the scenario sets."""

    KAFKA_VERSION = "4"

    @classmethod
    def scenario(cls, broker, base_ts):
        raise NotImplementedError

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            base_ts = int(time.time() * 1000) - 60000
            print("Apache Kafka %s:" % cls.kafka.version, file=sys.stderr)
            cls.theirs = cls.scenario(cls.kafka, base_ts)
            print("cohortd:", file=sys.stderr)
            cls.ours = cls.scenario(cls.cohortd, base_ts)
        except BaseException:
            cls.kafka.cleanup()
            cls.cohortd.cleanup()
            raise
