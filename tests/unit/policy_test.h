/*
 * tests/unit/policy_test.h: helpers shared by the policy engine's unit tests (static,
 * so each test binary has its own copy).
 */
#ifndef AIRLOCK_POLICY_TEST_H
#define AIRLOCK_POLICY_TEST_H

#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "../tap.h"

/* Every error of e as a TAP diagnostic, formatted as the CLI prints it. */
static inline void
policy_errors_diag(const struct policy_errors *e)
{
	char line[1024];
	size_t i;

	for (i = 0; i < e->n; i++) {
		policy_error_fmt(&e->v[i], line, sizeof(line));
		diag("  %s", line);
	}
}

/* A copy of src with every "'" turned into '"' (documents are written with '). */
static inline char *
policy_test_dq(const char *src)
{
	char *s;
	size_t i;

	if ((s = strdup(src)) == NULL)
		bail("out of memory");
	for (i = 0; s[i] != '\0'; i++)
		if (s[i] == '\'')
			s[i] = '"';
	return s;
}

#endif
