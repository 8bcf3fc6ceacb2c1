"""The classic group protocol: FindCoordinator, JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups, ListGroups,
DeleteGroups, OffsetDelete, in every group state, lowest to highest version."""
from conform import Scenario, V, call, poll, recv, send
from sclib import (FENCED_INSTANCE_ID, GROUP_ID_NOT_FOUND, GROUP_MAX_SIZE_REACHED,
                   GROUP_SUBSCRIBED_TO_TOPIC, ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL,
                   INVALID_GROUP_ID, INVALID_SESSION_TIMEOUT, MEMBER_ID_REQUIRED, NON_EMPTY_GROUP,
                   NONE, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, UNKNOWN_TOPIC_OR_PARTITION,
                   create_topic)
import kproto

AREA = "group"

# README: no transactions, so no transaction coordinator (the steps that ask
# for one only).
NO_TXN = [(r"^FindCoordinator:(Coordinators\[Key=txn-[^\]]*\]\.)?(ErrorCode|ErrorMessage|NodeId|Host|Port)$",
           "README: FindCoordinator for a transactional id answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED")]

# Against 3.9 only: Kafka 4.x keeps a member's assignment in DescribeGroups
# while the group rebalances (docs/NOTES.md), 3.9 answers it empty; cohortd
# answers as 4.x, the reference.
ACCEPT_K39 = [(r"^DescribeGroups:Groups\[GroupId=[^\]]*\]\.Members\[MemberId=[^\]]*\]"
               r"\.MemberAssignment$",
               "Kafka 4.x keeps a rebalancing member's assignment in DescribeGroups, 3.9 does not")]

# The version of each API that goes with a JoinGroup version (what a client of
# that generation sends), so one lifecycle script runs at every JoinGroup version.
SYNC_V = {0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 6: 4, 7: 5, 8: 5, 9: 5}
HB_V = {0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 6: 4, 7: 4, 8: 4, 9: 4}
LEAVE_V = {0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 6: 4, 7: 4, 8: 5, 9: 5}
DESCRIBE_V = {0: 0, 1: 0, 2: 1, 3: 1, 4: 2, 5: 4, 6: 5, 7: 5, 8: 5, 9: 5}
COMMIT_V = {0: 2, 1: 2, 2: 3, 3: 4, 4: 5, 5: 7, 6: 8, 7: 8, 8: 9, 9: 9}
FETCH_V = {0: 1, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7, 8: 8, 9: 9}

_P = None


def proto():
    global _P
    if _P is None:
        _P = kproto.Protocol()
    return _P


def subscription(topics, v=1):
    return proto().encode_embedded("ConsumerProtocolSubscription", v,
                                   {"Topics": list(topics), "UserData": None})


def assignment(parts):
    """parts: {topic: [partitions]}"""
    return proto().encode_embedded("ConsumerProtocolAssignment", 0, {
        "AssignedPartitions": [{"Topic": t, "Partitions": p} for t, p in parts.items()],
        "UserData": None})


def join(g, member="", instance=None, protocols=None, session=30000, rebalance=30000,
         ptype="consumer", topics=("t",), reason=None):
    if protocols is None:
        protocols = [("range", subscription(topics))]
    f = {"GroupId": g, "SessionTimeoutMs": session, "RebalanceTimeoutMs": rebalance,
         "MemberId": member, "GroupInstanceId": instance, "ProtocolType": ptype,
         "Protocols": [{"Name": n, "Metadata": m} for n, m in protocols]}
    if reason is not None:
        f["Reason"] = reason
    return f


def sync(g, gen, member, assignments=None, instance=None, ptype="consumer", pname="range"):
    return {"GroupId": g, "GenerationId": gen, "MemberId": member, "GroupInstanceId": instance,
            "ProtocolType": ptype, "ProtocolName": pname,
            "Assignments": [{"MemberId": m, "Assignment": a} for m, a in (assignments or [])]}


def hb(g, gen, member, instance=None):
    return {"GroupId": g, "GenerationId": gen, "MemberId": member, "GroupInstanceId": instance}


def describe(groups, ops=False):
    return {"Groups": list(groups), "IncludeAuthorizedOperations": ops}


def commit(g, gen, member, offsets, instance=None, metadata="m"):
    """offsets: {topic: {partition: offset}}"""
    return {"GroupId": g, "GenerationIdOrMemberEpoch": gen, "MemberId": member,
            "GroupInstanceId": instance, "RetentionTimeMs": -1,
            "Topics": [{"Name": t, "Partitions": [{"PartitionIndex": p, "CommittedOffset": o,
                                                   "CommittedLeaderEpoch": -1,
                                                   "CommitTimestamp": -1,
                                                   "CommittedMetadata": metadata}
                                                  for p, o in ps.items()]}
                       for t, ps in offsets.items()]}


