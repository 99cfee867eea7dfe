/*
 * libxsite: what the library keeps per communicator.
 *
 * One attribute (keyval with a delete callback) holds a struct xs_comm:
 *  - created lazily and locally on first use: the map from the
 *    communicator's ranks to MPI_COMM_WORLD ranks (for the accounting);
 *  - set up collectively at the first collective call on the communicator
 *    (every rank makes that call): the site of every rank (an Allgather of a
 *    64-bit hash of XSITE_SITE, names verified), and for a communicator that
 *    spans exactly two sites the sub-communicators of the site-aware
 *    algorithms: a private copy (split, so that the program's attribute copy
 *    callbacks do not run), the site-local communicator, the node
 *    communicator inside the site and the node leaders.
 * MPI_Comm_free (and MPI_Finalize for the predefined communicators) runs the
 * delete callback, which frees the sub-communicators.  Dup'ed communicators
 * do not inherit the attribute (MPI_COMM_NULL_COPY_FN): they get their own.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int keyval = MPI_KEYVAL_INVALID;
static unsigned next_id;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int finalizing;

/* every live struct, to release what the program never freed at MPI_Finalize */
static struct xs_comm *live;

/* one-entry cache for the accounting fast path (not with THREAD_MULTIPLE) */
static MPI_Comm last_comm;
static struct xs_comm *last;

uint64_t xs_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL; /* FNV-1a */

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h ? h : 1; /* 0 means "no site" */
}

static void free_sub(MPI_Comm *c)
{
	if (*c != MPI_COMM_NULL && !finalizing)
		PMPI_Comm_free(c);
	*c = MPI_COMM_NULL;
}

/* what c holds, freed */
static void release(struct xs_comm *c)
{
	int i;

	free_sub(&c->priv);
	free_sub(&c->local);
	free_sub(&c->node);
	free_sub(&c->nodeleaders);
	for (i = 0; i < XS_NBC_LANES; i++)
		free_sub(&c->nb_local[i]);
	free(c->wrank);
	free(c->local_w);
	free(c->node_w);
	free(c->nl_w);
	free(c->site_of);
	free(c->lrank);
	free(c->members[0]);
	free(c->members[1]);
	free(c->streams[0]);
	free(c->streams[1]);
	xs_race_free(c);
	free(c);
}

/* The program freed the communicator (or MPI_Finalize runs): c leaves the
 * live list, and is released now, or when its last nonblocking collective
 * ends (nbc.c), which MPI lets run on after MPI_Comm_free. */
static void comm_free(struct xs_comm *c)
{
	if (xs_mt)
		pthread_mutex_lock(&lock);
	/* the head (live) is the one without a prev */
	if (c == live)
		live = c->next;
	else
		c->prev->next = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (xs_mt)
		pthread_mutex_unlock(&lock);
	if (c->nb_pending && !finalizing) {
		c->nb_dead = 1;
		return;
	}
	release(c);
}

void xs_comm_unused(struct xs_comm *c)
{
	if (c->nb_dead && !c->nb_pending)
		release(c);
}

static int delete_fn(MPI_Comm comm, int kv, void *attr, void *extra)
{
	struct xs_comm *c = attr;

	(void)comm, (void)kv, (void)extra;
	if (last == c) {
		last = NULL;
		last_comm = MPI_COMM_NULL;
	}
	comm_free(c);
	return MPI_SUCCESS;
}

int xs_comm_init(void)
{
	last_comm = MPI_COMM_NULL;
	return PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &keyval,
				       NULL);
}

void xs_comm_finalize(void)
{
	/* free the sub-communicators while MPI still runs everything: those of
	 * every communicator the program did not free (MPI_COMM_WORLD too) */
	while (live)
		if (PMPI_Comm_delete_attr(live->comm, keyval) != MPI_SUCCESS)
			comm_free(live);
	last = NULL;
	last_comm = MPI_COMM_NULL;
	finalizing = 1;
	PMPI_Comm_free_keyval(&keyval);
}

/* ranks of group g -> world ranks (-1: not in my MPI_COMM_WORLD) */
static int *world_map(MPI_Group g, int n)
{
	int *in = malloc(sizeof(int) * (size_t)(n ? n : 1));
	int *out = malloc(sizeof(int) * (size_t)(n ? n : 1));
	int i;

	if (!in || !out) {
		free(in);
		free(out);
		return NULL;
	}
	for (i = 0; i < n; i++)
		in[i] = i;
	if (PMPI_Group_translate_ranks(g, n, in, xs_wgroup, out) != MPI_SUCCESS) {
		free(in);
		free(out);
		return NULL;
	}
	for (i = 0; i < n; i++)
		if (out[i] == MPI_UNDEFINED)
			out[i] = -1;
	free(in);
	return out;
}

