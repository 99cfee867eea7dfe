/*
 * xsite_overhead: microseconds per point-to-point message, for
 * tests/bench/libxsite-overhead (which runs it with and without libxsite).
 *
 *   xsite_overhead [-r ROUNDS]     exactly 2 ranks
 *
 * Prints from rank 0, one line per case:
 *   case=pingpong comm=world bytes=8 iters=20000 us=3.210
 *   case=self comm=dup bytes=8 iters=200000 us=0.412
 *   case=self-pmpi comm=dup bytes=8 iters=200000 us=0.398
 * pingpong: one-way time (round trip / 2) between rank 0 and rank 1, the best
 * of ROUNDS loops; self: MPI_Isend to itself + MPI_Recv + MPI_Wait on rank 0
 * while rank 1 waits, no network and no other process involved, so the wrappers' own cost
 * shows most; self-pmpi: the same loop through PMPI_ (never wrapped), run
 * alternately with it in the same process.  comm=world is MPI_COMM_WORLD (libxsite's fast path), dup a
 * duplicate (a communicator looked up through its attribute).
 * It prints figures; it asserts nothing.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int rank;

static double pingpong(MPI_Comm comm, char *buf, int bytes, int iters)
{
	double t;
	int i;

	PMPI_Barrier(comm);
	t = MPI_Wtime();
	for (i = 0; i < iters; i++) {
		if (rank == 0) {
			MPI_Send(buf, bytes, MPI_BYTE, 1, 1, comm);
			MPI_Recv(buf, bytes, MPI_BYTE, 1, 1, comm, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, bytes, MPI_BYTE, 0, 1, comm, MPI_STATUS_IGNORE);
			MPI_Send(buf, bytes, MPI_BYTE, 0, 1, comm);
		}
	}
	return (MPI_Wtime() - t) / iters / 2 * 1e6;
}

/* the self-send loop through MPI_ (wrapped when libxsite is loaded) or PMPI_ */
static double self(MPI_Comm comm, char *buf, int bytes, int iters, int pmpi)
{
	MPI_Request r;
	double t;
	int i;

	t = MPI_Wtime();
	if (pmpi)
		for (i = 0; i < iters; i++) {
			PMPI_Isend(buf, bytes, MPI_BYTE, rank, 2, comm, &r);
			PMPI_Recv(buf + bytes, bytes, MPI_BYTE, rank, 2, comm, MPI_STATUS_IGNORE);
			PMPI_Wait(&r, MPI_STATUS_IGNORE);
		}
	else
		for (i = 0; i < iters; i++) {
			MPI_Isend(buf, bytes, MPI_BYTE, rank, 2, comm, &r);
			MPI_Recv(buf + bytes, bytes, MPI_BYTE, rank, 2, comm, MPI_STATUS_IGNORE);
			MPI_Wait(&r, MPI_STATUS_IGNORE);
		}
	return (MPI_Wtime() - t) / iters * 1e6;
}

int main(int argc, char **argv)
{
	const int sizes[] = { 8, 1024, 65536 };
	const char *names[] = { "world", "dup" };
	MPI_Comm comms[2];
	char *buf = calloc(2, 65536);
	int rounds = 3, opt, size, c, s, r;

	while ((opt = getopt(argc, argv, "r:")) != -1)
		rounds = opt == 'r' ? atoi(optarg) : rounds;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "xsite_overhead: needs exactly 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	comms[0] = MPI_COMM_WORLD;
	MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
	for (c = 0; c < 2; c++) {
		for (s = 0; s < 3; s++) {
			int iters = sizes[s] <= 1024 ? 20000 : 2000;
			double best = 1e30, t;

			pingpong(comms[c], buf, sizes[s], iters / 10); /* warm up */
			for (r = 0; r < rounds; r++) {
				t = pingpong(comms[c], buf, sizes[s], iters);
				best = t < best ? t : best;
			}
			if (rank == 0)
				printf("case=pingpong comm=%s bytes=%d iters=%d us=%.3f\n", names[c],
				       sizes[s], iters, best);
		}
		{
			int iters = 200000, p;
			double best[2] = { 1e30, 1e30 }, t;

			/* rank 0 alone (rank 1 waits), the two loops in turns */
			if (rank == 0) {
				self(comms[c], buf, 8, iters / 10, 0);
				for (r = 0; r < 2 * rounds; r++)
					for (p = 0; p < 2; p++) {
						int q = (p + r) % 2;

						t = self(comms[c], buf, 8, iters, q);
						best[q] = t < best[q] ? t : best[q];
					}
			}
			PMPI_Barrier(comms[c]);
			if (rank == 0) {
				printf("case=self comm=%s bytes=8 iters=%d us=%.3f\n", names[c], iters,
				       best[0]);
				printf("case=self-pmpi comm=%s bytes=8 iters=%d us=%.3f\n", names[c],
				       iters, best[1]);
			}
		}
	}
	fflush(stdout);
	MPI_Comm_free(&comms[1]);
	free(buf);
	MPI_Finalize();
	return 0;
}
