/*
 * libxsite: accounting of the traffic that crosses the link.
 *
 * Each rank counts what it sends, by destination MPI_COMM_WORLD rank: one
 * row of the job's rank x rank byte matrix, plus bytes and messages to ranks
 * at another site, split into point-to-point and collectives.
 *  - point-to-point: what the wrappers in wrappers.c see (count x type size);
 *  - xsite's own collectives: every message they send, exactly (coll.c
 *    sends through send_to()/isend_to(), which count);
 *  - collectives left to the MPI library, and the site-local phases of
 *    xsite's collectives (themselves PMPI_ collectives): what a textbook
 *    algorithm would send, from the xs_model_* functions below.  That is an
 *    approximation of what the library really does; README.md lists it.
 * At MPI_Finalize the rows and counters go to world rank 0, which writes one
 * JSON record for the job step when XSITE_TRAFFIC_FILE is set: the whole
 * matrix up to XSITE_MATRIX_MAX ranks, its entries that are not 0 (edges,
 * one flat list of i, j, bytes triples) beyond, up to XSITE_EDGES_MAX of
 * them.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static uint64_t *row;         /* bytes sent to each world rank */
static uint64_t cross_b[2];   /* [0] point-to-point, [1] collectives */
static uint64_t cross_m[2];
static uint64_t n_siteaware, n_fallback;
static int mysite = -1;

static inline void add(uint64_t *p, uint64_t v)
{
	if (xs_mt)
		__atomic_fetch_add(p, v, __ATOMIC_RELAXED);
	else
		*p += v;
}

