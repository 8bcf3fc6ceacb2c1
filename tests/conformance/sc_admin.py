"""ApiVersions, Metadata, CreateTopics, DeleteTopics, CreatePartitions."""
from conform import Scenario, call, raw, closed
from sclib import (INVALID_CONFIG, INVALID_PARTITIONS, INVALID_REPLICA_ASSIGNMENT,
                   INVALID_REPLICATION_FACTOR, INVALID_REQUEST, INVALID_TOPIC_EXCEPTION, NONE,
                   TOPIC_ALREADY_EXISTS, UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION,
                   UNSUPPORTED_VERSION, api_versions_frame, raw_frame, create_topic, wait_topic,
                   wait_topic_gone)

AREA = "admin"

# Differences README.md documents ("Where cohort differs from Kafka on purpose").
ACCEPT = [
    # Kafka 4's storage format writes a cluster-wide dynamic default
    # min.insync.replicas=1 (KIP-966), so its source there is
    # DYNAMIC_DEFAULT_BROKER_CONFIG; the value is the same. An artefact of
    # how the reference is set up, not of cohortd.
    (r"^CreateTopics:Topics\[Name=[^\]]*\]\.Configs\[Name=min\.insync\.replicas\]\.ConfigSource$",
     "reference setup: cluster-level min.insync.replicas default on Kafka 4"),
    (r"^CreateTopics:Topics\[Name=[^\]]*\]\.Configs\[Name=(compression\.(gzip|lz4|zstd)\.level|"
     r"errors\.deadletterqueue\.group\.enable|(follower|leader)\.replication\.throttled\.replicas|"
     r"local\.retention\.(bytes|ms)|max\.decompressed\.message\.bytes|"
     r"remote\.[a-z.]+|"
     r"unclean\.leader\.election\.enable)\]$",
     "README: topic configs cohortd does not implement are not listed"),
    (r"^ApiVersions:(SupportedFeatures|FinalizedFeatures|FinalizedFeaturesEpoch|ZkMigrationReady)",
     "README: no feature flags (KRaft metadata.version, group.version, ...)"),
]
# Which APIs and versions each side advertises is checked by check_advertised.
ADVERTISED_SET = [(r"^ApiVersions:ApiKeys", "the advertised set is compared by check_advertised")]
# The unsupported-version answer names ApiVersions alone; its top version is
# what each side serves (check_advertised).
OWN_RANGE = [(r"^ApiVersions:ApiKeys\[ApiKey=18\]\.MaxVersion$",
              "ApiVersions' own range is compared by check_advertised")]


def check_advertised(ctx):
    """What cohortd advertises must lie within what Kafka serves: within 4.x's
    range, or 3.9's for versions KIP-896 removed from 4.x."""
    out = []
    c, k4, k39 = ctx.advertised["cohortd"], ctx.advertised["4"], ctx.advertised["3.9"]
    for api, (lo, hi) in sorted(c.items()):
        rng = [r for r in (k4.get(api), k39.get(api)) if r]
        if not rng:
            out.append("cohortd advertises %s v%d-v%d, which neither Kafka serves" % (api, lo, hi))
            continue
        klo, khi = min(r[0] for r in rng), max(r[1] for r in rng)
        if lo < klo or hi > khi:
            out.append("cohortd advertises %s v%d-v%d; Kafka serves v%d-v%d"
                       % (api, lo, hi, klo, khi))
    return out


CHECKS = [check_advertised]


def md(topics, v=12, auto=False, ops=False):
    f = {"Topics": None if topics is None else [{"Name": t} for t in topics]}
    if v >= 4:
        f["AllowAutoTopicCreation"] = auto
    if v >= 8:
        f["IncludeTopicAuthorizedOperations"] = ops
    return f


def only_topics(names):
    """keep=: an all-topics answer compared on this scenario's topics only
    (the brokers are shared by every scenario of the run)."""
    def keep(r):
        r = dict(r)
        r["Topics"] = [t for t in r["Topics"] if t["Name"] in names]
        return r
    return keep


