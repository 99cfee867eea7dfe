/*
 * local.c: srun (local context).
 *
 * An srun that creates its own job does what sbatch does (allocator.c).
 * An srun inside a job (SLURM_JOB_ID set) starts a step of a job that is
 * already placed: the job's flags reach it as inherited values (args.c) and
 * are fine; a flag the user gives srun itself cannot move the job, which the
 * user is told.
 */
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "allocator.h"
#include "local.h"

int xsite_local_post_opt(spank_t sp, const struct xsite_config *cfg, struct xsite_args *a)
{
	const char *job = getenv("SLURM_JOB_ID");
	int f;

	if (xsite_allocator_post_opt(sp, cfg, a) < 0)
		return -1;
	if (job == NULL || job[0] == '\0')
		return 0;
	for (f = 0; f < XSITE_NFLAGS; f++) {
		if (f == XSITE_FLAG_REPORT || a->source[f] != XSITE_SRC_FLAG)
			continue;
		if (a->inherited[f] != NULL && strcmp(a->inherited[f], a->value[f]) == 0)
			continue;
		slurm_spank_log("xsite: --%s=%s: srun starts a step of job %s, which is placed "
				"already; the flag does not move it",
				xsite_flag_info[f].name, a->value[f], job);
	}
	return 0;
}
