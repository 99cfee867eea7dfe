/*
 * libxsite: internal declarations shared by the library's files.
 *
 *   config.c    tunables (XSITE_*), logging
 *   comm.c      per-communicator state: rank maps, the site exchange, the
 *               cached sub-communicators (attribute with a delete callback)
 *   coll.c      the site-aware collectives
 *   race.c      the hand-off to the MPI library's collectives, one clock
 *   nbc.c       the site-aware nonblocking collectives
 *   traffic.c   accounting of what crosses the link, the JSON record
 *   wrappers.c  the MPI_ entry points (PMPI profiling interface)
 */
#ifndef XSITE_INTERNAL_H
#define XSITE_INTERNAL_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "xsite.h"

#define XS_SITE_MAX 64  /* longest site name + 1 */
#define XS_HOST_MAX 72  /* longest host name kept + 1 */
#define XS_MAX_SITES 64 /* distinct sites told apart in one job */
#define XS_NBC_LANES 4  /* nonblocking collectives of a communicator that run at once */

/* ---- config.c ------------------------------------------------------- */

struct xs_config {
	int coll;            /* XSITE_COLL */
	int init_fence;      /* XSITE_INIT_FENCE */
	int streams;         /* XSITE_STREAMS */
	long large_msg;      /* XSITE_LARGE_MSG */
	long pipeline;       /* XSITE_PIPELINE */
	long eager;          /* XSITE_EAGER (0: no limit; -1: auto, until xs_config_agree) */
	int verbose;         /* XSITE_VERBOSE */
	int node_level;      /* XSITE_NODE_LEVEL */
	int node_size;       /* XSITE_NODE_SIZE */
	int matrix_max;      /* XSITE_MATRIX_MAX */
	int edges_max;       /* XSITE_EDGES_MAX (world rank 0's) */
	int handoff;         /* XSITE_HANDOFF (at most XS_HANDOFF_MAX) */
	const char *traffic; /* XSITE_TRAFFIC_FILE (NULL: none) */
};
extern struct xs_config xs_cfg;
#define XS_HANDOFF_MAX 1000

void xs_config_load(int world_rank);
/*
 * Collective on MPI_COMM_WORLD, after the start-up fence: one allreduce
 * checks that the tunables that shape collectives are equal on every rank
 * (world rank 0 names each one that differs) and resolves XSITE_EAGER=auto.
 * Returns 0, or -1 on every rank when one differs or the allreduce failed:
 * libxsite then stays inactive rather than let the ranks' collectives not
 * match.
 */
int xs_config_agree(int world_rank);
#ifdef XSITE_FAULT_INJECTION
/* test builds only (libxsite-fault.so): whether XSITE_FAULT names this fault */
int xs_fault(const char *name);
#endif
void xs_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- global state (wrappers.c) ---------------------------------------- */

extern int xs_ready;           /* between MPI_Init and MPI_Finalize */
extern int xs_mt;              /* MPI_THREAD_MULTIPLE was provided */
extern __thread int xs_depth;  /* > 0 inside the library: re-entry guard */
extern int xs_wrank, xs_wsize; /* in MPI_COMM_WORLD */
extern MPI_Group xs_wgroup;    /* the group of MPI_COMM_WORLD */

/* Sites of MPI_COMM_WORLD, from the exchange at MPI_Init. */
extern char xs_site[XS_SITE_MAX];         /* this rank's XSITE_SITE, "" if unset */
extern int *xs_wsite;                     /* site index of each world rank, -1: unset */
extern int xs_nsites;                     /* distinct sites in the job */
extern char xs_site_names[XS_MAX_SITES][XS_SITE_MAX];
extern int xs_sites_verified;             /* names behind equal hashes agree */

/* ---- comm.c ----------------------------------------------------------- */

enum xs_coll_id {
	XS_ALLREDUCE, XS_REDUCE, XS_BCAST, XS_BARRIER,
	XS_ALLGATHER, XS_GATHER, XS_SCATTER, XS_ALLTOALL,
	XS_REDUCE_SCATTER, XS_ALLGATHERV, XS_SCAN, XS_EXSCAN,
	/* the nonblocking ones libxsite runs */
	XS_IALLREDUCE, XS_IBCAST, XS_IBARRIER, XS_IALLGATHER,
	XS_NCOLL
};

enum xs_state { XS_UNSET, XS_SITEAWARE, XS_FALLBACK };

