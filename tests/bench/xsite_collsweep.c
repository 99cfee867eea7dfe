/*
 * xsite_collsweep: time per call of the collectives libxsite runs across the
 * link, over message sizes, for tests/bench/mpi and tests/bench/coll.
 *
 *   xsite_collsweep [-n ITERS] [-s SIZE,SIZE,...] [-c COLL,COLL,...]
 *
 * Prints from rank 0, one line per case:
 *   coll=allreduce bytes=8 iters=20 us=1234.5
 * bytes: the data of one rank (allgather, allgatherv, reduce_scatter: the
 * whole result or vector; alltoall: one rank's send buffer; barrier: 0);
 * us: the slowest rank's mean time per call.  Rooted collectives and scans,
 * whose first ranks may return at once: each call between two barriers (the
 * MPI library's own, PMPI_Barrier, also with libxsite), less the time of
 * two barriers alone, so that the ranks leaving the first barrier up to a
 * link latency apart do not count, nor the closing barrier: what is left
 * is from the last rank's start to the last rank's end.  The others,
 * whose every rank waits for every other: the calls back to back after one
 * barrier, so that ranks leaving a barrier at different times (up to a link
 * latency apart) cannot make a call look shorter than the link allows (one
 * L when both sites enter together).  Large messages run fewer iterations
 * (from 16 MiB one).  Untimed calls come first: one, and with libxsite
 * loaded, the calls in which it times its own algorithm and the MPI
 * library's for this size and keeps the faster (xsite_race_calls(), found
 * with dlsym as the program runs with and without libxsite), so that what
 * is timed is what a long-running program gets.  It prints figures; it
 * asserts nothing.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { ALLREDUCE, BCAST, REDUCE, BARRIER, ALLGATHER, ALLTOALL, REDUCE_SCATTER, ALLGATHERV,
       SCAN, NCOLL };
static const char *names[NCOLL] = { "allreduce", "bcast", "reduce", "barrier", "allgather",
				    "alltoall", "reduce_scatter", "allgatherv", "scan" };

int main(int argc, char **argv)
{
	long sizes[32] = { 8, 512, 32768, 262144, 1048576, 4194304 }, max = 0;
	int nsizes = 6, iters = 10, warm = 1, opt, rank, size, c, s, i, r, want[NCOLL], *cnt, *dsp;
	char *a, *b, *tok;
	int (*race_calls)(void);

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
	for (s = 0; s < nsizes; s++)
		max = sizes[s] > max ? sizes[s] : max;
	a = calloc(1, max + 64);
	b = calloc(1, max * (size_t)size + 64);
	cnt = calloc((size_t)size, sizeof(int));
	dsp = calloc((size_t)size, sizeof(int));
	if (!a || !b || !cnt || !dsp) {
		fprintf(stderr, "xsite_collsweep: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (c = 0; c < NCOLL; c++)
		for (s = 0; s < nsizes && want[c]; s++) {
			long bytes = sizes[s], n = bytes / 8 ? bytes / 8 : 1, blk = n / size ? n / size : 1;
			int it = bytes >= 16777216 ? 1 : bytes >= 1048576 ? 2 + iters / 5 :
				 bytes >= 65536 ? 2 + iters / 2 : iters;
			double t = 0, t0 = 0, tmax, tb = 0;
			int sync = c == ALLREDUCE || c == BARRIER || c == ALLGATHER || c == ALLTOALL ||
				   c == REDUCE_SCATTER || c == ALLGATHERV;

			if (c == BARRIER && s > 0)
				break;
			if (!sync) /* two barriers alone, as the calls below have them */
				for (i = 0; i < 3; i++) {
					PMPI_Barrier(MPI_COMM_WORLD);
					t0 = MPI_Wtime();
					PMPI_Barrier(MPI_COMM_WORLD);
					tb += (MPI_Wtime() - t0) / 3;
				}
			for (i = 0; i < warm + it; i++) {
				if (!sync || i <= warm)
					PMPI_Barrier(MPI_COMM_WORLD);
				if (!sync || i == warm)
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
				default: /* the loop runs over the collectives above */
					MPI_Abort(MPI_COMM_WORLD, 2);
				}
				if (!sync)
					PMPI_Barrier(MPI_COMM_WORLD);
				if (!sync && i >= warm)
					t += MPI_Wtime() - t0;
			}
			if (sync)
				t = MPI_Wtime() - t0;
			t = t / it - tb;
			t = (t > 0 ? t : 0) * 1e6;
			/* the library's own: no call of this program's own */
			PMPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
			if (rank == 0) {
				printf("coll=%s bytes=%ld iters=%d us=%.1f\n", names[c],
				       c == BARRIER ? 0 : c == ALLGATHER || c == ALLGATHERV ||
				       c == REDUCE_SCATTER || c == ALLTOALL ? blk * size * 8 : n * 8,
				       it, tmax);
				fflush(stdout);
			}
		}
	free(a);
	free(b);
	free(cnt);
	free(dsp);
	MPI_Finalize();
	return 0;
}
