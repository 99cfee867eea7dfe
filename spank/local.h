/*
 * local.h: srun (local context).
 */
#ifndef XSITE_LOCAL_H
#define XSITE_LOCAL_H

#include <slurm/spank.h>

#include "args.h"
#include "config.h"

/* init_post_opt of srun (see local.c). */
int xsite_local_post_opt(spank_t sp, const struct xsite_config *cfg, struct xsite_args *a);

#endif /* XSITE_LOCAL_H */
