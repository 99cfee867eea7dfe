# helpers.bash: shared set-up of the bats tests of the commands (tests/cli).
# shellcheck shell=bash

# xsite_command: export REPO (the source tree) and XSITE, the xsite command
# under test: the build's (make check sets XSITE), or else one generated
# from lua/bin/xsite.in that loads the library of this source tree.
xsite_command() {
  REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
  export REPO
  if [[ -z ${XSITE:-} ]]; then
    local lua
    lua=$(command -v "${LUA:-lua5.1}") || {
      printf '%s: no Lua interpreter %s\n' "${BATS_TEST_FILENAME##*/}" "${LUA:-lua5.1}" >&2
      return 1
    }
    mkdir -p "$BATS_FILE_TMPDIR/bin"
    sed -e "s|@LUA@|$lua|" -e "s|@luadir@|$REPO/lua|" \
      "$REPO/lua/bin/xsite.in" >"$BATS_FILE_TMPDIR/bin/xsite"
    chmod +x "$BATS_FILE_TMPDIR/bin/xsite"
    XSITE="$BATS_FILE_TMPDIR/bin/xsite"
  fi
  export XSITE
}
