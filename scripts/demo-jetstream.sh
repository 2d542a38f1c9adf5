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

echo
echo "A gap closed by a replay request (seed 002's request-replay route). The owner appends"
echo "order-430 v1, v2 and v3, keeping each row's version (--subject-version-at); an operator parks"
echo "v2 (its publish kept failing), so only v1 and v3 reach the stream. The consumer, whose gap"
echo "deadline is one second here, defers v3 and, once the deadline passed, asks the owner for v2."
for v in 1 2 3; do
  type=paid extra=""
  if [ "$v" = 3 ]; then type=cancelled extra=',"reason":"customer-request"'; fi
  printf '{"specversion":"1.0","id":"evt-order-430-v%s","source":"https://example.test/order-service","type":"com.example.training.order.%s","subject":"order-430","schemaversion":1,"data":{"orderId":"order-430","orderVersion":%s%s}}\n' \
    "$v" "$type" "$v" "$extra"
done >"$work/order-430.ndjson"
run outbox append --store "$producer" --contracts examples/orders/contracts --partitions 4 \
  --subject-version-at /data/orderVersion "$work/order-430.ndjson"
v2=$("$evident" outbox list --store "$producer" --pending --format json |
  grep '"evt-order-430-v2"' | sed -E 's/.*"seq":([0-9]+).*/\1/')
run outbox park --store "$producer" --seq "$v2" --reason "its publish kept failing"
run relay --store "$producer" --to "$url" --stream ORDERS --once
cp -r examples/orders "$work/orders"
sed -i 's/deadline_seconds: 300/deadline_seconds: 1/' "$work/orders/contracts/consumers/fulfillment.yaml"
run consume --config "$work/orders/evident.yaml" --store "$consumer" --from "$url" --stream ORDERS \
  --until-idle 2
echo
echo "The consumer's relay publishes its replay request to a stream of requests; the owner answers"
echo "it from its outbox: v2 (parked, but kept) and v3 again, under message ids of their own, then"
echo "the answer itself."
run relay --store "$consumer" --to "$url" --stream REQUESTS --subject-prefix requests --once
run replay-requests serve --store "$producer" --from "$url" --stream REQUESTS \
  --subject-prefix requests --owner-source https://example.test/order-service \
  --to "$url" --to-stream ORDERS --until-idle 2
run consume --config "$work/orders/evident.yaml" --store "$consumer" --from "$url" --stream ORDERS \
  --until-idle 2
run evidence order-430 --store "$consumer"
