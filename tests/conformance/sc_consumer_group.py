"""The consumer rebalance protocol (KIP-848): ConsumerGroupHeartbeat v0-v1,
ConsumerGroupDescribe v0-v1, and what a consumer-protocol member does with
the group APIs (OffsetCommit/OffsetFetch v9 with its member id and epoch,
ListGroups v5's type filter): joins, revocation and assignment step by step,
static members, each of Kafka's request checks and errors."""
from conform import Scenario, call, poll
from sclib import (GROUP_ID_NOT_FOUND, GROUP_MAX_SIZE_REACHED, NONE, UNKNOWN_MEMBER_ID,
                   create_topic)
import sc_group

AREA = "cgroup"

FENCED_MEMBER_EPOCH = 110
UNRELEASED_INSTANCE_ID = 111
STALE_MEMBER_EPOCH = 113
INVALID_REGULAR_EXPRESSION = 128

_ABSENT = object()


def hb(g, member="", epoch=0, instance=None, rack=None, rebalance=30000, topics=None,
       regex=_ABSENT, assignor=None, owned=_ABSENT):
    """A ConsumerGroupHeartbeat request. owned: [(topic id, [partitions])] or
    None (null: unchanged), by default empty for a join (Kafka refuses a null
    one there) and null otherwise; topics None is null (unchanged) too."""
    if owned is _ABSENT:
        owned = [] if epoch == 0 else None
    f = {"GroupId": g, "MemberId": member, "MemberEpoch": epoch, "InstanceId": instance,
         "RackId": rack, "RebalanceTimeoutMs": rebalance,
         "SubscribedTopicNames": None if topics is None else list(topics),
         "ServerAssignor": assignor,
         "TopicPartitions": None if owned is None else [
             {"TopicId": t, "Partitions": list(p)} for t, p in owned]}
    if regex is not _ABSENT:
        f["SubscribedTopicRegex"] = regex
    return f


def owned_now(name):
    """The member's last answered assignment as its owned partitions (what a
    consumer reports once it has taken it)."""
    def f(x):
        a = x.get(name + ".assignment")
        return [(t["TopicId"], t["Partitions"]) for t in (a or {}).get("TopicPartitions", [])]
    return f


def hb_save(name):
    """save= of a heartbeat answer: the member's id, epoch and assignment."""
    return {name: "MemberId", name + ".epoch": "MemberEpoch",
            name + ".assignment": lambda r: r["Assignment"] or {"TopicPartitions": []}}


def beat(conn, v, g, name, owned=True, **kw):
    """The member heartbeats at its epoch, reporting what it was last given
    (owned False: null, unchanged)."""
    return call(conn, "ConsumerGroupHeartbeat", v,
                lambda x: hb(g, x[name], x[name + ".epoch"],
                             owned=owned_now(name)(x) if owned else None),
                save=hb_save(name), **kw)


def join(conn, v, g, name, topic, member=None, instance=None, expect=NONE, **kw):
    """A member joins (epoch 0); v1 members bring their own id (KIP-1082)."""
    if member is None:
        member = "" if v == 0 else name + "-" + g
    save = hb_save(name) if expect == NONE else {}
    return call(conn, "ConsumerGroupHeartbeat", v,
                hb(g, member, 0, instance=instance, topics=[topic], **kw),
                expect={"ErrorCode": expect}, save=save)


def describe(groups, ops=False):
    return {"GroupIds": list(groups), "IncludeAuthorizedOperations": ops}


def commit(g, member, epoch, offsets):
    return sc_group.commit(g, epoch, member, offsets)


def fetch9(g, member, epoch, topic, parts):
    return {"Groups": [{"GroupId": g, "MemberId": member, "MemberEpoch": epoch,
                        "Topics": [{"Name": topic, "PartitionIndexes": parts}]}],
            "RequireStable": False}


def topic_id(conn, topic):
    """Saves the topic's id as "tid" (heartbeats name owned partitions by id)."""
    return call(conn, "Metadata", 12, {"Topics": [{"Name": topic}],
                                       "AllowAutoTopicCreation": False},
                compare=False, save={"tid": "Topics[0].TopicId"})


