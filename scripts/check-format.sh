#!/usr/bin/env bash
# Fails when a tracked C++ source is not formatted as .clang-format says (clang-format 14).
#   scripts/check-format.sh        (fix with: git ls-files '*.cc' '*.h' | xargs clang-format-14 -i)
set -euo pipefail
cd "$(dirname "$0")/.."
format=$(command -v clang-format-14 || command -v clang-format) || { echo "clang-format not found" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.cc' '*.h' ':!:third_party/*')
[ ${#files[@]} -gt 0 ] || { echo "no sources found" >&2; exit 1; }
bad=0
for f in "${files[@]}"; do
  if ! "$format" --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f"
    bad=$((bad + 1))
  fi
done
[ "$bad" -eq 0 ] || { echo "clang-format: $bad file(s) differ from .clang-format" >&2; exit 1; }
echo "clang-format: ${#files[@]} files formatted"
