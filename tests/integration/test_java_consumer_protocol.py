#!/usr/bin/env python3
"""Apache Kafka's Java client (kafka-clients 4.4) with the consumer rebalance
protocol (KIP-848, group.protocol=consumer) against cohortd and against Kafka
4.4 itself: members join one by one and leave one by one, each committing
synchronously in onPartitionsRevoked; the broker assigns (uniform).

What is asserted is what Kafka defines for this protocol: every record
consumed exactly once (graceful moves, commits in the revoke listener), no
partition owned by two members at one time as the listeners report it,
incremental callbacks (revoked: only what moves), no onPartitionsLost
without a failure, the committed offsets read back with the AdminClient, and
the AdminClient describing the group as a `consumer` group with its
members and their assignments (each a consumer-protocol member: MemberType,
ConsumerGroupDescribe v1) and describeClassicGroups refusing it
(GROUP_ID_NOT_FOUND, DescribeGroups v6).

subscribe(SubscriptionPattern) (the broker matches the pattern, RE2): a
group of a pattern member and a names member is balanced, a matching topic
created later goes to the pattern member only, and a pattern RE2 refuses
fails poll() with the same InvalidRegularExpression on both brokers."""

from harness import main, start_clean, stop_clean
from java_clients import (JavaAdmin, JavaClientsTestCase, JavaConsumer, check_installed,
                          java_produce)
from kafka_ref import KafkaRef
from test_group_helpers import GROUP_SETTINGS, create_topics, wait_until

PARTS = 6
# Short enough that a crashed member's partitions move within seconds, long
# enough for a static member's new JVM to start and rejoin inside the session
# on a loaded machine (3 s was not: a start took 3.9 s under make test)
CONSUMER_SETTINGS = dict(GROUP_SETTINGS, **{
    "group.consumer.min.session.timeout.ms": "3000",
    "group.consumer.session.timeout.ms": "10000",
    "group.consumer.min.heartbeat.interval.ms": "300",
    "group.consumer.heartbeat.interval.ms": "300",
})
PER_ROUND = 20      # records per partition per produce round


