/*
 * unit.c: unit tests of xsite.so without Slurm running, TAP output.
 *
 *   the plugstack.conf argument parser (config.c), the flag logic (args.c:
 *   repeats, twins, inherited values, checks) and the Lua bridge
 *   (lua_bridge.c) against the real xsite Lua library and the testbed's
 *   xsite.conf.
 *
 * Usage: unit [LUA_DIR [SITE_CONFIG]]; the defaults are compiled in
 * (XSITE_TEST_LUADIR, XSITE_TEST_CONFIG: the source tree's lua/ and
 * site-configs/testbed.conf).  Files go to a fresh directory under $TMPDIR,
 * removed at the end.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../spank/args.h"
#include "../../spank/config.h"
#include "../../spank/lua_bridge.h"
#include "tap.h"

static const char *lua_dir, *site_config, *tmpdir;

static int streq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* ---- config.c ---------------------------------------------------------- */

static int parse(struct xsite_config *c, const char *slurm_conf, char **err, int ac, ...)
{
	char *av[16];
	va_list ap;
	int i;

	va_start(ap, ac);
	for (i = 0; i < ac; i++)
		av[i] = va_arg(ap, char *);
	va_end(ap);
	return xsite_config_parse(c, ac, av, slurm_conf, err);
}

static void test_config(void)
{
	struct xsite_config c;
	char *err = NULL;
	int rc;

	rc = parse(&c, "/srv/slurm/etc/slurm.conf", &err, 0);
	ok(rc == 0 && streq(c.config_path, "/srv/slurm/etc/xsite.conf") && !c.tune_mpi &&
	   c.report && streq(c.lua_path, XSITE_LUADIR),
	   "defaults: xsite.conf beside SLURM_CONF, tune_mpi=no, report=yes, the compiled lua_path");
	xsite_config_free(&c);

	rc = parse(&c, NULL, &err, 0);
	ok(rc == 0 && streq(c.config_path, XSITE_SLURM_CONFDIR "/xsite.conf"),
	   "without SLURM_CONF: %s/xsite.conf", XSITE_SLURM_CONFDIR);
	xsite_config_free(&c);

	rc = parse(&c, "slurm.conf", &err, 0);
	ok(rc == 0 && streq(c.config_path, "xsite.conf"), "SLURM_CONF without a directory");
	xsite_config_free(&c);

	rc = parse(&c, "/etc/slurm/slurm.conf", &err, 3, "config=/x/y.conf", "tune_mpi=yes",
		   "lua_path=/opt/xsite/lua");
	ok(rc == 0 && streq(c.config_path, "/x/y.conf") && c.tune_mpi &&
	   streq(c.lua_path, "/opt/xsite/lua"), "config=, tune_mpi=yes, lua_path= are parsed");
	xsite_config_free(&c);

	rc = parse(&c, NULL, &err, 2, "tune_mpi=yes", "tune_mpi=no");
	ok(rc == 0 && !c.tune_mpi, "a later value of a key replaces an earlier one");
	xsite_config_free(&c);

	rc = parse(&c, NULL, &err, 1, "report=no");
	ok(rc == 0 && !c.report, "report=no turns the per-job records off");
	xsite_config_free(&c);

	rc = parse(&c, NULL, &err, 1, "report=");
	ok(rc == -1 && streq(err, "xsite: report: invalid value: empty (write report=VALUE)"),
	   "report= without a value fails naming the key");
	free(err);

	rc = parse(&c, NULL, &err, 1, "tune_mpi=maybe");
	ok(rc == -1 && streq(err, "xsite: tune_mpi: invalid value: 'maybe' (yes or no)"),
	   "tune_mpi=maybe fails: xsite: tune_mpi: invalid value: ...");
	diag("message", err);
	free(err);

	rc = parse(&c, NULL, &err, 2, "config=/x", "colour=blue");
	ok(rc == -1 && has(err, "xsite: colour: unknown argument"),
	   "an unknown key fails: xsite: colour: unknown argument");
	diag("message", err);
	free(err);

	rc = parse(&c, NULL, &err, 1, "config=etc/xsite.conf");
	ok(rc == -1 && has(err, "xsite: config: invalid value: 'etc/xsite.conf' is not an absolute path"),
	   "a relative config= fails");
	free(err);

	rc = parse(&c, NULL, &err, 1, "lua_path=");
	ok(rc == -1 && has(err, "xsite: lua_path: invalid value: empty"), "an empty value fails");
	free(err);

	rc = parse(&c, NULL, &err, 1, "tune_mpi");
	ok(rc == -1 && has(err, "xsite: tune_mpi: invalid value: empty"), "a key without '=' fails");
	free(err);
}

