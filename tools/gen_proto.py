#!/usr/bin/env python3
"""Generate cohort's Kafka wire codec from Apache Kafka's message definitions.

    python3 tools/gen_proto.py ../shared/kafka-protocol src/proto/generated

For every message listed in MESSAGES (requests, responses, headers, embedded
data types and coordinator records) this writes:

  ch_msgs.h       one C struct per message and per nested struct, with
                  init (defaults), decode and encode functions for every
                  version, and the ApiKey table type;
  ch_msgs_*.c     the implementations, one file per message family;
  ch_api_table.c  the table of APIs (key, name, version ranges, first
                  flexible version, codec function pointers);
  ch_errors.h/.c  Kafka's error codes, names and messages (errors.tsv);
  ch_api_keys.h   CH_APIKEY_<NAME> for every API key Kafka defines (all the
                  *Request.json files, not only the ones in APIS), with
                  Kafka's ApiKeys names (JOIN_GROUP, API_VERSIONS, ...);
  ch_msgs_fill.c  random fillers used only by the round-trip tests.

Representation (see src/proto/ch_rd.h):
  string            ch_str   (len -1 = null), points into the decoded frame
  bytes, records    ch_bytes (len -1 = null), points into the decoded frame
  uuid              ch_uuid
  []T               T *Field; int32_t Field_n;   (Field_n -1 = null)
  struct            a value, or a pointer when the field is nullable
Decoded arrays and nullable structs live in the caller's ch_arena.

Tagged fields are read by tag in flexible versions (unknown tags skipped) and
written only when they differ from their default, as Kafka does. A field that
a version does not have keeps its default when decoding and is ignored when
encoding.

Versions newer than the shared definitions come from tools/proto-overlay/
(apply_overlay: our own description of the fields a version adds).

The output is committed ("generated, do not edit") so the build needs only a
C compiler; `make gen` runs this again.
"""
import json
import os
import re
import sys

# The messages cohort speaks. API requests/responses are paired by name.
APIS = [
    "Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit", "OffsetFetch",
    "FindCoordinator", "JoinGroup", "Heartbeat", "LeaveGroup", "SyncGroup",
    "DescribeGroups", "ListGroups", "SaslHandshake", "ApiVersions", "CreateTopics",
    "DeleteTopics", "InitProducerId", "DescribeConfigs", "SaslAuthenticate",
    "CreatePartitions", "DeleteGroups", "OffsetDelete", "DescribeCluster",
    "ConsumerGroupHeartbeat", "ConsumerGroupDescribe",
    "DeleteRecords", "AlterConfigs", "IncrementalAlterConfigs",
    "DescribeUserScramCredentials", "AlterUserScramCredentials",
    "DescribeClientQuotas", "AlterClientQuotas",
    "CreateAcls", "DescribeAcls", "DeleteAcls",
]
DATA = ["RequestHeader", "ResponseHeader", "ConsumerProtocolSubscription",
        "ConsumerProtocolAssignment"]
RECORDS = ["GroupMetadataKey", "GroupMetadataValue", "OffsetCommitKey", "OffsetCommitValue"]

MAXV = 0x7fff

PRIMS = {
    # type: (C type, min wire size non-flex, min wire size flex)
    "bool": ("bool", 1, 1),
    "int8": ("int8_t", 1, 1),
    "int16": ("int16_t", 2, 2),
    "uint16": ("uint16_t", 2, 2),
    "int32": ("int32_t", 4, 4),
    "uint32": ("uint32_t", 4, 4),
    "int64": ("int64_t", 8, 8),
    "float64": ("double", 8, 8),
    "uuid": ("ch_uuid", 16, 16),
    "string": ("ch_str", 2, 1),
    "bytes": ("ch_bytes", 4, 1),
    "records": ("ch_bytes", 4, 1),
}
READ = {
    "bool": "ch_rd_bool(r)", "int8": "ch_rd_i8(r)", "int16": "ch_rd_i16(r)",
    "uint16": "ch_rd_u16(r)", "int32": "ch_rd_i32(r)", "uint32": "ch_rd_u32(r)",
    "int64": "ch_rd_i64(r)", "float64": "ch_rd_f64(r)", "uuid": "ch_rd_uuid(r)",
}
WRITE = {
    "bool": "ch_wr_bool", "int8": "ch_wr_i8", "int16": "ch_wr_i16", "uint16": "ch_wr_u16",
    "int32": "ch_wr_i32", "uint32": "ch_wr_u32", "int64": "ch_wr_i64",
    "float64": "ch_wr_f64", "uuid": "ch_wr_uuid",
}


def load_json(path):
    with open(path) as f:
        text = f.read()
    # The definitions are JSON with // comments.
    text = re.sub(r"^\s*//.*$", "", text, flags=re.M)
    return json.loads(text)


# Versions newer than ../shared/kafka-protocol's definitions, described by us
# (tools/proto-overlay/<Message>.json, docs/NOTES.md "Protocol").
OVERLAY_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "proto-overlay")


def apply_overlay(d, ov, path):
    """Raise d (a message definition) to the overlay's validVersions and add
    its fields. The overlay names the validVersions it extends ("base"): when
    the shared definition is not that one (it was updated and may already
    have the fields) generation stops, so that the overlay is removed rather
    than applied twice."""
    where = f"{path}: overlay {ov['name']}.json"
    if d["validVersions"] != ov["base"]:
        raise SystemExit(f"{where} extends validVersions {ov['base']}, the definition has "
                         f"{d['validVersions']}: remove the overlay if the definition now "
                         "has its versions, else update its base")
    d["validVersions"] = ov["validVersions"]
    for add in ov.get("addFields", []):
        fields = d["fields"]
        for step in add["in"].split(".") if add.get("in") else []:
            parent = next((f for f in fields if f["name"] == step), None)
            if parent is None or "fields" not in parent:
                raise SystemExit(f"{where}: no struct field {add['in']}")
            fields = parent["fields"]
        f = add["field"]
        if any(x["name"] == f["name"] for x in fields):
            raise SystemExit(f"{where}: {add.get('in', '')}.{f['name']} already exists")
        names = [x["name"] for x in fields]
        if add["after"] not in names:
            raise SystemExit(f"{where}: no field {add['after']} to add {f['name']} after")
        fields.insert(names.index(add["after"]) + 1, f)
    return d