static int *comm_world_map(MPI_Comm comm, int remote, int n)
{
	MPI_Group g;
	int *m;

	if (comm == MPI_COMM_WORLD && !remote) {
		int i;

		m = malloc(sizeof(int) * (size_t)n);
		if (m)
			for (i = 0; i < n; i++)
				m[i] = i;
		return m;
	}
	if ((remote ? PMPI_Comm_remote_group(comm, &g) : PMPI_Comm_group(comm, &g)) !=
	    MPI_SUCCESS)
		return NULL;
	m = world_map(g, n);
	PMPI_Group_free(&g);
	return m;
}

static struct xs_comm *comm_create(MPI_Comm comm)
{
	struct xs_comm *c = calloc(1, sizeof(*c));
	int i;

	if (!c)
		return NULL;
	c->comm = comm;
	c->priv = c->local = c->node = c->nodeleaders = MPI_COMM_NULL;
	for (i = 0; i < XS_NBC_LANES; i++)
		c->nb_local[i] = MPI_COMM_NULL;
	c->state = XS_UNSET;
	PMPI_Comm_test_inter(comm, &c->inter);
	PMPI_Comm_rank(comm, &c->rank);
	if (c->inter)
		PMPI_Comm_remote_size(comm, &c->size);
	else
		PMPI_Comm_size(comm, &c->size);
	c->wrank = comm_world_map(comm, c->inter, c->size);
	if (!c->wrank) {
		free(c);
		return NULL;
	}
	c->id = ++next_id;
	if (PMPI_Comm_set_attr(comm, keyval, c) != MPI_SUCCESS) {
		free(c->wrank);
		free(c);
		return NULL;
	}
	c->next = live; /* under the lock with THREAD_MULTIPLE (xs_comm_get) */
	if (live)
		live->prev = c;
	live = c;
	return c;
}

struct xs_comm *xs_comm_get(MPI_Comm comm)
{
	struct xs_comm *c;
	void *v;
	int flag;

	if (!xs_mt && comm == last_comm && last)
		return last;
	if (PMPI_Comm_get_attr(comm, keyval, &v, &flag) != MPI_SUCCESS)
		return NULL;
	if (flag) {
		c = v;
	} else if (xs_mt) {
		pthread_mutex_lock(&lock);
		if (PMPI_Comm_get_attr(comm, keyval, &v, &flag) != MPI_SUCCESS)
			c = NULL;
		else
			c = flag ? v : comm_create(comm);
		pthread_mutex_unlock(&lock);
	} else {
		c = comm_create(comm);
	}
	if (c && !xs_mt) {
		last_comm = comm;
		last = c;
	}
	return c;
}

/*
 * The site of every rank of intracommunicator comm: an Allgather of a 64-bit
 * hash of each rank's site name (0: XSITE_SITE unset).  idx[r] is the index
 * of rank r's site in order of first appearance (so rank 0's site is 0), or
 * -1; idx holds nidx entries, at least the communicator's size (a
 * smaller nidx is the caller's error: -MPI_ERR_ARG); *nsites counts the
 * distinct sites (at most max_sites are told apart).
 * With verify, the name behind each hash is broadcast from the first rank
 * that has it and every rank checks its own name against it (a hash
 * collision must not merge two sites).  Returns a mask of XS_EX_* or a
 * negative MPI error.  Every rank gets the same answer.
 */
