#!/usr/bin/env python3
"""Apache Kafka's kafka-configs and kafka-delete-records tools (4.x jars)
against cohortd and against Apache Kafka 4.x itself, the same commands on
both in one run (as test_kafka_tools.py does for the other tools): topic
configs added, described (with synonyms), deleted, refused (unknown key, bad
value, unknown topic, a list value); broker configs for node 1 and the
cluster default, a read-only key refused; client quotas for a user, a client id,
both and the default user, added, described, refused and deleted; records deleted up to an offset,
past the end and up to the high watermark. Exit code, stdout and stderr
(less log lines) must match after normalising ports and spacing."""
import atexit
import json
import os
import shutil
import socket
import sys
import tempfile
import time

import kwire

from java_clients import KafkaTools, check_installed
from kafka_ref import VersusKafka
from test_kafka_tools import normalise

import harness

# Where cohortd answers differently and why.
KNOWN_DIFFERENCES = {
    "default describe": "Kafka 4.x's controller keeps a cluster-wide min.insync.replicas=1 (ELR, "
                        "KIP-966) that the tool lists with the cluster defaults (README: one "
                        "broker, no replication)",
}


def run_sequence(bootstrap, port, workdir):
    runner = KafkaTools()
    results = []

    def tool(name, tool, *args, input=None, until=None):
        """until: a predicate on stdout; the command is repeated (up to ~20 s:
        a loaded machine) until it holds: Kafka applies a config change it has
        acknowledged to what its brokers describe a moment later, through its
        metadata log."""
        for _ in range(100):
            p = runner.run(tool, "--bootstrap-server", bootstrap, *args, input=input)
            if until is None or until(p.stdout):
                break
            time.sleep(0.2)
        results.append((name, p.returncode, normalise(p.stdout, port), normalise(p.stderr, port)))
        print("  %s" % name, file=sys.stderr)

    def configs(name, *args, until=None):
        tool(name, "kafka-configs", *args, until=until)

    def shows(text):
        return lambda out: text in out

    def shows_value(setting):
        """The setting as the line's own value, not only in its synonyms:
        Kafka 4.4 was seen (under load) listing the new value among the
        synonyms while the line still gave the old one."""
        return lambda out: setting + " sensitive=" in out

    def hides(text):
        return lambda out: text not in out

    def delete_records(name, offsets):
        path = os.path.join(workdir, "%d-%s.json" % (port, name.replace(" ", "-")))
        with open(path, "w") as f:
            json.dump({"version": 1, "partitions": [
                {"topic": t, "partition": p, "offset": o} for t, p, o in offsets]}, f)
        tool(name, "kafka-delete-records", "--offset-json-file", path)

    try:
        tool("create", "kafka-topics", "--create", "--topic", "ct", "--partitions", "1",
             "--replication-factor", "1")
        topic = ("--entity-type", "topics", "--entity-name", "ct")
        configs("topic add", *topic, "--alter", "--add-config",
                "retention.ms=1000,cleanup.policy=[compact,delete],max.message.bytes=100000")
        configs("topic describe", *topic, "--describe", until=shows_value("retention.ms=1000"))
        configs("topic delete", *topic, "--alter", "--delete-config", "retention.ms")
        configs("topic describe after delete", *topic, "--describe",
                until=hides("retention.ms=1000 "))
        configs("topic unknown key", *topic, "--alter", "--add-config", "no.such.config=1")
        configs("topic bad value", *topic, "--alter", "--add-config", "retention.ms=soon")
        configs("topic unknown", "--entity-type", "topics", "--entity-name", "nope", "--alter",
                "--add-config", "retention.ms=1")
        broker = ("--entity-type", "brokers", "--entity-name", "1")
        configs("broker add", *broker, "--alter", "--add-config", "log.retention.bytes=1000000000")
        configs("broker describe", *broker, "--describe",
                until=shows_value("log.retention.bytes=1000000000"))
        configs("broker read-only", *broker, "--alter", "--add-config", "num.partitions=3")
        configs("default add", "--entity-type", "brokers", "--entity-default", "--alter",
                "--add-config", "log.retention.ms=3600000")
        configs("default describe", "--entity-type", "brokers", "--entity-default", "--describe",
                until=shows_value("log.retention.ms=3600000"))
        configs("broker delete", *broker, "--alter", "--delete-config", "log.retention.bytes")
        configs("default delete", "--entity-type", "brokers", "--entity-default", "--alter",
                "--delete-config", "log.retention.ms")
        configs("broker describe after delete", *broker, "--describe",
                until=hides("log.retention.bytes=1000000000"))
        # (ct is compact,delete now: records need keys; dt takes plain ones)
        tool("create dt", "kafka-topics", "--create", "--topic", "dt", "--partitions", "1",
             "--replication-factor", "1")
        tool("produce", "kafka-console-producer", "--topic", "dt",
             input="".join("m%d\n" % i for i in range(5)))
        delete_records("delete records", [("dt", 0, 2)])
        delete_records("delete records past the end", [("dt", 0, 99)])
        delete_records("delete records to the end", [("dt", 0, -1)])
        delete_records("delete records compacted", [("ct", 0, 0)])
        # client quotas (DescribeClientQuotas / AlterClientQuotas)
        alice = ("--entity-type", "users", "--entity-name", "alice")
        c1 = ("--entity-type", "clients", "--entity-name", "c1")
        configs("quota user add", *alice, "--alter", "--add-config",
                "producer_byte_rate=1048576,consumer_byte_rate=2097152")
        configs("quota client add", *c1, "--alter", "--add-config", "producer_byte_rate=1024")
        configs("quota user client add", *alice, *c1, "--alter", "--add-config",
                "request_percentage=50")
        configs("quota default user add", "--entity-type", "users", "--entity-default", "--alter",
                "--add-config", "consumer_byte_rate=100000")
        configs("quota user describe", *alice, "--describe",
                until=shows("consumer_byte_rate=2097152.0"))
        configs("quota client describe", *c1, "--describe")
        configs("quota user client describe", *alice, *c1, "--describe")
        configs("quota default user describe", "--entity-type", "users", "--entity-default",
                "--describe")
        configs("quota all users describe", "--entity-type", "users", "--describe")
        configs("quota bad key", *alice, "--alter", "--add-config", "bogus_rate=1")
        configs("quota fractional", *alice, "--alter", "--add-config", "producer_byte_rate=1.5")
        configs("quota zero", *c1, "--alter", "--add-config", "consumer_byte_rate=0")
        configs("quota delete", *alice, "--alter", "--delete-config", "producer_byte_rate")
        configs("quota user describe after delete", *alice, "--describe",
                until=hides("producer_byte_rate"))
        configs("quota client delete all", *c1, "--alter", "--delete-config", "producer_byte_rate")
        configs("quota client describe after delete", *c1, "--describe",
                until=hides("producer_byte_rate"))
        # ip entities (connection_creation_rate)
        ip2 = ("--entity-type", "ips", "--entity-name", "127.0.0.2")
        configs("quota ip add", *ip2, "--alter", "--add-config", "connection_creation_rate=1")
        configs("quota default ip add", "--entity-type", "ips", "--entity-default", "--alter",
                "--add-config", "connection_creation_rate=1000")
        configs("quota ip describe", *ip2, "--describe",
                until=shows("connection_creation_rate=1"))
        configs("quota all ips describe", "--entity-type", "ips", "--describe")
        configs("quota ip bad key", *ip2, "--alter", "--add-config", "producer_byte_rate=1")
        configs("quota ip fractional", *ip2, "--alter", "--add-config",
                "connection_creation_rate=1.5")
        results.append(("ip quota enforced", 0, ip_quota_conversation(port), ""))
        configs("quota default ip delete", "--entity-type", "ips", "--entity-default", "--alter",
                "--delete-config", "connection_creation_rate")
        # request_percentage and controller_mutation_rate, over the wire
        configs("quota request add", "--entity-type", "clients", "--entity-name", "rq",
                "--alter", "--add-config", "request_percentage=0.001")
        results.append(("request_percentage enforced", 0, request_quota_conversation(port), ""))
        configs("quota mutation add", "--entity-type", "clients", "--entity-name", "mut",
                "--alter", "--add-config", "controller_mutation_rate=1")
        results.append(("controller_mutation_rate enforced", 0,
                        mutation_quota_conversation(port), ""))
    finally:
        runner.kill()
    return results


