#!/usr/bin/env bash
# bench/schema_cli_bench.sh [INSTANCES] [ROUNDS]: `evident schema validate` (the CLI, format
# assertion on) against ajv 8 + ajv-formats compiled on Node.js doing the same work
# (bench/ajv_cli_peer.js: read the NDJSON file, parse and validate each instance, write one
# verdict line per instance with its errors), on INSTANCES (200,000) order payloads
# (schema_bench's orders_v2 instances, 90% valid, repeated), in ROUNDS (5) alternating rounds,
# each timed from process start to exit. Both write to a file; the verdicts must agree line by
# line. Prints each round and "figure schema_ajv ..." (ajv seconds / evident seconds: how many
# times faster evident is). ajv is npm-installed into a temporary folder, deleted afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
instances=${1:-200000}
rounds=${2:-5}
bin=build/src/cli/evident
[ -x "$bin" ] && [ -x build/bench/schema_bench ] || { echo "build evident and schema_bench first" >&2; exit 2; }
tmp=$(mktemp -d /tmp/evident-schema-cli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
build/bench/schema_bench --write-data="$tmp" > /dev/null
(cd "$tmp" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund ajv@8 ajv-formats@2 >/dev/null)
base=$tmp/orders_v2.ndjson
repeat=$(( (instances + $(wc -l < "$base") - 1) / $(wc -l < "$base") ))
for _ in $(seq 1 "$repeat"); do cat "$base"; done | head -n "$instances" > "$tmp/data.ndjson"
schema=$tmp/orders_v2.schema.json

seconds() {  # wall seconds of the command (stdout to $tmp/$1.out), which must succeed
  local out=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  "$@" > "$tmp/$out.out"
  t1=$(date +%s%N)
  echo "scale=6; ($t1 - $t0) / 1000000000" | bc
}
run_evident() { seconds evident "$bin" schema validate --schema "$schema" --draft 7 --format-assertion "$tmp/data.ndjson" || [ $? -eq 1 ]; }
run_ajv() { NODE_PATH="$tmp/node_modules" seconds ajv node bench/ajv_cli_peer.js "$schema" "$tmp/data.ndjson"; }
verdicts() { python3 -c 'import json,sys; [print(1 if json.loads(l)["valid"] else 0) for l in open(sys.argv[1])]' "$1"; }

ratios=()
printf "%-6s %14s %14s %8s\n" round "evident inst/s" "ajv inst/s" "e/ajv"
for round in $(seq 1 "$rounds"); do
  if [ $((round % 2)) -eq 1 ]; then e=$(run_evident 2>/dev/null || true); a=$(run_ajv); else a=$(run_ajv); e=$(run_evident 2>/dev/null || true); fi
  [ -n "$e" ] || { echo "evident schema validate failed" >&2; exit 1; }
  ratio=$(echo "$a / $e" | bc -l)
  ratios+=("$ratio")
  printf "%-6s %14.0f %14.0f %7.2fx\n" "$round" "$(echo "$instances / $e" | bc -l)" "$(echo "$instances / $a" | bc -l)" "$ratio"
done
[ "$(wc -l < "$tmp/evident.out")" -eq "$instances" ] || { echo "evident wrote $(wc -l < "$tmp/evident.out") verdicts of $instances" >&2; exit 1; }
cmp -s <(verdicts "$tmp/evident.out") <(verdicts "$tmp/ajv.out") || { echo "evident and ajv disagree on some instance" >&2; exit 1; }
echo "verdicts agree on all $instances instances"
printf "%s\n" "${ratios[@]}" | sort -g | awk -v n="${#ratios[@]}" '{ a[NR] = $1 } END {
  printf "figure schema_ajv median=%.4f low=%.4f high=%.4f rounds=%d\n", a[int(n / 2) + 1], a[1], a[n], n }'
