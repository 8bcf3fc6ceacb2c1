"""The message formats before record batches (magic 0 and 1) and the request
versions that carry them (Produce v0-v2, Fetch v0-v3, ListOffsets v0), written
and read by hand from the Kafka protocol documentation for the raw-protocol
tests (stdlib only; independent of cohort's src/log/ch_legacy.c).

Message set entry:  int64 offset, int32 size, then the message:
  uint32 crc (CRC-32 of what follows), int8 magic, int8 attributes,
  [int64 timestamp: magic 1], bytes key (int32 length, -1 null), bytes value.
attributes: bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4), bit 3 (magic 1)
LogAppendTime. A compressed "wrapper" has a null key and as value the
compressed inner message set (magic 1: inner offsets 0..n-1, the wrapper's
offset the last one's).
"""
import gzip
import struct
import time
import zlib

import kwire

API_PRODUCE, API_FETCH, API_LIST_OFFSETS = 0, 1, 2
NONE, GZIP, SNAPPY, LZ4 = 0, 1, 2, 3
LOG_APPEND_TIME = 0x08

CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
INVALID_TIMESTAMP = 32
UNSUPPORTED_COMPRESSION_TYPE = 76
INVALID_RECORD = 87
UNKNOWN_SERVER_ERROR = -1


def _bytes(b):
    if b is None:
        return struct.pack(">i", -1)
    return struct.pack(">i", len(b)) + b


def message(value, key=None, magic=1, attributes=0, timestamp=-1, offset=0):
    """One message set entry (bytes), its CRC right."""
    body = struct.pack(">bb", magic, attributes)
    if magic >= 1:
        body += struct.pack(">q", timestamp)
    body += _bytes(key) + _bytes(value)
    m = struct.pack(">I", zlib.crc32(body) & 0xffffffff) + body
    return struct.pack(">qi", offset, len(m)) + m


def gzip_wrapper(inner, magic=1, timestamp=-1, offset=0, attributes=0):
    """inner (a message set) gzipped into one wrapper message."""
    z = gzip.compress(inner, mtime=0)
    return message(z, None, magic, GZIP | attributes, timestamp, offset)


def fix_crc(entry):
    """The entry with its message CRC recomputed (after a deliberate edit)."""
    body = entry[16:]
    return entry[:12] + struct.pack(">I", zlib.crc32(body) & 0xffffffff) + body


def parse_message_set(data):
    """Whole entries of a message set as dicts (a partial last one is
    returned as {"partial": bytes}); wrappers are not opened."""
    out, pos = [], 0
    while pos < len(data):
        if len(data) - pos < 12:
            out.append({"partial": data[pos:]})
            break
        offset, size = struct.unpack_from(">qi", data, pos)
        if size < 0 or pos + 12 + size > len(data):
            out.append({"partial": data[pos:], "offset": offset, "size": size})
            break
        m = data[pos + 12:pos + 12 + size]
        crc, magic, attr = struct.unpack_from(">Ibb", m, 0)
        at = 6
        ts = -1
        if magic >= 1:
            (ts,) = struct.unpack_from(">q", m, 6)
            at = 14
        (kl,) = struct.unpack_from(">i", m, at)
        at += 4
        key = None if kl < 0 else m[at:at + kl]
        at += max(kl, 0)
        (vl,) = struct.unpack_from(">i", m, at)
        at += 4
        value = None if vl < 0 else m[at:at + vl]
        out.append({"offset": offset, "magic": magic, "attributes": attr, "timestamp": ts,
                    "key": key, "value": value, "crc_ok": crc == zlib.crc32(m[4:]) & 0xffffffff,
                    "raw": data[pos:pos + 12 + size]})
        pos += 12 + size
    return out


def inner_messages(wrapper):
    """The inner message set of a gzip wrapper, parsed."""
    assert wrapper["attributes"] & 7 == GZIP, wrapper
    return parse_message_set(gzip.decompress(wrapper["value"]))


# ---------------------------------------------------------------- Produce v0-v2

def produce_body(topic, parts, acks=1, timeout_ms=10000):
    """parts: {partition: records bytes (None: null)}."""
    w = kwire.Writer(False)
    w.int16(acks).int32(timeout_ms).array_len(1).string(topic).array_len(len(parts))
    for p, rec in parts.items():
        w.int32(p)
        w.raw(_bytes(rec))
    return w.bytes()


def produce(conn, version, topic, parts, acks=1):
    """{partition: (error, base_offset, log_append_time)} (log_append_time
    None before v2)."""
    r = conn.call(API_PRODUCE, version, produce_body(topic, parts, acks))
    out = {}
    for _ in range(r.array_len()):
        r.string()
        for _ in range(r.array_len()):
            p, err, base = r.int32(), r.int16(), r.int64()
            lat = r.int64() if version >= 2 else None
            out[p] = (err, base, lat)
    if version >= 1:
        r.int32()  # throttle
    r.done()
    return out


# ---------------------------------------------------------------- Fetch v0-v10

