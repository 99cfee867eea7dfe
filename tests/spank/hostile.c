/*
 * hostile.c: what root does in slurmstepd with what a job's owner controls,
 * TAP output.  Run as root (make check does, in CI); else a SKIP.
 *
 *   report.c   the traffic record in ReportDir/JOBID/mpi/ as the user can
 *              leave it: a symbolic link, a FIFO, a 64 MiB file, another
 *              user's file, binary junk, truncated JSON, deep nesting, a
 *              directory; a job id that comes back; a lock a user holds
 *              on ReportDir; the job's end (mpi/ taken back); ReportRetention (bounded pruning, no link
 *              followed); the --xsite-report writer, which the user can stop
 *              or kill: root returns within its deadline; the copies of steps
 *              ending at once, which take turns, the last record's kept.
 *   remote.c   the same through the plugin's slurmstepd entry points
 *              (init_post_opt, exit, job_epilog), with the step's ids and
 *              environment given the way slurmstepd gives them.
 *
 * Everything is real (the Lua library, the testbed's xsite.conf, files,
 * processes, uids) except Slurm itself: this program stands in for
 * slurmstepd, so the few SPANK calls remote.c makes (spank_get_item,
 * spank_getenv, spank_setenv, spank_unsetenv) and Slurm's log functions are
 * defined here, answering from a table and keeping every line logged so
 * that the tests can read them.
 *
 * The job's owner is "nobody" (uid 65534, which exists everywhere); another
 * user is uid 4243 (no account needed for a file's owner).
 *
 * Built with AddressSanitizer and UndefinedBehaviorSanitizer (Makefile.am):
 * a memory error or a leak in report.c or remote.c fails the run too.
 *
 * Usage: hostile [LUA_DIR [SITE_CONFIG]] (defaults compiled in, as unit.c).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <mntent.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/acl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "../../spank/config.h"
#include "../../spank/lua_bridge.h"
#include "../../spank/remote.h"
#include "../../spank/report.h"
#include "tap.h"

#define OWNER 65534
#define OTHER 4243
/* TrafficMaxSize of the test configuration */
#define MAX_TRAFFIC 65536

static const char *lua_dir, *site_config;
static char tmpdir[256], reports[300], config_path[320];
static uid_t owner = OWNER;
static gid_t owner_gid = OWNER;

/* No byte outside printable ASCII (what a log line or a terminal gets). */
static int printable(const char *s)
{
	for (; s != NULL && *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	}
	return 1;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- Slurm's side, as slurmstepd gives it ------------------------------ */

/* Every line logged, in order (the tests read and clear it). */
static char logged[64][2048];
static int nlogged;

static void keep(const char *level, const char *format, va_list ap)
{
	char line[1800];

	vsnprintf(line, sizeof(line), format, ap);
	if (nlogged < 64)
		snprintf(logged[nlogged++], sizeof(logged[0]), "%s: %s", level, line);
}

#define LOG_FUNCTION(name, level)                       \
	void name(const char *format, ...)              \
	{                                               \
		va_list ap;                             \
		va_start(ap, format);                   \
		keep(level, format, ap);                \
		va_end(ap);                             \
	}
LOG_FUNCTION(slurm_error, "error")
LOG_FUNCTION(slurm_info, "info")
LOG_FUNCTION(slurm_verbose, "verbose")
LOG_FUNCTION(slurm_debug, "debug")

/* The log lines holding part ("" for all), joined by " | " (static buffer). */
static const char *log_lines(const char *part)
{
	static char all[64 * 2048];
	size_t n = 0;
	int i;

	all[0] = '\0';
	for (i = 0; i < nlogged; i++) {
		if (strstr(logged[i], part) != NULL)
			n += (size_t)snprintf(all + n, sizeof(all) - n, "%s%s", n ? " | " : "", logged[i]);
	}
	return all;
}

static int log_count(const char *part)
{
	int i, n = 0;

	for (i = 0; i < nlogged; i++)
		n += strstr(logged[i], part) != NULL;
	return n;
}

/* The step as slurmstepd describes it. */
struct spank_handle {
	uint32_t jobid, stepid, nodeid;
	uid_t uid;
	gid_t gid;
	char env[16][1024];	/* the job's environment, NAME=value */
};

static char set_env[16][1024];	/* what the plugin exported */
static int nset;

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
	va_list ap;
	spank_err_t rc = ESPANK_SUCCESS;

	va_start(ap, item);
	switch (item) {
	case S_JOB_ID:
		*va_arg(ap, uint32_t *) = sp->jobid;
		break;
	case S_JOB_STEPID:
		*va_arg(ap, uint32_t *) = sp->stepid;
		break;
	case S_JOB_NODEID:
		*va_arg(ap, uint32_t *) = sp->nodeid;
		break;
	case S_JOB_UID:
		*va_arg(ap, uid_t *) = sp->uid;
		break;
	case S_JOB_GID:
		*va_arg(ap, gid_t *) = sp->gid;
		break;
	default:
		rc = ESPANK_BAD_ARG;
	}
	va_end(ap);
	return rc;
}

spank_err_t spank_getenv(spank_t sp, const char *var, char *buf, int len)
{
	size_t n = strlen(var), vlen;
	int i;

	for (i = 0; i < 16; i++) {
		if (strncmp(sp->env[i], var, n) == 0 && sp->env[i][n] == '=') {
			vlen = strlen(sp->env[i] + n + 1);
			if ((int)vlen >= len)
				return ESPANK_NOSPACE;
			memcpy(buf, sp->env[i] + n + 1, vlen + 1);
			return ESPANK_SUCCESS;
		}
	}
	return ESPANK_ENV_NOEXIST;
}

spank_err_t spank_setenv(spank_t sp, const char *var, const char *val, int overwrite)
{
	(void)sp;
	(void)overwrite;
	if (nset < 16)
		snprintf(set_env[nset++], sizeof(set_env[0]), "%s=%s", var, val);
	return ESPANK_SUCCESS;
}

spank_err_t spank_unsetenv(spank_t sp, const char *var)
{
	(void)sp;
	(void)var;
	return ESPANK_SUCCESS;
}

const char *spank_strerror(spank_err_t err)
{
	return err == ESPANK_SUCCESS ? "Success" : "error";
}

spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
	(void)sp;
	(void)opt;
	return ESPANK_SUCCESS;
}

static const char *exported(const char *name)
{
	size_t n = strlen(name);
	int i;

	for (i = nset - 1; i >= 0; i--) {
		if (strncmp(set_env[i], name, n) == 0 && set_env[i][n] == '=')
			return set_env[i] + n + 1;
	}
	return NULL;
}

/* ---- files ------------------------------------------------------------------ */

static char *path_of(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* A path under the test's directory (static buffers, a few at a time). */
static char *path_of(const char *format, ...)
{
	static char buf[8][1024];
	static int slot;
	char *p = buf[slot++ % 8];
	int n;
	va_list ap;

	n = snprintf(p, sizeof(buf[0]), "%s/", tmpdir);
	va_start(ap, format);
	vsnprintf(p + n, sizeof(buf[0]) - (size_t)n, format, ap);
	va_end(ap);
	return p;
}

/* Make a file, link or FIFO belong to uid (the test checks what root does with it). */
static void own(const char *path, uid_t uid)
{
	if (lchown(path, uid, uid) < 0)
		printf("# lchown %s: %s\n", path, strerror(errno));
}

static int put(const char *path, const char *text, uid_t uid)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return -1;
	fputs(text, f);
	fclose(f);
	own(path, uid);
	return 0;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t len = 0;
	ssize_t n;

	if (f == NULL)
		return NULL;
	n = getdelim(&text, &len, '\0', f);
	fclose(f);
	if (n < 0) {
		free(text);
		return NULL;
	}
	return text;
}

static int run(const char *format, ...) __attribute__((format(printf, 1, 2)));

static int run(const char *format, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, format);
	vsnprintf(cmd, sizeof(cmd), format, ap);
	va_end(ap);
	return system(cmd);
}

static long maxrss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* libxsite's traffic record for job JOB, 2 ranks at alpha and beta. */
static const char *traffic_json(uint32_t job)
{
	static char buf[1024];

	snprintf(buf, sizeof(buf),
		 "{\"version\":1,\"job\":%u,\"step\":0,\"ranks\":2,\"sites\":{\"alpha\":[0],\"beta\":[1]},"
		 "\"cross\":{\"bytes\":4096,\"messages\":2,\"p2p_bytes\":4096,\"p2p_messages\":2,"
		 "\"coll_bytes\":0,\"coll_messages\":0},\"per_rank\":[],\"matrix\":[[0,2048],[2048,0]]}\n",
		 job);
	return buf;
}

/* ---- report.c: one step of a job, with what the user left as its traffic record ---- */

static struct xsite_lua *lua;

static struct xsite_report_step step_of(uint32_t job, const char *step)
{
	struct xsite_report_step st = { job, "", owner, owner_gid };

	snprintf(st.step, sizeof(st.step), "%s", step);
	return st;
}

