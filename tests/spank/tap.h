/*
 * tap.h: the TAP output of the SPANK plugin's C tests (unit.c, hostile.c):
 * ok() prints one test's line, diag() a diagnostic; `failures` counts the
 * tests that failed, for the exit status.
 */
#ifndef XSITE_TESTS_TAP_H
#define XSITE_TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The library and the configuration the tests load (the build sets them: Makefile.am). */
#ifndef XSITE_TEST_LUADIR
#define XSITE_TEST_LUADIR "lua"
#endif
#ifndef XSITE_TEST_CONFIG
#define XSITE_TEST_CONFIG "site-configs/testbed.conf"
#endif

static int test_no, failures;

static void ok(int cond, const char *format, ...) __attribute__((format(printf, 2, 3)));

static void ok(int cond, const char *format, ...)
{
	va_list ap;

	printf("%sok %d - ", cond ? "" : "not ", ++test_no);
	va_start(ap, format);
	vprintf(format, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		failures++;
}

static void diag(const char *what, const char *s)
{
	printf("# %s: %s\n", what, s ? s : "(null)");
}

/* Whether s holds part (NULL holds nothing). */
static int has(const char *s, const char *part)
{
	return s != NULL && strstr(s, part) != NULL;
}

#endif /* XSITE_TESTS_TAP_H */
