"""A generic Kafka wire codec driven by Apache Kafka's own message definitions.

Reads the JSON message specs (../shared/kafka-protocol, the files Kafka's
generator reads; COHORT_PROTO_DIR overrides) and encodes any request / decodes
any response of any version from them: every field of every version is there,
so a comparison of two decoded responses compares all of it. Independent of
cohort's C codec (src/proto); stdlib only (and kwire.py's socket).

Messages are plain dicts keyed by the spec's field names ("ErrorCode",
"Topics": [{"Name": ...}]). Encoding fills a missing field with its default;
decoding yields exactly the fields present in that version, tagged fields
included when sent (unknown tags under "_unknown_tags").

    P = Protocol()
    c = Conn(port, P)
    resp = c.call("JoinGroup", 5, {"GroupId": "g", "SessionTimeoutMs": 10000, ...})
"""
import gzip
import json
import os
import struct
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import kwire  # noqa: E402  (its socket connection)

ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_DIR = os.path.join(ROOT, "..", "shared", "kafka-protocol")

PRIMITIVES = ("bool", "int8", "int16", "int32", "int64", "uint16", "uint32", "float64",
              "string", "bytes", "records", "uuid")
ZERO_UUID = uuid.UUID(int=0)


ProtocolError = kwire.ProtocolError


def strip_comments(text):
    """The specs are JSON with // line comments (never inside strings' escapes)."""
    out, i, n, in_str = [], 0, len(text), False
    while i < n:
        ch = text[i]
        if in_str:
            out.append(ch)
            if ch == "\\":
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
            out.append(ch)
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


class Versions:
    """A spec version range: "none", "3", "1-4", "2+"."""

    def __init__(self, spec):
        spec = (spec or "none").strip()
        if spec == "none":
            self.lo, self.hi = 1, 0
        elif spec.endswith("+"):
            self.lo, self.hi = int(spec[:-1]), 1 << 15
        elif "-" in spec:
            a, b = spec.split("-")
            self.lo, self.hi = int(a), int(b)
        else:
            self.lo = self.hi = int(spec)

    def __contains__(self, v):
        return self.lo <= v <= self.hi

    def __repr__(self):
        return "%d-%d" % (self.lo, self.hi)


class Field:
    def __init__(self, spec, structs):
        self.name = spec["name"]
        self.type = spec["type"].strip()
        self.versions = Versions(spec.get("versions"))
        self.nullable = Versions(spec.get("nullableVersions"))
        self.tagged = Versions(spec.get("taggedVersions"))
        self.tag = spec.get("tag")
        # A field may opt out of the compact encoding (RequestHeader's ClientId).
        self.flexible_override = (Versions(spec["flexibleVersions"])
                                  if "flexibleVersions" in spec else None)
        self.default = spec.get("default")
        self.is_array = self.type.startswith("[]")
        self.elem = self.type[2:] if self.is_array else self.type
        self.struct = None   # list of Field for struct types
        if self.elem not in PRIMITIVES:
            if "fields" in spec:
                self.struct = [Field(f, structs) for f in spec["fields"]]
                structs.setdefault(self.elem, spec["fields"])
            else:
                self.struct_name = self.elem   # a commonStruct, resolved later
        self._structs = structs

    def fields(self):
        if self.struct is None and self.elem not in PRIMITIVES:
            if self.elem not in self._structs:
                raise ProtocolError("unknown struct type %s" % self.elem)
            self.struct = [Field(f, self._structs) for f in self._structs[self.elem]]
        return self.struct

    def default_value(self, v):
        if self.default == "null" or (self.default is None and self.nullable_in(v)
                                      and self.elem in ("records",)):
            return None
        if self.is_array:
            return []
        if self.elem not in PRIMITIVES:
            return {f.name: f.default_value(v) for f in self.fields() if v in f.versions}
        d = self.default
        if self.elem == "bool":
            return d == "true" if isinstance(d, str) else bool(d)
        if self.elem in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
            if d is None or d == "":
                return 0
            return int(d, 0) if isinstance(d, str) else int(d)
        if self.elem == "float64":
            return float(d or 0)
        if self.elem == "string":
            return d or ""
        if self.elem in ("bytes", "records"):
            return b""
        if self.elem == "uuid":
            return ZERO_UUID
        raise ProtocolError("no default for %s" % self.type)

    def nullable_in(self, v):
        return v in self.nullable

    def is_tagged(self, v):
        return self.tag is not None and v in self.tagged


