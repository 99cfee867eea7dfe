/*
 * coll_check: libxsite's collectives against the MPI library's own.
 *
 *   mpirun -np 4 -x XSITE_SITE=alpha -x LD_PRELOAD=libxsite.so coll_check -r : \
 *          -np 4 -x XSITE_SITE=beta  -x LD_PRELOAD=libxsite.so coll_check -r
 *
 * Every case runs the collective twice on the same input: through MPI_ (which
 * libxsite intercepts when it is preloaded or linked) and through PMPI_ (the
 * MPI library itself, the reference), and compares the results: integers,
 * logical and location results exactly, float and double within a relative
 * tolerance (the MPI standard does not promise bitwise-equal floating-point
 * reductions across algorithms; libxsite combines partial results in a
 * different order).  It also checks, through xsite_get_stats(), that the
 * case took the path it should: site-aware on communicators that span two
 * sites, the MPI library's own elsewhere (one site, intercommunicator,
 * non-commutative op, count 0, XSITE_COLL=off).  The nonblocking forms
 * (Iallreduce, Ireduce, Ibcast, Ibarrier) run the cases of the blocking ones
 * through MPI_I... and are compared with the library's blocking form; a few
 * cases more put several in flight at once (t_nb_together, t_nb_many,
 * t_nb_progress).
 *
 * Output: TAP from world rank 0, one line per case group, e.g.
 *   ok 12 - allreduce SUM double 1024 world [site-aware]
 * then the plan.  Exit status 1 if any case failed.
 *
 * Options:
 *   -r   require libxsite: fail when it is not loaded (without -r, the path
 *        checks are skipped when it is absent: a plain MPI self-check)
 *   -q   quick: no 1 MiB and 4 MiB cases, fewer shapes (for a slow link)
 *   -t S abort after S seconds (a hung collective must not hang a test)
 *   -c C only the cases of collective C (allreduce, reduce, bcast, barrier,
 *        allgather, gather, scatter, alltoall, reduce_scatter_block,
 *        reduce_scatter, allgatherv, scan, exscan, iallreduce, ireduce, ibcast,
 *        ibarrier)
 *   -m   MPI_Init_thread(MPI_THREAD_MULTIPLE): libxsite must fall back
 *   -a   the hand-off is on (XSITE_HANDOFF > 0): a case that may be
 *        site-aware may also have run the MPI library's collective; one that
 *        must fall back still must.  In every mode all the ranks of a
 *        communicator must have taken the same path in each case.  Adds a
 *        case of 200 calls of one allreduce, past the call at which
 *        libxsite races the two algorithms again.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xsite.h"

#define SENTINEL 0xA5
#define KiB 1024L
#define MiB (1024L * 1024L)

static int wrank, wsize, quick, require, any_path;
static const char *only; /* -c */
static int ntest, nfail;
static int (*get_stats)(struct xsite_stats *);
static int coll_off;
static size_t large_msg = 65536; /* XSITE_LARGE_MSG: a number of bytes, K, M or G */

/* ---- types -------------------------------------------------------------- */

enum kind { K_INT, K_DOUBLE, K_FLOAT, K_LL, K_UCHAR, K_DOUBLE_INT, K_2INT,
	    K_VEC, K_MAT, K_C4 };

struct ty {
	const char *name;
	MPI_Datatype dt;
	enum kind kind;
	MPI_Aint ext;
	int size;
};

static struct ty T_INT, T_DOUBLE, T_FLOAT, T_LL, T_UCHAR, T_DINT, T_2INT, T_VEC,
	T_MAT, T_C4;

static void ty_init(struct ty *t, const char *name, MPI_Datatype dt, enum kind k)
{
	MPI_Aint lb;

	t->name = name;
	t->dt = dt;
	t->kind = k;
	MPI_Type_get_extent(dt, &lb, &t->ext);
	MPI_Type_size(dt, &t->size);
}

static void types_init(void)
{
	MPI_Datatype vec, mat, c4;

	/* two ints out of every three: a derived type with holes */
	MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
	MPI_Type_commit(&vec);
	MPI_Type_contiguous(4, MPI_INT, &mat);
	MPI_Type_commit(&mat);
	MPI_Type_contiguous(4, MPI_INT, &c4);
	MPI_Type_commit(&c4);
	ty_init(&T_INT, "int", MPI_INT, K_INT);
	ty_init(&T_DOUBLE, "double", MPI_DOUBLE, K_DOUBLE);
	ty_init(&T_FLOAT, "float", MPI_FLOAT, K_FLOAT);
	ty_init(&T_LL, "long_long", MPI_LONG_LONG, K_LL);
	ty_init(&T_UCHAR, "unsigned_char", MPI_UNSIGNED_CHAR, K_UCHAR);
	ty_init(&T_DINT, "double_int", MPI_DOUBLE_INT, K_DOUBLE_INT);
	ty_init(&T_2INT, "2int", MPI_2INT, K_2INT);
	ty_init(&T_VEC, "vector", vec, K_VEC);
	ty_init(&T_MAT, "mat2x2", mat, K_MAT);
	ty_init(&T_C4, "contig4", c4, K_C4);
}

/* the test cannot go on: say why, end the job */
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("coll_check: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	MPI_Abort(MPI_COMM_WORLD, 2);
	exit(2); /* MPI_Abort does not return */
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n);

	if (!p)
		die("out of memory (%zu bytes)", n);
	return p;
}

/* count elements of t, and 64 bytes past them, all SENTINEL */
static void *alloc_buf(const struct ty *t, long count)
{
	size_t n = (size_t)(count > 0 ? count : 1) * (size_t)t->ext + 64;

	return memset(xmalloc(n), SENTINEL, n);
}

/* value classes for reduction inputs */
enum vclass { V_ARITH, V_PROD, V_BITS, V_BOOL, V_LOC, V_DATA };

static unsigned mix(unsigned a, unsigned b, unsigned c)
{
	unsigned h = a * 2654435761u ^ (b + 0x9e3779b9u + (a << 6)) ^ (c * 40503u);

	h ^= h >> 15;
	h *= 2246822519u;
	h ^= h >> 13;
	return h;
}

/* an int for element i of rank r in class v */
static int ival(enum vclass v, int r, long i, unsigned seed)
{
	unsigned h = mix((unsigned)r, (unsigned)i, seed);

	switch (v) {
	case V_ARITH: return (int)(h % 2001) - 1000;
	case V_PROD: return (int)(h % 3) + 1 - (h % 7 == 0 ? 2 : 0); /* -1..3 */
	case V_BITS: return (int)h;
	case V_BOOL: return h % 5 != 0;
	case V_LOC: return (int)(h % 5);
	case V_DATA: return r * 1000003 + (int)i;
	}
	return 0;
}

static double dval(enum vclass v, int r, long i, unsigned seed)
{
	unsigned h = mix((unsigned)r, (unsigned)i, seed);

	switch (v) {
	case V_PROD: return 0.9 + (h % 20001) / 100000.0;
	case V_LOC: return (double)(h % 5);
	case V_DATA: return r * 1e6 + (double)i + 0.25;
	default: return 0.5 + (h % 100003) / 100003.0;
	}
}

/* the data of count elements of t at buf (holes left alone) */
static void fill(void *buf, const struct ty *t, long count, int r, enum vclass v,
		 unsigned seed)
{
	long i, j;

	for (i = 0; i < count; i++) {
		char *e = (char *)buf + i * t->ext;

		switch (t->kind) {
		case K_INT: ((int *)e)[0] = ival(v, r, i, seed); break;
		case K_LL: ((long long *)e)[0] = (long long)ival(v, r, i, seed) *
					(v == V_ARITH ? 1000003LL : 1); break;
		case K_UCHAR: /* no overflow: Open MPI 4.1's op/avx saturates 8-bit
			       * sums, so overflowing results depend on the algorithm */
			((unsigned char *)e)[0] =
				v == V_ARITH ? (unsigned char)(mix((unsigned)r, (unsigned)i, seed) %
							       (unsigned)(256 / (wsize + 1))) :
				v == V_PROD ? (unsigned char)(r < 2 ? 1 + mix((unsigned)r, (unsigned)i, seed) % 3 : 1) :
				(unsigned char)ival(v, r, i, seed);
			break;
		case K_DOUBLE: ((double *)e)[0] = dval(v, r, i, seed); break;
		case K_FLOAT: ((float *)e)[0] = (float)dval(v, r, i, seed); break;
		case K_DOUBLE_INT: {
			struct { double v; int i; } *p = (void *)e;
			p->v = dval(v == V_DATA ? V_DATA : V_LOC, r, i, seed);
			p->i = v == V_DATA ? (int)i : r;
			break;
		}
		case K_2INT:
			((int *)e)[0] = ival(v == V_DATA ? V_DATA : V_LOC, r, i, seed);
			((int *)e)[1] = v == V_DATA ? (int)i : r;
			break;
		case K_VEC:
			((int *)e)[0] = ival(v, r, 2 * i, seed);
			((int *)e)[2] = ival(v, r, 2 * i + 1, seed);
			break;
		case K_MAT: /* a 2x2 matrix mod 1009 */
			for (j = 0; j < 4; j++)
				((int *)e)[j] = (int)(mix((unsigned)r, (unsigned)(4 * i + j), seed) % 1009);
			break;
		case K_C4:
			for (j = 0; j < 4; j++)
				((int *)e)[j] = ival(v, r, 4 * i + j, seed);
			break;
		}
	}
}

