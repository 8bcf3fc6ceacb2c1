#!/bin/sh
# bench/groups/run-replay.sh: how fast the coordinator loads __consumer_offsets
# after a restart, cohortd side by side with Apache Kafka 4.4
# (tools/kafka-ref.sh), in one run.
#
#   bench/groups/run-replay.sh [RECORDS...]   (default "1000000 10000000")
#
# Per record count and broker: a fresh broker (offsets.topic.num.partitions=50
# as run-coord.sh, log.cleaner.enable=false so that every record written is
# still in the log at the restart), topic "replay" of 500 partitions, then
# bench/groups/replay.py fills __consumer_offsets with simple offset commits
# of 200 groups x 500 partitions (one OffsetCommit writes 500 records; round r
# commits offset r; 100,000 keys, each committed RECORDS/100,000 times: a log
# that compaction has not reached yet). The broker is stopped (SIGTERM, a clean
# shutdown) and started again on the same data; replay.py asks every group's
# OffsetFetch from the moment the new process is launched until all answer
# without COORDINATOR_LOAD_IN_PROGRESS and with the last round's offset.
# Printed per broker: records replayed and the load time from its own log
# (cohortd's "replayed N coordinator records in M ms (C ms of CPU)"; Kafka's per-partition
# "Finished loading of metadata from __consumer_offsets-P ... in M ms ...
# Loaded N records" lines: the span from the first load's start to the last
# one's end), records/s from them, and the time from the launch to every group
# served (process start and log opening included, the JVM's start for Kafka).
# Ratio: cohortd's records/s over Kafka's (the issue's target: cohortd >= 10 M
# records/s). Only 127.0.0.1; every server started here is stopped on exit.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${BENCH_OUT:-$ROOT/build/bench-replay}
COUNTS=${*:-"1000000 10000000"}
NGROUPS=200
PARTS=500
cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$ROOT/build" -j2 --target cohortd >/dev/null
KREF="$ROOT/tools/kafka-ref.sh"
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
export JAVA_HOME
"$KREF" install 4
mkdir -p "$OUT"
PY=/usr/bin/python3
REPLAY="$ROOT/bench/groups/replay.py"

PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
	rm -rf "$OUT/cohortd-data" "$OUT/kafka"
}
trap cleanup EXIT INT TERM

. "$ROOT/bench/lib.sh"
create_topic() { # PORT
	ROOT=$ROOT $PY - "$1" "$PARTS" <<'EOF'
import os, sys
sys.path.insert(0, os.environ["ROOT"] + "/tests/integration")
import kwire
with kwire.Conn(int(sys.argv[1])) as c:
    kwire.create_topics(c, [("replay", int(sys.argv[2]), 1)])
EOF
}
stop_pid() { # PID: SIGTERM, wait for the clean shutdown
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
	PIDS=$(echo "$PIDS" | sed "s/ $1\$//; s/ $1 / /")
}

start_cohortd() { # PORT LOG
	"$ROOT/build/cohortd" --set "listeners=PLAINTEXT://127.0.0.1:$1" \
		--set "log.dirs=$OUT/cohortd-data" --set offsets.topic.num.partitions=50 \
		--set log.cleaner.enable=false --set admin.listeners= >"$2" 2>&1 &
	BPID=$!
	PIDS="$PIDS $BPID"
}
KAFKA_PROPS="offsets.topic.num.partitions=50 log.cleaner.enable=false"
start_kafka() { # PORT CONTROLLER_PORT LOG
	# serve: exec, so $! is the JVM (a clean shutdown on SIGTERM)
	# shellcheck disable=SC2086
	KAFKA_HEAP_OPTS="-Xms1g -Xmx1g" "$KREF" serve 4 "$OUT/kafka" "$1" "$2" $KAFKA_PROPS \
		</dev/null >"$3" 2>&1 &
	BPID=$!
	PIDS="$PIDS $BPID"
}
wait_kafka() { # LOG
	i=0
	until grep -q "Kafka Server started" "$1"; do
		i=$((i + 1))
		[ $i -lt 1200 ] && kill -0 "$BPID" 2>/dev/null || { tail -20 "$1"; exit 1; }
		sleep 0.1
	done
}

