/*
 * xsite_collbench: time per call of the collectives libxsite handles, for
 * tests/bench/libxsite-coll (which runs it with XSITE_COLL=on and off).
 *
 *   xsite_collbench [-n ITERS]
 *
 * Prints from rank 0, one line per case:
 *   coll=allreduce bytes=8 iters=20 us=1234.5
 * bytes: the data of one rank (allgather: the whole result, alltoall: one
 * rank's send buffer); us: the slowest rank's mean time per call (each call
 * starts after a PMPI_Barrier, which is not timed).  It prints figures; it
 * asserts nothing.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { ALLREDUCE, BCAST, REDUCE, ALLGATHER, ALLTOALL, BARRIER, NCOLL };
static const char *names[NCOLL] = { "allreduce", "bcast", "reduce", "allgather",
				    "alltoall", "barrier" };

int main(int argc, char **argv)
{
	const long sizes[] = { 8, 64L * 1024, 1024L * 1024 };
	int iters = 10, opt, rank, size, c, s, i;
	char *a, *b;

	while ((opt = getopt(argc, argv, "n:")) != -1)
		iters = opt == 'n' ? atoi(optarg) : iters;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	a = calloc(1, 1024 * 1024 + 64);
	b = calloc(1, 1024 * 1024 + 64);
	for (c = 0; c < NCOLL; c++)
		for (s = 0; s < 3; s++) {
			long bytes = sizes[s], n = bytes / 8, blk = n / size ? n / size : 1;
			int it = bytes > 65536 ? (iters + 2) / 3 : iters;
			double t = 0, t0, worst;

			if (c == BARRIER && s > 0)
				continue;
			for (i = -1; i < it; i++) { /* i = -1: warm-up, not timed */
				PMPI_Barrier(MPI_COMM_WORLD);
				t0 = MPI_Wtime();
				switch (c) {
				case ALLREDUCE:
					MPI_Allreduce(a, b, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
					break;
				case BCAST:
					MPI_Bcast(a, (int)n, MPI_DOUBLE, size - 1, MPI_COMM_WORLD);
					break;
				case REDUCE:
					MPI_Reduce(a, b, (int)n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
					break;
				case ALLGATHER: /* bytes: the whole result */
					MPI_Allgather(a, (int)blk, MPI_DOUBLE, b, (int)blk, MPI_DOUBLE,
						      MPI_COMM_WORLD);
					break;
				case ALLTOALL: /* bytes: each rank's send buffer */
					MPI_Alltoall(a, (int)blk, MPI_DOUBLE, b, (int)blk, MPI_DOUBLE,
						     MPI_COMM_WORLD);
					break;
				case BARRIER:
					MPI_Barrier(MPI_COMM_WORLD);
					break;
				default: /* the loop runs over the collectives above */
					MPI_Abort(MPI_COMM_WORLD, 2);
				}
				if (i >= 0)
					t += MPI_Wtime() - t0;
			}
			t = t / it * 1e6;
			PMPI_Reduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
			if (rank == 0)
				printf("coll=%s bytes=%ld iters=%d us=%.1f\n", names[c],
				       c == BARRIER ? 0 : c >= ALLGATHER ? blk * size * 8 : bytes, it,
				       worst);
		}
	fflush(stdout);
	free(a);
	free(b);
	MPI_Finalize();
	return 0;
}
