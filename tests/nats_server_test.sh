#!/usr/bin/env bash
# scripts/nats.sh starts a JetStream server on loopback in a temporary directory and stops it.
# Never skipped: a server that cannot start fails this test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'bash "$root/scripts/nats.sh" stop "$dir" >/dev/null 2>&1 || true
  bash "$root/scripts/nats.sh" stop "$dir/cluster" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT

started=$(date +%s)
url=$(timeout 30 bash "$root/scripts/nats.sh" start "$dir")  # returns although the server runs on
[[ "$url" =~ ^nats://127\.0\.0\.1:[0-9]+$ ]] || { echo "unexpected url '$url'"; exit 1; }
[ $(( $(date +%s) - started )) -lt 25 ] || { echo "start took too long"; exit 1; }
port=${url##*:}
pid=$(cat "$dir/pid")
kill -0 "$pid" || { echo "server $pid is not running"; exit 1; }

# A client is greeted with INFO, JetStream on; the JetStream store is the directory given.
exec 3<>"/dev/tcp/127.0.0.1/$port"
IFS= read -r -t 5 info <&3
exec 3<&- 3>&-
[[ "$info" == INFO*'"jetstream":true'* ]] || { echo "no JetStream in: $info"; exit 1; }
grep -q "Starting JetStream" "$dir/server.log" || { echo "the log shows no JetStream"; exit 1; }
grep -q "$dir/jetstream" "$dir/server.log" || { echo "JetStream does not store in $dir"; exit 1; }

bash "$root/scripts/nats.sh" stop "$dir"
if kill -0 "$pid" 2>/dev/null; then echo "server $pid still runs after stop"; exit 1; fi
# Stopping again is harmless.
bash "$root/scripts/nats.sh" stop "$dir"

# A cluster of three: a seed list of three servers, each of them up, routed, with a JetStream
# metadata leader elected; one node stopped and started again; then every node stopped.
cluster="$dir/cluster"
seeds=$(timeout 60 bash "$root/scripts/nats.sh" cluster "$cluster" 3)
[[ "$seeds" =~ ^nats://127\.0\.0\.1:[0-9]+,nats://127\.0\.0\.1:[0-9]+,nats://127\.0\.0\.1:[0-9]+$ ]] ||
  { echo "unexpected seed list '$seeds'"; exit 1; }
pids=$(for f in "$cluster"/n*/pid; do echo "$(cat "$f")"; done)  # no newline in a pid file
[ "$(echo "$pids" | wc -w)" -eq 3 ] || { echo "not three servers: $pids"; exit 1; }
for p in $pids; do kill -0 "$p" || { echo "node $p is not running"; exit 1; }; done
grep -qs "metadata leader" "$cluster"/n*/server.log || { echo "no metadata leader"; exit 1; }
bash "$root/scripts/nats.sh" node-stop "$cluster" n2 KILL
if kill -0 "$(echo "$pids" | sed -n 2p)" 2>/dev/null; then echo "n2 still runs"; exit 1; fi
bash "$root/scripts/nats.sh" node-start "$cluster" n2
restarted=$(cat "$cluster/n2/pid")
kill -0 "$restarted" || { echo "n2 did not start again"; exit 1; }
if bash "$root/scripts/nats.sh" node-start "$cluster" n2 2>/dev/null; then
  echo "a running node was started twice"; exit 1
fi
pids="$pids $restarted"
bash "$root/scripts/nats.sh" stop "$cluster"
for p in $pids; do
  if kill -0 "$p" 2>/dev/null; then echo "node $p still runs after stop"; exit 1; fi
done
echo "nats-server started on $url with JetStream and stopped; a cluster of three on $seeds too"
