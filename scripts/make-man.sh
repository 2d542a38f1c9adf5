#!/usr/bin/env bash
# Renders the program's own --help into manual pages with help2man: evident.1, and one page per
# command (evident-outbox-append.1 for `evident outbox append`), found by walking the
# "Subcommands:" sections of the help, so no command is left out and none goes stale.
#   scripts/make-man.sh EVIDENT_BINARY OUT_DIR VERSION
set -euo pipefail
binary=$1 out=$2 version=$3
command -v help2man >/dev/null || { echo "make-man: help2man is missing (apt-get install help2man)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$out" && mkdir -p "$out"

subcommands() { "$binary" "$@" --help | awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }'; }

# One page: help2man runs a wrapper that calls the program with the command's words.
page() {
  local name=evident words=("$@") description
  for word in "${words[@]}"; do name+="-$word"; done
  description=$("$binary" "${words[@]}" --help | sed -n 1p)  # reads it all: no SIGPIPE
  printf '#!/bin/sh\nexec "%s" %s "$@"\n' "$binary" "${words[*]}" >"$work/$name"
  chmod +x "$work/$name"
  local see=""
  [ ${#words[@]} -gt 0 ] && see="evident(1)"
  help2man --no-info --no-discard-stderr --version-string="$version" \
    --name="${description//\\/\\\\}" --section=1 --output="$out/$name.1" "$work/$name"
  # help2man names the page after the wrapper file: the command's words are its real name.
  sed -i "s|$work/||g" "$out/$name.1"
  [ -z "$see" ] || printf '.SH "SEE ALSO"\n%s\n' "$see" >>"$out/$name.1"
}

walk() {
  page "$@"
  local sub
  for sub in $(subcommands "$@"); do walk "$@" "$sub"; done
}
walk
echo "$(ls "$out" | wc -l) manual pages in $out"
