/*
 * args.c: the command-line flags of xsite.so (see args.h).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "args.h"
#include "config.h"
#include "lua_bridge.h"

const struct xsite_flag_info xsite_flag_info[XSITE_NFLAGS] = {
	[XSITE_FLAG_AFFINITY] = {
		.name = "site-affinity",
		.env = "XSITE_SITE_AFFINITY",
		.arginfo = "auto|pin|span|SITE",
		.usage = "[xsite] keep the job at one site or let it span both: auto (the "
			 "placement model decides), pin (one site, either), span (both sites), "
			 "or a site's name",
		.has_arg = 1,
	},
	[XSITE_FLAG_PROFILE] = {
		.name = "comm-profile",
		.env = "XSITE_COMM_PROFILE",
		.arginfo = "NAME|CLASS|op=N,b=BYTES,x=BYTES[,steps=N][,pattern=P]",
		.usage = "[xsite] how the job communicates: an application profile of "
			 "xsite.conf, a class (low, medium, high) or explicit model parameters",
		.has_arg = 1,
	},
	[XSITE_FLAG_REPORT] = {
		.name = "xsite-report",
		.env = "XSITE_REPORT",
		.arginfo = "PATH",
		.usage = "[xsite] also write the job's cross-site report, to PATH if "
			 "given (PATH is optional; default: the job's working directory)",
		.has_arg = 2,
		.no_arg = ".",
	},
};

struct xsite_args xsite_args;


/* The names under which a client inside a job finds the job's flag f. */
static char *inherited_name(const char *prefix, enum xsite_flag f)
{
	char *name = xsite_fmt("%sxsite_%s", prefix, xsite_flag_info[f].name);
	char *p;

	if (name == NULL)
		return NULL;
	for (p = name; *p != '\0'; p++) {
		if (*p == '-')
			*p = '_';
	}
	return name;
}

int xsite_args_note_inherited(struct xsite_args *a, char *(*getenv_fn)(const char *), char **err)
{
	static const char *const prefixes[] = {
		"SLURM_SPANK__SLURM_SPANK_OPTION_",	/* batch job (from the job control env) */
		"_SLURM_SPANK_OPTION_",			/* salloc's shell */
	};
	size_t i;
	int f;

	*err = NULL;
	for (f = 0; f < XSITE_NFLAGS; f++) {
		for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
			char *name = inherited_name(prefixes[i], (enum xsite_flag)f);
			const char *v;

			if (name == NULL) {
				*err = xsite_fmt("xsite: out of memory");
				return -1;
			}
			v = getenv_fn(name);
			free(name);
			if (v == NULL)
				continue;
			free(a->inherited[f]);
			a->inherited[f] = strdup(v);
			if (a->inherited[f] == NULL) {
				*err = xsite_fmt("xsite: out of memory");
				return -1;
			}
			a->expect_inherited[f] = 1;
			break;
		}
	}
	return 0;
}

static int store(struct xsite_args *a, enum xsite_flag f, const char *value,
		 enum xsite_source source, char **err)
{
	char *copy = strdup(value);

	if (copy == NULL) {
		*err = xsite_fmt("xsite: --%s: out of memory", xsite_flag_info[f].name);
		return -1;
	}
	free(a->value[f]);
	a->value[f] = copy;
	a->source[f] = source;
	return 0;
}

int xsite_args_set(struct xsite_args *a, enum xsite_flag f, const char *optarg, char **err)
{
	const struct xsite_flag_info *info = &xsite_flag_info[f];
	const char *value = optarg;

	*err = NULL;
	if (a->expect_inherited[f] && a->source[f] == XSITE_SRC_NONE && optarg != NULL &&
	    strcmp(optarg, a->inherited[f]) == 0) {
		/* the enclosing job's flag, handed in before the command line */
		a->expect_inherited[f] = 0;
		if ((optarg[0] == '\0' || strcmp(optarg, "(null)") == 0) && info->no_arg != NULL)
			value = info->no_arg;
		if (value[0] == '\0')
			return 0;
		return store(a, f, value, XSITE_SRC_INHERITED, err);
	}
	a->expect_inherited[f] = 0;

	/* slurmstepd hands on a flag given without its optional argument as "(null)" */
	if (value == NULL || (info->has_arg == 2 && strcmp(value, "(null)") == 0))
		value = info->no_arg;
	if (value == NULL || value[0] == '\0') {
		*err = xsite_fmt("xsite: --%s: empty value (%s)", info->name, info->arginfo);
		return -1;
	}
	if (a->source[f] == XSITE_SRC_FLAG) {
		/* idempotent: the same value again is fine */
		if (strcmp(a->value[f], value) == 0)
			return 0;
		*err = xsite_fmt("xsite: --%s: given twice with different values ('%s', then '%s')",
			   info->name, a->value[f], value);
		return -1;
	}
	/* nothing yet, or an inherited value: the command line wins */
	return store(a, f, value, XSITE_SRC_FLAG, err);
}

int xsite_args_apply_env(struct xsite_args *a, char *(*getenv_fn)(const char *), char **err)
{
	int f;

	*err = NULL;
	for (f = 0; f < XSITE_NFLAGS; f++) {
		const char *v;

		if (a->source[f] == XSITE_SRC_FLAG)
			continue;
		v = getenv_fn(xsite_flag_info[f].env);
		if (v == NULL || v[0] == '\0')
			continue;
		if (store(a, (enum xsite_flag)f, v, XSITE_SRC_ENV, err) < 0)
			return -1;
	}
	return 0;
}

