"""libcohort's fetch sessions (KIP-227), seen on the wire: c/cohort_member.c
consumes through version_proxy.py, which records every Fetch request's
SessionId and SessionEpoch.

- Apache Kafka 4.4 offers sessions: after the first full fetch (epoch 0)
  libcohort sends incremental fetches in its session (epochs 1, 2, 3, ...
  with no gap), and every record is read exactly once;
- cohortd has none (it answers SessionId 0): every fetch stays full.
"""
import os
import struct
import threading

from client_scenarios import ClientGroupTest, member_flags, wait_cover
from harness import free_port, main, start_clean, stop_clean
from kafka_ref import KafkaRef
from test_group_helpers import GROUP_SETTINGS, MemberProcess, all_parts, create_topics
from version_proxy import VersionProxy

MEMBER = os.environ.get("COHORT_MEMBER", "")
PROXY_PORT, PROXY_PORT_KAFKA = free_port(), free_port()
API_FETCH = 1


def fetch_session(version, req):
    """(SessionId, SessionEpoch) of a Fetch request frame body (v7+)."""
    (idlen,) = struct.unpack(">h", req[8:10])
    off = 10 + max(idlen, 0)
    if version >= 12:
        off += 1          # request header v2: no tagged fields from libcohort
    if version <= 14:
        off += 4          # ReplicaId
    off += 4 + 4 + 4 + 1  # MaxWaitMs, MinBytes, MaxBytes, IsolationLevel
    return struct.unpack(">ii", req[off:off + 8])


class SessionsCohortd(ClientGroupTest):
    CLIENT = "libcohort-sessions"
    broker_settings = dict(GROUP_SETTINGS, **{
        "advertised.listeners": "PLAINTEXT://127.0.0.1:%d" % PROXY_PORT})
    EXPECT_SESSIONS = False
    PORT = PROXY_PORT

    @classmethod
    def setUpClass(cls):
        if not os.access(MEMBER, os.X_OK):
            raise SystemExit("FAIL: COHORT_MEMBER (it_cohort_member) not built: %r" % MEMBER)
        super().setUpClass()
        cls.start_proxy()

    @classmethod
    def start_proxy(cls):
        cls.proxy = VersionProxy(cls.broker.port, {18: 2}, cls.PORT)
        cls.fetches = []   # (client id, SessionId, SessionEpoch)
        lock = threading.Lock()

        def record(version, corr, req):
            (idlen,) = struct.unpack(">h", req[8:10])
            cid = req[10:10 + idlen].decode()
            if version >= 7:
                with lock:
                    cls.fetches.append((cid,) + fetch_session(version, req))
            return None   # forwarded
        cls.proxy.answer[API_FETCH] = record

    @classmethod
    def tearDownClass(cls):
        cls.proxy.close()
        super().tearDownClass()

    def test_fetch_sessions(self):
        topic, group, name = "fs-" + self.CLIENT, "g-fs-" + self.CLIENT, self.CLIENT + "-m"
        create_topics(self.broker.port, {topic: 3})
        m = MemberProcess([MEMBER] + member_flags("127.0.0.1:%d" % self.PORT, group, [topic],
                                                  name, "range", None, 6000, False, 0, 0), name)
        self.addCleanup(m.cleanup)
        self.addCleanup(self._dump, m)
        wait_cover([m], all_parts({topic: 3}))
        for round_ in range(4):   # records arrive while the member fetches
            self.produce(topic, 3, 20)
            m.wait(lambda s: len(s.msgs) >= 60 * (round_ + 1), 60, "round %d" % round_)
        reads = [(p, o) for (t, p, o, us) in m.msgs]
        self.assertEqual(sorted(reads), [(p, o) for p in range(3) for o in range(80)])
        mine = [(sid, ep) for cid, sid, ep in self.fetches if cid == name]
        self.assertTrue(mine)
        if not self.EXPECT_SESSIONS:
            self.assertEqual({sid for sid, ep in mine}, {0})
            self.assertEqual({ep for sid, ep in mine}, {0})   # full, asking for a session
        else:
            self.assertEqual(mine[0], (0, 0))                 # the first is full
            incremental = [(sid, ep) for sid, ep in mine if sid != 0]
            self.assertGreater(len(incremental), 5, mine[:20])
            # within one session the epochs go 1, 2, 3, ... with no gap
            for sid in {sid for sid, ep in incremental}:
                eps = [ep for s, ep in incremental if s == sid]
                self.assertEqual(eps, list(range(1, len(eps) + 1)), (sid, eps[:20]))
        self.assertIsNone(m.fatal)
        self.assertEqual(m.close(), 0)


class SessionsKafka(SessionsCohortd):
    """Apache Kafka 4.4.0 behind the proxy: it offers sessions."""
    CLIENT = "libcohort-sessions-kafka"
    EXPECT_SESSIONS = True
    PORT = PROXY_PORT_KAFKA

    @classmethod
    def setUpClass(cls):
        if not os.access(MEMBER, os.X_OK):
            raise SystemExit("FAIL: COHORT_MEMBER (it_cohort_member) not built: %r" % MEMBER)
        settings = dict(GROUP_SETTINGS, **{
            "advertised.listeners": "PLAINTEXT://127.0.0.1:%d" % PROXY_PORT_KAFKA})
        cls.broker = start_clean(KafkaRef("4", settings=settings, name=cls.__name__))
        cls.start_proxy()

    @classmethod
    def tearDownClass(cls):
        cls.proxy.close()
        stop_clean(cls.broker)


if __name__ == "__main__":
    main()
