/*
 * report.c: the per-job cross-site record in ReportDir (xsite.conf).
 *
 * Layout, for job JOBID of user U (uid) and ReportDir D (root's, not
 * writable by anyone else: checked, else no record):
 *
 *   D/JOBID/              root, group of D, 0750; ACL u:U:r-x
 *   D/JOBID/report.json   root, group of D, 0640; ACL u:U:r--  (the record)
 *   D/JOBID/.lock         root, 0600 (steps ending at once take turns)
 *   D/JOBID/mpi/          U, 0700: libxsite writes traffic-STEP.json here
 *
 * So the job's owner and the members of D's group (the administrators)
 * read the record, nobody else does, and nobody but root writes it.  On a
 * file system without POSIX ACLs the owner cannot read it (logged); the
 * --xsite-report copy still reaches them.  The only directory the user
 * controls is mpi/: root only opens one name in it, with O_NOFOLLOW, takes
 * it only when it is a regular file of the job's owner, and unlinks it.
 * Nothing is ever written as root into a directory the user controls; the
 * user's copy is written by a child process running as the user.
 *
 * Every function here fails with a message and never makes the step fail
 * (remote.c logs it).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "config.h"
#include "lua_bridge.h"
#include "report.h"

#define RECORD "report.json"
#define MPI_DIR "mpi"
#define MAX_TRAFFIC (64L << 20)
#define MAX_RECORD (256L << 20)

const char *xsite_report_step_name(uint32_t stepid, char *buf, size_t len)
{
	switch (stepid) {
	case SLURM_EXTERN_CONT:
		return NULL;
	case SLURM_BATCH_SCRIPT:
		snprintf(buf, len, "batch");
		break;
	case SLURM_INTERACTIVE_STEP:
		snprintf(buf, len, "interactive");
		break;
	default:
		snprintf(buf, len, "%u", stepid);
	}
	return buf;
}

/*
 * POSIX ACL: owner and group as the mode says, plus one named user.  The
 * kernel's xattr format (linux/posix_acl_xattr.h), entries in tag order.
 */
struct acl_entry {
	uint16_t tag;
	uint16_t perm;
	uint32_t id;
};

static int set_user_acl(int fd, mode_t mode, uid_t uid, unsigned perm)
{
	struct {
		uint32_t version;
		struct acl_entry e[5];
	} __attribute__((packed)) acl;
	const uint32_t none = 0xffffffffU;
	unsigned group = (mode >> 3) & 7;

	acl.version = htole32(2);
	acl.e[0] = (struct acl_entry){ htole16(0x01), htole16((mode >> 6) & 7), htole32(none) };
	acl.e[1] = (struct acl_entry){ htole16(0x02), htole16(perm), htole32((uint32_t)uid) };
	acl.e[2] = (struct acl_entry){ htole16(0x04), htole16(group), htole32(none) };
	acl.e[3] = (struct acl_entry){ htole16(0x10), htole16(group | perm), htole32(none) };
	acl.e[4] = (struct acl_entry){ htole16(0x20), htole16(mode & 7), htole32(none) };
	return fsetxattr(fd, "system.posix_acl_access", &acl, sizeof(acl), 0);
}

/* Root's file or directory fd, owned by root: the group and mode, plus the ACL. */
static int share_with_owner(int fd, gid_t group, mode_t mode, uid_t uid, unsigned perm,
			    const char *what, char **err)
{
	if (fchown(fd, 0, group) < 0 || fchmod(fd, mode) < 0) {
		*err = xsite_fmt("%s: %s", what, strerror(errno));
		return -1;
	}
	if (uid != 0 && set_user_acl(fd, mode, uid, perm) < 0) {
		*err = xsite_fmt("%s: cannot give uid %u read access (POSIX ACL: %s); "
				 "the job's owner gets the --xsite-report copy only",
				 what, (unsigned)uid, strerror(errno));
		return 1;
	}
	return 0;
}

/* ReportDir: made if missing; must be root's and writable by root only. */
static int open_spool(const char *dir, struct stat *st, char **err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 && errno == ENOENT) {
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			*err = xsite_fmt("ReportDir %s: cannot create it: %s", dir, strerror(errno));
			return -1;
		}
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0) {
		*err = xsite_fmt("ReportDir %s: %s", dir, strerror(errno));
		return -1;
	}
	if (fstat(fd, st) < 0 || st->st_uid != 0 || (st->st_mode & (S_IWGRP | S_IWOTH))) {
		*err = xsite_fmt("ReportDir %s: must be a directory of root's that only root can write "
				 "(chown root %s; chmod go-w %s)", dir, dir, dir);
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The job's directory in ReportDir (made if missing; must be root's); *group
 * is ReportDir's group, the administrators'.
 */