class Message:
    def __init__(self, spec):
        self.api_key = spec.get("apiKey")
        self.kind = spec["type"]
        self.name = spec["name"]
        self.valid = Versions(spec.get("validVersions"))
        self.flexible = Versions(spec.get("flexibleVersions"))
        self.structs = {s["name"]: s["fields"] for s in spec.get("commonStructs", [])}
        self.fields = [Field(f, self.structs) for f in spec.get("fields", [])]


# ---------------------------------------------------------------- primitives

def uvarint(v):
    return kwire.Writer().uvarint(v).bytes()


def varint(v):
    return uvarint((v << 1) ^ (v >> 63))


INTS = {"int8": ">b", "int16": ">h", "int32": ">i", "int64": ">q", "uint16": ">H",
        "uint32": ">I", "float64": ">d"}


class Reader:
    def __init__(self, data):
        self.data = bytes(data)
        self.pos = 0

    def take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise ProtocolError("truncated: need %d bytes at offset %d of %d"
                                % (n, self.pos, len(self.data)))
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def fmt(self, f):
        size = struct.calcsize(f)
        return struct.unpack(f, self.take(size))[0]

    def uvarint(self):
        shift = v = 0
        while True:
            b = self.take(1)[0]
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v
            shift += 7
            if shift > 63:
                raise ProtocolError("varint too long at offset %d" % self.pos)

    def varint(self):
        u = self.uvarint()
        return (u >> 1) ^ -(u & 1)

    def remaining(self):
        return len(self.data) - self.pos


# ------------------------------------------------------------------- codec

def _encode_value(f, val, v, flex, out, strict=True):
    compact = flex if f.flexible_override is None else (v in f.flexible_override)
    if f.is_array:
        if val is None:
            if not f.nullable_in(v):
                raise ProtocolError("%s is not nullable in v%d" % (f.name, v))
            out.append(uvarint(0) if compact else struct.pack(">i", -1))
            return
        out.append(uvarint(len(val) + 1) if compact else struct.pack(">i", len(val)))
        for item in val:
            _encode_elem(f, item, v, flex, compact, out, strict)
        return
    _encode_elem(f, val, v, flex, compact, out, strict)


def _encode_elem(f, val, v, flex, compact, out, strict=True):
    t = f.elem
    if t in INTS:
        out.append(struct.pack(INTS[t], val))
    elif t == "bool":
        out.append(b"\x01" if val else b"\x00")
    elif t == "uuid":
        out.append(_uuid(val).bytes)
    elif t == "string":
        if val is None:
            out.append(uvarint(0) if compact else struct.pack(">h", -1))
            return
        b = val.encode() if isinstance(val, str) else bytes(val)
        out.append(uvarint(len(b) + 1) if compact else struct.pack(">h", len(b)))
        out.append(b)
    elif t in ("bytes", "records"):
        if val is None:
            out.append(uvarint(0) if compact else struct.pack(">i", -1))
            return
        b = bytes(val)
        out.append(uvarint(len(b) + 1) if compact else struct.pack(">i", len(b)))
        out.append(b)
    else:
        if val is None:   # nullable struct
            out.append(struct.pack(">b", -1))
            return
        if f.nullable_in(v) and not f.is_array:
            out.append(struct.pack(">b", 1))
        out.append(encode_struct(f.fields(), val, v, flex, strict))


def _uuid(val):
    if val is None:
        return ZERO_UUID
    if isinstance(val, uuid.UUID):
        return val
    if isinstance(val, (bytes, bytearray)):
        return uuid.UUID(bytes=bytes(val))
    return uuid.UUID(val)


def encode_struct(fields, values, v, flex, strict=True):
    """Encode one struct of version v; unknown keys in values are an error (typos).
    strict: a field the version does not have must be absent or default; else
    it is dropped (one script for many versions)."""
    values = values or {}
    known = {f.name for f in fields}
    extra = set(values) - known - {"_unknown_tags"}
    if extra:
        raise ProtocolError("unknown field(s) %s (known: %s)" % (sorted(extra), sorted(known)))
    out, tagged = [], []
    for f in fields:
        if v not in f.versions:
            if strict and f.name in values and values[f.name] != f.default_value(v):
                raise ProtocolError("field %s is not in v%d" % (f.name, v))
            continue
        val = values.get(f.name, f.default_value(v))
        if flex and f.is_tagged(v):
            if val != f.default_value(v):
                buf = []
                _encode_value(f, val, v, flex, buf, strict)
                tagged.append((f.tag, b"".join(buf)))
            continue
        _encode_value(f, val, v, flex, out, strict)
    if flex:
        tagged.sort()
        out.append(uvarint(len(tagged)))
        for tag, b in tagged:
            out.append(uvarint(tag) + uvarint(len(b)) + b)
    return b"".join(out)


