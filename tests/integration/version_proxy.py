"""version_proxy.py: a TCP proxy in front of a broker that plays an older
broker in ApiVersions, for testing a client's version negotiation.

It answers ApiVersions itself: at a version above its ApiVersions cap with
UNSUPPORTED_VERSION and a v0 body (what Kafka answers, KIP-511), otherwise
with the upstream broker's versions capped by `caps` {api_key: max}. Every
other request is forwarded as it is, and every request's (api key, version)
is recorded in `seen` as (client id, api key, version). Heartbeats (v1-v3)
can be answered with the errors queued in `inject` instead, and any API with
the answers queued in `answer[api_key]`: functions (version, correlation id,
request frame) -> response frame body, or None to forward that one (a
function instead of the list answers every request of that API); `rewrite`
{api_key: fn(response) -> response} changes what the broker answered,
`rewrite_request` {api_key: [fn(version, request) -> request]} the next
requests of that API before they are forwarded (one function each); and
requests of an API in `hold` {api_key: seconds} are answered that late. The broker must advertise the proxy's address
(advertised.listeners) so that the client's later connections come here too.
"""
import socket
import struct
import threading
import time

import kwire


class VersionProxy:
    def __init__(self, upstream_port, caps, port):
        self.upstream_port = upstream_port
        self.caps = dict(caps)
        self.port = port
        self.seen = []
        self.inject = []   # Heartbeat errors to answer instead of the broker, in order
        self.answer = {}   # api key -> [fn(version, corr, request) -> response body or None]
        self.hold = {}     # api key -> seconds to wait before answering
        self.rewrite = {}  # api key -> fn(response) -> response
        self.rewrite_request = {}  # api key -> [fn(version, request) -> request]
        self.lock = threading.Lock()
        with kwire.Conn(upstream_port) as c:
            self.versions = kwire.api_versions(c, 0)["api_keys"]
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(64)
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.closed = True
        self.sock.close()

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    @staticmethod
    def _read_frame(s):
        head = b""
        while len(head) < 4:
            chunk = s.recv(4 - len(head))
            if not chunk:
                return None
            head += chunk
        (n,) = struct.unpack(">i", head)
        body = b""
        while len(body) < n:
            chunk = s.recv(n - len(body))
            if not chunk:
                return None
            body += chunk
        return body

    def _api_versions(self, corr, version):
        cap = self.caps.get(kwire.API_API_VERSIONS, 0)
        err = 35 if version > cap else 0   # UNSUPPORTED_VERSION: a v0 body
        w = kwire.Writer(False)
        w.int32(corr).int16(err)
        keys = sorted(self.versions)
        w.array_len(len(keys))
        for k in keys:
            lo, hi = self.versions[k]
            w.int16(k).int16(lo).int16(min(hi, self.caps.get(k, hi)))
        if not err and version >= 1:
            w.int32(0)
        return kwire.frame(w.bytes())

    def _serve(self, client):
        up = None
        try:
            while True:
                req = self._read_frame(client)
                if req is None:
                    return
                key, version, corr = struct.unpack(">hhi", req[:8])
                (idlen,) = struct.unpack(">h", req[8:10])
                cid = req[10:10 + idlen].decode("utf-8", "replace") if idlen > 0 else ""
                with self.lock:
                    self.seen.append((cid, key, version))
                    hold = self.hold.get(key, 0)
                if hold:
                    time.sleep(hold)
                if key == kwire.API_API_VERSIONS:
                    client.sendall(self._api_versions(corr, version))
                    continue
                with self.lock:
                    err = self.inject.pop(0) if key == 12 and version <= 3 and self.inject else None
                if err is not None:   # Heartbeat v1-v3: throttle_time_ms, error_code
                    client.sendall(kwire.frame(struct.pack(">iih", corr, 0, err)))
                    continue
                with self.lock:
                    fns = self.answer.get(key)
                    fn = fns if callable(fns) else fns.pop(0) if fns else None
                    rewrite = self.rewrite.get(key)
                    queued = self.rewrite_request.get(key)
                    change = queued.pop(0) if queued else None
                if change:
                    req = change(version, req)
                body = fn(version, corr, req) if fn else None
                if body is not None:
                    client.sendall(kwire.frame(body))
                    continue
                if up is None:
                    up = socket.create_connection(("127.0.0.1", self.upstream_port))
                up.sendall(kwire.frame(req))
                resp = self._read_frame(up)
                if resp is None:
                    return
                if rewrite:
                    resp = rewrite(resp)
                client.sendall(kwire.frame(resp))
        except OSError:
            return
        finally:
            client.close()
            if up is not None:
                up.close()