static inline uint64_t get(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

int xs_traffic_init(void)
{
	row = calloc((size_t)xs_wsize, sizeof(uint64_t));
	mysite = xs_wsite[xs_wrank];
	return row ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

static void count_n(int w, uint64_t bytes, uint64_t msgs, int coll)
{
	int s;

	if (w < 0 || w >= xs_wsize || !row || !msgs)
		return;
	add(&row[w], bytes);
	s = xs_wsite[w];
	if (s >= 0 && mysite >= 0 && s != mysite) {
		add(&cross_b[coll], bytes);
		add(&cross_m[coll], msgs);
	}
}

void xs_count(int w, uint64_t bytes, int coll)
{
	count_n(w, bytes, 1, coll);
}

void xs_note_decision(int siteaware)
{
#ifdef XSITE_FAULT_INJECTION
	/* test builds only (libxsite-fault.so): XSITE_FAULT=paths makes the
	 * world's last rank count every decision as the other path, as if it
	 * had taken another algorithm than its communicator's other ranks, to
	 * prove that coll_check's same-path check can fail */
	if (xs_fault("paths") && xs_wrank == xs_wsize - 1)
		siteaware = !siteaware;
#endif
	add(siteaware ? &n_siteaware : &n_fallback, 1);
}

/* dest's world rank in comm, or -1 (MPI_PROC_NULL, not in my world) */
static int world_of(MPI_Comm comm, int dest)
{
	struct xs_comm *c;

	if (dest < 0)
		return -1;
	if (comm == MPI_COMM_WORLD)
		return dest;
	c = xs_comm_get(comm);
	if (!c || dest >= c->size)
		return -1;
	return c->wrank[dest];
}

void xs_count_p2p(MPI_Comm comm, int dest, int count, MPI_Datatype t)
{
	int size = 0;
	int w = world_of(comm, dest);

	if (w < 0)
		return;
	PMPI_Type_size(t, &size);
	xs_count(w, (uint64_t)count * (uint64_t)size, 0);
}

/* ---- persistent sends: request -> (destination, bytes) ----------------- */

struct pentry {
	uint64_t key;
	uint64_t bytes;
	int w;
	int state; /* 0 empty, 1 used, 2 deleted */
};
static struct pentry *ptab;
static size_t pcap, pfill;
static pthread_mutex_t plock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t req_key(MPI_Request r)
{
	uint64_t k = 0;
	size_t n = sizeof(MPI_Request); /* the handle: a pointer or an int */

	memcpy(&k, &r, n < sizeof(k) ? n : sizeof(k));
	return k;
}

static size_t slot(uint64_t k, size_t cap)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (size_t)k & (cap - 1);
}

static struct pentry *pfind(uint64_t k, int insert)
{
	size_t i, first = (size_t)-1;

	if (!pcap)
		return NULL;
	for (i = slot(k, pcap);; i = (i + 1) & (pcap - 1)) {
		struct pentry *e = &ptab[i];

		if (e->state == 1 && e->key == k)
			return e;
		if (e->state == 2 && first == (size_t)-1)
			first = i;
		if (e->state == 0) {
			if (!insert)
				return NULL;
			if (first == (size_t)-1) {
				first = i;
				pfill++;
			}
			return &ptab[first];
		}
	}
}

static int pgrow(void)
{
	struct pentry *old = ptab;
	size_t i, oldcap = pcap;

	pcap = pcap ? pcap * 2 : 64;
	ptab = calloc(pcap, sizeof(*ptab));
	if (!ptab) {
		ptab = old;
		pcap = oldcap;
		return -1;
	}
	pfill = 0;
	for (i = 0; i < oldcap; i++)
		if (old[i].state == 1) {
			struct pentry *e = pfind(old[i].key, 1);

			*e = old[i];
		}
	free(old);
	return 0;
}

void xs_persist_add(MPI_Request req, MPI_Comm comm, int dest, int count,
		    MPI_Datatype t)
{
	struct pentry *e;
	int size = 0, w = world_of(comm, dest);

	if (w < 0)
		return;
	PMPI_Type_size(t, &size);
	if (xs_mt)
		pthread_mutex_lock(&plock);
	if ((pfill + 1) * 2 > pcap && pgrow() < 0)
		goto out;
	e = pfind(req_key(req), 1);
	e->key = req_key(req);
	e->state = 1;
	e->w = w;
	e->bytes = (uint64_t)count * (uint64_t)size;
out:
	if (xs_mt)
		pthread_mutex_unlock(&plock);
}

void xs_persist_start(MPI_Request req)
{
	struct pentry *e;
	uint64_t bytes = 0;
	int w = -1;

	if (xs_mt)
		pthread_mutex_lock(&plock);
	e = pfind(req_key(req), 0);
	if (e) {
		w = e->w;
		bytes = e->bytes;
	}
	if (xs_mt)
		pthread_mutex_unlock(&plock);
	if (w >= 0)
		xs_count(w, bytes, 0);
}

void xs_persist_free(MPI_Request req)
{
	struct pentry *e;

	if (xs_mt)
		pthread_mutex_lock(&plock);
	e = pfind(req_key(req), 0);
	if (e)
		e->state = 2;
	if (xs_mt)
		pthread_mutex_unlock(&plock);
}

/* ---- the fallback model ------------------------------------------------ */

static void to(const int *wmap, int r, uint64_t bytes)
{
	xs_count(wmap[r], bytes, 1);
}

/* dissemination: ceil(log2 p) zero-byte messages to rank + 2^i */
void xs_model_barrier(const int *wmap, int size, int rank)
{
	int d;

	for (d = 1; d < size; d <<= 1)
		to(wmap, (rank + d) % size, 0);
}

/* binomial tree from root: bytes to each child */
void xs_model_bcast(const int *wmap, int size, int rank, int root, uint64_t bytes)
{
	int vr = (rank - root + size) % size, mask = 1;

	while (mask < size && !(vr & mask))
		mask <<= 1;
	for (mask >>= 1; mask > 0; mask >>= 1)
		if (vr + mask < size)
			to(wmap, (vr + mask + root) % size, bytes);
}

/* binomial tree to root: bytes to the parent */
void xs_model_reduce(const int *wmap, int size, int rank, int root, uint64_t bytes)
{
	int vr = (rank - root + size) % size;

	if (vr)
		to(wmap, (vr - (vr & -vr) + root) % size, bytes);
}

/* below XSITE_LARGE_MSG: binomial reduce to 0 + binomial bcast from 0;
 * from it: ring (reduce-scatter + allgather), 2(p-1) messages of bytes/p to
 * the right neighbour */
void xs_model_allreduce(const int *wmap, int size, int rank, uint64_t bytes)
{
	if (size < 2)
		return;
	if (bytes < (uint64_t)xs_cfg.large_msg) {
		xs_model_reduce(wmap, size, rank, 0, bytes);
		xs_model_bcast(wmap, size, rank, 0, bytes);
		return;
	}
	count_n(wmap[(rank + 1) % size], 2 * bytes * (uint64_t)(size - 1) / (uint64_t)size,
		2 * (uint64_t)(size - 1), 1);
}

/* linear: each rank's block to the root */
void xs_model_gather(const int *wmap, int size, int rank, int root, uint64_t block)
{
	(void)size;
	if (rank != root)
		to(wmap, root, block);
}

/* linear: the root sends each rank its block */
void xs_model_scatter(const int *wmap, int size, int rank, int root, uint64_t block)
{
	int r;

	if (rank == root)
		for (r = 0; r < size; r++)
			if (r != root)
				to(wmap, r, block);
}

/* ring: p-1 blocks to the right neighbour */
void xs_model_allgather(const int *wmap, int size, int rank, uint64_t block)
{
	if (size > 1)
		count_n(wmap[(rank + 1) % size], block * (uint64_t)(size - 1),
			(uint64_t)(size - 1), 1);
}

/* pairwise: one block to every other rank */
void xs_model_alltoall(const int *wmap, int size, int rank, uint64_t block)
{
	int r;

	for (r = 0; r < size; r++)
		if (r != rank)
			to(wmap, r, block);
}

/* pairwise: bytes[r] to every other rank r (Alltoallv) */
void xs_model_alltoallv(const int *wmap, int size, int rank, const uint64_t *bytes)
{
	int r;

	for (r = 0; r < size; r++)
		if (r != rank && bytes[r])
			to(wmap, r, bytes[r]);
}

/* linear chain: rank r's partial result to rank r + 1 (Scan, Exscan) */
void xs_model_scan(const int *wmap, int size, int rank, uint64_t bytes)
{
	if (rank < size - 1)
		to(wmap, rank + 1, bytes);
}

/* the whole vector reduced to rank 0 (binomial), then each rank's block
 * from rank 0 (linear); bytes: each rank's block */
void xs_model_reduce_scatter(const int *wmap, int size, int rank, const uint64_t *bytes)
{
	uint64_t total = 0;
	int r;

	for (r = 0; r < size; r++)
		total += bytes[r];
	xs_model_reduce(wmap, size, rank, 0, total);
	xs_model_scatterv(wmap, size, rank, 0, bytes);
}

void xs_model_gatherv(const int *wmap, int size, int rank, int root, const uint64_t *bytes)
{
	(void)size;
	if (rank != root && bytes[rank])
		to(wmap, root, bytes[rank]);
}

void xs_model_scatterv(const int *wmap, int size, int rank, int root, const uint64_t *bytes)
{
	int r;

	if (rank == root)
		for (r = 0; r < size; r++)
			if (r != root && bytes[r])
				to(wmap, r, bytes[r]);
}

void xs_model_allgatherv(const int *wmap, int size, int rank, const uint64_t *bytes)
{
	int r;

	if (bytes[rank])
		for (r = 0; r < size; r++)
			if (r != rank)
				to(wmap, r, bytes[rank]);
}

/* ---- the record -------------------------------------------------------- */

struct rec {
	uint64_t cross_b[2], cross_m[2];
	int32_t site;
	char host[XS_HOST_MAX];
};

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* a Slurm id as a JSON number, a string ("batch", "extern") or null */
static void json_id(FILE *f, const char *v)
{
	const char *p;

	if (!v || !*v) {
		fputs("null", f);
		return;
	}
	for (p = v; *p >= '0' && *p <= '9'; p++)
		;
	if (!*p && p - v < 19)
		fputs(v, f);
	else
		json_str(f, v);
}

/* %j -> SLURM_JOB_ID, %s -> SLURM_STEP_ID ("none" outside Slurm), %% -> %;
 * nothing else is expanded (there is no %r: one file per step, by rank 0) */
static int expand(const char *pat, char *out, size_t n)
{
	size_t o = 0;

	for (; *pat; pat++) {
		const char *ins = NULL;
		char one[2] = { *pat, 0 };

		if (*pat == '%' && (pat[1] == 'j' || pat[1] == 's' || pat[1] == '%')) {
			pat++;
			if (*pat == 'j')
				ins = getenv("SLURM_JOB_ID");
			else if (*pat == 's')
				ins = getenv("SLURM_STEP_ID");
			else
				ins = "%";
			if (!ins || !*ins)
				ins = "none";
		} else {
			ins = one;
		}
		for (; *ins; ins++) {
			if (o + 1 >= n)
				return -1;
			out[o++] = *ins;
		}
	}
	out[o] = '\0';
	return 0;
}

/*
 * The record's traffic detail: the whole matrix (mat, n x n), or, beyond
 * XSITE_MATRIX_MAX ranks, each rank's entries that are not 0 (edges: the
 * pairs (to, bytes) of rank i from edges[2 * first[i]], nnz[i] of them).
 * Both NULL: neither is written.
 */
struct detail {
	uint64_t *mat;
	uint64_t *edges;
	int *nnz, *first;
};

static void write_json(FILE *f, const struct rec *recs, const struct detail *d,
		       const uint64_t tot_b[2], const uint64_t tot_m[2])
{
	const uint64_t *mat = d->mat;
	int n = xs_wsize, i, j, first;

	fprintf(f, "{\"version\":1,\"job\":");
	json_id(f, getenv("SLURM_JOB_ID"));
	fprintf(f, ",\"step\":");
	json_id(f, getenv("SLURM_STEP_ID"));
	fprintf(f, ",\"ranks\":%d,\"sites\":{", n);
	for (i = 0; i < xs_nsites; i++) {
		fprintf(f, "%s", i ? "," : "");
		json_str(f, xs_site_names[i]);
		fputs(":[", f);
		for (j = 0, first = 1; j < n; j++)
			if (xs_wsite[j] == i) {
				fprintf(f, "%s%d", first ? "" : ",", j);
				first = 0;
			}
		fputc(']', f);
	}
	fprintf(f, "},\"cross\":{\"bytes\":%llu,\"messages\":%llu,"
		"\"p2p_bytes\":%llu,\"p2p_messages\":%llu,"
		"\"coll_bytes\":%llu,\"coll_messages\":%llu},",
		(unsigned long long)tot_b[0] + tot_b[1],
		(unsigned long long)tot_m[0] + tot_m[1],
		(unsigned long long)tot_b[0], (unsigned long long)tot_m[0],
		(unsigned long long)tot_b[1], (unsigned long long)tot_m[1]);
	fprintf(f, "\"collectives\":\"%s\",\"large_msg\":%ld,\"streams\":%d,\n",
		xs_cfg.coll ? "site-aware" : "off", xs_cfg.large_msg, xs_cfg.streams);
	fputs("\"per_rank\":[", f);
	for (i = 0; i < n; i++) {
		fprintf(f, "%s\n {\"rank\":%d,\"site\":", i ? "," : "", i);
		if (recs[i].site >= 0)
			json_str(f, xs_site_names[recs[i].site]);
		else
			fputs("null", f);
		fputs(",\"host\":", f);
		json_str(f, recs[i].host);
		fprintf(f, ",\"cross_bytes\":%llu,\"cross_messages\":%llu}",
			(unsigned long long)recs[i].cross_b[0] + recs[i].cross_b[1],
			(unsigned long long)recs[i].cross_m[0] + recs[i].cross_m[1]);
	}
	fputs("],\n\"matrix\":", f);
	if (!mat) {
		fputs("null", f);
	} else {
		fputc('[', f);
		for (i = 0; i < n; i++) {
			fprintf(f, "%s\n [", i ? "," : "");
			for (j = 0; j < n; j++)
				fprintf(f, "%s%llu", j ? "," : "",
					(unsigned long long)mat[(size_t)i * (size_t)n + (size_t)j]);
			fputc(']', f);
		}
		fputc(']', f);
	}
	fputs(",\n\"edges\":", f);
	if (!d->edges) {
		fputs("null", f);
	} else {
		first = 1;
		fputc('[', f);
		for (i = 0; i < n; i++) {
			const uint64_t *e = d->edges + 2 * (size_t)d->first[i];

			for (j = 0; j < d->nnz[i]; j++, e += 2) {
				fprintf(f, "%s%d,%llu,%llu", first ? "" : ",", i,
					(unsigned long long)e[0], (unsigned long long)e[1]);
				first = 0;
			}
			if (d->nnz[i])
				fputc('\n', f);
		}
		fputc(']', f);
	}
	fputs("}\n", f);
}

/* the record, to a temporary name (O_EXCL|O_NOFOLLOW, 0640), then renamed */
static void write_record(const struct rec *recs, const struct detail *d,
			 const uint64_t tot_b[2], const uint64_t tot_m[2])
{
	char path[4096], tmp[4096 + 32];
	FILE *f;
	int fd, err = 0;

	if (expand(xs_cfg.traffic, path, sizeof(path)) < 0) {
		xs_log("xsite: XSITE_TRAFFIC_FILE: path too long: %s", xs_cfg.traffic);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0) {
		xs_log("xsite: XSITE_TRAFFIC_FILE: cannot create %s: %s", tmp,
		       strerror(errno));
		return;
	}
	f = fdopen(fd, "w");
	if (!f) {
		err = errno;
		close(fd);
		goto fail;
	}
	write_json(f, recs, d, tot_b, tot_m);
	if (fflush(f) != 0 || ferror(f) || fsync(fd) != 0)
		err = errno ? errno : EIO;
	if (fclose(f) != 0 && !err)
		err = errno;
	if (err)
		goto fail;
	if (rename(tmp, path) != 0) {
		err = errno;
		goto fail;
	}
	if (xs_cfg.verbose)
		xs_log("xsite:traffic: record written to %s", path);
	return;
fail:
	xs_log("xsite: XSITE_TRAFFIC_FILE: cannot write %s: %s", path, strerror(err));
	unlink(tmp);
}

/*
 * Beyond XSITE_MATRIX_MAX ranks: each rank's entries of the matrix that are
 * not 0, gathered at world rank 0 (into d->nnz, d->first, allocated there)
 * as (to, bytes) pairs when there are at most XSITE_EDGES_MAX in all;
 * d->edges stays NULL past it, or when a rank has no memory for them: every
 * rank learns it from one broadcast and leaves the gather out.  Collective
 * on MPI_COMM_WORLD.
 */
static int gather_edges(struct detail *d)
{
	uint64_t *mine = NULL;
	int nmine = 0, take = 0, *counts = NULL, i, j, rc;
	long total = 0;

	for (j = 0; j < xs_wsize; j++)
		nmine += row[j] != 0;
	mine = calloc(2 * (size_t)(nmine ? nmine : 1), sizeof(uint64_t));
	if (!mine)
		nmine = -1;   /* rank 0 sees it, and nothing is gathered */
	rc = PMPI_Gather(&nmine, 1, MPI_INT, d->nnz, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (rc != MPI_SUCCESS)
		goto out;
	if (xs_wrank == 0 && d->nnz && d->first) {
		for (i = 0; i < xs_wsize && total <= xs_cfg.edges_max; i++) {
			if (d->nnz[i] < 0)   /* that rank had no memory */
				break;
			d->first[i] = (int)total;
			total += d->nnz[i];
		}
		take = i == xs_wsize && total <= xs_cfg.edges_max;
		if (take) {
			counts = malloc((2 * (size_t)xs_wsize + 1) * sizeof(int));
			d->edges = malloc(2 * (size_t)(total ? total : 1) * sizeof(uint64_t));
			take = counts && d->edges;
		}
		if (!take && total <= xs_cfg.edges_max)
			xs_log("xsite:traffic: out of memory for the record's edges (rank %d)",
			       i < xs_wsize ? i : 0);
		else if (!take && xs_cfg.verbose)
			xs_log("xsite:traffic: more than XSITE_EDGES_MAX (%d) entries of the matrix "
			       "are not 0: the record has none", xs_cfg.edges_max);
	}
	rc = PMPI_Bcast(&take, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (rc != MPI_SUCCESS || !take || !mine)   /* (no mine: rank 0 saw -1) */
		goto out;
	/* (bounded by what was counted: a thread of an erroneous program may
	 * still be sending) */
	for (j = 0, i = 0; j < xs_wsize && i < 2 * nmine; j++)
		if (row[j]) {
			mine[i++] = (uint64_t)j;
			mine[i++] = row[j];
		}
	if (counts && d->nnz && d->first)   /* rank 0 */
		for (i = 0; i < xs_wsize; i++) {
			counts[i] = 2 * d->nnz[i];                 /* receive counts */
			counts[xs_wsize + i] = 2 * d->first[i];    /* displacements */
		}
	rc = PMPI_Gatherv(mine, 2 * nmine, MPI_UINT64_T, d->edges, counts,
			  counts ? counts + xs_wsize : NULL, MPI_UINT64_T, 0, MPI_COMM_WORLD);
out:
	free(mine);
	free(counts);
	if (xs_wrank == 0 && (!take || rc != MPI_SUCCESS)) {
		free(d->edges);
		d->edges = NULL;
	}
	return rc;
}

void xs_traffic_finalize(void)
{
	struct rec me, *recs = NULL;
	struct detail d = { NULL, NULL, NULL, NULL };
	uint64_t tot_b[2] = { 0, 0 }, tot_m[2] = { 0, 0 };
	int want = 0, matrix, i;

	/* what rank 0 wants: 0 nothing (or no memory for it), 1 the totals
	 * and the matrix up to XSITE_MATRIX_MAX ranks, 2 the edges beyond */
	matrix = xs_wsize <= xs_cfg.matrix_max;
	if (xs_wrank == 0 && (xs_cfg.traffic != NULL || xs_cfg.verbose)) {
		want = matrix || xs_cfg.edges_max == 0 || !xs_cfg.traffic ? 1 : 2;
		recs = calloc((size_t)xs_wsize, sizeof(*recs));
		if (matrix)
			d.mat = calloc((size_t)xs_wsize * (size_t)xs_wsize, sizeof(uint64_t));
		if (want == 2) {
			d.nnz = calloc((size_t)xs_wsize, sizeof(int));
			d.first = calloc((size_t)xs_wsize, sizeof(int));
		}
		if (!recs || (matrix && !d.mat) || (want == 2 && (!d.nnz || !d.first))) {
			xs_log("xsite:traffic: out of memory for the record");
			want = 0;
		}
	}
	if (PMPI_Bcast(&want, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS || !want)
		goto out;
	memset(&me, 0, sizeof(me));
	for (i = 0; i < 2; i++) {
		me.cross_b[i] = get(&cross_b[i]);
		me.cross_m[i] = get(&cross_m[i]);
	}
	me.site = mysite;
	if (gethostname(me.host, sizeof(me.host) - 1) != 0)
		strcpy(me.host, "?");
	if (PMPI_Gather(&me, sizeof(me), MPI_BYTE, recs, sizeof(me), MPI_BYTE, 0,
			MPI_COMM_WORLD) != MPI_SUCCESS)
		goto out;
	if (matrix && PMPI_Gather(row, xs_wsize, MPI_UINT64_T, d.mat, xs_wsize,
				  MPI_UINT64_T, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
		goto out;
	if (want == 2 && gather_edges(&d) != MPI_SUCCESS)
		goto out;
	if (xs_wrank != 0 || !recs)
		goto out;
	for (i = 0; i < xs_wsize; i++) {
		tot_b[0] += recs[i].cross_b[0];
		tot_b[1] += recs[i].cross_b[1];
		tot_m[0] += recs[i].cross_m[0];
		tot_m[1] += recs[i].cross_m[1];
	}
	if (xs_cfg.verbose)
		xs_log("xsite:traffic: %d ranks, %d site(s): %llu bytes in %llu messages "
		       "crossed the link (point-to-point %llu bytes, collectives %llu bytes)",
		       xs_wsize, xs_nsites, (unsigned long long)tot_b[0] + tot_b[1],
		       (unsigned long long)tot_m[0] + tot_m[1],
		       (unsigned long long)tot_b[0], (unsigned long long)tot_b[1]);
	if (xs_cfg.traffic)
		write_record(recs, &d, tot_b, tot_m);
out:
	free(recs);
	free(d.mat);
	free(d.edges);
	free(d.nnz);
	free(d.first);
	free(row);
	row = NULL;
	free(ptab);
	ptab = NULL;
	pcap = pfill = 0;
}

int xsite_get_stats(struct xsite_stats *s)
{
	if (!xs_ready || !s)
		return -1;
	s->p2p_bytes = get(&cross_b[0]);
	s->p2p_messages = get(&cross_m[0]);
	s->coll_bytes = get(&cross_b[1]);
	s->coll_messages = get(&cross_m[1]);
	s->cross_bytes = s->p2p_bytes + s->coll_bytes;
	s->cross_messages = s->p2p_messages + s->coll_messages;
	s->coll_siteaware = get(&n_siteaware);
	s->coll_fallback = get(&n_fallback);
	return 0;
}

const char *xsite_version(void)
{
	return XSITE_VERSION;
}
