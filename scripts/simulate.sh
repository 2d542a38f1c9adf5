#!/usr/bin/env bash
# Runs N seeds of the deterministic simulations on every core: the consume path's
# (src/consumer/simulation_test.cc) and the whole path's, outbox to effect
# (src/simulation/flow_simulation_test.cc). For each, the range [FIRST, FIRST + N) is split into
# one slice per core, each slice one process. Prints each slice's summary, then the whole run's;
# exit 0 when every seed kept the invariants, 1 when one did not (its seed and the command that
# reproduces it are printed).
#
#   scripts/simulate.sh N [FIRST]   # FIRST: default 1; the build: build/ (scripts/test.sh, or
#                                   # cmake --build build --target simulation_test
#                                   # flow_simulation_test)
#   BUILD_DIR=DIR, JOBS=N           # another build directory; slices (default: the cores)
#   SIMULATION=consume|flow         # one of the two only (default: both, one after the other)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
n=${1:?usage: $0 N [FIRST]}
first=${2:-1}
jobs=${JOBS:-$(nproc)}
[[ $n =~ ^[0-9]+$ && $first =~ ^[0-9]+$ ]] || { echo "N and FIRST are whole numbers" >&2; exit 2; }
case ${SIMULATION:-both} in
  consume) sims=(consume) ;;
  flow) sims=(flow) ;;
  both) sims=(consume flow) ;;
  *) echo "SIMULATION is consume, flow or both" >&2; exit 2 ;;
esac

# simulate NAME BINARY FILTER: the slices of one simulation; 0 when every seed passed.
simulate() {
  local name=$1 binary=$2 filter=$3
  [ -x "$binary" ] || { echo "no $binary: build it first (cmake --build build --target $(basename "$binary"))" >&2; return 2; }
  local logs start slice pids=() failed=0
  logs=$(mktemp -d)
  start=$(date +%s)
  slice=$(( (n + jobs - 1) / jobs ))
  for ((j = 0; j < jobs; j++)); do
    local from=$((first + j * slice))
    local count=$(( j == jobs - 1 ? n - j * slice : slice ))
    ((count > 0)) || continue
    EVIDENT_SIM_FIRST_SEED=$from EVIDENT_SIM_SEEDS=$count "$binary" --gtest_filter="$filter" \
      >"$logs/$j.log" 2>&1 &
    pids+=("$!")
  done
  for j in "${!pids[@]}"; do
    if ! wait "${pids[$j]}"; then failed=1; fi
    grep -E '^[0-9]+ seeds|^.*: Failure|^seed |^reproduce' "$logs/$j.log"
  done
  echo "$name: $n seeds from $first in $(( $(date +%s) - start )) s on $jobs processes:" \
    "$([ $failed = 0 ] && echo 'every seed kept the invariants' || echo "a seed failed (logs: $logs)")"
  [ $failed = 0 ] && rm -rf "$logs"
  return $failed
}

status=0
build=${BUILD_DIR:-build}
for sim in "${sims[@]}"; do
  if [ "$sim" = consume ]; then
    simulate "consume path" "$build/src/consumer/simulation_test" \
      Simulation.EverySeedKeepsTheInvariantsThroughCrashesAndRedeliveries || { rc=$?; ((rc > status)) && status=$rc; }
  else
    simulate "whole path" "$build/src/simulation/flow_simulation_test" \
      FlowSimulation.EverySeedKeepsTheInvariantsFromOutboxToEffect || { rc=$?; ((rc > status)) && status=$rc; }
  fi
done
exit $status
