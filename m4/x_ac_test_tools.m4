##*****************************************************************************
#  X_AC_TEST_TOOLS
#
#  Find the tools "make check" runs: busted (and the Lua interpreters it works
#  under), bats, luacheck, shellcheck, mandoc, clang-tidy.  None is required to build; a
#  test whose tool is missing is reported as SKIP with the reason.
#
#  Call after X_AC_LUA.  Substitutes BASH, BUSTED, BUSTED_LUAS (the
#  interpreters busted runs under, space separated), BATS, BATS_LIB_PATH,
#  LUACHECK, SHELLCHECK, MANDOC, CLANG_TIDY, FLOCK.
##*****************************************************************************

AC_DEFUN([X_AC_TEST_TOOLS], [
  AC_PATH_PROG([BASH], [bash], [/bin/bash])
  AC_PATH_PROG([BUSTED], [busted])
  AC_PATH_PROG([BATS], [bats])
  AC_PATH_PROG([LUACHECK], [luacheck])
  AC_PATH_PROG([SHELLCHECK], [shellcheck])
  AC_PATH_PROG([MANDOC], [mandoc])
  AC_PATH_PROG([CLANG_TIDY], [clang-tidy])
  AC_PATH_PROG([FLOCK], [flock])

  BUSTED_LUAS=
  AS_IF([test -n "$BUSTED"], [
    AC_MSG_CHECKING([which Lua interpreters run busted])
    for x_ac_tt_lua in "$LUA51" "$LUA52" "$LUA53" "$LUA54"; do
      AS_IF([test -n "$x_ac_tt_lua" && "$x_ac_tt_lua" "$BUSTED" --version >/dev/null 2>&1],
        [BUSTED_LUAS="$BUSTED_LUAS $x_ac_tt_lua"])
    done
    BUSTED_LUAS=`printf '%s' "$BUSTED_LUAS" | sed 's/^ *//'`
    AC_MSG_RESULT([${BUSTED_LUAS:-none}])
  ])
  AS_IF([test -z "$BUSTED_LUAS"],
    [AC_MSG_WARN([busted does not run under any Lua: the Lua specs will be skipped (install lua-busted)])])
  AS_IF([test -z "$BATS"],
    [AC_MSG_WARN([bats not found: the bats tests will be skipped (install bats)])])

  AC_MSG_CHECKING([for the bats-support and bats-assert libraries])
  BATS_LIB_PATH=
  for x_ac_tt_d in /usr/lib/bats /usr/share/bats /usr/local/lib/bats /usr/lib/bats-core; do
    AS_IF([test -r "$x_ac_tt_d/bats-support/load.bash" && test -r "$x_ac_tt_d/bats-assert/load.bash"],
      [BATS_LIB_PATH=$x_ac_tt_d; break])
  done
  AC_MSG_RESULT([${BATS_LIB_PATH:-no}])
  AS_IF([test -z "$BATS_LIB_PATH" && test -n "$BATS"],
    [AC_MSG_WARN([bats-support/bats-assert not found (install bats-support bats-assert)])])

  AC_SUBST([BUSTED_LUAS])
  AC_SUBST([BATS_LIB_PATH])
])