class JavaConsumerProtocol(JavaClientsTestCase):
    broker_settings = CONSUMER_SETTINGS

    def consumer(self, group, topic, name, instance=None, wait_go=False):
        """topic: a name, or "re2:PATTERN" (subscribe(SubscriptionPattern))."""
        c = JavaConsumer(self.broker.bootstrap, group, [topic], name=name, protocol="consumer",
                         assignor="uniform", instance=instance, wait_go=wait_go)
        self.procs.append(c)
        return c

    def wait_cover(self, consumers, parts, timeout=60):
        """Until the consumers' latest assignments are disjoint, together
        PARTS and balanced (uniform's target; the states on the way there may
        cover PARTS unevenly while a partition waits for its revocation)."""
        def covered():
            sets = [c.assignment() for c in consumers]
            sizes = [len(x) for x in sets]
            return (sum(sizes) == len(parts) and set().union(*sets) == parts
                    and max(sizes) - min(sizes) <= 1) and sets
        try:
            return wait_until(covered, timeout, "%d members owning %d partitions"
                              % (len(consumers), len(parts)))
        except AssertionError as e:
            raise AssertionError("%s: %s" % (e, "; ".join(
                "%s=%s (%s)" % (c.name, sorted(c.assignment()), c.of("error")) for c in consumers)))

    def wait_consumed(self, consumers, count, timeout=60):
        wait_until(lambda: len({m for c in consumers for m in c.consumed()}) >= count,
                   timeout, "%d records consumed" % count)

    def check_timeline(self, consumers):
        """No partition owned by two members at one moment: each driver says
        what it owns from when on ("owns" events, CLOCK_MONOTONIC stamps,
        comparable across the processes of one machine)."""
        owns = sorted((e["us"], c.name, frozenset(e["assignment"]))
                      for c in consumers for e in c.of("owns"))
        current = {}
        for us, name, parts in owns:
            current[name] = parts
            for other, theirs in current.items():
                if other != name:
                    self.assertFalse(parts & theirs, "at %d us %s and %s both own %s"
                                     % (us, name, other, sorted(parts & theirs)))

    def check_listener_order(self, c):
        """Incremental callbacks, each revoke followed by its commit, no loss."""
        evs = [e for e in c.events if e["ev"] in ("assigned", "revoked", "lost", "commit", "closed")]
        self.assertEqual(evs[-1]["ev"], "closed")
        owned = set()
        for i, e in enumerate(evs):
            if e["ev"] == "assigned":
                self.assertFalse(owned & set(e["parts"]), "assigned twice: %s" % e)
                owned |= set(e["parts"])
                self.assertEqual(owned, set(e["assignment"]), e)
            elif e["ev"] == "revoked":
                self.assertTrue(set(e["parts"]) <= owned, e)
                if e["parts"]:
                    nxt = evs[i + 1]
                    self.assertEqual(nxt["ev"], "commit", "a synchronous commit inside onPartitionsRevoked")
                    self.assertIsNone(nxt["error"], nxt)
                owned -= set(e["parts"])
            elif e["ev"] == "lost":
                self.fail("partitions lost without a failure: %s" % e)
        self.assertEqual(owned, set(), "close revokes everything")

    def test_scale_out_and_in(self):
        topic, group = "jcp", "g-jcp"
        create_topics(self.broker.port, {topic: PARTS})
        parts = {"%s:%d" % (topic, p) for p in range(PARTS)}
        produced = 0

        def produce():
            nonlocal produced
            java_produce(self.broker.bootstrap, topic, PER_ROUND * PARTS, PARTS)
            produced += PER_ROUND * PARTS

        produce()
        c1 = self.consumer(group, topic, "jcp-1")
        self.wait_cover([c1], parts)
        self.wait_consumed([c1], produced)
        c2 = self.consumer(group, topic, "jcp-2")
        self.wait_cover([c1, c2], parts)
        produce()
        c3 = self.consumer(group, topic, "jcp-3")
        self.wait_cover([c1, c2, c3], parts)
        self.wait_consumed([c1, c2, c3], produced)

        admin = JavaAdmin(self.broker.bootstrap)
        self.procs.append(admin)
        owned = {c.name: c.assignment() for c in (c1, c2, c3)}

        def described():
            # the broker's view catches up with the members' at their next heartbeat
            d = admin.ok("describeConsumerGroups", group)[group]
            return d["state"] == "Stable" and d
        desc = wait_until(described, 30, "the group described as Stable")
        self.assertEqual(desc["type"], "Consumer", desc)
        self.assertEqual({m["client"]: set(m["assignment"]) for m in desc["members"]}, owned)
        # ConsumerGroupDescribe v1 (KIP-1099): MemberType 1, consumer-protocol members
        self.assertEqual([m["upgraded"] for m in desc["members"]], [True] * 3, desc)
        # DescribeGroups v6 (KIP-1043): not a classic group, GROUP_ID_NOT_FOUND
        # (describeClassicGroups keeps the code only: Errors' own message)
        self.assertEqual(admin.ok("describeClassicGroups", group)[group],
                         {"error": "GroupIdNotFoundException", "message": "The group id does not exist."})

        self.assertEqual(c1.close(), 0)
        self.wait_cover([c2, c3], parts)
        produce()
        self.wait_consumed([c1, c2, c3], produced)
        self.assertEqual(c2.close(), 0)
        self.wait_cover([c3], parts)
        self.assertEqual(c3.close(), 0)

        everyone = (c1, c2, c3)
        seen = [m for c in everyone for m in c.consumed()]
        self.assertEqual(sorted({m for m in seen if seen.count(m) > 1}), [], "records consumed twice")
        self.assertEqual(set(seen), {(tp, o) for tp in parts for o in range(produced // PARTS)})
        self.check_timeline(everyone)
        for c in everyone:
            self.check_listener_order(c)
        offsets = admin.ok("listConsumerGroupOffsets", group)
        self.assertEqual({tp: o["offset"] for tp, o in offsets.items()},
                         {tp: produced // PARTS for tp in parts})
        admin.close()

    def test_static_restart_and_crash(self):
        """A static member that closes (leave epoch -2) and returns under its
        instance id within the session gets its partitions back and the other
        member sees no callback; then the other crashes (no leave) and its
        partitions reach the survivor once its session expires."""
        topic, group = "jcp-static", "g-jcp-static"
        create_topics(self.broker.port, {topic: 4})
        parts = {"%s:%d" % (topic, p) for p in range(4)}
        a = self.consumer(group, topic, "jcp-sa", instance="inst-a")
        b = self.consumer(group, topic, "jcp-sb", instance="inst-b")
        self.wait_cover([a, b], parts)
        a_parts, b_events = a.assignment(), len(b.of("assigned", "revoked", "lost"))
        # a2's JVM starts first: under load a JVM start can outlast the
        # session (10 s), and then a's partitions would move to b
        a2 = self.consumer(group, topic, "jcp-sa2", instance="inst-a", wait_go=True)
        a2.wait(lambda e: e.get("ev") == "started", 120, "a2's JVM")
        self.assertEqual(a.close(), 0)
        a2.go()
        self.wait_cover([a2, b], parts)
        self.assertEqual(a2.assignment(), a_parts)
        self.assertEqual(len(b.of("assigned", "revoked", "lost")), b_events,
                         "b saw a rebalance: %s" % b.of("assigned", "revoked", "lost"))
        b.send("exit")                 # a crash: no leave
        b.proc.wait(30)
        self.wait_cover([a2], parts, timeout=30)
        self.assertEqual(a2.close(), 0)
        self.check_listener_order(a2)

    def test_subscription_pattern(self):
        """A pattern member (`\\d`: RE2, not java.util.regex's client-side
        matching) and a names member share jrx-1 evenly; jrx-22, created
        later, matches the pattern only: the pattern member takes it and the
        group stays balanced; the names member never owns it."""
        group = "g-jrx"
        create_topics(self.broker.port, {"jrx-1": 4, "jrx-x": 1})
        p = self.consumer(group, r"re2:jrx-\d+", "jrx-pattern")
        n = self.consumer(group, "jrx-1", "jrx-names")
        one = {"jrx-1:%d" % i for i in range(4)}
        self.wait_cover([p, n], one)
        create_topics(self.broker.port, {"jrx-22": 2})
        both = one | {"jrx-22:0", "jrx-22:1"}
        self.wait_cover([p, n], both)
        self.assertTrue(n.assignment() <= one, n.assignment())
        for c in (p, n):
            self.assertEqual(c.close(), 0)
            self.check_listener_order(c)
        self.check_timeline([p, n])

    def test_invalid_pattern(self):
        """A pattern RE2 cannot compile: the broker answers
        INVALID_REGULAR_EXPRESSION and poll() throws it (fatal)."""
        c = self.consumer("g-jrx-bad", "re2:jrx-(", "jrx-bad")
        ev = c.wait(lambda e: e["ev"] == "error", 60, "poll's error")
        self.assertEqual((ev["error"], ev["message"]), (
            "InvalidRegularExpression",
            "Invalid RE2J SubscriptionPattern provided in the call to subscribe. "
            "SubscribedTopicRegex `jrx-(` is not a valid regular expression: missing closing )."))
        self.assertEqual(c.proc.wait(30), 4)


class JavaConsumerProtocolKafka(JavaConsumerProtocol):
    """The same against Apache Kafka 4.4.0 with the same group.consumer.* settings."""

    @classmethod
    def setUpClass(cls):
        check_installed()
        cls.broker = start_clean(KafkaRef("4", settings=dict(CONSUMER_SETTINGS), name=cls.__name__))

    @classmethod
    def tearDownClass(cls):
        stop_clean(cls.broker)


if __name__ == "__main__":
    main()
