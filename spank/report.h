/*
 * report.h: the per-job cross-site record in ReportDir (see report.c).
 */
#ifndef XSITE_REPORT_H
#define XSITE_REPORT_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

struct xsite_lua;

/* How long root waits for the --xsite-report writer (the user's process). */
#define XSITE_COPY_TIMEOUT_MS 20000
/* How long a step waits for the job's record lock (held by another step). */
#define XSITE_LOCK_TIMEOUT_MS 60000
/* How long a step waits for ReportDir's lock (held while a job directory is made). */
#define XSITE_SPOOL_LOCK_TIMEOUT_MS 10000
/*
 * How long the epilog waits for the lock of a job's slurm-nodes.json (only
 * the epilogs of a heterogeneous job's components take it): well under any
 * PrologEpilogTimeout, past which slurmd kills the epilog and drains the
 * node.
 */
#define XSITE_EPILOG_LOCK_TIMEOUT_MS 10000
/* The largest report.json root reads back (a record keeps at most 1000 steps). */
#define XSITE_MAX_RECORD (64L << 20)
/* The largest slurm-nodes.json root reads back (as xsite.report.MAX_SLURM_FILE). */
#define XSITE_MAX_SLURM_NODES (9L << 20)
/* Per call of xsite_report_prune: entries of ReportDir looked at; entries of its trees looked at. */
#define XSITE_PRUNE_SCAN 256
#define XSITE_PRUNE_FILES 4096
/* Directories inside each other that pruning follows (deeper: moved up first). */
#define XSITE_PRUNE_DEPTH 8
/*
 * The least time a job directory whose end was never seen stays unchanged
 * before pruning takes it (and twice ReportRetention): its job may still be
 * running, in one long step that touches nothing there.
 */
