/*
 * libxsite: the MPI_ entry points (PMPI profiling interface).
 *
 * Every wrapper first checks the re-entry guard: outside MPI_Init ..
 * MPI_Finalize, or when the library itself is running (xs_depth > 0, e.g.
 * an MPI implementation whose PMPI_ collective calls MPI_Send), it only
 * calls the PMPI_ function.
 *  - point-to-point sends: the PMPI_ call, then the bytes are counted;
 *  - collectives: decide() says site-aware (k streams) or fallback (why);
 *    a fallback calls the PMPI_ collective and counts the fallback model.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#ifdef XSITE_HAVE_PMIX
#include <dlfcn.h>
#include <pmix.h>
#endif

#include "internal.h"

int xs_ready;
int xs_mt;
__thread int xs_depth;
int xs_wrank, xs_wsize;
MPI_Group xs_wgroup = MPI_GROUP_NULL;
char xs_site[XS_SITE_MAX];
int *xs_wsite;
int xs_nsites;
char xs_site_names[XS_MAX_SITES][XS_SITE_MAX];
int xs_sites_verified;

#define GUARD(call) do { if (!xs_ready || xs_depth) return call; } while (0)

/* ---- MPI_Init / MPI_Finalize ---------------------------------------------- */

static const char *thread_level(int t)
{
	return t == MPI_THREAD_MULTIPLE ? "multiple" :
	       t == MPI_THREAD_SERIALIZED ? "serialized" :
	       t == MPI_THREAD_FUNNELED ? "funneled" : "single";
}

/*
 * The start-up fence.  Open MPI 4.1 (btl/tcp) crashes when a message reaches
 * a rank that is still inside MPI_Init: the receiver calls the fragment's
 * active-message callback through a NULL pointer.  Under Slurm's mpi/pmix
 * (22.05, PMIx 4.2) the ranks leave MPI_Init up to 13 ms apart (testbed,
 * 5 ms one way), and a PMIx fence that collects no data returns at once
 * there, without waiting for the others.  So the first ranks out send to
 * ranks still inside: 28 of 60 starts of 8 ranks died so, with or without
 * libxsite, until it fenced.  libxsite sends as soon as MPI_Init returns
 * (the site exchange), and the program may too: so first, one fence that
 * does collect (PMIX_COLLECT_DATA, nothing contributed), which waits until
 * every rank of the job has left MPI_Init.  PMIx_Fence is the MPI library's
 * own, found with dlsym (libxsite links no PMIx; pmix.h gives the types);
 * without an initialised PMIx client (a singleton) there is no fence.
 * Returns the seconds it took, or -1 when there was no fence (*why: why).
 */
static double init_fence(const char **why)
{
#ifdef XSITE_HAVE_PMIX
	__typeof__(&PMIx_Initialized) initialized;
	__typeof__(&PMIx_Fence) fence;
	pmix_info_t collect;
	double t0;

	*why = !xs_cfg.init_fence ? "XSITE_INIT_FENCE=off" : xs_wsize < 2 ? "one rank" :
	       "no PMIx client";
	if (!xs_cfg.init_fence || xs_wsize < 2)
		return -1;
	*(void **)&initialized = dlsym(RTLD_DEFAULT, "PMIx_Initialized");
	*(void **)&fence = dlsym(RTLD_DEFAULT, "PMIx_Fence");
	if (!initialized || !fence || !initialized())
		return -1;
	memset(&collect, 0, sizeof(collect));
	snprintf(collect.key, sizeof(collect.key), "%s", PMIX_COLLECT_DATA);
	collect.value.type = PMIX_BOOL;
	collect.value.data.flag = true;
	t0 = PMPI_Wtime();
	/* no procs: all of the job's (the caller's namespace) */
	if (fence(NULL, 0, &collect, 1) != PMIX_SUCCESS) {
		*why = "the PMIx fence failed";
		return -1;
	}
	return PMPI_Wtime() - t0;
#else
	*why = "built without PMIx";
	return -1;
#endif
}