def fetch_body(version, topic, parts, max_wait=0, min_bytes=0, max_bytes=0x7fffffff):
    """parts: [(partition, offset, partition_max_bytes)]; v0-v10 (not flexible)."""
    w = kwire.Writer(False)
    w.int32(-1).int32(max_wait).int32(min_bytes)
    if version >= 3:
        w.int32(max_bytes)
    if version >= 4:
        w.int8(0)                    # IsolationLevel
    if version >= 7:
        w.int32(0).int32(-1)         # SessionId, SessionEpoch
    w.array_len(1).string(topic).array_len(len(parts))
    for p, off, pmax in parts:
        w.int32(p)
        if version >= 9:
            w.int32(-1)              # CurrentLeaderEpoch
        w.int64(off)
        if version >= 5:
            w.int64(-1)              # LogStartOffset
        w.int32(pmax)
    if version >= 7:
        w.array_len(0)               # ForgottenTopicsData
    return w.bytes()


def fetch(conn, version, topic, parts, **kw):
    """{partition: (error, high_watermark, records bytes)}."""
    r = conn.call(API_FETCH, version, fetch_body(version, topic, parts, **kw))
    if version >= 1:
        r.int32()
    if version >= 7:
        r.int16()
        r.int32()
    out = {}
    for _ in range(r.array_len()):
        r.string()
        for _ in range(r.array_len()):
            p, err, hw = r.int32(), r.int16(), r.int64()
            if version >= 4:
                r.int64()            # LastStableOffset
                if version >= 5:
                    r.int64()        # LogStartOffset
                for _ in range(max(r.array_len(nullable=True) or 0, 0)):
                    r.int64()
                    r.int64()
            n = r.int32()
            out[p] = (err, hw, r._take(n) if n > 0 else b"")
    r.done()
    return out


def create_topics_ready(port, topics, timeout=30.0):
    """topics: [(name, partitions, {config: value})], created; returns once
    every partition's leader serves a fetch (Kafka's metadata names a
    leader a moment before it does). AssertionError otherwise."""
    with kwire.Conn(port) as c:
        res = kwire.create_topics(c, [(n, p, 1, cfg) for n, p, cfg in topics])
        for n, _, _ in topics:
            if res["topics"][n]["error_code"] != 0:
                raise AssertionError("creating %s: %r" % (n, res["topics"][n]))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(fetch(c, 10, n, [(p, 0, 1)])[p][0] == 0 for n, np_, _ in topics
                   for p in range(np_)):
                return
            time.sleep(0.1)
    raise AssertionError("topics %s not served on port %d" % (topics, port))


# ---------------------------------------------------------------- ListOffsets v0

def list_offsets_v0(conn, topic, parts):
    """parts: [(partition, timestamp, max_num_offsets)] -> {partition: (error, [offsets])}."""
    w = kwire.Writer(False)
    w.int32(-1).array_len(1).string(topic).array_len(len(parts))
    for p, ts, n in parts:
        w.int32(p).int64(ts).int32(n)
    r = conn.call(API_LIST_OFFSETS, 0, w.bytes())
    out = {}
    for _ in range(r.array_len()):
        r.string()
        for _ in range(r.array_len()):
            p, err = r.int32(), r.int16()
            offs = [r.int64() for _ in range(r.array_len())]
            out[p] = (err, offs)
    r.done()
    return out


def describe(data):
    """A message set as one line per entry, for failure messages."""
    out = []
    for e in parse_message_set(data):
        if "partial" in e:
            out.append("partial %d bytes %s" % (len(e["partial"]), e["partial"][:16].hex()))
        else:
            out.append("offset %d magic %d attributes %d timestamp %d key %r value %d bytes%s"
                       % (e["offset"], e["magic"], e["attributes"], e["timestamp"], e["key"],
                          len(e["value"] or b""), "" if e["crc_ok"] else " BAD CRC"))
    return out


def differences(theirs, ours, path=()):
    """Where two results (nested dicts, tuples, lists, bytes) differ, as
    lines; message sets are described entry by entry."""
    if type(theirs) != type(ours):
        return ["%s: %r | %r" % (path, theirs, ours)]
    if isinstance(theirs, dict):
        out = []
        for k in sorted(set(theirs) | set(ours), key=repr):
            if k not in theirs or k not in ours:
                out.append("%s: only in %s" % (path + (k,), "cohortd" if k in ours else "Kafka"))
            else:
                out += differences(theirs[k], ours[k], path + (k,))
        return out
    if isinstance(theirs, (list, tuple)) and len(theirs) == len(ours):
        out = []
        for i, (a, b) in enumerate(zip(theirs, ours)):
            out += differences(a, b, path + (i,))
        return out
    if isinstance(theirs, bytes) and theirs != ours:
        da, db = describe(theirs), describe(ours)
        lines = ["%s: %d | %d bytes" % (path, len(theirs), len(ours))]
        for i in range(max(len(da), len(db))):
            a = da[i] if i < len(da) else "-"
            b = db[i] if i < len(db) else "-"
            lines.append("    %s %s | %s" % ("  " if a == b else "!=", a, b))
        return lines
    return [] if theirs == ours else ["%s: %r | %r" % (path, theirs, ours)]
