#!/usr/bin/env bash
# An A/B of two evident binaries (a build before a change, and one after) on one input, in
# alternating pairs, for a change that must leave speed alone. Prints each pair's wall times
# and the ratio new/old, then the median ratio; the machine is shared and noisy, so the median
# of the per-pair ratios is the figure, not any one time.
#
#   bench/ab.sh consume OLD NEW [EVENTS] [PAIRS]
#     `evident consume` of EVENTS (200,000) events of consume_bench's generator, the orders
#     example without effects, batches of 1,000, synchronous=FULL, a fresh SQLite store per run.
#   bench/ab.sh consume-effects OLD NEW [EVENTS] [PAIRS]
#     the same with the whole orders example (its effects and compensations: intents written).
#   bench/ab.sh consume-effects-postgres OLD NEW [EVENTS] [PAIRS]
#     the same on PostgreSQL: a server of scripts/postgres.sh with fsync on (EVIDENT_PG_DURABLE=1),
#     a fresh schema per run, made by `evident store migrate` of NEW.
#   bench/ab.sh relay OLD NEW [EVENTS] [PAIRS]
#     `evident relay --once --to file:` of an outbox of EVENTS status events (appended once by
#     NEW), from a fresh copy of that store per run; the destination file is synced per batch.
#
# OLD and NEW are paths to evident binaries (e.g. a worktree's build of the earlier commit, and
# build/src/cli/evident). consume_bench must be built (build/bench/consume_bench).
set -euo pipefail
cd "$(dirname "$0")/.."
what=$1 old=$2 new=$3 events=${4:-200000} pairs=${5:-5}
dir=$(mktemp -d /tmp/evident-ab-XXXXXX)
pg_url=
cleanup() {  # a server whose start failed midway is stopped too (postgres.sh records it first)
  if [ -e "$dir/pg/data" ]; then bash scripts/postgres.sh stop "$dir/pg" >/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT

milliseconds() {  # wall milliseconds of the command, which must succeed
  local start end
  start=$(date +%s%N)
  "$@" >/dev/null 2>"$dir/err" || { echo "failed: $* ($(cat "$dir/err"))" >&2; exit 1; }
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}

run_consume() {
  rm -f "$dir"/store.db*
  milliseconds "$1" consume --config "$dir/evident.yaml" --store "sqlite:$dir/store.db" \
    --input "$dir/events.ndjson" --batch-count-max 1000
}

run_consume_effects() { run_consume "$@"; }

# Each run in the schema `ab`, made anew. Run inside $(...), where set -e does not reach: every
# step's failure ends the script, and a run that left fewer ledger rows than events is no figure.
run_consume_effects_postgres() {
  local schema=ab store ms rows
  psql -q -v ON_ERROR_STOP=1 "$pg_url" -c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $schema CASCADE; CREATE SCHEMA $schema" >/dev/null ||
    { echo "cannot make schema $schema" >&2; exit 1; }
  store="$pg_url?options=-csearch_path%3D$schema"
  "$new" store migrate --store "$store" >/dev/null || { echo "store migrate failed" >&2; exit 1; }
  ms=$(milliseconds "$1" consume --config "$dir/evident.yaml" --store "$store" \
    --input "$dir/events.ndjson" --batch-count-max 1000) || exit 1
  rows=$(psql -At -v ON_ERROR_STOP=1 "$pg_url" -c "SELECT count(*) FROM $schema.ledger") || exit 1
  [ "$rows" -ge "$events" ] || { echo "the run left $rows ledger rows for $events events" >&2; exit 1; }
  echo "$ms"
}

run_relay() {
  rm -f "$dir"/copy.db* "$dir/out.ndjson"
  cp "$dir/outbox.db" "$dir/copy.db"
  milliseconds "$1" relay --store "sqlite:$dir/copy.db" --to "file:$dir/out.ndjson" --once
  [ "$(wc -l <"$dir/out.ndjson")" -eq "$events" ] || { echo "relay sent too few rows" >&2; exit 1; }
}

case $what in
  consume)
    build/bench/consume_bench --write-input "$dir" "$events"
    ;;
  consume-effects | consume-effects-postgres)
    build/bench/consume_bench --write-input "$dir" "$events"
    sed "s#^contracts: .*#contracts: $PWD/examples/orders/contracts#" examples/orders/evident.yaml \
      >"$dir/evident.yaml"
    if [ "$what" = consume-effects-postgres ]; then
      pg_url=$(EVIDENT_PG_DURABLE=1 bash scripts/postgres.sh start "$dir/pg")
    fi
    ;;
  relay)
    python3 - "$events" >"$dir/events.ndjson" <<'PY'
import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({"specversion": "1.0", "id": "evt-%d" % i,
                      "source": "training://orders/checkout", "type": "order.status.changed",
                      "subject": "order-%d" % (i % 1000), "time": "2026-07-31T12:00:00Z",
                      "data": {"schemaVersion": 1, "orderId": "order-%d" % (i % 1000),
                               "status": "paid"}}, separators=(",", ":")))
PY
    "$new" outbox append --store "sqlite:$dir/outbox.db" --contracts examples/orders/contracts \
      --schema-version-at /data/schemaVersion \
      "$dir/events.ndjson" >/dev/null
    ;;
  *) echo "usage: $0 consume|consume-effects|consume-effects-postgres|relay OLD NEW [EVENTS] [PAIRS]" >&2; exit 2 ;;
esac

ratios=()
echo "$what: $events events, $pairs pairs (old first in odd pairs, new first in even ones)"
for pair in $(seq 1 "$pairs"); do
  if [ $((pair % 2)) -eq 1 ]; then
    a=$("run_${what//-/_}" "$old")
    b=$("run_${what//-/_}" "$new")
  else
    b=$("run_${what//-/_}" "$new")
    a=$("run_${what//-/_}" "$old")
  fi
  r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')
  ratios+=("$r")
  printf 'pair %d: old %d ms, new %d ms, new/old %s\n' "$pair" "$a" "$b" "$r"
done
printf '%s\n' "${ratios[@]}" | sort -g | awk '{v[NR]=$1} END {
  m = v[int(NR / 2) + 1]; printf "median new/old: %.3f (the upper median, as median.h)\n", m }'