def _eventually(attempt, timeout=20.0):
    """attempt() until it returns something true (a quota set a moment ago
    reaches Kafka's quota managers through its metadata log a little later);
    its last answer."""
    deadline = time.monotonic() + timeout
    while True:
        got = attempt()
        if got or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def _answered(port, source):
    """Whether a connection from source gets its ApiVersions answered (an
    ip quota holds a throttled one unread, then closes it)."""
    s = socket.socket()
    s.settimeout(5)
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    c = kwire.Conn.__new__(kwire.Conn)
    c.sock, c.timeout, c.corr = s, 5, 0
    try:
        kwire.api_versions(c)
        return True
    except (ConnectionError, OSError, kwire.ProtocolError):
        return False
    finally:
        c.close()


def ip_quota_conversation(port):
    """127.0.0.2 has 1 connection/s: within the window, connections from it
    are held and closed unanswered while 127.0.0.3 (the default, 1000/s) is
    served."""
    throttled = _eventually(lambda: not _answered(port, "127.0.0.2"))
    return ["a connection from 127.0.0.2 closed unanswered: %s" % throttled,
            "127.0.0.3 answered meanwhile: %s" % _answered(port, "127.0.0.3")]


def request_quota_conversation(port):
    """Metadata requests by client id rq (0.001 % of a thread) soon carry a
    throttle time; another client id's do not."""
    def first_throttled():
        with kwire.Conn(port) as c:
            for _ in range(20):
                r = c.call(kwire.API_METADATA, 3, kwire.metadata_body(3, []), client_id="rq")
                if r.int32() > 0:
                    return True
        return False
    got = _eventually(first_throttled)
    with kwire.Conn(port) as c:
        r = c.call(kwire.API_METADATA, 3, kwire.metadata_body(3, []), client_id="free")
        free = r.int32()
    return ["client rq throttled: %s" % got, "client free throttled: %s" % (free > 0)]