echo "== machine and versions"
echo "$(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "cohortd $(git -C "$ROOT" describe --always --dirty) (Release), Apache Kafka 4.4.0 on $("$JAVA_HOME/bin/java" -version 2>&1 | head -1) (1 GB heap)"
echo "$NGROUPS groups x $PARTS partitions of simple commits, 50 __consumer_offsets partitions, cleaner off"
echo
R="$OUT/results"
: >"$R"
for n in $COUNTS; do
	# cohortd
	rm -rf "$OUT/cohortd-data"
	port=$(free_port)
	start_cohortd "$port" "$OUT/cohortd-fill-$n.log"
	wait_port "$port"
	create_topic "$port"
	fill=$($PY "$REPLAY" fill "$port" "$n" $NGROUPS $PARTS)
	stop_pid "$BPID"
	start_cohortd "$port" "$OUT/cohortd-load-$n.log"
	ready=$($PY "$REPLAY" wait "$port" "$n" $NGROUPS $PARTS)
	stop_pid "$BPID"
	echo "cohortd $n $fill $ready $(du -sk "$OUT/cohortd-data/__consumer_offsets-"* | awk '{s+=$1} END {print s}')" >>"$R"
	$PY - "$OUT/cohortd-load-$n.log" >>"$R" <<'EOF'
import re, sys
m = re.search(r"replayed (\d+) coordinator records in (\d+) ms \((\d+) ms of CPU\)",
              open(sys.argv[1]).read())
print("LOAD cohortd %s %s %s" % m.groups() if m else "LOAD cohortd 0 0 0")
EOF
	rm -rf "$OUT/cohortd-data"
	# Kafka
	rm -rf "$OUT/kafka"
	port=$(free_port)
	cport=$(free_port)
	start_kafka "$port" "$cport" "$OUT/kafka-fill-$n.log"
	wait_kafka "$OUT/kafka-fill-$n.log"
	create_topic "$port"
	fill=$($PY "$REPLAY" fill "$port" "$n" $NGROUPS $PARTS)
	stop_pid "$BPID"
	start_kafka "$port" "$cport" "$OUT/kafka-load-$n.log"
	ready=$($PY "$REPLAY" wait "$port" "$n" $NGROUPS $PARTS)
	stop_pid "$BPID"
	echo "kafka $n $fill $ready $(du -sk "$OUT/kafka/data/__consumer_offsets-"* | awk '{s+=$1} END {print s}')" >>"$R"
	$PY - "$OUT/kafka-load-$n.log" >>"$R" <<'EOF'
import re, sys, datetime
# [2026-12-02 13:05:01,234] INFO [GroupCoordinator id=1] Finished loading of metadata
# from __consumer_offsets-7 with epoch 1 in 12ms where 0ms was spent in the
# scheduler. Loaded 20000 records which total to 1000000 bytes. (...)
first = last = None
records = 0
for line in open(sys.argv[1]):
    if "Finished loading" not in line or "__consumer_offsets" not in line:
        continue
    ts = datetime.datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S,%f").timestamp() * 1000
    ms = re.search(r" in (\d+) ?m", line)
    n = re.search(r"Loaded (\d+) records", line)
    start = ts - (int(ms.group(1)) if ms else 0)
    first = start if first is None else min(first, start)
    last = ts if last is None else max(last, ts)
    records += int(n.group(1)) if n else 0
print("LOAD kafka %d %d -1" % (records, (last - first) if first is not None else 0))
EOF
	rm -rf "$OUT/kafka"
done
$PY - "$R" <<'EOF'
import sys
rows, loads = {}, {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] == "LOAD":
        loads.setdefault(f[1], []).append((int(f[2]), int(f[3]), int(f[4])))
    else:
        rows.setdefault(f[0], []).append(f)
print("%-9s %-8s %11s %8s %8s %8s %14s %11s %7s" % (
    "records", "broker", "replayed", "load ms", "M rec/s", "CPU ms", "launch->all ms",
    "fill rec/s", "log MB"))
n_runs = len(rows.get("cohortd", []))
for i in range(n_runs):
    rate = {}
    for b in ("cohortd", "kafka"):
        try:
            f = rows[b][i]
            rec, ms, cpu = loads[b][i]
        except (KeyError, IndexError):
            print("%-9s %-8s (failed)" % ("?", b))
            continue
        rate[b] = rec / (ms / 1000.0) if ms else 0
        print("%-9s %-8s %11d %8d %8.2f %8s %14s %11d %7.0f" % (
            f[1], b, rec, ms, rate[b] / 1e6, cpu if cpu >= 0 else "-", f[6],
            int(f[3]) / float(f[4]), int(f[7]) / 1024.0))
    if rate.get("kafka"):
        print("%-9s ratio: records/s cohortd/kafka %.2f" % (
            rows["cohortd"][i][1], rate.get("cohortd", 0) / rate["kafka"]))
EOF
cat <<'EOF'
(load ms: each broker's own log, wall time; CPU ms: cohortd's loop thread
 during its load (the wall time on a shared machine is mostly the others');
 launch->all: from starting the process to every group's OffsetFetch
 answered with its last offset, process start included)
EOF
