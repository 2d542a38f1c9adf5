#!/usr/bin/env bash
# bench/serve_bench.sh [EVENTS] [ROUNDS] [RATE]: `evident serve` over HTTP against `evident
# consume` on the same events from a file, in the same run (docs/BENCHMARKS.md).
#   (a) consume: `evident consume --input events.ndjson` on a fresh SQLite store, timed from
#       process start to exit (schema compilation included);
#   (b) batch mode: a fresh store, `evident serve` started, then wrk (bench/serve_batch.lua, one
#       thread, 8 connections, 100 events per request) sends every event once; timed from wrk's
#       start until the daemon has applied every event (the daemon's start-up not included).
#   Rounds alternate (a) and (b); the figure is the median of the per-round ratios (b)/(a).
#   (c) latency: a fresh store, structured mode, one event per request at about RATE requests/s
#       (RATE/20 connections, each pausing 50 ms between its requests, so a little under RATE
#       as the answers take time; wrk prints the rate reached) for 10 s: wrk's p50 and p99.
# Needs wrk (Debian's wrk: scripts/install-deps.sh bench) and a Release build in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-200000}
rounds=${2:-3}
rate=${3:-1000}
bin=build/src/cli/evident
config=examples/orders/evident.yaml
command -v wrk >/dev/null || { echo "wrk is not installed (scripts/install-deps.sh bench)" >&2; exit 2; }
[ -x "$bin" ] || { echo "build $bin first" >&2; exit 2; }
tmp=$(mktemp -d /tmp/evident-serve-bench-XXXXXX)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
python3 bench/status_events.py "$events" "$tmp/events.ndjson"
now() { date +%s.%N; }

# Starts the daemon on a fresh store; sets pid and port.
start_serve() {
  rm -f "$tmp"/s.db*
  "$bin" serve --config "$config" --store "sqlite:$tmp/s.db" --listen 127.0.0.1:0 --no-effects \
    "$@" 2> "$tmp/serve.log" &
  pid=$!
  for _ in $(seq 1 500); do
    port=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/serve.log")
    [ -n "$port" ] && return 0
    sleep 0.02
  done
  echo "evident serve did not start:" >&2; cat "$tmp/serve.log" >&2; exit 1
}
stop_serve() {
  kill -TERM "$pid"; wait "$pid"; pid=""
}
# Events the daemon applied (every status event goes to orders-projection, applied once).
decided() {
  curl -s "http://127.0.0.1:$port/metrics" |
    awk '/^evident_decisions_total.*outcome="applied"/ { n += $NF } END { printf "%d", n }'
}

ratios=()
printf "%-6s %14s %14s %8s\n" round "consume ev/s" "serve ev/s" ratio
for round in $(seq 1 "$rounds"); do
  rm -f "$tmp"/c.db*
  t0=$(now)
  "$bin" consume --config "$config" --store "sqlite:$tmp/c.db" --input "$tmp/events.ndjson" > /dev/null
  t1=$(now)
  consume=$(echo "$events / ($t1 - $t0)" | bc -l)

  start_serve
  # wrk sleeps out its whole -d even when every thread stopped: the run ends when the daemon
  # has applied every event (polled every 50 ms), and wrk is stopped then.
  t0=$(now)
  wrk -t1 -c8 -d600s -s bench/serve_batch.lua "http://127.0.0.1:$port" -- "$tmp/events.ndjson" \
    100 1 > "$tmp/wrk.log" &
  wrk_pid=$!
  got=0
  for _ in $(seq 1 12000); do
    got=$(decided)
    [ "$got" -ge "$events" ] && break
    sleep 0.05
  done
  t1=$(now)
  kill "$wrk_pid" 2>/dev/null || true
  wait "$wrk_pid" 2>/dev/null || true
  stop_serve
  [ "$got" -eq "$events" ] || { echo "the daemon applied $got of $events events" >&2; cat "$tmp/wrk.log" >&2; exit 1; }
  serve=$(echo "$events / ($t1 - $t0)" | bc -l)
  ratio=$(echo "$serve / $consume" | bc -l)
  ratios+=("$ratio")
  printf "%-6s %14.0f %14.0f %8.3f\n" "$round" "$consume" "$serve" "$ratio"
done
# The upper median (for an even count, the higher of the two middle rounds), as median.h takes it.
median=$(printf "%s\n" "${ratios[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int(NR / 2) + 1] }')
printf "batch mode / consume (median of %d rounds): %.3f\n" "$rounds" "$median"
# The line bench/run-all.sh collects (the upper median, as the C++ benchmarks print it).
printf "%s\n" "${ratios[@]}" | sort -g | awk -v n="$rounds" '{ a[NR] = $1 } END {
  printf "figure serve_consume median=%.4f low=%.4f high=%.4f rounds=%d\n", a[int(n / 2) + 1], a[1], a[n], n }'

connections=$(( rate / 20 > 0 ? rate / 20 : 1 ))
start_serve
wrk -t1 -c"$connections" -d10s --latency -s bench/serve_structured.lua "http://127.0.0.1:$port" -- \
  "$tmp/events.ndjson" 50 1 > "$tmp/wrk.log"
sent=$(decided)
stop_serve
echo "structured mode at $rate requests/s for 10 s ($sent events applied):"
grep -E "Requests/sec|^ +(50|99)%|Non-2xx|Socket errors" "$tmp/wrk.log" || true
