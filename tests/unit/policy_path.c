/*
 * tests/unit/policy_path.c: the request-path normaliser and the path globs.
 */
#include <string.h>
#include <time.h>

#include "policy.h"
#include "../tap.h"

static void
norm_ok(const char *in, const char *want)
{
	char out[256], again[256];

	if (!ok(policy_path_normalize(in, strlen(in), out, sizeof(out)) == 0,
	    "normalise %s", in)) {
		is_string(want, "(refused)", "  -> %s", want);
		return;
	}
	is_string(want, out, "  %s -> %s", in, want);
	/* The output is a fixed point. */
	ok(policy_path_normalize(out, strlen(out), again, sizeof(again)) == 0 &&
	    strcmp(out, again) == 0, "  %s is a fixed point", out);
}

static void
norm_bad(const char *in, size_t len, const char *why)
{
	char out[256];

	ok(policy_path_normalize(in, len, out, sizeof(out)) == -1,
	    "refuse %s", why);
}

static void
match(const char *glob, const char *path, int want)
{
	is_int(want, policy_path_match(glob, path), "%s %s %s", glob,
	    want ? "matches" : "does not match", path);
}

int
main(void)
{
	char small[8], big[POLICY_PATH_MAX];
	clock_t t0;
	size_t i;

	plan_lazy();

	/* Plain paths, decoding, upper-casing. */
	norm_ok("/", "/");
	norm_ok("/repos/acme/app", "/repos/acme/app");
	norm_ok("/a/b/", "/a/b/");
	norm_ok("/%61%62%63", "/abc");
	norm_ok("/%7euser/%2D%2e%5F", "/~user/-._");
	norm_ok("/a%2cb", "/a%2Cb");		/* sub-delim stays encoded */
	norm_ok("/a,b:c@d!$&'()*+;=", "/a,b:c@d!$&'()*+;=");
	norm_ok("/caf%c3%a9", "/caf%C3%A9");
	norm_ok("/a b", "/a%20b");
	norm_ok("/a{b}|c", "/a%7Bb%7D%7Cc");	/* raw non-pchar gets encoded */
	norm_ok("/a%7Bb", "/a%7Bb");		/* ... to the same spelling */
	norm_ok("/a%25b", "/a%25b");
	norm_ok("/a\"b", "/a%22b");
	/* Stops at the query and the fragment. */
	norm_ok("/search?q=../../x", "/search");
	norm_ok("/p#frag/../..", "/p");
	norm_ok("/p%3Fq", "/p%3Fq");

	/* Dot segments, also when spelled with %2e. */
	norm_ok("/a/./b", "/a/b");
	norm_ok("/a/b/../c", "/a/c");
	norm_ok("/a/b/..", "/a/");
	norm_ok("/a/b/.", "/a/b/");
	norm_ok("/repos/acme/../x", "/repos/x");
	norm_ok("/repos/acme/../../admin", "/admin");
	norm_ok("/repos/acme/%2e%2e/%2E%2E/admin", "/admin");
	norm_ok("/a/%2e%2e/b", "/b");
	norm_ok("/a/%2E./b", "/b");
	norm_ok("/a/.%2e", "/");
	norm_ok("/a/...", "/a/...");		/* not a dot segment */
	norm_ok("/a/..b", "/a/..b");
	norm_ok("/./a", "/a");
	norm_ok("/a//b", "/a//b");		/* nothing else collapsed */

	/* Refusals. */
	norm_bad("", 0, "empty path");
	norm_bad("a/b", 3, "a path not starting with '/'");
	norm_bad("*", 1, "'*' request target");
	norm_bad("http://x/", 9, "absolute-form target");
	norm_bad("/repos/acme/../../../admin", 26, "'..' above the root after "
	    "a prefix");
	norm_bad("/..", 3, "'/..'");
	norm_bad("/../x", 5, "'/../x'");
	norm_bad("/%2e%2e/x", 9, "'/%2e%2e/x'");
	norm_bad("/a/%2E%2E/%2e%2e/x", 18, "encoded '..' twice");
	norm_bad("/a%2Fb", 6, "%2F");
	norm_bad("/a%2fb", 6, "%2f");
	norm_bad("/a%5Cb", 6, "%5C");
	norm_bad("/a%5cb", 6, "%5c");
	norm_bad("/a%00b", 6, "%00");
	norm_bad("/a%0d%0aX: y", 12, "encoded CR LF");
	norm_bad("/a%7f", 5, "encoded DEL");
	norm_bad("/a\\b", 4, "raw backslash");
	norm_bad("/a\\..\\..\\x", 10, "backslash traversal");
	norm_bad("/a\0b", 4, "raw NUL");
	norm_bad("/a\tb", 4, "raw tab");
	norm_bad("/a\rb", 4, "raw CR");
	norm_bad("/a\x7f", 3, "raw DEL");
	norm_bad("/caf\xc3\xa9", 6, "raw non-ASCII");
	norm_bad("/a%", 3, "truncated %");
	norm_bad("/a%4", 4, "truncated %4");
	norm_bad("/a%zz", 5, "bad hex");
	norm_bad("/a%%41", 6, "%%");
	norm_bad("/a//../b", 8, "'..' removing an empty segment");
	norm_bad("/a/..;/admin", 12, "'..;' segment");
	norm_bad("/a/.;x/b", 8, "'.;' segment");
	norm_bad("/a/%2e%2e;/b", 12, "'%2e%2e;' segment");
	ok(policy_path_normalize("/abcdefgh", 9, small, sizeof(small)) == -1,
	    "refuse: output does not fit");
	ok(policy_path_normalize("/abcdef", 7, small, sizeof(small)) == 0 &&
	    strcmp(small, "/abcdef") == 0, "exactly fits");
	ok(policy_path_normalize("/a b", 4, small, 5) == -1,
	    "refuse: encoded output does not fit");
	ok(policy_path_normalize("/x?%zz", 6, small, sizeof(small)) == 0 &&
	    strcmp(small, "/x") == 0, "query string is not checked");

	/* Globs: '*' within a segment. */
	match("/repos/acme/*", "/repos/acme/app", 1);
	match("/repos/acme/*", "/repos/acme/", 1);
	match("/repos/acme/*", "/repos/acme", 0);
	match("/repos/acme/*", "/repos/acme/app/issues", 0);
	match("/repos/acme/*", "/repos/acme//x", 0);
	match("/repos/acme/*", "/repos/acmeX/app", 0);
	match("/repos/*/app", "/repos/acme/app", 1);
	match("/repos/*/app", "/repos/a/b/app", 0);
	match("/a*c/x", "/abbbc/x", 1);
	match("/a*c/x", "/ac/x", 1);
	match("/a*c/x", "/ab/cx", 0);
	match("/*.json", "/policy.json", 1);
	match("/*.json", "/dir/policy.json", 0);
	match("/exact", "/exact", 1);
	match("/exact", "/exact/", 0);
	match("/exact", "/Exact", 0);
	match("/", "/", 1);
	match("/", "/a", 0);
	/* '**' across segments. */
	match("/**", "/", 1);
	match("/**", "/a/b/c", 1);
	match("/repos/acme/**", "/repos/acme", 1);
	match("/repos/acme/**", "/repos/acme/", 1);
	match("/repos/acme/**", "/repos/acme/app/issues/1", 1);
	match("/repos/acme/**", "/repos/acmex/app", 0);
	match("/repos/acme/**", "/repos/other/acme/x", 0);
	match("/**/x", "/x", 1);
	match("/**/x", "/a/b/x", 1);
	match("/**/x", "/a/b/x/y", 0);
	match("/a/**/b/**/c", "/a/b/c", 1);
	match("/a/**/b/**/c", "/a/1/2/b/3/c", 1);
	match("/a/**/b/**/c", "/a/1/2/c/3/b", 0);
	match("/a/**/*.git", "/a/x/y/z.git", 1);
	match("/a/**/*.git", "/a/x/y/z.gitx", 0);
	/* Defensive: not a path, not a glob. */
	match("repos/*", "repos/x", 0);
	match("/x", "x", 0);
	ok(policy_path_match(NULL, "/") == 0 && policy_path_match("/", NULL) == 0,
	    "NULL never matches");

	/* Pathological globs stay cheap: no exponential backtracking. */
	big[0] = '\0';
	for (i = 0; i + 4 < sizeof(big) - 8; i += 2)
		memcpy(big + i, "/a", 3);
	t0 = clock();
	match("/**/**/**/**/**/**/**/**/**/**/x", big, 0);
	match("/**/**/**/**/**/**/**/**/**/**/a", big, 1);
	match("/*a*a*a*a*a*a*a*a*a*a*a*a*b", "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 0);
	ok((double)(clock() - t0) / CLOCKS_PER_SEC < 0.5,
	    "pathological globs took %.3f s of CPU",
	    (double)(clock() - t0) / CLOCKS_PER_SEC);
	return 0;
}