def fetch_offsets(v, g, topics=None, require_stable=False):
    """topics: {topic: [partitions]} or None (all; v2+)."""
    tl = None if topics is None else [{"Name": t, "PartitionIndexes": p} for t, p in topics.items()]
    if v >= 8:
        return {"Groups": [{"GroupId": g, "MemberId": None, "MemberEpoch": -1, "Topics": tl}],
                "RequireStable": require_stable}
    return {"GroupId": g, "Topics": tl, "RequireStable": require_stable}


def state_is(state):
    return lambda r: r["Groups"][0]["GroupState"] == state


def error_is(code):
    return lambda r: r["ErrorCode"] == code


def join_steps(conn, g, v, name, **kw):
    """A new member joins a group that will complete at once (alone, or with
    the others already rejoining): with MEMBER_ID_REQUIRED first from v4."""
    steps = []
    if v >= 4 and not (v >= 5 and kw.get("instance")):   # static members get no MEMBER_ID_REQUIRED
        steps.append(call(conn, "JoinGroup", v, join(g, **kw),
                          expect={"ErrorCode": MEMBER_ID_REQUIRED}, save={name: "MemberId"}))
        kw = dict(kw, member=V(name))
    steps.append(call(conn, "JoinGroup", v, join(g, **kw), expect={"ErrorCode": NONE},
                      save={name: "MemberId", name + ".gen": "GenerationId"}))
    return steps


def lone_member(conn, g, v, name, topic="t", **kw):
    """One member joins, leads and syncs: a Stable group of one."""
    steps = join_steps(conn, g, v, name, topics=(topic,), **kw)
    steps.append(call(conn, "SyncGroup", SYNC_V[v],
                      lambda x: sync(g, x[name + ".gen"], x[name],
                                     [(x[name], assignment({topic: [0]}))],
                                     instance=kw.get("instance")),
                      expect={"ErrorCode": NONE}))
    return steps


# Each builder returns one Scenario. Builders are functions so that the
# lambdas in their steps (evaluated when a step runs, with the side's saved
# values) close over this scenario's names, not a loop's last ones.

def find_coordinator(N, v):
    g = N("fc")
    if v <= 3:
        steps = [call("c", "FindCoordinator", v, {"Key": g, "KeyType": 0},
                      expect={"ErrorCode": NONE})]
        if v >= 1:
            steps.append(call("c", "FindCoordinator", v, {"Key": "txn-" + g, "KeyType": 1},
                              accept=NO_TXN))
            steps.append(call("c", "FindCoordinator", v, {"Key": g, "KeyType": 7}))
        steps.append(call("c", "FindCoordinator", v, {"Key": "", "KeyType": 0}))
    else:
        steps = [call("c", "FindCoordinator", v, {"KeyType": 0,
                                                  "CoordinatorKeys": [g, g + "-b", ""]}),
                 call("c", "FindCoordinator", v, {"KeyType": 1, "CoordinatorKeys": ["txn-" + g]},
                      accept=NO_TXN),
                 call("c", "FindCoordinator", v, {"KeyType": 0, "CoordinatorKeys": []})]
    return Scenario("find_coordinator v%d" % v, steps)


