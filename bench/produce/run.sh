#!/bin/sh
# bench/produce/run.sh: produce throughput, libcohort's producer beside
# librdkafka's (Debian), on the same cohortd in one run (prod_bench.c).
# Builds cohortd and libcohort (Release, no sanitizers) in build-prod-rel/,
# starts cohortd on a free 127.0.0.1 port with a temporary data directory
# (num.partitions=4 for the auto-created topics), then runs 100 B and 1 KB
# records, without and with idempotence.
#   bench/produce/run.sh [N100 [N1K]]    (defaults 1000000 and 200000)
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-prod-rel}
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" >/dev/null
cmake --build "$BUILD" --target cohortd cohort_static -j "$(nproc)" >/dev/null
COHORTD=$(find "$BUILD" -name cohortd -type f -perm -u+x | head -1)
cc -O2 -I"$ROOT/include" -o "$BUILD/prod_bench" "$ROOT/bench/produce/prod_bench.c" \
	"$BUILD/src/client/libcohort.a" -lzstd -llz4 -lsnappy -lxxhash -lz -lpthread \
	$(pkg-config --cflags --libs rdkafka)
DATA=$(mktemp -d /tmp/cohort-prod-XXXXXX)
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
"$COHORTD" --set listeners=PLAINTEXT://127.0.0.1:$PORT --set log.dirs="$DATA" \
	--set num.partitions=4 --set log.level=warn >"$DATA.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA" "$DATA.log"' EXIT
sleep 0.5
for idem in false true; do
	"$BUILD/prod_bench" 127.0.0.1:$PORT "${1:-1000000}" 100 $idem
	"$BUILD/prod_bench" 127.0.0.1:$PORT "${2:-200000}" 1000 $idem
done
