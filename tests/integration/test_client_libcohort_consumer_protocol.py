"""libcohort with group.protocol=consumer (KIP-848) against cohortd and
against Apache Kafka 4.4.0 in the same test: c/cohort_member.c -C members
heartbeat with ConsumerGroupHeartbeat and reconcile the broker's
assignment (revoke, acknowledge, then take), with the scenarios every
consumer-protocol client runs here:

- consume_through_rebalances (the broker's uniform assignor): members join,
  one leaves (epoch -1), one is killed (its partitions move when its
  session expires); every record read, none re-read across the graceful
  moves (commits in the revoke callback, OffsetCommit v9 with the member
  id and epoch), the final commits are the end offsets, after each
  rebalance every partition owned exactly once;
- a mixed group of libcohort and confluent-kafka 2.16.1 consumer-protocol
  members (cohortd): every partition owned once as members come and go;
- a member frozen past its session is fenced when it resumes: its
  partitions are lost (the lost callback) and it joins again;
- a static member that closes (epoch -2) and comes back under its instance
  id gets its partitions back, and the other member sees no rebalance;
- a pattern subscription (cohort_subscribe_pattern) goes to the broker as
  SubscribedTopicRegex, RE2 syntax (`\\d`, which POSIX regex.h does not
  know): the member joins while nothing matches, takes a matching topic
  created after it joined, drops one that is deleted, and resubscribed to
  names owns only those (the regex cleared with ""); a pattern the broker
  cannot compile fails the member with INVALID_REGULAR_EXPRESSION;
- against a broker without ConsumerGroupHeartbeat (cohortd behind
  version_proxy.py without API 68) the consumer fails with
  UNSUPPORTED_VERSION at once, as librdkafka and Java do; with v0 only, a
  pattern member fails the same way without a heartbeat sent (Java's
  UnsupportedVersionException) rather than falling back to names.
"""
import os
import time

import kwire
from client_scenarios import HERE, VENV_PYTHON, ClientGroupTest, describe_cover, member_flags, \
    wait_cover
from harness import Broker, free_port, main, start_clean, stop_clean
from kafka_ref import KafkaRef
from test_consumer_protocol import CONSUMER_SETTINGS
from test_group_helpers import MemberProcess, all_parts, create_topics, wait_until
from version_proxy import VersionProxy

MEMBER = os.environ.get("COHORT_MEMBER", "")
PY_MEMBER = os.path.join(HERE, "py_member.py")


