#!/usr/bin/env bash
# Runs clang-tidy (configuration: .clang-tidy) over every library and CLI source in src/ (tests
# are held to their assertions instead, to keep the CI run short), using
# the compile commands of a configured build tree. Fails on any finding.
#   scripts/run-clang-tidy.sh BUILD_DIR
set -euo pipefail
build=$1
cd "$(dirname "$0")/.."
tidy=$(command -v clang-tidy-14 || command -v clang-tidy) || { echo "clang-tidy not found" >&2; exit 1; }
[ -f "$build/compile_commands.json" ] || { echo "no $build/compile_commands.json" >&2; exit 1; }
mapfile -t files < <(git ls-files 'src/*.cc' ':!:*_test.cc' 2>/dev/null || find src -name '*.cc' ! -name '*_test.cc')
[ ${#files[@]} -gt 0 ] || { echo "no sources found" >&2; exit 1; }
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 4 "$tidy" -p "$build" --quiet 2>&1 \
  | grep -v '^[0-9]* warnings\? generated\.$' | grep -v '^Suppressed' | grep -v 'Use -header-filter' \
  | tee "$build/clang-tidy.log" || true
if grep -qE '(warning|error):' "$build/clang-tidy.log"; then
  echo "clang-tidy: findings above" >&2
  exit 1
fi
echo "clang-tidy: ${#files[@]} files, no findings"
