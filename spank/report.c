/*
 * report.c: the per-job cross-site record in ReportDir (xsite.conf).
 *
 * Layout, for job JOBID of user U (uid) and ReportDir D (root's, not
 * writable by anyone else: checked, else no record):
 *
 *   D/JOBID/              root, group of D, 0750; ACL u:U:r-x
 *   D/JOBID/.job          root, 0600: the identity stamp (uid, made, ended)
 *   D/JOBID/report.json   root, group of D, 0640; ACL u:U:r--  (the record)
 *   D/JOBID/slurm-nodes.json  the same: Slurm's node list of the job (of
 *                         each component of a heterogeneous job), from
 *                         slurmd's epilog once the job has ended
 *   D/JOBID/.lock         root, 0600 (steps ending at once take turns)
 *   D/JOBID/.copy         root, 0600 (their --xsite-report copies take turns)
 *   D/JOBID/mpi/          U, 0700 while the job runs: libxsite writes
 *                         traffic-STEP.json here; root's (0700) once it ended
 *   D/.lock               root, 0600: steps making their directory and the
 *                         pruner take turns (a lock on D itself could be
 *                         taken by anyone: flock needs only a read-only
 *                         descriptor, and D is readable by all)
 *   D/.prune              root: where the last pruning stopped
 *   D/.stale.JOBID.XXXXXXXXXX   an earlier job's directory, moved aside
 *
 * So the job's owner and the members of D's group (the administrators)
 * read the record, nobody else does, and nobody but root writes it.  On a
 * file system without POSIX ACLs the owner cannot read it (logged); the
 * --xsite-report copy still reaches them.  The only directory the user
 * controls is mpi/, and only while the job runs: root only opens one name in
 * it, with O_NOFOLLOW and O_NONBLOCK, on D's file system (a mount there, a
 * FUSE file system of the user's, is refused), takes it only when it is a
 * regular file of the job's owner no larger than TrafficMaxSize, and
 * unlinks it.  Every file root makes has a new name (O_EXCL, random
 * suffixes from getrandom) and is renamed into place; every file root reads
 * is opened with O_NOFOLLOW and checked (owner, type, size) on its fd.
 * Nothing is ever written as root into a directory the user controls; the
 * user's copy is written by a child process running as the user, which
 * root waits for with a deadline.
 *
 * A job id comes back (MaxJobId wraps; a cluster's state is reset): the
 * stamp tells a directory of an earlier job (another uid, or a job whose end
 * was seen) from this job's, and the earlier one is moved aside before the
 * new job's first step, under a lock on D.
 *
 * Every function here fails with a message and never makes the step fail
 * (remote.c logs it).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/acl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#if defined(SYS_openat2) && defined(__has_include)
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#define XSITE_HAVE_OPENAT2 1
#endif
#endif

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "config.h"
#include "lua_bridge.h"
#include "report.h"

#define RECORD "report.json"
#define SLURM_NODES "slurm-nodes.json"
#define MPI_DIR "mpi"
#define STAMP ".job"
#define LOCK ".lock"
#define NODES_LOCK ".nodes"	/* slurm-nodes.json's: epilogs only, never a step */
#define COPY_LOCK ".copy"
#define CURSOR ".prune"
#define STALE ".stale."
#define FRESH ".new."
#define KEPT ".kept."	/* a tree left for the administrator: never due */
#define MAX_STAMP 256
#define SUFFIX 10

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

/* ---- small tools --------------------------------------------------------- */

static long long ms_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t0->tv_sec) * 1000LL + (now.tv_nsec - t0->tv_nsec) / 1000000;
}

static void nap_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

