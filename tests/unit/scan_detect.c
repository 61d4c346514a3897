/*
 * tests/unit/scan_detect.c: placeholder detection and substitution
 * (proxy/proxy_scan.c): raw, percent-encoded (any subset, either hex case),
 * base64 and base64url at every alignment, Basic credentials; streams split at
 * every byte; substitution in header values with Basic re-encoding; refusals.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../proxy/proxy_scan.h"
#include "../tap.h"

#define P1	"AIRLOCK_PH_github_0123456789abcdef"
#define S1	"ghp_RealSecretValue/With+Specials=="
#define P2	"sk-AIRLOCK.placeholder~XYZ12345"
#define S2	"sk-live-REAL-2"

static struct scan_set *set;

static struct http_buf
b64(const char *s, size_t n, int url)
{
	struct http_buf b = HTTP_BUF_INIT;

	if (scan_b64_encode((const uint8_t *)s, n, url, &b) == -1)
		bail("b64");
	if (url)	/* URL-safe text usually goes unpadded */
		while (b.hb_len > 0 && b.hb_p[b.hb_len - 1] == '=')
			b.hb_len--;
	return b;
}

static int
find(const void *p, size_t n, struct scan_match *m)
{
	return scan_find(set, p, n, m);
}

static int
find_str(const char *s, struct scan_match *m)
{
	return find(s, strlen(s), m);
}

static void
test_find(void)
{
	struct scan_match m;
	char buf[512];
	size_t k, i;
	int url;

	ok(find_str("Bearer " P1, &m) && m.sm_id == 1 && m.sm_enc == SCAN_ENC_RAW,
	    "raw in a header value");
	ok(find_str("/api?key=" P2 "&x=1", &m) && m.sm_id == 2, "raw in a URL");
	ok(!find_str("Bearer AIRLOCK_PH_github_0123456789abcdeX", &m),
	    "near miss is not a match");
	ok(!find_str("", &m), "empty value");
	ok(find_str("/a?k=%41IRLOCK_PH_github_0123456789abcdef", &m) &&
	    m.sm_id == 1 && m.sm_enc == SCAN_ENC_PCT, "one escaped byte");
	ok(find_str("/a?k=sk-AIRLOCK%2eplaceholder%7eXYZ12345", &m) && m.sm_id == 2,
	    "lower-case hex escapes");
	/* every byte escaped */
	strcpy(buf, "x=");
	for (i = 0; i < strlen(P1); i++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%%%02X",
		    (unsigned char)P1[i]);
	ok(find_str(buf, &m) && m.sm_id == 1 && m.sm_enc == SCAN_ENC_PCT,
	    "fully percent-encoded");
	/* broken escapes are literal and do not hide anything */
	ok(find_str("%%zz%4" P1, &m) && m.sm_id == 1, "after broken escapes");
	ok(!find_str("%4", &m), "a lone partial escape");
	/* base64, both alphabets, every alignment, with various neighbours */
	for (url = 0; url < 2; url++)
		for (k = 0; k < 3; k++) {
			struct http_buf e;
			char plain[128];
			int n;

			n = snprintf(plain, sizeof(plain), "%.*s%s%s", (int)k, "\xff\xfe",
			    P1, k == 1 ? "\xfb" : k == 2 ? "!?" : "");
			e = b64(plain, (size_t)n, url);
			/* where both alphabets agree, the first pattern (std) wins */
			ok(find(e.hb_p, e.hb_len, &m) && m.sm_id == 1 &&
			    (m.sm_enc == SCAN_ENC_B64URL || m.sm_enc == SCAN_ENC_B64),
			    "base64%s at alignment %zu", url ? "url" : "", k);
			http_buf_free(&e);
		}
	/* Basic credentials */
	{
		struct http_buf e = b64("user:" P2, strlen("user:" P2), 0);

		snprintf(buf, sizeof(buf), "Basic %.*s", (int)e.hb_len, e.hb_p);
		ok(find_str(buf, &m) && m.sm_id == 2, "in Basic credentials");
		http_buf_free(&e);
	}
}

/* Feeds s split at cut; returns whether a match with id was found. */
static int
stream_split(const char *s, size_t n, size_t cut, int id)
{
	struct scan_stream st;
	struct scan_match m;

	scan_stream_init(&st, set);
	if (scan_stream_feed(&st, (const uint8_t *)s, cut, &m))
		return m.sm_id == id;
	if (scan_stream_feed(&st, (const uint8_t *)s + cut, n - cut, &m))
		return m.sm_id == id;
	return 0;
}

