"""Bad input over raw sockets: malformed frames, absurd sizes, clients that vanish.

Every test does one bad thing to the broker, then checks that it still answers
ApiVersions and Metadata on a new connection. The class ends with SIGTERM and
exit code 0 (and, in a sanitizer build, no ASan/UBSan/LSan report).

Expected behaviour is Apache Kafka's: a frame that cannot be parsed (negative,
zero or oversized length, unknown api key, unsupported version of any API but
ApiVersions, malformed body) closes that connection; an unsupported ApiVersions
version is answered with ApiVersions v0, error UNSUPPORTED_VERSION (35) and the
supported ranges.
"""
import random
import resource
import socket
import struct
import time

import kwire
from harness import BrokerTestCase, main
from kwire import Conn, request, frame

MAX_BYTES = 1024 * 1024  # socket.request.max.bytes for this broker


def raise_nofile(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = want if hard == resource.RLIM_INFINITY else min(hard, want)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# Raised before the broker starts: cohortd inherits the limit.
NOFILE = raise_nofile(8192)


def rst_close(sock):
    """Close with a TCP RST instead of a FIN."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


class BadInput(BrokerTestCase):
    broker_settings = {"socket.request.max.bytes": str(MAX_BYTES)}

    def setUp(self):
        self.conn = Conn(self.broker.port)

    def tearDown(self):
        self.conn.close()
        # the point of every test: the server survived and serves new clients
        self.broker.assert_alive()

    def assertClosed(self, what, conn=None):
        self.assertTrue((conn or self.conn).wait_closed(10.0),
                        "server kept the connection open after %s (Kafka closes it)" % what)

    # -- framing
    def test_truncated_frame_then_close(self):
        req = request(kwire.API_METADATA, 1, 1, kwire.metadata_body(1))
        self.conn.send(req[: len(req) // 2])
        self.conn.close()

    def test_truncated_frame_size_then_close(self):
        self.conn.send(b"\x00\x00")
        self.conn.close()

    def test_frame_shorter_than_header(self):
        self.conn.send(frame(b"\x00\x12\x00"))  # 3 bytes: not even api_key+version
        self.assertClosed("a 3-byte frame")

    def test_negative_size(self):
        self.conn.send(struct.pack(">i", -1) + b"\x00" * 16)
        self.assertClosed("a frame size of -1")

    def test_most_negative_size(self):
        self.conn.send(struct.pack(">i", -2 ** 31))
        self.assertClosed("a frame size of -2^31")

    def test_zero_size(self):
        self.conn.send(struct.pack(">i", 0))
        self.assertClosed("a frame size of 0")

    def test_size_over_max_request_bytes(self):
        # only the length is sent: the server must not wait for 1 MiB + 1 bytes
        self.conn.send(struct.pack(">i", MAX_BYTES + 1))
        self.assertClosed("a frame size above socket.request.max.bytes")

    def test_size_int32_max(self):
        self.conn.send(struct.pack(">i", 2 ** 31 - 1) + b"\x00\x12\x00\x00")
        self.assertClosed("a frame size of 2^31-1")

    def test_request_just_under_max_is_read(self):
        # a valid-length frame below the limit is read in full and then judged
        # on its content (garbage api key): closed, not stuck, not crashed.
        body = b"\x7f\x00" + b"\x00" * (MAX_BYTES - 100)
        try:
            self.conn.send(frame(body))
        except OSError:
            return  # closed before the whole frame was sent: also fine
        self.assertClosed("a near-limit frame with an unknown api key")

    # -- header
    def test_unknown_api_key(self):
        self.conn.send(request(9999, 0, 7, b""))
        self.assertClosed("unknown api key 9999")

    def test_negative_api_key(self):
        self.conn.send(request(-1, 0, 7, b""))
        self.assertClosed("api key -1")

    def test_rejected_request_is_logged(self):
        self.conn.send(request(12345, 3, 7, b""))
        self.conn.wait_closed(10.0)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            lines = [l for l in self.broker.stderr().splitlines() if "12345" in l]
            if lines:
                self.assertTrue(any("127.0.0.1" in l for l in lines),
                                "the log line for the rejected request lacks the client "
                                "address: %r" % lines)
                return
            time.sleep(0.1)
        self.fail("no stderr line names the rejected api key 12345 (issue: one line for "
                  "every rejected request with client address, api key and version)")

    def test_unsupported_api_versions_version(self):
        for v in (5, 127, 32767):
            with self.subTest(version=v):
                c = Conn(self.broker.port)
                try:
                    # a newer client: header v2 and a v3+ style body
                    c.send(request(kwire.API_API_VERSIONS, v, 42, kwire.api_versions_body(3),
                                   header_version=2))
                    r = c.recv_response(42)  # response header v0
                    av = kwire.parse_api_versions(r, 0)  # body v0
                    self.assertEqual(av["error_code"], kwire.UNSUPPORTED_VERSION, av)
                    self.assertIn(kwire.API_API_VERSIONS, av["api_keys"],
                                  "the error response must carry ApiVersions' own range")
                    lo, hi = av["api_keys"][kwire.API_API_VERSIONS]
                    self.assertEqual(lo, 0)
                    self.assertGreaterEqual(hi, 3)
                    # Kafka keeps the connection: the client retries with a version it knows
                    av3 = kwire.api_versions(c, min(hi, 3))
                    self.assertEqual(av3["error_code"], 0)
                finally:
                    c.close()

    def test_unsupported_version_of_other_apis(self):
        for key, v in ((kwire.API_METADATA, 13), (kwire.API_METADATA, 32767),
                       (kwire.API_CREATE_TOPICS, 99), (kwire.API_DELETE_TOPICS, 7),
                       (kwire.API_METADATA, -1)):
            with self.subTest(api_key=key, version=v):
                c = Conn(self.broker.port)
                try:
                    c.send(request(key, v, 5, b"\x00" * 8, header_version=2))
                    self.assertClosed("api %d version %d" % (key, v), c)
                finally:
                    c.close()

    def test_null_client_id_is_accepted(self):
        w = kwire.Writer()
        w.int16(kwire.API_API_VERSIONS).int16(1).int32(9).int16(-1)
        self.conn.send(frame(w.bytes()))
        av = kwire.parse_api_versions(self.conn.recv_response(9), 1)
        self.assertEqual(av["error_code"], 0)

    # -- malformed bodies
    def test_metadata_huge_array_count(self):
        w = kwire.Writer()
        w.int32(0x7FFFFFF0)  # topics array count, no elements follow
        self.conn.send(request(kwire.API_METADATA, 1, 3, w.bytes()))
        self._closed_or_answered(3, "a Metadata v1 array count of 2^31-16 with no elements")

    def test_metadata_string_longer_than_frame(self):
        w = kwire.Writer()
        w.int32(1).int16(30000).raw(b"abc")
        self.conn.send(request(kwire.API_METADATA, 1, 3, w.bytes()))
        self._closed_or_answered(3, "a Metadata v1 string longer than its frame")

    def test_flexible_overlong_varint(self):
        # Metadata v12: compact array length as an 11-byte varint
        self.conn.send(request(kwire.API_METADATA, 12, 3, b"\xff" * 11 + b"\x01"))
        self._closed_or_answered(3, "an overlong unsigned varint")

    def test_flexible_header_bad_tagged_fields(self):
        # header v2 whose tagged-field section claims 1000 fields
        w = kwire.Writer()
        w.int16(kwire.API_METADATA).int16(12).int32(3).string("x")
        w.uvarint(1000).uvarint(0).uvarint(5000)
        self.conn.send(frame(w.bytes()))
        self._closed_or_answered(3, "a request header with a bogus tagged-field section")

    def test_tagged_field_limit(self):
        # Kafka 4.4 rejects a tagged-field section of more than 10,000 fields
        # before walking it; exactly 10,000 is read. ListGroups v3's body is
        # only its tagged-field section.
        def tags(n):
            w = kwire.Writer()
            w.uvarint(n)
            for i in range(n):
                w.uvarint(100 + i).uvarint(0)  # unknown tags, empty
            return w.bytes()
        self.conn.send(request(kwire.API_LIST_GROUPS, 3, 4, tags(10000)))
        data = self.conn.recv_frame()
        self.assertEqual(struct.unpack(">i", data[:4])[0], 4,
                         "ListGroups v3 with 10,000 tagged fields (Kafka's limit) not answered")
        self.conn.send(request(kwire.API_LIST_GROUPS, 3, 5, tags(10001)))
        self.assertClosed("a ListGroups v3 body with 10,001 tagged fields")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if "more array elements or tagged fields than Kafka accepts" in self.broker.stderr():
                return
            time.sleep(0.1)
        self.fail("the rejected request's log line does not say it broke the decoder limit")

    def test_trailing_bytes_after_body(self):
        self.conn.send(request(kwire.API_API_VERSIONS, 0, 3, b"\x00" * 3000))
        self._closed_or_answered(3, "an ApiVersions v0 request with 3000 trailing bytes")

    def test_topic_name_with_bad_utf8(self):
        w = kwire.Writer()
        w.int32(1).int16(4).raw(b"\xff\xfe\xc0\x00")
        self.conn.send(request(kwire.API_METADATA, 1, 3, w.bytes()))
        self._closed_or_answered(3, "a topic name of invalid UTF-8")

    def _closed_or_answered(self, corr, what):
        """Kafka closes on a parse error; an error response is acceptable too,
        but then it must be a well-formed response to this request. A server
        that does neither within the connection's timeout fails the test."""
        try:
            data = self.conn.recv_frame()
        except socket.timeout:
            self.fail("after %s the server neither answered nor closed the connection "
                      "within %.0f s" % (what, self.conn.timeout))
        except (ConnectionError, OSError):
            return
        except kwire.ProtocolError as e:
            self.fail("after %s: %s" % (what, e))
        got = struct.unpack(">i", data[:4])[0]
        self.assertEqual(got, corr, "after %s the server answered another correlation id" % what)

    def test_garbage_bytes(self):
        rnd = random.Random(20261129)
        for i in range(20):
            with self.subTest(seed=i):
                c = Conn(self.broker.port)
                try:
                    c.send(bytes(rnd.getrandbits(8) for _ in range(rnd.choice((7, 64, 4096)))))
                    c.wait_closed(0.3)
                except OSError:
                    pass
                finally:
                    c.close()

    def test_garbage_in_valid_frames(self):
        rnd = random.Random(7)
        for i in range(40):
            key = rnd.choice((kwire.API_METADATA, kwire.API_API_VERSIONS, kwire.API_CREATE_TOPICS,
                              kwire.API_DELETE_TOPICS, kwire.API_DESCRIBE_CONFIGS,
                              kwire.API_CREATE_PARTITIONS, kwire.API_DESCRIBE_CLUSTER))
            ver = rnd.randrange(0, 13)
            body = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 200)))
            with self.subTest(i=i, api_key=key, version=ver):
                c = Conn(self.broker.port)
                try:
                    c.send(request(key, ver, 77, body))
                    c.wait_closed(0.3)
                except OSError:
                    pass
                finally:
                    c.close()

    # -- disconnects
    def test_disconnect_mid_request_with_reset(self):
        req = request(kwire.API_METADATA, 12, 1, kwire.metadata_body(12))
        self.conn.send(req[:9])
        rst_close(self.conn.sock)

    def test_disconnect_before_reading_response(self):
        for v in (1, 12):
            c = Conn(self.broker.port)
            c.send(request(kwire.API_METADATA, v, 1, kwire.metadata_body(v)))
            c.close()
            c = Conn(self.broker.port)
            c.send(request(kwire.API_METADATA, v, 1, kwire.metadata_body(v)))
            rst_close(c.sock)

    def test_disconnect_mid_response(self):
        # Enough topics that the responses are large, a tiny receive buffer, and
        # hundreds of pipelined requests never read: the server is in the middle
        # of writing when the connection goes away.
        with Conn(self.broker.port) as c:
            names = ["bad-input-big-%03d-%s" % (i, "x" * 100) for i in range(60)]
            res = kwire.create_topics(c, [(n, 1, 1) for n in names])
            for n in names:
                self.assertIn(res["topics"][n]["error_code"],
                              (kwire.NONE, kwire.TOPIC_ALREADY_EXISTS))
        for closer in (lambda s: s.close(), rst_close):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.settimeout(15)
            s.connect(("127.0.0.1", self.broker.port))
            batch = b"".join(request(kwire.API_METADATA, 12, i, kwire.metadata_body(12))
                             for i in range(400))
            s.sendall(batch)
            time.sleep(0.2)  # let the server start answering; not a timing assertion
            closer(s)

    def test_half_close_after_request(self):
        # shutdown(SHUT_WR) after a complete request: Kafka still answers.
        self.conn.send(request(kwire.API_API_VERSIONS, 0, 11))
        self.conn.sock.shutdown(socket.SHUT_WR)
        # Answering, or closing without an answer (Kafka's selector closes a
        # channel at EOF), are both acceptable; hanging is not.
        self._closed_or_answered(11, "a complete request followed by a half-close")

    # -- one client's trouble is not another's
    def test_other_clients_served_while_one_is_stuck_mid_frame(self):
        req = request(kwire.API_METADATA, 12, 1, kwire.metadata_body(12))
        self.conn.send(req[:len(req) - 3])  # never completed
        with Conn(self.broker.port) as other:
            for _ in range(3):
                kwire.api_versions(other, 3)
                kwire.metadata(other, 12)
        self.conn.send(req[len(req) - 3:])  # completing it later still works
        kwire.parse_metadata(self.conn.recv_response(1, True), 12)

    def test_other_clients_served_while_one_never_reads(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(15)
        s.connect(("127.0.0.1", self.broker.port))
        self.addCleanup(s.close)
        with Conn(self.broker.port) as c:
            names = ["bad-input-slow-%03d-%s" % (i, "y" * 100) for i in range(40)]
            kwire.create_topics(c, [(n, 2, 1) for n in names])
        # far more response bytes than any socket buffer holds
        s.setblocking(False)
        batch = b"".join(request(kwire.API_METADATA, 12, i, kwire.metadata_body(12))
                         for i in range(3000))
        sent = 0
        try:
            while sent < len(batch):
                sent += s.send(batch[sent:])
        except BlockingIOError:
            pass  # the server stopped reading us: it is backpressuring, fine
        with Conn(self.broker.port) as other:
            for _ in range(3):
                kwire.api_versions(other, 0)
                kwire.metadata(other, 12, [])
        rst_close(s)

    # -- load on the connection layer
    def test_pipelined_requests_answered_in_order(self):
        reqs = []
        for corr in range(1, 201):
            if corr % 3 == 0:
                reqs.append(request(kwire.API_METADATA, 12, corr, kwire.metadata_body(12)))
            elif corr % 3 == 1:
                reqs.append(request(kwire.API_API_VERSIONS, 3, corr, kwire.api_versions_body(3)))
            else:
                reqs.append(request(kwire.API_METADATA, 1, corr, kwire.metadata_body(1, [])))
        self.conn.send(b"".join(reqs))
        for corr in range(1, 201):
            if corr % 3 == 0:
                kwire.parse_metadata(self.conn.recv_response(corr, True), 12)
            elif corr % 3 == 1:
                av = kwire.parse_api_versions(self.conn.recv_response(corr, False, True), 3)
                self.assertEqual(av["error_code"], 0)
            else:
                md = kwire.parse_metadata(self.conn.recv_response(corr), 1)
                self.assertEqual(md["topic_list"], [])

    def test_pipelined_writes_and_reads_keep_order_and_effect(self):
        # Kafka handles one request per connection at a time: a Metadata
        # pipelined right after a CreateTopics sees the topic, even when the
        # create goes to disk first.
        reqs, expect = [], []
        corr = 0
        for i in range(40):
            name = "pipe-%02d" % i
            steps = [
                (kwire.API_CREATE_TOPICS, 7, kwire.create_topics_body(7, [(name, 2, 1)]), ("created", name)),
                (kwire.API_METADATA, 12, kwire.metadata_body(12, [name], False), ("exists", name, 2)),
                (kwire.API_CREATE_PARTITIONS, 3, None, ("grown", name)),
                (kwire.API_METADATA, 1, kwire.metadata_body(1, [name]), ("exists", name, 3)),
                (kwire.API_DELETE_TOPICS, 6, kwire.delete_topics_body(6, [name]), ("deleted", name)),
                (kwire.API_METADATA, 12, kwire.metadata_body(12, [name], False), ("gone", name)),
            ]
            for key, ver, body, exp in steps:
                corr += 1
                if body is None:
                    w = kwire.Writer(True)
                    w.array_len(1).string(name).int32(3).array_len(None).tags()
                    w.int32(30000).bool(False).tags()
                    body = w.bytes()
                reqs.append(request(key, ver, corr, body))
                expect.append((corr, key, ver, exp))
        self.conn.send(b"".join(reqs))
        for corr, key, ver, exp in expect:
            flex = kwire.is_flexible(key, ver)
            r = self.conn.recv_response(corr, flex)
            if key == kwire.API_CREATE_TOPICS:
                res = kwire.parse_create_topics(r, ver)["topics"][exp[1]]
                self.assertEqual(res["error_code"], 0, (exp, res))
            elif key == kwire.API_DELETE_TOPICS:
                res = kwire.parse_delete_topics(r, ver)["results"][0]
                self.assertEqual(res["error_code"], 0, (exp, res))
            elif key == kwire.API_CREATE_PARTITIONS:
                r.int32()
                self.assertEqual(r.array_len(), 1)
                self.assertEqual(r.string(), exp[1])
                self.assertEqual(r.int16(), 0, exp)
            else:
                t = kwire.parse_metadata(r, ver)["topics"][exp[1]]
                if exp[0] == "exists":
                    self.assertEqual((t["error_code"], len(t["partitions"])), (0, exp[2]), exp)
                else:
                    self.assertEqual(t["error_code"], kwire.UNKNOWN_TOPIC_OR_PARTITION, exp)

    def test_request_sent_one_byte_at_a_time(self):
        req = request(kwire.API_METADATA, 12, 21, kwire.metadata_body(12))
        for i in range(len(req)):
            self.conn.send(req[i:i + 1])
            time.sleep(0.002)
        kwire.parse_metadata(self.conn.recv_response(21, True), 12)

    def test_many_concurrent_connections(self):
        n = 1000 if NOFILE >= 2200 else max(50, (NOFILE - 100) // 2)
        conns = []
        try:
            for _ in range(n):
                conns.append(Conn(self.broker.port, timeout=30))
            for i, c in enumerate(conns):
                c.send(request(kwire.API_API_VERSIONS, 3, i, kwire.api_versions_body(3)))
            for i, c in enumerate(conns):
                av = kwire.parse_api_versions(c.recv_response(i, False, True), 3)
                self.assertEqual(av["error_code"], 0)
            # a second round on the same connections, Metadata this time
            for i, c in enumerate(conns):
                c.send(request(kwire.API_METADATA, 1, 100000 + i, kwire.metadata_body(1, [])))
            for i, c in enumerate(conns):
                kwire.parse_metadata(c.recv_response(100000 + i), 1)
        finally:
            for i, c in enumerate(conns):
                if i % 2:
                    rst_close(c.sock)
                else:
                    c.close()


def valid_requests():
    """(label, api_key, version, body) for every version of every issue-2 API."""
    out = []
    for v in range(0, 5):
        out.append(("ApiVersions", kwire.API_API_VERSIONS, v, kwire.api_versions_body(v)))
    for v in range(0, 13):
        out.append(("Metadata", kwire.API_METADATA, v,
                    kwire.metadata_body(v, ["mut-a", "mut-b"], allow_auto=False)))
    for v in range(0, 8):
        out.append(("CreateTopics", kwire.API_CREATE_TOPICS, v, kwire.create_topics_body(
            v, [("mut-c", 2, 1, {"cleanup.policy": "compact"}), ("mut-d", 1, 1)],
            validate_only=v >= 1)))
    for v in range(0, 7):
        out.append(("DeleteTopics", kwire.API_DELETE_TOPICS, v,
                    kwire.delete_topics_body(v, ["mut-x", b"\x01" * 16] if v >= 6 else ["mut-x"])))
    for v in range(0, 4):
        w = kwire.Writer(v >= 2)
        w.array_len(1).string("mut-a").int32(3).array_len(1).array_len(1).int32(1).tags().tags()
        w.int32(1000).bool(True).tags()
        out.append(("CreatePartitions", kwire.API_CREATE_PARTITIONS, v, w.bytes()))
    for v in range(0, 5):
        w = kwire.Writer(v >= 4)
        w.array_len(2)
        w.int8(2).string("mut-a").array_len(1).string("cleanup.policy").tags()
        w.int8(4).string("1").array_len(None).tags()
        if v >= 1:
            w.bool(True)
        if v >= 3:
            w.bool(True)
        w.tags()
        out.append(("DescribeConfigs", kwire.API_DESCRIBE_CONFIGS, v, w.bytes()))
    for v in range(0, 2):
        w = kwire.Writer(True)
        w.bool(True)
        if v >= 1:
            w.int8(1)
        w.tags()
        out.append(("DescribeCluster", kwire.API_DESCRIBE_CLUSTER, v, w.bytes()))
    return out


class MutatedRequests(BrokerTestCase):
    """Every version of every API, truncated at every byte and mutated at
    random (fixed seeds), each followed by a valid ApiVersions request on the
    same connection: the server must close the connection or answer, in
    order, and never crash (ASan/UBSan-clean at the final SIGTERM)."""

    PROBE_CORR = 0x7EADBEEF

    def setUp(self):
        with Conn(self.broker.port) as c:
            kwire.create_topics(c, [("mut-a", 1, 1), ("mut-b", 2, 1)])

    def send_and_probe(self, payload, what, timeout=15.0):
        """payload: whole frame(s). Returns "closed", "answered" or "parked"
        (no answer within timeout: a request the broker may hold, e.g. Fetch)."""
        c = Conn(self.broker.port, timeout=timeout)
        try:
            try:
                c.send(payload + request(kwire.API_API_VERSIONS, 0, self.PROBE_CORR))
            except OSError:
                return "closed"
            while True:
                try:
                    data = c.recv_frame()
                except socket.timeout:
                    return "parked"
                except (ConnectionError, OSError):
                    return "closed"
                except kwire.ProtocolError as e:
                    self.fail("%s: %s" % (what, e))
                if struct.unpack(">i", data[:4])[0] == self.PROBE_CORR:
                    return "answered"
        finally:
            c.close()

    def test_truncated_at_every_byte(self):
        seen = {"closed": 0, "answered": 0}
        for label, key, ver, body in valid_requests():
            full = request(key, ver, 1, body)[4:]
            for cut in range(0, len(full)):
                r = self.send_and_probe(frame(full[:cut]), "%s v%d cut at %d" % (label, ver, cut))
                seen[r] += 1
            self.assertEqual(self.send_and_probe(frame(full), "%s v%d whole" % (label, ver)),
                             "answered", "%s v%d: the untruncated request was not answered"
                             % (label, ver))
        self.broker.assert_alive()
        self.assertGreater(seen["closed"], 0)

    def test_random_mutations(self):
        rnd = random.Random(424242)
        reqs = valid_requests()
        for i in range(5000):
            label, key, ver, body = rnd.choice(reqs)
            b = bytearray(request(key, ver, 1, body)[4:])
            kind = rnd.randrange(5)
            if kind == 0:  # flip bytes
                for _ in range(rnd.randrange(1, 4)):
                    b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
            elif kind == 1:  # a random byte value
                b[rnd.randrange(8, len(b)) if len(b) > 8 else 0] = rnd.randrange(256)
            elif kind == 2:  # a length-like field set to an extreme
                pos = rnd.randrange(8, max(9, len(b) - 1))
                val = rnd.choice((b"\xff\xff", b"\x7f\xff", b"\x80\x00", b"\xff\xff\xff\xff",
                                  b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff\x0f"))
                b[pos:pos + len(val)] = val
            elif kind == 3:  # junk inserted
                pos = rnd.randrange(len(b) + 1)
                b[pos:pos] = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 12)))
            else:  # bytes removed
                pos = rnd.randrange(len(b))
                del b[pos:pos + rnd.randrange(1, 6)]
            self.send_and_probe(frame(bytes(b)), "%s v%d mutation %d" % (label, ver, i))
        self.broker.assert_alive()


    def test_every_advertised_api_with_junk_bodies(self):
        """Whatever ApiVersions advertises (later issues add APIs): every
        version with an empty, a short and a random body is answered or the
        connection closed, never a crash."""
        with Conn(self.broker.port) as c:
            keys = kwire.api_versions(c, 0)["api_keys"]
        rnd = random.Random(99)
        outcomes = {}
        for key, (lo, hi) in sorted(keys.items()):
            for ver in range(lo, hi + 1):
                for size in (0, 1, 7, 64):
                    body = bytes(rnd.getrandbits(8) for _ in range(size))
                    r = self.send_and_probe(request(key, ver, 1, body),
                                            "api %d v%d body %d bytes" % (key, ver, size),
                                            timeout=3.0)
                    outcomes[r] = outcomes.get(r, 0) + 1
        self.broker.assert_alive()
        self.assertGreater(outcomes.get("closed", 0) + outcomes.get("answered", 0), 0, outcomes)


class ShutdownWithClients(BrokerTestCase):
    def test_sigterm_with_busy_clients_exits_0(self):
        b = self.new_broker(name="busy-shutdown")
        b.start()
        conns = [Conn(b.port) for _ in range(50)]
        try:
            req = request(kwire.API_METADATA, 12, 1, kwire.metadata_body(12))
            for i, c in enumerate(conns):
                if i % 3 == 0:
                    c.send(req[:7])  # mid-request
                elif i % 3 == 1:
                    c.send(req * 20)  # responses never read
                else:
                    kwire.api_versions(c, 3)  # idle after a request
            b.stop()  # SIGTERM: exit code 0, sanitizer-clean
        finally:
            for c in conns:
                c.close()


def metric(port, name):
    """One unlabelled sample of cohortd's /metrics, as a number."""
    import urllib.request
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    raise AssertionError("/metrics has no sample %s" % name)


class RequestMemory(BrokerTestCase):
    """queued.max.request.bytes: requests hold pool memory from their size
    prefix until answered; a connection whose next request does not fit is
    muted, not closed, and read again once memory frees (Kafka's non-strict
    pool: admitted while any memory is left)."""
    broker_settings = {"socket.request.max.bytes": str(MAX_BYTES),
                       "queued.max.request.bytes": str(2 * MAX_BYTES),
                       "admin.listeners": "http://127.0.0.1:0"}

    def wait_metric(self, name, want):
        deadline = time.monotonic() + 20
        while True:
            got = metric(self.broker.admin_port(), name)
            if got == want:
                return
            if time.monotonic() > deadline:
                self.fail("%s stayed %s, want %s" % (name, got, want))
            time.sleep(0.05)

    def test_muted_until_memory_frees(self):
        # ApiVersions v0 padded to exactly socket.request.max.bytes: trailing
        # bytes are ignored, so each is answered once all of it is in.
        def big(corr):
            head = request(kwire.API_API_VERSIONS, 0, corr)[4:]
            return frame(head + b"\0" * (MAX_BYTES - len(head)))
        a, b, c = Conn(self.broker.port), Conn(self.broker.port), Conn(self.broker.port)
        try:
            fa, fb = big(1), big(2)
            a.send(fa[:MAX_BYTES // 2])
            b.send(fb[:MAX_BYTES // 2])
            self.wait_metric("cohort_network_request_memory_bytes", 2 * MAX_BYTES)
            c.send(request(kwire.API_API_VERSIONS, 0, 3))  # 2 MiB held: c waits
            self.wait_metric("cohort_network_request_memory_waiting_connections", 1)
            a.send(fa[MAX_BYTES // 2:])
            self.assertEqual(struct.unpack(">i", a.recv_frame()[:4])[0], 1)
            # a's answer gave its megabyte back: c is read and answered
            self.assertEqual(struct.unpack(">i", c.recv_frame()[:4])[0], 3)
            self.wait_metric("cohort_network_request_memory_waiting_connections", 0)
            b.send(fb[MAX_BYTES // 2:])
            self.assertEqual(struct.unpack(">i", b.recv_frame()[:4])[0], 2)
            self.wait_metric("cohort_network_request_memory_bytes", 0)
        finally:
            for x in (a, b, c):
                x.close()
        self.broker.assert_alive()

    def test_closing_gives_memory_back(self):
        a = Conn(self.broker.port)
        a.send(struct.pack(">i", MAX_BYTES) + b"\0" * 1000)  # a frame that never ends
        self.wait_metric("cohort_network_request_memory_bytes", MAX_BYTES)
        rst_close(a.sock)
        self.wait_metric("cohort_network_request_memory_bytes", 0)
        self.broker.assert_alive()


class RequestReceiveTimeout(BrokerTestCase):
    """socket.request.receive.timeout.ms (cohort's, beyond Kafka): a request
    that has not all arrived in time since its first byte closes the
    connection however steadily it trickles; idle time between requests does
    not count."""
    broker_settings = {"socket.request.receive.timeout.ms": "1000"}

    def test_trickling_request_is_closed(self):
        idle = Conn(self.broker.port)
        kwire.api_versions(idle, 0)
        req = request(kwire.API_API_VERSIONS, 0, 5, b"\0" * 200)
        t = Conn(self.broker.port)
        t.send(req[:10])
        closed = False
        for i in range(10, 150):  # a byte every 50 ms: never idle, never done
            try:
                t.send(req[i:i + 1])
            except OSError:
                closed = True
                break
            if t.wait_closed(0.05):
                closed = True
                break
        self.assertTrue(closed, "a request trickling for 7 s outlived "
                        "socket.request.receive.timeout.ms=1000")
        self.assertIn("still incomplete", self.broker.stderr())
        # the connection idle between requests all along is still served
        kwire.api_versions(idle, 0)
        idle.close()
        t.close()
        self.broker.assert_alive()


def wait_log(broker, text, timeout=20):
    deadline = time.monotonic() + timeout
    while text not in broker.stderr():
        if time.monotonic() > deadline:
            raise AssertionError("cohortd never logged %r" % text)
        time.sleep(0.05)


class ConnectionLimits(BrokerTestCase):
    """max.connections.per.ip (with max.connections.per.ip.overrides for
    127.0.0.1): a connection over it is accepted and closed, with Kafka's
    log line."""
    broker_settings = {"max.connections.per.ip": "1",
                       "max.connections.per.ip.overrides": "127.0.0.1:3"}

    REJECTED = ("Rejected connection from /127.0.0.1, address already has the "
                "configured maximum of 3 connections.")

    def three_served(self):
        """Three connections, each answered: the override allows 3. A
        connection closed just before (the harness's readiness probe) is
        counted until cohortd's loop sees the close, so a set refused for
        that is closed and tried again."""
        deadline = time.monotonic() + 10
        while True:
            conns = [Conn(self.broker.port) for _ in range(3)]
            try:
                for c in conns:
                    kwire.api_versions(c, 0)
                return conns
            except (ConnectionError, OSError, kwire.ProtocolError):
                for c in conns:
                    c.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def test_per_ip_override(self):
        conns = self.three_served()
        try:
            before = self.broker.stderr().count(self.REJECTED)
            extra = Conn(self.broker.port)
            self.assertTrue(extra.wait_closed(10.0),
                            "a 4th connection from 127.0.0.1 was kept (override 3)")
            extra.close()
            deadline = time.monotonic() + 20
            while self.broker.stderr().count(self.REJECTED) <= before:
                self.assertLess(time.monotonic(), deadline,
                                "cohortd never logged %r for the 4th" % self.REJECTED)
                time.sleep(0.05)
        finally:
            for c in conns:
                c.close()
        # the three closes reach cohortd's loop a moment after close()
        # returns: until then a fourth connection is still one too many
        deadline = time.monotonic() + 10
        while True:
            try:
                with Conn(self.broker.port) as c:
                    kwire.api_versions(c, 0)
                break
            except (ConnectionError, OSError, kwire.ProtocolError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.broker.assert_alive()


class MaxConnections(BrokerTestCase):
    """max.connections: at the limit the listener waits (the kernel queues
    new connections, as Kafka's acceptor waits for a slot) and serves the
    next one when a connection closes."""
    broker_settings = {"max.connections": "3"}

    def test_waits_for_a_slot(self):
        conns = [Conn(self.broker.port) for _ in range(3)]
        late = None
        try:
            for c in conns:
                kwire.api_versions(c, 0)
            late = Conn(self.broker.port)  # the kernel's backlog takes it
            late.send(request(kwire.API_API_VERSIONS, 0, 9))
            wait_log(self.broker, "waits for a connection slot")
            conns.pop().close()  # a slot frees: the waiting one is served
            self.assertEqual(struct.unpack(">i", late.recv_frame()[:4])[0], 9)
        finally:
            for c in conns + ([late] if late else []):
                c.close()


class ConnectionCreationRate(BrokerTestCase):
    """max.connection.creation.rate: connections over the rate wait to be
    accepted; none is refused."""
    broker_settings = {"max.connection.creation.rate": "5",
                       "admin.listeners": "http://127.0.0.1:0"}

    def test_connections_over_the_rate_wait(self):
        conns = []
        try:
            for _ in range(12):  # a second's burst of 5, then 5/s
                conns.append(Conn(self.broker.port))
                conns[-1].send(request(kwire.API_API_VERSIONS, 0, 4))
            for c in conns:
                self.assertEqual(struct.unpack(">i", c.recv_frame()[:4])[0], 4)
            self.assertGreater(metric(self.broker.admin_port(),
                                      "cohort_connections_accept_waits_total"), 0,
                               "12 connections at once never waited for a rate of 5/s")
        finally:
            for c in conns:
                c.close()


class IdleConnections(BrokerTestCase):
    broker_settings = {"connections.max.idle.ms": "1000"}

    def test_idle_connection_is_reaped(self):
        with Conn(self.broker.port) as c:
            kwire.api_versions(c, 0)
            self.assertTrue(c.wait_closed(30.0),
                            "an idle connection outlived connections.max.idle.ms=1000 by 29s")
        self.broker.assert_alive()


if __name__ == "__main__":
    main()
