"""kafka-python 2.2 and aiokafka (PyPI, in .deps/venv) against cohortd:
group consumers (py_member.py) with a ConsumerRebalanceListener that
commits synchronously when partitions are revoked (and the member before it
closes: neither client calls the listener then), through members joining,
leaving and crashing (every record read, re-reads only where Kafka allows
them, final commits read back by another client); eager callbacks on a
join; aiokafka's static membership."""
import sys

import aiokafka
import kafka

from client_scenarios import HERE, VENV_PYTHON, ClientGroupTest, confluent_offsets, member_flags
from harness import main

MEMBER = HERE + "/py_member.py"


class KafkaPythonGroups(ClientGroupTest):
    CLIENT = "kafka-python"
    read_offsets = staticmethod(confluent_offsets)

    def member_argv(self, *flags):
        return [VENV_PYTHON, MEMBER, "--client", "kafka-python"] + member_flags(
            self.broker.bootstrap, *flags)

    def test_consume_range(self):
        self.consume_through_rebalances("range")

    def test_consume_sticky(self):
        self.consume_through_rebalances("sticky")

    def test_eager_callbacks(self):
        self.eager_join_revokes_all("roundrobin")


class AioKafkaGroups(ClientGroupTest):
    CLIENT = "aiokafka"

    def member_argv(self, *flags):
        return [VENV_PYTHON, MEMBER, "--client", "aiokafka"] + member_flags(
            self.broker.bootstrap, *flags)

    def test_consume_roundrobin(self):
        self.consume_through_rebalances("roundrobin")

    def test_eager_callbacks(self):
        self.eager_join_revokes_all("range")

    def test_static_member_restart(self):
        self.static_restart()


if __name__ == "__main__":
    sys.stdout.write("kafka-python %s, aiokafka %s\n" % (kafka.__version__, aiokafka.__version__))
    main()
