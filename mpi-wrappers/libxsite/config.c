/*
 * libxsite: tunables and logging.
 *
 * Every tunable is an environment variable with an in-code default and a
 * one-line description (the table below; README.md repeats it).  A bad value
 * is reported once, by world rank 0, and the default is kept.  Those that
 * shape a collective's messages must be the same on every rank (srun and
 * mpirun -x export them to all); xs_config_agree checks them at MPI_Init.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct xs_config xs_cfg;

enum kind { ONOFF, INT, PATH, AUTO_ONOFF, AUTO_INT };

/*
 * SAME: the value must be equal on every rank, or the ranks' collectives
 * would not match (different pieces, steps, paths or gathers) and the job
 * would hang; xs_config_agree checks it.  XSITE_INIT_FENCE must be equal too
 * but cannot be checked: the check is a message, and a message may go only
 * after the fence.  XSITE_VERBOSE, XSITE_TRAFFIC_FILE and XSITE_EDGES_MAX are
 * world rank 0's.
 */
enum agree { ANY, SAME };

/* a tunable's field in xs_cfg: its offset and width (an int or a long) */
#define FIELD(f) offsetof(struct xs_config, f), sizeof(((struct xs_config *)0)->f)

static const struct tunable {
	const char *name;
	enum kind kind;
	enum agree agree;
	const char *def;
	long min, max;
	size_t off, width;
	const char *desc;
} tunables[] = {
	{ "XSITE_COLL", ONOFF, SAME, "on", 0, 1, FIELD(coll),
	  "site-aware collectives on communicators that span two sites (on|off)" },
	{ "XSITE_INIT_FENCE", ONOFF, ANY, "on", 0, 1, FIELD(init_fence),
	  "a PMIx fence after MPI_Init, before the first message (Open MPI 4.1 start-up race)" },
	{ "XSITE_STREAMS", INT, SAME, "4", 1, 1024, FIELD(streams),
	  "rank pairs that carry a large message across the link in parallel" },
	{ "XSITE_LARGE_MSG", INT, SAME, "65536", 0, 1L << 40, FIELD(large_msg),
	  "bytes from which a collective splits its data over XSITE_STREAMS pairs" },
	{ "XSITE_PIPELINE", INT, SAME, "262144", 0, 1L << 40, FIELD(pipeline),
	  "bytes per stream pair in each step of a pipelined large reduction or broadcast (0: no pipeline)" },
	{ "XSITE_EAGER", AUTO_INT, SAME, "auto", 0, 1L << 40, FIELD(eager),
	  "largest message of a collective across the link (auto: the MPI library's eager limit less a header; 0: no limit)" },
	{ "XSITE_VERBOSE", INT, ANY, "0", 0, 2, FIELD(verbose),
	  "1: log each collective decision once per communicator and the traffic; 2: also the tunables" },
	{ "XSITE_NODE_LEVEL", AUTO_ONOFF, SAME, "auto", 0, 2, FIELD(node_level),
	  "node level inside a site (auto: where a site has several nodes with several ranks)" },
	{ "XSITE_NODE_SIZE", INT, SAME, "0", 0, 1 << 20, FIELD(node_size),
	  "for tests: every N consecutive ranks of a site form a node (0: MPI_COMM_TYPE_SHARED)" },
	{ "XSITE_MATRIX_MAX", INT, SAME, "512", 0, 1 << 16, FIELD(matrix_max),
	  "largest job (ranks) whose rank x rank traffic matrix goes into the record" },
	{ "XSITE_EDGES_MAX", INT, ANY, "262144", 0, 262144, FIELD(edges_max),
	  "beyond XSITE_MATRIX_MAX ranks: most entries of the traffic matrix that are not 0 the record lists" },
	{ "XSITE_HANDOFF", INT, SAME, "2", 0, XS_HANDOFF_MAX, FIELD(handoff),
	  "timed calls of each, libxsite's and the MPI library's, before the faster keeps a collective and size (0: libxsite's)" },
	{ "XSITE_TRAFFIC_FILE", PATH, ANY, "", 0, 0, FIELD(traffic),
	  "JSON traffic record written by rank 0 at MPI_Finalize (%j job id, %s step id)" },
};
#define NTUNABLES (sizeof(tunables) / sizeof(tunables[0]))