static char *start_record(const struct xsite_report_step *st)
{
	char *rec = NULL, id[16], uid[16];
	struct xsite_step_start req = { .job = id, .step = st->step, .user = "nobody", .uid = uid,
					.job_nodes = "alpha1,beta1", .profile = "medium", .start = "1000" };

	snprintf(id, sizeof(id), "%u", st->jobid);
	snprintf(uid, sizeof(uid), "%u", (unsigned)st->uid);
	if (xsite_lua_step_start(lua, &req, &rec) < 0)
		diag("step_start", xsite_lua_error(lua));
	return rec;
}

/*
 * Prepare job JOB's step STEP, let plant() (if any) leave something as its
 * traffic record (path given), finish it; the record's text (caller
 * frees), NULL on failure (*err), *secs the time finish took (0 if it did
 * not run).
 */
static char *step_named(uint32_t job, const char *step, void (*plant)(const char *path), double *secs,
			char **err)
{
	struct xsite_report_step st = step_of(job, step);
	char *traffic = NULL, *start, *text = NULL;
	double t0;

	*secs = 0;
	*err = NULL;
	if (xsite_report_prepare(reports, &st, &traffic, err) < 0)
		return NULL;
	free(*err);
	*err = NULL;
	start = start_record(&st);
	if (plant != NULL)
		plant(traffic);
	t0 = now_s();
	if (xsite_report_finish(lua, reports, &st, start, MAX_TRAFFIC, &text, err) < 0)
		text = NULL;
	*secs = now_s() - t0;
	free(start);
	free(traffic);
	return text;
}

/* The same for step 0. */
static char *step_with(uint32_t job, void (*plant)(const char *path), double *secs, char **err)
{
	return step_named(job, "0", plant, secs, err);
}

static void plant_valid(const char *path)
{
	put(path, traffic_json(101), owner);
}

static const char *secret_path;

static void plant_symlink(const char *path)
{
	if (symlink(secret_path, path) < 0)
		perror("symlink");
	own(path, owner);
}

static void plant_fifo(const char *path)
{
	if (mkfifo(path, 0600) < 0)
		perror("mkfifo");
	own(path, owner);
}

static void plant_huge(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	/* 64 MiB of zeros (a sparse file: as large to stat, nothing to write) */
	if (fd < 0 || ftruncate(fd, 64L << 20) < 0)
		perror("ftruncate");
	if (fd >= 0)
		close(fd);
	own(path, owner);
}

static void plant_other_owner(const char *path)
{
	put(path, traffic_json(105), OTHER);
}

static void plant_junk(const char *path)
{
	put(path, "\x1b[2J\x1b]0;owned\x07\x7f\xff\xfe binary", owner);
}

static void plant_truncated(const char *path)
{
	char text[1024];

	snprintf(text, sizeof(text), "%s", traffic_json(107));
	text[strlen(text) / 2] = '\0';
	put(path, text, owner);
}

static void plant_deep(const char *path)
{
	static char text[MAX_TRAFFIC];

	/* 60000 '[': as deep as fits in TrafficMaxSize */
	memset(text, '[', 60000);
	text[60000] = '\0';
	put(path, text, owner);
}

static void plant_directory(const char *path)
{
	if (mkdir(path, 0700) < 0)
		perror("mkdir");
	own(path, owner);
}

static void plant_escaping_version(const char *path)
{
	put(path, "{\"version\":\"\\u001b]0;owned\\u0007\\n1\",\"job\":110}", owner);
}

/* An ACL on path giving uid rwx (what a user can set on a directory of theirs). */
static int acl_for(const char *path, uid_t uid)
{
	char text[64];
	acl_t acl;
	int rc;

	snprintf(text, sizeof(text), "u::rwx,u:%u:rwx,g::---,m::rwx,o::---", (unsigned)uid);
	acl = acl_from_text(text);
	if (acl == NULL)
		return -1;
	rc = acl_set_file(path, ACL_TYPE_ACCESS, acl);
	acl_free(acl);
	return rc;
}

/*
 * Whether uid can open path (under the directory open as dir, as openat)
 * with flags (and mode, for O_CREAT), in a child with uid's ids: 0 yes, 1
 * no, else the child failed.
 */
static int user_opens_at(uid_t uid, int dir, const char *path, int flags, mode_t mode)
{
	pid_t pid = fork();
	int status = 0;

	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0)
			_exit(2);
		_exit(openat(dir, path, flags, mode) < 0 ? 1 : 0);
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Whether uid can open path (as user_opens_at). */
static int user_opens(uid_t uid, const char *path, int flags, mode_t mode)
{
	return user_opens_at(uid, AT_FDCWD, path, flags, mode);
}

/* Whether uid can read path (as user_opens). */
static int user_reads(uid_t uid, const char *path)
{
	return user_opens(uid, path, O_RDONLY, 0);
}

/* Whether uid can create a file in dir (as user_opens). */
static int user_creates(uid_t uid, const char *dir)
{
	char p[1200];

	snprintf(p, sizeof(p), "%s/planted", dir);
	return user_opens(uid, p, O_WRONLY | O_CREAT | O_EXCL, 0600);
}

