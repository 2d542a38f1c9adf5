#!/usr/bin/env bash
# evident_pg.so inside the tests' PostgreSQL 15 server (the `postgres` fixture of
# scripts/postgres.sh), driven by services in other languages: Debian's python3 with psycopg,
# Node with pg (the order service examples) and the psql shell, against a store prepared by the
# evident binary (store migrate, contracts push, store install-functions).
# An append joins the caller's transaction: appended, duplicate, conflict and each refusal (with
# its SQLSTATE, the business row gone with it); a client killed -9 before its COMMIT leaves
# neither row; concurrent appenders; a relay publishes what they appended; hostile events are
# refused in bounded time and the server's backend keeps serving.
# Usage: any_language_pg_test.sh EVIDENT_BINARY EVIDENT_PG_MODULE POSTGRES_FIXTURE_DIR
set -euo pipefail
evident=$1
module=$2
fixture=$3
root=$(cd "$(dirname "$0")/.." && pwd)
bin=/usr/lib/postgresql/15/bin
dir=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
[ -f "$fixture/url" ] || fail "no PostgreSQL server: $fixture/url is missing (postgres_start failed)"
server=$(cat "$fixture/url")
data=$(cat "$fixture/data")

# 1. The module exports the magic block and the three functions' entry points, nothing else.
exported=$(nm -D --defined-only "$module" | awk '{print $3}' | sort | tr '\n' ' ')
[ "$exported" = "Pg_magic_func evident_append evident_compensate evident_decide evident_try_append pg_finfo_evident_append pg_finfo_evident_compensate pg_finfo_evident_decide pg_finfo_evident_try_append " ] \
  || fail "exports: $exported"
# Its assertions end a session (FATAL), not the backend process (glibc's __assert_fail aborts,
# and the postmaster then restarts the whole cluster): the module resolves the call itself.
if nm -D --undefined-only "$module" | grep -q '__assert_fail'; then
  fail "the module's assertions would abort the server's backend"
fi

# 2. A schema of this test's own, the module where the server's OS user can read it.
schema="any_language_$$"
"$bin/psql" "$server" -qAt -c "CREATE SCHEMA $schema" > /dev/null
url="$server?options=-csearch_path%3D$schema"
library="$data/evident_pg_$$.so"
cp "$module" "$library"
chmod 644 "$library"
trap 'kill -9 $(jobs -p) 2>/dev/null || true; rm -rf "$dir" "$library"' EXIT
sql() { "$bin/psql" "$url" -qAt -v ON_ERROR_STOP=1 "$@"; }

# Functions need a store: install-functions says so, and refuses a path that is not absolute.
set +e
out=$("$evident" store install-functions --store "$url" --library "$library" 2>&1)
code=$?
[ $code -eq 2 ] && [[ "$out" == *"no evident store in schema \"$schema\""* ]] || fail "no store: $code $out"
out=$("$evident" store install-functions --store "$url" --library evident_pg.so 2>&1)
[ $? -eq 2 ] && [[ "$out" == *"absolute path"* ]] || fail "relative library: $out"
set -e
"$evident" store migrate --store "$url" > /dev/null
set +e
out=$("$evident" store install-functions --store "$url" --library "$dir/absent.so" 2>&1)
code=$?
set -e
[ $code -eq 2 ] && [[ "$out" == *"could not access file"* ]] || fail "absent library: $code $out"
out=$("$evident" store install-functions --store "$url" --library "$library")
[ "$out" = "installed evident_append, evident_try_append, evident_compensate, evident_decide in schema \"$schema\" from $library" ] \
  || fail "install-functions: $out"
# Before a push: no contracts, said as such (EV003).
out=$(sql -c '\set VERBOSITY sqlstate' -c "SELECT evident_append('{}')" 2>&1 || true)
[[ "$out" == *"EV003"* ]] || fail "no contracts: $out"
"$evident" contracts push --store "$url" --contracts "$root/examples/orders/contracts" \
  --schema-version-at /data/schemaVersion > /dev/null