static void start(int provided)
{
	const char *site = getenv("XSITE_SITE");
	const char *nofence;
	double fenced;
	int flags;

	xs_depth++;
	xs_mt = provided == MPI_THREAD_MULTIPLE;
	PMPI_Comm_rank(MPI_COMM_WORLD, &xs_wrank);
	PMPI_Comm_size(MPI_COMM_WORLD, &xs_wsize);
	xs_config_load(xs_wrank);
	fenced = init_fence(&nofence);
	if (xs_config_agree(xs_wrank) != 0)
		goto fail;
	if (site && strlen(site) >= XS_SITE_MAX) {
		fprintf(stderr, "xsite: XSITE_SITE: longer than %d characters, ignored: %s\n",
			XS_SITE_MAX - 1, site);
		site = NULL;
	}
	snprintf(xs_site, sizeof(xs_site), "%s", site ? site : "");
	xs_wsite = malloc(sizeof(int) * (size_t)xs_wsize);
	if (!xs_wsite || PMPI_Comm_group(MPI_COMM_WORLD, &xs_wgroup) != MPI_SUCCESS)
		goto fail;
	flags = xs_site_exchange(MPI_COMM_WORLD, xs_site, xs_wsite, xs_wsize, &xs_nsites,
				 xs_site_names, XS_MAX_SITES, 1);
	if (flags < 0)
		goto fail;
	xs_sites_verified = !(flags & XS_EX_MISMATCH);
	if (xs_wrank == 0 && (flags & XS_EX_MISMATCH))
		fprintf(stderr, "xsite: two different XSITE_SITE names have the same hash: "
			"site-aware collectives off\n");
	if (xs_wrank == 0 && (flags & XS_EX_TOOMANY))
		fprintf(stderr, "xsite: more than %d sites: ranks of the others count as "
			"site-less\n", XS_MAX_SITES);
	if (xs_comm_init() != MPI_SUCCESS || xs_traffic_init() != MPI_SUCCESS)
		goto fail;
	xs_ready = 1;
	if (xs_cfg.verbose && xs_wrank == 0) {
		char sites[256] = "";
		size_t o = 0;
		int s, r, n;

		for (s = 0; s <= xs_nsites && o < sizeof(sites) - 1; s++) {
			/* s == xs_nsites: the ranks without a site */
			for (n = r = 0; r < xs_wsize; r++)
				n += xs_wsite[r] == (s < xs_nsites ? s : -1);
			if (s < xs_nsites || n)
				o += (size_t)snprintf(sites + o, sizeof(sites) - o, "%s%s=%d",
						      s ? " " : "",
						      s < xs_nsites ? xs_site_names[s] : "(none)", n);
		}
		xs_log("xsite: libxsite %s: %d ranks, sites %s, collectives %s, thread level %s",
		       XSITE_VERSION, xs_wsize, sites,
		       !xs_cfg.coll ? "off (XSITE_COLL=off)" :
		       xs_mt ? "off (MPI_THREAD_MULTIPLE)" : "site-aware",
		       thread_level(provided));
		if (fenced >= 0)
			xs_log("xsite: start-up fence (PMIx) after MPI_Init: %.1f ms", fenced * 1e3);
		else
			xs_log("xsite: no start-up fence (%s)", nofence);
	}
	xs_depth--;
	return;
fail:
	if (xs_wrank == 0)
		fprintf(stderr, "xsite: setup failed at MPI_Init: libxsite stays inactive\n");
	free(xs_wsite);
	xs_wsite = NULL;
	xs_depth--;
}

int MPI_Init(int *argc, char ***argv)
{
	int rc = PMPI_Init(argc, argv), provided = MPI_THREAD_SINGLE;

	if (rc == MPI_SUCCESS) {
		PMPI_Query_thread(&provided);
		start(provided);
	}
	return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	int rc = PMPI_Init_thread(argc, argv, required, provided);

	if (rc == MPI_SUCCESS)
		start(*provided);
	return rc;
}

int MPI_Finalize(void)
{
	if (xs_ready && !xs_depth) {
		xs_depth++;
		xs_nbc_finalize();
		xs_traffic_finalize();
		xs_comm_finalize();
		xs_ready = 0;
		PMPI_Group_free(&xs_wgroup);
		free(xs_wsite);
		xs_wsite = NULL;
		xs_depth--;
	}
	return PMPI_Finalize();
}

/* ---- point-to-point ------------------------------------------------------ */

#define COUNTED(call, comm, dest, count, t) do {                              \
		int rc_ = (call);                                              \
		if (rc_ == MPI_SUCCESS && xs_ready && !xs_depth)               \
			xs_count_p2p(comm, dest, count, t);                    \
		return rc_;                                                    \
	} while (0)

