#!/bin/sh
# bench/run.sh (make bench): every side-by-side benchmark in one command,
# each against its peer in the same run (Release builds; Apache Kafka 4.4
# through tools/kafka-ref.sh, librdkafka, the loopback limit):
#   bench/groups/run.sh        consumer groups (librdkafka consumers, cohortd vs
#                              Kafka vs the mock) and the coordinator's own
#                              throughput (run-coord.sh, with callgrind)
#                              and its replay of __consumer_offsets after a
#                              restart (run-replay.sh), many members
#                              (run-scale.sh), the consumer rebalance
#                              protocol (run-cp.sh)
#   bench/produce-fetch/run.sh produce/fetch throughput, cohortd vs the mock
#   bench/produce/run.sh       libcohort's producer vs librdkafka's
#   bench/client/run.sh        libcohort's consumer vs librdkafka's, on cohortd
#                              and Kafka
#   bench/assign/run.sh        the assignors (make bench-assign alone)
# Installs what they need first (tools/install-deps.sh bench).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
"$ROOT/tools/install-deps.sh" bench
for b in groups/run.sh produce-fetch/run.sh produce/run.sh client/run.sh assign/run.sh; do
	echo
	echo "######## bench/$b"
	"$ROOT/bench/$b"
done
