##*****************************************************************************
#  X_AC_LUA
#
#  Find the Lua interpreters 5.1 to 5.4, the Lua version Slurm's job_submit/lua
#  plugin embeds, and the headers and library of the chosen version.
#
#    --with-lua[=VERSION]      Lua version (5.1 ... 5.4) for the CLI, the
#                              module directory and the C headers
#                              @<:@default: the one Slurm's job_submit_lua.so
#                              links, else the newest interpreter found@:>@;
#                              --without-lua skips the headers/library check
#    --with-lua-moddir=DIR     where the xsite Lua modules are installed
#                              @<:@default: DATADIR/lua/VERSION@:>@
#    LUA=PATH                  the interpreter for the xsite CLI
#
#  Call after X_AC_SLURM (uses slurmplugdir).  Substitutes LUA, LUA_VERSION,
#  LUA51 ... LUA54, LUA_CFLAGS, LUA_LIBS, luadir, SLURM_LUA_LIB,
#  SLURM_LUA_VERSION; sets the automake conditional HAVE_LUA.
##*****************************************************************************

AC_DEFUN([X_AC_LUA], [
  AC_ARG_WITH([lua],
    [AS_HELP_STRING([--with-lua@<:@=VERSION@:>@],
      [Lua version 5.1, 5.2, 5.3 or 5.4 @<:@default=the one Slurm's job_submit/lua links@:>@])],
    [], [with_lua=check])
  AC_ARG_WITH([lua-moddir],
    [AS_HELP_STRING([--with-lua-moddir=DIR],
      [install directory of the xsite Lua modules @<:@default=DATADIR/lua/VERSION@:>@])],
    [], [with_lua_moddir=default])
  AC_ARG_VAR([LUA], [Lua interpreter for the xsite command])

  AC_PATH_PROG([LUA51], [lua5.1])
  AC_PATH_PROG([LUA52], [lua5.2])
  AC_PATH_PROG([LUA53], [lua5.3])
  AC_PATH_PROG([LUA54], [lua5.4])

  dnl Which liblua does Slurm's job_submit_lua.so link?
  SLURM_LUA_LIB=
  SLURM_LUA_VERSION=
  x_ac_lua_plugdir=$slurmplugdir
  x_ac_lua_save_prefix=$prefix
  x_ac_lua_save_exec_prefix=$exec_prefix
  test "x$prefix" = xNONE && prefix=$ac_default_prefix
  test "x$exec_prefix" = xNONE && exec_prefix=$prefix
  for x_ac_lua_i in 1 2 3 4 5; do
    eval x_ac_lua_plugdir=\"$x_ac_lua_plugdir\"
  done
  prefix=$x_ac_lua_save_prefix
  exec_prefix=$x_ac_lua_save_exec_prefix
  x_ac_lua_jsl=$x_ac_lua_plugdir/job_submit_lua.so
  AS_IF([test ! -r "$x_ac_lua_jsl" && test -n "$x_ac_slurm_plugdir_found"],
    [x_ac_lua_jsl=$x_ac_slurm_plugdir_found/job_submit_lua.so])
  AC_CHECK_TOOL([OBJDUMP], [objdump], [:])
  AC_MSG_CHECKING([which liblua Slurm's job_submit_lua.so links])
  AS_IF([test -r "$x_ac_lua_jsl"], [
    AS_IF([test "x$OBJDUMP" != x:],
      [SLURM_LUA_LIB=`$OBJDUMP -p "$x_ac_lua_jsl" 2>/dev/null | sed -n 's/^ *NEEDED *\(liblua@<:@^ @:>@*\).*/\1/p' | sed 1q`])
    AS_IF([test -z "$SLURM_LUA_LIB"],
      [SLURM_LUA_LIB=`ldd "$x_ac_lua_jsl" 2>/dev/null | sed -n 's/^@<:@ 	@:>@*\(liblua@<:@^ @:>@*\).*/\1/p' | sed 1q`])
    dnl liblua5.1.so.0 (Debian), liblua-5.4.so (RHEL), liblua.so.5.4
    SLURM_LUA_VERSION=`printf '%s\n' "$SLURM_LUA_LIB" | sed -n 's/^liblua@<:@^0-9@:>@*\(5\.@<:@0-9@:>@\).*/\1/p'`
    AS_IF([test -z "$SLURM_LUA_VERSION"],
      [SLURM_LUA_VERSION=`printf '%s\n' "$SLURM_LUA_LIB" | sed -n 's/^liblua\.so\.\(5\.@<:@0-9@:>@\).*/\1/p'`])
    AS_IF([test -n "$SLURM_LUA_LIB"],
      [AC_MSG_RESULT([$SLURM_LUA_LIB (Lua ${SLURM_LUA_VERSION:-unknown})])],
      [AC_MSG_RESULT([none found in $x_ac_lua_jsl])])
  ], [AC_MSG_RESULT([no $x_ac_lua_jsl])])

  dnl The Lua version: --with-lua=VERSION, else that of $LUA, else Slurm's,
  dnl else the newest interpreter found.
  LUA_VERSION=
  AS_CASE([$with_lua],
    [5.1|5.2|5.3|5.4], [LUA_VERSION=$with_lua],
    [yes|no|check], [],
    [AC_MSG_ERROR([--with-lua=$with_lua: invalid value: give 5.1, 5.2, 5.3 or 5.4])])
  AS_IF([test -n "$LUA"], [
    x_ac_lua_v=`$LUA -e 'print((_VERSION:gsub("^Lua ", "")))' 2>/dev/null`
    AS_IF([test -z "$x_ac_lua_v"], [AC_MSG_ERROR([LUA=$LUA: not a working Lua interpreter])])
    AS_IF([test -n "$LUA_VERSION" && test "x$LUA_VERSION" != "x$x_ac_lua_v"],
      [AC_MSG_ERROR([LUA=$LUA is Lua $x_ac_lua_v, but --with-lua=$LUA_VERSION])])
    LUA_VERSION=$x_ac_lua_v
  ])
  AS_IF([test -z "$LUA_VERSION"], [LUA_VERSION=$SLURM_LUA_VERSION])
  AS_IF([test -z "$LUA_VERSION"], [
    for x_ac_lua_v in 5.4 5.3 5.2 5.1; do
      x_ac_lua_var=LUA`printf '%s' $x_ac_lua_v | tr -d .`
      eval x_ac_lua_p=\$$x_ac_lua_var
      AS_IF([test -n "$x_ac_lua_p"], [LUA_VERSION=$x_ac_lua_v; break])
    done
  ])
  AS_IF([test -z "$LUA_VERSION"], [LUA_VERSION=5.1])
  AC_MSG_CHECKING([for the Lua version])
  AC_MSG_RESULT([$LUA_VERSION])

  AS_IF([test -z "$LUA"], [
    x_ac_lua_var=LUA`printf '%s' $LUA_VERSION | tr -d .`
    eval LUA=\$$x_ac_lua_var
  ])
  AC_MSG_CHECKING([for the interpreter of the xsite command])
  AS_IF([test -n "$LUA"], [AC_MSG_RESULT([$LUA])], [
    LUA=/usr/bin/lua$LUA_VERSION
    AC_MSG_RESULT([none found, using $LUA])
    AS_IF([test "x$with_lua" != xcheck && test "x$with_lua" != xno],
      [AC_MSG_ERROR([--with-lua=$with_lua: no Lua $LUA_VERSION interpreter found (install lua$LUA_VERSION)])],
      [AC_MSG_WARN([no Lua $LUA_VERSION interpreter found: the xsite command will not run (install lua$LUA_VERSION)])])
  ])

  AC_MSG_CHECKING([for the Lua module directory])
  AS_CASE([$with_lua_moddir],
    [default|yes|no], [luadir="\${datadir}/lua/$LUA_VERSION"],
    [luadir=$with_lua_moddir])
  AC_MSG_RESULT([$luadir])

  dnl Headers and library of that version: pkg-config with name fallbacks,
  dnl then a link test.
  x_ac_lua_found=no
  AS_IF([test "x$with_lua" != xno], [
    x_ac_lua_nodot=`printf '%s' $LUA_VERSION | tr -d .`
    x_ac_lua_pc=
    for x_ac_lua_name in lua$LUA_VERSION lua-$LUA_VERSION lua$x_ac_lua_nodot lua; do
      AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists "$x_ac_lua_name" 2>/dev/null], [
        x_ac_lua_mv=`$PKG_CONFIG --modversion "$x_ac_lua_name" 2>/dev/null`
        AS_CASE([$x_ac_lua_mv],
          [$LUA_VERSION|$LUA_VERSION.*], [x_ac_lua_pc=$x_ac_lua_name; break])
      ])
    done
    AC_MSG_CHECKING([for the pkg-config name of Lua $LUA_VERSION])
    AS_IF([test -n "$x_ac_lua_pc"], [
      AC_MSG_RESULT([$x_ac_lua_pc])
      test -n "$LUA_CFLAGS" || LUA_CFLAGS=`$PKG_CONFIG --cflags "$x_ac_lua_pc"`
      test -n "$LUA_LIBS" || LUA_LIBS=`$PKG_CONFIG --libs "$x_ac_lua_pc"`
    ], [
      AC_MSG_RESULT([none])
      test -n "$LUA_CFLAGS" || LUA_CFLAGS="-I/usr/include/lua$LUA_VERSION"
      test -n "$LUA_LIBS" || LUA_LIBS="-llua$LUA_VERSION"
    ])
    x_ac_lua_save_CPPFLAGS=$CPPFLAGS
    x_ac_lua_save_LIBS=$LIBS
    CPPFLAGS="$LUA_CFLAGS $CPPFLAGS"
    LIBS="$LUA_LIBS $LIBS"
    AC_MSG_CHECKING([whether Lua $LUA_VERSION headers and library link])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[
#include <lua.h>
#include <lualib.h>
#include <lauxlib.h>
#if !defined LUA_VERSION_NUM
# error no LUA_VERSION_NUM
#endif
]], [[
lua_State *L = luaL_newstate();
luaL_openlibs(L);
lua_close(L);
]])], [x_ac_lua_found=yes])
    AC_MSG_RESULT([$x_ac_lua_found])
    AS_IF([test "x$x_ac_lua_found" = xyes], [
      AC_COMPUTE_INT([x_ac_lua_num], [LUA_VERSION_NUM], [[#include <lua.h>]], [x_ac_lua_num=0])
      x_ac_lua_want=`printf '%s' $LUA_VERSION | sed 's/\.//; s/^\(.\)\(.\)$/\10\2/'`
      AS_IF([test "x$x_ac_lua_num" != "x$x_ac_lua_want"], [
        x_ac_lua_found=no
        AC_MSG_WARN([lua.h has LUA_VERSION_NUM $x_ac_lua_num, not Lua $LUA_VERSION])
      ])
    ])
    CPPFLAGS=$x_ac_lua_save_CPPFLAGS
    LIBS=$x_ac_lua_save_LIBS
    AS_IF([test "x$x_ac_lua_found" != xyes], [
      LUA_CFLAGS=
      LUA_LIBS=
      AS_IF([test "x$with_lua" != xcheck],
        [AC_MSG_ERROR([--with-lua=$with_lua: Lua $LUA_VERSION headers/library not usable (install liblua$LUA_VERSION-dev)])],
        [AC_MSG_WARN([Lua $LUA_VERSION headers/library not found: no embedded Lua in C components (install liblua$LUA_VERSION-dev)])])
    ])
  ])

  AC_SUBST([LUA_VERSION])
  AC_SUBST([LUA_CFLAGS])
  AC_SUBST([LUA_LIBS])
  AC_SUBST([luadir])
  AC_SUBST([SLURM_LUA_LIB])
  AC_SUBST([SLURM_LUA_VERSION])
  AM_CONDITIONAL([HAVE_LUA], [test "x$x_ac_lua_found" = xyes])
])