/* Whether uid can create a file in the directory open as dir (as user_opens). */
static int user_creates_at(uid_t uid, int dir)
{
	return user_opens_at(uid, dir, "planted", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
}

static void test_traffic(void)
{
	char *err = NULL, *text;
	double secs;
	long rss;

	text = step_with(101, plant_valid, &secs, &err);
	ok(has(text, "\"cross_bytes\":4096") && has(text, "\"matrix\":[[0,2048],[2048,0]]") &&
	   access(path_of("reports/101/mpi/traffic-0.json"), F_OK) < 0,
	   "a valid traffic record goes into the record and is removed");
	free(text);
	free(err);
	put(path_of("acl-probe"), "", 0);
	if (acl_for(path_of("acl-probe"), OTHER) == 0)
		ok(user_reads(owner, path_of("reports/101/report.json")) == 0 &&
		   user_reads(OTHER, path_of("reports/101/report.json")) == 1,
		   "the record is readable by the job's owner (a POSIX ACL of root's file), not by another user");
	else
		printf("ok %d # SKIP no POSIX ACLs on %s\n", ++test_no, tmpdir);

	secret_path = path_of("root-only");
	put(secret_path, traffic_json(102), 0);
	chmod(secret_path, 0600);
	nlogged = 0;
	text = step_with(102, plant_symlink, &secs, &err);
	ok(has(text, "MPI traffic record traffic-0.json ignored: a symbolic link") &&
	   !has(text, "\"cross_bytes\":4096") && access(secret_path, F_OK) == 0,
	   "a symbolic link is not followed (to a file of root's): ignored, the target untouched");
	free(text);
	free(err);

	text = step_with(103, plant_fifo, &secs, &err);
	ok(has(text, "MPI traffic record ignored: traffic-0.json: not a regular file") && secs < 2,
	   "a FIFO does not block root: ignored at once (%.3f s)", secs);
	ok(access(path_of("reports/103/mpi/traffic-0.json"), F_OK) < 0, "the FIFO is removed");
	free(text);
	free(err);

	rss = maxrss_kb();
	text = step_with(104, plant_huge, &secs, &err);
	ok(has(text, "traffic-0.json: 67108864 bytes, over TrafficMaxSize (65536 bytes); not read") &&
	   secs < 1 && maxrss_kb() - rss < 16384,
	   "a 64 MiB traffic record is not read: one note, %.4f s, %ld KiB more memory at most",
	   secs, maxrss_kb() - rss);
	free(text);
	free(err);

	text = step_with(105, plant_other_owner, &secs, &err);
	ok(has(text, "traffic-0.json: not a regular file of uid 65534") && !has(text, "\"cross_bytes\""),
	   "another user's file in mpi/ is not taken");
	free(text);
	free(err);

	nlogged = 0;
	text = step_with(106, plant_junk, &secs, &err);
	ok(has(text, "MPI traffic record ignored: not JSON (offset 1: unexpected byte 0x1b)") &&
	   log_count("job 106 step 0: MPI traffic record ignored") == 1 && printable(log_lines("")),
	   "binary junk: ignored, one log line, nothing of it unescaped in the log");
	diag("log", log_lines(""));
	free(text);
	free(err);

	text = step_with(107, plant_truncated, &secs, &err);
	ok(has(text, "MPI traffic record ignored: not JSON (offset") && has(text, "unterminated string"),
	   "truncated JSON: ignored, the note says where");
	free(text);
	free(err);

	text = step_with(108, plant_deep, &secs, &err);
	ok(has(text, "nested too deep (more than 8 levels)") && secs < 1,
	   "60000 levels of nesting: refused at the 9th, %.4f s", secs);
	free(text);
	free(err);

	text = step_with(109, plant_directory, &secs, &err);
	ok(has(text, "traffic-0.json: not a regular file"), "a directory as the traffic record: ignored");
	free(text);
	free(err);

	nlogged = 0;
	text = step_with(110, plant_escaping_version, &secs, &err);
	ok(has(text, "version: not 1 (\\\\x1b]0;owned\\\\x07\\\\x0a1)") && printable(log_lines("")) &&
	   log_count("version: not 1 (\\x1b]0;owned\\x07\\x0a1)") == 1,
	   "a version field with escape sequences reaches the record and the log escaped");
	diag("log", log_lines(""));
	free(text);
	free(err);
}

/* mpi/ on another file system (a mount of the user's, FUSE say): refused. */
static int prepare(uint32_t job, uid_t uid, char **err);
static int stale_count(uint32_t job);

static void test_mount(void)
{
	struct xsite_report_step st = step_of(111, "0");
	char *traffic = NULL, *start, *text = NULL, *err = NULL;
	int rc;

	rc = xsite_report_prepare(reports, &st, &traffic, &err);
	free(err);
	err = NULL;
	if (rc < 0 || mount("xsite-test", path_of("reports/111/mpi"), "tmpfs", 0, "mode=0700") < 0) {
		printf("ok %d # SKIP cannot mount a tmpfs on mpi/ here: %s\n", ++test_no, strerror(errno));
		free(traffic);
		return;
	}
	own(path_of("reports/111/mpi"), owner);
	put(traffic, traffic_json(111), owner);
	start = start_record(&st);
	xsite_report_finish(lua, reports, &st, start, MAX_TRAFFIC, &text, &err);
	ok(has(text, "no MPI traffic record (mpi/ missing, not the owner's, or not on ReportDir's file system)"),
	   "mpi/ with a file system mounted on it is not read");
	/* the job ends with the mount still there: mpi/ cannot be taken back */
	free(err);
	err = NULL;
	rc = xsite_report_job_end(reports, 111, owner, &err);
	ok(rc < 0 && has(err, "cannot take it back: not on ReportDir's file system") &&
	   has(err, "the owner may no longer enter 111/") &&
	   getxattr(path_of("reports/111"), "system.posix_acl_access", NULL, 0) < 0 && errno == ENODATA,
	   "a job that ends with a mount on mpi/: its owner's ACL on the job's directory goes (%s)",
	   err ? err : "no message");
	umount(path_of("reports/111/mpi"));
	/* its end was noted all the same: the id coming back finds it moved aside */
	free(err);
	err = NULL;
	rc = prepare(111, owner, &err);
	ok(rc >= 0 && stale_count(111) == 1 && has(err, "ended): moved to .stale.111."), "and its end is noted: job 111 again does not meet its files (%s)",
	   err ? err : "");
	free(start);
	free(text);
	free(err);
	free(traffic);
}

/*
 * A bind mount of the user's own directory (the same file system: no st_dev
 * tells it) over mpi/: not entered.
 */
static void test_bind_mount(void)
{
	struct xsite_report_step st = step_of(112, "0");
	char *traffic = NULL, *start, *text = NULL, *err = NULL;
	int rc;

	run("mkdir -p %s/elsewhere && chown %u %s/elsewhere", tmpdir, (unsigned)owner, tmpdir);
	put(path_of("elsewhere/traffic-0.json"), traffic_json(112), owner);
	rc = xsite_report_prepare(reports, &st, &traffic, &err);
	free(err);
	err = NULL;
	if (rc < 0 || mount(path_of("elsewhere"), path_of("reports/112/mpi"), NULL, MS_BIND, NULL) < 0) {
		printf("ok %d # SKIP cannot bind-mount on mpi/ here: %s\n", ++test_no, strerror(errno));
		free(traffic);
		return;
	}
	start = start_record(&st);
	xsite_report_finish(lua, reports, &st, start, MAX_TRAFFIC, &text, &err);
	ok(has(text, "no MPI traffic record (mpi/ missing, not the owner's, or not on ReportDir's file system)") &&
	   access(path_of("elsewhere/traffic-0.json"), F_OK) == 0,
	   "mpi/ with a directory of the same file system bound on it is not read, nothing removed there");
	free(err);
	err = NULL;
	rc = xsite_report_job_end(reports, 112, owner, &err);
	ok(rc < 0 && has(err, "cannot take it back: not on ReportDir's file system"),
	   "and the job's end does not take over what is bound there (%s)", err ? err : "no message");
	umount2(path_of("reports/112/mpi"), MNT_DETACH);
	free(start);
	free(text);
	free(err);
	free(traffic);
}

/*
 * A FUSE file system whose daemon never answers (allow_other: root's
 * requests reach it) over mpi/, over the traffic record itself, in a tree
 * the pruner removes: what root does with each ends within 5 s (a child
 * runs it; the daemon's end, closing /dev/fuse, lets a blocked child go).
 */
static int fuse_mount(const char *path, int fuse, int file)
{
	char opts[160];

	snprintf(opts, sizeof(opts), "fd=%d,rootmode=%o,user_id=%u,group_id=%u,allow_other", fuse,
		 file ? 0100000 : 040000, (unsigned)owner, (unsigned)owner_gid);
	return mount("xsite-test", path, "fuse", MS_NOSUID | MS_NODEV, opts);
}

/* How many entries of dir begin with prefix. */
static int count_prefixed(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d != NULL && (e = readdir(d)) != NULL)
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	if (d != NULL)
		closedir(d);
	return n;
}

/* Detach every mount under dir. */
static void umount_under(const char *dir)
{
	FILE *f = setmntent("/proc/self/mounts", "r");
	struct mntent *m;
	size_t n = strlen(dir);

	while (f != NULL && (m = getmntent(f)) != NULL)
		if (strncmp(m->mnt_dir, dir, n) == 0 && m->mnt_dir[n] == '/')
			umount2(m->mnt_dir, MNT_DETACH);
	if (f != NULL)
		endmntent(f);
}

enum fuse_case { FUSE_JOB_END, FUSE_FINISH, FUSE_PRUNE };

/* Whether root's work of case c is over within 5 s, with fuse's daemon silent. */
static int ends_within(enum fuse_case c, int fuse, const char *start, double *secs)
{
	struct xsite_report_step st = step_of(113, "0");
	double t0 = now_s();
	pid_t pid = fork();
	int status, done = 0;

	if (pid == 0) {
		struct xsite_prune pr;
		char *err = NULL, *text = NULL;

		close(fuse);
		if (c == FUSE_JOB_END)
			xsite_report_job_end(reports, 113, owner, &err);
		else if (c == FUSE_FINISH)
			xsite_report_finish(lua, reports, &st, start, MAX_TRAFFIC, &text, &err);
		else
			xsite_report_prune(reports, 1, time(NULL) + 100L * 86400, &pr, &err);
		_exit(0);
	}
	if (pid < 0)
		diag("fork", strerror(errno));
	while (pid > 0 && now_s() - t0 < 5) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid) {
			done = 1;
			break;
		}
		if (w < 0) {
			diag("waitpid", strerror(errno));
			break;
		}
		usleep(10000);
	}
	*secs = now_s() - t0;
	return pid > 0 && done;
}

static void test_fuse(void)
{
	struct xsite_report_step st = step_of(113, "0");
	char *traffic = NULL, *start = NULL, *err = NULL;
	const char *what[] = { "the job's end (mpi/ taken back)", "a step's end (the traffic record)",
			       "the pruner" };
	double secs;
	int fuse, rc, c, ended;

	rc = xsite_report_prepare(reports, &st, &traffic, &err);
	free(err);
	err = NULL;
	fuse = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (rc < 0 || fuse < 0 || fuse_mount(path_of("reports/113/mpi"), fuse, 0) < 0) {
		printf("ok %d # SKIP no FUSE here: %s\n", ++test_no, strerror(errno));
		if (fuse >= 0)
			close(fuse);
		free(traffic);
		return;
	}
	start = start_record(&st);
	for (c = FUSE_JOB_END; c <= FUSE_PRUNE; c++) {
		if (c == FUSE_FINISH) {
			/* over the traffic record itself, mpi/ a real directory again */
			umount2(path_of("reports/113/mpi"), MNT_DETACH);
			close(fuse);
			run("chown %u %s/reports/113/mpi", (unsigned)owner, tmpdir);
			put(traffic, "{}", owner);
			fuse = open("/dev/fuse", O_RDWR | O_CLOEXEC);
			if (fuse < 0 || fuse_mount(traffic, fuse, 1) < 0) {
				printf("ok %d # SKIP FUSE on a file: %s\n", ++test_no, strerror(errno));
				continue;
			}
		}
		ended = ends_within((enum fuse_case)c, fuse, start, &secs);
		ok(ended, "%s with a silent FUSE daemon's file system on %s ends (%.2f s)", what[c],
		   c == FUSE_JOB_END ? "mpi/" : "the traffic record in mpi/", secs);
	}
	ok(count_prefixed(reports, ".kept.") == 1,
	   "the pruner keeps the tree with the mount for the administrator (.kept.UID.X), not walked again");
	/* the daemon ends: blocked children go; the mounts go, wherever the pruner moved them */
	if (fuse >= 0)
		close(fuse);
	while (waitpid(-1, NULL, 0) > 0)
		;
	umount_under(tmpdir);
	free(start);
	free(traffic);
}

/* ---- job ids that come back, the end of a job ------------------------------- */

static int prepare(uint32_t job, uid_t uid, char **err)
{
	struct xsite_report_step st = step_of(job, "0");
	char *traffic = NULL;
	int rc;

	st.uid = uid;
	*err = NULL;
	rc = xsite_report_prepare(reports, &st, &traffic, err);
	free(traffic);
	return rc;
}

static int stale_count(uint32_t job)
{
	char prefix[32];
	struct dirent *e;
	DIR *d = opendir(reports);
	int n = 0;

	snprintf(prefix, sizeof(prefix), ".stale.%u.", job);
	while (d != NULL && (e = readdir(d)) != NULL)
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	if (d != NULL)
		closedir(d);
	return n;
}

