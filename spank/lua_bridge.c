/*
 * lua_bridge.c: the xsite Lua library, embedded (see lua_bridge.h).
 *
 * Builds against Lua 5.1 to 5.4; it must be the Lua that Slurm's own Lua
 * plugins link (5.1 on Debian 12, 5.4 on RHEL 9) so that a process holds one
 * liblua.  Each bridge has its own lua_State.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

#include "config.h"
#include "lua_bridge.h"

#define GLUE_KEY "xsite.spank.glue"

struct xsite_lua {
	lua_State *L;
	int have_config;
	char *error;
};

/*
 * The plugin's side of the library is lua/xsite/spank.lua: it only calls the
 * library and shapes the results for C.  Loaded once per lua_State.
 */
static const char glue[] = "return require('xsite.spank')\n";

static void set_error(struct xsite_lua *x, const char *format, ...)
	__attribute__((format(printf, 2, 3)));

/* xsite.config gives one error a line: join them with "; " for the logs (frees s). */
static char *one_line(char *s)
{
	size_t n = 0, i, j;
	char *out;

	if (s == NULL || strchr(s, '\n') == NULL)
		return s;
	for (i = 0; s[i] != '\0'; i++)
		n += (s[i] == '\n');
	out = malloc(i + n + 1);
	if (out == NULL)
		return s;
	for (i = 0, j = 0; s[i] != '\0'; i++) {
		if (s[i] == '\n') {
			out[j++] = ';';
			out[j++] = ' ';
		} else {
			out[j++] = s[i];
		}
	}
	out[j] = '\0';
	free(s);
	return out;
}

static void set_error(struct xsite_lua *x, const char *format, ...)
{
	va_list ap;
	char *s;

	va_start(ap, format);
	s = xsite_vfmt(format, ap);
	va_end(ap);
	free(x->error);
	x->error = one_line(s);
}

/* The message on top of the stack (popped). */
static void error_from_stack(struct xsite_lua *x)
{
	const char *msg = lua_tostring(x->L, -1);

	set_error(x, "%s", msg ? msg : "(error object is not a string)");
	lua_pop(x->L, 1);
}

/* The library comes from lua_path and nowhere else (no LUA_PATH, no C modules). */
static int set_path(lua_State *L, const char *dir)
{
	lua_getglobal(L, "package");
	if (!lua_istable(L, -1)) {
		lua_pop(L, 1);
		return -1;
	}
	lua_pushfstring(L, "%s/?.lua;%s/?/init.lua", dir, dir);
	lua_setfield(L, -2, "path");
	lua_pushliteral(L, "");
	lua_setfield(L, -2, "cpath");
	lua_pop(L, 1);
	return 0;
}

/* "xsite.so:1: module 'xsite.config' not found:\n\tno field ..." -> "module 'xsite.config' not found" */
static void short_require_error(struct xsite_lua *x)
{
	char *s = x->error, *p;

	if (s == NULL)
		return;
	p = strstr(s, " not found:");
	if (p != NULL)
		p[strlen(" not found")] = '\0';
	if (strncmp(s, "xsite.so:1: ", 12) == 0)
		memmove(s, s + 12, strlen(s + 12) + 1);
}

struct xsite_lua *xsite_lua_open(const char *lua_path, char **err)
{
	struct xsite_lua *x;

	*err = NULL;
	x = calloc(1, sizeof(*x));
	if (x == NULL)
		goto fail;
	x->L = luaL_newstate();
	if (x->L == NULL)
		goto fail;
	luaL_openlibs(x->L);
	if (set_path(x->L, lua_path) < 0) {
		set_error(x, "Lua has no package library");
		goto fail;
	}
	if (luaL_loadbuffer(x->L, glue, sizeof(glue) - 1, "=xsite.so") != 0) {
		error_from_stack(x);
		goto fail;
	}
	if (lua_pcall(x->L, 0, 1, 0) != 0) {
		error_from_stack(x);
		short_require_error(x);
		set_error(x, "cannot load the xsite Lua library from %s: %s", lua_path,
			  x->error ? x->error : "?");
		goto fail;
	}
	lua_setfield(x->L, LUA_REGISTRYINDEX, GLUE_KEY);
	return x;

fail:
	if (x != NULL) {
		*err = x->error;
		x->error = NULL;
		xsite_lua_close(x);
	}
	if (*err == NULL)
		*err = strdup("cannot create a Lua state (out of memory)");
	return NULL;
}

/*
 * Call glue function name with string arguments; on success leave nres
 * results on the stack.  A glue function returning nil, message is a failure
 * with that message.
 */
static int vcall(struct xsite_lua *x, const char *name, int nres, int nargs, va_list ap)
{
	int i, top = lua_gettop(x->L);

	lua_getfield(x->L, LUA_REGISTRYINDEX, GLUE_KEY);
	lua_getfield(x->L, -1, name);
	lua_remove(x->L, -2);
	for (i = 0; i < nargs; i++)
		lua_pushstring(x->L, va_arg(ap, const char *));
	if (lua_pcall(x->L, nargs, 2, 0) != 0) {
		error_from_stack(x);
		lua_settop(x->L, top);
		return -1;
	}
	if (lua_isnil(x->L, -2)) {
		const char *msg = lua_tostring(x->L, -1);

		set_error(x, "%s", msg ? msg : "failed");
		lua_settop(x->L, top);
		return -1;
	}
	lua_pop(x->L, 2 - nres);
	return 0;
}

