"""Transport and authentication (issue 14): several listeners with their
own security protocols and advertised addresses; SASL (PLAIN, SCRAM) over
raw requests with a SCRAM client written here (hashlib), so every error
Kafka gives is checked byte for byte. One cohortd for the SASL tests; every
listener on a free port."""
import base64
import hashlib
import hmac
import os
import socket
import struct
import tempfile
import unittest

import kwire
from harness import Broker, cohortd_path, free_port, main, run, start_clean, stop_clean


class Listeners(unittest.TestCase):
    """PLAINTEXT plus a second plaintext listener under its own name (mapped by
    listener.security.protocol.map) that advertises another address: each
    client is told the address of the listener it connected to."""

    @classmethod
    def setUpClass(cls):
        cls.port = free_port()
        cls.internal = free_port()
        cls.broker = start_clean(Broker(port=cls.port, name="Listeners", settings={
            "listeners": "PLAINTEXT://127.0.0.1:%d,INTERNAL://127.0.0.1:%d"
                         % (cls.port, cls.internal),
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
            "advertised.listeners": "INTERNAL://localhost:%d" % cls.internal,
        }))

    @classmethod
    def tearDownClass(cls):
        stop_clean(cls.broker)

    def test_metadata_per_listener(self):
        for port, host in ((self.port, "127.0.0.1"), (self.internal, "localhost")):
            with self.subTest(port=port), kwire.Conn(port) as c:
                md = kwire.metadata(c, version=9, topics=[])
                self.assertEqual([(b["host"], b["port"]) for b in md["brokers"]], [(host, port)])
                fc = kwire.find_coordinator(c, 4, ["g"])
                self.assertEqual((fc[0]["host"], fc[0]["port"]), (host, port))
                dc = kwire.describe_cluster(c)
                self.assertEqual([(b["host"], b["port"]) for b in dc["brokers"]], [(host, port)])


API_SASL_HANDSHAKE = 17
API_SASL_AUTHENTICATE = 36
GENERIC_SCRAM = ("Authentication failed during authentication due to invalid credentials "
                 "with SASL mechanism %s")
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_admin="admin-secret" '
              'user_bob="bob-secret";')


def sasl_handshake(conn, mechanism, version=1):
    w = kwire.Writer(False)
    w.string(mechanism)
    r = conn.call(API_SASL_HANDSHAKE, version, w.bytes())
    err = r.int16()
    mechs = [r.string() for _ in range(r.array_len())]
    return err, mechs


def sasl_authenticate(conn, token, version=1):
    """SaslAuthenticate v0/v1 (v2 is flexible): (error, message, bytes, lifetime)."""
    corr = conn.next_corr()
    flex = version >= 2
    w = kwire.Writer(flex)
    if flex:
        w.uvarint(len(token) + 1)
    else:
        w.int32(len(token))
    w.raw(token)
    w.tags()
    conn.send(kwire.request(API_SASL_AUTHENTICATE, version, corr, w.bytes(),
                            header_version=2 if flex else 1))
    r = conn.recv_response(corr, flexible_header=flex, flexible_body=flex)
    err = r.int16()
    msg = r.string(nullable=True)
    n = r.uvarint() - 1 if flex else r.int32()
    auth = r._take(n) if n > 0 else b""
    life = r.int64() if version >= 1 else None
    return err, msg, auth, life


class ScramClient:
    """RFC 5802's client side, enough to authenticate (or fail) on purpose."""

    def __init__(self, mech, user, password, nonce="fyko+d2lbbFgONRv9qkxdawL"):
        self.h = hashlib.sha512 if mech.endswith("512") else hashlib.sha256
        self.user, self.password, self.nonce = user, password, nonce

    def first(self):
        self.bare = "n=%s,r=%s" % (self.user.replace("=", "=3D").replace(",", "=2C"), self.nonce)
        return ("n,," + self.bare).encode()

    def final(self, server_first, nonce_suffix=""):
        sf = server_first.decode()
        attrs = dict(kv.split("=", 1) for kv in sf.split(","))
        salted = hashlib.pbkdf2_hmac(self.h().name, self.password.encode(),
                                     base64.b64decode(attrs["s"]), int(attrs["i"]))
        ck = hmac.new(salted, b"Client Key", self.h).digest()
        sk = self.h(ck).digest()
        without = "c=biws,r=%s%s" % (attrs["r"], nonce_suffix)
        auth = ",".join([self.bare, sf, without]).encode()
        sig = hmac.new(sk, auth, self.h).digest()
        proof = bytes(a ^ b for a, b in zip(ck, sig))
        self.server_sig = hmac.new(hmac.new(salted, b"Server Key", self.h).digest(), auth,
                                   self.h).digest()
        return ("%s,p=%s" % (without, base64.b64encode(proof).decode())).encode()


