#!/bin/sh
# bench/produce-fetch/run-tls.sh: produce/fetch throughput of one cohortd
# through its PLAINTEXT and its SSL listener in the same run (pf_bench
# --tls): the cost of TLS (OpenSSL) on the data path. Certificates (EC
# P-256) are made with the openssl CLI in a temporary directory.
#   bench/produce-fetch/run-tls.sh [N [SIZE]]
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-pf-rel}
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" >/dev/null
cmake --build "$BUILD" --target cohortd -j "$(nproc)" >/dev/null
cc -O2 -o "$BUILD/pf_bench" "$ROOT/bench/produce-fetch/pf_bench.c" $(pkg-config --cflags --libs rdkafka)
DATA=$(mktemp -d /tmp/cohort-pf-tls-XXXXXX)
. "$ROOT/bench/lib.sh"
make_certs "$DATA"
P1=$(free_port)
P2=$(free_port)
"$BUILD/cohortd" --set listeners=PLAINTEXT://127.0.0.1:$P1,SSL://127.0.0.1:$P2 \
	--set listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL \
	--set ssl.keystore.type=PEM --set ssl.keystore.location="$DATA/keystore.pem" \
	--set log.dirs="$DATA/data" --set log.level=WARN --set admin.listeners= >"$DATA.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DATA" "$DATA.log"' EXIT
sleep 0.5
"$BUILD/pf_bench" --tls 127.0.0.1:$P1 127.0.0.1:$P2 "$DATA/ca.pem" "$@"