static int call(struct xsite_lua *x, const char *name, int nres, int nargs, ...)
{
	va_list ap;
	int rc;

	va_start(ap, nargs);
	rc = vcall(x, name, nres, nargs, ap);
	va_end(ap);
	return rc;
}

/* A copy of the string at index i of the stack, "" for nil (NULL: out of memory). */
static char *copy_at(struct xsite_lua *x, int i)
{
	const char *s = lua_tostring(x->L, i);
	char *c = strdup(s ? s : "");

	if (c == NULL)
		set_error(x, "out of memory");
	return c;
}

int xsite_lua_call(struct xsite_lua *x, const char *name, char **r1, char **r2, int nargs, ...)
{
	va_list ap;
	int rc;

	*r1 = NULL;
	if (r2 != NULL)
		*r2 = NULL;
	if (!x->have_config) {
		set_error(x, "no configuration loaded");
		return -1;
	}
	va_start(ap, nargs);
	rc = vcall(x, name, 2, nargs, ap);
	va_end(ap);
	if (rc < 0)
		return -1;
	*r1 = copy_at(x, -2);
	if (r2 != NULL)
		*r2 = copy_at(x, -1);
	lua_pop(x->L, 2);
	if (*r1 == NULL || (r2 != NULL && *r2 == NULL)) {
		free(*r1);
		*r1 = NULL;
		if (r2 != NULL) {
			free(*r2);
			*r2 = NULL;
		}
		return -1;
	}
	return 0;
}

int xsite_lua_load_config(struct xsite_lua *x, const char *path)
{
	if (call(x, "load", 0, 1, path) < 0) {
		x->have_config = 0;
		return -1;
	}
	x->have_config = 1;
	return 0;
}

int xsite_lua_have_config(struct xsite_lua *x)
{
	return x->have_config;
}

int xsite_lua_check_affinity(struct xsite_lua *x, const char *value)
{
	if (!x->have_config) {
		set_error(x, "no configuration loaded");
		return -1;
	}
	return call(x, "check_affinity", 0, 1, value);
}

int xsite_lua_check_profile(struct xsite_lua *x, const char *value)
{
	return call(x, "check_profile", 0, 1, value);
}

/* Copy field key of the table on top of the stack (NULL when absent). */
static int take(struct xsite_lua *x, const char *key, char **out)
{
	const char *s;

	*out = NULL;
	lua_getfield(x->L, -1, key);
	s = lua_tostring(x->L, -1);
	if (s != NULL) {
		*out = strdup(s);
		if (*out == NULL) {
			lua_pop(x->L, 1);
			set_error(x, "out of memory");
			return -1;
		}
	}
	lua_pop(x->L, 1);
	return 0;
}

int xsite_lua_task_env(struct xsite_lua *x, const char *host, const char *nodelist,
		       struct xsite_task_env *env)
{
	int rc = -1;

	memset(env, 0, sizeof(*env));
	if (!x->have_config) {
		set_error(x, "no configuration loaded");
		return -1;
	}
	if (call(x, "task_env", 1, 2, host, nodelist) < 0)
		return -1;
	if (take(x, "site", &env->site) < 0 ||
	    take(x, "sites", &env->sites) < 0 ||
	    take(x, "spanning", &env->spanning) < 0 ||
	    take(x, "latency_us", &env->latency_us) < 0 ||
	    take(x, "bandwidth_mbps", &env->bandwidth_mbps) < 0 ||
	    take(x, "warning", &env->warning) < 0)
		goto fail;
	rc = 0;
fail:
	lua_pop(x->L, 1);
	if (rc < 0)
		xsite_task_env_free(env);
	return rc;
}

int xsite_lua_tune_env(struct xsite_lua *x, const char *dir, const char *jobid, char **env)
{
	const char *s;

	*env = NULL;
	if (!x->have_config) {
		set_error(x, "no configuration loaded");
		return -1;
	}
	if (call(x, "tune_env", 1, 2, dir, jobid) < 0)
		return -1;
	s = lua_tostring(x->L, -1);
	*env = s ? strdup(s) : NULL;
	lua_pop(x->L, 1);
	if (*env == NULL) {
		set_error(x, "tune_env: no environment");
		return -1;
	}
	return 0;
}

void xsite_task_env_free(struct xsite_task_env *env)
{
	free(env->site);
	free(env->sites);
	free(env->spanning);
	free(env->latency_us);
	free(env->bandwidth_mbps);
	free(env->warning);
	memset(env, 0, sizeof(*env));
}

const char *xsite_lua_error(struct xsite_lua *x)
{
	return x->error ? x->error : "unknown error";
}

void xsite_lua_close(struct xsite_lua *x)
{
	if (x == NULL)
		return;
	if (x->L != NULL)
		lua_close(x->L);
	free(x->error);
	free(x);
}
