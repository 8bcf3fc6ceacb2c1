#!/usr/bin/env python3
"""libcohort's admin client (cohort_admin_*, driven by c/cohort_admin.c)
against cohortd and against Apache Kafka 4.4 in one run, cross-checked at
every step with Kafka's own Java AdminClient (java/cohortit/AdminDriver.java)
looking at the same groups and topics at the same moment: what libcohort
reports must equal what Java reports, on both brokers. The groups are real:
Java consumers that consumed and committed and left (Empty), one still in
the group (Stable), a static member, a group with commits only (simple), a
group that does not exist. The test also checks the values it knows."""
import json
import os
import re
import subprocess
import sys
import threading
import time
import unittest

import harness
from java_clients import (JavaAdmin, JavaConsumer, check_installed, java_produce,
                          java_produce_topics)
import kwire
from kafka_ref import BothBrokers
from test_group_helpers import GROUP_SETTINGS
from version_proxy import VersionProxy

ADMIN = os.environ.get("COHORT_ADMIN", "")

# Java exception classes and the Kafka error each one stands for (Errors.java).
JAVA_ERRORS = {
    "GroupIdNotFoundException": "GROUP_ID_NOT_FOUND",
    "GroupNotEmptyException": "NON_EMPTY_GROUP",
    "UnknownMemberIdException": "UNKNOWN_MEMBER_ID",
    "GroupSubscribedToTopicException": "GROUP_SUBSCRIBED_TO_TOPIC",
    "UnknownTopicOrPartitionException": "UNKNOWN_TOPIC_OR_PARTITION",
    "TopicExistsException": "TOPIC_ALREADY_EXISTS",
    "InvalidPartitionsException": "INVALID_PARTITIONS",
    "InvalidReplicationFactorException": "INVALID_REPLICATION_FACTOR",
    "InvalidConfigurationException": "INVALID_CONFIG",
    "InvalidTopicException": "INVALID_TOPIC_EXCEPTION",
    "TimeoutException": "_TIMED_OUT",
    "UnsupportedVersionException": "UNSUPPORTED_VERSION",
    "IllegalArgumentException": "_INVALID_ARG",
}


