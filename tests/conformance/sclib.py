"""Building blocks shared by the scenario modules (sc_*.py)."""
import struct

from conform import call, poll

# Kafka error codes the scenarios name (errors.tsv has them all).
UNKNOWN_SERVER_ERROR = -1
NONE = 0
CORRUPT_MESSAGE = 2
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
MESSAGE_TOO_LARGE = 10
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
INVALID_TOPIC_EXCEPTION = 17
RECORD_LIST_TOO_LARGE = 18
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
INVALID_COMMIT_OFFSET_SIZE = 28
INVALID_TIMESTAMP = 32
UNSUPPORTED_VERSION = 35
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_CONFIG = 40
INVALID_REQUEST = 42
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
GROUP_SUBSCRIBED_TO_TOPIC = 86
MEMBER_ID_REQUIRED = 79
FENCED_INSTANCE_ID = 82
GROUP_MAX_SIZE_REACHED = 81
UNSTABLE_OFFSET_COMMIT = 88
INVALID_RECORD = 87
UNKNOWN_TOPIC_ID = 100


def topic_ready(name, partitions):
    """Metadata shows the topic with that many partitions, each with a leader."""
    def ok(r):
        ts = [t for t in r["Topics"] if t["Name"] == name]
        return (len(ts) == 1 and ts[0]["ErrorCode"] == 0
                and len(ts[0]["Partitions"]) == partitions
                and all(p["ErrorCode"] == 0 and p["LeaderId"] >= 0 for p in ts[0]["Partitions"]))
    return ok


def wait_topic(conn, name, partitions=1):
    """Steps that wait until the topic is served: Metadata names a leader for
    every partition, and the partitions themselves answer (Kafka's broker
    creates its replicas a moment after its metadata cache shows them)."""
    def answered(r):
        return all(p["ErrorCode"] == NONE for t in r["Topics"] for p in t["Partitions"])
    return [poll(conn, "Metadata", 12, {"Topics": [{"Name": name}],
                                        "AllowAutoTopicCreation": False},
                 until=topic_ready(name, partitions)),
            poll(conn, "ListOffsets", 7, {"ReplicaId": -1, "IsolationLevel": 0, "Topics": [
                {"Name": name, "Partitions": [{"PartitionIndex": p, "CurrentLeaderEpoch": -1,
                                               "Timestamp": -1} for p in range(partitions)]}]},
                 until=answered)]


def wait_topic_gone(conn, name):
    def gone(r):
        return r["Topics"][0]["ErrorCode"] == UNKNOWN_TOPIC_OR_PARTITION
    return poll(conn, "Metadata", 12, {"Topics": [{"Name": name}],
                                       "AllowAutoTopicCreation": False}, until=gone)


def create_topic(conn, name, partitions=1, configs=None, wait=True):
    """CreateTopics v7 (compared) and, with wait, Metadata until it is served."""
    steps = [call(conn, "CreateTopics", 7, {
        "Topics": [{"Name": name, "NumPartitions": partitions, "ReplicationFactor": 1,
                    "Configs": [{"Name": k, "Value": v} for k, v in (configs or {}).items()]}],
        "timeoutMs": 30000}, expect={"Topics[0].ErrorCode": NONE}, compare=False)]
    if wait:
        steps += wait_topic(conn, name, partitions)
    return steps


def api_versions_frame(version, client_name="conformance", client_version="1"):
    """An ApiVersions request of any version number (even one no spec has), the
    body in v3's layout: what a newer client sends to an older broker."""
    def build(corr):
        hdr = struct.pack(">hhih", 18, version, corr, len(b"raw")) + b"raw"
        if version >= 3:
            hdr += b"\x00"
            n, v = client_name.encode(), client_version.encode()
            body = bytes([len(n) + 1]) + n + bytes([len(v) + 1]) + v + b"\x00"
        else:
            body = b""
        msg = hdr + body
        return struct.pack(">i", len(msg)) + msg
    return build


def raw_frame(api_key, version, body, flexible_header):
    """A request frame with a hand-made body (api/version need not be served)."""
    def build(corr):
        hdr = struct.pack(">hhih", api_key, version, corr, len(b"raw")) + b"raw"
        if flexible_header:
            hdr += b"\x00"
        msg = hdr + body
        return struct.pack(">i", len(msg)) + msg
    return build
