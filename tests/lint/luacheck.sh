#!/usr/bin/env bash
# luacheck.sh: luacheck over the Lua library, the benchmarks' Lua, the specs
# (not their fixtures)
# and the built xsite command; one TAP test per file.  Uses the project's
# .luacheckrc when there is one; without it, std max (+busted for the specs).
set -euo pipefail

# shellcheck source=tests/harness/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/tap.sh"

# check FILE... : luacheck the files with the remaining options, one TAP
# line per file
check() {
  local -a opts=()
  while [[ $1 == -* ]]; do
    opts+=("$1")
    shift
  done
  local out
  local rc=0
  out=$("$LUACHECK" --no-cache --no-color --codes --formatter plain \
    "${opts[@]}" "$@" 2>&1) || rc=$?
  local f
  local mine
  for f in "$@"; do
    mine=$(printf '%s\n' "$out" | awk -v f="$f:" 'index($0, f) == 1')
    if [[ -z $mine ]]; then
      tap_ok "luacheck $f"
    else
      tap_not_ok "luacheck $f" "$mine"
    fi
  done
  if ((rc > 2)); then
    tap_not_ok "luacheck ran (exit status $rc)" "$out"
  fi
}

main() {
  if [[ -z ${LUACHECK:-} ]]; then
    tap_skip_all "luacheck not found by configure (install lua-check)"
  fi
  cd "${XSITE_SRCDIR:-.}"

  local -a lib=()
  local -a specs=()
  local f
  while IFS= read -r f; do
    lib+=("$f")
  done < <(find lua -name '*.lua' -type f | LC_ALL=C sort)
  # the benchmarks' Lua
  while IFS= read -r f; do
    lib+=("$f")
  done < <(find tests/bench -name '*.lua' -type f | LC_ALL=C sort)
  if [[ -n ${XSITE:-} && -f $XSITE ]]; then
    lib+=("$XSITE")
  fi
  if [[ -d tests/lua ]]; then
    while IFS= read -r f; do
      specs+=("$f")
    done < <(find tests/lua -path tests/lua/fixtures -prune -o -name '*.lua' -type f -print | LC_ALL=C sort)
  fi

  if [[ -f .luacheckrc ]]; then
    check "${lib[@]}" "${specs[@]}"
  else
    ((${#lib[@]} == 0)) || check --std=max "${lib[@]}"
    ((${#specs[@]} == 0)) || check --std=max+busted "${specs[@]}"
  fi
  tap_done
}

main "$@"