def assigned_count(n):
    def ok(r):
        a = r["Assignment"]
        return r["ErrorCode"] == 0 and a is not None and sum(
            len(t["Partitions"]) for t in a["TopicPartitions"]) == n
    return ok


# ------------------------------------------------------------ scenarios

def lone_member(N, v, dv, topic):
    """Dead -> a member of its own (the group's first epoch) -> heartbeats ->
    commits and fetches with its id and epoch -> leaves (-1) -> Empty."""
    g = N("lone")
    s = [call("c", "ConsumerGroupDescribe", dv, describe([g])),
         join("m1", v, g, "m1", topic),
         call("c", "ConsumerGroupDescribe", dv, describe([g], ops=True)),
         beat("m1", v, g, "m1"),
         beat("m1", v, g, "m1", owned=False),
         call("c", "ConsumerGroupDescribe", dv, describe([g])),
         call("c", "ListGroups", 5, {"StatesFilter": [], "TypesFilter": ["consumer"]},
              keep=sc_group.only_groups([g])),
         call("c", "ListGroups", 5, {"StatesFilter": ["Stable"], "TypesFilter": ["classic"]},
              keep=sc_group.only_groups([g])),
         call("c", "ListGroups", 4, {"StatesFilter": ["stable"]}, keep=sc_group.only_groups([g])),
         # the member's commits: at its epoch, newer, older, nobody's, a simple one
         call("m1", "OffsetCommit", 9, lambda x: commit(g, x["m1"], x["m1.epoch"], {topic: {0: 5}}),
              expect={"Topics[0].Partitions[0].ErrorCode": NONE}),
         call("m1", "OffsetCommit", 9,
              lambda x: commit(g, x["m1"], x["m1.epoch"] + 1, {topic: {0: 6}}),
              expect={"Topics[0].Partitions[0].ErrorCode": STALE_MEMBER_EPOCH}),
         call("m1", "OffsetCommit", 9,
              lambda x: commit(g, x["m1"], x["m1.epoch"] - 1, {topic: {1: 6}})),
         call("m1", "OffsetCommit", 9,
              lambda x: commit(g, "nobody", x["m1.epoch"], {topic: {0: 7}}),
              expect={"Topics[0].Partitions[0].ErrorCode": UNKNOWN_MEMBER_ID}),
         call("m1", "OffsetCommit", 9, commit(g, "", -1, {topic: {1: 8}}),
              label="a simple commit to a consumer group with members"),
         call("m1", "OffsetCommit", 8, lambda x: commit(g, x["m1"], x["m1.epoch"], {topic: {1: 9}}),
              label="v8: the classic protocol's generation check"),
         call("m1", "OffsetFetch", 9, lambda x: fetch9(g, x["m1"], x["m1.epoch"], topic, [0, 1])),
         call("m1", "OffsetFetch", 9,
              lambda x: fetch9(g, x["m1"], x["m1.epoch"] + 1, topic, [0]),
              label="a newer epoch"),
         call("m1", "OffsetFetch", 9, lambda x: fetch9(g, "nobody", 1, topic, [0])),
         call("m1", "OffsetFetch", 9, fetch9(g, None, -1, topic, [0, 1]),
              label="an admin's fetch"),
         # it leaves
         call("m1", "ConsumerGroupHeartbeat", v, lambda x: hb(g, x["m1"], -1),
              expect={"ErrorCode": NONE, "MemberEpoch": -1}),
         call("c", "ConsumerGroupDescribe", dv, describe([g])),
         call("m1", "ConsumerGroupHeartbeat", v, lambda x: hb(g, x["m1"], x["m1.epoch"]),
              expect={"ErrorCode": UNKNOWN_MEMBER_ID}),
         call("m1", "ConsumerGroupHeartbeat", v, lambda x: hb(g, x["m1"], -1),
              label="leaves again"),
         call("c", "ListGroups", 5, {"StatesFilter": [], "TypesFilter": ["consumer"]},
              keep=sc_group.only_groups([g])),
         call("c", "OffsetFetch", 9, fetch9(g, None, -1, topic, [0, 1]))]
    return Scenario("consumer group v%d: a lone member (describe v%d)" % (v, dv), s)


