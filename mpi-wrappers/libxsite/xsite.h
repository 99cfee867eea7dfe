/*
 * libxsite: the little API the library exports besides the MPI_ wrappers.
 *
 * Programs need not use it.  Tests and tools find it at run time with
 * dlsym(RTLD_DEFAULT, "xsite_get_stats"), so that the same binary runs with
 * and without the library preloaded.
 */
#ifndef XSITE_H
#define XSITE_H

#include <stdint.h>

#define XSITE_VERSION "0.1.0"

/* What this rank has sent to ranks at the other site(s) so far, and how
 * many collective calls took the site-aware path or fell back. */
struct xsite_stats {
	uint64_t cross_bytes;
	uint64_t cross_messages;
	uint64_t p2p_bytes;       /* point-to-point share of cross_bytes */
	uint64_t p2p_messages;
	uint64_t coll_bytes;      /* collective share of cross_bytes */
	uint64_t coll_messages;
	uint64_t coll_siteaware;  /* collective calls that took xsite's algorithm */
	uint64_t coll_fallback;   /* collective calls left to the MPI library */
};

/* Fills *s for the calling rank; returns 0, or -1 outside MPI_Init ..
 * MPI_Finalize. */
int xsite_get_stats(struct xsite_stats *s);

/* How many calls of one collective with one class of message size (bytes
 * rounded up to a power of two) libxsite makes on a communicator before it
 * keeps its own algorithm or the MPI library's for that class: 2 + 2 x
 * XSITE_HANDOFF; 0 when it does not time the two (XSITE_HANDOFF=0,
 * XSITE_COLL=off, MPI_THREAD_MULTIPLE).  Returns -1 outside MPI_Init ..
 * MPI_Finalize. */
int xsite_race_calls(void);

/* The largest message in which libxsite's collectives cross the link (more
 * data goes in several): XSITE_EAGER, or with
 * XSITE_EAGER=auto (the default) what it was resolved to at MPI_Init (the
 * MPI library's eager limit less a header, the smallest of the ranks'); 0
 * for no limit.  Returns -1 outside MPI_Init .. MPI_Finalize. */
long xsite_eager_bytes(void);

/* "0.1.0" */
const char *xsite_version(void);

#endif
