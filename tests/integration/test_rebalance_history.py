"""The rebalance history of the admin API (/v1/groups, /v1/groups/G,
/v1/groups/G/rebalances) with a real kafka-python group: join, scale-out,
leave, and a member killed (SIGKILL) whose session times out. Each
rebalance names its cause with the member that caused it, the members in
and out, the leader, the member that held the barrier (the last JoinGroup,
after the first), each member's pause and the partitions moved; the ring
keeps group.rebalance.history.size records. A librdkafka cooperative-sticky
group scaling out: each rebalance is one record of two generations (the
follow-up round that hands over the revoked partitions folded in), the
members that kept their partitions pause 0 and the one that lost one pauses
until its SyncGroup of the follow-up round. `cohort groups rebalances`
shows the same history (table, --members, --json), finding the admin API
from the broker's admin.listeners or --admin-url."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from harness import BrokerTestCase, free_port, main
from test_metrics import Member, TOPIC

try:
    from kafka import KafkaProducer
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient, NewTopic
except ImportError:  # main() reports the skip
    pass

GROUP = "metrics-g"  # test_metrics.Member's group
CLI = os.environ.get("COHORT_CLI", "")
ADMIN_PORT = free_port()  # fixed: the CLI reads it from the broker's admin.listeners

# A member in its own process, to be killed: it polls until SIGKILL.
KILLED = r"""
import sys
from kafka import KafkaConsumer
c = KafkaConsumer(bootstrap_servers=sys.argv[1], group_id=sys.argv[2], client_id="killed",
                  session_timeout_ms=2000, heartbeat_interval_ms=300,
                  auto_offset_reset="earliest", enable_auto_commit=False)
c.subscribe([sys.argv[3]])
while True:
    c.poll(timeout_ms=100)
