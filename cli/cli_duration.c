/*
 * cli/cli_duration.c: `airlock approve allow --for DURATION` (cli.h), apart from
 * the command so the unit test links it alone.
 */
#include "cli.h"

#define APPROVE_FOR_MAX	(30LL * 24 * 3600)	/* airlockd's bound too */

int
cli_duration_parse(const char *s, long long *secs)
{
	long long v = 0, mul;
	const char *p;

	for (p = s; *p >= '0' && *p <= '9'; p++) {
		if (v > APPROVE_FOR_MAX)
			return -1;
		v = v * 10 + (*p - '0');
	}
	if (p == s || p[0] == '\0' || p[1] != '\0' || s[0] == '0')
		return -1;
	switch (*p) {
	case 's': mul = 1; break;
	case 'm': mul = 60; break;
	case 'h': mul = 3600; break;
	case 'd': mul = 86400; break;
	default: return -1;
	}
	if (v > APPROVE_FOR_MAX / mul)
		return -1;
	*secs = v * mul;
	return 0;
}
