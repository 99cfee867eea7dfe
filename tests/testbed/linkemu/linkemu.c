/*
 * linkemu: a user-space delay line for the xsite testbed's emulated extender
 * link.
 *
 * The kernel here has no netem, so the one-way latency of the link is added
 * in user space: linkemu owns a TUN device in the router namespace; policy
 * routing sends every packet that crosses between the sites into the TUN,
 * linkemu holds each packet for the configured one-way delay and writes it
 * back into the TUN, from where the kernel forwards it to the other site.
 * Bandwidth is shaped by tbf on the router's ports, not here.
 *
 *   linkemu --dev NAME --control SOCKET [--latency SECONDS]
 *           [--queue-bytes N] [--pidfile FILE] [--rt-priority N]
 *   linkemu ctl SOCKET COMMAND [ARG]
 *
 * Commands on the control socket (one line in, one line out):
 *   latency SECONDS   new one-way delay for packets read from now on;
 *                     packets already queued keep theirs, connections
 *                     are not dropped
 *   cut               drop every packet, queued and new (a dead fibre)
 *   restore           forward again
 *   stats             counters
 * A reply starts with "ok" or "error".
 *
 * The queue is bounded (--queue-bytes): a packet that does not fit is
 * dropped and counted.  Every change and every new kind of drop is logged
 * on stderr with a timestamp.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define PROG "linkemu"
/* Largest packet the TUN hands us: a 64 KiB GSO packet plus its virtio header. */
#define MAX_PKT (65536 + 64)
#define REC_HDR ((uint32_t)sizeof(struct rec))
#define MAX_REC (REC_HDR + MAX_PKT)
#define MAX_LATENCY 10.0 /* seconds */
#define READ_BURST 64

struct rec {
	uint64_t due_ns;
	uint32_t len;
	uint32_t size; /* bytes this record takes in the ring, aligned */
};

struct ring {
	unsigned char *buf;
	size_t cap;
	size_t head;     /* oldest record */
	size_t tail;     /* where the next record goes */
	size_t end_mark; /* records before this offset, then wrap to 0 */
	size_t count;
	size_t bytes; /* payload bytes queued */
};

struct counters {
	uint64_t received;
	uint64_t forwarded;
	uint64_t dropped_full;
	uint64_t dropped_cut;
	uint64_t write_errors;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void logmsg(const char *fmt, ...)
{
	struct timespec ts;
	struct tm tm;
	char stamp[32];
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "%s.%06ld " PROG ": ", stamp, ts.tv_nsec / 1000);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end != '\0' || v < 0.0 || v > MAX_LATENCY)
		return -1;
	*out = v;
	return 0;
}

/* ---- the ring of delayed packets ------------------------------------- */

static int ring_init(struct ring *r, size_t cap)
{
	*r = (struct ring){ 0 }; /* not memset: clang-tidy loses its zeroes */
	r->buf = malloc(cap);
	if (!r->buf)
		return -1;
	r->cap = cap;
	r->end_mark = cap;
	return 0;
}

/* Where a record of up to MAX_REC bytes can be written, or NULL if full. */
static struct rec *ring_slot(struct ring *r)
{
	if (r->count == 0) {
		r->head = r->tail = 0;
		r->end_mark = r->cap;
	}
	if (r->count == 0 || r->tail > r->head) {
		if (r->cap - r->tail >= MAX_REC)
			return (struct rec *)(r->buf + r->tail);
		if (r->count > 0 && r->head > MAX_REC) {
			/* Wrap: the reader skips from end_mark back to 0. */
			r->end_mark = r->tail;
			r->tail = 0;
			return (struct rec *)r->buf;
		}
		return NULL;
	}
	/* tail <= head with records queued: the gap in between */
	if (r->head - r->tail > MAX_REC)
		return (struct rec *)(r->buf + r->tail);
	return NULL;
}

static void ring_commit(struct ring *r, struct rec *rec)
{
	rec->size = (REC_HDR + rec->len + 7u) & ~7u;
	r->tail += rec->size;
	r->count++;
	r->bytes += rec->len;
}

static struct rec *ring_head(struct ring *r)
{
	if (r->count == 0)
		return NULL;
	if (r->head == r->end_mark) {
		r->head = 0;
		r->end_mark = r->cap;
	}
	return (struct rec *)(r->buf + r->head);
}

static void ring_pop(struct ring *r)
{
	struct rec *rec = ring_head(r);

	r->head += rec->size;
	r->count--;
	r->bytes -= rec->len;
	if (r->count == 0) {
		r->head = r->tail = 0;
		r->end_mark = r->cap;
	} else if (r->head == r->end_mark) {
		r->head = 0;
		r->end_mark = r->cap;
	}
}

