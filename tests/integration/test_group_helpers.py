"""Shared helpers for the test_group_*.py integration tests (not a test itself).

- RdkConsumer: one librdkafka C API consumer process (c/group_consumer.c,
  path in the environment variable GROUP_CONSUMER), its stdout events parsed
  on a thread, commands sent on its stdin.
- wait_until / wait_cover: poll a condition (never an assertion on timing:
  timeouts are generous bounds for "it never happened").
- topic creation and produce helpers on kwire / kafka-python.
"""
import os
import signal
import subprocess
import sys
import threading
import time

import kwire
from harness import _pdeathsig, SKIP

GROUP_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "500",
    "offsets.topic.num.partitions": "5",
    "num.partitions": "3",
}

API_PRODUCE = 0
API_FETCH = 1
API_JOIN_GROUP = 11


def api_keys(port):
    with kwire.Conn(port) as c:
        return kwire.api_versions(c, 0)["api_keys"]


def require_group_apis(port):
    keys = api_keys(port)
    return API_JOIN_GROUP in keys


def have_produce_fetch(port):
    keys = api_keys(port)
    return API_PRODUCE in keys and API_FETCH in keys


def wait_until(fn, timeout=30.0, what="condition", interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %.0fs waiting for %s" % (timeout, what))
        time.sleep(interval)


def create_topics(port, topics, timeout=30.0, configs=None):
    """topics: {name: partitions}, each with the topic configs `configs`
    ({key: value}) if given; returns once every partition's leader serves a
    fetch (Kafka names a leader in its metadata a moment before it serves
    it: a record produced then with acks=0 is dropped)."""
    import kwire_legacy
    with kwire.Conn(port) as c:
        res = kwire.create_topics(c, [(n, p, 1, configs or {}) for n, p in topics.items()])
        for n, t in res["topics"].items():
            if t["error_code"] not in (0, kwire.TOPIC_ALREADY_EXISTS):
                raise AssertionError("CreateTopics %s: %r" % (n, t))
        deadline = time.monotonic() + timeout
        def served(name, n):  # OFFSET_OUT_OF_RANGE: an older topic's log start moved
            got = kwire_legacy.fetch(c, 10, name, [(p, 0, 1) for p in range(n)])
            return all(got[p][0] in (0, 1) for p in range(n))
        while not all(served(n, np_) for n, np_ in topics.items()):
            if time.monotonic() > deadline:
                raise AssertionError("topics %s not served on port %d" % (topics, port))
            time.sleep(0.1)


def all_parts(topics):
    return {(t, p) for t, n in topics.items() for p in range(n)}


def parse_parts(s):
    if s == "-" or not s:
        return set()
    out = set()
    for tp in s.split(","):
        t, p = tp.rsplit(":", 1)
        out.add((t, int(p)))
    return out


class RdkConsumer:
    """A librdkafka consumer process (c/group_consumer.c)."""

    def __init__(self, bootstrap, group, topics, assignor="range", instance=None,
                 session_ms=3000, name=None, commit_on_revoke=False, commit_every=0,
                 quiet=False, extra=None, debug=None, delay_ms=0):
        self.name = name or "c%d" % id(self)
        argv = [os.environ["GROUP_CONSUMER"], "-b", bootstrap, "-g", group,
                "-t", ",".join(topics), "-a", assignor, "-s", str(session_ms), "-n", self.name]
        if instance:
            argv += ["-i", instance]
        if commit_on_revoke:
            argv += ["-R"]
        if commit_every:
            argv += ["-P", str(commit_every)]
        if quiet:
            argv += ["-q"]
        if delay_ms:
            argv += ["-D", str(delay_ms)]
        for k, v in (extra or {}).items():
            argv += ["-X", "%s=%s" % (k, v)]
        if debug:
            argv += ["-X", "debug=%s" % debug]
        self._spawn(argv)

    def _spawn(self, argv):
        self.argv = argv
        self.lines = []          # every stdout line, in order
        self.events = []         # (kind, rest) for rebalance/commit events
        self.assignment = set()
        self.member_id = None
        self.msgs = []           # (topic, partition, offset, monotonic usec)
        self.commits = []        # (topic, partition, offset, error, monotonic usec)
        self.committed = {}      # (topic, partition) -> offset, from "committed"
        self.fatal = None
        self.errors = []
        self.closed = False
        self.cv = threading.Condition()
        self.stderr_path = "/tmp/group_consumer.%d.%s.stderr" % (os.getpid(), self.name)
        self._err = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._err, preexec_fn=_pdeathsig)
        self.t = threading.Thread(target=self._reader, daemon=True)
        self.t.start()

    def _reader(self):
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self.cv:
                self.lines.append(line)
                kind, _, rest = line.partition(" ")
                if kind == "ASSIGNMENT":
                    mid, _, parts = rest.partition(" ")
                    self.member_id = mid
                    self.assignment = parse_parts(parts)
                    self.events.append((kind, frozenset(self.assignment)))
                elif kind in ("ASSIGNED", "REVOKED", "LOST"):
                    parts = rest.split(" ")[-1]
                    self.events.append((kind, frozenset(parse_parts(parts))))
                elif kind == "MSG":
                    t, p, o, us = rest.split(" ")
                    self.msgs.append((t, int(p), int(o), int(us)))
                elif kind == "COMMIT":
                    t, p, o, e, us = rest.split(" ")
                    self.commits.append((t, int(p), int(o), e, int(us)))
                elif kind == "COMMITTED":
                    t, p, o = rest.split(" ")
                    self.committed[(t, int(p))] = int(o)
                elif kind == "FATAL":
                    self.fatal = rest
                elif kind == "ERROR":
                    self.errors.append(rest)
                elif kind == "CLOSED":
                    self.closed = True
                self.cv.notify_all()

    # -- control
    def send(self, cmd):
        try:
            self.proc.stdin.write((cmd + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass

    def wait(self, pred, timeout=30.0, what="event"):
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                v = pred(self)
                if v:
                    return v
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("%s: timed out after %.0fs waiting for %s; last lines:\n%s"
                                         % (self.name, timeout, what, "\n".join(self.lines[-15:])))
                self.cv.wait(min(left, 0.2))

    def commit(self, topic, partition, offset, timeout=30.0):
        n = len(self.commits)
        self.send("commit %s %d %d" % (topic, partition, offset))
        self.wait(lambda s: len(s.commits) > n, timeout, "commit result")
        return self.commits[n][3]

    def fetch_committed(self, topic, partitions, timeout=30.0):
        n = len(self.lines)
        self.send("committed %s %s" % (topic, " ".join(str(p) for p in partitions)))

        def done(s):
            got = [l for l in s.lines[n:] if l.startswith("COMMITTED")]
            return len(got) >= len(partitions) or any("COMMITTED_ERROR" in l for l in got)
        self.wait(done, timeout, "committed result")
        with self.cv:
            if any(l.startswith("COMMITTED_ERROR") for l in self.lines[n:]):
                raise AssertionError("%s: %s" % (self.name, [l for l in self.lines[n:]
                                                             if l.startswith("COMMITTED_ERROR")]))
            return {p: self.committed[(topic, p)] for p in partitions}

    def close(self, timeout=60.0):
        """Close the consumer; its exit code. librdkafka 2.0.2 sometimes never
        returns from rd_kafka_consumer_close() on a loaded machine after it
        has revoked everything, committed and left the group (cohortd had
        answered every request; the client only kept refreshing metadata,
        see docs/NOTES.md). Such a consumer is killed and reported as closed
        (exit code 0) with a warning: what it had to do for the group is
        done. A consumer stuck before that point fails the test."""
        self.send("close")
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.t.join(5)
            tail = "\n".join(self.lines[-15:])
            if self.assignment_emptied_after_revoke():
                sys.stderr.write("WARNING: %s (librdkafka) did not return from close within "
                                 "%.0fs after leaving the group; killed\n%s\n"
                                 % (self.name, timeout, tail))
                return 0
            raise AssertionError("%s did not close within %.0fs:\n%s"
                                 % (self.name, timeout, tail))
        self.t.join(5)
        return self.proc.returncode

    def assignment_emptied_after_revoke(self):
        """The consumer's last events are a revoke (with its commits) and an
        empty assignment: it finished its part of the rebalance protocol."""
        seen_revoke = False
        for line in self.lines:
            if line.startswith(("REVOKED ", "LOST ")):
                seen_revoke = True
            elif line.startswith("ASSIGNED "):
                seen_revoke = False
        return seen_revoke and bool(self.lines) and any(
            l.startswith("ASSIGNMENT ") and l.rstrip().endswith(" -") for l in self.lines[-3:])

    def kill9(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.t.join(5)

    def alive(self):
        return self.proc.poll() is None

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.t.join(5)
        for f in (self.proc.stdin, self.proc.stdout, self._err):
            try:
                f.close()
            except OSError:
                pass
        if os.path.exists(self.stderr_path) and not os.environ.get("COHORT_IT_KEEP"):
            os.unlink(self.stderr_path)

    def stderr(self):
        try:
            with open(self.stderr_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def n_rebalance_events(self):
        with self.cv:
            return sum(1 for k, _ in self.events if k in ("ASSIGNED", "REVOKED", "LOST"))


class MemberProcess(RdkConsumer):
    """Any group consumer process that speaks c/group_consumer.c's line
    protocol (py_member.py, go/, js/member.js): argv is the whole command."""

    def __init__(self, argv, name):
        self.name = name
        self._spawn(list(argv))


def cover_ok(consumers, parts):
    """Every partition in parts owned by exactly one consumer, none extra."""
    seen = {}
    for c in consumers:
        with c.cv:
            a = set(c.assignment)
        for tp in a:
            if tp in seen:
                return False
            seen[tp] = c
    return set(seen) == set(parts)


def describe_cover(consumers):
    return "; ".join("%s=%s" % (c.name, sorted(c.assignment)) for c in consumers)


def wait_cover(consumers, parts, timeout=60.0, each_owns=False):
    """Wait until the consumers' assignments partition `parts` exactly (and, with
    each_owns, every consumer owns at least one partition)."""
    def ok():
        if not cover_ok(consumers, parts):
            return False
        if each_owns and any(not c.assignment for c in consumers):
            return False
        return True
    try:
        wait_until(ok, timeout, "every partition assigned exactly once")
    except AssertionError:
        raise AssertionError("assignment never covered %d partitions exactly once: %s"
                             % (len(parts), describe_cover(consumers)))


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(SKIP)


def produce(bootstrap, topic, nparts, per_part, value=b"x" * 32):
    """per_part messages into each partition with confluent-kafka (acks=all);
    returns {partition: end offset}."""
    import confluent_kafka
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                  "linger.ms": 5, "enable.idempotence": False})
    errors = []

    def dr(err, msg):
        if err:
            errors.append(str(err))
    for part in range(nparts):
        for i in range(per_part):
            while True:
                try:
                    p.produce(topic, value=value, key=b"%d-%d" % (part, i), partition=part,
                              on_delivery=dr)
                    break
                except BufferError:
                    p.poll(0.1)
        p.poll(0)
    left = p.flush(60)
    if left or errors:
        raise AssertionError("produce: %d undelivered, errors %s" % (left, errors[:5]))
    return {part: per_part for part in range(nparts)}


def check_reads(consumers, topic, ends):
    """Every offset below ends[p] read at least once; an offset read a second
    time only at or after the highest acknowledged commit for its partition at
    the time of the re-read (CLOCK_MONOTONIC stamps are comparable across the
    consumer processes). Returns (duplicates, problems)."""
    reads = sorted((us, t, p, o, c.name) for c in consumers for (t, p, o, us) in c.msgs
                   if t == topic)
    commits = sorted((us, t, p, o) for c in consumers for (t, p, o, e, us) in c.commits
                     if e == "NO_ERROR" and t == topic)
    committed, seen, problems, dups, ci = {}, {}, [], 0, 0
    for us, t, p, o, name in reads:
        while ci < len(commits) and commits[ci][0] <= us:
            _, ct, cp, co = commits[ci]
            committed[cp] = max(committed.get(cp, -1), co)
            ci += 1
        if (p, o) in seen:
            dups += 1
            if o < committed.get(p, -1):
                problems.append("partition %d offset %d re-read by %s (first read by %s) "
                                "below the committed offset %d" % (p, o, name, seen[(p, o)],
                                                                  committed[p]))
        else:
            seen[(p, o)] = name
    for p, end in ends.items():
        missing = [o for o in range(end) if (p, o) not in seen]
        if missing:
            problems.append("partition %d: %d offsets never read (first %s)"
                            % (p, len(missing), missing[:5]))
        extra = [o for (pp, o) in seen if pp == p and o >= end]
        if extra:
            problems.append("partition %d: offsets past the end read: %s" % (p, extra[:5]))
    return dups, problems