static void test_reuse(void)
{
	struct stat st;
	char *err = NULL, *text;
	double secs;
	int rc, acl, held, before;

	/* job 120 of nobody runs a step and ends; a new job 120 comes */
	text = step_with(120, plant_valid, &secs, &err);
	free(text);
	free(err);
	acl = acl_for(path_of("reports/120/mpi"), OTHER);
	/*
	 * directories of the owner's in mpi/, eight levels of them (as deep as
	 * the job's end goes), the second held open by a process of theirs (of
	 * another job on the node)
	 */
	run("mkdir -p %s/reports/120/mpi/sub/in/3/4/5/6/7/8 && chown -R %u %s/reports/120/mpi/sub", tmpdir,
	    (unsigned)owner, tmpdir);
	held = open(path_of("reports/120/mpi/sub/in"), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	before = held >= 0 ? user_creates_at(owner, held) : -1;
	if (held >= 0)
		unlinkat(held, "planted", 0);
	rc = xsite_report_job_end(reports, 120, owner, &err);
	ok(rc == 0 && stat(path_of("reports/120/mpi"), &st) == 0 && st.st_uid == 0 &&
	   (st.st_mode & 07777) == 0700 && user_creates(owner, path_of("reports/120/mpi")) == 1,
	   "at the job's end mpi/ is root's (0700): its owner can no longer write there");
	diag("job end", err);
	ok(before == 0 && user_creates_at(owner, held) == 1 && stat(path_of("reports/120/mpi/sub/in"), &st) == 0 &&
	   st.st_uid == 0 && stat(path_of("reports/120/mpi/sub/in/3/4/5/6/7/8"), &st) == 0 && st.st_uid == 0,
	   "the owner's directories in mpi/ are root's too, eight levels down: one a process of theirs holds "
	   "open takes no new file (before the end: %d)", before);
	if (held >= 0)
		close(held);
	if (acl == 0)
		ok(getxattr(path_of("reports/120/mpi"), "system.posix_acl_access", NULL, 0) < 0 &&
		   errno == ENODATA && user_creates(OTHER, path_of("reports/120/mpi")) == 1,
		   "an ACL the user put on mpi/ is removed with it");
	else
		printf("ok %d # SKIP no POSIX ACLs on %s\n", ++test_no, tmpdir);
	free(err);
	text = slurp(path_of("reports/120/.job"));
	ok(has(text, "xsite-job uid=65534 made=") && !has(text, "ended=0"), "the stamp says the job ended");
	free(text);

	rc = prepare(120, owner, &err);
	ok(rc == 1 && has(err, "ReportDir") && has(err, "120/ was an earlier job's (uid 65534, ended): moved to "
						     ".stale.120.") &&
	   stale_count(120) == 1 && access(path_of("reports/120/report.json"), F_OK) < 0,
	   "a new job with the id of an ended one gets a fresh directory; the old one is moved aside");
	diag("note", err);
	free(err);

	prepare(121, owner, &err);
	free(err);
	put(path_of("reports/121/report.json"), "{}", 0);
	rc = prepare(121, OTHER, &err);
	ok(rc == 1 && has(err, "121/ was an earlier job's (uid 65534, no end seen)") && stale_count(121) == 1 &&
	   access(path_of("reports/121/report.json"), F_OK) < 0,
	   "a job of another uid with a running job's id: the other's directory is moved aside");
	free(err);

	mkdir(path_of("reports/122"), 0700);
	put(path_of("reports/122/report.json"), "{}", 0);
	rc = prepare(122, owner, &err);
	ok(rc == 1 && has(err, "122/ had no identity stamp (an earlier job's): moved to .stale.122.") &&
	   stale_count(122) == 1, "a directory without an identity stamp is moved aside");
	free(err);

	{
		struct xsite_report_step s2 = step_of(121, "1");
		char *t2 = NULL;

		s2.uid = owner;
		rc = xsite_report_finish(lua, reports, &s2, "{}", MAX_TRAFFIC, &t2, &err);
		ok(rc < 0 && has(err, "121/ is not this job's (made for uid 4243)"),
		   "a step ending sees another job's directory: no record written there");
		free(err);
		free(t2);
	}

	prepare(123, owner, &err);
	free(err);
	rc = prepare(123, owner, &err);
	ok(rc == 0 && err == NULL && stale_count(123) == 0, "the job's next step keeps the job's directory");
	free(err);
}

/* ---- ReportRetention ---------------------------------------------------------- */

static void age(const char *path, long seconds)
{
	struct timespec t[2];

	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= seconds;
	t[1] = t[0];
	utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW);
}

/* Ends the child of a lock_holder (below); nothing for -1. */
static void lock_release(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/*
 * A child that holds flock(LOCK_EX) on path (a file or a directory, opened
 * read-only: flock needs no more), as the job's owner when as_owner, for
 * secs seconds (0: until killed).  Its pid once it holds the lock; -1 (the
 * child reaped) when it did not get it.
 */
static pid_t lock_holder(const char *path, int as_owner, unsigned secs)
{
	int ready[2];
	pid_t pid;
	ssize_t got;

	if (pipe(ready) < 0) {
		perror("pipe");
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		int fd;

		close(ready[0]);
		if (as_owner && (setgroups(0, NULL) < 0 || setresgid(owner_gid, owner_gid, owner_gid) < 0 ||
				 setresuid(owner, owner, owner) < 0))
			_exit(2);
		fd = open(path, O_RDONLY);
		if (fd < 0 || flock(fd, LOCK_EX) < 0 || write(ready[1], "x", 1) != 1)
			_exit(3);
		if (secs > 0) {
			sleep(secs);
			_exit(0);
		}
		for (;;)
			pause();
	}
	close(ready[1]);
	got = pid > 0 ? read(ready[0], &(char){ 0 }, 1) : -1;
	close(ready[0]);
	if (got != 1) {
		lock_release(pid);
		return -1;
	}
	return pid;
}

/*
 * ReportDir is readable by everyone, and flock needs only a read-only
 * descriptor: a user holding a lock on it must not stall the steps of the
 * node, nor keep the pruner out; the lock root takes is on a file nobody
 * else can open.
 */
static void test_spool_lock(void)
{
	struct xsite_prune done;
	struct stat st;
	char *err = NULL;
	double t0, secs;
	int rc;
	pid_t pid;

	prepare(130, owner, &err);	/* ReportDir and its lock file exist */
	free(err);
	pid = lock_holder(reports, 1, 0);
	ok(pid > 0, "a user holds a lock on ReportDir itself");
	t0 = now_s();
	rc = prepare(131, owner, &err);
	secs = now_s() - t0;
	ok(rc == 0 && secs < 2, "a step makes its directory while a user holds a lock on ReportDir (%.2f s)", secs);
	diag("err", err);
	free(err);
	rc = xsite_report_prune(reports, 30L * 86400, time(NULL), &done, &err);
	ok(rc == 0 && done.scanned > 0, "the pruner is not kept out by it (scanned %u)", done.scanned);
	diag("err", err);
	free(err);
	ok(stat(path_of("reports/.lock"), &st) == 0 && st.st_uid == 0 && (st.st_mode & 07777) == 0600 &&
	   user_reads(owner, path_of("reports/.lock")) == 1, "root's lock is ReportDir/.lock, which nobody else can open");
	lock_release(pid);
}

/*
 * The .stale.deep.* directories the pruner moved up into ReportDir, and
 * (*bad) how many of them are not root's, or writable by others.
 */
static int deep_entries(int *bad)
{
	DIR *d = opendir(reports);
	struct dirent *e;
	struct stat st;
	int n = 0, fd = d != NULL ? dirfd(d) : -1;

	while (fd >= 0 && (e = readdir(d)) != NULL) {
		/* (but the file planted under such a name, which goes as it is) */
		if (strncmp(e->d_name, ".stale.deep.", 12) != 0 || strcmp(e->d_name, ".stale.deep.abcdefghij") == 0)
			continue;
		n++;
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (st.st_uid != 0 || (st.st_mode & 022) != 0))
			(*bad)++;
	}
	if (d != NULL)
		closedir(d);
	return n;
}

/*
 * A job directory whose end was never seen may be a job still running (one
 * long step touches nothing there): with a short ReportRetention, it stays
 * XSITE_PRUNE_UNENDED all the same.
 */
static void test_prune_unended(void)
{
	struct xsite_prune done;
	char *err = NULL;
	const long day = 86400;
	int rc;

	snprintf(reports, sizeof(reports), "%s/prune-unended", tmpdir);
	prepare(700, owner, &err);
	free(err);
	age(path_of("prune-unended/700"), 3 * day);
	prepare(701, owner, &err);
	free(err);
	age(path_of("prune-unended/701"), XSITE_PRUNE_UNENDED + day);
	err = NULL;
	rc = xsite_report_prune(reports, day, time(NULL), &done, &err);
	ok(rc == 0 && access(path_of("prune-unended/700"), F_OK) == 0 &&
	   access(path_of("prune-unended/701"), F_OK) < 0,
	   "with ReportRetention=1day a job whose end was never seen stays %ld days (it may still run), then goes",
	   XSITE_PRUNE_UNENDED / day);
	diag("prune", err);
	free(err);
	snprintf(reports, sizeof(reports), "%s/reports", tmpdir);
}

