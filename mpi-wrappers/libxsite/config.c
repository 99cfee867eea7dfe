/*
 * libxsite: tunables and logging.
 *
 * Every tunable is an environment variable with an in-code default and a
 * one-line description (the table below; README.md repeats it).  A bad value
 * is reported once, by world rank 0, and the default is kept.  The values
 * must be the same on every rank (srun and mpirun -x export them to all).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct xs_config xs_cfg;

enum kind { ONOFF, INT, PATH, AUTO_ONOFF, AUTO_INT };

static const struct tunable {
	const char *name;
	enum kind kind;
	const char *def;
	long min, max;
	const char *desc;
} tunables[] = {
	{ "XSITE_COLL", ONOFF, "on", 0, 1,
	  "site-aware collectives on communicators that span two sites (on|off)" },
	{ "XSITE_INIT_FENCE", ONOFF, "on", 0, 1,
	  "a PMIx fence after MPI_Init, before the first message (Open MPI 4.1 start-up race)" },
	{ "XSITE_STREAMS", INT, "4", 1, 1024,
	  "rank pairs that carry a large message across the link in parallel" },
	{ "XSITE_LARGE_MSG", INT, "65536", 0, 1L << 40,
	  "bytes from which a collective splits its data over XSITE_STREAMS pairs" },
	{ "XSITE_PIPELINE", INT, "262144", 0, 1L << 40,
	  "bytes per stream pair in each step of a pipelined large reduction or broadcast (0: no pipeline)" },
	{ "XSITE_EAGER", AUTO_INT, "auto", 0, 1L << 40,
	  "largest message of a collective across the link (auto: the MPI library's eager limit less a header; 0: no limit)" },
	{ "XSITE_VERBOSE", INT, "0", 0, 2,
	  "1: log each collective decision once per communicator and the traffic; 2: also the tunables" },
	{ "XSITE_NODE_LEVEL", AUTO_ONOFF, "auto", 0, 2,
	  "node level inside a site (auto: where a site has several nodes with several ranks)" },
	{ "XSITE_NODE_SIZE", INT, "0", 0, 1 << 20,
	  "for tests: every N consecutive ranks of a site form a node (0: MPI_COMM_TYPE_SHARED)" },
	{ "XSITE_MATRIX_MAX", INT, "1024", 0, 1 << 16,
	  "largest job (ranks) whose rank x rank traffic matrix goes into the record" },
	{ "XSITE_HANDOFF", INT, "2", 0, XS_HANDOFF_MAX,
	  "timed calls of each, libxsite's and the MPI library's, before the faster keeps a collective and size (0: libxsite's)" },
	{ "XSITE_TRAFFIC_FILE", PATH, "", 0, 0,
	  "JSON traffic record written by rank 0 at MPI_Finalize (%j job id, %s step id)" },
};

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

	for (i = 0; i < sizeof(tunables) / sizeof(tunables[0]); i++) {
		const struct tunable *t = &tunables[i];
		const char *v = getenv(t->name);
		int ok, bad = 0;
		long x;

		if (t->kind == PATH) {
			if (!strcmp(t->name, "XSITE_TRAFFIC_FILE"))
				xs_cfg.traffic = v && *v ? v : NULL;
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
		if (!strcmp(t->name, "XSITE_COLL"))
			xs_cfg.coll = (int)x;
		else if (!strcmp(t->name, "XSITE_INIT_FENCE"))
			xs_cfg.init_fence = (int)x;
		else if (!strcmp(t->name, "XSITE_STREAMS"))
			xs_cfg.streams = (int)x;
		else if (!strcmp(t->name, "XSITE_LARGE_MSG"))
			xs_cfg.large_msg = x;
		else if (!strcmp(t->name, "XSITE_PIPELINE"))
			xs_cfg.pipeline = x;
		else if (!strcmp(t->name, "XSITE_EAGER"))
			xs_cfg.eager = x;
		else if (!strcmp(t->name, "XSITE_VERBOSE"))
			xs_cfg.verbose = (int)x;
		else if (!strcmp(t->name, "XSITE_NODE_LEVEL"))
			xs_cfg.node_level = (int)x;
		else if (!strcmp(t->name, "XSITE_NODE_SIZE"))
			xs_cfg.node_size = (int)x;
		else if (!strcmp(t->name, "XSITE_MATRIX_MAX"))
			xs_cfg.matrix_max = (int)x;
		else if (!strcmp(t->name, "XSITE_HANDOFF"))
			xs_cfg.handoff = (int)x;
	}
	if (xs_cfg.verbose >= 2 && world_rank == 0)
		for (i = 0; i < sizeof(tunables) / sizeof(tunables[0]); i++) {
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
 * must agree: the smallest is taken, one allreduce on MPI_COMM_WORLD.
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

void xs_eager_resolve(int world_rank)
{
	long eager, mine;

	if (xs_cfg.eager >= 0)
		return;
	eager = eager_payload();
	mine = eager > 0 ? eager : 0;
	if (PMPI_Allreduce(&mine, &xs_cfg.eager, 1, MPI_LONG, MPI_MIN, MPI_COMM_WORLD) !=
	    MPI_SUCCESS)
		xs_cfg.eager = 0;
	if (xs_cfg.verbose >= 2 && world_rank == 0)
		xs_log("xsite:config: XSITE_EAGER=auto: %ld bytes (%s)", xs_cfg.eager,
		       eager > 0 ? "btl_tcp_eager_limit less the header, the smallest of the ranks'"
				 : "no btl_tcp_eager_limit here: no limit");
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
