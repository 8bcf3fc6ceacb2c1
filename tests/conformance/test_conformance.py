#!/usr/bin/env python3
"""Differential conformance: the same scripted conversations to cohortd and to
Apache Kafka (tools/kafka-ref.sh), compared field by field (conform.py).

One cohortd, one Kafka 4.x and one Kafka 3.9 per run, shared by every scenario
and configured alike (SETTINGS). A scenario runs against Kafka 4.x when 4.x
advertises every request version it sends, else against 3.9 (the versions
KIP-896 removed). Scenarios live in sc_*.py, one module per area; each test
method below runs one module and fails with every difference it found.

    COHORTD=build-asan/cohortd /usr/bin/python3 tests/conformance/test_conformance.py
    CONFORMANCE_ONLY=regex ...   run only the scenarios whose name matches
    CONFORMANCE_VERBOSE=1 ...    also print each scenario's timing and accepted differences
"""
import os
import re
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
sys.path.insert(0, HERE)

import conform  # noqa: E402
import harness  # noqa: E402
import kproto  # noqa: E402
from kafka_ref import KafkaRef  # noqa: E402

import sc_admin  # noqa: E402
import sc_consumer_group  # noqa: E402
import sc_data  # noqa: E402
import sc_group  # noqa: E402

# Settings both brokers get (and why each matters to a comparison).
SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",   # first joins answer at once on both
    "offsets.topic.num.partitions": "1",       # Kafka loads one coordinator partition quickly
    "num.partitions": "1",                     # auto-created topics
    "auto.create.topics.enable": "true",
    "group.max.size": "3",                     # GROUP_MAX_SIZE_REACHED scenarios
    "group.min.session.timeout.ms": "500",     # session-expiry scenarios in seconds, not minutes
    "group.max.session.timeout.ms": "60000",
    # Consumer groups (sc_consumer_group): Kafka 4.3+ computes a new target
    # assignment at most once a second (interval 1000) and on a background
    # thread (offload): a heartbeat that changes the group would be answered
    # before its target exists, at a moment neither script can see. cohortd's
    # defaults are 0 and offload from 10,000 partitions on.
    "group.consumer.assignment.interval.ms": "0",
    "group.consumer.assignor.offload.enable": "false",
    "group.consumer.max.size": "2",            # GROUP_MAX_SIZE_REACHED
}

PROTO = kproto.Protocol()
BROKERS = {}          # "cohortd" / "4" / "3.9" -> broker object
ADVERTISED = {}       # same keys -> {api name: (lo, hi)}
TIMINGS = {}


def advertised(port):
    c = kproto.Conn(port, PROTO)
    try:
        r = c.call("ApiVersions", 3, {"ClientSoftwareName": "conformance",
                                      "ClientSoftwareVersion": "1"})
    finally:
        c.close()
    assert r["ErrorCode"] == 0, r
    return {PROTO.by_key[k["ApiKey"]]: (k["MinVersion"], k["MaxVersion"])
            for k in r["ApiKeys"] if k["ApiKey"] in PROTO.by_key}


def wait_ready(port, deadline=120.0):
    """The group coordinator answers (Kafka creates __consumer_offsets on the
    first FindCoordinator and loads it asynchronously)."""
    c = kproto.Conn(port, PROTO)
    end = time.monotonic() + deadline
    try:
        while True:
            r = c.call("FindCoordinator", 4, {"KeyType": 0, "CoordinatorKeys": ["warmup"]})
            if r["Coordinators"][0]["ErrorCode"] == 0:
                g = c.call("OffsetFetch", 8, {"Groups": [{"GroupId": "warmup", "Topics": None}]})
                if g["Groups"][0]["ErrorCode"] == 0:
                    return
            if time.monotonic() > end:
                raise AssertionError("coordinator on port %d not ready: %r" % (port, r))
            time.sleep(0.05)
    finally:
        c.close()


class BrokerThread(threading.Thread):
    """Starts one broker, keeps it until stop(), stops it. The brokers start in
    parallel (a JVM takes seconds), and each must stay the child of a live
    thread: PR_SET_PDEATHSIG (harness) fires when the thread that forked the
    process ends, not the process."""

    def __init__(self, broker):
        super().__init__(daemon=True)
        self.broker = broker
        self.ready = threading.Event()
        self.done = threading.Event()
        self.error = None
        self.stop_rc = None

    def run(self):
        try:
            self.broker.start()
            wait_ready(self.broker.port)
        except BaseException as e:   # reported by the main thread
            self.error = e
        self.ready.set()
        self.done.wait()
        try:
            self.stop_rc = self.broker.stop()
        except BaseException as e:
            self.error = e

    def stop(self):
        self.done.set()
        self.join()
        self.broker.cleanup()
        if self.error:
            raise self.error


THREADS = []


def setUpModule():
    t0 = time.monotonic()
    BROKERS["cohortd"] = harness.Broker(settings=SETTINGS, name="cohortd")
    BROKERS["4"] = KafkaRef("4", settings=SETTINGS)
    BROKERS["3.9"] = KafkaRef("3.9", settings=SETTINGS)
    for b in BROKERS.values():
        THREADS.append(BrokerThread(b))
        THREADS[-1].start()
    for t in THREADS:
        t.ready.wait()
    errors = [t.error for t in THREADS if t.error]
    if errors:
        for t in THREADS:
            t.done.set()
            t.join()
            t.broker.cleanup()
        raise errors[0]
    for name, b in BROKERS.items():
        ADVERTISED[name] = advertised(b.port)
    TIMINGS["start"] = time.monotonic() - t0


