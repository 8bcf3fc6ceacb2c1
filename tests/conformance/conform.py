"""Differential conformance: run one scripted conversation against cohortd and
against Apache Kafka, compare every response field by field.

A scenario is a list of steps; each step names a connection (any label: one
TCP connection per label and side, opened on first use), an API, a version and
the request's fields, and optionally what both answers must show:

    call("m1", "JoinGroup", 5, {...}, expect={"ErrorCode": MEMBER_ID_REQUIRED},
         save={"m1": "MemberId"})
    call("m1", "JoinGroup", 5, {..., "MemberId": V("m1")})

The script runs on both sides at once (one thread each), so a side's saved
values (V("m1")) are its own. `send` + `recv` split a call for requests that
block (a JoinGroup waiting for the others). `poll` repeats a request until a
condition holds: the reference broker is asynchronous (topic leadership,
coordinator load) and the script waits for it instead of sleeping.

After both runs, every step marked for comparison has its two responses
normalised (normalise()) and compared; a difference prints the field path and
both whole responses side by side.
"""
import re
import threading
import time
import traceback
import uuid

import kproto

# ------------------------------------------------------------ error names

_ERRORS = None


def error_names(proto):
    global _ERRORS
    if _ERRORS is None:
        _ERRORS = {}
        import os
        with open(os.path.join(proto.dir, "errors.tsv")) as fh:
            for line in fh.read().splitlines()[1:]:
                code, name = line.split("\t")[:2]
                _ERRORS[int(code)] = name
    return _ERRORS


# ------------------------------------------------------------------ steps

class V:
    """A value saved earlier on the same side (save={"name": path})."""

    def __init__(self, name, default=None):
        self.name, self.default = name, default

    def __repr__(self):
        return "V(%r)" % self.name


class Step:
    def __init__(self, kind, conn, api=None, version=None, fields=None, expect=None,
                 save=None, compare=True, until=None, timeout=30.0, label=None, keep=None,
                 accept=()):
        self.kind, self.conn, self.api, self.version = kind, conn, api, version
        self.fields, self.expect, self.save = fields or {}, expect or {}, save or {}
        self.compare, self.until, self.timeout = compare, until, timeout
        self.label, self.keep = label, keep
        # accept: [(path regex, reason)] documented differences of this step only
        self.accept = list(accept)

    def title(self):
        if self.kind == "recv":
            return "recv on %s" % self.conn
        if self.kind == "closed":
            return "connection %s closed by the broker" % self.conn
        return "%s %s v%d on %s" % (self.kind, self.api, self.version, self.conn)


def call(conn, api, version, fields=None, **kw):
    """Send a request and wait for its response."""
    return Step("call", conn, api, version, fields, **kw)


def send(conn, api, version, fields=None, **kw):
    """Send a request without waiting (its response comes with recv(conn))."""
    kw.setdefault("compare", False)
    return Step("send", conn, api, version, fields, **kw)


def send_only(conn, api, version, fields=None, **kw):
    """Send a request the broker must not answer (Produce with acks=0): a
    response would be read as the next request's and fail that step."""
    kw.setdefault("compare", False)
    return Step("send_only", conn, api, version, fields, **kw)


def recv(conn, **kw):
    """The response to the oldest request sent on conn and not yet received."""
    return Step("recv", conn, **kw)


def poll(conn, api, version, fields, until, timeout=30.0, **kw):
    """Repeat the request (every 50 ms) until until(response) is true."""
    kw.setdefault("compare", False)
    return Step("poll", conn, api, version, fields, until=until, timeout=timeout, **kw)


def raw(conn, api, version, frame, **kw):
    """Send hand-made bytes (frame(corr) -> bytes) and decode the answer as api/version."""
    return Step("raw", conn, api, version, {"frame": frame}, **kw)


def closed(conn, timeout=10.0, **kw):
    """The broker closes the connection (after a request it must not answer)."""
    return Step("closed", conn, timeout=timeout, **kw)


def close(conn):
    """Close our side of a connection (a client that goes away)."""
    return Step("close", conn, compare=False)


# -------------------------------------------------------------- paths

def get_path(obj, path):
    """"Groups[0].Members[1].MemberId" in a decoded response."""
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if part.startswith("["):
            obj = obj[int(part[1:-1])]
        else:
            obj = obj[part]
    return obj


def resolve(value, vars):
    if isinstance(value, V):
        if value.name not in vars:
            if value.default is not None:
                return value.default
            raise KeyError("no saved value %r" % value.name)
        return vars[value.name]
    if callable(value) and not isinstance(value, type):
        return resolve(value(vars), vars)
    if isinstance(value, dict):
        return {k: resolve(v, vars) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, vars) for v in value]
    return value


# ----------------------------------------------------------- one side