/* name = prefix and SUFFIX random letters and digits (getrandom). */
static int random_name(char *name, size_t len, const char *prefix)
{
	static const char abc[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	unsigned char r[SUFFIX];
	size_t n = strlen(prefix), i;

	if (n + SUFFIX + 1 > len || getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -1;
	memcpy(name, prefix, n);
	for (i = 0; i < SUFFIX; i++)
		name[n + i] = abc[r[i] % (sizeof(abc) - 1)];
	name[n + SUFFIX] = '\0';
	return 0;
}

/* A new file of root's in dir: prefix and a random suffix, O_EXCL (name set). */
static int create_new(int dir, const char *prefix, char *name, size_t len, mode_t mode)
{
	int i, fd;

	for (i = 0; i < 16; i++) {
		if (random_name(name, len, prefix) < 0)
			return -1;
		fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return -1;
}

/* A new directory of root's in dir, like create_new. */
static int mkdir_new(int dir, const char *prefix, char *name, size_t len, mode_t mode)
{
	int i;

	for (i = 0; i < 16; i++) {
		if (random_name(name, len, prefix) < 0)
			return -1;
		if (mkdirat(dir, name, mode) == 0)
			return 0;
		if (errno != EEXIST)
			return -1;
	}
	return -1;
}

/* flock(fd, LOCK_EX), waiting at most timeout_ms; 0 or -1 (errno ETIMEDOUT). */
static int lock_within(int fd, int timeout_ms)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (ms_since(&t0) >= timeout_ms) {
			errno = ETIMEDOUT;
			return -1;
		}
		nap_ms(10);
	}
	return 0;
}

static int write_all(int fd, const char *text, size_t len)
{
	size_t done = 0;
	ssize_t n;

	while (done < len) {
		n = write(fd, text + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = ENOSPC;	/* a write of nothing: no room (errno is not set) */
			return -1;
		}
		done += (size_t)n;
	}
	return 0;
}

/*
 * The whole of a regular file (NUL-terminated), at most max bytes; owner
 * must be `owner`.  fd is open with O_NOFOLLOW | O_NONBLOCK (a FIFO does not
 * block the open, and is refused here).  A larger file is not read.
 */
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
		*err = xsite_fmt("%s: %lld bytes, more than %ld; not read", what, (long long)st.st_size, max);
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

/* ---- ReportDir, the job's directory, its stamp --------------------------- */

/* Add an entry of tag (and qualifier uid, for ACL_USER) with rwx bits perm. */
static int add_entry(acl_t *acl, acl_tag_t tag, const uid_t *uid, unsigned perm)
{
	acl_entry_t e;
	acl_permset_t ps;

	if (acl_create_entry(acl, &e) < 0 || acl_set_tag_type(e, tag) < 0 ||
	    (uid != NULL && acl_set_qualifier(e, uid) < 0) || acl_get_permset(e, &ps) < 0 ||
	    acl_clear_perms(ps) < 0)
		return -1;
	if (((perm & 4) && acl_add_perm(ps, ACL_READ) < 0) || ((perm & 2) && acl_add_perm(ps, ACL_WRITE) < 0) ||
	    ((perm & 1) && acl_add_perm(ps, ACL_EXECUTE) < 0))
		return -1;
	return acl_set_permset(e, ps);
}

/* POSIX ACL on fd: owner, group and others as the mode says, plus user uid with perm. */
static int set_user_acl(int fd, mode_t mode, uid_t uid, unsigned perm)
{
	unsigned group = (mode >> 3) & 7;
	acl_t acl = acl_init(5);
	int rc = -1, e;

	if (acl == NULL)
		return -1;
	if (add_entry(&acl, ACL_USER_OBJ, NULL, (mode >> 6) & 7) == 0 &&
	    add_entry(&acl, ACL_USER, &uid, perm) == 0 &&
	    add_entry(&acl, ACL_GROUP_OBJ, NULL, group) == 0 &&
	    add_entry(&acl, ACL_MASK, NULL, group | perm) == 0 &&
	    add_entry(&acl, ACL_OTHER, NULL, mode & 7) == 0 && acl_valid(acl) == 0)
		rc = acl_set_fd(fd, acl);
	e = errno;
	acl_free(acl);
	errno = e;
	return rc;
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

/*
 * Write text to name in dir (root's): a new file (create_new, mode), then
 * renamed over name.  With uid != (uid_t)-1, the file is shared with that
 * user as share_with_owner does (0640 and an ACL; *warn when the ACL fails).
 */
static int replace_file(int dir, const char *name, const char *text, gid_t group, uid_t uid,
			char **err, char **warn)
{
	char prefix[80], tmp[96];
	int fd, e = 0;

	snprintf(prefix, sizeof(prefix), "%s.", name);
	fd = create_new(dir, prefix, tmp, sizeof(tmp), 0600);
	if (fd < 0) {
		*err = xsite_fmt("cannot create a new file for %s: %s", name, strerror(errno));
		return -1;
	}
	if (uid != (uid_t)-1 && share_with_owner(fd, group, 0640, uid, 4, name, warn) < 0) {
		*err = *warn;
		*warn = NULL;
		e = -1;
	}
	if (e == 0 && (write_all(fd, text, strlen(text)) < 0 || fsync(fd) < 0)) {
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
 * openat(dir, name, flags) that enters no mount and follows no symbolic
 * link (openat2's RESOLVE_NO_XDEV, RESOLVE_NO_SYMLINKS, RESOLVE_BENEATH):
 * for what the job's owner may have made, mpi/ and what is in it.  A file
 * system the owner mounts over such a name (FUSE with allow_other among
 * them) is never asked anything: the open fails with EXDEV before it is
 * reached, where an open and a check of st_dev after it would wait for a
 * FUSE daemon that does not answer.  A kernel without openat2 (before 5.6,
 * or a seccomp filter that refuses it): openat with O_NOFOLLOW, and the
 * callers' st_dev checks.
 */
static int open_here(int dir, const char *name, int flags)
{
#ifdef XSITE_HAVE_OPENAT2
	static int fell_back;	/* said once a process */
	struct open_how how;
	long fd;

	memset(&how, 0, sizeof(how));
	how.flags = (unsigned long long)(flags | O_NOFOLLOW | O_CLOEXEC);
	how.resolve = RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH;
	fd = syscall(SYS_openat2, dir, name, &how, sizeof(how));
	if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
		return (int)fd;
	if (!fell_back) {
		fell_back = 1;
		slurm_info("xsite: report: openat2 refused (%s): a mount over a job's mpi/ or a file in it is "
			   "found only once opened", strerror(errno));
	}
#endif
	return openat(dir, name, flags | O_NOFOLLOW | O_CLOEXEC);
}

/* Why a directory of the owner's cannot be used, after open_here's errno (EXDEV: a mount). */
static const char *not_here(int e)
{
	return e == EXDEV ? "not on ReportDir's file system" : strerror(e);
}

/* A directory of root's under parent, on parent's file system (dev). */
static int open_root_dir(int parent, const char *name, dev_t dev, struct stat *st)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, st) < 0 || st->st_uid != 0 || st->st_dev != dev) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

/*
 * ReportDir's lock, D/.lock (root's, 0600, made if missing), locked within
 * timeout_ms (0: tried once): its descriptor (closing it unlocks), or -1
 * with errno (ETIMEDOUT; EWOULDBLOCK when tried once).
 */
static int lock_spool(int spool, dev_t dev, int timeout_ms)
{
	struct stat ls;
	int fd = openat(spool, LOCK, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0600), e;

	if (fd < 0)
		return -1;
	if (fstat(fd, &ls) < 0 || !S_ISREG(ls.st_mode) || ls.st_uid != 0 || ls.st_dev != dev ||
	    ((ls.st_mode & 077) && fchmod(fd, 0600) < 0)) {
		close(fd);
		errno = EPERM;
		return -1;
	}
	if ((timeout_ms > 0 ? lock_within(fd, timeout_ms) : flock(fd, LOCK_EX | LOCK_NB)) < 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Who a job directory was made for. */
struct stamp {
	unsigned uid;
	long long made, ended;	/* epoch seconds; ended 0: no end seen */
};

/* The identity stamp of job directory fd: 0, or -1 (missing or not root's). */
static int read_stamp(int job, struct stamp *s)
{
	char *text, *err = NULL;
	int fd = openat(job, STAMP, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY), n;

	if (fd < 0)
		return -1;
	text = read_fd(fd, 0, MAX_STAMP, STAMP, &err);
	close(fd);
	free(err);
	if (text == NULL)
		return -1;
	n = sscanf(text, "xsite-job uid=%u made=%lld ended=%lld", &s->uid, &s->made, &s->ended);
	free(text);
	return n == 3 ? 0 : -1;
}

static int write_stamp(int job, const struct stamp *s, char **err)
{
	char text[MAX_STAMP], *warn = NULL;
	int rc;

	snprintf(text, sizeof(text), "xsite-job uid=%u made=%lld ended=%lld\n", s->uid, s->made, s->ended);
	rc = replace_file(job, STAMP, text, 0, (uid_t)-1, err, &warn);
	free(warn);
	return rc;
}

/*
 * A new job directory for st, complete with its stamp, put in place as
 * spool/name at once (made as .new.XXXXXXXXXX, then renamed); 0, or -1 with
 * errno EEXIST when another step put one there first.
 */
static int new_job_dir(int spool, const char *name, const struct xsite_report_step *st, char **err)
{
	char fresh[32];
	struct stamp s = { (unsigned)st->uid, (long long)time(NULL), 0 };
	int fd, rc = -1, e;

	if (mkdir_new(spool, FRESH, fresh, sizeof(fresh), 0700) < 0) {
		*err = xsite_fmt("cannot create a new directory: %s", strerror(errno));
		return -1;
	}
	fd = openat(spool, fresh, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && write_stamp(fd, &s, err) == 0)
		rc = renameat(spool, fresh, spool, name);
	e = errno;
	if (rc < 0) {
		if (fd >= 0)
			unlinkat(fd, STAMP, 0);
		unlinkat(spool, fresh, AT_REMOVEDIR);
		if (*err == NULL && e != EEXIST && e != ENOTEMPTY)
			*err = xsite_fmt("cannot make %s/: %s", name, strerror(e));
	}
	if (fd >= 0)
		close(fd);
	errno = (e == ENOTEMPTY) ? EEXIST : e;
	return rc;
}

/*
 * The job's directory in ReportDir, *group ReportDir's group (the
 * administrators').  create (a step starts): made if missing, and an earlier
 * job's directory with this id is moved aside (*note says so); else (a step
 * ends; note may be NULL) it must be there and be this job's.
 */
static int open_job(const char *dir, const struct xsite_report_step *st, int create, gid_t *group,
		    char **note, char **err)
{
	char name[16], prefix[32], aside[48];
	struct stat ss, js, ls;
	struct stamp s;
	int spool, fd = -1, i, lock = -1;

	spool = open_spool(dir, &ss, err);
	if (spool < 0)
		return -1;
	*group = ss.st_gid;
	snprintf(name, sizeof(name), "%u", st->jobid);
	if (create) {
		/*
		 * Steps starting at once take turns to look and to make.  A file
		 * system that cannot lock (NFS without its lock service) goes
		 * without: the new directory still appears whole (renamed into
		 * place), and a directory is only moved aside while it is the one
		 * looked at.
		 */
		lock = lock_spool(spool, ss.st_dev, XSITE_SPOOL_LOCK_TIMEOUT_MS);
		if (lock < 0 && errno == ETIMEDOUT) {
			*err = xsite_fmt("ReportDir %s: locked by another step for more than %d s", dir,
					 XSITE_SPOOL_LOCK_TIMEOUT_MS / 1000);
			goto fail;
		}
	}
	for (i = 0; i < 4; i++) {
		fd = open_root_dir(spool, name, ss.st_dev, &js);
		if (fd < 0 && errno == ENOENT && create) {
			if (new_job_dir(spool, name, st, err) < 0 && errno != EEXIST)
				goto fail;
			continue;
		}
		if (fd < 0) {
			*err = xsite_fmt("ReportDir %s: %s/: %s", dir, name,
					 errno == ENOENT ? "missing" : "not a directory of root's on ReportDir's file system");
			goto fail;
		}
		if (read_stamp(fd, &s) < 0)
			s = (struct stamp){ (unsigned)-1, 0, 0 };
		if (s.uid == (unsigned)st->uid && (!create || s.ended == 0))
			break;
		if (!create) {
			if (s.made)
				*err = xsite_fmt("ReportDir %s: %s/ is not this job's (made for uid %u)", dir, name,
						 s.uid);
			else
				*err = xsite_fmt("ReportDir %s: %s/ is not this job's (no identity stamp)", dir,
						 name);
			goto fail;
		}
		/* an earlier job's: moved aside (pruned with ReportRetention), if still there */
		snprintf(prefix, sizeof(prefix), STALE "%s.", name);
		if (fstatat(spool, name, &ls, AT_SYMLINK_NOFOLLOW) < 0 || ls.st_ino != js.st_ino ||
		    ls.st_dev != js.st_dev) {
			close(fd);
			fd = -1;
			continue;
		}
		if (random_name(aside, sizeof(aside), prefix) < 0 ||
		    renameat2(spool, name, spool, aside, RENAME_NOREPLACE) < 0) {
			*err = xsite_fmt("ReportDir %s: %s/ is an earlier job's and cannot be moved aside: %s",
					 dir, name, strerror(errno));
			goto fail;
		}
		free(*note);
		if (s.made)
			*note = xsite_fmt("ReportDir %s: %s/ was an earlier job's (uid %u, %s): moved to %s",
					  dir, name, s.uid, s.ended ? "ended" : "no end seen", aside);
		else
			*note = xsite_fmt("ReportDir %s: %s/ had no identity stamp (an earlier job's): moved to %s",
					  dir, name, aside);
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		*err = xsite_fmt("ReportDir %s: %s/: cannot make it", dir, name);
		goto fail;
	}
	if (create)
		futimens(fd, NULL);	/* a running job's directory is never old */
	if (lock >= 0)
		close(lock);
	close(spool);
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	if (lock >= 0)
		close(lock);
	close(spool);
	return -1;
}

/* "a; b" of two optional messages (frees both). */
static char *join(char *a, char *b)
{
	char *j;

	if (a == NULL)
		return b;
	if (b == NULL)
		return a;
	j = xsite_fmt("%s; %s", a, b);
	free(a);
	free(b);
	return j;
}

int xsite_report_prepare(const char *dir, const struct xsite_report_step *st, char **traffic,
			 char **err)
{
	struct stat js, ms;
	gid_t group;
	char *warn = NULL, *note = NULL;
	int job, mpi = -1, rc = -1;

	*traffic = NULL;
	*err = NULL;
	job = open_job(dir, st, 1, &group, &note, err);
	if (job < 0)
		goto out;
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
	mpi = open_here(job, MPI_DIR, O_RDONLY | O_DIRECTORY);
	if (mpi < 0 || fstat(mpi, &ms) < 0 || fstat(job, &js) < 0 || ms.st_dev != js.st_dev) {
		*err = xsite_fmt("ReportDir %s: %u/" MPI_DIR "/: %s", dir, st->jobid,
				 mpi < 0 ? not_here(errno) : "not on ReportDir's file system");
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
	/* a missing ACL, a directory moved aside: worth a log line (*err), not a missing record */
	rc = 0;
	*err = join(note, warn);
	note = warn = NULL;
	if (*err != NULL)
		rc = 1;
out:
	free(warn);
	free(note);
	if (mpi >= 0)
		close(mpi);
	if (job >= 0)
		close(job);
	return rc;
}

/* The step's traffic record from the user's mpi/ directory (then removed). */
static char *take_traffic(int job, const struct xsite_report_step *st, long max, char **note)
{
	char name[64], *text = NULL, *err = NULL;
	struct stat js, ms, fs;
	int mpi, fd;

	snprintf(name, sizeof(name), "traffic-%s.json", st->step);
	mpi = open_here(job, MPI_DIR, O_RDONLY | O_DIRECTORY);
	/* the owner's while the job runs; root's once it ended (a shared ReportDir) */
	if (mpi < 0 || fstat(mpi, &ms) < 0 || fstat(job, &js) < 0 || ms.st_dev != js.st_dev ||
	    (ms.st_uid != st->uid && ms.st_uid != 0)) {
		*note = xsite_fmt("no MPI traffic record (" MPI_DIR "/ missing, not the owner's, or not on "
				  "ReportDir's file system)");
		if (mpi >= 0)
			close(mpi);
		return NULL;
	}
	fd = open_here(mpi, name, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT)
			*note = xsite_fmt("no MPI traffic record (libxsite not loaded, or no MPI in the step)");
		else
			*note = xsite_fmt("MPI traffic record %s ignored: %s", name,
					  errno == ELOOP ? "a symbolic link" :
					  errno == EXDEV ? "a file system mounted on it" : strerror(errno));
		unlinkat(mpi, name, 0);
		close(mpi);
		return NULL;
	}
	if (fstat(fd, &fs) == 0 && S_ISREG(fs.st_mode) && fs.st_uid == st->uid && fs.st_size > max)
		*note = xsite_fmt("MPI traffic record ignored: %s: %lld bytes, over TrafficMaxSize (%ld bytes); "
				  "not read", name, (long long)fs.st_size, max);
	else if ((text = read_fd(fd, st->uid, max, name, &err)) == NULL)
		*note = xsite_fmt("MPI traffic record ignored: %s", err ? err : "out of memory");
	free(err);
	close(fd);
	unlinkat(mpi, name, 0);
	close(mpi);
	return text;
}

/*
 * Root's file name in the job's directory, at most max bytes: NULL when
 * there is none, or with *err when it cannot be read.
 */
static char *read_root_file(int job, const char *name, long max, char **err)
{
	int fd = openat(job, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	char *text;

	*err = NULL;
	if (fd < 0) {
		if (errno != ENOENT)
			*err = xsite_fmt("%s: %s", name, strerror(errno));
		return NULL;
	}
	text = read_fd(fd, 0, max, name, err);
	close(fd);
	return text;
}

/* The job's lock file `name` (root's; made if missing), locked within timeout_ms. */
static int lock_job(int job, const char *name, int timeout_ms, char **err)
{
	struct stat ls;
	int fd = openat(job, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0 && errno == EEXIST)
		fd = openat(job, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || fstat(fd, &ls) < 0 || !S_ISREG(ls.st_mode) || ls.st_uid != 0) {
		*err = xsite_fmt("%s: %s", name, fd < 0 ? strerror(errno) : "not a regular file of root's");
		goto fail;
	}
	if (lock_within(fd, timeout_ms) < 0) {
		*err = xsite_fmt("%s: %s", name, errno == ETIMEDOUT ?
				 "held by another step for longer than the wait allowed" : strerror(errno));
		goto fail;
	}
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

int xsite_report_finish(struct xsite_lua *x, const char *dir, const struct xsite_report_step *st,
			const char *start_json, long max_traffic, char **text, char **err)
{
	char finish[32], *traffic = NULL, *note = NULL, *existing = NULL, *log = NULL, *warn = NULL;
	char *lerr = NULL, *rerr = NULL;
	struct xsite_step_end end = { 0 };
	struct timespec now;
	gid_t group;
	int job, lock = -1, rc = -1;

	*text = NULL;
	*err = NULL;
	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(finish, sizeof(finish), "%lld.%03ld", (long long)now.tv_sec, now.tv_nsec / 1000000);
	job = open_job(dir, st, 0, &group, NULL, err);
	if (job < 0)
		return -1;
	traffic = take_traffic(job, st, max_traffic, &note);

	lock = lock_job(job, LOCK, XSITE_LOCK_TIMEOUT_MS, &lerr);
	if (lock < 0) {
		*err = xsite_fmt("ReportDir %s: %u/%s", dir, st->jobid, lerr ? lerr : "out of memory");
		goto out;
	}
	existing = read_root_file(job, RECORD, XSITE_MAX_RECORD, &rerr);
	if (rerr != NULL) {
		slurm_error("xsite: ReportDir %s: %u/%s; replaced", dir, st->jobid, rerr);
		free(rerr);
	}
	end.start = start_json;
	end.finish = finish;
	end.traffic = traffic;
	end.note = note;
	end.existing = existing;
	if (xsite_lua_step_end(x, &end, text, &log) < 0) {
		*err = xsite_printable(xsite_lua_error(x), 1024, XSITE_PRINT_ASCII);
		goto out;
	}
	if (log != NULL && log[0] != '\0') {
		char *safe = xsite_printable(log, 4096, XSITE_PRINT_ASCII);

		slurm_info("xsite: %s", safe ? safe : "(out of memory)");
		free(safe);
	}
	if (replace_file(job, RECORD, *text, group, st->uid, err, &warn) < 0)
		goto out;
	if (warn != NULL) {
		slurm_info("xsite: ReportDir %s: %s", dir, warn);
		free(warn);
	}
	rc = 0;
out:
	if (lock >= 0)
		close(lock);
	close(job);
	free(traffic);
	free(note);
	free(existing);
	free(log);
	free(lerr);
	if (rc < 0) {
		free(*text);
		*text = NULL;
		if (*err == NULL)
			*err = xsite_fmt("ReportDir %s: %u: %s", dir, st->jobid, strerror(errno));
	}
	return rc;
}

/* ---- the user's copy ---------------------------------------------------------- */

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

/*
 * In the child, as the user: write the copy; a message on failure.  The new
 * file's name comes from mkostemp (O_EXCL, random), beside the target.
 */
static char *write_copy(const char *text, const char *path, const char *cwd, uint32_t jobid)
{
	char *target, *tmp;
	int fd;

	if (path[0] != '/' && (cwd == NULL || chdir(cwd) < 0))
		return xsite_fmt("--xsite-report=%s: cannot enter the job's working directory %s: %s",
				 path, cwd ? cwd : "(unknown)", cwd ? strerror(errno) : "no PWD");
	target = copy_target(path, jobid);
	if (target == NULL)
		return xsite_fmt("--xsite-report=%s: out of memory", path);
	tmp = xsite_fmt("%s.XXXXXX", target);
	if (tmp == NULL)
		return xsite_fmt("--xsite-report=%s: out of memory", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return xsite_fmt("--xsite-report: cannot create %s: %s", tmp, strerror(errno));
	if (fchmod(fd, 0640) < 0 || write_all(fd, text, strlen(text)) < 0 || fsync(fd) < 0 ||
	    close(fd) < 0) {
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

enum xsite_wait xsite_child_wait(pid_t pid, int fd, int timeout_ms, char *msg, size_t len,
				 int *status)
{
	struct timespec t0;
	char sink[512];
	size_t got = 0;
	long long left;
	ssize_t n;
	pid_t w;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	*status = 0;
	msg[0] = '\0';
	/* its message, until it closes the pipe (it exits) */
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };

		left = timeout_ms - ms_since(&t0);
		if (left <= 0)
			goto expired;
		n = poll(&p, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			goto expired;
		if (n < 0)
			break;
		if (got + 1 < len)
			n = read(fd, msg + got, len - 1 - got);
		else
			n = read(fd, sink, sizeof(sink));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		if (got + 1 < len) {
			got += (size_t)n;
			msg[got] = '\0';
		}
	}
	/* then its exit status */
	for (;;) {
		w = waitpid(pid, status, WNOHANG);
		if (w == pid)
			return XSITE_WAIT_EXITED;
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			/* reaped by someone else (SIGCHLD ignored): its message says it all */
			*status = 0;
			return XSITE_WAIT_EXITED;
		}
		if (timeout_ms - ms_since(&t0) <= 0)
			goto expired;
		nap_ms(5);
	}
expired:
	kill(pid, SIGKILL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (ms_since(&t0) < 2000) {
		w = waitpid(pid, status, WNOHANG);
		if (w == pid || (w < 0 && errno != EINTR))
			return XSITE_WAIT_KILLED;
		nap_ms(5);
	}
	return XSITE_WAIT_LOST;
}

int xsite_report_copy(const char *text, const char *path, const char *cwd,
		      const struct xsite_report_step *st, int timeout_ms, char **err)
{
	struct passwd pw, *pwp = NULL;
	char pwbuf[4096], msg[1024];
	gid_t groups[256];
	int ngroups = 256, pipefd[2], status = 0;
	enum xsite_wait how;
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
		int out = pipefd[1], fd;

		close(pipefd[0]);
		/*
		 * Nothing of slurmstepd's goes with the writer but its end of the
		 * pipe: a writer the user's file system holds (FUSE) cannot be
		 * killed, and must not hold a lock or a file of root's meanwhile.
		 */
		if (out != 3 && dup2(out, 3) == 3)
			out = 3;
		if (close_range((unsigned)out + 1, ~0U, 0) < 0) {
			for (fd = out + 1; fd < 65536; fd++)
				close(fd);
		}
		for (fd = 3; fd < out; fd++)
			close(fd);
		/* a hung file system ends the writer too (root does not wait for it) */
		signal(SIGALRM, SIG_DFL);
		sigemptyset(&all);
		sigaddset(&all, SIGALRM);
		sigprocmask(SIG_UNBLOCK, &all, NULL);
		alarm((unsigned)(timeout_ms + 999) / 1000);
		if (setgroups((size_t)ngroups, groups) < 0 || setresgid(st->gid, st->gid, st->gid) < 0 ||
		    setresuid(st->uid, st->uid, st->uid) < 0 || (st->uid != 0 && setuid(0) == 0))
			why = xsite_fmt("--xsite-report: cannot become uid %u: %s", (unsigned)st->uid,
					strerror(errno));
		else
			why = write_copy(text, path, cwd, st->jobid);
		if (why != NULL) {
			n = write(out, why, strlen(why));
			(void)n;
		}
		_exit(why != NULL);
	}
	close(pipefd[1]);
	how = xsite_child_wait(pid, pipefd[0], timeout_ms, msg, sizeof(msg), &status);
	close(pipefd[0]);
	if (how != XSITE_WAIT_EXITED) {
		*err = xsite_fmt("--xsite-report: the writer (uid %u) did not finish within %d s (stopped "
				 "or hung): killed%s; no copy", (unsigned)st->uid, timeout_ms / 1000,
				 how == XSITE_WAIT_LOST ? ", not yet reaped" : "");
		return -1;
	}
	if (msg[0] != '\0') {
		*err = xsite_printable(msg, sizeof(msg), XSITE_PRINT_ASCII);
		return -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char *safe = xsite_printable(path, 256, XSITE_PRINT_ASCII);

		*err = xsite_fmt("--xsite-report=%s: the writer died (%s)", safe ? safe : "?",
				 WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "failed");
		free(safe);
		return -1;
	}
	return 0;
}

/* Whether the job's record (job: its directory) is still text, as this step wrote it. */
static int record_is(int job, const char *text)
{
	char *now, *rerr = NULL;
	int fd = openat(job, RECORD, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY), same;

	if (fd < 0)
		return 0;
	now = read_fd(fd, 0, (long)strlen(text), RECORD, &rerr);
	close(fd);
	same = now != NULL && strcmp(now, text) == 0;
	free(now);
	free(rerr);
	return same;
}

int xsite_report_deliver(const char *dir, const struct xsite_report_step *st, const char *text,
			 const char *path, const char *cwd, int timeout_ms, char **err)
{
	char *lerr = NULL;
	gid_t group;
	int job, lock, rc;

	*err = NULL;
	job = open_job(dir, st, 0, &group, NULL, err);
	if (job < 0)
		return -1;
	/* the step before holds the turn while its writer runs: timeout_ms, then 2 s to reap it */
	lock = lock_job(job, COPY_LOCK, timeout_ms + 3000, &lerr);
	if (lock < 0) {
		*err = xsite_fmt("--xsite-report: ReportDir %s: %u/%s; no copy from this step", dir,
				 st->jobid, lerr ? lerr : "out of memory");
		free(lerr);
		close(job);
		return -1;
	}
	if (record_is(job, text))
		rc = xsite_report_copy(text, path, cwd, st, timeout_ms, err);
	else
		rc = 1;	/* a later step's record: that step writes the copy */
	close(lock);
	close(job);
	return rc;
}

/* ---- the end of a job, and ReportRetention ------------------------------------ */

/*
 * A directory of the user's made root's (fd): owner root, mode 0700, no ACL
 * that gives anyone a way in (libacl has no call for a directory's default
 * ACL by fd: the ACLs go whole).  -1 with errno when it cannot be.
 */
static int take_over(int fd)
{
	if (fchown(fd, 0, 0) < 0 || fchmod(fd, 0700) < 0)
		return -1;
	if ((fremovexattr(fd, "system.posix_acl_access") < 0 && errno != ENODATA && errno != ENOTSUP) ||
	    (fremovexattr(fd, "system.posix_acl_default") < 0 && errno != ENODATA && errno != ENOTSUP))
		return -1;
	return 0;
}

/*
 * The directory of job jobid of uid once the job has ended (job_epilog):
 * 0 with *job (-1: there is none), ReportDir's stat (*ss), the directory's
 * (*js) and its stamp (*s); 1 with *err when it is not this job's (left
 * alone); -1 with *err when ReportDir cannot be used.
 */
static int open_ended_job(const char *dir, uint32_t jobid, uid_t uid, struct stat *ss, struct stat *js,
			  struct stamp *s, int *job, char **err)
{
	char name[16];
	int spool, e;

	*job = -1;
	spool = open_spool(dir, ss, err);
	if (spool < 0)
		return -1;
	snprintf(name, sizeof(name), "%u", jobid);
	*job = open_root_dir(spool, name, ss->st_dev, js);
	e = errno;
	close(spool);
	if (*job < 0) {
		if (e == ENOENT)
			return 0;
		*err = xsite_fmt("ReportDir %s: %s/: not a directory of root's on ReportDir's file system; "
				 "left alone", dir, name);
		return 1;
	}
	if (read_stamp(*job, s) < 0 || s->uid != (unsigned)uid) {
		*err = xsite_fmt("ReportDir %s: %s/ is not this job's (uid %u); left alone", dir, name,
				 (unsigned)uid);
		close(*job);
		*job = -1;
		return 1;
	}
	return 0;
}

/*
 * The owner's directories in mpi/ (dir, root's already) made root's too
 * (take_over), top-down, each one before its entries are read: a process of
 * the owner's that still holds one open (one of another job on the node)
 * can add no entry anywhere in the tree once the job has ended.  Never
 * follows a symlink, enters no mount nor another file system, leaves other
 * users' directories as they are; at most *budget entries (files too)
 * looked at and XSITE_PRUNE_DEPTH levels (depth: the level of dir's
 * entries, mpi/'s being 1).  0: done; 1: not all of it (past those
 * bounds, or a directory of another file system or user in it: what is
 * left stays as it is until ReportRetention); -1 with errno: one could not
 * be taken.
 */
static int take_over_tree(int dir, dev_t dev, uid_t owner, int depth, long *budget)
{
	struct dirent *e;
	struct stat st;
	DIR *d;
	int self, fd, rc = 0, saved = 0;

	self = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (self < 0)
		return -1;
	d = fdopendir(self);
	if (d == NULL) {
		saved = errno;
		close(self);
		errno = saved;
		return -1;
	}
	while (rc >= 0 && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		/* every entry counts: a directory of a million files is no cheaper to read */
		if (--*budget < 0) {
			rc = 1;
			break;
		}
		if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)
			continue;
		/* not a directory (ENOTDIR, ELOOP), a mount (EXDEV) or gone: as it is */
		fd = open_here(self, e->d_name, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0) {
			rc = -1;
		} else if (st.st_dev == dev && st.st_uid == owner) {
			int r = depth > XSITE_PRUNE_DEPTH ? 1 : take_over(fd);

			if (r == 0)
				r = take_over_tree(fd, dev, owner, depth + 1, budget);
			if (r < 0 || (r > 0 && rc == 0))
				rc = r;
		} else if (st.st_dev != dev || st.st_uid != 0) {
			/* another file system (a btrfs subvolume), another user's: left, and told */
			if (rc == 0)
				rc = 1;
		}
		if (rc < 0)
			saved = errno;	/* close and closedir may change it */
		close(fd);
	}
	closedir(d);
	if (rc < 0)
		errno = saved;
	return rc;
}

/*
 * mpi/ (fd), of the job's directory js, made root's again, and the owner's
 * directories in it (take_over_tree): 0; 1 past take_over_tree's bounds;
 * -1 with errno (EXDEV: mpi/ is on another file system, not asked).
 */
static int take_back(int mpi, const struct stat *js, uid_t uid)
{
	struct stat ms;
	long budget = XSITE_PRUNE_FILES;

	if (fstat(mpi, &ms) < 0)
		return -1;
	if (ms.st_dev != js->st_dev) {
		errno = EXDEV;
		return -1;
	}
	if (take_over(mpi) < 0)
		return -1;
	return take_over_tree(mpi, ms.st_dev, uid, 1, &budget);
}

int xsite_report_job_end(const char *dir, uint32_t jobid, uid_t uid, char **err)
{
	char name[16];
	struct stat ss, js;
	struct stamp s;
	const char *why = NULL;	/* mpi/ could not be taken back */
	char past[128];
	int job = -1, mpi = -1, tree, rc;

	*err = NULL;
	rc = open_ended_job(dir, jobid, uid, &ss, &js, &s, &job, err);
	if (rc != 0 || job < 0)
		return rc;
	rc = -1;
	snprintf(name, sizeof(name), "%u", jobid);
	mpi = open_here(job, MPI_DIR, O_RDONLY | O_DIRECTORY);
	if (mpi >= 0) {
		/* root's again, its directories too, and no ACL of the user's gives anyone a way in */
		tree = take_back(mpi, &js, uid);
		if (tree < 0)
			why = errno == EXDEV ? not_here(EXDEV) : strerror(errno);
		else if (tree > 0) {
			snprintf(past, sizeof(past), "not all of it: past %d entries or %d levels, or another user's "
				 "directory or file system in it", XSITE_PRUNE_FILES, XSITE_PRUNE_DEPTH);
			why = past;
		}
	} else if (errno == EXDEV) {
		why = not_here(errno);
	} else if (errno != ENOENT) {
		*err = xsite_fmt("ReportDir %s: %s/" MPI_DIR "/: %s", dir, name,
				 errno == ELOOP || errno == ENOTDIR ? "not a directory" : strerror(errno));
	}
	if (why != NULL)
		*err = xsite_fmt("ReportDir %s: %s/" MPI_DIR "/: cannot take it back: %s", dir, name, why);
	if (*err != NULL) {
		/*
		 * mpi/ stays as it is (a mount of the user's over it, one root
		 * may not look into): the owner loses the way to it, their ACL on
		 * the job's directory, and with it to the record (the copy they
		 * asked for still reached them); the job's end is noted all the same
		 */
		char *more = NULL;

		if (fremovexattr(job, "system.posix_acl_access") < 0 && errno != ENODATA && errno != ENOTSUP)
			more = xsite_fmt("%s; and the owner's way in stays: %s", *err, strerror(errno));
		else
			more = xsite_fmt("%s; the owner may no longer enter %s/", *err, name);
		if (more != NULL) {
			free(*err);
			*err = more;
		}
	}
	if (s.ended == 0) {
		char *serr = NULL;

		s.ended = (long long)time(NULL);
		if (write_stamp(job, &s, &serr) < 0) {
			if (*err == NULL)
				*err = serr;
			else
				free(serr);
			goto out;
		}
	}
	rc = *err == NULL ? 0 : -1;
out:
	if (mpi >= 0)
		close(mpi);
	close(job);
	return rc;
}

int xsite_report_slurm_nodes(struct xsite_lua *x, const char *dir, uint32_t jobid, uid_t uid,
			     uint32_t component, const char *nodes, char **err)
{
	char id[16], *existing = NULL, *text = NULL, *log = NULL, *lerr = NULL, *warn = NULL;
	struct stat ss, js;
	struct stamp s;
	int job = -1, lock = -1, rc;

	*err = NULL;
	rc = open_ended_job(dir, jobid, uid, &ss, &js, &s, &job, err);
	if (rc != 0 || job < 0)
		return rc;
	rc = -1;
	/*
	 * With or without a record: a step on another node may still be
	 * writing it (its tasks ignore the end of the job until KillWait), and
	 * a record that came later than this would never have Slurm's list.
	 * Under a lock of its own, which only epilogs take (a heterogeneous
	 * job's components'): the job's steps, ending at once by the hundred,
	 * cannot keep it past the wait.
	 */
	lock = lock_job(job, NODES_LOCK, XSITE_EPILOG_LOCK_TIMEOUT_MS, &lerr);
	if (lock < 0) {
		*err = xsite_fmt("ReportDir %s: %u/%s; Slurm's node list not kept (xsite tune leaves the record out)",
				 dir, jobid, lerr ? lerr : "out of memory");
		goto out;
	}
	existing = read_root_file(job, SLURM_NODES, XSITE_MAX_SLURM_NODES, &lerr);
	if (lerr != NULL)	/* root's file, written whole: not the user's doing; started anew */
		slurm_error("xsite: ReportDir %s: %u/%s; replaced", dir, jobid, lerr);
	snprintf(id, sizeof(id), "%u", component);
	if (xsite_lua_slurm_nodes(x, existing, id, nodes, &text, &log) < 0) {
		*err = xsite_printable(xsite_lua_error(x), 1024, XSITE_PRINT_ASCII);
		goto out;
	}
	if (replace_file(job, SLURM_NODES, text, ss.st_gid, uid, err, &warn) < 0)
		goto out;
	rc = 0;
	if (log != NULL || warn != NULL) {
		*err = xsite_fmt("ReportDir %s: %u/%s%s%s", dir, jobid, log ? log : "", log && warn ? "; " : "",
				 warn ? warn : "");
		rc = 1;
	}
out:
	if (lock >= 0)
		close(lock);
	close(job);
	free(existing);
	free(text);
	free(log);
	free(lerr);
	free(warn);
	if (rc < 0 && *err == NULL)
		*err = xsite_fmt("ReportDir %s: %u: %s", dir, jobid, strerror(errno));
	return rc;
}

/*
 * One removal of a tree of ReportDir: ReportDir (spool) and its file
 * system, the job's owner (whose directories, and root's, are removed; any
 * other user's stay where they are: a directory of someone else's that the
 * owner moved into the tree, a shared sticky one, must not lose its files
 * to root), the work left (each entry looked at, removed or kept costs
 * one), what was removed and what was kept.
 */
struct walk {
	int spool;
	dev_t dev;
	uid_t owner;	/* (uid_t)-1: not known (a tree of an older xsite's): any */
	long budget;
	long removed;	/* files and directories removed */
	unsigned kept;	/* directories of other users, and mounts, left in place */
};

/* Whether directory st may go in walk w: its owner's, or root's. */
static int may_remove(const struct walk *w, const struct stat *st)
{
	return w->owner == (uid_t)-1 || st->st_uid == w->owner || st->st_uid == 0;
}

/*
 * A name for a tree of ReportDir of owner's: prefix, the owner's uid, a
 * random suffix (PREFIX.UID.X).
 */
static int tree_name(char *name, size_t len, const char *prefix, uid_t owner)
{
	char head[32];

	snprintf(head, sizeof(head), "%s%u.", prefix, (unsigned)owner);
	return random_name(name, len, head);
}

/*
 * The name a tree of ReportDir is moved aside to before its removal (and a
 * directory too deep to remove at once, moved up): .stale.deep.UID.X, the
 * owner's uid in it for the removal that follows.
 */
static int deep_name(char *name, size_t len, uid_t owner)
{
	return tree_name(name, len, STALE "deep.", owner);
}

/*
 * The owner of spool/name, due for removal: the uid of its .stale.deep.UID.X
 * name, or of its stamp (a job directory, one moved aside, a new one, or a
 * .stale.deep.X of an xsite before the uid was in the name that holds a
 * whole job directory); root's when it has neither (nothing in it is
 * another user's), and (uid_t)-1 for a .stale.deep.X without a stamp (a
 * directory an older xsite moved up: any owner, as it removed them).
 */
static uid_t tree_owner(int spool, const char *name)
{
	int deep = strncmp(name, STALE "deep.", strlen(STALE "deep.")) == 0, fd;
	uid_t uid = deep ? (uid_t)-1 : 0;
	struct stamp s;

	if (deep) {
		const char *p = name + strlen(STALE "deep.");
		char *end;
		unsigned long v;

		if (*p >= '0' && *p <= '9') {
			v = strtoul(p, &end, 10);
			if (*end == '.' && v < (unsigned long)(uid_t)-1)
				return (uid_t)v;
		}
	}
	/* a job directory, or one an older xsite moved aside whole: its stamp */
	fd = openat(spool, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		if (read_stamp(fd, &s) == 0)
			uid = (uid_t)s.uid;
		close(fd);
	}
	return uid;
}

/*
 * fstatat(dir, name, st, AT_SYMLINK_NOFOLLOW) that asks no mount over name
 * (EXDEV; see open_here): what is looked at is the name's own inode.
 */
static int look_here(int dir, const char *name, struct stat *st)
{
	int fd = open_here(dir, name, O_PATH), rc, e;

	if (fd < 0)
		return -1;
	rc = fstat(fd, st);
	e = errno;	/* fstat's, for the caller: not close's */
	close(fd);
	errno = e;
	return rc;
}

/*
 * Move the directory name under parent (root's: see remove_tree), too deep
 * to remove now, up into ReportDir as .stale.deep.UID.X, made root's first
 * (take_over): a tree of the user's (mpi/) must not come within their reach
 * there.  Another user's directory, or one on another file system, is not
 * moved (1, counted as kept).
 */
static int move_up(int parent, const char *name, struct walk *w)
{
	struct stat st;
	char up[48];
	int fd, rc = -1;

	fd = open_here(parent, name, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0)
		goto out;
	if (st.st_dev != w->dev || !may_remove(w, &st)) {
		w->kept++;
		rc = 1;
		goto out;
	}
	/* parent is root's: the name is still the directory looked at */
	if (take_over(fd) < 0 || deep_name(up, sizeof(up), w->owner) < 0 ||
	    renameat2(parent, name, w->spool, up, RENAME_NOREPLACE) < 0)
		goto out;
	rc = 0;
out:
	close(fd);
	return rc;
}

/*
 * Remove name under parent, a tree, spending at most w->budget; a
 * directory deeper than XSITE_PRUNE_DEPTH is moved up into ReportDir as
 * .stale.deep.UID.X instead, to be removed from there.  Never follows a
 * symlink, never leaves the file system, never enters a directory of a user
 * but the owner and root (it stays, and the tree with it).  A directory of
 * the owner's is made root's (take_over) before its entries are read: from
 * then on the owner (a process of theirs still inside it) can neither add
 * an entry nor swap one for another user's directory under the walk.  0:
 * removed; 1: not yet (the budget ran out, or another user's directory is
 * in it); -1: cannot.
 */
static int remove_tree(int parent, const char *name, int depth, struct walk *w)
{
	struct dirent *e;
	struct stat st;
	DIR *d;
	int fd, rc = 0;

	w->budget--;
	fd = open_here(parent, name, O_RDONLY | O_DIRECTORY);
	if (fd < 0 && (errno == ENOTDIR || errno == ELOOP)) {
		/* not a directory (any more): it goes as it is */
		if (unlinkat(parent, name, 0) < 0)
			return errno == ENOENT ? 0 : -1;
		w->removed++;
		return 0;
	}
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -1;
	}
	/*
	 * Another file system that is no mount (a btrfs subvolume, which its
	 * owner may make: open_here does not stop there), or another user's
	 * directory: kept, and told, like a mount of the user's
	 */
	if (st.st_dev != w->dev || !may_remove(w, &st)) {
		close(fd);
		w->kept++;
		return 1;
	}
	if (st.st_uid != 0 && take_over(fd) < 0) {
		close(fd);
		return -1;
	}
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return -1;
	}
	while (w->budget > 0 && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (look_here(fd, e->d_name, &st) < 0) {
			w->budget--;
			if (errno == EXDEV) {
				/* a mount of the user's, which is not asked: kept
				 * for the administrator, as another user's directory */
				w->kept++;
				if (rc == 0)
					rc = 1;
			} else if (errno != ENOENT) {
				/* one that cannot be looked at: this tree cannot go,
				 * and the pruning goes on with the next one */
				rc = -1;
			}
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			/* a name in a directory of root's now, the owner's before:
			 * the owner could have removed it too */
			w->budget--;
			if (unlinkat(fd, e->d_name, 0) == 0)
				w->removed++;
			else if (errno != ENOENT)
				rc = -1;
		} else if (depth >= XSITE_PRUNE_DEPTH) {
			int r;

			w->budget--;
			r = move_up(fd, e->d_name, w);
			if (r != 0 && rc == 0)
				rc = r;
		} else {
			int r = remove_tree(fd, e->d_name, depth + 1, w);

			if (r < 0 || (r > 0 && rc == 0))
				rc = r;
		}
	}
	closedir(d);
	if (w->budget <= 0)
		return rc < 0 ? -1 : 1;
	if (unlinkat(parent, name, AT_REMOVEDIR) < 0) {
		if (errno == ENOENT)
			return 0;
		return errno == ENOTEMPTY ? (rc < 0 ? -1 : 1) : -1;
	}
	w->removed++;
	return rc;
}

/*
 * Whether spool/name is due: a job directory (digits) or one moved aside
 * (.stale.JOBID.X, .new.X), root's, unchanged for retention seconds (a .new.X:
 * twice that; a job directory whose end was never seen: twice that and at
 * least XSITE_PRUNE_UNENDED, as its job may still run); .stale.deep.X at once.
 */
static int due(int spool, const char *name, long retention, time_t now)
{
	struct stat st;
	struct stamp s;
	int fd, ended = 0;
	const char *p = name;
	long unended = 2 * retention;

	if (strncmp(name, STALE "deep.", strlen(STALE "deep.")) == 0)
		return 1;
	if (strncmp(name, STALE, strlen(STALE)) == 0) {
		p = name + strlen(STALE);
		ended = 1;	/* an earlier job's: its end is past */
	} else if (strncmp(name, FRESH, strlen(FRESH)) == 0) {
		p = "0";
	} else if (unended < XSITE_PRUNE_UNENDED) {
		unended = XSITE_PRUNE_UNENDED;
	}
	if (*p < '0' || *p > '9')
		return 0;
	for (; *p >= '0' && *p <= '9'; p++)
		;
	if (*p != '\0' && *p != '.')
		return 0;
	if (fstatat(spool, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0)
		return 0;
	if (now - st.st_mtime < retention)
		return 0;
	fd = ended ? -1 : openat(spool, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		ended = read_stamp(fd, &s) == 0 && s.ended != 0;
		close(fd);
	}
	return ended || now - st.st_mtime >= unended;
}

int xsite_report_prune(const char *dir, long retention, time_t now, struct xsite_prune *done,
		       char **err)
{
	struct stat ss;
	struct dirent *e;
	char *text, *rerr = NULL, *warn = NULL, *cursor = NULL, resume[NAME_MAX + 1] = "";
	long pos = 0, here;
	struct walk w = { 0 };
	DIR *d = NULL;
	int spool, fd, lock, rc = -1;

	*err = NULL;
	memset(done, 0, sizeof(*done));
	if (retention <= 0)
		return 0;
	spool = open_spool(dir, &ss, err);
	if (spool < 0)
		return -1;
	w.spool = spool;
	w.dev = ss.st_dev;
	w.budget = XSITE_PRUNE_FILES;
	/* one pruner at a time, and never while a step makes its directory (where locks work) */
	lock = lock_spool(spool, ss.st_dev, 0);
	if (lock < 0 && (errno == EWOULDBLOCK || errno == EINTR)) {
		close(spool);
		return 0;
	}
	/*
	 * The cursor: where the last call stopped, as telldir's position and
	 * the name of the entry there ("POS NAME").  A position only holds
	 * while the directory keeps its offsets (ext4's are hashes; tmpfs
	 * numbers its entries in order, so every removal before it moves
	 * them): the entry read there must be the one named, else the scan
	 * starts again from the top.
	 */
	fd = openat(spool, CURSOR, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0) {
		text = read_fd(fd, 0, 32 + NAME_MAX, CURSOR, &rerr);
		if (text != NULL) {
			char *end, *nl;

			pos = strtol(text, &end, 10);
			if (*end == ' ' && (nl = strchr(end + 1, '\n')) != NULL &&
			    (size_t)(nl - end - 1) < sizeof(resume)) {
				memcpy(resume, end + 1, (size_t)(nl - end - 1));
				resume[nl - end - 1] = '\0';
			} else {
				pos = 0;
			}
		}
		free(text);
		free(rerr);
		close(fd);
	}
	fd = openat(spool, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (d == NULL) {
		*err = xsite_fmt("ReportDir %s: %s", dir, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	if (pos > 0 && resume[0] != '\0') {
		seekdir(d, pos);
		here = telldir(d);
		e = readdir(d);
		if (e == NULL || strcmp(e->d_name, resume) != 0)
			rewinddir(d);
		else
			seekdir(d, here);
	}
	for (;;) {
		here = telldir(d);
		e = readdir(d);
		if (e == NULL) {
			pos = 0;
			resume[0] = '\0';
			done->wrapped = 1;
			break;
		}
		if (done->scanned >= XSITE_PRUNE_SCAN || w.budget <= 0) {
			/* the next call starts at this entry, not yet looked at */
			pos = here;
			snprintf(resume, sizeof(resume), "%s", e->d_name);
			break;
		}
		done->scanned++;
		if (!due(spool, e->d_name, retention, now))
			continue;
		{
			long removed = w.removed;
			unsigned kept = w.kept;
			char gone[48];
			const char *name = e->d_name;
			int r;

			w.owner = tree_owner(spool, name);
			/*
			 * Moved aside first, as .stale.deep.UID.X, which is due at
			 * once: removing what is in a directory changes its mtime,
			 * so a tree whose removal the budget cuts short would
			 * otherwise look young to the next call and stay another
			 * ReportRetention.
			 */
			if (strncmp(name, STALE "deep.", strlen(STALE "deep.")) != 0) {
				if (deep_name(gone, sizeof(gone), w.owner) < 0 ||
				    renameat2(spool, name, spool, gone, RENAME_NOREPLACE) < 0)
					continue;
				name = gone;
			}
			r = remove_tree(spool, name, 0, &w);
			done->files += (unsigned)(w.removed - removed);
			if (r == 0)
				done->removed++;
			if (r > 0 && w.budget > 0 && w.kept > kept) {
				/*
				 * all that is left is other users' directories: the
				 * tree goes aside as .kept.UID.X, which is never due,
				 * for the administrator (not walked at every epilog)
				 */
				char aside[48];

				if (tree_name(aside, sizeof(aside), KEPT, w.owner) == 0)
					(void)renameat2(spool, name, spool, aside, RENAME_NOREPLACE);
			}
			if (r > 0 && w.budget <= 0) {
				/* the budget ran out inside it: the next call starts at the top */
				pos = 0;
				resume[0] = '\0';
				break;
			}
		}
	}
	done->kept = w.kept;
	cursor = xsite_fmt("%ld %s\n", pos, resume);
	if (cursor == NULL) {
		*err = xsite_fmt("ReportDir %s: out of memory", dir);
		goto out;
	}
	if (replace_file(spool, CURSOR, cursor, 0, (uid_t)-1, err, &warn) < 0)
		goto out;
	rc = 0;
out:
	free(cursor);
	free(warn);
	if (d != NULL)
		closedir(d);
	if (lock >= 0)
		close(lock);
	close(spool);
	return rc;
}
