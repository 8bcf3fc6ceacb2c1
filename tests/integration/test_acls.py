"""ACLs (issue 14) with real clients over SASL_PLAINTEXT SCRAM-SHA-512:
confluent-kafka 2.x (PyPI, librdkafka 2.x) consumers and its AdminClient's
create_acls / describe_acls / delete_acls, the same scenario against
cohortd with its authorizer and against Apache Kafka 4.4 with its
StandardAuthorizer, the outcomes (error codes) compared. One broker of each
for the module.

The ACLs: alice may READ group g-alice and topic acl-t; bob may READ every
group starting g- and every topic starting acl- (PREFIXED) but is denied
READ on g-alice (DENY wins; a DENY of READ leaves him DESCRIBE, so he finds
the coordinator, fails at the join and still lists the group); carol may
READ group g-carol and no topic (she does not see it in Metadata); nobody
but admin (super.users) may describe the cluster or the ACLs."""
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import confluent_kafka
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation, AclPermissionType,
                                   AdminClient, NewTopic, ResourcePatternType, ResourceType)

from harness import Broker, cohortd_path, free_port, main, start_clean, stop_clean
from kafka_ref import KafkaRef

TOPIC = "acl-t"
USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret",
         "carol": "carol-secret"}
ADD_SCRAM = ["--add-scram", "SCRAM-SHA-512=[name=%s,password=%s]"]


def scram_args():
    out = []
    for u, p in USERS.items():
        out += [ADD_SCRAM[0], ADD_SCRAM[1] % (u, p)]
    return out


def conf(bootstrap, user, **kw):
    c = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
         "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user,
         "sasl.password": USERS[user]}
    c.update(kw)
    return c


def code_of(exc):
    """The KafkaError code of an exception a future or call raised."""
    err = exc.args[0] if exc.args else None
    return err.code() if isinstance(err, KafkaError) else repr(exc)


def acl(rtype, name, pattern, user, op, perm):
    return AclBinding(rtype, name, pattern, "User:" + user, "*", op, perm)


ACLS = [
    acl(ResourceType.GROUP, "g-alice", ResourcePatternType.LITERAL, "alice", AclOperation.READ,
        AclPermissionType.ALLOW),
    acl(ResourceType.TOPIC, TOPIC, ResourcePatternType.LITERAL, "alice", AclOperation.READ,
        AclPermissionType.ALLOW),
    acl(ResourceType.GROUP, "g-", ResourcePatternType.PREFIXED, "bob", AclOperation.READ,
        AclPermissionType.ALLOW),
    acl(ResourceType.GROUP, "g-alice", ResourcePatternType.LITERAL, "bob", AclOperation.READ,
        AclPermissionType.DENY),
    acl(ResourceType.TOPIC, "acl-", ResourcePatternType.PREFIXED, "bob", AclOperation.READ,
        AclPermissionType.ALLOW),
    acl(ResourceType.GROUP, "g-carol", ResourcePatternType.LITERAL, "carol", AclOperation.READ,
        AclPermissionType.ALLOW),
]


