#!/usr/bin/env bash
# bench/metrics_bench.sh [RECORDS] [ROUNDS] [SCRAPERS] [PAUSE_MS]: does scraping GET /metrics
# hold up intake?
# (issue 40: with 100,000 quarantine records a scrape read the store on the HTTP thread, and 32
# scrapers pushed POST /events latency from 2 ms to 6.5 s.)
#   A store with RECORDS quarantine records (malformed events, each kept with its bytes), then
#   per round, alternating: `evident serve` on it, structured POST /events at about 200
#   requests/s for 10 s (bench/serve_structured.lua, 10 connections pausing 50 ms), (a) alone,
#   (b) while SCRAPERS connections scrape /metrics (wrk), each as fast as it is answered or, with
#   PAUSE_MS, pausing that long after each answer. The figure
#   is the median over rounds of (b)'s latency over (a)'s, at p50 and at p99, each measured in
#   the same round. docs/BENCHMARKS.md has the results.
# Needs wrk (Debian's wrk: scripts/install-deps.sh bench) and a Release build in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
records=${1:-100000}
rounds=${2:-3}
scrapers=${3:-32}
pause_ms=${4:-0}
bin=build/src/cli/evident
config=examples/orders/evident.yaml
command -v wrk >/dev/null || { echo "wrk is not installed (scripts/install-deps.sh bench)" >&2; exit 2; }
[ -x "$bin" ] || { echo "build $bin first" >&2; exit 2; }
tmp=$(mktemp -d /tmp/evident-metrics-bench-XXXXXX)
pid=""
scrape_pid=""
cleanup() {
  [ -n "$scrape_pid" ] && kill "$scrape_pid" 2>/dev/null && wait "$scrape_pid" 2>/dev/null
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# The quarantine: RECORDS malformed inputs (each its own bytes, so each its own record).
python3 - "$records" "$tmp/bad.ndjson" <<'EOF'
import sys
with open(sys.argv[2], "w") as out:
    for i in range(int(sys.argv[1])):
        out.write('{"specversion":"1.0","id":"bad-%d",\n' % i)
EOF
"$bin" consume --config "$config" --store "sqlite:$tmp/base.db" --input "$tmp/bad.ndjson" >/dev/null
python3 bench/status_events.py 200000 "$tmp/events.ndjson"
printf 'function delay() return %d end\n' "$pause_ms" > "$tmp/pause.lua"

start_serve() {
  rm -f "$tmp"/s.db*
  cp "$tmp/base.db" "$tmp/s.db"
  "$bin" serve --config "$config" --store "sqlite:$tmp/s.db" --listen 127.0.0.1:0 --no-effects \
    2> "$tmp/serve.log" &
  pid=$!
  for _ in $(seq 1 500); do
    port=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/serve.log")
    [ -n "$port" ] && return 0
    sleep 0.02
  done
  echo "evident serve did not start:" >&2; cat "$tmp/serve.log" >&2; exit 1
}
stop_serve() { kill -TERM "$pid"; wait "$pid"; pid=""; }

# wrk's latency percentile line ("50%" or "99%") in milliseconds.
percentile_ms() {
  awk -v p="$1%" '$1 == p {
    v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
    if (u == "us") v /= 1000; else if (u == "s") v *= 1000; else if (u == "m") v *= 60000;
    printf "%.3f", v }' "$2"
}

# One measurement: intake latency for 10 s, with SCRAPERS scrapers when $1 is "scraped".
measure() {
  start_serve
  if [ "$1" = scraped ]; then
    wrk -t2 -c"$scrapers" -d12s -s "$tmp/pause.lua" "http://127.0.0.1:$port/metrics" \
      > "$tmp/scrape.log" &
    scrape_pid=$!
    sleep 0.5
  fi
  wrk -t1 -c10 -d10s --latency -s bench/serve_structured.lua "http://127.0.0.1:$port" -- \
    "$tmp/events.ndjson" 50 1 > "$tmp/$1.log"
  if [ -n "$scrape_pid" ]; then
    wait "$scrape_pid" || true
    scrape_pid=""
    scrapes=$(awk '/^Requests\/sec/ { print $2 }' "$tmp/scrape.log")
  fi
  stop_serve
}

echo "store: $records quarantine records; scrapers: $scrapers connections on /metrics," \
  "pausing ${pause_ms} ms after each answer"
printf "%-6s %10s %10s %12s %12s %12s %8s %8s\n" round "p50 alone" "p99 alone" "p50 scraped" \
  "p99 scraped" "scrapes/s" "p50 x" "p99 x"
r50=()
r99=()
for round in $(seq 1 "$rounds"); do
  measure alone
  measure scraped
  a50=$(percentile_ms 50 "$tmp/alone.log"); a99=$(percentile_ms 99 "$tmp/alone.log")
  b50=$(percentile_ms 50 "$tmp/scraped.log"); b99=$(percentile_ms 99 "$tmp/scraped.log")
  x50=$(echo "$b50 / $a50" | bc -l); x99=$(echo "$b99 / $a99" | bc -l)
  r50+=("$x50"); r99+=("$x99")
  printf "%-6s %8.2fms %8.2fms %10.2fms %10.2fms %12.0f %8.2f %8.2f\n" "$round" "$a50" "$a99" \
    "$b50" "$b99" "$scrapes" "$x50" "$x99"
done
median() { printf "%s\n" "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
printf "scraped / alone, median of %d rounds: p50 %.2f, p99 %.2f\n" "$rounds" \
  "$(median "${r50[@]}")" "$(median "${r99[@]}")"
