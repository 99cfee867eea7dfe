/*
 * remote.h: slurmstepd (remote context): the XSITE_* variables of the tasks.
 */
#ifndef XSITE_REMOTE_H
#define XSITE_REMOTE_H

#include <slurm/spank.h>

#include "config.h"

/* user_init: compute and export XSITE_* (never fails: see remote.c). */
int xsite_remote_user_init(spank_t sp, const struct xsite_config *cfg);

/* init_post_opt (root): the job's directory in ReportDir, the start of the step's record. */
void xsite_remote_post_opt(spank_t sp, const struct xsite_config *cfg);

/* exit: the step's record into ReportDir, and the user's copy (never fails). */
void xsite_remote_exit(const struct xsite_config *cfg);

/*
 * job_epilog (job script context, root, each node of the job once it has
 * ended): the job's mpi/ in ReportDir becomes root's again, and ReportDir is
 * pruned (ReportRetention) with bounded work.  Never fails.
 */
void xsite_remote_job_epilog(spank_t sp, const struct xsite_config *cfg);


#endif /* XSITE_REMOTE_H */
