/*
 * allocator.h: sbatch and salloc (allocator context), and srun (local
 * context), which share the work: check the flags, hand them to slurmctld.
 */
#ifndef XSITE_ALLOCATOR_H
#define XSITE_ALLOCATOR_H

#include <slurm/spank.h>

#include "args.h"
#include "config.h"

/*
 * init_post_opt of sbatch, salloc and srun: apply the environment twins,
 * check every value through the Lua library, and put the effective values
 * into the job control environment (job_desc.spank_job_env in slurmctld).
 * Returns -1 (the command exits before anything is submitted) on a bad value.
 */
int xsite_allocator_post_opt(spank_t sp, const struct xsite_config *cfg, struct xsite_args *a);

#endif /* XSITE_ALLOCATOR_H */
