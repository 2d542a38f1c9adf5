#!/usr/bin/env bash
# bench/schema_cli_bench.sh [INSTANCES] [ROUNDS]: `evident schema validate` (the CLI, format
# assertion on) against ajv 8 + ajv-formats compiled on Node.js doing the same work
# (bench/ajv_cli_peer.js: read the NDJSON file, parse and validate each instance, write one
# verdict line per instance with its errors), on INSTANCES (200,000) order payloads
# (schema_bench's orders_v2 instances, 90% valid, repeated), in ROUNDS (5) alternating rounds,
# each timed from process start to exit. Both write to a file; the verdicts must agree line by
# line in every round. Prints each round and "figure schema_ajv ..." (ajv seconds / evident seconds: how many
# times faster evident is). ajv is npm-installed into a temporary folder, deleted afterwards.
set -euo pipefail
shopt -s inherit_errexit  # a failure inside $(...) fails the script
cd "$(dirname "$0")/.."
instances=${1:-200000}
rounds=${2:-5}
bin=build/src/cli/evident
[ -x "$bin" ] && [ -x build/bench/schema_bench ] || { echo "build evident and schema_bench first" >&2; exit 2; }
tmp=$(mktemp -d /tmp/evident-schema-cli-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
build/bench/schema_bench --write-data="$tmp" > /dev/null
(cd "$tmp" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund ajv@8 ajv-formats@2 >/dev/null)
# The orders_v2 instances repeated to INSTANCES lines.
python3 - "$tmp/orders_v2.ndjson" "$instances" > "$tmp/data.ndjson" <<'PY'
import itertools, sys
lines = [l for l in open(sys.argv[1]) if l.strip()]
sys.stdout.writelines(itertools.islice(itertools.cycle(lines), int(sys.argv[2])))
PY
schema=$tmp/orders_v2.schema.json

# seconds NAME OK_CODES COMMAND...: the wall seconds of COMMAND (its standard output in
# $tmp/NAME.out, checked: one verdict line per instance); fails unless it exits with one of
# OK_CODES ("0" or "0 1": evident answers 1 when an instance is invalid).
seconds() {
  local out=$1 ok=$2 t0 t1 rc=0
  shift 2
  t0=$(date +%s%N)
  "$@" > "$tmp/$out.out" 2> "$tmp/$out.err" || rc=$?
  t1=$(date +%s%N)
  case " $ok " in *" $rc "*) ;; *) echo "$out exited $rc: $(head -c 500 "$tmp/$out.err")" >&2; return 1 ;; esac
  local lines
  lines=$(wc -l < "$tmp/$out.out")
  [ "$lines" -eq "$instances" ] || { echo "$out wrote $lines verdicts of $instances" >&2; return 1; }
  echo "scale=6; ($t1 - $t0) / 1000000000" | bc
}
run_evident() { seconds evident "0 1" "$bin" schema validate --schema "$schema" --draft 7 --format-assertion "$tmp/data.ndjson"; }
run_ajv() { NODE_PATH="$tmp/node_modules" seconds ajv "0" node bench/ajv_cli_peer.js "$schema" "$tmp/data.ndjson"; }
verdicts() { python3 -c 'import json,sys; [print(1 if json.loads(l)["valid"] else 0) for l in open(sys.argv[1])]' "$1"; }

ratios=()
printf "%-6s %14s %14s %8s\n" round "evident inst/s" "ajv inst/s" "e/ajv"
for round in $(seq 1 "$rounds"); do
  if [ $((round % 2)) -eq 1 ]; then e=$(run_evident); a=$(run_ajv); else a=$(run_ajv); e=$(run_evident); fi
  cmp -s <(verdicts "$tmp/evident.out") <(verdicts "$tmp/ajv.out") || { echo "evident and ajv disagree on some instance" >&2; exit 1; }
  ratio=$(echo "$a / $e" | bc -l)
  ratios+=("$ratio")
  printf "%-6s %14.0f %14.0f %7.2fx\n" "$round" "$(echo "$instances / $e" | bc -l)" "$(echo "$instances / $a" | bc -l)" "$ratio"
done
echo "verdicts agree on all $instances instances"
printf "%s\n" "${ratios[@]}" | sort -g | awk -v n="${#ratios[@]}" '{ a[NR] = $1 } END {
  printf "figure schema_ajv median=%.4f low=%.4f high=%.4f rounds=%d\n", a[int(n / 2) + 1], a[1], a[n], n }'
