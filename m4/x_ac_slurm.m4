##*****************************************************************************
#  X_AC_SLURM
#
#  Find the Slurm headers (slurm/spank.h), Slurm's version and Slurm's plugin
#  directory.
#
#    --with-slurm[=PATH]       Slurm installed under PATH (PATH/include);
#                              --without-slurm skips the check
#    --with-slurmplugdir=DIR   where SPANK plugins are installed
#
#  Sets and substitutes SLURM_CPPFLAGS, SLURM_VERSION (e.g. 22.05.8),
#  SLURM_VERSION_NUMBER (e.g. 0x160508), SLURM_VERSION_MAJOR_MINOR (22.05),
#  slurmplugdir; defines XSITE_SLURM_VERSION in config.h; sets the automake
#  conditional HAVE_SLURM.
##*****************************************************************************

AC_DEFUN([X_AC_SLURM], [
  AC_ARG_WITH([slurm],
    [AS_HELP_STRING([--with-slurm@<:@=PATH@:>@],
      [Slurm installation prefix (PATH/include/slurm/spank.h) @<:@default=check@:>@])],
    [], [with_slurm=check])
  AC_ARG_WITH([slurmplugdir],
    [AS_HELP_STRING([--with-slurmplugdir=DIR],
      [Slurm plugin directory for the SPANK plugin @<:@default=found from Slurm@:>@])],
    [], [with_slurmplugdir=check])

  x_ac_slurm_found=no
  SLURM_CPPFLAGS=
  SLURM_VERSION=
  SLURM_VERSION_NUMBER=
  SLURM_VERSION_MAJOR_MINOR=

  AS_IF([test "x$with_slurm" != xno], [
    AS_CASE([$with_slurm],
      [yes|check], [
        dnl Some distributions (RHEL's slurm-devel) ship slurm.pc; Debian does not.
        PKG_CHECK_MODULES([SLURM], [slurm],
          [SLURM_CPPFLAGS=$SLURM_CFLAGS], [SLURM_CPPFLAGS=])],
      [AS_IF([test -r "$with_slurm/include/slurm/spank.h"], [],
         [AC_MSG_ERROR([--with-slurm=$with_slurm: no $with_slurm/include/slurm/spank.h])])
       SLURM_CPPFLAGS="-I$with_slurm/include"])

    x_ac_slurm_save_CPPFLAGS=$CPPFLAGS
    CPPFLAGS="$SLURM_CPPFLAGS $CPPFLAGS"
    AC_MSG_CHECKING([for slurm/spank.h])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[
#include <stddef.h>
#include <slurm/spank.h>
SPANK_PLUGIN(xsite_conftest, 1);
]], [[
spank_err_t rc = spank_option_register(NULL, NULL);
(void) rc;
]])], [x_ac_slurm_found=yes])
    AC_MSG_RESULT([$x_ac_slurm_found])

    AS_IF([test "x$x_ac_slurm_found" = xyes], [
      AC_COMPUTE_INT([x_ac_slurm_num], [SLURM_VERSION_NUMBER],
        [[#include <slurm/slurm_version.h>]], [x_ac_slurm_num=])
      AS_IF([test -n "$x_ac_slurm_num"], [
        x_ac_slurm_major=`expr $x_ac_slurm_num / 65536`
        x_ac_slurm_minor=`expr $x_ac_slurm_num / 256 % 256`
        x_ac_slurm_micro=`expr $x_ac_slurm_num % 256`
        SLURM_VERSION=`printf '%d.%02d.%d' $x_ac_slurm_major $x_ac_slurm_minor $x_ac_slurm_micro`
        SLURM_VERSION_MAJOR_MINOR=`printf '%d.%02d' $x_ac_slurm_major $x_ac_slurm_minor`
        SLURM_VERSION_NUMBER=`printf '0x%06x' $x_ac_slurm_num`
      ])
      AC_MSG_CHECKING([for the Slurm version])
      AS_IF([test -n "$SLURM_VERSION"],
        [AC_MSG_RESULT([$SLURM_VERSION])
         AC_DEFINE_UNQUOTED([XSITE_SLURM_VERSION], ["$SLURM_VERSION"],
           [Slurm release xsite is built against])],
        [AC_MSG_RESULT([unknown])
         AC_MSG_WARN([cannot read SLURM_VERSION_NUMBER from slurm/slurm_version.h])])
    ])
    CPPFLAGS=$x_ac_slurm_save_CPPFLAGS

    AS_IF([test "x$x_ac_slurm_found" != xyes], [
      AS_IF([test "x$with_slurm" != xcheck],
        [AC_MSG_ERROR([--with-slurm given but slurm/spank.h was not usable (install libslurm-dev or slurm-devel, or give --with-slurm=PATH)])],
        [AC_MSG_WARN([slurm/spank.h not found: the SPANK plugin will not be built (install libslurm-dev)])])
    ])
  ])

  dnl Slurm's plugin directory: where job_submit_lua.so & co. live.
  dnl x_ac_slurm_plugdir_found is what is installed here, whatever
  dnl --with-slurmplugdir says (X_AC_LUA looks there for job_submit_lua.so).
  x_ac_slurm_plugdir_found=
  x_ac_slurm_multiarch=`$CC -print-multiarch 2>/dev/null`
  x_ac_slurm_prefixes=
  AS_CASE([$with_slurm],
    [check|yes|no], [],
    [x_ac_slurm_prefixes="$with_slurm"])
  x_ac_slurm_prefixes="$x_ac_slurm_prefixes /usr /usr/local /opt/slurm"
  for x_ac_slurm_p in $x_ac_slurm_prefixes; do
    for x_ac_slurm_d in \
        "$x_ac_slurm_p/lib/$x_ac_slurm_multiarch/slurm-wlm" \
        "$x_ac_slurm_p/lib/$x_ac_slurm_multiarch/slurm" \
        "$x_ac_slurm_p/lib64/slurm" \
        "$x_ac_slurm_p/lib/slurm-wlm" \
        "$x_ac_slurm_p/lib/slurm"; do
      AS_IF([ls "$x_ac_slurm_d"/select_*.so "$x_ac_slurm_d"/auth_*.so >/dev/null 2>&1],
        [x_ac_slurm_plugdir_found=$x_ac_slurm_d; break 2])
    done
  done
  AC_MSG_CHECKING([for Slurm's plugin directory])
  AS_CASE([$with_slurmplugdir],
    [check|yes|no], [
      AS_IF([test -n "$x_ac_slurm_plugdir_found"], [
        slurmplugdir=$x_ac_slurm_plugdir_found
        AC_MSG_RESULT([$slurmplugdir])
      ], [
        dnl Not found: a place under our own prefix, so that installing never
        dnl writes outside it.
        slurmplugdir='${libdir}/slurm'
        AC_MSG_RESULT([not found, using $slurmplugdir])
        AC_MSG_WARN([Slurm's plugin directory not found: give --with-slurmplugdir=DIR])
      ])
    ],
    [slurmplugdir=$with_slurmplugdir
     AC_MSG_RESULT([$slurmplugdir (--with-slurmplugdir)])])

  dnl libslurmfull (Slurm's internal library, beside its plugins): the SPANK
  dnl plugin's unit tests call spank_option_register and slurm_error from it.
  SLURMFULL_LIBS=
  AS_IF([test -n "$x_ac_slurm_plugdir_found" && ls "$x_ac_slurm_plugdir_found"/libslurmfull.so >/dev/null 2>&1],
    [SLURMFULL_LIBS="-L$x_ac_slurm_plugdir_found -lslurmfull -Wl,-rpath,$x_ac_slurm_plugdir_found"])
  AC_SUBST([SLURMFULL_LIBS])
  AM_CONDITIONAL([HAVE_SLURMFULL], [test -n "$SLURMFULL_LIBS"])

  AC_SUBST([SLURM_CPPFLAGS])
  AC_SUBST([SLURM_VERSION])
  AC_SUBST([SLURM_VERSION_NUMBER])
  AC_SUBST([SLURM_VERSION_MAJOR_MINOR])
  AC_SUBST([slurmplugdir])
  AM_CONDITIONAL([HAVE_SLURM], [test "x$x_ac_slurm_found" = xyes])
])
