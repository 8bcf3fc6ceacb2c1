"""twmb/franz-go (Go module proxy, tests/integration/go) against cohortd:
kgo producer and group consumer with OnPartitionsAssigned / Revoked / Lost,
eager (range) and cooperative-sticky, static membership; kadm admin calls:
ListGroups with a state filter, DescribeGroups, FetchOffsets, Lag,
CommitOffsets, DeleteOffsets (OffsetDelete), DeleteGroups, list offsets."""
import json

from client_scenarios import GO_CLIENTS, CallbackClientTests, GoClientTest, wait_cover
from harness import main, run
from test_group_helpers import all_parts, create_topics, wait_until


class FranzGroups(CallbackClientTests, GoClientTest):
    CLIENT = GO_CLIENT = "franz"

    def kadm(self, *args):
        p = run([GO_CLIENTS, "kadm", "-b", self.broker.bootstrap] + [str(a) for a in args],
                timeout=60)
        self.assertEqual(p.returncode, 0, "kadm %s: %s" % (args, p.stderr))
        return json.loads(p.stdout)

    def test_kadm(self):
        t, g = "kadm-t", "g-kadm"
        create_topics(self.broker.port, {t: 3})
        parts = all_parts({t: 3})
        self.produce(t, 3, 5)
        self.assertEqual(self.kadm("list-offsets", t),
                         {"start": {str(p): {"offset": 0, "error": ""} for p in range(3)},
                          "end": {str(p): {"offset": 5, "error": ""} for p in range(3)},
                          "after0": {str(p): {"offset": 0, "error": ""} for p in range(3)}})
        ms = [self.member(g, [t], "kadm-%d" % i, commit_on_revoke=False, commit_every=0)
              for i in range(2)]
        wait_cover(ms, parts, each_owns=True)
        for m in ms:
            for (_, p) in sorted(m.assignment):
                self.assertEqual(m.commit(t, p, 1 + p), "NO_ERROR")

        listed = self.kadm("groups")
        self.assertEqual(listed[g], {"state": "Stable", "protocol_type": "consumer",
                                     "coordinator": 1})
        self.assertNotIn(g, self.kadm("groups", "Empty"))
        self.assertIn(g, self.kadm("groups", "Stable"))

        d = self.kadm("describe", g)
        self.assertEqual((d["error"], d["state"], d["protocol_type"], d["protocol"],
                          d["coordinator"]), ("", "Stable", "consumer", "range", 1))
        self.assertEqual({x["client_id"]: {tuple(a) for a in x["assigned"]} for x in d["members"]},
                         {m.name: m.assignment for m in ms})
        self.assertEqual({x["member_id"] for x in d["members"]}, {m.member_id for m in ms})
        for x in d["members"]:
            self.assertEqual(x["topics"], [t])
            self.assertEqual(x["host"].lstrip("/"), "127.0.0.1")

        want = {"%s:%d" % (t, p): 1 + p for p in range(3)}
        self.assertEqual({k: v["offset"] for k, v in self.kadm("offsets", g).items()}, want)
        lag = self.kadm("lag", g)
        self.assertEqual((lag["state"], lag["error"]), ("Stable", ""))
        owner = {"%s:%d" % tp: m.name for m in ms for tp in m.assignment}
        self.assertEqual(lag["lag"], {k: {"commit": c, "end": 5, "lag": 5 - c,
                                          "member": owner[k], "error": ""}
                                      for k, c in want.items()})
        # OffsetDelete on a topic the group is subscribed to: refused per partition
        self.assertEqual(self.kadm("delete-offsets", g, t, 0),
                         {"%s:0" % t: "GROUP_SUBSCRIBED_TO_TOPIC"})
        # an admin commit (no member id) to a group with members: UNKNOWN_MEMBER_ID
        self.assertEqual(self.kadm("commit", g, t, 0, 3), {"%s:0" % t: "UNKNOWN_MEMBER_ID"})
        self.assertEqual(self.kadm("delete-group", g), {"error": "NON_EMPTY_GROUP"})

        for m in ms:
            self.assertEqual(m.close(), 0)
        wait_until(lambda: self.kadm("describe", g)["state"] == "Empty", 30, "an Empty group")
        self.assertIn(g, self.kadm("groups", "Empty"))
        self.assertEqual(self.kadm("commit", g, t, 0, 3, t, 2, 0),
                         {"%s:0" % t: "", "%s:2" % t: ""})
        self.assertEqual(self.kadm("delete-offsets", g, t, 1), {"%s:1" % t: ""})
        self.assertEqual({k: v["offset"] for k, v in self.kadm("offsets", g).items()},
                         {"%s:0" % t: 3, "%s:2" % t: 0})
        lag = self.kadm("lag", g)["lag"]
        self.assertEqual({k: (v["commit"], v["lag"], v["member"]) for k, v in lag.items()},
                         {"%s:0" % t: (3, 2, ""), "%s:1" % t: (-1, 5, ""),
                          "%s:2" % t: (0, 5, "")})
        self.assertEqual(self.kadm("delete-group", g), {"error": ""})
        self.assertNotIn(g, self.kadm("groups"))
        self.assertEqual(self.kadm("offsets", g), {})
        self.assertEqual(self.kadm("delete-group", g), {"error": "GROUP_ID_NOT_FOUND"})


if __name__ == "__main__":
    main()
