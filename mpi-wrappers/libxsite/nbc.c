/*
 * libxsite: the site-aware nonblocking collectives, MPI_Iallreduce,
 * MPI_Ibcast, MPI_Ibarrier and MPI_Iallgather.
 *
 * Each is a schedule of steps, as in the blocking forms (coll.c) with k = 1
 * but for Iallgather:
 *   Iallreduce: a site-local Ireduce to the site leader; the two leaders
 *               swap their partial results across the link (one message
 *               each way, in pieces sent eagerly: xs_cross in coll.c) and
 *               combine them in one fixed order (site 0 op
 *               site 1, the same bits on both sides); a site-local Ibcast;
 *   Ibcast:     on packed bytes (the ranks' types need only match in type
 *               signature): the root sends to the other site's leader
 *               across the link while its own site's Ibcast runs; that
 *               leader's site Ibcast follows when the message is in;
 *   Ibarrier:   a site-local Ibarrier, the leaders swap an empty message,
 *               a site-local Ibarrier;
 *   Iallgather: a site-local Iallgather of the site's blocks (packed), the
 *               leaders swap their site's blocks, a site-local Ibcast of
 *               the other site's; then the blocks go to the receive buffer
 *               in rank order.  From XSITE_LARGE_MSG, as the blocking form,
 *               k stream pairs swap a segment each, and a site-local
 *               Iallgatherv of the segments replaces the Ibcast.
 * A step starts when the requests of the one before have completed.  The
 * program holds a generalized request (MPI_Grequest_start), completed at
 * the end of the schedule.  The steps advance in the MPI library's progress
 * engine: a callback registered with Open MPI's opal_progress_register(),
 * so that every MPI call that makes progress (MPI_Wait and MPI_Test on the
 * request, a blocking receive, another collective) moves the schedule on,
 * as the library's own nonblocking collectives are moved.  Without that
 * hook (another MPI library) the nonblocking forms are the library's own.
 *
 * Order.  The MPI standard asks every rank to start the collectives of a
 * communicator in one order, and a local step starts at a different moment
 * on each rank (the leader's after the link).  So the schedules of a
 * communicator go round XS_NBC_LANES lanes in the order they are started
 * (the same on every rank), each lane with a copy of the site-local
 * communicator of its own for the local steps (c->nb_local[lane]) and a tag
 * of its own for the crossing, a point-to-point message on the private
 * communicator; the schedules of one lane run one after the other
 * (c->nb_run[lane]): each rank starts the local steps of a lane's first
 * schedule, then of its second, whatever the link's timing.  So up to
 * XS_NBC_LANES run at once, as the library's own would.
 *
 * Lifetimes.  The program may free its communicator or datatype while the
 * operation runs: the communicator's state is released when its last
 * schedule ends (comm.c), a derived datatype is duplicated, and only
 * predefined ops (which cannot be freed) are taken; a user-defined op goes
 * to the library's own nonblocking collective.  Freeing the request before
 * it completes is erroneous (MPI 4.1, 6.12); the schedule then runs to its
 * end and frees itself.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct xs_nbc {
	struct xs_comm *c;
	enum xs_coll_id coll;
	MPI_Request greq; /* the program's */
	struct xs_reqs sub; /* the requests of the step that runs */
	int step;   /* the steps done */
	int lane;   /* of its communicator's (nb_local, nb_run), and tag */
	int rc;
	int done;   /* greq completed: free_fn may free this */
	int orphan; /* the program freed greq before the end (erroneous) */
	const void *sbuf;
	/* Iallreduce, Iallgather: the receive buffer; Ibcast: the buffer;
	 * count items of t (Iallgather: from each rank) */
	void *buf;
	int count, root;
	int k; /* Iallgather: stream pairs */
	MPI_Datatype t;
	int tdup; /* t is libxsite's duplicate of a derived type */
	MPI_Op op;
	void *theirs, *theirs_base; /* the other site's partial (a leader) */
	struct xs_img own;  /* Iallgather: my block, packed; Ibcast: the buffer's image */
	char *x[2];         /* Iallgather: the blocks of site 0 and of site 1 */
	int *cnt, *dsp;     /* Iallgather, k > 1: the segments at my site */
	struct xs_nbc *next;
};

/* the schedules not yet ended, in the order they were started */
static struct xs_nbc *head, *tail;
static int busy; /* progress() is running (it is re-entered by PMPI_Testall) */

typedef int (*xs_progress_fn)(void);
static int (*progress_register)(xs_progress_fn);
static int (*progress_unregister)(xs_progress_fn);
static int registered, looked_up;

static int progress(void);