/* Whether xsite_printable(s, max, how) renders s as want. */
static int renders(const char *s, size_t max, enum xsite_print how, const char *want)
{
	char *got = xsite_printable(s, max, how);
	int same = streq(got, want);

	if (!same)
		diag("xsite_printable gave", got ? got : "(NULL)");
	free(got);
	return same;
}

static void test_printable(void)
{
	/* "\xc3\xa9" is U+00E9; "\xc2\x85" the C1 control NEL; "\xed\xa0\x80" a surrogate */
	const char *text = "caf\xc3\xa9\n\x1b[2J\xc2\x85\xed\xa0\x80\xff\\x";

	ok(renders(text, 64, XSITE_PRINT_ASCII,
		   "caf\\xc3\\xa9\\x0a\\x1b[2J\\xc2\\x85\\xed\\xa0\\x80\\xff\\x"),
	   "printable: ASCII, every other byte as \\xHH");
	ok(renders(text, 64, XSITE_PRINT_LINE,
		   "caf\xc3\xa9; \\x1b[2J\\xc2\\x85\\xed\\xa0\\x80\\xff\\x"),
	   "printable: a line keeps well-formed UTF-8, escapes C0, C1, surrogates and stray bytes, joins lines");
	ok(renders("a\xe2\x80\xa8" "b\xe2\x80\xae" "c\xe2\x81\xa6" "d\xe2\x80\x94", 64, XSITE_PRINT_LINE,
		   "a\\xe2\\x80\\xa8b\\xe2\\x80\\xaec\\xe2\\x81\\xa6d\xe2\x80\x94"),
	   "printable: a line escapes U+2028 and the bidirectional controls, keeps other punctuation (U+2014)");
	ok(renders("ab\xc3\xa9", 3, XSITE_PRINT_LINE, "ab\\xc3..."),
	   "printable: a character cut at the limit is escaped, and the cut is shown");
	ok(renders("abc", 3, XSITE_PRINT_ASCII, "abc") && renders(NULL, 3, XSITE_PRINT_ASCII, "(null)"),
	   "printable: a text of the limit's length is whole; no text is (null)");
}

/* ---- args.c ------------------------------------------------------------ */

/* An environment for the tests: NAME=value strings. */
static const char *const *test_env;

static char *env_lookup(const char *name)
{
	size_t n = strlen(name);
	int i;

	for (i = 0; test_env != NULL && test_env[i] != NULL; i++) {
		if (strncmp(test_env[i], name, n) == 0 && test_env[i][n] == '=')
			return (char *)test_env[i] + n + 1;
	}
	return NULL;
}

