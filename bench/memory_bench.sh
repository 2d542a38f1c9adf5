#!/usr/bin/env bash
# bench/memory_bench.sh [EVENTS]: peak resident memory of `evident consume`, `evident relay` and
# `evident serve` at 100,000 events and at EVENTS (10,000,000), one run each, on SQLite
# (synchronous=FULL). Memory is flat when the ratio of the two peaks stays near 1.0.
#   consume: `consume --input` of bench/status_events.py's events, the orders example
#            (its effects included; every status event goes to orders-projection);
#   relay:   the same events appended with `outbox append` (not measured), then `relay --once
#            --to file:` (the relay's loop and store; a broker's client holds a bounded window);
#   serve:   a fresh store, `serve`, the events POSTed in batches of 1,000 over one connection
#            (bench/post_batches.py), the daemon's VmHWM read before SIGTERM.
# Peak of an exited process: getrusage(RUSAGE_CHILDREN).ru_maxrss. Prints a line per path and
# "figure memory_<path> median=R ..." (R = peak at EVENTS / peak at 100,000).
set -euo pipefail
shopt -s inherit_errexit  # a failure inside $(...) fails the script
cd "$(dirname "$0")/.."
events=${1:-10000000}
small=$(( events < 100000 ? events : 100000 ))
bin=$PWD/build/src/cli/evident
config=$PWD/examples/orders/evident.yaml
contracts=$PWD/examples/orders/contracts
[ -x "$bin" ] || { echo "build $bin first" >&2; exit 2; }
tmp=$(mktemp -d /tmp/evident-memory-bench-XXXXXX)
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
python3 bench/status_events.py "$small" "$tmp/small.ndjson"
python3 bench/status_events.py "$events" "$tmp/large.ndjson"

peak_kib() {  # runs the command (stdout discarded), prints its peak RSS in KiB; fails with it
  python3 -c '
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
if r.returncode != 0:
    sys.exit("failed (%d): %s" % (r.returncode, " ".join(sys.argv[1:])))
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"
}

consume_kib() {
  rm -f "$tmp"/c.db*
  peak_kib "$bin" consume --config "$config" --store "sqlite:$tmp/c.db" --input "$1" --synchronous FULL
  rm -f "$tmp"/c.db*
}

relay_kib() {
  rm -f "$tmp"/r.db* "$tmp/out.ndjson"
  "$bin" outbox append --store "sqlite:$tmp/r.db" --contracts "$contracts" \
    --schema-version-at /data/schemaVersion "$1" > /dev/null
  peak_kib "$bin" relay --store "sqlite:$tmp/r.db" --to "file:$tmp/out.ndjson" --once
  local sent
  sent=$(wc -l < "$tmp/out.ndjson")
  [ "$sent" -eq "$2" ] || { echo "relay sent $sent of $2" >&2; exit 1; }
  rm -f "$tmp"/r.db* "$tmp/out.ndjson"
}

serve_kib() {  # run in this shell (not in $(...)), so that cleanup stops the daemon: sets kib
  rm -f "$tmp"/s.db*
  "$bin" serve --config "$config" --store "sqlite:$tmp/s.db" --listen 127.0.0.1:0 --no-effects \
    2> "$tmp/serve.log" &
  pid=$!
  local port=""
  for _ in $(seq 1 500); do
    port=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/serve.log")
    [ -n "$port" ] && break
    sleep 0.02
  done
  [ -n "$port" ] || { echo "evident serve did not start:" >&2; cat "$tmp/serve.log" >&2; exit 1; }
  python3 bench/post_batches.py "$port" "$1" 1000 > /dev/null
  kib=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
  kill -TERM "$pid"
  wait "$pid"
  pid=""
  rm -f "$tmp"/s.db*
}

figure() {  # figure NAME SMALL_KIB LARGE_KIB
  echo "memory $1: $small events $2 KiB, $events events $3 KiB"
  awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { r = b / a;
    printf "figure memory_%s median=%.4f low=%.4f high=%.4f rounds=1\n", n, r, r, r }'
}

# (each peak assigned first: a failure in $(...) stops the script only from an assignment)
low=$(consume_kib "$tmp/small.ndjson"); high=$(consume_kib "$tmp/large.ndjson")
figure consume "$low" "$high"
low=$(relay_kib "$tmp/small.ndjson" "$small"); high=$(relay_kib "$tmp/large.ndjson" "$events")
figure relay "$low" "$high"
serve_kib "$tmp/small.ndjson"; low=$kib
serve_kib "$tmp/large.ndjson"; high=$kib
figure serve "$low" "$high"
