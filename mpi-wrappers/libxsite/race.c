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
 * (untimed), then XSITE_HANDOFF timed calls of each in turn.  A timed call
 * costs the program the time from the last rank's start to the last rank's
 * end: the time a rank spends in the call also holds its wait for ranks
 * that come later (up to a link latency after a barrier), which would
 * make every algorithm look as slow.  So each rank notes when it starts
 * and ends each timed call on one clock, its own corrected by its offset
 * to the clock of the communicator's rank 0 (xs_clock_sync), and one
 * allreduce (MAX) on the communicator's private copy gives each call's
 * latest start and latest end; the algorithm with the smaller sum of ends
 * less starts keeps that class.
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
#include <time.h>

#include "internal.h"

struct xs_race {
	unsigned calls; /* calls of this class in the race under way */
	int winner;     /* -1 racing, 0 the MPI library, 1 libxsite */
	/* while racing: the start and end of each timed call (its index k,
	 * the algorithm k % 2) on this rank's clock, then a flag (the clock
	 * offsets are old); NULL when there was no memory (the call's end
	 * counts as never) */
	double *span;
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

/* the doubles of a race's span: start and end of 2 x XSITE_HANDOFF timed
 * calls, and the flag */
static size_t span_len(void)
{
	return 4 * (size_t)xs_cfg.handoff + 1;
}

/* a race's span when malloc gave none (collectives neither nest nor run in
 * several threads at once here: wrappers.c's xs_depth, and no race under
 * MPI_THREAD_MULTIPLE) */
static double no_span[4 * XS_HANDOFF_MAX + 1];

/* ---- one clock ----------------------------------------------------------- */

/* The round trips of each pair of ranks whose offset is measured, and the
 * age (seconds) after which the offsets are measured again at the next
 * verdict (clocks drift apart). */
#define XS_CLOCK_PINGS 4
#define XS_CLOCK_AGE 60.0

/* this rank's clock; libxsite-fault.so with XSITE_FAULT=clock sets the
 * world's last rank 1000 s ahead, to prove the offsets are measured */
static double now(void)
{
#ifdef XSITE_FAULT_INJECTION
	return PMPI_Wtime() + (xs_fault("clock") && xs_wrank == xs_wsize - 1 ? 1000.0 : 0.0);
#else
	return PMPI_Wtime();
#endif
}

/* parent p (its offset *off to rank 0's clock known) and child q of the
 * communicator measure q's offset: XS_CLOCK_PINGS round trips, in which q
 * answers with its clock; the shortest gives the offset, q's answer taken
 * halfway through it.  Uncounted messages on the private communicator. */
static int clock_pair(struct xs_comm *c, int p, int q, double *off, double *err)
{
	double t1, t4, tq, best = -1, theta = 0;
	int i, rc = MPI_SUCCESS;

	for (i = 0; i < XS_CLOCK_PINGS && rc == MPI_SUCCESS; i++) {
		if (c->rank == p) {
			t1 = now();
			rc = PMPI_Send(NULL, 0, MPI_BYTE, q, TAG_CLOCK, c->priv);
			if (rc == MPI_SUCCESS)
				rc = PMPI_Recv(&tq, 1, MPI_DOUBLE, q, TAG_CLOCK, c->priv,
					       MPI_STATUS_IGNORE);
			t4 = now();
			if (rc == MPI_SUCCESS && (best < 0 || t4 - t1 < best)) {
				best = t4 - t1;
				theta = tq - (t1 + t4) / 2;
			}
		} else {
			rc = PMPI_Recv(NULL, 0, MPI_BYTE, p, TAG_CLOCK, c->priv, MPI_STATUS_IGNORE);
			tq = now();
			if (rc == MPI_SUCCESS)
				rc = PMPI_Send(&tq, 1, MPI_DOUBLE, p, TAG_CLOCK, c->priv);
		}
	}
	if (c->rank == p) {
		double v[2] = { *off - theta, *err + best / 2 };

		if (rc == MPI_SUCCESS)
			rc = PMPI_Send(v, 2, MPI_DOUBLE, q, TAG_CLOCK, c->priv);
	} else {
		double v[2];

		if (rc == MPI_SUCCESS)
			rc = PMPI_Recv(v, 2, MPI_DOUBLE, p, TAG_CLOCK, c->priv, MPI_STATUS_IGNORE);
		if (rc == MPI_SUCCESS)
			*off = v[0], *err = v[1];
	}
	return rc;
}

#ifdef XSITE_FAULT_INJECTION
/* test builds only, with XSITE_FAULT=clock (collective on c): the true
 * offset, where the ranks share one kernel's CLOCK_MONOTONIC (one machine):
 * ", one kernel's clock says X s" */
static void clock_truth(struct xs_comm *c, char *buf, size_t n)
{
	struct timespec ts;
	double base, base0;

	if (!xs_fault("clock"))
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	base = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 - now();
	base0 = base;
	PMPI_Bcast(&base0, 1, MPI_DOUBLE, 0, c->priv);
	if (buf)
		snprintf(buf, n, ", one kernel's clock says %+.6f s", base - base0);
}
#else
static void clock_truth(struct xs_comm *c, char *buf, size_t n)
{
	(void)c, (void)buf, (void)n;
}
#endif

/*
 * Each rank's offset to the clock of the communicator's rank 0, site 0's
 * leader (collective on c): site 1's leader against it across the link,
 * then, at each site, a binomial tree from its leader over its ranks.
 * c->clock_err bounds the error: half the best round trip of each pair on
 * the way from rank 0.
 */
static void xs_clock_sync(struct xs_comm *c)
{
	int l = c->lrank[c->rank], n = c->n[c->me], mask, rc = MPI_SUCCESS;
	int l0 = c->members[0][0], l1 = c->members[1][0];

	c->clock_off = 0;
	c->clock_err = 0;
	if (c->rank == l0 || c->rank == l1)
		rc = clock_pair(c, l0, l1, &c->clock_off, &c->clock_err);
	for (mask = 1; mask < n && rc == MPI_SUCCESS; mask <<= 1) {
		if (l < mask && l + mask < n)
			rc = clock_pair(c, c->rank, c->members[c->me][l + mask],
					&c->clock_off, &c->clock_err);
		else if (l >= mask && l < 2 * mask)
			rc = clock_pair(c, c->members[c->me][l - mask], c->rank,
					&c->clock_off, &c->clock_err);
	}
	c->clock_at = now();
	c->clock_set = 1;
	if (xs_cfg.verbose && c->rank == c->size - 1) {
		char label[MPI_MAX_OBJECT_NAME + 16], truth[64] = "";

		xs_comm_label(c, label, sizeof(label));
		clock_truth(c, truth, sizeof(truth));
		xs_log("xsite:clock: rank %d of %d: %+.6f s to rank 0's clock, within %.0f us%s [%s]",
		       c->rank, c->size, c->clock_off, c->clock_err * 1e6, truth, label);
	} else {
		clock_truth(c, NULL, 0);
	}
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
		c->race[i].span = NULL;
		c->race[i].kept = 0;
		c->race[i].again = XS_REOPEN_FIRST;
	}
	return MPI_SUCCESS;
}

