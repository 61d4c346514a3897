/*
 * tests/fuzz/fuzz_path.c: the request-path normaliser and the globs.
 *
 * The input is split at its first '\n' into (glob, path).  Invariants for a path
 * the normaliser accepts: the output starts with '/', is a fixed point, holds no
 * dot segment ("/./", "/../", a final "/." or "/.."), no '?', '#', '\\', control or
 * non-ASCII byte, and every '%' starts an upper-case escape that is not an
 * unreserved character; the output matches itself as a glob and matches
 * the everything-glob ("/" then two stars).
 * Matching any glob against it terminates (the fuzzer's timeout catches blowups).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int
is_uhex(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F');
}

static void
check_normalized(const char *out)
{
	char again[POLICY_PATH_MAX];
	size_t i, len = strlen(out);
	int v;

	if (out[0] != '/')
		abort();
	if (strstr(out, "/../") != NULL || strstr(out, "/./") != NULL ||
	    (len >= 3 && strcmp(out + len - 3, "/..") == 0) ||
	    (len >= 2 && strcmp(out + len - 2, "/.") == 0))
		abort();
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)out[i];

		if (c < 0x21 || c >= 0x7f || c == '?' || c == '#' || c == '\\')
			abort();
		if (c == '%') {
			if (!is_uhex(out[i + 1]) || !is_uhex(out[i + 2]))
				abort();
			v = (out[i + 1] <= '9' ? out[i + 1] - '0' :
			    out[i + 1] - 'A' + 10) << 4 | (out[i + 2] <= '9' ?
			    out[i + 2] - '0' : out[i + 2] - 'A' + 10);
			if ((v >= 'a' && v <= 'z') || (v >= 'A' && v <= 'Z') ||
			    (v >= '0' && v <= '9') || v == '-' || v == '.' ||
			    v == '_' || v == '~' || v == '/' || v == '\\' ||
			    v < 0x20 || v == 0x7f)
				abort();
		}
	}
	if (policy_path_normalize(out, len, again, sizeof(again)) == -1 ||
	    strcmp(out, again) != 0)
		abort();
	if (!policy_path_match(out, out) || !policy_path_match("/**", out))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char glob[POLICY_PATH_MAX], out[POLICY_PATH_MAX];
	const uint8_t *nl;
	const char *path;
	size_t glen, plen;

	if ((nl = memchr(data, '\n', size)) == NULL) {
		glen = 0;
		path = (const char *)data;
		plen = size;
	} else {
		glen = (size_t)(nl - data);
		path = (const char *)nl + 1;
		plen = size - glen - 1;
	}
	if (glen >= sizeof(glob))
		return 0;
	memcpy(glob, data, glen);
	glob[glen] = '\0';
	if (policy_path_normalize(path, plen, out, sizeof(out)) == 0) {
		check_normalized(out);
		(void)policy_path_match(glob, out);
	}
	/* The glob side on its own: raw input must not crash the matcher. */
	if (glen > 0 && memchr(glob, '\0', glen) == NULL)
		(void)policy_path_match(glob, glob);
	return 0;
}