class Scenario:
    """What one broker answers, as (step -> outcome) pairs to compare."""

    def __init__(self, tc, bootstrap):
        self.tc = tc
        self.bootstrap = bootstrap
        self.out = {}

    def admin(self, user):
        return AdminClient(conf(self.bootstrap, user))

    def consume(self, user, group, want=None, deadline_s=30):
        """A consumer of TOPIC in group: the first error its poll gives, or
        "ok" once it read `want` records (and committed them)."""
        c = confluent_kafka.Consumer(conf(self.bootstrap, user, **{
            "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 500}))
        got = 0
        try:
            c.subscribe([TOPIC])
            deadline = time.monotonic() + deadline_s
            while time.monotonic() < deadline:
                m = c.poll(0.2)
                if m is None:
                    continue
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    return m.error().code()
                got += 1
                if want and got >= want:
                    c.commit(asynchronous=False)
                    return "ok"
            return "timeout (%d records)" % got
        finally:
            c.close()

    def run(self):
        tc, out = self.tc, self.out
        adm = self.admin("admin")
        for f in adm.create_topics([NewTopic(TOPIC, 1, 1)]).values():
            f.result(30)
        p = confluent_kafka.Producer(conf(self.bootstrap, "admin", acks="all"))
        for i in range(3):
            p.produce(TOPIC, value=b"v%d" % i)
        tc.assertEqual(p.flush(30), 0)
        # a principal that is not a super user may not touch the ACLs (the
        # AdminClient must outlive its futures)
        alice = self.admin("alice")
        try:
            got = alice.describe_acls(AclBindingFilter(
                ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                AclPermissionType.ANY)).result(30)
            out["alice describe_acls"] = "ok: %d" % len(got)
        except KafkaException as e:
            out["alice describe_acls"] = code_of(e)
        try:
            alice.create_acls([ACLS[0]])[ACLS[0]].result(30)
            out["alice create_acls"] = "ok"
        except KafkaException as e:
            out["alice create_acls"] = code_of(e)
        for b, f in adm.create_acls(ACLS).items():
            f.result(30)
        # ACL changes reach Kafka's brokers through its metadata log: wait
        # until the admin sees them all
        deadline = time.monotonic() + 30
        while True:
            got = adm.describe_acls(AclBindingFilter(
                ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                AclPermissionType.ANY)).result(30)
            if len(got) >= len(ACLS) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        out["described"] = sorted(str(b) for b in got if b.principal != "User:dave"
                                  and b.principal != "User:ANONYMOUS")
        # prefixed filter (MATCH): what applies to group g-alice
        match = adm.describe_acls(AclBindingFilter(
            ResourceType.GROUP, "g-alice", ResourcePatternType.MATCH, None, None,
            AclOperation.ANY, AclPermissionType.ANY)).result(30)
        out["match g-alice"] = sorted(str(b) for b in match)
        time.sleep(0.5)   # Kafka's authorizer catches up with its log
        out["alice g-alice"] = self.consume("alice", "g-alice", want=3)
        out["alice g-other"] = self.consume("alice", "g-other")
        out["bob g-alice"] = self.consume("bob", "g-alice")      # DENY over ALLOW
        out["bob g-bob"] = self.consume("bob", "g-bob", want=3)  # the prefixed ALLOW
        out["carol g-carol"] = self.consume("carol", "g-carol")  # group ok, topic not
        out["carol g-alice"] = self.consume("carol", "g-alice")
        # Metadata: bob may not describe the topic, alice may
        for user in ("alice", "carol"):
            md = self.admin(user).list_topics(timeout=30)
            out["%s sees topic" % user] = TOPIC in md.topics
        # ListGroups: each sees the groups it may describe; admin all of them
        for user in ("alice", "bob", "carol", "admin"):
            a = self.admin(user)
            groups = a.list_consumer_groups().result(30).valid
            out["%s lists" % user] = sorted(g.group_id for g in groups
                                            if g.group_id.startswith("g-"))
        # delete: bob's DENY, by an exact filter
        deleted = adm.delete_acls([AclBindingFilter(
            ResourceType.GROUP, "g-alice", ResourcePatternType.LITERAL, "User:bob", "*",
            AclOperation.READ, AclPermissionType.DENY)])
        out["deleted"] = [sorted(str(b) for b in f.result(30)) for f in deleted.values()]
        return out


class AclClients(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.sasl_port, plain = free_port(), free_port()
        cls.cohortd = start_clean(Broker(name="cohortd-acls", port=plain, settings={
            "listeners": "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d"
                         % (plain, cls.sasl_port),
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin",
            "group.initial.rebalance.delay.ms": "0",
        }, extra_args=scram_args()))
        # Kafka: PLAINTEXT stays the controller's and inter-broker listener
        # (its principal must be a super user), SASL is the clients'.
        cls.kafka_sasl_port = free_port()
        cls.kafka = KafkaRef(settings={
            "listeners": "PLAINTEXT://127.0.0.1:{p},CONTROLLER://127.0.0.1:{c},"
                         "SASL://127.0.0.1:%d" % cls.kafka_sasl_port,
            "advertised.listeners": "PLAINTEXT://127.0.0.1:{p},SASL://127.0.0.1:%d"
                                    % cls.kafka_sasl_port,
            "listener.security.protocol.map":
                "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT",
            "listener.name.sasl.scram-sha-512.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS;User:admin",
            "group.initial.rebalance.delay.ms": "0",
        }, env={"KAFKA_REF_FORMAT_ARGS": " ".join(scram_args())})
        k = cls.kafka
        for key in ("listeners", "advertised.listeners"):
            k.settings[key] = k.settings[key].format(p=k.port, c=k.controller_port)
        k.start()

    @classmethod
    def tearDownClass(cls):
        stop_clean(cls.cohortd)
        cls.kafka.stop()

    def cli(self, *args):
        """cohort (beside cohortd) on cohortd's PLAINTEXT listener: (status, stdout, stderr)."""
        exe = os.environ.get("COHORT_CLI") or os.path.join(os.path.dirname(cohortd_path()),
                                                            "cohort")
        p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, COHORT_BOOTSTRAP=self.cohortd.bootstrap))
        return p.returncode, p.stdout, p.stderr

    def test_cli_over_sasl(self):
        """libcohort's SCRAM-SHA-512 client (the cohort CLI with --command-config)
        against Kafka 4.4's ScramSaslServer and cohortd's: admin lists topics and
        groups on both; a wrong password fails at once on both with the same
        broker message."""
        tmp = tempfile.mkdtemp(prefix="cohort-it-acls-cli-")
        self.addCleanup(shutil.rmtree, tmp, True)
        results = {}
        for name, port in (("cohortd", self.sasl_port), ("kafka", self.kafka_sasl_port)):
            for pw in (USERS["admin"], "wrong"):
                props = os.path.join(tmp, "%s-%s.properties" % (name, pw))
                with open(props, "w") as f:
                    f.write("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                            "sasl.jaas.config=org.apache.kafka.common.security.scram."
                            "ScramLoginModule required username=\"admin\" password=\"%s\";\n"
                            % pw)
                for cmd in (("topics", "list"), ("groups", "list")):
                    rc, out, err = self.cli(*cmd, "--bootstrap-server", "127.0.0.1:%d" % port,
                                            "--command-config", props, "--timeout-ms", "20000")
                    results[(name, pw, cmd)] = (rc, err)
        for name in ("cohortd", "kafka"):
            for cmd in (("topics", "list"), ("groups", "list")):
                with self.subTest(broker=name, cmd=cmd):
                    self.assertEqual(results[(name, USERS["admin"], cmd)], (0, ""))
                    rc, err = results[(name, "wrong", cmd)]
                    self.assertEqual(rc, 1, err)
                    self.assertIn("\ncohort: Authentication failed during authentication "
                                  "due to invalid credentials with SASL mechanism "
                                  "SCRAM-SHA-512\n", err)
                    self.assertEqual(err, results[("cohortd", "wrong", cmd)][1])

    def test_cli(self):
        """cohort acls on cohortd, and kafka-acls' --list text on Kafka for the same ACL.
        The CLI runs on the PLAINTEXT listener: User:ANONYMOUS gets ALTER and DESCRIBE
        on the cluster from admin first."""
        rc, out, err = self.cli("acls", "list")
        self.assertEqual((rc, out, err), (1, "", "cohort: acls list: Cluster authorization failed.\n"))
        adm = AdminClient(conf("127.0.0.1:%d" % self.sasl_port, "admin"))
        grants = [AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL,
                             "User:ANONYMOUS", "*", op, AclPermissionType.ALLOW)
                  for op in (AclOperation.ALTER, AclOperation.DESCRIBE)]
        for f in adm.create_acls(grants).values():
            f.result(30)
        rc, out, err = self.cli("acls", "add", "--allow-principal", "User:dave", "--operation",
                                "Read", "--topic", "cli-t")
        self.assertEqual(rc, 0, err)
        entry = "(principal=User:dave, host=*, operation=READ, permissionType=ALLOW)"
        pattern = "ResourcePattern(resourceType=TOPIC, name=cli-t, patternType=LITERAL)"
        self.assertEqual(out, "Adding ACLs for resource `%s`:\n\t%s\n\n" % (pattern, entry))
        rc, ours, err = self.cli("acls", "list", "--topic", "cli-t")
        self.assertEqual((rc, ours),
                         (0, "Current ACLs for resource `%s`:\n\t%s\n\n" % (pattern, entry)),
                         err)
        # kafka-acls prints the same for the same binding on Kafka
        p = self.kafka.tool("kafka-acls", "--bootstrap-server", self.kafka.bootstrap, "--add",
                            "--allow-principal", "User:dave", "--operation", "Read", "--topic",
                            "cli-t")
        self.assertEqual(p.returncode, 0, p.stderr)
        deadline = time.monotonic() + 30
        while True:
            theirs = self.kafka.tool("kafka-acls", "--bootstrap-server", self.kafka.bootstrap,
                                     "--list", "--topic", "cli-t").stdout
            if entry in theirs or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        self.assertEqual(ours, theirs)
        rc, out, err = self.cli("acls", "remove", "--topic", "cli-t")
        self.assertEqual((rc, out),
                         (0, "Removed ACLs for resource `%s`:\n\t%s\n\n" % (pattern, entry)),
                         err)
        rc, out, err = self.cli("acls", "list", "--topic", "cli-t")
        self.assertEqual((rc, out), (0, ""), err)
        for f in adm.delete_acls([AclBindingFilter(
                ResourceType.BROKER, None, ResourcePatternType.ANY, "User:ANONYMOUS", None,
                AclOperation.ANY, AclPermissionType.ANY)]).values():
            self.assertEqual(len(f.result(30)), 2)

    def test_same_outcomes(self):
        ours = Scenario(self, "127.0.0.1:%d" % self.sasl_port).run()
        theirs = Scenario(self, "127.0.0.1:%d" % self.kafka_sasl_port).run()
        # Kafka answers every step the same
        self.assertEqual(ours, theirs)
        e = KafkaError
        want = {
            # librdkafka 2.16 does not raise DescribeAcls' top-level error (both
            # brokers answer CLUSTER_AUTHORIZATION_FAILED: test_api_acls checks it)
            "alice describe_acls": "ok: 0",
            "alice create_acls": e.CLUSTER_AUTHORIZATION_FAILED,
            "alice g-alice": "ok",
            "alice g-other": e.GROUP_AUTHORIZATION_FAILED,
            "bob g-alice": e.GROUP_AUTHORIZATION_FAILED,
            "bob g-bob": "ok",
            "carol g-carol": e.TOPIC_AUTHORIZATION_FAILED,
            "carol g-alice": e.GROUP_AUTHORIZATION_FAILED,
            "alice sees topic": True,
            "carol sees topic": False,
            "alice lists": ["g-alice"],
            "bob lists": ["g-alice", "g-bob"],
            "carol lists": [],          # g-carol was never joined: carol has no topic
            "admin lists": ["g-alice", "g-bob"],
        }
        for k, v in want.items():
            with self.subTest(step=k):
                self.assertEqual(ours.get(k), v, "cohortd: %r" % (ours,))
        self.assertEqual(len(ours["described"]), len(ACLS), ours["described"])
        self.assertEqual(len(ours["match g-alice"]), 3, ours["match g-alice"])
        self.assertEqual([len(d) for d in ours["deleted"]], [1])



if __name__ == "__main__":
    main(requires_modules=("confluent_kafka",))
