/*
 * tests/unit/hostname.c: the host-name normaliser, wildcard patterns and matching.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "hostname.h"
#include "../tap.h"

struct norm_case {
	const char	*in;
	size_t		 len;		/* 0: strlen(in) */
	int		 rc;
	const char	*out;		/* expected on HOSTNAME_OK */
};

static const struct norm_case norm_cases[] = {
	{ "example.com", 0, HOSTNAME_OK, "example.com" },
	{ "EXAMPLE.com.", 0, HOSTNAME_OK, "example.com" },
	{ "Api.GitHub.COM", 0, HOSTNAME_OK, "api.github.com" },
	{ "localhost", 0, HOSTNAME_OK, "localhost" },
	{ "a", 0, HOSTNAME_OK, "a" },
	{ "a-b.c-d.e", 0, HOSTNAME_OK, "a-b.c-d.e" },
	{ "0x7f.example.com", 0, HOSTNAME_OK, "0x7f.example.com" },
	{ "1.2.3.example", 0, HOSTNAME_OK, "1.2.3.example" },
	{ "123.com", 0, HOSTNAME_OK, "123.com" },
	{ "a1", 0, HOSTNAME_OK, "a1" },
	{ "xn--bcher-kva.de", 0, HOSTNAME_OK, "xn--bcher-kva.de" },
	{ "XN--BCHER-KVA.DE", 0, HOSTNAME_OK, "xn--bcher-kva.de" },
	{ "xn--p1ai", 0, HOSTNAME_OK, "xn--p1ai" },
	{ "xn--mgbh0fb.xn--kgbechtv", 0, HOSTNAME_OK, "xn--mgbh0fb.xn--kgbechtv" },
	{ "xn--fsqu00a.xn--0zwm56d", 0, HOSTNAME_OK, "xn--fsqu00a.xn--0zwm56d" },
	{ "", 0, HOSTNAME_EMPTY, NULL },
	{ ".", 0, HOSTNAME_EMPTY, NULL },
	{ "..", 0, HOSTNAME_EMPTY_LABEL, NULL },
	{ "a..b", 0, HOSTNAME_EMPTY_LABEL, NULL },
	{ ".a", 0, HOSTNAME_EMPTY_LABEL, NULL },
	{ "a..", 0, HOSTNAME_EMPTY_LABEL, NULL },
	{ "example.com..", 0, HOSTNAME_EMPTY_LABEL, NULL },
	{ "-a.com", 0, HOSTNAME_HYPHEN, NULL },
	{ "a-.com", 0, HOSTNAME_HYPHEN, NULL },
	{ "a.-", 0, HOSTNAME_HYPHEN, NULL },
	{ "a_b.com", 0, HOSTNAME_BAD_CHAR, NULL },
	{ "a b.com", 0, HOSTNAME_BAD_CHAR, NULL },
	{ "a/b", 0, HOSTNAME_BAD_CHAR, NULL },
	{ "a:443", 0, HOSTNAME_BAD_CHAR, NULL },
	{ "a@b.com", 0, HOSTNAME_BAD_CHAR, NULL },
	{ "a\\.b", 0, HOSTNAME_BAD_CHAR, NULL },
	{ "[::1]", 0, HOSTNAME_BAD_CHAR, NULL },
	{ "a\0b.com", 7, HOSTNAME_CONTROL, NULL },
	{ "example.com\0", 12, HOSTNAME_CONTROL, NULL },
	{ "a\tb", 0, HOSTNAME_CONTROL, NULL },
	{ "a\nb", 0, HOSTNAME_CONTROL, NULL },
	{ "a\x7f" "b", 0, HOSTNAME_CONTROL, NULL },
	{ "\x7f", 0, HOSTNAME_CONTROL, NULL },
	{ "b\xc3\xbc" "cher.de", 0, HOSTNAME_NON_ASCII, NULL },
	{ "\xff", 0, HOSTNAME_NON_ASCII, NULL },
	{ "xn--zz", 0, HOSTNAME_BAD_ALABEL, NULL },
	{ "xn--.com", 0, HOSTNAME_HYPHEN, NULL },
	{ "xn--a.com", 0, HOSTNAME_BAD_ALABEL, NULL },	/* U+0080 */
	{ "xn--ls8h.la", 0, HOSTNAME_OK, "xn--ls8h.la" },
	{ "xn--abc-.com", 0, HOSTNAME_HYPHEN, NULL },
	{ "xn--abc.com", 0, HOSTNAME_BAD_ALABEL, NULL },	/* C1 controls */
	{ "xn--example-.com", 0, HOSTNAME_HYPHEN, NULL },
	{ "xn--example-a.com", 0, HOSTNAME_BAD_ALABEL, NULL },
	{ "xn--99999999999999999999.com", 0, HOSTNAME_BAD_ALABEL, NULL },
	{ "xn--bcher-kva0.de", 0, HOSTNAME_BAD_ALABEL, NULL },
	{ "ab--c.com", 0, HOSTNAME_BAD_ALABEL, NULL },
	{ "zz--a.com", 0, HOSTNAME_BAD_ALABEL, NULL },
	{ "a.xy--z", 0, HOSTNAME_BAD_ALABEL, NULL },
	{ "a--b.com", 0, HOSTNAME_OK, "a--b.com" },
	{ "abc--d.com", 0, HOSTNAME_OK, "abc--d.com" },
	{ "*.example.com", 0, HOSTNAME_WILDCARD, NULL },
	{ "a.*.com", 0, HOSTNAME_WILDCARD, NULL },
	{ "1.2.3.4", 0, HOSTNAME_IP_LITERAL, NULL },
	{ "1.2.3.4.", 0, HOSTNAME_IP_LITERAL, NULL },
	{ "127.1", 0, HOSTNAME_IP_LITERAL, NULL },
	{ "2130706433", 0, HOSTNAME_IP_LITERAL, NULL },
	{ "0x7f000001", 0, HOSTNAME_IP_LITERAL, NULL },
	{ "0X7F000001", 0, HOSTNAME_IP_LITERAL, NULL },
	{ "0x7f.1", 0, HOSTNAME_IP_LITERAL, NULL },
	{ "0x7f.0.0.0x1", 0, HOSTNAME_IP_LITERAL, NULL },
	{ "0177.0.0.1", 0, HOSTNAME_IP_LITERAL, NULL },
	{ "0x", 0, HOSTNAME_IP_LITERAL, NULL },
	{ "a.0", 0, HOSTNAME_IP_LITERAL, NULL },
	{ "example.123", 0, HOSTNAME_IP_LITERAL, NULL },
	{ "0xg", 0, HOSTNAME_OK, "0xg" },
	/* RFC 3492 section 7.1 samples (lower-cased; all round-trip). */
	{ "xn--egbpdaj6bu4bxfgehfvwxn", 0, HOSTNAME_OK,
	    "xn--egbpdaj6bu4bxfgehfvwxn" },
	{ "xn--ihqwcrb4cv8a8dqg056pqjye", 0, HOSTNAME_OK,
	    "xn--ihqwcrb4cv8a8dqg056pqjye" },
	{ "xn--Proprostnemluvesky-uyb24dma41a", 0, HOSTNAME_OK,
	    "xn--proprostnemluvesky-uyb24dma41a" },
	{ "xn--b1abfaaepdrnnbgefbadotcwatmq2g4l", 0, HOSTNAME_OK,
	    "xn--b1abfaaepdrnnbgefbadotcwatmq2g4l" },
	{ "xn--3B-ww4c5e180e575a65lsy2b", 0, HOSTNAME_OK,
	    "xn--3b-ww4c5e180e575a65lsy2b" },
	{ "xn---with-SUPER-MONKEYS-pc58ag80a8qai00g7n9n", 0, HOSTNAME_OK,
	    "xn---with-super-monkeys-pc58ag80a8qai00g7n9n" },
	{ "xn--2-u9tlzr9756bt3uc0v", 0, HOSTNAME_OK, "xn--2-u9tlzr9756bt3uc0v" },
	/* A truncated delta; a non-digit; an overflowing delta. */
	{ "xn--ihqwcrb4cv8a8dqg056pqjy9", 0, HOSTNAME_BAD_ALABEL, NULL },
	{ "xn--ihqwcrb4cv8a8dqg056pqjy", 0, HOSTNAME_BAD_ALABEL, NULL },
	{ "xn--zzzzzzzzzzzzzzzzzzzzzzzzzz", 0, HOSTNAME_BAD_ALABEL, NULL },
	/* U+D800, U+FFFF, U+FDD0, U+10FFFF, U+00A0: never in a host name. */
	{ "xn--ib9b", 0, HOSTNAME_BAD_ALABEL, NULL },
	{ "xn--ab-zd9k", 0, HOSTNAME_BAD_ALABEL, NULL },
	{ "xn--1n7c", 0, HOSTNAME_BAD_ALABEL, NULL },
	{ "xn--266c", 0, HOSTNAME_BAD_ALABEL, NULL },
	{ "xn--dn32g", 0, HOSTNAME_BAD_ALABEL, NULL },
	{ "xn--6a", 0, HOSTNAME_BAD_ALABEL, NULL },
	{ "xn--tda", 0, HOSTNAME_OK, "xn--tda" },
};

