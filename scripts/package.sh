#!/usr/bin/env bash
# Builds the Debian package evident_<version>_amd64.deb from a Release tree of its own
# (build-package/), with CPack (cmake/install.cmake says what it holds); prints its path.
# Install it with: sudo apt-get install ./build-package/package/evident_*_amd64.deb
#   scripts/package.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh build
cmake -S . -B build-package -G Ninja -DCMAKE_BUILD_TYPE=Release -DEVIDENT_TESTS=OFF \
  -DEVIDENT_BENCH=OFF >/dev/null
cmake --build build-package -j "$(nproc)"
cpack -G DEB --config build-package/CPackConfig.cmake -B build-package/package >/dev/null
ls build-package/package/evident_*_amd64.deb
