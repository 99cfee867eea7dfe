/*
 * config.h: the plugstack.conf arguments of xsite.so.
 *
 *   required /usr/lib/.../xsite.so config=PATH tune_mpi=yes|no report=yes|no lua_path=DIR
 *
 * Every default is set first, then each key=value is parsed; an unknown key
 * or a bad value fails the load with "xsite: <key>: ...".
 */
#ifndef XSITE_CONFIG_H
#define XSITE_CONFIG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* Where slurm.conf is when SLURM_CONF is not set (xsite.conf sits beside it). */
#ifndef XSITE_SLURM_CONFDIR
#define XSITE_SLURM_CONFDIR "/etc/slurm"
#endif

/* Where the xsite Lua library is (the directory holding xsite/config.lua). */
#ifndef XSITE_LUADIR
#define XSITE_LUADIR "/usr/share/lua/5.1"
#endif

struct xsite_config {
	char *config_path;	/* xsite.conf */
	bool tune_mpi;		/* MPI tuning for spanning jobs */
	bool report;		/* per-job records in ReportDir (default yes) */
	char *lua_path;		/* directory of the xsite Lua library */
};

/*
 * Set the defaults, then parse ac/av.  The default of config= is the
 * xsite.conf beside slurm_conf (the value of SLURM_CONF, may be NULL: then
 * XSITE_SLURM_CONFDIR).  On failure returns -1, *err holds a message starting
 * with "xsite: " (the caller frees it) and cfg holds nothing to free.
 */
int xsite_config_parse(struct xsite_config *cfg, int ac, char **av,
		       const char *slurm_conf, char **err);

void xsite_config_free(struct xsite_config *cfg);

/* A new string formatted like printf (free it), or NULL when out of memory. */
char *xsite_fmt(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* xsite_fmt with a va_list. */
char *xsite_vfmt(const char *format, va_list ap) __attribute__((format(printf, 1, 0)));

/* How xsite_printable renders a text. */
enum xsite_print {
	XSITE_PRINT_ASCII,	/* every byte that is not printable ASCII as \xHH */
	XSITE_PRINT_LINE,	/* well-formed UTF-8 kept, but C1 controls, line separators and
				 * bidirectional controls; a newline as "; " */
};

/*
 * Text that someone else wrote (a user's path, a message built from a user's
 * file, the Lua library's errors, which quote users' text), made safe for a
 * log line: at most max bytes of s, every other control character (C0, DEL,
 * C1) and every byte the rendering does not keep as \xHH, "..." when cut.
 * A new string (free it), or NULL when out of memory.  (The Lua library's
 * messages come escaped already, a backslash as \\: they pass through
 * unchanged.)
 */
char *xsite_printable(const char *s, size_t max, enum xsite_print how);

#endif /* XSITE_CONFIG_H */