class Sasl(unittest.TestCase):
    """SASL_PLAINTEXT with PLAIN (users from the JAAS line) and SCRAM-SHA-256/512
    (alice added at startup with --add-scram, stored in the data dir)."""

    @classmethod
    def setUpClass(cls):
        cls.port = free_port()
        cls.sasl = free_port()
        cls.broker = start_clean(Broker(port=cls.port, name="Sasl", settings={
            "listeners": "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d"
                         % (cls.port, cls.sasl),
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms":
                "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            "connection.failed.authentication.delay.ms": "0",
        }, extra_args=["--add-scram", "SCRAM-SHA-512=[name=alice,password=alice-secret]",
                       "--add-scram", "SCRAM-SHA-256=[name=alice,iterations=8192,"
                                      "password=\"alice-256\"]"]))

    @classmethod
    def tearDownClass(cls):
        stop_clean(cls.broker)

    def scram(self, mech, user, password, version=1, nonce_suffix=""):
        """A connection that ran a SCRAM exchange: (conn, error, message)."""
        c = kwire.Conn(self.sasl)
        self.addCleanup(c.close)
        self.assertEqual(sasl_handshake(c, mech), (0, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]))
        cl = ScramClient(mech, user, password)
        err, msg, sf, _ = sasl_authenticate(c, cl.first(), version)
        if err:
            return c, err, msg
        self.assertTrue(sf.startswith(b"r=" + cl.nonce.encode()), sf)
        err, msg, fin, life = sasl_authenticate(c, cl.final(sf, nonce_suffix), version)
        if not err:
            self.assertEqual(fin, b"v=" + base64.b64encode(cl.server_sig))
            if version >= 1:
                self.assertEqual(life, 0)
        return c, err, msg

    def assert_usable(self, c):
        md = kwire.metadata(c, version=9, topics=[])
        self.assertEqual([(b["host"], b["port"]) for b in md["brokers"]], [("127.0.0.1", self.sasl)])

    def test_scram_ok(self):
        for mech, pw, v in (("SCRAM-SHA-512", "alice-secret", 1), ("SCRAM-SHA-256", "alice-256", 2),
                            ("SCRAM-SHA-512", "alice-secret", 0)):
            with self.subTest(mech=mech, version=v):
                c, err, msg = self.scram(mech, "alice", pw, v)
                self.assertEqual((err, msg), (0, ""))
                self.assert_usable(c)

    def test_scram_failures(self):
        """Wrong password, unknown user, a password for the other mechanism and
        a nonce the server did not send: SASL_AUTHENTICATION_FAILED (58) with
        Kafka's generic message, then the connection is closed."""
        cases = [("SCRAM-SHA-512", "alice", "wrong", ""),
                 ("SCRAM-SHA-512", "mallory", "x", ""),
                 ("SCRAM-SHA-256", "alice", "alice-secret", ""),
                 ("SCRAM-SHA-512", "alice", "alice-secret", "X")]
        for mech, user, pw, suffix in cases:
            with self.subTest(mech=mech, user=user, pw=pw, suffix=suffix):
                c, err, msg = self.scram(mech, user, pw, nonce_suffix=suffix)
                self.assertEqual((err, msg), (58, GENERIC_SCRAM % mech))
                self.assertTrue(c.wait_closed(10))
        self.broker.assert_alive()

    def plain(self, token, handshake_version=1):
        c = kwire.Conn(self.sasl)
        self.addCleanup(c.close)
        self.assertEqual(sasl_handshake(c, "PLAIN", handshake_version)[0], 0)
        return c

    def test_plain(self):
        c = self.plain(None)
        self.assertEqual(sasl_authenticate(c, b"\0bob\0bob-secret")[:2], (0, ""))
        self.assert_usable(c)
        for token, msg in ((b"\0bob\0nope", "Authentication failed: Invalid username or password"),
                           (b"\0eve\0bob-secret",
                            "Authentication failed: Invalid username or password"),
                           (b"bob-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
                           (b"admin\0bob\0bob-secret", "Authentication failed: Client requested "
                            "an authorization id that is different from username")):
            with self.subTest(token=token):
                c = self.plain(None)
                self.assertEqual(sasl_authenticate(c, token)[:2], (58, msg))
                self.assertTrue(c.wait_closed(10))

    def test_handshake_v0_raw_tokens(self):
        """SaslHandshake v0: the tokens that follow are bare size-prefixed frames
        (old clients); PLAIN answers an empty one, SCRAM its messages."""
        c = self.plain(None, handshake_version=0)
        c.send(kwire.frame(b"\0admin\0admin-secret"))
        self.assertEqual(struct.unpack(">i", c._recv_exact(4))[0], 0)
        self.assert_usable(c)
        c = kwire.Conn(self.sasl)
        self.addCleanup(c.close)
        self.assertEqual(sasl_handshake(c, "SCRAM-SHA-512", 0)[0], 0)
        cl = ScramClient("SCRAM-SHA-512", "alice", "alice-secret")
        c.send(kwire.frame(cl.first()))
        (n,) = struct.unpack(">i", c._recv_exact(4))
        sf = c._recv_exact(n)
        c.send(kwire.frame(cl.final(sf)))
        (n,) = struct.unpack(">i", c._recv_exact(4))
        self.assertEqual(c._recv_exact(n), b"v=" + base64.b64encode(cl.server_sig))
        self.assert_usable(c)
        # a wrong raw token: no header to answer in, Kafka closes
        c = self.plain(None, handshake_version=0)
        c.send(kwire.frame(b"\0admin\0wrong"))
        self.assertTrue(c.wait_closed(10))

    def test_before_authentication(self):
        """Only ApiVersions and the SASL requests before authentication: anything
        else closes the connection; frames are bounded by
        sasl.server.max.receive.size; a mechanism not enabled is refused."""
        with kwire.Conn(self.sasl) as c:
            kwire.api_versions(c, 3)
            c.send(kwire.request(kwire.API_METADATA, 1, 9, kwire.metadata_body(1, [])))
            self.assertTrue(c.wait_closed(10))
        with kwire.Conn(self.sasl) as c:
            self.assertEqual(sasl_handshake(c, "SCRAM-SHA-512")[0], 0)
            c.send(kwire.request(kwire.API_METADATA, 1, 9, kwire.metadata_body(1, [])))
            self.assertTrue(c.wait_closed(10))
        with kwire.Conn(self.sasl) as c:
            c.send(struct.pack(">i", 524289) + b"x" * 1024)
            self.assertTrue(c.wait_closed(10))
        with kwire.Conn(self.sasl) as c:
            self.assertEqual(sasl_handshake(c, "GSSAPI"),
                             (33, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]))
            self.assertTrue(c.wait_closed(10))
        with kwire.Conn(self.sasl) as c:  # SaslAuthenticate before any handshake
            c.send(kwire.request(API_SASL_AUTHENTICATE, 1, 3, struct.pack(">i", 0)))
            self.assertTrue(c.wait_closed(10))
        # the PLAINTEXT listener takes no SASL, and needs none
        with kwire.Conn(self.port) as c:
            self.assertEqual(sasl_handshake(c, "PLAIN"), (34, []))
            kwire.metadata(c, version=1, topics=[])
        self.broker.assert_alive()

    def test_credentials_survive_restart(self):
        """The SCRAM credentials are durable: after a restart without
        --add-scram alice still authenticates; the file holds no password."""
        self.broker.stop()
        self.broker.extra_args = []
        self.broker.start()
        c, err, msg = self.scram("SCRAM-SHA-512", "alice", "alice-secret")
        self.assertEqual(err, 0, msg)
        with open(os.path.join(self.broker.data_dir, "scram-credentials")) as f:
            text = f.read()
        self.assertNotIn("alice-secret", text)
        self.assertIn("SCRAM-SHA-256 8192", text)


