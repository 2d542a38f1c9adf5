#!/usr/bin/env bash
# bench/run-all.sh [OUT.json]: every ratio docs/BENCHMARKS.md opens with, in one run, each the
# median of ROUNDS (5) alternating rounds with its spread, printed as one table and written as
# JSON (OUT.json, default bench-results.json; every benchmark's whole output is kept beside it, in
# OUT-logs/). Every ceiling is built from the same bytes as the
# evident side it divides (see each benchmark's header):
#   consume_sqlite            `evident consume`, the orders example with effects / (d) the rows
#                             that run wrote, written again with the sqlite3 library (consume_bench --effects)
#   consume_sqlite_no_effects consume_bench: the same without effects / (d) (no goal: for reading)
#   consume_bench_ledger      consume_bench: evident / its raw ledger insert (a)
#   consume_bench_fsync_bound consume_bench: evident/(b) as a share of the disk's (a)/(c) bound
#   relay_raw                 relay SQLite -> JetStream / a raw libnats async publisher (relay_bench)
#   relay_raw_store           relay / (b) a raw relay: rows read and marked with sqlite3, raw publisher
#   schema_ajv                `evident schema validate` / ajv 8 compiled, node (schema_cli_bench.sh)
#   consume_postgres          `evident consume` on PostgreSQL / raw libpq pipelined inserts (postgres_bench)
#   serve_consume             `evident serve` batch mode / `evident consume` from a file (serve_bench.sh)
#   kafka_relay_raw           relay to Kafka / a raw librdkafka idempotent producer (kafka_bench)
#   kafka_relay_raw_store     relay to Kafka / (b) a raw relay: rows read and marked with sqlite3
#   kafka_raw_relay_update_share, kafka_raw_relay_delivery_table_share: (b), and (b) recording
#                             each delivery as a row of a table of its own, against the raw producer
#   kafka_consume_file        consume from Kafka / consume from a file (kafka_bench)
#   kafka_consume_file_topic_order consume from Kafka / a file of its records in the topic's order
#   memory_consume|relay|serve peak RSS at MEMORY_EVENTS / at 100,000 events (memory_bench.sh)
# Sizes: CONSUME_EVENTS (1,000,000), RELAY_EVENTS (50,000), KAFKA_EVENTS (50,000), PG_EVENTS
# (200,000), SERVE_EVENTS (200,000), SCHEMA_INSTANCES (200,000), MEMORY_EVENTS (10,000,000).
# ONLY="key-prefix ..." runs the benchmarks of those figures alone. Needs the Release build in
# build/ and `scripts/install-deps.sh bench`; starts its own nats-server, PostgreSQL and Kafka mock.
# Exit 0 when every benchmark ran (goals missed are reported, not failed); 1 when any failed
# (what a failed benchmark printed before failing is shown as "failed run", never as met).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench-results.json}
rounds=${ROUNDS:-5}
only=${ONLY:-}
logs=${out%.json}-logs
rm -rf "$logs" && mkdir -p "$logs"
cmake --build build --target evident consume_bench relay_bench kafka_bench postgres_bench \
  schema_bench > "$logs/build.log" 2>&1 || { cat "$logs/build.log" >&2; exit 1; }

failed=()
# run NAME KEY... -- COMMAND...: runs COMMAND (its output in the log NAME) unless ONLY leaves out
# every one of its KEYs; a failure is recorded and the run goes on.
run() {
  local name=$1 keys=() wanted=""
  shift
  while [ "$1" != "--" ]; do keys+=("$1"); shift; done
  shift
  if [ -n "$only" ]; then
    for key in "${keys[@]}"; do for prefix in $only; do
      case $key in "$prefix"*) wanted=1 ;; esac
    done; done
    [ -n "$wanted" ] || return 0
  fi
  echo "$(date +%H:%M:%S) $name: $*" >&2
  if ! "$@" > "$logs/$name.log" 2>&1; then
    failed+=("$name")
    echo "$name failed; its last lines:" >&2
    tail -n 20 "$logs/$name.log" >&2
    # what it printed before failing is kept, marked: the table says "failed run", never "met"
    grep '^figure ' "$logs/$name.log" | sed 's/$/ failed=1/' >> "$logs/figures" || true
    return 0
  fi
  grep '^figure ' "$logs/$name.log" >> "$logs/figures" || true
}
: > "$logs/figures"
run consume_effects consume_sqlite -- \
  build/bench/consume_bench "${CONSUME_EVENTS:-1000000}" "$rounds" --effects
run consume_bench consume_sqlite_no_effects consume_bench_ledger consume_bench_fsync_bound -- \
  build/bench/consume_bench "${CONSUME_EVENTS:-1000000}" "$rounds"
run relay relay_raw relay_raw_store -- build/bench/relay_bench "${RELAY_EVENTS:-50000}" "$rounds"
run schema schema_ajv -- bash bench/schema_cli_bench.sh "${SCHEMA_INSTANCES:-200000}" "$rounds"
run postgres consume_postgres -- build/bench/postgres_bench "${PG_EVENTS:-200000}" "$rounds"
run serve serve_consume -- bash bench/serve_bench.sh "${SERVE_EVENTS:-200000}" "$rounds"
run kafka kafka_relay_raw kafka_relay_raw_batched kafka_relay_raw_store \
  kafka_raw_relay_update_share kafka_raw_relay_delivery_table_share kafka_consume_file \
  kafka_consume_file_topic_order -- \
  build/bench/kafka_bench "${KAFKA_EVENTS:-50000}" "$rounds"
