"""kcat (librdkafka) lists the broker and the topics created beforehand:
`kcat -L`, `kcat -L -J`, and `kcat -L -t TOPIC`."""
import json
import re

import kwire
from harness import BrokerTestCase, main, run

TOPICS = {"kcat-one": 1, "kcat-three": 3, "kcat.dots_and-dashes": 5}


class Kcat(BrokerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        with kwire.Conn(cls.broker.port) as c:
            res = kwire.create_topics(c, [(n, p, 1) for n, p in TOPICS.items()], 4)
            cls.node = kwire.metadata(c, 1, [])["brokers"][0]["node_id"]
        for n in TOPICS:
            assert res["topics"][n]["error_code"] == 0, res

    def kcat(self, *args):
        p = run(["kcat", "-b", self.broker.bootstrap, "-m", "20"] + list(args), timeout=60)
        self.assertEqual(p.returncode, 0, "kcat %s failed:\n%s\n%s" % (args, p.stdout, p.stderr))
        return p.stdout

    def test_list(self):
        out = self.kcat("-L")
        self.assertIn("1 brokers:", out, out)
        self.assertRegex(out, r"broker %d at 127\.0\.0\.1:%d" % (self.node, self.broker.port))
        self.assertIn("(controller)", out, out)
        for name, parts in TOPICS.items():
            self.assertIn('topic "%s" with %d partitions:' % (name, parts), out)
        # every partition led by this broker, no per-partition error
        for m in re.finditer(r"partition (\d+), leader (-?\d+), replicas: ([\d,]*), isrs: ([\d,]*)(.*)", out):
            self.assertEqual(int(m.group(2)), self.node, m.group(0))
            self.assertEqual(m.group(3), str(self.node), m.group(0))
            self.assertEqual(m.group(4), str(self.node), m.group(0))
            self.assertNotIn("Error", m.group(5), m.group(0))

    def test_list_json(self):
        data = json.loads(self.kcat("-L", "-J"))
        self.assertEqual(data["controllerid"], self.node)
        self.assertEqual([(b["id"], b["name"]) for b in data["brokers"]],
                         [(self.node, "127.0.0.1:%d" % self.broker.port)])
        topics = {t["topic"]: t for t in data["topics"]}
        for name, parts in TOPICS.items():
            self.assertIn(name, topics)
            t = topics[name]
            self.assertNotIn("error", t, t)
            self.assertEqual(sorted(p["partition"] for p in t["partitions"]), list(range(parts)))
            for p in t["partitions"]:
                self.assertEqual(p["leader"], self.node)
                self.assertEqual([r["id"] for r in p["replicas"]], [self.node])
                self.assertEqual([r["id"] for r in p["isrs"]], [self.node])

    def test_list_one_topic(self):
        data = json.loads(self.kcat("-L", "-J", "-t", "kcat-three"))
        names = [t["topic"] for t in data["topics"]]
        self.assertEqual(names, ["kcat-three"])
        self.assertEqual(len(data["topics"][0]["partitions"]), 3)

    def test_list_with_old_protocol_versions(self):
        # librdkafka without ApiVersions, as against a 0.8/0.9 broker: Metadata v0
        for fallback in ("0.8.2", "0.9.0"):
            with self.subTest(fallback=fallback):
                out = self.kcat("-L", "-X", "api.version.request=false",
                                "-X", "broker.version.fallback=" + fallback)
                self.assertRegex(out, r"broker %d at 127\.0\.0\.1:%d" % (self.node, self.broker.port))
                for name, parts in TOPICS.items():
                    self.assertIn('topic "%s" with %d partitions:' % (name, parts), out)


if __name__ == "__main__":
    main(requires_tools=["kcat"])
