/*
 * args.h: the command-line flags of xsite.so and their environment twins.
 *
 *   --site-affinity=auto|pin|span|SITE          XSITE_SITE_AFFINITY
 *   --comm-profile=NAME|CLASS|op=..,b=..,x=..    XSITE_COMM_PROFILE
 *   --xsite-report[=PATH]                       XSITE_REPORT
 *
 * Registered in sbatch, salloc and srun (and in slurmstepd, which receives
 * them).  A flag given twice with the same value is fine; with another value
 * it is an error naming the flag.  A twin applies only when the command line
 * left its flag unset.
 */
#ifndef XSITE_ARGS_H
#define XSITE_ARGS_H

#include <slurm/spank.h>

struct xsite_lua;

enum xsite_flag {
	XSITE_FLAG_AFFINITY,
	XSITE_FLAG_PROFILE,
	XSITE_FLAG_REPORT,
	XSITE_NFLAGS
};

enum xsite_source {
	XSITE_SRC_NONE,
	XSITE_SRC_INHERITED,	/* the enclosing job's flag (srun, sbatch or salloc inside a job) */
	XSITE_SRC_ENV,		/* the environment twin */
	XSITE_SRC_FLAG,		/* the command line (or #SBATCH) */
};

struct xsite_flag_info {
	const char *name;	/* option name, without "--" */
	const char *env;	/* the environment twin, also the job control name */
	const char *arginfo;
	const char *usage;
	int has_arg;		/* 1: required, 2: optional */
	const char *no_arg;	/* the value of the flag given without argument */
};

extern const struct xsite_flag_info xsite_flag_info[XSITE_NFLAGS];

struct xsite_args {
	char *value[XSITE_NFLAGS];
	enum xsite_source source[XSITE_NFLAGS];
	/* the enclosing job's value of each flag, expected once before the command line */
	char *inherited[XSITE_NFLAGS];
	int expect_inherited[XSITE_NFLAGS];
};

/* The flags of this process (filled by the option callbacks). */
extern struct xsite_args xsite_args;

/* Register every flag (slurm_spank_init, in local, allocator and remote context). */
int xsite_args_register(spank_t sp);

/*
 * Inside a job, Slurm hands a client (srun, sbatch, salloc) the job's own
 * xsite flags (environment SLURM_SPANK__SLURM_SPANK_OPTION_xsite_*, a flag
 * without argument as "(null)") and calls the option callback with them
 * before the command line.  Note them (slurm_spank_init, before the options),
 * so that an explicit flag or twin overrides an inherited value instead of
 * conflicting with it.
 */
int xsite_args_note_inherited(struct xsite_args *a, char *(*getenv_fn)(const char *), char **err);

/*
 * Record a flag from the command line: optarg may be NULL for a flag with an
 * optional argument.  Returns -1 with *err set ("xsite: --flag: ...") on an
 * empty value or a conflicting repeat.
 */
int xsite_args_set(struct xsite_args *a, enum xsite_flag f, const char *optarg, char **err);

/*
 * Apply the environment twins (getenv_fn, e.g. getenv) to the flags the
 * command line left unset (an inherited value gives way to a twin).  An
 * empty variable counts as unset.
 */
int xsite_args_apply_env(struct xsite_args *a, char *(*getenv_fn)(const char *), char **err);

/*
 * Check every value (the one function for checks on and across flags):
 * --site-affinity and --comm-profile through the Lua library (x may hold no
 * configuration: then site and profile names are left to slurmctld),
 * --xsite-report as a path.  *err names the flag, or the twin when the value
 * came from the environment.
 */
int xsite_args_check(const struct xsite_args *a, struct xsite_lua *x, char **err);

/* "--site-affinity=alpha" or "XSITE_SITE_AFFINITY=alpha", for messages (caller frees). */
char *xsite_args_label(const struct xsite_args *a, enum xsite_flag f);

void xsite_args_free(struct xsite_args *a);

#endif /* XSITE_ARGS_H */
