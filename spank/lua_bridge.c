/*
 * lua_bridge.c: the xsite Lua library, embedded (see lua_bridge.h).
 *
 * Builds against Lua 5.1 to 5.4; it must be the Lua that Slurm's own Lua
 * plugins link (5.1 on Debian 12, 5.4 on RHEL 9) so that a process holds one
 * liblua.  Each bridge has its own lua_State.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

#include "config.h"
#include "lua_bridge.h"

/* xsite.spank.handle, in the registry */
#define GLUE_KEY "xsite.spank.handle"

struct xsite_lua {
	lua_State *L;
	int have_config;
	char *error;
	enum xsite_lua_code code;
};

/* A request's or an answer's field: its name and its text (NULL: absent). */
struct field {
	const char *name;
	const char *value;
};

/*
 * Loads xsite.spank from the one directory given (its argument), through a
 * searcher of its own in place of Lua's file and C searchers, and answers
 * as every call does: { code, message, module }.  A module that is not
 * there is named by the searcher itself; nothing parses Lua's messages.
 */
static const char loader[] =
	"local dir = ...\n"
	"local missing\n"
	"local searchers = package.searchers or package.loaders\n"
	"for i = #searchers, 2, -1 do searchers[i] = nil end\n"
	"searchers[2] = function(name)\n"
	"  local path = dir .. '/' .. name:gsub('%.', '/') .. '.lua'\n"
	"  local f = io.open(path, 'r')\n"
	"  if not f then missing = missing or name return '\\n\\tno file ' .. path end\n"
	"  f:close()\n"
	"  local chunk, err = loadfile(path)\n"
	"  if not chunk then error(err, 0) end\n"
	"  return chunk\n"
	"end\n"
	"local ok, mod = pcall(require, 'xsite.spank')\n"
	"if ok then return { code = 'ok', module = mod } end\n"
	"if missing then\n"
	"  return { code = 'load', message = 'module ' .. missing .. ' not found (no file ' ..\n"
	"    dir .. '/' .. missing:gsub('%.', '/') .. '.lua)' }\n"
	"end\n"
	"return { code = 'load', message = tostring(mod) }\n";

static const char *const code_names[] = {
	[XSITE_LUA_OK] = "ok",
	[XSITE_LUA_INVALID] = "invalid",
	[XSITE_LUA_CONFIG] = "config",
	[XSITE_LUA_IO] = "io",
	[XSITE_LUA_UNAVAILABLE] = "unavailable",
	[XSITE_LUA_LOAD] = "load",
	[XSITE_LUA_INTERNAL] = "internal",
	[XSITE_LUA_NOMEM] = "nomem",
};

static void set_error(struct xsite_lua *x, enum xsite_lua_code code, const char *format, ...)
	__attribute__((format(printf, 3, 4)));

/* The most bytes of an error one_line keeps (then "..."). */
#define ONE_LINE_MAX 1024

/*
 * An error as one log line (frees s): xsite.config gives one error a line,
 * joined with "; "; a user's text quoted in it (a node list, an option's
 * value) escaped as xsite_printable's XSITE_PRINT_LINE does; at most
 * ONE_LINE_MAX bytes of it, then "...".
 */
static char *one_line(char *s)
{
	char *out;
	size_t i;

	if (s == NULL)
		return s;
	out = xsite_printable(s, ONE_LINE_MAX, XSITE_PRINT_LINE);
	if (out == NULL) {
		/* out of memory: in place, cut, nothing but printable ASCII */
		if (strlen(s) > ONE_LINE_MAX)
			s[ONE_LINE_MAX] = '\0';
		for (i = 0; s[i] != '\0'; i++) {
			if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
				s[i] = '?';
		}
		return s;
	}
	free(s);
	return out;
}

static void set_error(struct xsite_lua *x, enum xsite_lua_code code, const char *format, ...)
{
	va_list ap;
	char *s;

	va_start(ap, format);
	s = xsite_vfmt(format, ap);
	va_end(ap);
	free(x->error);
	x->error = one_line(s);
	x->code = code;
}