/* MPI_Send, MPI_Ssend, MPI_Rsend, MPI_Bsend */
#define BLOCKING_SEND(name)                                                   \
	int MPI_##name(const void *buf, int count, MPI_Datatype t, int dest,  \
		       int tag, MPI_Comm comm)                                \
	{                                                                     \
		COUNTED(PMPI_##name(buf, count, t, dest, tag, comm), comm,    \
			dest, count, t);                                      \
	}

/* MPI_Isend, MPI_Issend, MPI_Irsend, MPI_Ibsend */
#define NONBLOCKING_SEND(name)                                                \
	int MPI_##name(const void *buf, int count, MPI_Datatype t, int dest,  \
		       int tag, MPI_Comm comm, MPI_Request *req)              \
	{                                                                     \
		COUNTED(PMPI_##name(buf, count, t, dest, tag, comm, req),     \
			comm, dest, count, t);                                \
	}

BLOCKING_SEND(Send)
BLOCKING_SEND(Ssend)
BLOCKING_SEND(Rsend)
BLOCKING_SEND(Bsend)
NONBLOCKING_SEND(Isend)
NONBLOCKING_SEND(Issend)
NONBLOCKING_SEND(Irsend)
NONBLOCKING_SEND(Ibsend)

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest,
		 int stag, void *rbuf, int rcount, MPI_Datatype rtype, int src,
		 int rtag, MPI_Comm comm, MPI_Status *status)
{
	COUNTED(PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype,
			      src, rtag, comm, status), comm, dest, scount, stype);
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype t, int dest,
			 int stag, int src, int rtag, MPI_Comm comm,
			 MPI_Status *status)
{
	COUNTED(PMPI_Sendrecv_replace(buf, count, t, dest, stag, src, rtag, comm,
				      status), comm, dest, count, t);
}

/* persistent sends: remembered at *_init, counted at each MPI_Start */
#define PERSIST(call, req, comm, dest, count, t) do {                         \
		int rc_ = (call);                                              \
		if (rc_ == MPI_SUCCESS && xs_ready && !xs_depth)               \
			xs_persist_add(*(req), comm, dest, count, t);          \
		return rc_;                                                    \
	} while (0)

/* MPI_Send_init, MPI_Ssend_init, MPI_Rsend_init, MPI_Bsend_init */
#define PERSISTENT_SEND(name)                                                 \
	int MPI_##name(const void *buf, int count, MPI_Datatype t, int dest,  \
		       int tag, MPI_Comm comm, MPI_Request *req)              \
	{                                                                     \
		PERSIST(PMPI_##name(buf, count, t, dest, tag, comm, req), req,\
			comm, dest, count, t);                                \
	}

PERSISTENT_SEND(Send_init)
PERSISTENT_SEND(Ssend_init)
PERSISTENT_SEND(Rsend_init)
PERSISTENT_SEND(Bsend_init)

int MPI_Start(MPI_Request *req)
{
	int rc = PMPI_Start(req);

	if (rc == MPI_SUCCESS && xs_ready && !xs_depth)
		xs_persist_start(*req);
	return rc;
}

int MPI_Startall(int count, MPI_Request reqs[])
{
	int rc = PMPI_Startall(count, reqs), i;

	if (rc == MPI_SUCCESS && xs_ready && !xs_depth)
		for (i = 0; i < count; i++)
			xs_persist_start(reqs[i]);
	return rc;
}

int MPI_Request_free(MPI_Request *req)
{
	if (xs_ready && !xs_depth && req)
		xs_persist_free(*req);
	return PMPI_Request_free(req);
}

/* ---- collectives ------------------------------------------------------- */

/* Log a decision once per (collective, communicator, decision), from rank 0
 * of the communicator. */
static void log_decision(struct xs_comm *c, enum xs_coll_id coll, const char *why,
			 int k)
{
	char label[MPI_MAX_OBJECT_NAME + 16], sites[32] = "";
	uint64_t bit;
	unsigned h = 0;
	const char *p;

	if (!xs_cfg.verbose || c->rank != 0)
		return;
	if (why) {
		for (p = why; *p; p++)
			h = h * 31 + (unsigned char)*p;
		bit = 4ULL << (h % 60);
	} else {
		bit = k > 1 ? 2 : 1;
	}
	if (__atomic_fetch_or(&c->logged[coll], bit, __ATOMIC_RELAXED) & bit)
		return;
	xs_comm_label(c, label, sizeof(label));
	if (c->state != XS_UNSET && !c->inter)
		snprintf(sites, sizeof(sites), ", %s",
			 c->nsites == 0 ? "sites unknown" :
			 c->nsites == 1 ? "1 site" :
			 c->nsites == 2 ? "2 sites" : "3+ sites");
	if (why)
		xs_log("xsite:coll:%s (n=%d%s): fallback (%s) [%s]", xs_coll_name[coll],
		       c->size, sites, why, label);
	else if (k > 1)
		xs_log("xsite:coll:%s (n=%d%s): hierarchical%s, %d streams, 1 crossing [%s]",
		       xs_coll_name[coll], c->size, sites,
		       c->node_level ? " (node level)" : "", k, label);
	else
		xs_log("xsite:coll:%s (n=%d%s): hierarchical%s, 1 crossing [%s]",
		       xs_coll_name[coll], c->size, sites,
		       c->node_level ? " (node level)" : "", label);
}