static void
test_stream(void)
{
	static const char *bodies[] = {
		"{\"token\":\"" P1 "\"}",
		"token=%41%49%52LOCK_PH_github_0123456789abcde%66&x=1",
		"data=QUlSTE9DS19QSF9naXRodWJfMDEyMzQ1Njc4OWFiY2RlZg==",
	};
	struct scan_stream st;
	struct scan_match m;
	size_t b, cut, i;
	int all;

	for (b = 0; b < sizeof(bodies) / sizeof(bodies[0]); b++) {
		size_t n = strlen(bodies[b]);

		all = 1;
		for (cut = 0; cut <= n; cut++)
			if (!stream_split(bodies[b], n, cut, 1)) {
				diag("body %zu missed at cut %zu", b, cut);
				all = 0;
			}
		ok(all, "body %zu found at every split", b);
		/* byte by byte */
		scan_stream_init(&st, set);
		for (i = 0; i < n; i++)
			if (scan_stream_feed(&st, (const uint8_t *)bodies[b] + i, 1, &m))
				break;
		ok(i < n && m.sm_id == 1, "body %zu found byte-wise", b);
	}
	/* a stream with two placeholders: feed again after the first */
	{
		static const char two[] = "a " P2 " b " P1 " c";

		scan_stream_init(&st, set);
		ok(scan_stream_feed(&st, (const uint8_t *)two, sizeof(two) - 1, &m) &&
		    m.sm_id == 2, "first of two");
		is_int((long long)(strstr(two, P2) - two + strlen(P2)),
		    (long long)m.sm_end, "match end offset");
		ok(scan_stream_feed(&st, (const uint8_t *)two + m.sm_end,
		    sizeof(two) - 1 - m.sm_end, &m) && m.sm_id == 1, "second of two");
	}
}

static int
subst(const char *in, const char *want, int wantn)
{
	struct http_buf out = HTTP_BUF_INIT;
	int ids[4] = { 0 }, n, r;

	n = scan_subst_value(set, (const uint8_t *)in, strlen(in), &out, ids, 4);
	r = is_int(wantn, n, "substitutions in \"%s\"", in) &&
	    is_int((long long)strlen(want), (long long)out.hb_len, "length") &&
	    is_blob(want, out.hb_p, strlen(want), "value");
	if (wantn > 0)
		ok(ids[0] == 1 || ids[0] == 2, "ids reported");
	http_buf_free(&out);
	return r;
}

static void
test_subst(void)
{
	char in[256], want[256];
	struct http_buf e, e2;
	size_t k;

	subst("Bearer " P1, "Bearer " S1, 1);
	subst(P2 "," P1, S2 "," S1, 2);
	subst("nothing here", "nothing here", 0);
	subst("Bearer AIRLOCK_PH_github_0123456789abcde", "Bearer "
	    "AIRLOCK_PH_github_0123456789abcde", 0);
	/* Basic at every alignment of the placeholder in user:pass */
	for (k = 0; k < 3; k++) {
		char cred[128], cred2[128];

		snprintf(cred, sizeof(cred), "%.*s:" P1, (int)(k + 1), "abc");
		snprintf(cred2, sizeof(cred2), "%.*s:" S1, (int)(k + 1), "abc");
		e = b64(cred, strlen(cred), 0);
		e2 = b64(cred2, strlen(cred2), 0);
		snprintf(in, sizeof(in), "Basic %.*s", (int)e.hb_len, e.hb_p);
		snprintf(want, sizeof(want), "Basic %.*s", (int)e2.hb_len, e2.hb_p);
		subst(in, want, 1);
		http_buf_free(&e);
		http_buf_free(&e2);
	}
	/* scheme spelling and spacing kept */
	e = b64(P2 ":x", strlen(P2 ":x"), 0);
	e2 = b64(S2 ":x", strlen(S2 ":x"), 0);
	snprintf(in, sizeof(in), "bASIC  %.*s", (int)e.hb_len, e.hb_p);
	snprintf(want, sizeof(want), "bASIC  %.*s", (int)e2.hb_len, e2.hb_p);
	subst(in, want, 1);
	http_buf_free(&e);
	http_buf_free(&e2);
	/* an encoded placeholder is not substituted, but scan_find sees it */
	{
		struct scan_match m;
		const char *v = "Bearer %41IRLOCK_PH_github_0123456789abcdef";

		subst(v, v, 0);
		ok(find_str(v, &m) && m.sm_enc == SCAN_ENC_PCT,
		    "left for the exfil check");
	}
	/* after substitution no placeholder is left */
	{
		struct http_buf out = HTTP_BUF_INIT;
		struct scan_match m;

		scan_subst_value(set, (const uint8_t *)"x " P1 " " P2,
		    strlen("x " P1 " " P2), &out, NULL, 0);
		ok(!find(out.hb_p, out.hb_len, &m), "nothing left after substitution");
		http_buf_free(&out);
	}
	/* a bounded output buffer: EMSGSIZE, and the buffer left as it was */
	{
		struct http_buf out = HTTP_BUF_INIT;

		out.hb_max = 10;
		http_buf_add(&out, "keep", 4);
		errno = 0;
		is_int(-1, scan_subst_value(set, (const uint8_t *)"Bearer " P1,
		    strlen("Bearer " P1), &out, NULL, 0), "over hb_max");
		is_int(EMSGSIZE, errno, "EMSGSIZE");
		is_int(4, (long long)out.hb_len, "no partial value left");
		http_buf_free(&out);
	}
}

