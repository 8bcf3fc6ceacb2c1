"""@platformatic/kafka (npm, the newest release for Node 20: package-lock.json)
against cohortd: group consumers (js/platformatic_member.mjs, its classic
protocol with its own round-robin assignor) consume through members joining,
leaving and crashing, with awaited commits; a static member restarts
without a rebalance.

The client has no revoke callback (it commits nothing when a generation
ends), so records read since the last periodic commit are read again by the
partition's next owner: at least once. Its stream also keeps what it fetched
before a rebalance (up to highWaterMark records) and delivers it after the
'consumer:group:join' event that took the partition away, and on a join it
moves partitions back to their committed offsets although it holds later
records: a member reads records again below commits already acknowledged
(seen with 1.35.0 against Apache Kafka 4.4.0 too; no fetch is sent for a
partition after the join that removed it). So only "every record read,
nothing past the end, final commits at the end offsets" is checked, not
exactly-once. The member works around the client's stale positions of
never-committed partitions (js/platformatic_member.mjs, docs/NOTES.md)."""
import os
import shutil

from client_scenarios import HERE, NODE_MODULES, ClientGroupTest, member_flags, require_file
from harness import main

MEMBER = os.path.join(HERE, "js", "platformatic_member.mjs")


class PlatformaticGroups(ClientGroupTest):
    CLIENT = "platformatic"
    GRACEFUL_EXACTLY_ONCE = False

    @classmethod
    def setUpClass(cls):
        require_file(os.path.join(NODE_MODULES, "@platformatic", "kafka", "package.json"),
                     "@platformatic/kafka")
        super().setUpClass()

    def member_argv(self, *flags):
        return [shutil.which("node") or "node", MEMBER] + member_flags(self.broker.bootstrap,
                                                                       *flags)

    def test_consume_roundrobin(self):
        self.consume_through_rebalances("roundrobin")

    def test_static_member_restart(self):
        self.static_restart("roundrobin")


if __name__ == "__main__":
    main()
