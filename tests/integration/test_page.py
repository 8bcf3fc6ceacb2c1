"""cohortd's live page (/ui) end to end in headless Chromium: Debian's
/usr/bin/chromium driven by playwright-core from npm (pinned in
package.json; no browser download), js/page_e2e.mjs. A librdkafka group
goes through join, scale-out and leave while the page stays open: without
a reload (the page follows /v1/events, server-sent events) it shows the
group's state, the members, the partition-to-owner grid with each
partition's lag, and the rebalance timeline: a marker per rebalance with
its generation, cause and barrier holder, one lane per member with when it
owned partitions and when it was paused and why. The last view is saved as
a screenshot (COHORT_ARTIFACTS/page.png)."""
import http.client
import json
import os
import subprocess
import time
import urllib.error
import urllib.request

import kwire
from harness import BrokerTestCase, _pdeathsig, main
from test_cli_json import Poller
from test_group_helpers import wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = os.environ.get("COHORT_CLI", "")
ARTIFACTS = os.environ.get("COHORT_ARTIFACTS", "")
GROUP, TOPIC = "page-g", "page-t"


class LivePage(BrokerTestCase):
    broker_settings = {"admin.listeners": "http://127.0.0.1:0",
                       "group.initial.rebalance.delay.ms": "0",
                       "group.min.session.timeout.ms": "500"}

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.base = "http://127.0.0.1:%d" % cls.broker.admin_port()

    def api(self, path):
        try:
            with urllib.request.urlopen(self.base + path, timeout=30) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            self.assertEqual(e.code, 404, path)
            return None

    def cli(self, *args, stdin=None):
        r = subprocess.run([CLI] + list(args) + ["--bootstrap-server", self.broker.bootstrap],
                           input=stdin, capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)

    def settled(self, members):
        """The group Stable with `members` members owning every partition."""
        def ready():
            p = self.api("/v1/groups/%s/partitions" % GROUP)
            return (p and p["state"] == "Stable" and len(p["members"]) == members and
                    all(x["owner"] for x in p["partitions"]) and p)
        return wait_until(ready, timeout=60, what="%d members settled" % members)

    def ask(self, page, cmd):
        page.stdin.write(json.dumps(cmd) + "\n")
        page.stdin.flush()
        out = json.loads(page.stdout.readline())
        self.assertNotIn("error", out, json.dumps(out, indent=1))
        self.assertEqual(out["page_errors"], [])
        return out

    def test_timeline_through_join_scale_out_and_leave(self):
        self.cli("topics", "create", TOPIC, "--partitions", "4")
        self.cli("produce", TOPIC, stdin=b"".join(b"r%d\n" % i for i in range(40)))
        # commits at 0 (the members commit nothing): lag = each partition's end
        self.cli("groups", "reset-offsets", GROUP, "--topic", TOPIC, "--to-earliest",
                 "--execute")
        a = Poller(self.broker.bootstrap, GROUP, TOPIC, "a")
        members = [a]
        page = None
        try:
            self.settled(1)
            page = subprocess.Popen(["node", os.path.join(HERE, "js", "page_e2e.mjs"),
                                     "%s/ui#group=%s" % (self.base, GROUP)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                    cwd=HERE, preexec_fn=_pdeathsig)
            seen = self.ask(page, {"markers": 1, "members": 1})
            self.assertIn({"group": GROUP, "state": "Stable"}, seen["groups"])
            self.assertEqual(seen["state"], "Stable")
            a_id = seen["members"][0]
            self.assertTrue(a_id.startswith("a-"), a_id)
            self.assertEqual(seen["markers"][0]["generations"], "1")
            self.assertEqual(seen["markers"][0]["cause"], "member joined")
            self.assertIn("gen 1 · member joined", seen["markers"][0]["text"])
            self.assertEqual(seen["markers"][0]["barrier"], a_id)
            self.assertEqual({c["owner"] for c in seen["grid"]}, {a_id})
            self.assertEqual(sorted(c["partition"] for c in seen["grid"]),
                             ["%s-%d" % (TOPIC, p) for p in range(4)])
            ends = {"%s-%d" % (TOPIC, p["partition"]): p["log_end"]
                    for p in self.api("/v1/groups/%s/partitions" % GROUP)["partitions"]}
            self.assertEqual(sum(ends.values()), 40)
            self.assertEqual({c["partition"]: c["lag"] for c in seen["grid"]},
                             {k: "lag %d" % v for k, v in ends.items()})  # committed 0
            self.assertEqual([ln["member"] for ln in seen["lanes"]], [a_id])
            self.assertEqual(seen["lanes"][0]["owned"], [4])

            members.append(Poller(self.broker.bootstrap, GROUP, TOPIC, "b"))  # scale-out
            self.settled(2)
            seen = self.ask(page, {"markers": 2, "members": 2})
            self.assertEqual(seen["loads"], 1)  # the same page, updated by its events
            b_id = [m for m in seen["members"] if m != a_id][0]
            last = seen["markers"][-1]
            self.assertEqual(last["cause"], "member joined")
            self.assertGreaterEqual(int(last["generations"].split(",")[-1]), 2)
            self.assertEqual({c["owner"] for c in seen["grid"]}, {a_id, b_id})
            lanes = {ln["member"]: ln for ln in seen["lanes"]}
            self.assertEqual(set(lanes), {a_id, b_id})
            # eager: a gave up everything while b joined; it owned 4, then 2
            self.assertTrue(any("member joined" in p["why"] and "eager" in p["why"]
                                for p in lanes[a_id]["pauses"]), lanes[a_id])
            self.assertEqual(lanes[a_id]["owned"][0], 4)
            self.assertEqual(lanes[a_id]["owned"][-1], 2)
            self.assertEqual(lanes[b_id]["owned"][-1], 2)
            # the what-if of one more member, on the page as the API has it
            sim = self.api("/v1/groups/%s/simulate?add_member=1" % GROUP)
            self.assertEqual(seen["whatif"], [
                [x["strategy"], str(len(x["assignment"])), str(x["balance"]["min"]),
                 str(x["balance"]["max"]), str(x["moved"]), str(x["newly_assigned"]),
                 str(x["unassigned"]), str(x["rounds"]) + (
                     " (%d revoked first)" % x["revoked_first_round"]
                     if x["revoked_first_round"] else "")] for x in sim["strategies"]])
            self.assertEqual([r[1] for r in seen["whatif"]], ["3"] * 4)

            a.stop()  # leave
            members.remove(a)
            self.settled(1)
            seen = self.ask(page, {"markers": 3, "members": 1})
            self.assertEqual(seen["loads"], 1)
            self.assertEqual(seen["members"], [b_id])
            last = seen["markers"][-1]
            self.assertEqual(last["cause"], "member left")
            self.assertEqual(last["barrier"], b_id)
            self.assertIn("barrier: " + b_id[:21], seen["barriers"][-1])
            self.assertEqual({c["owner"] for c in seen["grid"]}, {b_id})
            lanes = {ln["member"]: ln for ln in seen["lanes"]}
            self.assertEqual(set(lanes), {a_id, b_id})  # a's lane stays, ended
            self.assertEqual(lanes[b_id]["owned"][-1], 4)
            gens = [int(g) for m in seen["markers"] for g in m["generations"].split(",")]
            self.assertEqual(gens, sorted(gens))
            if ARTIFACTS:
                os.makedirs(ARTIFACTS, exist_ok=True)
                shot = os.path.join(ARTIFACTS, "page.png")
                self.ask(page, {"shot": shot})
                with open(shot, "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        finally:
            for m in members:
                m.stop()
            if page:
                page.stdin.close()
                page.wait(30)
                page.stdout.close()

    def test_event_stream_and_a_clean_stop_with_streams_open(self):
        """/v1/events: every open stream gets the latest summary at once and
        each change after it; a client that goes away is dropped; cohortd
        stops cleanly (exit 0, sanitizer-clean) with streams still open, and
        ends them."""
        b = self.new_broker(settings={"admin.listeners": "http://127.0.0.1:0"})
        b.start()
        port = b.admin_port()

        def next_event(r):
            lines = []
            while True:
                line = r.readline()
                if not line:
                    return None  # the stream ended
                if line == b"\n" and lines:
                    break
                lines.append(line.decode().rstrip("\n"))
            self.assertEqual(lines[0], "event: groups")
            self.assertTrue(lines[1].startswith("data: "), lines)
            return json.loads(lines[1][6:])
        streams = []
        for _ in range(3):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("GET", "/v1/events")
            r = c.getresponse()
            self.assertEqual((r.status, r.getheader("Content-Type")), (200, "text/event-stream"))
            self.assertEqual(next_event(r), {"groups": []})
            streams.append((c, r))
        streams[0][0].close()  # this client goes away
        with kwire.Conn(b.port) as k:
            kwire.create_topics(k, [("ev-t", 1, 1)])
            self.assertEqual(kwire.offset_commit(k, 2, "ev-g", [("ev-t", 0, 0, None)]),
                             {("ev-t", 0): 0})
        for _, r in streams[1:]:
            ev = next_event(r)
            while ev is not None and not ev["groups"]:
                ev = next_event(r)
            self.assertEqual([g["group_id"] for g in ev["groups"]], ["ev-g"])
            self.assertEqual(ev["groups"][0]["state"], "Empty")
        b.stop()  # asserts exit status 0 and no sanitizer report
        for c, r in streams[1:]:
            self.assertIsNone(next_event(r))  # ended by the stop
            c.close()


if __name__ == "__main__":
    main(requires_modules=("confluent_kafka",))
