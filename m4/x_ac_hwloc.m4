##*****************************************************************************
#  X_AC_HWLOC
#
#  Find hwloc (pkg-config hwloc, else -lhwloc under --with-hwloc=PATH).
#
#    --with-hwloc[=PATH]       require hwloc (installed under PATH)
#                              --without-hwloc skips the check
#
#  Substitutes HWLOC_CFLAGS, HWLOC_LIBS; sets the automake conditional
#  HAVE_HWLOC.
##*****************************************************************************

AC_DEFUN([X_AC_HWLOC], [
  AC_ARG_WITH([hwloc],
    [AS_HELP_STRING([--with-hwloc@<:@=PATH@:>@],
      [use hwloc (installed under PATH) @<:@default=check@:>@])],
    [], [with_hwloc=check])

  x_ac_hwloc_found=no
  AS_IF([test "x$with_hwloc" != xno], [
    AS_CASE([$with_hwloc],
      [yes|check], [
        PKG_CHECK_MODULES([HWLOC], [hwloc], [],
          [test -n "$HWLOC_LIBS" || HWLOC_LIBS=-lhwloc])],
      [AS_IF([test -r "$with_hwloc/include/hwloc.h"], [],
         [AC_MSG_ERROR([--with-hwloc=$with_hwloc: no $with_hwloc/include/hwloc.h])])
       HWLOC_CFLAGS="-I$with_hwloc/include"
       HWLOC_LIBS="-L$with_hwloc/lib -lhwloc"])

    x_ac_hwloc_save_CPPFLAGS=$CPPFLAGS
    x_ac_hwloc_save_LIBS=$LIBS
    CPPFLAGS="$HWLOC_CFLAGS $CPPFLAGS"
    LIBS="$HWLOC_LIBS $LIBS"
    AC_MSG_CHECKING([whether an hwloc program links])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <hwloc.h>]], [[
hwloc_topology_t t;
if (hwloc_topology_init(&t) == 0)
  hwloc_topology_destroy(t);
]])], [x_ac_hwloc_found=yes])
    AC_MSG_RESULT([$x_ac_hwloc_found])
    CPPFLAGS=$x_ac_hwloc_save_CPPFLAGS
    LIBS=$x_ac_hwloc_save_LIBS

    AS_IF([test "x$x_ac_hwloc_found" != xyes], [
      HWLOC_CFLAGS=
      HWLOC_LIBS=
      AS_IF([test "x$with_hwloc" != xcheck],
        [AC_MSG_ERROR([--with-hwloc=$with_hwloc: hwloc not usable (install libhwloc-dev)])],
        [AC_MSG_WARN([hwloc not found: built without it (install libhwloc-dev)])])
    ])
  ])

  AC_SUBST([HWLOC_CFLAGS])
  AC_SUBST([HWLOC_LIBS])
  AM_CONDITIONAL([HAVE_HWLOC], [test "x$x_ac_hwloc_found" = xyes])
])
