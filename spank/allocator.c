/*
 * allocator.c: sbatch and salloc (allocator context); srun uses it too
 * (see local.c).
 *
 * A bad flag stops the command before anything reaches slurmctld.  A broken
 * or missing xsite.conf, or a missing Lua library, is the administrator's
 * problem, not the user's: it is logged and the values are handed on
 * unchecked (slurmctld's job_submit.lua checks them again with its last good
 * configuration).
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include <slurm/spank.h>

#include "allocator.h"
#include "lua_bridge.h"

static int any_set(const struct xsite_args *a)
{
	int f;

	for (f = 0; f < XSITE_NFLAGS; f++) {
		if (a->value[f] != NULL)
			return 1;
	}
	return 0;
}

/* Hand the effective values to slurmctld: SPANK job control environment. */
static int hand_over(spank_t sp, const struct xsite_args *a)
{
	spank_err_t rc;
	int f;

	for (f = 0; f < XSITE_NFLAGS; f++) {
		if (a->value[f] == NULL)
			continue;
		rc = spank_job_control_setenv(sp, xsite_flag_info[f].env, a->value[f], 1);
		if (rc != ESPANK_SUCCESS) {
			slurm_error("xsite: --%s: cannot pass the value to slurmctld: %s",
				    xsite_flag_info[f].name, spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}

int xsite_allocator_post_opt(spank_t sp, const struct xsite_config *cfg, struct xsite_args *a)
{
	struct xsite_lua *x = NULL;
	char *err = NULL;
	int rc = -1;

	if (xsite_args_apply_env(a, getenv, &err) < 0) {
		slurm_error("%s", err ? err : "xsite: out of memory");
		goto fail;
	}
	if (!any_set(a)) {
		rc = 0;
		goto fail;
	}

	x = xsite_lua_open(cfg->lua_path, &err);
	if (x == NULL) {
		slurm_error("xsite: %s; the xsite flags are passed on unchecked",
			    err ? err : "cannot start Lua");
	} else if (xsite_lua_load_config(x, cfg->config_path) < 0) {
		slurm_error("xsite: %s (site and profile names are left to slurmctld)",
			    xsite_lua_error(x));
	}
	free(err);
	err = NULL;

	if (x != NULL && xsite_args_check(a, x, &err) < 0) {
		slurm_error("%s", err ? err : "xsite: out of memory");
		goto fail;
	}
	if (hand_over(sp, a) < 0)
		goto fail;
	rc = 0;

fail:
	free(err);
	xsite_lua_close(x);
	return rc;
}
