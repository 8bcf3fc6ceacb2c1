#!/bin/sh
# bench/groups/run.sh: consumer-group benchmarks, cohortd side by side with
# Apache Kafka (the reference broker, tools/kafka-ref.sh) and librdkafka's
# mock cluster, then the coordinator's own throughput and memory.
#
#   bench/groups/run.sh [--quick] [--groups-only] [--big N]
#
# 1. builds the Release cohortd (build/cohortd) and the two bench programs,
#    installs Kafka 4 (tools/kafka-ref.sh install 4) and says which machine
#    and versions the figures are from;
# 2. group_bench: real librdkafka consumers against cohortd, Kafka and the
#    mock in the same run (bench/groups/group_bench.c lists the scenarios:
#    10 and BIG joining at once, +1 join, -1 leave, a crash, a static
#    restart, eager and cooperative-sticky), every broker first with
#    group.initial.rebalance.delay.ms=0, then with Kafka's default 3000 for
#    the join-at-once rows; table.py prints them side by side, with ratios
#    kafka/cohortd and mock/cohortd (> 1: cohortd took less time);
# 3. bench/groups/run-coord.sh (skipped with --groups-only): raw-protocol
#    members (loadgen.c), 20, 1,000 and 10,000 in groups of 100, against the
#    loopback limit (hb_echo.c), cohortd and Kafka: heartbeats/s and
#    latency, offset commits/s, memory per member, then callgrind's
#    instructions per heartbeat and per commit;
# 4. bench/groups/run-replay.sh (skipped with --groups-only): the time to
#    load __consumer_offsets after a restart with 1,000,000 and 10,000,000
#    offset records (--quick: 1,000,000), cohortd beside Kafka;
# 5. bench/groups/run-scale.sh (skipped with --groups-only): 100,000 members
#    in 1,000 groups on one cohortd over shared connections, and 10,000
#    members a connection each on cohortd and Kafka (--quick: 10,000 over
#    1,000 connections and 1,000 a connection each, 5 s a phase);
# 6. bench/groups/run-cp.sh (skipped with --groups-only): the consumer
#    rebalance protocol (KIP-848) and, for contrast, the classic one with
#    confluent-kafka consumers, cohortd beside Kafka: 10, 100 and 1,000
#    joining at once (--quick: 10 and 100), +1 and -1 on a group of 100,
#    ConsumerGroupHeartbeat/s.
# --big N: the large join-at-once group (default 100; --quick: 30).
# Only 127.0.0.1; every broker started here is stopped on exit.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${BENCH_OUT:-$ROOT/build/bench-groups}
QUICK=0
GROUPS_ONLY=0
BIG=100
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1; BIG=30 ;;
	--groups-only) GROUPS_ONLY=1 ;;
	--big) BIG=$2; shift ;;
	*) echo "usage: $0 [--quick] [--groups-only] [--big N]" >&2; exit 2 ;;
	esac
	shift
done

cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$ROOT/build" -j2 --target cohortd >/dev/null
mkdir -p "$OUT"
cc -O2 -Wall -o "$OUT/group_bench" "$ROOT/bench/groups/group_bench.c" -lrdkafka -lpthread
COHORTD="$ROOT/build/cohortd"
KREF="$ROOT/tools/kafka-ref.sh"
JAVA_BIN=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}/bin/java
"$KREF" install 4

PIDS=""
KAFKA_DIRS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
	for d in $KAFKA_DIRS; do [ -d "$d" ] && KAFKA_REF_DIR=$d "$KREF" stop 4 || true; done
	rm -rf "$OUT/data-"*
}
trap cleanup EXIT INT TERM

. "$ROOT/bench/lib.sh"

