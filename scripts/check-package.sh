#!/usr/bin/env bash
# Builds the Debian package from the build tree $1 (CPack, as scripts/package.sh does from a
# tree of its own) and checks it without installing it on this machine: its dependencies, its
# files, the program run from the unpacked files, and the service units (systemd-analyze
# verify, with ExecStart pointed at the unpacked program: the real path is not installed here).
#   scripts/check-package.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
work=$(mktemp -d /tmp/evident-package.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "check-package: $*" >&2; exit 1; }

cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" 2>&1 ||
  { tail -n 30 "$work/cpack.log" >&2; fail "cpack failed"; }
deb=$(ls "$work"/out/evident_*_amd64.deb) || fail "no evident_<version>_amd64.deb made"
depends=$(dpkg-deb -f "$deb" Depends)
for library in libnats libpq5 librdkafka libsqlite3 libmicrohttpd libcurl4 libre2 libsimdjson libyaml-cpp; do
  case $depends in *"$library"*) ;; *) fail "Depends lacks $library: $depends" ;; esac
done
dpkg-deb -x "$deb" "$work/root"
for file in usr/bin/evident usr/lib/libevident.a usr/lib/evident/evident_sqlite.so \
  usr/lib/evident/evident_pg.so usr/include/evident/consumer.h \
  usr/lib/cmake/evident/evidentConfig.cmake usr/lib/pkgconfig/evident.pc \
  usr/lib/systemd/system/evident-serve.service usr/lib/systemd/system/evident-relay.service \
  usr/share/doc/evident/examples/cpp/CMakeLists.txt usr/share/doc/evident/default-evident.sample \
  usr/share/man/man1/evident.1 usr/share/bash-completion/completions/evident; do
  [ -e "$work/root/$file" ] || fail "the package lacks /$file"
done
# PostgreSQL's $libdir holds a link to the module, relative, so that it resolves where installed.
[ "$(readlink -f "$work/root/usr/lib/postgresql/15/lib/evident_pg.so")" = "$work/root/usr/lib/evident/evident_pg.so" ] ||
  fail "/usr/lib/postgresql/15/lib/evident_pg.so is not a link to /usr/lib/evident/evident_pg.so"
version=$("$work/root/usr/bin/evident" --version | head -n 1) || fail "the packaged evident does not run"
echo "packaged: $(basename "$deb"), $version"

mkdir -p "$work/units"
for unit in evident-serve evident-relay; do
  sed "s|/usr/bin/evident|$work/root/usr/bin/evident|" \
    "$work/root/usr/lib/systemd/system/$unit.service" >"$work/units/$unit.service"
done
systemd-analyze verify "$work/units/evident-serve.service" "$work/units/evident-relay.service" \
  >"$work/verify.log" 2>&1 || { cat "$work/verify.log" >&2; fail "systemd-analyze verify refused a unit"; }
[ ! -s "$work/verify.log" ] || { cat "$work/verify.log" >&2; fail "systemd-analyze verify warned"; }
echo "the service units pass systemd-analyze verify"