def second_member(N, v, topic):
    """A second member joins a group of one: the first keeps what it must give
    up until a heartbeat of its own shows it released, the second gets it
    only then; compared step by step. Then the first leaves."""
    g = N("two")
    s = [join("m1", v, g, "m1", topic),
         beat("m1", v, g, "m1"),
         join("m2", v, g, "m2", topic),
         call("c", "ConsumerGroupDescribe", 0, describe([g])),
         # the second member again: nothing is free yet
         beat("m2", v, g, "m2"),
         # the first member learns what to revoke, still reporting both
         call("m1", "ConsumerGroupHeartbeat", v,
              lambda x: hb(g, x["m1"], x["m1.epoch"], owned=[(x["tid"], [0, 1])]),
              save=hb_save("m1")),
         call("c", "ConsumerGroupDescribe", 1, describe([g])),
         call("m1", "OffsetCommit", 9,
              lambda x: commit(g, x["m1"], x["m1.epoch"], {topic: {0: 1, 1: 1}}),
              label="a commit while revoking"),
         call("m2", "ConsumerGroupHeartbeat", v,
              lambda x: hb(g, x["m2"], x["m2.epoch"], owned=[]), save=hb_save("m2")),
         # the first acknowledges: reports only what it keeps
         beat("m1", v, g, "m1"),
         call("c", "ConsumerGroupDescribe", 0, describe([g])),
         call("m2", "ConsumerGroupHeartbeat", v,
              lambda x: hb(g, x["m2"], x["m2.epoch"], owned=[]), save=hb_save("m2")),
         beat("m2", v, g, "m2"),
         call("c", "ConsumerGroupDescribe", 0, describe([g])),
         call("m2", "OffsetCommit", 9,
              lambda x: commit(g, x["m2"], x["m2.epoch"], {topic: {0: 2, 1: 2}}),
              label="a partition it holds and one it does not"),
         # a third member: the group is full (group.consumer.max.size=2 on
         # both brokers, test_conformance.SETTINGS)
         join("m3", v, g, "m3", topic, expect=GROUP_MAX_SIZE_REACHED),
         # the first leaves; the second gets everything
         call("m1", "ConsumerGroupHeartbeat", v, lambda x: hb(g, x["m1"], -1),
              expect={"ErrorCode": NONE}),
         beat("m2", v, g, "m2"),
         beat("m2", v, g, "m2"),
         call("c", "ConsumerGroupDescribe", 0, describe([g]))]
    s.insert(0, topic_id("m1", topic))
    return Scenario("consumer group v%d: a second member, revocation then assignment" % v, s)


