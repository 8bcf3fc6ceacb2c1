#!/usr/bin/env python3
"""Record the request frames real clients send, for golden tests and fuzz seeds.

    tools/capture_proxy.py LISTEN_PORT UPSTREAM_PORT OUT_DIR [LABEL]

A TCP proxy on 127.0.0.1: every client connection is forwarded to the
broker at 127.0.0.1:UPSTREAM_PORT, and each request frame (without its
4-byte size prefix) is written to OUT_DIR/<label>-<apikey>-v<version>-<n>.bin.
Stops on SIGTERM/SIGINT. Used by hand to refresh tests/golden/ and
tests/fuzz/corpus/; never by the test suite.
"""
import os
import selectors
import signal
import socket
import struct
import sys


def main():
    lport, uport, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    label = sys.argv[4] if len(sys.argv) > 4 else "client"
    os.makedirs(out, exist_ok=True)
    sel = selectors.DefaultSelector()
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", lport))
    ls.listen(64)
    sel.register(ls, selectors.EVENT_READ, None)
    pairs = {}
    inbuf = {}
    count = [0]
    running = [True]
    signal.signal(signal.SIGTERM, lambda *a: running.__setitem__(0, False))
    signal.signal(signal.SIGINT, lambda *a: running.__setitem__(0, False))

    def record(client):
        buf = inbuf[client]
        while len(buf) >= 4:
            (size,) = struct.unpack(">i", buf[:4])
            if size < 0 or len(buf) < 4 + size:
                break
            frame = bytes(buf[4:4 + size])
            del buf[:4 + size]
            if len(frame) >= 4:
                key, ver = struct.unpack(">hh", frame[:4])
                count[0] += 1
                name = f"{label}-{key}-v{ver}-{count[0]}.bin"
                with open(os.path.join(out, name), "wb") as f:
                    f.write(frame)

    while running[0]:
        for k, _ in sel.select(timeout=0.2):
            s = k.fileobj
            if s is ls:
                c, _ = ls.accept()
                u = socket.create_connection(("127.0.0.1", uport))
                pairs[c], pairs[u] = u, c
                inbuf[c] = bytearray()
                sel.register(c, selectors.EVENT_READ, "client")
                sel.register(u, selectors.EVENT_READ, "upstream")
                continue
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            peer = pairs.get(s)
            if not data:
                for x in (s, peer):
                    if x is not None:
                        try:
                            sel.unregister(x)
                        except (KeyError, ValueError):
                            pass
                        x.close()
                        pairs.pop(x, None)
                        inbuf.pop(x, None)
                continue
            if k.data == "client":
                inbuf[s] += data
                record(s)
            peer.sendall(data)


if __name__ == "__main__":
    main()
