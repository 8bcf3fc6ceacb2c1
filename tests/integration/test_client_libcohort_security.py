"""libcohort and the cohort CLI over TLS and SASL (issues 10 and 14): one
cohortd with a PLAINTEXT listener (to check from outside), an SSL one that
requires client certificates and a SASL_SSL one with SCRAM-SHA-512 and PLAIN
whose sessions last 2 s (connections.max.reauth.ms, KIP-368). The certificates
and the SCRAM user are made as test_security.py makes them.

- a libcohort consumer group (c/cohort_member.c) consumes and commits over
  SASL_SSL SCRAM-SHA-512 (and keeps committing across re-authentications),
  and over SSL with a client certificate;
- the CLI (produce, groups list, groups describe) over SASL_SSL with
  --command-config, PLAIN through sasl.jaas.config and SCRAM through
  librdkafka's sasl.username / sasl.password;
- a wrong password, an unknown user, an untrusted server certificate, no
  client certificate and a plaintext client on the TLS port each fail with
  their error, promptly; so does a certificate that does not name the host
  (ssl.endpoint.identification.algorithm=https).

cohortd only: the reference Kafka broker is not run with TLS by any module
(test_acls.py runs the CLI's SCRAM against Kafka 4.4 over SASL_PLAINTEXT).
"""
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import kwire
from harness import Broker, free_port, main, start_clean, stop_clean
from test_group_helpers import MemberProcess, wait_until
from test_security import make_certs

MEMBER = os.environ.get("COHORT_MEMBER", "")
CLI = os.environ.get("COHORT_CLI", "")
REAUTH_MS = 2000
SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
              'username="alice" password="%s";')
PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_admin="admin-secret";')
GENERIC_SCRAM = ("Authentication failed during authentication due to invalid credentials "
                 "with SASL mechanism SCRAM-SHA-512")


