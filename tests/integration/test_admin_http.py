"""The admin HTTP listener (admin.listeners, libmicrohttpd on cohortd's loop):
GET/HEAD only, 404 for unknown paths, malformed HTTP answered with an HTTP
error or a closed connection (never a 2xx, never a hang, never a crash), a
bind failure that stops startup naming the key, and hostile HTTP clients
that never disturb the Kafka listener (kafka-python produces and consumes
while garbage hammers the admin port)."""
import http.client
import os
import random
import socket
import tempfile
import threading
import time
import unittest

from harness import BrokerTestCase, cohortd_path, free_port, main, run

try:
    from kafka import KafkaConsumer, KafkaProducer
except ImportError:  # main() reports the skip
    pass

ADMIN = {"admin.listeners": "http://127.0.0.1:0", "num.partitions": "3"}


def get(port, path, method="GET", body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        c.request(method, path, body=body)
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        c.close()


def raw_exchange(port, data, wait=10.0, close_write=False):
    """Sends data on a fresh connection; returns what came back until the
    server closed (or b"" on a reset). Raises on a hang past wait seconds."""
    s = socket.create_connection(("127.0.0.1", port), timeout=wait)
    try:
        try:
            s.sendall(data)
            if close_write:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # the server answered (414, 431) and closed before all was sent
        out = b""
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                return out
            if not chunk:
                return out
            out += chunk
        raise AssertionError("server neither answered nor closed within %.0fs after %r"
                             % (wait, data[:60]))
    finally:
        s.close()


class AdminHttp(BrokerTestCase):
    broker_settings = ADMIN

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.port = cls.broker.admin_port()

    def tearDown(self):
        # after every test: the listener still serves, the broker still answers Kafka
        status, _, body = get(self.port, "/")
        self.assertEqual(status, 200, body)
        self.broker.assert_alive()

    def test_index_404_and_methods(self):
        status, hdr, body = get(self.port, "/")
        self.assertEqual(status, 200)
        self.assertIn(b"/metrics", body)
        status, _, body = get(self.port, "/no/such/page")
        self.assertEqual(status, 404)
        self.assertIn(b"/no/such/page", body)
        status, _, body = get(self.port, "/", method="HEAD")
        self.assertEqual((status, body), (200, b""))
        for m in ("POST", "PUT", "DELETE", "PATCH"):
            with self.subTest(method=m):
                status, hdr, _ = get(self.port, "/", method=m, body=b"x=1")
                self.assertEqual(status, 405)
                self.assertEqual(hdr.get("Allow"), "GET, HEAD")

    def test_malformed_requests(self):
        """Each gets a 4xx/5xx status line, or the connection is closed."""
        cases = {
            "no request line": b"GARBAGE\r\n\r\n",
            "binary": bytes(range(256)) * 4,
            "unknown version": b"GET / HTTP/9.9\r\nHost: a\r\n\r\n",
            "header without colon": b"GET / HTTP/1.1\r\nHost a\r\n\r\n",
            "uri too long": b"GET /" + b"a" * 200000 + b" HTTP/1.1\r\nHost: a\r\n\r\n",
            "header too big": b"GET / HTTP/1.1\r\nHost: a\r\nX: " + b"b" * 200000 + b"\r\n\r\n",
            "bad content-length": b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -5\r\n\r\n",
            "kafka frame": b"\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\x00\x00",
        }
        for what, data in cases.items():
            with self.subTest(what):
                out = raw_exchange(self.port, data, close_write=True)
                if out:
                    line = out.split(b"\r\n", 1)[0]
                    self.assertRegex(line, rb"^HTTP/1\.[01] [45]\d\d ",
                                     "%s: answered %r" % (what, out[:200]))

    def test_bind_failure_names_the_key(self):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen(1)
            port = taken.getsockname()[1]
            with tempfile.TemporaryDirectory(prefix="cohort-it-admin-") as tmp:
                p = run([cohortd_path(), "--set", "listeners=PLAINTEXT://127.0.0.1:%d" % free_port(),
                         "--set", "log.dirs=%s" % os.path.join(tmp, "data"),
                         "--set", "admin.listeners=http://127.0.0.1:%d" % port], timeout=60)
        self.assertNotEqual(p.returncode, 0, p.stderr)
        self.assertIn("admin.listeners", p.stderr)
        self.assertIn("already in use", p.stderr)

    def test_garbage_while_kafka_works(self):
        """Threads open connections to the admin port and send garbage, hold
        half-sent requests and vanish, while kafka-python produces 3000
        records and a consumer reads every one of them back."""
        stop = threading.Event()
        sent = [0]
        errors = []

        def hammer(seed):
            rnd = random.Random(seed)
            while not stop.is_set():
                try:
                    s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                    kind = rnd.randrange(4)
                    if kind == 0:
                        s.sendall(bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 4096))))
                    elif kind == 1:
                        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")  # never finished
                    elif kind == 2:
                        s.sendall(b"GET /" + b"%" * rnd.randrange(1, 3000) + b" HTTP/1.1\r\n\r\n")
                    else:
                        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
                        s.recv(4096)
                    sent[0] += 1
                    s.close()
                except OSError:
                    pass  # the listener may refuse past its connection limit: that is allowed
                except Exception as e:  # pragma: no cover - reported below
                    errors.append(e)

        threads = [threading.Thread(target=hammer, args=(i,), daemon=True) for i in range(4)]
        for t in threads:
            t.start()
        try:
            topic = "admin-hammer"
            prod = KafkaProducer(bootstrap_servers=self.broker.bootstrap, acks="all",
                                 request_timeout_ms=30000)
            want = set()
            for i in range(3000):
                v = b"v%d" % i
                want.add(v)
                prod.send(topic, v)
            prod.flush(60)
            prod.close()
            cons = KafkaConsumer(topic, bootstrap_servers=self.broker.bootstrap,
                                 auto_offset_reset="earliest", consumer_timeout_ms=20000,
                                 enable_auto_commit=False)
            got = set()
            deadline = time.monotonic() + 90
            while got != want and time.monotonic() < deadline:
                for rec in cons.poll(timeout_ms=1000, max_records=1000).values():
                    got.update(r.value for r in rec)
            cons.close()
            self.assertEqual(len(want - got), 0, "records not read back: %d" % len(want - got))
        finally:
            stop.set()
            for t in threads:
                t.join(30)
        self.assertFalse(errors, errors[:3])
        self.assertGreater(sent[0], 100, "the hammer hardly ran")


class AdminOff(unittest.TestCase):
    def test_empty_turns_it_off(self):
        """admin.listeners= binds nothing but the Kafka listener."""
        from harness import Broker
        b = Broker(settings={"admin.listeners": ""}, name="admin-off")
        self.addCleanup(b.cleanup)
        b.start()
        out = run(["ss", "-Hltnp"]).stdout
        mine = [l for l in out.splitlines() if "pid=%d," % b.proc.pid in l]
        self.assertEqual(len(mine), 1, "listening sockets of cohortd: %r" % mine)
        self.assertIn(":%d " % b.port, mine[0])
        self.assertNotIn("admin API", b.stderr())
        b.stop()


if __name__ == "__main__":
    main(requires_modules=("kafka",), requires_tools=("ss",))
