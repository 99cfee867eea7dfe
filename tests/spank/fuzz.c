/*
 * fuzz.c: generated-input tests of xsite.so's input handling, TAP output.
 *
 *   plugstack.conf arguments (config.c: xsite_config_parse), the flags
 *   (args.c: xsite_args_set, the environment twins, the values of an
 *   enclosing job, xsite_args_check) and the Lua bridge's checks and task
 *   environment (lua_bridge.c against the real xsite Lua library and the
 *   testbed's xsite.conf), fed with random and mutated inputs.
 *
 * Two more targets are the parsers root runs on a user's data in
 * slurmstepd, through the real bridge as remote.c calls them:
 *
 *   traffic   libxsite's traffic record, which the job's owner can write
 *             as they like: xsite.spank.step_end (xsite.json.decode under
 *             xsite.traffic (its JSON limits, the schema check), the merge into
 *             the job's record), with records mutated byte by byte and
 *             field by field (numbers out of range, strings with control
 *             characters, deep nesting, unknown sites, wrong shapes, junk);
 *   profile   an explicit --comm-profile (op=...,b=...,x=...), which the
 *             job's environment carries into slurmstepd: xsite.profile.resolve
 *             (and its cache of explicit specs) through check_profile, and
 *             xsite.spank.step_start, which puts it into the record.
 *
 * For every case: no crash, and either acceptance or a rejection with a
 * clear message: one line, starting with "xsite: " and naming the key, the
 * flag or its twin (root's parsers: step_end and step_start never fail,
 * what they log holds no control character nor broken UTF-8, and no control
 * character reaches the record).  Where the rule is simple the outcome itself is checked against
 * an independent model (plugstack arguments, --site-affinity,
 * --xsite-report, repeats, a well-formed traffic record or explicit profile
 * is accepted).  Leaks and memory errors: tests/spank/fuzz-asan is this
 * program built with -fsanitize=address,undefined (make check runs a short
 * slice; tests/bench/fuzz runs a million cases).
 *
 * Usage: fuzz [CASES [SEED]] (default 30000 cases, seed 1; also
 * XSITE_FUZZ_CASES, XSITE_FUZZ_SEED; XSITE_FUZZ_TARGETS=root runs the two
 * targets of root's parsers only, half the cases each); the library and the
 * config are compiled in (XSITE_TEST_LUADIR, XSITE_TEST_CONFIG).  One TAP
 * test per target; the first failing case of each is printed with its
 * inputs.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../spank/args.h"
#include "../../spank/config.h"
#include "../../spank/lua_bridge.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static size_t pick(size_t n)
{
	return (size_t)(rnd() % n);
}

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* Values that are valid somewhere: the mutations start from them. */
static const char *const seeds[] = {
	"auto", "pin", "span", "alpha", "beta", "low", "medium", "high", "pingpong",
	"op=1e12,b=1GB,x=1MB", "op=1e9,b=1GB,x=10MB,steps=100,pattern=tree",
	"op=1e13,b=10GB,x=200GB,steps=10000,pattern=alltoall", "op=1,b=2,x=3,steps=1",
	"/etc/slurm/xsite.conf", "/usr/share/lua/5.1", "yes", "no", ".", "reports/run1",
	"(null)", "", "alpha1", "beta[1-2]", "alpha[1-2],beta[1-2]", "alpha[1-2", "x[]",
	"1e400", "-1", "0", "nan", "inf", "1KB", "930MB/s", "145us", "9ms",
};

static const char special[] = "=,[]()|&*%\\'\" \t\n\x01\x7f\xff-_.:/;$#";

/* A new string: a seed, random bytes, or a seed mutated a few times. */
static char *gen(void)
{
	char buf[512];
	size_t n = 0, i, k;

	switch (pick(4)) {
	case 0: /* a seed as it is */
		return strdup(seeds[pick(NELEM(seeds))]);
	case 1: /* random bytes (1..255: a C string holds no NUL) */
		n = pick(64);
		for (i = 0; i < n; i++)
			buf[i] = (char)(1 + pick(255));
		buf[n] = '\0';
		return strdup(buf);
	default:
		break;
	}
	/* a draw that picks nothing: the cases of a seed stay as they were */
	(void)pick(NELEM(seeds));
	snprintf(buf, sizeof(buf), "%s", seeds[pick(NELEM(seeds))]);
	n = strnlen(buf, sizeof(buf) - 1);
	for (k = 1 + pick(4); k > 0; k--) {
		switch (pick(6)) {
		case 0: /* flip a bit */
			if (n > 0) {
				i = pick(n);
				buf[i] = (char)((unsigned char)buf[i] ^ (1U << pick(8)));
				if (buf[i] == '\0')
					buf[i] = 'x';
			}
			break;
		case 1: /* insert a special character */
			if (n + 1 < sizeof(buf)) {
				i = pick(n + 1);
				memmove(buf + i + 1, buf + i, n - i + 1);
				buf[i] = special[pick(sizeof(special) - 1)];
				n++;
			}
			break;
		case 2: /* delete a character */
			if (n > 0) {
				i = pick(n);
				memmove(buf + i, buf + i + 1, n - i);
				n--;
			}
			break;
		case 3: /* truncate */
			n = pick(n + 1);
			buf[n] = '\0';
			break;
		case 4: /* append another seed, with a separator */
			i = (size_t)snprintf(buf + n, sizeof(buf) - n, "%c%s", ",=|["[pick(4)],
					     seeds[pick(NELEM(seeds))]);
			n = strnlen(buf, sizeof(buf) - 1);
			(void)i;
			break;
		default: /* repeat the string */
			if (n < sizeof(buf) / 2) {
				memcpy(buf + n, buf, n);
				n *= 2;
				buf[n] = '\0';
			}
			break;
		}
	}
	return strdup(buf);
}