def lifecycle(N, v, topic):
    """Dead -> CompletingRebalance -> Stable -> PreparingRebalance -> Stable ->
    PreparingRebalance -> Empty, with the APIs of a JoinGroup-v client."""
    g = N("life")
    dv, hv = DESCRIBE_V[v], HB_V[v]
    s = [call("c", "DescribeGroups", dv, describe([g]))]                      # Dead
    s += join_steps("m1", g, v, "m1", topics=(topic,))
    s += [call("m1", "DescribeGroups", dv, describe([g])),                     # CompletingRebalance
          call("m1", "Heartbeat", hv, lambda x: hb(g, x["m1.gen"], x["m1"])),
          call("m1", "SyncGroup", SYNC_V[v],
               lambda x: sync(g, x["m1.gen"], x["m1"], [(x["m1"], assignment({topic: [0, 1]}))]),
               expect={"ErrorCode": NONE}),
          call("m1", "Heartbeat", hv, lambda x: hb(g, x["m1.gen"], x["m1"]),
               expect={"ErrorCode": NONE}),
          call("c", "DescribeGroups", dv, describe([g])),                      # Stable
          call("c", "ListGroups", 0, {}, keep=only_groups([g]))]
    # a second member: the group rebalances, the first learns it from its heartbeat
    s += rebalance_with(v, g, [("m2", None)], [("m1", None)], topic=topic)
    s += [call("c", "DescribeGroups", dv, describe([g]))]
    # the first member leaves; the second is told by a rebalance
    s += [call("m1", "LeaveGroup", LEAVE_V[v], lambda x: leave_body(LEAVE_V[v], g, x["m1"]),
               expect={"ErrorCode": NONE}),
          poll("m2", "Heartbeat", hv, lambda x: hb(g, x["m2.gen"], x["m2"]),
               until=error_is(REBALANCE_IN_PROGRESS), compare=True),
          call("c", "DescribeGroups", dv, describe([g])),                      # PreparingRebalance
          call("m2", "JoinGroup", v, lambda x: join(g, member=x["m2"], topics=(topic,)),
               expect={"ErrorCode": NONE}, save={"m2.gen": "GenerationId"}),
          call("m2", "SyncGroup", SYNC_V[v],
               lambda x: sync(g, x["m2.gen"], x["m2"], [(x["m2"], assignment({topic: [0, 1]}))]),
               expect={"ErrorCode": NONE}),
          call("m2", "LeaveGroup", LEAVE_V[v], lambda x: leave_body(LEAVE_V[v], g, x["m2"])),
          call("c", "DescribeGroups", dv, describe([g])),                      # Empty
          call("c", "Heartbeat", hv, lambda x: hb(g, x["m2.gen"], x["m2"])),
          call("c", "SyncGroup", SYNC_V[v], lambda x: sync(g, x["m2.gen"], x["m2"]))]
    return Scenario("group lifecycle, JoinGroup v%d" % v, s)


def join_errors(N, v, topic):
    g = N("jerr")
    s = [call("a", "JoinGroup", v, join("", topics=(topic,))),                 # INVALID_GROUP_ID
         call("a", "JoinGroup", v, join(g, session=100, topics=(topic,)),
              expect={"ErrorCode": INVALID_SESSION_TIMEOUT}),
         call("a", "JoinGroup", v, join(g, session=120000, topics=(topic,)),
              expect={"ErrorCode": INVALID_SESSION_TIMEOUT}),
         call("a", "JoinGroup", v, join(g, protocols=[], topics=(topic,)),
              expect={"ErrorCode": INCONSISTENT_GROUP_PROTOCOL}),
         call("a", "JoinGroup", v, join(g, ptype="", topics=(topic,)),
              expect={"ErrorCode": INCONSISTENT_GROUP_PROTOCOL}),
         call("a", "JoinGroup", v, join(g, member="unknown-member", topics=(topic,)),
              expect={"ErrorCode": UNKNOWN_MEMBER_ID})]
    s += lone_member("m1", g, v, "m1", topic)
    # another protocol type, or no protocol in common, for a second member
    s += [call("m2", "JoinGroup", v, join(g, ptype="connect", topics=(topic,)),
               expect={"ErrorCode": INCONSISTENT_GROUP_PROTOCOL}),
          call("m2", "JoinGroup", v, join(g, protocols=[("roundrobin", subscription([topic]))]),
               expect={"ErrorCode": INCONSISTENT_GROUP_PROTOCOL}),
          call("c", "DescribeGroups", DESCRIBE_V[v], describe([g]))]
    return Scenario("join_group v%d: errors" % v, s)


def protocol_vote(N, v, topic):
    g = N("vote")
    rr, rg = ("roundrobin", subscription([topic])), ("range", subscription([topic]))
    s = join_steps("m1", g, v, "m1", protocols=[rg, rr])
    s += [call("m1", "SyncGroup", SYNC_V[v],
               lambda x: sync(g, x["m1.gen"], x["m1"], [(x["m1"], assignment({}))]))]
    s += rebalance_with(v, g, [("m2", [rr, rg]), ("m3", [rr, rg])], [("m1", [rg, rr])], topic=topic)
    return Scenario("join_group v%d: protocol vote" % v, s)


def max_size(N, v, topic):
    g = N("max")
    s = lone_member("m1", g, v, "m1", topic)
    s += rebalance_with(v, g, [("m2", None), ("m3", None)], [("m1", None)], topic=topic)
    s += [call("m4", "JoinGroup", v, join(g, topics=(topic,)), save={"m4": "MemberId"})]
    if v >= 4:
        s += [call("m4", "JoinGroup", v, lambda x: join(g, member=x["m4"], topics=(topic,)),
                   expect={"ErrorCode": GROUP_MAX_SIZE_REACHED})]
    else:
        s[-1].expect = {"ErrorCode": GROUP_MAX_SIZE_REACHED}
    s += [call("c", "DescribeGroups", DESCRIBE_V[v], describe([g]))]
    return Scenario("join_group v%d: group.max.size" % v, s)