/* the blocking form of a nonblocking collective, whose hand-off verdict it
 * takes (a blocking one's is itself) */
static enum xs_coll_id blocking_form(enum xs_coll_id coll)
{
	switch (coll) {
	case XS_IALLREDUCE: return XS_ALLREDUCE;
	case XS_IBCAST: return XS_BCAST;
	case XS_IBARRIER: return XS_BARRIER;
	case XS_IALLGATHER: return XS_ALLGATHER;
	default: return coll;
	}
}

/*
 * Site-aware with k streams (returns k >= 1), or fall back (returns 0).
 * The first collective on an intracommunicator sets it up (collectively).
 * bytes decides between the two leaders and k streams (0: the leaders);
 * size is the call's size for the hand-off (race.c); why_call is a reason
 * of this call (count 0, op, size) or NULL; why_shape, if given, a reason
 * of the communicator's layout (after its set-up) or NULL; every input of
 * the decision is the same on every rank of the communicator.  A
 * nonblocking collective (nbc.c) is not raced: it takes its blocking
 * form's verdict, and k = 1 (Iallgather: k as the blocking form).
 */
static int decide(MPI_Comm comm, enum xs_coll_id coll, uint64_t bytes, uint64_t size,
		  const char *why_call, const char *(*why_shape)(const struct xs_comm *),
		  struct xs_comm **cp)
{
	int nb = blocking_form(coll) != coll;
	struct xs_comm *c = xs_comm_get(comm);
	const char *why = NULL;
	int k;

	*cp = c;
	if (!c)
		return 0;
	if (!xs_cfg.coll)
		why = "XSITE_COLL=off";
	else if (xs_mt)
		why = "MPI_THREAD_MULTIPLE";
	else if (c->inter)
		why = "intercommunicator";
	else if (!xs_sites_verified)
		why = "two site names behind one hash";
	else {
		if (c->state == XS_UNSET)
			xs_comm_setup(c);
		if (c->state != XS_SITEAWARE)
			why = c->why;
		else if (why_call)
			why = why_call;
		else if (why_shape)
			why = why_shape(c);
	}
	if (!why && nb) {
		/* a nonblocking call is not timed (the program's own work runs
		 * while it does); the blocking form's verdict holds for it */
		why = xs_nbc_why();
		if (!why && xs_race_winner(c, blocking_form(coll), size) == 0)
			why = "the MPI library's measured faster (hand-off)";
	} else if (!why) {
		xs_race_pick(c, coll, size, &why);
	}
	if (why) {
		log_decision(c, coll, why, 0);
		xs_note_decision(0);
		return 0;
	}
	/* bytes 0: an algorithm through the two leaders only (nonblocking:
	 * all but Iallgather) */
	k = (!nb || coll == XS_IALLGATHER) && bytes > 0 && bytes >= (uint64_t)xs_cfg.large_msg ?
		    c->kmax : 1;
	log_decision(c, coll, NULL, k);
	xs_note_decision(1);
	return k;
}

/* a fallback on an intracommunicator is counted with the model */
#define MODELLED(c) ((c) && !(c)->inter)

/* ordered: the algorithm keeps the op's order (Scan), else it needs a
 * commutative op */
static const char *op_why(MPI_Datatype t, MPI_Op op, int ordered)
{
	MPI_Aint lb, ext;
	int commute = 0;

	if (op == MPI_REPLACE || op == MPI_NO_OP)
		return "MPI_REPLACE/MPI_NO_OP";
	if (!ordered && (PMPI_Op_commutative(op, &commute) != MPI_SUCCESS || !commute))
		return "non-commutative op";
	PMPI_Type_get_extent(t, &lb, &ext);
	if (ext <= 0)
		return "datatype with extent <= 0";
	return NULL;
}