run memory memory_consume memory_relay memory_serve -- \
  bash bench/memory_bench.sh "${MEMORY_EVENTS:-10000000}"

python3 - "$logs/figures" "$out" "$rounds" "${failed[*]:-}" <<'PY'
import datetime, json, os, platform, subprocess, sys
figures_path, out_path, rounds, failed = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
# key: (path, ceiling in the same run, goal, unit); memory goals are a ceiling on the ratio.
rows = [
    ("consume_sqlite", "consume on SQLite, orders example with effects", "the same rows, raw sqlite3", 0.85, ""),
    ("consume_sqlite_no_effects", "consume on SQLite, without effects (consume_bench)", "the same rows, raw sqlite3", None, ""),
    ("consume_bench_ledger", "consume_bench", "its raw ledger insert", 0.6, ""),
    ("consume_bench_fsync_bound", "consume_bench, one transaction per event", "share of the fsync bound", 0.8, ""),
    ("relay_raw", "relay SQLite -> JetStream", "(a) raw libnats publisher", 0.7, ""),
    ("relay_raw_store", "relay SQLite -> JetStream", "(b) raw sqlite3 reads and marks + raw publisher", 0.85, ""),
    ("schema_ajv", "schema validate (CLI)", "ajv 8 compiled, node", 4.0, "x"),
    ("consume_postgres", "consume on PostgreSQL", "raw libpq pipelined inserts", 0.85, ""),
    ("serve_consume", "serve batch mode", "consume from a file", 0.9, ""),
    ("kafka_relay_raw", "relay SQLite -> Kafka (mock)", "raw librdkafka idempotent producer", 0.7, ""),
    ("kafka_relay_raw_batched", "relay SQLite -> Kafka (mock)", "raw producer flushing per batch", None, ""),
    ("kafka_relay_raw_store", "relay SQLite -> Kafka (mock)", "(b) raw sqlite3 reads and marks + raw producer", 0.85, ""),
    ("kafka_raw_relay_update_share", "(b) itself, for scale", "raw librdkafka idempotent producer", None, ""),
    ("kafka_raw_relay_delivery_table_share", "(b) recording deliveries in a table of their own", "raw librdkafka idempotent producer", None, ""),
    ("kafka_consume_file", "consume from Kafka (mock)", "consume from a file", 0.7, ""),
    ("kafka_consume_file_topic_order", "consume from Kafka (mock)", "a file in the topic's order", None, ""),
    ("memory_consume", "peak RSS, consume", "100k events -> MEMORY_EVENTS", 1.1, "max"),
    ("memory_relay", "peak RSS, relay", "100k events -> MEMORY_EVENTS", 1.1, "max"),
    ("memory_serve", "peak RSS, serve", "100k events -> MEMORY_EVENTS", 1.1, "max"),
]
seen = {}
for line in open(figures_path):
    parts = line.split()
    seen[parts[1]] = {k: float(v) if k != "rounds" else int(v)
                      for k, v in (p.split("=") for p in parts[2:]) if k != "failed"}
    seen[parts[1]]["failed_run"] = "failed=1" in parts
def cpu():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip()
result = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
          "commit": commit + ("+changes" if dirty else ""), "cpu": cpu(), "cores": os.cpu_count(),
          "load_average": os.getloadavg()[0], "rounds": rounds, "failed": failed.split(),
          "figures": {}}
print(f"\n{result['date']}, {result['commit']}, {result['cpu']}, {result['cores']} cores "
      f"(shared, noisy), load {result['load_average']:.2f}; median of {rounds} rounds (low-high)\n")
print("| path | ceiling in the same run | ratio (median) | spread | goal | met |")
print("|---|---|---|---|---|---|")
for key, path, ceiling, goal, unit in rows:
    f = seen.get(key)
    if f is None:
        goal_text = "" if goal is None else f"{'<=' if unit == 'max' else '>='} {goal}"
        print(f"| {path} | {ceiling} | not run | | {goal_text} | |")
        continue
    met = goal is not None and not f["failed_run"] and (
        f["median"] <= goal if unit == "max" else f["median"] >= goal)
    x = "x" if unit == "x" else ""
    spread = f"{f['low']:.3f}{x}-{f['high']:.3f}{x}" if f["rounds"] > 1 else "one run"
    goal_text = "" if goal is None else f"{'<=' if unit == 'max' else '>='} {goal}{x}"
    verdict = "failed run" if f["failed_run"] else "" if goal is None else "yes" if met else "no"
    print(f"| {path} | {ceiling} | **{f['median']:.3f}{x}** | {spread} | {goal_text} | {verdict} |")
    result["figures"][key] = dict(f, path=path, ceiling=ceiling, goal=goal,
                                  goal_is="at most" if unit == "max" else "at least", met=met)
    if goal is None:
        result["figures"][key]["goal_is"] = "none"
with open(out_path, "w") as out:
    json.dump(result, out, indent=2)
    out.write("\n")
print(f"\n(JSON: {out_path}; each benchmark's output: {out_path.removesuffix('.json')}-logs/)")
PY
[ ${#failed[@]} -eq 0 ] || { echo "failed: ${failed[*]} (their logs are above)" >&2; exit 1; }