/* ---- the hook ------------------------------------------------------------ */

const char *xs_nbc_why(void)
{
	if (!looked_up) {
		looked_up = 1;
		*(void **)&progress_register = dlsym(RTLD_DEFAULT, "opal_progress_register");
		*(void **)&progress_unregister = dlsym(RTLD_DEFAULT, "opal_progress_unregister");
	}
	if (!progress_register || !progress_unregister)
		return "no progress hook in the MPI library (opal_progress_register)";
	if (!registered) {
		if (progress_register(progress) != 0)
			return "the MPI library refused a progress callback";
		registered = 1;
	}
	return NULL;
}

void xs_nbc_finalize(void)
{
	if (registered)
		progress_unregister(progress);
	registered = 0;
	/* what the program never completed (erroneous): dropped */
	head = tail = NULL;
}

/* ---- the generalized request ---------------------------------------------- */

static int query_fn(void *extra, MPI_Status *status)
{
	struct xs_nbc *s = extra;

	PMPI_Status_set_elements(status, MPI_BYTE, 0);
	PMPI_Status_set_cancelled(status, 0);
	status->MPI_SOURCE = MPI_ANY_SOURCE;
	status->MPI_TAG = MPI_ANY_TAG;
	return s->rc;
}

static void release(struct xs_nbc *s)
{
	free(s->theirs_base);
	xs_img_free(&s->own);
	free(s->x[0]); /* x[1] is in the same allocation */
	free(s->cnt);
	free(s->dsp);
	free(s);
}

static int free_fn(void *extra)
{
	struct xs_nbc *s = extra;

	if (s->done)
		release(s);
	else
		s->orphan = 1;
	return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
	/* a collective cannot be cancelled (MPI 4.1, 6.12): nothing to do */
	(void)extra, (void)complete;
	return MPI_SUCCESS;
}

/* ---- the steps ------------------------------------------------------------ */

