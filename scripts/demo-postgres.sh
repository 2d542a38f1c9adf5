#!/usr/bin/env bash
# The main job on PostgreSQL: a throw-away PostgreSQL 15 cluster (scripts/postgres.sh: loopback,
# a free port, a temporary directory, stopped at the end), then the orders example through
# `evident consume` into it, the evidence packet of order-417, the open gaps and the `ship`
# guard, as scripts/demo.sh does on SQLite. Installs the Debian packages it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh postgres
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target evident

evident=build/src/cli/evident
work=$(mktemp -d)
cleanup() {
  bash scripts/postgres.sh stop "$work/postgres" || true
  rm -rf "$work"
}
trap cleanup EXIT
store=$(bash scripts/postgres.sh start "$work/postgres")
config=examples/orders/evident.yaml

run() {
  echo
  echo "\$ evident $*"
  "$evident" "$@" || true
}

run store migrate --store "$store"
run consume --config "$config" --store "$store" --input examples/orders/events.ndjson \
  --outcomes "$work/outcomes.ndjson"
run evidence order-417 --store "$store"
run gaps --store "$store" --all
run guard --config "$config" --store "$store" --consumer fulfillment --subject order-417 --action ship
# The summary above must match the SQLite run's decisions: every line of the example decided.
decided=$(wc -l <"$work/outcomes.ndjson")
[ "$decided" -gt 0 ] || { echo "no decisions were written" >&2; exit 1; }
echo
echo "($decided decisions committed to PostgreSQL at $store)"
