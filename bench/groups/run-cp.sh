#!/bin/sh
# bench/groups/run-cp.sh: consumer groups under the consumer rebalance protocol
# (KIP-848) and, for contrast, the classic one, cohortd beside Apache Kafka 4.4
# in one run; table.py prints the rows side by side with the ratios
# kafka/cohortd for times and cohortd/kafka for rates (> 1: cohortd ahead).
#
#   bench/groups/run-cp.sh [N ...]        default: 10 100 1000
#   BUILD=DIR: the Release tree (default build/)
#   CP_PROTOCOLS: of consumer, cooperative-sticky, range (default all, comma-separated)
#   CP_CHANGE: the group size of the +1 / -1 rows (default 100; 0: none)
#   CP_HB_SIZES: members of the heartbeats/s rows (default "20 1000"; "": no
#     heartbeats/s rows at all)
#   CP_HB_SECS: seconds of heartbeats per row (default 3)
#   CP_ASSIGNMENT_INTERVAL_MS: group.consumer.assignment.interval.ms on both
#     brokers (default 0: cohortd's default; Kafka 4.4's is 1000)
#
# Rows (bench/groups/cp_bench.py; confluent-kafka consumers of .deps/venv,
# over worker processes of 100 consumers each), per protocol (consumer: the
# broker's uniform assignor; classic cooperative-sticky and classic range):
# N members join at once, time until every partition of an N-partition topic
# is owned; one joins a stable group of CHANGE_N (2 x CHANGE_N partitions) and
# then one leaves: time until it is stable again, the longest time a partition
# had no owner and the longest time an old member owned nothing. Then
# ConsumerGroupHeartbeat v0 from raw-protocol members (bench/groups/loadgen.c
# -C; groups of 100 on a 100-partition topic, and 1,000 members in one group
# on 1,000 partitions; one request in flight per member, as fast as
# answered): heartbeats/s, their p50/p99 latency and the broker's CPU time
# per heartbeat and during the join (user + system, all its threads: on a
# loaded machine the figures that do not depend on how much of the CPU the
# broker was given).
#
# Both brokers get the same group settings: consumer-protocol heartbeat
# interval 500 ms (group.consumer.heartbeat.interval.ms and its minimum),
# group.consumer.assignment.interval.ms as above, everything else their
# defaults (the classic group.initial.rebalance.delay.ms is 3000 on both;
# cohortd's own group.initial.rebalance.quiet.ms is 500); the classic
# consumers heartbeat every 500 ms too. Only 127.0.0.1; every broker started
# here is stopped on exit. Logs: build/bench-cp/cohortd.log, kafka-server.log,
# loadgen-*.err.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${BENCH_OUT:-$ROOT/build/bench-cp}
SIZES=${*:-10 100 1000}
BUILD=${BUILD:-$ROOT/build}
PROTOCOLS=${CP_PROTOCOLS:-consumer,cooperative-sticky,range}
CHANGE=${CP_CHANGE:-100}
HB_SIZES=${CP_HB_SIZES-20 1000}
HB_SECS=${CP_HB_SECS:-3}
PY=$ROOT/.deps/venv/bin/python
[ -x "$PY" ] || { echo "run-cp.sh: $PY missing (tools/install-deps.sh)" >&2; exit 1; }
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j2 --target cohortd >/dev/null
mkdir -p "$OUT"
cc -O2 -Wall -o "$OUT/loadgen" "$ROOT/bench/groups/loadgen.c" -lssl -lcrypto
KREF="$ROOT/tools/kafka-ref.sh"
"$KREF" install 4
. "$ROOT/bench/lib.sh"
# 1,000 consumers: ~5 threads and ~10 descriptors each, in 10 processes;
# 1,000 loadgen sockets
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
SETTINGS="group.consumer.heartbeat.interval.ms=500 group.consumer.min.heartbeat.interval.ms=500"
SETTINGS="$SETTINGS group.consumer.assignment.interval.ms=${CP_ASSIGNMENT_INTERVAL_MS:-0}"