/* ---- TAP ----------------------------------------------------------------- */

static int test_no, failures;

struct target {
	const char *name;
	long cases, accepted, rejected;
	int failed;
};

/* The first failure of a target is printed; later ones are only counted. */
static void fail(struct target *t, const char *format, ...) __attribute__((format(printf, 2, 3)));

static void fail(struct target *t, const char *format, ...)
{
	va_list ap;

	if (t->failed++ > 0)
		return;
	printf("# %s: ", t->name);
	va_start(ap, format);
	vprintf(format, ap);
	va_end(ap);
	printf("\n");
}

static void report(struct target *t)
{
	printf("%sok %d - %s: %ld cases (%ld accepted, %ld rejected with a clear message)\n",
	       t->failed ? "not " : "", ++test_no, t->name, t->cases, t->accepted, t->rejected);
	if (t->failed) {
		printf("# %d failing cases\n", t->failed);
		failures++;
	}
}

/* A printable rendering of s for the diagnostics (static buffer). */
static const char *show(const char *s)
{
	static char out[4][2048];
	static int slot;
	char *o = out[slot++ % 4];
	size_t j = 0;

	if (s == NULL)
		return "(NULL)";
	for (; *s != '\0' && j + 5 < sizeof(out[0]); s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c >= 0x7f)
			j += (size_t)snprintf(o + j, sizeof(out[0]) - j, "\\x%02x", c);
		else
			o[j++] = (char)c;
	}
	o[j] = '\0';
	return o;
}

/*
 * A clear message: "xsite: " and more, on one line unless the input itself
 * held a newline (values are quoted as given).
 */
static int clear_message(const char *err, int input_newline)
{
	return err != NULL && strncmp(err, "xsite: ", 7) == 0 && strlen(err) > 9 &&
	       (input_newline || strchr(err, '\n') == NULL);
}

/* A control character in v (what a log line must not carry raw). */
static int has_control(const char *v)
{
	for (; *v != '\0'; v++) {
		if ((unsigned char)*v < 0x20 || (unsigned char)*v == 0x7f)
			return 1;
	}
	return 0;
}

/*
 * Whether a log line is clean: no control character (C0, DEL, C1), only
 * well-formed UTF-8, at most max bytes.
 */
static int clean_line(const char *v, size_t max)
{
	const unsigned char *p = (const unsigned char *)v;

	if (strlen(v) > max)
		return 0;
	while (*p != '\0') {
		size_t len = 1, k;

		if (*p < 0x20 || *p == 0x7f)
			return 0;
		if (*p >= 0x80) {
			/* a lead byte, then continuation bytes; C1 is U+0080-U+009F */
			if (*p >= 0xc2 && *p <= 0xdf)
				len = 2;
			else if (*p >= 0xe0 && *p <= 0xef)
				len = 3;
			else if (*p >= 0xf0 && *p <= 0xf4)
				len = 4;
			else
				return 0;
			for (k = 1; k < len; k++) {
				if (p[k] < 0x80 || p[k] > 0xbf)
					return 0;
			}
			if (*p == 0xc2 && p[1] < 0xa0)
				return 0;
		}
		p += len;
	}
	return 1;
}

static int nl(const char *s)
{
	return s != NULL && strchr(s, '\n') != NULL;
}

/* ---- config.c --------------------------------------------------------------- */

static const char *const config_keys[] = { "config", "tune_mpi", "lua_path" };

/* The model: is this one argument valid? */
static int config_arg_valid(const char *arg)
{
	const char *eq = strchr(arg, '=');
	size_t klen;

	if (eq == NULL || eq[1] == '\0')
		return 0;
	klen = (size_t)(eq - arg);
	if ((klen == 6 && strncmp(arg, "config", 6) == 0) || (klen == 8 && strncmp(arg, "lua_path", 8) == 0))
		return eq[1] == '/';
	if (klen == 8 && strncmp(arg, "tune_mpi", 8) == 0)
		return strcmp(eq + 1, "yes") == 0 || strcmp(eq + 1, "no") == 0;
	return 0;
}