/* A step's next request: a new slot of s->sub, in *r. */
static int slot(struct xs_nbc *s, MPI_Request **r)
{
	*r = xs_reqs_add(&s->sub);
	return *r ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

/* A swap across the link with peer (a leader's: the other leader), in
 * s->sub: scount items of t out of sbuf (counted), rcount in to rbuf, on
 * s's lane's tag, each in messages sent eagerly (xs_cross). */
static int swap(struct xs_nbc *s, int other, const void *sbuf, int scount, void *rbuf,
		int rcount, MPI_Datatype t)
{
	int tag = TAG_NBC + s->lane;
	int rc = xs_cross(s->c, 0, rbuf, rcount, t, other, tag, &s->sub);

	return rc == MPI_SUCCESS ? xs_cross(s->c, 1, sbuf, scount, t, other, tag, &s->sub)
				 : rc;
}

/* Start the next step of s: its requests in s->sub.  Returns 1 when one
 * was started, 0 when s has ended (s->rc says how). */
static int allreduce_step(struct xs_nbc *s)
{
	struct xs_comm *c = s->c;
	MPI_Comm lc = c->nb_local[s->lane];
	int lrank = c->lrank[c->rank], lsize = c->n[c->me], leader = lrank == 0;
	int rc = MPI_SUCCESS;
	struct xs_tinfo ti;
	MPI_Request *r;
	uint64_t bytes;

	xs_tinfo(s->t, &ti);
	bytes = (uint64_t)s->count * (uint64_t)ti.size;
	switch (s->step++) {
	case 0: /* to the site leader */
		xs_model_reduce(c->local_w, lsize, lrank, 0, bytes);
		if ((rc = slot(s, &r)) != MPI_SUCCESS)
			break;
		if (leader)
			rc = PMPI_Ireduce(s->sbuf, s->buf, s->count, s->t, s->op, 0,
					  lc, r);
		else
			rc = PMPI_Ireduce(s->sbuf == MPI_IN_PLACE ? s->buf : s->sbuf, NULL,
					  s->count, s->t, s->op, 0, lc, r);
		break;
	case 1: /* the leaders swap across the link */
		if (leader) {
			s->theirs = xs_tmp_typed(s->count, &ti, &s->theirs_base);
			rc = s->theirs ? swap(s, c->members[1 - c->me][0], s->buf, s->count,
					      s->theirs, s->count, s->t) :
					 MPI_ERR_NO_MEM;
			break;
		}
		/* a rank that is no leader waits for the result */
		s->step++;
		/* fall through */
	case 2: /* from the site leader */
		if (leader) {
			rc = xs_combine(c->me, s->buf, s->theirs, s->count, s->t, s->op, &ti);
			if (rc != MPI_SUCCESS)
				break;
		}
		xs_model_bcast(c->local_w, lsize, lrank, 0, bytes);
		if ((rc = slot(s, &r)) == MPI_SUCCESS)
			rc = PMPI_Ibcast(s->buf, s->count, s->t, 0, lc, r);
		break;
	default:
#ifdef XSITE_FAULT_INJECTION
		if (xs_fault("iallreduce") && c->rank == c->size - 1 && bytes)
			((unsigned char *)s->buf)[0] ^= 1; /* a contiguous type in the tests */
#endif
		return 0;
	}
	s->rc = rc;
	return rc == MPI_SUCCESS;
}

static int barrier_step(struct xs_nbc *s)
{
	struct xs_comm *c = s->c;
	MPI_Comm lc = c->nb_local[s->lane];
	int lrank = c->lrank[c->rank], lsize = c->n[c->me], rc = MPI_SUCCESS;
	MPI_Request *r;

	switch (s->step++) {
	case 0:
		xs_model_barrier(c->local_w, lsize, lrank);
		if ((rc = slot(s, &r)) == MPI_SUCCESS)
			rc = PMPI_Ibarrier(lc, r);
		break;
	case 1: /* the leaders: an empty message each way */
#ifdef XSITE_FAULT_INJECTION
		if (xs_fault("ibarrier"))
			return 0;
#endif
		if (lrank == 0) {
			static char none;

			rc = swap(s, c->members[1 - c->me][0], &none, 0, &none, 0, MPI_BYTE);
			break;
		}
		s->step++;
		/* fall through */
	case 2:
		xs_model_barrier(c->local_w, lsize, lrank);
		if ((rc = slot(s, &r)) == MPI_SUCCESS)
			rc = PMPI_Ibarrier(lc, r);
		break;
	default:
		return 0;
	}
	s->rc = rc;
	return rc == MPI_SUCCESS;
}

static int bcast_step(struct xs_nbc *s)
{
	struct xs_comm *c = s->c;
	MPI_Comm lc = c->nb_local[s->lane];
	int tag = TAG_NBC + s->lane;
	int rs = c->site_of[s->root], lrank = c->lrank[c->rank], lsize = c->n[c->me];
	int leader = lrank == 0, amroot = c->rank == s->root, rc = MPI_SUCCESS;
	int lroot = c->me == rs ? c->lrank[s->root] : 0, n = (int)s->own.bytes;
	MPI_Request *r;

	switch (s->step++) {
	case 0:
		if (c->me != rs && leader) { /* from the root, across */
			rc = xs_cross(c, 0, s->own.p, n, MPI_BYTE, s->root, tag, &s->sub);
			break;
		}
		if (amroot)
			rc = xs_cross(c, 1, s->own.p, n, MPI_BYTE, c->members[1 - rs][0], tag,
				      &s->sub);
		s->step++; /* the site's broadcast: now */
		/* fall through */
	case 1:
		if (rc != MPI_SUCCESS)
			break;
		xs_model_bcast(c->local_w, lsize, lrank, lroot, (uint64_t)n);
		if ((rc = slot(s, &r)) == MPI_SUCCESS)
			rc = PMPI_Ibcast(s->own.p, n, MPI_BYTE, lroot, lc, r);
		break;
	case 2: /* unpacked (c->priv: the program may have freed comm) */
#ifdef XSITE_FAULT_INJECTION
		if (xs_fault("ibcast") && !amroot && c->rank == c->size - 1 && n)
			s->own.p[0] ^= 1;
#endif
		if (!amroot)
			s->rc = xs_img_done(&s->own, s->buf, s->count, s->t, c->priv);
		return 0;
	default:
		return 0;
	}
	s->rc = rc;
	return rc == MPI_SUCCESS;
}

static int allgather_step(struct xs_nbc *s)
{
	struct xs_comm *c = s->c;
	MPI_Comm lc = c->nb_local[s->lane];
	int lrank = c->lrank[c->rank], lsize = c->n[c->me], me = c->me, other = 1 - me;
	int b = (int)s->own.bytes, r, j, rc = MPI_SUCCESS; /* all of it < 2 GiB */
	int ms = c->n[me] * b, os = c->n[other] * b, k = s->k;
	struct xs_img out;
	MPI_Request *q;

	switch (s->step++) {
	case 0: /* my site's blocks, everywhere at my site */
		xs_model_allgather(c->local_w, lsize, lrank, (uint64_t)b);
		if ((rc = slot(s, &q)) == MPI_SUCCESS)
			rc = PMPI_Iallgather(s->own.p, b, MPI_BYTE, s->x[me], b, MPI_BYTE, lc,
					     q);
		break;
	case 1: /* stream pair j swaps segment j of each site's blocks (k = 1:
		 * the leaders, all of them) */
		j = xs_my_stream(c, k);
		if (j >= 0) {
			rc = swap(s, xs_stream(c, other, k, j), s->x[me] + xs_seg_lo(ms, k, j),
				  xs_seg_len(ms, k, j), s->x[other] + xs_seg_lo(os, k, j),
				  xs_seg_len(os, k, j), MPI_BYTE);
			break;
		}
		s->step++;
		/* fall through */
	case 2: /* the other site's blocks, everywhere at my site */
		if ((rc = slot(s, &q)) != MPI_SUCCESS)
			break;
		if (k == 1) {
			xs_model_bcast(c->local_w, lsize, lrank, 0, (uint64_t)os);
			rc = PMPI_Ibcast(s->x[other], os, MPI_BYTE, 0, lc, q);
		} else {
			uint64_t *seg;

			rc = xs_seg_layout(c, os, k, &s->cnt, &s->dsp);
			if (rc != MPI_SUCCESS)
				break;
			seg = xs_counts_bytes(s->cnt, lsize, MPI_BYTE);
			if (seg)
				xs_model_allgatherv(c->local_w, lsize, lrank, seg);
			free(seg);
			rc = PMPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, s->x[other],
					      s->cnt, s->dsp, MPI_BYTE, lc, q);
		}
		break;
	case 3: /* in comm rank order (c->priv: the program may have freed comm) */
		rc = xs_img_out(s->buf, c->size * s->count, s->t, &out);
		if (rc != MPI_SUCCESS)
			break;
		for (r = 0; r < c->size; r++)
			memcpy(out.p + (size_t)r * (size_t)b,
			       s->x[c->site_of[r]] + (size_t)c->lrank[r] * (size_t)b, (size_t)b);
#ifdef XSITE_FAULT_INJECTION
		if (xs_fault("iallgather") && c->rank == c->size - 1)
			out.p[0] ^= 1;
#endif
		rc = xs_img_done(&out, s->buf, c->size * s->count, s->t, c->priv);
		xs_img_free(&out);
		s->rc = rc;
		return 0;
	default:
		return 0;
	}
	s->rc = rc;
	return rc == MPI_SUCCESS;
}