static void test_args(void)
{
	struct xsite_args a = { 0 };
	char *err = NULL, *label;
	int rc;

	rc = xsite_args_set(&a, XSITE_FLAG_AFFINITY, "alpha", &err);
	rc |= xsite_args_set(&a, XSITE_FLAG_AFFINITY, "alpha", &err);
	ok(rc == 0 && streq(a.value[XSITE_FLAG_AFFINITY], "alpha"), "the same value twice is fine");

	rc = xsite_args_set(&a, XSITE_FLAG_AFFINITY, "beta", &err);
	ok(rc == -1 && streq(err, "xsite: --site-affinity: given twice with different values "
			     "('alpha', then 'beta')") && streq(a.value[XSITE_FLAG_AFFINITY], "alpha"),
	   "a conflicting repeat is an error naming the flag and both values");
	diag("message", err);
	free(err);

	rc = xsite_args_set(&a, XSITE_FLAG_PROFILE, "", &err);
	ok(rc == -1 && has(err, "xsite: --comm-profile: empty value"), "an empty value is an error");
	free(err);

	rc = xsite_args_set(&a, XSITE_FLAG_REPORT, NULL, &err);
	rc |= xsite_args_set(&a, XSITE_FLAG_REPORT, ".", &err);
	ok(rc == 0 && streq(a.value[XSITE_FLAG_REPORT], "."),
	   "--xsite-report without PATH is '.', the job's working directory; '=.' repeats it");
	rc = xsite_args_set(&a, XSITE_FLAG_REPORT, "/tmp/r", &err);
	ok(rc == -1 && has(err, "--xsite-report: given twice"), "--xsite-report then --xsite-report=PATH conflict");
	free(err);
	xsite_args_free(&a);

	/* twins */
	{
		static const char *const env[] = {
			"XSITE_SITE_AFFINITY=beta", "XSITE_COMM_PROFILE=low", "XSITE_REPORT=", NULL
		};
		test_env = env;
	}
	rc = xsite_args_set(&a, XSITE_FLAG_AFFINITY, "alpha", &err);
	rc |= xsite_args_apply_env(&a, env_lookup, &err);
	ok(rc == 0 && streq(a.value[XSITE_FLAG_AFFINITY], "alpha") &&
	   a.source[XSITE_FLAG_AFFINITY] == XSITE_SRC_FLAG,
	   "a twin does not override the command line");
	ok(streq(a.value[XSITE_FLAG_PROFILE], "low") && a.source[XSITE_FLAG_PROFILE] == XSITE_SRC_ENV,
	   "a twin applies where the command line left the flag unset");
	ok(a.value[XSITE_FLAG_REPORT] == NULL, "an empty twin counts as unset");
	label = xsite_args_label(&a, XSITE_FLAG_PROFILE);
	ok(streq(label, "XSITE_COMM_PROFILE=low"), "messages name the twin a value came from");
	free(label);
	label = xsite_args_label(&a, XSITE_FLAG_AFFINITY);
	ok(streq(label, "--site-affinity=alpha"), "messages name the flag a value came from");
	free(label);
	xsite_args_free(&a);

	/* values of the enclosing job */
	{
		static const char *const env[] = {
			"SLURM_SPANK__SLURM_SPANK_OPTION_xsite_site_affinity=beta",
			"SLURM_SPANK__SLURM_SPANK_OPTION_xsite_xsite_report=(null)",
			"_SLURM_SPANK_OPTION_xsite_comm_profile=high",
			NULL
		};
		test_env = env;
	}
	rc = xsite_args_note_inherited(&a, env_lookup, &err);
	rc |= xsite_args_set(&a, XSITE_FLAG_AFFINITY, "beta", &err);
	ok(rc == 0 && a.source[XSITE_FLAG_AFFINITY] == XSITE_SRC_INHERITED,
	   "the enclosing job's flag, handed in first, is an inherited value");
	rc = xsite_args_set(&a, XSITE_FLAG_AFFINITY, "alpha", &err);
	ok(rc == 0 && streq(a.value[XSITE_FLAG_AFFINITY], "alpha") &&
	   a.source[XSITE_FLAG_AFFINITY] == XSITE_SRC_FLAG,
	   "the command line overrides an inherited value without a conflict");
	rc = xsite_args_set(&a, XSITE_FLAG_AFFINITY, "beta", &err);
	ok(rc == -1 && has(err, "('alpha', then 'beta')"),
	   "a conflicting repeat on the command line is still an error");
	free(err);
	rc = xsite_args_set(&a, XSITE_FLAG_REPORT, "(null)", &err);
	ok(rc == 0 && streq(a.value[XSITE_FLAG_REPORT], "."),
	   "an inherited --xsite-report without PATH ('(null)') is '.'");
	rc = xsite_args_set(&a, XSITE_FLAG_PROFILE, "high", &err);
	label = xsite_args_label(&a, XSITE_FLAG_PROFILE);
	ok(rc == 0 && streq(label, "--comm-profile=high (of the enclosing job)"),
	   "an inherited value found as _SLURM_SPANK_OPTION_* (salloc's shell); its label");
	free(label);
	{
		static const char *const env[] = { "XSITE_COMM_PROFILE=low", NULL };
		test_env = env;
	}
	rc = xsite_args_apply_env(&a, env_lookup, &err);
	ok(rc == 0 && streq(a.value[XSITE_FLAG_PROFILE], "low"), "a twin overrides an inherited value");
	xsite_args_free(&a);

	{
		static const char *const env[] = {
			"SLURM_SPANK__SLURM_SPANK_OPTION_xsite_site_affinity=beta", NULL
		};
		test_env = env;
	}
	rc = xsite_args_note_inherited(&a, env_lookup, &err);
	rc |= xsite_args_set(&a, XSITE_FLAG_AFFINITY, "alpha", &err);
	ok(rc == 0 && a.source[XSITE_FLAG_AFFINITY] == XSITE_SRC_FLAG &&
	   streq(a.value[XSITE_FLAG_AFFINITY], "alpha"),
	   "a first value other than the inherited one is the command line's");
	xsite_args_free(&a);
	test_env = NULL;
}

