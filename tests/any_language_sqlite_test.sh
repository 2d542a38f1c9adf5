#!/usr/bin/env bash
# evident_sqlite.so driven as a service in another language drives it: Debian's python3 and Node
# with better-sqlite3 (the order service examples) and the sqlite3 shell, against a store
# prepared by the evident binary.
# The module links no libsqlite3; an append joins the caller's transaction (a refused event and
# a client killed -9 before its COMMIT leave neither row); concurrent appenders; a relay
# publishes what they appended.
# Usage: any_language_sqlite_test.sh EVIDENT_BINARY EVIDENT_SQLITE_MODULE
set -euo pipefail
evident=$1
module=$2
root=$(cd "$(dirname "$0")/.." && pwd)
service="/usr/bin/python3 $root/examples/python/order_service_sqlite.py"
dir=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
store="$dir/shop.db"
fail() { echo "FAIL: $*"; exit 1; }
count() { sqlite3 "$store" "SELECT count(*) FROM $1"; }

# 1. No copy of SQLite inside the module: its SQLite calls are the loader's.
readelf -d "$module" | grep -q 'libsqlite3' && fail "the module needs libsqlite3"
if nm -D --undefined-only "$module" | grep -E ' sqlite3_' ; then fail "undefined sqlite3_ symbols"; fi
nm -D --defined-only "$module" | grep -q ' sqlite3_evidentsqlite_init$' || fail "no entry point"

# 2. A store prepared by the binary, its contracts pushed.
"$evident" store migrate --store "sqlite:$store" > /dev/null
"$evident" contracts push --store "sqlite:$store" --contracts "$root/examples/orders/contracts" \
  --schema-version-at /data/schemaVersion > /dev/null

# 3. Python: appended, then a refused event rolls the order's change back.
out=$($service --store "$store" --module "$module" --order order-1 --status paid)
[ "$out" = "appended seq 1" ] || fail "python append: $out"
set +e
out=$($service --store "$store" --module "$module" --order order-2 --status paid --schema-version 9)
code=$?
set -e
[ $code -eq 1 ] || fail "a refusal exits $code"
[[ "$out" == "refused: unaccepted-schema-version: rejected: "* ]] || fail "refusal: $out"
[ "$(sqlite3 "$store" "SELECT group_concat(id) FROM orders")" = "order-1" ] || fail "order-2 kept"
[ "$(count outbox)" = 1 ] || fail "outbox rows: $(count outbox)"

# 4. The sqlite3 shell, in its own transaction.
event='{"specversion":"1.0","id":"shell-1","source":"training://orders/checkout","type":"order.status.changed","subject":"order-9","data":{"schemaVersion":1,"orderId":"order-9","status":"paid"}}'
out=$(sqlite3 "$store" <<SQL
.load $module
PRAGMA synchronous=FULL;
BEGIN IMMEDIATE;
INSERT INTO orders(id, status, version) VALUES('order-9', 'paid', 1);
SELECT evident_append('$event');
COMMIT;
SQL
)
[ "$out" = "2" ] || fail "shell append: $out"
out=$(sqlite3 "$store" 2>&1 <<SQL || true
.load $module
SELECT evident_append('$event');
SQL
)
[[ "$out" == *"between BEGIN IMMEDIATE and COMMIT"* ]] || fail "outside a transaction: $out"

# 5. kill -9 between the append and the COMMIT: neither row.
$service --store "$store" --module "$module" --order order-k --status paid --hold > "$dir/held" &
held=$!
for _ in $(seq 1 200); do grep -q held "$dir/held" && break; sleep 0.05; done
grep -q held "$dir/held" || fail "the held client never appended"
kill -9 $held
wait $held 2>/dev/null || true
[ "$(sqlite3 "$store" "SELECT count(*) FROM orders WHERE id='order-k'")" = 0 ] || fail "order-k kept"
[ "$(count outbox)" = 2 ] || fail "outbox after the kill: $(count outbox)"

# 6. Two appenders at once, 100 events each: every one appended, no seq twice.
$service --store "$store" --module "$module" --order a --status paid --count 100 > "$dir/a" &
first=$!
$service --store "$store" --module "$module" --order b --status paid --count 100 > "$dir/b" &
second=$!
wait $first || fail "appender a: $(tail -1 "$dir/a")"
wait $second || fail "appender b: $(tail -1 "$dir/b")"
[ "$(cat "$dir/a" "$dir/b" | grep -c '^appended seq ')" = 200 ] || fail "not every event appended"
[ "$(cat "$dir/a" "$dir/b" | sort -u | wc -l)" = 200 ] || fail "a seq answered twice"
[ "$(count outbox)" = 202 ] || fail "outbox rows: $(count outbox)"
[ "$(count orders)" = 202 ] || fail "orders: $(count orders)"

# 7. A relay publishes what they appended, each event once, the bytes unchanged.
"$evident" relay --store "sqlite:$store" --to "file:$dir/published.ndjson" --once > /dev/null
[ "$(wc -l < "$dir/published.ndjson")" = 202 ] || fail "published: $(wc -l < "$dir/published.ndjson")"
grep -qF "$event" "$dir/published.ndjson" || fail "the shell's event is not published as appended"
# 8. Node with better-sqlite3, which bundles a SQLite of its own (a newer one than Debian's): the
#    module runs on that one (installed by tests/npm_ci.sh, which builds its native part here).
node_dir="$root/examples/node"
bash "$root/tests/npm_ci.sh" "$node_dir"
node_service="node $node_dir/order_service_sqlite.js"
out=$($node_service --store "$store" --module "$module" --order order-n --status paid)
[[ "$out" =~ ^appended\ seq\ [0-9]+$ ]] || fail "node append: $out"
set +e
out=$($node_service --store "$store" --module "$module" --order order-m --status paid --schema-version 9)
code=$?
set -e
[ $code -eq 1 ] || fail "a node refusal exits $code"
[[ "$out" == "refused: unaccepted-schema-version: "* ]] || fail "node refusal: $out"
[ "$(sqlite3 "$store" "SELECT count(*) FROM orders WHERE id='order-m'")" = 0 ] || fail "order-m kept"
echo "evident_sqlite.so: python3, node (better-sqlite3) and the sqlite3 shell appended in their own transactions"