static void fuzz_config(struct target *t)
{
	char *av[6], *err = NULL, key[600];
	int ac = (int)pick(6), i, rc, model = 1, bad = -1;
	struct xsite_config c;

	for (i = 0; i < ac; i++) {
		if (pick(3) == 0) {
			av[i] = gen();
		} else {
			char *v = gen();

			if (asprintf(&av[i], "%s=%s", pick(5) == 0 ? "colour" : config_keys[pick(3)], v) < 0)
				av[i] = NULL;
			free(v);
		}
		if (av[i] == NULL)
			av[i] = strdup("x");
		if (model && !config_arg_valid(av[i])) {
			model = 0;
			bad = i;
		}
	}
	rc = xsite_config_parse(&c, ac, av, pick(2) ? "/srv/slurm/slurm.conf" : NULL, &err);
	t->cases++;
	if (rc == 0) {
		t->accepted++;
		if (!model)
			fail(t, "accepted an invalid argument '%s'", show(av[bad]));
		else if (c.config_path == NULL || c.lua_path == NULL || c.config_path[0] != '/')
			fail(t, "accepted, but the fields are not set");
		xsite_config_free(&c);
	} else {
		const char *eq = strchr(av[bad >= 0 ? bad : 0], '=');

		t->rejected++;
		snprintf(key, sizeof(key), "%.*s", eq ? (int)(eq - av[bad >= 0 ? bad : 0]) : 500,
			 av[bad >= 0 ? bad : 0]);
		if (model)
			fail(t, "rejected valid arguments (first '%s'): %s", show(av[0]), show(err));
		else if (!clear_message(err, nl(av[bad])) || strncmp(err + 7, key, strlen(key)) != 0)
			fail(t, "argument '%s': the message does not start with 'xsite: %s': %s",
			     show(av[bad]), show(key), show(err));
		free(err);
	}
	for (i = 0; i < ac; i++)
		free(av[i]);
}

/* ---- args.c: repeats, twins, inherited values -------------------------------------- */

static const char *fake_env[8];

static char *fake_getenv(const char *name)
{
	size_t n = strlen(name);
	int i;

	for (i = 0; fake_env[i] != NULL; i++) {
		if (strncmp(fake_env[i], name, n) == 0 && fake_env[i][n] == '=')
			return (char *)fake_env[i] + n + 1;
	}
	return NULL;
}

static const char *const env_names[] = {
	"XSITE_SITE_AFFINITY", "XSITE_COMM_PROFILE", "XSITE_REPORT",
	"SLURM_SPANK__SLURM_SPANK_OPTION_xsite_site_affinity",
	"SLURM_SPANK__SLURM_SPANK_OPTION_xsite_comm_profile",
	"_SLURM_SPANK_OPTION_xsite_xsite_report",
};

/* Fill fake_env with up to 6 random entries (strings kept in store). */
static void random_env(char **store)
{
	int i, n = (int)pick(7);

	for (i = 0; i < n; i++) {
		char *v = gen();

		if (asprintf(&store[i], "%s=%s", env_names[pick(NELEM(env_names))], v) < 0)
			store[i] = NULL;
		free(v);
		fake_env[i] = store[i] ? store[i] : "X=1";
	}
	fake_env[n] = NULL;
	for (; i < 7; i++)
		store[i] = NULL;
}

static int valid_affinity(const char *v)
{
	static const char *const ok[] = { "auto", "pin", "span", "alpha", "beta" };
	size_t i;

	for (i = 0; i < NELEM(ok); i++) {
		if (strcmp(v, ok[i]) == 0)
			return 1;
	}
	return 0;
}

/*
 * One client's flags: inherited values, 1..4 flags from the command line,
 * the twins, then the checks (x: a bridge with or without a configuration).
 */
