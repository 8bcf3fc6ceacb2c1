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

`produce_answers` counts Produce answers seen from the broker, `dropped`
and `delayed` what was done to them. The broker must advertise the
proxy's address (advertised.listeners) so every connection comes here.
"""
import socket
import struct
import threading
import time

from version_proxy import VersionProxy

API_PRODUCE = 0


class FaultProxy:
    def __init__(self, upstream_port, port):
        self.upstream_port = upstream_port
        self.port = port
        self.drop_every = 0
        self.delay_every = 0
        self.delay_s = 0.0
        self.produce_answers = 0
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
        threading.Thread(target=self._accept, daemon=True).start()

    def stall(self):
        self._go.clear()

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
                self._go.wait()
                if self.closed:
                    return
                key, _version, _corr = struct.unpack(">hhi", req[:8])
                acks = None
                if up is None:
                    up = socket.create_connection(("127.0.0.1", self.upstream_port))
                up.sendall(struct.pack(">i", len(req)) + req)
                if key == API_PRODUCE:
                    acks = self._acks(req)
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
                client.sendall(struct.pack(">i", len(resp)) + resp)
        except OSError:
            return
        finally:
            client.close()
            if up is not None:
                up.close()

    @staticmethod
    def _acks(req):
        """The acks field of a Produce request (v3+: after the header and
        the transactional id)."""
        version = struct.unpack(">h", req[2:4])[0]
        (idlen,) = struct.unpack(">h", req[8:10])
        p = 10 + max(idlen, 0)
        if version >= 9:   # flexible: tagged fields after the header,
            p += 1          # none from libcohort; compact nullable string
            n = req[p]
            p += 1 + max(n - 1, 0)
        else:
            (tl,) = struct.unpack(">h", req[p:p + 2])
            p += 2 + max(tl, 0)
        return struct.unpack(">h", req[p:p + 2])[0]
