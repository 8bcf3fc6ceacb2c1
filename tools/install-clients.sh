#!/usr/bin/env bash
# install-clients.sh: the Kafka clients from language registries that the
# integration tests drive (tools/install-deps.sh test runs this), each into a
# project-local, git-ignored place, every version pinned by a file in git:
#   .deps/venv                      Python venv of Debian's /usr/bin/python3:
#                                   tests/integration/requirements.txt (confluent-kafka
#                                   2.x, kafka-python 2.2, aiokafka)
#   .deps/go                        GOPATH, module cache and build cache for
#                                   tests/integration/go (go.mod, go.sum);
#                                   .deps/go/bin/it-go-clients is built here
#   tests/integration/node_modules  npm ci from tests/integration/package-lock.json
#                                   (kafkajs, @platformatic/kafka)
# Idempotent and cached: a step runs again only when its pin file changed
# (its hash is kept next to what it installed); the Go build is incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
it=tests/integration

stamp_ok() {   # stamp_ok STAMPFILE PINFILE...: the stamp holds the pins' hash
	[[ -f $1 ]] && [[ $(cat "$1") == "$(cat "${@:2}" | sha256sum)" ]]
}
stamp_write() {
	cat "${@:2}" | sha256sum >"$1"
}

# ---- Python
venv=.deps/venv
if ! stamp_ok $venv/.cohort-pins $it/requirements.txt; then
	echo "install-clients: Python venv $venv ($it/requirements.txt)"
	rm -rf $venv
	/usr/bin/python3 -m venv $venv
	$venv/bin/pip install --quiet --disable-pip-version-check --no-deps \
		-r $it/requirements.txt
	$venv/bin/pip check >/dev/null
	stamp_write $venv/.cohort-pins $it/requirements.txt
fi

# ---- Go: modules from the Go module proxy, then the test program
export GOPATH=$root/.deps/go GOMODCACHE=$root/.deps/go/mod GOCACHE=$root/.deps/go/cache
export GOFLAGS="-modcacherw -mod=readonly" GOTOOLCHAIN=local
if ! stamp_ok .deps/go/.cohort-pins $it/go/go.mod $it/go/go.sum; then
	echo "install-clients: Go modules ($it/go/go.sum) into .deps/go"
	(cd $it/go && go mod download && go mod verify >/dev/null)
	stamp_write .deps/go/.cohort-pins $it/go/go.mod $it/go/go.sum
fi
(cd $it/go && GOPROXY=off go build -o "$root/.deps/go/bin/it-go-clients" .)

# ---- Node
if ! stamp_ok $it/node_modules/.cohort-pins $it/package-lock.json; then
	echo "install-clients: npm ci ($it/package-lock.json)"
	(cd $it && npm ci --no-audit --no-fund --silent)
	stamp_write $it/node_modules/.cohort-pins $it/package-lock.json
fi