def _decode_value(f, r, v, flex):
    compact = flex if f.flexible_override is None else (v in f.flexible_override)
    if f.is_array:
        n = (r.uvarint() - 1) if compact else r.fmt(">i")
        if n < 0:
            if not f.nullable_in(v):
                raise ProtocolError("null array in non-nullable %s" % f.name)
            return None
        if n > r.remaining():
            raise ProtocolError("%s: array count %d exceeds the %d bytes left"
                                % (f.name, n, r.remaining()))
        return [_decode_elem(f, r, v, flex, compact) for _ in range(n)]
    return _decode_elem(f, r, v, flex, compact)


def _decode_elem(f, r, v, flex, compact):
    t = f.elem
    if t in INTS:
        return r.fmt(INTS[t])
    if t == "bool":
        b = r.take(1)[0]
        if b > 1:
            raise ProtocolError("%s: bool byte %d" % (f.name, b))
        return b == 1
    if t == "uuid":
        return uuid.UUID(bytes=r.take(16))
    if t == "string":
        n = (r.uvarint() - 1) if compact else r.fmt(">h")
        if n < 0:
            if not f.nullable_in(v):
                raise ProtocolError("null string in non-nullable %s" % f.name)
            return None
        return r.take(n).decode("utf-8")
    if t in ("bytes", "records"):
        n = (r.uvarint() - 1) if compact else r.fmt(">i")
        if n < 0:
            if not f.nullable_in(v):
                raise ProtocolError("null bytes in non-nullable %s" % f.name)
            return None
        return r.take(n)
    if f.nullable_in(v) and not f.is_array:
        if r.fmt(">b") < 0:
            return None
    return decode_struct(f.fields(), r, v, flex)


def decode_struct(fields, r, v, flex):
    out = {}
    by_tag = {}
    for f in fields:
        if v not in f.versions:
            continue
        if flex and f.is_tagged(v):
            by_tag[f.tag] = f
            continue
        out[f.name] = _decode_value(f, r, v, flex)
    if flex:
        unknown = {}
        last = -1
        for _ in range(r.uvarint()):
            tag, size = r.uvarint(), r.uvarint()
            if tag <= last:
                raise ProtocolError("tagged fields out of order: %d after %d" % (tag, last))
            last = tag
            raw = r.take(size)
            if tag in by_tag:
                sub = Reader(raw)
                out[by_tag[tag].name] = _decode_value(by_tag[tag], sub, v, flex)
                if sub.remaining():
                    raise ProtocolError("tag %d: %d bytes left over" % (tag, sub.remaining()))
            else:
                unknown[tag] = raw
        if unknown:
            out["_unknown_tags"] = unknown
    return out


# Versions newer than the shared definitions (ConsumerGroupDescribe v1,
# DescribeGroups v6): our own description of what they add, the file the C
# codec's generator applies too (tools/proto-overlay, tools/gen_proto.py).
OVERLAY_DIR = os.path.join(ROOT, "tools", "proto-overlay")


def with_overlay(spec, path):
    ov_path = os.path.join(OVERLAY_DIR, spec.get("name", "") + ".json")
    if not os.path.exists(ov_path):
        return spec
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        import gen_proto
    finally:
        sys.path.pop(0)
    with open(ov_path) as fh:
        ov = json.loads(strip_comments(fh.read()))
    return gen_proto.apply_overlay(spec, ov, path)


