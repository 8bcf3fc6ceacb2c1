#!/usr/bin/env bash
# Installs what the tests need and is missing: Debian packages with apt-get,
# npm packages into tests/integration/node_modules. Idempotent and quiet when
# everything is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBS=(cmake clang libclang-rt-14-dev python3 kcat librdkafka-dev
      python3-confluent-kafka python3-kafka nodejs npm
      zlib1g-dev libzstd-dev liblz4-dev libsnappy-dev)

missing=()
for p in "${DEBS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node/npm may come from outside Debian on some machines: accept any working ones.
if command -v node >/dev/null && command -v npm >/dev/null; then
	tmp=()
	for p in "${missing[@]}"; do [[ $p == nodejs || $p == npm ]] || tmp+=("$p"); done
	missing=("${tmp[@]+"${tmp[@]}"}")
fi
if ((${#missing[@]})); then
	echo "install-test-deps: apt-get install ${missing[*]}"
	SUDO=""; [[ $(id -u) == 0 ]] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# kafkajs into a project-local folder (pinned in tests/integration/package.json).
if [[ ! -d tests/integration/node_modules/kafkajs ]]; then
	echo "install-test-deps: npm install (tests/integration)"
	(cd tests/integration && npm install --no-audit --no-fund --silent)
fi
