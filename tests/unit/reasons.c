/*
 * tests/unit/reasons.c: the reason table (proxy/proxy_reason.h) against README's
 * "Denial reason codes": every code airlockd can write is documented there, and
 * nothing documented there is unknown.  The policy engine's codes are in the table.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "../../proxy/proxy_reason.h"
#include "../tap.h"

#define CODES_MAX	256

static char	*readme[CODES_MAX];
static size_t	 nreadme;

static int
in_table(const char *code)
{
	size_t i;

	for (i = 0; i < PR__COUNT; i++)
		if (proxy_reasons[i].ri_code != NULL &&
		    strcmp(proxy_reasons[i].ri_code, code) == 0)
			return 1;
	return 0;
}

static int
in_readme(const char *code)
{
	size_t i;

	for (i = 0; i < nreadme; i++)
		if (strcmp(readme[i], code) == 0)
			return 1;
	return 0;
}

/* The `code`s in the first cell of each row of the section's table. */
static int
readme_load(const char *path)
{
	char line[4096], *p, *q, *end;
	FILE *f;
	int in = 0;

	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "## ", 3) == 0) {
			in = strncmp(line, "## Denial reason codes", 22) == 0;
			continue;
		}
		if (!in || strncmp(line, "| `", 3) != 0)
			continue;
		if ((end = strchr(line + 1, '|')) == NULL)
			continue;
		*end = '\0';
		for (p = line; (p = strchr(p, '`')) != NULL; p = q + 1) {
			if ((q = strchr(p + 1, '`')) == NULL)
				break;
			*q = '\0';
			if (nreadme < CODES_MAX)
				readme[nreadme++] = strdup(p + 1);
		}
	}
	fclose(f);
	return 0;
}

int
main(void)
{
	const char *top = getenv("AIRLOCK_SRCDIR");
	char path[1024];
	size_t i, n;
	int r;

	plan_lazy();
	snprintf(path, sizeof(path), "%s/README.md", top != NULL ? top : ".");
	ok(readme_load(path) == 0, "read %s", path);
	ok(nreadme >= 50, "README's table lists %zu codes", nreadme);
	for (i = 0, n = 0; i < PR__COUNT; i++) {
		ok(proxy_reasons[i].ri_code != NULL && proxy_reasons[i].ri_meaning !=
		    NULL && in_readme(proxy_reasons[i].ri_code),
		    "table code %s is in README's table", proxy_reasons[i].ri_code);
		n++;
	}
	ok(n == PR__COUNT, "every entry of the table looked at");
	for (i = 0; i < nreadme; i++)
		ok(in_table(readme[i]), "README's %s is a known code", readme[i]);
	for (r = POLICY_REASON_INVALID_NAME; r <= POLICY_REASON_PRIVATE_ADDRESS; r++)
		ok(in_table(policy_reason_str((enum policy_reason)r)),
		    "the policy engine's %s is in the table",
		    policy_reason_str((enum policy_reason)r));
	/* The checks can refuse: a made-up code is in neither. */
	ok(!in_table("no_such_reason") && !in_readme("no_such_reason"),
	    "control: an unknown code is found in neither");
	for (i = 0; i < nreadme; i++)
		free(readme[i]);
	return tap_failures() != 0;
}
