#!/bin/sh
# bench/produce-fetch/run.sh: build cohortd (Release, no sanitizers) and
# pf_bench, start cohortd on a free 127.0.0.1 port with a temporary data
# directory, and run produce/fetch throughput against it and against
# librdkafka's mock cluster in the same process. See pf_bench.c.
#   bench/produce-fetch/run.sh [N [SIZE]]
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-pf-rel}
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" >/dev/null
cmake --build "$BUILD" --target cohortd -j "$(nproc)" >/dev/null
cc -O2 -o "$BUILD/pf_bench" "$ROOT/bench/produce-fetch/pf_bench.c" $(pkg-config --cflags --libs rdkafka)
DATA=$(mktemp -d /tmp/cohort-pf-XXXXXX)
PORT=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
"$BUILD/cohortd" --set listeners=PLAINTEXT://127.0.0.1:$PORT --set log.dirs="$DATA" \
	--set log.level=WARN --set admin.listeners= >"$DATA.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA" "$DATA.log"' EXIT
sleep 0.5
PF_BROKER_PID=$PID "$BUILD/pf_bench" 127.0.0.1:$PORT "$@"
