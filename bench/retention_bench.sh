#!/usr/bin/env bash
# bench/retention_bench.sh [EVENTS] [ROUNDS] [INPUT]: what retention leaves per decided event,
# and what it costs a consume running beside it (issue 48). ROUNDS 0 measures the size only;
# BACKEND=postgresql measures the size on PostgreSQL only.
#   INPUT `orders` (the default): the orders example (examples/orders/events.ndjson: applied,
#   deferred, duplicate, stale and rejected events; 8 of its 20 events are refused and kept as
#   open quarantine records with their bytes, which retention never removes) repeated with
#   distinct ids and subjects up to EVENTS events. INPUT `applied`: a stream a service decides
#   whole: orders of five `order.status.changed` events each (placed, paid, packed, shipped,
#   delivered), every one applied by the example's orders-projection.
#   (1) Size: one consume into a new SQLite store; its bytes per input event (WAL checkpointed
#   into the file), then after `evident store retain --older-than 1ms` (which gives the freed
#   pages back), and the ratio.
#   (2) Beside: per round, alternating, a store holding one consume of the input is copied
#   twice; a second input (other ids) is consumed into (a) one copy alone, (b) the other while
#   `store retain --older-than 1ms` runs in a loop beside it (its first run removes the first
#   consume's journal, closed records and logs; YIELD_PERCENT, default 100, is its
#   --yield-percent). The figure is the median over rounds of (b)'s events/s over (a)'s, each
#   pair measured in the same round. docs/BENCHMARKS.md has results.
# Needs a Release build in build/ and python3 (its sqlite3 module checkpoints the WAL).
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-100000}
rounds=${2:-3}
input=${3:-orders}
yield_percent=${YIELD_PERCENT:-100}  # the beside loop's `store retain --yield-percent`
case "$input" in orders | applied) ;; *) echo "INPUT is orders or applied" >&2; exit 2 ;; esac
bin=build/src/cli/evident
config=examples/orders/evident.yaml
[ -x "$bin" ] || { echo "build $bin first" >&2; exit 2; }
tmp=$(mktemp -d /tmp/evident-retention-bench-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Two inputs of EVENTS events each, ids and subjects prefixed by the copy (and the input).
python3 - "$events" examples/orders/events.ndjson "$tmp/first.ndjson" "$tmp/second.ndjson" "$input" <<'EOF'
import sys
count, example = int(sys.argv[1]), open(sys.argv[2]).read().splitlines()
if sys.argv[5] == "applied":
    example = [
        '{"specversion":"1.0","id":"evt-%d","source":"training://orders/checkout",'
        '"type":"order.status.changed","subject":"order-1","time":"2026-07-31T12:0%d:00Z",'
        '"data":{"schemaVersion":1,"orderId":"order-1","status":"%s"}}' % (n, n, status)
        for n, status in enumerate(("placed", "paid", "packed", "shipped", "delivered"))]
for name, tag in ((sys.argv[3], "a"), (sys.argv[4], "b")):
    with open(name, "w") as out:
        n = 0
        copy = 0
        while n < count:
            for line in example:
                if n == count:
                    break
                for key in ('"id":"', '"subject":"'):
                    at = line.find(key)
                    if at >= 0:
                        at += len(key)
                        line = line[:at] + "%s%d-" % (tag, copy) + line[at:]
                out.write(line + "\n")
                n += 1
            copy += 1
EOF

checkpoint() {  # the WAL copied into the file and emptied, so the file's size is the store's
  python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("PRAGMA wal_checkpoint(TRUNCATE)"); c.close()' "$1"
}
size() { stat -c %s "$1"; }
consume() {  # consume STORE INPUT: prints the seconds it took
  local start end
  start=$(date +%s.%N)
  "$bin" consume --config "$config" --store "sqlite:$1" --input "$2" >/dev/null
  end=$(date +%s.%N)
  python3 -c "print(${end} - ${start})"
}

# (1') BACKEND=postgresql: the size on PostgreSQL instead (scripts/postgres.sh starts a server of
# the run's own), then the run ends. The tables' and indexes' bytes (pg_total_relation_size of the
# store's schema) after the consume, then after retention and a VACUUM FULL: evident never runs
# one (autovacuum makes the space reusable, no table is rewritten), the bench does to show what
# the rows left need.
if [ "${BACKEND:-sqlite}" = postgresql ]; then
  trap 'bash scripts/postgres.sh stop "$tmp/pg" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
  bash scripts/postgres.sh start "$tmp/pg" >/dev/null
  url=$(cat "$tmp/pg/url")
  pg_size() {
    psql -qAt "$url" -c "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN
      pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'"
  }
  "$bin" consume --config "$config" --store "$url" --input "$tmp/first.ndjson" >/dev/null
  psql -q "$url" -c "VACUUM FULL" >/dev/null
  before=$(pg_size)
  "$bin" store retain --store "$url" --older-than 1ms >"$tmp/retain.txt"
  psql -q "$url" -c "VACUUM FULL" >/dev/null
  after=$(pg_size)
  python3 -c "print('postgresql size: %d events; before retention %.0f bytes/event, after %.0f bytes/event' % (${events}, ${before} / ${events}, ${after} / ${events}))"
  sed 's/^/  /' "$tmp/retain.txt"
  psql -qAt -F' ' "$url" -c "SELECT c.relname, round(pg_total_relation_size(c.oid)::numeric / ${events}, 1)
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'
    AND c.relkind = 'r' AND pg_total_relation_size(c.oid) >= ${events} / 2 ORDER BY 2 DESC" |
    tr '\n' ',' | sed 's/,$/\n/; s/,/, /g; s/^/  after retention, bytes\/event by table (with its indexes): /'
  exit 0
fi

# (1) Size.
consume "$tmp/size.db" "$tmp/first.ndjson" >/dev/null
checkpoint "$tmp/size.db"
before=$(size "$tmp/size.db")
"$bin" store retain --store "sqlite:$tmp/size.db" --older-than 1ms >"$tmp/retain.txt"
checkpoint "$tmp/size.db"
after=$(size "$tmp/size.db")
python3 - "$events" "$before" "$after" <<'EOF'
import sys
events, before, after = (int(x) for x in sys.argv[1:])
print("size: %d events; before retention %d bytes (%.0f bytes/event), after %d bytes "
      "(%.0f bytes/event); after/before %.2f" %
      (events, before, before / events, after, after / events, after / before))
EOF
sed 's/^/  /' "$tmp/retain.txt"
# Where the bytes that stay are, per table and index (SQLite's dbstat), in bytes per event.
python3 - "$tmp/size.db" "$events" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
events = int(sys.argv[2])
rows = db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
print("  after retention, bytes/event by table or index: " +
      ", ".join("%s %.1f" % (name, size / events) for name, size in rows if size / events >= 0.5))
EOF

# ROUNDS 0: the size alone (a large EVENTS then needs only one store's disk).
[ "$rounds" -gt 0 ] || exit 0

# (2) Beside.
consume "$tmp/base.db" "$tmp/first.ndjson" >/dev/null
checkpoint "$tmp/base.db"
ratios=()
for ((round = 1; round <= rounds; round++)); do
  cp "$tmp/base.db" "$tmp/alone.db"
  cp "$tmp/base.db" "$tmp/beside.db"
  alone=$(consume "$tmp/alone.db" "$tmp/second.ndjson")
  (
    while [ ! -f "$tmp/stop" ]; do
      "$bin" store retain --store "sqlite:$tmp/beside.db" --older-than 1ms \
        --yield-percent "$yield_percent" >/dev/null
    done
  ) &
  loop=$!
  beside=$(consume "$tmp/beside.db" "$tmp/second.ndjson")
  touch "$tmp/stop"
  wait "$loop"
  rm -f "$tmp/stop"
  ratio=$(python3 -c "print('%.3f' % (${alone} / ${beside}))")
  ratios+=("$ratio")
  python3 -c "print('round %d: alone %.0f events/s, beside retention %.0f events/s, ratio %s' % (${round}, ${events} / ${alone}, ${events} / ${beside}, '${ratio}'))"
done
python3 -c "import statistics,sys; print('beside/alone (median of %d rounds): %.3f' % (len(sys.argv) - 1, statistics.median(float(x) for x in sys.argv[1:])))" "${ratios[@]}"

# (3) The cost of incremental vacuum on the write path: per round, alternating, the first input
# consumed into a new store (auto_vacuum=INCREMENTAL, as evident creates it) and into a store
# whose file was made without it first (auto_vacuum=NONE, as before layout 11).
vacuum_ratios=()
for ((round = 1; round <= rounds; round++)); do
  rm -f "$tmp"/incr.db* "$tmp"/none.db*
  incr=$(consume "$tmp/incr.db" "$tmp/first.ndjson")
  python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("CREATE TABLE x(a)"); c.execute("DROP TABLE x"); c.commit(); c.close()' "$tmp/none.db"
  none=$(consume "$tmp/none.db" "$tmp/first.ndjson")
  ratio=$(python3 -c "print('%.3f' % (${none} / ${incr}))")
  vacuum_ratios+=("$ratio")
  python3 -c "print('round %d: incremental %.0f events/s, none %.0f events/s, ratio %s' % (${round}, ${events} / ${incr}, ${events} / ${none}, '${ratio}'))"
done
python3 -c "import statistics,sys; print('incremental/none (median of %d rounds): %.3f' % (len(sys.argv) - 1, statistics.median(float(x) for x in sys.argv[1:])))" "${vacuum_ratios[@]}"
