#!/bin/sh
# bench/groups/run-coord.sh: the coordinator's own throughput, cohortd side by
# side with Apache Kafka 4.4 (tools/kafka-ref.sh) and the loopback limit, in
# one run, with raw-protocol members (bench/groups/loadgen.c: JoinGroup v5,
# SyncGroup v3, Heartbeat v3, OffsetCommit v7, one connection and one request
# in flight per member, groups of 100).
#
#   bench/groups/run-coord.sh [SIZES] [SECONDS]    (default "20 1000 10000" 3)
#   bench/groups/run-coord.sh callgrind [SECONDS]  (the instruction counts only)
#
# Per size: the echo peer (bench/groups/hb_echo.c: answers each frame with a
# Heartbeat response and does nothing else: the most heartbeats/s this
# machine's loopback and loadgen allow), cohortd (Release build, offsets
# acknowledged after fsync), Kafka (single node, 1 GB heap as
# kafka-server-start's default; its offset commits wait for the local log
# append, acks=all on one replica, without fsync: Kafka's default). Printed:
# heartbeats/s and their p50/p99/max latency, commits/s and their p99, and
# memory per member: cohortd's RSS growth, Kafka's live heap growth after a
# full GC (jcmd GC.run, GC.heap_info) and its RSS growth. Ratios: cohortd /
# echo (the issue's target: >= 0.9) and cohortd / Kafka (> 1: cohortd ahead).
# Then the same members over TLS against plaintext on one cohortd, and
# callgrind's instructions per heartbeat and per commit.
# Only 127.0.0.1; every server started here is stopped on exit.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${BENCH_OUT:-$ROOT/build/bench-coord}
SIZES=${1:-"20 1000 10000"}
SECS=${2:-3}
[ "$SIZES" = callgrind ] && SIZES=""
cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$ROOT/build" -j2 --target cohortd >/dev/null
mkdir -p "$OUT"
cc -O2 -Wall -o "$OUT/loadgen" "$ROOT/bench/groups/loadgen.c" -lssl -lcrypto
cc -O2 -Wall -o "$OUT/hb_echo" "$ROOT/bench/groups/hb_echo.c"
KREF="$ROOT/tools/kafka-ref.sh"
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
"$KREF" install 4
# 10,000 members: 10,000 sockets on each side
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

PIDS=""
KDIR=""
cleanup() {
	stop_started
	rm -rf "$OUT/data-"*
}
trap cleanup EXIT INT TERM

. "$ROOT/bench/lib.sh"

