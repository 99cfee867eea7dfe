/*
 * libxsite: the hand-off to the MPI library's own collectives.
 *
 * libxsite's algorithms cross the link once, but they add site-local
 * phases, and which algorithm the MPI library picks for a call (and how
 * often that one crosses the link) depends on its release, its tuning
 * tables, the message size and the communicator; neither is known to
 * libxsite.  So on every communicator, for each collective and each class
 * of message size (bytes rounded up to a power of two), the first calls
 * alternate between the two: the library's (untimed), libxsite's
 * (untimed), then XSITE_HANDOFF timed calls of each in turn.  Then one
 * allreduce on the communicator's private copy takes, for each algorithm,
 * the slowest rank's total time, and the faster algorithm keeps that class.
 * A verdict is not for good: the link's load, and with it which algorithm
 * is faster, changes while a job runs.  After XS_REOPEN_FIRST more calls of
 * the class the two race again, then after four times as many, and so on
 * (at most XS_REOPEN_MAX): the losing algorithm runs in XSITE_HANDOFF + 1
 * of those calls, under 5 % of them at first and ever fewer later.  Every
 * rank makes the same calls in the same order with the same sizes
 * (decide() in wrappers.c requires it), so every rank is at the same call
 * of the same class, races again at the same call and reaches the same
 * verdict.
 * docs/model.md (The MPI layer) gives the reasoning and the figures.
 */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

struct xs_race {
	unsigned calls; /* calls of this class in the race under way */
	int winner;     /* -1 racing, 0 the MPI library, 1 libxsite */
	double t[2];    /* timed seconds: [0] the library's, [1] libxsite's */
	unsigned long kept;  /* calls since the verdict */
	unsigned long again; /* calls after the verdict until the next race */
};

/* The calls after a class's first verdict until it races again; each later
 * verdict holds four times as long, up to XS_REOPEN_MAX. */
#define XS_REOPEN_FIRST 64UL
#define XS_REOPEN_MAX (1UL << 20)

/* the call under way (collectives do not nest: wrappers.c's xs_depth) */
static struct {
	struct xs_comm *c;
	struct xs_race *r;
	enum xs_coll_id coll;
	int cls, which, timed;
	double t0;
} pending;

/* The calls of one class before its verdict (xs_race_end). */
static unsigned race_calls(void)
{
	return 2 + 2 * (unsigned)xs_cfg.handoff;
}

int xsite_race_calls(void)
{
	if (!xs_ready)
		return -1;
	return xs_cfg.coll && !xs_mt && xs_cfg.handoff > 0 ? (int)race_calls() : 0;
}

int xs_race_alloc(struct xs_comm *c)
{
	int i;

	if (xs_cfg.handoff <= 0)
		return MPI_SUCCESS;
	c->race = malloc(sizeof(*c->race) * XS_NCOLL * XS_SIZE_CLASSES);
	if (!c->race)
		return MPI_ERR_NO_MEM;
	for (i = 0; i < XS_NCOLL * XS_SIZE_CLASSES; i++) {
		c->race[i].calls = 0;
		c->race[i].winner = -1;
		c->race[i].t[0] = c->race[i].t[1] = 0;
		c->race[i].kept = 0;
		c->race[i].again = XS_REOPEN_FIRST;
	}
	return MPI_SUCCESS;
}

int xs_size_class(uint64_t bytes)
{
	int k = bytes <= 1 ? 0 : 64 - __builtin_clzll(bytes - 1);

	return k < XS_SIZE_CLASSES ? k : XS_SIZE_CLASSES - 1;
}

/* "8 B", "64 KiB", "1 MiB": the top of class k */
static void class_label(int k, char *buf, size_t n)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = k / 10;

	if (u > 4)
		u = 4;
	snprintf(buf, n, "%llu %s", 1ULL << (k - 10 * u), unit[u]);
}

void xs_race_pick(struct xs_comm *c, enum xs_coll_id coll, uint64_t bytes,
		  const char **why)
{
	struct xs_race *r;
	int cls;

	pending.c = NULL;
	if (!c->race)
		return;
	cls = xs_size_class(bytes);
	r = &c->race[coll * XS_SIZE_CLASSES + cls];
	if (r->winner >= 0 && ++r->kept > r->again) {
		/* race again (every rank at this same call) */
		r->winner = -1;
		r->calls = 0;
		r->t[0] = r->t[1] = 0;
		r->kept = 0;
		r->again = r->again * 4 < XS_REOPEN_MAX ? r->again * 4 : XS_REOPEN_MAX;
	}
	if (r->winner >= 0) {
		if (!r->winner)
			*why = "the MPI library's measured faster (hand-off)";
		return;
	}
	pending.c = c;
	pending.r = r;
	pending.coll = coll;
	pending.cls = cls;
	pending.which = (int)(r->calls % 2);
	pending.timed = r->calls >= 2;
	if (!pending.which)
		*why = "timing the MPI library's (hand-off)";
}

void xs_race_start(void)
{
	if (pending.c)
		pending.t0 = PMPI_Wtime();
}

void xs_race_end(int rc)
{
	struct xs_comm *c = pending.c;
	struct xs_race *r = pending.r;
	double t[2], slowest[2];

	if (!c)
		return;
	pending.c = NULL;
	if (pending.timed)
		r->t[pending.which] += rc == MPI_SUCCESS ? PMPI_Wtime() - pending.t0 : 1e30;
	if (++r->calls < race_calls())
		return;
	t[0] = r->t[0];
	t[1] = r->t[1];
	if (PMPI_Allreduce(t, slowest, 2, MPI_DOUBLE, MPI_MAX, c->priv) != MPI_SUCCESS) {
		r->winner = 0; /* the same on every rank only if it failed on all */
		return;
	}
	r->winner = slowest[1] <= slowest[0];
	if (xs_cfg.verbose && c->rank == 0) {
		char label[MPI_MAX_OBJECT_NAME + 16], size[48] = "", top[32];

		xs_comm_label(c, label, sizeof(label));
		if (pending.coll != XS_BARRIER) {
			class_label(pending.cls, top, sizeof(top));
			snprintf(size, sizeof(size), ", up to %s", top);
		}
		xs_log("xsite:coll:%s (n=%d, 2 sites%s): %s, measured %.0f us a call "
		       "against %.0f us (%s) [%s]", xs_coll_name[pending.coll], c->size, size,
		       r->winner ? "libxsite's" : "the MPI library's",
		       slowest[r->winner] / xs_cfg.handoff * 1e6,
		       slowest[!r->winner] / xs_cfg.handoff * 1e6,
		       r->winner ? "the MPI library's" : "libxsite's", label);
	}
}