char *xsite_args_label(const struct xsite_args *a, enum xsite_flag f)
{
	const struct xsite_flag_info *info = &xsite_flag_info[f];

	if (a->source[f] == XSITE_SRC_ENV)
		return xsite_fmt("%s=%s", info->env, a->value[f]);
	if (a->source[f] == XSITE_SRC_INHERITED)
		return xsite_fmt("--%s=%s (of the enclosing job)", info->name, a->value[f]);
	return xsite_fmt("--%s=%s", info->name, a->value[f] ? a->value[f] : "");
}

/* A report path: printable, no control characters. */
static const char *check_path(const char *v)
{
	const unsigned char *p;

	for (p = (const unsigned char *)v; *p != '\0'; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return "a control character in the path";
	}
	return NULL;
}

/*
 * A message for one log line: a control character a user typed into a
 * value (a newline in --comm-profile) is shown as \n, \t or \xHH.
 */
static char *escape_controls(char *msg)
{
	const unsigned char *p;
	char *out, *o;

	if (msg == NULL)
		return NULL;
	for (p = (const unsigned char *)msg; *p != '\0' && *p >= 0x20 && *p != 0x7f; p++)
		;
	if (*p == '\0')
		return msg;
	out = malloc(strlen(msg) * 4 + 1);
	if (out == NULL)
		return msg;
	for (p = (const unsigned char *)msg, o = out; *p != '\0'; p++) {
		if (*p == '\n')
			o += sprintf(o, "\\n");
		else if (*p == '\t')
			o += sprintf(o, "\\t");
		else if (*p < 0x20 || *p == 0x7f)
			o += sprintf(o, "\\x%02x", *p);
		else
			*o++ = (char)*p;
	}
	*o = '\0';
	free(msg);
	return out;
}

int xsite_args_check(const struct xsite_args *a, struct xsite_lua *x, char **err)
{
	char *label = NULL;
	const char *why;
	int rc = -1;

	*err = NULL;
	if (a->value[XSITE_FLAG_AFFINITY] != NULL && xsite_lua_have_config(x) &&
	    xsite_lua_check_affinity(x, a->value[XSITE_FLAG_AFFINITY]) < 0) {
		label = xsite_args_label(a, XSITE_FLAG_AFFINITY);
		*err = xsite_fmt("xsite: %s: %s", label ? label : "--site-affinity", xsite_lua_error(x));
		goto fail;
	}
	if (a->value[XSITE_FLAG_PROFILE] != NULL &&
	    xsite_lua_check_profile(x, a->value[XSITE_FLAG_PROFILE]) < 0) {
		label = xsite_args_label(a, XSITE_FLAG_PROFILE);
		*err = xsite_fmt("xsite: %s: %s", label ? label : "--comm-profile", xsite_lua_error(x));
		goto fail;
	}
	if (a->value[XSITE_FLAG_REPORT] != NULL &&
	    (why = check_path(a->value[XSITE_FLAG_REPORT])) != NULL) {
		*err = xsite_fmt("xsite: %s: %s",
			   a->source[XSITE_FLAG_REPORT] == XSITE_SRC_ENV ? "XSITE_REPORT" : "--xsite-report",
			   why);
		goto fail;
	}
	/* No rule spans flags yet: every combination of valid values is a valid request. */
	rc = 0;
fail:
	if (rc < 0 && *err == NULL)
		*err = xsite_fmt("xsite: out of memory");
	*err = escape_controls(*err);
	free(label);
	return rc;
}

void xsite_args_free(struct xsite_args *a)
{
	int f;

	for (f = 0; f < XSITE_NFLAGS; f++) {
		free(a->value[f]);
		free(a->inherited[f]);
		a->value[f] = NULL;
		a->inherited[f] = NULL;
		a->source[f] = XSITE_SRC_NONE;
		a->expect_inherited[f] = 0;
	}
}

/*
 * The option callback.  In slurmstepd (remote) the values come from a
 * client that already checked them: record, never fail there.
 */
static int option_cb(int val, const char *optarg, int remote)
{
	char *err = NULL;

	if (val < 0 || val >= XSITE_NFLAGS)
		return -1;
	if (optarg != NULL) {
		/* (in slurmstepd the value is the job's to forge) */
		char *shown = xsite_printable(optarg, 256, XSITE_PRINT_ASCII);

		slurm_debug("xsite: option --%s=%s%s", xsite_flag_info[val].name, shown ? shown : "?",
			    remote ? " (remote)" : "");
		free(shown);
	} else {
		slurm_debug("xsite: option --%s (no argument)%s", xsite_flag_info[val].name,
			    remote ? " (remote)" : "");
	}
	if (xsite_args_set(&xsite_args, (enum xsite_flag)val, optarg, &err) < 0) {
		if (remote) {
			free(err);
			return 0;
		}
		slurm_error("%s", err ? err : "xsite: out of memory");
		free(err);
		return -1;
	}
	return 0;
}

int xsite_args_register(spank_t sp)
{
	/*
	 * Not the static "spank_options" table (it does not work in sbatch and
	 * salloc); static storage all the same, as older Slurm releases keep the
	 * pointer instead of a copy.
	 */
	static struct spank_option opts[XSITE_NFLAGS];
	spank_err_t rc;
	int f;

	for (f = 0; f < XSITE_NFLAGS; f++) {
		opts[f].name = (char *)xsite_flag_info[f].name;
		opts[f].arginfo = (char *)xsite_flag_info[f].arginfo;
		opts[f].usage = (char *)xsite_flag_info[f].usage;
		opts[f].has_arg = xsite_flag_info[f].has_arg;
		opts[f].val = f;
		opts[f].cb = option_cb;

		rc = spank_option_register(sp, &opts[f]);
		if (rc != ESPANK_SUCCESS) {
			slurm_error("xsite: --%s: cannot register the option: %s",
				    xsite_flag_info[f].name, spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}