PID=""
KDIR=""
cleanup() {
	[ -n "$PID" ] && { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
	[ -n "$KDIR" ] && [ -d "$KDIR" ] && { KAFKA_REF_DIR=$KDIR "$KREF" stop 4 || true; }
	rm -rf "$OUT/data"
}
trap cleanup EXIT INT TERM

# heartbeats TARGET BOOTSTRAP PID: loadgen -C's rows, for each of HB_SIZES in
# groups of 100 on a 100-partition topic, then 1,000 members in one group on
# a 1,000-partition topic; with the broker's CPU time per heartbeat
heartbeats() {
	[ -n "$HB_SIZES" ] || return 0
	ROOT=$ROOT /usr/bin/python3 - "${2##*:}" <<'EOF'
import os, sys
sys.path.insert(0, os.environ["ROOT"] + "/tests/integration")
import kwire
with kwire.Conn(int(sys.argv[1])) as c:
    kwire.create_topics(c, [("loadgen", 100, 1), ("loadgen1000", 1000, 1)])
EOF
	for spec in $(for n in $HB_SIZES; do echo "$n:$(((n + 99) / 100)):loadgen:100"; done) 1000:1:loadgen1000:1000; do
		IFS=: read -r n g t p <<-EOS
			$spec
		EOS
		err="$OUT/loadgen-$1-$n-$g.err"
		line=$("$OUT/loadgen" -C -G "cg$g" -b "$2" -m "$n" -g "$g" -t "$t" -P "$p" -d "$HB_SECS" -p "$3" \
			-x "$1" 2>"$err" | grep '^RESULT' || true)
		[ -n "$line" ] || { echo "loadgen -C $1 $n failed:" >&2; tail -3 "$err" >&2; continue; }
		cpu=$(sed -n 's/^CPU [^ ]* //p' "$err")
		cpuj=$(sed -n 's/^CPUJOIN [^ ]* //p' "$err")
		# RESULT name members groups join_s hb_per_s commit_per_s rss0 rss1 errors p50 p99 max ...
		echo "$line" | awk -v n="$n" -v g="$g" -v p="$p" -v cpu="${cpu:--1}" -v cpuj="${cpuj:--1}" '{
			r = "consumer protocol: " n " raw members (loadgen -C), " (g == 1 ? "one group" : "groups of " n / g) " on " p " partitions"
			printf "ROW\t%s\t%s: join until each owns its share (ms)\t%.0f\n", $2, r, $5 * 1000
			printf "ROW\t%s\t%s: broker CPU during the join (ms)\t%s\n", $2, r, cpuj
			printf "ROW\t%s\t%s: ConsumerGroupHeartbeat, one in flight each (/s)\t%s\n", $2, r, $6
			printf "ROW\t%s\t%s: heartbeat p50 (us)\t%s\n", $2, r, $11
			printf "ROW\t%s\t%s: heartbeat p99 (us)\t%s\n", $2, r, $12
			printf "ROW\t%s\t%s: broker CPU per heartbeat (us)\t%s\n", $2, r, cpu
			printf "ROW\t%s\t%s: heartbeat errors\t%s\n", $2, r, $10
		}'
	done
}

echo "$(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); cohortd $(git -C "$ROOT" describe --always --dirty) (Release), Apache Kafka 4.4.0, $("$PY" -c 'import confluent_kafka as c; print("confluent-kafka", c.__version__, "librdkafka", c.libversion()[0])')"
echo "broker settings: $SETTINGS"
R="$OUT/rows"
rm -rf "$R" "$OUT/data"
mkdir -p "$R"
PORT=$(free_port)
set --
for kv in $SETTINGS; do set -- "$@" --set "$kv"; done
"$BUILD/cohortd" --set "listeners=PLAINTEXT://127.0.0.1:$PORT" --set "log.dirs=$OUT/data" \
	--set admin.listeners= "$@" >"$OUT/cohortd.log" 2>&1 &
PID=$!
wait_port "$PORT" 100
# shellcheck disable=SC2086
"$PY" "$ROOT/bench/groups/cp_bench.py" "127.0.0.1:$PORT" cohortd -p "$PROTOCOLS" -c "$CHANGE" $SIZES |
	tee "$R/1-cohortd"
heartbeats cohortd "127.0.0.1:$PORT" "$PID" | tee -a "$R/1-cohortd"
echo "cohortd CPU s (user+sys): $(awk '{printf "%.1f", ($14 + $15) / 100}' "/proc/$PID/stat")"
kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""
KDIR="$OUT/kafka"
# shellcheck disable=SC2086
KAFKA=$(KAFKA_REF_DIR=$KDIR KAFKA_HEAP_OPTS="-Xms1g -Xmx1g" "$KREF" start 4 $SETTINGS)
# shellcheck disable=SC2086
"$PY" "$ROOT/bench/groups/cp_bench.py" "$KAFKA" kafka -p "$PROTOCOLS" -c "$CHANGE" $SIZES |
	tee "$R/2-kafka"
heartbeats kafka "$KAFKA" "$(cat "$KDIR/pid")" | tee -a "$R/2-kafka"
echo "Kafka CPU s (user+sys): $(awk '{printf "%.1f", ($14 + $15) / 100}' "/proc/$(cat "$KDIR/pid")/stat")"
cp "$KDIR/server.log" "$OUT/kafka-server.log"
KAFKA_REF_DIR=$KDIR "$KREF" stop 4; KDIR=""
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$ROOT/bench/groups/table.py" "$R"/*
