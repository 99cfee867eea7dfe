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

# earlier_report DIR JOB UID PROFILE DETAIL [RANKS]: a job's report in DIR
# (ReportDir), of UID's job JOB run with PROFILE, whose one step had RANKS
# ranks (4) and DETAIL: a traffic matrix ([[...]]) or libxsite's edges
# ("edges":[i,j,bytes,...])
earlier_report() {
  local detail=$5 ranks=${6:-4}
  [[ $detail == '"'* ]] || detail="\"matrix\":$detail"
  mkdir -p "$1/$2"
  printf '{"schema":"xsite-report","version":1,"job":"%s","uid":%s,"sites":["alpha","beta"],"nodes":{"split":[2,2]},"link":{"latency":0.001,"bandwidth":1.25e8},"profile":{"label":"%s"},"steps":[{"step":"0","mpi":{"ranks":%s,%s}}]}\n' \
    "$2" "$3" "$4" "$ranks" "$detail" >"$1/$2/report.json"
}