/* What the library knows about one communicator (cached as an attribute). */
struct xs_comm {
	MPI_Comm comm;
	unsigned id;        /* serial number in this process, for logs */
	int size, rank;     /* of comm (size: remote size for an intercomm) */
	int inter;          /* intercommunicator */
	int *wrank;         /* (remote) comm rank -> world rank, -1 if not in my world */

	/* set up at the first collective (collectively, on every rank) */
	enum xs_state state;
	const char *why;    /* fallback reason when state == XS_FALLBACK */
	int nsites;         /* 0: some rank has no XSITE_SITE */
	MPI_Comm priv;      /* copy of comm: xsite's own point-to-point */
	MPI_Comm local;     /* the ranks of my site */
	MPI_Comm node;      /* the ranks of my node (inside my site) */
	MPI_Comm nodeleaders; /* node rank 0 of each node of my site, else NULL */
	int *local_w, *node_w, *nl_w; /* their ranks -> world ranks */
	int nl_size, nl_rank, node_size, node_rank;
	int *site_of;       /* comm rank -> 0 or 1 (site 0: the site of rank 0) */
	int *lrank;         /* comm rank -> rank in its site's local comm */
	int n[2];           /* ranks per site */
	int *members[2];    /* local rank -> comm rank, per site */
	int kmax;           /* min(n[0], n[1], XSITE_STREAMS) */
	int *streams[2];    /* kmax stream ranks per site (comm ranks), by local rank */
	int me;             /* my site (0 or 1) */
	int node_level;     /* my site's local phases go through the node level */
	uint64_t logged[XS_NCOLL]; /* decisions already logged (XSITE_VERBOSE) */
	struct xs_race *race; /* [XS_NCOLL][XS_SIZE_CLASSES] (race.c), or NULL */
	/* race.c's one clock: this rank's offset (s) to rank 0's clock, a bound
	 * of its error, when it was measured (this rank's clock), whether it was */
	double clock_off, clock_err, clock_at;
	int clock_set;
	/* nbc.c: the copies of `local` for the nonblocking collectives' local
	 * steps, one per lane (MPI_COMM_NULL until the first call), the
	 * schedule running in each lane, the schedules started (the next one's
	 * lane) and not yet ended; the program freed the communicator while
	 * some ran (released at the last one's end) */
	MPI_Comm nb_local[XS_NBC_LANES];
	struct xs_nbc *nb_run[XS_NBC_LANES];
	unsigned nb_seq;
	int nb_pending, nb_dead;
	struct xs_comm *prev, *next; /* the live list (comm.c) */
};

int xs_comm_init(void);
void xs_comm_finalize(void);
struct xs_comm *xs_comm_get(MPI_Comm comm);   /* NULL only on failure */
int xs_comm_setup(struct xs_comm *c);          /* collective on c->comm */
void xs_comm_label(struct xs_comm *c, char *buf, size_t n);
void xs_comm_unused(struct xs_comm *c);       /* released if freed and idle */
#define XS_EX_UNSET 1    /* some rank has no XSITE_SITE */
#define XS_EX_TOOMANY 2  /* more than max_sites sites */
#define XS_EX_MISMATCH 4 /* different names behind one hash */
int xs_site_exchange(MPI_Comm comm, const char *mysite, int *idx, int nidx, int *nsites,
		     char (*names)[XS_SITE_MAX], int max_sites, int verify);
uint64_t xs_hash(const char *s);

/* ---- race.c: the hand-off to the MPI library's collectives -------------- */

#define XS_SIZE_CLASSES 48 /* bytes up to 2^0 ... 2^47 */
struct xs_race;
int xs_race_alloc(struct xs_comm *c);   /* at set-up: c->race (XSITE_HANDOFF > 0) */
void xs_race_free(struct xs_comm *c);
int xs_size_class(uint64_t bytes);      /* bytes rounded up to 2^k: k */
/* for a call that libxsite can run: *why set when the library's runs it
 * (left as it is for libxsite's); xs_race_start() and xs_race_end() then go
 * around that call */
void xs_race_pick(struct xs_comm *c, enum xs_coll_id coll, uint64_t bytes,
		  const char **why);
void xs_race_start(void);
void xs_race_end(int rc);
/* the class's verdict without a call counted: 0 the MPI library's, 1
 * libxsite's, -1 none yet */
int xs_race_winner(const struct xs_comm *c, enum xs_coll_id coll, uint64_t bytes);

/* ---- coll.c ----------------------------------------------------------- */

extern const char *const xs_coll_name[XS_NCOLL];