#define XSITE_PRUNE_UNENDED (30L * 86400)

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
 * job's owner through an ACL, with an identity stamp: the owner's uid) and
 * ReportDir/JOBID/mpi (the owner's, 0700: libxsite writes its traffic record
 * there with the user's rights).  A JOBID directory of an earlier job with
 * this id (another uid, or a job that has ended) is moved aside first
 * (.stale.JOBID.XXXXXXXXXX).  Sets *traffic to the path of this step's
 * traffic record (caller frees).  Returns 0; 1 with *err a message to log
 * (a missing ACL, a directory moved aside); -1 with *err on failure.
 */
int xsite_report_prepare(const char *dir, const struct xsite_report_step *st, char **traffic,
			 char **err);

/*
 * At the end of the step (first node): read the step's traffic record (the
 * user's file: not followed if a symlink, only a regular file of the job's
 * owner on ReportDir's file system, at most max_traffic bytes: a larger one
 * is not read), add the step to ReportDir/JOBID/report.json (under a lock
 * waited for at most XSITE_LOCK_TIMEOUT_MS, written whole to a new file and
 * renamed) through xsite.spank.step_end.  *text is the job's record as
 * written (caller frees).
 */
int xsite_report_finish(struct xsite_lua *x, const char *dir, const struct xsite_report_step *st,
			const char *start_json, long max_traffic, char **text, char **err);

/*
 * The user's copy (--xsite-report): written by a child process with the
 * job owner's uid, gid and groups.  path: "." or a directory (the file is
 * then xsite-report-JOBID.json in it) or a file; "%j" is the job id; a
 * relative path is taken from cwd.  The file is written to a new name made
 * by mkostemp in the target's directory, then renamed over the target: a
 * symlink there is replaced, never followed.  Root waits for the writer at
 * most timeout_ms (the user may stop or kill it): then it is killed, and
 * the copy is lost (*err says so); the step goes on.
 */
int xsite_report_copy(const char *text, const char *path, const char *cwd,
		      const struct xsite_report_step *st, int timeout_ms, char **err);

/*
 * The copy of the record this step wrote (text, from xsite_report_finish),
 * in turn with the job's other steps: their copies are written one at a
 * time (ReportDir/JOBID/.copy, waited for at most timeout_ms + 3 s), and
 * only while the record is still text.  A step that finds a later step's
 * record leaves the copy to that step, so the copy the user keeps is of the
 * last record, whichever writer ran last.  Returns 0 (written), 1 (left to
 * the later step), or -1 with *err.
 */
int xsite_report_deliver(const char *dir, const struct xsite_report_step *st, const char *text,
			 const char *path, const char *cwd, int timeout_ms, char **err);

/* What xsite_child_wait saw. */
enum xsite_wait {
	XSITE_WAIT_EXITED,	/* the child exited (*status), its message in msg */
	XSITE_WAIT_KILLED,	/* past the deadline: killed with SIGKILL and reaped */
	XSITE_WAIT_LOST,	/* past the deadline: killed, but not reaped within 2 s */
};

/*
 * Wait for child pid, reading its message from the pipe fd (at most len - 1
 * bytes kept, NUL-terminated), for at most timeout_ms in all; past it, kill
 * the child (SIGKILL works on a stopped process) and reap it.
 */
enum xsite_wait xsite_child_wait(pid_t pid, int fd, int timeout_ms, char *msg, size_t len,
				 int *status);

/*
 * When the job has ended on this node (job_epilog): the job's mpi/ becomes
 * root's again (0700, its ACLs removed), so its owner can no longer write
 * there, and the identity stamp says the job ended.  Nothing when this node
 * has no directory of the job, or the directory is another job's.
 * Returns 0; 1 with *err a message to log; -1 with *err on failure.
 */
int xsite_report_job_end(const char *dir, uint32_t jobid, uid_t uid, char **err);

/*
 * When the job has ended (job_epilog, the first node of the job or of one of
 * its components): Slurm's node list of component (the job itself, or a
 * component of heterogeneous job jobid), as slurmd gave it to the epilog,
 * added to the job's ReportDir/JOBID/slurm-nodes.json (beside the record,
 * shared with the owner as the record is) through xsite.spank.slurm_nodes,
 * under a lock of its own that no step takes (JOBID/.nodes, waited for at
 * most XSITE_EPILOG_LOCK_TIMEOUT_MS),
 * written whole to a new file and renamed; with or without a record yet.
 * Nothing when no step made the directory; it must be the job's (its
 * stamp).  Returns 0; 1 with *err a message to log; -1 with *err on failure.
 */
int xsite_report_slurm_nodes(struct xsite_lua *x, const char *dir, uint32_t jobid, uid_t uid,
			     uint32_t component, const char *nodes, char **err);

/* What a call of xsite_report_prune did. */
struct xsite_prune {
	unsigned scanned;	/* entries of ReportDir looked at */
	unsigned removed;	/* job directories removed whole */
	unsigned files;		/* files and directories removed */
	unsigned kept;		/* directories of users but the job's owner and root, and mounts, left in place */
	int wrapped;		/* the scan reached the end of ReportDir (next call starts over) */
};

/*
 * ReportRetention: remove from ReportDir the job directories that have not
 * changed for retention seconds (the job has ended; twice that, and at least
 * XSITE_PRUNE_UNENDED, when no end was seen), and the ones moved aside.  Bounded work per call: at most
 * XSITE_PRUNE_SCAN entries looked at, XSITE_PRUNE_FILES files removed; the
 * next call goes on where this one stopped (ReportDir/.prune).  Symbolic
 * links are removed, never followed; no other file system is entered; a
 * directory of anyone but the job's owner and root (one the owner moved
 * into the job's tree) is neither entered nor removed, and with it the
 * tree stays, moved aside as .kept.UID.X, never due (done->kept).  Every
 * entry looked at counts against the bound.  retention 0: nothing is removed.  Returns 0, or
 * -1 with *err.
 */
int xsite_report_prune(const char *dir, long retention, time_t now, struct xsite_prune *done,
		       char **err);

#endif /* XSITE_REPORT_H */
