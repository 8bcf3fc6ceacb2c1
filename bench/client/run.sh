#!/bin/sh
# bench/client/run.sh: libcohort's consumer side by side with librdkafka
# (Debian) in one run:
#  - consume throughput on the same broker, cohortd and Apache Kafka 4.4
#    (tools/kafka-ref.sh), 100 B and 1 KB records (cons_bench.c);
#  - the consumer's memory per assigned partition (cons_bench.c, on cohortd);
#  - leader assignment at scale: a libcohort leader of 2,000 members over
#    1,000,000 partitions, cooperative-sticky (leader_bench.c: a fake
#    coordinator in the same process, the other members simulated).
# Builds cohortd and libcohort (Release, no sanitizers) in build-client-rel/.
#   bench/client/run.sh [N100 [N1K [ROUNDS [NPARTS]]]]
#       (defaults 1000000 and 200000 records, 3 rounds, 2000 partitions)
#   BROKERS="cohortd kafka" (default both), LEADER="2000 500 2000" (members,
#   topics, partitions per topic; LEADER=none skips it)
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/bench/lib.sh"
BUILD=${BUILD:-$ROOT/build-client-rel}
N100=${1:-1000000} N1K=${2:-200000} ROUNDS=${3:-3} NPARTS=${4:-2000}
LEADER=${LEADER:-2000 500 2000}
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" >/dev/null
cmake --build "$BUILD" --target cohortd cohort_static -j "$(nproc)" >/dev/null
COHORTD=$(find "$BUILD" -name cohortd -type f -perm -u+x | head -1)
LIBS="$BUILD/src/client/libcohort.a -lzstd -llz4 -lsnappy -lxxhash -lz -lpthread"
cc -O2 -I"$ROOT/include" -o "$BUILD/cons_bench" "$ROOT/bench/client/cons_bench.c" $LIBS \
	$(pkg-config --cflags --libs rdkafka)
# leader_bench speaks the protocol with the project's own codec (in libcohort.a)
cc -O2 -I"$ROOT/include" -I"$ROOT/src" -o "$BUILD/leader_bench" "$ROOT/bench/client/leader_bench.c" $LIBS
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1); load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$BUILD/cons_bench" versions
DATA=$(mktemp -d /tmp/cohort-client-bench-XXXXXX)
PID= KAFKA=
cleanup() {
	[ -n "$PID" ] && kill $PID 2>/dev/null && wait $PID 2>/dev/null
	[ -n "$KAFKA" ] && "$ROOT/tools/kafka-ref.sh" stop 4 >/dev/null 2>&1
	rm -rf "$DATA" "$DATA.log"
}
trap cleanup EXIT
for broker in ${BROKERS:-cohortd kafka}; do
	if [ "$broker" = cohortd ]; then
		start_cohortd "$COHORTD" "$DATA" "$DATA.log" --set log.level=warn
		echo "== cohortd ($BOOT)"
	else
		KAFKA=1
		BOOT=$("$ROOT/tools/kafka-ref.sh" start 4 | tail -1)
		echo "== Apache Kafka 4.4.0 ($BOOT, tools/kafka-ref.sh)"
	fi
	"$BUILD/cons_bench" "$BOOT" throughput "$N100" 100 "$ROUNDS"
	"$BUILD/cons_bench" "$BOOT" throughput "$N1K" 1000 "$ROUNDS"
	if [ "$broker" = cohortd ]; then
		"$BUILD/cons_bench" "$BOOT" memory "$NPARTS"
		kill $PID
		wait $PID 2>/dev/null || true
		PID=
	else
		"$ROOT/tools/kafka-ref.sh" stop 4 >/dev/null 2>&1
		KAFKA=
	fi
done
if [ "$LEADER" != none ]; then
	echo "== leader assignment at scale (leader_bench.c)"
	"$BUILD/leader_bench" $LEADER
	"$BUILD/leader_bench" $LEADER
fi
