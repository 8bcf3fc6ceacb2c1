#!/bin/sh
# bench/groups/run-scale.sh: many members on one coordinator (issue 15's
# "100,000 members in 1,000 groups") and the memory per member, in three
# runs: cohortd-shared (MEMBERS over CONNECTIONS shared connections), then
# cohortd-own and kafka-own (Apache Kafka 4.4): KAFKA_MEMBERS members with
# a connection each (0: neither). Kafka gets no shared-connection run: it
# reads a connection's next request only once the last is answered, so a
# member's parked JoinGroup holds up the others on its connection until
# their sessions expire (1,000 members over 100 connections: no group
# Stable within loadgen's 300 s, SyncGroups answered UNKNOWN_MEMBER_ID).
#
#   bench/groups/run-scale.sh [MEMBERS] [CONNECTIONS] [SECONDS] [INTERVAL_MS] [KAFKA_MEMBERS]
#                                   (default 100000 10000 10 3000 10000)
#
# bench/groups/loadgen.c's raw-protocol members (JoinGroup v5, SyncGroup v3,
# Heartbeat v3, OffsetCommit v7) in groups of 100, sharing CONNECTIONS
# connections (loadgen -c: MEMBERS / CONNECTIONS members each, consecutive
# members, so of different groups, on one), each member heartbeating and
# then committing once every INTERVAL_MS (loadgen -i; Kafka's
# heartbeat.interval.ms is 3000) for SECONDS each. Members share
# connections because one process may hold only `ulimit -Hn` descriptors
# (20,000 on the machine this was written on, and no CAP_SYS_RESOURCE to
# raise it): a connection per member would need 100,000 in cohortd alone.
# Loopback source addresses (loadgen -S) go beyond the ~28,000 ephemeral
# ports of one where the limits allow that many connections.
#
# Memory (loadgen -M): every connection asks ApiVersions before any member
# joins, so the broker's RSS is read three times: before connecting, with
# the idle connections, and with every member joined (groups Stable).
# Per connection: RSS growth with the connections; per member: RSS growth
# from there (each member's share of the connections excluded), and for
# cohortd also its heap in use (glibc malloc_stats through gdb, when gdb is
# installed) at the same two points: the coordinator's own bytes per member,
# without what the allocator keeps from the join's transient peak.
# Kafka: the JVM's live heap after a full GC (jcmd) and RSS, with its
# KAFKA_HEAP_OPTS (default here -Xms4g -Xmx4g: 1 GB, Kafka's default, does
# not hold 100,000 members).
# Only 127.0.0.1..127.0.0.N; every server started here is stopped on exit.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${BENCH_OUT:-$ROOT/build/bench-scale}
N=${1:-100000}
CONNS=${2:-10000}
SECS=${3:-10}
IVAL=${4:-3000}
KN=${5:-10000}
cmake -S "$ROOT" -B "$ROOT/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$ROOT/build" -j2 --target cohortd >/dev/null
mkdir -p "$OUT"
cc -O2 -Wall -o "$OUT/loadgen" "$ROOT/bench/groups/loadgen.c" -lssl -lcrypto
KREF="$ROOT/tools/kafka-ref.sh"
JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
[ "$KN" -gt 0 ] && "$KREF" install 4
ulimit -n "$(ulimit -Hn)"
for c in "$CONNS" "$KN"; do
	[ "$((c + 200))" -le "$(ulimit -n)" ] || {
		echo "$c connections do not fit in ulimit -n $(ulimit -n): fewer"
		exit 1
	}
done

PIDS=""
KDIR=""
cleanup() {
	stop_started
	rm -rf "$OUT/data"
}
trap cleanup EXIT INT TERM

. "$ROOT/bench/lib.sh"
cpu_s() { # PID: user+sys seconds so far
	awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$1/stat" 2>/dev/null || echo 0
}

echo "== machine and versions"
echo "$(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), $(uname -sr), $(free -g | awk '/^Mem/ {print $2}') GiB, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "fds: ulimit -n $(ulimit -n) (hard $(ulimit -Hn)), fs.nr_open $(cat /proc/sys/fs/nr_open)"
echo "cohortd $(git -C "$ROOT" describe --always --dirty) (Release)"
echo "cohortd-shared: $N members in groups of 100 over $CONNS connections; cohortd-own and kafka-own: $KN members, one connection each; a heartbeat and then a commit every $IVAL ms per member, $SECS s each"
echo

