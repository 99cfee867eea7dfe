/*
 * xsite-pingpong: MPI ping-pong between rank 0 and rank 1, for xsite calibrate
 *
 *   xsite-pingpong [-s BYTES] [-n ITERATIONS] [-w WARMUP] [-t SECONDS]
 *
 * Prints one line from rank 0:
 *   pingpong from=NODE to=NODE bytes=B iters=N oneway_us min=.. median=.. avg=.. p90=.. max=.. mbps=..
 * one-way latency = round trip / 2 for each iteration; mbps = megabytes per
 * second of one message at the median one-way time.  -t sets an alarm: if the
 * exchange has not finished within that many seconds the program prints
 * "pingpong: timeout" and exits 3 (a cut link must not hang a test).
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_alarm(int sig)
{
	static const char msg[] = "pingpong: timeout\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int size = 8, iters = 1000, warmup = 50, timeout = 0;
	int rank, nranks, i, opt, len;
	char name[MPI_MAX_PROCESSOR_NAME], peer[MPI_MAX_PROCESSOR_NAME];
	double *t, sum = 0.0;
	char *buf;

	while ((opt = getopt(argc, argv, "s:n:w:t:")) != -1) {
		switch (opt) {
		case 's': size = atoi(optarg); break;
		case 'n': iters = atoi(optarg); break;
		case 'w': warmup = atoi(optarg); break;
		case 't': timeout = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: xsite-pingpong [-s BYTES] [-n ITERATIONS] [-w WARMUP] [-t SECONDS]\n");
			return 2;
		}
	}
	if (size < 1 || iters < 1 || warmup < 0) {
		fprintf(stderr, "pingpong: invalid arguments\n");
		return 2;
	}
	if (timeout > 0) {
		signal(SIGALRM, on_alarm);
		alarm((unsigned)timeout);
	}

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks < 2) {
		if (rank == 0)
			fprintf(stderr, "pingpong: needs 2 ranks, has %d\n", nranks);
		MPI_Abort(MPI_COMM_WORLD, 2);
		return 2; /* not reached; MPI_Abort is not declared noreturn */
	}
	MPI_Get_processor_name(name, &len);
	buf = calloc(1, (size_t)size);
	t = calloc((size_t)iters, sizeof(double));
	if (!buf || !t) {
		MPI_Abort(MPI_COMM_WORLD, 2);
		free(buf); /* not reached; MPI_Abort is not declared noreturn */
		free(t);
		return 2;
	}

	if (rank == 0)
		MPI_Recv(peer, sizeof(peer), MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	else if (rank == 1)
		MPI_Send(name, (int)strlen(name) + 1, MPI_CHAR, 0, 1, MPI_COMM_WORLD);

	for (i = -warmup; i < iters; i++) {
		double t0 = MPI_Wtime();

		if (rank == 0) {
			MPI_Send(buf, size, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
			MPI_Recv(buf, size, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			if (i >= 0)
				t[i] = (MPI_Wtime() - t0) / 2.0;
		} else if (rank == 1) {
			MPI_Recv(buf, size, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(buf, size, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
		}
	}

	if (rank == 0) {
		double med;

		for (i = 0; i < iters; i++)
			sum += t[i];
		qsort(t, (size_t)iters, sizeof(double), cmp_double);
		med = t[iters / 2];
		printf("pingpong from=%s to=%s bytes=%d iters=%d oneway_us min=%.2f median=%.2f avg=%.2f p90=%.2f max=%.2f mbps=%.1f\n",
		       name, peer, size, iters, t[0] * 1e6, med * 1e6, sum / iters * 1e6,
		       t[iters * 9 / 10] * 1e6, t[iters - 1] * 1e6,
		       (double)size / med / 1e6);
		fflush(stdout);
	}
	free(buf);
	free(t);
	MPI_Finalize();
	return 0;
}
