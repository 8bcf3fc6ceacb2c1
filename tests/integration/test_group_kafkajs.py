"""A kafkajs 2.2.4 consumer group on cohortd: js/group_test.js (two consumers,
exact partition cover, commitOffsets / fetchOffsets, describeGroups,
listGroups, leave, deleteGroups; with Produce/Fetch served, the group
consumes what the kafkajs producer wrote)."""
import os
import sys

from harness import HERE, SKIP, BrokerTestCase, main, run
from test_group_helpers import GROUP_SETTINGS, have_produce_fetch, require_group_apis, skip


class KafkajsGroup(BrokerTestCase):
    broker_settings = dict(GROUP_SETTINGS)

    def test_group(self):
        if not require_group_apis(self.broker.port):
            skip("cohortd does not serve JoinGroup yet")
        argv = ["node", os.path.join(HERE, "js", "group_test.js"), self.broker.bootstrap]
        if have_produce_fetch(self.broker.port):
            argv.append("data")
        p = run(argv, timeout=240, cwd=HERE)
        sys.stdout.write(p.stdout)
        failed = [l for l in p.stdout.splitlines() if l.startswith("not ok")]
        self.assertEqual(p.returncode, 0, "kafkajs steps failed:\n%s\n%s"
                         % ("\n".join(failed), p.stderr[-4000:]))


if __name__ == "__main__":
    if not os.path.isdir(os.path.join(HERE, "node_modules", "kafkajs")):
        print("SKIP: kafkajs is not installed in tests/integration/node_modules")
        sys.exit(SKIP)
    main(requires_tools=["node"])