# 3. Python: appended, then a refused event rolls the order's change back.
service="/usr/bin/python3 $root/examples/python/order_service_pg.py --url $url"
out=$($service --order order-1 --status paid)
[ "$out" = "appended seq 1" ] || fail "python append: $out"
set +e
out=$($service --order order-2 --status paid --schema-version 9)
code=$?
set -e
[ $code -eq 1 ] || fail "a refusal exits $code: $out"
[[ "$out" == "refused: unaccepted-schema-version: rejected: "* ]] || fail "refusal: $out"
[ "$(sql -c "SELECT string_agg(id, ',') FROM orders")" = "order-1" ] || fail "order-2 kept"
[ "$(sql -c "SELECT count(*) FROM outbox")" = 1 ] || fail "outbox rows"

# 4. The psql shell: appended, duplicate (the same seq), conflict and refusal (their SQLSTATEs,
#    the order row gone), try_append's row, compensate once.
event='{"specversion":"1.0","id":"shell-1","source":"training://orders/checkout","type":"order.status.changed","subject":"order-9","data":{"schemaVersion":1,"orderId":"order-9","status":"paid"}}'
other=${event/paid\"\}/shipped\"\}}
out=$(sql <<SQL
BEGIN;
INSERT INTO orders(id, status, version) VALUES('order-9', 'paid', 1);
SELECT evident_append(convert_to('$event', 'UTF8'));
SELECT evident_append(convert_to('$event', 'UTF8'));
COMMIT;
SQL
)
[ "$out" = $'2\n2' ] || fail "shell append and duplicate: $out"
verbose() { sql -c '\set VERBOSITY verbose' -c "BEGIN" -c "$1" -c "$2" -c "COMMIT" 2>&1 || true; }
out=$(verbose "INSERT INTO orders VALUES('order-10', 'paid', 1)" \
  "SELECT evident_append(convert_to('$other', 'UTF8'))")
[[ "$out" == *"ERROR:  EV002: id-conflict: conflict: "* ]] || fail "conflict: $out"
out=$(verbose "INSERT INTO orders VALUES('order-10', 'paid', 1)" \
  "SELECT evident_append(convert_to('{\"specversion\":\"1.0\"}', 'UTF8'))")
[[ "$out" == *"ERROR:  EV001: missing-id: rejected: "* ]] || fail "refusal: $out"
[ "$(sql -c "SELECT count(*) FROM orders WHERE id='order-10'")" = 0 ] || fail "order-10 kept"
out=$(sql -F' ' -c "SELECT outcome, reason, seq FROM evident_try_append(convert_to('$other', 'UTF8'))")
[ "$out" = "conflict id-conflict 2" ] || fail "try_append: $out"
out=$(sql -c "SELECT evident_compensate('compensation:order-9:v1', 'order-9', 'training://orders/checkout', 1, 'reservation-rejected')" \
  -c "SELECT evident_compensate('compensation:order-9:v1', 'order-9', 'training://orders/checkout', 1, 'reservation-rejected')")
[ "$out" = $'t\nf' ] || fail "compensate: $out"

# 5. kill -9 between the append and the COMMIT: neither row.
$service --order order-k --status paid --hold > "$dir/held" &
held=$!
for _ in $(seq 1 200); do grep -q held "$dir/held" && break; sleep 0.05; done
grep -q held "$dir/held" || fail "the held client never appended"
kill -9 $held
wait $held 2>/dev/null || true
[ "$(sql -c "SELECT count(*) FROM orders WHERE id='order-k'")" = 0 ] || fail "order-k kept"
[ "$(sql -c "SELECT count(*) FROM outbox")" = 2 ] || fail "outbox after the kill"

# 6. Two appenders at once, 100 events each: every one appended, no seq twice.
$service --order a --status paid --count 100 > "$dir/a" &
first=$!
$service --order b --status paid --count 100 > "$dir/b" &
second=$!
wait $first || fail "appender a: $(tail -1 "$dir/a")"
wait $second || fail "appender b: $(tail -1 "$dir/b")"
[ "$(cat "$dir/a" "$dir/b" | grep -c '^appended seq ')" = 200 ] || fail "not every event appended"
[ "$(cat "$dir/a" "$dir/b" | sort -u | wc -l)" = 200 ] || fail "a seq answered twice"
[ "$(sql -c "SELECT count(*) FROM outbox")" = 202 ] || fail "outbox rows"

# 7. A relay publishes what they appended, each event once, the bytes unchanged.
"$evident" relay --store "$url" --to "file:$dir/published.ndjson" --once > /dev/null 2>&1
[ "$(wc -l < "$dir/published.ndjson")" = 202 ] || fail "published: $(wc -l < "$dir/published.ndjson")"
grep -qxF "$event" "$dir/published.ndjson" || fail "the shell's event is not published as appended"

# 8. Hostile events, each decided within its bound; the backend serves on afterwards and no
#    backend of the server crashed.
hostile=$(/usr/bin/python3 - "$url" <<'PY'
import sys, time, psycopg
cases = {
    "huge": b'{"specversion":"1.0","id":"h","source":"s","type":"t","data":"' + b"x" * (64 << 20) + b'"}',
    "nested": b"[" * 1_000_000,
    "invalid-utf8": b'{"specversion":"1.0","id":"\xff\xfe","source":"s","type":"t"}',
    "deep-payload": b'{"specversion":"1.0","id":"d","source":"training://orders/checkout",'
                    b'"type":"order.status.changed","subject":"o","data":{"schemaVersion":1,'
                    b'"orderId":"o","status":"paid","x":' + b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b"}}",
}
with psycopg.connect(sys.argv[1], autocommit=True) as db:
    pid = db.execute("SELECT pg_backend_pid()").fetchone()[0]
    for name, event in cases.items():
        start = time.monotonic()
        outcome, reason = db.execute(
            "SELECT outcome, reason FROM evident_try_append(%s)", (event,)).fetchone()
        print(f"{name} {outcome} {reason} {time.monotonic() - start < 20}")
    same = db.execute("SELECT pg_backend_pid()").fetchone()[0] == pid
    print(f"same-backend {same}")
PY
)
expected="huge rejected envelope-too-large True
nested rejected malformed-json True
invalid-utf8 rejected invalid-utf8 True
deep-payload rejected nesting-too-deep True
same-backend True"
[ "$hostile" = "$expected" ] || fail "hostile events: $hostile"
log=$(cat "$data/server.log" 2>/dev/null || true)
[[ "$log" != *"terminated by signal"* ]] || fail "a server process crashed: $(grep 'terminated by signal' <<<"$log")"

# 9. Node with pg (installed by tests/npm_ci.sh).
node_dir="$root/examples/node"
bash "$root/tests/npm_ci.sh" "$node_dir"
node_service="node $node_dir/order_service_pg.js --url $url"
out=$($node_service --order order-n --status paid)
[[ "$out" =~ ^appended\ seq\ [0-9]+$ ]] || fail "node append: $out"
set +e
out=$($node_service --order order-m --status paid --schema-version 9)
code=$?
set -e
[ $code -eq 1 ] || fail "a node refusal exits $code: $out"
[[ "$out" == "refused: unaccepted-schema-version: "* ]] || fail "node refusal: $out"
[ "$(sql -c "SELECT count(*) FROM orders WHERE id='order-m'")" = 0 ] || fail "order-m kept"
"$bin/psql" "$server" -qAt -c "SET client_min_messages = warning" -c "DROP SCHEMA $schema CASCADE" > /dev/null
echo "evident_pg.so: python3 (psycopg), node (pg) and psql appended in their own transactions"