/* tags on the private communicator, one per kind of message */
enum { TAG_CROSS = 1, TAG_TO_STREAM, TAG_FROM_STREAM, TAG_CLOCK = 100,
       TAG_NBC = 200 /* ... TAG_NBC + XS_NBC_LANES - 1: one per lane */ };

/* requests that grow as they are posted; after an error, xs_reqs_free
 * completes the ones started before it frees them */
struct xs_reqs {
	MPI_Request *r;
	int n, cap;
};
/* a new slot (MPI_REQUEST_NULL until the post sets it), NULL: no memory */
MPI_Request *xs_reqs_add(struct xs_reqs *v);
int xs_reqs_wait(struct xs_reqs *v); /* all of them; none outstanding after */
void xs_reqs_free(struct xs_reqs *v);

/* count items of t at buf across the link, to peer (send) or from it (on
 * the private communicator, tag), in messages that the MPI library sends
 * eagerly: at most XSITE_EAGER bytes each (whole items, at least one; one
 * message of any size with XSITE_EAGER=0), one request each in v.  Both
 * sides post the same count, so their pieces match; a send is counted. */
int xs_cross(const struct xs_comm *c, int send, const void *buf, int count,
	     MPI_Datatype t, int peer, int tag, struct xs_reqs *v);
/* the same, waited for: a blocking send or receive */
int xs_cross_wait(const struct xs_comm *c, int send, const void *buf, int count,
		  MPI_Datatype t, int peer, int tag);

/* a datatype's layout; contig: a predefined type whose elements tile
 * memory (memcpy) */
struct xs_tinfo {
	MPI_Aint lb, ext, tlb, text;
	int size;
	int contig;
};
void xs_tinfo(MPI_Datatype t, struct xs_tinfo *ti);
/* a buffer for count elements of t (true extent), shifted by the true lb */
void *xs_tmp_typed(int count, const struct xs_tinfo *ti, void **base);
int xs_copy_typed(void *dst, const void *src, int count, MPI_Datatype t,
		  const struct xs_tinfo *ti);
/* P0 op P1 (site 0's partial first) into mine, the same bits on both sides */
int xs_combine(int mysite, void *mine, void *theirs, int count, MPI_Datatype t,
	       MPI_Op op, const struct xs_tinfo *ti);

/* the bytes of cnt[i] items of t for each of n ranks (malloc'd), or NULL */
uint64_t *xs_counts_bytes(const int *cnt, int n, MPI_Datatype t);
/* segment j of k of total items: its first item and its length */
int xs_seg_lo(int total, int k, int j);
int xs_seg_len(int total, int k, int j);
/* stream rank j of site s (comm rank; k = 1: the site leader), and mine
 * (-1: none) */
int xs_stream(const struct xs_comm *c, int s, int k, int j);
int xs_my_stream(const struct xs_comm *c, int k);
/* counts and displacements of an allgatherv at my site whose stream rank j
 * holds segment j of total items (the others none) */
int xs_seg_layout(const struct xs_comm *c, int total, int k, int **cnt,
		  int **dsp);

/* packed images: the data of (buf, count, t) as contiguous bytes, the
 * buffer itself where t is a predefined type without gaps (force_copy: a
 * copy all the same) */
struct xs_img {
	char *p;
	void *base; /* allocated here, else NULL */
	size_t bytes;
};
int xs_img_in(const void *buf, int count, MPI_Datatype t, MPI_Comm comm,
	      int force_copy, struct xs_img *im);
/* room for the image of an output buffer */
int xs_img_out(void *buf, int count, MPI_Datatype t, struct xs_img *im);
/* unpack an output image into the buffer */
int xs_img_done(struct xs_img *im, void *buf, int count, MPI_Datatype t,
		MPI_Comm comm);
void xs_img_free(struct xs_img *im);
/* a rank's block of an Allgather or Gather, packed: from sbuf, or
 * (MPI_IN_PLACE) from its place pos in rbuf */
int xs_own_block(const struct xs_comm *c, const void *sbuf, int scount,
		 MPI_Datatype stype, const void *rbuf, int rcount,
		 MPI_Datatype rtype, int pos, struct xs_img *im);

/* The site-aware algorithms.  The caller has checked everything (two
 * sites, supported arguments); k = 1 (two leaders) or c->kmax streams. */
int xs_allreduce(struct xs_comm *c, const void *sbuf, void *rbuf, int count,
		 MPI_Datatype t, MPI_Op op, int k);