static void fuzz_args(struct target *t, struct target *tc, struct xsite_lua *x, int have_config)
{
	struct xsite_args a = { 0 };
	char *store[7], *err = NULL, *prev = NULL, *v;
	int i, n = 1 + (int)pick(4), rc;

	random_env(store);
	if (xsite_args_note_inherited(&a, fake_getenv, &err) < 0) {
		fail(t, "xsite_args_note_inherited failed: %s", show(err));
		free(err);
		err = NULL;
	}
	for (i = 0; i < n; i++) {
		enum xsite_flag f = (enum xsite_flag)pick(XSITE_NFLAGS);
		const struct xsite_flag_info *info = &xsite_flag_info[f];
		enum xsite_source before = a.source[f];

		v = pick(8) == 0 ? NULL : gen();
		free(prev);
		prev = a.value[f] ? strdup(a.value[f]) : NULL;
		rc = xsite_args_set(&a, f, v, &err);
		t->cases++;
		if (rc == 0) {
			t->accepted++;
			if (a.value[f] == NULL && !(v != NULL && v[0] == '\0' && before == XSITE_SRC_NONE))
				fail(t, "--%s='%s' accepted, but no value is stored", info->name, show(v));
			else if (before == XSITE_SRC_FLAG &&
				 (prev == NULL || a.value[f] == NULL || strcmp(prev, a.value[f]) != 0))
				fail(t, "--%s: a different repeat '%s' after '%s' was accepted", info->name,
				     show(v), show(prev));
		} else {
			char want[64];

			t->rejected++;
			snprintf(want, sizeof(want), "xsite: --%s: ", info->name);
			if (!clear_message(err, nl(v) || nl(prev)) || strncmp(err, want, strlen(want)) != 0)
				fail(t, "--%s='%s': the message does not start with '%s': %s", info->name,
				     show(v), want, show(err));
			else if (prev != NULL && a.value[f] != NULL && strcmp(prev, a.value[f]) != 0)
				fail(t, "--%s: a rejected value replaced '%s'", info->name, show(prev));
			free(err);
			err = NULL;
		}
		free(v);
	}
	free(prev);
	prev = NULL;
	if (xsite_args_apply_env(&a, fake_getenv, &err) < 0) {
		fail(t, "xsite_args_apply_env failed: %s", show(err));
		free(err);
		err = NULL;
	}

	/* the checks */
	rc = xsite_args_check(&a, x, &err);
	tc->cases++;
	if (rc == 0) {
		const char *aff = a.value[XSITE_FLAG_AFFINITY], *rep = a.value[XSITE_FLAG_REPORT];

		tc->accepted++;
		if (have_config && aff != NULL && !valid_affinity(aff))
			fail(tc, "accepted --site-affinity='%s'", show(aff));
		else if (rep != NULL && has_control(rep))
			fail(tc, "accepted --xsite-report='%s'", show(rep));
	} else {
		int f, named = 0;

		tc->rejected++;
		/* the message names one of the set flags, or its twin */
		for (f = 0; f < XSITE_NFLAGS && err != NULL; f++) {
			char flag[64];

			if (a.value[f] == NULL)
				continue;
			snprintf(flag, sizeof(flag), "--%s", xsite_flag_info[f].name);
			if (strncmp(err + 7, flag, strlen(flag)) == 0 ||
			    strncmp(err + 7, xsite_flag_info[f].env, strlen(xsite_flag_info[f].env)) == 0)
				named = 1;
		}
		if (!clear_message(err, nl(a.value[0]) || nl(a.value[1]) || nl(a.value[2])) || !named)
			fail(tc, "rejected (affinity '%s', profile '%s', report '%s') without a clear message: %s",
			     show(a.value[0]), show(a.value[1]), show(a.value[2]), show(err));
		else if (have_config && a.value[XSITE_FLAG_AFFINITY] != NULL &&
			 valid_affinity(a.value[XSITE_FLAG_AFFINITY]) &&
			 (strncmp(err, "xsite: --site-affinity", 22) == 0 ||
			  strncmp(err, "xsite: XSITE_SITE_AFFINITY", 26) == 0))
			fail(tc, "rejected a valid --site-affinity='%s': %s", show(a.value[0]), show(err));
	}
	free(err);
	xsite_args_free(&a);
	for (i = 0; i < 7; i++)
		free(store[i]);
}

/* ---- lua_bridge.c: the task environment (hostlists) -------------------------------- */

static void fuzz_task_env(struct target *t, struct xsite_lua *x)
{
	struct xsite_task_env env;
	char *host = gen(), *nodes = gen();
	int rc;

	rc = xsite_lua_task_env(x, host, nodes, &env);
	t->cases++;
	if (rc == 0) {
		t->accepted++;
		if (env.sites == NULL || env.spanning == NULL || env.latency_us == NULL ||
		    env.bandwidth_mbps == NULL)
			fail(t, "host '%s', nodelist '%s': accepted, but a field is missing", show(host),
			     show(nodes));
		else if (strcmp(env.spanning, "0") != 0 && strcmp(env.spanning, "1") != 0)
			fail(t, "XSITE_SPANNING='%s'", show(env.spanning));
		xsite_task_env_free(&env);
	} else {
		const char *e = xsite_lua_error(x);

		t->rejected++;
		if (e == NULL || strncmp(e, "SLURM_JOB_NODELIST: ", 20) != 0 || !clean_line(e, 1024 + 3))
			fail(t, "nodelist '%s': the message does not name SLURM_JOB_NODELIST on one clean line: %s",
			     show(nodes), show(e));
	}
	free(host);
	free(nodes);
}

/* ---- root's parsers: the traffic record ---------------------------------------- */

