"""Hand-written Kafka wire protocol helpers for the integration tests.

Deliberately independent of cohort's own codec (src/proto): every request is
written with struct.pack from the Kafka protocol documentation, every response
is read field by field. Only what the tests need is here.

Framing: int32 size, then the request header and body.
  request header v0: int16 api_key, int16 api_version, int32 correlation_id
  request header v1: v0 + int16-length client_id (nullable)
  request header v2: v1 + tagged fields (one 0x00 byte when empty)
  response header v0: int32 correlation_id; v1 adds tagged fields.
ApiVersions responses always use response header v0.
"""
import socket
import struct
import time
import uuid

# Kafka error codes used by the tests.
NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
INVALID_TOPIC_EXCEPTION = 17
UNSUPPORTED_VERSION = 35
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REQUEST = 42
UNKNOWN_TOPIC_ID = 100

API_METADATA = 3
API_API_VERSIONS = 18
API_CREATE_TOPICS = 19
API_DELETE_TOPICS = 20
API_DESCRIBE_CONFIGS = 32
API_CREATE_PARTITIONS = 37
API_DESCRIBE_CLUSTER = 60
API_OFFSET_COMMIT = 8
API_OFFSET_FETCH = 9
API_FIND_COORDINATOR = 10
API_LIST_GROUPS = 16
API_INIT_PRODUCER_ID = 22
API_DELETE_RECORDS = 21
API_ALTER_CONFIGS = 33
API_INCREMENTAL_ALTER_CONFIGS = 44
API_DELETE_GROUPS = 42
API_CONSUMER_GROUP_HEARTBEAT = 68
API_CONSUMER_GROUP_DESCRIBE = 69

ZERO_UUID = b"\x00" * 16

# First version of each API whose request uses header v2 / response header v1.
FLEXIBLE_FROM = {
    API_METADATA: 9,
    API_API_VERSIONS: 3,
    API_CREATE_TOPICS: 5,
    API_DELETE_TOPICS: 4,
    API_DESCRIBE_CONFIGS: 4,
    API_CREATE_PARTITIONS: 2,
    API_DESCRIBE_CLUSTER: 0,
    API_OFFSET_COMMIT: 8,
    API_OFFSET_FETCH: 6,
    API_FIND_COORDINATOR: 3,
    API_LIST_GROUPS: 3,
    API_INIT_PRODUCER_ID: 2,
    API_DELETE_RECORDS: 2,
    API_ALTER_CONFIGS: 2,
    API_INCREMENTAL_ALTER_CONFIGS: 1,
    API_DELETE_GROUPS: 2,
    API_CONSUMER_GROUP_HEARTBEAT: 0,
    API_CONSUMER_GROUP_DESCRIBE: 0,
}


def is_flexible(api_key, version):
    first = FLEXIBLE_FROM.get(api_key)
    return first is not None and version >= first


class ProtocolError(Exception):
    pass


class Writer:
    def __init__(self, flexible=False):
        self.parts = []
        self.flexible = flexible

    def raw(self, b):
        self.parts.append(bytes(b))
        return self

    def int8(self, v):
        return self.raw(struct.pack(">b", v))

    def bool(self, v):
        return self.int8(1 if v else 0)

    def int16(self, v):
        return self.raw(struct.pack(">h", v))

    def int32(self, v):
        return self.raw(struct.pack(">i", v))

    def int64(self, v):
        return self.raw(struct.pack(">q", v))

    def uvarint(self, v):
        out = bytearray()
        while True:
            b = v & 0x7F
            v >>= 7
            if v:
                out.append(b | 0x80)
            else:
                out.append(b)
                break
        return self.raw(out)

    def uuid(self, b):
        assert len(b) == 16
        return self.raw(b)

    def string(self, s):
        """string or nullable string, compact when the writer is flexible."""
        if s is None:
            return self.uvarint(0) if self.flexible else self.int16(-1)
        b = s.encode() if isinstance(s, str) else bytes(s)
        if self.flexible:
            self.uvarint(len(b) + 1)
        else:
            self.int16(len(b))
        return self.raw(b)

    def array_len(self, n):
        """array length (n None = null array)."""
        if n is None:
            return self.uvarint(0) if self.flexible else self.int32(-1)
        return self.uvarint(n + 1) if self.flexible else self.int32(n)

    def tags(self):
        """Empty tagged-field section (flexible versions only)."""
        if self.flexible:
            self.uvarint(0)
        return self

    def bytes(self):
        return b"".join(self.parts)


