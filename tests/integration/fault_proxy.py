"""fault_proxy.py: a TCP proxy in front of a broker that loses Produce
answers on purpose, for testing a producer's retries (stdlib only).

Each client connection gets its own upstream connection; requests are
forwarded one at a time and their answers returned. Faults, set by the
test at any moment:

- drop_every = N: every Nth Produce answer is read from the broker (so the
  broker HAS appended the records) but never delivered: the proxy closes
  the client's connection instead, as a broker crash or a network cut
  right after the write would. A producer that retries without
  idempotence then writes those records twice.
- delay_every = N, delay_s: every Nth Produce answer is held delay_s
  seconds before it is delivered (past the client's request.timeout.ms:
  the client gives up and retries while the first try was written).
- stall(): hold every request until release() (the client's requests pile
  up in its own buffers: back-pressure).
- stall_connections(client_id): the connections of that client open now
  go silent for good: no request of theirs is forwarded nor answered any
  more (a hung peer or a dead path whose TCP stays up), so only the
  client's request.timeout.ms gets it out; its new connections work.
  `stalled_closed` counts those connections the client then closed.
- gap_next = True: the next Produce request's first record batch gets its
  base sequence moved 1000 ahead (CRC-32C recomputed), so the broker itself
  answers OUT_OF_ORDER_SEQUENCE_NUMBER for the batch it expected next, as
  when it lost the producer's state; `gaps` counts those done.
- not_leader_next = N: the next N Produce requests are not forwarded; the
  proxy answers each partition NOT_LEADER_OR_FOLLOWER itself (a leader
  that moved). `metadata_requests` counts the Metadata requests seen.

`produce_answers` counts Produce answers seen from the broker, `dropped`
and `delayed` what was done to them. The broker must advertise the
proxy's address (advertised.listeners) so every connection comes here.
"""
import socket
import struct
import threading
import time

from test_data_idempotent import crc32c   # record batches' CRC-32C
from version_proxy import VersionProxy

API_PRODUCE = 0
API_METADATA = 3
NOT_LEADER_OR_FOLLOWER = 6


def _uvarint(buf, p):
    """An unsigned varint at buf[p]: (value, offset after it)."""
    v = shift = 0
    while True:
        b = buf[p]
        p += 1
        v |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            return v, p