/* a tunable's value on this rank, into and out of its field in xs_cfg */
static void store(const struct tunable *t, long x)
{
	void *at = (char *)&xs_cfg + t->off;

	if (t->width == sizeof(int))
		*(int *)at = (int)x;
	else
		*(long *)at = x;
}

static long stored(const struct tunable *t)
{
	const void *at = (const char *)&xs_cfg + t->off;

	return t->width == sizeof(int) ? *(const int *)at : *(const long *)at;
}

static long parse(const struct tunable *t, const char *v, int *ok)
{
	char *end;
	long x;

	*ok = 1;
	switch (t->kind) {
	case ONOFF:
		if (!strcmp(v, "on") || !strcmp(v, "1") || !strcmp(v, "yes"))
			return 1;
		if (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "no"))
			return 0;
		break;
	case AUTO_ONOFF:
		if (!strcmp(v, "off") || !strcmp(v, "0"))
			return 0;
		if (!strcmp(v, "on") || !strcmp(v, "1"))
			return 1;
		if (!strcmp(v, "auto"))
			return 2;
		break;
	case AUTO_INT:
		if (!strcmp(v, "auto"))
			return -1;
		/* FALLTHROUGH */
	case INT:
		errno = 0;
		x = strtol(v, &end, 10);
		/* a K/M/G suffix (powers of 1024) for byte counts */
		if (end != v && (*end == 'K' || *end == 'k') && end[1] == '\0')
			x *= 1024L, end++;
		else if (end != v && *end == 'M' && end[1] == '\0')
			x *= 1024L * 1024, end++;
		else if (end != v && *end == 'G' && end[1] == '\0')
			x *= 1024L * 1024 * 1024, end++;
		if (!errno && end != v && *end == '\0' && x >= t->min && x <= t->max)
			return x;
		break;
	case PATH:
		return 0;
	}
	*ok = 0;
	return 0;
}

void xs_config_load(int world_rank)
{
	size_t i;

	for (i = 0; i < NTUNABLES; i++) {
		const struct tunable *t = &tunables[i];
		const char *v = getenv(t->name);
		int ok, bad = 0;
		long x;

		if (t->kind == PATH) {
			*(const char **)((char *)&xs_cfg + t->off) = v && *v ? v : NULL;
			continue;
		}
		if (!v || !*v)
			v = t->def;
		x = parse(t, v, &ok);
		if (!ok) {
			bad = 1;
			x = parse(t, t->def, &ok);
		}
		if (bad && world_rank == 0)
			fprintf(stderr, "xsite: %s: invalid value '%s', using %s\n",
				t->name, getenv(t->name), t->def);
		store(t, x);
	}
	if (xs_cfg.verbose >= 2 && world_rank == 0)
		for (i = 0; i < NTUNABLES; i++) {
			const char *v = getenv(tunables[i].name);

			xs_log("xsite:config: %s=%s (default %s): %s",
			       tunables[i].name, v ? v : "", tunables[i].def,
			       tunables[i].desc);
		}
}

/*
 * XSITE_EAGER=auto: libxsite's collectives cross the link in messages that
 * the MPI library sends eagerly (coll.c, xs_cross).  Open MPI's ob1 sends a
 * message larger than its transport's eager limit (btl/tcp:
 * btl_tcp_eager_limit, 64 KiB by default, header included) by rendezvous:
 * a request, the receiver's answer, then the rest, two one-way latencies
 * more than the data needs, which on a long link cost more than the data.
 * So a piece is at most the eager limit less EAGER_HEADER bytes for ob1's
 * header (a few dozen bytes), read through the MPI tool interface; where
 * the library has no such variable, no limit (one message, whatever its
 * size).
 * Ranks may read different values (MCA parameter files are per node) and
 * must agree: the smallest is taken, in xs_config_agree's allreduce.
 */
#define EAGER_HEADER 1024
#define EAGER_MIN 4096