class Reader:
    def __init__(self, data, flexible=False):
        self.data = bytes(data)
        self.pos = 0
        self.flexible = flexible

    def _take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise ProtocolError("response truncated: need %d bytes at offset %d of %d"
                                % (n, self.pos, len(self.data)))
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def remaining(self):
        return len(self.data) - self.pos

    def int8(self):
        return struct.unpack(">b", self._take(1))[0]

    def bool(self):
        v = self._take(1)[0]
        if v not in (0, 1):
            raise ProtocolError("bad bool byte %d at offset %d" % (v, self.pos - 1))
        return v == 1

    def int16(self):
        return struct.unpack(">h", self._take(2))[0]

    def int32(self):
        return struct.unpack(">i", self._take(4))[0]

    def int64(self):
        return struct.unpack(">q", self._take(8))[0]

    def uvarint(self):
        shift = 0
        v = 0
        while True:
            b = self._take(1)[0]
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v
            shift += 7
            if shift > 35:
                raise ProtocolError("uvarint too long")

    def uuid(self):
        return self._take(16)

    def string(self, nullable=False):
        if self.flexible:
            n = self.uvarint() - 1
        else:
            n = self.int16()
        if n < 0:
            if not nullable:
                raise ProtocolError("null in a non-nullable string at offset %d" % self.pos)
            return None
        return self._take(n).decode("utf-8")

    def array_len(self, nullable=False):
        n = (self.uvarint() - 1) if self.flexible else self.int32()
        if n < 0:
            if not nullable:
                raise ProtocolError("null in a non-nullable array at offset %d" % self.pos)
            return None
        if n > self.remaining():
            raise ProtocolError("array length %d exceeds the %d bytes left" % (n, self.remaining()))
        return n

    def tags(self):
        """Skip a tagged-field section; returns {tag: bytes}."""
        out = {}
        if not self.flexible:
            return out
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            size = self.uvarint()
            out[tag] = self._take(size)
        return out

    def done(self):
        if self.remaining():
            raise ProtocolError("%d unexpected trailing bytes in response" % self.remaining())


def frame(payload):
    return struct.pack(">i", len(payload)) + payload


def request(api_key, version, corr, body=b"", client_id="cohort-it", header_version=None):
    """A complete framed request. header_version defaults from the API's flexible versions."""
    if header_version is None:
        header_version = 2 if is_flexible(api_key, version) else 1
    w = Writer(False)
    w.int16(api_key).int16(version).int32(corr)
    if header_version >= 1:
        w.string(client_id)  # int16-length even in header v2
    if header_version >= 2:
        w.uvarint(0)
    return frame(w.bytes() + body)


