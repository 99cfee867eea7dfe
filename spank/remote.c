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
 * for the link (OMPI_MCA_btl_tcp_sndbuf/rcvbuf/eager_limit,
 * OMPI_MCA_coll_tuned_*: see tune_mpi() and lua/xsite/tune.lua).
 *
 * With report=yes (the default), each step also goes into the job's record
 * in ReportDir (report.c).  In init_post_opt, where slurmstepd is still
 * root (user_init runs with the user's ids), every node makes the job's
 * directory and points libxsite at the step's traffic record through
 * XSITE_TRAFFIC_FILE (unless the user set it); the step's first node takes
 * the placement, the prediction and the link before the tasks start
 * (xsite.spank.step_start).  At exit that node adds the step to report.json
 * with its elapsed time and traffic (TrafficMaxSize bounds what it reads),
 * then writes the --xsite-report copy with the user's ids, waiting for the
 * writer at most XSITE_COPY_TIMEOUT_MS, in turn with the job's other steps
 * and only while the record is the one it wrote (xsite_remote_exit).  A
 * record that cannot be made is logged in the slurmd log only
 * (init_post_opt and exit run before and after the tasks); the step runs as
 * ever.  Once the job has ended, slurmd's epilog (job_epilog, as root, every
 * node of the job) takes the job's mpi/ back from the user and prunes
 * ReportDir (ReportRetention); on the first node of the job's node list
 * (of a heterogeneous job's component's) it writes that list, slurmd's and
 * not the job's, beside the record (slurm_nodes()).
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
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pwd.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "args.h"
#include "lua_bridge.h"
#include "remote.h"
#include "report.h"

/*
 * The step's one Lua state with xsite.conf loaded: opened at the first need
 * (init_post_opt, else user_init), kept by slurmstepd for the step, closed
 * at exit.
 */
static struct xsite_lua *lua;

/* This node's coll/tuned rules file of the step (tune_mpi), removed at exit. */
static char *rules_file;

/* The step's record, kept from init_post_opt to exit on the step's first node. */
static struct {
	struct xsite_report_step step;
	char *dir;		/* ReportDir */
	char *start;		/* xsite.spank.step_start's record */
	char *copy;		/* --xsite-report PATH, or NULL */
	char *cwd;		/* the job's working directory */
	long max_traffic;	/* TrafficMaxSize */
} rep;

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
 * gives an Open MPI coll/tuned rules file for the link and the OMPI_MCA_*
 * settings (TCP buffers and eager limit from the bandwidth-delay product,
 * the rules file), exported here.  The file is made here, in this node's
 * /tmp (the task runs here), by the plugin itself: user_init runs as the
 * job's user, so the file is theirs, and under a name nobody can guess or
 * take first (mkostemp).  A failure only loses the tuning (logged); the
 * step runs.
 */
static void tune_mpi(spank_t sp, struct xsite_lua *x)
{
	uint32_t jobid = 0, stepid = 0;
	char path[96], step[16], *env = NULL, *rules = NULL, *line, *next, *eq;
	size_t len, done = 0;
	ssize_t n;
	int fd;

	if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS) {
		slurm_error("xsite: tune_mpi: no job or step id; no MPI tuning");
		return;
	}
	if (xsite_report_step_name(stepid, step, sizeof(step)) == NULL)
		return;
	snprintf(path, sizeof(path), "/tmp/xsite-coll-rules.%u.%s.XXXXXX", jobid, step);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0) {
		slurm_error("xsite: tune_mpi: cannot make %s: %s; no MPI tuning", path, strerror(errno));
		return;
	}
	if (xsite_lua_tune_env(x, path, &env, &rules) < 0) {
		slurm_error("xsite: %s", xsite_lua_error(x));
		goto fail;
	}
	len = strlen(rules);
	while (done < len) {
		n = write(fd, rules + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			slurm_error("xsite: tune_mpi: cannot write %s: %s; no MPI tuning", path,
				    n < 0 ? strerror(errno) : "nothing written");
			goto fail;
		}
		done += (size_t)n;
	}
	if (close(fd) < 0) {
		fd = -1;
		slurm_error("xsite: tune_mpi: cannot write %s: %s; no MPI tuning", path, strerror(errno));
		goto fail;
	}
	free(rules_file);
	rules_file = strdup(path);
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
	free(rules);
	return;
