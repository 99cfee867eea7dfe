/*
 * halo: a 2-D halo-exchange kernel for tests/bench/halo.  The ranks form a
 * grid (MPI_Dims_create, row-major: rank = row x cols + col, not periodic);
 * each holds an N x N block of doubles and, per iteration, exchanges one
 * edge of N doubles with each of its up to four neighbours (MPI_Sendrecv)
 * and relaxes its block (a 5-point Jacobi sweep).  Rank 0 prints
 *   halo: ranks=8 grid=4x2 n=512 iters=50 seconds=0.123 checksum=...
 * It prints figures; it asserts nothing.
 *
 *   halo [-n N] [-i ITERS]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = 512, iters = 50, opt, rank, size, dims[2] = { 0, 0 }, row, col, it, i, j;
	double *u, *v, *sb, *rb, t0, t1, sum = 0, total = 0;

	while ((opt = getopt(argc, argv, "n:i:")) != -1) {
		if (opt == 'n')
			n = atoi(optarg);
		else if (opt == 'i')
			iters = atoi(optarg);
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Dims_create(size, 2, dims);
	row = rank / dims[1];
	col = rank % dims[1];
	/* (n + 2) x (n + 2) with a ghost frame */
	u = calloc((size_t)(n + 2) * (n + 2), sizeof(double));
	v = calloc((size_t)(n + 2) * (n + 2), sizeof(double));
	sb = malloc(n * sizeof(double));
	rb = malloc(n * sizeof(double));
#define U(a, i, j) (a)[(size_t)(i) * (n + 2) + (j)]
	for (i = 1; i <= n; i++)
		for (j = 1; j <= n; j++)
			U(u, i, j) = rank + (double)i / n;
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (it = 0; it < iters; it++) {
		/* neighbours: up, down, left, right; edge row/column and ghost row/column */
		int nb[4] = { row > 0 ? rank - dims[1] : MPI_PROC_NULL,
			      row < dims[0] - 1 ? rank + dims[1] : MPI_PROC_NULL,
			      col > 0 ? rank - 1 : MPI_PROC_NULL,
			      col < dims[1] - 1 ? rank + 1 : MPI_PROC_NULL };
		int d;

		for (d = 0; d < 4; d++) {
			int back = d ^ 1; /* the neighbour on the other side receives from us */

			for (i = 0; i < n; i++)
				sb[i] = d == 0 ? U(u, 1, i + 1) : d == 1 ? U(u, n, i + 1) :
					d == 2 ? U(u, i + 1, 1) : U(u, i + 1, n);
			MPI_Sendrecv(sb, n, MPI_DOUBLE, nb[d], d, rb, n, MPI_DOUBLE, nb[back], d,
				     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			if (nb[back] == MPI_PROC_NULL)
				continue;
			for (i = 0; i < n; i++) {
				if (back == 0)
					U(u, 0, i + 1) = rb[i];
				else if (back == 1)
					U(u, n + 1, i + 1) = rb[i];
				else if (back == 2)
					U(u, i + 1, 0) = rb[i];
				else
					U(u, i + 1, n + 1) = rb[i];
			}
		}
		for (i = 1; i <= n; i++)
			for (j = 1; j <= n; j++)
				U(v, i, j) = 0.25 * (U(u, i - 1, j) + U(u, i + 1, j) + U(u, i, j - 1) +
						     U(u, i, j + 1));
		memcpy(u, v, (size_t)(n + 2) * (n + 2) * sizeof(double));
	}
	t1 = MPI_Wtime() - t0;
	for (i = 1; i <= n; i++)
		for (j = 1; j <= n; j++)
			sum += U(u, i, j);
	MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(rank == 0 ? MPI_IN_PLACE : &t1, &t1, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("halo: ranks=%d grid=%dx%d n=%d iters=%d seconds=%.3f checksum=%.6e\n", size,
		       dims[0], dims[1], n, iters, t1, total);
	free(u);
	free(v);
	free(sb);
	free(rb);
	MPI_Finalize();
	return 0;
}