void xs_race_free(struct xs_comm *c)
{
	int i;

	for (i = 0; c->race && i < XS_NCOLL * XS_SIZE_CLASSES; i++)
		free(c->race[i].span);
	free(c->race);
	c->race = NULL;
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
	if (r->calls == 0) {
		free(r->span);
		r->span = malloc(sizeof(double) * span_len());
	}
	if (!pending.which)
		*why = "timing the MPI library's (hand-off)";
}

int xs_race_winner(const struct xs_comm *c, enum xs_coll_id coll, uint64_t bytes)
{
	return c->race ? c->race[coll * XS_SIZE_CLASSES + xs_size_class(bytes)].winner : -1;
}

void xs_race_start(void)
{
	if (pending.c)
		pending.t0 = now();
}

void xs_race_end(int rc)
{
	struct xs_comm *c = pending.c;
	struct xs_race *r = pending.r;
	double t[2] = { 0, 0 }, *v;
	size_t k, n = span_len();

	if (!c)
		return;
	pending.c = NULL;
	if (pending.timed && r->span) {
		k = 2 * (size_t)(r->calls - 2);
		r->span[k] = pending.t0;
		r->span[k + 1] = rc == MPI_SUCCESS ? now() : 1e30;
	}
	if (++r->calls < race_calls())
		return;
	/* the verdict: every rank is at this same call */
	if (!c->clock_set)
		xs_clock_sync(c);
	v = r->span;
	r->span = NULL;
	if (v) {
		for (k = 0; k + 1 < n; k++)
			v[k] += c->clock_off;
		v[n - 1] = now() - c->clock_at > XS_CLOCK_AGE;
	} else {
		/* there was no memory for the span: this rank's calls end
		 * never, in the same allreduce as every other rank's */
		v = no_span;
		for (k = 0; k < n; k++)
			v[k] = k % 2 && k + 1 < n ? 1e30 : 0;
	}
	if (PMPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_DOUBLE, MPI_MAX, c->priv) !=
	    MPI_SUCCESS) {
		if (v != no_span)
			free(v);
		r->winner = 0; /* the same on every rank only if it failed on all */
		return;
	}
	/* call k: the latest end less the latest start, to its algorithm */
	for (k = 0; k + 1 < n; k += 2)
		t[(k / 2) % 2] += v[k + 1] - v[k];
	r->winner = t[1] <= t[0];
	if (v[n - 1] > 0)
		xs_clock_sync(c); /* for the next race: some rank's offsets are old */
	if (v != no_span)
		free(v);
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
		       t[r->winner] / xs_cfg.handoff * 1e6,
		       t[!r->winner] / xs_cfg.handoff * 1e6,
		       r->winner ? "the MPI library's" : "libxsite's", label);
	}
}