class Side:
    def __init__(self, name, port, proto):
        self.name, self.port, self.proto = name, port, proto
        self.conns = {}
        self.vars = {}
        self.results = []   # per step: response dict, or {"_error": text}
        self.failure = None

    def conn(self, label):
        if label not in self.conns:
            self.conns[label] = kproto.Conn(self.port, self.proto, client_id="conformance-" + label)
        return self.conns[label]

    def close_all(self):
        for c in self.conns.values():
            c.close()
        self.conns = {}

    def run(self, steps):
        try:
            for st in steps:
                self.results.append(self.run_step(st))
        except Exception:
            self.failure = traceback.format_exc()
        finally:
            self.close_all()

    def run_step(self, st):
        if st.kind == "close":
            c = self.conns.pop(st.conn, None)
            if c:
                c.close()
            return None
        if st.kind == "closed":
            c = self.conns.pop(st.conn)
            shut = c.wait_closed(st.timeout)
            c.close()
            return {"_closed": shut}
        try:
            if st.kind == "call":
                resp = self.conn(st.conn).call(st.api, st.version, resolve(st.fields, self.vars),
                                               timeout=st.timeout, strict=False)
            elif st.kind in ("send", "send_only"):
                self.conn(st.conn).send_request(st.api, st.version,
                                                resolve(st.fields, self.vars), strict=False,
                                                answered=st.kind == "send")
                return None
            elif st.kind == "recv":
                resp = self.conn(st.conn).recv(timeout=st.timeout)
            elif st.kind == "raw":
                c = self.conn(st.conn)
                c.send_raw(st.fields["frame"], st.api, st.version)
                resp = c.recv(timeout=st.timeout)
            elif st.kind == "poll":
                resp = self.poll(st)
            else:
                raise ValueError(st.kind)
        except (ConnectionError, OSError, kproto.ProtocolError) as e:
            # A closed connection is an answer too (Kafka closes on some bad
            # requests); the connection is gone for the following steps.
            c = self.conns.pop(st.conn, None)
            if c:
                c.close()
            return {"_error": "%s: %s" % (type(e).__name__, e)}
        for name, path in st.save.items():
            self.vars[name] = path(resp) if callable(path) else get_path(resp, path)
        return resp

    def poll(self, st):
        deadline = time.monotonic() + st.timeout
        while True:
            resp = self.conn(st.conn).call(st.api, st.version, resolve(st.fields, self.vars),
                                           timeout=st.timeout, strict=False)
            if st.until(resp):
                return resp
            if time.monotonic() > deadline:
                raise AssertionError("%s: %s never met its condition; last response %r"
                                     % (self.name, st.title(), resp))
            time.sleep(0.05)


# ------------------------------------------------------ normalisation