def epoch_errors(N, v, topic):
    """FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID, GROUP_ID_NOT_FOUND around one
    member; the previous epoch is still accepted with what it owned."""
    g, nog, cl = N("epochs"), N("epochs-none"), N("epochs-classic")
    s = [topic_id("m1", topic),
         call("x", "ConsumerGroupHeartbeat", v, hb(nog, "nobody", 1),
              expect={"ErrorCode": GROUP_ID_NOT_FOUND}),
         call("x", "ConsumerGroupHeartbeat", v, hb(nog, "nobody", -1), label="a leave"),
         call("x", "ConsumerGroupHeartbeat", v, hb(nog, "nobody", -2, instance="i"),
              label="a static leave"),
         join("m1", v, g, "m1", topic),
         beat("m1", v, g, "m1"),
         call("m1", "ConsumerGroupHeartbeat", v,
              lambda x: hb(g, x["m1"], x["m1.epoch"] + 1, owned=owned_now("m1")(x)),
              expect={"ErrorCode": FENCED_MEMBER_EPOCH}, label="a newer epoch"),
         call("m1", "ConsumerGroupHeartbeat", v,
              lambda x: hb(g, x["m1"], x["m1.epoch"] - 1, owned=owned_now("m1")(x)),
              label="an older epoch, not its previous one"),
         call("x", "ConsumerGroupHeartbeat", v, lambda x: hb(g, "nobody", x["m1.epoch"]),
              expect={"ErrorCode": UNKNOWN_MEMBER_ID}),
         call("x", "ConsumerGroupHeartbeat", v, hb(g, "nobody", -1), label="nobody leaves"),
         # a second member makes a new epoch: the first's previous epoch
         # stays good while it owns no more than it is given
         join("m2", v, g, "m2", topic),
         call("m1", "ConsumerGroupHeartbeat", v,
              lambda x: hb(g, x["m1"], x["m1.epoch"], owned=owned_now("m1")(x)),
              save=hb_save("m1")),
         beat("m1", v, g, "m1"),
         call("m1", "ConsumerGroupHeartbeat", v,
              lambda x: hb(g, x["m1"], x["m1.epoch"] - 1, owned=owned_now("m1")(x)),
              label="its previous epoch"),
         call("m1", "ConsumerGroupHeartbeat", v,
              lambda x: hb(g, x["m1"], x["m1.epoch"] - 1, owned=[(x["tid"], [0, 1])]),
              label="its previous epoch, owning more than it has"),
         call("c", "ConsumerGroupDescribe", 0, describe([g])),
         # a classic group's id
         call("c", "OffsetCommit", 8, sc_group.commit(cl, -1, "", {topic: {0: 1}})),
         call("x", "ConsumerGroupHeartbeat", v, hb(cl, "nobody", 3),
              label="the id of a classic group, not joining"),
         call("x", "ConsumerGroupHeartbeat", v, hb(cl, "nobody", -1),
              label="the id of a classic group, leaving")]
    return Scenario("consumer group v%d: epochs and members the coordinator refuses" % v, s)


def request_checks(N, v, topic):
    """Each of Kafka's request checks (GroupCoordinatorService's
    throwIfConsumerGroupHeartbeatRequestIsInvalid), in its order."""
    g = N("checks")
    m = "" if v == 0 else "checks-member"
    rx = {} if v == 0 else {"regex": None}
    bad = [("MemberId empty at epoch 1", hb(g, "", 1, topics=[topic])),
           ("MemberId blank at epoch -1", hb(g, "  ", -1)),
           ("GroupId empty", hb("", m or "x", 0, topics=[topic])),
           ("GroupId blank", hb("   ", m or "x", 0, topics=[topic])),
           ("InstanceId blank", hb(g, m, 0, instance=" ", topics=[topic])),
           ("RackId empty", hb(g, m, 0, rack="", topics=[topic])),
           ("no RebalanceTimeoutMs when joining", hb(g, m, 0, rebalance=-1, topics=[topic])),
           ("null owned partitions when joining", hb(g, m, 0, topics=[topic], owned=None)),
           ("owned partitions when joining",
            lambda x: hb(g, m, 0, topics=[topic], owned=[(x["tid"], [0])])),
           ("no subscription when joining", hb(g, m, 0, topics=None, **rx)),
           ("a static leave without InstanceId", hb(g, m or "x", -2)),
           ("MemberEpoch -3", hb(g, m or "x", -3)),
           ("an unknown ServerAssignor", hb(g, m, 0, topics=[topic], assignor="sticky")),
           ("the range ServerAssignor", hb(g, m, 0, topics=[topic], assignor="range")),
           ("an empty ServerAssignor", hb(g, m + "2", 0, topics=[topic], assignor=""))]
    if v >= 1:
        bad = [("MemberId empty when joining (v1)", hb(g, "", 0, topics=[topic]))] + bad
        bad += [("an invalid regex", hb(g, m + "3", 0, topics=[], regex="a(b")),
                ("an empty regex with names", hb(g, m + "4", 0, topics=[topic], regex="")),
                ("a regex and names", hb(g, m + "5", 0, topics=[topic], regex=topic + ".*"))]
    s = [topic_id("c", topic)]
    s += [call("c", "ConsumerGroupHeartbeat", v, f, label=why) for why, f in bad]
    s += [call("c", "ConsumerGroupDescribe", 0, describe([g]))]
    # a new group's member subscribed to nothing: no new epoch
    ge = N("checks-nothing")
    s += [call("c", "ConsumerGroupHeartbeat", v, hb(ge, m, 0, topics=[]),
               label="subscribed to nothing"),
          call("c", "ConsumerGroupDescribe", 0, describe([ge]))]
    return Scenario("consumer group v%d: request checks" % v, s)