struct pat_case {
	const char	*in;
	int		 rc;
	const char	*out;
};

static const struct pat_case pat_cases[] = {
	{ "*.example.com", HOSTNAME_OK, "*.example.com" },
	{ "*.EXAMPLE.com.", HOSTNAME_OK, "*.example.com" },
	{ "*.pythonhosted.org", HOSTNAME_OK, "*.pythonhosted.org" },
	{ "*.api.github.com", HOSTNAME_OK, "*.api.github.com" },
	{ "*.acme.github.io", HOSTNAME_OK, "*.acme.github.io" },
	{ "*.bbc.co.uk", HOSTNAME_OK, "*.bbc.co.uk" },
	{ "api.github.com", HOSTNAME_OK, "api.github.com" },
	{ "API.github.com.", HOSTNAME_OK, "api.github.com" },
	{ "*", HOSTNAME_PUBLIC_SUFFIX, NULL },
	{ "*.", HOSTNAME_PUBLIC_SUFFIX, NULL },
	{ "*.com", HOSTNAME_PUBLIC_SUFFIX, NULL },
	{ "*.COM.", HOSTNAME_PUBLIC_SUFFIX, NULL },
	{ "*.co.uk", HOSTNAME_PUBLIC_SUFFIX, NULL },
	{ "*.github.io", HOSTNAME_PUBLIC_SUFFIX, NULL },
	{ "*.s3.amazonaws.com", HOSTNAME_PUBLIC_SUFFIX, NULL },
	{ "*.internal", HOSTNAME_PUBLIC_SUFFIX, NULL },
	{ "*.xn--p1ai", HOSTNAME_PUBLIC_SUFFIX, NULL },
	{ "*..com", HOSTNAME_EMPTY_LABEL, NULL },
	{ "*.*.example.com", HOSTNAME_WILDCARD, NULL },
	{ "a.*.b", HOSTNAME_WILDCARD, NULL },
	{ "*a.b.com", HOSTNAME_WILDCARD, NULL },
	{ "a*.b.com", HOSTNAME_WILDCARD, NULL },
	{ "**.b.com", HOSTNAME_WILDCARD, NULL },
	{ "example.*", HOSTNAME_WILDCARD, NULL },
	{ "*.1.2.3", HOSTNAME_IP_LITERAL, NULL },
	{ "*.b\xc3\xbc" "cher.de", HOSTNAME_NON_ASCII, NULL },
	{ "*.xn--zz.de", HOSTNAME_BAD_ALABEL, NULL },
	{ "*.-a.com", HOSTNAME_HYPHEN, NULL },
};

