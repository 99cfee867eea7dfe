/*
 * report.h: the per-job cross-site record in ReportDir (see report.c).
 */
#ifndef XSITE_REPORT_H
#define XSITE_REPORT_H

#include <stdint.h>
#include <sys/types.h>

struct xsite_lua;

/* What the record needs to know of the step. */
struct xsite_report_step {
	uint32_t jobid;
	char step[16];		/* "0", "1", ..., "batch", "interactive" */
	uid_t uid;
	gid_t gid;
};

/*
 * The name of a step for records and files; NULL for the extern step, which
 * runs no tasks of the user's (no record).
 */
const char *xsite_report_step_name(uint32_t stepid, char *buf, size_t len);

/*
 * Make ReportDir/JOBID (root, group of ReportDir, 0750, readable by the
 * job's owner through an ACL) and ReportDir/JOBID/mpi (the owner's, 0700:
 * libxsite writes its traffic record there with the user's rights).  Sets
 * *traffic to the path of this step's traffic record (caller frees).
 */
int xsite_report_prepare(const char *dir, const struct xsite_report_step *st, char **traffic,
			 char **err);

/*
 * At the end of the step (first node): read the step's traffic record (the
 * user's file: not followed if a symlink, only a regular file of the job's
 * owner), add the step to ReportDir/JOBID/report.json (under a lock,
 * written whole to a new file and renamed) through xsite.spank.step_end.
 * *text is the job's record as written (caller frees); the lock is still
 * held through *lockfd (caller closes it once the user's copy is written,
 * so that copies land in the order of the records).
 */
int xsite_report_finish(struct xsite_lua *x, const char *dir, const struct xsite_report_step *st,
			const char *start_json, char **text, int *lockfd, char **err);

/*
 * The user's copy (--xsite-report): written by a child process with the
 * job owner's uid, gid and groups.  path: "." or a directory (the file is
 * then xsite-report-JOBID.json in it) or a file; "%j" is the job id; a
 * relative path is taken from cwd.  A symlink at the file's place is
 * replaced, never followed.
 */
int xsite_report_copy(const char *text, const char *path, const char *cwd,
		      const struct xsite_report_step *st, char **err);

#endif /* XSITE_REPORT_H */