/* ---- lua_bridge.c and the checks of args.c ------------------------------ */

/* Files written under tmpdir, removed at the end. */
static char *written[16];
static int nwritten;

static char *write_file(const char *name, const char *text)
{
	char *path = NULL;
	FILE *f;
	int i;

	if (asprintf(&path, "%s/%s", tmpdir, name) < 0)
		return NULL;
	for (i = 0; i < nwritten && strcmp(written[i], name) != 0; i++)
		;
	if (i == nwritten && nwritten < 16)
		written[nwritten++] = strdup(name);
	f = fopen(path, "w");
	if (f == NULL) {
		free(path);
		return NULL;
	}
	fputs(text, f);
	fclose(f);
	return path;
}

/* The testbed config with extra lines appended (caller frees the path; NULL on failure). */
static char *config_with(const char *name, const char *extra)
{
	char *text = NULL, *path;
	size_t n;
	FILE *f;

	if (extra == NULL)
		return NULL;
	f = fopen(site_config, "r");
	if (f == NULL)
		return NULL;
	text = calloc(1, 1 << 16);
	if (text == NULL) {
		fclose(f);
		return NULL;
	}
	n = fread(text, 1, (1 << 16) - 1, f);
	fclose(f);
	text[n] = '\0';
	/* drop the LinkStateFile of the testbed config (the tests set their own) */
	{
		char *l = strstr(text, "LinkStateFile=");
		if (l != NULL)
			l[0] = '#';
	}
	strncat(text, extra, (1 << 16) - 1 - strlen(text));
	path = write_file(name, text);
	free(text);
	return path;
}