fail:
	if (fd >= 0)
		close(fd);
	unlink(path);
	free(env);
	free(rules);
}

/*
 * A flag of the job: the step's option (srun forwards it to its steps),
 * else the value sbatch or salloc handed to slurmctld (allocator.c), which
 * the job's environment carries as SLURM_SPANK_<twin> (the batch step gets
 * no option callbacks), else the twin itself.
 */
static char *job_flag(spank_t sp, enum xsite_flag f)
{
	char name[64], *v;

	if (xsite_args.value[f] != NULL)
		return strdup(xsite_args.value[f]);
	snprintf(name, sizeof(name), "SLURM_SPANK_%s", xsite_flag_info[f].env);
	v = job_getenv(sp, name);
	if (v != NULL && v[0] != '\0')
		return v;
	free(v);
	return job_getenv(sp, xsite_flag_info[f].env);
}

static void report_clear(void)
{
	free(rep.dir);
	free(rep.start);
	free(rep.copy);
	free(rep.cwd);
	memset(&rep, 0, sizeof(rep));
}

/*
 * The job's directory in ReportDir and XSITE_TRAFFIC_FILE (every node); the
 * start of the step's record (first node).  A failure loses the record only.
 */
static void report_start(spank_t sp, struct xsite_lua *x, const char *host, const char *nodelist)
{
	uint32_t jobid = 0, stepid = 0, nodeid = 0;
	char *traffic = NULL, *err = NULL, *user_env = NULL, *step_nodes = NULL, *profile = NULL;
	char id[16], uid[16], start[32], pwbuf[4096];
	struct passwd pw, *pwp = NULL;
	struct xsite_report_settings settings;
	struct xsite_step_start req = { 0 };
	struct timespec now;
	int rc;

	report_clear();
	clock_gettime(CLOCK_REALTIME, &now);
	if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_NODEID, &nodeid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &rep.step.uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &rep.step.gid) != ESPANK_SUCCESS) {
		slurm_error("xsite: report: the step's ids are not known; no record");
		return;
	}
	rep.step.jobid = jobid;
	if (xsite_report_step_name(stepid, rep.step.step, sizeof(rep.step.step)) == NULL)
		return;
	if (xsite_lua_report_settings(x, &settings) < 0) {
		err = xsite_fmt("%s", xsite_lua_error(x));
		goto fail;
	}
	rep.dir = settings.dir;
	settings.dir = NULL;
	rep.max_traffic = settings.max_traffic;
	rc = xsite_report_prepare(rep.dir, &rep.step, &traffic, &err);
	if (rc < 0)
		goto fail;
	if (rc > 0)
		slurm_info("xsite: report: %s", err);
	free(err);
	err = NULL;
	/*
	 * The user's own XSITE_TRAFFIC_FILE wins (the record then has no
	 * traffic); the one an enclosing step (the batch script) got from here
	 * gives way to this step's.
	 */
	user_env = job_getenv(sp, "XSITE_TRAFFIC_FILE");
	if (user_env == NULL || user_env[0] == '\0' ||
	    strncmp(user_env, traffic, (size_t)(strrchr(traffic, '/') - traffic + 1)) == 0)
		export(sp, "XSITE_TRAFFIC_FILE", traffic);
	else {
		char *safe = xsite_printable(user_env, 256, XSITE_PRINT_ASCII);

		slurm_verbose("xsite: report: the job sets XSITE_TRAFFIC_FILE=%s: the record has no traffic",
			      safe ? safe : "?");
		free(safe);
	}
	if (nodeid != 0) {
		report_clear();
		goto out;
	}
	snprintf(id, sizeof(id), "%u", jobid);
	snprintf(uid, sizeof(uid), "%u", (unsigned)rep.step.uid);
	snprintf(start, sizeof(start), "%lld.%03ld", (long long)now.tv_sec, now.tv_nsec / 1000000);
	if (getpwuid_r(rep.step.uid, &pw, pwbuf, sizeof(pwbuf), &pwp) != 0)
		pwp = NULL;
	step_nodes = job_getenv(sp, "SLURM_STEP_NODELIST");
	profile = job_flag(sp, XSITE_FLAG_PROFILE);
	req.job = id;
	req.step = rep.step.step;
	req.user = pwp ? pw.pw_name : uid;
	req.uid = uid;
	req.job_nodes = nodelist;
	req.step_nodes = step_nodes ? step_nodes : (stepid == SLURM_BATCH_SCRIPT ? host : "");
	req.profile = profile;
	req.start = start;
	if (xsite_lua_step_start(x, &req, &rep.start) < 0) {
		err = xsite_printable(xsite_lua_error(x), 1024, XSITE_PRINT_ASCII);
		goto fail;
	}
	rep.copy = job_flag(sp, XSITE_FLAG_REPORT);
	rep.cwd = job_getenv(sp, "PWD");
	if (rep.cwd == NULL)
		rep.cwd = job_getenv(sp, "SLURM_SUBMIT_DIR");
	goto out;
