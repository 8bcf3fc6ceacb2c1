"""librdkafka's C API (c/rdk_admin.c: rd_kafka_metadata and the Admin API
CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs) against cohortd.
The program's path comes from the environment variable RDK_ADMIN."""
import os
import sys

import kwire

from harness import BrokerTestCase, main, run, SKIP


class Librdkafka(BrokerTestCase):
    def test_admin_and_metadata(self):
        p = run([os.environ["RDK_ADMIN"], self.broker.bootstrap], timeout=180)
        sys.stdout.write(p.stdout)
        self.assertEqual(p.returncode, 0, "rdk_admin failed (exit %d):\n%s"
                         % (p.returncode, p.stderr))

    def test_topics_made_by_librdkafka_survive_restart(self):
        b = self.new_broker(name="rdk-restart")
        b.start()
        p = run([os.environ["RDK_ADMIN"], b.bootstrap], timeout=180)
        self.assertEqual(p.returncode, 0, p.stderr)
        b.restart()
        with kwire.Conn(b.port) as c:
            md = kwire.metadata(c, 12, None, allow_auto=False)
        have = {t["name"]: len(t["partitions"]) for t in md["topic_list"]}
        self.assertEqual(have.get("c-beta"), 4, have)
        self.assertNotIn("c-alpha", have)
        self.assertNotIn("c-gamma", have)
        b.stop()

if __name__ == "__main__":
    if not os.environ.get("RDK_ADMIN") or not os.access(os.environ["RDK_ADMIN"], os.X_OK):
        print("SKIP: RDK_ADMIN (the rdk_admin program) is not set")
        sys.exit(SKIP)
    main()
