/*
 * tests/tap.c: TAP output for unit tests.  Exit status is non-zero when any check
 * failed or the count does not match the plan, so the binary fails on its own too.
 */
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

static int tap_planned = -1;
static int tap_lazy;
static int tap_run;
static int tap_failed;
static char tap_dir[64];

static int
tap_rm(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

static void
tap_finish(void)
{
	if (tap_dir[0] != '\0')
		nftw(tap_dir, tap_rm, 16, FTW_DEPTH | FTW_PHYS);
	if (tap_lazy)
		printf("1..%d\n", tap_run);
	else if (tap_planned >= 0 && tap_planned != tap_run)
		printf("# planned %d tests but ran %d\n", tap_planned, tap_run);
	fflush(stdout);
	if (tap_failed > 0 || (!tap_lazy && tap_planned >= 0 &&
	    tap_planned != tap_run))
		_exit(1);
}

void
plan(int n)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	tap_planned = n;
	printf("1..%d\n", n);
	atexit(tap_finish);
}

void
plan_lazy(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	tap_lazy = 1;
	atexit(tap_finish);
}

static int
tap_vok(int pass, const char *fmt, va_list ap)
{
	tap_run++;
	printf("%s %d - ", pass ? "ok" : "not ok", tap_run);
	vprintf(fmt, ap);
	printf("\n");
	if (!pass)
		tap_failed++;
	return pass;
}

int
ok(int pass, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vok(pass, fmt, ap);
	va_end(ap);
	return pass;
}

int
is_int(long long want, long long got, const char *fmt, ...)
{
	va_list ap;
	int pass = want == got;

	va_start(ap, fmt);
	tap_vok(pass, fmt, ap);
	va_end(ap);
	if (!pass)
		diag("wanted %lld, got %lld", want, got);
	return pass;
}

int
is_string(const char *want, const char *got, const char *fmt, ...)
{
	va_list ap;
	int pass;

	if (want == NULL || got == NULL)
		pass = want == got;
	else
		pass = strcmp(want, got) == 0;
	va_start(ap, fmt);
	tap_vok(pass, fmt, ap);
	va_end(ap);
	if (!pass)
		diag("wanted \"%s\", got \"%s\"", want ? want : "(null)",
		    got ? got : "(null)");
	return pass;
}

int
is_blob(const void *want, const void *got, size_t len, const char *fmt, ...)
{
	va_list ap;
	int pass = memcmp(want, got, len) == 0;

	va_start(ap, fmt);
	tap_vok(pass, fmt, ap);
	va_end(ap);
	return pass;
}

void
diag(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

void
skip(const char *reason, ...)
{
	va_list ap;

	tap_run++;
	printf("ok %d # skip ", tap_run);
	va_start(ap, reason);
	vprintf(reason, ap);
	va_end(ap);
	printf("\n");
}

void
skip_all(const char *reason, ...)
{
	va_list ap;

	printf("1..0 # skip ");
	va_start(ap, reason);
	vprintf(reason, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	exit(0);
}

void
bail(const char *reason, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, reason);
	vprintf(reason, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	_exit(255);
}

int
tap_failures(void)
{
	return tap_failed;
}

const char *
tap_tmpdir(void)
{
	if (tap_dir[0] == '\0') {
		snprintf(tap_dir, sizeof(tap_dir), "/tmp/airlock-test.XXXXXX");
		if (mkdtemp(tap_dir) == NULL)
			bail("mkdtemp failed");
	}
	return tap_dir;
}