class Protocol:
    """All message specs of one directory, by API name ("JoinGroup") and kind."""

    def __init__(self, directory=None):
        directory = directory or os.environ.get("COHORT_PROTO_DIR") or DEFAULT_DIR
        if not os.path.isdir(directory):
            raise ProtocolError("no Kafka message definitions at %s (set COHORT_PROTO_DIR)"
                                % directory)
        self.dir = directory
        self.requests, self.responses, self.by_key, self.other = {}, {}, {}, {}
        for fn in sorted(os.listdir(directory)):
            if not fn.endswith(".json"):
                continue
            with open(os.path.join(directory, fn)) as fh:
                spec = json.loads(strip_comments(fh.read()))
            m = Message(with_overlay(spec, os.path.join(directory, fn)))
            if m.kind == "request" and m.api_key is not None:
                api = m.name[:-len("Request")]
                self.requests[api] = m
                self.by_key[m.api_key] = api
            elif m.kind == "response" and m.api_key is not None:
                self.responses[m.name[:-len("Response")]] = m
            else:
                self.other[m.name] = m
        self.req_header = self.other["RequestHeader"]
        self.resp_header = self.other["ResponseHeader"]

    def api_key(self, api):
        return self.requests[api].api_key

    def flexible(self, api, v):
        return v in self.requests[api].flexible

    def request_header_version(self, api, v):
        return 2 if self.flexible(api, v) else 1

    def response_header_version(self, api, v):
        # ApiVersions answers with header v0 whatever the version (clients read
        # it before they know what the broker speaks).
        if api == "ApiVersions":
            return 0
        return 1 if self.flexible(api, v) else 0

    def encode_request(self, api, v, fields, corr, client_id="cohort-conformance", strict=True):
        """The framed request (size prefix included)."""
        m = self.requests[api]
        hv = self.request_header_version(api, v)
        hdr = encode_struct(self.req_header.fields,
                            {"RequestApiKey": m.api_key, "RequestApiVersion": v,
                             "CorrelationId": corr, "ClientId": client_id}, hv, hv >= 2)
        body = encode_struct(m.fields, fields, v, self.flexible(api, v), strict)
        return struct.pack(">i", len(hdr) + len(body)) + hdr + body

    def decode_response(self, api, v, payload):
        """payload: the frame after its size. Returns (correlation id, body dict);
        bytes left after the body are an error (a broker must not send them)."""
        r = Reader(payload)
        hv = self.response_header_version(api, v)
        hdr = decode_struct(self.resp_header.fields, r, hv, hv >= 1)
        body = decode_struct(self.responses[api].fields, r, v, self.flexible(api, v))
        if r.remaining():
            raise ProtocolError("%s v%d response: %d bytes after the body"
                                % (api, v, r.remaining()))
        return hdr["CorrelationId"], body

    def decode_embedded(self, name, data):
        """A versioned embedded message (ConsumerProtocolSubscription/Assignment):
        int16 version, then the body in that (never flexible) version."""
        if data is None:
            return None
        r = Reader(data)
        v = r.fmt(">h")
        m = self.other[name]
        out = decode_struct(m.fields, r, min(v, m.valid.hi), False)
        out["_version"] = v
        return out

    def encode_embedded(self, name, v, fields):
        return struct.pack(">h", v) + encode_struct(self.other[name].fields, fields, v, False)


class Conn(kwire.Conn):
    """A blocking connection (kwire.Conn's socket) that speaks any API
    through a Protocol."""

    def __init__(self, port, proto, host="127.0.0.1", timeout=30.0,
                 client_id="cohort-conformance"):
        super().__init__(port, host=host, timeout=timeout)
        self.proto = proto
        self.client_id = client_id
        self.pending = []   # (corr, api, version) in send order

    def send_request(self, api, v, fields, strict=True, answered=True):
        """answered=False: a request the broker does not answer (Produce acks=0)."""
        corr = self.next_corr()
        self.send(self.proto.encode_request(api, v, fields, corr, self.client_id, strict))
        if answered:
            self.pending.append((corr, api, v))
        return corr

    def send_raw(self, build, api, v):
        """build(corr) -> a whole frame; its answer is decoded as api/v."""
        corr = self.next_corr()
        self.send(build(corr))
        self.pending.append((corr, api, v))

    def recv(self, timeout=None):
        """The next response (responses come in request order on a connection)."""
        if not self.pending:
            raise ProtocolError("no request outstanding")
        corr, api, v = self.pending.pop(0)
        if timeout is not None:
            self.sock.settimeout(timeout)
        got, body = self.proto.decode_response(api, v, self.recv_frame())
        if got != corr:
            raise ProtocolError("correlation id %d, expected %d" % (got, corr))
        return body

    def call(self, api, v, fields, timeout=None, strict=True):
        self.send_request(api, v, fields, strict)
        return self.recv(timeout)


# ------------------------------------------------------------ record batches

