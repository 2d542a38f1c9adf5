#!/usr/bin/env bash
# The operator page's browser test (and the progress bar's picture, progress_screenshot.mjs) as
# ctest runs them: installs puppeteer-core from the lock file
# (npm ci, into tests/browser/node_modules, only when the lock changed) and runs the test on the
# binary given. Chromium comes from Debian (scripts/install-deps.sh test).
#   tests/browser/run.sh /path/to/evident
set -euo pipefail
cd "$(dirname "$0")"
[ -x /usr/bin/chromium ] || { echo "no /usr/bin/chromium: scripts/install-deps.sh test" >&2; exit 1; }
stamp=node_modules/.evident-lock
if ! cmp -s package-lock.json "$stamp" 2>/dev/null; then
  PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json "$stamp"
fi
EVIDENT_BIN="$1" node operator_page.test.mjs
EVIDENT_BIN="$1" node progress_screenshot.mjs
