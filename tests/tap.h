/*
 * tests/tap.h: a small TAP emitter for the unit tests, after C TAP Harness's basic.h.
 * Every helper returns whether the check passed, so a test can stop early on failure.
 */
#ifndef AIRLOCK_TAP_H
#define AIRLOCK_TAP_H

#include <stddef.h>

void	plan(int n);
void	plan_lazy(void);		/* prints 1..N at exit from the count run */
int	ok(int pass, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int	is_int(long long want, long long got, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
int	is_string(const char *want, const char *got, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
int	is_blob(const void *want, const void *got, size_t len, const char *fmt, ...)
	    __attribute__((format(printf, 4, 5)));
void	diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	skip(const char *reason, ...) __attribute__((format(printf, 1, 2)));
void	skip_all(const char *reason, ...) __attribute__((format(printf, 1, 2),
	    noreturn));
void	bail(const char *reason, ...) __attribute__((format(printf, 1, 2), noreturn));
int	tap_failures(void);		/* failed checks so far */

/* A temporary directory removed (recursively) at exit; path valid until then. */
const char *tap_tmpdir(void);

#endif
