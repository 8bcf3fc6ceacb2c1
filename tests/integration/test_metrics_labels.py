"""Hostile names on the admin pages: a group id with bytes that are not
UTF-8, a quote, a backslash and a newline still gives a /metrics page that
promtool accepts (the bytes become U+FFFD, the rest is escaped) and valid
JSON at /v1/groups (the id is null there)."""
import json
import subprocess
import urllib.request

import kwire
from harness import BrokerTestCase, main
from test_metrics import PROMTOOL, parse, val

GROUP = b'bad\xff\xfe"q\\b\nnl'


class MetricsLabels(BrokerTestCase):
    broker_settings = {"admin.listeners": "http://127.0.0.1:0"}

    def fetch(self, path):
        url = "http://127.0.0.1:%d%s" % (self.broker.admin_port(), path)
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.read()

    def test_hostile_group_id(self):
        with kwire.Conn(self.broker.port) as c:
            kwire.create_topics(c, [("labels-t", 1, 1)])
            self.assertEqual(kwire.offset_commit(c, 2, GROUP, [("labels-t", 0, 0, None)]),
                             {("labels-t", 0): 0})
        text = self.fetch("/metrics")
        p = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                           timeout=60)
        self.assertEqual((p.returncode, p.stdout + p.stderr), (0, b""))
        s = parse(text.decode("utf-8"))
        self.assertEqual(val(s, "cohort_consumer_group_lag", group='bad\ufffd\ufffd"q\\b\nnl',
                             topic="labels-t", partition="0"), 0)
        groups = json.loads(self.fetch("/v1/groups"))["groups"]
        self.assertIn(None, [g["group_id"] for g in groups])


if __name__ == "__main__":
    main(requires_modules=("kafka",))