/* A growing text of at most TEXT_MAX bytes. */
#define TEXT_MAX ((size_t)96 * 1024)

struct text {
	char s[TEXT_MAX + 1];
	size_t n;
};

static void add(struct text *t, const char *format, ...) __attribute__((format(printf, 2, 3)));

static void add(struct text *t, const char *format, ...)
{
	va_list ap;
	int n;

	if (t->n >= TEXT_MAX)
		return;
	va_start(ap, format);
	n = vsnprintf(t->s + t->n, TEXT_MAX + 1 - t->n, format, ap);
	va_end(ap);
	t->n += n > 0 ? (size_t)n : 0;
	if (t->n > TEXT_MAX)
		t->n = TEXT_MAX;
}

/* Values a field may get instead of its own: numbers out of range, wrong types. */
static const char *const hostile_values[] = {
	"-1", "-0", "0", "1.5", "1e999", "-1e999", "1e-999", "18446744073709551616", "9007199254740993",
	"123456789012345678901234567890123456789012345678901234567890", "01", "1.", ".5", "1e", "0x10",
	"NaN", "Infinity", "null", "true", "false", "\"\"", "\"42\"", "\"\\u001b[2J\\u0007\"",
	"\"\\ud800\"", "\"\\u0000\"", "[]", "{}", "[[[[[[[[[[[[1]]]]]]]]]]]]", "{\"a\":{\"b\":{}}}",
	"\"alpha\"", "[0,1]", "[[0]]", "{\"gamma\":[0]}", "{\"alpha\":[0,0]}", "{\"alpha\":[5]}",
};

static const char *const json_specials[] = { "{", "}", "[", "]", ",", ":", "\"", "\\", "\\u", "e", "-",
	".", "\x00", "\x1b", "\xff", "\xc2\x9b", " ", "\n" };

/* field (text ending in ',') put first in the object t, if t is one and it fits. */
static void first_field(struct text *t, const struct text *field)
{
	if (t->n < 2 || t->s[0] != '{' || t->n + field->n > TEXT_MAX)
		return;
	memmove(t->s + 1 + field->n, t->s + 1, t->n);
	memcpy(t->s + 1, field->s, field->n);
	t->n += field->n;
}

/*
 * libxsite's record for job 42: ranks 1..8 split between alpha and beta,
 * counts that add up, a matrix, or its edges beside a null matrix, or
 * neither.  *valid: nothing was changed.
 */
