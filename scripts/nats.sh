#!/usr/bin/env bash
# Starts and stops a NATS server with JetStream for tests and demos: loopback only, a port the
# kernel picks, its JetStream store and log in a directory of the caller's (a temporary one).
#
#   scripts/nats.sh start DIR [PORT]  # prints nats://127.0.0.1:PORT once the server accepts
#                               # clients with JetStream on; exit 1 (with the server's log) when
#                               # it cannot. PORT: that port (a restart on the same DIR and PORT
#                               # keeps the streams), else one the kernel picks
#   scripts/nats.sh stop DIR    # SIGTERM, then SIGKILL after 10 s; exit 0 when it is gone (a
#                               # cluster's DIR: every node)
#
# A JetStream cluster on loopback, each node in DIR/NAME with its store and log:
#   scripts/nats.sh cluster DIR [N]   # starts N servers (default 3) named n1..nN, routed to each
#                               # other, and prints their seed list (nats://127.0.0.1:P1,...) once
#                               # every one accepts clients and a metadata leader is elected
#   scripts/nats.sh node-stop DIR NAME [KILL]  # stops one node (KILL: SIGKILL, at once)
#   scripts/nats.sh node-start DIR NAME        # starts it again on its ports and its store
#
# NATS_CONFIG=FILE: `start` gives the server that configuration file too (credentials, TLS,
# operator mode; the options above override what it says of address, port and store).
#
# The server comes from Debian's nats-server package (scripts/install-deps.sh test).
set -euo pipefail
# shellcheck source=lib/stop-by-pid.sh
. "$(dirname "$0")/lib/stop-by-pid.sh"

cmd=${1:-}
dir=${2:-}
port=${3:--1}
usage="usage: $0 start DIR [PORT] | stop DIR | cluster DIR [N] | node-stop DIR NAME [KILL] | node-start DIR NAME"
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "$usage" >&2; exit 2; }
server=$(command -v nats-server || echo /usr/sbin/nats-server)

start() {
  [ -x "$server" ] || { echo "nats-server not installed (scripts/install-deps.sh test)" >&2; exit 1; }
  mkdir -p "$dir/jetstream" "$dir/ports"
  # Its output goes to the log: a caller reading this script's output through a pipe must not
  # wait for the server to close it.
  rm -f "$dir"/ports/*.ports
  "$server" ${NATS_CONFIG:+-c "$NATS_CONFIG"} -a 127.0.0.1 -p "$port" -js -sd "$dir/jetstream" \
    --ports_file_dir "$dir/ports" -l "$dir/server.log" -P "$dir/pid" </dev/null >/dev/null 2>&1 &
  local pid=$! url=""
  for _ in $(seq 1 200); do  # up to 20 s
    kill -0 "$pid" 2>/dev/null || break
    # A server that requires TLS lists itself as tls://; evident's URL is nats:// either way.
    url=$(grep -hoE '(nats|tls)://127.0.0.1:[0-9]+' "$dir"/ports/*.ports 2>/dev/null | head -1 |
      sed 's#^tls://#nats://#' || true)
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
  { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
  IFS= read -r -t 5 info <&3 || true
  exec 3<&- 3>&-
  [[ "$info" == INFO* && "$info" == *'"jetstream":true'* ]]
}


# Free loopback ports, as many as asked (the kernel's picks, released for the servers to take).
free_ports() {
  python3 -c 'import socket,sys
socks=[socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}

# Starts node DIR/NAME on the ports its directory records, routed to every node's cluster port.
node_start() {
  local node="$dir/$1"
  [ -x "$server" ] || { echo "nats-server not installed (scripts/install-deps.sh test)" >&2; exit 1; }
  [ -f "$node/client_port" ] || { echo "no node $1 in $dir" >&2; exit 2; }
  if [ -f "$node/pid" ] && kill -0 "$(cat "$node/pid")" 2>/dev/null; then
    echo "node $1 runs already (pid $(cat "$node/pid"))" >&2
    exit 2
  fi
  local routes
  routes=$(cat "$dir/routes")
  # An earlier run's log goes aside: "Server is ready" must be this run's.
  if [ -f "$node/server.log" ]; then
    cat "$node/server.log" >>"$node/server.log.before" && rm -f "$node/server.log"
  fi
  "$server" -a 127.0.0.1 -p "$(cat "$node/client_port")" -js -sd "$node/jetstream" \
    --server_name "$1" --cluster_name evident \
    --cluster "nats://127.0.0.1:$(cat "$node/cluster_port")" --routes "$routes" \
    -l "$node/server.log" -P "$node/pid" </dev/null >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 1 200); do  # up to 20 s
    kill -0 "$pid" 2>/dev/null || break
    if grep -q "Server is ready" "$node/server.log" 2>/dev/null &&
      jetstream_on "$(cat "$node/client_port")"; then
      return 0
    fi
    sleep 0.1
  done
  echo "nats-server $1 did not start (pid $pid); its log:" >&2
  cat "$node/server.log" >&2 2>/dev/null || true
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$node/pid"
  stop_all  # the nodes started before it
  exit 1
}

cluster() {
  local count=${port/#-1/3} i routes="" seeds="" ports
  [[ "$count" =~ ^[1-9]$ ]] || { echo "a cluster of 1 to 9 servers" >&2; exit 2; }
  [ ! -e "$dir/nodes" ] || { echo "$dir holds a cluster already (stop it, remove it)" >&2; exit 2; }
  mkdir -p "$dir"
  read -r -a ports <<<"$(free_ports $((2 * count)))"
  for ((i = 1; i <= count; i++)); do
    mkdir -p "$dir/n$i/jetstream"
    echo "${ports[$((2 * i - 2))]}" >"$dir/n$i/client_port"
    echo "${ports[$((2 * i - 1))]}" >"$dir/n$i/cluster_port"
    routes+="${routes:+,}nats://127.0.0.1:${ports[$((2 * i - 1))]}"
    seeds+="${seeds:+,}nats://127.0.0.1:${ports[$((2 * i - 2))]}"
    echo "n$i" >>"$dir/nodes"
  done
  echo "$routes" >"$dir/routes"
  for ((i = 1; i <= count; i++)); do node_start "n$i"; done
  # JetStream answers once the nodes elected a metadata leader.
  for _ in $(seq 1 300); do  # up to 30 s
    if grep -qs "metadata leader" "$dir"/n*/server.log; then
      echo "$seeds" >"$dir/url"
      echo "$seeds"
      return 0
    fi
    sleep 0.1
  done
  echo "the cluster elected no JetStream metadata leader in 30 s; the logs:" >&2
  tail -n 20 "$dir"/n*/server.log >&2 || true
  stop_all
  exit 1
}

node_stop() {
  local node="$dir/$1"
  if [ "${2:-}" = KILL ] && [ -f "$node/pid" ]; then
    kill -9 "$(cat "$node/pid")" 2>/dev/null || true
    for _ in $(seq 1 100); do
      kill -0 "$(cat "$node/pid")" 2>/dev/null || break
      sleep 0.05
    done
    rm -f "$node/pid"
    return 0
  fi
  stop_by_pid "$node"
}

stop_all() {
  if [ -f "$dir/nodes" ]; then
    while read -r name; do stop_by_pid "$dir/$name"; done <"$dir/nodes"
  fi
  stop_by_pid "$dir"
}

case "$cmd" in
  start) start ;;
  stop) stop_all ;;
  cluster) cluster ;;
  node-stop) node_stop "$port" "${4:-}" ;;
  node-start) node_start "$port" ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
