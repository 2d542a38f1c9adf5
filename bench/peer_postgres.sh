#!/usr/bin/env bash
# bench/peer_postgres.sh — `evident consume` on PostgreSQL against the closest peer, the inbox of
# pg-transactional-outbox (npm, bench/peer/pg-transactional-outbox), in ONE run: the same events
# into the same PostgreSQL 15 server (scripts/postgres.sh, fsync on), each side in a schema of
# its own, one after the other.
#
# The work per event is the same: evident's orders-projection consumer (examples/orders: ledger
# receipt, one projection row per subject with its version, the journal and evidence besides);
# the peer's handler upserts one projection row per subject with version + 1 in the library's
# per-message transaction, which also marks the inbox row processed. The peer's rate is given
# twice: its processing phase alone (the events already in its inbox), and storing plus
# processing (the inbox's receive side is part of its path, as reading the file is part of
# evident's). The ratio reported is against the processing phase alone, the peer's best figure.
#
# Usage: bench/peer_postgres.sh [BUILD_DIR] [EVENTS]   (defaults: build, 100000; BUILD_DIR holds
# src/cli/evident). Needs node and npm (scripts/install-deps.sh bench); the peer is installed
# with `npm ci` from its lock file. The machine may be shared and noisy: repeat the run.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
events=${2:-100000}
tmp=$(mktemp -d)
cleanup() {
  bash scripts/postgres.sh stop "$tmp/pg" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

EVIDENT_PG_DURABLE=1 bash scripts/postgres.sh start "$tmp/pg" >/dev/null
url=$(cat "$tmp/pg/url")
# Status changes of events/50 orders (2,000 subjects at 100,000 events), in order per subject.
python3 bench/status_events.py "$events" "$tmp/events.ndjson"
(cd bench/peer/pg-transactional-outbox && npm ci --silent --no-audit --no-fund >/dev/null)

psql -q "$url" -c "CREATE SCHEMA evident_side" >/dev/null
start=$(date +%s.%N)
"$build/src/cli/evident" consume --config examples/orders/evident.yaml \
  --store "$url?options=-csearch_path%3Devident_side" --input "$tmp/events.ndjson" \
  >"$tmp/evident.out"
end=$(date +%s.%N)
node bench/peer/pg-transactional-outbox/bench.js --url "$url" --schema peer_side \
  --input "$tmp/events.ndjson" --events "$events" >"$tmp/peer.json"

python3 - "$events" "$start" "$end" "$tmp/peer.json" "$tmp/evident.out" <<'PY'
import json, sys
events, start, end = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
peer = json.loads(open(sys.argv[4]).read().strip().splitlines()[-1])
summary = open(sys.argv[5]).read()
if "%d events" % events not in summary:
    sys.exit("evident did not decide every event:\n" + summary)
evident_rate = events / (end - start)
process = peer["process_events_per_second"]
total = peer["total_events_per_second"]
print("events                       %d" % events)
print("evident consume              %.0f events/s (%.1f s, wall clock of the command)"
      % (evident_rate, end - start))
print("pg-transactional-outbox      %.0f events/s processing, %.0f events/s storing + processing"
      % (process, total))
print("evident / peer processing    %.2fx" % (evident_rate / process))
print("evident / peer store+process %.2fx" % (evident_rate / total))
print("peer settings                %s" % json.dumps({k: v for k, v in peer.items()
                                                     if k not in ("peer", "events")}))
PY
