#!/bin/sh
# bench/rebalance/run.sh: rebalance cost seen by the application, libcohort
# beside librdkafka 2.0.2 (Debian) and the Java client (kafka-clients 4.4), on
# one cohortd, in one run (rebalance_bench.py says what is measured).
# Builds cohortd, libcohort's and librdkafka's member programs and the Java
# drivers (Release, no sanitizers) in build-client-rel/; needs
# tools/install-deps.sh test (the venv, the JDK and Kafka's jars).
#   bench/rebalance/run.sh
#   REBALANCE_KINDS="libcohort librdkafka java"  REBALANCE_GROUP=5
#   REBALANCE_SCENARIOS="join scale-out leave crash static"
set -e
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-client-rel}
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" >/dev/null
cmake --build "$BUILD" --target cohortd it_cohort_member it_group_consumer it_java_classes \
	-j "$(nproc)" >/dev/null
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "libcohort $(sed -n 's/.*COHORT_LIB_VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt" | head -1), librdkafka $(pkg-config --modversion rdkafka), kafka-clients 4.4.0"
COHORTD="$BUILD/cohortd" COHORT_MEMBER="$BUILD/tests/integration/it_cohort_member" \
	GROUP_CONSUMER="$BUILD/tests/integration/it_group_consumer" \
	JAVA_IT_CLASSES="$BUILD/tests/integration/java-classes" \
	"$ROOT/.deps/venv/bin/python" "$ROOT/bench/rebalance/rebalance_bench.py"
