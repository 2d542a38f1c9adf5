#!/usr/bin/env bash
# The main job's JetStream variant: the orders example's events go into a SQLite outbox
# (`evident outbox append`), `evident relay` publishes them to a NATS JetStream server that this
# script starts on loopback in a temporary directory (scripts/nats.sh), and `evident consume
# --from nats://` decides them into a second store; then the evidence of order-417. Installs the
# Debian packages it needs (nats-server included) and stops the server at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh jetstream
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target evident

evident=build/src/cli/evident
work=$(mktemp -d)
trap 'bash scripts/nats.sh stop "$work/nats" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
url=$(bash scripts/nats.sh start "$work/nats")
producer="sqlite:$work/producer.db"
consumer="sqlite:$work/consumer.db"
config=examples/orders/evident.yaml

run() {
  echo
  echo "\$ evident $*"
  "$evident" "$@" || echo "(exit $?)"
}

# The example's order events carry their schema version as an attribute, its status events in
# /data/schemaVersion: two appends. The events the contracts refuse are refused here, at the
# producer, with their reason codes (exit 1), and never reach the stream.
echo
echo "\$ grep '\"schemaversion\"' examples/orders/events.ndjson | evident outbox append ..."
grep '"schemaversion"' examples/orders/events.ndjson |
  "$evident" outbox append --store "$producer" --contracts examples/orders/contracts \
    --partitions 4 - || echo "(exit $?)"
echo
echo "\$ grep -v '\"schemaversion\"' examples/orders/events.ndjson | evident outbox append --schema-version-at /data/schemaVersion ..."
grep -v '"schemaversion"' examples/orders/events.ndjson |
  "$evident" outbox append --store "$producer" --contracts examples/orders/contracts \
    --schema-version-at /data/schemaVersion --partitions 4 - || echo "(exit $?)"
run outbox stats --store "$producer"
run relay --store "$producer" --to "$url" --stream ORDERS --once
run outbox list --store "$producer"
run consume --config "$config" --store "$consumer" --from "$url" --stream ORDERS --until-idle 2
run evidence order-417 --store "$consumer"
run guard --config "$config" --store "$consumer" --consumer fulfillment --subject order-417 \
  --action ship
echo
echo "The relay again: nothing is pending, nothing is sent twice."
run relay --store "$producer" --to "$url" --stream ORDERS --once