def static_member(N, v, topic):
    """A static member: its instance id cannot be taken while it is there,
    it leaves with -2 and comes back (a new member id in v0, its own in v1)
    with the same assignment, without a new epoch."""
    g = N("static")
    inst = "inst-a"
    s = [topic_id("s1", topic),
         join("s1", v, g, "s1", topic, instance=inst),
         beat("s1", v, g, "s1"),
         call("c", "ConsumerGroupDescribe", 0, describe([g])),
         join("s2", v, g, "s2", topic, instance=inst, expect=UNRELEASED_INSTANCE_ID),
         call("s1", "ConsumerGroupHeartbeat", v,
              lambda x: hb(g, x["s1"], x["s1.epoch"], instance=inst, owned=owned_now("s1")(x)),
              label="a heartbeat naming its instance id"),
         call("s1", "ConsumerGroupHeartbeat", v,
              lambda x: hb(g, x["s1"], -2, instance=inst),
              expect={"ErrorCode": NONE, "MemberEpoch": -2}),
         call("c", "ConsumerGroupDescribe", 0, describe([g])),
         call("s1", "ConsumerGroupHeartbeat", v,
              lambda x: hb(g, x["s1"], x["s1.epoch"], instance=inst),
              label="the member that left heartbeats"),
         # it comes back
         join("s3", v, g, "s3", topic, instance=inst, member=None if v == 0 else "s3-" + g),
         call("c", "ConsumerGroupDescribe", 0, describe([g])),
         beat("s3", v, g, "s3"),
         call("s1", "ConsumerGroupHeartbeat", v,
              lambda x: hb(g, x["s1"], x["s1.epoch"], instance=inst,
                           owned=owned_now("s1")(x)),
              label="the replaced member"),
         call("s3", "ConsumerGroupHeartbeat", v, lambda x: hb(g, x["s3"], -1, instance=inst),
              label="a static member leaves for good"),
         call("c", "ConsumerGroupDescribe", 0, describe([g]))]
    return Scenario("consumer group v%d: a static member leaves (-2) and comes back" % v, s)


def regex_member(N, topic):
    """v1: a member with its own id (KIP-1082) subscribed by regex. Kafka
    resolves a regex new to the group off its thread (cohortd within the
    heartbeat): the join's answer is not compared, full heartbeats (which
    always carry the assignment) are repeated until it is there."""
    g = N("regex")
    rx = "^" + topic + "$"
    s = [topic_id("r1", topic),
         call("r1", "ConsumerGroupHeartbeat", 1, hb(g, "r1-" + g, 0, topics=[], regex=rx),
              expect={"ErrorCode": NONE, "MemberId": "r1-" + g}, save=hb_save("r1"),
              compare=False),
         poll("r1", "ConsumerGroupHeartbeat", 1,
              lambda x: hb(g, x["r1"], x["r1.epoch"], regex=rx, owned=[]),
              until=assigned_count(2), compare=True, save=hb_save("r1"),
              label="a full heartbeat: the assignment"),
         beat("r1", 1, g, "r1"),
         call("c", "ConsumerGroupDescribe", 1, describe([g])),
         # the same regex for a second member: already resolved
         call("r2", "ConsumerGroupHeartbeat", 1,
              hb(g, "r2-" + g, 0, topics=[], regex="^" + topic + "$"), save=hb_save("r2")),
         call("r1", "ConsumerGroupHeartbeat", 1,
              lambda x: hb(g, x["r1"], x["r1.epoch"], owned=owned_now("r1")(x)),
              save=hb_save("r1")),
         call("r1", "ConsumerGroupHeartbeat", 1,
              lambda x: hb(g, x["r1"], x["r1.epoch"], owned=owned_now("r1")(x)),
              save=hb_save("r1")),
         call("r2", "ConsumerGroupHeartbeat", 1,
              lambda x: hb(g, x["r2"], x["r2.epoch"], owned=[]), save=hb_save("r2")),
         call("c", "ConsumerGroupDescribe", 1, describe([g])),
         # an invalid regex from a member already in the group
         call("r2", "ConsumerGroupHeartbeat", 1,
              lambda x: hb(g, x["r2"], x["r2.epoch"], regex="[", owned=owned_now("r2")(x)),
              expect={"ErrorCode": INVALID_REGULAR_EXPRESSION}),
         call("r2", "ConsumerGroupHeartbeat", 1, lambda x: hb(g, x["r2"], -1)),
         call("r1", "ConsumerGroupHeartbeat", 1, lambda x: hb(g, x["r1"], -1))]
    return Scenario("consumer group v1: own member ids, a regex subscription", s)


