#!/usr/bin/env bash
# Builds evident in Release and runs the main job on the embedded default store (SQLite): the
# orders example (examples/orders/) through `evident consume` on a fresh store file, then the
# evidence packet of order-417, the open gaps, and the `ship` guard. Installs the Debian packages
# it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh build
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target evident

evident=build/src/cli/evident
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
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