struct match_case {
	const char	*pattern;
	const char	*name;
	int		 want;
};

static const struct match_case match_cases[] = {
	{ "*.example.com", "a.example.com", 1 },
	{ "*.example.com", "a.b.example.com", 1 },
	{ "*.example.com", "example.com", 0 },
	{ "*.example.com", "evil-example.com", 0 },
	{ "*.example.com", "xexample.com", 0 },
	{ "*.example.com", ".example.com", 0 },
	{ "*.example.com", "example.com.evil.net", 0 },
	{ "*.example.com", "a.example.co", 0 },
	{ "example.com", "example.com", 1 },
	{ "example.com", "a.example.com", 0 },
	{ "example.com", "example.co", 0 },
	{ "example.com", "xample.com", 0 },
	{ "a.example.com", "example.com", 0 },
	{ "*", "a", 0 },
	{ "*.", "a.", 0 },
	{ "*x.com", "ax.com", 0 },
	{ "*.example.com", "", 0 },
	{ "", "", 0 },
};

static char big[600];

/* A printable copy of the len bytes at s, for test names. */
static const char *
esc(const char *s, size_t len)
{
	static char buf[128];
	size_t i, o = 0;

	for (i = 0; i < len && o + 5 < sizeof(buf); i++) {
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "\\x%02x",
			    (unsigned char)s[i]);
		else
			buf[o++] = s[i];
	}
	buf[o] = '\0';
	return buf;
}