static void
test_b64(void)
{
	uint8_t out[64];
	size_t n;
	struct http_buf e = HTTP_BUF_INIT;

	is_int(0, scan_b64_decode((const uint8_t *)"dXNlcjpwYXNz", 12, out, &n),
	    "decode");
	ok(n == 9 && memcmp(out, "user:pass", 9) == 0, "decoded");
	is_int(0, scan_b64_decode((const uint8_t *)"YQ==", 4, out, &n), "pad 2");
	is_int(1, (long long)n, "1 byte");
	is_int(0, scan_b64_decode((const uint8_t *)"YWI=", 4, out, &n), "pad 1");
	is_int(2, (long long)n, "2 bytes");
	is_int(-1, scan_b64_decode((const uint8_t *)"YQ=", 3, out, &n), "length");
	is_int(-1, scan_b64_decode((const uint8_t *)"Y===", 4, out, &n), "3 pads");
	is_int(-1, scan_b64_decode((const uint8_t *)"YQ=a", 4, out, &n), "pad inside");
	is_int(-1, scan_b64_decode((const uint8_t *)"YQ==YQ==", 8, out, &n),
	    "pad in the middle");
	is_int(-1, scan_b64_decode((const uint8_t *)"Y_-a", 4, out, &n),
	    "url alphabet refused");
	is_int(-1, scan_b64_decode((const uint8_t *)"", 0, out, &n), "empty");
	scan_b64_encode((const uint8_t *)"\xfb\xff", 2, 1, &e);
	is_blob("-_8=", e.hb_p, 4, "url alphabet encode");
	http_buf_free(&e);
}

static void
test_refusals(void)
{
	struct scan_set *s;

	if ((s = scan_set_new()) == NULL)
		bail("scan_set_new");
	errno = 0;
	is_int(-1, scan_set_add(s, 1, (const uint8_t *)"short", 5,
	    (const uint8_t *)"x", 1), "needle under SCAN_NEEDLE_MIN");
	is_int(EINVAL, errno, "EINVAL");
	is_int(0, scan_set_add(s, 1, (const uint8_t *)"12345678", 8,
	    (const uint8_t *)"x", 1), "needle of SCAN_NEEDLE_MIN");
	is_int(0, scan_set_build(s), "build");
	errno = 0;
	is_int(-1, scan_set_add(s, 2, (const uint8_t *)"abcdefghij", 10,
	    (const uint8_t *)"x", 1), "add after build");
	is_int(-1, scan_set_build(s), "build twice");
	scan_set_free(s);
	scan_set_free(NULL);
	/* an empty set matches nothing */
	if ((s = scan_set_new()) == NULL || scan_set_build(s) == -1)
		bail("empty set");
	{
		struct scan_match m;

		ok(!scan_find(s, (const uint8_t *)"anything", 8, &m), "empty set");
	}
	scan_set_free(s);
}

int
main(void)
{
	plan_lazy();
	if ((set = scan_set_new()) == NULL ||
	    scan_set_add(set, 1, (const uint8_t *)P1, strlen(P1),
	    (const uint8_t *)S1, strlen(S1)) == -1 ||
	    scan_set_add(set, 2, (const uint8_t *)P2, strlen(P2),
	    (const uint8_t *)S2, strlen(S2)) == -1 || scan_set_build(set) == -1)
		bail("set: %s", strerror(errno));
	test_find();
	test_stream();
	test_subst();
	test_b64();
	test_refusals();
	scan_set_free(set);
	return tap_failures() != 0;
}