class LibcohortConsumerProtocol(ClientGroupTest):
    """Against cohortd."""

    CLIENT = "lcp"
    broker_settings = CONSUMER_SETTINGS

    @classmethod
    def setUpClass(cls):
        if not os.access(MEMBER, os.X_OK):
            raise SystemExit("FAIL: COHORT_MEMBER (it_cohort_member) not built: %r" % MEMBER)
        super().setUpClass()

    def member_argv(self, *flags):
        return [MEMBER, "-C"] + member_flags(self.broker.bootstrap, *flags)

    def confluent(self, group, topics, name, instance=None):
        argv = [VENV_PYTHON, PY_MEMBER, "--client", "confluent", "--protocol", "consumer"] + \
            member_flags(self.broker.bootstrap, group, topics, name, "uniform", instance,
                         3000, True, 20, 0)
        m = MemberProcess(argv, name)
        self.addCleanup(m.cleanup)
        return m

    def test_consume_through_rebalances(self):
        self.consume_through_rebalances("uniform")

    def test_lost_after_stop(self):
        """Frozen past its session: fenced when it resumes (LOST, then a
        join at epoch 0)."""
        self.lost_after_stop("uniform")

    def test_mixed_group_with_confluent(self):
        """libcohort and librdkafka consumer-protocol members in one group:
        as each joins and leaves, every partition is owned exactly once."""
        topic, group = "mx-lcp", "g-mx-lcp"
        create_topics(self.broker.port, {topic: 6})
        parts = all_parts({topic: 6})
        a = self.member(group, [topic], "lcp-ma", assignor="uniform")
        wait_cover([a], parts)
        b = self.confluent(group, [topic], "cp-mb")
        wait_cover([a, b], parts, each_owns=True)
        c = self.member(group, [topic], "lcp-mc", assignor="uniform")
        wait_cover([a, b, c], parts, each_owns=True)
        self.assertEqual(a.close(), 0)
        wait_cover([b, c], parts, each_owns=True)
        for m in (b, c):
            self.assertIsNone(m.fatal, m.name)
            self.assertEqual(m.close(), 0)

    def pattern_member(self, group, pattern, name):
        m = MemberProcess(self.member_argv(group, ["-"], name, "uniform", None, 3000, True, 0, 0)
                          + ["-T", pattern], name)
        self.addCleanup(m.cleanup)
        self.addCleanup(self._dump, m)
        return m

    def test_pattern_subscription(self):
        """The broker matches the pattern (RE2: `\\d`): joined with nothing
        matching, a topic created later joins the assignment, a deleted one
        leaves it; resubscribed to names, only the names."""
        group, other = "g-rx-lcp", "rxno-lcp"
        create_topics(self.broker.port, {other: 2, "rx-lcp-x": 1})
        m = self.pattern_member(group, r"rx-lcp-\d+", "lcp-rx")
        m.wait(lambda s: ("ASSIGNED", frozenset()) in s.events, 60, "an empty assignment")
        create_topics(self.broker.port, {"rx-lcp-1": 2})
        wait_cover([m], all_parts({"rx-lcp-1": 2}))
        create_topics(self.broker.port, {"rx-lcp-22": 1})
        wait_cover([m], all_parts({"rx-lcp-1": 2, "rx-lcp-22": 1}))
        with kwire.Conn(self.broker.port) as c:
            res = kwire.delete_topics(c, ["rx-lcp-1"])["results"]
        self.assertEqual([(t["name"], t["error_code"]) for t in res], [("rx-lcp-1", 0)])
        wait_cover([m], all_parts({"rx-lcp-22": 1}))
        k = len(m.lines)
        m.send("subscribe " + other)
        m.wait(lambda s: "SUBSCRIBED NO_ERROR" in s.lines[k:], 30, "SUBSCRIBED NO_ERROR")
        # a regex kept by the broker would add rx-lcp-22 to the names
        wait_cover([m], all_parts({other: 2}))
        time.sleep(1)
        self.assertEqual(m.assignment, all_parts({other: 2}), describe_cover([m]))
        self.assertIsNone(m.fatal)
        self.assertEqual(m.close(), 0)

    def test_invalid_pattern(self):
        """A pattern RE2 refuses: the broker's INVALID_REGULAR_EXPRESSION, fatal."""
        m = self.pattern_member("g-rxbad-lcp", "rx-bad-(", "lcp-rxbad")
        wait_until(lambda: m.fatal, 60, "the member's fatal error")
        self.assertTrue(m.fatal.startswith("INVALID_REGULAR_EXPRESSION"), m.fatal)

    def test_static_member_returns(self):
        """A static member that closes (epoch -2) and comes back under its
        instance id within the session gets its partitions back; the other
        member sees no rebalance."""
        topic, group = "st-lcp", "g-st-lcp"
        create_topics(self.broker.port, {topic: 4})
        parts = all_parts({topic: 4})
        a = self.member(group, [topic], "lcp-sa", assignor="range", instance="inst-a")
        b = self.member(group, [topic], "lcp-sb", assignor="range", instance="inst-b")
        wait_cover([a, b], parts, each_owns=True)
        a_parts, b_events = set(a.assignment), b.n_rebalance_events()
        self.assertEqual(a.close(), 0)
        time.sleep(1.5)  # five heartbeat intervals of b while inst-a is away
        a2 = self.member(group, [topic], "lcp-sa2", assignor="range", instance="inst-a")
        wait_cover([a2, b], parts, each_owns=True)
        self.assertEqual(a2.assignment, a_parts, describe_cover([a2, b]))
        self.assertEqual(b.n_rebalance_events(), b_events, "b saw a rebalance: %s" % b.events)
        for m in (a2, b):
            self.assertIsNone(m.fatal, m.name)
            self.assertEqual(m.close(), 0)