def rebalance_timeout(N, v, topic):
    g = N("rbto")
    s = lone_member("m1", g, v, "m1", topic, session=20000, rebalance=1000)
    # m2 joins; m1 never rejoins: after the rebalance timeout the generation
    # completes without it
    if v >= 4:
        s += [call("m2", "JoinGroup", v, join(g, topics=(topic,)),
                   expect={"ErrorCode": MEMBER_ID_REQUIRED}, save={"m2": "MemberId"})]
    s += [send("m2", "JoinGroup", v, lambda x: join(g, member=x.get("m2", ""), topics=(topic,),
                                                    rebalance=1000)),
          recv("m2", timeout=30, expect={"ErrorCode": NONE, "Members": lambda m: len(m) == 1},
               save={"m2": "MemberId", "m2.gen": "GenerationId"}),
          call("m1", "Heartbeat", HB_V[v], lambda x: hb(g, x["m1.gen"], x["m1"]),
               expect={"ErrorCode": UNKNOWN_MEMBER_ID}),
          call("c", "DescribeGroups", DESCRIBE_V[v], describe([g]))]
    return Scenario("join_group v%d: rebalance timeout removes a member" % v, s)


def session_timeout(N, v, topic):
    g = N("sess")
    s = lone_member("m1", g, v, "m1", topic, session=600)
    s += [poll("c", "DescribeGroups", DESCRIBE_V[v], describe([g]), until=state_is("Empty"),
               compare=True),
          call("m1", "Heartbeat", HB_V[v], lambda x: hb(g, x["m1.gen"], x["m1"]))]
    return Scenario("session timeout empties the group, JoinGroup v%d" % v, s)


def static_membership(N, v, topic):
    g = N("static")
    dv, hv, sv = DESCRIBE_V[v], HB_V[v], SYNC_V[v]
    s = lone_member("s1", g, v, "s1", topic, instance="inst-1")
    s += [call("c", "DescribeGroups", dv, describe([g])),
          # the same instance comes back with no member id: it replaces the old one
          call("s1b", "JoinGroup", v, join(g, instance="inst-1", topics=(topic,)),
               expect={"ErrorCode": NONE}, save={"s1b": "MemberId", "s1b.gen": "GenerationId"}),
          call("s1", "Heartbeat", hv, lambda x: hb(g, x["s1.gen"], x["s1"], "inst-1"),
               expect={"ErrorCode": FENCED_INSTANCE_ID}),
          call("s1", "SyncGroup", sv, lambda x: sync(g, x["s1.gen"], x["s1"], instance="inst-1"),
               expect={"ErrorCode": FENCED_INSTANCE_ID}),
          call("s1", "JoinGroup", v, lambda x: join(g, member=x["s1"], instance="inst-1",
                                                    topics=(topic,)),
               expect={"ErrorCode": FENCED_INSTANCE_ID}),
          call("s1b", "Heartbeat", hv, lambda x: hb(g, x["s1b.gen"], x["s1b"], "inst-1"),
               expect={"ErrorCode": NONE}),
          call("s1b", "SyncGroup", sv, lambda x: sync(g, x["s1b.gen"], x["s1b"], instance="inst-1")),
          call("c", "DescribeGroups", dv, describe([g])),
          # the known static member rejoins with other protocols: a rebalance
          call("s1b", "JoinGroup", v, lambda x: join(g, member=x["s1b"], instance="inst-1",
                                                     topics=(topic, "other")),
               save={"s1b.gen": "GenerationId"}),
          call("c", "DescribeGroups", dv, describe([g])),
          # leave by instance id (v3+ batch) with an unknown and a wrong member
          call("c", "LeaveGroup", LEAVE_V[v], {"GroupId": g, "Members": [
              {"MemberId": "", "GroupInstanceId": "inst-1"},
              {"MemberId": "", "GroupInstanceId": "inst-unknown"},
              {"MemberId": "nobody", "GroupInstanceId": None}]}),
          call("c", "DescribeGroups", dv, describe([g]))]
    return Scenario("static membership v%d: replace, fence, leave by instance" % v, s)


