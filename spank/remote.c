/*
 * remote.c: slurmstepd (remote context).
 *
 * In user_init, once per node and step, the plugin exports to the tasks:
 *
 *   XSITE_SITE                  this node's site (xsite.conf, from the host name)
 *   XSITE_SITES                 the job's split, e.g. "alpha:2,beta:2" (sites in
 *                               xsite.conf order, sites without nodes omitted)
 *   XSITE_SPANNING              1 when the job has nodes at both sites, else 0
 *   XSITE_LINK_LATENCY_US       the link's one-way latency, microseconds
 *   XSITE_LINK_BANDWIDTH_MBPS   the link's bandwidth x channels, MB/s (1e6 B/s)
 *
 * The link figures are the measured ones of the LinkStateFile when it exists,
 * else the configured ones.
 *
 * With tune_mpi=yes, the tasks of a spanning job also get Open MPI settings
 * for the link (OMPI_MCA_btl_tcp_sndbuf/rcvbuf, OMPI_MCA_coll_tuned_*: see
 * tune_mpi() and lua/xsite/tune.lua).
 *
 * Failure mode (decided): nothing in this file makes the step fail.  A broken
 * xsite.conf on the node, a missing Lua library or a job node list that does
 * not parse skips the exports: one "xsite: ..." error line goes to the slurmd
 * log, and slurmstepd also shows it on the step's stderr, so the user knows
 * why; XSITE_* inherited from a batch script are removed rather than left
 * stale.  The job runs; the node is never drained for it (an error returned
 * from remote context fails the step, and a failed batch step drains its
 * node).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "lua_bridge.h"
#include "remote.h"

static const char *const exported[] = {
	"XSITE_SITE",
	"XSITE_SITES",
	"XSITE_SPANNING",
	"XSITE_LINK_LATENCY_US",
	"XSITE_LINK_BANDWIDTH_MBPS",
};

/* A job environment variable, whatever its length (caller frees). */
static char *job_getenv(spank_t sp, const char *name)
{
	size_t len = 4096;
	char *buf = NULL, *bigger;
	spank_err_t rc;

	for (;;) {
		bigger = realloc(buf, len);
		if (bigger == NULL)
			goto fail;
		buf = bigger;
		rc = spank_getenv(sp, name, buf, (int)len);
		if (rc == ESPANK_SUCCESS)
			return buf;
		if (rc != ESPANK_NOSPACE || len >= (1U << 24))
			goto fail;
		len *= 2;
	}
fail:
	free(buf);
	return NULL;
}

static void skip(spank_t sp, const char *why)
{
	size_t i;

	/* slurmstepd shows its errors on the step's stderr too: the user sees it */
	slurm_error("xsite: %s; XSITE_* not exported on this node", why);
	for (i = 0; i < sizeof(exported) / sizeof(exported[0]); i++)
		spank_unsetenv(sp, exported[i]);
}

static int export(spank_t sp, const char *name, const char *value)
{
	spank_err_t rc;

	if (value == NULL) {
		spank_unsetenv(sp, name);
		return 0;
	}
	rc = spank_setenv(sp, name, value, 1);
	if (rc != ESPANK_SUCCESS) {
		slurm_error("xsite: cannot set %s=%s: %s", name, value, spank_strerror(rc));
		return -1;
	}
	return 0;
}

/*
 * MPI tuning for spanning jobs, with tune_mpi=yes: xsite.spank.tune_env
 * writes an Open MPI coll/tuned rules file for the link into this node's
 * /tmp (the task runs here) and gives the OMPI_MCA_* settings (TCP buffers
 * from the bandwidth-delay product, the rules file), exported here.  A
 * failure only loses the tuning (logged); the step runs.
 */
static void tune_mpi(spank_t sp, struct xsite_lua *x)
{
	uint32_t jobid = 0;
	char id[16], *env = NULL, *line, *next, *eq;

	if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS) {
		slurm_error("xsite: tune_mpi: no job id; no MPI tuning");
		return;
	}
	snprintf(id, sizeof(id), "%u", jobid);
	if (xsite_lua_tune_env(x, "/tmp", id, &env) < 0) {
		slurm_error("xsite: %s", xsite_lua_error(x));
		return;
	}
	for (line = env; line != NULL && *line != '\0'; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		eq = strchr(line, '=');
		if (eq == NULL)
			continue;
		*eq = '\0';
		if (export(sp, line, eq + 1) == 0)
			slurm_verbose("xsite: tune_mpi: %s=%s", line, eq + 1);
	}
	free(env);
}

int xsite_remote_user_init(spank_t sp, const struct xsite_config *cfg)
{
	struct xsite_lua *x = NULL;
	struct xsite_task_env env = { 0 };
	char host[256];
	char *nodelist = NULL, *err = NULL, *why = NULL;

	if (gethostname(host, sizeof(host)) < 0) {
		if (asprintf(&why, "gethostname: %s", strerror(errno)) < 0)
			why = NULL;
		goto fail;
	}
	host[sizeof(host) - 1] = '\0';

	nodelist = job_getenv(sp, "SLURM_JOB_NODELIST");
	if (nodelist == NULL) {
		why = strdup("SLURM_JOB_NODELIST is not in the job's environment");
		goto fail;
	}

	x = xsite_lua_open(cfg->lua_path, &err);
	if (x == NULL) {
		why = err;
		err = NULL;
		goto fail;
	}
	if (xsite_lua_load_config(x, cfg->config_path) < 0 ||
	    xsite_lua_task_env(x, host, nodelist, &env) < 0) {
		why = strdup(xsite_lua_error(x));
		goto fail;
	}
	/* the administrator's to fix: the slurmd log, not every step's stderr */
	if (env.warning != NULL)
		slurm_info("xsite: %s", env.warning);

	if (export(sp, "XSITE_SITE", env.site) < 0 ||
	    export(sp, "XSITE_SITES", env.sites) < 0 ||
	    export(sp, "XSITE_SPANNING", env.spanning) < 0 ||
	    export(sp, "XSITE_LINK_LATENCY_US", env.latency_us) < 0 ||
	    export(sp, "XSITE_LINK_BANDWIDTH_MBPS", env.bandwidth_mbps) < 0) {
		why = strdup("cannot set the task environment");
		goto fail;
	}
	slurm_verbose("xsite: %s: XSITE_SITE=%s XSITE_SITES=%s XSITE_SPANNING=%s",
		      host, env.site ? env.site : "(none)", env.sites, env.spanning);

	if (cfg->tune_mpi && strcmp(env.spanning, "1") == 0)
		tune_mpi(sp, x);

	goto out;
fail:
	skip(sp, why ? why : "out of memory");
out:
	xsite_task_env_free(&env);
	xsite_lua_close(x);
	free(nodelist);
	free(err);
	free(why);
	return 0;
}