def load(path):
    """A message definition, with its overlay (if any) applied."""
    d = load_json(path)
    ov_path = os.path.join(OVERLAY_DIR, d.get("name", "") + ".json")
    if os.path.exists(ov_path):
        d = apply_overlay(d, load_json(ov_path), path)
    return d


def vrange(spec):
    """'0+' / '1-3' / '3' / 'none' -> (lo, hi) or None."""
    if spec is None or spec == "none":
        return None
    if spec.endswith("+"):
        return (int(spec[:-1]), MAXV)
    if "-" in spec:
        lo, hi = spec.split("-")
        return (int(lo), int(hi))
    return (int(spec), int(spec))


def vcond(rng, var="v"):
    """C condition for 'var in rng'."""
    if rng is None:
        return "0"
    lo, hi = rng
    parts = []
    if lo > 0:
        parts.append(f"{var} >= {lo}")
    if hi != MAXV:
        parts.append(f"{var} <= {hi}")
    return " && ".join(parts) if parts else "1"


def inr(rng, v):
    return rng is not None and rng[0] <= v <= rng[1]


class Field:
    def __init__(self, msg, d, struct_types):
        self.name = d["name"]
        self.type = d["type"]
        self.versions = vrange(d["versions"])
        self.nullable = vrange(d.get("nullableVersions"))
        self.tagged = vrange(d.get("taggedVersions"))
        self.tag = d.get("tag")
        self.flex_override = d.get("flexibleVersions")  # only "none" is used
        self.default = d.get("default")
        if isinstance(self.default, bool):
            self.default = "true" if self.default else "false"
        elif self.default is not None and not isinstance(self.default, str):
            self.default = str(self.default)
        self.is_array = self.type.startswith("[]")
        self.elem = self.type[2:] if self.is_array else self.type
        self.is_struct = self.elem not in PRIMS
        self.struct = None
        if self.is_struct:
            if "fields" in d:
                self.struct = Struct(msg, self.elem, d["fields"], struct_types)
                struct_types[self.elem] = self.struct
            else:
                self.struct = struct_types.get(self.elem)  # common struct, resolved later

    def ctype(self, msg):
        if self.is_struct:
            return f"ch_{msg.name}_{self.elem}"
        return PRIMS[self.elem][0]


class Struct:
    def __init__(self, msg, name, fields, struct_types):
        self.name = name
        self.fields = [Field(msg, f, struct_types) for f in fields]


class Message:
    def __init__(self, d):
        self.name = d["name"]
        self.kind = d["type"]
        self.api_key = d.get("apiKey")
        self.valid = vrange(d["validVersions"])
        self.flex = vrange(d.get("flexibleVersions", "none"))
        self.struct_types = {}
        # Common structs first so fields can refer to them.
        for cs in d.get("commonStructs", []):
            self.struct_types[cs["name"]] = None
        commons = []
        for cs in d.get("commonStructs", []):
            s = Struct(self, cs["name"], cs["fields"], self.struct_types)
            self.struct_types[cs["name"]] = s
            commons.append(s)
        self.root = Struct(self, self.name, d["fields"], self.struct_types)
        self.root.is_root = True
        self._resolve(self.root)
        for s in commons:
            self._resolve(s)

    def _resolve(self, s):
        for f in s.fields:
            if f.is_struct:
                if f.struct is None:
                    f.struct = self.struct_types[f.elem]
                if f.struct is None:
                    raise SystemExit(f"{self.name}: unresolved struct {f.elem}")
                self._resolve(f.struct)

    def all_structs(self):
        """Nested structs in dependency order (children first), root last."""
        out, seen = [], set()

        def visit(s):
            for f in s.fields:
                if f.is_struct and f.struct.name not in seen:
                    visit(f.struct)
            if s.name not in seen:
                seen.add(s.name)
                out.append(s)
        visit(self.root)
        return out

    def cname(self, s):
        return f"ch_{self.name}" if s is self.root else f"ch_{self.name}_{s.name}"


def c_default(f, msg):
    """C initialiser expression for a scalar field's default."""
    d = f.default
    if isinstance(d, bool):
        d = "true" if d else "false"
    elif d is not None and not isinstance(d, str):
        d = str(d)
    t = f.elem
    if t in ("string",):
        if d is None:
            return '(ch_str){"", 0}'
        if d == "null":
            return "CH_STR_NULL"
        return "(ch_str){%s, %d}" % (json.dumps(d), len(d.encode()))
    if t in ("bytes", "records"):
        if d == "null":
            return "CH_BYTES_NULL"
        return '(ch_bytes){(const uint8_t *)"", 0}'
    if t == "uuid":
        return "(ch_uuid){{0}}"
    if t == "bool":
        return "true" if d == "true" else "false"
    if d is None or d == "":
        return "0"
    if t == "float64":
        return str(float(d))
    v = int(d, 0)
    if t == "int64":
        return f"INT64_C({v})"
    if v == -2147483648:
        return "INT32_MIN"
    return str(v)