/* 0 if equal; else 1 with a description of the first difference */
static int compare(const void *a, const void *b, const struct ty *t, long count,
		   char *diag, size_t n)
{
	long i;

	for (i = 0; i < count; i++) {
		const char *x = (const char *)a + i * t->ext, *y = (const char *)b + i * t->ext;

		switch (t->kind) {
		case K_DOUBLE:
		case K_FLOAT: { /* within a relative tolerance, by the type's precision */
			int f = t->kind == K_FLOAT, digits = f ? 9 : 17;
			double u = f ? *(const float *)x : *(const double *)x;
			double v = f ? *(const float *)y : *(const double *)y;

			if (fabs(u - v) > (f ? 1e-5f : 1e-12) * fmax(1.0, fmax(fabs(u), fabs(v)))) {
				snprintf(diag, n, "element %ld: %.*g, expected %.*g", i, digits, u,
					 digits, v);
				return 1;
			}
			break;
		}
		case K_DOUBLE_INT: {
			const struct { double v; int i; } *p = (const void *)x, *q = (const void *)y;

			if (p->v != q->v || p->i != q->i) {
				snprintf(diag, n, "element %ld: (%g, %d), expected (%g, %d)", i,
					 p->v, p->i, q->v, q->i);
				return 1;
			}
			break;
		}
		default:
			if (memcmp(x, y, (size_t)t->ext) != 0) {
				snprintf(diag, n, "element %ld differs (first int %d, expected %d)",
					 i, *(const int *)x, *(const int *)y);
				return 1;
			}
		}
	}
	return 0;
}

/* ---- user ops ----------------------------------------------------------- */

static void usersum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	double *a = in, *b = inout;
	int i;

	(void)dt;
	for (i = 0; i < *len; i++)
		b[i] += a[i];
}

/* 2x2 matrix product mod 1009: associative, not commutative */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	int *a = in, *b = inout, i, c[4];

	(void)dt;
	for (i = 0; i < *len; i++, a += 4, b += 4) {
		c[0] = (a[0] * b[0] + a[1] * b[2]) % 1009;
		c[1] = (a[0] * b[1] + a[1] * b[3]) % 1009;
		c[2] = (a[2] * b[0] + a[3] * b[2]) % 1009;
		c[3] = (a[2] * b[1] + a[3] * b[3]) % 1009;
		memcpy(b, c, sizeof(c));
	}
}

/* sum of the two ints of each element of the vector type (holes untouched) */
static void vecsum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	MPI_Aint lb, ext;
	int i;

	MPI_Type_get_extent(*dt, &lb, &ext);
	for (i = 0; i < *len; i++) {
		int *a = (int *)((char *)in + i * ext), *b = (int *)((char *)inout + i * ext);

		b[0] += a[0];
		b[2] += a[2];
	}
}

static MPI_Op OP_USERSUM, OP_MATMUL, OP_VECSUM;

struct opty {
	const char *op;
	MPI_Op mop;
	const struct ty *t;
	enum vclass v;
	int commutative;
	int user; /* a user-defined op */
};

static struct opty combos[64];
static int ncombos;

static void add_combo(const char *op, MPI_Op mop, const struct ty *t, enum vclass v,
		      int commutative)
{
	struct opty *o = &combos[ncombos++];

	o->op = op;
	o->mop = mop;
	o->t = t;
	o->v = v;
	o->commutative = commutative;
	o->user = mop == OP_USERSUM || mop == OP_MATMUL || mop == OP_VECSUM;
}

static const struct opty *combo(const char *op, const char *type)
{
	int i;

	for (i = 0; i < ncombos; i++)
		if (!strcmp(combos[i].op, op) && !strcmp(combos[i].t->name, type))
			return &combos[i];
	die("no combo %s %s", op, type);
	return NULL;
}

static void combos_init(void)
{
	const struct ty *arith[] = { &T_INT, &T_DOUBLE, &T_FLOAT, &T_LL, &T_UCHAR };
	const struct ty *bits[] = { &T_INT, &T_LL, &T_UCHAR };
	int i;

	MPI_Op_create(usersum, 1, &OP_USERSUM);
	MPI_Op_create(matmul, 0, &OP_MATMUL);
	MPI_Op_create(vecsum, 1, &OP_VECSUM);
	for (i = 0; i < 5; i++) {
		add_combo("SUM", MPI_SUM, arith[i], V_ARITH, 1);
		add_combo("PROD", MPI_PROD, arith[i], V_PROD, 1);
		add_combo("MIN", MPI_MIN, arith[i], V_ARITH, 1);
		add_combo("MAX", MPI_MAX, arith[i], V_ARITH, 1);
	}
	for (i = 0; i < 3; i++) {
		add_combo("LAND", MPI_LAND, bits[i], V_BOOL, 1);
		add_combo("BOR", MPI_BOR, bits[i], V_BITS, 1);
		add_combo("BXOR", MPI_BXOR, bits[i], V_BITS, 1);
	}
	add_combo("MAXLOC", MPI_MAXLOC, &T_DINT, V_LOC, 1);
	add_combo("MINLOC", MPI_MINLOC, &T_DINT, V_LOC, 1);
	add_combo("MAXLOC", MPI_MAXLOC, &T_2INT, V_LOC, 1);
	add_combo("MINLOC", MPI_MINLOC, &T_2INT, V_LOC, 1);
	add_combo("usersum", OP_USERSUM, &T_DOUBLE, V_ARITH, 1);
	add_combo("matmul", OP_MATMUL, &T_MAT, V_DATA, 0);
	/* Open MPI defines the built-in ops on predefined types only: the
	 * derived vector type is reduced with a (commutative) user op */
	add_combo("vecsum", OP_VECSUM, &T_VEC, V_ARITH, 1);
}

/* ---- communicator shapes ------------------------------------------------ */

struct shape {
	const char *name;
	MPI_Comm comm;  /* MPI_COMM_NULL where this rank is not a member */
	int two_sites;  /* the communicator spans exactly two sites */
	int in_order;   /* ... and the ranks of the first come first */
	int inter;
	int size, rank;
};

static struct shape shapes[8];
static int nshapes;
static int mysite; /* index of my site among the job's, -1 without XSITE_SITE */

static struct shape *shape(const char *name)
{
	int i;

	for (i = 0; i < nshapes; i++)
		if (!strcmp(shapes[i].name, name))
			return &shapes[i];
	return NULL;
}

static void add_shape(const char *name, MPI_Comm comm, int inter)
{
	struct shape *s = &shapes[nshapes++];

	s->name = name;
	s->comm = comm;
	s->inter = inter;
	s->two_sites = s->in_order = 0;
	s->size = s->rank = 0;
	if (comm == MPI_COMM_NULL)
		return;
	MPI_Comm_rank(comm, &s->rank);
	if (inter) {
		MPI_Comm_remote_size(comm, &s->size);
		return;
	}
	MPI_Comm_size(comm, &s->size);
	{
		int *sites = xmalloc(sizeof(int) * (size_t)s->size), i, a = -2, b = -2, ok = 1;

		PMPI_Allgather(&mysite, 1, MPI_INT, sites, 1, MPI_INT, comm);
		int changes = 0;

		/* a, b: the first two sites; ok: no rank without a site or at a third */
		for (i = 0; i < s->size; i++) {
			changes += i > 0 && sites[i] != sites[i - 1];
			if (sites[i] >= 0 && (a == -2 || sites[i] == a))
				a = sites[i];
			else if (sites[i] >= 0 && (b == -2 || sites[i] == b))
				b = sites[i];
			else
				ok = 0;
		}
		s->two_sites = ok && b != -2;
		s->in_order = s->two_sites && changes == 1;
		free(sites);
	}
}