static void test_prune(void)
{
	struct xsite_prune done;
	char *err = NULL, *p;
	const long day = 86400, keep = 30 * day;
	int i, rc, calls, max_scanned = 0, max_files = 0, deep, moved = 0, open_to_all = 0;

	/* a fresh ReportDir */
	snprintf(reports, sizeof(reports), "%s/prune", tmpdir);
	/* old ended jobs, one with 10000 files and a deep tree and links out in mpi/ */
	for (i = 200; i < 260; i++) {
		prepare((uint32_t)i, owner, &err);
		free(err);
		xsite_report_job_end(reports, (uint32_t)i, owner, &err);
		free(err);
	}
	run("cd %s/prune/200/mpi && seq 1 10000 | xargs touch && ln -s %s/outside link && "
	    "ln -s / root && mkdir -p d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d/d && touch d/d/d/d/d/d/d/d/d/d/d/d/d/f",
	    tmpdir, tmpdir);
	put(path_of("outside"), "keep me", 0);
	/*
	 * a tree of the user's deeper than the pruner goes, open to all, with
	 * more files at its bottom than one call removes: what is moved up
	 * into ReportDir must be root's and closed there
	 */
	run("cd %s/prune/201/mpi && mkdir -p a/b/c/d/e/f/g/h/i/j/k && cd a/b/c/d/e/f/g/h/i/j/k && "
	    "seq 1 %d | xargs touch && cd %s/prune/201/mpi && chown -R %u a && chmod -R 777 a",
	    tmpdir, 2 * XSITE_PRUNE_FILES, tmpdir, (unsigned)owner);
	/* a file of the user's in ReportDir by the name of a moved-up tree (a name swapped under the pruner) */
	put(path_of("prune/.stale.deep.abcdefghij"), "mine", owner);
	for (i = 200; i < 260; i++)
		age(path_of("prune/%d", i), keep + day);
	/* young ones, an old one whose end was never seen, a moved-aside one */
	for (i = 300; i < 310; i++) {
		prepare((uint32_t)i, owner, &err);
		free(err);
	}
	prepare(400, owner, &err);
	free(err);
	age(path_of("prune/400"), keep + day);
	prepare(401, owner, &err);
	free(err);
	age(path_of("prune/401"), 2 * keep + day);
	mkdir(path_of("prune/.stale.500.abcdefghij"), 0700);
	age(path_of("prune/.stale.500.abcdefghij"), keep + day);
	/* what is not xsite's is left alone: a file, a directory of another name */
	put(path_of("prune/README"), "admin's", 0);
	mkdir(path_of("prune/admin"), 0700);
	age(path_of("prune/admin"), 3 * keep);
	if (symlink("/", path_of("prune/600")) < 0)
		perror("symlink");

	rc = xsite_report_prune(reports, 0, time(NULL), &done, &err);
	ok(rc == 0 && done.files == 0 && access(path_of("prune/200"), F_OK) == 0, "ReportRetention=0 keeps all");

	for (calls = 0; calls < 100; calls++) {
		rc = xsite_report_prune(reports, keep, time(NULL), &done, &err);
		if (rc < 0) {
			diag("prune", err);
			free(err);
			break;
		}
		if ((int)done.scanned > max_scanned)
			max_scanned = (int)done.scanned;
		if ((int)done.files > max_files)
			max_files = (int)done.files;
		moved += deep_entries(&open_to_all);
		if (done.wrapped && done.files == 0)
			break;
	}
	ok(rc == 0 && calls > 2 && max_scanned <= XSITE_PRUNE_SCAN && max_files <= XSITE_PRUNE_FILES,
	   "pruning works in bounded steps: %d calls, at most %d entries looked at and %d files removed a call",
	   calls, max_scanned, max_files);
	for (i = 200, rc = 0; i < 260; i++)
		rc += access(path_of("prune/%d", i), F_OK) == 0;
	ok(rc == 0, "ended jobs older than ReportRetention are removed (%d of 60 left)", rc);
	p = slurp(path_of("outside"));
	ok(p != NULL && strcmp(p, "keep me") == 0 && access("/etc/passwd", F_OK) == 0,
	   "a symbolic link in a job's directory is removed, not followed");
	free(p);
	for (i = 300, rc = 0; i < 310; i++)
		rc += access(path_of("prune/%d", i), F_OK) == 0;
	ok(rc == 10, "young jobs stay");
	ok(access(path_of("prune/400"), F_OK) == 0 && access(path_of("prune/401"), F_OK) < 0,
	   "a job whose end was never seen stays for twice ReportRetention");
	ok(access(path_of("prune/.stale.500.abcdefghij"), F_OK) < 0, "an old moved-aside directory is removed");
	{
		struct stat st;

		ok(access(path_of("prune/README"), F_OK) == 0 && access(path_of("prune/admin"), F_OK) == 0 &&
		   lstat(path_of("prune/600"), &st) == 0 && S_ISLNK(st.st_mode),
		   "what is not a job's directory is left alone (a file, another name, a link named 600)");
	}
	deep = 0;
	{
		DIR *d = opendir(reports);
		struct dirent *e;

		while (d != NULL && (e = readdir(d)) != NULL)
			deep += strncmp(e->d_name, ".stale.deep.", 12) == 0;
		if (d != NULL)
			closedir(d);
	}
	ok(deep == 0, "a tree deeper than %d levels is removed too (moved up, then removed)", XSITE_PRUNE_DEPTH);
	ok(moved > 1 && open_to_all == 0, "what is moved up into ReportDir is root's, writable by nobody else (%d "
	   "seen between calls, %d not)", moved, open_to_all);
	snprintf(reports, sizeof(reports), "%s/reports", tmpdir);
}

/*
 * A directory of another user's that the owner moved into their job's
 * tree (a shared sticky one, whose files the owner may not remove): the
 * pruner neither enters, removes, moves up nor takes it over, at any depth;
 * the owner's own files around it go, and what is left goes aside, never
 * walked again.  A directory of the owner's is root's before the pruner
 * reads it: a process of the owner's still inside (here one that opened
 * mine/ before the job ended) can no longer add or swap an entry under
 * the walk.
 */
static void test_prune_foreign(void)
{
	const uid_t other = OWNER + 1;
	const long day = 86400, keep = 30 * day;
	struct xsite_prune done;
	unsigned kept = 0;
	char *err = NULL, go = 0;
	int calls, rc = 0, ready[2], start[2], status = 0;
	pid_t pid;

	snprintf(reports, sizeof(reports), "%s/prune-foreign", tmpdir);
	prepare(700, owner, &err);
	free(err);
	err = NULL;
	run("cd %s/prune-foreign/700/mpi && mkdir -p mine/shared && touch mine/shared/theirs mine/f && "
	    "chown -R %u mine && chown -R %u mine/shared && chmod 1777 mine/shared && "
	    "mkdir -p a/b/c/d/e/f/g/h/i/deep && touch a/b/c/d/e/f/g/h/i/deep/theirs && chown -R %u a && "
	    "chown -R %u a/b/c/d/e/f/g/h/i/deep && chmod 1777 a/b/c/d/e/f/g/h/i/deep",
	    tmpdir, (unsigned)owner, (unsigned)other, (unsigned)owner, (unsigned)other);
	if (pipe(ready) < 0 || pipe(start) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		/* the owner, inside mine/ from before the job's end */
		int fd;

		if (setgid(owner_gid) < 0 || setuid(owner) < 0)
			_exit(2);
		fd = open(path_of("prune-foreign/700/mpi/mine"), O_RDONLY | O_DIRECTORY);
		if (fd < 0 || write(ready[1], "r", 1) != 1 || read(start[0], &go, 1) != 1)
			_exit(2);
		_exit(mkdirat(fd, "late", 0700) == 0 ? 0 : errno == EACCES ? 1 : 3);
	}
	close(ready[1]);
	close(start[0]);
	if (read(ready[0], &go, 1) != 1)
		diag("prune", "the owner's process did not start");
	xsite_report_job_end(reports, 700, owner, &err);
	free(err);
	err = NULL;
	age(path_of("prune-foreign/700"), keep + day);
	/* a job's directory an older xsite moved aside (no uid in the name): its stamp says whose */
	prepare(702, owner, &err);
	free(err);
	err = NULL;
	run("cd %s/prune-foreign/702/mpi && mkdir legacy && touch legacy/theirs && chown -R %u legacy && "
	    "chmod 1777 legacy", tmpdir, (unsigned)other);
	xsite_report_job_end(reports, 702, owner, &err);
	free(err);
	err = NULL;
	if (rename(path_of("prune-foreign/702"), path_of("prune-foreign/.stale.deep.Olderxsite")) < 0)
		perror("rename");
	for (calls = 0; calls < 20; calls++) {
		rc = xsite_report_prune(reports, keep, time(NULL), &done, &err);
		if (rc < 0) {
			diag("prune", err);
			free(err);
			err = NULL;
			break;
		}
		kept += done.kept;
		if (done.wrapped && done.files == 0)
			break;
	}
	if (write(start[1], "g", 1) != 1 || waitpid(pid, &status, 0) != pid)
		status = -1;
	close(ready[0]);
	close(start[1]);
	ok(rc == 0 && kept > 0 &&
	   run("test $(find %s/prune-foreign -name theirs -uid %u | wc -l) = 3 && "
	       "test $(find %s/prune-foreign -type d -uid %u -perm -1777 | wc -l) = 3 && "
	       "test -z \"$(find %s/prune-foreign -name f -o -name late)\"",
	       tmpdir, (unsigned)other, tmpdir, (unsigned)other, tmpdir) == 0,
	   "another user's directory in a job's tree stays, theirs and whole, at any depth, also in a tree an "
	   "older xsite moved aside; the owner's files go (%u kept in %d calls)", kept, calls);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 1 &&
	   run("test \"$(stat -c '%%u %%a' %s/prune-foreign/.kept.%u.*/mpi/mine)\" = '0 700'", tmpdir,
	       (unsigned)owner) == 0,
	   "the owner's directories are root's before the pruner reads them: the owner, inside one, cannot add to it "
	   "(exit %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	rc = xsite_report_prune(reports, keep, time(NULL), &done, &err);
	free(err);
	err = NULL;
	ok(rc == 0 && done.kept == 0 && done.files == 0 &&
	   run("test $(ls -d %s/prune-foreign/.kept.%u.* | wc -l) = 3", tmpdir, (unsigned)owner) == 0,
	   "what is left goes aside as .kept.UID.X (the job trees, the one moved up) and is not walked again "
	   "(%u kept, %u removed)", done.kept,
	   done.files);
	snprintf(reports, sizeof(reports), "%s/reports", tmpdir);
}

