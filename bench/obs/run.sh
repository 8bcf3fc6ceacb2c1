#!/bin/sh
# bench/obs/run.sh: what observability costs the coordinator. The raw-protocol
# load generator of bench/groups (1,000 members in 10 groups, one connection
# each, Heartbeat and fsynced OffsetCommit with one request in flight per
# member) against the Release cohortd in two settings, alternated in one run:
#   off  admin.listeners= (no HTTP listener) and group.rebalance.history.size=0
#   on   the admin listener, a history of 100 per group, and a scraper fetching
#        /metrics and every group's /v1/groups/G/rebalances once a second
# The request-path counters (requests, errors, latency histograms, bytes) are
# on in both: they have no switch. Prints heartbeats/s and commits/s per run
# and on/off ratios of the means.
#
#   bench/obs/run.sh [ROUNDS]      (default 2 rounds of off+on)
# Only 127.0.0.1; every process started here is stopped on exit. ~2 min.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${BENCH_OUT:-$ROOT/build/bench-obs}
ROUNDS=${1:-2}
MEMBERS=1000
GROUPS=10
cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$ROOT/build" -j2 --target cohortd >/dev/null
mkdir -p "$OUT"
cc -O2 -Wall -o "$OUT/loadgen" "$ROOT/bench/groups/loadgen.c" -lssl -lcrypto
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	for p in $PIDS; do wait "$p" 2>/dev/null || true; done
	rm -rf "$OUT/data"
}
trap cleanup EXIT INT TERM
. "$ROOT/bench/lib.sh"
export ROOT

# run MODE: one loadgen run; prints "MODE hb/s commits/s"
run() {
	PORT=$(free_port)
	rm -rf "$OUT/data"
	if [ "$1" = on ]; then
		APORT=$(free_port)
		SET="--set admin.listeners=http://127.0.0.1:$APORT --set group.rebalance.history.size=100"
	else
		SET="--set admin.listeners= --set group.rebalance.history.size=0"
	fi
	"$ROOT/build/cohortd" --set "listeners=PLAINTEXT://127.0.0.1:$PORT" --set "log.dirs=$OUT/data" \
		--set group.initial.rebalance.delay.ms=3000 --set group.min.session.timeout.ms=500 \
		--set offsets.topic.num.partitions=50 --set log.level=warn $SET >"$OUT/cohortd-$1.log" 2>&1 &
	PID=$!
	PIDS="$PIDS $PID"
	wait_port "$PORT"
	/usr/bin/python3 - "$PORT" <<'PY'
import os, sys
sys.path.insert(0, os.environ["ROOT"] + "/tests/integration")
import kwire
with kwire.Conn(int(sys.argv[1])) as c:
    kwire.create_topics(c, [("loadgen", 100, 1)])
PY
	SCRAPER=""
	if [ "$1" = on ]; then
		/usr/bin/python3 - "$APORT" "$GROUPS" "$MEMBERS" <<'PY' >"$OUT/scraper.log" 2>&1 &
import sys, time, urllib.request
port, n, members = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
scrapes = 0
while True:
    for path in ["/metrics"] + ["/v1/groups/lg-%d-%d/rebalances" % (members, g) for g in range(n)]:
        try:
            urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10).read()
            scrapes += 1
        except Exception as e:
            pass
    print(scrapes, flush=True)
    time.sleep(1)
PY
		SCRAPER=$!
		PIDS="$PIDS $SCRAPER"
	fi
	line=$("$OUT/loadgen" -b "127.0.0.1:$PORT" -m $MEMBERS -g $GROUPS -P 100 -d 5 -p "$PID" \
		2>"$OUT/loadgen-$1.err" | grep '^RESULT' || true)
	[ -n "$SCRAPER" ] && kill "$SCRAPER" 2>/dev/null && wait "$SCRAPER" 2>/dev/null || true
	kill "$PID"; wait "$PID" 2>/dev/null || true
	[ -n "$line" ] || { echo "loadgen failed:"; tail -5 "$OUT/loadgen-$1.err"; exit 1; }
	set -- "$1" $line
	echo "$1 $7 $8"
}

printf '%-5s %13s %11s\n' mode heartbeats/s commits/s
r=0
: >"$OUT/results"
while [ $r -lt "$ROUNDS" ]; do
	for mode in off on; do
		res=$(run $mode)
		echo "$res" >>"$OUT/results"
		set -- $res
		printf '%-5s %13s %11s\n' "$1" "$2" "$3"
	done
	r=$((r + 1))
done
awk '{hb[$1]+=$2; c[$1]+=$3; n[$1]++}
     END {printf "on/off  heartbeats %.3f  commits %.3f  (means of %d runs each)\n",
          (hb["on"]/n["on"])/(hb["off"]/n["off"]), (c["on"]/n["on"])/(c["off"]/n["off"]), n["on"]}' "$OUT/results"
