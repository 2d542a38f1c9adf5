#!/usr/bin/env bash
# Starts and stops a throw-away PostgreSQL 15 cluster for tests, benchmarks and demos: loopback
# only, a free port, its data in a temporary directory, run by an unprivileged OS user
# (PostgreSQL refuses to run as root; as root the cluster runs as `nobody`).
#
#   scripts/postgres.sh start DIR   # prints postgresql://evident@127.0.0.1:PORT/evident once the
#                                   # server accepts connections (also written to DIR/url); exit 1
#                                   # with the server's log when it cannot start; a server an
#                                   # earlier start left in DIR is stopped first
#   scripts/postgres.sh stop DIR    # fast shutdown, then the data directory is removed; exit 0
#                                   # when the server is gone
#
# DIR is the caller's (it keeps the URL and where the data lives). The cluster trusts loopback
# connections of the role `evident` and, being thrown away, runs with fsync off: it survives
# the kill of any client, not of the machine. Set EVIDENT_PG_DURABLE=1 for fsync on (the
# benchmarks). EVIDENT_PG_OPTIONS adds server settings (`-c name=value ...`), e.g.
# `-c shared_preload_libraries=pg_stat_statements` for a profile of the benchmark's statements.
# The server comes from Debian's postgresql package (scripts/install-deps.sh).
set -euo pipefail

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start DIR | stop DIR" >&2; exit 2; }
bin=/usr/lib/postgresql/15/bin

as_owner() {  # runs a server program as the cluster's OS user
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u nobody -- "$@"
  else
    "$@"
  fi
}

start() {
  [ -x "$bin/postgres" ] || { echo "PostgreSQL 15 not installed (scripts/install-deps.sh build)" >&2; exit 1; }
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  # A server an earlier start left in DIR (a fixture started again, as `ctest --repeat` does,
  # without its stop) is stopped first: DIR records one server, and no other is left running.
  [ -f "$dir/data" ] && stop_cluster "$(cat "$dir/data")"
  local data
  data=$(mktemp -d /tmp/evident-pg.XXXXXX)
  echo "$data" >"$dir/data"
  [ "$(id -u)" -eq 0 ] && chown nobody "$data"
  chmod 700 "$data"
  if ! as_owner "$bin/initdb" -D "$data/cluster" -U evident --auth=trust -E UTF8 --no-locale \
      --no-sync >"$dir/initdb.log" 2>&1; then
    echo "initdb failed; its log:" >&2
    cat "$dir/initdb.log" >&2
    exit 1
  fi
  local fsync=off
  [ "${EVIDENT_PG_DURABLE:-0}" = 1 ] && fsync=on
  local port
  for _ in 1 2 3 4 5 6 7 8; do
    port=$((20000 + RANDOM % 40000))
    if as_owner "$bin/pg_ctl" -D "$data/cluster" -l "$data/server.log" -w -t 30 start \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $data -c fsync=$fsync \
            -c synchronous_commit=$fsync -c full_page_writes=$fsync -c max_connections=200 \
            ${EVIDENT_PG_OPTIONS:-}" \
        >/dev/null 2>&1; then
      local url="postgresql://evident@127.0.0.1:$port/evident"
      if "$bin/psql" "postgresql://evident@127.0.0.1:$port/postgres" \
          -qAt -c "CREATE DATABASE evident" >/dev/null 2>"$dir/createdb.log"; then
        echo "$url" >"$dir/url"
        echo "$url"
        return 0
      fi
      cat "$dir/createdb.log" >&2
      stop_cluster "$data"
      break
    fi
    grep -q "could not bind\|Address already in use" "$data/server.log" 2>/dev/null || break
  done
  echo "PostgreSQL did not start; its log:" >&2
  cat "$data/server.log" >&2 2>/dev/null || true
  exit 1
}

stop_cluster() {
  local data=$1
  if [ -f "$data/cluster/postmaster.pid" ]; then
    as_owner "$bin/pg_ctl" -D "$data/cluster" -m fast -w -t 30 stop >/dev/null 2>&1 || {
      local pid
      pid=$(head -1 "$data/cluster/postmaster.pid" 2>/dev/null || true)
      [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    }
  fi
  case "$data" in /tmp/evident-pg.*) rm -rf "$data" ;; esac
}

stop() {
  [ -f "$dir/data" ] || exit 0
  stop_cluster "$(cat "$dir/data")"
  rm -f "$dir/data" "$dir/url"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start DIR | stop DIR" >&2; exit 2 ;;
esac