static void gen_traffic(struct text *t, int *valid)
{
	static struct text extra;
	int ranks = 1 + (int)pick(8), r, c, i, k, first, matrix = (int)pick(4);
	unsigned long long p2p = pick(1000000), coll = pick(1000000), pm = pick(1000), cm = pick(1000);

	t->n = 0;
	*valid = 1;
	if (pick(20) == 0) {
		/* random bytes */
		size_t n = pick(2048);

		for (i = 0; i < (int)n; i++)
			t->s[i] = (char)(1 + pick(255));
		t->s[n] = '\0';
		t->n = n;
		*valid = 0;
		return;
	}
	add(t, "{\"version\":1,\"job\":%s,\"step\":0,\"ranks\":%d,\"sites\":{", pick(2) ? "42" : "\"42\"",
	    ranks);
	add(t, "\"alpha\":[");
	for (r = 0; r < (ranks + 1) / 2; r++)
		add(t, "%s%d", r ? "," : "", r);
	add(t, "]");
	if (ranks > 1) {
		add(t, ",\"beta\":[");
		for (r = (ranks + 1) / 2; r < ranks; r++)
			add(t, "%s%d", r > (ranks + 1) / 2 ? "," : "", r);
		add(t, "]");
	}
	add(t, "},\"cross\":{\"bytes\":%llu,\"messages\":%llu,\"p2p_bytes\":%llu,\"p2p_messages\":%llu,"
	    "\"coll_bytes\":%llu,\"coll_messages\":%llu},", p2p + coll, pm + cm, p2p, pm, coll, cm);
	add(t, "\"collectives\":\"site-aware\",\"large_msg\":4194304,\"streams\":2,\n\"per_rank\":[");
	for (r = 0; r < ranks; r++)
		add(t, "%s{\"rank\":%d,\"site\":\"%s\",\"host\":\"node%d\",\"cross_bytes\":0,"
		    "\"cross_messages\":0}", r ? "," : "", r, r < (ranks + 1) / 2 ? "alpha" : "beta", r);
	add(t, "],\n\"matrix\":");
	if (matrix < 2) {
		add(t, "null,\"edges\":");
		if (matrix == 0) {
			add(t, "null");
		} else {
			add(t, "[");
			for (r = 0, first = 1; r < ranks; r++)
				for (c = 0; c < ranks; c++)
					if (pick(2)) {
						add(t, "%s%d,%d,%llu", first ? "" : ",", r, c,
						    (unsigned long long)pick(100000));
						first = 0;
					}
			add(t, "]");
		}
	} else {
		add(t, "[");
		for (r = 0; r < ranks; r++) {
			add(t, "%s[", r ? "," : "");
			for (c = 0; c < ranks; c++)
				add(t, "%s%llu", c ? "," : "", r == c ? 0ULL : (unsigned long long)pick(100000));
			add(t, "]");
		}
		add(t, "]");
	}
	add(t, "}\n");
	if (pick(8) == 0)
		return;
	*valid = 0;
	for (k = 1 + (int)pick(3); k > 0; k--) {
		size_t at = pick(t->n + 1), len, m;
		const char *v;
		char *end;

		switch (pick(8)) {
		case 0: /* a value replaced: the token after a ':' or a '[' or a ',' */
			for (i = 0; i < 8 && at < t->n && !strchr(":[,", t->s[at]); i++)
				at = pick(t->n);
			if (at >= t->n)
				break;
			at++;
			end = t->s + at + strcspn(t->s + at, ",]}");
			v = hostile_values[pick(NELEM(hostile_values))];
			len = strlen(v);
			m = (size_t)(end - (t->s + at));
			if (t->n - m + len > TEXT_MAX)
				break;
			memmove(t->s + at + len, t->s + at + m, t->n - at - m + 1);
			memcpy(t->s + at, v, len);
			t->n = t->n - m + len;
			break;
		case 1: /* a special character or sequence inserted */
			v = json_specials[pick(NELEM(json_specials))];
			len = strlen(v) ? strlen(v) : 1;
			if (t->n + len > TEXT_MAX)
				break;
			memmove(t->s + at + len, t->s + at, t->n - at + 1);
			memcpy(t->s + at, v, len);
			t->n += len;
			break;
		case 2: /* truncated */
			t->n = at;
			t->s[at] = '\0';
			break;
		case 3: /* a byte flipped */
			if (at < t->n) {
				t->s[at] = (char)((unsigned char)t->s[at] ^ (1U << pick(8)));
				if (t->s[at] == '\0')
					t->s[at] = '\x01';
			}
			break;
		case 4: /* deep nesting in front of a value */
			len = 1 + pick(300);
			if (t->n + 2 * len > TEXT_MAX || at == 0 || t->s[at - 1] != ':')
				break;
			memmove(t->s + at + len, t->s + at, t->n - at + 1);
			memset(t->s + at, '[', len);
			t->n += len;
			break;
		case 5: /* a long array of numbers as an extra field */
			extra.n = 0;
			add(&extra, "\"extra\":[");
			for (m = 0, len = pick(5000); m < len; m++)
				add(&extra, "%s%u", m ? "," : "", (unsigned)pick(10));
			add(&extra, "],");
			first_field(t, &extra);
			break;
		case 6: /* a long string with escapes */
			extra.n = 0;
			add(&extra, "\"version\":\"");
			for (m = 0, len = pick(600); m < len; m++)
				add(&extra, "%s", pick(4) ? "x" : "\\u001b");
			add(&extra, "\",");
			first_field(t, &extra);
			break;
		default: /* a span repeated */
			len = pick(t->n - at + 1);
			if (t->n + len > TEXT_MAX)
				break;
			memmove(t->s + at + len, t->s + at, t->n - at + 1);
			memmove(t->s + at + len, t->s + at, len);
			t->n += len;
			break;
		}
		t->s[t->n] = '\0';
		t->n = strlen(t->s);
	}
}

/*
 * Safe for a log line or a terminal, and at most max bytes: well-formed
 * UTF-8 without a control character (C0, DEL, C1).  (report.c escapes what
 * is not ASCII too before it logs: xsite_printable.)
 */
static int log_safe(const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = s ? strlen(s) : 0;
	int len, k;

	if (n > max)
		return 0;
	for (; p != NULL && *p != '\0'; p += len) {
		if (*p < 0x20 || *p == 0x7f)
			return 0;
		if (*p < 0x80) {
			len = 1;
			continue;
		}
		len = *p >= 0xc2 && *p <= 0xdf ? 2 : *p >= 0xe0 && *p <= 0xef ? 3 : *p >= 0xf0 && *p <= 0xf4 ? 4 : 0;
		if (len == 0 || (*p == 0xc2 && p[1] < 0xa0) || (*p == 0xe0 && p[1] < 0xa0) ||
		    (*p == 0xed && p[1] >= 0xa0) || (*p == 0xf0 && p[1] < 0x90) || (*p == 0xf4 && p[1] >= 0x90))
			return 0;
		for (k = 1; k < len; k++) {
			if (p[k] < 0x80 || p[k] > 0xbf)
				return 0;
		}
	}
	return 1;
}

static char *previous_record;

