#!/usr/bin/env bash
# Builds evident in Release and runs the main job on the embedded default store (SQLite): the
# orders example (examples/orders/) through `evident consume` on a fresh store file, then the
# evidence packet of order-417, the open gaps, and the `ship` guard; then the stock reservations
# the paid orders intend, performed against a small local stock service (tools/downstream, on a
# free loopback port): one reservation per order, none for an order cancelled before the run or
# while a later version waits, a release for one reserved before its cancellation, and one whose
# outcome stays unknown until a person resolves it.
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
echo "Effects: a paid order intends one reservation (key reserve:SUBJECT: the operation, not the"
echo "version), written with the decision. Right before each attempt the runner reads the order's"
echo "present projection: order-417 was cancelled before any attempt (its reservation was withdrawn"
echo "by the compensation, never sent), order-418 waits for versions 2 and 3 (postponed, not"
echo "attempted). A local stock service honours Idempotency-Key; for order-422 it answers 503, so"
echo "that reservation's outcome stays unknown (docs/effects.md)."
build/tools/downstream/evident-downstream --listen 127.0.0.1:0 --port-file "$work/stock.port" \
  --log "$work/stock.ndjson" --dedupe --answer 'reserve:order-422=503' &
stock_pid=$!
for _ in $(seq 100); do [ -s "$work/stock.port" ] && break; sleep 0.05; done
[ -s "$work/stock.port" ] || { echo "the stock service did not start" >&2; exit 1; }
export STOCK_SERVICE_URL="http://127.0.0.1:$(cat "$work/stock.port")/reservations"
export STOCK_RELEASE_URL="http://127.0.0.1:$(cat "$work/stock.port")/releases"
run effects run --config "$config" --store "$store" --until-idle 1
run effects list --store "$store"
run guard --config "$config" --store "$store" --consumer fulfillment --subject order-420 --action ship
echo
echo "Later the customers cancel order-420 and order-422. Each cancellation's compensation acts on"
echo "facts only: order-420's reservation was done, so its release is intended once; order-422's"
echo "outcome is unknown, so nothing is intended until someone reconciles it."
run consume --config "$config" --store "$store" --input examples/orders/events-later.ndjson
run compensations list --store "$store"
run effects run --config "$config" --store "$store" --until-idle 1
echo
echo "Someone checks the stock service and records what happened to order-422's reservation; the"
echo "release its compensation waited for is intended in the same transaction:"
run effects resolve reserve:order-422 --store "$store" --outcome done --by ops \
  --note "reservation R-422 found in the stock service"
run effects run --config "$config" --store "$store" --until-idle 1
run effects show reserve:order-417 --store "$store"
run compensations list --store "$store"
echo
echo "What the stock service performed (the requests it acted on, by key):"
grep '"performed":true' "$work/stock.ndjson" | grep -o '"key":"[^"]*"' | sort | uniq -c || true
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
