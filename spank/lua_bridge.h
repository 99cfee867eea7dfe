/*
 * lua_bridge.h: the xsite Lua library, embedded.
 *
 * Each bridge owns one lua_State (never shared with another plugin: Slurm's
 * cli_filter/lua and job_submit/lua have their own).  The library is found
 * through package.path = <lua_path>/?.lua; every check and every figure comes
 * from xsite.config, xsite.hostlist, xsite.profile and xsite.policy: nothing
 * here parses xsite.conf, a profile or a hostlist in C.
 *
 * Each call sends xsite.spank one request, a table of named strings, and
 * gets one answer, a table with a code, a message and named strings (see
 * lua/xsite/spank.lua); the functions here turn them into C types.  Every
 * function returning int returns 0 on success and -1 on failure; the
 * message and the code of the last failure are xsite_lua_error() (owned by
 * the bridge, valid until the next call) and xsite_lua_code().
 */
#ifndef XSITE_LUA_BRIDGE_H
#define XSITE_LUA_BRIDGE_H

struct xsite_lua;

/*
 * What went wrong in the last failed call (the answer's code; see
 * lua/xsite/spank.lua).
 */
enum xsite_lua_code {
	XSITE_LUA_OK = 0,
	XSITE_LUA_INVALID,	/* a value of the request is wrong: a flag, a node list */
	XSITE_LUA_CONFIG,	/* no usable configuration */
	XSITE_LUA_IO,		/* a file could not be written */
	XSITE_LUA_UNAVAILABLE,	/* cannot be done now (e.g. MPI tuning with the link down) */
	XSITE_LUA_LOAD,		/* the library could not be loaded */
	XSITE_LUA_INTERNAL,	/* a bug: the library raised an error, or answered nonsense */
	XSITE_LUA_NOMEM,
};

/* What the tasks of one node see (NULL: not exported). */
struct xsite_task_env {
	char *site;		/* XSITE_SITE */
	char *sites;		/* XSITE_SITES, e.g. "alpha:2,beta:2" */
	char *spanning;		/* XSITE_SPANNING, "0" or "1" */
	char *latency_us;	/* XSITE_LINK_LATENCY_US */
	char *bandwidth_mbps;	/* XSITE_LINK_BANDWIDTH_MBPS */
	char *warning;		/* something to log (e.g. a bad link state file) */
};

/* Where the per-job records go and what bounds root's work on them. */
struct xsite_report_settings {
	char *dir;		/* ReportDir */
	long max_traffic;	/* TrafficMaxSize, bytes */
	long retention;		/* ReportRetention, seconds (0: for ever) */
};

/* A step whose tasks start (NULL fields: absent). */
struct xsite_step_start {
	const char *job, *step;		/* ids: "42", "0" or "batch" */
	const char *user, *uid;		/* the owner's name and uid */
	const char *job_nodes;		/* SLURM_JOB_NODELIST */
	const char *step_nodes;		/* the step's nodes */
	const char *profile;		/* --comm-profile */
	const char *start;		/* epoch seconds, "1700000000.123" */
};

/* A step that has ended (NULL fields: absent). */
struct xsite_step_end {
	const char *start;	/* the step's start record (xsite_lua_step_start) */
	const char *finish;	/* epoch seconds */
	const char *traffic;	/* libxsite's record, read with a cap */
	const char *note;	/* why there is no traffic record */
	const char *existing;	/* the job's record so far */
};

/* A new bridge with the library of lua_path loaded (xsite.spank). */
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
 * MPI tuning of a spanning job (xsite.spank's tune_env): *env, "NAME=VALUE"
 * lines that point Open MPI at the coll/tuned rules in the file path (the
 * caller makes it), and *rules, the text to write there (caller frees both).
 */
int xsite_lua_tune_env(struct xsite_lua *x, const char *path, char **env, char **rules);

/* ReportDir, TrafficMaxSize and ReportRetention (free with xsite_report_settings_free). */
int xsite_lua_report_settings(struct xsite_lua *x, struct xsite_report_settings *out);

void xsite_report_settings_free(struct xsite_report_settings *s);

/* The start record of a step, JSON (*record: caller frees). */
int xsite_lua_step_start(struct xsite_lua *x, const struct xsite_step_start *req, char **record);

/*
 * The job's record once a step has ended, JSON, and what to log (NULL for
 * nothing); the caller frees both.
 */
int xsite_lua_step_end(struct xsite_lua *x, const struct xsite_step_end *req, char **record, char **log);

/*
 * Whether node is the first of the node list nodes (*first: 1 or 0): the
 * node of a job's component that keeps Slurm's list beside the record.
 */
int xsite_lua_first_node(struct xsite_lua *x, const char *nodes, const char *node, int *first);
/*
 * Slurm's node lists of a job (existing: xsite.report.SLURM_FILE's text, or
 * NULL) with one of its components' (job: its job id), as *lists, and what
 * to log (NULL for nothing); the caller frees both.
 */
int xsite_lua_slurm_nodes(struct xsite_lua *x, const char *existing, const char *job, const char *nodes,
			  char **lists, char **log);
/* The message and the code of the last failure. */
const char *xsite_lua_error(struct xsite_lua *x);

enum xsite_lua_code xsite_lua_code(struct xsite_lua *x);

void xsite_lua_close(struct xsite_lua *x);

#endif /* XSITE_LUA_BRIDGE_H */