/* ---- the --xsite-report writer, which the user can stop or kill -------------- */

static void test_wait(void)
{
	int fds[2], status;
	char msg[64];
	enum xsite_wait how;
	double t0;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		raise(SIGSTOP);
		_exit(0);
	}
	close(fds[1]);
	t0 = now_s();
	how = xsite_child_wait(pid, fds[0], 300, msg, sizeof(msg), &status);
	close(fds[0]);
	ok(how == XSITE_WAIT_KILLED && now_s() - t0 < 1.5 && kill(pid, 0) < 0,
	   "a child that stops itself: killed and reaped at the deadline (%.2f s for 0.3 s)", now_s() - t0);

	if (pipe2(fds, O_CLOEXEC) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		close(fds[1]);
		pause();
		_exit(0);
	}
	close(fds[1]);
	t0 = now_s();
	how = xsite_child_wait(pid, fds[0], 300, msg, sizeof(msg), &status);
	close(fds[0]);
	ok(how == XSITE_WAIT_KILLED && now_s() - t0 < 1.5,
	   "a child that closes the pipe but does not exit: killed at the deadline (%.2f s)", now_s() - t0);

	if (pipe2(fds, O_CLOEXEC) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		if (write(fds[1], "half a message", 14) < 0)
			_exit(3);
		raise(SIGKILL);
		_exit(0);
	}
	close(fds[1]);
	how = xsite_child_wait(pid, fds[0], 5000, msg, sizeof(msg), &status);
	close(fds[0]);
	ok(how == XSITE_WAIT_EXITED && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL &&
	   strcmp(msg, "half a message") == 0, "a child killed: seen at once, with what it wrote");

	if (pipe2(fds, O_CLOEXEC) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		char big[4096];

		memset(big, 'x', sizeof(big));
		while (write(fds[1], big, sizeof(big)) > 0)
			;
		_exit(0);
	}
	close(fds[1]);
	t0 = now_s();
	how = xsite_child_wait(pid, fds[0], 300, msg, sizeof(msg), &status);
	close(fds[0]);
	ok(how == XSITE_WAIT_KILLED && strlen(msg) == sizeof(msg) - 1 && now_s() - t0 < 1.5,
	   "a child writing without end: root keeps %zu bytes, and kills it at the deadline", sizeof(msg) - 1);
}

/* A thread that stops (or kills) every child of the main thread as soon as it appears. */
static struct {
	pid_t tid;
	int sig, caught, stop;
} watcher;

/* A child of this process (the first found), or 0: /proc's children list, else a scan of /proc. */
static pid_t a_child(const char *children)
{
	char buf[256], stat_path[300];
	struct dirent *e;
	pid_t found = 0;
	ssize_t n;
	DIR *d;
	int fd = open(children, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		return (pid_t)atoi(buf);
	}
	d = opendir("/proc");
	while (d != NULL && found == 0 && (e = readdir(d)) != NULL) {
		int ppid = 0;
		FILE *f;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(stat_path, sizeof(stat_path), "/proc/%s/stat", e->d_name);
		f = fopen(stat_path, "r");
		if (f != NULL && fscanf(f, "%*d (%*[^)]) %*c %d", &ppid) == 1 && ppid == getpid())
			found = (pid_t)atoi(e->d_name);
		if (f != NULL)
			fclose(f);
	}
	if (d != NULL)
		closedir(d);
	return found;
}

static void *watch(void *arg)
{
	char path[64];
	pid_t child;

	(void)arg;
	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)watcher.tid);
	while (!__atomic_load_n(&watcher.stop, __ATOMIC_SEQ_CST)) {
		child = a_child(path);
		if (child > 0 && kill(child, watcher.sig) == 0)
			__atomic_store_n(&watcher.caught, 1, __ATOMIC_SEQ_CST);
		usleep(200);
	}
	return NULL;
}

/*
 * What the writer holds while it writes (a file in copies/ open): 1 when a
 * descriptor of it names the file `spy.marker` (root's, open in this
 * process without O_CLOEXEC), 0 when none does, -1 when never seen writing.
 */
static struct {
	pid_t tid;
	int holds, stop;
} spy;

static void *inspect(void *arg)
{
	char path[64], fd_dir[64], link[PATH_MAX], target[PATH_MAX];
	struct dirent *e;
	pid_t child;
	DIR *d;

	(void)arg;
	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)spy.tid);
	while (!__atomic_load_n(&spy.stop, __ATOMIC_SEQ_CST) && spy.holds < 0) {
		int writing = 0, marker = 0;

		child = a_child(path);
		snprintf(fd_dir, sizeof(fd_dir), "/proc/%d/fd", (int)child);
		d = child > 0 ? opendir(fd_dir) : NULL;
		while (d != NULL && (e = readdir(d)) != NULL) {
			ssize_t n;

			snprintf(link, sizeof(link), "%s/%s", fd_dir, e->d_name);
			n = readlink(link, target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = '\0';
			writing |= strstr(target, "/copies/") != NULL;
			marker |= strstr(target, "/spy.marker") != NULL;
		}
		if (d != NULL)
			closedir(d);
		if (writing)
			spy.holds = marker;
		usleep(100);
	}
	return NULL;
}

/* The copy of a big record with the writer stopped or killed as it runs; its result and time. */
static int copy_attacked(int sig, const char *text, char **err, double *secs, int *caught)
{
	struct xsite_report_step st = step_of(130, "0");
	pthread_t t;
	double t0;
	int rc;

	watcher.tid = (pid_t)syscall(SYS_gettid);
	watcher.sig = sig;
	watcher.caught = 0;
	watcher.stop = 0;
	pthread_create(&t, NULL, watch, NULL);
	t0 = now_s();
	rc = xsite_report_copy(text, path_of("copies/attacked.json"), NULL, &st, 1000, err);
	*secs = now_s() - t0;
	__atomic_store_n(&watcher.stop, 1, __ATOMIC_SEQ_CST);
	pthread_join(t, NULL);
	*caught = watcher.caught;
	return rc;
}

static int only_file(const char *dir, const char *name)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0, found = 0;

	while (d != NULL && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		n++;
		found += strcmp(e->d_name, name) == 0;
	}
	if (d != NULL)
		closedir(d);
	return n == 1 && found;
}