class ListenerConfigErrors(unittest.TestCase):
    """Bad listener settings stop startup (exit 2) naming the key."""

    def test_rejected(self):
        tmp = tempfile.TemporaryDirectory(prefix="cohort-it-sec-")
        self.addCleanup(tmp.cleanup)
        port = free_port()
        base = ["--set", "log.dirs=%s" % os.path.join(tmp.name, "data"), "--set", "admin.listeners="]
        cases = [
            ({"listeners": "PLAINTEXT://127.0.0.1:%d,CLIENT://127.0.0.1:0" % port},
             "No security protocol defined for listener CLIENT"),
            ({"listeners": "PLAINTEXT://127.0.0.1:%d" % port,
              "listener.name.other.ssl.client.auth": "required"}, "listener.name.other"),
            ({"listeners": "PLAINTEXT://127.0.0.1:%d" % port,
              "listener.name.plaintext.ssl.client.auth": "sometimes"},
             "listener.name.plaintext.ssl.client.auth"),
            ({"listeners": "PLAINTEXT://127.0.0.1:%d" % port,
              "advertised.listeners": "SSL://h:1"}, "advertised.listeners"),
            ({"listeners": "SASL_PLAINTEXT://127.0.0.1:%d" % port,
              "sasl.enabled.mechanisms": "PLAIN"},
             "listener.name.sasl_plaintext.plain.sasl.jaas.config is not set"),
            ({"listeners": "SASL_PLAINTEXT://127.0.0.1:%d" % port,
              "sasl.enabled.mechanisms": "PLAIN",
              "listener.name.sasl_plaintext.plain.sasl.jaas.config": "PlainLoginModule;"},
             "invalid value for listener.name.sasl_plaintext.plain.sasl.jaas.config"),
            ({"listeners": "SASL_PLAINTEXT://127.0.0.1:%d" % port}, "sasl.enabled.mechanisms"),
        ]
        for settings, msg in cases:
            with self.subTest(settings=settings):
                argv = [cohortd_path()] + base
                for k, v in settings.items():
                    argv += ["--set", "%s=%s" % (k, v)]
                p = run(argv, timeout=30, cwd=tmp.name)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(msg, p.stderr)
        p = run([cohortd_path()] + base + ["--set", "listeners=PLAINTEXT://127.0.0.1:%d" % port,
                                           "--add-scram", "SCRAM-SHA-1=[name=a,password=b]"],
                timeout=30, cwd=tmp.name)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("The add-scram mechanism SCRAM-SHA-1 is not supported", p.stderr)


if __name__ == "__main__":
    main()