int xs_site_exchange(MPI_Comm comm, const char *mysite, int *idx, int nidx, int *nsites,
		     char (*names)[XS_SITE_MAX], int max_sites, int verify)
{
	uint64_t h = *mysite ? xs_hash(mysite) : 0, hashes[XS_MAX_SITES], *all;
	int reps[XS_MAX_SITES], size, rank, r, j, m = 0, flags = 0, rc, ok;

	*nsites = 0; /* set on the error returns too */
	PMPI_Comm_size(comm, &size);
	PMPI_Comm_rank(comm, &rank);
	if (size > nidx)
		return -MPI_ERR_ARG;
	if (max_sites > XS_MAX_SITES)
		max_sites = XS_MAX_SITES;
	all = malloc(sizeof(uint64_t) * (size_t)size);
	if (!all)
		return -MPI_ERR_NO_MEM;
	rc = PMPI_Allgather(&h, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, comm);
	if (rc != MPI_SUCCESS) {
		free(all);
		return -rc;
	}
	for (r = 0; r < size; r++) {
		idx[r] = -1;
		if (!all[r]) {
			flags |= XS_EX_UNSET;
			continue;
		}
		for (j = 0; j < m && hashes[j] != all[r]; j++)
			;
		if (j == m) {
			if (m == max_sites) {
				flags |= XS_EX_TOOMANY;
				continue;
			}
			hashes[m] = all[r];
			reps[m++] = r;
		}
		idx[r] = j;
	}
	free(all);
	*nsites = m;
	if (!verify)
		return flags;
	for (j = 0; j < m; j++) {
		if (rank == reps[j])
			snprintf(names[j], XS_SITE_MAX, "%s", mysite);
		rc = PMPI_Bcast(names[j], XS_SITE_MAX, MPI_CHAR, reps[j], comm);
		if (rc != MPI_SUCCESS)
			return -rc;
	}
	ok = idx[rank] < 0 || !strcmp(names[idx[rank]], mysite);
	rc = PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
	if (rc != MPI_SUCCESS)
		return -rc;
	return ok ? flags : flags | XS_EX_MISMATCH;
}

/* order stream candidates: spread over nodes first (node rank, then node) */
static const int *sort_info;
static int by_node_spread(const void *a, const void *b)
{
	const int *x = &sort_info[2 * (size_t)*(const int *)a];
	const int *y = &sort_info[2 * (size_t)*(const int *)b];

	if (x[0] != y[0])
		return x[0] - y[0];
	if (x[1] != y[1])
		return x[1] - y[1];
	return *(const int *)a - *(const int *)b;
}

