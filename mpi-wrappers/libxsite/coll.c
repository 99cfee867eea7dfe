/*
 * libxsite: the site-aware collectives, for a communicator whose ranks sit
 * at exactly two sites (site 0 is the site of rank 0).
 *
 * Each collective is a site-local phase (the MPI library's own collectives
 * on the site-local communicator, with a node level below where it pays),
 * one crossing of the link, and a site-local phase again:
 *  - k = 1 (messages below XSITE_LARGE_MSG): one message each way between
 *    the two site leaders (local rank 0), or between the root and the other
 *    site's leader;
 *  - k > 1 (large messages): the data is cut into k segments that k rank
 *    pairs (stream ranks, spread over the nodes of each site) send at the
 *    same time with nonblocking sends; the site-local phases become
 *    reduce-scatter / scatter before and allgather / gather after.  Large
 *    reductions and broadcasts are pipelined in steps (streamed_reduction,
 *    streamed_bcast); a large Alltoall sends each block straight to its
 *    rank (alltoall_direct).
 * Reductions combine the two sites' partial results in one fixed order
 * (site 0 op site 1) on both sides, so every rank gets the same bits; they
 * are not bitwise those of the MPI library's own algorithm (README.md).
 * Only commutative ops come here.  Data-movement collectives work on packed
 * bytes, so the datatypes of the ranks need only match in type signature.
 * All of xsite's own messages go over a private copy of the communicator and
 * are counted exactly; the site-local PMPI_ collectives are counted with
 * the fallback model (they never cross the link).  What crosses the link
 * goes in messages of at most XSITE_EAGER bytes (xs_cross), which the MPI
 * library sends at once: a larger one would wait for its rendezvous, two
 * one-way latencies of the link more than the data needs.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *const xs_coll_name[XS_NCOLL] = {
	"allreduce", "reduce", "bcast", "barrier",
	"allgather", "gather", "scatter", "alltoall",
	"reduce_scatter", "allgatherv", "scan", "exscan",
	"iallreduce", "ibcast", "ibarrier", "iallgather",
};

#define CHECK(x) do { rc = (x); if (rc != MPI_SUCCESS) goto out; } while (0)

/* ---- helpers ------------------------------------------------------------ */

void xs_tinfo(MPI_Datatype t, struct xs_tinfo *ti)
{
	int ni, na, nd, comb;

	PMPI_Type_size(t, &ti->size);
	PMPI_Type_get_extent(t, &ti->lb, &ti->ext);
	PMPI_Type_get_true_extent(t, &ti->tlb, &ti->text);
	PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
	ti->contig = comb == MPI_COMBINER_NAMED && ti->size == ti->ext &&
		     ti->size == ti->text;
}

/* a buffer for count elements of t (true extent), shifted by the true lb */
void *xs_tmp_typed(int count, const struct xs_tinfo *ti, void **base)
{
	size_t n = count > 0 ? (size_t)ti->text + (size_t)(count - 1) * (size_t)ti->ext : 1;

	*base = malloc(n ? n : 1);
	return *base ? (char *)*base - ti->tlb : NULL;
}

int xs_copy_typed(void *dst, const void *src, int count, MPI_Datatype t,
		  const struct xs_tinfo *ti)
{
	if (!count || dst == src)
		return MPI_SUCCESS;
	if (ti->contig) {
		memcpy((char *)dst + ti->tlb, (const char *)src + ti->tlb,
		       (size_t)count * (size_t)ti->size);
		return MPI_SUCCESS;
	}
	return PMPI_Sendrecv(src, count, t, 0, 0, dst, count, t, 0, 0,
			     MPI_COMM_SELF, MPI_STATUS_IGNORE);
}

static char *xmalloc(size_t n)
{
	return malloc(n ? n : 1);
}

/* segment j of k of total items */
int xs_seg_lo(int total, int k, int j)
{
	return (int)((long long)total * j / k);
}

int xs_seg_len(int total, int k, int j)
{
	return xs_seg_lo(total, k, j + 1) - xs_seg_lo(total, k, j);
}

/* the segment (range) of k that item i falls in */
static int seg_of(int total, int k, int i)
{
	int j;

	for (j = 0; j < k - 1 && i >= xs_seg_lo(total, k, j + 1); j++)
		;
	return j;
}

/* stream rank j of site s (comm rank); k = 1: the site leader */
int xs_stream(const struct xs_comm *c, int s, int k, int j)
{
	return k == 1 ? c->members[s][0] : c->streams[s][j];
}

/* my index among the k stream ranks of my site, or -1 */
int xs_my_stream(const struct xs_comm *c, int k)
{
	int j;

	for (j = 0; j < k; j++)
		if (xs_stream(c, c->me, k, j) == c->rank)
			return j;
	return -1;
}

/* ---- packed images (internal.h) ----------------------------------------- */

int xs_img_in(const void *buf, int count, MPI_Datatype t, MPI_Comm comm,
	      int force_copy, struct xs_img *im)
{
	struct xs_tinfo ti;
	int pos = 0, rc;

	xs_tinfo(t, &ti);
	im->bytes = (size_t)count * (size_t)ti.size;
	im->base = NULL;
	if (ti.contig && !force_copy) {
		im->p = (char *)buf + ti.tlb;
		return MPI_SUCCESS;
	}
	im->p = im->base = xmalloc(im->bytes);
	if (!im->p)
		return MPI_ERR_NO_MEM;
	if (ti.contig) {
		memcpy(im->p, (const char *)buf + ti.tlb, im->bytes);
		return MPI_SUCCESS;
	}
	rc = PMPI_Pack(buf, count, t, im->p, (int)im->bytes, &pos, comm);
	if (rc == MPI_SUCCESS && (size_t)pos != im->bytes)
		rc = MPI_ERR_INTERN; /* not a homogeneous "native" packing */
	return rc;
}

