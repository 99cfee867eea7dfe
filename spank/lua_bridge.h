/*
 * lua_bridge.h: the xsite Lua library, embedded.
 *
 * Each bridge owns one lua_State (never shared with another plugin: Slurm's
 * cli_filter/lua and job_submit/lua have their own).  The library is found
 * through package.path = <lua_path>/?.lua; every check and every figure comes
 * from xsite.config, xsite.hostlist, xsite.profile and xsite.policy: nothing
 * here parses xsite.conf, a profile or a hostlist in C.
 *
 * Every function returning int returns 0 on success and -1 on failure; the
 * message of the last failure is xsite_lua_error() (owned by the bridge,
 * valid until the next call).
 */
#ifndef XSITE_LUA_BRIDGE_H
#define XSITE_LUA_BRIDGE_H

struct xsite_lua;

/* What the tasks of one node see (NULL: not exported). */
struct xsite_task_env {
	char *site;		/* XSITE_SITE */
	char *sites;		/* XSITE_SITES, e.g. "alpha:2,beta:2" */
	char *spanning;		/* XSITE_SPANNING, "0" or "1" */
	char *latency_us;	/* XSITE_LINK_LATENCY_US */
	char *bandwidth_mbps;	/* XSITE_LINK_BANDWIDTH_MBPS */
	char *warning;		/* something to log (e.g. a bad link state file) */
};

/* A new bridge with the library of lua_path loaded (xsite.config, xsite.profile). */
struct xsite_lua *xsite_lua_open(const char *lua_path, char **err);

/* Read and check xsite.conf through xsite.config.load. */
int xsite_lua_load_config(struct xsite_lua *x, const char *path);

/* Whether a configuration is loaded. */
int xsite_lua_have_config(struct xsite_lua *x);

/* --site-affinity: auto, pin, span or a site of the configuration. */
int xsite_lua_check_affinity(struct xsite_lua *x, const char *value);

/*
 * --comm-profile: xsite.profile.resolve against the configuration; without a
 * configuration, explicit specs are still checked (xsite.profile.parse_explicit)
 * and names are left to slurmctld.
 */
int xsite_lua_check_profile(struct xsite_lua *x, const char *value);

/* The task environment of node host for a job on nodelist. */
int xsite_lua_task_env(struct xsite_lua *x, const char *host, const char *nodelist,
		       struct xsite_task_env *env);

void xsite_task_env_free(struct xsite_task_env *env);

/*
 * MPI tuning of a spanning job (xsite.spank.tune_env): writes the coll/tuned
 * rules file into dir and sets *env to "NAME=VALUE" lines (caller frees).
 */
int xsite_lua_tune_env(struct xsite_lua *x, const char *dir, const char *jobid, char **env);

/*
 * Call function name of lua/xsite/spank.lua with nargs string arguments
 * (const char *); its results as new strings (caller frees; nil gives "").
 * r2 may be NULL.  Needs a loaded configuration.
 */
int xsite_lua_call(struct xsite_lua *x, const char *name, char **r1, char **r2, int nargs, ...);

const char *xsite_lua_error(struct xsite_lua *x);

void xsite_lua_close(struct xsite_lua *x);

#endif /* XSITE_LUA_BRIDGE_H */
