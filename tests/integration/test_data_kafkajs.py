"""kafkajs (tests/integration/node_modules/kafkajs) on the data path:
js/data_test.js produces with an idempotent producer (acks=all, gzip) and
reads offsets back (earliest, latest, by timestamp) through the admin
client, and consumes from the beginning with a consumer group when the
broker serves group APIs."""
import os
import sys

from harness import HERE, SKIP, BrokerTestCase, main, run


class KafkajsData(BrokerTestCase):
    def test_data(self):
        p = run(["node", os.path.join(HERE, "js", "data_test.js"), self.broker.bootstrap],
                timeout=180, cwd=HERE)
        sys.stdout.write(p.stdout)
        failed = [l for l in p.stdout.splitlines() if l.startswith("not ok")]
        self.assertEqual(p.returncode, 0, "kafkajs steps failed:\n%s\n%s"
                         % ("\n".join(failed), p.stderr[-4000:]))


if __name__ == "__main__":
    if not os.path.isdir(os.path.join(HERE, "node_modules", "kafkajs")):
        print("SKIP: kafkajs is not installed in tests/integration/node_modules")
        sys.exit(SKIP)
    main(requires_tools=["node"])