class Gen:
    def __init__(self, msgs):
        self.msgs = msgs

    # ------------------------------------------------------------- header
    def header(self):
        o = []
        o.append("/* Generated by tools/gen_proto.py from Apache Kafka's message definitions.")
        o.append(" * Do not edit: run `make gen`. */")
        o.append("#ifndef CH_MSGS_H\n#define CH_MSGS_H\n")
        o.append("#include <stdbool.h>\n#include <stddef.h>\n#include <stdint.h>\n")
        o.append('#include "common/ch_arena.h"\n#include "common/ch_buf.h"')
        o.append('#include "common/ch_uuid.h"\n#include "proto/ch_rd.h"\n')
        o.append("/* Responses' _errors: fn(ud, code) for every ErrorCode field the version\n"
                 " * has, nested ones included (what Kafka's errorCounts() counts). */")
        o.append("typedef void (*ch_error_fn)(void *ud, int16_t code);\n")
        for m in self.msgs:
            o.append(f"/* ---- {m.name} (versions {m.valid[0]}-{m.valid[1]}"
                     f"{', flexible ' + str(m.flex[0]) + '+' if m.flex else ''}) ---- */")
            for s in m.all_structs():
                cn = m.cname(s)
                o.append(f"typedef struct {cn} {{")
                for f in s.fields:
                    ct = f.ctype(m)
                    vs = f"v{f.versions[0]}+" if f.versions[1] == MAXV else f"v{f.versions[0]}-{f.versions[1]}"
                    note = vs
                    if f.nullable:
                        note += ", nullable"
                    if f.tagged:
                        note += f", tag {f.tag}"
                    if f.is_array:
                        o.append(f"\t{ct} *{f.name}; /* {note} */")
                        o.append(f"\tint32_t {f.name}_n; /* count, -1 = null */")
                    elif f.is_struct and f.nullable:
                        o.append(f"\t{ct} *{f.name}; /* {note}; NULL = null */")
                    else:
                        o.append(f"\t{ct} {f.name}; /* {note} */")
                if not s.fields:
                    o.append("\tchar unused_;")
                o.append(f"}} {cn};")
            cn = m.cname(m.root)
            o.append(f"void {cn}_init({cn} *m);")
            o.append(f"int {cn}_decode(ch_rd *r, ch_arena *a, int16_t v, {cn} *m);")
            o.append(f"void {cn}_encode(ch_buf *b, int16_t v, const {cn} *m);")
            if m.kind == "response":
                o.append(f"void {cn}_errors(const {cn} *m, int16_t v, ch_error_fn fn, void *ud);")
            o.append(f"#define {cn.upper()}_MIN_VERSION {m.valid[0]}")
            o.append(f"#define {cn.upper()}_MAX_VERSION {m.valid[1]}")
            o.append(f"#define {cn.upper()}_FLEX_VERSION {m.flex[0] if m.flex else -1}")
            o.append("")
        o.append("""/* The API table: one row per API key cohort has a codec for. Whether an
 * API is advertised and served is the api/ layer's decision, not this table's. */
typedef int (*ch_decode_fn)(ch_rd *r, ch_arena *a, int16_t v, void *m);
typedef void (*ch_encode_fn)(ch_buf *b, int16_t v, const void *m);
typedef void (*ch_init_fn)(void *m);
typedef void (*ch_errors_fn)(const void *m, int16_t v, ch_error_fn fn, void *ud);

typedef struct ch_api_codec {
	int16_t key;
	const char *name;
	int16_t min_version, max_version;
	int16_t flex_version; /* first flexible version, -1 = none */
	size_t req_size, resp_size;
	ch_init_fn req_init, resp_init;
	ch_decode_fn req_decode, resp_decode;
	ch_encode_fn req_encode, resp_encode;
	ch_errors_fn resp_errors; /* every ErrorCode of a response */
	/* Where the response's top-level ThrottleTimeMs is (offsetof in the
	 * response struct, -1: none) and from which version it is sent:
	 * quotas set it for every API (Kafka's maybeSetThrottleTimeMs). */
	ptrdiff_t throttle_off;
	int16_t throttle_version;
} ch_api_codec;

extern const ch_api_codec ch_api_codecs[];
extern const size_t ch_api_codecs_n;
/* NULL when cohort has no codec for that key. */
const ch_api_codec *ch_api_codec_find(int16_t key);

/* Random fillers for the round-trip tests (ch_msgs_fill.c, test builds only). */
typedef void (*ch_fill_fn)(ch_arena *a, int16_t v, uint64_t *rng, void *m);
typedef struct ch_msg_filler {
	const char *name;
	int16_t min_version, max_version;
	size_t size;
	ch_init_fn init;
	ch_fill_fn fill;
	ch_decode_fn decode;
	ch_encode_fn encode;
} ch_msg_filler;
extern const ch_msg_filler ch_msg_fillers[];
extern const size_t ch_msg_fillers_n;
""")
        o.append("#endif")
        return "\n".join(o) + "\n"

    # ------------------------------------------------------------- code
    def untagged_cond(self, f):
        """C condition for 'field is in this version and not tagged', or None."""
        if f.tagged and f.tagged[0] <= f.versions[0] and f.tagged[1] >= f.versions[1]:
            return None
        cond = vcond(f.versions)
        if f.tagged:
            cond = f"({cond}) && !({vcond(f.tagged)})"
        return None if cond == "0" else cond

    def flex_expr(self, m, f):
        if f is not None and f.flex_override == "none":
            return "false"
        return f"({vcond(m.flex)})" if m.flex else "false"

    def minsize_fn(self, m, s):
        """Minimum wire size of struct s per version, to bound array counts."""
        lo, hi = m.valid
        sizes = []
        for v in range(lo, hi + 1):
            flex = inr(m.flex, v)
            n = 0
            for f in s.fields:
                if not inr(f.versions, v) or inr(f.tagged, v):
                    continue
                ff = flex and f.flex_override != "none"
                if f.is_array:
                    n += 1 if ff else 4
                elif f.is_struct:
                    n += 1 if f.nullable and inr(f.nullable, v) else 0
                else:
                    n += PRIMS[f.elem][2 if ff else 1]
            if flex:
                n += 1
            sizes.append(max(n, 1))
        return sizes

    def decode_field(self, m, f, tgt, reader, ind):
        o = []
        flex = self.flex_expr(m, f)
        nullchk = ""
        if f.nullable is None or f.nullable != f.versions:
            nullchk = f"!({vcond(f.nullable)})" if f.nullable else "1"
        if f.is_array:
            et = f.ctype(m)
            if f.is_struct:
                ms = f"minsz_{m.cname(f.struct)}(v)"
            else:
                ms = str(PRIMS[f.elem][1] if f.elem not in ("string", "bytes") else 1)
            o.append(f"{ind}{{")
            o.append(f"{ind}\tint32_t n_ = ch_rd_array_len({reader}, {flex}, {ms});")
            if nullchk:
                o.append(f"{ind}\tif (n_ < 0 && ({nullchk}))")
                o.append(f"{ind}\t\tch_rd_fail({reader}, CH_RD_EINVAL);")
            o.append(f"{ind}\t{tgt}_n = n_;")
            o.append(f"{ind}\t{tgt} = NULL;")
            o.append(f"{ind}\tif (n_ > 0) {{")
            o.append(f"{ind}\t\t{tgt} = ch_arena_alloc(a, sizeof({et}) * (size_t)n_);")
            o.append(f"{ind}\t\tif (!{tgt}) {{")
            o.append(f"{ind}\t\t\tch_rd_fail({reader}, CH_RD_ENOMEM);")
            o.append(f"{ind}\t\t\t{tgt}_n = 0;")
            o.append(f"{ind}\t\t}}")
            o.append(f"{ind}\t}}")
            o.append(f"{ind}\tfor (int32_t i_ = 0; i_ < {tgt}_n && ch_rd_ok({reader}); i_++)")
            if f.is_struct:
                o.append(f"{ind}\t\tdec_{m.cname(f.struct)}({reader}, a, v, &{tgt}[i_]);")
            else:
                o.append(f"{ind}\t\t{tgt}[i_] = {self.read_scalar(f, reader, flex)};")
            o.append(f"{ind}}}")
        elif f.is_struct:
            sn = m.cname(f.struct)
            if f.nullable:
                o.append(f"{ind}if (ch_rd_i8({reader}) < 0) {{")
                o.append(f"{ind}\t{tgt} = NULL;")
                o.append(f"{ind}}} else {{")
                o.append(f"{ind}\t{tgt} = ch_arena_alloc(a, sizeof({sn}));")
                o.append(f"{ind}\tif (!{tgt})")
                o.append(f"{ind}\t\tch_rd_fail({reader}, CH_RD_ENOMEM);")
                o.append(f"{ind}\telse")
                o.append(f"{ind}\t\tdec_{sn}({reader}, a, v, {tgt});")
                o.append(f"{ind}}}")
            else:
                o.append(f"{ind}dec_{sn}({reader}, a, v, &{tgt});")
        else:
            o.append(f"{ind}{tgt} = {self.read_scalar(f, reader, flex)};")
            if f.elem in ("string", "bytes", "records") and nullchk:
                o.append(f"{ind}if ({tgt}.len < 0 && ({nullchk}))")
                o.append(f"{ind}\tch_rd_fail({reader}, CH_RD_EINVAL);")
        return o

    def read_scalar(self, f, reader, flex):
        if f.elem == "string":
            return f"ch_rd_str({reader}, {flex})"
        if f.elem in ("bytes", "records"):
            return f"ch_rd_bytes({reader}, {flex})"
        return READ[f.elem].replace("(r)", f"({reader})")

    def encode_field(self, m, f, src, buf, ind):
        o = []
        flex = self.flex_expr(m, f)
        # A null where this version cannot carry one is written as empty
        # (Kafka would refuse to serialise it; a peer must never see -1).
        notnull = None
        if f.nullable is None or f.nullable != f.versions:
            notnull = f"!({vcond(f.nullable)})" if f.nullable else "1"
        if f.is_array:
            cnt = f"{src}_n"
            if notnull:
                cnt = f"({notnull} && {src}_n < 0 ? 0 : {src}_n)"
            o.append(f"{ind}ch_wr_array_len({buf}, {cnt}, {flex});")
            o.append(f"{ind}for (int32_t i_ = 0; i_ < {src}_n; i_++)")
            if f.is_struct:
                o.append(f"{ind}\tenc_{m.cname(f.struct)}({buf}, v, &{src}[i_]);")
            else:
                o.append(f"{ind}\t{self.write_scalar(f, buf, src + '[i_]', flex)};")
        elif f.is_struct:
            sn = m.cname(f.struct)
            if f.nullable:
                o.append(f"{ind}if (!{src}) {{")
                o.append(f"{ind}\tch_wr_i8({buf}, -1);")
                o.append(f"{ind}}} else {{")
                o.append(f"{ind}\tch_wr_i8({buf}, 1);")
                o.append(f"{ind}\tenc_{sn}({buf}, v, {src});")
                o.append(f"{ind}}}")
            else:
                o.append(f"{ind}enc_{sn}({buf}, v, &{src});")
        else:
            val = src
            if notnull and f.elem == "string":
                val = f"({notnull} && {src}.len < 0 ? (ch_str){{\"\", 0}} : {src})"
            elif notnull and f.elem in ("bytes", "records"):
                val = f"({notnull} && {src}.len < 0 ? (ch_bytes){{(const uint8_t *)\"\", 0}} : {src})"
            o.append(f"{ind}{self.write_scalar(f, buf, val, flex)};")
        return o

    def write_scalar(self, f, buf, src, flex):
        if f.elem == "string":
            return f"ch_wr_str({buf}, {src}, {flex})"
        if f.elem in ("bytes", "records"):
            return f"ch_wr_bytes({buf}, {src}, {flex})"
        return f"{WRITE[f.elem]}({buf}, {src})"

    def nondefault_expr(self, m, f, src):
        """C expression: tagged field differs from its default (so is written)."""
        if f.is_array:
            return f"({src}_n != 0)" if f.default != "null" else f"({src}_n >= 0)"
        if f.is_struct:
            if f.nullable:
                return f"({src} != NULL)"
            return f"!isdef_{m.cname(f.struct)}(&{src})"
        t = f.elem
        if t == "string":
            if f.default == "null":
                return f"!ch_str_is_null({src})"
            return f"!ch_str_eq({src}, {c_default(f, m)})"
        if t in ("bytes", "records"):
            if f.default == "null":
                return f"({src}.len >= 0)"
            return f"({src}.len != 0)"
        if t == "uuid":
            return f"!ch_uuid_is_zero(&{src})"
        return f"({src} != {c_default(f, m)})"

    def init_lines(self, m, s, tgt, ind):
        o = []
        for f in s.fields:
            if f.is_array:
                o.append(f"{ind}{tgt}{f.name} = NULL;")
                o.append(f"{ind}{tgt}{f.name}_n = {-1 if f.default == 'null' else 0};")
            elif f.is_struct:
                if f.nullable:
                    o.append(f"{ind}{tgt}{f.name} = NULL;")
                else:
                    o.append(f"{ind}init_{m.cname(f.struct)}(&{tgt}{f.name});")
            else:
                o.append(f"{ind}{tgt}{f.name} = {c_default(f, m)};")
        return o

    def code(self, m):
        o = []
        o.append("/* Generated by tools/gen_proto.py. Do not edit: run `make gen`. */")
        o.append('#include "proto/generated/ch_msgs.h"\n#include "proto/ch_wr.h"\n')
        structs = m.all_structs()
        # Prototypes (structs may be referenced before definition order).
        for s in structs:
            cn = m.cname(s)
            o.append(f"static void init_{cn}({cn} *m);")
            o.append(f"static void dec_{cn}(ch_rd *r, ch_arena *a, int16_t v, {cn} *m);")
            o.append(f"static void enc_{cn}(ch_buf *b, int16_t v, const {cn} *m);")
            o.append(f"static size_t minsz_{cn}(int16_t v) __attribute__((unused));")
            o.append(f"static bool isdef_{cn}(const {cn} *m) __attribute__((unused));")
        o.append("")
        for s in structs:
            cn = m.cname(s)
            # init
            o.append(f"static void\ninit_{cn}({cn} *m)\n{{")
            o.append("\tmemset(m, 0, sizeof(*m));")
            o += self.init_lines(m, s, "m->", "\t")
            o.append("}\n")
            # minsz
            sizes = self.minsize_fn(m, s)
            o.append(f"static size_t\nminsz_{cn}(int16_t v)\n{{")
            o.append(f"\tstatic const uint8_t sz[] = {{{', '.join(str(min(x, 255)) for x in sizes)}}};")
            o.append(f"\tint i = v - {m.valid[0]};")
            o.append(f"\treturn i >= 0 && i < (int)sizeof(sz) ? sz[i] : 1;")
            o.append("}\n")
            # isdef: every field at its default (for tagged struct fields)
            o.append(f"static bool\nisdef_{cn}(const {cn} *m)\n{{")
            conds = [self.nondefault_expr(m, f, "m->" + f.name) for f in s.fields]
            o.append("\t(void)m;")
            o.append("\treturn !(" + (" || ".join(conds) if conds else "0") + ");")
            o.append("}\n")
            # decode
            o.append(f"static void\ndec_{cn}(ch_rd *r, ch_arena *a, int16_t v, {cn} *m)\n{{")
            o.append("\t(void)a;\n\t(void)v;")
            o.append(f"\tinit_{cn}(m);")
            for f in s.fields:
                cond = self.untagged_cond(f)
                if cond is None:
                    continue
                o.append(f"\tif ({cond}) {{")
                o += self.decode_field(m, f, "m->" + f.name, "r", "\t\t")
                o.append("\t}")
            tagged = [f for f in s.fields if f.tagged]
            if m.flex:
                o.append(f"\tif ({vcond(m.flex)}) {{")
                o.append("\t\tuint32_t ntags_ = ch_rd_tag_count(r);")
                o.append("\t\tfor (uint32_t t_ = 0; t_ < ntags_ && ch_rd_ok(r); t_++) {")
                o.append("\t\t\tuint32_t tag_ = ch_rd_uvarint(r);")
                o.append("\t\t\tuint32_t size_ = ch_rd_uvarint(r);")
                o.append("\t\t\tconst uint8_t *p_ = ch_rd_take(r, size_);")
                o.append("\t\t\tif (!p_)")
                o.append("\t\t\t\tbreak;")
                o.append("\t\t\tch_rd sub_;")
                o.append("\t\t\tch_rd_init(&sub_, p_, size_);")
                o.append("\t\t\tch_rd *tr_ = &sub_;")
                o.append("\t\t\t(void)tr_;")
                o.append("\t\t\tswitch (tag_) {")
                for f in tagged:
                    o.append(f"\t\t\tcase {f.tag}:")
                    o.append(f"\t\t\t\tif ({vcond(f.tagged)}) {{")
                    o += self.decode_field(m, f, "m->" + f.name, "tr_", "\t\t\t\t\t")
                    o.append("\t\t\t\t\tif (!ch_rd_ok(tr_))")
                    o.append("\t\t\t\t\t\tch_rd_fail(r, tr_->err);")
                    o.append("\t\t\t\t}")
                    o.append("\t\t\t\tbreak;")
                o.append("\t\t\tdefault:")
                o.append("\t\t\t\tbreak; /* unknown tags are skipped */")
                o.append("\t\t\t}")
                o.append("\t\t}")
                o.append("\t}")
            o.append("}\n")
            # encode
            o.append(f"static void\nenc_{cn}(ch_buf *b, int16_t v, const {cn} *m)\n{{")
            o.append("\t(void)v;\n\t(void)m;")
            for f in s.fields:
                cond = self.untagged_cond(f)
                if cond is None:
                    continue
                o.append(f"\tif ({cond}) {{")
                o += self.encode_field(m, f, "m->" + f.name, "b", "\t\t")
                o.append("\t}")
            if m.flex:
                o.append(f"\tif ({vcond(m.flex)}) {{")
                if tagged:
                    tagged_sorted = sorted(tagged, key=lambda f: f.tag)
                    o.append("\t\tuint32_t ntags_ = 0;")
                    for f in tagged_sorted:
                        o.append(f"\t\tbool has{f.tag}_ = ({vcond(f.tagged)}) && "
                                 f"{self.nondefault_expr(m, f, 'm->' + f.name)};")
                        o.append(f"\t\tntags_ += has{f.tag}_;")
                    o.append("\t\tch_wr_uvarint(b, ntags_);")
                    for f in tagged_sorted:
                        o.append(f"\t\tif (has{f.tag}_) {{")
                        o.append("\t\t\tch_buf tb_;")
                        o.append("\t\t\tch_buf_init(&tb_);")
                        o += self.encode_field(m, f, "m->" + f.name, "&tb_", "\t\t\t")
                        o.append(f"\t\t\tch_wr_uvarint(b, {f.tag});")
                        o.append("\t\t\tch_wr_uvarint(b, (uint32_t)tb_.len);")
                        o.append("\t\t\tch_buf_append(b, tb_.data, tb_.len);")
                        o.append("\t\t\tif (tb_.oom)")
                        o.append("\t\t\t\tb->oom = true;")
                        o.append("\t\t\tch_buf_free(&tb_);")
                        o.append("\t\t}")
                else:
                    o.append("\t\tch_wr_uvarint(b, 0);")
                o.append("\t}")
            o.append("}\n")
        if m.kind == "response":
            o += self.errors_code(m, structs)
        cn = m.cname(m.root)
        o.append(f"void\n{cn}_init({cn} *m)\n{{\n\tinit_{cn}(m);\n}}\n")
        o.append(f"int\n{cn}_decode(ch_rd *r, ch_arena *a, int16_t v, {cn} *m)\n{{")
        o.append(f"\tif (v < {m.valid[0]} || v > {m.valid[1]}) {{")
        o.append("\t\tch_rd_fail(r, CH_RD_EINVAL);")
        o.append("\t\treturn -1;")
        o.append("\t}")
        o.append(f"\tdec_{cn}(r, a, v, m);")
        o.append("\treturn ch_rd_ok(r) ? 0 : -1;")
        o.append("}\n")
        o.append(f"void\n{cn}_encode(ch_buf *b, int16_t v, const {cn} *m)\n{{")
        o.append(f"\tenc_{cn}(b, v, m);")
        o.append("}")
        return "\n".join(o) + "\n"

    def errors_code(self, m, structs):
        """errs_<struct>: fn(ud, code) for each ErrorCode field present at v,
        recursing into struct fields and arrays; <Response>_errors calls the
        root's."""
        def has_errors(s, seen=()):
            for f in s.fields:
                if f.name == "ErrorCode" and f.elem == "int16" and not f.is_array:
                    return True
                if f.is_struct and f.struct.name not in seen and \
                        has_errors(f.struct, seen + (s.name,)):
                    return True
            return False
        o = []
        walk = [s for s in structs if has_errors(s)]
        for s in walk:
            cn = m.cname(s)
            o.append(f"static void errs_{cn}(const {cn} *m, int16_t v, ch_error_fn fn, void *ud);")
        for s in walk:
            cn = m.cname(s)
            o.append(f"static void\nerrs_{cn}(const {cn} *m, int16_t v, ch_error_fn fn, void *ud)\n{{")
            o.append("\t(void)v;")
            for f in s.fields:
                cond = vcond(f.versions)
                if f.name == "ErrorCode" and f.elem == "int16" and not f.is_array:
                    o.append(f"\tif ({cond})")
                    o.append(f"\t\tfn(ud, m->{f.name});")
                elif f.is_struct and f.struct in walk:
                    sn = m.cname(f.struct)
                    if f.is_array:
                        o.append(f"\tif ({cond})")
                        o.append(f"\t\tfor (int32_t i_ = 0; i_ < m->{f.name}_n; i_++)")
                        o.append(f"\t\t\terrs_{sn}(&m->{f.name}[i_], v, fn, ud);")
                    elif f.nullable:
                        o.append(f"\tif (({cond}) && m->{f.name})")
                        o.append(f"\t\terrs_{sn}(m->{f.name}, v, fn, ud);")
                    else:
                        o.append(f"\tif ({cond})")
                        o.append(f"\t\terrs_{sn}(&m->{f.name}, v, fn, ud);")
            o.append("}\n")
        cn = m.cname(m.root)
        o.append(f"void\n{cn}_errors(const {cn} *m, int16_t v, ch_error_fn fn, void *ud)\n{{")
        if m.root in walk:
            o.append(f"\terrs_{cn}(m, v, fn, ud);")
        else:
            o.append("\t(void)m;\n\t(void)v;\n\t(void)fn;\n\t(void)ud;")
        o.append("}\n")
        return o

    # ------------------------------------------------------------- test fillers
    def fill_scalar(self, f, tgt, nullable_cond, ind):
        t = f.elem
        o = []
        if t in ("string", "bytes", "records"):
            kind = "str" if t == "string" else "bytes"
            o.append(f"{ind}{tgt} = fill_{kind}(a, rng, {nullable_cond});")
        elif t == "uuid":
            o.append(f"{ind}{tgt} = fill_uuid(rng);")
        elif t == "bool":
            o.append(f"{ind}{tgt} = (fill_next(rng) & 1) != 0;")
        elif t == "float64":
            o.append(f"{ind}{tgt} = (double)(int32_t)fill_next(rng) / 8.0;")
        else:
            o.append(f"{ind}{tgt} = ({PRIMS[t][0]})fill_next(rng);")
        return o

    def fill_code(self, msgs):
        o = []
        o.append("/* Generated by tools/gen_proto.py. Do not edit: run `make gen`.")
        o.append(" * Random fillers for round-trip tests: each sets only fields that the")
        o.append(" * given version has, with values that version can carry. */")
        o.append('#include "proto/generated/ch_msgs.h"\n#include <string.h>\n')
        o.append("""static uint64_t
fill_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static ch_str
fill_str(ch_arena *a, uint64_t *rng, int nullable)
{
	if (nullable && fill_next(rng) % 4 == 0)
		return CH_STR_NULL;
	int32_t n = (int32_t)(fill_next(rng) % 12);
	char *p = ch_arena_alloc(a, (size_t)n + 1);
	for (int32_t i = 0; i < n; i++)
		p[i] = (char)('a' + fill_next(rng) % 26);
	return (ch_str){p, n};
}

static ch_bytes
fill_bytes(ch_arena *a, uint64_t *rng, int nullable)
{
	if (nullable && fill_next(rng) % 4 == 0)
		return CH_BYTES_NULL;
	int32_t n = (int32_t)(fill_next(rng) % 20);
	uint8_t *p = ch_arena_alloc(a, (size_t)n + 1);
	for (int32_t i = 0; i < n; i++)
		p[i] = (uint8_t)fill_next(rng);
	return (ch_bytes){p, n};
}

static ch_uuid
fill_uuid(uint64_t *rng)
{
	ch_uuid u;
	uint64_t x = fill_next(rng), y = fill_next(rng);
	memcpy(u.b, &x, 8);
	memcpy(u.b + 8, &y, 8);
	return u;
}

static int32_t
fill_count(uint64_t *rng, int nullable)
{
	if (nullable && fill_next(rng) % 5 == 0)
		return -1;
	return (int32_t)(fill_next(rng) % 4);
}
""")
        rows = []
        for m in msgs:
            structs = m.all_structs()
            for s in structs:
                cn = m.cname(s)
                o.append(f"static void fill_{cn}(ch_arena *a, int16_t v, uint64_t *rng, {cn} *m, int depth);")
            for s in structs:
                cn = m.cname(s)
                o.append(f"static void\nfill_{cn}(ch_arena *a, int16_t v, uint64_t *rng, {cn} *m, int depth)\n{{")
                o.append("\t(void)a;\n\t(void)v;\n\t(void)rng;\n\t(void)depth;")
                for f in s.fields:
                    cond = vcond(f.versions)
                    if cond == "0":
                        continue
                    nc = f"({vcond(f.nullable)})" if f.nullable else "0"
                    o.append(f"\tif ({cond}) {{")
                    tgt = "m->" + f.name
                    if f.is_array:
                        et = f.ctype(m)
                        o.append(f"\t\tint32_t n_ = depth > 3 ? 0 : fill_count(rng, {nc});")
                        o.append(f"\t\t{tgt}_n = n_;")
                        o.append(f"\t\t{tgt} = n_ > 0 ? ch_arena_alloc(a, sizeof({et}) * (size_t)n_) : NULL;")
                        o.append("\t\tfor (int32_t i_ = 0; i_ < n_; i_++) {")
                        if f.is_struct:
                            o.append(f"\t\t\tfill_{m.cname(f.struct)}(a, v, rng, &{tgt}[i_], depth + 1);")
                        else:
                            o += self.fill_scalar(f, f"{tgt}[i_]", "0", "\t\t\t")
                        o.append("\t\t}")
                    elif f.is_struct:
                        sn = m.cname(f.struct)
                        if f.nullable:
                            o.append(f"\t\tif (fill_next(rng) % 3 == 0) {{")
                            o.append(f"\t\t\t{tgt} = NULL;")
                            o.append("\t\t} else {")
                            o.append(f"\t\t\t{tgt} = ch_arena_alloc(a, sizeof({sn}));")
                            o.append(f"\t\t\tfill_{sn}(a, v, rng, {tgt}, depth + 1);")
                            o.append("\t\t}")
                        else:
                            o.append(f"\t\tfill_{sn}(a, v, rng, &{tgt}, depth + 1);")
                    else:
                        o += self.fill_scalar(f, tgt, nc, "\t\t")
                    o.append("\t}")
                o.append("}\n")
            cn = m.cname(m.root)
            o.append(f"static void\nfill_root_{cn}(ch_arena *a, int16_t v, uint64_t *rng, void *m)\n{{")
            o.append(f"\t{cn}_init(m);\n\tfill_{cn}(a, v, rng, m, 0);\n}}\n")
            rows.append(f'\t{{"{m.name}", {m.valid[0]}, {m.valid[1]}, sizeof({cn}), '
                        f'(ch_init_fn){cn}_init, fill_root_{cn}, (ch_decode_fn){cn}_decode, '
                        f'(ch_encode_fn){cn}_encode}},')
        o.append("const ch_msg_filler ch_msg_fillers[] = {")
        o += rows
        o.append("};")
        o.append("const size_t ch_msg_fillers_n = sizeof(ch_msg_fillers) / sizeof(ch_msg_fillers[0]);")
        return "\n".join(o) + "\n"

    def api_table(self, pairs):
        o = ["/* Generated by tools/gen_proto.py. Do not edit: run `make gen`. */",
             '#include "proto/generated/ch_msgs.h"\n',
             "const ch_api_codec ch_api_codecs[] = {"]
        for name, req, resp in sorted(pairs, key=lambda p: p[1].api_key):
            rq, rs = f"ch_{req.name}", f"ch_{resp.name}"
            fv = req.flex[0] if req.flex else -1
            tf = [f for f in resp.root.fields if f.name == "ThrottleTimeMs" and f.type == "int32"]
            throttle = (f"offsetof({rs}, ThrottleTimeMs), {tf[0].versions[0]}" if tf
                        else "-1, -1")
            o.append(f'\t{{{req.api_key}, "{name}", {req.valid[0]}, {req.valid[1]}, {fv}, '
                     f"sizeof({rq}), sizeof({rs}), (ch_init_fn){rq}_init, (ch_init_fn){rs}_init, "
                     f"(ch_decode_fn){rq}_decode, (ch_decode_fn){rs}_decode, "
                     f"(ch_encode_fn){rq}_encode, (ch_encode_fn){rs}_encode, "
                     f"(ch_errors_fn){rs}_errors, {throttle}}},")
        o.append("};")
        o.append("const size_t ch_api_codecs_n = sizeof(ch_api_codecs) / sizeof(ch_api_codecs[0]);\n")
        # by key: row + 1 (0: no such API), so that a lookup (one a request)
        # is an index and not a scan of the rows
        keys = [req.api_key for _, req, _ in sorted(pairs, key=lambda p: p[1].api_key)]
        at = [0] * (max(keys) + 1)
        for i, k in enumerate(keys):
            at[k] = i + 1
        assert len(keys) < 256
        o.append("/* Each key's row + 1 in ch_api_codecs (0: none). */")
        o.append(f"static const uint8_t codec_at[{len(at)}] = {{{', '.join(map(str, at))}}};\n")
        o.append("const ch_api_codec *\nch_api_codec_find(int16_t key)\n{")
        o.append("\tif (key < 0 || (size_t)key >= sizeof(codec_at) || !codec_at[key])")
        o.append("\t\treturn NULL;")
        o.append("\treturn &ch_api_codecs[codec_at[key] - 1];\n}")
        return "\n".join(o) + "\n"


