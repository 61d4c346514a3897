/*
 * tests/fuzz/fuzz_hostname.c: lib/hostname.c over arbitrary bytes.
 *
 * Invariants: the normaliser's output is a fixed point, fits HOSTNAME_MAX, is never
 * an address to inet_aton() or netaddr_parse(), and a refusal leaves out empty; a
 * pattern's output is a fixed point too and is the plain normalisation when it has
 * no wildcard; a name matched by a pattern is normalised and lies on a label
 * boundary below the pattern's suffix.  The input is split at its first '\n' into
 * (pattern, name) for the matching checks.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hostname.h"
#include "netaddr.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check_normalized(const char *out)
{
	char again[HOSTNAME_MAX + 1];
	struct in_addr in;
	struct netaddr na;
	size_t len = strlen(out);

	if (len == 0 || len > HOSTNAME_MAX)
		abort();
	if (hostname_normalize(out, len, again) != HOSTNAME_OK ||
	    strcmp(again, out) != 0)
		abort();
	if (inet_aton(out, &in) != 0 || netaddr_parse(out, &na) == 0)
		abort();
}

static void
check_pattern(const char *pat)
{
	char again[HOSTNAME_MAX + 1];
	size_t len = strlen(pat);

	if (len == 0 || len > HOSTNAME_MAX)
		abort();
	if (hostname_pattern_normalize(pat, len, again) != HOSTNAME_OK ||
	    strcmp(again, pat) != 0)
		abort();
	if (pat[0] == '*') {
		if (pat[1] != '.' || strchr(pat + 2, '*') != NULL ||
		    strchr(pat + 2, '.') == NULL)
			abort();
		check_normalized(pat + 2);
		/* The suffix itself never matches its wildcard. */
		if (hostname_match(pat, pat + 2))
			abort();
	} else
		check_normalized(pat);
	if (!hostname_match(pat, pat) && pat[0] != '*')
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[HOSTNAME_MAX + 1], pat[HOSTNAME_MAX + 1], name[HOSTNAME_MAX + 1];
	const char *in = (const char *)data, *nl;
	size_t plen, nlen, slen;
	int rc, prc, nrc;

	rc = hostname_normalize(in, size, out);
	if (hostname_strerror(rc) == NULL)
		abort();
	if (rc == HOSTNAME_OK)
		check_normalized(out);
	else if (rc < HOSTNAME_PUBLIC_SUFFIX || rc > HOSTNAME_OK || out[0] != '\0')
		abort();

	prc = hostname_pattern_normalize(in, size, pat);
	if (prc == HOSTNAME_OK) {
		check_pattern(pat);
		if (pat[0] != '*' && (rc != HOSTNAME_OK || strcmp(pat, out) != 0))
			abort();
	} else if (pat[0] != '\0')
		abort();

	if ((nl = memchr(in, '\n', size)) == NULL)
		return 0;
	plen = (size_t)(nl - in);
	nlen = size - plen - 1;
	if (hostname_pattern_normalize(in, plen, pat) != HOSTNAME_OK)
		return 0;
	nrc = hostname_normalize(nl + 1, nlen, name);
	if (nrc != HOSTNAME_OK)
		return 0;
	if (hostname_match(pat, name)) {
		check_normalized(name);
		if (pat[0] == '*') {
			slen = strlen(pat + 1);		/* ".suffix" */
			if (strlen(name) <= slen || strcmp(name + strlen(name) -
			    slen, pat + 1) != 0)
				abort();
		} else if (strcmp(pat, name) != 0)
			abort();
	}
	return 0;
}