static int by_value(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static int sub_world_map(MPI_Comm sub, int **map)
{
	MPI_Group g;
	int n, rc;

	PMPI_Comm_size(sub, &n);
	rc = PMPI_Comm_group(sub, &g);
	if (rc != MPI_SUCCESS)
		return rc;
	*map = world_map(g, n);
	PMPI_Group_free(&g);
	return *map ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

/* a name for logs: the communicator's name if it has one, else comm#ID */
void xs_comm_label(struct xs_comm *c, char *buf, size_t n)
{
	char name[MPI_MAX_OBJECT_NAME];
	int len = 0;

	if (PMPI_Comm_get_name(c->comm, name, &len) == MPI_SUCCESS && len > 0)
		snprintf(buf, n, "%s", name);
	else
		snprintf(buf, n, "comm#%u", c->id);
}

#define CHECK(x) do { rc = (x); if (rc != MPI_SUCCESS) goto fail; } while (0)

int xs_comm_setup(struct xs_comm *c)
{
	int *idx = NULL, *info = NULL, *order = NULL;
	char names[2][XS_SITE_MAX];
	int nsites, flags, verify = !xs_sites_verified, r, s, rc = MPI_SUCCESS;
	int mine[2], nnodes = 1;

	c->state = XS_FALLBACK;
	idx = malloc(sizeof(int) * (size_t)c->size);
	if (!idx)
		return MPI_ERR_NO_MEM;
	/* names were verified at MPI_Init for the ranks of my MPI_COMM_WORLD;
	 * any rank from elsewhere (spawn, connect) makes every rank verify */
	for (r = 0; r < c->size; r++)
		if (c->wrank[r] < 0)
			verify = 1;
	flags = xs_site_exchange(c->comm, xs_site, idx, c->size, &nsites, names, 2, verify);
	if (flags < 0) {
		rc = -flags;
		goto fail;
	}
	c->nsites = nsites;
	if (flags & XS_EX_UNSET) {
		c->nsites = 0;
		c->why = "XSITE_SITE unset on some rank";
		goto out;
	}
	if (flags & XS_EX_TOOMANY) {
		c->nsites = 3;
		c->why = "more than two sites";
		goto out;
	}
	if (flags & XS_EX_MISMATCH) {
		c->why = "two site names behind one hash";
		goto out;
	}
	if (nsites < 2) {
		c->why = "one site";
		goto out;
	}

	/* sites: 0 is the site of rank 0; local ranks in comm rank order */
	c->site_of = idx;
	idx = NULL;
	c->lrank = malloc(sizeof(int) * (size_t)c->size);
	c->n[0] = c->n[1] = 0;
	for (r = 0; r < c->size; r++)
		c->n[c->site_of[r]]++;
	/* two sites found (none over max_sites, none unset): a rank at each */
	if (c->n[0] < 1 || c->n[1] < 1) {
		rc = MPI_ERR_INTERN;
		goto fail;
	}
	c->members[0] = malloc(sizeof(int) * (size_t)c->n[0]);
	c->members[1] = malloc(sizeof(int) * (size_t)c->n[1]);
	if (!c->lrank || !c->members[0] || !c->members[1]) {
		rc = MPI_ERR_NO_MEM;
		goto fail;
	}
	c->n[0] = c->n[1] = 0;
	for (r = 0; r < c->size; r++) {
		s = c->site_of[r];
		c->lrank[r] = c->n[s];
		c->members[s][c->n[s]++] = r;
	}
	c->me = c->site_of[c->rank];

	/* the site-local communicator, the node level inside it */
	CHECK(PMPI_Comm_split(c->comm, c->me, c->rank, &c->local));
	if (xs_cfg.node_size > 0)
		CHECK(PMPI_Comm_split(c->local, c->lrank[c->rank] / xs_cfg.node_size,
				      c->rank, &c->node));
	else
		CHECK(PMPI_Comm_split_type(c->local, MPI_COMM_TYPE_SHARED, c->rank,
					   MPI_INFO_NULL, &c->node));
	PMPI_Comm_size(c->node, &c->node_size);
	PMPI_Comm_rank(c->node, &c->node_rank);
	CHECK(PMPI_Comm_split(c->local, c->node_rank == 0 ? 0 : MPI_UNDEFINED,
			      c->rank, &c->nodeleaders));
	mine[0] = c->node_rank;
	mine[1] = 0;
	if (c->nodeleaders != MPI_COMM_NULL) {
		PMPI_Comm_size(c->nodeleaders, &c->nl_size);
		PMPI_Comm_rank(c->nodeleaders, &c->nl_rank);
		mine[1] = c->nl_rank;
		nnodes = c->nl_size;
	}
	{
		int b[2] = { mine[1], nnodes };

		CHECK(PMPI_Bcast(b, 2, MPI_INT, 0, c->node));
		mine[1] = b[0];
		nnodes = b[1];
	}
	CHECK(sub_world_map(c->local, &c->local_w));
	CHECK(sub_world_map(c->node, &c->node_w));
	if (c->nodeleaders != MPI_COMM_NULL)
		CHECK(sub_world_map(c->nodeleaders, &c->nl_w));
	c->node_level = xs_cfg.node_level == 1 ||
			(xs_cfg.node_level == 2 && nnodes > 1 && nnodes < c->n[c->me]);

	/* every rank's (node rank, node index): the stream ranks of each site */
	info = malloc(sizeof(int) * 2 * (size_t)c->size);
	if (!info) {
		rc = MPI_ERR_NO_MEM;
		goto fail;
	}
	CHECK(PMPI_Allgather(mine, 2, MPI_INT, info, 2, MPI_INT, c->comm));
	c->kmax = c->n[0] < c->n[1] ? c->n[0] : c->n[1];
	if (c->kmax > xs_cfg.streams)
		c->kmax = xs_cfg.streams;
	for (s = 0; s < 2; s++) {
		order = malloc(sizeof(int) * (size_t)c->n[s]);
		c->streams[s] = malloc(sizeof(int) * (size_t)c->kmax);
		if (!order || !c->streams[s]) {
			rc = MPI_ERR_NO_MEM;
			goto fail;
		}
		memcpy(order, c->members[s], sizeof(int) * (size_t)c->n[s]);
		sort_info = info;
		qsort(order, (size_t)c->n[s], sizeof(int), by_node_spread);
		memcpy(c->streams[s], order, sizeof(int) * (size_t)c->kmax);
		qsort(c->streams[s], (size_t)c->kmax, sizeof(int), by_value);
		free(order);
		order = NULL;
	}
	CHECK(xs_race_alloc(c));
	/* split, not dup: a dup would run the program's attribute copy
	 * callbacks on this communicator */
	CHECK(PMPI_Comm_split(c->comm, 0, c->rank, &c->priv));
	c->state = XS_SITEAWARE;
	c->why = NULL;
	if (xs_cfg.verbose && c->rank == 0) {
		char label[MPI_MAX_OBJECT_NAME + 16];

		xs_comm_label(c, label, sizeof(label));
		xs_log("xsite:comm: %s (n=%d): sites %d+%d, %d node(s) at my site, "
		       "%d stream pair(s) for large messages, node level %s",
		       label, c->size, c->n[0], c->n[1], nnodes, c->kmax,
		       c->node_level ? "on" : "off");
	}
out:
	free(idx);
	free(info);
	return MPI_SUCCESS;
fail:
	free(idx);
	free(info);
	free(order);
	c->why = "setup failed";
	return rc;
}
