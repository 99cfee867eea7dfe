/*
 * fidelity: a synthetic MPI kernel with known work, for tests/bench/fidelity.
 * Every rank does, per step: FLOPS floating-point operations on an array that
 * stays in the L1 cache (y = a*y + b: 2 flops an element), a streaming read
 * of MEM bytes from an array far larger than the caches, then one
 * synchronising exchange of the chosen pattern with messages of X bytes:
 *
 *   none      no communication
 *   halo1d    the ranks form a line; each exchanges X bytes with each of its
 *             (up to two) neighbours, all posted at once (one round a step)
 *   halo2d    a 2-D grid (MPI_Dims_create); X bytes with each of up to four
 *             neighbours, all posted at once
 *   alltoall  MPI_Alltoall, X bytes for every other rank
 *   tree      MPI_Allreduce (sum) of X bytes of doubles
 *
 * With -k it first measures the machine as the timed runs will find it: both
 * ranks run the compute loop alone (2e8 flops), then the streaming read alone
 * (2e8 bytes), three times each; each rank keeps its best, and rank 0 prints
 * the mean of the ranks as rate= (flop/s) and membw= (B/s).  On cores shared
 * with other jobs this calibrates the model with the load of the moment.
 *
 * It runs WARMUP untimed steps (they open the connections and let TCP grow
 * its window), then REPS timed runs of STEPS steps each, every run started by
 * a barrier and timed on each rank until its last step ends; a run's time is
 * the slowest rank's.  Rank 0 prints one line with the model's application
 * parameters for the whole of one timed run (all ranks together), each
 * run's time, and each run's compute time (compute and streaming, the mean of
 * the ranks; the rest of a run's time is communication and waiting):
 *
 *   fidelity ranks=2 pattern=halo1d steps=100 flops=1e+06 mem=0 msg=65536
 *     ops=2e+08 bytes=0 exchange=2.62144e+07 median=0.2101
 *     times=0.2101,0.2093,0.2110 compute=0.1502,0.1499,0.1510
 *
 * ops = ranks x STEPS x FLOPS, bytes = ranks x STEPS x MEM, exchange = the
 * bytes all ranks send over the network in STEPS steps (alltoall:
 * p(p-1)X a step; halo: 2X for each neighbour pair; tree: 2(p-1)X a step, a
 * reduction up a tree and a broadcast down it).  It prints figures; it
 * asserts nothing.
 *
 *   fidelity [-p PATTERN] [-s STEPS] [-f FLOPS] [-m MEM] [-x X] [-w WARMUP] [-r REPS] [-k]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NFLOP 256 /* doubles of the compute array: 2 KiB, in L1 */
#define NMEM (64u << 20) /* bytes of the streaming array: beyond any L3 here */
#define MAXREPS 64

enum pattern { P_NONE, P_HALO1D, P_HALO2D, P_ALLTOALL, P_TREE };

static double flopv[NFLOP];
static uint64_t *memv;
static size_t mempos; /* where the next streaming read starts, in words */
static volatile double sink_d;
static volatile uint64_t sink_u;

/* about n flops: y = a*y + b over the in-cache array */
static void compute(double n)
{
	long sweeps = (long)(n / (2.0 * NFLOP) + 0.5), s;
	int i;

	for (s = 0; s < sweeps; s++)
		for (i = 0; i < NFLOP; i++)
			flopv[i] = flopv[i] * 0.999999 + 1e-7;
	sink_d = flopv[sweeps % NFLOP];
}

/* read n bytes of the streaming array, continuing where the last read ended */
static void stream(double n)
{
	size_t words = (size_t)(n / 8.0 + 0.5), total = NMEM / 8, i;
	uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;

	while (words > 0) {
		size_t chunk = total - mempos < words ? total - mempos : words;
		uint64_t *p = memv + mempos;

		for (i = 0; i + 4 <= chunk; i += 4) {
			s0 += p[i];
			s1 += p[i + 1];
			s2 += p[i + 2];
			s3 += p[i + 3];
		}
		for (; i < chunk; i++)
			s0 += p[i];
		words -= chunk;
		mempos = (mempos + chunk) % total;
	}
	sink_u = s0 + s1 + s2 + s3;
}