/* The library comes from lua_path and nowhere else (no LUA_PATH, no C modules). */
static int set_path(lua_State *L, const char *dir)
{
	lua_getglobal(L, "package");
	if (!lua_istable(L, -1)) {
		lua_pop(L, 1);
		return -1;
	}
	lua_pushfstring(L, "%s/?.lua", dir);
	lua_setfield(L, -2, "path");
	lua_pushliteral(L, "");
	lua_setfield(L, -2, "cpath");
	lua_pop(L, 1);
	return 0;
}

/*
 * The answer on top of the stack: its code, and its message when it is not
 * "ok" (the answer stays on the stack).  Anything but a table with a known
 * code is the library's bug.
 */
static int take_answer(struct xsite_lua *x, const char *what)
{
	const char *code, *msg;
	size_t i;

	if (!lua_istable(x->L, -1)) {
		set_error(x, XSITE_LUA_INTERNAL, "%s: the library answered a %s, not a table", what,
			  luaL_typename(x->L, -1));
		return -1;
	}
	lua_getfield(x->L, -1, "code");
	code = lua_tostring(x->L, -1);
	lua_getfield(x->L, -2, "message");
	msg = lua_tostring(x->L, -1);
	for (i = 0; i < sizeof(code_names) / sizeof(code_names[0]); i++)
		if (code != NULL && strcmp(code, code_names[i]) == 0)
			break;
	if (i == sizeof(code_names) / sizeof(code_names[0]))
		set_error(x, XSITE_LUA_INTERNAL, "%s: the library answered the code '%s'", what,
			  code ? code : "(none)");
	else if (i != XSITE_LUA_OK)
		set_error(x, (enum xsite_lua_code)i, "%s", msg ? msg : "failed");
	lua_pop(x->L, 2);
	return i == XSITE_LUA_OK ? 0 : -1;
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
		set_error(x, XSITE_LUA_LOAD, "Lua has no package library");
		goto fail;
	}
	if (luaL_loadbuffer(x->L, loader, sizeof(loader) - 1, "=xsite.so") != 0) {
		set_error(x, XSITE_LUA_INTERNAL, "%s", lua_tostring(x->L, -1));
		goto fail;
	}
	lua_pushstring(x->L, lua_path);
	if (lua_pcall(x->L, 1, 1, 0) != 0) {
		set_error(x, XSITE_LUA_INTERNAL, "%s", lua_tostring(x->L, -1));
		goto fail;
	}
	if (take_answer(x, "load") < 0) {
		set_error(x, x->code, "cannot load the xsite Lua library from %s: %s", lua_path, x->error);
		goto fail;
	}
	lua_getfield(x->L, -1, "module");
	if (!lua_istable(x->L, -1)) {
		set_error(x, XSITE_LUA_LOAD, "cannot load the xsite Lua library from %s: xsite.spank is not a module",
			  lua_path);
		goto fail;
	}
	/* every call goes through handle(): a library without it fails here, once */
	lua_getfield(x->L, -1, "handle");
	if (!lua_isfunction(x->L, -1)) {
		set_error(x, XSITE_LUA_LOAD, "cannot load the xsite Lua library from %s: xsite.spank has no handle()",
			  lua_path);
		goto fail;
	}
	lua_setfield(x->L, LUA_REGISTRYINDEX, GLUE_KEY);
	lua_pop(x->L, 2);
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
 * Send xsite.spank's handle(fn, request) the request req[0..n) (fields whose
 * value is NULL are left out).  On success the answer is left on top of the
 * stack (the caller pops it); on failure nothing is.
 */
static int request(struct xsite_lua *x, const char *fn, const struct field *req, size_t n)
{
	int top = lua_gettop(x->L);
	size_t i;

	lua_getfield(x->L, LUA_REGISTRYINDEX, GLUE_KEY);
	lua_pushstring(x->L, fn);
	lua_createtable(x->L, 0, (int)n);
	for (i = 0; i < n; i++) {
		if (req[i].value == NULL)
			continue;
		lua_pushstring(x->L, req[i].value);
		lua_setfield(x->L, -2, req[i].name);
	}
	if (lua_pcall(x->L, 2, 1, 0) != 0) {
		const char *msg = lua_tostring(x->L, -1);

		/* handle never raises: this is Lua itself failing (out of memory) */
		set_error(x, XSITE_LUA_INTERNAL, "%s: %s", fn, msg ? msg : "(no message)");
		lua_settop(x->L, top);
		return -1;
	}
	if (take_answer(x, fn) < 0) {
		lua_settop(x->L, top);
		return -1;
	}
	return 0;
}