class FaultProxy:
    def __init__(self, upstream_port, port):
        self.upstream_port = upstream_port
        self.port = port
        self.drop_every = 0
        self.delay_every = 0
        self.delay_s = 0.0
        self.produce_answers = 0
        self.gap_next = False
        self.gaps = 0
        self.not_leader_next = 0
        self.not_leader_sent = 0
        self.metadata_requests = 0
        self.dropped = 0
        self.delayed = 0
        self.lock = threading.Lock()
        self._go = threading.Event()
        self._go.set()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(64)
        self.closed = False
        self._conns = []
        self._cids = {}         # client socket -> client id of its requests
        self._stalled = set()   # client sockets gone silent
        self.stalled_closed = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def stall(self):
        self._go.clear()

    def stall_connections(self, client_id):
        """The connections of client_id open now go silent; how many."""
        with self.lock:
            socks = {c for c, cid in self._cids.items() if cid == client_id}
            self._stalled |= socks
        return len(socks)

    def _silent(self, client):
        """Reads and drops client's requests until it closes the connection."""
        while self._read_frame(client) is not None:
            pass
        with self.lock:
            self.stalled_closed += 1

    def release(self):
        self._go.set()

    def close(self):
        self.closed = True
        self._go.set()
        self.sock.close()
        with self.lock:
            for s in self._conns:
                try:
                    s.close()
                except OSError:
                    pass

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self._conns.append(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    _read_frame = staticmethod(VersionProxy._read_frame)

    def _fault(self):
        """The fault for the Produce answer just read: None, "drop" or "delay"."""
        with self.lock:
            self.produce_answers += 1
            n = self.produce_answers
            if self.drop_every and n % self.drop_every == 0:
                self.dropped += 1
                return "drop"
            if self.delay_every and n % self.delay_every == 0:
                self.delayed += 1
                return "delay"
        return None

    def _serve(self, client):
        up = None
        try:
            while True:
                req = self._read_frame(client)
                if req is None:
                    return
                (idlen,) = struct.unpack(">h", req[8:10])
                with self.lock:
                    self._cids[client] = req[10:10 + max(idlen, 0)].decode("utf-8", "replace")
                    silent = client in self._stalled
                if silent:
                    return self._silent(client)
                self._go.wait()
                if self.closed:
                    return
                key, _version, _corr = struct.unpack(">hhi", req[:8])
                acks = None
                if up is None:
                    up = socket.create_connection(("127.0.0.1", self.upstream_port))
                if key == API_METADATA:
                    with self.lock:
                        self.metadata_requests += 1
                if key == API_PRODUCE:
                    with self.lock:
                        moved = self.not_leader_next > 0
                        if moved:
                            self.not_leader_next -= 1
                            self.not_leader_sent += 1
                    if moved:
                        client.sendall(self._not_leader(req))
                        continue
                    acks = self._acks(req)
                    with self.lock:
                        gap, self.gap_next = self.gap_next, False
                    if gap:
                        req = self._with_gap(req)
                        with self.lock:
                            self.gaps += 1
                up.sendall(struct.pack(">i", len(req)) + req)
                if acks == 0:
                    continue   # no answer comes
                resp = self._read_frame(up)
                if resp is None:
                    return
                fault = self._fault() if key == API_PRODUCE else None
                if fault == "drop":
                    return   # the client sees its connection close
                if fault == "delay":
                    time.sleep(self.delay_s)
                with self.lock:
                    silent = client in self._stalled
                if silent:   # stalled while the broker answered: never delivered
                    return self._silent(client)
                client.sendall(struct.pack(">i", len(resp)) + resp)
        except OSError:
            return
        finally:
            with self.lock:
                self._cids.pop(client, None)
                self._stalled.discard(client)
            client.close()
            if up is not None:
                up.close()

    @staticmethod
    def _produce_fields(req):
        """Offsets in a Produce request (v3+, as libcohort sends it): of
        acks, and of the first partition's records."""
        version = struct.unpack(">h", req[2:4])[0]
        flex = version >= 9
        (idlen,) = struct.unpack(">h", req[8:10])
        p = 10 + max(idlen, 0)

        def uvarint(p):
            return _uvarint(req, p)

        if flex:
            _, p = uvarint(p)               # header tagged fields (none)
            n, p = uvarint(p)               # compact nullable transactional id
            p += max(n - 1, 0)
        else:
            (tl,) = struct.unpack(">h", req[p:p + 2])
            p += 2 + max(tl, 0)
        acks_at = p
        p += 2 + 4                          # acks, timeout
        if flex:
            _, p = uvarint(p)               # topics
            n, p = uvarint(p)
            p += n - 1                      # name
            _, p = uvarint(p)               # partitions
            p += 4                          # index
            _, p = uvarint(p)               # records length
        else:
            p += 4
            (n,) = struct.unpack(">h", req[p:p + 2])
            p += 2 + n
            p += 4 + 4 + 4
        return acks_at, p

    @staticmethod
    def _not_leader(req):
        """A Produce answer (the request's version, v3+) giving every
        partition of the request NOT_LEADER_OR_FOLLOWER, framed."""
        version, corr = struct.unpack(">hi", req[2:8])
        flex = version >= 9
        (idlen,) = struct.unpack(">h", req[8:10])
        p = 10 + max(idlen, 0)

        def uvarint(p):
            return _uvarint(req, p)

        def count(p):   # array count, compact or not
            if flex:
                n, p = uvarint(p)
                return n - 1, p
            return struct.unpack(">i", req[p:p + 4])[0], p + 4

        def string(p):
            if flex:
                n, p = uvarint(p)
                return req[p:p + n - 1], p + n - 1
            (n,) = struct.unpack(">h", req[p:p + 2])
            return req[p + 2:p + 2 + max(n, 0)], p + 2 + max(n, 0)

        if flex:
            _, p = uvarint(p)               # header tagged fields
        _, p = string(p)                    # transactional id
        p += 6                              # acks, timeout
        topics = []
        nt, p = count(p)
        for _ in range(nt):
            name, p = string(p)
            parts = []
            np_, p = count(p)
            for _ in range(np_):
                (idx,) = struct.unpack(">i", req[p:p + 4])
                p += 4
                if flex:
                    n, p = uvarint(p)
                    p += max(n - 1, 0)
                    _, p = uvarint(p)       # partition tagged fields
                else:
                    (n,) = struct.unpack(">i", req[p:p + 4])
                    p += 4 + max(n, 0)
                parts.append(idx)
            if flex:
                _, p = uvarint(p)           # topic tagged fields
            topics.append((name, parts))

        def w_count(n):
            return bytes([n + 1]) if flex else struct.pack(">i", n)

        out = struct.pack(">i", corr) + (b"\0" if flex else b"")
        out += w_count(len(topics))
        for name, parts in topics:
            out += (bytes([len(name) + 1]) if flex else struct.pack(">h", len(name))) + name
            out += w_count(len(parts))
            for idx in parts:
                out += struct.pack(">ihq", idx, NOT_LEADER_OR_FOLLOWER, -1)
                out += struct.pack(">q", -1)                    # LogAppendTimeMs (v2+)
                if version >= 5:
                    out += struct.pack(">q", -1)                # LogStartOffset
                if version >= 8:                                # RecordErrors, ErrorMessage
                    out += (b"\x01\x00" if flex else struct.pack(">ih", 0, -1))
                if flex:
                    out += b"\0"
            if flex:
                out += b"\0"
        out += struct.pack(">i", 0)                             # ThrottleTimeMs
        if flex:
            out += b"\0"
        return struct.pack(">i", len(out)) + out

    @classmethod
    def _with_gap(cls, req):
        _, r = cls._produce_fields(req)
        (blen,) = struct.unpack(">i", req[r + 8:r + 12])
        (seq,) = struct.unpack(">i", req[r + 53:r + 57])
        b = bytearray(req)
        b[r + 53:r + 57] = struct.pack(">i", seq + 1000)
        b[r + 17:r + 21] = struct.pack(">I", crc32c(bytes(b[r + 21:r + 12 + blen])))
        return bytes(b)

    @classmethod
    def _acks(cls, req):
        p, _ = cls._produce_fields(req)
        return struct.unpack(">h", req[p:p + 2])[0]

