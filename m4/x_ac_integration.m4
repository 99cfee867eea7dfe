##*****************************************************************************
#  X_AC_INTEGRATION
#
#  Whether "make check" runs the integration suite (tests/integration/*.bats)
#  against the two-site testbed (tests/testbed/xsite-testbed), which needs
#  root, munge, Slurm's daemons and MPI.
#
#    --enable-integration      run it; an error if its needs are not met
#    --enable-integration=auto run it when configure runs as root and
#                              slurmctld, slurmd, munged and mpicc exist
#    --disable-integration     do not (its tests are reported as SKIP)
#    default: no.  The suite runs only when asked (tests/run-all asks as
#    root): a distribution's package build runs configure and make check as
#    root in a chroot that may have the daemons but no network namespaces.
#
#  Call after X_AC_MPI.  Substitutes XSITE_INTEGRATION (yes/no) and
#  XSITE_INTEGRATION_WHY (the reason when no); sets the automake conditional
#  ENABLE_INTEGRATION.
##*****************************************************************************

AC_DEFUN([X_AC_INTEGRATION], [
  AC_ARG_ENABLE([integration],
    [AS_HELP_STRING([--enable-integration],
      [run the two-site testbed integration tests in make check (needs root, munge, slurmctld, slurmd, mpicc; auto: when these are met) @<:@default=no@:>@])],
    [], [enable_integration=no])

  x_ac_int_path=$PATH:/usr/sbin:/sbin:/usr/local/sbin
  AC_PATH_PROG([SLURMCTLD], [slurmctld], [], [$x_ac_int_path])
  AC_PATH_PROG([SLURMD], [slurmd], [], [$x_ac_int_path])
  AC_PATH_PROG([MUNGED], [munged], [], [$x_ac_int_path])

  x_ac_int_missing=
  test -n "$SLURMCTLD" || x_ac_int_missing="$x_ac_int_missing slurmctld"
  test -n "$SLURMD" || x_ac_int_missing="$x_ac_int_missing slurmd"
  test -n "$MUNGED" || x_ac_int_missing="$x_ac_int_missing munged"
  test -n "$MPICC" || x_ac_int_missing="$x_ac_int_missing mpicc"
  test -n "$BATS" || x_ac_int_missing="$x_ac_int_missing bats"
  x_ac_int_unmet=
  AS_IF([test "`id -u`" != 0], [x_ac_int_unmet="configure did not run as root"])
  AS_IF([test -n "$x_ac_int_missing"],
    [x_ac_int_unmet="${x_ac_int_unmet:+$x_ac_int_unmet; }missing:$x_ac_int_missing"])

  AC_MSG_CHECKING([whether to run the integration tests])
  XSITE_INTEGRATION_WHY=
  AS_CASE([$enable_integration],
    [yes], [
      AS_IF([test -n "$x_ac_int_unmet"],
        [AC_MSG_RESULT([no])
         AC_MSG_ERROR([--enable-integration: $x_ac_int_unmet (run tests/install-deps and configure as root)])])
      XSITE_INTEGRATION=yes],
    [no], [
      XSITE_INTEGRATION=no
      XSITE_INTEGRATION_WHY="not asked for: configure --enable-integration runs them"],
    [auto], [
      AS_IF([test -z "$x_ac_int_unmet"], [XSITE_INTEGRATION=yes], [
        XSITE_INTEGRATION=no
        XSITE_INTEGRATION_WHY="not enabled: $x_ac_int_unmet (see configure --enable-integration)"
      ])],
    [AC_MSG_ERROR([--enable-integration=$enable_integration: invalid value: give yes, no or auto])])
  AC_MSG_RESULT([$XSITE_INTEGRATION${XSITE_INTEGRATION_WHY:+ ($XSITE_INTEGRATION_WHY)}])

  AC_SUBST([XSITE_INTEGRATION])
  AC_SUBST([XSITE_INTEGRATION_WHY])
  AM_CONDITIONAL([ENABLE_INTEGRATION], [test "x$XSITE_INTEGRATION" = xyes])
])