def create(v, topics, validate_only=False, timeout_ms=30000):
    """topics: [(name, partitions, rf, configs dict, assignments)]"""
    f = {"Topics": [], "timeoutMs": timeout_ms}
    for t in topics:
        name, parts, rf = t[0], t[1], t[2]
        configs = t[3] if len(t) > 3 else {}
        assign = t[4] if len(t) > 4 else []
        f["Topics"].append({"Name": name, "NumPartitions": parts, "ReplicationFactor": rf,
                            "Assignments": [{"PartitionIndex": i, "BrokerIds": b}
                                            for i, b in assign],
                            "Configs": [{"Name": k, "Value": val} for k, val in configs.items()]})
    if v >= 1:
        f["validateOnly"] = validate_only
    return f


def delete(v, names, ids=()):
    if v >= 6:
        return {"Topics": [{"Name": n} for n in names] + [{"Name": None, "TopicId": i}
                                                          for i in ids],
                "TimeoutMs": 30000}
    return {"TopicNames": list(names), "TimeoutMs": 30000}


def partitions(v, counts, validate_only=False, assignments=None):
    return {"Topics": [{"Name": n, "Count": c,
                        "Assignments": (assignments or {}).get(n)} for n, c in counts.items()],
            "TimeoutMs": 30000, "ValidateOnly": validate_only}