static int parse_pattern(const char *s)
{
	static const char *const names[] = { "none", "halo1d", "halo2d", "alltoall", "tree" };
	int i;

	for (i = 0; i < 5; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	const char *pname = "halo1d";
	double flops = 0, mem = 0, exchange = 0;
	long x = 8, steps = 100, warmup = 3, reps = 3, s, r;
	int calibrate = 0;
	double rate = 0, membw = 0;
	int pattern, rank, size, opt, nnb = 0, nb[4], dims[2] = { 0, 0 }, i;
	char *sbuf, *rbuf;
	double t[MAXREPS], tc[MAXREPS];
	MPI_Request req[8];

	while ((opt = getopt(argc, argv, "p:s:f:m:x:w:r:k")) != -1) {
		switch (opt) {
		case 'p': pname = optarg; break;
		case 's': steps = atol(optarg); break;
		case 'f': flops = atof(optarg); break;
		case 'm': mem = atof(optarg); break;
		case 'x': x = atol(optarg); break;
		case 'w': warmup = atol(optarg); break;
		case 'r': reps = atol(optarg); break;
		case 'k': calibrate = 1; break;
		default:
			fprintf(stderr, "usage: fidelity [-p none|halo1d|halo2d|alltoall|tree] [-s STEPS] "
					"[-f FLOPS] [-m MEM] [-x BYTES] [-w WARMUP] [-r REPS] [-k]\n");
			return 2;
		}
	}
	pattern = parse_pattern(pname);
	if (pattern < 0 || steps < 1 || x < 8 || warmup < 0 || reps < 1 || reps > MAXREPS ||
	    flops < 0 || mem < 0) {
		fprintf(stderr, "fidelity: invalid arguments\n");
		return 2;
	}
	x -= x % 8; /* whole doubles, for the reduction */
	/* what compute() and stream() really do */
	flops = 2.0 * NFLOP * (double)(long)(flops / (2.0 * NFLOP) + 0.5);
	mem = 8.0 * (double)(long)(mem / 8.0 + 0.5);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);

	if (pattern == P_HALO1D) {
		if (rank > 0)
			nb[nnb++] = rank - 1;
		if (rank < size - 1)
			nb[nnb++] = rank + 1;
		exchange = 2.0 * (size - 1) * (double)x;
	} else if (pattern == P_HALO2D) {
		int row, col;

		MPI_Dims_create(size, 2, dims);
		row = rank / dims[1];
		col = rank % dims[1];
		if (row > 0)
			nb[nnb++] = rank - dims[1];
		if (row < dims[0] - 1)
			nb[nnb++] = rank + dims[1];
		if (col > 0)
			nb[nnb++] = rank - 1;
		if (col < dims[1] - 1)
			nb[nnb++] = rank + 1;
		exchange = 2.0 * (double)x * ((double)dims[0] * (dims[1] - 1) + (double)dims[1] * (dims[0] - 1));
	} else if (pattern == P_ALLTOALL) {
		exchange = (double)size * (size - 1) * (double)x;
	} else if (pattern == P_TREE) {
		exchange = 2.0 * (size - 1) * (double)x;
	}
	/* alltoall: one block for every rank; halo: one for every neighbour */
	sbuf = calloc((size_t)(pattern == P_ALLTOALL ? size : 4), (size_t)x);
	rbuf = calloc((size_t)(pattern == P_ALLTOALL ? size : 4), (size_t)x);
	memv = malloc(NMEM);
	if (!sbuf || !rbuf || !memv)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (i = 0; i < (int)(NMEM / 8); i++)
		memv[i] = (uint64_t)i * 2654435761u;
	for (i = 0; i < NFLOP; i++)
		flopv[i] = 1.0 + i * 1e-3;

	if (calibrate) {
		double bf = 1e9, bm = 1e9, t0, mine[2];

		for (r = 0; r < 3; r++) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
			compute(2e8);
			t0 = MPI_Wtime() - t0;
			bf = t0 < bf ? t0 : bf;
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
			stream(2e8);
			t0 = MPI_Wtime() - t0;
			bm = t0 < bm ? t0 : bm;
		}
		mine[0] = 2.0 * NFLOP * (double)(long)(2e8 / (2.0 * NFLOP) + 0.5) / bf;
		mine[1] = 2e8 / bm;
		MPI_Reduce(rank == 0 ? MPI_IN_PLACE : mine, mine, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
		rate = mine[0] / size;
		membw = mine[1] / size;
	}

	for (r = -1; r < reps; r++) {
		long n = r < 0 ? warmup : steps;
		double t0, c = 0;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (s = 0; s < n; s++) {
			double c0 = MPI_Wtime();

			compute(flops);
			stream(mem);
			c += MPI_Wtime() - c0;
			switch (pattern) {
			case P_HALO1D:
			case P_HALO2D:
				for (i = 0; i < nnb; i++)
					MPI_Irecv(rbuf + (size_t)i * x, (int)x, MPI_BYTE, nb[i], 0,
						  MPI_COMM_WORLD, &req[i]);
				for (i = 0; i < nnb; i++)
					MPI_Isend(sbuf + (size_t)i * x, (int)x, MPI_BYTE, nb[i], 0,
						  MPI_COMM_WORLD, &req[nnb + i]);
				MPI_Waitall(2 * nnb, req, MPI_STATUSES_IGNORE);
				break;
			case P_ALLTOALL:
				MPI_Alltoall(sbuf, (int)x, MPI_BYTE, rbuf, (int)x, MPI_BYTE, MPI_COMM_WORLD);
				break;
			case P_TREE:
				MPI_Allreduce(sbuf, rbuf, (int)(x / 8), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
				break;
			default:
				break;
			}
		}
		if (r >= 0) {
			double mine = MPI_Wtime() - t0;

			MPI_Allreduce(&mine, &t[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
			MPI_Allreduce(&c, &tc[r], 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
			tc[r] /= size;
		}
	}

	if (rank == 0) {
		double sorted[MAXREPS];

		memcpy(sorted, t, (size_t)reps * sizeof(double));
		qsort(sorted, (size_t)reps, sizeof(double), cmp_double);
		printf("fidelity ranks=%d pattern=%s steps=%ld flops=%g mem=%g msg=%ld ops=%.6g bytes=%.6g "
		       "exchange=%.6g median=%.6f times=",
		       size, pname, steps, flops, mem, x, (double)size * (double)steps * flops,
		       (double)size * (double)steps * mem, exchange * (double)steps, sorted[reps / 2]);
		for (r = 0; r < reps; r++)
			printf("%s%.6f", r ? "," : "", t[r]);
		printf(" compute=");
		for (r = 0; r < reps; r++)
			printf("%s%.6f", r ? "," : "", tc[r]);
		if (calibrate)
			printf(" rate=%.6g membw=%.6g", rate, membw);
		printf("\n");
		fflush(stdout);
	}
	free(sbuf);
	free(rbuf);
	free(memv);
	MPI_Finalize();
	return 0;
}
