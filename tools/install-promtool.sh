#!/usr/bin/env bash
# install-promtool.sh: Prometheus's promtool, for it_metrics's `promtool check
# metrics`, from Debian's own prometheus package (2.42.0 in Debian 12), into
# .deps/promtool. The package is downloaded and unpacked, not installed: an
# installed prometheus would start a Prometheus server on the machine; only
# the promtool binary is needed. Idempotent; silent when it is there.
set -euo pipefail
cd "$(dirname "$0")/.."
PIN=2.42.0 # Debian 12's upstream version; a different one is refused
out=.deps/promtool
if [[ -x $out ]] && "$out" --version 2>&1 | grep -q "version $PIN"; then
	exit 0
fi
mkdir -p .deps
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "install-promtool: apt-get download prometheus (promtool only) into $out"
SUDO=""
[[ $(id -u) == 0 ]] || SUDO=sudo
(cd "$tmp" && apt-get download -qq prometheus >/dev/null 2>&1) ||
	{ $SUDO apt-get update -qq && (cd "$tmp" && apt-get download -qq prometheus >/dev/null); }
deb=$(ls "$tmp"/prometheus_*.deb)
dpkg-deb -x "$deb" "$tmp/x"
"$tmp/x/usr/bin/promtool" --version 2>&1 | grep -q "version $PIN" ||
	{ echo "install-promtool: $deb is not promtool $PIN" >&2; exit 1; }
cp "$tmp/x/usr/bin/promtool" "$out"