static const char *reduce_why(int count, MPI_Datatype t, MPI_Op op)
{
	return count == 0 ? "count 0" : op_why(t, op, 0);
}

static const char *scan_why(int count, MPI_Datatype t, MPI_Op op)
{
	return count == 0 ? "count 0" : op_why(t, op, 1);
}

static const char *bytes_why(uint64_t total)
{
	if (total == 0)
		return "count 0";
	if (total > INT_MAX)
		return "more than 2 GiB";
	return NULL;
}

static uint64_t nbytes(int count, MPI_Datatype t)
{
	int size = 0;

	PMPI_Type_size(t, &size);
	return (uint64_t)count * (uint64_t)size;
}

/* a fallback on an intracommunicator: what the library would send, modelled
 * (unit: the bytes of a reduction or broadcast, or one rank's block) */
static void model(const struct xs_comm *c, enum xs_coll_id coll, uint64_t unit,
		  int root)
{
	const int *w = c->wrank;

	switch (coll) {
	case XS_ALLREDUCE:
	case XS_IALLREDUCE: xs_model_allreduce(w, c->size, c->rank, unit); break;
	case XS_REDUCE: xs_model_reduce(w, c->size, c->rank, root, unit); break;
	case XS_BCAST:
	case XS_IBCAST: xs_model_bcast(w, c->size, c->rank, root, unit); break;
	case XS_BARRIER:
	case XS_IBARRIER: xs_model_barrier(w, c->size, c->rank); break;
	case XS_ALLGATHER:
	case XS_IALLGATHER: xs_model_allgather(w, c->size, c->rank, unit); break;
	case XS_GATHER: xs_model_gather(w, c->size, c->rank, root, unit); break;
	case XS_SCATTER: xs_model_scatter(w, c->size, c->rank, root, unit); break;
	case XS_ALLTOALL: xs_model_alltoall(w, c->size, c->rank, unit); break;
	case XS_REDUCE_SCATTER: /* modelled() counts these */
	case XS_ALLGATHERV:
	case XS_SCAN:
	case XS_EXSCAN:
	case XS_NCOLL: break;
	}
}

/* decide() for a call of total bytes, and count a fallback with the model */
static int route(MPI_Comm comm, enum xs_coll_id coll, uint64_t total,
		 uint64_t unit, int root, const char *why, struct xs_comm **cp)
{
	int k = decide(comm, coll, total, total, why, NULL, cp);

	if (!k && MODELLED(*cp))
		model(*cp, coll, unit, root);
	return k;
}

/* route() for the data-movement collectives: block bytes from each rank */
static int route_blocks(MPI_Comm comm, enum xs_coll_id coll, uint64_t block,
			int root, struct xs_comm **cp)
{
	int size;

	PMPI_Comm_size(comm, &size);
	return route(comm, coll, block * (uint64_t)size, block, root,
		     bytes_why(block * (uint64_t)size), cp);
}

/* the block of a rooted collective as each rank knows it (the root's
 * arguments at the root, the others' elsewhere): equal by the type-signature
 * rule */
static uint64_t rooted_block(MPI_Comm comm, int root, int rootcount,
			     MPI_Datatype roottype, int count, MPI_Datatype t)
{
	int rank, inter;

	PMPI_Comm_test_inter(comm, &inter);
	PMPI_Comm_rank(comm, &rank);
	return !inter && rank == root ? nbytes(rootcount, roottype) : nbytes(count, t);
}

/*
 * The body of every collective wrapper: LIB (the library's own call) when
 * libxsite is not active or is re-entered; else k = ROUTE (route() or
 * route_blocks(), which set c and count a fallback) and XS (xsite's version,
 * with c and k) when k > 0, LIB when k = 0.
 */
#define COLLECTIVE(lib, route_call, xs_call) do {                             \
		struct xs_comm *c;                                             \
		int k, rc;                                                     \
		GUARD(lib);                                                    \
		xs_depth++;                                                    \
		k = (route_call);                                              \
		xs_race_start();                                               \
		rc = k ? (xs_call) : (lib);                                    \
		xs_race_end(rc);                                               \
		xs_depth--;                                                    \
		return rc;                                                     \
	} while (0)

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
		  MPI_Op op, MPI_Comm comm)
{
	COLLECTIVE(PMPI_Allreduce(sbuf, rbuf, count, t, op, comm),
		   route(comm, XS_ALLREDUCE, nbytes(count, t), nbytes(count, t), 0,
			 reduce_why(count, t, op), &c),
		   xs_allreduce(c, sbuf, rbuf, count, t, op, k));
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t,
	       MPI_Op op, int root, MPI_Comm comm)
{
	COLLECTIVE(PMPI_Reduce(sbuf, rbuf, count, t, op, root, comm),
		   route(comm, XS_REDUCE, nbytes(count, t), nbytes(count, t), root,
			 reduce_why(count, t, op), &c),
		   xs_reduce(c, sbuf, rbuf, count, t, op, root, k));
}