class LibcohortConsumerProtocolKafka(LibcohortConsumerProtocol):
    """The same scenarios against Apache Kafka 4.4.0, but the mixed group
    (cohortd's only: the test's time budget; libcohort meets Kafka's
    coordinator in every other scenario)."""

    test_mixed_group_with_confluent = None

    @classmethod
    def setUpClass(cls):
        if not os.access(MEMBER, os.X_OK):
            raise SystemExit("FAIL: COHORT_MEMBER (it_cohort_member) not built: %r" % MEMBER)
        cls.broker = start_clean(KafkaRef("4", settings=dict(CONSUMER_SETTINGS),
                                          name=cls.__name__))

    @classmethod
    def tearDownClass(cls):
        stop_clean(cls.broker)


class LibcohortConsumerProtocolOldBroker(ClientGroupTest):
    """A broker without ConsumerGroupHeartbeat: cohortd behind
    version_proxy.py, which takes API 68 out of ApiVersions."""

    CLIENT = "lcp-old"

    @classmethod
    def setUpClass(cls):
        if not os.access(MEMBER, os.X_OK):
            raise SystemExit("FAIL: COHORT_MEMBER (it_cohort_member) not built: %r" % MEMBER)
        port = free_port()
        cls.broker = start_clean(Broker(settings=dict(CONSUMER_SETTINGS, **{
            "advertised.listeners": "PLAINTEXT://127.0.0.1:%d" % port})))
        cls.proxy = VersionProxy(cls.broker.port, {18: 2, 68: -1}, port)
        cls.bootstrap = "127.0.0.1:%d" % port

    @classmethod
    def tearDownClass(cls):
        cls.proxy.close()
        stop_clean(cls.broker)

    def member_argv(self, *flags):
        return [MEMBER, "-C"] + member_flags(self.bootstrap, *flags)

    def test_fails_with_unsupported_version(self):
        create_topics(self.broker.port, {"old-lcp": 2})
        m = self.member("g-old-lcp", ["old-lcp"], "lcp-old", assignor="uniform")
        wait_until(lambda: m.fatal, 60, "the member's fatal error")
        self.assertTrue(m.fatal.startswith("UNSUPPORTED_VERSION"), m.fatal)
        self.assertEqual(m.assignment, set())
        with self.proxy.lock:
            self.assertEqual([k for cid, k, v in self.proxy.seen if k == 68], [])

    def test_pattern_needs_v1(self):
        """ConsumerGroupHeartbeat v0 only: no SubscribedTopicRegex there, so a
        pattern member fails with UNSUPPORTED_VERSION before any heartbeat,
        rather than match client-side and send names (Java's builder throws
        UnsupportedVersionException)."""
        with self.proxy.lock:
            self.proxy.caps[68] = 0
        self.addCleanup(self.proxy.caps.__setitem__, 68, -1)
        create_topics(self.broker.port, {"old-rx-lcp": 2})
        m = MemberProcess(self.member_argv("g-old-rx-lcp", ["-"], "lcp-old-rx", "uniform", None,
                                           3000, True, 0, 0) + ["-T", "old-rx-.*"], "lcp-old-rx")
        self.addCleanup(m.cleanup)
        wait_until(lambda: m.fatal, 60, "the member's fatal error")
        self.assertTrue(m.fatal.startswith("UNSUPPORTED_VERSION"), m.fatal)
        self.assertIn("regular expressions resolution", m.stderr())
        self.assertEqual(m.assignment, set())
        with self.proxy.lock:
            self.assertEqual([k for cid, k, v in self.proxy.seen if k == 68], [])


if __name__ == "__main__":
    main()
