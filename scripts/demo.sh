#!/usr/bin/env bash
# Builds evident in Release and runs the main job on the embedded default store (SQLite): the
# orders example (examples/orders/) through `evident consume` on a fresh store file, then the
# evidence packet of order-417, the open gaps, and the `ship` guard; then the stock reservations
# the paid orders intend, performed against a small local stock service (tools/downstream, on a
# free loopback port: one done, one whose outcome stays unknown until a person resolves it).
# Installs the Debian packages it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh build
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target evident evident-downstream

evident=build/src/cli/evident
work=$(mktemp -d)
stock_pid=
cleanup() {
  if [ -n "$stock_pid" ]; then kill "$stock_pid" 2>/dev/null || true; wait "$stock_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
store="sqlite:$work/orders.db"
config=examples/orders/evident.yaml

run() {
  echo
  echo "\$ evident $*"
  "$evident" "$@" || true
}

run validate --schema-version-at /data/schemaVersion examples/envelopes/batch.json
run consume --config "$config" --store "$store" --input examples/orders/events.ndjson \
  --outcomes "$work/outcomes.ndjson"
echo
echo "(one decision per line in outcomes.ndjson; the first five:)"
head -5 "$work/outcomes.ndjson"
run evidence order-417 --store "$store"
run gaps --store "$store" --all
run guard --config "$config" --store "$store" --consumer fulfillment --subject order-417 --action ship
run guard --config "$config" --store "$store" --consumer fulfillment --subject order-418 --action ship
run guard --config "$config" --store "$store" --consumer fulfillment --subject order-420 --action ship
echo
echo "The same input again: nothing applies twice (applied and deferred events are duplicates;"
echo "the others get the same decision again: their quarantine records count one more attempt)."
run consume --config "$config" --store "$store" --input examples/orders/events.ndjson
echo
echo "What was not applied: one quarantine record per input, with its attempts (docs/quarantine.md)."
run quarantine list --store "$store"
echo
echo "Effects: each paid order intends to reserve stock (key reserve:SUBJECT:vVERSION), written"
echo "with the decision. A local stock service honours Idempotency-Key; for order-418 it answers"
echo "503 every time, so that reservation's outcome stays unknown (docs/effects.md)."
build/tools/downstream/evident-downstream --listen 127.0.0.1:0 --port-file "$work/stock.port" \
  --log "$work/stock.ndjson" --dedupe --answer 'order-418:=503' &
stock_pid=$!
for _ in $(seq 100); do [ -s "$work/stock.port" ] && break; sleep 0.05; done
[ -s "$work/stock.port" ] || { echo "the stock service did not start" >&2; exit 1; }
export STOCK_SERVICE_URL="http://127.0.0.1:$(cat "$work/stock.port")/reservations"
run effects run --config "$config" --store "$store" --until-idle 1
run effects list --store "$store"
run guard --config "$config" --store "$store" --consumer fulfillment --subject order-420 --action ship
run guard --config "$config" --store "$store" --consumer fulfillment --subject order-418 --action ship
echo
echo "Someone checks the stock service and records what happened to order-418's reservation:"
run effects resolve reserve:order-418:v1 --store "$store" --outcome done --by ops \
  --note "reservation R-418 found in the stock service"
run effects show reserve:order-418:v1 --store "$store"
run compensations list --store "$store"
echo
echo "Seed 000: its own event, as the seed writes it, is valid under the contract profile."
run validate --profile contract examples/envelopes/seed-000.json
echo
echo "order.status.changed v4 renamed status to state; orders-projection reads it through the"
echo "adapter order-status-v4-to-v2, which lint checks against both schemas (docs/contracts.md)."
run contracts lint examples/orders/contracts
run contracts impact --contracts examples/orders/contracts --type order.status.changed \
  --schema examples/orders/contracts/order.status.changed/v4.schema.json
run consume --config "$config" --store "$store" --input examples/orders/events-v4.ndjson \
  --outcomes -
echo
echo "Each receipt keeps what its event wrote (defaults named, the adapter too):"
run evidence order-104 --store "$store"