def subscription_changes(N, v, topic):
    """A member's subscription and server assignor change in its heartbeats:
    each change is a new epoch and a new target (the preferred assignor is
    the one most members name)."""
    g = N("resub")
    s = [topic_id("m1", topic),
         join("m1", v, g, "m1", topic),
         beat("m1", v, g, "m1"),
         call("m1", "ConsumerGroupHeartbeat", v,
              lambda x: hb(g, x["m1"], x["m1.epoch"], topics=[], owned=owned_now("m1")(x)),
              save=hb_save("m1"), label="subscribed to nothing", expect={"ErrorCode": NONE}),
         beat("m1", v, g, "m1"),
         call("c", "ConsumerGroupDescribe", 0, describe([g])),
         call("m1", "ConsumerGroupHeartbeat", v,
              lambda x: hb(g, x["m1"], x["m1.epoch"], topics=[topic], assignor="range",
                           owned=owned_now("m1")(x)),
              save=hb_save("m1"), label="subscribed again, naming the range assignor", expect={"ErrorCode": NONE}),
         beat("m1", v, g, "m1"),
         call("c", "ConsumerGroupDescribe", 0, describe([g]),
              expect={"Groups[0].AssignorName": "range"}),
         call("m1", "ConsumerGroupHeartbeat", v,
              lambda x: hb(g, x["m1"], x["m1.epoch"], assignor="range",
                           owned=owned_now("m1")(x)),
              label="the same assignor again", expect={"ErrorCode": NONE}),
         call("m1", "ConsumerGroupHeartbeat", v, lambda x: hb(g, x["m1"], -1))]
    return Scenario("consumer group v%d: subscription and assignor changes" % v, s)


def describe_others(N, dv, topic):
    """ConsumerGroupDescribe of what is not a consumer group: a classic group
    with a member, one without (offsets only), none, an empty id."""
    gc, ge, gn = N("desc-classic"), N("desc-simple"), N("desc-none")
    s = sc_group.lone_member("k1", gc, 9, "k1", topic)
    s += [call("c", "OffsetCommit", 8, sc_group.commit(ge, -1, "", {topic: {0: 1}})),
          call("c", "ConsumerGroupDescribe", dv, describe([gc, ge, gn, ""], ops=True)),
          call("c", "ConsumerGroupHeartbeat", 0, hb(gc, "", 0, topics=[topic]),
               label="joining a classic group with a member"),
          call("c", "ConsumerGroupDescribe", dv, describe([gc]))]
    return Scenario("consumer_group_describe v%d: classic, simple, missing groups" % dv, s)


def scenarios(ctx):
    N = ctx.name
    topic = N("topic")
    out = [Scenario("setup: the topic the consumer groups consume",
                    create_topic("admin", topic, 2), setup=True)]
    out += [lone_member(N, v, dv, topic) for v, dv in ((0, 0), (1, 1))]
    out += [second_member(N, v, topic) for v in (0, 1)]
    out += [epoch_errors(N, v, topic) for v in (0, 1)]
    out += [request_checks(N, v, topic) for v in (0, 1)]
    out += [static_member(N, v, topic) for v in (0, 1)]
    out += [subscription_changes(N, v, topic) for v in (0, 1)]
    out += [regex_member(N, topic)]
    out += [describe_others(N, dv, topic) for dv in (0, 1)]
    return out