static void test_bridge(void)
{
	struct xsite_task_env env;
	struct xsite_lua *x;
	struct xsite_args a = { 0 };
	char *err = NULL, *path;
	int rc;

	x = xsite_lua_open("/nonexistent", &err);
	ok(x == NULL && has(err, "cannot load the xsite Lua library from /nonexistent") &&
	   has(err, "xsite.spank"), "a wrong lua_path is an error naming the directory and module");
	diag("message", err);
	free(err);

	/* a library whose module needs another that is not there, or does not parse */
	path = NULL;
	if (asprintf(&path, "%s/lib", tmpdir) >= 0 && mkdir(path, 0700) == 0) {
		char *xdir = NULL;

		if (asprintf(&xdir, "%s/xsite", path) >= 0 && mkdir(xdir, 0700) == 0) {
			free(write_file("lib/xsite/spank.lua", "return require('xsite.config')\n"));
			x = xsite_lua_open(path, &err);
			ok(x == NULL && has(err, "module xsite.config not found (no file ") &&
			   has(err, "/lib/xsite/config.lua)") && strchr(err, '\n') == NULL,
			   "a module the library needs and does not find is named, with the file looked for");
			diag("message", err);
			free(err);
			free(write_file("lib/xsite/spank.lua", "return {\n"));
			x = xsite_lua_open(path, &err);
			ok(x == NULL && has(err, "/lib/xsite/spank.lua:2:"),
			   "a module that does not parse is named with its file and line");
			diag("message", err);
			free(err);
			free(write_file("lib/xsite/spank.lua", "return { handle = 42 }\n"));
			x = xsite_lua_open(path, &err);
			ok(x == NULL && has(err, "xsite.spank has no handle()"),
			   "a module without the function the plugin calls is refused when it loads");
			free(err);
			err = NULL;
			if (asprintf(&err, "%s/spank.lua", xdir) >= 0)
				unlink(err);
			free(err);
			rmdir(xdir);
		}
		free(xdir);
		rmdir(path);
	}
	free(path);

	x = xsite_lua_open(lua_dir, &err);
	ok(x != NULL, "the library loads from %s", lua_dir);
	if (x == NULL) {
		diag("error", err);
		free(err);
		return;
	}

	rc = xsite_lua_load_config(x, "/nonexistent/xsite.conf");
	ok(rc == -1 && has(xsite_lua_error(x), "/nonexistent/xsite.conf: cannot open") &&
	   xsite_lua_code(x) == XSITE_LUA_CONFIG, "a missing xsite.conf is a configuration error naming the file");
	rc = xsite_lua_task_env(x, "alpha1", "alpha1", &env);
	ok(rc == -1 && xsite_lua_code(x) == XSITE_LUA_CONFIG && streq(xsite_lua_error(x), "no configuration loaded"),
	   "without a configuration, a request that needs one is refused as such");

	path = write_file("broken.conf", "SiteName=alpha Nodes=alpha[1-2 CoresPerNode=x\n");
	rc = xsite_lua_load_config(x, path);
	ok(rc == -1 && has(xsite_lua_error(x), "broken.conf:1: Nodes: unclosed '['") &&
	   has(xsite_lua_error(x), "; ") && strchr(xsite_lua_error(x), '\n') == NULL,
	   "a broken xsite.conf: every error with file:line and key, on one line");
	diag("message", xsite_lua_error(x));
	free(path);

	/* without a configuration: names are left to slurmctld, explicit specs still checked */
	a.value[XSITE_FLAG_AFFINITY] = strdup("gamma");
	a.source[XSITE_FLAG_AFFINITY] = XSITE_SRC_FLAG;
	a.value[XSITE_FLAG_PROFILE] = strdup("gromacs");
	a.source[XSITE_FLAG_PROFILE] = XSITE_SRC_FLAG;
	rc = xsite_args_check(&a, x, &err);
	ok(rc == 0, "without a usable xsite.conf, site and profile names pass (slurmctld checks them)");
	free(a.value[XSITE_FLAG_PROFILE]);
	a.value[XSITE_FLAG_PROFILE] = strdup("op=1e9,b=zz,x=1");
	rc = xsite_args_check(&a, x, &err);
	ok(rc == -1 && has(err, "xsite: --comm-profile=op=1e9,b=zz,x=1: b: "),
	   "without xsite.conf, an explicit profile is still checked");
	free(err);
	xsite_args_free(&a);

	rc = xsite_lua_load_config(x, site_config);
	ok(rc == 0, "the testbed config loads");
	if (rc != 0)
		diag("error", xsite_lua_error(x));

	ok(xsite_lua_check_affinity(x, "auto") == 0 && xsite_lua_check_affinity(x, "pin") == 0 &&
	   xsite_lua_check_affinity(x, "span") == 0 && xsite_lua_check_affinity(x, "alpha") == 0 &&
	   xsite_lua_check_affinity(x, "beta") == 0, "auto, pin, span and the sites are valid affinities");
	rc = xsite_lua_check_affinity(x, "gamma");
	ok(rc == -1 && streq(xsite_lua_error(x),
			     "unknown site 'gamma' (valid: auto, pin, span, alpha, beta)"),
	   "an unknown site lists the valid values");
	ok(xsite_lua_code(x) == XSITE_LUA_INVALID, "a bad value is answered with the code 'invalid'");
	ok(xsite_lua_check_affinity(x, "AUTO") == -1, "keywords are lower case, as the policy reads them");

	ok(xsite_lua_check_profile(x, "medium") == 0 && xsite_lua_check_profile(x, "pingpong") == 0 &&
	   xsite_lua_check_profile(x, "op=1e12,b=1GB,x=10MB,steps=100,pattern=halo2d") == 0,
	   "a class, a profile and an explicit spec are valid profiles");
	rc = xsite_lua_check_profile(x, "op=1e9,b=1GB,x=1MB,pattern=ring");
	ok(rc == -1 && has(xsite_lua_error(x), "pattern: 'ring' is not one of"),
	   "a bad pattern is named");
	rc = xsite_lua_check_profile(x, "op=1e9,b=1GB");
	ok(rc == -1 && has(xsite_lua_error(x), "x: missing"), "a missing field is named");
	rc = xsite_lua_check_profile(x, "nosuch");
	ok(rc == -1 && has(xsite_lua_error(x), "unknown profile 'nosuch' (known: high, low, medium, pingpong"),
	   "an unknown profile lists the known ones");

	/* the one check function: messages name the flag or the twin */
	a.value[XSITE_FLAG_AFFINITY] = strdup("gamma");
	a.source[XSITE_FLAG_AFFINITY] = XSITE_SRC_ENV;
	rc = xsite_args_check(&a, x, &err);
	ok(rc == -1 && streq(err, "xsite: XSITE_SITE_AFFINITY=gamma: unknown site 'gamma' "
			     "(valid: auto, pin, span, alpha, beta)"), "a bad twin is named in the message");
	diag("message", err);
	free(err);
	free(a.value[XSITE_FLAG_AFFINITY]);
	a.value[XSITE_FLAG_AFFINITY] = strdup("al\npha\t\x01");
	a.source[XSITE_FLAG_AFFINITY] = XSITE_SRC_FLAG;
	rc = xsite_args_check(&a, x, &err);
	ok(rc == -1 && has(err, "xsite: --site-affinity=al\\npha\\t\\x01: unknown site 'al") &&
	   strchr(err, '\n') == NULL, "a value typed with a newline is shown on one line, escaped");
	diag("message", err);
	free(err);
	free(a.value[XSITE_FLAG_AFFINITY]);
	a.value[XSITE_FLAG_AFFINITY] = strdup("span");
	a.source[XSITE_FLAG_AFFINITY] = XSITE_SRC_FLAG;
	a.value[XSITE_FLAG_PROFILE] = strdup("op=1e9,b=zz,x=1");
	a.source[XSITE_FLAG_PROFILE] = XSITE_SRC_FLAG;
	rc = xsite_args_check(&a, x, &err);
	ok(rc == -1 && has(err, "xsite: --comm-profile=op=1e9,b=zz,x=1: b: 'zz' is not"),
	   "a malformed profile names the flag and the field");
	diag("message", err);
	free(err);
	free(a.value[XSITE_FLAG_PROFILE]);
	a.value[XSITE_FLAG_PROFILE] = strdup("high");
	a.value[XSITE_FLAG_REPORT] = strdup("out\ndir");
	a.source[XSITE_FLAG_REPORT] = XSITE_SRC_FLAG;
	rc = xsite_args_check(&a, x, &err);
	ok(rc == -1 && has(err, "xsite: --xsite-report: a control character"),
	   "a report path with a control character is refused");
	free(err);
	free(a.value[XSITE_FLAG_REPORT]);
	a.value[XSITE_FLAG_REPORT] = strdup("reports/");
	rc = xsite_args_check(&a, x, &err);
	ok(rc == 0, "valid values pass the check");
	xsite_args_free(&a);

	/* the task environment */
	rc = xsite_lua_task_env(x, "alpha1", "alpha[1-2],beta[1-2]", &env);
	ok(rc == 0 && streq(env.site, "alpha") && streq(env.sites, "alpha:2,beta:2") &&
	   streq(env.spanning, "1") && streq(env.latency_us, "1000") &&
	   streq(env.bandwidth_mbps, "125") && env.warning == NULL,
	   "a job across both sites, seen on alpha1: alpha, alpha:2,beta:2, 1, 1000 us, 125 MB/s");
	xsite_task_env_free(&env);

	rc = xsite_lua_task_env(x, "beta2.cluster.example", "beta[1-2]", &env);
	ok(rc == 0 && streq(env.site, "beta") && streq(env.sites, "beta:2") &&
	   streq(env.spanning, "0"), "a job at one site, seen on beta2 (a domain name is stripped)");
	xsite_task_env_free(&env);

	rc = xsite_lua_task_env(x, "beta1", "beta1,alpha2", &env);
	ok(rc == 0 && streq(env.sites, "alpha:1,beta:1"), "sites appear in xsite.conf order");
	xsite_task_env_free(&env);

	rc = xsite_lua_task_env(x, "login1", "alpha1,gpu7", &env);
	ok(rc == 0 && env.site == NULL && streq(env.sites, "alpha:1") &&
	   has(env.warning, "node 'login1' is in no site") && has(env.warning, "1 node(s) of the job in no site"),
	   "a node in no site: no XSITE_SITE, a warning; nodes outside the sites are left out");
	xsite_task_env_free(&env);

	rc = xsite_lua_task_env(x, "alpha1", "alpha[1-", &env);
	ok(rc == -1 && has(xsite_lua_error(x), "SLURM_JOB_NODELIST: unclosed '['"),
	   "a node list that does not parse is an error");

	/* the job's own node list, quoted in the error that reaches the logs */
	rc = xsite_lua_task_env(x, "alpha1", "alpha[1-\xc2\x9b" "2\xff\xc3\xa9", &env);
	ok(rc == -1 && has(xsite_lua_error(x), "alpha[1-\\xc2\\x9b2\\xff\xc3\xa9"),
	   "its C1 control characters and broken UTF-8 as \\xHH, well-formed UTF-8 kept");
	diag("message", xsite_lua_error(x));
	{
		/* "alpha[1,1,...,1": unclosed, quoted whole by the Lua */
		char *huge = malloc(6 + 2 * 6000 + 1);
		size_t i;

		if (huge != NULL) {
			memcpy(huge, "alpha[", 6);
			for (i = 0; i < 6000; i++)
				memcpy(huge + 6 + 2 * i, "1,", 2);
			huge[6 + 2 * 6000 - 1] = '\0';
			rc = xsite_lua_task_env(x, "alpha1", huge, &env);
			ok(rc == -1 && strlen(xsite_lua_error(x)) == 1024 + 3 &&
			   has(xsite_lua_error(x) + 1024, "..."), "cut short at 1024 bytes: %zu",
			   strlen(xsite_lua_error(x)));
			free(huge);
		}
	}

	/* MPI tuning: the settings for the plugin's own file, and the text it writes there */
	{
		char *env = NULL, *rules = NULL;

		rc = xsite_lua_tune_env(x, "/tmp/xsite-coll-rules.7.0.Ab3dEf", &env, &rules);
		ok(rc == 0 && has(env, "OMPI_MCA_coll_tuned_dynamic_rules_filename=/tmp/xsite-coll-rules.7.0.Ab3dEf\n") &&
		   has(rules, "# Open MPI coll/tuned dynamic rules") && access("/tmp/xsite-coll-rules.7.0.Ab3dEf", F_OK) < 0,
		   "tune_env: the settings point at the plugin's file, the rules come back to write there");
		free(env);
		free(rules);
		rc = xsite_lua_tune_env(x, "relative", &env, &rules);
		ok(rc == -1 && env == NULL && rules == NULL && has(xsite_lua_error(x), "not an absolute file name"),
		   "tune_env: a file name that is not absolute is refused");
	}

	xsite_lua_close(x);

	/* the link: channels, the measured state, a bad state file */
	x = xsite_lua_open(lua_dir, &err);
	{
		char *state = write_file("link.state", "State=degraded Bandwidth=400MB/s Latency=150us\n");
		char *extra = NULL;

		if (asprintf(&extra, "LinkStateFile=%s\n", state) < 0)
			extra = NULL;
		path = config_with("measured.conf", extra);
		rc = xsite_lua_load_config(x, path) || xsite_lua_task_env(x, "alpha1", "alpha1", &env);
		ok(rc == 0 && streq(env.latency_us, "150") && streq(env.bandwidth_mbps, "400") &&
		   env.warning == NULL, "the measured figures of the LinkStateFile win: 150 us, 400 MB/s");
		xsite_task_env_free(&env);
		free(path);

		free(state);
		state = write_file("link.state", "State=sideways\n");
		path = config_with("measured.conf", extra);
		rc = xsite_lua_load_config(x, path) || xsite_lua_task_env(x, "alpha1", "alpha1", &env);
		ok(rc == 0 && streq(env.latency_us, "1000") && streq(env.bandwidth_mbps, "125") &&
		   has(env.warning, "State: 'sideways'") && has(env.warning, "using the configured link"),
		   "a bad link state file: the configured link, and a warning naming the key");
		diag("warning", env.warning);
		xsite_task_env_free(&env);
		free(path);
		free(state);
		free(extra);
	}
	path = write_file("channels.conf",
			  "SiteName=a Nodes=a[1-2] CoresPerNode=4 CorePeak=1GF MemBandwidth=1GB/s "
			  "NetBandwidth=1GB/s NetLatency=1us\n"
			  "SiteName=b Nodes=b[1-2] CoresPerNode=4 CorePeak=1GF MemBandwidth=1GB/s "
			  "NetBandwidth=1GB/s NetLatency=1us\n"
			  "LinkName=l Bandwidth=40Gb/s Channels=4 Latency=145us\n");
	rc = xsite_lua_load_config(x, path) || xsite_lua_task_env(x, "b1", "a1,b[1-2]", &env);
	ok(rc == 0 && streq(env.bandwidth_mbps, "20000") && streq(env.latency_us, "145") &&
	   streq(env.sites, "a:1,b:2"), "bandwidth x channels: 4 x 40Gb/s = 20000 MB/s");
	xsite_task_env_free(&env);
	free(path);
	path = write_file("fraction.conf",
			  "SiteName=a Nodes=a1 CoresPerNode=4 CorePeak=1GF MemBandwidth=1GB/s "
			  "NetBandwidth=1GB/s NetLatency=1us\n"
			  "SiteName=b Nodes=b1 CoresPerNode=4 CorePeak=1GF MemBandwidth=1GB/s "
			  "NetBandwidth=1GB/s NetLatency=1us\n"
			  "LinkName=l Bandwidth=930MB/s Latency=2.5us\n");
	rc = xsite_lua_load_config(x, path) || xsite_lua_task_env(x, "a1", "a1", &env);
	ok(rc == 0 && streq(env.latency_us, "2.5") && streq(env.bandwidth_mbps, "930"),
	   "fractions are printed as such: 2.5 us");
	xsite_task_env_free(&env);
	free(path);
	xsite_lua_close(x);
}

int main(int argc, char **argv)
{
	const char *base = getenv("TMPDIR");
	char *dir = NULL, *path = NULL;
	int i;

	lua_dir = argc > 1 ? argv[1] : XSITE_TEST_LUADIR;
	site_config = argc > 2 ? argv[2] : XSITE_TEST_CONFIG;
	if (asprintf(&dir, "%s/xsite-spank-unit.XXXXXX", base && base[0] ? base : "/tmp") < 0 ||
	    mkdtemp(dir) == NULL) {
		printf("Bail out! cannot create a temporary directory\n");
		return 1;
	}
	tmpdir = dir;

	test_config();
	test_printable();
	test_args();
	test_bridge();
	printf("1..%d\n", test_no);

	for (i = 0; i < nwritten; i++) {
		if (asprintf(&path, "%s/%s", tmpdir, written[i]) >= 0) {
			unlink(path);
			free(path);
		}
		free(written[i]);
	}
	rmdir(dir);
	free(dir);
	return failures == 0 ? 0 : 1;
}
