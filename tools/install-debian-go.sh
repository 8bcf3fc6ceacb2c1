#!/usr/bin/env bash
# install-debian-go.sh: builds tests/integration/go-debian (it-go-debian) from
# Debian 12's old Go Kafka clients: golang-github-shopify-sarama-dev 1.22.1
# and golang-github-segmentio-kafka-go-dev 0.2.1, installed by
# tools/install-deps.sh test under /usr/share/gocode. GOPATH mode with
# Debian's Go (/usr/lib/go/bin/go, golang-go): nothing comes from the Go
# module proxy, and nothing mixes with .deps/go (the registry clients).
# Output: .deps/go-debian/bin/it-go-debian. Incremental (Go's build cache).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
GO=/usr/lib/go/bin/go
[[ -x $GO ]] || { echo "install-debian-go: $GO missing (tools/install-deps.sh test installs golang-go)" >&2; exit 1; }
for d in github.com/Shopify/sarama github.com/segmentio/kafka-go; do
	[[ -d /usr/share/gocode/src/$d ]] || { echo "install-debian-go: /usr/share/gocode/src/$d missing" >&2; exit 1; }
done
mkdir -p .deps/go-debian/bin
# DataDog/zstd's cgo wrapper calls a deprecated zstd function: not ours to fix.
env -u GOROOT GO111MODULE=off GOPATH="$root/.deps/go-debian/gopath:/usr/share/gocode" \
	GOCACHE="$root/.deps/go-debian/cache" GOFLAGS= GOPROXY=off GOTOOLCHAIN=local \
	CGO_CFLAGS="-O2 -Wno-deprecated-declarations" \
	"$GO" build -o "$root/.deps/go-debian/bin/it-go-debian" ./tests/integration/go-debian
