#!/usr/bin/env bash
# Runs shellcheck on every shell script and bats file of the project
# ($XSITE_SHELLCHECK_FILES, set by Makefile.am); one TAP test per file.
set -euo pipefail

# shellcheck source=tests/harness/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/tap.sh"

main() {
  if [[ -z ${SHELLCHECK:-} ]]; then
    tap_skip_all "shellcheck not found by configure (install shellcheck)"
  fi
  cd "${XSITE_SRCDIR:-.}"

  local f
  local first
  local out
  for f in ${XSITE_SHELLCHECK_FILES:-}; do
    if [[ ! -f $f ]]; then
      tap_not_ok "shellcheck $f" "$f: no such file"
      continue
    fi
    first=$(head -n 1 "$f")
    case $f:$first in
      *.sh:* | *.bash:* | *:'#!'*/sh | *:'#!'*/bash | *:'#!'*'env bash'* | *:'#!'*'env sh'* | *:'#!'*/bash\ *) ;;
      # bats files: shellcheck reads their @test blocks as functions
      *.bats:'#!'*'env bats'*) ;;
      *)
        tap_skip "shellcheck $f" "not a sh/bash script ($first)"
        continue
        ;;
    esac
    if out=$("$SHELLCHECK" --external-sources --source-path=SCRIPTDIR --source-path=. "$f" 2>&1); then
      tap_ok "shellcheck $f"
    else
      tap_not_ok "shellcheck $f" "$out"
    fi
  done
  tap_done
}

main "$@"