def gen_errors(path):
    rows = []
    with open(path) as f:
        next(f)
        for line in f:
            parts = line.rstrip("\n").split("\t")
            code, name, retriable = int(parts[0]), parts[1], parts[2] == "yes"
            msg = parts[3] if len(parts) > 3 else ""
            rows.append((code, name, retriable, msg))
    h = ["/* Generated by tools/gen_proto.py from errors.tsv (Kafka's Errors.java).",
         " * Do not edit: run `make gen`. */",
         "#ifndef CH_ERRORS_H\n#define CH_ERRORS_H\n\n#include <stdbool.h>\n#include <stdint.h>\n",
         "typedef enum ch_kerr {"]
    for code, name, _, _ in rows:
        h.append(f"\tCH_KERR_{name} = {code},")
    h.append("} ch_kerr;\n")
    h.append("/* Kafka's name for an error code (\"UNKNOWN_MEMBER_ID\"), or \"UNKNOWN\". */")
    h.append("const char *ch_kerr_name(int16_t code);")
    h.append("/* Kafka's default message for an error code, \"\" if none. */")
    h.append("const char *ch_kerr_message(int16_t code);")
    h.append("bool ch_kerr_retriable(int16_t code);\n\n#endif")
    c = ["/* Generated by tools/gen_proto.py from errors.tsv. Do not edit. */",
         '#include "proto/generated/ch_errors.h"\n',
         "static const struct {\n\tint16_t code;\n\tbool retriable;\n\tconst char *name, *message;\n} errors[] = {"]
    for code, name, retr, msg in rows:
        c.append(f"\t{{{code}, {'true' if retr else 'false'}, \"{name}\", {json.dumps(msg)}}},")
    c.append("};\n")
    c.append("""static int
find(int16_t code)
{
	for (unsigned i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].code == code)
			return (int)i;
	return -1;
}

const char *
ch_kerr_name(int16_t code)
{
	int i = find(code);
	return i < 0 ? "UNKNOWN" : errors[i].name;
}

const char *
ch_kerr_message(int16_t code)
{
	int i = find(code);
	return i < 0 ? "" : errors[i].message;
}

bool
ch_kerr_retriable(int16_t code)
{
	int i = find(code);
	return i >= 0 && errors[i].retriable;
}""")
    return "\n".join(h) + "\n", "\n".join(c) + "\n"