class Conn:
    """A blocking client connection with a per-operation timeout."""

    def __init__(self, port, host="127.0.0.1", timeout=15.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.corr = 0

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def next_corr(self):
        self.corr += 1
        return self.corr

    def send(self, data):
        self.sock.sendall(data)

    def _recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed by server after %d of %d bytes"
                                      % (len(buf), n))
            buf += chunk
        return bytes(buf)

    def recv_frame(self):
        (size,) = struct.unpack(">i", self._recv_exact(4))
        if size < 4 or size > 64 * 1024 * 1024:
            raise ProtocolError("bad response frame size %d" % size)
        return self._recv_exact(size)

    def recv_response(self, corr, flexible_header=False, flexible_body=None):
        """Read one response; check its correlation id; return a Reader on its body."""
        data = self.recv_frame()
        r = Reader(data, flexible=False)
        got = r.int32()
        if got != corr:
            raise ProtocolError("correlation id %d, expected %d" % (got, corr))
        if flexible_header:
            r.flexible = True
            r.tags()
        r.flexible = flexible_header if flexible_body is None else flexible_body
        return r

    def call(self, api_key, version, body, client_id="cohort-it"):
        corr = self.next_corr()
        self.send(request(api_key, version, corr, body, client_id))
        flex = is_flexible(api_key, version)
        # ApiVersions responses always use response header v0.
        hdr_flex = flex and api_key != API_API_VERSIONS
        return self.recv_response(corr, flexible_header=hdr_flex, flexible_body=flex)

    def wait_closed(self, timeout=10.0):
        """True if the server closes this connection within timeout (data it sends
        first is drained and ignored); False if it is still open then."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return False
            except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError):
                return True
            if not chunk:
                return True


# ---------------------------------------------------------------- ApiVersions

def api_versions_body(version):
    w = Writer(version >= 3)
    if version >= 3:
        w.string("cohort-it").string("1.0").tags()
    return w.bytes()


def parse_api_versions(r, version):
    """r: Reader after the (v0) response header; body flexible for v3+."""
    out = {"error_code": r.int16(), "api_keys": {}}
    for _ in range(r.array_len()):
        key, lo, hi = r.int16(), r.int16(), r.int16()
        r.tags()
        out["api_keys"][key] = (lo, hi)
    if version >= 1:
        out["throttle_time_ms"] = r.int32()
    r.tags()
    r.done()
    return out


def api_versions(conn, version=0):
    r = conn.call(API_API_VERSIONS, version, api_versions_body(version))
    return parse_api_versions(r, version)


# ------------------------------------------------------------------- Metadata

def metadata_body(version, topics=None, allow_auto=True):
    """topics None = all topics (v0: empty array means all)."""
    w = Writer(version >= 9)
    if topics is None and version == 0:
        topics = []
    w.array_len(None if topics is None else len(topics))
    for t in topics or []:
        if version >= 10:
            if isinstance(t, bytes):  # by topic id
                w.uuid(t).string(None)
            else:
                w.uuid(ZERO_UUID).string(t)
        else:
            w.string(t)
        w.tags()
    if version >= 4:
        w.bool(allow_auto)
    if 8 <= version <= 10:
        w.bool(False)
    if version >= 8:
        w.bool(False)
    w.tags()
    return w.bytes()


def parse_metadata(r, v):
    out = {"brokers": [], "topics": {}, "cluster_id": None, "controller_id": None}
    if v >= 3:
        out["throttle_time_ms"] = r.int32()
    for _ in range(r.array_len()):
        b = {"node_id": r.int32(), "host": r.string(), "port": r.int32()}
        if v >= 1:
            b["rack"] = r.string(nullable=True)
        r.tags()
        out["brokers"].append(b)
    if v >= 2:
        out["cluster_id"] = r.string(nullable=True)
    if v >= 1:
        out["controller_id"] = r.int32()
    out["topic_list"] = []
    for _ in range(r.array_len()):
        t = {"error_code": r.int16(), "name": r.string(nullable=(v >= 12))}
        if v >= 10:
            t["topic_id"] = r.uuid()
        if v >= 1:
            t["is_internal"] = r.bool()
        t["partitions"] = []
        for _ in range(r.array_len()):
            p = {"error_code": r.int16(), "partition": r.int32(), "leader": r.int32()}
            if v >= 7:
                p["leader_epoch"] = r.int32()
            p["replicas"] = [r.int32() for _ in range(r.array_len())]
            p["isr"] = [r.int32() for _ in range(r.array_len())]
            if v >= 5:
                p["offline"] = [r.int32() for _ in range(r.array_len())]
            r.tags()
            t["partitions"].append(p)
        if v >= 8:
            t["authorized_operations"] = r.int32()
        r.tags()
        out["topic_list"].append(t)
        out["topics"][t["name"]] = t
    if 8 <= v <= 10:
        out["cluster_authorized_operations"] = r.int32()
    r.tags()
    r.done()
    return out


def metadata(conn, version=1, topics=None, allow_auto=True):
    r = conn.call(API_METADATA, version, metadata_body(version, topics, allow_auto))
    return parse_metadata(r, version)


# --------------------------------------------------------------- CreateTopics

def create_topics_body(version, topics, timeout_ms=30000, validate_only=False):
    """topics: list of (name, num_partitions, replication_factor[, {config: value}])."""
    w = Writer(version >= 5)
    w.array_len(len(topics))
    for t in topics:
        name, parts, rf = t[0], t[1], t[2]
        configs = t[3] if len(t) > 3 else {}
        w.string(name).int32(parts).int16(rf)
        w.array_len(0)  # no manual assignments
        w.array_len(len(configs))
        for k, val in configs.items():
            w.string(k).string(val).tags()
        w.tags()
    w.int32(timeout_ms)
    if version >= 1:
        w.bool(validate_only)
    w.tags()
    return w.bytes()


def parse_create_topics(r, v):
    out = {}
    if v >= 2:
        out["throttle_time_ms"] = r.int32()
    out["topics"] = {}
    for _ in range(r.array_len()):
        t = {"name": r.string()}
        if v >= 7:
            t["topic_id"] = r.uuid()
        t["error_code"] = r.int16()
        if v >= 1:
            t["error_message"] = r.string(nullable=True)
        if v >= 5:
            t["num_partitions"] = r.int32()
            t["replication_factor"] = r.int16()
            n = r.array_len(nullable=True)
            t["configs"] = {}
            for _ in range(n or 0):
                name = r.string()
                value = r.string(nullable=True)
                r.bool()  # read_only
                r.int8()  # config_source
                r.bool()  # is_sensitive
                r.tags()
                t["configs"][name] = value
        r.tags()
        out["topics"][t["name"]] = t
    r.tags()
    r.done()
    return out


def create_topics(conn, topics, version=4, validate_only=False):
    r = conn.call(API_CREATE_TOPICS, version,
                  create_topics_body(version, topics, validate_only=validate_only))
    return parse_create_topics(r, version)


# --------------------------------------------------------------- DeleteTopics

def delete_topics_body(version, topics, timeout_ms=30000):
    """topics: names (str), or topic ids (16 bytes) for v6."""
    w = Writer(version >= 4)
    w.array_len(len(topics))
    for t in topics:
        if version >= 6:
            if isinstance(t, bytes):
                w.string(None).uuid(t)
            else:
                w.string(t).uuid(ZERO_UUID)
            w.tags()
        else:
            w.string(t)
    w.int32(timeout_ms)
    w.tags()
    return w.bytes()


def parse_delete_topics(r, v):
    out = {"results": []}
    if v >= 1:
        out["throttle_time_ms"] = r.int32()
    for _ in range(r.array_len()):
        t = {"name": r.string(nullable=(v >= 6))}
        if v >= 6:
            t["topic_id"] = r.uuid()
        t["error_code"] = r.int16()
        if v >= 5:
            t["error_message"] = r.string(nullable=True)
        r.tags()
        out["results"].append(t)
    r.tags()
    r.done()
    return out


def delete_topics(conn, topics, version=3):
    r = conn.call(API_DELETE_TOPICS, version, delete_topics_body(version, topics))
    return parse_delete_topics(r, version)


# ------------------------------------------------------------ DescribeCluster

def describe_cluster(conn, version=0):
    w = Writer(True)
    w.bool(False)
    if version >= 1:
        w.int8(1)  # endpoint type: brokers
    w.tags()
    r = conn.call(API_DESCRIBE_CLUSTER, version, w.bytes())
    out = {"throttle_time_ms": r.int32(), "error_code": r.int16(),
           "error_message": r.string(nullable=True)}
    if version >= 1:
        out["endpoint_type"] = r.int8()
    out["cluster_id"] = r.string()
    out["controller_id"] = r.int32()
    out["brokers"] = []
    for _ in range(r.array_len()):
        b = {"broker_id": r.int32(), "host": r.string(), "port": r.int32(),
             "rack": r.string(nullable=True)}
        r.tags()
        out["brokers"].append(b)
    out["cluster_authorized_operations"] = r.int32()
    r.tags()
    r.done()
    return out


def uuid_str(b):
    return str(uuid.UUID(bytes=b))


# ----------------------------------------------------------- CreatePartitions

def create_partitions(conn, counts, version=1, validate_only=False, timeout_ms=30000):
    """counts: {topic: new total partition count}. Returns {topic: (error_code, message)}."""
    w = Writer(version >= 2)
    w.array_len(len(counts))
    for name, count in counts.items():
        w.string(name).int32(count).array_len(None).tags()
    w.int32(timeout_ms).bool(validate_only).tags()
    r = conn.call(API_CREATE_PARTITIONS, version, w.bytes())
    r.int32()  # throttle
    out = {}
    for _ in range(r.array_len()):
        name, code, msg = r.string(), r.int16(), r.string(nullable=True)
        r.tags()
        out[name] = (code, msg)
    r.tags()
    r.done()
    return out


# ------------------------------------------------------------ DescribeConfigs

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
CONFIG_SOURCE_TOPIC = 1  # DYNAMIC_TOPIC_CONFIG
CONFIG_SOURCE_DEFAULT = 5  # DEFAULT_CONFIG


def describe_configs(conn, resources, version=2, include_synonyms=False):
    """resources: list of (resource_type, name, keys or None).
    Returns a list of result dicts with "configs": {name: entry dict}."""
    w = Writer(version >= 4)
    w.array_len(len(resources))
    for rtype, name, keys in resources:
        w.int8(rtype).string(name)
        w.array_len(None if keys is None else len(keys))
        for k in keys or []:
            w.string(k)
        w.tags()
    if version >= 1:
        w.bool(include_synonyms)
    if version >= 3:
        w.bool(False)  # include_documentation
    w.tags()
    r = conn.call(API_DESCRIBE_CONFIGS, version, w.bytes())
    r.int32()  # throttle
    out = []
    for _ in range(r.array_len()):
        res = {"error_code": r.int16(), "error_message": r.string(nullable=True),
               "resource_type": r.int8(), "resource_name": r.string(), "configs": {}}
        for _ in range(r.array_len()):
            e = {"name": r.string(), "value": r.string(nullable=True), "read_only": r.bool()}
            if version == 0:
                e["is_default"] = r.bool()
            else:
                e["source"] = r.int8()
            e["is_sensitive"] = r.bool()
            if version >= 1:
                e["synonyms"] = []
                for _ in range(r.array_len()):
                    e["synonyms"].append((r.string(), r.string(nullable=True), r.int8()))
                    r.tags()
            if version >= 3:
                e["config_type"] = r.int8()
                e["documentation"] = r.string(nullable=True)
            r.tags()
            res["configs"][e["name"]] = e
        r.tags()
        out.append(res)
    r.tags()
    r.done()
    return out


# ------------------------------------------------------------ FindCoordinator

KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1


def find_coordinator_body(version, keys, key_type=KEY_TYPE_GROUP):
    """keys: one key (v0-v3 take exactly one), or a list for v4+ batches."""
    w = Writer(version >= 3)
    if isinstance(keys, str):
        keys = [keys]
    if version <= 3:
        assert len(keys) == 1
        w.string(keys[0])
        if version >= 1:
            w.int8(key_type)
        else:
            assert key_type == KEY_TYPE_GROUP, "v0 has no key type"
    else:
        w.int8(key_type).array_len(len(keys))
        for k in keys:
            w.string(k)
    w.tags()
    return w.bytes()


def parse_find_coordinator(r, v):
    """Returns a list of {key, error_code, error_message, node_id, host, port}
    (one entry, key None, for v0-v3)."""
    throttle = r.int32() if v >= 1 else None
    out = []
    if v <= 3:
        c = {"key": None, "error_code": r.int16()}
        c["error_message"] = r.string(nullable=True) if v >= 1 else None
        c["node_id"], c["host"], c["port"] = r.int32(), r.string(), r.int32()
        out.append(c)
    else:
        for _ in range(r.array_len()):
            c = {"key": r.string(), "node_id": r.int32(), "host": r.string(),
                 "port": r.int32(), "error_code": r.int16(),
                 "error_message": r.string(nullable=True)}
            r.tags()
            out.append(c)
    r.tags()
    r.done()
    for c in out:
        c["throttle_time_ms"] = throttle
    return out


def find_coordinator(conn, version, keys, key_type=KEY_TYPE_GROUP):
    r = conn.call(API_FIND_COORDINATOR, version, find_coordinator_body(version, keys, key_type))
    return parse_find_coordinator(r, version)


# ------------------------------------------------------------- InitProducerId

def init_producer_id_body(version, transactional_id=None, timeout_ms=60000,
                          producer_id=-1, producer_epoch=-1):
    w = Writer(version >= 2)
    w.string(transactional_id).int32(timeout_ms)
    if version >= 3:
        w.int64(producer_id).int16(producer_epoch)
    w.tags()
    return w.bytes()


def parse_init_producer_id(r, v):
    out = {"throttle_time_ms": r.int32(), "error_code": r.int16(),
           "producer_id": r.int64(), "producer_epoch": r.int16()}
    r.tags()
    r.done()
    return out


def init_producer_id(conn, version, transactional_id=None, producer_id=-1, producer_epoch=-1):
    r = conn.call(API_INIT_PRODUCER_ID, version,
                  init_producer_id_body(version, transactional_id, 60000, producer_id,
                                        producer_epoch))
    return parse_init_producer_id(r, version)


# ----------------------------------------------------------------- ListGroups

def list_groups_body(version):
    w = Writer(version >= 3)
    if version >= 4:
        w.array_len(0)  # StatesFilter: all
    if version >= 5:
        w.array_len(0)  # TypesFilter: all
    w.tags()
    return w.bytes()


def parse_list_groups(r, v):
    out = {"throttle_time_ms": r.int32() if v >= 1 else None, "error_code": r.int16(),
           "groups": {}}
    for _ in range(r.array_len()):
        g = {"group_id": r.string(), "protocol_type": r.string()}
        if v >= 4:
            g["state"] = r.string()
        if v >= 5:
            g["type"] = r.string()
        r.tags()
        out["groups"][g["group_id"]] = g
    r.tags()
    r.done()
    return out


# ------------------------------------------------- OffsetCommit / OffsetFetch

def offset_commit(conn, version, group, offsets, generation=-1, member=""):
    """offsets: [(topic, partition, offset, metadata)], metadata str, bytes or
    None. A simple (generation -1) commit by default. Returns {(t, p): error}."""
    w = Writer(version >= 8)
    w.string(group)
    if version >= 1:
        w.int32(generation).string(member)
    if version >= 7:
        w.string(None)  # GroupInstanceId
    if 2 <= version <= 4:
        w.int64(-1)  # RetentionTimeMs: the broker's
    topics = {}
    for t, p, o, m in offsets:
        topics.setdefault(t, []).append((p, o, m))
    w.array_len(len(topics))
    for t, parts in topics.items():
        w.string(t).array_len(len(parts))
        for p, o, m in parts:
            w.int32(p).int64(o)
            if version >= 6:
                w.int32(-1)  # CommittedLeaderEpoch
            if version == 1:
                w.int64(-1)  # CommitTimestamp
            w.string(m).tags()
        w.tags()
    w.tags()
    r = conn.call(API_OFFSET_COMMIT, version, w.bytes())
    if version >= 3:
        r.int32()  # throttle
    out = {}
    for _ in range(r.array_len()):
        t = r.string()
        for _ in range(r.array_len()):
            p, err = r.int32(), r.int16()
            r.tags()
            out[(t, p)] = err
        r.tags()
    r.tags()
    r.done()
    return out


def offset_fetch(conn, version, group, topics):
    """topics: {topic: [partitions]}. Returns {(t, p): (offset, metadata bytes
    or None, error)}; v2+ top-level errors raise ProtocolError."""
    w = Writer(version >= 6)
    if version >= 8:
        w.array_len(1).string(group)
        if version >= 9:
            w.string(None).int32(-1)  # MemberId, MemberEpoch
    else:
        w.string(group)
    w.array_len(len(topics))
    for t, parts in topics.items():
        w.string(t).array_len(len(parts))
        for p in parts:
            w.int32(p)
        w.tags()
    if version >= 8:
        w.tags()  # group
    if version >= 7:
        w.bool(False)  # RequireStable
    w.tags()
    r = conn.call(API_OFFSET_FETCH, version, w.bytes())
    if version >= 3:
        r.int32()  # throttle
    ngroups = r.array_len() if version >= 8 else 1
    out = {}
    for _ in range(ngroups):
        if version >= 8:
            r.string()  # group id
        for _ in range(r.array_len()):
            t = r.string()
            for _ in range(r.array_len()):
                p, o = r.int32(), r.int64()
                if version >= 5:
                    r.int32()  # leader epoch
                m = r.string(nullable=True)
                err = r.int16()
                r.tags()
                out[(t, p)] = (o, None if m is None else m.encode(), err)
            r.tags()
        if version >= 2:
            top = r.int16()
            if top:
                raise ProtocolError("OffsetFetch error %d" % top)
        if version >= 8:
            r.tags()
    r.tags()
    r.done()
    return out


# ------------------------------------------------- DeleteGroups, ConsumerGroupDescribe

def delete_groups(conn, groups, version=2):
    """{group: error code}."""
    w = Writer(is_flexible(API_DELETE_GROUPS, version))
    w.array_len(len(groups))
    for g in groups:
        w.string(g)
    w.tags()
    r = conn.call(API_DELETE_GROUPS, version, w.bytes())
    r.int32()  # throttle
    out = {}
    for _ in range(r.array_len()):
        g = r.string()
        out[g] = r.int16()
        r.tags()
    r.tags()
    r.done()
    return out


def _cg_assignment(r):
    tps = []
    for _ in range(r.array_len()):
        tid = r.uuid()
        r.string()  # topic name
        tps += [(tid, p) for p in [r.int32() for _ in range(r.array_len())]]
        r.tags()
    r.tags()
    return sorted(tps)


def consumer_group_join(conn, group, member_id, topics=None, regex=None, version=1):
    """A ConsumerGroupHeartbeat join (epoch 0, no owned partitions):
    {"error", "message", "member_id", "epoch"}."""
    w = Writer(True)
    w.string(group).string(member_id).int32(0)
    w.string(None).string(None).int32(30000)  # instance, rack, rebalance timeout
    w.array_len(None if topics is None else len(topics))
    for t in topics or []:
        w.string(t)
    if version >= 1:
        w.string(regex)
    w.string(None)  # server assignor
    w.array_len(0)  # owned partitions
    w.tags()
    r = conn.call(API_CONSUMER_GROUP_HEARTBEAT, version, w.bytes())
    r.int32()  # throttle
    out = {"error": r.int16(), "message": r.string(nullable=True),
           "member_id": r.string(nullable=True), "epoch": r.int32()}
    return out


def consumer_group_describe(conn, groups, version=0):
    """{group: {"error", "state", "epoch", "assignment_epoch",
    "members": {member id: {"epoch", "instance", "assignment"}}}}."""
    w = Writer(True)
    w.array_len(len(groups))
    for g in groups:
        w.string(g)
    w.bool(False)
    w.tags()
    r = conn.call(API_CONSUMER_GROUP_DESCRIBE, version, w.bytes())
    r.int32()  # throttle
    out = {}
    for _ in range(r.array_len()):
        d = {"error": r.int16()}
        r.string(nullable=True)
        gid = r.string()
        d["state"], d["epoch"], d["assignment_epoch"] = r.string(), r.int32(), r.int32()
        r.string()  # assignor
        d["members"] = {}
        for _ in range(r.array_len()):
            mid = r.string()
            m = {"instance": r.string(nullable=True)}
            r.string(nullable=True)  # rack
            m["epoch"] = r.int32()
            r.string()  # client id
            r.string()  # client host
            for _ in range(r.array_len()):
                r.string()
            m["regex"] = r.string(nullable=True)
            m["assignment"] = _cg_assignment(r)
            _cg_assignment(r)  # target
            if version >= 1:
                r.int8()  # member type
            r.tags()
            d["members"][mid] = m
        r.int32()  # authorized operations
        r.tags()
        out[gid] = d
    r.tags()
    r.done()
    return out
