#!/bin/sh
# bench/assign/run.sh: build the assignor benchmark (Release, no sanitizers)
# and print one table row per scenario and assignor. See assign_bench.c.
#   bench/assign/run.sh                 everything
#   bench/assign/run.sh equal sticky    one row
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-assign-rel}
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" >/dev/null
cmake --build "$BUILD" --target assign_bench -j "$(nproc)" >/dev/null
BIN=$BUILD/src/assign/assign_bench
"$BIN" --header
if [ $# -eq 2 ]; then
	"$BIN" "$1" "$2"
	exit 0
fi
for a in range roundrobin sticky cooperative-sticky uniform server-range; do
	"$BIN" equal $a
done
for a in roundrobin sticky cooperative-sticky uniform; do
	"$BIN" unequal $a
done
for a in sticky uniform server-range; do
	"$BIN" server $a
done
