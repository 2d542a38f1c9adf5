#!/usr/bin/env bash
# Starts and stops a mock Kafka cluster for tests, benchmarks and demos: librdkafka's mock
# brokers (tools/kafka-mock) in a process of their own, on loopback, ports the kernel picks, their
# log and control socket in a directory of the caller's (a temporary one). No Kafka broker can be
# installed here; docs/kafka.md says what the mock cannot prove.
#
#   scripts/kafka.sh start DIR [BROKERS] [TOPIC:PARTITIONS]...
#                           # prints kafka://127.0.0.1:P1,... once the brokers accept
#                           # connections; exit 1 (with the mock's log) when they cannot
#   scripts/kafka.sh ctl DIR COMMAND...   # a fault: down B, up B, leader T P B, errors API CODE...,
#                           # clear API, rtt B MS, topic T N (tools/kafka-mock/kafka_mock.cc)
#   scripts/kafka.sh stop DIR             # SIGTERM, then SIGKILL after 10 s
#
# The mock is the build's tools/kafka-mock/evident-kafka-mock (EVIDENT_KAFKA_MOCK names another).
set -euo pipefail
# shellcheck source=lib/stop-by-pid.sh
. "$(dirname "$0")/lib/stop-by-pid.sh"

cmd=${1:-}
dir=${2:-}
usage="usage: $0 start DIR [BROKERS] [TOPIC:PARTITIONS]... | ctl DIR COMMAND... | stop DIR"
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "$usage" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
mock=${EVIDENT_KAFKA_MOCK:-$here/build/tools/kafka-mock/evident-kafka-mock}
[ -x "$mock" ] || mock=$(command -v evident-kafka-mock || echo "$mock")

start() {
  local brokers=${1:-3}
  shift || true
  [ -x "$mock" ] || { echo "no $mock (build the project first)" >&2; exit 1; }
  mkdir -p "$dir"
  rm -f "$dir/bootstrap" "$dir/control"
  local topics=()
  for t in "$@"; do topics+=(--topic "$t"); done
  "$mock" --brokers "$brokers" --port-file "$dir/bootstrap" --control "$dir/control" \
    "${topics[@]}" </dev/null >"$dir/mock.log" 2>&1 &
  local pid=$!
  echo "$pid" >"$dir/pid"
  for _ in $(seq 1 100); do  # up to 10 s
    kill -0 "$pid" 2>/dev/null || break
    if [ -s "$dir/bootstrap" ] && [ -S "$dir/control" ]; then
      local url="kafka://$(cat "$dir/bootstrap")"
      echo "$url" >"$dir/url"
      echo "$url"
      return 0
    fi
    sleep 0.1
  done
  echo "the mock Kafka cluster did not start (pid $pid); its log:" >&2
  cat "$dir/mock.log" >&2 2>/dev/null || true
  kill -9 "$pid" 2>/dev/null || true
  exit 1
}


case "$cmd" in
  start) shift 2; start "$@" ;;
  ctl) shift 2; exec "$mock" --control "$dir/control" --send "$*" ;;
  stop) stop_by_pid "$dir" ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
