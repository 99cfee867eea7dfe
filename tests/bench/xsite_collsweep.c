/*
 * xsite_collsweep: time per call of the collectives libxsite runs across the
 * link, over message sizes, for tests/bench/mpi and tests/bench/coll.
 *
 *   xsite_collsweep [-n ITERS] [-s SIZE,SIZE,...] [-c COLL,COLL,...]
 *
 * COLL: allreduce, bcast, reduce, barrier, allgather, alltoall,
 * reduce_scatter, allgatherv, scan, iallreduce, ireduce, ibcast, ibarrier,
 * iallgather (the nonblocking ones started and waited for at once),
 * iallreduce4 (four Iallreduce of the size in flight at once, then one
 * MPI_Waitall), or all; default the first five.
 *
 * Prints from rank 0, one line per case:
 *   coll=allreduce bytes=8 iters=20 us=1234.5
 * bytes: the data of one rank (allgather, iallgather, allgatherv,
 * reduce_scatter: the whole result or vector; alltoall: one rank's send
 * buffer; barrier: 0); us: the time per call.  The collectives whose every
 * rank waits for every other (allreduce, barrier, allgather(v), alltoall,
 * reduce_scatter, iallreduce(4), ibarrier, iallgather): the calls back to
 * back after one barrier, the slowest rank's mean, so that ranks leaving a
 * barrier at different times (up to a link latency apart) cannot make a
 * call look shorter than the link allows (one L when both sites enter
 * together).  The rooted ones and
 * scans, whose first ranks may return at once (a root that sends, a site
 * that does not wait for the other): each call on its own, every rank
 * starting it at one instant T on one clock, the slowest rank's time from
 * when its call could first move to its end, the mean of the calls.  A
 * call can first move at the latest start of the rank itself and the ranks
 * whose data it needs: the root, for a bcast; every rank, for a reduce's
 * root; the ranks before it, for a scan.  Ranks that share cores wake one
 * after another (on the testbed's two cores, 0.4-0.5 ms late on average
 * after sleeping until T), and a rank that waited for a root that woke
 * late would otherwise count the root's oversleep as the collective's.
 * One clock: the ranks of the testbed share one kernel's CLOCK_MONOTONIC
 * (the same boot_id), and rank 0 sets T far enough ahead (three times two
 * barriers, and 500 us) for every rank to know it in time; the line then
 * says start=T and late=US, the largest of the ranks' mean starts after T.
 * Ranks without one clock: each call between two barriers (the
 * MPI library's own, PMPI_Barrier, also with libxsite), less the time of
 * two barriers alone, and the line says start=barriers: an estimate that
 * can come out below the link's latency, as ranks leave a barrier up to a
 * latency apart.  Large messages run fewer iterations (from 16 MiB one).
 * Untimed calls come first: one, and with libxsite
 * loaded, the calls in which it times its own algorithm and the MPI
 * library's for this size and keeps the faster (xsite_race_calls(), found
 * with dlsym as the program runs with and without libxsite), so that what
 * is timed is what a long-running program gets.  It prints figures; it
 * asserts nothing.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

enum { ALLREDUCE, BCAST, REDUCE, BARRIER, ALLGATHER, ALLTOALL, REDUCE_SCATTER, ALLGATHERV,
       SCAN, IALLREDUCE, IREDUCE, IBCAST, IBARRIER, IALLGATHER, IALLREDUCE4, NCOLL };
static const char *names[NCOLL] = { "allreduce", "bcast", "reduce", "barrier", "allgather",
				    "alltoall", "reduce_scatter", "allgatherv", "scan",
				    "iallreduce", "ireduce", "ibcast", "ibarrier", "iallgather",
				    "iallreduce4" };

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* whether every rank runs on the same kernel (one CLOCK_MONOTONIC) */
static int one_clock(void)
{
	char id[64] = "", first[64];
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	int same, all;

	if (f) {
		if (!fgets(id, sizeof(id), f))
			id[0] = 0;
		fclose(f);
	}
	memcpy(first, id, sizeof(id));
	PMPI_Bcast(first, sizeof(first), MPI_CHAR, 0, MPI_COMM_WORLD);
	same = id[0] && !strcmp(id, first);
	PMPI_Allreduce(&same, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
	return all;
}

/* when rank's call of collective c can first move: the latest start (st,
 * one per rank, on one clock) of rank itself and of the ranks whose data it
 * needs, ranks 0 to n - 1 (the root is rank 0) */
static double ready(int c, int rank, int size, const double *st)
{
	int q, n = c == BCAST || c == IBCAST ? 1 :
		   (c == REDUCE || c == IREDUCE) && rank == 0 ? size :
		   c == SCAN ? rank : 0;
	double r = st[rank];

	for (q = 0; q < n; q++)
		r = st[q] > r ? st[q] : r;
	return r;
}

/* sleep until t on CLOCK_MONOTONIC */
static void sleep_until(double t)
{
	struct timespec ts;

	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L)
		ts.tv_sec++, ts.tv_nsec -= 1000000000L;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

int main(int argc, char **argv)
{
	long sizes[32] = { 8, 512, 32768, 262144, 1048576, 4194304 }, max = 0;
	int nsizes = 6, iters = 10, warm = 1, opt, rank, size, c, s, i, r, want[NCOLL], *cnt, *dsp;
	char *a, *b, *tok;
	double *st;
	int (*race_calls)(void), clock1;

	for (c = 0; c < NCOLL; c++)
		want[c] = c <= ALLGATHER; /* tests/bench/coll's five */
	while ((opt = getopt(argc, argv, "n:s:c:")) != -1) {
		if (opt == 'n')
			iters = atoi(optarg);
		else if (opt == 's')
			for (nsizes = 0, tok = strtok(optarg, ","); tok && nsizes < 32;
			     tok = strtok(NULL, ","))
				sizes[nsizes++] = atol(tok);
		else if (opt == 'c') {
			for (c = 0; c < NCOLL; c++)
				want[c] = 0;
			for (tok = strtok(optarg, ","); tok; tok = strtok(NULL, ","))
				for (c = 0; c < NCOLL; c++)
					want[c] |= !strcmp(tok, names[c]) || !strcmp(tok, "all");
		}
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	*(void **)&race_calls = dlsym(RTLD_DEFAULT, "xsite_race_calls");
	if (race_calls && race_calls() > 0)
		warm += race_calls();
	/* wake at T as close to it as the kernel can */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	clock1 = one_clock();
	for (s = 0; s < nsizes; s++)
		max = sizes[s] > max ? sizes[s] : max;
	a = calloc(1, max + 64);
	b = calloc(1, max * (size_t)size + 64);
	cnt = calloc((size_t)size, sizeof(int));
	dsp = calloc((size_t)size, sizeof(int));
	st = calloc((size_t)size, sizeof(double));
	if (!a || !b || !cnt || !dsp || !st) {
		fprintf(stderr, "xsite_collsweep: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (c = 0; c < NCOLL; c++)
		for (s = 0; s < nsizes && want[c]; s++) {
			long bytes = sizes[s], n = bytes / 8 ? bytes / 8 : 1, blk = n / size ? n / size : 1;
			long quarter = n / 4 ? n / 4 : 1; /* iallreduce4's calls */
			int it = bytes >= 16777216 ? 1 : bytes >= 1048576 ? 2 + iters / 5 :
				 bytes >= 65536 ? 2 + iters / 2 : iters;
			double t = 0, t0 = 0, tmax, tb = 0, T = 0, late = 0, lmax = 0, e, emax;
			int sync = c == ALLREDUCE || c == BARRIER || c == ALLGATHER || c == ALLTOALL ||
				   c == REDUCE_SCATTER || c == ALLGATHERV || c == IALLREDUCE ||
				   c == IBARRIER || c == IALLGATHER || c == IALLREDUCE4;
			MPI_Request req, four[4];

			if ((c == BARRIER || c == IBARRIER) && s > 0)
				break;
			if (!sync) /* two barriers alone: the calls below (T's margin) */
				for (i = 0; i < 3; i++) {
					PMPI_Barrier(MPI_COMM_WORLD);
					t0 = MPI_Wtime();
					PMPI_Barrier(MPI_COMM_WORLD);
					tb += (MPI_Wtime() - t0) / 3;
				}
			for (i = 0; i < warm + it; i++) {
				if (!sync || i <= warm)
					PMPI_Barrier(MPI_COMM_WORLD);
				if (!sync && clock1) {
					/* T: far enough ahead for every rank to know it in time */
					T = now() + 3 * tb + 500e-6;
					PMPI_Bcast(&T, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
					sleep_until(T);
					t0 = now();
					if (i >= warm)
						late += (t0 - T) / it;
				} else if (!sync || i == warm)
					t0 = MPI_Wtime();
				switch (c) {
				case ALLREDUCE:
					MPI_Allreduce(a, b, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
					break;
				case BCAST:
					MPI_Bcast(a, (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
					break;
				case REDUCE:
					MPI_Reduce(a, b, (int)n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
					break;
				case BARRIER:
					MPI_Barrier(MPI_COMM_WORLD);
					break;
				case ALLGATHER: /* bytes: the whole result */
					MPI_Allgather(a, (int)blk, MPI_DOUBLE, b, (int)blk, MPI_DOUBLE,
						      MPI_COMM_WORLD);
					break;
				case ALLTOALL: /* bytes: one rank's send buffer */
					MPI_Alltoall(a, (int)blk, MPI_DOUBLE, b, (int)blk, MPI_DOUBLE,
						     MPI_COMM_WORLD);
					break;
				case REDUCE_SCATTER: /* bytes: the whole vector */
					MPI_Reduce_scatter_block(b, a, (int)blk, MPI_DOUBLE, MPI_SUM,
								 MPI_COMM_WORLD);
					break;
				case ALLGATHERV: /* bytes: the whole result */
					for (r = 0; r < size; r++) {
						cnt[r] = (int)blk;
						dsp[r] = r * (int)blk;
					}
					MPI_Allgatherv(a, (int)blk, MPI_DOUBLE, b, cnt, dsp, MPI_DOUBLE,
						       MPI_COMM_WORLD);
					break;
				case SCAN:
					MPI_Scan(a, b, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
					break;
				case IALLREDUCE: /* started and waited for at once */
					MPI_Iallreduce(a, b, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
						       &req);
					MPI_Wait(&req, MPI_STATUS_IGNORE);
					break;
				case IREDUCE:
					MPI_Ireduce(a, b, (int)n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD,
						    &req);
					MPI_Wait(&req, MPI_STATUS_IGNORE);
					break;
				case IBCAST:
					MPI_Ibcast(a, (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD, &req);
					MPI_Wait(&req, MPI_STATUS_IGNORE);
					break;
				case IBARRIER:
					MPI_Ibarrier(MPI_COMM_WORLD, &req);
					MPI_Wait(&req, MPI_STATUS_IGNORE);
					break;
				case IALLGATHER: /* bytes: the whole result */
					MPI_Iallgather(a, (int)blk, MPI_DOUBLE, b, (int)blk, MPI_DOUBLE,
						       MPI_COMM_WORLD, &req);
					MPI_Wait(&req, MPI_STATUS_IGNORE);
					break;
				case IALLREDUCE4: /* b: a fourth of it each */
					for (r = 0; r < 4; r++)
						MPI_Iallreduce((double *)a + r * quarter,
							       (double *)b + r * quarter, (int)quarter,
							       MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
							       &four[r]);
					MPI_Waitall(4, four, MPI_STATUSES_IGNORE);
					break;
				default: /* the loop runs over the collectives above */
					MPI_Abort(MPI_COMM_WORLD, 2);
				}
				if (!sync && clock1) {
					/* the slowest rank's time from when its
					 * call could first move */
					e = now();
					PMPI_Allgather(&t0, 1, MPI_DOUBLE, st, 1, MPI_DOUBLE,
						       MPI_COMM_WORLD);
					e -= ready(c, rank, size, st);
					PMPI_Allreduce(&e, &emax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
					if (i >= warm)
						t += emax;
					continue;
				}
				if (!sync)
					PMPI_Barrier(MPI_COMM_WORLD);
				if (!sync && i >= warm)
					t += MPI_Wtime() - t0;
			}
			if (sync)
				t = MPI_Wtime() - t0;
			t = t / it - (sync || clock1 ? 0 : tb);
			t = (t > 0 ? t : 0) * 1e6;
			/* the library's own: no call of this program's own */
			PMPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
			PMPI_Reduce(&late, &lmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
			if (rank == 0) {
				printf("coll=%s bytes=%ld iters=%d us=%.1f", names[c],
				       c == BARRIER || c == IBARRIER ? 0 : c == ALLGATHER || c == ALLGATHERV ||
				       c == REDUCE_SCATTER || c == ALLTOALL ? blk * size * 8 : n * 8,
				       it, tmax);
				if (!sync)
					printf(clock1 ? " start=T late=%.1f\n" : " start=barriers\n",
					       lmax * 1e6);
				else
					printf("\n");
				fflush(stdout);
			}
		}
	free(a);
	free(b);
	free(cnt);
	free(dsp);
	free(st);
	MPI_Finalize();
	return 0;
}