class LibcohortSecurity(unittest.TestCase):
    N = 20

    @classmethod
    def setUpClass(cls):
        for what, path in (("COHORT_MEMBER", MEMBER), ("COHORT_CLI", CLI)):
            if not os.access(path, os.X_OK):
                raise SystemExit("FAIL: %s not built: %r" % (what, path))
        cls.tmp = tempfile.mkdtemp(prefix="cohort-it-cltls-")
        make_certs(cls.tmp)
        cls.port, cls.ssl_port, cls.sasl_port = free_port(), free_port(), free_port()
        cls.wrongname_port = free_port()  # serves a certificate that names neither host
        cls.ca = cls.path("ca.pem")
        cls.broker = start_clean(Broker(port=cls.port, name="LibcohortSecurity", settings={
            "listeners": "PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d,"
                         "WRONGNAME://127.0.0.1:%d"
                         % (cls.port, cls.ssl_port, cls.sasl_port, cls.wrongname_port),
            "listener.security.protocol.map":
                "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,WRONGNAME:SSL",
            "listener.name.wrongname.ssl.keystore.location": cls.path("bob-keystore.pem"),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": cls.path("server-keystore.pem"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": cls.ca,
            "listener.name.ssl.ssl.client.auth": "required",
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
            "listener.name.sasl_ssl.connections.max.reauth.ms": str(REAUTH_MS),
            "connection.failed.authentication.delay.ms": "0",
            "group.initial.rebalance.delay.ms": "0",
            "log.level": "debug",
        }, extra_args=["--add-scram", "SCRAM-SHA-512=[name=alice,password=alice-secret]"]))

    @classmethod
    def tearDownClass(cls):
        stop_clean(cls.broker)
        shutil.rmtree(cls.tmp, True)

    @classmethod
    def path(cls, name):
        return os.path.join(cls.tmp, name)

    # -- client settings
    def sasl_props(self, password="alice-secret", user="alice"):
        return {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.jaas.config": SCRAM_JAAS.replace("alice", user, 1) % password,
                "ssl.truststore.type": "PEM", "ssl.truststore.location": self.ca}

    def ssl_props(self):
        return {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                "ssl.truststore.location": self.ca, "ssl.keystore.type": "PEM",
                "ssl.keystore.location": self.path("client-keystore.pem")}

    def props_file(self, props):
        fd, p = tempfile.mkstemp(suffix=".properties", dir=self.tmp)
        with os.fdopen(fd, "w") as f:
            for k, v in props.items():
                f.write("%s=%s\n" % (k, v))
        return p

    def cli(self, port, props, *args, stdin=None, timeout_ms=15000):
        """The CLI on port with props as --command-config: (exit status, stdout, stderr,
        seconds it took)."""
        argv = [CLI, *args, "--bootstrap-server", "127.0.0.1:%d" % port,
                "--command-config", self.props_file(props), "--timeout-ms", str(timeout_ms)]
        t0 = time.monotonic()
        p = subprocess.run(argv, input=stdin, capture_output=True, text=True,
                           timeout=timeout_ms / 1000 + 30)
        return p.returncode, p.stdout, p.stderr, time.monotonic() - t0

    def produce(self, port, props, topic):
        """N/2 records into each of topic's 2 partitions with the CLI over port."""
        for p in (0, 1):
            rc, out, err, _ = self.cli(port, props, "produce", topic, "--partition", str(p),
                                       stdin="".join("m%d\n" % i for i in range(self.N // 2)))
            self.assertEqual(rc, 0, err)

    def committed(self, group, topic, parts):
        with kwire.Conn(self.port) as c:
            got = kwire.offset_fetch(c, 5, group, {topic: list(parts)})
        return {p: got[(topic, p)][0] for p in parts}

    def create(self, topic, parts):
        with kwire.Conn(self.port) as c:
            res = kwire.create_topics(c, [(topic, parts, 1)])
        self.assertEqual(res["topics"][topic]["error_code"], 0, res)

    def member(self, name, port, group, topic, props):
        argv = [MEMBER, "-b", "127.0.0.1:%d" % port, "-g", group, "-t", topic, "-n", name,
                "-s", "6000"]
        for k, v in props.items():
            argv += ["-X", "%s=%s" % (k, v)]
        m = MemberProcess(argv, name)
        self.addCleanup(lambda: m.proc.poll() is None and m.proc.kill())
        return m

    def consume_and_commit(self, name, port, props, topic, group, keep_until=None):
        """Two members in a group over port consume the N records of topic (2
        partitions), commit, and the broker has the end offsets committed. With
        keep_until, the members commit again once keep_until() holds (a condition on
        the broker's log) and those commits are accepted too."""
        members = [self.member("%s%d" % (name, i), port, group, topic, props) for i in (1, 2)]

        def consumed():
            return sum(len(m.msgs) for m in members) >= self.N and all(
                m.assignment for m in members)
        wait_until(consumed, 60, "both members assigned, %d records consumed" % self.N)
        for m in members:
            self.assertIsNone(m.fatal, m.lines[-10:])
        ends = {}
        for m in members:
            for t, p, o, _ in m.msgs:
                ends[p] = max(ends.get(p, 0), o + 1)
        for m in members:
            for t, p in sorted(m.assignment):
                self.assertEqual(m.commit(t, p, ends[p]), "NO_ERROR", m.lines[-10:])
        self.assertEqual(self.committed(group, topic, [0, 1]), ends)
        if keep_until:
            wait_until(keep_until, 30, "re-authentication on the broker")
            for m in members:
                for t, p in sorted(m.assignment):
                    self.assertEqual(m.commit(t, p, ends[p]), "NO_ERROR", m.lines[-10:])
        for m in members:
            self.assertIsNone(m.fatal, m.lines[-10:])
            self.assertEqual(m.close(), 0, m.lines[-10:])
        return ends

    # -- what works
    def test_group_over_sasl_ssl_scram(self):
        """SASL_SSL SCRAM-SHA-512: produce with the CLI, consume and commit with a
        libcohort group; the session lasts 2 s, so the members re-authenticate
        (KIP-368) and their later commits still go through on the same
        connections."""
        topic, group = "cltls-sasl", "g-cltls-sasl"
        self.create(topic, 2)
        self.produce(self.sasl_port, self.sasl_props(), topic)
        log_mark = len(self.broker.stderr())

        def reauthenticated():
            return "re-authenticated User:alice" in self.broker.stderr()[log_mark:]
        self.consume_and_commit("s", self.sasl_port, self.sasl_props(), topic, group,
                                keep_until=reauthenticated)
        # the CLI on the same listener: the group, its offsets and lag
        rc, out, err, _ = self.cli(self.sasl_port, self.sasl_props(), "groups", "list")
        self.assertEqual(rc, 0, err)
        self.assertIn(group, out)
        rc, out, err, _ = self.cli(self.sasl_port, self.sasl_props(), "groups", "describe",
                                   group, "--json")
        self.assertEqual(rc, 0, err)
        got = {p["partition"]: p["current_offset"] for p in json.loads(out)["partitions"]}
        self.assertEqual(got, {0: self.N // 2, 1: self.N // 2})

    def test_group_over_ssl_client_cert(self):
        """SSL with a client certificate (PEM key store): a libcohort group consumes
        and commits."""
        topic, group = "cltls-ssl", "g-cltls-ssl"
        self.create(topic, 2)
        self.produce(self.ssl_port, self.ssl_props(), topic)
        self.consume_and_commit("t", self.ssl_port, self.ssl_props(), topic, group)

    def test_cli_plain_and_rdkafka_names(self):
        """PLAIN from sasl.jaas.config, and SCRAM from librdkafka's names
        (sasl.mechanisms, sasl.username, sasl.password, ssl.ca.location)."""
        plain = dict(self.sasl_props(), **{
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule '
                                'required username="admin" password="admin-secret";'})
        rdk = {"security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512",
               "sasl.username": "alice", "sasl.password": "alice-secret",
               "ssl.ca.location": self.ca}
        for name, props in (("plain", plain), ("rdkafka", rdk)):
            with self.subTest(name):
                rc, out, err, _ = self.cli(self.sasl_port, props, "topics", "list")
                self.assertEqual(rc, 0, err)

    # -- what fails, and how
    def test_authentication_failures(self):
        """Each fails at once (well inside --timeout-ms) with its error; the broker's
        own message for SASL, OpenSSL's reason for TLS."""
        no_trust = {k: v for k, v in self.ssl_props().items() if "truststore" not in k}
        no_cert = {k: v for k, v in self.ssl_props().items() if "keystore" not in k}
        cases = [
            ("wrong password", self.sasl_port, self.sasl_props("wrong"), GENERIC_SCRAM),
            ("unknown user", self.sasl_port, self.sasl_props(user="mallory"), GENERIC_SCRAM),
            ("untrusted server certificate", self.ssl_port, no_trust,
             "certificate verify failed"),
            ("no client certificate", self.ssl_port, no_cert, "SSL handshake failed"),
            ("TLS client on the plaintext port", self.port, self.ssl_props(),
             "SSL handshake failed"),
            ("unsupported mechanism", self.sasl_port,
             dict(self.sasl_props(), **{"sasl.mechanism": "SCRAM-SHA-256"}),
             "Client SASL mechanism 'SCRAM-SHA-256' not enabled in the server, enabled "
             "mechanisms are [PLAIN, SCRAM-SHA-512]"),
        ]
        for what, port, props, expect in cases:
            with self.subTest(what):
                rc, out, err, took = self.cli(port, props, "groups", "list", timeout_ms=20000)
                self.assertNotEqual(rc, 0, out)
                self.assertIn(expect, err)
                self.assertLess(took, 15, err)  # not retried until the timeout
        self.broker.assert_alive()

    def test_endpoint_identification(self):
        """A certificate from the trusted CA that does not name the host (CN=bob, no
        SAN) fails the handshake (ssl.endpoint.identification.algorithm=https, the
        default); with it set to "" the same connection works."""
        trust = {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                 "ssl.truststore.location": self.ca}
        rc, out, err, took = self.cli(self.wrongname_port, trust, "topics", "list",
                                      timeout_ms=20000)
        self.assertNotEqual(rc, 0, out)
        self.assertIn("certificate verify failed (IP address mismatch)", err)
        self.assertLess(took, 15, err)
        rc, out, err, _ = self.cli(self.wrongname_port,
                                   dict(trust, **{"ssl.endpoint.identification.algorithm": ""}),
                                   "topics", "list")
        self.assertEqual(rc, 0, err)

    def test_plaintext_client_on_tls_port(self):
        """A PLAINTEXT client on the TLS port gets no Kafka answer (the broker
        closes): as with Kafka's clients, the call times out; no hang past it."""
        rc, out, err, took = self.cli(self.ssl_port, {}, "groups", "list", timeout_ms=3000)
        self.assertNotEqual(rc, 0, out)
        self.assertIn("no broker answered", err)
        self.assertLess(took, 20)
        self.broker.assert_alive()


if __name__ == "__main__":
    main()
