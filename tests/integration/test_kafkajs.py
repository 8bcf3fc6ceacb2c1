"""kafkajs (tests/integration/node_modules/kafkajs, pinned 2.2.4) admin client
against cohortd: js/admin_test.js does createTopics, listTopics,
fetchTopicMetadata, deleteTopics, createPartitions, describeCluster,
describeConfigs; this starts the broker and runs it with node."""
import os
import sys

from harness import HERE, SKIP, BrokerTestCase, main, run, which


class Kafkajs(BrokerTestCase):
    def test_admin(self):
        p = run(["node", os.path.join(HERE, "js", "admin_test.js"), self.broker.bootstrap],
                timeout=180, cwd=HERE)
        sys.stdout.write(p.stdout)
        failed = [l for l in p.stdout.splitlines() if l.startswith("not ok")]
        self.assertEqual(p.returncode, 0, "kafkajs steps failed:\n%s\n%s"
                         % ("\n".join(failed), p.stderr[-4000:]))


if __name__ == "__main__":
    if not os.path.isdir(os.path.join(HERE, "node_modules", "kafkajs")):
        print("SKIP: kafkajs is not installed in tests/integration/node_modules "
              "(tools/install-deps.sh test installs it)")
        sys.exit(SKIP)
    main(requires_tools=["node"])