def static_leader_rejoin(N, v, topic):
    """KIP-814: a static leader that rejoins a Stable group unchanged."""
    g = N("skip")
    s = lone_member("s1", g, v, "s1", topic, instance="lead-1")
    s += rebalance_with(v, g, [("s2", None)], [("s1", None)], topic=topic,
                        instances={"s1": "lead-1", "s2": "follow-2"})
    s += [call("s1b", "JoinGroup", v, join(g, instance="lead-1", topics=(topic,)),
               expect={"ErrorCode": NONE}, save={"s1b": "MemberId", "s1b.gen": "GenerationId"}),
          call("s1b", "SyncGroup", SYNC_V[v], lambda x: sync(g, x["s1b.gen"], x["s1b"],
                                                              instance="lead-1")),
          call("c", "DescribeGroups", DESCRIBE_V[v], describe([g]))]
    return Scenario("join_group v%d: static leader rejoins (KIP-814)" % v, s)


def sync_checks(N, v, topic):
    jv = {0: 0, 3: 5, 5: 9}[v]
    g, nog = N("sync"), N("nogroup")
    s = join_steps("m1", g, jv, "m1", topics=(topic,))
    s += [call("m1", "SyncGroup", v, lambda x: sync(g, x["m1.gen"] + 1, x["m1"]),
               expect={"ErrorCode": ILLEGAL_GENERATION}),
          call("x", "SyncGroup", v, lambda x: sync(g, x["m1.gen"], "nobody")),
          call("x", "SyncGroup", v, sync(nog, 1, "nobody"))]
    if v >= 5:
        s += [call("m1", "SyncGroup", v, lambda x: sync(g, x["m1.gen"], x["m1"], ptype="connect"),
                   expect={"ErrorCode": INCONSISTENT_GROUP_PROTOCOL}),
              call("m1", "SyncGroup", v, lambda x: sync(g, x["m1.gen"], x["m1"], pname="roundrobin"),
                   expect={"ErrorCode": INCONSISTENT_GROUP_PROTOCOL}),
              # v5 makes both mandatory
              call("m1", "SyncGroup", v, lambda x: sync(g, x["m1.gen"], x["m1"], ptype=None),
                   expect={"ErrorCode": INCONSISTENT_GROUP_PROTOCOL}),
              call("m1", "SyncGroup", v, lambda x: sync(g, x["m1.gen"], x["m1"], pname=None),
                   expect={"ErrorCode": INCONSISTENT_GROUP_PROTOCOL})]
    # the leader's assignment names an unknown member and omits itself
    s += [call("m1", "SyncGroup", v, lambda x: sync(g, x["m1.gen"], x["m1"],
                                                    [("ghost", assignment({topic: [0]}))])),
          call("m1", "Heartbeat", HB_V[jv], lambda x: hb(g, x["m1.gen"], x["m1"]))]
    return Scenario("sync_group v%d: generation, member, protocol checks" % v, s)


def heartbeat_states(N, v, topic):
    jv = {0: 0, 4: 9}[v]
    g = N("hb")
    s = [call("x", "Heartbeat", v, hb(g, 1, "nobody"))]                       # no such group
    s += join_steps("m1", g, jv, "m1", topics=(topic,))
    s += [call("m1", "Heartbeat", v, lambda x: hb(g, x["m1.gen"], x["m1"])),  # CompletingRebalance
          call("m1", "Heartbeat", v, lambda x: hb(g, x["m1.gen"] + 1, x["m1"])),
          call("m1", "Heartbeat", v, lambda x: hb(g, x["m1.gen"], "nobody")),
          call("m1", "SyncGroup", SYNC_V[jv], lambda x: sync(g, x["m1.gen"], x["m1"])),
          call("m1", "Heartbeat", v, lambda x: hb(g, x["m1.gen"] - 1, x["m1"])),
          call("m1", "Heartbeat", v, lambda x: hb(g, x["m1.gen"], x["m1"], "no-instance"))]
    return Scenario("heartbeat v%d in each state" % v, s)


def leave_group(N, v, topic):
    g = N("leave")
    jv = {0: 0, 1: 2, 2: 3, 3: 5, 4: 6, 5: 9}[v]
    s = [call("x", "LeaveGroup", v, leave_body(v, g, "nobody"))]               # no such group
    s += lone_member("m1", g, jv, "m1", topic)
    s += [call("x", "LeaveGroup", v, leave_body(v, g, "nobody"))]
    if v >= 3:
        s += [call("x", "LeaveGroup", v, lambda x: {"GroupId": g, "Members": [
            {"MemberId": x["m1"], "GroupInstanceId": None},
            {"MemberId": "nobody", "GroupInstanceId": None}]})]
    else:
        s += [call("x", "LeaveGroup", v, lambda x: leave_body(v, g, x["m1"]))]
    s += [call("c", "DescribeGroups", 0, describe([g]))]
    return Scenario("leave_group v%d" % v, s)