/* ---- the TUN device -------------------------------------------------- */

static int tun_open(const char *name)
{
	struct ifreq ifr;
	unsigned int offload = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
	int fd;

	fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		logmsg("error: /dev/net/tun: %s", strerror(errno));
		return -1;
	}
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI | IFF_VNET_HDR;
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		logmsg("error: TUNSETIFF %s: %s", name, strerror(errno));
		close(fd);
		return -1;
	}
	/* GSO packets pass through whole: ~20x fewer packets to handle. */
	if (ioctl(fd, TUNSETOFFLOAD, offload) < 0) {
		logmsg("warning: TUNSETOFFLOAD %s: %s (running without offloads)",
		       name, strerror(errno));
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
		logmsg("error: O_NONBLOCK on %s: %s", name, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* ---- the control socket ---------------------------------------------- */

static int ctl_listen(const char *path)
{
	struct sockaddr_un sa;
	size_t plen = strlen(path);
	int fd;

	if (plen >= sizeof(sa.sun_path)) {
		logmsg("error: control socket path too long: %s", path);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		logmsg("error: socket: %s", strerror(errno));
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, plen + 1);
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0) {
		logmsg("error: control socket %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	chmod(path, 0600);
	return fd;
}

struct state {
	struct ring ring;
	struct counters c;
	double latency;
	int cut;
	int tun;
	int drop_logged;
};

static void flush_queue(struct state *st)
{
	while (st->ring.count > 0) {
		ring_pop(&st->ring);
		st->c.dropped_cut++;
	}
}

static void format_stats(struct state *st, char *out, size_t n)
{
	snprintf(out, n,
		 "latency=%.6f cut=%d queued_pkts=%zu queued_bytes=%zu "
		 "queue_limit=%zu received=%llu forwarded=%llu dropped_full=%llu "
		 "dropped_cut=%llu write_errors=%llu",
		 st->latency, st->cut, st->ring.count, st->ring.bytes, st->ring.cap,
		 (unsigned long long)st->c.received,
		 (unsigned long long)st->c.forwarded,
		 (unsigned long long)st->c.dropped_full,
		 (unsigned long long)st->c.dropped_cut,
		 (unsigned long long)st->c.write_errors);
}

static void handle_command(struct state *st, char *line, char *reply, size_t n)
{
	char *cmd, *arg, *save = NULL;
	char stats[512];
	double v;

	cmd = strtok_r(line, " \t\r\n", &save);
	arg = strtok_r(NULL, " \t\r\n", &save);
	if (!cmd) {
		snprintf(reply, n, "error empty command");
	} else if (strcmp(cmd, "latency") == 0) {
		if (!arg || parse_seconds(arg, &v) < 0) {
			snprintf(reply, n, "error latency: invalid value: %s (seconds, 0..%g)",
				 arg ? arg : "(none)", MAX_LATENCY);
		} else {
			logmsg("latency %.6f s -> %.6f s", st->latency, v);
			st->latency = v;
			snprintf(reply, n, "ok latency=%.6f", v);
		}
	} else if (strcmp(cmd, "cut") == 0) {
		size_t q = st->ring.count;

		flush_queue(st);
		if (!st->cut)
			logmsg("link cut (%zu queued packets dropped)", q);
		st->cut = 1;
		snprintf(reply, n, "ok cut=1");
	} else if (strcmp(cmd, "restore") == 0) {
		if (st->cut)
			logmsg("link restored");
		st->cut = 0;
		snprintf(reply, n, "ok cut=0");
	} else if (strcmp(cmd, "stats") == 0) {
		format_stats(st, stats, sizeof(stats));
		snprintf(reply, n, "ok %s", stats);
	} else {
		snprintf(reply, n, "error unknown command: %s", cmd);
	}
}

static void serve_client(struct state *st, int lfd)
{
	struct timeval tv = { .tv_sec = 1, .tv_usec = 0 };
	char line[256], reply[640];
	size_t len = 0, rlen;
	ssize_t got;
	int fd;

	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (len < sizeof(line) - 1) {
		got = read(fd, line + len, sizeof(line) - 1 - len);
		if (got <= 0)
			break;
		len += (size_t)got;
		if (memchr(line, '\n', len))
			break;
	}
	line[len] = '\0';
	/* one byte kept free for the newline */
	handle_command(st, line, reply, sizeof(reply) - 1);
	rlen = strlen(reply);
	reply[rlen++] = '\n';
	if (write(fd, reply, rlen) < 0)
		logmsg("warning: control reply: %s", strerror(errno));
	close(fd);
}

/* ---- the delay line -------------------------------------------------- */

static void release_due(struct state *st, uint64_t now)
{
	struct rec *rec;

	while ((rec = ring_head(&st->ring)) && rec->due_ns <= now) {
		if (write(st->tun, (unsigned char *)rec + REC_HDR, rec->len) < 0) {
			if (st->c.write_errors++ == 0)
				logmsg("warning: write to tun: %s", strerror(errno));
		} else {
			st->c.forwarded++;
		}
		ring_pop(&st->ring);
	}
}

static void read_packets(struct state *st, unsigned char *scratch)
{
	int i;

	for (i = 0; i < READ_BURST; i++) {
		struct rec *rec = st->cut ? NULL : ring_slot(&st->ring);
		unsigned char *dst = rec ? (unsigned char *)rec + REC_HDR : scratch;
		ssize_t n = read(st->tun, dst, MAX_PKT);

		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				logmsg("warning: read from tun: %s", strerror(errno));
			return;
		}
		st->c.received++;
		if (st->cut) {
			st->c.dropped_cut++;
		} else if (!rec) {
			if (st->c.dropped_full++ == 0 || !st->drop_logged)
				logmsg("queue full (%zu packets, %zu bytes): dropping",
				       st->ring.count, st->ring.bytes);
			st->drop_logged = 1;
		} else {
			rec->len = (uint32_t)n;
			rec->due_ns = now_ns() + (uint64_t)(st->latency * 1e9);
			ring_commit(&st->ring, rec);
			if (st->drop_logged && st->ring.count < 2)
				st->drop_logged = 0;
		}
		/* Keep the release of due packets on time during long bursts. */
		release_due(st, now_ns());
	}
}

static int run(const char *dev, const char *ctl_path, double latency,
	       size_t queue_bytes, const char *pidfile, int rt_prio)
{
	struct state st;
	struct pollfd pfd[2];
	struct sigaction sa;
	unsigned char *scratch = NULL;
	char stats[512];
	int lfd = -1, ret = 1;

	memset(&st, 0, sizeof(st));
	st.tun = -1;
	st.latency = latency;
	if (queue_bytes < 2 * (size_t)MAX_REC)
		queue_bytes = 2 * (size_t)MAX_REC;
	if (ring_init(&st.ring, queue_bytes) < 0 || !(scratch = malloc(MAX_PKT))) {
		logmsg("error: cannot allocate a queue of %zu bytes", queue_bytes);
		goto out;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* Wake-ups to the nanosecond, not to the default 50 us slack. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	if (rt_prio > 0) {
		struct sched_param sp = { .sched_priority = rt_prio };

		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
			logmsg("warning: SCHED_FIFO %d: %s (timing may suffer under load)",
			       rt_prio, strerror(errno));
	}

	st.tun = tun_open(dev);
	if (st.tun < 0)
		goto out;
	lfd = ctl_listen(ctl_path);
	if (lfd < 0)
		goto out;
	if (pidfile) {
		FILE *f = fopen(pidfile, "w");

		if (!f) {
			logmsg("error: pidfile %s: %s", pidfile, strerror(errno));
			goto out;
		}
		fprintf(f, "%ld\n", (long)getpid());
		fclose(f);
	}
	logmsg("started: dev=%s latency=%.6f s queue=%zu bytes control=%s",
	       dev, latency, queue_bytes, ctl_path);

	pfd[0].fd = st.tun;
	pfd[0].events = POLLIN;
	pfd[1].fd = lfd;
	pfd[1].events = POLLIN;
	while (!stop_signal) {
		struct timespec ts, *tsp = NULL;
		struct rec *rec;
		uint64_t now = now_ns();
		int rc;

		release_due(&st, now);
		rec = ring_head(&st.ring);
		if (rec) {
			uint64_t wait = rec->due_ns > now ? rec->due_ns - now : 0;

			ts.tv_sec = (time_t)(wait / 1000000000u);
			ts.tv_nsec = (long)(wait % 1000000000u);
			tsp = &ts;
		}
		rc = ppoll(pfd, 2, tsp, NULL);
		if (rc < 0) {
			if (errno == EINTR)
				continue;
			logmsg("error: poll: %s", strerror(errno));
			break;
		}
		if (pfd[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
			logmsg("error: tun %s went away", dev);
			break;
		}
		if (pfd[0].revents & POLLIN)
			read_packets(&st, scratch);
		if (pfd[1].revents & POLLIN)
			serve_client(&st, lfd);
	}

	format_stats(&st, stats, sizeof(stats));
	if (stop_signal)
		logmsg("stopping on signal %d: %s", (int)stop_signal, stats);
	else
		logmsg("stopping on error: %s", stats);
	unlink(ctl_path);
	if (pidfile)
		unlink(pidfile);
	ret = stop_signal ? 0 : 1;
out:
	if (lfd >= 0)
		close(lfd);
	if (st.tun >= 0)
		close(st.tun);
	free(scratch);
	free(st.ring.buf);
	return ret;
}

/* ---- the client side ------------------------------------------------- */

static int ctl_client(const char *path, int argc, char **argv)
{
	struct sockaddr_un sa;
	struct timeval tv = { .tv_sec = 5, .tv_usec = 0 };
	char msg[256] = "", reply[640];
	size_t len = 0, mlen = 0, plen = strlen(path);
	ssize_t got;
	int fd, i;

	/* the words, one space apart, then a newline: mlen + alen + 2 <
	 * sizeof(msg) leaves room for the space, the newline and the NUL */
	for (i = 0; i < argc; i++) {
		size_t alen = strlen(argv[i]);

		if (mlen + alen + 2 >= sizeof(msg)) {
			fprintf(stderr, PROG ": command too long\n");
			return 2;
		}
		if (i)
			msg[mlen++] = ' ';
		memcpy(msg + mlen, argv[i], alen);
		mlen += alen;
	}
	msg[mlen++] = '\n';
	msg[mlen] = '\0';
	if (plen >= sizeof(sa.sun_path)) {
		fprintf(stderr, PROG ": control socket path too long: %s\n", path);
		return 2;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, plen + 1);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, PROG ": cannot reach the delay line at %s: %s\n",
			path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (write(fd, msg, mlen) < 0) {
		fprintf(stderr, PROG ": %s: %s\n", path, strerror(errno));
		close(fd);
		return 1;
	}
	while (len < sizeof(reply) - 1) {
		got = read(fd, reply + len, sizeof(reply) - 1 - len);
		if (got <= 0 || (size_t)got > sizeof(reply) - 1 - len)
			break;
		len += (size_t)got;
	}
	if (len > sizeof(reply) - 1)
		len = sizeof(reply) - 1;
	reply[len] = '\0';
	close(fd);
	if (len == 0) {
		fprintf(stderr, PROG ": no reply from the delay line at %s\n", path);
		return 1;
	}
	fputs(reply, stdout);
	return strncmp(reply, "ok", 2) == 0 ? 0 : 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: " PROG " --dev NAME --control SOCKET [--latency SECONDS]\n"
		"               [--queue-bytes N] [--pidfile FILE] [--rt-priority N]\n"
		"       " PROG " ctl SOCKET latency SECONDS|cut|restore|stats\n");
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *ctl = NULL, *pidfile = NULL;
	double latency = 0.0;
	size_t queue_bytes = 64u << 20;
	int rt_prio = 0, i;

	if (argc >= 2 && strcmp(argv[1], "ctl") == 0) {
		if (argc < 4) {
			usage(stderr);
			return 2;
		}
		return ctl_client(argv[2], argc - 3, argv + 3);
	}
	for (i = 1; i < argc; i++) {
		const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(opt, "-h") == 0 || strcmp(opt, "--help") == 0) {
			usage(stdout);
			return 0;
		}
		if (!val) {
			fprintf(stderr, PROG ": %s: missing value\n", opt);
			return 2;
		}
		i++;
		if (strcmp(opt, "--dev") == 0) {
			dev = val;
		} else if (strcmp(opt, "--control") == 0) {
			ctl = val;
		} else if (strcmp(opt, "--pidfile") == 0) {
			pidfile = val;
		} else if (strcmp(opt, "--latency") == 0) {
			if (parse_seconds(val, &latency) < 0) {
				fprintf(stderr, PROG ": --latency: invalid value: %s\n", val);
				return 2;
			}
		} else if (strcmp(opt, "--queue-bytes") == 0) {
			char *end;
			unsigned long long v = strtoull(val, &end, 10);

			if (*end || end == val || v == 0) {
				fprintf(stderr, PROG ": --queue-bytes: invalid value: %s\n", val);
				return 2;
			}
			queue_bytes = (size_t)v;
		} else if (strcmp(opt, "--rt-priority") == 0) {
			rt_prio = atoi(val);
		} else {
			fprintf(stderr, PROG ": unknown option: %s\n", opt);
			usage(stderr);
			return 2;
		}
	}
	if (!dev || !ctl) {
		usage(stderr);
		return 2;
	}
	if (strlen(dev) >= IFNAMSIZ) {
		fprintf(stderr, PROG ": --dev: name too long: %s\n", dev);
		return 2;
	}
	return run(dev, ctl, latency, queue_bytes, pidfile, rt_prio);
}