static void fuzz_traffic(struct target *t, struct xsite_lua *x, const char *start)
{
	static struct text traffic;
	char *rec = NULL, *log = NULL;
	int valid, rc, merge = previous_record != NULL && pick(4) == 0;
	struct xsite_step_end end = { .start = start, .finish = "1010",
				      .existing = merge ? previous_record : NULL };

	gen_traffic(&traffic, &valid);
	end.traffic = traffic.s;
	rc = xsite_lua_step_end(x, &end, &rec, &log);
	t->cases++;
	if (rc < 0) {
		fail(t, "step_end failed on traffic '%s': %s", show(traffic.s), show(xsite_lua_error(x)));
		return;
	}
	if (strstr(rec, "\"mpi\":{") != NULL)
		t->accepted++;
	else
		t->rejected++;
	if (strstr(rec, "\"schema\":\"xsite-report\"") == NULL)
		fail(t, "traffic '%s': not a record: %s", show(traffic.s), show(rec));
	else if (valid && strstr(rec, "\"mpi\":{") == NULL)
		fail(t, "a well-formed traffic record was refused: '%s': %s", show(traffic.s), show(rec));
	else if (!log_safe(log, 4096))
		fail(t, "traffic '%s': the log line has a control character or broken UTF-8: %s", show(traffic.s),
		     show(log));
	else if (strstr(rec, "\\u00") != NULL || strstr(rec, "\\u007f") != NULL)
		fail(t, "traffic '%s': a control character in the record: %s", show(traffic.s), show(rec));
	if (pick(16) == 0) {
		free(previous_record);
		previous_record = rec;
		rec = NULL;
	}
	free(rec);
	free(log);
}

/* ---- root's parsers: an explicit --comm-profile ------------------------------- */

static const char *const good_values[][6] = {
	{ "op", "1e12", "5e9", "1k", "2G", "100" },
	{ "b", "1GB", "10MB", "1KiB", "4096", "2.5TB" },
	{ "x", "0", "1MB", "10GB", "1", "3MiB" },
	{ "steps", "0", "100", "1k", "7", "100000" },
};

static const char *const bad_values[] = {
	"", "-1", "1e999", "nan", "inf", "0x10", "1e308GB", "1XB", "1 GB", "=", "1,5", "\x1b[2J", "1e-400",
	"999999999999999999999999999999", "1.5.5", "GB", "op=1", "\xff\xfe",
};

static const char *const patterns[] = { "alltoall", "halo1d", "halo2d", "halo3d", "tree", "none", "ring" };
static const char *const upper_keys[] = { "OP", "B", "X", "Steps", "PATTERN" };

/* An explicit profile: *valid when every field is well-formed and the required ones are there. */
static char *gen_profile(int *valid)
{
	struct text t;
	int fields = 3 + (int)pick(3), i, seen[5] = { 0 }, f;

	t.n = 0;
	*valid = 1;
	for (i = 0; i < fields; i++) {
		f = (int)pick(5);
		if (i < 3 && !pick(8) == 0)
			f = i;		/* op, b, x first, mostly */
		if (seen[f])
			*valid = 0;	/* given twice */
		seen[f] = 1;
		/* keys in any case, blanks around them */
		add(&t, "%s%s%s=", i ? (pick(10) ? "," : " , ") : "", pick(10) ? "" : " ",
		    pick(10) ? (f < 4 ? good_values[f][0] : "pattern") : upper_keys[f]);
		if (f == 4) {
			const char *p = patterns[pick(NELEM(patterns))];

			add(&t, "%s", p);
			if (strcmp(p, "ring") == 0)
				*valid = 0;
		} else if (pick(6) == 0) {
			add(&t, "%s", bad_values[pick(NELEM(bad_values))]);
			*valid = 0;
		} else {
			add(&t, "%s", good_values[f][1 + pick(5)]);
		}
	}
	if (!seen[0] || !seen[1] || !seen[2])
		*valid = 0;
	if (pick(10) == 0) {
		/* mutated beyond the grammar */
		char *m = gen();

		add(&t, "%s", m);
		free(m);
		*valid = 0;
	}
	if (pick(50) == 0) {
		/* long */
		for (i = 0; i < 200; i++)
			add(&t, ",x=%d", i);
		*valid = 0;
	}
	return strdup(t.s);
}

