##*****************************************************************************
#  X_AC_MPI
#
#  Find an MPI C compiler wrapper (mpicc) and the flags to build against MPI
#  with the ordinary compiler (pkg-config ompi-c / mpich / mpi-c / mpi, else
#  the wrapper's --showme / -show).
#
#    --with-mpi[=MPICC]        require MPI; MPICC names the wrapper
#                              --without-mpi skips the check
#
#  Substitutes MPICC, MPI_CFLAGS, MPI_LIBS and MPI_IMPL_VERSION (e.g.
#  "Open MPI 5.0.7", from mpi.h); sets the automake conditional HAVE_MPI.
##*****************************************************************************

AC_DEFUN([X_AC_MPI], [
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi@<:@=MPICC@:>@],
      [build the MPI wrappers, with the MPI compiler wrapper MPICC @<:@default=check@:>@])],
    [], [with_mpi=check])
  AC_ARG_VAR([MPICC], [MPI C compiler wrapper])

  x_ac_mpi_found=no
  AS_IF([test "x$with_mpi" != xno], [
    AS_CASE([$with_mpi],
      [yes|check], [AC_PATH_PROGS([MPICC], [mpicc mpicc.openmpi mpicc.mpich])],
      [AS_CASE([$with_mpi],
        [/*], [MPICC=$with_mpi],
        [AC_PATH_PROG([MPICC], [$with_mpi])])])

    AS_IF([test -z "$MPI_CFLAGS$MPI_LIBS"], [
      for x_ac_mpi_pc in ompi-c mpich mpi-c mpi; do
        AS_IF([test -n "$PKG_CONFIG" && $PKG_CONFIG --exists $x_ac_mpi_pc 2>/dev/null], [
          MPI_CFLAGS=`$PKG_CONFIG --cflags $x_ac_mpi_pc`
          MPI_LIBS=`$PKG_CONFIG --libs $x_ac_mpi_pc`
          break
        ])
      done
    ])
    AS_IF([test -z "$MPI_CFLAGS$MPI_LIBS" && test -n "$MPICC" && test -x "$MPICC"], [
      dnl Open MPI: --showme:compile / --showme:link; MPICH: -compile-info / -link-info
      MPI_CFLAGS=`$MPICC --showme:compile 2>/dev/null` || MPI_CFLAGS=
      MPI_LIBS=`$MPICC --showme:link 2>/dev/null` || MPI_LIBS=
      AS_IF([test -z "$MPI_CFLAGS$MPI_LIBS"], [
        MPI_CFLAGS=`$MPICC -compile-info 2>/dev/null | cut -d' ' -f2-` || MPI_CFLAGS=
        MPI_LIBS=`$MPICC -link-info 2>/dev/null | cut -d' ' -f2-` || MPI_LIBS=
      ])
    ])

    x_ac_mpi_save_CPPFLAGS=$CPPFLAGS
    x_ac_mpi_save_LIBS=$LIBS
    CPPFLAGS="$MPI_CFLAGS $CPPFLAGS"
    LIBS="$MPI_LIBS $LIBS"
    AC_MSG_CHECKING([whether an MPI program links])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]], [[
int rank;
MPI_Init(0, 0);
PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
MPI_Finalize();
]])], [x_ac_mpi_found=yes])
    AC_MSG_RESULT([$x_ac_mpi_found])
    dnl which MPI, from its own header: Open MPI's version, else MPICH's
    AS_IF([test "x$x_ac_mpi_found" = xyes], [
      AC_MSG_CHECKING([the MPI implementation])
      AC_COMPUTE_INT([x_ac_ompi_major], [OMPI_MAJOR_VERSION], [[#include <mpi.h>]], [x_ac_ompi_major=])
      AS_IF([test -n "$x_ac_ompi_major"], [
        AC_COMPUTE_INT([x_ac_ompi_minor], [OMPI_MINOR_VERSION], [[#include <mpi.h>]], [x_ac_ompi_minor=0])
        AC_COMPUTE_INT([x_ac_ompi_release], [OMPI_RELEASE_VERSION], [[#include <mpi.h>]], [x_ac_ompi_release=0])
        MPI_IMPL_VERSION="Open MPI $x_ac_ompi_major.$x_ac_ompi_minor.$x_ac_ompi_release"
        AS_IF([test "$x_ac_ompi_major" -lt 4 || { test "$x_ac_ompi_major" -eq 4 && test "$x_ac_ompi_minor" -lt 1; }],
          [AC_MSG_WARN([$MPI_IMPL_VERSION: xsite is tested with Open MPI 4.1 and 5.0 (docs/compat.md)])])
      ], [
        MPI_IMPL_VERSION="not Open MPI (xsite-run's tuning and rankfiles are Open MPI's)"
      ])
      AC_MSG_RESULT([$MPI_IMPL_VERSION])
    ])
    CPPFLAGS=$x_ac_mpi_save_CPPFLAGS
    LIBS=$x_ac_mpi_save_LIBS

    AS_IF([test "x$x_ac_mpi_found" = xyes && test -z "$MPICC"], [
      x_ac_mpi_found=no
      AC_MSG_WARN([MPI headers found but no mpicc wrapper])
    ])
    AS_IF([test "x$x_ac_mpi_found" != xyes], [
      MPI_CFLAGS=
      MPI_LIBS=
      AS_IF([test "x$with_mpi" != xcheck],
        [AC_MSG_ERROR([--with-mpi=$with_mpi: no working MPI (install libopenmpi-dev and openmpi-bin)])],
        [AC_MSG_WARN([no working MPI: the MPI wrappers will not be built (install libopenmpi-dev)])])
    ])
  ])

  AC_SUBST([MPICC])
  AC_SUBST([MPI_CFLAGS])
  AC_SUBST([MPI_LIBS])
  AC_SUBST([MPI_IMPL_VERSION])
  AM_CONDITIONAL([HAVE_MPI], [test "x$x_ac_mpi_found" = xyes])
])