def _crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_CRC32C = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC32C[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def record_batch(records, base_timestamp=1700000000000, producer_id=-1, producer_epoch=-1,
                 base_sequence=-1, attributes=0, compress=None, offset_deltas=None,
                 count=None, last_offset_delta=None, max_timestamp=None, base_offset=0):
    """A v2 record batch. records: list of (key, value[, ts_delta[, headers]]).
    compress: None, or a function over the records section (gzip.compress)
    whose codec the caller puts in attributes. The other keywords override
    what the header or records would say, to build batches a broker must
    refuse: offset_deltas (one per record), count, last_offset_delta,
    max_timestamp, base_offset."""
    body = []
    max_delta = 0
    for i, rec in enumerate(records):
        key, value = rec[0], rec[1]
        ts_delta = rec[2] if len(rec) > 2 else i
        headers = rec[3] if len(rec) > 3 else []
        max_delta = max(max_delta, ts_delta)
        r = bytearray(b"\x00")   # record attributes
        r += varint(ts_delta) + varint(offset_deltas[i] if offset_deltas else i)
        for b in (key, value):
            if b is None:
                r += varint(-1)
            else:
                b = b.encode() if isinstance(b, str) else b
                r += varint(len(b)) + b
        r += varint(len(headers))
        for hk, hv in headers:
            hk = hk.encode()
            r += varint(len(hk)) + hk + varint(len(hv)) + hv
        body.append(varint(len(r)) + bytes(r))
    section = b"".join(body)
    if compress is not None:
        section = compress(section)
    after_crc = struct.pack(
        ">hiqqqhii", attributes,
        len(records) - 1 if last_offset_delta is None else last_offset_delta, base_timestamp,
        base_timestamp + max_delta if max_timestamp is None else max_timestamp, producer_id,
        producer_epoch, base_sequence, len(records) if count is None else count) + section
    crc = crc32c(after_crc)
    head = struct.pack(">ibI", 0, 2, crc)   # partition leader epoch, magic, crc
    return struct.pack(">qi", base_offset, len(head) + len(after_crc)) + head + after_crc


def _records(section, count, gzipped):
    """The records of one batch's records section (gzip: compared record by
    record, since two correct brokers may compress the same records apart)."""
    b = Reader(gzip.decompress(section) if gzipped else section)
    recs = []
    for _ in range(count):
        size = b.varint()
        rr = Reader(b.take(size))
        rec = {"Attributes": rr.take(1)[0], "TimestampDelta": rr.varint(),
               "OffsetDelta": rr.varint()}
        for k in ("Key", "Value"):
            n = rr.varint()
            rec[k] = None if n < 0 else rr.take(n)
        hs = []
        for _ in range(rr.varint()):
            hk = rr.take(rr.varint()).decode()
            n = rr.varint()
            hs.append((hk, None if n < 0 else rr.take(n)))
        rec["Headers"] = hs
        recs.append(rec)
    return recs


def parse_batches(data):
    """Decode a records field into a list of batch dicts with their records
    (v2 batches; uncompressed and gzip ones are decoded record by record: the
    bytes of a compressed section may differ between two correct brokers)."""
    if data is None:
        return None
    out = []
    r = Reader(data)
    while r.remaining() >= 12:
        base = r.fmt(">q")
        length = r.fmt(">i")
        if length > r.remaining():
            out.append({"partial_batch_bytes": r.remaining() + 12})
            break
        b = Reader(r.take(length))
        batch = {"BaseOffset": base, "BatchLength": length,
                 "PartitionLeaderEpoch": b.fmt(">i"), "Magic": b.fmt(">b")}
        if batch["Magic"] != 2:
            batch["raw"] = b.data[b.pos:]
            out.append(batch)
            continue
        crc = b.fmt(">I")
        rest = b.data[b.pos:]
        batch["CrcValid"] = crc32c(rest) == crc
        (batch["Attributes"], batch["LastOffsetDelta"], batch["BaseTimestamp"],
         batch["MaxTimestamp"], batch["ProducerId"], batch["ProducerEpoch"],
         batch["BaseSequence"], count) = struct.unpack(">hiqqqhii", b.take(40))
        section = b.data[b.pos:]
        if batch["Attributes"] & 0x7 not in (0, 1):
            batch["compressed_bytes"] = len(section)
        else:
            try:
                batch["Records"] = _records(section, count, batch["Attributes"] & 0x7 == 1)
            except (ProtocolError, OSError, EOFError, UnicodeDecodeError) as e:
                # a batch a broker should not have stored: shown, not fatal
                batch["Records"] = "undecodable: %s" % e
        out.append(batch)
    if r.remaining():
        out.append({"partial_batch_bytes": r.remaining()})
    return out
