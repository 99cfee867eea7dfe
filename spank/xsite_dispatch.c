/*
 * xsite_dispatch.c: the SPANK entry points of xsite.so.
 *
 * Every slurm_spank_* function lives here and switches on spank_context();
 * the work is in allocator.c (sbatch, salloc), local.c (srun) and remote.c
 * (slurmstepd); the flags in args.c, the plugstack.conf arguments in
 * config.c.  Must be built against the Slurm release it runs in.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include <slurm/spank.h>

#include "allocator.h"
#include "args.h"
#include "config.h"
#include "local.h"
#include "remote.h"

/* Only these symbols leave the plugin (see xsite.map). */
#pragma GCC visibility push(default)
SPANK_PLUGIN(xsite, 1)
#pragma GCC visibility pop

#define XSITE_EXPORT __attribute__((visibility("default")))

static struct xsite_config config;
static int config_loaded;

XSITE_EXPORT int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();
	char *err = NULL;

	if (xsite_config_parse(&config, ac, av, getenv("SLURM_CONF"), &err) == 0) {
		config_loaded = 1;
	} else {
		slurm_error("%s", err ? err : "xsite: out of memory");
		free(err);
		err = NULL;
		if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR)
			return -1;
		/*
		 * In slurmstepd an error here fails the step, and a failed batch
		 * step drains its node, for jobs submitted before the bad edit
		 * too; slurmd would not start.  The plugin disables itself there
		 * instead: every client command refuses to run with these
		 * arguments, so the administrator sees the message at once.
		 */
		slurm_error("xsite: invalid plugstack.conf arguments: xsite disabled on this node");
	}

	switch (ctx) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
		if (xsite_args_note_inherited(&xsite_args, getenv, &err) < 0) {
			slurm_error("%s", err ? err : "xsite: out of memory");
			free(err);
			return -1;
		}
		return xsite_args_register(sp);
	case S_CTX_REMOTE:
		/* slurmstepd receives the options srun and sbatch forward */
		xsite_args_register(sp);
		return 0;
	default:
		return 0;
	}
}

/* Never an error in remote context: it would fail the step and drain the node. */
XSITE_EXPORT int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;

	switch (spank_context()) {
	case S_CTX_ALLOCATOR:
		return xsite_allocator_post_opt(sp, &config, &xsite_args);
	case S_CTX_LOCAL:
		return xsite_local_post_opt(sp, &config, &xsite_args);
	case S_CTX_REMOTE:
		if (config_loaded)
			xsite_remote_post_opt(sp, &config);
		return 0;
	default:
		return 0;
	}
}

XSITE_EXPORT int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;

	if (spank_context() != S_CTX_REMOTE || !config_loaded)
		return 0;
	return xsite_remote_user_init(sp, &config);
}

/*
 * Once the job has ended, on each of its nodes (slurmd's epilog, as root):
 * ReportDir (remote.c).  Never an error: a failed epilog drains the node.
 */
XSITE_EXPORT int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	char *err = NULL;

	if (spank_context() != S_CTX_JOB_SCRIPT)
		return 0;
	/* Slurm calls no init() before the job script callbacks: the arguments come here */
	if (!config_loaded) {
		if (xsite_config_parse(&config, ac, av, getenv("SLURM_CONF"), &err) < 0) {
			slurm_error("%s; xsite disabled in the epilog", err ? err : "xsite: out of memory");
			free(err);
			return 0;
		}
		config_loaded = 1;
	}
	xsite_remote_job_epilog(sp, &config);
	xsite_config_free(&config);
	config_loaded = 0;
	return 0;
}

XSITE_EXPORT int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void)sp;
	(void)ac;
	(void)av;

	if (spank_context() == S_CTX_REMOTE && config_loaded)
		xsite_remote_exit(&config);
	xsite_args_free(&xsite_args);
	if (config_loaded) {
		xsite_config_free(&config);
		config_loaded = 0;
	}
	return 0;
}
