#!/bin/sh
# bench/groups/run.sh: consumer-group benchmarks, cohortd side by side with
# librdkafka's mock cluster, then the coordinator's own throughput and memory.
#
#   bench/groups/run.sh [--quick]
#
# 1. builds the Release cohortd (build/cohortd) and the two bench programs;
# 2. group_bench: real librdkafka consumers against cohortd (initial rebalance
#    delay 0) and against rd_kafka_mock_cluster_new() in the same run: time to
#    a stable group for 10 and 100 consumers joining at once, +1 join, -1
#    leave, a static member's restart, time each member owned nothing during a
#    join (eager vs cooperative-sticky); a table with ratios mock/cohortd;
# 3. loadgen: raw-protocol members (JoinGroup v5, SyncGroup v3, Heartbeat v3,
#    OffsetCommit v7), one connection each, 1,000 and 10,000 members in groups
#    of 100: heartbeats/s and fsynced offset commits/s with one request in
#    flight per member, and cohortd's RSS before/after the members joined.
# Only 127.0.0.1; every cohortd started here is stopped on exit. < 10 min.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${BENCH_OUT:-$ROOT/build/bench-groups}
QUICK=0
[ "${1:-}" = "--quick" ] && QUICK=1

cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$ROOT/build" -j2 --target cohortd >/dev/null
mkdir -p "$OUT"
cc -O2 -Wall -o "$OUT/group_bench" "$ROOT/bench/groups/group_bench.c" -lrdkafka -lpthread
cc -O2 -Wall -o "$OUT/loadgen" "$ROOT/bench/groups/loadgen.c"
COHORTD="$ROOT/build/cohortd"

PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
	rm -rf "$OUT/data-"*
}
trap cleanup EXIT INT TERM

free_port() {
	/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_cohortd NAME DELAY_MS: sets PORT and PID
start_cohortd() {
	PORT=$(free_port)
	rm -rf "$OUT/data-$1"
	"$COHORTD" --set "listeners=PLAINTEXT://127.0.0.1:$PORT" --set "log.dirs=$OUT/data-$1" \
		--set "group.initial.rebalance.delay.ms=$2" --set group.min.session.timeout.ms=500 \
		--set offsets.topic.num.partitions=50 --set admin.listeners= >"$OUT/cohortd-$1.log" 2>&1 &
	PID=$!
	PIDS="$PIDS $PID"
	i=0
	until /usr/bin/python3 -c "import socket; socket.create_connection(('127.0.0.1',$PORT),0.2)" 2>/dev/null; do
		i=$((i + 1)); [ $i -lt 100 ] || { echo "cohortd did not start" >&2; exit 1; }
		sleep 0.05
	done
}

stop_cohortd() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

create_topic() { # PORT TOPIC PARTITIONS
	/usr/bin/python3 - "$@" <<'EOF'
import sys
import os; sys.path.insert(0, os.environ["ROOT"] + "/tests/integration")
import kwire
port, topic, parts = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
with kwire.Conn(port) as c:
    kwire.create_topics(c, [(topic, parts, 1)])
EOF
}
export ROOT

echo "== consumer groups: cohortd vs librdkafka mock cluster"
start_cohortd groups 0
BIG=100
[ $QUICK = 1 ] && BIG=30
"$OUT/group_bench" -b "127.0.0.1:$PORT" -n $BIG -s 6000 -H 500
stop_cohortd "$PID"

echo
echo "== coordinator throughput (raw protocol, one connection per member, groups of 100)"
SIZES="1000 10000"
[ $QUICK = 1 ] && SIZES="1000"
printf '%-9s %-7s %9s %13s %14s %11s %11s %9s\n' members groups "join s" "heartbeats/s" "commits/s" "RSS0 MB" "RSS1 MB" "KB/member"
for n in $SIZES; do
	g=$((n / 100))
	start_cohortd "lg$n" 3000
	create_topic "$PORT" loadgen 100
	line=$("$OUT/loadgen" -b "127.0.0.1:$PORT" -m "$n" -g "$g" -P 100 -d 3 -p "$PID" 2>"$OUT/loadgen-$n.err" | grep '^RESULT' || true)
	stop_cohortd "$PID"
	if [ -z "$line" ]; then
		echo "$n: loadgen failed:"; tail -5 "$OUT/loadgen-$n.err"; continue
	fi
	set -- $line
	printf '%-9s %-7s %9s %13s %14s %11.1f %11.1f %9.1f\n' "$3" "$4" "$5" "$6" "$7" \
		"$(echo "$8 / 1024" | bc -l)" "$(echo "$9 / 1024" | bc -l)" "$(echo "($9 - $8) / $3" | bc -l)"
done
echo "(commits: OffsetCommit acknowledged after fsync; KB/member includes the member's TCP connection)"