def scenarios(ctx):
    out = []
    N = ctx.name

    # ---------------------------------------------------------- ApiVersions
    steps = []
    for v in range(0, 5):
        body = {"ClientSoftwareName": "conformance", "ClientSoftwareVersion": "1.0"} if v >= 3 else {}
        steps.append(call("c", "ApiVersions", v, body, expect={"ErrorCode": NONE}))
    out.append(Scenario("api_versions: v0-v4", steps, ref="4", accept=ADVERTISED_SET))
    # A version newer than the broker knows: the v0 answer with UNSUPPORTED_VERSION.
    for ref in ("4", "3.9"):
        out.append(Scenario("api_versions: unsupported version (kafka-%s)" % ref, [
            raw("c", "ApiVersions", 0, api_versions_frame(127),
                expect={"ErrorCode": UNSUPPORTED_VERSION}),
            # the connection stays usable
            call("c", "Metadata", 4, md(["admin-no-such-topic"], 4),
                 expect={"Topics[0].ErrorCode": UNKNOWN_TOPIC_OR_PARTITION}),
        ], ref=ref, accept=OWN_RANGE))
    # v3+ validates the client software name and version (KIP-511).
    out.append(Scenario("api_versions: invalid client software name", [
        call("c", "ApiVersions", 3, {"ClientSoftwareName": "bad name!",
                                     "ClientSoftwareVersion": "1"},
             expect={"ErrorCode": INVALID_REQUEST}),
        call("d", "ApiVersions", 4, {"ClientSoftwareName": "ok",
                                     "ClientSoftwareVersion": "-1."},
             expect={"ErrorCode": INVALID_REQUEST}),
    ], ref="4"))
    # Another API at a version the broker does not serve: the connection closes.
    out.append(Scenario("unsupported version of Metadata closes the connection", [
        raw("c", "Metadata", 0, raw_frame(3, 99, b"", True)),
    ], ref="4"))

    # ------------------------------------------------------------- Metadata
    t = N("md")
    steps = create_topic("c", t, 3)
    for v in range(0, 13):
        steps.append(call("c", "Metadata", v, md([t], v), expect={"Topics[0].ErrorCode": NONE}))
    for v in (1, 9, 12):
        steps.append(call("c", "Metadata", v, md(None, v), keep=only_topics([t])))
    out.append(Scenario("metadata: an existing topic, v0-v12, by name and all topics", steps))

    steps = []
    for v in (4, 8, 12):
        steps.append(call("c", "Metadata", v, md([N("missing")], v, auto=False),
                          expect={"Topics[0].ErrorCode": UNKNOWN_TOPIC_OR_PARTITION}))
    for v in (0, 4, 12):
        for bad in ("bad name!", "", "a" * 250, ".."):
            steps.append(call("c", "Metadata", v, md([bad], v, auto=True),
                              expect={"Topics[0].ErrorCode": INVALID_TOPIC_EXCEPTION}))
    out.append(Scenario("metadata: unknown topic, invalid names", steps))

    # Auto-creation: Kafka answers LEADER_NOT_AVAILABLE until its controller
    # has placed the topic; cohortd returns it ready (README).
    steps = []
    for v in (0, 1, 4, 9, 12):
        t = N("auto")
        steps += [call("c", "Metadata", v, md([t], v, auto=True), accept=[
                      (r"^Metadata:Topics\[Name=admin(-k39)?-auto-[0-9]+\]\.(ErrorCode|Partitions.*|TopicId)$",
                       "README: auto-created topics are returned ready in the same response")]),
                  *wait_topic("c", t, 1),
                  call("c", "Metadata", v, md([t], v, auto=True), expect={"Topics[0].ErrorCode": NONE})]
    out.append(Scenario("metadata: auto-created topics", steps))

    # Partition 0 only: "create_partitions: duplicates, internal topic" grows
    # __consumer_offsets on cohortd and Kafka 4.x, not on 3.9 (the second pass).
    def first_partition(r):
        r = dict(r, Topics=[dict(t, Partitions=[p for p in t["Partitions"]
                                                if p["PartitionIndex"] == 0])
                            for t in r["Topics"]])
        return r
    steps = [call("c", "Metadata", 1, md(["__consumer_offsets"], 1), keep=first_partition),
             call("c", "Metadata", 12, md(["__consumer_offsets"], 12), keep=first_partition)]
    out.append(Scenario("metadata: __consumer_offsets is internal", steps))

    t = N("mdops")
    steps = create_topic("c", t) + [
        call("c", "Metadata", 8, md([t], 8, ops=True)),
        call("c", "Metadata", 10, dict(md([t], 10, ops=True), IncludeClusterAuthorizedOperations=True)),
        call("c", "Metadata", 12, md([t], 12, ops=True)),
    ]
    out.append(Scenario("metadata: authorized operations requested", steps))

    steps = [call("c", "Metadata", 12, {"Topics": [{"TopicId": "8f1f5d8e-8d6e-4c6a-9d1c-3a5b1e2f4a6b",
                                                    "Name": None}],
                                        "AllowAutoTopicCreation": False},
                  expect={"Topics[0].ErrorCode": UNKNOWN_TOPIC_ID})]
    out.append(Scenario("metadata: unknown topic id", steps))

    # --------------------------------------------------------- CreateTopics
    for v in range(0, 8):
        t = N("ct")
        steps = [call("c", "CreateTopics", v, create(v, [(t, 3, 1)]),
                      expect={"Topics[0].ErrorCode": NONE}),
                 *wait_topic("c", t, 3),
                 call("c", "CreateTopics", v, create(v, [(t, 3, 1)]),
                      expect={"Topics[0].ErrorCode": TOPIC_ALREADY_EXISTS})]
        out.append(Scenario("create_topics v%d: create, then TOPIC_ALREADY_EXISTS" % v, steps))

    for v in (0, 4, 5, 7):
        steps = []
        for bad in ("bad name!", "", "a" * 250, ".", "..", "x/y"):
            steps.append(call("c", "CreateTopics", v, create(v, [(bad, 1, 1)]),
                              expect={"Topics[0].ErrorCode": INVALID_TOPIC_EXCEPTION}))
        steps.append(call("c", "CreateTopics", v, create(v, [(N("rf"), 1, 2)]),
                          expect={"Topics[0].ErrorCode": INVALID_REPLICATION_FACTOR}))
        steps.append(call("c", "CreateTopics", v, create(v, [(N("rf0"), 1, 0)]),
                          expect={"Topics[0].ErrorCode": INVALID_REPLICATION_FACTOR}))
        steps.append(call("c", "CreateTopics", v, create(v, [(N("p0"), 0, 1)]),
                          expect={"Topics[0].ErrorCode": INVALID_PARTITIONS}))
        # manual assignments: with a count or factor, a broker that does not
        # exist, a broker twice, a gap; then one that works
        steps.append(call("c", "CreateTopics", v, create(v, [(N("asg"), 1, 1, {}, [(0, [1])])]),
                          expect={"Topics[0].ErrorCode": INVALID_REQUEST}))
        steps.append(call("c", "CreateTopics", v, create(v, [(N("asg"), 1, -1, {}, [(0, [1])])]),
                          expect={"Topics[0].ErrorCode": INVALID_REQUEST}))
        for bad in ([(0, [7])], [(0, [1, 1])], [(1, [1])], [(0, [1]), (0, [1])], [(0, [])]):
            steps.append(call("c", "CreateTopics", v, create(v, [(N("asg"), -1, -1, {}, bad)]),
                              expect={"Topics[0].ErrorCode": INVALID_REPLICA_ASSIGNMENT}))
        good = N("asg-ok")
        steps.append(call("c", "CreateTopics", v, create(v, [(good, -1, -1, {}, [(0, [1]), (1, [1])])]),
                          expect={"Topics[0].ErrorCode": NONE}))
        steps += wait_topic("c", good, 2)
        dup = N("dup")
        steps.append(call("c", "CreateTopics", v, create(v, [(dup, 1, 1), (dup, 2, 1)]),
                          expect={"Topics": lambda t: len(t) == 1}))
        steps.append(call("c", "Metadata", 4, md([dup], 4)))
        out.append(Scenario("create_topics v%d: invalid requests" % v, steps))

        steps = [call("c", "CreateTopics", v, create(v, [(N("cfg"), 1, 1,
                                                          {"cleanup.policy": "bogus"})]),
                      expect={"Topics[0].ErrorCode": INVALID_CONFIG}),
                 call("c", "CreateTopics", v, create(v, [(N("cfgk"), 1, 1,
                                                          {"no.such.config": "1"})]),
                      expect={"Topics[0].ErrorCode": INVALID_CONFIG}),
                 call("c", "CreateTopics", v, create(v, [(N("cfgn"), 1, 1,
                                                          {"retention.ms": "soon"})]),
                      expect={"Topics[0].ErrorCode": INVALID_CONFIG})]
        out.append(Scenario("create_topics v%d: invalid configs" % v, steps, accept=[
            (r"^CreateTopics:Topics\[Name=[^\]]*\]\.ErrorMessage$",
             "README: config validation messages are cohortd's own words")]))

    if True:
        v = 7
        a, b = N("dot.x"), None
        b = a.replace(".", "_")
        steps = create_topic("c", a) + [
            call("c", "CreateTopics", v, create(v, [(b, 1, 1)]),
                 expect={"Topics[0].ErrorCode": INVALID_TOPIC_EXCEPTION}),
        ]
        out.append(Scenario("create_topics: names colliding on . and _", steps))

    for v in (1, 4, 5, 7):
        t = N("vo")
        steps = [call("c", "CreateTopics", v, create(v, [(t, 2, 1)], validate_only=True),
                      expect={"Topics[0].ErrorCode": NONE}),
                 call("c", "Metadata", 4, md([t], 4), expect={"Topics[0].ErrorCode":
                                                              UNKNOWN_TOPIC_OR_PARTITION}),
                 call("c", "CreateTopics", v, create(v, [(t, 0, 1)], validate_only=True),
                      expect={"Topics[0].ErrorCode": INVALID_PARTITIONS})]
        if v >= 4:   # defaults from the broker (-1)
            steps.append(call("c", "CreateTopics", v, create(v, [(N("dflt"), -1, -1)],
                                                             validate_only=True),
                              expect={"Topics[0].ErrorCode": NONE}))
        out.append(Scenario("create_topics v%d: validate_only" % v, steps))

    t = N("cfgok")
    steps = [call("c", "CreateTopics", 7, create(7, [(t, 1, 1, {"cleanup.policy": "compact",
                                                                 "retention.ms": "1000"})]),
                  expect={"Topics[0].ErrorCode": NONE})]
    out.append(Scenario("create_topics v7: with configs, the configs answered", steps))

    # --------------------------------------------------------- DeleteTopics
    for v in range(0, 7):
        t = N("dt")
        steps = create_topic("c", t) + [
            call("c", "DeleteTopics", v, delete(v, [t]), expect={"Responses[0].ErrorCode": NONE}),
            wait_topic_gone("c", t),
            call("c", "DeleteTopics", v, delete(v, [t]),
                 expect={"Responses[0].ErrorCode": UNKNOWN_TOPIC_OR_PARTITION}),
            call("c", "DeleteTopics", v, delete(v, [N("never"), "bad name!"])),
        ]
        if v >= 6:
            steps.append(call("c", "DeleteTopics", v,
                              delete(v, [], ids=["8f1f5d8e-8d6e-4c6a-9d1c-3a5b1e2f4a6b"]),
                              expect={"Responses[0].ErrorCode": UNKNOWN_TOPIC_ID}))
            t2 = N("dtid")
            steps += create_topic("c", t2)
            steps.append(call("c", "Metadata", 12, md([t2], 12), save={"tid": "Topics[0].TopicId"}))
            from conform import V
            steps.append(call("c", "DeleteTopics", v, {"Topics": [{"Name": None, "TopicId": V("tid")}],
                                                       "TimeoutMs": 30000},
                              expect={"Responses[0].ErrorCode": NONE}))
        out.append(Scenario("delete_topics v%d" % v, steps))

    # (Deleting __consumer_offsets is allowed on both, and would take every
    # group of the run with it: not scripted.)
    t = N("dtdup")
    steps = create_topic("c", t) + [
        call("c", "DeleteTopics", 4, delete(4, [t, t])),
        call("c", "DeleteTopics", 6, {"Topics": [{"Name": t}, {"Name": t},
                                                 {"Name": t, "TopicId": "8f1f5d8e-8d6e-4c6a-9d1c-3a5b1e2f4a6b"},
                                                 {"Name": None, "TopicId": "8f1f5d8e-8d6e-4c6a-9d1c-3a5b1e2f4a6b"},
                                                 {"Name": None, "TopicId": "8f1f5d8e-8d6e-4c6a-9d1c-3a5b1e2f4a6b"},
                                                 {"Name": None}],
                                      "TimeoutMs": 30000}),
        call("c", "Metadata", 4, md([t], 4)),
    ]
    out.append(Scenario("delete_topics: duplicates, name and id, neither", steps))

    # ----------------------------------------------------- CreatePartitions
    for v in range(0, 4):
        t = N("cp")
        steps = create_topic("c", t, 1) + [
            call("c", "CreatePartitions", v, partitions(v, {t: 3}, validate_only=True),
                 expect={"Results[0].ErrorCode": NONE}),
            call("c", "Metadata", 1, md([t], 1)),
            call("c", "CreatePartitions", v, partitions(v, {t: 3}),
                 expect={"Results[0].ErrorCode": NONE}),
            *wait_topic("c", t, 3),
            call("c", "CreatePartitions", v, partitions(v, {t: 3}),
                 expect={"Results[0].ErrorCode": INVALID_PARTITIONS}),
            call("c", "CreatePartitions", v, partitions(v, {t: 2}),
                 expect={"Results[0].ErrorCode": INVALID_PARTITIONS}),
            call("c", "CreatePartitions", v, partitions(v, {N("nope"): 2}),
                 expect={"Results[0].ErrorCode": UNKNOWN_TOPIC_OR_PARTITION}),
            call("c", "CreatePartitions", v, partitions(v, {t: 5}, assignments={t: [{"BrokerIds": [1]}]}),
                 expect={"Results[0].ErrorCode": INVALID_REPLICA_ASSIGNMENT}),
            call("c", "CreatePartitions", v, partitions(v, {t: 4}, assignments={t: [{"BrokerIds": [9]}]}),
                 expect={"Results[0].ErrorCode": INVALID_REPLICA_ASSIGNMENT}),
        ]
        out.append(Scenario("create_partitions v%d" % v, steps))
    t = N("cpdup")
    steps = create_topic("c", t) + [
        call("c", "CreatePartitions", 3, {"Topics": [{"Name": t, "Count": 2, "Assignments": None},
                                                     {"Name": t, "Count": 3, "Assignments": None}],
                                          "TimeoutMs": 30000, "ValidateOnly": False}),
        call("c", "CreatePartitions", 3, partitions(3, {"__consumer_offsets": 5})),
    ]
    out.append(Scenario("create_partitions: duplicates, internal topic", steps))
    _ = closed
    return out