static void fuzz_profile(struct target *t, struct xsite_lua *x)
{
	char *spec, *rec = NULL;
	int valid, rc;

	spec = gen_profile(&valid);
	rc = xsite_lua_check_profile(x, spec);
	t->cases++;
	if (rc == 0) {
		t->accepted++;
	} else {
		const char *e = xsite_lua_error(x);

		t->rejected++;
		if (valid)
			fail(t, "a well-formed profile was refused: '%s': %s", show(spec), show(e));
		else if (e == NULL || e[0] == '\0' || (strchr(e, '\n') != NULL && strchr(spec, '\n') == NULL))
			fail(t, "profile '%s': not a one-line message: %s", show(spec), show(e));
	}
	/* in slurmstepd the same value goes into the record: step_start never fails */
	if (pick(4) == 0) {
		struct xsite_step_start req = { .job = "42", .step = "0", .user = "alice", .uid = "1001",
						.job_nodes = "alpha1,beta1", .profile = spec, .start = "1000" };

		if (xsite_lua_step_start(x, &req, &rec) < 0)
			fail(t, "step_start failed on profile '%s': %s", show(spec), show(xsite_lua_error(x)));
		else if (strstr(rec, "\\u00") != NULL || strstr(rec, "\\u007f") != NULL)
			fail(t, "profile '%s': a control character in the record: %s", show(spec), show(rec));
		else if (rc == 0 && strstr(rec, "\"prediction\":{") == NULL)
			fail(t, "profile '%s' accepted, but no prediction: %s", show(spec), show(rec));
		free(rec);
	}
	free(spec);
}

/* The start of the step whose end the traffic cases fuzz. */
static const struct xsite_step_start medium_start = {
	.job = "42", .step = "0", .user = "alice", .uid = "1001", .job_nodes = "alpha1,beta1",
	.profile = "medium", .start = "1000",
};

int main(int argc, char **argv)
{
	long cases = 30000, i;
	int root_only = 0;
	const char *env;
	char *err = NULL;
	struct xsite_lua *with, *without;
	struct target tcfg = { "plugstack arguments (xsite_config_parse)", 0, 0, 0, 0 };
	struct target targs = { "flags: repeats, twins, inherited values (xsite_args_set)", 0, 0, 0, 0 };
	struct target tchk = { "checks with xsite.conf (xsite_args_check)", 0, 0, 0, 0 };
	struct target tnoc = { "checks without a configuration (xsite_args_check)", 0, 0, 0, 0 };
	struct target tenv = { "task environment, hostlists (xsite_lua_task_env)", 0, 0, 0, 0 };
	struct target ttraffic = { "root: traffic records (xsite.spank.step_end)", 0, 0, 0, 0 };
	struct target tprofile = { "root: explicit profiles (xsite.profile.resolve, step_start)", 0, 0, 0, 0 };
	char *start = NULL;

	rng_state = 1;
	if ((env = getenv("XSITE_FUZZ_CASES")) != NULL)
		cases = atol(env);
	if ((env = getenv("XSITE_FUZZ_SEED")) != NULL)
		rng_state = strtoull(env, NULL, 10);
	if ((env = getenv("XSITE_FUZZ_TARGETS")) != NULL)
		root_only = strcmp(env, "root") == 0;
	if (argc > 1)
		cases = atol(argv[1]);
	if (argc > 2)
		rng_state = strtoull(argv[2], NULL, 10);
	if (rng_state == 0)
		rng_state = 1;

	printf("1..7\n# %ld cases, seed %llu\n", cases, (unsigned long long)rng_state);
	with = xsite_lua_open(XSITE_TEST_LUADIR, &err);
	without = with ? xsite_lua_open(XSITE_TEST_LUADIR, &err) : NULL;
	if (with == NULL || without == NULL || xsite_lua_load_config(with, XSITE_TEST_CONFIG) < 0) {
		printf("Bail out! cannot load the library or %s: %s\n", XSITE_TEST_CONFIG,
		       err ? err : xsite_lua_error(with));
		return 1;
	}
	if (xsite_lua_step_start(with, &medium_start, &start) < 0) {
		printf("Bail out! step_start: %s\n", xsite_lua_error(with));
		return 1;
	}

	for (i = 0; i < cases; i++) {
		switch (root_only ? 8 + i % 4 : i % 12) {
		case 0:
		case 1:
		case 2:
			fuzz_config(&tcfg);
			break;
		case 3:
		case 4:
		case 5:
			fuzz_args(&targs, &tchk, with, 1);
			break;
		case 6:
			fuzz_args(&targs, &tnoc, without, 0);
			break;
		case 7:
			fuzz_task_env(&tenv, with);
			break;
		case 8:
		case 9:
			fuzz_traffic(&ttraffic, with, start);
			break;
		default:
			fuzz_profile(&tprofile, with);
			break;
		}
	}
	report(&tcfg);
	report(&targs);
	report(&tchk);
	report(&tnoc);
	report(&tenv);
	report(&ttraffic);
	report(&tprofile);
	printf("# cases in all: %ld\n", tcfg.cases + targs.cases + tchk.cases + tnoc.cases + tenv.cases +
	       ttraffic.cases + tprofile.cases);
	free(start);
	free(previous_record);
	xsite_lua_close(with);
	xsite_lua_close(without);
	return failures ? 1 : 0;
}