int MPI_Bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm)
{
	COLLECTIVE(PMPI_Bcast(buf, count, t, root, comm),
		   route(comm, XS_BCAST, nbytes(count, t), nbytes(count, t), root,
			 bytes_why(nbytes(count, t)), &c),
		   xs_bcast(c, buf, count, t, root, k));
}

int MPI_Barrier(MPI_Comm comm)
{
	COLLECTIVE(PMPI_Barrier(comm), route(comm, XS_BARRIER, 0, 0, 0, NULL, &c),
		   xs_barrier(c));
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		  int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
	COLLECTIVE(PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm),
		   route_blocks(comm, XS_ALLGATHER, nbytes(rcount, rtype), 0, &c),
		   xs_allgather(c, sbuf, scount, stype, rbuf, rcount, rtype, k));
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
	       int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
	COLLECTIVE(PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm),
		   route_blocks(comm, XS_GATHER,
				rooted_block(comm, root, rcount, rtype, scount, stype),
				root, &c),
		   xs_gather(c, sbuf, scount, stype, rbuf, rcount, rtype, root, k));
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
	COLLECTIVE(PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm),
		   route_blocks(comm, XS_SCATTER,
				rooted_block(comm, root, scount, stype, rcount, rtype),
				root, &c),
		   xs_scatter(c, sbuf, scount, stype, rbuf, rcount, rtype, root, k));
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		 int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
	COLLECTIVE(PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm),
		   route_blocks(comm, XS_ALLTOALL, nbytes(rcount, rtype), 0, &c),
		   xs_alltoall(c, sbuf, scount, stype, rbuf, rcount, rtype, k));
}

/* ---- collectives through the site leaders only --------------------------- */

/* the elements of a call with a block of cnt[r] (cnt NULL: block) elements
 * for each rank of comm; -1 for a negative count, 0 on an intercommunicator
 * (whose counts, which may be the remote group's, are not read) */
static int64_t blocks_count(MPI_Comm comm, const int *cnt, int block)
{
	int64_t n = 0;
	int size, r, c, inter = 0;

	PMPI_Comm_test_inter(comm, &inter);
	if (inter)
		return 0;
	PMPI_Comm_size(comm, &size);
	for (r = 0; r < size; r++) {
		c = cnt ? cnt[r] : block;
		if (c < 0)
			return -1;
		n += c;
	}
	return n;
}

/* the bytes of such a call, for the hand-off */
static uint64_t blocks_bytes(MPI_Comm comm, const int *cnt, int block, MPI_Datatype t)
{
	int64_t n = blocks_count(comm, cnt, block);

	return n > 0 ? (uint64_t)n * nbytes(1, t) : 0;
}

/* why not, for such a call */
static const char *blocks_why(MPI_Comm comm, const int *cnt, int block, MPI_Datatype t)
{
	int64_t n;
	int inter = 0;

	PMPI_Comm_test_inter(comm, &inter);
	if (inter)
		return "intercommunicator";
	n = blocks_count(comm, cnt, block);
	if (n < 0)
		return "a negative count";
	return bytes_why((uint64_t)n * nbytes(1, t));
}

static const char *reduce_scatter_why(MPI_Comm comm, const int *cnt, int block,
				      MPI_Datatype t, MPI_Op op)
{
	const char *why = blocks_why(comm, cnt, block, t);

	return why ? why : op_why(t, op, 0);
}

static const char *order_why(const struct xs_comm *c)
{
	return xs_sites_in_order(c) ? NULL : "the sites' ranks interleaved";
}

/* a fallback of Reduce_scatter(_block), Allgatherv, Scan or Exscan on an
 * intracommunicator, counted with the model; passes k (decide()'s, which
 * set *cp) on */