# OffsetCommit/OffsetFetch v0 stored offsets in ZooKeeper: Kafka 3.9 in KRaft
# mode answers them UNSUPPORTED_VERSION per partition, 4.x does not serve
# them; cohortd serves them like v1 (README).
V0_ACCEPT = [(r"^(OffsetCommit|OffsetFetch):Topics\[Name=[^\]]*\]\.Partitions\[PartitionIndex=\d+\]"
              r"\.(ErrorCode|CommittedOffset|Metadata)$",
              "README: OffsetCommit/OffsetFetch v0 are served like v1"),
             (r"^DescribeGroups:Groups\[GroupId=[^\]]*\]\.GroupState$",
              "README: OffsetCommit/OffsetFetch v0 are served like v1 (the group exists)")]


def simple_commits(N, v, topic):
    g, nosuch = N("simple"), N("nosuch")
    fv = v if v >= 1 else 0
    s = [call("c", "OffsetCommit", v, commit(g, -1, "", {topic: {0: 5, 1: 7}}),
              label="simple consumer commit"),
         call("c", "OffsetFetch", fv, fetch_offsets(fv, g, {topic: [0, 1, 5]})),
         call("c", "OffsetCommit", v, commit(g, -1, "", {nosuch: {0: 1}})),
         call("c", "OffsetCommit", v, commit(g, -1, "", {topic: {9: 1}})),
         call("c", "OffsetCommit", v, commit(g, -1, "", {topic: {0: 6}}, metadata="x" * 5000)),
         call("c", "OffsetFetch", fv, fetch_offsets(fv, g, {topic: [0]}))]
    if fv >= 2:
        s.append(call("c", "OffsetFetch", fv, fetch_offsets(fv, g, None)))
    s += [call("c", "DescribeGroups", 0, describe([g]))]
    return Scenario("offset_commit v%d: simple consumer (no members)" % v, s,
                    accept=V0_ACCEPT if v == 0 else ())


def member_commits(N, jv, topic):
    g = N("mcommit")
    cv, fv, hv = COMMIT_V[jv], FETCH_V[jv], HB_V[jv]
    s = lone_member("m1", g, jv, "m1", topic)
    s += [call("m1", "OffsetCommit", cv, lambda x: commit(g, x["m1.gen"], x["m1"], {topic: {0: 10}}),
               expect={"Topics[0].Partitions[0].ErrorCode": NONE}),
          call("m1", "OffsetCommit", cv, lambda x: commit(g, x["m1.gen"] + 1, x["m1"],
                                                          {topic: {0: 11}}),
               label="stale generation"),
          call("m1", "OffsetCommit", cv, lambda x: commit(g, x["m1.gen"], "nobody", {topic: {0: 12}}),
               label="unknown member"),
          call("m1", "OffsetCommit", cv, commit(g, -1, "", {topic: {0: 13}}),
               label="simple commit to a group with members"),
          call("m1", "OffsetFetch", fv, fetch_offsets(fv, g, {topic: [0, 1]}))]
    # a second member makes the group rebalance: commits during it
    if jv >= 4:
        s += [call("m2", "JoinGroup", jv, join(g, topics=(topic,)), save={"m2": "MemberId"})]
    s += [send("m2", "JoinGroup", jv, lambda x: join(g, member=x.get("m2", ""), topics=(topic,))),
          poll("m1", "Heartbeat", hv, lambda x: hb(g, x["m1.gen"], x["m1"]),
               until=error_is(REBALANCE_IN_PROGRESS)),
          call("m1", "OffsetCommit", cv, lambda x: commit(g, x["m1.gen"], x["m1"], {topic: {0: 14}}),
               label="commit in PreparingRebalance"),
          send("m1", "JoinGroup", jv, lambda x: join(g, member=x["m1"], topics=(topic,))),
          recv("m1", save={"m1.gen": "GenerationId"}),
          recv("m2", save={"m2": "MemberId", "m2.gen": "GenerationId"}),
          call("m1", "OffsetCommit", cv, lambda x: commit(g, x["m1.gen"], x["m1"], {topic: {0: 15}}),
               label="commit in CompletingRebalance"),
          call("m1", "OffsetFetch", fv, fetch_offsets(fv, g, {topic: [0]}))]
    if fv >= 7:
        s += [call("m1", "OffsetFetch", fv, fetch_offsets(fv, g, {topic: [0]}, require_stable=True))]
    return Scenario("offset_commit v%d: member commits in each state" % cv, s)


