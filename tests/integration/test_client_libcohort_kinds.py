"""Mixed groups of all four client kinds in ONE group (issue 10, "Proven
by"): libcohort (c/cohort_member.c), librdkafka 2.0.2 from Debian
(c/group_consumer.c), confluent-kafka 2.x from the venv (py_member.py, its
own librdkafka) and Java kafka-clients 4.4 (java/cohortit/ConsumerDriver),
against one cohortd, one topic, a scenario per assignor.

Each kind leads in turn. The first member to join an empty group leads;
when the leader leaves, cohortd hands the lead to the earliest-joined member
left (Kafka's ClassicGroup takes the first of a HashMap, so the order is
not the join order there: these scenarios run on cohortd only). So the
kinds join in order (the first leads), then the leader leaves and joins
again as a new member, until every kind has led. Who led is not assumed:
every connection goes through version_proxy.py, which records the client
id of each SyncGroup that carries assignments (only the leader's does).

Every member prints what it owns, stamped with CLOCK_MONOTONIC (the OWNS
lines, Java's "owns" events: after an assignment, at the end of a revoke
callback, which commits there), so the callbacks of all processes form one
timeline. Checked:
- no partition owned by two members at any moment of the timeline, and at
  every stable point each partition owned by exactly one;
- balance: assignment sizes come to differ by at most one (waited for: a
  cooperative round covers every partition on its way there);
- range and roundrobin: the exact assignment their contracts give (members
  sorted by member id; range: consecutive runs, roundrobin: dealt in turn);
- sticky and cooperative-sticky: on a leave the members left keep what they
  had, on a join the old members keep a subset of what they had;
- eager (range, roundrobin, sticky): every revoke takes the whole
  assignment; cooperative-sticky: a revoke never takes a partition its
  member keeps (KIP-429);
- every record read, none re-read below an acknowledged commit, commits
  never backwards, and the final commits are the end offsets.

librdkafka has no eager "sticky" assignor (only cooperative-sticky), so
the sticky group is two libcohort and two Java members.
"""
import os
import struct
import threading

import java_clients
from client_scenarios import HERE, VENV_PYTHON, member_flags, venv_offsets
from harness import BrokerTestCase, free_port, main
from test_client_libcohort import commits_backwards
from test_group_helpers import (GROUP_SETTINGS, MemberProcess, check_reads, create_topics,
                                parse_parts, produce, wait_until)
from version_proxy import VersionProxy

COHORT_MEMBER = os.environ.get("COHORT_MEMBER", "")
RDK_MEMBER = os.environ.get("GROUP_CONSUMER", "")
PY_MEMBER = os.path.join(HERE, "py_member.py")
PARTITIONS = 6
SESSION_MS = 3000
PROXY_PORT = free_port()
API_SYNC_GROUP = 14


def sync_group_leader(version, req):
    """(client id, group id, number of assignments) of a SyncGroup request frame."""
    flexible = version >= 4
    (idlen,) = struct.unpack(">h", req[8:10])
    cid = req[10:10 + idlen].decode() if idlen > 0 else ""
    p = [10 + max(idlen, 0)]

    def uvarint():
        v = shift = 0
        while True:
            b = req[p[0]]
            p[0] += 1
            v |= (b & 0x7f) << shift
            shift += 7
            if not b & 0x80:
                return v

    def string():
        if flexible:
            n = uvarint() - 1
        else:
            (n,) = struct.unpack(">h", req[p[0]:p[0] + 2])
            p[0] += 2
        s = req[p[0]:p[0] + max(n, 0)].decode()
        p[0] += max(n, 0)
        return s
    if flexible:   # the request header's tagged fields
        for _ in range(uvarint()):
            uvarint()
            p[0] += uvarint()
    group = string()
    p[0] += 4      # generation_id
    string()       # member_id
    if version >= 3:
        string()   # group_instance_id
    if version >= 5:
        string()   # protocol_type
        string()   # protocol_name
    if flexible:
        n = uvarint() - 1
    else:
        (n,) = struct.unpack(">i", req[p[0]:p[0] + 4])
    return cid, group, n