UUID_TAIL = re.compile(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
# A consumer-protocol member id the coordinator made (KIP-848): a random
# Uuid in Kafka's base64 (22 characters, URL alphabet, no padding).
BASE64_UUID = re.compile(r"^[A-Za-z0-9_-]{22}$")
ID_IN_TEXT = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{22}(?![A-Za-z0-9_-])")


class Normaliser:
    """Replaces what may legitimately differ between two brokers by names that
    are stable within one side's run, so equal structure still compares:
    member ids' random part (PREFIX-UUID -> PREFIX-<1>, numbered per prefix in
    order of first appearance; the prefix is the client id, or the instance
    id of a static member, and each script connection has its own client id),
    consumer-protocol member ids (<member-1>, also inside error messages),
    topic ids (<t1>), the cluster id, the broker's own port, throttle times.
    A list of partition numbers named Partitions (an assignment: a set) is
    sorted."""

    def __init__(self, side):
        self.side = side
        self.members = {}     # prefix -> {uuid tail: n}
        self.cg_members = {}  # consumer-protocol member id -> <member-n>
        self.topic_ids = {}

    def value(self, name, v):
        if name == "ThrottleTimeMs":
            return 0   # quotas are not configured on either side; 0 expected, not compared
        if name == "ClusterId" and v is not None:
            return "<cluster>"
        if name == "Port" and v == self.side.port:
            return "<port>"
        if name == "Records" and isinstance(v, bytes):
            return kproto.parse_batches(v)   # decoded for comparison, not normalised
        if isinstance(v, uuid.UUID):
            if v.int == 0:
                return "<zero-uuid>"
            return "<t%d>" % self.topic_ids.setdefault(v, len(self.topic_ids) + 1)
        if name == "MemberId" and isinstance(v, str) and BASE64_UUID.match(v):
            return self.cg_members.setdefault(v, "<member-%d>" % (len(self.cg_members) + 1))
        if name == "ErrorMessage" and isinstance(v, str):
            # ids a refused member never saw (its join was refused) too
            return ID_IN_TEXT.sub(lambda m: self.cg_members.setdefault(
                m.group(0), "<member-%d>" % (len(self.cg_members) + 1)), v)
        if isinstance(v, str):
            m = UUID_TAIL.search(v)
            if m:
                prefix = v[:m.start()]
                ids = self.members.setdefault(prefix, {})
                return prefix + "-<%d>" % ids.setdefault(m.group(0), len(ids) + 1)
        return v

    def walk(self, obj, name=None):
        if isinstance(obj, dict):
            return {k: self.walk(v, k) for k, v in obj.items()}
        if isinstance(obj, list):
            out = [self.walk(v, name) for v in obj]
            if name == "Partitions" and all(isinstance(v, int) for v in out):
                out.sort()
            return out
        return self.value(name, obj)


# Fields that name a list's elements (the specs' mapKey fields and ids): such a
# list is compared element by element by that name, its order separately.
KEY_FIELDS = ("Name", "ApiKey", "Key", "PartitionIndex", "GroupId", "Topic", "TopicName",
              "MemberId", "GroupInstanceId", "NodeId", "BrokerId")


def list_key(items):
    """The field naming each element of a list of structs, or None (positional)."""
    if not items or not all(isinstance(x, dict) for x in items):
        return None
    for k in KEY_FIELDS:
        vals = [x.get(k, KeyError) for x in items]
        if KeyError not in vals and len(set(map(repr, vals))) == len(vals):
            return k
    return None


def elem_path(prefix, key, item, i):
    if key is None:
        return "%s[%d]" % (prefix, i)
    v = item[key]
    return "%s[%s=%s]" % (prefix, key, v if isinstance(v, str) else repr(v))


def flatten(obj, prefix="", out=None):
    """[(path, leaf)] of a decoded response, in field order."""
    if out is None:
        out = []
    if isinstance(obj, dict):
        if not obj:
            out.append((prefix or ".", "{}"))
        for k, v in obj.items():
            flatten(v, "%s.%s" % (prefix, k) if prefix else k, out)
    elif isinstance(obj, list):
        if not obj:
            out.append((prefix, "[]"))
        key = list_key(obj)
        for i, v in enumerate(obj):
            flatten(v, elem_path(prefix, key, v, i), out)
    else:
        out.append((prefix, obj))
    return out


def show(v, errors):
    if isinstance(v, bytes):
        return repr(v) if len(v) <= 48 else "%r...(%d bytes)" % (v[:40], len(v))
    return repr(v)


def annotate(path, v, errors):
    s = show(v, errors)
    if path.endswith("ErrorCode") and isinstance(v, int) and v in errors:
        s += " " + errors[v]
    return s


def diff(a, b, path=""):
    """[(path, a_leaf, b_leaf)] where the two structures differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in list(a) + [k for k in b if k not in a]:
            p = "%s.%s" % (path, k) if path else k
            if k not in a:
                out.append((p, "<absent>", b[k]))
            elif k not in b:
                out.append((p, a[k], "<absent>"))
            else:
                out += diff(a[k], b[k], p)
        return out
    if isinstance(a, list) and isinstance(b, list):
        ka, kb = list_key(a), list_key(b)
        if ka is not None and ka == kb:
            ia = {repr(x[ka]): x for x in a}
            ib = {repr(x[ka]): x for x in b}
            out = []
            for r in list(ia) + [r for r in ib if r not in ia]:
                item = ia.get(r) or ib.get(r)
                p = elem_path(path, ka, item, 0)
                if r not in ia:
                    out.append((p, "<absent>", ib[r]))
                elif r not in ib:
                    out.append((p, ia[r], "<absent>"))
                else:
                    out += diff(ia[r], ib[r], p)
            # No order check: Kafka builds many of these lists from hash maps
            # (members, groups, topics of a result), so their order is not
            # part of its behaviour; elements are matched by their key.
            return out
        if (a and b and all(isinstance(x, dict) for x in a + b)):
            # Structs with no naming field: compared as a multiset (sorted),
            # for the reason above.
            a, b = sorted(a, key=repr), sorted(b, key=repr)
        out = []
        for i in range(max(len(a), len(b))):
            p = "%s[%d]" % (path, i)
            if i >= len(a):
                out.append((p, "<absent>", b[i]))
            elif i >= len(b):
                out.append((p, a[i], "<absent>"))
            else:
                out += diff(a[i], b[i], p)
        return out
    return [] if a == b else [(path, a, b)]


def _parent(path):
    return path.rsplit(".", 1)[0] if "." in path else ""


def side_by_side(a, b, names, errors, marks, full_below=40):
    """Both responses in two columns, differing rows marked "!". A long response
    shows only the structs holding a difference; equal runs are counted."""
    fa, fb = flatten(a), flatten(b)
    da, db = dict(fa), dict(fb)
    paths = [p for p, _ in fa] + [p for p, _ in fb if p not in da]

    def marked(p):
        return any(p == m or p.startswith(m + ".") or p.startswith(m + "[") for m in marks)
    parents = {_parent(p) for p in paths if marked(p)}
    w = max([len(p) for p in paths] + [10])
    cell = lambda d, p: annotate(p, d[p], errors) if p in d else "<absent>"
    wv = min(60, max([len(cell(da, p)) for p in paths] + [len(names[0])]))
    lines = ["    %-*s  %-*s | %s" % (w, "field", wv, names[0], names[1])]
    skipped = 0
    for p in paths:
        show_row = len(paths) <= full_below or marked(p) or _parent(p) in parents
        if not show_row:
            skipped += 1
            continue
        if skipped:
            lines.append("    ... %d equal field(s)" % skipped)
            skipped = 0
        lines.append("  %s %-*s  %-*s | %s" % ("!" if marked(p) else " ", w, p, wv,
                                                cell(da, p), cell(db, p)))
    if skipped:
        lines.append("    ... %d equal field(s)" % skipped)
    return "\n".join(lines)


# ------------------------------------------------------------ scenarios

class Scenario:
    def __init__(self, name, steps, ref="auto", accept=(), setup=False):
        self.name, self.steps, self.ref = name, steps, ref
        self.setup = setup   # runs even when CONFORMANCE_ONLY selects other scenarios
        # accept: [(path regex, reason)] differences this scenario documents
        # (each reason must be in README's "Where cohort differs ... on purpose").
        self.accept = list(accept)


class Outcome:
    def __init__(self, scenario, ref):
        self.scenario, self.ref = scenario, ref
        self.differences = []   # text blocks
        self.accepted = []      # (step title, path, reason)
        self.failures = []      # expectation failures / errors
        self.seconds = 0.0

    @property
    def ok(self):
        return not self.differences and not self.failures


def check_expect(st, resp, side):
    out = []
    for path, want in st.expect.items():
        try:
            got = get_path(resp, path) if path != "." else resp
        except (KeyError, IndexError, TypeError):
            out.append("%s: %s: no field %s in %r" % (side, st.title(), path, resp))
            continue
        if callable(want):
            if not want(got):
                out.append("%s: %s: %s = %r does not satisfy the expectation"
                           % (side, st.title(), path, got))
        elif got != want:
            out.append("%s: %s: %s = %r, expected %r" % (side, st.title(), path, got, want))
    return out


def run_alone(steps, name, port, proto):
    """Run steps on one broker only (setup the other side already has); returns
    failure text or None."""
    side = Side(name, port, proto)
    side.run(steps)
    errs = [side.failure] if side.failure else []
    for st, resp in zip(steps, side.results):
        if resp is not None and st.expect:
            errs += check_expect(st, resp, name)
    return "\n".join(errs) or None


def run_scenario(sc, cohort_port, ref_name, ref_port, proto, accept_global=()):
    out = Outcome(sc, ref_name)
    t0 = time.monotonic()
    a = Side("cohortd", cohort_port, proto)
    b = Side(ref_name, ref_port, proto)
    threads = [threading.Thread(target=s.run, args=(sc.steps,)) for s in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.seconds = time.monotonic() - t0
    for s in (a, b):
        if s.failure:
            out.failures.append("%s failed at step %d:\n%s" % (s.name, len(s.results) + 1,
                                                               s.failure))
    errors = error_names(proto)
    na, nb = Normaliser(a), Normaliser(b)
    for i, st in enumerate(sc.steps):
        if i >= len(a.results) or i >= len(b.results):
            break
        ra, rb = a.results[i], b.results[i]
        for side, resp in (("cohortd", ra), (ref_name, rb)):
            if resp is not None and st.expect:
                out.failures += check_expect(st, resp, side)
        xa, xb = na.walk(ra), nb.walk(rb)   # normalise every step: ids in order of appearance
        if not st.compare:
            continue
        if st.keep:
            xa, xb = st.keep(xa), st.keep(xb)
        found = diff(xa, xb)
        real = []
        for path, va, vb in found:
            why = next((r for rx, r in st.accept + list(sc.accept) + list(accept_global)
                        if re.search(rx, "%s:%s" % (st.api or "", path))), None)
            if why:
                out.accepted.append((st.title(), path, why))
            else:
                real.append((path, va, vb))
        if real:
            head = "step %d: %s%s\n" % (i + 1, st.title(), " (%s)" % st.label if st.label else "")
            head += "".join("    %s: cohortd=%s  %s=%s\n" % (p, annotate(p, va, errors), ref_name,
                                                              annotate(p, vb, errors))
                            for p, va, vb in real)
            out.differences.append(head + side_by_side(xa, xb, ("cohortd", ref_name), errors,
                                                       [p for p, _, _ in real]))
    return out
