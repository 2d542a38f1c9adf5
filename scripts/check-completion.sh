#!/usr/bin/env bash
# The bash completion (packaging/bash-completion/evident) against the built program: commands,
# nested commands and options complete as a user typing them would see.
#   scripts/check-completion.sh EVIDENT_BINARY
set -uo pipefail
binary=$1
# shellcheck source=/dev/null
source "$(dirname "$0")/../packaging/bash-completion/evident"
fail=0
expect() {  # expect "WANTED" WORD...: completing the last word offers WANTED (among others)
  local wanted=$1
  shift
  COMP_WORDS=("$binary" "$@")
  COMP_CWORD=$(($# ))
  COMPREPLY=()
  _evident
  if [[ " ${COMPREPLY[*]} " != *" $wanted "* ]]; then
    echo "completing '$*' offered '${COMPREPLY[*]}', not $wanted"
    fail=1
  fi
}
expect outbox out
expect append outbox app
expect --store relay --st
expect --topic consume --top
expect --once relay --store sqlite:x.db --on
expect migrate store mi
[ "$fail" -eq 0 ] && echo "bash completion: ok"
exit "$fail"
