#!/usr/bin/env bash
# Builds evident in Release and runs the main job on the embedded default store (SQLite):
# the orders example from examples/. Installs the Debian packages it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh build
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" --target evident

evident=build/src/cli/evident
echo "== evident validate examples/envelopes/*.ndjson"
for f in examples/envelopes/*.ndjson; do
  echo "-- $f"
  "$evident" validate "$f" || true
done
