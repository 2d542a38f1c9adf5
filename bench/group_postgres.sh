#!/usr/bin/env bash
# bench/group_postgres.sh — a consumer group (`evident consume --group`) with one, two and four
# member processes over the same JetStream stream into one PostgreSQL 15 server (fsync on), in
# ONE run: events/s from the first member's start until every partition's committed position is
# the stream's last message of that partition, and the ratio to one member.
#
# The events (status changes of EVENTS/50 orders, the orders example's unordered consumer) go
# through the outbox (`outbox append --partitions P`) and the relay into the stream once; each
# group size then consumes the whole stream as a group of its own into a schema of its own.
# This machine has two cores, shared with PostgreSQL and nats-server: more members than cores
# measure contention, not scale-out; the figure is the ratio, on this machine.
#
# Usage: bench/group_postgres.sh [BUILD_DIR] [EVENTS] [PARTITIONS]   (defaults: build, 100000, 8)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
events=${2:-100000}
partitions=${3:-8}
evident="$build/src/cli/evident"
tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  bash scripts/nats.sh stop "$tmp/nats" >/dev/null 2>&1 || true
  bash scripts/postgres.sh stop "$tmp/pg" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

EVIDENT_PG_DURABLE=1 bash scripts/postgres.sh start "$tmp/pg" >/dev/null
url=$(cat "$tmp/pg/url")
nats=$(bash scripts/nats.sh start "$tmp/nats")
python3 bench/status_events.py "$events" "$tmp/events.ndjson"
"$evident" outbox append --store "$url" --contracts examples/orders/contracts \
  --schema-version-at /data/schemaVersion \
  --partitions "$partitions" "$tmp/events.ndjson" >/dev/null
"$evident" relay --store "$url" --to "$nats" --stream BENCH --once 2>/dev/null
# The last stream sequence of each partition, from the outbox rows the relay marked.
psql -qAt "$url" -c "SELECT event_partition, max(stream_sequence) FROM outbox GROUP BY 1" \
  >"$tmp/last_seq"

# Runs a group of $1 members into schema g$1; prints its events/s.
run_group() {
  local n=$1 schema="g$1"
  psql -q "$url" -c "CREATE SCHEMA $schema" >/dev/null
  local store="$url?options=-csearch_path%3D$schema"
  local start
  start=$(date +%s.%N)
  pids=()
  for ((m = 0; m < n; m++)); do
    "$evident" consume --config examples/orders/evident.yaml --store "$store" --from "$nats" \
      --stream BENCH --group "$schema" --partitions "$partitions" --member "m$m" --lease-ms 1500 \
      >"$tmp/$schema-m$m.log" 2>&1 &
    pids+=($!)
  done
  while true; do
    done_partitions=$(psql -qAt "$store" -c "SELECT count(*) FROM group_lease l JOIN
      (VALUES $(sed 's/|/,/; s/^/(/; s/$/)/' "$tmp/last_seq" | paste -sd,)) AS t(p, last)
      ON l.event_partition = t.p WHERE l.position >= t.last" 2>/dev/null || echo 0)
    [ "$done_partitions" = "$(wc -l <"$tmp/last_seq")" ] && break
    sleep 0.05
  done
  local end
  end=$(date +%s.%N)
  for pid in "${pids[@]}"; do kill -TERM "$pid"; done
  for pid in "${pids[@]}"; do wait "$pid"; done
  pids=()
  python3 -c "print('%.0f' % ($events / ($end - $start)))"
}

one=$(run_group 1)
two=$(run_group 2)
four=$(run_group 4)
echo "events $events, partitions $partitions, $(nproc) cores"
echo "1 member   $one events/s   1.00x"
python3 -c "print('2 members  $two events/s   %.2fx' % ($two / $one))"
python3 -c "print('4 members  $four events/s   %.2fx' % ($four / $one))"