fail:
	slurm_error("xsite: report: job %u step %s: %s; no record", jobid, rep.step.step,
		    err ? err : "out of memory");
	report_clear();
out:
	free(traffic);
	free(err);
	free(user_env);
	free(step_nodes);
	free(profile);
}

/* The step's Lua state (see lua); NULL and *why (caller frees) on failure. */
static struct xsite_lua *remote_lua(const struct xsite_config *cfg, char **why)
{
	*why = NULL;
	if (lua != NULL)
		return lua;
	lua = xsite_lua_open(cfg->lua_path, why);
	if (lua != NULL && xsite_lua_load_config(lua, cfg->config_path) < 0) {
		*why = strdup(xsite_lua_error(lua));
		xsite_lua_close(lua);
		lua = NULL;
	}
	return lua;
}

void xsite_remote_post_opt(spank_t sp, const struct xsite_config *cfg)
{
	struct xsite_lua *x;
	char host[256], *nodelist = NULL, *err = NULL;

	if (!cfg->report)
		return;
	if (gethostname(host, sizeof(host)) < 0)
		return;
	host[sizeof(host) - 1] = '\0';
	nodelist = job_getenv(sp, "SLURM_JOB_NODELIST");
	x = remote_lua(cfg, &err);
	if (x == NULL || nodelist == NULL)
		slurm_error("xsite: report: %s; no record",
			    x == NULL ? (err ? err : "out of memory") : "SLURM_JOB_NODELIST is not set");
	else
		report_start(sp, x, host, nodelist);
	free(nodelist);
	free(err);
}

void xsite_remote_exit(const struct xsite_config *cfg)
{
	struct xsite_lua *x;
	char *err = NULL, *text = NULL;

	if (rules_file != NULL) {
		if (unlink(rules_file) < 0 && errno != ENOENT)
			slurm_info("xsite: tune_mpi: cannot remove %s: %s", rules_file, strerror(errno));
		free(rules_file);
		rules_file = NULL;
	}
	if (rep.start == NULL)
		goto out;
	x = remote_lua(cfg, &err);
	if (x == NULL) {
		slurm_error("xsite: report: job %u step %s: %s; no record", rep.step.jobid, rep.step.step,
			    err ? err : "out of memory");
		goto out;
	}
	if (xsite_report_finish(x, rep.dir, &rep.step, rep.start, rep.max_traffic, &text, &err) < 0) {
		slurm_error("xsite: report: job %u step %s: %s", rep.step.jobid, rep.step.step, err);
		goto out;
	}
	slurm_verbose("xsite: report: job %u step %s: %s/%u/report.json", rep.step.jobid,
		      rep.step.step, rep.dir, rep.step.jobid);
	free(err);
	err = NULL;
	/* the record is unlocked: other steps ending now add theirs while the copies take turns */
	if (rep.copy != NULL && xsite_report_deliver(rep.dir, &rep.step, text, rep.copy, rep.cwd,
						     XSITE_COPY_TIMEOUT_MS, &err) < 0)
		slurm_error("xsite: report: job %u: %s", rep.step.jobid, err);
out:
	xsite_lua_close(lua);
	lua = NULL;
	free(err);
	free(text);
	report_clear();
}

/*
 * Slurm's node list of the job (of a heterogeneous job's component) beside
 * the job's record (its leader's), on the list's first node.  The list is the
 * one slurmd puts in the epilog's environment (SLURM_NODELIST), from
 * slurmctld's request to end the job: slurmd builds that environment anew,
 * and what a job adds to it (spank_job_control_setenv) gets the prefix
 * SPANK_, so none of it is the owner's.
 */
