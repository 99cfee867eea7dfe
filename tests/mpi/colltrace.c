/*
 * colltrace.c: which coll/tuned algorithm ran (LD_PRELOAD, test only).
 *
 * Open MPI 4.1's coll/tuned (mca_coll_tuned.so, a plugin) calls the
 * algorithms of coll/base in libmpi.so through the PLT, so a preloaded
 * library can stand in front of them.  Each wrapper prints, once per process
 * and algorithm, "colltrace: <algorithm>" on stderr and calls the real one.
 * This is how the tests see that a coll/tuned dynamic rules file was read:
 * Open MPI 4.1 built without --enable-debug logs nothing about the file
 * (its messages there are OPAL_OUTPUT, compiled out).
 *
 * The wrappers forward ten integer-register/stack words whatever the real
 * signature (every argument of these functions is a pointer or an integer):
 * correct for the x86-64 System V calling convention, where the caller
 * removes its own stack arguments; this file is for x86-64 Linux only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "colltrace forwards arguments the x86-64 System V way only"
#endif

typedef int (*fn10)(long, long, long, long, long, long, long, long, long, long);

#define TRACE(name)                                                                   \
	int ompi_coll_base_##name(long a, long b, long c, long d, long e, long f, long g, \
				  long h, long i, long j);                            \
	int ompi_coll_base_##name(long a, long b, long c, long d, long e, long f, long g, \
				  long h, long i, long j)                             \
	{                                                                             \
		static fn10 real;                                                     \
		static int said;                                                      \
		if (real == NULL)                                                     \
			real = (fn10)dlsym(RTLD_NEXT, "ompi_coll_base_" #name);       \
		if (!said) {                                                          \
			said = 1;                                                     \
			fprintf(stderr, "colltrace: %s (pid %d)\n", #name, (int)getpid()); \
		}                                                                     \
		return real(a, b, c, d, e, f, g, h, i, j);                            \
	}

TRACE(allreduce_intra_recursivedoubling)
TRACE(allreduce_intra_redscat_allgather)
TRACE(allreduce_intra_ring)
TRACE(allreduce_intra_ring_segmented)
TRACE(allreduce_intra_nonoverlapping)
TRACE(allreduce_intra_basic_linear)
TRACE(bcast_intra_binomial)
TRACE(bcast_intra_scatter_allgather)
TRACE(bcast_intra_scatter_allgather_ring)
TRACE(bcast_intra_pipeline)
TRACE(bcast_intra_chain)
TRACE(bcast_intra_split_bintree)
TRACE(bcast_intra_bintree)
TRACE(bcast_intra_knomial)
TRACE(bcast_intra_basic_linear)
TRACE(reduce_intra_binomial)
TRACE(reduce_intra_in_order_binary)
TRACE(reduce_intra_binary)
TRACE(reduce_intra_pipeline)
TRACE(reduce_intra_chain)
TRACE(reduce_intra_redscat_gather)
TRACE(reduce_intra_basic_linear)
TRACE(barrier_intra_recursivedoubling)
TRACE(barrier_intra_doublering)
TRACE(barrier_intra_bruck)
TRACE(barrier_intra_tree)
TRACE(barrier_intra_two_procs)
TRACE(barrier_intra_basic_linear)
TRACE(allgather_intra_recursivedoubling)
TRACE(allgather_intra_basic_linear)
TRACE(allgather_intra_ring)
TRACE(allgather_intra_neighborexchange)
TRACE(allgather_intra_bruck)
TRACE(allgather_intra_two_procs)
