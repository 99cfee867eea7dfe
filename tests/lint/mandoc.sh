#!/usr/bin/env bash
# mandoc.sh: "mandoc -Tlint -Wwarning" on every man page ($XSITE_MAN_PAGES,
# set by Makefile.am); one TAP test per page.  Style notes (such as a
# referenced page that is not installed here) are not failures.
set -euo pipefail

# shellcheck source=tests/harness/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/tap.sh"

main() {
  if [[ -z ${MANDOC:-} ]]; then
    tap_skip_all "mandoc not found by configure (install mandoc)"
  fi
  cd "${XSITE_SRCDIR:-.}"

  local page
  local out
  for page in ${XSITE_MAN_PAGES:-}; do
    if [[ ! -f $page ]]; then
      tap_not_ok "mandoc -Tlint $page" "$page: no such file"
    elif out=$("$MANDOC" -Tlint -Wwarning "$page" 2>&1); then
      tap_ok "mandoc -Tlint $page"
    else
      tap_not_ok "mandoc -Tlint $page" "$out"
    fi
  done
  tap_done
}

main "$@"
