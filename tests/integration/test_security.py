"""Transport and authentication (issue 14): several listeners with their
own security protocols and advertised addresses; SASL (PLAIN, SCRAM) over
raw requests with a SCRAM client written here (hashlib), so every error
Kafka gives is checked byte for byte. One cohortd for the SASL tests; every
listener on a free port."""
import base64
import hashlib
import hmac
import json
import os
import shutil
import socket
import ssl
import struct
import subprocess
import tempfile
import time
import unittest

import kwire
from harness import Broker, cohortd_path, free_port, main, run, start_clean, stop_clean

HERE = os.path.dirname(os.path.abspath(__file__))


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
REAUTH_MS = 2000
# connection.failed.authentication.delay.ms of the Sasl broker: not 0, so
# every failure there goes through the delayed answer (Kafka's default: 100).
FAILED_AUTH_DELAY_MS = 300
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


def flex_call(conn, api_key, body):
    """A request of a flexible v0 API kwire does not know (header v2)."""
    corr = conn.next_corr()
    conn.send(kwire.request(api_key, 0, corr, body, header_version=2))
    return conn.recv_response(corr, flexible_header=True, flexible_body=True)


def describe_scram(conn, users):
    w = kwire.Writer(True)
    if users is None:
        w.array_len(None)
    else:
        w.array_len(len(users))
        for u in users:
            w.string(u).tags()
    w.tags()
    r = flex_call(conn, 50, w.bytes())
    r.int32()
    top = (r.int16(), r.string(nullable=True))
    out = []
    for _ in range(r.array_len()):
        user, err, msg = r.string(), r.int16(), r.string(nullable=True)
        infos = []
        for _ in range(r.array_len()):
            infos.append((r.int8(), r.int32()))
            r.tags()
        r.tags()
        out.append((user, err, msg, infos))
    r.tags()
    return top, out


def alter_scram(conn, deletions=(), upsertions=()):
    """deletions: [(user, mech type)]; upsertions: [(user, type, iterations, salt, salted)]."""
    w = kwire.Writer(True)
    w.array_len(len(deletions))
    for u, m in deletions:
        w.string(u).int8(m).tags()
    w.array_len(len(upsertions))
    for u, m, it, salt, salted in upsertions:
        w.string(u).int8(m).int32(it)
        w.uvarint(len(salt) + 1).raw(salt).uvarint(len(salted) + 1).raw(salted).tags()
    w.tags()
    r = flex_call(conn, 51, w.bytes())
    r.int32()
    out = []
    for _ in range(r.array_len()):
        out.append((r.string(), r.int16(), r.string(nullable=True)))
        r.tags()
    r.tags()
    return out