class LineMember(MemberProcess):
    """A member speaking group_consumer.c's line protocol; OWNS lines are its
    stamped assignments."""

    def __init__(self, kind, argv, name):
        self.kind = kind
        super().__init__(argv, name)

    def owns(self):
        """[(usec, partitions, the callback it follows: ASSIGNED, REVOKED or LOST)]."""
        out, cause = [], None
        with self.cv:
            for l in self.lines:
                w = l.split(" ")
                if w[0] in ("ASSIGNED", "REVOKED", "LOST"):
                    cause = w[0]
                elif w[0] == "OWNS":
                    out.append((int(w[1]), frozenset(parse_parts(w[2])), cause))
        return out

    def callbacks(self):
        """("ASSIGNED" | "REVOKED" | "LOST" | "OWNS", partitions) in order."""
        out = []
        with self.cv:
            for l in self.lines:
                kind = l.split(" ", 1)[0]
                if kind in ("ASSIGNED", "REVOKED", "LOST", "OWNS"):
                    out.append((kind, frozenset(parse_parts(l.split(" ")[-1]))))
        return out

    def commit_all(self):
        self.send("commitpos")


def keep_output(test, m):
    """Every member's whole output into GROUP_IT_KEEP_DIR, when it is set."""
    keep = os.environ.get("GROUP_IT_KEEP_DIR")
    if keep:
        with open(os.path.join(keep, "%s.%s.log" % (test.id(), m.name)), "w") as f:
            f.write("\n".join(getattr(m, "lines", None) or map(str, getattr(m, "events", [])))
                    + "\n")


def _tps(names):
    return frozenset((t, int(p)) for t, p in (n.rsplit(":", 1) for n in names))


class JavaMember(java_clients.JavaConsumer):
    """The Java driver seen through the line members' interface."""

    kind = "java"

    @property
    def assignment(self):
        evs = self.of("owns")
        return set(_tps(evs[-1]["assignment"])) if evs else set()

    @property
    def member_id(self):
        return self.member()

    @property
    def fatal(self):
        evs = self.of("error")
        return evs[0] if evs else None

    @property
    def msgs(self):
        return [(e["tp"].rsplit(":", 1)[0], int(e["tp"].rsplit(":", 1)[1]), e["offset"], e["us"])
                for e in self.of("msg")]

    @property
    def commits(self):
        out = []
        for e in self.of("commit"):
            err = "NO_ERROR" if e["error"] is None else str(e["error"].get("error", e["error"]))
            for tp, o in e["offsets"].items():
                t, p = tp.rsplit(":", 1)
                out.append((t, int(p), o, err, e["us"]))
        return out

    def owns(self):
        out, cause = [], None
        for e in self.of("assigned", "revoked", "lost", "owns"):
            if e["ev"] == "owns":
                out.append((e["us"], _tps(e["assignment"]), cause))
            else:
                cause = e["ev"].upper()
        return out

    def callbacks(self):
        names = {"assigned": "ASSIGNED", "revoked": "REVOKED", "lost": "LOST", "owns": "OWNS"}
        return [(names[e["ev"]], _tps(e["parts"] if e["ev"] != "owns" else e["assignment"]))
                for e in self.of("assigned", "revoked", "lost", "owns")]

    def alive(self):
        return self.proc.poll() is None

    def commit_all(self):
        self.send("commit")

    def cleanup(self):
        if self.proc.poll() is None:
            self.kill()


def owned_twice(members):
    """Moments at which a partition was owned by two members, from every
    member's stamped ownership (CLOCK_MONOTONIC across processes). A member
    told LOST may have lost its partitions before it is told (Kafka's
    contract): an overlap with what it then reports lost is one only if it
    read records of those partitions after the new owner got them."""
    steps = sorted((us, m.name, parts, cause) for m in members for us, parts, cause in m.owns())
    by_name = {m.name: m for m in members}
    held, bad = {}, []
    for us, name, parts, cause in steps:
        held[name] = parts
        for other, theirs in held.items():
            both = parts & theirs
            if other == name or not both:
                continue
            m = by_name[other]
            nxt = next(((u, p, c) for u, p, c in m.owns() if u > us), None)
            if nxt and nxt[2] == "LOST" and not (nxt[1] & both) and not any(
                    us <= r_us <= nxt[0] and (t, p) in both for t, p, o, r_us in m.msgs):
                continue
            bad.append("at %d us %s and %s both own %s" % (us, name, other, sorted(both)))
    return bad


def group_offsets(bootstrap, group):
    """venv_offsets, None on a retriable error (a coordinator moving)."""
    try:
        return venv_offsets(bootstrap, group)
    except Exception as e:   # kafka-python's errors say whether they are retriable
        if getattr(e, "retriable", False):
            return None
        raise