static void test_copy(void)
{
	struct xsite_report_step st = step_of(130, "0");
	struct stat s;
	char *err = NULL, *text, *big;
	const size_t big_len = 64UL << 20;
	double secs;
	int rc, caught, tries;

	mkdir(path_of("copies"), 0755);
	own(path_of("copies"), owner);
	rc = xsite_report_copy("{\"a\":1}\n", ".", path_of("copies"), &st, 5000, &err);
	text = slurp(path_of("copies/xsite-report-130.json"));
	ok(rc == 0 && text != NULL && strcmp(text, "{\"a\":1}\n") == 0 &&
	   stat(path_of("copies/xsite-report-130.json"), &s) == 0 && s.st_uid == owner &&
	   (s.st_mode & 0777) == 0640 && only_file(path_of("copies"), "xsite-report-130.json"),
	   "the copy is the user's (0640), and no temporary file is left");
	free(text);
	free(err);

	put(path_of("root-target"), "root's", 0);
	if (symlink(path_of("root-target"), path_of("copies/linked.json")) < 0)
		perror("symlink");
	own(path_of("copies/linked.json"), owner);
	rc = xsite_report_copy("{}\n", path_of("copies/linked.json"), NULL, &st, 5000, &err);
	text = slurp(path_of("root-target"));
	ok(rc == 0 && text != NULL && strcmp(text, "root's") == 0 &&
	   lstat(path_of("copies/linked.json"), &s) == 0 && S_ISREG(s.st_mode),
	   "a symbolic link at the copy's place is replaced, never written through");
	free(text);
	free(err);

	rc = xsite_report_copy("{}\n", "/proc/nowhere/x.json", NULL, &st, 5000, &err);
	ok(rc < 0 && has(err, "--xsite-report: cannot create /proc/nowhere/x.json.") &&
	   !has(err, "x.json.tmp."), "a copy that cannot be made says so; its new name is random (%s)", err);
	free(err);

	rc = xsite_report_copy("{}\n", "out\x1b[2J.json", "/nonexistent\n\x1b]0;x\x07", &st, 5000, &err);
	ok(rc < 0 && has(err, "cannot enter the job's working directory") && printable(err),
	   "a working directory with control characters reaches the message escaped");
	diag("message", err);
	free(err);

	/* the writer of a 64 MiB record, stopped as it runs: root waits 1 s, no more */
	big = malloc(big_len + 1);
	memset(big, 'x', big_len);
	big[big_len] = '\0';
	for (tries = 0, caught = 0; tries < 5 && !caught; tries++)
		rc = copy_attacked(SIGSTOP, big, &err, &secs, &caught);
	ok(caught && rc < 0 && has(err, "the writer (uid 65534) did not finish within 1 s") && secs < 4,
	   "the writer stopped (SIGSTOP) by its user: root kills it and goes on after %.2f s (deadline 1 s)",
	   secs);
	diag("message", err);
	free(err);
	for (tries = 0, caught = 0; tries < 5 && !caught; tries++)
		rc = copy_attacked(SIGKILL, big, &err, &secs, &caught);
	ok(caught && rc < 0 && has(err, "the writer died (Killed)") && secs < 2,
	   "the writer killed by its user: root goes on at once (%.2f s)", secs);
	free(err);

	/* the writer takes nothing of slurmstepd's with it (a lock, a file): only its pipe */
	{
		int marker = open(path_of("spy.marker"), O_RDWR | O_CREAT, 0600);
		pthread_t t;

		spy.tid = (pid_t)syscall(SYS_gettid);
		spy.holds = -1;
		spy.stop = 0;
		pthread_create(&t, NULL, inspect, NULL);
		rc = xsite_report_copy(big, path_of("copies/watched.json"), NULL, &st, 20000, &err);
		__atomic_store_n(&spy.stop, 1, __ATOMIC_SEQ_CST);
		pthread_join(t, NULL);
		ok(marker >= 0 && rc == 0 && spy.holds == 0,
		   "the writer holds none of root's descriptors (seen writing: %s)",
		   spy.holds < 0 ? "never" : spy.holds ? "holds one" : "holds none");
		free(err);
		if (marker >= 0)
			close(marker);
		unlink(path_of("copies/watched.json"));
	}
	free(big);
}

/*
 * Two steps of a job end at once: each writes the record, then its copy.
 * Their writers (the user's processes) may finish in either order; the copy
 * that stays must be of the last record.
 */
static void test_copy_turns(void)
{
	struct xsite_report_step st = step_of(150, "1");
	char *first, *last, *copy, *err = NULL, lock_path[PATH_MAX];
	const char *target = path_of("copies/turns.json");
	double t0, secs;
	int rc;
	pid_t holder;

	first = step_named(150, "0", NULL, &secs, &err);
	free(err);
	last = step_named(150, "1", NULL, &secs, &err);
	free(err);
	err = NULL;
	rc = xsite_report_deliver(reports, &st, first, target, NULL, 5000, &err);
	ok(rc == 1 && err == NULL && access(target, F_OK) < 0,
	   "a step whose record a later step has replaced leaves the copy to that step");
	free(err);
	rc = xsite_report_deliver(reports, &st, last, target, NULL, 5000, &err);
	copy = slurp(target);
	ok(rc == 0 && copy != NULL && last != NULL && strcmp(copy, last) == 0 && has(copy, "\"step\":\"0\"") &&
	   has(copy, "\"step\":\"1\""), "the later step's copy is the last record, with both steps");
	free(copy);
	free(err);

	/* one copy at a time: a step waits while another's writer runs, with a deadline */
	snprintf(lock_path, sizeof(lock_path), "%s/150/.copy", reports);
	for (int hold = 0; hold < 2; hold++) {
		holder = lock_holder(lock_path, 0, hold == 0 ? 1 : 6);
		t0 = now_s();
		rc = xsite_report_deliver(reports, &st, last, target, NULL, hold == 0 ? 5000 : 1000, &err);
		secs = now_s() - t0;
		if (hold == 0)
			ok(holder > 0 && rc == 0 && secs >= 0.9 && secs < 5,
			   "a step's copy waits for the writer of another step's (%.2f s)", secs);
		else
			ok(holder > 0 && rc < 0 && has(err, "--xsite-report: ReportDir ") &&
			   has(err, "150/.copy: held by another step for longer than the wait allowed; no copy") &&
			   secs >= 3.9 && secs < 5.5,
			   "and no longer than its own writer's deadline and 3 s to reap it (%.2f s)", secs);
		if (err != NULL)
			diag("message", err);
		free(err);
		err = NULL;
		lock_release(holder);
	}
	free(first);
	free(last);
}

/* ---- remote.c: the plugin's slurmstepd entry points ------------------------- */

