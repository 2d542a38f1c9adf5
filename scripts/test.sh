#!/usr/bin/env bash
# Builds evident in Release and runs every test: unit, end-to-end, the JSON Schema suite, the
# clang-tidy check and the sanitized libFuzzer runs, then a sample of the mutation check. Both trees keep assert() on
# (EVIDENT_ASSERTIONS: -UNDEBUG), so the invariants run in every test and fuzz run. Installs the Debian packages it needs.
# Ends with ctest's summary line, and on failure the failing tests' failure lines. Usage: scripts/test.sh   (FUZZ_SECONDS=30 by default)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh test
jobs=$(nproc)

# Both trees build evident's own code with warnings as errors (EVIDENT_WERROR): GCC the whole
# project, Clang the libraries and fuzz targets (and clang-tidy, in the tests, every source).
# 1. libFuzzer targets, built with clang under ASan+UBSan in their own tree.
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++-14 -DEVIDENT_FUZZ=ON -DEVIDENT_TESTS=OFF -DEVIDENT_BENCH=OFF \
  -DEVIDENT_ASSERTIONS=ON -DEVIDENT_WERROR=ON >/dev/null
cmake --build build-fuzz -j "$jobs" --target fuzzers

# 2. The project itself, in Release (assertions on), with the tests that drive the fuzz binaries above.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DEVIDENT_ASSERTIONS=ON -DEVIDENT_WERROR=ON \
  -DEVIDENT_FUZZ_BUILD_DIR="$PWD/build-fuzz" -DEVIDENT_FUZZ_SECONDS="${FUZZ_SECONDS:-30}" >/dev/null
cmake --build build -j "$jobs"

# 3. Every test. When some fail, their failure lines are printed again after ctest's summary, so
# that a reader of the log's tail (CI keeps only that) sees why, not only which.
print_failed_output() {
  local log=build/Testing/Temporary/LastTest.log failed=build/Testing/Temporary/LastTestsFailed.log
  [[ -f $failed && -f $log ]] || return 0
  local number name
  while IFS=: read -r number name; do
    echo "---- $name: its failure lines, then the last 25 lines of its output ----"
    awk -v head="Testing: $name" '
      index($0, head) && substr($0, length($0) - length(head) + 1) == head { on = 1; next }
      on && $0 == "<end of output>" { exit }
      on' "$log" >"$out_file"
    grep -A8 -E ': Failure$|^Expected|^Value of' "$out_file" | head -n 80 || true
    echo "...."
    tail -n 25 "$out_file"
  done <"$failed"
}
out_file=$(mktemp)
trap 'rm -f "$out_file"' EXIT
rc=0
ctest --test-dir build --output-on-failure -j "$jobs" || rc=$?
if ((rc != 0)); then
  print_failed_output
  echo "ctest failed (exit $rc): the tests above"
  exit "$rc"
fi

# 4. A sample of the mutation check (docs/DEVELOPING.md): five mutants drawn from this run's
# time, each applied to this tree in turn (and put back), its test's target rebuilt, and that
# test required to fail. A survivor, or a pattern the code no longer holds, fails the run.
bash scripts/mutants.sh --in-place --sample 5 || rc=$?
((rc == 0)) || echo "the mutation sample failed (exit $rc): the lines above"
exit "$rc"
