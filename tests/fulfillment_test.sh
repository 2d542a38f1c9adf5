#!/usr/bin/env bash
# The consumer half in any language (examples/python/fulfillment.py, issue: the consumer's
# decision inside the service's own writes): seed 002's order story published to a NATS
# JetStream server (scripts/nats.sh) by evident's relay, read by the Python service (the NATS C
# client) and the Node one (the `nats` package, installed by tests/npm_ci.sh), and decided by `evident_decide` inside the service's own transaction, which also
# writes its reservations; on PostgreSQL (evident_pg.so in the tests' server, through psycopg and
# pg) and on SQLite (evident_sqlite.so in Python's and better-sqlite3's own connections).
#   v1, v3 (deferred), v2 (applied, then v3 drained), a second v3 (conflict); a repeat is a
#   duplicate; the service's table holds one row per applied version; evidence and guard answer
#   from what the calls recorded; a client killed -9 between decide and commit leaves nothing and
#   the redelivery decides afresh; two clients on one subject take turns (one applies, the other
#   answers duplicate), while another subject goes on; on PostgreSQL, evident_decide's decisions
#   equal `evident consume`'s for the orders example's events.
# Usage: fulfillment_test.sh EVIDENT_BINARY EVIDENT_SQLITE_MODULE [EVIDENT_PG_MODULE POSTGRES_FIXTURE_DIR]
set -euo pipefail
evident=$1
sqlite_module=$2
pg_module=${3:-}
fixture=${4:-}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=/usr/lib/postgresql/15/bin
dir=$(mktemp -d)
cleanup() {
  kill -9 $(jobs -p) 2>/dev/null || true
  bash "$root/scripts/nats.sh" stop "$dir/nats" > /dev/null 2>&1 || true
  rm -rf "$dir" ${library:+"$library"}
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
python=/usr/bin/python3
node_dir="$root/examples/node"
bash "$root/tests/npm_ci.sh" "$node_dir"
config="$root/examples/orders/reservations.yaml"

nats=$(bash "$root/scripts/nats.sh" start "$dir/nats") || fail "nats-server did not start"

# Seed 002's story of order-417 as the owner publishes it: its outbox, relayed to JetStream.
event() {  # ID KIND VERSION [SUBJECT]
  local extra=""
  [ "$2" = cancelled ] && extra=',"reason":"customer-request"'
  printf '{"specversion":"1.0","id":"%s","source":"https://example.test/order-service","type":"com.example.training.order.%s","subject":"%s","schemaversion":1,"data":{"orderId":"%s","orderVersion":%s%s}}\n' \
    "$1" "$2" "${4:-order-417}" "${4:-order-417}" "$3" "$extra"
}
{
  event evt-paid-v1 paid 1
  event evt-cancelled-v3 cancelled 3
  event evt-paid-v2 paid 2
  event evt-other-v3 cancelled 3
} > "$dir/story.ndjson"
"$evident" outbox append --store "sqlite:$dir/owner.db" --contracts "$root/examples/orders/contracts" \
  "$dir/story.ndjson" > /dev/null
"$evident" relay --store "sqlite:$dir/owner.db" --to "$nats" --stream ORDERS --once > /dev/null 2>&1

expected_story="order-417 v1 applied
order-417 v3 deferred
order-417 v2 applied
order-417 v3 applied drained
order-417 v3 same-version-conflict version-already-applied"

# One backend's run of the story, by $service. $1: a name; the rest: the service's store options.
run_story() {
  local name=$1
  shift
  local out
  out=$($service "$@" --nats "$nats" $stream_option --durable "f-$name" --until-idle 2) \
    || fail "$name: the service failed: $out"
  [ "$out" = "$expected_story" ] || fail "$name: the story decided as:
$out"
  # Any repeat is a duplicate.
  event evt-paid-v2 paid 2 > "$dir/repeat.ndjson"
  event evt-cancelled-v3 cancelled 3 >> "$dir/repeat.ndjson"
  out=$($service "$@" --events "$dir/repeat.ndjson")
  [ "$out" = $'order-417 v2 duplicate\norder-417 v3 duplicate' ] || fail "$name: repeats: $out"
}

# The kill -9, the two clients on one subject and a third on another. $1: a name, $2: a command
# that prints the count of the service's log rows for a subject ($3 the subject); the rest: the
# service's store options.
run_races() {
  local name=$1 count=$2
  shift 2
  event evt-order-500 paid 1 order-500 > "$dir/500.ndjson"
  $service "$@" --events "$dir/500.ndjson" --hold-after 1 > "$dir/held" 2>&1 &
  local held=$!
  for _ in $(seq 1 200); do grep -q held "$dir/held" && break; sleep 0.05; done
  grep -q held "$dir/held" || fail "$name: the held client never decided: $(cat "$dir/held")"
  kill -9 $held
  wait $held 2>/dev/null || true
  [ "$($count order-500)" = 0 ] || fail "$name: a killed client's write stayed"
  out=$($service "$@" --events "$dir/500.ndjson")
  [ "$out" = "order-500 v1 applied" ] || fail "$name: the redelivery after the kill: $out"

  # A holds order-600 open; B decides the same event meanwhile and must wait (or retry).
  event evt-order-600 paid 1 order-600 > "$dir/600.ndjson"
  $service "$@" --events "$dir/600.ndjson" --hold-after 1 > "$dir/a" 2>&1 &
  local a=$!
  for _ in $(seq 1 200); do grep -q held "$dir/a" && break; sleep 0.05; done
  grep -q held "$dir/a" || fail "$name: client A never decided: $(cat "$dir/a")"
  $service "$@" --events "$dir/600.ndjson" > "$dir/b" 2>&1 &
  local b=$!
  if [ "$name" = postgresql ]; then
    # Another subject of the same consumer goes on meanwhile: the lock is the subject's.
    event evt-order-601 paid 1 order-601 > "$dir/601.ndjson"
    out=$(timeout 5 $service "$@" --events "$dir/601.ndjson") \
      || fail "$name: order-601 waited for order-600's transaction"
    [ "$out" = "order-601 v1 applied" ] || fail "$name: order-601: $out"
  fi
  sleep 1
  kill -0 $b 2>/dev/null || fail "$name: B did not wait for A: $(cat "$dir/b")"
  # Meanwhile A is killed after B has waited: B then applies it, once.
  kill -9 $a
  wait $a 2>/dev/null || true
  wait $b || fail "$name: B failed: $(cat "$dir/b")"
  [ "$(cat "$dir/b")" = "order-600 v1 applied" ] || fail "$name: B: $(cat "$dir/b")"
  [ "$($count order-600)" = 1 ] || fail "$name: order-600 written $($count order-600) times"

  # Two clients at once on one subject, neither held: one applies, the other answers duplicate.
  event evt-order-700 paid 1 order-700 > "$dir/700.ndjson"
  $service "$@" --events "$dir/700.ndjson" > "$dir/c" 2>&1 &
  local c=$!
  $service "$@" --events "$dir/700.ndjson" > "$dir/d" 2>&1 &
  local d=$!
  wait $c || fail "$name: C failed: $(cat "$dir/c")"
  wait $d || fail "$name: D failed: $(cat "$dir/d")"
  [ "$(sort "$dir/c" "$dir/d" | tr '\n' ',')" = "order-700 v1 applied,order-700 v1 duplicate," ] \
    || fail "$name: concurrent clients: $(cat "$dir/c" "$dir/d")"
  [ "$($count order-700)" = 1 ] || fail "$name: order-700 written twice"
}

# --- SQLite: the service's own file, evident's extension in its connection ----------------------
sqlite_service() {  # LANGUAGE
  local lang=$1
  db="$dir/service-$lang.db"
  "$evident" store migrate --store "sqlite:$db" > /dev/null
  "$evident" consumers push --store "sqlite:$db" --config "$config" > /dev/null
  run_story "sqlite-$lang" --sqlite "$db" --module "$sqlite_module"
  [ "$(sqlite_count order-417)" = 3 ] || fail "sqlite $lang: reservation_log holds $(sqlite_count order-417) rows of order-417"
  out=$("$evident" evidence order-417 --store "sqlite:$db")
  [[ "$out" == *"applied   v3"*"(com.example.training.order.cancelled)"* ]] || fail "sqlite evidence: $out"
  [[ "$out" == *"quarantined #1 same-version-conflict"* ]] || fail "sqlite evidence, conflict: $out"
  out=$("$evident" guard --store "sqlite:$db" --consumer reservations --subject order-417 --action ship)
  [ "$out" = "reservations ship order-417: allowed" ] || fail "sqlite guard: $out"
  run_races sqlite sqlite_count --sqlite "$db" --module "$sqlite_module"
  echo "sqlite, $lang: the story, repeats, evidence, guard, kill -9 and concurrent clients hold"
}
sqlite_count() {
  $python -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT count(*) FROM reservation_log WHERE order_id=?\", (sys.argv[2],)).fetchone()[0])" "$db" "$1"
}
# Python subscribes by the stream's subject (evident.>, its default), Node by the stream's name.
service="$python $root/examples/python/fulfillment.py" stream_option=""
sqlite_service python
service="node $node_dir/fulfillment.js" stream_option="--stream ORDERS"
sqlite_service node

# --- PostgreSQL: evident_pg.so in the tests' server ------------------------------------------------
if [ -z "$pg_module" ]; then
  echo "PostgreSQL part not run: no evident_pg.so was built"
  exit 0
fi
[ -f "$fixture/url" ] || fail "no PostgreSQL server: $fixture/url is missing (postgres_start failed)"
server=$(cat "$fixture/url")
data=$(cat "$fixture/data")
library="$data/evident_pg_fulfillment_$$.so"
cp "$pg_module" "$library"
chmod 644 "$library"
pg_service() {  # LANGUAGE
  local lang=$1
  schema="fulfillment_${lang}_$$"
  "$bin/psql" "$server" -qAt -c "CREATE SCHEMA $schema" > /dev/null
  url="$server?options=-csearch_path%3D$schema"
  "$evident" store migrate --store "$url" > /dev/null
  "$evident" consumers push --store "$url" --config "$config" > /dev/null
  "$evident" store install-functions --store "$url" --library "$library" > /dev/null
  run_story "postgresql-$lang" --pg "$url"
  [ "$(pg_count order-417)" = 3 ] || fail "postgresql $lang: reservation_log holds $(pg_count order-417) rows"
  out=$("$evident" evidence order-417 --store "$url")
  [[ "$out" == *"applied   v3"*"(com.example.training.order.cancelled)"* ]] || fail "pg evidence: $out"
  out=$("$evident" guard --store "$url" --consumer reservations --subject order-417 --action ship)
  [ "$out" = "reservations ship order-417: allowed" ] || fail "pg guard: $out"
  run_races postgresql pg_count --pg "$url"
  echo "postgresql, $lang: the story, repeats, evidence, guard, kill -9 and concurrent clients hold"
}
pg_count() {
  "$bin/psql" "$url" -qAt -c "SELECT count(*) FROM reservation_log WHERE order_id='$1'"
}
service="$python $root/examples/python/fulfillment.py" stream_option=""
pg_service python
service="node $node_dir/fulfillment.js" stream_option="--stream ORDERS"
pg_service node
# An unknown consumer is its own SQLSTATE (42704), and the transaction rolls back.
out=$("$bin/psql" "$url" -qAt -c '\set VERBOSITY sqlstate' \
  -c "SELECT * FROM evident_decide('nobody', convert_to('{}', 'UTF8'))" 2>&1 || true)
[[ "$out" == *"42704"* ]] || fail "unknown consumer: $out"
out=$("$bin/psql" "$url" -qAt -c '\set VERBOSITY sqlstate' -c "BEGIN ISOLATION LEVEL REPEATABLE READ" \
  -c "SELECT * FROM evident_decide('reservations', convert_to('{}', 'UTF8'))" 2>&1 || true)
[[ "$out" == *"0A000"* ]] || fail "repeatable read: $out"
out=$("$bin/psql" "$url" -qAt -c '\set VERBOSITY sqlstate' \
  -c "SELECT * FROM evident_decide('reservations', NULL)" 2>&1 || true)
[[ "$out" == *"22004"* ]] || fail "a NULL event: $out"
# An event of a type the consumer does not subscribe to is answered, not kept.
before=$("$bin/psql" "$url" -qAt -c "SELECT count(*) FROM quarantine")
out=$("$bin/psql" "$url" -qAt -c "SELECT outcome, reason FROM evident_decide('reservations', convert_to('{\"specversion\":\"1.0\",\"id\":\"x-1\",\"source\":\"https://example.test/order-service\",\"type\":\"other.type\",\"data\":{}}', 'UTF8'))")
[ "$out" = "unrouted|no-subscriber" ] || fail "unrouted: $out"
[ "$("$bin/psql" "$url" -qAt -c "SELECT count(*) FROM quarantine")" = "$before" ] || fail "unrouted kept"

# The orders example: evident_decide's decisions equal `evident consume`'s, same order.
for s in "${schema}_consume" "${schema}_decide"; do
  "$bin/psql" "$server" -qAt -c "CREATE SCHEMA $s" > /dev/null
done
consume_url="$server?options=-csearch_path%3D${schema}_consume"
decide_url="$server?options=-csearch_path%3D${schema}_decide"
orders="$root/examples/orders"
"$evident" consume --config "$orders/evident.yaml" --store "$consume_url" \
  --input "$orders/events.ndjson" --outcomes "$dir/consumed.ndjson" > /dev/null 2>&1 || true
"$evident" store migrate --store "$decide_url" > /dev/null
"$evident" consumers push --store "$decide_url" --config "$orders/evident.yaml" > /dev/null
"$evident" store install-functions --store "$decide_url" --library "$library" > /dev/null
$python - "$decide_url" "$orders/events.ndjson" "$dir/consumed.ndjson" <<'PY' || fail "decide vs consume"
import json, sys, psycopg
url, events_path, consumed_path = sys.argv[1:]
consumed = [json.loads(l) for l in open(consumed_path) if l.strip()]
events = [l.rstrip("\n").encode() for l in open(events_path, "rb").read().decode().split("\n") if l]
consumers = ["orders-projection", "fulfillment"]
db = psycopg.connect(url, autocommit=True)
ours = []
for index, event in enumerate(events):
    for consumer in consumers:
        db.execute("BEGIN")
        rows = db.execute("SELECT outcome, reason, key, subject_version, drained"
                          " FROM evident_decide(%s, %s)", (consumer, event)).fetchall()
        db.execute("COMMIT")
        for r in rows:
            if r[0] == "unrouted":
                continue
            ours.append((index, consumer, r[0], r[1], r[2] or None, r[3], r[4]))
theirs = []
for d in consumed:
    if d["outcome"] == "unrouted":
        continue
    for consumer in ([d["consumer"]] if d["consumer"] else consumers):
        theirs.append((d["index"], consumer, d["outcome"], d["reason"], d["key"] or None,
                       d.get("subject_version"), d["drained"]))
# In decision order (a drained event carries the index of its own input line): compared
# without the index.
ours = [t[1:] for t in ours]
theirs = [t[1:] for t in theirs]
if ours != theirs:
    for a, b in zip(ours, theirs):
        if a != b:
            print("first difference:\n  evident_decide %s\n  consume        %s" % (a, b))
            break
    print("decided %d, consumed %d" % (len(ours), len(theirs)))
    sys.exit(1)
print("evident_decide equals consume: %d decisions" % len(ours))
# An event read through the v4-to-v2 adapter is answered as v2's payload.
v4 = open(events_path.replace("events.ndjson", "events-v4.ndjson"), "rb").readline().rstrip(b"\n")
db.execute("BEGIN")
rows = db.execute("SELECT outcome, schema_version, adapter, event FROM evident_decide(%s, %s)",
                  ("orders-projection", v4)).fetchall()
db.execute("COMMIT")
outcome, schema_version, adapter, answered = rows[0]
data = json.loads(bytes(answered))["data"]
if (len(rows) != 1 or outcome != "applied" or schema_version != 2 or
        adapter != "order-status-v4-to-v2" or
        data != {"schemaVersion": 2, "orderId": "order-104", "status": "delivered",
                 "paymentReference": None}):  # and the step's explicit default filled in
    print("the adapted event: %s" % (rows,))
    sys.exit(1)
PY
echo "PASS"