def mutation_quota_conversation(port):
    """controller_mutation_rate=1 for client id mut (a bucket of 11
    partitions): strict versions refuse once it is below zero, older ones
    take and throttle. Each call on a new connection: a throttled one is
    muted for the throttle time."""
    def call(api, version, body):
        with kwire.Conn(port) as c:
            return c.call(api, version, body, client_id="mut")

    def create(name, parts, version, validate_only=False):
        r = call(kwire.API_CREATE_TOPICS, version, kwire.create_topics_body(
            version, [(name, parts, 1)], validate_only=validate_only))
        out = kwire.parse_create_topics(r, version)
        t = out["topics"][name]
        return t["error_code"], t.get("error_message"), out["throttle_time_ms"] > 0

    # the probe (validate only: it takes tokens all the same) until refused
    refused = _eventually(lambda: create("probe", 30, 7, True)[0] == 89)
    lines = ["probe refused: %s" % refused,
             "strict create: %r" % (create("m1", 1, 7),),
             "permissive create: %r" % (create("m2", 1, 5),)]
    r = call(kwire.API_DELETE_TOPICS, 5, kwire.delete_topics_body(5, ["m2"]))
    d = kwire.parse_delete_topics(r, 5)
    lines.append("strict delete: %r" % (([(t["error_code"], t["error_message"])
                                           for t in d["results"]], d["throttle_time_ms"] > 0),))
    w = kwire.Writer(True)
    w.array_len(1).string("m2").int32(3).array_len(None).tags()
    w.int32(30000).bool(False).tags()
    r = call(kwire.API_CREATE_PARTITIONS, 3, w.bytes())
    throttled = r.int32() > 0
    res = []
    for _ in range(r.array_len()):
        res.append((r.string(), r.int16(), r.string(nullable=True)))
        r.tags()
    lines.append("strict create partitions: %r" % ((res, throttled),))
    r = call(kwire.API_DELETE_TOPICS, 4, kwire.delete_topics_body(4, ["m2"]))
    d = kwire.parse_delete_topics(r, 4)
    lines.append("permissive delete: %r" % (([t["error_code"] for t in d["results"]],
                                              d["throttle_time_ms"] > 0),))
    return lines


class KafkaConfigsTool(VersusKafka):
    @classmethod
    def setUpClass(cls):
        check_installed()
        cls.workdir = tempfile.mkdtemp(prefix="cohort-configs-tool-")
        atexit.register(shutil.rmtree, cls.workdir, True)
        super().setUpClass()

    @classmethod
    def scenario(cls, broker, base_ts):
        return run_sequence(broker.bootstrap, broker.port, cls.workdir)

    def test_same_output_as_kafka(self):
        self.assertEqual([r[0] for r in self.ours], [r[0] for r in self.theirs])
        diffs = []
        for ours, theirs in zip(self.ours, self.theirs):
            if ours[1:] != theirs[1:] and ours[0] not in KNOWN_DIFFERENCES:
                diffs.append("%s:\n  cohortd: rc %d\n    %s\n    stderr: %s\n  kafka:   rc %d\n"
                             "    %s\n    stderr: %s"
                             % (ours[0], ours[1], "\n    ".join(ours[2]), ours[3], theirs[1],
                                "\n    ".join(theirs[2]), theirs[3]))
        self.assertEqual(diffs, [], "\n".join(diffs))

    def test_known_values(self):
        out = {r[0]: r[2] for r in self.ours}
        self.assertIn("retention.ms=1000", " ".join(out["topic describe"]))
        self.assertIn("log.retention.ms=3600000", " ".join(out["default describe"]))
        self.assertIn("low_watermark: 2", " ".join(out["delete records"]))
        self.assertIn("low_watermark: 5", " ".join(out["delete records to the end"]))
        self.assertIn("producer_byte_rate=1048576.0", " ".join(out["quota user describe"]))
        self.assertIn("request_percentage=50.0", " ".join(out["quota user client describe"]))
        self.assertNotIn("producer_byte_rate", " ".join(out["quota user describe after delete"]))


if __name__ == "__main__":
    harness.main()
