"""segmentio/kafka-go 0.4.x (Go module proxy, tests/integration/go) against
cohortd: its Writer produces, Readers with a GroupID (range and roundrobin
balancers) consume through members joining, leaving and crashing, with
synchronous CommitMessages.

kafka-go's Reader has no rebalance callbacks and tells no assignment, so
the group's assignment is checked through DescribeGroups. Records are read
at least once: a CommitMessages called as a generation ends is sent on the
next generation's connection after that generation's OffsetFetch (seen in
cohortd's trace: OffsetFetch corr=4, then OffsetCommit corr=6 with the old
positions), so the partition's next owner may re-read records whose commit
is acknowledged a moment later. Every record is read and the final commits
are the end offsets."""
from client_scenarios import GoClientTest
from harness import main


class KafkaGoGroups(GoClientTest):
    CLIENT = GO_CLIENT = "kafkago"
    REPORTS_ASSIGNMENT = False
    GRACEFUL_EXACTLY_ONCE = False

    def test_consume_range(self):
        self.consume_through_rebalances("range")

    def test_consume_roundrobin(self):
        self.consume_through_rebalances("roundrobin")


if __name__ == "__main__":
    main()
