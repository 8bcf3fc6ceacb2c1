#!/bin/sh
# bench/produce/run.sh: produce throughput, libcohort's producer beside
# librdkafka's (Debian), on the same broker in one run (prod_bench.c), on
# cohortd and on Apache Kafka 4.4 (tools/kafka-ref.sh).
# Builds cohortd and libcohort (Release, no sanitizers) in build-prod-rel/,
# starts each broker on free 127.0.0.1 ports with a temporary data directory
# (num.partitions=4 for the auto-created topics), then runs 100 B and 1 KB
# records, without and with idempotence, the producers alternating over
# ROUNDS rounds.
#   bench/produce/run.sh [N100 [N1K [ROUNDS]]]   (defaults 1000000, 200000, 3)
#   BROKERS="cohortd kafka" (default both), IDEM="false true" (default both)
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/bench/lib.sh"
BUILD=${BUILD:-$ROOT/build-prod-rel}
N100=${1:-1000000} N1K=${2:-200000} ROUNDS=${3:-3}
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" >/dev/null
cmake --build "$BUILD" --target cohortd cohort_static -j 2 >/dev/null
COHORTD=$(find "$BUILD" -name cohortd -type f -perm -u+x | head -1)
cc -O2 -I"$ROOT/include" -o "$BUILD/prod_bench" "$ROOT/bench/produce/prod_bench.c" \
	"$BUILD/src/client/libcohort.a" -lssl -lcrypto -lzstd -llz4 -lsnappy -lxxhash -lz -lpthread \
	$(pkg-config --cflags --libs rdkafka)
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1); load: $(cut -d' ' -f1-3 /proc/loadavg)"
DATA=$(mktemp -d /tmp/cohort-prod-XXXXXX)
# Kafka's run directory of our own: tools/kafka-ref.sh's default is shared
# by everyone using the same .deps.
export KAFKA_REF_DIR="$DATA-kafka"
PID= KAFKA=
cleanup() {
	[ -n "$PID" ] && kill $PID 2>/dev/null && wait $PID 2>/dev/null
	[ -n "$KAFKA" ] && "$ROOT/tools/kafka-ref.sh" stop 4 >/dev/null 2>&1
	rm -rf "$DATA" "$DATA.log" "$KAFKA_REF_DIR"
}
trap cleanup EXIT
for broker in ${BROKERS:-cohortd kafka}; do
	if [ "$broker" = cohortd ]; then
		start_cohortd "$COHORTD" "$DATA" "$DATA.log" --set num.partitions=4 --set log.level=warn
		echo "== cohortd ($BOOT)"
	else
		KAFKA=1
		BOOT=$("$ROOT/tools/kafka-ref.sh" start 4 num.partitions=4 | tail -1)
		echo "== Apache Kafka 4.4.0 ($BOOT, tools/kafka-ref.sh)"
	fi
	for idem in ${IDEM:-false true}; do
		"$BUILD/prod_bench" "$BOOT" "$N100" 100 $idem "$ROUNDS"
		"$BUILD/prod_bench" "$BOOT" "$N1K" 1000 $idem "$ROUNDS"
	done
	if [ "$broker" = cohortd ]; then
		kill $PID
		wait $PID 2>/dev/null || true
		PID=
	else
		"$ROOT/tools/kafka-ref.sh" stop 4 >/dev/null 2>&1
		KAFKA=
	fi
done
