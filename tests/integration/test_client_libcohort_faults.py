"""libcohort (c/cohort_member.c) against brokers that misbehave: a raw
socket that answers ApiVersions with bytes that do not decode, and cohortd
behind version_proxy.py, which corrupts record batches in Fetch answers and
answers FindCoordinator itself. Each test is a defect that was found by
reading (docs/NOTES.md) and shown here before it was fixed:

- an ApiVersions answer that does not decode closes the connection and the
  client connects again (it used to sit on the connection forever);
- a corrupt record batch is returned by cohort_poll as CORRUPT_MESSAGE (Java's
  poll raises a KafkaException), the partition is not fetched again until the
  application seeks past it (it used to be fetched again at once, forever);
  the records fetched before it and not yet polled come first (poll used to
  answer CORRUPT_MESSAGE at once when the corrupt batch was found while they
  waited, and they were never returned);
- an OffsetCommit of a consumer-protocol member answered STALE_MEMBER_EPOCH
  (the proxy moves the epoch the request carries): the auto-commit before a
  revoke is sent again with the member's epoch and lands (it used to be
  dropped, the records consumed since the last commit read again), while
  the application's own commit gets the error, as Java's commitSync; on
  cohortd and on Apache Kafka 4.4.0 (LibcohortFaultsKafka, the proxy in
  front of it);
- a fatal FindCoordinator answer (GROUP_AUTHORIZATION_FAILED) ends the calls
  waiting for a coordinator with that error (they used to wait for their
  own timeout), and a call waiting for a coordinator that never comes ends
  at default.api.timeout.ms (an async commit's callback used to wait until
  close).
"""
import os
import socket
import struct
import threading
import time

from client_scenarios import member_flags, wait_cover
from harness import free_port, main, start_clean
from kafka_ref import KafkaRef
from test_consumer_protocol import CONSUMER_SETTINGS
from test_group_helpers import (GROUP_SETTINGS, MemberProcess, all_parts, create_topics,
                                wait_until)
from client_scenarios import ClientGroupTest
from version_proxy import VersionProxy
import kwire

MEMBER = os.environ.get("COHORT_MEMBER", "")
PROXY_PORT = free_port()
API_FETCH, API_OFFSET_COMMIT, API_FIND_COORDINATOR = 1, 8, 10
GROUP_AUTHORIZATION_FAILED, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = 30, 15, 16
MARK = b"CORRUPT-ME-PLEASE"


def find_coordinator_v2(corr, error):
    """A FindCoordinator v0-v2 answer with only an error (throttle, error, message,
    node -1, host "", port -1)."""
    w = kwire.Writer(False)
    w.int32(corr).int32(0).int16(error).string(None).int32(-1).string("").int32(-1)
    return w.bytes()


def move_commit_epoch(seen):
    """A VersionProxy request rewrite: the OffsetCommit's GenerationIdOrMemberEpoch
    1000 ahead (the broker answers STALE_MEMBER_EPOCH), the epoch sent appended to seen."""
    def change(version, req):
        (idlen,) = struct.unpack(">h", req[8:10])
        p = 10 + max(idlen, 0)
        if version >= 8:   # flexible: header tags (none), then a compact group id
            assert req[p] == 0, "header tags"
            n, p = req[p + 1], p + 2
            assert n < 0x80, "a group id under 127 bytes"
            p += n - 1
        else:
            (n,) = struct.unpack(">h", req[p:p + 2])
            p += 2 + n
        (epoch,) = struct.unpack(">i", req[p:p + 4])
        seen.append(epoch)
        return req[:p] + struct.pack(">i", epoch + 1000) + req[p + 4:]
    return change