# run_loadgen NAME BROKER_PID PORT MEMBERS CONNECTIONS HOOK: one loadgen run
# into $OUT/NAME.out (RESULT, MEMORY and the broker's CPU seconds).
run_loadgen() {
	_c0=$(cpu_s "$2")
	LOADGEN_PHASE_HOOK=$6 "$OUT/loadgen" -M -b "127.0.0.1:$3" -m "$4" -g $((($4 + 99) / 100)) \
		-P 100 -c "$5" -S $((($5 + 19999) / 20000)) -i "$IVAL" -d "$SECS" -p "$2" -x "$1" \
		>"$OUT/$1.out" 2>"$OUT/$1.loadgen" || { echo "$1 failed:"; tail -3 "$OUT/$1.loadgen"; }
	echo "CPU $_c0 $(cpu_s "$2")" >>"$OUT/$1.out"
	echo "SHAPE $4 $5" >>"$OUT/$1.out"
}

# cohortd_run NAME MEMBERS CONNECTIONS: a fresh cohortd; the hook adds its
# heap in use at "conns" and "hb" to $OUT/NAME.out
cohortd_run() {
	rm -rf "$OUT/data"
	start_cohortd "$ROOT/build/cohortd" "$OUT/data" "$OUT/$1.log" \
		--set group.initial.rebalance.delay.ms=3000 --set offsets.topic.num.partitions=50
	_pid=$PID
	PIDS="$PIDS $_pid"
	loadgen_topic "${BOOT##*:}"
	_gdb=:
	command -v gdb >/dev/null && _gdb=gdb
	cat >"$OUT/$1.hook" <<EOF
#!/bin/sh
case "\$1" in conns|hb)
	$_gdb -p $_pid -batch -ex 'call (void)malloc_stats()' >>"$OUT/$1.gdb" 2>&1
	# malloc_stats wrote to cohortd's log; the last "in use bytes" is the total
	echo "HEAP \$1 \$(sed -n 's/^in use bytes *= *//p' "$OUT/$1.log" | tail -1)" >>"$OUT/$1.heap"
esac
# the broker's CPU seconds as each phase starts (after the heap is read)
awk -v ph="\$1" '{printf "CPUAT %s %.2f\n", ph, (\$14 + \$15) / 100}' /proc/$_pid/stat >>"$OUT/$1.heap"
EOF
	chmod +x "$OUT/$1.hook"
	: >"$OUT/$1.heap"
	run_loadgen "$1" "$_pid" "${BOOT##*:}" "$2" "$3" "$OUT/$1.hook"
	cat "$OUT/$1.heap" >>"$OUT/$1.out"
	kill "$_pid"; wait "$_pid" 2>/dev/null || true
}

# kafka_run NAME MEMBERS CONNECTIONS: a fresh Kafka; the hook adds its live
# heap (KB, after a full GC) at "conns" and "hb"
kafka_run() {
	KDIR="$OUT/kafka"
	rm -rf "$KDIR"
	_k=$(KAFKA_REF_DIR=$KDIR KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xms4g -Xmx4g} "$KREF" start 4 \
		group.initial.rebalance.delay.ms=3000 offsets.topic.num.partitions=50)
	_pid=$(cat "$KDIR/pid")
	loadgen_topic "${_k##*:}"
	cat >"$OUT/$1.hook" <<EOF
#!/bin/sh
case "\$1" in conns|hb)
	JAVA_HOME=$JAVA_HOME
	. "$ROOT/bench/lib.sh"
	echo "HEAP \$1 \$((\$(kafka_heap_kb $_pid) * 1024))" >>"$OUT/$1.heap"
esac
# the broker's CPU seconds as each phase starts (after the heap is read)
awk -v ph="\$1" '{printf "CPUAT %s %.2f\n", ph, (\$14 + \$15) / 100}' /proc/$_pid/stat >>"$OUT/$1.heap"
EOF
	chmod +x "$OUT/$1.hook"
	echo "HEAP before $(($(kafka_heap_kb "$_pid") * 1024))" >"$OUT/$1.heap"
	run_loadgen "$1" "$_pid" "${_k##*:}" "$2" "$3" "$OUT/$1.hook"
	cat "$OUT/$1.heap" >>"$OUT/$1.out"
	KAFKA_REF_DIR=$KDIR "$KREF" stop 4 >/dev/null 2>&1 || true
	KDIR=""
}