static int open_job(const char *dir, const struct xsite_report_step *st, gid_t *group, char **err)
{
	char name[16];
	struct stat ss, js;
	int spool, fd;

	spool = open_spool(dir, &ss, err);
	if (spool < 0)
		return -1;
	*group = ss.st_gid;
	snprintf(name, sizeof(name), "%u", st->jobid);
	if (mkdirat(spool, name, 0700) < 0 && errno != EEXIST) {
		*err = xsite_fmt("ReportDir %s: cannot create %s/: %s", dir, name, strerror(errno));
		close(spool);
		return -1;
	}
	fd = openat(spool, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(spool);
	if (fd < 0 || fstat(fd, &js) < 0 || js.st_uid != 0) {
		*err = xsite_fmt("ReportDir %s: %s/ is not root's directory", dir, name);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int xsite_report_prepare(const char *dir, const struct xsite_report_step *st, char **traffic,
			 char **err)
{
	struct stat ms;
	gid_t group;
	char *warn = NULL;
	int job, mpi = -1, rc = -1;

	*traffic = NULL;
	*err = NULL;
	job = open_job(dir, st, &group, err);
	if (job < 0)
		return -1;
	if (share_with_owner(job, group, 0750, st->uid, 5, dir, &warn) < 0) {
		*err = warn;
		warn = NULL;
		goto out;
	}
	if (mkdirat(job, MPI_DIR, 0700) < 0 && errno != EEXIST) {
		*err = xsite_fmt("ReportDir %s: cannot create %u/" MPI_DIR "/: %s", dir, st->jobid,
				 strerror(errno));
		goto out;
	}
	mpi = openat(job, MPI_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (mpi < 0 || fstat(mpi, &ms) < 0) {
		*err = xsite_fmt("ReportDir %s: %u/" MPI_DIR "/: %s", dir, st->jobid, strerror(errno));
		goto out;
	}
	if (ms.st_uid != st->uid && (ms.st_uid != 0 || fchown(mpi, st->uid, st->gid) < 0)) {
		*err = xsite_fmt("ReportDir %s: %u/" MPI_DIR "/ belongs to uid %u, not the job's owner",
				 dir, st->jobid, (unsigned)ms.st_uid);
		goto out;
	}
	if (fchmod(mpi, 0700) < 0) {
		*err = xsite_fmt("ReportDir %s: %u/" MPI_DIR "/: %s", dir, st->jobid, strerror(errno));
		goto out;
	}
	*traffic = xsite_fmt("%s/%u/" MPI_DIR "/traffic-%s.json", dir, st->jobid, st->step);
	if (*traffic == NULL)
		goto out;
	/* a missing ACL is worth a log line (*err), not a missing record */
	rc = 0;
	if (warn != NULL) {
		*err = warn;
		warn = NULL;
		rc = 1;
	}
out:
	free(warn);
	if (mpi >= 0)
		close(mpi);
	close(job);
	return rc;
}

/* The whole of a regular file (NUL-terminated); owner must be `owner`. */
static char *read_fd(int fd, uid_t owner, long max, const char *what, char **err)
{
	struct stat st;
	char *buf;
	size_t got = 0;
	ssize_t n;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != owner) {
		*err = xsite_fmt("%s: not a regular file of uid %u", what, (unsigned)owner);
		return NULL;
	}
	if (st.st_size > max) {
		*err = xsite_fmt("%s: %lld bytes, more than %ld", what, (long long)st.st_size, max);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL) {
		*err = xsite_fmt("%s: out of memory", what);
		return NULL;
	}
	while (got < (size_t)st.st_size) {
		n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return buf;
}

/* The step's traffic record from the user's mpi/ directory (then removed). */
static char *take_traffic(int job, const struct xsite_report_step *st, char **note)
{
	char name[64], *text = NULL, *err = NULL;
	struct stat ms;
	int mpi, fd;

	snprintf(name, sizeof(name), "traffic-%s.json", st->step);
	mpi = openat(job, MPI_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (mpi < 0 || fstat(mpi, &ms) < 0 || ms.st_uid != st->uid) {
		*note = xsite_fmt("no MPI traffic record (" MPI_DIR "/ missing or not the owner's)");
		if (mpi >= 0)
			close(mpi);
		return NULL;
	}
	fd = openat(mpi, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			*note = xsite_fmt("no MPI traffic record (libxsite not loaded, or no MPI in the step)");
		else
			*note = xsite_fmt("MPI traffic record %s ignored: %s", name,
					  errno == ELOOP ? "a symbolic link" : strerror(errno));
		close(mpi);
		return NULL;
	}
	text = read_fd(fd, st->uid, MAX_TRAFFIC, name, &err);
	close(fd);
	if (text == NULL) {
		*note = xsite_fmt("MPI traffic record ignored: %s", err ? err : "out of memory");
		free(err);
	}
	unlinkat(mpi, name, 0);
	close(mpi);
	return text;
}

/* Write text to name in dir fd: a new file, then renamed over name. */
static int replace_file(int dir, const char *name, const char *text, gid_t group, uid_t uid,
			char **err, char **warn)
{
	char tmp[96];
	size_t len = strlen(text), done = 0;
	ssize_t n;
	int fd, e = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", name, (long)getpid());
	unlinkat(dir, tmp, 0);
	fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		*err = xsite_fmt("cannot create %s: %s", tmp, strerror(errno));
		return -1;
	}
	if (share_with_owner(fd, group, 0640, uid, 4, name, warn) < 0) {
		*err = *warn;
		*warn = NULL;
		e = -1;
	}
	while (e == 0 && done < len) {
		n = write(fd, text + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*err = xsite_fmt("cannot write %s: %s", tmp, strerror(errno));
			e = -1;
			break;
		}
		done += (size_t)n;
	}
	if (e == 0 && fsync(fd) < 0) {
		*err = xsite_fmt("cannot write %s: %s", tmp, strerror(errno));
		e = -1;
	}
	close(fd);
	if (e == 0 && renameat(dir, tmp, dir, name) < 0) {
		*err = xsite_fmt("cannot rename %s: %s", tmp, strerror(errno));
		e = -1;
	}
	if (e < 0)
		unlinkat(dir, tmp, 0);
	return e;
}

int xsite_report_finish(struct xsite_lua *x, const char *dir, const struct xsite_report_step *st,
			const char *start_json, char **text, int *lockfd, char **err)
{
	char finish[32], *traffic = NULL, *note = NULL, *existing = NULL, *log = NULL, *warn = NULL;
	struct timespec now;
	gid_t group;
	int job, lock = -1, fd, rc = -1;

	*text = NULL;
	*lockfd = -1;
	*err = NULL;
	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(finish, sizeof(finish), "%lld.%03ld", (long long)now.tv_sec, now.tv_nsec / 1000000);
	job = open_job(dir, st, &group, err);
	if (job < 0)
		return -1;
	traffic = take_traffic(job, st, &note);

	lock = openat(job, ".lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0) {
		*err = xsite_fmt("ReportDir %s: %u/.lock: %s", dir, st->jobid, strerror(errno));
		goto out;
	}
	fd = openat(job, RECORD, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0) {
		char *rerr = NULL;

		existing = read_fd(fd, 0, MAX_RECORD, RECORD, &rerr);
		close(fd);
		if (existing == NULL) {
			slurm_error("xsite: ReportDir %s: %u/%s: %s; replaced", dir, st->jobid, RECORD,
				    rerr ? rerr : "out of memory");
			free(rerr);
		}
	}
	if (xsite_lua_call(x, "step_end", text, &log, 5, start_json, finish, traffic ? traffic : "",
			   note ? note : "", existing ? existing : "") < 0) {
		*err = xsite_fmt("%s", xsite_lua_error(x));
		goto out;
	}
	if (log != NULL && log[0] != '\0')
		slurm_info("xsite: %s", log);
	if (replace_file(job, RECORD, *text, group, st->uid, err, &warn) < 0)
		goto out;
	if (warn != NULL) {
		slurm_info("xsite: ReportDir %s: %s", dir, warn);
		free(warn);
	}
	rc = 0;
	*lockfd = lock;
	lock = -1;
out:
	if (lock >= 0)
		close(lock);
	close(job);
	free(traffic);
	free(note);
	free(existing);
	free(log);
	if (rc < 0) {
		free(*text);
		*text = NULL;
		if (*err == NULL)
			*err = xsite_fmt("ReportDir %s: %u: %s", dir, st->jobid, strerror(errno));
	}
	return rc;
}

/* The file the copy goes to: "%j" expanded, a directory gets the default name. */
static char *copy_target(const char *path, uint32_t jobid)
{
	char *expanded = NULL, *p;
	size_t len = 0;
	FILE *m = open_memstream(&expanded, &len);
	struct stat st;

	if (m == NULL)
		return NULL;
	for (p = (char *)path; *p != '\0'; p++) {
		if (p[0] == '%' && p[1] == 'j') {
			fprintf(m, "%u", jobid);
			p++;
		} else {
			fputc(*p, m);
		}
	}
	if (fclose(m) != 0) {
		free(expanded);
		return NULL;
	}
	if (len == 0) {
		free(expanded);
		return NULL;
	}
	if (expanded[len - 1] == '/' ||
	    (stat(expanded, &st) == 0 && S_ISDIR(st.st_mode))) {
		p = xsite_fmt("%s%sxsite-report-%u.json", expanded,
			      expanded[len - 1] == '/' ? "" : "/", jobid);
		free(expanded);
		return p;
	}
	return expanded;
}

/* In the child, as the user: write the copy; a message on failure. */
static char *write_copy(const char *text, const char *path, const char *cwd, uint32_t jobid)
{
	char *target, *tmp;
	size_t len = strlen(text), done = 0;
	ssize_t n;
	int fd;

	if (path[0] != '/' && (cwd == NULL || chdir(cwd) < 0))
		return xsite_fmt("--xsite-report=%s: cannot enter the job's working directory %s: %s",
				 path, cwd ? cwd : "(unknown)", cwd ? strerror(errno) : "no PWD");
	target = copy_target(path, jobid);
	if (target == NULL)
		return xsite_fmt("--xsite-report=%s: out of memory", path);
	tmp = xsite_fmt("%s.tmp.%ld", target, (long)getpid());
	if (tmp == NULL)
		return xsite_fmt("--xsite-report=%s: out of memory", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0)
		return xsite_fmt("--xsite-report: cannot create %s: %s", tmp, strerror(errno));
	while (done < len) {
		n = write(fd, text + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	if (done < len || fsync(fd) < 0 || close(fd) < 0) {
		unlink(tmp);
		return xsite_fmt("--xsite-report: cannot write %s: %s", tmp, strerror(errno));
	}
	/* rename replaces a symlink at target; it never writes through one */
	if (rename(tmp, target) < 0) {
		unlink(tmp);
		return xsite_fmt("--xsite-report: cannot write %s: %s", target, strerror(errno));
	}
	return NULL;
}

int xsite_report_copy(const char *text, const char *path, const char *cwd,
		      const struct xsite_report_step *st, char **err)
{
	struct passwd pw, *pwp = NULL;
	char pwbuf[4096], msg[1024];
	gid_t groups[256];
	int ngroups = 256, pipefd[2], status = 0;
	ssize_t n;
	pid_t pid;

	*err = NULL;
	if (getpwuid_r(st->uid, &pw, pwbuf, sizeof(pwbuf), &pwp) != 0 || pwp == NULL) {
		*err = xsite_fmt("--xsite-report: uid %u has no passwd entry", (unsigned)st->uid);
		return -1;
	}
	/* the user's groups, looked up here: the child of a threaded process must not use NSS */
	if (getgrouplist(pw.pw_name, st->gid, groups, &ngroups) < 0) {
		*err = xsite_fmt("--xsite-report: user %s is in more than 256 groups", pw.pw_name);
		return -1;
	}
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		*err = xsite_fmt("--xsite-report: pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		*err = xsite_fmt("--xsite-report: fork: %s", strerror(errno));
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	if (pid == 0) {
		char *why = NULL;
		sigset_t all;

		close(pipefd[0]);
		/* a hung file system must not hold slurmstepd */
		signal(SIGALRM, SIG_DFL);
		sigemptyset(&all);
		sigaddset(&all, SIGALRM);
		sigprocmask(SIG_UNBLOCK, &all, NULL);
		alarm(60);
		if (setgroups((size_t)ngroups, groups) < 0 || setresgid(st->gid, st->gid, st->gid) < 0 ||
		    setresuid(st->uid, st->uid, st->uid) < 0 || (st->uid != 0 && setuid(0) == 0))
			why = xsite_fmt("--xsite-report: cannot become uid %u: %s", (unsigned)st->uid,
					strerror(errno));
		else
			why = write_copy(text, path, cwd, st->jobid);
		if (why != NULL) {
			n = write(pipefd[1], why, strlen(why));
			(void)n;
		}
		_exit(why != NULL);
	}
	close(pipefd[1]);
	n = read(pipefd[0], msg, sizeof(msg) - 1);
	close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (n > 0) {
		msg[n] = '\0';
		*err = xsite_fmt("%s", msg);
		return -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		*err = xsite_fmt("--xsite-report=%s: the writer died (%s)", path,
				 WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "failed");
		return -1;
	}
	return 0;
}