static void
test_lengths(void)
{
	char out[HOSTNAME_MAX + 1];
	size_t i;
	int rc;

	/* 63-byte label ok, 64 refused. */
	memset(big, 'a', 63);
	memcpy(big + 63, ".com", 5);
	is_int(HOSTNAME_OK, hostname_normalize(big, strlen(big), out),
	    "63-byte label");
	memset(big, 'a', 64);
	memcpy(big + 64, ".com", 5);
	is_int(HOSTNAME_TOO_LONG, hostname_normalize(big, strlen(big), out),
	    "64-byte label refused");

	/* 253 bytes ok (with and without a trailing dot), 254 refused. */
	for (i = 0; i < 253; i++)
		big[i] = (i % 2) ? '.' : 'a';
	big[253] = '\0';
	rc = hostname_normalize(big, 253, out);
	is_int(HOSTNAME_OK, rc, "253-byte name");
	is_int(253, (long long)strlen(out), "253-byte name kept whole");
	big[253] = '.';
	big[254] = '\0';
	is_int(HOSTNAME_OK, hostname_normalize(big, 254, out),
	    "253-byte name with trailing dot");
	for (i = 0; i < 255; i++)
		big[i] = (i % 2) ? '.' : 'a';
	big[254] = 'b';
	big[255] = '\0';
	is_int(HOSTNAME_TOO_LONG, hostname_normalize(big, 255, out),
	    "255-byte name refused");
	memset(big, 'a', 254);
	big[63] = big[127] = big[191] = '.';
	is_int(HOSTNAME_TOO_LONG, hostname_normalize(big, 254, out),
	    "254-byte name refused");
	memset(big, 'a', sizeof(big));
	is_int(HOSTNAME_TOO_LONG, hostname_normalize(big, sizeof(big), out),
	    "600-byte name refused");

	/* A pattern whose "*." pushes it past 253. */
	big[0] = '*';
	big[1] = '.';
	for (i = 2; i < 254; i++)
		big[i] = (i % 2) ? 'a' : '.';
	big[2] = 'a';
	big[253] = 'a';
	is_int(HOSTNAME_TOO_LONG, hostname_pattern_normalize(big, 254, out),
	    "254-byte pattern refused");
	is_int(HOSTNAME_OK, hostname_pattern_normalize(big, 253, out),
	    "253-byte pattern ok");
}

static void *
psl_thread(void *arg)
{
	char out[HOSTNAME_MAX + 1];
	int i, *bad = arg;

	for (i = 0; i < 50; i++)
		if (hostname_pattern_normalize("*.co.uk", 7, out) !=
		    HOSTNAME_PUBLIC_SUFFIX ||
		    hostname_pattern_normalize("*.bbc.co.uk", 11, out) != HOSTNAME_OK)
			*bad = 1;
	return NULL;
}

