"""IBM/sarama (Go module proxy, tests/integration/go) against cohortd: its
SyncProducer and ConsumerGroup with the range, roundrobin and sticky
strategies (sarama's protocol is eager: Setup / Cleanup are its rebalance
callbacks, Cleanup commits), static membership."""
from client_scenarios import GoClientTest
from harness import main


class SaramaGroups(GoClientTest):
    CLIENT = GO_CLIENT = "sarama"

    def test_consume_range(self):
        self.consume_through_rebalances("range")

    def test_consume_roundrobin(self):
        self.consume_through_rebalances("roundrobin")

    def test_consume_sticky(self):
        self.consume_through_rebalances("sticky")

    def test_eager_callbacks(self):
        self.eager_join_revokes_all("sticky")

    def test_static_member_restart(self):
        self.static_restart()


if __name__ == "__main__":
    main()
