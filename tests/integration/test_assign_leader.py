"""librdkafka followers receive assignments computed by cohort's assignors
(src/assign) and encoded by its consumer-protocol glue (ch_assign_proto.h).

c/assign_leader.c joins first (so the coordinator makes it the leader), then
two librdkafka C API consumers (c/group_consumer.c) join the same group with
the same partition.assignment.strategy. The leader prints every assignment it
sends (decoded back by the glue); each librdkafka consumer must report exactly
the partitions the leader's latest assignment gave its member id, and
together with the leader's own they cover every partition once. Range (one
rebalance) and cooperative-sticky (the leader revokes first, assigns in a
follow-up rebalance: librdkafka must accept both steps).
"""
import os
import subprocess
import sys
import threading
import time

from harness import SKIP, BrokerTestCase, _pdeathsig, main
from test_group_helpers import (RdkConsumer, all_parts, create_topics, parse_parts,
                                require_group_apis, skip)

SETTINGS = {
    # the leader joins alone first; followers trigger a rebalance it leads
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "500",
    "offsets.topic.num.partitions": "3",
}


class Leader:
    def __init__(self, bootstrap, group, topics, assignor):
        argv = [os.environ["ASSIGN_LEADER"], "-b", bootstrap, "-g", group,
                "-t", ",".join(topics), "-a", assignor, "-T", "150"]
        self.lines = []
        self.assign = {}        # member id -> set, from the latest generation led
        self.assign_gen = -1
        self.mine = set()
        self.member_id = None
        self.leader = False
        self.cv = threading.Condition()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, preexec_fn=_pdeathsig)
        self.t = threading.Thread(target=self._reader, daemon=True)
        self.t.start()

    def _reader(self):
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self.cv:
                self.lines.append(line)
                f = line.split(" ")
                if f[0] == "JOINED":
                    self.member_id = f[2]
                    self.leader = f[3] == "1"
                elif f[0] == "ASSIGN":
                    gen = int(f[1])
                    if gen != self.assign_gen:
                        self.assign, self.assign_gen = {}, gen
                    self.assign[f[2]] = parse_parts(f[3])
                elif f[0] == "MINE":
                    self.mine = parse_parts(f[2])
                self.cv.notify_all()

    def wait(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        with self.cv:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("assign_leader: timed out waiting for %s; last lines:\n%s"
                                         % (what, "\n".join(self.lines[-30:])))
                self.cv.wait(min(left, 0.2))

    def quit(self):
        try:
            self.proc.stdin.write(b"quit\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None

    def cleanup(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


class AssignLeader(BrokerTestCase):
    broker_settings = SETTINGS

    @classmethod
    def setUpClass(cls):
        if not os.environ.get("ASSIGN_LEADER") or not os.environ.get("GROUP_CONSUMER"):
            skip("assign_leader or group_consumer not built (librdkafka missing)")
        super().setUpClass()
        if not require_group_apis(cls.broker.port):
            cls.tearDownClass()
            skip("cohortd does not serve JoinGroup yet")

    def run_group(self, assignor):
        topics = {"al-%s-a" % assignor: 5, "al-%s-b" % assignor: 3}
        create_topics(self.broker.port, topics)
        parts = all_parts(topics)
        group = "g-assign-leader-" + assignor
        leader = Leader(self.broker.bootstrap, group, list(topics), assignor)
        self.addCleanup(leader.cleanup)
        # alone in the group first: the coordinator makes it the leader
        leader.wait(lambda: leader.leader and leader.mine == parts, 60, "sole leader owning all")
        cs = []
        for i in range(2):
            c = RdkConsumer(self.broker.bootstrap, group, list(topics), assignor=assignor,
                            session_ms=6000, name="al-%s-%d" % (assignor, i))
            self.addCleanup(c.cleanup)
            cs.append(c)

        def converged():
            a = leader.assign
            if not leader.leader or len(a) != 3 or leader.member_id not in a:
                return False
            for c in cs:
                with c.cv:
                    if c.member_id not in a or c.assignment != a[c.member_id]:
                        return False
            if leader.mine != a[leader.member_id]:
                return False
            got = [tp for s in a.values() for tp in s]
            return len(got) == len(parts) and set(got) == parts

        deadline = time.monotonic() + 90
        while not converged():
            if time.monotonic() > deadline:
                raise AssertionError("no agreement: leader %r (gen %d, mine %r)\n%s\nfollowers: %s"
                                     % (leader.assign, leader.assign_gen, leader.mine,
                                        "\n".join(leader.lines[-30:]),
                                        [(c.member_id, sorted(c.assignment), c.lines[-8:])
                                         for c in cs]))
            time.sleep(0.1)
        if os.environ.get("GROUP_IT_VERBOSE"):
            sys.stderr.write("--- assign_leader:\n%s\n" % "\n".join(leader.lines))
            for c in cs:
                sys.stderr.write("--- %s:\n%s\n" % (c.name, "\n".join(c.lines)))
        # every member got something: 8 partitions over 3 members
        for m, s in leader.assign.items():
            self.assertTrue(s, "member %s got nothing: %r" % (m, leader.assign))
        # the librdkafka consumers saw no errors decoding our assignments
        for c in cs:
            self.assertIsNone(c.fatal)
            c.close()
        self.assertEqual(leader.quit(), 0, "\n".join(leader.lines[-20:]))
        # (a SyncGroup overtaken by a new rebalance is normal: 27 REBALANCE_IN_PROGRESS)
        self.assertFalse([l for l in leader.lines if l.startswith("ERROR")
                          and not l.endswith(" 27")], leader.lines)

    def test_range(self):
        self.run_group("range")

    def test_cooperative_sticky(self):
        self.run_group("cooperative-sticky")


if __name__ == "__main__":
    main()