static void
test_misc(void)
{
	char buf[HOSTNAME_MAX + 1];
	pthread_t t[4];
	int i, bad = 0;

	/* In place. */
	snprintf(buf, sizeof(buf), "WWW.Example.COM.");
	is_int(HOSTNAME_OK, hostname_normalize(buf, strlen(buf), buf),
	    "normalise in place");
	is_string("www.example.com", buf, "in place output");
	snprintf(buf, sizeof(buf), "*.Example.COM.");
	is_int(HOSTNAME_OK, hostname_pattern_normalize(buf, strlen(buf), buf),
	    "pattern in place");
	is_string("*.example.com", buf, "pattern in place output");
	snprintf(buf, sizeof(buf), "a..b");
	is_int(HOSTNAME_EMPTY_LABEL, hostname_normalize(buf, strlen(buf), buf),
	    "in place refusal");
	is_string("", buf, "in place refusal empties");
	/* Only len bytes are read: the rest of the buffer does not matter. */
	is_int(HOSTNAME_OK, hostname_normalize("example.com\0junk", 11, buf),
	    "len bounds the input");
	is_int(HOSTNAME_OK, hostname_normalize("a.b.c..", 5, buf), "prefix a.b.c");
	is_string("a.b.c", buf, "prefix output");

	/* The PSL context is created once, from any number of threads. */
	for (i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, psl_thread, &bad) != 0)
			bail("pthread_create");
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	is_int(0, bad, "public-suffix check from 4 threads");
}

int
main(void)
{
	char out[HOSTNAME_MAX + 1], pat[HOSTNAME_MAX + 1], nm[HOSTNAME_MAX + 1];
	const struct norm_case *nc;
	const struct pat_case *pc;
	const struct match_case *mc;
	size_t i, len;
	int rc;

	plan_lazy();
	for (i = 0; i < sizeof(norm_cases) / sizeof(norm_cases[0]); i++) {
		nc = &norm_cases[i];
		len = nc->len ? nc->len : strlen(nc->in);
		memset(out, 'X', sizeof(out));
		rc = hostname_normalize(nc->in, len, out);
		is_int(nc->rc, rc, "normalize %zu \"%s\": %s", i, esc(nc->in, len),
		    hostname_strerror(nc->rc));
		if (nc->rc == HOSTNAME_OK)
			is_string(nc->out, out, "normalize %zu output", i);
		else
			is_string("", out, "normalize %zu leaves out empty", i);
	}
	for (i = 0; i < sizeof(pat_cases) / sizeof(pat_cases[0]); i++) {
		pc = &pat_cases[i];
		rc = hostname_pattern_normalize(pc->in, strlen(pc->in), out);
		is_int(pc->rc, rc, "pattern \"%s\": %s", esc(pc->in, strlen(pc->in)),
		    hostname_strerror(pc->rc));
		if (pc->rc == HOSTNAME_OK)
			is_string(pc->out, out, "pattern %zu output", i);
	}
	for (i = 0; i < sizeof(match_cases) / sizeof(match_cases[0]); i++) {
		mc = &match_cases[i];
		is_int(mc->want, hostname_match(mc->pattern, mc->name),
		    "match \"%s\" \"%s\"", mc->pattern, mc->name);
	}
	/* Matching after normalising both sides, the way callers do it. */
	if (hostname_pattern_normalize("*.Example.COM.", 14, pat) == HOSTNAME_OK &&
	    hostname_normalize("WWW.example.com.", 16, nm) == HOSTNAME_OK)
		ok(hostname_match(pat, nm), "normalised pattern matches name");
	else
		ok(0, "normalised pattern matches name");
	test_lengths();
	test_misc();
	for (rc = HOSTNAME_PUBLIC_SUFFIX; rc <= HOSTNAME_OK; rc++)
		ok(strcmp(hostname_strerror(rc), "unknown host name error") != 0,
		    "strerror %d: %s", rc, hostname_strerror(rc));
	is_string("unknown host name error", hostname_strerror(5), "strerror 5");
	return 0;
}
