#!/usr/bin/env bash
# The main job's Kafka variant: the orders example's events go into a SQLite outbox
# (`evident outbox append`), `evident relay` publishes them to a Kafka topic (keyed by subject,
# the idempotent producer), and `evident consume --from kafka://` decides them into a second
# store, whose positions it keeps per partition; then the evidence of order-417. No Kafka broker
# can be installed here: the topic lives in librdkafka's mock cluster (tools/kafka-mock, three
# brokers on loopback, started by scripts/kafka.sh and stopped at the end; docs/kafka.md says what
# it cannot prove). Installs the Debian packages it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh build
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target evident evident-kafka-mock

evident=build/src/cli/evident
work=$(mktemp -d)
trap 'bash scripts/kafka.sh stop "$work/kafka" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
url=$(bash scripts/kafka.sh start "$work/kafka" 3 orders:4)
producer="sqlite:$work/producer.db"
consumer="sqlite:$work/consumer.db"
config=examples/orders/evident.yaml

run() {
  echo
  echo "\$ evident $*"
  "$evident" "$@" || echo "(exit $?)"
}

# As in scripts/demo.sh: the events the contracts refuse are refused here, at the producer, with
# their reason codes (exit 1), and never reach the topic.
echo
echo "\$ grep '\"schemaversion\"' examples/orders/events.ndjson | evident outbox append ..."
grep '"schemaversion"' examples/orders/events.ndjson |
  "$evident" outbox append --store "$producer" --contracts examples/orders/contracts - ||
  echo "(exit $?)"
echo
echo "\$ grep -v '\"schemaversion\"' examples/orders/events.ndjson | evident outbox append --schema-version-at /data/schemaVersion ..."
grep -v '"schemaversion"' examples/orders/events.ndjson |
  "$evident" outbox append --store "$producer" --contracts examples/orders/contracts \
    --schema-version-at /data/schemaVersion - || echo "(exit $?)"
run relay --store "$producer" --to "$url" --topic orders --once
run outbox stats --store "$producer"
run consume --config "$config" --store "$consumer" --from "$url" --topic orders --durable orders-demo \
  --until-idle 2
run evidence order-417 --store "$consumer"
echo
echo "The relay and the consumer again: nothing is pending, nothing is sent or decided twice (the"
echo "consumer begins at the positions its store holds, one per partition)."
run relay --store "$producer" --to "$url" --topic orders --once
run consume --config "$config" --store "$consumer" --from "$url" --topic orders --durable orders-demo \
  --until-idle 2