static int step(struct xs_nbc *s)
{
	if (s->rc != MPI_SUCCESS)
		return 0;
	switch (s->coll) {
	case XS_IALLREDUCE: return allreduce_step(s);
	case XS_IBCAST: return bcast_step(s);
	case XS_IALLGATHER: return allgather_step(s);
	default: return barrier_step(s);
	}
}

/* ---- the engine ----------------------------------------------------------- */

/* s has ended: the program's request completes; the next schedule of its
 * lane may start */
static void end(struct xs_nbc *s)
{
	struct xs_comm *c = s->c;

	xs_reqs_free(&s->sub); /* after an error: what was started completes first */
	if (s->tdup)
		PMPI_Type_free(&s->t);
	c->nb_run[s->lane] = NULL;
	c->nb_pending--;
	xs_comm_unused(c);
	if (s->orphan) {
		release(s);
		return;
	}
	s->done = 1;
	PMPI_Grequest_complete(s->greq); /* s may be freed from here on */
}

/* Move s on; returns 1 when it has ended. */
static int advance(struct xs_nbc *s)
{
	int flag = 0;

	if (!s->c->nb_run[s->lane]) {
		s->c->nb_run[s->lane] = s;
		if (!step(s))
			return 1;
	}
	if (s->c->nb_run[s->lane] != s)
		return 0; /* an earlier schedule of its lane runs */
	while (s->sub.n) {
		if (PMPI_Testall(s->sub.n, s->sub.r, &flag, MPI_STATUSES_IGNORE) != MPI_SUCCESS) {
			s->rc = MPI_ERR_IN_STATUS;
			return 1;
		}
		if (!flag)
			return 0;
		s->sub.n = 0;
		if (!step(s))
			return 1;
	}
	return 1;
}

/* The progress callback: every schedule moved on once. */
static int progress(void)
{
	struct xs_nbc *s, *prev = NULL, *next;
	int ended = 0;

	if (!head || busy)
		return 0;
	busy = 1;
	xs_depth++;
	for (s = head; s; s = next) {
		next = s->next;
		if (!advance(s)) {
			prev = s;
			continue;
		}
		if (prev)
			prev->next = next;
		else
			head = next;
		if (tail == s)
			tail = prev;
		end(s);
		ended++;
	}
	xs_depth--;
	busy = 0;
	return ended;
}