static int modelled(int k, struct xs_comm *const *cp, enum xs_coll_id coll,
		    const int *cnt, int block, MPI_Datatype t)
{
	const struct xs_comm *c = *cp;
	uint64_t *b;
	int r;

	if (k || !MODELLED(c))
		return k;
	if (coll == XS_SCAN || coll == XS_EXSCAN) {
		xs_model_scan(c->wrank, c->size, c->rank, nbytes(block, t));
		return k;
	}
	b = malloc(sizeof(uint64_t) * (size_t)c->size);
	if (!b)
		return k;
	for (r = 0; r < c->size; r++)
		b[r] = nbytes(cnt ? cnt[r] : block, t);
	if (coll == XS_ALLGATHERV)
		xs_model_allgatherv(c->wrank, c->size, c->rank, b);
	else
		xs_model_reduce_scatter(c->wrank, c->size, c->rank, b);
	free(b);
	return k;
}

/* Reduce_scatter and Reduce_scatter_block: cnt NULL is the _block form */
#define REDUCE_SCATTER(lib, cnt, block)                                       \
	COLLECTIVE(lib,                                                       \
		   modelled(decide(comm, XS_REDUCE_SCATTER, 0,                \
				   blocks_bytes(comm, cnt, block, t),         \
				   reduce_scatter_why(comm, cnt, block, t, op),\
				   NULL, &c),                                 \
			    &c, XS_REDUCE_SCATTER, cnt, block, t),             \
		   xs_reduce_scatter(c, sbuf, rbuf, cnt, block, t, op))

int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
			     MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	REDUCE_SCATTER(PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, t, op, comm),
		       NULL, rcount);
}

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[],
		       MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	REDUCE_SCATTER(PMPI_Reduce_scatter(sbuf, rbuf, rcounts, t, op, comm), rcounts, 0);
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		   const int rcounts[], const int displs[], MPI_Datatype rtype,
		   MPI_Comm comm)
{
	COLLECTIVE(PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm),
		   modelled(decide(comm, XS_ALLGATHERV, 0, blocks_bytes(comm, rcounts, 0, rtype),
				   blocks_why(comm, rcounts, 0, rtype), NULL, &c),
			    &c, XS_ALLGATHERV, rcounts, 0, rtype),
		   xs_allgatherv(c, sbuf, scount, stype, rbuf, rcounts, displs, rtype));
}

/* Scan and Exscan: the op's order is kept */
#define SCAN(lib, coll, exclusive)                                            \
	COLLECTIVE(lib,                                                       \
		   modelled(decide(comm, coll, 0, nbytes(count, t),           \
				   scan_why(count, t, op), order_why, &c),    \
			    &c, coll, NULL, count, t),                        \
		   xs_scan(c, sbuf, rbuf, count, t, op, exclusive))

int MPI_Scan(const void *sbuf, void *rbuf, int count, MPI_Datatype t, MPI_Op op,
	     MPI_Comm comm)
{
	SCAN(PMPI_Scan(sbuf, rbuf, count, t, op, comm), XS_SCAN, 0);
}

int MPI_Exscan(const void *sbuf, void *rbuf, int count, MPI_Datatype t, MPI_Op op,
	       MPI_Comm comm)
{
	SCAN(PMPI_Exscan(sbuf, rbuf, count, t, op, comm), XS_EXSCAN, 1);
}

/* ---- collectives left to the MPI library, counted with the model ---------- */

/*
 * The vector forms that libxsite has no algorithm for, and the nonblocking
 * forms (their traffic is the blocking form's, counted when the call
 * starts): the library's call (lib), then, when it succeeded on an
 * intracommunicator, its traffic with the model (count, with c set), and
 * the fallback noted.
 */
