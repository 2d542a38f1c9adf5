#!/usr/bin/env bash
# Installs the Debian 12 packages evident needs, and only those that are missing.
#   scripts/install-deps.sh build   # compiler, CMake, libraries: enough to build and run
#   scripts/install-deps.sh test    # build + what the test run needs (clang/libFuzzer, clang-tidy,
#                                   # PostgreSQL's server headers for evident_pg.so,
#                                   # systemd-analyze for the service units,
#                                   # the servers, Chromium and npm for the browser test, Python
#                                   # for the documentation's samples)
#   scripts/install-deps.sh bench   # build + the peers the benchmarks compare against
#   scripts/install-deps.sh jetstream  # build + the NATS server (scripts/demo-jetstream.sh)
#   scripts/install-deps.sh postgres   # build + the PostgreSQL 15 server (scripts/postgres.sh) and
#                                      # its headers (evident_pg.so, the functions inside it)
# Runs apt-get as root, or through sudo when not root.
set -euo pipefail

want=${1:-build}
packages=(build-essential cmake ninja-build pkg-config git help2man
  libsimdjson-dev libre2-dev libsqlite3-dev sqlite3 libyaml-cpp-dev libcli11-dev libnats-dev librdkafka-dev
  libcurl4-openssl-dev libssl-dev libmicrohttpd-dev libpq-dev libgtest-dev libgmock-dev libbenchmark-dev)
case "$want" in
  build) ;;
  test) packages+=(clang-14 libclang-rt-14-dev libfuzzer-14-dev clang-tidy-14 clang-format-14
    nats-server postgresql-15 postgresql-server-dev-15 chromium nodejs npm python3
    python3-psycopg systemd) ;;
  bench) packages+=(libvalijson-dev rapidjson-dev nodejs npm python3 nats-server postgresql-15
    postgresql-server-dev-15 wrk bc curl) ;;
  jetstream) packages+=(nats-server) ;;
  postgres) packages+=(postgresql-15 postgresql-server-dev-15) ;;
  *) echo "usage: $0 build|test|bench|jetstream|postgres" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# nodejs may come from another Debian-format source that already provides npm.
if [[ " ${missing[*]} " == *" npm "* ]] && command -v npm >/dev/null 2>&1; then
  missing=("${missing[@]/npm}")
fi
read -r -a missing <<<"${missing[*]}"
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=()
if [ "$(id -u)" -ne 0 ]; then sudo=(sudo); fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