/* ---- starting one --------------------------------------------------------- */

/* the lanes' copies of the site-local communicator for the local steps
 * (collective on the site's ranks: each of them is at this same call) */
static int nb_local(struct xs_comm *c)
{
	int i, rc = MPI_SUCCESS;

	for (i = 0; i < XS_NBC_LANES && rc == MPI_SUCCESS; i++)
		if (c->nb_local[i] == MPI_COMM_NULL)
			rc = PMPI_Comm_dup(c->local, &c->nb_local[i]);
	return rc;
}

static int start(struct xs_nbc *s, MPI_Request *req)
{
	int rc, combiner, ni, na, nd;

	rc = nb_local(s->c);
	if (rc == MPI_SUCCESS) {
		PMPI_Type_get_envelope(s->t, &ni, &na, &nd, &combiner);
		if (combiner != MPI_COMBINER_NAMED) {
			rc = PMPI_Type_dup(s->t, &s->t);
			s->tdup = rc == MPI_SUCCESS;
		}
	}
	if (rc == MPI_SUCCESS)
		rc = PMPI_Grequest_start(query_fn, free_fn, cancel_fn, s, &s->greq);
	if (rc != MPI_SUCCESS) {
		if (s->tdup)
			PMPI_Type_free(&s->t);
		release(s);
		return rc;
	}
	*req = s->greq;
	s->lane = (int)(s->c->nb_seq++ % XS_NBC_LANES);
	s->c->nb_pending++;
	if (tail)
		tail->next = s;
	else
		head = s;
	tail = s;
	progress(); /* the first step, if its lane is free */
	return MPI_SUCCESS;
}

static struct xs_nbc *alloc(struct xs_comm *c, enum xs_coll_id coll, void *buf,
			    int count, MPI_Datatype t)
{
	struct xs_nbc *s = calloc(1, sizeof(*s));

	if (s) {
		s->c = c;
		s->coll = coll;
		s->buf = buf;
		s->count = count;
		s->t = t;
		s->rc = MPI_SUCCESS;
	}
	return s;
}

int xs_iallreduce(struct xs_comm *c, const void *sbuf, void *rbuf, int count,
		  MPI_Datatype t, MPI_Op op, MPI_Request *req)
{
	struct xs_nbc *s = alloc(c, XS_IALLREDUCE, rbuf, count, t);

	if (!s)
		return MPI_ERR_NO_MEM;
	s->sbuf = sbuf;
	s->op = op;
	return start(s, req);
}

int xs_ibarrier(struct xs_comm *c, MPI_Request *req)
{
	struct xs_nbc *s = alloc(c, XS_IBARRIER, NULL, 0, MPI_BYTE);

	if (!s)
		return MPI_ERR_NO_MEM;
	return start(s, req);
}

int xs_ibcast(struct xs_comm *c, void *buf, int count, MPI_Datatype t, int root,
	      MPI_Request *req)
{
	struct xs_nbc *s = alloc(c, XS_IBCAST, buf, count, t);
	int rc;

	if (!s)
		return MPI_ERR_NO_MEM;
	s->root = root;
	/* on packed bytes, as the blocking form: the ranks' types need only
	 * match in type signature, and the pieces across (xs_cross) in bytes */
	rc = c->rank == root ? xs_img_in(buf, count, t, c->comm, 0, &s->own)
			     : xs_img_out(buf, count, t, &s->own);
	if (rc != MPI_SUCCESS) {
		release(s);
		return rc;
	}
	return start(s, req);
}

int xs_iallgather(struct xs_comm *c, const void *sbuf, int scount,
		  MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
		  int k, MPI_Request *req)
{
	struct xs_nbc *s = alloc(c, XS_IALLGATHER, rbuf, rcount, rtype);
	size_t b;
	int rc;

	if (!s)
		return MPI_ERR_NO_MEM;
	s->k = k;
	/* my block, packed now (the program may free stype while the call
	 * runs), and room for every rank's, site by site */
	rc = xs_own_block(c, sbuf, scount, stype, rbuf, rcount, rtype, c->rank, &s->own);
	b = s->own.bytes;
	if (rc == MPI_SUCCESS) {
		s->x[0] = malloc((size_t)c->size * b);
		rc = s->x[0] ? MPI_SUCCESS : MPI_ERR_NO_MEM;
	}
	if (rc != MPI_SUCCESS) {
		release(s);
		return rc;
	}
	s->x[1] = s->x[0] + (size_t)c->n[0] * b;
	return start(s, req);
}