static void shapes_init(void)
{
	char site[64] = "", *all;
	const char *env = getenv("XSITE_SITE");
	MPI_Comm c;
	int i, j;

	/* my site's index: by name, in order of first appearance */
	snprintf(site, sizeof(site), "%s", env ? env : "");
	all = xmalloc((size_t)wsize * 64);
	PMPI_Allgather(site, 64, MPI_CHAR, all, 64, MPI_CHAR, MPI_COMM_WORLD);
	mysite = -1;
	if (*site)
		for (i = 0, j = 0; i < wsize; i++) {
			const char *name = &all[(size_t)i * 64];
			int k, seen = 0;

			if (!*name)
				continue;
			for (k = 0; k < i; k++)
				if (!strcmp(&all[(size_t)k * 64], name))
					seen = 1;
			if (!seen) {
				if (!strcmp(name, site))
					mysite = j;
				j++;
			}
		}
	free(all);

	add_shape("world", MPI_COMM_WORLD, 0);
	MPI_Comm_dup(MPI_COMM_WORLD, &c);
	add_shape("dup", c, 0);
	MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &c);
	add_shape("parity", c, 0);
	MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &c);
	add_shape("reversed", c, 0);
	/* three ranks: the first two and the last */
	MPI_Comm_split(MPI_COMM_WORLD,
		       wrank < 2 || wrank == wsize - 1 ? 0 : MPI_UNDEFINED, wrank, &c);
	add_shape("three", c, 0);
	/* one site: each site's own communicator */
	MPI_Comm_split(MPI_COMM_WORLD, mysite < 0 ? 1000 : mysite, wrank, &c);
	add_shape("one-site", c, 0);
	/* the two sites joined by an intercommunicator (the MPI library's own),
	 * when every rank has one of exactly two sites */
	{
		int lo, hi;
		MPI_Comm inter = MPI_COMM_NULL;

		PMPI_Allreduce(&mysite, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
		PMPI_Allreduce(&mysite, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
		if (lo == 0 && hi == 1) {
			int r, other = -1, *sites = xmalloc(sizeof(int) * (size_t)wsize);

			PMPI_Allgather(&mysite, 1, MPI_INT, sites, 1, MPI_INT, MPI_COMM_WORLD);
			for (r = 0; r < wsize && other < 0; r++)
				if (sites[r] != mysite)
					other = r;
			free(sites);
			MPI_Intercomm_create(shapes[nshapes - 1].comm, 0, MPI_COMM_WORLD, other,
					     99, &inter);
		}
		add_shape("inter", inter, 1);
	}
}

/* ---- reporting ---------------------------------------------------------- */

static void snap(struct xsite_stats *s)
{
	memset(s, 0, sizeof(*s));
	if (get_stats)
		get_stats(s);
}

/* path taken on this rank: 1 site-aware, 0 fallback, -1 unknown */
static int path_of(const struct xsite_stats *a, const struct xsite_stats *b)
{
	if (!get_stats)
		return -1;
	if (b->coll_siteaware > a->coll_siteaware)
		return 1;
	if (b->coll_fallback > a->coll_fallback)
		return 0;
	return -1;
}

/* whether the ranks of comm took different paths for one call (a hand-off
 * that reached different verdicts on different ranks would hang the next
 * call): collective on comm */
static int paths_differ(MPI_Comm comm, int path)
{
	int in[2] = { path, -path }, out[2];

	PMPI_Allreduce(in, out, 2, MPI_INT, MPI_MIN, comm);
	return out[0] != -out[1];
}

/*
 * One TAP line for a case group, from world rank 0: every rank contributes
 * whether it failed (and why) and which path it took (member == 0: not in
 * the communicator).
 */
static void report(const char *desc, int member, int expect, int path, int fail,
		   const char *diag)
{
	int in[3], out[3];
	char msg[320];

	if (member && get_stats && path != expect && !(any_path && expect && path == 0)) {
		if (require || path >= 0) {
			snprintf(msg, sizeof(msg), "rank %d took the %s path, expected %s", wrank,
				 path == 1 ? "site-aware" : path == 0 ? "fallback" : "no",
				 expect ? "site-aware" : "fallback");
			diag = msg;
			fail = 1;
		}
	}
	if (member && require && !get_stats && !fail) {
		diag = "libxsite is not loaded (xsite_get_stats not found)";
		fail = 1;
	}
	in[0] = fail ? wrank : wsize; /* first failing rank */
	in[1] = member ? path : 2;
	in[2] = member ? -path : -2;
	PMPI_Allreduce(in, out, 3, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	ntest++;
	if (out[0] < wsize) {
		char d[320] = "";

		if (wrank == out[0])
			snprintf(d, sizeof(d), "%s", diag ? diag : "");
		PMPI_Bcast(d, sizeof(d), MPI_CHAR, out[0], MPI_COMM_WORLD);
		nfail++;
		if (wrank == 0) {
			printf("not ok %d - %s [%s]\n# rank %d: %s\n", ntest, desc,
			       expect ? "site-aware" : "fallback", out[0], d);
			fflush(stdout);
		}
		return;
	}
	if (wrank == 0) {
		printf("ok %d - %s [%s]\n", ntest, desc, any_path && out[1] >= 0 ?
		       (out[1] ? "site-aware" : "fallback or hand-off") :
		       expect ? "site-aware" : "fallback");
		fflush(stdout);
	}
}

/* one case on a value of libxsite's API (found: the function was there) */
static void api_case(int good, const char *desc, long got, int found)
{
	ntest++;
	if (!good)
		nfail++;
	if (wrank == 0) {
		printf("%s %d - %s\n", good ? "ok" : "not ok", ntest, desc);
		if (!good)
			printf("# it is %ld%s\n", got, found ? "" : " (not found)");
		fflush(stdout);
	}
}

/* xsite_race_calls(): the calls libxsite times before its verdict, as its
 * configuration says (XSITE_HANDOFF, default 2; none with the collectives
 * off), so that a benchmark warms up as long as libxsite races */
static void t_race_calls(void)
{
	int (*race_calls)(void);
	const char *h = getenv("XSITE_HANDOFF");
	int handoff = h && *h ? atoi(h) : 2, want = coll_off || handoff <= 0 ? 0 : 2 + 2 * handoff, got;
	char desc[128];

	*(void **)&race_calls = dlsym(RTLD_DEFAULT, "xsite_race_calls");
	got = race_calls ? race_calls() : -2;
	snprintf(desc, sizeof(desc), "xsite_race_calls() is %d (XSITE_HANDOFF=%d)", want, handoff);
	api_case(got == want, desc, got, race_calls != NULL);
}

/* xsite_eager_bytes(): XSITE_EAGER as given, or with auto (the default)
 * btl_tcp_eager_limit less libxsite's 1024 bytes for the header where the
 * test gives the limit (OMPI_MCA_btl_tcp_eager_limit); with neither,
 * whatever the library's own limit makes it, at least 4096 */
static void t_eager_bytes(void)
{
	long (*eager_bytes)(void);
	const char *x = getenv("XSITE_EAGER"), *e = getenv("OMPI_MCA_btl_tcp_eager_limit");
	int fixed = x && *x && strcmp(x, "auto") != 0;
	long want = fixed ? atol(x) : e && *e ? atol(e) - 1024 : -1, got;
	char desc[160];

	*(void **)&eager_bytes = dlsym(RTLD_DEFAULT, "xsite_eager_bytes");
	got = eager_bytes ? eager_bytes() : -2;
	if (want >= 0)
		snprintf(desc, sizeof(desc), "xsite_eager_bytes() is %ld (XSITE_EAGER=%s, btl_tcp_eager_limit %s)",
			 want, x && *x ? x : "auto", e && *e ? e : "the library's");
	else
		snprintf(desc, sizeof(desc), "xsite_eager_bytes() is at least 4096 (XSITE_EAGER=auto, "
			 "the library's btl_tcp_eager_limit): %ld", got);
	api_case(want >= 0 ? got == want : got >= 4096, desc, got, eager_bytes != NULL);
}

/* -c: is this collective's case to run? (same answer on every rank) */
static int wanted(const char *coll)
{
	return !only || !strcmp(only, coll);
}

/* -a: one class of one collective called many times on MPI_COMM_WORLD, so
 * that libxsite races the two algorithms again after its first verdict
 * (race.c): every result right, every rank on one path in every call */
static void t_repeat(long calls)
{
	char desc[96], diag[160] = "";
	int fail = 0, path = -1;
	long k;

	if (!wanted("allreduce"))
		return;
	for (k = 0; k < calls && !fail; k++) {
		int in = wrank * 1000 + (int)k, out = -1, ref = -2;
		struct xsite_stats a, b;

		snap(&a);
		MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		snap(&b);
		path = path_of(&a, &b);
		PMPI_Allreduce(&in, &ref, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		if (out != ref) {
			fail = 1;
			snprintf(diag, sizeof(diag), "call %ld: %d, the MPI library's %d", k + 1, out, ref);
		} else if (get_stats && paths_differ(MPI_COMM_WORLD, path)) {
			fail = 1;
			snprintf(diag, sizeof(diag), "call %ld: the ranks of the communicator took different paths",
				 k + 1);
		}
	}
	snprintf(desc, sizeof(desc), "allreduce SUM int 1 world, %ld calls", calls);
	report(desc, 1, 1, path, fail, diag);
}

static int expect_siteaware(const struct shape *s, size_t bytes, int commutative)
{
	return !coll_off && s->two_sites && !s->inter && bytes > 0 && commutative;
}

/* a root given as -1 is the last rank; any root wraps around the size */
static int root_of(const struct shape *s, int root)
{
	int n = s->size > 0 ? s->size : 1;

	return ((root % n) + n) % n;
}

static long count_for(size_t bytes, const struct ty *t)
{
	return (long)(bytes / (size_t)t->size);
}

/* ---- data movement: per-rank types ("mixed": ints on even ranks, blocks of
 * four ints on odd ranks; same type signature) ---------------------------- */

struct dty {
	const struct ty *t;
	long count; /* elements of t for `elems` ints or items */
};

/* the type a rank uses for a block of n items of kind `type` */
static struct dty dty_for(const char *type, int rank, long n)
{
	struct dty d;

	if (!strcmp(type, "mixed")) {
		if (rank % 2) {
			d.t = &T_C4;
			d.count = n;
		} else {
			d.t = &T_INT;
			d.count = 4 * n;
		}
		return d;
	}
	d.t = !strcmp(type, "int") ? &T_INT : !strcmp(type, "double") ? &T_DOUBLE :
	      !strcmp(type, "unsigned_char") ? &T_UCHAR : !strcmp(type, "vector") ? &T_VEC :
	      !strcmp(type, "double_int") ? &T_DINT : &T_LL;
	d.count = n;
	return d;
}

/* size in bytes of one item of `type` (for "mixed": four ints) */
static size_t item_size(const char *type)
{
	struct dty d = dty_for(type, 1, 1);

	return (size_t)d.count * (size_t)d.t->size;
}

/* block i of a buffer of blocks of d */
static void *block(void *buf, struct dty d, long i)
{
	return (char *)buf + i * d.count * d.t->ext;
}

/* p blocks of d, block i with the data of "rank" from_rank * 100 + i */
static void fill_blocks(void *buf, struct dty d, int p, unsigned seed, int from_rank)
{
	int i;

	for (i = 0; i < p; i++)
		fill(block(buf, d, i), d.t, d.count, from_rank * 100 + i, V_DATA, seed);
}

/* ---- one case: the collective through MPI_ and through PMPI_ ------------ */

enum coll { ALLREDUCE, REDUCE, BCAST, ALLGATHER, GATHER, SCATTER, ALLTOALL,
	    REDUCE_SCATTER_BLOCK, REDUCE_SCATTER, ALLGATHERV, SCAN, EXSCAN,
	    IALLREDUCE, IREDUCE, IBCAST, IALLGATHER };

static const struct coll_info {
	const char *name;
	int rooted;
	int to_root;   /* the result is the root's only (reduce, gather) */
	int from_root; /* the input is the root's only (bcast, scatter) */
	int for_each;  /* the send buffer: a block for each rank (scatter, alltoall) */
	int from_each; /* the receive buffer: a block from each rank (allgather, gather,
			* alltoall) */
	unsigned seed; /* of the data; reductions: of count * seed + the case's number */
} colls[] = {
	[ALLREDUCE] = { "allreduce", 0, 0, 0, 0, 0, 31 },
	[REDUCE] = { "reduce", 1, 1, 0, 0, 0, 17 },
	[BCAST] = { "bcast", 1, 0, 1, 0, 0, 5 },
	[ALLGATHER] = { "allgather", 0, 0, 0, 0, 1, 7 },
	[GATHER] = { "gather", 1, 1, 0, 0, 1, 9 },
	[SCATTER] = { "scatter", 1, 0, 1, 1, 0, 11 },
	[ALLTOALL] = { "alltoall", 0, 0, 0, 1, 1, 13 },
	/* the v forms and the scans are set up by t_vcoll */
	[REDUCE_SCATTER_BLOCK] = { "reduce_scatter_block", 0, 0, 0, 0, 0, 19 },
	[REDUCE_SCATTER] = { "reduce_scatter", 0, 0, 0, 0, 0, 23 },
	[ALLGATHERV] = { "allgatherv", 0, 0, 0, 0, 0, 29 },
	[SCAN] = { "scan", 0, 0, 0, 0, 0, 37 },
	[EXSCAN] = { "exscan", 0, 0, 0, 0, 0, 41 },
	/* the nonblocking forms, against the blocking ones of the MPI library */
	[IALLREDUCE] = { "iallreduce", 0, 0, 0, 0, 0, 43 },
	[IREDUCE] = { "ireduce", 1, 1, 0, 0, 0, 53 },
	[IBCAST] = { "ibcast", 1, 0, 1, 0, 0, 47 },
	[IALLGATHER] = { "iallgather", 0, 0, 0, 0, 1, 59 },
};

/*
 * Complete a nonblocking collective's request, one of four ways: cases of
 * even number by MPI_Wait (even ranks) or a loop of MPI_Test (odd ranks);
 * cases of odd number with the MPI library's own Ibarrier on the same
 * communicator started after it, by MPI_Waitall (even ranks) or a loop of
 * MPI_Testany (odd ranks) over the two.
 */
static void nb_complete(MPI_Request *req, MPI_Comm comm, int rank)
{
	MPI_Request two[2];
	int flag = 0, idx, done = 0;

	/* the analyzer's MPI checker knows neither the caller's request (from
	 * MPI_Ibarrier, say) nor PMPI_Ibarrier below */
	if (ntest % 2 == 0) {
		if (rank % 2 == 0)
			MPI_Wait(req, MPI_STATUS_IGNORE); /* NOLINT(clang-analyzer-optin.mpi.MPI-Checker) */
		else
			while (!flag)
				MPI_Test(req, &flag, MPI_STATUS_IGNORE);
		return;
	}
	two[0] = *req;
	PMPI_Ibarrier(comm, &two[1]);
	if (rank % 2 == 0) {
		MPI_Waitall(2, two, MPI_STATUSES_IGNORE); /* NOLINT(clang-analyzer-optin.mpi.MPI-Checker) */
		return;
	}
	while (done < 2) {
		MPI_Testany(2, two, &idx, &flag, MPI_STATUS_IGNORE);
		if (flag && idx != MPI_UNDEFINED)
			done++;
	}
}

/* a case as this rank sees it */
struct ccase {
	enum coll coll;
	const struct shape *s;
	const struct opty *o; /* the op of a reduction */
	int root;             /* of a rooted collective */
	int ip;               /* in place on this rank */
	int check;            /* this rank's result is compared */
	struct dty sd, rd;    /* a block sent, a block received */
	int nsend, nrecv;     /* blocks in the send buffer (0: none) and the receive buffer */
	enum vclass v;        /* the input: rank `who`'s data of class v */
	int who;
	unsigned seed;
	void *in;
	/* the v forms: rank r's block, cnt[r] elements of rd at dsp[r]; the
	 * _block form: blk each; ncmp: the elements of the result compared
	 * (0: the whole receive buffer) */
	int *cnt, *dsp, blk;
	long ncmp;
};

/* rank c->who's input, at buf as one block of d or (each) one for each rank */
static void fill_input(const struct ccase *c, void *buf, struct dty d, int each)
{
	if (each)
		fill_blocks(buf, d, c->s->size, c->seed, c->who);
	else
		fill(buf, d.t, d.count, c->who, c->v, c->seed);
}

/* the collective of c into out: through MPI_ (libxsite's when it is loaded),
 * or with ref through PMPI_ (the MPI library's, the reference) */
static void call(const struct ccase *c, int ref, void *out)
{
	const void *in = c->ip ? MPI_IN_PLACE : c->in;
	int sn = (int)c->sd.count, rn = (int)c->rd.count, root = c->root;
	MPI_Datatype st = c->sd.t->dt, rt = c->rd.t->dt;
	MPI_Op op = c->o ? c->o->mop : MPI_OP_NULL;
	MPI_Comm comm = c->s->comm;

	switch (c->coll) {
	case ALLREDUCE:
		(ref ? PMPI_Allreduce : MPI_Allreduce)(in, out, rn, rt, op, comm);
		break;
	case REDUCE:
		(ref ? PMPI_Reduce : MPI_Reduce)(in, out, rn, rt, op, root, comm);
		break;
	case BCAST:
		(ref ? PMPI_Bcast : MPI_Bcast)(out, rn, rt, root, comm);
		break;
	case ALLGATHER:
		(ref ? PMPI_Allgather : MPI_Allgather)(in, sn, st, out, rn, rt, comm);
		break;
	case GATHER:
		(ref ? PMPI_Gather : MPI_Gather)(in, sn, st, out, rn, rt, root, comm);
		break;
	case SCATTER: /* in place: the root's own block stays in the send buffer */
		(ref ? PMPI_Scatter : MPI_Scatter)(c->in, sn, st, c->ip ? MPI_IN_PLACE : out,
						   rn, rt, root, comm);
		break;
	case ALLTOALL:
		(ref ? PMPI_Alltoall : MPI_Alltoall)(in, sn, st, out, rn, rt, comm);
		break;
	case REDUCE_SCATTER_BLOCK:
		(ref ? PMPI_Reduce_scatter_block : MPI_Reduce_scatter_block)(in, out, c->blk, rt,
									     op, comm);
		break;
	case REDUCE_SCATTER:
		(ref ? PMPI_Reduce_scatter : MPI_Reduce_scatter)(in, out, c->cnt, rt, op, comm);
		break;
	case ALLGATHERV:
		(ref ? PMPI_Allgatherv : MPI_Allgatherv)(in, sn, st, out, c->cnt, c->dsp, rt, comm);
		break;
	case SCAN:
		(ref ? PMPI_Scan : MPI_Scan)(in, out, rn, rt, op, comm);
		break;
	case EXSCAN:
		(ref ? PMPI_Exscan : MPI_Exscan)(in, out, rn, rt, op, comm);
		break;
	case IALLREDUCE:
		if (ref) {
			PMPI_Allreduce(in, out, rn, rt, op, comm);
		} else {
			MPI_Request r;

			MPI_Iallreduce(in, out, rn, rt, op, comm, &r);
			nb_complete(&r, comm, c->s->rank);
		}
		break;
	case IREDUCE:
		if (ref) {
			PMPI_Reduce(in, out, rn, rt, op, root, comm);
		} else {
			MPI_Request r;

			MPI_Ireduce(in, out, rn, rt, op, root, comm, &r);
			nb_complete(&r, comm, c->s->rank);
		}
		break;
	case IBCAST:
		if (ref) {
			PMPI_Bcast(out, rn, rt, root, comm);
		} else {
			MPI_Request r;

			MPI_Ibcast(out, rn, rt, root, comm, &r);
			nb_complete(&r, comm, c->s->rank);
		}
		break;
	case IALLGATHER:
		if (ref) {
			PMPI_Allgather(in, sn, st, out, rn, rt, comm);
		} else {
			MPI_Request r;

			MPI_Iallgather(in, sn, st, out, rn, rt, comm, &r);
			nb_complete(&r, comm, c->s->rank);
		}
		break;
	}
}

/*
 * Run case c on the same input through MPI_ (the path it took noted) and
 * PMPI_, compare the results where c->check, and report it as desc.
 */
static void run_case(struct ccase *c, const char *desc, int expect)
{
	const struct coll_info *k = &colls[c->coll];
	char diag[256] = "";
	int fail = 0, path = -1, split = 0;

	if (c->s->comm != MPI_COMM_NULL) {
		struct xsite_stats a, b;
		void *out[2];
		int i;

		c->in = c->nsend ? alloc_buf(c->sd.t, c->nsend * c->sd.count) : NULL;
		out[0] = alloc_buf(c->rd.t, c->nrecv * c->rd.count);
		out[1] = alloc_buf(c->rd.t, c->nrecv * c->rd.count);
		if (c->in && (!k->from_root || c->s->rank == c->root))
			fill_input(c, c->in, c->sd, k->for_each);
		for (i = 0; i < 2; i++) {
			/* in place, the output holds the input: all of it, or this
			 * rank's own block of a buffer of one from each rank */
			if (c->ip && c->dsp)
				fill((char *)out[i] + c->dsp[c->s->rank] * c->rd.t->ext, c->rd.t,
				     c->cnt[c->s->rank], c->who, c->v, c->seed);
			else if (c->ip && (c->coll == REDUCE_SCATTER_BLOCK ||
					   c->coll == REDUCE_SCATTER))
				fill_input(c, out[i], c->sd, 0);
			else if (c->ip && c->coll != SCATTER)
				fill_input(c, k->from_each && !k->for_each ?
					   block(out[i], c->rd, c->s->rank) : out[i],
					   c->rd, k->for_each);
			if (i == 0)
				snap(&a);
			call(c, i, out[i]);
			if (i == 0) {
				snap(&b);
				path = path_of(&a, &b);
				split = get_stats && !c->s->inter && paths_differ(c->s->comm, path);
			}
		}
		if (c->check)
			fail = compare(out[0], out[1], c->rd.t,
				       c->ncmp ? c->ncmp : c->nrecv * c->rd.count, diag,
				       sizeof(diag));
		if (split) {
			fail = 1;
			snprintf(diag, sizeof(diag), "the ranks of the communicator took different paths");
		}
		free(c->in);
		free(out[0]);
		free(out[1]);
	}
	report(desc, c->s->comm != MPI_COMM_NULL, expect, path, fail, diag);
}

/*
 * A case on an intracommunicator: coll on shape sh, count elements of type
 * with op (reductions) or count items of type a rank (data movement), to or
 * from root (rooted collectives; -1 the last rank), in place or not.
 */
static void t_coll(enum coll coll, const char *sh, const char *op, const char *type,
		   long count, int root, int inplace)
{
	const struct coll_info *k = &colls[coll];
	const struct shape *s = shape(sh);
	struct ccase c;
	char desc[200], rootstr[32] = "";
	size_t bytes;
	int bcast = coll == BCAST || coll == IBCAST, expect;

	if (!wanted(k->name))
		return;

	memset(&c, 0, sizeof(c));
	c.coll = coll;
	c.s = s;
	c.root = k->rooted ? root_of(s, root) : 0;
	c.who = s->rank;
	if (op) {
		c.o = combo(op, type);
		c.sd.t = c.rd.t = c.o->t;
		c.sd.count = c.rd.count = count;
		c.v = c.o->v;
		c.seed = (unsigned)(count * k->seed + ntest);
		bytes = (size_t)count * (size_t)c.o->t->size;
	} else {
		/* sent as this rank's type, received as the next rank's; in one
		 * buffer both ways (bcast, alltoall in place) as this rank's */
		c.sd = dty_for(type, s->rank, count);
		c.rd = bcast || (coll == ALLTOALL && inplace) ?
			c.sd : dty_for(type, s->rank + 1, count);
		c.v = V_DATA;
		c.seed = k->seed;
		bytes = (size_t)count * item_size(type);
	}
	c.nsend = bcast ? 0 : k->for_each ? s->size : 1;
	c.nrecv = k->from_each ? s->size : 1;
	/* bcast: the root's buffer holds the input */
	c.ip = bcast ? s->rank == c.root : inplace && (!k->rooted || s->rank == c.root);
	c.check = k->to_root ? s->rank == c.root : !(coll == SCATTER && c.ip);

	if (k->rooted)
		snprintf(rootstr, sizeof(rootstr), " root=%d", c.root);
	snprintf(desc, sizeof(desc), "%s%s%s %s %ld %s%s%s", k->name, op ? " " : "",
		 op ? op : "", type, count, sh, rootstr, inplace ? " in-place" : "");
	expect = expect_siteaware(s, bytes, c.o ? c.o->commutative : 1);
	/* Iallreduce: site-aware with the predefined ops only, below
	 * XSITE_LARGE_MSG; Ireduce: the library's */
	if ((coll == IALLREDUCE && (c.o->user || bytes >= large_msg)) || coll == IREDUCE)
		expect = 0;
	run_case(&c, desc, expect);
}

/* data movement: items of type a rank */
static void t_data(enum coll coll, const char *sh, const char *type, long items, int root,
		   int inplace)
{
	t_coll(coll, sh, NULL, type, items, root, inplace);
}

/*
 * Reduce_scatter(_block), Allgatherv, Scan, Exscan on shape sh.  Rank r's
 * block: count elements (the _block form), or count + r % 3 (the v forms;
 * Allgatherv: items of type, one item's gap after each block).  Scans keep
 * the op's order: they are site-aware with non-commutative ops too, where
 * the ranks of the first site come first.
 */
static void t_vcoll(enum coll coll, const char *sh, const char *op, const char *type,
		    long count, int inplace)
{
	const struct coll_info *k = &colls[coll];
	const struct shape *s = shape(sh);
	struct ccase c;
	char desc[200];
	long total = 0, bytes = 0;
	int r, expect;
	/* the per-rank tables: one entry at least */
	size_t table = sizeof(int) * (size_t)(s->size > 0 ? s->size : 1);

	if (!wanted(k->name))
		return;

	memset(&c, 0, sizeof(c));
	c.coll = coll;
	c.s = s;
	c.who = s->rank;
	c.ip = inplace;
	c.check = !(coll == EXSCAN && s->rank == 0); /* undefined there */
	c.nsend = c.nrecv = 1;
	/* zeroed: a rank outside the communicator (size 0) reads cnt[0] */
	if (coll == REDUCE_SCATTER || coll == ALLGATHERV) {
		c.cnt = xmalloc(table);
		memset(c.cnt, 0, table);
	}
	if (coll == ALLGATHERV)
		c.dsp = xmalloc(table);
	if (coll == ALLGATHERV) {
		struct dty one = dty_for(type, s->rank + 1, 1);

		c.sd = dty_for(type, s->rank, count + s->rank % 3);
		c.rd = one;
		for (r = 0; r < s->size; r++) {
			c.cnt[r] = (int)((count + r % 3) * one.count);
			c.dsp[r] = (int)total;
			total += c.cnt[r] + one.count;
			bytes += (count + r % 3) * (long)item_size(type);
		}
		c.rd.count = total;
		c.v = V_DATA;
		c.seed = k->seed;
	} else {
		c.o = combo(op, type);
		c.sd.t = c.rd.t = c.o->t;
		c.v = c.o->v;
		c.seed = (unsigned)(count * k->seed + ntest);
		if (coll == SCAN || coll == EXSCAN) {
			c.sd.count = c.rd.count = total = count;
		} else {
			for (r = 0; r < s->size; r++) {
				int n = (int)(coll == REDUCE_SCATTER ? count + r % 3 : count);

				if (c.cnt)
					c.cnt[r] = n;
				total += n;
			}
			c.blk = (int)count;
			c.sd.count = total;
			/* in place, the receive buffer holds the input */
			c.rd.count = inplace ? total : c.cnt ? c.cnt[s->rank] : count;
			c.ncmp = c.cnt ? c.cnt[s->rank] : count;
		}
		bytes = total * c.o->t->size;
	}

	snprintf(desc, sizeof(desc), "%s%s%s %s %ld %s%s", k->name, op ? " " : "", op ? op : "",
		 type, count, sh, inplace ? " in-place" : "");
	expect = coll == SCAN || coll == EXSCAN ?
		 !coll_off && s->in_order && bytes > 0 :
		 expect_siteaware(s, (size_t)bytes, c.o ? c.o->commutative : 1);
	run_case(&c, desc, expect);
	free(c.cnt);
	free(c.dsp);
}

/* a barrier must hold everyone until the last rank arrives, 250 ms late:
 * each other rank must wait at least 100 ms in it.  The margin is for a rank
 * that the machine's load keeps off a core on its way in: the ranks of two
 * testbeds, each polling, may share the two cores of the CI machine, where
 * a rank can wait tens of ms for one.  nb: MPI_Ibarrier, completed as
 * nb_complete() does */
static void t_barrier(const char *sh, int nb)
{
	const char *name = nb ? "ibarrier" : "barrier";
	const struct shape *s = shape(sh);
	struct xsite_stats a, b;
	char desc[200], diag[256] = "";
	int fail = 0, path = -1, expect;

	if (!wanted(name))
		return;

	snprintf(desc, sizeof(desc), "%s %s waits for the last rank", name, sh);
	expect = expect_siteaware(s, 1, 1);
	if (s->comm != MPI_COMM_NULL) {
		double t0;
		int late;

		/* once through the library first: its setup of a communicator
		 * (collective) would synchronise the ranks by itself */
		MPI_Barrier(s->comm);
		PMPI_Barrier(s->comm);
		/* intercommunicator: the last rank of the group of world rank 0 */
		late = s->rank == s->size - 1 && (!s->inter || mysite == 0);
		if (s->inter) {
			int lsize;

			MPI_Comm_size(s->comm, &lsize);
			late = s->rank == lsize - 1 && mysite == 0;
		}
		if (late)
			usleep(250000);
		snap(&a);
		t0 = MPI_Wtime();
		if (nb) {
			MPI_Request r;

			MPI_Ibarrier(s->comm, &r);
			nb_complete(&r, s->comm, s->rank);
		} else {
			MPI_Barrier(s->comm);
		}
		t0 = MPI_Wtime() - t0;
		snap(&b);
		path = path_of(&a, &b);
		if (get_stats && !s->inter && paths_differ(s->comm, path)) {
			fail = 1;
			snprintf(diag, sizeof(diag), "the ranks of the communicator took different paths");
		} else if (!late && t0 < 0.1) {
			fail = 1;
			snprintf(diag, sizeof(diag), "left the barrier after %.3f s, before the "
				 "late rank (250 ms) arrived", t0);
		}
	}
	report(desc, s->comm != MPI_COMM_NULL, expect, path, fail, diag);
}

/* intercommunicator collectives (ints): group of site 0 x group of site 1 */
static void t_inter(enum coll coll, long n)
{
	const struct shape *s = shape("inter");
	struct ccase c;
	char desc[200];

	if (!wanted(colls[coll].name))
		return;

	snprintf(desc, sizeof(desc), "%s int %ld inter", colls[coll].name, n);
	memset(&c, 0, sizeof(c));
	c.coll = coll;
	c.s = s;
	c.o = combo("SUM", "int");
	c.sd.t = c.rd.t = &T_INT;
	c.sd.count = c.rd.count = n;
	c.nsend = coll == BCAST ? 0 : 1;
	c.nrecv = coll == ALLGATHER ? s->size : 1; /* s->size: the remote group's */
	c.v = V_DATA;
	c.who = wrank;
	c.seed = 3;
	c.check = 1;
	if (coll == BCAST) {
		/* from rank 0 of site 0's group, whose output buffers hold the input */
		c.root = mysite == 0 ? (s->rank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
		c.ip = mysite == 0;
	}
	run_case(&c, desc, 0);
}

/* ---- the cases of a collective and its nonblocking form ----------------- */

/* the communicators besides MPI_COMM_WORLD on which the cases run */
static const char *const two[] = { "parity", "three", "one-site", "dup", "reversed" };
/* a small count */
static const long small = 37;

/* Allreduce or Iallreduce: every op x type, 1 and a small count, and at
 * 64 KiB (streams) */
static void t_allreduces(enum coll coll)
{
	int i, j;

	for (i = 0; i < ncombos; i++) {
		const struct opty *o = &combos[i];

		t_coll(coll, "world", o->op, o->t->name, 1, 0, 0);
		t_coll(coll, "world", o->op, o->t->name, small, 0, 0);
		t_coll(coll, "world", o->op, o->t->name, count_for(64 * KiB, o->t), 0, 0);
	}
	/* ... every size on every shape for a few */
	for (j = 0; j < 5; j++) {
		long n[] = { 0, 1, small, 64 * KiB / 8, MiB / 8 };
		int k, nn = quick ? 4 : 5;

		for (k = 0; k < nn; k++) {
			t_coll(coll, two[j], "SUM", "double", n[k], 0, 0);
			t_coll(coll, two[j], "BXOR", "int", n[k] * 2, 0, 0);
		}
		t_coll(coll, two[j], "MAX", "float", small, 0, 0);
		t_coll(coll, two[j], "MAXLOC", "double_int", 64 * KiB / 16, 0, 0);
		t_coll(coll, two[j], "matmul", "mat2x2", small, 0, 0);
	}
	t_coll(coll, "world", "SUM", "double", 0, 0, 0);
	t_coll(coll, "world", "SUM", "int", 0, 0, 0);
	if (any_path && coll == ALLREDUCE)
		t_repeat(200);
	/* ... in place */
	for (j = 0; j < 2; j++) {
		const char *sh = j ? "parity" : "world";
		long n[] = { 1, small, 64 * KiB, MiB };
		int k, nn = quick ? 3 : 4;

		for (k = 0; k < nn; k++) {
			t_coll(coll, sh, "SUM", "double", n[k] / 8 ? n[k] / 8 : 1, 0, 1);
			t_coll(coll, sh, "MIN", "int", n[k] / 4 ? n[k] / 4 : 1, 0, 1);
			t_coll(coll, sh, "vecsum", "vector", n[k] / 8 ? n[k] / 8 : 1, 0, 1);
			t_coll(coll, sh, "MAXLOC", "double_int", n[k] / 12 ? n[k] / 12 : 1, 0, 1);
		}
	}
	if (!quick) {
		t_coll(coll, "world", "SUM", "double", 4 * MiB / 8, 0, 0);
		t_coll(coll, "reversed", "SUM", "int", 4 * MiB / 4, 0, 0);
		t_coll(coll, "world", "SUM", "double", 4 * MiB / 8, 0, 1);
	}
}

/* Reduce or Ireduce: every op x type at a small count to a root at each
 * site; sizes and shapes; in place */
static void t_reduces(enum coll coll)
{
	int i, j;

	for (i = 0; i < ncombos; i++) {
		t_coll(coll, "world", combos[i].op, combos[i].t->name, small, 0, 0);
		t_coll(coll, "world", combos[i].op, combos[i].t->name,
		       count_for(64 * KiB, combos[i].t), -1, 0);
	}
	{
		long n[] = { 0, 1, small, 64 * KiB / 8, MiB / 8 };
		int roots[] = { 0, -1, wsize / 2 + 1 }, r, k, nn = quick ? 4 : 5;

		for (r = 0; r < 3; r++)
			for (k = 0; k < nn; k++) {
				t_coll(coll, "world", "SUM", "double", n[k], roots[r], 0);
				t_coll(coll, "world", "MAX", "int", n[k] * 2, roots[r], 0);
				t_coll(coll, "world", "MAXLOC", "double_int", n[k] / 2, roots[r], 0);
			}
		for (r = 0; r < 3; r++) {
			t_coll(coll, "world", "matmul", "mat2x2", small, roots[r], 0);
			t_coll(coll, "world", "vecsum", "vector", 64 * KiB / 8, roots[r], 0);
		}
	}
	for (j = 0; j < 5; j++) {
		t_coll(coll, two[j], "SUM", "double", 1, 0, 0);
		t_coll(coll, two[j], "SUM", "double", 64 * KiB / 8, -1, 0);
		t_coll(coll, two[j], "BXOR", "int", small, -1, 0);
		t_coll(coll, two[j], "BXOR", "int", 64 * KiB / 4, 0, 0);
	}
	for (j = 0; j < 2; j++) {
		int root = j ? -1 : 0;

		t_coll(coll, "world", "SUM", "double", small, root, 1);
		t_coll(coll, "world", "MAX", "int", 64 * KiB / 4, root, 1);
		if (!quick)
			t_coll(coll, "world", "SUM", "double", MiB / 8, root, 1);
	}
	if (!quick)
		t_coll(coll, "world", "SUM", "double", 4 * MiB / 8, -1, 0);
}

/* Bcast or Ibcast: types, roots at each site, sizes, shapes */
static void t_bcasts(enum coll coll)
{
	const char *types[] = { "int", "double", "unsigned_char", "vector",
				"double_int", "mixed" };
	int roots[] = { 0, -1, wsize / 2 + 1 }, r, k, j;

	for (k = 0; k < 6; k++)
		for (r = 0; r < 3; r++) {
			size_t is = item_size(types[k]);

			t_data(coll, "world", types[k], 1, roots[r], 0);
			t_data(coll, "world", types[k], small, roots[r], 0);
			t_data(coll, "world", types[k], (long)(64 * KiB / is), roots[r], 0);
		}
	for (r = 0; r < 2; r++) {
		t_data(coll, "world", "int", 0, roots[r], 0);
		if (!quick) {
			t_data(coll, "world", "int", MiB / 4, roots[r], 0);
			t_data(coll, "world", "vector", MiB / 8, roots[r], 0);
		}
	}
	for (j = 0; j < 5; j++)
		for (r = 0; r < 2; r++) {
			t_data(coll, two[j], "int", small, roots[r], 0);
			t_data(coll, two[j], "vector", 64 * KiB / 8, roots[r], 0);
			if (!quick)
				t_data(coll, two[j], "mixed", MiB / 16, roots[r], 0);
		}
	if (!quick)
		t_data(coll, "world", "double", 4 * MiB / 8, -1, 0);
}

/* ---- nonblocking collectives in flight together -------------------------- */

/* compare n ints with the reference; the first difference into diag */
static int differ(const int *got, const int *want, long n, const char *what, char *diag,
		  size_t len)
{
	long i;

	for (i = 0; i < n; i++)
		if (got[i] != want[i]) {
			snprintf(diag, len, "%s: element %ld is %d, the MPI library's %d", what, i,
				 got[i], want[i]);
			return 1;
		}
	return 0;
}

/*
 * Four nonblocking collectives in flight at once on a copy of
 * MPI_COMM_WORLD (a small Iallreduce, an Ibcast of a derived type from the
 * last rank, an Iallreduce of 12 KB, an Iallgather of the derived type), a
 * blocking Allreduce on the same communicator while they run, the
 * communicator and the derived type freed before the requests complete (MPI
 * lets them run on), and the requests completed in the reverse order.
 */
static void t_nb_together(void)
{
	const long n1 = 37, n3 = 3000;
	int *in1, *out1, *ref1, *buf2, *ref2, *in3, *out3, *ref3, *out4, *ref4;
	int x, y = -1, yref = -2;
	MPI_Request r[4];
	MPI_Datatype pairs;
	MPI_Comm dup;
	struct xsite_stats a, b;
	char diag[256] = "";
	int fail = 0, path, last = wsize - 1, expect = expect_siteaware(shape("world"), 1, 1), early;
	long i;

	if (!wanted("iallreduce"))
		return;
	in1 = xmalloc(sizeof(int) * n1);
	out1 = xmalloc(sizeof(int) * n1);
	ref1 = xmalloc(sizeof(int) * n1);
	buf2 = xmalloc(sizeof(int) * 2 * n1);
	ref2 = xmalloc(sizeof(int) * 2 * n1);
	in3 = xmalloc(sizeof(int) * n3);
	out3 = xmalloc(sizeof(int) * n3);
	ref3 = xmalloc(sizeof(int) * n3);
	out4 = xmalloc(sizeof(int) * 2 * n1 * (size_t)wsize);
	ref4 = xmalloc(sizeof(int) * 2 * n1 * (size_t)wsize);
	for (i = 0; i < n1; i++)
		in1[i] = (int)((long)wrank * 7 + i);
	for (i = 0; i < 2 * n1; i++)
		buf2[i] = ref2[i] = wrank == last ? (int)(i * 3 + 1) : -1;
	for (i = 0; i < n3; i++)
		in3[i] = (int)((wrank + 1) * (i % 1000));
	x = wrank + 1;
	PMPI_Allreduce(in1, ref1, (int)n1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	PMPI_Bcast(ref2, (int)(2 * n1), MPI_INT, last, MPI_COMM_WORLD);
	PMPI_Allreduce(in3, ref3, (int)n3, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	PMPI_Allreduce(&x, &yref, 1, MPI_INT, MPI_PROD, MPI_COMM_WORLD);
	PMPI_Allgather(in3, (int)(2 * n1), MPI_INT, ref4, (int)(2 * n1), MPI_INT, MPI_COMM_WORLD);

	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	MPI_Type_contiguous(2, MPI_INT, &pairs);
	MPI_Type_commit(&pairs);
	snap(&a);
	MPI_Iallreduce(in1, out1, (int)n1, MPI_INT, MPI_SUM, dup, &r[0]);
	MPI_Ibcast(buf2, (int)n1, pairs, last, dup, &r[1]);
	MPI_Iallreduce(in3, out3, (int)n3, MPI_INT, MPI_MAX, dup, &r[2]);
	MPI_Iallgather(in3, (int)n1, pairs, out4, (int)n1, pairs, dup, &r[3]);
	MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_PROD, dup);
	MPI_Type_free(&pairs);
	/* Open MPI 4.1's own nonblocking collectives (libnbc) crash when their
	 * communicator is freed before they complete: where one of them runs
	 * (a fallback), it is freed after */
	early = expect && (size_t)n3 * sizeof(int) < large_msg;
	if (early)
		MPI_Comm_free(&dup);
	for (i = 3; i >= 0; i--)
		MPI_Wait(&r[i], MPI_STATUS_IGNORE);
	if (!early)
		MPI_Comm_free(&dup);
	snap(&b);
	path = path_of(&a, &b);
	fail = differ(out1, ref1, n1, "the small Iallreduce", diag, sizeof(diag)) ||
	       differ(buf2, ref2, 2 * n1, "the Ibcast", diag, sizeof(diag)) ||
	       differ(out3, ref3, n3, "the 12 KB Iallreduce", diag, sizeof(diag)) ||
	       differ(out4, ref4, 2 * n1 * wsize, "the Iallgather", diag, sizeof(diag)) ||
	       differ(&y, &yref, 1, "the Allreduce between", diag, sizeof(diag));
	report("iallreduce in flight with an ibcast, another iallreduce and an iallgather, an "
	       "allreduce between, communicator and type freed, completed in reverse", 1, expect,
	       path, fail, diag);
	free(in1);
	free(out1);
	free(ref1);
	free(buf2);
	free(ref2);
	free(in3);
	free(out3);
	free(ref3);
	free(out4);
	free(ref4);
}

/*
 * More nonblocking collectives in flight at once than libxsite runs at once
 * on a communicator (its lanes, XS_NBC_LANES = 4): six Iallreduce of different ops and
 * sizes and two Ibcast from roots at each site, completed by one
 * MPI_Waitall, each result against the library's blocking form.
 */
static void t_nb_many(void)
{
	enum { NR = 6, NB = 2, N = 500 };
	static const MPI_Op ops[NR] = { MPI_SUM, MPI_MAX, MPI_MIN, MPI_BXOR, MPI_SUM, MPI_BOR };
	int *in, *out, *ref, roots[NB] = { 0, wsize - 1 };
	MPI_Request r[NR + NB];
	struct xsite_stats a, b;
	char diag[256] = "";
	int fail = 0, path;
	long i, k;

	if (!wanted("iallreduce"))
		return;
	in = xmalloc(sizeof(int) * NR * N);
	out = xmalloc(sizeof(int) * (NR + NB) * N);
	ref = xmalloc(sizeof(int) * (NR + NB) * N);
	for (k = 0; k < NR; k++)
		for (i = 0; i < N; i++)
			in[k * N + i] = (int)mix((unsigned)wrank, (unsigned)k, (unsigned)i) % 1000;
	for (k = 0; k < NR; k++)
		PMPI_Allreduce(in + k * N, ref + k * N, (int)(N / (k + 1)), MPI_INT, ops[k],
			       MPI_COMM_WORLD);
	for (k = 0; k < NB; k++) {
		for (i = 0; i < N; i++)
			out[(NR + k) * N + i] = ref[(NR + k) * N + i] =
				wrank == roots[k] ? (int)(i * 7 + k) : -1;
		PMPI_Bcast(ref + (NR + k) * N, N, MPI_INT, roots[k], MPI_COMM_WORLD);
	}
	snap(&a);
	for (k = 0; k < NR; k++)
		MPI_Iallreduce(in + k * N, out + k * N, (int)(N / (k + 1)), MPI_INT, ops[k],
			       MPI_COMM_WORLD, &r[k]);
	for (k = 0; k < NB; k++)
		MPI_Ibcast(out + (NR + k) * N, N, MPI_INT, roots[k], MPI_COMM_WORLD, &r[NR + k]);
	MPI_Waitall(NR + NB, r, MPI_STATUSES_IGNORE);
	snap(&b);
	path = path_of(&a, &b);
	for (k = 0; k < NR + NB && !fail; k++) {
		char what[48];

		snprintf(what, sizeof(what), "call %ld of %d", k + 1, NR + NB);
		fail = differ(out + k * N, ref + k * N, k < NR ? N / (k + 1) : N, what, diag,
			      sizeof(diag));
	}
	/* the Ibcasts are site-aware at any size */
	report("iallreduce x6 and ibcast x2 in flight at once, one MPI_Waitall", 1,
	       expect_siteaware(shape("world"), 1, 1), path, fail, diag);
	free(in);
	free(out);
	free(ref);
}

/*
 * The schedule moves on in any MPI call that makes progress: every rank
 * starts an Iallreduce; the ranks of the first site then wait in a blocking
 * MPI_Recv from a partner at the second site, which sends only after its
 * Iallreduce has completed.  That needs the first site's leader to move its
 * schedule on inside MPI_Recv (a hang is this test's failure: -t).
 */
static void t_nb_progress(void)
{
	const struct shape *s = shape("world");
	int x = wrank + 1, y = -1, yref = -2, token = 0, fail = 0, path, partner = -1, r;
	int *sites;
	struct xsite_stats a, b;
	MPI_Request req;
	char diag[256] = "";

	if (!wanted("iallreduce"))
		return;
	/* partners: the i-th rank of site 0 and the i-th of the other site */
	sites = xmalloc(sizeof(int) * (size_t)wsize);
	PMPI_Allgather(&mysite, 1, MPI_INT, sites, 1, MPI_INT, MPI_COMM_WORLD);
	{
		int i0 = 0, i1 = 0, mine = -1;

		for (r = 0; r < wsize; r++) {
			if (r == wrank)
				mine = sites[r] == sites[0] ? i0 : i1;
			if (sites[r] == sites[0])
				i0++;
			else
				i1++;
		}
		i0 = i1 = 0;
		for (r = 0; r < wsize && partner < 0; r++) {
			int idx = sites[r] == sites[0] ? i0++ : i1++;

			if (idx == mine && (sites[r] == sites[0]) != (sites[wrank] == sites[0]))
				partner = r;
		}
	}
	PMPI_Allreduce(&x, &yref, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	snap(&a);
	MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req);
	if (partner >= 0 && sites[wrank] == sites[0]) {
		MPI_Recv(&token, 1, MPI_INT, partner, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Wait(&req, MPI_STATUS_IGNORE);
	} else {
		MPI_Wait(&req, MPI_STATUS_IGNORE);
		if (partner >= 0) {
			token = 1;
			MPI_Send(&token, 1, MPI_INT, partner, 77, MPI_COMM_WORLD);
		}
	}
	snap(&b);
	path = path_of(&a, &b);
	fail = differ(&y, &yref, 1, "the Iallreduce", diag, sizeof(diag));
	report("iallreduce moves on inside a blocking MPI_Recv", 1,
	       expect_siteaware(s, 4, 1) && sizeof(int) < large_msg, path, fail, diag);
	free(sites);
}

/* ---- the plan ----------------------------------------------------------- */

static void on_alarm(int sig)
{
	static const char msg[] = "coll_check: timeout\n";

	(void)sig;
	(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1); /* nothing to do if it fails */
	_exit(3);
}

int main(int argc, char **argv)
{
	const char *env;
	int i, j, opt, timeout = 0, multiple = 0, provided = MPI_THREAD_SINGLE;

	while ((opt = getopt(argc, argv, "rqt:c:ma")) != -1)
		switch (opt) {
		case 'r': require = 1; break;
		case 'a': any_path = 1; break;
		case 'q': quick = 1; break;
		case 't': timeout = atoi(optarg); break;
		case 'c': only = optarg; break;
		case 'm': multiple = 1; break;
		default:
			fprintf(stderr, "usage: coll_check [-r] [-q] [-t SECONDS] [-c COLL] [-m] [-a]\n");
			return 2;
		}
	if (timeout > 0) {
		signal(SIGALRM, on_alarm);
		alarm((unsigned)timeout);
	}
	if (multiple)
		MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	else
		MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
	MPI_Comm_size(MPI_COMM_WORLD, &wsize);
	*(void **)&get_stats = dlsym(RTLD_DEFAULT, "xsite_get_stats");
	env = getenv("XSITE_COLL");
	coll_off = env && (!strcmp(env, "off") || !strcmp(env, "0") || !strcmp(env, "no"));
	env = getenv("XSITE_LARGE_MSG");
	if (env && *env) {
		char *end;

		large_msg = strtoul(env, &end, 10);
		large_msg <<= *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
	}
	/* libxsite keeps the MPI library's collectives under THREAD_MULTIPLE */
	if (provided == MPI_THREAD_MULTIPLE)
		coll_off = 1;
	types_init();
	combos_init();
	shapes_init();
	if (wrank == 0) {
		printf("# coll_check: %d ranks, libxsite %s, XSITE_COLL=%s%s%s%s\n", wsize,
		       get_stats ? "loaded" : "NOT loaded", coll_off ? "off" : "on",
		       quick ? ", quick" : "", only ? ", only " : "", only ? only : "");
		if (multiple)
			printf("# MPI_THREAD_MULTIPLE %s\n", provided == MPI_THREAD_MULTIPLE ?
			       "provided" : "NOT provided");
		fflush(stdout);
	}
	if (get_stats && !only) {
		t_race_calls();
		t_eager_bytes();
	}

	t_allreduces(ALLREDUCE);

	t_reduces(REDUCE);

	t_bcasts(BCAST);

	/* Iallreduce, Ibcast, Ibarrier: as the blocking forms, completed four
	 * ways; Ireduce, the library's own, through libxsite */
	t_allreduces(IALLREDUCE);
	t_reduces(IREDUCE);
	t_bcasts(IBCAST);
	t_barrier("world", 1);
	for (j = 0; j < 5; j++)
		t_barrier(two[j], 1);
	t_nb_together();
	t_nb_many();
	t_nb_progress();

	/* Barrier */
	t_barrier("world", 0);
	for (j = 0; j < 5; j++)
		t_barrier(two[j], 0);

	/* Allgather, Iallgather, Gather, Scatter, Alltoall: sizes are per-rank
	 * blocks */
	{
		const char *types[] = { "int", "double", "vector", "double_int", "mixed" };
		const enum coll all[] = { ALLGATHER, ALLTOALL, IALLGATHER },
				rooted[] = { GATHER, SCATTER };
		int k, r, c, z, roots[] = { 0, -1, wsize / 2 + 1 };
		long blk64 = 64 * KiB / wsize, blk1m = MiB / wsize;
		struct {
			const char *type;
			long n;
		} few[] = { { "int", 0 }, { "int", 1 }, { "vector", blk1m / 8 } };

		for (k = 0; k < 5; k++) {
			long is = (long)item_size(types[k]);
			long n[] = { 0, 1, small, blk64 / is, blk1m / is }; /* the last not -q */

			for (c = 0; c < 3; c++)
				for (z = 0; z < (quick ? 4 : 5); z++)
					t_data(all[c], "world", types[k], n[z], 0, 0);
			for (r = 0; r < 3; r++)
				for (c = 0; c < 2; c++)
					for (z = 2; z < 4; z++) /* small, 64 KiB */
						t_data(rooted[c], "world", types[k], n[z], roots[r], 0);
		}
		for (r = 0; r < 2; r++)
			for (z = 0; z < (quick ? 2 : 3); z++) /* the last not -q */
				for (c = 0; c < 2; c++)
					t_data(rooted[c], "world", few[z].type, few[z].n, roots[r], 0);
		for (j = 0; j < 5; j++) {
			t_data(ALLGATHER, two[j], "int", small, 0, 0);
			t_data(ALLGATHER, two[j], "vector", blk64 / 8, 0, 0);
			t_data(IALLGATHER, two[j], "int", small, 0, 0);
			t_data(IALLGATHER, two[j], "mixed", blk64 / 16, 0, 0);
			t_data(ALLTOALL, two[j], "int", small, 0, 0);
			t_data(ALLTOALL, two[j], "mixed", blk64 / 16, 0, 0);
			t_data(GATHER, two[j], "int", blk64 / 4, -1, 0);
			t_data(GATHER, two[j], "mixed", small, 0, 0);
			t_data(SCATTER, two[j], "int", blk64 / 4, -1, 0);
			t_data(SCATTER, two[j], "mixed", small, 0, 0);
		}
		/* in place */
		for (j = 0; j < 2; j++) {
			const char *sh = j ? "parity" : "world";

			for (c = 0; c < 3; c++) {
				t_data(all[c], sh, "int", small, 0, 1);
				t_data(all[c], sh, "vector", blk64 / 8, 0, 1);
			}
			for (r = 0; r < 2; r++)
				for (c = 0; c < 2; c++) {
					t_data(rooted[c], sh, "int", small, roots[r], 1);
					t_data(rooted[c], sh, "vector", blk64 / 8, roots[r], 1);
				}
		}
	}

	/* Reduce_scatter_block, Reduce_scatter, Scan, Exscan: every op x type
	 * at a small count; a few at 64 KiB and on every shape; in place */
	{
		const enum coll red[] = { REDUCE_SCATTER_BLOCK, REDUCE_SCATTER, SCAN, EXSCAN };
		int c;

		for (c = 0; c < 4; c++) {
			for (i = 0; i < ncombos; i++)
				t_vcoll(red[c], "world", combos[i].op, combos[i].t->name, 3, 0);
			t_vcoll(red[c], "world", "SUM", "double", 0, 0);
			t_vcoll(red[c], "world", "SUM", "double", 64 * KiB / 8 / wsize, 0);
			t_vcoll(red[c], "world", "MAXLOC", "double_int", small, 0);
			if (!quick)
				t_vcoll(red[c], "world", "SUM", "int", MiB / 4 / wsize, 0);
			for (j = 0; j < 5; j++) {
				t_vcoll(red[c], two[j], "SUM", "double", small, 0);
				t_vcoll(red[c], two[j], "matmul", "mat2x2", small, 0);
				t_vcoll(red[c], two[j], "vecsum", "vector", 64 * KiB / 8 / wsize, 0);
			}
			for (j = 0; j < 2; j++) {
				const char *sh = j ? "parity" : "world";

				t_vcoll(red[c], sh, "SUM", "double", small, 1);
				t_vcoll(red[c], sh, "MIN", "int", 64 * KiB / 4 / wsize, 1);
				t_vcoll(red[c], sh, "vecsum", "vector", small, 1);
			}
		}
	}
	/* Allgatherv: items of each type, uneven blocks with gaps; in place.
	 * Not "mixed": Open MPI's own (the reference) takes different
	 * algorithms on ranks with different receive types and hangs */
	{
		const char *types[] = { "int", "double", "vector", "double_int", "unsigned_char" };
		int k;

		for (k = 0; k < 5; k++) {
			long is = (long)item_size(types[k]);

			t_vcoll(ALLGATHERV, "world", NULL, types[k], 0, 0);
			t_vcoll(ALLGATHERV, "world", NULL, types[k], small, 0);
			t_vcoll(ALLGATHERV, "world", NULL, types[k], 64 * KiB / wsize / is, 0);
			if (!quick)
				t_vcoll(ALLGATHERV, "world", NULL, types[k], MiB / wsize / is, 0);
		}
		for (j = 0; j < 5; j++) {
			t_vcoll(ALLGATHERV, two[j], NULL, "int", small, 0);
			t_vcoll(ALLGATHERV, two[j], NULL, "vector", 64 * KiB / wsize / 8, 0);
		}
		for (j = 0; j < 2; j++) {
			const char *sh = j ? "parity" : "world";

			t_vcoll(ALLGATHERV, sh, NULL, "int", small, 1);
			t_vcoll(ALLGATHERV, sh, NULL, "vector", 64 * KiB / wsize / 8, 1);
		}
	}

	/* the intercommunicator: the MPI library's own */
	t_barrier("inter", 0);
	t_inter(ALLREDUCE, small);
	t_inter(BCAST, small);
	t_inter(ALLGATHER, small);
	t_inter(ALLREDUCE, 64 * KiB / 4);
	t_inter(BCAST, 64 * KiB / 4);

	/* freeing the communicators runs libxsite's delete callback */
	for (i = 0; i < nshapes; i++)
		if (shapes[i].comm != MPI_COMM_NULL && shapes[i].comm != MPI_COMM_WORLD)
			MPI_Comm_free(&shapes[i].comm);
	MPI_Op_free(&OP_USERSUM);
	MPI_Op_free(&OP_MATMUL);
	MPI_Op_free(&OP_VECSUM);
	MPI_Type_free(&T_VEC.dt);
	MPI_Type_free(&T_MAT.dt);
	MPI_Type_free(&T_C4.dt);

	if (wrank == 0) {
		printf("1..%d\n", ntest);
		if (nfail)
			printf("# %d of %d failed\n", nfail, ntest);
		fflush(stdout);
	}
	MPI_Finalize();
	return nfail ? 1 : 0;
}
