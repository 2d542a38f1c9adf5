#!/usr/bin/env bash
# Installs examples/node's packages from its lock file (npm ci) for the any-language tests, again
# only when the lock changed, one test at a time (they share the directory).
# better-sqlite3's native part (SQLite itself) is compiled unoptimised: 26 s rather than 70 s of
# one core, and these tests measure nothing of its speed.
#   tests/npm_ci.sh NODE_DIR
set -euo pipefail
node_dir=$1
(
  flock 9
  if ! cmp -s "$node_dir/package-lock.json" "$node_dir/node_modules/.evident-lock" 2>/dev/null; then
    (cd "$node_dir" && CFLAGS=-O0 CXXFLAGS=-O0 npm ci --no-audit --no-fund --loglevel=error >&2)
    cp "$node_dir/package-lock.json" "$node_dir/node_modules/.evident-lock"
  fi
) 9>"$node_dir/.npm-install.lock"