/* Copy field key of the answer on top of the stack (NULL when absent). */
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
			set_error(x, XSITE_LUA_NOMEM, "out of memory");
			return -1;
		}
	}
	lua_pop(x->L, 1);
	return 0;
}

/* Field key of the answer on top of the stack, a whole number (required). */
static int take_long(struct xsite_lua *x, const char *key, long *out)
{
	char *s, *end;
	int rc = -1;

	if (take(x, key, &s) < 0)
		return -1;
	if (s != NULL) {
		errno = 0;
		*out = strtol(s, &end, 10);
		rc = (errno == 0 && end != s && *end == '\0') ? 0 : -1;
	}
	if (rc < 0)
		set_error(x, XSITE_LUA_INTERNAL, "the library's answer has no whole number '%s' ('%s')", key,
			  s ? s : "");
	free(s);
	return rc;
}

/* A request that needs a configuration: refused at once without one. */
static int configured(struct xsite_lua *x)
{
	if (x->have_config)
		return 0;
	set_error(x, XSITE_LUA_CONFIG, "no configuration loaded");
	return -1;
}

int xsite_lua_load_config(struct xsite_lua *x, const char *path)
{
	struct field req[] = { { "path", path } };

	x->have_config = 0;
	if (request(x, "load", req, 1) < 0)
		return -1;
	lua_pop(x->L, 1);
	x->have_config = 1;
	return 0;
}

int xsite_lua_have_config(struct xsite_lua *x)
{
	return x->have_config;
}

/* A request whose answer has no fields. */
static int check(struct xsite_lua *x, const char *fn, const char *value)
{
	struct field req[] = { { "value", value } };

	if (request(x, fn, req, 1) < 0)
		return -1;
	lua_pop(x->L, 1);
	return 0;
}

int xsite_lua_check_affinity(struct xsite_lua *x, const char *value)
{
	if (configured(x) < 0)
		return -1;
	return check(x, "check_affinity", value);
}

int xsite_lua_check_profile(struct xsite_lua *x, const char *value)
{
	return check(x, "check_profile", value);
}

int xsite_lua_task_env(struct xsite_lua *x, const char *host, const char *nodelist,
		       struct xsite_task_env *env)
{
	struct field req[] = { { "host", host }, { "nodelist", nodelist } };
	int rc = -1;

	memset(env, 0, sizeof(*env));
	if (configured(x) < 0 || request(x, "task_env", req, 2) < 0)
		return -1;
	if (take(x, "site", &env->site) < 0 ||
	    take(x, "sites", &env->sites) < 0 ||
	    take(x, "spanning", &env->spanning) < 0 ||
	    take(x, "latency_us", &env->latency_us) < 0 ||
	    take(x, "bandwidth_mbps", &env->bandwidth_mbps) < 0 ||
	    take(x, "warning", &env->warning) < 0)
		goto out;
	if (env->sites == NULL || env->spanning == NULL) {
		set_error(x, XSITE_LUA_INTERNAL, "task_env: the answer has no sites or spanning");
		goto out;
	}
	rc = 0;
out:
	lua_pop(x->L, 1);
	if (rc < 0)
		xsite_task_env_free(env);
	return rc;
}

int xsite_lua_tune_env(struct xsite_lua *x, const char *path, char **env, char **rules)
{
	struct field req[] = { { "path", path } };
	int rc;

	*env = NULL;
	*rules = NULL;
	if (configured(x) < 0 || request(x, "tune_env", req, 1) < 0)
		return -1;
	rc = take(x, "env", env) < 0 || take(x, "rules", rules) < 0 ? -1 : 0;
	lua_pop(x->L, 1);
	if (rc == 0 && (*env == NULL || *rules == NULL)) {
		set_error(x, XSITE_LUA_INTERNAL, "tune_env: the answer has no environment or no rules");
		rc = -1;
	}
	if (rc < 0) {
		free(*env);
		free(*rules);
		*env = *rules = NULL;
	}
	return rc;
}

