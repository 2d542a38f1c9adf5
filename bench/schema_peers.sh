#!/usr/bin/env bash
# bench/schema_peers.sh — payload schema validation, instances/second on one core, in ONE run:
# evident (bench/schema_bench) vs ajv 8 + ajv-formats (Node.js) vs valijson (Debian).
#
# Same generated instances (90% valid / 10% invalid), same draft-07 schema files, parsing inside
# every timed loop. ajv is installed with npm into a temporary folder that is deleted afterwards;
# valijson is compiled from bench/valijson_peer.cc against the Debian headers (RapidJSON adapter).
# Format checks: evident with format assertion, ajv with ajv-formats (asserting), valijson as it
# ships (it checks only date/time formats).
#
# Usage: bench/schema_peers.sh [BUILD_DIR]   (default: build; needs target schema_bench built)
# Pin with CPU=N (default 0). Prints a table with ratios; the machine may be shared and noisy.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cpu=${CPU:-0}
workloads="orders_v1 orders_v2 order_placed"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$build/bench/schema_bench" --write-data="$tmp"

(cd "$tmp" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund ajv@8 ajv-formats@2 >/dev/null)
g++ -O2 -std=c++17 -DNDEBUG -o "$tmp/valijson_peer" bench/valijson_peer.cc

results="$tmp/results.ndjson"
: >"$results"
for name in $workloads; do
  taskset -c "$cpu" "$build/bench/schema_bench" --benchmark_filter="^IsValid/$name\$" \
    --benchmark_min_time=3 --benchmark_format=json 2>/dev/null |
    python3 -c '
import json, sys
data = json.load(sys.stdin)
for b in data["benchmarks"]:
    print(json.dumps({"validator": "evident", "workload": b["name"].split("/")[1],
                      "instances_per_second": b["items_per_second"],
                      "valid_fraction": b["valid_fraction"]}))' >>"$results"
done
NODE_PATH="$tmp/node_modules" taskset -c "$cpu" node bench/ajv_peer.js "$tmp" $workloads >>"$results"
taskset -c "$cpu" "$tmp/valijson_peer" "$tmp" $workloads >>"$results"

# Per-instance verdicts of evident, through the CLI with format assertion (as in the bench), to
# compare with the peers' instance by instance: a matching valid fraction is no proof of
# agreement, one verdict per instance is.
for name in $workloads; do
  "$build/src/cli/evident" schema validate --schema "$tmp/$name.schema.json" --draft 7 \
    --format-assertion "$tmp/$name.ndjson" |
    python3 -c 'import json,sys; [print("1" if json.loads(l)["valid"] else "0") for l in sys.stdin]' \
      >"$tmp/$name.evident.verdicts" || true
done

python3 - "$results" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
by = {(r["validator"], r["workload"]): r for r in rows}
print(f"{'workload':<14}{'evident/s':>14}{'ajv/s':>14}{'valijson/s':>14}{'vs ajv':>10}{'vs valijson':>13}  valid fraction e/a/v")
for w in ["orders_v1", "orders_v2", "order_placed"]:
    e, a, v = by[("evident", w)], by[("ajv", w)], by[("valijson", w)]
    print(f"{w:<14}{e['instances_per_second']:>14,.0f}{a['instances_per_second']:>14,.0f}"
          f"{v['instances_per_second']:>14,.0f}{e['instances_per_second']/a['instances_per_second']:>9.2f}x"
          f"{e['instances_per_second']/v['instances_per_second']:>12.1f}x  "
          f"{e['valid_fraction']:.3f}/{a['valid_fraction']:.3f}/{v['valid_fraction']:.3f}")
PY

# Agreement, instance by instance. evident and ajv both assert formats: any difference fails the
# run. valijson asserts date/time formats only, so its differences are listed, not failed.
python3 - "$tmp" $workloads <<'PY'
import sys
tmp, workloads = sys.argv[1], sys.argv[2:]
failed = False
for w in workloads:
    read = lambda peer: open(f"{tmp}/{w}.{peer}.verdicts").read().split()
    e, a, v = read("evident"), read("ajv"), read("valijson")
    if not (len(e) == len(a) == len(v)):
        print(f"{w}: verdict counts differ: evident {len(e)}, ajv {len(a)}, valijson {len(v)}")
        failed = True
        continue
    ea = [i for i in range(len(e)) if e[i] != a[i]]
    ev = [i for i in range(len(e)) if e[i] != v[i]]
    print(f"{w}: {len(e)} instances; evident/ajv disagree on {len(ea)}, evident/valijson on {len(ev)}"
          + (f" (first: {ev[:5]})" if ev else ""))
    failed = failed or bool(ea)
sys.exit(1 if failed else 0)
PY
