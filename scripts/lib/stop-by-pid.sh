# Sourced by the scripts that start a server for tests (scripts/kafka.sh, scripts/nats.sh):
# stop_by_pid DIR stops the process whose pid DIR/pid holds — SIGTERM, then SIGKILL after 10 s —
# and removes the pid file. Nothing to do when there is none, or the process is gone already.
stop_by_pid() {
  local dir=$1 pid
  [ -f "$dir/pid" ] || return 0
  pid=$(cat "$dir/pid")
  if kill "$pid" 2>/dev/null; then
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/pid"
}