int xsite_lua_report_settings(struct xsite_lua *x, struct xsite_report_settings *out)
{
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (configured(x) < 0 || request(x, "report_settings", NULL, 0) < 0)
		return -1;
	if (take(x, "dir", &out->dir) == 0 && take_long(x, "traffic_max_size", &out->max_traffic) == 0 &&
	    take_long(x, "retention", &out->retention) == 0) {
		rc = 0;
		if (out->dir == NULL) {
			set_error(x, XSITE_LUA_INTERNAL, "report_settings: the answer has no ReportDir");
			rc = -1;
		}
	}
	lua_pop(x->L, 1);
	if (rc < 0)
		xsite_report_settings_free(out);
	return rc;
}

void xsite_report_settings_free(struct xsite_report_settings *s)
{
	free(s->dir);
	memset(s, 0, sizeof(*s));
}

/* The answer's field key (required) and, when log is not NULL, "log". */
static int take_text(struct xsite_lua *x, const char *fn, const char *key, char **text, char **log)
{
	int rc = -1;

	if (take(x, key, text) == 0 && (log == NULL || take(x, "log", log) == 0)) {
		rc = 0;
		if (*text == NULL) {
			set_error(x, XSITE_LUA_INTERNAL, "%s: the answer has no %s", fn, key);
			rc = -1;
		}
	}
	lua_pop(x->L, 1);
	if (rc < 0) {
		free(*text);
		*text = NULL;
		if (log != NULL) {
			free(*log);
			*log = NULL;
		}
	}
	return rc;
}

int xsite_lua_step_start(struct xsite_lua *x, const struct xsite_step_start *r, char **record)
{
	struct field req[] = {
		{ "job", r->job }, { "step", r->step }, { "user", r->user }, { "uid", r->uid },
		{ "job_nodes", r->job_nodes }, { "step_nodes", r->step_nodes },
		{ "profile", r->profile }, { "start", r->start },
	};

	*record = NULL;
	if (configured(x) < 0 || request(x, "step_start", req, sizeof(req) / sizeof(req[0])) < 0)
		return -1;
	return take_text(x, "step_start", "record", record, NULL);
}

int xsite_lua_step_end(struct xsite_lua *x, const struct xsite_step_end *r, char **record, char **log)
{
	struct field req[] = {
		{ "start", r->start }, { "finish", r->finish }, { "traffic", r->traffic },
		{ "note", r->note }, { "existing", r->existing },
	};

	*record = NULL;
	*log = NULL;
	if (configured(x) < 0 || request(x, "step_end", req, sizeof(req) / sizeof(req[0])) < 0)
		return -1;
	return take_text(x, "step_end", "record", record, log);
}

int xsite_lua_first_node(struct xsite_lua *x, const char *nodes, const char *node, int *first)
{
	struct field req[] = { { "nodes", nodes }, { "node", node } };
	char *answer = NULL;
	int rc;

	*first = 0;
	if (request(x, "first_node", req, sizeof(req) / sizeof(req[0])) < 0)
		return -1;
	rc = take(x, "first", &answer);
	lua_pop(x->L, 1);
	if (rc == 0 && answer == NULL) {
		set_error(x, XSITE_LUA_INTERNAL, "first_node: the answer has no 'first'");
		rc = -1;
	}
	if (rc == 0)
		*first = strcmp(answer, "1") == 0;
	free(answer);
	return rc;
}

int xsite_lua_slurm_nodes(struct xsite_lua *x, const char *existing, const char *job, const char *nodes,
			  char **lists, char **log)
{
	struct field req[] = { { "existing", existing }, { "job", job }, { "nodes", nodes } };

	*lists = NULL;
	*log = NULL;
	if (request(x, "slurm_nodes", req, sizeof(req) / sizeof(req[0])) < 0)
		return -1;
	return take_text(x, "slurm_nodes", "lists", lists, log);
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

enum xsite_lua_code xsite_lua_code(struct xsite_lua *x)
{
	return x->code;
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
