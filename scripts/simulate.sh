#!/usr/bin/env bash
# Runs N seeds of the deterministic simulation (src/consumer/simulation_test.cc) on every core:
# the range [FIRST, FIRST + N) split into one slice per core, each slice a simulation_test
# process. Prints each slice's summary, then the whole run's; exit 0 when every seed kept the
# invariants, 1 when one did not (its seed and the command that reproduces it are printed).
#
#   scripts/simulate.sh N [FIRST]   # FIRST: default 1; the build: build/ (scripts/test.sh or
#                                   # cmake --build build --target simulation_test)
#   BUILD_DIR=DIR, JOBS=N           # another build directory; slices (default: the cores)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
n=${1:?usage: $0 N [FIRST]}
first=${2:-1}
jobs=${JOBS:-$(nproc)}
binary=${BUILD_DIR:-build}/src/consumer/simulation_test
[ -x "$binary" ] || { echo "no $binary: build it first (cmake --build build --target simulation_test)" >&2; exit 2; }
[[ $n =~ ^[0-9]+$ && $first =~ ^[0-9]+$ ]] || { echo "N and FIRST are whole numbers" >&2; exit 2; }
logs=$(mktemp -d)
start=$(date +%s)
slice=$(( (n + jobs - 1) / jobs ))
pids=()
for ((j = 0; j < jobs; j++)); do
  from=$((first + j * slice))
  count=$(( j == jobs - 1 ? n - j * slice : slice ))
  ((count > 0)) || continue
  EVIDENT_SIM_FIRST_SEED=$from EVIDENT_SIM_SEEDS=$count "$binary" \
    --gtest_filter=Simulation.EverySeedKeepsTheInvariantsThroughCrashesAndRedeliveries \
    >"$logs/$j.log" 2>&1 &
  pids+=("$!")
done
failed=0
for j in "${!pids[@]}"; do
  if ! wait "${pids[$j]}"; then failed=1; fi
  grep -E '^[0-9]+ seeds,|^.*: Failure|^seed |^reproduce' "$logs/$j.log"
done
echo "$n seeds from $first in $(( $(date +%s) - start )) s on $jobs processes:" \
  "$([ $failed = 0 ] && echo 'every seed kept the invariants' || echo "a seed failed (logs: $logs)")"
[ $failed = 0 ] && rm -rf "$logs"
exit $failed