class LibcohortFaults(ClientGroupTest):
    CLIENT = "libcohort-faults"
    proxy_port = PROXY_PORT
    proxy_bootstrap = "127.0.0.1:%d" % PROXY_PORT
    broker_settings = dict(GROUP_SETTINGS, **{"advertised.listeners": "PLAINTEXT://" +
                                              proxy_bootstrap})

    @classmethod
    def setUpClass(cls):
        if not os.access(MEMBER, os.X_OK):
            raise SystemExit("FAIL: COHORT_MEMBER (it_cohort_member) not built: %r" % MEMBER)
        cls.start_broker()
        # ApiVersions at v2 (the proxy's own answer), FindCoordinator at v2 and
        # Heartbeat at v3: answers the test writes itself
        cls.proxy = VersionProxy(cls.broker.port, {18: 2, API_FIND_COORDINATOR: 2, 12: 3},
                                 cls.proxy_port)

    @classmethod
    def start_broker(cls):
        """cls.broker, advertising the proxy's address (cohortd here)."""
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        cls.proxy.close()
        super().tearDownClass()

    def setUp(self):
        with self.proxy.lock:
            self.proxy.answer.clear()
            self.proxy.rewrite.clear()
            self.proxy.rewrite_request.clear()
            self.proxy.inject.clear()

    def start(self, group, topic, name, *extra, delay_ms=0):
        """A range member through the proxy, extra settings ("key=value") and
        delay_ms of sleep after each record."""
        argv = [MEMBER]
        for kv in extra:
            argv += ["-X", kv]
        argv += member_flags(self.proxy_bootstrap, group, [topic], name, "range", None,
                             6000, False, 0, delay_ms)
        m = MemberProcess(argv, name)
        self.addCleanup(m.cleanup)
        self.addCleanup(self._dump, m)
        return m

    def corrupt_topic(self, topic):
        """topic with six records, one batch each, on partition 0; the one at
        offset 3 reaches the client corrupt (the proxy changes its bytes in
        every Fetch answer, so its CRC-32C no longer matches)."""
        create_topics(self.broker.port, {topic: 1})
        import confluent_kafka
        p = confluent_kafka.Producer({"bootstrap.servers": self.broker.bootstrap,
                                      "linger.ms": 0, "acks": "all"})
        for i in range(6):
            p.produce(topic, value=MARK if i == 3 else b"fine-%d" % i, partition=0)
            self.assertEqual(p.flush(30), 0)
        with self.proxy.lock:
            self.proxy.rewrite[API_FETCH] = lambda r: r.replace(MARK, MARK.lower())

    def requests(self, name, key):
        with self.proxy.lock:
            return sum(1 for cid, k, v in self.proxy.seen if cid == name and k == key)

    def test_apiversions_undecodable(self):
        """A broker whose ApiVersions answer is two bytes of garbage: libcohort
        closes that connection and connects again after its backoff (Java's
        NetworkClient disconnects on a response it cannot parse)."""
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        self.addCleanup(srv.close)
        events = []   # "accept", "eof" per connection, in order
        cv = threading.Condition()

        def serve(conn):
            with conn:
                head = conn.recv(4)
                if len(head) < 4:
                    return
                (n,) = struct.unpack(">i", head)
                body = b""
                while len(body) < n:
                    chunk = conn.recv(n - len(body))
                    if not chunk:
                        return
                    body += chunk
                corr = struct.unpack(">i", body[4:8])[0]
                conn.sendall(kwire.frame(struct.pack(">i", corr) + b"\x00"))  # cut error code
                conn.settimeout(60)
                try:
                    while conn.recv(4096):
                        pass        # the client must not send anything else here
                except OSError:
                    return
                with cv:
                    events.append("eof")
                    cv.notify_all()

        def accept():
            while True:
                try:
                    conn, _ = srv.accept()
                except OSError:
                    return
                with cv:
                    events.append("accept")
                    cv.notify_all()
                threading.Thread(target=serve, args=(conn,), daemon=True).start()
        threading.Thread(target=accept, daemon=True).start()
        argv = [MEMBER] + member_flags("127.0.0.1:%d" % srv.getsockname()[1], "g-av", ["t"],
                                       "libcohort-av", "range", None, 6000, False, 0, 0)
        m = MemberProcess(argv, "libcohort-av")
        self.addCleanup(m.cleanup)
        with cv:
            ok = cv.wait_for(lambda: events[:3] == ["accept", "eof", "accept"], 30)
        self.assertTrue(ok, "connection events: %s" % events)
        self.assertIn("ApiVersions answer does not decode", m.stderr())

    def test_corrupt_batch(self):
        """A record batch whose bytes were changed in flight (CRC-32C no longer
        matches): the records before it are returned, then every cohort_poll
        returns CORRUPT_MESSAGE and the partition is not fetched again; a seek
        past the batch goes on with the records after it."""
        topic, group, name = "cb-libcohort", "g-cb-libcohort", "libcohort-cb"
        self.corrupt_topic(topic)
        m = self.start(group, topic, name)
        m.wait(lambda s: any(e.startswith("CORRUPT_MESSAGE") for e in s.errors), 60,
               "CORRUPT_MESSAGE from poll")
        self.assertEqual([o for (t, p_, o, us) in m.msgs], [0, 1, 2])
        fetches = self.requests(name, API_FETCH)
        m.wait(lambda s: len([e for e in s.errors if e.startswith("CORRUPT_MESSAGE")]) >= 5, 30,
               "CORRUPT_MESSAGE from every poll")
        self.assertEqual(self.requests(name, API_FETCH), fetches,
                         "the corrupt partition was fetched again")
        self.assertIsNone(m.fatal)
        self.assertIn("corrupt record batch at offset 3", m.stderr())
        m.send("seek %s 0 4" % topic)
        m.wait(lambda s: [o for (t, p_, o, us) in s.msgs][-2:] == [4, 5], 30,
               "the records after the seek")
        self.assertEqual([o for (t, p_, o, us) in m.msgs], [0, 1, 2, 4, 5])
        self.assertEqual(m.close(), 0)

    def test_corrupt_batch_after_queued_records(self):
        """The batch at the fetch position is found corrupt while records
        fetched before it still wait for the application (one record a poll,
        a slow one): those records come first, then CORRUPT_MESSAGE (poll
        used to answer CORRUPT_MESSAGE at once and never return them)."""
        topic, group, name = "cq-libcohort", "g-cq-libcohort", "libcohort-cq"
        self.corrupt_topic(topic)
        # the Fetch at offset 3 is answered while the member sleeps 400 ms
        # after each of the records 0-2 it took one at a time
        m = self.start(group, topic, name, "max.poll.records=1", delay_ms=400)
        m.wait(lambda s: any(e.startswith("CORRUPT_MESSAGE") for e in s.errors), 60,
               "CORRUPT_MESSAGE from poll")
        self.assertEqual([o for (t, p_, o, us) in m.msgs], [0, 1, 2])
        self.assertIn("corrupt record batch at offset 3", m.stderr())
        self.assertIsNone(m.fatal)
        self.assertEqual(m.close(), 0)

    def test_fatal_find_coordinator(self):
        """FindCoordinator answered GROUP_AUTHORIZATION_FAILED: cohort_committed,
        waiting for the coordinator meanwhile, returns that error at once
        (default.api.timeout.ms is 60 s here), and poll reports it as fatal."""
        topic, group, name = "ff-libcohort", "g-ff-libcohort", "libcohort-ff"
        create_topics(self.broker.port, {topic: 1})
        release = threading.Event()

        def refuse(version, corr, req):
            release.wait(30)  # the committed call is waiting by then
            return find_coordinator_v2(corr, GROUP_AUTHORIZATION_FAILED)
        with self.proxy.lock:
            self.proxy.answer[API_FIND_COORDINATOR] = refuse
        m = self.start(group, topic, name, "default.api.timeout.ms=60000")
        m.wait(lambda s: "READY" in s.lines, 30, "READY")
        wait_until(lambda: self.requests(name, API_FIND_COORDINATOR) >= 1, 30,
                   "FindCoordinator")
        n = len(m.lines)
        m.send("committed %s 0" % topic)
        time.sleep(1.0)   # the command reaches the member, its call waits
        release.set()
        m.wait(lambda s: any(l.startswith("COMMITTED") for l in s.lines[n:]), 30,
               "the committed call's answer")
        got = [l for l in m.lines[n:] if l.startswith("COMMITTED")]
        self.assertEqual(got, ["COMMITTED_ERROR GROUP_AUTHORIZATION_FAILED"])
        m.wait(lambda s: s.fatal is not None, 30, "the fatal error from poll")
        self.assertTrue(m.fatal.startswith("GROUP_AUTHORIZATION_FAILED"), m.fatal)

    def test_async_commit_without_coordinator(self):
        """The coordinator is lost (a heartbeat answered NOT_COORDINATOR) and
        every FindCoordinator after it answered COORDINATOR_NOT_AVAILABLE: an
        async commit made meanwhile gets its callback with _TIMED_OUT once
        default.api.timeout.ms passes."""
        topic, group, name = "ac-libcohort-f", "g-ac-libcohort-f", "libcohort-acf"
        create_topics(self.broker.port, {topic: 1})
        self.produce(topic, 1, 3)
        m = self.start(group, topic, name, "default.api.timeout.ms=3000")
        wait_cover([m], all_parts({topic: 1}))
        m.wait(lambda s: len(s.msgs) >= 3, 30, "the records")
        finds = self.requests(name, API_FIND_COORDINATOR)
        with self.proxy.lock:
            self.proxy.answer[API_FIND_COORDINATOR] = (
                lambda v, corr, req: find_coordinator_v2(corr, COORDINATOR_NOT_AVAILABLE))
            self.proxy.inject.append(NOT_COORDINATOR)
        wait_until(lambda: self.requests(name, API_FIND_COORDINATOR) > finds + 1, 30,
                   "FindCoordinator failing")
        m.send("commitasync")
        m.wait(lambda s: s.commits, 30, "the async commit's callback")
        self.assertEqual([c[:4] for c in m.commits], [(topic, 0, 3, "_TIMED_OUT")])
        self.assertIsNone(m.fatal)

    def test_stale_epoch_auto_commit(self):
        """A consumer-protocol member with enable.auto.commit whose OffsetCommit
        is answered STALE_MEMBER_EPOCH: the application's commit returns the
        error (Java's commitSync: CommitFailedException), while the auto-commit
        before the close's revoke is sent again with the member's epoch and
        lands (Java's auto-commit before revocation retries it)."""
        topic, group, name = "se-libcohort", "g-se-libcohort", "libcohort-se"
        create_topics(self.broker.port, {topic: 1})
        self.produce(topic, 1, 5)
        argv = [MEMBER, "-C", "-X", "enable.auto.commit=true",
                "-X", "auto.commit.interval.ms=600000"] + member_flags(
            self.proxy_bootstrap, group, [topic], name, "uniform", None, 6000, False,
            0, 0)
        m = MemberProcess(argv, name)
        self.addCleanup(m.cleanup)
        self.addCleanup(self._dump, m)
        wait_cover([m], all_parts({topic: 1}))
        m.wait(lambda s: len(s.msgs) >= 5, 30, "the records")
        sent = []
        with self.proxy.lock:
            self.proxy.rewrite_request[API_OFFSET_COMMIT] = [move_commit_epoch(sent)]
        m.send("commit %s 0 2" % topic)
        m.wait(lambda s: s.commits, 30, "the commit's result")
        self.assertEqual([c[:4] for c in m.commits], [(topic, 0, 2, "STALE_MEMBER_EPOCH")])
        self.assertEqual(len(sent), 1)
        before = self.requests(name, API_OFFSET_COMMIT)
        with self.proxy.lock:
            self.proxy.rewrite_request[API_OFFSET_COMMIT] = [move_commit_epoch(sent)]
        self.assertEqual(m.close(), 0)
        self.assertEqual(len(sent), 2, "the auto-commit before the revoke was not sent")
        self.assertGreaterEqual(self.requests(name, API_OFFSET_COMMIT), before + 2,
                                "the stale auto-commit was not sent again")
        with kwire.Conn(self.broker.port) as c:
            got = kwire.offset_fetch(c, 8, group, {topic: [0]})
        self.assertEqual(got[(topic, 0)][0], 5, "the auto-commit before the revoke")
        self.assertIsNone(m.fatal)

    def test_poll_timeout_leave_reason(self):
        """max.poll.interval.ms passes without a poll: the member sends
        LeaveGroup with KIP-800's reason in Java's words, its partitions are
        lost, and it joins again at its next poll."""
        topic, group, name = "pl-libcohort", "g-pl-libcohort", "libcohort-pl"
        create_topics(self.broker.port, {topic: 1})
        self.produce(topic, 1, 2)
        leaves = []

        def record(version, corr, req):
            with self.proxy.lock:
                leaves.append((version, req))
            return None   # forwarded to cohortd
        with self.proxy.lock:
            self.proxy.answer[13] = record
        argv = [MEMBER, "-X", "max.poll.interval.ms=2000"] + member_flags(
            self.proxy_bootstrap, group, [topic], name, "range", None, 6000, False, 0,
            2500)   # 2.5 s per record: 5 s between two polls
        m = MemberProcess(argv, name)
        self.addCleanup(m.cleanup)

        def lost_then_assigned(s):
            kinds = [k for k, _ in s.events if k in ("ASSIGNED", "LOST")]
            return "LOST" in kinds and "ASSIGNED" in kinds[kinds.index("LOST"):]
        m.wait(lost_then_assigned, 60, "LOST, then ASSIGNED again")
        with self.proxy.lock:
            got = list(leaves)
        self.assertTrue(got, "no LeaveGroup")
        self.assertGreaterEqual(got[0][0], 5, "LeaveGroup v5+ carries the reason")
        self.assertIn(b"consumer poll timeout has expired.", got[0][1])
        self.assertIsNone(m.fatal)


class LibcohortFaultsKafka(LibcohortFaults):
    """test_stale_epoch_auto_commit against Apache Kafka 4.4.0 (the proxy in
    front of it, Kafka advertising the proxy): Kafka's coordinator answers
    the moved epoch STALE_MEMBER_EPOCH and takes the resent auto-commit. The
    other scenarios are the client's against answers the proxy or a fake
    server writes, whatever broker is behind: cohortd's class runs them."""

    test_apiversions_undecodable = None
    test_corrupt_batch = None
    test_corrupt_batch_after_queued_records = None
    test_fatal_find_coordinator = None
    test_async_commit_without_coordinator = None
    test_poll_timeout_leave_reason = None
    proxy_port = free_port()
    proxy_bootstrap = "127.0.0.1:%d" % proxy_port

    @classmethod
    def start_broker(cls):
        cls.broker = start_clean(KafkaRef("4", settings=dict(CONSUMER_SETTINGS, **{
            "advertised.listeners": "PLAINTEXT://" + cls.proxy_bootstrap}), name=cls.__name__))


if __name__ == "__main__":
    main()
