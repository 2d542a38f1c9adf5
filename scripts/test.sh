#!/usr/bin/env bash
# Builds evident in Release and runs every test: unit, end-to-end, the JSON Schema suite, the
# clang-tidy check and the sanitized libFuzzer runs. Both trees keep assert() on
# (EVIDENT_ASSERTIONS: -UNDEBUG), so the invariants run in every test and fuzz run. Installs the Debian packages it needs.
# Ends with ctest's summary line. Usage: scripts/test.sh   (FUZZ_SECONDS=60 by default)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh test
jobs=$(nproc)

# 1. libFuzzer targets, built with clang under ASan+UBSan in their own tree.
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++-14 -DEVIDENT_FUZZ=ON -DEVIDENT_TESTS=OFF -DEVIDENT_BENCH=OFF \
  -DEVIDENT_ASSERTIONS=ON >/dev/null
cmake --build build-fuzz -j "$jobs" --target fuzzers

# 2. The project itself, in Release (assertions on), with the tests that drive the fuzz binaries above.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DEVIDENT_ASSERTIONS=ON \
  -DEVIDENT_FUZZ_BUILD_DIR="$PWD/build-fuzz" -DEVIDENT_FUZZ_SECONDS="${FUZZ_SECONDS:-60}" >/dev/null
cmake --build build -j "$jobs"

ctest --test-dir build --output-on-failure -j "$jobs"