static void slurm_nodes(struct xsite_lua *x, const char *dir, uint32_t jobid, uid_t uid)
{
	const char *nodes = getenv("SLURM_NODELIST"), *node = getenv("SLURMD_NODENAME");
	const char *het = getenv("SLURM_HET_JOB_ID");
	uint32_t leader = jobid;
	char *err = NULL;
	int first = 0, rc;

	if (nodes == NULL || node == NULL) {
		slurm_info("xsite: report: job %u: slurmd gave the epilog no %s; Slurm's node list not kept "
			   "beside the record", jobid, nodes == NULL ? "SLURM_NODELIST" : "SLURMD_NODENAME");
		return;
	}
	if (xsite_lua_first_node(x, nodes, node, &first) < 0) {
		slurm_error("xsite: report: job %u: %s; Slurm's node list not kept beside the record", jobid,
			    xsite_lua_error(x));
		return;
	}
	if (!first)
		return;
	if (het != NULL && het[0] != '\0')
		leader = (uint32_t)strtoul(het, NULL, 10);
	rc = xsite_report_slurm_nodes(x, dir, leader ? leader : jobid, uid, jobid, nodes, &err);
	if (rc < 0)
		slurm_error("xsite: report: job %u: %s", jobid, err);
	else if (rc > 0)
		slurm_info("xsite: report: job %u: %s", jobid, err);
	free(err);
}

void xsite_remote_job_epilog(spank_t sp, const struct xsite_config *cfg)
{
	struct xsite_lua *x;
	struct xsite_prune done;
	struct xsite_report_settings settings;
	uint32_t jobid = 0;
	uid_t uid = (uid_t)-1;
	char *dir = NULL, *err = NULL, *v;
	long retention = 0;
	int rc;

	if (!cfg->report)
		return;
	/* slurmd gives the job's ids to the epilog; its environment is slurmd's, not the user's */
	if (spank_get_item(sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS)
		jobid = (v = getenv("SLURM_JOB_ID")) ? (uint32_t)strtoul(v, NULL, 10) : 0;
	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS)
		uid = (v = getenv("SLURM_JOB_UID")) ? (uid_t)strtoul(v, NULL, 10) : (uid_t)-1;
	if (jobid == 0 || uid == (uid_t)-1) {
		slurm_error("xsite: report: job_epilog: the job's id or owner is not known; "
			    "its ReportDir directory is left as it is");
		return;
	}
	x = remote_lua(cfg, &err);
	if (x == NULL) {
		slurm_error("xsite: report: job %u: %s; its ReportDir directory is left as it is", jobid,
			    err ? err : "out of memory");
		goto out;
	}
	if (xsite_lua_report_settings(x, &settings) < 0) {
		slurm_error("xsite: report: job %u: %s", jobid, xsite_lua_error(x));
		goto out;
	}
	dir = settings.dir;
	retention = settings.retention;
	rc = xsite_report_job_end(dir, jobid, uid, &err);
	if (rc < 0)
		slurm_error("xsite: report: job %u: %s", jobid, err);
	else if (rc > 0)
		slurm_info("xsite: report: job %u: %s", jobid, err);
	free(err);
	err = NULL;
	slurm_nodes(x, dir, jobid, uid);
	if (xsite_report_prune(dir, retention, time(NULL), &done, &err) < 0)
		slurm_error("xsite: report: ReportRetention: %s", err);
	else if (done.files > 0)
		slurm_verbose("xsite: report: ReportRetention: %u job directories removed from %s "
			      "(%u files; %u entries looked at)", done.removed, dir, done.files, done.scanned);
	if (done.kept > 0)
		slurm_info("xsite: report: ReportRetention: %u directories of other users, mounts or other file "
			   "systems (a btrfs subvolume) in job directories of %s left in place (put there by a job's "
			   "owner; root removes only the owner's files and its own, and leaves no file system): see "
			   "%s/.kept.* (findmnt -R %s)", done.kept, dir, dir, dir);
out:
	xsite_lua_close(lua);
	lua = NULL;
	free(dir);
	free(err);
}

int xsite_remote_user_init(spank_t sp, const struct xsite_config *cfg)
{
	struct xsite_lua *x;
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

	x = remote_lua(cfg, &err);
	if (x == NULL) {
		why = err;
		err = NULL;
		goto fail;
	}
	if (xsite_lua_task_env(x, host, nodelist, &env) < 0) {
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
	free(nodelist);
	free(err);
	free(why);
	return 0;
}
