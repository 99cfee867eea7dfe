# X_AC_ACL: libacl, with which the SPANK plugin gives a job's owner read
# access to the job's record in ReportDir (a POSIX ACL naming one user on a
# file of root's).  Needed with the plugin (HAVE_SLURM); sets ACL_LIBS.
AC_DEFUN([X_AC_ACL], [
  AC_REQUIRE([X_AC_SLURM])
  ACL_LIBS=
  AS_IF([test "x$x_ac_slurm_found" = xyes], [
    AC_CHECK_HEADERS([sys/acl.h], [],
      [AC_MSG_ERROR([sys/acl.h not found: the SPANK plugin needs libacl (install libacl1-dev or libacl-devel)])])
    AC_CHECK_LIB([acl], [acl_set_fd], [ACL_LIBS=-lacl],
      [AC_MSG_ERROR([libacl not found: the SPANK plugin needs it (install libacl1-dev or libacl-devel)])])
  ])
  AC_SUBST([ACL_LIBS])
])