def wait_committed(bootstrap, group, members, topic, ends):
    """Until the live members' commits of what they read are the end offsets."""
    want = {(topic, p): e for p, e in ends.items()}
    last = {}

    def committed():
        for m in members:
            m.commit_all()
        last["v"] = group_offsets(bootstrap, group)
        return last["v"] == want
    try:
        wait_until(committed, 60, "the committed offsets at the end offsets", 0.5)
    except AssertionError:
        raise AssertionError("committed %s, end offsets %s" % (last.get("v"), want))


def check_history(test, members, topic, ends):
    """Over every member that ever ran: no partition owned twice, every
    record read, none re-read below an acknowledged commit, commits never
    backwards."""
    test.assertEqual(owned_twice(members), [])
    dups, problems = check_reads(members, topic, ends)
    test.assertEqual(problems, [])
    test.assertEqual(commits_backwards(members, topic), [])


class MixedKindsGroups(BrokerTestCase):
    broker_settings = dict(GROUP_SETTINGS, **{
        "advertised.listeners": "PLAINTEXT://127.0.0.1:%d" % PROXY_PORT})

    @classmethod
    def setUpClass(cls):
        for path, what in ((COHORT_MEMBER, "COHORT_MEMBER"), (RDK_MEMBER, "GROUP_CONSUMER"),
                           (VENV_PYTHON, "the venv's python")):
            if not os.access(path, os.X_OK):
                raise SystemExit("FAIL: %s not built / installed: %r" % (what, path))
        java_clients.check_installed()
        super().setUpClass()
        cls.proxy = VersionProxy(cls.broker.port, {18: 2}, PROXY_PORT)
        cls.syncs = []   # (client id, group) of each SyncGroup carrying assignments
        cls.syncs_lock = threading.Lock()

        def on_sync(version, corr, req):
            cid, group, n = sync_group_leader(version, req)
            if n > 0:
                with cls.syncs_lock:
                    cls.syncs.append((cid, group))
            return None   # forwarded to cohortd
        cls.proxy.answer[API_SYNC_GROUP] = on_sync

    @classmethod
    def tearDownClass(cls):
        cls.proxy.close()
        super().tearDownClass()

    def start(self, kind, group, topic, name, assignor):
        bootstrap = "127.0.0.1:%d" % PROXY_PORT
        if kind == "java":
            m = JavaMember(bootstrap, group, [topic], assignor, session_ms=SESSION_MS,
                           commit_on_revoke=True, name=name)
        else:
            flags = member_flags(bootstrap, group, [topic], name, assignor, None, SESSION_MS,
                                 True, 0, 0)
            prog = {"libcohort": [COHORT_MEMBER], "librdkafka": [RDK_MEMBER],
                    "confluent": [VENV_PYTHON, PY_MEMBER, "--client", "confluent"]}[kind]
            m = LineMember(kind, prog + flags, name)
        self.addCleanup(m.cleanup)
        self.addCleanup(keep_output, self, m)
        return m

    def wait_stable(self, members, parts):
        """Every partition owned by exactly one live member, sizes within one
        of each other (balance: a cooperative round can cover every partition
        on its way there, and an assignor that never balances fails here)."""
        def ok():
            for m in members:
                if not m.alive() or m.fatal:
                    raise AssertionError("%s died (fatal %s)" % (m.name, m.fatal))
            owned = [tp for m in members for tp in m.assignment]
            sizes = [len(m.assignment) for m in members]
            return (len(owned) == len(set(owned)) and set(owned) == parts and
                    min(sizes) >= 1 and max(sizes) - min(sizes) <= 1)
        try:
            wait_until(ok, 90, "every partition owned exactly once", 0.05)
        except AssertionError as e:
            raise AssertionError("%s: %s" % (e, "; ".join("%s=%s" % (m.name, sorted(m.assignment))
                                                          for m in members)))
        return {m.name: frozenset(m.assignment) for m in members}

    def close(self, m):
        m.closing_at = len(m.callbacks())
        self.assertEqual(m.close(), 0, m.name)

    def leader_of(self, group):
        with self.syncs_lock:
            return [cid for cid, g in self.syncs if g == group][-1]

    def check_contract(self, assignor, members, snap, topic):
        ids = sorted((m.member_id, m.name) for m in members)
        if assignor == "range":
            want, p = {}, 0
            for i, (_, name) in enumerate(ids):
                n = PARTITIONS // len(ids) + (1 if i < PARTITIONS % len(ids) else 0)
                want[name] = frozenset((topic, q) for q in range(p, p + n))
                p += n
            self.assertEqual(snap, want, "range over members sorted by id")
        elif assignor == "roundrobin":
            want = {name: frozenset((topic, q) for q in range(PARTITIONS)
                                    if q % len(ids) == i) for i, (_, name) in enumerate(ids)}
            self.assertEqual(snap, want, "roundrobin over members sorted by id")

    def rotate_leaders(self, assignor, kinds):
        topic = group = "kinds-%s" % assignor
        create_topics(self.broker.port, {topic: PARTITIONS})
        parts = {(topic, p) for p in range(PARTITIONS)}
        ends = {p: 0 for p in range(PARTITIONS)}

        def more_records():
            for p, n in produce(self.broker.bootstrap, topic, PARTITIONS, 15).items():
                ends[p] += n
        everyone, members, snaps, led = [], [], [], []
        seen = {}   # member name -> its callbacks seen at the last stable point
        runs = {k: 0 for k in kinds}

        def join(kind):
            runs[kind] += 1
            m = self.start(kind, group, topic, "%s-%s-%d" % (group, kind, runs[kind]), assignor)
            everyone.append(m)
            members.append(m)
            step("join of " + m.name)

        def step(what):
            snap = self.wait_stable(members, parts)
            self.assertEqual(self.leader_of(group), members[0].name,
                             "after the %s: the earliest-joined member leads" % what)
            led.append(members[0].kind)
            self.check_contract(assignor, members, snap, topic)
            if assignor in ("sticky", "cooperative-sticky") and snaps:
                prev = snaps[-1]
                for name, had in prev.items():
                    if name not in snap:
                        continue
                    if what.startswith("join"):
                        self.assertTrue(snap[name] <= had, "%s after the %s: %s, had %s"
                                        % (name, what, sorted(snap[name]), sorted(had)))
                    else:
                        self.assertTrue(snap[name] >= had, "%s after the %s: %s, had %s"
                                        % (name, what, sorted(snap[name]), sorted(had)))
            if assignor == "cooperative-sticky":   # KIP-429: kept partitions never revoked
                for m in members:
                    cbs = m.callbacks()
                    revoked = {tp for k, tps in cbs[seen.get(m.name, 0):] if k == "REVOKED"
                               for tp in tps}
                    self.assertEqual(revoked & snap[m.name], set(),
                                     "%s after the %s: revoked what it kept" % (m.name, what))
                    seen[m.name] = len(cbs)
            snaps.append(snap)
            more_records()

        for kind in kinds:
            join(kind)
        for _ in kinds[1:]:
            leader = members.pop(0)
            self.close(leader)
            step("leave of " + leader.name)
            join(leader.kind)
        self.assertEqual(sorted(set(led)), sorted(set(kinds)), "kinds that led")
        wait_committed(self.broker.bootstrap, group, members, topic, ends)
        for m in members:
            self.close(m)
        check_history(self, everyone, topic, ends)
        for m in everyone:
            cbs = m.callbacks()
            for i, (kind, tps) in enumerate(cbs):
                # Java's close calls onPartitionsLost, not revoked, in a rebalance
                self.assertTrue(kind != "LOST" or i >= m.closing_at,
                                "%s: partitions lost in a graceful scenario: %s" % (m.name, cbs))
                if kind == "REVOKED" and assignor != "cooperative-sticky":
                    after = next(p for k, p in cbs[i + 1:] if k == "OWNS")
                    self.assertEqual(after, frozenset(), "%s: an eager revoke kept %s"
                                     % (m.name, sorted(after)))

    def test_range(self):
        self.rotate_leaders("range", ("libcohort", "librdkafka", "confluent", "java"))

    def test_roundrobin(self):
        self.rotate_leaders("roundrobin", ("librdkafka", "confluent", "java", "libcohort"))

    def test_sticky(self):
        # two of each, so that the leader's stickiness shows (see the docstring)
        self.rotate_leaders("sticky", ("libcohort", "java", "libcohort", "java"))

    def test_cooperative_sticky(self):
        self.rotate_leaders("cooperative-sticky", ("confluent", "java", "libcohort", "librdkafka"))


if __name__ == "__main__":
    main()