#define LEFT(lib, coll, why, count) do {                                      \
		struct xs_comm *c;                                             \
		int rc;                                                        \
		GUARD(lib);                                                    \
		xs_depth++;                                                    \
		rc = (lib);                                                    \
		if (rc == MPI_SUCCESS) {                                       \
			c = xs_comm_get(comm);                                 \
			if (MODELLED(c)) {                                     \
				count;                                         \
			}                                                      \
			if (c)                                                 \
				log_decision(c, coll, why, 0);                 \
			xs_note_decision(0);                                   \
		}                                                              \
		xs_depth--;                                                    \
		return rc;                                                     \
	} while (0)

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		const int rcounts[], const int displs[], MPI_Datatype rtype, int root,
		MPI_Comm comm)
{
	LEFT(PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm),
	     XS_GATHER, "vector form (MPI_Gatherv)",
	     if (c->rank != root) xs_model_gather(c->wrank, c->size, c->rank, root,
						  nbytes(scount, stype)));
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[],
		 MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
		 int root, MPI_Comm comm)
{
	LEFT(PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm),
	     XS_SCATTER, "vector form (MPI_Scatterv)",
	     if (c->rank == root) {
		     uint64_t *b = xs_counts_bytes(scounts, c->size, stype);

		     if (b)
			     xs_model_scatterv(c->wrank, c->size, c->rank, root, b);
		     free(b);
	     });
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[],
		  MPI_Datatype stype, void *rbuf, const int rcounts[],
		  const int rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
	/* in place, what a rank sends is what it receives */
	LEFT(PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype,
			    comm),
	     XS_ALLTOALL, "vector form (MPI_Alltoallv)",
	     {
		     uint64_t *b = sbuf == MPI_IN_PLACE ?
					   xs_counts_bytes(rcounts, c->size, rtype) :
					   xs_counts_bytes(scounts, c->size, stype);

		     if (b)
			     xs_model_alltoallv(c->wrank, c->size, c->rank, b);
		     free(b);
	     });
}

/* A nonblocking reduction may be site-aware with a predefined op only (the
 * program may free its own op while the call runs, and libxsite combines
 * the sites' partial results at the end), and below XSITE_LARGE_MSG: it has
 * no stream form, and one message of the whole vector across, with the
 * library's own nonblocking reduce and broadcast of it at each site, is
 * slower than the library's reduce-scatter and allgather (README.md). */
static const char *nb_reduce_why(int count, MPI_Datatype t, MPI_Op op)
{
	static const MPI_Op predefined[] = {
		MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND, MPI_BAND,
		MPI_LOR, MPI_BOR, MPI_LXOR, MPI_BXOR, MPI_MAXLOC, MPI_MINLOC,
	};
	const char *why = reduce_why(count, t, op);
	size_t i;

	if (!why && nbytes(count, t) >= (uint64_t)xs_cfg.large_msg)
		return "from XSITE_LARGE_MSG (nonblocking: no streams)";
	for (i = 0; !why && i < sizeof(predefined) / sizeof(predefined[0]); i++)
		if (op == predefined[i])
			return NULL;
	return why ? why : "user-defined op (nonblocking)";
}

int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t, MPI_Op op,
		   MPI_Comm comm, MPI_Request *req)
{
	COLLECTIVE(PMPI_Iallreduce(sbuf, rbuf, count, t, op, comm, req),
		   route(comm, XS_IALLREDUCE, nbytes(count, t), nbytes(count, t), 0,
			 nb_reduce_why(count, t, op), &c),
		   xs_iallreduce(c, sbuf, rbuf, count, t, op, req));
}

int MPI_Ireduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t, MPI_Op op,
		int root, MPI_Comm comm, MPI_Request *req)
{
	/* no site-aware form: with the ranks site by site, the library's
	 * binomial tree crosses the link once on each path to the root already
	 * (README.md, Nonblocking) */
	LEFT(PMPI_Ireduce(sbuf, rbuf, count, t, op, root, comm, req), XS_REDUCE,
	     "nonblocking (MPI_Ireduce)", model(c, XS_REDUCE, nbytes(count, t), root));
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm,
	       MPI_Request *req)
{
	COLLECTIVE(PMPI_Ibcast(buf, count, t, root, comm, req),
		   route(comm, XS_IBCAST, nbytes(count, t), nbytes(count, t), root,
			 bytes_why(nbytes(count, t)), &c),
		   xs_ibcast(c, buf, count, t, root, req));
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
	COLLECTIVE(PMPI_Ibarrier(comm, req), route(comm, XS_IBARRIER, 0, 0, 0, NULL, &c),
		   xs_ibarrier(c, req));
}

int MPI_Iallgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		   int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
	COLLECTIVE(PMPI_Iallgather(sbuf, scount, stype, rbuf, rcount, rtype, comm, req),
		   route_blocks(comm, XS_IALLGATHER, nbytes(rcount, rtype), 0, &c),
		   xs_iallgather(c, sbuf, scount, stype, rbuf, rcount, rtype, k, req));
}

int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
		  int rcount, MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
	LEFT(PMPI_Ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, req),
	     XS_ALLTOALL, "nonblocking (MPI_Ialltoall)",
	     model(c, XS_ALLTOALL, nbytes(rcount, rtype), 0));
}