class CohortAdmin:
    """it_cohort_admin: one command, one JSON answer."""

    def __init__(self, bootstrap, *props):
        self.proc = subprocess.Popen([ADMIN, bootstrap] + list(props), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=harness._pdeathsig)
        self.stderr = []
        self._t = threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True)
        self._t.start()
        ready = self.proc.stdout.readline()
        if '"ready"' not in ready:
            raise AssertionError("it_cohort_admin did not start: %r %s" % (ready, "".join(self.stderr)))

    def call(self, *words):
        self.proc.stdin.write(" ".join(str(w) for w in words) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError("it_cohort_admin died on %s: %s" % (words, "".join(self.stderr[-30:])))
        return json.loads(line)

    def close(self):
        """quit; the exit status must be 0 (ASan's leak check runs at exit)."""
        if self.proc.poll() is None:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(60)
        self.proc.stdout.close()
        self._t.join(30)
        self.proc.stderr.close()
        if self.proc.returncode != 0:
            raise AssertionError("it_cohort_admin exited %s:\n%s" % (self.proc.returncode, "".join(self.stderr[-60:])))

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except (OSError, ValueError):
                pass


def java_error(v):
    """Java's {"error": CLASS, "message": ..} as {"error": KAFKA_NAME}, at any depth."""
    if isinstance(v, dict) and set(v) == {"error", "message"}:
        return {"error": JAVA_ERRORS.get(v["error"], v["error"])}
    if isinstance(v, dict):
        return {k: java_error(x) for k, x in v.items()}
    if isinstance(v, list):
        return [java_error(x) for x in v]
    return v


def view_same(r):
    return java_error(r)


def view_offsets(r):
    """listConsumerGroupOffsets: Java's map for one group, or libcohort's
    {group: map}; partitions with an error are left out (Java skips them)."""
    r = java_error(r)
    if "ok" not in r:
        return r
    m = r["ok"]
    if len(m) == 1 and all(":" not in k for k in m):   # libcohort: {group: ...}
        m = next(iter(m.values()))
    if isinstance(m, dict) and "error" not in m:
        m = {tp: v for tp, v in m.items() if not (isinstance(v, dict) and "error" in v)}
    return {"ok": m}


def view_list_offsets(r):
    r = java_error(r)
    if "ok" not in r:
        return r
    return {"ok": {tp: v if "error" in v else {"offset": v["offset"], "timestamp": v["timestamp"]}
                   for tp, v in r["ok"].items()}}


def view_remove(r):
    """removeMembersFromConsumerGroup: the members' results in order (Java
    names a member by MemberToRemove's Object.toString)."""
    r = java_error(r)
    if "ok" not in r:
        return r
    return {"ok": {"all": r["ok"]["all"], "members": list(r["ok"]["members"].values())}}


# ---- the views compared: what both clients report, in one shape ----

def view_list(r):
    if "ok" not in r:
        return java_error(r)
    return {"ok": {g: {"type": (v["type"] or "").lower() or None, "protocol": v["protocol"], "state": v["state"],
                       "simple": v["simple"]} for g, v in r["ok"].items()}}


def view_members(ms):
    return sorted(({k: m[k] for k in ("member", "instance", "client", "host", "assignment")} for m in ms),
                  key=lambda m: m["member"])


def view_describe(r):
    """Java's describeConsumerGroups and libcohort's: state,
    assignor, coordinator, members (id, instance, client, host, assignment)."""
    if "ok" not in r:
        return java_error(r)
    out = {}
    for g, d in r["ok"].items():
        d = java_error(d)
        if "error" in d:
            out[g] = d
        else:
            out[g] = {"state": d["state"], "assignor": d["assignor"], "coordinator": d["coordinator"],
                      "members": view_members(d["members"])}
    return {"ok": out}


def settle(ours, what, done):
    """Waits until libcohort's own describeTopics/listTopics answer shows a
    change made a moment ago: Kafka answers CreateTopics, CreatePartitions and
    DeleteTopics once its controller has the change, and its brokers' metadata
    follows a little later (cohortd at once), so both clients must be asked
    after that."""
    deadline = time.monotonic() + 30
    while True:
        r = ours.call(*what)
        if done(r.get("ok", {})):
            return
        if time.monotonic() > deadline:
            raise AssertionError("%s never showed the change: %r" % (what, r))
        time.sleep(0.1)


def scenario(broker, base_ts):
    """The script on one broker; returns [(step, libcohort's view, Java's view, libcohort's raw answer)]."""
    bootstrap = broker.bootstrap
    out = []
    java = JavaAdmin(bootstrap)
    ours = CohortAdmin(bootstrap)
    procs = [java]
    t0 = time.monotonic()

    def compare(name, view, cohort_words, java_words):
        mine = ours.call(*cohort_words)
        theirs = java.call(*java_words)
        out.append((name, view(mine), view(theirs), mine))
        print("  %6.1f s  %s" % (time.monotonic() - t0, name), file=sys.stderr)
        return mine

    def consumer(group, topics, **kw):
        c = JavaConsumer(bootstrap, group, topics, name=group + "-c", **kw)
        procs.append(c)
        return c

    try:
        java.ok("createTopics", "ta:3", "tb:2")
        java_produce_topics(bootstrap, {"ta": (30, 3), "tb": (20, 2)}, timestamps=base_ts)
        e = consumer("ga-empty", ["ta", "tb"])
        e.wait(lambda ev: len(e.of("msg")) >= 50, 90, "50 records")
        e.close()
        s = consumer("ga-stable", ["ta"], assignor="roundrobin")
        s.wait(lambda ev: len(s.of("msg")) >= 30, 90, "30 records")
        n = len(s.events)
        s.send("commit")
        s.wait(lambda ev: ev.get("ev") == "commit", 60, "commit", start=n)
        st = consumer("ga-static", ["tb"], instance="st-1", session_ms=30000)
        st.wait(lambda ev: ev.get("ev") == "assigned", 60, "assignment")
        java.ok("alterConsumerGroupOffsets", "ga-simple", "ta:0=5/simple-meta")

        def own(name, *words):
            """A step with no Java counterpart: checked by test_known_values."""
            r = ours.call(*words)
            out.append((name, r, None, r))
            return r

        own("describeCluster", "describeCluster")
        compare("listGroups", view_list, ["listGroups"], ["listGroups"])
        compare("listGroups classic", view_list, ["listGroups", "types=classic"], ["listGroups", "types=classic"])
        compare("listGroups consumer", view_list, ["listGroups", "types=consumer"], ["listGroups", "types=consumer"])
        compare("listGroups Stable", view_list, ["listGroups", "states=Stable"], ["listGroups", "states=Stable"])
        compare("listGroups Stable,Empty", view_list, ["listGroups", "states=stable,Empty"],
                ["listGroups", "states=Stable,Empty"])
        compare("describe", view_describe, ["describeConsumerGroups", "ga-stable", "ga-empty", "ga-simple", "ga-static"],
                ["describeConsumerGroups", "ga-stable", "ga-empty", "ga-simple", "ga-static"])
        compare("describe missing", view_describe, ["describeConsumerGroups", "ga-missing"],
                ["describeConsumerGroups", "ga-missing"])
        own("findCoordinators", "findCoordinators", "ga-stable", "ga-missing")
        own("describe raw", "describeGroups", "ga-stable", "ga-static")

        # committed offsets, one group at a time and many in one call
        for g in ("ga-stable", "ga-empty", "ga-simple", "ga-missing"):
            compare("offsets " + g, view_offsets, ["listConsumerGroupOffsets", g], ["listConsumerGroupOffsets", g])
        compare("offsets stable requireStable", view_offsets, ["listConsumerGroupOffsets", "ga-stable", "requireStable"],
                ["listConsumerGroupOffsets", "ga-stable", "requireStable"])
        compare("offsets some", view_offsets, ["listConsumerGroupOffsets", "ga-empty", "ta:0", "tb:1", "ta:9", "nosuch:0"],
                ["listConsumerGroupOffsets", "ga-empty", "ta:0", "tb:1", "ta:9", "nosuch:0"])
        own("offsets many", "listConsumerGroupOffsets", "ga-stable,ga-empty,ga-simple,ga-missing")
        # list offsets
        for name, specs in (("earliest", ["ta:0=earliest", "ta:1=earliest", "tb:0=earliest"]),
                            ("latest", ["ta:0=latest", "ta:1=latest", "tb:1=latest"]),
                            ("max", ["ta:1=max", "tb:0=max"]),
                            ("ts 0", ["ta:2=0"]),
                            ("ts mid", ["ta:2=%d" % (base_ts + 3500)]),
                            ("ts last", ["ta:2=%d" % (base_ts + 6000)]),
                            ("ts future", ["ta:2=%d" % (base_ts + 6001)])):
            compare("listOffsets " + name, view_list_offsets, ["listOffsets"] + specs, ["listOffsets"] + specs)
        # one partition twice (Java's Map cannot ask it): each spec its answer
        own("listOffsets twice latest first", "listOffsets", "ta:0=latest", "ta:0=earliest")
        own("listOffsets twice earliest first", "listOffsets", "ta:0=earliest", "ta:0=latest")
        # refused changes: the state stays, so both clients ask the same
        compare("alter stable", view_same, ["alterConsumerGroupOffsets", "ga-stable", "ta:0=1"],
                ["alterConsumerGroupOffsets", "ga-stable", "ta:0=1"])
        compare("deleteOffsets subscribed", view_same, ["deleteConsumerGroupOffsets", "ga-stable", "ta:0"],
                ["deleteConsumerGroupOffsets", "ga-stable", "ta:0"])
        compare("deleteOffsets missing group", view_same, ["deleteConsumerGroupOffsets", "ga-missing", "ta:0"],
                ["deleteConsumerGroupOffsets", "ga-missing", "ta:0"])
        compare("deleteGroups refused", view_same, ["deleteConsumerGroups", "ga-stable", "ga-missing"],
                ["deleteConsumerGroups", "ga-stable", "ga-missing"])
        compare("removeMembers unknown", view_remove, ["removeMembersFromConsumerGroup", "ga-static", "st-nobody"],
                ["removeMembersFromConsumerGroup", "ga-static", "st-nobody"])
        # changes made by libcohort, then read back by both
        own("alter empty", "alterConsumerGroupOffsets", "ga-empty", "ta:0=3/m1", "tb:1=7")
        compare("offsets empty after alter", view_offsets, ["listConsumerGroupOffsets", "ga-empty"],
                ["listConsumerGroupOffsets", "ga-empty"])
        own("alter new group", "alterConsumerGroupOffsets", "ga-new", "tb:0=4")
        compare("offsets new group", view_offsets, ["listConsumerGroupOffsets", "ga-new"],
                ["listConsumerGroupOffsets", "ga-new"])
        own("deleteOffsets empty", "deleteConsumerGroupOffsets", "ga-empty", "tb:0", "tb:1")
        compare("offsets empty after delete", view_offsets, ["listConsumerGroupOffsets", "ga-empty"],
                ["listConsumerGroupOffsets", "ga-empty"])
        own("deleteGroups empty", "deleteConsumerGroups", "ga-empty", "ga-new")
        compare("listGroups after delete", view_list, ["listGroups"], ["listGroups"])
        own("removeMembers static", "removeMembersFromConsumerGroup", "ga-static", "st-1")
        st.wait(lambda ev: ev.get("ev") in ("lost", "revoked"), 60, "the removed member noticing")
        own("removeMembers all", "removeMembersFromConsumerGroup", "ga-stable")
        s.wait(lambda ev: ev.get("ev") in ("lost", "revoked"), 60, "the removed member noticing")
        s.close("close-leave")
        st.close("close-leave")
        compare("describe after remove", view_describe, ["describeConsumerGroups", "ga-stable", "ga-static"],
                ["describeConsumerGroups", "ga-stable", "ga-static"])
        compare("removeMembers all of none", view_remove, ["removeMembersFromConsumerGroup", "ga-stable"],
                ["removeMembersFromConsumerGroup", "ga-stable"])

        # topics and configurations
        compare("describeCluster", view_same, ["describeCluster"], ["describeCluster"])
        compare("createTopics validateOnly", view_same, ["createTopicsEach", "validateOnly", "tv:3:1", "tv2:-1:-1"],
                ["createTopicsEach", "validateOnly", "tv:3:1", "tv2:-1:-1"])
        refused = ["ta:1:1", "tbad:0:1", "tcfg:1:1/cleanup.policy=bogus", "trf:1:3", "bad$name:1:1"]
        compare("createTopics refused", view_same, ["createTopicsEach"] + refused, ["createTopicsEach"] + refused)
        own("createTopics", "createTopicsEach", "tn:2:-1/retention.ms=1234/cleanup.policy=compact", "td:1:1")
        settle(ours, ["describeTopics", "tn", "td"],
               lambda ok: all("error" not in ok.get(t, {"error": 1}) for t in ("tn", "td")))
        compare("describeTopics", view_same, ["describeTopics", "tn", "td", "ta", "nosuch"],
                ["describeTopics", "tn", "td", "ta", "nosuch"])
        compare("listTopics", view_same, ["listTopics"], ["listTopics"])
        compare("listTopics internal", view_same, ["listTopics", "internal"], ["listTopics", "internal"])
        node = ours.call("describeCluster")["ok"]["brokers"][0]["id"]
        res = ["topic:tn", "topic:nosuch", "broker:%d" % node, "broker:"]
        compare("describeConfigs", view_same, ["describeConfigs"] + res, ["describeConfigs"] + res)
        compare("createPartitions validateOnly", view_same, ["createPartitions", "validateOnly", "tn=4"],
                ["createPartitions", "validateOnly", "tn=4"])
        compare("createPartitions refused", view_same, ["createPartitions", "tn=1", "nosuch=2"],
                ["createPartitions", "tn=1", "nosuch=2"])
        own("createPartitions", "createPartitions", "tn=4")
        settle(ours, ["describeTopics", "tn"], lambda ok: len(ok.get("tn", {}).get("partitions", [])) == 4)
        compare("describeTopics after createPartitions", view_same, ["describeTopics", "tn"], ["describeTopics", "tn"])
        compare("deleteTopics refused", view_same, ["deleteTopics", "nosuch"], ["deleteTopics", "nosuch"])
        own("deleteTopics", "deleteTopics", "td")
        settle(ours, ["describeTopics", "td"], lambda ok: "error" in ok.get("td", {}))
        compare("listTopics after delete", view_same, ["listTopics"], ["listTopics"])
        ours.close()
        java.close()
    finally:
        ours.kill()
        for p in procs:
            p.kill()
    return out


# Where Java and libcohort differ on a broker, and why.
_V6_MISSING = ("Java speaks DescribeGroups v6 (KIP-1043: GROUP_ID_NOT_FOUND, served by Kafka 4.4 "
               "and by cohortd); libcohort asks v5 on purpose, where a missing group is Dead with "
               "no error (cohort.h and the CLI read Dead as 'does not exist')")
KNOWN_DIFFERENCES = {
    ("kafka", "describe missing"): _V6_MISSING,
    ("cohortd", "describe missing"): _V6_MISSING,
}


class LibcohortAdmin(BothBrokers):
    KAFKA_VERSION = "4"
    settings = GROUP_SETTINGS

    @classmethod
    def setUpClass(cls):
        if not os.access(ADMIN, os.X_OK):
            raise SystemExit("FAIL: COHORT_ADMIN (it_cohort_admin) not built: %r" % ADMIN)
        check_installed()
        super().setUpClass()
        try:
            print("Apache Kafka %s:" % cls.kafka.version, file=sys.stderr)
            base_ts = int(time.time() * 1000) - 60000
            cls.on = {"kafka": scenario(cls.kafka, base_ts)}
            print("cohortd:", file=sys.stderr)
            cls.on["cohortd"] = scenario(cls.cohortd, base_ts)
        except BaseException:
            cls.kafka.cleanup()
            cls.cohortd.cleanup()
            raise

    def step(self, broker, name):
        for s, mine, _, raw in self.on[broker]:
            if s == name:
                return mine, raw
        raise KeyError(name)

    def test_same_as_java(self):
        diffs = []
        for broker, steps in self.on.items():
            for name, mine, theirs, _ in steps:
                if theirs is None or mine == theirs:
                    continue
                if (broker, name) in KNOWN_DIFFERENCES:
                    print("known difference on %s, %s: %s" % (broker, name, KNOWN_DIFFERENCES[broker, name]),
                          file=sys.stderr)
                    continue
                diffs.append("%s, %s:\n  libcohort: %s\n  java:      %s" % (
                    broker, name, json.dumps(mine, sort_keys=True), json.dumps(theirs, sort_keys=True)))
        self.assertEqual(diffs, [], "\n".join(diffs))

    def test_known_values(self):
        for broker in ("kafka", "cohortd"):
            with self.subTest(broker=broker):
                port = (self.kafka if broker == "kafka" else self.cohortd).port
                cl = self.step(broker, "describeCluster")[0]["ok"]
                self.assertEqual([(b["host"], b["port"]) for b in cl["brokers"]], [("127.0.0.1", port)])
                self.assertEqual(cl["controller"], cl["brokers"][0]["id"])
                self.assertTrue(cl["clusterId"])
                groups = self.step(broker, "listGroups")[0]["ok"]
                self.assertEqual({g: v["state"] for g, v in groups.items()},
                                 {"ga-empty": "Empty", "ga-stable": "Stable", "ga-static": "Stable",
                                  "ga-simple": "Empty"})
                self.assertEqual(sorted(self.step(broker, "listGroups Stable")[0]["ok"]), ["ga-stable", "ga-static"])
                d = self.step(broker, "describe")[0]["ok"]
                self.assertEqual(d["ga-stable"]["assignor"], "roundrobin")
                self.assertEqual(d["ga-stable"]["members"][0]["assignment"], ["ta:0", "ta:1", "ta:2"])
                self.assertEqual(d["ga-static"]["members"][0]["instance"], "st-1")
                self.assertEqual(d["ga-empty"]["members"], [])
                raw = self.step(broker, "describe raw")[1]["ok"]
                self.assertEqual(raw["ga-stable"]["members"][0]["subscription"], ["ta"])
                self.assertEqual(raw["ga-static"]["members"][0]["subscription"], ["tb"])
                self.assertEqual(raw["ga-stable"]["protocolType"], "consumer")
                fc = self.step(broker, "findCoordinators")[0]["ok"]
                self.assertEqual(fc["ga-stable"]["port"], port)
                self.assertEqual(fc["ga-missing"]["port"], port)
                many = self.step(broker, "offsets many")[0]["ok"]
                for g in ("ga-stable", "ga-empty", "ga-simple", "ga-missing"):
                    self.assertEqual(view_offsets({"ok": {g: many[g]}}), self.step(broker, "offsets " + g)[0])
                self.assertEqual({tp: o["offset"] for tp, o in many["ga-stable"].items()},
                                 {"ta:0": 10, "ta:1": 10, "ta:2": 10})
                self.assertEqual(many["ga-simple"], {"ta:0": {"offset": 5, "metadata": "simple-meta", "leaderEpoch": None}})
                self.assertEqual(many["ga-missing"], {})
                self.assertEqual(self.step(broker, "listOffsets latest")[0]["ok"]["ta:0"]["offset"], 10)
                self.assertEqual(self.step(broker, "listOffsets earliest")[0]["ok"]["ta:0"]["offset"], 0)
                # the driver prints ta:0 twice; json keeps the second answer
                self.assertEqual(self.step(broker, "listOffsets twice latest first")[0]["ok"]["ta:0"]["offset"], 0)
                self.assertEqual(self.step(broker, "listOffsets twice earliest first")[0]["ok"]["ta:0"]["offset"], 10)
                self.assertEqual(self.step(broker, "alter stable")[0]["ok"], {"ta:0": {"error": "UNKNOWN_MEMBER_ID"}})
                self.assertEqual(self.step(broker, "alter empty")[0]["ok"], {"ta:0": None, "tb:1": None})
                after = self.step(broker, "offsets empty after alter")[0]["ok"]
                self.assertEqual((after["ta:0"]["offset"], after["ta:0"]["metadata"], after["tb:1"]["offset"]),
                                 (3, "m1", 7))
                self.assertEqual(self.step(broker, "offsets new group")[0]["ok"]["tb:0"]["offset"], 4)
                self.assertEqual(self.step(broker, "deleteOffsets subscribed")[0]["ok"]["partitions"],
                                 {"ta:0": {"error": "GROUP_SUBSCRIBED_TO_TOPIC"}})
                self.assertEqual(self.step(broker, "deleteOffsets missing group")[0]["ok"]["all"],
                                 {"error": "GROUP_ID_NOT_FOUND"})
                self.assertEqual(self.step(broker, "deleteOffsets empty")[0]["ok"]["all"], None)
                left = self.step(broker, "offsets empty after delete")[0]["ok"]
                self.assertNotIn("tb:0", left)
                self.assertNotIn("tb:1", left)
                self.assertEqual(self.step(broker, "deleteGroups refused")[0]["ok"],
                                 {"ga-stable": {"error": "NON_EMPTY_GROUP"}, "ga-missing": {"error": "GROUP_ID_NOT_FOUND"}})
                self.assertEqual(self.step(broker, "deleteGroups empty")[0]["ok"], {"ga-empty": None, "ga-new": None})
                self.assertNotIn("ga-empty", self.step(broker, "listGroups after delete")[0]["ok"])
                self.assertEqual(self.step(broker, "removeMembers unknown")[1]["ok"]["members"],
                                 {"st-nobody": {"error": "UNKNOWN_MEMBER_ID"}})
                self.assertEqual(self.step(broker, "removeMembers static")[0]["ok"], {"all": None, "members": {"st-1": None}})
                self.assertEqual(self.step(broker, "removeMembers all")[0]["ok"]["all"], None)
                self.assertEqual(self.step(broker, "createTopics")[0]["ok"], {"tn": None, "td": None})
                refused = self.step(broker, "createTopics refused")[1]["ok"]
                self.assertEqual({t: r["error"] for t, r in refused.items()},
                                 {"ta": "TOPIC_ALREADY_EXISTS", "tbad": "INVALID_PARTITIONS", "tcfg": "INVALID_CONFIG",
                                  "trf": "INVALID_REPLICATION_FACTOR", "bad$name": "INVALID_TOPIC_EXCEPTION"})
                self.assertEqual(refused["ta"]["message"], "Topic 'ta' already exists.")
                topics = self.step(broker, "describeTopics")[0]["ok"]
                self.assertEqual([p["partition"] for p in topics["tn"]["partitions"]], [0, 1])
                self.assertEqual(topics["nosuch"], {"error": "UNKNOWN_TOPIC_OR_PARTITION"})
                after = self.step(broker, "describeTopics after createPartitions")[0]["ok"]["tn"]
                self.assertEqual(len(after["partitions"]), 4)
                self.assertEqual(after["topicId"], topics["tn"]["topicId"])
                cfg = self.step(broker, "describeConfigs")[0]["ok"]
                self.assertEqual((cfg["topic:tn"]["retention.ms"]["value"], cfg["topic:tn"]["retention.ms"]["source"]),
                                 ("1234", "DYNAMIC_TOPIC_CONFIG"))
                self.assertEqual(cfg["topic:tn"]["cleanup.policy"]["value"], "compact")
                self.assertEqual(cfg["topic:nosuch"], {"error": "UNKNOWN_TOPIC_OR_PARTITION"})
                self.assertIn("log.retention.hours", cfg["broker:%d" % cl["brokers"][0]["id"]])
                self.assertEqual(self.step(broker, "createPartitions")[0]["ok"], {"tn": None})
                self.assertNotIn("tv", self.step(broker, "listTopics")[0]["ok"])   # validate_only
                self.assertIn("td", self.step(broker, "listTopics")[0]["ok"])
                self.assertNotIn("td", self.step(broker, "listTopics after delete")[0]["ok"])
                self.assertIn("__consumer_offsets", self.step(broker, "listTopics internal")[0]["ok"])
                self.assertNotIn("__consumer_offsets", self.step(broker, "listTopics")[0]["ok"])


# An older broker: ListGroups without filters (v2), FindCoordinator one
# group at a time (v2), OffsetFetch one group at a time (v7), DescribeGroups
# v0, ListOffsets without max timestamp (v6); every connection goes
# through the proxy (cohortd advertises it).
OLD_CAPS = {18: 2, 16: 2, 10: 2, 9: 7, 15: 0, 2: 6, 69: -1}   # 69: no ConsumerGroupDescribe


def describe_not_coordinator(err):
    """A DescribeGroups v0 answer giving every group asked the error ERR."""
    def answer(version, corr, req):
        r = kwire.Reader(req[8:])
        r.string(nullable=True)          # client id
        groups = [r.string() for _ in range(r.array_len())]
        w = kwire.Writer(False)
        w.int32(corr).array_len(len(groups))
        for g in groups:
            w.int16(err).string(g).string("").string("").string("").array_len(0)
        return w.bytes()
    return answer


def list_groups_error(err):
    """A ListGroups v1-v2 answer with error ERR and no groups."""
    def answer(version, corr, req):
        w = kwire.Writer(False)
        w.int32(corr).int32(0).int16(err).array_len(0)
        return w.bytes()
    return answer


def find_coordinator_error(err):
    """A FindCoordinator v0-v2 answer with error ERR."""
    def answer(version, corr, req):
        w = kwire.Writer(False)
        w.int32(corr)
        if version >= 1:
            w.int32(0)
        w.int16(err)
        if version >= 1:
            w.string(None)
        w.int32(-1).string("").int32(-1)
        return w.bytes()
    return answer


class BehindProxy(unittest.TestCase):
    """cohortd behind version_proxy.py with CAPS, advertising the proxy; a
    Java admin and libcohort's look through it at an Empty group (go-empty,
    commits at 5 and 5 of tc) and a Stable one (go-stable)."""

    CAPS = {18: 2}   # ApiVersions v0-v2: what the proxy encodes

    @classmethod
    def setUpClass(cls):
        if not os.access(ADMIN, os.X_OK):
            raise SystemExit("FAIL: COHORT_ADMIN (it_cohort_admin) not built: %r" % ADMIN)
        check_installed()
        port = harness.free_port()
        cls.broker = harness.Broker(settings=dict(GROUP_SETTINGS, **{
            "advertised.listeners": "PLAINTEXT://127.0.0.1:%d" % port}))
        cls.broker.start()
        cls.procs = []
        try:
            cls.proxy = VersionProxy(cls.broker.port, cls.CAPS, port)
            cls.proxy_bootstrap = boot = "127.0.0.1:%d" % port
            cls.java = JavaAdmin(boot)
            cls.procs.append(cls.java)
            cls.java.ok("createTopics", "tc:2")
            java_produce(boot, "tc", 10, 2)
            e = JavaConsumer(boot, "go-empty", ["tc"], name="go-empty-c")
            cls.procs.append(e)
            e.wait(lambda ev: len(e.of("msg")) >= 10, 90, "10 records")
            e.close()
            cls.stable = JavaConsumer(boot, "go-stable", ["tc"], name="go-stable-c")
            cls.procs.append(cls.stable)
            cls.stable.wait(lambda ev: ev.get("ev") == "assigned", 60, "assignment")
            cls.ours = CohortAdmin(boot, "client.id=cohort-admin-px")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            if hasattr(cls, "ours"):
                cls.ours.close()
        finally:
            if hasattr(cls, "ours"):
                cls.ours.kill()
            for p in cls.procs:
                p.kill()
            if hasattr(cls, "proxy"):
                cls.proxy.close()
            cls.broker.stop()
            cls.broker.cleanup()

    def sent(self, api):
        with self.proxy.lock:
            return [v for cid, k, v in self.proxy.seen if cid == "cohort-admin-px" and k == api]


class LibcohortAdminBatches(BehindProxy):
    """Where the broker has batches: one FindCoordinator (v4+) and one
    OffsetFetch (v8+) for several groups on one coordinator."""

    def test_one_request_for_many_groups(self):
        n_find, n_fetch = len(self.sent(10)), len(self.sent(9))
        mine = self.ours.call("listConsumerGroupOffsets", "go-empty,go-stable,go-none")["ok"]
        for g in ("go-empty", "go-stable", "go-none"):
            self.assertEqual(view_offsets({"ok": {g: mine[g]}}),
                             view_offsets(self.java.call("listConsumerGroupOffsets", g)), g)
        self.assertEqual({tp: o["offset"] for tp, o in mine["go-empty"].items()}, {"tc:0": 5, "tc:1": 5})
        self.assertEqual(len(self.sent(10)) - n_find, 1)
        self.assertEqual(len(self.sent(9)) - n_fetch, 1)
        self.assertGreaterEqual(min(self.sent(10)), 4)
        self.assertGreaterEqual(min(self.sent(9)), 8)


class LibcohortAdminSlowConnection(BehindProxy):
    """A call that ends (its timeout) while its requests still wait for a
    connection: when the connection comes up later, nothing of the caller's
    (freed by then) is read; the driver runs under ASan and must exit 0."""

    def test_timeout_before_the_connection_is_up(self):
        with self.proxy.lock:
            self.proxy.hold[18] = 3.0   # ApiVersions of new connections
        slow = CohortAdmin(self.proxy_bootstrap, "client.id=cohort-admin-slow")
        try:
            self.assertEqual(slow.call("timeout", 1000), {"ok": None})
            self.assertEqual(slow.call("describeGroups", "go-empty", "go-stable"),
                             {"ok": {"go-empty": {"error": "_TIMED_OUT"}, "go-stable": {"error": "_TIMED_OUT"}}})
            self.assertEqual(slow.call("listConsumerGroupOffsets", "go-empty"), {"ok": {"go-empty": {"error": "_TIMED_OUT"}}})
            with self.proxy.lock:
                self.proxy.hold[18] = 0
            time.sleep(4)   # the held ApiVersions answers come: the queued requests go out
            self.assertEqual(slow.call("timeout", -1), {"ok": None})
            self.assertEqual(slow.call("describeGroups", "go-empty")["ok"]["go-empty"]["state"], "Empty")
            slow.close()
        finally:
            slow.kill()


class LibcohortAdminOldBroker(BehindProxy):
    """cohortd behind version_proxy.py playing an older broker, and a
    coordinator that moved: libcohort treats filters ListGroups cannot carry
    as Java does (which looks through the same proxy), sends one group per
    FindCoordinator and OffsetFetch, refuses max timestamp below ListOffsets
    v7, and finds the coordinator again on NOT_COORDINATOR /
    COORDINATOR_NOT_AVAILABLE, retrying COORDINATOR_LOAD_IN_PROGRESS."""

    CAPS = OLD_CAPS

    def test_list_groups_filters_on_old_broker(self):
        """Java 4.4's rule, compared with Java through the same proxy: a
        states filter needs ListGroups v4, a types filter v5 unless it is
        "classic" alone (UNSUPPORTED_VERSION otherwise)."""
        for words in (["listGroups"], ["listGroups", "types=classic"], ["listGroups", "types=consumer"],
                      ["listGroups", "states=Stable"]):
            mine, theirs = view_list(self.ours.call(*words)), view_list(self.java.call(*words))
            self.assertEqual(mine, theirs, words)
        self.assertEqual(self.ours.call("listGroups", "states=Stable"), {"error": "UNSUPPORTED_VERSION"})
        self.assertEqual(sorted(self.ours.call("listGroups", "types=classic")["ok"]), ["go-empty", "go-stable"])
        self.assertEqual(set(self.sent(16)), {2})

    def test_describe_without_consumer_group_describe(self):
        """A broker without ConsumerGroupDescribe (API 69): libcohort's
        describeConsumerGroups describes through DescribeGroups alone, as
        Java does through the same proxy."""
        groups = ("go-empty", "go-stable", "go-none")
        mine = self.ours.call("describeConsumerGroups", *groups)
        self.assertEqual(view_describe(mine),
                         view_describe(self.java.call("describeConsumerGroups", *groups)))
        self.assertEqual([(mine["ok"][g]["type"], mine["ok"][g]["state"]) for g in groups],
                         [("classic", "Empty"), ("classic", "Stable"), (None, "Dead")])
        self.assertEqual(mine["ok"]["go-stable"]["groupEpoch"], -1)
        self.assertEqual(self.sent(69), [])

    def test_list_groups_retries_a_loading_coordinator(self):
        """ListGroups answered COORDINATOR_LOAD_IN_PROGRESS, then
        COORDINATOR_NOT_AVAILABLE: asked again each time (Java's rule), then
        the groups as Java lists them."""
        n = len(self.sent(16))
        with self.proxy.lock:
            self.proxy.answer[16] = [list_groups_error(14), list_groups_error(15)]
        mine = view_list(self.ours.call("listGroups"))
        self.assertEqual(len(self.sent(16)) - n, 3)
        self.assertEqual(mine, view_list(self.java.call("listGroups")))
        self.assertEqual(sorted(mine["ok"]), ["go-empty", "go-stable"])

    def test_one_group_per_request_before_batches(self):
        n_find, n_fetch = len(self.sent(10)), len(self.sent(9))
        mine = self.ours.call("listConsumerGroupOffsets", "go-empty,go-stable,go-none")["ok"]
        for g in ("go-empty", "go-stable", "go-none"):
            self.assertEqual(view_offsets({"ok": {g: mine[g]}}),
                             view_offsets(self.java.call("listConsumerGroupOffsets", g)), g)
        self.assertEqual({tp: o["offset"] for tp, o in mine["go-empty"].items()}, {"tc:0": 5, "tc:1": 5})
        self.assertEqual(len(self.sent(10)) - n_find, 3)    # FindCoordinator v2: one group each
        self.assertEqual(len(self.sent(9)) - n_fetch, 3)    # OffsetFetch v7: one group each
        self.assertEqual(set(self.sent(9)), {7})

    def test_max_timestamp_needs_v7(self):
        r = self.ours.call("listOffsets", "tc:0=max", "tc:1=latest")["ok"]
        self.assertEqual(r["tc:0"], {"error": "UNSUPPORTED_VERSION"})
        self.assertEqual(r["tc:1"]["offset"], 5)

    def test_coordinator_moved(self):
        """NOT_COORDINATOR, then LOAD_IN_PROGRESS: looked up again once, retried
        at the same coordinator once, then answered as Java sees the group."""
        n_find, n_desc = len(self.sent(10)), len(self.sent(15))
        with self.proxy.lock:
            self.proxy.answer[15] = [describe_not_coordinator(16), describe_not_coordinator(14)]
        mine = view_describe(self.ours.call("describeGroups", "go-stable"))
        self.assertEqual(mine, view_describe(self.java.call("describeConsumerGroups", "go-stable")))
        self.assertEqual(mine["ok"]["go-stable"]["state"], "Stable")
        self.assertEqual(len(self.sent(15)) - n_desc, 3)
        self.assertEqual(len(self.sent(10)) - n_find, 2)   # the first lookup and one after NOT_COORDINATOR

    def test_coordinator_not_available_until_timeout(self):
        with self.proxy.lock:
            self.proxy.answer[10] = [find_coordinator_error(15)] * 1000
        try:
            self.assertEqual(self.ours.call("timeout", 1500), {"ok": None})
            r = self.ours.call("describeGroups", "go-empty")
            self.assertEqual(r, {"ok": {"go-empty": {"error": "COORDINATOR_NOT_AVAILABLE"}}})
            r = self.ours.call("deleteConsumerGroups", "go-empty")
            self.assertEqual(r, {"ok": {"go-empty": {"error": "COORDINATOR_NOT_AVAILABLE"}}})
        finally:
            with self.proxy.lock:
                self.proxy.answer[10] = []
            self.ours.call("timeout", -1)
        self.assertEqual(self.ours.call("describeGroups", "go-empty")["ok"]["go-empty"]["state"], "Empty")


if __name__ == "__main__":
    harness.main()
