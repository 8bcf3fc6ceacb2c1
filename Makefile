# Top-level wrapper around CMake.
#   make        optimised build into build/ (cohortd at build/cohortd)
#   make run    build and start cohortd with its defaults (127.0.0.1:9092, ./data)
#   make install  install the optimised build (cohortd, cohort and its man page,
#               libcohort) under CMake's prefix, or PREFIX=DIR
#   make test   install what tests need, the optimised build too (gcc: make run must
#               compile) and its unit tests, sanitizer build into build-asan/, run
#               every test but the "cluster" ones
#   make test-cluster   libcohort against three Kafka brokers (it_client_libcohort_cluster)
#   make gen    regenerate src/proto/generated from ../shared/kafka-protocol
#   make format / make format-check   apply / check .clang-format (C sources but generated code)
JOBS ?= $(shell nproc)
# ctest's parallelism: twice the cores. Most integration tests wait on
# clients, timeouts and JVM starts (at -j2 the suite used about one of two
# cores on average), so twice as many at once fill the machine.
TEST_JOBS ?= $(shell echo $$(( $$(nproc) * 2 )))
PROTO_DIR ?= ../shared/kafka-protocol

.PHONY: all deps build install run test test-cluster test-deps test-kafka test-clients asan gen bench \
	bench-assign clean format format-check

all: build

deps:
	./tools/install-deps.sh build

build: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build build -j $(JOBS)

install: build
	cmake --install build $(if $(PREFIX),--prefix $(PREFIX))

run: build
	./build/cohortd

test-deps:
	./tools/install-deps.sh test

test-kafka:
	./tools/install-deps.sh test-kafka

test-clients:
	./tools/install-deps.sh test-clients

asan:
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCOHORT_SANITIZE=ON \
	      -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
	cmake --build build-asan -j $(JOBS)

# The suite is CPU-heavy (sanitizer builds, JVMs, hundreds of client
# processes): runs of it from several checkouts on one machine take turns
# (flock on TEST_LOCK) instead of starving each other into timeouts. -o:
# the tests' own processes do not inherit the lock, so a straggler cannot
# hold it.
TEST_LOCK ?= /tmp/cohort-make-test.lock
# The builds (CPU) run beside the installs (mostly downloads on a fresh
# machine): the optimised build beside Kafka's (Maven Central, its class-data
# archive), then the sanitizer build, which compiles the Java drivers against
# Kafka's jars, beside the test clients' (PyPI, the Go module proxy, npm).
test:
	./tools/install-deps.sh test-system
	$(MAKE) --no-print-directory -j2 --output-sync=target test-kafka build
	$(MAKE) --no-print-directory -j2 --output-sync=target test-clients asan
	@flock -n $(TEST_LOCK) true || echo "make test: another run holds $(TEST_LOCK); waiting for it"
	# The optimised build's unit tests too (~15 CPU-s): gcc -O2 is not clang
	# -O1 (a test drew two random numbers in one argument list, and the two
	# compilers evaluate those in different orders).
	cd build && flock -o $(TEST_LOCK) ctest --output-on-failure -j $(TEST_JOBS) --timeout 600 -LE integration
	cd build-asan && flock -o $(TEST_LOCK) ctest --output-on-failure -j $(TEST_JOBS) --timeout 600 -LE cluster

# Three Kafka brokers on loopback (ctest label "cluster"): too slow for make test's budget.
test-cluster: test-deps asan
	cd build-asan && flock -o $(TEST_LOCK) ctest --output-on-failure -L cluster --timeout 900

# The C sources git tracks, but the generated codec (gen_proto.py's output
# is committed as it writes it).
FORMAT_FILES = git ls-files '*.c' '*.h' | grep -v '/generated/'
format:
	$(FORMAT_FILES) | xargs clang-format -i

format-check:
	@$(FORMAT_FILES) | xargs clang-format --dry-run --Werror || \
	  { echo "format-check: run 'make format' (clang-format, .clang-format)"; exit 1; }

gen:
	python3 tools/gen_proto.py $(PROTO_DIR) src/proto/generated

bench: build
	./bench/run.sh

# Assignor timings at Kafka's published sizes (Release build in build-assign-rel/).
bench-assign:
	./bench/assign/run.sh

clean:
	rm -rf build build-asan
