#!/usr/bin/env bash
# install-deps.sh build|test|bench|test-system|test-kafka|test-clients
# Installs what is missing on a Debian machine:
#   build  the compiler, CMake, the compression libraries cohortd links,
#          OpenSSL (libssl-dev: SCRAM's hashes, TLS),
#          libmicrohttpd (the admin HTTP listener) and jansson (its JSON),
#          g++ and libre2-dev (SubscribedTopicRegex, src/regex: RE2 is C++)
#   test   the above, plus clang (sanitizers, libFuzzer) and the real Kafka
#          clients the tests drive: kcat, librdkafka, kafka-python,
#          confluent-kafka-python (for /usr/bin/python3), Node.js, Debian's
#          Go sarama 1.22.1 and kafka-go 0.2.1 (built by install-debian-go.sh);
#          tools/install-clients.sh: the clients from PyPI, the Go module
#          proxy and npm (pinned) into .deps/ and tests/integration/node_modules;
#          and Apache Kafka itself (the reference broker, its tools and Java
#          client: JDK 17, Maven, then tools/kafka-ref.sh install into .deps/);
#          promtool from Debian's prometheus package (tools/install-promtool.sh);
#          Debian's chromium for the live page's test (playwright-core from npm
#          drives /usr/bin/chromium: no browser download).
#   bench  the above, plus valgrind (bench/groups/run-coord.sh counts
#          instructions per request with callgrind).
#   test's three parts, for make test to overlap downloads with builds:
#   test-system   the Debian packages only (build's and test's)
#   test-kafka    Apache Kafka (tools/kafka-ref.sh install; after test-system)
#   test-clients  the registry clients, Debian's Go clients, promtool (after
#                 test-system)
# Idempotent; silent when everything is there.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-build}
bench=false
# which of test's parts run: the Debian packages, Kafka, the clients
sys=true kafka=false clients=false
case $what in
build) ;;
test) kafka=true clients=true ;;
bench) bench=true what=test kafka=true clients=true ;;
test-system) what=test ;;
test-kafka) sys=false kafka=true ;;
test-clients) sys=false clients=true ;;
*) echo "install-deps: unknown '$what' (build, test, bench, test-system, test-kafka, test-clients)" >&2; exit 2 ;;
esac

DEBS=(gcc make cmake pkg-config zlib1g-dev libzstd-dev liblz4-dev libsnappy-dev libxxhash-dev
      libmicrohttpd-dev libjansson-dev libcurl4-openssl-dev libssl-dev g++ libre2-dev)
if [[ $what == test ]]; then
	DEBS+=(clang clang-format libclang-rt-14-dev python3 kcat librdkafka-dev python3-confluent-kafka
	       python3-kafka openjdk-17-jdk-headless maven iproute2 python3-venv groff-base
	       golang-go golang-github-segmentio-kafka-go-dev golang-github-shopify-sarama-dev
	       openssl    # it_security makes its certificates with the openssl CLI
	       chromium)  # the live page's end-to-end test (it_page, playwright-core drives it)
	command -v node >/dev/null && command -v npm >/dev/null || DEBS+=(nodejs npm)
fi
$bench && DEBS+=(valgrind)

missing=()
$sys || DEBS=()
for p in "${DEBS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "install-deps: apt-get install ${missing[*]}"
	SUDO=""
	[[ $(id -u) == 0 ]] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Registry clients (PyPI, Go module proxy, npm), pinned, into .deps/ and node_modules/.
if $clients; then
	./tools/install-clients.sh
fi

if $kafka; then
	./tools/kafka-ref.sh install
fi
if $clients; then
	./tools/install-debian-go.sh   # Debian's sarama 1.22.1 and kafka-go 0.2.1
	./tools/install-promtool.sh    # Debian's promtool 2.42.0 (it_metrics), into .deps/
fi
