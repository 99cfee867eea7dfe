/*
 * pairs: a known traffic pattern for xsite-run's tests.  Each rank prints
 * "rank R host H" (R its MPI_COMM_WORLD rank), then sends ITERS x BYTES to
 * its partner (R + p/2) mod p, and 64 bytes to its ring neighbours: with
 * libxsite's record of a run, xsite-run --comm-graph must put each rank and
 * its partner at one site.
 *
 *   pairs [-b BYTES] [-i ITERS]
 */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long bytes = 1 << 20;
	int iters = 2, opt, rank, size, i;
	char host[256], *a, *b, s[64] = { 0 }, r[64];

	while ((opt = getopt(argc, argv, "b:i:")) != -1) {
		if (opt == 'b')
			bytes = atol(optarg);
		else if (opt == 'i')
			iters = atoi(optarg);
	}
	if (bytes < 0 || bytes > INT_MAX) { /* one MPI_Sendrecv of int count */
		fprintf(stderr, "pairs: -b %ld: not 0 to %d bytes\n", bytes, INT_MAX);
		return 2;
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = '\0';
	printf("rank %d host %s\n", rank, host);
	fflush(stdout);
	a = calloc(1, (size_t)bytes + 1);
	b = calloc(1, (size_t)bytes + 1);
	if (!a || !b) {
		fprintf(stderr, "pairs: out of memory (2 x %ld bytes)\n", bytes);
		free(a);
		free(b);
		MPI_Abort(MPI_COMM_WORLD, 2);
		return 2; /* MPI_Abort does not return */
	}
	if (size > 1) {
		int partner = (rank + size / 2) % size;
		int right = (rank + 1) % size, left = (rank + size - 1) % size;

		for (i = 0; i < iters && partner != rank; i++)
			MPI_Sendrecv(a, (int)bytes, MPI_BYTE, partner, 1, b, (int)bytes, MPI_BYTE,
				     partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Sendrecv(s, 64, MPI_BYTE, right, 2, r, 64, MPI_BYTE, left, 2, MPI_COMM_WORLD,
			     MPI_STATUS_IGNORE);
	}
	free(a);
	free(b);
	MPI_Finalize();
	return 0;
}