echo "== machine and versions"
echo "$(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "cohortd $(git -C "$ROOT" describe --always --dirty) (Release), Apache Kafka 4.4.0 on $("$JAVA_HOME/bin/java" -version 2>&1 | head -1)"
echo
R="$OUT/results"
: >"$R"
for n in $SIZES; do
	g=$(((n + 99) / 100))
	# echo peer
	port=$(free_port)
	"$OUT/hb_echo" "$port" &
	epid=$!
	PIDS="$PIDS $epid"
	wait_port "$port"
	"$OUT/loadgen" -E -b "127.0.0.1:$port" -m "$n" -g "$g" -d "$SECS" -x echo 2>"$OUT/echo-$n.err" |
		grep '^RESULT' >>"$R" || { echo "echo $n failed:"; tail -3 "$OUT/echo-$n.err"; }
	kill "$epid"; wait "$epid" 2>/dev/null || true
	# cohortd
	port=$(free_port)
	rm -rf "$OUT/data-$n"
	"$ROOT/build/cohortd" --set "listeners=PLAINTEXT://127.0.0.1:$port" \
		--set "log.dirs=$OUT/data-$n" --set group.initial.rebalance.delay.ms=3000 \
		--set offsets.topic.num.partitions=50 --set admin.listeners= \
		>"$OUT/cohortd-$n.log" 2>&1 &
	cpid=$!
	PIDS="$PIDS $cpid"
	wait_port "$port"
	loadgen_topic "$port"
	"$OUT/loadgen" -b "127.0.0.1:$port" -m "$n" -g "$g" -P 100 -d "$SECS" -p "$cpid" \
		-x cohortd 2>"$OUT/cohortd-$n.err" | grep '^RESULT' >>"$R" ||
		{ echo "cohortd $n failed:"; tail -3 "$OUT/cohortd-$n.err"; }
	kill "$cpid"; wait "$cpid" 2>/dev/null || true
	# Kafka
	KDIR="$OUT/kafka-$n"
	kafka=$(KAFKA_REF_DIR=$KDIR KAFKA_HEAP_OPTS="-Xms1g -Xmx1g" "$KREF" start 4 \
		group.initial.rebalance.delay.ms=3000 offsets.topic.num.partitions=50)
	kport=${kafka##*:}
	kpid=$(cat "$KDIR/pid")
	loadgen_topic "$kport"
	h0=$(kafka_heap_kb "$kpid")
	"$OUT/loadgen" -b "127.0.0.1:$kport" -m "$n" -g "$g" -P 100 -d "$SECS" -p "$kpid" \
		-x kafka 2>"$OUT/kafka-$n.err" >"$OUT/kafka-$n.out" || true
	# the members stay in their groups for their session timeout (30 s)
	# after loadgen's connections close: the heap still holds them
	h1=$(kafka_heap_kb "$kpid")
	line=$(grep '^RESULT' "$OUT/kafka-$n.out" || true)
	if [ -n "$line" ]; then
		echo "$line ${h0:-0} ${h1:-0}" >>"$R"
	else
		echo "kafka $n failed:"; tail -3 "$OUT/kafka-$n.err"
	fi
	KAFKA_REF_DIR=$KDIR "$KREF" stop 4 >/dev/null 2>&1 || true
	KDIR=""
done
[ -n "$SIZES" ] && /usr/bin/python3 - "$R" <<'EOF'
import sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows[(f[1], int(f[2]))] = f
def num(f, i):
    return float(f[i]) if f and len(f) > i else 0.0
print("%-8s %-8s %8s %11s %8s %8s %9s %10s %9s %12s" % (
    "members", "broker", "join s", "heartbeat/s", "p50 ms", "p99 ms", "max ms",
    "commits/s", "p99 ms", "KB/member"))
sizes = sorted({k[1] for k in rows})
for n in sizes:
    for b in ("echo", "cohortd", "kafka"):
        f = rows.get((b, n))
        if not f:
            print("%-8d %-8s (failed)" % (n, b))
            continue
        mem = ""
        if b == "cohortd" and num(f, 7) > 0:
            mem = "%.2f RSS" % ((num(f, 8) - num(f, 7)) / n)
        if b == "kafka":
            mem = "%.2f heap, %.2f RSS" % ((num(f, 17) - num(f, 16)) / n,
                                          (num(f, 8) - num(f, 7)) / n)
        commits = "-" if b == "echo" else "%d" % num(f, 6)
        cp99 = "-" if b == "echo" else "%.2f" % (num(f, 14) / 1000)
        print("%-8d %-8s %8s %11d %8.2f %8.2f %9.2f %10s %9s %12s" % (
            n, b, "-" if b == "echo" else f[4], num(f, 5), num(f, 10) / 1000,
            num(f, 11) / 1000, num(f, 12) / 1000, commits, cp99, mem))
    e, c, k = rows.get(("echo", n)), rows.get(("cohortd", n)), rows.get(("kafka", n))
    def ratio(a, b, i):
        return "%.2f" % (num(a, i) / num(b, i)) if a and b and num(b, i) else "?"
    print("%-8d ratios: heartbeats/s cohortd/echo %s, cohortd/kafka %s; commits/s "
          "cohortd/kafka %s" % (n, ratio(c, e, 5), ratio(c, k, 5), ratio(c, k, 6)))
EOF
[ -n "$SIZES" ] && cat <<'EOF'
(cohortd acknowledges a commit after fsync, Kafka after its log append without fsync;
 KB/member: cohortd's RSS growth, Kafka's live heap after a full GC and its RSS growth,
 each including the member's TCP connection)
EOF

# The same members over TLS: one cohortd with a PLAINTEXT and an SSL listener
# (OpenSSL, EC P-256), loadgen through each in turn, twice, 1,000 members.
echo
echo "== TLS vs plaintext (one cohortd, both listeners, 1,000 members, two rounds each)"
TLSD="$OUT/tls"
rm -rf "$TLSD" && mkdir -p "$TLSD"
make_certs "$TLSD"
p1=$(free_port)
p2=$(free_port)
"$ROOT/build/cohortd" --set "listeners=PLAINTEXT://127.0.0.1:$p1,SSL://127.0.0.1:$p2" \
	--set listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL \
	--set ssl.keystore.type=PEM --set "ssl.keystore.location=$TLSD/keystore.pem" \
	--set "log.dirs=$OUT/data-tls" --set group.initial.rebalance.delay.ms=0 \
	--set offsets.topic.num.partitions=50 --set admin.listeners= >"$OUT/cohortd-tls.log" 2>&1 &
tpid=$!
PIDS="$PIDS $tpid"
wait_port "$p1"
loadgen_topic "$p1"
: >"$OUT/tls-results"
for round in 1 2; do
	for mode in plaintext tls; do
		n=$((1000 + 2 * round))
		if [ $mode = tls ]; then args="-T $TLSD/ca.pem -b 127.0.0.1:$p2"; n=$((n + 1)); else args="-b 127.0.0.1:$p1"; fi
		# each run its own groups (loadgen names them by -m): 1002 .. 1005 members
		"$OUT/loadgen" $args -m $n -g 10 -P 100 -d "$SECS" -x $mode \
			2>"$OUT/tls-$mode-$round.err" | grep '^RESULT' >>"$OUT/tls-results" ||
			{ echo "$mode round $round failed:"; tail -3 "$OUT/tls-$mode-$round.err"; }
	done
done
kill "$tpid"; wait "$tpid" 2>/dev/null || true
/usr/bin/python3 - "$OUT/tls-results" <<'EOF'
import sys
rows = [l.split() for l in open(sys.argv[1])]
for mode in ("plaintext", "tls"):
    for f in (r for r in rows if r[1] == mode):
        print("%-10s heartbeats/s %7s (p99 %6.2f ms)  commits/s %6s (p99 %7.2f ms)" % (
            mode, f[5], int(f[11]) / 1000, f[6], int(f[14]) / 1000))
def mean(mode, i):
    v = [float(r[i]) for r in rows if r[1] == mode]
    return sum(v) / len(v) if v else 0
for name, i in (("heartbeats/s", 5), ("commits/s", 6)):
    p, t = mean("plaintext", i), mean("tls", i)
    print("TLS / plaintext %s: %.2f" % (name, t / p if p else 0))
EOF

# Instructions per heartbeat and per commit (valgrind's callgrind): repeatable
# where wall-clock figures move by 2x; compare two commits by running this on
# each. 100 members in one group; the counters are dumped at each phase start.
echo
if ! command -v valgrind >/dev/null || ! command -v callgrind_control >/dev/null; then
	echo "== instructions: valgrind not installed (tools/install-deps.sh bench)"
	exit 0
fi
echo "== instructions per request in cohortd (callgrind, 100 members, user space only)"
port=$(free_port)
rm -rf "$OUT/data-cg" "$OUT"/callgrind.out*
valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" "$ROOT/build/cohortd" \
	--set "listeners=PLAINTEXT://127.0.0.1:$port" --set "log.dirs=$OUT/data-cg" \
	--set group.initial.rebalance.delay.ms=0 --set offsets.topic.num.partitions=50 \
	--set admin.listeners= >"$OUT/cohortd-cg.log" 2>&1 &
cgpid=$!
PIDS="$PIDS $cgpid"
wait_port "$port" 1200 # a minute: valgrind starts slowly
loadgen_topic "$port"
printf '#!/bin/sh\ncallgrind_control -d %s >/dev/null 2>&1\n' "$cgpid" >"$OUT/cg-hook"
chmod +x "$OUT/cg-hook"
LOADGEN_PHASE_HOOK="$OUT/cg-hook" "$OUT/loadgen" -b "127.0.0.1:$port" -m 100 -g 1 -P 100 \
	-d "$SECS" -x callgrind >/dev/null 2>"$OUT/cg-loadgen.err" || true
kill "$cgpid"; wait "$cgpid" 2>/dev/null || true
/usr/bin/python3 - "$OUT" <<'EOF'
import glob, sys
out = sys.argv[1]
counts = dict(l.split()[1:3] for l in open(out + "/cg-loadgen.err") if l.startswith("COUNT"))


def total(path):
    for line in open(path):
        if line.startswith("summary:") or line.startswith("totals:"):
            return int(line.split()[1])
    return 0


dumps = sorted(glob.glob(out + "/callgrind.out.*"), key=lambda p: int(p.rsplit(".", 1)[1]))
# dump 1: start-up and join; 2: the heartbeat phase; 3: the commit phase
if len(dumps) < 3 or "hb" not in counts:
    print("callgrind run incomplete: %d dumps, counts %r" % (len(dumps), counts))
    sys.exit(0)
for name, key, path in (("heartbeat", "hb", dumps[1]), ("commit", "commit", dumps[2])):
    n = int(counts[key])
    ir = total(path)
    print("%-10s %12d instructions / %7d requests = %8.0f per %s" % (
        name, ir, n, ir / n if n else 0, name))
EOF
