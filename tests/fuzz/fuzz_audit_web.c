/*
 * tests/fuzz/fuzz_audit_web.c: what the web view of airlock audit serve takes from
 * a request (audit/audit_web.c), over arbitrary bytes: the first byte picks the
 * groups of parameters, the rest (up to a NUL) is a query string, then a Host
 * header, then a path, split at the next two NULs.
 *
 * Promises: a query that parses gives values without control bytes, within their
 * bounds, and parses again to the same; a Host accepted is one of the names the
 * view answers to, spelled as the test spells them; a path accepted names a plain
 * file (no '/', no "..") of the web folder.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "audit.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
fz_plain(const char *s, size_t size)
{
	size_t i, n = strnlen(s, size);

	if (n >= size)
		abort();
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			abort();
}

static void
fz_query(const char *q, unsigned int which)
{
	struct audit_web_query a, b;
	char err[256];

	if (audit_web_query_parse(q, which, &a, err, sizeof(err)) == -1) {
		if (strlen(err) == 0)
			abort();
		return;
	}
	fz_plain(a.awq_sandbox, sizeof(a.awq_sandbox));
	fz_plain(a.awq_reason, sizeof(a.awq_reason));
	fz_plain(a.awq_host, sizeof(a.awq_host));
	fz_plain(a.awq_host_part, sizeof(a.awq_host_part));
	fz_plain(a.awq_text, sizeof(a.awq_text));
	if ((a.awq_decision[0] != '\0' && strcmp(a.awq_decision, "allow") != 0 &&
	    strcmp(a.awq_decision, "deny") != 0) || a.awq_limit < 0 ||
	    a.awq_limit > AUDIT_WEB_LIMIT_MAX || a.awq_wait < -1 ||
	    a.awq_wait > AUDIT_WEB_WAIT_MAX || a.awq_top < 0 ||
	    a.awq_top > AUDIT_WEB_TOP_MAX || a.awq_offset < 0 || a.awq_after < 0 ||
	    a.awq_n < 0 || a.awq_since < -1 || a.awq_until < -1)
		abort();
	if (audit_web_query_parse(q, which, &b, err, sizeof(err)) == -1 ||
	    memcmp(&a, &b, sizeof(a)) != 0)
		abort();
}

static void
fz_host(const char *h)
{
	static const struct {
		const char	*addr;
		int		 v6;
		unsigned int	 port;
		const char	*names[3];
	} views[] = {
		{ "127.0.0.1", 0, 8080, { "127.0.0.1:8080", NULL, NULL } },
		{ "::1", 1, 80, { "[::1]:80", "[::1]", NULL } },
	};
	size_t i, k;
	int named;

	for (i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
		if (!audit_web_host_ok(h, views[i].addr, views[i].v6, views[i].port))
			continue;
		named = 0;
		for (k = 0; views[i].names[k] != NULL; k++)
			named |= strcmp(h, views[i].names[k]) == 0;
		named |= views[i].port == 80 ? strcasecmp(h, "localhost") == 0 ||
		    strcasecmp(h, "localhost:80") == 0 :
		    strcasecmp(h, "localhost:8080") == 0;
		if (!named)
			abort();
	}
}

static void
fz_path(const char *p)
{
	const char *type;
	char name[65];

	if (audit_web_static(p, name, sizeof(name), &type) == -1)
		return;
	if (strchr(name, '/') != NULL || strstr(name, "..") != NULL ||
	    name[0] == '.' || strlen(name) > 64 || type == NULL ||
	    (strcmp(p, "/") != 0 && strcmp(p + 1, name) != 0))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *q, *h, *p, *end;

	if (size < 1 || (buf = malloc(size + 3)) == NULL)
		return 0;
	memcpy(buf, data + 1, size - 1);
	memset(buf + size - 1, 0, 4);
	end = buf + size - 1;
	q = buf;
	h = q + strlen(q) + 1;
	p = h <= end ? h + strlen(h) + 1 : end;
	if (p > end)
		p = end;
	fz_query(q, data[0]);
	fz_host(h <= end ? h : end);
	fz_path(p);
	free(buf);
	return 0;
}
