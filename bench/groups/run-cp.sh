#!/bin/sh
# bench/groups/run-cp.sh: the consumer rebalance protocol (KIP-848) joining
# at once, cohortd beside Apache Kafka 4.4 in one run (cp_bench.py): N
# confluent-kafka consumers (.deps/venv, group.protocol=consumer) subscribe
# to a new group at the same moment; time until every partition of an
# N-partition topic is owned. table.py prints the ratios kafka/cohortd
# (> 1: cohortd took less time).
#
#   bench/groups/run-cp.sh [N ...]        default: 10 100 1000
#   BUILD=DIR: the Release tree (default build/)
#
# Both brokers get the same group settings: heartbeat interval 500 ms
# (group.consumer.heartbeat.interval.ms and its minimum), everything else
# their defaults (Kafka 4.4: group.consumer.assignment.interval.ms=1000;
# cohortd: 0). Only 127.0.0.1; every broker started here is stopped on exit.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${BENCH_OUT:-$ROOT/build/bench-cp}
SIZES=${*:-10 100 1000}
BUILD=${BUILD:-$ROOT/build}
PY=$ROOT/.deps/venv/bin/python
[ -x "$PY" ] || { echo "run-cp.sh: $PY missing (tools/install-deps.sh)" >&2; exit 1; }
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j2 --target cohortd >/dev/null
mkdir -p "$OUT"
KREF="$ROOT/tools/kafka-ref.sh"
"$KREF" install 4
. "$ROOT/bench/lib.sh"
HB="group.consumer.heartbeat.interval.ms=500 group.consumer.min.heartbeat.interval.ms=500"

PID=""
KDIR=""
cleanup() {
	[ -n "$PID" ] && { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
	[ -n "$KDIR" ] && [ -d "$KDIR" ] && { KAFKA_REF_DIR=$KDIR "$KREF" stop 4 || true; }
	rm -rf "$OUT/data"
}
trap cleanup EXIT INT TERM

echo "$(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); cohortd $(git -C "$ROOT" describe --always --dirty) (Release), Apache Kafka 4.4.0, $("$PY" -c 'import confluent_kafka as c; print("confluent-kafka", c.version()[0], "librdkafka", c.libversion()[0])')"
R="$OUT/rows"
rm -rf "$R" "$OUT/data"
mkdir -p "$R"
PORT=$(free_port)
set --
for kv in $HB; do set -- "$@" --set "$kv"; done
"$BUILD/cohortd" --set "listeners=PLAINTEXT://127.0.0.1:$PORT" --set "log.dirs=$OUT/data" \
	--set admin.listeners= "$@" >"$OUT/cohortd.log" 2>&1 &
PID=$!
wait_port "$PORT" 100
# shellcheck disable=SC2086
"$PY" "$ROOT/bench/groups/cp_bench.py" "127.0.0.1:$PORT" cohortd $SIZES >"$R/1-cohortd"
kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
KDIR="$OUT/kafka"
# shellcheck disable=SC2086
KAFKA=$(KAFKA_REF_DIR=$KDIR "$KREF" start 4 $HB)
# shellcheck disable=SC2086
"$PY" "$ROOT/bench/groups/cp_bench.py" "$KAFKA" kafka $SIZES >"$R/2-kafka"
KAFKA_REF_DIR=$KDIR "$KREF" stop 4; KDIR=""
/usr/bin/python3 "$ROOT/bench/groups/table.py" "$R"/*
