##*****************************************************************************
#  X_AC_PMIX
#
#  Find PMIx (pkg-config pmix; else under --with-pmix=PATH, else Debian's
#  private prefix /usr/lib/<multiarch>/pmix2 and /usr).
#
#    --with-pmix[=PATH]        require PMIx (installed under PATH)
#                              --without-pmix skips the check
#
#  Substitutes PMIX_CFLAGS, PMIX_LIBS and PMIX_VERSION (from pmix.h); sets
#  the automake conditional HAVE_PMIX.
##*****************************************************************************

AC_DEFUN([X_AC_PMIX], [
  AC_ARG_WITH([pmix],
    [AS_HELP_STRING([--with-pmix@<:@=PATH@:>@],
      [use PMIx (installed under PATH) @<:@default=check@:>@])],
    [], [with_pmix=check])

  x_ac_pmix_found=no
  AS_IF([test "x$with_pmix" != xno], [
    x_ac_pmix_prefixes=
    AS_CASE([$with_pmix],
      [yes|check], [
        PKG_CHECK_MODULES([PMIX], [pmix], [], [
          x_ac_pmix_multiarch=`$CC -print-multiarch 2>/dev/null`
          x_ac_pmix_prefixes="/usr/lib/$x_ac_pmix_multiarch/pmix2 /usr/lib64/pmix /usr/local /usr"
        ])],
      [x_ac_pmix_prefixes=$with_pmix])

    x_ac_pmix_save_CPPFLAGS=$CPPFLAGS
    x_ac_pmix_save_LIBS=$LIBS
    AC_MSG_CHECKING([whether a PMIx program links])
    for x_ac_pmix_p in "" $x_ac_pmix_prefixes; do
      AS_IF([test -n "$x_ac_pmix_p"], [
        AS_IF([test -r "$x_ac_pmix_p/include/pmix.h"], [], [continue])
        PMIX_CFLAGS="-I$x_ac_pmix_p/include"
        x_ac_pmix_libdir=$x_ac_pmix_p/lib
        test -d "$x_ac_pmix_p/lib64" && x_ac_pmix_libdir=$x_ac_pmix_p/lib64
        PMIX_LIBS="-L$x_ac_pmix_libdir -Wl,-rpath,$x_ac_pmix_libdir -lpmix"
      ], [
        dnl the first round: whatever pkg-config said
        AS_IF([test -z "$PMIX_LIBS"], [continue])
      ])
      CPPFLAGS="$PMIX_CFLAGS $x_ac_pmix_save_CPPFLAGS"
      LIBS="$PMIX_LIBS $x_ac_pmix_save_LIBS"
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <pmix.h>]], [[
const char *v = PMIx_Get_version();
(void) v;
]])], [x_ac_pmix_found=yes; break])
    done
    AC_MSG_RESULT([$x_ac_pmix_found])
    AS_IF([test "x$x_ac_pmix_found" = xyes], [
      AC_MSG_CHECKING([the PMIx version])
      AC_COMPUTE_INT([x_ac_pmix_major], [PMIX_VERSION_MAJOR], [[#include <pmix.h>]], [x_ac_pmix_major=])
      AS_IF([test -n "$x_ac_pmix_major"], [
        AC_COMPUTE_INT([x_ac_pmix_minor], [PMIX_VERSION_MINOR], [[#include <pmix.h>]], [x_ac_pmix_minor=0])
        AC_COMPUTE_INT([x_ac_pmix_release], [PMIX_VERSION_RELEASE], [[#include <pmix.h>]], [x_ac_pmix_release=0])
        PMIX_VERSION="$x_ac_pmix_major.$x_ac_pmix_minor.$x_ac_pmix_release"
      ], [PMIX_VERSION=unknown])
      AC_MSG_RESULT([$PMIX_VERSION])
    ])
    CPPFLAGS=$x_ac_pmix_save_CPPFLAGS
    LIBS=$x_ac_pmix_save_LIBS

    AS_IF([test "x$x_ac_pmix_found" != xyes], [
      PMIX_CFLAGS=
      PMIX_LIBS=
      AS_IF([test "x$with_pmix" != xcheck],
        [AC_MSG_ERROR([--with-pmix=$with_pmix: PMIx not usable (install libpmix-dev)])],
        [AC_MSG_WARN([PMIx not found: built without it (install libpmix-dev)])])
    ])
  ])

  AC_SUBST([PMIX_CFLAGS])
  AC_SUBST([PMIX_LIBS])
  AC_SUBST([PMIX_VERSION])
  AM_CONDITIONAL([HAVE_PMIX], [test "x$x_ac_pmix_found" = xyes])
])
