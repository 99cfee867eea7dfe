/*
 * fuzz.c: generated-input tests of xsite.so's input handling, TAP output.
 *
 *   plugstack.conf arguments (config.c: xsite_config_parse), the flags
 *   (args.c: xsite_args_set, the environment twins, the values of an
 *   enclosing job, xsite_args_check) and the Lua bridge's checks and task
 *   environment (lua_bridge.c against the real xsite Lua library and the
 *   testbed's xsite.conf), fed with random and mutated inputs.
 *
 * For every case: no crash, and either acceptance or a rejection with a
 * clear message: one line, starting with "xsite: " and naming the key, the
 * flag or its twin.  Where the rule is simple the outcome itself is checked
 * against an independent model (plugstack arguments, --site-affinity,
 * --xsite-report, repeats).  Leaks: run it under valgrind or ASan
 * (tests/spank/valgrind.sh does the unit tests; see the report of issue 4).
 *
 * Usage: fuzz [CASES [SEED]] (default 100000 cases, seed 1; also
 * XSITE_FUZZ_CASES, XSITE_FUZZ_SEED); the library and the config are
 * compiled in (XSITE_TEST_LUADIR, XSITE_TEST_CONFIG).  One TAP test per
 * target; the first failing case of each is printed with its inputs.
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
	n = strlen(seeds[pick(NELEM(seeds))]);
	snprintf(buf, sizeof(buf), "%s", seeds[pick(NELEM(seeds))]);
	n = strlen(buf);
	for (k = 1 + pick(4); k > 0; k--) {
		switch (pick(6)) {
		case 0: /* flip a bit */
			if (n > 0) {
				i = pick(n);
				buf[i] ^= (char)(1 << pick(8));
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
			n = strlen(buf);
			(void)i;
			break;
		default: /* repeat the string */
			if (2 * n + 1 < sizeof(buf)) {
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

static int has_control(const char *v)
{
	for (; *v != '\0'; v++) {
		if ((unsigned char)*v < 0x20 || (unsigned char)*v == 0x7f)
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
			else if (before == XSITE_SRC_FLAG && strcmp(prev, a.value[f]) != 0)
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
		if (e == NULL || strncmp(e, "SLURM_JOB_NODELIST: ", 20) != 0 || strchr(e, '\n') != NULL)
			fail(t, "nodelist '%s': the message does not name SLURM_JOB_NODELIST: %s", show(nodes),
			     show(e));
	}
	free(host);
	free(nodes);
}

int main(int argc, char **argv)
{
	long cases = 100000, i;
	const char *env;
	char *err = NULL;
	struct xsite_lua *with, *without;
	struct target tcfg = { "plugstack arguments (xsite_config_parse)", 0, 0, 0, 0 };
	struct target targs = { "flags: repeats, twins, inherited values (xsite_args_set)", 0, 0, 0, 0 };
	struct target tchk = { "checks with xsite.conf (xsite_args_check)", 0, 0, 0, 0 };
	struct target tnoc = { "checks without a configuration (xsite_args_check)", 0, 0, 0, 0 };
	struct target tenv = { "task environment, hostlists (xsite_lua_task_env)", 0, 0, 0, 0 };

	rng_state = 1;
	if ((env = getenv("XSITE_FUZZ_CASES")) != NULL)
		cases = atol(env);
	if ((env = getenv("XSITE_FUZZ_SEED")) != NULL)
		rng_state = strtoull(env, NULL, 10);
	if (argc > 1)
		cases = atol(argv[1]);
	if (argc > 2)
		rng_state = strtoull(argv[2], NULL, 10);
	if (rng_state == 0)
		rng_state = 1;

	printf("1..5\n# %ld cases, seed %llu\n", cases, (unsigned long long)rng_state);
	with = xsite_lua_open(XSITE_TEST_LUADIR, &err);
	without = with ? xsite_lua_open(XSITE_TEST_LUADIR, &err) : NULL;
	if (with == NULL || without == NULL || xsite_lua_load_config(with, XSITE_TEST_CONFIG) < 0) {
		printf("Bail out! cannot load the library or %s: %s\n", XSITE_TEST_CONFIG,
		       err ? err : xsite_lua_error(with));
		return 1;
	}

	for (i = 0; i < cases; i++) {
		switch (i % 8) {
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
		default:
			fuzz_task_env(&tenv, with);
			break;
		}
	}
	report(&tcfg);
	report(&targs);
	report(&tchk);
	report(&tnoc);
	report(&tenv);
	printf("# cases in all: %ld\n", tcfg.cases + targs.cases + tchk.cases + tnoc.cases + tenv.cases);
	xsite_lua_close(with);
	xsite_lua_close(without);
	return failures ? 1 : 0;
}