RUNS="cohortd-shared"
cohortd_run cohortd-shared "$N" "$CONNS"
if [ "$KN" -gt 0 ]; then
	RUNS="$RUNS cohortd-own kafka-own"
	cohortd_run cohortd-own "$KN" "$KN"
	kafka_run kafka-own "$KN" "$KN"
fi

/usr/bin/python3 - "$OUT" $RUNS <<'EOF'
import os, sys
out = sys.argv[1]
rows = []
for name in sys.argv[2:]:
    d = {"name": name, "heap": {}}
    for line in open(os.path.join(out, name + ".out")):
        f = line.split()
        if not f:
            continue
        if f[0] == "RESULT":
            d["res"] = f
        elif f[0] == "MEMORY":
            d["mem"] = [int(x) for x in f[4:7]]
        elif f[0] == "CPU":
            d["cpu"] = float(f[2]) - float(f[1])
        elif f[0] == "SHAPE":
            d["n"], d["conns"] = int(f[1]), int(f[2])
        elif f[0] == "HEAP" and len(f) == 3 and f[2].isdigit():
            d["heap"][f[1]] = int(f[2])
        elif f[0] == "CPUAT" and len(f) == 3:
            d.setdefault("cpuat", {})[f[1]] = float(f[2])
    d["count"] = {}
    for line in open(os.path.join(out, name + ".loadgen")):
        f = line.split()
        if len(f) == 3 and f[0] == "COUNT":
            d["count"][f[1]] = int(f[2])
    rows.append(d)
print("%-15s %8s %7s %7s %11s %22s %10s %19s %6s" % ("run", "members", "conns", "join s",
      "heartbeat/s", "hb p50 / p99 / max ms", "commits/s", "commit p50 / p99 ms", "CPU s"))
for d in rows:
    f = d.get("res")
    if not f:
        err = open(os.path.join(out, d["name"] + ".loadgen")).read().strip().splitlines()
        print("%-15s %8d %7d (failed: %s)" % (d["name"], d["n"], d["conns"], err[-1] if err else "?"))
        continue
    ms = lambda i: int(f[i]) / 1000
    print("%-15s %8d %7d %7s %11s %8.2f / %5.2f / %6.1f %10s %9.2f / %7.2f %6.1f" % (
        d["name"], d["n"], d["conns"], f[4], f[5], ms(10), ms(11), ms(12), f[6], ms(13),
        ms(14), d.get("cpu", 0)))
print()
print("memory: RSS growth with the idle connections (ApiVersions answered) and then with")
print("every member joined; heap in use (cohortd: malloc_stats; Kafka: live heap after a full GC)")
for d in rows:
    m, h = d.get("mem"), d["heap"]
    if not m:
        continue
    line = "%-15s RSS %d KB -> %d -> %d: %.0f B per connection, %.0f B per member" % (
        d["name"], m[0], m[1], m[2], (m[1] - m[0]) * 1024 / d["conns"],
        (m[2] - m[1]) * 1024 / d["n"])
    if "conns" in h and "hb" in h:
        if "before" in h:
            line += "; heap %.0f B per connection" % ((h["conns"] - h["before"]) / d["conns"])
        line += "; heap %.0f B per member" % ((h["hb"] - h["conns"]) / d["n"])
    print(line)
print()
print("the broker's CPU per request in each timed phase (user+sys; what one core would answer)")
for d in rows:
    c, n = d.get("cpuat", {}), d["count"]
    parts = []
    for what, a, b in (("heartbeat", "hb", "commit"), ("commit", "commit", "done")):
        if a in c and b in c and n.get(a):
            us = (c[b] - c[a]) * 1e6 / n[a]
            parts.append("%s %.1f us (%s/s)" % (what, us, "%.0f" % (1e6 / us) if us else "-"))
    if parts:
        print("%-15s %s" % (d["name"], ", ".join(parts)))
EOF
