#!/usr/bin/env bash
# site-configs.sh: "xsite check FILE" with the built command on every shipped
# site config ($XSITE_SITE_CONFIGS, set by Makefile.am); one TAP test per file.
set -euo pipefail

# shellcheck source=tests/harness/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../harness/tap.sh"

main() {
  if [[ -z ${XSITE:-} || ! -f $XSITE ]]; then
    tap_skip_all "the xsite command was not built (${XSITE:-XSITE unset})"
  fi
  if [[ -z ${LUA:-} || ! -x $LUA ]]; then
    tap_skip_all "no Lua interpreter for the xsite command (${LUA:-LUA unset}; install lua${LUA_VERSION:-5.1})"
  fi
  cd "${XSITE_SRCDIR:-.}"

  local conf
  local out
  for conf in ${XSITE_SITE_CONFIGS:-}; do
    if [[ ! -f $conf ]]; then
      tap_not_ok "xsite check $conf" "$conf: no such file"
    elif out=$("$XSITE" check "$conf" 2>&1 </dev/null); then
      tap_ok "xsite check $conf"
    else
      tap_not_ok "xsite check $conf" "$out"
    fi
  done
  tap_done
}

main "$@"