int xs_img_out(void *buf, int count, MPI_Datatype t, struct xs_img *im)
{
	struct xs_tinfo ti;

	xs_tinfo(t, &ti);
	im->bytes = (size_t)count * (size_t)ti.size;
	im->base = NULL;
	if (ti.contig) {
		im->p = (char *)buf + ti.tlb;
		return MPI_SUCCESS;
	}
	im->p = im->base = xmalloc(im->bytes);
	return im->p ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

/* unpack an output image into the user's buffer */
int xs_img_done(struct xs_img *im, void *buf, int count, MPI_Datatype t,
		MPI_Comm comm)
{
	int pos = 0;

	if (!im->base)
		return MPI_SUCCESS;
	return PMPI_Unpack(im->p, (int)im->bytes, &pos, buf, count, t, comm);
}

void xs_img_free(struct xs_img *im)
{
	free(im->base);
	im->base = NULL;
}

/* what a data-movement collective owns while it runs: two packed images,
 * its requests, the blocks of the two sites (x), a staging buffer (y) and a
 * segment layout (cnt, dsp) */
struct work {
	struct xs_img im[2];
	struct xs_reqs q;
	char *x[2], *y;
	int *cnt, *dsp;
};

/* complete the requests still outstanding (only after an error), free
 * everything, and pass rc on */
static int work_end(struct work *w, int rc)
{
	xs_reqs_free(&w->q);
	xs_img_free(&w->im[0]);
	xs_img_free(&w->im[1]);
	free(w->x[0]);
	free(w->x[1]);
	free(w->y);
	free(w->cnt);
	free(w->dsp);
	return rc;
}

#ifdef XSITE_FAULT_INJECTION
/* test builds only (libxsite-fault.so): XSITE_FAULT=<collective> breaks
 * that collective (one bit of its result; a barrier that does not wait),
 * to prove that the tests can fail */
static int faulty(enum xs_coll_id coll)
{
	return xs_fault(xs_coll_name[coll]);
}

static void fault(enum xs_coll_id coll, int holder, void *p, size_t bytes)
{
	/* p is the collective's result, written in full by the caller; the
	 * analyzer gets here with the caller's loop over its c->size ranks
	 * skipped (c->size <= 0, which no communicator has) */
	if (faulty(coll) && holder && bytes) {
		/* NOLINTNEXTLINE(clang-analyzer-core.uninitialized.Assign): see above */
		((unsigned char *)p)[0] ^= 1;
	}
}
#define FAULT(c, coll, holder, p, bytes) fault(coll, holder, p, bytes)
#define FAULTY(coll) faulty(coll)
#else
#define FAULT(c, coll, holder, p, bytes) ((void)0)
#define FAULTY(coll) 0
#endif

/* ---- counted point-to-point on the private communicator ------------------ */

MPI_Request *xs_reqs_add(struct xs_reqs *v)
{
	if (v->n == v->cap) {
		int cap = v->cap ? 2 * v->cap : 8;
		MPI_Request *r = v->cap > INT_MAX / 2 ? NULL :
			realloc(v->r, sizeof(MPI_Request) * (size_t)cap);

		if (!r)
			return NULL;
		v->r = r;
		v->cap = cap;
	}
	v->r[v->n] = MPI_REQUEST_NULL;
	return &v->r[v->n++];
}

int xs_reqs_wait(struct xs_reqs *v)
{
	int n = v->n;

	v->n = 0;
	return n ? PMPI_Waitall(n, v->r, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
}

void xs_reqs_free(struct xs_reqs *v)
{
	xs_reqs_wait(v);
	free(v->r);
	v->r = NULL;
	v->cap = 0;
}

/* a message inside a site, in a new slot of v */
static int isend_to(const struct xs_comm *c, const void *buf, int count,
		    MPI_Datatype t, int dest, int tag, struct xs_reqs *v)
{
	MPI_Request *r = xs_reqs_add(v);
	int size;

	if (!r)
		return MPI_ERR_NO_MEM;
	PMPI_Type_size(t, &size);
	xs_count(c->wrank[dest], (uint64_t)count * (uint64_t)size, 1);
	return PMPI_Isend(buf, count, t, dest, tag, c->priv, r);
}

static int irecv_from(const struct xs_comm *c, void *buf, int count,
		      MPI_Datatype t, int src, int tag, struct xs_reqs *v)
{
	MPI_Request *r = xs_reqs_add(v);

	if (!r)
		return MPI_ERR_NO_MEM;
	return PMPI_Irecv(buf, count, t, src, tag, c->priv, r);
}

/* items of size bytes in one message across: XSITE_EAGER bytes' worth, at
 * least one (XSITE_EAGER=0: no limit) */
static int eager_elems(int size)
{
	long e;

	if (xs_cfg.eager <= 0 || size <= 0)
		return INT_MAX;
	e = xs_cfg.eager / size;
	return e < 1 ? 1 : e > INT_MAX ? INT_MAX : (int)e;
}

/* the messages in which p items cross, pe a message */
static int eager_msgs(int p, int pe)
{
	return p <= pe ? 1 : (int)(((long long)p + pe - 1) / pe);
}

int xs_cross(const struct xs_comm *c, int send, const void *buf, int count,
	     MPI_Datatype t, int peer, int tag, struct xs_reqs *v)
{
	MPI_Aint lb, ext;
	int size, pe, n, i, e, rc = MPI_SUCCESS;

	PMPI_Type_size(t, &size);
	PMPI_Type_get_extent(t, &lb, &ext);
	pe = eager_elems(size);
	n = eager_msgs(count, pe);
	for (i = 0; i < n && rc == MPI_SUCCESS; i++) {
		const char *at = (const char *)buf + (MPI_Aint)i * pe * ext;

		e = i < n - 1 ? pe : count - i * pe;
		rc = send ? isend_to(c, at, e, t, peer, tag, v)
			  : irecv_from(c, (void *)at, e, t, peer, tag, v);
	}
	return rc;
}

int xs_cross_wait(const struct xs_comm *c, int send, const void *buf, int count,
		  MPI_Datatype t, int peer, int tag)
{
	struct xs_reqs v = { NULL, 0, 0 };
	int rc = xs_cross(c, send, buf, count, t, peer, tag, &v);

	if (rc == MPI_SUCCESS)
		rc = xs_reqs_wait(&v);
	xs_reqs_free(&v);
	return rc;
}

/* sn items of t to peer across the link and rn from it, both ways at once */
static int swap(const struct xs_comm *c, const void *sbuf, int sn, void *rbuf,
		int rn, MPI_Datatype t, int peer)
{
	struct xs_reqs v = { NULL, 0, 0 };
	int rc, i, nr;

	rc = xs_cross(c, 0, rbuf, rn, t, peer, TAG_CROSS, &v);
	nr = v.n;
	if (rc == MPI_SUCCESS)
		rc = xs_cross(c, 1, sbuf, sn, t, peer, TAG_CROSS, &v);
	if (rc == MPI_SUCCESS)
		rc = xs_reqs_wait(&v);
	else /* the receives would wait for sends that may never come */
		for (i = 0; i < nr; i++)
			if (v.r[i] != MPI_REQUEST_NULL)
				PMPI_Cancel(&v.r[i]);
	xs_reqs_free(&v);
	return rc;
}

/* ---- site-local phases: PMPI_ collectives, counted with the model -------- */

struct sub {
	MPI_Comm comm;
	int size, rank;
	const int *w;
};

static struct sub sub_local(const struct xs_comm *c)
{
	struct sub s = { c->local, c->n[c->me], c->lrank[c->rank], c->local_w };

	return s;
}

static struct sub sub_node(const struct xs_comm *c)
{
	struct sub s = { c->node, c->node_size, c->node_rank, c->node_w };

	return s;
}

static struct sub sub_nl(const struct xs_comm *c)
{
	struct sub s = { c->nodeleaders, c->nl_size, c->nl_rank, c->nl_w };

	return s;
}

static uint64_t nbytes(int count, MPI_Datatype t)
{
	int size;

	PMPI_Type_size(t, &size);
	return (uint64_t)count * (uint64_t)size;
}

/* sbuf MPI_IN_PLACE on any rank: that rank's data is in rbuf */
static int sub_reduce(const struct sub *s, const void *sbuf, void *rbuf,
		      int count, MPI_Datatype t, MPI_Op op, int root)
{
	xs_model_reduce(s->w, s->size, s->rank, root, nbytes(count, t));
	if (s->rank == root)
		return PMPI_Reduce(sbuf, rbuf, count, t, op, root, s->comm);
	return PMPI_Reduce(sbuf == MPI_IN_PLACE ? rbuf : sbuf, NULL, count, t,
			   op, root, s->comm);
}

static int sub_bcast(const struct sub *s, void *buf, int count, MPI_Datatype t,
		     int root)
{
	xs_model_bcast(s->w, s->size, s->rank, root, nbytes(count, t));
	return PMPI_Bcast(buf, count, t, root, s->comm);
}

uint64_t *xs_counts_bytes(const int *cnt, int n, MPI_Datatype t)
{
	uint64_t *b = malloc(sizeof(uint64_t) * (size_t)n);
	int i;

	if (b)
		for (i = 0; i < n; i++)
			b[i] = nbytes(cnt[i], t);
	return b;
}

static int sub_reduce_scatter(const struct sub *s, const void *sbuf, void *rbuf,
			      const int *cnt, MPI_Datatype t, MPI_Op op)
{
	uint64_t *b = xs_counts_bytes(cnt, s->size, t);

	if (b)
		xs_model_scatterv(s->w, s->size, s->rank, s->rank, b);
	free(b);
	return PMPI_Reduce_scatter(sbuf, rbuf, cnt, t, op, s->comm);
}

/* cnt[i] items of t at dsp[i] of the root's sbuf to rank i's rbuf (rcount
 * items there, or MPI_IN_PLACE at the root) */
static int sub_scatterv(const struct sub *s, const void *sbuf, const int *cnt,
			const int *dsp, void *rbuf, int rcount, MPI_Datatype t, int root)
{
	uint64_t *b = xs_counts_bytes(cnt, s->size, t);

	if (b)
		xs_model_scatterv(s->w, s->size, s->rank, root, b);
	free(b);
	return PMPI_Scatterv(sbuf, cnt, dsp, t, rbuf, rcount, t, root, s->comm);
}

/* cnt[i] items of t from rank i to dsp[i] of every rank's buf: mine from
 * my place in buf, or (own not NULL) the n items at own */
static int sub_allgatherv(const struct sub *s, const void *own, int n, void *buf,
			  const int *cnt, const int *dsp, MPI_Datatype t)
{
	uint64_t *b = xs_counts_bytes(cnt, s->size, t);

	if (b)
		xs_model_allgatherv(s->w, s->size, s->rank, b);
	free(b);
	if (own)
		return PMPI_Allgatherv(own, n, t, buf, cnt, dsp, t, s->comm);
	return PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, cnt, dsp,
			       t, s->comm);
}

/* to the site leader (local rank 0), through the node leaders if it pays;
 * rbuf must be valid on every rank (the node leaders collect there) */
static int local_reduce(const struct xs_comm *c, const void *sbuf, void *rbuf,
			int count, MPI_Datatype t, MPI_Op op)
{
	struct sub L = sub_local(c), N = sub_node(c), NL = sub_nl(c);
	int rc;

	if (!c->node_level)
		return sub_reduce(&L, sbuf, rbuf, count, t, op, 0);
	rc = sub_reduce(&N, sbuf, rbuf, count, t, op, 0);
	if (rc == MPI_SUCCESS && c->node_rank == 0)
		rc = sub_reduce(&NL, MPI_IN_PLACE, rbuf, count, t, op, 0);
	return rc;
}

/* from the site leader, through the node leaders if it pays */
static int local_bcast(const struct xs_comm *c, void *buf, int count,
		       MPI_Datatype t)
{
	struct sub L = sub_local(c), N = sub_node(c), NL = sub_nl(c);
	int rc = MPI_SUCCESS;

	if (!c->node_level)
		return sub_bcast(&L, buf, count, t, 0);
	if (c->node_rank == 0)
		rc = sub_bcast(&NL, buf, count, t, 0);
	if (rc == MPI_SUCCESS)
		rc = sub_bcast(&N, buf, count, t, 0);
	return rc;
}

/* P0 op P1 (site 0's partial first) into mine, the same on both sides */
int xs_combine(int mysite, void *mine, void *theirs, int count, MPI_Datatype t,
	       MPI_Op op, const struct xs_tinfo *ti)
{
	int rc;

	if (mysite == 1)
		return PMPI_Reduce_local(theirs, mine, count, t, op);
	rc = PMPI_Reduce_local(mine, theirs, count, t, op);
	if (rc == MPI_SUCCESS)
		rc = xs_copy_typed(mine, theirs, count, t, ti);
	return rc;
}

/* counts and displacements (in elements) of k segments of total, placed at
 * the stream ranks of my site, for the site-local collectives: into cnt and
 * dsp (one entry per local rank, zero elsewhere), or newly allocated */
static void seg_fill(const struct xs_comm *c, int total, int k, int *cnt, int *dsp)
{
	int j;

	for (j = 0; j < k; j++) {
		int l = c->lrank[xs_stream(c, c->me, k, j)];

		cnt[l] = xs_seg_len(total, k, j);
		dsp[l] = xs_seg_lo(total, k, j);
	}
}

int xs_seg_layout(const struct xs_comm *c, int total, int k, int **cnt,
		  int **dsp)
{
	int n = c->n[c->me];

	*cnt = calloc((size_t)n, sizeof(int));
	*dsp = calloc((size_t)n, sizeof(int));
	if (!*cnt || !*dsp)
		return MPI_ERR_NO_MEM;
	seg_fill(c, total, k, *cnt, *dsp);
	return MPI_SUCCESS;
}

/* ---- the streamed reduction of Allreduce and Reduce (k > 1) ------------- */

/*
 * The vector is cut into m pipeline steps (contiguous ranges, about
 * XSITE_PIPELINE bytes per stream pair each, at most PIPELINE_MAX_STEPS),
 * each step into k pieces, piece j for stream pair j.  Phase 1: step by
 * step, reduce-scatter the step to the stream ranks and post its crossing
 * (nonblocking), so that the link carries step q while the site reduces
 * step q + 1.  Phase 2: step by step, wait for the crossing, combine the two
 * sites' partials (site 0 op site 1) and deliver, while the later steps are
 * still on the link: an allgatherv at both sites (root < 0: Allreduce), or a
 * gatherv to the root (Reduce: only the root's site receives; the other
 * site's stream ranks only send).  A stream's piece of a step crosses in
 * messages of at most XSITE_EAGER bytes (xs_cross).  Every input of m and
 * of the messages is the same on every rank.  in is the
 * input of every rank (the caller resolves MPI_IN_PLACE); steps are
 * disjoint, so in may be rbuf.
 */
#define PIPELINE_MAX_STEPS 1024

static int pipeline_steps(int count, int size, int k)
{
	long long per = (long long)xs_cfg.pipeline * k;
	long long m = per > 0 ? ((long long)count * size + per - 1) / per : 1;

	if (m > PIPELINE_MAX_STEPS)
		m = PIPELINE_MAX_STEPS;
	if (m > count / k)
		m = count / k;
	return m < 1 ? 1 : (int)m;
}

static int streamed_reduction(struct xs_comm *c, const void *in, void *rbuf,
			      int count, MPI_Datatype t, MPI_Op op, int root,
			      int k)
{
	struct sub L = sub_local(c);
	struct xs_tinfo ti;
	struct xs_reqs v = { NULL, 0, 0 };
	void *b1 = NULL, *b2 = NULL;
	char *mine, *theirs;
	int *cnt = NULL, *dsp = NULL, *posted = NULL, rc, q, m, j, p, lo, off, total;
	int done = 0, all = root < 0, amroot = c->rank == root;
	int rs = all ? c->me : c->site_of[root], sender = !all && c->me != rs, peer;

	xs_tinfo(t, &ti);
	m = pipeline_steps(count, ti.size, k);
	j = xs_my_stream(c, k);
	peer = j >= 0 ? xs_stream(c, 1 - c->me, k, j) : MPI_PROC_NULL;
	for (total = 0, q = 0; j >= 0 && q < m; q++)
		total += xs_seg_len(xs_seg_len(count, m, q), k, j);
	mine = xs_tmp_typed(total, &ti, &b1);
	theirs = xs_tmp_typed(sender ? 0 : total, &ti, &b2);
	posted = calloc((size_t)m, sizeof(int)); /* the requests of steps 0..q */
	cnt = calloc((size_t)L.size, sizeof(int));
	dsp = calloc((size_t)L.size, sizeof(int));
	if (!mine || !theirs || !posted || !cnt || !dsp)
		CHECK(MPI_ERR_NO_MEM);

	for (q = 0, off = 0; q < m; q++, off += p) {
		lo = xs_seg_lo(count, m, q);
		seg_fill(c, xs_seg_len(count, m, q), k, cnt, dsp);
		p = j >= 0 ? cnt[L.rank] : 0;
		CHECK(sub_reduce_scatter(&L, (const char *)in + (MPI_Aint)lo * ti.ext,
					 mine + (MPI_Aint)off * ti.ext, cnt, t, op));
		if (j >= 0 && !sender)
			CHECK(xs_cross(c, 0, theirs + (MPI_Aint)off * ti.ext, p, t, peer,
				       TAG_CROSS, &v));
		if (j >= 0 && (all || sender))
			CHECK(xs_cross(c, 1, mine + (MPI_Aint)off * ti.ext, p, t, peer,
				       TAG_CROSS, &v));
		posted[q] = v.n;
	}

	for (q = 0, off = 0; q < m; q++, off += p) {
		char *mq = mine + (MPI_Aint)off * ti.ext;

		lo = xs_seg_lo(count, m, q);
		seg_fill(c, xs_seg_len(count, m, q), k, cnt, dsp);
		p = j >= 0 ? cnt[L.rank] : 0;
		if (j >= 0) {
			CHECK(PMPI_Waitall(posted[q] - done, &v.r[done], MPI_STATUSES_IGNORE));
			done = posted[q];
			if (!sender)
				CHECK(xs_combine(rs, mq, theirs + (MPI_Aint)off * ti.ext, p, t,
					      op, &ti));
		}
		if (all) {
			if (j >= 0)
				CHECK(xs_copy_typed((char *)rbuf + (MPI_Aint)(lo + dsp[L.rank]) * ti.ext,
						 mq, p, t, &ti));
			CHECK(sub_allgatherv(&L, NULL, 0, (char *)rbuf + (MPI_Aint)lo * ti.ext, cnt,
					     dsp, t));
		} else if (!sender) {
			xs_model_gather(L.w, L.size, L.rank, c->lrank[root], nbytes(p, t));
			CHECK(PMPI_Gatherv(mq, p, t,
					   amroot ? (char *)rbuf + (MPI_Aint)lo * ti.ext : NULL,
					   cnt, dsp, t, c->lrank[root], c->local));
		}
	}
out:
	xs_reqs_free(&v); /* after an error: the requests still outstanding */
	free(b1);
	free(b2);
	free(posted);
	free(cnt);
	free(dsp);
	return rc;
}

/* ---- Allreduce ---------------------------------------------------------- */

int xs_allreduce(struct xs_comm *c, const void *sbuf, void *rbuf, int count,
		 MPI_Datatype t, MPI_Op op, int k)
{
	struct sub L = sub_local(c);
	struct xs_tinfo ti;
	void *b1 = NULL;
	int other = 1 - c->me, rc;

	xs_tinfo(t, &ti);
	if (k == 1) {
		CHECK(local_reduce(c, sbuf, rbuf, count, t, op));
		if (L.rank == 0) {
			void *theirs = xs_tmp_typed(count, &ti, &b1);

			if (!theirs)
				CHECK(MPI_ERR_NO_MEM);
			CHECK(swap(c, rbuf, count, theirs, count, t, c->members[other][0]));
			CHECK(xs_combine(c->me, rbuf, theirs, count, t, op, &ti));
		}
		CHECK(local_bcast(c, rbuf, count, t));
	} else {
		CHECK(streamed_reduction(c, sbuf == MPI_IN_PLACE ? rbuf : sbuf, rbuf,
					 count, t, op, -1, k));
	}
	FAULT(c, XS_ALLREDUCE, c->rank == c->size - 1, (char *)rbuf + ti.tlb,
	      (size_t)count * (size_t)ti.size);
out:
	free(b1);
	return rc;
}

/* ---- Reduce ------------------------------------------------------------- */

int xs_reduce(struct xs_comm *c, const void *sbuf, void *rbuf, int count,
	      MPI_Datatype t, MPI_Op op, int root, int k)
{
	struct sub L = sub_local(c);
	struct xs_tinfo ti;
	void *b1 = NULL, *b2 = NULL;
	int rc, rs = c->site_of[root], other = 1 - rs, amroot = c->rank == root;

	xs_tinfo(t, &ti);
	if (k == 1) {
		/* the root collects in its recvbuf, every other rank in a temp */
		void *w = amroot ? rbuf : xs_tmp_typed(count, &ti, &b1);

		if (!w)
			CHECK(MPI_ERR_NO_MEM);
		if (c->me == rs && c->lrank[root] != 0) {
			CHECK(sub_reduce(&L, sbuf, w, count, t, op, c->lrank[root]));
		} else {
			CHECK(local_reduce(c, sbuf, w, count, t, op));
		}
		if (c->me != rs && L.rank == 0)
			CHECK(xs_cross_wait(c, 1, w, count, t, root, TAG_CROSS));
		if (amroot) {
			void *theirs = xs_tmp_typed(count, &ti, &b2);

			if (!theirs)
				CHECK(MPI_ERR_NO_MEM);
			CHECK(xs_cross_wait(c, 0, theirs, count, t, c->members[other][0],
					    TAG_CROSS));
			CHECK(xs_combine(rs, rbuf, theirs, count, t, op, &ti));
		}
	} else {
		CHECK(streamed_reduction(c, amroot && sbuf == MPI_IN_PLACE ? rbuf : sbuf,
					 rbuf, count, t, op, root, k));
	}
	FAULT(c, XS_REDUCE, amroot, (char *)rbuf + ti.tlb,
	      (size_t)count * (size_t)ti.size);
out:
	free(b1);
	free(b2);
	return rc;
}

/* ---- Bcast -------------------------------------------------------------- */

/*
 * k > 1: in pipeline steps as the streamed reduction, on the n bytes of the
 * packed image p.  Phase 1, step by step: at the root's site, the root
 * scatters the step to the stream ranks, each of which posts its piece's
 * crossing (so that the link carries step q while the site scatters step
 * q + 1); at the other site the stream ranks post their receives.  Phase 2,
 * step by step: each site allgathers the step from its stream ranks, the
 * other site as soon as the step's pieces are in, while the later steps
 * are still on the link.  The sends are left in v for the caller to wait
 * for.
 */
static int streamed_bcast(struct xs_comm *c, char *p, int n, int root, int k,
			  struct xs_reqs *v)
{
	struct sub L = sub_local(c);
	int *cnt = NULL, *dsp = NULL, *posted = NULL, rc, q;
	int rs = c->site_of[root], amroot = c->rank == root, j = xs_my_stream(c, k);
	int m = pipeline_steps(n, 1, k), done = 0, peer;

	peer = j < 0 ? MPI_PROC_NULL : xs_stream(c, 1 - c->me, k, j);
	posted = calloc((size_t)m, sizeof(int)); /* the requests of steps 0..q */
	cnt = calloc((size_t)L.size, sizeof(int));
	dsp = calloc((size_t)L.size, sizeof(int));
	if (!posted || !cnt || !dsp)
		CHECK(MPI_ERR_NO_MEM);
	for (q = 0; q < m; q++) {
		char *at = p + xs_seg_lo(n, m, q);

		seg_fill(c, xs_seg_len(n, m, q), k, cnt, dsp);
		if (c->me == rs)
			CHECK(sub_scatterv(&L, at, cnt, dsp,
					   amroot ? MPI_IN_PLACE : at + (j >= 0 ? dsp[L.rank] : 0),
					   j >= 0 ? cnt[L.rank] : 0, MPI_BYTE, c->lrank[root]));
		if (j >= 0)
			CHECK(xs_cross(c, c->me == rs, at + dsp[L.rank], cnt[L.rank], MPI_BYTE,
				       peer, TAG_CROSS, v));
		posted[q] = v->n;
	}
	for (q = 0; q < m; q++) {
		seg_fill(c, xs_seg_len(n, m, q), k, cnt, dsp);
		if (c->me != rs) {
			CHECK(PMPI_Waitall(posted[q] - done, &v->r[done], MPI_STATUSES_IGNORE));
			done = posted[q];
		}
		CHECK(sub_allgatherv(&L, NULL, 0, p + xs_seg_lo(n, m, q), cnt, dsp, MPI_BYTE));
	}
out:
	free(posted);
	free(cnt);
	free(dsp);
	return rc;
}

int xs_bcast(struct xs_comm *c, void *buf, int count, MPI_Datatype t, int root,
	     int k)
{
	struct sub L = sub_local(c);
	struct xs_img im = { NULL, NULL, 0 };
	struct xs_reqs v = { NULL, 0, 0 };
	int rc, n;
	int rs = c->site_of[root], other = 1 - rs, amroot = c->rank == root;

	CHECK(amroot ? xs_img_in(buf, count, t, c->comm, 0, &im)
		     : xs_img_out(buf, count, t, &im));
	n = (int)im.bytes;
	if (k == 1) {
		if (amroot)
			CHECK(xs_cross(c, 1, im.p, n, MPI_BYTE, c->members[other][0],
				       TAG_CROSS, &v));
		if (c->me != rs && L.rank == 0)
			CHECK(xs_cross_wait(c, 0, im.p, n, MPI_BYTE, root, TAG_CROSS));
		if (c->me == rs && c->lrank[root] != 0)
			CHECK(sub_bcast(&L, im.p, n, MPI_BYTE, c->lrank[root]));
		else
			CHECK(local_bcast(c, im.p, n, MPI_BYTE));
	} else {
		CHECK(streamed_bcast(c, im.p, n, root, k, &v));
	}
	CHECK(xs_reqs_wait(&v));
	FAULT(c, XS_BCAST, !amroot && c->rank == c->size - 1, im.p, im.bytes);
	if (!amroot)
		CHECK(xs_img_done(&im, buf, count, t, c->comm));
out:
	xs_reqs_free(&v);
	xs_img_free(&im);
	return rc;
}

/* ---- Barrier ------------------------------------------------------------ */

int xs_barrier(struct xs_comm *c)
{
	struct sub L = sub_local(c);
	char none;
	int rc;

	xs_model_barrier(L.w, L.size, L.rank);
	CHECK(PMPI_Barrier(c->local));
	if (FAULTY(XS_BARRIER))
		goto out;
	if (L.rank == 0)
		CHECK(swap(c, &none, 0, &none, 0, MPI_BYTE, c->members[1 - c->me][0]));
	xs_model_barrier(L.w, L.size, L.rank);
	CHECK(PMPI_Barrier(c->local));
out:
	return rc;
}

/* ---- Allgather ---------------------------------------------------------- */

/* my block, packed: from sbuf, or (MPI_IN_PLACE) from my place in rbuf */
int xs_own_block(const struct xs_comm *c, const void *sbuf, int scount,
		 MPI_Datatype stype, const void *rbuf, int rcount,
		 MPI_Datatype rtype, int pos, struct xs_img *im)
{
	MPI_Aint lb, ext;

	if (sbuf != MPI_IN_PLACE)
		return xs_img_in(sbuf, scount, stype, c->comm, 0, im);
	PMPI_Type_get_extent(rtype, &lb, &ext);
	return xs_img_in((const char *)rbuf + (MPI_Aint)pos * rcount * ext, rcount,
			 rtype, c->comm, 0, im);
}

int xs_allgather(struct xs_comm *c, const void *sbuf, int scount,
		 MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
		 int k)
{
	struct sub L = sub_local(c);
	struct work w = { .y = NULL }; /* nothing owned yet */
	struct xs_img *own = &w.im[0], *out = &w.im[1];
	char **x = w.x;
	int rc, r, j, me = c->me, other = 1 - me;
	size_t b;

	CHECK(xs_own_block(c, sbuf, scount, stype, rbuf, rcount, rtype, c->rank, own));
	b = own->bytes;
	x[0] = xmalloc((size_t)c->n[0] * b);
	x[1] = xmalloc((size_t)c->n[1] * b);
	if (!x[0] || !x[1])
		CHECK(MPI_ERR_NO_MEM);

	/* my site's blocks, everywhere at my site */
	xs_model_allgather(L.w, L.size, L.rank, b);
	CHECK(PMPI_Allgather(own->p, (int)b, MPI_BYTE, x[me], (int)b, MPI_BYTE,
			     c->local));
	/* across: segment j of each site's blocks between stream pair j */
	j = xs_my_stream(c, k);
	if (j >= 0) {
		int ms = (int)((size_t)c->n[me] * b), os = (int)((size_t)c->n[other] * b);
		int peer = xs_stream(c, other, k, j);

		CHECK(swap(c, x[me] + xs_seg_lo(ms, k, j), xs_seg_len(ms, k, j),
			   x[other] + xs_seg_lo(os, k, j), xs_seg_len(os, k, j), MPI_BYTE,
			   peer));
	}
	/* the other site's blocks, everywhere at my site */
	if (k == 1) {
		CHECK(local_bcast(c, x[other], (int)((size_t)c->n[other] * b), MPI_BYTE));
	} else {
		CHECK(xs_seg_layout(c, (int)((size_t)c->n[other] * b), k, &w.cnt, &w.dsp));
		CHECK(sub_allgatherv(&L, NULL, 0, x[other], w.cnt, w.dsp, MPI_BYTE));
	}
	/* in comm rank order */
	CHECK(xs_img_out(rbuf, c->size * rcount, rtype, out));
	for (r = 0; r < c->size; r++)
		memcpy(out->p + (size_t)r * b,
		       x[c->site_of[r]] + (size_t)c->lrank[r] * b, b);
	FAULT(c, XS_ALLGATHER, c->rank == c->size - 1, out->p, out->bytes);
	CHECK(xs_img_done(out, rbuf, c->size * rcount, rtype, c->comm));
out:
	return work_end(&w, rc);
}

/* ---- Gather ------------------------------------------------------------- */

int xs_gather(struct xs_comm *c, const void *sbuf, int scount,
	      MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
	      int root, int k)
{
	struct sub L = sub_local(c);
	struct work w = { .y = NULL }; /* nothing owned yet */
	struct xs_img *own = &w.im[0], *out = &w.im[1];
	char **x = w.x;
	int rc, r, j, l, rs = c->site_of[root], other = 1 - rs;
	int amroot = c->rank == root, lr = L.rank;
	size_t b;

	CHECK(xs_own_block(c, sbuf, scount, stype, rbuf, rcount, rtype,
			   root, own));
	b = own->bytes;

	if (c->me == rs) {
		if (amroot) {
			x[0] = xmalloc((size_t)c->n[0] * b);
			x[1] = xmalloc((size_t)c->n[1] * b);
			if (!x[0] || !x[1])
				CHECK(MPI_ERR_NO_MEM);
			/* the other site's blocks: k messages, one per stream */
			for (j = 0; j < k; j++) {
				int lo = xs_seg_lo(c->n[other], k, j);

				CHECK(xs_cross(c, 0, x[other] + (size_t)lo * b,
					       (int)((size_t)xs_seg_len(c->n[other], k, j) * b),
					       MPI_BYTE, xs_stream(c, other, k, j), TAG_CROSS,
					       &w.q));
			}
		}
		xs_model_gather(L.w, L.size, lr, c->lrank[root], b);
		CHECK(PMPI_Gather(own->p, (int)b, MPI_BYTE, x[rs], (int)b, MPI_BYTE,
				  c->lrank[root], c->local));
		if (amroot) {
			CHECK(xs_reqs_wait(&w.q));
			CHECK(xs_img_out(rbuf, c->size * rcount, rtype, out));
			for (r = 0; r < c->size; r++)
				memcpy(out->p + (size_t)r * b,
				       x[c->site_of[r]] + (size_t)c->lrank[r] * b, b);
			FAULT(c, XS_GATHER, 1, out->p, out->bytes);
			CHECK(xs_img_done(out, rbuf, c->size * rcount, rtype, c->comm));
		}
	} else if (k == 1) {
		/* gather at the leader, one message to the root */
		if (lr == 0 && !(w.y = xmalloc((size_t)c->n[c->me] * b)))
			CHECK(MPI_ERR_NO_MEM);
		xs_model_gather(L.w, L.size, lr, 0, b);
		CHECK(PMPI_Gather(own->p, (int)b, MPI_BYTE, w.y, (int)b, MPI_BYTE, 0,
				  c->local));
		if (lr == 0)
			CHECK(xs_cross_wait(c, 1, w.y, (int)((size_t)c->n[c->me] * b),
					    MPI_BYTE, root, TAG_CROSS));
	} else {
		/* stream j collects the blocks of local ranks in range j and
		 * sends them to the root */
		int n = c->n[c->me], mj = xs_my_stream(c, k), sj = seg_of(n, k, lr);

		if (mj >= 0) {
			int lo = xs_seg_lo(n, k, mj), len = xs_seg_len(n, k, mj);

			if (!(w.y = xmalloc((size_t)len * b)))
				CHECK(MPI_ERR_NO_MEM);
			for (l = lo; l < lo + len; l++)
				if (l == lr)
					memcpy(w.y + (size_t)(l - lo) * b, own->p, b);
				else
					CHECK(irecv_from(c, w.y + (size_t)(l - lo) * b, (int)b,
							 MPI_BYTE, c->members[c->me][l],
							 TAG_TO_STREAM, &w.q));
		}
		if (xs_stream(c, c->me, k, sj) != c->rank)
			CHECK(isend_to(c, own->p, (int)b, MPI_BYTE, xs_stream(c, c->me, k, sj),
				       TAG_TO_STREAM, &w.q));
		CHECK(xs_reqs_wait(&w.q));
		if (mj >= 0)
			CHECK(xs_cross_wait(c, 1, w.y, (int)((size_t)xs_seg_len(n, k, mj) * b),
					    MPI_BYTE, root, TAG_CROSS));
	}
out:
	return work_end(&w, rc);
}

/* ---- Scatter ------------------------------------------------------------ */

int xs_scatter(struct xs_comm *c, const void *sbuf, int scount,
	       MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
	       int root, int k)
{
	struct sub L = sub_local(c);
	struct work w = { .y = NULL }; /* nothing owned yet */
	struct xs_img *in = &w.im[0], *mine = &w.im[1];
	char **x = w.x;
	int rc, r, j, l, rs = c->site_of[root], other = 1 - rs;
	int amroot = c->rank == root, lr = L.rank, inplace;
	size_t b;

	/* rs is the root's site, so the root (the one rank that may be in
	 * place, with no image of its own) never runs the other site's part */
	if (amroot && c->me != rs)
		return MPI_ERR_INTERN;
	inplace = amroot && rbuf == MPI_IN_PLACE;
	if (amroot) {
		CHECK(xs_img_in(sbuf, c->size * scount, stype, c->comm, 0, in));
		b = in->bytes / (size_t)c->size;
	} else {
		b = nbytes(rcount, rtype);
	}
	if (!inplace)
		CHECK(xs_img_out(rbuf, rcount, rtype, mine));

	if (amroot) {
		/* blocks in site-local order; the other site's go out first */
		x[0] = xmalloc((size_t)c->n[0] * b);
		x[1] = xmalloc((size_t)c->n[1] * b);
		if (!x[0] || !x[1])
			CHECK(MPI_ERR_NO_MEM);
		for (r = 0; r < c->size; r++)
			memcpy(x[c->site_of[r]] + (size_t)c->lrank[r] * b,
			       in->p + (size_t)r * b, b);
		for (j = 0; j < k; j++)
			CHECK(xs_cross(c, 1, x[other] + (size_t)xs_seg_lo(c->n[other], k, j) * b,
				       (int)((size_t)xs_seg_len(c->n[other], k, j) * b),
				       MPI_BYTE, xs_stream(c, other, k, j), TAG_CROSS, &w.q));
	}
	if (c->me == rs) {
		xs_model_scatter(L.w, L.size, lr, c->lrank[root], b);
		CHECK(PMPI_Scatter(x[rs], (int)b, MPI_BYTE,
				   inplace ? MPI_IN_PLACE : mine->p, (int)b, MPI_BYTE,
				   c->lrank[root], c->local));
	} else if (k == 1) {
		if (lr == 0) {
			if (!(w.y = xmalloc((size_t)c->n[c->me] * b)))
				CHECK(MPI_ERR_NO_MEM);
			CHECK(xs_cross_wait(c, 0, w.y, (int)((size_t)c->n[c->me] * b),
					    MPI_BYTE, root, TAG_CROSS));
		}
		xs_model_scatter(L.w, L.size, lr, 0, b);
		CHECK(PMPI_Scatter(w.y, (int)b, MPI_BYTE, mine->p, (int)b, MPI_BYTE, 0,
				   c->local));
	} else {
		/* stream j receives the blocks of local ranks in range j from the
		 * root and hands them out */
		int n = c->n[c->me], mj = xs_my_stream(c, k), sj = seg_of(n, k, lr);

		if (xs_stream(c, c->me, k, sj) != c->rank)
			CHECK(irecv_from(c, mine->p, (int)b, MPI_BYTE, xs_stream(c, c->me, k, sj),
					 TAG_FROM_STREAM, &w.q));
		if (mj >= 0) {
			int lo = xs_seg_lo(n, k, mj), len = xs_seg_len(n, k, mj);

			if (!(w.y = xmalloc((size_t)len * b)))
				CHECK(MPI_ERR_NO_MEM);
			CHECK(xs_cross_wait(c, 0, w.y, (int)((size_t)len * b), MPI_BYTE, root,
					    TAG_CROSS));
			for (l = lo; l < lo + len; l++)
				if (l == lr)
					memcpy(mine->p, w.y + (size_t)(l - lo) * b, b);
				else
					CHECK(isend_to(c, w.y + (size_t)(l - lo) * b, (int)b,
						       MPI_BYTE, c->members[c->me][l],
						       TAG_FROM_STREAM, &w.q));
		}
	}
	CHECK(xs_reqs_wait(&w.q));
	if (!inplace) {
		FAULT(c, XS_SCATTER, c->rank == c->size - 1, mine->p, mine->bytes);
		CHECK(xs_img_done(mine, rbuf, rcount, rtype, c->comm));
	}
out:
	return work_end(&w, rc);
}

/* ---- Alltoall ----------------------------------------------------------- */

/* the blocks between ranks of my site: the MPI library's Alltoall on the
 * site communicator (in and out in comm rank order, b bytes a block) */
static int alltoall_local(const struct xs_comm *c, const char *in, char *out,
			  size_t b)
{
	struct sub L = sub_local(c);
	int l, rc, nm = c->n[c->me];
	char *sl = xmalloc((size_t)nm * b), *rl = xmalloc((size_t)nm * b);

	if (!sl || !rl)
		CHECK(MPI_ERR_NO_MEM);
	for (l = 0; l < nm; l++)
		memcpy(sl + (size_t)l * b, in + (size_t)c->members[c->me][l] * b, b);
	xs_model_alltoall(L.w, L.size, L.rank, b);
	CHECK(PMPI_Alltoall(sl, (int)b, MPI_BYTE, rl, (int)b, MPI_BYTE, c->local));
	for (l = 0; l < nm; l++)
		memcpy(out + (size_t)c->members[c->me][l] * b, rl + (size_t)l * b, b);
out:
	free(sl);
	free(rl);
	return rc;
}

/*
 * Large blocks (k > 1): the link's bandwidth, not the number of messages,
 * sets the time, so every rank sends its blocks for the other site straight
 * to their ranks (each rank starting with a different partner) and receives
 * theirs: all posted at once, one crossing, while the site's own alltoall
 * runs.  No rank forwards another's blocks.
 */
static int alltoall_direct(const struct xs_comm *c, const char *in, char *out,
			   size_t b)
{
	struct xs_reqs v = { NULL, 0, 0 };
	int o = 1 - c->me, no = c->n[o], l, rc;
	int first = c->lrank[c->rank] % no;

	for (l = 0; l < no; l++) {
		int peer = c->members[o][(first + l) % no];

		CHECK(xs_cross(c, 0, out + (size_t)peer * b, (int)b, MPI_BYTE, peer,
			       TAG_CROSS, &v));
		CHECK(xs_cross(c, 1, in + (size_t)peer * b, (int)b, MPI_BYTE, peer,
			       TAG_CROSS, &v));
	}
	CHECK(alltoall_local(c, in, out, b));
	CHECK(xs_reqs_wait(&v));
out:
	xs_reqs_free(&v);
	return rc;
}

/*
 * Blocks between ranks of one site: the MPI library's Alltoall on the site
 * communicator.  Blocks across, large (k > 1): alltoall_direct.  Small
 * (k = 1, the site leaders as the one stream pair; the code below holds for
 * any k): (A) each rank hands its blocks for the other site to the stream
 * rank of its range; (B) stream pair j exchanges them in one message each
 * way, posted before the alltoall inside the site and waited for after it;
 * (C) each stream rank hands every rank of its site the blocks from its
 * partner's range.
 */
int xs_alltoall(struct xs_comm *c, const void *sbuf, int scount,
		MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
		int k)
{
	struct sub L = sub_local(c);
	struct xs_img in = { NULL, NULL, 0 }, out = { NULL, NULL, 0 };
	/* (C)'s receives, (A), (B) and (C)'s sends */
	struct xs_reqs qr = { NULL, 0, 0 }, qa = { NULL, 0, 0 }, qb = { NULL, 0, 0 },
		       qc = { NULL, 0, 0 };
	char *cm = NULL, *g = NULL, *h = NULL, *d = NULL, *rx = NULL;
	int rc, l, j, s, me = c->me, o = 1 - me;
	int lr = L.rank;
	int nm = c->n[me], no = c->n[o], mj, sa;
	size_t b;

	/* with MPI_IN_PLACE the input is rbuf, which the output overwrites */
	if (sbuf == MPI_IN_PLACE)
		CHECK(xs_img_in(rbuf, c->size * rcount, rtype, c->comm, 1, &in));
	else
		CHECK(xs_img_in(sbuf, c->size * scount, stype, c->comm, 0, &in));
	b = in.bytes / (size_t)c->size;
	CHECK(xs_img_out(rbuf, c->size * rcount, rtype, &out));
	if (k > 1) {
		CHECK(alltoall_direct(c, in.p, out.p, b));
		goto deliver;
	}
	cm = xmalloc((size_t)no * b);
	rx = xmalloc((size_t)no * b);
	if (!cm || !rx)
		CHECK(MPI_ERR_NO_MEM);
	mj = xs_my_stream(c, k);
	sa = xs_stream(c, me, k, seg_of(nm, k, lr));

	/* (C) receives first: from stream j, the blocks of range j at the
	 * other site */
	for (j = 0; j < k; j++) {
		s = xs_stream(c, me, k, j);
		if (s != c->rank)
			CHECK(irecv_from(c, rx + (size_t)xs_seg_lo(no, k, j) * b,
					 (int)((size_t)xs_seg_len(no, k, j) * b), MPI_BYTE, s,
					 TAG_FROM_STREAM, &qr));
	}

	/* (A) my blocks for the other site, to the stream rank of my range */
	for (l = 0; l < no; l++)
		memcpy(cm + (size_t)l * b, in.p + (size_t)c->members[o][l] * b, b);
	{
		int lo = 0, len = 0;

		if (mj >= 0) {
			lo = xs_seg_lo(nm, k, mj);
			len = xs_seg_len(nm, k, mj);
			g = xmalloc((size_t)len * (size_t)no * b);
			if (!g)
				CHECK(MPI_ERR_NO_MEM);
		}
		for (l = lo; l < lo + len; l++)
			if (l == lr)
				memcpy(g + (size_t)(l - lo) * no * b, cm, (size_t)no * b);
			else
				CHECK(irecv_from(c, g + (size_t)(l - lo) * no * b,
						 (int)((size_t)no * b), MPI_BYTE,
						 c->members[me][l], TAG_TO_STREAM, &qa));
		if (sa != c->rank)
			CHECK(isend_to(c, cm, (int)((size_t)no * b), MPI_BYTE, sa,
				       TAG_TO_STREAM, &qa));
		CHECK(xs_reqs_wait(&qa));
	}

	/* (B) stream pair j: range j of my site x all of the other site, and
	 * back range j of the other site x all of mine; posted before the
	 * exchange inside the site, waited for after it */
	if (mj >= 0) {
		int lenm = xs_seg_len(nm, k, mj), leno = xs_seg_len(no, k, mj);
		int peer = xs_stream(c, o, k, mj);

		h = xmalloc((size_t)leno * (size_t)nm * b);
		d = xmalloc((size_t)leno * (size_t)nm * b);
		if (!h || !d)
			CHECK(MPI_ERR_NO_MEM);
		CHECK(xs_cross(c, 0, h, (int)((size_t)leno * nm * b), MPI_BYTE, peer,
			       TAG_CROSS, &qb));
		CHECK(xs_cross(c, 1, g, (int)((size_t)lenm * no * b), MPI_BYTE, peer,
			       TAG_CROSS, &qb));
	}

	/* inside my site, while the link carries (B) */
	CHECK(alltoall_local(c, in.p, out.p, b));

	if (mj >= 0) {
		int leno = xs_seg_len(no, k, mj), src, dst;

		CHECK(xs_reqs_wait(&qb));

		/* (C) h is [source in range][destination at my site]: to each
		 * destination its column */
		for (dst = 0; dst < nm; dst++)
			for (src = 0; src < leno; src++)
				memcpy(d + ((size_t)dst * leno + src) * b,
				       h + ((size_t)src * nm + dst) * b, b);
		for (dst = 0; dst < nm; dst++) {
			char *col = d + (size_t)dst * leno * b;

			if (c->members[me][dst] == c->rank)
				memcpy(rx + (size_t)xs_seg_lo(no, k, mj) * b, col,
				       (size_t)leno * b);
			else
				CHECK(isend_to(c, col, (int)((size_t)leno * b), MPI_BYTE,
					       c->members[me][dst], TAG_FROM_STREAM, &qc));
		}
		CHECK(xs_reqs_wait(&qc));
	}
	CHECK(xs_reqs_wait(&qr));
	for (l = 0; l < no; l++)
		memcpy(out.p + (size_t)c->members[o][l] * b, rx + (size_t)l * b, b);
deliver:
	FAULT(c, XS_ALLTOALL, c->rank == c->size - 1, out.p, out.bytes);
	CHECK(xs_img_done(&out, rbuf, c->size * rcount, rtype, c->comm));
out:
	/* after an error: the requests still outstanding */
	xs_reqs_free(&qr);
	xs_reqs_free(&qa);
	xs_reqs_free(&qc);
	xs_reqs_free(&qb);
	xs_img_free(&in);
	xs_img_free(&out);
	free(cm);
	free(rx);
	free(g);
	free(h);
	free(d);
	return rc;
}

/* ---- through the two site leaders: unequal crossings -------------------- */

/* the blocks of site s's ranks (cnt[r] elements at dsp[r] of all), one
 * after the other in the site's local rank order, into out */
static int site_blocks(const struct xs_comm *c, int s, const char *all,
		       const int *cnt, const int *dsp, MPI_Datatype t,
		       const struct xs_tinfo *ti, char *out)
{
	int l, n = 0, rc = MPI_SUCCESS;

	for (l = 0; l < c->n[s] && rc == MPI_SUCCESS; l++) {
		int r = c->members[s][l];

		rc = xs_copy_typed(out + (MPI_Aint)n * ti->ext, all + (MPI_Aint)dsp[r] * ti->ext,
				cnt[r], t, ti);
		n += cnt[r];
	}
	return rc;
}

/* ---- Reduce_scatter, Reduce_scatter_block ------------------------------- */

/*
 * Each site reduces the whole vector to its leader (local_reduce); the
 * leaders swap the partials of the blocks of the other site's ranks (each
 * way, only the other site's share of the vector crosses), combine them
 * (site 0 op site 1), and scatter the blocks at their site.
 */
int xs_reduce_scatter(struct xs_comm *c, const void *sbuf, void *rbuf,
		      const int *rcounts, int block, MPI_Datatype t, MPI_Op op)
{
	struct sub L = sub_local(c);
	struct xs_tinfo ti;
	void *b[4] = { NULL, NULL, NULL, NULL };
	char *all, *mine = NULL, *theirs = NULL;
	int *cnt = NULL, *dsp = NULL, *lcnt = NULL, *ldsp = NULL, me = c->me, other = 1 - me;
	int rc, r, l, total = 0, nm = 0, no = 0;

	xs_tinfo(t, &ti);
	cnt = malloc(sizeof(int) * (size_t)c->size);
	dsp = malloc(sizeof(int) * (size_t)c->size);
	lcnt = calloc((size_t)c->n[me], sizeof(int));
	ldsp = calloc((size_t)c->n[me], sizeof(int));
	if (!cnt || !dsp || !lcnt || !ldsp)
		CHECK(MPI_ERR_NO_MEM);
	for (r = 0; r < c->size; r++) {
		cnt[r] = rcounts ? rcounts[r] : block;
		dsp[r] = total;
		total += cnt[r];
	}
	for (l = 0; l < c->n[me]; l++) {
		lcnt[l] = cnt[c->members[me][l]];
		ldsp[l] = nm;
		nm += lcnt[l];
	}
	for (l = 0; l < c->n[other]; l++)
		no += cnt[c->members[other][l]];

	/* the node leaders collect in the buffer too: every rank has one */
	all = xs_tmp_typed(total, &ti, &b[0]);
	if (!all)
		CHECK(MPI_ERR_NO_MEM);
	CHECK(local_reduce(c, sbuf == MPI_IN_PLACE ? rbuf : sbuf, all, total, t, op));
	if (L.rank == 0) {
		char *send = xs_tmp_typed(no, &ti, &b[3]);

		mine = xs_tmp_typed(nm, &ti, &b[1]);
		theirs = xs_tmp_typed(nm, &ti, &b[2]);
		if (!mine || !theirs || !send)
			CHECK(MPI_ERR_NO_MEM);
		CHECK(site_blocks(c, other, all, cnt, dsp, t, &ti, send));
		CHECK(site_blocks(c, me, all, cnt, dsp, t, &ti, mine));
		CHECK(swap(c, send, no, theirs, nm, t, c->members[other][0]));
		CHECK(xs_combine(me, mine, theirs, nm, t, op, &ti));
	}
	CHECK(sub_scatterv(&L, mine, lcnt, ldsp, rbuf, cnt[c->rank], t, 0));
	FAULT(c, XS_REDUCE_SCATTER, c->rank == c->size - 1, (char *)rbuf + ti.tlb,
	      (size_t)cnt[c->rank] * (size_t)ti.size);
out:
	free(b[0]);
	free(b[1]);
	free(b[2]);
	free(b[3]);
	free(cnt);
	free(dsp);
	free(lcnt);
	free(ldsp);
	return rc;
}

/* ---- Allgatherv --------------------------------------------------------- */

/* count elements of t from packed bytes p into dst */
static int unpack_block(const char *p, int count, MPI_Datatype t,
			const struct xs_tinfo *ti, void *dst, MPI_Comm comm)
{
	int pos = 0;

	if (!count)
		return MPI_SUCCESS;
	if (ti->contig) {
		memcpy((char *)dst + ti->tlb, p, (size_t)count * (size_t)ti->size);
		return MPI_SUCCESS;
	}
	return PMPI_Unpack(p, count * ti->size, &pos, dst, count, t, comm);
}

/*
 * On packed bytes, like Allgather: the blocks of my site gathered at my
 * site (an Allgatherv of bytes on the site-local communicator), swapped
 * between the two leaders, broadcast at each site, and unpacked into place.
 */
int xs_allgatherv(struct xs_comm *c, const void *sbuf, int scount,
		  MPI_Datatype stype, void *rbuf, const int *rcounts,
		  const int *displs, MPI_Datatype rtype)
{
	struct sub L = sub_local(c);
	struct work w = { .y = NULL }; /* nothing owned yet */
	struct xs_img *own = &w.im[0];
	struct xs_tinfo ti;
	int *cnt[2] = { NULL, NULL }, *dsp[2] = { NULL, NULL }, bytes[2] = { 0, 0 };
	int rc, r, s, l, me = c->me, other = 1 - me;

	xs_tinfo(rtype, &ti);
	if (sbuf == MPI_IN_PLACE)
		CHECK(xs_img_in((const char *)rbuf + (MPI_Aint)displs[c->rank] * ti.ext,
				rcounts[c->rank], rtype, c->comm, 0, own));
	else
		CHECK(xs_img_in(sbuf, scount, stype, c->comm, 0, own));
	for (s = 0; s < 2; s++) {
		cnt[s] = calloc((size_t)c->n[s], sizeof(int));
		dsp[s] = calloc((size_t)c->n[s], sizeof(int));
		if (!cnt[s] || !dsp[s])
			CHECK(MPI_ERR_NO_MEM);
		for (l = 0; l < c->n[s]; l++) {
			cnt[s][l] = rcounts[c->members[s][l]] * ti.size;
			dsp[s][l] = bytes[s];
			bytes[s] += cnt[s][l];
		}
		w.x[s] = xmalloc((size_t)bytes[s]);
		if (!w.x[s])
			CHECK(MPI_ERR_NO_MEM);
	}

	/* my site's blocks, everywhere at my site */
	CHECK(sub_allgatherv(&L, own->p, (int)own->bytes, w.x[me], cnt[me], dsp[me],
			     MPI_BYTE));
	/* across, between the leaders; then the other site's, everywhere here */
	if (L.rank == 0)
		CHECK(swap(c, w.x[me], bytes[me], w.x[other], bytes[other], MPI_BYTE,
			   c->members[other][0]));
	CHECK(local_bcast(c, w.x[other], bytes[other], MPI_BYTE));
	FAULT(c, XS_ALLGATHERV, c->rank == c->size - 1, w.x[other], (size_t)bytes[other]);
	for (r = 0; r < c->size; r++) {
		s = c->site_of[r];
		CHECK(unpack_block(w.x[s] + dsp[s][c->lrank[r]], rcounts[r], rtype, &ti,
				   (char *)rbuf + (MPI_Aint)displs[r] * ti.ext, c->comm));
	}
out:
	for (s = 0; s < 2; s++) {
		free(cnt[s]);
		free(dsp[s]);
	}
	return work_end(&w, rc);
}

/* ---- Scan, Exscan ------------------------------------------------------- */

/* the ranks of site 0 come first in the communicator's rank order */
int xs_sites_in_order(const struct xs_comm *c)
{
	int r;

	for (r = 0; r < c->size; r++)
		if (c->site_of[r] != (r >= c->n[0]))
			return 0;
	return 1;
}

/*
 * The ranks of site 0 come first.  Each site scans its own ranks (the MPI
 * library's Scan or Exscan on the site-local communicator, whose rank order
 * is the communicator's); the last rank of site 0 sends site 0's total
 * across to the first rank of site 1, which broadcasts it at its site, where
 * each rank puts it in front of its own result (total op result).  The op's
 * order is kept, so non-commutative ops come here too.
 */
int xs_scan(struct xs_comm *c, const void *sbuf, void *rbuf, int count,
	    MPI_Datatype t, MPI_Op op, int exclusive)
{
	struct sub L = sub_local(c);
	struct xs_tinfo ti;
	void *b[2] = { NULL, NULL };
	char *keep = NULL, *pre;
	int rc = MPI_SUCCESS, n0 = c->n[0];
	int last0 = c->rank == n0 - 1, first1 = c->rank == n0;

	xs_tinfo(t, &ti);
	if (exclusive && last0) {
		/* its input, which an in-place Exscan overwrites */
		keep = xs_tmp_typed(count, &ti, &b[0]);
		if (!keep)
			CHECK(MPI_ERR_NO_MEM);
		CHECK(xs_copy_typed(keep, sbuf == MPI_IN_PLACE ? rbuf : sbuf, count, t, &ti));
	}
	xs_model_scan(L.w, L.size, L.rank, nbytes(count, t));
	if (exclusive)
		CHECK(PMPI_Exscan(sbuf, rbuf, count, t, op, c->local));
	else
		CHECK(PMPI_Scan(sbuf, rbuf, count, t, op, c->local));
	if (c->me == 0) {
		if (last0) {
			/* site 0's total: this rank's inclusive result */
			if (exclusive && L.rank > 0)
				CHECK(PMPI_Reduce_local(rbuf, keep, count, t, op));
			CHECK(xs_cross_wait(c, 1, exclusive ? keep : rbuf, count, t, n0,
					    TAG_CROSS));
		}
		goto out;
	}
	pre = xs_tmp_typed(count, &ti, &b[1]);
	if (!pre)
		CHECK(MPI_ERR_NO_MEM);
	if (first1)
		CHECK(xs_cross_wait(c, 0, pre, count, t, n0 - 1, TAG_CROSS));
	CHECK(local_bcast(c, pre, count, t));
	if (exclusive && first1)
		CHECK(xs_copy_typed(rbuf, pre, count, t, &ti));
	else
		CHECK(PMPI_Reduce_local(pre, rbuf, count, t, op));
	FAULT(c, exclusive ? XS_EXSCAN : XS_SCAN, c->rank == c->size - 1,
	      (char *)rbuf + ti.tlb, (size_t)count * (size_t)ti.size);
out:
	free(b[0]);
	free(b[1]);
	return rc;
}
