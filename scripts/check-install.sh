#!/usr/bin/env bash
# Installs the build tree $1 under a temporary prefix and uses it as a user would: runs the
# installed program, builds the installed C++ examples against the installed package
# (find_package(evident)) and runs them, and builds a program with pkg-config's flags alone.
# Exit 0 when all of it works; otherwise what failed, on standard error.
#   scripts/check-install.sh BUILD_DIR   (with EVIDENT_TEST_POSTGRES_URL_FILE set, order_service runs
#   on that PostgreSQL server too; ctest sets it)
set -euo pipefail
build=$(cd "$1" && pwd)
work=$(mktemp -d /tmp/evident-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "check-install: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$work/install.log" || { cat "$work/install.log" >&2; fail "cmake --install failed"; }
"$prefix/bin/evident" --version >/dev/null || fail "the installed evident does not run"
for header in consumer.h outbox.h store_sqlite.h store_postgres.h; do
  [ -f "$prefix/include/evident/$header" ] || fail "include/evident/$header is not installed"
done

for file in share/man/man1/evident.1 share/man/man1/evident-outbox-append.1 \
  share/bash-completion/completions/evident lib/systemd/system/evident-serve.service; do
  [ -f "$prefix/$file" ] || fail "$file is not installed"
done
grep -q '^\.SH OPTIONS' "$prefix/share/man/man1/evident-consume.1" &&
  grep -q 'store' "$prefix/share/man/man1/evident-consume.1" ||
  fail "the installed evident-consume(1) lacks its options"
# The configuration's schema for editors is the one the binary checks with.
schema=$prefix/share/evident/schemas/evident-config.schema.json
[ -f "$schema" ] || fail "share/evident/schemas/evident-config.schema.json is not installed"
"$prefix/bin/evident" config schema | cmp -s - "$schema" ||
  fail "evident config schema differs from the installed $schema"

# The SQLite extension loads into the sqlite3 shell from where it is installed.
module=$(find "$prefix" -name evident_sqlite.so | head -n 1)
[ -n "$module" ] || fail "evident_sqlite.so is not installed"
[ "$(sqlite3 :memory: ".load $module" "SELECT count(*) FROM pragma_function_list WHERE name LIKE 'evident_%'")" = 4 ] ||
  fail "the installed evident_sqlite.so does not load into sqlite3"
# The PostgreSQL module is installed beside it, with PostgreSQL's magic block and its functions.
pg_module=$(find "$prefix" -name evident_pg.so -type f | head -n 1)
[ -n "$pg_module" ] || fail "evident_pg.so is not installed"
[ "$(nm -D --defined-only "$pg_module" | grep -cE ' (Pg_magic_func|evident_append|evident_try_append|evident_compensate)$')" = 4 ] ||
  fail "the installed evident_pg.so lacks its entry points"
# And linked from PostgreSQL 15's library directory under the prefix (the server's $libdir when
# the prefix is /usr), so that '$libdir/evident_pg' names it.
pg_link=$prefix/lib/postgresql/15/lib/evident_pg.so
[ -L "$pg_link" ] && [ "$(readlink -f "$pg_link")" = "$(readlink -f "$pg_module")" ] ||
  fail "lib/postgresql/15/lib/evident_pg.so is not a link to $pg_module"
[ -f "$prefix/share/doc/evident/examples/python/order_service_sqlite.py" ] ||
  fail "examples/python is not installed"

examples=$prefix/share/doc/evident/examples
cmake -S "$examples/cpp" -B "$work/examples" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >"$work/configure.log" 2>&1 ||
  { cat "$work/configure.log" >&2; fail "the installed examples do not configure (find_package(evident))"; }
cmake --build "$work/examples" >"$work/build.log" 2>&1 ||
  { tail -n 30 "$work/build.log" >&2; fail "the installed examples do not build"; }

contracts=$examples/orders/contracts
out=$("$work/examples/orders_consumer" "$contracts" "$work/orders.db") || fail "orders_consumer failed: $out"
case $out in *"ship order-417: denied"*) ;; *) fail "orders_consumer printed: $out" ;; esac
out=$("$work/examples/order_service" "$contracts" "$work/service.db") || fail "order_service failed: $out"
case $out in *"cancelled order-417 at version 3"*) ;; *) fail "order_service printed: $out" ;; esac
# The same service on PostgreSQL (PostgresConnection), in a schema of its own on the tests'
# server (ctest gives this test that server: EVIDENT_TEST_POSTGRES_URL_FILE).
if [ -n "${EVIDENT_TEST_POSTGRES_URL_FILE:-}" ]; then
  server=$(cat "$EVIDENT_TEST_POSTGRES_URL_FILE") || fail "no PostgreSQL URL in $EVIDENT_TEST_POSTGRES_URL_FILE"
  psql=/usr/lib/postgresql/15/bin/psql
  pg_schema="install_$$"
  "$psql" "$server" -qAt -c "CREATE SCHEMA $pg_schema" >/dev/null || fail "cannot create a schema"
  out=$("$work/examples/order_service" "$contracts" "$server?options=-csearch_path%3D$pg_schema") ||
    fail "order_service on PostgreSQL failed: $out"
  case $out in *"cancelled order-417 at version 3"*) ;; *) fail "order_service on PostgreSQL printed: $out" ;; esac
  "$psql" "$server" -qAt -c "SET client_min_messages = warning" -c "DROP SCHEMA $pg_schema CASCADE" >/dev/null
fi

pc=$(find "$prefix" -name evident.pc | head -n 1)
[ -n "$pc" ] || fail "no evident.pc installed"
cat >"$work/status.cc" <<'CC'
#include <cstdio>
#include "evident/status.h"
int main() {
  const evident::Status s = evident::Status::NotFound("pkg-config works");
  std::printf("%s\n", s.ToString().c_str());
  return s.code() == evident::Code::kNotFound ? 0 : 1;
}
CC
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs evident) ||
  fail "pkg-config cannot read $pc"
# shellcheck disable=SC2086 # the flags are words
g++ -std=c++20 -o "$work/status" "$work/status.cc" $flags || fail "a program built with pkg-config's flags does not link"
"$work/status" | grep -q "pkg-config works" || fail "the pkg-config program did not run"
echo "installed under a temporary prefix: program, headers, find_package(evident), pkg-config: ok"