"""


COOP_GROUP, COOP_TOPIC = "coop-g", "coop-t"


class CoopMember:
    """A librdkafka (confluent-kafka) cooperative-sticky consumer polling on
    its own thread until stop()."""

    def __init__(self, bootstrap, name):
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": COOP_GROUP,
                           "client.id": name, "enable.auto.commit": False,
                           "partition.assignment.strategy": "cooperative-sticky",
                           "session.timeout.ms": 6000, "heartbeat.interval.ms": 100})
        self.c.subscribe([COOP_TOPIC])
        self.stopping = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stopping.is_set():
            self.c.poll(0.1)
        self.c.close()

    def stop(self):
        if not self.stopping.is_set():
            self.stopping.set()
            self.t.join(60)


class RebalanceHistory(BrokerTestCase):
    broker_settings = {"admin.listeners": "http://127.0.0.1:%d" % ADMIN_PORT,
                       "num.partitions": "2",
                       "group.initial.rebalance.delay.ms": "0",
                       "group.min.session.timeout.ms": "500",
                       "group.rebalance.history.size": "3"}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.base = "http://127.0.0.1:%d" % cls.broker.admin_port()

    def get(self, path):
        try:
            with urllib.request.urlopen(self.base + path, timeout=30) as r:
                self.assertEqual(r.headers["Content-Type"], "application/json")
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            body = e.read()
            if e.headers["Content-Type"] == "application/json":
                body = json.loads(body)
            return e.code, body

    def history(self, group=GROUP):
        """The group's records; [] while the group does not exist yet."""
        status, body = self.get("/v1/groups/%s/rebalances" % group)
        if status == 404:
            return []
        self.assertEqual(status, 200, body)
        return body["rebalances"]

    def wait_closed(self, n_closed, what):
        """The history once it holds n_closed finished records, all Stable or
        Empty, the last one Stable."""
        deadline = time.monotonic() + 90
        while True:
            h = self.history()
            done = [r for r in h if r["outcome"]]
            if len(done) >= n_closed and h and h[-1]["outcome"] == "Stable":
                return h
            if time.monotonic() > deadline:
                self.fail("history never showed %s: %s" % (what, json.dumps(h, indent=1)))
            time.sleep(0.2)

    def test_join_scale_out_leave_timeout(self):
        b = self.broker
        self.assertEqual(self.get("/v1/groups/no-such-group")[0], 404)
        self.assertEqual(self.get("/v1/groups/bad%zz")[0], 400)
        prod = KafkaProducer(bootstrap_servers=b.bootstrap, acks="all")
        for i in range(10):
            prod.send(TOPIC, b"x", partition=i % 2)
        prod.flush(60)
        prod.close()

        a = Member(b.bootstrap, "a")
        self.addCleanup(a.stop)
        h = self.wait_closed(1, "the first join")
        r = h[-1]
        self.assertEqual(r["cause"]["cause"], "member joined")
        self.assertEqual(r["generation"], 1)
        self.assertEqual((r["protocol_type"], r["protocol"]), ("consumer", "range"))
        a_id = r["leader"]
        self.assertTrue(a_id.startswith("a-"), r)
        self.assertEqual(r["members_in"], [a_id])
        self.assertEqual(r["barrier"]["member_id"], a_id)
        self.assertEqual(r["barrier"]["after_first_join_ms"], 0)
        self.assertIsNotNone(r["assignment_sent_after_ms"])
        self.assertEqual(r["partitions_moved"], 0)
        self.assertEqual([m["partitions_after"] for m in r["members"]], [2])

        # scale-out: b's join starts it; a must notice (heartbeat) and rejoin:
        # a holds the barrier, and one partition moves from a to b
        bb = Member(b.bootstrap, "b")
        self.addCleanup(bb.stop)
        h = self.wait_closed(2, "the scale-out")
        r = h[-1]
        self.assertEqual(r["cause"]["cause"], "member joined")
        b_id = r["members_in"][0]
        self.assertTrue(b_id.startswith("b-"), r)
        self.assertIn(b_id, r["cause"]["detail"])
        self.assertEqual(r["generation"], 2)
        self.assertEqual(r["barrier"]["member_id"], a_id, r)
        self.assertGreaterEqual(r["barrier"]["after_first_join_ms"], 0)
        self.assertEqual(r["partitions_moved"], 1, r)
        self.assertEqual(sorted(m["member_id"] for m in r["members"]), sorted([a_id, b_id]))
        for m in r["members"]:
            self.assertIsNotNone(m["pause_ms"], m)
            self.assertGreaterEqual(m["pause_ms"], 0)
        self.assertEqual(sorted(m["partitions_after"] for m in r["members"]), [1, 1])

        # b leaves (LeaveGroup on close)
        bb.stop()
        h = self.wait_closed(3, "the leave")
        r = h[-1]
        self.assertEqual(r["cause"]["cause"], "member left", r)
        self.assertIn(b_id, r["cause"]["detail"])
        self.assertEqual(r["members_out"], [b_id])
        self.assertEqual(r["barrier"]["member_id"], a_id)
        self.assertEqual(len(h), 3)

        # a member in another process joins and is killed: its session times out
        p = subprocess.Popen([sys.executable, "-c", KILLED, b.bootstrap, GROUP, TOPIC],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        deadline = time.monotonic() + 90
        while True:
            _, g = self.get("/v1/groups/%s" % GROUP)
            if g["members"] == 2 and g["state"] == "Stable":
                break
            self.assertLess(time.monotonic(), deadline, g)
            time.sleep(0.2)
        killed = [m for m in g["last_rebalance"]["members_in"] if m.startswith("killed-")]
        self.assertEqual(len(killed), 1, g)
        p.send_signal(signal.SIGKILL)
        p.wait(30)
        deadline = time.monotonic() + 90
        while True:
            h = self.history()
            r = h[-1]
            if r["cause"]["cause"] == "session timeout" and r["outcome"] == "Stable":
                break
            self.assertLess(time.monotonic(), deadline, json.dumps(h, indent=1))
            time.sleep(0.2)
        self.assertIn(killed[0], r["cause"]["detail"])
        self.assertEqual(r["members_out"], killed)
        # the ring keeps 3: the first two records are gone
        self.assertEqual(len(h), 3)
        self.assertNotIn(1, [x["generation"] for x in h])

        status, groups = self.get("/v1/groups")
        self.assertEqual(status, 200)
        mine = [x for x in groups["groups"] if x["group_id"] == GROUP]
        self.assertEqual(len(mine), 1)
        self.assertEqual((mine[0]["state"], mine[0]["members"]), ("Stable", 1))

    def wait_coop(self, n_records, n_members):
        """The cooperative group's history once its n_records-th record is
        closed Stable, not expecting a follow-up, with n_members members."""
        deadline = time.monotonic() + 90
        while True:
            h = self.history(COOP_GROUP)
            if (len(h) >= n_records and h[-1]["outcome"] == "Stable"
                    and not h[-1]["follow_up_expected"]
                    and len([m for m in h[-1]["members"] if m["partitions_after"]]) == n_members):
                return h
            if time.monotonic() > deadline:
                self.fail("no record %d with %d members: %s"
                          % (n_records, n_members, json.dumps(h, indent=1)))
            time.sleep(0.2)

    def check_coop_record(self, r, new_member):
        """r: one cooperative scale-out, folded from its two generations."""
        self.assertTrue(r["cooperative"], r)
        self.assertEqual(r["protocol"], "cooperative-sticky")
        self.assertEqual(r["cause"]["cause"], "member joined", r)
        self.assertIn(new_member, r["cause"]["detail"])
        self.assertEqual(r["members_in"], [new_member])
        rounds = r["rounds"]
        self.assertEqual(len(rounds), 2, json.dumps(r, indent=1))
        self.assertEqual(rounds[1]["generation"], rounds[0]["generation"] + 1)
        self.assertEqual(r["generation"], rounds[1]["generation"])
        self.assertEqual(rounds[0]["partitions_revoked"], 1, r)
        self.assertEqual(rounds[1]["partitions_revoked"], 0, r)
        self.assertEqual(r["partitions_moved"], 1, r)
        losers = [m for m in r["members"] if m["partitions_lost"]]
        self.assertEqual(len(losers), 1, r)
        lost = losers[0]
        # its rejoin after revoking started the second round, folded in
        self.assertIn(lost["member_id"], " ".join(t["detail"] for t in r["triggers"]), r)
        # from its JoinGroup of the first round to its SyncGroup of the second
        self.assertLessEqual(lost["join_ms"], rounds[0]["join_end_ms"])
        self.assertEqual(lost["sync_generation"], rounds[1]["generation"])
        self.assertGreaterEqual(lost["sync_ms"], rounds[1]["join_end_ms"])
        self.assertEqual(lost["pause_ms"], lost["sync_ms"] - lost["join_ms"], r)
        self.assertGreater(lost["pause_ms"], 0)
        self.assertEqual(lost["partitions_after"], lost["partitions_before"] - 1)
        for m in r["members"]:
            if m is not lost:
                self.assertEqual(m["partitions_lost"], 0, r)
                self.assertEqual(m["pause_ms"], 0, r)
        got = [m for m in r["members"] if m["member_id"] == new_member]
        self.assertEqual((got[0]["partitions_before"], got[0]["partitions_after"]), (0, 1), r)
        return lost

    def test_cooperative_scale_out(self):
        b = self.broker
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in admin.create_topics([NewTopic(COOP_TOPIC, 3, 1)]).values():
            f.result(60)
        members = {}
        for name in ("a", "b", "c"):
            members[name] = CoopMember(b.bootstrap, name)
            self.addCleanup(members[name].stop)
            h = self.wait_coop(len(members), len(members))
            r = h[-1]
            new = [m for m in r["members_in"] if m.startswith(name + "-")]
            self.assertEqual(len(new), 1, r)
            if name == "a":
                self.assertEqual(len(r["rounds"]), 1, r)
                self.assertEqual(r["members"][0]["pause_ms"], 0, r)  # lost nothing
                continue
            # a,b: 3 partitions 2+1, b's one taken from a in the first round
            # and given in the second; then c's one taken from a again
            lost = self.check_coop_record(r, new[0])
            self.assertTrue(lost["member_id"].startswith("a-"), r)
            if name == "c":
                kept = [m for m in r["members"] if m["member_id"].startswith("b-")]
                self.assertEqual((kept[0]["partitions_before"],
                                  kept[0]["partitions_after"]), (1, 1), r)
        _, g = self.get("/v1/groups/%s" % COOP_GROUP)
        self.assertEqual(g["generation"], 5)  # a; b in two rounds; c in two
        self.assertEqual(g["last_rebalance"]["generation"], 5)
        self.check_cli(self.history(COOP_GROUP))

    def cli(self, *args):
        return subprocess.run([CLI, "groups", "rebalances"] + list(args) +
                              ["--bootstrap-server", self.broker.bootstrap],
                              capture_output=True, text=True, timeout=120)

    def check_cli(self, h):
        """cohort groups rebalances on the cooperative group's history h."""
        r = self.cli(COOP_GROUP, "--json")  # the URL from admin.listeners
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["rebalances"], h)
        r = self.cli(COOP_GROUP, "--admin-url", self.base + "/")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        head = lines[0].split()
        self.assertEqual(head[:3], ["GENERATION", "PROTOCOL", "STARTED"])
        # aligned columns (cells may hold blanks): cut at the headers' offsets
        at = []
        for name in head:
            at.append(lines[0].index(name, at[-1] + 1 if at else 0))
        at.append(None)
        rows = [{name: ln[at[i]:at[i + 1]].strip() for i, name in enumerate(head)}
                for ln in lines[1:]]
        self.assertEqual([x["GENERATION"] for x in rows], ["1", "2-3", "4-5"])
        for x, rec in zip(rows, h):
            self.assertEqual(x["CAUSE"], "member joined")
            self.assertEqual(x["DETAIL"], rec["cause"]["detail"])
            self.assertEqual(x["DURATION-MS"], str(rec["duration_ms"]))
            self.assertEqual((x["IN"], x["OUT"], x["OUTCOME"]), ("1", "0", "Stable"))
            self.assertEqual(x["BARRIER"], rec["barrier"]["member_id"])
            self.assertEqual(x["MOVED"], str(rec["partitions_moved"]))
            self.assertEqual(x["MAX-PAUSE-MS"],
                             str(max(m["pause_ms"] for m in rec["members"])))
        r = self.cli(COOP_GROUP, "--members")
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = [ln.split() for ln in r.stdout.splitlines()[1:]]
        want = [[(str(rec["generation"]) if len(rec["rounds"]) == 1 else "%d-%d" % (
                    rec["rounds"][0]["generation"], rec["rounds"][-1]["generation"])),
                 m["member_id"], str(m["pause_ms"]), str(m["partitions_before"]),
                 str(m["partitions_after"]), str(m["partitions_lost"]),
                 str(m["sync_generation"])] for rec in h for m in rec["members"]]
        self.assertEqual(rows, want)
        r = self.cli("no-such-group")
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertIn("does not exist", r.stderr)
        r = self.cli(COOP_GROUP, "--admin-url", "http://127.0.0.1:%d" % free_port())
        self.assertEqual(r.returncode, 3, r.stderr)
        # the Kafka listener is no admin API
        r = self.cli(COOP_GROUP, "--admin-url", "http://%s" % self.broker.bootstrap)
        self.assertEqual(r.returncode, 8, r.stderr)
        self.assertIn("not cohortd's admin API", r.stderr)


if __name__ == "__main__":
    main(requires_modules=("kafka", "confluent_kafka"))