static long eager_payload(void)
{
	MPI_T_cvar_handle h;
	MPI_Datatype dt;
	union {
		uint32_t u32;
		uint64_t u64;
	} b = { 0 };
	MPI_T_enum et;
	char name[64], desc[256];
	uint64_t v = 0;
	int prov, idx, n, size = 0, ok = 0, verbosity, bind, scope;
	int name_len = sizeof(name), desc_len = sizeof(desc);

	if (PMPI_T_init_thread(MPI_THREAD_SINGLE, &prov) != MPI_SUCCESS)
		return -1;
	if (PMPI_T_cvar_get_index("btl_tcp_eager_limit", &idx) == MPI_SUCCESS &&
	    PMPI_T_cvar_get_info(idx, name, &name_len, &verbosity, &dt, &et, desc, &desc_len,
				 &bind, &scope) == MPI_SUCCESS &&
	    (dt == MPI_UNSIGNED_LONG_LONG || dt == MPI_UNSIGNED_LONG || dt == MPI_UNSIGNED ||
	     dt == MPI_LONG_LONG || dt == MPI_LONG || dt == MPI_INT) &&
	    PMPI_Type_size(dt, &size) == MPI_SUCCESS && (size == 4 || size == 8) &&
	    PMPI_T_cvar_handle_alloc(idx, NULL, &h, &n) == MPI_SUCCESS) {
		if (n == 1 && PMPI_T_cvar_read(h, &b) == MPI_SUCCESS) {
			v = size == 8 ? b.u64 : b.u32;
			ok = 1;
		}
		PMPI_T_cvar_handle_free(&h);
	}
	PMPI_T_finalize();
	if (!ok || v < EAGER_MIN + EAGER_HEADER || v > ((uint64_t)1 << 40))
		return -1;
	return (long)(v - EAGER_HEADER);
}

/* a tunable's value as it is written: auto, on, off or the number */
static const char *shown(const struct tunable *t, long x, char *buf, size_t len)
{
	if ((t->kind == AUTO_INT && x < 0) || (t->kind == AUTO_ONOFF && x == 2))
		return "auto";
	if (t->kind == ONOFF || t->kind == AUTO_ONOFF)
		return x ? "on" : "off";
	snprintf(buf, len, "%ld", x);
	return buf;
}

int xs_config_agree(int world_rank)
{
	/* per tunable its value and its negation (MPI_MAX gives the largest
	 * and the smallest), then the negated eager payload of this rank */
	long v[2 * NTUNABLES + 1], all[2 * NTUNABLES + 1], eager = 0;
	char lo[32], hi[32];
	size_t i;
	int differ = 0;

	if (xs_cfg.eager < 0)
		eager = eager_payload();
	for (i = 0; i < NTUNABLES; i++) {
		v[2 * i] = tunables[i].kind == PATH ? 0 : stored(&tunables[i]);
		v[2 * i + 1] = -v[2 * i];
	}
	v[2 * NTUNABLES] = -(eager > 0 ? eager : 0);
	if (PMPI_Allreduce(v, all, (int)(2 * NTUNABLES + 1), MPI_LONG, MPI_MAX,
			   MPI_COMM_WORLD) != MPI_SUCCESS)
		return -1;
	for (i = 0; i < NTUNABLES; i++) {
		const struct tunable *t = &tunables[i];

		if (t->agree != SAME || all[2 * i] == -all[2 * i + 1])
			continue;
		differ = 1;
		if (world_rank == 0)
			fprintf(stderr, "xsite: %s differs between ranks (one has %s, another %s); "
				"it must be the same on every rank\n", t->name,
				shown(t, -all[2 * i + 1], lo, sizeof(lo)),
				shown(t, all[2 * i], hi, sizeof(hi)));
	}
	if (differ)
		return -1;
	if (xs_cfg.eager < 0) {
		/* the smallest of the ranks' limits; 0 (none) where a rank has none */
		xs_cfg.eager = -all[2 * NTUNABLES];
		if (xs_cfg.verbose >= 2 && world_rank == 0)
			xs_log("xsite:config: XSITE_EAGER=auto: %ld bytes (%s)", xs_cfg.eager,
			       eager > 0 ? "btl_tcp_eager_limit less the header, the smallest of the ranks'"
					 : "no btl_tcp_eager_limit here: no limit");
	}
	return 0;
}

long xsite_eager_bytes(void)
{
	return xs_ready ? xs_cfg.eager : -1;
}

/* One line to stderr, written at once so that ranks do not interleave. */
void xs_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	fwrite(line, 1, (size_t)n, stderr);
	fflush(stderr);
}

#ifdef XSITE_FAULT_INJECTION
int xs_fault(const char *name)
{
	const char *f = getenv("XSITE_FAULT");

	return f && !strcmp(f, name);
}
#endif