# start_cohortd NAME DELAY_MS: sets PORT and PID
start_cohortd() {
	PORT=$(free_port)
	rm -rf "$OUT/data-$1"
	"$COHORTD" --set "listeners=PLAINTEXT://127.0.0.1:$PORT" --set "log.dirs=$OUT/data-$1" \
		--set "group.initial.rebalance.delay.ms=$2" --set group.min.session.timeout.ms=500 \
		--set offsets.topic.num.partitions=50 --set admin.listeners= >"$OUT/cohortd-$1.log" 2>&1 &
	PID=$!
	PIDS="$PIDS $PID"
	wait_port "$PORT" 100
}

stop_cohortd() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# start_kafka NAME DELAY_MS: sets KAFKA (the bootstrap address) and KDIR
start_kafka() {
	KDIR="$OUT/kafka-$1"
	KAFKA_DIRS="$KAFKA_DIRS $KDIR"
	KAFKA=$(KAFKA_REF_DIR=$KDIR "$KREF" start 4 "group.initial.rebalance.delay.ms=$2" \
		offsets.topic.num.partitions=50)
}

stop_kafka() { KAFKA_REF_DIR=$KDIR "$KREF" stop 4; }

echo "== machine and versions"
echo "$(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), $(free -g | awk '/^Mem:/ {print $2}') GB RAM, $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "cohortd $(git -C "$ROOT" describe --always --dirty) (Release), Apache Kafka 4.4.0 on $("$JAVA_BIN" -version 2>&1 | head -1), librdkafka $(pkg-config --modversion rdkafka 2>/dev/null || echo '?')"

echo
echo "== consumer groups: cohortd vs Apache Kafka vs librdkafka mock cluster (group_bench, BIG=$BIG)"
GB="$OUT/group_bench -n $BIG -s 6000 -H 500"
R="$OUT/rows"
rm -rf "$R"
mkdir -p "$R"
D0=", initial delay 0 ms"
D3=", initial delay 3000 ms"
start_cohortd groups 0
$GB -b "127.0.0.1:$PORT" -T cohortd -L "$D0" >"$R/1-cohortd-0"
stop_cohortd "$PID"
start_cohortd groups3 3000
$GB -b "127.0.0.1:$PORT" -T cohortd -J -L "$D3" >"$R/2-cohortd-3000"
stop_cohortd "$PID"
start_kafka d0 0
$GB -b "$KAFKA" -T kafka -L "$D0" >"$R/3-kafka-0"
stop_kafka
start_kafka d3 3000
$GB -b "$KAFKA" -T kafka -J -L "$D3" >"$R/4-kafka-3000"
stop_kafka
$GB -M -T mock -L "$D0" >"$R/5-mock"
grep -h '^INFO' "$R/1-cohortd-0" | cut -f2
/usr/bin/python3 "$ROOT/bench/groups/table.py" "$R"/*
echo "(the mock has no initial delay: its rows are under delay 0; it ends a join phase on a fixed timer)"
[ $GROUPS_ONLY = 1 ] && exit 0

echo
echo "== coordinator throughput: cohortd vs Apache Kafka vs the loopback limit (run-coord.sh)"
if [ $QUICK = 1 ]; then
	"$ROOT/bench/groups/run-coord.sh" "20 1000" 2
else
	"$ROOT/bench/groups/run-coord.sh"
fi

echo
echo "== replay of __consumer_offsets after a restart: cohortd vs Apache Kafka (run-replay.sh)"
if [ $QUICK = 1 ]; then
	"$ROOT/bench/groups/run-replay.sh" 1000000
else
	"$ROOT/bench/groups/run-replay.sh"
fi

echo
echo "== many members on one coordinator: cohortd vs Apache Kafka (run-scale.sh)"
if [ $QUICK = 1 ]; then
	"$ROOT/bench/groups/run-scale.sh" 10000 1000 5 3000 1000
else
	"$ROOT/bench/groups/run-scale.sh"
fi

echo
echo "== the consumer rebalance protocol (KIP-848) and the classic one: cohortd vs Apache Kafka (run-cp.sh)"
if [ $QUICK = 1 ]; then
	"$ROOT/bench/groups/run-cp.sh" 10 100
else
	"$ROOT/bench/groups/run-cp.sh"
fi