int xs_reduce(struct xs_comm *c, const void *sbuf, void *rbuf, int count,
	      MPI_Datatype t, MPI_Op op, int root, int k);
int xs_bcast(struct xs_comm *c, void *buf, int count, MPI_Datatype t,
	     int root, int k);
int xs_barrier(struct xs_comm *c);
int xs_allgather(struct xs_comm *c, const void *sbuf, int scount,
		 MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
		 int k);
int xs_gather(struct xs_comm *c, const void *sbuf, int scount,
	      MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
	      int root, int k);
int xs_scatter(struct xs_comm *c, const void *sbuf, int scount,
	       MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
	       int root, int k);
int xs_alltoall(struct xs_comm *c, const void *sbuf, int scount,
		MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
		int k);
/* Through the two site leaders only (no streams).  Reduce_scatter:
 * rcounts[r] elements for comm rank r, or (rcounts NULL, the _block form)
 * block for each.  Scan and Exscan: the ranks of site 0 come first in rank
 * order (xs_sites_in_order). */
int xs_reduce_scatter(struct xs_comm *c, const void *sbuf, void *rbuf,
		      const int *rcounts, int block, MPI_Datatype t, MPI_Op op);
int xs_allgatherv(struct xs_comm *c, const void *sbuf, int scount,
		  MPI_Datatype stype, void *rbuf, const int *rcounts,
		  const int *displs, MPI_Datatype rtype);
int xs_scan(struct xs_comm *c, const void *sbuf, void *rbuf, int count,
	    MPI_Datatype t, MPI_Op op, int exclusive);
int xs_sites_in_order(const struct xs_comm *c);

/* ---- nbc.c: Iallreduce, Ibcast, Ibarrier (k = 1), Iallgather (k) -------- */

/* NULL when they can be site-aware (the MPI library's progress engine takes
 * libxsite's callback; registered at the first call), else why not */
const char *xs_nbc_why(void);
void xs_nbc_finalize(void);
int xs_iallreduce(struct xs_comm *c, const void *sbuf, void *rbuf, int count,
		  MPI_Datatype t, MPI_Op op, MPI_Request *req);
int xs_ibcast(struct xs_comm *c, void *buf, int count, MPI_Datatype t, int root,
	      MPI_Request *req);
int xs_ibarrier(struct xs_comm *c, MPI_Request *req);
int xs_iallgather(struct xs_comm *c, const void *sbuf, int scount,
		  MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
		  int k, MPI_Request *req);

/* ---- traffic.c -------------------------------------------------------- */

int xs_traffic_init(void);
void xs_traffic_finalize(void);
void xs_count(int wdest, uint64_t bytes, int coll);
void xs_count_p2p(MPI_Comm comm, int dest, int count, MPI_Datatype t);
void xs_persist_add(MPI_Request req, MPI_Comm comm, int dest, int count,
		    MPI_Datatype t);
void xs_persist_start(MPI_Request req);
void xs_persist_free(MPI_Request req);
void xs_note_decision(int siteaware);

/* The fallback model: what the MPI library's own algorithm would send,
 * counted from the calling rank (see README.md, "Accounting"). */
void xs_model_barrier(const int *wmap, int size, int rank);
void xs_model_bcast(const int *wmap, int size, int rank, int root, uint64_t bytes);
void xs_model_reduce(const int *wmap, int size, int rank, int root, uint64_t bytes);
void xs_model_allreduce(const int *wmap, int size, int rank, uint64_t bytes);
void xs_model_gather(const int *wmap, int size, int rank, int root, uint64_t block);
void xs_model_scatter(const int *wmap, int size, int rank, int root, uint64_t block);
void xs_model_allgather(const int *wmap, int size, int rank, uint64_t block);
void xs_model_alltoall(const int *wmap, int size, int rank, uint64_t block);
void xs_model_alltoallv(const int *wmap, int size, int rank, const uint64_t *bytes);
void xs_model_scan(const int *wmap, int size, int rank, uint64_t bytes);
void xs_model_reduce_scatter(const int *wmap, int size, int rank, const uint64_t *bytes);
/* vector forms for the internal site-local phases: per-rank byte counts */
void xs_model_gatherv(const int *wmap, int size, int rank, int root, const uint64_t *bytes);
void xs_model_scatterv(const int *wmap, int size, int rank, int root, const uint64_t *bytes);
void xs_model_allgatherv(const int *wmap, int size, int rank, const uint64_t *bytes);

#endif
