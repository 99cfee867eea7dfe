/*
 * remote.h: slurmstepd (remote context): the XSITE_* variables of the tasks.
 */
#ifndef XSITE_REMOTE_H
#define XSITE_REMOTE_H

#include <slurm/spank.h>

#include "config.h"

/* user_init: compute and export XSITE_* (never fails: see remote.c). */
int xsite_remote_user_init(spank_t sp, const struct xsite_config *cfg);


#endif /* XSITE_REMOTE_H */
