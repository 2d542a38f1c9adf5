#!/usr/bin/env bash
# Runs one libFuzzer binary for a bounded time on a scratch copy of its seed corpus.
#   scripts/run-fuzz.sh FUZZ_BINARY SEED_CORPUS_DIR SECONDS [INPUT_SECONDS_MAX]
# Fails when the binary is missing (a fuzz run that cannot start is a failure, not a skip),
# when libFuzzer finds a crash, leak, timeout or sanitizer report, or when it ran no inputs.
# INPUT_SECONDS_MAX (default 10) is libFuzzer's -timeout: one input taking longer is a finding.
set -euo pipefail
binary=$1 seeds=$2 seconds=$3 input_seconds_max=${4:-10}
[ -x "$binary" ] || { echo "fuzz binary not found: $binary" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
log="$work/log"
"$binary" -max_total_time="$seconds" -timeout="$input_seconds_max" -rss_limit_mb=2048 -max_len=70000 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" "$seeds" >"$log" 2>&1 || {
  tail -50 "$log"; ls "$work/artifacts"; exit 1; }
runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
[ "${runs:-0}" -gt 0 ] || { tail -50 "$log"; echo "$(basename "$binary"): ran no inputs" >&2; exit 1; }
echo "$(basename "$binary"): $runs inputs in ${seconds}s, no crash"