def multi_group_fetch(N, topic):
    g1, g2, none = N("mg"), N("mg"), N("mg-none")
    s = [call("c", "OffsetCommit", 8, commit(g1, -1, "", {topic: {0: 1}})),
         call("c", "OffsetCommit", 8, commit(g2, -1, "", {topic: {1: 2}})),
         call("c", "OffsetFetch", 8, {"Groups": [
             {"GroupId": g1, "Topics": None},
             {"GroupId": g2, "Topics": [{"Name": topic, "PartitionIndexes": [0, 1]}]},
             {"GroupId": none, "Topics": None}], "RequireStable": False}),
         call("c", "OffsetFetch", 9, {"Groups": [
             {"GroupId": g1, "MemberId": None, "MemberEpoch": -1, "Topics": None},
             {"GroupId": g2, "MemberId": None, "MemberEpoch": -1, "Topics": None}],
             "RequireStable": True})]
    return Scenario("offset_fetch v8-v9: several groups at once", s)


def list_groups(N, topic):
    gs, ge = N("ls-stable"), N("ls-empty")
    keep = only_groups([gs, ge])
    s = lone_member("m1", gs, 9, "m1", topic)
    s += [call("c", "OffsetCommit", 8, commit(ge, -1, "", {topic: {0: 1}}))]
    for v in range(0, 6):
        s.append(call("c", "ListGroups", v, {}, keep=keep))
    s += [call("c", "ListGroups", 4, {"StatesFilter": ["Stable"]}, keep=keep),
          call("c", "ListGroups", 4, {"StatesFilter": ["empty"]}, keep=keep),
          call("c", "ListGroups", 4, {"StatesFilter": ["NoSuchState"]}, keep=keep),
          call("c", "ListGroups", 5, {"StatesFilter": [], "TypesFilter": ["classic"]}, keep=keep),
          call("c", "ListGroups", 5, {"StatesFilter": [], "TypesFilter": ["consumer"]}, keep=keep),
          call("c", "ListGroups", 5, {"StatesFilter": ["Stable", "Empty"],
                                      "TypesFilter": ["Classic"]}, keep=keep)]
    return Scenario("list_groups v0-v5 with state and type filters", s)


def describe_groups(N, v, topic):
    g, none = N("desc"), N("none")
    s = lone_member("m1", g, 9, "m1", topic)
    s += [call("c", "DescribeGroups", v, describe([g, none, ""], ops=True))]
    return Scenario("describe_groups v%d: stable, dead, empty id, operations" % v, s)


def delete_groups(N, v, topic):
    gm, ge, gn = N("del-members"), N("del-empty"), N("del-none")
    s = lone_member("m1", gm, 9, "m1", topic)
    s += [call("c", "OffsetCommit", 8, commit(ge, -1, "", {topic: {0: 1}})),
          call("c", "DeleteGroups", v, {"GroupsNames": [gm, ge, gn, gm]}),
          call("c", "DescribeGroups", 0, describe([gm, ge])),
          call("c", "OffsetFetch", 8, fetch_offsets(8, ge, None))]
    return Scenario("delete_groups v%d: non-empty, empty, unknown, duplicate" % v, s)


def offset_delete(N, topic):
    other, g, ge, gn, nosuch = N("topic-other"), N("odel"), N("odel-empty"), N("odel-none"), N("nosuch")
    s = create_topic("admin", other, 1)
    s += lone_member("m1", g, 9, "m1", topic)
    s += [call("m1", "OffsetCommit", 9, lambda x: commit(g, x["m1.gen"], x["m1"],
                                                         {topic: {0: 3}, other: {0: 4}})),
          call("c", "OffsetDelete", 0, {"GroupId": g, "Topics": [
              {"Name": topic, "Partitions": [{"PartitionIndex": 0}]},
              {"Name": other, "Partitions": [{"PartitionIndex": 0}]}]}),
          call("c", "OffsetFetch", 8, fetch_offsets(8, g, None)),
          call("c", "OffsetCommit", 8, commit(ge, -1, "", {topic: {0: 1}})),
          call("c", "OffsetDelete", 0, {"GroupId": ge, "Topics": [
              {"Name": topic, "Partitions": [{"PartitionIndex": 0}, {"PartitionIndex": 1}]},
              {"Name": nosuch, "Partitions": [{"PartitionIndex": 0}]}]}),
          call("c", "OffsetDelete", 0, {"GroupId": gn, "Topics": [
              {"Name": topic, "Partitions": [{"PartitionIndex": 0}]}]}),
          call("c", "OffsetFetch", 8, fetch_offsets(8, ge, None))]
    return Scenario("offset_delete: subscribed topic, empty group, unknown group", s)