def api_key_name(api):
    """Kafka's ApiKeys enum name for an API: JoinGroup -> JOIN_GROUP."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", api).upper()


def gen_api_keys(src):
    """ch_api_keys.h: every request schema's apiKey under Kafka's name."""
    rows = []
    for fn in sorted(os.listdir(src)):
        if not fn.endswith("Request.json"):
            continue
        d = load(os.path.join(src, fn))
        if d.get("type") != "request" or "apiKey" not in d:
            continue
        rows.append((d["apiKey"], api_key_name(d["name"][: -len("Request")])))
    rows.sort()
    h = ["/* Generated by tools/gen_proto.py from the *Request.json definitions.",
         " * Do not edit: run `make gen`. Names are those of Kafka's ApiKeys enum. */",
         "#ifndef CH_API_KEYS_H\n#define CH_API_KEYS_H\n",
         "typedef enum ch_api_key {"]
    for key, name in rows:
        h.append(f"\tCH_APIKEY_{name} = {key},")
    h.append("} ch_api_key;\n\n#endif")
    return "\n".join(h) + "\n"


def write(path, text):
    old = None
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
    if old != text:
        with open(path, "w") as f:
            f.write(text)


def main():
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    msgs, pairs = [], []
    for api in APIS:
        req = Message(load(os.path.join(src, api + "Request.json")))
        resp = Message(load(os.path.join(src, api + "Response.json")))
        msgs += [req, resp]
        pairs.append((api, req, resp))
    for name in DATA:
        msgs.append(Message(load(os.path.join(src, name + ".json"))))
    for name in RECORDS:
        msgs.append(Message(load(os.path.join(src, "coordinator-records", name + ".json"))))
    g = Gen(msgs)
    write(os.path.join(out, "ch_msgs.h"), g.header())
    files = []
    for m in msgs:
        fn = f"ch_msg_{m.name}.c"
        files.append(fn)
        write(os.path.join(out, fn), g.code(m))
    write(os.path.join(out, "ch_api_table.c"), g.api_table(pairs))
    write(os.path.join(out, "ch_msgs_fill.c"), g.fill_code(msgs))
    eh, ec = gen_errors(os.path.join(src, "errors.tsv"))
    write(os.path.join(out, "ch_errors.h"), eh)
    write(os.path.join(out, "ch_errors.c"), ec)
    write(os.path.join(out, "ch_api_keys.h"), gen_api_keys(src))
    write(os.path.join(out, "sources.cmake"),
          "# Generated by tools/gen_proto.py. Do not edit.\nset(CH_GENERATED_SOURCES\n" +
          "".join(f"  generated/{f}\n" for f in files + ["ch_api_table.c", "ch_errors.c"]) + ")\n")


if __name__ == "__main__":
    main()