def tearDownModule():
    t0 = time.monotonic()
    errors = []
    for t in THREADS:
        try:
            t.stop()
        except BaseException as e:
            errors.append(e)
    TIMINGS["stop"] = time.monotonic() - t0
    total = sum(TIMINGS.values())
    print("\nconformance timings: %s; total %.1f s" % (
        ", ".join("%s %.1f s" % kv for kv in TIMINGS.items()), total), file=sys.stderr)
    if errors:
        raise errors[0]


class Context:
    """What a scenario module may ask: names unique to this run, the versions
    each broker advertises."""

    def __init__(self, area):
        self.area = area
        self.n = 0
        self.proto = PROTO
        self.advertised = ADVERTISED

    def name(self, what):
        self.n += 1
        return "%s-%s-%d" % (self.area, what, self.n)


def pick_ref(sc):
    """Kafka 4.x if it advertises every (api, version) the scenario sends, else 3.9."""
    if sc.ref != "auto":
        return sc.ref
    for st in sc.steps:
        if st.api is None or st.kind == "raw":
            continue
        lo, hi = ADVERTISED["4"].get(st.api, (1, 0))
        if not lo <= st.version <= hi:
            return "3.9"
    return "4"


# The versions KIP-896 removed in Kafka 4.0 (the highest removed one per API).
# 4.4 still advertises some of them (JoinGroup v0-v1, SyncGroup, Heartbeat and
# LeaveGroup v0, FindCoordinator v0, ...): a scenario that sends one and ran
# against 4.x runs again, with names of its own, against 3.9, the last release
# that serves them all as the old clients knew them.
KIP896_REMOVED = {"Produce": 2, "Fetch": 3, "ListOffsets": 0, "Metadata": 3,
                  "OffsetCommit": 1, "OffsetFetch": 0, "FindCoordinator": 0,
                  "JoinGroup": 1, "SyncGroup": 0, "Heartbeat": 0, "LeaveGroup": 0,
                  "DescribeGroups": 0, "ListGroups": 0}


def sends_removed_version(sc):
    return any(st.api in KIP896_REMOVED and st.kind != "raw"
               and st.version <= KIP896_REMOVED[st.api] for st in sc.steps)


class Conformance(unittest.TestCase):
    maxDiff = None

    def run_module(self, module):
        t0 = time.monotonic()
        problems = []
        count = self.run_pass(module, Context(module.AREA), None, problems)
        # Second pass: the scenarios that send a version KIP-896 removed and
        # ran against 4.x, built again (new group and topic names) for 3.9.
        again = Context(module.AREA + "-k39")
        count += self.run_pass(module, again, "3.9", problems)
        for check in getattr(module, "CHECKS", ()):
            problems += check(Context(module.AREA))
        TIMINGS[module.AREA] = time.monotonic() - t0
        if problems:
            self.fail("%d of %d %s scenarios differ:\n\n%s" % (len(problems), count, module.AREA,
                                                               "\n\n".join(problems)))

    def run_pass(self, module, ctx, only_ref, problems):
        """Runs module's scenarios, each against pick_ref's reference (only_ref
        None), or only those sends_removed_version picks, against only_ref;
        appends what differs to problems; returns how many ran."""
        only = os.environ.get("CONFORMANCE_ONLY")
        verbose = os.environ.get("CONFORMANCE_VERBOSE")
        count = 0
        for sc in module.scenarios(ctx):
            if only and not sc.setup and not re.search(only, sc.name):
                continue
            ref = pick_ref(sc)
            if only_ref is not None:
                if ref == only_ref or not (sc.setup or sends_removed_version(sc)):
                    continue
                ref = only_ref
            count += 1
            if sc.setup and only_ref is None:   # what every scenario relies on: on each reference too
                for other in ("4", "3.9"):
                    if other != ref:
                        err = conform.run_alone(sc.steps, "kafka-" + other, BROKERS[other].port,
                                                PROTO)
                        if err:
                            problems.append("=== setup %s on kafka-%s failed:\n%s"
                                            % (sc.name, other, err))
            accept = list(getattr(module, "ACCEPT", ()))
            if ref == "3.9":   # where 3.9 and 4.x differ, cohortd answering as 4.x
                accept += getattr(module, "ACCEPT_K39", ())
            out = conform.run_scenario(sc, BROKERS["cohortd"].port, "kafka-" + ref,
                                       BROKERS[ref].port, PROTO, accept)
            if verbose:
                print("  %-60s kafka-%-4s %5.2f s %s" % (sc.name, ref, out.seconds,
                                                          "ok" if out.ok else "DIFFERENT"),
                      file=sys.stderr)
                reasons = {}
                for title, path, why in out.accepted:
                    reasons[why] = reasons.get(why, 0) + 1
                for why, n in reasons.items():
                    print("      accepted %d field(s): %s" % (n, why), file=sys.stderr)
            if not out.ok:
                problems.append("=== scenario %s (against kafka-%s)\n%s" % (
                    sc.name, ref, "\n".join(out.failures + out.differences)))
        return count

    def test_admin(self):
        self.run_module(sc_admin)

    def test_group(self):
        self.run_module(sc_group)

    def test_consumer_group(self):
        self.run_module(sc_consumer_group)

    def test_data(self):
        self.run_module(sc_data)


if __name__ == "__main__":
    harness.main()
