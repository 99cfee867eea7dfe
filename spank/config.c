/*
 * config.c: the plugstack.conf arguments of xsite.so (see config.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

char *xsite_vfmt(const char *format, va_list ap)
{
	char *s = NULL;

	if (vasprintf(&s, format, ap) < 0)
		s = NULL;
	return s;
}

/* A new string formatted like printf, or NULL when out of memory. */
char *xsite_fmt(const char *format, ...)
{
	va_list ap;
	char *s;

	va_start(ap, format);
	s = xsite_vfmt(format, ap);
	va_end(ap);
	return s;
}

/*
 * The length of the well-formed UTF-8 character at s that is not a C1
 * control character (U+0080-U+009F), a line or paragraph separator
 * (U+2028, U+2029) or a bidirectional override or isolate (U+202A-U+202E,
 * U+2066-U+2069), else 0 (as xsite.text reads it).
 */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char b = s[0], c = s[1];
	size_t len, k;

	if (b >= 0xc2 && b <= 0xdf)
		len = 2;
	else if (b >= 0xe0 && b <= 0xef)
		len = 3;
	else if (b >= 0xf0 && b <= 0xf4)
		len = 4;
	else
		return 0;
	if ((b == 0xc2 && c < 0xa0) || (b == 0xe0 && c < 0xa0) || (b == 0xed && c >= 0xa0) ||
	    (b == 0xf0 && c < 0x90) || (b == 0xf4 && c >= 0x90))
		return 0;
	for (k = 1; k < len; k++) {
		if (s[k] < 0x80 || s[k] > 0xbf)
			return 0;
	}
	if (b == 0xe2 && ((c == 0x80 && s[2] >= 0xa8 && s[2] <= 0xae) || (c == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9)))
		return 0;
	return len;
}

char *xsite_printable(const char *s, size_t max, enum xsite_print how)
{
	size_t len, i, j, n;
	char *out;

	if (s == NULL)
		return strdup("(null)");
	len = strnlen(s, max);
	/* at most 4 bytes for each byte, then "..." */
	out = malloc(len * 4 + 3 + 1);
	if (out == NULL)
		return NULL;
	for (i = 0, j = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		n = how == XSITE_PRINT_LINE && c >= 0x80 ? utf8_len((const unsigned char *)s + i) : 0;
		if (n > len - i)
			n = 0;	/* a character cut at max */
		if (how == XSITE_PRINT_LINE && c == '\n') {
			memcpy(out + j, "; ", 2);
			j += 2;
		} else if (n > 0) {
			memcpy(out + j, s + i, n);
			j += n;
			i += n - 1;
		} else if (c < 0x20 || c >= 0x7f) {
			snprintf(out + j, 5, "\\x%02x", c);
			j += 4;
		} else {
			out[j++] = (char)c;
		}
	}
	if (s[len] != '\0') {
		memcpy(out + j, "...", 3);
		j += 3;
	}
	out[j] = '\0';
	return out;
}

/* The xsite.conf beside slurm.conf. */
static char *default_config_path(const char *slurm_conf)
{
	const char *slash;

	if (slurm_conf == NULL || slurm_conf[0] == '\0')
		return strdup(XSITE_SLURM_CONFDIR "/xsite.conf");
	slash = strrchr(slurm_conf, '/');
	if (slash == NULL)
		return strdup("xsite.conf");
	if (slash == slurm_conf)
		return strdup("/xsite.conf");
	return xsite_fmt("%.*s/xsite.conf", (int)(slash - slurm_conf), slurm_conf);
}

static int set_path(char **field, const char *key, const char *value, char **err)
{
	char *copy;

	if (value[0] != '/') {
		*err = xsite_fmt("xsite: %s: invalid value: '%s' is not an absolute path", key, value);
		return -1;
	}
	copy = strdup(value);
	if (copy == NULL) {
		*err = xsite_fmt("xsite: %s: %s", key, strerror(ENOMEM));
		return -1;
	}
	free(*field);
	*field = copy;
	return 0;
}

static int set_bool(bool *field, const char *key, const char *value, char **err)
{
	if (strcmp(value, "yes") == 0) {
		*field = true;
	} else if (strcmp(value, "no") == 0) {
		*field = false;
	} else {
		*err = xsite_fmt("xsite: %s: invalid value: '%s' (yes or no)", key, value);
		return -1;
	}
	return 0;
}

static int parse_one(struct xsite_config *cfg, const char *arg, char **err)
{
	const char *eq = strchr(arg, '=');
	char *key = NULL;
	const char *value;
	int rc = -1;

	if (eq == NULL) {
		key = strdup(arg);
		value = NULL;
	} else {
		key = strndup(arg, (size_t)(eq - arg));
		value = eq + 1;
	}
	if (key == NULL) {
		*err = xsite_fmt("xsite: %s: %s", arg, strerror(ENOMEM));
		goto fail;
	}

	if (strcmp(key, "config") != 0 && strcmp(key, "tune_mpi") != 0 &&
	    strcmp(key, "lua_path") != 0 && strcmp(key, "report") != 0) {
		*err = xsite_fmt("xsite: %s: unknown argument (config=PATH, tune_mpi=yes|no, "
				 "report=yes|no, lua_path=DIR)", key);
		goto fail;
	}
	if (value == NULL || value[0] == '\0') {
		*err = xsite_fmt("xsite: %s: invalid value: empty (write %s=VALUE)", key, key);
		goto fail;
	}

	if (strcmp(key, "config") == 0)
		rc = set_path(&cfg->config_path, key, value, err);
	else if (strcmp(key, "lua_path") == 0)
		rc = set_path(&cfg->lua_path, key, value, err);
	else if (strcmp(key, "report") == 0)
		rc = set_bool(&cfg->report, key, value, err);
	else
		rc = set_bool(&cfg->tune_mpi, key, value, err);

fail:
	free(key);
	return rc;
}

int xsite_config_parse(struct xsite_config *cfg, int ac, char **av,
		       const char *slurm_conf, char **err)
{
	int i;

	*err = NULL;
	memset(cfg, 0, sizeof(*cfg));

	/* defaults first */
	cfg->config_path = default_config_path(slurm_conf);
	cfg->lua_path = strdup(XSITE_LUADIR);
	cfg->tune_mpi = false;
	cfg->report = true;
	if (cfg->config_path == NULL || cfg->lua_path == NULL) {
		*err = xsite_fmt("xsite: %s", strerror(ENOMEM));
		goto fail;
	}

	for (i = 0; i < ac; i++) {
		if (parse_one(cfg, av[i], err) < 0)
			goto fail;
	}
	return 0;

fail:
	if (*err == NULL)
		*err = xsite_fmt("xsite: out of memory");
	xsite_config_free(cfg);
	return -1;
}

void xsite_config_free(struct xsite_config *cfg)
{
	free(cfg->config_path);
	free(cfg->lua_path);
	cfg->config_path = NULL;
	cfg->lua_path = NULL;
}