static void test_remote(void)
{
	struct xsite_config cfg = { config_path, false, true, (char *)lua_dir };
	struct spank_handle sp = { 140, 0, 0, OWNER, OWNER, { "" } };
	struct xsite_report_step step;
	const char *traffic;
	struct stat st;
	char *text, *again, *nodes, *tfile = NULL, *start, *err = NULL;
	int rc;

	snprintf(sp.env[0], sizeof(sp.env[0]), "SLURM_JOB_NODELIST=alpha1,beta1");
	snprintf(sp.env[1], sizeof(sp.env[1]), "SLURM_STEP_NODELIST=alpha1,beta1");
	snprintf(sp.env[2], sizeof(sp.env[2]), "SLURM_SPANK_XSITE_REPORT=copy-%%j.json");
	snprintf(sp.env[3], sizeof(sp.env[3]), "PWD=%s", path_of("copies"));
	nlogged = nset = 0;
	xsite_remote_post_opt(&sp, &cfg);
	traffic = exported("XSITE_TRAFFIC_FILE");
	ok(traffic != NULL && has(traffic, "/reports/140/mpi/traffic-0.json") && nlogged == 0,
	   "init_post_opt: the job's directory, XSITE_TRAFFIC_FILE exported, nothing logged");
	diag("log", log_lines(""));
	if (traffic != NULL)
		plant_huge(traffic);
	xsite_remote_exit(&cfg);
	text = slurp(path_of("reports/140/report.json"));
	ok(has(text, "over TrafficMaxSize (65536 bytes); not read") && log_count("error:") == 0 &&
	   stat(path_of("copies/copy-140.json"), &st) == 0 && st.st_uid == OWNER,
	   "exit: a 64 MiB traffic record is not read, the record and the user's copy are written");
	diag("log", log_lines(""));
	free(text);

	/* a user's working directory with control characters: the log line is escaped */
	sp.jobid = 141;
	snprintf(sp.env[3], sizeof(sp.env[3]), "PWD=/gone\n\x1b[2Jfake: xsite: all is well");
	nlogged = nset = 0;
	xsite_remote_post_opt(&sp, &cfg);
	xsite_remote_exit(&cfg);
	ok(log_count("error: xsite: report: job 141: --xsite-report=copy-%j.json: cannot enter the job's "
		     "working directory /gone\\x0a\\x1b[2Jfake") == 1 && printable(log_lines("")),
	   "exit: a failed copy is one escaped log line, and the step goes on");
	diag("log", log_lines(""));

	/*
	 * job_epilog: the job's directory is taken back, and the first node
	 * adds Slurm's node list from slurmd's environment (the process's),
	 * never the job's (the owner's)
	 */
	nlogged = 0;
	sp.jobid = 140;
	snprintf(sp.env[4], sizeof(sp.env[4]), "SLURM_NODELIST=alpha1");
	setenv("SLURM_NODELIST", "alpha1,beta1", 1);
	setenv("SLURMD_NODENAME", "beta1", 1);
	text = slurp(path_of("reports/140/report.json"));
	xsite_remote_job_epilog(&sp, &cfg);
	ok(stat(path_of("reports/140/mpi"), &st) == 0 && st.st_uid == 0 && (st.st_mode & 0777) == 0700 &&
	   nlogged == 0 && access(path_of("reports/140/slurm-nodes.json"), F_OK) < 0,
	   "job_epilog: mpi/ is root's again; a node that is not the list's first writes no node list");
	diag("log", log_lines(""));
	setenv("SLURMD_NODENAME", "alpha1", 1);
	xsite_remote_job_epilog(&sp, &cfg);
	nodes = slurp(path_of("reports/140/slurm-nodes.json"));
	again = slurp(path_of("reports/140/report.json"));
	ok(has(nodes, "{\"140\":\"alpha1,beta1\"}") && nlogged == 0 &&
	   stat(path_of("reports/140/slurm-nodes.json"), &st) == 0 && st.st_uid == 0 &&
	   (st.st_mode & 0777) == 0640 && text != NULL && again != NULL && strcmp(text, again) == 0,
	   "job_epilog on the list's first node: Slurm's node list from slurmd's environment beside the "
	   "record, which stays as the steps wrote it");
	diag("log", log_lines(""));
	free(text);
	free(again);
	free(nodes);

	/* a heterogeneous job's component 141 (leader 140): into the leader's record */
	sp.jobid = 141;
	setenv("SLURM_HET_JOB_ID", "140", 1);
	setenv("SLURM_NODELIST", "beta[1-2]", 1);
	setenv("SLURMD_NODENAME", "beta1", 1);
	xsite_remote_job_epilog(&sp, &cfg);
	text = slurp(path_of("reports/140/slurm-nodes.json"));
	ok(has(text, "\"141\":\"beta[1-2]\"") && has(text, "\"140\":\"alpha1,beta1\"") && nlogged == 0,
	   "job_epilog of a heterogeneous job's component: its list joins the leader's");
	diag("log", log_lines(""));
	free(text);
	unsetenv("SLURM_HET_JOB_ID");

	/*
	 * slurmd runs the epilog on the nodes a running job gives up
	 * (scontrol update NodeList=), with those nodes as its list, and again
	 * where the job ends: the lists are joined, never replaced
	 */
	sp.jobid = 140;
	setenv("SLURM_NODELIST", "beta7", 1);
	setenv("SLURMD_NODENAME", "beta7", 1);
	nlogged = 0;
	xsite_remote_job_epilog(&sp, &cfg);
	xsite_remote_job_epilog(&sp, &cfg);
	text = slurp(path_of("reports/140/slurm-nodes.json"));
	ok(has(text, "\"140\":\"alpha1,beta1,beta7\"") && has(text, "\"141\":\"beta[1-2]\"") && nlogged == 0,
	   "job_epilog of a job's list again, with other nodes: joined with the list there, once");
	diag("log", log_lines(""));
	free(text);

	/*
	 * the list goes in whether or not a record is there yet: a step on
	 * another node may end after this epilog (its tasks ignore the job's
	 * end until KillWait) and write the record then
	 */
	step = step_of(143, "0");
	rc = xsite_report_prepare(reports, &step, &tfile, &err);
	free(err);
	err = NULL;
	start = start_record(&step);
	sp.jobid = 143;
	setenv("SLURM_NODELIST", "alpha1,beta1", 1);
	setenv("SLURMD_NODENAME", "alpha1", 1);
	nlogged = 0;
	xsite_remote_job_epilog(&sp, &cfg);
	nodes = slurp(path_of("reports/143/slurm-nodes.json"));
	ok(rc == 0 && access(path_of("reports/143/report.json"), F_OK) < 0 &&
	   has(nodes, "{\"143\":\"alpha1,beta1\"}") && nlogged == 0,
	   "job_epilog before any step wrote the record: Slurm's node list is kept all the same");
	diag("log", log_lines(""));
	free(nodes);
	put(tfile, traffic_json(143), owner);
	rc = xsite_report_finish(lua, reports, &step, start, MAX_TRAFFIC, &text, &err);
	nodes = slurp(path_of("reports/143/slurm-nodes.json"));
	ok(rc == 0 && has(text, "\"job\":\"143\"") && has(nodes, "{\"143\":\"alpha1,beta1\"}"),
	   "a step ending after the epilog still writes its record, beside Slurm's node list");
	diag("err", err);
	free(err);
	err = NULL;
	free(text);
	free(nodes);
	free(start);
	free(tfile);

	/* root's own file that does not decode (a disk's doing, not the user's): started anew, logged */
	put(path_of("reports/143/slurm-nodes.json"), "{\"143\":", 0);
	nlogged = 0;
	xsite_remote_job_epilog(&sp, &cfg);
	nodes = slurp(path_of("reports/143/slurm-nodes.json"));
	ok(has(nodes, "{\"143\":\"alpha1,beta1\"}") && log_count("slurm-nodes.json: not JSON") == 1 &&
	   log_count("started anew") == 1,
	   "job_epilog over a node list file of root's that does not decode: started anew, one log line");
	diag("log", log_lines(""));
	free(nodes);

	/*
	 * the record's lock held (steps of the job ending on other nodes, by
	 * the hundred): the epilog does not wait for it, slurm-nodes.json has
	 * a lock of its own
	 */
	{
		pid_t pid;
		double t0, secs;

		text = step_with(144, plant_valid, &t0, &err);
		free(text);
		free(err);
		err = NULL;
		pid = lock_holder(path_of("reports/144/.lock"), 0, 0);
		ok(pid > 0, "the record's lock of job 144 is held");
		sp.jobid = 144;
		nlogged = 0;
		t0 = now_s();
		xsite_remote_job_epilog(&sp, &cfg);
		secs = now_s() - t0;
		nodes = slurp(path_of("reports/144/slurm-nodes.json"));
		ok(secs < 2 && has(nodes, "{\"144\":\"alpha1,beta1\"}") && nlogged == 0,
		   "job_epilog while the record's lock is held: Slurm's node list kept at once (%.2f s)", secs);
		diag("log", log_lines(""));
		free(nodes);
		lock_release(pid);
	}

	/* a job without a directory (no step ran), a directory of another uid's: nothing written */
	sp.jobid = 142;
	setenv("SLURM_NODELIST", "alpha1", 1);
	setenv("SLURMD_NODENAME", "alpha1", 1);
	nlogged = 0;
	xsite_remote_job_epilog(&sp, &cfg);
	ok(access(path_of("reports/142"), F_OK) < 0 && nlogged == 0, "job_epilog of a job no step ran for: "
	   "nothing made, nothing logged");
	sp.jobid = 141;
	setenv("SLURM_HET_JOB_ID", "140", 1);
	sp.uid = OTHER;
	nlogged = 0;
	xsite_remote_job_epilog(&sp, &cfg);
	sp.uid = OWNER;
	unsetenv("SLURM_HET_JOB_ID");
	text = slurp(path_of("reports/140/slurm-nodes.json"));
	ok(!has(text, "\"141\":\"alpha1\"") && log_count("140/ is not this job's (uid 4243); left alone") == 1,
	   "job_epilog of another user's job that names this record: left alone");
	diag("log", log_lines(""));
	free(text);
	unsetenv("SLURM_NODELIST");
	unsetenv("SLURMD_NODENAME");
}

/* ---- setup ------------------------------------------------------------------ */

/* The testbed's xsite.conf with this test's ReportDir and TrafficMaxSize. */
static int write_config(void)
{
	char *text = slurp(site_config), *l;
	FILE *f;

	if (text == NULL)
		return -1;
	l = strstr(text, "LinkStateFile=");
	if (l != NULL)
		l[0] = '#';
	l = strstr(text, "ReportDir=");
	if (l != NULL)
		l[0] = '#';
	snprintf(config_path, sizeof(config_path), "%s/xsite.conf", tmpdir);
	f = fopen(config_path, "w");
	if (f == NULL) {
		free(text);
		return -1;
	}
	fprintf(f, "%s\nReportDir=%s\nTrafficMaxSize=64KiB\n", text, reports);
	fclose(f);
	free(text);
	return 0;
}

int main(int argc, char **argv)
{
	const char *base = getenv("TMPDIR");
	char *err = NULL;

	lua_dir = argc > 1 ? argv[1] : XSITE_TEST_LUADIR;
	site_config = argc > 2 ? argv[2] : XSITE_TEST_CONFIG;
	if (geteuid() != 0) {
		printf("1..0 # SKIP not root: these tests chown files to other users and run as them\n");
		return 0;
	}
	if (getpwuid(OWNER) == NULL) {
		printf("1..0 # SKIP no user with uid %d (nobody)\n", OWNER);
		return 0;
	}
	owner_gid = getpwuid(OWNER)->pw_gid;
	snprintf(tmpdir, sizeof(tmpdir), "%s/xsite-spank-hostile.XXXXXX", base && base[0] ? base : "/tmp");
	if (mkdtemp(tmpdir) == NULL || chmod(tmpdir, 0755) < 0) {
		printf("Bail out! cannot create a temporary directory\n");
		return 1;
	}
	snprintf(reports, sizeof(reports), "%s/reports", tmpdir);
	lua = xsite_lua_open(lua_dir, &err);
	if (lua == NULL || write_config() < 0 || xsite_lua_load_config(lua, config_path) < 0) {
		printf("Bail out! cannot load the library or %s: %s\n", config_path,
		       err ? err : lua ? xsite_lua_error(lua) : "?");
		return 1;
	}
	/* a user's writer that is stopped must not stop this program's exit */
	signal(SIGPIPE, SIG_IGN);

	test_traffic();
	test_mount();
	test_reuse();
	test_spool_lock();
	test_prune();
	test_prune_unended();
	test_prune_foreign();
	test_wait();
	test_copy();
	test_copy_turns();
	test_remote();
	/* last: the FUSE case prunes all of ReportDir */
	test_bind_mount();
	test_fuse();
	printf("1..%d\n", test_no);

	xsite_lua_close(lua);
	if (getenv("XSITE_KEEP") == NULL)
		run("rm -rf '%s'", tmpdir);
	else
		diag("kept", tmpdir);
	return failures == 0 ? 0 : 1;
}