def scenarios(ctx):
    N = ctx.name
    topic = N("topic")
    out = [Scenario("setup: the topic the groups consume", create_topic("admin", topic, 2),
                    setup=True)]
    out += [find_coordinator(N, v) for v in range(0, 7)]
    out += [lifecycle(N, v, topic) for v in range(0, 10)]
    out += [join_errors(N, v, topic) for v in (0, 4, 5, 9)]
    out += [protocol_vote(N, v, topic) for v in (3, 9)]
    out += [max_size(N, v, topic) for v in (3, 4, 9)]
    out += [rebalance_timeout(N, v, topic) for v in (1, 9)]
    out += [session_timeout(N, v, topic) for v in (0, 9)]
    out += [static_membership(N, v, topic) for v in (5, 7, 8, 9)]
    out += [static_leader_rejoin(N, v, topic) for v in (7, 8, 9)]
    out += [sync_checks(N, v, topic) for v in (0, 3, 5)]
    out += [heartbeat_states(N, v, topic) for v in (0, 4)]
    out += [leave_group(N, v, topic) for v in range(0, 6)]
    out += [simple_commits(N, v, topic) for v in range(0, 10)]
    out += [member_commits(N, jv, topic) for jv in (1, 5, 9)]
    out += [multi_group_fetch(N, topic), list_groups(N, topic)]
    out += [describe_groups(N, v, topic) for v in range(0, 6)]
    out += [delete_groups(N, v, topic) for v in range(0, 3)]
    out += [offset_delete(N, topic)]
    return out


def leave_body(v, g, member):
    if v <= 2:
        return {"GroupId": g, "MemberId": member}
    return {"GroupId": g, "Members": [{"MemberId": member, "GroupInstanceId": None}]}


def only_groups(names):
    """keep=: a ListGroups answer compared on this scenario's groups (the
    brokers are shared by every scenario of the run)."""
    def keep(r):
        r = dict(r)
        r["Groups"] = [x for x in r["Groups"] if x["GroupId"] in names]
        return r
    return keep


def rebalance_with(v, g, newcomers, existing, topic="t", instances=None):
    """New members join a Stable group; existing members (already synced) learn
    of the rebalance by heartbeat and rejoin; everyone syncs, the leader (the
    first existing member) assigns nothing in particular.
    newcomers/existing: [(name, protocols or None)]."""
    instances = instances or {}
    s = []
    for name, prot in newcomers:
        kw = dict(topics=(topic,), protocols=prot, instance=instances.get(name))
        if v >= 4 and not instances.get(name):
            s.append(call(name, "JoinGroup", v, join(g, **kw),
                          expect={"ErrorCode": MEMBER_ID_REQUIRED}, save={name: "MemberId"}))
        s.append(send(name, "JoinGroup", v,
                      lambda x, name=name, kw=kw: join(g, member=x.get(name, ""), **kw)))
    for name, prot in existing:
        s.append(poll(name, "Heartbeat", HB_V[v],
                      lambda x, name=name: hb(g, x[name + ".gen"], x[name], instances.get(name)),
                      until=error_is(REBALANCE_IN_PROGRESS)))
    # PreparingRebalance, once every newcomer's JoinGroup has arrived (the
    # heartbeat shows only that the first one has)
    everyone = len(newcomers) + len(existing)
    s.append(poll("c", "DescribeGroups", DESCRIBE_V[v], describe([g]), compare=True,
                  until=lambda r: len(r["Groups"][0]["Members"]) == everyone))
    for name, prot in existing:
        s.append(send(name, "JoinGroup", v,
                      lambda x, name=name, prot=prot: join(g, member=x[name], topics=(topic,),
                                                           protocols=prot,
                                                           instance=instances.get(name))))
    for name, _ in existing + newcomers:
        s.append(recv(name, expect={"ErrorCode": NONE},
                      save={name: "MemberId", name + ".gen": "GenerationId",
                            name + ".proto": "ProtocolName"}))
    leader = existing[0][0]
    members = [n for n, _ in existing + newcomers]
    for name in members[1:]:
        s.append(send(name, "SyncGroup", SYNC_V[v],
                      lambda x, name=name: sync(g, x[name + ".gen"], x[name],
                                                instance=instances.get(name),
                                                pname=x[name + ".proto"])))
    s.append(call(leader, "SyncGroup", SYNC_V[v],
                  lambda x: sync(g, x[leader + ".gen"], x[leader],
                                 [(x[n], assignment({topic: [i]})) for i, n in enumerate(members)],
                                 instance=instances.get(leader), pname=x[leader + ".proto"]),
                  expect={"ErrorCode": NONE}))
    for name in members[1:]:
        s.append(recv(name, expect={"ErrorCode": NONE}))
    return s
