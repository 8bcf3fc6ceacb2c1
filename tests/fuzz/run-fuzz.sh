#!/usr/bin/env bash
# run-fuzz.sh FUZZER SEED_CORPUS_DIR SECONDS
# Runs a libFuzzer target for a bounded time over the committed seed corpus.
# New inputs go to a temporary directory, never into the repository; a crash
# input is kept in the build tree (crash-*) and printed as hex for the log.
set -euo pipefail
fuzzer=$1 seeds=$2 secs=${3:-60}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus"
status=0
"$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	-artifact_prefix="$PWD/" "$work/corpus" "$seeds" 2>"$work/log" || status=$?
tail -n 25 "$work/log"
if ((status != 0)); then
	for f in "$PWD"/crash-* "$PWD"/leak-* "$PWD"/timeout-*; do
		[[ -f $f ]] && { echo "artifact $f:"; od -A x -t x1z "$f" | head -20; }
	done
	echo "0 passed, 1 failed"
	exit 1
fi
echo "1 passed, 0 failed"