def salted(mech_type, password, salt, iterations):
    return hashlib.pbkdf2_hmac("sha256" if mech_type == 1 else "sha512", password.encode(), salt,
                               iterations)


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
        cls.reauth = free_port()
        cls.broker = start_clean(Broker(port=cls.port, name="Sasl", settings={
            "listeners": "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d,REAUTH://127.0.0.1:%d"
                         % (cls.port, cls.sasl, cls.reauth),
            "listener.security.protocol.map":
                "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,REAUTH:SASL_PLAINTEXT",
            "listener.name.reauth.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "listener.name.reauth.plain.sasl.jaas.config": PLAIN_JAAS,
            "listener.name.reauth.connections.max.reauth.ms": str(REAUTH_MS),
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms":
                "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            "connection.failed.authentication.delay.ms": str(FAILED_AUTH_DELAY_MS),
        }, extra_args=["--add-scram", "SCRAM-SHA-512=[name=alice,password=alice-secret]",
                       "--add-scram", "SCRAM-SHA-256=[name=alice,iterations=8192,"
                                      "password=\"alice-256\"]"]))

    @classmethod
    def tearDownClass(cls):
        stop_clean(cls.broker)

    def scram(self, mech, user, password, version=1, nonce_suffix="", conn=None,
              mechs=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"), life=0):
        """A connection that ran a SCRAM exchange (conn: again on that one):
        (conn, error, message)."""
        c = conn or kwire.Conn(self.sasl)
        self.addCleanup(c.close)
        self.assertEqual(sasl_handshake(c, mech), (0, list(mechs)))
        cl = ScramClient(mech, user, password)
        err, msg, sf, _ = sasl_authenticate(c, cl.first(), version)
        if err:
            return c, err, msg
        self.assertTrue(sf.startswith(b"r=" + cl.nonce.encode()), sf)
        err, msg, fin, got_life = sasl_authenticate(c, cl.final(sf, nonce_suffix), version)
        if not err:
            self.assertEqual(fin, b"v=" + base64.b64encode(cl.server_sig))
            if version >= 1:
                self.assertEqual(got_life, life)
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

    def test_failed_authentication_delay(self):
        """Kafka's order (Selector's delayed close): the answer to a failed
        authentication is held for connection.failed.authentication.delay.ms,
        then sent, then the connection closes; a request sent meanwhile is
        not read. A lower bound only: a loaded machine can only add time."""
        for version in (0, 1, 2):
            with self.subTest(version=version):
                c = self.plain(None)
                flex = version >= 2
                w = kwire.Writer(flex)
                token = b"\0bob\0nope"
                w.uvarint(len(token) + 1) if flex else w.int32(len(token))
                w.raw(token)
                w.tags()
                corr = c.next_corr()
                t0 = time.monotonic()
                c.send(kwire.request(API_SASL_AUTHENTICATE, version, corr, w.bytes(),
                                     header_version=2 if flex else 1))
                c.send(kwire.request(kwire.API_API_VERSIONS, 0, c.next_corr()))
                r = c.recv_response(corr, flexible_header=flex, flexible_body=flex)
                waited = time.monotonic() - t0
                self.assertEqual(r.int16(), 58)
                self.assertGreaterEqual(waited, FAILED_AUTH_DELAY_MS / 1000.0 * 0.95)
                c.sock.settimeout(10)
                try:
                    rest = c.sock.recv(4096)
                except ConnectionResetError:
                    rest = b""
                self.assertEqual(rest, b"", "the ApiVersions sent during the delay was answered")
        # the next client authenticates normally
        c = self.plain(None)
        self.assertEqual(sasl_authenticate(c, b"\0bob\0bob-secret")[:2], (0, ""))
        self.assert_usable(c)
        self.broker.assert_alive()

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

    def test_alter_describe_credentials(self):
        """DescribeUserScramCredentials / AlterUserScramCredentials (KIP-554)
        with Kafka's checks and messages; a user made through the API
        authenticates at once (and after a restart: next test)."""
        with kwire.Conn(self.port) as c:
            self.assertEqual(describe_scram(c, None), ((0, ""), [("alice", 0, "", [(1, 8192), (2, 4096)])]))
            salt = b"dave-salt-1234"
            res = alter_scram(c, deletions=[("alice", 1), ("nobody", 2), ("", 1)], upsertions=[
                ("dave", 2, 4096, salt, salted(2, "dave-pw", salt, 4096)),
                ("erin", 2, 1000, salt, b"x" * 64), ("fay", 2, 99999, salt, b"x" * 64),
                ("gus", 3, 4096, salt, b"x" * 64), ("alice", 2, 4096, salt, b"x" * 64)])
            # successes first, then the errors (Kafka's come in hash-map order)
            self.assertEqual(res[0], ("dave", 0, None))
            self.assertEqual(sorted(res[1:]), sorted([
                ("nobody", 91, "Attempt to delete a user credential that does not exist"),
                ("", 93, "Username must not be empty"),
                ("alice", 92, "A user credential cannot be altered twice in the same request"),
                ("erin", 93, "Too few iterations"), ("fay", 93, "Too many iterations"),
                ("gus", 33, "Unknown SCRAM mechanism")]))
            self.assertEqual(describe_scram(c, ["dave", "alice", "zed", "dave"])[1], [
                ("dave", 92, "Cannot describe SCRAM credentials for the same user twice in a "
                             "single request: dave", []),
                ("alice", 0, "", [(1, 8192), (2, 4096)]),
                ("zed", 91, "Attempt to describe a user credential that does not exist: zed", [])])
        c, err, msg = self.scram("SCRAM-SHA-512", "dave", "dave-pw")
        self.assertEqual((err, msg), (0, ""))
        self.assert_usable(c)
        with kwire.Conn(self.port) as c:
            self.assertEqual(alter_scram(c, deletions=[("dave", 2)]), [("dave", 0, None)])
            self.assertEqual(describe_scram(c, ["dave"])[1][0][1], 91)
            self.assertEqual(alter_scram(c, upsertions=[
                ("hal", 1, 4096, salt, salted(1, "hal-pw", salt, 4096))]), [("hal", 0, None)])
        c, err, msg = self.scram("SCRAM-SHA-512", "dave", "dave-pw")
        self.assertEqual((err, msg), (58, GENERIC_SCRAM % "SCRAM-SHA-512"))

    def test_reauthentication(self):
        """KIP-368 on REAUTH (connections.max.reauth.ms=2000): the lifetime is
        answered; a SaslHandshake on the authenticated connection starts again
        and the connection stays usable; another mechanism or another
        principal fail with Kafka's messages; after the lifetime any request
        but SaslHandshake closes the connection."""
        mechs = ("PLAIN", "SCRAM-SHA-512")
        c = kwire.Conn(self.reauth)
        self.addCleanup(c.close)
        c, err, msg = self.scram("SCRAM-SHA-512", "alice", "alice-secret", conn=c, mechs=mechs,
                                 life=REAUTH_MS)
        self.assertEqual(err, 0, msg)
        kwire.metadata(c, version=9, topics=[])
        c, err, msg = self.scram("SCRAM-SHA-512", "alice", "alice-secret", conn=c, mechs=mechs,
                                 life=REAUTH_MS)
        self.assertEqual(err, 0, msg)
        kwire.metadata(c, version=9, topics=[])
        self.assertEqual(sasl_handshake(c, "PLAIN"), (0, list(mechs)))
        self.assertEqual(sasl_authenticate(c, b"\0admin\0admin-secret")[:2], (58, (
            "SASL mechanism 'PLAIN' requested by client is not supported for re-authentication "
            "of mechanism 'SCRAM-SHA-512'")))
        self.assertTrue(c.wait_closed(10))
        p = kwire.Conn(self.reauth)
        self.addCleanup(p.close)
        self.assertEqual(sasl_handshake(p, "PLAIN")[0], 0)
        self.assertEqual(sasl_authenticate(p, b"\0admin\0admin-secret")[:2], (0, ""))
        self.assertEqual(sasl_handshake(p, "PLAIN")[0], 0)
        self.assertEqual(sasl_authenticate(p, b"\0bob\0bob-secret")[:2], (58, (
            "Cannot change principals during re-authentication from User.admin: User.bob")))
        self.assertTrue(p.wait_closed(10))
        # the session ends: a connection that does not re-authenticate is closed
        e = kwire.Conn(self.reauth)
        self.addCleanup(e.close)
        self.assertEqual(sasl_handshake(e, "PLAIN")[0], 0)
        self.assertEqual(sasl_authenticate(e, b"\0admin\0admin-secret"), (0, "", b"", REAUTH_MS))
        deadline = time.monotonic() + 30
        closed = False
        while not closed and time.monotonic() < deadline:
            try:
                kwire.metadata(e, version=9, topics=[])
                time.sleep(0.1)
            except (ConnectionError, OSError):
                closed = True
        self.assertTrue(closed)
        self.assertIn("User:admin session expired", self.broker.stderr())

    def test_cli_users(self):
        """cohort users set / list / delete: the CLI salts and hashes, the user
        authenticates, list shows it, delete removes it; errors exit non-zero
        with the broker's message."""
        cli = os.environ.get("COHORT_CLI")
        self.assertTrue(cli, "COHORT_CLI is not set")
        b = ["--bootstrap-server", "127.0.0.1:%d" % self.port]
        p = run([cli, "users", "set", "ivy", "--password", "ivy-pw", "--iterations", "5000"] + b)
        self.assertEqual((p.returncode, p.stdout), (0, "Set SCRAM-SHA-512 credential of user ivy.\n"),
                         p.stderr)
        c, err, msg = self.scram("SCRAM-SHA-512", "ivy", "ivy-pw")
        self.assertEqual((err, msg), (0, ""))
        p = run([cli, "users", "list", "ivy"] + b)
        self.assertEqual([l.split() for l in p.stdout.splitlines()],
                         [["USER", "MECHANISM", "ITERATIONS"], ["ivy", "SCRAM-SHA-512", "5000"]])
        p = run([cli, "users", "delete", "ivy"] + b)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = run([cli, "users", "delete", "ivy"] + b)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("Attempt to delete a user credential that does not exist", p.stderr)
        c, err, msg = self.scram("SCRAM-SHA-512", "ivy", "ivy-pw")
        self.assertEqual(err, 58)

    def test_credentials_survive_restart(self):
        """The SCRAM credentials are durable: after a restart without
        --add-scram alice still authenticates, and hal (AlterUserScramCredentials
        in the test before) too; the file holds no password."""
        self.broker.stop()
        self.broker.extra_args = []
        self.broker.start()
        c, err, msg = self.scram("SCRAM-SHA-512", "alice", "alice-secret")
        self.assertEqual(err, 0, msg)
        c, err, msg = self.scram("SCRAM-SHA-256", "hal", "hal-pw")
        self.assertEqual(err, 0, msg)
        with open(os.path.join(self.broker.data_dir, "scram-credentials")) as f:
            text = f.read()
        self.assertNotIn("alice-secret", text)
        self.assertIn("SCRAM-SHA-256 8192", text)


def make_certs(d):
    """A CA, a server certificate for localhost / 127.0.0.1, a client one for
    CN=alice,O=cohort, one for CN=bob,OU=ServiceUsers and an expired one,
    all EC P-256, made with the openssl CLI in d (never committed)."""
    def sh(*argv):
        subprocess.run(argv, cwd=d, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    sh("openssl", "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
       "-subj", "/CN=cohort-test-ca")
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    for name, subj in (("server", "/CN=localhost"), ("client", "/C=US/O=cohort/CN=alice"),
                       ("bob", "/O=cohort/OU=ServiceUsers/CN=bob")):
        sh("openssl", "req", *ec, "-keyout", name + ".key", "-out", name + ".csr", "-subj", subj)
        extra = ["-extfile", "san.ext"] if name == "server" else []
        sh("openssl", "x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
           "-CAcreateserial", "-out", name + ".pem", "-days", "2", *extra)
        with open(os.path.join(d, name + "-keystore.pem"), "w") as out:
            for part in (name + ".key", name + ".pem"):
                with open(os.path.join(d, part)) as f:
                    out.write(f.read())
    os.makedirs(os.path.join(d, "ca-db"))
    open(os.path.join(d, "ca-db", "index.txt"), "w").close()
    with open(os.path.join(d, "ca-db", "serial"), "w") as f:
        f.write("1000\n")
    with open(os.path.join(d, "ca.cnf"), "w") as f:
        f.write("[ca]\ndefault_ca=c\n[c]\ndatabase=ca-db/index.txt\nserial=ca-db/serial\n"
                "new_certs_dir=ca-db\ndefault_md=sha256\npolicy=p\n[p]\ncommonName=supplied\n")
    sh("openssl", "req", *ec, "-keyout", "expired.key", "-out", "expired.csr", "-subj", "/CN=old")
    sh("openssl", "ca", "-batch", "-config", "ca.cnf", "-cert", "ca.pem", "-keyfile", "ca.key",
       "-in", "expired.csr", "-out", "expired.pem", "-startdate", "20200101000000Z",
       "-enddate", "20200102000000Z", "-notext")
    # the server's key encrypted (PKCS#8), for the inline listener with ssl.key.password
    sh("openssl", "pkcs8", "-topk8", "-in", "server.key", "-out", "server-enc.key",
       "-passout", "pass:key-pw")


class TlsConn(kwire.Conn):
    """kwire.Conn over TLS (Python's ssl module)."""

    def __init__(self, port, ctx, timeout=15.0):
        raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock = ctx.wrap_socket(raw, server_hostname="localhost")
        self.timeout = timeout
        self.corr = 0


class Tls(unittest.TestCase):
    """SSL with required client certificates, SASL_SSL with SCRAM-SHA-512, and
    a TLS 1.2-only SSL listener that requests certificates and maps subjects
    with ssl.principal.mapping.rules. Real clients (librdkafka through
    confluent-kafka, kafka-python, kafkajs, the Java client) run a consumer
    group with commits over both; the failures Kafka gives are checked."""

    N = 10

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cohort-it-tls-")
        make_certs(cls.tmp)
        cls.port, cls.ssl_port, cls.sasl_port, cls.req_port, cls.inline_port = (
            free_port() for _ in range(5))
        c = lambda n: os.path.join(cls.tmp, n)
        cls.ca = c("ca.pem")
        def pem(n):
            with open(c(n)) as f:
                return f.read()
        cls.broker = start_clean(Broker(port=cls.port, name="Tls", settings={
            "listeners": "PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d,"
                         "REQ://127.0.0.1:%d,INLINE://127.0.0.1:%d"
                         % (cls.port, cls.ssl_port, cls.sasl_port, cls.req_port, cls.inline_port),
            "listener.security.protocol.map":
                "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,REQ:SSL,INLINE:SSL",
            # INLINE: the PEM stores inline, the key encrypted
            "listener.name.inline.ssl.keystore.certificate.chain": pem("server.pem"),
            "listener.name.inline.ssl.keystore.key": pem("server-enc.key"),
            "listener.name.inline.ssl.key.password": "key-pw",
            "listener.name.inline.ssl.truststore.certificates": pem("ca.pem"),
            "listener.name.inline.ssl.client.auth": "required",
            "ssl.keystore.type": "PEM",
            "ssl.truststore.type": "PEM",
            **{"listener.name.%s.ssl.keystore.location" % l: c("server-keystore.pem")
               for l in ("ssl", "sasl_ssl", "req")},
            **{"listener.name.%s.ssl.truststore.location" % l: cls.ca
               for l in ("ssl", "sasl_ssl", "req")},
            "listener.name.ssl.ssl.client.auth": "required",
            "listener.name.req.ssl.client.auth": "requested",
            "listener.name.req.ssl.enabled.protocols": "TLSv1.2",
            "listener.name.req.ssl.principal.mapping.rules":
                "RULE:^CN=([a-z]*),OU=ServiceUsers,.*$/svc-$1/U,DEFAULT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "connection.failed.authentication.delay.ms": "0",
            "group.initial.rebalance.delay.ms": "0",
            "log.level": "debug",
        }, extra_args=["--add-scram", "SCRAM-SHA-512=[name=alice,password=alice-secret]"]))

    @classmethod
    def tearDownClass(cls):
        stop_clean(cls.broker)
        shutil.rmtree(cls.tmp, True)

    def ctx(self, cert=None, tls12=False):
        ctx = ssl.create_default_context(cafile=self.ca)
        if cert:
            ctx.load_cert_chain(os.path.join(self.tmp, cert + ".pem"),
                                os.path.join(self.tmp, cert + ".key"))
        if tls12:
            ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        return ctx

    def produce(self, topic, size=0):
        """N messages "m<i>", padded with x to SIZE bytes (a fetch of many TLS records)."""
        p = subprocess.run(["kcat", "-b", self.broker.bootstrap, "-P", "-t", topic],
                           input="".join(("m%d" % i).ljust(size, "x") + "\n" for i in range(self.N)),
                           text=True, capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)

    def committed(self, group, topic):
        with kwire.Conn(self.port) as c:
            return kwire.offset_fetch(c, 5, group, {topic: [0]})[(topic, 0)][0]

    # -- the clients, one group each: consume N, commit, the broker has N
    def run_client(self, name, mode, fn, size=0):
        topic, group = "sec-%s-%s" % (name, mode), "g-%s-%s" % (name, mode)
        self.produce(topic, size)
        fn(topic, group)
        self.assertEqual(self.committed(group, topic), self.N)

    def rdkafka_conf(self, mode):
        if mode == "sasl":
            return {"bootstrap.servers": "127.0.0.1:%d" % self.sasl_port,
                    "security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512",
                    "sasl.username": "alice", "sasl.password": "alice-secret",
                    "ssl.ca.location": self.ca}
        return {"bootstrap.servers": "127.0.0.1:%d" % self.ssl_port, "security.protocol": "SSL",
                "ssl.ca.location": self.ca,
                "ssl.certificate.location": os.path.join(self.tmp, "client.pem"),
                "ssl.key.location": os.path.join(self.tmp, "client.key")}

    def test_confluent_kafka(self):
        import confluent_kafka

        def go(mode, topic, group):
            conf = dict(self.rdkafka_conf(mode), **{
                "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                "session.timeout.ms": 6000})
            c = confluent_kafka.Consumer(conf)
            c.subscribe([topic])
            got = []
            for _ in range(600):
                m = c.poll(0.1)
                if m is not None and not m.error():
                    got.append(m)
                if len(got) == self.N:
                    break
            self.assertEqual(len(got), self.N)
            if mode == "ssl":  # 10 x 300 KB: responses cut into many TLS records
                self.assertEqual([len(m.value()) for m in got], [300000] * self.N)
                self.assertEqual(got[7].value()[:2], b"m7")
            c.commit(asynchronous=False)
            c.close()

        for mode in ("sasl", "ssl"):
            with self.subTest(mode=mode):
                self.run_client("confluent", mode, lambda t, g: go(mode, t, g),
                                size=300000 if mode == "ssl" else 0)

    def test_kcat(self):
        """kcat (Debian's, on librdkafka's C API) as a balanced consumer (-G):
        reads N and commits them when it closes."""
        def go(mode, topic, group):
            conf = dict(self.rdkafka_conf(mode), **{"auto.offset.reset": "earliest",
                                                     "session.timeout.ms": "6000"})
            args = ["kcat", "-q", "-c", str(self.N), "-G", group, topic]
            for k, v in conf.items():
                args[1:1] = ["-X", "%s=%s" % (k, v)]
            p = subprocess.run(args, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.split(), ["m%d" % i for i in range(self.N)])

        for mode in ("sasl", "ssl"):
            with self.subTest(mode=mode):
                self.run_client("kcat", mode, lambda t, g: go(mode, t, g))

    def test_confluent_kafka_pypi(self):
        """confluent-kafka 2.x from PyPI (the project venv, its own bundled
        librdkafka) runs the same consumer as test_confluent_kafka."""
        from client_scenarios import VENV_PYTHON
        script = (
            "import json, sys\n"
            "from confluent_kafka import Consumer\n"
            "conf, topic, n = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])\n"
            "c = Consumer(conf)\n"
            "c.subscribe([topic])\n"
            "got = []\n"
            "for _ in range(600):\n"
            "    m = c.poll(0.1)\n"
            "    if m is not None and not m.error():\n"
            "        got.append(m.value().decode())\n"
            "    if len(got) == n:\n"
            "        break\n"
            "c.commit(asynchronous=False)\n"
            "c.close()\n"
            "print(' '.join(got))\n")

        def go(mode, topic, group):
            conf = dict(self.rdkafka_conf(mode), **{
                "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False,
                "session.timeout.ms": 6000})
            p = subprocess.run([VENV_PYTHON, "-c", script, json.dumps(conf), topic, str(self.N)],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.split(), ["m%d" % i for i in range(self.N)])

        for mode in ("sasl", "ssl"):
            with self.subTest(mode=mode):
                self.run_client("confluent-pypi", mode, lambda t, g: go(mode, t, g))

    def test_kafka_python(self):
        import kafka

        def go(mode, topic, group):
            kw = {"bootstrap_servers": "127.0.0.1:%d" % (self.sasl_port if mode == "sasl" else self.ssl_port),
                  "group_id": group, "auto_offset_reset": "earliest", "enable_auto_commit": False,
                  "ssl_cafile": self.ca, "consumer_timeout_ms": 30000, "api_version_auto_timeout_ms": 10000}
            if mode == "sasl":
                kw.update(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
                          sasl_plain_username="alice", sasl_plain_password="alice-secret")
            else:
                kw.update(security_protocol="SSL", ssl_certfile=os.path.join(self.tmp, "client.pem"),
                          ssl_keyfile=os.path.join(self.tmp, "client.key"))
            c = kafka.KafkaConsumer(topic, **kw)
            got = []
            for m in c:
                got.append(m)
                if len(got) == self.N:
                    break
            self.assertEqual(len(got), self.N)
            c.commit()
            c.close()

        for mode in ("sasl", "ssl"):
            with self.subTest(mode=mode):
                self.run_client("kafkapython", mode, lambda t, g: go(mode, t, g))

    def kafkajs(self, mode, *args):
        p = run(["node", os.path.join(HERE, "js", "security_test.js")] + [str(a) for a in args],
                timeout=120)
        lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
        self.assertTrue(lines, p.stdout + p.stderr)
        return json.loads(lines[-1])

    def test_kafkajs(self):
        if not os.path.isdir(os.path.join(HERE, "node_modules", "kafkajs")):
            self.fail("kafkajs is not installed in tests/integration/node_modules "
                      "(tools/install-deps.sh test installs it)")
        for mode in ("sasl", "ssl"):
            with self.subTest(mode=mode):
                def go(topic, group):
                    if mode == "sasl":
                        who = ("alice", "alice-secret")
                        port = self.sasl_port
                    else:
                        who = (os.path.join(self.tmp, "client.pem"), os.path.join(self.tmp, "client.key"))
                        port = self.ssl_port
                    r = self.kafkajs(mode, "localhost:%d" % port, mode, self.ca, *who, topic, group, self.N)
                    self.assertEqual(r, {"consumed": self.N, "committed": str(self.N)})
                self.run_client("kafkajs", mode, go)
        r = self.kafkajs("sasl-fail", "localhost:%d" % self.sasl_port, "sasl-fail", self.ca, "alice",
                         "nope", "t", "g", 1)
        self.assertEqual(r["error"], "KafkaJSSASLAuthenticationError: SASL SCRAM SHA512 "
                         "authentication failed: " + GENERIC_SCRAM % "SCRAM-SHA-512")

    def test_java(self):
        import java_clients
        java_clients.check_installed()
        for mode in ("sasl", "ssl"):
            with self.subTest(mode=mode):
                if mode == "sasl":
                    props = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                             "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
                                                 "required username=\"alice\" password=\"alice-secret\";"}
                    port = self.sasl_port
                else:
                    props = {"security.protocol": "SSL", "ssl.keystore.type": "PEM",
                             "ssl.keystore.location": os.path.join(self.tmp, "client-keystore.pem")}
                    port = self.ssl_port
                props.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": self.ca})

                def go(topic, group):
                    jc = java_clients.JavaConsumer("127.0.0.1:%d" % port, group, [topic], props=props)
                    try:
                        jc.wait(lambda e: e.get("ev") == "msg" and len(jc.consumed()) >= self.N, 90,
                                "%d messages" % self.N)
                        jc.send("commit")
                        jc.wait(lambda e: e.get("ev") == "commit", 60, "commit")
                        self.assertEqual(jc.close(), 0)
                    finally:
                        jc.kill()
                self.run_client("java", mode, go)

    # -- what fails, and how
    def test_scram_failures_over_tls(self):
        for user, pw in (("alice", "wrong"), ("nobody", "x")):
            with self.subTest(user=user):
                c = TlsConn(self.sasl_port, self.ctx())
                self.addCleanup(c.close)
                self.assertEqual(sasl_handshake(c, "SCRAM-SHA-512"), (0, ["SCRAM-SHA-512"]))
                cl = ScramClient("SCRAM-SHA-512", user, pw)
                err, msg, sf, _ = sasl_authenticate(c, cl.first())
                if not err:
                    err, msg, _, _ = sasl_authenticate(c, cl.final(sf))
                self.assertEqual((err, msg), (58, GENERIC_SCRAM % "SCRAM-SHA-512"))
                self.assertTrue(c.wait_closed(10))
        self.broker.assert_alive()

    def test_certificates(self):
        """The SSL listener requires a valid certificate: an expired one and none
        at all fail the handshake with TLS's alerts (certificate_expired,
        certificate_required), as with Kafka; a good one works."""
        for cert, alert in (("expired", "CERTIFICATE_EXPIRED"), (None, "CERTIFICATE_REQUIRED")):
            with self.subTest(cert=cert):
                with self.assertRaises(ssl.SSLError) as cm:
                    c = TlsConn(self.ssl_port, self.ctx(cert))
                    self.addCleanup(c.close)
                    # TLS 1.3: the alert comes after the client's Finished. Read,
                    # not write: data sent to a closed socket would have the
                    # kernel reset the connection and drop the alert unread.
                    c.sock.recv(1)
                self.assertIn(alert, str(cm.exception))
        with TlsConn(self.ssl_port, self.ctx("client")) as c:
            kwire.metadata(c, version=9, topics=[])
        self.broker.assert_alive()

    def test_plaintext_client_on_tls_port(self):
        """A plaintext Kafka client on a TLS port gets no Kafka answer: the
        connection is closed (the client reports a disconnection)."""
        for port in (self.ssl_port, self.sasl_port):
            with kwire.Conn(port) as c:
                c.send(kwire.request(kwire.API_API_VERSIONS, 0, 1))
                data = b""
                c.sock.settimeout(10)
                try:
                    while True:
                        chunk = c.sock.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                except ConnectionResetError:
                    pass
                self.assertFalse(data.startswith(b"\x00\x00"), data)  # no Kafka frame
        self.assertIn("TLS handshake with 127.0.0.1", self.broker.stderr())
        self.broker.assert_alive()

    def test_fetch_bytes_same_over_tls(self):
        """The same Fetch answered over TLS and over PLAINTEXT is the same bytes:
        v10 (log data from file chunks, read with pread for TLS) and v2
        (down-converted to magic 1 while sent: made chunks), each over many
        TLS records."""
        import kwire_legacy
        topic = "sec-fetch-bytes"
        p = subprocess.run(["kcat", "-b", self.broker.bootstrap, "-P", "-t", topic],
                           input="".join("record-%05d-%s\n" % (i, "y" * (i % 300)) for i in range(3000)),
                           text=True, capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        for version in (10, 2):
            with self.subTest(version=version):
                with kwire.Conn(self.port) as c:
                    plain = kwire_legacy.fetch(c, version, topic, [(0, 0, 4 << 20)])
                with TlsConn(self.ssl_port, self.ctx("client")) as c:
                    tls = kwire_legacy.fetch(c, version, topic, [(0, 0, 4 << 20)])
                digest = lambda r: {k: (e, hw, hashlib.sha256(b).hexdigest(), len(b))
                                    for k, (e, hw, b) in r.items()}  # a 500 KB diff takes minutes
                self.assertEqual(digest(tls), digest(plain))
                self.assertGreater(len(plain[0][2]), 100000)

    def test_inline_stores(self):
        """INLINE: key store and trust store given inline as PEM text, the key
        encrypted with ssl.key.password; a client certificate is required."""
        with TlsConn(self.inline_port, self.ctx("client")) as c:
            kwire.metadata(c, version=9, topics=[])
        with self.assertRaises(ssl.SSLError):
            c = TlsConn(self.inline_port, self.ctx())
            self.addCleanup(c.close)
            c.sock.recv(1)

    def test_requested_tls12_and_mapping(self):
        """REQ: TLS 1.2 only, a certificate requested but not required, and a
        mapping rule: bob's service certificate becomes User:SVC-BOB, alice's
        falls to DEFAULT, no certificate is User:ANONYMOUS; TLS 1.3 is refused."""
        for cert in ("bob", "client", None):
            with TlsConn(self.req_port, self.ctx(cert, tls12=True)) as c:
                self.assertEqual(c.sock.version(), "TLSv1.2")
                kwire.metadata(c, version=9, topics=[])
        log = self.broker.stderr()
        self.assertIn("TLSv1.2", log)
        for principal in ("User:SVC-BOB", "User:CN=alice,O=cohort,C=US", "User:ANONYMOUS"):
            self.assertIn(", %s\n" % principal, log)
        ctx13 = self.ctx("client")
        ctx13.minimum_version = ssl.TLSVersion.TLSv1_3
        with self.assertRaises(ssl.SSLError):
            TlsConn(self.req_port, ctx13).close()
        self.broker.assert_alive()


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
