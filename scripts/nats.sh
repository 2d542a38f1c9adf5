#!/usr/bin/env bash
# Starts and stops a NATS server with JetStream for tests and demos: loopback only, a port the
# kernel picks, its JetStream store and log in a directory of the caller's (a temporary one).
#
#   scripts/nats.sh start DIR [PORT]  # prints nats://127.0.0.1:PORT once the server accepts
#                               # clients with JetStream on; exit 1 (with the server's log) when
#                               # it cannot. PORT: that port (a restart on the same DIR and PORT
#                               # keeps the streams), else one the kernel picks
#   scripts/nats.sh stop DIR    # SIGTERM, then SIGKILL after 10 s; exit 0 when it is gone
#
# The server comes from Debian's nats-server package (scripts/install-deps.sh test).
set -euo pipefail
# shellcheck source=lib/stop-by-pid.sh
. "$(dirname "$0")/lib/stop-by-pid.sh"

cmd=${1:-}
dir=${2:-}
port=${3:--1}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start DIR [PORT] | stop DIR" >&2; exit 2; }
server=$(command -v nats-server || echo /usr/sbin/nats-server)

start() {
  [ -x "$server" ] || { echo "nats-server not installed (scripts/install-deps.sh test)" >&2; exit 1; }
  mkdir -p "$dir/jetstream" "$dir/ports"
  # Its output goes to the log: a caller reading this script's output through a pipe must not
  # wait for the server to close it.
  rm -f "$dir"/ports/*.ports
  "$server" -a 127.0.0.1 -p "$port" -js -sd "$dir/jetstream" \
    --ports_file_dir "$dir/ports" -l "$dir/server.log" -P "$dir/pid" </dev/null >/dev/null 2>&1 &
  local pid=$! url=""
  for _ in $(seq 1 200); do  # up to 20 s
    kill -0 "$pid" 2>/dev/null || break
    url=$(grep -ho 'nats://127.0.0.1:[0-9]*' "$dir"/ports/*.ports 2>/dev/null | head -1 || true)
    if [ -n "$url" ] && grep -q "Server is ready" "$dir/server.log" 2>/dev/null; then
      if jetstream_on "${url##*:}"; then
        echo "$url" >"$dir/url"
        echo "$url"
        return 0
      fi
    fi
    sleep 0.1
  done
  echo "nats-server did not start (pid $pid); its log:" >&2
  cat "$dir/server.log" >&2 2>/dev/null || true
  kill -9 "$pid" 2>/dev/null || true
  exit 1
}

# The INFO line a NATS server greets every client with says whether JetStream is on.
jetstream_on() {
  local info
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  IFS= read -r -t 5 info <&3 || true
  exec 3<&- 3>&-
  [[ "$info" == INFO* && "$info" == *'"jetstream":true'* ]]
}


case "$cmd" in
  start) start ;;
  stop) stop_by_pid "$dir" ;;
  *) echo "usage: $0 start DIR [PORT] | stop DIR" >&2; exit 2 ;;
esac
